/* cmd_validate.c — `shardlab validate FILE`: predictions against published
 * measurements (docs/validation.md).
 *
 * A training file: each row's scenario planned (the megatron planner at
 * the row's tensor-parallel degree unless the row names another),
 * estimated in closed form and, unless --estimate-only, lowered and
 * simulated; both iteration times converted to the unit the source
 * reports, with each row's error and the mean absolute percentage error
 * (MAPE) of the estimator and of the simulator. A row that cannot be
 * planned, estimated or that does not fit the device memory is reported
 * with its reason and left out of the MAPE.
 *
 * A collectives file: for each row and message size, one collective over
 * the row's devices simulated alone on the topology and its formula
 * (cost_collective_algo_s), both as bus bandwidth (nccl-tests'
 * convention) against the measured figure.
 *
 * The rows are predicted and scored by the validation library
 * (validation/run.c, score.c); this file parses the arguments, runs the
 * rows (side by side in worker processes) and prints. With --jobs N
 * (default: the processors online) up to N training rows run at once, each in a forked worker that writes its results back
 * through a pipe; the rows are printed in file order, the same whatever N.
 * The output is deterministic: no wall-clock figures.
 */
#include <cjson/cJSON.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli.h"
#include "validation.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab validate FILE [--estimate-only] [--rows PATTERN]\n"
	        "                              [--jobs N] [--calibration FILE]\n"
	        "                              [--json | --csv]\n"
	        "\n"
	        "Predictions against published measurements (docs/validation.md). FILE is\n"
	        "a validation file (\"format\": \"shardlab-validation\") of one kind:\n"
	        "\n"
	        "training     each row a published training run: a scenario (model,\n"
	        "             topology, devices, pipeline stages, schedule, virtual\n"
	        "             stages, recompute, ZeRO, sequence parallelism, global\n"
	        "             batch), the tensor-parallel degree and micro-batch per\n"
	        "             replica, and the measured iteration time, TFLOP/s per\n"
	        "             device, tokens/s (per device) or samples/s. The row's plan\n"
	        "             (megatron at that tensor-parallel degree unless the row\n"
	        "             names another planner) is estimated in closed form and\n"
	        "             simulated on SimGrid; both iteration times are converted\n"
	        "             to the row's unit. Prints per row the plan, the measured\n"
	        "             value, the estimate and the simulation with their errors\n"
	        "             (100 (predicted / measured - 1)), then the mean absolute\n"
	        "             percentage error (MAPE) of each over the rows that ran.\n"
	        "             A row that cannot be planned or estimated is listed with\n"
	        "             its reason and left out of the MAPE. A row whose estimate\n"
	        "             does not fit the device memory (OOM) is a failed\n"
	        "             prediction, since its run trained: it is counted and\n"
	        "             shown as such, and its times stay in the MAPE; so is\n"
	        "             one whose offloaded state (training.optimizer_offload,\n"
	        "             activation_offload_layers) does not fit a server's\n"
	        "             host memory (server.host.memory_GB), \"host OOM\",\n"
	        "             counted apart from the HBM's. A row\n"
	        "             with \"memory_GB\" (the measured peak per device) gets\n"
	        "             the estimate's memory error too, and their MAPE.\n"
	        "collectives  each row one collective (all-reduce, all-gather,\n"
	        "             reduce-scatter, all-to-all) over a topology's first N\n"
	        "             devices at one or more message sizes, with the measured\n"
	        "             bus or algorithm bandwidth (nccl-tests: algbw = S / t,\n"
	        "             busbw = algbw x 2(n-1)/n for all-reduce, x (n-1)/n for the\n"
	        "             others). Each size is simulated alone (step fidelity up to\n"
	        "             64 ranks, coarse above) and priced by its formula; prints\n"
	        "             the algorithm (with the protocol where the topology names\n"
	        "             a collective library: \"tree LL\"), the measured,\n"
	        "             simulated and formula bus bandwidths with their errors,\n"
	        "             and the MAPE of each.\n"
	        "\n");
	fprintf(f,
	        "options:\n"
	        "  --estimate-only   training: skip the simulations (the estimate is fast,\n"
	        "                    a simulation of thousands of ranks is not);\n"
	        "                    collectives: the formula only\n"
	        "  --rows PATTERN    only the rows whose name matches PATTERN (a shell\n"
	        "                    glob: '*174.6B*'); the MAPE is over those\n"
	        "  --calibration FILE\n"
	        "                    a calibration file (docs/formats.md): its figures\n"
	        "                    replace the parameters they name in the topology\n"
	        "                    of every row --rows selects (a row left out is not\n"
	        "                    calibrated); the report names it (text: a line under\n"
	        "                    the title; JSON: \"calibration\" {\"name\", \"file\"}\n"
	        "                    or null); \"auto\": the one each row's topology file\n"
	        "                    names, else its device's shipped one for its\n"
	        "                    training.framework (calibration/; a line and a\n"
	        "                    \"calibrations\" entry each), \"none\": none (the bare\n"
	        "                    model). Without the option, each training row takes\n"
	        "                    that one where there is one, and the others none (a line\n"
	        "                    says how many); collective rows take none (the\n"
	        "                    shipped files are fitted to training runs and\n"
	        "                    kernels). A calibration fitted on these rows says so:\n"
	        "                    its errors here are in sample, and the report gives\n"
	        "                    its cross-validated MAPE beside them. With a training fit,\n"
	        "                    each prediction has a 90%% interval (JSON:\n"
	        "                    \"interval\" {\"lo\", \"hi\"} in the row's unit,\n"
	        "                    \"covered\") and the report gives the coverage, the\n"
	        "                    share of measurements inside them (JSON: \"coverage\");\n"
	        "                    the rows whose plans lie outside the runs its training\n"
	        "                    fit was fitted on are listed with the settings outside\n"
	        "                    and their coverage given apart (JSON: each row's\n"
	        "                    \"outside_fitted_runs\", \"coverage\"'s\n"
	        "                    \"estimate_outside_rows\", \"estimate_outside_covered\")\n");
	fprintf(f,
	        "  --jobs N          training: run up to N rows at once, each in its own\n"
	        "                    process (default and 0: the processors online; 1:\n"
	        "                    one after another, in this process). The report is\n"
	        "                    the same for every N; memory grows with N\n"
	        "  --json            print JSON: \"file\", \"name\", \"kind\", \"simulated\",\n"
	        "                    \"rows\" and \"mape\". training rows: \"name\", \"source\",\n"
	        "                    \"model\", \"topology\", \"devices\", \"planner\",\n"
	        "                    \"tensor_parallel\", \"pipeline_stages\",\n"
	        "                    \"virtual_stages\", \"micro_batch\", \"micro_batches\",\n"
	        "                    \"global_batch\", \"measured\" ({\"kind\", \"value\",\n"
	        "                    \"memory_bytes_per_device\", \"flops\",\n"
	        "                    \"flops_per_iteration\"}), \"error\", \"plan\",\n"
	        "                    \"estimate\" ({\"iteration_s\", \"value\", \"error_pct\",\n"
	        "                    \"memory_bytes_per_device\", \"memory_error_pct\",\n"
	        "                    \"oom\",\n"
	        "                    \"oom_overflow_bytes\"; where the row offloads state\n"
	        "                    to the host \"host_memory_bytes_per_server\",\n"
	        "                    \"host_capacity_bytes\" (null: not stated) and,\n"
	        "                    when stated, \"host_oom\", \"host_overflow_bytes\"}),\n"
	        "                    \"simulation\" ({\"iteration_s\",\n"
	        "                    \"value\", \"error_pct\"}), \"simulation_error\"; mape:\n"
	        "                    \"estimate_pct\", \"estimate_rows\", \"simulation_pct\",\n"
	        "                    \"simulation_rows\", \"left_out_rows\". collective rows:\n"
	        "                    \"name\", \"system\", \"source\", \"topology\", \"devices\",\n"
	        "                    \"collective\", \"bus_factor\", \"points\" ([{\"bytes\",\n"
	        "                    \"algorithm\", \"protocol\" (or null),\n"
	        "                    \"measured_as\", \"measured_busbw_bps\",\n"
	        "                    \"simulated_s\", \"simulated_busbw_bps\",\n"
	        "                    \"simulated_error_pct\", \"formula_s\",\n"
	        "                    \"formula_busbw_bps\", \"formula_error_pct\"}]); mape:\n"
	        "                    \"simulation_pct\", \"simulation_points\", \"formula_pct\",\n"
	        "                    \"formula_points\". Missing figures are null\n");
	fprintf(f,
	        "  --csv             print the rows as CSV. training, one row per run:\n"
	        "                    name, model, topology, devices, planner, plan,\n"
	        "                    measured_kind, measured_value, estimated_iteration_s,\n"
	        "                    estimated_value, estimated_error_pct,\n"
	        "                    memory_bytes_per_device, oom, simulated_iteration_s,\n"
	        "                    simulated_value, simulated_error_pct, error (where a\n"
	        "                    row offloads state to the host, host_oom after oom:\n"
	        "                    true, false, empty when not offloaded or the host's\n"
	        "                    memory is not stated);\n"
	        "                    collectives, one row per message size: name,\n"
	        "                    topology, devices, collective, bytes, algorithm,\n"
	        "                    measured_busbw_bytes_per_s, simulated_s,\n"
	        "                    simulated_busbw_bytes_per_s, simulated_error_pct,\n"
	        "                    formula_s, formula_busbw_bytes_per_s,\n"
	        "                    formula_error_pct, error\n"
	        "  -h, --help        this help\n"
	        "\n"
	        "A progress line is shown on stderr while it runs, when stderr is a\n"
	        "terminal. The output is deterministic (no wall-clock figures).\n"
	        "\n"
	        "exit status: 0 the report was printed (however large its errors, and\n"
	        "even when some rows failed), 1 invalid file (diagnostics on stderr as\n"
	        "FILE:LINE: JSON.PATH: MESSAGE) or no row matched --rows, 2 usage error.\n");
}

struct args {
	const char *file;
	const char *rows;              /* glob; NULL: every row */
	const char *calibration;       /* --calibration FILE; NULL: each row's device's
	                                  shipped one where there is one */
	const struct calibration *cal[8]; /* loaded, one per file the rows' devices took */
	int n_cal;
	int n_bare;                    /* without --calibration: rows that take none */
	const char *bare_why;          /* why the first of them takes none */
	bool estimate_only, json, csv;
	int64_t jobs;                  /* training rows at once; 0: the processors online */
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){0};
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--estimate-only")) {
			a->estimate_only = true;
		} else if (!strcmp(o, "--json")) {
			a->json = true;
		} else if (!strcmp(o, "--csv")) {
			a->csv = true;
		} else if (!strcmp(o, "--jobs")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "shardlab validate: --jobs takes a count\n");
				return EXIT_USAGE;
			}
			if (cli_parse_count("validate", "--jobs", argv[++i], 1024, &a->jobs) != EXIT_OK)
				return EXIT_USAGE;
		} else if (!strcmp(o, "--calibration")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "shardlab validate: --calibration takes a file\n");
				return EXIT_USAGE;
			}
			a->calibration = argv[++i];
		} else if (!strcmp(o, "--rows")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "shardlab validate: --rows takes a pattern\n");
				return EXIT_USAGE;
			}
			a->rows = argv[++i];
		} else if (o[0] == '-') {
			fprintf(stderr, "shardlab validate: unknown option '%s' (see --help)\n", o);
			return EXIT_USAGE;
		} else if (a->file) {
			fprintf(stderr, "shardlab validate: one file at a time ('%s')\n", o);
			return EXIT_USAGE;
		} else {
			a->file = o;
		}
	}
	if (!a->file) {
		fprintf(stderr, "shardlab validate: missing FILE (see --help)\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* c's training fit when it was fitted on this set's rows (any of them,
 * row NULL; or the row named row), so that its errors here are in sample;
 * NULL otherwise. */
static const struct cal_fit *fitted_here(const struct calibration *c, const struct validation *v,
                                         const char *row)
{
	/* either training fit (the MoE layers' beside the first) */
	for (int moe = 0; c && moe < 2; moe++) {
		const struct cal_fit *tf = cost_calibration_training_fit_for(c, moe);
		if (tf && cli_fit_took(tf->fitted_on, v->name, row))
			return tf;
	}
	return NULL;
}

/* The calibrations used, under the title: one line each (each row takes
 * its device's shipped file unless --calibration names one), a line for
 * the rows that took none, and the fit's own out-of-sample error where the
 * rows below are the ones it was fitted on. */
static void calibration_line(const struct args *a, const struct validation *v)
{
	for (int k = 0; k < a->n_cal; k++) {
		printf("calibration %s (%s): %d figure%s\n", a->cal[k]->name, a->cal[k]->file,
		       a->cal[k]->n_figures, a->cal[k]->n_figures == 1 ? "" : "s");
		const struct cal_fit *tf = fitted_here(a->cal[k], v, NULL);
		char how[32];
		if (tf && tf->cv_method && !strcmp(tf->cv_method, "k-fold"))
			snprintf(how, sizeof how, "%d-fold", tf->cv_folds);
		else
			snprintf(how, sizeof how, "%s", tf && tf->cv_method ? tf->cv_method
			                                                    : "cross-validated");
		if (tf)
			printf("  in sample: fitted on %s; out of sample (%s) its MAPE is %.1f%%\n",
			       tf->fitted_on, how, tf->cv_mape_pct);
		const struct cal_fit *moved = cost_calibration_training_fit(a->cal[k]);
		if (moved && moved->from_calibration)
			printf("  its training fit transferred from %s%s%s%s, not measured on %s: "
			       "fitted on %s, cross-validated MAPE %.1f%% there\n",
			       moved->from_calibration, moved->from_device ? " (" : "",
			       moved->from_device ? moved->from_device : "",
			       moved->from_device ? ")" : "",
			       a->cal[k]->device ? a->cal[k]->device : "this device", moved->fitted_on,
			       moved->cv_mape_pct);
	}
	if (!a->n_cal && a->n_bare)
		printf("calibration none (%s): no intervals\n", a->bare_why ? a->bare_why : "-");
	else if (!a->n_cal)
		printf("calibration none: no intervals\n");
	else if (a->n_bare)
		printf("calibration none for %d row%s (%s): no intervals\n", a->n_bare,
		       a->n_bare == 1 ? "" : "s", a->bare_why ? a->bare_why : "-");
}

static cJSON *calibration_object(const struct calibration *c, const struct validation *v)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", c->name);
	cJSON_AddStringToObject(o, "file", c->file);
	cJSON_AddBoolToObject(o, "in_sample", fitted_here(c, v, NULL) != NULL);
	return o;
}

/* "calibration": the first row's (null: none); "calibrations": every one
 * the rows took, in row order; "uncalibrated_rows": those that took none. */
static void calibration_json(const struct args *a, const struct validation *v, cJSON *root)
{
	if (!a->n_cal)
		cJSON_AddNullToObject(root, "calibration");
	else
		cJSON_AddItemToObject(root, "calibration", calibration_object(a->cal[0], v));
	cJSON *all = cJSON_AddArrayToObject(root, "calibrations");
	for (int k = 0; k < a->n_cal; k++)
		cJSON_AddItemToArray(all, calibration_object(a->cal[k], v));
	cJSON_AddNumberToObject(root, "uncalibrated_rows", a->n_bare);
}

static bool selected(const struct args *a, const char *name)
{
	return !a->rows || fnmatch(a->rows, name, 0) == 0;
}

/* "validating 3/11: NAME" on stderr when it is a terminal. */
struct progress {
	bool tty, shown;
};

static void progress_show(struct progress *p, int i, int n, const char *name)
{
	if (!p->tty)
		return;
	fprintf(stderr, "\r\033[Kvalidating %d/%d: %s", i + 1, n, name);
	fflush(stderr);
	p->shown = true;
}

static void progress_clear(struct progress *p)
{
	if (p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->shown = false;
}

/* ---------------------------------------------------------- training */

/* A row's plan as the table names it. */
struct plan_label {
	char text[128];                /* "TP 8 x DP 4, PP 12 (v 4)" */
};

static void plan_text(char *buf, size_t size, const struct plan *p)
{
	const struct training *t = &p->scenario->training;
	char strat[48];
	report_strategy_summary(strat, sizeof strat, p);
	if (t->pipeline_stages <= 1)
		snprintf(buf, size, "%s", strat);
	else if (t->virtual_stages > 1)
		snprintf(buf, size, "%s, PP %lld (v %lld)", strat, (long long)t->pipeline_stages,
		         (long long)t->virtual_stages);
	else
		snprintf(buf, size, "%s, PP %lld", strat, (long long)t->pipeline_stages);
}

/* The progress of one row in this process: the planner's line, then the
 * simulator's, on stderr when it is a terminal. */
struct row_progress {
	struct cli_progress plan;
	struct cli_sim_progress sim;
};

/* One row; `quiet` in a worker (rows running side by side would share
 * one progress line). The plan's text in *label. */
static void run_training_row(struct arena *ar, const struct args *a,
                             const struct validation_training_row *row, bool quiet,
                             struct validation_training_result *out, struct plan_label *label)
{
	struct row_progress pr = {.sim = {.label = row->name, .last_pct = -1}};
	struct plan_options po = {0};
	struct validation_run_options o = {.estimate_only = a->estimate_only};
	if (!quiet) {
		cli_progress_attach(&pr.plan, "searching plans", &po);   /* megatron-search rows */
		o.plan_progress = po.progress;
		o.plan_progress_ctx = po.progress_ctx;
		if (isatty(STDERR_FILENO)) {
			o.sim_progress = cli_sim_progress_cb;
			o.sim_progress_ctx = &pr.sim;
		}
	}
	validation_run_training(ar, row, &o, out);
	cli_progress_clear(&pr.plan);
	cli_sim_progress_clear(&pr.sim);
	label->text[0] = '\0';
	if (out->plan)
		plan_text(label->text, sizeof label->text, out->plan);
}

/* A value in the unit of a measurement: "153 TFLOP/s", "12.3 s". */
static const char *measure_text(char *buf, size_t size, enum validation_measure m, double v)
{
	switch (m) {
	case MEASURE_ITERATION_S:
		return cli_si(buf, size, v, "s");
	case MEASURE_TFLOPS_PER_DEVICE:
		return cli_si(buf, size, v * 1e12, "FLOP/s");
	case MEASURE_TOKENS_PER_S_PER_DEVICE:
	case MEASURE_TOKENS_PER_S:
		return cli_si(buf, size, v, "tokens/s");
	case MEASURE_SAMPLES_PER_S:
		return cli_si(buf, size, v, "samples/s");
	case MEASURE_COUNT:
		break;
	}
	return "?";
}

/* A prediction's 90% interval in the row's unit, "9.84-11.5 s", with " *"
 * when the measurement lies outside it; "-" without one. */
static const char *range_text(char *buf, size_t size, const struct validation_training_row *row,
                              bool have, double lo, double hi, bool covered)
{
	if (!have)
		return snprintf(buf, size, "-"), buf;
	char l[48], h[48], r[100];
	cli_range_text(r, sizeof r, measure_text(l, sizeof l, row->measure, lo),
	               measure_text(h, sizeof h, row->measure, hi));
	snprintf(buf, size, "%s%s", r, covered ? "" : " *");
	return buf;
}

/* The rows whose plans have settings outside the runs their calibration
 * was fitted on: once for all when every row has the same, else one line
 * each. */
static void outside_runs_text(const struct validation_training_result *rows, int n, int wn)
{
	char w[2][1024];
	int k = 0, first = -1;
	bool same = true;
	for (int i = 0; i < n; i++) {
		const struct cal_interval *iv = &rows[i].est_iv;
		if (rows[i].error || !iv->n_outside) {
			same = same && (rows[i].error != NULL);
			continue;
		}
		cost_cal_outside_text(w[k > 0], sizeof w[0], iv->outside, iv->n_outside);
		if (k++ == 0)
			first = i;
		else
			same = same && !strcmp(w[0], w[1]);
	}
	if (!k)
		return;
	printf("  outside the runs the calibration was fitted on (an interval measures the spread "
	       "over those runs, not beyond them):\n");
	if (same && k > 1) {
		printf("    every row: %s\n", cost_cal_outside_text(w[0], sizeof w[0],
		                                                    rows[first].est_iv.outside,
		                                                    rows[first].est_iv.n_outside));
		return;
	}
	for (int i = 0; i < n; i++) {
		const struct cal_interval *iv = &rows[i].est_iv;
		if (!rows[i].error && iv->n_outside)
			printf("    %-*s  %s\n", wn, rows[i].row->name,
			       cost_cal_outside_text(w[0], sizeof w[0], iv->outside, iv->n_outside));
	}
}

static void training_text(const struct args *a, const struct validation *v,
                          const struct validation_training_result *rows,
                          const struct plan_label *plans, int n)
{
	int wn = 4, wp = 4, wi = 0;  /* wi: the intervals' column, 0 when no row has one */
	bool any_outside = false;
	for (int i = 0; i < n; i++) {
		const struct validation_training_result *r = &rows[i];
		int ln = (int)strlen(r->row->name), lp = (int)strlen(plans[i].text);
		wn = ln > wn ? ln : wn;
		wp = lp > wp ? lp : wp;
		if (r->error || !r->est_iv.have)
			continue;
		char b[2][128];
		int le = (int)strlen(range_text(b[0], 128, r->row, true, r->est_lo, r->est_hi,
		                                r->est_covered));
		int ls = r->simulated && r->sim_iv.have
			? (int)strlen(range_text(b[1], 128, r->row, true, r->sim_lo, r->sim_hi,
			                         r->sim_covered)) : 0;
		wi = le > wi ? le : wi;
		wi = ls > wi ? ls : wi;
		any_outside |= !r->est_covered || (r->simulated && r->sim_iv.have && !r->sim_covered);
	}
	wi = wi > 0 && wi < 12 ? 12 : wi;
	printf("validate %s: %d training row%s of %s\n", v->name, n, n == 1 ? "" : "s", v->file);
	calibration_line(a, v);
	printf("  %-*s  %-7s  %-*s  %-14s  %-14s  %-8s  ", wn, "row", "devices", wp, "plan",
	       "measured", "estimated", "error");
	if (wi)
		printf("%-*s  %-14s  %-8s  %s\n", wi, "90% interval", "simulated", "error",
		       "90% interval");
	else
		printf("%-14s  %s\n", "simulated", "error");
	bool any_tflops = false, any_tokens = false, any_time = false, notes = false;
	for (int i = 0; i < n; i++) {
		const struct validation_training_result *r = &rows[i];
		const struct validation_training_row *row = r->row;
		char b[6][128];
		any_tflops |= row->measure == MEASURE_TFLOPS_PER_DEVICE;
		any_tokens |= row->measure == MEASURE_TOKENS_PER_S_PER_DEVICE;
		any_time |= row->measure == MEASURE_ITERATION_S;
		printf("  %-*s  %-7" PRId64 "  %-*s  %-14s  ", wn, row->name, row->scenario->devices, wp,
		       r->error ? "-" : plans[i].text, measure_text(b[0], 48, row->measure, row->value));
		if (r->error) {
			printf("failed (below)\n");
			notes = true;
			continue;
		}
		printf("%-14s  %-8s  ", measure_text(b[1], 48, row->measure, r->est_value),
		       report_pct_text(b[2], 48, r->est_err));
		if (wi)
			printf("%-*s  ", wi, range_text(b[5], 128, row, r->est_iv.have, r->est_lo, r->est_hi,
			                                r->est_covered));
		if (r->simulated)
			printf(wi ? "%-14s  %-8s" : "%-14s  %s",
			       measure_text(b[3], 48, row->measure, r->sim_value),
			       report_pct_text(b[4], 48, r->sim_err));
		else
			printf(wi ? "%-14s  %-8s" : "%-14s  %s", "-", "-");
		if (wi)
			printf("  %s", range_text(b[5], 128, row, r->simulated && r->sim_iv.have,
			                      r->sim_lo, r->sim_hi, r->sim_covered));
		printf("%s%s\n", r->oom ? "  OOM" : "", r->host_oom ? "  host OOM" : "");
		notes |= r->oom || r->host_oom || r->sim_error;
	}
	printf("\n  error: 100 (predicted / measured - 1)");
	if (any_tflops || any_tokens)
		printf("; %s%s%s per device", any_tflops ? "FLOP/s" : "",
		       any_tflops && any_tokens ? " and " : "", any_tokens ? "tokens/s" : "");
	if (any_time && (any_tflops || any_tokens)) /* the signs run opposite ways */
		printf(";\n  seconds an iteration where a row measures time (there a negative error "
		       "is a prediction too fast)");
	printf("\n");
	if (wi)
		printf("  90%% interval: the calibration's (figures' covariance and cross-validated "
		       "residuals)%s\n", any_outside ? "; * the measurement lies outside it" : "");
	outside_runs_text(rows, n, wn);
	if (any_tflops) {
		printf("  FLOPs counted as each source counts them:");
		bool seen[FLOPS_COUNT] = {false};
		for (int i = 0; i < n; i++)
			if (rows[i].row->measure == MEASURE_TFLOPS_PER_DEVICE)
				seen[rows[i].row->flops] = true;
		static const char *const formula[FLOPS_COUNT] = {
			"96 B s l h^2 (1 + s/(6h) + V/(16 l h)), recomputation included",
			"6 N B s", "(6 N + 12 l h s) B s"};
		for (int k = 0, first = 1; k < FLOPS_COUNT; k++)
			if (seen[k]) {
				printf("%s %s = %s", first ? "" : ";", validation_flops_names[k], formula[k]);
				first = 0;
			}
		printf("\n");
	}
	if (notes) {
		printf("\nfailed predictions, left out of the MAPE or not simulated\n");
		char b[2][32];
		for (int i = 0; i < n; i++) {
			const struct validation_training_result *r = &rows[i];
			if (r->error)
				printf("  %s: %s\n", r->row->name, r->error);
			else if (r->oom)
				printf("  %s: OOM, a failed prediction (the run trained): the estimate needs %s "
				       "per device, over the %s of HBM\n",
				       r->row->name, cli_si(b[0], 32, r->memory_bytes, "B"),
				       cli_si(b[1], 32, r->hbm_bytes, "B"));
			if (!r->error && r->host_oom)
				printf("  %s: host OOM, a failed prediction (the run trained): the estimate puts "
				       "%s of offloaded state on a server's host, over its %s "
				       "(server.host.memory_GB)\n",
				       r->row->name, cli_si(b[0], 32, r->host_bytes, "B"),
				       cli_si(b[1], 32, r->host_capacity_bytes, "B"));
			if (!r->error && r->sim_error && !r->oom)
				printf("  %s: not simulated: %s\n", r->row->name, r->sim_error);
		}
	}
	struct validation_score m = validation_score_training(rows, n);
	bool mem_head = false;
	for (int i = 0; i < n; i++) {
		const struct validation_training_result *r = &rows[i];
		if (r->error || r->row->memory_bytes <= 0)
			continue;
		if (!mem_head)
			printf("\nmemory per device (peak), where the source measured it\n"
			       "  %-*s  %-10s  %-10s  %s\n", wn, "row", "measured", "estimated", "error");
		mem_head = true;
		char mb[3][32];
		printf("  %-*s  %-10s  %-10s  %s\n", wn, r->row->name,
		       cli_si(mb[0], 32, r->row->memory_bytes, "B"), cli_si(mb[1], 32, r->memory_bytes, "B"),
		       report_pct_text(mb[2], 32,
		                       validation_error_pct(r->memory_bytes, r->row->memory_bytes)));
	}
	printf("\nMAPE\n");
	/* rows the calibration was fitted on: their errors are in sample */
	const struct cal_fit *fit = NULL;
	int n_in = 0;
	for (int i = 0; i < n; i++) {
		const struct cal_fit *f =
			rows[i].error ? NULL
			              : fitted_here(rows[i].row->scenario->topo->calibration, v,
			                            rows[i].row->name);
		n_in += f != NULL;
		fit = fit ? fit : f;
	}
	if (m.estimate_n && fit && n_in >= m.estimate_n)
		printf("  estimate   %5.1f%% over %d row%s (in sample: the calibration was fitted on "
		       "them; out of sample %.1f%%)\n", m.estimate_pct, m.estimate_n,
		       m.estimate_n == 1 ? "" : "s", fit->cv_mape_pct);
	else if (m.estimate_n && fit)
		printf("  estimate   %5.1f%% over %d row%s (%d of them in sample: their calibration "
		       "was fitted on them; out of sample %.1f%%)\n", m.estimate_pct, m.estimate_n,
		       m.estimate_n == 1 ? "" : "s", n_in, fit->cv_mape_pct);
	else if (m.estimate_n)
		printf("  estimate   %5.1f%% over %d row%s\n", m.estimate_pct, m.estimate_n,
		       m.estimate_n == 1 ? "" : "s");
	else
		printf("  estimate   - (no row)\n");
	if (a->estimate_only)
		printf("  simulation - (--estimate-only)\n");
	else if (m.simulation_n)
		printf("  simulation %5.1f%% over %d row%s\n", m.simulation_pct, m.simulation_n,
		       m.simulation_n == 1 ? "" : "s");
	else
		printf("  simulation - (no row simulated)\n");
	if (m.memory_n)
		printf("  memory     %5.1f%% over %d row%s\n", m.memory_pct, m.memory_n,
		       m.memory_n == 1 ? "" : "s");
	if (m.host_rows)  /* the device's and the host's apart (a row over both in both) */
		printf("  %d of %d row%s predicted OOM though the run trained (%d over the HBM, %d over "
		       "a server's host memory; failed predictions, their times counted)\n",
		       m.oom_rows, n, n == 1 ? "" : "s", m.oom, m.oom_host);
	else
		printf("  %d of %d row%s predicted OOM though the run trained (failed predictions, "
		       "their times counted)\n", m.oom, n, n == 1 ? "" : "s");
	printf("  %d of %d row%s left out (could not be planned or estimated)\n", m.failed, n,
	       n == 1 ? "" : "s");
	printf("\ncoverage (measurements inside their 90%% intervals)\n");
	if (m.estimate_iv_n)
		printf("  estimate   %d of %d (%.0f%%)\n", m.estimate_covered, m.estimate_iv_n,
		       100.0 * m.estimate_covered / m.estimate_iv_n);
	if (m.estimate_outside_n) {
		int in_n = m.estimate_iv_n - m.estimate_outside_n;
		int in_c = m.estimate_covered - m.estimate_outside_covered;
		printf("             ");
		if (in_n)
			printf("inside the calibration's runs %d of %d (%.0f%%), ", in_c, in_n,
			       100.0 * in_c / in_n);
		printf("outside %s %d of %d (%.0f%%)\n", in_n ? "them" : "the calibration's runs",
		       m.estimate_outside_covered, m.estimate_outside_n,
		       100.0 * m.estimate_outside_covered / m.estimate_outside_n);
	}
	if (!m.estimate_iv_n)
		printf("  estimate   - (%s)\n", n > 0 && !rows[0].error && rows[0].est_iv.why
		                                 ? rows[0].est_iv.why : "no interval");
	if (m.simulation_iv_n)
		printf("  simulation %d of %d (%.0f%%)\n", m.simulation_covered, m.simulation_iv_n,
		       100.0 * m.simulation_covered / m.simulation_iv_n);
	else
		printf("  simulation - (no simulated row with an interval)\n");
}

static void json_number_or_null(cJSON *o, const char *key, bool have, double v)
{
	if (have && isfinite(v))
		cJSON_AddNumberToObject(o, key, v);
	else
		cJSON_AddNullToObject(o, key);
}

/* A row's interval: "interval" {"lo", "hi"} in the row's unit, "covered";
 * or null with "interval_note". */
static void interval_json(cJSON *o, const struct cal_interval *iv, double lo, double hi,
                          bool covered)
{
	if (!iv->have) {
		cJSON_AddNullToObject(o, "interval");
		cJSON_AddStringToObject(o, "interval_note", iv->why);
		return;
	}
	cJSON *j = cJSON_AddObjectToObject(o, "interval");
	cJSON_AddNumberToObject(j, "lo", lo);
	cJSON_AddNumberToObject(j, "hi", hi);
	cJSON_AddNumberToObject(j, "lo_s", iv->lo_s);
	cJSON_AddNumberToObject(j, "hi_s", iv->hi_s);
	cJSON_AddBoolToObject(o, "covered", covered);
}

static cJSON *training_json(const struct args *a, const struct validation *v,
                            const struct validation_training_result *rows,
                            const struct plan_label *plans, int n)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "file", v->file);
	cJSON_AddStringToObject(root, "name", v->name);
	cJSON_AddStringToObject(root, "kind", validation_kind_names[v->kind]);
	calibration_json(a, v, root);
	cJSON *list = cJSON_AddArrayToObject(root, "rows");
	for (int i = 0; i < n; i++) {
		const struct validation_training_result *r = &rows[i];
		const struct validation_training_row *row = r->row;
		const struct scenario *s = row->scenario;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", row->name);
		cJSON_AddStringToObject(o, "source", row->source);
		cJSON_AddStringToObject(o, "model", s->graph->name);
		cJSON_AddStringToObject(o, "topology", s->topo->name);
		cJSON_AddNumberToObject(o, "devices", (double)s->devices);
		cJSON_AddStringToObject(o, "planner", planner_names[row->planner]);
		json_number_or_null(o, "tensor_parallel", row->tensor_parallel > 0,
		                    (double)row->tensor_parallel);
		cJSON_AddNumberToObject(o, "pipeline_stages", (double)s->training.pipeline_stages);
		cJSON_AddNumberToObject(o, "virtual_stages", (double)s->training.virtual_stages);
		json_number_or_null(o, "micro_batch", row->micro_batch > 0, (double)row->micro_batch);
		cJSON_AddNumberToObject(o, "micro_batches", (double)s->training.micro_batches);
		cJSON_AddNumberToObject(o, "global_batch", (double)s->training.global_batch);
		cJSON *m = cJSON_AddObjectToObject(o, "measured");
		cJSON_AddStringToObject(m, "kind", validation_measure_names[row->measure]);
		cJSON_AddNumberToObject(m, "value", row->value);
		json_number_or_null(m, "memory_bytes_per_device", row->memory_bytes > 0,
		                    row->memory_bytes);
		if (row->measure == MEASURE_TFLOPS_PER_DEVICE) {
			cJSON_AddStringToObject(m, "flops", validation_flops_names[row->flops]);
			cJSON_AddNumberToObject(m, "flops_per_iteration", row->flops_per_iteration);
		}
		if (r->error) {
			cJSON_AddStringToObject(o, "error", r->error);
			cJSON_AddNullToObject(o, "plan");
			cJSON_AddNullToObject(o, "estimate");
			cJSON_AddNullToObject(o, "simulation");
			cJSON_AddItemToArray(list, o);
			continue;
		}
		cJSON_AddNullToObject(o, "error");
		cJSON_AddStringToObject(o, "plan", plans[i].text);
		cJSON *e = cJSON_AddObjectToObject(o, "estimate");
		cJSON_AddNumberToObject(e, "iteration_s", r->est_s);
		cJSON_AddNumberToObject(e, "value", r->est_value);
		cJSON_AddNumberToObject(e, "error_pct", r->est_err);
		interval_json(e, &r->est_iv, r->est_lo, r->est_hi, r->est_covered);
		cJSON_AddItemToObject(e, "outside_fitted_runs", cli_interval_outside_json(&r->est_iv));
		cJSON_AddNumberToObject(e, "memory_bytes_per_device", r->memory_bytes);
		json_number_or_null(e, "memory_error_pct", row->memory_bytes > 0,
		                    validation_error_pct(r->memory_bytes, row->memory_bytes));
		report_json_oom(e, r->memory_bytes, r->hbm_bytes);
		if (r->host_bytes > 0) {
			cJSON_AddNumberToObject(e, "host_memory_bytes_per_server", r->host_bytes);
			json_number_or_null(e, "host_capacity_bytes", r->host_capacity_bytes > 0,
			                    r->host_capacity_bytes);
			report_json_host_oom(e, r->host_bytes, r->host_capacity_bytes);
		}
		if (r->simulated) {
			cJSON *sj = cJSON_AddObjectToObject(o, "simulation");
			cJSON_AddNumberToObject(sj, "iteration_s", r->sim_s);
			cJSON_AddNumberToObject(sj, "value", r->sim_value);
			cJSON_AddNumberToObject(sj, "error_pct", r->sim_err);
			interval_json(sj, &r->sim_iv, r->sim_lo, r->sim_hi, r->sim_covered);
		} else {
			cJSON_AddNullToObject(o, "simulation");
		}
		if (r->sim_error)
			cJSON_AddStringToObject(o, "simulation_error", r->sim_error);
		cJSON_AddItemToArray(list, o);
	}
	struct validation_score m = validation_score_training(rows, n);
	cJSON *mj = cJSON_AddObjectToObject(root, "mape");
	json_number_or_null(mj, "estimate_pct", m.estimate_n > 0, m.estimate_pct);
	cJSON_AddNumberToObject(mj, "estimate_rows", m.estimate_n);
	json_number_or_null(mj, "simulation_pct", m.simulation_n > 0, m.simulation_pct);
	cJSON_AddNumberToObject(mj, "simulation_rows", m.simulation_n);
	cJSON_AddNumberToObject(mj, "left_out_rows", n - m.estimate_n);
	cJSON *cj = cJSON_AddObjectToObject(root, "coverage");
	cJSON_AddNumberToObject(cj, "level", 0.9);
	cJSON_AddNumberToObject(cj, "estimate_rows", m.estimate_iv_n);
	cJSON_AddNumberToObject(cj, "estimate_covered", m.estimate_covered);
	json_number_or_null(cj, "estimate_pct", m.estimate_iv_n > 0,
	                    100.0 * m.estimate_covered / (m.estimate_iv_n ? m.estimate_iv_n : 1));
	cJSON_AddNumberToObject(cj, "estimate_outside_rows", m.estimate_outside_n);
	cJSON_AddNumberToObject(cj, "estimate_outside_covered", m.estimate_outside_covered);
	cJSON_AddNumberToObject(cj, "simulation_rows", m.simulation_iv_n);
	cJSON_AddNumberToObject(cj, "simulation_covered", m.simulation_covered);
	json_number_or_null(cj, "simulation_pct", m.simulation_iv_n > 0,
	                    100.0 * m.simulation_covered /
	                    (m.simulation_iv_n ? m.simulation_iv_n : 1));
	cJSON_AddBoolToObject(root, "simulated", !a->estimate_only);
	return root;
}

static void csv_opt(struct cli_csv *c, bool have, double v)
{
	if (have && isfinite(v))
		cli_csv_num(c, v);
	else
		cli_csv_str(c, NULL);
}

/* A prediction's 90% interval in the row's unit and whether the
 * measurement lies inside it: three cells, empty without one. */
static void csv_interval(struct cli_csv *c, bool have, double lo, double hi, bool covered)
{
	csv_opt(c, have, lo);
	csv_opt(c, have, hi);
	cli_csv_str(c, have ? (covered ? "true" : "false") : NULL);
}

static void training_csv(const struct validation_training_result *rows,
                         const struct plan_label *plans, int n)
{
	static const char *const cols[] = {
		"name", "model", "topology", "devices", "planner", "plan", "measured_kind",
		"measured_value", "estimated_iteration_s", "estimated_value", "estimated_error_pct",
		"estimated_lo", "estimated_hi", "estimated_covered", "memory_bytes_per_device", "oom", "simulated_iteration_s", "simulated_value",
		"simulated_error_pct", "simulated_lo", "simulated_hi", "simulated_covered", "error",
		NULL};
	/* with a row that puts state in host memory, its verdict after oom */
	static const char *const host_cols[] = {
		"name", "model", "topology", "devices", "planner", "plan", "measured_kind",
		"measured_value", "estimated_iteration_s", "estimated_value", "estimated_error_pct",
		"estimated_lo", "estimated_hi", "estimated_covered", "memory_bytes_per_device", "oom", "host_oom", "simulated_iteration_s",
		"simulated_value", "simulated_error_pct", "simulated_lo", "simulated_hi",
		"simulated_covered", "error", NULL};
	bool host = validation_score_training(rows, n).host_rows > 0;
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, host ? host_cols : cols);
	for (int i = 0; i < n; i++) {
		const struct validation_training_result *r = &rows[i];
		const struct validation_training_row *row = r->row;
		const struct scenario *s = row->scenario;
		bool est = !r->error;
		cli_csv_str(&c, row->name);
		cli_csv_str(&c, s->graph->name);
		cli_csv_str(&c, s->topo->name);
		cli_csv_int(&c, s->devices);
		cli_csv_str(&c, planner_names[row->planner]);
		cli_csv_str(&c, est ? plans[i].text : NULL);
		cli_csv_str(&c, validation_measure_names[row->measure]);
		cli_csv_num(&c, row->value);
		csv_opt(&c, est, r->est_s);
		csv_opt(&c, est, r->est_value);
		csv_opt(&c, est, r->est_err);
		csv_interval(&c, est && r->est_iv.have, r->est_lo, r->est_hi, r->est_covered);
		csv_opt(&c, est, r->memory_bytes);
		cli_csv_str(&c, est ? (r->oom ? "true" : "false") : NULL);
		if (host)  /* empty where not offloaded or not checked */
			cli_csv_str(&c, est && cli_host_verdict(r->host_bytes, r->host_capacity_bytes)
			                        ? (r->host_oom ? "true" : "false") : NULL);
		csv_opt(&c, r->simulated, r->sim_s);
		csv_opt(&c, r->simulated, r->sim_value);
		csv_opt(&c, r->simulated, r->sim_err);
		csv_interval(&c, r->simulated && r->sim_iv.have, r->sim_lo, r->sim_hi, r->sim_covered);
		cli_csv_str(&c, r->error ? r->error : r->sim_error);
		cli_csv_end(&c);
	}
}

/* ------------------------------------------- training rows side by side */

/* What a worker sends back: a row's result without pointers. */
struct trow_wire {
	char plan[128];
	char error[400], sim_error[400];
	bool has_error, has_sim_error, oom, host_oom, simulated;
	double memory_bytes, host_bytes, host_capacity_bytes, est_s, est_value, est_err, sim_s, sim_value, sim_err;
	struct cal_interval est_iv, sim_iv;    /* their `why`: static text, the same in the
	                                          parent (a forked image) */
	double est_lo, est_hi, sim_lo, sim_hi;
	bool est_covered, sim_covered;
};

static void copy_text(char *dst, size_t size, const char *src, bool *has)
{
	*has = src != NULL;
	snprintf(dst, size, "%s", src ? src : "");
}

/* The worker: runs the row and writes its results in one write (a pipe
 * takes up to PIPE_BUF bytes at once), then exits without returning. */
static _Noreturn void row_worker(const struct args *a, const struct validation_training_row *row,
                                 int fd)
{
	struct arena *ar = arena_new();
	struct validation_training_result t;
	struct plan_label label;
	struct trow_wire w;
	memset(&w, 0, sizeof w);
	if (ar) {
		run_training_row(ar, a, row, true, &t, &label);
		snprintf(w.plan, sizeof w.plan, "%s", label.text);
		copy_text(w.error, sizeof w.error, t.error, &w.has_error);
		copy_text(w.sim_error, sizeof w.sim_error, t.sim_error, &w.has_sim_error);
		w.oom = t.oom;
		w.host_oom = t.host_oom;
		w.host_bytes = t.host_bytes;
		w.host_capacity_bytes = t.host_capacity_bytes;
		w.simulated = t.simulated;
		w.memory_bytes = t.memory_bytes;
		w.est_s = t.est_s;
		w.est_value = t.est_value;
		w.est_err = t.est_err;
		w.sim_s = t.sim_s;
		w.sim_value = t.sim_value;
		w.sim_err = t.sim_err;
		w.est_iv = t.est_iv;
		w.sim_iv = t.sim_iv;
		w.est_lo = t.est_lo;
		w.est_hi = t.est_hi;
		w.sim_lo = t.sim_lo;
		w.sim_hi = t.sim_hi;
		w.est_covered = t.est_covered;
		w.sim_covered = t.sim_covered;
	}
	/* Freed before _exit, which leaves no frame that holds it: memcheck
	 * would call the arena lost. */
	bool ran = ar != NULL;
	arena_free(ar);
	_Static_assert(sizeof(struct trow_wire) <= PIPE_BUF, "one atomic write");
	bool ok = ran && write(fd, &w, sizeof w) == (ssize_t)sizeof w;
	_exit(ok ? 0 : 1);
}

/* A worker's row back in the parent, or why there is none. */
static void row_back(struct arena *ar, const struct validation_training_row *row, int fd,
                     int status, struct validation_training_result *out,
                     struct plan_label *label)
{
	struct trow_wire w;
	size_t got = 0;
	while (got < sizeof w) {
		ssize_t k = read(fd, (char *)&w + got, sizeof w - got);
		if (k <= 0)
			break;
		got += (size_t)k;
	}
	*out = (struct validation_training_result){
		.row = row, .hbm_bytes = row->scenario->topo->device.hbm_bytes};
	if (got != sizeof w || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		out->error = WIFSIGNALED(status)
		                 ? arena_printf(ar, "the row's process ended on signal %d",
		                                WTERMSIG(status))
		                 : "the row's process failed (out of memory?)";
		return;
	}
	snprintf(label->text, sizeof label->text, "%s", w.plan);
	out->error = w.has_error ? arena_strdup(ar, w.error) : NULL;
	out->sim_error = w.has_sim_error ? arena_strdup(ar, w.sim_error) : NULL;
	out->oom = w.oom;
	out->host_oom = w.host_oom;
	out->host_bytes = w.host_bytes;
	out->host_capacity_bytes = w.host_capacity_bytes;
	out->simulated = w.simulated;
	out->memory_bytes = w.memory_bytes;
	out->est_s = w.est_s;
	out->est_value = w.est_value;
	out->est_err = w.est_err;
	out->sim_s = w.sim_s;
	out->sim_value = w.sim_value;
	out->sim_err = w.sim_err;
	out->est_iv = w.est_iv;
	out->sim_iv = w.sim_iv;
	out->est_lo = w.est_lo;
	out->est_hi = w.est_hi;
	out->sim_lo = w.sim_lo;
	out->sim_hi = w.sim_hi;
	out->est_covered = w.est_covered;
	out->sim_covered = w.sim_covered;
}

/* Rows idx[0..n-1] in up to `jobs` workers at once; false when none
 * could be started (the caller runs them here instead). */
static bool run_rows_forked(struct arena *ar, const struct args *a, const struct validation *v,
                            const int *idx, int n, int jobs,
                            struct validation_training_result *rows, struct plan_label *plans)
{
	pid_t *pid = arena_calloc(ar, (size_t)n + 1, sizeof *pid);
	int *fd = arena_calloc(ar, (size_t)n + 1, sizeof *fd);
	if (!pid || !fd)
		return false;
	struct progress pr = {.tty = isatty(STDERR_FILENO)};
	int next = 0, running = 0, done = 0;
	fflush(NULL);
	while (done < n) {
		while (running < jobs && next < n) {
			int p[2];
			if (pipe(p) != 0)
				break;
			pid_t c = fork();
			if (c < 0) {
				close(p[0]);
				close(p[1]);
				break;
			}
			if (c == 0) {
				close(p[0]);
				row_worker(a, &v->training[idx[next]], p[1]);
			}
			close(p[1]);
			pid[next] = c;
			fd[next] = p[0];
			next++;
			running++;
		}
		if (running == 0)
			return false; /* nothing could start: not even one fork */
		int status;
		pid_t c = waitpid(-1, &status, 0);
		if (c < 0)
			return false;
		for (int k = 0; k < next; k++)
			if (pid[k] == c) {
				row_back(ar, &v->training[idx[k]], fd[k], status, &rows[k], &plans[k]);
				close(fd[k]);
				pid[k] = 0;
				running--;
				progress_show(&pr, done++, n, v->training[idx[k]].name);
			}
	}
	progress_clear(&pr);
	return true;
}

static int validate_training(struct arena *ar, const struct args *a, const struct validation *v)
{
	struct validation_training_result *rows =
		arena_calloc(ar, (size_t)v->n_rows + 1, sizeof *rows);
	struct plan_label *plans = arena_calloc(ar, (size_t)v->n_rows + 1, sizeof *plans);
	int *idx = arena_calloc(ar, (size_t)v->n_rows + 1, sizeof *idx);
	if (!rows || !plans || !idx) {
		fprintf(stderr, "shardlab validate: out of memory\n");
		return EXIT_INVALID;
	}
	int n = 0;
	for (int i = 0; i < v->n_rows; i++)
		if (selected(a, v->training[i].name))
			idx[n++] = i;
	long online = sysconf(_SC_NPROCESSORS_ONLN);
	int jobs = a->jobs > 0 ? (int)a->jobs : online > 0 ? (int)online : 1;
	if (jobs > n)
		jobs = n;
	/* The estimates alone take milliseconds: no worker for them. */
	if (jobs <= 1 || a->estimate_only || !run_rows_forked(ar, a, v, idx, n, jobs, rows, plans)) {
		struct progress pr = {.tty = isatty(STDERR_FILENO)};
		for (int k = 0; k < n; k++) {
			progress_show(&pr, idx[k], v->n_rows, v->training[idx[k]].name);
			run_training_row(ar, a, &v->training[idx[k]], false, &rows[k], &plans[k]);
		}
		progress_clear(&pr);
	}
	if (n == 0) {
		fprintf(stderr, "shardlab validate: no row of %s matches '%s'\n", v->file, a->rows);
		return EXIT_INVALID;
	}
	if (a->json)
		return report_print_json(training_json(a, v, rows, plans, n), "validate");
	if (a->csv) {
		training_csv(rows, plans, n);
		return EXIT_OK;
	}
	training_text(a, v, rows, plans, n);
	return EXIT_OK;
}

/* ------------------------------------------------------- collectives */

/* "tree LL": the algorithm, with the library's protocol when it names one. */
static const char *algo_text(char *buf, size_t size, const struct validation_point_result *c)
{
	snprintf(buf, size, "%s%s%s", collective_algo_names[c->algo], c->protocol ? " " : "",
	         c->protocol ? c->protocol : "");
	return buf;
}

/* "1 GiB", "16 MiB" for powers of two; "1 GB" otherwise. */
static const char *size_text(char *buf, size_t size, double bytes)
{
	static const struct {
		double unit;
		const char *name;
	} bin[] = {{1099511627776.0, "TiB"}, {1073741824.0, "GiB"}, {1048576.0, "MiB"}, {1024.0, "KiB"}};
	for (size_t i = 0; i < SL_COUNTOF(bin); i++)
		if (bytes >= bin[i].unit && fmod(bytes, bin[i].unit) == 0) {
			snprintf(buf, size, "%.0f %s", bytes / bin[i].unit, bin[i].name);
			return buf;
		}
	return cli_si(buf, size, bytes, "B");
}

static void collectives_text(const struct args *a, const struct validation *v,
                             const struct validation_collective_result *rows, int n)
{
	int wn = 4, wa = 9;
	for (int i = 0; i < n; i++) {
		int ln = (int)strlen(rows[i].row->name);
		wn = ln > wn ? ln : wn;
		for (int k = 0; k < rows[i].row->n_points; k++) {
			char b[48];
			int la = (int)strlen(algo_text(b, sizeof b, &rows[i].points[k]));
			wa = la > wa ? la : wa;
		}
	}
	printf("validate %s: %d collective row%s of %s\n", v->name, n, n == 1 ? "" : "s", v->file);
	calibration_line(a, v);
	printf("  %-*s  %-5s  %-8s  %-*s  %-22s  %-9s  %-8s  %-9s  %s\n", wn, "row", "ranks", "size",
	       wa, "algorithm", "measured busbw", "simulated", "error", "formula", "error");
	bool notes = false;
	for (int i = 0; i < n; i++) {
		const struct validation_collective_row *row = rows[i].row;
		for (int k = 0; k < row->n_points; k++) {
			const struct validation_point_result *c = &rows[i].points[k];
			char b[8][48], meas[64], at[48];
			cli_si(b[0], 48, c->pt->busbw_bps, "B/s");
			if (c->pt->measured_algbw)
				snprintf(meas, sizeof meas, "%s (algbw %s)", b[0],
				         cli_si(b[1], 48, c->pt->busbw_bps / 1e9 /
				                validation_bus_factor(row->collective, row->devices), ""));
			else
				snprintf(meas, sizeof meas, "%s", b[0]);
			char ranks[16] = "";
			if (k == 0)
				snprintf(ranks, sizeof ranks, "%" PRId64, row->devices);
			printf("  %-*s  %-5s  %-8s  %-*s  %-22s  ", wn, k == 0 ? row->name : "", ranks,
			       size_text(b[2], 48, c->pt->bytes), wa, algo_text(at, sizeof at, c), meas);
			if (c->simulated)
				printf("%-9s  %-8s  ", cli_si(b[3], 48, c->sim_busbw_bps, "B/s"),
				       report_pct_text(b[4], 48, c->sim_err));
			else
				printf("%-9s  %-8s  ", "-", "-");
			printf("%-9s  %s\n", cli_si(b[5], 48, c->formula_busbw_bps, "B/s"),
			       report_pct_text(b[6], 48, c->formula_err));
			notes |= c->sim_error != NULL;
		}
	}
	printf("\n  busbw = S / t x 2(n-1)/n for all-reduce, x (n-1)/n for the others "
	       "(nccl-tests);\n  a measured algbw (GB/s) is converted the same way; error: 100 "
	       "(predicted / measured - 1)\n");
	if (notes) {
		printf("\nnot simulated\n");
		for (int i = 0; i < n; i++)
			for (int k = 0; k < rows[i].row->n_points; k++)
				if (rows[i].points[k].sim_error) {
					char b[32];
					printf("  %s, %s: %s\n", rows[i].row->name,
					       size_text(b, sizeof b, rows[i].points[k].pt->bytes),
					       rows[i].points[k].sim_error);
				}
	}
	struct validation_score m = validation_score_collectives(rows, n);
	printf("\nMAPE\n");
	if (a->estimate_only)
		printf("  simulation - (--estimate-only)\n");
	else if (m.simulation_n)
		printf("  simulation %5.1f%% over %d size%s\n", m.simulation_pct, m.simulation_n,
		       m.simulation_n == 1 ? "" : "s");
	else
		printf("  simulation - (nothing simulated)\n");
	printf("  formula    %5.1f%% over %d size%s\n", m.estimate_pct, m.estimate_n,
	       m.estimate_n == 1 ? "" : "s");
}

static cJSON *collectives_json(const struct args *a, const struct validation *v,
                               const struct validation_collective_result *rows, int n)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "file", v->file);
	cJSON_AddStringToObject(root, "name", v->name);
	cJSON_AddStringToObject(root, "kind", validation_kind_names[v->kind]);
	calibration_json(a, v, root);
	cJSON *list = cJSON_AddArrayToObject(root, "rows");
	for (int i = 0; i < n; i++) {
		const struct validation_collective_row *row = rows[i].row;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", row->name);
		if (row->system)
			cJSON_AddStringToObject(o, "system", row->system);
		else
			cJSON_AddNullToObject(o, "system");
		cJSON_AddStringToObject(o, "source", row->source);
		cJSON_AddStringToObject(o, "topology", row->topo->name);
		cJSON_AddNumberToObject(o, "devices", (double)row->devices);
		cJSON_AddStringToObject(o, "collective", step_kind_names[row->collective]);
		cJSON_AddNumberToObject(o, "bus_factor",
		                        validation_bus_factor(row->collective, row->devices));
		cJSON *pts = cJSON_AddArrayToObject(o, "points");
		for (int k = 0; k < row->n_points; k++) {
			const struct validation_point_result *c = &rows[i].points[k];
			cJSON *p = cJSON_CreateObject();
			cJSON_AddNumberToObject(p, "bytes", c->pt->bytes);
			cJSON_AddStringToObject(p, "algorithm", collective_algo_names[c->algo]);
			if (c->protocol)
				cJSON_AddStringToObject(p, "protocol", c->protocol);
			else
				cJSON_AddNullToObject(p, "protocol");
			cJSON_AddStringToObject(p, "measured_as", c->pt->measured_algbw ? "algbw" : "busbw");
			cJSON_AddNumberToObject(p, "measured_busbw_bps", c->pt->busbw_bps);
			json_number_or_null(p, "simulated_s", c->simulated, c->sim_s);
			json_number_or_null(p, "simulated_busbw_bps", c->simulated, c->sim_busbw_bps);
			json_number_or_null(p, "simulated_error_pct", c->simulated, c->sim_err);
			if (c->sim_error)
				cJSON_AddStringToObject(p, "simulation_error", c->sim_error);
			cJSON_AddNumberToObject(p, "formula_s", c->formula_s);
			cJSON_AddNumberToObject(p, "formula_busbw_bps", c->formula_busbw_bps);
			cJSON_AddNumberToObject(p, "formula_error_pct", c->formula_err);
			cJSON_AddItemToArray(pts, p);
		}
		cJSON_AddItemToArray(list, o);
	}
	struct validation_score m = validation_score_collectives(rows, n);
	cJSON *mj = cJSON_AddObjectToObject(root, "mape");
	json_number_or_null(mj, "simulation_pct", m.simulation_n > 0, m.simulation_pct);
	cJSON_AddNumberToObject(mj, "simulation_points", m.simulation_n);
	json_number_or_null(mj, "formula_pct", m.estimate_n > 0, m.estimate_pct);
	cJSON_AddNumberToObject(mj, "formula_points", m.estimate_n);
	cJSON_AddBoolToObject(root, "simulated", !a->estimate_only);
	return root;
}

static void collectives_csv(const struct validation_collective_result *rows, int n)
{
	static const char *const cols[] = {
		"name", "topology", "devices", "collective", "bytes", "algorithm",
		"measured_busbw_bytes_per_s", "simulated_s", "simulated_busbw_bytes_per_s",
		"simulated_error_pct", "formula_s", "formula_busbw_bytes_per_s", "formula_error_pct",
		"error", NULL};
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, cols);
	for (int i = 0; i < n; i++) {
		const struct validation_collective_row *row = rows[i].row;
		for (int k = 0; k < row->n_points; k++) {
			const struct validation_point_result *p = &rows[i].points[k];
			cli_csv_str(&c, row->name);
			cli_csv_str(&c, row->topo->name);
			cli_csv_int(&c, row->devices);
			cli_csv_str(&c, step_kind_names[row->collective]);
			cli_csv_num(&c, p->pt->bytes);
			cli_csv_str(&c, collective_algo_names[p->algo]);
			cli_csv_num(&c, p->pt->busbw_bps);
			csv_opt(&c, p->simulated, p->sim_s);
			csv_opt(&c, p->simulated, p->sim_busbw_bps);
			csv_opt(&c, p->simulated, p->sim_err);
			cli_csv_num(&c, p->formula_s);
			cli_csv_num(&c, p->formula_busbw_bps);
			cli_csv_num(&c, p->formula_err);
			cli_csv_str(&c, p->sim_error);
			cli_csv_end(&c);
		}
	}
}

static int validate_collectives(struct arena *ar, const struct args *a,
                                const struct validation *v)
{
	struct validation_collective_result *rows =
		arena_calloc(ar, (size_t)v->n_rows + 1, sizeof *rows);
	if (!rows) {
		fprintf(stderr, "shardlab validate: out of memory\n");
		return EXIT_INVALID;
	}
	struct progress pr = {.tty = isatty(STDERR_FILENO)};
	int n = 0;
	for (int i = 0; i < v->n_rows; i++) {
		const struct validation_collective_row *row = &v->collectives[i];
		if (!selected(a, row->name))
			continue;
		progress_show(&pr, i, v->n_rows, row->name);
		struct validation_run_options o = {.estimate_only = a->estimate_only};
		if (!validation_run_collective(ar, row, &o, &rows[n++])) {
			progress_clear(&pr);
			fprintf(stderr, "shardlab validate: out of memory\n");
			return EXIT_INVALID;
		}
	}
	progress_clear(&pr);
	if (n == 0) {
		fprintf(stderr, "shardlab validate: no row of %s matches '%s'\n", v->file, a->rows);
		return EXIT_INVALID;
	}
	if (a->json)
		return report_print_json(collectives_json(a, v, rows, n), "validate");
	if (a->csv) {
		collectives_csv(rows, n);
		return EXIT_OK;
	}
	collectives_text(a, v, rows, n);
	return EXIT_OK;
}

/* ---------------------------------------------------------------- entry */

int cmd_validate(int argc, char **argv)
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
	struct validation *v = ar ? validation_load(ar, a.file, &d) : NULL;
	if (v && !a.calibration && v->kind == VALIDATION_COLLECTIVES)
		a.calibration = "none";
	if (v && !(a.calibration && !strcmp(a.calibration, "none"))) {
		/* the rows --rows selects: one it leaves out is not priced, so a
		 * calibration of one device's rows applies to a mixed set; without
		 * --calibration each training row takes its device's shipped one,
		 * where there is one, as estimate and simulate do. Collective rows
		 * keep the links' own figures unless asked: the shipped files are
		 * fitted to training runs and kernels, none to a collective
		 * benchmark, and their NIC figure is one under training load. */
		for (int i = 0; v && i < v->n_rows; i++) {
			bool train = v->kind == VALIDATION_TRAINING;
			if (!selected(&a, train ? v->training[i].name : v->collectives[i].name))
				continue;
			struct topology *t = train ? v->training[i].scenario->topo : v->collectives[i].topo;
			enum framework fw = train ? v->training[i].scenario->training.framework
			                          : FRAMEWORK_MEGATRON;
			const char *use = a.calibration ? a.calibration
			                                : cli_default_calibration_file(ar, t, fw);
			if (!use) {
				if (!a.n_bare++)
					a.bare_why = t->calibration_file
					                     ? arena_printf(ar, "the topology %s names calibration "
					                                        "\"none\"", t->name)
					                     : arena_printf(ar, "no shipped calibration for the %s",
					                                    t->device.kind ? t->device.kind
					                                                   : "device");
				continue;
			}
			if (!cli_apply_calibration(ar, use, t, fw, &d)) {
				v = NULL;
				break;
			}
			bool have = false;
			for (int k = 0; k < a.n_cal; k++)
				have = have || !strcmp(a.cal[k]->file, t->calibration->file);
			if (!have && a.n_cal < (int)SL_COUNTOF(a.cal))
				a.cal[a.n_cal++] = t->calibration;
		}
	}
	cli_print_diags(&d);
	diag_list_free(&d);
	if (!v)
		rc = EXIT_INVALID;
	else if (v->kind == VALIDATION_TRAINING)
		rc = validate_training(ar, &a, v);
	else
		rc = validate_collectives(ar, &a, v);
	arena_free(ar);
	return rc;
}
