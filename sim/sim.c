/* stub: replaced by the implementation */
#include "sim.h"

bool sim_run(struct arena *a, const struct topology *t, const struct program *prog,
             const struct sim_options *o, struct sim_result *out, struct diag_list *diags)
{
	(void)a; (void)t; (void)prog; (void)o; (void)out;
	diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "the simulator is not built yet");
	return false;
}
