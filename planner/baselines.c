/* stub: replaced by the implementation */
#include "planner-int.h"

struct plan *plan_data_parallel(struct arena *a, const struct scenario *s,
                                const struct plan_options *o, struct diag_list *diags)
{
	(void)a; (void)s; (void)o;
	diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "the data-parallel planner is not built yet");
	return NULL;
}

struct plan *plan_megatron(struct arena *a, const struct scenario *s,
                           const struct plan_options *o, struct diag_list *diags)
{
	(void)a; (void)s; (void)o;
	diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "the megatron planner is not built yet");
	return NULL;
}
