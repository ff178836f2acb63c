/* bench_simulate.c — the simulator on one data + tensor parallel training
 * iteration of a 24-layer transformer on 64 ranks (issue 6, point 9).
 *
 * The scenario (below, parsed from memory): the `transformer` generator
 * with Megatron-LM 345M sizes (hidden 1024, 16 heads, 24 layers, sequence
 * 1024) and a micro-batch of 16 on 64 of the 1,024 GPUs of dgx-a100-x128
 * (8 DGX A100 servers); the megatron planner puts tensor parallel 8 inside
 * each server and data parallel 8 across; coarse fidelity, the collective
 * rule's choice. Planning and lowering are not timed; plan_lower plus
 * sim_run are (CLOCK_MONOTONIC; the simulation runs in a child process, so
 * peak memory is the larger of this process's and its children's). One
 * JSON line:
 *   {"bench": "simulate", "ranks", "ops", "steps", "wall_s", "messages",
 *    "messages_per_s", "peak_rss_bytes", "iteration_s"}
 * Target (issue 6): under 10 s on this machine. Usage: bench_simulate
 * [step|coarse] (default coarse).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"
#include "sim.h"

static const char scenario_text[] =
	"{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"bench-simulate\",\n"
	" \"model\": {\"name\": \"transformer-24\", \"generator\": {\"kind\": \"transformer\",\n"
	"   \"hidden\": 1024, \"heads\": 16, \"layers\": 24, \"seq\": 1024, \"micro_batch\": 16}},\n"
	" \"topology\": \"../topologies/dgx-a100-x128.json\",\n"
	" \"devices\": 64,\n"
	" \"planners\": [\"megatron\"],\n"
	" \"training\": {\"global_batch\": 16, \"dtype\": \"bf16\"}}\n";

static struct scenario *load(struct arena *a, struct json_doc *doc, struct diag_list *d)
{
	/* A file name beside the shipped folders, so that the topology's
	 * relative path resolves. */
	const char *file = SHARDLAB_SOURCE_ROOT "/bench/bench-simulate.json";
	if (!json_doc_parse(doc, file, scenario_text, strlen(scenario_text), d))
		return NULL;
	return scenario_load_doc(a, doc);
}

int main(int argc, char **argv)
{
	enum sim_fidelity fid = FIDELITY_COARSE;
	if (argc == 2 && !strcmp(argv[1], "step")) {
		fid = FIDELITY_STEP;
	} else if (argc > 2 || (argc == 2 && strcmp(argv[1], "coarse"))) {
		fprintf(stderr, "usage: bench_simulate [step|coarse]\n");
		return 2;
	}
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct json_doc doc = {0};
	struct scenario *s = a ? load(a, &doc, &d) : NULL;
	struct plan_options po = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_TOPOLOGY};
	struct plan *p = s ? plan_make(a, s, PLANNER_MEGATRON, &po, &d) : NULL;
	struct program prog;
	struct sim_result r;
	struct sim_options so = {.fidelity = fid, .algo = COLL_AUTO};
	double t0 = bench_now_s();
	bool ok = p && plan_lower(a, p, 25 * 1048576.0, &prog, &d) && sim_run(a, s->topo, &prog, &so, &r, &d);
	double wall = bench_now_s() - t0;
	bench_print_diags("bench_simulate", &d);
	if (ok)
		printf("{\"bench\": \"simulate\", \"fidelity\": \"%s\", \"ranks\": %" PRId64
		       ", \"ops\": %d, \"steps\": %d, \"wall_s\": %.3f, \"messages\": %" PRId64
		       ", \"messages_per_s\": %.0f, \"peak_rss_bytes\": %" PRId64 ", \"iteration_s\": %.6g}\n",
		       fidelity_names[fid], r.n_ranks, s->graph->n_ops, prog.n_steps, wall, r.messages,
		       wall > 0 ? (double)r.messages / wall : 0.0, bench_peak_rss_bytes(), r.iteration_s);
	json_doc_free(&doc);
	diag_list_free(&d);
	arena_free(a);
	return ok ? 0 : 1;
}
