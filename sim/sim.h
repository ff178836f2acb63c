/* sim.h — the SimGrid simulation of a training iteration.
 *
 * The topology becomes a SimGrid platform (one host per device, servers as
 * zones with their tiers, NICs, the fabric); a plan is lowered into the
 * program every rank runs (lower.c), and each rank runs it: compute as
 * executions, collectives decomposed by their algorithm into
 * point-to-point messages over the platform's links, so concurrent
 * collectives share links; the result is the iteration time,
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

#include "cost.h"
#include "topologies.h"
#include "util.h"

/* ------------------------------------------------------------- lowering */

/* A training iteration as the programs the ranks run: one per stage, SPMD
 * inside it (each rank finds its own group in each collective; groups are
 * stage-relative). Steps are data, not code per op kind. Each chunk has a
 * forward and a backward list of steps for one micro-batch; a stage runs
 * its schedule's slots in order, then its tail (the optimizer, ZeRO's
 * parameter gathers). Stream 0 runs compute, the ops' own collectives,
 * redistributions and the pipeline's sends and receives; stream 1 the
 * gradient synchronisation, each bucket once the backward step that
 * completes it has run (after every micro-batch for ZeRO 2 and 3, else in
 * the chunk's last backward); the tail waits for stream 1. */
enum prog_phase {
	PHASE_FORWARD, PHASE_BACKWARD, PHASE_RECOMPUTE, PHASE_PIPELINE, PHASE_PARAMS, PHASE_GRADIENT,
	PHASE_OPTIMIZER, PHASE_COUNT
};
extern const char *const prog_phase_names[PHASE_COUNT];

enum prog_kind { PROG_COMPUTE, PROG_COLLECTIVE, PROG_SEND, PROG_RECV };

struct prog_step {
	enum prog_kind kind;
	enum prog_phase phase;
	int stream;                        /* 0 or 1 */
	int stage;                         /* whose ranks run it */
	int op;                            /* graph op; -1 for the optimizer, buckets, sends */
	const char *label;                 /* for traces: "dense2.matmul", "dense2.matmul AllReduce" */
	double seconds;                    /* PROG_COMPUTE: the estimator's roofline time */
	enum step_kind coll;               /* PROG_COLLECTIVE */
	struct rank_groups groups;         /* stage-relative */
	double bytes;                      /* S of the formulas; SEND/RECV: the message */
	int after;                         /* stream 1: the stream-0 step it waits for; else -1 */
	double overlap_s;                  /* PROG_COLLECTIVE on stream 0: compute the rank runs
	                                      alongside it, taken off the compute step next to
	                                      it (a context-parallel ring's attention blocks) */
	double alone_share;                /* with overlap_s: the share of the transfer that no
	                                      compute runs beside (training.
	                                      tp_comm_overlap_slices n: the first slice's, 1/n);
	                                      0: all of it may be hidden */
	bool every_micro;                  /* stream 1: after every micro-batch, not the last only */
	bool first_micro;                  /* run in the first micro-batch's forward only (stream
	                                      1: handed over there; training.overlap_param_gather) */
	bool wait_s1;                      /* stream 0: first wait until stream 1 has run every
	                                      step handed to it (exposed communication) */
	int channel;                       /* SEND/RECV: 2c (activations) or 2c+1 (their
	                                      gradient) at the boundary chunk c to c+1;
	                                      prog_tied_channel for shared parameters */
	int peer_stage;                    /* SEND/RECV: the stage at the other end */
	struct cost_ep_route ep;           /* an AllToAll that training.moe_dispatcher "hybridep"
	                                      or "deepep" runs as a MoE dispatch or combine
	                                      (experts 0: a plain one) */
	bool moe;                          /* PROG_COLLECTIVE: of a MoE dispatch's or combine's
	                                      redistribution (cost_moe_edge) */
};

/* The SEND/RECV channels of a program of n_chunks chunks on n_stages
 * stages: two per chunk boundary, then one per stage for the gradients of
 * shared parameters it receives (a head tied to the embedding), then one
 * per stage for DualPipe's gradients of the chunks it shares with its
 * mirror stage (prog_mirror_channel). */
static inline int prog_channels(int n_chunks, int n_stages)
{
	return 2 * n_chunks + 2 * n_stages;
}

static inline int prog_mirror_channel(int n_chunks, int n_stages, int receiver_stage)
{
	return 2 * n_chunks + n_stages + receiver_stage;
}

static inline int prog_tied_channel(int n_chunks, int receiver_stage)
{
	return 2 * n_chunks + receiver_stage;
}

struct prog_chunk {
	int stage;
	int fwd, n_fwd;                    /* steps[fwd .. fwd+n_fwd): one micro-batch's forward */
	int bwd, n_bwd;                    /* its backward, stream-1 steps just after their `after` */
	int wgt, n_wgt;                    /* a zero-bubble schedule's weight pass (W): the
	                                      backward's weight-gradient compute and the
	                                      gradient buckets, taken out of bwd; n_wgt 0
	                                      otherwise */
	double act_bytes;                  /* activations one micro-batch's forward leaves for its
	                                      backward (cost_chunk_activations) */
	double work_bytes;                 /* held while its backward recomputes (full) */
	/* DualPipe (plan_dualpipe_schedule), 0 otherwise: a backward that is
	 * not split (B and W together, the gradient sent after both); the
	 * forward of an F&B slot, without its send; and the backward of one,
	 * with the sends of both: the forward of chunk `pair` (the other
	 * chunk on the stage) runs overlapped with it (docs/simulation.md).
	 * Megatron-Core's combined 1F1B (plan_combined_schedule): the
	 * forward and the backward of an F&B, each with its send, lowered
	 * overlapped with each other (`pair` unused: the slots name theirs) */
	int whole, n_whole;
	int ov_fwd, n_ov_fwd;
	int ov_bwd, n_ov_bwd;
	int pair;
};

/* The step ranges one slot runs (two for an F&B: the forward, then the
 * paired chunk's backward): their starts and counts, and how many. */
static inline int prog_slot_ranges(const struct prog_chunk *chunks, const struct prog_slot *sl,
                                   int from[2], int n[2])
{
	const struct prog_chunk *c = &chunks[sl->chunk];
	if (sl->fb) {
		from[0] = c->ov_fwd, n[0] = c->n_ov_fwd;
		from[1] = chunks[sl->pair_chunk].ov_bwd, n[1] = chunks[sl->pair_chunk].n_ov_bwd;
		return 2;
	}
	if (sl->weight)
		from[0] = c->wgt, n[0] = c->n_wgt;
	else if (sl->backward && !sl->split && c->n_whole > 0)
		from[0] = c->whole, n[0] = c->n_whole;
	else if (sl->backward)
		from[0] = c->bwd, n[0] = c->n_bwd;
	else
		from[0] = c->fwd, n[0] = c->n_fwd;
	return 1;
}

struct prog_stage {
	int n_slots;
	struct prog_slot *slots;           /* plan_schedule's order */
	int tail, n_tail;                  /* steps run once after the slots */
	double mem_base_bytes;             /* held all iteration: parameters, gradients,
	                                      optimizer state, buffers, the runtime's reserve */
};

struct program {
	int64_t n_ranks;                   /* every stage's */
	int64_t stage_ranks;
	int n_stages, n_chunks;
	int64_t micro_batches;
	struct prog_chunk *chunks;
	struct prog_stage *stages;
	int n_steps;
	struct prog_step *steps;
	double bucket_bytes;               /* gradient bucket size used */
	bool combined;                     /* the F&B slots are Megatron-Core's combined 1F1B's
	                                      (training.moe_a2a_overlap), not DualPipe's */
};

/* One iteration of a plan as programs: per chunk the forward ops, their
 * collectives and the redistributions into them (ZeRO-3: each parameter
 * gathered before its first reader), a send of the live activations to
 * the next chunk; backward: a receive of their gradient, recomputation
 * (full: the chunk's forward again; selective: the attention core), the
 * ops in reverse with the mirrored collectives, gradient buckets of at
 * most bucket_bytes (same groups only; ReduceScatter from ZeRO 1) on
 * stream 1, the gradient sent back; per stage the optimizer and (ZeRO 1,
 * 2) the all-gather of the updated parameters. Times and bytes are the
 * estimator's. */
bool plan_lower(struct arena *a, const struct plan *p, double bucket_bytes, struct program *out,
                struct diag_list *diags);


struct sim_options {
	enum sim_fidelity fidelity;        /* FIDELITY_STEP: every algorithm step a message;
	                                      FIDELITY_COARSE: one transfer per rank per phase */
	enum collective_algo algo;         /* COLL_AUTO: cost_choose_algo's rule */
	bool trace;                        /* record events */
	uint64_t seed;                     /* the devices' speeds (cost_device_speed) */
	bool leaf_uplinks;                 /* a leaf's uplinks one pool its NICs share (several
	                                      jobs: docs/simulation.md), not a fixed share
	                                      per NIC */
	/* Called now and then from the simulation with the simulated time and
	 * the fraction of the program done (0..1); may be NULL. */
	void (*progress)(void *ctx, double simulated_s, double fraction);
	void *progress_ctx;
	/* sim_plan: called once the program is lowered and within the budget,
	 * before the run, with its ranks, micro-batches and program steps x
	 * ranks (so a caller can say what is coming); may be NULL. */
	void (*before_run)(void *ctx, int64_t ranks, int64_t micro_batches, double events);
	void *before_run_ctx;
};

struct sim_rank {
	double compute_s;                  /* executing compute */
	double comm_exposed_s;             /* stream 0 waiting for communication: its collectives,
	                                      and before the tail the gradient stream */
	double pipeline_wait_s;            /* stream 0 waiting for another stage: the bubble */
	double idle_s;                     /* none of these: done before the iteration ends (a
	                                      pipeline's drain) */
	double peak_memory_bytes;          /* the most it held: its stage's base, the activations
	                                      of the micro-batches in flight, a recomputed layer */
	double straggler_wait_s;           /* stream 0 in a collective before the group's last
	                                      member arrived: waiting on a slower device (a
	                                      straggler, a fault's slowdown), not on the links */
	double pipeline_transfer_s;        /* of comm_exposed_s: receiving the pipeline's
	                                      activations and gradients once they were sent */
	double pipeline_alone_s;           /* those transfers each alone on its route (latency +
	                                      bytes / the slowest link's rate): what the estimate
	                                      prices */
};

struct sim_link {
	const char *name;                  /* as in the platform: "s0-hccs-0-1", "nic-3-s12", "leaf-2-up" */
	double bytes;                      /* carried during the iteration */
	double busy_s;                     /* time with traffic */
	double utilisation;                /* bytes / (bandwidth x iteration time) */
};

/* The load of the busiest links over time: SIM_BINS bins of bin_s
 * seconds from 0 (the width doubles until the iteration fits: at least
 * half of them cover it). Each bin's utilisation is the bytes the link
 * carried in it (a transfer's bytes spread evenly over its duration) over
 * bandwidth x bin_s. */
#define SIM_BINS 32
#define SIM_SERIES_LINKS 8             /* the busiest links whose series are kept */

struct sim_link_series {
	int link;                          /* index into sim_result.links */
	double utilisation[SIM_BINS];
};

enum sim_event_kind { SIM_EV_COMPUTE, SIM_EV_COLLECTIVE, SIM_EV_MEMORY };

struct sim_event {
	int64_t rank;
	int stream;
	enum sim_event_kind kind;
	int step;                          /* program step */
	int64_t micro;                     /* the micro-batch; -1 for once-per-iteration steps */
	const char *name;                  /* the step's label */
	double start_s, end_s;
	double bytes;                      /* SIM_EV_MEMORY: what the rank holds from start_s */
};

/* One collective of the program as simulated: how much longer it took on
 * the busiest rank than its formula says (contention). */
struct sim_collective {
	int step;
	enum collective_algo algo;
	double simulated_s;                /* the longest a rank spent in it once its group's
	                                      last member arrived (the wait before is a
	                                      straggler's) */
	double formula_s;
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
	double bin_s;                      /* link load over time: the bins' width */
	int n_series;                      /* the first n_series links (the busiest) */
	struct sim_link_series *series;
};

/* The program steps its ranks run in one iteration: every rank's steps
 * of every slot of its stage's schedule and its tail. The simulation's
 * events (executions, transfers, waits) are a small multiple of it; the
 * CLI refuses a simulation over its --max-events. */
double sim_program_events(const struct program *prog);
/* The same counting only the ranks that run as actors at fidelity f: at
 * FIDELITY_REPRESENTATIVE one rank per data-parallel group (the others'
 * steps are not run: their representative carries their transfers), at
 * the others every rank. *running gets the ranks counted. */
double sim_program_events_run(const struct program *prog, enum sim_fidelity f,
                              int64_t *running);

/* The most any rank held (struct sim_rank's peak_memory_bytes). */
double sim_peak_memory(const struct sim_result *r);

/* Simulates one iteration of `prog` on `t`. False with a diagnostic when
 * the platform cannot be built or the simulation fails. */
bool sim_run(struct arena *a, const struct topology *t, const struct program *prog,
             const struct sim_options *o, struct sim_result *out, struct diag_list *diags);

/* ------------------------------------------------------- several jobs */

/* One job of several simulated together on one topology (several
 * trainings sharing a cluster): its program and the device each of its
 * ranks runs on. Jobs hold disjoint devices; their traffic shares the
 * links their routes cross. */
struct sim_job {
	const struct program *prog;
	const int64_t *devices;            /* [prog->n_ranks]; NULL: rank r on device r */
};

/* A link the traffic of more than one job crossed: its bandwidth and the
 * bytes each job sent over it. */
struct sim_shared_link {
	const char *name;
	double bandwidth_bps;
	double *bytes;                     /* [n_jobs] */
	double utilisation[SIM_BINS];      /* every job's traffic over time, bins of bin_s */
};

struct sim_shared {
	int n_jobs;
	double bin_s;
	int n_links;
	struct sim_shared_link *links;     /* most loaded first (bytes / bandwidth) */
};

/* Simulates the jobs' iterations together in one SimGrid run: out[j] is
 * job j's result (its iteration ends when its last rank finishes; its
 * links are those it used, with its own bytes), `shared` (may be NULL)
 * the links several jobs used. False with a diagnostic when devices
 * overlap or lie outside the topology, or the simulation fails. */
bool sim_run_jobs(struct arena *a, const struct topology *t, const struct sim_job *jobs,
                  int n_jobs, const struct sim_options *o, struct sim_result *out,
                  struct sim_shared *shared, struct diag_list *diags);

/* A plan estimated, lowered and simulated; each flag says how far it got. */
struct sim_plan_outcome {
	bool estimated, lowered, simulated;
	struct estimate est;
	struct program prog;
	struct sim_result sim;
};
/* The default budget of sim_plan: program steps x the ranks that run
 * (sim_program_events_run). The largest shipped runs need ~1e9 (GPT-3 175B on
 * 8,192 ranks, about two minutes); 1e10 is hours. */
#define SIM_MAX_EVENTS 1e10
/* plan_estimate, plan_lower (gradient buckets of bucket_bytes) and
 * sim_run, in that order, stopping at the first that fails (diagnostics in
 * d). The plan is priced and run with o->algo: when it differs from the
 * scenario's, on a copy of the scenario that says so. A program of more
 * than max_events steps x running ranks (sim_program_events_run at
 * o->fidelity; 0: SIM_MAX_EVENTS) is refused rather than run for hours. */
bool sim_plan(struct arena *a, const struct plan *p, double bucket_bytes, double max_events,
              const struct sim_options *o, struct sim_plan_outcome *out, struct diag_list *d);

#endif
