/* test_calibrate.c — the compute model's calibration (planner/cost/calibrate.c),
 * `shardlab calibrate` (cli/cmd_calibrate.c) and the model's members in
 * `shardlab topo`.
 *
 * The fit is checked on tables generated here from the model's formula
 * (docs/cost-models.md) with parameters stated in each test, so the
 * expected values are those parameters; the CSV reader on bad cells whose
 * diagnostics are written out by hand; the CLI on the shipped tables.
 * Run from the repository root (meson test does).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixture.h"

#define CORPUS "tests/data/calibrate"

TestSuite(calibrate, .init = fixture_setup, .fini = fixture_teardown);

static void within(double got, double want, double rel, const char *what)
{
	cr_assert(fabs(got - want) <= rel * fabs(want), "%s: got %.9g, want %.9g (within %g)", what,
	          got, want, rel);
}

static void assert_diag(size_t n, const char *want)
{
	cr_assert_lt(n, D.count, "no diagnostic %zu (want %s)", n, want);
	char *s = diag_format(&D.items[n]);
	cr_assert_str_eq(s, want);
	free(s);
}

/* Clears the expected diagnostics (the fixture prints what is left). */
static void forget_diags(void)
{
	diag_list_free(&D);
	diag_list_init(&D);
}

/* ------------------------------------------------------ synthetic tables */

/* The model's parameters a table is generated from. */
struct truth {
	double rate_flops;   /* peak x matmul_efficiency */
	double half_dim;
	double bw_bps;       /* HBM x memory_efficiency */
	double overhead_s;
};

static double g_of(double x, double h)
{
	return x / (x + h);
}

/* The model written out again (not cost_kernel_s): a GEMM m x k times
 * k x n in bf16, or a memory kernel of `bytes` (m = 0). */
static double model_s(const struct truth *t, double m, double n, double k, double bytes)
{
	if (m == 0)
		return t->overhead_s + bytes / t->bw_bps;
	double flops = 2 * m * n * k;
	double b = (m * k + k * n + m * n) * 2;
	double g = g_of(m, t->half_dim) * g_of(n, t->half_dim) * g_of(k, t->half_dim);
	double tc = flops / (t->rate_flops * g), tb = b / t->bw_bps;
	return t->overhead_s + (tc > tb ? tc : tb);
}

/* A table of the 64 GEMMs m, n, k in {64, 256, 1024, 4096} and 7 memory
 * kernels of 4 KiB to 1 GiB (x 8), each time times (1 + noise · sin(1.3 i))
 * for row i: a deterministic ripple of +-noise. */
static char *synthetic(const struct truth *t, double noise, int *rows)
{
	static const double dims[] = {64, 256, 1024, 4096};
	size_t cap = 1 << 14, len = 0;
	char *s = malloc(cap);
	len += (size_t)snprintf(s + len, cap - len, "# synthetic\nkind,m,n,k,dtype,bytes,seconds\n");
	int i = 0;
	for (int a = 0; a < 4; a++)
		for (int b = 0; b < 4; b++)
			for (int c = 0; c < 4; c++, i++) {
				double sec = model_s(t, dims[a], dims[b], dims[c], 0) * (1 + noise * sin(1.3 * i));
				len += (size_t)snprintf(s + len, cap - len, "gemm,%.0f,%.0f,%.0f,bf16,,%.17g\n",
				                        dims[a], dims[b], dims[c], sec);
			}
	for (double bytes = 4096; bytes <= 1 << 30; bytes *= 8, i++) {
		double sec = model_s(t, 0, 0, 0, bytes) * (1 + noise * sin(1.3 * i));
		len += (size_t)snprintf(s + len, cap - len, "memory,,,,,%.0f,%.17g\n", bytes, sec);
	}
	cr_assert_lt(len, cap);
	*rows = i;
	return s;
}

static struct calib_table *parse(const char *text)
{
	struct calib_table *t = cost_calib_parse(A, "t.csv", text, strlen(text), &D);
	cr_assert_not_null(t, "%s", D.count ? D.items[0].msg : "?");
	return t;
}

/* dgx-a100.json: bf16 peak 312 TFLOP/s, HBM 2 TB/s. The table is made
 * with matmul_efficiency 0.8, gemm_half_dim 100, memory_efficiency 0.85
 * and a 5 us overhead; the fit must give them back: to 1e-6 (the residual
 * is rounding alone, the table printing 17 digits). */
Test(calibrate, fit_recovers_the_parameters_of_an_exact_table)
{
	const struct topology *topo = fixture_topology(A, "dgx-a100");
	struct truth tr = {312e12 * 0.8, 100, 2e12 * 0.85, 5e-6};
	int rows = 0;
	char *text = synthetic(&tr, 0, &rows);
	struct calib_table *t = parse(text);
	free(text);
	cr_assert_eq(rows, 64 + 7);
	cr_assert_eq(t->n_rows, rows);
	cr_assert_eq(t->n_gemm, 64);
	cr_assert_eq(t->n_memory, 7);
	struct calib_fit f;
	cr_assert(cost_calib_fit(A, t, &topo->device, 0, &f, &D));
	cr_assert_eq(f.n_params, 4);
	within(f.param[CALIB_MATMUL_EFFICIENCY].value, 0.8, 1e-6, "matmul_efficiency");
	within(f.param[CALIB_GEMM_HALF_DIM].value, 100, 1e-6, "gemm_half_dim");
	within(f.param[CALIB_MEMORY_EFFICIENCY].value, 0.85, 1e-6, "memory_efficiency");
	within(f.param[CALIB_KERNEL_OVERHEAD].value, 5e-6, 1e-6, "kernel overhead");
	for (int p = 0; p < CALIB_PARAM_COUNT; p++)
		cr_assert(f.param[p].fitted && !f.param[p].held, "%s", calib_param_names[p]);
	cr_assert_lt(f.rms_rel, 1e-9);
}

/* Without a device the same table gives absolute rates: 312e12 · 0.8 =
 * 249.6 TFLOP/s and 2e12 · 0.85 = 1.7 TB/s. */
Test(calibrate, without_a_device_the_rates_are_absolute)
{
	struct truth tr = {312e12 * 0.8, 100, 2e12 * 0.85, 5e-6};
	int rows = 0;
	char *text = synthetic(&tr, 0, &rows);
	struct calib_table *t = parse(text);
	free(text);
	struct calib_fit f;
	cr_assert(cost_calib_fit(A, t, NULL, 0, &f, &D));
	cr_assert(!f.has_device);
	within(f.param[CALIB_MATMUL_EFFICIENCY].value, 249.6e12, 1e-6, "GEMM rate");
	within(f.param[CALIB_GEMM_HALF_DIM].value, 100, 1e-6, "gemm_half_dim");
	within(f.param[CALIB_MEMORY_EFFICIENCY].value, 1.7e12, 1e-6, "bandwidth");
	within(f.param[CALIB_KERNEL_OVERHEAD].value, 5e-6, 1e-6, "kernel overhead");
}

/* A +-3% ripple on every time. The relative residuals then have an RMS of
 * about 3% / sqrt(2) = 2.1% before the fit, which the four parameters can
 * only reduce a little: the fit's RMS lies between 1% and 3%, and the
 * parameters move by about the ripple over the square root of the rows
 * that pin them (71 rows; the half-dimension only through the smaller
 * GEMMs, so it moves more). */
Test(calibrate, fit_with_deterministic_noise)
{
	const struct topology *topo = fixture_topology(A, "dgx-a100");
	struct truth tr = {312e12 * 0.8, 100, 2e12 * 0.85, 5e-6};
	int rows = 0;
	char *text = synthetic(&tr, 0.03, &rows);
	struct calib_table *t = parse(text);
	free(text);
	struct calib_fit f;
	cr_assert(cost_calib_fit(A, t, &topo->device, 0, &f, &D));
	cr_assert(f.rms_rel > 0.01 && f.rms_rel < 0.03, "RMS %.4g", f.rms_rel);
	within(f.param[CALIB_MATMUL_EFFICIENCY].value, 0.8, 0.03, "matmul_efficiency");
	within(f.param[CALIB_GEMM_HALF_DIM].value, 100, 0.2, "gemm_half_dim");
	within(f.param[CALIB_MEMORY_EFFICIENCY].value, 0.85, 0.03, "memory_efficiency");
	within(f.param[CALIB_KERNEL_OVERHEAD].value, 5e-6, 0.1, "kernel overhead");
	/* The standard errors are of the order of the scatter, not zero. */
	cr_assert_gt(f.param[CALIB_GEMM_HALF_DIM].std_error, 0);
	cr_assert_lt(f.param[CALIB_MATMUL_EFFICIENCY].std_error, 0.05);
	/* Every residual is reported, the largest flagged. */
	double worst = 0;
	for (int i = 0; i < t->n_rows; i++)
		worst = fmax(worst, fabs(f.rel[i]));
	cr_assert_eq(fabs(f.rel[f.max_row]), worst);
}

/* Holding matmul_efficiency at the device's (dgx-a100.json: 0.8692) fits
 * the other three; the table is made with that efficiency, so they come
 * back exactly. Holding needs a device. */
Test(calibrate, held_parameters_keep_the_devices_values)
{
	const struct topology *topo = fixture_topology(A, "dgx-a100");
	struct truth tr = {312e12 * 0.8692, 40, 2e12 * 0.9, 3e-6};
	int rows = 0;
	char *text = synthetic(&tr, 0, &rows);
	struct calib_table *t = parse(text);
	free(text);
	struct calib_fit f;
	cr_assert(cost_calib_fit(A, t, &topo->device, 1u << CALIB_MATMUL_EFFICIENCY, &f, &D));
	cr_assert_eq(f.n_params, 3);
	cr_assert(f.param[CALIB_MATMUL_EFFICIENCY].held);
	cr_assert(!f.param[CALIB_MATMUL_EFFICIENCY].fitted);
	cr_assert_eq(f.param[CALIB_MATMUL_EFFICIENCY].value, 0.8692);
	within(f.param[CALIB_GEMM_HALF_DIM].value, 40, 1e-6, "gemm_half_dim");
	within(f.param[CALIB_MEMORY_EFFICIENCY].value, 0.9, 1e-6, "memory_efficiency");
	within(f.param[CALIB_KERNEL_OVERHEAD].value, 3e-6, 1e-6, "kernel overhead");
	cr_assert_eq(D.count, 0);
	cr_assert(!cost_calib_fit(A, t, NULL, 1u << CALIB_MATMUL_EFFICIENCY, &f, &D));
	assert_diag(0, "t.csv: holding a parameter needs a device (--topology) to hold it at");
	forget_diags();
}

/* A table of GEMMs alone keeps the device's memory_efficiency (the GEMMs'
 * memory floor) and fits three parameters. */
Test(calibrate, memory_efficiency_is_kept_without_memory_rows)
{
	const struct topology *topo = fixture_topology(A, "dgx-a100");
	/* dgx-a100's memory_efficiency is 0.9: the floor is 1.8 TB/s. */
	struct truth tr = {312e12 * 0.75, 128, 2e12 * 0.9, 2e-6};
	int rows = 0;
	char *text = synthetic(&tr, 0, &rows);
	char *mem = strstr(text, "memory,");
	*mem = '\0'; /* drop the memory rows */
	struct calib_table *t = parse(text);
	free(text);
	cr_assert_eq(t->n_memory, 0);
	struct calib_fit f;
	cr_assert(cost_calib_fit(A, t, &topo->device, 0, &f, &D));
	cr_assert_eq(f.n_params, 3);
	cr_assert(!f.param[CALIB_MEMORY_EFFICIENCY].fitted && !f.param[CALIB_MEMORY_EFFICIENCY].held);
	cr_assert_eq(f.param[CALIB_MEMORY_EFFICIENCY].value, 0.9);
	within(f.param[CALIB_MATMUL_EFFICIENCY].value, 0.75, 1e-6, "matmul_efficiency");
	within(f.param[CALIB_GEMM_HALF_DIM].value, 128, 1e-6, "gemm_half_dim");
	within(f.param[CALIB_KERNEL_OVERHEAD].value, 2e-6, 1e-6, "kernel overhead");
}

/* ------------------------------------------------------------ bad tables */

Test(calibrate, every_bad_cell_is_reported)
{
	static const char text[] =
		"# a comment, then the header (line 2)\n"
		"kind, m, n, k, dtype, seconds, bytes\n"
		"gemm,4096,4096,4096,bf16,1e-3,\n"
		"gemm,0,4096,4096,bf16,1e-3,\n"
		"gemm,64,64.5,64,bf16,1e-3,\n"
		"gemm,64,64,64,bf17,1e-3,\n"
		"gemm,64,64,,bf16,1e-3,\n"
		"\n"
		"memory,,,,,2e-6,\n"
		"memory,64,,,,2e-6,4096\n"
		"gem,64,64,64,bf16,1e-3,\n"
		"gemm,64,64,64,bf16,-1,\n"
		"gemm,64,64,64,bf16,1e-3\n"
		"gemm,64,64,64,bf16,fast,\r\n"
		"memory,,,,,1e-5,1e6\n";
	cr_assert_null(cost_calib_parse(A, "t.csv", text, strlen(text), &D));
	assert_diag(0, "t.csv:4: m: expected an integer between 1 and 1000000000, got \"0\"");
	assert_diag(1, "t.csv:5: n: expected an integer between 1 and 1000000000, got \"64.5\"");
	assert_diag(2, "t.csv:6: dtype: expected fp32, fp16, bf16, int32, int64 or bool, got \"bf17\"");
	assert_diag(3, "t.csv:7: k: missing: a gemm row needs m, n, k, dtype and seconds");
	assert_diag(4, "t.csv:9: bytes: missing: a memory row needs the bytes it moves");
	assert_diag(5, "t.csv:10: m: only gemm rows have m, n, k and batch");
	assert_diag(6, "t.csv:11: kind: expected \"gemm\", \"memory\" or a kernel class (norm, "
	               "softmax, dropout, activation, loss), got \"gem\"");
	assert_diag(7, "t.csv:12: seconds: expected a positive number, got \"-1\"");
	assert_diag(8, "t.csv:13: 6 fields, the header has 7");
	assert_diag(9, "t.csv:14: seconds: expected a positive number, got \"fast\"");
	cr_assert_eq(D.count, 10);
	forget_diags();
}

Test(calibrate, header_mistakes)
{
	static const char text[] = "kind,m,n,k,dtype,second,m,flops\ngemm,1,1,1,bf16,1,1,1\n";
	cr_assert_null(cost_calib_parse(A, "h.csv", text, strlen(text), &D));
	assert_diag(0, "h.csv:1: header: unknown column \"second\" (did you mean \"seconds\"?); the "
	               "columns are kind, m, n, k, batch, dtype, bytes, seconds and pass");
	assert_diag(1, "h.csv:1: header: column \"m\" appears twice (fields 2 and 7)");
	assert_diag(2, "h.csv:1: header: unknown column \"flops\"; the columns are kind, m, n, k, "
	               "batch, dtype, bytes, seconds and pass");
	assert_diag(3, "h.csv:1: header: missing column \"seconds\"");
	cr_assert_eq(D.count, 4);
	forget_diags();
	static const char empty[] = "# only a comment\n\n";
	cr_assert_null(cost_calib_parse(A, "e.csv", empty, strlen(empty), &D));
	assert_diag(0, "e.csv:2: no header: expected a line naming the columns (kind, m, n, k, "
	               "batch, dtype, bytes, seconds)");
	forget_diags();
	static const char header_only[] = "kind,bytes,seconds\n";
	cr_assert_null(cost_calib_parse(A, "o.csv", header_only, strlen(header_only), &D));
	assert_diag(0, "o.csv:1: no rows after the header");
	forget_diags();
}

/* A GEMM's bytes default to its operands and result once: batch 3 of
 * 2 x 5 times 5 x 7 in fp32: 3 · (2·5 + 5·7 + 2·7) · 4 = 708 bytes. */
Test(calibrate, gemm_bytes_default_to_operands_and_result)
{
	static const char text[] = "kind,batch,m,n,k,dtype,bytes,seconds\n"
	                           "gemm,3,2,7,5,fp32,,1e-6\n"
	                           "gemm,,2,7,5,float32,99,1e-6\n";
	struct calib_table *t = parse(text);
	cr_assert_eq(t->rows[0].bytes, 708);
	cr_assert_eq(t->rows[0].batch, 3);
	cr_assert_eq(t->rows[1].batch, 1);
	cr_assert_eq(t->rows[1].bytes, 99);
	cr_assert_eq(t->rows[1].dtype, DT_FP32);
	cr_assert_eq(t->rows[1].line, 3);
}

/* Tables that cannot determine the parameters. */
Test(calibrate, tables_the_fit_cannot_use)
{
	struct calib_fit f;
	/* Three GEMMs of one shape: too few rows for 3 parameters, and no
	 * half-dimension without several shapes. */
	struct calib_table *t = parse("kind,m,n,k,dtype,seconds\n"
	                              "gemm,64,64,64,bf16,1e-5\n"
	                              "gemm,64,64,64,bf16,1.1e-5\n"
	                              "gemm,64,64,64,bf16,0.9e-5\n");
	cr_assert(!cost_calib_fit(A, t, NULL, 0, &f, &D));
	assert_diag(0, "t.csv: 3 rows for 3 parameters: the fit needs more rows than parameters");
	assert_diag(1, "t.csv:2: every gemm row has the same shape: the half-dimension needs GEMMs "
	               "of several shapes");
	cr_assert_eq(D.count, 2);
	forget_diags();
	/* Two dtypes and no device to relate their peaks. */
	t = parse("kind,m,n,k,dtype,seconds\n"
	          "gemm,64,64,64,bf16,1e-5\n"
	          "gemm,128,64,64,bf16,1e-5\n"
	          "gemm,256,64,64,fp32,1e-5\n"
	          "gemm,512,64,64,bf16,1e-5\n");
	cr_assert(!cost_calib_fit(A, t, NULL, 0, &f, &D));
	assert_diag(0, "t.csv:4: dtype: gemm rows of several dtypes (bf16 at line 2, fp32 here) "
	               "need a device (--topology) whose peaks relate them");
	cr_assert_eq(D.count, 1);
	forget_diags();
	/* Memory rows of one size cannot separate the overhead from the
	 * bandwidth. */
	t = parse("kind,bytes,seconds\nmemory,1e6,1e-5\nmemory,1e6,1.1e-5\nmemory,1e6,1e-5\n");
	cr_assert(!cost_calib_fit(A, t, NULL, 0, &f, &D));
	assert_diag(0, "t.csv:2: every memory row moves the same bytes: the bandwidth and the "
	               "overhead need kernels of several sizes");
	forget_diags();
}

/* ------------------------------------------------------------------ CLI */

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	size_t got = fread(s, 1, (size_t)n, f);
	s[got] = '\0';
	fclose(f);
	return s;
}

/* Runs `calibrate CORPUS/NAME.EXT EXTRA` for every file of the corpus
 * with that extension and checks exit status 1 and exactly the
 * diagnostics of NAME.expected (written by hand from the readers'
 * messages); the number of files. */
static int bad_corpus(const char *ext, const char *extra)
{
	DIR *d = opendir(CORPUS);
	cr_assert_not_null(d);
	struct dirent *e;
	int n = 0;
	size_t el = strlen(ext);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l <= el || strcmp(e->d_name + l - el, ext))
			continue;
		char args[600], exp_path[600];
		snprintf(args, sizeof args, "calibrate " CORPUS "/%s%s", e->d_name, extra);
		snprintf(exp_path, sizeof exp_path, CORPUS "/%.*s.expected", (int)(l - el), e->d_name);
		char *want = slurp(exp_path);
		cr_expect_not_null(want, "%s has no .expected file", e->d_name);
		struct cli_run r = fixture_shardlab(args, true);
		cr_expect_eq(r.status, 1, "%s: exit status %d", e->d_name, r.status);
		if (want)
			cr_expect_str_eq(r.out, want, "%s:\n--- got\n%s--- expected\n%s", e->d_name, r.out,
			                 want);
		free(want);
		free(r.out);
		n++;
	}
	closedir(d);
	return n;
}

/* Each CORPUS/NAME.csv gives exactly the diagnostics in NAME.expected. */
Test(calibrate, bad_table_corpus_gives_exact_diagnostics)
{
	cr_assert_geq(bad_corpus(".csv", ""), 3);
}

/* The shipped synthetic example gives back the parameters its header
 * states: matmul_efficiency 0.85, gemm_half_dim 64, memory_efficiency
 * 0.9, kernel_overhead_us 4. */
Test(calibrate, cli_recovers_the_synthetic_example)
{
	struct cli_run r = fixture_shardlab("calibrate calibration/synthetic-a100-example.csv "
	                        "--topology topologies/dgx-a100.json",
	                        false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "device section (paste into the topology's \"device\"):\n"
	                                 "  \"matmul_efficiency\": 0.85,\n"
	                                 "  \"gemm_half_dim\": 64,\n"
	                                 "  \"memory_efficiency\": 0.9,\n"
	                                 "  \"kernel_overhead_us\": 4\n"),
	                   "%s", r.out);
	free(r.out);
	/* Without a device its bf16 and fp16 rows cannot share one rate. */
	r = fixture_shardlab("calibrate calibration/synthetic-a100-example.csv", true);
	cr_assert_eq(r.status, 1);
	cr_assert_str_eq(r.out, "calibration/synthetic-a100-example.csv:21: dtype: gemm rows of "
	                        "several dtypes (bf16 at line 15, fp16 here) need a device "
	                        "(--topology) whose peaks relate them\n");
	free(r.out);
}

static double member(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	cr_assert(cJSON_IsNumber(v), "no number \"%s\"", key);
	return v->valuedouble;
}

/* A shipped GPU file's compute model is its measured table's: its
 * memory_efficiency is the largest triad's rate over the HBM rate, held,
 * and the other three are the fit of the table with it held; calibrating
 * again gives the same four-digit values. The JSON agrees with the text,
 * and two runs are byte-identical. */
static void shipped_parameters_come_from(const char *table, const char *topo,
                                         double triad_s, double hbm_GBps)
{
	char args[256];
	snprintf(args, sizeof args, "calibrate %s --topology topologies/%s.json "
	         "--keep memory_efficiency --json", table, topo);
	struct cli_run r = fixture_shardlab(args, false), again = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.out, again.out);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "%s", r.out);
	const struct topology *t = fixture_topology(A, topo);
	within(t->device.memory_efficiency, 6442450944.0 / triad_s / (hbm_GBps * 1e9), 1e-4,
	       "memory_efficiency");
	const cJSON *sec = cJSON_GetObjectItemCaseSensitive(j, "device_section");
	cr_assert_eq(member(sec, "matmul_efficiency"), t->device.matmul_efficiency);
	cr_assert_eq(member(sec, "gemm_half_dim"), t->device.gemm_half_dim);
	within(member(sec, "kernel_overhead_us"), t->device.kernel_overhead_s * 1e6, 1e-12,
	       "kernel_overhead_us");
	cr_assert_eq(member(sec, "memory_efficiency"), t->device.memory_efficiency);
	cr_assert_eq(member(j, "rows"), 510);
	cr_assert_eq(member(j, "gemm_rows"), 505);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "residuals")), 510);
	const cJSON *p = cJSON_GetObjectItemCaseSensitive(j, "parameters");
	const cJSON *mem = cJSON_GetObjectItemCaseSensitive(p, "memory_efficiency");
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(mem, "source")->valuestring, "held");
	cJSON_Delete(j);
	free(r.out);
	free(again.out);
}

/* The H100's triad: 6,442,450,944 B in 2.09838 ms = 3.0702 TB/s of 3.35. */
Test(calibrate, shipped_h100_parameters_come_from_the_measured_table)
{
	shipped_parameters_come_from("calibration/h100-sxm-measured.csv", "dgx-h100", 2.09838e-3, 3350);
}

/* The H200's triad: 6,442,450,944 B in 1.46654 ms = 4.3929 TB/s of 4.8. */
Test(calibrate, shipped_h200_parameters_come_from_the_measured_table)
{
	shipped_parameters_come_from("calibration/h200-sxm-measured.csv", "dgx-h200", 1.46654e-3, 4800);
}

/* A shipped GPU file's kernel_efficiency is its measured kernels table's
 * (docs/cost-models.md, "Memory-bound kernels by class"): for each class's
 * rows (norm: layer_norm and rms_norm; softmax; dropout; activation: gelu;
 * loss: cross_entropy) the op's bytes S as the estimate counts them (input
 * and output, bf16: 4 bytes an element; the loss: the table's forward
 * bytes, logits and labels), forward e = S / (B (t - o)), backward
 * e = f S / (B (t - f o)) with the estimate's backward factor f (2 for
 * norms and softmax, else 1), so that the model gives the measured times;
 * the median over the class's rows, at most memory_efficiency (no kernel
 * streams faster than the triad), to four digits. */
static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static void kernel_efficiency_comes_from(const char *table, const char *topo)
{
	static const struct {
		const char *cls, *rows[2];
		double factor;
	} classes[] = {
		{"norm", {"layer_norm", "rms_norm"}, 2}, {"softmax", {"softmax", NULL}, 2},
		{"dropout", {"dropout p0.1", NULL}, 1},  {"activation", {"gelu tanh", NULL}, 1},
		{"loss", {"cross_entropy", NULL}, 1},
	};
	const struct topology *t = fixture_topology(A, topo);
	const struct topo_device *dev = &t->device;
	double o = dev->kernel_overhead_s, B = dev->hbm_bps;
	for (size_t c = 0; c < sizeof classes / sizeof classes[0]; c++) {
		double eff[2][16];
		int n[2] = {0, 0};
		double fwd_bytes[16] = {0};
		char fwd_shape[16][64];
		int nf = 0;
		FILE *f = fopen(table, "r");
		cr_assert_not_null(f, "%s", table);
		char line[512];
		while (fgets(line, sizeof line, f)) {
			char name[64], shape[64], dtype[16], pass[16];
			double bytes, secs;
			if (line[0] == '#' ||
			    sscanf(line, "%63[^,],%63[^,],%15[^,],%15[^,],%lf,%lf", name, shape, dtype, pass,
			           &bytes, &secs) != 6)
				continue;
			if (strcmp(name, classes[c].rows[0]) &&
			    (!classes[c].rows[1] || strcmp(name, classes[c].rows[1])))
				continue;
			double elems = 1;
			for (char *x = shape; *x;) {
				elems *= strtod(x, &x);
				if (*x == 'x')
					x++;
			}
			double S = 4 * elems;
			bool back = strcmp(pass, "backward") == 0;
			if (!strcmp(classes[c].cls, "loss")) {
				if (!back) {
					snprintf(fwd_shape[nf], sizeof fwd_shape[nf], "%s", shape);
					fwd_bytes[nf++] = bytes;
				}
				S = 0;
				for (int i = 0; i < nf; i++)
					if (!strcmp(fwd_shape[i], shape))
						S = fwd_bytes[i];
				cr_assert(S > 0, "%s: %s backward before its forward", table, shape);
			}
			double fac = back ? classes[c].factor : 1;
			cr_assert(n[back] < 16);
			eff[back][n[back]++] = fac * S / (B * (secs - fac * o));
		}
		fclose(f);
		int k = -1;
		for (int i = 0; i < TOPO_KC_COUNT; i++)
			if (!strcmp(topo_kernel_class_names[i], classes[c].cls))
				k = i;
		cr_assert(k >= 0 && n[0] >= 2 && n[1] >= 2, "%s: %s", table, classes[c].cls);
		for (int pass = 0; pass < 2; pass++) {
			double want = fmin(median(eff[pass], n[pass]), dev->memory_efficiency);
			cr_expect(fabs(dev->kernel_efficiency[k][pass] - want) < 5.1e-5,
			          "%s %s %s: file %.4f, table %.5f", topo, classes[c].cls,
			          pass ? "backward" : "forward", dev->kernel_efficiency[k][pass], want);
		}
	}
}

Test(calibrate, shipped_h100_kernel_efficiency_comes_from_its_kernels_table)
{
	kernel_efficiency_comes_from("calibration/h100-sxm-kernels.csv", "dgx-h100");
}

Test(calibrate, shipped_h200_kernel_efficiency_comes_from_its_kernels_table)
{
	kernel_efficiency_comes_from("calibration/h200-sxm-kernels.csv", "dgx-h200");
}

/* Kernel classes by hand on dgx-h100 (HBM 3.35 TB/s, o = 6.922 us,
 * memory_efficiency 0.9165): a norm forward of S = 3.35 MB that took
 * o + 2 us moved its bytes at 0.5 of the HBM rate; with rows at 0.5, 0.6
 * and 0.8 the median is 0.6. Its backward (factor 2) of 2 (o + 2.5 us):
 * 0.4. An activation forward at 0.95 is held to memory_efficiency 0.9165;
 * a class without rows stays 0. A row no longer than its overheads is an
 * error. */
Test(calibrate, kernel_classes_by_hand)
{
	const struct topo_device *d = &fixture_topology(A, "dgx-h100")->device;
	double o = 6.922e-6;
	char text[1024];
	snprintf(text, sizeof text,
	         "kind,pass,bytes,seconds\n"
	         "norm,forward,3350000,%.17g\n"
	         "norm,,3350000,%.17g\n"
	         "norm,forward,3350000,%.17g\n"
	         "norm,backward,3350000,%.17g\n"
	         "activation,forward,3350000,%.17g\n",
	         o + 2e-6, o + 1e-6 / 0.6, o + 1e-6 / 0.8, 2 * (o + 2.5e-6), o + 1e-6 / 0.95);
	struct calib_table *t = cost_calib_parse(A, "k.csv", text, strlen(text), &D);
	cr_assert_not_null(t);
	cr_assert_eq(t->n_class, 5);
	cr_assert_eq(t->n_rows, 0);
	struct calib_classes c;
	cr_assert(cost_calib_classes(A, t, d, o, 0.9165, &c, &D));
	within(c.eff[TOPO_KC_NORM][0], 0.6, 1e-12, "norm forward");
	within(c.eff[TOPO_KC_NORM][1], 0.4, 1e-12, "norm backward");
	cr_expect_eq(c.rows[TOPO_KC_NORM][0], 3);
	cr_expect_eq(c.rows[TOPO_KC_NORM][1], 1);
	cr_expect_eq(c.eff[TOPO_KC_ACTIVATION][0], 0.9165);
	cr_expect_eq(c.eff[TOPO_KC_SOFTMAX][0], 0);
	cr_expect_eq(c.rows[TOPO_KC_SOFTMAX][1], 0);
	static const char quick[] = "kind,pass,bytes,seconds\nnorm,backward,100,1e-05\n";
	t = cost_calib_parse(A, "q.csv", quick, strlen(quick), &D);
	cr_assert_not_null(t);
	cr_assert_not(cost_calib_classes(A, t, d, o, 0.9165, &c, &D));
	assert_diag(0, "q.csv:2: seconds: 1e-05 s is not above the backward's 2 kernel overheads "
	               "(1.384e-05 s): no bandwidth to derive");
	forget_diags();
}

/* The CLI on the shipped classes tables gives the files' kernel_efficiency;
 * without --topology such a table is refused. */
Test(calibrate, shipped_kernel_classes_through_the_cli)
{
	static const char *const devs[][2] = {{"calibration/h100-sxm-classes.csv", "dgx-h100"},
	                                      {"calibration/h200-sxm-classes.csv", "dgx-h200"}};
	for (size_t i = 0; i < 2; i++) {
		char args[256];
		snprintf(args, sizeof args, "calibrate %s --topology topologies/%s.json --json", devs[i][0],
		         devs[i][1]);
		struct cli_run r = fixture_shardlab(args, false);
		cr_assert_eq(r.status, 0, "%s", r.out);
		cJSON *j = cJSON_Parse(r.out);
		cr_assert_not_null(j);
		const cJSON *ke = cJSON_GetObjectItemCaseSensitive(
			cJSON_GetObjectItemCaseSensitive(j, "device_section"), "kernel_efficiency");
		const struct topo_device *d = &fixture_topology(A, devs[i][1])->device;
		for (int k = 0; k < TOPO_KC_COUNT; k++) {
			const cJSON *pair = cJSON_GetObjectItemCaseSensitive(ke, topo_kernel_class_names[k]);
			cr_assert(cJSON_GetArraySize(pair) == 2, "%s", topo_kernel_class_names[k]);
			for (int p = 0; p < 2; p++)
				cr_expect(fabs(cJSON_GetArrayItem(pair, p)->valuedouble -
				               d->kernel_efficiency[k][p]) < 1e-12,
				          "%s %s", devs[i][1], topo_kernel_class_names[k]);
		}
		cr_expect_eq(member(j, "class_rows"), 30);
		cJSON_Delete(j);
		free(r.out);
	}
	struct cli_run r = fixture_shardlab("calibrate calibration/h100-sxm-classes.csv", true);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.out, "calibration/h100-sxm-classes.csv:13: kind: the kernel classes' rows "
	                        "need --topology FILE") != NULL, "%s", r.out);
	free(r.out);
}

/* The A100 files borrow an H100's shape factor and overhead for want of an
 * A100 table: the fit of OpenXLA's sm_90 table with the asymptote held at
 * the H100 SXM's best measured rate (794.5 of 989 TFLOP/s) and no memory
 * rows (the HBM's full rate as the GEMMs' floor). */
Test(calibrate, a100_shape_factor_is_the_xla_tables_fit)
{
	struct calib_table *t = cost_calib_load(A, "calibration/h100-sxm-xla-gemm.csv", &D);
	cr_assert_not_null(t);
	struct topo_device h100 = fixture_topology(A, "dgx-h100")->device;
	h100.matmul_efficiency = 0.8033; /* 794.5 / 989, to four digits as the fit held it */
	h100.memory_efficiency = 1;
	struct calib_fit f;
	cr_assert(cost_calib_fit(A, t, &h100, 1u << CALIB_MATMUL_EFFICIENCY, &f, &D));
	cr_assert_eq(f.n_rows, 125);
	const char *files[] = {"dgx-a100", "pcie-8gpu"};
	for (size_t i = 0; i < 2; i++) {
		const struct topo_device *a100 = &fixture_topology(A, files[i])->device;
		within(f.param[CALIB_GEMM_HALF_DIM].value, a100->gemm_half_dim, 1e-4, "gemm_half_dim");
		within(f.param[CALIB_KERNEL_OVERHEAD].value, a100->kernel_overhead_s, 1e-4,
		       "kernel_overhead_us");
	}
}

/* `shardlab topo` shows the compute model's members, in text and JSON
 * (microseconds in the text, seconds in the JSON, as everywhere). */
Test(calibrate, topo_shows_the_compute_model)
{
	struct cli_run r = fixture_shardlab("topo topologies/dgx-h100.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "\nkernels  GEMM half-dimension 95.88, overhead 6.922 us per "
	                                 "kernel; devices spread 0.01 (stragglers)\n"),
	                   "%s", r.out);
	/* NCCL's LL caps for a Hopper server with Intel CPUs (tuning.cc's llMaxBws),
	 * and its NVSwitches' NVLink SHARP */
	cr_assert_not_null(strstr(r.out, "\ncollectives nccl, inside nvlink, LL bus bandwidth at most "
	                                 "87.7 / 39 / 20.4 GB/s (1 server / 2 / more), NVLS (the "
	                                 "switch reduces)\n"),
	                   "%s", r.out);
	free(r.out);
	r = fixture_shardlab("topo topologies/atlas800-910a.json", false);
	cr_assert_not_null(strstr(r.out, "\nkernels  GEMM half-dimension 0 (no shape factor), "
	                                 "overhead 0 us per kernel\n"), "%s", r.out);
	free(r.out);
	r = fixture_shardlab("topo topologies/dgx-h100.json --json", false);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j);
	const cJSON *dev = cJSON_GetObjectItemCaseSensitive(j, "device");
	cr_assert_eq(member(dev, "gemm_half_dim"), 95.88);
	within(member(dev, "kernel_overhead_s"), 6.922e-6, 1e-12, "kernel_overhead_s");
	within(member(dev, "matmul_efficiency"), 0.8321, 1e-12, "matmul_efficiency");
	within(member(dev, "speed_cv"), 0.01, 1e-12, "speed_cv");
	const cJSON *coll = cJSON_GetObjectItemCaseSensitive(j, "collectives");
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(coll, "library")->valuestring, "nccl");
	cr_assert(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(coll, "nvls")));
	cJSON_Delete(j);
	free(r.out);
}

Test(calibrate, cli_usage)
{
	static const struct {
		const char *args;
		int status;
	} cases[] = {
		{"calibrate", 2},
		{"calibrate a.csv b.csv", 2},
		{"calibrate a.csv --frobnicate", 2},
		{"calibrate a.csv --keep matmul_efficiency", 2},   /* holding needs --topology */
		{"calibrate a.csv --topology t.json --keep nope", 2},
		{"calibrate tests/data/no-such-table.csv", 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct cli_run r = fixture_shardlab(cases[i].args, true);
		cr_expect_eq(r.status, cases[i].status, "%s: %d\n%s", cases[i].args, r.status, r.out);
		free(r.out);
	}
	struct cli_run r = fixture_shardlab("calibrate --help", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "usage: shardlab calibrate TABLE"));
	free(r.out);
	/* Options of the other kind of table are refused, not ignored: a kernel
	 * table with a benchmark's options; a benchmark with --keep; with
	 * --collective a table that is no benchmark's output gets the
	 * benchmark reader's word. */
	static const struct {
		const char *args, *says;
		int status;
	} other[] = {
		{"calibrate calibration/synthetic-a100-example.csv --ranks 8",
		 "--ranks, --tier, --algorithm and --figures go with a collective benchmark's", 2},
		{"calibrate calibration/synthetic-a100-example.csv --json --csv",
		 "--json or --csv, not both", 2},
		{"calibrate calibration/nccl-h100-2n-allreduce.txt --collective all-reduce --ranks 16 "
		 "--topology validation/dgx-h100-200g-x2.json --keep matmul_efficiency",
		 "--keep holds kernel-model parameters", 2},
		{"calibrate calibration/synthetic-a100-example.csv --collective all-reduce",
		 "calibration/synthetic-a100-example.csv: neither nccl-tests' table", 1},
		{"calibrate --runs validation/megatron-core-h100.json --name ''",
		 "--name needs a value, got an empty one", 2},
	};
	for (size_t i = 0; i < sizeof other / sizeof other[0]; i++) {
		r = fixture_shardlab(other[i].args, true);
		cr_expect_eq(r.status, other[i].status, "%s: %d\n%s", other[i].args, r.status, r.out);
		cr_expect(strstr(r.out, other[i].says), "%s:\n%s", other[i].args, r.out);
		free(r.out);
	}
	/* --out naming an input, by another path, is refused before anything
	 * is read (the inputs here are "{}", which no mode could load: a
	 * command that wrote anyway would fail first and leave them be). */
	char dir[] = "/tmp/shardlab-ow-XXXXXX", in[64], args[512];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(in, sizeof in, "%s/in.json", dir);
	FILE *f = fopen(in, "w");
	cr_assert(f && fputs("{}\n", f) >= 0 && fclose(f) == 0);
	for (int i = 0; i < 3; i++) {
		if (i == 0)
			snprintf(args, sizeof args, "calibrate --runs %s/in.json --out %s/./in.json", dir,
			         dir);
		else if (i == 1)
			snprintf(args, sizeof args, "calibrate --transfer %s/in.json --topology "
			         "topologies/dgx-h200.json --out %s/./in.json", dir, dir);
		else
			snprintf(args, sizeof args, "calibrate calibration/nccl-h100-2n-allreduce.txt "
			         "--collective all-reduce --ranks 16 --topology %s/in.json --out "
			         "%s/./in.json", dir, dir);
		r = fixture_shardlab(args, true);
		cr_expect_eq(r.status, 2, "%s: %d\n%s", args, r.status, r.out);
		cr_expect(strstr(r.out, "is the input ") && strstr(r.out, "/in.json: write to "
		                                                  "another file"),
		          "%s:\n%s", args, r.out);
		free(r.out);
	}
	char back[8] = {0};
	f = fopen(in, "r");
	cr_assert_not_null(f);
	size_t nb = fread(back, 1, sizeof back - 1, f);
	fclose(f);
	cr_expect(nb == 3 && !strcmp(back, "{}\n"), "the input is as it was: %s", back);
	remove(in);
	rmdir(dir);
	r = fixture_shardlab("--help", false);
	cr_assert_not_null(strstr(r.out, "  calibrate "));
	free(r.out);
}

/* --------------------------------------------- collective benchmarks */

/* The topology of the collective fits: tests/data/good/pcie-4gpu-1nic-x2.json,
 * 4 GPUs on a PCIe switch of 31 GB/s line rate (efficiency 1), 1 us, no
 * collective library: a ring all-reduce over 4 ranks is nccl-tests'
 * 2(n-1) alpha + 2(n-1)/n S / B = 6 alpha + 1.5 S / (31 GB/s x eff). */
#define PCIE_TOPO "tests/data/good/pcie-4gpu-1nic-x2.json"
#define PCIE_LINE_BPS 31e9

/* nccl-tests' output, as all_reduce_perf prints it (the format of
 * NVIDIA/nccl-tests src/common.cu: the banner, "# Rank" lines, the
 * two-line column header, rows of size count type redop root and four
 * columns out of place and in place), for times t(S) = true x (1 + noise). */
static char *nccl_table(int ranks, double alpha_s, double k_alpha, double busbw_bps,
                        double k_beta, const double *sizes, int n, const double *noise)
{
	size_t cap = 8192;
	char *s = malloc(cap);
	int at = snprintf(s, cap,
	                  "# nThread 1 nGpus %d minBytes 1024 maxBytes 1073741824 step: 4(factor) "
	                  "warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0\n#\n"
	                  "# Using devices\n", ranks);
	for (int r = 0; r < ranks; r++)
		at += snprintf(s + at, cap - (size_t)at,
		               "#  Rank %2d Group  0 Pid  1234 on   host device  %d [0x%02x] GPU\n", r, r, r);
	at += snprintf(s + at, cap - (size_t)at,
	               "#\n#                                                              out-of-place"
	               "                       in-place          \n"
	               "#       size         count      type   redop    root     time   algbw   busbw "
	               "#wrong     time   algbw   busbw #wrong\n"
	               "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)"
	               "            (us)  (GB/s)  (GB/s)       \n");
	for (int i = 0; i < n; i++) {
		double t = (k_alpha * alpha_s + k_beta * sizes[i] / busbw_bps) * (1 + noise[i]);
		double alg = sizes[i] / t * 1e-9;
		at += snprintf(s + at, cap - (size_t)at,
		               "%12.0f  %12.0f     float     sum      -1  %7.2f  %6.2f  %6.2f  %6d  %7.2f  "
		               "%6.2f  %6.2f  %6d\n", sizes[i], sizes[i] / 4, t * 1e6, alg, alg * k_beta,
		               0, t * 1e6, alg, alg * k_beta, 0);
	}
	snprintf(s + at, cap - (size_t)at,
	         "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 10.0\n#\n");
	return s;
}

/* Sizes 1 KiB to 1 GiB by 4, with a deterministic noise of up to 1%. */
static const double SIZES[11] = {1024, 4096, 16384, 65536, 262144, 1048576, 4194304,
                                 16777216, 67108864, 268435456, 1073741824};
static const double NOISE[11] = {0.01, -0.01, 0.005, -0.005, 0, 0.008, -0.008, 0.003, -0.003,
                                 0.006, -0.006};

Test(calibrate, nccl_tests_read_as_printed)
{
	static const char text[] =
		"[1,0]<stdout>:# nThread 1 nGpus 1 minBytes 8 maxBytes 64 step: 2(factor)\n"
		"[1,0]<stdout>:#  Rank  0 Group  0 Pid   6899 on host device  0 [0000:04:00] H100\n"
		"[1,0]<stdout>:#  Rank  1 Group  0 Pid   6900 on host device  1 [0000:05:00] H100\n"
		"[1,0]<stdout>:#       size         count      type   redop    root     time   algbw   "
		"busbw #wrong     time   algbw   busbw #wrong\n"
		"[1,0]<stdout>:#        (B)    (elements)                               (us)  (GB/s)  "
		"(GB/s)            (us)  (GB/s)  (GB/s)\n"
		"host:1:1 [0] NCCL INFO comm 0x1 rank 0 nranks 2 - Init COMPLETE\n"
		"[1,0]<stdout>:          64            16     float     sum      -1    12.88    0.00    "
		"0.00      0    12.83    0.00    0.00      0\n"
		"[1,0]<stdout>:           8             2     float     sum      -1    12.90    0.00    "
		"0.00      0    12.87    0.00    0.00    N/A\n"
		"[1,0]<stdout>:           8             2     float     sum      -1    13.50    0.00    "
		"0.00      0    12.87    0.00    0.00      0\n"
		"[1,0]<stdout>:# Avg bus bandwidth    : 0.0\n";
	cr_assert_eq(cost_bench_detect(text, sizeof text - 1), BENCH_NCCL_TESTS);
	struct bench_table *t = cost_bench_parse(A, "n.txt", text, sizeof text - 1, &D);
	cr_assert_not_null(t);
	cr_assert_eq(t->ranks, 2);
	cr_assert_eq(t->ranks_line, 3, "the last \"# Rank\" line, for --ranks' diagnostic");
	cr_assert_eq(t->n_points, 2, "8 printed twice is one size");
	cr_assert_eq(t->points[0].bytes, 8);
	within(t->points[0].seconds, 13.50e-6, 1e-12, "the slower of the two 8-byte rows");
	cr_assert_eq(t->points[0].line, 9);
	cr_assert_eq(t->points[1].bytes, 64);
	within(t->points[1].seconds, 12.88e-6, 1e-12, "out of place");
}

/* nccl-tests before 2.10 printed no root column and "error" for #wrong
 * (NVIDIA/nccl#583). */
Test(calibrate, nccl_tests_without_root_column)
{
	static const char text[] =
		"#       size         count    type   redop     time   algbw   busbw  error     time   "
		"algbw   busbw  error\n"
		"        1024           256   float     sum    20.50    0.05    0.09  0e+00    20.10    "
		"0.05    0.09  0e+00\n"
		"        2048           512   float     sum    21.00    0.10    0.17  0e+00    20.90    "
		"0.10    0.17  0e+00\n";
	struct bench_table *t = cost_bench_parse(A, "o.txt", text, sizeof text - 1, &D);
	cr_assert_not_null(t);
	cr_assert_eq(t->ranks, 0);
	cr_assert_eq(t->n_points, 2);
	within(t->points[1].seconds, 21.00e-6, 1e-12, "time after redop");
}

/* Those tables' "error" is the largest deviation from the expected sum
 * (2e-07 in floats), not a count of wrong values: a row is not refused
 * for it; the "Out of bounds values" line says whether any size failed,
 * and then the table is. A log line of NCCL's whose host name starts
 * with a digit is not a row; a row of 0 bytes is left out with a warning
 * (NCCL returns at once: the time is the harness's). */
Test(calibrate, nccl_tests_error_column_is_a_deviation)
{
	static const char head[] =
		"#       size         count      type   redop     time   algbw   busbw  error     time   "
		"algbw   busbw  error\n"
		"2e3f9af72410:195:195 [0] NCCL INFO Launch mode Parallel\n"
		"           0             0     float     sum    57.30    0.00    0.00  0e+00    57.09    "
		"0.00    0.00  0e+00\n"
		"    33554432       8388608     float     sum    19902    1.69    2.53  2e-07    19898    "
		"1.69    2.53  2e-07\n"
		"    67108864      16777216     float     sum    39770    1.69    2.53  2e-07    39763    "
		"1.69    2.53  2e-07\n";
	char text[1024];
	snprintf(text, sizeof text, "%s# Out of bounds values : 0 OK\n", head);
	struct diag_list d;
	diag_list_init(&d);
	struct bench_table *t = cost_bench_parse(A, "e.txt", text, strlen(text), &d);
	cr_assert_not_null(t, "%s", d.count ? d.items[0].msg : "?");
	cr_assert_eq(t->n_points, 2, "the two sizes that move data");
	within(t->points[0].seconds, 19902e-6, 1e-12, "33.5 MB");
	within(t->points[1].seconds, 39770e-6, 1e-12, "67.1 MB");
	cr_assert_eq(d.errors, 0);
	cr_assert_eq(d.count, 1, "one warning");
	cr_assert_eq(d.items[0].severity, DIAG_WARNING);
	cr_assert_eq(d.items[0].line, 3);
	cr_assert(strstr(d.items[0].msg, "1 row of 0 bytes"), "%s", d.items[0].msg);
	diag_list_free(&d);

	snprintf(text, sizeof text, "%s# Out of bounds values : 2 FAILED\n", head);
	diag_list_init(&d);
	cr_assert_null(cost_bench_parse(A, "f.txt", text, strlen(text), &d));
	cr_assert_eq(d.errors, 1);
	cr_assert_eq(d.items[0].severity, DIAG_ERROR);
	cr_assert_eq(d.items[0].line, 6);
	cr_assert(strstr(d.items[0].msg, "out of bounds at 2 sizes"), "%s", d.items[0].msg);
	diag_list_free(&d);
}

/* hccl_test's table (its header strings "data_size(Bytes):",
 * "aveg_time(us):", "alg_bandwidth(GB/s):", "check_result:"; data_size per
 * NPU, aveg_time in us): two processes printing the same size keep the
 * slower. */
Test(calibrate, hccl_test_read_as_printed)
{
	static const char text[] =
		"the minbytes is 8192, maxbytes is 67108864, iters is 20, warmup_iters is 5\n"
		"data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:\n"
		"8192              |     764.55    |       0.01071        | success\n"
		"1073741824        |    5000.00    |     214.74836        | success\n"
		"1073741824        |    6000.00    |     178.95697        | NULL\n";
	cr_assert_eq(cost_bench_detect(text, sizeof text - 1), BENCH_HCCL_TEST);
	struct bench_table *t = cost_bench_parse(A, "h.txt", text, sizeof text - 1, &D);
	cr_assert_not_null(t);
	cr_assert_eq(t->tool, BENCH_HCCL_TEST);
	cr_assert_eq(t->n_points, 2);
	within(t->points[0].seconds, 764.55e-6, 1e-12, "8 KiB");
	within(t->points[1].seconds, 6000e-6, 1e-12, "the slowest process");
}

/* Numbers in decimal notation only, as the tools print them: a sign, a
 * point and an exponent are read (1.6384e4 bytes = 16384, +7.7E2 us =
 * 770 us), and a bandwidth of 0 (a tiny size's 0.00000) is a figure; the
 * check word in any case. The bad cells are in CORPUS/bench-hccl-bad-cells. */
Test(calibrate, hccl_test_reads_decimal_numbers)
{
	static const char text[] =
		"data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): | check_result:\n"
		"8                 |     764.55     |       0.00000        | NULL\n"
		"1.6384e4          |     +7.7E2     |       .02128         | Success\n";
	struct bench_table *t = cost_bench_parse(A, "h.txt", text, sizeof text - 1, &D);
	cr_assert_not_null(t);
	cr_assert_eq(t->n_points, 2);
	cr_assert_eq(t->points[0].bytes, 8);
	within(t->points[0].seconds, 764.55e-6, 1e-12, "8 B");
	cr_assert_eq(t->points[1].bytes, 16384);
	within(t->points[1].seconds, 770e-6, 1e-12, "16 KiB");
}

/* The figures the table was generated from come back within their
 * standard errors: alpha 2.5 us, efficiency 0.8 of 31 GB/s, ring on 4
 * ranks, 11 sizes with up to 1% noise. */
Test(calibrate, collective_fit_recovers_its_tier)
{
	struct topology *topo = topo_load(A, PCIE_TOPO, &D);
	cr_assert_not_null(topo);
	char *text = nccl_table(4, 2.5e-6, 6, 0.8 * PCIE_LINE_BPS, 1.5, SIZES, 11, NOISE);
	struct bench_table *t = cost_bench_parse(A, "r.txt", text, strlen(text), &D);
	free(text);
	cr_assert_not_null(t);
	cr_assert_eq(t->ranks, 4);
	struct bench_fit_options o = {.topo = topo, .collective = STEP_ALLREDUCE, .ranks = 4,
	                              .algo = COLL_RING};
	struct bench_fit f;
	cr_assert(cost_bench_fit(A, t, &o, &f, &D));
	cr_assert_str_eq(f.target, "tiers.pcie");
	within(f.line_bps, PCIE_LINE_BPS, 1e-12, "line rate");
	cr_assert_leq(fabs(f.latency_us - 2.5), f.latency_se_us, "latency %g +- %g", f.latency_us,
	              f.latency_se_us);
	cr_assert_leq(fabs(f.efficiency - 0.8), f.efficiency_se, "efficiency %g +- %g", f.efficiency,
	              f.efficiency_se);
	cr_assert(f.latency_identifiable && f.bandwidth_identifiable);
	cr_assert_str_eq(f.cv_method, "leave-one-out");
	cr_assert_eq(f.cv_folds, 11);
	/* Noise of at most 1% (and the printed time's 0.01 us): the errors in
	 * and out of sample stay about that size, out of sample not below. */
	cr_assert_lt(f.mape_pct, 1.0);
	cr_assert_lt(f.cv_mape_pct, 1.5);
	cr_assert_geq(f.cv_mape_pct, f.mape_pct);
	for (int i = 0; i < 11; i++)
		cr_assert_eq(f.algo[i], COLL_RING);
}

/* Without a topology: nccl-tests' alpha-beta formula with absolute
 * figures, the same alpha and B = 24.8 GB/s. */
Test(calibrate, collective_fit_without_topology)
{
	char *text = nccl_table(4, 2.5e-6, 6, 0.8 * PCIE_LINE_BPS, 1.5, SIZES, 11, NOISE);
	struct bench_table *t = cost_bench_parse(A, "r.txt", text, strlen(text), &D);
	free(text);
	struct bench_fit_options o = {.collective = STEP_ALLREDUCE, .ranks = 4};
	struct bench_fit f;
	cr_assert(cost_bench_fit(A, t, &o, &f, &D));
	cr_assert_null(f.target);
	cr_assert_leq(fabs(f.latency_us - 2.5), f.latency_se_us);
	cr_assert_leq(fabs(f.busbw_bps - 24.8e9), f.busbw_se_bps, "B %g +- %g", f.busbw_bps,
	              f.busbw_se_bps);
}

/* Leave-one-out by hand, all-reduce on 2 ranks (t = 2 alpha + S / B),
 * three sizes 1, 2 and 3 MB at 20, 30 and 46 us: without a point, the
 * line through the other two predicts it:
 *   without 1 MB: slope 16 us/MB, intercept -2 us: 14 us, -30%;
 *   without 2 MB: slope 13, intercept 7: 33 us, +10%;
 *   without 3 MB: slope 10, intercept 10: 40 us, -13.0435%;
 * MAPE (30 + 10 + 13.0435) / 3 = 17.6812%, RMS sqrt((0.09 + 0.01 +
 * 0.0170132) / 3) = 19.7504%. */
Test(calibrate, leave_one_out_by_hand)
{
	static const char text[] =
		"#  Rank  0 Group  0 Pid 1 on host device  0 [0x00] GPU\n"
		"#  Rank  1 Group  0 Pid 1 on host device  1 [0x01] GPU\n"
		"#       size         count      type   redop    root     time   algbw   busbw #wrong     "
		"time   algbw   busbw #wrong\n"
		"     1000000        250000     float     sum      -1    20.00   50.00   50.00      0    "
		"20.00   50.00   50.00      0\n"
		"     2000000        500000     float     sum      -1    30.00   66.67   66.67      0    "
		"30.00   66.67   66.67      0\n"
		"     3000000        750000     float     sum      -1    46.00   65.22   65.22      0    "
		"46.00   65.22   65.22      0\n";
	struct bench_table *t = cost_bench_parse(A, "l.txt", text, sizeof text - 1, &D);
	cr_assert_not_null(t);
	struct bench_fit_options o = {.collective = STEP_ALLREDUCE, .ranks = t->ranks};
	struct bench_fit f;
	cr_assert(cost_bench_fit(A, t, &o, &f, &D));
	within(f.cv_s[0], 14e-6, 1e-6, "without 1 MB");
	within(f.cv_s[1], 33e-6, 1e-6, "without 2 MB");
	within(f.cv_s[2], 40e-6, 1e-6, "without 3 MB");
	within(f.cv_mape_pct, (30 + 10 + 100 * 6.0 / 46) / 3, 1e-6, "LOO MAPE");
	within(f.cv_rms_pct, 100 * sqrt((0.09 + 0.01 + (6.0 / 46) * (6.0 / 46)) / 3), 1e-6,
	       "LOO RMS");
	within(f.cv_mape_pct, 17.6812, 1e-5, "17.6812%");
}

/* Sizes of 64 MB and more are bandwidth-bound: the latency, 2.5 us under
 * milliseconds, cannot be told from the noise. */
Test(calibrate, latency_not_identifiable_from_large_sizes)
{
	struct topology *topo = topo_load(A, PCIE_TOPO, &D);
	char *text = nccl_table(4, 2.5e-6, 6, 0.8 * PCIE_LINE_BPS, 1.5, SIZES + 8, 3, NOISE);
	struct bench_table *t = cost_bench_parse(A, "b.txt", text, strlen(text), &D);
	free(text);
	struct bench_fit_options o = {.topo = topo, .collective = STEP_ALLREDUCE, .ranks = 4,
	                              .algo = COLL_RING};
	struct bench_fit f;
	cr_assert(cost_bench_fit(A, t, &o, &f, &D));
	cr_assert_not(f.latency_identifiable, "latency %g +- %g", f.latency_us, f.latency_se_us);
	cr_assert(f.bandwidth_identifiable);
	within(f.efficiency, 0.8, 0.01, "the bandwidth still shows");
}

Test(calibrate, collective_fit_needs_three_sizes)
{
	char *text = nccl_table(4, 2.5e-6, 6, 24.8e9, 1.5, SIZES, 2, NOISE);
	struct bench_table *t = cost_bench_parse(A, "two.txt", text, strlen(text), &D);
	free(text);
	struct bench_fit_options o = {.collective = STEP_ALLREDUCE, .ranks = 4};
	struct bench_fit f;
	cr_assert_not(cost_bench_fit(A, t, &o, &f, &D));
	assert_diag(0, "two.txt: 2 sizes: a latency and a bandwidth need at least 3 different sizes "
	               "(one more than the figures, for their errors)");
	forget_diags();
}

/* Each CORPUS/bench-NAME.txt (a benchmark's output gone wrong) gives
 * exactly the diagnostics in bench-NAME.expected. */
Test(calibrate, bad_bench_corpus_gives_exact_diagnostics)
{
	cr_assert_geq(bad_corpus(".txt", " --collective all-reduce --ranks 8"), 2);
}

/* ------------------------------------------------- calibration files */

/* A figure replaces what it names: the tier's efficiency rescales its
 * achievable bandwidth from the line rate (31 GB/s x 0.8), its latency is
 * in us, the device's overhead in us. */
Test(calibrate, calibration_applies_its_figures)
{
	struct topology *topo = topo_load(A, PCIE_TOPO, &D);
	struct calibration *c = cost_calibration_load(A, "tests/data/calibrate/pcie.json", &D);
	cr_assert_not_null(c);
	cr_assert_eq(c->n_figures, 3);
	cr_assert_str_eq(c->figures[0].tier, "pcie");
	cr_assert(cost_calibration_apply(c, topo, &D));
	within(topo->tiers[0].bandwidth_bps, 31e9 * 0.8, 1e-12, "bandwidth");
	within(topo->tiers[0].efficiency, 0.8, 1e-12, "efficiency");
	within(topo->tiers[0].latency_s, 2.5e-6, 1e-12, "latency");
	within(topo->device.kernel_overhead_s, 4e-6, 1e-12, "overhead");
	/* Applied twice, the same. */
	cr_assert(cost_calibration_apply(c, topo, &D));
	within(topo->tiers[0].bandwidth_bps, 31e9 * 0.8, 1e-12, "bandwidth, again");
	/* Written and read back: the same figures. */
	cJSON *j = cost_calibration_json(c);
	char *s = cJSON_Print(j);
	cJSON_Delete(j);
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, "again.json", s, strlen(s), &D));
	struct calibration *b = cost_calibration_load_doc(A, &doc);
	json_doc_free(&doc);
	cJSON_free(s);
	cr_assert_not_null(b);
	cr_assert_eq(b->n_figures, 3);
	cr_assert_eq(b->n_fits, 1);
	for (int i = 0; i < 3; i++) {
		cr_assert_str_eq(b->figures[i].name, c->figures[i].name);
		cr_assert_eq(b->figures[i].value, c->figures[i].value);
		cr_assert_eq(b->figures[i].std_error, c->figures[i].std_error);
	}
	cr_assert_eq(b->fits[0].covariance[1], c->fits[0].covariance[1]);
}

/* A file stores six significant digits of what a fit computed (its last
 * digits are the BLAS kernels', which differ from CPU to CPU): 0.8571909303
 * is written 0.857191, its standard error 0.0196652561 0.0196653, the
 * covariance and the cross-validated figures likewise; a value at its
 * upper bound stays the bound, not rounded past it. */
Test(calibrate, calibration_stores_six_digits)
{
	struct calibration *c = cost_calibration_load(A, "tests/data/calibrate/pcie.json", &D);
	cr_assert_not_null(c);
	c->figures[0].value = 0.85719093030536353;
	c->figures[0].std_error = 0.019665256119944546;
	c->figures[0].cv_error_pct = 7.5303309304794341;
	c->figures[1].hi = 1.0638297872340425;
	c->figures[1].value = c->figures[1].hi;
	c->fits[0].covariance[0] = 0.00038672229826301643;
	c->fits[0].cv_rms_pct = 13.010737947982246;
	cJSON *j = cost_calibration_json(c);
	const cJSON *f0 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "figures"), 0);
	const cJSON *f1 = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "figures"), 1);
	const cJSON *fit = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(j, "fits"), 0);
	const cJSON *cov = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(fit, "covariance"), 0);
	const cJSON *cv = cJSON_GetObjectItemCaseSensitive(fit, "cv");
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(f0, "value")->valuedouble, 0.857191);
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(f0, "std_error")->valuedouble, 0.0196653);
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(f0, "cv_error_pct")->valuedouble, 7.53033);
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(f1, "value")->valuedouble, 1.0638297872340425,
	             "a value at its bound stays inside it (1.06383 would be past it)");
	cr_expect_eq(cJSON_GetArrayItem(cov, 0)->valuedouble, 0.000386722);
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(cv, "rms_pct")->valuedouble, 13.0107);
	cJSON_Delete(j);
}

Test(calibrate, calibration_refuses_what_the_topology_lacks)
{
	struct topology *topo = topo_load(A, "topologies/dgx-a100.json", &D);
	struct calibration *c = cost_calibration_load(A, "tests/data/calibrate/pcie.json", &D);
	cr_assert(topo && c);
	double bw = topo->tiers[0].bandwidth_bps;
	c->device = NULL; /* any device */
	cr_assert_not(cost_calibration_apply(c, topo, &D));
	assert_diag(0, "tests/data/calibrate/pcie.json:9: figures[0].name: the topology dgx-a100 has "
	               "no tier \"pcie\" (its tiers: \"nvswitch\")");
	cr_assert_eq(topo->tiers[0].bandwidth_bps, bw, "unchanged");
	forget_diags();
}

/* "also_for": the shipped A100 calibration, fitted on the 80GB part, holds
 * for the 40GB part too (the same GPU and clocks, A100 datasheet), and a
 * topology of that kind takes its figure; without the list it is refused
 * there. The list is written back as read. */
Test(calibrate, calibration_holds_for_the_kinds_it_names)
{
	struct calibration *c = cost_calibration_load(A, "calibration/a100-sxm.json", &D);
	struct topology *forty = topo_load(A, "validation/a100-40gb-x16.json", &D);
	cr_assert(c && forty);
	cr_assert_str_eq(forty->device.kind, "NVIDIA A100 SXM 40GB");
	cr_assert_eq(c->n_also_for, 1);
	cr_expect(cost_calibration_holds_for(c, "NVIDIA A100 SXM 80GB"));
	cr_expect(cost_calibration_holds_for(c, "NVIDIA A100 SXM 40GB"));
	cr_expect_not(cost_calibration_holds_for(c, "NVIDIA H100 SXM"));
	cr_expect_not(cost_calibration_holds_for(c, "NVIDIA A100 SXM"));  /* whole names */
	double gemm = forty->device.matmul_efficiency;
	cr_assert(cost_calibration_apply(c, forty, &D));
	/* train.gemm_efficiency scales the compute model's GEMM rate */
	cr_expect_float_eq(forty->device.matmul_efficiency, gemm * c->figures[0].value, 1e-12);
	cJSON *j = cost_calibration_json(c);
	char *text = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(j, "also_for"));
	cr_expect_str_eq(text, "[\"NVIDIA A100 SXM 40GB\"]");
	free(text);
	cJSON_Delete(j);
	struct topology *again = topo_load(A, "validation/a100-40gb-x16.json", &D);
	c->n_also_for = 0;
	cr_assert_not(cost_calibration_apply(c, again, &D));
	assert_diag(0, "calibration/a100-sxm.json:6: device: the calibration was fitted on \"NVIDIA "
	               "A100 SXM 80GB\", the topology a100-40gb-x16 has \"NVIDIA A100 SXM 40GB\"");
	forget_diags();
	c->n_also_for = 1;
	struct topology *h100 = topo_load(A, "topologies/dgx-h100.json", &D);
	cr_assert_not(cost_calibration_apply(c, h100, &D));
	assert_diag(0, "calibration/a100-sxm.json:6: device: the calibration was fitted on \"NVIDIA "
	               "A100 SXM 80GB\" (and holds for \"NVIDIA A100 SXM 40GB\"), the topology "
	               "dgx-h100 has \"NVIDIA H100 SXM\"");
	forget_diags();
}

/* The CLI end to end: calibrate --out writes a file that check accepts
 * and that estimate and validate apply. */
Test(calibrate, cli_writes_and_applies_a_calibration, .timeout = 60)
{
	char dir[] = "/tmp/shardlab-cal-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char bench[128], out[128], args[512];
	snprintf(bench, sizeof bench, "%s/all_reduce_perf.txt", dir);
	snprintf(out, sizeof out, "%s/pcie-ring.json", dir);
	char *text = nccl_table(4, 2.5e-6, 6, 0.8 * PCIE_LINE_BPS, 1.5, SIZES, 11, NOISE);
	FILE *f = fopen(bench, "w");
	fputs(text, f);
	fclose(f);
	free(text);
	snprintf(args, sizeof args, "calibrate %s --collective all-reduce --topology " PCIE_TOPO
	         " --algorithm ring --out %s", bench, out);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert_not_null(strstr(r.out, "tiers.pcie.latency_us          2.5"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "cross-validated (leave-one-out, 11 folds)"), "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "check %s", out);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert_not_null(strstr(r.out, "(calibration: pcie-ring, 2 figures)"), "%s", r.out);
	free(r.out);
	struct calibration *c = cost_calibration_load(A, out, &D);
	cr_assert_not_null(c);
	cr_assert_str_eq(c->device, "GPU");
	cr_assert_eq(c->n_fits, 1);
	cr_assert_str_eq(c->fits[0].cv_method, "leave-one-out");
	cr_assert_leq(fabs(c->figures[1].value - 0.8), c->figures[1].std_error);
	remove(bench);
	remove(out);
	rmdir(dir);
}

/* The kernel fit out of sample and as a file: the synthetic example is
 * generated from matmul_efficiency 0.85, gemm_half_dim 64,
 * memory_efficiency 0.9 and kernel_overhead_us 4 without noise, so each
 * row left out is predicted exactly; --out writes those four, which a
 * topology then takes. */
Test(calibrate, kernel_fit_cross_validated_and_written, .timeout = 60)
{
	struct topology *topo = topo_load(A, "topologies/dgx-a100.json", &D);
	struct calib_table *t = cost_calib_load(A, "calibration/synthetic-a100-example.csv", &D);
	cr_assert(topo && t);
	struct calib_cv cv;
	cost_calib_cross_validate(A, t, &topo->device, 0, &cv);
	cr_assert_str_eq(cv.method, "leave-one-out");
	cr_assert_eq(cv.folds, t->n_rows);
	cr_assert_lt(cv.mape_pct, 0.01, "%g", cv.mape_pct);
	char dir[] = "/tmp/shardlab-kcal-XXXXXX", out[96], args[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(out, sizeof out, "%s/a100-kernels.json", dir);
	snprintf(args, sizeof args, "calibrate calibration/synthetic-a100-example.csv --topology "
	         "topologies/dgx-a100.json --out %s", out);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_assert_not_null(strstr(r.out, "cross-validated (leave-one-out, 17 folds): MAPE 0.0%"),
	                   "%s", r.out);
	free(r.out);
	struct calibration *c = cost_calibration_load(A, out, &D);
	cr_assert_not_null(c);
	cr_assert_eq(c->n_figures, 4);
	cr_assert_str_eq(c->fits[0].kind, "kernels");
	struct topology *h = topo_load(A, "topologies/dgx-a100.json", &D);
	h->device.matmul_efficiency = 0.5;
	h->device.kernel_overhead_s = 0;
	cr_assert(cost_calibration_apply(c, h, &D));
	within(h->device.matmul_efficiency, 0.85, 1e-9, "matmul_efficiency");
	within(h->device.gemm_half_dim, 64, 1e-9, "gemm_half_dim");
	within(h->device.memory_efficiency, 0.9, 1e-9, "memory_efficiency");
	within(h->device.kernel_overhead_s, 4e-6, 1e-9, "kernel_overhead");
	remove(out);
	rmdir(dir);
}

/* --calibration on a scenario command: the topology's own figures change
 * nothing, byte for byte; an HCCS latency of 50 us instead of 1 makes the
 * FFN's all-reduce, and so the iteration, slower. */
Test(calibrate, scenario_commands_apply_a_calibration, .timeout = 60)
{
	struct cli_run plain = fixture_shardlab("estimate --json scenarios/ffn-8p.json", false);
	struct cli_run same = fixture_shardlab("estimate --json scenarios/ffn-8p.json --calibration "
	                                       "tests/data/calibrate/910a-same.json", false);
	struct cli_run slow = fixture_shardlab("estimate --json scenarios/ffn-8p.json --calibration "
	                                       "tests/data/calibrate/910a-slow-hccs.json", false);
	cr_assert_eq(plain.status, 0);
	/* The same figures give the same output but for the calibration it
	 * names (none in the plain run) and the interval's note. */
	cJSON *pj = cJSON_Parse(plain.out), *sj = cJSON_Parse(same.out);
	cr_assert(pj && sj);
	cr_assert(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(pj, "calibration")));
	cJSON *cal = cJSON_GetObjectItemCaseSensitive(sj, "calibration");
	cr_assert(cJSON_IsObject(cal));
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cal, "file")->valuestring,
	                 "tests/data/calibrate/910a-same.json");
	const char *note = cJSON_GetObjectItemCaseSensitive(
		cJSON_GetObjectItemCaseSensitive(sj, "interval"), "note")->valuestring;
	cr_assert_str_eq(note, "the calibration has no training fit: no interval");
	for (int k = 0; k < 2; k++) {
		cJSON_DeleteItemFromObjectCaseSensitive(k ? pj : sj, "calibration");
		cJSON_DeleteItemFromObjectCaseSensitive(k ? pj : sj, "interval");
	}
	char *pt = cJSON_Print(pj), *st = cJSON_Print(sj);
	cr_assert_str_eq(st, pt);
	cJSON_free(pt);
	cJSON_free(st);
	cJSON_Delete(pj);
	cJSON_Delete(sj);
	cr_assert_eq(slow.status, 0, "%s", slow.out);
	cJSON *p = cJSON_Parse(plain.out), *s = cJSON_Parse(slow.out);
	cr_assert(p && s);
	double tp = cJSON_GetObjectItemCaseSensitive(p, "iteration_s")->valuedouble;
	double ts = cJSON_GetObjectItemCaseSensitive(s, "iteration_s")->valuedouble;
	cr_assert_gt(ts, tp, "%g vs %g", ts, tp);
	cJSON_Delete(p);
	cJSON_Delete(s);
	free(plain.out);
	free(same.out);
	free(slow.out);
}

/* Above 20 sizes the error out of sample is 10-fold (size i in fold
 * i mod 10): 24 sizes from 1 KiB by 2, no noise beyond the printed
 * digits, so every size left out is still predicted within 0.5%. */
Test(calibrate, k_fold_above_twenty_sizes)
{
	double sizes[24], noise[24] = {0};
	for (int i = 0; i < 24; i++)
		sizes[i] = 1024 * pow(2, i);
	char *text = nccl_table(4, 2.5e-6, 6, 24.8e9, 1.5, sizes, 24, noise);
	struct bench_table *t = cost_bench_parse(A, "k.txt", text, strlen(text), &D);
	free(text);
	cr_assert_eq(t->n_points, 24);
	struct bench_fit_options o = {.collective = STEP_ALLREDUCE, .ranks = 4};
	struct bench_fit f;
	cr_assert(cost_bench_fit(A, t, &o, &f, &D));
	cr_assert_str_eq(f.cv_method, "k-fold");
	cr_assert_eq(f.cv_folds, 10);
	for (int i = 0; i < 24; i++)
		cr_assert_lt(fabs(f.cv_s[i] / t->points[i].seconds - 1), 0.005, "size %d", i);
}

/* --------------------------------------------- prediction intervals */

/* A calibration of one training figure (GEMMs at 0.9 of the device's rate,
 * standard error as given) fitted on 10 rows whose residuals spread 5%
 * out of sample (the relative RMS) and `log_rms` in ln(predicted /
 * measured) (none: the key left out), on the 4-layer GPT over 32 A100s. */
static const char interval_cal[] =
	"{\"format\": \"shardlab-calibration\", \"version\": 1, \"name\": \"iv\",\n"
	" \"figures\": [{\"name\": \"train.gemm_efficiency\", \"units\": \"ratio\",\n"
	"   \"bounds\": [0.5, 1.5], \"value\": 0.9, \"std_error\": %s, \"fitted_on\": \"made up\",\n"
	"   \"fit\": \"training\"}],\n"
	" \"fits\": [{\"name\": \"training\", \"kind\": \"training\", \"fitted_on\": \"made up\",\n"
	"   \"points\": 10, \"figures\": [\"train.gemm_efficiency\"], \"covariance\": [[%s]],\n"
	"   \"cv\": {\"method\": \"leave-one-out\", \"folds\": 10, \"mape_pct\": 4, \"rms_pct\": 5%s}}]}\n";

/* Student's t quantile of 0.95 with 9 degrees of freedom (10 rows, one
 * figure): 1.833112932653633, the published value (R's qt(0.95, 9);
 * tables give 1.833). */
#define T95_9 1.833112932653633

static double estimate_with_gemm(const struct plan *p, double gemm)
{
	struct topology t = *p->scenario->topo;
	struct scenario s = *p->scenario;
	struct plan q = *p;
	cost_cal_set(&t, CAL_TRAIN_GEMM_EFFICIENCY, NULL, gemm);
	s.topo = &t;
	q.scenario = &s;
	struct estimate e;
	cr_assert(plan_estimate(A, &q, &e, &D));
	return e.iteration_s;
}

static const struct plan *interval_plan(const char *se, const char *var, const char *log_rms)
{
	char text[2048], extra[64] = "";
	if (log_rms)
		snprintf(extra, sizeof extra, ", \"log_rms\": %s", log_rms);
	snprintf(text, sizeof text, interval_cal, se, var, extra);
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, "iv.json", text, strlen(text), &D));
	struct calibration *c = cost_calibration_load_doc(A, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(c);
	struct scenario *s = fixture_scenario("scenarios/gpt-4layer-32p.json");
	cr_assert(cost_calibration_apply(c, s->topo, &D));
	cr_assert_eq(s->topo->calibration, c);
	struct plan *p = plan_make(A, s, PLANNER_MEGATRON, &(struct plan_options){0}, &D);
	cr_assert_not_null(p);
	return p;
}

/* No spread in the figure: the interval is the residuals' alone, a
 * lognormal t exp(± q 0.04) with q Student's t of 9 degrees of freedom. */
Test(calibrate, interval_of_residuals_alone)
{
	const struct plan *p = interval_plan("0", "0", "0.04");
	struct cal_interval iv;
	cr_assert(cost_calibration_interval(A, p->scenario->topo->calibration, p, &iv));
	cr_assert(iv.have);
	double t = estimate_with_gemm(p, 0.9);
	cr_assert_eq(iv.dof, 9);
	within(iv.quantile, T95_9, 1e-9, "t quantile, 9 degrees of freedom");
	within(iv.center_s, t, 1e-12, "centre");
	within(iv.rel_sd, 0.04, 1e-12, "log sd: the file's log_rms");
	within(iv.lo_s, t * exp(-T95_9 * 0.04), 1e-9, "low end");
	within(iv.hi_s, t * exp(T95_9 * 0.04), 1e-9, "high end");
	/* Moved onto another time (a simulation's), the same ratios. */
	struct cal_interval at;
	cost_interval_at(&iv, 2.0, &at);
	within(at.lo_s, 2.0 * exp(-T95_9 * 0.04), 1e-9, "moved, low");
	within(at.hi_s, 2.0 * exp(T95_9 * 0.04), 1e-9, "moved, high");
}

/* A file without log_rms (written before it existed): the relative RMS
 * stands for it, 5% here. */
Test(calibrate, interval_without_log_rms_takes_the_relative_rms)
{
	const struct plan *p = interval_plan("0", "0", NULL);
	struct cal_interval iv;
	cr_assert(cost_calibration_interval(A, p->scenario->topo->calibration, p, &iv));
	cr_assert(iv.have);
	double t = estimate_with_gemm(p, 0.9);
	within(iv.rel_sd, 0.05, 1e-12, "log sd: rms_pct / 100");
	within(iv.hi_s, t * exp(T95_9 * 0.05), 1e-9, "high end");
}

/* Variance 0.05^2 in the figure: the delta method by hand on ln t, the
 * gradient of the estimate over 0.85 .. 0.95 divided by t, plus the
 * residuals' 0.04, and the t quantile: t exp(± q sqrt((g 0.05 / t)^2 +
 * 0.04^2)). */
Test(calibrate, interval_is_the_delta_method_on_ln_t)
{
	const struct plan *p = interval_plan("0.05", "0.0025", "0.04");
	struct cal_interval iv;
	cr_assert(cost_calibration_interval(A, p->scenario->topo->calibration, p, &iv));
	cr_assert(iv.have);
	double t = estimate_with_gemm(p, 0.9);
	double g = (estimate_with_gemm(p, 0.95) - estimate_with_gemm(p, 0.85)) / 0.1;
	cr_assert(g < 0, "a faster GEMM, a shorter iteration");
	double fig = fabs(g) * 0.05 / t, sd = sqrt(fig * fig + 0.04 * 0.04);
	within(iv.rel_sd_figures, fig, 1e-9, "the figure's part");
	within(iv.rel_sd, sd, 1e-9, "both");
	within(iv.lo_s, t * exp(-T95_9 * sd), 1e-9, "low end");
	within(iv.hi_s, t * exp(T95_9 * sd), 1e-9, "high end");
	cr_assert(iv.lo_s > 0 && iv.hi_s / t > t / iv.lo_s * (1 - 1e-12),
	          "lognormal: never 0, the same ratio either side");
}

/* Hand-computed quantiles (published tables): 1 degree of freedom 6.313752,
 * 2: 2.919986, 30: 1.697261; none with 0 (as many figures as rows), and a
 * spread so wide a normal would have gone below 0 stays above it. */
Test(calibrate, interval_quantiles_by_degrees_of_freedom)
{
	struct cal_interval iv;
	cost_interval_of(1.0, 0.1, 0, 1, 0.9, &iv);
	within(iv.quantile, 6.313752, 1e-6, "t(0.95, 1)");
	cost_interval_of(1.0, 0.1, 0, 2, 0.9, &iv);
	within(iv.quantile, 2.919986, 1e-6, "t(0.95, 2)");
	cost_interval_of(1.0, 0.1, 0, 30, 0.9, &iv);
	within(iv.quantile, 1.697261, 1e-6, "t(0.95, 30)");
	cost_interval_of(1.0, 0.1, 0, 0, 0.9, &iv);
	cr_assert(!iv.have && iv.why, "no degrees of freedom, no interval");
	cost_interval_of(3.0, 0.9, 0, 2, 0.9, &iv);
	cr_assert(iv.have && iv.lo_s > 0, "never 0");
	within(iv.lo_s * iv.hi_s, 9.0, 1e-9, "symmetric in ln t around 3 s");
}

/* A spread with no finite interval says so, not that rows are too few
 * (that is for dof < 1 alone): an infinite one, and one whose bounds
 * overflow: t(0.95, 5) = 2.015048 x 400 = 806 is past ln(DBL_MAX) = 709.8,
 * e^806 infinite and e^-806 below the least double. */
Test(calibrate, interval_not_finite_says_why)
{
	struct cal_interval iv;
	cost_interval_of(1.0, INFINITY, 0, 5, 0.9, &iv);
	cr_assert(!iv.have);
	cr_assert_str_eq(iv.why, "the spread is not finite: no interval");
	cost_interval_of(1.0, 400, 0, 5, 0.9, &iv);
	cr_assert(!iv.have);
	cr_assert_str_eq(iv.why, "the spread overflows (wider than any time): no interval");
	cost_interval_of(1.0, 300, 0, 5, 0.9, &iv);  /* e^604.5: 1e262, still a double */
	cr_assert(iv.have && isfinite(iv.hi_s) && iv.lo_s > 0);
	cost_interval_of(1.0, INFINITY, 0, 0, 0.9, &iv);
	cr_assert_str_eq(iv.why, "fewer rows than figures + 1: no interval");
}

/* The same through a calibration (the loader refuses such files: these
 * are set after it): an infinite covariance names the figures, an
 * infinite residual spread (rms_pct, log_rms absent) the fit. */
Test(calibrate, interval_of_an_infinite_spread_names_its_source)
{
	const struct plan *p = interval_plan("0.01", "0.0001", "0.04");
	struct calibration *c = (struct calibration *)p->scenario->topo->calibration;
	struct cal_fit *f = (struct cal_fit *)cost_calibration_training_fit(c);
	cr_assert_not_null(f);
	struct cal_interval iv;
	f->covariance[0] = INFINITY;
	cr_assert(cost_calibration_interval(A, c, p, &iv));
	cr_assert(!iv.have);
	cr_assert_str_eq(iv.why,
	                 "the figures' covariance gives no finite spread for this plan: no interval");
	f->covariance[0] = 0.0001;
	f->cv_log_rms = NAN;  /* absent: rms_pct / 100 stands for it */
	f->cv_rms_pct = INFINITY;
	cr_assert(cost_calibration_interval(A, c, p, &iv));
	cr_assert(!iv.have);
	cr_assert_str_eq(iv.why, "the fit's residual spread is not finite: no interval");
}

/* Without a training fit there is no interval, and the output says why. */
Test(calibrate, no_interval_without_a_training_fit)
{
	struct scenario *s = fixture_scenario("scenarios/gpt-4layer-32p.json");
	struct plan *p = plan_make(A, s, PLANNER_MEGATRON, &(struct plan_options){0}, &D);
	cr_assert_not_null(p);
	struct cal_interval iv;
	cr_assert(cost_calibration_interval(A, NULL, p, &iv));
	cr_assert(!iv.have);
	cr_assert_str_eq(iv.why, "uncalibrated: no interval");
	struct calibration *c = cost_calibration_load(A, "tests/data/calibrate/pcie.json", &D);
	cr_assert_not_null(c);
	cr_assert(cost_calibration_interval(A, c, p, &iv));
	cr_assert(!iv.have);
	cr_assert_str_eq(iv.why, "the calibration has no training fit: no interval");
}

/* A training figure applied twice, or after another figure of what it
 * scales, is applied once: the GEMM ratio multiplies the device's
 * efficiency, the overhead adds to the kernel's, the links' ratio scales
 * every bandwidth once. */
Test(calibrate, training_figures_apply_once)
{
	struct topology *t = topo_load(A, "topologies/dgx-a100.json", &D);
	cr_assert_not_null(t);
	double eff = t->device.matmul_efficiency, oh = t->device.kernel_overhead_s;
	double bw = t->tiers[0].bandwidth_bps;
	for (int k = 0; k < 2; k++) {
		cost_cal_set(t, CAL_TRAIN_GEMM_EFFICIENCY, NULL, 0.8);
		cost_cal_set(t, CAL_TRAIN_OP_OVERHEAD_US, NULL, 30);
		cost_cal_set(t, CAL_TRAIN_COMM_EFFICIENCY, NULL, 0.5);
	}
	within(t->device.matmul_efficiency, eff * 0.8, 1e-12, "gemm");
	within(t->device.kernel_overhead_s, oh + 30e-6, 1e-12, "overhead");
	within(t->tiers[0].bandwidth_bps, bw * 0.5, 1e-12, "bandwidth");
	cost_cal_set(t, CAL_MATMUL_EFFICIENCY, NULL, 0.7);
	cost_cal_set(t, CAL_KERNEL_OVERHEAD_US, NULL, 5);
	within(t->device.matmul_efficiency, 0.7 * 0.8, 1e-12, "kernel figure under the ratio");
	within(t->device.kernel_overhead_s, 5e-6 + 30e-6, 1e-12, "kernel overhead under the framework's");
}

/* The shipped calibrations load, apply to the topologies of their device
 * and carry a cross-validated training fit of at most six figures, which
 * says what it was fitted on. */
Test(calibrate, shipped_calibrations_load_and_apply)
{
	static const char *const files[][2] = {
		{"calibration/a100-sxm.json", "topologies/dgx-a100-x128.json"},
		{"calibration/h100-sxm.json", "topologies/dgx-h100-x64.json"}};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct calibration *c = cost_calibration_load(A, files[i][0], &D);
		cr_assert_not_null(c, "%s", files[i][0]);
		struct topology *t = topo_load(A, files[i][1], &D);
		cr_assert_not_null(t);
		cr_assert(cost_calibration_apply(c, t, &D), "%s on %s", files[i][0], files[i][1]);
		const struct cal_fit *f = cost_calibration_training_fit(c);
		cr_assert_not_null(f);
		cr_assert(f->n_figures >= 1 && f->n_figures <= 6);
		cr_assert(isfinite(f->cv_mape_pct) && f->cv_rms_pct > 0);
		cr_assert_not_null(strstr(f->fitted_on, "validation/"));
		cr_assert_not_null(c->description);
		cr_assert_not_null(strstr(c->description, "fitted by scripts/calibrations.sh on "));
	}
}

/* ------------------------------------- NCCL's hop latencies, calibrated */

#define H100_2N "validation/dgx-h100-200g-x2.json"

/* 2 servers x 8 H100 (NVLink inside, NCCL), all-reduce over all 16:
 * NCCL's tree latency is baseLat + 2 ((ppn - 1) hwLat[NVLink] + log2(m)
 * hwLat[net]) (tuning.cc of v2.8.3), Simple's net hop 28 us. A
 * calibrated nccl.tree.simple.net_us of 128 us adds 2 x 1 x (128 - 28) =
 * 200 us to the tree's Simple time, to the simulator's latency as to the
 * estimate's, leaves the ring and the tree's LL alone, and moves neither
 * NCCL's choice of algorithm nor of protocol at any size (NCCL picks by its
 * own constants), even at 100 ms a hop. */
Test(calibrate, nccl_hop_figure_changes_the_time_not_the_choice)
{
	struct topology *base = topo_load(A, H100_2N, &D);
	cr_assert_not_null(base);
	cr_assert_eq(base->coll.library, TOPO_COLL_NCCL);
	struct topology cal = *base, huge = *base;
	cost_cal_set(&cal, CAL_NCCL_HOP_US, "tree.simple.net", 128);
	cost_cal_set(&huge, CAL_NCCL_HOP_US, "tree.simple.net", 1e5);
	int64_t ranks[16];
	for (int r = 0; r < 16; r++)
		ranks[r] = r;
	double gib = 1073741824;
	cr_assert_eq(cost_choose_algo(base, STEP_ALLREDUCE, ranks, 16, gib, COLL_AUTO), COLL_TREE);
	cr_assert_str_eq(cost_collective_protocol(base, STEP_ALLREDUCE, COLL_TREE, ranks, 16, gib),
	                 "Simple");
	double t0 = cost_collective_algo_s(base, STEP_ALLREDUCE, COLL_TREE, ranks, 16, gib);
	double t1 = cost_collective_algo_s(&cal, STEP_ALLREDUCE, COLL_TREE, ranks, 16, gib);
	cr_assert(fabs(t1 - t0 - 200e-6) < 1e-12, "%.9g - %.9g", t1, t0);
	double w0, w1, x0, x1;
	cr_assert(cost_collective_wire(base, STEP_ALLREDUCE, COLL_TREE, ranks, 16, gib, &w0, &x0));
	cr_assert(cost_collective_wire(&cal, STEP_ALLREDUCE, COLL_TREE, ranks, 16, gib, &w1, &x1));
	cr_assert(fabs(x1 - x0 - 200e-6) < 1e-12, "simulator's latency %.9g - %.9g", x1, x0);
	cr_assert_eq(w1, w0);
	cr_assert_eq(cost_collective_algo_s(&cal, STEP_ALLREDUCE, COLL_RING, ranks, 16, gib),
	             cost_collective_algo_s(base, STEP_ALLREDUCE, COLL_RING, ranks, 16, gib));
	for (double s = 1024; s <= 8 * gib; s *= 2)
		for (int k = 0; k < 2; k++) {
			const struct topology *t = k ? &huge : &cal;
			enum collective_algo a = cost_choose_algo(base, STEP_ALLREDUCE, ranks, 16, s,
			                                          COLL_AUTO);
			cr_assert_eq(cost_choose_algo(t, STEP_ALLREDUCE, ranks, 16, s, COLL_AUTO), a,
			             "%g B", s);
			const char *p = cost_collective_protocol(base, STEP_ALLREDUCE, a, ranks, 16, s);
			cr_assert_str_eq(cost_collective_protocol(t, STEP_ALLREDUCE, a, ranks, 16, s), p,
			                 "%g B", s);
			if (strcmp(p, "Simple") || a != COLL_TREE) /* the others keep their time */
				cr_assert_eq(cost_collective_algo_s(t, STEP_ALLREDUCE, a, ranks, 16, s),
				             cost_collective_algo_s(base, STEP_ALLREDUCE, a, ranks, 16, s),
				             "%g B", s);
		}
}

/* An nccl-tests all-reduce table of 16 ranks from the given times. */
static char *nccl_times(const double *sizes, const double *seconds, int n)
{
	size_t cap = 4096;
	char *s = malloc(cap);
	int at = snprintf(s, cap, "#       size         count      type   redop    root     time   "
	                          "algbw   busbw #wrong     time   algbw   busbw #wrong\n");
	for (int i = 0; i < n; i++) {
		double alg = sizes[i] / seconds[i] * 1e-9;
		at += snprintf(s + at, cap - (size_t)at,
		               "%12.0f  %12.0f     float     sum      -1  %9.2f  %6.2f  %6.2f  0  %9.2f  "
		               "%6.2f  %6.2f  0\n", sizes[i], sizes[i] / 4, seconds[i] * 1e6, alg,
		               alg * 1.875, seconds[i] * 1e6, alg, alg * 1.875);
	}
	return s;
}

/* A table made with nccl.tree.simple.net_us = 300 and the NICs at 0.94
 * (the file's) on the sizes NCCL runs with the tree and Simple (64 MiB to
 * 8 GiB): --figures nic.efficiency,nccl.tree.simple.net_us gives them back
 * (to the printed times' 0.01 us), each identifiable. */
Test(calibrate, nccl_hop_figure_recovered_from_a_table)
{
	struct topology *base = topo_load(A, H100_2N, &D);
	cr_assert_not_null(base);
	struct topology truth = *base;
	cost_cal_set(&truth, CAL_NCCL_HOP_US, "tree.simple.net", 300);
	int64_t ranks[16];
	for (int r = 0; r < 16; r++)
		ranks[r] = r;
	double sizes[8], secs[8];
	for (int i = 0; i < 8; i++) {
		sizes[i] = 67108864.0 * (1 << i);
		enum collective_algo a = cost_choose_algo(&truth, STEP_ALLREDUCE, ranks, 16, sizes[i],
		                                          COLL_AUTO);
		cr_assert_eq(a, COLL_TREE, "%g B", sizes[i]);
		secs[i] = cost_collective_algo_s(&truth, STEP_ALLREDUCE, a, ranks, 16, sizes[i]);
	}
	char *text = nccl_times(sizes, secs, 8);
	struct bench_table *t = cost_bench_parse(A, "h.txt", text, strlen(text), &D);
	free(text);
	cr_assert_not_null(t);
	static const char *const names[] = {"nic.efficiency", "nccl.tree.simple.net_us"};
	struct bench_fit_options o = {.topo = base, .collective = STEP_ALLREDUCE, .ranks = 16,
	                              .n_figures = 2, .figures = names};
	struct bench_fit f;
	cr_assert(cost_bench_fit(A, t, &o, &f, &D));
	cr_assert_eq(f.n_figures, 2);
	cr_assert_str_eq(f.figure[0].name, "nic.efficiency");
	cr_assert_str_eq(f.figure[0].units, "fraction");
	cr_assert_str_eq(f.figure[1].units, "us");
	within(f.figure[0].value, 0.94, 1e-4, "nic.efficiency");
	within(f.figure[1].value, 300, 1e-3, "nccl.tree.simple.net_us");
	cr_assert(f.figure[0].identifiable && f.figure[1].identifiable);
	cr_assert_lt(f.cv_mape_pct, 0.01);
	for (int i = 0; i < 8; i++)
		cr_assert_str_eq(f.protocol[i], "Simple");
}

Test(calibrate, nccl_hop_figure_names)
{
	const char *key;
	cr_assert_eq(cost_cal_param_parse(A, "nccl.ring.ll128.nvlink_us", &key), CAL_NCCL_HOP_US);
	cr_assert_str_eq(key, "ring.ll128.nvlink");
	cr_assert_eq(cost_cal_param_parse(A, "nccl.tree.simple.net_us", &key), CAL_NCCL_HOP_US);
	cr_assert_eq(cost_cal_param_parse(A, "nccl.tree.ll.pci_us", &key), CAL_NCCL_HOP_US);
	cr_assert_str_eq(cal_param_units[CAL_NCCL_HOP_US], "us");
	static const char *const bad[] = {"nccl.tree.simple.net", "nccl.tree.simple_us",
	                                  "nccl.nvls.simple.net_us", "nccl.ring.ll.ib_us",
	                                  "nccl.ring.ll.net.x_us", "nccl._us", "nccl.ring..net_us"};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		cr_assert_eq(cost_cal_param_parse(A, bad[i], &key), -1, "%s", bad[i]);
	/* on a topology whose collectives are not NCCL's: refused */
	struct topology *hccl = topo_load(A, "topologies/atlas800t-a2-910b.json", &D);
	cr_assert_not_null(hccl);
	struct cal_figure fig = {.name = "nccl.tree.simple.net_us", .param = CAL_NCCL_HOP_US,
	                         .tier = "tree.simple.net", .hi = 1e6, .value = 300, .line = 7};
	struct calibration c = {.file = "n.json", .name = "n", .n_figures = 1, .figures = &fig};
	cr_assert_not(cost_calibration_apply(&c, hccl, &D));
	assert_diag(0, "n.json:7: figures[0].name: nccl.tree.simple.net_us is a latency of NCCL's; "
	               "the topology atlas800t-a2-910b's library is \"hccl\"");
	forget_diags();
}

/* --figures: at most the sizes - 1, and only what a collective fit sets. */
Test(calibrate, figures_refused)
{
	struct topology *base = topo_load(A, H100_2N, &D);
	char *text = nccl_table(16, 2.5e-6, 30, 180e9, 1.875, SIZES + 8, 3, NOISE);
	struct bench_table *t = cost_bench_parse(A, "f.txt", text, strlen(text), &D);
	free(text);
	cr_assert(base && t);
	static const char *const three[] = {"nic.efficiency", "nic.latency_us",
	                                    "nccl.tree.simple.net_us"};
	struct bench_fit_options o = {.topo = base, .collective = STEP_ALLREDUCE, .ranks = 16,
	                              .n_figures = 3, .figures = three};
	struct bench_fit f;
	cr_assert_not(cost_bench_fit(A, t, &o, &f, &D));
	assert_diag(0, "f.txt: 3 figures from 3 sizes: at most 2 (one fewer than the sizes, for "
	               "their errors, and at most 6)");
	forget_diags();
	static const char *const other[] = {"device.matmul_efficiency"};
	o.n_figures = 1;
	o.figures = other;
	cr_assert_not(cost_bench_fit(A, t, &o, &f, &D));
	assert_diag(0, "f.txt: a collective fit sets \"tiers.TIER.latency_us\", "
	               "\"tiers.TIER.efficiency\", \"nic.latency_us\", \"nic.efficiency\" or "
	               "\"nccl.ALGO.PROTO.HW_us\" (ALGO tree or ring, PROTO ll, ll128 or simple, "
	               "HW nvlink, pci or net), got \"device.matmul_efficiency\"");
	forget_diags();
}

/* --figures through the CLI: usage errors, and the reconstructed two-server
 * H100 table fitted per protocol (its three figures in the JSON, the 8 GiB
 * size on the tree with Simple). */
Test(calibrate, cli_figures, .timeout = 60)
{
	static const char *const usage[] = {
		"calibrate calibration/nccl-h100-2n-allreduce.txt --collective all-reduce --ranks 16 "
		"--figures nic.efficiency",
		"calibrate calibration/nccl-h100-2n-allreduce.txt --collective all-reduce --ranks 16 "
		"--topology validation/dgx-h100-200g-x2.json --tier nic --figures nic.efficiency",
		"calibrate calibration/nccl-h100-2n-allreduce.txt --collective all-reduce --ranks 16 "
		"--topology validation/dgx-h100-200g-x2.json --figures nic.efficiency,,nic.latency_us",
		/* a training fit's figures are train.* alone */
		"calibrate --runs validation/megatron-dev.json --figures nccl.tree.simple.net_us",
	};
	for (size_t i = 0; i < sizeof usage / sizeof *usage; i++) {
		struct cli_run r = fixture_shardlab(usage[i], true);
		cr_expect_eq(r.status, 2, "%s: %d\n%s", usage[i], r.status, r.out);
		free(r.out);
	}
	struct cli_run r = fixture_shardlab(
	        "calibrate calibration/nccl-h100-2n-allreduce.txt --collective all-reduce --ranks 16 "
	        "--topology validation/dgx-h100-200g-x2.json --json "
	        "--figures nic.efficiency,nccl.tree.simple.net_us,nccl.ring.simple.net_us", false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cJSON *j = cJSON_Parse(r.out);
	free(r.out);
	cr_assert_not_null(j);
	cJSON *figs = cJSON_GetObjectItemCaseSensitive(j, "figures");
	cr_assert_eq(cJSON_GetArraySize(figs), 3);
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(figs, "nccl.tree.simple.net_us"));
	cr_assert_not_null(cJSON_GetObjectItemCaseSensitive(figs, "nccl.ring.simple.net_us"));
	cJSON *pts = cJSON_GetObjectItemCaseSensitive(j, "points");
	cr_assert_eq(cJSON_GetArraySize(pts), 6);
	cJSON *last = cJSON_GetArrayItem(pts, 5);
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(last, "algorithm")->valuestring, "tree");
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(last, "protocol")->valuestring, "Simple");
	cJSON_Delete(j);
}

/* train.gemm_efficiency is the GEMM rate under training load: the clocks
 * under a full board's power and the SMs the collectives take slow FP8
 * GEMMs as they slow bf16 ones, so the figure scales both rates
 * (topologies/dgx-h100.json: matmul_efficiency 0.8321, its own measured
 * fp8_matmul_efficiency 0.7676). A compute-bound 8192^3 GEMM: its time
 * less the kernel overhead grows by 1 / 0.8 in both precisions, and a
 * second figure replaces the first rather than compounding it. */
Test(calibrate, the_gemm_figure_scales_fp8_gemms_too)
{
	struct topology *topo = topo_load(A, "topologies/dgx-h100.json", &D);
	cr_assert_not_null(topo);
	cr_assert_float_eq(topo->device.matmul_efficiency, 0.8321, 1e-12);
	cr_assert_float_eq(topo->device.fp8_matmul_efficiency, 0.7676, 1e-12);
	const double n = 8192;
	struct cost_work w = {2 * n * n * n, 3 * n * n * 2, n, n, n};
	struct topology t = *topo;
	double o = t.device.kernel_overhead_s;
	double bf0 = cost_compute_s(&t.device, DT_BF16, &w, NULL) - o;
	double f80 = cost_fp8_gemm_s(&t.device, &w, NULL) - o;
	cost_cal_set(&t, CAL_TRAIN_GEMM_EFFICIENCY, NULL, 0.8);
	cr_assert_float_eq(t.device.matmul_efficiency, 0.8321 * 0.8, 1e-12);
	cr_assert_float_eq(t.device.fp8_matmul_efficiency, 0.7676 * 0.8, 1e-12);
	cr_assert_float_eq(cost_compute_s(&t.device, DT_BF16, &w, NULL) - o, bf0 / 0.8, 1e-9 * bf0);
	cr_assert_float_eq(cost_fp8_gemm_s(&t.device, &w, NULL) - o, f80 / 0.8, 1e-9 * f80);
	cost_cal_set(&t, CAL_TRAIN_GEMM_EFFICIENCY, NULL, 0.9);
	cr_assert_float_eq(t.device.fp8_matmul_efficiency, 0.7676 * 0.9, 1e-12);
	cr_assert_float_eq(cost_fp8_gemm_s(&t.device, &w, NULL) - o, f80 / 0.9, 1e-9 * f80);
}

/* A training ratio's physical cap: the GEMM figure at most 1 / the
 * device's best GEMM efficiency (the DGX H100's bf16 0.8321 against its
 * FP8 0.7676: 1 / 0.8321 = 1.202), the NIC figure at most 1 / the NICs'
 * efficiency (0.94 of NDR's 400 Gb/s: 1.064), the per-op time uncapped. */
Test(calibrate, a_training_ratio_is_capped_by_the_device)
{
	struct topology *t = topo_load(A, "topologies/dgx-h100.json", &D);
	cr_assert_not_null(t);
	cr_expect_float_eq(cost_cal_train_cap(t, CAL_TRAIN_GEMM_EFFICIENCY), 1 / 0.8321, 1e-12);
	cr_expect_float_eq(cost_cal_train_cap(t, CAL_TRAIN_NIC_EFFICIENCY), 1 / 0.94, 1e-12);
	cr_expect(isinf(cost_cal_train_cap(t, CAL_TRAIN_OP_OVERHEAD_US)));
	/* once a GEMM ratio is applied, the cap is still of the device's own rate */
	cost_cal_set(t, CAL_TRAIN_GEMM_EFFICIENCY, NULL, 0.9);
	cr_expect_float_eq(cost_cal_train_cap(t, CAL_TRAIN_GEMM_EFFICIENCY), 1 / 0.8321, 1e-12);
}

/* The shipped H200 file's training fit was carried from the H100's
 * ("transferred_from"), and is written back as read. */
Test(calibrate, a_transferred_fit_says_where_it_came_from)
{
	struct calibration *c = cost_calibration_load(A, "calibration/h200-sxm.json", &D);
	cr_assert_not_null(c);
	cr_assert_str_eq(c->device, "NVIDIA H200 SXM");
	const struct cal_fit *tf = cost_calibration_training_fit(c);
	cr_assert_not_null(tf);
	cr_expect_str_eq(tf->from_calibration, "h100-sxm");
	cr_expect_str_eq(tf->from_device, "NVIDIA H100 SXM");
	cr_expect_null(c->fits[0].from_calibration, "its kernel fit is the H200's own");
	cJSON *j = cost_calibration_json(c);
	const cJSON *fits = cJSON_GetObjectItemCaseSensitive(j, "fits");
	char *text = cJSON_PrintUnformatted(
		cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fits, 1), "transferred_from"));
	cr_expect_str_eq(text, "{\"calibration\":\"h100-sxm\",\"device\":\"NVIDIA H100 SXM\"}");
	free(text);
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(fits, 0),
	                                                "transferred_from"));
	cJSON_Delete(j);
}

/* ------------------------------------------------- the fitted runs */

/* interval_cal's file with its training fit's "runs": 8 to 16 devices of
 * bf16 Megatron runs at TP 1-8, ZeRO 0 or 1, no recomputation. */
static const char runs_cal[] =
	"{\"format\": \"shardlab-calibration\", \"version\": 1, \"name\": \"iv\",\n"
	" \"figures\": [{\"name\": \"train.gemm_efficiency\", \"units\": \"ratio\",\n"
	"   \"bounds\": [0.5, 1.5], \"value\": 0.9, \"std_error\": 0, \"fitted_on\": \"made up\",\n"
	"   \"fit\": \"training\"}],\n"
	" \"fits\": [{\"name\": \"training\", \"kind\": \"%s\", \"fitted_on\": \"made up\",\n"
	"   \"points\": 10, \"figures\": [\"train.gemm_efficiency\"], \"covariance\": [[0]],\n"
	"   \"cv\": {\"method\": \"leave-one-out\", \"folds\": 10, \"mape_pct\": 4, \"rms_pct\": 5,\n"
	"     \"log_rms\": 0.04},\n"
	"   \"runs\": {\"devices\": [%s], \"tensor_parallel\": [1, 8], \"pipeline_stages\": [1, 1],\n"
	"     \"context_parallel\": [1, 1], \"expert_parallel\": [1, 1], \"sequence\": [0, 0],\n"
	"     \"zero_stage\": [1, 0],\n"
	"     \"recompute\": [\"none\"], \"compute\": [\"bf16\"], \"framework\": [\"megatron\"]}}]}\n";

/* One of the diagnostics reads `want`; then none is left. */
static void expect_diag(const char *want)
{
	bool found = false;
	for (size_t i = 0; i < D.count && !found; i++) {
		char *s = diag_format(&D.items[i]);
		found = !strcmp(s, want);
		free(s);
	}
	char *first = D.count ? diag_format(&D.items[0]) : NULL;
	cr_expect(found, "no \"%s\" (first: %s)", want, first ? first : "none");
	free(first);
	forget_diags();
}

static struct calibration *runs_calibration(const char *kind, const char *devices)
{
	char text[2048];
	snprintf(text, sizeof text, runs_cal, kind, devices);
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, "runs.json", text, strlen(text), &D));
	struct calibration *c = cost_calibration_load_doc(A, &doc);
	json_doc_free(&doc);
	return c;
}

/* "runs" is read, written back as it was read (the sets in the order of
 * their values), and checked: a range whose ends cross, a name that is
 * no recompute mode, and runs on a fit that is not a training fit are
 * errors at their line. */
Test(calibrate, fitted_runs_read_written_and_checked)
{
	struct calibration *c = runs_calibration("training", "8, 16");
	cr_assert_not_null(c);
	const struct cal_runs *r = &cost_calibration_training_fit(c)->runs;
	cr_assert(r->have);
	cr_expect_eq(r->lo[CAL_SET_DEVICES], 8);
	cr_expect_eq(r->hi[CAL_SET_DEVICES], 16);
	cr_expect_eq(r->hi[CAL_SET_TP], 8);
	cr_expect_eq(r->seen[CAL_SET_ZERO], 3u);
	cr_expect_eq(r->seen[CAL_SET_RECOMPUTE], 1u << RECOMPUTE_NONE);
	cr_expect_eq(r->seen[CAL_SET_COMPUTE], 1u << 2);  /* bf16 */
	cr_expect_eq(r->seen[CAL_SET_FRAMEWORK], 1u << FRAMEWORK_MEGATRON);
	cJSON *j = cost_calibration_json(c);
	char *text = cJSON_PrintUnformatted(j);
	cr_assert(strstr(text, "\"runs\":{\"devices\":[8,16],\"tensor_parallel\":[1,8],"
	                       "\"pipeline_stages\":[1,1],\"context_parallel\":[1,1],"
	                       "\"expert_parallel\":[1,1],\"sequence\":[0,0],\"zero_stage\":[0,1],"
	                       "\"recompute\":[\"none\"],\"compute\":[\"bf16\"],"
	                       "\"framework\":[\"megatron\"]}"), "%s", text);
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, "again.json", text, strlen(text), &D));
	struct calibration *again = cost_calibration_load_doc(A, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(again);
	cr_expect_eq(memcmp(&cost_calibration_training_fit(again)->runs.seen, r->seen,
	                    sizeof r->seen), 0);
	free(text);
	cJSON_Delete(j);

	cr_expect_null(runs_calibration("training", "64, 8"));
	expect_diag("runs.json:9: fits[0].runs.devices: the range's low end 64 is above its "
	            "high end 8");
	cr_expect_null(runs_calibration("kernels", "8, 16"));
	expect_diag("runs.json:9: fits[0].runs: only a training fit has runs (this one is "
	            "\"kernels\")");
}

/* The settings of a plan outside the runs, in the enum's order, with the
 * plan's value and the fit's: a 16,384-device run of 131,072-token
 * sequences under ZeRO 3 with full recomputation and FP8 GEMMs, against
 * runs of 48-6,144 devices at 4,096 tokens (one an explicit graph, whose
 * sequence is not known), ZeRO 1, none, bf16. */
Test(calibrate, settings_outside_the_fitted_runs)
{
	struct cal_runs r = {0};
	struct training t = {.pipeline_stages = 16, .context_parallel = 1, .zero_stage = 1,
	                     .recompute = RECOMPUTE_NONE, .dtype = DT_BF16,
	                     .precision = PRECISION_MEGATRON_BF16, .framework = FRAMEWORK_MEGATRON};
	struct model_gen g4k = {.seq = 4096}, g128k = {.seq = 131072};
	struct graph at4k = {.gen = &g4k}, at128k = {.gen = &g128k}, explicit = {.gen = NULL};
	struct cal_point pt;
	cost_cal_point_of(&t, &at4k, 48, 1, 1, &pt);
	cost_cal_runs_add(&r, &pt);
	t.pipeline_stages = 1;
	cost_cal_point_of(&t, &explicit, 6144, 8, 1, &pt);
	cost_cal_runs_add(&r, &pt);
	cr_expect_eq(r.lo[CAL_SET_SEQ], 4096, "a sequence not known widens nothing");
	cr_expect_eq(r.hi[CAL_SET_SEQ], 4096);
	cr_expect_eq(r.lo[CAL_SET_PP], 1);
	cr_expect_eq(r.hi[CAL_SET_PP], 16);
	struct cal_outside out[CAL_SET_COUNT];
	cr_expect_eq(cost_cal_outside(&r, &pt, out), 0, "a run of the fit is inside");
	t = (struct training){.pipeline_stages = 16, .context_parallel = 2, .zero_stage = 3,
	                      .recompute = RECOMPUTE_FULL, .dtype = DT_BF16,
	                      .precision = PRECISION_FP8_HYBRID, .framework = FRAMEWORK_MEGATRON};
	cost_cal_point_of(&t, &at128k, 16384, 8, 1, &pt);
	int n = cost_cal_outside(&r, &pt, out);
	cr_assert_eq(n, 6);
	char buf[512];
	cr_expect_str_eq(cost_cal_outside_text(buf, sizeof buf, out, n),
	                 "16384 devices (fitted: 48-6144), CP 2 (fitted: 1), sequence 131072 "
	                 "(fitted: 4096), ZeRO 3 (fitted: 1), recompute full (fitted: none), fp8 "
	                 "compute (fitted: bf16)");
	cr_expect_eq(out[3].setting, CAL_SET_ZERO);
	cr_expect_str_eq(out[3].value, "3");
	cr_expect_str_eq(out[3].fitted, "1");
	cost_cal_point_of(&t, &explicit, 16384, 8, 1, &pt);
	cr_expect_eq(cost_cal_outside(&r, &pt, out), 5, "a sequence not known is not outside");
	struct cal_runs none = {0};
	cr_expect_eq(cost_cal_outside(&none, &pt, out), 0, "a fit that does not say");
}

/* A calibration with two training fits: the first's GEMM figure (10 rows,
 * residual log spread 0.04) and, fitted over it to MoE runs, the MoE
 * layers' host time (1000 us, 6 rows, residual log spread 0.2, no spread
 * of its own). A dense plan's interval is the first fit's, t exp(± q_9
 * 0.04), and its time is the bare one; a MoE plan's the second's, t exp(±
 * q_5 0.2) (Student's t of 95% with 5 degrees of freedom, 2.015048372669157:
 * R's qt(0.95, 5), tables 2.015), its time 2 x layers x micro-batches x
 * 1 ms longer than without the figure. */
static const char two_fits_cal[] =
	"{\"format\": \"shardlab-calibration\", \"version\": 1, \"name\": \"two\",\n"
	" \"figures\": [{\"name\": \"train.gemm_efficiency\", \"units\": \"ratio\",\n"
	"   \"bounds\": [0.5, 1.5], \"value\": 0.9, \"std_error\": 0, \"fitted_on\": \"made up\",\n"
	"   \"fit\": \"training\"},\n"
	"  {\"name\": \"train.moe_overhead_us\", \"units\": \"us\", \"bounds\": [0, 5000],\n"
	"   \"value\": 1000, \"std_error\": 0, \"fitted_on\": \"made up too\",\n"
	"   \"fit\": \"training-moe\"}],\n"
	" \"fits\": [{\"name\": \"training\", \"kind\": \"training\", \"fitted_on\": \"made up\",\n"
	"   \"points\": 10, \"figures\": [\"train.gemm_efficiency\"], \"covariance\": [[0]],\n"
	"   \"cv\": {\"method\": \"leave-one-out\", \"folds\": 10, \"mape_pct\": 4, \"rms_pct\": 5,\n"
	"          \"log_rms\": 0.04}},\n"
	"  {\"name\": \"training-moe\", \"kind\": \"training\", \"fitted_on\": \"made up too\",\n"
	"   \"points\": 6, \"figures\": [\"train.moe_overhead_us\"], \"covariance\": [[0]],\n"
	"   \"cv\": {\"method\": \"leave-one-out\", \"folds\": 6, \"mape_pct\": 15, \"rms_pct\": 20,\n"
	"          \"log_rms\": 0.2}}]}\n";
#define T95_5 2.015048372669157

Test(calibrate, a_moe_plan_takes_the_moe_fit)
{
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, "two.json", two_fits_cal, strlen(two_fits_cal), &D));
	struct calibration *c = cost_calibration_load_doc(A, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(c);
	cr_expect_str_eq(cost_calibration_training_fit(c)->name, "training");
	cr_expect_str_eq(cost_calibration_training_fit_for(c, false)->name, "training");
	cr_expect_str_eq(cost_calibration_training_fit_for(c, true)->name, "training-moe");
	/* dense: the first fit's interval */
	const struct plan *p = interval_plan("0", "0", "0.04");
	cr_assert(!cost_graph_has_moe(p->graph));
	struct cal_interval iv;
	cr_assert(cost_calibration_interval(A, c, p, &iv));
	cr_assert(iv.have);
	cr_expect_eq(iv.dof, 9);
	within(iv.rel_sd, 0.04, 1e-12, "dense: the first fit's spread");
	/* MoE: the second's, and the host time in the estimate */
	static const char *const gen =
		"{\"kind\": \"llama\", \"hidden\": 512, \"layers\": 2, \"heads\": 8, \"ffn\": 1024,"
		" \"seq\": 512, \"vocab\": 64, \"experts\": 8, \"top_k\": 2, \"micro_batch\": 8,"
		" \"dtype\": \"bf16\"}";
	double t[2];
	struct plan *q = NULL;
	for (int k = 0; k < 2; k++) {
		struct scenario *s = fixture_generated(A, &D, gen, "dgx-h100", 8,
		                                       "{\"global_batch\": 32, \"tensor_parallel\": 1,"
		                                       " \"expert_parallel\": 8}");
		cr_assert_not_null(s);
		if (k)
			cr_assert(cost_calibration_apply(c, s->topo, &D));
		q = plan_make(A, s, PLANNER_MEGATRON, &(struct plan_options){0}, &D);
		cr_assert_not_null(q);
		struct estimate e;
		cr_assert(plan_estimate(A, q, &e, &D));
		cr_assert_eq(e.steps_per_iteration, 4);
		t[k] = e.iteration_s;
		if (k == 0)  /* the same GEMM rate with and without the host time */
			t[k] = estimate_with_gemm(q, 0.9);
	}
	cr_assert(cost_graph_has_moe(q->graph));
	within(t[1] - t[0], 2 * 2 * 4 * 1e-3, 1e-9, "2 layers x 4 micro-batches x 2 passes x 1 ms");
	cr_assert(cost_calibration_interval(A, c, q, &iv));
	cr_assert(iv.have);
	cr_expect_eq(iv.dof, 5);
	within(iv.quantile, T95_5, 1e-9, "t quantile, 5 degrees of freedom");
	within(iv.rel_sd, 0.2, 1e-12, "MoE: the second fit's spread");
	within(iv.hi_s, t[1] * exp(T95_5 * 0.2), 1e-9, "high end");
}

/* An interval names the plan's settings outside its fit's runs and is
 * the same interval: the megatron plan of the 4-layer GPT (32 fp16
 * devices, TP 8) against runs of 8-16 bf16 devices. */
Test(calibrate, interval_names_the_settings_outside_the_runs)
{
	struct calibration *c = runs_calibration("training", "8, 16");
	cr_assert_not_null(c);
	const struct plan *p = interval_plan("0", "0", "0.04");
	struct cal_interval bare, iv;
	cr_assert(cost_calibration_interval(A, p->scenario->topo->calibration, p, &bare));
	cr_expect(!bare.runs_known);
	cr_expect_eq(bare.n_outside, 0);
	cr_assert(cost_calibration_interval(A, c, p, &iv));
	cr_assert(iv.have && iv.runs_known);
	cr_assert_eq(iv.n_outside, 2);
	char buf[256];
	cr_expect_str_eq(cost_cal_outside_text(buf, sizeof buf, iv.outside, iv.n_outside),
	                 "32 devices (fitted: 8-16), fp16 compute (fitted: bf16)");
	within(iv.lo_s, bare.lo_s, 1e-12, "the same low end");
	within(iv.hi_s, bare.hi_s, 1e-12, "the same high end");
}
