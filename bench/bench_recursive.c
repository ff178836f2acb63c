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
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "planner.h"

#ifndef SHARDLAB_SOURCE_ROOT
#define SHARDLAB_SOURCE_ROOT "."
#endif

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void print_diags(const struct diag_list *d)
{
	for (size_t i = 0; i < d->count; i++) {
		char *s = diag_format(&d->items[i]);
		fprintf(stderr, "%s\n", s ? s : "bench_recursive: out of memory");
		free(s);
	}
}

static struct scenario *scenario_build(struct arena *a, const char *model, const char *topo,
                                       int64_t devices, struct diag_list *d)
{
	struct scenario *s = arena_calloc(a, 1, sizeof(*s));
	if (!s)
		return NULL;
	s->name = "bench-recursive";
	s->file = "bench_recursive";
	s->model_file = model;
	s->topology_file = topo;
	s->graph = graph_load(a, model, d);
	s->topo = topo_load(a, topo, d);
	if (!s->graph || !s->topo)
		return NULL;
	if (s->topo->n_devices < devices) {
		fprintf(stderr, "bench_recursive: %s has %" PRId64 " devices, not %" PRId64 "\n", topo,
		        s->topo->n_devices, devices);
		return NULL;
	}
	s->devices = devices;
	s->n_planners = 1;
	s->planners[0] = PLANNER_RECURSIVE;
	s->training = (struct training){.global_batch = 1, .micro_batches = 1,
	                                .pipeline_stages = 1, .virtual_stages = 1,
	                                .dtype = s->graph->ops[0].dtype};
	s->propagation.all_devices = true;
	return s;
}

/* One run, in the child: 0 on success. */
static int run(const char *model, const char *topo, int64_t devices, enum rec_cost mode)
{
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct scenario *s = a ? scenario_build(a, model, topo, devices, &d) : NULL;
	struct plan_options o = {.mode = REDIST_COMPAT, .rec_cost = mode};
	double t0 = now_s();
	struct plan *p = s ? plan_recursive(a, s, &o, &d) : NULL;
	double wall = now_s() - t0;
	print_diags(&d);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	if (p)
		printf("{\"bench\": \"recursive\", \"rec_cost\": \"%s\", \"ops\": %d, \"devices\": %" PRId64
		       ", \"wall_s\": %.3f, \"peak_rss_bytes\": %" PRId64 "}\n",
		       rec_cost_names[mode], s->graph->n_ops, p->n_devices, wall,
		       (int64_t)ru.ru_maxrss * 1024);
	fflush(stdout);
	diag_list_free(&d);
	arena_free(a);
	return p ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const char *const defaults[] = {
		SHARDLAB_SOURCE_ROOT "/models/gpt3-175b.json",
		SHARDLAB_SOURCE_ROOT "/topologies/dgx-a100-x128.json", "1024",
		SHARDLAB_SOURCE_ROOT "/topologies/atlas800t-a2-910b-x1024.json", "8192",
	};
	const char *const *args = argc > 1 ? (const char *const *)argv + 1 : defaults;
	int n = argc > 1 ? argc - 1 : (int)SL_COUNTOF(defaults);
	if (n < 3 || n % 2 == 0) {
		fprintf(stderr, "usage: bench_recursive [MODEL [TOPOLOGY DEVICES]...]\n");
		return 2;
	}
	int failed = 0;
	for (int i = 1; i + 1 < n; i += 2)
		for (int m = 0; m < REC_COST_COUNT; m++) {
			int64_t devices = strtoll(args[i + 1], NULL, 10);
			fflush(stdout);
			pid_t pid = fork();
			if (pid == 0)
				_exit(run(args[0], args[i], devices, (enum rec_cost)m));
			int st = 0;
			if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) ||
			    WEXITSTATUS(st) != 0)
				failed = 1;
		}
	return failed;
}
