/* verify.c — a plan's forward pass executed rank by rank on real numbers
 * and compared with the unsharded model.
 *
 * Each live tensor is a list of per-rank buffers, one per rank, each the
 * rank's box of the tensor under its current layout (layout_slice). The
 * inputs and parameters are drawn from a seeded generator (a hash of the
 * tensor and the element's global index) and each rank copies only its
 * box. Ops then run, in graph order:
 *   1. each input arrives from its producer through the plan's edge: the
 *      redistribution's steps run on the buffers, each collective over the
 *      rank lists of its groups (rank_groups_members), in group order;
 *   2. each rank runs the op's kernel on its boxes (kernels.c), leaving
 *      partial sums where the op's layout says so;
 *   3. the op's own communication (AllReduce of partial sums, a
 *      ReduceScatter to a configured output layout) runs on the buffers.
 * After 1 and 3 every rank's box is compared with the reference, the same
 * tensor computed once from whole tensors; partial sums are added over
 * their groups first. The verdict of a check is a match when the largest
 * difference, relative to the largest magnitude of the reference tensor,
 * is within the tolerance.
 *
 * A plan may be run shrunk (scale.c): layouts keep their maps
 * and device matrices, only the sizes change, so the strategy is the same.
 *
 * Units: element counts int64_t; bytes double. Hot path: the kernels and
 * the collectives' copies, linear in the elements the ranks hold.
 */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gsl/gsl_errno.h>
#ifdef SHARDLAB_OPENBLAS
/* OpenBLAS's own entry points (cblas.h of libopenblas-dev). */
void openblas_set_num_threads(int num_threads);
char *openblas_get_corename(void);
/* A DYNAMIC_ARCH build's (Debian's) choice of kernels, made when the
 * library loads (driver/others/dynamic.c of OpenBLAS): weak, so that a
 * build for one fixed CPU, which has neither, still links. */
void gotoblas_dynamic_init(void) __attribute__((weak));
void gotoblas_dynamic_quit(void) __attribute__((weak));
#endif

#include "verify-int.h"

const char *const verify_status_names[VERIFY_STATUS_COUNT] = {"match", "mismatch", "broken",
                                                              "not verified"};

void verify_options_init(struct verify_options *o)
{
	*o = (struct verify_options){.seed = 1,
	                             .gradients = true,
	                             .tolerance = VERIFY_DEFAULT_TOLERANCE,
	                             .scale = 1,
	                             .trace_rank = -1,
	                             .fault = {.edge = -1}};
}

int64_t verify_scaled_dim(int64_t v, int64_t s, int64_t cuts)
{
	if (s <= 1 || cuts < 1 || v % cuts)
		return v;
	int64_t a = s, b = v / cuts;  /* v shrinks by gcd(s, v / cuts) */
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return v / a;
}

double verify_reference_bytes(const struct plan *p, int64_t scale)
{
	struct verify_scaling sc;
	if (!verify_scaling_init(&sc, p, scale))
		return INFINITY;
	double b = 0;
	for (int t = 0; t < p->graph->n_tensors; t++) {
		const struct tensor *x = &p->graph->tensors[t];
		double e = 1;
		for (int d = 0; d < x->rank; d++)
			e *= (double)verify_scaling_dim(&sc, x->dims[d]);
		b += e * (double)sizeof(double);
	}
	verify_scaling_free(&sc);
	return b;
}

static double layout_bytes_at(const struct layout *l, const struct verify_scaling *sc, int64_t n)
{
	struct layout x = *l;
	for (int d = 0; d < x.rank; d++)
		x.shape[d] = verify_scaling_dim(sc, l->shape[d]);
	return (double)layout_local_elems(&x) * (double)n * (double)sizeof(double);
}

double verify_memory_bound(const struct plan *p, int64_t scale)
{
	struct verify_scaling sc;
	const struct graph *g = p->graph;
	int *uses = calloc((size_t)g->n_tensors + 1, sizeof(*uses));
	double *held = calloc((size_t)g->n_tensors + 1, sizeof(*held));
	if (!uses || !held || !verify_scaling_init(&sc, p, scale)) {
		free(uses);
		free(held);
		return INFINITY;
	}
	/* the run's own order: each op's inputs and outputs on top of the
	 * tensors still to be read, each freed after its last reader, and of
	 * every op's inputs as it read them, kept for the backward */
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			uses[g->ops[i].in[j]]++;
	double live = 0, peak = 0, saved = 0;
	for (int i = 0; i < g->n_ops; i++) {
		const struct dist_op *d = &p->ops[i];
		double op = 0, in = 0;
		for (int j = 0; j < d->n_in; j++)
			in += layout_bytes_at(&d->in[j], &sc, p->n_devices);
		op += 2 * in; /* arrival and a step */
		for (int k = 0; k < d->n_out; k++)
			op += 2 * layout_bytes_at(&d->out_partial[k], &sc, p->n_devices);
		saved += in;  /* kept for the backward */
		peak = fmax(peak, live + op + saved);
		for (int j = 0; j < d->n_in; j++) {
			int t = g->ops[i].in[j];
			if (g->tensors[t].producer >= 0 && --uses[t] == 0) {
				live -= held[t];
				held[t] = 0;
			}
		}
		for (int k = 0; k < d->n_out; k++) {
			int t = g->ops[i].out[k];
			held[t] = uses[t] ? layout_bytes_at(&d->out[k], &sc, p->n_devices) : 0;
			live += held[t];
		}
	}
	verify_scaling_free(&sc);
	free(uses);
	free(held);
	return verify_reference_bytes(p, scale) + peak;
}

/* ------------------------------------------------------------ state */

/* A tensor as the ranks hold it. */
struct dist {
	struct layout l;
	int64_t shape[GRAPH_MAX_RANK];   /* local, the same on every rank */
	int64_t elems;
	double **buf;                    /* [n ranks] */
};

struct ctx {
	struct arena *a;
	const struct plan *p;
	const struct verify_options *o;
	struct graph g;                  /* the plan's graph at the scale */
	int64_t n, base;                 /* ranks */
	struct verify_scaling sc;
	bool backward;                   /* keep what the backward needs */
	struct dist **saved;             /* per op: its inputs as it read them */
	struct layout *held_l;           /* per tensor: the layout its producer hands it on in */
	double **ref;                    /* per tensor, whole */
	struct dist *held;               /* per tensor: as its producer hands it on */
	int *uses;                       /* consumers still to read each tensor */
	struct verify_result *r;
	int threads;                     /* for run_tasks */
	int cap_checks, cap_trace;
	double cur_bytes;
	bool oom;
};

/* Zeroed memory. malloc and memset rather than calloc: jemalloc zeroes a
 * reused large extent by handing its pages back to the kernel (madvise),
 * so that every buffer of the passes faulted its pages in again (about
 * 0.8 M page faults, a third of the attention scenarios' time). */
static void *xcalloc(struct ctx *c, size_t n, size_t size)
{
	if (n && size > SIZE_MAX / n) {
		c->oom = true;
		return NULL;
	}
	size_t bytes = n ? n * size : size;
	void *p = malloc(bytes ? bytes : 1);
	if (!p)
		c->oom = true;
	else
		memset(p, 0, bytes);
	return p;
}

/* ------------------------------------------------ tasks on threads */

/* An op's independent pieces of work (the reference's kernel, each rank's
 * share) on up to c->threads threads, taken in order from a shared
 * counter. Each task writes only its own buffers and its own message, so
 * the outcome is the serial one: the first failing task in task order, its
 * message in `why`. Work too small to pay for threads (under 256 Ki
 * elements) runs serially unless the caller asked for a number of threads. */
#define TASK_WHY 400
typedef enum vk_status (*task_fn)(void *arg, int64_t task, char *why, size_t wn);

struct tasks {
	task_fn fn;
	void *arg;
	int64_t n;
	atomic_llong next;
	enum vk_status *rc;
	char (*why)[TASK_WHY];
};

static void *task_worker(void *p)
{
	struct tasks *t = p;
	for (int64_t k; (k = atomic_fetch_add(&t->next, 1)) < t->n;)
		t->rc[k] = t->fn(t->arg, k, t->why[k], TASK_WHY);
	return NULL;
}

static enum vk_status run_tasks(struct ctx *c, int64_t n, double work, task_fn fn, void *arg,
                                char *why, size_t wn)
{
	int threads = c->threads < n ? c->threads : (int)n;
	if (threads <= 1 || (c->o->threads == 0 && work < 1 << 18)) {
		for (int64_t k = 0; k < n; k++) {
			enum vk_status rc = fn(arg, k, why, wn);
			if (rc != VK_OK)
				return rc;
		}
		return VK_OK;
	}
	struct tasks t = {.fn = fn, .arg = arg, .n = n};
	atomic_init(&t.next, 0);
	t.rc = calloc((size_t)n, sizeof(*t.rc));
	t.why = calloc((size_t)n, sizeof(*t.why));
	pthread_t th[VERIFY_MAX_THREADS];
	int started = 0;
	if (t.rc && t.why)
		for (; started < threads - 1; started++)
			if (pthread_create(&th[started], NULL, task_worker, &t) != 0)
				break;
	if (t.rc && t.why)
		task_worker(&t);
	for (int k = 0; k < started; k++)
		pthread_join(th[k], NULL);
	enum vk_status rc = VK_OK;
	if (!t.rc || !t.why) {
		c->oom = true;
		rc = VK_BROKEN;
		snprintf(why, wn, "out of memory");
	}
	for (int64_t k = 0; rc == VK_OK && k < n; k++)
		if (t.rc[k] != VK_OK) {
			rc = t.rc[k];
			snprintf(why, wn, "%s", t.why[k]);
		}
	free(t.rc);
	free(t.why);
	return rc;
}

static void trace(struct ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static void trace(struct ctx *c, const char *fmt, ...)
{
	if (c->o->trace_rank < 0)
		return;
	char line[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	struct verify_result *r = c->r;
	if (r->n_trace == c->cap_trace) {
		int cap = c->cap_trace ? 2 * c->cap_trace : 64;
		const char **t = arena_grow(c->a, r->trace, (size_t)c->cap_trace, (size_t)cap,
		                            sizeof(*t));
		if (!t) {
			c->oom = true;
			return;
		}
		r->trace = t;
		c->cap_trace = cap;
	}
	const char *s = arena_strdup(c->a, line);
	if (!s)
		c->oom = true;
	else
		r->trace[r->n_trace++] = s;
}

static struct verify_check *add_check(struct ctx *c, enum verify_what what, int op, int edge,
                                      int tensor, const char *label)
{
	struct verify_result *r = c->r;
	if (r->n_checks == c->cap_checks) {
		int cap = c->cap_checks ? 2 * c->cap_checks : 32;
		struct verify_check *k = arena_grow(c->a, r->checks, (size_t)c->cap_checks,
		                                    (size_t)cap, sizeof(*k));
		if (!k) {
			c->oom = true;
			return NULL;
		}
		r->checks = k;
		c->cap_checks = cap;
	}
	struct verify_check *k = &r->checks[r->n_checks++];
	*k = (struct verify_check){.what = what, .op = op, .edge = edge, .tensor = tensor,
	                           .label = label, .status = VERIFY_MATCH};
	return k;
}

static void set_status(struct ctx *c, struct verify_check *k, enum verify_status s,
                       const char *note)
{
	if (!k)
		return;
	k->status = s;
	k->note = note ? arena_strdup(c->a, note) : NULL;
}

/* A layout of the plan at the scale. */
static void scaled(const struct ctx *c, const struct layout *in, struct layout *out)
{
	*out = *in;
	for (int d = 0; d < out->rank; d++)
		out->shape[d] = verify_scaling_dim(&c->sc, in->shape[d]);
}

static void dist_free(struct ctx *c, struct dist *d)
{
	if (!d->buf)
		return;
	for (int64_t r = 0; r < c->n; r++)
		free(d->buf[r]);
	free(d->buf);
	d->buf = NULL;
	c->cur_bytes -= (double)c->n * (double)d->elems * (double)sizeof(double);
}

static void account(struct ctx *c, double bytes)
{
	c->cur_bytes += bytes;
	if (c->cur_bytes > c->r->peak_rank_bytes)
		c->r->peak_rank_bytes = c->cur_bytes;
}

/* Empty buffers for a layout (already scaled). */
static bool dist_alloc(struct ctx *c, struct dist *d, const struct layout *l)
{
	memset(d, 0, sizeof(*d));
	d->l = *l;
	layout_local_shape(l, d->shape);
	d->elems = verify_elems(d->shape, l->rank);
	d->buf = xcalloc(c, (size_t)c->n, sizeof(*d->buf));
	if (!d->buf)
		return false;
	for (int64_t r = 0; r < c->n; r++)
		if (!(d->buf[r] = xcalloc(c, (size_t)d->elems, sizeof(double))))
			return false;
	account(c, (double)c->n * (double)d->elems * (double)sizeof(double));
	return true;
}

/* Copies a box of `box` elements from src (shape ss) at so to dst (shape
 * ds) at dof. */
static void box_copy(double *dst, const int64_t *ds, const int64_t *dof, const double *src,
                     const int64_t *ss, const int64_t *so, const int64_t *box, int rank)
{
	if (rank == 0) {
		dst[0] = src[0];
		return;
	}
	int64_t rows = verify_elems(box, rank - 1), idx[GRAPH_MAX_RANK] = {0};
	for (int64_t f = 0; f < rows; f++) {
		int64_t rem = f;
		for (int d = rank - 2; d >= 0; d--) {
			idx[d] = rem % box[d];
			rem /= box[d];
		}
		int64_t s = 0, t = 0;
		for (int d = 0; d < rank - 1; d++) {
			s = s * ss[d] + so[d] + idx[d];
			t = t * ds[d] + dof[d] + idx[d];
		}
		s = s * ss[rank - 1] + so[rank - 1];
		t = t * ds[rank - 1] + dof[rank - 1];
		memcpy(dst + t, src + s, (size_t)box[rank - 1] * sizeof(double));
	}
}

static void slice_of(const struct ctx *c, const struct layout *l, int64_t r, int64_t *lo)
{
	int64_t hi[GRAPH_MAX_RANK];
	layout_slice(l, c->base + r, lo, hi);
}

/* Each rank copies its box of a whole tensor. */
static bool dist_scatter(struct ctx *c, struct dist *d, const struct layout *l, const double *whole)
{
	if (!dist_alloc(c, d, l))
		return false;
	int64_t lo[GRAPH_MAX_RANK], zero[GRAPH_MAX_RANK] = {0};
	for (int64_t r = 0; r < c->n; r++) {
		slice_of(c, l, r, lo);
		box_copy(d->buf[r], d->shape, zero, whole, l->shape, lo, d->shape, l->rank);
	}
	if (l->partial) {
		/* Partial sums: one rank of each group holds the values, the
		 * others zeros. */
		int axes[PLAN_MAX_AXES], na = 0;
		int64_t coord[PLAN_MAX_AXES];
		for (int a = 0; a < l->dm.n; a++)
			if (l->partial & (1u << a))
				axes[na++] = a;
		for (int64_t r = 0; r < c->n; r++) {
			devmat_coords(&l->dm, c->base + r, coord);
			bool first = true;
			for (int k = 0; k < na; k++)
				first &= coord[axes[k]] == 0;
			if (!first)
				memset(d->buf[r], 0, (size_t)d->elems * sizeof(double));
		}
	}
	return true;
}

static bool dist_clone(struct ctx *c, struct dist *d, const struct dist *s)
{
	if (!dist_alloc(c, d, &s->l))
		return false;
	for (int64_t r = 0; r < c->n; r++)
		memcpy(d->buf[r], s->buf[r], (size_t)s->elems * sizeof(double));
	return true;
}

int64_t verify_suggest_scale(const struct plan *p, int64_t scale, double limit)
{
	int64_t fits = -1;
	for (int64_t s = scale < 1 ? 1 : scale; s <= 1024; s *= 2) {
		double need = verify_memory_bound(p, s);
		if (need <= limit && fits < 0)
			fits = s;
		if (need <= limit && need <= VERIFY_QUICK_BYTES)
			return s;
	}
	return fits;
}

/* ------------------------------------------------------------- texts */

/* "x[0:32, 16:32]" for rank r's box. */
static const char *box_text(struct ctx *c, const char *name, const struct layout *l, int64_t r)
{
	int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK];
	layout_slice(l, c->base + r, lo, hi);
	char buf[400];
	size_t o = (size_t)snprintf(buf, sizeof buf, "%s[", name);
	for (int d = 0; d < l->rank && o < sizeof buf; d++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%lld:%lld", d ? ", " : "",
		                      (long long)lo[d], (long long)hi[d]);
	if (o < sizeof buf)
		snprintf(buf + o, sizeof buf - o, "]%s", l->partial ? " (partial sum)" : "");
	return arena_strdup(c->a, buf);
}

static const char *group_text(struct ctx *c, const struct rank_groups *g, int64_t rank)
{
	int gi, mi;
	if (!rank_groups_locate(g, rank, &gi, &mi))
		return "";
	int64_t *m = xcalloc(c, (size_t)g->size, sizeof(*m));
	if (!m)
		return "";
	rank_groups_members(g, gi, m);
	char buf[512];
	size_t o = (size_t)snprintf(buf, sizeof buf, " with ranks");
	for (int k = 0; k < g->size && o < sizeof buf; k++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, " %lld", (long long)m[k]);
	free(m);
	return arena_strdup(c->a, buf);
}

/* ------------------------------------------------------- collectives */

/* Runs one step on the buffers of d; the layout becomes st->after. Returns
 * a status and, unless VK_OK, the reason in why. */
static enum vk_status run_step(struct ctx *c, struct dist *d, const struct comm_step *st,
                               const struct layout *after_scaled, char *why, size_t wn)
{
	struct layout after = *after_scaled;
	int64_t want[GRAPH_MAX_RANK], ns[GRAPH_MAX_RANK];
	layout_local_shape(&after, want);
	memcpy(ns, d->shape, sizeof(ns));
	int rank = d->l.rank, dim = st->dim, to = st->to_dim;
	const struct rank_groups *g = &st->groups;
	int gs = g->size;
	if (st->kind != STEP_SLICE && st->kind != STEP_RESHAPE &&
	    (g->n_groups < 1 || (int64_t)g->n_groups * gs != c->n)) {
		snprintf(why, wn, "%s groups cover %lld ranks of %lld", step_kind_names[st->kind],
		         (long long)g->n_groups * gs, (long long)c->n);
		return VK_BROKEN;
	}
	switch (st->kind) {
	case STEP_ALLGATHER:
		ns[dim] *= gs;
		break;
	case STEP_REDUCESCATTER:
		if (ns[dim] % gs) {
			snprintf(why, wn, "ReduceScatter of %lld elements over %d ranks",
			         (long long)ns[dim], gs);
			return VK_BROKEN;
		}
		ns[dim] /= gs;
		break;
	case STEP_ALLTOALL:
		if (ns[to] % gs) {
			snprintf(why, wn, "AllToAll splitting %lld elements over %d ranks",
			         (long long)ns[to], gs);
			return VK_BROKEN;
		}
		ns[to] /= gs;
		ns[dim] *= gs;
		break;
	case STEP_SLICE:
	case STEP_RESHAPE:
		memcpy(ns, want, sizeof(ns));
		break;
	default:
		break;
	}
	if (verify_elems(ns, rank) == 0 || memcmp(ns, want, (size_t)rank * sizeof(*ns))) {
		snprintf(why, wn, "%s leaves a local shape the layout after it does not have",
		         step_kind_names[st->kind]);
		return VK_BROKEN;
	}
	int64_t ne = verify_elems(ns, rank);
	double **nb = xcalloc(c, (size_t)c->n, sizeof(*nb));
	int64_t *m = xcalloc(c, (size_t)(gs > 0 ? gs : 1), sizeof(*m));
	if (!nb || !m) {
		free(nb);
		free(m);
		snprintf(why, wn, "out of memory");
		return VK_BROKEN;
	}
	int64_t zero[GRAPH_MAX_RANK] = {0}, off[GRAPH_MAX_RANK], box[GRAPH_MAX_RANK];
	enum vk_status rc = VK_OK;
	if (st->kind == STEP_SLICE || st->kind == STEP_RESHAPE) {
		int64_t lb[GRAPH_MAX_RANK], la[GRAPH_MAX_RANK];
		for (int64_t r = 0; r < c->n && rc == VK_OK; r++) {
			if (!(nb[r] = xcalloc(c, (size_t)ne, sizeof(double)))) {
				rc = VK_BROKEN;
				break;
			}
			if (st->kind == STEP_RESHAPE) {
				if (ne != d->elems) {
					snprintf(why, wn, "Reshape of %lld elements into %lld", (long long)d->elems,
					         (long long)ne);
					rc = VK_BROKEN;
				} else {
					memcpy(nb[r], d->buf[r], (size_t)ne * sizeof(double));
				}
				continue;
			}
			slice_of(c, &d->l, r, lb);
			slice_of(c, &after, r, la);
			for (int k = 0; k < rank; k++) {
				off[k] = la[k] - lb[k];
				if (off[k] < 0 || off[k] + ns[k] > d->shape[k]) {
					snprintf(why, wn, "StridedSlice: rank %lld should keep %lld..%lld of "
					         "dimension %d but holds %lld..%lld", (long long)(c->base + r),
					         (long long)la[k], (long long)(la[k] + ns[k] - 1), k,
					         (long long)lb[k], (long long)(lb[k] + d->shape[k] - 1));
					rc = VK_BROKEN;
					break;
				}
			}
			if (rc == VK_OK)
				box_copy(nb[r], ns, zero, d->buf[r], d->shape, off, ns, rank);
		}
	} else {
		double *acc = xcalloc(c, (size_t)d->elems, sizeof(double));
		for (int gi = 0; gi < g->n_groups && acc; gi++) {
			rank_groups_members(g, gi, m);
			for (int j = 0; j < gs; j++) {
				m[j] -= c->base;
				if (m[j] < 0 || m[j] >= c->n || nb[m[j]]) {
					snprintf(why, wn, "%s: rank %lld is outside the plan or in two groups",
					         step_kind_names[st->kind], (long long)(m[j] + c->base));
					rc = VK_BROKEN;
				}
			}
			if (rc != VK_OK)
				break;
			for (int j = 0; j < gs; j++)
				if (!(nb[m[j]] = xcalloc(c, (size_t)ne, sizeof(double))))
					rc = VK_BROKEN;
			if (rc != VK_OK)
				break;
			if (st->kind == STEP_ALLREDUCE || st->kind == STEP_REDUCESCATTER) {
				memcpy(acc, d->buf[m[0]], (size_t)d->elems * sizeof(double));
				for (int j = 1; j < gs; j++) {
					const double *x = d->buf[m[j]];
					for (int64_t f = 0; f < d->elems; f++)
						acc[f] = st->reduce == REDUCE_MAX ? fmax(acc[f], x[f]) : acc[f] + x[f];
				}
			}
			for (int j = 0; j < gs; j++) {
				double *y = nb[m[j]];
				switch (st->kind) {
				case STEP_ALLREDUCE:
					memcpy(y, acc, (size_t)ne * sizeof(double));
					break;
				case STEP_REDUCESCATTER:
					memset(off, 0, sizeof(off));
					off[dim] = j * ns[dim];
					box_copy(y, ns, zero, acc, d->shape, off, ns, rank);
					break;
				case STEP_ALLGATHER:
					/* member i's box lands at i times its size along dim */
					for (int i = 0; i < gs; i++) {
						memset(off, 0, sizeof(off));
						off[dim] = i * d->shape[dim];
						box_copy(y, ns, off, d->buf[m[i]], d->shape, zero, d->shape, rank);
					}
					break;
				case STEP_ALLTOALL:
					/* member i sends member j the j-th part of its box along to_dim */
					memcpy(box, d->shape, sizeof(box));
					box[to] = ns[to];
					for (int i = 0; i < gs; i++) {
						int64_t so[GRAPH_MAX_RANK] = {0}, dof[GRAPH_MAX_RANK] = {0};
						so[to] = j * ns[to];
						dof[dim] = i * d->shape[dim];
						box_copy(y, ns, dof, d->buf[m[i]], d->shape, so, box, rank);
					}
					break;
				default:
					break;
				}
			}
		}
		if (!acc)
			rc = VK_BROKEN;
		free(acc);
	}
	free(m);
	if (rc != VK_OK) {
		if (!why[0])
			snprintf(why, wn, "out of memory");
		for (int64_t r = 0; r < c->n; r++)
			free(nb[r]);
		free(nb);
		return rc;
	}
	dist_free(c, d);
	d->buf = nb;
	d->l = after;
	memcpy(d->shape, ns, sizeof(ns));
	d->elems = ne;
	account(c, (double)c->n * (double)ne * (double)sizeof(double));
	return VK_OK;
}

/* ------------------------------------------------------- comparison */

static void compare(struct ctx *c, const struct dist *d, int t, struct verify_check *k)
{
	const double *ref = c->ref[t];
	const struct layout *l = &d->l;
	int64_t n = verify_elems(l->shape, l->rank);
	double big = 0, worst = 0;
	for (int64_t f = 0; f < n; f++) {
		double a = fabs(ref[f]);
		if (a > big)  /* fmax(big, a): a NaN leaves big as it is */
			big = a;
	}
	int axes[PLAN_MAX_AXES], na = 0;
	for (int a = 0; a < l->dm.n; a++)
		if (l->partial & (1u << a))
			axes[na++] = a;
	struct rank_groups grp;
	if (!devmat_groups(&l->dm, axes, na, &grp)) {
		set_status(c, k, VERIFY_BROKEN, "partial-sum groups do not fit");
		return;
	}
	int64_t *m = xcalloc(c, (size_t)grp.size, sizeof(*m));
	double *sum = xcalloc(c, (size_t)d->elems, sizeof(double));
	int64_t lo[GRAPH_MAX_RANK], idx[GRAPH_MAX_RANK];
	for (int gi = 0; m && sum && gi < grp.n_groups; gi++) {
		rank_groups_members(&grp, gi, m);
		memset(sum, 0, (size_t)d->elems * sizeof(double));
		for (int j = 0; j < grp.size; j++)
			for (int64_t f = 0; f < d->elems; f++)
				sum[f] += d->buf[m[j] - c->base][f];
		slice_of(c, l, m[0] - c->base, lo);
		/* Row by row of the box (its last dimension is contiguous in both
		 * the box and the whole tensor), the rows' index kept as an
		 * odometer rather than divided out of every element's. */
		int r = l->rank;
		int64_t row = r > 0 ? d->shape[r - 1] : 1;
		for (int x = 0; x < r; x++)
			idx[x] = 0;
		for (int64_t f = 0; row > 0 && f < d->elems; f += row) {
			int64_t g0 = 0;
			for (int x = 0; x < r; x++)
				g0 = g0 * l->shape[x] + lo[x] + idx[x];
			for (int64_t i = 0; i < row; i++) {
				double e = fabs(sum[f + i] - ref[g0 + i]);
				if (isnan(e))
					e = INFINITY;
				if (e > worst)
					worst = e;
			}
			for (int x = r - 2; x >= 0; x--) {
				if (++idx[x] < d->shape[x])
					break;
				idx[x] = 0;
			}
		}
	}
	free(m);
	free(sum);
	if (!k)
		return;
	k->max_abs = worst;
	k->max_rel = big > 0 ? worst / big : worst;
	if (!(k->max_rel <= c->o->tolerance))
		set_status(c, k, VERIFY_MISMATCH, NULL);
}

/* ------------------------------------------------------------- the run */

static double input_value(const struct ctx *c, int t, int64_t f, int64_t bound)
{
	uint64_t key = (c->o->seed * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)t << 40) ^ (uint64_t)f;
	double u = verify_hash01(key);
	return bound > 0 ? floor(u * (double)bound) : 2 * u - 1;
}

/* A tensor read as indices (Gather's, cross-entropy's labels): the rows or
 * classes they index; 0 for ordinary values. */
static int64_t index_bound(const struct ctx *c, int t)
{
	for (int i = 0; i < c->g.n_ops; i++) {
		const struct op *o = &c->g.ops[i];
		if (o->n_in > 1 && o->in[1] == t && o->kind == OP_GATHER)
			return c->g.tensors[o->in[0]].dims[0];
		if (o->n_in > 1 && o->in[1] == t && o->kind == OP_SOFTMAXCROSSENTROPY)
			return c->g.tensors[o->in[0]].dims[1];
	}
	return 0;
}

/* A mixture-of-experts index (MoEDispatch's [E, C] tokens, MoECombine's
 * [T, k] flat slots e·C + c), drawn token-local: a slot and its token fall
 * in the same of the gcd(T, C) equal shares of the tokens and slots, so
 * that every split of the two alike (what the plans make) keeps them on
 * one rank. False when t is no such index. */
static bool moe_index(const struct ctx *c, int t, double *data)
{
	for (int i = 0; i < c->g.n_ops; i++) {
		const struct op *o = &c->g.ops[i];
		if (o->n_in < 2 || o->in[1] != t ||
		    (o->kind != OP_MOEDISPATCH && o->kind != OP_MOECOMBINE))
			continue;
		const struct tensor *ix = &c->g.tensors[t], *y = &c->g.tensors[o->in[0]];
		bool disp = o->kind == OP_MOEDISPATCH;
		int64_t T = disp ? y->dims[0] : ix->dims[0], C = disp ? ix->dims[1] : y->dims[1];
		int64_t E = disp ? ix->dims[0] : y->dims[0], G = util_gcd64(T, C);
		for (int64_t f = 0; f < ix->elems; f++) {
			if (disp) {
				int64_t share = f % C / (C / G);
				data[f] = (double)(share * (T / G) + (int64_t)input_value(c, t, f, T / G));
			} else {
				int64_t share = f / ix->dims[1] / (T / G);
				int64_t slot = share * (C / G) + (int64_t)input_value(c, t, f, C / G);
				int64_t e = (int64_t)input_value(c, t, f + ix->elems, E);
				data[f] = (double)(e * C + slot);
			}
		}
		return true;
	}
	return false;
}

static bool scale_graph(struct ctx *c, struct diag_list *diags)
{
	const struct graph *g0 = c->p->graph;
	c->g = *g0;
	c->g.tensors = arena_calloc(c->a, (size_t)g0->n_tensors + 1, sizeof(*c->g.tensors));
	if (!c->g.tensors)
		return false;
	for (int t = 0; t < g0->n_tensors; t++) {
		struct tensor *x = &c->g.tensors[t];
		*x = g0->tensors[t];
		for (int d = 0; d < x->rank; d++)
			x->dims[d] = verify_scaling_dim(&c->sc, x->dims[d]);
		x->elems = verify_elems(x->dims, x->rank);
	}
	for (int i = 0; i < g0->n_ops; i++) {
		const struct op *o = &g0->ops[i];
		const struct tensor *x = &c->g.tensors[o->in[0]], *y = &c->g.tensors[o->out[0]];
		bool changed = false;
		for (int d = 0; d < y->rank; d++)
			changed |= y->dims[d] != g0->tensors[o->out[0]].dims[d];
		if (o->kind == OP_RESHAPE && x->elems != y->elems) {
			diag_add(diags, DIAG_ERROR, c->p->scenario->file, 0, NULL,
			         "--scale %lld shrinks the Reshape \"%s\" inconsistently (%lld elements "
			         "into %lld); try another scale", (long long)c->o->scale, o->name,
			         (long long)x->elems, (long long)y->elems);
			return false;
		}
		if (o->kind == OP_STRIDEDSLICE && changed) {
			diag_add(diags, DIAG_ERROR, c->p->scenario->file, 0, NULL,
			         "--scale %lld would change the StridedSlice \"%s\", whose bounds are "
			         "absolute; try another scale", (long long)c->o->scale, o->name);
			return false;
		}
	}
	return true;
}

static const struct plan_edge *edge_into(const struct plan *p, int op, int j, int *index)
{
	for (int e = 0; e < p->n_edges; e++)
		if (p->edges[e].consumer == op && p->edges[e].consumer_in == j) {
			*index = e;
			return &p->edges[e];
		}
	*index = -1;
	return NULL;
}

/* Runs the steps on d, tracing and recording; false after a broken step
 * (the reason in why). fault_edge: the edge index to disturb, or -1. */
static bool run_steps(struct ctx *c, struct dist *d, const struct comm_step *steps, int n,
                      int fault_edge, const char *tname, char *why, size_t wn)
{
	int64_t tr = c->o->trace_rank;
	for (int s = 0; s < n; s++) {
		const struct comm_step *st = &steps[s];
		why[0] = '\0';
		struct layout after;
		scaled(c, &st->after, &after);
		if (run_step(c, d, st, &after, why, wn) != VK_OK)
			return false;
		const struct verify_fault *f = &c->o->fault;
		if (fault_edge >= 0 && f->edge == fault_edge && f->step == s && f->rank_a >= 0 &&
		    f->rank_b >= 0 && f->rank_a < c->n && f->rank_b < c->n) {
			double *t = d->buf[f->rank_a];
			d->buf[f->rank_a] = d->buf[f->rank_b];
			d->buf[f->rank_b] = t;
		}
		if (tr >= 0) {
			char kind[64];
			snprintf(kind, sizeof kind, "%s%s", step_kind_names[st->kind],
			         st->kind == STEP_ALLREDUCE || st->kind == STEP_REDUCESCATTER
			             ? (st->reduce == REDUCE_MAX ? " (max)" : " (sum)")
			             : "");
			char dims[64] = "";
			if (st->kind == STEP_ALLTOALL)
				snprintf(dims, sizeof dims, " dim %d -> %d", st->dim, st->to_dim);
			else if (st->dim >= 0)
				snprintf(dims, sizeof dims, " dim %d", st->dim);
			trace(c, "    %s%s%s: holds %s", kind, dims,
			      st->kind == STEP_SLICE || st->kind == STEP_RESHAPE
			          ? ""
			          : group_text(c, &st->groups, c->base + tr),
			      box_text(c, tname, &d->l, tr));
		}
	}
	return true;
}

/* Input j of op i as the op reads it, into *out. */
static void arrive(struct ctx *c, int i, int j, struct dist *out)
{
	const struct plan *p = c->p;
	const struct op *o = &c->g.ops[i];
	int t = o->in[j];
	const struct tensor *x = &c->g.tensors[t];
	struct layout want;
	scaled(c, &p->ops[i].in[j], &want);
	int64_t tr = c->o->trace_rank;
	if (x->producer < 0) {
		if (dist_scatter(c, out, &want, c->ref[t]) && tr >= 0)
			trace(c, "  loads %s", box_text(c, x->name, &want, tr));
		return;
	}
	int ei;
	const struct plan_edge *e = edge_into(p, i, j, &ei);
	const struct op *prod = &c->g.ops[x->producer];
	const char *label = arena_printf(c->a, "%s -> %s", prod->name, o->name);
	if (c->uses[t] == 1) {
		/* the last read of the tensor: its buffers move, nothing is copied */
		*out = c->held[t];
		c->held[t].buf = NULL;
	} else if (!dist_clone(c, out, &c->held[t])) {
		return;
	}
	char why[400] = "";
	struct verify_check *k = NULL;
	if (e && e->redist.n_steps) {
		k = add_check(c, VERIFY_EDGE, i, ei, t, label);
		if (tr >= 0)
			trace(c, "  input %d as %s hands it on: holds %s", j, prod->name,
			      box_text(c, x->name, &out->l, tr));
		if (!run_steps(c, out, e->redist.steps, e->redist.n_steps, ei, x->name, why,
		               sizeof why))
			set_status(c, k, VERIFY_BROKEN, why);
		else
			compare(c, out, t, k);
	}
	if ((!k || k->status != VERIFY_BROKEN) && !layout_same_placement(&out->l, &want)) {
		if (!k)
			k = add_check(c, VERIFY_EDGE, i, ei, t, label);
		set_status(c, k, VERIFY_BROKEN,
		           e ? "the redistribution does not end in the layout the op reads"
		             : "the producer hands on another layout than the op reads, and the plan "
		               "has no redistribution between them");
	}
	if (k && k->status == VERIFY_BROKEN) {
		/* carry on from the right data, so that the op is still checked */
		dist_free(c, out);
		dist_scatter(c, out, &want, c->ref[t]);
	}
	out->l = want; /* the same placement, as the op describes it */
}

/* Vocabulary-parallel cross-entropy (seed 003), with the op's three
 * AllReduces run on the buffers: each rank's row maximum over its
 * classes, then its sum of exp(logit - max), then the label's logit where
 * the rank holds that class (0 elsewhere); loss = log(sum) + max - target.
 * `out` holds the result in the op's output layout. */
static enum vk_status vocab_parts(struct ctx *c, int i, const struct dist *in,
                                  const struct layout *ol, struct dist part[3], char *why,
                                  size_t wn)
{
	const struct dist_op *dop = &c->p->ops[i];
	memset(part, 0, 3 * sizeof(*part));
	const struct dist *x = &in[0], *lab = &in[1];
	int64_t rows = x->shape[0], v = x->shape[1];
	for (int k = 0; k < 3; k++) {
		if (dop->comm[k].kind != STEP_ALLREDUCE ||
		    dop->comm[k].reduce != (k ? REDUCE_SUM : REDUCE_MAX)) {
			snprintf(why, wn, "cross-entropy over a cut class dimension without AllReduce "
			         "max, sum, sum");
			return VK_BROKEN;
		}
		if (!dist_alloc(c, &part[k], ol))
			return VK_BROKEN;
		for (int64_t r = 0; r < c->n; r++) {
			int64_t lo[GRAPH_MAX_RANK];
			slice_of(c, &x->l, r, lo);
			const double *xs = x->buf[r];
			double *y = part[k].buf[r];
			for (int64_t a = 0; a < rows; a++) {
				const double *row = xs + a * v;
				double acc = 0;
				if (k == 0) {
					acc = -INFINITY;
					for (int64_t b = 0; b < v; b++)
						acc = fmax(acc, row[b]);
				} else if (k == 1) {
					double m = part[0].buf[r][a];
					for (int64_t b = 0; b < v; b++)
						acc += exp(row[b] - m);
				} else {
					int64_t cls = (int64_t)lab->buf[r][a] - lo[1];
					acc = cls >= 0 && cls < v ? row[cls] : 0;
				}
				y[a] = acc;
			}
		}
		const char *name = arena_printf(c->a, "%s %s", c->g.tensors[c->g.ops[i].out[0]].name,
		                                k == 0 ? "row max" : k == 1 ? "sum of exp" : "target logit");
		if (!run_steps(c, &part[k], &dop->comm[k], 1, -1, name ? name : "", why, wn))
			return VK_BROKEN;
	}
	return VK_OK;
}

static enum vk_status vocab_ce(struct ctx *c, int i, const struct dist *in, struct dist *out,
                               char *why, size_t wn)
{
	struct dist part[3];
	enum vk_status rc = vocab_parts(c, i, in, &out->l, part, why, wn);
	for (int64_t r = 0; rc == VK_OK && r < c->n; r++)
		for (int64_t a = 0; a < out->elems; a++)
			out->buf[r][a] = log(part[1].buf[r][a]) + part[0].buf[r][a] - part[2].buf[r][a];
	for (int k = 0; k < 3; k++)
		dist_free(c, &part[k]);
	return rc;
}

/* Rank r's box of a distributed tensor, as a kernel reads it. */
static struct vpiece rank_piece(const struct ctx *c, const struct dist *d, int64_t r)
{
	struct vpiece v = {.data = d->buf[r], .rank = d->l.rank};
	memcpy(v.shape, d->shape, sizeof(d->shape));
	memcpy(v.full, d->l.shape, sizeof(d->l.shape));
	slice_of(c, &d->l, r, v.lo);
	return v;
}

/* An op's forward as tasks: 0 the reference on the whole tensors, 1 + r
 * rank r on its boxes. */
struct fwd_task {
	struct ctx *c;
	int i;
	uint64_t salt;
	struct vpiece *rin, *rout;     /* the reference's */
	const struct dist *in, *out;   /* the ranks' */
};

static enum vk_status fwd_task(void *arg, int64_t task, char *why, size_t wn)
{
	const struct fwd_task *f = arg;
	const struct ctx *c = f->c;
	const struct op *o = &c->g.ops[f->i];
	if (task == 0)
		return verify_kernel(&c->g, f->i, f->rin, f->rout, f->salt, why, wn);
	int64_t r = task - 1;
	struct vpiece *pin = calloc((size_t)o->n_in + 1, sizeof(*pin));
	struct vpiece *pout = calloc((size_t)o->n_out + 1, sizeof(*pout));
	enum vk_status rc = VK_BROKEN;
	if (!pin || !pout) {
		snprintf(why, wn, "out of memory");
		goto done;
	}
	for (int j = 0; j < o->n_in; j++) {
		const struct dist *d = &f->in[j];
		pin[j] = rank_piece(c, d, r);
	}
	for (int kk = 0; kk < o->n_out; kk++) {
		const struct dist *d = &f->out[kk];
		pout[kk] = rank_piece(c, d, r);
	}
	rc = verify_kernel(&c->g, f->i, pin, pout, f->salt, why, wn);
	if (rc != VK_OK) {
		char rs[TASK_WHY + 40];
		snprintf(rs, sizeof rs, "rank %lld: %s", (long long)(c->base + r), why);
		snprintf(why, wn, "%s", rs);
	}
done:
	free(pin);
	free(pout);
	return rc;
}

static bool run_op(struct ctx *c, int i)
{
	const struct plan *p = c->p;
	const struct op *o = &c->g.ops[i];
	const struct dist_op *dop = &p->ops[i];
	int64_t tr = c->o->trace_rank;
	uint64_t salt = c->o->seed * 1000003u + (uint64_t)i;
	char why[400] = "";

	/* the reference */
	struct vpiece *rin = arena_calloc(c->a, (size_t)o->n_in + 1, sizeof(*rin));
	struct vpiece *rout = arena_calloc(c->a, (size_t)o->n_out + 1, sizeof(*rout));
	if (!rin || !rout)
		return false;
	for (int j = 0; j < o->n_in; j++) {
		const struct tensor *x = &c->g.tensors[o->in[j]];
		rin[j] = (struct vpiece){.data = c->ref[o->in[j]], .rank = x->rank};
		memcpy(rin[j].shape, x->dims, sizeof(x->dims));
		memcpy(rin[j].full, x->dims, sizeof(x->dims));
	}
	for (int k = 0; k < o->n_out; k++) {
		const struct tensor *y = &c->g.tensors[o->out[k]];
		double *buf = xcalloc(c, (size_t)y->elems, sizeof(double));
		if (!buf)
			return false;
		c->ref[o->out[k]] = buf;
		rout[k] = (struct vpiece){.data = buf, .rank = y->rank};
		memcpy(rout[k].shape, y->dims, sizeof(y->dims));
		memcpy(rout[k].full, y->dims, sizeof(y->dims));
	}
	char sig[128] = "";
	struct op_sig s;
	if (graph_op_signature(&c->g, i, &s))
		op_sig_format(&s, sig, sizeof sig);
	if (tr >= 0)
		trace(c, "%s (%s %s)", o->name, op_kind_name(o->kind), sig);

	/* the inputs, through their edges */
	struct dist *in = xcalloc(c, (size_t)o->n_in, sizeof(*in));
	if (!in)
		return false;
	for (int j = 0; j < o->n_in && !c->oom; j++)
		arrive(c, i, j, &in[j]);
	if (c->oom) {
		free(in);
		return false;
	}

	/* every rank runs the op on its boxes */
	struct verify_check *k = add_check(c, VERIFY_OP, i, -1, o->out[0], o->name);
	struct dist *out = xcalloc(c, (size_t)o->n_out, sizeof(*out));
	for (int kk = 0; out && kk < o->n_out; kk++) {
		struct layout l;
		scaled(c, &dop->out_partial[kk], &l);
		dist_alloc(c, &out[kk], &l);
	}
	if (!out || c->oom) {
		free(out);
		for (int j = 0; j < o->n_in; j++)
			dist_free(c, &in[j]);
		free(in);
		return false;
	}
	bool vocab = o->kind == OP_SOFTMAXCROSSENTROPY && dop->n_comm == 3 &&
	             in[0].shape[1] != in[0].l.shape[1];
	struct fwd_task ft = {.c = c, .i = i, .salt = salt, .rin = rin, .rout = rout, .in = in,
	                      .out = out};
	enum vk_status rc;
	if (vocab) {
		rc = fwd_task(&ft, 0, why, sizeof why);
		if (rc == VK_OK && tr >= 0)
			trace(c, "  computes per row its max, sum of exp and the label's logit over %s",
			      box_text(c, c->g.tensors[o->in[0]].name, &in[0].l, tr));
		if (rc == VK_OK && !c->oom)
			rc = vocab_ce(c, i, in, &out[0], why, sizeof why);
	} else {
		/* the reference's elements and every rank's share of them */
		double work = 0;
		for (int kk = 0; kk < o->n_out; kk++)
			work += 2.0 * (double)c->g.tensors[o->out[kk]].elems;
		rc = run_tasks(c, c->n + 1, work, fwd_task, &ft, why, sizeof why);
	}
	if (c->oom)
		return false;
	if (tr >= 0 && !vocab) {
		char line[900];
		size_t n = (size_t)snprintf(line, sizeof line, "  computes");
		for (int kk = 0; kk < o->n_out && n < sizeof line; kk++)
			n += (size_t)snprintf(line + n, sizeof line - n, " %s",
			                      box_text(c, c->g.tensors[o->out[kk]].name, &out[kk].l, tr));
		if (n < sizeof line)
			n += (size_t)snprintf(line + n, sizeof line - n, " from");
		for (int j = 0; j < o->n_in && n < sizeof line; j++)
			n += (size_t)snprintf(line + n, sizeof line - n, "%s %s", j ? "," : "",
			                      box_text(c, c->g.tensors[o->in[j]].name, &in[j].l, tr));
		trace(c, "%s", line);
	}

	/* the op's own communication */
	if (rc == VK_OK && dop->n_comm > 0 && !vocab) {
		if (o->n_out != 1) {
			snprintf(why, sizeof why, "communication of an op with %d outputs unsupported",
			         o->n_out);
			rc = VK_UNSUPPORTED;
		} else if (!run_steps(c, &out[0], dop->comm, dop->n_comm, -1,
		                      c->g.tensors[o->out[0]].name, why, sizeof why)) {
			rc = VK_BROKEN;
		}
	}
	for (int kk = 0; kk < o->n_out && rc == VK_OK; kk++) {
		struct verify_check *kc = kk ? add_check(c, VERIFY_OP, i, -1, o->out[kk],
		                                         c->g.tensors[o->out[kk]].name)
		                             : k;
		compare(c, &out[kk], o->out[kk], kc);
	}
	if (rc != VK_OK) {
		set_status(c, k, rc == VK_UNSUPPORTED ? VERIFY_UNSUPPORTED : VERIFY_BROKEN, why);
		/* downstream ops go on from the reference's values */
		for (int kk = 0; kk < o->n_out; kk++) {
			struct layout l;
			scaled(c, dop->n_comm ? &dop->out[kk] : &dop->out_partial[kk], &l);
			dist_free(c, &out[kk]);
			dist_scatter(c, &out[kk], &l, c->ref[o->out[kk]]);
		}
	}
	if (c->backward && rc == VK_OK) {
		c->saved[i] = in;
		in = NULL;
	}
	for (int j = 0; j < o->n_in; j++) {
		if (in)
			dist_free(c, &in[j]);
		int t = o->in[j];
		if (c->g.tensors[t].producer >= 0 && --c->uses[t] == 0)
			dist_free(c, &c->held[t]);
	}
	free(in);
	for (int kk = 0; kk < o->n_out; kk++) {
		int t = o->out[kk];
		c->held_l[t] = out[kk].l;
		c->held[t] = out[kk];
		if (c->uses[t] == 0)
			dist_free(c, &c->held[t]);
	}
	free(out);
	return !c->oom;
}

/* ------------------------------------------------------ the backward */

/* The backward pass. The loss is the sum over the graph's outputs of
 * output x G, with G seeded like the inputs, so the gradient of every
 * output is G. Gradients are kept complete: each rank holds the exact
 * gradient of its box of the tensor. Going back through a step:
 *   AllReduce      nothing to do (every contributor's gradient is the whole one)
 *   ReduceScatter  AllGather over the same groups
 *   AllGather      each rank keeps its own part (a local slice)
 *   AllToAll       AllToAll back over the same groups
 *   StridedSlice   each rank gathers its box from the ranks holding its parts
 *   Reshape        the box reinterpreted back
 * An op's backward runs on each rank's boxes; an input's gradient is then
 * a partial sum over the device axes that cut labels the input does not
 * carry (MatMul's dX over the axes of n), completed by an AllReduce over
 * them. Axes that cut nothing (repeated computation) hold copies. */

static bool is_index(const struct graph *g, int op, int j)
{
	enum op_kind k = g->ops[op].kind;
	return j == 1 && (k == OP_GATHER || k == OP_SOFTMAXCROSSENTROPY || k == OP_MOEDISPATCH ||
	                  k == OP_MOECOMBINE);
}

/* Whether op input j gets a gradient: not an index, and not a graph
 * input other than a parameter (x's gradient is compared nowhere: a GEMM
 * fewer per MatMul that reads the input, in the reference and on every
 * rank). */
static bool has_grad(const struct graph *g, int op, int j)
{
	const struct tensor *x = &g->tensors[g->ops[op].in[j]];
	return !is_index(g, op, j) && (x->producer >= 0 || x->role == TENSOR_PARAM);
}

static double grad_seed(const struct ctx *c, int t, int64_t f)
{
	uint64_t key = (c->o->seed * 0x9e3779b97f4a7c15ull) ^ ((uint64_t)t << 40) ^ (uint64_t)f ^
	               0x5bd1e995ull;
	return 2 * verify_hash01(key * 0x2545f4914f6cdd1dull) - 1;
}

static uint32_t layout_axes(const struct layout *l)
{
	uint32_t m = l->partial;
	for (int d = 0; d < l->rank; d++)
		for (int k = 0; k < l->n_map[d]; k++)
			m |= 1u << l->map[d][k];
	return m;
}

/* Each rank's box of `before` assembled from the ranks whose boxes of
 * d's layout lie inside it (the backward of a StridedSlice). */
static enum vk_status gather_boxes(struct ctx *c, struct dist *d, const struct layout *before,
                                   char *why, size_t wn)
{
	int rank = before->rank;
	int64_t ns[GRAPH_MAX_RANK];
	layout_local_shape(before, ns);
	int64_t ne = verify_elems(ns, rank);
	int64_t (*alo)[GRAPH_MAX_RANK] = xcalloc(c, (size_t)c->n, sizeof(*alo));
	double **nb = xcalloc(c, (size_t)c->n, sizeof(*nb));
	int64_t *filled = xcalloc(c, (size_t)c->n, sizeof(*filled));
	enum vk_status rc = alo && nb && filled ? VK_OK : VK_BROKEN;
	for (int64_t q = 0; rc == VK_OK && q < c->n; q++)
		slice_of(c, &d->l, q, alo[q]);
	for (int64_t r = 0; rc == VK_OK && r < c->n; r++) {
		int64_t blo[GRAPH_MAX_RANK], off[GRAPH_MAX_RANK], zero[GRAPH_MAX_RANK] = {0};
		slice_of(c, before, r, blo);
		if (!(nb[r] = xcalloc(c, (size_t)ne, sizeof(double)))) {
			rc = VK_BROKEN;
			break;
		}
		/* the first rank holding each part: parts tile the box */
		int64_t got = 0;
		for (int64_t q = 0; q < c->n && got < ne; q++) {
			bool inside = true, dup = false;
			for (int k = 0; k < rank && inside; k++) {
				off[k] = alo[q][k] - blo[k];
				inside = off[k] >= 0 && off[k] + d->shape[k] <= ns[k];
			}
			if (!inside)
				continue;
			for (int64_t p = 0; p < q && !dup; p++)
				dup = !memcmp(alo[p], alo[q], (size_t)rank * sizeof(int64_t));
			if (dup)
				continue;
			box_copy(nb[r], ns, off, d->buf[q], d->shape, zero, d->shape, rank);
			got += d->elems;
		}
		if (got != ne) {
			snprintf(why, wn, "backward of StridedSlice: rank %lld's box is not tiled by the "
			         "ranks' slices", (long long)(c->base + r));
			rc = VK_BROKEN;
		}
	}
	free(alo);
	free(filled);
	if (rc != VK_OK) {
		for (int64_t r = 0; nb && r < c->n; r++)
			free(nb[r]);
		free(nb);
		return rc;
	}
	dist_free(c, d);
	d->buf = nb;
	d->l = *before;
	memcpy(d->shape, ns, sizeof(ns));
	d->elems = ne;
	account(c, (double)c->n * (double)ne * (double)sizeof(double));
	return VK_OK;
}

/* d (a gradient in the layout after step st) back to the layout before it
 * (scaled, not partial). */
static enum vk_status step_back(struct ctx *c, struct dist *d, const struct comm_step *st,
                                const struct layout *before, char *why, size_t wn)
{
	struct comm_step t = *st;
	switch (st->kind) {
	case STEP_ALLREDUCE:
		d->l = *before;
		return VK_OK;
	case STEP_REDUCESCATTER:
		t.kind = STEP_ALLGATHER;
		return run_step(c, d, &t, before, why, wn);
	case STEP_ALLGATHER:
		t.kind = STEP_SLICE;
		return run_step(c, d, &t, before, why, wn);
	case STEP_ALLTOALL:
		t.dim = st->to_dim;
		t.to_dim = st->dim;
		return run_step(c, d, &t, before, why, wn);
	case STEP_SLICE:
		return gather_boxes(c, d, before, why, wn);
	default:
		t.kind = STEP_RESHAPE;
		return run_step(c, d, &t, before, why, wn);
	}
}

/* Steps [0, n) undone in reverse; `start` is the layout before step 0
 * (scaled). */
static enum vk_status steps_back(struct ctx *c, struct dist *d, const struct comm_step *steps,
                                 int n, const struct layout *start, char *why, size_t wn)
{
	for (int s = n - 1; s >= 0; s--) {
		struct layout before;
		if (s > 0)
			scaled(c, &steps[s - 1].after, &before);
		else
			before = *start;
		before.partial = 0;
		enum vk_status rc = step_back(c, d, &steps[s], &before, why, wn);
		if (rc != VK_OK)
			return rc;
	}
	return VK_OK;
}

/* Adds the rank buffers of src into acc (same boxes), or moves src there. */
static void accumulate(struct ctx *c, struct dist *acc, struct dist *src)
{
	if (!acc->buf) {
		*acc = *src;
		memset(src, 0, sizeof(*src));
		return;
	}
	for (int64_t r = 0; r < c->n; r++)
		for (int64_t f = 0; f < acc->elems; f++)
			acc->buf[r][f] += src->buf[r][f];
	dist_free(c, src);
}

/* A parameter's gradient from one consumer, into the whole tensor; the
 * largest disagreement between ranks holding the same box into *spread. */
static void assemble(struct ctx *c, const struct dist *d, double *whole, double *spread)
{
	const struct layout *l = &d->l;
	int64_t n = verify_elems(l->shape, l->rank);
	double *part = xcalloc(c, (size_t)n, sizeof(double));
	bool *seen = xcalloc(c, (size_t)n, sizeof(bool));
	int64_t lo[GRAPH_MAX_RANK], idx[GRAPH_MAX_RANK];
	for (int64_t r = 0; part && seen && r < c->n; r++) {
		slice_of(c, l, r, lo);
		for (int64_t f = 0; f < d->elems; f++) {
			int64_t rem = f, gf = 0;
			for (int x = l->rank - 1; x >= 0; x--) {
				idx[x] = rem % d->shape[x];
				rem /= d->shape[x];
			}
			for (int x = 0; x < l->rank; x++)
				gf = gf * l->shape[x] + lo[x] + idx[x];
			double v = d->buf[r][f];
			if (seen[gf])
				*spread = fmax(*spread, fabs(v - part[gf]));
			part[gf] = v;
			seen[gf] = true;
		}
	}
	for (int64_t f = 0; part && f < n; f++)
		whole[f] += part[f];
	free(part);
	free(seen);
}

/* The reference's backward, whole tensors. */
static bool reference_walk(struct ctx *c, double **gref, const int *first, char *why,
                           size_t wn);

static bool reference_backward(struct ctx *c, double **gref)
{
	char why[400];
	/* first[t]: the earliest op reading t; walking back, t's values are
	 * read for the last time there, and freed (the ranks' backward reads
	 * only what they saved) */
	int *first = xcalloc(c, (size_t)c->g.n_tensors + 1, sizeof(*first));
	if (!first)
		return false;
	for (int t = 0; t < c->g.n_tensors; t++)
		first[t] = -1;
	for (int i = c->g.n_ops - 1; i >= 0; i--)
		for (int j = 0; j < c->g.ops[i].n_in; j++)
			first[c->g.ops[i].in[j]] = i;
	bool ok = reference_walk(c, gref, first, why, sizeof why);
	free(first);
	return ok;
}

/* The reference's backward, op by op from the last: each op's vjp on the
 * whole tensors. An intermediate tensor's gradient is freed once its
 * producer has used it (only the parameters' and the outputs' are kept:
 * the ranks' gradients are compared with the parameters', the outputs'
 * seed them), a tensor's values once its earliest reader has run. */
static bool reference_walk(struct ctx *c, double **gref, const int *first, char *why,
                           size_t wn)
{
	for (int t = 0; t < c->g.n_tensors; t++) {
		const struct tensor *x = &c->g.tensors[t];
		if (x->producer >= 0 && c->uses[t] == 0 && x->n_consumers == 0) {
			if (!(gref[t] = xcalloc(c, (size_t)x->elems, sizeof(double))))
				return false;
			for (int64_t f = 0; f < x->elems; f++)
				gref[t][f] = grad_seed(c, t, f);
		}
	}
	for (int i = c->g.n_ops - 1; i >= 0; i--) {
		const struct op *o = &c->g.ops[i];
		struct vpiece in[SIG_MAX_TENSORS], dy[SIG_MAX_TENSORS], din[SIG_MAX_TENSORS];
		if (o->n_in > SIG_MAX_TENSORS || o->n_out > SIG_MAX_TENSORS)
			return false;
		bool any = false;
		for (int k = 0; k < o->n_out; k++) {
			const struct tensor *y = &c->g.tensors[o->out[k]];
			if (!gref[o->out[k]] && !(gref[o->out[k]] = xcalloc(c, (size_t)y->elems, sizeof(double))))
				return false;
			any = true;
			dy[k] = (struct vpiece){.data = gref[o->out[k]], .rank = y->rank};
			memcpy(dy[k].shape, y->dims, sizeof(y->dims));
			memcpy(dy[k].full, y->dims, sizeof(y->dims));
		}
		if (!any)
			continue;
		for (int j = 0; j < o->n_in; j++) {
			const struct tensor *x = &c->g.tensors[o->in[j]];
			in[j] = (struct vpiece){.data = c->ref[o->in[j]], .rank = x->rank};
			memcpy(in[j].shape, x->dims, sizeof(x->dims));
			memcpy(in[j].full, x->dims, sizeof(x->dims));
			din[j] = in[j];
			din[j].data = NULL;
			if (!has_grad(&c->g, i, j))
				continue;
			if (!gref[o->in[j]] && !(gref[o->in[j]] = xcalloc(c, (size_t)x->elems, sizeof(double))))
				return false;
			din[j].data = gref[o->in[j]];
		}
		uint64_t salt = c->o->seed * 1000003u + (uint64_t)i;
		if (verify_vjp(&c->g, i, in, dy, din, NULL, NULL, salt, why, wn) != VK_OK)
			return false;
		for (int k = 0; k < o->n_out; k++)
			if (c->g.tensors[o->out[k]].n_consumers > 0) {
				free(gref[o->out[k]]);
				gref[o->out[k]] = NULL;
			}
		for (int j = 0; j < o->n_in; j++)
			if (first[o->in[j]] == i) {
				free(c->ref[o->in[j]]);
				c->ref[o->in[j]] = NULL;
			}
	}
	return true;
}

/* ZeRO (stages 1 to 3): the gradient is reduce-scattered over the plan's
 * gradient group instead of all-reduced, each rank keeping one chunk of
 * its slice (flattened, padded to equal chunks, as DeepSpeed does). Run on
 * the shares of one consumer's gradient: the ranks whose shares add up
 * contribute them; ranks that computed a copy (axes of the group that cut
 * nothing of the op) contribute once. Each rank's chunk is compared with
 * the same elements of the unsharded gradient. */
/* The axes over which a layout's tensor has copies: of size > 1, cutting
 * none of its dimensions. */
static uint32_t copy_axes(const struct layout *l)
{
	uint32_t rep = 0;
	for (int a = 0; a < l->dm.n; a++)
		if (l->dm.size[a] > 1 && !(layout_axes(l) & (1u << a)))
			rep |= 1u << a;
	return rep;
}

static void zero_check(struct ctx *c, int i, int j, const struct dist *share, uint32_t sum,
                       const double *gref, double floor_abs)
{
	const struct dist_op *dop = &c->p->ops[i];
	const struct graph *g = &c->g;
	int t = g->ops[i].in[j];
	/* a parameter every rank holds a slice of its own (no copies, no
	 * shares to add: an expert weight with EP over all of DP) has nothing
	 * for ZeRO to shard; its gradient is checked as it is */
	if (!copy_axes(&dop->in[j]) && !sum)
		return;
	struct verify_check *k = add_check(c, VERIFY_GRAD, i, -1, t,
	                                   arena_printf(c->a, "zero-shard %s", g->tensors[t].name));
	/* the op's gradient steps follow its parameter inputs that have copies */
	int gi = 0;
	for (int jj = 0; jj < j; jj++)
		gi += g->tensors[g->ops[i].in[jj]].role == TENSOR_PARAM && copy_axes(&dop->in[jj]);
	if (gi >= dop->n_grad) {
		set_status(c, k, VERIFY_BROKEN, "the parameter's gradient is shared or copied, but "
		                                "the plan has no gradient step for it");
		return;
	}
	const struct rank_groups *gr = &dop->grad[gi].groups;
	uint32_t gm = 0;
	for (int a = 0; a < gr->n_axes; a++)
		gm |= 1u << gr->axes[a];
	if (sum & ~gm) {
		set_status(c, k, VERIFY_BROKEN, "the gradient group leaves out ranks whose shares add up");
		return;
	}
	uint32_t copies = gm & ~sum;
	int gs = gr->size;
	int64_t len = share->elems, chunk = (len + gs - 1) / gs;
	int64_t *m = xcalloc(c, (size_t)gs, sizeof(*m));
	double *acc = xcalloc(c, (size_t)(chunk * gs), sizeof(double));
	int64_t coord[PLAN_MAX_AXES], lo[GRAPH_MAX_RANK], idx[GRAPH_MAX_RANK];
	double worst = 0, big = floor_abs;
	const struct layout *l = &share->l;
	for (int q = 0; m && acc && q < gr->n_groups; q++) {
		rank_groups_members(gr, q, m);
		memset(acc, 0, (size_t)(chunk * gs) * sizeof(double));
		for (int u = 0; u < gs; u++) {
			devmat_coords(&gr->dm, m[u], coord);
			bool first = true;
			for (int a = 0; a < gr->dm.n; a++)
				if (copies & (1u << a))
					first &= coord[a] == 0;
			if (!first)
				continue;
			for (int64_t f = 0; f < len; f++)
				acc[f] += share->buf[m[u] - c->base][f];
		}
		for (int u = 0; u < gs; u++) {
			slice_of(c, l, m[u] - c->base, lo);
			for (int64_t f = u * chunk; f < len && f < (u + 1) * chunk; f++) {
				int64_t rem = f, gf = 0;
				for (int x = l->rank - 1; x >= 0; x--) {
					idx[x] = rem % share->shape[x];
					rem /= share->shape[x];
				}
				for (int x = 0; x < l->rank; x++)
					gf = gf * l->shape[x] + lo[x] + idx[x];
				worst = fmax(worst, fabs(acc[f] - gref[gf]));
				big = fmax(big, fabs(gref[gf]));
			}
		}
	}
	free(m);
	free(acc);
	if (!k)
		return;
	k->max_abs = worst;
	k->max_rel = worst / big;
	if (!(k->max_rel <= c->o->tolerance))
		set_status(c, k, VERIFY_MISMATCH, NULL);
}

/* An op's backward on the ranks as tasks: rank r's vjp on its boxes. */
struct bwd_task {
	const struct ctx *c;
	int i;
	const struct dist *in, *dy, *din, *part;
};

static enum vk_status bwd_task(void *arg, int64_t r, char *why, size_t wn)
{
	const struct bwd_task *b = arg;
	const struct ctx *c = b->c;
	const struct op *o = &c->g.ops[b->i];
	struct vpiece pin[SIG_MAX_TENSORS], pdy[SIG_MAX_TENSORS], pdin[SIG_MAX_TENSORS];
	for (int j = 0; j < o->n_in; j++) {
		const struct dist *d = &b->in[j];
		pin[j] = rank_piece(c, d, r);
		pdin[j] = pin[j];
		pdin[j].data = b->din[j].buf ? b->din[j].buf[r] : NULL;
	}
	for (int k = 0; k < o->n_out; k++) {
		const struct dist *d = &b->dy[k];
		pdy[k] = rank_piece(c, d, r);
	}
	uint64_t salt = c->o->seed * 1000003u + (uint64_t)b->i;
	return verify_vjp(&c->g, b->i, pin, pdy, pdin, b->part ? b->part[0].buf[r] : NULL,
	                  b->part ? b->part[1].buf[r] : NULL, salt, why, wn);
}

static void backward(struct ctx *c)
{
	const struct plan *p = c->p;
	const struct graph *g = &c->g;
	int nt = g->n_tensors;
	double **gref = xcalloc(c, (size_t)nt, sizeof(*gref));
	double **gfull = xcalloc(c, (size_t)nt, sizeof(*gfull));
	double *spread = xcalloc(c, (size_t)nt, sizeof(*spread));
	struct dist *gcot = xcalloc(c, (size_t)nt, sizeof(*gcot));
	char why[400] = "";
	const char *fail = NULL;
	if (!gref || !gfull || !spread || !gcot || !reference_backward(c, gref))
		fail = "out of memory, or an op the reference cannot differentiate";
	double gmax = 0;
	for (int t = 0; !fail && t < nt; t++)
		if (g->tensors[t].role == TENSOR_PARAM && gref[t])
			for (int64_t f = 0; f < g->tensors[t].elems; f++)
				gmax = fmax(gmax, fabs(gref[t][f]));
	bool zero = p->scenario && p->scenario->training.zero_stage > 0;
	/* the outputs' gradients, each rank its box */
	for (int t = 0; !fail && t < nt; t++)
		if (g->tensors[t].producer >= 0 && g->tensors[t].n_consumers == 0 &&
		    !dist_scatter(c, &gcot[t], &c->held_l[t], gref[t]))
			fail = "out of memory";
	for (int i = g->n_ops - 1; !fail && i >= 0; i--) {
		const struct op *o = &g->ops[i];
		const struct dist_op *dop = &p->ops[i];
		struct dist *in = c->saved[i];
		if (!in) {
			fail = "the forward pass of an op did not run";
			break;
		}
		/* the outputs' gradients back through the op's own communication */
		struct dist dy[SIG_MAX_TENSORS];
		memset(dy, 0, sizeof(dy));
		bool vocab = o->kind == OP_SOFTMAXCROSSENTROPY && dop->n_comm == 3 &&
		             in[0].shape[1] != in[0].l.shape[1];
		for (int k = 0; k < o->n_out && !fail; k++) {
			struct layout lp;
			scaled(c, &dop->out_partial[k], &lp);
			lp.partial = 0;
			int t = o->out[k];
			if (gcot[t].buf) {
				dy[k] = gcot[t];
				memset(&gcot[t], 0, sizeof(gcot[t]));
			} else if (!dist_alloc(c, &dy[k], &c->held_l[t])) {
				fail = "out of memory";
				break;
			}
			if (dop->n_comm && !vocab) {
				if (o->n_out != 1)
					fail = "the gradient through the communication of an op with several "
					       "outputs unsupported";
				else if (steps_back(c, &dy[k], dop->comm, dop->n_comm, &lp, why, sizeof why) !=
				         VK_OK)
					fail = why;
			}
			dy[k].l = lp;
		}
		/* every rank's share of the inputs' gradients */
		struct dist din[SIG_MAX_TENSORS];
		memset(din, 0, sizeof(din));
		for (int j = 0; j < o->n_in && !fail; j++)
			if (has_grad(g, i, j) && !dist_alloc(c, &din[j], &in[j].l))
				fail = "out of memory";
		struct dist part[3];
		memset(part, 0, sizeof(part));
		if (!fail && vocab && vocab_parts(c, i, in, &dy[0].l, part, why, sizeof why) != VK_OK)
			fail = why;
		if (!fail) {
			struct bwd_task bt = {.c = c, .i = i, .in = in, .dy = dy, .din = din,
			                      .part = vocab ? part : NULL};
			double work = 0;
			for (int j = 0; j < o->n_in; j++)
				work += (double)g->tensors[o->in[j]].elems;
			if (run_tasks(c, c->n, work, bwd_task, &bt, why, sizeof why) != VK_OK)
				fail = why;
		}
		for (int k = 0; k < 3; k++)
			dist_free(c, &part[k]);
		for (int k = 0; k < o->n_out; k++)
			dist_free(c, &dy[k]);
		/* complete, and hand back to the producers */
		uint32_t used = 0;
		for (int j = 0; j < o->n_in; j++)
			used |= layout_axes(&dop->in[j]);
		for (int k = 0; k < o->n_out; k++)
			used |= layout_axes(&dop->out_partial[k]);
		for (int j = 0; j < o->n_in && !fail; j++) {
			if (!din[j].buf)
				continue;
			int t = o->in[j];
			uint32_t sum = used & ~layout_axes(&dop->in[j]);
			int axes[PLAN_MAX_AXES], na = 0;
			for (int a = 0; a < dop->in[j].dm.n; a++)
				if (sum & (1u << a) && dop->in[j].dm.size[a] > 1)
					axes[na++] = a;
				else
					sum &= ~(1u << a);
			if (zero && g->tensors[t].role == TENSOR_PARAM && g->tensors[t].n_consumers == 1)
				zero_check(c, i, j, &din[j], sum, gref[t], 1e-6 * fmax(gmax, 1));
			if (na) {
				struct comm_step st = {.kind = STEP_ALLREDUCE, .reduce = REDUCE_SUM, .dim = -1,
				                       .to_dim = -1};
				if (!devmat_groups(&dop->in[j].dm, axes, na, &st.groups)) {
					fail = "gradient groups do not fit";
					break;
				}
				struct layout l = in[j].l;
				if (run_step(c, &din[j], &st, &l, why, sizeof why) != VK_OK) {
					fail = why;
					break;
				}
			}
			const struct tensor *x = &g->tensors[t];
			if (x->role == TENSOR_PARAM) {
				if (!gfull[t] && !(gfull[t] = xcalloc(c, (size_t)x->elems, sizeof(double)))) {
					fail = "out of memory";
					break;
				}
				assemble(c, &din[j], gfull[t], &spread[t]);
				dist_free(c, &din[j]);
				continue;
			}
			if (x->producer < 0) {
				dist_free(c, &din[j]);
				continue;
			}
			int ei;
			const struct plan_edge *e = edge_into(p, i, j, &ei);
			struct layout start = c->held_l[t];
			start.partial = 0;
			if (e && e->redist.n_steps &&
			    steps_back(c, &din[j], e->redist.steps, e->redist.n_steps, &start, why,
			               sizeof why) != VK_OK) {
				fail = why;
				break;
			}
			din[j].l = start;
			if (gcot[t].buf && gcot[t].elems != din[j].elems) {
				fail = "gradients of one tensor arrive in different boxes";
				break;
			}
			accumulate(c, &gcot[t], &din[j]);
		}
		for (int j = 0; j < o->n_in; j++)
			dist_free(c, &din[j]);
	}
	/* one check per parameter, in graph order, relative to its largest
	 * magnitude, but to no less than a millionth of the model's largest
	 * parameter gradient or of the outputs' gradients (of order 1): a
	 * gradient that is zero in exact arithmetic (an attention key's bias:
	 * softmax ignores a shift common to all keys; anything before a
	 * softmax summed over its axis) is rounding noise, with nothing to be
	 * relative to */
	for (int t = 0; t < nt; t++) {
		const struct tensor *x = &g->tensors[t];
		if (x->role != TENSOR_PARAM || x->n_consumers == 0)
			continue;
		struct verify_check *k = add_check(c, VERIFY_GRAD, -1, -1, t,
		                                   arena_printf(c->a, "grad %s", x->name));
		if (fail || !gfull || !gfull[t] || !gref[t]) {
			set_status(c, k, VERIFY_BROKEN, fail ? fail : "no gradient reached it");
			continue;
		}
		double big = 1e-6 * fmax(gmax, 1), worst = spread[t];
		for (int64_t f = 0; f < x->elems; f++) {
			big = fmax(big, fabs(gref[t][f]));
			double e = fabs(gfull[t][f] - gref[t][f]);
			worst = fmax(worst, isnan(e) ? INFINITY : e);
		}
		if (k) {
			k->max_abs = worst;
			k->max_rel = big > 0 ? worst / big : worst;
			if (!(k->max_rel <= c->o->tolerance))
				set_status(c, k, VERIFY_MISMATCH, spread[t] > 0 && spread[t] >= worst
				                                      ? "ranks holding the same slice disagree"
				                                      : NULL);
		}
	}
	for (int t = 0; t < nt; t++) {
		if (gref)
			free(gref[t]);
		if (gfull)
			free(gfull[t]);
		if (gcot)
			dist_free(c, &gcot[t]);
	}
	free(gref);
	free(gfull);
	free(spread);
	free(gcot);
}

/* The pipeline split: before op i, the first of a chunk, the activations
 * the ranks still hold (made before i, read at or after it) are what the
 * stage must send on; the partition's live bytes per rank must be theirs. */
static void stage_check(struct ctx *c, const struct plan_part *part, int i)
{
	const struct plan *p = c->p;
	double held = 0;
	for (int t = 0; t < c->g.n_tensors; t++) {
		int prod = c->g.tensors[t].producer;
		if (prod < 0 || prod >= i || !c->held[t].buf)
			continue;
		const struct op *o = &p->graph->ops[prod];
		for (int k = 0; k < o->n_out; k++)
			if (o->out[k] == t)
				held += layout_local_bytes(&p->ops[prod].out[k]);
	}
	double want = part->live[i];
	struct verify_check *k = add_check(
	    c, VERIFY_STAGE, i, -1, c->g.ops[i].in[0],
	    arena_printf(c->a, "stage cut before %s (chunk %d to %d)", c->g.ops[i].name,
	                 part->chunk_of[i - 1], part->chunk_of[i]));
	if (!k)
		return;
	k->max_abs = fabs(held - want);
	k->max_rel = want > 0 ? k->max_abs / want : k->max_abs;
	if (!(k->max_rel <= c->o->tolerance))
		set_status(c, k, VERIFY_MISMATCH,
		           arena_printf(c->a, "the split sends %.0f bytes per rank, the ranks hold %.0f "
		                        "live there", want, held));
}

#ifdef SHARDLAB_OPENBLAS
/* OpenBLAS picks its kernels by the CPU's model number when it loads
 * [OpenBLAS-dynamic]; a CPU newer than its table (0.3.21 does not know
 * Intel's family 6 model 207, Emerald Rapids [Linux-intel-family]) gets
 * the generic Prescott (SSE3) kernels, three times slower than the
 * AVX-512 ones the CPU runs (docs/performance.md, docs/sources.md). When
 * the user has not chosen (OPENBLAS_CORETYPE, OpenBLAS's own variable) and
 * OpenBLAS fell back to Prescott, pick by the CPU's features:
 * SkylakeX's kernels with AVX-512 (F, DQ, BW, VL),
 * Haswell's with AVX2 and FMA. Done once, before the first GEMM; the
 * environment is left as it was. */
static void blas_kernels(void)
{
	static bool done;
	if (done)
		return;
	done = true;
	const char *core = openblas_get_corename();
	if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || getenv("OPENBLAS_CORETYPE") ||
	    !core || strcmp(core, "Prescott") != 0)
		return;
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
	__builtin_cpu_init();
	const char *pick = NULL;
	if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512dq") &&
	    __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl"))
		pick = "SkylakeX";
	else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		pick = "Haswell";
	if (!pick || setenv("OPENBLAS_CORETYPE", pick, 1) != 0)
		return;
	gotoblas_dynamic_quit();
	gotoblas_dynamic_init();
	unsetenv("OPENBLAS_CORETYPE");
#endif
}
#endif

bool verify_plan(struct arena *a, const struct plan *p, const struct verify_options *o,
                 struct verify_result *out, struct diag_list *diags)
{
	memset(out, 0, sizeof(*out));
	gsl_set_error_handler_off();
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int threads = o->threads > 0 ? o->threads : online > 0 ? (int)online : 1;
#ifdef SHARDLAB_OPENBLAS
	/* One thread: the GEMMs here are small, and one thread's order of
	 * summation is the same on every machine (byte-identical reports). */
	openblas_set_num_threads(1);
	blas_kernels();
#endif
	struct ctx c = {.a = a, .p = p, .o = o, .n = p->n_devices, .r = out,
	                .threads = threads < VERIFY_MAX_THREADS ? threads : VERIFY_MAX_THREADS};
	out->scale = o->scale;
	if (p->graph->n_ops > 0)
		c.base = p->ops[0].dm.base;
	if (!verify_scaling_init(&c.sc, p, o->scale)) {
		diag_add(diags, DIAG_ERROR, p->scenario ? p->scenario->file : NULL, 0, NULL,
		         "out of memory verifying the plan");
		return false;
	}
	bool ok = scale_graph(&c, diags);
	c.backward = o->gradients;
	if (ok) {
		c.saved = xcalloc(&c, (size_t)c.g.n_ops + 1, sizeof(*c.saved));
		c.held_l = xcalloc(&c, (size_t)c.g.n_tensors + 1, sizeof(*c.held_l));
		c.ref = xcalloc(&c, (size_t)c.g.n_tensors, sizeof(*c.ref));
		c.held = xcalloc(&c, (size_t)c.g.n_tensors, sizeof(*c.held));
		c.uses = xcalloc(&c, (size_t)c.g.n_tensors, sizeof(*c.uses));
	}
	for (int t = 0; ok && !c.oom && t < c.g.n_tensors; t++) {
		const struct tensor *x = &c.g.tensors[t];
		out->reference_bytes += (double)x->elems * (double)sizeof(double);
		if (x->producer >= 0)
			continue;
		if (!(c.ref[t] = xcalloc(&c, (size_t)x->elems, sizeof(double))))
			break;
		int64_t bound = index_bound(&c, t);
		if (!moe_index(&c, t, c.ref[t]))
			for (int64_t f = 0; f < x->elems; f++)
				c.ref[t][f] = input_value(&c, t, f, bound);
	}
	for (int i = 0; ok && !c.oom && i < c.g.n_ops; i++)
		for (int j = 0; j < c.g.ops[i].n_in; j++)
			c.uses[c.g.ops[i].in[j]]++;
	struct estimate est;
	const struct plan_part *part = NULL;
	if (ok && p->scenario && p->scenario->training.pipeline_stages > 1) {
		if (!plan_estimate(a, p, &est, diags))
			ok = false;
		else
			part = &est.part;
	}
	for (int i = 0; ok && !c.oom && i < c.g.n_ops; i++) {
		if (part && i > 0 && part->chunk_of[i] != part->chunk_of[i - 1])
			stage_check(&c, part, i);
		ok = run_op(&c, i);
	}
	if (c.oom && ok)
		ok = false;
	bool forward_ok = true;
	for (int k = 0; k < out->n_checks; k++)
		forward_ok &= out->checks[k].status == VERIFY_MATCH;
	out->n_forward = out->n_checks;
	if (ok && c.backward && forward_ok)
		backward(&c);
	else if (ok && c.backward)
		out->gradients_skipped = true;
	if (c.oom && ok)
		ok = false;
	for (int i = 0; c.saved && i < c.g.n_ops; i++) {
		for (int j = 0; c.saved[i] && j < c.g.ops[i].n_in; j++)
			dist_free(&c, &c.saved[i][j]);
		free(c.saved[i]);
	}
	free(c.saved);
	free(c.held_l);
	if (!ok && diags->errors == 0)
		diag_add(diags, DIAG_ERROR, p->scenario ? p->scenario->file : NULL, 0, NULL,
		         "out of memory verifying the plan (try --scale)");
	for (int t = 0; c.held && t < c.g.n_tensors; t++)
		dist_free(&c, &c.held[t]);
	for (int t = 0; c.ref && t < c.g.n_tensors; t++)
		free(c.ref[t]);
	free(c.ref);
	free(c.held);
	free(c.uses);
	verify_scaling_free(&c.sc);
	for (int k = 0; k < out->n_checks; k++) {
		const struct verify_check *ck = &out->checks[k];
		out->max_abs = fmax(out->max_abs, ck->max_abs);
		out->max_rel = fmax(out->max_rel, ck->max_rel);
		switch (ck->status) {
		case VERIFY_MATCH: out->n_match++; break;
		case VERIFY_MISMATCH: out->n_mismatch++; break;
		case VERIFY_BROKEN: out->n_broken++; break;
		default: out->n_unsupported++; break;
		}
	}
	out->passed = ok && out->n_checks > 0 && out->n_match == out->n_checks;
	return ok;
}
