/* verify.h — numeric verification: a plan executed on real numbers, rank
 * by rank, and compared with the unsharded model.
 *
 * Every rank holds only its slices of each tensor (a buffer per rank, the
 * size of its layout's local shape); every op runs on those slices; the
 * op's own collectives and every redistribution step of the plan's edges
 * move real buffers between the ranks of their groups. Each op's output
 * and each edge's result are compared, rank by rank, with the same tensor
 * computed once on one "device" in double precision from the same seeded
 * inputs. An error there means the layout algebra, a distributed operator
 * or a redistribution does not compute what the model computes.
 *
 * Units: element counts int64_t; errors are absolute, and relative to the
 * largest magnitude of the reference tensor. Memory: the reference holds
 * every tensor once; the ranks hold each live tensor's slices (times its
 * replication), freed after its last consumer.
 *
 * Data flow: planner -> verify -> cli. Never prints.
 */
#ifndef SHARDLAB_VERIFY_H
#define SHARDLAB_VERIFY_H

#include <stdbool.h>
#include <stdint.h>

#include "planner.h"

#define VERIFY_DEFAULT_TOLERANCE 1e-9

enum verify_status {
	VERIFY_MATCH,        /* within the tolerance */
	VERIFY_MISMATCH,     /* numbers differ from the unsharded computation */
	VERIFY_BROKEN,       /* the plan cannot run: shapes, slices or layouts disagree */
	VERIFY_UNSUPPORTED,  /* not verified: the verifier cannot execute it */
	VERIFY_STATUS_COUNT
};
extern const char *const verify_status_names[VERIFY_STATUS_COUNT];

enum verify_what { VERIFY_OP, VERIFY_EDGE, VERIFY_GRAD, VERIFY_STAGE };

/* One compared tensor: an op's output after its own communication, a
 * tensor after the redistribution on an edge, a parameter's gradient
 * (VERIFY_GRAD: op and edge -1; "zero-shard P": one rank's ZeRO chunk,
 * op the consumer), or a pipeline cut (VERIFY_STAGE: op the first of the
 * next chunk, max_abs the bytes per rank the split sends that the ranks
 * did not hold live there, or the other way round). */
struct verify_check {
	enum verify_what what;
	int op;                            /* VERIFY_OP: the op; VERIFY_EDGE: the consumer */
	int edge;                          /* VERIFY_EDGE: index in plan->edges; else -1 */
	int tensor;
	const char *label;                 /* "dense1.matmul", "dense1.matmul -> relu" */
	double max_abs, max_rel;
	enum verify_status status;
	const char *note;                  /* why it is broken or unsupported; NULL when it matches */
};

/* A deliberate fault, for tests: after step `step` of the redistribution
 * on edge `edge` (an index in plan->edges), ranks a and b exchange their
 * buffers, as a wrong redistribution would. edge -1: none. */
struct verify_fault {
	int edge, step;
	int64_t rank_a, rank_b;
};

struct verify_options {
	uint64_t seed;                     /* of the inputs and parameters */
	double tolerance;                  /* largest relative error that matches */
	int64_t scale;                     /* >= 1: shrink dimensions (verify_scaled_dim) */
	int64_t trace_rank;                /* -1: no trace */
	bool gradients;                    /* run the backward pass too (default true) */
	struct verify_fault fault;
	int threads;                       /* an op's reference and ranks run on up to this many
	                                      threads (at most VERIFY_MAX_THREADS); 0 (the
	                                      default): one per online CPU, for ops large enough
	                                      to pay for them. The results do not depend on it:
	                                      each task writes only its own buffers */
};
#define VERIFY_MAX_THREADS 8

/* Defaults: seed 1, VERIFY_DEFAULT_TOLERANCE, scale 1, no trace, no
 * fault, gradients. */
void verify_options_init(struct verify_options *o);

struct verify_result {
	int n_checks;
	struct verify_check *checks;       /* ops and their input edges in graph order, then
	                                      the parameters' gradients */
	int n_forward;                     /* of them, the forward pass's */
	bool gradients_skipped;            /* the forward did not verify: no backward ran */
	int n_trace;
	const char **trace;                /* trace_rank's lines, in execution order */
	int n_match, n_mismatch, n_broken, n_unsupported;
	bool passed;                       /* every check matches */
	double max_abs, max_rel;           /* over the checks */
	int64_t scale;
	double reference_bytes;            /* every tensor of the model once, as doubles */
	double peak_rank_bytes;            /* the most the ranks' buffers held at once, all ranks */
};

/* A dimension of size v at scale s, when every cut of it divides `cuts`:
 * v / s when s divides v and cuts divides v / s, else v. verify_plan asks
 * it with cuts the lcm of the plan's cuts of that size, and keeps a size
 * whole where shrinking it would break a Reshape, Concat, Split or
 * StridedSlice (docs/verify.md). */
int64_t verify_scaled_dim(int64_t v, int64_t s, int64_t cuts);

/* Bytes of the reference (every tensor once, doubles) at a scale. */
double verify_reference_bytes(const struct plan *p, int64_t scale);

/* An upper bound of what verify_plan holds at a scale: the reference
 * plus, for every op, every rank's boxes of its inputs and outputs as if
 * all were live at once. */
double verify_memory_bound(const struct plan *p, int64_t scale);

/* The memory bound verify aims a suggested scale at: a run of a few
 * seconds (docs/verify.md). */
#define VERIFY_QUICK_BYTES (256.0 * 1048576)
/* The scale to suggest when `scale` needs more than `limit` bytes: the
 * smallest scale * 2^k (up to 1024) whose bound is at most
 * min(limit, VERIFY_QUICK_BYTES), else the smallest at most `limit`;
 * -1 when none up to 1024 is. Shrinking more than needed loses nothing
 * of the check: the plan (strategy, device matrices, groups) is the same
 * at every scale, only the slices are smaller. */
int64_t verify_suggest_scale(const struct plan *p, int64_t scale, double limit);

/* Runs the plan's forward pass on every rank and compares; then, when the
 * forward matches and o->gradients, the backward pass: the loss is the sum
 * of the graph's outputs times seeded weights, every op's backward runs
 * on the ranks' boxes (hand-derived formulas per op kind, GSL BLAS for
 * GEMMs), every step and collective is undone on the buffers, and each
 * parameter's gradient (completed over the ranks whose shares add up) is
 * compared with the unsharded one. False only
 * with a diagnostic (out of memory, a scale that breaks a Reshape); a plan
 * that computes the wrong numbers returns true with passed == false. */
bool verify_plan(struct arena *a, const struct plan *p, const struct verify_options *o,
                 struct verify_result *out, struct diag_list *diags);

#endif
