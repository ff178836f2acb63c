/* planners.c — any planner by kind: the one door through which the
 * commands reach the strategies (planner.h, plan_make).
 *
 * No hot path: one call per plan.
 */
#include "planner-int.h"

struct plan *plan_make(struct arena *a, const struct scenario *s, enum planner_kind kind,
                       const struct plan_options *o, struct diag_list *diags)
{
	/* training.tensor_parallel is the megatron planner's degree: say so
	 * where another planner would otherwise leave it silently aside. */
	if (s->training.tensor_parallel > 0 && kind != PLANNER_MEGATRON && kind >= 0 &&
	    kind < PLANNER_COUNT)
		diag_add(diags, DIAG_WARNING, s->file, 0, "training.tensor_parallel",
		         "%lld is the megatron planner's tensor-parallel degree; planner \"%s\" %s "
		         "(\"planners\": [\"megatron\"] plans at it)",
		         (long long)s->training.tensor_parallel, planner_names[kind],
		         kind == PLANNER_MEGATRON_SEARCH ? "searches its own degrees"
		                                         : "does not read it");
	switch (kind) {
	case PLANNER_PROPAGATE:
		return plan_propagate(a, s, o->mode, diags);
	case PLANNER_RECURSIVE:
		return plan_recursive(a, s, o, diags);
	case PLANNER_DATA_PARALLEL:
		return plan_data_parallel(a, s, o, diags);
	case PLANNER_MEGATRON:
		return plan_megatron(a, s, o, diags);
	case PLANNER_MEGATRON_SEARCH:
		return plan_megatron_search(a, s, o, diags);
	default:
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "no planner of kind %d", (int)kind);
		return NULL;
	}
}

bool plan_tp_in_server(int64_t dps, int64_t devices, int64_t tp)
{
	if (tp < 1 || tp > dps)
		return false;
	return dps % tp == 0 || devices <= dps;
}

bool plan_ep_fits(int64_t ep, int64_t dp, int64_t tp, bool sequence_parallel)
{
	if (ep <= 1)
		return true;
	if (ep <= dp)
		return dp % ep == 0;
	return sequence_parallel && ep % tp == 0 && (dp * tp) % ep == 0;
}
