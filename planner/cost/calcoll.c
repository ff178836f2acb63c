/* calcoll.c — collective benchmarks as their tools print them, and the
 * latency and bandwidth of a topology's tier (or NICs) fitted to them
 * (docs/validation.md, "Calibrating collectives").
 *
 * Readers: nccl-tests' table (all_reduce_perf, all_gather_perf,
 * reduce_scatter_perf, alltoall_perf...: the column header
 * "# size count type redop root time algbw busbw #wrong time algbw busbw
 * #wrong", out of place then in place, times in microseconds; older
 * versions have no root column and say "error" for "#wrong"; mpirun's
 * "[1,0]<stdout>:" tags are dropped) and HCCL's hccl_test
 * ("data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): |
 * check_result:", data_size per NPU). Banner and log lines are skipped;
 * a row that starts with a number and is not a row is a diagnostic.
 *
 * The fit: the time of each size as the cost model prices it
 * (cost_collective_algo_s on a copy of the topology whose target tier
 * or NICs take the figures, the algorithm and protocol chosen size by
 * size as the library would), or without a topology nccl-tests' alpha-beta
 * formula k_alpha alpha + k_beta S / B. Two figures: the latency (us, as
 * it is) and the efficiency or bus bandwidth (through its logarithm, so
 * it stays positive); or with a topology the figures the options name
 * (tier and NIC latencies and efficiencies, NCCL's hop latencies by
 * algorithm and protocol), at most the sizes - 1; by GSL's trust-region
 * Levenberg-Marquardt on the
 * relative residuals (model - t) / t, started from the weighted linear
 * alpha-beta fit (gsl_fit_wlinear, weights 1/t^2) and from the topology's
 * own figures, the better kept. Standard errors from the covariance at the
 * solution scaled by chi^2 / (n - k), k figures. A figure whose standard error
 * exceeds half its value, or that lands outside its range, is not
 * identifiable from the table. Out of sample: each size left out (k-fold,
 * fold i mod 10, above 20 sizes) and predicted by the fit of the others.
 *
 * Units: bytes, seconds; latencies printed in microseconds. Not a hot path.
 */
#include <ctype.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "cost-int.h"

const char *const bench_tool_names[BENCH_TOOL_COUNT] = {"nccl-tests", "hccl-test"};
_Static_assert(BENCH_TOOL_COUNT == 2, "bench_tool_names out of step");

#define BENCH_MAX_TOKENS 32
#define BENCH_MAX_LINE 4096
#define HCCL_HEADER "data_size(Bytes):"
#define CV_LOO_MAX 20          /* leave-one-out up to this many sizes, else k-fold */
#define CV_FOLDS 10

/* ------------------------------------------------------------- reading */

/* The next line of text into buf (NUL-ended, \r dropped, cut at the
 * buffer's size); false at the end. */
static bool next_line(const char *text, size_t len, size_t *at, char *buf, size_t size)
{
	if (*at >= len)
		return false;
	size_t n = 0;
	while (*at < len && text[*at] != '\n') {
		if (n + 1 < size && text[*at] != '\r')
			buf[n++] = text[*at];
		(*at)++;
	}
	(*at)++;
	buf[n] = '\0';
	return true;
}

/* mpirun --tag-output's "[1,0]<stdout>:" dropped. */
static char *untagged(char *s)
{
	char *tag = s[0] == '[' ? strstr(s, "]<stdout>:") : NULL;
	return tag && tag - s < 40 ? tag + 10 : s;
}

static int tokens(char *s, char **tok, int max, const char *sep)
{
	int n = 0;
	for (char *save = NULL, *t = strtok_r(s, sep, &save); t && n < max;
	     t = strtok_r(NULL, sep, &save))
		tok[n++] = t;
	return n;
}

static bool starts_with_digit(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return isdigit((unsigned char)*s);
}

/* A number as both tools print one: decimal digits with an optional sign,
 * point and exponent, blanks around. strtod alone would also read hex
 * ("0x320" as 800), "inf" and "nan", which neither tool prints: a cell like
 * that is not a measurement. */
static bool number(const char *s, double *out)
{
	static const char digits[] = "0123456789";
	const char *p = s + strspn(s, " \t");
	if (*p == '+' || *p == '-')
		p++;
	size_t mantissa = strspn(p, digits);
	p += mantissa;
	if (*p == '.') {
		size_t fraction = strspn(++p, digits);
		mantissa += fraction;
		p += fraction;
	}
	if (!mantissa)
		return false;
	if (*p == 'e' || *p == 'E') {
		p += p[1] == '+' || p[1] == '-' ? 2 : 1;
		size_t exponent = strspn(p, digits);
		if (!exponent)
			return false;
		p += exponent;
	}
	if (p[strspn(p, " \t")])
		return false;
	/* 1e999 overflows to inf */
	double v = strtod(s, NULL);
	if (!isfinite(v))
		return false;
	*out = v;
	return true;
}

int cost_bench_detect(const char *text, size_t len)
{
	size_t at = 0;
	char line[BENCH_MAX_LINE];
	while (next_line(text, len, &at, line, sizeof line)) {
		if (strstr(line, HCCL_HEADER))
			return BENCH_HCCL_TEST;
		const char *s = untagged(line);
		if (s[strspn(s, " \t")] == '#' && strstr(s, "algbw") && strstr(s, "busbw") &&
		    strstr(s, "size"))
			return BENCH_NCCL_TESTS;
	}
	return -1;
}

struct breader {
	struct arena *a;
	const char *file;
	struct diag_list *diags;
	int n, cap;
	struct bench_point *pts;
};

static bool add_point(struct breader *r, int line, double bytes, double seconds)
{
	if (r->n == r->cap) {
		int cap = r->cap ? 2 * r->cap : 64;
		struct bench_point *p = arena_calloc(r->a, (size_t)cap, sizeof *p);
		if (!p)
			return false;
		if (r->n)
			memcpy(p, r->pts, (size_t)r->n * sizeof *p);
		r->pts = p;
		r->cap = cap;
	}
	r->pts[r->n++] = (struct bench_point){line, bytes, seconds};
	return true;
}

/* One row of nccl-tests' table: false after a diagnostic. count_wrong:
 * the column after busbw is "#wrong", a count of wrong values (nccl-tests
 * 2.10 and later); before, "error" printed the largest deviation from the
 * expected result (2e-07 in a float sum), which says nothing of a row
 * alone: the table's "Out of bounds values" line says whether any failed. */
static bool nccl_row(struct breader *r, int line, char **tok, int n, int time_col,
                     bool count_wrong)
{
	static const char *const prefix[] = {"size", "count", "type", "redop", "root"};
	if (n < time_col + 4) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, NULL,
		         "expected at least %d columns (%s%s time algbw busbw #wrong), got %d",
		         time_col + 4, "size count type redop", time_col == 5 ? " root" : "", n);
		return false;
	}
	double bytes, us, wrong;
	if (!number(tok[0], &bytes) || bytes < 0 || bytes > 1e15 || bytes != floor(bytes)) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, prefix[0],
		         "expected a count of bytes, got '%s'", tok[0]);
		return false;
	}
	if (!number(tok[time_col], &us) || !(us > 0)) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, "time",
		         "expected a positive time in microseconds, got '%s'", tok[time_col]);
		return false;
	}
	/* N/A: the run's check was off (-c 0). Anything else that is not a
	 * count (0x3, which strtod would read as 3) may hide wrong values. */
	const char *w = tok[time_col + 3];
	if (count_wrong && strcmp(w, "N/A")) {
		if (!number(w, &wrong)) {
			diag_add(r->diags, DIAG_ERROR, r->file, line, "#wrong",
			         "expected a count of wrong values (or N/A, the check off), got '%s'",
			         w);
			return false;
		}
		if (wrong > 0) {
			diag_add(r->diags, DIAG_ERROR, r->file, line, "#wrong",
			         "the run found %s wrong values at this size: its time is not a "
			         "measurement to fit", w);
			return false;
		}
	}
	return add_point(r, line, bytes, us * 1e-6) || (diag_add(r->diags, DIAG_ERROR, r->file,
	                                                         line, NULL, "out of memory"), false);
}

/* One row of hccl_test's table. */
static bool hccl_row(struct breader *r, int line, char **tok, int n)
{
	double bytes, us, gbps;
	if (n < 4) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, NULL,
		         "expected the columns data_size | aveg_time | alg_bandwidth | "
		         "check_result, got %d", n);
		return false;
	}
	for (int i = 0; i < n; i++) {
		char *s = tok[i];
		while (*s == ' ' || *s == '\t')
			s++;
		size_t l = strlen(s);
		while (l && (s[l - 1] == ' ' || s[l - 1] == '\t'))
			s[--l] = '\0';
		tok[i] = s;
	}
	if (!number(tok[0], &bytes) || bytes < 0 || bytes > 1e15 || bytes != floor(bytes)) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, "data_size",
		         "expected a count of bytes, got '%s'", tok[0]);
		return false;
	}
	if (!number(tok[1], &us) || !(us > 0)) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, "aveg_time",
		         "expected a positive time in microseconds, got '%s'", tok[1]);
		return false;
	}
	/* The fit does not use it, but the tool prints size / time here: a
	 * row whose bandwidth is no such figure was not printed as it
	 * stands, and its time is not to be trusted either. */
	if (!number(tok[2], &gbps) || gbps < 0) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, "alg_bandwidth",
		         "expected a bandwidth of 0 GB/s or more, got '%s'", tok[2]);
		return false;
	}
	/* The tool prints success, failed, or NULL when its check is off
	 * (-c 0); any other word is a table edited or cut, whose rows say
	 * nothing certain. */
	if (!strcasecmp(tok[3], "failed")) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, "check_result",
		         "the run's result check failed at this size: its time is not a "
		         "measurement to fit");
		return false;
	}
	if (strcasecmp(tok[3], "success") && strcasecmp(tok[3], "NULL")) {
		diag_add(r->diags, DIAG_ERROR, r->file, line, "check_result",
		         "expected success, failed or NULL (the check off), got '%s'", tok[3]);
		return false;
	}
	return add_point(r, line, bytes, us * 1e-6) || (diag_add(r->diags, DIAG_ERROR, r->file,
	                                                         line, NULL, "out of memory"), false);
}

static int by_bytes(const void *x, const void *y)
{
	const struct bench_point *p = x, *q = y;
	return p->bytes < q->bytes ? -1 : p->bytes > q->bytes ? 1 : p->line - q->line;
}

struct bench_table *cost_bench_parse(struct arena *a, const char *file, const char *text,
                                     size_t len, struct diag_list *diags)
{
	int tool = cost_bench_detect(text, len);
	if (tool < 0) {
		diag_add(diags, DIAG_ERROR, file, 0, NULL,
		         "neither nccl-tests' table (a header \"# size count type redop root time "
		         "algbw busbw ...\") nor hccl_test's (\"" HCCL_HEADER " | aveg_time(us): | "
		         "...\")");
		return NULL;
	}
	struct breader r = {.a = a, .file = file, .diags = diags};
	size_t at = 0, before = diags->errors;
	char buf[BENCH_MAX_LINE];
	char *tok[BENCH_MAX_TOKENS];
	int line = 0, ranks = 0, ranks_line = 0, time_col = -1, empty = 0, empty_line = 0;
	bool header = false, count_wrong = true;
	while (next_line(text, len, &at, buf, sizeof buf)) {
		line++;
		char *s = untagged(buf);
		s += strspn(s, " \t");
		if (tool == BENCH_HCCL_TEST) {
			if (strstr(s, HCCL_HEADER))
				header = true;
			else if (header && starts_with_digit(s))
				hccl_row(&r, line, tok, tokens(s, tok, BENCH_MAX_TOKENS, "|"));
			continue;
		}
		if (*s == '#') {
			int n = tokens(s + 1, tok, BENCH_MAX_TOKENS, " \t");
			if (!header && n > 0 && !strcmp(tok[0], "Rank")) {
				ranks++;
				ranks_line = line;
			}
			for (int i = 0; !header && i + 2 < n; i++)
				if (!strcmp(tok[0], "size") && !strcmp(tok[i], "time") &&
				    !strcmp(tok[i + 1], "algbw") && !strcmp(tok[i + 2], "busbw")) {
					header = true;
					time_col = i;
					count_wrong = i + 3 >= n || strcmp(tok[i + 3], "error");
				}
			/* "# Out of bounds values : 3 FAILED": with "error" columns
			 * the one word that a size's values were wrong */
			double bad;
			if (header && !count_wrong && n >= 6 && !strcmp(tok[0], "Out") &&
			    !strcmp(tok[2], "bounds") && number(tok[5], &bad) && bad > 0)
				diag_add(diags, DIAG_ERROR, file, line, "Out of bounds values",
				         "the run found values out of bounds at %s sizes, and its "
				         "\"error\" column does not say which: its times are not "
				         "measurements to fit", tok[5]);
			continue;
		}
		/* NCCL's own log lines ("host:pid:tid [dev] NCCL INFO ...") may
		 * start with a digit where the host's name does */
		if (!header || !starts_with_digit(s) || strstr(s, " NCCL "))
			continue;
		int n = tokens(s, tok, BENCH_MAX_TOKENS, " \t");
		double bytes;
		if (n > 0 && number(tok[0], &bytes) && bytes == 0) {
			/* nothing moves: NCCL returns at once, the time is the
			 * harness's own */
			if (!empty++)
				empty_line = line;
			continue;
		}
		nccl_row(&r, line, tok, n, time_col, count_wrong);
	}
	if (empty)
		diag_add(diags, DIAG_WARNING, file, empty_line, "size",
		         "%d row%s of 0 bytes left out: nothing moves, the time is the test's own",
		         empty, empty == 1 ? "" : "s");
	if (diags->errors > before)
		return NULL;
	if (r.n == 0) {
		diag_add(diags, DIAG_ERROR, file, line, NULL, "%s's table has no rows",
		         bench_tool_names[tool]);
		return NULL;
	}
	qsort(r.pts, (size_t)r.n, sizeof *r.pts, by_bytes);
	int n = 0;
	for (int i = 0; i < r.n; i++) {
		if (n > 0 && r.pts[n - 1].bytes == r.pts[i].bytes) {
			if (r.pts[i].seconds > r.pts[n - 1].seconds)
				r.pts[n - 1] = r.pts[i];
			continue;
		}
		r.pts[n++] = r.pts[i];
	}
	struct bench_table *t = arena_calloc(a, 1, sizeof *t);
	if (!t) {
		diag_add(diags, DIAG_ERROR, file, 0, NULL, "out of memory");
		return NULL;
	}
	*t = (struct bench_table){.file = arena_strdup(a, file), .tool = (enum bench_tool)tool,
	                          .ranks = ranks, .ranks_line = ranks_line, .n_points = n,
	                          .points = r.pts};
	return t;
}

struct bench_table *cost_bench_load(struct arena *a, const char *path, struct diag_list *diags)
{
	size_t len = 0;
	char *text = cost_read_table(path, &len, diags);
	if (!text)
		return NULL;
	struct bench_table *t = cost_bench_parse(a, path, text, len, diags);
	free(text);
	return t;
}

/* ------------------------------------------------------------- fitting */

void cost_bench_coefficients(enum step_kind kind, int n, double *k_alpha, double *k_beta)
{
	double m = n > 1 ? n - 1 : 0;
	*k_alpha = kind == STEP_ALLREDUCE ? 2 * m : m;
	*k_beta = (kind == STEP_ALLREDUCE ? 2 * m : m) / (n > 0 ? n : 1);
}

/* The model: x[k] the k-th figure, a latency in us as it is, an efficiency
 * (or without a topology B in GB/s) through its logarithm. */
struct bfig_ctx {
	enum cal_param param;
	const char *key;             /* cost_cal_set's tier: a tier's name, NCCL's hop */
	int tier;                    /* CAL_TIER_*: the tier's index */
	double line_bps;             /* an efficiency's line rate */
	bool log;                    /* fitted through its logarithm */
};

struct bctx {
	const struct bench_table *t;
	const struct bench_fit_options *o;
	const int64_t *ranks;
	int tier;                    /* the default target tier, -1 for the NICs */
	double k_alpha, k_beta;
	int k;                       /* figures */
	struct bfig_ctx fig[BENCH_MAX_FIGURES];
	const bool *use;             /* the points fitted (NULL: all) */
	int n_use;
	struct topology topo;        /* a copy that takes the figures */
};

static void set_figures(struct bctx *c, const double *x)
{
	for (int k = 0; k < c->k; k++) {
		const struct bfig_ctx *f = &c->fig[k];
		double v = f->log ? exp(x[k]) : x[k];
		struct topo_tier *t = f->tier >= 0 ? &c->topo.tiers[f->tier] : NULL;
		switch (f->param) {
		case CAL_TIER_LATENCY_US:
			t->latency_s = v * 1e-6;
			break;
		case CAL_TIER_EFFICIENCY:
			t->efficiency = v;
			t->bandwidth_bps = f->line_bps * v;
			break;
		case CAL_NIC_LATENCY_US:
			c->topo.nic.latency_s = v * 1e-6;
			break;
		case CAL_NIC_EFFICIENCY:
			c->topo.nic.efficiency = v;
			c->topo.nic.bandwidth_bps = f->line_bps * v;
			break;
		default:
			cost_cal_set(&c->topo, f->param, f->key, v);
			break;
		}
	}
}

static double model_at(struct bctx *c, const double *x, double bytes, enum collective_algo *algo,
                       const char **protocol)
{
	if (!c->o->topo)
		return c->k_alpha * x[0] * 1e-6 + c->k_beta * bytes / (exp(x[1]) * 1e9);
	set_figures(c, x);
	int n = c->o->ranks;
	enum collective_algo al =
		cost_choose_algo(&c->topo, c->o->collective, c->ranks, n, bytes, c->o->algo);
	if (algo)
		*algo = al;
	if (protocol)
		*protocol = cost_collective_protocol(&c->topo, c->o->collective, al, c->ranks, n, bytes);
	return cost_collective_algo_s(&c->topo, c->o->collective, al, c->ranks, n, bytes);
}

static int residuals(const gsl_vector *xv, void *data, gsl_vector *f)
{
	struct bctx *c = data;
	double x[BENCH_MAX_FIGURES];
	for (int k = 0; k < c->k; k++)
		x[k] = gsl_vector_get(xv, (size_t)k);
	size_t j = 0;
	for (int i = 0; i < c->t->n_points; i++) {
		if (c->use && !c->use[i])
			continue;
		const struct bench_point *p = &c->t->points[i];
		double m = model_at(c, x, p->bytes, NULL, NULL);
		gsl_vector_set(f, j++, (m - p->seconds) / p->seconds);
	}
	return GSL_SUCCESS;
}

/* Levenberg-Marquardt from x on the points in use (cost_lm_solve). */
static bool run_lm(struct bctx *c, gsl_vector *x, gsl_matrix *covar, double *cost,
                   int *iterations)
{
	gsl_multifit_nlinear_fdf fdf = {residuals, NULL, NULL, (size_t)c->n_use, (size_t)c->k, c,
	                                0, 0, 0};
	return cost_lm_solve(&fdf, x, covar, cost, iterations);
}

/* The weighted linear alpha-beta fit t = a + b S (weights 1/t^2) of the
 * points in use, as a start: a tier's or the NICs' latency the step
 * latency a / k_alpha in us, an efficiency (or B) from B = k_beta / b (in
 * GB/s), over its line rate; the other figures at x's. False when no
 * figure takes it. */
static bool linear_start(const struct bctx *c, double *x)
{
	bool any = !c->o->topo;
	for (int k = 0; k < c->k; k++)
		any = any || c->fig[k].param != CAL_NCCL_HOP_US;
	if (!any)
		return false;
	int n = 0;
	double *s = malloc(sizeof(double) * (size_t)c->t->n_points * 3);
	if (!s)
		return false;
	double *y = s + c->t->n_points, *w = y + c->t->n_points;
	for (int i = 0; i < c->t->n_points; i++)
		if (!c->use || c->use[i]) {
			s[n] = c->t->points[i].bytes;
			y[n] = c->t->points[i].seconds;
			w[n] = 1 / (y[n] * y[n]);
			n++;
		}
	double a, b, c00, c01, c11, chi2;
	bool ok = gsl_fit_wlinear(s, 1, w, 1, y, 1, (size_t)n, &a, &b, &c00, &c01, &c11, &chi2) ==
	          GSL_SUCCESS && b > 0;
	free(s);
	if (!ok)
		return false;
	double bw = c->k_beta / b;
	double lat = c->k_alpha > 0 ? (a > 0 ? a : 0) / c->k_alpha * 1e6 : 0;
	if (!c->o->topo) {
		x[0] = lat;
		x[1] = log(bw / 1e9);
		return true;
	}
	for (int k = 0; k < c->k; k++) {
		if (c->fig[k].param == CAL_NCCL_HOP_US)
			continue;
		x[k] = c->fig[k].log ? log(fmin(bw / c->fig[k].line_bps, 1)) : lat;
	}
	return true;
}

/* The best of the starts: the linear fit's, the topology's own figures. */
static bool fit_points(struct bctx *c, double *x, gsl_matrix *covar, double *cost,
                       int *iterations)
{
	double starts[2][BENCH_MAX_FIGURES], own[BENCH_MAX_FIGURES] = {0};
	int n_starts = 0;
	for (int k = 0; k < c->k; k++) {
		double v = c->o->topo ? cost_cal_get(c->o->topo, c->fig[k].param, c->fig[k].key) : 0;
		own[k] = c->fig[k].log ? log(v) : v;
	}
	memcpy(starts[0], own, sizeof own);
	if (linear_start(c, starts[n_starts]))
		n_starts++;
	if (c->o->topo)
		memcpy(starts[n_starts++], own, sizeof own);
	bool any = false;
	size_t k = (size_t)c->k;
	gsl_vector *v = gsl_vector_alloc(k);
	gsl_matrix *cv = gsl_matrix_alloc(k, k);
	for (int s = 0; v && cv && s < n_starts; s++) {
		double cst;
		int it = 0;
		for (size_t j = 0; j < k; j++)
			gsl_vector_set(v, j, starts[s][j]);
		if (!run_lm(c, v, covar ? cv : NULL, &cst, &it) || (any && !(cst < *cost)))
			continue;
		any = true;
		*cost = cst;
		for (size_t j = 0; j < k; j++)
			x[j] = gsl_vector_get(v, j);
		if (iterations)
			*iterations = it;
		if (covar)
			gsl_matrix_memcpy(covar, cv);
	}
	gsl_vector_free(v);
	gsl_matrix_free(cv);
	return any;
}

/* The tier (index) or the NICs (-1) the figures go to; false after a
 * diagnostic. */
static bool pick_target(struct arena *a, const struct bench_fit_options *o, const char *file,
                        int *tier, const char **name, struct diag_list *d)
{
	const struct topology *t = o->topo;
	if (o->tier && !strcmp(o->tier, "nic")) {
		*tier = -1;
	} else if (o->tier) {
		*tier = -1;
		for (int i = 0; i < t->n_tiers; i++)
			if (!strcmp(t->tiers[i].name, o->tier))
				*tier = i;
		if (*tier < 0) {
			diag_add(d, DIAG_ERROR, file, 0, NULL, "the topology %s has no tier \"%s\"",
			         t->name, o->tier);
			return false;
		}
	} else if (o->ranks > t->devices_per_server) {
		*tier = -1;
	} else {
		*tier = -2;
		for (int i = 0; i < t->n_tiers && *tier == -2; i++) {
			int g = t->tiers[i].group_of[0];
			bool all = g >= 0;
			for (int r = 1; all && r < o->ranks; r++)
				all = t->tiers[i].group_of[r] == g;
			if (all)
				*tier = i;
		}
		if (*tier == -2) {
			diag_add(d, DIAG_ERROR, file, 0, NULL,
			         "no tier of %s holds ranks 0 to %d together: name the tier (--tier)",
			         t->name, o->ranks - 1);
			return false;
		}
	}
	if (*tier < 0 && (t->nic.per_server <= 0 || t->servers < 2 ||
	                  o->ranks <= t->devices_per_server)) {
		diag_add(d, DIAG_ERROR, file, 0, NULL,
		         "the NICs' figures need ranks on several servers of a cluster topology "
		         "(%d ranks, %d per server of %s)", o->ranks, t->devices_per_server, t->name);
		return false;
	}
	*name = *tier >= 0 ? arena_printf(a, "tiers.%s", t->tiers[*tier].name) : "nic";
	return *name != NULL;
}

/* The figures --figures names (o->figures) resolved in the topology:
 * each one a collective fit can set, in it, named once; false after a
 * diagnostic. */
static bool pick_figures(struct arena *a, struct bctx *c, const char *file, struct diag_list *d)
{
	const struct bench_fit_options *o = c->o;
	const struct topology *t = o->topo;
	int n = c->t->n_points;
	if (o->n_figures > BENCH_MAX_FIGURES || o->n_figures > n - 1) {
		diag_add(d, DIAG_ERROR, file, 0, NULL,
		         "%d figures from %d size%s: at most %d (one fewer than the sizes, for their "
		         "errors, and at most %d)", o->n_figures, n, n == 1 ? "" : "s",
		         n - 1 < BENCH_MAX_FIGURES ? n - 1 : BENCH_MAX_FIGURES, BENCH_MAX_FIGURES);
		return false;
	}
	bool ok = true;
	c->k = o->n_figures;
	for (int k = 0; k < c->k; k++) {
		const char *name = o->figures[k], *key = NULL;
		struct bfig_ctx *f = &c->fig[k];
		int p = cost_cal_param_parse(a, name, &key);
		*f = (struct bfig_ctx){.param = (enum cal_param)p, .key = key, .tier = -1};
		for (int j = 0; j < k; j++)
			if (!strcmp(o->figures[j], name)) {
				diag_add(d, DIAG_ERROR, file, 0, NULL, "the figure %s is named twice", name);
				ok = false;
			}
		if (p != CAL_TIER_LATENCY_US && p != CAL_TIER_EFFICIENCY && p != CAL_NIC_LATENCY_US &&
		    p != CAL_NIC_EFFICIENCY && p != CAL_NCCL_HOP_US) {
			diag_add(d, DIAG_ERROR, file, 0, NULL,
			         "a collective fit sets \"tiers.TIER.latency_us\", "
			         "\"tiers.TIER.efficiency\", \"nic.latency_us\", \"nic.efficiency\" or "
			         "\"nccl.ALGO.PROTO.HW_us\" (ALGO tree or ring, PROTO ll, ll128 or simple, "
			         "HW nvlink, pci or net), got \"%s\"", name);
			ok = false;
			continue;
		}
		f->log = p == CAL_TIER_EFFICIENCY || p == CAL_NIC_EFFICIENCY;
		if (p == CAL_TIER_LATENCY_US || p == CAL_TIER_EFFICIENCY) {
			for (int i = 0; i < t->n_tiers; i++)
				if (!strcmp(t->tiers[i].name, key))
					f->tier = i;
			if (f->tier < 0) {
				diag_add(d, DIAG_ERROR, file, 0, NULL, "%s: the topology %s has no tier "
				         "\"%s\"", name, t->name, key);
				ok = false;
				continue;
			}
			f->line_bps = t->tiers[f->tier].bandwidth_bps / t->tiers[f->tier].efficiency;
		} else if (p == CAL_NIC_LATENCY_US || p == CAL_NIC_EFFICIENCY) {
			if (t->nic.per_server <= 0) {
				diag_add(d, DIAG_ERROR, file, 0, NULL, "%s: the topology %s has no NICs",
				         name, t->name);
				ok = false;
				continue;
			}
			f->line_bps = t->nic.bandwidth_bps / t->nic.efficiency;
		} else if (t->coll.library != TOPO_COLL_NCCL) {
			diag_add(d, DIAG_ERROR, file, 0, NULL,
			         "%s is a latency of NCCL's; the topology %s's library is \"%s\"", name,
			         t->name, topo_coll_library_names[t->coll.library]);
			ok = false;
		}
	}
	return ok;
}

/* Out of sample: each fold left out and predicted by the fit of the
 * others, from the full fit's solution. */
static void cross_validate(struct arena *a, struct bctx *c, const double *x_full,
                           struct bench_fit *out)
{
	int n = c->t->n_points;
	int folds = n <= CV_LOO_MAX ? n : CV_FOLDS;
	out->cv_method = n <= CV_LOO_MAX ? "leave-one-out" : "k-fold";
	out->cv_folds = folds;
	out->cv_s = arena_calloc(a, (size_t)n, sizeof *out->cv_s);
	bool *use = arena_calloc(a, (size_t)n, sizeof *use);
	out->cv_mape_pct = out->cv_rms_pct = NAN;
	if (!out->cv_s || !use)
		return;
	double sum = 0, sum2 = 0;
	for (int f = 0; f < folds; f++) {
		int kept = 0;
		for (int i = 0; i < n; i++)
			kept += (use[i] = i % folds != f);
		c->use = use;
		c->n_use = kept;
		double x[BENCH_MAX_FIGURES], cost = 0;
		memcpy(x, x_full, sizeof(double) * (size_t)c->k);
		if (kept < c->k || !fit_points(c, x, NULL, &cost, NULL))
			return;
		for (int i = 0; i < n; i++)
			if (!use[i]) {
				out->cv_s[i] = model_at(c, x, c->t->points[i].bytes, NULL, NULL);
				double e = out->cv_s[i] / c->t->points[i].seconds - 1;
				sum += fabs(e);
				sum2 += e * e;
			}
	}
	c->use = NULL;
	c->n_use = n;
	out->cv_mape_pct = 100 * sum / n;
	out->cv_rms_pct = 100 * sqrt(sum2 / n);
}

/* The figures' values, errors, flags and covariance from the solution x
 * and the unscaled covariance (scaled by s2 = chi^2 / (n - k)); the
 * pair's fields of earlier versions from the first two. */
static void report_figures(struct arena *a, const struct bctx *c, const double *x,
                           const gsl_matrix *covar, double s2, struct bench_fit *out)
{
	const struct bench_fit_options *o = c->o;
	double jac[BENCH_MAX_FIGURES];
	out->n_figures = c->k;
	for (int k = 0; k < c->k; k++) {
		const struct bfig_ctx *f = &c->fig[k];
		struct bench_figure *g = &out->figure[k];
		double v = f->log ? exp(x[k]) : x[k];
		/* through its logarithm: d(e^x) = e^x dx */
		jac[k] = f->log ? v : 1;
		g->raw = v;
		g->se = jac[k] * sqrt(gsl_matrix_get(covar, (size_t)k, (size_t)k) * s2);
		g->latency = !f->log;
		g->line_bps = f->log ? f->line_bps : 0;
		if (!o->topo) {
			g->name = k == 0 ? "alpha_us" : "busbw_GBps";
			g->units = k == 0 ? "us" : "GB/s";
		} else if (o->n_figures > 0) {
			g->name = o->figures[k];
		} else {
			g->name = arena_printf(a, "%s.%s", out->target, k == 0 ? "latency_us" : "efficiency");
		}
		if (o->topo)
			g->units = f->log ? "fraction" : "us";
		g->clamped = f->log ? o->topo && v > 1 : v < 0;
		g->value = g->clamped ? (f->log ? 1 : 0) : v;
		g->identifiable = isfinite(g->se) && g->se <= 0.5 * v &&
		                  (f->log ? !g->clamped : v > 0);
	}
	for (int i = 0; i < c->k; i++)
		for (int j = 0; j < c->k; j++)
			out->covariance[i][j] =
			        i == j ? out->figure[i].se * out->figure[i].se
			               : jac[i] * jac[j] * (gsl_matrix_get(covar, (size_t)i, (size_t)j) * s2);
	if (o->n_figures > 0)
		return;
	/* the pair: the latency, then the efficiency (or B, in bytes/s) */
	double u = o->topo ? 1 : 1e9;
	out->latency_us = x[0];
	out->latency_se_us = out->figure[0].se;
	out->cov[0][0] = out->covariance[0][0];
	out->cov[0][1] = out->cov[1][0] = out->covariance[0][1] * u;
	out->cov[1][1] = (u * u) * out->figure[1].se * out->figure[1].se;
	if (o->topo) {
		out->efficiency = out->figure[1].raw;
		out->efficiency_se = out->figure[1].se;
	} else {
		out->busbw_bps = out->figure[1].raw * u;
		out->busbw_se_bps = out->figure[1].se * u;
	}
	out->latency_identifiable = out->figure[0].identifiable;
	out->bandwidth_identifiable = out->figure[1].identifiable;
	out->latency_clamped = out->figure[0].clamped;
	out->efficiency_clamped = out->figure[1].clamped;
}

bool cost_bench_fit(struct arena *a, const struct bench_table *t,
                    const struct bench_fit_options *o, struct bench_fit *out,
                    struct diag_list *diags)
{
	*out = (struct bench_fit){.n_points = t->n_points, .cv_mape_pct = NAN, .cv_rms_pct = NAN};
	int n = t->n_points;
	if (n < 3 || t->points[0].bytes == t->points[n - 1].bytes) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL,
		         "%d size%s: a latency and a bandwidth need at least 3 different sizes (one "
		         "more than the figures, for their errors)", n, n == 1 ? "" : "s");
		return false;
	}
	if (o->ranks < 2 || (o->topo && o->ranks > o->topo->n_devices)) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL,
		         "a collective over %d ranks%s", o->ranks,
		         o->topo ? " (more than the topology has, or fewer than 2)" : " (fewer than 2)");
		return false;
	}
	if (o->n_figures > 0 && !o->topo) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL,
		         "figures of a topology need the topology: without one the fit gives "
		         "alpha_us and busbw_GBps");
		return false;
	}
	gsl_set_error_handler_off();
	struct bctx *c = arena_calloc(a, 1, sizeof *c);
	int64_t *ranks = arena_calloc(a, (size_t)o->ranks, sizeof *ranks);
	out->model_s = arena_calloc(a, (size_t)n, sizeof *out->model_s);
	out->algo = arena_calloc(a, (size_t)n, sizeof *out->algo);
	out->protocol = arena_calloc(a, (size_t)n, sizeof *out->protocol);
	if (!c || !ranks || !out->model_s || !out->algo || !out->protocol) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL, "out of memory");
		return false;
	}
	for (int r = 0; r < o->ranks; r++)
		ranks[r] = r;
	*c = (struct bctx){.t = t, .o = o, .ranks = ranks, .n_use = n, .k = 2};
	c->fig[1].log = true;
	c->fig[0].tier = c->fig[1].tier = -1;
	cost_bench_coefficients(o->collective, o->ranks, &c->k_alpha, &c->k_beta);
	if (o->topo && o->n_figures > 0) {
		c->topo = *o->topo;
		if (!pick_figures(a, c, t->file, diags))
			return false;
		size_t len = 1;
		for (int k = 0; k < c->k; k++)
			len += strlen(o->figures[k]) + 1;
		char *names = arena_alloc(a, len);
		if (!names)
			return false;
		names[0] = '\0';
		for (int k = 0; k < c->k; k++)
			strcat(strcat(names, k ? "," : ""), o->figures[k]);
		out->target = names;
	} else if (o->topo) {
		c->topo = *o->topo;
		if (!pick_target(a, o, t->file, &c->tier, &out->target, diags))
			return false;
		c->fig[0].tier = c->fig[1].tier = c->tier;
		c->fig[0].param = c->tier >= 0 ? CAL_TIER_LATENCY_US : CAL_NIC_LATENCY_US;
		c->fig[1].param = c->tier >= 0 ? CAL_TIER_EFFICIENCY : CAL_NIC_EFFICIENCY;
		c->fig[0].key = c->fig[1].key = c->tier >= 0 ? o->topo->tiers[c->tier].name : NULL;
		double line = c->tier >= 0 ? o->topo->tiers[c->tier].bandwidth_bps /
		                                     o->topo->tiers[c->tier].efficiency
		                           : o->topo->nic.bandwidth_bps / o->topo->nic.efficiency;
		c->fig[0].line_bps = c->fig[1].line_bps = out->line_bps = line;
	}
	gsl_matrix *covar = gsl_matrix_alloc((size_t)c->k, (size_t)c->k);
	double x[BENCH_MAX_FIGURES] = {0}, cost = 0;
	if (!covar || !fit_points(c, x, covar, &cost, &out->iterations)) {
		gsl_matrix_free(covar);
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL,
		         "the least-squares fit failed (GSL): sizes whose times do not grow with "
		         "the size?");
		return false;
	}
	report_figures(a, c, x, covar, cost / (n - c->k), out);
	gsl_matrix_free(covar);
	double sum = 0, sum2 = 0;
	for (int i = 0; i < n; i++) {
		out->model_s[i] = model_at(c, x, t->points[i].bytes, &out->algo[i], &out->protocol[i]);
		double e = out->model_s[i] / t->points[i].seconds - 1;
		sum += fabs(e);
		sum2 += e * e;
	}
	out->mape_pct = 100 * sum / n;
	out->rms_pct = 100 * sqrt(sum2 / n);
	cross_validate(a, c, x, out);
	return true;
}
