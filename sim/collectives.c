/* collectives.c — collectives as point-to-point messages, per rank.
 *
 * One member's part of a collective becomes a short list of operations:
 * sends (to a rank, bytes), receives (from a rank), waits (every pending
 * send and receive done) and sleeps. For a group of n ranks and S bytes
 * (S of the formulas, cost.h):
 *   ring               AllReduce: 2(n-1) steps of S/n to the next rank;
 *                      AllGather, ReduceScatter: n-1 steps of S/n;
 *                      AllToAll: pairwise, step k sends S/n to rank +k
 *   tree (binomial)    AllReduce: reduce to member 0, broadcast back,
 *                      ceil(log2 n) rounds of S each
 *   halving-doubling   ReduceScatter by halving (S/2, S/4, .., S/n),
 *                      AllGather by doubling (S/n, .., S/2), AllReduce both
 *   hierarchical       rings inside the server, across the servers on
 *                      S/n_intra (one ring per local position), inside again
 *   direct             S/n to every other member at once: AllToAll; in a mesh
 *                      tier also AllGather, ReduceScatter, and AllReduce (both)
 * Fidelity coarse turns each ring phase into one transfer of the phase's
 * bytes to the next rank followed by a sleep of the n-2 latencies skipped
 * (docs/simulation.md), and halving-doubling whose steps all cross routes of one
 * bandwidth into one exchange per pass (SIM_HD_ONE_LINK, sim-int.h); the
 * tree and mixed-bandwidth halving-doubling stay step by step.
 *
 * Units: bytes and seconds. Hot path: sim_coll_ops, once per rank and
 * collective; the arrays grow, never per message.
 */
#include <stdlib.h>
#include <string.h>

#include "sim-int.h"

bool sim_ops_reserve(struct sim_ops *ops, int n)
{
	if (n <= ops->members_cap)
		return true;
	int64_t *m = realloc(ops->members, (size_t)n * sizeof(*m));
	if (m)
		ops->members = m;
	int64_t *s = realloc(ops->scratch, (size_t)n * sizeof(*s));
	if (s)
		ops->scratch = s;
	if (!m || !s) {
		ops->oom = true;
		return false;
	}
	ops->members_cap = n;
	return true;
}

void sim_ops_free(struct sim_ops *ops)
{
	free(ops->op);
	free(ops->members);
	free(ops->scratch);
}

static void push(struct sim_ops *ops, enum sim_op_kind kind, int64_t peer, double amount)
{
	if (ops->n == ops->cap) {
		int cap = ops->cap ? 2 * ops->cap : 64;
		struct sim_op *p = realloc(ops->op, (size_t)cap * sizeof(*p));
		if (!p) {
			ops->oom = true;
			return;
		}
		ops->op = p;
		ops->cap = cap;
	}
	ops->op[ops->n++] = (struct sim_op){kind, peer, amount};
}

static void exchange(struct sim_ops *ops, int64_t to, int64_t from, double bytes)
{
	push(ops, SIM_OP_SEND, to, bytes);
	push(ops, SIM_OP_RECV, from, 0);
	push(ops, SIM_OP_WAIT, -1, 0);
}

/* `phases` ring phases of n-1 steps, `chunk` bytes a step. */
static void ring(struct sim_ops *ops, const struct topology *t, enum sim_fidelity fid,
                 const int64_t *r, int n, int me, int phases, double chunk)
{
	if (n <= 1)
		return;
	int64_t next = r[(me + 1) % n], prev = r[(me + n - 1) % n];
	for (int p = 0; p < phases; p++) {
		if (fid == FIDELITY_STEP) {
			for (int k = 0; k < n - 1; k++)
				exchange(ops, next, prev, chunk);
			continue;
		}
		double bps, lat = 0;
		topo_route(t, r[me], next, &bps, &lat);
		exchange(ops, next, prev, chunk * (n - 1));
		if (n > 2)
			push(ops, SIM_OP_SLEEP, -1, lat * (n - 2));
	}
}

static void pairwise(struct sim_ops *ops, const int64_t *r, int n, int me, double chunk,
                     bool at_once)
{
	for (int k = 1; k < n; k++) {
		push(ops, SIM_OP_SEND, r[(me + k) % n], chunk);
		push(ops, SIM_OP_RECV, r[(me + n - k) % n], 0);
		if (!at_once)
			push(ops, SIM_OP_WAIT, -1, 0);
	}
	if (at_once)
		push(ops, SIM_OP_WAIT, -1, 0);
}

static void tree_allreduce(struct sim_ops *ops, const int64_t *r, int n, int me, double bytes)
{
	int levels = 0;
	while ((1 << levels) < n)
		levels++;
	for (int k = 0; k < levels; k++) {
		int mask = 1 << k;
		if (me & mask) {
			push(ops, SIM_OP_SEND, r[me - mask], bytes);
			push(ops, SIM_OP_WAIT, -1, 0);
			break;
		}
		if (me + mask < n) {
			push(ops, SIM_OP_RECV, r[me + mask], 0);
			push(ops, SIM_OP_WAIT, -1, 0);
		}
	}
	for (int k = levels - 1; k >= 0; k--) {
		int mask = 1 << k, low = me & (2 * mask - 1);
		if (low == 0 && me + mask < n) {
			push(ops, SIM_OP_SEND, r[me + mask], bytes);
			push(ops, SIM_OP_WAIT, -1, 0);
		} else if (low == mask) {
			push(ops, SIM_OP_RECV, r[me - mask], 0);
			push(ops, SIM_OP_WAIT, -1, 0);
		}
	}
}

static void halving(struct sim_ops *ops, const int64_t *r, int n, int me, double bytes)
{
	for (int d = n / 2; d >= 1; d /= 2)
		exchange(ops, r[me ^ d], r[me ^ d], bytes * d / n);
}

static void doubling(struct sim_ops *ops, const int64_t *r, int n, int me, double bytes)
{
	for (int d = 1; d < n; d *= 2)
		exchange(ops, r[me ^ d], r[me ^ d], bytes * d / n);
}

/* Members on the first member's server, and servers spanned; false when
 * the servers hold different numbers of members. */
static bool servers_even(const struct topology *t, const int64_t *r, int n, int *n_intra,
                         int *m)
{
	int64_t d = t->devices_per_server;
	int c = 0;
	for (int i = 0; i < n; i++)
		c += r[i] / d == r[0] / d;
	*n_intra = c;
	*m = n / c;
	if (n % c)
		return false;
	/* Members come in whole servers: each run of c members shares one. */
	for (int i = 0; i < n; i++) {
		int same = 0;
		for (int j = 0; j < n && same <= c; j++)
			same += r[j] / d == r[i] / d;
		if (same != c)
			return false;
	}
	return true;
}

bool sim_hd_one_link(const struct topology *t, const int64_t *ranks, int n)
{
	double b0 = -1;
	for (int me = 0; me < n; me++) {
		for (int d = n / 2; d >= 1; d /= 2) {
			double bps = 0, lat = 0;
			if (!topo_route(t, ranks[me], ranks[me ^ d], &bps, &lat))
				return false;
			if (b0 < 0)
				b0 = bps;
			else if (bps != b0)
				return false;
		}
	}
	return b0 > 0;
}

/* One pass of SIM_HD_ONE_LINK: the steps' bytes with the partner at n/2,
 * the other steps' latencies slept. */
static void hd_one_link(struct sim_ops *ops, const struct topology *t, const int64_t *r, int n,
                        int me, double bytes)
{
	struct sim_hd_memo *m = &ops->hd_memo;
	int64_t key[32];
	int n_key = 0;
	key[n_key++] = r[me];
	for (int d = n / 4; d >= 1; d /= 2)
		key[n_key++] = r[me ^ d];
	if (m->t != t || m->n_key != n_key || memcmp(m->key, key, (size_t)n_key * sizeof(*key))) {
		double lat = 0;
		for (int d = n / 4; d >= 1; d /= 2) {
			double bps = 0, l = 0;
			topo_route(t, r[me], r[me ^ d], &bps, &l);
			lat += l;
		}
		m->t = t;
		m->n_key = n_key;
		memcpy(m->key, key, (size_t)n_key * sizeof(*key));
		m->lat = lat;
	}
	double lat = m->lat;
	exchange(ops, r[me ^ (n / 2)], r[me ^ (n / 2)], bytes * (n - 1) / n);
	if (lat > 0)
		push(ops, SIM_OP_SLEEP, -1, lat);
}

static bool pow2(int n)
{
	return n > 0 && (n & (n - 1)) == 0;
}

/* NCCL's rails (cost.h, collectives.c): members in whole-server blocks of
 * c > 1 on several servers. The blocks are looked at once per group (the
 * members of one group ask one after another, as for the wire memo): a
 * look is O(n), and n members of a TP x DP group of 16,384 asking each
 * made a setup quadratic. */
static bool rails(struct sim_ops *ops, const struct topology *t, enum step_kind kind,
                  const int64_t *r, int n, int *c)
{
	if (t->coll.library != TOPO_COLL_NCCL ||
	    !(kind == STEP_ALLREDUCE || kind == STEP_ALLGATHER || kind == STEP_REDUCESCATTER))
		return false;
	struct sim_blocks_memo *m = &ops->blocks_memo;
	if (!m->valid || m->t != t || m->n != n || m->first != r[0] || m->last != r[n - 1]) {
		*m = (struct sim_blocks_memo){.valid = true, .t = t, .n = n, .first = r[0],
		                              .last = r[n - 1]};
		m->blocks = topo_server_blocks(t, r, n, &m->c);
	}
	*c = m->c;
	return m->blocks && *c < n;
}

/* Rings over the rails: ring k runs through every server's block starting
 * at its member k and leaves it from member k-1, so that each ring crosses
 * between servers on another member's NIC; each carries S/c. Steps of the
 * c rings go together. */
static void rails_ring(struct sim_ops *ops, const struct topology *t, enum sim_fidelity fid,
                       const int64_t *r, int n, int c, int me, int phases, double chunk)
{
	int b = me / c, p = me % c, m = n / c;
	double lat = 0;
	for (int k = 0; k < c; k++) {
		double bps = 0, l = 0;
		int nx = p == (k + c - 1) % c ? ((b + 1) % m) * c + k : b * c + (p + 1) % c;
		topo_route(t, r[me], r[nx], &bps, &l);
		lat = l > lat ? l : lat;
	}
	int steps = fid == FIDELITY_STEP ? n - 1 : 1;
	double each = fid == FIDELITY_STEP ? chunk / c : chunk * (n - 1) / c;
	for (int ph = 0; ph < phases; ph++) {
		for (int s = 0; s < steps; s++) {
			for (int k = 0; k < c; k++) {
				int nx = p == (k + c - 1) % c ? ((b + 1) % m) * c + k
				                              : b * c + (p + 1) % c;
				int pv = p == k ? ((b + m - 1) % m) * c + (k + c - 1) % c
				                : b * c + (p + c - 1) % c;
				push(ops, SIM_OP_SEND, r[nx], each);
				push(ops, SIM_OP_RECV, r[pv], 0);
			}
			push(ops, SIM_OP_WAIT, -1, 0);
		}
		if (fid != FIDELITY_STEP && n > 2)
			push(ops, SIM_OP_SLEEP, -1, lat * (n - 2));
	}
}

/* NCCL's tree all-reduce across servers as its transfers all at once (the
 * pipeline's chunks in flight together): one channel per member of a
 * block, channel k a chain through the block from its head, member k, up
 * (reduce) and down (broadcast), S/c each way; the heads of channel k
 * exchange S/c with the neighbouring servers' (one on two servers, both
 * neighbours on more). */
static void nccl_tree(struct sim_ops *ops, const int64_t *r, int n, int c, int me, double bytes)
{
	int b = me / c, p = me % c, m = n / c;
	double each = bytes / c;
	for (int k = 0; k < c; k++) {
		int j = (p - k + c) % c; /* my place in channel k's chain */
		if (j > 0) {
			int up = b * c + (k + j - 1) % c;
			push(ops, SIM_OP_SEND, r[up], each);
			push(ops, SIM_OP_RECV, r[up], 0);
		}
		if (j < c - 1) {
			int down = b * c + (k + j + 1) % c;
			push(ops, SIM_OP_SEND, r[down], each);
			push(ops, SIM_OP_RECV, r[down], 0);
		}
		if (j == 0) {
			int nb = ((b + 1) % m) * c + k, pb = ((b + m - 1) % m) * c + k;
			push(ops, SIM_OP_SEND, r[nb], each);
			push(ops, SIM_OP_RECV, r[nb], 0);
			if (m > 2) {
				push(ops, SIM_OP_SEND, r[pb], each);
				push(ops, SIM_OP_RECV, r[pb], 0);
			}
		}
	}
	push(ops, SIM_OP_WAIT, -1, 0);
}

/* NCCL's NVLS (cost_nvls_channels; c members a server): every member sends
 * its share of S to each other member of its server at once, both halves
 * of an all-reduce together, and across servers exchanges S/c with the
 * member at its place on the neighbouring servers (one on two servers,
 * both on more); the switch's reduction is in the bytes' scale
 * (cost_collective_wire). */
static void nvls(struct sim_ops *ops, enum step_kind kind, const int64_t *r, int n, int c, int me,
                 double bytes)
{
	int b = me / c, p = me % c, m = n / c;
	double share = (kind == STEP_ALLREDUCE ? 2 : 1) * bytes / c;
	for (int k = 1; k < c; k++) {
		push(ops, SIM_OP_SEND, r[b * c + (p + k) % c], share);
		push(ops, SIM_OP_RECV, r[b * c + (p + c - k) % c], 0);
	}
	if (m > 1) {
		int nb = ((b + 1) % m) * c + p, pb = ((b + m - 1) % m) * c + p;
		push(ops, SIM_OP_SEND, r[nb], bytes / c);
		push(ops, SIM_OP_RECV, r[m > 2 ? pb : nb], 0);
		if (m > 2) {
			push(ops, SIM_OP_SEND, r[pb], bytes / c);
			push(ops, SIM_OP_RECV, r[nb], 0);
		}
	}
	push(ops, SIM_OP_WAIT, -1, 0);
}

/* HCCL's pipeline (cost_pipeline_members; c members a server, m servers,
 * blocks of S/n): m rounds, each the block to every other member of the
 * server and, in all but the last, a block to the member at this place on
 * the next server (from the previous one's); twice for an all-reduce (its
 * reduce-scatter, the mirror, moves the same blocks). */
static void pipeline(struct sim_ops *ops, enum step_kind kind, const int64_t *r, int n, int c,
                     int me, double bytes)
{
	int b = me / c, p = me % c, m = n / c;
	double block = bytes / n;
	for (int phase = 0; phase < (kind == STEP_ALLREDUCE ? 2 : 1); phase++) {
		for (int round = 0; round < m; round++) {
			if (round < m - 1) {
				push(ops, SIM_OP_SEND, r[((b + 1) % m) * c + p], block);
				push(ops, SIM_OP_RECV, r[((b + m - 1) % m) * c + p], 0);
			}
			for (int k = 1; k < c; k++) {
				push(ops, SIM_OP_SEND, r[b * c + (p + k) % c], block);
				push(ops, SIM_OP_RECV, r[b * c + (p + c - k) % c], 0);
			}
			push(ops, SIM_OP_WAIT, -1, 0);
		}
	}
}

enum collective_algo sim_algo_effective(const struct topology *t, enum step_kind kind,
                                        enum collective_algo algo, const int64_t *ranks, int n)
{
	int n_intra, m;
	if (t->coll.library == TOPO_COLL_NCCL) {
		/* what NCCL runs (cost_algo_lines_of): rings, its tree for
		 * all-reduce across servers, direct all-to-all */
		int c;
		if (algo == COLL_TREE && kind == STEP_ALLREDUCE && topo_server_blocks(t, ranks, n, &c) &&
		    c < n)
			return COLL_TREE;
		if (algo == COLL_DIRECT && kind == STEP_ALLTOALL)
			return COLL_DIRECT;
		if (algo == COLL_NVLS && cost_nvls_channels(t, kind, ranks, n) > 0)
			return COLL_NVLS;
		return COLL_RING;
	}
	switch (algo) {
	case COLL_PIPELINE:
		return cost_pipeline_members(t, kind, ranks, n) > 0 ? COLL_PIPELINE : COLL_RING;
	case COLL_TREE:
		return kind == STEP_ALLREDUCE ? COLL_TREE : COLL_RING;
	case COLL_HALVING_DOUBLING:
		return kind != STEP_ALLTOALL && pow2(n) ? COLL_HALVING_DOUBLING : COLL_RING;
	case COLL_DIRECT:
		return kind == STEP_ALLTOALL || topo_group_in_mesh(t, ranks, n) ? COLL_DIRECT
		                                                                : COLL_RING;
	case COLL_HIERARCHICAL:
		if (servers_even(t, ranks, n, &n_intra, &m) && m > 1 && n_intra > 1)
			return COLL_HIERARCHICAL;
		return COLL_RING;
	default:
		return COLL_RING;
	}
}

/* Hierarchical: my server's members and my position's members across. */
static void hierarchical(struct sim_ops *ops, const struct topology *t, enum step_kind kind,
                         enum sim_fidelity fid, const int64_t *r, int n, int me, double bytes)
{
	int64_t d = t->devices_per_server;
	int n_intra = 0, m = 0, li = 0, si = 0;
	int64_t *intra = ops->scratch, *inter = ops->scratch + n / 2;
	/* intra: members on my server; my local index li */
	for (int i = 0; i < n; i++) {
		if (r[i] / d != r[me] / d)
			continue;
		if (i == me)
			li = n_intra;
		intra[n_intra++] = r[i];
	}
	/* inter: the li-th member of every server, servers in member order */
	for (int i = 0; i < n; i++) {
		int pos = 0;
		for (int j = 0; j < i; j++)
			pos += r[j] / d == r[i] / d;
		if (pos != li)
			continue;
		if (r[i] == r[me])
			si = m;
		inter[m++] = r[i];
	}
	double across = bytes / n_intra;
	switch (kind) {
	case STEP_ALLREDUCE:
		ring(ops, t, fid, intra, n_intra, li, 1, bytes / n_intra);
		ring(ops, t, fid, inter, m, si, 2, across / m);
		ring(ops, t, fid, intra, n_intra, li, 1, bytes / n_intra);
		break;
	case STEP_ALLGATHER:
		ring(ops, t, fid, inter, m, si, 1, across / m);
		ring(ops, t, fid, intra, n_intra, li, 1, bytes / n_intra);
		break;
	default: /* ReduceScatter */
		ring(ops, t, fid, intra, n_intra, li, 1, bytes / n_intra);
		ring(ops, t, fid, inter, m, si, 1, across / m);
		break;
	}
}

/* SIM_EP_HYBRID (sim-int.h): members in blocks of c a server, m servers. */
static void ep_hybrid(struct sim_ops *ops, const struct topology *t, const int64_t *r, int n,
                      int me, double bytes, const struct cost_ep_route *ep)
{
	int c;
	double share;
	if (!cost_ep_hybrid_shape(t, r, n, ep, &c, &share)) {
		pairwise(ops, r, n, me, bytes / n, true);
		return;
	}
	int m = n / c, server = me / c, li = me % c;
	for (int s = 1; s < m; s++) {
		push(ops, SIM_OP_SEND, r[(server + s) % m * c + li], share * bytes);
		push(ops, SIM_OP_RECV, r[(server + m - s) % m * c + li], 0);
	}
	for (int k = 1; k < c; k++) {
		push(ops, SIM_OP_SEND, r[server * c + (li + k) % c], bytes / c);
		push(ops, SIM_OP_RECV, r[server * c + (li + c - k) % c], 0);
	}
	push(ops, SIM_OP_WAIT, -1, 0);
}

void sim_coll_ops(struct sim_ops *ops, const struct topology *t, const struct prog_step *st,
                  enum collective_algo algo, enum sim_fidelity fid, const int64_t *ranks, int n,
                  int me)
{
	enum step_kind kind = st->coll;
	double bytes = st->bytes;
	ops->n = 0;
	if (n <= 1)
		return;
	if (algo == SIM_EP_HYBRID) {
		/* its own kernels, not the library's protocols */
		ep_hybrid(ops, t, ranks, n, me, bytes, &st->ep);
		return;
	}
	if (t->coll.library == TOPO_COLL_NCCL && algo != SIM_HD_ONE_LINK) {
		/* the library's protocol: its latency first, its bytes on the wire */
		struct sim_wire_memo *w = &ops->wire_memo;
		if (!w->valid || w->kind != (int)kind || w->algo != (int)algo || w->n != n ||
		    w->bytes != bytes || w->first != ranks[0] || w->last != ranks[n - 1]) {
			w->valid = true;
			w->kind = (int)kind;
			w->algo = (int)algo;
			w->n = n;
			w->bytes = bytes;
			w->first = ranks[0];
			w->last = ranks[n - 1];
			cost_collective_wire(t, kind, algo, ranks, n, bytes, &w->wire, &w->extra_s);
		}
		if (w->extra_s > 0)
			push(ops, SIM_OP_SLEEP, -1, w->extra_s);
		bytes *= w->wire;
	}
	int c = 0;
	if (algo == COLL_TREE && rails(ops, t, kind, ranks, n, &c)) {
		nccl_tree(ops, ranks, n, c, me, bytes);
		return;
	}
	if (algo == COLL_RING && rails(ops, t, kind, ranks, n, &c) && c > 1) {
		rails_ring(ops, t, fid, ranks, n, c, me, kind == STEP_ALLREDUCE ? 2 : 1, bytes / n);
		return;
	}
	if (algo == COLL_NVLS && (c = cost_nvls_channels(t, kind, ranks, n)) > 0) {
		nvls(ops, kind, ranks, n, c, me, bytes);
		return;
	}
	if (algo == COLL_PIPELINE && (c = cost_pipeline_members(t, kind, ranks, n)) > 0) {
		pipeline(ops, kind, ranks, n, c, me, bytes);
		return;
	}
	if (algo == SIM_HD_ONE_LINK) {
		hd_one_link(ops, t, ranks, n, me, bytes);
		if (kind == STEP_ALLREDUCE)
			hd_one_link(ops, t, ranks, n, me, bytes);
		return;
	}
	switch (algo) {
	case COLL_TREE:
		tree_allreduce(ops, ranks, n, me, bytes);
		return;
	case COLL_HALVING_DOUBLING:
		if (kind != STEP_ALLGATHER)
			halving(ops, ranks, n, me, bytes);
		if (kind != STEP_REDUCESCATTER)
			doubling(ops, ranks, n, me, bytes);
		return;
	case COLL_HIERARCHICAL:
		if (sim_ops_reserve(ops, n))
			hierarchical(ops, t, kind, fid, ranks, n, me, bytes);
		return;
	case COLL_DIRECT:
		pairwise(ops, ranks, n, me, bytes / n, true);
		if (kind == STEP_ALLREDUCE)
			pairwise(ops, ranks, n, me, bytes / n, true);
		return;
	default:
		if (kind == STEP_ALLTOALL)
			pairwise(ops, ranks, n, me, bytes / n, false);
		else
			ring(ops, t, fid, ranks, n, me, kind == STEP_ALLREDUCE ? 2 : 1, bytes / n);
		return;
	}
}
