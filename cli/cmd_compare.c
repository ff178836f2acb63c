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
	        "usage: shardlab compare SCENARIO [--planner NAME [--top K]] [--fidelity F]\n"
	        "                                 [--collective-algo A] [--bucket-mb N] [--fused]\n"
	        "                                 [--json | --csv]\n"
	        "                                 [--devices N] [--topology FILE] [--global-batch B]\n"
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
	        "  90%% interval   with a calibration that has a training fit (--calibration):\n"
	        "                 its interval around the simulated time (the estimate's\n"
	        "                 where not simulated); a line under the table names each\n"
	        "                 plan whose settings lie outside the runs it was fitted on\n"
	        "  diff           simulated against estimated, in %%\n"
	        "  comm/device    bytes each device sends in one iteration\n"
	        "  bubble est/sim pipelined plans: the estimate's bubble and the simulated\n"
	        "                 one (the stage that waits least: its ranks' wait for a\n"
	        "                 neighbour to send, and time done before the end), as\n"
	        "                 shares of the iteration\n"
	        "  memory/device  peak memory per device (estimate); OOM over the HBM;\n"
	        "                 with training.optimizer_offload, \"host memory does not\n"
	        "                 fit\" when the state offloaded to a server's host is over\n"
	        "                 its server.host.memory_GB\n"
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
	        "\n");
	fprintf(f,
	        "options:\n%s"
	        "  --planner NAME        that planner alone (recursive: in both cost\n"
	        "                        modes). megatron-search: the plan search\n"
	        "                        (docs/planner.md, \"Plan search\"): how many\n"
	        "                        configurations it tried, fit, are over the\n"
	        "                        device's HBM, are over a server's host memory\n"
	        "                        (the optimizer offload; counted apart) or\n"
	        "                        failed; the best max(10, K) by the estimate\n"
	        "                        (TP, PP, DP, micro-batch, schedule, recompute,\n"
	        "                        ZeRO, estimated time, samples/s, bubble,\n"
	        "                        memory); then the best K simulated as rows\n"
	        "                        \"search #1\" .. and both rankings (JSON: a\n"
	        "                        \"search\" object with \"configurations\",\n"
	        "                        \"fit\", \"oom\" (either memory), \"oom_hbm\",\n"
	        "                        \"oom_host\", \"failed\", \"first_failure\",\n"
	        "                        \"refused\" (by rule), \"candidates\"); what\n"
	        "                        Megatron-LM would refuse (docs/studies.md,\n"
	        "                        \"Runnable configurations\") is left out and\n"
	        "                        counted by rule, the scenario's embedding and\n"
	        "                        loss accounting and activation offload held\n"
	        "                        for every configuration (offload: PP 1, no\n"
	        "                        recomputation)\n"
	        "  --top K               megatron-search: simulate the best K, 1 to 1000\n"
	        "                        (default 3)\n"
	        "  --fidelity F          coarse, phase, step or representative, as for\n"
	        "                        shardlab simulate\n"
	        "                        (default: the scenario's)\n"
	        "  --collective-algo A   auto, ring, tree, halving-doubling, hierarchical,\n"
	        "                        direct, nvls or pipeline (default: the\n"
	        "                        scenario's)\n"
	        "  --bucket-mb N         gradient buckets of N MiB (default: the scenario's\n"
	        "                        training.gradient_bucket_mb, itself 25)\n"
	        "  --max-events N        refuse a simulation of more than N steps x ranks\n"
	        "                        (default 1e10), as shardlab simulate\n"
	        "  --fused               complete partial sums with a ReduceScatter where\n"
	        "                        the consumer wants the result split\n",
	        cli_override_help);
	fputs("  --json                print JSON: \"scenario\", \"model\", \"topology\",\n"
	        "                        \"devices\", \"fidelity\", \"collective_algo\",\n"
	        "                        \"bucket_bytes\", \"hbm_bytes\", \"rows\" ([{\"planner\",\n"
	        "                        \"strategy\", \"estimate_s\", \"simulated_s\",\n"
	        "                        \"difference_pct\", \"comm_bytes_per_device\",\n"
	        "                        \"memory_bytes_per_device\", \"oom\",\n"
	        "                        \"oom_overflow_bytes\", with the offload's host\n"
	        "                        \"host_oom\", \"host_overflow_bytes\", \"interval\"\n"
	        "                        (as estimate's, \"outside_fitted_runs\" in it)} or\n"
	        "                        {\"planner\",\n"
	        "                        \"error\"}; \"simulation_error\" when only the\n"
	        "                        simulation failed]), \"ranked\", \"kendall_tau\",\n"
	        "                        \"same_ranking\", \"largest_disagreement\"\n"
	        "                        ({\"planner\", \"difference_pct\", \"collectives\",\n"
	        "                        \"links\"})\n"
	        "  --csv                 print the rows as CSV: planner, strategy,\n"
	        "                        estimated_s, simulated_s, difference_pct,\n"
	        "                        comm_bytes_per_device, bubble_estimated_pct,\n"
	        "                        bubble_simulated_pct, memory_bytes_per_device,\n"
	        "                        hbm_bytes, oom, error, host_oom (empty where a\n"
	        "                        row has no figure, offloads nothing or the host\n"
	        "                        is not checked);\n"
	        "                        with --planner megatron-search every\n"
	        "                        configuration estimated: rank, tp, pp, dp,\n"
	        "                        micro_batch, micro_batches, schedule,\n"
	        "                        virtual_stages, recompute, zero_stage,\n"
	        "                        estimated_s, simulated_s (the best K),\n"
	        "                        samples_per_s, bubble_pct, memory_bytes_per_device,\n"
	        "                        oom, host_oom, stage_layers (\"6/2\" where the\n"
	        "                        split is not even)\n"
	        "  -h, --help            this help\n"
	        "\n"
	        "Before a long simulation (an expected 10 s or more, or 4,096 ranks or\n"
	        "more) one line on stderr says its size and expected cost. A progress\n"
	        "line is shown on stderr while it searches and simulates, when stderr is\n"
	        "a terminal.\n"
	        "\n"
	        "exit status: 0 success (some planners may have failed: see their rows),\n"
	        "1 invalid scenario or no planner could plan it (diagnostics on stderr),\n"
	        "2 usage error.\n",
	        f);
}

struct args {
	const char *file;
	bool fused, json, csv;
	int fidelity, algo;            /* -1: the scenario's */
	int planner;                   /* -1: the scenario's planners */
	int64_t top;                   /* megatron-search: configurations simulated */
	double bucket_bytes;
	double max_events;              /* 0: CLI_MAX_EVENTS */
	struct cli_overrides ov;       /* --devices, --topology, --global-batch */
};

enum { SEARCH_LISTED = 10 };       /* megatron-search: configurations listed at least */

static int parse_value(const char *o, const char *v, struct args *a)
{
	int k = -1;
	if (!strcmp(o, "--fidelity")) {
		k = cli_parse_name("compare", o, v, fidelity_names, FIDELITY_COUNT);
		a->fidelity = k;
	} else if (!strcmp(o, "--planner")) {
		k = cli_parse_planner("compare", v);
		a->planner = k;
	} else if (!strcmp(o, "--top")) {
		int64_t t = 0;
		k = cli_parse_range("compare", o, v, 1, 1000, &t) == EXIT_OK ? 0 : -1;
		a->top = t;
	} else if (!strcmp(o, "--collective-algo")) {
		k = cli_parse_name("compare", o, v, collective_algo_names, COLL_COUNT);
		a->algo = k;
	} else if (!strcmp(o, "--max-events")) {
		k = cli_parse_max_events("compare", v, &a->max_events) == EXIT_OK ? 0 : -1;
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
	*a = (struct args){.fidelity = -1, .algo = -1, .planner = -1, .top = 3,
	                   .bucket_bytes = -1};
	int rc = EXIT_OK, taken;
	for (int i = 1; i < argc && rc == EXIT_OK; i++) {
		if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!strcmp(argv[i], "--csv")) {
			a->csv = true;
		} else if (!strcmp(argv[i], "--fused")) {
			a->fused = true;
		} else if ((taken = cli_override_option("compare", argc, argv, &i, &a->ov)) != 0) {
			rc = taken > 0 ? EXIT_OK : EXIT_USAGE;
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
static int entries(const struct scenario *s, const struct args *a, struct entry *out)
{
	static const enum planner_kind defaults[] = {PLANNER_PROPAGATE, PLANNER_RECURSIVE,
	                                             PLANNER_DATA_PARALLEL, PLANNER_MEGATRON};
	const enum planner_kind *list = s->planners;
	int n_list = s->n_planners;
	enum planner_kind named = (enum planner_kind)a->planner;
	if (a->planner >= 0) {
		list = &named;
		n_list = 1;
	} else if (n_list == 0 || (n_list == 1 && list[0] == PLANNER_PROPAGATE)) {
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

/* A server's host memory, when the optimizer offload puts state there
 * and the topology states it; 0: not checked. */
static double host_capacity(const struct scenario *s)
{
	return s->training.optimizer_offload || s->training.activation_offload_layers
	           ? s->topo->host.capacity_bytes : 0;
}

static void fill_row(struct arena *ar, const struct plan *p, struct cli_sim_outcome *r,
                     const struct diag_list *d, struct compare_row *row)
{
	report_strategy_summary(row->strategy, sizeof row->strategy, p);
	row->estimated_s = r->est.iteration_s;
	row->memory_bytes = r->est.memory_bytes_per_device;
	row->host_capacity_bytes = host_capacity(p->scenario);
	row->host_bytes = r->est.host_bytes_per_server;
	row->est = &r->est;
	struct cal_interval ie;
	cli_interval(p, &ie);
	cost_interval_at(&ie, r->simulated ? r->sim.iteration_s : r->est.iteration_s, &row->iv);
	if (!r->simulated) {
		row->sim_error = diag_first_error(ar, d);
		return;
	}
	row->simulated_s = r->sim.iteration_s;
	row->comm_bytes = report_program_comm_bytes(&r->prog);
	row->prog = &r->prog;
	row->sim = &r->sim;
}

static struct cli_sim_setup sim_setup(const struct scenario *s, const struct args *a,
                                      const char *label)
{
	return (struct cli_sim_setup){
		.fidelity = a->fidelity >= 0 ? (enum sim_fidelity)a->fidelity : s->sim.fidelity,
		.algo = a->algo >= 0 ? (enum collective_algo)a->algo : s->sim.collective_algo,
		.bucket_bytes = a->bucket_bytes >= 0 ? a->bucket_bytes : s->training.gradient_bucket_bytes,
		.max_events = a->max_events,
		.label = label,
		.announce = "compare",
	};
}

/* A plan (NULL when its planner failed: the diagnostics in d) estimated,
 * lowered and simulated into a row. */
static void simulate_row(struct arena *ar, const struct scenario *s, const struct args *a,
                         const struct plan *p, struct diag_list *d, struct compare_row *row)
{
	struct cli_sim_outcome *r = p ? arena_calloc(ar, 1, sizeof *r) : NULL;
	struct cli_sim_setup o = sim_setup(s, a, row->planner);
	if (r)
		cli_simulate_plan(ar, p, &o, r, d);
	if (!r || !r->estimated)
		row->error = diag_first_error(ar, d);
	else
		fill_row(ar, p, r, d, row);
}

static void run_row(struct arena *ar, const struct scenario *s, const struct entry *e,
                    const struct args *a, struct compare_row *row)
{
	*row = (struct compare_row){.planner = entry_name(ar, e), .hbm_bytes = s->topo->device.hbm_bytes};
	if (!cli_planner_available(e->kind)) {
		row->error = "not available in this version";
		return;
	}
	struct diag_list d;
	diag_list_init(&d);
	struct plan_options po = {.mode = a->fused ? REDIST_FUSED : REDIST_COMPAT,
	                          .rec_cost = e->rec_cost};
	struct cli_progress pr;
	cli_progress_attach(&pr, "searching plans", &po);
	struct plan *p = plan_make(ar, s, e->kind, &po, &d);
	cli_progress_clear(&pr);
	simulate_row(ar, s, a, p, &d, row);
	diag_list_free(&d);
}

/* ------------------------------------------------------ megatron-search */

/* The search, then its best a->top configurations simulated as rows
 * "search #1" ..; *n_rows of them (0 after diagnostics on stderr). */
static struct compare_row *search_rows(struct arena *ar, const struct scenario *s,
                                       const struct args *a, struct search_result *res,
                                       int *n_rows)
{
	struct diag_list d;
	diag_list_init(&d);
	struct plan_options po = {.mode = a->fused ? REDIST_FUSED : REDIST_COMPAT};
	struct cli_progress pr;
	cli_progress_attach(&pr, "searching plans", &po);
	bool ok = plan_search(ar, s, &po, res, &d);
	cli_progress_clear(&pr);
	cli_print_diags(&d);
	diag_list_free(&d);
	*n_rows = 0;
	if (!ok)
		return NULL;
	int n = (int)(res->n_fit < a->top ? res->n_fit : a->top);
	struct compare_row *rows = arena_calloc(ar, (size_t)n + 1, sizeof *rows);
	for (int i = 0; rows && i < n; i++) {
		rows[i] = (struct compare_row){.planner = arena_printf(ar, "search #%d", i + 1),
		                               .hbm_bytes = s->topo->device.hbm_bytes};
		diag_list_init(&d);
		struct plan *p = plan_search_plan(ar, s, &res->cands[i].config, &po, &d);
		simulate_row(ar, s, a, p, &d, &rows[i]);
		diag_list_free(&d);
	}
	*n_rows = rows ? n : 0;
	return rows;
}

static void search_text(const struct scenario *s, const struct args *a,
                        const struct search_result *r)
{
	char b[4][32], host[32];
	double cap = host_capacity(s);
	/* the device's and the host's out of memory counted apart (a
	 * configuration over both is in both) */
	cli_si(b[0], 32, s->topo->device.hbm_bytes, "B");
	cli_si(host, sizeof host, cap, "B");
	printf("megatron-search: %" PRId64 " configurations; %" PRId64 " fit in %s%s%s, %" PRId64
	       " over the %s HBM", r->n_configs, r->n_fit, b[0], cap > 0 ? " and a host's " : "",
	       cap > 0 ? host : "", r->n_oom_hbm, b[0]);
	if (cap > 0)
		printf(", %" PRId64 " over the %s of a server's host memory (the optimizer offload)",
		       r->n_oom_host, host);
	if (r->n_oom_hbm + r->n_oom_host > r->n_oom)
		printf(" (%" PRId64 " over both)", r->n_oom_hbm + r->n_oom_host - r->n_oom);
	printf(", %" PRId64 " could not be planned\n", r->n_failed);
	report_refused_text(stdout, r->refused);
	if (r->failure)
		printf("  the first that could not: %s\n", r->failure);
	int listed = (int)(a->top > SEARCH_LISTED ? a->top : SEARCH_LISTED);
	listed = r->n_fit < listed ? (int)r->n_fit : listed;
	if (listed == 0) {
		printf("  none fits; the closest:\n");
		listed = r->n > 3 ? 3 : r->n;
	}
	/* EP only for a mixture of experts, the one kind of model it applies to */
	bool moe = s->graph->gen && s->graph->gen->experts > 0;
	/* CP only when the scenario lets the search try it */
	bool cps = s->training.context_parallel > 1;
	printf("  %-4s  %-5s %-3s %s%-5s %-5s %s%-5s %-22s %-10s %-5s %-10s %-10s %-8s %s\n", "rank",
	       "TP", "SP", cps ? "CP    " : "", "PP", "DP", moe ? "EP    " : "", "mb", "schedule",
	       "recompute", "ZeRO", "estimated", "samples/s", "bubble", "memory/device");
	for (int i = 0; i < listed; i++) {
		const struct search_candidate *c = &r->cands[i];
		const struct search_config *k = &c->config;
		char sched[32], oom[48], hoom[64], bubble[16] = "-";
		if (k->pp > 1)
			snprintf(bubble, sizeof bubble, "%.1f%%", 100 * c->bubble_s / c->iteration_s);
		if (k->pp == 1)
			snprintf(sched, sizeof sched, "-");
		else if (k->virtual_stages > 1)
			snprintf(sched, sizeof sched, "%s (v %lld)", schedule_names[k->schedule],
			         (long long)k->virtual_stages);
		else
			snprintf(sched, sizeof sched, "%s", schedule_names[k->schedule]);
		char ep[24] = "", cp[24] = "";
		if (moe)
			snprintf(ep, sizeof ep, "%-5lld ", (long long)(k->ep > 1 ? k->ep : 1));
		if (cps)
			snprintf(cp, sizeof cp, "%-5lld ", (long long)(k->cp > 1 ? k->cp : 1));
		printf("  %-4d  %-5lld %-3s %s%-5lld %-5lld %s%-5lld %-22s %-10s %-5d %-10s %-10.1f "
		       "%-8s %s%s%s\n",
		       i + 1, (long long)k->tp, k->sequence_parallel ? "on" : "-", cp, (long long)k->pp,
		       (long long)k->dp, ep,
		       (long long)k->micro_batch, sched, recompute_names[k->recompute], k->zero_stage,
		       cli_si(b[1], 32, c->iteration_s, "s"),
		       (double)s->training.global_batch / c->iteration_s, bubble,
		       cli_si(b[3], 32, c->memory_bytes, "B"),
		       cli_oom_text(oom, sizeof oom, "  ", c->memory_bytes, s->topo->device.hbm_bytes),
		       cli_host_oom_text(hoom, sizeof hoom, "  ", c->host_bytes, cap));
	}
	printf("\n");
}

/* Every configuration the search estimated, the best K with their
 * simulated time. */
static void search_csv(const struct scenario *s, const struct search_result *r,
                       const struct compare_row *rows, int n_rows)
{
	static const char *const cols[] = {
		"rank", "tp", "sequence_parallel", "context_parallel", "pp", "dp", "expert_parallel",
		"micro_batch",
		"micro_batches", "schedule",
		"virtual_stages", "recompute", "zero_stage", "estimated_s", "simulated_s",
		"samples_per_s", "bubble_pct", "memory_bytes_per_device", "oom", "host_oom",
		"stage_layers", NULL};
	double cap = host_capacity(s);
	int64_t layers = s->graph->gen ? s->graph->gen->layers : 0;
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, cols);
	for (int i = 0; i < r->n; i++) {
		const struct search_candidate *k = &r->cands[i];
		const struct search_config *g = &k->config;
		cli_csv_int(&c, i + 1);
		cli_csv_int(&c, g->tp);
		cli_csv_str(&c, g->sequence_parallel ? "true" : "false");
		cli_csv_int(&c, g->cp > 1 ? g->cp : 1);
		cli_csv_int(&c, g->pp);
		cli_csv_int(&c, g->dp);
		cli_csv_int(&c, g->ep > 1 ? g->ep : 1);
		cli_csv_int(&c, g->micro_batch);
		cli_csv_int(&c, g->micro_batches);
		cli_csv_str(&c, g->pp > 1 ? schedule_names[g->schedule] : NULL);
		cli_csv_int(&c, g->virtual_stages);
		cli_csv_str(&c, recompute_names[g->recompute]);
		cli_csv_int(&c, g->zero_stage);
		cli_csv_num(&c, k->iteration_s);
		if (i < n_rows && !rows[i].error && !rows[i].sim_error)
			cli_csv_num(&c, rows[i].simulated_s);
		else
			cli_csv_str(&c, NULL);
		cli_csv_num(&c, k->iteration_s > 0 ? (double)s->training.global_batch / k->iteration_s : 0);
		if (g->pp > 1 && k->iteration_s > 0)
			cli_csv_num(&c, 100 * k->bubble_s / k->iteration_s);
		else
			cli_csv_str(&c, NULL);
		cli_csv_num(&c, k->memory_bytes);
		struct cost_verdict v;  /* OOM: the band over the memory (cost_memory_verdict) */
		cost_memory_verdict(k->memory_bytes, s->topo->device.hbm_bytes, &v);
		cli_csv_str(&c, v.fit == FIT_NO ? "true" : "false");
		cost_memory_verdict(k->host_bytes, cap, &v);  /* the host's, apart */
		cli_csv_str(&c, !cli_host_verdict(k->host_bytes, cap) ? NULL
		                : v.fit == FIT_NO ? "true" : "false");
		char sl[256];
		const char *t = cli_stage_layers_text(sl, sizeof sl, g, layers);
		cli_csv_str(&c, *t ? t : NULL);
		cli_csv_end(&c);
	}
}

/* Both rankings of the simulated rows, by their search ranks. */
static void search_rankings(FILE *f, const struct compare_row *rows, int n)
{
	int *order = malloc(((size_t)n + 1) * sizeof *order), m = 0;
	for (int i = 0; order && i < n; i++)
		if (!rows[i].error && !rows[i].sim_error)
			order[m++] = i;
	if (!order || m < 2) {
		free(order);
		return;
	}
	fprintf(f, "  by the estimate:   ");
	for (int i = 0; i < m; i++)
		fprintf(f, "%s#%d", i ? ", " : "", order[i] + 1);
	/* insertion sort by the simulated time, stable: ties keep the estimate's order */
	for (int i = 1; i < m; i++)
		for (int j = i; j > 0 && rows[order[j]].simulated_s < rows[order[j - 1]].simulated_s; j--) {
			int t = order[j];
			order[j] = order[j - 1];
			order[j - 1] = t;
		}
	fprintf(f, "\n  by the simulation: ");
	for (int i = 0; i < m; i++)
		fprintf(f, "%s#%d", i ? ", " : "", order[i] + 1);
	fprintf(f, "\n");
	free(order);
}

static cJSON *search_json(const struct scenario *s, const struct args *a,
                          const struct search_result *r)
{
	cJSON *j = report_json_search_counts(r);
	cJSON *list = cJSON_CreateArray();
	int listed = (int)(a->top > SEARCH_LISTED ? a->top : SEARCH_LISTED);
	listed = r->n < listed ? r->n : listed;
	for (int i = 0; i < listed; i++) {
		const struct search_candidate *c = &r->cands[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddNumberToObject(o, "rank", i + 1);
		cJSON_AddItemToObject(o, "config", report_json_search_config(&c->config));
		cJSON_AddNumberToObject(o, "estimate_s", c->iteration_s);
		cJSON_AddNumberToObject(o, "samples_per_s", (double)s->training.global_batch / c->iteration_s);
		cJSON_AddNumberToObject(o, "bubble_s", c->bubble_s);
		cJSON_AddNumberToObject(o, "memory_bytes_per_device", c->memory_bytes);
		report_json_oom(o, c->memory_bytes, s->topo->device.hbm_bytes);
		report_json_host_oom(o, c->host_bytes, host_capacity(s));
		cJSON_AddItemToArray(list, o);
	}
	cJSON_AddItemToObject(j, "candidates", list);
	return j;
}

/* ---------------------------------------------------------------- print */

static void text(const struct scenario *s, const struct args *a, const struct compare_row *rows,
                 int n, const struct search_result *search)
{
	char b[32];
	printf("compare %s: model %s on %" PRId64 " devices of %s\n", s->name, s->graph->name,
	       s->devices, s->topo->name);
	cli_note_uncalibrated(stdout, s->topo);
	printf("fidelity %s, collectives %s, gradient buckets %g MiB, %s redistribution\n",
	       fidelity_names[a->fidelity >= 0 ? a->fidelity : (int)s->sim.fidelity],
	       collective_algo_names[a->algo >= 0 ? a->algo : (int)s->sim.collective_algo],
	       (a->bucket_bytes >= 0 ? a->bucket_bytes : s->training.gradient_bucket_bytes) / MIB,
	       a->fused ? "fused" : "MindSpore-compatible");
	char cw[1024];
	printf("calibration %s\n\n", cli_calibration_words(cw, sizeof cw, s->topo,
	                                                    cost_graph_has_moe(s->graph)));
	if (search) {
		search_text(s, a, search);
		if (n == 0)
			return;
		printf("the best %d by the estimate, simulated\n", n);
	}
	report_compare_table(stdout, rows, n);
	report_compare_outside(stdout, rows, n);
	printf("\n  diff: simulated against estimated; comm: bytes each device sends per "
	       "iteration;\n  memory: peak per device (OOM over the %s HBM)",
	       cli_si(b, sizeof b, s->topo->device.hbm_bytes, "B"));
	if (host_capacity(s) > 0)
		printf(";\n  host memory: the optimizer state offloaded to a server's host, "
		       "checked apart against its %s", cli_si(b, sizeof b, host_capacity(s), "B"));
	if (report_compare_has_intervals(rows, n))
		printf(";\n  90%% interval: the calibration's, around the simulated time (the "
		       "estimate's where not simulated)");
	printf("\n\n");
	report_compare_ranking(stdout, rows, n);
	if (search)
		search_rankings(stdout, rows, n);
	int w = report_compare_worst(rows, n);
	if (w >= 0) {
		printf("\n");
		report_compare_explain(stdout, &rows[w]);
	}
}

static cJSON *json(const struct scenario *s, const struct args *a, const struct compare_row *rows,
                   int n, const struct search_result *search)
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
	cJSON_AddNumberToObject(root, "bucket_bytes",
	                        a->bucket_bytes >= 0 ? a->bucket_bytes : s->training.gradient_bucket_bytes);
	cJSON_AddNumberToObject(root, "hbm_bytes", s->topo->device.hbm_bytes);
	cJSON_AddItemToObject(root, "calibration", cli_calibration_json(s->topo));
	if (search)
		cJSON_AddItemToObject(root, "search", search_json(s, a, search));
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
	struct scenario *s = cli_load_scenario(ar, a.file, &a.ov, &d);
	cli_print_diags(&d);
	diag_list_free(&d);
	if (!s) {
		arena_free(ar);
		return EXIT_INVALID;
	}
	struct entry list[2 * PLANNER_COUNT];
	struct compare_row table[2 * PLANNER_COUNT], *rows = table;
	struct search_result search, *sr = NULL;
	int n = 0, planned = 0;
	if (a.planner == PLANNER_MEGATRON_SEARCH) {
		rows = search_rows(ar, s, &a, &search, &n);
		sr = rows ? &search : NULL;
	} else {
		n = entries(s, &a, list);
		for (int i = 0; i < n; i++)
			run_row(ar, s, &list[i], &a, &rows[i]);
	}
	for (int i = 0; i < n; i++)
		planned += rows[i].error == NULL;
	bool searched = a.planner == PLANNER_MEGATRON_SEARCH;
	if ((sr || !searched) && a.json)
		rc = report_print_json(json(s, &a, rows, n, sr), "compare");
	else if (sr && a.csv)
		search_csv(s, sr, rows, n);
	else if (!searched && a.csv)
		report_compare_csv(stdout, rows, n);
	else if (sr || !searched)
		text(s, &a, rows, n, sr);
	if (planned == 0) {
		fprintf(stderr, "shardlab compare: no %s could plan %s\n",
		        sr ? "configuration of the search fitting the memory" : "planner", a.file);
		rc = EXIT_INVALID;
	}
	arena_free(ar);
	return rc;
}
