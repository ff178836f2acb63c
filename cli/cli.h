/* cli.h — the command-line front end: subcommands and the helpers they
 * share. Only cli/ prints or exits. Exit status: 0 success, 1 invalid input
 * (diagnostics printed), 2 usage error. */
#ifndef SHARDLAB_CLI_H
#define SHARDLAB_CLI_H

#include <stdio.h>

#include "models.h"
#include "scenarios.h"
#include "topologies.h"
#include "util.h"

enum { EXIT_OK = 0, EXIT_INVALID = 1, EXIT_USAGE = 2 };

int cmd_topo(int argc, char **argv);
int cmd_graph(int argc, char **argv);
int cmd_check(int argc, char **argv);
int cmd_explain(int argc, char **argv);

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

#endif
