/* bench_estimate.c — the symbolic estimator on one plan of GPT-3 175B
 * (96 layers, ~3,000 ops) on dgx-a100-x128 (1,024 GPUs) (issue 5, point 6).
 *
 * The plan is sharding propagation from the same per-layer configuration
 * as bench_propagate.c (layer 0 configured Megatron style with T = 8: the
 * q/k/v and fc1 MatMuls cut by columns ((1,1),(1,T)), the attention output
 * and fc2 MatMuls by rows ((1,T),(T,1)); the rest propagated): a real
 * mixed plan with forward all-reduces, redistributions and gradient
 * synchronisation, which data parallel would not exercise. The plan is
 * built once (not timed); plan_estimate is timed alone (CLOCK_MONOTONIC),
 * best of RUNS runs, and one JSON line is printed:
 *   {"bench": "estimate", "model", "ops", "devices", "wall_s", "iteration_s"}
 * Target (issue 5): under 10 ms on a 2-core machine. Usage:
 *   bench_estimate [MODEL TOPOLOGY DEVICES]
 * paths relative to the current folder; without arguments the shipped
 * files under the source root.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

enum { T = 8, RUNS = 20 };

int main(int argc, char **argv)
{
	const char *model = SHARDLAB_SOURCE_ROOT "/models/gpt3-175b.json";
	const char *topo = SHARDLAB_SOURCE_ROOT "/topologies/dgx-a100-x128.json";
	int64_t devices = 1024;
	int runs = RUNS;
	if (argc >= 3 && !strcmp(argv[1], "--runs")) {
		runs = atoi(argv[2]);
		argc -= 2;
		argv += 2;
	}
	if (runs < 1 || (argc != 1 && argc != 4)) {
		fprintf(stderr, "usage: bench_estimate [--runs N] [MODEL TOPOLOGY DEVICES]\n");
		return 2;
	}
	if (argc == 4) {
		model = argv[1];
		topo = argv[2];
		devices = strtoll(argv[3], NULL, 10);
	}
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct scenario *s = a ? bench_scenario(a, "bench_estimate", model, topo, devices,
	                                        PLANNER_PROPAGATE, &d)
	                       : NULL;
	if (s && !bench_megatron_layer0(a, s, T))
		s = NULL;
	struct plan *p = s ? plan_propagate(a, s, REDIST_COMPAT, &d) : NULL;
	struct estimate e;
	double best = -1, iteration_s = 0;
	bool ok = p != NULL;
	for (int r = 0; ok && r < runs; r++) {
		/* an arena per estimate, as the planners and the search use it */
		double t0 = bench_now_s();
		struct arena *ea = arena_new();
		ok = ea && plan_estimate(ea, p, &e, &d);
		iteration_s = ok ? e.iteration_s : 0;
		arena_free(ea);
		double wall = bench_now_s() - t0;
		if (best < 0 || wall < best)
			best = wall;
	}
	bench_print_diags("bench_estimate", &d);
	if (ok)
		printf("{\"bench\": \"estimate\", \"model\": \"%s\", \"ops\": %d, \"devices\": %" PRId64
		       ", \"wall_s\": %.6f, \"iteration_s\": %.6g}\n",
		       s->graph->name, s->graph->n_ops, p->n_devices, best, iteration_s);
	diag_list_free(&d);
	arena_free(a);
	return ok ? 0 : 1;
}
