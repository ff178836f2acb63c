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
 * order Megatron's rule and the sweep plan them in).
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
};

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
                                       "configuration", "iteration", "simulated", "MFU",
                                       "memory", "to train", "goodput", "device-h", "energy", "cost",
                                       NULL};

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

static void answer_row(struct study_ctx *x, const char *role, int i)
{
	struct report_html *h = x->h;
	if (i < 0) {
		rh_put(h, "<tr class=\"fit-row\">");
		rh_td(h, role);
		rh_put(h, "<td colspan=\"14\">none meets the goal</td></tr>\n");
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
	struct study_plot_info info = {.title = title, .currency = st->currency,
	                               .deadline_s = st->goal.days * 86400,
	                               .budget = st->goal.budget};
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
		          "failures, restarts and checkpoints).</figcaption></figure>\n");
	}
	free(buf);
	free(names);
	free(kinds);
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
	if (!idx)
		return -1;
	for (int c = 0; c < st->n_clusters; c++)
		add_linked(out, &m, study_smallest(st, rows, n, c));
	for (int goal = 0; goal < 3; goal++)
		add_linked(out, &m, study_best(st, rows, n, -1, goal));
	int k = study_pareto(st, rows, n, idx);
	for (int i = 0; i < k; i++)
		add_linked(out, &m, idx[i]);
	k = study_top_per_size(rows, n, 1, idx);
	for (int i = 0; i < k; i++)
		add_linked(out, &m, idx[i]);
	free(idx);
	return m;
}

bool report_html_study(struct report_html *h, const struct study *st, const struct study_row *rows,
                       int n, const char *const *plan_href, char *err, size_t err_size)
{
	struct study_ctx x = {.h = h, .st = st, .rows = rows, .n = n, .href = plan_href};
	int first[REPORT_STUDY_MAX_PLANS];
	int n_first = report_study_linked(st, rows, n, first);
	if (n_first < 0) {
		snprintf(err, err_size, "out of memory");
		return false;
	}
	/* the plan pages' rows first, so that drawing l on this page is the
	 * plan page of the same row */
	for (int k = 0; k < n_first; k++)
		link_of(&x, first[k]);
	int meet = 0;
	for (int i = 0; i < n; i++)
		meet += study_row_meets(st, &rows[i]);
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
		answer_row(&x, role, study_smallest(st, rows, n, c));
	}
	answer_row(&x, "fastest", study_best(st, rows, n, -1, 0));
	answer_row(&x, "cheapest", study_best(st, rows, n, -1, 1));
	answer_row(&x, "least energy", study_best(st, rows, n, -1, 2));
	rh_table_end(h);
	rh_put(h, "</div>\n");

	int n_front = study_pareto(st, rows, n, idx);
	rh_printf(h, "<h2>Pareto front: time to train against cost</h2>\n<p>%d point(s) that no "
	             "other point beats on both (click a column to sort).</p>\n",
	          n_front);
	rows_table(&x, "pareto", idx, n_front, true);
	int n_best = study_top_per_size(rows, n, 1, idx);
	rh_printf(h, "<h2>Best configuration per cluster size</h2>\n<p>The fastest point that fits "
	             "the memory at each size of each family (%d size(s)).</p>\n",
	          n_best);
	rows_table(&x, "best", idx, n_best, false);
	free(idx);

	if (n <= MAX_POINTS_LISTED) {
		static const char *const cols[] = {"", "cluster", "servers", "devices", "batch",
		                                   "configuration", "iteration", "simulated",
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
			row_cells(&x, !r->ok ? "failed" : r->oom ? "OOM" : study_row_meets(st, r) ? "meets"
			                                                            : "misses", i, true);
			rh_put(h, "</tr>\n");
		}
		rh_table_end(h);
		rh_put(h, "</div>\n");
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
