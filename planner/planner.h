/* planner.h — sharding strategies and what they imply.
 *
 * - Device matrices and tensor layouts (MindSpore semantics, seeds 000,
 *   002, 004): a device matrix is a list of axis sizes, major first, laid
 *   out row-major over ranks base .. base+N-1; a layout says, for each
 *   dimension of a tensor, which axes split it (major first). Axes that
 *   split no dimension replicate the tensor; axes in `partial` hold
 *   partial sums still to be reduced.
 * - Distributed operators: from an op's dimension signature (models/) and
 *   a strategy, the op's device matrix, its tensors' layouts, the
 *   communication the op itself needs, per-rank FLOPs and bytes, and the
 *   gradient synchronisation of its parameters.
 * - Redistribution: the collective steps that turn one layout of a tensor
 *   into another, with explicit rank groups and bytes sent per device.
 * - Plans: a distributed op for every op of a scenario's graph and a
 *   redistribution on every edge.
 *
 * Units: element counts int64_t; bytes and FLOPs double. Bytes sent per
 * device follow the ring algorithms (docs/planner.md): AllGather (s-1)·L,
 * ReduceScatter (s-1)/s·L, AllReduce 2(s-1)/s·L, AllToAll (s-1)/s·L, with
 * L the bytes a device holds before the step and s the group size.
 *
 * Data flow: util, models, topologies, scenarios -> planner. The planner
 * never prints and never calls the simulator.
 */
#ifndef SHARDLAB_PLANNER_H
#define SHARDLAB_PLANNER_H

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
/* The same from cuts per input dimension (tuple form), for enumeration. */
bool dist_op_from_cuts(struct arena *a, const struct graph *g, int op,
                       const int64_t (*cuts)[GRAPH_MAX_RANK], int64_t n_devices,
                       struct dist_op *out, struct diag_list *diags);
/* Data parallel, as MindSpore gives unconfigured ops (seed 004): the
 * first dimension of the first non-parameter input cut over every device
 * when it divides, parameters replicated; otherwise fully replicated. */
bool dist_op_data_parallel(struct arena *a, const struct graph *g, int op, int64_t n_devices,
                           struct dist_op *out, struct diag_list *diags);

/* --------------------------------------------------------- enumeration */

/* A strategy in the tuple form: slices per dimension of each input. */
struct strategy {
	int64_t cuts[SIG_MAX_TENSORS][GRAPH_MAX_RANK];
};

/* Every valid strategy of an unconfigured op, as cuts per input dimension:
 * each label's cut divides the label's size and the device count; the cuts
 * use all n_devices (their product equals it) unless `all_devices` is
 * false, when any product dividing n_devices is allowed; plus full
 * replication. Order: descending lexicographic in the signature's label
 * order (the first label cut most first), replication last. Returns the
 * count (0 when none), cuts in *out (arena). */
int plan_enumerate(struct arena *a, const struct graph *g, int op, int64_t n_devices,
                   bool all_devices, struct strategy **out);

/* Redistribution bytes per device between two layouts, remembered per
 * layout pair so that repeated layers cost one derivation. */
struct redist_cache;
struct redist_cache *redist_cache_new(void);
void redist_cache_free(struct redist_cache *c);
/* -1 when no redistribution exists (different rank sets). */
double redist_cache_bytes(struct redist_cache *c, const struct layout *src,
                          const struct layout *dst);
/* Lookups answered from the cache / derived, for benchmarks. */
void redist_cache_stats(const struct redist_cache *c, int64_t *hits, int64_t *misses);

/* -------------------------------------------------------------- plans */

struct plan_edge {
	int tensor;
	int producer, producer_out;        /* producer -1: a graph input or parameter */
	int consumer, consumer_in;
	struct redist redist;
	double fused_saving_bytes;         /* compat minus fused bytes per device, >= 0 */
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
	const struct search_result *search; /* megatron-search: the search whose first candidate
	                                       this plan is; else NULL */
};

/* Every op with its configured strategy, the others data parallel (the
 * propagation planner replaces that default). NULL after diagnostics. */
struct plan *plan_configured(struct arena *a, const struct scenario *s, enum redist_mode mode,
                             struct diag_list *diags);

/* Sharding propagation (MindSpore semantics, seed 000; docs/planner.md):
 * from every configured op, breadth-first over both directions, each
 * unreached unconfigured neighbour takes the strategy with the least edge
 * communication, ties broken by less computation, then less communication
 * of its own (forward and gradient), then enumeration order; an op with
 * several op inputs waits until all are decided; ops never reached are
 * data parallel. The same edges and savings as plan_configured. */
struct plan *plan_propagate(struct arena *a, const struct scenario *s, enum redist_mode mode,
                            struct diag_list *diags);
/* The same with the caller's cost cache (to read its statistics, or to
 * share it between runs). */
struct plan *plan_propagate_cache(struct arena *a, const struct scenario *s,
                                  enum redist_mode mode, struct redist_cache *cache,
                                  struct diag_list *diags);

/* The edges of a plan from its ops' layouts (plan_configured and
 * plan_propagate share it). */
bool plan_derive_edges(struct arena *a, struct plan *p, struct diag_list *diags);

/* ------------------------------------------------------- other planners */

enum rec_cost {
	REC_COST_TOPOLOGY,   /* seconds from bytes, FLOPs and the topology's tiers (default) */
	REC_COST_MINDSPORE,  /* the reference's dimensionless element-count constants */
	REC_COST_COUNT
};
extern const char *const rec_cost_names[REC_COST_COUNT];

/* The order in which the recursive search visits ops within a level. */
enum rec_order {
	REC_ORDER_REVERSE,   /* reverse topological (default) */
	REC_ORDER_WEIGHT,    /* descending cost weight: the least cost of a valid cut at the
	                        level's start, heaviest first; ties reverse topological */
	REC_ORDER_COUNT
};
extern const char *const rec_order_names[REC_ORDER_COUNT];

struct plan_options {
	enum redist_mode mode;
	enum rec_cost rec_cost;            /* the recursive planner */
	enum rec_order rec_order;          /* the recursive planner */
	/* Long work (the plan search) reports how far it is, `fraction` in
	 * [0, 1]; NULL: nothing reported. */
	void (*progress)(void *ctx, double fraction);
	void *progress_ctx;
};

/* Data parallel over all devices: the model replicated, the batch split
 * (the Megatron rule with tensor-parallel degree 1); the scenario's shard()
 * entries are ignored. */
struct plan *plan_data_parallel(struct arena *a, const struct scenario *s,
                                const struct plan_options *o, struct diag_list *diags);
/* Megatron-LM style: tensor parallel inside a server (MatMuls with weights
 * cut by columns then rows, attention by heads, vocabulary-parallel
 * embedding and loss) and data parallel across servers; the ops between
 * follow by propagation. The scenario's shard() entries are ignored. */
struct plan *plan_megatron(struct arena *a, const struct scenario *s,
                           const struct plan_options *o, struct diag_list *diags);
/* MindSpore's double-recursive strategy search (DESIGN.md), faithful with
 * REC_COST_MINDSPORE, topology-aware with REC_COST_TOPOLOGY. */
struct plan *plan_recursive(struct arena *a, const struct scenario *s,
                            const struct plan_options *o, struct diag_list *diags);
/* The reference's dimensionless cost of a complete plan (the sum of its
 * ops' per-op rec costs and neighbour terms, DESIGN.md), for reports. */
double plan_rec_cost(const struct plan *p);

/* Megatron's rule with exactly `tp` as the tensor-parallel degree (a
 * divisor of a server's devices, or a multiple of them whose groups span
 * whole servers); NULL with a diagnostic when the server, the stage or the
 * shapes do not allow it. */
struct plan *plan_megatron_degree(struct arena *a, const struct scenario *s,
                                  const struct plan_options *o, int64_t tp,
                                  struct diag_list *diags);

/* Megatron-style plan search (docs/planner.md, "Plan search"): every
 * (TP, PP, DP, micro-batch, schedule, recompute, ZeRO) the devices and the
 * global batch allow, each planned by Megatron's rule and estimated, ranked
 * by the estimate among those that fit the device memory. TP divides a
 * server, PP x TP x DP = devices; the micro-batch (samples per replica)
 * is 1, 2, 4 or 8 when the model comes from a generator (the graph is
 * generated again at micro-batch x DP samples), else the graph's batch / DP;
 * schedules GPipe, 1F1B and interleaved 1F1B with 2 virtual stages when
 * PP > 1; recompute none, selective and full; ZeRO 0 to 3. The scenario's
 * global batch, dtype, sequence parallelism and bucket size stay. */
struct search_config {
	int64_t tp, pp, dp;
	int64_t micro_batch;               /* samples per replica per micro-batch */
	int64_t micro_batches;             /* per iteration */
	enum pipeline_schedule schedule;
	int64_t virtual_stages;
	enum recompute_mode recompute;
	int zero_stage;
};

struct search_candidate {
	struct search_config config;
	double iteration_s;                /* the estimate */
	double memory_bytes;               /* the largest device */
	double oom_overflow_bytes;         /* 0: fits */
	double bubble_s;
	int64_t order;                     /* its place in the enumeration (ties keep it) */
};

struct search_result {
	int64_t n_configs;                 /* enumerated */
	int64_t n_fit, n_oom;              /* estimated: fit the memory, or not */
	int64_t n_failed;                  /* Megatron's rule could not plan them */
	const char *failure;               /* the first reason, NULL when none failed */
	int n;                             /* candidates estimated */
	struct search_candidate *cands;    /* those that fit first, fastest first (ties: less
	                                      memory, then enumeration order), then the OOM ones
	                                      by overflow */
};

/* Runs the search; false after diagnostics (no configuration could be
 * planned, or out of memory). Progress through o->progress. */
bool plan_search(struct arena *a, const struct scenario *s, const struct plan_options *o,
                 struct search_result *out, struct diag_list *diags);
/* The scenario as one configuration sets it (the graph generated again at
 * its micro-batch, its pipeline and training settings), and its plan.
 * NULL after diagnostics. */
struct scenario *plan_search_scenario(struct arena *a, const struct scenario *s,
                                      const struct search_config *c, struct diag_list *diags);
struct plan *plan_search_plan(struct arena *a, const struct scenario *s,
                              const struct search_config *c, const struct plan_options *o,
                              struct diag_list *diags);
/* "TP 8 PP 8 DP 16 mb 1 1f1b full ZeRO 1" (interleaved: "interleaved-1f1b/2"). */
const char *plan_search_config_text(char *buf, size_t size, const struct search_config *c);

/* Any planner by kind. PLANNER_MEGATRON_SEARCH: the search's fastest plan
 * that fits (planned on plan_search_scenario, its p->scenario). NULL with
 * a diagnostic for a planner this version does not have. */
struct plan *plan_make(struct arena *a, const struct scenario *s, enum planner_kind kind,
                       const struct plan_options *o, struct diag_list *diags);

/* ---------------------------------------------------------------- costs */

/* The bytes a device holds before a step (L in the byte formulas). */
double comm_step_bytes_in(const struct comm_step *st);

/* Time of one collective step on a topology (DESIGN.md, "Communication
 * cost"): for each group, the α–β formula of its algorithm on the links
 * the group's ranks cross (ring inside one tier; hierarchical across
 * servers: intra-server reduce-scatter, inter-server all-reduce of S/n_intra,
 * intra-server all-gather); the step takes as long as its slowest group.
 * Concurrent groups do not slow each other here: contention is the
 * simulator's business. 0 for StridedSlice and Reshape. */
double cost_step_s(const struct topology *t, const struct comm_step *st);
/* The same for one group of ranks and a message: `bytes` is S of the
 * formulas (AllReduce and AllToAll: each device's buffer; AllGather and
 * ReduceScatter: the whole gathered tensor). */
double cost_collective_s(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                         int n, double bytes);
/* The slowest of a step's groups, each costed as cost_collective_s. */
double cost_groups_s(const struct topology *t, enum step_kind kind, const struct rank_groups *g,
                     double bytes);
/* The work of one kernel on one device: its FLOPs, the bytes it reads and
 * writes, and for a GEMM its local dimensions m x k times k x n (a batched
 * GEMM's batch count folded into m); m = n = k = 0 for any other kernel. */
struct cost_work {
	double flops;
	double bytes;
	double m, n, k;
};

/* Op d's work on one of its ranks: flops_per_rank and bytes_per_rank, and
 * for MatMul and BatchMatMul the local GEMM dimensions from its inputs'
 * local shapes (transposes and batch dimensions applied). Returns whether
 * the op is a GEMM. No allocation: the estimator calls it per op. */
bool cost_op_work(const struct graph *g, const struct dist_op *d, struct cost_work *w);

/* Time of one kernel on a device (docs/cost-models.md), for work w of
 * dtype dt:
 *   t = overhead + max(flops / (peak[dt] · matmul_efficiency · g(m) g(n) g(k)),
 *                      bytes / (hbm_bps · memory_efficiency))
 * with g(x) = x / (x + gemm_half_dim) for a GEMM (1 for other kernels and
 * when gemm_half_dim is 0), overhead the device's kernel_overhead_s; 0 for
 * no work at all (a view). A dtype without a peak uses the device's
 * fastest floating peak, and *fallback (if not NULL) is set. */
double cost_compute_s(const struct topo_device *d, enum dtype dt, const struct cost_work *w,
                      bool *fallback);

/* ---------------------------------------------------------- calibration */

/* A table of measured kernel times, and the compute model's parameters
 * fitted to it by least squares (calibrate.c; docs/cost-models.md,
 * "Calibration"). */
enum calib_kind { CALIB_GEMM, CALIB_MEMORY, CALIB_KIND_COUNT };
extern const char *const calib_kind_names[CALIB_KIND_COUNT];

/* One measured kernel: a GEMM of m x k times k x n, `batch` times over
 * (the model folds the batch into m), or a memory-bound kernel moving
 * `bytes`. */
struct calib_row {
	enum calib_kind kind;
	int line;                    /* in the table's file */
	double m, n, k, batch;       /* GEMM; batch 1 when the table has none */
	enum dtype dtype;            /* GEMM: selects the peak */
	double bytes;                /* read + written; a GEMM's default: its operands and result */
	double seconds;              /* measured */
};

struct calib_table {
	const char *file;
	int n_rows, n_gemm, n_memory;
	struct calib_row *rows;      /* in file order */
};

/* A CSV table: '#' comment lines and blank lines skipped, then a header
 * naming the columns (kind, seconds; m, n, k, dtype for GEMM rows; bytes
 * for memory rows; batch optional), then one kernel per line. NULL after
 * diagnostics `file:line: column: message`, one per bad cell. */
struct calib_table *cost_calib_load(struct arena *a, const char *path, struct diag_list *diags);
/* The same from text (file names it in the diagnostics). */
struct calib_table *cost_calib_parse(struct arena *a, const char *file, const char *text,
                                     size_t len, struct diag_list *diags);

/* The fitted parameters, by the names of the topology's device members. */
enum calib_param_id {
	CALIB_MATMUL_EFFICIENCY,     /* with a device; without one the GEMM rate, FLOP/s */
	CALIB_GEMM_HALF_DIM,
	CALIB_MEMORY_EFFICIENCY,     /* with a device; without one the bandwidth, bytes/s */
	CALIB_KERNEL_OVERHEAD,       /* seconds (the file's kernel_overhead_us / 1e6) */
	CALIB_PARAM_COUNT
};
extern const char *const calib_param_names[CALIB_PARAM_COUNT];

struct calib_param {
	double value, std_error;
	bool fitted;
	bool held;                   /* the rows could fit it, the caller held it at the device's */
};

/* The parameters of cost_compute_s's model fitted to a table. With a
 * device, the GEMM rate and the bandwidth are efficiencies (over the peak
 * of each row's dtype, over the HBM bandwidth); without one, absolute
 * rates (then every GEMM row must have one dtype). A parameter the rows
 * cannot determine (no memory rows: memory_efficiency) or that is held
 * keeps the device's value (no memory floor, no shape factor without a
 * device). */
struct calib_fit {
	bool has_device;
	bool peak_fallback;          /* a row's dtype has no peak: the fastest floating one */
	enum dtype dtype;            /* the first GEMM row's */
	struct calib_param param[CALIB_PARAM_COUNT];
	int n_rows, n_params, iterations;
	double rms_rel;              /* root mean square of the relative residuals */
	double *rel;                 /* per row: (model - measured) / measured */
	int max_row;                 /* the row with the largest |rel| */
};

/* Fits by nonlinear least squares on the relative residuals (GSL),
 * holding the parameters whose bit (1 << calib_param_id) is in `keep` at
 * the device's values (keep needs a device). False with diagnostics when
 * the table cannot determine the parameters (no more rows than
 * parameters, GEMMs of one shape, several dtypes without a device) or the
 * fit fails. d may be NULL. */
bool cost_calib_fit(struct arena *a, const struct calib_table *t, const struct topo_device *d,
                    unsigned keep, struct calib_fit *out, struct diag_list *diags);

/* Collective algorithms (the scenario's simulation.collective_algo names
 * them). The α–β time of each, for n ranks and a message of S bytes, on the
 * links its steps cross (docs/simulation.md):
 *   ring                AllReduce 2(n-1)/n·S/B + 2(n-1)α; AllGather, ReduceScatter,
 *                       AllToAll (n-1)/n·S/B + (n-1)α (pairwise exchange)
 *   tree (binomial)     AllReduce: reduce then broadcast, ceil(log2 n) rounds each,
 *                       every round α + S/B on the link of its pairs
 *   halving-doubling    AllReduce, AllGather, ReduceScatter on power-of-two groups:
 *                       log2 n exchanges each way, step k of S/2^k on its pairs' link
 *   hierarchical        groups spanning servers with as many ranks on each: inside,
 *                       across on S/n_intra, inside (cost.c)
 *   direct              all pairs at once, one α: AllToAll α + (n-1)/n·S/B (a switch
 *                       port or the NICs), α + S/(n·B) in a mesh; in a mesh tier also
 *                       AllGather and ReduceScatter α + S/(n·B), AllReduce twice that
 * B is the link's achievable rate (the file's line rate x its efficiency).
 * COLL_AUTO, and a wanted algorithm that does not apply to a group, pick
 * the algorithm with the least time (ties: ring, hierarchical,
 * halving-doubling, tree, direct), as NCCL's and HCCL's tuners do; the
 * estimator and the simulator ask the same rule, so they agree on an
 * uncontended collective. */
enum collective_algo cost_choose_algo(const struct topology *t, enum step_kind kind,
                                      const int64_t *ranks, int n, double bytes,
                                      enum collective_algo wanted);
/* The time of one group's collective with a given algorithm (COLL_AUTO: the
 * rule's choice). */
double cost_collective_algo_s(const struct topology *t, enum step_kind kind,
                              enum collective_algo algo, const int64_t *ranks, int n,
                              double bytes);

/* ------------------------------------------------------------ pipelines */

/* The model split into chunks (pipeline_stages x virtual_stages of them),
 * each a contiguous run of ops in graph order; chunk c runs on stage
 * c mod n_stages, whose ranks are stage x stage_ranks .. + stage_ranks - 1
 * (every plan is one stage's: its groups start at rank 0). */
struct plan_part {
	int n_stages, virtual_stages, n_chunks;
	int64_t stage_ranks;
	int *first_op;                     /* [n_chunks + 1]: chunk c is ops first_op[c] .. first_op[c+1]-1 */
	int *chunk_of;                     /* per op */
	double *send_bytes;                /* per chunk: activation bytes per rank it hands to the next */
	double *live;                      /* [n_ops + 1]: bytes per rank live across the cut before op i
	                                      (0 at both ends) */
	double live_min;                   /* the least over inner cuts (-1 for one op): where a
	                                      transformer's layers meet */
};

static inline int part_stage(const struct plan_part *pp, int chunk)
{
	return chunk % pp->n_stages;
}

/* The chunks of a plan: at the scenario's pipeline_cuts when it has them,
 * else at the cuts with the fewest live activation bytes (admitting more
 * where there are too few), chosen so that the most expensive chunk by
 * op_cost (seconds per micro-batch, per op) plus the sends at its cuts is
 * as cheap as it can be (docs/planner.md, "Pipelines"). */
bool plan_partition(struct arena *a, const struct plan *p, const double *op_cost,
                    struct plan_part *out, struct diag_list *diags);

/* One unit of a stage's schedule: a chunk's forward or backward pass of
 * one micro-batch. `last`: the chunk's last backward of the iteration. */
struct prog_slot {
	int chunk;
	int64_t micro;
	bool backward, last;
};

/* The order in which stage `stage` runs its units over m micro-batches
 * (docs/planner.md, "Pipelines"): GPipe, 1F1B, or Megatron's interleaved
 * 1F1B when the part has virtual stages. Returns the count (2 m v) and the
 * slots in *out (arena), -1 when out of memory. */
int plan_schedule(struct arena *a, const struct plan_part *pp, int64_t m,
                  enum pipeline_schedule sched, int stage, struct prog_slot **out);

/* ------------------------------------------------------------- lowering */

/* A training iteration as the programs the ranks run: one per stage, SPMD
 * inside it (each rank finds its own group in each collective; groups are
 * stage-relative). Steps are data, not code per op kind. Each chunk has a
 * forward and a backward list of steps for one micro-batch; a stage runs
 * its schedule's slots in order, then its tail (the optimizer, ZeRO's
 * parameter gathers). Stream 0 runs compute, the ops' own collectives,
 * redistributions and the pipeline's sends and receives; stream 1 the
 * gradient synchronisation, each bucket once the backward step that
 * completes it has run (after every micro-batch for ZeRO 2 and 3, else in
 * the chunk's last backward); the tail waits for stream 1. */
enum prog_phase {
	PHASE_FORWARD, PHASE_BACKWARD, PHASE_RECOMPUTE, PHASE_PIPELINE, PHASE_PARAMS, PHASE_GRADIENT,
	PHASE_OPTIMIZER, PHASE_COUNT
};
extern const char *const prog_phase_names[PHASE_COUNT];

enum prog_kind { PROG_COMPUTE, PROG_COLLECTIVE, PROG_SEND, PROG_RECV };

struct prog_step {
	enum prog_kind kind;
	enum prog_phase phase;
	int stream;                        /* 0 or 1 */
	int stage;                         /* whose ranks run it */
	int op;                            /* graph op; -1 for the optimizer, buckets, sends */
	const char *label;                 /* for traces: "dense2.matmul", "dense2.matmul AllReduce" */
	double seconds;                    /* PROG_COMPUTE: the estimator's roofline time */
	enum step_kind coll;               /* PROG_COLLECTIVE */
	struct rank_groups groups;         /* stage-relative */
	double bytes;                      /* S of the formulas; SEND/RECV: the message */
	int after;                         /* stream 1: the stream-0 step it waits for; else -1 */
	bool every_micro;                  /* stream 1: after every micro-batch, not the last only */
	int channel;                       /* SEND/RECV: the boundary (chunk c to c+1) */
	int peer_stage;                    /* SEND/RECV: the stage at the other end */
};

struct prog_chunk {
	int stage;
	int fwd, n_fwd;                    /* steps[fwd .. fwd+n_fwd): one micro-batch's forward */
	int bwd, n_bwd;                    /* its backward, stream-1 steps just after their `after` */
};

struct prog_stage {
	int n_slots;
	struct prog_slot *slots;           /* plan_schedule's order */
	int tail, n_tail;                  /* steps run once after the slots */
};

struct program {
	int64_t n_ranks;                   /* every stage's */
	int64_t stage_ranks;
	int n_stages, n_chunks;
	int64_t micro_batches;
	struct prog_chunk *chunks;
	struct prog_stage *stages;
	int n_steps;
	struct prog_step *steps;
	double bucket_bytes;               /* gradient bucket size used */
};

/* One iteration of a plan as programs: per chunk the forward ops, their
 * collectives and the redistributions into them (ZeRO-3: each parameter
 * gathered before its first reader), a send of the live activations to
 * the next chunk; backward: a receive of their gradient, recomputation
 * (full: the chunk's forward again; selective: the attention core), the
 * ops in reverse with the mirrored collectives, gradient buckets of at
 * most bucket_bytes (same groups only; ReduceScatter from ZeRO 1) on
 * stream 1, the gradient sent back; per stage the optimizer and (ZeRO 1,
 * 2) the all-gather of the updated parameters. Times and bytes are the
 * estimator's. */
bool plan_lower(struct arena *a, const struct plan *p, double bucket_bytes, struct program *out,
                struct diag_list *diags);

/* The rank's group and position in it; false if the rank is in none. */
bool rank_groups_locate(const struct rank_groups *g, int64_t rank, int *group, int *member);

/* --------------------------------------------------------- the estimate */

enum est_category {
	EST_COMPUTE_FORWARD,
	EST_COMPUTE_BACKWARD,
	EST_COMM_FORWARD,        /* the ops' own collectives */
	EST_REDISTRIBUTION,
	EST_COMM_BACKWARD,       /* mirrored collectives and redistributions */
	EST_RECOMPUTE,           /* forward work again in backward */
	EST_PARAM_GATHER,        /* ZeRO-3: parameters all-gathered before each use (the ZeRO 1/2
	                            gather after the update counts in gradient_sync's tail) */
	EST_PIPELINE_P2P,        /* activations and their gradients between stages */
	EST_GRADIENT_SYNC,
	EST_OPTIMIZER,
	EST_BUBBLE,              /* the pipeline's fill and drain */
	EST_CATEGORY_COUNT
};
extern const char *const est_category_names[EST_CATEGORY_COUNT];

struct est_op {
	int op;
	double compute_forward_s, compute_backward_s;
	double comm_forward_s, comm_backward_s;    /* own collectives and redistributions into it */
	double redistribution_s;                    /* of comm_forward_s: redistributions into it */
	double recompute_s;                         /* forward work redone in backward */
	double gather_s;                            /* ZeRO-3: its parameters gathered, forward and backward */
	double gradient_s;                          /* its gradients' share of their buckets */
	double activation_bytes;                    /* its outputs, per device per micro-batch */
	int chunk;                                  /* its pipeline chunk */
};

/* Memory of one device (bytes). */
struct est_memory {
	double params, grads, optimizer;            /* after ZeRO's sharding */
	double activations;                         /* the micro-batches in flight, after recomputation */
	double buffers;                             /* communication: a gradient bucket, the pipeline's
	                                               send and receive, ZeRO-3's gathered parameters */
	double total;
};

/* One pipeline stage (the whole plan when there is one). */
struct est_stage {
	double micro_s;                             /* one micro-batch through its chunks, forward and
	                                               backward, with their communication */
	double p2p_s;                               /* of micro_s: sends to the neighbouring stages */
	double gradient_s, optimizer_s;             /* once per iteration after the flush (gradient_s:
	                                               buckets and ZeRO 1/2's gathers) */
	double in_flight;                           /* micro-batches whose activations it holds at most */
	struct est_memory mem;
};

struct estimate {
	double iteration_s;                         /* one training iteration */
	double compute_s, comm_s;                   /* their shares of iteration_s */
	double category_s[EST_CATEGORY_COUNT];
	int64_t steps_per_iteration;                /* graph executions per iteration (global batch / graph batch) */
	double memory_bytes_per_device;             /* the largest device */
	double param_bytes, grad_bytes, optimizer_bytes, activation_bytes;   /* per device */
	double buffer_bytes;                        /* communication buffers */
	int memory_stage;                           /* the stage of the largest device */
	double hbm_bytes;                           /* the device's memory */
	double oom_overflow_bytes;                  /* how far the largest device is over it; 0 fits */
	double pipeline_s, bubble_s;                /* the schedule's time, and of it the bubble */
	int critical_stage;                         /* the slowest stage per micro-batch */
	struct plan_part part;
	int n_stages;
	struct est_stage *stages;
	bool compute_fallback;                      /* some dtype had no peak (cost_compute_s) */
	int n_ops;
	struct est_op *ops;                         /* per graph op */
};

/* The symbolic estimate of a complete plan on the scenario's topology. */
bool plan_estimate(struct arena *a, const struct plan *p, struct estimate *out,
                   struct diag_list *diags);

#endif
