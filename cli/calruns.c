/* calruns.c — `shardlab calibrate --runs VALIDATION.json`: end-to-end
 * figures (train.gemm_efficiency, train.nic_efficiency,
 * train.op_overhead_us, or those --figures names) fitted to a validation
 * file's measured training iterations through their estimates
 * (validation/fit.c), printed with their standard errors, warnings where
 * a figure is not identifiable, and the cross-validated error; with --out,
 * written as a calibration file (the base calibration's figures and fits,
 * then the training fit's) whose training fit carries the figures'
 * covariance and the cross-validated residual spread that prediction
 * intervals use (docs/validation.md).
 *
 * Figures print with fixed formats, so the same inputs give the same bytes.
 */
#include <cjson/cJSON.h>
#include <fnmatch.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "validation.h"

void calibrate_runs_help(FILE *f)
{
	fprintf(f,
	        "       shardlab calibrate --runs VALIDATION.json [--figures NAMES]\n"
	        "                               [--rows PATTERN] [--loss squares|huber]\n"
	        "                               [--calibration BASE] [--name NAME]\n"
	        "                               [--description TEXT] [--also-for KINDS]\n"
	        "                               [--json] [--out FILE]\n"
	        "\n"
	        "With --runs, end-to-end figures fitted to measured training\n"
	        "iterations: a validation file of training rows (docs/validation.md),\n"
	        "each row planned and estimated once, then the figures fitted to the\n"
	        "rows' measurements through their estimates by bounded nonlinear least\n"
	        "squares on the relative errors (GSL). Never a factor per row:\n"
	        "  train.gemm_efficiency  ratio [0.5, 1.5]: GEMM rate under training\n"
	        "                         load over the device's (clocks, SMs the\n"
	        "                         collectives take); at most the device's\n"
	        "                         peak\n"
	        "  train.comm_efficiency  ratio [0.5, 1.5]: every tier's and NIC's\n"
	        "                         bandwidth under training load over the\n"
	        "                         topology's; at most every link's line rate\n"
	        "  train.op_overhead_us   us [0, 200]: the framework's time per op per\n"
	        "                         forward or backward pass\n"
	        "  train.nic_efficiency   ratio [0.5, 1.5]: the NICs' bandwidth under\n"
	        "                         training load over what comm_efficiency\n"
	        "                         leaves (traffic between servers); at most\n"
	        "                         the NICs' line rate\n"
	        "  train.moe_overhead_us  us [0, 5000]: the host's time per\n"
	        "                         mixture-of-experts layer per forward or\n"
	        "                         backward pass beyond its kernels (its wait\n"
	        "                         for the experts' token counts); seen only\n"
	        "                         by MoE rows\n"
	        "A ratio's upper bound is the lower of 1.5 and its physical cap on the\n"
	        "rows' topologies (1 / matmul_efficiency, 1 / the links' efficiency);\n"
	        "ratios start at the middle of their bounds.\n"
	        "Prints each figure with its standard error, a warning for each figure\n"
	        "not identifiable (Jacobian singular or ill-conditioned, standard error\n"
	        "over half the value, or at a bound), the rows' errors in sample and out\n"
	        "of sample, the cross-validated MAPE and maximum (leave-one-out;\n"
	        "10-fold above 20 rows), and the runs fitted: each setting's range or\n"
	        "values over the rows' plans (devices, TP, PP, CP, EP, sequence, ZeRO,\n"
	        "recomputation, number format, framework; JSON \"fitted_runs\"), which\n"
	        "--out writes into the training fit (\"runs\") so that a prediction\n"
	        "outside them says which of its settings are.\n");
	fprintf(f,
	        "  --figures NAMES  the figures to fit, comma-separated (at most 6);\n"
	        "                   default train.gemm_efficiency,\n"
	        "                   train.nic_efficiency, train.op_overhead_us\n"
	        "  --rows PATTERN   fit only the rows whose name matches PATTERN (a\n"
	        "                   shell glob, as validate's --rows)\n"
	        "  --loss L         squares (default): least squares on the relative\n"
	        "                   errors; huber: Huber's loss, squares within 1.345\n"
	        "                   robust standard deviations (1.4826 x the median\n"
	        "                   |error|) and absolute values beyond, by iteratively\n"
	        "                   reweighted least squares, so that a few rows the\n"
	        "                   model cannot describe do not drag the figures off\n"
	        "                   the rest (the MAPE the docs quote is an absolute\n"
	        "                   error); prints each row's weight, and the\n"
	        "                   leave-one-out refits use the same loss\n"
	        "  --calibration BASE applied to every row's topology before the fit\n"
	        "                   (kernel or collective figures); --out keeps its\n"
	        "                   figures and fits ahead of the training fit's. A\n"
	        "                   BASE with a training fit takes one more only of\n"
	        "                   --figures train.moe_overhead_us, on MoE runs: a\n"
	        "                   second fit (\"training-moe\") that models with MoE\n"
	        "                   layers take their interval and runs from\n"
	        "  --name NAME, --description TEXT  the written file's (default name:\n"
	        "                   --out's file name)\n"
	        "  --also-for KINDS the device kinds, besides the rows' own, that the\n"
	        "                   written file holds for (comma-separated; its\n"
	        "                   \"also_for\", docs/formats.md): the same silicon in\n"
	        "                   another memory part, whose topologies then take it\n"
	        "                   (default: the base calibration's). The file's\n"
	        "                   \"device\" is the first row's kind; rows on other\n"
	        "                   kinds put theirs in \"also_for\" too\n");
	fprintf(f,
	        "  --json           print JSON: \"runs\", \"rows_matching\" (--rows),\n"
	        "                   \"calibration\", \"figures\"\n"
	        "                   [{\"name\", \"units\", \"bounds\", \"value\",\n"
	        "                   \"std_error\", \"identifiable\", \"at_bound\"}],\n"
	        "                   \"covariance\", \"condition\", \"rows\" [{\"name\",\n"
	        "                   \"line\", \"measured\", \"unit\", \"error_pct\",\n"
	        "                   \"cv_error_pct\", \"weight\"}], \"loss\", \"robust_scale\"\n"
	        "                   (huber; else null), \"in_sample\" and \"cv\"\n"
	        "                   ({\"method\", \"folds\", \"mape_pct\", \"rms_pct\",\n"
	        "                   \"max_pct\", \"log_rms\", \"covered\", \"coverable\"})\n"
	        "  --out FILE       write the calibration file (atomically; refused when it\n"
	        "                   names one of the inputs)\n"
	        "\n");
}

struct rargs {
	const char *runs, *base, *out, *name, *description;
	const char *also_for;  /* --also-for, comma-separated; NULL: the base's */
	const char *rows;  /* glob; NULL: every row */
	bool json;
	enum validation_loss loss;
	int n_figures;
	enum cal_param figures[VALIDATION_FIT_MAX];
};

static bool parse_figures(struct arena *ar, const char *list, struct rargs *r)
{
	r->n_figures = 0;
	const char *s = list;
	while (*s) {
		size_t len = strcspn(s, ",");
		const char *tier = NULL, *name = arena_strndup(ar, s, len);
		int p = name ? cost_cal_param_parse(ar, name, &tier) : -1;
		if (p < CAL_TRAIN_GEMM_EFFICIENCY || p > CAL_TRAIN_MOE_OVERHEAD_US) {
			fprintf(stderr, "shardlab calibrate: --figures takes train.gemm_efficiency, "
			        "train.comm_efficiency, train.op_overhead_us, train.nic_efficiency or "
			        "train.moe_overhead_us (comma-separated), got '%.*s'\n", (int)len, s);
			return false;
		}
		for (int j = 0; j < r->n_figures; j++)
			if (r->figures[j] == (enum cal_param)p) {
				fprintf(stderr, "shardlab calibrate: --figures names %s twice\n", name);
				return false;
			}
		if (r->n_figures == VALIDATION_FIT_MAX) {
			fprintf(stderr, "shardlab calibrate: --figures takes at most %d figures\n",
			        VALIDATION_FIT_MAX);
			return false;
		}
		r->figures[r->n_figures++] = (enum cal_param)p;
		s += len + (s[len] == ',');
	}
	if (r->n_figures == 0)
		fprintf(stderr, "shardlab calibrate: --figures names no figure\n");
	return r->n_figures > 0;
}

static bool parse(struct arena *ar, int argc, char **argv, struct rargs *r)
{
	r->n_figures = VALIDATION_FIT_DEFAULT_N;
	memcpy(r->figures, validation_fit_default, sizeof validation_fit_default);
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--json")) {
			r->json = true;
			continue;
		}
		static const char *const valued[] = {"--runs", "--figures", "--calibration", "--out",
		                                     "--name", "--description", "--rows", "--loss",
		                                     "--also-for"};
		const char *v;
		int k = cli_valued_option(argc, argv, &i, valued, SL_COUNTOF(valued), "--runs", &v);
		if (k < 0)
			return false;
		switch (k) {
		case 0: r->runs = v; break;
		case 1:
			if (!parse_figures(ar, v, r))
				return false;
			break;
		case 2: r->base = strcmp(v, "none") ? v : NULL; break;
		case 3: r->out = v; break;
		case 4: r->name = v; break;
		case 5: r->description = v; break;
		case 6: r->rows = v; break;
		case 8: r->also_for = v; break;
		default:
			r->loss = VALIDATION_LOSS_COUNT;
			for (int l = 0; l < VALIDATION_LOSS_COUNT; l++)
				if (!strcmp(v, validation_loss_names[l]))
					r->loss = (enum validation_loss)l;
			if (r->loss == VALIDATION_LOSS_COUNT) {
				fprintf(stderr, "shardlab calibrate: --loss takes squares or huber, got "
				        "'%s'\n", v);
				return false;
			}
			break;
		}
	}
	return true;
}

static const char *fig_name(enum cal_param p)
{
	static const char *const names[] = {"train.gemm_efficiency", "train.comm_efficiency",
	                                    "train.op_overhead_us", "train.nic_efficiency",
	                                    "train.moe_overhead_us"};
	return names[p - CAL_TRAIN_GEMM_EFFICIENCY];
}

bool cli_fit_took(const char *fitted_on, const char *set, const char *row)
{
	/* "FILE (SET): ..." or "FILE (SET), rows 'GLOB': ..." (merged, below) */
	const char *at = fitted_on && set ? strstr(fitted_on, " (") : NULL;
	size_t n = set ? strlen(set) : 0;
	if (!at || strncmp(at + 2, set, n) || at[2 + n] != ')')
		return false;
	const char *g = at + 2 + n;
	if (!row || strncmp(g, "), rows '", 9))
		return true;
	g += 9;
	const char *end = strstr(g, "':");
	char glob[256];
	if (!end || (size_t)(end - g) >= sizeof glob)
		return true;
	memcpy(glob, g, (size_t)(end - g));
	glob[end - g] = '\0';
	return fnmatch(glob, row, 0) == 0;
}

/* The rows' device kinds, each once in row order: the written file's
 * "device" (the first) and the head of its "also_for" (the others). */
struct kinds {
	const char **k;
	int n;
};

static bool kinds_have(const struct kinds *ks, const char *k, size_t len)
{
	for (int i = 0; i < ks->n; i++)
		if (strlen(ks->k[i]) == len && !strncmp(ks->k[i], k, len))
			return true;
	return false;
}

/* --also-for's kinds: some row with a device kind, each kind not the
 * rows' and named once, none empty. */
static bool also_for_ok(const char *list, const struct kinds *rows, struct diag_list *d)
{
	if (rows->n == 0) {
		diag_add(d, DIAG_ERROR, "--also-for", 0, NULL,
		         "the rows' topologies name no device kind for others to join");
		return false;
	}
	for (const char *s = list;; s += strcspn(s, ",") + 1) {
		int len = (int)strcspn(s, ",");
		bool twice = kinds_have(rows, s, (size_t)len);
		for (const char *t = list; t < s && !twice; t += strcspn(t, ",") + 1)
			twice = (int)strcspn(t, ",") == len && !strncmp(s, t, (size_t)len);
		if (len == 0) {
			diag_add(d, DIAG_ERROR, "--also-for", 0, NULL, "an empty device kind");
			return false;
		}
		if (twice) {
			diag_add(d, DIAG_ERROR, "--also-for", 0, NULL,
			         "\"%.*s\" is named twice (a row's kind or --also-for)", len, s);
			return false;
		}
		if (!s[len])
			return true;
	}
}

/* The written file's device and also_for: the rows' kinds, then
 * --also-for's (else the base's that are not the rows'). */
static bool file_kinds(struct arena *ar, const struct rargs *r, const struct calibration *base,
                       const struct kinds *rows, struct calibration *c)
{
	if (rows->n == 0)
		return true;
	c->device = rows->k[0];
	int most = rows->n + (base ? base->n_also_for : 0) + (r->also_for ? (int)strlen(r->also_for) : 0);
	struct kinds all = {.k = arena_calloc(ar, (size_t)most + 1, sizeof *all.k)};
	if (!all.k)
		return false;
	for (int i = 0; i < rows->n; i++)
		all.k[all.n++] = rows->k[i];
	for (const char *s = r->also_for; s && *s; s += strcspn(s, ",") + (s[strcspn(s, ",")] == ','))
		all.k[all.n++] = arena_strndup(ar, s, strcspn(s, ","));
	for (int i = 0; !r->also_for && base && i < base->n_also_for; i++)
		if (!kinds_have(&all, base->also_for[i], strlen(base->also_for[i])))
			all.k[all.n++] = base->also_for[i];
	c->also_for = all.k + 1;
	c->n_also_for = all.n - 1;
	return true;
}

/* The runs the fit saw: each setting over the fitted rows' plans. */
static void fitted_runs(const struct validation_training_fit *tf, struct cal_runs *out)
{
	*out = (struct cal_runs){0};
	for (int i = 0; i < tf->n_rows; i++)
		if (tf->point_of[i] >= 0 && tf->results[i].plan) {
			struct cal_point pt;
			cost_cal_point(tf->results[i].plan, &pt);
			cost_cal_runs_add(out, &pt);
		}
}

/* The written file: the base's figures and fits, then the training's. */
static struct calibration *merged(struct arena *ar, const struct rargs *r,
                                  const struct calibration *base, const struct validation *v,
                                  const struct validation_training_fit *tf,
                                  const struct kinds *kinds)
{
	const struct validation_fit_result *f = &tf->fit;
	int nb = base ? base->n_figures : 0, nf = base ? base->n_fits : 0, p = tf->n_figures;
	struct calibration *c = arena_calloc(ar, 1, sizeof *c);
	struct cal_figure *fig = arena_calloc(ar, (size_t)(nb + p), sizeof *fig);
	struct cal_fit *fits = arena_calloc(ar, (size_t)nf + 1, sizeof *fits);
	const char **names = arena_calloc(ar, (size_t)p, sizeof *names);
	double *cov = arena_calloc(ar, (size_t)(p * p), sizeof *cov);
	/* over a base's training fit, the MoE layers' fit beside it */
	const char *fname = base && cost_calibration_training_fit(base) ? "training-moe" : "training";
	const char *on = r->rows ? arena_printf(ar, "%s (%s), rows '%s': %d training rows, their "
	                                        "estimates", v->file, v->name, r->rows, f->n_points)
	                         : arena_printf(ar, "%s (%s): %d training rows, their estimates",
	                                        v->file, v->name, f->n_points);
	if (!c || !fig || !fits || !names || !cov || !on)
		return NULL;
	for (int i = 0; i < nb; i++)
		fig[i] = base->figures[i];
	for (int i = 0; i < nf; i++)
		fits[i] = base->fits[i];
	for (int j = 0; j < p; j++) {
		double se = f->std_error[j];
		fig[nb + j] = (struct cal_figure){
			.name = fig_name(tf->figures[j]), .param = tf->figures[j], .lo = tf->lo[j],
			.hi = tf->hi[j], .value = f->value[j], .std_error = isfinite(se) ? se : 0,
			.fitted_on = on, .cv_error_pct = f->cv_mape_pct, .fit = fname};
		names[j] = fig[nb + j].name;
		for (int k = 0; k < p; k++) {
			double x = f->covariance[j * p + k];
			cov[j * p + k] = isfinite(x) ? x : 0;
		}
	}
	struct cal_runs runs;
	fitted_runs(tf, &runs);
	fits[nf] = (struct cal_fit){.name = fname, .kind = "training", .fitted_on = on,
	                            .points = f->n_points,
	                            .loss = validation_loss_names[tf->loss],
	                            .cv_method = f->cv_method,
	                            .cv_folds = f->cv_folds, .cv_mape_pct = f->cv_mape_pct,
	                            .cv_rms_pct = f->cv_rms_pct, .cv_log_rms = f->cv_log_rms,
	                            .n_figures = p, .figures = names,
	                            .covariance = cov, .runs = runs};
	*c = (struct calibration){.name = r->name ? r->name : cli_calibration_name(ar, r->out), .description = r->description,
	                          .n_figures = nb + p, .figures = fig,
	                          .n_fits = nf + 1, .fits = fits};
	return file_kinds(ar, r, base, kinds, c) ? c : NULL;
}

/* The warnings: figures not identifiable, folds that failed. */
static void warnings(FILE *out, const struct validation_training_fit *tf)
{
	const struct validation_fit_result *f = &tf->fit;
	if (f->ill_conditioned)
		fprintf(out, "warning: the Jacobian is %s (condition number %.3g over %g): the rows "
		        "cannot tell the figures apart; fit fewer (--figures) or add rows that "
		        "vary what they bear on\n",
		        isfinite(f->condition) ? "ill-conditioned" : "singular", f->condition,
		        VALIDATION_FIT_MAX_COND);
	for (int j = 0; j < tf->n_figures; j++) {
		const char *n = fig_name(tf->figures[j]);
		if (f->at_bound[j])
			fprintf(out, "warning: %s is at its bound (%g, bounds [%g, %g]): not "
			        "identifiable; its standard error means nothing\n", n, f->value[j],
			        tf->lo[j], tf->hi[j]);
		else if (!f->identifiable[j] && !f->ill_conditioned)
			fprintf(out, "warning: %s is not identifiable from the rows (standard error "
			        "%.3g over half its value %.4g)\n", n, f->std_error[j], f->value[j]);
	}
	if (f->cv_failed)
		fprintf(out, "warning: %d row%s could not be predicted out of sample\n", f->cv_failed,
		        f->cv_failed == 1 ? "" : "s");
}

static void text(const struct rargs *r, const struct validation *v,
                 const struct calibration *base, const struct validation_training_fit *tf)
{
	const struct validation_fit_result *f = &tf->fit;
	printf("calibrate %s: %d figure%s fitted to %d training row%s of %s, through their "
	       "estimates\n", v->name, tf->n_figures, tf->n_figures == 1 ? "" : "s", f->n_points,
	       f->n_points == 1 ? "" : "s", v->file);
	if (r->rows)
		printf("rows matching '%s'\n", r->rows);
	if (base)
		printf("base calibration %s (%s)\n", base->name, r->base);
	else
		printf("base calibration: none (the topologies' own figures)\n");
	bool huber = tf->loss == VALIDATION_LOSS_HUBER;
	if (huber)
		printf("loss: Huber's, squares within %g robust standard deviations of the relative "
		       "errors (%.2f%%), absolute values beyond\n", VALIDATION_HUBER_K,
		       100 * f->robust_scale);
	printf("\n  %-22s  %-10s  %-10s  %-6s  %s\n", "figure", "value", "std error", "units",
	       "bounds");
	for (int j = 0; j < tf->n_figures; j++) {
		char se[32];
		if (isfinite(f->std_error[j]))
			snprintf(se, sizeof se, "%.4g", f->std_error[j]);
		else
			snprintf(se, sizeof se, "-");
		printf("  %-22s  %-10.4g  %-10s  %-6s  [%g, %g]%s\n", fig_name(tf->figures[j]),
		       f->value[j], se, cal_param_units[tf->figures[j]], tf->lo[j], tf->hi[j],
		       f->identifiable[j] ? "" : "  (not identifiable)");
	}
	printf("  condition number %.3g (unit-norm columns), %d iterations\n\n", f->condition,
	       f->iterations);
	int w = 4;
	for (int i = 0; i < v->n_rows; i++) {
		int l = (int)strlen(v->training[i].name);
		w = l > w ? l : w;
	}
	printf("  %-*s  %-9s  %-9s%s\n", w, "row", "in sample", "out of sample",
	       huber ? "  weight" : "");
	for (int i = 0; i < v->n_rows; i++) {
		int k = tf->point_of[i];
		if (k < 0) {
			printf("  %-*s  left out: %s\n", w, v->training[i].name, tf->results[i].error);
			continue;
		}
		char cv[32];
		if (isfinite(f->cv_err_pct[k]))
			snprintf(cv, sizeof cv, "%+.1f%%", f->cv_err_pct[k]);
		else
			snprintf(cv, sizeof cv, "-");
		printf("  %-*s  %+8.1f%%  %9s", w, v->training[i].name, f->fit_err_pct[k], cv);
		if (huber)
			printf("  %6.2f", f->weight[k]);
		printf("\n");
	}
	printf("\nin sample:      MAPE %.2f%%, max %.2f%% (not a measure of accuracy)\n",
	       f->mape_pct, f->max_pct);
	const char *method = !strcmp(f->cv_method, "k-fold") ? "k-fold:" : "leave-one-out:";
	if (isfinite(f->cv_mape_pct)) {
		printf("%-15s MAPE %.2f%%, max %.2f%%, rms %.2f%% (%d folds)\n", method,
		       f->cv_mape_pct, f->cv_max_pct, f->cv_rms_pct, f->cv_folds);
		printf("%-15s ln(predicted / measured) rms %.4f", "", f->cv_log_rms);
		if (f->cv_coverable > 0)
			printf("; held-out coverage %d of %d (%.0f%%) inside their 90%% residual "
			       "intervals\n", f->cv_covered, f->cv_coverable,
			       100.0 * f->cv_covered / f->cv_coverable);
		else
			printf("; held-out coverage: too few rows\n");
	} else
		printf("%-15s none: no row could be predicted out of sample (each fold leaves fewer "
		       "rows than figures; fit fewer with --figures)\n", method);
	struct cal_runs runs;
	char rt[512];
	fitted_runs(tf, &runs);
	if (runs.have)
		printf("fitted runs:    %s (a prediction outside them says which of its settings "
		       "are)\n", cost_cal_runs_text(rt, sizeof rt, &runs));
	warnings(stdout, tf);
}

static cJSON *num_or_null(double x)
{
	return isfinite(x) ? cJSON_CreateNumber(x) : cJSON_CreateNull();
}

static cJSON *json(const struct rargs *r, const struct validation *v,
                   const struct calibration *base, const struct validation_training_fit *tf)
{
	const struct validation_fit_result *f = &tf->fit;
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "runs", v->file);
	if (r->rows)
		cJSON_AddStringToObject(root, "rows_matching", r->rows);
	if (base) {
		cJSON *c = cJSON_AddObjectToObject(root, "calibration");
		cJSON_AddStringToObject(c, "name", base->name);
		cJSON_AddStringToObject(c, "file", r->base);
	} else {
		cJSON_AddNullToObject(root, "calibration");
	}
	cJSON *figs = cJSON_AddArrayToObject(root, "figures");
	for (int j = 0; j < tf->n_figures; j++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", fig_name(tf->figures[j]));
		cJSON_AddStringToObject(o, "units", cal_param_units[tf->figures[j]]);
		double b[2] = {tf->lo[j], tf->hi[j]};
		cJSON_AddItemToObject(o, "bounds", cJSON_CreateDoubleArray(b, 2));
		cJSON_AddNumberToObject(o, "value", f->value[j]);
		cJSON_AddItemToObject(o, "std_error", num_or_null(f->std_error[j]));
		cJSON_AddBoolToObject(o, "identifiable", f->identifiable[j]);
		cJSON_AddBoolToObject(o, "at_bound", f->at_bound[j]);
		cJSON_AddItemToArray(figs, o);
	}
	cJSON *cov = cJSON_AddArrayToObject(root, "covariance");
	for (int j = 0; j < tf->n_figures; j++) {
		cJSON *row = cJSON_CreateArray();
		for (int k = 0; k < tf->n_figures; k++)
			cJSON_AddItemToArray(row, num_or_null(f->covariance[j * tf->n_figures + k]));
		cJSON_AddItemToArray(cov, row);
	}
	cJSON_AddItemToObject(root, "condition", num_or_null(f->condition));
	cJSON *rows = cJSON_AddArrayToObject(root, "rows");
	for (int i = 0; i < v->n_rows; i++) {
		int k = tf->point_of[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", v->training[i].name);
		cJSON_AddNumberToObject(o, "line", v->training[i].line);
		cJSON_AddNumberToObject(o, "measured", v->training[i].value);
		cJSON_AddStringToObject(o, "unit", validation_measure_names[v->training[i].measure]);
		if (k < 0) {
			cJSON_AddStringToObject(o, "error", tf->results[i].error);
		} else {
			cJSON_AddItemToObject(o, "error_pct", num_or_null(f->fit_err_pct[k]));
			cJSON_AddItemToObject(o, "cv_error_pct", num_or_null(f->cv_err_pct[k]));
			cJSON_AddNumberToObject(o, "weight", f->weight[k]);
		}
		cJSON_AddItemToArray(rows, o);
	}
	cJSON_AddStringToObject(root, "loss", validation_loss_names[tf->loss]);
	cJSON_AddItemToObject(root, "robust_scale", num_or_null(f->robust_scale));
	cJSON *in = cJSON_AddObjectToObject(root, "in_sample");
	cJSON_AddNumberToObject(in, "mape_pct", f->mape_pct);
	cJSON_AddNumberToObject(in, "max_pct", f->max_pct);
	cJSON *cv = cJSON_AddObjectToObject(root, "cv");
	cJSON_AddStringToObject(cv, "method", f->cv_method);
	cJSON_AddNumberToObject(cv, "folds", f->cv_folds);
	cJSON_AddItemToObject(cv, "mape_pct", num_or_null(f->cv_mape_pct));
	cJSON_AddItemToObject(cv, "rms_pct", num_or_null(f->cv_rms_pct));
	cJSON_AddItemToObject(cv, "max_pct", num_or_null(f->cv_max_pct));
	cJSON_AddItemToObject(cv, "log_rms", num_or_null(f->cv_log_rms));
	cJSON_AddNumberToObject(cv, "covered", f->cv_covered);
	cJSON_AddNumberToObject(cv, "coverable", f->cv_coverable);
	struct cal_runs runs;
	fitted_runs(tf, &runs);
	cJSON_AddItemToObject(root, "fitted_runs",
	                      runs.have ? cost_cal_runs_json(&runs) : cJSON_CreateNull());
	return root;
}

/* Keep the training rows whose name matches the glob, in file order;
 * false when none does. */
static bool keep_rows(struct validation *v, const char *glob)
{
	int n = 0;
	for (int i = 0; i < v->n_rows; i++)
		if (fnmatch(glob, v->training[i].name, 0) == 0)
			v->training[n++] = v->training[i];
	v->n_rows = n;
	return n > 0;
}

int calibrate_runs(int argc, char **argv)
{
	struct arena *ar = arena_new();
	if (!ar) {
		fprintf(stderr, "shardlab: out of memory\n");
		return EXIT_INVALID;
	}
	struct rargs r = {0};
	if (!parse(ar, argc, argv, &r) || !r.runs) {
		if (!r.runs)
			fprintf(stderr, "usage: shardlab calibrate --runs VALIDATION.json [--figures "
			        "NAMES] [--calibration BASE] [--out FILE] (see --help)\n");
		arena_free(ar);
		return EXIT_USAGE;
	}
	const char *const inputs[] = {r.runs, r.base};
	if (cli_out_overwrites("calibrate", r.out, inputs, 2)) {
		arena_free(ar);
		return EXIT_USAGE;
	}
	struct diag_list d;
	diag_list_init(&d);
	int rc = EXIT_INVALID;
	struct validation *v = validation_load(ar, r.runs, &d);
	struct calibration *base = v && r.base ? cost_calibration_load(ar, r.base, &d) : NULL;
	struct kinds kinds = {0};
	if (v && v->kind != VALIDATION_TRAINING) {
		diag_add(&d, DIAG_ERROR, v->file, 0, "kind",
		         "--runs fits training rows: this file holds collectives (calibrate a "
		         "collective benchmark's output instead)");
		v = NULL;
	}
	if (v && r.base && !base)
		v = NULL;
	if (v && r.rows && !keep_rows(v, r.rows)) {
		diag_add(&d, DIAG_ERROR, v->file, 0, NULL, "no row matches --rows '%s'", r.rows);
		v = NULL;
	}
	/* Over a base's training fit, one more: the MoE layers' host time
	 * alone, on MoE runs (the figure no dense row sees). */
	bool moe_only = r.n_figures == 1 && r.figures[0] == CAL_TRAIN_MOE_OVERHEAD_US;
	const struct cal_fit *btf = base ? cost_calibration_training_fit(base) : NULL;
	if (btf && (!moe_only || cost_cal_fit_is_moe(cost_calibration_training_fit_for(base, true)))) {
		diag_add(&d, DIAG_ERROR, base->file, 0, "fits",
		         moe_only ? "the base calibration has a fit of train.moe_overhead_us already"
		                  : "the base calibration has a training fit already: fit from its "
		                    "kernel or collective figures alone, or --figures "
		                    "train.moe_overhead_us alone over it on MoE runs");
		v = NULL;
	}
	if (v && !(kinds.k = arena_calloc(ar, (size_t)v->n_rows + 1, sizeof *kinds.k)))
		v = NULL;
	for (int i = 0; v && i < v->n_rows; i++) {
		struct topology *t = v->training[i].scenario->topo;
		if (base && !cost_calibration_apply(base, t, &d))
			v = NULL;
		else if (t->device.kind && !kinds_have(&kinds, t->device.kind, strlen(t->device.kind)))
			kinds.k[kinds.n++] = t->device.kind;
	}
	if (v && r.also_for && !also_for_ok(r.also_for, &kinds, &d))
		v = NULL;
	struct validation_training_fit tf;
	if (v) {
		struct validation_fit_options o = {.loss = r.loss, .n_figures = r.n_figures};
		memcpy(o.figures, r.figures, sizeof r.figures);
		if (!validation_fit_training(ar, v, &o, &tf)) {
			fprintf(stderr, "shardlab: out of memory\n");
		} else if (!tf.fit.ok) {
			diag_add(&d, DIAG_ERROR, v->file, 0, NULL, "no fit: %s", tf.fit.why);
		} else {
			rc = EXIT_OK;
			if (r.json) {
				rc = report_print_json(json(&r, v, base, &tf), "calibrate");
				warnings(stderr, &tf);
			} else {
				text(&r, v, base, &tf);
			}
		}
	}
	if (rc == EXIT_OK && r.out) {
		struct calibration *c = merged(ar, &r, base, v, &tf, &kinds);
		if (!c || !cli_calibration_write(r.out, c))
			rc = EXIT_INVALID;
	}
	cli_print_diags(&d);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
