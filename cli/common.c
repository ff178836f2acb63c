/* common.c — what the subcommands share: printing diagnostics, loading a
 * topology or a graph from whichever kind of file the user names, and
 * readable SI figures. */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

/* Diagnostics are printed grouped by file (in the order files were first
 * mentioned) and by line inside a file, so that a reader can walk the file
 * top to bottom; the order among equal lines is the order of discovery. */
struct diag_ref {
	const struct diag *d;
	size_t file_rank, seq;
};

static int diag_ref_cmp(const void *pa, const void *pb)
{
	const struct diag_ref *a = pa, *b = pb;
	if (a->file_rank != b->file_rank)
		return a->file_rank < b->file_rank ? -1 : 1;
	if (a->d->line != b->d->line)
		return a->d->line < b->d->line ? -1 : 1;
	return a->seq < b->seq ? -1 : a->seq > b->seq;
}

static bool same_file(const struct diag *a, const struct diag *b)
{
	if (!a->file || !b->file)
		return a->file == b->file;
	return !strcmp(a->file, b->file);
}

void cli_note_uncalibrated(FILE *f, const struct topology *t)
{
	cli_note_kernel_model(f, t, t->calibration ? t->calibration->name : NULL);
}

void cli_note_kernel_model(FILE *f, const struct topology *t, const char *calibration)
{
	if (topo_compute_calibrated(&t->device))
		return;
	if (calibration) {
		fprintf(f, "note: the %s's kernel model is not calibrated (no GEMM-shape factor, no "
		        "per-kernel overhead); the calibration %s scales its times to measured "
		        "iterations, and their interval says how closely (docs/cost-models.md, "
		        "\"Calibration status\")\n", t->device.kind, calibration);
		return;
	}
	fprintf(f, "note: the %s's compute model is not calibrated (no GEMM-shape factor, no "
	        "per-kernel overhead): its compute times are optimistic; shardlab calibrate fits "
	        "them from kernel timings (docs/cost-models.md, \"Calibration status\")\n",
	        t->device.kind);
}

void cli_note_faults(FILE *f, const struct topology *t, int64_t devices)
{
	if (!t->faults)
		return;
	fprintf(f, "note: faults: the estimate prices every op at the slowest device's pace "
	        "(x%.3g) and each group's collectives at its slowest link (spine uplinks at "
	        "%.3g%% of their rate); only the simulation sees which ranks wait for whom, NICs carrying "
	        "failed-over traffic and rerouted flows contending (docs/simulation.md, "
	        "\"Faults\")\n",
	        cost_slowest_factor(t, devices), 100 * topo_spine_rate(t));
}

void cli_print_diags(const struct diag_list *d)
{
	struct diag_ref *refs = d->count ? malloc(d->count * sizeof(*refs)) : NULL;
	for (size_t i = 0; refs && i < d->count; i++) {
		size_t rank = i;
		for (size_t k = 0; k < i; k++)
			if (same_file(&d->items[k], &d->items[i])) {
				rank = refs[k].file_rank;
				break;
			}
		refs[i] = (struct diag_ref){&d->items[i], rank, i};
	}
	if (refs)
		qsort(refs, d->count, sizeof(*refs), diag_ref_cmp);
	for (size_t i = 0; i < d->count; i++) {
		char *s = diag_format(refs ? refs[i].d : &d->items[i]);
		fprintf(stderr, "%s\n", s ? s : "shardlab: out of memory");
		free(s);
	}
	free(refs);
	if (d->dropped)
		fprintf(stderr, "shardlab: %zu more diagnostic%s not shown\n", d->dropped,
		        d->dropped == 1 ? "" : "s");
	if (d->oom)
		fprintf(stderr, "shardlab: out of memory while recording diagnostics\n");
}

int cli_valued_option(int argc, char **argv, int *i, const char *const *names, size_t n,
                      const char *mode, const char **value)
{
	const char *o = argv[*i];
	size_t k = 0;
	while (k < n && strcmp(o, names[k]))
		k++;
	if (k == n) {
		fprintf(stderr, "shardlab calibrate: %s '%s' (with %s)\n",
		        o[0] == '-' ? "unknown option" : "unexpected argument", o, mode);
		return -1;
	}
	if (*i + 1 >= argc) {
		fprintf(stderr, "shardlab calibrate: %s needs a value\n", o);
		return -1;
	}
	/* an empty one names no file, row or figure, and an empty --name
	 * would write a calibration file its own reader refuses */
	if (!argv[*i + 1][0]) {
		fprintf(stderr, "shardlab calibrate: %s needs a value, got an empty one\n", o);
		return -1;
	}
	*value = argv[++*i];
	return (int)k;
}

bool cli_out_overwrites(const char *cmd, const char *out, const char *const *inputs, int n)
{
	struct stat o, in;
	if (!out || stat(out, &o) != 0)
		return false;  /* not there yet: nothing to replace */
	for (int i = 0; i < n; i++)
		if (inputs[i] && stat(inputs[i], &in) == 0 && in.st_dev == o.st_dev &&
		    in.st_ino == o.st_ino) {
			fprintf(stderr, "shardlab %s: --out %s is the input %s: write to another "
			        "file\n", cmd, out, inputs[i]);
			return true;
		}
	return false;
}

int cli_wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help"))
			return 1;
	return 0;
}

#define HF_CONFIG "Hugging Face config"

/* Parses the file and returns its "format" (and the value, for messages),
 * HF_CONFIG for a Hugging Face config.json, or NULL after diagnostics. */
static const char *open_any(struct json_doc *doc, const char *path, struct diag_list *d,
                            struct jv *format)
{
	struct jv root;
	int64_t version;
	if (!json_doc_load(doc, path, d) || !jv_root(doc, &root))
		return NULL;
	if (graph_hf_is_config(&root))
		return HF_CONFIG;
	const char *fmt = jv_format(&root, &version);
	jv_get(&root, "format", format);
	return fmt;
}

/* A file of kind `want` (TOPO_FORMAT or MODEL_FORMAT), or a scenario,
 * whose topology and graph stand in for it; for a model, a Hugging Face
 * config too (read as `shardlab import hf` reads it, at its own context). */
struct loaded {
	struct topology *topo;
	struct graph *graph;
};

static struct loaded load_either(struct arena *a, const char *path, struct diag_list *d,
                                 const char *want)
{
	struct json_doc doc;
	struct jv fv;
	struct loaded l = {NULL, NULL};
	const char *fmt = open_any(&doc, path, d, &fv);
	if (fmt && !strcmp(fmt, SCENARIO_FORMAT)) {
		struct scenario *s = scenario_load_doc(a, &doc);
		if (s)
			l = (struct loaded){s->topo, s->graph};
	} else if (fmt && !strcmp(fmt, want) && !strcmp(want, TOPO_FORMAT)) {
		l.topo = topo_load_doc(a, &doc);
	} else if (fmt && !strcmp(fmt, want)) {
		l.graph = graph_load_doc(a, &doc);
	} else if (fmt && !strcmp(fmt, HF_CONFIG) && !strcmp(want, MODEL_FORMAT)) {
		l.graph = graph_hf_load_doc(a, &doc, 0, 0);
	} else if (fmt && !strcmp(fmt, HF_CONFIG)) {
		diag_add(d, DIAG_ERROR, path, 1, NULL, "this is a Hugging Face model config, expected "
		         "\"%s\" or \"%s\" for this command", want, SCENARIO_FORMAT);
	} else if (fmt) {
		jv_error(&fv, "expected \"%s\" or \"%s\" for this command, got \"%s\"", want,
		         SCENARIO_FORMAT, fmt);
	}
	json_doc_free(&doc);
	return l;
}

struct topology *cli_load_topology(struct arena *a, const char *path, struct diag_list *d)
{
	return load_either(a, path, d, TOPO_FORMAT).topo;
}

struct graph *cli_load_graph(struct arena *a, const char *path, struct diag_list *d)
{
	return load_either(a, path, d, MODEL_FORMAT).graph;
}

/* Gigabytes (10^9 B) as the verdict writes them: whole above 10, else
 * two significant digits. */
static const char *gb(char *buf, size_t size, double bytes)
{
	double g = bytes / 1e9;
	snprintf(buf, size, fabs(g) >= 9.5 ? "%.0f" : "%.2g", g);
	return buf;
}

const char *cli_verdict_text(char *buf, size_t size, double memory, double hbm)
{
	struct cost_verdict v;
	char a[32], b[32], c[32];
	cost_memory_verdict(memory, hbm, &v);
	if (v.fit == FIT_TIGHT)
		snprintf(buf, size, "tight (%s-%s of %s GB)", gb(a, sizeof a, v.low_bytes),
		         gb(b, sizeof b, v.high_bytes), gb(c, sizeof c, hbm));
	else
		snprintf(buf, size, "%s (%s of %s GB)", cost_fit_names[v.fit], gb(a, sizeof a, memory),
		         gb(c, sizeof c, hbm));
	return buf;
}

const char *cli_oom_text(char *buf, size_t size, const char *sep, double memory, double hbm)
{
	struct cost_verdict v;
	cost_memory_verdict(memory, hbm, &v);
	if (v.fit == FIT_YES)
		return "";
	char t[96];
	snprintf(buf, size, "%s%s", sep, cli_verdict_text(t, sizeof t, memory, hbm));
	return buf;
}

bool cli_host_verdict(double host, double capacity)
{
	return host > 0 && capacity > 0;
}

const char *cli_host_oom_text(char *buf, size_t size, const char *sep, double host,
                              double capacity)
{
	if (!cli_host_verdict(host, capacity))
		return "";
	char s[64];
	snprintf(s, sizeof s, "%shost memory ", sep);
	return cli_oom_text(buf, size, s, host, capacity);
}

void report_json_host_oom(struct cJSON *obj, double host, double capacity)
{
	if (!cli_host_verdict(host, capacity))
		return;
	struct cost_verdict v;
	cost_memory_verdict(host, capacity, &v);
	cJSON_AddBoolToObject(obj, "host_oom", v.fit == FIT_NO);
	cJSON_AddNumberToObject(obj, "host_overflow_bytes", host > capacity ? host - capacity : 0);
}

const char *cli_stage_layers_text(char *buf, size_t size, const struct search_config *c,
                                  int64_t layers)
{
	size_t used = 0;
	buf[0] = '\0';
	if (!c->stage_layers && c->first_stage_layers < 1 && c->last_stage_layers < 1)
		return buf;
	int64_t v = c->schedule == SCHED_INTERLEAVED_1F1B ? c->virtual_stages : 1;
	for (int64_t k = 0; k < c->pp && used < size; k++)
		used += (size_t)snprintf(buf + used, size - used, "%s%lld", k ? "/" : "",
		                         (long long)scenario_stage_layers(
		                                 layers, c->pp, v, c->first_stage_layers,
		                                 c->last_stage_layers, c->stage_layers, k, NULL, 0));
	return buf;
}

void cli_json_verdict(struct cJSON *obj, double memory, double hbm)
{
	struct cost_verdict v;
	cost_memory_verdict(memory, hbm, &v);
	cJSON_AddStringToObject(obj, "memory_verdict", cost_fit_names[v.fit]);
	cJSON_AddNumberToObject(obj, "memory_low_bytes", v.low_bytes);
	cJSON_AddNumberToObject(obj, "memory_high_bytes", v.high_bytes);
	cJSON_AddNumberToObject(obj, "memory_margin_bytes", v.margin_bytes);
}

const char *cli_si(char *buf, size_t size, double value, const char *unit)
{
	static const struct {
		double scale;
		const char *prefix;
	} si[] = {{1e18, "E"}, {1e15, "P"}, {1e12, "T"}, {1e9, "G"}, {1e6, "M"}, {1e3, "k"},
	          {1, ""},     {1e-3, "m"}, {1e-6, "u"}, {1e-9, "n"}};
	double mag = fabs(value);
	size_t i = 0;
	if (mag == 0) {
		snprintf(buf, size, "0%s%s", *unit ? " " : "", unit);
		return buf;
	}
	if (!isfinite(value) || mag >= 999.5 * si[0].scale) {
		/* Beyond the prefixes: three digits and an exponent, never a
		 * row of digits that breaks a table. */
		snprintf(buf, size, "%.3g%s%s", value, *unit ? " " : "", unit);
		return buf;
	}
	while (i + 1 < SL_COUNTOF(si) && mag < si[i].scale * 0.9995)
		i++;
	double v = value / si[i].scale;
	/* Three significant digits, trailing zeros dropped: 312, 1.6, 0.6 */
	char num[32];
	snprintf(num, sizeof num, "%.*f", fabs(v) >= 100 ? 0 : fabs(v) >= 10 ? 1 : 2, v);
	if (strchr(num, '.')) {
		char *e = num + strlen(num) - 1;
		while (*e == '0')
			*e-- = '\0';
		if (*e == '.')
			*e = '\0';
	}
	bool bare = !*si[i].prefix && !*unit;
	snprintf(buf, size, "%s%s%s%s", num, bare ? "" : " ", si[i].prefix, unit);
	return buf;
}

/* Planners this build can run, in the order help texts list them. */
static const enum planner_kind available_planners[] = {PLANNER_PROPAGATE, PLANNER_RECURSIVE,
                                                 PLANNER_DATA_PARALLEL, PLANNER_MEGATRON,
                                                 PLANNER_MEGATRON_SEARCH};

bool cli_planner_available(enum planner_kind k)
{
	for (size_t i = 0; i < SL_COUNTOF(available_planners); i++)
		if (available_planners[i] == k)
			return true;
	return false;
}

int cli_parse_name(const char *cmd, const char *option, const char *value,
                   const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(value, names[i]))
			return i;
	fprintf(stderr, "shardlab %s: %s takes", cmd, option);
	for (int i = 0; i < n; i++)
		fprintf(stderr, "%s %s", i == 0 ? "" : i == n - 1 ? " or" : ",", names[i]);
	fprintf(stderr, ", got '%s'\n", value);
	return -1;
}

int cli_scenario_word(const char *cmd, const char *word, const char **file)
{
	if (word[0] == '-')
		fprintf(stderr, "shardlab %s: unknown option '%s' (see --help)\n", cmd, word);
	else if (*file)
		fprintf(stderr, "shardlab %s: one scenario at a time ('%s')\n", cmd, word);
	else
		*file = word;
	return *file == word ? EXIT_OK : EXIT_USAGE;
}

int cli_scenario_named(const char *cmd, const char *file)
{
	if (file)
		return EXIT_OK;
	fprintf(stderr, "shardlab %s: missing SCENARIO (see --help)\n", cmd);
	return EXIT_USAGE;
}

int cli_parse_range(const char *cmd, const char *option, const char *text, int64_t min,
                    int64_t max, int64_t *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(text, &end, 10);
	if (*text == '\0' || *end != '\0' || errno || v < min || v > max) {
		fprintf(stderr, "shardlab %s: %s takes a count from %lld to %lld, got '%s'\n", cmd,
		        option, (long long)min, (long long)max, text);
		return EXIT_USAGE;
	}
	*out = v;
	return EXIT_OK;
}

int cli_parse_count(const char *cmd, const char *option, const char *text, int64_t max,
                    int64_t *out)
{
	return cli_parse_range(cmd, option, text, 0, max, out);
}

int cli_parse_planner(const char *cmd, const char *name)
{
	int k = -1;
	for (int i = 0; i < PLANNER_COUNT; i++)
		if (!strcmp(name, planner_names[i]))
			k = i;
	if (k >= 0 && cli_planner_available((enum planner_kind)k))
		return k;
	fprintf(stderr, k < 0 ? "shardlab %s: unknown planner '%s'; available:"
	                      : "shardlab %s: planner '%s' is not available yet; available:",
	        cmd, name);
	for (size_t i = 0; i < SL_COUNTOF(available_planners); i++)
		fprintf(stderr, " %s", planner_names[available_planners[i]]);
	fprintf(stderr, "\n");
	return -1;
}

const char cli_override_help[] =
	"  --devices N     use N devices: fewer than the topology has, or more\n"
	"                  (a multiple of a server's devices: the cluster grows\n"
	"                  by whole servers on the same fabric)\n"
	"  --topology FILE another topology (file or scenario), all its devices\n"
	"                  unless --devices says otherwise\n"
	"  --global-batch B\n"
	"                  the global batch in samples (a multiple of the\n"
	"                  model's batch)\n"
	"  --calibration FILE\n"
	"                  a calibration file (docs/formats.md): each figure\n"
	"                  replaces the topology parameter it names; \"auto\"\n"
	"                  (the default): the one the topology file names\n"
	"                  (\"calibration\"), else the shipped one of the device\n"
	"                  for the scenario's training.framework (calibration/)\n"
	"                  where there is one; \"none\": the bare\n"
	"                  model. A calibration with a training fit gives the\n"
	"                  iteration time its 90% interval, and a line names\n"
	"                  the plan's settings outside the runs it was fitted\n"
	"                  on (\"outside its runs\"; JSON: the interval's\n"
	"                  \"outside_fitted_runs\")\n";

int cli_override_option(const char *cmd, int argc, char **argv, int *i, struct cli_overrides *ov)
{
	const char *o = argv[*i];
	bool dev = !strcmp(o, "--devices"), top = !strcmp(o, "--topology"),
	     gb = !strcmp(o, "--global-batch"), cal = !strcmp(o, "--calibration");
	if (!(dev || top || gb || cal) || *i + 1 >= argc)
		return 0;
	const char *v = argv[++*i];
	if (top || cal) {
		*(top ? &ov->topology : &ov->calibration) = v;
		return 1;
	}
	/* The ranges a scenario file states for the same figures. */
	int64_t n = 0;
	if (cli_parse_range(cmd, o, v, 1, dev ? SCENARIO_MAX_DEVICES : SCENARIO_MAX_GLOBAL_BATCH,
	                    &n) != EXIT_OK)
		return -1;
	if (dev)
		ov->devices = n;
	else
		ov->global_batch = n;
	return 1;
}

struct scenario *cli_load_scenario(struct arena *a, const char *file,
                                   const struct cli_overrides *ov, struct diag_list *d)
{
	struct scenario *s = a ? scenario_load(a, file, d) : NULL;
	if (!s || !ov)
		return s;
	size_t errors = d->errors;
	if (!ov->devices && !ov->topology && !ov->global_batch && !ov->calibration) {
		cli_default_calibration(a, s->topo, s->training.framework, d);
		return d->errors == errors ? s : NULL;
	}
	if (ov->topology) {
		struct topology *t = cli_load_topology(a, ov->topology, d);
		if (!t)
			return NULL;
		if (s->topo->faults)
			diag_add(d, DIAG_WARNING, "--topology", 0, NULL,
			         "the scenario's faults name elements of its own topology: the run "
			         "on %s has none", t->name);
		s->topo = t;
		s->topology_file = ov->topology;
		s->devices = t->n_devices;
	}
	if (ov->devices) {
		char why[256];
		struct topology *t = topo_for_devices(a, s->topo, ov->devices, why, sizeof why);
		if (!t)
			diag_add(d, DIAG_ERROR, "--devices", 0, NULL, "%s", why);
		else
			s->topo = t;
		s->devices = ov->devices;
		char cut[512];
		if (t && !topo_faults_connected(t, s->devices, cut, sizeof cut))
			diag_add(d, DIAG_ERROR, "--devices", 0, NULL, "%s", cut);
	}
	if (ov->global_batch)
		s->training.global_batch = ov->global_batch;
	if (d->errors == errors && ov->calibration)
		cli_apply_calibration(a, ov->calibration, s->topo, s->training.framework, d);
	else if (d->errors == errors)
		cli_default_calibration(a, s->topo, s->training.framework, d);
	int64_t pp = s->training.pipeline_stages, gb = s->graph->batch;
	if (s->devices % pp)
		diag_add(d, DIAG_ERROR, ov->devices ? "--devices" : "--topology", 0, NULL,
		         "%lld devices are not a multiple of the scenario's %lld pipeline stages",
		         (long long)s->devices, (long long)pp);
	if (gb > 0 && s->training.global_batch % gb)
		diag_add(d, DIAG_ERROR, ov->global_batch ? "--global-batch" : file, 0, NULL,
		         "a global batch of %lld is not a multiple of the model's batch of %lld "
		         "samples (one micro-batch of every replica)",
		         (long long)s->training.global_batch, (long long)gb);
	else if (gb > 0)
		s->training.micro_batches = s->training.global_batch / gb;
	return d->errors == errors ? s : NULL;
}

int cli_plan_option(const char *cmd, int argc, char **argv, int *i, struct cli_plan_args *pa)
{
	int ov = cli_override_option(cmd, argc, argv, i, &pa->ov);
	if (ov)
		return ov;
	const char *o = argv[*i];
	if (!strcmp(o, "--fused")) {
		pa->o.mode = REDIST_FUSED;
		return 1;
	}
	bool valued = !strcmp(o, "--planner") || !strcmp(o, "--rec-cost") ||
	              !strcmp(o, "--rec-order");
	if (!valued || *i + 1 >= argc)
		return 0;
	const char *v = argv[++*i];
	int k = 0;
	if (!strcmp(o, "--planner") && (k = cli_parse_planner(cmd, v)) >= 0) {
		pa->named = true;
		pa->planner = (enum planner_kind)k;
	} else if (!strcmp(o, "--rec-cost") &&
	         (k = cli_parse_name(cmd, o, v, rec_cost_names, REC_COST_COUNT)) >= 0)
		pa->o.rec_cost = (enum rec_cost)k;
	else if (!strcmp(o, "--rec-order") &&
	         (k = cli_parse_name(cmd, o, v, rec_order_names, REC_ORDER_COUNT)) >= 0)
		pa->o.rec_order = (enum rec_order)k;
	return k >= 0 ? 1 : -1;
}

static void plan_progress_cb(void *ctx, double fraction)
{
	struct cli_progress *p = ctx;
	int pct = (int)(100 * (fraction < 0 ? 0 : fraction > 1 ? 1 : fraction));
	if (p->shown && pct == p->last_pct)
		return;
	fprintf(stderr, "\r\033[K%s: %3d%%", p->what, pct);
	fflush(stderr);
	p->last_pct = pct;
	p->shown = true;
}

void cli_progress_attach(struct cli_progress *pr, const char *what, struct plan_options *o)
{
	*pr = (struct cli_progress){.what = what, .last_pct = -1};
	if (isatty(STDERR_FILENO)) {
		o->progress = plan_progress_cb;
		o->progress_ctx = pr;
	}
}

void cli_progress_clear(struct cli_progress *pr)
{
	if (pr->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	pr->shown = false;
}

struct plan *cli_load_plan(struct arena *a, const char *file, const struct cli_plan_args *pa,
                           struct scenario **s, enum planner_kind *kind, struct diag_list *d)
{
	*s = cli_load_scenario(a, file, &pa->ov, d);
	if (pa->named)
		*kind = pa->planner;
	else if (*s && (*s)->n_planners > 0 && cli_planner_available((*s)->planners[0]))
		*kind = (*s)->planners[0];
	else
		*kind = PLANNER_PROPAGATE;
	struct plan_options o = pa->o;
	struct cli_progress pr;
	cli_progress_attach(&pr, "searching plans", &o);
	struct plan *p = *s ? plan_make(a, *s, *kind, &o, d) : NULL;
	cli_progress_clear(&pr);
	return p;
}

int cli_parse_max_events(const char *cmd, const char *v, double *out)
{
	char *end;
	double n = strtod(v, &end);
	if (*v == '\0' || *end != '\0' || !(n >= 1) || n > 1e15) {
		fprintf(stderr, "shardlab %s: --max-events takes a count from 1 to 1e15, got '%s'\n",
		        cmd, v);
		return EXIT_USAGE;
	}
	*out = n;
	return EXIT_OK;
}
