/* cmd_calibrate.c — `shardlab calibrate TABLE [--topology FILE] [--json]`:
 * the compute model's parameters (docs/cost-models.md) fitted by least
 * squares to a CSV table of measured kernel times (planner/cost/calibrate.c),
 * with their standard errors, the residuals, and the topology "device"
 * members to paste; or, when TABLE is a collective benchmark's output
 * (nccl-tests, hccl_test), a tier's latency and bandwidth efficiency
 * (planner/cost/calcoll.c) with their errors in and out of sample. With
 * --out FILE, the figures as a calibration file (planner/cost/calfile.c).
 *
 * Figures are printed with fixed formats (%.4g for the parameters, whose
 * printed text is also the value the JSON's device_section carries), so
 * the same table always gives the same bytes.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab calibrate TABLE [--topology FILE [--keep NAMES]]\n"
	        "                               [--json | --csv] [--out FILE]\n"
	        "       shardlab calibrate BENCH --collective NAME [--ranks N]\n"
	        "                               [--topology FILE [--tier NAME |\n"
	        "                                --figures NAMES]]\n"
	        "                               [--algorithm NAME] [--json | --csv]\n"
	        "                               [--out FILE]\n"
	        "\n"
	        "Fit the compute model of docs/cost-models.md to measured kernel times:\n"
	        "  t = overhead + max(flops / (peak x matmul_efficiency x g(m) g(n) g(k)),\n"
	        "                     bytes / (HBM bandwidth x memory_efficiency))\n"
	        "with g(x) = x / (x + gemm_half_dim), by nonlinear least squares on the\n"
	        "relative residuals (GSL). TABLE is a CSV file: '#' comments, a header\n"
	        "naming the columns kind, m, n, k, batch, dtype, bytes, seconds, pass\n"
	        "(any order), then one kernel per line: kind gemm (m, n, k, dtype,\n"
	        "seconds; batch and bytes optional), memory (bytes, seconds), or a\n"
	        "kernel class: norm, softmax, dropout, activation or loss (bytes: the\n"
	        "op's input and output; seconds; pass forward or backward).\n"
	        "Prints each parameter with its standard error, the RMS relative error,\n"
	        "the worst rows and the members to paste into the topology's \"device\".\n"
	        "The classes' rows are not fitted: with --topology each gives the\n"
	        "fraction of the HBM rate at which the model (with the fitted, or\n"
	        "else the topology's, overhead) takes its time, and the median of a\n"
	        "class's rows, at most memory_efficiency, is its kernel_efficiency\n"
	        "(docs/cost-models.md, \"Memory-bound kernels by class\"). A table of\n"
	        "classes' rows alone fits nothing.\n"
	        "\n"
	        "options:\n"
	        "  --topology FILE  the device measured (a topology or scenario file):\n"
	        "                   the rates become efficiencies of its peaks, and a\n"
	        "                   table without memory rows keeps its\n"
	        "                   memory_efficiency as the GEMMs' memory floor;\n"
	        "                   needed for the kernel classes' rows.\n"
	        "                   Without it the fit reports absolute rates (FLOP/s,\n"
	        "                   B/s) and no device section\n"
	        "  --keep NAMES     hold these parameters at the topology's values and fit\n"
	        "                   the others (comma-separated: matmul_efficiency,\n"
	        "                   gemm_half_dim, memory_efficiency, kernel_overhead_us);\n"
	        "                   for a figure the table cannot pin, such as the\n"
	        "                   asymptotic GEMM rate of a table of small GEMMs\n"
	        "  --json           print JSON: \"table\", \"topology\", \"device\",\n"
	        "                   \"rows\", \"gemm_rows\", \"memory_rows\", \"class_rows\",\n"
	        "                   \"parameters\"\n"
	        "                   ({name: {\"value\", \"std_error\", \"source\",\n"
	        "                   \"identifiable\"}}; \"cv\" ({\"method\", \"folds\",\n"
	        "                   \"mape_pct\", \"rms_pct\"});\n"
	        "                   source fitted, held or kept; without --topology the\n"
	        "                   rates are gemm_flops and memory_bps),\n"
	        "                   \"iterations\", \"rms_relative_error\", \"residuals\"\n"
	        "                   ([{\"line\", \"kind\", \"measured_s\", \"model_s\",\n"
	        "                   \"relative\"}], file order), and with --topology\n"
	        "                   \"kernel_classes\" ({class: {\"forward\", \"backward\",\n"
	        "                   \"rows\"}}) and \"device_section\" (its kernel_efficiency\n"
	        "                   when the table has classes' rows)\n"
	        "  --csv            print the residuals as CSV, one row per kernel in\n"
	        "                   file order: line, kind, m, n, k, batch, dtype,\n"
	        "                   bytes, measured_s, model_s, relative_error_pct\n"
	        "  --out FILE       also write the fitted figures as a calibration file (not\n"
	        "                   one of the inputs: refused)\n"
	        "                   (\"format\": \"shardlab-calibration\", docs/formats.md)\n"
	        "                   for --calibration FILE (needs --topology): each\n"
	        "                   with its standard error, their covariance and the\n"
	        "                   cross-validated error\n"
	        "  -h, --help       this help\n"
	        "\n"
	        "The fit's error out of sample is printed after it: each row predicted\n"
	        "by the fit of the others (leave-one-out; 10-fold above 20 rows). A\n"
	        "parameter whose standard error is over half its value is not\n"
	        "identifiable from the table: a warning says so.\n"
	        "\n");
	fprintf(f,
	        "BENCH is a collective benchmark's output as its tool prints it:\n"
	        "nccl-tests (all_reduce_perf, all_gather_perf, reduce_scatter_perf,\n"
	        "alltoall_perf: the table under \"# size count type redop root time\n"
	        "algbw busbw #wrong ...\", its out-of-place time) or HCCL's hccl_test\n"
	        "(\"data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): |\n"
	        "check_result:\"). With --topology, the latency (us) and bandwidth\n"
	        "efficiency (of the line rate) of the tier the ranks share, or of the\n"
	        "NICs when they span servers, fitted so that the cost model\n"
	        "(docs/cost-models.md: its algorithm and protocol size by size) gives\n"
	        "the measured times; without, nccl-tests' alpha-beta formula (alpha\n"
	        "per step, bus bandwidth B). Least squares on the relative errors\n"
	        "(GSL); prints each figure with its standard error, warns when one is\n"
	        "not identifiable, and the cross-validated error: each size predicted\n"
	        "by the fit of the others (leave-one-out; 10-fold above 20 sizes).\n"
	        "  --collective NAME all-reduce, all-gather, reduce-scatter or all-to-all\n"
	        "                   (the tools do not print it)\n"
	        "  --ranks N        the ranks measured (nccl-tests: its \"# Rank\" lines\n"
	        "                   when printed; needed for hccl_test)\n"
	        "  --tier NAME      the figures' tier (a tier of the topology, or nic)\n"
	        "  --figures NAMES  fit these figures instead (comma-separated, at most\n"
	        "                   the sizes - 1; with --topology, not --tier):\n"
	        "                   tiers.TIER.latency_us, tiers.TIER.efficiency,\n"
	        "                   nic.latency_us, nic.efficiency, and NCCL's per-step\n"
	        "                   latency by algorithm and protocol,\n"
	        "                   nccl.ALGO.PROTO.HW_us (ALGO tree or ring, PROTO ll,\n"
	        "                   ll128 or simple, HW nvlink, pci or net): it moves the\n"
	        "                   time of that algorithm and protocol, not NCCL's\n"
	        "                   choice of them\n"
	        "  --algorithm NAME the algorithm the run forced (NCCL_ALGO): ring,\n"
	        "                   tree, ...; default auto, the library's choice\n"
	        "\n"
	        "\n");
	calibrate_runs_help(f);
	calibrate_transfer_help(f);
	fprintf(f,
	        "exit status: 0 success, 1 invalid table or topology, or a table that\n"
	        "cannot determine the parameters (diagnostics on stderr as\n"
	        "FILE:LINE: COLUMN: MESSAGE), 2 usage error.\n");
}

struct args {
	const char *table, *topology;
	unsigned keep;               /* 1 << calib_param_id */
	bool json, csv;
	const char *out;             /* --out: the calibration file */
	int collective;              /* index in collective_words; -1: not given */
	int64_t ranks;               /* 0: the table's */
	const char *tier;
	int algo;                    /* enum collective_algo */
	const char *figures;         /* --figures NAME[,NAME...]; NULL: the tier's pair */
};

/* The collectives --collective names, nccl-tests' words, and their steps. */
static const char *const collective_words[] = {"all-reduce", "all-gather", "reduce-scatter",
                                               "all-to-all"};
static const enum step_kind collective_steps[] = {STEP_ALLREDUCE, STEP_ALLGATHER,
                                                  STEP_REDUCESCATTER, STEP_ALLTOALL};

/* --keep NAME[,NAME...]: parameters held at the topology's values. */
static bool parse_keep(const char *list, unsigned *keep)
{
	const char *s = list;
	while (*s) {
		size_t len = strcspn(s, ",");
		int p = 0;
		while (p < CALIB_PARAM_COUNT &&
		       (strlen(calib_param_names[p]) != len || strncmp(s, calib_param_names[p], len)))
			p++;
		if (p == CALIB_PARAM_COUNT) {
			fprintf(stderr,
			        "shardlab calibrate: --keep takes matmul_efficiency, gemm_half_dim, "
			        "memory_efficiency or kernel_overhead_us (comma-separated), got '%.*s'\n",
			        (int)len, s);
			return false;
		}
		*keep |= 1u << p;
		s += len + (s[len] == ',');
	}
	return true;
}

static bool parse_args(int argc, char **argv, struct args *a)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!strcmp(argv[i], "--csv")) {
			a->csv = true;
		} else if (!strcmp(argv[i], "--topology") || !strcmp(argv[i], "--keep") ||
		           !strcmp(argv[i], "--out") || !strcmp(argv[i], "--collective") ||
		           !strcmp(argv[i], "--ranks") || !strcmp(argv[i], "--tier") ||
		           !strcmp(argv[i], "--algorithm") || !strcmp(argv[i], "--figures")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "shardlab calibrate: %s needs a value\n", argv[i]);
				return false;
			}
			const char *o = argv[i], *v = argv[++i];
			if (!strcmp(o, "--topology"))
				a->topology = v;
			else if (!strcmp(o, "--out"))
				a->out = v;
			else if (!strcmp(o, "--tier"))
				a->tier = v;
			else if (!strcmp(o, "--figures"))
				a->figures = v;
			else if (!strcmp(o, "--collective") &&
			         (a->collective = cli_parse_name("calibrate", o, v, collective_words,
			                                         (int)SL_COUNTOF(collective_words))) < 0)
				return false;
			else if (!strcmp(o, "--algorithm") &&
			         (a->algo = cli_parse_name("calibrate", o, v, collective_algo_names,
			                                   COLL_COUNT)) < 0)
				return false;
			else if (!strcmp(o, "--ranks") &&
			         cli_parse_count("calibrate", o, v, 1 << 20, &a->ranks) != EXIT_OK)
				return false;
			else if (!strcmp(o, "--keep") && !parse_keep(v, &a->keep))
				return false;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "shardlab calibrate: unknown option '%s'\n", argv[i]);
			return false;
		} else if (a->table) {
			fprintf(stderr, "shardlab calibrate: one TABLE only ('%s' and '%s')\n", a->table,
			        argv[i]);
			return false;
		} else {
			a->table = argv[i];
		}
	}
	if (a->json && a->csv) {
		fprintf(stderr, "shardlab calibrate: --json or --csv, not both\n");
		return false;
	}
	if (!a->table)
		fprintf(stderr, "shardlab calibrate: missing TABLE\n");
	else if (a->keep && !a->topology)
		fprintf(stderr, "shardlab calibrate: --keep holds parameters at a topology's values: "
		                "give --topology FILE\n");
	else if (a->out && !a->topology)
		fprintf(stderr, "shardlab calibrate: --out writes figures of a topology: give "
		                "--topology FILE\n");
	return a->table != NULL && (!a->keep || a->topology) && (!a->out || a->topology);
}

/* ------------------------------------------------------ the device section */

/* The members to paste, in calib_param_id order, each rounded to the
 * digits printed (%.4g) and clamped into what a topology file accepts;
 * a warning says when a value had to be clamped. */
struct section {
	double value[CALIB_PARAM_COUNT];   /* kernel_overhead in microseconds */
	bool fitted;                       /* the four come from a fit (gemm or memory rows) */
	const struct calib_classes *cls;   /* with a device: the kernel classes' rows */
	double kernel_eff[TOPO_KC_COUNT][2]; /* rounded; a pass without rows: memory_efficiency */
	bool has_class[TOPO_KC_COUNT];
	char warn[CALIB_PARAM_COUNT + TOPO_KC_COUNT][256];
	int n_warn;
};

static double rounded(double v)
{
	char b[32];
	snprintf(b, sizeof b, "%.4g", v);
	return strtod(b, NULL);
}

static void make_section(const struct calib_fit *f, const struct calib_classes *cls,
                         struct section *s)
{
	static const double lo[CALIB_PARAM_COUNT] = {1e-6, 0, 1e-6, 0};
	static const double hi[CALIB_PARAM_COUNT] = {1, TOPO_MAX_GEMM_HALF_DIM, 1,
	                                             TOPO_MAX_KERNEL_OVERHEAD_US};
	static const char *const why[CALIB_PARAM_COUNT] = {
		("a rate above the peak (the table does not pin the asymptote: put a measured "
		 "matmul_efficiency in the topology and --keep it)"),
		"past the largest half-dimension",
		"a bandwidth above the HBM's", "a negative overhead"};
	memset(s, 0, sizeof *s);
	for (int p = 0; p < CALIB_PARAM_COUNT; p++) {
		double v = f->param[p].value * (p == CALIB_KERNEL_OVERHEAD ? 1e6 : 1);
		double c = v < lo[p] ? lo[p] : v > hi[p] ? hi[p] : v;
		if (c != v)
			snprintf(s->warn[s->n_warn++], sizeof s->warn[0],
			         "the fitted %s %.4g is %s, which a topology does not accept; the section "
			         "says %.4g",
			         calib_param_names[p], v, why[p], c);
		s->value[p] = rounded(c);
	}
	s->fitted = f->n_rows > 0;
	s->cls = cls;
	for (int k = 0; cls && k < TOPO_KC_COUNT; k++) {
		s->has_class[k] = cls->rows[k][0] > 0 || cls->rows[k][1] > 0;
		if (!s->has_class[k])
			continue;
		for (int i = 0; i < 2; i++)
			s->kernel_eff[k][i] = rounded(cls->rows[k][i] > 0 ? cls->eff[k][i] : s->value[CALIB_MEMORY_EFFICIENCY]);
		if (!cls->rows[k][0] || !cls->rows[k][1])
			snprintf(s->warn[s->n_warn++], sizeof s->warn[0],
			         "%s has no %s rows: the section gives it memory_efficiency", topo_kernel_class_names[k],
			         cls->rows[k][0] ? "backward" : "forward");
	}
}

/* The kernel_efficiency member, as the section prints it. */
static void print_kernel_member(const struct section *s, bool last)
{
	bool any = false;
	for (int k = 0; k < TOPO_KC_COUNT; k++)
		any = any || s->has_class[k];
	if (!any)
		return;
	printf("  \"kernel_efficiency\": {");
	const char *sep = "";
	for (int k = 0; k < TOPO_KC_COUNT; k++)
		if (s->has_class[k]) {
			printf("%s\"%s\": [%.4g, %.4g]", sep, topo_kernel_class_names[k], s->kernel_eff[k][0],
			       s->kernel_eff[k][1]);
			sep = ", ";
		}
	printf("}%s\n", last ? "" : ",");
}

/* ---------------------------------------------------------------- text */

static const char *row_text(char *buf, size_t size, const struct calib_row *r)
{
	if (r->kind == CALIB_MEMORY) {
		char b[32];
		snprintf(buf, size, "memory %s", cli_si(b, sizeof b, r->bytes, "B"));
	} else if (r->batch > 1) {
		snprintf(buf, size, "gemm %.0f x %.0f x %.0f x %.0f %s", r->batch, r->m, r->n, r->k,
		         dtype_names[r->dtype]);
	} else {
		snprintf(buf, size, "gemm %.0f x %.0f x %.0f %s", r->m, r->n, r->k,
		         dtype_names[r->dtype]);
	}
	return buf;
}

/* One parameter's line: its name (the device member, or the absolute rate
 * without a device), value, standard error and a note. */
static void print_param(const struct calib_fit *f, const struct topo_device *d, int p)
{
	const struct calib_param *q = &f->param[p];
	char v[32], e[32], note[160] = "", b1[32], b2[32];
	const char *name = calib_param_names[p];
	double scale = 1;
	if (!q->fitted && !q->held && (!d || p == CALIB_GEMM_HALF_DIM || p == CALIB_MATMUL_EFFICIENCY))
		return; /* nothing in the table bears on it */
	switch (p) {
	case CALIB_MATMUL_EFFICIENCY:
		if (!d) {
			name = "gemm_rate";
			scale = 1e-12;
			snprintf(note, sizeof note, "asymptotic %s GEMM rate, TFLOP/s",
			         dtype_names[f->dtype]);
		} else if (d->peak_flops[f->dtype] > 0) {
			snprintf(note, sizeof note, "asymptotic GEMM rate %s of the %s peak %s",
			         cli_si(b1, sizeof b1, q->value * d->peak_flops[f->dtype], "FLOP/s"),
			         dtype_names[f->dtype], cli_si(b2, sizeof b2, d->peak_flops[f->dtype], "FLOP/s"));
		}
		break;
	case CALIB_GEMM_HALF_DIM:
		snprintf(note, sizeof note, "g(x) = x / (x + gemm_half_dim)");
		break;
	case CALIB_MEMORY_EFFICIENCY:
		if (!d) {
			name = "memory_bandwidth";
			scale = 1e-9;
			snprintf(note, sizeof note, "sustained, GB/s");
		} else {
			snprintf(note, sizeof note, "sustained bandwidth %s of the HBM's %s",
			         cli_si(b1, sizeof b1, q->value * d->hbm_bps, "B/s"),
			         cli_si(b2, sizeof b2, d->hbm_bps, "B/s"));
		}
		break;
	default:
		scale = 1e6;
		break;
	}
	snprintf(v, sizeof v, "%.4g", q->value * scale);
	if (q->fitted)
		snprintf(e, sizeof e, "%.2g", q->std_error * scale);
	else
		snprintf(e, sizeof e, "%s", q->held ? "held" : "kept");
	if (!q->fitted && !q->held)
		snprintf(note, sizeof note, "the topology's: the table has no %s rows",
		         p == CALIB_MEMORY_EFFICIENCY ? "memory" : "gemm");
	printf("  %-20s %-10s %-10s %s\n", name, v, e, note);
}

static void print_classes(const struct calib_table *t, const struct topo_device *d,
                          const struct calib_fit *f, const struct section *s);

/* A fitted parameter the table pins: its standard error at most half its
 * value (the collective fit's rule, planner/cost/calcoll.c). */
static bool identifiable(const struct calib_param *q)
{
	return !q->fitted || (isfinite(q->std_error) && q->std_error <= 0.5 * fabs(q->value));
}

static void print_text(const struct args *a, const struct calib_table *t,
                       const struct topology *topo, const struct calib_fit *f,
                       const struct section *s, const struct calib_cv *cv)
{
	char b1[32], b2[32], what[96], pct[32];
	const struct topo_device *d = topo ? &topo->device : NULL;
	printf("calibrate %s: %d row%s (%d gemm, %d memory", t->file, t->n_rows + t->n_class,
	       t->n_rows + t->n_class == 1 ? "" : "s", t->n_gemm, t->n_memory);
	if (t->n_class)
		printf(", %d of kernel classes", t->n_class);
	printf(")");
	if (topo)
		printf(" on %s (%s)", topo->device.kind, a->topology);
	printf("\n");
	if (t->n_rows == 0) {
		print_classes(t, d, f, s);
		return;
	}
	printf("\n  %-20s %-10s %-10s\n", "parameter", "value", "std. error");
	for (int p = 0; p < CALIB_PARAM_COUNT; p++)
		print_param(f, d, p);
	for (int p = 0; p < CALIB_PARAM_COUNT; p++)
		if (!identifiable(&f->param[p]))
			printf("warning: %s is not identifiable from this table (its standard error is "
			       "over half its value): hold it (--keep) or add rows that bear on it\n",
			       calib_param_names[p]);
	const struct calib_row *w = &t->rows[f->max_row];
	printf("\nfit: %d rows, %d parameters, %d iterations; RMS relative error %.1f%%\n",
	       f->n_rows, f->n_params, f->iterations, 100 * f->rms_rel);
	if (isfinite(cv->mape_pct))
		printf("cross-validated (%s, %d folds): MAPE %.1f%% (RMS %.1f%%)\n", cv->method,
		       cv->folds, cv->mape_pct, cv->rms_pct);
	else
		printf("cross-validated: - (a fold leaves too few rows to fit)\n");
	printf("largest residual: %s at line %d (%s: measured %s, model %s)\n",
	       report_pct_text(pct, sizeof pct, 100 * f->rel[f->max_row]), w->line,
	       row_text(what, sizeof what, w),
	       cli_si(b1, sizeof b1, w->seconds, "s"),
	       cli_si(b2, sizeof b2, w->seconds * (1 + f->rel[f->max_row]), "s"));
	if (f->peak_fallback)
		printf("warning: a GEMM row's dtype has no peak in the topology: the fastest floating "
		       "peak was used\n");
	if (!d) {
		printf("\nno device: give --topology FILE to express the rates as efficiencies of its\n"
		       "peaks and get the topology's device section\n");
		return;
	}
	print_classes(t, d, f, s);
}

/* The kernel classes' efficiencies (when the table has their rows), the
 * warnings and the device section. */
static void print_classes(const struct calib_table *t, const struct topo_device *d,
                          const struct calib_fit *f, const struct section *s)
{
	if (t->n_class) {
		printf("\nmemory-bound kernels by class (of the HBM's %.4g TB/s; overhead %.4g us, "
		       "memory_efficiency %.4g %s):\n",
		       d->hbm_bps * 1e-12, f->param[CALIB_KERNEL_OVERHEAD].value * 1e6,
		       f->param[CALIB_MEMORY_EFFICIENCY].value, s->fitted ? "as above" : "the topology's");
		printf("  %-12s %-10s %-10s rows\n", "class", "forward", "backward");
		for (int k = 0; k < TOPO_KC_COUNT; k++) {
			if (!s->has_class[k])
				continue;
			char fb[2][16];
			for (int i = 0; i < 2; i++)
				if (s->cls->rows[k][i])
					snprintf(fb[i], sizeof fb[i], "%.4g", s->cls->eff[k][i]);
				else
					snprintf(fb[i], sizeof fb[i], "-");
			printf("  %-12s %-10s %-10s %d / %d\n", topo_kernel_class_names[k], fb[0], fb[1],
			       s->cls->rows[k][0], s->cls->rows[k][1]);
		}
	}
	for (int i = 0; i < s->n_warn; i++)
		printf("warning: %s\n", s->warn[i]);
	printf("\ndevice section (paste into the topology's \"device\"):\n");
	if (s->fitted)
		for (int p = 0; p < CALIB_PARAM_COUNT; p++)
			printf("  \"%s\": %.4g%s\n", calib_param_names[p], s->value[p],
			       p + 1 < CALIB_PARAM_COUNT || t->n_class ? "," : "");
	print_kernel_member(s, true);
}

/* ---------------------------------------------------------------- JSON */

static cJSON *json_of(const struct args *a, const struct calib_table *t,
                      const struct topology *topo, const struct calib_fit *f,
                      const struct section *s, const struct calib_cv *cv)
{
	const struct topo_device *d = topo ? &topo->device : NULL;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "table", t->file);
	if (topo) {
		cJSON_AddStringToObject(o, "topology", a->topology);
		cJSON_AddStringToObject(o, "device", d->kind);
	} else {
		cJSON_AddNullToObject(o, "topology");
		cJSON_AddNullToObject(o, "device");
	}
	cJSON_AddNumberToObject(o, "rows", t->n_rows);
	cJSON_AddNumberToObject(o, "gemm_rows", t->n_gemm);
	cJSON_AddNumberToObject(o, "memory_rows", t->n_memory);
	cJSON_AddNumberToObject(o, "class_rows", t->n_class);
	cJSON *ps = cJSON_AddObjectToObject(o, "parameters");
	for (int p = 0; p < CALIB_PARAM_COUNT; p++) {
		const struct calib_param *q = &f->param[p];
		const char *name = calib_param_names[p];
		if (p == CALIB_KERNEL_OVERHEAD)
			name = "kernel_overhead_s";
		else if (!d && p == CALIB_MATMUL_EFFICIENCY)
			name = "gemm_flops";
		else if (!d && p == CALIB_MEMORY_EFFICIENCY)
			name = "memory_bps";
		if (!q->fitted && !d)
			continue;
		cJSON *e = cJSON_AddObjectToObject(ps, name);
		cJSON_AddNumberToObject(e, "value", q->value);
		if (q->fitted)
			cJSON_AddNumberToObject(e, "std_error", q->std_error);
		else
			cJSON_AddNullToObject(e, "std_error");
		cJSON_AddStringToObject(e, "source", q->fitted ? "fitted" : q->held ? "held" : "kept");
		cJSON_AddBoolToObject(e, "identifiable", identifiable(q));
	}
	cJSON_AddNumberToObject(o, "iterations", f->iterations);
	cJSON_AddNumberToObject(o, "rms_relative_error", f->rms_rel);
	if (t->n_rows > 0) {
		cJSON *c = cJSON_AddObjectToObject(o, "cv");
		cJSON_AddStringToObject(c, "method", cv->method);
		cJSON_AddNumberToObject(c, "folds", cv->folds);
		if (isfinite(cv->mape_pct)) {
			cJSON_AddNumberToObject(c, "mape_pct", cv->mape_pct);
			cJSON_AddNumberToObject(c, "rms_pct", cv->rms_pct);
		} else {
			cJSON_AddNullToObject(c, "mape_pct");
			cJSON_AddNullToObject(c, "rms_pct");
		}
	}
	cJSON_AddBoolToObject(o, "peak_fallback", f->peak_fallback);
	cJSON *res = cJSON_AddArrayToObject(o, "residuals");
	for (int i = 0; i < t->n_rows; i++) {
		const struct calib_row *r = &t->rows[i];
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "line", r->line);
		cJSON_AddStringToObject(e, "kind", calib_kind_names[r->kind]);
		cJSON_AddNumberToObject(e, "measured_s", r->seconds);
		cJSON_AddNumberToObject(e, "model_s", r->seconds * (1 + f->rel[i]));
		cJSON_AddNumberToObject(e, "relative", f->rel[i]);
		cJSON_AddItemToArray(res, e);
	}
	if (d) {
		cJSON *kc = cJSON_AddObjectToObject(o, "kernel_classes");
		for (int k = 0; k < TOPO_KC_COUNT; k++) {
			if (!s->has_class[k])
				continue;
			cJSON *e = cJSON_AddObjectToObject(kc, topo_kernel_class_names[k]);
			static const char *const pass[2] = {"forward", "backward"};
			for (int i = 0; i < 2; i++)
				if (s->cls->rows[k][i])
					cJSON_AddNumberToObject(e, pass[i], s->cls->eff[k][i]);
				else
					cJSON_AddNullToObject(e, pass[i]);
			cJSON_AddItemToObject(e, "rows", cJSON_CreateIntArray(s->cls->rows[k], 2));
		}
		cJSON *sec = cJSON_AddObjectToObject(o, "device_section");
		for (int p = 0; s->fitted && p < CALIB_PARAM_COUNT; p++)
			cJSON_AddNumberToObject(sec, calib_param_names[p], s->value[p]);
		cJSON *ke = NULL;
		for (int k = 0; k < TOPO_KC_COUNT; k++)
			if (s->has_class[k]) {
				if (!ke)
					ke = cJSON_AddObjectToObject(sec, "kernel_efficiency");
				cJSON_AddItemToObject(ke, topo_kernel_class_names[k],
				                      cJSON_CreateDoubleArray(s->kernel_eff[k], 2));
			}
		cJSON *w = cJSON_AddArrayToObject(o, "warnings");
		for (int i = 0; i < s->n_warn; i++)
			cJSON_AddItemToArray(w, cJSON_CreateString(s->warn[i]));
	}
	return o;
}

/* ----------------------------------------------------------------- CSV */

static void csv_residuals(const struct calib_table *t, const struct calib_fit *f)
{
	static const char *const cols[] = {"line", "kind", "m", "n", "k", "batch", "dtype",
	                                   "bytes", "measured_s", "model_s", "relative_error_pct",
	                                   NULL};
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, cols);
	for (int i = 0; i < t->n_rows; i++) {
		const struct calib_row *r = &t->rows[i];
		bool gemm = r->kind == CALIB_GEMM;
		cli_csv_int(&c, r->line);
		cli_csv_str(&c, calib_kind_names[r->kind]);
		for (int k = 0; k < 4; k++) {
			double v[4] = {r->m, r->n, r->k, r->batch};
			if (gemm)
				cli_csv_num(&c, v[k]);
			else
				cli_csv_str(&c, NULL);
		}
		cli_csv_str(&c, gemm ? dtype_names[r->dtype] : NULL);
		cli_csv_num(&c, r->bytes);
		cli_csv_num(&c, r->seconds);
		cli_csv_num(&c, r->seconds * (1 + f->rel[i]));
		cli_csv_num(&c, 100 * f->rel[i]);
		cli_csv_end(&c);
	}
}

/* ---------------------------------------------------------------- main */

/* A JSON file named where the CSV table belongs (a topology, a model):
 * one diagnostic naming what it is, rather than the CSV reader's
 * complaints about its first line. */
static bool json_instead(const char *path, struct diag_list *d)
{
	size_t len = 0;
	const char *err = NULL;
	char *text = util_read_file(path, &len, &err);
	if (!text)
		return false; /* the table reader says why */
	size_t i = len >= 3 && !memcmp(text, "\xef\xbb\xbf", 3) ? 3 : 0;
	while (i < len && (unsigned char)text[i] <= 32)
		i++;
	bool json = i < len && (text[i] == '{' || text[i] == '[');
	if (json) {
		struct diag_list quiet;
		struct json_doc doc;
		diag_list_init(&quiet);
		const cJSON *f = NULL;
		if (json_doc_parse(&doc, path, text, len, &quiet) && cJSON_IsObject(doc.root))
			f = cJSON_GetObjectItemCaseSensitive(doc.root, "format");
		if (cJSON_IsString(f))
			diag_add(d, DIAG_ERROR, path, json_doc_line(&doc, f), "format",
			         "this is a \"%s\" file; calibrate reads a CSV table of kernel times",
			         f->valuestring);
		else
			diag_add(d, DIAG_ERROR, path, 1, NULL,
			         "this is a JSON file; calibrate reads a CSV table of kernel times");
		json_doc_free(&doc);
		diag_list_free(&quiet);
	}
	free(text);
	return json;
}

/* The fit of the table's gemm and memory rows; a table of kernel classes'
 * rows alone fits nothing and takes the device's overhead and
 * memory_efficiency (held). */
static bool fit_or_device(struct arena *a, const struct calib_table *t, const struct topology *topo,
                          unsigned keep, struct calib_fit *f, struct diag_list *d)
{
	if (t->n_rows > 0)
		return cost_calib_fit(a, t, topo ? &topo->device : NULL, keep, f, d);
	const struct topo_device *dev = &topo->device;
	memset(f, 0, sizeof *f);
	f->has_device = true;
	f->max_row = -1;
	const double v[CALIB_PARAM_COUNT] = {dev->matmul_efficiency, dev->gemm_half_dim,
	                                     dev->memory_efficiency, dev->kernel_overhead_s};
	for (int p = 0; p < CALIB_PARAM_COUNT; p++) {
		f->param[p].value = v[p];
		f->param[p].held = true;
	}
	return true;
}

/* ---------------------------------------------- collective benchmarks */

/* The figures a collective fit gives, by the names a calibration file
 * uses ("tiers.nvswitch.latency_us"), or without a topology alpha_us and
 * busbw_GBps. */
struct bfig {
	char name[96];
	double value, se;
	bool identifiable, clamped;
	const char *units;
};

static int bench_figures(const struct bench_fit *f, struct bfig fig[BENCH_MAX_FIGURES])
{
	for (int k = 0; k < f->n_figures; k++) {
		const struct bench_figure *g = &f->figure[k];
		fig[k] = (struct bfig){.value = g->value, .se = g->se, .identifiable = g->identifiable,
		                       .clamped = g->clamped, .units = g->units};
		snprintf(fig[k].name, sizeof fig[k].name, "%s", g->name);
	}
	return f->n_figures;
}

static const char *bench_what(char *buf, size_t size, const struct args *a,
                              const struct bench_table *t, int ranks)
{
	snprintf(buf, size, "%s %s, %d size%s, %s over %d ranks", t->file, bench_tool_names[t->tool],
	         t->n_points, t->n_points == 1 ? "" : "s", collective_words[a->collective], ranks);
	return buf;
}

static void bench_text(const struct args *a, const struct bench_table *t,
                       const struct topology *topo, int ranks, const struct bench_fit *f)
{
	char b[4][48], what[512];
	struct bfig fig[BENCH_MAX_FIGURES];
	memset(fig, 0, sizeof fig);
	int nf = bench_figures(f, fig);
	printf("calibrate %s", bench_what(what, sizeof what, a, t, ranks));
	if (topo)
		printf(" on %s (%s): %s", topo->name, a->topology, f->target);
	printf("\n\n  %-30s %-10s %s\n", "figure", "value", "std. error");
	for (int k = 0; k < nf; k++) {
		printf("  %-30s %-10.4g %.2g", fig[k].name, fig[k].value, fig[k].se);
		if (f->figure[k].line_bps > 0)
			printf("  of the line rate %s", cli_si(b[0], 48, f->figure[k].line_bps, "B/s"));
		else if (k == 0 && !topo)
			printf("  per algorithm step");
		printf("\n");
	}
	for (int k = 0; k < nf; k++) {
		if (fig[k].clamped)
			printf("warning: %s came out at %.4g, outside its range: held at %.4g\n",
			       fig[k].name, f->figure[k].raw, fig[k].value);
		if (!fig[k].identifiable)
			printf("warning: %s is not identifiable from this table (its standard error is "
			       "over half its value, or it left its range): %s\n", fig[k].name,
			       f->figure[k].latency
			               ? "sizes small enough for the latency to show are needed"
			               : "sizes large enough for the bandwidth to show are needed");
	}
	printf("\nfit: %d sizes, %d figures, %d iterations; in sample MAPE %.1f%% (RMS %.1f%%)\n",
	       f->n_points, nf, f->iterations, f->mape_pct, f->rms_pct);
	if (isfinite(f->cv_mape_pct))
		printf("cross-validated (%s, %d folds): MAPE %.1f%% (RMS %.1f%%)\n", f->cv_method,
		       f->cv_folds, f->cv_mape_pct, f->cv_rms_pct);
	else
		printf("cross-validated: - (a fold could not be fitted)\n");
	printf("\n  %-5s  %-9s  %-10s  %-10s  %-8s  %-10s  %-8s  %s\n", "line", "size", "measured",
	       "model", "error", "left out", "error", "algorithm");
	for (int i = 0; i < t->n_points; i++) {
		const struct bench_point *p = &t->points[i];
		char alg[48] = "-";
		if (topo)
			snprintf(alg, sizeof alg, "%s%s%s", collective_algo_names[f->algo[i]],
			         f->protocol[i] ? " " : "", f->protocol[i] ? f->protocol[i] : "");
		printf("  %-5d  %-9s  %-10s  %-10s  %-8s  ", p->line, cli_si(b[0], 48, p->bytes, "B"),
		       cli_si(b[1], 48, p->seconds, "s"), cli_si(b[2], 48, f->model_s[i], "s"),
		       report_pct_text(b[3], 48, 100 * (f->model_s[i] / p->seconds - 1)));
		if (f->cv_s && f->cv_s[i] > 0)
			printf("%-10s  %-8s  ", cli_si(b[0], 48, f->cv_s[i], "s"),
			       report_pct_text(b[1], 48, 100 * (f->cv_s[i] / p->seconds - 1)));
		else
			printf("%-10s  %-8s  ", "-", "-");
		printf("%s\n", alg);
	}
	printf("\n  error: 100 (model / measured - 1); left out: predicted by the fit of the "
	       "other sizes\n");
}

static cJSON *bench_json(const struct args *a, const struct bench_table *t,
                         const struct topology *topo, int ranks, const struct bench_fit *f)
{
	struct bfig fig[BENCH_MAX_FIGURES];
	memset(fig, 0, sizeof fig);
	int nf = bench_figures(f, fig);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "table", t->file);
	cJSON_AddStringToObject(o, "tool", bench_tool_names[t->tool]);
	cJSON_AddStringToObject(o, "collective", collective_words[a->collective]);
	cJSON_AddNumberToObject(o, "ranks", ranks);
	if (topo) {
		cJSON_AddStringToObject(o, "topology", a->topology);
		cJSON_AddStringToObject(o, "target", f->target);
		cJSON_AddNumberToObject(o, "line_bps", f->line_bps);
	} else {
		cJSON_AddNullToObject(o, "topology");
		cJSON_AddNullToObject(o, "target");
		cJSON_AddNullToObject(o, "line_bps");
	}
	cJSON *fs = cJSON_AddObjectToObject(o, "figures");
	for (int k = 0; k < nf; k++) {
		cJSON *e = cJSON_AddObjectToObject(fs, fig[k].name);
		cJSON_AddNumberToObject(e, "value", fig[k].value);
		if (isfinite(fig[k].se))
			cJSON_AddNumberToObject(e, "std_error", fig[k].se);
		else
			cJSON_AddNullToObject(e, "std_error");
		cJSON_AddStringToObject(e, "units", fig[k].units);
		cJSON_AddBoolToObject(e, "identifiable", fig[k].identifiable);
		cJSON_AddBoolToObject(e, "clamped", fig[k].clamped);
	}
	cJSON_AddNumberToObject(o, "iterations", f->iterations);
	cJSON *in = cJSON_AddObjectToObject(o, "in_sample");
	cJSON_AddNumberToObject(in, "mape_pct", f->mape_pct);
	cJSON_AddNumberToObject(in, "rms_pct", f->rms_pct);
	cJSON *cv = cJSON_AddObjectToObject(o, "cv");
	cJSON_AddStringToObject(cv, "method", f->cv_method ? f->cv_method : "leave-one-out");
	cJSON_AddNumberToObject(cv, "folds", f->cv_folds);
	if (isfinite(f->cv_mape_pct)) {
		cJSON_AddNumberToObject(cv, "mape_pct", f->cv_mape_pct);
		cJSON_AddNumberToObject(cv, "rms_pct", f->cv_rms_pct);
	} else {
		cJSON_AddNullToObject(cv, "mape_pct");
		cJSON_AddNullToObject(cv, "rms_pct");
	}
	cJSON *pts = cJSON_AddArrayToObject(o, "points");
	for (int i = 0; i < t->n_points; i++) {
		cJSON *e = cJSON_CreateObject();
		cJSON_AddNumberToObject(e, "line", t->points[i].line);
		cJSON_AddNumberToObject(e, "bytes", t->points[i].bytes);
		cJSON_AddNumberToObject(e, "measured_s", t->points[i].seconds);
		cJSON_AddNumberToObject(e, "model_s", f->model_s[i]);
		if (f->cv_s && f->cv_s[i] > 0)
			cJSON_AddNumberToObject(e, "cv_s", f->cv_s[i]);
		else
			cJSON_AddNullToObject(e, "cv_s");
		if (topo) {
			cJSON_AddStringToObject(e, "algorithm", collective_algo_names[f->algo[i]]);
			if (f->protocol[i])
				cJSON_AddStringToObject(e, "protocol", f->protocol[i]);
			else
				cJSON_AddNullToObject(e, "protocol");
		}
		cJSON_AddItemToArray(pts, e);
	}
	return o;
}

static void bench_csv(const struct bench_table *t, const struct bench_fit *f, bool topo)
{
	static const char *const cols[] = {"line", "bytes", "measured_s", "model_s", "error_pct",
	                                   "cv_s", "cv_error_pct", "algorithm", "protocol", NULL};
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, cols);
	for (int i = 0; i < t->n_points; i++) {
		const struct bench_point *p = &t->points[i];
		bool cv = f->cv_s && f->cv_s[i] > 0;
		cli_csv_int(&c, p->line);
		cli_csv_num(&c, p->bytes);
		cli_csv_num(&c, p->seconds);
		cli_csv_num(&c, f->model_s[i]);
		cli_csv_num(&c, 100 * (f->model_s[i] / p->seconds - 1));
		if (cv) {
			cli_csv_num(&c, f->cv_s[i]);
			cli_csv_num(&c, 100 * (f->cv_s[i] / p->seconds - 1));
		} else {
			cli_csv_str(&c, NULL);
			cli_csv_str(&c, NULL);
		}
		cli_csv_str(&c, topo ? collective_algo_names[f->algo[i]] : NULL);
		cli_csv_str(&c, topo ? f->protocol[i] : NULL);
		cli_csv_end(&c);
	}
}

/* The calibration's name: the file name of --out without its folder and
 * ".json". */
const char *cli_calibration_name(struct arena *ar, const char *out)
{
	const char *base = strrchr(out, '/');
	base = base ? base + 1 : out;
	size_t n = strlen(base);
	if (n > 5 && !strcmp(base + n - 5, ".json"))
		n -= 5;
	return arena_strndup(ar, base, n);
}

/* Writes the calibration atomically; false after a message. */
bool cli_calibration_write(const char *path, const struct calibration *c)
{
	cJSON *j = cost_calibration_json(c);
	char *text = j ? cJSON_Print(j) : NULL;
	cJSON_Delete(j);
	char err[512] = "out of memory";
	size_t n = text ? strlen(text) : 0;
	char *line = text ? malloc(n + 2) : NULL;
	bool ok = line != NULL;
	if (ok) {
		memcpy(line, text, n);
		line[n] = '\n';
		line[n + 1] = '\0';
		ok = report_write_file(path, line, err, sizeof err);
	}
	if (!ok)
		fprintf(stderr, "shardlab calibrate: cannot write %s: %s\n", path, err);
	free(line);
	cJSON_free(text);
	return ok;
}

/* The identifiable figures of a collective fit as a calibration file. */
static bool bench_out(struct arena *ar, const struct args *a, const struct bench_table *t,
                      const struct topology *topo, int ranks, const struct bench_fit *f)
{
	struct bfig fig[BENCH_MAX_FIGURES];
	memset(fig, 0, sizeof fig);
	int nf = bench_figures(f, fig);
	char what[512];
	struct calibration *c = arena_calloc(ar, 1, sizeof *c);
	struct cal_figure *cf = arena_calloc(ar, (size_t)nf, sizeof *cf);
	struct cal_fit *fit = arena_calloc(ar, 1, sizeof *fit);
	const char **names = arena_calloc(ar, (size_t)nf, sizeof *names);
	double *cov = arena_calloc(ar, (size_t)(nf * nf), sizeof *cov);
	if (!c || !cf || !fit || !names || !cov)
		return false;
	const char *on = arena_printf(ar, "%s on %s", bench_what(what, sizeof what, a, t, ranks),
	                              topo->name);
	int n = 0, at[BENCH_MAX_FIGURES];
	for (int k = 0; k < nf; k++) {
		if (!fig[k].identifiable) {
			fprintf(stderr, "shardlab calibrate: %s is left out of %s: not identifiable from "
			        "the table (the topology keeps its own)\n", fig[k].name, a->out);
			continue;
		}
		const char *tier = NULL;
		int p = cost_cal_param_parse(ar, fig[k].name, &tier);
		double lo, hi;
		bool open;
		cost_cal_param_range((enum cal_param)p, &lo, &hi, &open);
		cf[n] = (struct cal_figure){.name = arena_strdup(ar, fig[k].name),
		                            .param = (enum cal_param)p, .tier = tier, .lo = 0,
		                            .hi = hi, .value = fig[k].value,
		                            .std_error = fig[k].se, .fitted_on = on,
		                            .cv_error_pct = f->cv_mape_pct, .fit = "collectives"};
		names[n] = cf[n].name;
		at[n++] = k;
	}
	if (n == 0) {
		fprintf(stderr, "shardlab calibrate: no figure is identifiable from %s: %s not "
		        "written\n", t->file, a->out);
		return false;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			cov[i * n + j] = f->covariance[at[i]][at[j]];
	*fit = (struct cal_fit){.name = "collectives", .kind = "collectives", .fitted_on = on,
	                        .points = t->n_points, .cv_method = f->cv_method,
	                        .cv_folds = f->cv_folds, .cv_mape_pct = f->cv_mape_pct,
	                        .cv_rms_pct = f->cv_rms_pct, .cv_log_rms = NAN,
	                        .n_figures = n, .figures = names,
	                        .covariance = cov};
	*c = (struct calibration){.name = cli_calibration_name(ar, a->out), .device = topo->device.kind,
	                          .n_figures = n, .figures = cf,
	                          .n_fits = isfinite(f->cv_mape_pct) ? 1 : 0, .fits = fit};
	if (!isfinite(f->cv_mape_pct))
		for (int i = 0; i < n; i++)
			cf[i].fit = NULL;
	return cli_calibration_write(a->out, c);
}

static int calibrate_bench(struct arena *ar, const struct args *a, struct diag_list *d)
{
	if (a->collective < 0) {
		fprintf(stderr, "shardlab calibrate: %s is a collective benchmark's output: say which "
		        "collective it measured (--collective all-reduce, all-gather, reduce-scatter "
		        "or all-to-all)\n", a->table);
		return EXIT_USAGE;
	}
	if (a->out && !a->topology) {
		fprintf(stderr, "shardlab calibrate: --out writes figures of a topology's tier: give "
		        "--topology FILE\n");
		return EXIT_USAGE;
	}
	if (a->keep) {
		fprintf(stderr, "shardlab calibrate: --keep holds kernel-model parameters: it goes "
		        "with a table of kernel times, not a collective benchmark's output\n");
		return EXIT_USAGE;
	}
	if (a->figures && (!a->topology || a->tier)) {
		fprintf(stderr, "shardlab calibrate: --figures names figures of a topology: give "
		        "--topology FILE%s\n", a->tier ? ", and no --tier (each figure names its own)" : "");
		return EXIT_USAGE;
	}
	/* --figures NAME[,NAME...] */
	int n_figures = 0;
	const char **figures = NULL;
	for (const char *s = a->figures; s && *s; s += strcspn(s, ",") + (s[strcspn(s, ",")] == ','))
		n_figures++;
	if (a->figures && (n_figures == 0 || a->figures[strlen(a->figures) - 1] == ',' ||
	                   strstr(a->figures, ",,"))) {
		fprintf(stderr, "shardlab calibrate: --figures takes names separated by commas, got "
		        "'%s'\n", a->figures);
		return EXIT_USAGE;
	}
	figures = n_figures ? arena_calloc(ar, (size_t)n_figures, sizeof *figures) : NULL;
	for (int k = 0, at = 0; k < n_figures; k++) {
		size_t len = strcspn(a->figures + at, ",");
		figures[k] = arena_strndup(ar, a->figures + at, len);
		if (!figures[k])
			return EXIT_INVALID;
		at += (int)len + 1;
	}
	struct topology *topo = a->topology ? cli_load_topology(ar, a->topology, d) : NULL;
	struct bench_table *t = (topo || !a->topology) ? cost_bench_load(ar, a->table, d) : NULL;
	if (!t)
		return EXIT_INVALID;
	int ranks = a->ranks > 0 ? (int)a->ranks : t->ranks;
	if (a->ranks > 0 && t->ranks > 0 && a->ranks != t->ranks) {
		diag_add(d, DIAG_ERROR, t->file, t->ranks_line, NULL,
		         "the table lists %d ranks, --ranks says %lld", t->ranks, (long long)a->ranks);
		return EXIT_INVALID;
	}
	if (ranks == 0) {
		diag_add(d, DIAG_ERROR, t->file, 0, NULL,
		         "the table does not say how many ranks it measured: give --ranks N");
		return EXIT_INVALID;
	}
	struct bench_fit_options o = {.topo = topo, .collective = collective_steps[a->collective],
	                              .ranks = ranks, .algo = (enum collective_algo)a->algo,
	                              .tier = a->tier, .n_figures = n_figures, .figures = figures};
	struct bench_fit f;
	if (!cost_bench_fit(ar, t, &o, &f, d))
		return EXIT_INVALID;
	int rc = EXIT_OK;
	if (a->json)
		rc = report_print_json(bench_json(a, t, topo, ranks, &f), "calibrate");
	else if (a->csv)
		bench_csv(t, &f, topo != NULL);
	else
		bench_text(a, t, topo, ranks, &f);
	if (rc == EXIT_OK && a->out && !bench_out(ar, a, t, topo, ranks, &f))
		rc = EXIT_INVALID;
	return rc;
}

/* The text is a benchmark's output (nccl-tests, hccl_test)? */
static bool is_bench(const char *path)
{
	size_t len = 0;
	const char *err = NULL;
	char *text = util_read_file(path, &len, &err);
	bool yes = text && cost_bench_detect(text, len) >= 0;
	free(text);
	return yes;
}

/* The fitted compute-model parameters as a calibration file: the values
 * the device section prints, their standard errors and covariance. */
static bool kernels_out(struct arena *ar, const struct args *a, const struct calib_table *t,
                        const struct topology *topo, const struct calib_fit *f,
                        const struct section *s, const struct calib_cv *cv)
{
	static const char *const names[CALIB_PARAM_COUNT] = {
		"device.matmul_efficiency", "device.gemm_half_dim", "device.memory_efficiency",
		"device.kernel_overhead_us"};
	static const double hi[CALIB_PARAM_COUNT] = {1, TOPO_MAX_GEMM_HALF_DIM, 1,
	                                             TOPO_MAX_KERNEL_OVERHEAD_US};
	/* The file's units: the overhead in us, the others as fitted. */
	static const double unit[CALIB_PARAM_COUNT] = {1, 1, 1, 1e6};
	struct calibration *c = arena_calloc(ar, 1, sizeof *c);
	struct cal_figure *cf = arena_calloc(ar, CALIB_PARAM_COUNT, sizeof *cf);
	struct cal_fit *fit = arena_calloc(ar, 1, sizeof *fit);
	const char **fnames = arena_calloc(ar, CALIB_PARAM_COUNT, sizeof *fnames);
	double *cov = arena_calloc(ar, CALIB_PARAM_COUNT * CALIB_PARAM_COUNT, sizeof *cov);
	if (!c || !cf || !fit || !fnames || !cov)
		return false;
	const char *on = arena_printf(ar, "%s: %d gemm and %d memory rows on %s", t->file, t->n_gemm,
	                              t->n_memory, topo->device.kind);
	int n = 0, at[CALIB_PARAM_COUNT];
	bool cross = isfinite(cv->mape_pct);
	for (int p = 0; p < CALIB_PARAM_COUNT; p++) {
		if (!f->param[p].fitted)
			continue;
		const char *tier = NULL;
		cf[n] = (struct cal_figure){.name = names[p],
		                            .param = (enum cal_param)cost_cal_param_parse(ar, names[p],
		                                                                          &tier),
		                            .lo = 0, .hi = hi[p], .value = s->value[p],
		                            .std_error = f->param[p].std_error * unit[p], .fitted_on = on,
		                            .cv_error_pct = cv->mape_pct, .fit = cross ? "kernels" : NULL};
		fnames[n] = names[p];
		at[n++] = p;
	}
	if (n == 0 || !topo) {
		fprintf(stderr, "shardlab calibrate: --out needs --topology and fitted parameters\n");
		return false;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++)
			cov[i * n + j] = f->cov[at[i]][at[j]] * unit[at[i]] * unit[at[j]];
	*fit = (struct cal_fit){.name = "kernels", .kind = "kernels", .fitted_on = on,
	                        .points = t->n_rows, .cv_method = cv->method, .cv_folds = cv->folds,
	                        .cv_mape_pct = cv->mape_pct, .cv_rms_pct = cv->rms_pct,
	                        .cv_log_rms = NAN,
	                        .n_figures = n, .figures = fnames, .covariance = cov};
	*c = (struct calibration){.name = cli_calibration_name(ar, a->out), .device = topo->device.kind,
	                          .n_figures = n, .figures = cf, .n_fits = cross ? 1 : 0,
	                          .fits = fit};
	return cli_calibration_write(a->out, c);
}

int cmd_calibrate(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	for (int i = 1; i < argc; i++)
		if (!strcmp(argv[i], "--runs"))
			return calibrate_runs(argc, argv);
		else if (!strcmp(argv[i], "--transfer"))
			return calibrate_transfer(argc, argv);
	struct args args = {.collective = -1};
	if (!parse_args(argc, argv, &args)) {
		fprintf(stderr, "usage: shardlab calibrate TABLE [--topology FILE [--keep NAMES]] "
		                "[--json | --csv] (see --help)\n");
		return EXIT_USAGE;
	}
	const char *const inputs[] = {args.table, args.topology};
	if (cli_out_overwrites("calibrate", args.out, inputs, 2))
		return EXIT_USAGE;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	if (!a) {
		fprintf(stderr, "shardlab: out of memory\n");
		return EXIT_INVALID;
	}
	int rc = EXIT_INVALID;
	/* --collective says the table is a benchmark's: one it cannot read as
	 * such gets the benchmark reader's diagnostic, not the kernel table's */
	if (is_bench(args.table) || args.collective >= 0) {
		rc = calibrate_bench(a, &args, &d);
		cli_print_diags(&d);
		diag_list_free(&d);
		arena_free(a);
		return rc;
	}
	if (args.ranks || args.tier || args.figures || args.algo != COLL_AUTO) {
		fprintf(stderr, "shardlab calibrate: --ranks, --tier, --algorithm and --figures go with "
		        "a collective benchmark's output and --collective; %s is a table of kernel "
		        "times\n", args.table);
		arena_free(a);
		return EXIT_USAGE;
	}
	struct topology *topo = args.topology ? cli_load_topology(a, args.topology, &d) : NULL;
	struct calib_table *t = json_instead(args.table, &d) ? NULL : cost_calib_load(a, args.table, &d);
	struct calib_fit fit;
	struct calib_classes cls;
	if (t && t->n_class > 0 && !args.topology)
		diag_add(&d, DIAG_ERROR, args.table, t->class_rows[0].line, "kind",
		         "the kernel classes' rows need --topology FILE: their efficiencies are "
		         "fractions of its HBM rate");
	else if (t && (topo || !args.topology) && fit_or_device(a, t, topo, args.keep, &fit, &d) &&
	         (!topo || cost_calib_classes(a, t, &topo->device,
	                                      fit.param[CALIB_KERNEL_OVERHEAD].value,
	                                      fit.param[CALIB_MEMORY_EFFICIENCY].value, &cls, &d))) {
		struct section s = {0};
		struct calib_cv cv = {"leave-one-out", 0, NAN, NAN};
		if (t->n_rows > 0)
			cost_calib_cross_validate(a, t, topo ? &topo->device : NULL, args.keep, &cv);
		if (topo)
			make_section(&fit, &cls, &s);
		if (args.json) {
			rc = report_print_json(json_of(&args, t, topo, &fit, &s, &cv), "calibrate");
		} else if (args.csv) {
			csv_residuals(t, &fit);
			rc = EXIT_OK;
		} else {
			print_text(&args, t, topo, &fit, &s, &cv);
			rc = EXIT_OK;
		}
		if (rc == EXIT_OK && args.out && !kernels_out(a, &args, t, topo, &fit, &s, &cv))
			rc = EXIT_INVALID;
	}
	cli_print_diags(&d);
	diag_list_free(&d);
	arena_free(a);
	return rc;
}
