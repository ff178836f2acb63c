/* fixture.h — what the test programs share: an arena and a diagnostics
 * list per test (the diagnostics printed on stderr after it, so that a
 * failure shows why), and loading shipped files by name. Tests run from
 * the source root (tests/meson.build). */
#ifndef SHARDLAB_TEST_FIXTURE_H
#define SHARDLAB_TEST_FIXTURE_H

#include "planner.h"
#include "sim.h"

/* Achievable link rates of the shipped topologies, as hand calculations
 * use them: the file's line rate times its "efficiency" (docs/formats.md). */
#define A100_NVSWITCH_BPS (300e9 * 0.767) /* dgx-a100: 300 GB/s per NVSwitch port */
#define A100_NIC_BPS (25e9 * 0.94)        /* dgx-a100: HDR 200 Gb/s = 25 GB/s per NIC */
#define H100_NVSWITCH_BPS (450e9 * 0.817) /* dgx-h100: 450 GB/s per NVSwitch port */
#define H100_NIC_BPS (50e9 * 0.94)        /* dgx-h100: NDR 400 Gb/s = 50 GB/s per NIC */
#define HCCS_910B_BPS (56e9 * 0.33)       /* atlas800t-a2-910b: 56 GB/s per HCCS link */

extern struct arena *A;
extern struct diag_list D;

/* TestSuite(name, .init = fixture_setup, .fini = fixture_teardown). */
void fixture_setup(void);
void fixture_teardown(void);

/* A scenario file loaded into A (diagnostics in D); the test fails when it
 * does not load. */
struct scenario *fixture_scenario(const char *path);
/* A scenario from JSON text into a (diagnostics in d), as if read from
 * `path` (relative paths in it resolve from there); the test fails when it
 * does not load. */
struct scenario *fixture_scenario_text(struct arena *a, struct diag_list *d, const char *path,
                                       const char *text);
/* A scenario of a generated model (`generator`: its JSON object) on
 * `devices` of topologies/TOPOLOGY.json, its training settings the JSON
 * object `training`; loaded as fixture_scenario_text loads. */
struct scenario *fixture_generated(struct arena *a, struct diag_list *d, const char *generator,
                                   const char *topology, int devices, const char *training);
/* topologies/NAME.json loaded into a; the test fails when it does not
 * load. "NAME:none" drops its collective library and its stragglers
 * (the links' α–β formulas alone and equal devices, topologies.h). */
struct topology *fixture_topology(struct arena *a, const char *name);

/* One run of the built shardlab ($SHARDLAB, set by tests/meson.build; the
 * tests run from the source root). */
struct cli_run {
	char *out;   /* the stream asked for; the caller frees it */
	int status;  /* exit status, or 128 + signal */
};
/* Runs `shardlab ARGS`, keeping stderr (want_err) or stdout; the test fails
 * when SHARDLAB is not set. */
struct cli_run fixture_shardlab(const char *args, bool want_err);

/* Writes the printf-formatted text to path (replacing it); the test fails
 * when it cannot. */
void fixture_write(const char *path, const char *fmt, ...)
        __attribute__((format(printf, 2, 3)));

/* A one-stage program from a flat list of steps: steps[0 .. n_section)
 * run `repeat` times (the micro-batches), each stream-1 step after the
 * step its `after` names (in the last repetition), the other stream-0
 * steps once at the end. Copies into a. */
struct program fixture_program(struct arena *a, const struct prog_step *steps, int n_steps,
                               int n_section, int64_t n_ranks, int64_t repeat);

#endif
