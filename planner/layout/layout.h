/* layout.h — the algebra of sharding, without costs (seeds 000, 002, 004).
 *
 * - Device matrices and tensor layouts (MindSpore semantics): a device
 *   matrix is a list of axis sizes, major first, laid out row-major over
 *   ranks base .. base+N-1; a layout says, for each dimension of a tensor,
 *   which axes split it (major first). Axes that split no dimension
 *   replicate the tensor; axes in `partial` hold partial sums still to be
 *   reduced.
 * - Distributed operators: from an op's dimension signature (models/) and
 *   a strategy, the op's device matrix, its tensors' layouts, the
 *   communication the op itself needs, per-rank FLOPs and bytes, and the
 *   gradient synchronisation of its parameters.
 * - Redistribution: the collective steps that turn one layout of a tensor
 *   into another, with explicit rank groups and bytes sent per device.
 * - Plans: a distributed op for every op of a scenario's graph and a
 *   redistribution on every edge, and the collectives a plan implies
 *   (mirrors in backward, input-gradient all-reduces, gradient buckets),
 *   which the cost model prices and the simulator's lowering emits.
 *
 * Which strategy each op gets is the strategies' business (planner.h);
 * what a plan costs is the cost model's (cost.h).
 *
 * Units: element counts int64_t; bytes and FLOPs double. Bytes sent per
 * device follow the ring algorithms (docs/planner.md): AllGather (s-1)·L,
 * ReduceScatter (s-1)/s·L, AllReduce 2(s-1)/s·L, AllToAll (s-1)/s·L, with
 * L the bytes a device holds before the step and s the group size.
 *
 * Data flow: util, models, topologies, scenarios -> layout -> cost ->
 * planner -> sim. Nothing here prices, prints or simulates.
 */
#ifndef SHARDLAB_LAYOUT_H
#define SHARDLAB_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>

#include "models.h"
#include "scenarios.h"
#include "topologies.h"
#include "util.h"

#define PLAN_MAX_AXES 16

/* ------------------------------------------------------------ layouts */

struct devmat {
	int n;                            /* axes */
	int64_t size[PLAN_MAX_AXES];      /* major first; sizes >= 1 */
	const char *name[PLAN_MAX_AXES];  /* NULL where the axis has no name */
	int64_t base;                     /* first rank */
	int64_t n_devices;                /* product of sizes */
};

struct layout {
	struct devmat dm;
	enum dtype dtype;
	int rank;
	int64_t shape[GRAPH_MAX_RANK];                  /* the whole tensor */
	int n_map[GRAPH_MAX_RANK];
	int8_t map[GRAPH_MAX_RANK][PLAN_MAX_AXES];      /* axes splitting each dim, major first */
	uint32_t partial;                               /* bit a: partial sums over axis a */
};

/* A layout as words: dtype, rank, shape, the device matrix's sizes and
 * first rank, each dimension's axes, the partial-sum axes. Equal words,
 * equal layouts (axis names aside); returns the count. */
#define LAYOUT_KEY_WORDS \
	(3 + GRAPH_MAX_RANK + PLAN_MAX_AXES + 1 + GRAPH_MAX_RANK * (1 + PLAN_MAX_AXES) + 1)
int layout_key(const struct layout *l, int64_t w[LAYOUT_KEY_WORDS]);

/* A device matrix from sizes (names may be NULL). False when the product
 * overflows or a size is < 1. */
bool devmat_init(struct devmat *dm, int n, const int64_t *sizes, const char *const *names,
                 int64_t base);
/* Coordinates of a rank (base <= rank < base + n_devices). */
void devmat_coords(const struct devmat *dm, int64_t rank, int64_t coord[PLAN_MAX_AXES]);
int64_t devmat_rank(const struct devmat *dm, const int64_t coord[PLAN_MAX_AXES]);

/* The groups of ranks that differ only in some axes of a device matrix: a
 * description, not a list (at 8,192 ranks the lists of a plan's
 * collectives would take gigabytes); rank_groups_rank computes any member.
 * A group's ranks are ordered by the axes' coordinates (the axes listed
 * major first, row-major); groups are ordered by their first rank. */
struct rank_groups {
	int n_groups;
	int size;                         /* ranks per group */
	struct devmat dm;
	int n_axes;
	int8_t axes[PLAN_MAX_AXES];
};

/* False when a count does not fit an int. */
bool devmat_groups(const struct devmat *dm, const int *axes, int n_axes, struct rank_groups *out);
/* Rank `member` of group `group` (0 <= group < n_groups, 0 <= member < size). */
int64_t rank_groups_rank(const struct rank_groups *g, int group, int member);
/* All ranks of one group, in collective order, into out[size]. */
void rank_groups_members(const struct rank_groups *g, int group, int64_t *out);
/* Rank groups as words however their device matrix is factored: size,
 * count, first rank, then the (size, stride) of the axes that count groups
 * and of those that count members, axes of size 1 left out and contiguous
 * ones merged. Equal words, the same ranks in the same groups and order.
 * Returns the count. */
#define RANK_GROUPS_KEY_WORDS (3 + 2 * (2 * PLAN_MAX_AXES + 1))
int rank_groups_key(const struct rank_groups *g, int64_t w[RANK_GROUPS_KEY_WORDS]);

/* A layout of a tensor of this shape with nothing split (maps filled by the
 * caller). */
void layout_init(struct layout *l, const struct devmat *dm, const struct tensor *t);
/* Number of slices of dimension d (product of its axes' sizes). */
int64_t layout_slices(const struct layout *l, int d);
/* The slice a rank holds: [lo[d], hi[d]) for every dimension. */
void layout_slice(const struct layout *l, int64_t rank, int64_t lo[GRAPH_MAX_RANK],
                  int64_t hi[GRAPH_MAX_RANK]);
void layout_local_shape(const struct layout *l, int64_t shape[GRAPH_MAX_RANK]);
int64_t layout_local_elems(const struct layout *l);
double layout_local_bytes(const struct layout *l);
/* Is every dimension divisible by its slices, every axis used at most
 * once, partial axes disjoint from splitting ones? */
bool layout_valid(const struct layout *l);
/* Same data on the same ranks (and the same partial-sum pattern), however
 * the two are described: size-1 axes and the factoring of axes into
 * device-matrix dimensions do not matter. */
bool layout_same_placement(const struct layout *a, const struct layout *b);
/* MindSpore's tensor map of dimension d: the axes counted from the right
 * (n-1 for the major axis), -1 when not split. Writes up to PLAN_MAX_AXES
 * entries, returns how many (0 means -1). */
int layout_tensor_map(const struct layout *l, int d, int out[PLAN_MAX_AXES]);

/* ------------------------------------------------------ communication */

enum step_kind {
	STEP_SLICE,          /* StridedSlice: keep a part, no traffic */
	STEP_ALLGATHER,      /* gather a split dimension (+ Concat when it is not dim 0) */
	STEP_ALLTOALL,       /* move a split from one dimension to another */
	STEP_ALLREDUCE,      /* complete partial sums */
	STEP_REDUCESCATTER,  /* complete partial sums, leaving the result split */
	STEP_RESHAPE,        /* local reshape of the slice */
	STEP_KIND_COUNT
};
extern const char *const step_kind_names[STEP_KIND_COUNT];

enum reduce_op { REDUCE_SUM, REDUCE_MAX };

struct comm_step {
	enum step_kind kind;
	enum reduce_op reduce;            /* AllReduce / ReduceScatter */
	int dim;                          /* dimension gathered, scattered or sliced; -1 if none */
	int to_dim;                       /* AllToAll: the dimension that becomes split */
	bool concat;                      /* AllGather: a Concat on `dim` follows (dim != 0) */
	struct rank_groups groups;        /* none (0 groups) for Slice and Reshape */
	double bytes_per_device;          /* sent by each device of a group */
	struct layout after;              /* the tensor's layout after this step */
	const char *why;                  /* a short reason, for reports */
};

enum redist_mode {
	REDIST_COMPAT,  /* as MindSpore: an op completes its partial sums with AllReduce */
	REDIST_FUSED,   /* partial sums may be completed by a ReduceScatter where the consumer splits */
};

struct redist {
	int n_steps;
	struct comm_step *steps;
	double bytes_per_device;          /* sum over the steps */
};

/* Steps turning `src` into `dst` (same tensor shape, same number of
 * devices and base), minimising the bytes each device sends. `dst` must
 * not be partial. Returns false (with a diagnostic) when no sequence of
 * steps exists, e.g. device matrices over different rank sets. */
bool redist_derive(struct arena *a, const struct layout *src, const struct layout *dst,
                   struct redist *out, struct diag_list *diags);

/* The bytes a device holds before a step (L in the byte formulas). */
double comm_step_bytes_in(const struct comm_step *st);

/* ------------------------------------------------- distributed operators */

enum strategy_source {
	STRATEGY_CONFIGURED,  /* the scenario's shard() */
	STRATEGY_PROPAGATED,  /* sharding propagation, from_op the op it came from */
	STRATEGY_DEFAULT,     /* data parallel: never reached, or nothing configured */
	STRATEGY_PLANNED,     /* a planner's own rule or search (recursive, baselines) */
	STRATEGY_SOURCE_COUNT
};
extern const char *const strategy_source_names[STRATEGY_SOURCE_COUNT];

struct dist_op {
	int op;                            /* graph op index */
	enum strategy_source source;
	int from_op;                       /* propagated: the op it came from; else -1 */
	struct devmat dm;
	int n_in, n_out;
	int64_t (*cuts)[GRAPH_MAX_RANK];   /* slices per input dimension (the tuple form) */
	struct layout *in;                 /* what the op reads */
	struct layout *out_partial;        /* what it computes (may hold partial sums) */
	struct layout *out;                /* what it hands on, after its own communication */
	int n_comm;
	struct comm_step *comm;            /* forward communication of the op itself */
	int n_grad;
	struct comm_step *grad;            /* backward: gradient AllReduce of its parameters */
	double flops_per_rank;
	double bytes_per_rank;             /* local inputs read + outputs written */
};

/* The distributed op for `op` under a shard() configuration. False with a
 * diagnostic saying why the strategy is not valid for the op. */
bool dist_op_from_config(struct arena *a, const struct graph *g, int op,
                         const struct shard_config *cfg, int64_t n_devices,
                         struct dist_op *out, struct diag_list *diags);
/* Would dist_op_from_cuts accept the cuts? Its checks without building
 * the op or saying why (the enumeration asks about every candidate). */
bool dist_op_cuts_valid(const struct graph *g, int op, const int64_t (*cuts)[GRAPH_MAX_RANK],
                        int64_t n_devices);
/* The same from cuts per input dimension (tuple form), for enumeration. */
bool dist_op_from_cuts(struct arena *a, const struct graph *g, int op,
                       const int64_t (*cuts)[GRAPH_MAX_RANK], int64_t n_devices,
                       struct dist_op *out, struct diag_list *diags);
/* Data parallel, as MindSpore gives unconfigured ops (seed 004): the
 * first dimension of the first non-parameter input cut over every device
 * when it divides, parameters replicated; otherwise fully replicated. */
bool dist_op_data_parallel(struct arena *a, const struct graph *g, int op, int64_t n_devices,
                           struct dist_op *out, struct diag_list *diags);

/* -------------------------------------------------------------- plans */

struct plan_edge {
	int tensor;
	int producer, producer_out;        /* producer -1: a graph input or parameter */
	int consumer, consumer_in;
	struct redist redist;
	double fused_saving_bytes;         /* compat minus fused bytes per device, >= 0 */
	int ring;                          /* >= 2: the redistribution, one AllGather over
	                                      groups of `ring` ranks, runs as a ring of ring - 1
	                                      steps under the consumer's compute (context
	                                      parallelism's K and V: (ring - 1)/ring of it, forward
	                                      and backward, hides the transfer); else 0 */
	int n_hide;                        /* training.tp_comm_overlap: the ops whose GEMMs run
	                                      alongside the edge's collectives, (ring - 1)/ring of
	                                      their forward under its forward collective and of
	                                      half their backward under its mirror (hide[0 ..
	                                      n_hide), ring the tensor-parallel degree); else 0 */
	int hide[3];
};

/* How propagation chose an op's strategy (zeros for configured ops). */
struct plan_choice {
	int n_candidates;                  /* valid strategies considered */
	int n_tied;                        /* candidates sharing the least edge cost */
	double edge_bytes;                 /* that least cost, bytes per device */
	bool param_conflict;               /* no candidate agreed with the layout another op gave a shared parameter */
};

struct search_result;

struct plan {
	const struct scenario *scenario;
	const struct graph *graph;
	enum redist_mode mode;
	int64_t n_devices;
	struct dist_op *ops;               /* one per graph op */
	struct plan_choice *choices;       /* one per graph op; NULL for plan_configured */
	int n_edges;
	struct plan_edge *edges;           /* edges whose layouts differ, in op order */
	int n_unreached;                   /* ops propagation never reached (data parallel) */
	int *alike;                        /* per op: the first op alike it (itself when none),
	                                      plan_find_alike; NULL: not known, every op stands alone */
	const struct search_result *search; /* megatron-search: the search whose first candidate
	                                       this plan is; else NULL */
	bool whole_layers;                 /* pipeline chunks of whole layers, as many each
	                                      (Megatron-LM's split); else cut where the chunks'
	                                      costs balance (plan_partition) */
};

/* Every op with its configured strategy, the others data parallel (the
 * propagation planner replaces that default). NULL after diagnostics. */
struct plan *plan_configured(struct arena *a, const struct scenario *s, enum redist_mode mode,
                             struct diag_list *diags);

/* The edges of a plan from its ops' layouts (plan_configured and
 * plan_propagate share it). */
bool plan_derive_edges(struct arena *a, struct plan *p, struct diag_list *diags);

/* Ops alike (structure hashing): p->alike[i] is the first op whose graph
 * words (graph_op_key), distributed op (every layout, collective and
 * gradient step) and inputs (whether produced, how many read them, the
 * redistribution into the op) equal op i's; i itself when none does. An
 * op alike an earlier one costs what it costs, so the estimate prices one
 * op per class. plan_derive_edges calls it; a planner that changes p->ops
 * or p->edges afterwards calls it again. False when out of memory
 * (p->alike is then NULL, which is always correct). */
bool plan_find_alike(struct arena *a, struct plan *p);
/* training.tp_comm_overlap: per op, the edge whose hiding MatMuls also run
 * beside the all-reduce of the op's input gradient (the first of them,
 * which sums the others' partial gradients of a norm's output gathered
 * before them: q of q, k and v), or -1. NULL when no edge does (nothing to
 * allocate) or out of memory (*oom set). */
int *plan_grad_hiders(struct arena *a, const struct plan *p, bool *oom);

/* How a plan cuts the model, as a user names it: the tensor-parallel
 * degree, the data-parallel degree (context parallelism's share of it
 * apart: the scenario's training.context_parallel), the copies of the
 * whole (pipeline stages or ops run apart), the largest expert-parallel
 * degree, from the pattern (TP, DP, copies) of the ops holding weights
 * that carries the most FLOPs; `share` that pattern's part of the FLOPs.
 * An op's TP is the slices of its largest weight (a batched weight's
 * leading dimension, the experts of a mixture, is EP, and those ops leave
 * the pattern to the rest). */
struct plan_shape {
	int64_t tp, cp, dp, copies, ep;
	double share;
	bool compute;                      /* false: no op computes (the rest is 1) */
};
void plan_shape(const struct plan *p, struct plan_shape *out);

/* The rank's group and position in it; false if the rank is in none. */
bool rank_groups_locate(const struct rank_groups *g, int64_t rank, int *group, int *member);

/* ------------------------------------------------- layout internals */

/* The runs of a reshape of x into y: consecutive input dims and output
 * dims with equal products ([B,s,h] -> [B*s,h]: {B,s}->{B*s}, {h}->{h}).
 * Writes the first input dim of every run into in0, the one past its last
 * into in1, its first output dim into out0 (GRAPH_MAX_RANK each); returns
 * how many runs. */
int layout_reshape_runs(const struct tensor *x, const struct tensor *y, int in0[], int in1[],
                        int out0[]);

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

/* Which output of op p is tensor t (it must be one). */
int plan_output_index(const struct op *p, int t);

/* ------------------------------------------- the collectives of a plan */

/* One collective a plan implies: what the estimate prices and the
 * lowering emits (plan_comm.c lists them; the estimate and the lowering use the lists). */
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

/* Which reads of a parameter are its first: per op and input, the last
 * op before it that reads the same parameter (the op itself when an
 * earlier input of the op reads it), -1 when none; undefined for inputs
 * that are not parameters. Input i of op k is the first read of its
 * parameter among the ops [lo, hi) (a pipeline chunk holds the parameters
 * its own ops read) exactly when prev[k][i] < lo. One pass over the
 * graph; NULL when out of memory. */
struct param_reads {
	int (*prev)[SIG_MAX_TENSORS];
};
struct param_reads *plan_param_reads(struct arena *a, const struct graph *g);
/* The parameters op d is the first of the ops [lo, ...) to read (lo <=
 * d->op; lo = 0 for the whole graph), in input order: their input indices
 * into inputs[], and their gradient synchronisation step into sync[]
 * (NULL when the parameter is not replicated). Returns the count. */
int plan_op_params(const struct graph *g, const struct param_reads *r, int lo,
                   const struct dist_op *d, int inputs[SIG_MAX_TENSORS],
                   const struct comm_step *sync[SIG_MAX_TENSORS]);
/* The layout a redistribution starts from: the producer's partial output
 * when its first step completes partial sums, else its output. */
const struct layout *plan_edge_start(const struct plan *p, const struct plan_edge *x);

/* A gradient bucket: parameters' gradient all-reduces of one kind and
 * groups fused in backward order, completed by op last_op's backward. */
struct plan_bucket {
	enum step_kind kind;
	const struct rank_groups *groups; /* the first gradient's synchronisation step's */
	double bytes;
	int n;                            /* gradients fused */
	int last_op;
	const char *first;                /* the first parameter's name */
	enum dtype dtype;                 /* its parameters' (one dtype a bucket) */
	int *ops;                         /* [n] the op completing each gradient */
	double *op_bytes;                 /* [n] each gradient's bytes */
};
/* The buckets of the ops [lo, hi) of a plan (a chunk) at most bucket_bytes
 * each (0: one per parameter), in the order they complete; -1 when out of
 * memory. Lowering runs them on stream 1; the estimate prices them. With
 * ZeRO (stage >= 1) they are ReduceScatters on the same groups. `r`:
 * plan_param_reads of the plan's graph (the chunk holds the parameters
 * its ops are the first of the chunk to read). A bucket's groups point
 * into the plan's synchronisation steps. */
int plan_gradient_buckets(struct arena *a, const struct plan *p, const struct param_reads *r,
                          int lo, int hi, double bucket_bytes, struct plan_bucket **out);
/* plan_gradient_buckets leaving out the parameters whose previous read is
 * among the ops [skip_lo, skip_hi) (none when skip_hi <= skip_lo): a
 * DualPipe device holds two chunks, and a parameter both read (the
 * embedding a multi-token prediction module shares) is one gradient,
 * synchronised with the chunk that read it first (cost.h,
 * cost_chunk_bucket_skip). */
int plan_gradient_buckets_except(struct arena *a, const struct plan *p,
                                 const struct param_reads *r, int lo, int hi, int skip_lo,
                                 int skip_hi, double bucket_bytes, struct plan_bucket **out);
/* Is the op in an attention core (a BatchMatMul feeding a Softmax, the
 * Softmax, and element-wise ops after it up to the next BatchMatMul):
 * what selective recomputation redoes. Per op (arena), NULL on OOM. */
bool *plan_attention_core(struct arena *a, const struct graph *g);
/* What a fused attention kernel (FlashAttention, training.flash_attention)
 * runs as one: the core's BatchMatMul (the scores), its Softmax and
 * element-wise ops, and the BatchMatMul that reads them (the context).
 * Per op (arena), NULL on OOM. */
enum attn_part { ATTN_NONE, ATTN_SCORES, ATTN_INNER, ATTN_CONTEXT };
uint8_t *plan_attention_fused(struct arena *a, const struct graph *g);

#endif
