/* run.c — the SimGrid engine: one simulated training iteration.
 *
 * Runs in the child process sim_run forks (one engine per process). The
 * setup runs every collective dry to find the rank pairs that carry
 * messages, writes the platform (platform.c) to a temporary file, loads it
 * with the CM02 model, unit factors, no cross-traffic and no TCP window
 * (DESIGN.md: an uncontended transfer then takes latency + bytes /
 * bandwidth exactly), and creates a mailbox per (pair, stream): messages
 * between two ranks on one stream are sent and received in program order,
 * so FIFO matching never mixes collectives or senders; the pipeline's
 * sends get a mailbox per (boundary, direction, receiver) for the same
 * reason.
 *
 * Each rank runs its stage's schedule: an actor for stream 0 walks the
 * slots (a chunk's forward or backward steps for one micro-batch: compute
 * as sleeps of the roofline seconds, the ops' collectives, the pipeline's
 * sends, which do not wait, and receives, which do), then the stage's
 * tail. When the program has gradient buckets, stream 0 hands each to the
 * rank's stream-1 actor as it passes it (in every micro-batch or the
 * chunk's last, as the step says) through a queue and a semaphore; the
 * tail waits for stream 1 to drain.
 *
 * Results: per rank compute, exposed communication (stream 0 inside a
 * collective, a receive's transfer, or before the tail waiting for stream
 * 1's gradients), pipeline wait (a receive before the other stage sent),
 * idle the rest; per link the bytes routed over it (counted
 * per message along its route), busy time at full bandwidth and
 * utilisation; per collective step the longest a rank spent in it and its
 * formula. Written to the pipe as plain binary (sim.c reads it).
 *
 * Hot path: run_ops, per message: an integer hash lookup of the pair, a
 * put or get on a preallocated mailbox, the route's byte counters.
 */
#include <math.h>
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

struct rank_state {
	int64_t rank, local;               /* global, and inside its stage */
	int stage;
	double compute_s, comm_s, wait_s;
	sg_sem_t s1_go, opt_go;
	int *queue;                        /* stream-1 steps stream 0 handed over; -1 ends */
	int64_t *queue_micro;
	int q_head, q_tail, q_cap;
	bool s0_waiting, s1_finished;
	sg_comm_t *sends;                  /* the pipeline's sends in flight */
	int n_sends, cap_sends;
};

struct actor_ctx {
	struct rank_state *rs;
	int stream;
	int64_t micro;                     /* of the step running; -1 in the tail */
	struct sim_ops ops;
	sg_comm_t *comms;
	int comms_cap;
	void *sink;
};

struct engine {
	const struct topology *t;
	const struct program *prog;
	const struct sim_options *o;
	struct sim_net net;
	sg_mailbox_t *mbox;                /* [pair * 2 + stream] */
	sg_mailbox_t *p2p;                 /* [channel * stage_ranks + receiver's local rank] */
	uint8_t **algo;                    /* [step][group]: effective algorithm */
	double *formula_s, *coll_max_s;    /* [step] */
	double *link_bytes;                /* [link] */
	int64_t messages;
	struct rank_state *ranks;
	bool has_s1;
	int64_t progress_done, progress_total, progress_every;
	struct sim_event *events;
	int64_t n_events, cap_events;
	bool failed;
};

/* The child's one engine: actors are plain functions. */
static struct engine *eng;

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
	for (int j = 0; j < g->size; j++)
		ops->members[j] = off + rank_groups_rank(g, group, j);
	return g->size;
}

static bool in_program(const struct engine *e, int64_t r)
{
	return r >= 0 && r < e->prog->n_ranks;
}

/* A pipeline send: the pair of every rank of the stage with its peer. */
static bool setup_send(struct engine *e, int i)
{
	const struct program *p = e->prog;
	const struct prog_step *st = &p->steps[i];
	int64_t off = offset_of(e, i), peer = (int64_t)st->peer_stage * p->stage_ranks;
	for (int64_t j = 0; j < p->stage_ranks; j++)
		if (sim_net_pair_add(&e->net, off + j, peer + j) < 0)
			return false;
	return true;
}

/* Chooses each group's algorithm, costs the step, records every pair. */
static bool setup_step(struct engine *e, int i, struct sim_ops *ops)
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
	int64_t off = offset_of(e, i);
	for (int k = 0; k < g->n_groups; k++) {
		int n = members_of(ops, g, k, off);
		if (n < 0)
			return false;
		/* The rule the estimate follows: the wanted algorithm where it
		 * applies, else the cheapest that does. */
		enum collective_algo want =
		        cost_choose_algo(e->t, st->coll, ops->members, n, st->bytes, e->o->algo);
		enum collective_algo a = sim_algo_effective(e->t, st->coll, want, ops->members, n);
		e->algo[i][k] = (uint8_t)a;
		double f = cost_collective_algo_s(e->t, st->coll, a, ops->members, n, st->bytes);
		if (f > e->formula_s[i])
			e->formula_s[i] = f;
		for (int me = 0; me < n; me++) {
			int64_t self = ops->members[me];
			if (!in_program(e, self))
				return false;
			sim_coll_ops(ops, e->t, st->coll, a, e->o->fidelity, ops->members, n, me,
			             st->bytes);
			for (int x = 0; x < ops->n; x++) {
				if (ops->op[x].kind != SIM_OP_SEND)
					continue;
				if (!in_program(e, ops->op[x].peer) ||
				    sim_net_pair_add(&e->net, self, ops->op[x].peer) < 0)
					return false;
			}
			if (ops->oom)
				return false;
		}
	}
	return true;
}

/* Stream-0 steps of a range. */
static int64_t stream0_steps(const struct program *p, int from, int n)
{
	int64_t k = 0;
	for (int i = from; i < from + n; i++)
		k += p->steps[i].stream == 0;
	return k;
}

static bool setup(struct engine *e)
{
	const struct program *p = e->prog;
	if (!sim_net_init(&e->net, e->t, 0, p->n_ranks))
		return false;
	e->algo = calloc((size_t)p->n_steps + 1, sizeof(*e->algo));
	e->formula_s = calloc((size_t)p->n_steps + 1, sizeof(double));
	e->coll_max_s = calloc((size_t)p->n_steps + 1, sizeof(double));
	e->ranks = calloc((size_t)p->n_ranks, sizeof(*e->ranks));
	if (!e->algo || !e->formula_s || !e->coll_max_s || !e->ranks)
		return false;
	struct sim_ops ops = {0};
	bool ok = true;
	for (int i = 0; i < p->n_steps && ok; i++) {
		ok = setup_step(e, i, &ops);
		e->has_s1 |= p->steps[i].stream == 1;
	}
	sim_ops_free(&ops);
	e->link_bytes = calloc((size_t)e->net.n_links + 1, sizeof(double));
	/* progress: rank 0's stream-0 steps */
	const struct prog_stage *s0 = &p->stages[0];
	for (int k = 0; k < s0->n_slots; k++) {
		const struct prog_chunk *c = &p->chunks[s0->slots[k].chunk];
		e->progress_total += s0->slots[k].backward ? stream0_steps(p, c->bwd, c->n_bwd)
		                                           : stream0_steps(p, c->fwd, c->n_fwd);
	}
	e->progress_total += stream0_steps(p, s0->tail, s0->n_tail);
	e->progress_every = e->progress_total / 100 > 0 ? e->progress_total / 100 : 1;
	return ok && e->link_bytes;
}

/* Writes the platform to a temporary file, loads it, removes the file. */
static bool load_platform(struct engine *e)
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
	bool ok = sim_net_write_xml(&e->net, f);
	ok = fclose(f) == 0 && ok;
	if (ok)
		simgrid_load_platform(path);
	unlink(path);
	return ok;
}

static void configure(void)
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
}

/* A mailbox per (pair, stream) for collectives, and per (pipeline
 * channel, receiver) for the stages' sends: each carries one sender's
 * messages in the order both sides run them. */
static bool make_mailboxes(struct engine *e)
{
	const struct program *p = e->prog;
	int64_t n_p2p = 2 * (int64_t)p->n_chunks * p->stage_ranks;
	e->mbox = malloc((size_t)(2 * e->net.n_pairs + 1) * sizeof(*e->mbox));
	e->p2p = p->n_stages > 1 ? malloc((size_t)(n_p2p + 1) * sizeof(*e->p2p)) : NULL;
	if (!e->mbox || (p->n_stages > 1 && !e->p2p))
		return false;
	char name[48];
	for (int k = 0; k < 2 * e->net.n_pairs; k++) {
		snprintf(name, sizeof(name), "m%d.%d", k / 2, k % 2);
		e->mbox[k] = sg_mailbox_by_name(name);
	}
	for (int64_t k = 0; p->n_stages > 1 && k < n_p2p; k++) {
		snprintf(name, sizeof(name), "p%lld.%lld", (long long)(k / p->stage_ranks),
		         (long long)(k % p->stage_ranks));
		e->p2p[k] = sg_mailbox_by_name(name);
	}
	return true;
}

/* ------------------------------------------------------------- actors */

static void record(struct actor_ctx *c, int step, enum sim_event_kind kind, double t0, double t1)
{
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

/* Counts a message on its route's links and puts it in a mailbox. */
static sg_comm_t send_to(int64_t from, int64_t to, sg_mailbox_t box, double bytes, void *payload)
{
	int p = sim_net_pair(&eng->net, from, to);
	SL_ASSERT(p >= 0);
	const struct sim_route *r = &eng->net.route[p];
	for (int i = 0; i < r->n; i++)
		eng->link_bytes[r->link[i]] += bytes;
	eng->messages++;
	return sg_mailbox_put_async(box, payload, (long)llround(bytes));
}

static void run_ops(struct actor_ctx *c)
{
	int pending = 0;
	for (int i = 0; i < c->ops.n; i++) {
		const struct sim_op *op = &c->ops.op[i];
		if (op->kind == SIM_OP_SLEEP) {
			sg_actor_sleep_for(op->amount);
			continue;
		}
		if (op->kind == SIM_OP_WAIT) {
			sg_comm_wait_all(c->comms, (size_t)pending);
			pending = 0;
			continue;
		}
		if (!pending_room(c, pending)) {
			eng->failed = true;
			break;
		}
		if (op->kind == SIM_OP_SEND) {
			int p = sim_net_pair(&eng->net, c->rs->rank, op->peer);
			c->comms[pending++] = send_to(c->rs->rank, op->peer,
			                              eng->mbox[2 * p + c->stream], op->amount, eng);
		} else {
			int p = sim_net_pair(&eng->net, op->peer, c->rs->rank);
			SL_ASSERT(p >= 0);
			c->comms[pending++] = sg_mailbox_get_async(eng->mbox[2 * p + c->stream], &c->sink);
		}
	}
	if (pending)
		sg_comm_wait_all(c->comms, (size_t)pending);
}

static void run_collective(struct actor_ctx *c, int i)
{
	const struct prog_step *st = &eng->prog->steps[i];
	int group, me;
	int64_t off = offset_of(eng, i);
	if (st->groups.size <= 1 || !rank_groups_locate(&st->groups, c->rs->rank - off, &group, &me))
		return;
	int n = members_of(&c->ops, &st->groups, group, off);
	if (n < 0) {
		eng->failed = true;
		return;
	}
	double t0 = simgrid_get_clock();
	sim_coll_ops(&c->ops, eng->t, st->coll, (enum collective_algo)eng->algo[i][group],
	             eng->o->fidelity, c->ops.members, n, me, st->bytes);
	if (c->ops.oom) {
		eng->failed = true;
		return;
	}
	run_ops(c);
	double t1 = simgrid_get_clock();
	if (c->stream == 0)
		c->rs->comm_s += t1 - t0;
	if (t1 - t0 > eng->coll_max_s[i])
		eng->coll_max_s[i] = t1 - t0;
	record(c, i, SIM_EV_COLLECTIVE, t0, t1);
}

/* The pipeline: a send does not wait (its comm is kept until the end)
 * and carries the time it was posted; a receive waits for the other
 * stage, and the wait until the send was posted is the bubble. */
static void run_p2p(struct actor_ctx *c, int i)
{
	const struct program *p = eng->prog;
	const struct prog_step *st = &p->steps[i];
	struct rank_state *rs = c->rs;
	if (st->kind == PROG_SEND) {
		int64_t peer = (int64_t)st->peer_stage * p->stage_ranks + rs->local;
		if (rs->n_sends == rs->cap_sends) {
			int cap = rs->cap_sends ? 2 * rs->cap_sends : 64;
			sg_comm_t *x = realloc(rs->sends, (size_t)cap * sizeof(*x));
			if (!x) {
				eng->failed = true;
				return;
			}
			rs->sends = x;
			rs->cap_sends = cap;
		}
		double *posted = malloc(sizeof *posted);
		if (!posted) {
			eng->failed = true;
			return;
		}
		*posted = simgrid_get_clock();
		rs->sends[rs->n_sends++] = send_to(rs->rank, peer,
		                                   eng->p2p[st->channel * p->stage_ranks + rs->local],
		                                   st->bytes, posted);
		return;
	}
	double t0 = simgrid_get_clock();
	double *posted = sg_mailbox_get(eng->p2p[st->channel * p->stage_ranks + rs->local]);
	double t1 = simgrid_get_clock();
	/* Waiting until the other stage sent is the bubble; the transfer
	 * after that, exposed communication. */
	double bubble = posted && *posted > t0 ? fmin(*posted, t1) - t0 : 0;
	free(posted);
	rs->wait_s += bubble;
	rs->comm_s += t1 - t0 - bubble;
	record(c, i, SIM_EV_COLLECTIVE, t0, t1);
}

static void run_step(struct actor_ctx *c, int i)
{
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
	double t0 = simgrid_get_clock();
	sg_actor_sleep_for(st->seconds);
	c->rs->compute_s += st->seconds;
	record(c, i, SIM_EV_COMPUTE, t0, simgrid_get_clock());
}

/* Hands a step (or the end, -1) to stream 1. */
static void hand_over(struct rank_state *rs, int step, int64_t micro)
{
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
	if (c->rs->rank != 0 || !eng->o->progress)
		return;
	if (++eng->progress_done % eng->progress_every == 0)
		eng->o->progress(eng->o->progress_ctx, simgrid_get_clock(),
		                 (double)eng->progress_done / (double)eng->progress_total);
}

/* Runs steps[from .. from+n) of one slot: stream-0 steps here, stream-1
 * ones handed over where they apply. */
static void run_range(struct actor_ctx *c, int from, int n, const struct prog_slot *slot)
{
	const struct program *p = eng->prog;
	for (int i = from; i < from + n && !eng->failed; i++) {
		if (p->steps[i].stream == 1) {
			if (eng->has_s1 && (p->steps[i].every_micro || slot->last))
				hand_over(c->rs, i, slot->micro);
			continue;
		}
		run_step(c, i);
		progress(c);
	}
}

static void stream0(struct actor_ctx *c)
{
	const struct program *p = eng->prog;
	struct rank_state *rs = c->rs;
	const struct prog_stage *st = &p->stages[rs->stage];
	for (int k = 0; k < st->n_slots && !eng->failed; k++) {
		const struct prog_slot *sl = &st->slots[k];
		const struct prog_chunk *ch = &p->chunks[sl->chunk];
		c->micro = sl->micro;
		if (sl->backward)
			run_range(c, ch->bwd, ch->n_bwd, sl);
		else
			run_range(c, ch->fwd, ch->n_fwd, sl);
	}
	c->micro = -1;
	if (eng->has_s1) {
		hand_over(rs, -1, -1);
		if (!rs->s1_finished) {
			/* The gradients not yet synchronised: exposed communication. */
			double t0 = simgrid_get_clock();
			rs->s0_waiting = true;
			sg_sem_acquire(rs->opt_go);
			rs->comm_s += simgrid_get_clock() - t0;
		}
	}
	struct prog_slot none = {0, -1, false, true};
	run_range(c, st->tail, st->n_tail, &none);
	if (rs->n_sends)
		sg_comm_wait_all(rs->sends, (size_t)rs->n_sends);
	free(rs->sends);
}

static void stream1(struct actor_ctx *c)
{
	struct rank_state *rs = c->rs;
	for (;;) {
		sg_sem_acquire(rs->s1_go);
		int step = rs->queue[rs->q_head];
		c->micro = rs->queue_micro[rs->q_head++];
		if (step < 0)
			break;
		run_step(c, step);
	}
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
	if (c->stream == 0)
		stream0(c);
	else
		stream1(c);
	sim_ops_free(&c->ops);
	free(c->comms);
	free(c);
}

static bool start_actors(struct engine *e)
{
	for (int64_t r = 0; r < e->prog->n_ranks; r++) {
		struct rank_state *rs = &e->ranks[r];
		rs->rank = r;
		rs->stage = (int)(r / e->prog->stage_ranks);
		rs->local = r % e->prog->stage_ranks;
		rs->s1_go = sg_sem_init(0);
		rs->opt_go = sg_sem_init(0);
		char name[32];
		snprintf(name, sizeof(name), "r%lld", (long long)rs->rank);
		sg_host_t h = sg_host_by_name(name);
		if (!h)
			return false;
		for (int s = 0; s < (e->has_s1 ? 2 : 1); s++) {
			struct actor_ctx *c = calloc(1, sizeof(*c));
			if (!c)
				return false;
			c->rs = rs;
			c->stream = s;
			snprintf(name, sizeof(name), "r%lld.%d", (long long)rs->rank, s);
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

static int by_bytes(const void *x, const void *y)
{
	int a = *(const int *)x, b = *(const int *)y;
	double ua = eng->link_bytes[a], ub = eng->link_bytes[b];
	double bpa, bpb, l;
	char n[8];
	sim_net_link_info(&eng->net, a, n, sizeof(n), &bpa, &l);
	sim_net_link_info(&eng->net, b, n, sizeof(n), &bpb, &l);
	ua /= bpa;
	ub /= bpb;
	if (ua != ub)
		return ua < ub ? 1 : -1;
	return (a > b) - (a < b);
}

static void put_links(struct out_buf *b, double iteration_s)
{
	int *order = malloc((size_t)eng->net.n_links * sizeof(int) + 1);
	int n = 0;
	for (int l = 0; order && l < eng->net.n_links; l++)
		if (eng->link_bytes[l] > 0)
			order[n++] = l;
	if (!order) {
		b->oom = true;
		return;
	}
	qsort(order, (size_t)n, sizeof(int), by_bytes);
	put_i(b, n);
	for (int i = 0; i < n; i++) {
		char name[96];
		double bps, lat;
		sim_net_link_info(&eng->net, order[i], name, sizeof(name), &bps, &lat);
		put_i(b, (int64_t)strlen(name));
		put(b, name, strlen(name));
		double bytes = eng->link_bytes[order[i]];
		put_f(b, bytes);
		put_f(b, bytes / bps);
		put_f(b, iteration_s > 0 ? bytes / (bps * iteration_s) : 0);
	}
	free(order);
}

static bool write_result(struct engine *e, int fd)
{
	struct out_buf b = {0};
	double it = simgrid_get_clock();
	put_f(&b, it);
	put_i(&b, e->prog->n_ranks);
	for (int64_t r = 0; r < e->prog->n_ranks; r++) {
		const struct rank_state *rs = &e->ranks[r];
		double idle = it - rs->compute_s - rs->comm_s - rs->wait_s;
		put_f(&b, rs->compute_s);
		put_f(&b, rs->comm_s);
		put_f(&b, rs->wait_s);
		put_f(&b, idle > 0 ? idle : 0);
	}
	put_links(&b, it);
	int64_t n_coll = 0;
	for (int i = 0; i < e->prog->n_steps; i++)
		n_coll += e->algo[i] != NULL;
	put_i(&b, n_coll);
	for (int i = 0; i < e->prog->n_steps; i++) {
		if (!e->algo[i])
			continue;
		put_i(&b, i);
		put_i(&b, e->algo[i][0]);
		put_f(&b, e->coll_max_s[i]);
		put_f(&b, e->formula_s[i]);
	}
	put_i(&b, e->messages);
	put_i(&b, e->n_events);
	put(&b, e->events, (size_t)e->n_events * sizeof(*e->events));
	bool ok = !b.oom;
	for (size_t off = 0; ok && off < b.n;) {
		ssize_t w = write(fd, b.p + off, b.n - off);
		if (w <= 0)
			ok = false;
		else
			off += (size_t)w;
	}
	free(b.p);
	return ok;
}

int sim_child_run(const struct topology *t, const struct program *prog,
                  const struct sim_options *o, int fd)
{
	static struct engine e;
	e = (struct engine){.t = t, .prog = prog, .o = o};
	eng = &e;
	if (!setup(&e))
		return 3;
	configure();
	if (!load_platform(&e) || !make_mailboxes(&e) || !start_actors(&e))
		return 4;
	simgrid_run();
	if (e.failed)
		return 5;
	return write_result(&e, fd) ? 0 : 6;
}
