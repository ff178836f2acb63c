/* plan_comm.c — the collectives a plan implies, beyond each step's own:
 * the mirrors of forward steps in backward, the all-reduce of an input's
 * gradient over the axes an op cuts elsewhere (Megatron's "f") and which
 * of those fuse into one, the parameters each op is the first to read,
 * the gradient buckets of a pipeline chunk, and the attention cores that
 * selective recomputation redoes. The cost model prices these lists
 * (planner/cost/estimate.c) and the simulator's lowering emits them
 * (sim/lower.c), so the two agree by construction.
 *
 * Units: bytes (S of the formulas: the whole gathered tensor for
 * AllGather, the bytes a device holds before the step otherwise). Hot
 * path: the estimate lists an op's collectives once per op; nothing here
 * allocates except the per-plan tables (fused input gradients, first
 * readers, buckets).
 */
#include <stdlib.h>
#include <string.h>

#include "layout.h"

/* S of the formulas for a forward step: the whole gathered tensor for
 * AllGather, the bytes a device holds before the step otherwise. */
static double step_message(const struct comm_step *st)
{
	return st->kind == STEP_ALLGATHER ? layout_local_bytes(&st->after) : comm_step_bytes_in(st);
}

/* Does a collective of this kind over these groups move bytes? Slice and
 * Reshape are local, and groups of one rank have nobody to talk to. */
static bool moves_bytes(enum step_kind kind, const struct rank_groups *g)
{
	return g->size > 1 && kind != STEP_SLICE && kind != STEP_RESHAPE;
}

static void add_coll(struct plan_coll_sink *k, enum plan_coll_role role, enum step_kind kind,
                     const struct rank_groups *g, double bytes, int index)
{
	if (!moves_bytes(kind, g))
		return;
	struct plan_coll c = {role, kind, *g, bytes, index};
	k->add(k->ctx, &c);
}

void plan_colls_forward(const struct comm_step *steps, int n, struct plan_coll_sink *k)
{
	for (int i = 0; i < n; i++)
		add_coll(k, PCOLL_FORWARD, steps[i].kind, &steps[i].groups, step_message(&steps[i]), i);
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* The axes a slice of dimension `dim` adds, from `before` to `after`. */
static int slice_axes(const struct layout *before, const struct layout *after, int dim,
                      int axes[PLAN_MAX_AXES])
{
	int n = 0, dm_same = before->dm.n == after->dm.n &&
	                     !memcmp(before->dm.size, after->dm.size,
	                             (size_t)after->dm.n * sizeof(after->dm.size[0]));
	int64_t want = layout_slices(after, dim) / layout_slices(before, dim), got = 1;
	for (int k = after->n_map[dim] - 1; k >= 0 && got < want; k--) {
		int a = after->map[dim][k];
		bool old = false;
		for (int j = 0; dm_same && j < before->n_map[dim]; j++)
			old = old || before->map[dim][j] == a;
		if (old)
			continue;
		axes[n++] = a;
		got *= after->dm.size[a];
	}
	qsort(axes, (size_t)n, sizeof(axes[0]), cmp_int);
	return n;
}

/* The backward mirror of one forward step that went from `before`. */
static bool mirror(const struct comm_step *st, const struct layout *before, int index,
                   struct plan_coll_sink *k)
{
	switch (st->kind) {
	case STEP_ALLGATHER:
		add_coll(k, PCOLL_MIRROR, STEP_REDUCESCATTER, &st->groups,
		         layout_local_bytes(&st->after), index);
		return true;
	case STEP_REDUCESCATTER:
		add_coll(k, PCOLL_MIRROR, STEP_ALLGATHER, &st->groups, comm_step_bytes_in(st), index);
		return true;
	case STEP_ALLTOALL:
		add_coll(k, PCOLL_MIRROR, STEP_ALLTOALL, &st->groups, comm_step_bytes_in(st), index);
		return true;
	case STEP_SLICE: {
		int axes[PLAN_MAX_AXES], n = st->dim >= 0 ? slice_axes(before, &st->after, st->dim,
		                                                     axes) : 0;
		struct rank_groups g;
		if (n == 0)
			return true;
		if (!devmat_groups(&st->after.dm, axes, n, &g))
			return false;
		add_coll(k, PCOLL_MIRROR, STEP_ALLGATHER, &g, layout_local_bytes(before), index);
		return true;
	}
	default:
		return true;
	}
}

bool plan_colls_backward(const struct comm_step *steps, int n, const struct layout *start,
                         struct plan_coll_sink *k)
{
	bool ok = true;
	for (int i = n - 1; i >= 0; i--)
		ok = mirror(&steps[i], i > 0 ? &steps[i - 1].after : start, i, k) && ok;
	return ok;
}

/* Does a tensor carry a gradient? Integer tensors (indices, labels) do not. */
static bool has_gradient(const struct tensor *t)
{
	return t->dtype == DT_FP32 || t->dtype == DT_FP16 || t->dtype == DT_BF16;
}

/* Axes of size > 1 splitting any dimension of a layout, as a mask. */
static uint32_t map_axes(const struct layout *l)
{
	uint32_t m = 0;
	for (int d = 0; d < l->rank; d++)
		for (int k = 0; k < l->n_map[d]; k++)
			if (l->dm.size[l->map[d][k]] > 1)
				m |= 1u << l->map[d][k];
	return m;
}

/* The groups over which input i's gradient is partial (the axes the op's
 * tensors use and the input's own map does not): false when it is
 * complete, or is an integer or parameter input (no all-reduce). *ok is
 * cleared when the groups cannot be built. */
static uint32_t used_axes(const struct dist_op *d)
{
	uint32_t used = 0;
	for (int j = 0; j < d->n_in; j++)
		used |= map_axes(&d->in[j]);
	for (int j = 0; j < d->n_out; j++)
		used |= map_axes(&d->out_partial[j]);
	return used;
}

/* `used`: used_axes(d). */
static bool input_grad_groups(const struct graph *g, const struct dist_op *d, uint32_t used,
                              int i, struct rank_groups *rg, bool *ok)
{
	const struct tensor *t = &g->tensors[g->ops[d->op].in[i]];
	if (t->role == TENSOR_PARAM || !has_gradient(t))
		return false;
	uint32_t part = used & ~map_axes(&d->in[i]);
	if (!part)
		return false;
	int axes[PLAN_MAX_AXES], n = 0;
	for (int a = 0; a < d->dm.n; a++)
		if (part & (1u << a))
			axes[n++] = a;
	if (!devmat_groups(&d->dm, axes, n, rg)) {
		*ok = false;
		return false;
	}
	return true;
}

bool plan_colls_input_grads(const struct graph *g, const struct dist_op *d, uint32_t fused,
                            struct plan_coll_sink *k)
{
	bool ok = true;
	uint32_t used = used_axes(d);
	for (int i = 0; i < d->n_in; i++) {
		struct rank_groups rg;
		if (!(fused & (1u << i)) && input_grad_groups(g, d, used, i, &rg, &ok))
			add_coll(k, PCOLL_INPUT_GRAD, STEP_ALLREDUCE, &rg, layout_local_bytes(&d->in[i]), i);
	}
	return ok;
}

/* Do two descriptions split the same ranks into the same groups (members
 * in any order)? The same matrix and axes say so at once; else each rank's
 * group in x, in group_of[n_devices] (scratch), is checked against y. */
static bool same_partition(const struct rank_groups *x, const struct rank_groups *y,
                           int *group_of, int64_t n_scratch)
{
	if (x->n_groups != y->n_groups || x->size != y->size || x->dm.base != y->dm.base ||
	    x->dm.n_devices != y->dm.n_devices)
		return false;
	bool same_dm = x->dm.n == y->dm.n && x->n_axes == y->n_axes;
	for (int k = 0; same_dm && k < x->dm.n; k++)
		same_dm = x->dm.size[k] == y->dm.size[k];
	for (int k = 0; same_dm && k < x->n_axes; k++)
		same_dm = x->axes[k] == y->axes[k];
	if (same_dm)
		return true;
	if (x->dm.n_devices > n_scratch)
		return false;
	for (int64_t r = 0; r < x->dm.n_devices; r++)
		group_of[r] = -1;
	for (int gi = 0; gi < x->n_groups; gi++)
		for (int m = 0; m < x->size; m++)
			group_of[rank_groups_rank(x, gi, m) - x->dm.base] = gi;
	for (int gi = 0; gi < y->n_groups; gi++) {
		int want = group_of[rank_groups_rank(y, gi, 0) - y->dm.base];
		for (int m = 1; m < y->size; m++)
			if (want < 0 || group_of[rank_groups_rank(y, gi, m) - y->dm.base] != want)
				return false;
	}
	return true;
}

/* The first reader of a tensor whose gradient is partial: its groups and
 * its layout of the tensor. */
struct first_grad {
	struct rank_groups rg;
	const struct layout *in;
};

uint32_t *plan_fused_input_grads(struct arena *a, const struct plan *p)
{
	const struct graph *g = p->graph;
	uint32_t *mask = arena_calloc(a, (size_t)g->n_ops + 1, sizeof *mask);
	/* Per tensor, the first reader whose gradient is partial (at[t] in a
	 * pool that only such tensors use): a later reader that holds the same
	 * slices, partial over the same groups, adds its share to that one's
	 * before the single all-reduce (the backward reaches the first reader
	 * last). */
	int *at = arena_alloc(a, ((size_t)g->n_tensors + 1) * sizeof(int));
	int *scratch = arena_alloc(a, ((size_t)p->n_devices + 1) * sizeof(int));
	struct first_grad *pool = NULL;
	int n_pool = 0, cap = 0;
	if (!mask || !at || !scratch)
		return NULL;
	/* at[t]: -2 while t has one reader at most (nothing to share), then -1
	 * until a reader with a partial gradient is found. */
	for (int t = 0; t < g->n_tensors; t++)
		at[t] = -3;
	for (int op = 0; op < g->n_ops; op++)
		for (int i = 0; i < g->ops[op].n_in; i++)
			at[g->ops[op].in[i]] = at[g->ops[op].in[i]] == -3 ? -2 : -1;
	for (int op = 0; op < g->n_ops; op++) {
		uint32_t used = 0;
		bool shared = false;
		for (int i = 0; i < g->ops[op].n_in && i < 32; i++)
			shared = shared || at[g->ops[op].in[i]] != -2;
		if (shared)
			used = used_axes(&p->ops[op]);
		for (int i = 0; shared && i < g->ops[op].n_in && i < 32; i++) {
			int t = g->ops[op].in[i];
			struct rank_groups rg;
			bool ok = true;
			if (at[t] == -2 || !input_grad_groups(g, &p->ops[op], used, i, &rg, &ok))
				continue;
			if (at[t] < 0) {
				if (n_pool == cap) {
					int grown = cap ? 2 * cap : 16;
					pool = arena_grow(a, pool, (size_t)n_pool, (size_t)grown, sizeof(*pool));
					if (!pool)
						return NULL;
					cap = grown;
				}
				pool[n_pool] = (struct first_grad){rg, &p->ops[op].in[i]};
				at[t] = n_pool++;
			} else if (layout_same_placement(pool[at[t]].in, &p->ops[op].in[i]) &&
			           same_partition(&pool[at[t]].rg, &rg, scratch, p->n_devices)) {
				mask[op] |= 1u << i;
			}
		}
	}
	for (int e = 0; e < p->n_edges; e++) {
		const struct plan_edge *x = &p->edges[e];
		const struct comm_step *last = x->redist.n_steps > 0
		                                       ? &x->redist.steps[x->redist.n_steps - 1] : NULL;
		if (!last || last->kind != STEP_ALLGATHER || x->consumer_in >= 32)
			continue;
		struct rank_groups rg;
		bool ok = true;
		const struct dist_op *d = &p->ops[x->consumer];
		if (input_grad_groups(p->graph, d, used_axes(d), x->consumer_in, &rg, &ok) &&
		    same_partition(&rg, &last->groups, scratch, p->n_devices))
			mask[x->consumer] |= 1u << x->consumer_in;
	}
	return mask;
}


struct param_reads *plan_param_reads(struct arena *a, const struct graph *g)
{
	struct param_reads *r = arena_alloc(a, sizeof(*r));
	int *last = arena_alloc_raw(a, sizeof(int) * ((size_t)g->n_tensors + 1));
	r = r && last ? r : NULL;
	if (r)  /* set, and read, for the parameter inputs only */
		r->prev = arena_alloc_raw(a, sizeof(*r->prev) * ((size_t)g->n_ops + 1));
	if (!r || !r->prev)
		return NULL;
	for (int t = 0; t < g->n_tensors; t++)
		last[t] = -1;
	for (int i = 0; i < g->n_ops; i++) {
		SL_ASSERT(g->ops[i].n_in <= SIG_MAX_TENSORS);
		for (int j = 0; j < g->ops[i].n_in; j++) {
			int t = g->ops[i].in[j];
			if (g->tensors[t].role != TENSOR_PARAM)
				continue;
			r->prev[i][j] = last[t];
			last[t] = i;  /* a later input of op i reading t again sees i itself */
		}
	}
	return r;
}

int plan_op_params(const struct graph *g, const struct param_reads *r, int lo,
                   const struct dist_op *d, int inputs[SIG_MAX_TENSORS],
                   const struct comm_step *sync[SIG_MAX_TENSORS])
{
	const struct op *o = &g->ops[d->op];
	int n = 0, gi = 0;
	SL_ASSERT(d->n_in <= SIG_MAX_TENSORS && d->op >= lo);
	/* grad[] lists, in input order, the parameters replicated on some axis. */
	for (int i = 0; i < d->n_in; i++) {
		if (g->tensors[o->in[i]].role != TENSOR_PARAM)
			continue;
		bool synced = layout_replica_axes(&d->in[i]) != 0;
		const struct comm_step *gs = synced && gi < d->n_grad ? &d->grad[gi++] : NULL;
		if (r->prev[d->op][i] >= lo)
			continue;  /* read before, in the range or by an earlier input */
		inputs[n] = i;
		sync[n++] = gs;
	}
	return n;
}


const struct layout *plan_edge_start(const struct plan *p, const struct plan_edge *x)
{
	SL_ASSERT(x->producer >= 0 && x->redist.n_steps > 0);
	const struct dist_op *src = &p->ops[x->producer];
	enum step_kind first = x->redist.steps[0].kind;
	bool partial = first == STEP_ALLREDUCE || first == STEP_REDUCESCATTER;
	return partial ? &src->out_partial[x->producer_out] : &src->out[x->producer_out];
}


/* Ops that map every element on its own (what sits between a Softmax and
 * the BatchMatMuls around it). */
static bool elementwise(enum op_kind k)
{
	return k == OP_ADD || k == OP_SUB || k == OP_MUL || k == OP_DROPOUT || k == OP_CAST ||
	       k == OP_RELU || k == OP_GELU || k == OP_SILU || k == OP_SIGMOID || k == OP_BIASADD;
}

uint8_t *plan_attention_fused(struct arena *a, const struct graph *g)
{
	bool *core = plan_attention_core(a, g);
	uint8_t *part = arena_calloc(a, (size_t)g->n_ops + 1, 1);
	if (!core || !part)
		return NULL;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (core[i]) {
			part[i] = o->kind == OP_BATCHMATMUL ? ATTN_SCORES : ATTN_INNER;
			continue;
		}
		for (int j = 0; o->kind == OP_BATCHMATMUL && j < o->n_in; j++) {
			int q = g->tensors[o->in[j]].producer;
			if (q >= 0 && core[q] && g->ops[q].kind != OP_BATCHMATMUL)
				part[i] = ATTN_CONTEXT;
		}
	}
	return part;
}

bool *plan_attention_core(struct arena *a, const struct graph *g)
{
	bool *core = arena_calloc(a, (size_t)g->n_ops + 1, sizeof(bool));
	int *reader = arena_alloc(a, ((size_t)g->n_tensors + 1) * sizeof(int));
	if (!core || !reader)
		return NULL;
	for (int t = 0; t < g->n_tensors; t++)
		reader[t] = -1;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			reader[g->ops[i].in[j]] = g->tensors[g->ops[i].in[j]].n_consumers == 1 ? i : -1;
	for (int i = 0; i < g->n_ops; i++) {
		if (g->ops[i].kind != OP_SOFTMAX)
			continue;
		int x = g->tensors[g->ops[i].in[0]].producer;
		while (x >= 0 && elementwise(g->ops[x].kind))
			x = g->tensors[g->ops[x].in[0]].producer;
		if (x < 0 || g->ops[x].kind != OP_BATCHMATMUL)
			continue; /* no BatchMatMul before it: not an attention core */
		for (int y = g->tensors[g->ops[i].in[0]].producer; y != x;
		     y = g->tensors[g->ops[y].in[0]].producer)
			core[y] = true;
		core[x] = core[i] = true;
		for (int y = reader[g->ops[i].out[0]]; y >= 0 && elementwise(g->ops[y].kind);
		     y = reader[g->ops[y].out[0]])
			core[y] = true;
	}
	return core;
}


#define OPEN_BUCKETS 8   /* buckets filling at once (one per kind and groups) */

/* A parameter's gradient all-reduce, ready once op `op`'s backward ran;
 * `seq` counts gradients in the order they become ready. */
struct grad {
	enum step_kind kind;
	const struct rank_groups *groups;  /* the plan's synchronisation step's */
	double bytes;
	int op, seq;
	const char *name;                  /* the parameter */
	enum dtype dtype;                  /* the parameter's */
	int bucket;                        /* the bucket's order of opening */
};

struct bucket {
	const struct grad *first;          /* kind, groups and the first parameter */
	double bytes;
	int n, last_seq, last_op, order;
};

/* The gradients of a chunk in backward order, being collected (room for
 * every parameter input of the chunk's ops). */
struct grads {
	struct grad *v;
	int n;
};

/* The gradients op d completes in backward: the parameters it is the first
 * of the chunk's ops [lo, ..) to read, replicated somewhere (the
 * collective plan_colls_forward lists for the synchronisation step),
 * except those whose previous read is among the ops [skip_lo, skip_hi). */
static void op_grads(struct grads *G, const struct graph *g, const struct param_reads *r, int lo,
                     int skip_lo, int skip_hi, const struct dist_op *d)
{
	int inputs[SIG_MAX_TENSORS];
	const struct comm_step *sync[SIG_MAX_TENSORS];
	int n = plan_op_params(g, r, lo, d, inputs, sync);
	for (int k = 0; k < n; k++) {
		const struct comm_step *st = sync[k];
		int prev = r->prev[d->op][inputs[k]];
		if (!st || !moves_bytes(st->kind, &st->groups) || (prev >= skip_lo && prev < skip_hi))
			continue;
		const struct tensor *t = &g->tensors[g->ops[d->op].in[inputs[k]]];
		G->v[G->n] = (struct grad){st->kind, &st->groups, step_message(st), d->op, G->n,
		                           t->name, t->dtype, -1};
		G->n++;
	}
}

/* Rank groups as rank_groups_key's words. */
struct groups_form {
	int n;
	int64_t w[RANK_GROUPS_KEY_WORDS];
};

static bool same_form(const struct groups_form *a, const struct groups_form *b)
{
	return a->n == b->n && !memcmp(a->w, b->w, (size_t)a->n * sizeof(a->w[0]));
}

static int cmp_bucket(const void *x, const void *y)
{
	const struct bucket *a = x, *b = y;
	if (a->last_seq != b->last_seq)
		return a->last_seq < b->last_seq ? -1 : 1;
	return a->order < b->order ? -1 : a->order > b->order;
}

/* Buckets of gradients in ready order: a gradient joins the open bucket
 * of its kind and groups while the bucket stays within bucket_bytes (a
 * bucket always takes its first gradient, however large); when it does
 * not fit, that bucket closes and a new one opens. Returns the count in
 * *out (arena), sorted by the gradient that completes each; each
 * gradient's bucket is the order in which its bucket opened. */
static int make_buckets(struct arena *a, struct grads *G, double bucket_bytes,
                        struct bucket **out)
{
	struct bucket *all = arena_alloc_raw(a, ((size_t)G->n + 1) * sizeof(*all));
	struct {
		int at;                      /* the bucket */
		struct groups_form form;     /* its groups' */
	} open[OPEN_BUCKETS];
	int n_open = 0, n = 0;
	if (!all)
		return -1;
	for (int k = 0; k < G->n; k++) {
		struct grad *g = &G->v[k];
		struct groups_form form;
		form.n = rank_groups_key(g->groups, form.w);
		int hit = -1;
		for (int j = 0; j < n_open && hit < 0; j++) {
			const struct bucket *b = &all[open[j].at];
			if (b->first->kind == g->kind && b->first->dtype == g->dtype &&
			    (b->first->groups == g->groups || same_form(&open[j].form, &form)))
				hit = j;
		}
		if (hit >= 0 && all[open[hit].at].bytes + g->bytes <= bucket_bytes) {
			struct bucket *b = &all[open[hit].at];
			b->bytes += g->bytes;
			b->n++;
			b->last_seq = g->seq;
			b->last_op = g->op;
			g->bucket = b->order;
			continue;
		}
		if (hit < 0 && n_open == OPEN_BUCKETS)
			hit = 0; /* close the oldest */
		if (hit >= 0) {
			memmove(&open[hit], &open[hit + 1], (size_t)(n_open - hit - 1) * sizeof(open[0]));
			n_open--;
		}
		g->bucket = n;
		all[n] = (struct bucket){g, g->bytes, 1, g->seq, g->op, n};
		open[n_open].at = n++;
		open[n_open++].form = form;
	}
	/* In the order their last gradients are ready: buckets open in
	 * order and few close out of it, so insertion sorts them in about
	 * one pass (the order is total: `order` breaks ties). */
	for (int i = 1; i < n; i++) {
		struct bucket x = all[i];
		int j = i;
		for (; j > 0 && cmp_bucket(&all[j - 1], &x) > 0; j--)
			all[j] = all[j - 1];
		all[j] = x;
	}
	*out = all;
	return n;
}

int plan_gradient_buckets(struct arena *a, const struct plan *p, const struct param_reads *r,
                          int lo, int hi, double bucket_bytes, struct plan_bucket **out)
{
	return plan_gradient_buckets_except(a, p, r, lo, hi, 0, 0, bucket_bytes, out);
}

int plan_gradient_buckets_except(struct arena *a, const struct plan *p,
                                 const struct param_reads *r, int lo, int hi, int skip_lo,
                                 int skip_hi, double bucket_bytes, struct plan_bucket **out)
{
	int room = 0;
	for (int i = lo; i < hi; i++)
		for (int j = 0; j < p->graph->ops[i].n_in; j++)
			room += p->graph->tensors[p->graph->ops[i].in[j]].role == TENSOR_PARAM;
	struct grads G = {arena_alloc_raw(a, ((size_t)room + 1) * sizeof(*G.v)), 0};
	if (!G.v)
		return -1;
	for (int i = hi - 1; i >= lo; i--)
		op_grads(&G, p->graph, r, lo, skip_lo, skip_hi, &p->ops[i]);
	if (p->scenario->training.zero_stage >= 1)
		for (int k = 0; k < G.n; k++)
			if (G.v[k].kind == STEP_ALLREDUCE)
				G.v[k].kind = STEP_REDUCESCATTER;
	struct bucket *b;
	int n = make_buckets(a, &G, bucket_bytes, &b);
	if (n < 0)
		return -1;
	*out = arena_calloc(a, (size_t)n + 1, sizeof(**out));
	int *at = arena_alloc_raw(a, ((size_t)n + 1) * sizeof(*at)); /* opening order -> index */
	/* the buckets' gradients, bucket after bucket (every slot filled below) */
	int *ops = arena_alloc_raw(a, ((size_t)G.n + 1) * sizeof(*ops));
	double *op_bytes = arena_alloc_raw(a, ((size_t)G.n + 1) * sizeof(*op_bytes));
	if (!*out || !at || !ops || !op_bytes)
		return -1;
	for (int k = 0, used = 0; k < n; used += b[k++].n) {
		const struct grad *f = b[k].first;
		(*out)[k] = (struct plan_bucket){f->kind, f->groups, b[k].bytes, b[k].n, b[k].last_op,
		                                 f->name, f->dtype, ops + used, op_bytes + used};
		at[b[k].order] = k;
	}
	int *filled = arena_calloc(a, (size_t)n + 1, sizeof(*filled));
	if (!filled)
		return -1;
	for (int j = 0; j < G.n; j++) {
		int k = at[G.v[j].bucket];
		(*out)[k].ops[filled[k]] = G.v[j].op;
		(*out)[k].op_bytes[filled[k]++] = G.v[j].bytes;
	}
	return n;
}
