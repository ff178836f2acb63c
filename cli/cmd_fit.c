/* cmd_fit.c — `shardlab fit STUDY --db FILE`: the capacity question
 * answered from a sweep's rows: per cluster family the smallest cluster
 * (and its configuration) that meets the goal; the fastest, cheapest and
 * least-energy choices; the Pareto front of time to train against cost.
 * Text, JSON or CSV. Linear in rows (the front sorts once).
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"
#include "studies.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab fit STUDY --db FILE [--json | --csv] [--pick WHICH]\n"
	        "                    [--percentile P] [--fault NAME]\n"
	        "                    [--emit-scenario FILE] [--emit-megatron FILE]\n"
	        "                    [--emit-mindspore FILE]\n"
	        "\n"
	        "Answer the study's capacity question from the rows `shardlab sweep`\n"
	        "stored in FILE (the database must have been written for this study's\n"
	        "inputs). A point meets the goal when it fits the device memory (its\n"
	        "peak +- 5%% under it: a \"tight\" point, whose band straddles the\n"
	        "memory, is counted apart and never chosen), with the optimizer offload\n"
	        "the server's host memory alike (server.host.memory_GB), and, when the goal has\n"
	        "\"days\" or a \"budget\", trains within them. Prints:\n"
	        "  - per cluster family, the smallest cluster (fewest devices) with a\n"
	        "    point that meets the goal, and there the fastest configuration;\n"
	        "  - the fastest, the cheapest and the least-energy points overall\n"
	        "    (cheapest and least-energy need prices and power in the study);\n"
	        "  - the Pareto front of time to train against cost: the points no\n"
	        "    other point beats on both, fastest first.\n"
	        "Each choice shows the cluster, servers, devices, global batch,\n"
	        "configuration, iteration time, MFU, effective time to train (with\n"
	        "failures, restarts and checkpoints: docs/studies.md, \"Goodput\") and\n"
	        "goodput, device-hours, energy and cost (in the study's currency), its\n"
	        "memory (\"fits (71 of 80 GB)\"), with the simulated iteration time\n"
	        "where the sweep simulated the point. Every choice is made on the\n"
	        "effective time. The figures are priced from the study file as it is\n"
	        "now: a change of its goal, prices, power, currency or goodput needs no\n"
	        "new sweep.\n"
	        "\n"
	        "Each choice carries the 90%% interval of its iteration time and of its\n"
	        "effective time to train where the sweep had a calibration with a\n"
	        "training fit (sweep --calibration), else says it has none; where\n"
	        "that calibration is found again unchanged (the file the database\n"
	        "records, else the cluster's default, with the recorded hash), the\n"
	        "choice's settings outside the runs its training fit was fitted on\n"
	        "(\"outside its calibration's runs\"; JSON \"outside_fitted_runs\").\n"
	        "A study with fault cases (its \"faults\") is answered for one case\n"
	        "(--fault, default the first), and a table shows what each case costs:\n"
	        "the chosen point's plan under every case, and the fastest point there.\n"
	        "Under a case that rebalances (\"rebalance\": true) each choice also\n"
	        "says its layers per pipeline stage (\"stage_layers\" in --json).\n"
	        "\n");
	fprintf(f,
	        "options:\n"
	        "  --db FILE  the sweep's database (required)\n"
	        "  --percentile P  decide at the P-th percentile of each point's time\n"
	        "             (1 to 99; default 50, the estimate itself): its iteration\n"
	        "             time t (1 + z_P sigma/t) from its interval, and every\n"
	        "             figure that follows from it (time to train, device-hours,\n"
	        "             cost, energy); 90 ranks by a time 9 runs in 10 beat. Needs\n"
	        "             a sweep with intervals\n"
	        "  --fault NAME  the fault case the choices are made in (default the\n"
	        "             study's first)\n"
	        "  --pick WHICH  the point the --emit options write: fastest (default),\n"
	        "             cheapest, least-energy, smallest (the fewest devices of any\n"
	        "             family) or a cluster family's name (its smallest)\n"
	        "  --emit-scenario FILE  that point as a scenario file (the model, the\n"
	        "             cluster at its size, every training setting of its\n"
	        "             configuration, the megatron planner; paths relative to\n"
	        "             FILE's folder): shardlab estimate FILE gives the point's\n"
	        "             estimate; '-' for stdout\n"
	        "  --emit-megatron FILE  its Megatron-LM launch arguments (as plan\n"
	        "             --export megatron)\n"
	        "  --emit-mindspore FILE  its MindSpore strategy file, every op's\n"
	        "             strategy and pipeline stage (a scenario's\n"
	        "             \"mindspore_strategy\" reads it back to the same plan)\n"
	        "  --json     print JSON: \"study\", \"goal\" ({\"tokens\" or \"iterations\",\n"
	        "             \"days\"}), \"currency\", \"goodput\" (the model's figures),\n"
	        "             \"points\", \"meet_goal\", \"smallest\" (per\n"
	        "             cluster: a choice or null), \"fastest\", \"cheapest\",\n"
	        "             \"least_energy\" (a choice or null) and \"pareto\" (choices);\n"
	        "             a choice is {\"cluster\", \"device_kind\", \"servers\",\n"
	        "             \"devices\", \"global_batch\", \"config\", \"configuration\",\n"
	        "             \"iteration_s\", \"tokens_per_s\", \"mfu\", \"memory_bytes\",\n"
	        "             \"time_to_train_s\" (ideal), \"goodput\",\n"
	        "             \"checkpoint_interval_s\", \"interruptions\",\n"
	        "             \"effective_time_s\", \"device_hours\", \"energy_kwh\", \"cost\",\n"
	        "             \"sim_iteration_s\", \"memory_verdict\", \"memory_low_bytes\",\n"
	        "             \"memory_high_bytes\", \"memory_margin_bytes\", \"fault\",\n"
	        "             \"interval\"} (null where unknown; \"interval\": {\"level\",\n"
	        "             \"iteration_lo_s\", \"iteration_hi_s\", \"effective_lo_s\",\n"
	        "             \"effective_hi_s\", \"relative_sd\"} or null); \"tight\": the\n"
	        "             points tight on memory; \"host_oom\": those whose offloaded\n"
	        "             optimizer state is over a server's host memory\n"
	        "             (server.host.memory_GB), never chosen; \"percentile\", \"fault\" (the case\n"
	        "             answered), \"faults\" (per case: \"name\", \"same_plan\" and\n"
	        "             \"fastest\", choices or null)\n"
	        "  --csv      one line per choice: role,cluster,device_kind,servers,\n"
	        "             devices,global_batch,config,iteration_s,tokens_per_s,mfu,\n"
	        "             memory_bytes,time_to_train_s,device_hours,energy_kwh,cost,\n"
	        "             sim_iteration_s,goodput,checkpoint_interval_s,interruptions,\n"
	        "             effective_time_s,memory_verdict,fault,iteration_lo_s,\n"
	        "             iteration_hi_s,effective_lo_s,effective_hi_s,\n"
	        "             outside_fitted_runs (the settings outside the calibration's\n"
	        "             runs as the text names them, \"none\" inside them) (role:\n"
	        "             smallest, fastest, cheapest, least-energy, pareto; empty\n"
	        "             fields where unknown)\n"
	        "\n"
	        "exit status: 0 answered (even when no point meets the goal), 1 invalid\n"
	        "study or database, or nothing to emit, 2 usage error.\n");
}

enum out_kind { OUT_TEXT, OUT_JSON, OUT_CSV };

struct fit {
	const struct study *st;
	const struct study_row *rows;      /* the rows of the case answered */
	int n;
	const struct study_row *all;       /* every row, every fault case */
	bool intervals;                    /* some row has one */
	int n_all;
	int fault;                         /* the case answered */
	double percentile;                 /* 0.5: the estimate */
	const char *calibration;           /* the sweep's, study_plot_info's; NULL: not recorded */
	const struct calibration **cal;    /* [cluster]: the sweep's where it is the shipped one
	                                      (cli_swept_calibrations), else NULL */
};

/* The calibration the sweep recorded for cluster `name` (NULL: none, or
 * not recorded), from "NAME=CAL:HASH; NAME=none". */
static const char *swept_calibration(char *buf, size_t size, const char *key, const char *name)
{
	if (!cli_meta_entry(buf, size, key, name) || !strchr(buf, ':'))
		return NULL; /* "NAME=none" */
	*strchr(buf, ':') = 0;
	return buf;
}

static void json_num(cJSON *o, const char *k, double x)
{
	if (isnan(x))
		cJSON_AddNullToObject(o, k);
	else
		cJSON_AddNumberToObject(o, k, x);
}

static cJSON *json_choice(const struct fit *f, int i)
{
	if (i < 0)
		return cJSON_CreateNull();
	const struct study_row *r = &f->rows[i];
	const struct study_cluster *cl = &f->st->clusters[r->cluster];
	char c[128];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "cluster", cl->name);
	cJSON_AddStringToObject(o, "device_kind", cl->topo->device.kind);
	cJSON_AddNumberToObject(o, "servers", (double)r->servers);
	cJSON_AddNumberToObject(o, "devices", (double)r->devices);
	cJSON_AddNumberToObject(o, "global_batch", (double)r->global_batch);
	cJSON_AddStringToObject(o, "config", plan_search_config_text(c, sizeof c, &r->config));
	cJSON_AddItemToObject(o, "configuration", report_json_search_config(&r->config));
	json_num(o, "iteration_s", r->iteration_s);
	json_num(o, "tokens_per_s", r->tokens_per_s);
	json_num(o, "mfu", r->mfu);
	json_num(o, "memory_bytes", r->memory_bytes);
	json_num(o, "time_to_train_s", r->time_to_train_s);
	json_num(o, "goodput", r->goodput);
	json_num(o, "checkpoint_interval_s", r->checkpoint_interval_s);
	json_num(o, "interruptions", r->interruptions);
	json_num(o, "effective_time_s", r->effective_time_s);
	json_num(o, "device_hours", r->device_hours);
	json_num(o, "energy_kwh", r->energy_kwh);
	json_num(o, "cost", r->cost);
	json_num(o, "sim_iteration_s", r->simulated ? r->sim_iteration_s : NAN);
	cli_json_verdict(o, r->memory_bytes, r->hbm_bytes);
	cJSON_AddStringToObject(o, "fault", f->st->faults[r->fault].name);
	struct arena *la = arena_new();
	const char *layers = la ? study_row_stage_layers(la, f->st, r) : NULL;
	if (layers)
		cJSON_AddStringToObject(o, "stage_layers", layers);
	arena_free(la);
	struct cal_outside out[CAL_SET_COUNT];
	int n_out = study_row_outside(f->cal ? f->cal[r->cluster] : NULL, f->st, r, out);
	cJSON_AddItemToObject(o, "outside_fitted_runs",
	                      n_out >= 0 ? cli_outside_json(out, n_out) : cJSON_CreateNull());
	if (!study_row_has_interval(r)) {
		cJSON_AddNullToObject(o, "interval");
		return o;
	}
	cJSON *iv = cJSON_AddObjectToObject(o, "interval");
	cJSON_AddNumberToObject(iv, "level", 0.9);
	json_num(iv, "iteration_lo_s", r->iteration_lo_s);
	json_num(iv, "iteration_hi_s", r->iteration_hi_s);
	json_num(iv, "effective_lo_s", r->effective_lo_s);
	json_num(iv, "effective_hi_s", r->effective_hi_s);
	json_num(iv, "relative_sd", r->iteration_rel_sd);
	return o;
}

static void csv_num(double x)
{
	if (isnan(x))
		printf(",");
	else
		printf(",%.6g", x);
}

/* A text field, quoted when it holds a comma, a quote or a line break
 * (RFC 4180). */
static void csv_text(const char *t)
{
	if (!strpbrk(t, ",\"\n\r")) {
		fputs(t, stdout);
		return;
	}
	putchar('"');
	for (; *t; t++) {
		if (*t == '"')
			putchar('"');
		putchar(*t);
	}
	putchar('"');
}

static void csv_choice(const struct fit *f, const char *role, int i)
{
	if (i < 0)
		return;
	const struct study_row *r = &f->rows[i];
	const struct study_cluster *cl = &f->st->clusters[r->cluster];
	char c[128];
	printf("%s,%s,\"%s\",%" PRId64 ",%" PRId64 ",%" PRId64 ",%s", role, cl->name,
	       cl->topo->device.kind, r->servers, r->devices, r->global_batch,
	       plan_search_config_text(c, sizeof c, &r->config));
	double v[] = {r->iteration_s, r->tokens_per_s, r->mfu, r->memory_bytes, r->time_to_train_s,
	              r->device_hours, r->energy_kwh, r->cost,
	              r->simulated ? r->sim_iteration_s : NAN, r->goodput, r->checkpoint_interval_s,
	              r->interruptions, r->effective_time_s};
	for (size_t k = 0; k < SL_COUNTOF(v); k++)
		csv_num(v[k]);
	printf(",%s,", cost_fit_names[study_row_fit(r)]);
	csv_text(f->st->faults[r->fault].name);
	double w[] = {r->iteration_lo_s, r->iteration_hi_s, r->effective_lo_s, r->effective_hi_s};
	for (size_t k = 0; k < SL_COUNTOF(w); k++)
		csv_num(study_row_has_interval(r) ? w[k] : NAN);
	/* the settings outside the calibration's runs: "none" inside them,
	 * empty when not known */
	struct cal_outside out[CAL_SET_COUNT];
	int n_out = study_row_outside(f->cal ? f->cal[r->cluster] : NULL, f->st, r, out);
	char t[1024];
	printf(",");
	if (n_out >= 0)
		csv_text(n_out ? cost_cal_outside_text(t, sizeof t, out, n_out) : "none");
	printf("\n");
}

static void text_head(const struct study *st)
{
	char cost[32];
	snprintf(cost, sizeof cost, "cost %s", st->currency);
	printf("  %-14s %7s %7s %6s  %-44s %9s %6s %11s %7s %9s %12s %12s\n", "cluster", "servers",
	       "devices", "batch", "configuration", "iteration", "MFU", "to train", "goodput",
	       "device-h", "energy", cost);
}

static void text_choice(const struct fit *f, const char *label, int i)
{
	if (i < 0) {
		printf("  %-14s none meets the goal\n", label);
		return;
	}
	const struct study_row *r = &f->rows[i];
	char c[128], it[32], mfu[16], t[32], gp[16], dh[32], e[32], cost[32];
	char who[64];
	if (strcmp(label, f->st->clusters[r->cluster].name))
		snprintf(who, sizeof who, "%s %s", label, f->st->clusters[r->cluster].name);
	else
		snprintf(who, sizeof who, "%s", label);
	printf("  %-14s %7" PRId64 " %7" PRId64 " %6" PRId64 "  %-44s %9s %6s %11s %7s %9s %12s %12s\n",
	       who, r->servers, r->devices, r->global_batch,
	       plan_search_config_text(c, sizeof c, &r->config),
	       cli_si(it, sizeof it, r->iteration_s, "s"),
	       report_num_text(mfu, sizeof mfu, r->mfu, 100, "%"),
	       report_duration_text(t, sizeof t, r->effective_time_s),
	       report_num_text(gp, sizeof gp, r->goodput, 100, "%"),
	       report_num_text(dh, sizeof dh, r->device_hours, 1, ""),
	       report_num_text(e, sizeof e, r->energy_kwh, 1, " kWh"),
	       report_num_text(cost, sizeof cost, r->cost, 1, ""));
	char m[96];
	printf("  %-14s memory %s\n", "", cli_verdict_text(m, sizeof m, r->memory_bytes, r->hbm_bytes));
	if (study_row_has_interval(r)) {
		char lo[32], hi[32], elo[32], ehi[32];
		printf("  %-14s 90%% interval: iteration %s-%s, to train %s-%s\n", "",
		       cli_si(lo, sizeof lo, r->iteration_lo_s, "s"),
		       cli_si(hi, sizeof hi, r->iteration_hi_s, "s"),
		       report_duration_text(elo, sizeof elo, r->effective_lo_s),
		       report_duration_text(ehi, sizeof ehi, r->effective_hi_s));
	} else if (f->intervals) {
		printf("  %-14s interval: none (its cluster had no calibration with a training fit)\n",
		       "");
	}
	struct cal_outside out[CAL_SET_COUNT];
	int n_out = study_row_outside(f->cal ? f->cal[r->cluster] : NULL, f->st, r, out);
	if (n_out > 0) {
		char w[1024];
		printf("  %-14s outside its calibration's runs: %s\n", "",
		       cost_cal_outside_text(w, sizeof w, out, n_out));
	}
	struct arena *la = arena_new();
	const char *layers = la ? study_row_stage_layers(la, f->st, r) : NULL;
	if (layers)
		printf("  %-14s layers per pipeline stage %s (rebalanced under \"%s\")\n", "", layers,
		       f->st->faults[r->fault].name);
	arena_free(la);
	if (r->simulated) {
		char s[32];
		printf("  %-14s simulated iteration %s (%+.1f%% against the estimate%s)\n", "",
		       cli_si(s, sizeof s, r->sim_iteration_s, "s"),
		       100 * (r->sim_iteration_s / r->iteration_s - 1),
		       f->percentile != 0.5 ? " at that percentile" : "");
	}
}

/* The goodput model's figures, one line (docs/studies.md, "Goodput"). */
static void goodput_text(const struct study_goodput *g)
{
	if (!g->on) {
		printf("goodput: off (ideal times: no failures, restarts or checkpoints)\n");
		return;
	}
	char iv[32];
	if (g->interval_s > 0)
		snprintf(iv, sizeof iv, "every %.4g s", g->interval_s);
	else
		snprintf(iv, sizeof iv, "at Daly's optimum");
	printf("goodput: %.3g failures per device-hour, %.4g s to relaunch, checkpoints %s %s "
	       "(storage %.4g GB/s write, %.4g GB/s read); \"to train\" is the effective time\n",
	       g->failures_per_device_hour, g->relaunch_s, g->async ? "asynchronous" : "synchronous",
	       iv, g->storage_write_bps / 1e9, g->storage_read_bps / 1e9);
}

static cJSON *goodput_json(const struct study_goodput *g)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddBoolToObject(o, "on", g->on);
	cJSON_AddNumberToObject(o, "failures_per_device_hour", g->failures_per_device_hour);
	cJSON_AddNumberToObject(o, "relaunch_s", g->relaunch_s);
	cJSON_AddNumberToObject(o, "storage_write_bps", g->storage_write_bps);
	cJSON_AddNumberToObject(o, "storage_read_bps", g->storage_read_bps);
	cJSON_AddStringToObject(o, "checkpoint", g->async ? "async" : "sync");
	cJSON_AddNumberToObject(o, "host_copy_bps", g->host_copy_bps);
	cJSON_AddNumberToObject(o, "checkpoint_interval_s", g->interval_s);
	return o;
}

static const char *goal_text(char *buf, size_t size, const struct study *st)
{
	int o;
	if (st->goal.iterations)
		o = snprintf(buf, size, "%" PRId64 " iterations", st->goal.iterations);
	else
		o = snprintf(buf, size, "%.4g tokens", st->goal.tokens);
	if (st->goal.days > 0 && o > 0 && (size_t)o < size)
		snprintf(buf + o, size - (size_t)o, " within %g day%s", st->goal.days,
		         st->goal.days == 1 ? "" : "s");
	return buf;
}

/* --------------------------------------------------------- fault cases */

/* Index into f->all of the row of case k with the plan of f->rows[i],
 * -1 when none. */
static int same_plan(const struct fit *f, int i, int k)
{
	return study_same_plan(f->all, f->n_all, &f->rows[i], k);
}

/* Index into f->all of the fastest point of case k that meets the goal
 * (study_best over that case's rows), -1 when none. */
static int fastest_in_case(const struct fit *f, int k)
{
	struct study_row *rows = malloc(((size_t)f->n_all + 1) * sizeof *rows);
	int best = -1;
	if (rows) {
		int b = study_best(f->st, rows, study_fault_rows(f->all, f->n_all, k, rows), -1, 0);
		best = b >= 0 ? study_same_plan(f->all, f->n_all, &rows[b], k) : -1;
	}
	free(rows);
	return best;
}

/* The fault table: per case, the answered case's fastest plan there and
 * the fastest point there. */
static void faults_text(const struct fit *f, int fastest)
{
	const struct study *st = f->st;
	const struct study_row *ref = fastest >= 0 ? &f->rows[fastest] : NULL;
	printf("\nfault cases: the fastest point's plan (under \"%s\") in each case, and the "
	       "fastest point of each case\n", st->faults[f->fault].name);
	printf("  %-24s %10s %8s %10s   %-44s %10s %11s\n", "case", "same plan", "change",
	       "simulated", "fastest in the case", "iteration", "to train");
	for (int k = 0; k < st->n_faults; k++) {
		int j = ref ? same_plan(f, fastest, k) : -1, b = fastest_in_case(f, k);
		const struct study_row *x = j >= 0 ? &f->all[j] : NULL;
		char it[32] = "-", ch[16] = "-", sim[32] = "-", c[128] = "none meets the goal",
		     bi[32] = "-", bt[32] = "-";
		if (x && x->ok) {
			cli_si(it, sizeof it, x->iteration_s, "s");
			snprintf(ch, sizeof ch, "%+.1f%%", 100 * (x->iteration_s / ref->iteration_s - 1));
			if (x->simulated)
				cli_si(sim, sizeof sim, x->sim_iteration_s, "s");
		} else if (x) {
			snprintf(it, sizeof it, "failed");
		}
		if (b >= 0 && b == j) {
			snprintf(c, sizeof c, "the same plan");
			snprintf(bi, sizeof bi, "%s", it);
			report_duration_text(bt, sizeof bt, f->all[b].effective_time_s);
		} else if (b >= 0) {
			const struct study_row *y = &f->all[b];
			char cf[96];
			snprintf(c, sizeof c, "%s, %lld %s", plan_search_config_text(cf, sizeof cf, &y->config),
			         (long long)y->devices, st->clusters[y->cluster].name);
			cli_si(bi, sizeof bi, y->iteration_s, "s");
			report_duration_text(bt, sizeof bt, y->effective_time_s);
		}
		printf("  %-24s %10s %8s %10s   %-44s %10s %11s\n", st->faults[k].name, it, ch, sim, c,
		       bi, bt);
		if (x && !x->ok && x->error)
			printf("  %-24s failed: %s\n", "", x->error);
	}
}

static cJSON *faults_json(const struct fit *f, int fastest)
{
	cJSON *a = cJSON_CreateArray();
	/* json_choice reads f->rows: the table's rows come from f->all. */
	struct fit all = *f;
	all.rows = f->all;
	all.n = f->n_all;
	for (int k = 0; k < f->st->n_faults; k++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", f->st->faults[k].name);
		int j = fastest >= 0 ? same_plan(f, fastest, k) : -1;
		cJSON_AddItemToObject(o, "same_plan", json_choice(&all, j >= 0 && f->all[j].ok ? j : -1));
		cJSON_AddItemToObject(o, "fastest", json_choice(&all, fastest_in_case(f, k)));
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

static int report(const struct fit *f, enum out_kind kind)
{
	const struct study *st = f->st;
	int meet = 0, tight = 0, host = 0;
	for (int i = 0; i < f->n; i++) {
		meet += study_row_meets(st, &f->rows[i]);
		tight += f->rows[i].ok && study_row_fit(&f->rows[i]) == FIT_TIGHT;
		host += f->rows[i].ok && f->rows[i].host_fit == FIT_NO;
	}
	int fastest = study_best(st, f->rows, f->n, -1, 0);
	int cheapest = study_best(st, f->rows, f->n, -1, 1);
	int greenest = study_best(st, f->rows, f->n, -1, 2);
	int *front = malloc(((size_t)f->n + 1) * sizeof *front);
	if (!front) {
		fprintf(stderr, "shardlab fit: out of memory\n");
		return EXIT_INVALID;
	}
	int n_front = study_pareto(st, f->rows, f->n, front);
	if (kind == OUT_JSON) {
		cJSON *root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "study", st->name);
		cJSON *g = cJSON_AddObjectToObject(root, "goal");
		if (st->goal.iterations)
			cJSON_AddNumberToObject(g, "iterations", (double)st->goal.iterations);
		else
			cJSON_AddNumberToObject(g, "tokens", st->goal.tokens);
		cJSON_AddNumberToObject(g, "days", st->goal.days);
		cJSON_AddStringToObject(root, "currency", st->currency);
		cJSON_AddNumberToObject(root, "percentile", 100 * f->percentile);
		cJSON_AddStringToObject(root, "fault", st->faults[f->fault].name);
		cJSON_AddItemToObject(root, "goodput", goodput_json(&st->goodput));
		cJSON *unc = cJSON_AddArrayToObject(root, "uncalibrated_clusters");
		for (int c = 0; unc && c < st->n_clusters; c++)
			if (!topo_compute_calibrated(&st->clusters[c].topo->device))
				cJSON_AddItemToArray(unc, cJSON_CreateString(st->clusters[c].name));
		cJSON_AddNumberToObject(root, "points", f->n);
		cJSON_AddNumberToObject(root, "meet_goal", meet);
		cJSON_AddNumberToObject(root, "tight", tight);
		cJSON_AddNumberToObject(root, "host_oom", host);
		cJSON *sm = cJSON_AddObjectToObject(root, "smallest");
		for (int c = 0; c < st->n_clusters; c++)
			cJSON_AddItemToObject(sm, st->clusters[c].name,
			                      json_choice(f, study_smallest(st, f->rows, f->n, c)));
		cJSON_AddItemToObject(root, "fastest", json_choice(f, fastest));
		cJSON_AddItemToObject(root, "cheapest", json_choice(f, cheapest));
		cJSON_AddItemToObject(root, "least_energy", json_choice(f, greenest));
		cJSON_AddItemToObject(root, "faults", faults_json(f, fastest));
		cJSON *pa = cJSON_AddArrayToObject(root, "pareto");
		for (int i = 0; i < n_front; i++)
			cJSON_AddItemToArray(pa, json_choice(f, front[i]));
		free(front);
		return report_print_json(root, "fit");
	}
	if (kind == OUT_CSV) {
		printf("role,cluster,device_kind,servers,devices,global_batch,config,iteration_s,"
		       "tokens_per_s,mfu,memory_bytes,time_to_train_s,device_hours,energy_kwh,cost,"
		       "sim_iteration_s,goodput,checkpoint_interval_s,interruptions,"
		       "effective_time_s,memory_verdict,fault,iteration_lo_s,iteration_hi_s,"
		       "effective_lo_s,effective_hi_s,outside_fitted_runs\n");
		for (int c = 0; c < st->n_clusters; c++)
			csv_choice(f, "smallest", study_smallest(st, f->rows, f->n, c));
		csv_choice(f, "fastest", fastest);
		csv_choice(f, "cheapest", cheapest);
		csv_choice(f, "least-energy", greenest);
		for (int i = 0; i < n_front; i++)
			csv_choice(f, "pareto", front[i]);
		free(front);
		return EXIT_OK;
	}
	char goal[96];
	printf("fit %s: goal %s; %d points, %d meet the goal, %d tight on memory (not chosen)",
	       st->name, goal_text(goal, sizeof goal, st), f->n, meet, tight);
	if (host)
		printf(", %d over the host's memory (the optimizer offload: server.host.memory_GB)",
		       host);
	printf("\n");
	goodput_text(&st->goodput);
	for (int c = 0; c < st->n_clusters; c++) {
		char cal[128];
		cli_note_kernel_model(stdout, st->clusters[c].topo,
		                      swept_calibration(cal, sizeof cal, f->calibration,
		                                        st->clusters[c].name));
	}
	if (!f->intervals)
		printf("intervals: none (the sweep had no calibration with a training fit: no "
		       "shipped one for its devices, or --calibration none; sweep --calibration "
		       "FILE gives one)\n");
	if (f->percentile != 0.5)
		printf("decided at percentile %g of each point's time: every figure below is that "
		       "percentile's, from the point's interval\n", 100 * f->percentile);
	if (st->n_faults > 1)
		printf("fault case: %s (the choices are made under it; --fault NAME for another)\n",
		       st->faults[f->fault].name);
	printf("\nsmallest cluster per family that meets the goal\n");
	text_head(st);
	for (int c = 0; c < st->n_clusters; c++)
		text_choice(f, st->clusters[c].name, study_smallest(st, f->rows, f->n, c));
	printf("\nbest choices\n");
	text_head(st);
	text_choice(f, "fastest", fastest);
	text_choice(f, "cheapest", cheapest);
	text_choice(f, "energy", greenest);
	printf("\nPareto front: time to train against cost (%d point%s)\n", n_front,
	       n_front == 1 ? "" : "s");
	if (n_front) {
		text_head(st);
		for (int i = 0; i < n_front; i++)
			text_choice(f, f->st->clusters[f->rows[front[i]].cluster].name, front[i]);
	} else {
		printf("  none: no point meets the goal with a price\n");
	}
	if (st->n_faults > 1)
		faults_text(f, fastest);
	free(front);
	return EXIT_OK;
}

/* --emit-*: the point --pick names, as a scenario and launch files. */
struct emit {
	const char *pick;                  /* fastest, cheapest, least-energy, smallest, or a
	                                      cluster family (its smallest) */
	const char *scenario, *megatron, *mindspore;
};

/* The row --pick names (-1 when no point meets the goal), or -2 when it
 * names nothing: fastest, cheapest and least-energy by study_best,
 * smallest over every family, or one family's smallest. */
static int picked(const struct fit *f, const char *pick)
{
	static const char *const best[] = {"fastest", "cheapest", "least-energy"};
	const struct study *st = f->st;
	for (int k = 0; k < (int)SL_COUNTOF(best); k++)
		if (!strcmp(pick, best[k]))
			return study_best(st, f->rows, f->n, -1, k);
	int found = -2;
	for (int c = 0; c < st->n_clusters; c++) {
		if (strcmp(pick, "smallest") && strcmp(pick, st->clusters[c].name))
			continue;
		int i = study_smallest(st, f->rows, f->n, c);
		if (found < 0 || (i >= 0 && (f->rows[i].devices < f->rows[found].devices ||
		                             (f->rows[i].devices == f->rows[found].devices &&
		                              f->rows[i].effective_time_s <
		                                  f->rows[found].effective_time_s))))
			found = i >= 0 ? i : found == -2 ? -1 : found;
	}
	return found;
}

/* Writes text to path ("-": stdout); false after a message. */
static bool emit_text(const char *what, const char *path, const char *text)
{
	char err[512];
	if (!strcmp(path, "-")) {
		fputs(text, stdout);
		return true;
	}
	if (report_write_file(path, text, err, sizeof err))
		return true;
	fprintf(stderr, "shardlab fit: %s: %s\n", what, err);
	return false;
}

static int emit(struct arena *a, const struct fit *f, const struct emit *em)
{
	int i = picked(f, em->pick);
	if (i == -2) {
		fprintf(stderr, "shardlab fit: --pick: expected fastest, cheapest, least-energy, "
		        "smallest or a cluster family of the study, got \"%s\"\n", em->pick);
		return EXIT_USAGE;
	}
	if (i < 0) {
		fprintf(stderr, "shardlab fit: --pick %s: no point meets the goal; nothing to emit\n",
		        em->pick);
		return EXIT_INVALID;
	}
	if (em->scenario && f->st->faults[f->rows[i].fault].text)
		fprintf(stderr, "shardlab fit: note: --emit-scenario writes the point without its fault "
		        "case \"%s\" (a scenario's faults are not written back: docs/formats.md, "
		        "\"faults\")\n", f->st->faults[f->rows[i].fault].name);
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = study_point_scenario(a, f->st, &f->rows[i], &d);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = s ? plan_make(a, s, PLANNER_MEGATRON, &o, &d) : NULL;
	int rc = p ? EXIT_OK : EXIT_INVALID;
	if (em->scenario && rc == EXIT_OK) {
		const char *dir = strcmp(em->scenario, "-") ? util_path_dir(a, em->scenario) : ".";
		cJSON *j = dir ? scenario_json(a, s, dir) : NULL;
		char *t = j ? cJSON_Print(j) : NULL;
		char *text = t ? arena_printf(a, "%s\n", t) : NULL;
		cJSON_Delete(j);
		free(t);
		if (!text || !emit_text("--emit-scenario", em->scenario, text))
			rc = EXIT_INVALID;
	}
	static const struct {
		enum export_format fmt;
		const char *flag;
	} exports[] = {{EXPORT_MEGATRON, "--emit-megatron"}, {EXPORT_MINDSPORE, "--emit-mindspore"}};
	for (size_t k = 0; k < SL_COUNTOF(exports) && rc == EXIT_OK; k++) {
		const char *path = exports[k].fmt == EXPORT_MEGATRON ? em->megatron : em->mindspore;
		if (!path)
			continue;
		char err[512];
		char *text = report_export_text(a, p, PLANNER_MEGATRON, exports[k].fmt, &d, err,
		                                sizeof err);
		if (!text) {
			fprintf(stderr, "shardlab fit: %s: %s\n", exports[k].flag, err);
			rc = EXIT_INVALID;
		} else if (!emit_text(exports[k].flag, path, text)) {
			rc = EXIT_INVALID;
		}
		free(text);
	}
	cli_print_diags(&d);
	diag_list_free(&d);
	return rc;
}

int cli_load_study_rows(const char *cmd, struct arena *a, const char *file, const char *db,
                        const struct study **st_out, struct study_row **rows_out, int *n_out)
{
	struct diag_list d;
	diag_list_init(&d);
	const struct study *st = study_load(a, file, &d);
	cli_print_diags(&d);
	diag_list_free(&d);
	int rc = st ? EXIT_OK : EXIT_INVALID;
	struct study_store *s = NULL;
	char err[512] = "";
	uint64_t hash = 0;
	if (rc == EXIT_OK && !study_store_open_ro(db, &s, &hash, err, sizeof err)) {
		fprintf(stderr, "shardlab %s: %s\n", cmd, err);
		rc = EXIT_INVALID;
	}
	if (rc == EXIT_OK && hash != st->inputs_hash) {
		char h1[17], h2[17];
		fprintf(stderr, "shardlab %s: %s was swept for other inputs (hash %s; this study's "
		        "inputs hash to %s): run shardlab sweep %s --db %s again\n", cmd, db,
		        study_hash_text(h1, hash), study_hash_text(h2, st->inputs_hash), file, db);
		rc = EXIT_INVALID;
	}
	struct study_row *rows = NULL;
	int n = rc == EXIT_OK ? study_store_rows(s, a, &rows, err, sizeof err) : 0;
	if (n < 0) {
		fprintf(stderr, "shardlab %s: %s\n", cmd, err);
		rc = EXIT_INVALID;
	}
	for (int i = 0; rc == EXIT_OK && i < n; i++)
		if (rows[i].cluster < 0 || rows[i].cluster >= st->n_clusters) {
			fprintf(stderr, "shardlab %s: %s has a row of cluster %d, the study %d clusters\n",
			        cmd, db, rows[i].cluster, st->n_clusters);
			rc = EXIT_INVALID;
		}
	/* The stored figures as the study prices them now: its goal, prices,
	 * power and goodput may have changed since the sweep. */
	for (int i = 0; rc == EXIT_OK && i < n; i++)
		if (rows[i].ok)
			study_row_figures(st, &rows[i]);
	study_store_close(s);
	*st_out = st;
	*rows_out = rows;
	*n_out = rc == EXIT_OK ? n : 0;
	return rc;
}

int cmd_fit(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	const char *file = NULL, *db = NULL, *fault = NULL;
	int64_t pct = 50;
	struct emit em = {.pick = "fastest"};
	enum out_kind kind = OUT_TEXT;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--db") && i + 1 < argc)
			db = argv[++i];
		else if (!strcmp(argv[i], "--emit-scenario") && i + 1 < argc)
			em.scenario = argv[++i];
		else if (!strcmp(argv[i], "--emit-megatron") && i + 1 < argc)
			em.megatron = argv[++i];
		else if (!strcmp(argv[i], "--emit-mindspore") && i + 1 < argc)
			em.mindspore = argv[++i];
		else if (!strcmp(argv[i], "--pick") && i + 1 < argc)
			em.pick = argv[++i];
		else if (!strcmp(argv[i], "--percentile") && i + 1 < argc) {
			int rc = cli_parse_range("fit", "--percentile", argv[++i], 1, 99, &pct);
			if (rc != EXIT_OK)
				return rc;
		} else if (!strcmp(argv[i], "--fault") && i + 1 < argc)
			fault = argv[++i];
		else if (!strcmp(argv[i], "--json"))
			kind = OUT_JSON;
		else if (!strcmp(argv[i], "--csv"))
			kind = OUT_CSV;
		else if (argv[i][0] == '-') {
			fprintf(stderr, "shardlab fit: unknown option '%s' (see --help)\n", argv[i]);
			return EXIT_USAGE;
		} else if (file) {
			fprintf(stderr, "shardlab fit: one study at a time ('%s')\n", argv[i]);
			return EXIT_USAGE;
		} else
			file = argv[i];
	}
	if (!file || !db) {
		fprintf(stderr, "shardlab fit: missing %s (see --help)\n", !file ? "STUDY" : "--db FILE");
		return EXIT_USAGE;
	}
	struct arena *a = arena_new();
	const struct study *st = NULL;
	struct study_row *rows = NULL;
	int n = 0;
	int rc = a ? cli_load_study_rows("fit", a, file, db, &st, &rows, &n) : EXIT_INVALID;
	struct fit f = {.st = st, .all = rows, .n_all = n, .percentile = (double)pct / 100};
	struct study_store *s = NULL;
	struct study_plot_info info = {0};
	char err[512];
	if (rc == EXIT_OK && study_store_open_ro(db, &s, NULL, err, sizeof err) &&
	    study_store_info(s, a, &info))
		f.calibration = info.calibration;
	study_store_close(s);
	if (rc == EXIT_OK)
		f.cal = cli_swept_calibrations(a, st, &info, db);
	if (rc == EXIT_OK && fault) {
		f.fault = -1;
		for (int k = 0; k < st->n_faults; k++)
			if (!strcmp(fault, st->faults[k].name))
				f.fault = k;
		if (f.fault < 0) {
			fprintf(stderr, "shardlab fit: --fault: the study %s has no fault case \"%s\"\n",
			        st->name, fault);
			rc = EXIT_USAGE;
		}
	}
	/* At another percentile every figure follows from that time. */
	for (int i = 0; rc == EXIT_OK && pct != 50 && i < n; i++) {
		if (rows[i].ok && !study_row_has_interval(&rows[i])) {
			/* whose: a cluster swept with a calibration has one unless
			 * the calibration has no training fit; one without was swept
			 * bare, or its device has no shipped file */
			const struct study_cluster *c = &st->clusters[rows[i].cluster];
			const struct calibration *cal = f.cal ? f.cal[rows[i].cluster] : NULL;
			fprintf(stderr, "shardlab fit: --percentile %lld: the points of cluster %s in %s "
			        "have no interval: ", (long long)pct, c->name, db);
			const char *def = cal ? NULL
			                      : cli_default_calibration_file(
			                                a, c->topo, st->scenario->training.framework);
			if (cal)
				fprintf(stderr, "its calibration %s has no training fit (calibrate --runs "
				        "fits one from measured iterations)\n", cal->name);
			else if (def)
				fprintf(stderr, "it was swept without a calibration: sweep again with "
				        "--calibration auto (the %s's is %s)\n", c->topo->device.kind, def);
			else
				fprintf(stderr, "no calibration is shipped for the %s: fit one from "
				        "measured iterations (calibrate --runs) and sweep with --calibration "
				        "FILE, or leave the cluster out of the study\n", c->topo->device.kind);
			rc = EXIT_INVALID;
		}
		study_row_at_percentile(st, &rows[i], f.percentile);
	}
	struct study_row *mine = rc == EXIT_OK ? arena_calloc(a, (size_t)n + 1, sizeof *mine) : NULL;
	f.n = mine ? study_fault_rows(rows, n, f.fault, mine) : 0;
	for (int i = 0; i < n; i++)
		f.intervals = f.intervals || study_row_has_interval(&rows[i]);
	f.rows = mine;
	if (rc == EXIT_OK && !mine)
		rc = EXIT_INVALID;
	if (rc == EXIT_OK) {
		rc = report(&f, kind);
		if (rc == EXIT_OK && (em.scenario || em.megatron || em.mindspore))
			rc = emit(a, &f, &em);
	}
	arena_free(a);
	return rc;
}
