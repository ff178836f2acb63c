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
#include "studies.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab fit STUDY --db FILE [--json | --csv]\n"
	        "\n"
	        "Answer the study's capacity question from the rows `shardlab sweep`\n"
	        "stored in FILE (the database must have been written for this study's\n"
	        "inputs). A point meets the goal when it fits the device memory (its\n"
	        "peak +- 5%% under it: a \"tight\" point, whose band straddles the\n"
	        "memory, is counted apart and never chosen) and,\n"
	        "when the goal has \"days\", trains within them. Prints:\n"
	        "  - per cluster family, the smallest cluster (fewest devices) with a\n"
	        "    point that meets the goal, and there the fastest configuration;\n"
	        "  - the fastest, the cheapest and the least-energy points overall\n"
	        "    (cheapest and least-energy need prices and power in the study);\n"
	        "  - the Pareto front of time to train against cost: the points no\n"
	        "    other point beats on both, fastest first.\n"
	        "Each choice shows the cluster, servers, devices, global batch,\n"
	        "configuration, iteration time, MFU, time to train, device-hours,\n"
	        "energy and cost, its memory (\"fits (71 of 80 GB)\"), with the simulated\n"
	        "iteration time where the sweep simulated the point.\n"
	        "\n"
	        "options:\n"
	        "  --db FILE  the sweep's database (required)\n"
	        "  --json     print JSON: \"study\", \"goal\" ({\"tokens\" or \"iterations\",\n"
	        "             \"days\"}), \"points\", \"meet_goal\", \"smallest\" (per\n"
	        "             cluster: a choice or null), \"fastest\", \"cheapest\",\n"
	        "             \"least_energy\" (a choice or null) and \"pareto\" (choices);\n"
	        "             a choice is {\"cluster\", \"device_kind\", \"servers\",\n"
	        "             \"devices\", \"global_batch\", \"config\", \"configuration\",\n"
	        "             \"iteration_s\", \"tokens_per_s\", \"mfu\", \"memory_bytes\",\n"
	        "             \"time_to_train_s\", \"device_hours\", \"energy_kwh\", \"cost\",\n"
	        "             \"sim_iteration_s\", \"memory_verdict\", \"memory_low_bytes\",\n"
	        "             \"memory_high_bytes\", \"memory_margin_bytes\"} (null where\n"
	        "             unknown); \"tight\": the points tight on memory\n"
	        "  --csv      one line per choice: role,cluster,device_kind,servers,\n"
	        "             devices,global_batch,config,iteration_s,tokens_per_s,mfu,\n"
	        "             memory_bytes,time_to_train_s,device_hours,energy_kwh,cost,\n"
	        "             sim_iteration_s,memory_verdict (role: smallest, fastest, cheapest,\n"
	        "             least-energy, pareto; empty fields where unknown)\n"
	        "\n"
	        "exit status: 0 answered (even when no point meets the goal), 1 invalid\n"
	        "study or database, 2 usage error.\n");
}

enum out_kind { OUT_TEXT, OUT_JSON, OUT_CSV };

struct fit {
	const struct study *st;
	const struct study_row *rows;
	int n;
};

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
	json_num(o, "device_hours", r->device_hours);
	json_num(o, "energy_kwh", r->energy_kwh);
	json_num(o, "cost", r->cost);
	json_num(o, "sim_iteration_s", r->simulated ? r->sim_iteration_s : NAN);
	cli_json_verdict(o, r->memory_bytes, r->hbm_bytes);
	return o;
}

static void csv_num(double x)
{
	if (isnan(x))
		printf(",");
	else
		printf(",%.6g", x);
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
	              r->simulated ? r->sim_iteration_s : NAN};
	for (size_t k = 0; k < SL_COUNTOF(v); k++)
		csv_num(v[k]);
	printf(",%s\n", cost_fit_names[study_row_fit(r)]);
}

/* "12 s", "54.4 min", "3.2 h", "4.1 days". */
static const char *duration_text(char *buf, size_t size, double s)
{
	if (isnan(s))
		snprintf(buf, size, "-");
	else if (s < 60)
		snprintf(buf, size, "%.3g s", s);
	else if (s < 3600)
		snprintf(buf, size, "%.3g min", s / 60);
	else if (s < 2 * 86400)
		snprintf(buf, size, "%.3g h", s / 3600);
	else
		snprintf(buf, size, "%.3g days", s / 86400);
	return buf;
}

/* "-" for an unknown figure, else x times scale (4 significant digits)
 * and a suffix. */
static const char *num_text(char *buf, size_t size, double x, double scale, const char *suffix)
{
	if (isnan(x))
		snprintf(buf, size, "-");
	else if (fabs(x * scale) >= 1e4)
		snprintf(buf, size, "%.0f%s", x * scale, suffix);
	else
		snprintf(buf, size, "%.4g%s", x * scale, suffix);
	return buf;
}

static void text_head(void)
{
	printf("  %-14s %7s %7s %6s  %-44s %9s %6s %11s %9s %12s %9s\n", "cluster", "servers",
	       "devices", "batch", "configuration", "iteration", "MFU", "to train", "device-h",
	       "energy", "cost");
}

static void text_choice(const struct fit *f, const char *label, int i)
{
	if (i < 0) {
		printf("  %-14s none meets the goal\n", label);
		return;
	}
	const struct study_row *r = &f->rows[i];
	char c[128], it[32], mfu[16], t[32], dh[32], e[32], cost[32];
	char who[64];
	if (strcmp(label, f->st->clusters[r->cluster].name))
		snprintf(who, sizeof who, "%s %s", label, f->st->clusters[r->cluster].name);
	else
		snprintf(who, sizeof who, "%s", label);
	printf("  %-14s %7" PRId64 " %7" PRId64 " %6" PRId64 "  %-44s %9s %6s %11s %9s %12s %9s\n",
	       who, r->servers, r->devices, r->global_batch,
	       plan_search_config_text(c, sizeof c, &r->config),
	       cli_si(it, sizeof it, r->iteration_s, "s"),
	       num_text(mfu, sizeof mfu, r->mfu, 100, "%"),
	       duration_text(t, sizeof t, r->time_to_train_s),
	       num_text(dh, sizeof dh, r->device_hours, 1, ""),
	       num_text(e, sizeof e, r->energy_kwh, 1, " kWh"),
	       num_text(cost, sizeof cost, r->cost, 1, ""));
	char m[96];
	printf("  %-14s memory %s\n", "", cli_verdict_text(m, sizeof m, r->memory_bytes, r->hbm_bytes));
	if (r->simulated) {
		char s[32];
		printf("  %-14s simulated iteration %s (%+.1f%% against the estimate)\n", "",
		       cli_si(s, sizeof s, r->sim_iteration_s, "s"),
		       100 * (r->sim_iteration_s / r->iteration_s - 1));
	}
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

static int report(const struct fit *f, enum out_kind kind)
{
	const struct study *st = f->st;
	int meet = 0, tight = 0;
	for (int i = 0; i < f->n; i++) {
		meet += study_row_meets(st, &f->rows[i]);
		tight += f->rows[i].ok && study_row_fit(&f->rows[i]) == FIT_TIGHT;
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
		cJSON_AddNumberToObject(root, "points", f->n);
		cJSON_AddNumberToObject(root, "meet_goal", meet);
		cJSON_AddNumberToObject(root, "tight", tight);
		cJSON *sm = cJSON_AddObjectToObject(root, "smallest");
		for (int c = 0; c < st->n_clusters; c++)
			cJSON_AddItemToObject(sm, st->clusters[c].name,
			                      json_choice(f, study_smallest(st, f->rows, f->n, c)));
		cJSON_AddItemToObject(root, "fastest", json_choice(f, fastest));
		cJSON_AddItemToObject(root, "cheapest", json_choice(f, cheapest));
		cJSON_AddItemToObject(root, "least_energy", json_choice(f, greenest));
		cJSON *pa = cJSON_AddArrayToObject(root, "pareto");
		for (int i = 0; i < n_front; i++)
			cJSON_AddItemToArray(pa, json_choice(f, front[i]));
		free(front);
		return report_print_json(root, "fit");
	}
	if (kind == OUT_CSV) {
		printf("role,cluster,device_kind,servers,devices,global_batch,config,iteration_s,"
		       "tokens_per_s,mfu,memory_bytes,time_to_train_s,device_hours,energy_kwh,cost,"
		       "sim_iteration_s,memory_verdict\n");
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
	printf("fit %s: goal %s; %d points, %d meet the goal, %d tight on memory (not chosen)\n\n",
	       st->name, goal_text(goal, sizeof goal, st), f->n, meet, tight);
	printf("smallest cluster per family that meets the goal\n");
	text_head();
	for (int c = 0; c < st->n_clusters; c++)
		text_choice(f, st->clusters[c].name, study_smallest(st, f->rows, f->n, c));
	printf("\nbest choices\n");
	text_head();
	text_choice(f, "fastest", fastest);
	text_choice(f, "cheapest", cheapest);
	text_choice(f, "energy", greenest);
	printf("\nPareto front: time to train against cost (%d point%s)\n", n_front,
	       n_front == 1 ? "" : "s");
	if (n_front) {
		text_head();
		for (int i = 0; i < n_front; i++)
			text_choice(f, f->st->clusters[f->rows[front[i]].cluster].name, front[i]);
	} else {
		printf("  none: no point meets the goal with a price\n");
	}
	free(front);
	return EXIT_OK;
}

int cmd_fit(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	const char *file = NULL, *db = NULL;
	enum out_kind kind = OUT_TEXT;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--db") && i + 1 < argc)
			db = argv[++i];
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
	struct diag_list d;
	diag_list_init(&d);
	const struct study *st = a ? study_load(a, file, &d) : NULL;
	cli_print_diags(&d);
	diag_list_free(&d);
	int rc = st ? EXIT_OK : EXIT_INVALID;
	struct study_store *s = NULL;
	char err[512] = "";
	uint64_t hash = 0;
	if (rc == EXIT_OK && !study_store_open_ro(db, &s, &hash, err, sizeof err)) {
		fprintf(stderr, "shardlab fit: %s\n", err);
		rc = EXIT_INVALID;
	}
	if (rc == EXIT_OK && hash != st->inputs_hash) {
		char h1[17], h2[17];
		fprintf(stderr, "shardlab fit: %s was swept for other inputs (hash %s; this study's "
		        "inputs hash to %s): run shardlab sweep %s --db %s again\n", db,
		        study_hash_text(h1, hash), study_hash_text(h2, st->inputs_hash), file, db);
		rc = EXIT_INVALID;
	}
	struct study_row *rows = NULL;
	int n = rc == EXIT_OK ? study_store_rows(s, a, &rows, err, sizeof err) : 0;
	if (n < 0) {
		fprintf(stderr, "shardlab fit: %s\n", err);
		rc = EXIT_INVALID;
	}
	for (int i = 0; rc == EXIT_OK && i < n; i++)
		if (rows[i].cluster < 0 || rows[i].cluster >= st->n_clusters) {
			fprintf(stderr, "shardlab fit: %s has a row of cluster %d, the study %d clusters\n",
			        db, rows[i].cluster, st->n_clusters);
			rc = EXIT_INVALID;
		}
	if (rc == EXIT_OK) {
		struct fit f = {st, rows, n};
		rc = report(&f, kind);
	}
	study_store_close(s);
	arena_free(a);
	return rc;
}
