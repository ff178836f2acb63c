/* fuzz_bench.c — the collective benchmarks' reader (nccl-tests and
 * hccl_test output) and, when a table reads, the latency-bandwidth fit on
 * it: without a topology (the alpha-beta formula) or, by the input's
 * size, through the cost model on the DGX A100's NVSwitch (GSL, its error
 * handler off). */
#include "fuzz.h"
#include "planner.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct arena *topo_arena;
	static struct topology *topo;
	if (!topo) {
		struct diag_list d;
		diag_list_init(&d);
		topo_arena = arena_new();
		topo = topo_load(topo_arena, "topologies/dgx-a100.json", &d);
		diag_list_free(&d);
		SL_ASSERT(topo != NULL);
	}
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct bench_table *t = a ? cost_bench_parse(a, "fuzz.txt", (const char *)data, size, &d)
	                          : NULL;
	if (t && t->n_points <= 64) {
		struct bench_fit_options o = {.topo = size % 2 ? topo : NULL,
		                              .collective = size % 3 ? STEP_ALLREDUCE : STEP_ALLGATHER,
		                              .ranks = 8};
		struct bench_fit f;
		if (cost_bench_fit(a, t, &o, &f, &d))
			SL_ASSERT(f.n_points == t->n_points);
	}
	fuzz_diags_done(&d);
	arena_free(a);
	return 0;
}
