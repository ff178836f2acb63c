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
 * This module loads and checks the files and converts between an
 * iteration time and the unit a source reports; planning, estimating and
 * simulating the rows is the caller's (cli/cmd_validate.c).
 *
 * Units: seconds, bytes, bytes/s, FLOPs (double); counts int64_t.
 *
 * Data flow: util, topologies, models, scenarios, planner -> validation.
 */
#ifndef SHARDLAB_VALIDATION_H
#define SHARDLAB_VALIDATION_H

#include <stdbool.h>
#include <stdint.h>

#include "planner.h"
#include "scenarios.h"
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

#endif
