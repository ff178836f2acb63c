/* propagate.c — sharding propagation (MindSpore "sharding_propagation",
 * seed 000; docs/planner.md, "Sharding propagation").
 *
 * Configured ops keep their shard() strategy. From them, breadth first
 * over both directions of the data edges, every unconfigured op takes the
 * candidate strategy (enumerate.c) with the least redistribution bytes per
 * device over its edges to the ops already decided (redist_cache.c); ties go
 * to less computation per rank, then fewer bytes per rank, then less
 * communication of its own (forward and gradient), then enumeration order.
 * A parameter read by several ops is placed the same way by all of them
 * where a candidate allows it. Ops the search never reaches are data
 * parallel. The edges of the result are derived as for plan_configured,
 * so the mode (compatible or fused) only changes those.
 *
 * Units: bytes per device and FLOPs per rank (double). Hot path: pricing
 * candidates, once per candidate and decided neighbour; a candidate's
 * layouts are derived directly from its cuts (no dist_op), full dist_ops
 * are built only for the candidates tied at the least edge cost; an op
 * alike an op decided before, among neighbours laid out alike, takes that
 * decision without pricing anything ("remembered decisions" below).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner-int.h"

/* A use of a tensor: op `op` reads it as input `in`. */
struct use {
	int op, in;
};

/* An edge of the op being decided to a decided neighbour: its input `idx`
 * from the producer's layout, or its output `idx` to a consumer's. */
struct nbr_edge {
	bool output;
	int idx;
	const struct layout *other;
};

struct prop {
	struct arena *a;
	const struct graph *g;
	struct plan *p;
	struct redist_cache *cache;
	struct diag_list *diags;
	int64_t n_devices;
	bool all_devices;
	bool *decided, *waiting;
	int *reached_from;                 /* the op that first reached a waiting op */
	int *queue, q_head, q_tail;        /* decided ops, in order of decision */
	int *wait, n_wait, wait_head;      /* ops waiting for producers, in order of arrival */
	int *use_start;                    /* consumers of tensor t: uses[use_start[t] .. [t+1]) */
	struct use *uses;
	const struct layout **param_layout; /* by tensor: the first decided reader's layout */
	struct decisions *memo;            /* decisions remembered (NULL: none) */
};

/* -------------------------------------------------------------- graph */

static bool index_uses(struct prop *P)
{
	const struct graph *g = P->g;
	P->use_start = arena_calloc(P->a, (size_t)g->n_tensors + 1, sizeof(int));
	if (!P->use_start)
		return false;
	int n = 0;
	for (int o = 0; o < g->n_ops; o++)
		for (int j = 0; j < g->ops[o].n_in; j++, n++)
			P->use_start[g->ops[o].in[j] + 1]++;
	for (int t = 0; t < g->n_tensors; t++)
		P->use_start[t + 1] += P->use_start[t];
	P->uses = arena_calloc(P->a, (size_t)n + 1, sizeof(*P->uses));
	int *fill = arena_calloc(P->a, (size_t)g->n_tensors + 1, sizeof(int));
	if (!P->uses || !fill)
		return false;
	/* Ops in order, so each tensor's consumers are in op order. */
	for (int o = 0; o < g->n_ops; o++)
		for (int j = 0; j < g->ops[o].n_in; j++) {
			int t = g->ops[o].in[j];
			P->uses[P->use_start[t] + fill[t]++] = (struct use){o, j};
		}
	return true;
}

static bool producers_decided(const struct prop *P, int v)
{
	const struct op *o = &P->g->ops[v];
	for (int j = 0; j < o->n_in; j++) {
		int prod = P->g->tensors[o->in[j]].producer;
		if (prod >= 0 && !P->decided[prod])
			return false;
	}
	return true;
}

/* The edges of v to decided neighbours: inputs in order, then each
 * output's consumers in op order. */
static int decided_edges(const struct prop *P, int v, struct arena *a, struct nbr_edge **out)
{
	const struct graph *g = P->g;
	const struct op *o = &g->ops[v];
	int n = o->n_in;
	for (int k = 0; k < o->n_out; k++)
		n += P->use_start[o->out[k] + 1] - P->use_start[o->out[k]];
	struct nbr_edge *e = arena_calloc(a, (size_t)n + 1, sizeof(*e));
	if (!e)
		return -1;
	int m = 0;
	for (int j = 0; j < o->n_in; j++) {
		int t = o->in[j], prod = g->tensors[t].producer;
		if (prod >= 0 && P->decided[prod])
			e[m++] = (struct nbr_edge){false, j,
			                           &P->p->ops[prod].out[plan_output_index(&g->ops[prod], t)]};
	}
	for (int k = 0; k < o->n_out; k++) {
		int t = o->out[k];
		for (int u = P->use_start[t]; u < P->use_start[t + 1]; u++)
			if (P->decided[P->uses[u].op])
				e[m++] = (struct nbr_edge){true, k, &P->p->ops[P->uses[u].op].in[P->uses[u].in]};
	}
	*out = e;
	return m;
}

/* ------------------------------------------------ candidate layouts */

/* What a candidate's layouts need from the signature: as distop.c builds
 * the tuple form, one device axis per input label in order of first
 * appearance, a repeat axis first when the cuts use fewer devices. */
struct cand_ctx {
	const struct graph *g;
	int op;
	struct op_sig sig;
	bool full;                         /* the signature has a rule: ask distop */
	int n_order;
	int first_in[SIG_MAX_LABELS], first_dim[SIG_MAX_LABELS];
	int pos[SIG_MAX_LABELS];           /* axis of each label past the repeat axis; -1 none */
	int64_t n_devices;
	struct arena *scratch;
};

static bool cand_init(struct cand_ctx *c, const struct prop *P, int v, struct arena *scratch)
{
	memset(c, 0, sizeof(*c));
	c->g = P->g;
	c->op = v;
	c->n_devices = P->n_devices;
	c->scratch = scratch;
	if (!graph_op_signature(P->g, v, &c->sig))
		return false;
	c->full = c->sig.rule != SIG_RULE_NONE;
	for (int l = 0; l < SIG_MAX_LABELS; l++)
		c->pos[l] = -1;
	for (int i = 0; i < c->sig.n_in; i++)
		for (int d = 0; d < c->sig.in_rank[i]; d++) {
			int l = c->sig.in[i][d];
			if (l < 0 || c->pos[l] >= 0)
				continue;
			c->first_in[c->n_order] = i;
			c->first_dim[c->n_order] = d;
			c->pos[l] = c->n_order++;
		}
	return true;
}

/* The layouts of a candidate: every input and output (outputs as handed
 * on, partial sums completed). */
struct cand_layouts {
	struct layout in[SIG_MAX_TENSORS], out[SIG_MAX_TENSORS];
	double flops_per_rank, bytes_per_rank;   /* as distop computes them */
};

static void label_layout(const struct cand_ctx *c, struct layout *l, const struct devmat *dm,
                         int t, const int8_t *labels, int rep)
{
	layout_init(l, dm, &c->g->tensors[t]);
	for (int d = 0; d < l->rank; d++) {
		int lb = labels[d];
		if (lb < 0 || c->pos[lb] < 0)
			continue;
		l->n_map[d] = 1;
		l->map[d][0] = (int8_t)(rep + c->pos[lb]);
	}
}

static bool cand_full(const struct cand_ctx *c, const struct strategy *st, struct cand_layouts *L)
{
	const struct op *o = &c->g->ops[c->op];
	struct diag_list quiet;
	diag_list_init(&quiet);
	struct dist_op d;
	bool ok = dist_op_from_cuts(c->scratch, c->g, c->op,
	                            (const int64_t(*)[GRAPH_MAX_RANK])st->cuts, c->n_devices, &d,
	                            &quiet);
	diag_list_free(&quiet);
	if (!ok)
		return false;
	memcpy(L->in, d.in, (size_t)o->n_in * sizeof(*d.in));
	memcpy(L->out, d.out, (size_t)o->n_out * sizeof(*d.out));
	L->flops_per_rank = d.flops_per_rank;
	L->bytes_per_rank = d.bytes_per_rank;
	return true;
}

static bool cand_layouts(const struct cand_ctx *c, const struct strategy *st,
                         struct cand_layouts *L)
{
	if (c->full)
		return cand_full(c, st, L);
	const struct op *o = &c->g->ops[c->op];
	int64_t sizes[PLAN_MAX_AXES], p = 1;
	int rep;
	for (int k = 0; k < c->n_order; k++)
		p *= st->cuts[c->first_in[k]][c->first_dim[k]];
	rep = c->n_devices > p;
	if (c->n_order + rep > PLAN_MAX_AXES)
		return cand_full(c, st, L);
	sizes[0] = c->n_devices / p;
	for (int k = 0; k < c->n_order; k++)
		sizes[rep + k] = st->cuts[c->first_in[k]][c->first_dim[k]];
	struct devmat dm;
	if (!devmat_init(&dm, c->n_order + rep, sizes, NULL, 0))
		return false;
	for (int i = 0; i < o->n_in; i++)
		label_layout(c, &L->in[i], &dm, o->in[i], c->sig.in[i], rep);
	for (int k = 0; k < o->n_out; k++)
		label_layout(c, &L->out[k], &dm, o->out[k], c->sig.out[k], rep);
	/* FLOPs split over the devices doing distinct work; bytes are the
	 * local slices read and written (none for an op that moves nothing). */
	L->flops_per_rank = o->flops / (double)p;
	L->bytes_per_rank = 0;
	for (int i = 0; i < o->n_in && o->bytes_read + o->bytes_written > 0; i++)
		L->bytes_per_rank += layout_local_bytes(&L->in[i]);
	for (int k = 0; k < o->n_out && o->bytes_read + o->bytes_written > 0; k++)
		L->bytes_per_rank += layout_local_bytes(&L->out[k]);
	return true;
}

/* ------------------------------------------------------------ choice */

/* Equal up to rounding: the costs are sums of products of rationals. */
static bool same_cost(double x, double y)
{
	if (isinf(x) || isinf(y))
		return x == y;
	return fabs(x - y) <= 1e-9 * fmax(1.0, fmax(fabs(x), fabs(y)));
}

/* Is turning src into dst free: only StridedSlices? Over the common
 * refinement of the two device matrices a redistribution only ever
 * appends axes at the minor end of a dimension's list with a slice, and
 * every other step (AllGather, AllToAll, AllReduce, ReduceScatter) sends
 * bytes; so it is free exactly when src holds no partial sums and each of
 * its dimensions' axis lists is a prefix of dst's. Without a common
 * refinement only the same placement is free. */
static bool free_edge(const struct layout *src, const struct layout *dst)
{
	struct layout rs, rd;
	if (!layout_refine(src, dst, &rs, &rd))
		return layout_same_placement(src, dst);
	if (rs.partial)
		return false;
	for (int d = 0; d < rs.rank; d++) {
		if (rs.n_map[d] > rd.n_map[d] ||
		    memcmp(rs.map[d], rd.map[d], (size_t)rs.n_map[d] * sizeof(rs.map[d][0])))
			return false;
	}
	return true;
}

static bool all_free(const struct cand_layouts *L, const struct nbr_edge *e, int n)
{
	for (int i = 0; i < n; i++) {
		bool ok = e[i].output ? free_edge(&L->out[e[i].idx], e[i].other)
		                      : free_edge(e[i].other, &L->in[e[i].idx]);
		if (!ok)
			return false;
	}
	return true;
}

static double edge_cost(const struct prop *P, const struct cand_layouts *L,
                        const struct nbr_edge *e, int n)
{
	double sum = 0;
	for (int i = 0; i < n; i++) {
		double b = e[i].output ? redist_cache_bytes(P->cache, &L->out[e[i].idx], e[i].other)
		                       : redist_cache_bytes(P->cache, e[i].other, &L->in[e[i].idx]);
		sum += b < 0 ? HUGE_VAL : b;
	}
	return sum;
}

/* Does the candidate place every parameter as its first decided reader? */
static bool params_agree(const struct prop *P, int v, const struct cand_layouts *L)
{
	const struct op *o = &P->g->ops[v];
	for (int j = 0; j < o->n_in; j++) {
		const struct layout *want = P->param_layout[o->in[j]];
		if (want && !layout_same_placement(want, &L->in[j]))
			return false;
	}
	return true;
}

static bool has_shared_param(const struct prop *P, int v)
{
	const struct op *o = &P->g->ops[v];
	for (int j = 0; j < o->n_in; j++)
		if (P->param_layout[o->in[j]])
			return true;
	return false;
}

static double own_comm_bytes(const struct dist_op *d)
{
	double b = 0;
	for (int i = 0; i < d->n_comm; i++)
		b += d->comm[i].bytes_per_device;
	for (int i = 0; i < d->n_grad; i++)
		b += d->grad[i].bytes_per_device;
	return b;
}

/* Keeps, of the n indices in set, those whose value is least (up to
 * rounding); returns how many, in their order. */
static int keep_least(int *set, int n, const double *value)
{
	double least = HUGE_VAL;
	for (int i = 0; i < n; i++)
		if (i == 0 || (value[set[i]] < least && !same_cost(value[set[i]], least)))
			least = value[set[i]];
	int m = 0;
	for (int i = 0; i < n; i++)
		if (same_cost(value[set[i]], least))
			set[m++] = set[i];
	return m;
}

/* Own communication (forward and gradient) of each remaining candidate,
 * from full distributed ops: the only tie-break that needs one. */
static bool own_comm_of(const struct prop *P, int v, const struct strategy *cand, const int *set,
                        int n, struct arena *scratch, double *own)
{
	struct diag_list quiet;
	diag_list_init(&quiet);
	bool ok = true;
	for (int i = 0; i < n && ok; i++) {
		struct dist_op d;
		ok = dist_op_from_cuts(scratch, P->g, v,
		                       (const int64_t(*)[GRAPH_MAX_RANK])cand[set[i]].cuts,
		                       P->n_devices, &d, &quiet);
		own[set[i]] = ok ? own_comm_bytes(&d) : HUGE_VAL;
	}
	diag_list_free(&quiet);
	return ok;
}

/* Per-candidate figures of merit, indexed like the candidates. */
struct merit {
	double *cost, *flops, *bytes, *own;
	bool *agree;
	int *set;
};

static bool merit_alloc(struct arena *a, int n, struct merit *m)
{
	m->cost = arena_alloc(a, (size_t)n * sizeof(double));
	m->flops = arena_alloc(a, (size_t)n * sizeof(double));
	m->bytes = arena_alloc(a, (size_t)n * sizeof(double));
	m->own = arena_alloc(a, (size_t)n * sizeof(double));
	m->agree = arena_alloc(a, (size_t)n * sizeof(bool));
	m->set = arena_alloc(a, (size_t)n * sizeof(int));
	return m->cost && m->flops && m->bytes && m->own && m->agree && m->set;
}

/* Prices every candidate; fills the choice and returns the winner's index
 * (-1 when no candidate could be built). The least edge cost first, then
 * less FLOPs per rank, fewer bytes per rank, less own communication, and
 * the first in enumeration order. */
static int choose(struct prop *P, int v, const struct strategy *cand, int n,
                  struct arena *scratch, struct plan_choice *ch)
{
	struct cand_ctx c;
	struct nbr_edge *e;
	struct merit m;
	int n_e = decided_edges(P, v, scratch, &e);
	struct cand_layouts *L = arena_alloc(scratch, sizeof(*L));
	if (n_e < 0 || !L || !merit_alloc(scratch, n, &m) || !cand_init(&c, P, v, scratch))
		return -1;
	bool shared = has_shared_param(P, v), any_agree = false, any_free = false;
	for (int i = 0; i < n; i++) {
		bool ok = cand_layouts(&c, &cand[i], L);
		m.flops[i] = ok ? L->flops_per_rank : HUGE_VAL;
		m.bytes[i] = ok ? L->bytes_per_rank : HUGE_VAL;
		m.agree[i] = ok && (!shared || params_agree(P, v, L));
		m.cost[i] = ok && all_free(L, e, n_e) ? 0 : HUGE_VAL;
		any_agree |= m.agree[i];
	}
	int k = 0;
	for (int i = 0; i < n; i++)
		if (m.agree[i] || !any_agree) {
			m.set[k++] = i;
			any_free |= m.cost[i] == 0;
		}
	/* No free candidate: price them all. */
	for (int j = 0; j < k && !any_free; j++)
		if (cand_layouts(&c, &cand[m.set[j]], L))
			m.cost[m.set[j]] = edge_cost(P, L, e, n_e);
	k = keep_least(m.set, k, m.cost);
	ch->n_candidates = n;
	ch->param_conflict = shared && !any_agree;
	ch->n_tied = k;
	ch->edge_bytes = m.cost[m.set[0]];
	k = keep_least(m.set, k, m.flops);
	k = keep_least(m.set, k, m.bytes);
	if (k > 1) {
		if (!own_comm_of(P, v, cand, m.set, k, scratch, m.own))
			return -1;
		k = keep_least(m.set, k, m.own);
	}
	return m.set[0];
}

/* What choose() derived for the winner without distop must be what
 * distop built: layouts, FLOPs and bytes per rank. */
static void check_layouts(const struct prop *P, int v, const struct strategy *st,
                          struct arena *scratch)
{
	struct cand_ctx c;
	struct cand_layouts *L = arena_alloc(scratch, sizeof(*L));
	if (!L || !cand_init(&c, P, v, scratch) || !cand_layouts(&c, st, L))
		return;
	const struct dist_op *d = &P->p->ops[v];
	for (int i = 0; i < d->n_in; i++)
		SL_ASSERT(layout_same_placement(&L->in[i], &d->in[i]));
	for (int k = 0; k < d->n_out; k++)
		SL_ASSERT(layout_same_placement(&L->out[k], &d->out[k]));
	SL_ASSERT(same_cost(L->flops_per_rank, d->flops_per_rank));
	SL_ASSERT(same_cost(L->bytes_per_rank, d->bytes_per_rank));
}

static void record_params(struct prop *P, int v)
{
	const struct op *o = &P->g->ops[v];
	for (int j = 0; j < o->n_in; j++) {
		int t = o->in[j];
		if (P->g->tensors[t].role == TENSOR_PARAM && !P->param_layout[t])
			P->param_layout[t] = &P->p->ops[v].in[j];
	}
}

static void mark_decided(struct prop *P, int v)
{
	P->decided[v] = true;
	P->queue[P->q_tail++] = v;
	record_params(P, v);
}

/* ------------------------------------------------ remembered decisions */

/* A transformer's layers repeat their ops, and an op of a later layer
 * meets decided neighbours laid out as its twin's were. choose() reads of
 * an op only its words (graph_op_key: kind, attributes, shapes, FLOPs),
 * the layouts of its decided neighbours on each edge, and the layouts its
 * shared parameters already have; so a decision is remembered under the
 * words of all three, and an op whose words are equal (compared whole,
 * never by hash alone) takes the twin's winner and figures. */
struct decision {
	int win;                           /* -1: no candidate */
	struct strategy st;
	struct plan_choice ch;
};

struct decisions {
	struct word_table *keys;           /* the words each decision was made under */
	struct decision *v;                /* indexed like the keys */
	size_t n, cap;
	struct word_buf buf;               /* the words of the op being decided */
};

static struct decisions *decisions_new(void)
{
	struct decisions *m = calloc(1, sizeof(*m));
	if (m)
		m->keys = word_table_new();
	if (m && !m->keys) {
		free(m);
		m = NULL;
	}
	return m;
}

static void decisions_free(struct decisions *m)
{
	if (m) {
		word_table_free(m->keys);
		free(m->v);
		word_buf_free(&m->buf);
		free(m);
	}
}

/* The words of op v's decision into m->buf; their count, 0 when the op's
 * own words do not fit a key or memory ran out (it is then decided
 * afresh). */
static size_t context_words(const struct prop *P, int v, struct arena *scratch)
{
	struct word_buf *b = &P->memo->buf;
	const struct op *o = &P->g->ops[v];
	struct nbr_edge *e;
	int n_e = decided_edges(P, v, scratch, &e);
	b->n = 0;
	int64_t *w = n_e >= 0 ? word_buf_room(b, GRAPH_OP_KEY_WORDS) : NULL;
	int k = w ? graph_op_key(P->g, v, w, GRAPH_OP_KEY_WORDS) : -1;
	if (k < 0 || k > GRAPH_OP_KEY_WORDS)
		return 0;
	b->n = (size_t)k;
	word_buf_add(b, n_e);
	for (int i = 0; i < n_e; i++) {
		word_buf_add(b, e[i].output);
		word_buf_add(b, e[i].idx);
		if ((w = word_buf_room(b, LAYOUT_KEY_WORDS)))
			b->n += (size_t)layout_key(e[i].other, w);
	}
	for (int j = 0; j < o->n_in; j++) {
		const struct layout *want = P->param_layout[o->in[j]];
		word_buf_add(b, want != NULL);
		if (want && (w = word_buf_room(b, LAYOUT_KEY_WORDS)))
			b->n += (size_t)layout_key(want, w);
	}
	if (b->oom) {
		b->oom = false; /* the next op may fit */
		return 0;
	}
	return b->n;
}

/* Remembers a decision under m->buf[0 .. n) (not when out of memory:
 * remembering only saves time). */
static void remember(struct decisions *m, size_t n, int win, const struct strategy *st,
                     const struct plan_choice *ch)
{
	if (m->n == m->cap) {  /* room for the decision before its key */
		size_t cap = m->cap ? 2 * m->cap : 256;
		struct decision *v = realloc(m->v, cap * sizeof(*v));
		if (!v)
			return;
		m->v = v;
		m->cap = cap;
	}
	int64_t i = word_table_add(m->keys, m->buf.w, n);
	if (i < 0)
		return;
	SL_ASSERT((size_t)i == m->n);  /* remembered only after a miss */
	m->v[m->n++] = (struct decision){win, st ? *st : (struct strategy){{{0}}}, *ch};
}

/* Decides unconfigured op v, reached from u. */
static bool decide(struct prop *P, int v, int u)
{
	struct arena *scratch = arena_new();
	struct plan_choice *ch = &P->p->choices[v];
	size_t nw = scratch && P->memo ? context_words(P, v, scratch) : 0;
	int64_t k = nw ? word_table_find(P->memo->keys, P->memo->buf.w, nw) : -1;
	struct strategy st;
	int win;
	if (k >= 0) {
		const struct decision *known = &P->memo->v[k];
		win = known->win;
		st = known->st;
		*ch = known->ch;
	} else {
		struct strategy *cand;
		int n = scratch ? plan_enumerate(scratch, P->g, v, P->n_devices, P->all_devices, &cand)
		                : 0;
		win = n ? choose(P, v, cand, n, scratch, ch) : -1;
		if (win >= 0)
			st = cand[win];
		else
			memset(ch, 0, sizeof(*ch));
		if (nw)
			remember(P->memo, nw, win, win >= 0 ? &st : NULL, ch);
	}
	bool ok;
	if (win >= 0) {
		ok = dist_op_from_cuts(P->a, P->g, v, (const int64_t(*)[GRAPH_MAX_RANK])st.cuts,
		                       P->n_devices, &P->p->ops[v], P->diags);
		P->p->ops[v].source = STRATEGY_PROPAGATED;
		P->p->ops[v].from_op = u;
		if (ok && k < 0)
			check_layouts(P, v, &st, scratch);
	} else {
		/* No candidate (a signature too large to hold): distop says why. */
		ok = dist_op_data_parallel(P->a, P->g, v, P->n_devices, &P->p->ops[v], P->diags);
	}
	arena_free(scratch);
	if (ok)
		mark_decided(P, v);
	return ok;
}

/* ------------------------------------------------------------ the BFS */

/* Neighbour v of decided op u: decided now, or (reached forward with
 * producers still undecided) put on the waiting list. */
static bool visit(struct prop *P, int v, int u, bool forward)
{
	if (P->decided[v])
		return true;
	if (forward && !producers_decided(P, v)) {
		if (!P->waiting[v]) {
			P->waiting[v] = true;
			P->reached_from[v] = u;
			P->wait[P->n_wait++] = v;
		}
		return true;
	}
	return decide(P, v, u);
}

static int cmp_int(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	return (a > b) - (a < b);
}

/* The neighbours of u: producers of its inputs in input order, then the
 * consumers of its outputs in op order. */
static bool expand(struct prop *P, int u, int *scratch_ops)
{
	const struct graph *g = P->g;
	const struct op *o = &g->ops[u];
	for (int j = 0; j < o->n_in; j++) {
		int prod = g->tensors[o->in[j]].producer;
		if (prod >= 0 && !visit(P, prod, u, false))
			return false;
	}
	int n = 0;
	for (int k = 0; k < o->n_out; k++)
		for (int i = P->use_start[o->out[k]]; i < P->use_start[o->out[k] + 1]; i++)
			scratch_ops[n++] = P->uses[i].op;
	qsort(scratch_ops, (size_t)n, sizeof(int), cmp_int);
	for (int i = 0; i < n; i++)
		if ((i == 0 || scratch_ops[i] != scratch_ops[i - 1]) && !visit(P, scratch_ops[i], u, true))
			return false;
	return true;
}

/* Breadth first from the queue; when it runs dry while ops still wait
 * for a producer no path reaches, the op that began waiting first is
 * decided from the neighbours decided so far, and the search goes on. */
static bool bfs(struct prop *P)
{
	int *ops = arena_calloc(P->a, (size_t)P->g->n_ops + 1, sizeof(int));
	if (!ops)
		return false;
	for (;;) {
		while (P->q_head < P->q_tail)
			if (!expand(P, P->queue[P->q_head++], ops))
				return false;
		while (P->wait_head < P->n_wait && P->decided[P->wait[P->wait_head]])
			P->wait_head++;
		if (P->wait_head == P->n_wait)
			return true;
		int v = P->wait[P->wait_head++];
		if (!decide(P, v, P->reached_from[v]))
			return false;
	}
}

/* ------------------------------------------------------------ the plan */

static bool prop_init(struct prop *P, struct arena *a, const struct scenario *s,
                      enum redist_mode mode, struct redist_cache *cache,
                      struct diag_list *diags)
{
	const struct graph *g = s->graph;
	size_t n = (size_t)g->n_ops + 1;
	memset(P, 0, sizeof(*P));
	P->a = a;
	P->g = g;
	P->cache = cache;
	P->diags = diags;
	P->n_devices = s->devices / s->training.pipeline_stages;
	P->all_devices = s->propagation.all_devices;
	P->p = arena_calloc(a, 1, sizeof(*P->p));
	P->decided = arena_calloc(a, n, sizeof(bool));
	P->waiting = arena_calloc(a, n, sizeof(bool));
	P->reached_from = arena_calloc(a, n, sizeof(int));
	P->queue = arena_calloc(a, n, sizeof(int));
	P->wait = arena_calloc(a, n, sizeof(int));
	P->param_layout = arena_calloc(a, (size_t)g->n_tensors + 1, sizeof(*P->param_layout));
	if (!P->p || !P->decided || !P->waiting || !P->reached_from || !P->queue || !P->wait ||
	    !P->param_layout || !index_uses(P))
		return false;
	struct plan *p = P->p;
	p->scenario = s;
	p->graph = g;
	p->mode = mode;
	p->n_devices = P->n_devices;
	p->ops = arena_calloc(a, n, sizeof(*p->ops));
	p->choices = arena_calloc(a, n, sizeof(*p->choices));
	return p->ops && p->choices;
}

/* Configured ops, in op order: decided first, the seeds of the search. */
static bool configure(struct prop *P, const struct scenario *s)
{
	size_t errors = P->diags->errors;
	for (int i = 0; i < P->g->n_ops; i++) {
		const struct shard_config *cfg = scenario_shard_for(s, i);
		if (cfg && dist_op_from_config(P->a, P->g, i, cfg, P->n_devices, &P->p->ops[i],
		                               P->diags))
			mark_decided(P, i);
	}
	return P->diags->errors == errors;
}

static bool default_unreached(struct prop *P)
{
	for (int i = 0; i < P->g->n_ops; i++) {
		if (P->decided[i])
			continue;
		if (!dist_op_data_parallel(P->a, P->g, i, P->n_devices, &P->p->ops[i], P->diags))
			return false;
		P->p->n_unreached++;
	}
	return true;
}

static struct plan *propagate(struct arena *a, const struct scenario *s, enum redist_mode mode,
                              struct redist_cache *cache, bool remember, struct diag_list *diags)
{
	struct prop P;
	bool ok = prop_init(&P, a, s, mode, cache, diags);
	if (ok && remember)
		P.memo = decisions_new();  /* without it every op is decided afresh */
	ok = ok && configure(&P, s) && bfs(&P) && default_unreached(&P) &&
	     plan_derive_edges(a, P.p, diags);
	decisions_free(P.memo);
	return ok ? P.p : NULL;
}

struct plan *plan_propagate_cache(struct arena *a, const struct scenario *s,
                                  enum redist_mode mode, struct redist_cache *cache,
                                  struct diag_list *diags)
{
	return propagate(a, s, mode, cache, true, diags);
}

struct plan *plan_propagate_fresh(struct arena *a, const struct scenario *s,
                                  enum redist_mode mode, struct redist_cache *cache,
                                  struct diag_list *diags)
{
	return propagate(a, s, mode, cache, false, diags);
}

struct plan *plan_propagate(struct arena *a, const struct scenario *s, enum redist_mode mode,
                            struct diag_list *diags)
{
	struct redist_cache *cache = redist_cache_new();
	if (!cache)
		return NULL;
	struct plan *p = plan_propagate_cache(a, s, mode, cache, diags);
	redist_cache_free(cache);
	return p;
}
