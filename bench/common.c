/* common.c — the benchmarks' shared scaffolding (bench.h). */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

double bench_now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

void bench_print_diags(const char *bench, const struct diag_list *d)
{
	for (size_t i = 0; i < d->count; i++) {
		char *s = diag_format(&d->items[i]);
		fprintf(stderr, "%s\n", s ? s : "out of memory");
		free(s);
	}
	if (d->dropped)
		fprintf(stderr, "%s: %zu more diagnostics\n", bench, d->dropped);
}

int64_t bench_peak_rss_bytes(void)
{
	struct rusage self, children;
	getrusage(RUSAGE_SELF, &self);
	getrusage(RUSAGE_CHILDREN, &children);
	long kb = self.ru_maxrss > children.ru_maxrss ? self.ru_maxrss : children.ru_maxrss;
	return (int64_t)kb * 1024;
}

struct scenario *bench_scenario(struct arena *a, const char *bench, const char *model,
                                const char *topo, int64_t devices, enum planner_kind planner,
                                struct diag_list *d)
{
	struct scenario *s = arena_calloc(a, 1, sizeof(*s));
	if (!s)
		return NULL;
	s->name = bench;
	s->file = bench;
	s->model_file = model;
	s->topology_file = topo;
	s->graph = graph_load(a, model, d);
	s->topo = topo_load(a, topo, d);
	if (!s->graph || !s->topo)
		return NULL;
	if (s->topo->n_devices < devices) {
		fprintf(stderr, "%s: %s has %" PRId64 " devices, not %" PRId64 "\n", bench, topo,
		        s->topo->n_devices, devices);
		return NULL;
	}
	s->devices = devices;
	s->n_planners = 1;
	s->planners[0] = planner;
	s->training = (struct training){.global_batch = s->graph->batch > 0 ? s->graph->batch : 1,
	                                .micro_batches = 1, .pipeline_stages = 1,
	                                .virtual_stages = 1, .dtype = s->graph->ops[0].dtype,
	                                .gradient_bucket_bytes = 25 * 1048576.0};
	s->propagation.all_devices = true;
	return s;
}

bool bench_megatron_layer0(struct arena *a, struct scenario *s, int64_t t)
{
	static const struct {
		const char *op;
		bool rows; /* ((1,t),(t,1)) rather than ((1,1),(1,t)) */
	} configs[] = {
		{"layers.0.attn.q.matmul", false},  {"layers.0.attn.k.matmul", false},
		{"layers.0.attn.v.matmul", false},  {"layers.0.attn.out.matmul", true},
		{"layers.0.mlp.fc1.matmul", false}, {"layers.0.mlp.fc2.matmul", true},
	};
	size_t n = SL_COUNTOF(configs);
	s->shards = arena_calloc(a, n, sizeof(*s->shards));
	if (!s->shards)
		return false;
	for (size_t i = 0; i < n; i++) {
		struct shard_config *c = &s->shards[i];
		int op = graph_find_op(s->graph, configs[i].op);
		if (op < 0) {
			fprintf(stderr, "%s: %s: no op %s\n", s->name, s->graph->name, configs[i].op);
			return false;
		}
		c->op_name = configs[i].op;
		c->op = op;
		c->file = s->file;
		c->path = "shard";
		c->form = SHARD_TUPLE;
		c->n_in = 2;
		c->cuts = arena_calloc(a, 2, sizeof(*c->cuts));
		if (!c->cuts)
			return false;
		int64_t in0[2] = {1, configs[i].rows ? t : 1};
		int64_t in1[2] = {configs[i].rows ? t : 1, configs[i].rows ? 1 : t};
		memcpy(c->cuts[0], in0, sizeof in0);
		memcpy(c->cuts[1], in1, sizeof in1);
	}
	s->n_shards = (int)n;
	return true;
}

int bench_model_topologies(int argc, char **argv, const char *bench, const char *const **args)
{
	static const char *const defaults[] = {
		SHARDLAB_SOURCE_ROOT "/models/gpt3-175b.json",
		SHARDLAB_SOURCE_ROOT "/topologies/dgx-a100-x128.json", "1024",
		SHARDLAB_SOURCE_ROOT "/topologies/atlas800t-a2-910b-x1024.json", "8192",
	};
	*args = argc > 1 ? (const char *const *)argv + 1 : defaults;
	int n = argc > 1 ? argc - 1 : (int)SL_COUNTOF(defaults);
	if (n >= 3 && n % 2 == 1)
		return n;
	fprintf(stderr, "usage: %s [MODEL [TOPOLOGY DEVICES]...]\n", bench);
	return -1;
}

bool bench_in_child(int (*fn)(void *), void *ctx)
{
	fflush(stdout);
	fflush(stderr);
	pid_t pid = fork();
	if (pid == 0)
		_exit(fn(ctx));
	int st = 0;
	return pid > 0 && waitpid(pid, &st, 0) >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}
