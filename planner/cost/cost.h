/* cost.h — what a plan costs: compute, collectives by message size,
 * pipelines, memory, the symbolic estimate of a training iteration, and the
 * calibration of the compute model to measured kernel times.
 *
 * The cost model prices a plan; it does not choose one (the strategies in
 * planner.h consult it). Collectives follow the α–β formulas of their
 * algorithms on the links a group's ranks cross (docs/cost-models.md);
 * kernels a roofline with a GEMM shape factor and a per-kernel overhead.
 *
 * Units: bytes, bytes/s, seconds, FLOPs, FLOP/s.
 *
 * Data flow: layout -> cost -> planner -> sim. Never prints, never
 * simulates.
 */
#ifndef SHARDLAB_COST_H
#define SHARDLAB_COST_H

#include "layout.h"

/* ---------------------------------------------------------------- costs */


/* Time of one collective step on a topology (docs/planner.md, "Communication
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

/* The class of memory-bound kernel an op kind runs as (topologies.h,
 * enum topo_kernel_class), or -1 for none (GEMMs, element-wise arithmetic,
 * views, communication). */
/* The FP8 recipes' kernels (docs/cost-models.md, "FP8 training"): a GEMM
 * at the device's FP8 rate (peak_fp8_flops x fp8_matmul_efficiency, the
 * same shape factor and overhead), and Transformer Engine's cast-transpose
 * of `elems` bf16 elements to FP8 (read 2 bytes, write the FP8 copy and
 * its transpose, 1 + 1, the amax taken on the way), memory-bound. */
double cost_fp8_gemm_s(const struct topo_device *d, const struct cost_work *w, bool *fallback);
double cost_fp8_cast_s(const struct topo_device *d, double elems);
int cost_kernel_class(enum op_kind kind);

/* cost_compute_s for one kernel of an op of kind `kind`, its forward
 * (backward false) or its backward's work at the forward's bytes: a kind
 * of a class with a kernel_efficiency in the device file moves its bytes
 * at that fraction of the HBM rate instead of memory_efficiency
 * (docs/cost-models.md, "Memory-bound kernels by class"). */
double cost_op_kernel_s(const struct topo_device *d, enum op_kind kind, enum dtype dt,
                        const struct cost_work *w, bool backward, bool *fallback);

/* Stragglers (docs/cost-models.md): each device's compute takes its kind's
 * time times 1 + speed_cv · z, z a standard normal drawn per device. A
 * synchronous iteration waits for the slowest of its n devices, whose
 * expected factor is 1 + speed_cv · E[max of n standard normals] (Blom's
 * approximation, Φ^-1((n - 0.375) / (n + 0.25))); 1 for one device or
 * none of the spread. The estimate scales every op's compute by it. */
double cost_straggler_factor(const struct topo_device *d, int64_t n_devices);
/* Device `rank`'s factor for a seed: deterministic, the same on every
 * platform (a splitmix64 stream and the Box–Muller transform), never
 * below 0.5. */
double cost_device_speed(const struct topo_device *d, uint64_t seed, int64_t rank);
/* With a scenario's faults (topologies.h, topo_rank_slowdown): rank r's
 * factor is its draw times its slowdown (a slow device, a server of
 * another kind), and the slowest of ranks [0, n) the stragglers' factor
 * times the largest slowdown among them, which the estimate scales every
 * op's compute by: the group's slowest member sets its pace (an upper
 * bound when both spreads act at once). */
double cost_rank_factor(const struct topology *t, uint64_t seed, int64_t rank);
double cost_slowest_factor(const struct topology *t, int64_t n);

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

/* A memory-bound kernel of a class the topology's kernel_efficiency names
 * (norm, softmax, dropout, activation, loss): its forward or its backward,
 * the op's bytes as the estimate counts them (inputs and outputs of the
 * forward, for either pass) and the measured time. Not part of the fit. */
struct calib_class_row {
	int cls;                     /* enum topo_kernel_class */
	bool backward;
	int line;
	double bytes, seconds;
};

struct calib_table {
	const char *file;
	int n_rows, n_gemm, n_memory;
	struct calib_row *rows;      /* the fit's rows (gemm, memory), in file order */
	int n_class;
	struct calib_class_row *class_rows; /* in file order */
};

/* A CSV table: '#' comment lines and blank lines skipped, then a header
 * naming the columns (kind, seconds; m, n, k, dtype for GEMM rows; bytes
 * for memory rows and class rows; batch optional; pass, forward or
 * backward, for class rows), then one kernel per line. NULL after
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
	double cov[CALIB_PARAM_COUNT][CALIB_PARAM_COUNT]; /* of the fitted parameters' values
	                                (efficiencies or rates, elements, seconds); 0 for the
	                                others */
};

/* Fits by nonlinear least squares on the relative residuals (GSL),
 * holding the parameters whose bit (1 << calib_param_id) is in `keep` at
 * the device's values (keep needs a device). False with diagnostics when
 * the table cannot determine the parameters (no more rows than
 * parameters, GEMMs of one shape, several dtypes without a device) or the
 * fit fails. d may be NULL. */
bool cost_calib_fit(struct arena *a, const struct calib_table *t, const struct topo_device *d,
                    unsigned keep, struct calib_fit *out, struct diag_list *diags);

/* The fit's error out of sample: each row predicted by the fit of the
 * others (leave-one-out up to 20 rows; above, 10-fold with row i in fold
 * i mod 10), the same parameters held. NAN figures when a fold cannot be
 * fitted (too few rows left of a kind). */
struct calib_cv {
	const char *method;          /* "leave-one-out" or "k-fold" */
	int folds;
	double mape_pct, rms_pct;
};
void cost_calib_cross_validate(struct arena *a, const struct calib_table *t,
                               const struct topo_device *d, unsigned keep, struct calib_cv *out);

/* A device's kernel_efficiency from a table's class rows: for each row the
 * efficiency at which the model gives its time, forward S / (B (t - o)),
 * backward f S / (B (t - f o)) with the estimate's backward factor f of
 * the class (cost_kernel_class_backward_factor), B the device's HBM rate,
 * o the kernel overhead; per class and pass the median of its rows, at
 * most memory_efficiency. eff is 0 and rows 0 where the table has none;
 * a row whose time is not above f o is a diagnostic (false). */
struct calib_classes {
	double eff[TOPO_KC_COUNT][2];
	int rows[TOPO_KC_COUNT][2];
};
bool cost_calib_classes(struct arena *a, const struct calib_table *t, const struct topo_device *d,
                        double overhead_s, double memory_efficiency, struct calib_classes *out,
                        struct diag_list *diags);

/* The estimate's backward factor of a kernel class's ops (2 for the
 * normalisations and Softmax, 1 for the others). */
double cost_kernel_class_backward_factor(int cls);

/* ------------------------------------------------- calibration files */

/* A calibration file ("format": "shardlab-calibration", calfile.c;
 * docs/formats.md): named figures, each one parameter of a topology with
 * its units, bounds, value, standard error, what it was fitted on and the
 * cross-validated error of its fit, plus the fits themselves (the
 * figures' covariance and the cross-validated residuals) for prediction
 * intervals. Applied to a topology, each figure replaces the parameter it
 * names. */
#define CALIBRATION_FORMAT "shardlab-calibration"
#define CALIBRATION_VERSION 1

/* What a figure sets: "device.<param>", "tiers.<tier>.<param>",
 * "nic.<param>", "train.<param>", "nccl.<algo>.<proto>.<hw>_us". */
enum cal_param {
	CAL_MATMUL_EFFICIENCY,       /* device.matmul_efficiency, fraction */
	CAL_GEMM_HALF_DIM,           /* device.gemm_half_dim, elements */
	CAL_MEMORY_EFFICIENCY,       /* device.memory_efficiency, fraction */
	CAL_KERNEL_OVERHEAD_US,      /* device.kernel_overhead_us, us */
	CAL_TIER_EFFICIENCY,         /* tiers.<tier>.efficiency, fraction of the line rate */
	CAL_TIER_LATENCY_US,         /* tiers.<tier>.latency_us, us */
	CAL_NIC_EFFICIENCY,          /* nic.efficiency, fraction of the line rate */
	CAL_NIC_LATENCY_US,          /* nic.latency_us, us */
	/* End-to-end figures fitted to training runs (validation/fit.c), each
	 * folded into the parameters above that both the estimate and the
	 * simulation read (topo_train keeps what was folded): */
	CAL_TRAIN_GEMM_EFFICIENCY,   /* train.gemm_efficiency, ratio: GEMM rate under
	                                training load over the device's */
	CAL_TRAIN_COMM_EFFICIENCY,   /* train.comm_efficiency, ratio: every tier's and NIC's
	                                bandwidth under training load over the topology's */
	CAL_TRAIN_OP_OVERHEAD_US,    /* train.op_overhead_us, us: framework time per op per
	                                forward or backward pass, on top of the kernel's */
	CAL_TRAIN_NIC_EFFICIENCY,    /* train.nic_efficiency, ratio: the NICs' bandwidth under
	                                training load over what train.comm_efficiency leaves */
	CAL_TRAIN_MOE_OVERHEAD_US,   /* train.moe_overhead_us, us: framework time per
	                                mixture-of-experts layer per forward or backward pass,
	                                beyond its kernels (the host's wait for the experts'
	                                token counts, and what it launches after it) */
	CAL_NCCL_HOP_US,             /* nccl.<algo>.<proto>.<hw>_us, us: NCCL's per-hop latency
	                                (hwLat) of one algorithm (tree, ring), protocol (ll,
	                                ll128, simple) and link (nvlink, pci, net), in the
	                                time of that algorithm and protocol, not in NCCL's
	                                choice (topologies.h, topo_collectives.hop_us) */
	CAL_PARAM_COUNT
};
/* The units each takes ("fraction", "elements", "us", "ratio"). */
extern const char *const cal_param_units[CAL_PARAM_COUNT];

struct cal_figure {
	const char *name;            /* as in the file: "tiers.nvswitch.efficiency" */
	enum cal_param param;
	const char *tier;            /* CAL_TIER_*: the tier's name; CAL_NCCL_HOP_US:
	                                "<algo>.<proto>.<hw>"; NULL otherwise */
	double lo, hi;               /* the bounds the fit respected, within the parameter's */
	double value, std_error;
	const char *fitted_on;       /* what it was fitted on, in words */
	double cv_error_pct;         /* its fit's cross-validated MAPE; NAN when not given */
	const char *fit;             /* the fit it came from (a name in fits), NULL */
	int line;                    /* of its name */
};

/* The runs a training fit was fitted on ("runs" of a training fit, as
 * calibrate --runs writes it): each setting's values over the fitted
 * rows' plans, so that a prediction on a plan outside them says which of
 * its settings the fit never saw (docs/validation.md, "Outside the
 * fitted runs"). The first CAL_SET_RANGES are counts, kept as a range;
 * the others sets of values, a bit each. */
enum cal_setting {
	CAL_SET_DEVICES,     /* devices */
	CAL_SET_TP,          /* tensor-parallel degree (plan_shape) */
	CAL_SET_PP,          /* pipeline stages */
	CAL_SET_CP,          /* context-parallel degree */
	CAL_SET_EP,          /* expert-parallel degree (1: dense) */
	CAL_SET_SEQ,         /* sequence length in tokens (0: not known, the model has no
	                        generator) */
	CAL_SET_ZERO,        /* ZeRO stage, 0..3 */
	CAL_SET_RECOMPUTE,   /* enum recompute_mode */
	CAL_SET_COMPUTE,     /* the GEMMs' number format, cal_compute_names */
	CAL_SET_FRAMEWORK,   /* enum framework */
	CAL_SET_COUNT
};
#define CAL_SET_RANGES 6
/* The keys of "runs", in enum order. */
extern const char *const cal_setting_keys[CAL_SET_COUNT];
#define CAL_COMPUTE_COUNT 4
extern const char *const cal_compute_names[CAL_COMPUTE_COUNT];  /* fp32 fp16 bf16 fp8 */

/* One plan's settings, in enum order (a set's value as its index). */
struct cal_point {
	int64_t v[CAL_SET_COUNT];
};
/* A plan's: its devices (all its stages'), TP and EP by plan_shape, the
 * rest from its scenario's training. */
void cost_cal_point(const struct plan *p, struct cal_point *out);
/* The same from a training (pipeline_stages, context_parallel,
 * zero_stage, recompute, dtype and precision, framework), the model's
 * graph (its generator's sequence) and the devices, TP and EP a plan of
 * it would have (a study's row). */
void cost_cal_point_of(const struct training *t, const struct graph *g, int64_t devices,
                       int64_t tp, int64_t ep, struct cal_point *out);

struct cal_runs {
	bool have;                   /* false: the fit does not say (a file without it) */
	int64_t lo[CAL_SET_RANGES], hi[CAL_SET_RANGES];
	unsigned seen[CAL_SET_COUNT];  /* CAL_SET_ZERO on: the values seen, bit v */
	int line;
};
/* Widens r to hold the point (the first point sets it; a sequence of 0,
 * not known, widens nothing). */
void cost_cal_runs_add(struct cal_runs *r, const struct cal_point *pt);

/* "48-6144 devices, TP 1-8, PP 1-16, CP 1, EP 1, sequence 4096, ZeRO 1,
 * recompute none, bf16 compute, framework megatron"; "" when r does not
 * say. */
const char *cost_cal_runs_text(char *buf, size_t size, const struct cal_runs *r);
/* The "runs" object of a training fit, as a calibration file has it. */
struct cJSON *cost_cal_runs_json(const struct cal_runs *r);

/* A setting of a plan outside a fit's runs, in words: the plan's value
 * ("3", "pytorch") and the fit's ("1-8", "0, 1", "megatron"). */
struct cal_outside {
	enum cal_setting setting;
	char value[24];
	char fitted[64];
};
/* The settings of pt outside r (none when r does not say), in enum order,
 * into out[CAL_SET_COUNT]; how many. */
int cost_cal_outside(const struct cal_runs *r, const struct cal_point *pt,
                     struct cal_outside *out);
/* "ZeRO 3 (fitted: 1), TP 32 (fitted: 1-8)": n of them, "" for none. */
const char *cost_cal_outside_text(char *buf, size_t size, const struct cal_outside *o, int n);

/* How many points were outside r by each setting, in words: "sequence:
 * 6564 (fitted: 2048); ZeRO: 312 (fitted: 0)"; settings with a count of
 * 0 left out, "" for none. */
const char *cost_cal_outside_tally_text(char *buf, size_t size, const struct cal_runs *r,
                                        const int64_t count[CAL_SET_COUNT]);

/* A fit that produced figures: how it was cross-validated, and the
 * covariance of its figures (in their units; row-major, n_figures^2). */
#define CAL_FIT_MAX_FIGURES 6        /* a fit's figures, at most (the loader checks) */
struct cal_fit {
	const char *name;
	const char *kind;            /* "kernels", "collectives", "training" */
	const char *fitted_on;
	int points;
	const char *loss;            /* "squares" (least squares) or "huber" */
	const char *cv_method;       /* "leave-one-out" or "k-fold" */
	int cv_folds;
	double cv_mape_pct;          /* out-of-sample mean |relative error|, % */
	double cv_rms_pct;           /* out-of-sample root mean square relative error, % */
	double cv_log_rms;           /* out-of-sample root mean square of ln(predicted /
	                                measured); NAN when the file does not give it */
	int n_figures;
	const char **figures;        /* names of the figures it fitted */
	double *covariance;
	/* "transferred_from": the fit was made on another device's rows and
	 * carried over whole by `calibrate --transfer` (NULL: made here). */
	const char *from_calibration;  /* the calibration it was carried from */
	const char *from_device;       /* the kind its rows ran on; NULL: not named */
	struct cal_runs runs;          /* a training fit's runs (runs.have false: not said) */
	int line;
};

struct calibration {
	const char *file;
	const char *name;
	const char *description;     /* NULL when none */
	const char *device;          /* the device kind it was fitted for; NULL: any */
	int device_line;
	int n_also_for;              /* "also_for": other kinds it holds for (the same
	                                silicon in another memory part, say) */
	const char **also_for;
	int n_figures;
	struct cal_figure *figures;
	int n_fits;
	struct cal_fit *fits;
};

/* Loads and checks a calibration file; NULL after diagnostics
 * FILE:LINE: PATH: MESSAGE (every problem of the file). */
struct calibration *cost_calibration_load(struct arena *a, const char *path,
                                          struct diag_list *diags);
/* The same from a parsed document whose "format" is CALIBRATION_FORMAT. */
struct calibration *cost_calibration_load_doc(struct arena *a, struct json_doc *doc);
/* Each figure replaces the topology's parameter it names (an efficiency
 * rescales the achievable bandwidth from the line rate). False, with a
 * diagnostic at the figure, when the topology has no such tier, is of
 * another device kind than the calibration's, or has no NICs for a nic
 * figure, or when a training ratio is above its cap on t with the file's
 * figures set (cost_cal_train_cap, at the figure's value); the topology
 * is then unchanged. */
bool cost_calibration_apply(const struct calibration *c, struct topology *t,
                            struct diag_list *diags);
/* Whether c holds for a device of the kind: its own, one of also_for, or
 * any when it names none. */
bool cost_calibration_holds_for(const struct calibration *c, const char *kind);
/* A fit's "transferred_from" as JSON ({"calibration", "device"}), NULL
 * for a fit made on its own device's points. */
struct cJSON *cost_cal_fit_transfer_json(const struct cal_fit *f);
/* The file as JSON (the caller prints or writes it): the same text for the
 * same calibration. */
struct cJSON *cost_calibration_json(const struct calibration *c);
/* The figure's parameter from its name, with the tier's name in *tier
 * (arena) for a tier figure; -1 when the name is not one. */
int cost_cal_param_parse(struct arena *a, const char *name, const char **tier);
/* The physical range of a parameter: [lo, hi], lo excluded when *lo_open. */
void cost_cal_param_range(enum cal_param p, double *lo, double *hi, bool *lo_open);
/* The largest value of a training ratio figure (CAL_TRAIN_GEMM_EFFICIENCY,
 * CAL_TRAIN_COMM_EFFICIENCY, CAL_TRAIN_NIC_EFFICIENCY) that stays physical
 * on topology t: the GEMM rate at most the device's peak (matmul_efficiency,
 * and an FP8 rate's fp8_matmul_efficiency, x figure <= 1), the NICs at most
 * their line rate (efficiency x figure <= 1), every link at most its line
 * rate for the links' figure. Above it the figure would stand for a
 * mechanism the model lacks, not for a rate under training load. INFINITY
 * for the other figures, and where the topology has nothing to cap. */
double cost_cal_train_cap(const struct topology *t, enum cal_param p);
/* Sets one figure's parameter on t (tier: the tier's name for a tier
 * figure, which t has) to value, replacing what an earlier application
 * set: applying the same value twice changes nothing. No checks: the
 * caller's value is in range (cost_calibration_apply checks a file's). */
void cost_cal_set(struct topology *t, enum cal_param p, const char *tier, double value);

/* The plan's estimated iteration time with n figures set (cost_cal_set;
 * tiers NULL or one per figure) on a copy of its topology, the plan's
 * strategies kept; NAN when the estimate fails. Allocates in a. */
double cost_plan_time_with(struct arena *a, const struct plan *p, int n,
                           const enum cal_param *params, const char *const *tiers,
                           const double *values);

/* The fit of a calibration that prices whole iterations ("kind":
 * "training"), NULL when it has none (then no prediction has an
 * interval). A file may hold a second one, of train.moe_overhead_us
 * alone, fitted to MoE runs over the first's figures (calibrate --runs
 * with a base that has a training fit): this is the first, the one of
 * every figure but that. */
const struct cal_fit *cost_calibration_training_fit(const struct calibration *c);
/* The training fit a prediction's interval and runs come from: for a
 * model with mixture-of-experts layers (moe) the fit of
 * train.moe_overhead_us where the file has one, else the one above. */
const struct cal_fit *cost_calibration_training_fit_for(const struct calibration *c, bool moe);
/* Whether f fitted train.moe_overhead_us. */
bool cost_cal_fit_is_moe(const struct cal_fit *f);
/* Whether a graph has mixture-of-experts layers (a MoEDispatch op). */
bool cost_graph_has_moe(const struct graph *g);

/* A prediction's interval from its calibration (docs/validation.md,
 * "Prediction intervals"), on the logarithm of the time: the variance of
 * the figures (each fit's covariance) propagated by the delta method, with
 * the gradient of the plan's estimated iteration time taken by central
 * differences of the figures, relative to the time (d ln t = dt / t), plus
 * the training fit's cross-validated residual spread in ln(predicted /
 * measured) (cv_log_rms; cv_rms_pct / 100 for a file without it). The
 * spread s so found is applied to `center_s` (the estimate's or a
 * simulation's time) as a lognormal: center x exp(± q s), q Student's t
 * quantile of 95% with the training fit's points - figures degrees of
 * freedom (the residuals' own), so that the interval never reaches 0 and
 * is as wide as a few rows warrant. */
#define CAL_INTERVAL_LEVEL 0.9
struct cal_interval {
	bool have;                   /* false: no training fit, too few rows, the
	                                figures' estimate failed or the spread is not
	                                finite; then only `why` */
	const char *why;
	double rel_sd;               /* standard deviation of ln(time) (relative, to first order) */
	double rel_sd_figures;       /* of it, the figures' covariance's part */
	int dof;                     /* the residual spread's degrees of freedom */
	double quantile;             /* Student's t quantile of (1 + level) / 2 at dof */
	double center_s, lo_s, hi_s; /* the 90% interval */
	/* The plan's settings outside the training fit's runs (with or
	 * without an interval): the interval is the spread over the fitted
	 * runs, and says nothing of an extrapolation beyond them. */
	bool runs_known;             /* the fit records its runs */
	int n_outside;
	struct cal_outside outside[CAL_SET_COUNT];
};
/* The lognormal interval of spread `log_sd` (ln scale) with `dof` degrees
 * of freedom around center_s at `level` (0.9: 90%): center x exp(± q
 * log_sd), q = Student's t quantile of (1 + level) / 2. dof < 1, a
 * log_sd not finite, or one so wide that the bounds overflow (0 or
 * infinite): no interval (out->have false, out->why says which). */
void cost_interval_of(double center_s, double log_sd, double log_sd_figures, int dof,
                      double level, struct cal_interval *out);
/* The plan's topology must be the calibrated one (c applied). False only
 * when out of memory; an interval that cannot be had is out->have false. */
bool cost_calibration_interval(struct arena *a, const struct calibration *c, const struct plan *p,
                               struct cal_interval *out);
/* The same interval around another time (a simulation's) of the same plan. */
void cost_interval_at(const struct cal_interval *in, double center_s, struct cal_interval *out);

/* ------------------------------------------- collective benchmarks */

/* A collective benchmark's table as its tool prints it (calcoll.c;
 * docs/validation.md, "Calibrating collectives"): nccl-tests
 * (all_reduce_perf and friends: size, count, type, redop, [root], then
 * time, algbw, busbw, #wrong out of place and in place) or HCCL's
 * hccl_test (data_size(Bytes) | aveg_time(us) | alg_bandwidth(GB/s) |
 * check_result). */
enum bench_tool { BENCH_NCCL_TESTS, BENCH_HCCL_TEST, BENCH_TOOL_COUNT };
extern const char *const bench_tool_names[BENCH_TOOL_COUNT];

struct bench_point {
	int line;
	double bytes;                /* nccl-tests' size; HCCL's data_size (per NPU) */
	double seconds;              /* nccl-tests: out of place; HCCL: aveg_time */
};

struct bench_table {
	const char *file;
	enum bench_tool tool;
	int ranks;                   /* nccl-tests: its "# Rank" lines; 0 when not printed */
	int ranks_line;              /* the last of them, for diagnostics */
	int n_points;
	struct bench_point *points;  /* by size, ascending; a size printed twice (several
	                                processes, repeated runs): its slowest time */
};

/* The tool whose table the text holds (its column header), -1 when
 * neither. */
int cost_bench_detect(const char *text, size_t len);
/* Reads a table; NULL after diagnostics FILE:LINE: COLUMN: MESSAGE. */
struct bench_table *cost_bench_parse(struct arena *a, const char *file, const char *text,
                                     size_t len, struct diag_list *diags);
struct bench_table *cost_bench_load(struct arena *a, const char *path, struct diag_list *diags);

struct bench_fit_options {
	const struct topology *topo;  /* NULL: the alpha-beta formula alone, absolute figures */
	enum step_kind collective;    /* STEP_ALLREDUCE, _ALLGATHER, _REDUCESCATTER, _ALLTOALL */
	int ranks;                    /* ranks 0 .. ranks-1 of the topology */
	enum collective_algo algo;    /* COLL_AUTO: cost_choose_algo's rule, size by size */
	const char *tier;             /* with a topology, the figures' tier: a tier's name or
	                                 "nic"; NULL: the innermost tier holding every rank,
	                                 the NICs when they span servers */
	int n_figures;                /* with a topology, the figures to fit, by a calibration
	                                 file's names: "tiers.TIER.latency_us",
	                                 "tiers.TIER.efficiency", "nic.latency_us",
	                                 "nic.efficiency", "nccl.ALGO.PROTO.HW_us"; at most
	                                 BENCH_MAX_FIGURES and the table's sizes - 1.
	                                 0: the tier's (tier above) latency and efficiency */
	const char *const *figures;
};
#define BENCH_MAX_FIGURES 6

/* Latency and bandwidth fitted to a table by nonlinear least squares on
 * the relative residuals (GSL), each with its standard error, and their
 * error out of sample (leave-one-out up to 20 sizes, else 10-fold). */
struct bench_fit {
	int n_points;
	const char *target;          /* "tiers.<tier>" or "nic"; NULL without a topology */
	double latency_us, latency_se_us;   /* the target's latency; without a topology the
	                                       alpha of one algorithm step */
	double efficiency, efficiency_se;   /* with a topology: of the target's line rate */
	double line_bps;                    /* that line rate */
	double busbw_bps, busbw_se_bps;     /* without a topology: the bus bandwidth B */
	double cov[2][2];                   /* of (latency_us, efficiency or busbw_bps) */
	/* Every figure fitted, in the order asked (the two above when none was):
	 * its calibration name ("alpha_us", "busbw_GBps" without a topology),
	 * units, the value found (raw: before holding it in its range), the
	 * value held, standard error, the line rate of an efficiency (else 0). */
	int n_figures;
	struct bench_figure {
		const char *name, *units;
		double raw, value, se, line_bps;
		bool identifiable, clamped;
		bool latency;                   /* a latency (us), else a bandwidth figure */
	} figure[BENCH_MAX_FIGURES];
	double covariance[BENCH_MAX_FIGURES][BENCH_MAX_FIGURES]; /* of the values, in their units */
	bool latency_identifiable, bandwidth_identifiable;
	bool latency_clamped, efficiency_clamped;  /* held at a bound of the parameter */
	double mape_pct, rms_pct;           /* in sample */
	const char *cv_method;              /* "leave-one-out" or "k-fold" */
	int cv_folds;
	double cv_mape_pct, cv_rms_pct;     /* out of sample */
	double *model_s;                    /* per point: the fitted model */
	double *cv_s;                       /* per point: predicted by the fit without it */
	enum collective_algo *algo;         /* per point: the algorithm the model ran */
	const char **protocol;              /* per point: its protocol, or NULL */
	int iterations;
};
/* False with diagnostics when the table cannot determine the figures
 * (fewer sizes than figures + 1, one size), a figure is not one the fit
 * can set in the topology, the target is not in it, or the fit fails. */
bool cost_bench_fit(struct arena *a, const struct bench_table *t,
                    const struct bench_fit_options *o, struct bench_fit *out,
                    struct diag_list *diags);
/* nccl-tests' alpha-beta coefficients of one collective over n ranks:
 * time = k_alpha x alpha + k_beta x S / B (ring all-reduce 2(n-1) and
 * 2(n-1)/n; all-gather, reduce-scatter and all-to-all n-1 and (n-1)/n). */
void cost_bench_coefficients(enum step_kind kind, int n, double *k_alpha, double *k_beta);

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
 *                       across on S/n_intra, inside (collectives.c)
 *   direct              all pairs at once, one α: AllToAll α + (n-1)/n·S/B (a switch
 *                       port or the NICs), α + S/(n·B) in a mesh; in a mesh tier also
 *                       AllGather and ReduceScatter α + S/(n·B), AllReduce twice that
 * B is the link's achievable rate (the file's line rate x its efficiency).
 * COLL_AUTO, and a wanted algorithm that does not apply to a group, pick
 * the algorithm with the least time (ties: ring, hierarchical,
 * halving-doubling, tree, direct), as NCCL's and HCCL's tuners do (NCCL's by
 * its own latencies: a calibrated nccl.* hop latency changes the chosen
 * one's time, never the choice); the estimator and the simulator ask the
 * same rule, so they agree on an uncontended collective. */
enum collective_algo cost_choose_algo(const struct topology *t, enum step_kind kind,
                                      const int64_t *ranks, int n, double bytes,
                                      enum collective_algo wanted);
/* The time of one group's collective with a given algorithm (COLL_AUTO: the
 * rule's choice). */
double cost_collective_algo_s(const struct topology *t, enum step_kind kind,
                              enum collective_algo algo, const int64_t *ranks, int n,
                              double bytes);
/* Concurrent groups share the NICs: a step's groups that span servers all
 * cross them at once. cost_groups_crossing is the number of the step's
 * ranks on each server its groups span (0 when they stay inside servers);
 * the _in forms price one group of such a step with the server's NIC
 * bandwidth divided among them (a group alone: crossing 0). The estimate
 * prices every step so, and the simulator's choice of algorithm follows. */
int cost_groups_crossing(const struct topology *t, const struct rank_groups *g);
enum collective_algo cost_choose_algo_in(const struct topology *t, enum step_kind kind,
                                         const int64_t *ranks, int n, double bytes,
                                         enum collective_algo wanted, int crossing);
double cost_collective_algo_in_s(const struct topology *t, enum step_kind kind,
                                 enum collective_algo algo, const int64_t *ranks, int n,
                                 double bytes, int crossing);

/* How a collective library's pricing differs from the physical transfers
 * of an algorithm (topologies.h, TOPO_COLL_NCCL): the simulator runs the
 * algorithm's transfers with their bytes times *wire (the protocol's
 * efficiency, NCCL's caps and size corrections) after *extra_s of library
 * latency, so that uncontended they take cost_collective_algo_s. False,
 * *wire 1 and *extra_s 0 where the physical line is the price (no
 * library, or an algorithm it does not price). */
bool cost_collective_wire(const struct topology *t, enum step_kind kind, enum collective_algo algo,
                          const int64_t *ranks, int n, double bytes, double *wire, double *extra_s);
/* NCCL's NVLS algorithms (topologies.h, topo_collectives.nvls): the members
 * a group has on each server, its channels, when they apply: 3 or more
 * members in whole-server blocks inside a switch tier; all-reduce, and
 * inside one server reduce-scatter and all-gather. 0 where they do not. */
int cost_nvls_channels(const struct topology *t, enum step_kind kind, const int64_t *ranks, int n);
/* HCCL's pipeline algorithm (topo_collectives.pipeline): the members a group
 * has on each server when it applies (all-reduce, reduce-scatter and
 * all-gather over 2 or more servers with 2 or more members each, in
 * whole-server blocks inside one tier); 0 where it does not. */
int cost_pipeline_members(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                          int n);

/* The protocol the library would use for this algorithm and message
 * ("LL", "LL128", "Simple"); NULL without a library or where it does not
 * price the algorithm by protocol. */
const char *cost_collective_protocol(const struct topology *t, enum step_kind kind,
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
	/* Megatron-LM's scatter/gather of pipeline sends (Narayanan et al.,
	 * SC21, 4.1): where the tensor crossing a cut is replicated over some
	 * of the stage's axes (the tensor-parallel group), each copy's holder
	 * sends send_split of it and the receivers all-gather it over
	 * send_groups. Per chunk, as send_bytes; send_split 1: sent whole. */
	double *send_split;
	struct rank_groups *send_groups;
	double live_min;                   /* the least over inner cuts (-1 for one op): where a
	                                      transformer's layers meet */
	bool vshape;                       /* ZB-V: chunk c on stage c for c < P, else 2P - 1 - c
	                                      (the first and last chunks on stage 0) */
	double *unit_s;                    /* [3 n_chunks] or NULL: each chunk's F, B and W seconds
	                                      per micro-batch, which ZB-V's and ZB-H2's greedy
	                                      orders follow (NULL: equal) */
};

static inline int part_stage(const struct plan_part *pp, int chunk)
{
	if (pp->vshape && chunk >= pp->n_stages)
		return 2 * pp->n_stages - 1 - chunk;
	return chunk % pp->n_stages;
}

/* The k-th of stage `stage`'s chunks, k < virtual_stages, in graph order. */
static inline int part_chunk(const struct plan_part *pp, int stage, int k)
{
	if (pp->vshape && k == 1)
		return 2 * pp->n_stages - 1 - stage;
	return k * pp->n_stages + stage;
}

/* The seconds of the sends at the boundary after chunk c, one way, from
 * the first rank of one stage to its peer at `to`: the p2p of
 * send_bytes / send_split, then the all-gather of send_bytes over
 * send_groups (cost_groups_algo_s's rule with `wanted`). */
double cost_part_send_s(const struct topology *t, const struct plan_part *pp, int c, int64_t from,
                        int64_t to, enum collective_algo wanted);

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
	bool split;    /* a backward of the input gradients only: a weight unit follows */
	bool weight;   /* the weight gradients of a split backward (zero-bubble W) */
	bool fb;       /* an F&B: this chunk's forward overlapped with the backward of
	                  micro-batch pair_micro of chunk pair_chunk on its stage (DualPipe's;
	                  Megatron-Core's combined 1F1B, plan_combined_schedule) */
	int pair_chunk;
	int64_t pair_micro;
};

/* The part of op i's backward seconds that computes weight gradients
 * (the zero-bubble schedules' W): half of a MatMul's or BatchMatMul's
 * with a parameter input (its weight-gradient GEMM has the FLOPs of the
 * input-gradient one); 0 for every other op, whose parameter gradients
 * (norms, biases) are reductions taken in B. */
double plan_weight_grad_s(const struct graph *g, int i, double backward_s);

/* The order in which stage `stage` runs its units over m micro-batches
 * (docs/planner.md, "Pipelines"): GPipe, 1F1B, or Megatron's interleaved
 * 1F1B when the part has virtual stages, or ZB-H1, ZB-H2 and ZB-V (each
 * backward split into B and W slots). Returns the count (2 m v; the
 * zero-bubble ones 3 m v) and the slots in *out (arena), -1 when out of
 * memory. DualPipe's order is plan_dualpipe_schedule's. */
int plan_schedule(struct arena *a, const struct plan_part *pp, int64_t m,
                  enum pipeline_schedule sched, int stage, struct prog_slot **out);

/* Megatron-Core's combined 1F1B (--overlap-moe-expert-parallel-comm;
 * megatron/core/pipeline_parallel/combined_1f1b.py and schedules.py,
 * get_pp_rank_microbatches): plan_schedule's 1F1B, or its interleaved
 * 1F1B when the part has virtual stages, with one more warm-up forward
 * (without a pipeline, the first forward alone) and each steady-state
 * forward and the backward after it one F&B slot, run layer by layer
 * together so that each one's expert all-to-alls run beside the other's
 * compute; the cool-down backwards alone. Returns the count and the slots
 * in *out (arena), -1 when out of memory. */
int plan_combined_schedule(struct arena *a, const struct plan_part *pp, int64_t m, int stage,
                           struct prog_slot **out);

/* DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, section
 * 3.2.1; deepseek-ai/DualPipe's dualpipe.py): the order of stage `stage`
 * of P (even) over m micro-batches (even, at least 2P), half fed from
 * each end. Chunks are the program's: chunk d (< P) is stage d's model
 * chunk in the forward direction, chunk P + c the reverse direction's
 * copy of model chunk c, on stage P - 1 - c (so stage d holds chunks d
 * and 2P - 1 - d, the V of plan_part.vshape). Micro-batches count per
 * direction (0 .. m/2 - 1). Returns the count and the slots in *out
 * (arena), -1 when out of memory. */
int plan_dualpipe_schedule(struct arena *a, int P, int64_t m, int stage, struct prog_slot **out);

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
	double input_grad_s;                        /* of comm_backward_s: the all-reduces of its
	                                               inputs' gradients */
	double moe_forward_s, moe_backward_s;       /* of redistribution_s and comm_backward_s: a
	                                               MoE dispatch or combine into it
	                                               (cost_moe_edge) */
	double host_forward_s, host_backward_s;     /* of compute_forward_s and compute_backward_s:
	                                               the host's wait (a MoE layer's, on its
	                                               MoEDispatch: train.moe_overhead_us,
	                                               docs/moe-cp.md), which hides nothing */
	double recompute_s;                         /* forward work redone in backward */
	double gather_s;                            /* ZeRO-3: its parameters gathered, forward and backward */
	double gather_one_s;                        /* ZeRO-3: one gather of them on the
	                                               communication stream (with DeepSpeed
	                                               2021's list copies) */
	double gather_fill_s;                       /* DeepSpeed 2021: their buffers zero-filled
	                                               before one gather, in line */
	uint8_t gathers_rec, gathers_bwd;           /* ZeRO-3: gathers in the recomputed forward
	                                               (DeepSpeed 2021) and the backward */
	double gradient_s;                          /* its gradients' share of their buckets */
	double activation_bytes;                    /* what it saves for its backward, per device
	                                               per micro-batch (cost_op_saved_bytes) */
	int chunk;                                  /* its pipeline chunk */
};

/* Memory of one device (bytes). */
struct est_memory {
	double params, grads, optimizer;            /* after ZeRO's sharding */
	double activations;                         /* the micro-batches in flight, after recomputation */
	double buffers;                             /* communication: a gradient bucket, the pipeline's
	                                               send and receive, ZeRO-3's gathered parameters */
	double reserve;                             /* the runtime's: the device's memory_reserve */
	double total;
	double host;                                /* in host memory (not in total): the optimizer
	                                               state (training.optimizer_offload) and the
	                                               offloaded activations */
	double host_activations;                    /* of host: training.activation_offload_layers'
	                                               saved activations, the micro-batches in flight */
};

/* One pipeline stage (the whole plan when there is one). */
struct est_stage {
	double micro_s;                             /* one micro-batch through its chunks, forward and
	                                               backward, with their communication */
	double p2p_s;                               /* of micro_s: sends to the neighbouring stages */
	double moe_hidden_s;                        /* training.moe_a2a_overlap: the MoE dispatches'
	                                               and combines' seconds an iteration run
	                                               beside the paired pass's compute (taken off
	                                               micro_s) */
	double gradient_s, optimizer_s;             /* once per iteration after the flush (gradient_s:
	                                               buckets, ZeRO 1/2's gathers, tied_s,
	                                               mirror_s) */
	/* Parameters read on several stages (a head tied to the word
	 * embedding): after the flush the stages holding copies sum their
	 * gradients in a ring, each rank sending tied_bytes to its peer on
	 * stage tied_next and receiving its peer's on tied_prev (both the
	 * stage itself, and tied_bytes 0, when it shares none). */
	int tied_next, tied_prev;
	double tied_bytes, tied_s;                  /* tied_s: of gradient_s */
	/* DualPipe: the shared parameters' gradient bytes of a pair of
	 * stages on the same devices (d and P-1-d, the embedding and the
	 * head or multi-token prediction module that shares it), summed in
	 * place: no send (tied_bytes, tied_s 0); tied_next is the other */
	double tied_local_bytes;
	/* DualPipe: device d holds model chunks d and P-1-d, as does its
	 * mirror stage P-1-d; after the flush each rank sends its peer there
	 * both chunks' gradients (mirror_bytes, cost_chunk_grad_bytes) and
	 * receives as many, before the optimizer (0 otherwise). */
	double mirror_bytes, mirror_s;              /* mirror_s: of gradient_s */
	double in_flight;                           /* micro-batches whose activations it holds at most */
	double offload_s;                           /* of micro_s: the activation offload's copies
	                                               that outlast their compute window, forward
	                                               and backward (in comm_forward, comm_backward) */
	double offload_forward_s, offload_backward_s; /* offload_s's two parts (sim/lower.c
	                                                 lowers them) */
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
	double reserve_bytes;                       /* the runtime's reserve (the device's) */
	int memory_stage;                           /* the stage of the largest device */
	double hbm_bytes;                           /* the device's memory */
	double oom_overflow_bytes;                  /* how far the largest device is over it; 0 fits */
	/* training.optimizer_offload: what a server's host memory holds, the
	 * largest device's offloaded optimizer state times the devices of
	 * the job on a server (0 without offload), against the topology's
	 * server.host.memory_GB (host_capacity_bytes; 0: not stated, not
	 * checked) */
	double host_bytes_per_device, host_bytes_per_server, host_capacity_bytes;
	double host_activation_bytes_per_device;    /* of host_bytes_per_device: the offloaded
	                                               activations (training.activation_offload_layers) */
	double host_overflow_bytes;                 /* how far a server's host is over it; 0 fits */
	double pipeline_s, bubble_s;                /* the schedule's time, and of it the bubble */
	int critical_stage;                         /* the slowest stage per micro-batch */
	struct plan_part part;
	int n_stages;
	struct est_stage *stages;
	bool compute_fallback;                      /* some dtype had no peak (cost_compute_s) */
	int n_ops;
	struct est_op *ops;                         /* per graph op */
};

/* The symbolic estimate of a complete plan on the scenario's topology:
 * plan_estimator_new, plan_estimator_run and plan_estimator_free. */
bool plan_estimate(struct arena *a, const struct plan *p, struct estimate *out,
                   struct diag_list *diags);

/* An estimator: what the estimate computes once per plan, kept for every
 * run: each op's compute and collectives, the redistributions, the
 * gradient synchronisation steps, the fused input gradients, which reads
 * of a parameter are its first, the attention cores, the memo of
 * collective times and the scratch tables. A run reads the scenario's
 * training settings that leave the plan as it is (pipeline schedule and
 * virtual stages, cuts, recomputation, ZeRO stage, gradient buckets,
 * global batch) when it runs, so a search that changes only those
 * (planner/search.c, studies) estimates each variant without pricing the
 * plan again; its output is plan_estimate's, byte for byte. The plan, its
 * graph, scenario and topology must outlive the estimator and not change
 * otherwise. NULL after a diagnostic (out of memory). */
struct estimator;
struct estimator *plan_estimator_new(const struct plan *p, struct diag_list *diags);
/* One estimate, its arrays in `a`; false after a diagnostic. */
bool plan_estimator_run(struct estimator *x, struct arena *a, struct estimate *out,
                        struct diag_list *diags);
void plan_estimator_free(struct estimator *x);

/* The gradient bytes of the parameters that the ops [lo, hi) (a pipeline
 * chunk) hold on one rank, as they are reduced (cost_grad_bytes_per_elem
 * of the scenario's precision), each a 1/n shard when ZeRO (stage >= 1)
 * reduce-scatters it over its n data-parallel ranks: what DualPipe's two
 * copies of a chunk exchange after the flush (est_stage.mirror_bytes; the
 * lowering's send). r: plan_param_reads of the plan's graph. */
double cost_chunk_grad_bytes(const struct plan *p, const struct param_reads *r, int lo, int hi);
/* The ops [*lo, *hi) whose parameters chunk c's gradient buckets leave
 * out (plan_gradient_buckets_except), none (0, 0) but under DualPipe
 * (training.schedule "dualpipe", an even number of stages P) with ZeRO 0
 * or 1: device d holds chunks d and P-1-d, and a parameter both read (the
 * embedding that a multi-token prediction module or a tied head on the
 * last stage shares with the first) is one gradient there, which both
 * chunks' backwards accumulate and the data-parallel group synchronises
 * once, with the chunk that holds its single copy: the first to read it
 * (d < P/2, where the estimate keeps its memory and its optimizer step),
 * so chunk c >= P/2 leaves out what chunk P-1-c read before it. ZeRO 2
 * and 3 reduce every micro-batch's gradients, and a micro-batch passes
 * through one of the two chunks on a device: each its own. */
void cost_chunk_bucket_skip(const struct plan *p, const struct plan_part *pp, int c, int *lo,
                            int *hi);
/* The ops [*lo, *hi) whose parameters chunk c leaves out of the
 * all-gather of the updated parameters after the optimizer step (ZeRO 1
 * and 2, one per gradient bucket: plan_gradient_buckets_except), none
 * (0, 0) but under DualPipe with ZeRO 1 or 2, where, as in
 * cost_chunk_bucket_skip, chunk c >= P/2 leaves out what chunk P-1-c read
 * before it: the device steps the parameter both read once, with chunk
 * P-1-c, and gathers its updated shards once, there. With ZeRO 2 the
 * chunk still reduce-scatters that parameter's gradient every
 * micro-batch (cost_chunk_bucket_skip leaves it in): what each of its
 * micro-batches adds is a gradient of its own. */
void cost_chunk_gather_skip(const struct plan *p, const struct plan_part *pp, int c, int *lo,
                            int *hi);

/* ------------------------- mixture of experts and context parallelism */

/* One mixture-of-experts layer (moe_cp.c; docs/moe-cp.md): a router picks
 * top_k of `experts` routed experts per token; `shared_experts` more run
 * on every token (DeepSeek-MoE, Qwen-MoE). Each expert is a gated (SwiGLU:
 * gate, up, down) or plain (fc1, fc2) MLP of h x expert_ffn matrices. */
struct moe_shape {
	int64_t hidden;                /* h */
	int64_t expert_ffn;            /* f, one expert's intermediate size */
	int64_t experts;               /* E routed experts */
	int64_t top_k;                 /* k experts per token, 1 <= k <= E */
	int64_t shared_experts;        /* each of f too; 0: none */
	bool gated;                    /* 3 matrices per expert, else 2 */
	bool shared_gate;              /* the shared experts' output scaled by a sigmoid of
	                                  an h x 1 linear (Qwen2-MoE): counted with the
	                                  router, replicated like it */
	double capacity_factor;        /* slots per expert over the balanced share t·k/E (> 0) */
	enum dtype dtype;
};

/* Expert-parallel degree (E/ep experts per rank) and expert tensor
 * parallelism (each expert's matrices cut over etp ranks). */
struct moe_parallel {
	int64_t ep, etp;
};

/* Per layer, per rank, forward, for a rank that holds `tokens` tokens on
 * entering the layer. */
struct moe_layer {
	int64_t params_total;          /* router (and shared gate) + routed + shared experts,
	                                  elements */
	int64_t params_active;         /* those one token uses: router + k routed + shared */
	int64_t params_per_device;     /* router (replicated) + routed/(ep·etp) + shared/etp */
	int64_t capacity;              /* C: slots per expert in one rank's buffer,
	                                  ceil(capacity_factor · tokens · k / E) */
	double dispatch_bytes;         /* S of one AllToAll (dispatch, and the combine
	                                  alike): the rank's buffer E · C · h · dtype */
	double expert_slots;           /* token slots this rank's experts run: E · C · etp */
	double expert_flops;           /* routed experts on them, padding included */
	double etp_gather_bytes;       /* with etp > 1: S of the AllGather of the slots over
	                                  the ETP group (and of the ReduceScatter after) */
	double router_flops;           /* 2 · tokens · h · E (+ h with the shared gate) */
	double shared_flops;           /* 2 · tokens · (shared parameters / etp) */
	double active_flops;           /* 2 · tokens · k · (one expert's parameters): the
	                                  routed work without padding, unsharded */
};
/* False when the shape or the degrees are invalid (E not divisible by ep,
 * f not by etp, k > E, a count past 2^53). */
bool cost_moe_layer(const struct moe_shape *m, const struct moe_parallel *p, int64_t tokens,
                    struct moe_layer *out);
/* One dispatch (or combine) AllToAll over the expert-parallel group's
 * ranks on the topology; a layer's iteration does 4 per micro-batch (two
 * forward, two backward). */
double cost_moe_alltoall_s(const struct topology *t, const int64_t *ep_ranks, int ep,
                           const struct moe_layer *l);

/* A mixture-of-experts dispatch or combine as HybridEP and DeepEP run it
 * (training.moe_dispatcher "hybridep", "deepep"; docs/moe-cp.md,
 * "Dispatchers"): a token goes once to each other server holding one of
 * its experts (to the rank of its own local index there) and on over that
 * server's links to the experts' ranks; the combine mirrors it. `experts`
 * E and `copies`, a token's slots (k x the capacity factor, the buffer's
 * E x C over the tokens T); experts 0: not such an edge. */
struct cost_ep_route {
	double experts, copies;
};
/* The route of the AllToAll on the plan edge from `producer` (a
 * MoEDispatch: dispatch) to `consumer` (a MoECombine: combine) when the
 * training's dispatcher sends a token to each server once (HybridEP,
 * DeepEP); false, and out->experts 0, on any other edge or dispatcher. */
bool cost_moe_edge_route(const struct graph *g, const struct training *t, int producer,
                         int consumer, struct cost_ep_route *out);
/* Whether the plan edge from `producer` to `consumer` is a mixture of
 * experts' dispatch (out of a MoEDispatch) or combine (into a MoECombine),
 * whatever the dispatcher: what training.moe_a2a_overlap runs beside the
 * paired pass's compute. */
bool cost_moe_edge(const struct graph *g, int producer, int consumer);
/* For an AllToAll of a group of n ranks on the topology: false unless it
 * spans servers in whole blocks (topo_server_blocks) of *per_server
 * ranks; then *to_server, the share of S a rank sends to each other
 * server: a token's chance of an expert there, over its copies,
 * (1 - C(E - E/m, k) / C(E, k)) / k for m servers and k copies. */
bool cost_ep_hybrid_shape(const struct topology *t, const int64_t *ranks, int n,
                          const struct cost_ep_route *ep, int *per_server, double *to_server);
/* Its seconds on S bytes a rank: the two legs at once, the slower of
 * (m - 1) x to_server x S over the inter-server link (its NIC shared by
 * the server's ranks sending together) and (c - 1)/c x S over the server's
 * tier, each after its latency; the plain AllToAll's rule where
 * cost_ep_hybrid_shape says no. */
double cost_ep_hybrid_s(const struct topology *t, const int64_t *ranks, int n, double bytes,
                        const struct cost_ep_route *ep);
/* The slowest group of a step's groups (rank_groups) by cost_ep_hybrid_s. */
double cost_groups_ep_hybrid_s(const struct topology *t, const struct rank_groups *g,
                               double bytes, const struct cost_ep_route *ep);

/* One attention layer under context parallelism (ring attention). */
struct cp_attention {
	int64_t batch, seq, heads, kv_heads, head_dim;
	enum dtype dtype;
	bool causal;                   /* balanced by 2·cp chunks: seq must divide by 2·cp */
};
struct cp_layer {
	int64_t local_seq;             /* seq / cp tokens per rank */
	int64_t steps;                 /* ring steps per pass: cp - 1 */
	double kv_chunk_bytes;         /* one step's message: K and V, 2·B·(s/cp)·kv_heads·d·dtype */
	double fwd_send_bytes;         /* per rank per layer: (cp - 1) chunks */
	double bwd_send_bytes;         /* K, V and dK, dV: twice the forward */
	double kv_buffer_bytes;        /* the chunks in flight a rank holds (send and receive) */
	double core_flops_rank;        /* QK^T and PV per rank, forward, balanced */
	double core_flops_max_contiguous; /* the busiest rank with contiguous chunks */
	double imbalance;              /* busiest / average with contiguous chunks
	                                  (about (2cp-1)/cp causal; 1 otherwise) */
};
bool cost_cp_attention(const struct cp_attention *a, int64_t cp, struct cp_layer *out);
/* One ring pass: cp blocks of block_s each, the chunk sent over each hop
 * (ranks[i] -> ranks[i+1]) while the previous block computes; returns the
 * pass's time, the communication left exposed into *exposed_s (may be
 * NULL). */
double cost_cp_ring_s(const struct topology *t, const int64_t *ranks, int cp, double chunk_bytes,
                      double block_s, double *exposed_s);

/* --------------------------------------------------------------- memory */

/* Model state per local parameter element of dtype dt under a precision
 * recipe (memory.c; docs/cost-models.md, "Precision recipes"): the weight
 * as it is held, its gradient (accumulation buffer), the optimizer's
 * master weight (fp32 unless training.main_params_dtype) and master
 * gradient (fp32, Megatron's fp16 recipe only), and its state (Adam's two
 * moments, fp32 unless training.exp_avg_dtype, exp_avg_sq_dtype).
 * PRECISION_AUTO picks Megatron-LM's recipe of dt (bf16, fp16) or plain
 * fp32 Adam; a dtype that is not trained holds its weight only. */
struct cost_state_bytes {
	double weight, grad, master, master_grad, moments;
	double fp8;   /* the FP8 recipes: Transformer Engine's FP8 copy of a Linear's weight
	                 and its transpose, rebuilt from the weight each iteration (not
	                 checkpointed; the estimate adds it for the layers' Linears only) */
};
/* The FP8 recipes (training.precision fp8-hybrid, fp8-e4m3). */
bool cost_precision_fp8(enum precision_recipe r);
/* Transformer Engine's scaling state of one FP8 GEMM (a Linear): the amax
 * histories of its three forward tensors (input, weight, output) and two
 * backward ones (output gradient, input gradient), COST_FP8_AMAX_HISTORY
 * fp32 entries each, with a scale and its inverse per tensor, in bytes. */
#define COST_FP8_AMAX_HISTORY 1024
double cost_fp8_meta_bytes(void);
/* Under the scenario's training (NULL: PRECISION_AUTO, nothing else):
 * its precision recipe, training.grad_reduce_in_bf16 (the bf16 recipes'
 * gradients in 2 bytes, not 4), and the optimizer's state dtypes
 * (training.main_params_dtype for the master weight, exp_avg_dtype and
 * exp_avg_sq_dtype for Adam's moments; fp32 unless set). */
void cost_state_bytes(const struct training *tr, enum dtype dt, struct cost_state_bytes *out);
double cost_param_bytes_per_elem(const struct training *tr, enum dtype dt);
double cost_grad_bytes_per_elem(const struct training *tr, enum dtype dt);
/* master + moments: what ZeRO stage 1 divides */
double cost_optimizer_bytes_per_elem(const struct training *tr, enum dtype dt);
/* The bytes a gradient bucket's collective moves: its gradients in the
 * dtype they are kept in (fp32 for bf16 weights: Megatron-LM accumulates
 * and all-reduces bf16 models' gradients in fp32), where b->bytes counts
 * them in the parameters' dtype (bf16 under training.grad_reduce_in_bf16).
 * The estimate and the lowering both use it. */
double cost_bucket_wire_bytes(const struct plan_bucket *b, const struct training *tr);
/* The bytes an all-gather of op `op`'s parameters moves, `bytes` of them
 * counted in their dtype `dt`: one byte an element for an FP8 Linear's
 * weight under training.fp8_param_gather (Megatron-Core gathers the FP8
 * data itself), else `bytes`. */
double cost_param_gather_bytes(const struct graph *g, const struct training *tr, int op,
                               double bytes, enum dtype dt);
/* The same over a bucket of updated parameters (ZeRO 1/2's gather after
 * the step); the estimate and the lowering both use it. */
double cost_bucket_gather_bytes(const struct graph *g, const struct training *tr,
                                const struct plan_bucket *b);

/* DeepSpeed's stage 3 of 2021 (training.zero3_impl "deepspeed-2021",
 * zero3.c; docs/cost-models.md, "A ZeRO-3 framework's own costs"). Is it
 * the scenario's ZeRO-3? */
bool cost_zero3_deepspeed(const struct training *t);
/* The unit ZeRO-3 gathers op `op`'s parameters with: PyTorch FSDP and
 * Megatron-FSDP (training.zero3_impl "fsdp") wrap each transformer layer
 * as one unit, whose parameters are all-gathered together when the layer
 * is reached and the next layer's prefetched then (torchtitan's
 * fully_shard per TransformerBlock; Megatron-FSDP's fsdp_unit_modules,
 * TransformerLayer by default): the layer's index for an op named
 * "layers.N." (the generators' names); -1 for an op gathered on its own
 * (every op under "collectives" and DeepSpeed 2021, which gathers per
 * submodule; ops outside the layers). The estimate and the lowering both
 * use it. */
int cost_zero3_unit(const struct graph *g, const struct training *tr, int op);
/* A parameter of `elems` elements stays whole (never gathered): under
 * stage3_param_persistence_threshold. */
bool cost_ds_persistent(double elems);
/* The parameters ZeRO-3 gathers before op d (plan_op_params' from lo,
 * into inputs[] and sync[]): those synchronised over a data-parallel
 * group, less, under DeepSpeed 2021, those it keeps whole. The estimate
 * and the lowering both use it. Returns the count. */
int cost_zero3_gathered(const struct graph *g, const struct training *tr,
                        const struct param_reads *r, int lo, const struct dist_op *d,
                        int inputs[SIG_MAX_TENSORS], const struct comm_step *sync[SIG_MAX_TENSORS]);
/* What a gather of `bytes` over `ranks` puts in line before the op's
 * kernels: its buffer filled with zeros, and the host's issue of the
 * list's copy kernels, one a rank (the device idle since the module's
 * synchronisation). */
double cost_ds_gather_inline_s(const struct topo_device *d, int64_t ranks, double bytes);
/* The bytes of those copies (`bytes` read and written), on the
 * communication stream behind the gather. */
double cost_ds_copy_bytes_s(const struct topo_device *d, int64_t ranks, double bytes);
/* A list reduce-scatter's copies into a flat buffer, one view per rank:
 * `ranks` copy kernels moving `bytes` in all (read and written). */
double cost_ds_list_copies_s(const struct topo_device *d, int64_t ranks, double bytes);
/* A bucket's flush: its buffer of cap_bytes divided by the data-parallel
 * size, and a gradient larger than the buffer divided on its own. */
double cost_ds_bucket_div_s(const struct topo_device *d, const struct plan_bucket *b,
                            double cap_bytes);
/* Per op of [lo, hi) (indexed from lo): 1 when DeepSpeed gathers its
 * parameters again for the recomputed forward (rec_n) and for the
 * backward (bwd_n), by stage3_max_reuse_distance over its trace of a
 * micro-batch; false when out of memory (scratch from `a`). */
bool cost_ds_regathers(struct arena *a, const struct graph *g, const struct plan *p,
                       const struct param_reads *r, int lo, int hi, enum recompute_mode rec,
                       uint8_t *rec_n, uint8_t *bwd_n);

/* Whether a predicted peak fits a device (memory.c; docs/cost-models.md,
 * "Fits, tight, does not fit"): the band [low, high] is the peak ± 5%; it
 * fits when high is at most the capacity, does not fit when low is over
 * it, and is tight otherwise. */
enum fit_class { FIT_YES, FIT_TIGHT, FIT_NO, FIT_COUNT };
extern const char *const cost_fit_names[FIT_COUNT];   /* "fits", "tight", "does not fit" */
struct cost_verdict {
	enum fit_class fit;
	double peak_bytes, low_bytes, high_bytes, capacity_bytes;
	double margin_bytes;                        /* capacity - peak (negative: over) */
};
void cost_memory_verdict(double peak_bytes, double capacity_bytes, struct cost_verdict *out);

/* The activations chunk ch of a plan keeps per micro-batch for its
 * backward (*stored), by what each op's gradient reads and the scenario's
 * recomputation (memory.c), and with full or "op" recomputation the most
 * one transformer layer adds while it is recomputed (*working, else 0).
 * `core`: plan_attention_core; `x`: cost_act_scratch_new's scratch for the
 * plan, reused chunk after chunk (nothing is allocated here). */
struct cost_act_scratch;
/* Which ops a backward recomputes (per op, NULL on OOM). Full
 * recomputation: the ops of every transformer layer with
 * training.recompute_layers 0 (Megatron-LM's --recompute-method uniform,
 * torchtitan's and FSDP's per-block checkpointing: the embedding, the final
 * norm, the head and the loss are not checkpointed; a chunk that names no
 * layers is one block, every op); with N > 0
 * the ops of the first N transformer layers of each chunk (Megatron-LM's
 * --recompute-method block: transformer_block.py's _checkpointed_forward
 * checkpoints layers 0 .. N-1 of the chunk's block and runs the rest
 * plainly), and nothing outside the layers. Recompute "op": the layers'
 * ops that torchtitan's per-op policy does not keep (memory.c,
 * op_policy). All false otherwise. */
bool *cost_recomputed(struct arena *a, const struct plan *p, const struct plan_part *pp);
/* What every op of plan p saves, found once, and two tables the size of
 * the graph's tensors, each cleared in O(1) per use; NULL when out of
 * memory. The scratch points to the plan: use it only while the plan lives. */
struct cost_act_scratch *cost_act_scratch_new(struct arena *a, const struct plan *p);
void cost_chunk_activations(struct cost_act_scratch *x, const struct plan_part *pp,
                            const bool *core, int ch, double *stored, double *working);
/* What op `op` saves for its backward on one rank, per micro-batch, before
 * sharing with other readers and recomputation. */
double cost_act_op_bytes(const struct cost_act_scratch *x, int op);
/* Activation offload (training.activation_offload_layers, Megatron-Core's
 * --cpu-offloading-num-layers; docs/cost-models.md, "Activation offload"):
 * of what chunk ch saves per micro-batch (no recomputation), the bytes of
 * each transformer layer numbered below n_offload, into layer_bytes[layer]
 * (n_offload entries, zeroed first), their sum (*offloaded) and the
 * largest (*largest); *layers: the chunk's transformer layers, *layer_ops:
 * 1 for each of its ops inside one ([n_ops]), for the caller's times. */
void cost_chunk_offload(struct cost_act_scratch *x, const struct plan_part *pp, const bool *core,
                        int ch, int64_t n_offload, double *layer_bytes, double *offloaded,
                        double *largest, int64_t *layers, uint8_t *layer_ops);

/* ---------------------------------------- pricing, for the strategies */

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

#endif
