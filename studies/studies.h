/* studies.h — capacity planning: which cluster, in which configuration,
 * trains a model on a goal, and at what cost.
 *
 * A study file ("format": "shardlab-study", docs/formats.md) names a
 * scenario (the model and its training settings), cluster families (a
 * topology file and the server counts to try, with an optional price per
 * device-hour and power per device), the configurations to try (the
 * megatron-search space or a list), the global batches and the training
 * goal (tokens or iterations, optionally a deadline in days).
 *
 * A sweep deals the study out as units: one (cluster, server count,
 * global batch, TP, PP, micro-batch) planned once by Megatron's rule, its
 * variants (schedule, recomputation, ZeRO) each estimated. Every variant
 * is a point and becomes a row: the estimate's figures and what they mean
 * for the goal (time to train, device-hours, energy, cost). Rows are kept
 * in SQLite (store.c): a killed sweep resumes from what is stored.
 *
 * Units: seconds, bytes, FLOP/s, watts, kWh; prices in the study's
 * currency per device-hour.
 *
 * Data flow: util, topologies, models, scenarios, planner, sim ->
 * studies -> cli. Library code: never prints.
 */
#ifndef SHARDLAB_STUDIES_H
#define SHARDLAB_STUDIES_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "planner.h"
#include "scenarios.h"
#include "sim.h"
#include "topologies.h"
#include "util.h"

#define STUDY_FORMAT "shardlab-study"
#define STUDY_VERSION 1

/* One cluster family: a topology whose server count the study varies. */
struct study_cluster {
	const char *name;                  /* "h100": names it in rows and plots */
	const char *topology_file;
	const struct topology *topo;       /* as loaded (its own server count unused) */
	int n_sizes;
	int64_t *servers;                  /* ascending, distinct */
	double price_per_device_hour;      /* < 0: not given (no cost) */
	double idle_w, busy_w;             /* per device; < 0: not given (no energy) */
	int line;                          /* of the entry in the study file */
};

/* The goal: train on `tokens` tokens (or `iterations` iterations), and
 * optionally within `days` days (0: no deadline) and `budget` (0: none, in
 * the study's currency). */
struct study_goal {
	double tokens;                     /* 0 when given in iterations */
	int64_t iterations;                /* 0 when given in tokens */
	double days;
	double budget;
};

/* What keeps a cluster from training (goodput.c, docs/studies.md
 * "Goodput"): the study file's "goodput" object, every member defaulted
 * from a published run. */
struct study_goodput {
	bool on;                           /* "goodput": false gives the ideal times */
	double failures_per_device_hour;   /* interruptions, scaling with the devices */
	double relaunch_s;                 /* a restart before the checkpoint is read */
	double storage_write_bps, storage_read_bps;   /* the checkpoint store, all of it */
	bool async;                        /* checkpoints written behind the training */
	double host_copy_bps;              /* async: a device's state to host memory */
	double interval_s;                 /* training between checkpoints; 0: Daly's optimum */
};
extern const double study_default_failures_per_device_hour;
void study_goodput_defaults(struct study_goodput *g);

/* The goodput of solve_s seconds of training on `devices` devices whose
 * checkpoint is state_bytes (state_bytes_per_device on the largest device). */
struct study_goodput_out {
	double mtbf_s;                     /* the job's mean time between failures */
	double checkpoint_s;               /* the job stops this long per checkpoint */
	double write_s;                    /* a checkpoint's write to storage */
	double restart_s;                  /* relaunch and the checkpoint's read */
	double interval_s;                 /* training between checkpoints */
	double wall_s;                     /* the expected wall time */
	double goodput;                    /* solve_s / wall_s */
	double interruptions;              /* expected: wall_s / mtbf_s */
};
void study_goodput_eval(const struct study_goodput *g, double devices, double state_bytes,
                        double state_bytes_per_device, double solve_s,
                        struct study_goodput_out *out);
/* Daly's expected wall time and optimum interval (exposed for tests). */
double study_goodput_wall_s(double solve_s, double mtbf_s, double restart_s, double interval_s,
                            double checkpoint_s);
double study_goodput_daly_interval_s(double checkpoint_s, double mtbf_s);

/* A fault case of the study's "faults" axis (docs/formats.md, "Studies"):
 * a named list of faults in a scenario's "faults" form, applied to each
 * cluster at each of its sizes. A study without the axis has one case,
 * "none", with no faults. */
struct study_fault {
	const char *name;
	const char *text;                  /* {"faults": the list} as JSON; NULL: none */
	const char *file;                  /* where the text came from, for messages */
	int line;                          /* of the case in the study file */
	bool rebalance;                    /* "rebalance": each point's layers moved between
	                                      its pipeline stages by their speed under the
	                                      faults (plan_rebalance) */
	enum job_placement placement;      /* "placement": how the job's servers sit on a
	                                      cluster of cluster_servers (JOB_PACKED,
	                                      JOB_SPREAD); JOB_PLACEMENT_COUNT: none, the
	                                      cluster is the job's size */
	int64_t cluster_servers;           /* the cluster the job is placed on */
};
#define STUDY_MAX_FAULTS 64

struct study {
	const char *name;
	const char *description;           /* NULL when none */
	const char *file;
	const struct scenario *scenario;   /* the model and its training settings */
	int n_clusters;
	struct study_cluster *clusters;
	int n_batches;
	int64_t *global_batches;           /* ascending, distinct */
	bool search;                       /* the megatron-search space */
	int n_configs;                     /* else the configurations listed (dp derived) */
	struct search_config *configs;
	struct study_goal goal;
	struct study_goodput goodput;
	const char *currency;              /* of the prices: "USD" unless the file says */
	int n_faults;                      /* the fault cases, >= 1; the first is the */
	struct study_fault *faults;        /* reference fit answers for by default */
	const char *dir;                   /* the study's folder (fault cases' paths) */
	bool moe;                          /* the scenario's model has mixture-of-experts
	                                      layers (cost_graph_has_moe): its rows take
	                                      a calibration's MoE fit */
	uint64_t inputs_hash;              /* FNV-1a of every input that planning reads
	                                      (docs/formats.md) */
	uint64_t prices_hash;              /* of what only prices the points: the goal,
	                                      goodput, currency, prices and power */
	int clusters_line;                 /* of "clusters" in the study file */
};

/* Loads and checks a study and the scenario, model and topologies it
 * names (paths relative to the study's folder). NULL after diagnostics. */
struct study *study_load(struct arena *a, const char *path, struct diag_list *diags);
/* The same from a parsed document whose "format" is STUDY_FORMAT. */
struct study *study_load_doc(struct arena *a, struct json_doc *doc);
/* The inputs' hash as 16 hex digits into buf[17]. */
const char *study_hash_text(char buf[17], uint64_t h);

/* ----------------------------------------------------------- the points */

/* One unit of work: planned once, its variants estimated. */
struct study_unit {
	int cluster;
	int fault;                         /* the fault case (st->faults) */
	int64_t servers, devices, global_batch;
	int n_configs;                     /* the variants, in enumeration order */
	struct search_config *configs;
};

/* Every unit of the study in a fixed order (cluster, servers, fault
 * case, global batch, then the search's order: TP, PP, micro-batch); *n of them, the
 * points they hold in *n_points. NULL when out of memory. For small
 * studies (tests, benchmarks): a sweep walks the cells instead. */
struct study_unit *study_units(struct arena *a, const struct study *st, int *n,
                               int64_t *n_points);

/* The study cell by cell: a cell is one (cluster, server count, fault
 * case, global batch), cells numbered in that order; study_cell_units gives the
 * units of one (in the arena), so that a sweep holds one cell at a time. */
int64_t study_n_cells(const struct study *st);
struct study_unit *study_cell_units(struct arena *a, const struct study *st, int64_t cell,
                                    int *n, int64_t *n_points);

/* How big a study is, counted cell by cell without keeping the units. */
struct study_size {
	int64_t cells, units, points;
	int max_configs;                   /* the most points a unit holds */
	int64_t refused[SEARCH_RULE_COUNT];   /* left out by Megatron-LM's rules (planner.h) */
};
bool study_count(const struct study *st, struct study_size *out);

/* The points a sweep takes unless told otherwise (--max-points): a
 * sweep runs some 10^3 to 10^4 points a second, so a million is minutes
 * to an hour, and its database some 0.5 GB (docs/studies.md). */
#define STUDY_MAX_POINTS 1000000
/* Counts the study (study_count) and refuses one of more than max_points
 * points: FILE:LINE: clusters: ... with the count. A study of more cells
 * than max_points is refused before counting (the count's time grows with
 * the cells, up to 64 x 4096 x 4096). False after a diagnostic. */
bool study_check_size(const struct study *st, int64_t max_points, struct study_size *out,
                      struct diag_list *d);

/* One point's figures. */
struct study_row {
	int cluster;
	int fault;                         /* the fault case (st->faults); 0 without the axis */
	int64_t servers, devices, global_batch;
	struct search_config config;
	bool ok;                           /* planned and estimated */
	const char *error;                 /* when not ok */
	double iteration_s;
	double tokens_per_s;               /* samples/s when the model has no sequence */
	double mfu;                        /* model FLOPs (3 x forward) / (devices x peak x time); NAN
	                                      when the device has no peak for the dtype */
	double memory_bytes, hbm_bytes;
	bool oom;                          /* the device's memory or the host's does not fit */
	enum fit_class host_fit;           /* training.optimizer_offload: the state on a server's
	                                      host against server.host.memory_GB (FIT_YES when
	                                      nothing is offloaded or the memory is not stated);
	                                      FIT_NO makes the row oom */
	double compute_s, comm_s, bubble_s;
	double category_s[EST_CATEGORY_COUNT];
	double model_flops;                /* per iteration: 3 x forward FLOPs */
	double tokens_per_iteration;       /* samples when the model has no sequence */
	double state_bytes;                /* a checkpoint: weights and optimizer state */
	double state_bytes_per_device;     /* the largest device's share of it */
	double iterations;                 /* to reach the goal */
	double time_to_train_s;            /* ideal: iterations x iteration_s */
	double goodput;                    /* time_to_train_s / effective_time_s */
	double checkpoint_interval_s;      /* training between checkpoints */
	double interruptions;              /* expected over the run */
	double effective_time_s;           /* with failures, restarts and checkpoints */
	double device_hours;               /* over the effective time */
	double energy_kwh;                 /* NAN when the cluster gives no power */
	double cost;                       /* NAN when the cluster gives no price */
	/* The 90% interval from the cluster's calibration (docs/validation.md,
	 * "Prediction intervals"): iteration_rel_sd NAN when the sweep had no
	 * calibration with a training fit (the row has no interval). */
	double iteration_rel_sd;           /* sigma / t of the iteration time */
	double iteration_lo_s, iteration_hi_s;
	double effective_lo_s, effective_hi_s;   /* the effective time at lo and hi (set by
	                                            study_row_figures) */
	/* Simulation (set by study_simulate, or read back). */
	bool simulated;
	const char *sim_error;             /* tried and failed: why; NULL otherwise */
	double sim_iteration_s, sim_compute_s, sim_comm_s, sim_bubble_s;
	double sim_time_to_train_s;
};

/* The figures of a point that follow from its estimate and the study's
 * goal, prices, power and goodput (exposed for tests): tokens, MFU, time to
 * train, goodput, effective time, device-hours, energy and cost, from
 * iteration_s, compute_s, model_flops, tokens_per_iteration and the
 * state's bytes. A change of those study figures re-prices a stored row
 * with it alone. */
void study_row_figures(const struct study *st, struct study_row *r);
/* Whether the row has an interval. */
bool study_row_has_interval(const struct study_row *r);
/* The row's settings outside the runs that the training fit of c (its
 * cluster's calibration) was fitted on (cost_cal_outside), into
 * out[CAL_SET_COUNT]: how many; -1 when that is not known (no c, no
 * training fit, a fit that does not record its runs, a row not planned). */
int study_row_outside(const struct calibration *c, const struct study *st,
                      const struct study_row *r, struct cal_outside *out);
/* The row at the p-th percentile of its iteration time (0 < p < 1; the
 * normal distribution the interval assumes: t (1 + z_p sigma/t)), every
 * figure that follows from it priced again (study_row_figures); the
 * interval's ends stay. A row without an interval is left alone. */
void study_row_at_percentile(const struct study *st, struct study_row *r, double p);

/* The topology of a cluster at a size under a fault case: the cluster's
 * grown to `servers`, the case's faults applied; NULL after diagnostics
 * (in the arena). */
const struct topology *study_fault_topology(struct arena *a, const struct study *st, int cluster,
                                            int64_t servers, int fault, struct diag_list *d);
/* What each cluster's calibration is, one text that a resumed sweep
 * compares ("h100=h100-sxm:<hash of its file>; a100=none"), in the arena. */
const char *study_calibration_key(struct arena *a, const struct study *st);
/* One cluster's part of it: "h100=h100-sxm:<hash>", "a100=none" (cal NULL). */
const char *study_calibration_entry(struct arena *a, const char *cluster,
                                    const struct calibration *cal);

/* Plans a unit and estimates its points into rows[0 .. unit->n_configs)
 * (those with skip[i] true are left alone; skip may be NULL). A point that
 * cannot be planned or estimated is a row with ok false and its reason.
 * False only when out of memory. */
bool study_eval_unit(struct arena *a, const struct study *st, const struct study_unit *u,
                     const bool *skip, struct study_row *rows);

/* A point as a scenario of its own: the study's scenario on the cluster at
 * the point's size and batch, as its configuration sets it (the graph at
 * its micro-batch, TP, PP, schedule, recomputation, ZeRO, SP, EP, CP), the
 * megatron planner; named "<study>-<cluster>-<devices>". NULL after
 * diagnostics. */
struct scenario *study_point_scenario(struct arena *a, const struct study *st,
                                      const struct study_row *r, struct diag_list *diags);

/* Simulates a point (coarse fidelity, the scenario's collective
 * algorithm): sets the sim_ fields of r. False only when out of memory;
 * a failed simulation sets r->sim_error. */
bool study_simulate(struct arena *a, const struct study *st, struct study_row *r);

/* -------------------------------------------------------- the store */

/* An SQLite database of rows (store.c). */
struct study_store;

enum study_store_open {
	STORE_OK,
	STORE_ERROR,                       /* message in err */
	STORE_OTHER_INPUTS,                /* written for other inputs (err says which) */
	STORE_BUSY,                        /* another sweep is writing it */
};

/* Opens (creating) the database for the study. With `force`, rows of
 * other inputs are deleted; without, such a database is refused. One
 * writer at a time: another sweep's database is STORE_BUSY. Every stored
 * row is verified against its checksum, and those that fail are deleted
 * (to be computed again; study_store_dropped says how many). */
enum study_store_open study_store_open(const char *path, const struct study *st, bool force,
                                       struct study_store **out, char *err, size_t err_size);
/* Opens an existing database read-only, whatever its inputs; *hash (when
 * not NULL) receives the inputs' hash it was written for. What SQLite
 * cannot read is told in SQLite's own words. */
bool study_store_open_ro(const char *path, struct study_store **out, uint64_t *hash,
                         char *err, size_t err_size);
void study_store_close(struct study_store *s);
/* The rows the writer's open deleted because they failed their checksum. */
int64_t study_store_dropped(const struct study_store *s);
/* Which of the unit's points are stored: done[i]; returns how many. -1 on
 * error. */
int study_store_done(struct study_store *s, const struct study_unit *u, bool *done);
/* Writes rows (those with write[i], or all when write is NULL) in one
 * transaction. */
bool study_store_put(struct study_store *s, const struct study_row *rows, int n,
                     const bool *write, char *err, size_t err_size);
/* Re-prices stored rows (rows as study_store_rows read them) for the
 * study's goal, prices, power and goodput, in memory and in the database,
 * in one transaction: a change of those figures needs no re-planning. */
bool study_store_reprice(struct study_store *s, struct study_row *rows, int n, char *err,
                         size_t err_size);
/* Updates the simulation fields of a stored row. */
bool study_store_put_sim(struct study_store *s, const struct study_row *r, char *err,
                         size_t err_size);
/* Every row, ordered by cluster, servers, global batch, then the
 * configuration's enumeration keys; in the arena. -1 on error, and when a
 * row fails its checksum (err names it). */
int study_store_rows(struct study_store *s, struct arena *a, struct study_row **out, char *err,
                     size_t err_size);
/* How many stored points fit memory, and how many failed (counted by
 * SQLite, no row held). */
bool study_store_counts(struct study_store *s, int64_t *fit, int64_t *tight, int64_t *failed);
/* Names of the clusters as stored (index -> name, kind), from the rows. */
bool study_store_cluster_names(struct study_store *s, struct arena *a, int n_clusters,
                               const char **names, const char **kinds);

/* --------------------------------------------------------------- fit */

/* A point's memory class (cost_memory_verdict of its peak on its
 * device, and of its offloaded optimizer state on its server's host
 * memory: the worse of the two): fits, tight (the band straddles the
 * memory: its own class, never chosen) or does not fit (oom). */
enum fit_class study_row_fit(const struct study_row *r);
/* The points that fit memory (with the band: not tight), and meet the
 * deadline and the budget when the goal has them (effective time, cost). */
bool study_row_meets(const struct study *st, const struct study_row *r);
/* Best by key among rows meeting the goal: 0 time to train, 1 cost,
 * 2 energy; ties: fewer devices, then order. -1 when none. `cluster` -1:
 * any cluster. */
int study_best(const struct study *st, const struct study_row *rows, int n, int cluster, int key);
/* The smallest cluster of a family that meets the goal: the fewest
 * devices, and there the fastest. -1 when none. */
int study_smallest(const struct study *st, const struct study_row *rows, int n, int cluster);
/* The Pareto front of time to train against cost among rows that meet
 * the goal and have a cost: indices sorted by time ascending (cost then
 * descending) into out; returns how many. Of points equal in both, the
 * first in row order. */
int study_pareto(const struct study *st, const struct study_row *rows, int n, int *out);
/* The layers of each pipeline stage a point of a "rebalance" fault case
 * runs, as text ("5/9/9/9", in a), found again as the sweep found them
 * (plan_rebalance); NULL for other points or when they cannot be found. */
const char *study_row_stage_layers(struct arena *a, const struct study *st,
                                   const struct study_row *r);
/* The rows of fault case `fault` copied into out (room for n), in order;
 * returns how many. */
int study_fault_rows(const struct study_row *rows, int n, int fault, struct study_row *out);
/* The row of fault case `fault` with r's plan (cluster, servers, global
 * batch, configuration): its index in rows, -1 when none. */
int study_same_plan(const struct study_row *rows, int n, const struct study_row *r, int fault);

/* The best row per (cluster, servers, fault case) by time to train, for the top-K
 * simulation: for every size the indices of its K fastest points that
 * fit memory, in order; returns how many (out has room for n). */
int study_top_per_size(const struct study_row *rows, int n, int k, int *out);

/* -------------------------------------------------------------- plot */

/* One page of figures (plot.c) written to out, in the format path names
 * (.svg, .png or .pdf; path also names it in messages): time to
 * train, cost and MFU against devices per cluster family (the fastest
 * point that fits at each size), time to train against cost with the
 * Pareto front, and the iteration breakdown of the fastest points, all
 * of the first fault case; with several cases, the iteration time of the
 * fastest point's plan under each.
 * names and kinds: the families' names and device kinds, by index. False
 * with a message in err. */
struct study_plot_info {
	const char *title;                 /* the study's name, or what the user gives */
	const char *currency;              /* of the costs; NULL: "price units" */
	double deadline_s;                 /* the goal's, drawn as a line; 0: none */
	double budget;                     /* the goal's, drawn as a line; 0: none */
	int n_faults;                      /* the fault cases (0 or 1: none): panels (a)-(f)
	                                      draw the first, (g) the iteration per case */
	const char *const *fault_names;    /* by index */
	const char *calibration;           /* each cluster's calibration as the sweep recorded
	                                      it, "NAME=CAL:HASH; NAME=none" (study_calibration_key);
	                                      NULL where a database does not say */
	const char *calibration_files;     /* and its file, relative to the database's folder,
	                                      "NAME=PATH; NAME=none"; NULL where a database does
	                                      not say */
};
bool study_plot(FILE *out, const char *path, const struct study_row *rows, int n,
                int n_clusters, const char *const *names, const char *const *kinds,
                const struct study_plot_info *info, char *err, size_t err_size);
/* What a database says of its study (meta): its name, currency, deadline
 * and budget, the clusters' calibrations, and its fault cases' names (from
 * the rows); NULL names and 0 where a database from before does not say. */
bool study_store_info(struct study_store *s, struct arena *a, struct study_plot_info *out);

#endif
