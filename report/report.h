/* report.h — one self-contained HTML page of a plan, a simulation or a
 * study (docs/report.md).
 *
 * A page is built in memory, section by section, from the structures the
 * text and JSON outputs print from (struct plan, struct estimate, struct
 * program, struct sim_result, struct study_row): the pictures are SVG
 * drawn here from those figures, never recomputed. Everything the page
 * needs is inline (CSS, SVG, a little JavaScript for sorting tables,
 * picking ranks and colouring the mesh); nothing is fetched when it is
 * opened. The same inputs give byte-identical pages.
 *
 * Data flow: util, topologies, models, scenarios, planner, sim, studies ->
 * report -> cli. Library code: never prints; the caller writes the page.
 *
 * Units: seconds, bytes, as everywhere; the page shows them with SI
 * prefixes through the caller's formatter.
 */
#ifndef SHARDLAB_REPORT_H
#define SHARDLAB_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "planner.h"
#include "sim.h"
#include "studies.h"

/* Formats a figure with an SI prefix: "312 TFLOP/s", "1.2 TB/s", "1 us"
 * (cli_si). */
typedef const char *(*report_si_fn)(char *buf, size_t size, double value, const char *unit);

/* Words the text outputs share with the pages. */
/* "12 s", "54.4 min", "3.2 h", "4.1 days"; "-" when not finite. */
const char *report_duration_text(char *buf, size_t size, double s);
/* x times scale with a suffix: 4 significant digits, whole from 10^4 on;
 * "-" when not finite ("43.22%", "742.2 kWh", "10432"). */
const char *report_num_text(char *buf, size_t size, double x, double scale, const char *suffix);
/* A step's name: "AllReduce(sum)", "AllGather+Concat", "StridedSlice". */
const char *report_step_text(char *buf, size_t size, const struct comm_step *c);

/* Bytes a device sends in one collective step of its group, by the ring
 * volumes (docs/planner.md): AllReduce 2(s-1)/s·S, AllGather,
 * ReduceScatter and AllToAll (s-1)/s·S; 0 for other steps. */
double report_step_sent_bytes(const struct prog_step *st);

/* A page being written. */
struct report_html;

/* A new page titled `title` (escaped here); NULL when out of memory. */
struct report_html *report_html_new(const char *title, const char *subtitle, report_si_fn si);
/* The page as one NUL-terminated string the caller frees (its length in
 * *len); the page itself is freed. NULL when out of memory at any point. */
char *report_html_finish(struct report_html *h, size_t *len);
/* Gives up a page; NULL is a no-op. */
void report_html_free(struct report_html *h);

/* A paragraph of prose (escaped) under an optional heading. */
void report_html_prose(struct report_html *h, const char *heading, const char *text);

/* How the text outputs name a plan's parts, from the CLI's writers (the
 * page shows the same words). */
struct report_plan_words {
	const char *planner;               /* "propagate"; NULL: configured only (explain) */
	const char *summary;               /* "TP 4 x DP 2" */
	const char *const *strategy;       /* per graph op: "((2, 4), (4,))" */
	const char *const *source;         /* per graph op: "propagated from dense1.add" */
};

/* The plan (what `explain` prints, drawn): the devices as the topology's
 * servers and tiers, one cell per device; each op's layouts on them (which
 * rank holds which slice, coloured), the ops' collectives and the
 * redistributions between ops with their rank groups and bytes per
 * device. `id` prefixes the section's element ids (several plans on one
 * page). */
void report_html_plan(struct report_html *h, const char *id, const struct plan *p,
                      const struct report_plan_words *w);

/* Several plans of one scenario compared: the ops whose strategies differ
 * (each planner's words side by side) and each plan's bytes per device. */
void report_html_plans_differ(struct report_html *h, const struct plan *const *p,
                              const struct report_plan_words *w, int n);

/* Which ranks a simulation's page shows, and the words and interval the
 * text outputs give it. */
struct report_sim_view {
	const int64_t *ranks;              /* drawn one row each, in this order */
	int n_ranks;
	const char *calibration;           /* "NAME (FILE), training fit ..." or "none"
	                                      (cli_calibration_words); NULL: not shown */
	const struct cal_interval *interval; /* the simulated time's 90% interval (its settings
	                                        outside the calibration's runs with it); NULL:
	                                        none */
};

/* The simulation: estimate beside simulation (iteration, compute, exposed
 * communication, bubble; where they disagree and why), per-rank totals
 * of every rank, a timeline row (both streams: compute, each collective,
 * waits) per chosen rank and, folded, one per group of ranks that ran the
 * same steps (the user unfolds them in the page), memory over time, the
 * busiest links. The events are r's (the simulation traced). */
void report_html_sim(struct report_html *h, const struct plan *p, const struct estimate *e,
                     const struct program *prog, const struct sim_result *r,
                     const struct report_sim_view *v);

/* The rows of a study whose plans its page links to, in the page's
 * order, each once: the `fit` answers (the smallest point per cluster
 * family, the fastest, the cheapest, the least energy), the Pareto
 * front, the best configuration per cluster size; at most
 * REPORT_STUDY_MAX_PLANS. Row indices into out; their count, or -1 when
 * out of memory. */
#define REPORT_STUDY_MAX_PLANS 64
int report_study_linked(const struct study *st, const struct study_row *rows, int n, int *out);

/* The study: its figures (study_plot's, as SVG), the `fit` answer (with,
 * where cal[cluster] is the calibration a cluster's rows were swept with,
 * the answers' settings outside the runs it was fitted on; cal NULL or an
 * entry NULL: not known), a
 * sortable table of the Pareto points and of the best configuration per
 * cluster size, each row linking to its plan: plan_href[i] (NULL, or
 * plan_href NULL: none) is the address of row i's plan page, written by
 * the caller (report_html_plan), and each linked configuration is also
 * drawn over its cluster's devices on this page. False only when out of
 * memory or the figures cannot be drawn (message in err). */
bool report_html_study(struct report_html *h, const struct study *st, const struct study_row *rows,
                       int n, const char *const *plan_href,
                       const struct calibration *const *cal, char *err, size_t err_size);

/* A paragraph that is one link (text and href escaped): a plan page's way
 * back to its study. */
void report_html_link(struct report_html *h, const char *text, const char *href);

#endif
