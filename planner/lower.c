/* stub: replaced by the implementation */
#include "planner-int.h"

const char *const prog_phase_names[PHASE_COUNT] = {"forward", "backward", "gradient", "optimizer"};

bool plan_lower(struct arena *a, const struct plan *p, double bucket_bytes, struct program *out,
                struct diag_list *diags)
{
	(void)a; (void)p; (void)bucket_bytes; (void)out;
	diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "lowering is not built yet");
	return false;
}
