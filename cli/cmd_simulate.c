/* cmd_simulate.c — `shardlab simulate SCENARIO`: one plan (plan_make)
 * lowered to a training iteration (plan_lower), simulated on SimGrid
 * (sim_run) and estimated in closed form beside it (plan_estimate). Prints
 * the simulated and estimated iteration times, per-rank compute / exposed
 * communication / idle, the busiest links and the collectives that
 * contended most, as text or JSON; optionally writes a Chrome trace.
 * The simulation dominates the time; this file only parses and prints.
 */
#include <errno.h>
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MIB 1048576.0

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab simulate SCENARIO [--planner NAME] [--rec-cost MODE] [--fused]\n"
	        "                                  [--rec-order ORDER] [--fidelity F]\n"
	        "                                  [--collective-algo A]\n"
	        "                                  [--bucket-mb N] [--seed N] [--trace FILE]\n"
	        "                                  [--json | --csv]\n"
	        "                                  [--devices N] [--topology FILE] [--global-batch B]\n"
	        "\n"
	        "Plan a scenario, lower the plan to the program every rank runs for one\n"
	        "training iteration and simulate it on SimGrid: every rank's compute and\n"
	        "the collectives' point-to-point messages on the topology's links, so\n"
	        "that concurrent collectives share links (docs/simulation.md). The\n"
	        "symbolic estimate (shardlab estimate) is printed beside it. Prints the\n"
	        "iteration time simulated and estimated, the estimate's memory per\n"
	        "device against the HBM (its verdict when it does not fit) and, with\n"
	        "training.optimizer_offload or activation_offload_layers, a server's\n"
	        "host memory against server.host.memory_GB (the same verdict), per rank\n"
	        "the compute, exposed\n"
	        "communication and idle time (min, median, max, the worst rank), the\n"
	        "busiest links, their utilisation over time and the collectives that\n"
	        "took longer than their formula.\n"
	        "\n"
	        "options:\n%s"
	        "  --planner NAME        propagate, recursive, data-parallel, megatron or\n"
	        "                        megatron-search (its choice on the second line;\n"
	        "                        shardlab compare --planner megatron-search\n"
	        "                        simulates its best K).\n"
	        "                        Default: the scenario's first planner when it is\n"
	        "                        available, else propagate\n"
	        "  --rec-cost MODE       the recursive planner's costs: topology (default)\n"
	        "                        or mindspore\n"
	        "  --rec-order ORDER     its visit order within a level:\n"
	        "                        reverse-topological (default) or weight, as for\n"
	        "                        shardlab plan\n"
	        "  --fused               complete partial sums with a ReduceScatter where\n"
	        "                        the consumer wants the result split\n"
	        "  --fidelity F          coarse: one transfer per rank per collective\n"
	        "                        phase, and a collective whose links no other\n"
	        "                        traffic uses by its formula once its members\n"
	        "                        meet (the same time, far fewer events); phase:\n"
	        "                        the transfers for every collective; step: every\n"
	        "                        algorithm step a message; representative:\n"
	        "                        coarse with one rank per data-parallel group run,\n"
	        "                        its group's collectives carrying every member's\n"
	        "                        transfers (the largest clusters; the replicas\n"
	        "                        report their representative's figures). Default: the\n"
	        "                        scenario's simulation.fidelity (coarse)\n"
	        "  --collective-algo A   auto, ring, tree, halving-doubling, hierarchical,\n"
	        "                        direct, nvls (NCCL on a switch that reduces) or\n"
	        "                        pipeline (HCCL across servers). Default: the\n"
	        "                        scenario's simulation.collective_algo (auto:\n"
	        "                        the rule of docs/simulation.md)\n"
	        "  --bucket-mb N         gradient buckets of N MiB (default: the scenario's\n"
	        "                        training.gradient_bucket_mb, itself 25 as PyTorch\n"
	        "                        DDP), synchronised under the backward unless the\n"
	        "                        scenario says training.overlap_grad_reduce false\n"
	        "  --max-events N        refuse a program of more than N steps x ranks\n"
	        "                        (default 1e10: hours; GPT-3 175B on 8,192 ranks is\n"
	        "                        about 1e9), naming the field to change; at fidelity\n"
	        "                        representative only the ranks that run count\n",
	        cli_override_help);
	fprintf(f,
	        "  --seed N              the draw of the devices' speeds where the\n"
	        "                        topology's device has a speed_cv (stragglers,\n"
	        "                        docs/cost-models.md); the same seed gives the same\n"
	        "                        result. Default 0\n"
	        "  --trace FILE          write a Chrome trace (open it in Perfetto): one\n"
	        "                        process per rank, one thread per stream, a slice\n"
	        "                        per compute step and per collective; a regular\n"
	        "                        FILE is replaced atomically (a link is followed),\n"
	        "                        a device or FIFO written in place\n"
	        "  --json                print JSON: \"scenario\", \"model\", \"topology\",\n"
	        "                        \"devices\", \"planner\", \"mode\", \"fidelity\",\n"
	        "                        \"collective_algo\", \"bucket_bytes\", \"seed\",\n"
	        "                        \"iteration_s\",\n"
	        "                        \"estimate_s\", \"difference_pct\", \"messages\",\n"
	        "                        \"formula_collectives\",\n"
	        "                        \"comm_bytes_per_device\",\n"
	        "                        \"memory_bytes_per_device\" (the estimate's),\n"
	        "                        \"hbm_bytes\", \"oom\", \"oom_overflow_bytes\",\n"
	        "                        with training.optimizer_offload or\n"
	        "                        activation_offload_layers\n"
	        "                        \"host_memory_bytes_per_server\" (the estimate's),\n"
	        "                        \"host_capacity_bytes\" (null: not stated) and,\n"
	        "                        when stated, \"host_oom\", \"host_overflow_bytes\",\n"
	        "                        \"ranks\" ([{\"rank\",\n"
	        "                        \"compute_s\", \"comm_exposed_s\", \"pipeline_wait_s\",\n"
	        "                        \"straggler_wait_s\" (in a collective before its\n"
	        "                        slowest member arrived), \"pipeline_transfer_s\"\n"
	        "                        (of comm_exposed_s: receiving the pipeline's\n"
	        "                        sends once posted), \"pipeline_alone_s\" (the\n"
	        "                        same transfers alone on their routes), \"idle_s\"}]),\n"
	        "                        \"links\" ([{\"name\", \"bytes\", \"busy_s\",\n"
	        "                        \"utilisation\"}], busiest first),\n"
	        "                        \"links_over_time\" ({\"bin_s\", \"links\": [{\"name\",\n"
	        "                        \"utilisation\": [32 bins]}]}, the busiest 8) and\n"
	        "                        \"collectives\"\n"
	        "                        ([{\"step\", \"label\", \"algorithm\", \"simulated_s\",\n"
	        "                        \"formula_s\"}], program order)\n");
	fprintf(f,
	        "  --csv                 print one CSV row per rank: rank, stage,\n"
	        "                        compute_s, comm_exposed_s, pipeline_wait_s,\n"
	        "                        idle_s, iteration_s\n"
	        "  -h, --help            this help\n"
	        "\n"
	        "Before a long run (an expected 10 s or more, or 4,096 ranks or more) one\n"
	        "line on stderr says its size and expected cost: ranks, micro-batches,\n"
	        "program steps x ranks, roughly how long and how much memory. A progress\n"
	        "line is shown on stderr while it simulates, when stderr is a terminal.\n"
	        "The output is deterministic (no wall-clock figures).\n"
	        "\n"
	        "exit status: 0 success, 1 invalid scenario, strategy, or a plan that\n"
	        "cannot be lowered or simulated, or a trace that cannot be written\n"
	        "(diagnostics on stderr), 2 usage error.\n");
}

struct args {
	const char *file, *trace;
	bool json, csv;
	struct cli_plan_args plan;
	int fidelity, algo;            /* -1: the scenario's */
	double bucket_bytes;
	double max_events;
	uint64_t seed;                 /* the devices' speeds (stragglers) */
};

static int parse_bucket(const char *s, double *out)
{
	char *end;
	double v = strtod(s, &end);
	if (*s == '\0' || *end != '\0' || !(v > 0) || v > 1e6) {
		fprintf(stderr, "shardlab simulate: --bucket-mb takes a size in MiB > 0, got '%s'\n", s);
		return EXIT_USAGE;
	}
	*out = v * MIB;
	return EXIT_OK;
}

static int parse_seed(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (!*s || *end || errno || s[0] == '-') {
		fprintf(stderr, "shardlab simulate: --seed: expected an integer from 0 to %llu, got "
		                "'%s'\n",
		        (unsigned long long)UINT64_MAX, s);
		return EXIT_USAGE;
	}
	*out = v;
	return EXIT_OK;
}

static int parse_option(int argc, char **argv, int *i, struct args *a)
{
	const char *o = argv[*i];
	int taken = cli_plan_option("simulate", argc, argv, i, &a->plan);
	if (taken)
		return taken < 0 ? EXIT_USAGE : EXIT_OK;
	if (!strcmp(o, "--json")) {
		a->json = true;
		return EXIT_OK;
	}
	if (!strcmp(o, "--csv")) {
		a->csv = true;
		return EXIT_OK;
	}
	if (*i + 1 >= argc) {
		fprintf(stderr, "shardlab simulate: unknown option '%s' (see --help)\n", o);
		return EXIT_USAGE;
	}
	const char *v = argv[++*i];
	int k = 0;
	if (!strcmp(o, "--trace"))
		a->trace = v;
	else if (!strcmp(o, "--bucket-mb"))
		return parse_bucket(v, &a->bucket_bytes);
	else if (!strcmp(o, "--max-events"))
		return cli_parse_max_events("simulate", v, &a->max_events);
	else if (!strcmp(o, "--seed"))
		return parse_seed(v, &a->seed);
	else if (!strcmp(o, "--fidelity") &&
	         (k = cli_parse_name("simulate", o, v, fidelity_names, FIDELITY_COUNT)) >= 0)
		a->fidelity = k;
	else if (!strcmp(o, "--collective-algo") &&
	         (k = cli_parse_name("simulate", o, v, collective_algo_names, COLL_COUNT)) >= 0)
		a->algo = k;
	else if (k >= 0) {
		fprintf(stderr, "shardlab simulate: unknown option '%s' (see --help)\n", o);
		return EXIT_USAGE;
	}
	return k >= 0 ? EXIT_OK : EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.fidelity = -1, .algo = -1, .bucket_bytes = -1};
	int rc = EXIT_OK;
	for (int i = 1; i < argc && rc == EXIT_OK; i++) {
		if (argv[i][0] == '-')
			rc = parse_option(argc, argv, &i, a);
		else
			rc = cli_scenario_word("simulate", argv[i], &a->file);
	}
	if (rc == EXIT_OK)
		rc = cli_scenario_named("simulate", a->file);
	return rc;
}

/* ------------------------------------------------------------------ text */


/* training.optimizer_offload, activation_offload_layers: what a server's
 * host memory holds, with its verdict as the device's (nothing without
 * offload). */
static void text_host(const struct estimate *e)
{
	char b[2][32], oom[96];
	if (!(e->host_bytes_per_server > 0))
		return;
	if (!(e->host_capacity_bytes > 0)) {
		printf("  host per server      %s (estimate; not checked: the topology states no "
		       "server.host.memory_GB)\n",
		       cli_si(b[0], 32, e->host_bytes_per_server, "B"));
		return;
	}
	printf("  host per server      %s of %s host memory (estimate)%s\n",
	       cli_si(b[0], 32, e->host_bytes_per_server, "B"),
	       cli_si(b[1], 32, e->host_capacity_bytes, "B"),
	       cli_oom_text(oom, sizeof oom, ": ", e->host_bytes_per_server,
	                    e->host_capacity_bytes));
}

static void text(const struct plan *p, const struct cli_sim_setup *o,
                 const struct cli_sim_outcome *r, const char *planner)
{
	char b[6][32], oom[48];
	printf("simulate %s: model %s on %" PRId64 " devices of %s, planner %s (%s redistribution)\n",
	       p->scenario->name, p->graph->name, p->scenario->devices, p->scenario->topo->name, planner,
	       p->mode == REDIST_FUSED ? "fused" : "MindSpore-compatible");
	report_search_chosen(stdout, p);
	cli_note_uncalibrated(stdout, p->scenario->topo);
	cli_note_faults(stdout, p->scenario->topo, p->scenario->devices);
	printf("fidelity %s, collectives %s, gradient buckets %g MiB", fidelity_names[o->fidelity],
	       collective_algo_names[o->algo], o->bucket_bytes / MIB);
	double cv = p->scenario->topo->device.speed_cv;
	if (cv > 0)
		printf(", devices' speeds spread %.3g (seed %" PRIu64 ")", cv, o->seed);
	printf("\n\n");
	char pct[16], ivt[96];
	struct cal_interval ie, is;
	cli_interval(p, &ie);
	cost_interval_at(&ie, r->sim.iteration_s, &is);
	printf("  iteration            simulated %s%s, estimated %s (%s)\n",
	       cli_si(b[0], 32, r->sim.iteration_s, "s"), cli_interval_text(ivt, sizeof ivt, &is),
	       cli_si(b[1], 32, r->est.iteration_s, "s"),
	       report_pct_text(pct, sizeof pct, report_diff_pct(r->sim.iteration_s,
	                                                         r->est.iteration_s)));
	cli_calibration_line(stdout, "  ", p->scenario->topo, cost_graph_has_moe(p->graph));
	cli_outside_line(stdout, "  ", &ie);
	printf("  micro-batches        %" PRId64 " (pipeline: %d stage%s x %lld ranks)\n", r->prog.micro_batches, r->prog.n_stages, r->prog.n_stages == 1 ? "" : "s", (long long)r->prog.stage_ranks);
	printf("  comm per device      %s\n",
	       cli_si(b[2], 32, report_program_comm_bytes(&r->prog), "B"));
	double hbm = p->scenario->topo->device.hbm_bytes;
	printf("  memory per device    %s of %s HBM (estimate)%s; simulated peak %s\n",
	       cli_si(b[3], 32, r->est.memory_bytes_per_device, "B"), cli_si(b[4], 32, hbm, "B"),
	       cli_oom_text(oom, sizeof oom, ": ", r->est.memory_bytes_per_device, hbm),
	       cli_si(b[5], 32, sim_peak_memory(&r->sim), "B"));
	text_host(&r->est);
	printf("  messages simulated   %" PRId64 " (collectives by their formula: %" PRId64 ")\n\n",
	       r->sim.messages, r->sim.by_formula);
	report_sim_ranks(stdout, &r->sim);
	printf("\nbusiest links\n");
	report_sim_links(stdout, "  ", &r->sim, 10);
	printf("\nbusiest links over time\n");
	report_sim_link_series(stdout, "  ", &r->sim);
	printf("\ncollectives that contended most (simulated vs formula)\n");
	report_sim_collectives(stdout, "  ", &r->prog, &r->sim, 10);
}

/* ------------------------------------------------------------------ json */

static cJSON *json_ranks(const struct sim_result *s)
{
	cJSON *a = cJSON_CreateArray();
	for (int64_t k = 0; k < s->n_ranks; k++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "rank", (double)k);
		cJSON_AddNumberToObject(o, "compute_s", s->ranks[k].compute_s);
		cJSON_AddNumberToObject(o, "pipeline_wait_s", s->ranks[k].pipeline_wait_s);
		cJSON_AddNumberToObject(o, "comm_exposed_s", s->ranks[k].comm_exposed_s);
		cJSON_AddNumberToObject(o, "straggler_wait_s", s->ranks[k].straggler_wait_s);
		cJSON_AddNumberToObject(o, "pipeline_transfer_s", s->ranks[k].pipeline_transfer_s);
		cJSON_AddNumberToObject(o, "pipeline_alone_s", s->ranks[k].pipeline_alone_s);
		cJSON_AddNumberToObject(o, "idle_s", s->ranks[k].idle_s);
		cJSON_AddNumberToObject(o, "peak_memory_bytes", s->ranks[k].peak_memory_bytes);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static cJSON *json_links(const struct sim_result *s)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < s->n_links; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", s->links[i].name ? s->links[i].name : "?");
		cJSON_AddNumberToObject(o, "bytes", s->links[i].bytes);
		cJSON_AddNumberToObject(o, "busy_s", s->links[i].busy_s);
		cJSON_AddNumberToObject(o, "utilisation", s->links[i].utilisation);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

/* The busiest links over time: {"bin_s", "links": [{"name",
 * "utilisation": [per bin]}]}. */
static cJSON *json_link_series(const struct sim_result *s)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "bin_s", s->bin_s);
	cJSON *a = cJSON_AddArrayToObject(o, "links");
	for (int i = 0; i < s->n_series; i++) {
		cJSON *l = cJSON_CreateObject();
		const char *name = s->links[s->series[i].link].name;
		cJSON_AddStringToObject(l, "name", name ? name : "?");
		cJSON_AddItemToObject(l, "utilisation",
		                      cJSON_CreateDoubleArray(s->series[i].utilisation, SIM_BINS));
		cJSON_AddItemToArray(a, l);
	}
	return o;
}

static cJSON *json_collectives(const struct program *prog, const struct sim_result *s)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < s->n_collectives; i++) {
		const struct sim_collective *c = &s->collectives[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "step", c->step);
		const char *label = c->step >= 0 && c->step < prog->n_steps ? prog->steps[c->step].label
		                                                             : NULL;
		cJSON_AddStringToObject(o, "label", label ? label : "");
		cJSON_AddStringToObject(o, "algorithm", collective_algo_names[c->algo]);
		cJSON_AddNumberToObject(o, "simulated_s", c->simulated_s);
		cJSON_AddNumberToObject(o, "formula_s", c->formula_s);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static cJSON *json(const struct plan *p, const struct cli_sim_setup *o,
                   const struct cli_sim_outcome *r, const struct report_options *ro)
{
	cJSON *root = report_json_head(p, ro);
	cJSON_AddStringToObject(root, "fidelity", fidelity_names[o->fidelity]);
	cJSON_AddStringToObject(root, "collective_algo", collective_algo_names[o->algo]);
	cJSON_AddNumberToObject(root, "bucket_bytes", o->bucket_bytes);
	cJSON_AddNumberToObject(root, "seed", (double)o->seed);
	cJSON_AddNumberToObject(root, "iteration_s", r->sim.iteration_s);
	struct cal_interval ie, is;
	cli_interval(p, &ie);
	cost_interval_at(&ie, r->sim.iteration_s, &is);
	cJSON_AddItemToObject(root, "calibration", cli_calibration_json(p->scenario->topo));
	cJSON_AddItemToObject(root, "interval", cli_interval_json(&is));
	cJSON_AddNumberToObject(root, "estimate_s", r->est.iteration_s);
	cJSON_AddNumberToObject(root, "difference_pct",
	                        report_diff_pct(r->sim.iteration_s, r->est.iteration_s));
	cJSON_AddNumberToObject(root, "steps_per_iteration", (double)r->prog.micro_batches);
	cJSON_AddNumberToObject(root, "messages", (double)r->sim.messages);
	cJSON_AddNumberToObject(root, "formula_collectives", (double)r->sim.by_formula);
	cJSON_AddNumberToObject(root, "comm_bytes_per_device", report_program_comm_bytes(&r->prog));
	cJSON_AddNumberToObject(root, "memory_bytes_per_device", r->est.memory_bytes_per_device);
	cJSON_AddNumberToObject(root, "simulated_peak_memory_bytes", sim_peak_memory(&r->sim));
	cJSON_AddNumberToObject(root, "hbm_bytes", p->scenario->topo->device.hbm_bytes);
	report_json_oom(root, r->est.memory_bytes_per_device, p->scenario->topo->device.hbm_bytes);
	if (r->est.host_bytes_per_server > 0) {
		cJSON_AddNumberToObject(root, "host_memory_bytes_per_server",
		                        r->est.host_bytes_per_server);
		if (r->est.host_capacity_bytes > 0)
			cJSON_AddNumberToObject(root, "host_capacity_bytes", r->est.host_capacity_bytes);
		else
			cJSON_AddNullToObject(root, "host_capacity_bytes");
		report_json_host_oom(root, r->est.host_bytes_per_server, r->est.host_capacity_bytes);
	}
	report_json_pipeline(root, p, &r->est);
	cJSON_AddItemToObject(root, "ranks", json_ranks(&r->sim));
	cJSON_AddItemToObject(root, "links", json_links(&r->sim));
	cJSON_AddItemToObject(root, "links_over_time", json_link_series(&r->sim));
	cJSON_AddItemToObject(root, "collectives", json_collectives(&r->prog, &r->sim));
	return root;
}

/* ------------------------------------------------------------------- run */

static bool write_trace(const char *path, const struct plan *p, const struct cli_sim_outcome *r,
                        const char *planner)
{
	char title[256], err[512];
	snprintf(title, sizeof title, "shardlab simulate %s (planner %s)", p->scenario->name,
	         planner);
	if (report_trace_write(path, &r->sim, &r->prog, title, err, sizeof err))
		return true;
	fprintf(stderr, "shardlab simulate: %s\n", err);
	return false;
}

/* One row per rank: where its iteration went. */
static void csv_ranks(const struct plan *p, const struct cli_sim_outcome *r)
{
	static const char *const cols[] = {"rank", "stage", "compute_s", "comm_exposed_s",
	                                   "pipeline_wait_s", "idle_s", "iteration_s", NULL};
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, cols);
	for (int64_t k = 0; k < r->sim.n_ranks; k++) {
		const struct sim_rank *x = &r->sim.ranks[k];
		cli_csv_int(&c, k);
		cli_csv_int(&c, p->n_devices > 0 ? k / p->n_devices : 0);
		cli_csv_num(&c, x->compute_s);
		cli_csv_num(&c, x->comm_exposed_s);
		cli_csv_num(&c, x->pipeline_wait_s);
		cli_csv_num(&c, x->idle_s);
		cli_csv_num(&c, r->sim.iteration_s);
		cli_csv_end(&c);
	}
}

int cmd_simulate(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	struct args a;
	int rc = parse_args(argc, argv, &a);
	if (rc != EXIT_OK)
		return rc;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *ar = arena_new();
	struct scenario *s;
	enum planner_kind kind;
	struct plan *p = cli_load_plan(ar, a.file, &a.plan, &s, &kind, &d);
	struct cli_sim_setup o = {
		.fidelity = a.fidelity >= 0 ? (enum sim_fidelity)a.fidelity
		                            : s ? s->sim.fidelity : FIDELITY_COARSE,
		.algo = a.algo >= 0 ? (enum collective_algo)a.algo : s ? s->sim.collective_algo : COLL_AUTO,
		.bucket_bytes = a.bucket_bytes >= 0 ? a.bucket_bytes
		              : s ? s->training.gradient_bucket_bytes : 25 * MIB,
		.max_events = a.max_events,
		.seed = a.seed,
		.trace = a.trace != NULL,
		.label = planner_names[kind],
		.announce = "simulate",
	};
	struct cli_sim_outcome r;
	bool ok = p && cli_simulate_plan(ar, p, &o, &r, &d);
	cli_print_diags(&d);
	rc = ok ? EXIT_OK : EXIT_INVALID;
	if (ok && a.trace && !write_trace(a.trace, p, &r, planner_names[kind]))
		rc = EXIT_INVALID;
	struct report_options ro = {.command = "simulate", .planner = planner_names[kind]};
	if (rc == EXIT_OK && a.json)
		rc = report_print_json(json(p, &o, &r, &ro), "simulate");
	else if (rc == EXIT_OK && a.csv)
		csv_ranks(p, &r);
	else if (rc == EXIT_OK)
		text(p, &o, &r, planner_names[kind]);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
