/* interval.c — a prediction's 90% interval from the calibration its
 * topology carries (planner/cost/calfile.c, docs/validation.md,
 * "Prediction intervals"), as every command prints it: "1.34 s (90%:
 * 1.26-1.43 s)" in text, {"calibration", "interval"} in JSON, and the
 * words that say an uncalibrated output has none.
 *
 * Units: seconds. Each interval costs two estimates of the plan per
 * figure of the calibration.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "studies.h"

void cli_interval(const struct plan *p, struct cal_interval *out)
{
	const struct calibration *c = p->scenario->topo->calibration;
	struct arena *a = arena_new();
	if (!a || !cost_calibration_interval(a, c, p, out))
		*out = (struct cal_interval){.why = "out of memory: no interval"};
	arena_free(a);
}

const char *cli_interval_text(char *buf, size_t size, const struct cal_interval *iv)
{
	if (!iv->have) {
		snprintf(buf, size, " (%s)", iv->why);
		return buf;
	}
	char lo[32], hi[32], r[80];
	cli_si(lo, sizeof lo, iv->lo_s, "s");
	cli_si(hi, sizeof hi, iv->hi_s, "s");
	snprintf(buf, size, " (90%%: %s)", cli_range_text(r, sizeof r, lo, hi));
	return buf;
}

const char *cli_range_text(char *buf, size_t size, const char *lo, const char *hi)
{
	/* "1.26 s-1.43 s" reads as "1.26-1.43 s" when the units agree. */
	const char *ul = strchr(lo, ' '), *uh = strchr(hi, ' ');
	if (ul && uh && !strcmp(ul, uh))
		snprintf(buf, size, "%.*s-%s", (int)(ul - lo), lo, hi);
	else
		snprintf(buf, size, "%s-%s", lo, hi);
	return buf;
}

const char *cli_calibration_words(char *buf, size_t size, const struct topology *t, bool moe)
{
	const struct calibration *c = t->calibration;
	if (!c) {
		snprintf(buf, size, "none");
		return buf;
	}
	const struct cal_fit *tf = cost_calibration_training_fit(c);
	int n = snprintf(buf, size, "%s (%s)", c->name, c->file ? c->file : "-");
	if (tf && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n,
		              ", training fit cross-validated MAPE %.1f%% over %d rows", tf->cv_mape_pct,
		              tf->points);
	/* a model with MoE layers: the fit of their host time, where it is
	 * another, gives its interval */
	const struct cal_fit *mf = moe ? cost_calibration_training_fit_for(c, true) : NULL;
	if (mf && mf != tf && n >= 0 && (size_t)n < size)
		n += snprintf(buf + n, size - (size_t)n, "; its MoE layers' fit %.1f%% over %d rows",
		              mf->cv_mape_pct, mf->points);
	/* A fit carried from another device: whose rows those were. */
	if (tf && tf->from_calibration && n >= 0 && (size_t)n < size)
		snprintf(buf + n, size - (size_t)n, "%s%s (transferred from %s, not measured on this "
		         "device)", tf->from_device ? " of the " : "",
		         tf->from_device ? tf->from_device : "", tf->from_calibration);
	return buf;
}

void cli_calibration_line(FILE *f, const char *indent, const struct topology *t, bool moe)
{
	char w[1024];
	fprintf(f, "%scalibration          %s\n", indent, cli_calibration_words(w, sizeof w, t, moe));
}

cJSON *cli_calibration_json(const struct topology *t)
{
	const struct calibration *c = t->calibration;
	if (!c)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", c->name);
	cJSON_AddStringToObject(o, "file", c->file ? c->file : "");
	const struct cal_fit *tf = cost_calibration_training_fit(c);
	if (tf && tf->from_calibration)  /* as the file has it */
		cJSON_AddItemToObject(o, "transferred_from", cost_cal_fit_transfer_json(tf));
	return o;
}

void cli_outside_line(FILE *f, const char *indent, const struct cal_interval *iv)
{
	char w[1024];
	if (iv->n_outside > 0)
		fprintf(f, "%soutside its runs     %s: the interval is the spread over the runs the "
		        "calibration was fitted on, not beyond them\n", indent,
		        cost_cal_outside_text(w, sizeof w, iv->outside, iv->n_outside));
}

cJSON *cli_outside_json(const struct cal_outside *o, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++) {
		cJSON *x = cJSON_CreateObject();
		cJSON_AddStringToObject(x, "setting", cal_setting_keys[o[i].setting]);
		cJSON_AddStringToObject(x, "value", o[i].value);
		cJSON_AddStringToObject(x, "fitted", o[i].fitted);
		cJSON_AddItemToArray(a, x);
	}
	return a;
}

cJSON *cli_interval_outside_json(const struct cal_interval *iv)
{
	return iv->runs_known ? cli_outside_json(iv->outside, iv->n_outside) : cJSON_CreateNull();
}

cJSON *cli_interval_json(const struct cal_interval *iv)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddItemToObject(o, "outside_fitted_runs", cli_interval_outside_json(iv));
	if (!iv->have) {
		cJSON_AddNullToObject(o, "lo_s");
		cJSON_AddNullToObject(o, "hi_s");
		cJSON_AddStringToObject(o, "note", iv->why);
		return o;
	}
	cJSON_AddNumberToObject(o, "level", CAL_INTERVAL_LEVEL);
	cJSON_AddNumberToObject(o, "lo_s", iv->lo_s);
	cJSON_AddNumberToObject(o, "hi_s", iv->hi_s);
	cJSON_AddNumberToObject(o, "relative_sd", iv->rel_sd);
	cJSON_AddNumberToObject(o, "relative_sd_figures", iv->rel_sd_figures);
	cJSON_AddNumberToObject(o, "dof", iv->dof);
	cJSON_AddNumberToObject(o, "quantile", iv->quantile);
	return o;
}

/* The shipped calibrations by device kind and framework family
 * (docs/validation.md, "Shipped calibrations"), beside the topologies'
 * folder: the first row of the device and the run's family, else the
 * first of the device (a family without a file of its own takes the
 * device's Megatron-LM one, the one every row without a family has). */
static const struct {
	const char *device;
	enum framework fw;
	const char *file;
} shipped[] = {
	{"NVIDIA A100 SXM 80GB", FRAMEWORK_MEGATRON, "a100-sxm.json"},
	{"NVIDIA A100 SXM 40GB", FRAMEWORK_MEGATRON, "a100-sxm.json"},  /* its also_for */
	{"NVIDIA H100 SXM", FRAMEWORK_PYTORCH, "h100-sxm-pytorch.json"},
	{"NVIDIA H100 SXM", FRAMEWORK_MEGATRON, "h100-sxm.json"},
	{"NVIDIA H200 SXM", FRAMEWORK_PYTORCH, "h200-sxm-pytorch.json"},  /* transferred */
	{"NVIDIA H200 SXM", FRAMEWORK_MEGATRON, "h200-sxm.json"},
	{"Ascend 910B", FRAMEWORK_MEGATRON, "ascend-910b.json"},
	{"NVIDIA B200 SXM (HGX)", FRAMEWORK_MEGATRON, "blackwell.json"},
	{"NVIDIA B200 (GB200 NVL72)", FRAMEWORK_MEGATRON, "blackwell.json"},
};

static bool readable(const char *path)
{
	FILE *probe = path ? fopen(path, "r") : NULL;
	if (probe)
		fclose(probe);
	return probe != NULL;
}

/* The shipped folder as this build knows it, shortened to a path relative
 * to the working directory when it lies under it (the usual case: run from
 * the tree), so that reports do not name the clone's absolute path. */
static const char *shipped_folder_file(struct arena *a, const char *file)
{
#ifdef SHARDLAB_CALIBRATION_DIR
	const char *dir = SHARDLAB_CALIBRATION_DIR;
	char cwd[4096];
	size_t n = getcwd(cwd, sizeof cwd) ? strlen(cwd) : 0;
	if (n && !strncmp(dir, cwd, n) && dir[n] == '/')
		dir += n + 1;
	return arena_printf(a, "%s/%s", dir, file);
#else
	(void)a;
	(void)file;
	return NULL;
#endif
}

/* The shipped file for t's device and fw; NULL when none. */
static const char *shipped_file(const struct topology *t, enum framework fw)
{
	const char *any = NULL;
	for (size_t i = 0; i < SL_COUNTOF(shipped); i++) {
		if (!t->device.kind || strcmp(t->device.kind, shipped[i].device))
			continue;
		if (shipped[i].fw == fw)
			return shipped[i].file;
		if (!any && shipped[i].fw == FRAMEWORK_MEGATRON)
			any = shipped[i].file;
	}
	return any;
}

const char *cli_default_calibration_file(struct arena *a, const struct topology *t,
                                         enum framework fw)
{
	if (t->calibration_file)
		return strcmp(t->calibration_file, "none") ? t->calibration_file : NULL;
	const char *file = shipped_file(t, fw);
	if (file) {
		/* topologies/x.json -> calibration/FILE: the folder "calibration"
		 * beside the topology's folder, the path cleaned of "dir/..". */
		const char *rel = arena_printf(a, "../calibration/%s", file);
		const char *path = rel ? util_path_join(a, util_path_dir(a, t->file ? t->file : ""), rel)
		                       : NULL;
		if (readable(path))
			return path;
		/* A topology of the user's own, outside the tree: the folder
		 * this build was made from. */
		path = shipped_folder_file(a, file);
		if (readable(path))
			return path;
	}
	return NULL;
}

bool cli_apply_calibration(struct arena *a, const char *option, struct topology *t,
                           enum framework fw, struct diag_list *d)
{
	if (!option || !strcmp(option, "none"))
		return true;
	const char *path = option;
	if (!strcmp(option, "auto")) {
		path = cli_default_calibration_file(a, t, fw);
		if (!path && t->calibration_file) {
			diag_add(d, DIAG_ERROR, "--calibration", 0, NULL,
			         "auto: the topology %s names calibration \"none\" (%s)", t->name,
			         t->file ? t->file : "-");
			return false;
		}
		if (!path) {
			diag_add(d, DIAG_ERROR, "--calibration", 0, NULL,
			         "no shipped calibration for the %s of %s (calibration/: a100-sxm, "
			         "h100-sxm, ascend-910b, blackwell)", t->device.kind ? t->device.kind : "device",
			         t->name);
			return false;
		}
	}
	struct calibration *c = cost_calibration_load(a, path, d);
	return c && cost_calibration_apply(c, t, d);
}

bool cli_default_calibration(struct arena *a, struct topology *t, enum framework fw,
                             struct diag_list *d)
{
	const char *path = cli_default_calibration_file(a, t, fw);
	return !path || cli_apply_calibration(a, path, t, fw, d);
}

const char *cli_meta_entry(char *buf, size_t size, const char *text, const char *name)
{
	size_t n = strlen(name);
	for (const char *p = text; p && *p;) {
		const char *end = strstr(p, "; ");
		if (!strncmp(p, name, n) && p[n] == '=') {
			const char *v = p + n + 1;
			snprintf(buf, size, "%.*s", (int)(end ? (size_t)(end - v) : strlen(v)), v);
			return buf;
		}
		p = end ? end + 2 : NULL;
	}
	return NULL;
}

/* The calibration at path, when the sweep recorded it for cluster c: its
 * entry ("NAME=CAL:HASH") is the key's for that cluster. */
static const struct calibration *swept(struct arena *a, const struct study *st, int c,
                                       const char *path, const char *key)
{
	char want[512];
	if (!path || !cli_meta_entry(want, sizeof want, key, st->clusters[c].name))
		return NULL;
	struct diag_list d;
	diag_list_init(&d);
	struct calibration *cal = cost_calibration_load(a, path, &d);
	diag_list_free(&d);
	const char *e = cal ? study_calibration_entry(a, st->clusters[c].name, cal) : NULL;
	return e && !strcmp(e + strlen(st->clusters[c].name) + 1, want) ? cal : NULL;
}

const struct calibration **cli_swept_calibrations(struct arena *a, const struct study *st,
                                                  const struct study_plot_info *info,
                                                  const char *db)
{
	const struct calibration **out = arena_calloc(a, (size_t)st->n_clusters, sizeof *out);
	for (int c = 0; out && info->calibration && c < st->n_clusters; c++) {
		const struct topology *t = st->clusters[c].topo;
		char file[4096];
		/* the file the sweep recorded (relative to the database's folder),
		 * else the cluster's default */
		const char *rec = info->calibration_files
		                          ? cli_meta_entry(file, sizeof file, info->calibration_files,
		                                           st->clusters[c].name)
		                          : NULL;
		if (rec && strcmp(rec, "none"))
			out[c] = swept(a, st, c, util_path_join(a, util_path_dir(a, db), rec),
			               info->calibration);
		if (!out[c])
			out[c] = swept(a, st, c,
			               cli_default_calibration_file(a, t, st->scenario->training.framework),
			               info->calibration);
	}
	return out;
}
