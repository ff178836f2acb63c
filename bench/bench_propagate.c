/* bench_propagate.c — sharding propagation over GPT-3 175B's forward graph
 * (96 layers, ~3,000 ops) on 1,024 and 8,192 devices (issue 4, point 7).
 *
 * One op per layer kind is configured, in layer 0 only, Megatron style
 * with T = 8: the q/k/v and fc1 MatMuls cut by columns ((1,1),(1,T)), the
 * attention output and fc2 MatMuls by rows ((1,T),(T,1)); propagation
 * plans every other op. The scenario is built in memory on the shipped
 * topologies dgx-a100-x128 (1,024 GPUs) and atlas800t-a2-910b-x1024
 * (8,192 NPUs).
 *
 * Each run happens in a child process, so that its peak resident memory
 * is its own: it loads the model and the topology, times plan_propagate
 * alone (CLOCK_MONOTONIC) and prints one JSON line:
 *   {"bench": "propagate", "model", "ops", "devices", "wall_s",
 *    "peak_rss_bytes", "cache_hits", "cache_misses", "unreached"}
 * Target (issue 4): under 1 s per run on a 2-core machine. Usage:
 *   bench_propagate [MODEL [TOPOLOGY DEVICES]...]
 * paths relative to the current folder; without arguments the shipped
 * files under the source root.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "bench.h"

enum { T = 8 };

struct run {
	const char *model, *topo;
	int64_t devices;
};

/* One run, in the child: 0 on success. */
static int run(void *ctx)
{
	const struct run *r = ctx;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct scenario *s = a ? bench_scenario(a, "bench_propagate", r->model, r->topo, r->devices,
	                                        PLANNER_PROPAGATE, &d)
	                       : NULL;
	if (s && !bench_megatron_layer0(a, s, T))
		s = NULL;
	struct redist_cache *cache = redist_cache_new();
	double t0 = bench_now_s();
	struct plan *p = s && cache ? plan_propagate_cache(a, s, REDIST_COMPAT, cache, &d) : NULL;
	double wall = bench_now_s() - t0;
	int64_t hits = 0, misses = 0;
	if (cache)
		redist_cache_stats(cache, &hits, &misses);
	redist_cache_free(cache);
	bench_print_diags("bench_propagate", &d);
	if (p)
		printf("{\"bench\": \"propagate\", \"model\": \"%s\", \"ops\": %d, \"devices\": %" PRId64
		       ", \"wall_s\": %.3f, \"peak_rss_bytes\": %" PRId64
		       ", \"cache_hits\": %" PRId64 ", \"cache_misses\": %" PRId64
		       ", \"unreached\": %d}\n",
		       s->graph->name, s->graph->n_ops, p->n_devices, wall, bench_peak_rss_bytes(), hits,
		       misses, p->n_unreached);
	fflush(stdout);
	diag_list_free(&d);
	arena_free(a);
	return p ? 0 : 1;
}

int main(int argc, char **argv)
{
	const char *const *args;
	int n = bench_model_topologies(argc, argv, "bench_propagate", &args);
	if (n < 0)
		return 2;
	int failed = 0;
	for (int i = 1; i + 1 < n; i += 2) {
		struct run r = {args[0], args[i], strtoll(args[i + 1], NULL, 10)};
		if (!bench_in_child(run, &r))
			failed = 1;
	}
	return failed;
}
