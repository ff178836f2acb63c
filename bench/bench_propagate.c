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
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "planner.h"

#ifndef SHARDLAB_SOURCE_ROOT
#define SHARDLAB_SOURCE_ROOT "."
#endif

enum { T = 8 };

struct config {
	const char *op;
	bool rows;        /* ((1,T),(T,1)) rather than ((1,1),(1,T)) */
};

static const struct config configs[] = {
	{"layers.0.attn.q.matmul", false},  {"layers.0.attn.k.matmul", false},
	{"layers.0.attn.v.matmul", false},  {"layers.0.attn.out.matmul", true},
	{"layers.0.mlp.fc1.matmul", false}, {"layers.0.mlp.fc2.matmul", true},
};

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
		fprintf(stderr, "%s\n", s ? s : "bench_propagate: out of memory");
		free(s);
	}
}

/* The shard() configurations above as a scenario's; false when an op is
 * missing from the graph. */
static bool configure(struct arena *a, struct scenario *s)
{
	size_t n = SL_COUNTOF(configs);
	s->shards = arena_calloc(a, n, sizeof(*s->shards));
	if (!s->shards)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct shard_config *c = &s->shards[i];
		int op = graph_find_op(s->graph, configs[i].op);
		if (op < 0) {
			fprintf(stderr, "bench_propagate: %s: no op %s\n", s->graph->name, configs[i].op);
			return false;
		}
		c->op_name = configs[i].op;
		c->op = op;
		c->file = "bench_propagate";
		c->path = "shard";
		c->form = SHARD_TUPLE;
		c->n_in = 2;
		c->cuts = arena_calloc(a, 2, sizeof(*c->cuts));
		if (!c->cuts)
			return false;
		int64_t in0[2] = {1, configs[i].rows ? T : 1}, in1[2] = {configs[i].rows ? T : 1,
		                                                         configs[i].rows ? 1 : T};
		memcpy(c->cuts[0], in0, sizeof in0);
		memcpy(c->cuts[1], in1, sizeof in1);
	}
	s->n_shards = (int)n;
	return true;
}

static struct scenario *scenario_build(struct arena *a, const char *model, const char *topo,
                                       int64_t devices, struct diag_list *d)
{
	struct scenario *s = arena_calloc(a, 1, sizeof(*s));
	if (!s)
		return NULL;
	s->name = "bench-propagate";
	s->file = "bench_propagate";
	s->model_file = model;
	s->topology_file = topo;
	s->graph = graph_load(a, model, d);
	s->topo = topo_load(a, topo, d);
	if (!s->graph || !s->topo)
		return NULL;
	if (s->topo->n_devices < devices) {
		fprintf(stderr, "bench_propagate: %s has %" PRId64 " devices, not %" PRId64 "\n", topo,
		        s->topo->n_devices, devices);
		return NULL;
	}
	s->devices = devices;
	s->n_planners = 1;
	s->planners[0] = PLANNER_PROPAGATE;
	s->training = (struct training){.global_batch = 1, .micro_batches = 1,
	                                .pipeline_stages = 1, .virtual_stages = 1,
	                                .dtype = s->graph->ops[0].dtype};
	s->propagation.all_devices = true;
	return configure(a, s) ? s : NULL;
}

/* One run, in the child: 0 on success. */
static int run(const char *model, const char *topo, int64_t devices)
{
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct scenario *s = a ? scenario_build(a, model, topo, devices, &d) : NULL;
	struct redist_cache *cache = redist_cache_new();
	double t0 = now_s();
	struct plan *p = s && cache ? plan_propagate_cache(a, s, REDIST_COMPAT, cache, &d) : NULL;
	double wall = now_s() - t0;
	int64_t hits = 0, misses = 0;
	if (cache)
		redist_cache_stats(cache, &hits, &misses);
	redist_cache_free(cache);
	print_diags(&d);
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	if (p)
		printf("{\"bench\": \"propagate\", \"model\": \"%s\", \"ops\": %d, \"devices\": %" PRId64
		       ", \"wall_s\": %.3f, \"peak_rss_bytes\": %" PRId64
		       ", \"cache_hits\": %" PRId64 ", \"cache_misses\": %" PRId64
		       ", \"unreached\": %d}\n",
		       s->graph->name, s->graph->n_ops, p->n_devices, wall,
		       (int64_t)ru.ru_maxrss * 1024, hits, misses, p->n_unreached);
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
		fprintf(stderr, "usage: bench_propagate [MODEL [TOPOLOGY DEVICES]...]\n");
		return 2;
	}
	int failed = 0;
	for (int i = 1; i + 1 < n; i += 2) {
		int64_t devices = strtoll(args[i + 1], NULL, 10);
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0)
			_exit(run(args[0], args[i], devices));
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) < 0 || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
			failed = 1;
	}
	return failed;
}
