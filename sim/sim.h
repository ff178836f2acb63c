/* sim.h — the SimGrid simulation of a training iteration.
 *
 * The topology becomes a SimGrid platform (one host per device, servers as
 * zones with their tiers, NICs, the fabric); every rank runs the program
 * planner/ lowered (compute as executions, collectives decomposed by their
 * algorithm into point-to-point messages over the platform's links, so
 * concurrent collectives share links); the result is the iteration time,
 * per rank the compute, exposed communication and idle time, per link the
 * bytes and utilisation, and optionally the events of a trace.
 *
 * SimGrid runs one engine per process: sim_run runs each simulation in a
 * child process and reads its result back, so a caller may simulate many
 * plans. Only this module includes SimGrid headers.
 *
 * Units: seconds, bytes, bytes/s, FLOP/s.
 */
#ifndef SHARDLAB_SIM_H
#define SHARDLAB_SIM_H

#include <stdbool.h>
#include <stdint.h>

#include "planner.h"
#include "topologies.h"
#include "util.h"

struct sim_options {
	enum sim_fidelity fidelity;        /* FIDELITY_STEP: every algorithm step a message;
	                                      FIDELITY_COARSE: one transfer per rank per phase */
	enum collective_algo algo;         /* COLL_AUTO: cost_choose_algo's rule */
	bool trace;                        /* record events */
	/* Called now and then from the simulation with the simulated time and
	 * the fraction of the program done (0..1); may be NULL. */
	void (*progress)(void *ctx, double simulated_s, double fraction);
	void *progress_ctx;
};

struct sim_rank {
	double compute_s;                  /* executing compute */
	double comm_exposed_s;             /* stream 0 waiting for communication: its collectives,
	                                      and before the tail the gradient stream */
	double pipeline_wait_s;            /* stream 0 waiting for another stage: the bubble */
	double idle_s;                     /* none of these: done before the iteration ends (a
	                                      pipeline's drain) */
};

struct sim_link {
	const char *name;                  /* as in the platform: "s0-hccs-0-1", "nic-3-s12", "leaf-2-up" */
	double bytes;                      /* carried during the iteration */
	double busy_s;                     /* time with traffic */
	double utilisation;                /* bytes / (bandwidth x iteration time) */
};

enum sim_event_kind { SIM_EV_COMPUTE, SIM_EV_COLLECTIVE };

struct sim_event {
	int64_t rank;
	int stream;
	enum sim_event_kind kind;
	int step;                          /* program step */
	int64_t micro;                     /* the micro-batch; -1 for once-per-iteration steps */
	const char *name;                  /* the step's label */
	double start_s, end_s;
};

/* One collective of the program as simulated: how much longer it took on
 * the busiest rank than its formula says (contention). */
struct sim_collective {
	int step;
	enum collective_algo algo;
	double simulated_s, formula_s;
};

struct sim_result {
	double iteration_s;
	int64_t n_ranks;
	struct sim_rank *ranks;
	int n_links;
	struct sim_link *links;            /* links that carried traffic, busiest first */
	int n_collectives;
	struct sim_collective *collectives;
	int64_t messages;                  /* point-to-point transfers simulated */
	int64_t activities;                /* SimGrid activities: transfers (both ends), sleeps,
	                                      waits at barriers */
	int64_t by_formula;                /* collectives priced by their formula (one per group
	                                      and execution; fidelity coarse) */
	double wall_s;                     /* wall time of the simulation */
	int64_t n_events;
	struct sim_event *events;          /* when traced */
};

/* Simulates one iteration of `prog` on `t`. False with a diagnostic when
 * the platform cannot be built or the simulation fails. */
bool sim_run(struct arena *a, const struct topology *t, const struct program *prog,
             const struct sim_options *o, struct sim_result *out, struct diag_list *diags);

#endif
