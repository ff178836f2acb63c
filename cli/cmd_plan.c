/* cmd_plan.c — `shardlab plan SCENARIO`: what a planner chose for every op.
 *
 * Runs a planner (sharding propagation, the only one so far) on a
 * scenario and prints one line per op (strategy in MindSpore's tuple
 * form, whether it was configured, propagated and from which op, or
 * defaulted because propagation never reached it, and the op's forward
 * communication), then every redistribution with its steps and bytes per
 * device, and the totals. The writers are report.c's, shared with
 * `explain`. Linear in ops and edges.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab plan SCENARIO [--planner NAME] [--rec-cost MODE]\n"
	        "                              [--rec-order ORDER] [--fused] [--json | --csv]\n"
	        "                              [--export FORMAT FILE]\n"
	        "                              [--devices N] [--topology FILE] [--global-batch B]\n"
	        "\n"
	        "Plan a scenario and print every op's strategy (slices per dimension of\n"
	        "each input, MindSpore's tuple form), where it came from (configured in\n"
	        "the scenario's \"shard\", propagated from a neighbouring op, or the data-\n"
	        "parallel default of an op propagation never reached), the op's forward\n"
	        "communication (kind, rank groups, bytes per device), then every\n"
	        "redistribution between a producer and its consumer step by step, the\n"
	        "totals per device, the count of unreached ops, and the estimate's\n"
	        "peak memory per device: \"fits (71 of 80 GB)\", \"tight (...)\"; with\n"
	        "an offload (training.optimizer_offload, activation_offload_layers) and\n"
	        "the topology's server.host.memory_GB, a server's host memory's too.\n"
	        "\n"
	        "options:\n%s"
	        "  --planner NAME  propagate: MindSpore's sharding propagation from the\n"
	        "                  configured ops; recursive: MindSpore's double-recursive\n"
	        "                  search; data-parallel: every op data parallel;\n"
	        "                  megatron: tensor parallel inside a server, data\n"
	        "                  parallel across; megatron-search: every (TP, PP,\n"
	        "                  DP, micro-batch, schedule, recompute, ZeRO) the\n"
	        "                  devices and global batch allow, planned by the\n"
	        "                  megatron rule, and the fastest by the estimate that\n"
	        "                  fits the memory (shardlab compare --planner\n"
	        "                  megatron-search ranks and simulates them; a\n"
	        "                  progress line on stderr when it is a terminal)\n"
	        "                  (docs/planner.md). Default: the\n"
	        "                  scenario's first planner when it is available, else\n"
	        "                  propagate\n"
	        "  --rec-cost MODE the recursive planner's costs: topology (seconds from\n"
	        "                  bytes, FLOPs and the topology's tiers; default) or\n"
	        "                  mindspore (the reference's dimensionless constants)\n"
	        "  --rec-order O   the order in which the recursive search visits ops\n"
	        "                  within a level: reverse-topological (default) or\n"
	        "                  weight (descending cost weight: the least cost of\n"
	        "                  a valid cut, heaviest first)\n"
	        "  --fused         complete partial sums with a ReduceScatter where the\n"
	        "                  consumer wants the result split (default: MindSpore-\n"
	        "                  compatible, AllReduce then StridedSlice)\n"
	        "  --json          print JSON: explain's fields (without \"slices\") plus\n"
	        "                  \"memory_bytes_per_device\", \"hbm_bytes\", estimate's\n"
	        "                  \"memory_verdict\" and band, with an offload\n"
	        "                  \"host_memory_bytes_per_server\" and, where the host's\n"
	        "                  memory is stated, \"host_oom\", \"host_overflow_bytes\",\n"
	        "                  \"planner\", ops[].\"from\" (the op a propagated strategy\n"
	        "                  came from, else null), ops[].\"choice\" ({\"n_candidates\",\n"
	        "                  \"n_tied\", \"edge_bytes\", \"param_conflict\"}, null for\n"
	        "                  configured ops) and \"unreached\" (op names)\n",
	        cli_override_help);
	fprintf(f,
	        "  --csv           print one CSV row per op: index, name, kind, strategy,\n"
	        "                  source, from, forward_communication,\n"
	        "                  forward_comm_bytes_per_device,\n"
	        "                  redistribution_in_bytes_per_device,\n"
	        "                  gradient_bytes_per_device\n"
	        "  --export FORMAT FILE\n"
	        "                  write the plan for a training framework into FILE\n"
	        "                  ('-': stdout, instead of the plan's report):\n"
	        "                  mindspore: the operator strategy JSON of MindSpore's\n"
	        "                  set_op_strategy_config (\"current_stage\",\n"
	        "                  \"parallel_strategy_item\": per op its \"stage\" and\n"
	        "                  \"parallel_strategy\"), keyed by shardlab's op names; a\n"
	        "                  scenario reads it back with \"mindspore_strategy\".\n"
	        "                  megatron: Megatron-LM's launch arguments of a\n"
	        "                  megatron or megatron-search plan (parallel sizes,\n"
	        "                  virtual pipeline, sequence parallelism, recompute,\n"
	        "                  distributed optimizer, batch sizes, model shape)\n"
	        "                  (docs/formats.md)\n"
	        "  -h, --help      this help\n"
	        "\n"
	        "exit status: 0 success, 1 invalid scenario or strategy (diagnostics on\n"
	        "stderr), 2 usage error (including a planner that is unknown or not\n"
	        "available yet).\n");
}

struct args {
	const char *file;
	bool json, csv;
	int export_format;                 /* -1: none */
	const char *export_file;
	struct cli_plan_args plan;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.export_format = -1};
	int rc = EXIT_OK;
	for (int i = 1; i < argc && rc == EXIT_OK; i++) {
		int taken = cli_plan_option("plan", argc, argv, &i, &a->plan);
		if (taken)
			rc = taken < 0 ? EXIT_USAGE : EXIT_OK;
		else if (!strcmp(argv[i], "--json"))
			a->json = true;
		else if (!strcmp(argv[i], "--csv"))
			a->csv = true;
		else if (!strcmp(argv[i], "--export")) {
			if (i + 2 >= argc) {
				fprintf(stderr, "shardlab plan: --export takes a format (mindspore or "
				                "megatron) and a file ('-' for stdout)\n");
				return EXIT_USAGE;
			}
			a->export_format = cli_parse_name("plan", "--export", argv[i + 1],
			                                  export_format_names, EXPORT_COUNT);
			if (a->export_format < 0)
				return EXIT_USAGE;
			a->export_file = argv[i + 2];
			i += 2;
		}
		else
			rc = cli_scenario_word("plan", argv[i], &a->file);
	}
	return rc == EXIT_OK ? cli_scenario_named("plan", a->file) : rc;
}

/* --export: the plan in a framework's format into the file (or stdout). */
static int export_plan(struct arena *ar, const struct plan *p, enum planner_kind kind,
                       const struct args *a, struct diag_list *d)
{
	char err[512];
	char *text = report_export_text(ar, p, kind, (enum export_format)a->export_format, d, err,
	                                sizeof err);
	if (!text) {
		cli_print_diags(d);
		fprintf(stderr, "shardlab plan: --export %s: %s\n", export_format_names[a->export_format],
		        err);
		return EXIT_INVALID;
	}
	int rc = EXIT_OK;
	if (!strcmp(a->export_file, "-")) {
		fputs(text, stdout);
	} else if (!report_write_file(a->export_file, text, err, sizeof err)) {
		fprintf(stderr, "shardlab plan: %s\n", err);
		rc = EXIT_INVALID;
	}
	free(text);
	return rc;
}

/* The plan's peak memory per device by the estimate, and its verdict;
 * false (nothing to say) when the plan cannot be estimated: its report
 * stands without it. *host, *host_cap: a server's offloaded state and
 * host memory (estimate's host_bytes_per_server, host_capacity_bytes). */
static bool plan_memory(struct arena *ar, const struct plan *p, double *peak, double *hbm,
                        double *host, double *host_cap)
{
	struct diag_list d;
	diag_list_init(&d);
	struct estimate e;
	bool ok = plan_estimate(ar, p, &e, &d);
	diag_list_free(&d);
	*peak = ok ? e.memory_bytes_per_device : 0;
	*hbm = ok ? e.hbm_bytes : 0;
	*host = ok ? e.host_bytes_per_server : 0;
	*host_cap = ok ? e.host_capacity_bytes : 0;
	return ok;
}

/* The report, then its memory line: "memory per device: fits (71 of 80 GB)". */
static void plan_memory_text(struct arena *ar, const struct plan *p, const struct report_options *o)
{
	report_text(p, o);
	double peak, hbm, host, cap;
	char v[96];
	if (!plan_memory(ar, p, &peak, &hbm, &host, &cap))
		return;
	printf("\nmemory per device (estimate): %s\n", cli_verdict_text(v, sizeof v, peak, hbm));
	if (host > 0 && cap > 0)  /* training.optimizer_offload, activation_offload_layers */
		printf("host memory per server (estimate): %s\n",
		       cli_verdict_text(v, sizeof v, host, cap));
}

/* The JSON report with "memory_bytes_per_device", "hbm_bytes" and the
 * verdict (cli_json_verdict) when the plan can be estimated. */
static cJSON *plan_memory_json(struct arena *ar, const struct plan *p, cJSON *root)
{
	double peak, hbm, host, cap;
	if (root && plan_memory(ar, p, &peak, &hbm, &host, &cap)) {
		cJSON_AddNumberToObject(root, "memory_bytes_per_device", peak);
		cJSON_AddNumberToObject(root, "hbm_bytes", hbm);
		cli_json_verdict(root, peak, hbm);
		if (host > 0) {
			cJSON_AddNumberToObject(root, "host_memory_bytes_per_server", host);
			report_json_host_oom(root, host, cap);
		}
	}
	return root;
}

int cmd_plan(int argc, char **argv)
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
	cli_print_diags(&d);
	struct report_options o = {.command = "plan", .planner = planner_names[kind]};
	rc = p ? EXIT_OK : EXIT_INVALID;
	bool to_stdout = a.export_format >= 0 && !strcmp(a.export_file, "-");
	if (p && a.export_format >= 0)
		rc = export_plan(ar, p, kind, &a, &d);
	if (!p || to_stdout || rc != EXIT_OK)
		;
	else if (a.json)
		rc = report_print_json(plan_memory_json(ar, p, report_json(p, &o)), "plan");
	else if (a.csv)
		report_csv(p);
	else
		plan_memory_text(ar, p, &o);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
