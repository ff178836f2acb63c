/* fuzz_calibration.c — the calibration table reader (CSV of kernel times)
 * and, when a table loads, the least-squares fit of the compute model on
 * it against the H100's device (GSL, its error handler off). */
#include "fuzz.h"
#include "planner.h"

static struct topology *h100(struct arena *a)
{
	struct diag_list d;
	diag_list_init(&d);
	struct topology *t = topo_load(a, "topologies/dgx-h100.json", &d);
	diag_list_free(&d);
	SL_ASSERT(t != NULL);
	return t;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct arena *topo_arena;
	static struct topology *topo;
	if (!topo) {
		topo_arena = arena_new();
		topo = h100(topo_arena);
	}
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct calib_table *t = a ? cost_calib_parse(a, "fuzz.csv", (const char *)data, size, &d) : NULL;
	if (t) {
		struct calib_fit fit;
		cost_calib_fit(a, t, size % 2 ? &topo->device : NULL, 0, &fit, &d);
	}
	fuzz_diags_done(&d);
	arena_free(a);
	return 0;
}
