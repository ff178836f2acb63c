/* bench.h — what the benchmarks share: a monotonic clock, diagnostics on
 * stderr, peak memory, an in-memory scenario of a model on a topology,
 * the Megatron configuration of one layer, and running each measurement in
 * a child process so that its peak memory is its own. */
#ifndef SHARDLAB_BENCH_H
#define SHARDLAB_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "planner.h"

#ifndef SHARDLAB_SOURCE_ROOT
#define SHARDLAB_SOURCE_ROOT "."
#endif

double bench_now_s(void);
void bench_print_diags(const char *bench, const struct diag_list *d);
/* Peak resident memory of this process and its reaped children, bytes. */
int64_t bench_peak_rss_bytes(void);

/* A scenario of `devices` devices of the topology running the model, with
 * one planner, a global batch of the model's batch (one step) and a
 * scenario file's default gradient buckets (25 MiB); NULL after
 * diagnostics (or a message when the topology is too small). */
struct scenario *bench_scenario(struct arena *a, const char *bench, const char *model,
                                const char *topo, int64_t devices, enum planner_kind planner,
                                struct diag_list *d);
/* Layer 0 of a GPT configured Megatron style with tensor parallelism t:
 * q/k/v and fc1 by columns, the attention output and fc2 by rows. */
bool bench_megatron_layer0(struct arena *a, struct scenario *s, int64_t t);

/* The arguments MODEL [TOPOLOGY DEVICES]... in *args (without argv[0]),
 * or without any the shipped GPT-3 175B on dgx-a100-x128 (1,024) and
 * atlas800t-a2-910b-x1024 (8,192); their count, or -1 after a usage
 * line. */
int bench_model_topologies(int argc, char **argv, const char *bench, const char *const **args);

/* Runs fn(ctx) in a child process; false when it fails or dies. */
bool bench_in_child(int (*fn)(void *), void *ctx);

#endif
