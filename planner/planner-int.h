/* planner-int.h — details shared by the strategies' files, not part of
 * the planner's public interface. */
#ifndef SHARDLAB_PLANNER_INT_H
#define SHARDLAB_PLANNER_INT_H

#include "planner.h"

/* The plan search's fastest configuration that fits (search.c). */
struct plan *plan_megatron_search(struct arena *a, const struct scenario *s,
                                  const struct plan_options *o, struct diag_list *diags);

#endif
