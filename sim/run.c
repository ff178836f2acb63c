/* run.c — the SimGrid engine: one simulated training iteration.
 *
 * Runs in the child process sim_run forks (one engine per process). The
 * setup runs every collective dry to find the rank pairs that carry
 * messages, writes the platform (platform.c) to a temporary file, loads it
 * with the CM02 model, unit factors, no cross-traffic and no TCP window
 * (docs/simulation.md: an uncontended transfer then takes latency + bytes /
 * bandwidth exactly), and creates a mailbox per (pair, stream): messages
 * between two ranks on one stream are sent and received in program order,
 * so FIFO matching never mixes collectives or senders; the pipeline's
 * sends post their times on a queue per (boundary, direction, receiver),
 * and the receiver moves the bytes (run_p2p).
 *
 * Each rank runs its stage's schedule: an actor for stream 0 walks the
 * slots (a chunk's forward or backward steps for one micro-batch: compute
 * as sleeps of the estimator's seconds, runs of them slept at once, the
 * ops' collectives, the pipeline's sends, which do not wait, and receives,
 * which do), then the stage's tail. When the program has gradient buckets, stream 0 hands each to the
 * rank's stream-1 actor as it passes it (in every micro-batch or the
 * chunk's last, as the step says) through a queue and a semaphore; the
 * tail waits for stream 1 to drain.
 *
 * Results: per rank compute, exposed communication (stream 0 inside a
 * collective, a receive's transfer, or before the tail waiting for stream
 * 1's gradients), pipeline wait (a receive before the other stage sent),
 * idle the rest; per link the bytes routed over it (counted
 * per message along its route), busy time at full bandwidth and
 * utilisation; per collective step the longest a rank spent in it after
 * its group's last member arrived, and its formula. Written to the pipe as plain binary (sim.c reads it).
 *
 * Hot path: run_ops, per message: an integer hash lookup of the pair, a
 * put or get on a preallocated mailbox, the route's byte counters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>
#include <simgrid/semaphore.h>
#include <xbt/config.h>
#include <xbt/log.h>

#include "sim-int.h"

struct engine;

struct rank_state {
	struct engine *e;                  /* its job's */
	int64_t rank, local;               /* global, and inside its stage */
	int stage;
	double compute_s, comm_s, wait_s;
	double straggler_s;                /* in a collective before its last member arrived */
	double p2p_s, p2p_alone_s;         /* receiving the pipeline's sends once posted, and the
	                                      same transfers alone on their routes */
	double s1_late_s;                  /* stream 1's such waits that stream 0 has not yet
	                                      waited out (s0_waits) */
	double mem_bytes, mem_peak_bytes;  /* held now, and at most */
	double speed;                      /* its compute's factor over the program's (stragglers) */
	sg_host_t host;
	sg_sem_t s1_go, opt_go;
	sg_sem_t go[2];                    /* per stream: released from a formula collective */
	int *queue;                        /* stream-1 steps stream 0 handed over; -1 ends */
	int64_t *queue_micro;
	int q_head, q_tail, q_cap;
	bool s0_waiting, s1_finished;
	sg_sem_t mid_go;                   /* stream 0 waiting mid-iteration (wait_s1) */
	int s1_done;                       /* stream-1 steps run to their end */
	int wait_upto;                     /* stream 0 waits until s1_done reaches it; 0: not */
};

/* A pipeline boundary between one sender and one receiver: the times the
 * sends were posted, in order, and a semaphore counting them. */
struct p2p_chan {
	sg_sem_t posted;
	double *at;
	int head, tail, cap;
};

struct actor_ctx {
	struct rank_state *rs;
	int stream;
	int64_t micro;                     /* of the step running; -1 in the tail */
	double pending_s;                  /* compute (and formula collectives) not yet slept */
	double raw_s;                      /* program compute since its last formula barrier,
	                                      before its speed (stragglers) */
	int32_t sync_key;                  /* the member set of the formula barrier it last
	                                      left, if it has waited on nothing since; else -1 */
	bool lockstep_ok;                  /* in a slot that is not a last micro-batch's */
	double straggler_s;                /* the collective just run: the wait before its last
	                                      member arrived (lockstep path) */
	int64_t in_slot;                   /* its arrival slot (arrive), -1 none */
	struct sim_ops ops;
	sg_comm_t *comms;
	int comms_cap;
	int *pair;                         /* a rare collective's ops' rank pairs (run_rare) */
	int pair_cap;
	void *sink;
	/* fidelity representative: the flows it started on helpers, not yet
	 * ended, and the semaphore the last one to end releases */
	int64_t outstanding;
	bool waiting;
	sg_sem_t done;
};

/* Fidelity representative: an actor that carries one flow at a time
 * between any two hosts (a replica's transfer the representative stands
 * for), then goes back on its engine's free list. */
struct helper {
	struct engine *e;
	sg_sem_t go_send, go_recv;
	sg_actor_t receiver;
	sg_mailbox_t mbox;
	sg_host_t from, to;
	double bytes;
	struct actor_ctx *owner;
	struct helper *next_free;
	bool quit;
};

/* Fidelity representative: the transfers of every member of a group
 * holding one representative, by round (sorted), each flagged when it
 * runs as a flow (else only its bytes are counted). */
struct mixed_flow {
	int32_t round, pair;
	int64_t order;
	double bytes;
	bool launch;
};

struct mixed_flows {
	int64_t n;
	struct mixed_flow *f;
};

struct engine {
	const struct topology *t;
	const struct program *prog;
	const struct sim_options *o;
	int job;                           /* its index among the jobs run together */
	const int64_t *dev;                /* [rank]: its device (host); NULL: rank r on r */
	struct sim_net *net;               /* every job's pairs and links */
	const int32_t *link_job;           /* [link]: the one job using it, or LINK_JOBS;
	                                      NULL when the job runs alone */
	double end_s;                      /* when its last actor finished */
	int64_t *where;                    /* scratch: a group's devices (devices_of) */
	int where_cap;
	int64_t pairs_from, pairs_to;      /* its pairs in the net */
	/* Link load over time (bounded: SIM_BINS bins per link it uses, of a
	 * width that doubles whenever the simulation outgrows them) */
	struct bin_clock *bins_clock;      /* shared by the jobs run together */
	int32_t *slot;                     /* [link]: its row in bins, -1 none */
	int n_slots;
	double *bins;                      /* [slot * SIM_BINS + b]: bytes carried in bin b */
	double **group_w;                  /* [group id]: executions in each bin, NULL before
	                                      the first (formula collectives) */
	sg_mailbox_t *mbox;                /* [pair * 2 + stream] */
	struct p2p_chan *p2p;              /* [channel * stage_ranks + receiver's local rank] */
	uint8_t **algo;                    /* [step][group]: effective algorithm | flags */
	double *formula_s, *coll_max_s;    /* [step] */
	int64_t *group_base;               /* [step]: its groups' first index in the arrays below */
	int64_t n_group_ids;
	double *group_s;                   /* [group id]: the formula of that group */
	int32_t *arrived;                  /* [group id]: members at its barrier */
	int64_t *entries;                  /* [group id]: members that entered it, all executions */
	double *last_in;                   /* [group id][2]: the last member's arrival, by the
	                                      execution's parity (two at most are live: a member
	                                      enters the next only once all left this one) */
	uint8_t *fallback;                 /* [group id]: this execution runs its transfers */
	int64_t *executions;               /* [group id]: times run by the formula */
	int32_t *group_key;                /* [group id]: its member set's index, -1 none */
	uint8_t *rare;                     /* [step]: runs once per iteration (see below) */
	int32_t *link_key;                 /* [link]: the member set that owns it, -1 none */
	int32_t *key_busy;                 /* [member set]: rare transfers on its links now */
	int64_t n_keys;
	double *key_start, *key_end;       /* [member set]: its last formula collective */
	double *key_speed;                 /* [member set]: its slowest member's speed */
	double *link_bytes;                /* [link] */
	int64_t messages, activities, by_formula;
	struct rank_state *ranks;
	double slowest;                    /* cost_slowest_factor of the program's ranks */
	double opt_scale;                  /* the optimizer's seconds to the others' scale */
	bool has_s1;
	bool has_first;                    /* steps of the first micro-batch only (first_micro) */
	int64_t progress_done, progress_total, progress_every;
	/* fidelity representative (NULL, 0 otherwise) */
	int64_t *rep_of;                   /* [rank]: its representative; itself when simulated */
	int64_t *repl_start, *repl;        /* [rep .. rep+1): its other replicas, ascending */
	int *distinct_of;                  /* [step]: the earlier alike step, or itself */
	struct mixed_flows **mixed;        /* [group id of a distinct step] */
	int32_t *link_src;                 /* scratch: [2][link] a round's sends' one source
	                                      and destination on it, or LINK_* */
	int32_t *group_reps;               /* [group id]: its representatives */
	sg_host_t *hosts;                  /* [device] */
	struct helper *free_helpers;
	struct helper **helpers;
	int64_t n_helpers, cap_helpers;
	int64_t live;                      /* its rank actors still running */
	bool bad_reps;                     /* the groups do not split into replicas */
	struct sim_event *events;
	int64_t n_events, cap_events;
	bool failed;
};

/* The time axis of the link-load bins: bins of bin_s seconds from 0,
 * doubled (and the rows merged two by two) whenever an activity ends past
 * the last bin. */
struct bin_clock {
	double bin_s;
	struct engine *jobs;
	int n_jobs;
};

/* A link several jobs use (engine.link_job). */
enum { LINK_JOBS = -2 };
/* A round's sends on a link (mixed_flows_of): none yet, several ends. */
enum { LINK_UNSEEN = -1, LINK_SEVERAL = -2 };

/* An algorithm byte's flags: priced by its formula; at fidelity
 * representative a group with one representative (MIXED) or none. */
enum { BY_FORMULA = 0x80, MIXED = 0x40, ABSENT = 0x20, ALGO_FLAGS = 0xe0 };

/* The device (SimGrid host) rank r of the job runs on. */
static int64_t dev_of(const struct engine *e, int64_t r)
{
	return e->dev ? e->dev[r] : r;
}

/* Whether rank r runs as actors: every rank but at fidelity
 * representative, where only its data-parallel group's first member. */
static bool is_rep(const struct engine *e, int64_t r)
{
	return !e->rep_of || e->rep_of[r] == r;
}

/* ------------------------------------------------------------- setup */

static int64_t offset_of(const struct engine *e, int step)
{
	return (int64_t)e->prog->steps[step].stage * e->prog->stage_ranks;
}

/* A group's ranks, the stage's offset added. */
static int members_of(struct sim_ops *ops, const struct rank_groups *g, int group, int64_t off)
{
	if (!sim_ops_reserve(ops, g->size))
		return -1;
	rank_groups_members(g, group, ops->members);
	for (int j = 0; j < g->size; j++)
		ops->members[j] += off;
	return g->size;
}

static bool in_program(const struct engine *e, int64_t r)
{
	return r >= 0 && r < e->prog->n_ranks;
}

/* The devices of a group's members, which price its collective (the
 * members themselves when rank r runs on device r); NULL when a member is
 * outside the program or memory ran out. */
static const int64_t *devices_of(struct engine *e, const int64_t *members, int n)
{
	if (!e->dev)
		return members;
	if (n > e->where_cap) {
		int64_t *w = realloc(e->where, (size_t)n * sizeof(*w));
		if (!w)
			return NULL;
		e->where = w;
		e->where_cap = n;
	}
	for (int j = 0; j < n; j++) {
		if (!in_program(e, members[j]))
			return NULL;
		e->where[j] = e->dev[members[j]];
	}
	return e->where;
}

/* Whether step i is a pipeline send, and the first ranks of its stage and
 * of the stage it sends to (rank off + j sends to peer + j). */
static bool send_ends(const struct engine *e, int i, int64_t *off, int64_t *peer)
{
	const struct prog_step *st = &e->prog->steps[i];
	if (st->kind != PROG_SEND)
		return false;
	*off = offset_of(e, i);
	*peer = (int64_t)st->peer_stage * e->prog->stage_ranks;
	return true;
}

/* A pipeline send: the pair of every rank of the stage with its peer. */
static bool setup_send(struct engine *e, int i)
{
	const struct program *p = e->prog;
	const struct prog_step *st = &p->steps[i];
	int64_t off = offset_of(e, i), peer = (int64_t)st->peer_stage * p->stage_ranks;
	for (int64_t j = 0; j < p->stage_ranks; j++)
		if (sim_net_pair_add(e->net, dev_of(e, off + j), dev_of(e, peer + j)) < 0)
			return false;
	return true;
}

/* The same groups of the same ranks (their devices' names aside). */
static bool same_groups(const struct rank_groups *a, const struct rank_groups *b)
{
	if (a->n_groups != b->n_groups || a->size != b->size || a->n_axes != b->n_axes ||
	    a->dm.n != b->dm.n || a->dm.base != b->dm.base || a->dm.n_devices != b->dm.n_devices)
		return false;
	for (int k = 0; k < a->n_axes; k++)
		if (a->axes[k] != b->axes[k])
			return false;
	for (int k = 0; k < a->dm.n; k++)
		if (a->dm.size[k] != b->dm.size[k])
			return false;
	return true;
}

/* Fidelity representative: each rank's representative (rep_of, n_ranks
 * entries), the first member of its data-parallel group. A stage's
 * data-parallel groups are the grouping of its gradient collectives that
 * carries the most bytes (a parameter replicated across tensor
 * parallelism too, a norm's under sequence parallelism, have other
 * groupings and few bytes); a rank in none represents itself. False when
 * out of memory or a group's member is outside the program. The engine's
 * setup and sim_program_events's budget both ask it. */
bool sim_representatives(const struct program *p, int64_t *rep_of, struct sim_ops *ops)
{
	int64_t n_ranks = p->n_ranks;
	int *seen = malloc((size_t)p->n_steps * sizeof(*seen) + 1), n_seen = 0;
	double *bytes = calloc((size_t)p->n_steps + 1, sizeof(*bytes));
	if (!seen || !bytes) {
		free(seen);
		free(bytes);
		return false;
	}
	for (int64_t r = 0; r < n_ranks; r++)
		rep_of[r] = r;
	for (int i = 0; i < p->n_steps; i++) {
		const struct prog_step *st = &p->steps[i];
		if (st->kind != PROG_COLLECTIVE || st->phase != PHASE_GRADIENT || st->groups.size <= 1)
			continue;
		int x = 0;
		while (x < n_seen && !(p->steps[seen[x]].stage == st->stage &&
		                       same_groups(&p->steps[seen[x]].groups, &st->groups)))
			x++;
		if (x == n_seen)
			seen[n_seen++] = i;
		bytes[x] += st->bytes;
	}
	bool ok = true;
	for (int s = 0; ok && s < p->n_stages; s++) {
		int best = -1;
		for (int x = 0; x < n_seen; x++)
			if (p->steps[seen[x]].stage == s && (best < 0 || bytes[x] > bytes[best]))
				best = x;
		const struct prog_step *st = best >= 0 ? &p->steps[seen[best]] : NULL;
		int64_t off = (int64_t)s * p->stage_ranks;
		for (int k = 0; ok && st && k < st->groups.n_groups; k++) {
			int n = members_of(ops, &st->groups, k, off);
			int64_t first = n > 0 ? ops->members[0] : -1;
			for (int j = 1; j < n; j++)
				first = ops->members[j] < first ? ops->members[j] : first;
			ok = n > 0;
			for (int j = 0; ok && j < n; j++) {
				ok = ops->members[j] >= 0 && ops->members[j] < n_ranks;
				if (ok)
					rep_of[ops->members[j]] = first;
			}
		}
	}
	free(bytes);
	free(seen);
	return ok;
}

/* The engine's representatives (sim_representatives) and each
 * representative's other replicas. False when out of memory;
 * e->bad_reps when a pipeline send joins two replicas that do not
 * correspond. */
static bool find_representatives(struct engine *e, struct sim_ops *ops)
{
	const struct program *p = e->prog;
	int64_t n_ranks = p->n_ranks;
	e->rep_of = malloc((size_t)n_ranks * sizeof(*e->rep_of));
	e->repl_start = calloc((size_t)n_ranks + 1, sizeof(*e->repl_start));
	e->repl = malloc((size_t)n_ranks * sizeof(*e->repl) + 1);
	if (!e->rep_of || !e->repl_start || !e->repl)
		return false;
	bool ok = sim_representatives(p, e->rep_of, ops);
	for (int64_t r = 0; ok && r < n_ranks; r++)
		if (e->rep_of[e->rep_of[r]] != e->rep_of[r])
			e->bad_reps = true;
	/* the replicas of each representative, ascending */
	for (int64_t r = 0; ok && r < n_ranks; r++)
		if (!is_rep(e, r))
			e->repl_start[e->rep_of[r] + 1]++;
	for (int64_t r = 0; ok && r < n_ranks; r++)
		e->repl_start[r + 1] += e->repl_start[r];
	int64_t *fill = ok ? malloc((size_t)n_ranks * sizeof(*fill) + 1) : NULL;
	if (ok && !fill)
		return false;
	for (int64_t r = 0; ok && r < n_ranks; r++)
		fill[r] = e->repl_start[r];
	for (int64_t r = 0; ok && r < n_ranks; r++)
		if (!is_rep(e, r))
			e->repl[fill[e->rep_of[r]]++] = r;
	free(fill);
	/* a pipeline send joins a representative to a representative, and a
	 * replica to a replica of the same two */
	int64_t off, peer;
	for (int i = 0; ok && i < p->n_steps; i++) {
		if (!send_ends(e, i, &off, &peer))
			continue;
		for (int64_t j = 0; j < p->stage_ranks; j++)
			if (e->rep_of[off + j] - off != e->rep_of[peer + j] - peer)
				e->bad_reps = true;
	}
	return ok;
}

/* An earlier collective step set up with the same stage, kind, bytes and
 * groups as step i (the gradient buckets, a layer's collectives from
 * layer to layer), or -1. Its groups chose the algorithms and formulas
 * step i's would, from the same arguments, and recorded every pair step
 * i's would. `distinct` lists the steps with no such earlier step. */
static int alike_step(const struct engine *e, int i, const int *distinct, int n_distinct)
{
	const struct prog_step *a = &e->prog->steps[i];
	for (int x = 0; x < n_distinct; x++) {
		const struct prog_step *b = &e->prog->steps[distinct[x]];
		if (a->stage == b->stage && a->coll == b->coll && a->bytes == b->bytes &&
		    a->ep.experts == b->ep.experts && a->ep.copies == b->ep.copies &&
		    same_groups(&a->groups, &b->groups))
			return distinct[x];
	}
	return -1;
}

/* Chooses each group's algorithm, costs the step, records every pair. */
static bool setup_step(struct engine *e, int i, struct sim_ops *ops, int *distinct,
                       int *n_distinct)
{
	const struct prog_step *st = &e->prog->steps[i];
	const struct rank_groups *g = &st->groups;
	if (st->kind == PROG_SEND)
		return setup_send(e, i);
	if (st->kind != PROG_COLLECTIVE || g->size <= 1)
		return true;
	e->algo[i] = malloc((size_t)g->n_groups);
	if (!e->algo[i])
		return false;
	int j = alike_step(e, i, distinct, *n_distinct);
	if (e->distinct_of)
		e->distinct_of[i] = j >= 0 ? j : i;
	if (j >= 0) {
		memcpy(e->algo[i], e->algo[j], (size_t)g->n_groups);
		memcpy(&e->group_s[e->group_base[i]], &e->group_s[e->group_base[j]],
		       (size_t)g->n_groups * sizeof(*e->group_s));
		if (e->group_reps)
			memcpy(&e->group_reps[e->group_base[i]], &e->group_reps[e->group_base[j]],
			       (size_t)g->n_groups * sizeof(*e->group_reps));
		e->formula_s[i] = e->formula_s[j];
		return true;
	}
	distinct[(*n_distinct)++] = i;
	int64_t off = offset_of(e, i);
	int crossing = cost_groups_crossing(e->t, g);
	for (int k = 0; k < g->n_groups; k++) {
		int n = members_of(ops, g, k, off);
		const int64_t *where = n < 0 ? NULL : devices_of(e, ops->members, n);
		if (!where)
			return false;
		/* The rule the estimate follows: the wanted algorithm where it
		 * applies, else the cheapest that does; priced where the
		 * members run. */
		enum collective_algo want = cost_choose_algo_in(e->t, st->coll, where, n,
		                                                st->bytes, e->o->algo, crossing);
		enum collective_algo a = sim_algo_effective(e->t, st->coll, want, where, n);
		double f = cost_collective_algo_in_s(e->t, st->coll, a, where, n, st->bytes,
		                                     crossing);
		if (a == COLL_HALVING_DOUBLING && e->o->fidelity != FIDELITY_STEP &&
		    sim_hd_one_link(e->t, where, n))
			a = SIM_HD_ONE_LINK;
		int per_server;
		double share;
		if (st->coll == STEP_ALLTOALL &&
		    cost_ep_hybrid_shape(e->t, where, n, &st->ep, &per_server, &share)) {
			a = SIM_EP_HYBRID;
			f = cost_ep_hybrid_s(e->t, where, n, st->bytes, &st->ep);
		}
		/* fidelity representative: a group of replicas only is run by
		 * no one; one with a representative, by it (run_mixed) */
		int reps = 0;
		for (int me = 0; me < n; me++)
			reps += is_rep(e, ops->members[me]);
		if (e->group_reps)
			e->group_reps[e->group_base[i] + k] = reps;
		uint8_t flag = reps == n ? 0 : reps == 0 ? ABSENT : MIXED;
		e->algo[i][k] = (uint8_t)(a | flag);
		if (f > e->formula_s[i])
			e->formula_s[i] = f;
		e->group_s[e->group_base[i] + k] = f;
		for (int me = 0; flag != ABSENT && me < n; me++) {
			int64_t self = ops->members[me];
			if (!in_program(e, self))
				return false;
			sim_coll_ops(ops, e->t, st, a, e->o->fidelity, ops->members, n, me);
			for (int x = 0; x < ops->n; x++) {
				if (ops->op[x].kind != SIM_OP_SEND)
					continue;
				if (!in_program(e, ops->op[x].peer) ||
				    sim_net_pair_add(e->net, dev_of(e, self), dev_of(e, ops->op[x].peer)) < 0)
					return false;
			}
			if (ops->oom)
				return false;
		}
	}
	return true;
}

/* Collectives priced by their formula (fidelity coarse).
 *
 * A group's collective runs as a barrier of its members followed by its
 * formula when no transfer of it could be slowed: every link its coarse
 * transfers cross is used, in the micro-batches, only by collectives of the
 * same members on the same stream (which run one after another), and no
 * two of its own transfers of one round share a link (but NVLS's, whose
 * formula prices a member's shares leaving its port together), and the
 * transfers of one round all cross routes of one bandwidth and latency
 * (the formula prices a ring at its slowest hop; the transfers of a ring
 * mixing two tiers pace each other hop by hop). The collective then takes
 * exactly its formula once the last member arrives, as its transfers
 * would uncontended, and costs no simulated message (docs/simulation.md:
 * what makes thousands of ranks affordable). Binomial trees are left to
 * the transfers: their rounds do not line up across members.
 *
 * Steps that run once per iteration (gradient buckets synchronised after
 * the last micro-batch, the stages' tails) may share those links; they
 * are "rare" and checked as they run. A formula collective whose member
 * set has a rare collective's transfers on its links when its last member
 * arrives runs its transfers instead; a rare collective that finds a
 * formula collective under way on one of its links starts when that one
 * ends (the link serves the two one after the other rather than side by
 * side: the same total time). Rare collectives always run their transfers.
 *
 * A member set is identified by a hash of its sorted ranks and its stream
 * (FNV-1a), then numbered densely. */

enum { LINK_FREE = 0, LINK_P2P = 1, LINK_SHARED = 2 };

static uint64_t hash_members(const int64_t *members, int n, int stream, int64_t *sorted)
{
	for (int j = 0; j < n; j++) {
		int64_t v = members[j];
		int x = j;
		for (; x > 0 && sorted[x - 1] > v; x--)
			sorted[x] = sorted[x - 1];
		sorted[x] = v;
	}
	uint64_t h = 1469598103934665603ull ^ (uint64_t)stream;
	for (int j = 0; j < n; j++)
		h = (h ^ (uint64_t)sorted[j]) * 1099511628211ull;
	return h <= LINK_SHARED ? h + LINK_SHARED + 1 : h;
}

static uint8_t algo_of(const struct engine *e, int i, int k)
{
	return e->algo[i][k] & (uint8_t)~ALGO_FLAGS;
}

static const struct sim_route *route_of(const struct engine *e, int64_t from, int64_t to)
{
	return &e->net->route[sim_net_pair(e->net, dev_of(e, from), dev_of(e, to))];
}

static void own(uint64_t *owner, const struct sim_route *r, uint64_t key)
{
	for (int l = 0; l < r->n; l++) {
		uint64_t *o = &owner[r->link[l]];
		*o = *o == LINK_FREE || *o == key ? key : LINK_SHARED;
	}
}

struct formula_scan {
	uint64_t *owner;                   /* [link]: LINK_* or the one member set's hash */
	int64_t *stamp;                    /* [link]: the last round id that used it */
	int64_t round0;                    /* the group's first round id */
	uint64_t *keys;                    /* [group id]: its member set's hash (0: none) */
	bool check;                        /* second pass: decide; first: own the links */
	double *round_bps, *round_lat;     /* [round of the group]: its first transfer's route */
	int round_cap;
};

/* Whether a transfer of round `round` crosses a route like the round's
 * first (recorded when `first`). */
static bool same_route(struct formula_scan *f, const struct topology *t, int64_t round,
                       int64_t from, int64_t to, bool first)
{
	if (round >= f->round_cap) {
		int cap = 2 * (int)round + 16;
		double *b = realloc(f->round_bps, (size_t)cap * sizeof(*b));
		if (b)
			f->round_bps = b;
		double *l = realloc(f->round_lat, (size_t)cap * sizeof(*l));
		if (l)
			f->round_lat = l;
		if (!b || !l)
			return false;
		for (int k = f->round_cap; k < cap; k++)
			b[k] = l[k] = NAN; /* a round member 0 skips matches nothing */
		f->round_cap = cap;
	}
	double bps = 0, lat = 0;
	topo_route(t, from, to, &bps, &lat);
	if (first) {
		f->round_bps[round] = bps;
		f->round_lat[round] = lat;
		return true;
	}
	return bps == f->round_bps[round] && lat == f->round_lat[round];
}

/* Whether an earlier send of the same round precedes op x. */
static bool seen(const struct sim_ops *ops, int x)
{
	for (int y = x - 1; y >= 0 && ops->op[y].kind != SIM_OP_WAIT; y--)
		if (ops->op[y].kind == SIM_OP_SEND)
			return true;
	return false;
}

/* One group of a collective step: own its links (first pass) or decide
 * whether its formula stands for it (second pass). */
static bool scan_group(struct engine *e, int i, int k, struct sim_ops *ops,
                       struct formula_scan *f)
{
	const struct prog_step *st = &e->prog->steps[i];
	int n = members_of(ops, &st->groups, k, offset_of(e, i));
	if (n < 0)
		return false;
	int64_t id = e->group_base[i] + k;
	if (e->algo[i][k] & ABSENT)
		return true;
	/* a representative's group runs its members' transfers together
	 * (run_mixed): never by its formula */
	bool mixed = e->algo[i][k] & MIXED;
	if (!f->check)
		f->keys[id] = hash_members(ops->members, n, st->stream, ops->scratch);
	uint64_t key = f->keys[id];
	bool ok = f->check && algo_of(e, i, k) != COLL_TREE && !e->rare[i] && !mixed;
	/* NVLS sends a member's shares to all the others at once through its
	 * port: its formula prices that sharing (collectives.c, nvls_lines) */
	bool shares_ports = algo_of(e, i, k) == COLL_NVLS;
	if (f->check && !ok)
		return true;
	int64_t rounds = 0;
	for (int me = 0; me < n && (ok || !f->check); me++) {
		sim_coll_ops(ops, e->t, st, (enum collective_algo)algo_of(e, i, k), e->o->fidelity,
		             ops->members, n, me);
		if (ops->oom)
			return false;
		int64_t round = 0;
		for (int x = 0; x < ops->n; x++) {
			round += ops->op[x].kind == SIM_OP_WAIT;
			if (ops->op[x].kind != SIM_OP_SEND)
				continue;
			const struct sim_route *r = route_of(e, ops->members[me], ops->op[x].peer);
			if (!f->check) {
				if (!e->rare[i])
					own(f->owner, r, key);
				continue;
			}
			ok = ok && same_route(f, e->t, round, dev_of(e, ops->members[me]),
			                      dev_of(e, ops->op[x].peer), me == 0 && !seen(ops, x));
			for (int l = 0; l < r->n; l++) {
				int32_t id_l = r->link[l];
				ok = ok && (!e->link_job || e->link_job[id_l] == e->job) &&
				     !sim_net_pooled(e->net, id_l) &&
				     f->owner[id_l] == key &&
				     (shares_ports || f->stamp[id_l] != f->round0 + round);
				f->stamp[id_l] = f->round0 + round;
			}
		}
		rounds = round > rounds ? round : rounds;
	}
	f->round0 += rounds + 1;
	if (ok)
		e->algo[i][k] |= BY_FORMULA;
	return true;
}

static int cmp_u64(const void *x, const void *y)
{
	uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
	return (a > b) - (a < b);
}

static int32_t key_index(const uint64_t *sorted, int64_t n, uint64_t key)
{
	const uint64_t *hit = bsearch(&key, sorted, (size_t)n, sizeof(*sorted), cmp_u64);
	return hit ? (int32_t)(hit - sorted) : -1;
}

/* Numbers the member sets of the formula groups and maps links to them. */
static bool number_keys(struct engine *e, const struct formula_scan *f)
{
	int64_t n = 0;
	uint64_t *sorted = malloc(((size_t)e->n_group_ids + 1) * sizeof(*sorted));
	e->group_key = malloc(((size_t)e->n_group_ids + 1) * sizeof(*e->group_key));
	e->link_key = malloc(((size_t)e->net->n_links + 1) * sizeof(*e->link_key));
	if (!sorted || !e->group_key || !e->link_key) {
		free(sorted);
		return false;
	}
	for (int64_t id = 0; id < e->n_group_ids; id++)
		if (f->keys[id])
			sorted[n++] = f->keys[id];
	qsort(sorted, (size_t)n, sizeof(*sorted), cmp_u64);
	int64_t u = 0;
	for (int64_t j = 0; j < n; j++)
		if (u == 0 || sorted[j] != sorted[u - 1])
			sorted[u++] = sorted[j];
	for (int64_t id = 0; id < e->n_group_ids; id++)
		e->group_key[id] = f->keys[id] ? key_index(sorted, u, f->keys[id]) : -1;
	for (int l = 0; l < e->net->n_links; l++)
		e->link_key[l] = f->owner[l] > LINK_SHARED ? key_index(sorted, u, f->owner[l]) : -1;
	e->n_keys = u;
	e->key_busy = calloc((size_t)u + 1, sizeof(*e->key_busy));
	e->key_start = calloc((size_t)u + 1, sizeof(*e->key_start));
	e->key_end = calloc((size_t)u + 1, sizeof(*e->key_end));
	e->key_speed = calloc((size_t)u + 1, sizeof(*e->key_speed));
	free(sorted);
	return e->key_busy && e->key_start && e->key_end && e->key_speed;
}

static bool find_by_formula(struct engine *e, struct sim_ops *ops)
{
	const struct program *p = e->prog;
	size_t links = (size_t)e->net->n_links + 1, groups = (size_t)e->n_group_ids + 1;
	e->rare = calloc((size_t)p->n_steps + 1, 1);
	e->fallback = calloc(groups, 1);
	e->executions = calloc(groups, sizeof(*e->executions));
	struct formula_scan f = {.owner = calloc(links, sizeof(*f.owner)),
	                         .stamp = malloc(links * sizeof(*f.stamp)),
	                         .keys = calloc(groups, sizeof(*f.keys))};
	bool ok = e->rare && e->fallback && e->executions && f.owner && f.stamp && f.keys &&
	          sim_ops_reserve(ops, 1);
	for (int i = 0; ok && i < p->n_steps; i++)
		e->rare[i] = p->steps[i].stream == 1 && !p->steps[i].every_micro;
	for (int s = 0; ok && s < p->n_stages; s++)
		for (int i = 0; i < p->stages[s].n_tail; i++)
			e->rare[p->stages[s].tail + i] = 1;
	for (size_t l = 0; ok && l < links; l++)
		f.stamp[l] = -1;
	/* The pipeline's sends share with nobody. */
	int64_t off, peer;
	for (int i = 0; ok && i < p->n_steps; i++) {
		if (!send_ends(e, i, &off, &peer))
			continue;
		for (int64_t j = 0; j < p->stage_ranks; j++)
			own(f.owner, route_of(e, off + j, peer + j), LINK_P2P);
	}
	for (int pass = 0; pass < 2 && ok; pass++) {
		f.check = pass == 1;
		for (int i = 0; ok && i < p->n_steps; i++) {
			const struct prog_step *st = &p->steps[i];
			if (st->kind != PROG_COLLECTIVE || st->groups.size <= 1)
				continue;
			for (int k = 0; ok && k < st->groups.n_groups; k++)
				ok = scan_group(e, i, k, ops, &f);
		}
	}
	ok = ok && number_keys(e, &f);
	free(f.round_bps);
	free(f.round_lat);
	free(f.owner);
	free(f.stamp);
	free(f.keys);
	return ok;
}

/* The bytes the formula collectives stood for, on the links their
 * transfers would have crossed: once per group, times its executions. */
static bool count_formula_bytes(struct engine *e)
{
	const struct program *p = e->prog;
	struct sim_ops ops = {0};
	bool ok = true;
	for (int i = 0; ok && e->executions && i < p->n_steps; i++) {
		const struct prog_step *st = &p->steps[i];
		if (st->kind != PROG_COLLECTIVE || st->groups.size <= 1)
			continue;
		for (int k = 0; ok && k < st->groups.n_groups; k++) {
			int64_t times = e->executions[e->group_base[i] + k];
			int n = times ? members_of(&ops, &st->groups, k, offset_of(e, i)) : 0;
			ok = n >= 0;
			for (int me = 0; ok && me < n; me++) {
				sim_coll_ops(&ops, e->t, st, (enum collective_algo)algo_of(e, i, k),
				             e->o->fidelity, ops.members, n, me);
				ok = !ops.oom;
				for (int x = 0; ok && x < ops.n; x++) {
					if (ops.op[x].kind != SIM_OP_SEND)
						continue;
					const struct sim_route *r = route_of(e, ops.members[me], ops.op[x].peer);
					const double *w = e->group_w ? e->group_w[e->group_base[i] + k] : NULL;
					for (int l = 0; l < r->n; l++) {
						e->link_bytes[r->link[l]] += (double)times * ops.op[x].amount;
						int32_t s = w ? e->slot[r->link[l]] : -1;
						for (int b = 0; s >= 0 && b < SIM_BINS; b++)
							e->bins[(int64_t)s * SIM_BINS + b] += w[b] * ops.op[x].amount;
					}
				}
			}
		}
	}
	sim_ops_free(&ops);
	return ok;
}

/* Stream-0 steps of a range. */
static int64_t stream0_steps(const struct program *p, int from, int n)
{
	int64_t k = 0;
	for (int i = from; i < from + n; i++)
		k += p->steps[i].stream == 0 && !p->steps[i].first_micro;
	return k;
}

static bool setup(struct engine *e)
{
	const struct program *p = e->prog;
	e->algo = calloc((size_t)p->n_steps + 1, sizeof(*e->algo));
	e->formula_s = calloc((size_t)p->n_steps + 1, sizeof(double));
	e->coll_max_s = calloc((size_t)p->n_steps + 1, sizeof(double));
	e->ranks = calloc((size_t)p->n_ranks, sizeof(*e->ranks));
	e->group_base = calloc((size_t)p->n_steps + 1, sizeof(*e->group_base));
	if (!e->algo || !e->formula_s || !e->coll_max_s || !e->ranks || !e->group_base)
		return false;
	for (int i = 0; i < p->n_steps; i++) {
		const struct prog_step *st = &p->steps[i];
		e->group_base[i] = e->n_group_ids;
		if (st->kind == PROG_COLLECTIVE && st->groups.size > 1)
			e->n_group_ids += st->groups.n_groups;
	}
	e->group_s = calloc((size_t)e->n_group_ids + 1, sizeof(*e->group_s));
	e->arrived = calloc((size_t)e->n_group_ids + 1, sizeof(*e->arrived));
	e->entries = calloc((size_t)e->n_group_ids + 1, sizeof(*e->entries));
	e->last_in = calloc(2 * ((size_t)e->n_group_ids + 1), sizeof(*e->last_in));
	if (!e->group_s || !e->arrived || !e->entries || !e->last_in)
		return false;
	struct sim_ops ops = {0};
	int *distinct = malloc((size_t)p->n_steps * sizeof(*distinct) + 1), n_distinct = 0;
	bool ok = distinct != NULL;
	if (ok && e->o->fidelity == FIDELITY_REPRESENTATIVE) {
		e->distinct_of = malloc((size_t)p->n_steps * sizeof(*e->distinct_of) + 1);
		e->mixed = calloc((size_t)e->n_group_ids + 1, sizeof(*e->mixed));
		e->group_reps = calloc((size_t)e->n_group_ids + 1, sizeof(*e->group_reps));
		ok = e->distinct_of && e->mixed && e->group_reps && find_representatives(e, &ops);
	}
	for (int i = 0; i < p->n_steps && ok; i++) {
		ok = setup_step(e, i, &ops, distinct, &n_distinct);
		e->has_s1 |= p->steps[i].stream == 1;
		e->has_first |= p->steps[i].first_micro;
	}
	free(distinct);
	sim_ops_free(&ops);
	/* progress: rank 0's stream-0 steps */
	const struct prog_stage *s0 = &p->stages[0];
	for (int k = 0; k < s0->n_slots; k++) {
		int from[2], n[2];
		for (int j = prog_slot_ranges(p->chunks, &s0->slots[k], from, n); j-- > 0;)
			e->progress_total += stream0_steps(p, from[j], n[j]);
	}
	e->progress_total += stream0_steps(p, s0->tail, s0->n_tail);
	e->progress_every = e->progress_total / 100 > 0 ? e->progress_total / 100 : 1;
	return ok;
}

/* Once every job's pairs are in the net: the links' byte counters and,
 * at fidelity coarse, the collectives priced by their formula. */
static bool setup_links(struct engine *e)
{
	e->link_bytes = calloc((size_t)e->net->n_links + 1, sizeof(double));
	e->slot = malloc(((size_t)e->net->n_links + 1) * sizeof(*e->slot));
	e->group_w = calloc((size_t)e->n_group_ids + 1, sizeof(*e->group_w));
	if (!e->link_bytes || !e->slot || !e->group_w)
		return false;
	/* a row of bins for each link its pairs' routes cross */
	for (int l = 0; l < e->net->n_links; l++)
		e->slot[l] = -1;
	for (int64_t p = e->pairs_from; p < e->pairs_to; p++)
		for (int i = 0; i < e->net->route[p].n; i++) {
			int32_t *s = &e->slot[e->net->route[p].link[i]];
			if (*s < 0)
				*s = e->n_slots++;
		}
	e->bins = calloc((size_t)e->n_slots * SIM_BINS + 1, sizeof(double));
	if (!e->bins)
		return false;
	if (e->o->fidelity != FIDELITY_COARSE && e->o->fidelity != FIDELITY_REPRESENTATIVE)
		return true;
	struct sim_ops ops = {0};
	bool ok = find_by_formula(e, &ops);
	sim_ops_free(&ops);
	return ok;
}

/* Writes the platform to a temporary file, loads it, removes the file. */
static bool load_platform(const struct sim_net *net)
{
	const char *dir = getenv("TMPDIR");
	char path[512];
	snprintf(path, sizeof(path), "%s/shardlab-platform-XXXXXX", dir && *dir ? dir : "/tmp");
	int fd = mkstemp(path);
	if (fd < 0)
		return false;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(path);
		return false;
	}
	bool ok = sim_net_write_xml(net, f);
	ok = fclose(f) == 0 && ok;
	if (ok)
		simgrid_load_platform(path);
	unlink(path);
	return ok;
}

/* The most memory mappings a process may have (Linux's vm.max_map_count;
 * its default where it cannot be read). */
static int64_t max_map_count(void)
{
	int64_t n = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "r");
	if (f) {
		long long v;
		if (fscanf(f, "%lld", &v) == 1 && v > 0)
			n = v;
		fclose(f);
	}
	return n;
}

/* SimGrid's configuration for `actors` actors. Each actor's stack has a
 * guard page, which splits its mapping in two: past about 32,000 actors
 * (16,384 ranks with two streams) that exceeds Linux's default limit of
 * 65,530 mappings and SimGrid aborts creating the stacks. Then the guard
 * pages go (a stack overflow would no longer fault at once; the actors'
 * stack use does not depend on the scale). */
static void configure(int64_t actors)
{
	xbt_log_control_set("root.thres:critical");
	int argc = 1;
	char name[] = "shardlab";
	char *argv[] = {name, NULL};
	simgrid_init(&argc, argv);
	sg_cfg_set_string("network/model", "CM02");
	sg_cfg_set_boolean("network/crosstraffic", "no");
	sg_cfg_set_double("network/TCP-gamma", 0);
	sg_cfg_set_string("network/optim", "Lazy");
	sg_cfg_set_double("network/latency-factor", 1);
	sg_cfg_set_double("network/bandwidth-factor", 1);
	sg_cfg_set_double("network/weight-S", 0);
#if defined(__SANITIZE_ADDRESS__)
	sg_cfg_set_int("contexts/stack-size", 1024);
#else
	sg_cfg_set_int("contexts/stack-size", 64);
#endif
	enum { MAPS_RESERVED = 8192 };  /* the libraries', the heap's, the arenas' */
	if (2 * actors + MAPS_RESERVED > max_map_count())
		sg_cfg_set_int("contexts/guard-size", 0);
}

/* A mailbox per (pair, stream) for collectives, and per (pipeline
 * channel, receiver) for the stages' sends: each carries one sender's
 * messages in the order both sides run them. */
static sg_mailbox_t *make_mailboxes(const struct sim_net *net)
{
	sg_mailbox_t *mbox = malloc((size_t)(2 * net->n_pairs + 1) * sizeof(*mbox));
	char name[48];
	for (int k = 0; mbox && k < 2 * net->n_pairs; k++) {
		snprintf(name, sizeof(name), "m%d.%d", k / 2, k % 2);
		/* fidelity representative: only the pairs it runs */
		mbox[k] = !net->pair_used || net->pair_used[k / 2] ? sg_mailbox_by_name(name) : NULL;
	}
	return mbox;
}

/* The job's pipeline channels. */
static bool make_channels(struct engine *e)
{
	const struct program *p = e->prog;
	int64_t n_p2p = (int64_t)prog_channels(p->n_chunks, p->n_stages) * p->stage_ranks;
	e->p2p = p->n_stages > 1 ? calloc((size_t)n_p2p + 1, sizeof(*e->p2p)) : NULL;
	if (p->n_stages > 1 && !e->p2p)
		return false;
	for (int64_t k = 0; p->n_stages > 1 && k < n_p2p; k++)
		e->p2p[k].posted = sg_sem_init(0);
	return true;
}

/* ------------------------------------------------------------- actors */

static void bin_pair(struct engine *e, int p, double t0, double t1, double bytes);
static void bin_round(struct actor_ctx *c, const int *pair, int from, int to, double t0);

static void record(struct actor_ctx *c, int step, enum sim_event_kind kind, double t0, double t1)
{
	struct engine *eng = c->rs->e;
	if (!eng->o->trace)
		return;
	if (eng->n_events == eng->cap_events) {
		int64_t cap = eng->cap_events ? 2 * eng->cap_events : 1024;
		struct sim_event *p = realloc(eng->events, (size_t)cap * sizeof(*p));
		if (!p) {
			eng->failed = true;
			return;
		}
		eng->events = p;
		eng->cap_events = cap;
	}
	eng->events[eng->n_events++] = (struct sim_event){
		.rank = c->rs->rank, .stream = c->stream, .kind = kind, .step = step,
		.micro = c->micro, .start_s = t0, .end_s = t1};
}

/* Compute and formula collectives are added up and slept in one go
 * before the actor next meets another (a transfer, a barrier, a hand-over,
 * the end): a sleep interacts with nothing, so one sleep of the sum ends
 * when the sleeps one by one would, for a fraction of the events. */
static void settle(struct actor_ctx *c)
{
	struct engine *eng = c->rs->e;
	if (c->pending_s <= 0)
		return;
	sg_actor_sleep_for(c->pending_s);
	c->pending_s = 0;
	eng->activities++;
}

/* The actor's own clock: the engine's plus what it has yet to sleep. */
static double now(const struct actor_ctx *c)
{
	return simgrid_get_clock() + c->pending_s;
}

/* The rank's memory changes by `delta` bytes now: a forward leaves its
 * activations, a backward holds a recomputed layer, then frees both. */
static void memory(struct actor_ctx *c, double delta)
{
	struct engine *eng = c->rs->e;
	struct rank_state *rs = c->rs;
	rs->mem_bytes += delta;
	if (rs->mem_bytes > rs->mem_peak_bytes)
		rs->mem_peak_bytes = rs->mem_bytes;
	if (!eng->o->trace || delta == 0)
		return;
	double t = now(c);
	record(c, -1, SIM_EV_MEMORY, t, t);
	if (!eng->failed)
		eng->events[eng->n_events - 1].bytes = rs->mem_bytes;
}

static bool pending_room(struct actor_ctx *c, int n)
{
	if (n < c->comms_cap)
		return true;
	int cap = c->comms_cap ? 2 * c->comms_cap : 64;
	sg_comm_t *p = realloc(c->comms, (size_t)cap * sizeof(*p));
	if (!p)
		return false;
	c->comms = p;
	c->comms_cap = cap;
	return true;
}

/* Counts a message on the links of pair p's route. */
static void count_pair(struct engine *eng, int p, double bytes)
{
	const struct sim_route *r = &eng->net->route[p];
	for (int i = 0; i < r->n; i++)
		eng->link_bytes[r->link[i]] += bytes;
	eng->messages++;
}

/* Counts a message on the route's links from one rank to another. */
static void count_message(struct engine *eng, int64_t from, int64_t to, double bytes)
{
	int p = sim_net_pair(eng->net, dev_of(eng, from), dev_of(eng, to));
	SL_ASSERT(p >= 0);
	count_pair(eng, p, bytes);
}

/* The rank pair of op x: sender to receiver. */
static int pair_of(const struct actor_ctx *c, int x)
{
	struct engine *eng = c->rs->e;
	const struct sim_op *op = &c->ops.op[x];
	int64_t self = dev_of(eng, c->rs->rank), peer = dev_of(eng, op->peer);
	int p = op->kind == SIM_OP_SEND ? sim_net_pair(eng->net, self, peer)
	                                : sim_net_pair(eng->net, peer, self);
	SL_ASSERT(p >= 0);
	return p;
}

/* The ops' transfers and sleeps; `pair`, when not NULL, holds each
 * transfer's rank pair (else each is looked up here). */
static void run_ops(struct actor_ctx *c, const int *pair)
{
	struct engine *eng = c->rs->e;
	settle(c);
	c->sync_key = -1;
	int pending = 0, round = 0;
	double round_t0 = simgrid_get_clock();
	for (int i = 0; i < c->ops.n; i++) {
		const struct sim_op *op = &c->ops.op[i];
		if (op->kind == SIM_OP_SLEEP) {
			sg_actor_sleep_for(op->amount);
			eng->activities++;
			continue;
		}
		if (op->kind == SIM_OP_WAIT) {
			eng->activities += pending;
			sg_comm_wait_all(c->comms, (size_t)pending);
			pending = 0;
			bin_round(c, pair, round, i, round_t0);
			round = i + 1;
			round_t0 = simgrid_get_clock();
			continue;
		}
		if (!pending_room(c, pending)) {
			eng->failed = true;
			break;
		}
		int p = pair ? pair[i] : pair_of(c, i);
		if (op->kind == SIM_OP_SEND) {
			count_pair(eng, p, op->amount);
			c->comms[pending++] = sg_mailbox_put_async(eng->mbox[2 * p + c->stream], eng,
			                                           (long)llround(op->amount));
		} else {
			c->comms[pending++] = sg_mailbox_get_async(eng->mbox[2 * p + c->stream], &c->sink);
		}
	}
	if (pending)
		sg_comm_wait_all(c->comms, (size_t)pending);
	eng->activities += pending;
	bin_round(c, pair, round, c->ops.n, round_t0);
}

/* --------------------------------------------------- link load over time */

static void merge_row(double *row)
{
	for (int b = 0; b < SIM_BINS / 2; b++)
		row[b] = row[2 * b] + row[2 * b + 1];
	for (int b = SIM_BINS / 2; b < SIM_BINS; b++)
		row[b] = 0;
}

/* Widens the bins until t falls inside the last. */
static void bins_reach(struct bin_clock *bc, double t)
{
	while (t > SIM_BINS * bc->bin_s) {
		for (int j = 0; j < bc->n_jobs; j++) {
			struct engine *e = &bc->jobs[j];
			for (int s = 0; s < e->n_slots; s++)
				merge_row(&e->bins[(int64_t)s * SIM_BINS]);
			for (int64_t id = 0; e->group_w && id < e->n_group_ids; id++)
				if (e->group_w[id])
					merge_row(e->group_w[id]);
		}
		bc->bin_s *= 2;
	}
}

/* `amount` spread evenly over [t0, t1] into the row's bins. */
static void spread_over(double *row, double bin_s, double t0, double t1, double amount)
{
	int b0 = (int)fmin(t0 / bin_s, SIM_BINS - 1), b1 = (int)fmin(t1 / bin_s, SIM_BINS - 1);
	if (t1 <= t0 || b0 == b1) {
		row[b0] += amount;
		return;
	}
	double rate = amount / (t1 - t0);
	for (int b = b0; b <= b1; b++) {
		double lo = fmax(t0, b * bin_s), hi = b == b1 ? t1 : fmin(t1, (b + 1) * bin_s);
		row[b] += rate * (hi - lo);
	}
}

/* A transfer of `bytes` on pair p's route during [t0, t1]. */
static void bin_pair(struct engine *e, int p, double t0, double t1, double bytes)
{
	if (!e->bins)
		return;
	bins_reach(e->bins_clock, t1);
	const struct sim_route *r = &e->net->route[p];
	for (int i = 0; i < r->n; i++) {
		int32_t s = e->slot[r->link[i]];
		if (s >= 0)
			spread_over(&e->bins[(int64_t)s * SIM_BINS], e->bins_clock->bin_s, t0, t1, bytes);
	}
}

/* A round of transfers (the sends of ops [from, to)) that began at t0
 * and ended now. */
static void bin_round(struct actor_ctx *c, const int *pair, int from, int to, double t0)
{
	struct engine *eng = c->rs->e;
	double t1 = simgrid_get_clock();
	for (int x = from; x < to; x++)
		if (c->ops.op[x].kind == SIM_OP_SEND)
			bin_pair(eng, pair ? pair[x] : pair_of(c, x), t0, t1, c->ops.op[x].amount);
}

/* One execution of group `id`'s formula collective from t: counted, and
 * its member set's links held until t + f. */
static void formula_from(struct engine *eng, int64_t id, int32_t key, double t, double f)
{
	if (eng->group_w && !eng->group_w[id])
		eng->group_w[id] = calloc(SIM_BINS, sizeof(double));
	if (eng->group_w && eng->group_w[id]) {
		bins_reach(eng->bins_clock, t + f);
		spread_over(eng->group_w[id], eng->bins_clock->bin_s, t, t + f, 1);
	}
	eng->executions[id]++;
	eng->by_formula++;
	eng->key_start[key] = t;
	eng->key_end[key] = t + f;
}

/* A formula collective on the lockstep path. Members that left this
 * member set's last formula collective together and have waited on nothing
 * since ran the same steps from the same instant (a stage's ranks run one
 * program), so they arrive together: outside the last micro-batch's slots,
 * where no rare collective starts, each goes on at once, with no event at
 * all and without its group's members. `clock` is the engine's, which
 * nothing here moves. False when the barrier below must run instead. */
static bool run_lockstep(struct actor_ctx *c, int i, int group, int me, double clock)
{
	struct engine *eng = c->rs->e;
	int64_t id = eng->group_base[i] + group;
	int32_t key = eng->group_key[id];
	if (!c->lockstep_ok || c->sync_key != key)
		return false;
	double f = eng->group_s[id];
	/* Unequal speeds (stragglers): the members would arrive when the
	 * slowest does, as at the barrier below; each waits for it. */
	c->straggler_s = c->raw_s * (eng->key_speed[key] - c->rs->speed);
	c->pending_s += c->straggler_s;
	c->raw_s = 0;
	if (me == 0)
		formula_from(eng, id, key, clock + c->pending_s, f);
	c->pending_s += f;
	return true;
}

/* A formula collective off the lockstep path: a barrier. The last member
 * to arrive releases the others, after checking the rare collectives on
 * the set's links; unless one is there, every member owes the formula's
 * seconds (slept with what follows). False when the members must run
 * their transfers this time. The members are in c->ops.members. */
static bool run_by_formula(struct actor_ctx *c, int i, int group, int me, int n)
{
	struct engine *eng = c->rs->e;
	int64_t id = eng->group_base[i] + group;
	int32_t key = eng->group_key[id];
	double f = eng->group_s[id];
	settle(c);
	c->raw_s = 0;
	if (++eng->arrived[id] < n) {
		sg_sem_acquire(c->rs->go[c->stream]);
		eng->activities++;
	} else {
		eng->arrived[id] = 0;
		double slowest = 0;
		for (int j = 0; j < n; j++)
			slowest = fmax(slowest, eng->ranks[c->ops.members[j]].speed);
		eng->key_speed[key] = slowest;
		eng->fallback[id] = eng->key_busy[key] > 0;
		if (!eng->fallback[id])
			formula_from(eng, id, key, simgrid_get_clock(), f);
		for (int j = 0; j < n; j++)
			if (j != me)
				sg_sem_release(eng->ranks[c->ops.members[j]].go[c->stream]);
	}
	c->sync_key = eng->fallback[id] ? -1 : key;
	if (eng->fallback[id])
		return false;
	c->pending_s += f;
	return true;
}

/* What a rare collective's member does to the member sets owning the
 * links its sends cross: the latest end of a formula collective already
 * under way on them (returned), or its busy count on them up or down. */
enum rare_touch { RARE_WINDOW, RARE_ENTER, RARE_LEAVE };

static void rare_route(struct engine *eng, int pair, enum rare_touch what, double t, double *end)
{
	const struct sim_route *r = &eng->net->route[pair];
	for (int l = 0; l < r->n; l++) {
		int32_t key = eng->link_key[r->link[l]];
		if (key < 0)
			continue;
		if (what == RARE_WINDOW && eng->key_start[key] <= t)
			*end = fmax(*end, eng->key_end[key]);
		else if (what != RARE_WINDOW)
			eng->key_busy[key] += what == RARE_ENTER ? 1 : -1;
	}
}

static double rare_links(const struct actor_ctx *c, enum rare_touch what)
{
	struct engine *eng = c->rs->e;
	double t = simgrid_get_clock(), end = 0;
	for (int x = 0; x < c->ops.n; x++)
		if (c->ops.op[x].kind == SIM_OP_SEND)
			rare_route(eng, c->pair[x], what, t, &end);
	return end;
}

/* The same for the flows of a group holding a representative. */
static double rare_flows(struct engine *eng, const struct mixed_flows *m, enum rare_touch what)
{
	double t = simgrid_get_clock(), end = 0;
	for (int64_t x = 0; x < m->n; x++)
		rare_route(eng, m->f[x].pair, what, t, &end);
	return end;
}

/* A rare collective's transfers: after any formula collective under way
 * on their links, and counted on those links' member sets while they run. */
static void run_rare(struct actor_ctx *c)
{
	struct engine *eng = c->rs->e;
	settle(c);
	/* Each transfer's rank pair, looked up once for the four passes. */
	if (c->ops.n > c->pair_cap) {
		int *pair = realloc(c->pair, (size_t)c->ops.n * sizeof(*pair));
		if (!pair) {
			eng->failed = true;
			return;
		}
		c->pair = pair;
		c->pair_cap = c->ops.n;
	}
	for (int x = 0; x < c->ops.n; x++)
		c->pair[x] = c->ops.op[x].kind == SIM_OP_SEND || c->ops.op[x].kind == SIM_OP_RECV
		             ? pair_of(c, x) : -1;
	double start = rare_links(c, RARE_WINDOW);
	if (start > simgrid_get_clock()) {
		sg_actor_sleep_for(start - simgrid_get_clock());
		eng->activities++;
	}
	rare_links(c, RARE_ENTER);
	run_ops(c, c->pair);
	rare_links(c, RARE_LEAVE);
}

/* ------------------------------------------ fidelity representative */

/* A helper's two actors: the sender moves to the flow's source host and
 * puts, the receiver to its destination and gets (a mailbox transfer
 * between the two hosts: SimGrid 3.32's host-to-host sendto keeps every
 * one under way in one list that each one ending scans, quadratic in the
 * flows at once). The receiver hands the helper back and tells the owner. */
static void helper_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct helper *h = sg_actor_self_get_data();
	bool recv = sg_actor_self() == h->receiver;
	for (;;) {
		sg_sem_acquire(recv ? h->go_recv : h->go_send);
		if (h->quit)
			break;
		sg_actor_set_host(sg_actor_self(), recv ? h->to : h->from);
		if (!recv) {
			sg_mailbox_put(h->mbox, h, (long)h->bytes);
			continue;
		}
		sg_mailbox_get(h->mbox);
		h->e->activities += 2;
		struct actor_ctx *c = h->owner;
		h->next_free = h->e->free_helpers;
		h->e->free_helpers = h;
		if (--c->outstanding == 0 && c->waiting) {
			c->waiting = false;
			sg_sem_release(c->done);
		}
	}
}

/* A flow of `bytes` on pair p's route, carried by a helper while the
 * actor goes on; wait_flows waits for every one it started. */
static void start_flow(struct actor_ctx *c, int p, double bytes)
{
	struct engine *e = c->rs->e;
	struct helper *h = e->free_helpers;
	if (!c->done)
		c->done = sg_sem_init(0);
	if (h) {
		e->free_helpers = h->next_free;
	} else {
		if (e->n_helpers == e->cap_helpers) {
			int64_t cap = e->cap_helpers ? 2 * e->cap_helpers : 256;
			struct helper **hs = realloc(e->helpers, (size_t)cap * sizeof(*hs));
			if (!hs) {
				e->failed = true;
				return;
			}
			e->helpers = hs;
			e->cap_helpers = cap;
		}
		h = calloc(1, sizeof(*h));
		if (!h) {
			e->failed = true;
			return;
		}
		h->e = e;
		h->go_send = sg_sem_init(0);
		h->go_recv = sg_sem_init(0);
		e->helpers[e->n_helpers++] = h;
		char name[48];
		snprintf(name, sizeof(name), "j%d.h%lld", e->job, (long long)e->n_helpers);
		h->mbox = sg_mailbox_by_name(name);
		sg_host_t at = e->hosts[e->net->pair_src[p]];
		for (int k = 0; k < 2; k++) {
			snprintf(name, sizeof(name), "j%d.h%lld.%c", e->job, (long long)e->n_helpers,
			         k ? 'r' : 's');
			sg_actor_t a = sg_actor_init(name, at);
			if (k)
				h->receiver = a;
			sg_actor_set_data(a, h);
			sg_actor_start(a, helper_main, 0, NULL);
		}
	}
	h->from = e->hosts[e->net->pair_src[p]];
	h->to = e->hosts[e->net->pair_dst[p]];
	h->bytes = (double)llround(bytes);
	h->owner = c;
	c->outstanding++;
	e->messages++;
	sg_sem_release(h->go_send);
	sg_sem_release(h->go_recv);
}

static void wait_flows(struct actor_ctx *c)
{
	if (c->outstanding == 0)
		return;
	c->waiting = true;
	sg_sem_acquire(c->done);
	c->rs->e->activities++;
}

/* The helpers end once the job's rank actors have. */
static void helpers_quit(struct engine *e)
{
	for (int64_t k = 0; k < e->n_helpers; k++) {
		e->helpers[k]->quit = true;
		sg_sem_release(e->helpers[k]->go_send);
		sg_sem_release(e->helpers[k]->go_recv);
	}
}

/* Counts `bytes` on the links of pair p's route (no message). */
static void count_bytes(struct engine *e, int p, double bytes)
{
	const struct sim_route *r = &e->net->route[p];
	for (int i = 0; i < r->n; i++)
		e->link_bytes[r->link[i]] += bytes;
}

/* Whether pair p's route crosses a link other traffic than its replica's
 * may load past its capacity: a leaf's pooled uplinks on an
 * oversubscribed fabric, a link several jobs use. Not oversubscribed, a
 * pool carries every NIC port under it at full rate: no traffic can load
 * it past its capacity (the NICs limit first), and leaving those flows out
 * keeps the solver from coupling every flow through the leaves. */
static bool binds(const struct engine *e, int link)
{
	return !sim_net_pooled(e->net, link) || e->t->fabric.oversubscription > 1;
}

static bool contendable(const struct engine *e, int p)
{
	const struct sim_route *r = &e->net->route[p];
	for (int i = 0; i < r->n; i++)
		if (binds(e, r->link[i]) && (sim_net_pooled(e->net, r->link[i]) ||
		                             (e->link_job && e->link_job[r->link[i]] == LINK_JOBS)))
			return true;
	return false;
}

/* The routes' (bandwidth, latency) classes seen in a round. */
enum { ROUTE_CLASSES = 16 };
struct route_class {
	double bps, lat;
};

/* Notes pair p's class; true when it is new (or the list is full: every
 * pair beyond it counts as new). */
static bool note_class(const struct engine *e, int p, struct route_class *cls, int *n)
{
	double bps = 0, lat = 0;
	topo_route(e->t, e->net->base + e->net->pair_src[p], e->net->base + e->net->pair_dst[p],
	           &bps, &lat);
	for (int k = 0; k < *n; k++)
		if (cls[k].bps == bps && cls[k].lat == lat)
			return false;
	if (*n < ROUTE_CLASSES)
		cls[(*n)++] = (struct route_class){bps, lat};
	return true;
}

static int by_round(const void *x, const void *y)
{
	const struct mixed_flow *a = x, *b = y;
	if (a->round != b->round)
		return a->round < b->round ? -1 : 1;
	return (a->order > b->order) - (a->order < b->order);
}

/* The flows of a group with one representative (member me; the members
 * in c->ops.members): every member's sends, by round. A send runs as a
 * flow when it is the representative's, when its route crosses a
 * contendable link, or when its route differs in bandwidth or latency
 * from the representative's own send of the round; the others would take
 * the representative's time (the replicas run alike) and only count their
 * bytes. Computed once per group of the step's distinct form. */
static struct mixed_flows *mixed_flows_of(struct engine *e, struct sim_ops *ops, int i,
                                          int group, int n)
{
	const struct prog_step *st = &e->prog->steps[i];
	int64_t id = e->group_base[e->distinct_of[i]] + group;
	if (e->mixed[id])
		return e->mixed[id];
	struct mixed_flows *m = calloc(1, sizeof(*m));
	int64_t cap = 0;
	bool ok = m != NULL;
	for (int who = 0; ok && who < n; who++) {
		sim_coll_ops(ops, e->t, st, (enum collective_algo)algo_of(e, i, group),
		             e->o->fidelity, ops->members, n, who);
		ok = !ops->oom;
		int32_t round = 0;
		for (int x = 0; ok && x < ops->n; x++) {
			const struct sim_op *op = &ops->op[x];
			round += op->kind == SIM_OP_WAIT;
			if (op->kind != SIM_OP_SEND)
				continue;
			int p = sim_net_pair(e->net, dev_of(e, ops->members[who]), dev_of(e, op->peer));
			ok = p >= 0;
			if (ok && m->n == cap) {
				cap = cap ? 2 * cap : 64;
				struct mixed_flow *f = realloc(m->f, (size_t)cap * sizeof(*f));
				ok = f != NULL;
				if (f)
					m->f = f;
			}
			if (!ok)
				break;
			m->f[m->n] = (struct mixed_flow){
				.round = round, .pair = p, .order = m->n, .bytes = op->amount,
				.launch = is_rep(e, ops->members[who]) || is_rep(e, op->peer) ||
				          contendable(e, p)};
			m->n++;
		}
	}
	if (!ok) {
		if (m)
			free(m->f);
		free(m);
		return NULL;
	}
	qsort(m->f, (size_t)m->n, sizeof(*m->f), by_round);
	/* sends of different members sharing a link that can bind run too:
	 * theirs is the group's own contention. Sends sharing a link through
	 * one member (its port: all from it, or all to it) share it as every
	 * member's do, which the representative's own sends show. */
	if (!e->link_src) {
		e->link_src = malloc(2 * ((size_t)e->net->n_links + 1) * sizeof(*e->link_src));
		for (int64_t l = 0; e->link_src && l < 2 * ((int64_t)e->net->n_links + 1); l++)
			e->link_src[l] = LINK_UNSEEN;
	}
	if (!e->link_src) {
		free(m->f);
		free(m);
		return NULL;
	}
	int32_t *lsrc = e->link_src, *ldst = e->link_src + e->net->n_links + 1;
	for (int64_t a = 0, b = 0; a < m->n; a = b) {
		for (b = a; b < m->n && m->f[b].round == m->f[a].round; b++) {
			int p = m->f[b].pair;
			const struct sim_route *r = &e->net->route[p];
			for (int l = 0; l < r->n; l++) {
				int32_t *s0 = &lsrc[r->link[l]], *d0 = &ldst[r->link[l]];
				*s0 = *s0 == LINK_UNSEEN || *s0 == e->net->pair_src[p] ? e->net->pair_src[p]
				                                                     : LINK_SEVERAL;
				*d0 = *d0 == LINK_UNSEEN || *d0 == e->net->pair_dst[p] ? e->net->pair_dst[p]
				                                                     : LINK_SEVERAL;
			}
		}
		for (int64_t x = a; x < b; x++) {
			const struct sim_route *r = &e->net->route[m->f[x].pair];
			for (int l = 0; l < r->n; l++)
				m->f[x].launch |= lsrc[r->link[l]] == LINK_SEVERAL &&
				                  ldst[r->link[l]] == LINK_SEVERAL && binds(e, r->link[l]);
		}
		for (int64_t x = a; x < b; x++) {
			const struct sim_route *r = &e->net->route[m->f[x].pair];
			for (int l = 0; l < r->n; l++)
				lsrc[r->link[l]] = ldst[r->link[l]] = LINK_UNSEEN;
		}
		/* of the others, one per route bandwidth and latency: alone on
		 * their links, those alike take the same time */
		struct route_class cls[ROUTE_CLASSES];
		int n_cls = 0;
		for (int64_t x = a; x < b; x++)
			if (m->f[x].launch)
				note_class(e, m->f[x].pair, cls, &n_cls);
		for (int64_t x = a; x < b; x++)
			if (!m->f[x].launch)
				m->f[x].launch = note_class(e, m->f[x].pair, cls, &n_cls);
	}
	e->mixed[id] = m;
	return m;
}

/* The flows of one round, [*at, ..) of m: started together, waited for,
 * and spread over the round's time in the link-load bins. */
static void mixed_round(struct actor_ctx *c, const struct mixed_flows *m, int64_t *at,
                        int32_t round)
{
	struct engine *e = c->rs->e;
	double t0 = simgrid_get_clock();
	int64_t from = *at, to = from;
	for (; to < m->n && m->f[to].round == round; to++) {
		count_bytes(e, m->f[to].pair, m->f[to].bytes);
		if (m->f[to].launch)
			start_flow(c, m->f[to].pair, m->f[to].bytes);
	}
	wait_flows(c);
	double t1 = simgrid_get_clock();
	for (int64_t x = from; x < to; x++)
		bin_pair(e, m->f[x].pair, t0, t1, m->f[x].bytes);
	*at = to;
}

/* A collective of a group holding one representative (member me, the
 * members in c->ops.members): the representative runs every member's
 * transfers round by round, each round's flows at once, and sleeps its
 * own latencies between them. */
static void run_mixed(struct actor_ctx *c, int i, int group, int me, int n)
{
	struct engine *eng = c->rs->e;
	const struct prog_step *st = &eng->prog->steps[i];
	int64_t id = eng->group_base[i] + group;
	settle(c);
	c->sync_key = -1;
	/* several representatives (a parameter replicated across tensor
	 * parallelism too): the last to arrive runs the flows, the others
	 * wait for it */
	if (eng->group_reps[id] > 1 && ++eng->arrived[id] < eng->group_reps[id]) {
		sg_sem_acquire(c->rs->go[c->stream]);
		eng->activities++;
		return;
	}
	eng->arrived[id] = 0;
	struct mixed_flows *m = mixed_flows_of(eng, &c->ops, i, group, n);
	if (!m) {
		eng->failed = true;
		return;
	}
	/* once per iteration: after any formula collective under way on its
	 * links, and counted on them while it runs (run_rare) */
	bool rare = eng->rare && eng->rare[i];
	double start = rare ? rare_flows(eng, m, RARE_WINDOW) : 0;
	if (start > simgrid_get_clock()) {
		sg_actor_sleep_for(start - simgrid_get_clock());
		eng->activities++;
	}
	if (rare)
		rare_flows(eng, m, RARE_ENTER);
	sim_coll_ops(&c->ops, eng->t, st, (enum collective_algo)algo_of(eng, i, group),
	             eng->o->fidelity, c->ops.members, n, me);
	int64_t at = 0;
	int32_t round = 0;
	for (int x = 0; x < c->ops.n; x++) {
		if (c->ops.op[x].kind == SIM_OP_SLEEP) {
			sg_actor_sleep_for(c->ops.op[x].amount);
			eng->activities++;
		} else if (c->ops.op[x].kind == SIM_OP_WAIT) {
			mixed_round(c, m, &at, round++);
		}
	}
	while (at < m->n)
		mixed_round(c, m, &at, m->f[at].round);
	if (rare)
		rare_flows(eng, m, RARE_LEAVE);
	for (int j = 0; eng->group_reps[id] > 1 && j < n; j++)
		if (j != me && is_rep(eng, c->ops.members[j]))
			sg_sem_release(eng->ranks[c->ops.members[j]].go[c->stream]);
}

/* The pipeline transfers of a receiving representative's replicas, at
 * once with its own (from `peer`; started, or with ended, below): those
 * whose routes cross a contendable link or differ from the
 * representative's run as flows, the others count their bytes; started
 * when `start`, else spread over [t0, t1] in the bins. */
static void replica_p2p(struct actor_ctx *c, const struct prog_step *st, int64_t peer,
                        bool start, double t0, double t1)
{
	struct engine *e = c->rs->e;
	const struct program *p = e->prog;
	int64_t self = c->rs->rank;
	struct route_class cls[ROUTE_CLASSES];
	int n_cls = 0;
	if (start)
		note_class(e, sim_net_pair(e->net, dev_of(e, peer), dev_of(e, self)), cls, &n_cls);
	for (int64_t x = e->repl_start[self]; x < e->repl_start[self + 1]; x++) {
		int64_t g = e->repl[x], from = (int64_t)st->peer_stage * p->stage_ranks +
		                              g % p->stage_ranks;
		int pair = sim_net_pair(e->net, dev_of(e, from), dev_of(e, g));
		SL_ASSERT(pair >= 0);
		if (!start) {
			bin_pair(e, pair, t0, t1, st->bytes);
			continue;
		}
		count_bytes(e, pair, st->bytes);
		if (contendable(e, pair) || note_class(e, pair, cls, &n_cls))
			start_flow(c, pair, st->bytes);
	}
}

/* Fidelity representative: the hosts and pairs the simulation uses (the
 * representatives', and those of the replicas' flows that run, as
 * mixed_flows_of and replica_p2p choose them), so that the platform holds
 * only them: SimGrid's Full routing keeps a table of hosts squared. */
static bool mark_used(struct engine *e)
{
	const struct program *p = e->prog;
	struct sim_net *net = e->net;
	for (int64_t r = 0; r < p->n_ranks; r++)
		if (is_rep(e, r))
			net->host_used[dev_of(e, r) - net->base] = 1;
	for (int64_t q = e->pairs_from; q < e->pairs_to; q++)
		if (net->host_used[net->pair_src[q]] && net->host_used[net->pair_dst[q]])
			net->pair_used[q] = 1;
	struct sim_ops ops = {0};
	bool ok = true;
	for (int i = 0; ok && i < p->n_steps; i++) {
		const struct prog_step *st = &p->steps[i];
		if (st->kind != PROG_COLLECTIVE || st->groups.size <= 1 || e->distinct_of[i] != i)
			continue;
		for (int k = 0; ok && k < st->groups.n_groups; k++) {
			if (!(e->algo[i][k] & MIXED))
				continue;
			int n = members_of(&ops, &st->groups, k, offset_of(e, i));
			struct mixed_flows *m = n < 0 ? NULL : mixed_flows_of(e, &ops, i, k, n);
			ok = m != NULL;
			for (int64_t x = 0; ok && x < m->n; x++)
				if (m->f[x].launch) {
					net->pair_used[m->f[x].pair] = 1;
					net->host_used[net->pair_src[m->f[x].pair]] = 1;
					net->host_used[net->pair_dst[m->f[x].pair]] = 1;
				}
		}
	}
	sim_ops_free(&ops);
	for (int i = 0; ok && i < p->n_steps; i++) {
		const struct prog_step *st = &p->steps[i];
		if (st->kind != PROG_RECV)
			continue;
		int64_t off = offset_of(e, i);
		for (int64_t self = off; self < off + p->stage_ranks; self++) {
			if (!is_rep(e, self))
				continue;
			int64_t peer = (int64_t)st->peer_stage * p->stage_ranks + self % p->stage_ranks;
			struct route_class cls[ROUTE_CLASSES];
			int n_cls = 0;
			note_class(e, sim_net_pair(net, dev_of(e, peer), dev_of(e, self)), cls, &n_cls);
			for (int64_t x = e->repl_start[self]; x < e->repl_start[self + 1]; x++) {
				int64_t g = e->repl[x], from = (int64_t)st->peer_stage * p->stage_ranks +
				                              g % p->stage_ranks;
				int pair = sim_net_pair(net, dev_of(e, from), dev_of(e, g));
				if (pair >= 0 && (contendable(e, pair) || note_class(e, pair, cls, &n_cls))) {
					net->pair_used[pair] = 1;
					net->host_used[net->pair_src[pair]] = 1;
					net->host_used[net->pair_dst[pair]] = 1;
				}
			}
		}
	}
	return ok;
}

/* A member enters execution k of group `id` (n members) at t0: the
 * latest arrival of that execution, in the slot of its parity. */
static void arrive(struct actor_ctx *c, int64_t id, int64_t n, double t0)
{
	struct engine *eng = c->rs->e;
	int64_t k = eng->entries[id]++;
	int64_t slot = 2 * id + (k / n) % 2;
	if (k % n == 0 || t0 > eng->last_in[slot])
		eng->last_in[slot] = t0;
	c->in_slot = slot;
}

static void run_collective(struct actor_ctx *c, int i)
{
	struct engine *eng = c->rs->e;
	const struct prog_step *st = &eng->prog->steps[i];
	int group, me;
	int64_t off = offset_of(eng, i);
	if (st->groups.size <= 1 || !rank_groups_locate(&st->groups, c->rs->rank - off, &group, &me))
		return;
	double clock = simgrid_get_clock(), t0 = clock + c->pending_s, t1;
	uint8_t algo = eng->algo[i][group];
	c->straggler_s = 0;
	c->in_slot = -1;
	if ((algo & BY_FORMULA) && run_lockstep(c, i, group, me, clock)) {
		t1 = clock + c->pending_s;
	} else {
		/* a representative's group: it alone arrives */
		arrive(c, eng->group_base[i] + group,
		       (algo & MIXED) ? eng->group_reps[eng->group_base[i] + group] : st->groups.size, t0);
		int n = members_of(&c->ops, &st->groups, group, off);
		if (n < 0) {
			eng->failed = true;
			return;
		}
		if (algo & MIXED) {
			run_mixed(c, i, group, me, n);
		} else if (!(algo & BY_FORMULA) || !run_by_formula(c, i, group, me, n)) {
			sim_coll_ops(&c->ops, eng->t, st, (enum collective_algo)(algo & ~ALGO_FLAGS),
			             eng->o->fidelity, c->ops.members, n, me);
			if (c->ops.oom) {
				eng->failed = true;
				return;
			}
			if (eng->rare && eng->rare[i])
				run_rare(c);
			else
				run_ops(c, NULL);
		}
		t1 = now(c);
	}
	/* the wait for the group's last member is a straggler's, not the
	 * collective's own time */
	double late = c->in_slot >= 0 ? eng->last_in[c->in_slot] - t0 : c->straggler_s;
	late = fmin(fmax(late, 0), t1 - t0);
	if (c->stream == 0) {
		/* compute run alongside (a ring's blocks): what outlasts the
		 * transfer is computed after it, what it covers is not exposed */
		double ov = st->overlap_s * c->rs->speed;
		double hid = fmin(ov, (t1 - t0) * (1 - st->alone_share));
		late = fmin(late, t1 - t0 - hid);
		c->rs->straggler_s += late;
		c->rs->comm_s += t1 - t0 - hid - late;
		c->rs->compute_s += ov;
		c->pending_s += ov - hid;
		if (ov > 0)  /* the part still to compute, before its speed */
			c->raw_s += st->overlap_s * (ov - hid) / ov;
	} else {
		c->rs->s1_late_s += late;
	}
	/* from the last member's arrival: what the links made of it */
	if (t1 - t0 - late > eng->coll_max_s[i])
		eng->coll_max_s[i] = t1 - t0 - late;
	record(c, i, SIM_EV_COLLECTIVE, t0, t1);
}

/* The pipeline, as a rendezvous: a send does not wait, it posts its time
 * on the boundary; a receive waits until the send is posted and then
 * moves the bytes from the sender's host to its own, so the transfer
 * starts when both sides are there, as a mailbox's would. The wait until
 * the send was posted is the bubble. The receiver drives the transfer
 * because SimGrid 3.32 keeps every detached send in one list that each
 * ending communication scans whole (std::list::remove): with thousands of
 * ranks and sends posted ahead that scan was half of a simulation. */
static bool post(struct p2p_chan *ch, double t)
{
	if (ch->tail == ch->cap) {
		if (ch->head > 0) {
			memmove(ch->at, ch->at + ch->head, (size_t)(ch->tail - ch->head) * sizeof(*ch->at));
			ch->tail -= ch->head;
			ch->head = 0;
		} else {
			int cap = ch->cap ? 2 * ch->cap : 8;
			double *at = realloc(ch->at, (size_t)cap * sizeof(*at));
			if (!at)
				return false;
			ch->at = at;
			ch->cap = cap;
		}
	}
	ch->at[ch->tail++] = t;
	sg_sem_release(ch->posted);
	return true;
}

static void run_p2p(struct actor_ctx *c, int i)
{
	struct engine *eng = c->rs->e;
	const struct program *p = eng->prog;
	const struct prog_step *st = &p->steps[i];
	struct rank_state *rs = c->rs;
	settle(c);
	struct p2p_chan *ch = &eng->p2p[st->channel * p->stage_ranks + rs->local];
	int64_t peer = (int64_t)st->peer_stage * p->stage_ranks + rs->local;
	long bytes = (long)llround(st->bytes);
	if (st->kind == PROG_SEND) {
		count_message(eng, rs->rank, peer, st->bytes);
		if (!post(ch, simgrid_get_clock()))
			eng->failed = true;
		return;
	}
	double t0 = simgrid_get_clock();
	sg_sem_acquire(ch->posted);
	double posted = ch->at[ch->head++];
	double moved = simgrid_get_clock();
	if (eng->rep_of)
		replica_p2p(c, st, peer, true, 0, 0);
	sg_host_sendto(eng->ranks[peer].host, rs->host, (double)bytes);
	wait_flows(c);
	c->sync_key = -1;
	double t1 = simgrid_get_clock();
	bin_pair(eng, sim_net_pair(eng->net, dev_of(eng, peer), dev_of(eng, rs->rank)), moved, t1,
	         st->bytes);
	if (eng->rep_of)
		replica_p2p(c, st, peer, false, moved, t1);
	eng->activities++;
	/* Waiting until the other stage sent is the bubble; the transfer
	 * after that, exposed communication. */
	double bubble = posted > t0 ? fmin(posted, t1) - t0 : 0;
	rs->wait_s += bubble;
	rs->comm_s += t1 - t0 - bubble;
	rs->p2p_s += t1 - t0 - bubble;
	/* alone on its route, as the estimate prices it (cost_p2p_s) */
	double bps, lat;
	if (topo_route(eng->t, dev_of(eng, peer), dev_of(eng, rs->rank), &bps, &lat) && bps > 0)
		rs->p2p_alone_s += lat + (double)bytes / bps;
	record(c, i, SIM_EV_COLLECTIVE, t0, t1);
}

static void run_step(struct actor_ctx *c, int i)
{
	struct engine *eng = c->rs->e;
	const struct prog_step *st = &eng->prog->steps[i];
	if (st->kind == PROG_COLLECTIVE) {
		run_collective(c, i);
		return;
	}
	if (st->kind == PROG_SEND || st->kind == PROG_RECV) {
		run_p2p(c, i);
		return;
	}
	if (st->seconds <= 0)
		return;
	/* The engine's clock is asked for only when there is a trace: a
	 * compute step is the commonest step by far. */
	/* the estimate prices the optimizer at the slowest fault's pace
	 * without the stragglers' spread (estimate.c): each rank at its own */
	double raw = st->phase == PHASE_OPTIMIZER ? st->seconds * eng->opt_scale : st->seconds;
	double t0 = eng->o->trace ? now(c) : 0, sec = raw * c->rs->speed;
	c->pending_s += sec;
	c->raw_s += raw;
	c->rs->compute_s += sec;
	if (eng->o->trace)
		record(c, i, SIM_EV_COMPUTE, t0, now(c));
}

/* Hands a step (or the end, -1) to stream 1. */
static void hand_over(struct rank_state *rs, int step, int64_t micro)
{
	struct engine *eng = rs->e;
	if (rs->q_tail == rs->q_cap) {
		int cap = rs->q_cap ? 2 * rs->q_cap : 64;
		int *q = realloc(rs->queue, (size_t)cap * sizeof(*q));
		int64_t *m = q ? realloc(rs->queue_micro, (size_t)cap * sizeof(*m)) : NULL;
		if (q)
			rs->queue = q;
		if (!q || !m) {
			eng->failed = true;
			return;
		}
		rs->queue_micro = m;
		rs->q_cap = cap;
	}
	rs->queue[rs->q_tail] = step;
	rs->queue_micro[rs->q_tail++] = micro;
	sg_sem_release(rs->s1_go);
}

static void progress(struct actor_ctx *c)
{
	struct engine *eng = c->rs->e;
	if (c->rs->rank != 0 || eng->job != 0 || !eng->o->progress)
		return;
	if (++eng->progress_done % eng->progress_every == 0)
		eng->o->progress(eng->o->progress_ctx, simgrid_get_clock(),
		                 (double)eng->progress_done / (double)eng->progress_total);
}

/* Stream 0 waited `w` seconds for stream 1: what stream 1 spent waiting
 * for its groups' slowest members is waiting on stragglers, the rest
 * exposed communication. */
static void s0_waits(struct rank_state *rs, double w)
{
	double late = fmin(w, rs->s1_late_s);
	rs->s1_late_s -= late;
	rs->straggler_s += late;
	rs->comm_s += w - late;
}

/* Stream 0 waits until stream 1 has run every step handed to it (a
 * chunk's first forward before its output goes on: the updated
 * parameters' gathers); the wait is exposed communication. */
static void wait_stream1(struct actor_ctx *c)
{
	struct engine *eng = c->rs->e;
	struct rank_state *rs = c->rs;
	settle(c);
	if (!eng->has_s1 || rs->s1_done >= rs->q_tail)
		return;
	double t0 = simgrid_get_clock();
	rs->wait_upto = rs->q_tail;
	sg_sem_acquire(rs->mid_go);
	c->sync_key = -1;
	s0_waits(rs, simgrid_get_clock() - t0);
}

/* Runs steps[from .. from+n) of one slot: stream-0 steps here, stream-1
 * ones handed over where they apply; first_micro steps in the first
 * micro-batch's forward only. */
static void run_range(struct actor_ctx *c, int from, int n, const struct prog_slot *slot)
{
	struct engine *eng = c->rs->e;
	const struct program *p = eng->prog;
	bool first = slot->micro == 0 && !slot->backward;
	for (int i = from; i < from + n && !eng->failed; i++) {
		const struct prog_step *st = &p->steps[i];
		if (st->first_micro && !first)
			continue;
		if (st->stream == 1) {
			if (eng->has_s1 && (st->first_micro || st->every_micro || slot->last)) {
				settle(c);
				hand_over(c->rs, i, slot->micro);
			}
			continue;
		}
		if (st->wait_s1)
			wait_stream1(c);
		run_step(c, i);
		if (!st->first_micro)
			progress(c);
	}
}

static void stream0(struct actor_ctx *c)
{
	struct engine *eng = c->rs->e;
	const struct program *p = eng->prog;
	struct rank_state *rs = c->rs;
	const struct prog_stage *st = &p->stages[rs->stage];
	memory(c, st->mem_base_bytes);
	for (int k = 0; k < st->n_slots && !eng->failed; k++) {
		const struct prog_slot *sl = &st->slots[k];
		const struct prog_chunk *ch = &p->chunks[sl->chunk];
		c->micro = sl->micro;
		/* no lockstep where rare collectives may run on stream 1: the
		 * last micro-batch's buckets, the first's parameter gathers */
		c->lockstep_ok = !sl->last && !(eng->has_first && sl->micro == 0);
		if (sl->fb) {
			/* an F&B: this chunk's forward, then the paired
			 * chunk's backward, lowered overlapped (lower.c).
			 * DualPipe's holds the forward's activations before
			 * the backward frees its own; Megatron-Core's combined
			 * 1F1B runs them layer by layer, its backward freeing
			 * as its forward keeps (estimate.c, in_flight) */
			const struct prog_chunk *y = &p->chunks[sl->pair_chunk];
			struct prog_slot f = *sl, b = {.chunk = sl->pair_chunk, .micro = sl->pair_micro,
			                               .backward = true, .last = sl->last};
			f.last = false;
			run_range(c, ch->ov_fwd, ch->n_ov_fwd, &f);
			memory(c, (p->combined ? 0 : ch->act_bytes) + y->work_bytes);
			c->micro = b.micro;
			run_range(c, y->ov_bwd, y->n_ov_bwd, &b);
			memory(c, (p->combined ? ch->act_bytes : 0) - (y->act_bytes + y->work_bytes));
		} else if (sl->weight) {
			/* a zero-bubble W frees what its split backward kept */
			run_range(c, ch->wgt, ch->n_wgt, sl);
			memory(c, -ch->act_bytes);
		} else if (sl->backward) {
			int from[2], n[2];
			prog_slot_ranges(p->chunks, sl, from, n);
			memory(c, ch->work_bytes);
			run_range(c, from[0], n[0], sl);
			memory(c, -((sl->split ? 0 : ch->act_bytes) + ch->work_bytes));
		} else {
			run_range(c, ch->fwd, ch->n_fwd, sl);
			memory(c, ch->act_bytes);
		}
	}
	c->micro = -1;
	c->lockstep_ok = false;
	settle(c);
	if (eng->has_s1) {
		hand_over(rs, -1, -1);
		if (!rs->s1_finished) {
			/* The gradients not yet synchronised: exposed communication. */
			double t0 = simgrid_get_clock();
			rs->s0_waiting = true;
			sg_sem_acquire(rs->opt_go);
			c->sync_key = -1;
			s0_waits(rs, simgrid_get_clock() - t0);
		}
	}
	struct prog_slot none = {.chunk = 0, .micro = -1, .last = true};
	run_range(c, st->tail, st->n_tail, &none);
	settle(c);
}

static void stream1(struct actor_ctx *c)
{
	struct engine *eng = c->rs->e;
	struct rank_state *rs = c->rs;
	for (;;) {
		sg_sem_acquire(rs->s1_go);
		int step = rs->queue[rs->q_head];
		c->micro = rs->queue_micro[rs->q_head++];
		if (step < 0)
			break;
		run_step(c, step);
		/* its end, for a stream 0 that waits for it (a compute step on
		 * stream 1: DeepSpeed 2021's copies, sim/lower.c) */
		if (eng->prog->steps[step].first_micro || eng->prog->steps[step].kind == PROG_COMPUTE)
			settle(c);
		if (++rs->s1_done == rs->wait_upto) {
			rs->wait_upto = 0;
			sg_sem_release(rs->mid_go);
		}
	}
	settle(c);
	free(rs->queue);
	free(rs->queue_micro);
	rs->s1_finished = true;
	if (rs->s0_waiting) {
		rs->s0_waiting = false;
		sg_sem_release(rs->opt_go);
	}
}

static void actor_main(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	struct actor_ctx *c = sg_actor_self_get_data();
	struct engine *e = c->rs->e;
	if (c->stream == 0)
		stream0(c);
	else
		stream1(c);
	e->end_s = fmax(e->end_s, simgrid_get_clock());
	if (--e->live == 0)
		helpers_quit(e);
	sim_ops_free(&c->ops);
	free(c->comms);
	free(c->pair);
	if (c->done)
		sg_sem_destroy(c->done);
	free(c);
}

static bool start_actors(struct engine *e)
{
	e->slowest = cost_slowest_factor(e->t, e->prog->n_ranks);
	e->opt_scale = e->slowest / topo_max_slowdown(e->t, e->prog->n_ranks);
	for (int64_t r = 0; r < e->prog->n_ranks; r++) {
		struct rank_state *rs = &e->ranks[r];
		rs->e = e;
		rs->rank = r;
		/* The program's compute is the estimate's, which is the slowest
		 * device's (cost_slowest_factor): each rank runs at its own. */
		rs->speed = cost_rank_factor(e->t, e->o->seed, dev_of(e, r)) / e->slowest;
		/* fidelity representative: the slowest of its replicas sets the
		 * pace (their gradients' collective waits for it) */
		for (int64_t x = e->rep_of ? e->repl_start[r] : 0; e->rep_of && x < e->repl_start[r + 1];
		     x++)
			rs->speed = fmax(rs->speed, cost_rank_factor(e->t, e->o->seed,
			                                             dev_of(e, e->repl[x])) / e->slowest);
		rs->stage = (int)(r / e->prog->stage_ranks);
		rs->local = r % e->prog->stage_ranks;
		if (!is_rep(e, r))
			continue; /* its representative stands for it */
		rs->s1_go = sg_sem_init(0);
		rs->opt_go = sg_sem_init(0);
		rs->mid_go = sg_sem_init(0);
		rs->go[0] = sg_sem_init(0);
		rs->go[1] = sg_sem_init(0);
		char name[32];
		snprintf(name, sizeof(name), "r%lld", (long long)dev_of(e, rs->rank));
		sg_host_t h = sg_host_by_name(name);
		if (!h)
			return false;
		rs->host = h;
		for (int s = 0; s < (e->has_s1 ? 2 : 1); s++) {
			struct actor_ctx *c = calloc(1, sizeof(*c));
			if (!c)
				return false;
			c->rs = rs;
			c->stream = s;
			c->sync_key = -1;
			e->live++;
			snprintf(name, sizeof(name), "j%d.r%lld.%d", e->job, (long long)rs->rank, s);
			sg_actor_t a = sg_actor_init(name, h);
			sg_actor_set_data(a, c);
			sg_actor_start(a, actor_main, 0, NULL);
		}
	}
	return true;
}

/* ------------------------------------------------------------- output */

struct out_buf {
	char *p;
	size_t n, cap;
	bool oom;
};

static void put(struct out_buf *b, const void *data, size_t n)
{
	if (b->n + n > b->cap) {
		size_t cap = (b->cap ? b->cap * 2 : 4096) + n;
		char *p = realloc(b->p, cap);
		if (!p) {
			b->oom = true;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	if (n > 0) /* an empty array may be NULL */
		memcpy(b->p + b->n, data, n);
	b->n += n;
}

static void put_f(struct out_buf *b, double x) { put(b, &x, sizeof(x)); }
static void put_i(struct out_buf *b, int64_t x) { put(b, &x, sizeof(x)); }

/* A link's share of its capacity: bytes / bandwidth, for ordering. */
struct link_key {
	double load_s;
	int link;
};

static int by_load(const void *x, const void *y)
{
	const struct link_key *a = x, *b = y;
	if (a->load_s != b->load_s)
		return a->load_s < b->load_s ? 1 : -1;
	return (a->link > b->link) - (a->link < b->link);
}

static double link_bps(const struct sim_net *net, int l)
{
	char n[8];
	double bps, lat;
	sim_net_link_info(net, l, n, sizeof(n), &bps, &lat);
	return bps;
}

/* The links of order[0 .. n) (sorted, most loaded first) and each one's
 * name, then what the caller adds per link. */
static void put_sorted(struct out_buf *b, struct link_key *order, int n)
{
	qsort(order, (size_t)n, sizeof(*order), by_load);
	put_i(b, n);
}

static void put_name(struct out_buf *b, const struct sim_net *net, int link)
{
	char name[96];
	double bps, lat;
	sim_net_link_info(net, link, name, sizeof(name), &bps, &lat);
	put_i(b, (int64_t)strlen(name));
	put(b, name, strlen(name));
}

static void put_links(struct out_buf *b, const struct engine *e, double iteration_s)
{
	struct link_key *order = malloc((size_t)e->net->n_links * sizeof(*order) + 1);
	int n = 0;
	for (int l = 0; order && l < e->net->n_links; l++)
		if (e->link_bytes[l] > 0)
			order[n++] = (struct link_key){e->link_bytes[l] / link_bps(e->net, l), l};
	if (!order) {
		b->oom = true;
		return;
	}
	put_sorted(b, order, n);
	for (int i = 0; i < n; i++) {
		double bps = link_bps(e->net, order[i].link);
		put_name(b, e->net, order[i].link);
		double bytes = e->link_bytes[order[i].link];
		put_f(b, bytes);
		put_f(b, bytes / bps);
		put_f(b, iteration_s > 0 ? bytes / (bps * iteration_s) : 0);
	}
	/* the busiest links over time */
	double bin_s = e->bins_clock->bin_s;
	int n_series = n < SIM_SERIES_LINKS ? n : SIM_SERIES_LINKS;
	put_f(b, bin_s);
	put_i(b, n_series);
	for (int i = 0; i < n_series; i++) {
		int32_t s = e->slot[order[i].link];
		double bps = link_bps(e->net, order[i].link);
		put_i(b, i);
		for (int k = 0; k < SIM_BINS; k++)
			put_f(b, s >= 0 ? e->bins[(int64_t)s * SIM_BINS + k] / (bps * bin_s) : 0);
	}
	free(order);
}

static void write_result(struct out_buf *o, const struct engine *e, double it)
{
	struct out_buf b = *o;
	put_f(&b, it);
	put_i(&b, e->prog->n_ranks);
	for (int64_t r = 0; r < e->prog->n_ranks; r++) {
		/* a replica as its representative ran */
		const struct rank_state *rs = &e->ranks[e->rep_of ? e->rep_of[r] : r];
		double idle = it - rs->compute_s - rs->comm_s - rs->wait_s - rs->straggler_s;
		put_f(&b, rs->compute_s);
		put_f(&b, rs->comm_s);
		put_f(&b, rs->wait_s);
		put_f(&b, idle > 0 ? idle : 0);
		put_f(&b, rs->mem_peak_bytes);
		put_f(&b, rs->straggler_s);
		put_f(&b, rs->p2p_s);
		put_f(&b, rs->p2p_alone_s);
	}
	put_links(&b, e, it);
	int64_t n_coll = 0;
	for (int i = 0; i < e->prog->n_steps; i++)
		n_coll += e->algo[i] != NULL;
	put_i(&b, n_coll);
	for (int i = 0; i < e->prog->n_steps; i++) {
		if (!e->algo[i])
			continue;
		put_i(&b, i);
		uint8_t a = (uint8_t)algo_of(e, i, 0);
		put_i(&b, a == SIM_HD_ONE_LINK ? COLL_HALVING_DOUBLING : a == SIM_EP_HYBRID ? COLL_DIRECT : a);
		put_f(&b, e->coll_max_s[i]);
		put_f(&b, e->formula_s[i]);
	}
	put_i(&b, e->messages);
	put_i(&b, e->activities + e->messages);
	put_i(&b, e->by_formula);
	put_i(&b, e->n_events);
	put(&b, e->events, (size_t)e->n_events * sizeof(*e->events));
	*o = b;
}

/* The links more than one job's traffic crossed, most loaded first: per
 * link its name, bandwidth and each job's bytes. */
static void put_shared(struct out_buf *b, const struct engine *jobs, int n_jobs)
{
	const struct sim_net *net = jobs[0].net;
	struct link_key *order = malloc((size_t)net->n_links * sizeof(*order) + 1);
	int n = 0;
	for (int l = 0; order && l < net->n_links; l++) {
		int users = 0;
		double bytes = 0;
		for (int j = 0; j < n_jobs; j++) {
			users += jobs[j].link_bytes[l] > 0;
			bytes += jobs[j].link_bytes[l];
		}
		if (users > 1)
			order[n++] = (struct link_key){bytes / link_bps(net, l), l};
	}
	if (!order) {
		b->oom = true;
		return;
	}
	double bin_s = jobs[0].bins_clock->bin_s;
	put_f(b, bin_s);
	put_sorted(b, order, n);
	for (int i = 0; i < n; i++) {
		int l = order[i].link;
		double bps = link_bps(net, l);
		put_name(b, net, l);
		put_f(b, bps);
		for (int j = 0; j < n_jobs; j++)
			put_f(b, jobs[j].link_bytes[l]);
		/* every job's bytes in each bin, over the link's capacity */
		for (int k = 0; k < SIM_BINS; k++) {
			double bytes = 0;
			for (int j = 0; j < n_jobs; j++)
				if (jobs[j].slot[l] >= 0)
					bytes += jobs[j].bins[(int64_t)jobs[j].slot[l] * SIM_BINS + k];
			put_f(b, bytes / (bps * bin_s));
		}
	}
	free(order);
}

static bool write_all(int fd, const struct out_buf *b)
{
	bool ok = !b->oom;
	for (size_t off = 0; ok && off < b->n;) {
		ssize_t w = write(fd, b->p + off, b->n - off);
		if (w <= 0)
			ok = false;
		else
			off += (size_t)w;
	}
	return ok;
}

/* Which job uses each link: the pairs [pairs_from, pairs_to) of the net
 * are job j's (jobs hold disjoint devices, so no pair is two jobs'). */
static int32_t *links_by_job(const struct sim_net *net, const int64_t *pairs_to, int n_jobs)
{
	int32_t *who = malloc((size_t)net->n_links * sizeof(*who) + 1);
	for (int l = 0; who && l < net->n_links; l++)
		who[l] = -1;
	for (int j = 0, p = 0; who && j < n_jobs; j++)
		for (; p < pairs_to[j]; p++)
			for (int k = 0; k < net->route[p].n; k++) {
				int32_t *w = &who[net->route[p].link[k]];
				*w = *w < 0 || *w == j ? j : LINK_JOBS;
			}
	return who;
}

/* The engine for each job, set up in turn on one net. Returns the
 * child's exit status, 0 when the jobs may run. */
static int setup_jobs(struct engine *e, const struct topology *t, const struct sim_job *jobs,
                      int n_jobs, const struct sim_options *o, struct sim_net *net,
                      int64_t *pairs_to, int64_t *actors, struct bin_clock *bc)
{
	int64_t hosts = 0;
	for (int j = 0; j < n_jobs; j++)
		for (int64_t r = 0; r < jobs[j].prog->n_ranks; r++) {
			int64_t d = jobs[j].devices ? jobs[j].devices[r] : r;
			hosts = d + 1 > hosts ? d + 1 : hosts;
		}
	if (!(o->leaf_uplinks ? sim_net_init_pooled : sim_net_init)(net, t, 0, hosts))
		return 3;
	*actors = 0;
	for (int j = 0; j < n_jobs; j++) {
		e[j] = (struct engine){.t = t, .prog = jobs[j].prog, .o = o, .job = j,
		                       .dev = jobs[j].devices, .net = net, .bins_clock = bc,
		                       .pairs_from = net->n_pairs};
		if (!setup(&e[j]))
			return 3;
		if (e[j].bad_reps)
			return 7;
		pairs_to[j] = e[j].pairs_to = net->n_pairs;
		*actors += jobs[j].prog->n_ranks * (e[j].has_s1 ? 2 : 1);
	}
	int32_t *link_job = n_jobs > 1 ? links_by_job(net, pairs_to, n_jobs) : NULL;
	if (n_jobs > 1 && !link_job)
		return 3;
	for (int j = 0; j < n_jobs; j++) {
		e[j].link_job = link_job;
		if (!setup_links(&e[j]))
			return 3;
	}
	if (o->fidelity == FIDELITY_REPRESENTATIVE) {
		net->pair_used = calloc((size_t)net->n_pairs + 1, 1);
		net->host_used = calloc((size_t)net->n_ranks + 1, 1);
		for (int j = 0; j < n_jobs; j++)
			if (!net->pair_used || !net->host_used || !mark_used(&e[j]))
				return 3;
	}
	return 0;
}

int sim_child_run_jobs(const struct topology *t, const struct sim_job *jobs, int n_jobs,
                       const struct sim_options *o, int fd)
{
	static struct sim_net net;
	struct engine *e = calloc((size_t)n_jobs, sizeof(*e));
	int64_t *pairs_to = calloc((size_t)n_jobs, sizeof(*pairs_to)), actors = 0;
	if (!e || !pairs_to)
		return 3;
	/* bins of a microsecond to begin with, widened as the run goes */
	static struct bin_clock bc;
	bc = (struct bin_clock){.bin_s = 1e-6, .jobs = e, .n_jobs = n_jobs};
	int code = setup_jobs(e, t, jobs, n_jobs, o, &net, pairs_to, &actors, &bc);
	if (code)
		return code;
	configure(actors);
	if (!load_platform(&net))
		return 4;
	sg_mailbox_t *mbox = make_mailboxes(&net);
	/* fidelity representative: the hosts its helpers' flows join */
	sg_host_t *hosts = NULL;
	if (o->fidelity == FIDELITY_REPRESENTATIVE) {
		hosts = malloc((size_t)net.n_ranks * sizeof(*hosts) + 1);
		for (int64_t d = 0; hosts && d < net.n_ranks; d++) {
			char name[32];
			snprintf(name, sizeof(name), "r%lld", (long long)(net.base + d));
			hosts[d] = net.host_used[d] ? sg_host_by_name(name) : NULL;
		}
		if (!hosts)
			return 5;
	}
	for (int j = 0; j < n_jobs; j++) {
		e[j].mbox = mbox;
		e[j].hosts = hosts;
		if (!mbox || !make_channels(&e[j]) || !start_actors(&e[j]))
			return 4;
	}
	simgrid_run();
	for (int j = 0; j < n_jobs; j++) {
		/* Every rare collective left the links it entered. */
		for (int64_t k = 0; !e[j].failed && k < e[j].n_keys; k++)
			SL_ASSERT(e[j].key_busy[k] == 0);
		if (e[j].failed || !count_formula_bytes(&e[j]))
			return 5;
	}
	struct out_buf b = {0};
	for (int j = 0; j < n_jobs; j++)
		write_result(&b, &e[j], n_jobs == 1 ? simgrid_get_clock() : e[j].end_s);
	put_shared(&b, e, n_jobs);
	bool ok = write_all(fd, &b);
	free(b.p);
	return ok ? 0 : 6;
}
