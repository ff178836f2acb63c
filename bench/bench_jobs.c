/* bench_jobs.c — several jobs on one fabric at scale (issue 43): J jobs of
 * R ranks each, every one GPT-3 175B trained Megatron style (Brown et al.
 * 2020: 96 layers, hidden 12288, 96 heads, sequence 2048, vocabulary
 * 51,200, bf16; tensor parallel 8 inside a server, pipeline parallel 8,
 * 1F1B, full recomputation, data parallel R / 64, one micro-batch of one
 * sequence per replica and pipeline stage slot: global batch = M x DP),
 * packed side by side on a DGX H100 fat tree grown by whole servers to
 * J x R GPUs, all simulated together in one SimGrid run at fidelity
 * coarse (or the one --fidelity names: representative for the largest)
 * with the leaves' uplinks pooled (docs/simulation.md, "Several jobs on
 * one fabric"). The plan and program are made once (the jobs are alike)
 * and placed J times.
 *
 * One JSON line per size, measured in its own child process:
 *   {"bench": "jobs", "fidelity", "jobs", "ranks_per_job", "ranks", "micro_batches",
 *    "plan_s", "lower_s", "simulate_s" (wall), "cpu_s" (the child's user
 *    and system time: the figure to compare on a shared machine),
 *    "peak_rss_bytes",
 *    "activities", "messages", "formula_collectives", "iteration_s"
 *    (the slowest job's), "alone_s" (-1: not run)}
 * Target (issue 43): 16 jobs x 8,192 = 131,072 GPUs under 10 minutes and
 * 16 GB on a 2-core machine (met at fidelity representative:
 * docs/performance.md). Usage:
 *   bench_jobs [--fidelity F] [JOBSxRANKS[xMICRO]...]     default 16x8192x1
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bench.h"
#include "sim.h"

enum { TP = 8, PP = 8 };

struct size {
	int jobs;
	int64_t ranks, micro;
	enum sim_fidelity fidelity;
};

static const char SCENARIO[] =
	"{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"bench-jobs\",\n"
	" \"model\": {\"name\": \"gpt3-175b\", \"generator\": {\"kind\": \"gpt\",\n"
	"   \"hidden\": 12288, \"layers\": 96, \"heads\": 96, \"seq\": 2048,\n"
	"   \"vocab\": 51200, \"ffn\": 49152, \"dtype\": \"bf16\", \"bias\": true,\n"
	"   \"dropout\": 0.1, \"micro_batch\": %" PRId64 "}},\n"
	" \"topology\": \"../topologies/dgx-h100-x64.json\",\n"
	" \"devices\": 64,\n"
	" \"planners\": [\"megatron\"],\n"
	" \"training\": {\"global_batch\": %" PRId64 ", \"pipeline_stages\": %d,\n"
	"   \"schedule\": \"1f1b\", \"recompute\": \"full\", \"dtype\": \"bf16\"}}\n";

/* User and system time of this process and its reaped children (the
 * simulation runs in one) so far, seconds. */
static double cpu_s(void)
{
	double t = 0;
	struct rusage u;
	for (int who = 0; who < 2; who++) {
		getrusage(who ? RUSAGE_CHILDREN : RUSAGE_SELF, &u);
		t += (double)u.ru_utime.tv_sec + 1e-6 * (double)u.ru_utime.tv_usec +
		     (double)u.ru_stime.tv_sec + 1e-6 * (double)u.ru_stime.tv_usec;
	}
	return t;
}

static int run(void *ctx)
{
	const struct size *z = ctx;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct json_doc doc = {0};
	int64_t dp = z->ranks / (TP * PP), all = z->jobs * z->ranks;
	char text[2048];
	snprintf(text, sizeof text, SCENARIO, dp, z->micro * dp, PP);
	double t0 = bench_now_s();
	struct scenario *s = NULL;
	if (a && json_doc_parse(&doc, SHARDLAB_SOURCE_ROOT "/bench/bench-jobs.json", text,
	                        strlen(text), &d))
		s = scenario_load_doc(a, &doc);
	struct topology *t = s ? arena_alloc(a, sizeof *t) : NULL;
	if (t) {
		/* the fabric grown by whole servers to every job's GPUs */
		*t = *s->topo;
		t->servers = (int)(all / t->devices_per_server);
		t->n_devices = all;
		s->topo = t;
		s->devices = z->ranks;
	}
	struct plan_options po = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_TOPOLOGY};
	struct plan *p = t ? plan_make(a, s, PLANNER_MEGATRON, &po, &d) : NULL;
	double t_plan = bench_now_s() - t0;
	struct program prog;
	t0 = bench_now_s();
	bool ok = p && plan_lower(a, p, 25 * 1048576.0, &prog, &d);
	double t_lower = bench_now_s() - t0;
	struct sim_job *jobs = ok ? arena_calloc(a, (size_t)z->jobs, sizeof(*jobs)) : NULL;
	struct sim_result *r = ok ? arena_calloc(a, (size_t)z->jobs, sizeof(*r)) : NULL;
	for (int j = 0; jobs && r && j < z->jobs; j++) {
		int64_t *dev = arena_calloc(a, (size_t)z->ranks, sizeof(*dev));
		if (!dev)
			break;
		for (int64_t k = 0; k < z->ranks; k++)
			dev[k] = j * z->ranks + k;
		jobs[j] = (struct sim_job){&prog, dev};
	}
	struct sim_options so = {.fidelity = z->fidelity, .algo = COLL_AUTO,
	                         .leaf_uplinks = true};
	struct sim_shared sh;
	t0 = bench_now_s();
	ok = ok && jobs && r && sim_run_jobs(a, s->topo, jobs, z->jobs, &so, r, &sh, &d);
	double t_sim = bench_now_s() - t0;
	bench_print_diags("bench_jobs", &d);
	if (ok) {
		int64_t activities = 0, messages = 0, formula = 0;
		double slowest = 0;
		for (int j = 0; j < z->jobs; j++) {
			activities += r[j].activities;
			messages += r[j].messages;
			formula += r[j].by_formula;
			slowest = r[j].iteration_s > slowest ? r[j].iteration_s : slowest;
		}
		printf("{\"bench\": \"jobs\", \"fidelity\": \"%s\", \"jobs\": %d"
		       ", \"ranks_per_job\": %" PRId64
		       ", \"ranks\": %" PRId64 ", \"micro_batches\": %" PRId64 ", \"plan_s\": %.3f"
		       ", \"lower_s\": %.3f, \"simulate_s\": %.3f, \"cpu_s\": %.3f"
		       ", \"peak_rss_bytes\": %" PRId64
		       ", \"activities\": %" PRId64 ", \"messages\": %" PRId64
		       ", \"formula_collectives\": %" PRId64 ", \"shared_links\": %d"
		       ", \"iteration_s\": %.17g}\n",
		       fidelity_names[z->fidelity], z->jobs, z->ranks, all, prog.micro_batches, t_plan, t_lower, t_sim, cpu_s(),
		       bench_peak_rss_bytes(), activities, messages, formula, sh.n_links, slowest);
	}
	fflush(stdout);
	json_doc_free(&doc);
	diag_list_free(&d);
	arena_free(a);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	bool ok = true;
	enum sim_fidelity fid = FIDELITY_COARSE;
	int first = 1;
	if (argc > 2 && !strcmp(argv[1], "--fidelity")) {
		for (fid = 0; fid < FIDELITY_COUNT && strcmp(argv[2], fidelity_names[fid]); fid++)
			;
		if (fid == FIDELITY_COUNT) {
			fprintf(stderr, "bench_jobs: unknown fidelity '%s'\n", argv[2]);
			return 2;
		}
		first = 3;
	}
	for (int i = first; i < argc || (i == first && argc == first); i++) {
		struct size z = {16, 8192, 1, fid};
		if (i < argc) {
			char *end;
			z.jobs = (int)strtol(argv[i], &end, 10);
			z.ranks = *end == 'x' ? strtoll(end + 1, &end, 10) : 0;
			if (*end == 'x')
				z.micro = strtoll(end + 1, &end, 10);
			if (*end || z.jobs < 1 || z.jobs > 64 || z.ranks < TP * PP ||
			    z.ranks % (TP * PP) || z.micro < 1) {
				fprintf(stderr, "usage: bench_jobs [--fidelity F] [JOBSxRANKS[xMICRO]...]: "
				                "RANKS a multiple of %d, 1 to 64 jobs\n", TP * PP);
				return 2;
			}
		}
		ok = bench_in_child(run, &z) && ok;
	}
	return ok ? 0 : 1;
}
