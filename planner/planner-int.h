/* planner-int.h — details shared by the strategies' files, not part of
 * the planner's public interface. */
#ifndef SHARDLAB_PLANNER_INT_H
#define SHARDLAB_PLANNER_INT_H

#include "planner.h"

/* The plan search's fastest configuration that fits (search.c). */
struct plan *plan_megatron_search(struct arena *a, const struct scenario *s,
                                  const struct plan_options *o, struct diag_list *diags);

/* Whether expert parallelism `ep` lays out over a stage of `dp`
 * data-parallel replicas of `tp` tensor-parallel ranks, as the megatron
 * planner cuts the experts (baselines.c, experts_fit): ep divides dp, or,
 * above it, Megatron-Core's parallel folding: a multiple of tp dividing
 * dp x tp, with sequence parallelism. True for ep <= 1. */
bool plan_ep_fits(int64_t ep, int64_t dp, int64_t tp, bool sequence_parallel);

#endif
