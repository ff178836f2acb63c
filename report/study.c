/* study.c — a study drawn: its figures, the `fit` answer, the Pareto
 * front and the best configuration per cluster size, each row linking to
 * its plan.
 *
 * The figures are study_plot's own (cairo, written as SVG into memory and
 * inlined: the same drawing `shardlab plot` writes); the answers are
 * study_best, study_smallest, study_pareto and study_top_per_size's, the
 * functions `fit` prints from. A linked plan is the configuration laid
 * over the cluster's devices (pipeline stages hold consecutive rank
 * ranges, tensor-parallel groups consecutive ranks inside a stage: the
 * order Megatron's rule and the sweep plan them in). A study with fault
 * cases is answered for its first case (as `fit` answers by default), and
 * a table shows the fastest point's plan under every case; each row
 * carries its 90% interval, or says it has none.
 *
 * Linear in rows; no hot path.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-int.h"

enum { MAX_LINKED = 64, MAX_POINTS_LISTED = 500 };
_Static_assert(REPORT_STUDY_MAX_PLANS <= MAX_LINKED, "every plan page has its drawing");

const char *report_duration_text(char *buf, size_t size, double s)
{
	if (!isfinite(s))
		snprintf(buf, size, "-");
	else if (s < 60)
		snprintf(buf, size, "%.3g s", s);
	else if (s < 3600)
		snprintf(buf, size, "%.3g min", s / 60);
	else if (s < 2 * 86400)
		snprintf(buf, size, "%.3g h", s / 3600);
	else
		snprintf(buf, size, "%.3g days", s / 86400);
	return buf;
}

const char *report_num_text(char *buf, size_t size, double x, double scale, const char *suffix)
{
	if (!isfinite(x))
		snprintf(buf, size, "-");
	else if (fabs(x * scale) >= 1e4)
		snprintf(buf, size, "%.0f%s", x * scale, suffix);
	else
		snprintf(buf, size, "%.4g%s", x * scale, suffix);
	return buf;
}

struct study_ctx {
	struct report_html *h;
	const struct study *st;
	const struct study_row *rows;
	int n;
	const char *const *href;           /* per row: its plan page, or NULL */
	int linked[MAX_LINKED];            /* rows whose plan the page draws */
	int n_linked;
	const struct calibration *const *cal; /* per cluster: the sweep's calibration, or NULL */
	const struct study_row *sub;       /* the rows of the first fault case, */
	int *map;                          /* each one's index in rows */
	int n_sub;
};

/* The rows of the first fault case, and where each sits in rows (the
 * answers are made on them, the links index every row). False when out of
 * memory. */
static bool first_case(const struct study_row *rows, int n, struct study_row **sub, int **map,
                       int *n_sub)
{
	*sub = malloc(((size_t)n + 1) * sizeof **sub);
	*map = malloc(((size_t)n + 1) * sizeof **map);
	*n_sub = 0;
	if (!*sub || !*map)
		return false;
	for (int i = 0; i < n; i++)
		if (rows[i].fault == 0) {
			(*map)[*n_sub] = i;
			(*sub)[(*n_sub)++] = rows[i];
		}
	return true;
}

/* A first-case row's index in rows (-1 stays). */
static int in_rows(const struct study_ctx *x, int i)
{
	return i < 0 ? i : x->map[i];
}

/* The anchor of a row's plan (drawn once, however often linked); -1 past
 * MAX_LINKED. */
static int link_of(struct study_ctx *x, int row)
{
	for (int i = 0; i < x->n_linked; i++)
		if (x->linked[i] == row)
			return i;
	if (x->n_linked == MAX_LINKED)
		return -1;
	x->linked[x->n_linked] = row;
	return x->n_linked++;
}

static const char *const row_cols[] = {"", "cluster", "servers", "devices", "batch",
                                       "configuration", "iteration", "90% interval",
                                       "simulated", "MFU",
                                       "memory", "to train", "goodput", "device-h", "energy", "cost",
                                       NULL};

/* Row i's settings outside the runs its cluster's calibration was fitted
 * on, into out: how many (-1: not known). */
static int row_outside(const struct study_ctx *x, int i, struct cal_outside *out)
{
	const struct study_row *r = &x->rows[i];
	return study_row_outside(x->cal ? x->cal[r->cluster] : NULL, x->st, r, out);
}

/* How many of rows idx[0 .. n) (all n rows when idx is NULL) lie outside
 * their calibration's runs. */
static int rows_outside(const struct study_ctx *x, const int *idx, int n)
{
	int k = 0;
	for (int i = 0; i < n; i++) {
		struct cal_outside out[CAL_SET_COUNT];
		k += (idx ? idx[i] >= 0 && row_outside(x, idx[i], out) > 0
		          : row_outside(x, i, out) > 0);
	}
	return k;
}

/* The mark's legend under a table with k rows outside (none: nothing). */
static void outside_legend(struct study_ctx *x, int k)
{
	if (k > 0)
		rh_printf(x->h, "<p class=\"foot\">\u2020 %d point(s) outside the runs their "
		                "cluster's calibration was fitted on: the interval is the spread over "
		                "those runs, not beyond them (hover the interval for the settings).</p>\n",
		          k);
}

/* A row's cells in row_cols' order; with `breakdown`, the estimate's
 * compute, communication and bubble after the simulated iteration
 * (points_cols). */
static void row_cells(struct study_ctx *x, const char *role, int i, bool breakdown)
{
	struct report_html *h = x->h;
	const struct study_row *r = &x->rows[i];
	char b[160];
	rh_td(h, role);
	rh_td(h, x->st->clusters[r->cluster].name);
	rh_td_num(h, (double)r->servers, (snprintf(b, sizeof b, "%" PRId64, r->servers), b));
	rh_td_num(h, (double)r->devices, (snprintf(b, sizeof b, "%" PRId64, r->devices), b));
	rh_td_num(h, (double)r->global_batch, (snprintf(b, sizeof b, "%" PRId64, r->global_batch), b));
	int l = link_of(x, i);
	const char *href = x->href ? x->href[i] : NULL;
	rh_put(h, "<td class=\"cfg\">");
	if (href) {
		rh_put(h, "<a class=\"plan-link\" href=\"");
		rh_esc(h, href);
		rh_put(h, "\">");
	} else if (l >= 0) {
		rh_printf(h, "<a href=\"#cfg-%d\">", l);
	}
	rh_esc(h, plan_search_config_text(b, sizeof b, &r->config));
	rh_put(h, href || l >= 0 ? "</a>" : "");
	if (href && l >= 0)
		rh_printf(h, " <a class=\"lay\" href=\"#cfg-%d\" title=\"the configuration over the "
		             "cluster's devices, on this page\">devices</a>", l);
	rh_put(h, "</td>");
	rh_td_num(h, r->iteration_s, rh_si(h, b, sizeof b, r->iteration_s, "s"));
	if (study_row_has_interval(r)) {
		char lo[48], hi[48], w[1024], title[1100];
		struct cal_outside out[CAL_SET_COUNT];
		int k = row_outside(x, i, out);
		snprintf(b, sizeof b, "%s-%s%s", rh_si(h, lo, sizeof lo, r->iteration_lo_s, "s"),
		         rh_si(h, hi, sizeof hi, r->iteration_hi_s, "s"), k > 0 ? " \u2020" : "");
		if (k > 0)
			snprintf(title, sizeof title, "outside the runs the calibration was fitted on: %s",
			         cost_cal_outside_text(w, sizeof w, out, k));
		rh_td_num_title(h, r->iteration_hi_s, b, k > 0 ? title : NULL);
	} else {
		rh_td_num(h, NAN, "none");
	}
	double sim = r->simulated ? r->sim_iteration_s : NAN;
	rh_td_num(h, sim, r->simulated ? rh_si(h, b, sizeof b, sim, "s") : "-");
	if (breakdown) {
		rh_td_num(h, r->compute_s, rh_si(h, b, sizeof b, r->compute_s, "s"));
		rh_td_num(h, r->comm_s, rh_si(h, b, sizeof b, r->comm_s, "s"));
		rh_td_num(h, r->bubble_s, rh_si(h, b, sizeof b, r->bubble_s, "s"));
	}
	rh_td_num(h, r->mfu, report_num_text(b, sizeof b, r->mfu, 100, "%"));
	rh_td_num(h, r->memory_bytes, rh_si(h, b, sizeof b, r->memory_bytes, "B"));
	rh_td_num(h, r->effective_time_s, report_duration_text(b, sizeof b, r->effective_time_s));
	rh_td_num(h, r->goodput, report_num_text(b, sizeof b, r->goodput, 100, "%"));
	rh_td_num(h, r->device_hours, report_num_text(b, sizeof b, r->device_hours, 1, ""));
	rh_td_num(h, r->energy_kwh, report_num_text(b, sizeof b, r->energy_kwh, 1, " kWh"));
	rh_td_num(h, r->cost, report_num_text(b, sizeof b, r->cost, 1, ""));
}

/* The answer row i's settings outside the runs its cluster's calibration
 * was fitted on: whether there are any (not known: none); with `put`, one
 * list item. */
static bool outside_item(struct study_ctx *x, const char *role, int i, bool put)
{
	struct cal_outside out[CAL_SET_COUNT];
	const struct study_row *r = i >= 0 ? &x->rows[i] : NULL;
	int n = r ? row_outside(x, i, out) : -1;
	if (n <= 0 || !put)
		return n > 0;
	char w[1024];
	const char *cluster = x->st->clusters[r->cluster].name;
	rh_put(x->h, "<li>");
	rh_esc(x->h, role);
	if (strncmp(role, "smallest ", 9)) {  /* as fit names them: "fastest a100" */
		rh_put(x->h, " ");
		rh_esc(x->h, cluster);
	}
	rh_put(x->h, ": ");
	rh_esc(x->h, cost_cal_outside_text(w, sizeof w, out, n));
	rh_put(x->h, "</li>");
	return true;
}

/* The `fit` answers (the smallest per family, the fastest, cheapest and
 * least energy) outside their calibration's runs: how many; with `put`,
 * a list item each. */
static int answers_outside(struct study_ctx *x, bool put)
{
	const struct study *st = x->st;
	char role[160];
	int k = 0;
	for (int c = 0; c < st->n_clusters; c++) {
		snprintf(role, sizeof role, "smallest %s", st->clusters[c].name);
		k += outside_item(x, role, in_rows(x, study_smallest(st, x->sub, x->n_sub, c)), put);
	}
	static const char *const best[] = {"fastest", "cheapest", "least energy"};
	for (int b = 0; b < 3; b++)
		k += outside_item(x, best[b], in_rows(x, study_best(st, x->sub, x->n_sub, -1, b)), put);
	return k;
}

static void answer_row(struct study_ctx *x, const char *role, int i)
{
	struct report_html *h = x->h;
	if (i < 0) {
		rh_put(h, "<tr class=\"fit-row\">");
		rh_td(h, role);
		rh_put(h, "<td colspan=\"15\">none meets the goal</td></tr>\n");
		return;
	}
	rh_put(h, "<tr class=\"fit-row\">");
	row_cells(x, role, i, false);
	rh_put(h, "</tr>\n");
}

/* A sortable table of rows idx[0 .. n) (class CLS, rows CLS-row): its
 * place in the list (numbered) or whether it meets the goal first. */
static void rows_table(struct study_ctx *x, const char *cls, const int *idx, int n, bool numbered)
{
	struct report_html *h = x->h;
	rh_put(h, "<div class=\"scroll\">");
	rh_table_begin(h, cls, row_cols);
	for (int i = 0; i < n; i++) {
		char role[16];
		snprintf(role, sizeof role, "%d", i + 1);
		rh_printf(h, "<tr class=\"%s-row\">", cls);
		row_cells(x, numbered ? role : study_row_meets(x->st, &x->rows[idx[i]]) ? "meets"
		                                                                     : "misses", idx[i],
		          false);
		rh_put(h, "</tr>\n");
	}
	rh_table_end(h);
	rh_put(h, "</div>\n");
	outside_legend(x, rows_outside(x, idx, n));
}

/* The figures: study_plot's SVG inlined (its XML declaration dropped). */
static bool figures(struct study_ctx *x, char *err, size_t err_size)
{
	struct report_html *h = x->h;
	const struct study *st = x->st;
	const char **names = calloc((size_t)st->n_clusters + 1, sizeof *names);
	const char **kinds = calloc((size_t)st->n_clusters + 1, sizeof *kinds);
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	bool ok = names && kinds && f;
	for (int c = 0; ok && c < st->n_clusters; c++) {
		names[c] = st->clusters[c].name;
		kinds[c] = st->clusters[c].topo->device.kind;
	}
	if (!ok)
		snprintf(err, err_size, "out of memory");
	char title[256];
	snprintf(title, sizeof title, "shardlab study: %s", st->name);
	const char **faults = calloc((size_t)st->n_faults, sizeof *faults);
	for (int k = 0; faults && k < st->n_faults; k++)
		faults[k] = st->faults[k].name;
	struct study_plot_info info = {.title = title, .currency = st->currency,
	                               .deadline_s = st->goal.days * 86400,
	                               .budget = st->goal.budget,
	                               .n_faults = faults ? st->n_faults : 1,
	                               .fault_names = faults};
	ok = ok && study_plot(f, "figures.svg", x->rows, x->n, st->n_clusters, names, kinds, &info,
	                      err, err_size);
	if (f && fclose(f) != 0 && ok) {
		snprintf(err, err_size, "out of memory");
		ok = false;
	}
	if (ok) {
		const char *s = buf;
		if (!strncmp(s, "<?xml", 5)) {
			const char *e = strstr(s, "?>");
			s = e ? e + 2 : s;
		}
		rh_put(h, "<figure class=\"plots\" style=\"margin:6px 0\">");
		rh_put(h, s);
		rh_put(h, "<figcaption>The figures of <code>shardlab plot</code>: time to train, cost "
		          "and MFU against devices per cluster family (the fastest point that fits at each "
		          "size), time to train against cost with the Pareto front, the iteration "
		          "breakdown and the goodput of the fastest points; times are effective (with "
		          "failures, restarts and checkpoints). With fault cases, those of the first, "
		          "and (g) the fastest point's plan under each case.</figcaption></figure>\n");
	}
	free(buf);
	free(names);
	free(kinds);
	free(faults);
	return ok;
}

/* A configuration over the cluster's devices: one colour per pipeline
 * stage (with one stage, per tensor-parallel group). */
static void linked_plan(struct study_ctx *x, int l)
{
	struct report_html *h = x->h;
	const struct study_row *r = &x->rows[x->linked[l]];
	const struct study_cluster *cl = &x->st->clusters[r->cluster];
	const struct search_config *c = &r->config;
	char b[160];
	rh_printf(h, "<section class=\"cfg\" id=\"cfg-%d\"><h3>", l);
	rh_esc(h, cl->name);
	rh_printf(h, ", %" PRId64 " servers, %" PRId64 " devices, batch %" PRId64 ": ", r->servers,
	          r->devices, r->global_batch);
	rh_esc(h, plan_search_config_text(b, sizeof b, c));
	rh_put(h, "</h3>\n");
	const char *href = x->href ? x->href[x->linked[l]] : NULL;
	if (href) {
		rh_put(h, "<p><a class=\"plan-link\" href=\"");
		rh_esc(h, href);
		rh_put(h, "\">The full plan</a>: every op's layouts on the devices, its collectives "
		          "and the redistributions, as <code>shardlab report</code> draws a "
		          "scenario.</p>\n");
	}
	int64_t pp = c->pp > 0 ? c->pp : 1, tp = c->tp > 0 ? c->tp : 1;
	int64_t cp = c->cp > 1 ? c->cp : 1;
	int64_t stage = r->devices / pp;
	int *fill = malloc(((size_t)r->devices + 1) * sizeof *fill);
	if (!fill) {
		h->oom = true;
		rh_put(h, "</section>\n");
		return;
	}
	for (int64_t k = 0; k < r->devices; k++)
		fill[k] = pp > 1 ? (int)(k / stage) : (int)(k / (tp * cp));
	char cap[320];
	snprintf(cap, sizeof cap, "%s: %" PRId64 " pipeline stage(s) of %" PRId64 " ranks; inside "
	         "a stage tensor-parallel groups of %" PRId64 " consecutive ranks%s, %" PRId64
	         " data-parallel replica(s).",
	         pp > 1 ? "Colour: the pipeline stage" : "Colour: the tensor-parallel group", pp,
	         stage, tp, cp > 1 ? " (times the context-parallel ring)" : "", c->dp);
	rh_mesh(h, cl->topo, r->devices, fill, cap);
	int n_colours = pp > 1 ? (int)pp : (int)(r->devices / (tp * cp));
	for (int k = 0; k < n_colours && k < 16; k++) {
		char label[64];
		snprintf(label, sizeof label, pp > 1 ? "stage %d" : "TP group %d", k);
		rh_legend_item(h, k, label);
	}
	if (n_colours > 16)
		rh_printf(h, "<span>... %d more</span>", n_colours - 16);
	rh_mesh_end(h);
	free(fill);
	rh_printf(h, "<p>Estimated iteration %s, memory per device %s of %s%s. "
	             "<a href=\"#study-answer\">back to the answer</a></p></section>\n",
	          rh_si(h, b, 32, r->iteration_s, "s"), rh_si(h, b + 32, 32, r->memory_bytes, "B"),
	          rh_si(h, b + 64, 32, r->hbm_bytes, "B"), r->oom ? " (OOM)" : "");
}

/* Appends row i to out[0 .. *m) unless it is there or the list is full. */
static void add_linked(int *out, int *m, int i)
{
	if (i < 0 || *m == REPORT_STUDY_MAX_PLANS)
		return;
	for (int k = 0; k < *m; k++)
		if (out[k] == i)
			return;
	out[(*m)++] = i;
}

int report_study_linked(const struct study *st, const struct study_row *rows, int n, int *out)
{
	int m = 0;
	int *idx = malloc(((size_t)n + 1) * sizeof *idx);
	struct study_ctx x = {0};
	struct study_row *sub = NULL;
	if (!idx || !first_case(rows, n, &sub, &x.map, &x.n_sub)) {
		free(idx);
		free(sub);
		free(x.map);
		return -1;
	}
	int ns = x.n_sub;
	for (int c = 0; c < st->n_clusters; c++)
		add_linked(out, &m, in_rows(&x, study_smallest(st, sub, ns, c)));
	for (int goal = 0; goal < 3; goal++)
		add_linked(out, &m, in_rows(&x, study_best(st, sub, ns, -1, goal)));
	int k = study_pareto(st, sub, ns, idx);
	for (int i = 0; i < k; i++)
		add_linked(out, &m, in_rows(&x, idx[i]));
	k = study_top_per_size(sub, ns, 1, idx);
	for (int i = 0; i < k; i++)
		add_linked(out, &m, in_rows(&x, idx[i]));
	free(idx);
	free(sub);
	free(x.map);
	return m;
}

/* The fault cases: the first case's fastest point's plan under each, and
 * the fastest point of each (fit's table). */
static void faults_table(struct study_ctx *x)
{
	static const char *const cols[] = {"case", "same plan", "90% interval", "change",
	                                   "simulated", "fastest in the case", "iteration",
	                                   "to train", NULL};
	struct report_html *h = x->h;
	const struct study *st = x->st;
	int ref = in_rows(x, study_best(st, x->sub, x->n_sub, -1, 0));
	struct study_row *tmp = malloc(((size_t)x->n + 1) * sizeof *tmp);
	if (!tmp)
		return;
	rh_printf(h, "<h2 id=\"study-faults\">Fault cases</h2>\n<p>The fastest point's plan (under "
	             "\"%s\") in each of the study's %d fault cases, and the fastest point of each "
	             "case: the same plan, or the configuration re-planning among the study's "
	             "points would pick (the planner does not rebalance work around a slow "
	             "device).</p>\n", st->faults[0].name, st->n_faults);
	rh_put(h, "<div class=\"scroll\">");
	rh_table_begin(h, "faults", cols);
	for (int k = 0; k < st->n_faults; k++) {
		int j = ref >= 0 ? study_same_plan(x->rows, x->n, &x->rows[ref], k) : -1;
		const struct study_row *r = j >= 0 && x->rows[j].ok ? &x->rows[j] : NULL;
		int m = study_fault_rows(x->rows, x->n, k, tmp);
		int b = study_best(st, tmp, m, -1, 0);
		int bj = b >= 0 ? study_same_plan(x->rows, x->n, &tmp[b], k) : -1;
		char v[96], lo[48], hi[48];
		rh_put(h, "<tr class=\"faults-row\">");
		rh_td(h, st->faults[k].name);
		rh_td_num(h, r ? r->iteration_s : NAN,
		          r ? rh_si(h, v, sizeof v, r->iteration_s, "s") : "-");
		if (r && study_row_has_interval(r)) {
			snprintf(v, sizeof v, "%s-%s", rh_si(h, lo, sizeof lo, r->iteration_lo_s, "s"),
			         rh_si(h, hi, sizeof hi, r->iteration_hi_s, "s"));
			rh_td_num(h, r->iteration_hi_s, v);
		} else {
			rh_td_num(h, NAN, "none");
		}
		double ch = r ? 100 * (r->iteration_s / x->rows[ref].iteration_s - 1) : NAN;
		snprintf(v, sizeof v, "%+.1f%%", ch);
		rh_td_num(h, ch, r ? v : "-");
		double sim = r && r->simulated ? r->sim_iteration_s : NAN;
		rh_td_num(h, sim, isnan(sim) ? "-" : rh_si(h, v, sizeof v, sim, "s"));
		const struct study_row *y = bj >= 0 ? &x->rows[bj] : NULL;
		if (y && bj == j)
			rh_td(h, "the same plan");
		else if (y)
			rh_td(h, plan_search_config_text(v, sizeof v, &y->config));
		else
			rh_td(h, "none meets the goal");
		rh_td_num(h, y ? y->iteration_s : NAN, y ? rh_si(h, v, sizeof v, y->iteration_s, "s")
		                                         : "-");
		rh_td_num(h, y ? y->effective_time_s : NAN,
		          y ? report_duration_text(v, sizeof v, y->effective_time_s) : "-");
		rh_put(h, "</tr>\n");
	}
	rh_table_end(h);
	rh_put(h, "</div>\n");
	free(tmp);
}

static bool report_study_body(struct study_ctx *px, const int *first, int n_first, char *err,
                              size_t err_size);

bool report_html_study(struct report_html *h, const struct study *st, const struct study_row *rows,
                       int n, const char *const *plan_href,
                       const struct calibration *const *cal, char *err, size_t err_size)
{
	struct study_ctx x = {.h = h, .st = st, .rows = rows, .n = n, .href = plan_href, .cal = cal};
	int first[REPORT_STUDY_MAX_PLANS];
	int n_first = report_study_linked(st, rows, n, first);
	struct study_row *sub = NULL;
	if (n_first < 0 || !first_case(rows, n, &sub, &x.map, &x.n_sub)) {
		free(sub);
		free(x.map);
		snprintf(err, err_size, "out of memory");
		return false;
	}
	x.sub = sub;
	bool ok = report_study_body(&x, first, n_first, err, err_size);
	free(sub);
	free(x.map);
	return ok;
}

static bool report_study_body(struct study_ctx *px, const int *first, int n_first, char *err,
                              size_t err_size)
{
	struct study_ctx x = *px;
	struct report_html *h = x.h;
	const struct study *st = x.st;
	const struct study_row *rows = x.rows, *sub = x.sub;
	int n = x.n, ns = x.n_sub;
	/* the plan pages' rows first, so that drawing l on this page is the
	 * plan page of the same row */
	for (int k = 0; k < n_first; k++)
		link_of(&x, first[k]);
	int meet = 0;
	for (int i = 0; i < ns; i++)
		meet += study_row_meets(st, &sub[i]);
	char goal[128];
	if (st->goal.iterations)
		snprintf(goal, sizeof goal, "%" PRId64 " iterations", st->goal.iterations);
	else
		snprintf(goal, sizeof goal, "%.4g tokens", st->goal.tokens);
	if (st->goal.days > 0)
		snprintf(goal + strlen(goal), sizeof goal - strlen(goal), " within %g day(s)",
		         st->goal.days);
	rh_put(h, "<section class=\"study\" id=\"study\">\n<div class=\"facts\"><div>study<b>");
	rh_esc(h, st->name);
	rh_put(h, "</b></div><div>goal<b>");
	rh_esc(h, goal);
	rh_printf(h, "</b></div><div>points<b>%d</b></div><div>meet the goal<b>%d</b></div>"
	             "<div>cluster families<b>%d</b></div></div>\n",
	          n, meet, st->n_clusters);
	if (st->description) {
		rh_put(h, "<p>");
		rh_esc(h, st->description);
		rh_put(h, "</p>\n");
	}
	rh_put(h, "<h2>Figures</h2>\n");
	if (!figures(&x, err, err_size))
		return false;
	if (st->n_faults > 1)
		faults_table(&x);

	int *idx = malloc(((size_t)n + 1) * sizeof *idx);
	if (!idx) {
		snprintf(err, err_size, "out of memory");
		return false;
	}
	rh_put(h, "<h2 id=\"study-answer\">The answer (shardlab fit)</h2>\n<p>A point meets the goal "
	          "when it fits the device memory and, with a deadline, trains within it. Each "
	          "configuration links to its plan below.</p>\n");
	rh_put(h, "<div class=\"scroll\">");
	rh_table_begin(h, "fit", row_cols);
	char role[160];
	for (int c = 0; c < st->n_clusters; c++) {
		snprintf(role, sizeof role, "smallest %s", st->clusters[c].name);
		answer_row(&x, role, in_rows(&x, study_smallest(st, sub, ns, c)));
	}
	answer_row(&x, "fastest", in_rows(&x, study_best(st, sub, ns, -1, 0)));
	answer_row(&x, "cheapest", in_rows(&x, study_best(st, sub, ns, -1, 1)));
	answer_row(&x, "least energy", in_rows(&x, study_best(st, sub, ns, -1, 2)));
	rh_table_end(h);
	rh_put(h, "</div>\n");
	/* the answers whose settings the calibration's fitted runs never had */
	if (answers_outside(&x, false) > 0) {
		rh_put(h, "<div class=\"note\">Outside the runs their calibration was fitted on (an "
		          "interval is the spread over those runs, not beyond them):<ul>");
		answers_outside(&x, true);
		rh_put(h, "</ul></div>\n");
	}

	int n_front = study_pareto(st, sub, ns, idx);
	for (int i = 0; i < n_front; i++)
		idx[i] = in_rows(&x, idx[i]);
	rh_printf(h, "<h2>Pareto front: time to train against cost</h2>\n<p>%d point(s) that no "
	             "other point beats on both (click a column to sort).</p>\n",
	          n_front);
	rows_table(&x, "pareto", idx, n_front, true);
	int n_best = study_top_per_size(sub, ns, 1, idx);
	for (int i = 0; i < n_best; i++)
		idx[i] = in_rows(&x, idx[i]);
	rh_printf(h, "<h2>Best configuration per cluster size</h2>\n<p>The fastest point that fits "
	             "the memory at each size of each family (%d size(s)).</p>\n",
	          n_best);
	rows_table(&x, "best", idx, n_best, false);
	free(idx);

	if (n <= MAX_POINTS_LISTED) {
		static const char *const cols[] = {"", "cluster", "servers", "devices", "batch",
		                                   "configuration", "iteration", "90% interval",
		                                   "simulated",
		                                   "compute", "communication", "bubble", "MFU",
		                                   "memory", "to train", "goodput", "device-h", "energy", "cost",
		                                   NULL};
		rh_printf(h, "<h2>Every point</h2>\n<p>The %d point(s) of the sweep; compute, "
		             "communication and bubble are the estimate's shares of the iteration.</p>\n",
		          n);
		rh_put(h, "<div class=\"scroll\">");
		rh_table_begin(h, "points", cols);
		for (int i = 0; i < n; i++) {
			const struct study_row *r = &rows[i];
			rh_put(h, "<tr class=\"point-row\">");
			const char *state = !r->ok ? "failed" : r->oom ? "OOM" : study_row_meets(st, r)
			                                                               ? "meets" : "misses";
			if (st->n_faults > 1)
				snprintf(role, sizeof role, "%s (%s)", state, st->faults[r->fault].name);
			row_cells(&x, st->n_faults > 1 ? role : state, i, true);
			rh_put(h, "</tr>\n");
		}
		rh_table_end(h);
		rh_put(h, "</div>\n");
		outside_legend(&x, rows_outside(&x, NULL, n));
	} else {
		rh_printf(h, "<p>%d points in all: the tables above pick from them (shardlab fit "
		             "--csv lists the choices).</p>\n", n);
	}

	rh_put(h, "<h2>Plans</h2>\n<p>Each linked configuration over its cluster's devices.</p>\n");
	for (int l = 0; l < x.n_linked; l++)
		linked_plan(&x, l);
	rh_put(h, "</section>\n");
	return true;
}
