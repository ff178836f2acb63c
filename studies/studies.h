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
 * optionally within `days` days (0: no deadline). */
struct study_goal {
	double tokens;                     /* 0 when given in iterations */
	int64_t iterations;                /* 0 when given in tokens */
	double days;
};

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
	uint64_t inputs_hash;              /* FNV-1a of every input (docs/formats.md) */
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
	int64_t servers, devices, global_batch;
	int n_configs;                     /* the variants, in enumeration order */
	struct search_config *configs;
};

/* Every unit of the study in a fixed order (cluster, servers, global
 * batch, then the search's order: TP, PP, micro-batch); *n of them, the
 * points they hold in *n_points. NULL when out of memory. For small
 * studies (tests, benchmarks): a sweep walks the cells instead. */
struct study_unit *study_units(struct arena *a, const struct study *st, int *n,
                               int64_t *n_points);

/* The study cell by cell: a cell is one (cluster, server count, global
 * batch), cells numbered in the order above; study_cell_units gives the
 * units of one (in the arena), so that a sweep holds one cell at a time. */
int64_t study_n_cells(const struct study *st);
struct study_unit *study_cell_units(struct arena *a, const struct study *st, int64_t cell,
                                    int *n, int64_t *n_points);

/* How big a study is, counted cell by cell without keeping the units. */
struct study_size {
	int64_t cells, units, points;
	int max_configs;                   /* the most points a unit holds */
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
	int64_t servers, devices, global_batch;
	struct search_config config;
	bool ok;                           /* planned and estimated */
	const char *error;                 /* when not ok */
	double iteration_s;
	double tokens_per_s;               /* samples/s when the model has no sequence */
	double mfu;                        /* model FLOPs (3 x forward) / (devices x peak x time); NAN
	                                      when the device has no peak for the dtype */
	double memory_bytes, hbm_bytes;
	bool oom;
	double compute_s, comm_s, bubble_s;
	double category_s[EST_CATEGORY_COUNT];
	double iterations;                 /* to reach the goal */
	double time_to_train_s;
	double device_hours;
	double energy_kwh;                 /* NAN when the cluster gives no power */
	double cost;                       /* NAN when the cluster gives no price */
	/* Simulation (set by study_simulate, or read back). */
	bool simulated;
	const char *sim_error;             /* tried and failed: why; NULL otherwise */
	double sim_iteration_s, sim_compute_s, sim_comm_s, sim_bubble_s;
	double sim_time_to_train_s;
};

/* The figures of a point from an estimate (exposed for tests): tokens,
 * MFU, time to train, device-hours, energy and cost. model_flops is the
 * model's FLOPs per iteration (3 x forward), tokens_per_iteration the
 * tokens (or samples) of one iteration. */
void study_row_figures(const struct study *st, struct study_row *r, double model_flops,
                       double tokens_per_iteration);

/* Plans a unit and estimates its points into rows[0 .. unit->n_configs)
 * (those with skip[i] true are left alone; skip may be NULL). A point that
 * cannot be planned or estimated is a row with ok false and its reason.
 * False only when out of memory. */
bool study_eval_unit(struct arena *a, const struct study *st, const struct study_unit *u,
                     const bool *skip, struct study_row *rows);

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
bool study_store_counts(struct study_store *s, int64_t *fit, int64_t *failed);
/* Names of the clusters as stored (index -> name, kind), from the rows. */
bool study_store_cluster_names(struct study_store *s, struct arena *a, int n_clusters,
                               const char **names, const char **kinds);

/* --------------------------------------------------------------- fit */

/* The points that fit memory, and meet the deadline when there is one. */
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
/* The best row per (cluster, servers) by time to train, for the top-K
 * simulation: for every size the indices of its K fastest points that
 * fit memory, in order; returns how many (out has room for n). */
int study_top_per_size(const struct study_row *rows, int n, int k, int *out);

/* -------------------------------------------------------------- plot */

/* One page of figures (plot.c) written to out, in the format path names
 * (.svg, .png or .pdf; path also names it in messages): time to
 * train, cost and MFU against devices per cluster family (the fastest
 * point that fits at each size), time to train against cost with the
 * Pareto front, and the iteration breakdown of the fastest points.
 * names and kinds: the families' names and device kinds, by index. False
 * with a message in err. */
bool study_plot(FILE *out, const char *path, const struct study_row *rows, int n,
                int n_clusters, const char *const *names, const char *const *kinds,
                const char *title, char *err, size_t err_size);

#endif
