/* recursive.c — MindSpore's double-recursive strategy search (DESIGN.md,
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
 * with the level's real rank group (cost_collective_s, cost_compute_s).
 *
 * Units: element counts (mindspore mode), seconds (topology mode), bytes.
 * Hot path: the inner loop, ops x levels x labels x neighbours; the
 * topology mode costs one group (the level's ranks) per candidate.
 */
#include <math.h>
#include <string.h>

#include "planner-int.h"

const char *const rec_cost_names[REC_COST_COUNT] = {"topology", "mindspore"};

/* The reference's constants (DESIGN.md): c of the MatMul row cut (0.25 in
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

/* The reference's per-op cost of cutting label l (DESIGN.md): a kept label
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

/* Forward and backward compute of op with `extra` more slices, seconds. */
static double topo_compute_s(const struct rec *R, int op, const struct rnode *v, int64_t extra)
{
	const struct op *o = &R->g->ops[op];
	double f = (double)(used(v) * extra);
	return cost_compute_s(&R->t->device, o->dtype, 3 * o->flops / f,
	                      3 * (o->bytes_read + o->bytes_written) / f, NULL);
}

/* Topology mode: the collectives cutting l over this level's group costs
 * (partial sums completed in the forward pass; the gradients of inputs
 * replicated along the cut all-reduced in the backward pass) plus the
 * compute left on each device. */
static double topo_op_cost(struct rec *R, const struct rnode *v, int op, int l, int lvl)
{
	const struct op_sig *sig = &v->sig;
	double s = topo_compute_s(R, op, v, R->factor[lvl]);
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
		double c = R->mode == REC_COST_MINDSPORE ? ms_op_cost(R, v, op, l, REC_C_ROW)
		                                         : topo_op_cost(R, v, op, l, lvl);
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
	                  : topo_compute_s(R, op, v, 1);
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
		for (int i = g->n_ops - 1; i >= 0; i--)
			if (!R->n[i].fixed && R->n[i].cls != RC_ELEMWISE)
				R->total += choose(R, i, lvl);
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
	R->plan = plan_configured(a, s, o->mode, diags);
	if (!R->plan)
		return false;
	R->P = R->plan->n_devices;
	R->n_levels = prime_levels(R->P, R->factor);
	R->group = arena_alloc(a, sizeof(int64_t) * (size_t)(R->P + 1));
	R->n = arena_calloc(a, (size_t)R->g->n_ops + 1, sizeof(*R->n));
	if (!R->group || !R->n)
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

struct plan *plan_recursive(struct arena *a, const struct scenario *s,
                            const struct plan_options *o, struct diag_list *diags)
{
	struct rec R;
	if (!rec_init(&R, a, s, o, diags))
		return NULL;
	/* Topology mode tries both placements of the levels and keeps the
	 * cheaper search; the reference has a single order. */
	bool across = true;
	if (R.mode == REC_COST_TOPOLOGY && R.t->servers > 1 && R.P > R.t->devices_per_server) {
		level_strides(&R, false);
		reset_nodes(&R);
		search(&R);
		double inside_first = R.total;
		level_strides(&R, true);
		reset_nodes(&R);
		search(&R);
		across = R.total <= inside_first;
	}
	level_strides(&R, across);
	reset_nodes(&R);
	search(&R);
	assign_elementwise(&R);
	fix_ups(&R);
	if (!build_plan(&R, diags))
		return NULL;
	return R.plan;
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
