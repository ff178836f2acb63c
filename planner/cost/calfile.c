/* calfile.c — calibration files ("format": "shardlab-calibration",
 * docs/formats.md): the loader with a diagnostic FILE:LINE: PATH for every
 * bad field, the writer (a cJSON tree), and the application of a file's
 * figures to a topology.
 *
 * A figure names the one parameter it sets ("device.matmul_efficiency",
 * "tiers.nvswitch.latency_us", "nic.efficiency"); it carries its units
 * (checked against the parameter's, so that a microsecond is never read
 * as a second), its bounds (inside the parameter's physical range, the
 * value inside them), value, standard error, what it was fitted on and its
 * fit's cross-validated error. The fits carry the figures' covariance and
 * the out-of-sample residuals, from which predictions will draw their
 * intervals.
 *
 * Units: as each figure says (fraction, elements, us); topologies hold
 * seconds and bytes/s. Not a hot path.
 */
#include <cjson/cJSON.h>
#include <gsl/gsl_cdf.h>
#include <gsl/gsl_eigen.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cost-int.h"

const char *const cal_param_units[CAL_PARAM_COUNT] = {
	"fraction", "elements", "fraction", "us", "fraction", "us", "fraction", "us",
	"ratio", "ratio", "us", "ratio", "us", "us"};
_Static_assert(CAL_PARAM_COUNT == 14, "cal_param_units out of step");

/* The parameter names after "device.", "tiers.<tier>.", "nic." or "train.". */
static const char *const param_key[CAL_PARAM_COUNT] = {
	"matmul_efficiency", "gemm_half_dim", "memory_efficiency", "kernel_overhead_us",
	"efficiency", "latency_us", "efficiency", "latency_us",
	"gemm_efficiency", "comm_efficiency", "op_overhead_us", "nic_efficiency", "moe_overhead_us",
	NULL};

/* The physical range of each parameter, as a topology file accepts it
 * (docs/formats.md): fractions in (0, 1], latencies up to 1 s; the
 * training ratios in (0, 2] (a rate under load at most twice what the
 * kernels' or links' figures give), the framework's time per op up to
 * 1 ms, per mixture-of-experts layer up to 100 ms. */
static const double phys_lo[CAL_PARAM_COUNT] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
static const double phys_hi[CAL_PARAM_COUNT] = {
	1, TOPO_MAX_GEMM_HALF_DIM, 1, TOPO_MAX_KERNEL_OVERHEAD_US, 1, 1e6, 1, 1e6, 2, 2, 1000, 2,
	1e5, 1e6};
static const bool phys_lo_open[CAL_PARAM_COUNT] = {true, false, true, false, true, false,
                                                   true, false, true, true, false, true,
                                                   false, false};

/* A fit's cross-validated errors, at most: 100 times the measured time
 * (10^4 %), a spread of ln(predicted / measured) of 10 (a factor e^10 =
 * 22026). Past them a fit says nothing, and its intervals overflow to
 * "0-inf s". */
#define CAL_MAX_ERROR_PCT 1e4
#define CAL_MAX_LOG_RMS 10

/* How far below 0 the least eigenvalue of a fit's correlation matrix may
 * be: the files store six significant digits (calibrate --out), an error
 * of 5e-7 relative in each of the three numbers of a correlation, which
 * moves an eigenvalue of six figures' matrix by at most 6 x 1.5e-6. */
#define CAL_PSD_TOLERANCE 1e-5

/* The names in "nccl.<algo>.<proto>.<hw>_us", in the order of
 * topo_collectives.hop_us's indices. */
static const char *const nccl_algos[2] = {"tree", "ring"};
static const char *const nccl_protos[3] = {"ll", "ll128", "simple"};
static const char *const nccl_hws[3] = {"nvlink", "pci", "net"};

static int name_index(const char *s, size_t len, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(s, names[i], len))
			return i;
	return -1;
}

/* "<algo>.<proto>.<hw>" (after "nccl.", with "_us" cut) into hop_us's
 * indices; false when it names none. */
static bool nccl_hop_parse(const char *s, int *hw, int *algo, int *proto)
{
	const char *d1 = strchr(s, '.'), *d2 = d1 ? strchr(d1 + 1, '.') : NULL;
	if (!d2)
		return false;
	*algo = name_index(s, (size_t)(d1 - s), nccl_algos, 2);
	*proto = name_index(d1 + 1, (size_t)(d2 - d1 - 1), nccl_protos, 3);
	*hw = name_index(d2 + 1, strlen(d2 + 1), nccl_hws, 3);
	return *algo >= 0 && *proto >= 0 && *hw >= 0;
}

void cost_cal_param_range(enum cal_param p, double *lo, double *hi, bool *lo_open)
{
	*lo = phys_lo[p];
	*hi = phys_hi[p];
	*lo_open = phys_lo_open[p];
}

int cost_cal_param_parse(struct arena *a, const char *name, const char **tier)
{
	*tier = NULL;
	if (!strncmp(name, "device.", 7)) {
		for (int p = CAL_MATMUL_EFFICIENCY; p <= CAL_KERNEL_OVERHEAD_US; p++)
			if (!strcmp(name + 7, param_key[p]))
				return p;
		return -1;
	}
	if (!strncmp(name, "nic.", 4)) {
		for (int p = CAL_NIC_EFFICIENCY; p <= CAL_NIC_LATENCY_US; p++)
			if (!strcmp(name + 4, param_key[p]))
				return p;
		return -1;
	}
	if (!strncmp(name, "train.", 6)) {
		for (int p = CAL_TRAIN_GEMM_EFFICIENCY; p <= CAL_TRAIN_MOE_OVERHEAD_US; p++)
			if (!strcmp(name + 6, param_key[p]))
				return p;
		return -1;
	}
	if (!strncmp(name, "nccl.", 5)) {
		size_t len = strlen(name);
		int hw, algo, proto;
		if (len < 8 || strcmp(name + len - 3, "_us"))
			return -1;
		char *key = arena_strndup(a, name + 5, len - 8);
		if (!key || !nccl_hop_parse(key, &hw, &algo, &proto))
			return -1;
		*tier = key;
		return CAL_NCCL_HOP_US;
	}
	if (strncmp(name, "tiers.", 6))
		return -1;
	const char *t = name + 6, *dot = strrchr(t, '.');
	if (!dot || dot == t)
		return -1;
	for (int p = CAL_TIER_EFFICIENCY; p <= CAL_TIER_LATENCY_US; p++)
		if (!strcmp(dot + 1, param_key[p])) {
			*tier = arena_strndup(a, t, (size_t)(dot - t));
			return *tier ? p : -1;
		}
	return -1;
}

/* ------------------------------------------------------------ loading */

static bool text(struct arena *a, const struct jv *obj, const char *key, bool required,
                 const char **out)
{
	struct jv v;
	const char *s;
	*out = NULL;
	if (!jv_get(obj, key, &v)) {
		if (required)
			jv_need(obj, key, &v);
		return !required;
	}
	if (!jv_string(&v, &s))
		return false;
	*out = arena_strdup(a, s);
	return *out != NULL;
}

static bool in_range(double x, int p)
{
	return (phys_lo_open[p] ? x > phys_lo[p] : x >= phys_lo[p]) && x <= phys_hi[p];
}

static bool read_figure(struct arena *a, const struct jv *f, struct cal_figure *out)
{
	static const char *const keys[] = {"name", "units", "bounds", "value", "std_error",
	                                   "fitted_on", "cv_error_pct", "fit", NULL};
	*out = (struct cal_figure){.line = f->line, .cv_error_pct = NAN};
	if (!jv_open(f, keys))
		return false;
	bool ok = true;
	struct jv v;
	int p = -1;
	if (jv_get(f, "name", &v))
		out->line = v.line;
	if (text(a, f, "name", true, &out->name) && out->name) {
		p = cost_cal_param_parse(a, out->name, &out->tier);
		if (p < 0) {
			jv_get(f, "name", &v);
			jv_error(&v, "expected a parameter \"device.matmul_efficiency\", "
			         "\"device.gemm_half_dim\", \"device.memory_efficiency\", "
			         "\"device.kernel_overhead_us\", \"tiers.TIER.efficiency\", "
			         "\"tiers.TIER.latency_us\", \"nic.efficiency\", \"nic.latency_us\", "
			         "\"train.gemm_efficiency\", \"train.comm_efficiency\", "
			         "\"train.op_overhead_us\", \"train.nic_efficiency\", "
			         "\"train.moe_overhead_us\" or "
			         "\"nccl.ALGO.PROTO.HW_us\" (ALGO tree or ring, PROTO ll, ll128 or "
			         "simple, HW nvlink, pci or net), got \"%s\"",
			         out->name);
			ok = false;
		}
	} else {
		ok = false;
	}
	out->param = p >= 0 ? (enum cal_param)p : CAL_MATMUL_EFFICIENCY;
	const char *units;
	if (text(a, f, "units", true, &units) && units) {
		if (p >= 0 && strcmp(units, cal_param_units[p])) {
			jv_get(f, "units", &v);
			jv_error(&v, "%s is in \"%s\", got \"%s\"", out->name, cal_param_units[p], units);
			ok = false;
		}
	} else {
		ok = false;
	}
	ok = text(a, f, "fitted_on", true, &out->fitted_on) && ok;
	ok = text(a, f, "fit", false, &out->fit) && ok;
	ok = jv_req_number(f, "std_error", JR_NONNEG, &out->std_error) && ok;
	if (jv_get(f, "cv_error_pct", &v) && !(v.node && cJSON_IsNull(v.node)))
		ok = jv_number(&v, JR_RANGE(0, CAL_MAX_ERROR_PCT), &out->cv_error_pct) && ok;
	struct jv b, b0, b1;
	bool have_bounds = jv_need(f, "bounds", &b) && jv_is_array(&b, 2, 2);
	if (have_bounds) {
		jv_at(&b, 0, &b0);
		jv_at(&b, 1, &b1);
		have_bounds = jv_number(&b0, JR_ANY, &out->lo) & jv_number(&b1, JR_ANY, &out->hi);
	}
	if (have_bounds && p >= 0) {
		if (!in_range(out->lo, p) && !(out->lo == phys_lo[p]) ) {
			jv_error(&b0, "the lower bound %g is outside %s's range %s%g, %g]", out->lo,
			         out->name, phys_lo_open[p] ? "(" : "[", phys_lo[p], phys_hi[p]);
			have_bounds = false;
		} else if (!in_range(out->hi, p)) {
			jv_error(&b1, "the upper bound %g is outside %s's range %s%g, %g]", out->hi,
			         out->name, phys_lo_open[p] ? "(" : "[", phys_lo[p], phys_hi[p]);
			have_bounds = false;
		} else if (out->hi < out->lo) {
			jv_error(&b1, "the upper bound %g is below the lower bound %g", out->hi, out->lo);
			have_bounds = false;
		}
	}
	ok = have_bounds && ok;
	if (jv_req_number(f, "value", JR_ANY, &out->value)) {
		if (have_bounds && p >= 0 && (out->value < out->lo || out->value > out->hi ||
		                              !in_range(out->value, p))) {
			jv_get(f, "value", &v);
			jv_error(&v, "%g is outside the figure's bounds [%g, %g]%s", out->value, out->lo,
			         out->hi, in_range(out->value, p) ? "" : " or the parameter's range");
			ok = false;
		}
	} else {
		ok = false;
	}
	return ok;
}

static int figure_index(const struct calibration *c, const char *name)
{
	for (int i = 0; i < c->n_figures; i++)
		if (c->figures[i].name && !strcmp(c->figures[i].name, name))
			return i;
	return -1;
}

/* Where the fit lists the figure named name; -1 when it does not. */
static int fit_lists(const struct cal_fit *f, const char *name)
{
	if (!name)  /* a figure whose name was refused */
		return -1;
	for (int i = 0; i < f->n_figures; i++)
		if (f->figures[i] && !strcmp(f->figures[i], name))
			return i;
	return -1;
}

/* Whether a fit's n x n covariance (symmetric, diagonal >= 0) is positive
 * semidefinite, to within CAL_PSD_TOLERANCE: false with a diagnostic at
 * v (its covariance) when some combination of the figures would have a
 * negative variance, which an interval's gᵀΣg would then be. Checked on
 * the correlation matrix, whatever the figures' scales (their variances
 * differ by 10^6 in a kernels fit); a pair first, whose correlation
 * beyond ±1 says which figures. *oom true when out of memory. */
static bool covariance_psd(const struct jv *v, const struct cal_fit *fit, bool *oom)
{
	const double *cov = fit->covariance;
	int n = fit->n_figures;
	double r[CAL_FIT_MAX_FIGURES * CAL_FIT_MAX_FIGURES], ev[CAL_FIT_MAX_FIGURES];
	SL_ASSERT(n >= 1 && n <= CAL_FIT_MAX_FIGURES);
	*oom = false;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			double si = sqrt(cov[i * n + i]), sj = sqrt(cov[j * n + j]), cij = cov[i * n + j];
			if (fabs(cij) > si * sj * (1 + CAL_PSD_TOLERANCE)) {
				jv_error(v, "the covariance is not positive semidefinite: %s and %s covary by "
				         "%g, more in size than the product of their standard deviations, "
				         "%.3g", fit->figures[i], fit->figures[j], cij, si * sj);
				return false;
			}
			/* a figure of variance 0 is pinned: its row is 0 */
			r[i * n + j] = si > 0 && sj > 0 ? cij / (si * sj) : i == j;
		}
	gsl_set_error_handler_off();
	gsl_eigen_symm_workspace *w = gsl_eigen_symm_alloc((size_t)n);
	if (!w) {
		*oom = true;
		return false;
	}
	gsl_matrix_view m = gsl_matrix_view_array(r, (size_t)n, (size_t)n);
	gsl_vector_view e = gsl_vector_view_array(ev, (size_t)n);
	int rc = gsl_eigen_symm(&m.matrix, &e.vector, w);
	gsl_eigen_symm_free(w);
	SL_ASSERT(rc == 0);  /* fails only for a matrix not square */
	double least = INFINITY;
	for (int i = 0; i < n; i++)
		least = fmin(least, ev[i]);
	if (least >= -CAL_PSD_TOLERANCE)
		return true;
	jv_error(v, "the covariance is not positive semidefinite: some combination of the "
	         "figures would have a negative variance (its correlation matrix's least "
	         "eigenvalue is %.3g)", least);
	return false;
}

/* A training fit's "runs" (calruns.c): each count a range [lo, hi] of
 * integers >= 1 (the sequence's [0, 0] when not known; ZeRO's stages a
 * list of 0..3), each other setting the list of the values seen, every
 * key present. */
static bool read_runs(const struct jv *o, struct cal_runs *out)
{
	static const char *const keys[CAL_SET_COUNT + 1] = {
	        "devices", "tensor_parallel", "pipeline_stages", "context_parallel",
	        "expert_parallel", "sequence", "zero_stage", "recompute", "compute", "framework",
	        NULL};
	*out = (struct cal_runs){.line = o->line};
	if (!jv_open(o, keys))
		return false;
	bool ok = true;
	struct jv v, e;
	for (int k = 0; k < CAL_SET_COUNT; k++) {
		SL_ASSERT(!strcmp(keys[k], cal_setting_keys[k]));
		if (!jv_need(o, keys[k], &v)) {
			ok = false;
			continue;
		}
		if (k < CAL_SET_RANGES) {
			int64_t r[2] = {0, 0};
			if (!jv_is_array(&v, 2, 2)) {
				ok = false;
				continue;
			}
			int i = 0;
			bool good = true;
			/* a sequence of [0, 0]: no fitted row's was known */
			double least = k == CAL_SET_SEQ ? 0 : 1;
			for (bool more = jv_first(&v, &e); more; more = jv_next(&v, &e), i++)
				good = jv_int(&e, JR_RANGE(least, 1e12), &r[i]) && good;
			if (good && k == CAL_SET_SEQ && r[0] == 0 && r[1] != 0) {
				jv_error(&v, "a sequence range starts at 1 ([0, 0]: not known)");
				good = false;
			}
			if (good && r[0] > r[1]) {
				jv_error(&v, "the range's low end %lld is above its high end %lld",
				         (long long)r[0], (long long)r[1]);
				good = false;
			}
			out->lo[k] = r[0];
			out->hi[k] = r[1];
			ok = good && ok;
			continue;
		}
		if (!jv_is_array(&v, 1, 16)) {
			ok = false;
			continue;
		}
		for (bool more = jv_first(&v, &e); more; more = jv_next(&v, &e)) {
			int64_t x = -1;
			if (k == CAL_SET_ZERO)
				ok = jv_int(&e, JR_RANGE(0, 3), &x) && ok;
			else if (k == CAL_SET_RECOMPUTE)
				x = jv_enum(&e, recompute_names, RECOMPUTE_COUNT);
			else if (k == CAL_SET_COMPUTE)
				x = jv_enum(&e, cal_compute_names, CAL_COMPUTE_COUNT);
			else
				x = jv_enum(&e, framework_names, FRAMEWORK_COUNT);
			if (x < 0) {
				ok = false;
				continue;
			}
			out->seen[k] |= 1u << x;
		}
	}
	out->have = ok;
	return ok;
}

static bool read_fit(struct arena *a, const struct calibration *c, const struct jv *f,
                     struct cal_fit *out)
{
	static const char *const keys[] = {"name", "kind", "fitted_on", "points", "loss",
	                                   "figures", "covariance", "cv", "transferred_from",
	                                   "runs", NULL};
	static const char *const from_keys[] = {"calibration", "device", NULL};
	static const char *const losses[] = {"squares", "huber"};
	static const char *const cv_keys[] = {"method", "folds", "mape_pct", "rms_pct", "log_rms",
	                                      NULL};
	static const char *const kinds[] = {"kernels", "collectives", "training"};
	static const char *const methods[] = {"leave-one-out", "k-fold"};
	*out = (struct cal_fit){.line = f->line};
	if (!jv_open(f, keys))
		return false;
	bool ok = true;
	ok = text(a, f, "name", true, &out->name) && ok;
	ok = text(a, f, "fitted_on", true, &out->fitted_on) && ok;
	struct jv v, cv, e, row, x;
	if (jv_need(f, "kind", &v)) {
		int k = jv_enum(&v, kinds, 3);
		out->kind = k >= 0 ? kinds[k] : NULL;
		ok = k >= 0 && ok;
	} else {
		ok = false;
	}
	out->loss = losses[0];
	if (jv_get(f, "loss", &v)) {
		int k = jv_enum(&v, losses, 2);
		out->loss = k >= 0 ? losses[k] : NULL;
		ok = k >= 0 && ok;
	}
	int64_t points = 0;
	bool have_points = jv_req_int(f, "points", JR_RANGE(1, 1e9), &points);
	ok = have_points && ok;
	out->points = (int)points;
	if (jv_need(f, "cv", &cv) && jv_open(&cv, cv_keys)) {
		int m = -1;
		if (jv_need(&cv, "method", &v))
			m = jv_enum(&v, methods, 2);
		out->cv_method = m >= 0 ? methods[m] : NULL;
		ok = m >= 0 && ok;
		int64_t folds = 0;
		bool have_folds = jv_req_int(&cv, "folds", JR_RANGE(2, 1e9), &folds);
		ok = have_folds && ok;
		out->cv_folds = (int)folds;
		if (have_folds && have_points && folds > points) {
			jv_get(&cv, "folds", &v);
			jv_error(&v, "%lld folds of %lld points", (long long)folds, (long long)points);
			ok = false;
		}
		/* Errors of up to 100 times the measured time (10^4 %), a log
		 * spread up to 10 (a factor e^10 = 22026): past them a fit says
		 * nothing, and its intervals overflow to "0-inf s". */
		ok = jv_req_number(&cv, "mape_pct", JR_RANGE(0, CAL_MAX_ERROR_PCT),
		                   &out->cv_mape_pct) && ok;
		ok = jv_req_number(&cv, "rms_pct", JR_RANGE(0, CAL_MAX_ERROR_PCT),
		                   &out->cv_rms_pct) && ok;
		ok = jv_opt_number(&cv, "log_rms", JR_RANGE(0, CAL_MAX_LOG_RMS), NAN,
		                   &out->cv_log_rms) && ok;
	} else {
		ok = false;
	}
	struct jv from;
	if (jv_get(f, "transferred_from", &from)) {
		if (jv_open(&from, from_keys)) {
			ok = text(a, &from, "calibration", true, &out->from_calibration) && ok;
			ok = text(a, &from, "device", false, &out->from_device) && ok;
		} else {
			ok = false;
		}
	}
	struct jv runs;
	if (jv_get(f, "runs", &runs)) {
		if (out->kind && strcmp(out->kind, "training")) {
			jv_error(&runs, "only a training fit has runs (this one is \"%s\")", out->kind);
			ok = false;
		} else {
			ok = read_runs(&runs, &out->runs) && ok;
		}
	}
	struct jv figs;
	if (!jv_need(f, "figures", &figs) || !jv_is_array(&figs, 1, CAL_FIT_MAX_FIGURES))
		return false;
	int n = out->n_figures = jv_len(&figs);
	out->figures = arena_calloc(a, (size_t)n, sizeof *out->figures);
	out->covariance = arena_calloc(a, (size_t)(n * n), sizeof *out->covariance);
	if (!out->figures || !out->covariance)
		return false;
	int i = 0;
	for (bool more = jv_first(&figs, &e); more; more = jv_next(&figs, &e), i++) {
		const char *name;
		if (!jv_string(&e, &name)) {
			ok = false;
			continue;
		}
		out->figures[i] = arena_strdup(a, name);
		int twice = 0;
		while (twice < i && !(out->figures[twice] && !strcmp(out->figures[twice], name)))
			twice++;
		if (twice < i) {  /* its row of the covariance would be given twice */
			jv_error(&e, "\"%s\" is named twice (first at figures[%d])", name, twice);
			ok = false;
		} else if (figure_index(c, name) < 0) {
			jv_error(&e, "no figure is named \"%s\"", name);
			ok = false;
		}
	}
	if (!jv_need(f, "covariance", &v) || !jv_is_array(&v, n, n))
		return false;
	bool numbers = true;
	i = 0;
	for (bool more = jv_first(&v, &row); more; more = jv_next(&v, &row), i++) {
		if (!jv_is_array(&row, n, n)) {
			numbers = false;
			continue;
		}
		int j = 0;
		for (bool m2 = jv_first(&row, &x); m2; m2 = jv_next(&row, &x), j++) {
			double *cij = &out->covariance[i * n + j];
			if (!jv_number(&x, i == j ? JR_NONNEG : JR_ANY, cij)) {
				numbers = false;
				continue;
			}
			/* a spread wider than the parameter's whole range says
			 * nothing of it (and 1e308 overflows the interval) */
			int fi = i == j && out->figures[i] ? figure_index(c, out->figures[i]) : -1;
			const char *tier;
			if (fi < 0 || cost_cal_param_parse(a, out->figures[i], &tier) < 0)
				continue;
			const struct cal_figure *fg = &c->figures[fi];
			double width = phys_hi[fg->param] - phys_lo[fg->param];
			if (*cij > width * width) {
				jv_error(&x, "a variance of %g (a standard deviation of %g) is wider than "
				         "%s's whole range %s%g, %g]", *cij, sqrt(*cij), fg->name,
				         phys_lo_open[fg->param] ? "(" : "[", phys_lo[fg->param],
				         phys_hi[fg->param]);
				numbers = false;
			}
		}
	}
	ok = numbers && ok;
	bool symmetric = numbers;
	for (int r = 0; numbers && r < n; r++)
		for (int k = 0; k < r; k++) {
			double p = out->covariance[r * n + k], q = out->covariance[k * n + r];
			if (fabs(p - q) > 1e-9 * fmax(fabs(p), fabs(q))) {
				jv_at(&v, r, &row);
				jv_at(&row, k, &x);
				jv_error(&x, "the covariance is not symmetric: %g here, %g at [%d][%d]", p, q,
				         k, r);
				ok = symmetric = false;
			}
		}
	bool oom;
	if (symmetric && !covariance_psd(&v, out, &oom)) {
		if (oom)
			return false;
		ok = false;
	}
	return ok;
}

/* What a training ratio over its cap would run too fast, by param from
 * CAL_TRAIN_GEMM_EFFICIENCY. */
static const char *const ratio_what[] = {"GEMMs", "links", NULL, "the NICs"};
_Static_assert(CAL_TRAIN_NIC_EFFICIENCY - CAL_TRAIN_GEMM_EFFICIENCY == 3 &&
               CAL_TRAIN_COMM_EFFICIENCY - CAL_TRAIN_GEMM_EFFICIENCY == 1,
               "ratio_what out of step");

/* Each training ratio against the device or link figures the file itself
 * carries: a GEMM ratio at most 1 / device.matmul_efficiency, the NICs'
 * at most 1 / nic.efficiency, the links' at most 1 / every link's
 * efficiency (cost_cal_train_cap's caps, which applying the file checks
 * again on the topology, whose FP8 rate or other links may lower them).
 * False with a diagnostic at the ratio's value. */
static bool ratios_physical(const struct calibration *c, const struct jv *figs)
{
	bool ok = true;
	for (int i = 0; i < c->n_figures; i++) {
		const struct cal_figure *f = &c->figures[i];
		enum cal_param p = f->param;
		if (p != CAL_TRAIN_GEMM_EFFICIENCY && p != CAL_TRAIN_COMM_EFFICIENCY &&
		    p != CAL_TRAIN_NIC_EFFICIENCY)
			continue;
		int k = -1;
		for (int j = 0; j < c->n_figures; j++) {
			const struct cal_figure *d = &c->figures[j];
			bool caps = p == CAL_TRAIN_GEMM_EFFICIENCY ? d->param == CAL_MATMUL_EFFICIENCY
			            : p == CAL_TRAIN_NIC_EFFICIENCY ? d->param == CAL_NIC_EFFICIENCY
			            : d->param == CAL_NIC_EFFICIENCY || d->param == CAL_TIER_EFFICIENCY;
			if (caps && (k < 0 || d->value > c->figures[k].value))
				k = j;  /* the tightest cap */
		}
		const struct cal_figure *d = k >= 0 ? &c->figures[k] : NULL;
		if (!d || !(f->value * d->value > 1 + 1e-12))
			continue;
		struct jv fe, v;
		jv_at(figs, i, &fe);
		jv_get(&fe, "value", &v);
		jv_error(&v, "%s %.4g is above its physical cap, 1 / %s %.4g (figures[%d]) = %.4g: "
		         "%s at %.3g times %s", f->name, f->value, d->name, d->value, k, 1 / d->value,
		         ratio_what[p - CAL_TRAIN_GEMM_EFFICIENCY], f->value * d->value,
		         p == CAL_TRAIN_GEMM_EFFICIENCY ? "the device's peak" : "their line rate");
		ok = false;
	}
	return ok;
}

/* "also_for": the device kinds besides "device" that the figures hold for,
 * each named once; it needs "device". */
static bool read_also_for(struct arena *a, const struct jv *root, struct calibration *c)
{
	struct jv arr, e;
	if (!jv_get(root, "also_for", &arr))
		return true;
	if (!jv_is_array(&arr, 1, 64))
		return false;
	if (!c->device) {
		jv_error(&arr, "needs \"device\", the kind the calibration was fitted on");
		return false;
	}
	c->also_for = arena_calloc(a, (size_t)jv_len(&arr), sizeof *c->also_for);
	if (!c->also_for)
		return false;
	bool ok = true;
	for (bool more = jv_first(&arr, &e); more; more = jv_next(&arr, &e)) {
		const char *k;
		if (!jv_string(&e, &k)) {
			ok = false;
			continue;
		}
		bool twice = !strcmp(k, c->device);
		for (int j = 0; j < c->n_also_for && !twice; j++)
			twice = !strcmp(k, c->also_for[j]);
		if (twice) {  /* jv_string refuses an empty one */
			jv_error(&e, "\"%s\" is named already (device or also_for)", k);
			ok = false;
			continue;
		}
		c->also_for[c->n_also_for++] = arena_strdup(a, k);
	}
	return ok;
}

struct calibration *cost_calibration_load_doc(struct arena *a, struct json_doc *doc)
{
	static const char *const keys[] = {"format", "version", "name", "description", "device",
	                                   "also_for", "figures", "fits", NULL};
	struct jv root, figs, fits, e;
	if (!jv_root(doc, &root) || !jv_header(&root, CALIBRATION_FORMAT, CALIBRATION_VERSION))
		return NULL;
	size_t before = doc->diags->errors;
	struct calibration *c = arena_calloc(a, 1, sizeof *c);
	if (!c)
		return NULL;
	c->file = arena_strdup(a, doc->file);
	bool ok = jv_keys(&root, keys);
	ok = text(a, &root, "name", true, &c->name) && ok;
	ok = text(a, &root, "description", false, &c->description) && ok;
	ok = text(a, &root, "device", false, &c->device) && ok;
	struct jv dv;
	if (jv_get(&root, "device", &dv))
		c->device_line = dv.line;
	ok = read_also_for(a, &root, c) && ok;
	if (!jv_need(&root, "figures", &figs) || !jv_is_array(&figs, 1, 4096))
		return NULL;
	c->n_figures = jv_len(&figs);
	c->figures = arena_calloc(a, (size_t)c->n_figures, sizeof *c->figures);
	if (!c->figures)
		return NULL;
	int i = 0;
	for (bool more = jv_first(&figs, &e); more; more = jv_next(&figs, &e), i++) {
		ok = read_figure(a, &e, &c->figures[i]) && ok;
		int j = c->figures[i].name ? figure_index(c, c->figures[i].name) : i;
		if (j >= 0 && j < i) {
			struct jv v;
			jv_get(&e, "name", &v);
			jv_error(&v, "the figure \"%s\" is given twice (first in figures[%d]): one value "
			         "per parameter", c->figures[i].name, j);
			ok = false;
		}
	}
	if (jv_get(&root, "fits", &fits)) {
		if (!jv_is_array(&fits, 0, 4096))
			return NULL;
		c->n_fits = jv_len(&fits);
		c->fits = arena_calloc(a, (size_t)c->n_fits + 1, sizeof *c->fits);
		if (!c->fits)
			return NULL;
		i = 0;
		int dense = -1, moe = -1;
		for (bool more = jv_first(&fits, &e); more; more = jv_next(&fits, &e), i++) {
			ok = read_fit(a, c, &e, &c->fits[i]) && ok;
			const struct cal_fit *f = &c->fits[i];
			struct jv v;
			/* a figure's "fit" names one */
			for (int j = 0; f->name && j < i; j++)
				if (c->fits[j].name && !strcmp(c->fits[j].name, f->name)) {
					jv_get(&e, "name", &v);
					jv_error(&v, "the fit \"%s\" is given twice (first in fits[%d]): one "
					         "name per fit", f->name, j);
					ok = false;
					break;
				}
			/* An interval takes its residual spread from one training
			 * fit (a MoE model's from the fit of its MoE figure): a
			 * second would be silently ignored. */
			if (!f->kind || strcmp(f->kind, "training"))
				continue;
			bool moe_only = f->n_figures == 1 && f->figures[0] &&
			                !strcmp(f->figures[0], "train.moe_overhead_us");
			int *first = moe_only ? &moe : &dense;
			if (*first < 0) {
				*first = i;
				continue;
			}
			jv_get(&e, "kind", &v);
			jv_error(&v, "%s (the first is fits[%d]): a calibration holds one training fit "
			         "and one of train.moe_overhead_us alone", moe_only ?
			         "a second training fit of train.moe_overhead_us alone" :
			         "a second training fit", *first);
			ok = false;
		}
	}
	/* A figure's fit is one of the file's, and lists it; no other fit does. */
	for (i = 0; i < c->n_figures; i++) {
		const struct cal_figure *f = &c->figures[i];
		int k = 0;
		while (f->fit && k < c->n_fits && (!c->fits[k].name || strcmp(c->fits[k].name, f->fit)))
			k++;
		struct jv fe, v;
		jv_at(&figs, i, &fe);
		if (f->fit && k == c->n_fits) {
			jv_get(&fe, "fit", &v);
			jv_error(&v, "no fit is named \"%s\"", f->fit);
			ok = false;
		} else if (f->fit && f->name && c->fits[k].n_figures > 0 &&
		           fit_lists(&c->fits[k], f->name) < 0) {
			jv_get(&fe, "fit", &v);
			jv_error(&v, "the fit \"%s\" (fits[%d]) does not list %s", f->fit, k, f->name);
			ok = false;
		}
		for (int j = 0; f->fit && f->name && j < c->n_fits; j++) {
			int m = fit_lists(&c->fits[j], f->name);
			if (j == k || m < 0)
				continue;
			struct jv fj, arr, x;
			jv_at(&fits, j, &fj);
			jv_get(&fj, "figures", &arr);
			jv_at(&arr, m, &x);
			jv_error(&x, "%s is of the fit \"%s\" (figures[%d].fit), not of this one",
			         f->name, f->fit, i);
			ok = false;
		}
	}
	/* on figures read whole: a bad name's param is a stand-in */
	if (ok && doc->diags->errors == before)
		ok = ratios_physical(c, &figs);
	return ok && doc->diags->errors == before ? c : NULL;
}

struct calibration *cost_calibration_load(struct arena *a, const char *path,
                                          struct diag_list *diags)
{
	struct json_doc doc;
	struct calibration *c = NULL;
	if (json_doc_load(&doc, path, diags))
		c = cost_calibration_load_doc(a, &doc);
	json_doc_free(&doc);
	return c;
}

/* ------------------------------------------------------------ applying */

static struct topo_tier *tier_named(struct topology *t, const char *name)
{
	for (int i = 0; i < t->n_tiers; i++)
		if (!strcmp(t->tiers[i].name, name))
			return &t->tiers[i];
	return NULL;
}

/* A ratio the topology holds as 0 when none was applied. */
static double ratio_or_1(double r)
{
	return r > 0 ? r : 1;
}

/* Every bandwidth the collectives read, scaled by k. */
static void scale_links(struct topology *t, double k)
{
	for (int i = 0; i < t->n_tiers; i++) {
		t->tiers[i].bandwidth_bps *= k;
		t->tiers[i].shared_bps *= k;
	}
	t->nic.bandwidth_bps *= k;
	for (int i = 0; i < 2; i++)
		t->coll.tree_max_busbw_bps[i] *= k;
	for (int i = 0; i < 3; i++)
		t->coll.ll_max_busbw_bps[i] *= k;
}

void cost_cal_set(struct topology *t, enum cal_param p, const char *tier, double value)
{
	struct topo_tier *tr = tier ? tier_named(t, tier) : NULL;
	double gemm = ratio_or_1(t->train.gemm_efficiency);
	double comm = ratio_or_1(t->train.comm_efficiency);
	switch (p) {
	case CAL_MATMUL_EFFICIENCY:
		t->device.matmul_efficiency = value * gemm;
		break;
	case CAL_GEMM_HALF_DIM:
		t->device.gemm_half_dim = value;
		break;
	case CAL_MEMORY_EFFICIENCY:
		t->device.memory_efficiency = value;
		break;
	case CAL_KERNEL_OVERHEAD_US:
		t->device.kernel_overhead_s = value * 1e-6 + t->train.op_overhead_s;
		break;
	case CAL_TIER_EFFICIENCY:
		SL_ASSERT(tr);
		tr->bandwidth_bps = tr->bandwidth_bps / tr->efficiency * value;
		tr->efficiency = value;
		break;
	case CAL_TIER_LATENCY_US:
		SL_ASSERT(tr);
		tr->latency_s = value * 1e-6;
		break;
	case CAL_NIC_EFFICIENCY:  /* the training ratios stay in the bandwidth */
		t->nic.bandwidth_bps = t->nic.bandwidth_bps / t->nic.efficiency * value;
		t->nic.efficiency = value;
		break;
	case CAL_NIC_LATENCY_US:
		t->nic.latency_s = value * 1e-6;
		break;
	case CAL_TRAIN_GEMM_EFFICIENCY:  /* every GEMM, bf16 and FP8: the clocks under a
	                                    full board's power and the SMs the
	                                    collectives take slow both */
		t->device.matmul_efficiency = t->device.matmul_efficiency / gemm * value;
		t->device.fp8_matmul_efficiency = t->device.fp8_matmul_efficiency / gemm * value;
		t->train.gemm_efficiency = value;
		break;
	case CAL_TRAIN_COMM_EFFICIENCY:
		scale_links(t, value / comm);
		t->train.comm_efficiency = value;
		break;
	case CAL_TRAIN_OP_OVERHEAD_US:
		t->device.kernel_overhead_s += value * 1e-6 - t->train.op_overhead_s;
		t->train.op_overhead_s = value * 1e-6;
		break;
	case CAL_TRAIN_NIC_EFFICIENCY:
		t->nic.bandwidth_bps = t->nic.bandwidth_bps / ratio_or_1(t->train.nic_efficiency) * value;
		t->train.nic_efficiency = value;
		break;
	case CAL_TRAIN_MOE_OVERHEAD_US:
		t->train.moe_overhead_s = value * 1e-6;
		break;
	case CAL_NCCL_HOP_US: {
		int hw, algo, proto;
		SL_ASSERT(tier && nccl_hop_parse(tier, &hw, &algo, &proto));
		t->coll.hop_us[hw][algo][proto] = value;
		t->coll.hop_set |= TOPO_NCCL_HOP_BIT(hw, algo, proto);
		break;
	}
	case CAL_PARAM_COUNT:
		break;
	}
}

double cost_cal_train_cap(const struct topology *t, enum cal_param p)
{
	double cap = INFINITY;
	switch (p) {
	case CAL_TRAIN_GEMM_EFFICIENCY: {
		/* bf16 and, where the device has an FP8 rate, FP8 GEMMs alike */
		double gemm = ratio_or_1(t->train.gemm_efficiency);
		double e = t->device.matmul_efficiency / gemm;
		double e8 = t->device.peak_fp8_flops > 0 ? t->device.fp8_matmul_efficiency / gemm : 0;
		if (e8 > e)
			e = e8;
		if (e > 0)
			cap = 1 / e;
		break;
	}
	case CAL_TRAIN_COMM_EFFICIENCY:
	case CAL_TRAIN_NIC_EFFICIENCY:
		for (int i = 0; p == CAL_TRAIN_COMM_EFFICIENCY && i < t->n_tiers; i++)
			if (t->tiers[i].efficiency > 0)
				cap = fmin(cap, 1 / t->tiers[i].efficiency);
		if (t->nic.per_server > 0 && t->nic.efficiency > 0)
			cap = fmin(cap, 1 / t->nic.efficiency);
		break;
	default:
		break;
	}
	return cap;
}

double cost_cal_get(const struct topology *t, enum cal_param p, const char *tier)
{
	const struct topo_tier *tr = NULL;
	for (int i = 0; tier && i < t->n_tiers; i++)
		if (!strcmp(t->tiers[i].name, tier))
			tr = &t->tiers[i];
	int hw, algo, proto;
	switch (p) {
	case CAL_TIER_EFFICIENCY:
		return tr ? tr->efficiency : NAN;
	case CAL_TIER_LATENCY_US:
		return tr ? tr->latency_s * 1e6 : NAN;
	case CAL_NIC_EFFICIENCY:
		return t->nic.efficiency;
	case CAL_NIC_LATENCY_US:
		return t->nic.latency_s * 1e6;
	case CAL_NCCL_HOP_US:
		return tier && nccl_hop_parse(tier, &hw, &algo, &proto)
		               ? cost_nccl_hop_us(t, hw, algo, proto)
		               : NAN;
	default:
		return NAN;
	}
}

bool cost_calibration_apply(const struct calibration *c, struct topology *t,
                            struct diag_list *diags)
{
	bool ok = true;
	if (t->device.kind && !cost_calibration_holds_for(c, t->device.kind)) {
		char also[512] = "";
		for (int i = 0, n = 0; i < c->n_also_for && n >= 0 && (size_t)n < sizeof also; i++)
			n += snprintf(also + n, sizeof also - (size_t)n, "%s\"%s\"",
			              i == 0 ? " (and holds for " : ", ", c->also_for[i]);
		if (c->n_also_for && strlen(also) + 2 < sizeof also)
			strcat(also, ")");
		diag_add(diags, DIAG_ERROR, c->file, c->device_line, "device",
		         "the calibration was fitted on \"%s\"%s, the topology %s has \"%s\"", c->device,
		         also, t->name, t->device.kind);
		return false;
	}
	for (int i = 0; i < c->n_figures; i++) {
		const struct cal_figure *f = &c->figures[i];
		char path[32];
		snprintf(path, sizeof path, "figures[%d].name", i);
		if ((f->param == CAL_TIER_EFFICIENCY || f->param == CAL_TIER_LATENCY_US) &&
		    !tier_named(t, f->tier)) {
			char names[256] = "";
			for (int k = 0; k < t->n_tiers; k++)
				snprintf(names + strlen(names), sizeof names - strlen(names), "%s\"%s\"",
				         k ? ", " : "", t->tiers[k].name);
			diag_add(diags, DIAG_ERROR, c->file, f->line, path,
			         "the topology %s has no tier \"%s\" (its tiers: %s)", t->name, f->tier,
			         t->n_tiers ? names : "none");
			ok = false;
		}
		if ((f->param == CAL_NIC_EFFICIENCY || f->param == CAL_NIC_LATENCY_US) &&
		    t->nic.per_server <= 0) {
			diag_add(diags, DIAG_ERROR, c->file, f->line, path,
			         "the topology %s has no NICs", t->name);
			ok = false;
		}
		if (f->param == CAL_NCCL_HOP_US && t->coll.library != TOPO_COLL_NCCL) {
			diag_add(diags, DIAG_ERROR, c->file, f->line, path,
			         "%s is a latency of NCCL's; the topology %s's library is \"%s\"", f->name,
			         t->name, topo_coll_library_names[t->coll.library]);
			ok = false;
		}
	}
	if (!ok)
		return false;
	/* The training ratios against their caps on this topology with the
	 * file's own figures set (calibrate --runs fits and --transfer
	 * carries them under the same caps): a GEMM ratio over 1 /
	 * matmul_efficiency would run GEMMs above the device's peak. */
	struct topology probe = *t;
	for (int i = 0; i < c->n_figures; i++)
		cost_cal_set(&probe, c->figures[i].param, c->figures[i].tier, c->figures[i].value);
	for (int i = 0; i < c->n_figures; i++) {
		const struct cal_figure *f = &c->figures[i];
		double cap = cost_cal_train_cap(&probe, f->param);
		if (!(f->value > cap * (1 + 1e-12)))
			continue;
		char path[32];
		snprintf(path, sizeof path, "figures[%d].value", i);
		diag_add(diags, DIAG_ERROR, c->file, f->line, path,
		         "%s %.4g is above its physical cap on the %s of %s, %.4g: %s at %.3g times "
		         "%s", f->name, f->value, t->device.kind ? t->device.kind : "device", t->name,
		         cap, ratio_what[f->param - CAL_TRAIN_GEMM_EFFICIENCY], f->value / cap,
		         f->param == CAL_TRAIN_GEMM_EFFICIENCY ? "the device's peak" : "their line rate");
		ok = false;
	}
	if (!ok)
		return false;
	*t = probe;
	t->calibration = c;
	return true;
}

bool cost_calibration_holds_for(const struct calibration *c, const char *kind)
{
	if (!c->device || !strcmp(c->device, kind))
		return true;
	for (int i = 0; i < c->n_also_for; i++)
		if (!strcmp(c->also_for[i], kind))
			return true;
	return false;
}

/* ------------------------------------------------------------ writing */

cJSON *cost_cal_fit_transfer_json(const struct cal_fit *f)
{
	if (!f->from_calibration)
		return NULL;
	cJSON *from = cJSON_CreateObject();
	cJSON_AddStringToObject(from, "calibration", f->from_calibration);
	if (f->from_device)
		cJSON_AddStringToObject(from, "device", f->from_device);
	return from;
}

/* A fitted figure as the file stores it: six significant digits. A fit's
 * last digits depend on the BLAS kernels the machine runs (OpenBLAS picks
 * them per CPU), so the same measurements gave files that differed in the
 * tenth digit from one machine to another; six are far inside any
 * figure's standard error and make the file, and every output priced
 * with it, the same everywhere. */
static double stored(double v)
{
	if (!isfinite(v) || v == 0)
		return v;
	char b[32];
	snprintf(b, sizeof b, "%.6g", v);
	return strtod(b, NULL);
}

/* A figure's value stored, kept inside its bounds (a value at a bound
 * stays the bound, which the reader holds it to). */
static double stored_in(double v, double lo, double hi)
{
	double r = stored(v);
	return r < lo ? lo : r > hi ? hi : r;
}

static cJSON *stored_array(const double *v, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; a && i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(stored(v[i])));
	return a;
}

cJSON *cost_cal_runs_json(const struct cal_runs *r)
{
	cJSON *o = cJSON_CreateObject();
	for (int k = 0; k < CAL_SET_COUNT; k++) {
		cJSON *a = cJSON_AddArrayToObject(o, cal_setting_keys[k]);
		if (k < CAL_SET_RANGES) {
			cJSON_AddItemToArray(a, cJSON_CreateNumber((double)r->lo[k]));
			cJSON_AddItemToArray(a, cJSON_CreateNumber((double)r->hi[k]));
			continue;
		}
		for (int v = 0; v < 32; v++) {
			if (!(r->seen[k] >> v & 1))
				continue;
			if (k == CAL_SET_ZERO)
				cJSON_AddItemToArray(a, cJSON_CreateNumber(v));
			else
				cJSON_AddItemToArray(a, cJSON_CreateString(
				        k == CAL_SET_RECOMPUTE ? recompute_names[v]
				        : k == CAL_SET_COMPUTE ? cal_compute_names[v]
				                               : framework_names[v]));
		}
	}
	return o;
}

cJSON *cost_calibration_json(const struct calibration *c)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "format", CALIBRATION_FORMAT);
	cJSON_AddNumberToObject(root, "version", CALIBRATION_VERSION);
	cJSON_AddStringToObject(root, "name", c->name);
	if (c->description)
		cJSON_AddStringToObject(root, "description", c->description);
	if (c->device)
		cJSON_AddStringToObject(root, "device", c->device);
	if (c->device && c->n_also_for)
		cJSON_AddItemToObject(root, "also_for",
		                      cJSON_CreateStringArray(c->also_for, c->n_also_for));
	cJSON *figs = cJSON_AddArrayToObject(root, "figures");
	for (int i = 0; i < c->n_figures; i++) {
		const struct cal_figure *f = &c->figures[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", f->name);
		cJSON_AddStringToObject(o, "units", cal_param_units[f->param]);
		double b[2] = {f->lo, f->hi};
		cJSON_AddItemToObject(o, "bounds", cJSON_CreateDoubleArray(b, 2));
		cJSON_AddNumberToObject(o, "value", stored_in(f->value, f->lo, f->hi));
		cJSON_AddNumberToObject(o, "std_error", stored(f->std_error));
		cJSON_AddStringToObject(o, "fitted_on", f->fitted_on);
		if (isfinite(f->cv_error_pct))
			cJSON_AddNumberToObject(o, "cv_error_pct", stored(f->cv_error_pct));
		else
			cJSON_AddNullToObject(o, "cv_error_pct");
		if (f->fit)
			cJSON_AddStringToObject(o, "fit", f->fit);
		cJSON_AddItemToArray(figs, o);
	}
	if (c->n_fits == 0)
		return root;
	cJSON *fits = cJSON_AddArrayToObject(root, "fits");
	for (int i = 0; i < c->n_fits; i++) {
		const struct cal_fit *f = &c->fits[i];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", f->name);
		cJSON_AddStringToObject(o, "kind", f->kind);
		cJSON_AddStringToObject(o, "fitted_on", f->fitted_on);
		cJSON_AddNumberToObject(o, "points", f->points);
		if (f->loss && strcmp(f->loss, "squares"))
			cJSON_AddStringToObject(o, "loss", f->loss);
		cJSON_AddItemToObject(o, "figures", cJSON_CreateStringArray(f->figures, f->n_figures));
		cJSON *cov = cJSON_AddArrayToObject(o, "covariance");
		for (int r = 0; r < f->n_figures; r++)
			cJSON_AddItemToArray(cov, stored_array(f->covariance + r * f->n_figures, f->n_figures));
		cJSON *cv = cJSON_AddObjectToObject(o, "cv");
		cJSON_AddStringToObject(cv, "method", f->cv_method);
		cJSON_AddNumberToObject(cv, "folds", f->cv_folds);
		cJSON_AddNumberToObject(cv, "mape_pct", stored(f->cv_mape_pct));
		cJSON_AddNumberToObject(cv, "rms_pct", stored(f->cv_rms_pct));
		if (isfinite(f->cv_log_rms))
			cJSON_AddNumberToObject(cv, "log_rms", stored(f->cv_log_rms));
		if (f->from_calibration)
			cJSON_AddItemToObject(o, "transferred_from", cost_cal_fit_transfer_json(f));
		if (f->runs.have)
			cJSON_AddItemToObject(o, "runs", cost_cal_runs_json(&f->runs));
		cJSON_AddItemToArray(fits, o);
	}
	return root;
}

/* ---------------------------------------------------- prediction intervals */

bool cost_cal_fit_is_moe(const struct cal_fit *f)
{
	for (int i = 0; f && i < f->n_figures; i++)
		if (f->figures[i] && !strcmp(f->figures[i], "train.moe_overhead_us"))
			return true;
	return false;
}

bool cost_graph_has_moe(const struct graph *g)
{
	for (int i = 0; g && i < g->n_ops; i++)
		if (g->ops[i].kind == OP_MOEDISPATCH)
			return true;
	return false;
}

const struct cal_fit *cost_calibration_training_fit_for(const struct calibration *c, bool moe)
{
	const struct cal_fit *first = NULL, *dense = NULL, *m = NULL;
	for (int i = 0; c && i < c->n_fits; i++) {
		const struct cal_fit *f = &c->fits[i];
		if (!f->kind || strcmp(f->kind, "training"))
			continue;
		if (!first)
			first = f;
		if (cost_cal_fit_is_moe(f))
			m = m ? m : f;
		else
			dense = dense ? dense : f;
	}
	return moe && m ? m : dense ? dense : first;
}

const struct cal_fit *cost_calibration_training_fit(const struct calibration *c)
{
	return cost_calibration_training_fit_for(c, false);
}

double cost_plan_time_with(struct arena *a, const struct plan *p, int n,
                           const enum cal_param *params, const char *const *tiers,
                           const double *values)
{
	struct topology *t = arena_alloc(a, sizeof *t);
	struct scenario *s = arena_alloc(a, sizeof *s);
	struct plan *q = arena_alloc(a, sizeof *q);
	struct estimate *e = arena_calloc(a, 1, sizeof *e);
	if (!t || !s || !q || !e)
		return NAN;
	*t = *p->scenario->topo;
	*s = *p->scenario;
	s->topo = t;
	*q = *p;
	q->scenario = s;
	for (int i = 0; i < n; i++)
		cost_cal_set(t, params[i], tiers ? tiers[i] : NULL, values[i]);
	struct diag_list d;
	diag_list_init(&d);
	bool ok = plan_estimate(a, q, e, &d) && e->iteration_s > 0;
	diag_list_free(&d);
	return ok ? e->iteration_s : NAN;
}

/* The plan's estimated iteration time with one figure set to value. */
static double time_with(struct arena *a, const struct plan *p, const struct cal_figure *f,
                        double value)
{
	return cost_plan_time_with(a, p, 1, &f->param, &f->tier, &value);
}

void cost_interval_of(double center_s, double log_sd, double log_sd_figures, int dof,
                      double level, struct cal_interval *out)
{
	*out = (struct cal_interval){.why = "fewer rows than figures + 1: no interval",
	                             .center_s = center_s, .dof = dof};
	if (dof < 1)
		return;
	out->why = "the spread is not finite: no interval";
	if (!isfinite(log_sd))
		return;
	double q = gsl_cdf_tdist_Pinv((1 + level) / 2, dof);
	double lo = center_s * exp(-q * log_sd), hi = center_s * exp(q * log_sd);
	/* "0-inf s" says nothing: a spread so wide is none */
	out->why = "the spread overflows (wider than any time): no interval";
	if (!(lo > 0) || !isfinite(hi))
		return;
	out->have = true;
	out->why = NULL;
	out->rel_sd = log_sd;
	out->rel_sd_figures = log_sd_figures;
	out->quantile = q;
	out->lo_s = lo;
	out->hi_s = hi;
}

void cost_interval_at(const struct cal_interval *in, double center_s, struct cal_interval *out)
{
	*out = *in;
	out->center_s = center_s;
	if (!in->have)
		return;
	out->lo_s = center_s * exp(-in->quantile * in->rel_sd);
	out->hi_s = center_s * exp(in->quantile * in->rel_sd);
}

static void mark_outside(struct cal_interval *out, const struct cal_runs *r,
                         const struct cal_point *pt)
{
	out->runs_known = r->have;
	out->n_outside = cost_cal_outside(r, pt, out->outside);
}

bool cost_calibration_interval(struct arena *a, const struct calibration *c, const struct plan *p,
                               struct cal_interval *out)
{
	*out = (struct cal_interval){.why = "uncalibrated: no interval"};
	bool moe = cost_graph_has_moe(p->graph);
	const struct cal_fit *tf = cost_calibration_training_fit_for(c, moe);
	if (!c)
		return true;
	if (!tf) {
		out->why = "the calibration has no training fit: no interval";
		return true;
	}
	/* the plan's settings outside the fit's runs, on every interval and
	 * every reason there is none */
	struct cal_point pt;
	cost_cal_point(p, &pt);
	mark_outside(out, &tf->runs, &pt);
	struct estimate *e = arena_calloc(a, 1, sizeof *e);
	if (!e)
		return false;
	struct diag_list d;
	diag_list_init(&d);
	bool ok = plan_estimate(a, p, e, &d);
	diag_list_free(&d);
	if (!ok || !(e->iteration_s > 0)) {
		out->why = "not estimated: no interval";
		return true;
	}
	double t0 = e->iteration_s, var = 0;
	for (int k = 0; k < c->n_fits; k++) {
		const struct cal_fit *fit = &c->fits[k];
		int n = fit->n_figures;
		double g[6] = {0};
		if (!moe && cost_cal_fit_is_moe(fit))
			continue;  /* its figure moves no dense plan */
		for (int i = 0; i < n && i < 6; i++) {
			int j = figure_index(c, fit->figures[i]);
			const struct cal_figure *f = &c->figures[j];
			double lo, hi;
			bool open;
			cost_cal_param_range(f->param, &lo, &hi, &open);
			/* A step well inside the figure's spread and the range. */
			double h = fmax(f->std_error, 1e-3 * fmax(fabs(f->value), 1e-6));
			double up = fmin(f->value + h, hi), dn = fmax(f->value - h, open ? f->value / 2 : lo);
			if (up <= dn)
				continue;
			double tu = time_with(a, p, f, up), td = time_with(a, p, f, dn);
			if (!isfinite(tu) || !isfinite(td)) {
				out->why = "not estimated: no interval";
				return true;
			}
			g[i] = (tu - td) / (up - dn);
		}
		for (int i = 0; i < n && i < 6; i++)
			for (int j = 0; j < n && j < 6; j++)
				var += g[i] * fit->covariance[i * n + j] * g[j];
	}
	/* The residuals' spread in ln(predicted / measured), out of sample
	 * (a file without it: the relative RMS, its first-order equal); its
	 * degrees of freedom those of the fit's residuals, n - p. */
	/* below 0 only by rounding (the loader holds Σ to semidefinite); NaN
	 * (an infinite covariance times a zero slope) is no spread, not 0 */
	double fig = var > 0 || isnan(var) ? sqrt(var) / t0 : 0;
	double res = isfinite(tf->cv_log_rms) ? tf->cv_log_rms : tf->cv_rms_pct / 100;
	int dof = tf->points - tf->n_figures;
	cost_interval_of(t0, sqrt(fig * fig + res * res), fig, dof, CAL_INTERVAL_LEVEL, out);
	if (dof >= 1 && !out->have && !isfinite(fig))
		out->why = "the figures' covariance gives no finite spread for this plan: no interval";
	else if (dof >= 1 && !out->have && !isfinite(res))
		out->why = "the fit's residual spread is not finite: no interval";
	mark_outside(out, &tf->runs, &pt);  /* cost_interval_of starts afresh */
	return true;
}
