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

/* Bitmask helpers. */
static inline int axis_popcount(uint32_t m)
{
	int n = 0;
	for (; m; m &= m - 1)
		n++;
	return n;
}

#endif
