/* simreport.c — what `shardlab simulate` and `shardlab compare` share: one
 * plan estimated, lowered and simulated (with a progress line when stderr
 * is a terminal), the summaries of a simulation (ranks, links, contended
 * collectives), the strategy summary, bytes per device, Kendall's tau, and
 * compare's table, ranking and explanation of its largest disagreement.
 *
 * Units: seconds, bytes. Everything here is linear or n log n in ranks,
 * links and collectives except Kendall's tau (quadratic in the few plans).
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "report.h"

/* ------------------------------------------------------------ running */

void cli_sim_progress_cb(void *ctx, double simulated_s, double fraction)
{
	struct cli_sim_progress *p = ctx;
	int pct = (int)(100 * (fraction < 0 ? 0 : fraction > 1 ? 1 : fraction));
	if (p->shown && pct == p->last_pct)
		return;
	char b[32];
	fprintf(stderr, "\r\033[Ksimulating %s: %3d%% (simulated %s)", p->label, pct,
	        cli_si(b, sizeof b, simulated_s, "s"));
	fflush(stderr);
	p->last_pct = pct;
	p->shown = true;
}

/* "40 s", "12 min", "3.5 h": a wall time as a person reads it. */
static const char *sr_duration(char *buf, size_t size, double s)
{
	if (s < 120)
		snprintf(buf, size, "%.0f s", s);
	else if (s < 7200)
		snprintf(buf, size, "%.0f min", s / 60);
	else
		snprintf(buf, size, "%.1f h", s / 3600);
	return buf;
}

bool cli_sim_announce_text(char *buf, size_t size, const char *label, int64_t ranks,
                           int64_t micro_batches, double events)
{
	double expect_s = events * CLI_SIM_S_PER_EVENT;
	char t[32], m[32];
	double bytes = CLI_SIM_BASE_BYTES + CLI_SIM_BYTES_PER_RANK * (double)ranks;
	snprintf(buf, size, "%s: %lld ranks, %lld micro-batch%s, %.3g program steps x ranks; "
	         "expect roughly %s and %s of memory", label ? label : "the plan", (long long)ranks,
	         (long long)micro_batches, micro_batches == 1 ? "" : "es", events,
	         sr_duration(t, sizeof t, expect_s), cli_si(m, sizeof m, bytes, "B"));
	return expect_s >= CLI_SIM_ANNOUNCE_S || ranks >= 4096;
}

/* sim_plan's before_run: say the size and cost of a long run. */
struct sr_announce {
	const char *command, *label;
};

static void sr_before_run(void *ctx, int64_t ranks, int64_t micro_batches, double events)
{
	const struct sr_announce *x = ctx;
	char note[256];
	if (cli_sim_announce_text(note, sizeof note, x->label, ranks, micro_batches, events)) {
		fprintf(stderr, "shardlab %s: %s%s\n", x->command, note,
		        isatty(STDERR_FILENO) ? " (progress below)" : "");
		fflush(stderr);
	}
}

void cli_sim_progress_clear(struct cli_sim_progress *p)
{
	if (p->shown) {
		fputs("\r\033[K", stderr);
		fflush(stderr);
	}
	p->shown = false;
}

bool cli_simulate_plan(struct arena *a, const struct plan *p, const struct cli_sim_setup *o,
                       struct cli_sim_outcome *out, struct diag_list *d)
{
	struct cli_sim_progress pr = {.label = o->label ? o->label : "", .last_pct = -1};
	struct sim_options so = {.fidelity = o->fidelity, .algo = o->algo, .trace = o->trace,
	                         .seed = o->seed};
	if (isatty(STDERR_FILENO)) {
		so.progress = cli_sim_progress_cb;
		so.progress_ctx = &pr;
	}
	struct sr_announce an = {.command = o->announce, .label = o->label};
	if (o->announce) {
		so.before_run = sr_before_run;
		so.before_run_ctx = &an;
	}
	struct sim_plan_outcome r;
	sim_plan(a, p, o->bucket_bytes, o->max_events, &so, &r, d);
	cli_sim_progress_clear(&pr);
	*out = (struct cli_sim_outcome){.estimated = r.estimated, .lowered = r.lowered,
	                                .simulated = r.simulated, .est = r.est, .prog = r.prog,
	                                .sim = r.sim};
	return out->simulated;
}

/* -------------------------------------------------------------- figures */

double report_kendall_tau(const double *x, const double *y, int n)
{
	double concordant = 0, discordant = 0, ties_x = 0, ties_y = 0, pairs = 0;
	for (int i = 0; i < n; i++)
		for (int j = i + 1; j < n; j++) {
			double dx = x[i] - x[j], dy = y[i] - y[j];
			pairs++;
			if (dx == 0)
				ties_x++;
			if (dy == 0)
				ties_y++;
			if (dx != 0 && dy != 0) {
				if ((dx > 0) == (dy > 0))
					concordant++;
				else
					discordant++;
			}
		}
	double den = sqrt((pairs - ties_x) * (pairs - ties_y));
	return den > 0 ? (concordant - discordant) / den : NAN;
}

/* Bytes one device of a stage sends in steps[from .. from+n) of a slot
 * (the last micro-batch's backward, the first's forward). */
static double sr_range_sent(const struct program *p, int from, int n, bool last, bool first)
{
	double b = 0;
	for (int i = from; i < from + n; i++) {
		const struct prog_step *st = &p->steps[i];
		if (st->first_micro ? !first : st->stream == 1 && !st->every_micro && !last)
			continue;
		b += st->kind == PROG_SEND ? st->bytes : report_step_sent_bytes(st);
	}
	return b;
}

double report_program_comm_bytes(const struct program *p)
{
	double most = 0;
	for (int s = 0; s < p->n_stages; s++) {
		const struct prog_stage *st = &p->stages[s];
		double b = sr_range_sent(p, st->tail, st->n_tail, true, false);
		for (int k = 0; k < st->n_slots; k++) {
			const struct prog_slot *sl = &st->slots[k];
			int from[2], n[2];
			for (int j = prog_slot_ranges(p->chunks, sl, from, n); j-- > 0;)
				b += j == 1 || sl->weight || sl->backward
				             ? sr_range_sent(p, from[j], n[j], sl->last, false)
				             : sr_range_sent(p, from[j], n[j], true, sl->micro == 0);
		}
		most = b > most ? b : most;
	}
	return most;
}

const char *report_strategy_summary(char *buf, size_t size, const struct plan *p)
{
	struct plan_shape sh;
	plan_shape(p, &sh);
	if (!sh.compute) {
		snprintf(buf, size, "no compute");
		return buf;
	}
	int len;
	if (sh.cp > 1)
		len = snprintf(buf, size, "TP %" PRId64 " x CP %" PRId64 " x DP %" PRId64, sh.tp, sh.cp,
		               sh.dp);
	else
		len = snprintf(buf, size, "TP %" PRId64 " x DP %" PRId64, sh.tp, sh.dp);
	if (sh.copies > 1 && len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len, " x %" PRId64 " copies", sh.copies);
	if (sh.share < 0.95 && len >= 0 && (size_t)len < size)
		len += snprintf(buf + len, size - (size_t)len, " (%.0f%% of FLOPs)", 100 * sh.share);
	if (sh.ep > 1 && len >= 0 && (size_t)len < size)
		snprintf(buf + len, size - (size_t)len, ", EP %" PRId64 "%s", sh.ep,
		         !p->scenario ? ""
		         : p->scenario->training.moe_dispatcher == MOE_DISPATCH_HYBRIDEP ? " (HybridEP)"
		         : p->scenario->training.moe_dispatcher == MOE_DISPATCH_DEEPEP ? " (DeepEP)"
		                                                                      : "");
	return buf;
}

/* ------------------------------------------------------- a simulation */

static int sr_cmp_double(const void *pa, const void *pb)
{
	double a = *(const double *)pa, b = *(const double *)pb;
	return a < b ? -1 : a > b;
}

/* min, median, max of one per-rank figure (field offset into sim_rank). */
static void sr_rank_stats(const struct sim_result *r, size_t offset, double *v, double out[3])
{
	for (int64_t k = 0; k < r->n_ranks; k++)
		v[k] = *(const double *)((const char *)&r->ranks[k] + offset);
	qsort(v, (size_t)r->n_ranks, sizeof *v, sr_cmp_double);
	int64_t n = r->n_ranks;
	out[0] = v[0];
	out[1] = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
	out[2] = v[n - 1];
}

void report_sim_ranks(FILE *f, const struct sim_result *r)
{
	if (r->n_ranks < 1)
		return;
	double *v = malloc((size_t)r->n_ranks * sizeof *v);
	if (!v)
		return;
	static const char *const names[] = {"compute", "exposed communication",
	                                    "waiting on stragglers", "pipeline wait (bubble)",
	                                    "idle"};
	const size_t offsets[] = {offsetof(struct sim_rank, compute_s),
	                          offsetof(struct sim_rank, comm_exposed_s),
	                          offsetof(struct sim_rank, straggler_wait_s),
	                          offsetof(struct sim_rank, pipeline_wait_s),
	                          offsetof(struct sim_rank, idle_s)};
	/* the pipeline's transfers, part of the exposed communication: shown
	 * under it where there are any, and said where other traffic on their
	 * links made them slower than alone (the estimate prices them alone) */
	double alone[3], sends[3];
	sr_rank_stats(r, offsetof(struct sim_rank, pipeline_alone_s), v, alone);
	sr_rank_stats(r, offsetof(struct sim_rank, pipeline_transfer_s), v, sends);
	char head[64];
	snprintf(head, sizeof head, "per rank (%" PRId64 " ranks)", r->n_ranks);
	fprintf(f, "%-26s %-10s %-10s %s\n", head, "min", "median", "max");
	for (int k = 0; k < (int)SL_COUNTOF(offsets); k++) {
		double st[3];
		char b[3][32];
		sr_rank_stats(r, offsets[k], v, st);
		fprintf(f, "  %-24s %-10s %-10s %s\n", names[k], cli_si(b[0], 32, st[0], "s"),
		        cli_si(b[1], 32, st[1], "s"), cli_si(b[2], 32, st[2], "s"));
		if (offsets[k] == offsetof(struct sim_rank, comm_exposed_s) && sends[2] > 0)
			fprintf(f, "    %-22s %-10s %-10s %s\n", "of it pipeline sends",
			        cli_si(b[0], 32, sends[0], "s"), cli_si(b[1], 32, sends[1], "s"),
			        cli_si(b[2], 32, sends[2], "s"));
	}
	if (sends[1] > 1.2 * alone[1] && sends[1] - alone[1] > 0.01 * r->iteration_s) {
		char b[3][32];
		fprintf(f, "  the pipeline's sends took %s on the median rank, %s alone on their routes "
		        "(%s): other traffic shares their links, which the estimate does not price\n",
		        cli_si(b[0], 32, sends[1], "s"), cli_si(b[1], 32, alone[1], "s"),
		        report_pct_text(b[2], 32, report_diff_pct(sends[1], alone[1])));
	}
	free(v);
	int64_t worst = 0;
	for (int64_t k = 1; k < r->n_ranks; k++)
		if (r->ranks[k].comm_exposed_s > r->ranks[worst].comm_exposed_s)
			worst = k;
	char b[3][32];
	const struct sim_rank *w = &r->ranks[worst];
	fprintf(f, "  worst rank %" PRId64 " (most exposed communication): compute %s, exposed %s, "
	        "idle %s\n", worst, cli_si(b[0], 32, w->compute_s, "s"),
	        cli_si(b[1], 32, w->comm_exposed_s, "s"), cli_si(b[2], 32, w->idle_s, "s"));
}

void report_sim_links(FILE *f, const char *indent, const struct sim_result *r, int k)
{
	if (r->n_links == 0) {
		fprintf(f, "%sno link carried traffic\n", indent);
		return;
	}
	int n = r->n_links < k ? r->n_links : k, w = 4;
	for (int i = 0; i < n; i++) {
		int l = (int)strlen(r->links[i].name ? r->links[i].name : "?");
		w = l > w ? l : w;
	}
	fprintf(f, "%s%-*s  %-10s %s\n", indent, w, "link", "bytes", "utilisation");
	for (int i = 0; i < n; i++) {
		const struct sim_link *l = &r->links[i];
		char b[32];
		fprintf(f, "%s%-*s  %-10s %5.1f%%\n", indent, w, l->name ? l->name : "?",
		        cli_si(b, sizeof b, l->bytes, "B"), 100 * l->utilisation);
	}
}

void report_util_row(FILE *f, const double *u, int n)
{
	fputc('|', f);
	for (int k = 0; k < n; k++) {
		int c = u[k] <= 0 ? '.' : u[k] >= 0.95 ? '#'
		                        : '0' + (int)fmin(9, fmax(1, floor(10 * u[k] + 0.5)));
		fputc(c, f);
	}
	fputc('|', f);
}

void report_sim_link_series(FILE *f, const char *indent, const struct sim_result *r)
{
	if (r->n_series == 0) {
		fprintf(f, "%sno link carried traffic\n", indent);
		return;
	}
	char b[32];
	int w = 4, used = 0;
	for (int i = 0; i < r->n_series; i++) {
		const char *name = r->links[r->series[i].link].name;
		int l = (int)strlen(name ? name : "?");
		w = l > w ? l : w;
		for (int k = 0; k < SIM_BINS; k++)
			if (r->series[i].utilisation[k] > 0 && k + 1 > used)
				used = k + 1;
	}
	fprintf(f, "%s%d bins of %s from 0; each a tenth of the link's rate (1-9), '#' for 95%% or "
	        "more, '.' idle\n", indent, used, cli_si(b, sizeof b, r->bin_s, "s"));
	for (int i = 0; i < r->n_series; i++) {
		const struct sim_link_series *s = &r->series[i];
		const char *name = r->links[s->link].name;
		fprintf(f, "%s%-*s  ", indent, w, name ? name : "?");
		report_util_row(f, s->utilisation, used);
		fputc('\n', f);
	}
}

static const char *sr_step_label(const struct program *prog, int step, char *buf, size_t size)
{
	if (prog && step >= 0 && step < prog->n_steps && prog->steps[step].label)
		return prog->steps[step].label;
	snprintf(buf, size, "step %d", step);
	return buf;
}

static const struct sim_collective *sr_sort_base;

/* Most excess time first, then program order. */
static int sr_by_excess(const void *pa, const void *pb)
{
	const struct sim_collective *a = &sr_sort_base[*(const int *)pa];
	const struct sim_collective *b = &sr_sort_base[*(const int *)pb];
	double ea = a->simulated_s - a->formula_s, eb = b->simulated_s - b->formula_s;
	if (ea != eb)
		return ea > eb ? -1 : 1;
	return *(const int *)pa - *(const int *)pb;
}

/* The collectives that took longer than their formula, most excess first;
 * returns how many (up to k) went into idx. */
static int sr_contended(const struct sim_result *r, int *idx, int k)
{
	int n = 0;
	for (int i = 0; i < r->n_collectives; i++)
		if (r->collectives[i].simulated_s > r->collectives[i].formula_s * (1 + 1e-6))
			idx[n++] = i;
	sr_sort_base = r->collectives;
	qsort(idx, (size_t)n, sizeof *idx, sr_by_excess);
	return n < k ? n : k;
}

void report_sim_collectives(FILE *f, const char *indent, const struct program *prog,
                            const struct sim_result *r, int k)
{
	int *idx = r->n_collectives ? malloc((size_t)r->n_collectives * sizeof *idx) : NULL;
	int n = idx ? sr_contended(r, idx, k) : 0;
	if (n == 0)
		fprintf(f, "%snone: every collective took the time of its formula\n", indent);
	int w = 10;
	char lb[32];
	for (int i = 0; i < n; i++) {
		int l = (int)strlen(sr_step_label(prog, r->collectives[idx[i]].step, lb, sizeof lb));
		w = l > w ? l : w;
	}
	if (n > 0)
		fprintf(f, "%s%-*s  %-16s %-10s %-10s %s\n", indent, w, "collective", "algorithm",
		        "simulated", "formula", "excess");
	for (int i = 0; i < n; i++) {
		const struct sim_collective *c = &r->collectives[idx[i]];
		char b[3][32];
		fprintf(f, "%s%-*s  %-16s %-10s %-10s %s\n", indent, w,
		        sr_step_label(prog, c->step, lb, sizeof lb), collective_algo_names[c->algo],
		        cli_si(b[0], 32, c->simulated_s, "s"), cli_si(b[1], 32, c->formula_s, "s"),
		        report_pct_text(b[2], 32, report_diff_pct(c->simulated_s, c->formula_s)));
	}
	free(idx);
}

/* ------------------------------------------------------------- compare */

static bool sr_ranked(const struct compare_row *r)
{
	return !r->error && !r->sim_error;
}

double report_diff_pct(double sim, double est)
{
	return est > 0 ? 100 * (sim / est - 1) : 0;
}

const char *report_pct_text(char *buf, size_t size, double pct)
{
	/* a difference that rounds to zero prints as +0.0%, never -0.0% */
	snprintf(buf, size, "%+.1f%%", fabs(pct) < 0.05 ? 0.0 : pct);
	return buf;
}

static double sr_diff_pct(const struct compare_row *r)
{
	return report_diff_pct(r->simulated_s, r->estimated_s);
}

double report_sim_bubble(const struct sim_result *r, const struct program *prog)
{
	/* The busiest stage's: its ranks' mean time waiting for a neighbour
	 * or done early, the estimate's fill and drain of the critical stage. */
	double least = -1;
	int64_t n = prog->stage_ranks;
	for (int st = 0; n > 0 && st < prog->n_stages; st++) {
		double w = 0;
		for (int64_t k = st * n; k < (st + 1) * n && k < r->n_ranks; k++)
			w += r->ranks[k].pipeline_wait_s + r->ranks[k].idle_s;
		least = least < 0 || w / (double)n < least ? w / (double)n : least;
	}
	return least > 0 && r->iteration_s > 0 ? least / r->iteration_s : 0;
}

/* A row's 90% interval, "10.9-14.3 s", or "-". */
static const char *sr_interval_text(char *buf, size_t size, const struct compare_row *r)
{
	char lo[32], hi[32];
	if (r->error || !r->iv.have)
		return snprintf(buf, size, "-"), buf;
	return cli_range_text(buf, size, cli_si(lo, sizeof lo, r->iv.lo_s, "s"),
	                      cli_si(hi, sizeof hi, r->iv.hi_s, "s"));
}

void report_compare_table(FILE *f, const struct compare_row *rows, int n)
{
	int wp = 7, ws = 8, wi = 0;  /* wi: the intervals' column, 0 when no row has one */
	for (int i = 0; i < n; i++) {
		char b[80];
		int lp = (int)strlen(rows[i].planner), ls = (int)strlen(rows[i].strategy);
		int li = rows[i].iv.have ? (int)strlen(sr_interval_text(b, sizeof b, &rows[i])) : 0;
		wp = lp > wp ? lp : wp;
		ws = ls > ws ? ls : ws;
		wi = li > wi ? li : wi;
	}
	wi = wi > 0 && wi < 12 ? 12 : wi;
	fprintf(f, "  %-*s  %-*s  %-10s %-10s ", wp, "planner", ws, "strategy", "estimated",
	        "simulated");
	if (wi)
		fprintf(f, "%-*s ", wi, "90% interval");
	fprintf(f, "%-8s %-12s %-13s %s\n", "diff", "comm/device", "bubble est/sim", "memory/device");
	for (int i = 0; i < n; i++) {
		const struct compare_row *r = &rows[i];
		char b[4][32], diff[16];
		if (r->error) {
			fprintf(f, "  %-*s  %-*s  failed: %s\n", wp, r->planner, ws, "-", r->error);
			continue;
		}
		report_pct_text(diff, sizeof diff, sr_diff_pct(r));
		char oom[48], hoom[64], bubble[32] = "-";
		if (r->est && r->est->n_stages > 1) {
			int k = snprintf(bubble, sizeof bubble, "%.1f%%/",
			                 100 * r->est->bubble_s / r->est->iteration_s);
			if (r->sim && !r->sim_error && r->sim->iteration_s > 0)
				snprintf(bubble + k, sizeof bubble - (size_t)k, "%.1f%%",
				         100 * report_sim_bubble(r->sim, r->prog));
			else
				snprintf(bubble + k, sizeof bubble - (size_t)k, "-");
		}
		fprintf(f, "  %-*s  %-*s  %-10s %-10s ", wp, r->planner, ws, r->strategy,
		        cli_si(b[0], 32, r->estimated_s, "s"),
		        r->sim_error ? "-" : cli_si(b[1], 32, r->simulated_s, "s"));
		if (wi) {
			char iv[80];
			fprintf(f, "%-*s ", wi, sr_interval_text(iv, sizeof iv, r));
		}
		fprintf(f, "%-8s %-12s %-14s %s%s%s\n", r->sim_error ? "-" : diff,
		        r->sim_error ? "-" : cli_si(b[2], 32, r->comm_bytes, "B"), bubble,
		        cli_si(b[3], 32, r->memory_bytes, "B"),
		        cli_oom_text(oom, sizeof oom, "  ", r->memory_bytes, r->hbm_bytes),
		        cli_host_oom_text(hoom, sizeof hoom, "  ", r->host_bytes,
		                          r->host_capacity_bytes));
		if (r->sim_error)
			fprintf(f, "  %-*s  not simulated: %s\n", wp, "", r->sim_error);
	}
}

bool report_compare_has_intervals(const struct compare_row *rows, int n)
{
	for (int i = 0; i < n; i++)
		if (!rows[i].error && rows[i].iv.have)
			return true;
	return false;
}

void report_compare_outside(FILE *f, const struct compare_row *rows, int n)
{
	for (int i = 0; i < n; i++) {
		const struct compare_row *r = &rows[i];
		char w[1024];
		if (!r->error && r->iv.n_outside > 0)
			fprintf(f, "  %s (%s) outside its calibration's runs: %s\n", r->planner, r->strategy,
			        cost_cal_outside_text(w, sizeof w, r->iv.outside, r->iv.n_outside));
	}
}

void report_compare_csv(FILE *f, const struct compare_row *rows, int n)
{
	static const char *const cols[] = {
		"planner", "strategy", "estimated_s", "simulated_s", "difference_pct",
		"comm_bytes_per_device", "bubble_estimated_pct", "bubble_simulated_pct",
		"memory_bytes_per_device", "hbm_bytes", "oom", "error", "host_oom", NULL};
	struct cli_csv c = {.f = f};
	cli_csv_header(&c, cols);
	for (int i = 0; i < n; i++) {
		const struct compare_row *r = &rows[i];
		bool sim = !r->error && !r->sim_error;
		bool pipe = r->est && r->est->n_stages > 1 && r->est->iteration_s > 0;
		cli_csv_str(&c, r->planner);
		cli_csv_str(&c, r->error ? NULL : r->strategy);
		if (r->error) {
			for (int k = 0; k < 9; k++)
				cli_csv_str(&c, NULL);
			cli_csv_str(&c, r->error);
			cli_csv_str(&c, NULL);
			cli_csv_end(&c);
			continue;
		}
		cli_csv_num(&c, r->estimated_s);
		if (sim) {
			cli_csv_num(&c, r->simulated_s);
			cli_csv_num(&c, sr_diff_pct(r));
			cli_csv_num(&c, r->comm_bytes);
		} else {
			cli_csv_str(&c, NULL);
			cli_csv_str(&c, NULL);
			cli_csv_str(&c, NULL);
		}
		if (pipe)
			cli_csv_num(&c, 100 * r->est->bubble_s / r->est->iteration_s);
		else
			cli_csv_str(&c, NULL);
		if (pipe && sim && r->sim && r->sim->iteration_s > 0)
			cli_csv_num(&c, 100 * report_sim_bubble(r->sim, r->prog));
		else
			cli_csv_str(&c, NULL);
		cli_csv_num(&c, r->memory_bytes);
		cli_csv_num(&c, r->hbm_bytes);
		/* OOM as the JSON's "oom" and the table say it: the band over
		 * the device's memory (cost_memory_verdict), the host apart */
		struct cost_verdict v;
		cost_memory_verdict(r->memory_bytes, r->hbm_bytes, &v);
		cli_csv_str(&c, v.fit == FIT_NO ? "true" : "false");
		cli_csv_str(&c, r->sim_error);
		cost_memory_verdict(r->host_bytes, r->host_capacity_bytes, &v);
		cli_csv_str(&c, !(r->host_capacity_bytes > 0) ? NULL
		                : v.fit == FIT_NO ? "true" : "false");
		cli_csv_end(&c);
	}
}

double report_compare_tau(const struct compare_row *rows, int n, int *n_ranked)
{
	double *x = malloc(((size_t)n + 1) * sizeof *x), *y = malloc(((size_t)n + 1) * sizeof *y);
	int m = 0;
	for (int i = 0; x && y && i < n; i++)
		if (sr_ranked(&rows[i])) {
			x[m] = rows[i].estimated_s;
			y[m++] = rows[i].simulated_s;
		}
	double tau = report_kendall_tau(x, y, m);
	free(x);
	free(y);
	*n_ranked = m;
	return tau;
}

int report_compare_worst(const struct compare_row *rows, int n)
{
	int worst = -1;
	for (int i = 0; i < n; i++)
		if (sr_ranked(&rows[i]) &&
		    (worst < 0 || fabs(sr_diff_pct(&rows[i])) > fabs(sr_diff_pct(&rows[worst]))))
			worst = i;
	return worst;
}

/* The fastest simulated row by one of the two times. */
static int sr_fastest(const struct compare_row *rows, int n, bool simulated)
{
	int best = -1;
	for (int i = 0; i < n; i++) {
		if (!sr_ranked(&rows[i]))
			continue;
		double t = simulated ? rows[i].simulated_s : rows[i].estimated_s;
		double bt = best < 0 ? 0 : simulated ? rows[best].simulated_s : rows[best].estimated_s;
		if (best < 0 || t < bt)
			best = i;
	}
	return best;
}

void report_compare_ranking(FILE *f, const struct compare_row *rows, int n)
{
	int m;
	double tau = report_compare_tau(rows, n, &m);
	if (m < 2) {
		fprintf(f, "ranking: %d plan%s simulated, nothing to rank\n", m, m == 1 ? "" : "s");
		return;
	}
	int fe = sr_fastest(rows, n, false), fs = sr_fastest(rows, n, true);
	if (isnan(tau))
		fprintf(f, "ranking: every plan ties in the estimate or in the simulation "
		        "(Kendall tau undefined)\n");
	else
		fprintf(f, "ranking: estimate and simulation rank the %d plans %s (Kendall tau %.2f)\n",
		        m, tau >= 1 - 1e-12 ? "the same" : "differently", tau);
	fprintf(f, "  fastest by the estimate: %s; by the simulation: %s\n", rows[fe].planner,
	        rows[fs].planner);
}

void report_compare_explain(FILE *f, const struct compare_row *r)
{
	char b[3][32], pct[16];
	fprintf(f, "largest disagreement: %s (%s): simulated %s, estimated %s (%s)\n",
	        r->planner, r->strategy, cli_si(b[0], 32, r->simulated_s, "s"),
	        cli_si(b[1], 32, r->estimated_s, "s"), report_pct_text(pct, sizeof pct, sr_diff_pct(r)));
	fprintf(f, "  collectives that took longer than their formula (contention):\n");
	report_sim_collectives(f, "    ", r->prog, r->sim, 3);
	fprintf(f, "  busiest links:\n");
	report_sim_links(f, "    ", r->sim, 3);
	double grad = r->est ? r->est->category_s[EST_GRADIENT_SYNC] : 0;
	if (r->simulated_s < r->estimated_s && grad > 0) {
		double exposed = 0;
		for (int64_t k = 0; k < r->sim->n_ranks; k++)
			exposed = fmax(exposed, r->sim->ranks[k].comm_exposed_s);
		fprintf(f, "  overlap: the estimate leaves gradient synchronisation (%s) after the\n"
		        "  backward pass; the simulation runs it on stream 1 as the backward goes\n"
		        "  (exposed communication on the worst rank: %s)\n",
		        cli_si(b[2], 32, grad, "s"), cli_si(b[0], 32, exposed, "s"));
	}
}

static cJSON *sr_json_row(const struct compare_row *r)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "planner", r->planner);
	if (r->error) {
		cJSON_AddStringToObject(j, "error", r->error);
		return j;
	}
	cJSON_AddStringToObject(j, "strategy", r->strategy);
	cJSON_AddNumberToObject(j, "estimate_s", r->estimated_s);
	if (r->sim_error) {
		cJSON_AddStringToObject(j, "simulation_error", r->sim_error);
	} else {
		cJSON_AddNumberToObject(j, "simulated_s", r->simulated_s);
		cJSON_AddNumberToObject(j, "difference_pct", sr_diff_pct(r));
		cJSON_AddNumberToObject(j, "comm_bytes_per_device", r->comm_bytes);
	}
	cJSON_AddNumberToObject(j, "memory_bytes_per_device", r->memory_bytes);
	report_json_oom(j, r->memory_bytes, r->hbm_bytes);
	report_json_host_oom(j, r->host_bytes, r->host_capacity_bytes);
	cJSON_AddItemToObject(j, "interval", cli_interval_json(&r->iv));
	return j;
}

static cJSON *sr_json_explain(const struct compare_row *r)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddStringToObject(j, "planner", r->planner);
	cJSON_AddNumberToObject(j, "difference_pct", sr_diff_pct(r));
	cJSON *cs = cJSON_AddArrayToObject(j, "collectives");
	int *idx = r->sim->n_collectives ? malloc((size_t)r->sim->n_collectives * sizeof *idx) : NULL;
	int n = idx ? sr_contended(r->sim, idx, 3) : 0;
	char lb[32];
	for (int i = 0; i < n; i++) {
		const struct sim_collective *c = &r->sim->collectives[idx[i]];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "label", sr_step_label(r->prog, c->step, lb, sizeof lb));
		cJSON_AddStringToObject(o, "algorithm", collective_algo_names[c->algo]);
		cJSON_AddNumberToObject(o, "simulated_s", c->simulated_s);
		cJSON_AddNumberToObject(o, "formula_s", c->formula_s);
		cJSON_AddItemToArray(cs, o);
	}
	free(idx);
	cJSON *ls = cJSON_AddArrayToObject(j, "links");
	for (int i = 0; i < r->sim->n_links && i < 3; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", r->sim->links[i].name ? r->sim->links[i].name : "?");
		cJSON_AddNumberToObject(o, "bytes", r->sim->links[i].bytes);
		cJSON_AddNumberToObject(o, "utilisation", r->sim->links[i].utilisation);
		cJSON_AddItemToArray(ls, o);
	}
	return j;
}

void report_compare_json(cJSON *root, const struct compare_row *rows, int n)
{
	cJSON *a = cJSON_AddArrayToObject(root, "rows");
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, sr_json_row(&rows[i]));
	int m;
	double tau = report_compare_tau(rows, n, &m);
	cJSON_AddNumberToObject(root, "ranked", m);
	if (isnan(tau))
		cJSON_AddNullToObject(root, "kendall_tau");
	else
		cJSON_AddNumberToObject(root, "kendall_tau", tau);
	cJSON_AddBoolToObject(root, "same_ranking", !isnan(tau) && tau >= 1 - 1e-12);
	int w = report_compare_worst(rows, n);
	if (w >= 0)
		cJSON_AddItemToObject(root, "largest_disagreement", sr_json_explain(&rows[w]));
	else
		cJSON_AddNullToObject(root, "largest_disagreement");
}
