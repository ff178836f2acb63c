/* fit.c — end-to-end figures fitted to measured training iterations
 * (docs/validation.md, "Calibrating from training runs"): a small declared
 * set (at most VALIDATION_FIT_MAX) of figures with a physical meaning,
 * units and bounds (train.gemm_efficiency, train.nic_efficiency,
 * train.op_overhead_us by default, train.comm_efficiency on request;
 * cost_cal_set folds each into the parameters that the estimate and the
 * simulation both read), fitted by bounded nonlinear
 * least squares on the rows' relative errors (or Huber's loss, by
 * iteratively reweighted least squares: a row beyond 1.345 robust
 * standard deviations weighs in linearly), never one factor per row.
 *
 * The bounds hold by a change of variable (x = lo + (hi - lo) / (1 +
 * e^-u), GSL multifit_nlinear's trust region in u); the standard errors
 * come from the Jacobian in the figures' own units at the optimum
 * (central differences), s^2 (J'J)^-1 with s^2 the residuals' mean square
 * over n - p; a figure is not identifiable when J'J is singular or
 * ill-conditioned (columns scaled to unit norm, condition number over
 * VALIDATION_FIT_MAX_COND), its standard error is over half its value, or
 * it sits at a bound. The out-of-sample error is leave-one-out (k-fold,
 * VALIDATION_FIT_FOLDS folds dealt in row order, above
 * VALIDATION_FIT_LOO_MAX rows): every fold refitted from the full fit's
 * figures, its held-out rows predicted.
 *
 * Units: the figures' own (ratio, us); errors in percent. The hot path is
 * the model's prediction (one estimate of one row's plan per call): a fit
 * costs a few hundred predictions per row, leave-one-out n times that.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <gsl/gsl_blas.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_errno.h>
#include <gsl/gsl_linalg.h>
#include <gsl/gsl_matrix.h>
#include <gsl/gsl_multifit_nlinear.h>
#include <gsl/gsl_vector.h>

#include "validation.h"

/* ------------------------------------------------------ the generic fit */

struct fitctx {
	const struct validation_model *m;
	const int *points;           /* the points fitted */
	const double *w;             /* [n] their weights; NULL: 1 each */
	int n;
	bool failed;                 /* a prediction failed */
};

static double figure_of(const struct validation_model *m, int j, double u)
{
	return m->lo[j] + (m->hi[j] - m->lo[j]) / (1 + exp(-u));
}

static double u_of(const struct validation_model *m, int j, double x)
{
	double w = m->hi[j] - m->lo[j], f = (x - m->lo[j]) / w;
	f = fmin(fmax(f, 1e-4), 1 - 1e-4);
	return log(f / (1 - f));
}

/* The relative error of point i at figures x. */
static double rel_err(const struct validation_model *m, int i, const double *x)
{
	double p = m->predict(m->ctx, i, x);
	return isfinite(p) && m->measured[i] > 0 ? p / m->measured[i] - 1 : NAN;
}

static int residuals(const gsl_vector *u, void *data, gsl_vector *f)
{
	struct fitctx *c = data;
	double x[VALIDATION_FIT_MAX];
	for (int j = 0; j < c->m->n_figures; j++)
		x[j] = figure_of(c->m, j, gsl_vector_get(u, (size_t)j));
	for (int k = 0; k < c->n; k++) {
		double r = rel_err(c->m, c->points[k], x);
		if (!isfinite(r)) {
			c->failed = true;
			r = 1e3;
		}
		gsl_vector_set(f, (size_t)k, c->w ? sqrt(c->w[k]) * r : r);
	}
	return GSL_SUCCESS;
}

/* Fits the figures to the points listed with weights w (NULL: 1 each),
 * from x (updated); the solver's iterations, or -1 when it could not
 * run. */
static int solve_weighted(const struct validation_model *m, const int *points, int n,
                          const double *w, double *x)
{
	int p = m->n_figures;
	if (n < p)
		return -1;
	struct fitctx c = {.m = m, .points = points, .w = w, .n = n};
	gsl_multifit_nlinear_fdf fdf = {.f = residuals, .df = NULL, .fvv = NULL, .n = (size_t)n,
	                                .p = (size_t)p, .params = &c};
	gsl_multifit_nlinear_parameters params = gsl_multifit_nlinear_default_parameters();
	params.h_df = 1e-6;
	gsl_multifit_nlinear_workspace *ws =
		gsl_multifit_nlinear_alloc(gsl_multifit_nlinear_trust, &params, (size_t)n, (size_t)p);
	gsl_vector *u = gsl_vector_alloc((size_t)p);
	if (!ws || !u) {
		gsl_multifit_nlinear_free(ws);
		gsl_vector_free(u);
		return -1;
	}
	for (int j = 0; j < p; j++)
		gsl_vector_set(u, (size_t)j, u_of(m, j, x[j]));
	int info = 0, iters = -1;
	if (gsl_multifit_nlinear_init(u, &fdf, ws) == GSL_SUCCESS) {
		gsl_multifit_nlinear_driver(VALIDATION_FIT_MAX_ITER, 1e-6, 1e-8, 1e-10, NULL, NULL,
		                            &info, ws);
		iters = (int)gsl_multifit_nlinear_niter(ws);
		gsl_vector *best = gsl_multifit_nlinear_position(ws);
		for (int j = 0; j < p; j++)
			x[j] = figure_of(m, j, gsl_vector_get(best, (size_t)j));
	}
	gsl_multifit_nlinear_free(ws);
	gsl_vector_free(u);
	return c.failed ? -1 : iters;
}

/* The robust standard deviation of the relative errors r[n]: 1.4826 times
 * their median absolute value (the median absolute deviation about zero,
 * consistent with the standard deviation under normal errors; Huber
 * 1981, §5.2). */
static double robust_scale(const double *r, int n)
{
	double *a = malloc((size_t)n * sizeof *a);
	if (!a)
		return NAN;
	for (int k = 0; k < n; k++)
		a[k] = fabs(r[k]);
	double med = util_median(a, n);
	free(a);
	return 1.4826 * med;
}

/* Fits the figures to the points listed, from x (updated), under m's
 * loss; w (may be NULL) receives each point's final weight. Huber's loss
 * by iteratively reweighted least squares: each round fits with the
 * weights min(1, k s / |r|) of the last round's relative errors r, s
 * their robust scale, until the weights settle. The solver's iterations
 * over all rounds, or -1. */
static int solve_into(const struct validation_model *m, const int *points, int n, double *x,
                      double *w, double *scale)
{
	if (scale)
		*scale = NAN;
	if (m->loss == VALIDATION_LOSS_SQUARES || n <= m->n_figures) {
		for (int k = 0; w && k < n; k++)
			w[k] = 1;
		return solve_weighted(m, points, n, NULL, x);
	}
	double *wk = malloc((size_t)n * sizeof *wk), *r = malloc((size_t)n * sizeof *r);
	int total = -1;
	if (!wk || !r)
		goto done;
	for (int k = 0; k < n; k++)
		wk[k] = 1;
	total = 0;
	for (int round = 0; round < VALIDATION_IRLS_MAX; round++) {
		int it = solve_weighted(m, points, n, wk, x);
		if (it < 0) {
			total = -1;
			goto done;
		}
		total += it;
		for (int k = 0; k < n; k++)
			r[k] = rel_err(m, points[k], x);
		double s = robust_scale(r, n), change = 0;
		if (scale)
			*scale = s;
		if (!(s > 1e-9))
			break;  /* the rows fitted exactly: every weight 1 */
		for (int k = 0; k < n; k++) {
			double nw = fmin(1, VALIDATION_HUBER_K * s / fabs(r[k]));
			change = fmax(change, fabs(nw - wk[k]));
			wk[k] = nw;
		}
		if (change < 1e-4)
			break;
	}
	for (int k = 0; w && k < n; k++)
		w[k] = wk[k];
done:
	free(wk);
	free(r);
	return total;
}

static int solve(const struct validation_model *m, const int *points, int n, double *x)
{
	return solve_into(m, points, n, x, NULL, NULL);
}

/* The standard errors, covariance and conditioning at x over all points,
 * each weighted by out->weight (under Huber's loss, the weighted least
 * squares problem of the last reweighting round: s^2 (J'WJ)^-1). */
static void uncertainty(const struct validation_model *m, const double *x,
                        struct validation_fit_result *out)
{
	int n = m->n_points, p = m->n_figures;
	gsl_matrix *J = gsl_matrix_alloc((size_t)n, (size_t)p);
	gsl_matrix *V = gsl_matrix_alloc((size_t)p, (size_t)p);
	gsl_vector *S = gsl_vector_alloc((size_t)p), *wk = gsl_vector_alloc((size_t)p);
	out->condition = INFINITY;
	for (int j = 0; j < p * p; j++)
		out->covariance[j] = NAN;
	if (!J || !V || !S || !wk || n <= p)
		goto done;
	double rss = 0;
	for (int i = 0; i < n; i++) {
		double r = rel_err(m, i, x);
		rss += out->weight[i] * r * r;
	}
	double s2 = rss / (n - p);
	for (int j = 0; j < p; j++) {
		double h = 1e-4 * (m->hi[j] - m->lo[j]);
		double xu[VALIDATION_FIT_MAX], xd[VALIDATION_FIT_MAX];
		memcpy(xu, x, sizeof xu);
		memcpy(xd, x, sizeof xd);
		xu[j] = fmin(x[j] + h, m->hi[j]);
		xd[j] = fmax(x[j] - h, m->lo[j]);
		for (int i = 0; i < n; i++)
			gsl_matrix_set(J, (size_t)i, (size_t)j,
			               sqrt(out->weight[i]) *
			                       (rel_err(m, i, xu) - rel_err(m, i, xd)) / (xu[j] - xd[j]));
	}
	/* Conditioning on unit-norm columns (the figures' units apart). */
	double norm[VALIDATION_FIT_MAX];
	for (int j = 0; j < p; j++) {
		gsl_vector_view col = gsl_matrix_column(J, (size_t)j);
		norm[j] = gsl_blas_dnrm2(&col.vector);
		if (norm[j] > 0)
			gsl_vector_scale(&col.vector, 1 / norm[j]);
	}
	if (gsl_linalg_SV_decomp(J, V, S, wk) != GSL_SUCCESS)
		goto done;
	double smax = gsl_vector_get(S, 0), smin = gsl_vector_get(S, (size_t)p - 1);
	out->condition = smin > 0 ? smax / smin : INFINITY;
	/* (J'J)^-1 = D^-1 V S^-2 V' D^-1, singular values under smax 1e-12
	 * dropped (a pseudo-inverse: the flat directions get no variance, and
	 * the figures on them are reported not identifiable). */
	for (int a = 0; a < p; a++)
		for (int b = 0; b < p; b++) {
			double v = 0;
			for (int k = 0; k < p; k++) {
				double s = gsl_vector_get(S, (size_t)k);
				if (s > 1e-12 * smax)
					v += gsl_matrix_get(V, (size_t)a, (size_t)k) *
					     gsl_matrix_get(V, (size_t)b, (size_t)k) / (s * s);
			}
			bool ok = norm[a] > 0 && norm[b] > 0;
			out->covariance[a * p + b] = ok ? s2 * v / (norm[a] * norm[b]) : NAN;
		}
done:
	gsl_matrix_free(J);
	gsl_matrix_free(V);
	gsl_vector_free(S);
	gsl_vector_free(wk);
}

bool validation_fit_model(struct arena *a, const struct validation_model *m,
                          struct validation_fit_result *out)
{
	SL_ASSERT(m->n_figures >= 1 && m->n_figures <= VALIDATION_FIT_MAX);
	int n = m->n_points, p = m->n_figures;
	*out = (struct validation_fit_result){.n_points = n, .n_figures = p};
	out->fit_err_pct = arena_calloc(a, (size_t)n + 1, sizeof *out->fit_err_pct);
	out->weight = arena_calloc(a, (size_t)n + 1, sizeof *out->weight);
	out->cv_err_pct = arena_calloc(a, (size_t)n + 1, sizeof *out->cv_err_pct);
	int *all = arena_calloc(a, (size_t)n + 1, sizeof *all), *train = arena_calloc(a, (size_t)n + 1,
	                                                                             sizeof *train);
	if (!out->fit_err_pct || !out->weight || !out->cv_err_pct || !all || !train)
		return false;
	gsl_set_error_handler_off();
	for (int i = 0; i < n; i++)
		all[i] = i;
	double x[VALIDATION_FIT_MAX];
	for (int j = 0; j < p; j++)
		x[j] = fmin(fmax(m->start[j], m->lo[j]), m->hi[j]);
	out->iterations = solve_into(m, all, n, x, out->weight, &out->robust_scale);
	if (out->iterations < 0) {
		out->why = n < p ? "fewer rows than figures" : "a prediction failed during the fit";
		return true;
	}
	out->ok = true;
	memcpy(out->value, x, sizeof x);
	uncertainty(m, x, out);
	double sum = 0;
	for (int i = 0; i < n; i++) {
		out->fit_err_pct[i] = 100 * rel_err(m, i, x);
		sum += fabs(out->fit_err_pct[i]);
		out->max_pct = fmax(out->max_pct, fabs(out->fit_err_pct[i]));
	}
	out->mape_pct = sum / n;
	out->ill_conditioned = !(out->condition <= VALIDATION_FIT_MAX_COND);
	for (int j = 0; j < p; j++) {
		double w = m->hi[j] - m->lo[j], v = out->covariance[j * p + j];
		out->std_error[j] = v >= 0 ? sqrt(v) : NAN;
		out->at_bound[j] = x[j] - m->lo[j] < 1e-3 * w || m->hi[j] - x[j] < 1e-3 * w;
		out->identifiable[j] = !out->ill_conditioned && !out->at_bound[j] &&
		                       isfinite(out->std_error[j]) &&
		                       out->std_error[j] <= 0.5 * fabs(x[j]);
	}
	/* Cross-validation: leave-one-out, or k folds dealt in row order. */
	int folds = n > VALIDATION_FIT_LOO_MAX ? VALIDATION_FIT_FOLDS : n;
	out->cv_method = folds == n ? "leave-one-out" : "k-fold";
	out->cv_folds = folds;
	double cs = 0, cq = 0, cl = 0;
	for (int f = 0; f < folds; f++) {
		int nt = 0;
		for (int i = 0; i < n; i++)
			if (i % folds != f)
				train[nt++] = i;
		double xf[VALIDATION_FIT_MAX];
		memcpy(xf, x, sizeof xf);
		bool fitted = solve(m, train, nt, xf) >= 0;
		for (int i = f; i < n; i += folds) {
			double e = fitted ? 100 * rel_err(m, i, xf) : NAN;
			out->cv_err_pct[i] = e;
			if (!isfinite(e)) {
				out->cv_failed++;
				continue;
			}
			cs += fabs(e);
			cq += e * e;
			cl += log1p(e / 100) * log1p(e / 100);
			out->cv_max_pct = fmax(out->cv_max_pct, fabs(e));
		}
	}
	int nc = n - out->cv_failed;
	out->cv_mape_pct = nc > 0 ? cs / nc : NAN;
	out->cv_rms_pct = nc > 0 ? sqrt(cq / nc) : NAN;
	/* The spread of ln(predicted / measured), what the prediction
	 * intervals draw (docs/validation.md, "Prediction intervals"): the
	 * held-out residuals are out of sample already, so their mean square
	 * is over nc, not nc - p. */
	out->cv_log_rms = nc > 0 ? sqrt(cl / nc) : NAN;
	/* Held-out coverage: each row against the interval the other rows'
	 * residuals give, with their own degrees of freedom. */
	int dof = nc - 1 - p;
	for (int i = 0; dof >= 1 && i < n; i++) {
		double e = out->cv_err_pct[i];
		if (!isfinite(e))
			continue;
		double r = log1p(e / 100), s = sqrt((cl - r * r) / (nc - 1));
		out->cv_coverable++;
		if (fabs(r) <= gsl_cdf_tdist_Pinv(0.95, dof) * s)
			out->cv_covered++;
	}
	return true;
}

/* ---------------------------------------------------- the training rows */

const char *const validation_loss_names[VALIDATION_LOSS_COUNT] = {"squares", "huber"};

const enum cal_param validation_fit_default[VALIDATION_FIT_DEFAULT_N] = {
	CAL_TRAIN_GEMM_EFFICIENCY, CAL_TRAIN_NIC_EFFICIENCY, CAL_TRAIN_OP_OVERHEAD_US};

/* The bounds a training fit keeps a figure in, and where it starts: the
 * ratios from half to one and a half (a wider move is a mechanism
 * missing, not a figure to fit), the framework's overhead up to 200 us
 * per op and pass (PyTorch's eager dispatch is some 10 us per op: Fernandez
 * et al., "The Framework Tax", EMNLP 2023). */
static void train_bounds(enum cal_param p, double *lo, double *hi, double *start)
{
	switch (p) {
	case CAL_TRAIN_OP_OVERHEAD_US:
		*lo = 0, *hi = 200, *start = 10;
		break;
	case CAL_TRAIN_MOE_OVERHEAD_US:
		*lo = 0, *hi = 5000, *start = 100;
		break;
	default:
		*lo = 0.5, *hi = 1.5, *start = 1;
		break;
	}
}

struct rowctx {
	const struct validation_training_result *res;   /* the fitted rows' base results */
	const int *row;                                  /* point -> index in res */
	const enum cal_param *figures;
	int n_figures;
};

static double predict_row(void *ctx, int i, const double *x)
{
	struct rowctx *c = ctx;
	const struct validation_training_result *r = &c->res[c->row[i]];
	struct arena *a = arena_new();
	double t = a ? cost_plan_time_with(a, r->plan, c->n_figures, c->figures, NULL, x) : NAN;
	arena_free(a);
	return isfinite(t) ? validation_predicted(r->row, t) : NAN;
}

bool validation_fit_training(struct arena *a, const struct validation *v,
                             const struct validation_fit_options *o,
                             struct validation_training_fit *out)
{
	SL_ASSERT(v->kind == VALIDATION_TRAINING);
	SL_ASSERT(o->n_figures >= 1 && o->n_figures <= VALIDATION_FIT_MAX);
	*out = (struct validation_training_fit){.n_figures = o->n_figures, .loss = o->loss};
	memcpy(out->figures, o->figures, sizeof(enum cal_param) * (size_t)o->n_figures);
	out->results = arena_calloc(a, (size_t)v->n_rows + 1, sizeof *out->results);
	out->point_of = arena_calloc(a, (size_t)v->n_rows + 1, sizeof *out->point_of);
	int *row = arena_calloc(a, (size_t)v->n_rows + 1, sizeof *row);
	double *meas = arena_calloc(a, (size_t)v->n_rows + 1, sizeof *meas);
	if (!out->results || !out->point_of || !row || !meas)
		return false;
	struct validation_run_options ro = {.estimate_only = true};
	int n = 0;
	for (int i = 0; i < v->n_rows; i++) {
		if (o->progress)
			o->progress(o->progress_ctx, 0.2 * i / v->n_rows);
		validation_run_training(a, &v->training[i], &ro, &out->results[i]);
		out->point_of[i] = -1;
		if (out->results[i].error)
			continue;
		out->point_of[i] = n;
		row[n] = i;
		meas[n++] = v->training[i].value;
	}
	out->n_rows = v->n_rows;
	struct rowctx c = {.res = out->results, .row = row, .figures = o->figures,
	                   .n_figures = o->n_figures};
	struct validation_model m = {.loss = o->loss, .n_points = n, .n_figures = o->n_figures, .measured = meas,
	                             .predict = predict_row, .ctx = &c};
	for (int j = 0; j < o->n_figures; j++) {
		train_bounds(o->figures[j], &m.lo[j], &m.hi[j], &m.start[j]);
		for (int k = 0; k < n; k++)
			m.hi[j] = fmin(m.hi[j], cost_cal_train_cap(out->results[row[k]].plan->scenario->topo,
			                                  o->figures[j]));
		if (o->figures[j] != CAL_TRAIN_OP_OVERHEAD_US && o->figures[j] != CAL_TRAIN_MOE_OVERHEAD_US)
			m.start[j] = 0.5 * (m.lo[j] + m.hi[j]);  /* 1 on [0.5, 1.5] */
	}
	memcpy(out->lo, m.lo, sizeof m.lo);
	memcpy(out->hi, m.hi, sizeof m.hi);
	if (n == 0) {
		out->fit = (struct validation_fit_result){.why = "no row was estimated"};
		return true;
	}
	return validation_fit_model(a, &m, &out->fit);
}
