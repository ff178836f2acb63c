/* bench_search.c — megatron-search's speed (issue 23): every (TP, PP, DP,
 * micro-batch, sequence parallelism, schedule, recompute, ZeRO) of GPT-3
 * 175B (scenarios/gpt3-175b-1024p.json: global batch 1,536, sequence 2048)
 * on N devices of its dgx-a100-x128, planned by the Megatron rule and
 * ranked by the estimate, as `shardlab plan --planner megatron-search
 * --devices N` runs it. One JSON line per device count:
 *   {"bench": "search", "model", "devices", "configs", "estimated",
 *    "wall_s", "cpu_s", "configs_per_cpu_s", "best"}
 * cpu_s is the process's CPU time (one core; a shared machine's wall time
 * is not its own), configs_per_cpu_s the configurations per second of it.
 * Targets (issue 23): over 1,000 configurations per second per core, and
 * GPT-3 175B over 1,024 devices in under 5 s. Usage:
 *   bench_search [N...]        (default 64 1024)
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "bench.h"
#include "scenarios.h"

static double cpu_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static bool run(int64_t devices)
{
	const char *file = SHARDLAB_SOURCE_ROOT "/scenarios/gpt3-175b-1024p.json";
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct scenario *s = a ? scenario_load(a, file, &d) : NULL;
	bool ok = s != NULL && devices <= s->topo->n_devices;
	if (s && !ok)
		fprintf(stderr, "bench_search: %s has %" PRId64 " devices, not %" PRId64 "\n", file,
		        s->topo->n_devices, devices);
	struct search_result r;
	double wall = 0, cpu = 0;
	if (ok) {
		s->devices = devices;
		struct plan_options o = {.mode = REDIST_COMPAT};
		double w0 = bench_now_s(), c0 = cpu_now_s();
		ok = plan_search(a, s, &o, &r, &d);
		wall = bench_now_s() - w0;
		cpu = cpu_now_s() - c0;
	}
	bench_print_diags("bench_search", &d);
	if (ok) {
		char best[128];
		printf("{\"bench\": \"search\", \"model\": \"%s\", \"devices\": %" PRId64
		       ", \"configs\": %lld, \"estimated\": %d, \"wall_s\": %.3f, \"cpu_s\": %.3f, "
		       "\"configs_per_cpu_s\": %.0f, \"best\": \"%s\"}\n",
		       s->graph->name, devices, (long long)r.n_configs, r.n, wall, cpu,
		       cpu > 0 ? (double)r.n_configs / cpu : 0,
		       plan_search_config_text(best, sizeof best, &r.cands[0].config));
		fflush(stdout);
	}
	diag_list_free(&d);
	arena_free(a);
	return ok;
}

int main(int argc, char **argv)
{
	static const int64_t defaults[] = {64, 1024};
	bool ok = true;
	if (argc == 1)
		for (size_t i = 0; i < sizeof defaults / sizeof defaults[0]; i++)
			ok = run(defaults[i]) && ok;
	for (int i = 1; i < argc; i++) {
		int64_t n = strtoll(argv[i], NULL, 10);
		if (n < 1) {
			fprintf(stderr, "usage: bench_search [DEVICES...]\n");
			return 2;
		}
		ok = run(n) && ok;
	}
	return ok ? 0 : 1;
}
