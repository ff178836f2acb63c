/* calibrate.c — the compute model's parameters from measured kernel times
 * (docs/cost-models.md, "Calibration").
 *
 * A calibration table is a CSV file of measured kernels: GEMMs (m, n, k,
 * batch, dtype) and memory-bound kernels (bytes moved), each with its time.
 * cost_calib_load reads it with a diagnostic `file:line: column: message`
 * for every bad cell; cost_calib_fit fits the model of cost_kernel_s,
 *   t = overhead + max(flops / (rate · g(m) g(n) g(k)), bytes / bandwidth),
 * g(x) = x / (x + half_dim), by nonlinear least squares on the relative
 * residuals (model - t) / t (GSL's trust-region Levenberg-Marquardt,
 * gsl_multifit_nlinear, Jacobian by finite differences). The GEMM rate and
 * the bandwidth are fitted as efficiencies of a device's peaks when a
 * device is given, else as absolute rates; half_dim, the rate and the
 * bandwidth through their logarithms (they stay positive), the overhead as
 * it is. A parameter the rows cannot determine, or that the caller holds,
 * keeps the device's value. Several starting half-dimensions are tried
 * and the best fit kept, in a fixed order, so the same table always gives
 * the same numbers.
 * Standard errors come from the covariance at the solution scaled by the
 * residual variance (chi^2 / (rows - parameters)).
 *
 * Units: seconds, bytes, FLOP/s, bytes/s; dimensions are element counts.
 * Not a hot path: a table is read and fitted once per run.
 */
#include <ctype.h>
#include <errno.h>
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_fit.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cost-int.h"

const char *const calib_kind_names[CALIB_KIND_COUNT] = {"gemm", "memory"};
_Static_assert(CALIB_KIND_COUNT == 2, "calib_kind_names out of step");

/* ------------------------------------------------------------- the CSV */

enum col {
	COL_KIND, COL_M, COL_N, COL_K, COL_BATCH, COL_DTYPE, COL_BYTES, COL_SECONDS, COL_PASS,
	COL_COUNT
};
static const char *const col_names[COL_COUNT] = {"kind",  "m",     "n",     "k",    "batch",
                                                 "dtype", "bytes", "seconds", "pass"};

#define CALIB_MAX_DIM 1e9     /* a GEMM dimension past any real matrix */
#define CALIB_MAX_FIELDS 64   /* columns a header may have */

struct reader {
	struct arena *a;
	const char *file;
	struct diag_list *diags;
	int col_at[COL_COUNT];    /* field index of each known column, -1 when absent */
	int n_fields;
	int line;
};

static void cell_error(const struct reader *r, int col, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static void cell_error(const struct reader *r, int col, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_addv(r->diags, DIAG_ERROR, r->file, r->line, col_names[col], fmt, ap);
	va_end(ap);
}

/* Splits a line (NUL-terminated, modified) at commas; fields trimmed of
 * blanks. Returns the number of fields, at most max (more: max + 1). */
static int split(char *s, char **fields, int max)
{
	int n = 0;
	for (;;) {
		char *end = strchr(s, ',');
		if (end)
			*end = '\0';
		while (*s && isspace((unsigned char)*s))
			s++;
		size_t len = strlen(s);
		while (len > 0 && isspace((unsigned char)s[len - 1]))
			s[--len] = '\0';
		if (n < max)
			fields[n] = s;
		n++;
		if (!end)
			return n > max ? max + 1 : n;
		s = end + 1;
	}
}

static bool parse_double(const char *s, double *out)
{
	char *end = NULL;
	if (!*s)
		return false;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || *end || !isfinite(v))
		return false;
	*out = v;
	return true;
}

/* The header: every known column at most once, kind and seconds present. */
static bool read_header(struct reader *r, char **f, int n)
{
	bool ok = true;
	for (int c = 0; c < COL_COUNT; c++)
		r->col_at[c] = -1;
	if (n > CALIB_MAX_FIELDS) {
		diag_add(r->diags, DIAG_ERROR, r->file, r->line, "header",
		         "more than %d columns", CALIB_MAX_FIELDS);
		return false;
	}
	r->n_fields = n;
	for (int i = 0; i < n; i++) {
		int c = 0;
		while (c < COL_COUNT && strcmp(f[i], col_names[c]))
			c++;
		if (c == COL_COUNT) {
			int best = 0, dist = 1 << 30;
			for (int k = 0; k < COL_COUNT; k++) {
				int d = util_edit_distance(f[i], col_names[k]);
				if (d < dist) {
					dist = d;
					best = k;
				}
			}
			char hint[48] = "";
			if (dist <= 2 && strlen(f[i]) > 2) /* as the JSON readers suggest */
				snprintf(hint, sizeof hint, " (did you mean \"%s\"?)", col_names[best]);
			diag_add(r->diags, DIAG_ERROR, r->file, r->line, "header",
			         "unknown column \"%s\"%s; the columns are kind, m, n, k, batch, dtype, "
			         "bytes, seconds and pass",
			         f[i], hint);
			ok = false;
		} else if (r->col_at[c] >= 0) {
			diag_add(r->diags, DIAG_ERROR, r->file, r->line, "header",
			         "column \"%s\" appears twice (fields %d and %d)", col_names[c],
			         r->col_at[c] + 1, i + 1);
			ok = false;
		} else {
			r->col_at[c] = i;
		}
	}
	static const enum col required[] = {COL_KIND, COL_SECONDS};
	for (size_t i = 0; i < SL_COUNTOF(required); i++)
		if (r->col_at[required[i]] < 0) {
			diag_add(r->diags, DIAG_ERROR, r->file, r->line, "header",
			         "missing column \"%s\"", col_names[required[i]]);
			ok = false;
		}
	return ok;
}

/* The cell of column c in this row, NULL when the column is absent or the
 * cell empty. */
static const char *cell(const struct reader *r, char **f, int c)
{
	int i = r->col_at[c];
	return i >= 0 && *f[i] ? f[i] : NULL;
}

/* A GEMM dimension or batch count: a positive integer. */
static bool read_dim(const struct reader *r, char **f, int c, double dflt, double *out)
{
	const char *s = cell(r, f, c);
	double v = 0;
	if (!s) {
		if (dflt > 0) {
			*out = dflt;
			return true;
		}
		cell_error(r, c, "missing: a gemm row needs m, n, k, dtype and seconds");
		return false;
	}
	if (!parse_double(s, &v) || v < 1 || v != floor(v) || v > CALIB_MAX_DIM) {
		cell_error(r, c, "expected an integer between 1 and 1000000000, got \"%s\"", s);
		return false;
	}
	*out = v;
	return true;
}

static bool read_positive(const struct reader *r, char **f, int c, double *out, bool *given)
{
	const char *s = cell(r, f, c);
	*given = s != NULL;
	if (!s)
		return true;
	if (!parse_double(s, out) || *out <= 0) {
		cell_error(r, c, "expected a positive number, got \"%s\"", s);
		return false;
	}
	return true;
}

/* A row that is not a GEMM: no m, n, k or batch, and a dtype (if any)
 * that names one. Returns the dtype (bf16 when absent or bad). */
static enum dtype not_gemm_cells(const struct reader *r, char **f, bool *ok)
{
	static const enum col gemm_only[] = {COL_M, COL_N, COL_K, COL_BATCH};
	for (size_t i = 0; i < SL_COUNTOF(gemm_only); i++)
		if (cell(r, f, gemm_only[i])) {
			cell_error(r, gemm_only[i], "only gemm rows have m, n, k and batch");
			*ok = false;
		}
	const char *d = cell(r, f, COL_DTYPE);
	int dt = d ? dtype_parse(d) : DT_BF16;
	if (dt < 0) {
		cell_error(r, COL_DTYPE, "expected fp32, fp16, bf16, int32, int64 or bool, got \"%s\"", d);
		*ok = false;
	}
	return dt < 0 ? DT_BF16 : (enum dtype)dt;
}

/* A row of a kernel class (its kind a class name): bytes, seconds and
 * pass (forward when empty); no GEMM dimensions. */
static bool read_class_row(struct reader *r, char **f, int cls, struct calib_class_row *row)
{
	bool ok = true, given = false;
	memset(row, 0, sizeof *row);
	row->cls = cls;
	row->line = r->line;
	if (!read_positive(r, f, COL_SECONDS, &row->seconds, &given) || !given) {
		if (!given)
			cell_error(r, COL_SECONDS, "missing: every row needs its time in seconds");
		ok = false;
	}
	if (!read_positive(r, f, COL_BYTES, &row->bytes, &given) || !given) {
		if (!given)
			cell_error(r, COL_BYTES, "missing: a %s row needs the op's bytes",
			           topo_kernel_class_names[cls]);
		ok = false;
	}
	not_gemm_cells(r, f, &ok);
	const char *p = cell(r, f, COL_PASS);
	if (p && strcmp(p, "forward") && strcmp(p, "backward")) {
		cell_error(r, COL_PASS, "expected \"forward\" or \"backward\", got \"%s\"", p);
		ok = false;
	}
	row->backward = p && !strcmp(p, "backward");
	return ok;
}

/* The class a row's kind names, or -1. */
static int row_class(const char *kind)
{
	for (int c = 0; c < TOPO_KC_COUNT; c++)
		if (!strcmp(kind, topo_kernel_class_names[c]))
			return c;
	return -1;
}

static bool read_row(struct reader *r, char **f, struct calib_row *row)
{
	bool ok = true, given = false;
	memset(row, 0, sizeof *row);
	row->line = r->line;
	const char *k = cell(r, f, COL_KIND);
	if (!k) {
		cell_error(r, COL_KIND, "missing (gemm or memory)");
		return false;
	}
	if (!strcmp(k, "gemm")) {
		row->kind = CALIB_GEMM;
	} else if (!strcmp(k, "memory")) {
		row->kind = CALIB_MEMORY;
	} else {
		cell_error(r, COL_KIND,
		           "expected \"gemm\", \"memory\" or a kernel class (norm, softmax, dropout, "
		           "activation, loss), got \"%s\"",
		           k);
		return false;
	}
	if (cell(r, f, COL_PASS)) {
		cell_error(r, COL_PASS, "only the kernel classes' rows have a pass");
		ok = false;
	}
	if (!read_positive(r, f, COL_SECONDS, &row->seconds, &given))
		ok = false;
	else if (!given) {
		cell_error(r, COL_SECONDS, "missing: every row needs its time in seconds");
		ok = false;
	}
	if (!read_positive(r, f, COL_BYTES, &row->bytes, &given))
		ok = false;
	if (row->kind == CALIB_MEMORY) {
		if (ok && !given) {
			cell_error(r, COL_BYTES, "missing: a memory row needs the bytes it moves");
			ok = false;
		}
		row->dtype = not_gemm_cells(r, f, &ok);
		return ok;
	}
	ok = read_dim(r, f, COL_M, 0, &row->m) && ok;
	ok = read_dim(r, f, COL_N, 0, &row->n) && ok;
	ok = read_dim(r, f, COL_K, 0, &row->k) && ok;
	ok = read_dim(r, f, COL_BATCH, 1, &row->batch) && ok;
	const char *d = cell(r, f, COL_DTYPE);
	int dt = d ? dtype_parse(d) : -1;
	if (!d) {
		cell_error(r, COL_DTYPE, "missing: a gemm row needs m, n, k, dtype and seconds");
		ok = false;
	} else if (dt < 0) {
		cell_error(r, COL_DTYPE, "expected fp32, fp16, bf16, int32, int64 or bool, got \"%s\"",
		           d);
		ok = false;
	}
	row->dtype = dt < 0 ? DT_BF16 : (enum dtype)dt;
	if (ok && !given) /* the operands read and the result written, once */
		row->bytes = row->batch * (row->m * row->k + row->k * row->n + row->m * row->n) *
		             (double)dtype_bytes(row->dtype);
	return ok;
}

struct calib_table *cost_calib_parse(struct arena *a, const char *file, const char *text,
                                     size_t len, struct diag_list *diags)
{
	SL_ASSERT(a && file && diags);
	size_t before = diags->errors;
	if (memchr(text, '\0', len)) {
		diag_add(diags, DIAG_ERROR, file, 0, NULL, "not a text file (it holds NUL bytes)");
		return NULL;
	}
	struct calib_table *t = arena_calloc(a, 1, sizeof *t);
	char *copy = arena_strndup(a, text, len);
	if (!t || !copy || !(t->file = arena_strdup(a, file))) {
		diag_add(diags, DIAG_ERROR, file, 0, NULL, "out of memory");
		return NULL;
	}
	struct reader r = {a, file, diags, {0}, 0, 0};
	bool have_header = false;
	int cap = 0, class_cap = 0;
	char *fields[CALIB_MAX_FIELDS + 1];
	for (char *s = copy; s && *s;) {
		char *nl = strchr(s, '\n');
		if (nl)
			*nl = '\0';
		r.line++;
		size_t n = strlen(s);
		if (n > 0 && s[n - 1] == '\r')
			s[n - 1] = '\0';
		char *p = s;
		while (*p && isspace((unsigned char)*p))
			p++;
		char *next = nl ? nl + 1 : NULL;
		if (!*p || *p == '#') {
			s = next;
			continue;
		}
		int nf = split(p, fields, CALIB_MAX_FIELDS);
		if (!have_header) {
			have_header = true;
			if (!read_header(&r, fields, nf))
				return NULL; /* the rows cannot be read without it */
		} else if (nf != r.n_fields) {
			diag_add(diags, DIAG_ERROR, file, r.line, NULL,
			         "%d field%s, the header has %d", nf > CALIB_MAX_FIELDS ? nf - 1 : nf,
			         nf == 1 ? "" : "s", r.n_fields);
		} else {
			if (t->n_rows == cap) {
				int grown = cap ? 2 * cap : 64;
				struct calib_row *rows = arena_grow(a, t->rows, (size_t)cap, (size_t)grown,
				                                    sizeof *rows);
				if (!rows) {
					diag_add(diags, DIAG_ERROR, file, r.line, NULL, "out of memory");
					return NULL;
				}
				t->rows = rows;
				cap = grown;
			}
			const char *kind = cell(&r, fields, COL_KIND);
			int cls = kind ? row_class(kind) : -1;
			struct calib_row *row = &t->rows[t->n_rows];
			if (cls >= 0) {
				if (t->n_class == class_cap) {
					int grown = class_cap ? 2 * class_cap : 16;
					struct calib_class_row *c = arena_grow(a, t->class_rows, (size_t)class_cap,
					                                       (size_t)grown, sizeof *c);
					if (!c) {
						diag_add(diags, DIAG_ERROR, file, r.line, NULL, "out of memory");
						return NULL;
					}
					t->class_rows = c;
					class_cap = grown;
				}
				if (read_class_row(&r, fields, cls, &t->class_rows[t->n_class]))
					t->n_class++;
			} else if (read_row(&r, fields, row)) {
				t->n_rows++;
				if (row->kind == CALIB_GEMM)
					t->n_gemm++;
				else
					t->n_memory++;
			}
		}
		s = next;
	}
	if (!have_header)
		diag_add(diags, DIAG_ERROR, file, r.line, NULL,
		         "no header: expected a line naming the columns (kind, m, n, k, batch, dtype, "
		         "bytes, seconds)");
	else if (diags->errors == before && t->n_rows == 0 && t->n_class == 0)
		diag_add(diags, DIAG_ERROR, file, r.line, NULL, "no rows after the header");
	return diags->errors == before ? t : NULL;
}

char *cost_read_table(const char *path, size_t *len, struct diag_list *diags)
{
	const char *err = NULL;
	char *text = util_read_file(path, len, &err);
	if (!text)
		diag_add(diags, DIAG_ERROR, path, 0, NULL, "cannot read the table: %s", err);
	return text;
}

struct calib_table *cost_calib_load(struct arena *a, const char *path, struct diag_list *diags)
{
	size_t len = 0;
	char *text = cost_read_table(path, &len, diags);
	if (!text)
		return NULL;
	struct calib_table *t = cost_calib_parse(a, path, text, len, diags);
	free(text);
	return t;
}

/* ------------------------------------------------------------- the fit */

const char *const calib_param_names[CALIB_PARAM_COUNT] = {
	"matmul_efficiency", "gemm_half_dim", "memory_efficiency", "kernel_overhead_us"};
_Static_assert(CALIB_PARAM_COUNT == 4, "calib_param_names out of step");

/* The fit's parameter vector: at[p] the entry of parameter p, -1 when it
 * is held at fixed[p]. The GEMM and memory scales multiply a reference
 * (the device's peak of the row's dtype and its HBM bandwidth, or 1);
 * they and the half-dimension are fitted through their logarithms. */
struct fit_ctx {
	const struct calib_table *t;
	int at[CALIB_PARAM_COUNT];
	double fixed[CALIB_PARAM_COUNT];   /* natural values of the held ones */
	const double *ref_flops;           /* per row */
	double ref_bps;
};

static bool logarithmic(int p)
{
	return p != CALIB_KERNEL_OVERHEAD;
}

static double param_value(const struct fit_ctx *c, const gsl_vector *x, int p)
{
	if (c->at[p] < 0)
		return c->fixed[p];
	double v = gsl_vector_get(x, (size_t)c->at[p]);
	return logarithmic(p) ? exp(v) : v;
}

/* The model of cost_kernel_s at parameter vector x for row i. */
static double model_row(const struct fit_ctx *c, const gsl_vector *x, int i)
{
	const struct calib_row *r = &c->t->rows[i];
	struct cost_kernel_model p = {
		.gemm_flops = param_value(c, x, CALIB_MATMUL_EFFICIENCY) * c->ref_flops[i],
		.half_dim = param_value(c, x, CALIB_GEMM_HALF_DIM),
		.memory_bps = param_value(c, x, CALIB_MEMORY_EFFICIENCY) * c->ref_bps,
		.overhead_s = param_value(c, x, CALIB_KERNEL_OVERHEAD),
	};
	struct cost_work w = {0, r->bytes, 0, 0, 0};
	if (r->kind == CALIB_GEMM)
		w = (struct cost_work){2 * r->batch * r->m * r->n * r->k, r->bytes, r->batch * r->m, r->n,
		                       r->k};
	return cost_kernel_s(&p, &w);
}

static int residuals(const gsl_vector *x, void *data, gsl_vector *f)
{
	const struct fit_ctx *c = data;
	for (int i = 0; i < c->t->n_rows; i++) {
		double t = c->t->rows[i].seconds;
		gsl_vector_set(f, (size_t)i, (model_row(c, x, i) - t) / t);
	}
	return GSL_SUCCESS;
}

bool cost_lm_solve(gsl_multifit_nlinear_fdf *fdf, gsl_vector *x, gsl_matrix *covar,
                   double *cost, int *iterations)
{
	gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
	gsl_multifit_nlinear_workspace *w =
		gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, fdf->n, fdf->p);
	if (!w)
		return false;
	int info = 0;
	bool ok = gsl_multifit_nlinear_winit(x, NULL, fdf, w) == GSL_SUCCESS;
	int status = ok ? gsl_multifit_nlinear_driver(500, 1e-12, 1e-12, 0, NULL, NULL, &info, w)
	                : GSL_EFAILED;
	/* Running out of iterations, or a step that cannot improve, still
	 * leaves the best point found. */
	ok = ok && (status == GSL_SUCCESS || status == GSL_EMAXITER || status == GSL_ENOPROG);
	if (ok) {
		gsl_vector *f = gsl_multifit_nlinear_residual(w);
		double chi2 = 0;
		gsl_blas_ddot(f, f, &chi2);
		*cost = chi2;
		if (iterations)
			*iterations = (int)gsl_multifit_nlinear_niter(w);
		gsl_vector_memcpy(x, gsl_multifit_nlinear_position(w));
		if (covar)
			ok = gsl_multifit_nlinear_covar(gsl_multifit_nlinear_jac(w), 0.0, covar) ==
			     GSL_SUCCESS;
	}
	gsl_multifit_nlinear_free(w);
	return ok && isfinite(*cost);
}

/* One Levenberg-Marquardt run from x on the table's rows. */
static bool run_lm(const struct fit_ctx *c, gsl_vector *x, gsl_matrix *covar, double *cost,
                   int *iterations)
{
	gsl_multifit_nlinear_fdf fdf = {residuals, NULL, NULL, (size_t)c->t->n_rows, x->size,
	                                (void *)c, 0, 0, 0};
	return cost_lm_solve(&fdf, x, covar, cost, iterations);
}

/* Checks the table can determine the parameters; diagnostics when not. */
static bool fittable(const struct calib_table *t, const struct topo_device *d, unsigned keep,
                     int n_params, struct diag_list *diags)
{
	bool ok = true;
	if (keep && !d) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL,
		         "holding a parameter needs a device (--topology) to hold it at");
		return false;
	}
	if (n_params == 0) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL, "every parameter is held: nothing to fit");
		return false;
	}
	if (t->n_rows <= n_params) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL,
		         "%d row%s for %d parameter%s: the fit needs more rows than parameters",
		         t->n_rows, t->n_rows == 1 ? "" : "s", n_params, n_params == 1 ? "" : "s");
		ok = false;
	}
	const struct calib_row *first = NULL, *first_mem = NULL;
	bool shapes = false, sizes = false;
	for (int i = 0; i < t->n_rows; i++) {
		const struct calib_row *r = &t->rows[i];
		if (r->kind == CALIB_MEMORY) {
			sizes = sizes || (first_mem && r->bytes != first_mem->bytes);
			first_mem = first_mem ? first_mem : r;
			continue;
		}
		if (!first) {
			first = r;
			continue;
		}
		shapes = shapes || r->m != first->m || r->n != first->n || r->k != first->k ||
		         r->batch != first->batch;
		if (!d && r->dtype != first->dtype && ok) {
			diag_add(diags, DIAG_ERROR, t->file, r->line, "dtype",
			         "gemm rows of several dtypes (%s at line %d, %s here) need a device "
			         "(--topology) whose peaks relate them",
			         dtype_names[first->dtype], first->line, dtype_names[r->dtype]);
			ok = false;
		}
	}
	if (first && !shapes && !(keep & (1u << CALIB_GEMM_HALF_DIM))) {
		diag_add(diags, DIAG_ERROR, t->file, first->line, NULL,
		         "every gemm row has the same shape: the half-dimension needs GEMMs of "
		         "several shapes");
		ok = false;
	}
	if (first_mem && !sizes && !first) {
		diag_add(diags, DIAG_ERROR, t->file, first_mem->line, NULL,
		         "every memory row moves the same bytes: the bandwidth and the overhead need "
		         "kernels of several sizes");
		ok = false;
	}
	return ok;
}

/* Starting values: the memory rows' weighted straight line t = o + S/B
 * (the exact answer for a table of memory rows alone), the best GEMM rate
 * seen raised a little (the asymptote lies above it), a quarter of the
 * shortest kernel as the overhead when there are GEMMs. */
static void start_values(struct arena *a, const struct fit_ctx *c, double start[CALIB_PARAM_COUNT])
{
	const struct calib_table *t = c->t;
	double best_rate = 0, least_s = INFINITY, bw = 0;
	for (int i = 0; i < t->n_rows; i++) {
		const struct calib_row *r = &t->rows[i];
		least_s = fmin(least_s, r->seconds);
		if (r->kind == CALIB_GEMM)
			best_rate = fmax(best_rate, 2 * r->batch * r->m * r->n * r->k / r->seconds /
			                                    c->ref_flops[i]);
		else
			bw = fmax(bw, r->bytes / r->seconds / c->ref_bps);
	}
	start[CALIB_MATMUL_EFFICIENCY] = 1.2 * best_rate;
	start[CALIB_GEMM_HALF_DIM] = 128;
	start[CALIB_MEMORY_EFFICIENCY] = bw;
	start[CALIB_KERNEL_OVERHEAD] = t->n_gemm > 0 ? 0.25 * least_s : 0;
	int n = t->n_memory, j = 0;
	double *x = n >= 2 ? arena_calloc(a, (size_t)n, sizeof *x) : NULL;
	double *y = x ? arena_calloc(a, (size_t)n, sizeof *y) : NULL;
	double *wt = y ? arena_calloc(a, (size_t)n, sizeof *wt) : NULL;
	if (!wt)
		return;
	for (int i = 0; i < t->n_rows; i++) {
		if (t->rows[i].kind != CALIB_MEMORY)
			continue;
		x[j] = t->rows[i].bytes;
		y[j] = t->rows[i].seconds;
		wt[j] = 1 / (y[j] * y[j]); /* relative residuals, as the fit */
		j++;
	}
	double c0 = 0, c1 = 0, v00, v01, v11, chi;
	if (gsl_fit_wlinear(x, 1, wt, 1, y, 1, (size_t)n, &c0, &c1, &v00, &v01, &v11, &chi) ==
	            GSL_SUCCESS &&
	    c1 > 0) {
		start[CALIB_MEMORY_EFFICIENCY] = 1 / c1 / c->ref_bps;
		if (t->n_gemm == 0)
			start[CALIB_KERNEL_OVERHEAD] = c0 > 0 ? c0 : 0;
	}
}

bool cost_calib_fit(struct arena *a, const struct calib_table *t, const struct topo_device *d,
                    unsigned keep, struct calib_fit *out, struct diag_list *diags)
{
	SL_ASSERT(a && t && out && diags);
	gsl_set_error_handler_off();
	memset(out, 0, sizeof *out);
	out->has_device = d != NULL;
	struct fit_ctx c = {t, {-1, -1, -1, -1}, {0, 0, INFINITY, 0}, NULL, d ? d->hbm_bps : 1};
	if (d) {
		c.fixed[CALIB_MATMUL_EFFICIENCY] = d->matmul_efficiency;
		c.fixed[CALIB_GEMM_HALF_DIM] = d->gemm_half_dim;
		c.fixed[CALIB_MEMORY_EFFICIENCY] = d->memory_efficiency;
		c.fixed[CALIB_KERNEL_OVERHEAD] = d->kernel_overhead_s;
	}
	/* What the rows can determine, less what the caller holds. */
	bool wanted[CALIB_PARAM_COUNT] = {t->n_gemm > 0, t->n_gemm > 0, t->n_memory > 0, true};
	int n = 0;
	for (int p = 0; p < CALIB_PARAM_COUNT; p++)
		if (wanted[p] && !(keep & (1u << p)))
			c.at[p] = n++;
	if (!fittable(t, d, keep, n, diags))
		return false;

	double *ref = arena_calloc(a, (size_t)t->n_rows, sizeof *ref);
	out->rel = arena_calloc(a, (size_t)t->n_rows, sizeof *out->rel);
	if (!ref || !out->rel) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL, "out of memory");
		return false;
	}
	bool first = true;
	for (int i = 0; i < t->n_rows; i++) {
		const struct calib_row *r = &t->rows[i];
		ref[i] = d && r->kind == CALIB_GEMM ? cost_device_peak(d, r->dtype, &out->peak_fallback)
		                                    : 1;
		if (r->kind == CALIB_GEMM && first) {
			out->dtype = r->dtype;
			first = false;
		}
	}
	c.ref_flops = ref;
	double start[CALIB_PARAM_COUNT];
	start_values(a, &c, start);

	/* Several starting half-dimensions, in a fixed order; the lowest cost
	 * wins (the first on a tie). */
	static const double half_dims[] = {16, 128, 1024};
	gsl_vector *x = gsl_vector_alloc((size_t)n), *best = gsl_vector_alloc((size_t)n);
	gsl_matrix *covar = gsl_matrix_alloc((size_t)n, (size_t)n);
	gsl_matrix *best_covar = gsl_matrix_alloc((size_t)n, (size_t)n);
	double best_cost = INFINITY;
	int runs = c.at[CALIB_GEMM_HALF_DIM] >= 0 ? (int)SL_COUNTOF(half_dims) : 1;
	for (int s = 0; x && best && covar && best_covar && s < runs; s++) {
		start[CALIB_GEMM_HALF_DIM] = half_dims[s];
		for (int p = 0; p < CALIB_PARAM_COUNT; p++)
			if (c.at[p] >= 0)
				gsl_vector_set(x, (size_t)c.at[p], logarithmic(p) ? log(start[p]) : start[p]);
		double cost = INFINITY;
		int iterations = 0;
		if (run_lm(&c, x, covar, &cost, &iterations) && cost < best_cost) {
			best_cost = cost;
			out->iterations = iterations;
			gsl_vector_memcpy(best, x);
			gsl_matrix_memcpy(best_covar, covar);
		}
	}
	bool ok = isfinite(best_cost);
	if (!x || !best || !covar || !best_covar)
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL, "out of memory");
	else if (!ok)
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL,
		         "the least-squares fit did not converge from any starting point");
	if (ok) {
		/* Standard errors: the covariance scaled by the residual
		 * variance, through the exponential for the logarithmic ones. */
		double s2 = best_cost / (t->n_rows - n);
		for (int p = 0; p < CALIB_PARAM_COUNT; p++) {
			struct calib_param *q = &out->param[p];
			q->value = param_value(&c, best, p);
			q->fitted = c.at[p] >= 0;
			q->held = !q->fitted && wanted[p];
			if (q->fitted) {
				double var = gsl_matrix_get(best_covar, (size_t)c.at[p], (size_t)c.at[p]) * s2;
				double se = var > 0 ? sqrt(var) : 0;
				q->std_error = logarithmic(p) ? q->value * se : se;
			}
		}
		/* The covariance of the values: d(e^x) = e^x dx for the logarithmic. */
		for (int p = 0; p < CALIB_PARAM_COUNT; p++)
			for (int q = 0; q < CALIB_PARAM_COUNT; q++)
				if (c.at[p] >= 0 && c.at[q] >= 0)
					out->cov[p][q] =
						gsl_matrix_get(best_covar, (size_t)c.at[p], (size_t)c.at[q]) * s2 *
						(logarithmic(p) ? out->param[p].value : 1) *
						(logarithmic(q) ? out->param[q].value : 1);
		out->n_rows = t->n_rows;
		out->n_params = n;
		out->rms_rel = sqrt(best_cost / t->n_rows);
		for (int i = 0; i < t->n_rows; i++) {
			out->rel[i] = (model_row(&c, best, i) - t->rows[i].seconds) / t->rows[i].seconds;
			if (fabs(out->rel[i]) > fabs(out->rel[out->max_row]))
				out->max_row = i;
		}
	}
	gsl_vector_free(x);
	gsl_vector_free(best);
	gsl_matrix_free(covar);
	gsl_matrix_free(best_covar);
	return ok;
}

/* ------------------------------------------------- out of sample */

/* A row's time under a fit's parameters (model_row's model, from values). */
static double predict(const struct calib_fit *f, const struct topo_device *d,
                      const struct calib_row *r)
{
	bool fallback = false;
	double ref = d && r->kind == CALIB_GEMM ? cost_device_peak(d, r->dtype, &fallback) : 1;
	struct cost_kernel_model p = {
		.gemm_flops = f->param[CALIB_MATMUL_EFFICIENCY].value * ref,
		.half_dim = f->param[CALIB_GEMM_HALF_DIM].value,
		.memory_bps = f->param[CALIB_MEMORY_EFFICIENCY].value * (d ? d->hbm_bps : 1),
		.overhead_s = f->param[CALIB_KERNEL_OVERHEAD].value,
	};
	struct cost_work w = {0, r->bytes, 0, 0, 0};
	if (r->kind == CALIB_GEMM)
		w = (struct cost_work){2 * r->batch * r->m * r->n * r->k, r->bytes, r->batch * r->m, r->n,
		                       r->k};
	return cost_kernel_s(&p, &w);
}

void cost_calib_cross_validate(struct arena *a, const struct calib_table *t,
                               const struct topo_device *d, unsigned keep, struct calib_cv *out)
{
	int n = t->n_rows, folds = n <= 20 ? n : 10;
	*out = (struct calib_cv){n <= 20 ? "leave-one-out" : "k-fold", folds, NAN, NAN};
	struct calib_row *rows = arena_calloc(a, (size_t)n + 1, sizeof *rows);
	if (!rows || n < 2)
		return;
	double sum = 0, sum2 = 0;
	for (int f = 0; f < folds; f++) {
		struct calib_table sub = {.file = t->file, .rows = rows};
		for (int i = 0; i < n; i++)
			if (i % folds != f) {
				rows[sub.n_rows++] = t->rows[i];
				sub.n_gemm += t->rows[i].kind == CALIB_GEMM;
				sub.n_memory += t->rows[i].kind == CALIB_MEMORY;
			}
		struct calib_fit fit;
		struct diag_list quiet;
		diag_list_init(&quiet);
		bool ok = cost_calib_fit(a, &sub, d, keep, &fit, &quiet);
		diag_list_free(&quiet);
		if (!ok)
			return;
		for (int i = f; i < n; i += folds) {
			double e = predict(&fit, d, &t->rows[i]) / t->rows[i].seconds - 1;
			sum += fabs(e);
			sum2 += e * e;
		}
	}
	out->mape_pct = 100 * sum / n;
	out->rms_pct = 100 * sqrt(sum2 / n);
}

/* ------------------------------------------------- the kernel classes */

bool cost_calib_classes(struct arena *a, const struct calib_table *t, const struct topo_device *d,
                        double overhead_s, double memory_efficiency, struct calib_classes *out,
                        struct diag_list *diags)
{
	memset(out, 0, sizeof *out);
	if (t->n_class == 0)
		return true;
	double *v = arena_alloc(a, (size_t)t->n_class * sizeof *v);
	if (!v) {
		diag_add(diags, DIAG_ERROR, t->file, 0, NULL, "out of memory");
		return false;
	}
	bool ok = true;
	for (int c = 0; c < TOPO_KC_COUNT; c++)
		for (int pass = 0; pass < 2; pass++) {
			double f = pass ? cost_kernel_class_backward_factor(c) : 1;
			int n = 0;
			for (int i = 0; i < t->n_class; i++) {
				const struct calib_class_row *r = &t->class_rows[i];
				if (r->cls != c || r->backward != (pass == 1))
					continue;
				double busy = r->seconds - f * overhead_s;
				if (busy <= 0) {
					diag_add(diags, DIAG_ERROR, t->file, r->line, "seconds",
					         "%.4g s is not above the %s's %g kernel overhead%s (%.4g s): no "
					         "bandwidth to derive",
					         r->seconds, pass ? "backward" : "forward", f,
					         f == 1 ? "" : "s", f * overhead_s);
					ok = false;
					continue;
				}
				v[n++] = f * r->bytes / (d->hbm_bps * busy);
			}
			if (n == 0)
				continue;
			double m = util_median(v, n);
			out->eff[c][pass] = m < memory_efficiency ? m : memory_efficiency;
			out->rows[c][pass] = n;
		}
	return ok;
}
