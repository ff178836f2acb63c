/* cli.h — the command-line front end: subcommands and the helpers they
 * share. Only cli/ prints or exits. Exit status: 0 success, 1 invalid input
 * (diagnostics printed), 2 usage error. */
#ifndef SHARDLAB_CLI_H
#define SHARDLAB_CLI_H

#include <stdio.h>

#include "models.h"
#include "planner.h"
#include "scenarios.h"
#include "topologies.h"
#include "util.h"

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 2 };

int cmd_topo(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_explain(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_advise(int argc, char **argv);
int cmd_estimate(int argc, char **argv);

/* Every diagnostic of the list on stderr, one per line, then a count of
 * the dropped ones if any. */
void cli_print_diags(const struct diag_list *d);

/* True if argv[i] is -h or --help. */
int cli_wants_help(int argc, char **argv);

/* A topology from a topology file or from a scenario file's "topology";
 * a graph from a model file or a scenario file's "model". NULL after
 * diagnostics. */
struct topology *cli_load_topology(struct arena *a, const char *path, struct diag_list *d);
struct graph *cli_load_graph(struct arena *a, const char *path, struct diag_list *d);

/* Human-readable figures: "312 TFLOP/s", "1.2 TB/s", "80 GB", "1 us". */
const char *cli_si(char *buf, size_t size, double value, const char *unit);

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
/* The same as JSON (docs/planner.md); the caller owns the tree. */
struct cJSON *report_json(const struct plan *p, const struct report_options *o);
/* {"scenario", "model", "topology", "devices", "planner", "mode"}. */
struct cJSON *report_json_head(const struct plan *p, const struct report_options *o);
struct cJSON *report_json_edge(const struct plan *p, const struct plan_edge *x);
/* [[2, 4], [4, 1]]: slices per dimension of each input. */
struct cJSON *report_json_strategy(const struct graph *g, const struct dist_op *d);
/* Prints the tree and deletes it; EXIT_INVALID when out of memory. */
int report_print_json(struct cJSON *root, const char *command);
/* "((2, 4), (4,))", MindSpore's tuple form. */
const char *report_strategy_text(char *buf, size_t size, const struct graph *g,
                                 const struct dist_op *d);
/* "\"dense2.matmul\": [[2, 4], [4, 1]]", a scenario's shard entry. */
const char *report_shard_entry(char *buf, size_t size, const struct graph *g,
                               const struct dist_op *d);
/* "configured", "propagated from X", "default (never reached)". */
const char *report_source_text(char *buf, size_t size, const struct plan *p,
                               const struct dist_op *d);

#endif
