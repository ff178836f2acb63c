/* cmd_explain.c — `shardlab explain SCENARIO`: what a plan means on every
 * rank.
 *
 * For each op: its strategy, device matrix, the tensor maps and slice
 * shapes of its tensors, the slice each rank holds (seed 000's figure
 * (c)), the op's own forward communication and its gradient
 * synchronisation; then every redistribution step between ops, with its
 * rank groups and bytes per device. Configured ops keep their shard()
 * strategy, the others are data parallel. --json prints the same. The
 * writers are report.c's, shared with `plan` and `advise`.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "planner.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab explain SCENARIO [--fused] [--ranks N] [--json | --csv]\n"
	        "\n"
	        "Explain the plan of a scenario: every op with its strategy, device\n"
	        "matrix, tensor maps (MindSpore's convention: device-matrix dimensions\n"
	        "counted from the right, -1 for not split) and slice shapes; which slice\n"
	        "of each tensor every rank holds; the op's own forward communication and\n"
	        "the all-reduce of its parameters' gradients; then every redistribution\n"
	        "between a producer's layout and its consumer's, step by step, with the\n"
	        "rank groups and the bytes each device sends. Ops the scenario configures\n"
	        "keep their shard() strategy; the others are data parallel, MindSpore's\n"
	        "default.\n"
	        "\n"
	        "options:\n"
	        "  --fused     complete partial sums with a ReduceScatter where the\n"
	        "              consumer wants the result split (default: MindSpore-\n"
	        "              compatible, AllReduce then StridedSlice); every edge\n"
	        "              reports what fusing saves either way\n"
	        "  --ranks N   show the slices of the first N ranks (default 16; 0: none)\n"
	        "  --json      print JSON: {\"scenario\", \"devices\", \"mode\", \"ops\": [{\"name\",\n"
	        "              \"kind\", \"source\", \"from\", \"strategy\", \"device_matrix\",\n"
	        "              \"tensors\", \"comm\", \"grad\", \"flops_per_rank\",\n"
	        "              \"bytes_per_rank\", \"slices\"}], \"redistributions\": [{\"tensor\",\n"
	        "              \"from\", \"to\", \"input\", \"steps\", \"bytes_per_device\",\n"
	        "              \"fused_saving_bytes\", \"ring\" (a context-parallel ring's\n"
	        "              ranks, only there), \"hidden_by\" (the GEMMs that run\n"
	        "              under it with training.tp_comm_overlap, only there)}],\n"
	        "              \"totals\"}; each comm/step has\n"
	        "              \"kind\", \"groups\" (lists of ranks) and \"bytes_per_device\"\n"
	        "              (docs/planner.md)\n"
	        "  --csv       print one CSV row per op and tensor: op_index, op, kind,\n"
	        "              device_matrix, tensor, role (\"input 0\", \"output 0\"),\n"
	        "              shape, tensor_map, slice_shape, slice_bytes\n"
	        "  -h, --help  this help\n"
	        "\n"
	        "Bytes per device follow the ring algorithms: AllGather (s-1)·L,\n"
	        "ReduceScatter and AllToAll (s-1)/s·L, AllReduce 2(s-1)/s·L, for a group of\n"
	        "s ranks each holding L bytes before the step.\n"
	        "\n"
	        "exit status: 0 success, 1 invalid scenario or strategy (diagnostics on\n"
	        "stderr), 2 usage error.\n");
}

struct args {
	const char *file;
	bool fused, json, csv;
	int64_t ranks;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.ranks = 16};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--fused")) {
			a->fused = true;
		} else if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!strcmp(argv[i], "--csv")) {
			a->csv = true;
		} else if (!strcmp(argv[i], "--ranks") && i + 1 < argc) {
			if (cli_parse_count("explain", "--ranks", argv[++i], INT64_MAX, &a->ranks) !=
			    EXIT_OK)
				return EXIT_USAGE;
		} else if (cli_scenario_word("explain", argv[i], &a->file) != EXIT_OK) {
			return EXIT_USAGE;
		}
	}
	return cli_scenario_named("explain", a->file);
}

int cmd_explain(int argc, char **argv)
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
	struct scenario *s = ar ? scenario_load(ar, a.file, &d) : NULL;
	if (s && !cli_default_calibration(ar, s->topo, s->training.framework, &d))
		s = NULL;
	struct plan *p = s ? plan_configured(ar, s, a.fused ? REDIST_FUSED : REDIST_COMPAT, &d)
	                   : NULL;
	cli_print_diags(&d);
	struct report_options o = {.command = "explain", .detail = true, .ranks = a.ranks};
	rc = p ? EXIT_OK : EXIT_INVALID;
	if (p && a.json)
		rc = report_print_json(report_json(p, &o), "explain");
	else if (p && a.csv)
		report_csv_tensors(p);
	else if (p)
		report_text(p, &o);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
