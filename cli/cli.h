/* cli.h — the command-line front end: subcommands and the helpers they
 * share. Only cli/ prints or exits. Exit status: 0 success, 1 invalid input
 * (diagnostics printed), 2 usage error. */
#ifndef SHARDLAB_CLI_H
#define SHARDLAB_CLI_H

#include <stdio.h>

#include "models.h"
#include "planner.h"
#include "scenarios.h"
#include "sim.h"
#include "topologies.h"
#include "util.h"

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 2 };

int cmd_topo(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
/* cmd_calibrate.c: a calibration file's name from --out's path (its file
 * name without ".json"), and the file written atomically (false after a
 * message on stderr). */
const char *cli_calibration_name(struct arena *ar, const char *out);
bool cli_calibration_write(const char *path, const struct calibration *c);
/* cmd's --out names one of the n inputs (the same file, by device and
 * inode, whatever the path): true after a message; the command refuses
 * rather than replace its own input with what it writes. */
bool cli_out_overwrites(const char *cmd, const char *out, const char *const *inputs, int n);
/* calruns.c: `calibrate --runs` (its usage, then the command). */
void calibrate_runs_help(FILE *f);
int calibrate_runs(int argc, char **argv);
/* calibrate's modes (--runs, --transfer): argv[*i] as one of the options
 * `names` that take a value, its index, with the value in *value and *i
 * past it; -1 after a message naming the mode for an unknown option or a
 * missing value. */
int cli_valued_option(int argc, char **argv, int *i, const char *const *names, size_t n,
                      const char *mode, const char **value);
/* caltransfer.c: `calibrate --transfer` (its usage, then the command). */
void calibrate_transfer_help(FILE *f);
int calibrate_transfer(int argc, char **argv);
/* Whether a training fit's fitted_on, as calibrate --runs writes it, took
 * the validation set named `set`: any of its rows (row NULL), or the row
 * named `row` (every row, or those its --rows glob matched). */
bool cli_fit_took(const char *fitted_on, const char *set, const char *row);
int cmd_graph(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_advise(int argc, char **argv);
int cmd_estimate(int argc, char **argv);
int cmd_simulate(int argc, char **argv);
int cmd_cosim(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_validate(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_import(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_fit(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_moe(int argc, char **argv);
int cmd_cp(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* A study file and the rows `sweep` stored for it in the database db
 * (fit and report): the study, its rows (arena) and their count. Messages
 * on stderr and EXIT_INVALID when the study is invalid, the database
 * cannot be read or was swept for other inputs. */
struct study;
struct study_row;
int cli_load_study_rows(const char *cmd, struct arena *a, const char *file, const char *db,
                        const struct study **st, struct study_row **rows, int *n);

/* The largest study cli_check_doc accepts (check --max-points; default
 * STUDY_MAX_POINTS). */
void cli_check_set_max_points(int64_t n);
/* What `check` does to one parsed file of any format (diagnostics in
 * doc->diags): true when it is valid, with a one-line summary. */
bool cli_check_doc(struct arena *a, struct json_doc *doc, char *summary, size_t size);

/* Every diagnostic of the list on stderr, one per line, then a count of
 * the dropped ones if any. */
void cli_print_diags(const struct diag_list *d);
/* A line saying that the topology's device runs an uncalibrated compute
 * model (topo_compute_calibrated), nothing when it is calibrated. */
void cli_note_uncalibrated(FILE *f, const struct topology *t);
/* The same note for a topology run under the calibration named (NULL: none),
 * as a study's database records it. */
void cli_note_kernel_model(FILE *f, const struct topology *t, const char *calibration);
/* interval.c: the 90% interval of a plan's estimated time from the
 * calibration its topology carries (out->have false, with why, when it has
 * none); cost_interval_at moves it onto a simulated time. */
void cli_interval(const struct plan *p, struct cal_interval *out);
/* " (90%: 1.26-1.43 s)", or " (uncalibrated: no interval)". */
const char *cli_interval_text(char *buf, size_t size, const struct cal_interval *iv);
/* Two ends with their units as one range: "1.26 s", "1.43 s" -> "1.26-1.43 s";
 * "980 ms", "1.02 s" -> "980 ms-1.02 s". */
const char *cli_range_text(char *buf, size_t size, const char *lo, const char *hi);
/* "calibration NAME (FILE), training fit cross-validated MAPE x%" or
 * "calibration none", after the indent; for a model with MoE layers (moe)
 * the error of the file's MoE fit too, where it has one. */
void cli_calibration_line(FILE *f, const char *indent, const struct topology *t, bool moe);
/* The same words without the label: "NAME (FILE), training fit ..." or "none". */
const char *cli_calibration_words(char *buf, size_t size, const struct topology *t, bool moe);
/* "outside its runs     ZeRO 3 (fitted: 1), ...: ..." after the indent when
 * the plan has settings outside the runs its calibration's training fit
 * was fitted on (cal_interval.outside); nothing otherwise. */
void cli_outside_line(FILE *f, const char *indent, const struct cal_interval *iv);
/* The value of NAME in a database's "NAME=VALUE; NAME=VALUE" text (its
 * calibrations, their files), into buf; NULL when NAME has none. */
const char *cli_meta_entry(char *buf, size_t size, const char *text, const char *name);
/* Each cluster's calibration as the sweep into the database db recorded
 * it (info: its name and file hash, and its file), loaded: the recorded
 * file, else the one the cluster's topology takes by default, where its
 * name and hash are the recorded ones. Its training fit's runs say which
 * rows lie outside them. NULL for a cluster whose file is not found
 * again or none; every entry NULL when the database does not say. In the
 * arena; NULL when out of memory. */
struct study_plot_info;
const struct calibration **cli_swept_calibrations(struct arena *a, const struct study *st,
                                                  const struct study_plot_info *info,
                                                  const char *db);
/* [{"setting", "value", "fitted"}] of n settings outside a fit's runs. */
struct cJSON *cli_outside_json(const struct cal_outside *o, int n);
/* The interval's: that array, null when its fit does not record its runs. */
struct cJSON *cli_interval_outside_json(const struct cal_interval *iv);
/* {"name", "file"} of the topology's calibration, or null. */
struct cJSON *cli_calibration_json(const struct topology *t);
/* {"level", "lo_s", "hi_s", "relative_sd", "relative_sd_figures"}, or
 * {"lo_s": null, "hi_s": null, "note"} without one. */
struct cJSON *cli_interval_json(const struct cal_interval *iv);
/* The calibration t takes by default for a run of the framework family fw:
 * the one its file names ("calibration"), else the shipped one of its
 * device kind and fw, or of its device kind alone (calibration/ beside the
 * topology's folder, or the tree this program was built from); NULL when
 * there is none or the file says "none". */
const char *cli_default_calibration_file(struct arena *a, const struct topology *t,
                                         enum framework fw);
/* --calibration's value applied to t: a file, "auto" (the default above),
 * "none" or NULL (nothing). False after diagnostics. */
bool cli_apply_calibration(struct arena *a, const char *option, struct topology *t,
                           enum framework fw, struct diag_list *d);
/* The default when no --calibration is given: cli_default_calibration_file's
 * (docs/validation.md, "Shipped calibrations"), else none. */
bool cli_default_calibration(struct arena *a, struct topology *t, enum framework fw,
                             struct diag_list *d);
/* A line saying what the estimate prices of a scenario's faults and what
 * only the simulation sees; nothing without faults. */
void cli_note_faults(FILE *f, const struct topology *t, int64_t devices);

/* True if argv[i] is -h or --help. */
int cli_wants_help(int argc, char **argv);

/* A topology from a topology file or from a scenario file's "topology";
 * a graph from a model file or a scenario file's "model". NULL after
 * diagnostics. */
struct topology *cli_load_topology(struct arena *a, const char *path, struct diag_list *d);
struct graph *cli_load_graph(struct arena *a, const char *path, struct diag_list *d);

/* Human-readable figures: "312 TFLOP/s", "1.2 TB/s", "80 GB", "1 us". */
const char *cli_si(char *buf, size_t size, double value, const char *unit);
/* The memory verdict of a predicted peak `memory` on a device of `hbm`
 * bytes (cost_memory_verdict: the peak +- 5%): "fits (71 of 80 GB)",
 * "tight (77-83 of 80 GB)" (the band), "does not fit (105 of 80 GB)". */
const char *cli_verdict_text(char *buf, size_t size, double memory, double hbm);
/* "" when the peak fits, else the verdict after a separator `sep`. */
const char *cli_oom_text(char *buf, size_t size, const char *sep, double memory, double hbm);
/* The verdict as JSON members of obj: "memory_verdict" ("fits", "tight",
 * "does not fit"), "memory_low_bytes", "memory_high_bytes" (the band) and
 * "memory_margin_bytes" (the device's memory less the peak). */
void cli_json_verdict(struct cJSON *obj, double memory, double hbm);
/* As JSON members of obj: "oom" (bool: the band is over the device's
 * memory, "does not fit") and "oom_overflow_bytes" (the peak over it; 0
 * when it is under), and cli_json_verdict's. */
void report_json_oom(struct cJSON *obj, double memory, double hbm);
/* training.optimizer_offload: the state on a server's host against its
 * memory (`capacity` bytes; 0: not stated, nothing said), apart from the
 * device's: " host memory does not fit (0.18 of 0.15 GB)" after `sep`
 * ("" when it fits or is not checked); as JSON members "host_oom" (bool,
 * the same verdict) and "host_overflow_bytes" (nothing when not
 * checked). */
/* Whether there is a host-memory verdict to print: state is offloaded
 * (`host` bytes on the server's host, optimizer_offload /
 * activation_offload_layers) and the topology states the host's
 * `capacity`. One rule for validate, simulate, plan, report and compare. */
bool cli_host_verdict(double host, double capacity);
const char *cli_host_oom_text(char *buf, size_t size, const char *sep, double host,
                              double capacity);
void report_json_host_oom(struct cJSON *obj, double host, double capacity);
/* The stages' layers of a search configuration of a model of `layers`
 * layers, "6/2" (first/last_stage_layers spelt out: "3/4/4/2"); "" when
 * even. */
const char *cli_stage_layers_text(char *buf, size_t size, const struct search_config *c,
                                  int64_t layers);
/* "pipeline" and "training" members: stages, schedule, bubble, per stage
 * times and memory; ZeRO stage, recomputation, sequence parallelism. */
void report_json_pipeline(struct cJSON *obj, const struct plan *p, const struct estimate *e);

/* ------------------------------------------------ report.c: plan writers
 * shared by explain, plan and advise (one writer, no copies). */
struct cJSON;

struct report_options {
	const char *command;   /* heads the text: "explain", "plan" */
	const char *planner;   /* the planner's name, NULL when none ran (explain) */
	bool detail;           /* every op's tensors and slices (explain); else one line per op */
	int64_t ranks;         /* detail: slices of the first N ranks */
};

/* The whole plan: header, ops, redistributions with their steps, totals
 * (and the unreached ops when a planner chose). On stdout. */
void report_text(const struct plan *p, const struct report_options *o);
/* One step: kind, dimension, rank groups, bytes per device, slice after. */
void report_text_step(const char *indent, const struct comm_step *c);
/* One redistribution and its steps. */
void report_text_edge(const struct plan *p, const struct plan_edge *x, const char *indent);
/* One CSV row per op (docs/formats.md, "CSV"): index, name, kind,
 * strategy, source, from, forward_communication, and the bytes per device
 * of its forward communication, of the redistributions into it and of its
 * gradient all-reduces. On stdout. */
void report_csv(const struct plan *p);
/* One CSV row per op and tensor (explain --csv): op_index, op, kind,
 * device_matrix, tensor, role ("input 0", "output 0"), shape, tensor_map,
 * slice_shape, slice_bytes. On stdout. */
void report_csv_tensors(const struct plan *p);
/* The same as JSON (docs/planner.md); the caller owns the tree. */
struct cJSON *report_json(const struct plan *p, const struct report_options *o);
/* {"scenario", "model", "topology", "devices", "planner", "mode"}. */
struct cJSON *report_json_head(const struct plan *p, const struct report_options *o);
struct cJSON *report_json_edge(const struct plan *p, const struct plan_edge *x);
/* [[2, 4], [4, 1]]: slices per dimension of each input. */
struct cJSON *report_json_strategy(const struct graph *g, const struct dist_op *d);
/* Prints the tree and deletes it; EXIT_INVALID when out of memory. */
int report_print_json(struct cJSON *root, const char *command);
/* megatron-search's choice, one line, when the plan is the search's. */
void report_search_chosen(FILE *f, const struct plan *p);
/* A configuration as JSON: {"tensor_parallel", "pipeline_stages",
 * "data_parallel", "micro_batch", "micro_batches", "schedule",
 * "virtual_stages", "recompute", "zero_stage"}. */
struct cJSON *report_json_search_config(const struct search_config *c);
/* {"configurations", "fit", "oom", "failed", "first_failure"}. */
struct cJSON *report_json_search_counts(const struct search_result *r);
/* The configurations the framework's rules left out, by rule: a JSON
 * object of search_rule_names (those > 0), and a line of text (none when
 * nothing was left out). */
struct cJSON *report_json_refused(const int64_t refused[SEARCH_RULE_COUNT]);
void report_refused_text(FILE *f, const int64_t refused[SEARCH_RULE_COUNT]);
/* "((2, 4), (4,))", MindSpore's tuple form. */
const char *report_strategy_text(char *buf, size_t size, const struct graph *g,
                                 const struct dist_op *d);
/* "\"dense2.matmul\": [[2, 4], [4, 1]]", a scenario's shard entry. */
const char *report_shard_entry(char *buf, size_t size, const struct graph *g,
                               const struct dist_op *d);
/* "configured", "propagated from X", "default (never reached)". */
const char *report_source_text(char *buf, size_t size, const struct plan *p,
                               const struct dist_op *d);

/* ------------------------------------- simreport.c: simulate and compare */

/* How to lower and simulate a plan. */
struct cli_sim_setup {
	enum sim_fidelity fidelity;
	enum collective_algo algo;
	double bucket_bytes;           /* gradient buckets (plan_lower) */
	bool trace;                    /* record the events */
	const char *label;             /* names the plan on the progress line */
	double max_events;             /* refuse a program of more steps x ranks (0: the
	                                  default, CLI_MAX_EVENTS) */
	uint64_t seed;                 /* sim_options.seed */
	const char *announce;          /* "simulate": say the size and the expected cost of a
	                                  long run on stderr first (NULL: quiet) */
};
/* What a simulation costs, measured on the shared 2-core machine (coarse
 * fidelity): GPT-3 175B on 1,024 ranks, 1.3e8 program steps x ranks, ran
 * 7.6 s of CPU in 100 MB; 16,384 A100 ranks took 3 GB. A run expected to
 * take CLI_SIM_ANNOUNCE_S or more is announced (docs/robustness.md). */
#define CLI_SIM_S_PER_EVENT 60e-9
#define CLI_SIM_BASE_BYTES 40e6
#define CLI_SIM_BYTES_PER_RANK 180e3
#define CLI_SIM_ANNOUNCE_S 10.0
/* The default budget of a simulation: program steps x ranks
 * (sim_program_events). The largest shipped runs need ~1e9 (GPT-3 175B on
 * 8,192 ranks, about two minutes); 1e10 is hours. */
#define CLI_MAX_EVENTS SIM_MAX_EVENTS
/* --max-events N: a count from 1 to 1e15; EXIT_USAGE with a message. */
int cli_parse_max_events(const char *cmd, const char *v, double *out);

/* A plan estimated, lowered and simulated; each flag says how far it got. */
struct cli_sim_outcome {
	bool estimated, lowered, simulated;
	struct estimate est;
	struct program prog;
	struct sim_result sim;
};

/* A command-line word no option of the command took: the scenario when it
 * is the first, else EXIT_USAGE after a message (an unknown option, a
 * second scenario). */
int cli_scenario_word(const char *cmd, const char *word, const char **file);
/* EXIT_OK when a scenario was named, else EXIT_USAGE after a message. */
int cli_scenario_named(const char *cmd, const char *file);
/* An option's count in [min, max] into *out; EXIT_USAGE after a message
 * ("takes a count from MIN to MAX, got 'TEXT'") when the text is not one. */
int cli_parse_range(const char *cmd, const char *option, const char *text, int64_t min,
                    int64_t max, int64_t *out);
/* The same in [0, max]. */
int cli_parse_count(const char *cmd, const char *option, const char *text, int64_t max,
                    int64_t *out);

/* Can this build run the planner? */
bool cli_planner_available(enum planner_kind k);
/* The index of `value` in names[n], or -1 after a usage message naming
 * the choices ("shardlab CMD: OPTION takes a, b or c, got 'x'"). */
int cli_parse_name(const char *cmd, const char *option, const char *value,
                   const char *const *names, int n);
/* The planner --planner names, or -1 after a usage message listing the
 * available ones. */
int cli_parse_planner(const char *cmd, const char *name);
/* The options that choose and tune a plan, shared by plan, estimate and
 * simulate: --planner, --fused, --rec-cost, --rec-order. */
/* Quick what-ifs on a scenario without editing it: --devices N,
 * --topology FILE, --global-batch B (docs/studies.md). */
struct cli_overrides {
	int64_t devices;                   /* 0: the scenario's (or the --topology's all) */
	const char *topology;              /* NULL: the scenario's */
	int64_t global_batch;              /* 0: the scenario's */
	const char *calibration;           /* NULL: none; else applied to the topology */
};
/* Takes argv[*i] and its value when it is one of those options: 1 when
 * taken, 0 when not one of them, -1 after a usage message. */
int cli_override_option(const char *cmd, int argc, char **argv, int *i, struct cli_overrides *ov);
/* The help lines of those options, for the commands' --help. */
extern const char cli_override_help[];
/* A scenario file with the overrides applied: --topology replaces the
 * topology (all its devices unless --devices); --devices beyond the
 * topology's grows it by whole servers (a cluster topology only);
 * --global-batch sets the global batch (a multiple of the model's batch);
 * --calibration's figures replace the topology's parameters.
 * NULL after diagnostics. */
struct scenario *cli_load_scenario(struct arena *a, const char *file,
                                   const struct cli_overrides *ov, struct diag_list *d);

struct cli_plan_args {
	bool named;                        /* --planner given (checked available) */
	enum planner_kind planner;         /* when named */
	struct plan_options o;
	struct cli_overrides ov;           /* --devices, --topology, --global-batch */
};
/* Takes argv[*i] (and its value, advancing *i) when it is one of those
 * options or an override: 1 when taken, 0 when it is not one of them, -1
 * after a usage message. */
int cli_plan_option(const char *cmd, int argc, char **argv, int *i, struct cli_plan_args *pa);

/* A progress line on stderr ("WHAT:  42%") for long planning, when stderr
 * is a terminal: attach sets o's callback, clear erases the line. */
struct cli_progress {
	const char *what;
	int last_pct;
	bool shown;
};
void cli_progress_attach(struct cli_progress *pr, const char *what, struct plan_options *o);
void cli_progress_clear(struct cli_progress *pr);

/* The plan of the scenario file under those options, with the planner
 * named, else the scenario's first when available, else propagation; the
 * scenario (or NULL) in *s, the planner in *kind; NULL after diagnostics
 * in d. */
struct plan *cli_load_plan(struct arena *a, const char *file, const struct cli_plan_args *pa,
                           struct scenario **s, enum planner_kind *kind, struct diag_list *d);

/* A simulation's progress line on stderr ("simulating LABEL:  42%
 * (simulated 1.2 s)"): the callback for sim_options.progress (the caller
 * attaches it when stderr is a terminal); clear erases the line. */
struct cli_sim_progress {
	const char *label;
	int last_pct;
	bool shown;
};
void cli_sim_progress_cb(void *ctx, double simulated_s, double fraction);
void cli_sim_progress_clear(struct cli_sim_progress *p);

/* plan_estimate, plan_lower, sim_run, in that order, stopping at the first
 * that fails (diagnostics in d). A progress line on stderr while it
 * simulates when stderr is a terminal, cleared at the end. */
bool cli_simulate_plan(struct arena *a, const struct plan *p, const struct cli_sim_setup *o,
                       struct cli_sim_outcome *out, struct diag_list *d);
/* What simulate and compare say before a long run: "LABEL: N ranks, M
 * micro-batches, E program steps x ranks; expect roughly T and B of
 * memory" into buf; true when the run is long enough to say it (an
 * expected CLI_SIM_ANNOUNCE_S or more, or 4,096 ranks or more). */
bool cli_sim_announce_text(char *buf, size_t size, const char *label, int64_t ranks,
                           int64_t micro_batches, double events);

/* 100 (sim / est - 1), 0 when est is not positive. */
double report_diff_pct(double sim, double est);
/* "+12.3%", "-4.0%"; "+0.0%" for what rounds to zero. */
const char *report_pct_text(char *buf, size_t size, double pct);
/* Kendall's tau-b between two scorings of the same n items (ties count
 * neither way); NAN when n < 2 or either scoring ties everything. */
double report_kendall_tau(const double *x, const double *y, int n);
/* Bytes each device sends in one iteration of a program: the ring volumes
 * of planner/layout/layout.h (AllReduce 2(s-1)/s·S, the others (s-1)/s·S), the section
 * counted `repeat` times. */
/* Bytes a device of the busiest stage sends in one iteration. */
double report_program_comm_bytes(const struct program *p);
/* "TP 4 x DP 2": the pattern covering most of the plan's FLOPs
 * (docs/simulation.md): an op's split s = its FLOPs / its FLOPs per rank,
 * TP the slices of its largest parameter, DP = s / TP, "x R copies" when
 * R = devices / s ranks compute the same slice, and the pattern's share
 * of the FLOPs when other patterns cover more than 5%. */
const char *report_strategy_summary(char *buf, size_t size, const struct plan *p);

/* Per rank compute / exposed communication / idle: min, median, max and
 * the rank that waits longest on communication. */
void report_sim_ranks(FILE *f, const struct sim_result *r);
/* The k busiest links and the k collectives that exceeded their formula
 * most (label from the program). */
void report_sim_links(FILE *f, const char *indent, const struct sim_result *r, int k);
/* The busiest links' utilisation over time (sim_result.series), a row of
 * one character per bin each: '.' idle, 1-9 tenths of the rate, '#' 95%
 * or more. */
void report_sim_link_series(FILE *f, const char *indent, const struct sim_result *r);
/* One such row of n bins' utilisation between bars: "|..3#9|". */
void report_util_row(FILE *f, const double *u, int n);
void report_sim_collectives(FILE *f, const char *indent, const struct program *prog,
                            const struct sim_result *r, int k);

/* One row of `shardlab compare`. */
struct compare_row {
	const char *planner;           /* "propagate", "recursive (topology)" */
	const char *error;             /* no plan or no estimate: why; else NULL */
	const char *sim_error;         /* planned and estimated but not simulated: why */
	char strategy[64];
	double estimated_s, simulated_s;
	double comm_bytes;             /* per device per iteration */
	double memory_bytes, hbm_bytes;
	double host_bytes, host_capacity_bytes; /* training.optimizer_offload: the state on a
	                                           server's host and its memory (0: unchecked) */
	const struct program *prog;    /* NULL unless simulated */
	const struct sim_result *sim;
	const struct estimate *est;
	struct cal_interval iv;        /* the 90% interval of the simulated time (of the
	                                  estimate's when not simulated), with the plan's
	                                  settings outside its calibration's runs */
};

/* The table; Kendall tau over the simulated rows (*n_ranked of them); the
 * simulated row whose difference is largest (-1 if none); what caused it. */
void report_compare_table(FILE *f, const struct compare_row *rows, int n);
/* Whether some row has a 90% interval (the table then has its column). */
bool report_compare_has_intervals(const struct compare_row *rows, int n);
/* One line per row whose plan has settings outside the runs its
 * calibration was fitted on: "megatron (TP 8 x DP 8) outside its
 * calibration's runs: ...". */
void report_compare_outside(FILE *f, const struct compare_row *rows, int n);
/* The simulated bubble as a fraction of the iteration: of the stage that
 * waits least, its ranks' mean pipeline wait and idle (done before the
 * iteration ends). */
double report_sim_bubble(const struct sim_result *r, const struct program *prog);
double report_compare_tau(const struct compare_row *rows, int n, int *n_ranked);
int report_compare_worst(const struct compare_row *rows, int n);
void report_compare_ranking(FILE *f, const struct compare_row *rows, int n);
void report_compare_explain(FILE *f, const struct compare_row *r);
/* The rows as CSV (docs/formats.md, "CSV"): empty fields where a row has
 * no figure, "error" the reason a row failed or was not simulated. */
void report_compare_csv(FILE *f, const struct compare_row *rows, int n);
/* Rows, ranking and explanation as JSON members of root. */
void report_compare_json(struct cJSON *root, const struct compare_row *rows, int n);

/* ------------------------------------------- csv.c: --csv of every table */

/* A CSV table on f (RFC 4180). Each row: cli_csv_str / _num / _int per
 * field, then cli_csv_end. */
struct cli_csv {
	FILE *f;
	int col;
};
/* The header row from NULL-ended column names (each with its unit). */
void cli_csv_header(struct cli_csv *c, const char *const *names);
void cli_csv_str(struct cli_csv *c, const char *s); /* quoted when needed; NULL: empty */
void cli_csv_num(struct cli_csv *c, double v);      /* every digit that tells */
void cli_csv_int(struct cli_csv *c, int64_t v);
void cli_csv_end(struct cli_csv *c);

/* ------------------------------ export.c: plans for training frameworks */

enum export_format { EXPORT_MINDSPORE, EXPORT_MEGATRON, EXPORT_COUNT };
extern const char *const export_format_names[EXPORT_COUNT];

/* MindSpore's operator strategy file (set_op_strategy_config's JSON):
 * {"current_stage": 0, "parallel_strategy_item": {OP: {"parallel_strategy":
 * [[...], ...], "stage": S}}}, ops in byte order of their names; the stage
 * from part (NULL: 0). NULL when out of memory. */
struct cJSON *report_mindspore_strategy(const struct plan *p, const struct plan_part *part);
/* The Megatron-style configuration of a plan of planner `kind` (megatron:
 * read from the plan and its scenario; megatron-search: the search's
 * choice). False with a message in err for other planners. */
bool report_megatron_config(const struct plan *p, enum planner_kind kind,
                            struct search_config *out, char *err, size_t err_size);
/* Megatron-LM's launch arguments for that configuration, one per line
 * (joined by " \"), after a comment line. */
void report_megatron_args(FILE *f, const struct plan *p, const struct search_config *c);
/* text into path, atomically (a temporary file renamed over it). */
bool report_write_file(const char *path, const char *text, char *err, size_t err_size);
/* The plan in a framework's format (`plan --export`, `fit --emit-*`): a
 * malloc'd text, or NULL with the reason in err (and diagnostics in d). */
char *report_export_text(struct arena *ar, const struct plan *p, enum planner_kind kind,
                         enum export_format format, struct diag_list *d, char *err,
                         size_t err_size);

/* ------------------------------------------- output.c: files written */

/* One output file being written (output.c): a regular file through a
 * temporary file in its directory renamed over it at the end (removed on
 * SIGINT/SIGTERM/SIGHUP), a device or FIFO in place, a symbolic link
 * followed. */
struct cli_out {
	FILE *f;            /* write here */
	const char *path;   /* as the user named it, for messages */
	char *target;       /* the name written (links followed) */
	char *tmp;          /* the temporary file, NULL when written in place */
	int slot;           /* its place in the signal handler's list */
};
/* False with "PATH: cannot write: REASON" in err. */
bool cli_out_open(struct cli_out *o, const char *path, char *err, size_t err_size);
/* Checks every write (error flag, flush, fsync, close) and renames the
 * temporary file into place; false with a message in err (the temporary
 * file removed, the old file kept). */
bool cli_out_close(struct cli_out *o, char *err, size_t err_size);
/* Gives up: closes and removes the temporary file. */
void cli_out_abort(struct cli_out *o);
/* Standard output checked at the end of a command: a failed write (a full
 * disk, a closed pipe) prints a message and turns status 0 into 1. */
int cli_finish_stdout(int status);

/* ------------------------------------------ trace.c: the Chrome trace */

/* The trace of a simulation as Chrome-trace JSON (docs/simulation.md):
 * one process per rank, one thread per stream, an "X" event per compute
 * step and collective (microseconds); phases from prog when not NULL. */
void report_trace_stream(FILE *f, const struct sim_result *r, const struct program *prog,
                         const char *title);
/* The same into `path`, atomically (a temporary file renamed over it).
 * False with a message in err when it cannot be written. */
/* Several jobs simulated together (cosim) as one trace: each job's ranks
 * as processes named "job NAME rank K", then its busiest links' counters
 * ("job NAME links: ..."); r[j], progs[j], names[j] per job. */
bool report_trace_jobs_write(const char *path, const struct sim_result *r,
                             const struct program *const *progs, const char *const *names,
                             int n_jobs, const char *title, char *err, size_t err_size);
bool report_trace_write(const char *path, const struct sim_result *r,
                        const struct program *prog, const char *title, char *err,
                        size_t err_size);

#endif
