/* sim.c — a simulation drawn: estimate beside simulation, every rank's
 * totals, a timeline per chosen rank, memory over time, the busiest
 * links.
 *
 * Ranks of one stage run the same program (SPMD), so most of a
 * thousand-rank timeline repeats: ranks whose steps start and end at the
 * same pixels fold into one group row (drawn from its first rank), and
 * the page's rank picker unfolds the groups of the ranks asked for; the
 * ranks the caller chose get a row each. Events narrower than a pixel
 * merge with their neighbours of the same colour, so a row is never more
 * rectangles than the timeline has pixels. That keeps a 1,024-rank page
 * to a few megabytes (bench/report.sh).
 *
 * Linear in events (indexed per rank once) and ranks.
 */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-int.h"

enum { TL_W = 1000, TL_LABEL_W = 190, MAX_GROUPS = 48, MAX_DEFAULT_RANKS = 8 };

/* Colours by what a step is: the legend's order. */
enum tl_kind { TL_FORWARD, TL_BACKWARD, TL_RECOMPUTE, TL_OPTIMIZER, TL_COLLECTIVE, TL_PIPELINE,
               TL_PARAMS, TL_GRADIENT, TL_WAIT, TL_KIND_COUNT };
static const char *const tl_names[TL_KIND_COUNT] = {
	"forward compute", "backward compute", "recomputation", "optimizer",
	"collective (stream 0)", "pipeline send/receive", "parameter gather",
	"gradient synchronisation (stream 1)", "waiting (bubble, a peer or stream 1)"};
static const char *const tl_colours[TL_KIND_COUNT] = {"#4477aa", "#228833", "#66ccee", "#ccbb44",
                                                      "#ee6677", "#999933", "#cc6677", "#aa3377",
                                                      "#e4e6ea"};

static enum tl_kind event_kind(const struct sim_event *e, const struct program *prog)
{
	enum prog_phase ph = e->step >= 0 && e->step < prog->n_steps ? prog->steps[e->step].phase
	                                                             : PHASE_FORWARD;
	if (e->kind == SIM_EV_COMPUTE)
		return ph == PHASE_BACKWARD ? TL_BACKWARD : ph == PHASE_RECOMPUTE ? TL_RECOMPUTE
		     : ph == PHASE_OPTIMIZER ? TL_OPTIMIZER : TL_FORWARD;
	return ph == PHASE_PIPELINE ? TL_PIPELINE : ph == PHASE_PARAMS ? TL_PARAMS
	     : ph == PHASE_GRADIENT || e->stream == 1 ? TL_GRADIENT : TL_COLLECTIVE;
}

/* The events of each rank: ev[start[r] .. start[r+1]) index r->events. */
struct by_rank {
	int64_t *start;
	int64_t *ev;
};

static bool index_events(const struct sim_result *r, struct by_rank *b)
{
	b->start = calloc((size_t)r->n_ranks + 2, sizeof *b->start);
	b->ev = malloc(((size_t)r->n_events + 1) * sizeof *b->ev);
	if (!b->start || !b->ev)
		return false;
	for (int64_t i = 0; i < r->n_events; i++)
		if (r->events[i].rank >= 0 && r->events[i].rank < r->n_ranks)
			b->start[r->events[i].rank + 1]++;
	for (int64_t k = 0; k < r->n_ranks; k++)
		b->start[k + 1] += b->start[k];
	int64_t *fill = malloc(((size_t)r->n_ranks + 1) * sizeof *fill);
	if (!fill)
		return false;
	memcpy(fill, b->start, (size_t)r->n_ranks * sizeof *fill);
	for (int64_t i = 0; i < r->n_events; i++)
		if (r->events[i].rank >= 0 && r->events[i].rank < r->n_ranks)
			b->ev[fill[r->events[i].rank]++] = i;
	free(fill);
	return true;
}

/* ------------------------------------------------------------ folding */

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 1099511628211ull;
}

/* A rank's timeline as drawn: its stage, and each event's kind, stream
 * and pixels (fine) or only its steps (coarse). */
static uint64_t rank_key(const struct sim_result *r, const struct program *prog,
                         const struct by_rank *b, int64_t k, bool fine)
{
	uint64_t h = mix(1469598103934665603ull, (uint64_t)(k / (prog->stage_ranks > 0 ?
	                                                         prog->stage_ranks : 1)));
	double px = r->iteration_s > 0 ? TL_W / r->iteration_s : 0;
	for (int64_t i = b->start[k]; i < b->start[k + 1]; i++) {
		const struct sim_event *e = &r->events[b->ev[i]];
		if (e->kind == SIM_EV_MEMORY)
			continue;
		h = mix(h, (uint64_t)e->step * 4 + (uint64_t)e->stream * 2 + (e->kind == SIM_EV_COMPUTE));
		if (fine) {
			h = mix(h, (uint64_t)llround(e->start_s * px));
			h = mix(h, (uint64_t)llround(e->end_s * px));
		}
	}
	return h;
}

struct group {
	uint64_t key;
	int64_t first, n;
};

/* Ranks folded by key: group[k] the group of rank k; the groups in order
 * of their first rank. Fine keys unless they make more than MAX_GROUPS
 * groups. Returns the count, -1 when out of memory. */
static int fold(const struct sim_result *r, const struct program *prog, const struct by_rank *b,
                int *group_of, struct group **out)
{
	struct group *g = NULL;
	int n = 0;
	for (int pass = 0; pass < 2; pass++) {
		bool fine = pass == 0;
		free(g);
		g = malloc(((size_t)MAX_GROUPS + 1) * sizeof *g);
		if (!g)
			return -1;
		n = 0;
		bool over = false;
		for (int64_t k = 0; k < r->n_ranks && !over; k++) {
			uint64_t key = rank_key(r, prog, b, k, fine);
			int j = 0;
			while (j < n && g[j].key != key)
				j++;
			if (j == n) {
				if (n == MAX_GROUPS) {
					over = true;
					break;
				}
				g[n++] = (struct group){key, k, 0};
			}
			g[j].n++;
			group_of[k] = j;
		}
		if (!over)
			break;
		if (!fine) { /* coarse keys still too many: the rest join the last group */
			for (int64_t k = 0; k < r->n_ranks; k++) {
				uint64_t key = rank_key(r, prog, b, k, false);
				int j = 0;
				while (j < n && g[j].key != key)
					j++;
				if (j == n)
					j = n - 1;
				group_of[k] = j;
			}
			for (int j = 0; j < n; j++)
				g[j].n = 0;
			for (int64_t k = 0; k < r->n_ranks; k++)
				g[group_of[k]].n++;
		}
	}
	*out = g;
	return n;
}

/* "0-7,16-23": the ranks of group j as ranges. */
static void group_ranges(struct report_html *h, const int *group_of, int64_t n, int j)
{
	bool first = true;
	for (int64_t k = 0; k < n; k++) {
		if (group_of[k] != j)
			continue;
		int64_t e = k;
		while (e + 1 < n && group_of[e + 1] == j)
			e++;
		if (e > k)
			rh_printf(h, "%s%lld-%lld", first ? "" : ",", (long long)k, (long long)e);
		else
			rh_printf(h, "%s%lld", first ? "" : ",", (long long)k);
		first = false;
		k = e;
	}
}

double report_step_sent_bytes(const struct prog_step *st)
{
	if (st->kind != PROG_COLLECTIVE || st->groups.n_groups == 0 || st->groups.size < 2)
		return 0;
	double s = st->groups.size, frac = (s - 1) / s;
	switch (st->coll) {
	case STEP_ALLREDUCE:
		return 2 * frac * st->bytes;
	case STEP_ALLGATHER:
	case STEP_REDUCESCATTER:
	case STEP_ALLTOALL:
		return frac * st->bytes;
	default:
		return 0;
	}
}

/* ---------------------------------------------------------- timeline */

struct lane_rect {
	double x0, x1;
	int kind;
	int n;
	int64_t ev;                        /* the event when n == 1 */
};

struct tl_ctx {
	struct report_html *h;
	const struct sim_result *r;
	const struct program *prog;
	double px;                         /* pixels per second */
};

static void rect_flush(struct tl_ctx *x, const struct lane_rect *p, int y, int height)
{
	struct report_html *h = x->h;
	if (p->n == 0)
		return;
	double w = p->x1 - p->x0;
	if (w < 0.5)
		w = 0.5;
	rh_printf(h, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"%s\">",
	          p->x0, y, w, height, tl_colours[p->kind]);
	char a[32], d[32];
	if (p->n == 1 && p->ev >= 0) {
		const struct sim_event *e = &x->r->events[p->ev];
		rh_put(h, "<title>");
		rh_esc(h, e->name ? e->name : "step");
		rh_printf(h, " (%s", tl_names[p->kind]);
		if (e->micro >= 0)
			rh_printf(h, ", micro-batch %lld", (long long)e->micro);
		rh_printf(h, "): %s, from %s</title>", rh_si(h, d, sizeof d, e->end_s - e->start_s, "s"),
		          rh_si(h, a, sizeof a, e->start_s, "s"));
	} else if (p->kind == TL_WAIT) {
		rh_printf(h, "<title>waiting: %s</title>",
		          rh_si(h, d, sizeof d, (p->x1 - p->x0) / x->px, "s"));
	} else {
		rh_printf(h, "<title>%d steps (%s) merged at this zoom: %s</title>", p->n,
		          tl_names[p->kind], rh_si(h, d, sizeof d, (p->x1 - p->x0) / x->px, "s"));
	}
	rh_put(h, "</rect>");
}

static void rect_add(struct tl_ctx *x, struct lane_rect *p, double x0, double x1, int kind,
                     int64_t ev, int y, int height)
{
	/* the same colour touching, or two slivers of any colour in one pixel:
	 * a row is never many more rectangles than it has pixels */
	bool same = p->kind == kind && x0 - p->x1 < 0.75 && (x1 - p->x0 < 2 || p->x1 - p->x0 < 1);
	bool sliver = x1 - p->x0 < 1.5 && x0 - p->x1 < 0.5;
	if (p->n && (same || sliver)) {
		p->x1 = x1 > p->x1 ? x1 : p->x1;
		p->n++;
		return;
	}
	rect_flush(x, p, y, height);
	*p = (struct lane_rect){x0, x1, kind, 1, ev};
}

/* One rank's two streams: stream 0 with its waits (the gaps), stream 1. */
static void timeline_svg(struct tl_ctx *x, const struct by_rank *b, int64_t k)
{
	struct report_html *h = x->h;
	rh_printf(h, "<svg viewBox=\"0 0 %d 30\" width=\"%d\" height=\"30\">", TL_W, TL_W);
	for (int s = 0; s < 2; s++) {
		int y = s == 0 ? 2 : 19, height = s == 0 ? 15 : 9;
		struct lane_rect p = {0};
		double last = 0;
		for (int64_t i = b->start[k]; i < b->start[k + 1]; i++) {
			const struct sim_event *e = &x->r->events[b->ev[i]];
			if (e->kind == SIM_EV_MEMORY || e->stream != s)
				continue;
			double x0 = e->start_s * x->px, x1 = e->end_s * x->px;
			if (s == 0 && x0 - last >= 0.5)
				rect_add(x, &p, last, x0, TL_WAIT, -1, y, height);
			rect_add(x, &p, x0, x1, event_kind(e, x->prog), b->ev[i], y, height);
			last = x1 > last ? x1 : last;
		}
		if (s == 0 && TL_W - last >= 0.5)
			rect_add(x, &p, last, TL_W, TL_WAIT, -1, y, height);
		rect_flush(x, &p, y, height);
	}
	rh_put(h, "</svg>");
}

static void sort_events(const struct sim_result *r, struct by_rank *b)
{
	/* Each rank's events by start time (stable by index): insertion sort,
	 * the recorder's order is nearly sorted already. */
	for (int64_t k = 0; k < r->n_ranks; k++)
		for (int64_t i = b->start[k] + 1; i < b->start[k + 1]; i++) {
			int64_t v = b->ev[i], j = i;
			while (j > b->start[k] && r->events[b->ev[j - 1]].start_s > r->events[v].start_s) {
				b->ev[j] = b->ev[j - 1];
				j--;
			}
			b->ev[j] = v;
		}
}

static void time_axis(struct report_html *h, double iteration_s)
{
	char t[32];
	rh_printf(h, "<svg viewBox=\"0 0 %d 18\" width=\"%d\" height=\"18\">", TL_W, TL_W);
	for (int i = 0; i <= 10; i++) {
		double x = i * TL_W / 10.0;
		rh_printf(h, "<line x1=\"%.0f\" x2=\"%.0f\" y1=\"12\" y2=\"18\" stroke=\"#888\"/>"
		             "<text x=\"%.0f\" y=\"10\" font-size=\"10\" text-anchor=\"%s\">%s</text>",
		          x, x, x, i == 0 ? "start" : i == 10 ? "end" : "middle",
		          rh_si(h, t, sizeof t, iteration_s * i / 10, "s"));
	}
	rh_put(h, "</svg>");
}

static void legend(struct report_html *h)
{
	rh_put(h, "<div class=\"legend\">");
	for (int k = 0; k < TL_KIND_COUNT; k++)
		rh_printf(h, "<span><i style=\"background:%s\"></i>%s</span>", tl_colours[k], tl_names[k]);
	rh_put(h, "</div>\n");
}

/* ------------------------------------------------------ the sections */

static double rank_total(const struct sim_rank *k)
{
	return k->compute_s + k->comm_exposed_s + k->pipeline_wait_s + k->idle_s;
}

/* Compute / exposed communication / pipeline wait / idle per rank. */
static void ranks_chart(struct report_html *h, const struct sim_result *r,
                        const struct program *prog)
{
	static const char *const names[] = {"compute", "exposed communication", "pipeline wait",
	                                    "idle (done early)"};
	static const char *const colours[] = {"#4477aa", "#ee6677", "#ccbb44", "#c8ccd4"};
	int64_t n = r->n_ranks;
	double bw = n > 0 ? 1100.0 / (double)n : 1;
	double top = 0;
	for (int64_t k = 0; k < n; k++)
		top = rank_total(&r->ranks[k]) > top ? rank_total(&r->ranks[k]) : top;
	if (!(top > 0))
		top = 1;
	int hgt = 120;
	rh_printf(h, "<figure style=\"margin:6px 0\"><svg id=\"rank-chart\" viewBox=\"0 0 1160 %d\" "
	             "width=\"1160\" height=\"%d\">",
	          hgt + 30, hgt + 30);
	char a[4][32];
	for (int64_t k = 0; k < n; k++) {
		const struct sim_rank *x = &r->ranks[k];
		double v[4] = {x->compute_s, x->comm_exposed_s, x->pipeline_wait_s, x->idle_s};
		double y = hgt;
		rh_printf(h, "<g class=\"rank-bar\" data-rank=\"%lld\"><title>rank %lld (stage %lld): "
		             "compute %s, exposed communication %s, pipeline wait %s, idle %s</title>",
		          (long long)k, (long long)k,
		          (long long)(k / (prog->stage_ranks > 0 ? prog->stage_ranks : 1)),
		          rh_si(h, a[0], 32, v[0], "s"), rh_si(h, a[1], 32, v[1], "s"),
		          rh_si(h, a[2], 32, v[2], "s"), rh_si(h, a[3], 32, v[3], "s"));
		for (int c = 0; c < 4; c++) {
			double ph = v[c] / top * hgt;
			if (ph <= 0)
				continue;
			y -= ph;
			rh_printf(h, "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\"/>",
			          50 + k * bw, y, bw > 2 ? bw - 0.5 : bw, ph, colours[c]);
		}
		rh_put(h, "</g>\n");
	}
	rh_printf(h, "<text x=\"45\" y=\"10\" font-size=\"10\" text-anchor=\"end\">%s</text>"
	             "<text x=\"45\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">0</text>"
	             "<text x=\"50\" y=\"%d\" font-size=\"10\">rank 0</text>"
	             "<text x=\"1150\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">rank %lld</text>",
	          rh_si(h, a[0], 32, top, "s"), hgt, hgt + 14, hgt + 14, (long long)(n - 1));
	rh_put(h, "</svg><div class=\"legend\">");
	for (int c = 0; c < 4; c++)
		rh_printf(h, "<span><i style=\"background:%s\"></i>%s</span>", colours[c], names[c]);
	rh_put(h, "</div></figure>\n");
}

static void compare_table(struct report_html *h, const struct estimate *e,
                          const struct sim_result *r)
{
	double comp = 0, comm = 0, wait = 0, peak = 0;
	for (int64_t k = 0; k < r->n_ranks; k++) {
		const struct sim_rank *x = &r->ranks[k];
		comp = x->compute_s > comp ? x->compute_s : comp;
		comm = x->comm_exposed_s > comm ? x->comm_exposed_s : comm;
		wait = x->pipeline_wait_s > wait ? x->pipeline_wait_s : wait;
		peak = x->peak_memory_bytes > peak ? x->peak_memory_bytes : peak;
	}
	static const char *const cols[] = {"figure", "estimated", "simulated", "difference", NULL};
	rh_table_begin(h, "est-sim", cols);
	const char *names[] = {"iteration", "compute (simulated: the busiest rank)",
	                       "communication (estimated: all; simulated: exposed, worst rank)",
	                       "pipeline bubble (simulated: the longest wait)",
	                       "memory per device (peak)"};
	double est[] = {e->iteration_s, e->compute_s, e->comm_s, e->bubble_s,
	                e->memory_bytes_per_device};
	double sim[] = {r->iteration_s, comp, comm, wait, peak};
	for (int i = 0; i < 5; i++) {
		char a[32], b[32], c[32];
		const char *unit = i == 4 ? "B" : "s";
		rh_put(h, "<tr>");
		rh_td(h, names[i]);
		rh_td_num(h, est[i], rh_si(h, a, sizeof a, est[i], unit));
		rh_td_num(h, sim[i], rh_si(h, b, sizeof b, sim[i], unit));
		double pct = est[i] > 0 ? 100 * (sim[i] / est[i] - 1) : NAN;
		if (isfinite(pct))
			snprintf(c, sizeof c, "%+.1f%%", fabs(pct) < 0.05 ? 0.0 : pct);
		else
			snprintf(c, sizeof c, "-");
		rh_td_num(h, pct, c);
		rh_put(h, "</tr>\n");
	}
	rh_table_end(h);
}

/* training.optimizer_offload, activation_offload_layers: a server's host
 * memory by the estimate (the simulation does not track it), with its
 * verdict (cost_memory_verdict) where the topology states the host's
 * memory; nothing without offload. */
static void host_memory(struct report_html *h, const struct estimate *e)
{
	char a[32], b[32];
	if (!(e->host_bytes_per_server > 0))
		return;
	rh_printf(h, "<p id=\"host-memory\">Host memory per server (the offloaded optimizer state "
	             "and activations, estimated): %s",
	          rh_si(h, a, sizeof a, e->host_bytes_per_server, "B"));
	if (e->host_capacity_bytes > 0) {
		struct cost_verdict v;
		cost_memory_verdict(e->host_bytes_per_server, e->host_capacity_bytes, &v);
		rh_printf(h, " of %s: <b>%s</b>.</p>\n",
		          rh_si(h, b, sizeof b, e->host_capacity_bytes, "B"), cost_fit_names[v.fit]);
	} else {
		rh_put(h, ", not checked: the topology states no server.host.memory_GB.</p>\n");
	}
}

/* Where the two disagree and why: the estimate's categories, the
 * collectives slowed by contention, the gradient stream's overlap. */
static void disagreement(struct report_html *h, const struct estimate *e,
                         const struct program *prog, const struct sim_result *r)
{
	char a[32], b[32], c[32];
	rh_put(h, "<h3>Where they disagree, and why</h3>\n<ul>");
	double pct = e->iteration_s > 0 ? 100 * (r->iteration_s / e->iteration_s - 1) : 0;
	rh_printf(h, "<li>The simulation's iteration is %s against the estimate's %s (%+.1f%%).</li>",
	          rh_si(h, a, sizeof a, r->iteration_s, "s"), rh_si(h, b, sizeof b, e->iteration_s, "s"),
	          fabs(pct) < 0.05 ? 0.0 : pct);
	bool stream1 = false;
	for (int i = 0; i < prog->n_steps; i++)
		stream1 |= prog->steps[i].stream == 1;
	double gs = e->category_s[EST_GRADIENT_SYNC];
	if (stream1 && gs > 0)
		rh_printf(h, "<li>Overlap: the estimate leaves gradient synchronisation (%s) "
		             "exposed; the simulation runs it on stream 1 beside the backward pass "
		             "(the lower lane of each timeline row), so only what sticks out past the "
		             "backward pass counts.</li>",
		          rh_si(h, a, sizeof a, gs, "s"));
	/* the collectives slowed most, by how much their formula was exceeded */
	int n = 0, idx[10];
	for (int pick = 0; pick < 10; pick++) {
		int best = -1;
		double worst = 0;
		for (int i = 0; i < r->n_collectives; i++) {
			const struct sim_collective *x = &r->collectives[i];
			double over = x->simulated_s - x->formula_s;
			bool taken = false;
			for (int j = 0; j < n; j++)
				taken |= idx[j] == i;
			if (!taken && over > 1e-3 * x->formula_s && over > worst) {
				worst = over;
				best = i;
			}
		}
		if (best < 0)
			break;
		idx[n++] = best;
	}
	if (!n) {
		rh_put(h, "<li>Contention: none; every collective took the time of its formula.</li>");
	} else {
		rh_put(h, "<li>Contention: collectives that took longer than their formula because they "
		          "shared links with other traffic:<table><thead><tr><th>collective</th>"
		          "<th>formula</th><th>simulated</th><th>over</th></tr></thead><tbody>");
		for (int j = 0; j < n; j++) {
			const struct sim_collective *x = &r->collectives[idx[j]];
			const char *label = x->step >= 0 && x->step < prog->n_steps &&
			                    prog->steps[x->step].label ? prog->steps[x->step].label
			                                               : "collective";
			rh_put(h, "<tr>");
			rh_td(h, label);
			rh_td_num(h, x->formula_s, rh_si(h, a, sizeof a, x->formula_s, "s"));
			rh_td_num(h, x->simulated_s, rh_si(h, b, sizeof b, x->simulated_s, "s"));
			snprintf(c, sizeof c, "%+.1f%%", 100 * (x->simulated_s / x->formula_s - 1));
			rh_td(h, c);
			rh_put(h, "</tr>");
		}
		rh_put(h, "</tbody></table></li>");
	}
	rh_put(h, "</ul>\n<h3>The estimate's breakdown</h3>\n<table><tbody>");
	for (int k = 0; k < EST_CATEGORY_COUNT; k++) {
		if (e->category_s[k] <= 0)
			continue;
		rh_put(h, "<tr>");
		rh_td(h, est_category_names[k]);
		rh_td_num(h, e->category_s[k], rh_si(h, a, sizeof a, e->category_s[k], "s"));
		rh_put(h, "</tr>");
	}
	rh_put(h, "</tbody></table>\n");
}

static void memory_chart(struct report_html *h, const struct sim_result *r, const struct by_rank *b,
                         const int64_t *ranks, int n, double est_bytes, double hbm)
{
	enum { W = 1000, H = 160, X0 = 60, Y0 = 12 };
	double top = est_bytes;
	for (int i = 0; i < n; i++)
		top = r->ranks[ranks[i]].peak_memory_bytes > top ? r->ranks[ranks[i]].peak_memory_bytes
		                                                 : top;
	bool show_hbm = hbm > 0 && hbm < 1.5 * top;
	if (show_hbm)
		top = hbm > top ? hbm : top;
	if (!(top > 0) || !(r->iteration_s > 0)) {
		rh_put(h, "<p>No memory was recorded.</p>\n");
		return;
	}
	top *= 1.05;
	/* the axis starts above zero when every rank holds most of the top
	 * all along (the activations would be a ripple on the base) */
	double low = top;
	for (int i = 0; i < n; i++)
		for (int64_t j = b->start[ranks[i]]; j < b->start[ranks[i] + 1]; j++) {
			const struct sim_event *e = &r->events[b->ev[j]];
			if (e->kind == SIM_EV_MEMORY && e->bytes < low)
				low = e->bytes;
		}
	if (show_hbm && hbm < low)
		low = hbm;
	if (est_bytes > 0 && est_bytes < low)
		low = est_bytes;
	low = low > 0.5 * top ? floor(low / top * 10) / 10 * top : 0;
	char a[32], col[8];
	rh_printf(h, "<figure style=\"margin:6px 0\"><svg id=\"memory-chart\" viewBox=\"0 0 %d %d\" "
	             "width=\"%d\" height=\"%d\">",
	          W + X0 + 10, H + Y0 + 24, W + X0 + 10, H + Y0 + 24);
	rh_printf(h, "<g transform=\"translate(0 %d)\">", Y0);
	for (int i = 0; i <= 4; i++) {
		double y = H - H * i / 4.0;
		rh_printf(h, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ec\"/>"
		             "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>",
		          X0, X0 + W, y, y, X0 - 4, y + 3,
		          rh_si(h, a, sizeof a, low + (top - low) * i / 4, "B"));
	}
	double sx = W / r->iteration_s, sy = H / (top - low);
	if (show_hbm)
		rh_printf(h, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#aa3377\" "
		             "stroke-dasharray=\"6 3\"><title>HBM %s</title></line>",
		          X0, X0 + W, H - (hbm - low) * sy, H - (hbm - low) * sy, rh_si(h, a, sizeof a, hbm, "B"));
	if (est_bytes > 0)
		rh_printf(h, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\" "
		             "stroke-dasharray=\"2 3\"><title>estimated peak %s</title></line>",
		          X0, X0 + W, H - (est_bytes - low) * sy, H - (est_bytes - low) * sy,
		          rh_si(h, a, sizeof a, est_bytes, "B"));
	/* a rank whose memory track is another's drawn is named beside it */
	uint64_t key[16];
	int same[16];
	for (int i = 0; i < n && i < 16; i++) {
		key[i] = 1469598103934665603ull;
		for (int64_t j = b->start[ranks[i]]; j < b->start[ranks[i] + 1]; j++) {
			const struct sim_event *e = &r->events[b->ev[j]];
			if (e->kind == SIM_EV_MEMORY)
				key[i] = mix(mix(key[i], (uint64_t)util_double_bits(e->start_s)),
				             (uint64_t)util_double_bits(e->bytes));
		}
		same[i] = i;
		for (int j = 0; j < i; j++)
			if (key[j] == key[i] && same[j] == j) {
				same[i] = j;
				break;
			}
	}
	for (int i = 0; i < n; i++) {
		int64_t k = ranks[i];
		if (same[i] != i)
			continue;
		rh_printf(h, "<polyline class=\"mem-line\" data-rank=\"%lld\" fill=\"none\" "
		             "stroke=\"%s\" stroke-width=\"1.5\" points=\"",
		          (long long)k, rh_colour(col, i));
		double prev_y = -1, prev_x = -1;
		for (int64_t j = b->start[k]; j < b->start[k + 1]; j++) {
			const struct sim_event *e = &r->events[b->ev[j]];
			if (e->kind != SIM_EV_MEMORY)
				continue;
			double x = X0 + e->start_s * sx, y = H - (e->bytes - low) * sy;
			if (prev_y >= 0 && x - prev_x < 0.5 && fabs(y - prev_y) < 0.5)
				continue;
			if (prev_y >= 0)
				rh_printf(h, "%.1f,%.1f ", x, prev_y);
			rh_printf(h, "%.1f,%.1f ", x, y);
			prev_x = x;
			prev_y = y;
		}
		if (prev_y >= 0)
			rh_printf(h, "%d,%.1f", X0 + W, prev_y);
		rh_printf(h, "\"><title>rank %lld, peak %s</title></polyline>\n", (long long)k,
		          rh_si(h, a, sizeof a, r->ranks[k].peak_memory_bytes, "B"));
	}
	rh_put(h, "</g></svg><div class=\"legend\">");
	for (int i = 0; i < n; i++) {
		if (same[i] != i)
			continue;
		rh_printf(h, "<span><i style=\"background:%s\"></i>rank %lld", rh_colour(col, i),
		          (long long)ranks[i]);
		for (int j = i + 1; j < n; j++)
			if (same[j] == i)
				rh_printf(h, " = rank %lld", (long long)ranks[j]);
		rh_put(h, "</span>");
	}
	rh_printf(h, "<span>dotted: the estimate's peak%s%s%s</span></div></figure>\n",
	          show_hbm ? "; dashed: the HBM" : "", low > 0 ? "; the axis starts at " : "",
	          low > 0 ? rh_si(h, a, sizeof a, low, "B") : "");
}

static void links_chart(struct report_html *h, const struct sim_result *r)
{
	int n = r->n_links < 12 ? r->n_links : 12;
	if (!n) {
		rh_put(h, "<p>No link carried traffic.</p>\n");
		return;
	}
	double top = 0;
	for (int i = 0; i < n; i++)
		top = r->links[i].utilisation > top ? r->links[i].utilisation : top;
	if (!(top > 0))
		top = 1;
	char a[32], b[32];
	rh_printf(h, "<figure style=\"margin:6px 0\"><svg id=\"links-chart\" viewBox=\"0 0 1000 %d\" "
	             "width=\"1000\" height=\"%d\">",
	          n * 20 + 4, n * 20 + 4);
	for (int i = 0; i < n; i++) {
		const struct sim_link *l = &r->links[i];
		double w = 600 * l->utilisation / top;
		rh_printf(h, "<g class=\"link-bar\"><text x=\"190\" y=\"%d\" font-size=\"11\" "
		             "text-anchor=\"end\">",
		          i * 20 + 15);
		rh_esc(h, l->name);
		rh_printf(h, "</text><rect x=\"200\" y=\"%d\" width=\"%.1f\" height=\"14\" fill=\"#4477aa\">"
		             "<title>%s carried, busy %s</title></rect><text x=\"%.1f\" y=\"%d\" "
		             "font-size=\"11\">%.1f%% of the iteration, %s</text></g>\n",
		          i * 20 + 3, w < 1 ? 1 : w, rh_si(h, a, sizeof a, l->bytes, "B"),
		          rh_si(h, b, sizeof b, l->busy_s, "s"), 206 + w, i * 20 + 15,
		          100 * l->utilisation, rh_si(h, a, sizeof a, l->bytes, "B"));
	}
	rh_put(h, "</svg><figcaption>Utilisation: the bytes a link carried over its bandwidth times "
	          "the iteration; below, when the busiest of them were busy.</figcaption>"
	          "</figure>\n");
}

/* The busiest links over time (sim_result.series): a row per link, a cell
 * per bin, shaded by the link's utilisation in it, on the iteration's
 * time axis. */
static void links_time_chart(struct report_html *h, const struct sim_result *r)
{
	if (r->n_series == 0 || !(r->bin_s > 0) || !(r->iteration_s > 0))
		return;
	int n = r->n_series;
	double span = r->iteration_s, scale = 780 / span;
	char a[32], b[32];
	rh_printf(h, "<figure style=\"margin:6px 0\"><svg id=\"links-time-chart\" viewBox=\"0 0 1000 "
	             "%d\" width=\"1000\" height=\"%d\">", n * 20 + 24, n * 20 + 24);
	for (int i = 0; i < n; i++) {
		const struct sim_link_series *ls = &r->series[i];
		rh_printf(h, "<g class=\"link-row\"><text x=\"190\" y=\"%d\" font-size=\"11\" "
		             "text-anchor=\"end\">", i * 20 + 15);
		rh_esc(h, r->links[ls->link].name);
		rh_printf(h, "</text><rect x=\"200\" y=\"%d\" width=\"780\" height=\"16\" "
		             "fill=\"none\" stroke=\"#ccc\"/>", i * 20 + 2);
		for (int k = 0; k < SIM_BINS && k * r->bin_s < span; k++) {
			double u = ls->utilisation[k];
			if (!(u > 0))
				continue;
			double x0 = k * r->bin_s, x1 = fmin((k + 1) * r->bin_s, span);
			rh_printf(h, "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"16\" "
			             "fill=\"#4477aa\" fill-opacity=\"%.3f\"><title>%s to %s: %.0f%% "
			             "of its bandwidth</title></rect>", 200 + x0 * scale, i * 20 + 2,
			          fmax(0.5, (x1 - x0) * scale), fmin(1, u),
			          rh_si(h, a, sizeof a, x0, "s"), rh_si(h, b, sizeof b, x1, "s"), 100 * u);
		}
		rh_put(h, "</g>\n");
	}
	rh_printf(h, "<text x=\"200\" y=\"%d\" font-size=\"11\">0</text><text x=\"980\" y=\"%d\" "
	             "font-size=\"11\" text-anchor=\"end\">%s</text>", n * 20 + 18, n * 20 + 18,
	          rh_si(h, a, sizeof a, span, "s"));
	rh_printf(h, "</svg><figcaption>The %d busiest links over the iteration, in bins of %s: the "
	             "darker, the larger the share of the link's bandwidth its transfers used (a "
	             "transfer's bytes spread over its duration). The same figures as "
	             "<code>simulate</code>'s \"busiest links over time\" and its JSON's "
	             "<code>links_over_time</code>.</figcaption></figure>\n",
	          n, rh_si(h, a, sizeof a, r->bin_s, "s"));
}

/* Whether a step's traffic leaves the servers: a collective whose first
 * group spans servers, a pipeline transfer between ranks of two servers.
 * rank: the rank that ran it. */
static bool step_across(const struct prog_step *st, const struct program *prog, int64_t rank,
                        int64_t dps)
{
	int64_t sr = prog->stage_ranks > 0 ? prog->stage_ranks : 1;
	if (st->kind == PROG_RECV)
		return (rank + (st->peer_stage - st->stage) * sr) / dps != rank / dps;
	int64_t base = rank / sr * sr, first = -1;
	for (int k = 0; k < st->groups.size; k++) {
		int64_t server = (base + rank_groups_rank(&st->groups, 0, k)) / dps;
		if (first >= 0 && server != first)
			return true;
		first = server;
	}
	return false;
}

/* Every rank's traffic over the iteration, inside servers and across
 * them: each collective's ring volume (and each pipeline transfer's
 * bytes, counted where it is received) spread over the time the rank
 * spent in it, summed over the ranks, in TB bins. */
static void traffic_chart(struct report_html *h, const struct topology *t,
                          const struct program *prog, const struct sim_result *r)
{
	enum { TB = 200, W = 1000, H = 140, X0 = 70 };
	if (!(r->iteration_s > 0) || r->n_events == 0)
		return;
	double *bin = calloc(2 * TB, sizeof *bin);
	if (!bin) {
		h->oom = true;
		return;
	}
	int64_t dps = t->devices_per_server > 0 ? t->devices_per_server : 1;
	double dt = r->iteration_s / TB;
	for (int64_t i = 0; i < r->n_events; i++) {
		const struct sim_event *e = &r->events[i];
		if (e->kind != SIM_EV_COLLECTIVE || e->step < 0 || e->step >= prog->n_steps)
			continue;
		const struct prog_step *st = &prog->steps[e->step];
		double bytes = st->kind == PROG_RECV ? st->bytes : report_step_sent_bytes(st);
		if (!(bytes > 0))
			continue;
		double *b = bin + (step_across(st, prog, e->rank, dps) ? TB : 0);
		int lo = (int)(e->start_s / dt), hi = (int)(e->end_s / dt);
		lo = lo < 0 ? 0 : lo >= TB ? TB - 1 : lo;
		hi = hi < lo ? lo : hi >= TB ? TB - 1 : hi;
		double span = e->end_s - e->start_s;
		for (int k = lo; k <= hi; k++) {
			double a = fmax(e->start_s, k * dt), z = fmin(e->end_s, (k + 1) * dt);
			b[k] += span > 0 ? bytes * fmax(z - a, 0) / span : bytes;
		}
	}
	double top = 0;
	for (int k = 0; k < 2 * TB; k++) {
		bin[k] /= dt; /* bytes per second */
		top = bin[k] > top ? bin[k] : top;
	}
	if (!(top > 0)) {
		free(bin);
		rh_put(h, "<p>No traffic between devices.</p>\n");
		return;
	}
	top *= 1.05;
	static const char *const colours[] = {"#4477aa", "#ee6677"};
	static const char *const names[] = {"inside servers (the server's tiers)",
	                                    "across servers (NICs and fabric)"};
	char a[32];
	rh_printf(h, "<figure style=\"margin:6px 0\"><svg id=\"traffic-chart\" viewBox=\"0 0 %d %d\" "
	             "width=\"%d\" height=\"%d\"><g transform=\"translate(0 8)\">",
	          W + X0 + 10, H + 28, W + X0 + 10, H + 28);
	for (int i = 0; i <= 4; i++) {
		double y = H - H * i / 4.0;
		rh_printf(h, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e6ec\"/>"
		             "<text x=\"%d\" y=\"%.1f\" font-size=\"10\" text-anchor=\"end\">%s</text>",
		          X0, X0 + W, y, y, X0 - 4, y + 3, rh_si(h, a, sizeof a, top * i / 4, "B/s"));
	}
	for (int c = 0; c < 2; c++) {
		rh_printf(h, "<polyline class=\"traffic-line\" fill=\"none\" stroke=\"%s\" "
		             "stroke-width=\"1.5\" points=\"",
		          colours[c]);
		for (int k = 0; k < TB; k++) {
			double y = H - bin[c * TB + k] / top * H;
			rh_printf(h, "%.1f,%.1f %.1f,%.1f ", X0 + k * (double)W / TB, y,
			          X0 + (k + 1) * (double)W / TB, y);
		}
		rh_printf(h, "\"><title>%s</title></polyline>\n", names[c]);
	}
	rh_printf(h, "<text x=\"%d\" y=\"%d\" font-size=\"10\">0 s</text><text x=\"%d\" y=\"%d\" "
	             "font-size=\"10\" text-anchor=\"end\">%s</text>",
	          X0, H + 14, X0 + W, H + 14, rh_si(h, a, sizeof a, r->iteration_s, "s"));
	rh_put(h, "</g></svg><div class=\"legend\">");
	for (int c = 0; c < 2; c++)
		rh_printf(h, "<span><i style=\"background:%s\"></i>%s</span>", colours[c], names[c]);
	rh_put(h, "</div><figcaption>The bytes all ranks send per second, over the iteration: each "
	          "collective's ring volume spread over the time its rank spent in it (waits "
	          "included), each pipeline transfer where it is received. Drawn from the timeline's "
	          "events and the plan's volumes, not measured on the links.</figcaption></figure>\n");
	free(bin);
}

/* The ranks drawn when the caller names none: rank 0, the first rank of
 * each later stage, the rank that waits longest on communication. */
static int default_ranks(const struct sim_result *r, const struct program *prog, int64_t *out)
{
	int n = 0;
	int64_t sr = prog->stage_ranks > 0 ? prog->stage_ranks : r->n_ranks;
	for (int64_t k = 0; k < r->n_ranks && n < MAX_DEFAULT_RANKS - 1; k += sr)
		out[n++] = k;
	int64_t worst = 0;
	for (int64_t k = 1; k < r->n_ranks; k++)
		if (r->ranks[k].comm_exposed_s > r->ranks[worst].comm_exposed_s)
			worst = k;
	bool have = false;
	for (int i = 0; i < n; i++)
		have |= out[i] == worst;
	if (!have)
		out[n++] = worst;
	return n;
}

/* The calibration the times were priced with, what the interval is, and
 * the plan's settings outside the runs the calibration was fitted on. */
static void calibration_prose(struct report_html *h, const struct report_sim_view *v)
{
	if (!v || !v->calibration)
		return;
	const struct cal_interval *iv = v->interval;
	rh_put(h, "<p>Calibration: ");
	rh_esc(h, v->calibration);
	if (iv && iv->have)
		rh_put(h, ". The 90% interval is its figures' covariance and cross-validated "
		          "residuals around the simulated time");
	else if (iv && iv->why) {
		rh_put(h, " (");
		rh_esc(h, iv->why);
		rh_put(h, ")");
	}
	rh_put(h, ".</p>\n");
	if (iv && iv->n_outside > 0) {
		char w[1024];
		rh_put(h, "<p class=\"note\">Outside the runs the calibration was fitted on: ");
		rh_esc(h, cost_cal_outside_text(w, sizeof w, iv->outside, iv->n_outside));
		rh_put(h, ". The interval is the spread over those runs, not beyond them.</p>\n");
	}
}

void report_html_sim(struct report_html *h, const struct plan *p, const struct estimate *e,
                     const struct program *prog, const struct sim_result *r,
                     const struct report_sim_view *v)
{
	char a[32], b[32];
	rh_put(h, "<section class=\"simulation\" id=\"simulation\">\n<h2>Simulation</h2>\n"
	          "<div class=\"facts\">");
	const struct cal_interval *iv = v ? v->interval : NULL;
	rh_printf(h, "<div>simulated iteration<b>%s</b></div>", rh_si(h, a, sizeof a, r->iteration_s,
	                                                               "s"));
	if (iv && iv->have)
		rh_printf(h, "<div>90%% interval<b>%s-%s</b></div>", rh_si(h, a, sizeof a, iv->lo_s, "s"),
		          rh_si(h, b, sizeof b, iv->hi_s, "s"));
	rh_printf(h, "<div>estimated<b>%s</b></div>", rh_si(h, b, sizeof b, e->iteration_s, "s"));
	rh_printf(h, "<div>ranks<b>%lld in %d stage(s)</b></div><div>messages simulated<b>%lld</b>"
	             "</div><div>peak memory (simulated)<b>%s</b></div></div>\n",
	          (long long)r->n_ranks, prog->n_stages, (long long)r->messages,
	          rh_si(h, a, sizeof a, sim_peak_memory(r), "B"));
	calibration_prose(h, v);
	rh_put(h, "<h3>Estimate beside simulation</h3>\n");
	compare_table(h, e, r);
	host_memory(h, e);
	disagreement(h, e, prog, r);
	rh_put(h, "<h3>Every rank</h3>\n<p>Each bar one rank: where its iteration went. Click a "
	          "bar to add its rank to the timeline below.</p>\n");
	ranks_chart(h, r, prog);

	struct by_rank br = {0};
	int *group_of = malloc(((size_t)r->n_ranks + 1) * sizeof *group_of);
	struct group *groups = NULL;
	int n_groups = 0;
	int64_t defaults[MAX_DEFAULT_RANKS];
	const int64_t *ranks = v ? v->ranks : NULL;
	int n_ranks = v ? v->n_ranks : 0;
	if (!group_of || !index_events(r, &br)) {
		h->oom = true;
		goto out;
	}
	sort_events(r, &br);
	if (n_ranks == 0) {
		n_ranks = default_ranks(r, prog, defaults);
		ranks = defaults;
	}
	rh_put(h, "<h3>Timeline</h3>\n");
	if (r->n_events == 0) {
		rh_put(h, "<p>The simulation was not traced: no timeline.</p>\n");
	} else {
		n_groups = fold(r, prog, &br, group_of, &groups);
		if (n_groups < 0) {
			h->oom = true;
			goto out;
		}
		struct tl_ctx x = {h, r, prog, r->iteration_s > 0 ? TL_W / r->iteration_s : 0};
		rh_printf(h, "<p>One row per chosen rank: stream 0 (compute, the ops' collectives, "
		             "pipeline sends) above, stream 1 (gradient synchronisation) below; grey "
		             "where stream 0 waits. The %lld ranks fold into %d group(s) of ranks whose "
		             "rows look the same; pick ranks to unfold their groups.</p>\n",
		          (long long)r->n_ranks, n_groups);
		rh_put(h, "<div class=\"controls\">ranks: <input id=\"rank-pick\" placeholder=\"0,5,17-20\">"
		          " <button id=\"rank-pick-go\">show</button> <span id=\"rank-pick-status\">"
		          "</span></div>\n");
		legend(h);
		rh_printf(h, "<table class=\"timeline\"><thead><tr><th style=\"width:%dpx\">rank</th><th>",
		          TL_LABEL_W);
		time_axis(h, r->iteration_s);
		rh_put(h, "</th></tr></thead><tbody>\n");
		for (int i = 0; i < n_ranks; i++) {
			int64_t k = ranks[i];
			if (k < 0 || k >= r->n_ranks)
				continue;
			rh_printf(h, "<tr class=\"tl-row\" data-rank=\"%lld\"><td>rank %lld<br><small>stage "
			             "%lld, compute %s</small></td><td>",
			          (long long)k, (long long)k,
			          (long long)(k / (prog->stage_ranks > 0 ? prog->stage_ranks : 1)),
			          rh_si(h, a, sizeof a, r->ranks[k].compute_s, "s"));
			timeline_svg(&x, &br, k);
			rh_put(h, "</td></tr>\n");
		}
		for (int j = 0; j < n_groups; j++) {
			rh_put(h, "<tr class=\"tl-group\" data-ranks=\"");
			group_ranges(h, group_of, r->n_ranks, j);
			rh_printf(h, "\"><td>%lld rank(s): ", (long long)groups[j].n);
			group_ranges(h, group_of, r->n_ranks, j);
			rh_printf(h, "<br><small>drawn: rank %lld</small></td><td>", (long long)groups[j].first);
			timeline_svg(&x, &br, groups[j].first);
			rh_put(h, "</td></tr>\n");
		}
		rh_put(h, "</tbody></table>\n");
	}
	rh_put(h, "<h3>Memory over time</h3>\n<p>What each chosen rank holds: its stage's base "
	          "(parameters, gradients, optimizer state, buffers, the runtime's reserve) and the "
	          "activations of the micro-batches in flight.</p>\n");
	{
		int64_t shown[16];
		int n = 0;
		for (int i = 0; i < n_ranks && n < (int)SL_COUNTOF(shown); i++)
			if (ranks[i] >= 0 && ranks[i] < r->n_ranks)
				shown[n++] = ranks[i];
		memory_chart(h, r, &br, shown, n, e->memory_bytes_per_device,
		             p->scenario->topo->device.hbm_bytes);
	}
	rh_put(h, "<h3>Traffic over time</h3>\n");
	traffic_chart(h, p->scenario->topo, prog, r);
	rh_put(h, "<h3>Busiest links</h3>\n");
	links_chart(h, r);
	rh_put(h, "<h3>Busiest links over time</h3>\n");
	links_time_chart(h, r);
out:
	rh_put(h, "</section>\n");
	free(groups);
	free(group_of);
	free(br.start);
	free(br.ev);
}
