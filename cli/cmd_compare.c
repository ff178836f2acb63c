/* cmd_compare.c — `shardlab compare SCENARIO`, the main job: every planner
 * the scenario asks for (by default propagation from the user's shard
 * entries, the double-recursive search in both cost modes, data parallel
 * and Megatron), each estimated in closed form and simulated on SimGrid;
 * one table, whether the estimate and the simulation rank the plans the
 * same (Kendall's tau), and what caused the largest disagreement. A planner
 * that fails is a row saying why. The simulations dominate the time.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#define MIB 1048576.0

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab compare SCENARIO [--fidelity step|coarse] [--collective-algo A]\n"
	        "                                 [--bucket-mb N] [--fused] [--json]\n"
	        "\n"
	        "Plan a scenario with each planner it asks for, estimate each plan in\n"
	        "closed form (shardlab estimate) and simulate it on SimGrid (shardlab\n"
	        "simulate), and print one table (docs/simulation.md, \"compare\"):\n"
	        "\n"
	        "  planner        the planner (recursive: with its cost mode)\n"
	        "  strategy       the pattern covering most FLOPs: \"TP t x DP d\" (t the\n"
	        "                 slices of an op's largest parameter, d the rest of its\n"
	        "                 split), \"x R copies\" when R ranks compute the same\n"
	        "                 slice, and the share of FLOPs when other ops differ\n"
	        "  estimated      the symbolic iteration time\n"
	        "  simulated      the simulated iteration time\n"
	        "  diff           simulated against estimated, in %%\n"
	        "  comm/device    bytes each device sends in one iteration\n"
	        "  memory/device  peak memory per device (estimate); OOM over the HBM\n"
	        "\n"
	        "then whether the estimate and the simulation rank the plans the same\n"
	        "(Kendall's tau-b over the simulated rows), and for the row whose\n"
	        "difference is largest, the collectives that took longer than their\n"
	        "formula and the busiest links. A planner that cannot plan the scenario\n"
	        "is a row saying why.\n"
	        "\n"
	        "Planners: those of the scenario's \"planners\"; when it lists nothing or\n"
	        "only propagate: propagate (from the scenario's shard entries),\n"
	        "recursive with topology and with mindspore costs, data-parallel and\n"
	        "megatron. recursive always runs in both cost modes.\n"
	        "\n"
	        "options:\n"
	        "  --fidelity F          step or coarse (default: the scenario's)\n"
	        "  --collective-algo A   auto, ring, tree, halving-doubling, hierarchical\n"
	        "                        or direct (default: the scenario's)\n"
	        "  --bucket-mb N         gradient buckets of N MiB (default 25)\n"
	        "  --fused               complete partial sums with a ReduceScatter where\n"
	        "                        the consumer wants the result split\n"
	        "  --json                print JSON: \"scenario\", \"model\", \"topology\",\n"
	        "                        \"devices\", \"fidelity\", \"collective_algo\",\n"
	        "                        \"bucket_bytes\", \"hbm_bytes\", \"rows\" ([{\"planner\",\n"
	        "                        \"strategy\", \"estimate_s\", \"simulated_s\",\n"
	        "                        \"difference_pct\", \"comm_bytes_per_device\",\n"
	        "                        \"memory_bytes_per_device\", \"oom\",\n"
	        "                        \"oom_overflow_bytes\"} or {\"planner\",\n"
	        "                        \"error\"}; \"simulation_error\" when only the\n"
	        "                        simulation failed]), \"ranked\", \"kendall_tau\",\n"
	        "                        \"same_ranking\", \"largest_disagreement\"\n"
	        "                        ({\"planner\", \"difference_pct\", \"collectives\",\n"
	        "                        \"links\"})\n"
	        "  -h, --help            this help\n"
	        "\n"
	        "A progress line is shown on stderr while it simulates, when stderr is a\n"
	        "terminal.\n"
	        "\n"
	        "exit status: 0 success (some planners may have failed: see their rows),\n"
	        "1 invalid scenario or no planner could plan it (diagnostics on stderr),\n"
	        "2 usage error.\n");
}

struct args {
	const char *file;
	bool fused, json;
	int fidelity, algo;            /* -1: the scenario's */
	double bucket_bytes;
};

static int parse_value(const char *o, const char *v, struct args *a)
{
	int k = -1;
	if (!strcmp(o, "--fidelity")) {
		k = cli_parse_name("compare", o, v, fidelity_names, FIDELITY_COUNT);
		a->fidelity = k;
	} else if (!strcmp(o, "--collective-algo")) {
		k = cli_parse_name("compare", o, v, collective_algo_names, COLL_COUNT);
		a->algo = k;
	} else if (!strcmp(o, "--bucket-mb")) {
		char *end;
		double mb = strtod(v, &end);
		if (*v == '\0' || *end != '\0' || !(mb > 0) || mb > 1e6)
			fprintf(stderr, "shardlab compare: --bucket-mb takes a size in MiB > 0, got '%s'\n",
			        v);
		else
			k = 0;
		a->bucket_bytes = mb * MIB;
	} else {
		fprintf(stderr, "shardlab compare: unknown option '%s' (see --help)\n", o);
	}
	return k >= 0 ? EXIT_OK : EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.fidelity = -1, .algo = -1, .bucket_bytes = 25 * MIB};
	int rc = EXIT_OK;
	for (int i = 1; i < argc && rc == EXIT_OK; i++) {
		if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!strcmp(argv[i], "--fused")) {
			a->fused = true;
		} else if (argv[i][0] == '-' && i + 1 < argc) {
			rc = parse_value(argv[i], argv[i + 1], a);
			i++;
		} else {
			rc = cli_scenario_word("compare", argv[i], &a->file);
		}
	}
	return rc == EXIT_OK ? cli_scenario_named("compare", a->file) : rc;
}

/* ------------------------------------------------------------ the rows */

struct entry {
	enum planner_kind kind;
	enum rec_cost rec_cost;
};

/* The planners to run, in table order; returns how many. */
static int entries(const struct scenario *s, struct entry *out)
{
	static const enum planner_kind defaults[] = {PLANNER_PROPAGATE, PLANNER_RECURSIVE,
	                                             PLANNER_DATA_PARALLEL, PLANNER_MEGATRON};
	const enum planner_kind *list = s->planners;
	int n_list = s->n_planners;
	if (n_list == 0 || (n_list == 1 && list[0] == PLANNER_PROPAGATE)) {
		list = defaults;
		n_list = (int)SL_COUNTOF(defaults);
	}
	int n = 0;
	for (int i = 0; i < n_list; i++) {
		out[n++] = (struct entry){list[i], REC_COST_TOPOLOGY};
		if (list[i] == PLANNER_RECURSIVE)
			out[n++] = (struct entry){list[i], REC_COST_MINDSPORE};
	}
	return n;
}

static const char *entry_name(struct arena *ar, const struct entry *e)
{
	if (e->kind != PLANNER_RECURSIVE)
		return planner_names[e->kind];
	return arena_printf(ar, "%s (%s)", planner_names[e->kind], rec_cost_names[e->rec_cost]);
}

/* The first error of a list, for a row ("the simulator is not built yet"). */
static const char *first_error(struct arena *ar, const struct diag_list *d)
{
	for (size_t i = 0; i < d->count; i++)
		if (d->items[i].severity == DIAG_ERROR) {
			char *s = diag_format(&d->items[i]);
			const char *copy = s ? arena_strdup(ar, s) : NULL;
			free(s);
			return copy ? copy : "out of memory";
		}
	return d->oom ? "out of memory" : "failed without a diagnostic";
}

static void fill_row(struct arena *ar, const struct plan *p, struct cli_sim_outcome *r,
                     const struct diag_list *d, struct compare_row *row)
{
	report_strategy_summary(row->strategy, sizeof row->strategy, p);
	row->estimated_s = r->est.iteration_s;
	row->memory_bytes = r->est.memory_bytes_per_device;
	row->est = &r->est;
	if (!r->simulated) {
		row->sim_error = first_error(ar, d);
		return;
	}
	row->simulated_s = r->sim.iteration_s;
	row->comm_bytes = report_program_comm_bytes(&r->prog);
	row->prog = &r->prog;
	row->sim = &r->sim;
}

static void run_row(struct arena *ar, const struct scenario *s, const struct entry *e,
                    const struct args *a, struct compare_row *row)
{
	*row = (struct compare_row){.planner = entry_name(ar, e), .hbm_bytes = s->topo->device.hbm_bytes};
	struct diag_list d;
	diag_list_init(&d);
	struct plan_options po = {.mode = a->fused ? REDIST_FUSED : REDIST_COMPAT,
	                          .rec_cost = e->rec_cost};
	struct plan *p = cli_planner_available(e->kind) ? plan_make(ar, s, e->kind, &po, &d) : NULL;
	struct cli_sim_outcome *r = p ? arena_calloc(ar, 1, sizeof *r) : NULL;
	struct cli_sim_setup o = {
		.fidelity = a->fidelity >= 0 ? (enum sim_fidelity)a->fidelity : s->sim.fidelity,
		.algo = a->algo >= 0 ? (enum collective_algo)a->algo : s->sim.collective_algo,
		.bucket_bytes = a->bucket_bytes,
		.label = row->planner,
	};
	if (!cli_planner_available(e->kind))
		row->error = "not available in this version";
	else if (r)
		cli_simulate_plan(ar, p, &o, r, &d);
	if (!row->error && (!r || !r->estimated))
		row->error = first_error(ar, &d);
	else if (!row->error)
		fill_row(ar, p, r, &d, row);
	diag_list_free(&d);
}

/* ---------------------------------------------------------------- print */

static void text(const struct scenario *s, const struct args *a, const struct compare_row *rows,
                 int n)
{
	char b[32];
	printf("compare %s: model %s on %" PRId64 " devices of %s\n", s->name, s->graph->name,
	       s->devices, s->topo->name);
	printf("fidelity %s, collectives %s, gradient buckets %g MiB, %s redistribution\n\n",
	       fidelity_names[a->fidelity >= 0 ? a->fidelity : (int)s->sim.fidelity],
	       collective_algo_names[a->algo >= 0 ? a->algo : (int)s->sim.collective_algo],
	       a->bucket_bytes / MIB, a->fused ? "fused" : "MindSpore-compatible");
	report_compare_table(stdout, rows, n);
	printf("\n  diff: simulated against estimated; comm: bytes each device sends per "
	       "iteration;\n  memory: peak per device (OOM over the %s HBM)\n\n",
	       cli_si(b, sizeof b, s->topo->device.hbm_bytes, "B"));
	report_compare_ranking(stdout, rows, n);
	int w = report_compare_worst(rows, n);
	if (w >= 0) {
		printf("\n");
		report_compare_explain(stdout, &rows[w]);
	}
}

static cJSON *json(const struct scenario *s, const struct args *a, const struct compare_row *rows,
                   int n)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "scenario", s->name);
	cJSON_AddStringToObject(root, "model", s->graph->name);
	cJSON_AddStringToObject(root, "topology", s->topo->name);
	cJSON_AddNumberToObject(root, "devices", (double)s->devices);
	cJSON_AddStringToObject(root, "fidelity",
	                        fidelity_names[a->fidelity >= 0 ? a->fidelity : (int)s->sim.fidelity]);
	cJSON_AddStringToObject(
		root, "collective_algo",
		collective_algo_names[a->algo >= 0 ? a->algo : (int)s->sim.collective_algo]);
	cJSON_AddNumberToObject(root, "bucket_bytes", a->bucket_bytes);
	cJSON_AddNumberToObject(root, "hbm_bytes", s->topo->device.hbm_bytes);
	report_compare_json(root, rows, n);
	return root;
}

int cmd_compare(int argc, char **argv)
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
	cli_print_diags(&d);
	diag_list_free(&d);
	if (!s) {
		arena_free(ar);
		return EXIT_INVALID;
	}
	struct entry list[2 * PLANNER_COUNT];
	int n = entries(s, list), planned = 0;
	struct compare_row rows[2 * PLANNER_COUNT];
	for (int i = 0; i < n; i++) {
		run_row(ar, s, &list[i], &a, &rows[i]);
		planned += rows[i].error == NULL;
	}
	if (a.json)
		rc = report_print_json(json(s, &a, rows, n), "compare");
	else
		text(s, &a, rows, n);
	if (planned == 0) {
		fprintf(stderr, "shardlab compare: no planner could plan %s\n", a.file);
		rc = EXIT_INVALID;
	}
	arena_free(ar);
	return rc;
}
