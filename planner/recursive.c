/* recursive.c — MindSpore's double-recursive strategy search (docs/planner.md,
 * "The double-recursive search"; docs/planner-recursive.md), re-implemented
 * from the published description. The algorithm is the subject of Huawei
 * patent US 12,468,924 B2; shardlab implements it for research and teaching
 * comparison.
 *
 * The search works on the ops' dimension signatures: an op's strategy is a
 * cut per label (its fraction 1/cut on every tensor dimension carrying the
 * label, each tensor seen as 4-D n,c,h,w, right-aligned) and a history of
 * the label cut at each level. Element-wise ops leave the partitioned graph
 * (their consumers are rewired to the producer of their first op input) and
 * copy a neighbour's strategy afterwards. The outer recursion has one level
 * per prime factor of the device count (log2 P halvings for a power of two);
 * inside a level the ops are visited in reverse topological order and each
 * cuts the label whose cost is lowest, given the choices already made at
 * this level. Costs: REC_COST_MINDSPORE, the reference's dimensionless
 * element counts; REC_COST_TOPOLOGY, seconds on the scenario's topology
 * with the level's real rank group (cost_collective_s, cost_compute_s),
 * then a refinement: the better (by plan_estimate) of that search and the
 * reference's, improved op by op on the estimator's own objective
 * (est_op_s, est_edge_s) until no op improves.
 *
 * Units: element counts (mindspore mode), seconds (topology mode), bytes.
 * Hot path: the inner loop, ops x levels x labels x neighbours; the
 * topology mode costs one group (the level's ranks) per candidate; the
 * refinement prices each candidate of an op against its neighbours, with
 * decisions memoised by the op's structure and its neighbours' layouts.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner-int.h"

const char *const rec_cost_names[REC_COST_COUNT] = {"topology", "mindspore"};
const char *const rec_order_names[REC_ORDER_COUNT] = {"reverse-topological", "weight"};

/* The reference's constants (docs/planner.md): c of the MatMul row cut (0.25 in
 * early versions, 1 later), the redistribution weight, and "no cut". */
#define REC_C_ROW 1.0
#define REC_REDIST_WEIGHT 16.0
#define REC_NOCUT_SCALE 1.5
#define REC_NOCUT_DIV 350.0
#define REC_MAX_LEVELS 64

enum rclass { RC_MATMUL, RC_ELEMWISE, RC_OTHER };

/* One end of a rewired edge: an op's input (out false) or output idx. */
struct side {
	int op;
	bool out;
	int idx;
};

struct redge {
	struct side mine, theirs;
};

struct rnode {
	struct op_sig sig;
	enum rclass cls;
	bool fixed;                        /* configured: the search works around it */
	bool assigned;                     /* has a strategy (searched, fixed or copied) */
	int64_t cut[SIG_MAX_LABELS];
	int8_t *hist;                      /* label cut at each level, -1 none */
	int64_t rem[SIG_MAX_LABELS];       /* fixed ops: configured cuts not yet given a level */
	int n_edges;
	struct redge *edges;
	int decided_at;                    /* the level at which it chose, -1 */
};

struct rec {
	struct arena *a;
	const struct scenario *s;
	const struct graph *g;
	const struct topology *t;
	enum rec_cost mode;
	enum rec_order order;
	int *visit;                        /* scratch: a level's order of ops */
	struct weighed *weights;           /* scratch: REC_ORDER_WEIGHT */
	int64_t P;
	int n_levels;
	int64_t factor[REC_MAX_LEVELS];
	int64_t stride[REC_MAX_LEVELS];    /* rank distance along each level's axis */
	struct rnode *n;
	struct plan *plan;                 /* configured ops' dist_ops */
	int64_t *group;                    /* scratch: a level's ranks */
	double total;                      /* sum of the chosen costs */
};

/* ------------------------------------------------------------ helpers */

static const struct tensor *side_tensor(const struct graph *g, struct side s)
{
	const struct op *o = &g->ops[s.op];
	return &g->tensors[s.out ? o->out[s.idx] : o->in[s.idx]];
}

static const int8_t *side_labels(const struct rnode *v, struct side s)
{
	return s.out ? v->sig.out[s.idx] : v->sig.in[s.idx];
}

/* The n,c,h,w position of dimension d of a tensor of this rank
 * (right-aligned; leading dimensions beyond four fold into n). */
static int pos4(int rank, int d)
{
	int p = d + 4 - rank;
	return p < 0 ? 0 : p;
}

/* Where label l cuts the tensor at side s (4-D position), -1 if it does not. */
static int side_pos(const struct graph *g, const struct rnode *v, struct side s, int l)
{
	if (l < 0)
		return -1;
	const struct tensor *t = side_tensor(g, s);
	const int8_t *lb = side_labels(v, s);
	for (int d = 0; d < t->rank; d++)
		if (lb[d] == l)
			return pos4(t->rank, d);
	return -1;
}

static bool carries(const int8_t *labels, int rank, int l)
{
	for (int d = 0; d < rank; d++)
		if (labels[d] == l)
			return true;
	return false;
}

static double side_elems(const struct graph *g, const struct rnode *v, struct side s)
{
	const struct tensor *t = side_tensor(g, s);
	const int8_t *lb = side_labels(v, s);
	double e = 1;
	for (int d = 0; d < t->rank; d++)
		e *= (double)t->dims[d] / (double)(lb[d] >= 0 && v->cut[lb[d]] > 0 ? v->cut[lb[d]] : 1);
	return e;
}

static double side_bytes(const struct graph *g, const struct rnode *v, struct side s)
{
	return side_elems(g, v, s) * (double)dtype_bytes(side_tensor(g, s)->dtype);
}

static bool on_inputs(const struct op_sig *sig, int l)
{
	for (int i = 0; i < sig->n_in; i++)
		if (carries(sig->in[i], sig->in_rank[i], l))
			return true;
	return false;
}

/* MatMul-like: a summed label carried by two inputs (a contraction).
 * Element-wise: one output with input 0's labels, nothing summed or whole,
 * no rule. Everything else (reductions, Gather, Softmax, norms, Reshape,
 * Transpose, cross-entropy...) is "other" and uses the generic costs. */
static enum rclass classify(const struct op_sig *sig)
{
	for (int l = 0; l < sig->n_labels; l++) {
		int n = 0;
		for (int i = 0; i < sig->n_in; i++)
			n += carries(sig->in[i], sig->in_rank[i], l);
		if (sig->role[l] == SIG_SUM && n >= 2)
			return RC_MATMUL;
	}
	if (sig->n_out != 1 || sig->rule != SIG_RULE_NONE || sig->n_in < 1 ||
	    sig->out_rank[0] != sig->in_rank[0])
		return RC_OTHER;
	for (int l = 0; l < sig->n_labels; l++)
		if (sig->role[l] != SIG_KEEP)
			return RC_OTHER;
	for (int d = 0; d < sig->out_rank[0]; d++)
		if (sig->out[0][d] != sig->in[0][d])
			return RC_OTHER;
	return RC_ELEMWISE;
}

/* ----------------------------------------------------------- the costs */

/* The reference's per-op cost of cutting label l (docs/planner.md): a kept label
 * costs half the local size of every input that does not carry it (it is
 * replicated along the cut; MatMul i: c·j·k/2, j: i·k/2), a summed label
 * half the local size of every output (partial sums; MatMul k: i·j/2).
 * Element-wise ops cost 0. */
static double ms_op_cost(const struct rec *R, const struct rnode *v, int op, int l, double c)
{
	const struct op_sig *sig = &v->sig;
	double sum = 0;
	if (v->cls == RC_ELEMWISE)
		return 0;
	if (sig->role[l] == SIG_SUM) {
		for (int k = 0; k < sig->n_out; k++)
			sum += side_elems(R->g, v, (struct side){op, true, k}) / 2;
		return sum;
	}
	for (int i = 0; i < sig->n_in; i++)
		if (!carries(sig->in[i], sig->in_rank[i], l))
			sum += side_elems(R->g, v, (struct side){op, false, i}) / 2;
	bool row = v->cls == RC_MATMUL && sig->n_in >= 2 &&
	           carries(sig->in[0], sig->in_rank[0], l) &&
	           !carries(sig->in[1], sig->in_rank[1], l);
	return row ? c * sum : sum;
}

/* The ranks of level lvl's axis through rank 0. */
static int level_group(struct rec *R, int lvl)
{
	for (int64_t i = 0; i < R->factor[lvl]; i++)
		R->group[i] = i * R->stride[lvl];
	return (int)R->factor[lvl];
}

static double coll_s(struct rec *R, int lvl, enum step_kind k, double bytes)
{
	int n = level_group(R, lvl);
	return cost_collective_s(R->t, k, R->group, n, bytes);
}

static int64_t used(const struct rnode *v)
{
	int64_t u = 1;
	for (int l = 0; l < v->sig.n_labels; l++)
		if (on_inputs(&v->sig, l))
			u *= v->cut[l];
	return u;
}

/* Local size of label l with `extra` more slices on label `more`. */
static double local_size(const struct rnode *v, int l, int more, int64_t extra)
{
	int64_t c = v->cut[l] > 0 ? v->cut[l] : 1;
	return (double)v->sig.size[l] / (double)(l == more ? c * extra : c);
}

/* Forward and backward compute of op with `extra` more slices on label
 * `more` (-1 with extra 1: as it is), seconds: three kernels of the
 * forward's work (a MatMul's backward is two GEMMs of its dimensions in
 * another order; docs/planner.md), a GEMM with its local dimensions from
 * the signature (mk,kn->mn, batch labels folded into m). Three kernels of
 * work W cost 3 overheads + max(3 F / rate, 3 bytes / bandwidth): the
 * model of the sum plus two more overheads. */
static double topo_compute_s(const struct rec *R, int op, const struct rnode *v, int more,
                             int64_t extra)
{
	const struct op *o = &R->g->ops[op];
	const struct topo_device *dev = &R->t->device;
	double f = (double)(used(v) * extra);
	struct cost_work w = {3 * o->flops / f, 3 * (o->bytes_read + o->bytes_written) / f, 0, 0, 0};
	const struct op_sig *sig = &v->sig;
	if ((o->kind == OP_MATMUL || o->kind == OP_BATCHMATMUL) && sig->n_in == 2) {
		int r = sig->in_rank[0];
		bool ta = o->attrs.transpose_a, tb = o->attrs.transpose_b;
		w.m = 1;
		for (int d = 0; d < r - 2; d++)
			w.m *= local_size(v, sig->in[0][d], more, extra);
		w.m *= local_size(v, sig->in[0][r - (ta ? 1 : 2)], more, extra);
		w.k = local_size(v, sig->in[0][r - (ta ? 2 : 1)], more, extra);
		w.n = local_size(v, sig->in[1][r - (tb ? 2 : 1)], more, extra);
	}
	double s = cost_op_kernel_s(dev, o->kind, o->dtype, &w, false, NULL);
	return s > 0 ? s + 2 * dev->kernel_overhead_s : 0;
}

/* Topology mode: the collectives cutting l over this level's group costs
 * (partial sums completed in the forward pass; the gradients of inputs
 * replicated along the cut all-reduced in the backward pass) plus the
 * compute left on each device. */
static double topo_op_cost(struct rec *R, const struct rnode *v, int op, int l, int lvl)
{
	const struct op_sig *sig = &v->sig;
	double s = topo_compute_s(R, op, v, l, R->factor[lvl]);
	if (v->cls == RC_ELEMWISE)
		return s;
	if (sig->role[l] == SIG_SUM) {
		for (int k = 0; k < sig->n_out; k++)
			s += coll_s(R, lvl, STEP_ALLREDUCE, side_bytes(R->g, v, (struct side){op, true, k}));
		return s;
	}
	for (int i = 0; i < sig->n_in; i++)
		if (!carries(sig->in[i], sig->in_rank[i], l))
			s += coll_s(R, lvl, STEP_ALLREDUCE,
			            side_bytes(R->g, v, (struct side){op, false, i}));
	return s;
}

/* The neighbour term of cutting l (-1: no cut) at this level: each
 * neighbour already decided at this level that cut the shared tensor
 * differently adds 16 x the tensor's local size (mindspore) or the
 * AllGather / AllToAll of it over the level's group, forward and backward
 * (topology). */
static double nbr_cost(struct rec *R, const struct rnode *v, int l, int lvl)
{
	double s = 0;
	for (int e = 0; e < v->n_edges; e++) {
		const struct redge *E = &v->edges[e];
		const struct rnode *u = &R->n[E->theirs.op];
		if (u->decided_at != lvl)
			continue;
		int mine = side_pos(R->g, v, E->mine, l);
		int theirs = side_pos(R->g, u, E->theirs, u->hist[lvl]);
		if (mine == theirs)
			continue;
		if (R->mode == REC_COST_MINDSPORE) {
			s += REC_REDIST_WEIGHT * side_elems(R->g, v, E->mine);
		} else {
			enum step_kind k = mine >= 0 && theirs >= 0 ? STEP_ALLTOALL : STEP_ALLGATHER;
			s += 2 * coll_s(R, lvl, k, side_bytes(R->g, v, E->mine));
		}
	}
	return s;
}

/* Can label l of v be cut by f now? Kept or summed, on an input, local
 * size divisible by f and at least f (for f = 2: even and >= 2). */
static bool cuttable(const struct rnode *v, int l, int64_t f)
{
	if (v->sig.role[l] == SIG_WHOLE || !on_inputs(&v->sig, l))
		return false;
	int64_t local = v->sig.size[l] / v->cut[l];
	return local >= f && local % f == 0 && v->sig.size[l] % v->cut[l] == 0;
}

/* The per-op cost of cutting l at this level, in the mode's units. */
static double own_cost(struct rec *R, const struct rnode *v, int op, int l, int lvl)
{
	return R->mode == REC_COST_MINDSPORE ? ms_op_cost(R, v, op, l, REC_C_ROW)
	                                     : topo_op_cost(R, v, op, l, lvl);
}

/* The op's cost weight at this level: the least per-op cost of a valid
 * cut (the neighbour term left out), 0 when it has none. */
static double weight(struct rec *R, int op, int lvl)
{
	struct rnode *v = &R->n[op];
	double w = INFINITY;
	for (int l = 0; l < v->sig.n_labels; l++)
		if (cuttable(v, l, R->factor[lvl]))
			w = fmin(w, own_cost(R, v, op, l, lvl));
	return isinf(w) ? 0 : w;
}

/* Chooses v's cut at this level; returns its cost. */
static double choose(struct rec *R, int op, int lvl)
{
	struct rnode *v = &R->n[op];
	int64_t f = R->factor[lvl];
	int best = -1;
	double best_cost = INFINITY, least_op = INFINITY;
	for (int l = 0; l < v->sig.n_labels; l++) {
		if (!cuttable(v, l, f))
			continue;
		double c = own_cost(R, v, op, l, lvl);
		least_op = c < least_op ? c : least_op;
		c += nbr_cost(R, v, l, lvl);
		if (c < best_cost) {
			best_cost = c;
			best = l;
		}
	}
	/* No cut: the reference's (1.5 min)^2 / 350 with min the least per-op
	 * cost of a valid cut; in seconds, the compute of not cutting. */
	double none = R->mode == REC_COST_MINDSPORE
	                  ? (isinf(least_op) ? 0 : pow(REC_NOCUT_SCALE * least_op, 2) / REC_NOCUT_DIV)
	                  : topo_compute_s(R, op, v, -1, 1);
	none += nbr_cost(R, v, -1, lvl);
	if (best < 0 || none < best_cost) {
		best = -1;
		best_cost = none;
	}
	v->hist[lvl] = (int8_t)best;
	if (best >= 0)
		v->cut[best] *= f;
	v->decided_at = lvl;
	return best_cost;
}

/* A configured op at this level: the first label whose configured cut
 * still has the factor takes it. */
static void fixed_level(struct rnode *v, int lvl, int64_t f)
{
	v->hist[lvl] = -1;
	for (int l = 0; l < v->sig.n_labels; l++)
		if (on_inputs(&v->sig, l) && v->rem[l] % f == 0 && v->rem[l] >= f) {
			v->rem[l] /= f;
			v->hist[lvl] = (int8_t)l;
			break;
		}
	v->decided_at = lvl;
}

struct weighed {
	double w;
	int op;
};

/* Heaviest first; equal weights in reverse topological order. */
static int by_weight(const void *x, const void *y)
{
	const struct weighed *a = x, *b = y;
	if (a->w != b->w)
		return a->w > b->w ? -1 : 1;
	return b->op - a->op;
}

/* The ops the level chooses for, in the visit order; their count. */
static int visit_order(struct rec *R, int lvl)
{
	int n = 0;
	for (int i = R->g->n_ops - 1; i >= 0; i--)
		if (!R->n[i].fixed && R->n[i].cls != RC_ELEMWISE)
			R->visit[n++] = i;
	if (R->order != REC_ORDER_WEIGHT)
		return n;
	for (int k = 0; k < n; k++)
		R->weights[k] = (struct weighed){weight(R, R->visit[k], lvl), R->visit[k]};
	qsort(R->weights, (size_t)n, sizeof(*R->weights), by_weight);
	for (int k = 0; k < n; k++)
		R->visit[k] = R->weights[k].op;
	return n;
}

static void search(struct rec *R)
{
	const struct graph *g = R->g;
	R->total = 0;
	for (int lvl = 0; lvl < R->n_levels; lvl++) {
		for (int i = 0; i < g->n_ops; i++) {
			R->n[i].decided_at = -1;
			if (R->n[i].fixed)
				fixed_level(&R->n[i], lvl, R->factor[lvl]);
		}
		int n = visit_order(R, lvl);
		for (int k = 0; k < n; k++)
			R->total += choose(R, R->visit[k], lvl);
	}
}

/* ----------------------------------------------------- graph and levels */

/* The op an element-wise op's value comes from: the producer of its first
 * op input, through other element-wise ops; -1 when none. */
static int ew_source(struct rec *R, int op, int *memo, int *out_idx)
{
	const struct graph *g = R->g;
	int cur = op, k = 0;
	while (cur >= 0 && R->n[cur].cls == RC_ELEMWISE) {
		if (memo[cur] != -2) {
			cur = memo[cur];
			if (cur >= 0)
				k = memo[g->n_ops + cur];
			break;
		}
		const struct op *o = &g->ops[cur];
		int next = -1;
		for (int i = 0; i < o->n_in && next < 0; i++) {
			int p = g->tensors[o->in[i]].producer;
			if (p >= 0) {
				next = p;
				k = plan_output_index(&g->ops[p], o->in[i]);
			}
		}
		cur = next;
	}
	*out_idx = k;
	return cur;
}

static bool add_edge(struct rec *R, struct side a, struct side b)
{
	struct rnode *v = &R->n[a.op];
	struct redge *grown = arena_grow(R->a, v->edges, (size_t)v->n_edges,
	                                 (size_t)v->n_edges + 1, sizeof(*grown));
	if (!grown)
		return false;
	grown[v->n_edges++] = (struct redge){a, b};
	v->edges = grown;
	return true;
}

/* The partitioned graph's edges: every non-element-wise op's op inputs,
 * rewired past element-wise producers. */
static bool build_edges(struct rec *R)
{
	const struct graph *g = R->g;
	int *memo = arena_alloc(R->a, sizeof(int) * (size_t)(2 * g->n_ops + 1));
	if (!memo)
		return false;
	for (int i = 0; i < 2 * g->n_ops; i++)
		memo[i] = -2;
	for (int v = 0; v < g->n_ops; v++) {
		if (R->n[v].cls == RC_ELEMWISE) {
			int k;
			int src = ew_source(R, v, memo, &k);
			memo[v] = src;
			if (src >= 0)
				memo[g->n_ops + src] = k;
			continue;
		}
		const struct op *o = &g->ops[v];
		for (int i = 0; i < o->n_in; i++) {
			int p = g->tensors[o->in[i]].producer, k = 0;
			if (p < 0)
				continue;
			k = plan_output_index(&g->ops[p], o->in[i]);
			if (R->n[p].cls == RC_ELEMWISE)
				p = ew_source(R, p, memo, &k);
			if (p < 0 || p == v)
				continue;
			struct side mine = {v, false, i}, theirs = {p, true, k};
			if (!add_edge(R, mine, theirs) || !add_edge(R, theirs, mine))
				return false;
		}
	}
	return true;
}

/* Prime factors of P, ascending: 12 -> 2, 2, 3. */
static int prime_levels(int64_t P, int64_t *factor)
{
	int n = 0;
	for (int64_t p = 2; P > 1 && n < REC_MAX_LEVELS; p++) {
		if (p * p > P)
			p = P;
		while (P % p == 0 && n < REC_MAX_LEVELS) {
			factor[n++] = p;
			P /= p;
		}
	}
	return n;
}

/* Level strides: across_first puts the first levels on the largest rank
 * distances (across servers when the stage spans several), otherwise on
 * the smallest (inside a server). */
static void level_strides(struct rec *R, bool across_first)
{
	for (int l = 0; l < R->n_levels; l++) {
		int64_t s = 1;
		for (int m = 0; m < R->n_levels; m++)
			if (across_first ? m > l : m < l)
				s *= R->factor[m];
		R->stride[l] = s;
	}
}

/* Label cuts of a configured op from its distributed op's inputs. */
static void fixed_cuts(struct rnode *v, const struct dist_op *d)
{
	for (int l = 0; l < SIG_MAX_LABELS; l++)
		v->cut[l] = 1;
	for (int i = 0; i < d->n_in; i++)
		for (int k = 0; k < d->in[i].rank; k++)
			if (v->sig.in[i][k] >= 0)
				v->cut[v->sig.in[i][k]] = d->cuts[i][k];
}

static void reset_nodes(struct rec *R)
{
	for (int i = 0; i < R->g->n_ops; i++) {
		struct rnode *v = &R->n[i];
		if (v->fixed) {
			fixed_cuts(v, &R->plan->ops[i]);
			memcpy(v->rem, v->cut, sizeof v->rem);
		} else {
			for (int l = 0; l < SIG_MAX_LABELS; l++)
				v->cut[l] = 1;
		}
		v->assigned = v->fixed;
		for (int lvl = 0; lvl < R->n_levels; lvl++)
			v->hist[lvl] = -1;
	}
}

static bool rec_init(struct rec *R, struct arena *a, const struct scenario *s,
                     const struct plan_options *o, struct diag_list *diags)
{
	memset(R, 0, sizeof(*R));
	R->a = a;
	R->s = s;
	R->g = s->graph;
	R->t = s->topo;
	R->mode = o->rec_cost;
	R->order = o->rec_order;
	R->plan = plan_configured(a, s, o->mode, diags);
	if (!R->plan)
		return false;
	R->P = R->plan->n_devices;
	R->n_levels = prime_levels(R->P, R->factor);
	R->group = arena_alloc(a, sizeof(int64_t) * (size_t)(R->P + 1));
	R->n = arena_calloc(a, (size_t)R->g->n_ops + 1, sizeof(*R->n));
	R->visit = arena_alloc(a, sizeof(int) * ((size_t)R->g->n_ops + 1));
	R->weights = arena_alloc(a, sizeof(struct weighed) * ((size_t)R->g->n_ops + 1));
	if (!R->group || !R->n || !R->visit || !R->weights)
		return false;
	for (int i = 0; i < R->g->n_ops; i++) {
		struct rnode *v = &R->n[i];
		if (!graph_op_signature(R->g, i, &v->sig))
			v->sig.n_labels = 0; /* replicated: nothing to cut */
		v->cls = classify(&v->sig);
		v->fixed = scenario_shard_for(s, i) != NULL;
		v->hist = arena_calloc(a, (size_t)R->n_levels + 1, 1);
		if (!v->hist)
			return false;
	}
	return build_edges(R);
}

/* ------------------------------------------- strategies of the other ops */

/* The cut op u gives dimension d of the tensor at its side s. */
static int64_t dim_cut(const struct rnode *u, struct side s, int d)
{
	int l = side_labels(u, s)[d];
	return l >= 0 ? u->cut[l] : 1;
}

/* Copies into element-wise op e the cuts a neighbour gives the tensor at
 * e's side `mine` (the neighbour's side `theirs`, the same tensor). */
static void copy_cuts(struct rec *R, int e, struct side mine, const struct rnode *u,
                      struct side theirs)
{
	struct rnode *v = &R->n[e];
	const struct tensor *t = side_tensor(R->g, mine);
	for (int d = 0; d < t->rank; d++) {
		int l = side_labels(v, mine)[d];
		if (l >= 0)
			v->cut[l] = dim_cut(u, theirs, d);
	}
	v->assigned = true;
}

/* Forward: from the producer of the first assigned op input. */
static void ew_forward(struct rec *R, int e)
{
	const struct graph *g = R->g;
	const struct op *o = &g->ops[e];
	for (int i = 0; i < o->n_in; i++) {
		int t = o->in[i], p = g->tensors[t].producer;
		if (p < 0 || !R->n[p].assigned)
			continue;
		copy_cuts(R, e, (struct side){e, false, i}, &R->n[p],
		          (struct side){p, true, plan_output_index(&g->ops[p], t)});
		return;
	}
}

/* Backward: from the first assigned consumer of the output. */
static void ew_backward(struct rec *R, int e)
{
	const struct graph *g = R->g;
	int t = g->ops[e].out[0];
	for (int c = e + 1; c < g->n_ops; c++) {
		const struct op *o = &g->ops[c];
		for (int i = 0; i < o->n_in; i++)
			if (o->in[i] == t && R->n[c].assigned) {
				copy_cuts(R, e, (struct side){e, true, 0}, &R->n[c],
				          (struct side){c, false, i});
				return;
			}
	}
}

/* Data parallel: the first dimension of the output cut over every device. */
static void ew_data_parallel(struct rec *R, int e)
{
	struct rnode *v = &R->n[e];
	int l = v->sig.out_rank[0] > 0 ? v->sig.out[0][0] : -1;
	if (l >= 0)
		v->cut[l] = R->P;
	v->assigned = true;
}

static void assign_elementwise(struct rec *R)
{
	int n = R->g->n_ops;
	for (int i = 0; i < n; i++)
		if (R->n[i].cls != RC_ELEMWISE || R->n[i].fixed)
			R->n[i].assigned = true;
	for (int i = 0; i < n; i++)
		if (!R->n[i].assigned)
			ew_forward(R, i);
	for (int i = n - 1; i >= 0; i--)
		if (!R->n[i].assigned)
			ew_backward(R, i);
	for (int i = 0; i < n; i++)
		if (!R->n[i].assigned)
			ew_data_parallel(R, i);
}

/* ----------------------------------------------------------- fix-ups */

/* Non-divisible cuts reset to 1; then, while the cuts do not divide the
 * device count, the last cut label resets to 1. */
static void fix_divisible(struct rec *R, struct rnode *v)
{
	for (int l = 0; l < v->sig.n_labels; l++)
		if (v->cut[l] < 1 || v->sig.size[l] % v->cut[l] != 0)
			v->cut[l] = 1;
	for (int l = v->sig.n_labels - 1; l >= 0 && R->P % used(v) != 0; l--)
		v->cut[l] = 1;
}

/* The op that decides a parameter's cuts: its first configured consumer,
 * else its first consumer. */
static int param_owner(const struct rec *R, int t, int *first_in)
{
	const struct graph *g = R->g;
	int owner = -1;
	for (int c = 0; c < g->n_ops; c++)
		for (int i = 0; i < g->ops[c].n_in; i++)
			if (g->ops[c].in[i] == t &&
			    (owner < 0 || (R->n[c].fixed && !R->n[owner].fixed))) {
				owner = c;
				*first_in = i;
			}
	return owner;
}

/* Every consumer of parameter t cuts it as its owner does. */
static void unify_param(struct rec *R, int t)
{
	const struct graph *g = R->g;
	int oi = 0, owner = param_owner(R, t, &oi);
	if (owner < 0)
		return;
	for (int c = 0; c < g->n_ops; c++) {
		struct rnode *v = &R->n[c];
		for (int i = 0; i < g->ops[c].n_in && c != owner && !v->fixed; i++) {
			if (g->ops[c].in[i] != t)
				continue;
			int64_t before[SIG_MAX_LABELS];
			memcpy(before, v->cut, sizeof before);
			for (int d = 0; d < g->tensors[t].rank; d++)
				if (v->sig.in[i][d] >= 0)
					v->cut[v->sig.in[i][d]] =
						dim_cut(&R->n[owner], (struct side){owner, false, oi}, d);
			for (int l = 0; l < v->sig.n_labels && R->P % used(v) != 0; l++)
				if (!carries(v->sig.in[i], v->sig.in_rank[i], l))
					v->cut[l] = 1;
			if (R->P % used(v) != 0)
				memcpy(v->cut, before, sizeof before);
		}
	}
}

static void fix_ups(struct rec *R)
{
	const struct graph *g = R->g;
	for (int i = 0; i < g->n_ops; i++)
		if (!R->n[i].fixed)
			fix_divisible(R, &R->n[i]);
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].role == TENSOR_PARAM && g->tensors[t].n_consumers > 1)
			unify_param(R, t);
}

/* ------------------------------------------------------ the dist ops */

static bool quiet_cuts(struct rec *R, int op, struct dist_op *out)
{
	const struct op *o = &R->g->ops[op];
	struct rnode *v = &R->n[op];
	int64_t(*cuts)[GRAPH_MAX_RANK] = arena_calloc(R->a, (size_t)o->n_in + 1, sizeof(*cuts));
	if (!cuts)
		return false;
	for (int i = 0; i < o->n_in; i++)
		for (int d = 0; d < GRAPH_MAX_RANK; d++)
			cuts[i][d] = d < v->sig.in_rank[i] && v->sig.in[i][d] >= 0
			                 ? v->cut[v->sig.in[i][d]] : 1;
	struct diag_list quiet;
	diag_list_init(&quiet);
	bool ok = dist_op_from_cuts(R->a, R->g, op, (const int64_t(*)[GRAPH_MAX_RANK])cuts, R->P,
	                            out, &quiet);
	diag_list_free(&quiet);
	return ok;
}

/* Topology mode: the level placement kept in the Layout form, one device
 * axis per run of consecutive levels (in rank-distance order, largest
 * first) that cut the same label. */
static bool level_layout(struct rec *R, int op, struct dist_op *out)
{
	struct rnode *v = &R->n[op];
	const struct op *o = &R->g->ops[op];
	int order[REC_MAX_LEVELS];
	for (int l = 0; l < R->n_levels; l++)
		order[l] = l;
	for (int x = 1; x < R->n_levels; x++)     /* by stride, descending */
		for (int y = x; y > 0 && R->stride[order[y]] > R->stride[order[y - 1]]; y--) {
			int tmp = order[y];
			order[y] = order[y - 1];
			order[y - 1] = tmp;
		}
	struct shard_config cfg = {.op_name = o->name, .op = op, .form = SHARD_LAYOUT,
	                           .n_in = o->n_in};
	int axis_label[SHARD_MAX_AXES], n = 0;
	for (int x = 0; x < R->n_levels; x++) {
		int l = v->hist[order[x]];
		if (n > 0 && axis_label[n - 1] == l) {
			cfg.device_matrix[n - 1] *= R->factor[order[x]];
			continue;
		}
		if (n == SHARD_MAX_AXES)
			return false;
		axis_label[n] = l;
		cfg.device_matrix[n++] = R->factor[order[x]];
	}
	cfg.n_dev_axes = n;
	cfg.in_maps = arena_calloc(R->a, (size_t)o->n_in + 1, sizeof(*cfg.in_maps));
	if (!cfg.in_maps)
		return false;
	for (int i = 0; i < o->n_in; i++) {
		struct shard_tensor_map *m = &cfg.in_maps[i];
		m->rank = v->sig.in_rank[i];
		for (int d = 0; d < m->rank; d++)
			for (int x = 0; x < n; x++)
				if (v->sig.in[i][d] >= 0 && axis_label[x] == v->sig.in[i][d])
					m->axes[d][m->n_axes[d]++] = x;
	}
	struct diag_list quiet;
	diag_list_init(&quiet);
	bool ok = dist_op_from_config(R->a, R->g, op, &cfg, R->P, out, &quiet);
	diag_list_free(&quiet);
	return ok;
}

/* The cut labels still match the history (no fix-up changed them). */
static bool history_holds(const struct rec *R, const struct rnode *v)
{
	int64_t c[SIG_MAX_LABELS];
	for (int l = 0; l < SIG_MAX_LABELS; l++)
		c[l] = 1;
	for (int lvl = 0; lvl < R->n_levels; lvl++)
		if (v->hist[lvl] >= 0)
			c[v->hist[lvl]] *= R->factor[lvl];
	for (int l = 0; l < v->sig.n_labels; l++)
		if (c[l] != v->cut[l])
			return false;
	return true;
}

/* A searched or copied op's dist_op; on failure its cuts reset to 1 from
 * the last label until one is accepted (a Reshape that cannot carry a cut). */
static bool make_op(struct rec *R, int op, struct dist_op *out)
{
	struct rnode *v = &R->n[op];
	if (R->mode == REC_COST_TOPOLOGY && v->cls != RC_ELEMWISE && history_holds(R, v) &&
	    level_layout(R, op, out))
		return true;
	for (int l = v->sig.n_labels; l >= 0; l--) {
		if (l < v->sig.n_labels)
			v->cut[l] = 1;
		if (quiet_cuts(R, op, out))
			return true;
	}
	return false;
}

/* Element-wise ops in topology mode: the placement of the tensor they copy
 * from, so that no redistribution separates them. */
static bool copy_layout(struct rec *R, struct plan *p, int e, struct dist_op *out)
{
	const struct graph *g = R->g;
	const struct op *o = &g->ops[e];
	struct rnode *v = &R->n[e];
	int p0 = g->tensors[o->in[0]].producer;
	if (p0 < 0 || p0 >= e)
		return false;
	const struct layout *src = &p->ops[p0].out[plan_output_index(&g->ops[p0], o->in[0])];
	if (src->dm.n > SHARD_MAX_AXES)
		return false;
	struct shard_config cfg = {.op_name = o->name, .op = e, .form = SHARD_LAYOUT,
	                           .n_in = o->n_in, .n_dev_axes = src->dm.n};
	memcpy(cfg.device_matrix, src->dm.size, sizeof(int64_t) * (size_t)src->dm.n);
	cfg.in_maps = arena_calloc(R->a, (size_t)o->n_in + 1, sizeof(*cfg.in_maps));
	if (!cfg.in_maps)
		return false;
	for (int i = 0; i < o->n_in; i++) {
		struct shard_tensor_map *m = &cfg.in_maps[i];
		m->rank = v->sig.in_rank[i];
		for (int d = 0; d < m->rank; d++) {
			int l = v->sig.in[i][d];
			for (int d0 = 0; d0 < src->rank && l >= 0; d0++)
				if (v->sig.in[0][d0] == l) {
					if (src->n_map[d0] > SHARD_MAX_AXES)
						return false;
					m->n_axes[d] = src->n_map[d0];
					for (int k = 0; k < src->n_map[d0]; k++)
						m->axes[d][k] = src->map[d0][k];
				}
		}
	}
	struct diag_list quiet;
	diag_list_init(&quiet);
	bool ok = dist_op_from_config(R->a, g, e, &cfg, R->P, out, &quiet);
	diag_list_free(&quiet);
	return ok;
}

static bool build_plan(struct rec *R, struct diag_list *diags)
{
	struct plan *p = R->plan;
	for (int i = 0; i < R->g->n_ops; i++) {
		if (R->n[i].fixed)
			continue;
		struct dist_op d;
		bool copied = R->mode == REC_COST_TOPOLOGY && R->n[i].cls == RC_ELEMWISE &&
		              copy_layout(R, p, i, &d);
		if (!copied && !make_op(R, i, &d)) {
			diag_add(diags, DIAG_ERROR, R->s->file, 0, NULL,
			         "the recursive planner found no valid strategy for %s \"%s\"",
			         op_kind_name(R->g->ops[i].kind), R->g->ops[i].name);
			return false;
		}
		d.source = STRATEGY_PLANNED;
		d.from_op = -1;
		p->ops[i] = d;
	}
	return plan_derive_edges(R->a, p, diags);
}

/* ------------------------------------------------------ the refinement */

/* Topology mode, after the level-by-level search: coordinate descent on
 * the estimator's own objective (est_op_s + est_edge_s, whose sum over
 * ops and edges is plan_estimate's iteration_s). Each unconfigured op in
 * topological order tries every candidate of plan_enumerate against its
 * neighbours' current layouts and takes the least, only when strictly
 * better; passes repeat until none improves. Three memos keep it fast on
 * repeated layers: an edge's seconds by layout pair, an op's seconds by
 * its structure and cuts, and a whole decision by the op's structure, its
 * own layouts and its neighbours' layouts. Keys are two 64-bit hashes of
 * the serialised inputs (never pointers). */
#define REFINE_PASSES 8

struct rkey {
	uint64_t a, b;
};

static void key_add(struct rkey *k, int64_t w)
{
	k->a = (k->a ^ (uint64_t)w) * 1099511628211ull;
	k->b = (k->b + (uint64_t)w + 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull;
	k->b ^= k->b >> 31;
}

static void key_double(struct rkey *k, double v)
{
	key_add(k, util_double_bits(v));
}

static void key_layout(struct rkey *k, const struct layout *l)
{
	key_add(k, l->dtype);
	key_add(k, l->rank);
	for (int d = 0; d < l->rank; d++)
		key_add(k, l->shape[d]);
	key_add(k, l->dm.n);
	for (int x = 0; x < l->dm.n; x++)
		key_add(k, l->dm.size[x]);
	key_add(k, l->dm.base);
	for (int d = 0; d < l->rank; d++) {
		key_add(k, l->n_map[d]);
		for (int x = 0; x < l->n_map[d]; x++)
			key_add(k, l->map[d][x]);
	}
	key_add(k, l->partial);
}

struct rslot {
	struct rkey key;
	bool used;
	double s;                          /* seconds */
	int win;                           /* decisions: index into the winners, -1 keep */
};

struct rtable {
	struct rslot *slots;
	size_t cap, used;                  /* cap: a power of two */
};

static struct rslot *rt_find(struct rtable *t, struct rkey k)
{
	if (2 * (t->used + 1) > t->cap) {
		struct rtable old = *t;
		size_t cap = t->cap ? 2 * t->cap : 1024;
		struct rslot *n = calloc(cap, sizeof(*n));
		if (!n)
			return NULL;
		t->slots = n;
		t->cap = cap;
		for (size_t i = 0; i < old.cap; i++)
			if (old.slots[i].used) {
				size_t j = old.slots[i].key.a & (cap - 1);
				while (n[j].used)
					j = (j + 1) & (cap - 1);
				n[j] = old.slots[i];
			}
		free(old.slots);
	}
	for (size_t i = k.a & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		struct rslot *e = &t->slots[i];
		if (!e->used)
			t->used++; /* the caller fills it */
		if (!e->used || (e->key.a == k.a && e->key.b == k.b))
			return e;
	}
}

/* A use of a tensor: op `op` reads it as input `in`. */
struct ruse {
	int op, in;
};

struct refine {
	struct rec *R;
	struct plan *p;
	struct est_ctx *E;
	struct estimate sink;              /* the estimator's categories, unused */
	struct arena *scratch;             /* candidates of one op, emptied per op */
	struct rtable edge, opc, dec;
	struct dist_op *win;               /* decisions' winners, built once (op index aside) */
	int n_win;
	int *use_start;                    /* readers of tensor t: uses[use_start[t] .. [t+1]) */
	struct ruse *uses;
	struct rkey *skey;                 /* per op: its structure */
	bool all_devices, oom;
};

static bool index_uses(struct refine *F)
{
	const struct graph *g = F->R->g;
	struct arena *a = F->R->a;
	F->use_start = arena_calloc(a, (size_t)g->n_tensors + 1, sizeof(int));
	int *fill = arena_calloc(a, (size_t)g->n_tensors + 1, sizeof(int));
	if (!F->use_start || !fill)
		return false;
	int n = 0;
	for (int o = 0; o < g->n_ops; o++)
		for (int j = 0; j < g->ops[o].n_in; j++, n++)
			F->use_start[g->ops[o].in[j] + 1]++;
	for (int t = 0; t < g->n_tensors; t++)
		F->use_start[t + 1] += F->use_start[t];
	F->uses = arena_calloc(a, (size_t)n + 1, sizeof(*F->uses));
	if (!F->uses)
		return false;
	for (int o = 0; o < g->n_ops; o++)
		for (int j = 0; j < g->ops[o].n_in; j++) {
			int t = g->ops[o].in[j];
			F->uses[F->use_start[t] + fill[t]++] = (struct ruse){o, j};
		}
	return true;
}

/* What an op's distributed form and price depend on, besides its cuts:
 * kind, attributes, work, signature, and each tensor's shape, dtype and
 * role (a parameter: whether this op reads it first, and shared). */
static struct rkey structure_key(const struct rec *R, int op, const int *first_reader)
{
	const struct graph *g = R->g;
	const struct op *o = &g->ops[op];
	const struct op_sig *sig = &R->n[op].sig;
	struct rkey k = {1469598103934665603ull, 0};
	key_add(&k, o->kind);
	key_add(&k, o->dtype);
	key_add(&k, o->attrs.transpose_a);
	key_add(&k, o->attrs.transpose_b);
	key_add(&k, o->attrs.axis);
	key_add(&k, o->attrs.n_axes);
	key_double(&k, o->flops);
	key_double(&k, o->bytes_read);
	key_double(&k, o->bytes_written);
	key_add(&k, sig->n_labels);
	for (int l = 0; l < sig->n_labels; l++) {
		key_add(&k, sig->size[l]);
		key_add(&k, sig->role[l]);
	}
	key_add(&k, sig->rule);
	for (int side = 0; side < 2; side++) {
		int n = side ? o->n_out : o->n_in;
		key_add(&k, n);
		for (int i = 0; i < n; i++) {
			int ti = side ? o->out[i] : o->in[i];
			const struct tensor *t = &g->tensors[ti];
			key_add(&k, t->role);
			key_add(&k, t->dtype);
			key_add(&k, t->rank);
			key_add(&k, t->n_consumers);
			for (int d = 0; d < t->rank; d++) {
				key_add(&k, t->dims[d]);
				key_add(&k, side ? sig->out[i][d] : sig->in[i][d]);
			}
			bool first = side == 0 && first_reader[ti] == op;
			for (int j = 0; !side && j < i; j++)
				first = first && o->in[j] != ti;
			key_add(&k, t->role == TENSOR_PARAM && first);
		}
	}
	return k;
}

/* Fused mode: an output whose partial sums the edge completes (plan.c). */
static bool fused_out(const struct refine *F, const struct dist_op *d, int k)
{
	const struct op *o = &F->R->g->ops[d->op];
	if (F->p->mode != REDIST_FUSED || !d->out_partial[k].partial ||
	    F->R->g->tensors[o->out[k]].n_consumers != 1)
		return false;
	struct layout completed = d->out_partial[k];
	completed.partial = 0;
	return layout_same_placement(&completed, &d->out[k]);
}

static const struct layout *edge_src(const struct refine *F, const struct dist_op *d, int k)
{
	return fused_out(F, d, k) ? &d->out_partial[k] : &d->out[k];
}

/* Seconds of the edge src -> dst, remembered by the layout pair. */
static double edge_s(struct refine *F, const struct layout *src, const struct layout *dst)
{
	struct rkey k = {0x811c9dc5ull, 7};
	key_layout(&k, src);
	key_layout(&k, dst);
	struct rslot *e = rt_find(&F->edge, k);
	if (e && e->used)
		return e->s;
	double s = 0;
	if (!layout_same_placement(src, dst)) {
		struct arena *a = arena_new();
		struct diag_list quiet;
		diag_list_init(&quiet);
		struct redist r;
		struct est_op eo = {0};
		s = a && redist_derive(a, src, dst, &r, &quiet) ? est_edge_s(F->E, src, &r, &eo)
		                                                : HUGE_VAL;
		diag_list_free(&quiet);
		arena_free(a);
	}
	if (e)
		*e = (struct rslot){.key = k, .used = true, .s = s};
	return s;
}

/* Seconds of op v by itself under d, remembered by structure and layouts. */
static double op_s(struct refine *F, const struct dist_op *d)
{
	const struct op *o = &F->R->g->ops[d->op];
	bool drop = false;
	struct rkey k = F->skey[d->op];
	key_add(&k, 0x0b);
	for (int i = 0; i < d->n_in; i++)
		key_layout(&k, &d->in[i]);
	for (int j = 0; j < d->n_out; j++) {
		key_layout(&k, &d->out_partial[j]);
		key_layout(&k, &d->out[j]);
		drop = drop || fused_out(F, d, j);
	}
	key_add(&k, drop ? 0 : d->n_comm);
	key_add(&k, d->n_grad);
	key_double(&k, d->flops_per_rank);
	key_double(&k, d->bytes_per_rank);
	(void)o;
	struct rslot *e = rt_find(&F->opc, k);
	if (e && e->used)
		return e->s;
	struct dist_op dd = *d;
	if (drop)
		dd.n_comm = 0;
	struct est_op eo;
	double s = est_op_s(F->E, &dd, &eo);
	if (e)
		*e = (struct rslot){.key = k, .used = true, .s = s};
	return s;
}

/* Op v under d with its neighbours as they are: its own seconds and those
 * of the redistributions on its edges. */
static double cand_s(struct refine *F, int v, const struct dist_op *d)
{
	const struct graph *g = F->R->g;
	const struct op *o = &g->ops[v];
	double s = op_s(F, d);
	for (int j = 0; j < o->n_in; j++) {
		int t = o->in[j], prod = g->tensors[t].producer;
		if (prod >= 0)
			s += edge_s(F, edge_src(F, &F->p->ops[prod], plan_output_index(&g->ops[prod], t)),
			            &d->in[j]);
	}
	for (int k = 0; k < o->n_out; k++) {
		int t = o->out[k];
		for (int u = F->use_start[t]; u < F->use_start[t + 1]; u++)
			s += edge_s(F, edge_src(F, d, k), &F->p->ops[F->uses[u].op].in[F->uses[u].in]);
	}
	return s;
}

/* Every other reader of a parameter of v reads it in d's placement. */
static bool params_agree(const struct refine *F, int v, const struct dist_op *d)
{
	const struct graph *g = F->R->g;
	const struct op *o = &g->ops[v];
	for (int j = 0; j < o->n_in; j++) {
		int t = o->in[j];
		if (g->tensors[t].role != TENSOR_PARAM || g->tensors[t].n_consumers < 2)
			continue;
		for (int u = F->use_start[t]; u < F->use_start[t + 1]; u++)
			if (F->uses[u].op != v &&
			    !layout_same_placement(&F->p->ops[F->uses[u].op].in[F->uses[u].in], &d->in[j]))
				return false;
	}
	return true;
}

/* The decision's key: the op's structure, its own layouts, its
 * neighbours' layouts and the placements its shared parameters must keep. */
static struct rkey decision_key(const struct refine *F, int v)
{
	const struct graph *g = F->R->g;
	const struct op *o = &g->ops[v];
	const struct dist_op *d = &F->p->ops[v];
	struct rkey k = F->skey[v];
	key_add(&k, 0xdec);
	for (int i = 0; i < d->n_in; i++)
		key_layout(&k, &d->in[i]);
	for (int j = 0; j < d->n_out; j++)
		key_layout(&k, &d->out_partial[j]);
	for (int j = 0; j < o->n_in; j++) {
		int t = o->in[j], prod = g->tensors[t].producer;
		if (prod >= 0)
			key_layout(&k, edge_src(F, &F->p->ops[prod], plan_output_index(&g->ops[prod], t)));
		for (int u = F->use_start[t]; g->tensors[t].role == TENSOR_PARAM &&
		                                u < F->use_start[t + 1]; u++)
			if (F->uses[u].op != v)
				key_layout(&k, &F->p->ops[F->uses[u].op].in[F->uses[u].in]);
	}
	for (int j = 0; j < o->n_out; j++) {
		int t = o->out[j];
		for (int u = F->use_start[t]; u < F->use_start[t + 1]; u++)
			key_layout(&k, &F->p->ops[F->uses[u].op].in[F->uses[u].in]);
	}
	return k;
}

/* The best candidate for v, or -1 when none beats its current strategy. */
static int best_candidate(struct refine *F, int v, const struct strategy *cand, int n)
{
	struct diag_list quiet;
	diag_list_init(&quiet);
	double best = cand_s(F, v, &F->p->ops[v]);
	int win = -1;
	for (int i = 0; i < n; i++) {
		struct dist_op d;
		if (!dist_op_from_cuts(F->scratch, F->R->g, v,
		                       (const int64_t(*)[GRAPH_MAX_RANK])cand[i].cuts, F->R->P, &d,
		                       &quiet) ||
		    !params_agree(F, v, &d))
			continue;
		double s = cand_s(F, v, &d);
		if (s < best - 1e-12 * best) {
			best = s;
			win = i;
		}
	}
	diag_list_free(&quiet);
	return win;
}

/* Builds the winning strategy of op v into the plan's arena; its index,
 * or -1 (with F->oom when memory ran out). */
static int add_winner(struct refine *F, int v, const struct strategy *st)
{
	struct diag_list quiet;
	diag_list_init(&quiet);
	struct dist_op d;
	bool ok = dist_op_from_cuts(F->R->a, F->R->g, v, (const int64_t(*)[GRAPH_MAX_RANK])st->cuts,
	                            F->R->P, &d, &quiet);
	diag_list_free(&quiet);
	struct dist_op *grown = ok ? arena_grow(F->R->a, F->win, (size_t)F->n_win,
	                                        (size_t)F->n_win + 1, sizeof(*grown)) : NULL;
	if (!grown) {
		F->oom = ok;
		return -1;
	}
	d.source = STRATEGY_PLANNED;
	d.from_op = -1;
	grown[F->n_win] = d;
	F->win = grown;
	return F->n_win++;
}

/* Refines op v; true when its strategy changed. */
static bool refine_op(struct refine *F, int v)
{
	struct rkey k = decision_key(F, v);
	struct rslot *e = rt_find(&F->dec, k);
	int win;
	if (e && e->used) {
		win = e->win;
	} else {
		F->scratch = arena_new();
		if (!F->scratch) {
			F->oom = true;
			return false;
		}
		struct strategy *cand;
		int n = plan_enumerate(F->scratch, F->R->g, v, F->R->P, F->all_devices, &cand);
		int i = best_candidate(F, v, cand, n);
		win = i >= 0 ? add_winner(F, v, &cand[i]) : -1;
		if (e)
			*e = (struct rslot){.key = k, .used = true, .win = win};
		arena_free(F->scratch);
		F->scratch = NULL;
	}
	if (win < 0)
		return false;
	/* Ops of one structure share the winner's layouts and steps: nothing
	 * downstream writes into them. */
	F->p->ops[v] = F->win[win];
	F->p->ops[v].op = v;
	return true;
}

static bool refine_init(struct refine *F, struct rec *R, struct plan *p)
{
	memset(F, 0, sizeof(*F));
	F->R = R;
	F->p = p;
	F->all_devices = R->s->propagation.all_devices;
	struct diag_list quiet;
	diag_list_init(&quiet);
	int64_t steps = est_steps(R->s, &quiet);
	diag_list_free(&quiet);
	F->E = est_ctx_new(R->s, steps, (size_t)1 << 16, &F->sink);
	F->skey = arena_alloc(R->a, sizeof(*F->skey) * ((size_t)R->g->n_ops + 1));
	if (!F->E || !F->skey || !index_uses(F))
		return false;
	/* The first reader of each parameter: the op its uses list starts with. */
	int *first = arena_alloc(R->a, sizeof(int) * ((size_t)R->g->n_tensors + 1));
	if (!first)
		return false;
	for (int t = 0; t < R->g->n_tensors; t++)
		first[t] = F->use_start[t] < F->use_start[t + 1] ? F->uses[F->use_start[t]].op : -1;
	for (int i = 0; i < R->g->n_ops; i++)
		F->skey[i] = structure_key(R, i, first);
	return true;
}

static void refine_free(struct refine *F)
{
	est_ctx_free(F->E);
	arena_free(F->scratch);
	free(F->edge.slots);
	free(F->opc.slots);
	free(F->dec.slots);
}

/* Coordinate descent on p's ops (their edges are re-derived afterwards). */
/* Refines p in place with F's memos (decisions depend on an op's
 * structure and its neighbours' layouts, not on which plan asks, so
 * several starts share them). */
static bool refine(struct refine *F, struct plan *p)
{
	bool ok = true;
	F->p = p;
	for (int pass = 0; ok && pass < REFINE_PASSES; pass++) {
		bool changed = false;
		for (int v = 0; ok && v < F->R->g->n_ops; v++) {
			if (F->R->n[v].fixed)
				continue;
			changed = refine_op(F, v) || changed;
			ok = !F->oom;
		}
		if (!changed)
			break;
	}
	return ok && !est_ctx_oom(F->E);
}

/* ------------------------------------------------------ the two searches */

/* One level-by-level search in R's mode, built into a copy of the
 * configured plan. */
static struct plan *search_plan(struct rec *R, const struct plan *configured, bool across,
                                struct diag_list *diags)
{
	struct plan *p = arena_alloc(R->a, sizeof(*p));
	struct dist_op *ops = arena_alloc(R->a, sizeof(*ops) * ((size_t)R->g->n_ops + 1));
	if (!p || !ops)
		return NULL;
	*p = *configured;
	memcpy(ops, configured->ops, sizeof(*ops) * (size_t)R->g->n_ops);
	p->ops = ops;
	p->edges = NULL;
	p->n_edges = 0;
	p->alike = NULL; /* plan_derive_edges finds them again */
	R->plan = p;
	level_strides(R, across);
	reset_nodes(R);
	search(R);
	assign_elementwise(R);
	fix_ups(R);
	return build_plan(R, diags) ? p : NULL;
}

/* Topology mode tries both placements of the levels and keeps the order
 * whose search total is cheaper; the reference has a single order. */
static bool across_first(struct rec *R)
{
	if (R->mode != REC_COST_TOPOLOGY || R->t->servers <= 1 || R->P <= R->t->devices_per_server)
		return true;
	level_strides(R, false);
	reset_nodes(R);
	search(R);
	double inside_first = R->total;
	level_strides(R, true);
	reset_nodes(R);
	search(R);
	return R->total <= inside_first;
}

/* plan_estimate's iteration time, +inf when it fails. */
static double iteration_s(const struct plan *p)
{
	struct arena *a = arena_new();
	struct diag_list quiet;
	diag_list_init(&quiet);
	struct estimate e;
	double s = a && plan_estimate(a, p, &e, &quiet) ? e.iteration_s : HUGE_VAL;
	diag_list_free(&quiet);
	arena_free(a);
	return s;
}

/* A copy of p's ops (the refinement changes them in place). */
static struct plan *plan_copy(struct arena *a, const struct plan *p)
{
	struct plan *c = arena_alloc(a, sizeof(*c));
	struct dist_op *ops = arena_alloc(a, sizeof(*ops) * ((size_t)p->graph->n_ops + 1));
	if (!c || !ops)
		return NULL;
	*c = *p;
	memcpy(ops, p->ops, sizeof(*ops) * (size_t)p->graph->n_ops);
	c->ops = ops;
	c->alike = NULL; /* the refinement changes the ops: plan_derive_edges finds them again */
	return c;
}

/* Does every parameter read by several ops sit the same way in each? */
static bool params_consistent(const struct plan *p)
{
	const struct graph *g = p->graph;
	for (int t = 0; t < g->n_tensors; t++) {
		if (g->tensors[t].role != TENSOR_PARAM || g->tensors[t].n_consumers < 2)
			continue;
		const struct layout *first = NULL;
		for (int o = 0; o < g->n_ops; o++)
			for (int j = 0; j < g->ops[o].n_in; j++) {
				if (g->ops[o].in[j] != t)
					continue;
				if (!first)
					first = &p->ops[o].in[j];
				else if (!layout_same_placement(first, &p->ops[o].in[j]))
					return false;
			}
	}
	return true;
}

/* A baseline plan (data parallel or Megatron) with the scenario's
 * configured ops put back as configured, so that it can start the
 * refinement; NULL when the baseline does not apply (a batch that does
 * not split, say). */
static struct plan *baseline_start(struct rec *R, const struct plan *configured,
                                   struct plan *(*planner)(struct arena *,
                                                           const struct scenario *,
                                                           const struct plan_options *,
                                                           struct diag_list *))
{
	struct diag_list quiet;
	diag_list_init(&quiet);
	struct plan_options o = {.mode = configured->mode, .rec_cost = REC_COST_TOPOLOGY};
	struct plan *b = planner(R->a, configured->scenario, &o, &quiet);
	struct plan *p = b ? plan_copy(R->a, b) : NULL;
	if (p)
		p->whole_layers = false; /* a start for the search, no longer Megatron-LM's */
	for (int i = 0; p && i < p->graph->n_ops; i++)
		if (configured->ops[i].source == STRATEGY_CONFIGURED)
			p->ops[i] = configured->ops[i];
	if (p && !params_consistent(p))
		p = NULL; /* a configured op and the baseline place a shared weight apart */
	if (p) {
		p->edges = NULL;
		p->n_edges = 0;
		if (!plan_derive_edges(R->a, p, &quiet))
			p = NULL;
	}
	diag_list_free(&quiet);
	return p;
}

/* A refined copy of `start`, or `start` itself when refining does not
 * improve its estimate (est_s); *out_s gets the result's estimate. */
static struct plan *refined(struct rec *R, struct refine *F, struct plan *start, double est_s,
                            double *out_s, struct diag_list *diags)
{
	*out_s = est_s;
	struct plan *p = plan_copy(R->a, start);
	if (!p || !refine(F, p))
		return start;
	p->edges = NULL;
	p->n_edges = 0;
	if (!plan_derive_edges(R->a, p, diags))
		return NULL;
	double s = iteration_s(p);
	if (s > est_s)
		return start;
	*out_s = s;
	return p;
}

/* Topology mode: the topology and the reference search and the baselines
 * (data parallel, Megatron, with the configured ops kept) each refined by
 * the estimate's prices; the best result. A local search ends in the
 * optimum nearest its start, so every start gets its own. */
static struct plan *topology_plan(struct rec *R, const struct plan *configured,
                                  struct diag_list *diags)
{
	struct plan *tp = search_plan(R, configured, across_first(R), diags);
	if (!tp)
		return NULL;
	R->mode = REC_COST_MINDSPORE;
	struct plan *ms = search_plan(R, configured, true, diags);
	R->mode = REC_COST_TOPOLOGY;
	if (!ms)
		return NULL;
	struct plan *starts[4] = {tp, ms, baseline_start(R, configured, plan_data_parallel),
	                          baseline_start(R, configured, plan_megatron)};
	/* Cheapest start first; a start more than twice as slow as the best
	 * result so far is not refined (a local search from that far off is
	 * not worth its time on large graphs), though it still competes. */
	double est[4];
	int order[4], n = 0;
	for (int k = 0; k < 4; k++) {
		est[k] = starts[k] ? iteration_s(starts[k]) : HUGE_VAL;
		if (!starts[k])
			continue;
		int j = n++;
		while (j > 0 && est[order[j - 1]] > est[k]) {
			order[j] = order[j - 1];
			j--;
		}
		order[j] = k;
	}
	struct plan *best = NULL;
	double best_s = HUGE_VAL;
	struct refine F;
	bool ok = refine_init(&F, R, tp);
	for (int i = 0; ok && i < n; i++) {
		int k = order[i];
		double s = est[k];
		struct plan *p = est[k] > 2 * best_s ? starts[k]
		                                     : refined(R, &F, starts[k], est[k], &s, diags);
		ok = p != NULL;
		if (p && s < best_s) {
			best = p;
			best_s = s;
		}
	}
	refine_free(&F);
	return ok ? best : NULL;
}

struct plan *plan_recursive(struct arena *a, const struct scenario *s,
                            const struct plan_options *o, struct diag_list *diags)
{
	struct rec R;
	if (!rec_init(&R, a, s, o, diags))
		return NULL;
	const struct plan *configured = R.plan;
	if (R.mode == REC_COST_TOPOLOGY)
		return topology_plan(&R, configured, diags);
	return search_plan(&R, configured, true, diags);
}

/* ------------------------------------------------------ plan_rec_cost */

/* The reference's cost of a complete plan: for each op, its cuts replayed
 * as levels (labels in signature order, prime factors ascending), each
 * level's per-op cost at the local sizes of that moment; plus 16 x the
 * consumer's local size for every edge that redistributes. */
double plan_rec_cost(const struct plan *p)
{
	const struct graph *g = p->graph;
	struct rec R = {.g = g};
	double sum = 0;
	for (int i = 0; i < g->n_ops; i++) {
		struct rnode v;
		memset(&v, 0, sizeof v);
		if (!graph_op_signature(g, i, &v.sig))
			continue;
		v.cls = classify(&v.sig);
		for (int l = 0; l < SIG_MAX_LABELS; l++)
			v.cut[l] = 1;
		int64_t want[SIG_MAX_LABELS] = {0};
		fixed_cuts(&v, &p->ops[i]);
		memcpy(want, v.cut, sizeof want);
		for (int l = 0; l < SIG_MAX_LABELS; l++)
			v.cut[l] = 1;
		for (int l = 0; l < v.sig.n_labels; l++) {
			int64_t f[REC_MAX_LEVELS];
			int n = prime_levels(want[l], f);
			for (int k = 0; k < n; k++) {
				sum += ms_op_cost(&R, &v, i, l, REC_C_ROW);
				v.cut[l] *= f[k];
			}
		}
	}
	for (int e = 0; e < p->n_edges; e++)
		if (p->edges[e].redist.n_steps > 0)
			sum += REC_REDIST_WEIGHT *
			       (double)layout_local_elems(&p->ops[p->edges[e].consumer]
			                                       .in[p->edges[e].consumer_in]);
	return sum;
}
