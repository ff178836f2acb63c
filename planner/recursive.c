/* stub: replaced by the implementation */
#include "planner-int.h"

const char *const rec_cost_names[REC_COST_COUNT] = {"topology", "mindspore"};

struct plan *plan_recursive(struct arena *a, const struct scenario *s,
                            const struct plan_options *o, struct diag_list *diags)
{
	(void)a; (void)s; (void)o;
	diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "the recursive planner is not built yet");
	return NULL;
}

double plan_rec_cost(const struct plan *p)
{
	(void)p;
	return 0;
}
