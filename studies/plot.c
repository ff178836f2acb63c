/* plot.c — a sweep's figures drawn with cairo (docs/studies.md, "plot").
 *
 * One page of six panels from a database's rows, titled with the study's
 * name; times are the effective times to train (with failures, restarts
 * and checkpoints), the goal's deadline and budget dashed lines:
 *   (a) time to train against devices, the fastest point of each size,
 *       one line per cluster family (log-log);
 *   (b) the cost of those points against devices (log-log);
 *   (c) their MFU against devices (log x, linear y);
 *   (d) time to train against cost: every point that fits memory (small
 *       marks) and the Pareto front (a line);
 *   (e) the iteration of those fastest points broken down: compute,
 *       exposed communication, pipeline bubble, other (stacked bars);
 *   (f) their goodput against devices (log x, linear y);
 * all of the first fault case (the study's "faults"), and with several:
 *   (g) the iteration time of the fastest point's plan under each case,
 *       its 90% interval as a whisker where the rows have one, the
 *       simulated time as a mark where simulated (bars, one per case).
 * Axes carry ticks, tick labels and their units; the page is 1500 x 1160
 * points (SVG, PDF) or pixels (PNG), 1500 x 1620 with (g). No hot path.
 */
#include <cairo-pdf.h>
#include <cairo-svg.h>
#include <cairo.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "studies.h"

#define PAGE_W 1500.0
#define PAGE_H 1160.0
#define FAULTS_H 460.0                 /* the page's extra height for panel (g) */
#define FONT "DejaVu Sans"
#define PLOT_PI 3.14159265358979323846

/* Colour-blind-safe family colours (Okabe and Ito 2008). */
static const double family_rgb[][3] = {
	{0.000, 0.447, 0.698}, {0.835, 0.369, 0.000}, {0.000, 0.620, 0.451},
	{0.800, 0.475, 0.655}, {0.902, 0.624, 0.000}, {0.337, 0.706, 0.914},
};
static const double part_rgb[][3] = {
	{0.337, 0.706, 0.914}, {0.800, 0.475, 0.655}, {0.600, 0.600, 0.600}, {0.941, 0.894, 0.259},
};
static const char *const part_names[] = {"compute", "communication", "pipeline bubble", "other"};

struct axis {
	double lo, hi;
	bool log;
	const char *label;
};

struct panel {
	double x, y, w, h;                 /* the plotting area on the page */
	struct axis ax, ay;
	const char *title;
};

static double map(const struct axis *a, double v, double from, double len)
{
	double t = a->log ? (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo))
	                  : (v - a->lo) / (a->hi - a->lo);
	return from + t * len;
}

static double px(const struct panel *p, double v)
{
	return map(&p->ax, v, p->x, p->w);
}

static double py(const struct panel *p, double v)
{
	return map(&p->ay, v, p->y + p->h, -p->h);
}

/* Widens [lo, hi] to round ends: decades (log) or a multiple of a step. */
static void axis_fit(struct axis *a)
{
	if (!(a->hi > a->lo)) {
		double m = a->lo > 0 ? a->lo : 1;
		a->lo = a->log ? m / 2 : m - 1;
		a->hi = a->log ? m * 2 : m + 1;
	}
	if (a->log) {
		a->lo = pow(10, floor(log10(a->lo) + 1e-9));
		a->hi = pow(10, ceil(log10(a->hi) - 1e-9));
		if (a->hi <= a->lo)
			a->hi = a->lo * 10;
	} else {
		double step = pow(10, floor(log10((a->hi - a->lo) / 4)));
		a->lo = floor(a->lo / step) * step;
		a->hi = ceil(a->hi / step) * step;
	}
}

/* "1000", "2.5", "20k", "5M", "1G"; "1e-03" below 0.01. */
static void tick_text(char *buf, size_t size, double v)
{
	double a = fabs(v);
	if (a >= 1e9)
		snprintf(buf, size, "%gG", v / 1e9);
	else if (a >= 1e6)
		snprintf(buf, size, "%gM", v / 1e6);
	else if (a >= 1e5)
		snprintf(buf, size, "%gk", v / 1e3);
	else if (a < 1e-2 && v != 0)
		snprintf(buf, size, "%.0e", v);
	else
		snprintf(buf, size, "%g", v);
}

static void text_at(cairo_t *cr, double x, double y, const char *s, double halign,
                    double valign, double size)
{
	cairo_text_extents_t e;
	cairo_set_font_size(cr, size);
	cairo_text_extents(cr, s, &e);
	cairo_move_to(cr, x - halign * e.width - e.x_bearing, y - valign * e.height - e.y_bearing);
	cairo_show_text(cr, s);
}

static void rgb(cairo_t *cr, const double c[3])
{
	cairo_set_source_rgb(cr, c[0], c[1], c[2]);
}

/* A line across the panel at value v of its x axis (vertical) or y axis. */
static void panel_rule(cairo_t *cr, const struct panel *p, double v, bool vertical)
{
	if (vertical) {
		cairo_move_to(cr, px(p, v), p->y);
		cairo_line_to(cr, px(p, v), p->y + p->h);
	} else {
		cairo_move_to(cr, p->x, py(p, v));
		cairo_line_to(cr, p->x + p->w, py(p, v));
	}
	cairo_stroke(cr);
}

static void draw_ticks(cairo_t *cr, const struct panel *p, const struct axis *a, bool is_x,
                       bool powers_of_two)
{
	char t[32];
	double vals[64];
	int n = 0;
	if (a->log && powers_of_two) {
		for (double v = pow(2, ceil(log2(a->lo))); v <= a->hi * 1.0001 && n < 64; v *= 2)
			vals[n++] = v;
	} else if (a->log) {
		double d = log10(a->hi / a->lo);
		for (double v = a->lo; v <= a->hi * 1.0001 && n < 60; v *= 10) {
			vals[n++] = v;
			if (d <= 2 && v * 2 < a->hi)
				vals[n++] = v * 2;
			if (d <= 2 && v * 5 < a->hi)
				vals[n++] = v * 5;
		}
	} else {
		double step = pow(10, floor(log10((a->hi - a->lo) / 4)));
		while ((a->hi - a->lo) / step > 8)
			step *= 2;
		for (double v = a->lo; v <= a->hi + step * 1e-6 && n < 64; v += step)
			vals[n++] = fabs(v) < step * 1e-9 ? 0 : v;
	}
	cairo_set_line_width(cr, 1);
	for (int i = 0; i < n; i++) {
		double v = vals[i];
		tick_text(t, sizeof t, v);
		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		panel_rule(cr, p, v, is_x);
		cairo_set_source_rgb(cr, 0, 0, 0);
		if (is_x) {
			cairo_move_to(cr, px(p, v), p->y + p->h);
			cairo_line_to(cr, px(p, v), p->y + p->h + 5);
			cairo_stroke(cr);
			text_at(cr, px(p, v), p->y + p->h + 9, t, 0.5, 0, 13);
		} else {
			cairo_move_to(cr, p->x - 5, py(p, v));
			cairo_line_to(cr, p->x, py(p, v));
			cairo_stroke(cr);
			text_at(cr, p->x - 8, py(p, v), t, 1, 0.5, 13);
		}
	}
}

/* A panel's frame, title and axis labels (the x label dy below it). */
static void panel_frame(cairo_t *cr, const struct panel *p, double dy)
{
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_set_line_width(cr, 1.2);
	cairo_rectangle(cr, p->x, p->y, p->w, p->h);
	cairo_stroke(cr);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	text_at(cr, p->x + p->w / 2, p->y - 12, p->title, 0.5, 1, 15);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	text_at(cr, p->x + p->w / 2, p->y + p->h + dy, p->ax.label, 0.5, 0, 14);
	cairo_save(cr);
	cairo_translate(cr, p->x - 62, p->y + p->h / 2);
	cairo_rotate(cr, -PLOT_PI / 2);
	text_at(cr, 0, 0, p->ay.label, 0.5, 0.5, 14);
	cairo_restore(cr);
}

static void draw_frame(cairo_t *cr, const struct panel *p, bool x_pow2)
{
	draw_ticks(cr, p, &p->ax, true, x_pow2);
	draw_ticks(cr, p, &p->ay, false, false);
	panel_frame(cr, p, 32);
}

static void marker(cairo_t *cr, double x, double y, double r)
{
	cairo_new_sub_path(cr);
	cairo_arc(cr, x, y, r, 0, 2 * PLOT_PI);
	cairo_fill(cr);
}

/* --------------------------------------------------------- the data */

/* The fastest fitting point of each (cluster, servers): indices into
 * rows, in row order (cluster, then servers ascending). */
static int best_per_size(const struct study_row *rows, int n, int *out)
{
	int m = 0;
	for (int i = 0; i < n;) {
		int j = i, best = -1;
		while (j < n && rows[j].cluster == rows[i].cluster && rows[j].servers == rows[i].servers) {
			if (rows[j].ok && !rows[j].oom &&
			    (best < 0 || rows[j].effective_time_s < rows[best].effective_time_s))
				best = j;
			j++;
		}
		if (best >= 0)
			out[m++] = best;
		i = j;
	}
	return m;
}

static void range(struct axis *a, double v)
{
	if (isnan(v) || (a->log && !(v > 0)))
		return;
	if (v < a->lo)
		a->lo = v;
	if (v > a->hi)
		a->hi = v;
}

typedef double (*getter)(const struct study_row *r);
static double g_devices(const struct study_row *r) { return (double)r->devices; }
static double g_time_h(const struct study_row *r) { return r->effective_time_s / 3600; }
static double g_cost(const struct study_row *r) { return r->cost; }
static double g_mfu(const struct study_row *r) { return 100 * r->mfu; }
static double g_goodput(const struct study_row *r) { return 100 * r->goodput; }

/* One line per family over the best points. */
static void draw_lines(cairo_t *cr, const struct panel *p, const struct study_row *rows,
                       const int *best, int m, getter gx, getter gy)
{
	for (int i = 0; i < m;) {
		int c = rows[best[i]].cluster, j = i;
		rgb(cr, family_rgb[c % 6]);
		cairo_set_line_width(cr, 2.2);
		bool first = true;
		for (j = i; j < m && rows[best[j]].cluster == c; j++) {
			double x = gx(&rows[best[j]]), y = gy(&rows[best[j]]);
			if (isnan(y) || (p->ay.log && !(y > 0)))
				continue;
			if (first)
				cairo_move_to(cr, px(p, x), py(p, y));
			else
				cairo_line_to(cr, px(p, x), py(p, y));
			first = false;
		}
		cairo_stroke(cr);
		for (j = i; j < m && rows[best[j]].cluster == c; j++) {
			double y = gy(&rows[best[j]]);
			if (!isnan(y) && (!p->ay.log || y > 0))
				marker(cr, px(p, gx(&rows[best[j]])), py(p, y), 4.5);
		}
		i = j;
	}
}

static struct panel make_panel(double x, double y, const char *title, struct axis ax,
                               struct axis ay)
{
	axis_fit(&ax);
	axis_fit(&ay);
	return (struct panel){x, y, 380, 300, ax, ay, title};
}

static struct axis empty_axis(bool lg, const char *label)
{
	return (struct axis){INFINITY, -INFINITY, lg, label};
}

/* The legend across the page's foot: the families, the breakdown's
 * parts, the goal's lines and what the panels show. */
static void legend(cairo_t *cr, double x, double y, int n_clusters, const char *const *names,
                   const char *const *kinds, bool goal_lines)
{
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	cairo_set_source_rgb(cr, 0, 0, 0);
	text_at(cr, x, y, "cluster families", 0, 1, 15);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	for (int c = 0; c < n_clusters; c++) {
		double yy = y + 28 + 24.0 * c;
		rgb(cr, family_rgb[c % 6]);
		cairo_set_line_width(cr, 2.2);
		cairo_move_to(cr, x, yy);
		cairo_line_to(cr, x + 30, yy);
		cairo_stroke(cr);
		marker(cr, x + 15, yy, 4.5);
		cairo_set_source_rgb(cr, 0, 0, 0);
		char t[256];
		snprintf(t, sizeof t, "%s (%s)", names[c] ? names[c] : "?", kinds[c] ? kinds[c] : "?");
		text_at(cr, x + 40, yy, t, 0, 0.5, 14);
	}
	double bx = x + 490;
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	text_at(cr, bx, y, "iteration breakdown (e)", 0, 1, 15);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
	for (int k = 0; k < 4; k++) {
		double ky = y + 28 + 24.0 * k;
		rgb(cr, part_rgb[k]);
		cairo_rectangle(cr, bx, ky - 8, 30, 16);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		text_at(cr, bx + 40, ky, part_names[k], 0, 0.5, 14);
	}
	double nx = x + 980;
	const char *notes[] = {"(a)-(c), (e), (f): the fastest point that fits",
	                       "memory at each cluster size; times are",
	                       "effective: failures, restarts, checkpoints.",
	                       "(d): every point that fits memory;",
	                       "the line is the Pareto front."};
	for (size_t k = 0; k < SL_COUNTOF(notes); k++)
		text_at(cr, nx, y + 8 + 20.0 * (double)k, notes[k], 0, 0.5, 13);
	if (goal_lines) {
		double gy = y + 8 + 20.0 * (double)SL_COUNTOF(notes) + 8;
		cairo_set_source_rgb(cr, 0.75, 0, 0);
		cairo_set_line_width(cr, 1.6);
		double dash[] = {6, 4};
		cairo_set_dash(cr, dash, 2, 0);
		cairo_move_to(cr, nx, gy);
		cairo_line_to(cr, nx + 30, gy);
		cairo_stroke(cr);
		cairo_set_dash(cr, NULL, 0, 0);
		cairo_set_source_rgb(cr, 0, 0, 0);
		text_at(cr, nx + 40, gy, "the goal: deadline, budget", 0, 0.5, 13);
	}
}

/* The goal's line at value v across a panel (horizontal) or up it
 * (vertical), dashed, labelled; nothing when v is outside the axis. */
static void goal_line(cairo_t *cr, const struct panel *p, double v, bool vertical,
                      const char *label)
{
	const struct axis *a = vertical ? &p->ax : &p->ay;
	if (!(v > 0) || v < a->lo || v > a->hi)
		return;
	cairo_save(cr);
	cairo_set_source_rgb(cr, 0.75, 0, 0);
	cairo_set_line_width(cr, 1.6);
	double dash[] = {6, 4};
	cairo_set_dash(cr, dash, 2, 0);
	panel_rule(cr, p, v, vertical);
	cairo_set_dash(cr, NULL, 0, 0);
	if (vertical)
		text_at(cr, px(p, v) + 4, p->y + 6, label, 0, 0, 12);
	else
		text_at(cr, p->x + p->w - 4, py(p, v) - 3, label, 1, 1, 12);
	cairo_restore(cr);
}


/* Stacked bars of the best points: compute, exposed communication,
 * bubble, other, in ms. */
static void draw_breakdown(cairo_t *cr, double x, double y, const struct study_row *rows,
                           const int *best, int m, const char *const *names)
{
	struct axis ay = {0, 0, false, "iteration time (ms)"};
	for (int i = 0; i < m; i++)
		ay.hi = fmax(ay.hi, 1e3 * rows[best[i]].iteration_s);
	axis_fit(&ay);
	struct axis ax = {0, m > 0 ? m : 1, false, "cluster family, devices"};
	struct panel p = {x, y, 380, 300, ax, ay, "(e) iteration breakdown"};
	draw_ticks(cr, &p, &p.ay, false, false);
	double bw = p.w / (m > 0 ? m : 1);
	for (int i = 0; i < m; i++) {
		const struct study_row *r = &rows[best[i]];
		double parts[4] = {r->compute_s, r->comm_s, r->bubble_s, 0};
		parts[3] = fmax(0, r->iteration_s - parts[0] - parts[1] - parts[2]);
		double base = 0;
		for (int k = 0; k < 4; k++) {
			double v = 1e3 * fmax(0, parts[k]);
			rgb(cr, part_rgb[k]);
			cairo_rectangle(cr, x + bw * (i + 0.15), py(&p, base + v), bw * 0.7,
			                py(&p, base) - py(&p, base + v));
			cairo_fill(cr);
			base += v;
		}
		char t[96];
		snprintf(t, sizeof t, "%s, %lld", names[r->cluster] ? names[r->cluster] : "?",
		         (long long)r->devices);
		cairo_save(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		cairo_translate(cr, x + bw * (i + 0.5), y + p.h + 8);
		cairo_rotate(cr, PLOT_PI / 4);
		text_at(cr, 0, 0, t, 0, 0.5, 11);
		cairo_restore(cr);
	}
	panel_frame(cr, &p, 62);
}

static void draw_pareto(cairo_t *cr, const struct panel *p, const struct study_row *rows, int n)
{
	int *front = malloc(((size_t)n + 1) * sizeof *front);
	struct study st_any = {0};   /* no deadline: every fitting point */
	int k = front ? study_pareto(&st_any, rows, n, front) : 0;
	for (int i = 0; i < n; i++) {
		const struct study_row *r = &rows[i];
		if (!r->ok || r->oom || isnan(r->cost) || !(r->cost > 0))
			continue;
		double c[3];
		memcpy(c, family_rgb[r->cluster % 6], sizeof c);
		cairo_set_source_rgba(cr, c[0], c[1], c[2], 0.25);
		marker(cr, px(p, r->cost), py(p, g_time_h(r)), 1.6);
	}
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_set_line_width(cr, 2);
	for (int i = 0; i < k; i++) {
		const struct study_row *r = &rows[front[i]];
		if (i == 0)
			cairo_move_to(cr, px(p, r->cost), py(p, g_time_h(r)));
		else
			cairo_line_to(cr, px(p, r->cost), py(p, g_time_h(r)));
	}
	cairo_stroke(cr);
	for (int i = 0; i < k; i++) {
		const struct study_row *r = &rows[front[i]];
		rgb(cr, family_rgb[r->cluster % 6]);
		marker(cr, px(p, r->cost), py(p, g_time_h(r)), 4.5);
	}
	free(front);
}

/* (g): the plan of the reference case's fastest point (ref, an index into
 * rows) under every case: a bar each, the interval's whisker, the
 * simulated time's mark. */
static void draw_faults(cairo_t *cr, double x, double y, const struct study_row *rows, int n,
                        int ref, const struct study_plot_info *info)
{
	int k = info->n_faults;
	struct axis ay = {0, 0, false, "iteration time (s)"};
	int *at = malloc((size_t)k * sizeof *at);
	if (!at)
		return;
	for (int f = 0; f < k; f++) {
		at[f] = ref >= 0 ? study_same_plan(rows, n, &rows[ref], f) : -1;
		const struct study_row *r = at[f] >= 0 && rows[at[f]].ok ? &rows[at[f]] : NULL;
		if (!r) {
			at[f] = -1;
			continue;
		}
		ay.hi = fmax(ay.hi, study_row_has_interval(r) ? r->iteration_hi_s : r->iteration_s);
		if (r->simulated)
			ay.hi = fmax(ay.hi, r->sim_iteration_s);
	}
	axis_fit(&ay);
	struct axis ax = {0, k, false, "fault case"};
	struct panel p = {x, y, 1280, 260, ax, ay,
	                  "(g) the fastest point's plan under each fault case: estimate (bar), "
	                  "90% interval, simulated (dot)"};
	draw_ticks(cr, &p, &p.ay, false, false);
	double bw = p.w / k;
	for (int f = 0; f < k; f++) {
		const struct study_row *r = at[f] >= 0 ? &rows[at[f]] : NULL;
		double cx = x + bw * (f + 0.5);
		if (r) {
			rgb(cr, family_rgb[r->cluster % 6]);
			cairo_rectangle(cr, x + bw * (f + 0.2), py(&p, r->iteration_s), bw * 0.6,
			                py(&p, 0) - py(&p, r->iteration_s));
			cairo_fill(cr);
			cairo_set_source_rgb(cr, 0, 0, 0);
			cairo_set_line_width(cr, 1.4);
			if (study_row_has_interval(r)) {
				double lo = py(&p, r->iteration_lo_s), hi = py(&p, r->iteration_hi_s);
				cairo_move_to(cr, cx, lo);
				cairo_line_to(cr, cx, hi);
				cairo_move_to(cr, cx - 6, lo);
				cairo_line_to(cr, cx + 6, lo);
				cairo_move_to(cr, cx - 6, hi);
				cairo_line_to(cr, cx + 6, hi);
				cairo_stroke(cr);
			}
			if (r->simulated)
				marker(cr, cx, py(&p, r->sim_iteration_s), 5);
		}
		const char *name = info->fault_names && info->fault_names[f] ? info->fault_names[f] : "?";
		cairo_save(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		cairo_translate(cr, cx, y + p.h + 8);
		cairo_rotate(cr, PLOT_PI / 8);
		text_at(cr, 0, 0, name, 0, 0.5, 11);
		cairo_restore(cr);
	}
	free(at);
	panel_frame(cr, &p, 80);
}

/* cairo's stream writer onto a FILE. */
static cairo_status_t put(void *closure, const unsigned char *data, unsigned int length)
{
	return fwrite(data, 1, length, closure) == length ? CAIRO_STATUS_SUCCESS
	                                                  : CAIRO_STATUS_WRITE_ERROR;
}

bool study_plot(FILE *out, const char *path, const struct study_row *all, int n_all,
                int n_clusters, const char *const *names, const char *const *kinds,
                const struct study_plot_info *info, char *err, size_t err_size)
{
	size_t len = strlen(path);
	bool png = len > 4 && !strcmp(path + len - 4, ".png");
	bool svg = len > 4 && !strcmp(path + len - 4, ".svg");
	bool pdf = len > 4 && !strcmp(path + len - 4, ".pdf");
	if (!png && !svg && !pdf) {
		snprintf(err, err_size, "%s: the file name must end in .svg, .png or .pdf", path);
		return false;
	}
	/* Panels (a) to (f) draw the first fault case. */
	struct study_row *rows = malloc(((size_t)n_all + 1) * sizeof *rows);
	int *best = malloc(((size_t)n_all + 1) * sizeof *best);
	if (!best || !rows) {
		free(best);
		free(rows);
		snprintf(err, err_size, "out of memory");
		return false;
	}
	int n = study_fault_rows(all, n_all, 0, rows);
	int m = best_per_size(rows, n, best);
	bool faults = info->n_faults > 1;
	double page_h = PAGE_H + (faults ? FAULTS_H : 0);

	char cost_label[64];
	snprintf(cost_label, sizeof cost_label, "cost (%s)",
	         info->currency ? info->currency : "price units");
	double deadline_h = info->deadline_s / 3600;
	struct axis dev = empty_axis(true, "devices"), t = empty_axis(true, "time to train (hours)"),
	            cost = empty_axis(true, cost_label), mfu = {0, 0, false, "MFU (%)"},
	            pc = empty_axis(true, cost_label),
	            pt = empty_axis(true, "time to train (hours)"),
	            gp = {100, 100, false, "goodput (%)"};
	for (int i = 0; i < m; i++) {
		const struct study_row *r = &rows[best[i]];
		range(&dev, g_devices(r));
		range(&t, g_time_h(r));
		range(&cost, g_cost(r));
		range(&mfu, g_mfu(r));
		if (g_goodput(r) < gp.lo)
			gp.lo = g_goodput(r);
	}
	/* the goal's lines stay on the page */
	range(&t, deadline_h);
	range(&pt, deadline_h);
	range(&cost, info->budget);
	range(&pc, info->budget);
	/* tens below the lowest, at least 20 points of range */
	gp.lo = fmax(0, fmin(80, floor(gp.lo / 10) * 10 - 10));
	for (int i = 0; i < n; i++)
		if (rows[i].ok && !rows[i].oom && rows[i].cost > 0) {
			range(&pc, rows[i].cost);
			range(&pt, g_time_h(&rows[i]));
		}
	if (!(dev.hi >= dev.lo))
		dev = (struct axis){1, 8, true, "devices"};
	dev.lo = pow(2, floor(log2(dev.lo)));
	dev.hi = pow(2, ceil(log2(dev.hi)));
	if (dev.hi <= dev.lo)
		dev.hi = dev.lo * 2;
	if (!(t.hi >= t.lo))
		t = (struct axis){1, 10, true, t.label};
	if (!(cost.hi >= cost.lo))
		cost = (struct axis){1, 10, true, cost.label};
	if (!(pc.hi >= pc.lo))
		pc = (struct axis){1, 10, true, pc.label};
	if (!(pt.hi >= pt.lo))
		pt = (struct axis){1, 10, true, pt.label};
	mfu.lo = 0;
	mfu.hi = mfu.hi > 0 ? mfu.hi * 1.1 : 100;

	cairo_surface_t *sf = png ? cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)PAGE_W,
	                                                       (int)page_h)
	                    : svg ? cairo_svg_surface_create_for_stream(put, out, PAGE_W, page_h)
	                          : cairo_pdf_surface_create_for_stream(put, out, PAGE_W, page_h);
	cairo_t *cr = cairo_create(sf);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
	cairo_set_source_rgb(cr, 0, 0, 0);
	text_at(cr, PAGE_W / 2, 18, info->title ? info->title : "", 0.5, 0, 18);
	cairo_select_font_face(cr, FONT, CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);

	double cx[3] = {110, 600, 1090}, cy[2] = {90, 560};
	struct panel pa = make_panel(cx[0], cy[0], "(a) time to train", dev, t);
	struct panel pb = make_panel(cx[1], cy[0], "(b) cost", dev, cost);
	struct panel pcp = make_panel(cx[2], cy[0], "(c) model FLOPs utilisation", dev, mfu);
	struct panel pd = make_panel(cx[0], cy[1], "(d) time to train against cost", pc, pt);
	struct panel pf = make_panel(cx[2], cy[1], "(f) goodput", dev, gp);
	pa.ax = pb.ax = pcp.ax = pf.ax = dev;
	draw_frame(cr, &pa, true);
	draw_lines(cr, &pa, rows, best, m, g_devices, g_time_h);
	goal_line(cr, &pa, deadline_h, false, "deadline");
	draw_frame(cr, &pb, true);
	draw_lines(cr, &pb, rows, best, m, g_devices, g_cost);
	goal_line(cr, &pb, info->budget, false, "budget");
	draw_frame(cr, &pcp, true);
	draw_lines(cr, &pcp, rows, best, m, g_devices, g_mfu);
	draw_frame(cr, &pd, false);
	draw_pareto(cr, &pd, rows, n);
	goal_line(cr, &pd, deadline_h, false, "deadline");
	goal_line(cr, &pd, info->budget, true, "budget");
	draw_breakdown(cr, cx[1], cy[1], rows, best, m, names);
	draw_frame(cr, &pf, true);
	draw_lines(cr, &pf, rows, best, m, g_devices, g_goodput);
	legend(cr, cx[0], cy[1] + 420, n_clusters, names, kinds,
	       deadline_h > 0 || info->budget > 0);
	if (faults) {
		/* the fastest fitting point of the first case, by effective time */
		int ref = -1;
		for (int i = 0; i < m; i++)
			if (ref < 0 || rows[best[i]].effective_time_s < rows[ref].effective_time_s)
				ref = best[i];
		int ref_all = ref >= 0 ? study_same_plan(all, n_all, &rows[ref], 0) : -1;
		draw_faults(cr, cx[0], PAGE_H + 40, all, n_all, ref_all, info);
	}

	cairo_status_t status = cairo_status(cr);
	cairo_destroy(cr);
	if (png && status == CAIRO_STATUS_SUCCESS)
		status = cairo_surface_write_to_png_stream(sf, put, out);
	cairo_surface_finish(sf);
	if (status == CAIRO_STATUS_SUCCESS)
		status = cairo_surface_status(sf);
	cairo_surface_destroy(sf);
	free(best);
	free(rows);
	if (status != CAIRO_STATUS_SUCCESS) {
		snprintf(err, err_size, "%s: %s", path, cairo_status_to_string(status));
		return false;
	}
	return true;
}
