/* bench_scale.c — the whole pipeline at capacity-planning scale (issues
 * 8 and 23): one training iteration, Megatron style, every rank simulated
 * at fidelity coarse. Two models:
 *
 * - GPT-3 175B (Brown et al. 2020: 96 layers, hidden 12288, 96 heads,
 *   sequence 2048, vocabulary 51,200, bf16), global batch 1,536: tensor
 *   parallel 8 inside each server, pipeline parallel 8 (1F1B, full
 *   recomputation), data parallel N / 64, micro-batch 1 per replica, so a
 *   pipeline runs 1,536 / DP micro-batches. Clusters a100 =
 *   dgx-a100-x128 (up to 1,024 GPUs) and 910b = atlas800t-a2-910b-x1024
 *   (up to 8,192 NPUs).
 * - Llama 3 405B as Meta trained it on 16,384 H100s (Llama Team, "The
 *   Llama 3 Herd of Models", 2024, Table 3 and section 3.3: 126 layers,
 *   hidden 16384, 128 heads, 8 KV heads, FFN 53,248, vocabulary 128,256,
 *   sequence 8,192; TP 8 x PP 16 x DP 128, 16M tokens = 2,048 sequences
 *   per batch), 1F1B, full recomputation, micro-batch 1 per replica:
 *   cluster h100 = dgx-h100-x64 grown by whole servers to N GPUs.
 *
 * Each rank count runs in its own child process (its peak memory is its
 * own) and prints one JSON line:
 *   {"bench": "scale", "cluster", "ranks", "tp", "pp", "dp",
 *    "micro_batches", "plan_s", "estimate_s_wall" (the estimator, best of
 *    5), "lower_s", "simulate_s" (wall), "wall_s" (the three together),
 *    "peak_rss_bytes", "activities" (SimGrid events), "events_per_s",
 *    "messages", "formula_collectives", "iteration_s", "estimate_s"}
 * Targets: a100 1,024 under 60 s and 4 GB (issue 8); 910b 8,192 under 60
 * s and h100 16,384 under 3 minutes and 8 GB (issue 23). Usage:
 *   bench_scale [a100|910b|h100] [RANKS...]
 * default a100 1024; docs/performance.md runs 910b 64 128 ... 8192.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "sim.h"

enum { TP = 8, RUNS = 5 };

struct job {
	const char *cluster, *topology;
	int64_t ranks;
	int pp, global_batch;
	int64_t max;        /* the most ranks */
	bool grow;          /* by whole servers past the topology's devices */
};

static const char GPT3[] =
	"{\"name\": \"gpt3-175b\", \"generator\": {\"kind\": \"gpt\",\n"
	"   \"hidden\": 12288, \"layers\": 96, \"heads\": 96, \"seq\": 2048,\n"
	"   \"vocab\": 51200, \"ffn\": 49152, \"dtype\": \"bf16\", \"bias\": true,\n"
	"   \"dropout\": 0.1, \"micro_batch\": %" PRId64 "}}";
static const char LLAMA3[] =
	"{\"name\": \"llama3-405b\", \"generator\": {\"kind\": \"llama\",\n"
	"   \"hidden\": 16384, \"layers\": 126, \"heads\": 128, \"kv_heads\": 8,\n"
	"   \"ffn\": 53248, \"seq\": 8192, \"vocab\": 128256, \"dtype\": \"bf16\",\n"
	"   \"micro_batch\": %" PRId64 "}}";

static struct scenario *load(struct arena *a, struct json_doc *doc, const struct job *j,
                             struct diag_list *d)
{
	char text[2048], model[512];
	int64_t dp = j->ranks / (TP * j->pp);
	snprintf(model, sizeof model, j->grow ? LLAMA3 : GPT3, dp);
	/* A grown cluster is loaded at its own size, then grown as --devices
	 * grows it (cli/common.c). */
	snprintf(text, sizeof text,
	         "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"bench-scale\",\n"
	         " \"model\": %s,\n"
	         " \"topology\": \"../topologies/%s\",\n"
	         " \"devices\": %" PRId64 ",\n"
	         " \"planners\": [\"megatron\"],\n"
	         " \"training\": {\"global_batch\": %d, \"pipeline_stages\": %d,\n"
	         "   \"schedule\": \"1f1b\", \"recompute\": \"full\", \"dtype\": \"bf16\"}}\n",
	         model, j->topology, j->grow ? (int64_t)TP * j->pp : j->ranks, j->global_batch,
	         j->pp);
	/* A file name beside the shipped folders, so that the topology's
	 * relative path resolves. */
	const char *file = SHARDLAB_SOURCE_ROOT "/bench/bench-scale.json";
	if (!json_doc_parse(doc, file, text, strlen(text), d))
		return NULL;
	struct scenario *s = scenario_load_doc(a, doc);
	if (s && j->grow && j->ranks > s->topo->n_devices) {
		struct topology *t = arena_alloc(a, sizeof *t);
		if (!t)
			return NULL;
		*t = *s->topo;
		t->servers = (int)(j->ranks / t->devices_per_server);
		t->n_devices = j->ranks;
		s->topo = t;
	}
	if (s)
		s->devices = j->ranks;
	return s;
}

static int run(void *ctx)
{
	const struct job *j = ctx;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct json_doc doc = {0};
	double t0 = bench_now_s();
	struct scenario *s = a ? load(a, &doc, j, &d) : NULL;
	struct plan_options po = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_TOPOLOGY};
	struct plan *p = s ? plan_make(a, s, PLANNER_MEGATRON, &po, &d) : NULL;
	double t_plan = bench_now_s() - t0, t_est = -1;
	struct estimate e;
	bool ok = p != NULL;
	for (int r = 0; ok && r < RUNS; r++) {
		double t = bench_now_s();
		ok = plan_estimate(a, p, &e, &d);
		t = bench_now_s() - t;
		t_est = t_est < 0 || t < t_est ? t : t_est;
	}
	struct program prog;
	struct sim_result r;
	struct sim_options so = {.fidelity = FIDELITY_COARSE, .algo = COLL_AUTO};
	double t1 = bench_now_s();
	ok = ok && plan_lower(a, p, 25 * 1048576.0, &prog, &d);
	double t_lower = bench_now_s() - t1;
	t1 = bench_now_s();
	ok = ok && sim_run(a, s->topo, &prog, &so, &r, &d);
	double t_sim = bench_now_s() - t1;
	bench_print_diags("bench_scale", &d);
	if (ok)
		printf("{\"bench\": \"scale\", \"cluster\": \"%s\", \"ranks\": %" PRId64
		       ", \"tp\": %d, \"pp\": %d, \"dp\": %" PRId64 ", \"micro_batches\": %" PRId64
		       ", \"plan_s\": %.3f, \"estimate_s_wall\": %.6f, \"lower_s\": %.3f"
		       ", \"simulate_s\": %.3f, \"wall_s\": %.3f, \"peak_rss_bytes\": %" PRId64
		       ", \"activities\": %" PRId64 ", \"events_per_s\": %.0f, \"messages\": %" PRId64
		       ", \"formula_collectives\": %" PRId64 ", \"iteration_s\": %.6g"
		       ", \"estimate_s\": %.6g}\n",
		       j->cluster, j->ranks, TP, j->pp, j->ranks / (TP * j->pp), prog.micro_batches, t_plan,
		       t_est, t_lower, t_sim, t_plan + t_lower + t_sim, bench_peak_rss_bytes(),
		       r.activities, t_sim > 0 ? (double)r.activities / t_sim : 0.0, r.messages,
		       r.by_formula, r.iteration_s, e.iteration_s);
	fflush(stdout);
	json_doc_free(&doc);
	diag_list_free(&d);
	arena_free(a);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	static const struct job jobs[] = {
		{"a100", "dgx-a100-x128.json", 1024, 8, 1536, 1024, false},
		{"910b", "atlas800t-a2-910b-x1024.json", 8192, 8, 1536, 8192, false},
		{"h100", "dgx-h100-x64.json", 16384, 16, 2048, 16384, true},
	};
	struct job j = jobs[0];
	int first = 1;
	for (size_t k = 0; argc > 1 && k < sizeof jobs / sizeof jobs[0]; k++)
		if (!strcmp(argv[1], jobs[k].cluster)) {
			j = jobs[k];
			first = 2;
		}
	bool ok = true;
	for (int i = first; i < argc || (i == first && argc == first); i++) {
		char *end = NULL;
		int64_t unit = (int64_t)TP * j.pp;
		if (i < argc)
			j.ranks = strtoll(argv[i], &end, 10);
		else if (first == 2)
			j.ranks = j.max;
		if ((i < argc && *end) || j.ranks < unit || j.ranks > j.max || j.ranks % unit ||
		    j.global_batch % (j.ranks / unit)) {
			fprintf(stderr, "usage: bench_scale [a100|910b|h100] [RANKS...]: RANKS a multiple "
			                "of %" PRId64 " up to %" PRId64 " whose data-parallel degree divides "
			                "%d\n", unit, j.max, j.global_batch);
			return 2;
		}
		ok = bench_in_child(run, &j) && ok;
	}
	return ok ? 0 : 1;
}
