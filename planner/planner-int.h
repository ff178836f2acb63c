/* planner-int.h — details shared by the planner's files, not part of its
 * public interface. */
#ifndef SHARDLAB_PLANNER_INT_H
#define SHARDLAB_PLANNER_INT_H

#include "planner.h"

/* Rewrites two layouts over one device matrix: the coarsest matrix whose
 * axes refine the axes of both (an axis of 4 that the other side cuts as
 * 2 x 2 becomes two axes of 2). The tensor maps and partial sets follow;
 * axes of size 1 disappear. False when the two matrices have no common
 * refinement (2 x 3 against 3 x 2) or cover different ranks. */
bool layout_refine(const struct layout *a, const struct layout *b, struct layout *ra,
                   struct layout *rb);

/* The axes over which copies of the tensor are replicated: used by no
 * dimension and not partial, with size > 1, as a bit mask. */
uint32_t layout_replica_axes(const struct layout *l);

/* The bytes per device redist_derive would find, without building rank
 * groups (a cost query); -1 when there is no redistribution. */
double redist_bytes(const struct layout *src, const struct layout *dst);

/* The plan search's fastest configuration that fits (search.c). */
struct plan *plan_megatron_search(struct arena *a, const struct scenario *s,
                                  const struct plan_options *o, struct diag_list *diags);

/* Which output of op p is tensor t (it must be one). */
int plan_output_index(const struct op *p, int t);

/* The estimator's pricing (estimate.c): plan_estimate is built from it,
 * and the recursive search's refinement prices candidates with it, so the
 * two agree by construction. A context holds the topology, the steps per
 * iteration, a memo of collective times (memo_slots entries; more make
 * big searches faster, never different) and each parameter's first
 * reader; categories and memory accumulate into *e. */
struct est_ctx;
struct est_ctx *est_ctx_new(const struct scenario *s, int64_t steps, size_t memo_slots,
                            struct estimate *e);
void est_ctx_free(struct est_ctx *c);
/* Rank groups could not be built: the prices since are not to be trusted. */
bool est_ctx_oom(const struct est_ctx *c);
/* Graph executions per iteration (global batch / graph batch; a warning
 * when it does not divide). */
int64_t est_steps(const struct scenario *s, struct diag_list *diags);
/* The seconds op d adds to an iteration by itself: steps x (forward and
 * backward compute, its own forward collectives, their mirrors, the
 * input-gradient all-reduce) + the gradient synchronisation and optimizer
 * update of the parameters it is the first op to read. *eo is reset and
 * filled. */
double est_op_s(struct est_ctx *c, const struct dist_op *d, struct est_op *eo);
/* The seconds a redistribution adds: steps x (its steps forward, from
 * `start`, + their mirrors); added into *eo (the consumer's). */
double est_edge_s(struct est_ctx *c, const struct layout *start, const struct redist *r,
                  struct est_op *eo);

/* The compute model with its parameters resolved for one device and
 * dtype (cost_compute_s; the calibration fits these): the asymptotic GEMM
 * rate peak · η_max, the half-dimension, the sustained memory bandwidth
 * hbm · η_mem and the per-kernel overhead. */
struct cost_kernel_model {
	double gemm_flops;     /* FLOP/s */
	double half_dim;       /* elements; 0: no shape factor */
	double memory_bps;     /* bytes/s; INFINITY: no memory floor */
	double overhead_s;
};
/* g(x) = x / (x + half_dim), 1 when half_dim is 0. */
static inline double cost_shape_factor(double x, double half_dim)
{
	return half_dim > 0 ? x / (x + half_dim) : 1;
}
/* The model's seconds for work w (planner.h, cost_compute_s). */
double cost_kernel_s(const struct cost_kernel_model *p, const struct cost_work *w);
/* The device's peak for dtype dt; a dtype without one takes the fastest
 * floating peak and sets *fallback (if not NULL). */
double cost_device_peak(const struct topo_device *d, enum dtype dt, bool *fallback);

/* A collective's time as a line in its message S: fixed_s + per_byte_s x S
 * (every formula of cost.c is linear in S). */
struct cost_line {
	double fixed_s, per_byte_s;
};
struct cost_line cost_collective_line(const struct topology *t, enum step_kind kind,
                                      const int64_t *ranks, int n);
/* The distinct lines of a step's groups (groups of one shape share one),
 * at most max; -1 when there are more. */
int cost_groups_lines(const struct topology *t, enum step_kind kind, const struct rank_groups *g,
                      struct cost_line *lines, int max);
/* The slowest of those lines at S bytes. */
double cost_lines_max(const struct cost_line *lines, int n, double bytes);

/* Every algorithm's line for one group (planner.h, cost_choose_algo):
 * line[algo] for each algorithm but COLL_AUTO, `applicable` a bit per
 * algorithm that applies to this kind and group (the ring always); an
 * algorithm that does not apply carries the ring's line. cost_collective_s
 * is line[COLL_HIERARCHICAL] where that applies, else line[COLL_RING]. */
struct cost_algo_lines {
	unsigned applicable;
	struct cost_line line[COLL_COUNT];
};
void cost_algo_lines_of(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                        int n, struct cost_algo_lines *out);
/* The rule at S bytes: `wanted` where it applies, else the least time
 * among the applicable algorithms (ties: ring, hierarchical,
 * halving-doubling, tree, direct); its time into *seconds if not NULL. */
enum collective_algo cost_algo_pick(const struct cost_algo_lines *l, double bytes,
                                    enum collective_algo wanted, double *seconds);
/* The distinct algorithm lines of a step's groups, at most max; -1 when
 * there are more. */
int cost_groups_algo_lines(const struct topology *t, enum step_kind kind,
                           const struct rank_groups *g, struct cost_algo_lines *lines, int max);
/* The slowest group at S bytes, each group timed by the rule's choice. */
double cost_algo_lines_max(const struct cost_algo_lines *lines, int n, double bytes,
                           enum collective_algo wanted);
/* The same from the groups (cost_groups_s with the rule). */
double cost_groups_algo_s(const struct topology *t, enum step_kind kind,
                          const struct rank_groups *g, double bytes, enum collective_algo wanted);

/* ------------------------------------------- the collectives of a plan */

/* One collective a plan implies: what the estimate prices and the
 * lowering emits (estimate.c lists them; both files use the lists). */
enum plan_coll_role {
	PCOLL_FORWARD,       /* an op's own collective, a redistribution or gradient sync step */
	PCOLL_MIRROR,        /* the backward mirror of a forward step */
	PCOLL_INPUT_GRAD,    /* the all-reduce of an input's gradient (Megatron's "f") */
};

struct plan_coll {
	enum plan_coll_role role;
	enum step_kind kind;
	struct rank_groups groups;
	double bytes;                     /* S of the formulas (cost_collective_s) */
	int index;                        /* the step (forward, mirror) or input (others) it comes from */
};

/* Receives the collectives in the order they are listed. */
struct plan_coll_sink {
	void (*add)(void *ctx, const struct plan_coll *c);
	void *ctx;
};

/* The collectives of forward steps, in order (Slice and Reshape move
 * nothing; groups of one rank neither). */
void plan_colls_forward(const struct comm_step *steps, int n, struct plan_coll_sink *k);
/* Their mirrors in backward, last step first: AllGather <-> ReduceScatter
 * and AllToAll on the same groups and message, StridedSlice -> AllGather
 * of the slices, AllReduce -> none. `start` is the layout before the
 * first step. False when rank groups could not be built. */
bool plan_colls_backward(const struct comm_step *steps, int n, const struct layout *start,
                         struct plan_coll_sink *k);
/* The all-reduce of each non-parameter input's gradient over the axes the
 * op's tensors use and the input's own map does not, in input order,
 * except the inputs in `fused` (bit i: input i). False when rank groups
 * could not be built. */
bool plan_colls_input_grads(const struct graph *g, const struct dist_op *d, uint32_t fused,
                            struct plan_coll_sink *k);
/* Per op, the inputs (bit i) whose input-gradient all-reduce is not
 * needed:
 * - a tensor read by several ops that hold the same slices of it, their
 *   gradients partial over the same groups: the later readers' shares
 *   are added to the first reader's locally, and only the first
 *   reader's all-reduce runs (q, k and v reading one norm's output: one
 *   all-reduce, as with Megatron's fused QKV);
 * - the AllGather that feeds the input gathers over the very groups its
 *   gradient is partial over: its mirror, a ReduceScatter, completes and
 *   splits the gradient at once (Megatron's sequence parallelism: the
 *   column-parallel input's AllGather forward, one ReduceScatter
 *   backward).
 * NULL when out of memory. */
uint32_t *plan_fused_input_grads(struct arena *a, const struct plan *p);

/* Per tensor: the first op reading it as a parameter, else -1 (arena;
 * NULL when out of memory). The _range form looks at ops [lo, hi) only
 * (a pipeline chunk holds the parameters its own ops read). */
int *plan_first_readers(struct arena *a, const struct graph *g);
int *plan_first_readers_range(struct arena *a, const struct graph *g, int lo, int hi);
/* The parameters op d is the first to read, in input order: their input
 * indices into inputs[], and their gradient synchronisation step into
 * sync[] (NULL when the parameter is not replicated). Returns the count. */
int plan_op_params(const struct graph *g, const int *first_reader, const struct dist_op *d,
                   int inputs[SIG_MAX_TENSORS], const struct comm_step *sync[SIG_MAX_TENSORS]);
/* The layout a redistribution starts from: the producer's partial output
 * when its first step completes partial sums, else its output. */
const struct layout *plan_edge_start(const struct plan *p, const struct plan_edge *x);

/* A gradient bucket: parameters' gradient all-reduces of one kind and
 * groups fused in backward order, completed by op last_op's backward. */
struct plan_bucket {
	enum step_kind kind;
	struct rank_groups groups;
	double bytes;
	int n;                            /* gradients fused */
	int last_op;
	const char *first;                /* the first parameter's name */
	int *ops;                         /* [n] the op completing each gradient */
	double *op_bytes;                 /* [n] each gradient's bytes */
};
/* The buckets of the ops [lo, hi) of a plan (a chunk) at most bucket_bytes
 * each (0: one per parameter), in the order they complete; -1 when out of
 * memory. Lowering runs them on stream 1; the estimate prices them. With
 * ZeRO (stage >= 1) they are ReduceScatters on the same groups. */
int plan_gradient_buckets(struct arena *a, const struct plan *p, int lo, int hi,
                          double bucket_bytes, struct plan_bucket **out);
/* Is the op in an attention core (a BatchMatMul feeding a Softmax, the
 * Softmax, and element-wise ops after it up to the next BatchMatMul):
 * what selective recomputation redoes. Per op (arena), NULL on OOM. */
bool *plan_attention_core(struct arena *a, const struct graph *g);
/* Time of a point-to-point message between two ranks: latency + S /
 * the bottleneck of their path. */
double cost_p2p_s(const struct topology *t, int64_t src, int64_t dst, double bytes);

/* Bitmask helpers. */
static inline int axis_popcount(uint32_t m)
{
	int n = 0;
	for (; m; m &= m - 1)
		n++;
	return n;
}

#endif
