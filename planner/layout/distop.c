/* distop.c — distributed operators, derived from an op's dimension
 * signature (models/signature.c) and a strategy, with no per-op rules but
 * the two the signature names (Reshape, vocabulary-parallel cross-entropy).
 *
 * A strategy assigns every label of the signature a list of device axes
 * (major first): the tuple form gives each label its own axis, sized by
 * its cut, in order of first appearance in the inputs (MatMul ((a,b),(b,c))
 * -> [a, b, c]), with a repeat axis prepended when the cuts use fewer
 * devices than the op has; the Layout form (seed 004) names the axes
 * directly. From that: each tensor's layout; the output's partial-sum axes
 * (the axes of cut summed labels); the op's own forward communication
 * (AllReduce of partial sums; the three AllReduces of vocabulary-parallel
 * cross-entropy, seed 003); per-rank FLOPs and bytes; the AllReduce of each
 * parameter's gradient over the ranks that hold the same slice of it.
 *
 * Units: element counts int64_t; bytes and FLOPs double; bytes per device
 * of an AllReduce over s ranks of L local bytes are 2(s-1)/s * L (ring).
 * No hot path beyond strategy enumeration calling dist_op_from_cuts once
 * per candidate.
 */
#include <stdio.h>
#include <string.h>

#include "layout.h"

const char *const strategy_source_names[STRATEGY_SOURCE_COUNT] = {"configured", "propagated",
                                                                  "default", "planned"};

/* The device axes of every label, major first. */
struct label_axes {
	int n[SIG_MAX_LABELS];
	int8_t axis[SIG_MAX_LABELS][PLAN_MAX_AXES];
};

/* One op being distributed: where its diagnostics go and what they say. */
struct op_ctx {
	struct arena *a;
	const struct graph *g;
	int op;
	const struct op *o;
	struct op_sig sig;
	struct diag_list *diags;
	const char *file;    /* the scenario file, NULL if none */
	int line;            /* the shard() line in the scenario, 0 if none */
	const char *path;    /* JSON path of the configuration, or NULL */
};

static void op_fail(const struct op_ctx *c, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static void op_fail(const struct op_ctx *c, const char *fmt, ...)
{
	if (!c->diags)
		return;  /* a question (dist_op_cuts_valid), not a request */
	char msg[600];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	/* The signature names the labels the message talks about. */
	char sig[128] = "";
	if (c->sig.n_labels) {
		char f[120];
		snprintf(sig, sizeof sig, " (%s)", op_sig_format(&c->sig, f, sizeof f));
	}
	diag_add(c->diags, DIAG_ERROR, c->file, c->line, c->path, "%s \"%s\"%s: %s",
	         op_kind_name(c->o->kind), c->o->name, sig, msg);
}

static const struct tensor *in_tensor(const struct op_ctx *c, int i)
{
	return &c->g->tensors[c->o->in[i]];
}

static const struct tensor *out_tensor(const struct op_ctx *c, int k)
{
	return &c->g->tensors[c->o->out[k]];
}

/* Why a whole label must stay whole, for diagnostics: what the op does
 * along it. */
static const char *whole_verb(enum op_kind k)
{
	switch (k) {
	case OP_CONCAT: return "concatenates along";
	case OP_SPLIT: return "splits along";
	case OP_STRIDEDSLICE: return "slices";
	default: return "normalises over";
	}
}

static bool init_ctx(struct op_ctx *c, struct arena *a, const struct graph *g, int op,
                     struct diag_list *diags)
{
	memset(c, 0, sizeof(*c));
	c->a = a;
	c->g = g;
	c->op = op;
	c->o = &g->ops[op];
	c->diags = diags;
	if (!graph_op_signature(g, op, &c->sig)) {
		op_fail(c, "has more tensors or dimensions than a signature holds (%d tensors, %d labels); "
		        "it can only be replicated", SIG_MAX_TENSORS, SIG_MAX_LABELS);
		return false;
	}
	return true;
}

static int64_t axes_slices(const struct devmat *dm, const int8_t *axes, int n)
{
	int64_t s = 1;
	for (int k = 0; k < n; k++)
		s *= dm->size[axes[k]];
	return s;
}

/* ------------------------------------------------------- Reshape's rule */

int layout_reshape_runs(const struct tensor *x, const struct tensor *y, int in0[], int in1[],
                        int out0[])
{
	int n = 0, i = 0, j = 0;
	while (i < x->rank && j < y->rank) {
		in0[n] = i;
		out0[n] = j;
		int64_t p = x->dims[i++], q = y->dims[j++];
		while (p != q) {
			if (p < q && i < x->rank)
				p *= x->dims[i++];
			else if (j < y->rank)
				q *= y->dims[j++];
			else
				break;
		}
		in1[n++] = i;
	}
	/* Trailing dims of size 1 on one side end the last run. */
	if (n)
		in1[n - 1] = x->rank;
	return n;
}

/* The first dim in [lo, hi) of size > 1 (lo when all are 1): the major
 * dim of a run, size-1 dims aside. */
static int major_dim(const struct tensor *t, int lo, int hi)
{
	for (int d = lo; d < hi; d++)
		if (t->dims[d] > 1)
			return d;
	return lo;
}

/* Spill (Layout form only): a run's cut may sit on several of its input
 * dims when every cut dim but the last is cut whole and no uncut dim lies
 * between, i.e. the merged dimension is cut in contiguous blocks; its
 * axes, major first, then fill the run's output dims major first, each
 * output dim cut whole before the next takes an axis ([B·s] cut (dp, cp)
 * with B = dp lands dp on B and cp on s: context parallelism). */
static bool reshape_spill(const struct op_ctx *c, const struct devmat *dm, struct label_axes *la,
                          int i0, int i1, int o0, int o1)
{
	const struct tensor *x = in_tensor(c, 0), *y = out_tensor(c, 0);
	int8_t axes[PLAN_MAX_AXES];
	int n = 0;
	bool open = true;   /* every dim so far cut whole */
	for (int d = i0; d < i1; d++) {
		int l = c->sig.in[0][d];
		int64_t s = axes_slices(dm, la->axis[l], la->n[l]);
		if (x->dims[d] == 1 || (s == 1 && !open))
			continue;
		if (!open && s > 1)
			return false;
		for (int k = 0; k < la->n[l] && n < PLAN_MAX_AXES; k++)
			axes[n++] = la->axis[l][k];
		open = s == x->dims[d];
	}
	int j = o0, got[GRAPH_MAX_RANK] = {0};
	int8_t to[GRAPH_MAX_RANK][PLAN_MAX_AXES];
	int64_t p = 1;
	for (int k = 0; k < n; k++) {
		int64_t a = dm->size[axes[k]];
		while (j < o1 && (y->dims[j] == 1 || p == y->dims[j]) && a > 1) {
			j++;
			p = 1;
		}
		if (j == o1 || y->dims[j] % (p * a))
			return false;
		to[j][got[j]++] = axes[k];
		p *= a;
	}
	for (int o = o0; o < o1; o++) {
		int lo = c->sig.out[0][o];
		la->n[lo] = got[o];
		memcpy(la->axis[lo], to[o], (size_t)got[o] * sizeof(to[o][0]));
	}
	return true;
}

/* A cut may sit only on the major dim of a run; it carries to the run's
 * major output dim, which it must divide (with `spill`, reshape_spill's
 * wider rule). */
static bool reshape_rule(const struct op_ctx *c, const struct devmat *dm, struct label_axes *la,
                         bool spill)
{
	const struct tensor *x = in_tensor(c, 0), *y = out_tensor(c, 0);
	int in0[GRAPH_MAX_RANK], in1[GRAPH_MAX_RANK], out0[GRAPH_MAX_RANK];
	int n = layout_reshape_runs(x, y, in0, in1, out0);
	bool ok = true;
	for (int r = 0; r < n; r++) {
		int o1 = r + 1 < n ? out0[r + 1] : y->rank;
		if (spill && reshape_spill(c, dm, la, in0[r], in1[r], out0[r], o1))
			continue;
		int mi = major_dim(x, in0[r], in1[r]);
		int mo = major_dim(y, out0[r], o1);
		for (int d = in0[r]; d < in1[r]; d++) {
			int l = c->sig.in[0][d];
			int64_t s = axes_slices(dm, la->axis[l], la->n[l]);
			if (d != mi && s > 1) {
				op_fail(c, "dimension %d of input 0 (%s) is cut %lld, but it merges into output "
				        "dimension %d behind dimension %d; only the major dimension of a merged "
				        "group may be cut", d, x->name, (long long)s, mo, mi);
				ok = false;
			}
		}
		int li = c->sig.in[0][mi], lo = c->sig.out[0][mo];
		int64_t s = axes_slices(dm, la->axis[li], la->n[li]);
		if (y->dims[mo] % s) {
			op_fail(c, "dimension %d of input 0 (%s) is cut %lld, which does not divide output "
			        "dimension %d (%lld)", mi, x->name, (long long)s, mo,
			        (long long)y->dims[mo]);
			ok = false;
		}
		la->n[lo] = la->n[li];
		memcpy(la->axis[lo], la->axis[li], sizeof(la->axis[li]));
	}
	return ok;
}

/* -------------------------------------------------- the tuple form (cuts) */

/* Checks the cuts against the signature; cut[l] receives each label's cut
 * (0 for labels no input carries). */
static bool check_cuts(const struct op_ctx *c, const int64_t (*cuts)[GRAPH_MAX_RANK],
                       int64_t cut[SIG_MAX_LABELS])
{
	int first[SIG_MAX_LABELS];
	bool ok = true;
	memset(cut, 0, SIG_MAX_LABELS * sizeof(cut[0]));
	for (int i = 0; i < c->o->n_in; i++) {
		const struct tensor *t = in_tensor(c, i);
		for (int d = 0; d < t->rank; d++) {
			int l = c->sig.in[i][d];
			int64_t k = cuts[i][d];
			if (l < 0 && k != 1) {
				op_fail(c, "dimension %d of input %d (%s) is broadcast (size 1 against %lld in "
				        "the output), so it must stay whole, but it is cut %lld", d, i,
				        t->name, (long long)out_tensor(c, 0)->dims[out_tensor(c, 0)->rank -
				                                                 t->rank + d], (long long)k);
				ok = false;
			} else if (k < 1 || t->dims[d] % k) {
				op_fail(c, "dimension %d of input %d (%s) has size %lld, which %lld slices do "
				        "not divide", d, i, t->name, (long long)t->dims[d], (long long)k);
				ok = false;
			} else if (l >= 0 && c->sig.role[l] == SIG_WHOLE && k != 1) {
				op_fail(c, "%s %s dimension %d, which must stay whole on each device (input %d "
				        "(%s) cuts it %lld)", op_kind_name(c->o->kind),
				        whole_verb(c->o->kind), d, i, t->name, (long long)k);
				ok = false;
			} else if (l >= 0 && cut[l] && cut[l] != k) {
				op_fail(c, "dimension %c is cut %lld in input %d (%s) but %lld in input %d (%s)",
				        c->sig.name[l], (long long)cut[l], first[l],
				        in_tensor(c, first[l])->name, (long long)k, i, t->name);
				ok = false;
			} else if (l >= 0 && !cut[l]) {
				cut[l] = k;
				first[l] = i;
			}
		}
	}
	return ok;
}

/* One axis per input label in order of first appearance, a repeat axis
 * first when the cuts use fewer than n_devices. */
static bool cuts_devmat(const struct op_ctx *c, const int64_t cut[SIG_MAX_LABELS],
                        int64_t n_devices, struct devmat *dm, struct label_axes *la)
{
	int order[SIG_MAX_LABELS], n = 0;
	bool seen[SIG_MAX_LABELS] = {false};
	for (int i = 0; i < c->o->n_in; i++)
		for (int d = 0; d < in_tensor(c, i)->rank; d++) {
			int l = c->sig.in[i][d];
			if (l >= 0 && !seen[l]) {
				seen[l] = true;
				order[n++] = l;
			}
		}
	int64_t p = 1, sizes[PLAN_MAX_AXES];
	for (int k = 0; k < n; k++)
		if (!util_mul_i64(p, cut[order[k]], &p))
			p = INT64_MAX;
	if (n_devices % p) {
		char buf[200];
		size_t o = 0;
		for (int k = 0; k < n && o < sizeof buf; k++)
			o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%lld", k ? " x " : "",
			                      (long long)cut[order[k]]);
		op_fail(c, "the strategy uses %s = %lld devices, which does not divide the %lld devices",
		        buf, (long long)p, (long long)n_devices);
		return false;
	}
	int rep = n_devices > p;
	if (n + rep > PLAN_MAX_AXES) {
		op_fail(c, "the strategy needs %d device axes, more than the %d a device matrix holds",
		        n + rep, PLAN_MAX_AXES);
		return false;
	}
	memset(la, 0, sizeof(*la));
	if (rep)
		sizes[0] = n_devices / p;
	for (int k = 0; k < n; k++) {
		sizes[rep + k] = cut[order[k]];
		la->n[order[k]] = 1;
		la->axis[order[k]][0] = (int8_t)(rep + k);
	}
	return devmat_init(dm, n + rep, sizes, NULL, 0);
}

/* ------------------------------------------------- the distributed op */

static void map_layout(struct layout *l, const struct devmat *dm, const struct tensor *t,
                       const int8_t *labels, const struct label_axes *la)
{
	layout_init(l, dm, t);
	for (int d = 0; d < t->rank; d++) {
		int lb = labels[d];
		if (lb < 0)
			continue;
		l->n_map[d] = la->n[lb];
		memcpy(l->map[d], la->axis[lb], sizeof(l->map[d]));
	}
}

/* Axes in a mask, major first. */
static int mask_axes(uint32_t m, int axes[PLAN_MAX_AXES])
{
	int n = 0;
	for (int a = 0; a < PLAN_MAX_AXES; a++)
		if (m & (1u << a))
			axes[n++] = a;
	return n;
}

/* An AllReduce over the ranks varying along `mask`, of `bytes` local bytes. */
static bool allreduce(struct arena *a, const struct devmat *dm, uint32_t mask, double bytes,
                      enum reduce_op red, const struct layout *after, const char *why,
                      struct comm_step *st)
{
	int axes[PLAN_MAX_AXES], n = mask_axes(mask, axes);
	memset(st, 0, sizeof(*st));
	st->kind = STEP_ALLREDUCE;
	st->reduce = red;
	st->dim = st->to_dim = -1;
	if (!devmat_groups(dm, axes, n, &st->groups))
		return false;
	double s = st->groups.size;
	st->bytes_per_device = 2 * (s - 1) / s * bytes;
	st->after = *after;
	st->why = why;
	return true;
}

/* Appends steps to d->comm. */
static bool add_comm(struct arena *a, struct dist_op *d, const struct comm_step *steps, int n)
{
	struct comm_step *c = arena_grow(a, d->comm, (size_t)d->n_comm, (size_t)(d->n_comm + n),
	                                 sizeof(*c));
	if (!c)
		return false;
	memcpy(c + d->n_comm, steps, (size_t)n * sizeof(*c));
	d->comm = c;
	d->n_comm += n;
	return true;
}

/* Letters of the labels cut along the mask, for reasons ("k"). */
static const char *cut_labels(const struct op_ctx *c, const struct label_axes *la,
                              uint32_t mask)
{
	char buf[SIG_MAX_LABELS + 1];
	int n = 0;
	for (int l = 0; l < c->sig.n_labels; l++)
		for (int k = 0; k < la->n[l]; k++)
			if (mask & (1u << la->axis[l][k])) {
				buf[n++] = c->sig.name[l];
				break;
			}
	buf[n] = '\0';
	return arena_strdup(c->a, buf);
}

/* Vocabulary-parallel cross-entropy (seed 003): the per-row max, sum of
 * exponentials and target logit, fp32 [N_local] each, all-reduced over the
 * ranks sharing the class label's cut. */
static bool vocab_ce_comm(const struct op_ctx *c, const struct label_axes *la,
                          struct dist_op *d)
{
	int v = c->sig.in[0][1];
	uint32_t mask = 0;
	for (int k = 0; k < la->n[v]; k++)
		if (d->dm.size[la->axis[v][k]] > 1)
			mask |= 1u << la->axis[v][k];
	if (!mask)
		return true;
	double bytes = (double)layout_local_elems(&d->out[0]) * (double)dtype_bytes(DT_FP32);
	static const char *const why[3] = {
		"global row maximum of the logits over the cut class dimension",
		"sum of exponentials over the cut class dimension",
		"target logit, held by the rank whose classes contain it",
	};
	static const enum reduce_op red[3] = {REDUCE_MAX, REDUCE_SUM, REDUCE_SUM};
	struct comm_step st[3];
	for (int k = 0; k < 3; k++)
		if (!allreduce(c->a, &d->dm, mask, bytes, red[k], &d->out[0], why[k], &st[k]))
			return false;
	return add_comm(c->a, d, st, 3);
}

/* Partial sums of output k completed by an AllReduce. */
static bool partial_comm(const struct op_ctx *c, const struct label_axes *la,
                         struct dist_op *d, int k)
{
	uint32_t m = d->out_partial[k].partial;
	if (!m)
		return true;
	const char *why = arena_printf(c->a, "partial sums over the cut summed dimension %s",
	                               cut_labels(c, la, m));
	struct comm_step st;
	return why &&
	       allreduce(c->a, &d->dm, m, layout_local_bytes(&d->out_partial[k]), REDUCE_SUM,
	                 &d->out[k], why, &st) &&
	       add_comm(c->a, d, &st, 1);
}

/* Gradient AllReduce of each parameter over the ranks holding its slice. */
static bool grad_comm(const struct op_ctx *c, struct dist_op *d)
{
	int n = 0;
	for (int i = 0; i < d->n_in; i++)
		n += in_tensor(c, i)->role == TENSOR_PARAM && layout_replica_axes(&d->in[i]);
	if (!n)
		return true;  /* nothing to synchronise: most ops, and most candidates */
	d->grad = arena_calloc(c->a, (size_t)n, sizeof(*d->grad));
	if (!d->grad)
		return false;
	for (int i = 0; i < d->n_in; i++) {
		const struct tensor *t = in_tensor(c, i);
		uint32_t m = layout_replica_axes(&d->in[i]);
		if (t->role != TENSOR_PARAM || !m)
			continue;
		const char *why = arena_printf(c->a, "gradient of %s, replicated on the ranks of each group",
		                               t->name);
		if (!why || !allreduce(c->a, &d->dm, m, layout_local_bytes(&d->in[i]), REDUCE_SUM,
		                       &d->in[i], why, &d->grad[d->n_grad++]))
			return false;
	}
	return true;
}

static double local_bytes_all(const struct dist_op *d)
{
	double b = 0;
	for (int i = 0; i < d->n_in; i++)
		b += layout_local_bytes(&d->in[i]);
	for (int k = 0; k < d->n_out; k++)
		b += layout_local_bytes(&d->out[k]);
	return b;
}

/* Devices that do distinct work: the product of the axes the labels use. */
static int64_t used_devices(const struct op_ctx *c, const struct devmat *dm,
                            const struct label_axes *la)
{
	uint32_t used = 0;
	for (int l = 0; l < c->sig.n_labels; l++)
		for (int k = 0; k < la->n[l]; k++)
			used |= 1u << la->axis[l][k];
	int64_t p = 1;
	for (int a = 0; a < dm->n; a++)
		if (used & (1u << a))
			p *= dm->size[a];
	return p;
}

/* Everything that follows from the device matrix and the label axes. */
static bool build(const struct op_ctx *c, const struct devmat *dm, const struct label_axes *la,
                  struct dist_op *d)
{
	const struct op *o = c->o;
	d->op = c->op;
	d->from_op = -1;
	d->dm = *dm;
	d->n_in = o->n_in;
	d->n_out = o->n_out;
	d->cuts = arena_calloc(c->a, (size_t)o->n_in, sizeof(*d->cuts));
	d->in = arena_calloc(c->a, (size_t)o->n_in, sizeof(*d->in));
	d->out_partial = arena_calloc(c->a, (size_t)o->n_out, sizeof(*d->out_partial));
	d->out = arena_calloc(c->a, (size_t)o->n_out, sizeof(*d->out));
	if (!d->cuts || !d->in || !d->out_partial || !d->out)
		return false;
	for (int i = 0; i < o->n_in; i++) {
		map_layout(&d->in[i], dm, in_tensor(c, i), c->sig.in[i], la);
		for (int k = 0; k < d->in[i].rank; k++)
			d->cuts[i][k] = layout_slices(&d->in[i], k);
	}
	uint32_t partial = 0;
	for (int l = 0; l < c->sig.n_labels; l++)
		for (int k = 0; k < la->n[l]; k++)
			if (c->sig.role[l] == SIG_SUM && dm->size[la->axis[l][k]] > 1)
				partial |= 1u << la->axis[l][k];
	bool ce = c->sig.rule == SIG_RULE_VOCAB_CE;
	for (int k = 0; k < o->n_out; k++) {
		map_layout(&d->out_partial[k], dm, out_tensor(c, k), c->sig.out[k], la);
		d->out_partial[k].partial = ce ? 0 : partial;
		d->out[k] = d->out_partial[k];
		d->out[k].partial = 0;
	}
	d->flops_per_rank = o->flops / (double)used_devices(c, dm, la);
	d->bytes_per_rank = o->bytes_read + o->bytes_written > 0 ? local_bytes_all(d) : 0;
	return grad_comm(c, d);
}

/* The forward communication of output k when the op hands on
 * out_partial completed. */
static bool own_comm(const struct op_ctx *c, const struct label_axes *la, struct dist_op *d,
                     int k)
{
	if (c->sig.rule == SIG_RULE_VOCAB_CE)
		return vocab_ce_comm(c, la, d);
	return partial_comm(c, la, d, k);
}

static bool all_own_comm(const struct op_ctx *c, const struct label_axes *la, struct dist_op *d)
{
	for (int k = 0; k < d->n_out; k++)
		if (!own_comm(c, la, d, k))
			return false;
	return true;
}

static bool from_label_axes(const struct op_ctx *c, const struct devmat *dm,
                            struct label_axes *la, struct dist_op *out)
{
	memset(out, 0, sizeof(*out));
	if (c->sig.rule == SIG_RULE_RESHAPE && !reshape_rule(c, dm, la, false))
		return false;
	/* The local reshape of a slice cut only on major dims of its runs is
	 * the plain reshape of the slice: no Reshape step is needed. */
	if (!build(c, dm, la, out) || !all_own_comm(c, la, out)) {
		op_fail(c, "out of memory");
		return false;
	}
	return true;
}

static bool cuts_op(const struct op_ctx *c, const int64_t (*cuts)[GRAPH_MAX_RANK],
                    int64_t n_devices, struct dist_op *out)
{
	int64_t cut[SIG_MAX_LABELS];
	struct devmat dm;
	struct label_axes la;
	if (!check_cuts(c, cuts, cut) || !cuts_devmat(c, cut, n_devices, &dm, &la))
		return false;
	return from_label_axes(c, &dm, &la, out);
}

bool dist_op_cuts_valid(const struct graph *g, int op, const int64_t (*cuts)[GRAPH_MAX_RANK],
                        int64_t n_devices)
{
	struct op_ctx c;
	int64_t cut[SIG_MAX_LABELS];
	struct devmat dm;
	struct label_axes la;
	SL_ASSERT(n_devices >= 1);
	/* cuts_op's checks, without building the op (nor saying why not) */
	return init_ctx(&c, NULL, g, op, NULL) && check_cuts(&c, cuts, cut) &&
	       cuts_devmat(&c, cut, n_devices, &dm, &la) &&
	       (c.sig.rule != SIG_RULE_RESHAPE || reshape_rule(&c, &dm, &la, false));
}

bool dist_op_from_cuts(struct arena *a, const struct graph *g, int op,
                       const int64_t (*cuts)[GRAPH_MAX_RANK], int64_t n_devices,
                       struct dist_op *out, struct diag_list *diags)
{
	struct op_ctx c;
	SL_ASSERT(n_devices >= 1);
	if (!init_ctx(&c, a, g, op, diags))
		return false;
	return cuts_op(&c, cuts, n_devices, out);
}

/* ------------------------------------------------------ the Layout form */

static const char *axes_str(const struct op_ctx *c, const struct shard_config *cfg,
                            const int *axes, int n)
{
	char buf[300];
	size_t o = 0;
	buf[0] = '\0';
	o += (size_t)snprintf(buf, sizeof buf, n == 1 ? "" : "(");
	for (int k = 0; k < n && o < sizeof buf; k++)
		o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", k ? ", " : "",
		                      cfg->axis_names[axes[k]] ? cfg->axis_names[axes[k]] : "?");
	if (n != 1 && o < sizeof buf)
		snprintf(buf + o, sizeof buf - o, n ? ")" : "None)");
	return arena_strdup(c->a, n ? buf : "None");
}

/* Each label takes the axes of the first input dimension carrying it;
 * every other dimension carrying it must name the same axes. */
static bool layout_label_axes(const struct op_ctx *c, const struct shard_config *cfg,
                              const struct devmat *dm, struct label_axes *la)
{
	int first[SIG_MAX_LABELS], first_d[SIG_MAX_LABELS];
	bool seen[SIG_MAX_LABELS] = {false}, ok = true;
	memset(la, 0, sizeof(*la));
	for (int i = 0; i < c->o->n_in; i++) {
		const struct tensor *t = in_tensor(c, i);
		const struct shard_tensor_map *m = &cfg->in_maps[i];
		for (int d = 0; d < t->rank && d < m->rank; d++) {
			int l = c->sig.in[i][d], n = m->n_axes[d];
			int8_t ax[PLAN_MAX_AXES];
			for (int k = 0; k < n; k++)
				ax[k] = (int8_t)m->axes[d][k];
			int64_t s = axes_slices(dm, ax, n);
			if ((l < 0 || c->sig.role[l] == SIG_WHOLE) && s > 1) {
				op_fail(c, "dimension %d of input %d (%s) must stay whole on each device (%s), "
				        "but it is mapped to %s", d, i, t->name,
				        l < 0 ? "a broadcast dimension" : whole_verb(c->o->kind),
				        axes_str(c, cfg, m->axes[d], n));
				ok = false;
			} else if (l >= 0 && !seen[l]) {
				seen[l] = true;
				first[l] = i;
				first_d[l] = d;
				la->n[l] = n;
				memcpy(la->axis[l], ax, (size_t)n);
			} else if (l >= 0 && (la->n[l] != n || memcmp(la->axis[l], ax, (size_t)n))) {
				const struct shard_tensor_map *f = &cfg->in_maps[first[l]];
				op_fail(c, "dimension %c is mapped to %s in input %d (%s) but to %s in input %d "
				        "(%s)", c->sig.name[l],
				        axes_str(c, cfg, f->axes[first_d[l]], f->n_axes[first_d[l]]),
				        first[l], in_tensor(c, first[l])->name, axes_str(c, cfg, m->axes[d], n),
				        i, t->name);
				ok = false;
			}
		}
	}
	return ok;
}

/* Two labels on one axis would split one tensor twice over it. */
static bool axes_distinct(const struct op_ctx *c, const struct shard_config *cfg,
                          const struct label_axes *la)
{
	int owner[PLAN_MAX_AXES];
	for (int a = 0; a < PLAN_MAX_AXES; a++)
		owner[a] = -1;
	for (int l = 0; l < c->sig.n_labels; l++)
		for (int k = 0; k < la->n[l]; k++) {
			int a = la->axis[l][k];
			if (owner[a] >= 0 && owner[a] != l) {
				op_fail(c, "device axis %s splits both dimension %c and dimension %c",
				        cfg->axis_names[a] ? cfg->axis_names[a] : "?", c->sig.name[owner[a]],
				        c->sig.name[l]);
				return false;
			}
			owner[a] = l;
		}
	return true;
}

/* The user's out layout of output k, when given. */
static bool want_layout(const struct op_ctx *c, const struct shard_config *cfg,
                        const struct dist_op *d, int k, struct layout *want)
{
	const struct shard_tensor_map *m = &cfg->out_maps[k];
	layout_init(want, &d->dm, out_tensor(c, k));
	for (int dd = 0; dd < want->rank && dd < m->rank; dd++) {
		want->n_map[dd] = m->n_axes[dd];
		for (int j = 0; j < m->n_axes[dd]; j++)
			want->map[dd][j] = (int8_t)m->axes[dd][j];
	}
	if (!layout_valid(want)) {
		op_fail(c, "the layout of output %d does not fit it (an axis used twice, or slices "
		        "that do not divide a dimension)", k);
		return false;
	}
	return true;
}

/* Output k handed on in the user's out layout: where it differs from what
 * the op computes, the redistribution to it replaces the op's AllReduce
 * (a ReduceScatter where the user wants the result split). */
static bool out_to_config(const struct op_ctx *c, const struct shard_config *cfg,
                          const struct label_axes *la, struct dist_op *d, int k)
{
	struct layout want;
	if (!want_layout(c, cfg, d, k, &want))
		return false;
	if (layout_same_placement(&want, &d->out[k]))
		return own_comm(c, la, d, k);
	const struct layout *src = &d->out_partial[k];
	if (c->sig.rule == SIG_RULE_VOCAB_CE) {
		if (!own_comm(c, la, d, k))
			return false;
		src = &d->out[k];
	}
	struct redist r;
	if (!redist_derive(c->a, src, &want, &r, c->diags))
		return false;
	d->out[k] = want;
	return add_comm(c->a, d, r.steps, r.n_steps);
}

static bool layout_op(const struct op_ctx *c, const struct shard_config *cfg, int64_t n_devices,
                      struct dist_op *out)
{
	struct devmat dm;
	struct label_axes la;
	if (!devmat_init(&dm, cfg->n_dev_axes, cfg->device_matrix, cfg->axis_names, 0) ||
	    dm.n_devices != n_devices) {
		op_fail(c, "the device matrix has %lld devices, the op has %lld",
		        (long long)dm.n_devices, (long long)n_devices);
		return false;
	}
	if (!layout_label_axes(c, cfg, &dm, &la) || !axes_distinct(c, cfg, &la))
		return false;
	memset(out, 0, sizeof(*out));
	if (c->sig.rule == SIG_RULE_RESHAPE && !reshape_rule(c, &dm, &la, true))
		return false;
	if (!build(c, &dm, &la, out)) {
		op_fail(c, "out of memory");
		return false;
	}
	for (int k = 0; k < out->n_out; k++) {
		bool ok = k < cfg->n_out ? out_to_config(c, cfg, &la, out, k) : own_comm(c, &la, out, k);
		if (!ok)
			return false;
	}
	return true;
}

bool dist_op_from_config(struct arena *a, const struct graph *g, int op,
                         const struct shard_config *cfg, int64_t n_devices,
                         struct dist_op *out, struct diag_list *diags)
{
	struct op_ctx c;
	SL_ASSERT(n_devices >= 1);
	if (!init_ctx(&c, a, g, op, diags))
		return false;
	c.file = cfg->file;
	c.line = cfg->line;
	c.path = cfg->path;
	if (cfg->n_in != c.o->n_in) {
		op_fail(&c, "the strategy has %d inputs, the op %d", cfg->n_in, c.o->n_in);
		return false;
	}
	const int64_t(*cuts)[GRAPH_MAX_RANK] = (const int64_t(*)[GRAPH_MAX_RANK])cfg->cuts;
	bool ok = cfg->form == SHARD_TUPLE ? cuts_op(&c, cuts, n_devices, out)
	                                   : layout_op(&c, cfg, n_devices, out);
	out->source = STRATEGY_CONFIGURED;
	return ok;
}

/* ------------------------------------------------------- data parallel */

bool dist_op_data_parallel(struct arena *a, const struct graph *g, int op, int64_t n_devices,
                           struct dist_op *out, struct diag_list *diags)
{
	struct op_ctx c;
	SL_ASSERT(n_devices >= 1);
	if (!init_ctx(&c, a, g, op, diags))
		return false;
	int64_t(*cuts)[GRAPH_MAX_RANK] = arena_calloc(a, (size_t)c.o->n_in + 1, sizeof(*cuts));
	if (!cuts)
		return false;
	for (int i = 0; i < c.o->n_in; i++)
		for (int d = 0; d < GRAPH_MAX_RANK; d++)
			cuts[i][d] = 1;
	/* The batch label: dim 0 of the first input that is not a parameter. */
	int batch = -1;
	for (int i = 0; i < c.o->n_in && batch < 0; i++) {
		const struct tensor *t = in_tensor(&c, i);
		if (t->role == TENSOR_PARAM)
			continue;
		int l = t->rank ? c.sig.in[i][0] : -1;
		if (l >= 0 && c.sig.role[l] == SIG_KEEP && c.sig.size[l] % n_devices == 0)
			batch = l;
		break;
	}
	for (int i = 0; i < c.o->n_in && batch >= 0; i++)
		for (int d = 0; d < in_tensor(&c, i)->rank; d++)
			if (c.sig.in[i][d] == batch)
				cuts[i][d] = n_devices;
	/* A cut the op refuses (a Reshape that cannot carry it): replicate. */
	struct diag_list quiet;
	diag_list_init(&quiet);
	c.diags = &quiet;
	bool ok = batch >= 0 && cuts_op(&c, (const int64_t(*)[GRAPH_MAX_RANK])cuts, n_devices,
	                                out);
	diag_list_free(&quiet);
	c.diags = diags;
	if (!ok) {
		for (int i = 0; i < c.o->n_in; i++)
			for (int d = 0; d < GRAPH_MAX_RANK; d++)
				cuts[i][d] = 1;
		ok = cuts_op(&c, (const int64_t(*)[GRAPH_MAX_RANK])cuts, n_devices, out);
	}
	out->source = STRATEGY_DEFAULT;
	return ok;
}
