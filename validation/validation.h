/* validation.h — published measurements to check predictions against.
 *
 * A validation file ("format": "shardlab-validation") holds rows of one
 * kind:
 * - training: a published training run, written as a scenario (the
 *   scenario schema, inline or a file) plus what the scenario cannot say
 *   (the tensor-parallel degree, the micro-batch per data-parallel
 *   replica) and the measured figure: iteration seconds, TFLOP/s per
 *   device (with the source's way of counting FLOPs), tokens/s per device,
 *   tokens/s or samples/s;
 * - collectives: a measured collective (nccl-tests conventions: algbw =
 *   S / t, busbw = algbw x 2(n-1)/n for AllReduce, x (n-1)/n for AllGather,
 *   ReduceScatter and AllToAll) on a topology with some devices, at one or
 *   more message sizes.
 *
 * This module loads and checks the files (load.c), converts between an
 * iteration time and the unit a source reports, predicts each row
 * (run.c: planned, estimated, simulated) and scores the predictions
 * against the measurements (score.c). It never prints: cli/cmd_validate.c
 * parses the command line and prints what these functions return.
 *
 * Units: seconds, bytes, bytes/s, FLOPs (double); counts int64_t.
 *
 * Data flow: util, topologies, models, scenarios, planner, sim -> validation.
 */
#ifndef SHARDLAB_VALIDATION_H
#define SHARDLAB_VALIDATION_H

#include <stdbool.h>
#include <stdint.h>

#include "planner.h"
#include "scenarios.h"
#include "sim.h"
#include "topologies.h"
#include "util.h"

#define VALIDATION_FORMAT "shardlab-validation"
#define VALIDATION_VERSION 1

enum validation_kind { VALIDATION_TRAINING, VALIDATION_COLLECTIVES, VALIDATION_KIND_COUNT };
extern const char *const validation_kind_names[VALIDATION_KIND_COUNT];

/* What a training row's source measured. */
enum validation_measure {
	MEASURE_ITERATION_S,               /* seconds per iteration */
	MEASURE_TFLOPS_PER_DEVICE,         /* FLOPs per iteration (counted as the source does)
	                                      / (devices x iteration time), in 10^12 */
	MEASURE_TOKENS_PER_S_PER_DEVICE,   /* global batch x seq / (devices x iteration time) */
	MEASURE_TOKENS_PER_S,              /* global batch x seq / iteration time */
	MEASURE_SAMPLES_PER_S,             /* global batch / iteration time */
	MEASURE_COUNT
};
extern const char *const validation_measure_names[MEASURE_COUNT];

/* How a source counts the FLOPs of an iteration (docs/validation.md). */
enum validation_flops {
	FLOPS_MEGATRON,    /* Narayanan et al. SC21: 96 B s l h^2 (1 + s/(6h) + V/(16 l h)),
	                      recomputation included; a GPT with ffn = 4 h */
	FLOPS_MODEL,       /* 6 N B s: N the model's parameters, B s the tokens */
	FLOPS_PALM,        /* (6 N + 12 l h s) B s: PaLM's (Chowdhery et al. 2022, appendix B),
	                      attention included */
	FLOPS_COUNT
};
extern const char *const validation_flops_names[FLOPS_COUNT];

struct validation_training_row {
	const char *name;
	const char *source;                /* the citation */
	const char *note;                  /* NULL when none */
	int line;                          /* of the row in the file */
	struct scenario *scenario;         /* as the row sets it: with a micro_batch, the graph
	                                      generated again at micro_batch x DP samples */
	enum planner_kind planner;
	int64_t tensor_parallel;           /* 0: the planner's own choice */
	int64_t micro_batch;               /* samples per replica per micro-batch; 0: the
	                                      scenario's graph as it is */
	enum validation_measure measure;
	enum validation_flops flops;       /* MEASURE_TFLOPS_PER_DEVICE */
	double value;                      /* measured, in the unit of `measure` */
	double flops_per_iteration;        /* as the source counts them (TFLOP/s rows), else 0 */
	double tokens_per_iteration;       /* global batch x seq; 0 when the graph has no seq */
	double memory_bytes;               /* measured peak memory per device ("memory_GB");
	                                      0 when the source gives none */
};

/* One measured size of a collective. */
struct validation_point {
	double bytes;                      /* S: AllReduce each rank's buffer, AllGather the
	                                      gathered whole (nccl-tests' size) */
	double busbw_bps;                  /* measured, as bus bandwidth */
	bool measured_algbw;               /* the source gave algbw (busbw derived from it) */
};

struct validation_collective_row {
	const char *name;
	const char *system;                /* the measured system, as the source names it; NULL */
	const char *source;
	const char *note;                  /* NULL when none */
	int line;
	struct topology *topo;
	int64_t devices;                   /* ranks 0 .. devices-1 of the topology, one group */
	enum step_kind collective;         /* STEP_ALLREDUCE, _ALLGATHER, _REDUCESCATTER, _ALLTOALL */
	enum collective_algo algo;         /* COLL_AUTO: cost_choose_algo's rule */
	int n_points;
	struct validation_point *points;
};

struct validation {
	const char *file;
	const char *name;
	const char *description;           /* NULL when none */
	enum validation_kind kind;
	int n_rows;
	struct validation_training_row *training;       /* VALIDATION_TRAINING */
	struct validation_collective_row *collectives;  /* VALIDATION_COLLECTIVES */
};

/* Load and check a validation file and every scenario and topology its
 * rows name. NULL after diagnostics (all of the file's problems). */
struct validation *validation_load(struct arena *a, const char *path, struct diag_list *diags);
/* The same from a parsed document whose "format" is VALIDATION_FORMAT. */
struct validation *validation_load_doc(struct arena *a, struct json_doc *doc);

/* The FLOPs of one iteration of a GPT-style generated model counted the
 * source's way, for global_batch samples; -1 when the model cannot be
 * counted that way (no generator; FLOPS_MEGATRON: not a gpt with ffn =
 * 4 hidden), with the reason in *why when not NULL. */
double validation_flops_per_iteration(const struct graph *g, enum validation_flops how,
                                      int64_t global_batch, const char **why);

/* A predicted iteration time in the unit of the row's measurement. */
double validation_predicted(const struct validation_training_row *r, double iteration_s);

/* nccl-tests' bus-bandwidth factor: 2(n-1)/n for AllReduce, (n-1)/n for
 * AllGather, ReduceScatter and AllToAll, 1 otherwise. */
double validation_bus_factor(enum step_kind kind, int64_t n);

/* 100 (predicted / measured - 1); 0 when measured is not positive. */
double validation_error_pct(double predicted, double measured);
/* The mean of |errors_pct[i]| over n (NAN when n is 0). */
double validation_mape(const double *errors_pct, int n);

/* ------------------------------------------------ run.c: the predictions */

/* How the rows are predicted. The callbacks (each may be NULL) let a caller
 * show progress: the planner's (megatron-search rows) and the simulator's. */
struct validation_run_options {
	bool estimate_only;                /* training: no simulation; collectives: the formula
	                                      only */
	void (*plan_progress)(void *ctx, double fraction);
	void *plan_progress_ctx;
	void (*sim_progress)(void *ctx, double simulated_s, double fraction);
	void *sim_progress_ctx;
};

/* A training row predicted. */
struct validation_training_result {
	const struct validation_training_row *row;
	const struct plan *plan;           /* the row's plan (in the arena); NULL when none */
	const char *error;                 /* no plan or no estimate: why (then nothing below) */
	bool oom;                          /* estimated over the HBM: a failed prediction (the
	                                      row's run trained), its time still counted */
	double memory_bytes;               /* the estimate's peak per device */
	double hbm_bytes;                  /* the device's */
	/* training.optimizer_offload and activation_offload_layers: what a
	 * server's host memory holds (the estimate's host_bytes_per_server;
	 * 0 without offload) against the topology's server.host.memory_GB
	 * (0: not stated, not checked); host_oom, over it ("does not fit"),
	 * is a failed prediction as oom is, counted apart */
	bool host_oom;
	double host_bytes, host_capacity_bytes;
	double est_s, est_value, est_err;  /* iteration seconds; in the row's unit; error % */
	bool simulated;
	const char *sim_error;             /* estimated but not simulated: why (NULL when the
	                                      simulation was not asked for) */
	double sim_s, sim_value, sim_err;
	/* The 90% intervals from the calibration the row's topology carries
	 * (est_iv.have false without one), in seconds, and in the row's unit
	 * with whether the measurement falls inside. */
	struct cal_interval est_iv, sim_iv;
	double est_lo, est_hi, sim_lo, sim_hi;
	bool est_covered, sim_covered;
};

/* Plans the row (megatron at its tensor-parallel degree, else its
 * planner), estimates it and, unless o->estimate_only, simulates it (the
 * scenario's fidelity, collective algorithm and gradient buckets). What
 * failed is in out->error or out->sim_error, the first diagnostic's
 * message, in the arena. */
void validation_run_training(struct arena *a, const struct validation_training_row *row,
                             const struct validation_run_options *o,
                             struct validation_training_result *out);

/* One message size of a collective row predicted. */
struct validation_point_result {
	const struct validation_point *pt;
	enum collective_algo algo;         /* the algorithm the rule chose (or the row's; the
	                                      simulated one when simulated) */
	const char *protocol;              /* the library's protocol for it, or NULL */
	double formula_s, formula_busbw_bps, formula_err;
	bool simulated;
	const char *sim_error;             /* not simulated: why (NULL when not asked for) */
	double sim_s, sim_busbw_bps, sim_err;
};

/* A collective row's points, predicted. */
struct validation_collective_result {
	const struct validation_collective_row *row;
	struct validation_point_result *points;    /* row->n_points */
};

/* Lone collectives on more ranks than this are simulated at coarse
 * fidelity (the same time as step when nothing contends,
 * docs/simulation.md). */
#define VALIDATION_STEP_MAX_RANKS 64

/* Every point of the row over ranks 0 .. devices-1: its formula
 * (cost_collective_algo_s, the algorithm by cost_choose_algo's rule unless
 * the row names one) and, unless o->estimate_only, the collective
 * simulated alone as a one-step program; both as bus bandwidth. False
 * when out of memory. */
bool validation_run_collective(struct arena *a, const struct validation_collective_row *row,
                               const struct validation_run_options *o,
                               struct validation_collective_result *out);

/* ---------------------------------------------------- score.c: the scores */

/* The mean absolute percentage errors of a set of predictions. */
struct validation_score {
	double estimate_pct;               /* training: the estimates; collectives: the formula;
	                                      NAN over nothing */
	int estimate_n;                    /* rows (training) or points (collectives) */
	double simulation_pct;             /* NAN over nothing */
	int simulation_n;
	double memory_pct;                 /* training: rows with a measured memory; NAN */
	int memory_n;
	int failed;                        /* training: rows not planned or estimated (left
	                                      out) */
	int oom;                           /* training: estimated over the HBM, counted */
	int oom_host;                      /* training: estimated over a server's host memory */
	int oom_rows;                      /* training: over either (a row over both once) */
	int host_rows;                     /* training: rows that put state in host memory */
	int estimate_iv_n, estimate_covered;   /* training: rows with an interval, and of them
	                                          those whose measurement is inside it */
	int simulation_iv_n, simulation_covered;
	int estimate_outside_n, estimate_outside_covered;  /* training: of the rows with an
	                                          interval, those whose plan has a setting outside
	                                          the runs their calibration was fitted on
	                                          (cal_interval.n_outside), and of them covered */
};

/* Over the rows that were estimated (OOM ones included). */
struct validation_score validation_score_training(const struct validation_training_result *r,
                                                  int n);
/* Over every point of the rows. */
struct validation_score validation_score_collectives(const struct validation_collective_result *r,
                                                     int n);

/* ---------------------------------------------- fit.c: training fits */

#define VALIDATION_FIT_MAX 6          /* figures in one fit, at most */
#define VALIDATION_FIT_MAX_ITER 100   /* the solver's iterations */
#define VALIDATION_FIT_MAX_COND 1e3   /* the unit-column Jacobian's condition number above
                                         which the figures are not identifiable */
#define VALIDATION_FIT_LOO_MAX 20     /* leave-one-out up to this many rows, */
#define VALIDATION_FIT_FOLDS 10       /* else k-fold with this many folds */

/* How a fit weighs the rows' relative errors: their squares (least
 * squares), or Huber's loss (squares within VALIDATION_HUBER_K robust
 * standard deviations, absolute values beyond: a row the figures cannot
 * describe pulls them no harder than one at that distance), by
 * iteratively reweighted least squares. */
enum validation_loss { VALIDATION_LOSS_SQUARES, VALIDATION_LOSS_HUBER, VALIDATION_LOSS_COUNT };
extern const char *const validation_loss_names[VALIDATION_LOSS_COUNT];  /* "squares", "huber" */
#define VALIDATION_HUBER_K 1.345      /* Huber's tuning constant: 95% efficiency under
                                         normal errors (Huber, "Robust Statistics", 1981) */
#define VALIDATION_IRLS_MAX 30        /* reweighting rounds, at most */

/* A model of points with a few bounded figures, to fit to measurements
 * by least squares (or Huber's loss) on the relative errors. */
struct validation_model {
	enum validation_loss loss;
	int n_points, n_figures;
	double lo[VALIDATION_FIT_MAX], hi[VALIDATION_FIT_MAX];    /* bounds */
	double start[VALIDATION_FIT_MAX];
	const double *measured;           /* [n_points], positive */
	/* Point i predicted at figures x (the measurements' unit); NAN when
	 * it cannot be. */
	double (*predict)(void *ctx, int i, const double *x);
	void *ctx;
};

struct validation_fit_result {
	bool ok;                          /* fitted; else why */
	const char *why;
	int n_points, n_figures;
	int iterations;
	double value[VALIDATION_FIT_MAX], std_error[VALIDATION_FIT_MAX];   /* NAN: none */
	double covariance[VALIDATION_FIT_MAX * VALIDATION_FIT_MAX];        /* row-major,
	                                                                      n_figures^2 */
	bool at_bound[VALIDATION_FIT_MAX];
	bool identifiable[VALIDATION_FIT_MAX];
	double condition;                 /* of the unit-column Jacobian; INFINITY: singular */
	bool ill_conditioned;
	double *fit_err_pct;              /* [n_points] in sample, % */
	double *weight;                   /* [n_points] each row's weight in the fit: 1, or
	                                     under Huber's loss below 1 for the rows beyond
	                                     VALIDATION_HUBER_K robust standard deviations */
	double robust_scale;              /* Huber: the relative errors' robust standard
	                                     deviation (1.4826 median |error|); else NAN */
	double mape_pct, max_pct;         /* in sample */
	const char *cv_method;            /* "leave-one-out" or "k-fold" */
	int cv_folds;
	double *cv_err_pct;               /* [n_points] out of sample; NAN: not predicted */
	double cv_mape_pct, cv_rms_pct, cv_max_pct;
	double cv_log_rms;                /* out of sample, RMS of ln(predicted / measured) */
	int cv_covered, cv_coverable;     /* held-out rows inside the 90% residual interval
	                                     drawn from the other rows' (validation_fit_model) */
	int cv_failed;                    /* points a fold could not predict */
};

/* Fits m's figures within their bounds (GSL multifit_nlinear, a
 * logistic change of variable), then their standard errors, covariance,
 * conditioning and the cross-validated errors (leave-one-out, k-fold
 * above VALIDATION_FIT_LOO_MAX points), and the held-out coverage: the
 * rows whose held-out |ln(predicted / measured)| is within q s, s the
 * RMS of the other rows' and q Student's t quantile of 0.95 with their
 * count - figures degrees of freedom (the prediction interval's residual
 * part, built without the row; cv_coverable 0 when too few rows). False
 * only when out of memory. */
bool validation_fit_model(struct arena *a, const struct validation_model *m,
                          struct validation_fit_result *out);

/* The end-to-end figures a training fit takes unless told: the GEMM rate
 * and the NICs' bandwidth under training load, the framework's time per
 * op. */
#define VALIDATION_FIT_DEFAULT_N 3
extern const enum cal_param validation_fit_default[VALIDATION_FIT_DEFAULT_N];

struct validation_fit_options {
	enum validation_loss loss;
	int n_figures;
	enum cal_param figures[VALIDATION_FIT_MAX];   /* CAL_TRAIN_* */
	void (*progress)(void *ctx, double fraction);
	void *progress_ctx;
};

struct validation_training_fit {
	int n_rows;                                    /* the file's */
	struct validation_training_result *results;    /* [n_rows]: each row planned and
	                                                  estimated with the figures unset */
	int *point_of;                                 /* [n_rows]: the row's point in fit,
	                                                  -1 when not estimated */
	int n_figures;
	enum cal_param figures[VALIDATION_FIT_MAX];
	enum validation_loss loss;
	double lo[VALIDATION_FIT_MAX], hi[VALIDATION_FIT_MAX];
	struct validation_fit_result fit;
};

/* Plans and estimates every row of v (on its topology as it is: a base
 * calibration already applied), then fits the figures to the rows'
 * measurements through their estimates (each row's plan kept, its
 * topology's figures set by cost_cal_set). False only when out of
 * memory. */
bool validation_fit_training(struct arena *a, const struct validation *v,
                             const struct validation_fit_options *o,
                             struct validation_training_fit *out);

#endif
