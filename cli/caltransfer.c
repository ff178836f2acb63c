/* caltransfer.c — `shardlab calibrate --transfer FROM --topology FILE`:
 * a calibration's training fit (its end-to-end figures, their covariance
 * and cross-validated residuals) carried whole onto another device kind,
 * on top of that device's own kernel or collective figures (--calibration
 * BASE): the same silicon in another memory part or board, whose training
 * rows nobody has published. Nothing is refitted; the written fit says
 * where it came from ("transferred_from"), every output that names the
 * calibration says so, and its intervals are the source device's
 * cross-validated spread (docs/validation.md, "Shipped calibrations").
 *
 * Each transferred ratio must stay physical on the new device: at most its
 * cap there (cost_cal_train_cap: 1 / matmul_efficiency for the GEMM
 * figure, 1 / the NICs' efficiency for theirs).
 *
 * Figures print with fixed formats, so the same inputs give the same bytes.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

void calibrate_transfer_help(FILE *f)
{
	fprintf(f,
	        "       shardlab calibrate --transfer FROM --topology FILE\n"
	        "                               [--calibration BASE] [--name NAME]\n"
	        "                               [--description TEXT] [--json]\n"
	        "                               [--out FILE]\n"
	        "\n"
	        "With --transfer, the training fit of the calibration FROM (its\n"
	        "end-to-end figures, covariance and cross-validated residuals, as\n"
	        "calibrate --runs wrote them) carried whole onto the device of the\n"
	        "topology FILE, on top of BASE's figures when given (that device's\n"
	        "own kernel or collective fit; BASE must hold for it and have no\n"
	        "training fit); FROM's MoE layers' fit, where it has one, beside it.\n"
	        "For the same silicon in another part (an H200 after\n"
	        "an H100's rows) when no training runs of the new part are at hand:\n"
	        "nothing is refitted, the fit keeps its rows' cross-validated error\n"
	        "and names where it came from (\"transferred_from\": {\"calibration\",\n"
	        "\"device\"}), and every output that names the calibration says so.\n"
	        "Refused when FROM has no training fit, when FROM holds for the\n"
	        "device already, when BASE sets one of the transferred figures, or\n"
	        "when a ratio would leave its physical range on the new device\n"
	        "(train.gemm_efficiency x matmul_efficiency <= 1,\n"
	        "train.nic_efficiency x the NICs' efficiency <= 1).\n"
	        "  --topology FILE  the device the figures are carried to (its kind\n"
	        "                   is the written file's \"device\")\n"
	        "  --calibration BASE  the new device's own figures, kept ahead of\n"
	        "                   the transferred ones (and its \"also_for\")\n"
	        "  --name NAME, --description TEXT  the written file's (default name:\n"
	        "                   --out's file name)\n"
	        "  --json           print JSON: \"from\", \"topology\", \"device\",\n"
	        "                   \"base\", \"figures\" [{\"name\", \"units\", \"value\",\n"
	        "                   \"std_error\", \"cap\"}], \"fit\" ({\"name\",\n"
	        "                   \"points\", \"fitted_on\", \"device\", \"cv\"})\n"
	        "  --out FILE       write the calibration file (atomically; refused when it\n"
	        "                   names one of the inputs)\n"
	        "\n");
}

struct targs {
	const char *from, *topology, *base, *out, *name, *description;
	bool json;
};

static bool parse(int argc, char **argv, struct targs *r)
{
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--json")) {
			r->json = true;
			continue;
		}
		static const char *const valued[] = {"--transfer", "--topology", "--calibration",
		                                     "--out", "--name", "--description"};
		const char *v;
		int k = cli_valued_option(argc, argv, &i, valued, SL_COUNTOF(valued), "--transfer", &v);
		if (k < 0)
			return false;
		const char **slot[] = {&r->from, &r->topology, &r->base, &r->out, &r->name,
		                       &r->description};
		*slot[k] = v;
	}
	if (r->base && !strcmp(r->base, "none"))
		r->base = NULL;
	return true;
}

/* The figure of FROM that is the j-th of its fit tf (the loader checked
 * that each name the fit lists is a figure of the file). */
static const struct cal_figure *fit_figure(const struct calibration *from,
                                           const struct cal_fit *tf, int j)
{
	for (int i = 0; i < from->n_figures; i++)
		if (!strcmp(from->figures[i].name, tf->figures[j]))
			return &from->figures[i];
	return NULL;
}

/* The written file: BASE's figures and fits, then FROM's training fit and
 * its figures, and its MoE layers' fit (mf, NULL: none) and its figure,
 * each fit marked as carried from FROM. */
static struct calibration *transferred(struct arena *ar, const struct targs *r,
                                       const struct calibration *from,
                                       const struct cal_fit *tf, const struct cal_fit *mf,
                                       const struct calibration *base, const char *kind)
{
	const struct cal_fit *carried[2] = {tf, mf};
	int nb = base ? base->n_figures : 0, nf = base ? base->n_fits : 0;
	int n = mf ? 2 : 1, p = tf->n_figures + (mf ? mf->n_figures : 0);
	struct calibration *c = arena_calloc(ar, 1, sizeof *c);
	struct cal_figure *fig = arena_calloc(ar, (size_t)(nb + p), sizeof *fig);
	struct cal_fit *fits = arena_calloc(ar, (size_t)(nf + n), sizeof *fits);
	if (!c || !fig || !fits)
		return NULL;
	for (int i = 0; i < nb; i++)
		fig[i] = base->figures[i];
	for (int i = 0; i < nf; i++)
		fits[i] = base->fits[i];
	for (int k = 0, at = nb; k < n; k++) {
		const struct cal_fit *f = carried[k];
		for (int j = 0; j < f->n_figures; j++)
			fig[at++] = *fit_figure(from, f, j);
		fits[nf + k] = *f;
		fits[nf + k].from_calibration = f->from_calibration ? f->from_calibration : from->name;
		fits[nf + k].from_device = f->from_calibration ? f->from_device : from->device;
	}
	const char *name = r->name ? r->name : r->out ? cli_calibration_name(ar, r->out) : from->name;
	*c = (struct calibration){.name = name,
	                          .description = r->description, .device = kind,
	                          .n_also_for = base ? base->n_also_for : 0,
	                          .also_for = base ? base->also_for : NULL,
	                          .n_figures = nb + p, .figures = fig, .n_fits = nf + n, .fits = fits};
	return c->name ? c : NULL;
}

/* Each transferred ratio against its cap on the new device (BASE applied):
 * false, with a diagnostic at the figure, when one is above it. */
static bool within_caps(const struct calibration *from, const struct cal_fit *tf,
                        const struct calibration *base, const struct topology *t, double *cap,
                        struct diag_list *d)
{
	bool ok = true;
	for (int j = 0; j < tf->n_figures; j++) {
		const struct cal_figure *f = fit_figure(from, tf, j);
		char path[32];
		for (int i = 0; base && i < base->n_figures; i++)
			if (!strcmp(base->figures[i].name, f->name)) {
				snprintf(path, sizeof path, "figures[%d].name", i);
				diag_add(d, DIAG_ERROR, base->file, base->figures[i].line, path,
				         "%s is a figure of the base calibration too: one value per "
				         "parameter", f->name);
				ok = false;
			}
		cap[j] = cost_cal_train_cap(t, f->param);
		if (f->value > cap[j] * (1 + 1e-12)) {
			snprintf(path, sizeof path, "figures[%d].value", (int)(f - from->figures));
			diag_add(d, DIAG_ERROR, from->file, f->line, path,
			         "%s %.4g is above its physical cap on the %s of %s, %.4g (a ratio "
			         "over what the device's own figures leave): it does not carry over",
			         f->name, f->value, t->device.kind ? t->device.kind : "device", t->name,
			         cap[j]);
			ok = false;
		}
	}
	return ok;
}

static void text(const struct targs *r, const struct calibration *from, const struct cal_fit *tf,
                 const struct calibration *base, const struct topology *t, const double *cap)
{
	const char *kind = t->device.kind ? t->device.kind : "(no kind)";
	printf("calibrate --transfer: the training fit of %s (%s) onto the %s (%s)\n", from->name,
	       r->from, kind, r->topology);
	if (base)
		printf("base calibration %s (%s): %d figure%s of the %s's own\n", base->name, r->base,
		       base->n_figures, base->n_figures == 1 ? "" : "s", kind);
	else
		printf("base calibration: none (the topology's own figures)\n");
	printf("\n  %-22s  %-10s  %-10s  %-6s  %s\n", "figure", "value", "std error", "units",
	       "cap on this device");
	for (int j = 0; j < tf->n_figures; j++) {
		const struct cal_figure *f = fit_figure(from, tf, j);
		char cp[32];
		if (isfinite(cap[j]))
			snprintf(cp, sizeof cp, "%.4g", cap[j]);
		else
			snprintf(cp, sizeof cp, "-");
		printf("  %-22s  %-10.4g  %-10.4g  %-6s  %s\n", f->name, f->value, f->std_error,
		       cal_param_units[f->param], cp);
	}
	const char *on = tf->from_calibration ? tf->from_device : from->device;
	printf("\nfitted on:      %s%s%s%s\n", tf->fitted_on, on ? " (on the " : "", on ? on : "",
	       on ? ")" : "");
	printf("%-15s MAPE %.2f%%, rms %.2f%% over those rows (%d folds)\n",
	       !strcmp(tf->cv_method, "k-fold") ? "k-fold:" : "leave-one-out:", tf->cv_mape_pct,
	       tf->cv_rms_pct, tf->cv_folds);
	printf("not measured on the %s: its predictions carry that spread, with no check of the "
	       "transfer itself\n", kind);
	const struct cal_fit *mf = cost_calibration_training_fit_for(from, true);
	if (mf && mf != tf)
		printf("carried too: its MoE layers' fit (%s, fitted on %s, %s MAPE %.2f%%), the "
		       "host's time per MoE layer and pass, which the same host CPUs and software "
		       "keep; not measured on the %s either\n", mf->name, mf->fitted_on,
		       mf->cv_method, mf->cv_mape_pct, kind);
}

static cJSON *json(const struct targs *r, const struct calibration *from,
                   const struct cal_fit *tf, const struct calibration *base,
                   const struct topology *t, const double *cap)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "from", r->from);
	cJSON_AddStringToObject(o, "topology", r->topology);
	if (t->device.kind)
		cJSON_AddStringToObject(o, "device", t->device.kind);
	else
		cJSON_AddNullToObject(o, "device");
	if (base)
		cJSON_AddStringToObject(o, "base", r->base);
	else
		cJSON_AddNullToObject(o, "base");
	cJSON *figs = cJSON_AddArrayToObject(o, "figures");
	for (int j = 0; j < tf->n_figures; j++) {
		const struct cal_figure *f = fit_figure(from, tf, j);
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "name", f->name);
		cJSON_AddStringToObject(x, "units", cal_param_units[f->param]);
		cJSON_AddNumberToObject(x, "value", f->value);
		cJSON_AddNumberToObject(x, "std_error", f->std_error);
		if (isfinite(cap[j]))
			cJSON_AddNumberToObject(x, "cap", cap[j]);
		else
			cJSON_AddNullToObject(x, "cap");
		cJSON_AddItemToArray(figs, x);
	}
	cJSON *fit = cJSON_AddObjectToObject(o, "fit");
	cJSON_AddStringToObject(fit, "name", tf->name);
	cJSON_AddNumberToObject(fit, "points", tf->points);
	cJSON_AddStringToObject(fit, "fitted_on", tf->fitted_on);
	const char *on = tf->from_calibration ? tf->from_device : from->device;
	if (on)
		cJSON_AddStringToObject(fit, "device", on);
	else
		cJSON_AddNullToObject(fit, "device");
	cJSON *cv = cJSON_AddObjectToObject(fit, "cv");
	cJSON_AddStringToObject(cv, "method", tf->cv_method);
	cJSON_AddNumberToObject(cv, "folds", tf->cv_folds);
	cJSON_AddNumberToObject(cv, "mape_pct", tf->cv_mape_pct);
	cJSON_AddNumberToObject(cv, "rms_pct", tf->cv_rms_pct);
	/* the MoE layers' fit carried beside it, or null */
	const struct cal_fit *mf = cost_calibration_training_fit_for(from, true);
	if (mf && mf != tf) {
		cJSON *m = cJSON_AddObjectToObject(o, "moe_fit");
		cJSON_AddStringToObject(m, "name", mf->name);
		cJSON_AddNumberToObject(m, "points", mf->points);
		cJSON_AddStringToObject(m, "fitted_on", mf->fitted_on);
		cJSON_AddNumberToObject(m, "mape_pct", mf->cv_mape_pct);
	} else {
		cJSON_AddNullToObject(o, "moe_fit");
	}
	return o;
}

int calibrate_transfer(int argc, char **argv)
{
	struct targs r = {0};
	bool parsed = parse(argc, argv, &r);
	if (!parsed || !r.from || !r.topology) {
		if (parsed && r.from && !r.topology)
			fprintf(stderr, "shardlab calibrate: --transfer needs --topology FILE, the "
			                "device the figures are carried to\n");
		fprintf(stderr, "usage: shardlab calibrate --transfer FROM --topology FILE "
		                "[--calibration BASE] [--out FILE] (see --help)\n");
		return EXIT_USAGE;
	}
	const char *const inputs[] = {r.from, r.topology, r.base};
	if (cli_out_overwrites("calibrate", r.out, inputs, 3))
		return EXIT_USAGE;
	struct arena *ar = arena_new();
	if (!ar) {
		fprintf(stderr, "shardlab: out of memory\n");
		return EXIT_INVALID;
	}
	struct diag_list d;
	diag_list_init(&d);
	int rc = EXIT_INVALID;
	struct calibration *from = cost_calibration_load(ar, r.from, &d);
	struct calibration *base = r.base ? cost_calibration_load(ar, r.base, &d) : NULL;
	struct topology *t = cli_load_topology(ar, r.topology, &d);
	const struct cal_fit *tf = from ? cost_calibration_training_fit(from) : NULL;
	bool ok = from && t && (!r.base || base);
	if (ok && !tf) {
		diag_add(&d, DIAG_ERROR, from->file, 0, "fits",
		         "no training fit to transfer (a fit of \"kind\": \"training\", as "
		         "calibrate --runs writes)");
		ok = false;
	}
	if (ok && (!t->device.kind || cost_calibration_holds_for(from, t->device.kind))) {
		diag_add(&d, DIAG_ERROR, r.topology, 0, "device.kind",
		         t->device.kind ? "%s holds for the %s already: use it as it is"
		                        : "%s: the topology names no device kind to carry it to",
		         from->name, t->device.kind);
		ok = false;
	}
	if (ok && base && cost_calibration_training_fit(base)) {
		diag_add(&d, DIAG_ERROR, base->file, 0, "fits",
		         "the base calibration has a training fit already: the transferred one "
		         "would be a second");
		ok = false;
	}
	if (ok && base && !cost_calibration_apply(base, t, &d))
		ok = false;
	double cap[CAL_FIT_MAX_FIGURES] = {0};  /* tf->n_figures at most this: the loader's bound */
	double capm[CAL_FIT_MAX_FIGURES] = {0};
	const struct cal_fit *mf = from ? cost_calibration_training_fit_for(from, true) : NULL;
	if (mf == tf)
		mf = NULL;  /* a MoE fit alone is the one carried */
	if (ok && !within_caps(from, tf, base, t, cap, &d))
		ok = false;
	if (ok && mf && !within_caps(from, mf, base, t, capm, &d))
		ok = false;
	struct calibration *c = ok ? transferred(ar, &r, from, tf, mf, base, t->device.kind) : NULL;
	/* The result must apply to the device it names (a NIC figure needs NICs). */
	struct topology *fresh = c ? cli_load_topology(ar, r.topology, &d) : NULL;
	if (c && fresh && cost_calibration_apply(c, fresh, &d)) {
		rc = r.json ? report_print_json(json(&r, from, tf, base, t, cap), "calibrate")
		            : (text(&r, from, tf, base, t, cap), EXIT_OK);
		if (rc == EXIT_OK && r.out && !cli_calibration_write(r.out, c))
			rc = EXIT_INVALID;
	}
	cli_print_diags(&d);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
