/* bench_recursive.c — the double-recursive search over GPT-3 175B's
 * forward graph (96 layers, ~3,000 ops) on 1,024 and 8,192 devices, in
 * both cost modes (issue 5, point 6).
 *
 * Nothing is configured: the search plans every op. The scenario is built
 * in memory on the shipped topologies dgx-a100-x128 (1,024 GPUs) and
 * atlas800t-a2-910b-x1024 (8,192 NPUs). Each run happens in a child
 * process, so that its peak resident memory is its own (the final plan's
 * rank groups are most of it); it times plan_recursive alone
 * (CLOCK_MONOTONIC) and prints one JSON line:
 *   {"bench": "recursive", "rec_cost", "ops", "devices", "wall_s",
 *    "peak_rss_bytes"}
 * Target (issue 5): under 1 s per run on a 2-core machine. Usage:
 *   bench_recursive [MODEL [TOPOLOGY DEVICES]...]
 * paths relative to the current folder; without arguments the shipped
 * files under the source root.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

struct run {
	const char *model, *topo;
	int64_t devices;
	enum rec_cost mode;
};

/* One run, in the child: 0 on success. */
static int run(void *ctx)
{
	const struct run *r = ctx;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct scenario *s = a ? bench_scenario(a, "bench_recursive", r->model, r->topo, r->devices,
	                                        PLANNER_RECURSIVE, &d)
	                       : NULL;
	struct plan_options o = {.mode = REDIST_COMPAT, .rec_cost = r->mode};
	double t0 = bench_now_s();
	struct plan *p = s ? plan_recursive(a, s, &o, &d) : NULL;
	double wall = bench_now_s() - t0;
	bench_print_diags("bench_recursive", &d);
	if (p)
		printf("{\"bench\": \"recursive\", \"rec_cost\": \"%s\", \"ops\": %d, \"devices\": %" PRId64
		       ", \"wall_s\": %.3f, \"peak_rss_bytes\": %" PRId64 "}\n",
		       rec_cost_names[r->mode], s->graph->n_ops, p->n_devices, wall,
		       bench_peak_rss_bytes());
	fflush(stdout);
	diag_list_free(&d);
	arena_free(a);
	return p ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *const *args;
	int n = bench_model_topologies(argc, argv, "bench_recursive", &args);
	if (n < 0)
		return 2;
	int failed = 0;
	for (int i = 1; i + 1 < n; i += 2)
		for (int m = 0; m < REC_COST_COUNT; m++) {
			struct run r = {args[0], args[i], strtoll(args[i + 1], NULL, 10),
			                (enum rec_cost)m};
			if (!bench_in_child(run, &r))
				failed = 1;
		}
	return failed;
}
