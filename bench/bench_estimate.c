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
#include <time.h>

#include "planner.h"

#ifndef SHARDLAB_SOURCE_ROOT
#define SHARDLAB_SOURCE_ROOT "."
#endif

enum { T = 8, RUNS = 5 };

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
		fprintf(stderr, "%s\n", s ? s : "bench_estimate: out of memory");
		free(s);
	}
}

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
			fprintf(stderr, "bench_estimate: %s: no op %s\n", s->graph->name, configs[i].op);
			return false;
		}
		c->op_name = configs[i].op;
		c->op = op;
		c->file = "bench_estimate";
		c->path = "shard";
		c->form = SHARD_TUPLE;
		c->n_in = 2;
		c->cuts = arena_calloc(a, 2, sizeof(*c->cuts));
		if (!c->cuts)
			return false;
		bool r = configs[i].rows;
		int64_t in0[2] = {1, r ? T : 1}, in1[2] = {r ? T : 1, r ? 1 : T};
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
	s->name = "bench-estimate";
	s->file = "bench_estimate";
	s->model_file = model;
	s->topology_file = topo;
	s->graph = graph_load(a, model, d);
	s->topo = topo_load(a, topo, d);
	if (!s->graph || !s->topo)
		return NULL;
	if (s->topo->n_devices < devices) {
		fprintf(stderr, "bench_estimate: %s has %" PRId64 " devices, not %" PRId64 "\n", topo,
		        s->topo->n_devices, devices);
		return NULL;
	}
	s->devices = devices;
	s->n_planners = 1;
	s->planners[0] = PLANNER_PROPAGATE;
	/* Global batch 1 = the model's micro_batch: one step per iteration. */
	s->training = (struct training){.global_batch = 1, .micro_batches = 1,
	                                .pipeline_stages = 1, .virtual_stages = 1,
	                                .dtype = s->graph->ops[0].dtype};
	s->propagation.all_devices = true;
	return configure(a, s) ? s : NULL;
}

int main(int argc, char **argv)
{
	const char *model = SHARDLAB_SOURCE_ROOT "/models/gpt3-175b.json";
	const char *topo = SHARDLAB_SOURCE_ROOT "/topologies/dgx-a100-x128.json";
	int64_t devices = 1024;
	if (argc == 4) {
		model = argv[1];
		topo = argv[2];
		devices = strtoll(argv[3], NULL, 10);
	} else if (argc != 1) {
		fprintf(stderr, "usage: bench_estimate [MODEL TOPOLOGY DEVICES]\n");
		return 2;
	}
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct scenario *s = a ? scenario_build(a, model, topo, devices, &d) : NULL;
	struct plan *p = s ? plan_propagate(a, s, REDIST_COMPAT, &d) : NULL;
	struct estimate e;
	double best = -1;
	bool ok = p != NULL;
	for (int r = 0; ok && r < RUNS; r++) {
		double t0 = now_s();
		ok = plan_estimate(a, p, &e, &d);
		double wall = now_s() - t0;
		if (best < 0 || wall < best)
			best = wall;
	}
	print_diags(&d);
	if (ok)
		printf("{\"bench\": \"estimate\", \"model\": \"%s\", \"ops\": %d, \"devices\": %" PRId64
		       ", \"wall_s\": %.6f, \"iteration_s\": %.6g}\n",
		       s->graph->name, s->graph->n_ops, p->n_devices, best, e.iteration_s);
	diag_list_free(&d);
	arena_free(a);
	return ok ? 0 : 1;
}
