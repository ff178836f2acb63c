/* collectives.c — the symbolic cost of collectives on a topology.
 *
 * Collectives follow the α–β formulas of their ring algorithms (nccl-tests
 * conventions, docs/planner.md "Communication"), for a group of n ranks and
 * a message of S bytes:
 *   AllReduce                  2(n-1)/n · S/B + 2(n-1)α
 *   AllGather, ReduceScatter   (n-1)/n · S/B + (n-1)α    (S: the whole gathered tensor)
 *   AllToAll                   (n-1)/n · S/B + (n-1)α
 * B and α come from the links the group's ranks cross. Inside one server:
 * the innermost tier holding all of them in one group (a mesh link's or a
 * switch port's bandwidth, capped by the tier's shared bandwidth divided
 * among the n senders). Across servers the hierarchical form: intra-server
 * reduce-scatter, inter-server all-reduce of S/n_intra over the NICs,
 * intra-server all-gather (and the matching halves for AllGather and
 * ReduceScatter); the inter-server bandwidth is the path's bottleneck
 * (oversubscription included), shared when more of a server's ranks send at
 * once than it has NICs.
 *
 * That is cost_collective_s. The algorithms the simulator runs (ring,
 * hierarchical, halving-doubling, binomial tree, direct all-to-all) each
 * have a line too (cost_algo_lines_of; halving-doubling and the tree
 * price each step on the link its pairs use), and cost_choose_algo's
 * rule picks among them per group and message (docs/simulation.md ("Algorithms")).
 *
 * Units: bytes, bytes/s, seconds. Hot path: cost_step_s is called
 * per collective of a plan; it walks each group once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost-int.h"

/* Bandwidth and latency of one level a group crosses. */
struct link {
	double bps, alpha_s;
};

/* The slower of two links: least bandwidth, largest latency. */
static struct link link_worst(struct link a, struct link b)
{
	return (struct link){a.bps < b.bps ? a.bps : b.bps,
	                     a.alpha_s > b.alpha_s ? a.alpha_s : b.alpha_s};
}

/* Under faults (topologies.h) the ring's slowest hop sets its pace: the
 * route of each member to the next (a degraded link's rate, or the NICs
 * where the link is down). */
static struct link faulted_ring(const struct topology *t, const int64_t *ranks, int n)
{
	struct link l = {INFINITY, 0};
	for (int i = 0; i < n; i++) {
		double bps, lat;
		if (topo_route(t, ranks[i], ranks[(i + 1) % n], &bps, &lat))
			l = link_worst(l, (struct link){bps, lat});
	}
	return l;
}

/* The link a ring over these ranks of one server runs on. */
static struct link intra_link(const struct topology *t, const int64_t *on_server, int n)
{
	int k = topo_group_tier(t, on_server, n);
	if (k < 0) {
		/* No tier joins them all (the loader guarantees pairs, not
		 * groups): take the outermost tier. */
		k = t->n_tiers - 1;
	}
	const struct topo_tier *tier = &t->tiers[k];
	struct link l = {tier->bandwidth_bps, tier->latency_s};
	if (tier->shared_bps > 0 && tier->shared_bps / n < l.bps)
		l.bps = tier->shared_bps / n;
	if (t->faults)
		l = link_worst(l, faulted_ring(t, on_server, n));
	return l;
}

/* The worst path the two-level fabric has (topologies.h): a NIC at each
 * end and leaf, spine, leaf between; the spine's bandwidth divided by the
 * oversubscription. No path is slower: the scan below stops at one that
 * reaches it. */
static struct link worst_fabric_link(const struct topology *t)
{
	double bps = t->nic.bandwidth_bps, over = t->fabric.oversubscription;
	struct link l = {over > 1 ? bps / over : bps,
	                 2 * t->nic.latency_s + 3 * t->fabric.switch_latency_s};
	return l;
}

/* The route between servers for a group spanning them: the worst path
 * from the group's first rank to the other servers' ranks. */
static struct link inter_route(const struct topology *t, const int64_t *ranks, int n)
{
	struct link l = {INFINITY, 0}, worst = worst_fabric_link(t);
	int64_t d = t->devices_per_server;
	for (int i = 1; i < n; i++) {
		if (ranks[i] / d == ranks[0] / d)
			continue;
		double bps, lat;
		if (!topo_route(t, ranks[0], ranks[i], &bps, &lat))
			continue;
		if (bps < l.bps)
			l.bps = bps;
		if (lat > l.alpha_s)
			l.alpha_s = lat;
		if (!t->faults && l.bps <= worst.bps * (1 + 1e-12) &&
		    l.alpha_s >= worst.alpha_s * (1 - 1e-12))
			break;
	}
	return l;
}

/* The link between servers: the route, its NIC shared when more ranks of
 * a server send at once (n_intra) than it has NICs. */
static struct link inter_link(const struct topology *t, struct link route, int n_intra)
{
	if (n_intra > t->nic.per_server) {
		double share = t->nic.bandwidth_bps * t->nic.per_server / n_intra;
		if (share < route.bps)
			route.bps = share;
	}
	return route;
}

/* A collective's time is linear in its message: fixed_s + per_byte_s x S. */
static struct cost_line line_add(struct cost_line a, struct cost_line b, double scale_b)
{
	return (struct cost_line){a.fixed_s + b.fixed_s, a.per_byte_s + b.per_byte_s * scale_b};
}

/* The flat ring formulas as lines in S. */
static struct cost_line ring_line(enum step_kind kind, int n, struct link l)
{
	struct cost_line none = {0, 0};
	if (n <= 1)
		return none;
	double f = (double)(n - 1) / n;
	switch (kind) {
	case STEP_ALLREDUCE:
		return (struct cost_line){2 * (n - 1) * l.alpha_s, 2 * f / l.bps};
	case STEP_ALLGATHER:
	case STEP_REDUCESCATTER:
	case STEP_ALLTOALL:
		return (struct cost_line){(n - 1) * l.alpha_s, f / l.bps};
	default:
		return none;
	}
}

static bool power_of_two(int n)
{
	return n >= 1 && (n & (n - 1)) == 0;
}


/* Where a group sits: its ranks on its first server (up to
 * SL_COUNTOF(on_server)), and how many servers it spans; with the scratch
 * its costing uses, so that costing many groups allocates once
 * (shape_new). */
struct group_shape {
	int64_t on_server[4096];
	int pos[4096];                     /* their positions in the group */
	int pairs[2 * (4096 + 1)];         /* a log-depth step's pairs (hd_line, tree_line) */
	uint64_t *servers;                 /* a bitmap over the topology's servers */
	size_t server_words;
	int n_intra, m;
	int per_server;                    /* the ranks of its first run on one server ... */
	bool blocks;                       /* ... and whether every run on a server is that long
	                                      (topo_server_blocks) */
	struct link route;                 /* inter_route, when m > 1 */
	int concurrent;                    /* groups of the step crossing the same servers' NICs
	                                      at once (1: the group alone) */
};

static struct group_shape *shape_new(const struct topology *t)
{
	struct group_shape *gs = malloc(sizeof(*gs));
	size_t words = ((size_t)t->servers + 63) / 64;
	if (gs) {
		gs->server_words = words ? words : 1;
		gs->servers = malloc(gs->server_words * sizeof(*gs->servers));
	}
	if (gs && !gs->servers) {
		free(gs);
		gs = NULL;
	}
	return gs;
}

static void shape_free(struct group_shape *gs)
{
	if (gs)
		free(gs->servers);
	free(gs);
}

static void group_shape(const struct topology *t, const int64_t *ranks, int n,
                        struct group_shape *gs)
{
	int64_t d = t->devices_per_server;
	/* A bitmap over the servers: a group may hold thousands of ranks. */
	uint64_t *seen = gs->servers;
	memset(seen, 0, gs->server_words * sizeof(*seen));
	gs->n_intra = gs->m = 0;
	gs->per_server = 0;
	gs->blocks = true;
	int64_t first = n > 0 ? ranks[0] / d : 0, prev = first;
	int run = 0;
	for (int i = 0; i < n; i++) {
		int64_t s = ranks[i] / d;
		if (s == first && gs->n_intra < (int)SL_COUNTOF(gs->on_server)) {
			gs->pos[gs->n_intra] = i;
			gs->on_server[gs->n_intra++] = ranks[i];
		}
		if (!(seen[s / 64] & (UINT64_C(1) << (s % 64)))) {
			seen[s / 64] |= UINT64_C(1) << (s % 64);
			gs->m++;
		}
		/* runs of ranks on one server, the first run's length the block */
		if (i > 0 && s != prev) {
			if (gs->per_server == 0)
				gs->per_server = run;
			else if (run != gs->per_server)
				gs->blocks = false;
			run = 0;
		}
		run++;
		prev = s;
	}
	if (gs->per_server == 0)
		gs->per_server = run;
	else if (run != gs->per_server)
		gs->blocks = false;
	gs->route = gs->m > 1 ? inter_route(t, ranks, n) : (struct link){INFINITY, 0};
}

/* The link of one step of a log-depth algorithm: the slowest pair of the
 * step (least bandwidth, largest latency). The pairs sent from the first
 * server stand for every server's (a group's servers hold the same
 * pattern of ranks). A pair inside a server uses the tier joining the two
 * (its shared cap divided among the step's senders); a pair across
 * servers the inter-server link `inter`. pairs[k] = {from, to}, member
 * positions. */
static struct link step_link(const struct topology *t, const int64_t *ranks, const int (*pairs)[2],
                             int n_pairs, struct link inter)
{
	struct link l = {INFINITY, 0};
	int senders = n_pairs;
	for (int k = 0; k < n_pairs; k++) {
		int tier = topo_tier_between(t, ranks[pairs[k][0]], ranks[pairs[k][1]]);
		struct link x = inter;
		if (tier == TOPO_SELF)
			continue;
		if (tier >= 0) {
			const struct topo_tier *tr = &t->tiers[tier];
			x = (struct link){tr->bandwidth_bps, tr->latency_s};
			if (t->faults) /* the pair's degraded link */
				topo_route(t, ranks[pairs[k][0]], ranks[pairs[k][1]], &x.bps, &x.alpha_s);
			if (tr->shared_bps > 0 && senders > 0 && tr->shared_bps / senders < x.bps)
				x.bps = tr->shared_bps / senders;
		}
		l = link_worst(l, x);
	}
	return l.bps < INFINITY ? l : (struct link){1, 0};
}

/* Recursive halving-doubling (n a power of two), as the simulator runs
 * it: the reduce-scatter exchanges S·d/n with the member at distance d =
 * n/2, n/4, .., 1; the all-gather mirrors it; all-reduce is both. Each
 * step on its own link (step_link); every member crosses at once, so the
 * NICs are shared (`inter` carries that). */
static struct cost_line hd_line(const struct topology *t, enum step_kind kind,
                                const int64_t *ranks, int n, const struct group_shape *gs,
                                struct link inter, int *pairs_buf)
{
	struct cost_line one = {0, 0};
	int (*pairs)[2] = (int (*)[2])pairs_buf;
	for (int d = n / 2; d >= 1; d /= 2) {
		for (int k = 0; k < gs->n_intra; k++) {
			pairs[k][0] = gs->pos[k];
			pairs[k][1] = gs->pos[k] ^ d;
		}
		struct link l = step_link(t, ranks, (const int (*)[2])pairs, gs->n_intra, inter);
		one = line_add(one, (struct cost_line){l.alpha_s, (double)d / n / l.bps}, 1);
	}
	return kind == STEP_ALLREDUCE ? line_add(one, one, 1) : one;
}

/* Binomial tree all-reduce: a reduce to member 0 (round k: member i +
 * 2^k sends to i, i a multiple of 2^(k+1)) then the broadcast back, the
 * whole message every round, each round on its own link. */
static struct cost_line tree_line(const struct topology *t, const int64_t *ranks, int n,
                                  const struct group_shape *gs, struct link inter, int *pairs_buf)
{
	struct cost_line up = {0, 0};
	int (*pairs)[2] = (int (*)[2])pairs_buf;
	for (int d = 1; d < n; d *= 2) {
		int np = 0;
		for (int k = 0; k < gs->n_intra; k++) {
			int i = gs->pos[k];
			if (i % (2 * d) == d) {
				pairs[np][0] = i;
				pairs[np++][1] = i - d;
			}
		}
		if (np == 0) {
			/* No sender on the first server this round: the round's
			 * first pair stands for it. */
			pairs[0][0] = d;
			pairs[0][1] = 0;
			np = 1;
		}
		struct link l = step_link(t, ranks, (const int (*)[2])pairs, np, inter);
		up = line_add(up, (struct cost_line){l.alpha_s, 1 / l.bps}, 1);
	}
	return line_add(up, up, 1);
}

/* The hierarchical form for a group spanning m servers with n_intra ranks
 * on each: inside over `intra`, across over `inter` on S/n_intra. */
static struct cost_line hier_line(enum step_kind kind, int n, int n_intra, int m,
                                  struct link intra, struct link inter)
{
	switch (kind) {
	case STEP_ALLREDUCE: {
		/* reduce-scatter inside, all-reduce of S/n_intra across, all-gather inside */
		struct cost_line rs = ring_line(STEP_REDUCESCATTER, n_intra, intra);
		return line_add(line_add(rs, rs, 1), ring_line(STEP_ALLREDUCE, m, inter),
		                1.0 / n_intra);
	}
	case STEP_ALLGATHER:
	case STEP_REDUCESCATTER:
		/* across servers on S/n_intra, then inside on S (or the mirror) */
		return line_add(ring_line(kind, n_intra, intra), ring_line(kind, m, inter),
		                1.0 / n_intra);
	default:
		/* AllToAll: what leaves the server goes over the NICs, the rest
		 * over the server's tier; (n-1) exchanges of the slowest latency. */
		return (struct cost_line){(n - 1) * inter.alpha_s,
		                          (double)(n - n_intra) / n / inter.bps +
		                                  (double)(n_intra - 1) / n / intra.bps};
	}
}

int cost_pipeline_members(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                          int n)
{
	int c;
	if (t->coll.library != TOPO_COLL_HCCL || !t->coll.pipeline || n < 4)
		return 0;
	if (kind != STEP_ALLREDUCE && kind != STEP_ALLGATHER && kind != STEP_REDUCESCATTER)
		return 0;
	if (!topo_server_blocks(t, ranks, n, &c) || c < 2 || c == n)
		return 0;
	return topo_group_tier(t, ranks, c) >= 0 ? c : 0;
}

/* HCCL's pipeline across m servers of c members (its "Pipeline" algorithm,
 * CANN's HCCL user guide; Atlas A2): an all-gather runs the servers' ring
 * among the members of one place (m-1 steps of a block of S/n each) and,
 * at each step, passes the block the member received the step before to
 * the others of its server, so the links inside and across carry at once;
 * one step inside is left after the ring's last. Each step takes the
 * slower of its two transfers: here the slower link's latency and
 * bandwidth, (m-1) x max(across, inside) + inside. A reduce-scatter is its
 * mirror, an all-reduce both. Inside: on a mesh each peer's block on a
 * link of its own; through a switch the c-1 blocks share the port. */
static struct cost_line pipeline_line(const struct topology *t, enum step_kind kind, int n, int c,
                                      const struct group_shape *gs)
{
	int m = n / c;
	double block = 1.0 / n;
	struct link in = intra_link(t, gs->on_server, c);
	struct link across = inter_link(t, gs->route, c * gs->concurrent);
	bool mesh = topo_group_in_mesh(t, gs->on_server, c);
	struct cost_line inside = {in.alpha_s, (mesh ? 1 : c - 1) * block / in.bps};
	struct cost_line both = {fmax(inside.fixed_s, across.alpha_s),
	                         fmax(inside.per_byte_s, block / across.bps)};
	struct cost_line phase = {inside.fixed_s + (m - 1) * both.fixed_s,
	                          inside.per_byte_s + (m - 1) * both.per_byte_s};
	return kind == STEP_ALLREDUCE ? line_add(phase, phase, 1) : phase;
}

/* Direct: every rank sends its n-1 pieces of S/n at once, so the
 * latencies overlap (one α) and the pieces share what leaves the rank:
 * its switch port, or the worst link across servers ((n-1)/n·S/B); in a
 * mesh each piece has a link of its own (S/n/B). All-to-all anywhere;
 * all-gather and reduce-scatter (each piece a member's shard) and
 * all-reduce (reduce-scatter then all-gather) in a mesh only, as HCCL
 * runs them on a full mesh: on a switch they would gain nothing over the
 * ring but its latencies. */
static struct cost_line direct_line(enum step_kind kind, int n, bool mesh, struct link l)
{
	struct cost_line one = {l.alpha_s, (mesh ? 1.0 : (double)(n - 1)) / n / l.bps};
	return kind == STEP_ALLREDUCE ? line_add(one, one, 1) : one;
}

/* A direct AllToAll over m servers of n_intra members each: every pair at
 * once, each on its own route, so the S/n pieces for the server's other
 * members go over its tier while those for other servers go over the NICs
 * (shared by the members sending together, `inter`): the slower of the
 * two legs, (n - n_intra)/n x S across and (n_intra - 1)/n x S inside (in
 * a mesh tier each piece on a link of its own: S/n). */
static struct cost_line direct_split_line(int n, int n_intra, bool mesh, struct link intra,
                                          struct link inter)
{
	double across = (double)(n - n_intra) / n / inter.bps;
	double inside = (mesh ? 1.0 : (double)(n_intra - 1)) / n / intra.bps;
	return (struct cost_line){intra.alpha_s > inter.alpha_s ? intra.alpha_s : inter.alpha_s,
	                          across > inside ? across : inside};
}

/* ------------------------------------------------------------- NCCL
 *
 * NCCL's tuning model (NVIDIA/nccl src/graph/tuning.cc of v2.8.3-1, commit
 * 920dbe5; docs/cost-models.md, "Collective libraries"): an
 * algorithm's time with protocol p is its latency, base[a][p] plus a
 * per-hop latency for each step inside a server (by the link class) and
 * across servers, plus S over its bandwidth, the link's scaled by the
 * protocol's efficiency; the library takes the least over algorithms and
 * protocols. Bandwidths here are the topology's (the physical line); the
 * latencies, efficiencies, the tree's cap and the size corrections are
 * NCCL's. Microseconds. */

enum { NCCL_HW_NVLINK, NCCL_HW_PCI, NCCL_HW_NET };
enum { NCCL_TREE, NCCL_RING };

const char *const cost_proto_names[COST_PROTO_COUNT] = {"LL", "LL128", "Simple"};

/* baseLat[algorithm][protocol], protocols LL, LL128, Simple */
static const double nccl_base_us[2][COST_PROTO_COUNT] = {{4.4, 4.4, 0}, {3.6, 10.0, 8.4}};
/* hwLat[hardware][algorithm][protocol]; Tree/Simple is a 256 kB chunk's latency */
static const double nccl_hop_us[3][2][COST_PROTO_COUNT] = {
        {{.52, 1.25, 28}, {.47, 1.9, 3.4}}, /* NVLink */
        {{1.0, 1.9, 28}, {1.0, 2.5, 5.7}},  /* PCI */
        {{5.0, 8.5, 28}, {2.7, 4.0, 9.6}}}; /* network */
/* the tree's efficiency on its links (busBw * .92) */
#define NCCL_TREE_EFF 0.92
/* treeCorrectionFactor[protocol][floor(log2(S / 64))], S below 512 MiB
 * (v2.8.3-1; 2.7.5's table stopped at 256 MiB and was lower from 2 to
 * 32 MiB with Simple) */
#define NCCL_TREE_CORR_SIZES 23
static const double nccl_tree_corr[COST_PROTO_COUNT][NCCL_TREE_CORR_SIZES] = {
        {1.0, 1.0, 1.0, 1.0, .9, .8, .7, .7, .7, .7, .6, .5, .4, .4, .5, .6, .7, .8, .9, 1.0, 1.0,
         1.0, 1.0},
        {1.0, 1.0, 1.0, 1.0, 1.0, .9, .8, .8, .8, .7, .6, .6, .6, .5, .6, .6, .7, .7, .8, .9, .9,
         .92, .92},
        {.9, .9, .9, .9, .9, .9, .9, .8, .7, .6, .6, .5, .5, .5, .5, .6, .7, .8, .7, .7, .8, .9,
         .9}};

static int log2_floor(double x)
{
	int k = 0;
	while (x >= 2 && k < 62) {
		x /= 2;
		k++;
	}
	return k;
}

/* hwLat[hw][algo][p]: NCCL's own (`calibrated` false: what its choice
 * reads), or the topology's calibrated figure where one is set (what the
 * time reads). */
static double hop_us(const struct topology *t, int hw, int algo, int p, bool calibrated)
{
	if (calibrated && (t->coll.hop_set & TOPO_NCCL_HOP_BIT(hw, algo, p)))
		return t->coll.hop_us[hw][algo][p];
	return nccl_hop_us[hw][algo][p];
}

double cost_nccl_hop_us(const struct topology *t, int hw, int algo, int proto)
{
	return hop_us(t, hw, algo, proto, true);
}

/* The ring's latency with protocol p over `steps` steps, `inter_steps` of
 * them across servers (m servers), us. */
static double ring_lat_us(const struct topology *t, int hw_in, int p, int m, int steps,
                          int inter_steps, bool calibrated)
{
	double in_us = hop_us(t, hw_in, NCCL_RING, p, calibrated) *
	               (m > 1 && p == COST_PROTO_LL ? 1.8 : 1);
	return nccl_base_us[NCCL_RING][p] + (steps - inter_steps) * in_us +
	       inter_steps * hop_us(t, NCCL_HW_NET, NCCL_RING, p, calibrated);
}

/* The tree's latency with protocol p: up and down a chain of ppn members
 * in each server and log2(m) levels between m servers, us. */
static double tree_lat_us(const struct topology *t, int hw_in, int p, int ppn, int m,
                          bool calibrated)
{
	double in_us = hop_us(t, hw_in, NCCL_TREE, p, calibrated) * (p == COST_PROTO_LL ? 1.8 : 1);
	double net_us = hop_us(t, NCCL_HW_NET, NCCL_TREE, p, calibrated);
	return nccl_base_us[NCCL_TREE][p] + 2 * ((ppn - 1) * in_us + log2_floor(m) * net_us);
}

/* The rails a group spanning servers uses, NCCL's channels: one per local
 * member, each crossing between servers on its member's NIC share (R
 * rings, or trees, of S/R each). The part of a member's traffic that
 * stays inside (R-1)/R, the part on its NIC 1/R: bytes per second of the
 * whole message, as the ring's S/B. */
static double rails_per_byte(double intra_share, double nic_share, struct link intra,
                             struct link nic, int r)
{
	double a = intra_share * (r - 1) / r / intra.bps, b = nic_share / r / nic.bps;
	return a > b ? a : b;
}

int cost_nvls_channels(const struct topology *t, enum step_kind kind, const int64_t *ranks, int n)
{
	int c;
	if (!t->coll.nvls || t->coll.library != TOPO_COLL_NCCL || n < 3)
		return 0;
	if (kind != STEP_ALLREDUCE && kind != STEP_ALLGATHER && kind != STEP_REDUCESCATTER)
		return 0;
	/* NCCL leaves NVLS off with 2 GPUs or fewer a server (ncclNvlsInit) */
	if (!topo_server_blocks(t, ranks, n, &c) || c < 3)
		return 0;
	if (c < n && kind != STEP_ALLREDUCE)
		return 0; /* across servers only the NVLS tree, an all-reduce */
	int k = topo_group_tier(t, ranks, c);
	return k >= 0 && t->tiers[k].kind == TOPO_TIER_SWITCH ? c : 0;
}

/* NVLS, NCCL's algorithms on a switch that reduces (NVLink SHARP: NVLS
 * from NCCL 2.17, the NVLS tree from 2.18; the constants of v2.19.3-1). The c members a group has on a
 * server are c channels, each the head of S/c: the switch sums the
 * members' shares into it (multimem ld_reduce) and writes the sum to all
 * of them (multimem st). NCCL's search gives each channel bw = B/(c+1) of a
 * member's port B (each channel crosses every port once, its head's twice),
 * at most sm90's top channel speed (60 GB/s in a server, 48 with NICs);
 * the bus bandwidth c x bw counts 5/6 of it as algorithm bandwidth, for
 * each collective NVLS runs; latency 23 us (hwLat, NVLink). Across m
 * servers, the NVLS tree (all-reduce): the heads run a tree between
 * servers on their NICs, bw at most a head's NIC share (half of it on
 * more than two servers), latency 23 us + 2 log2(m) x 14 us (hwLat, net).
 * The physical line is what the simulator runs: every member sending its
 * share (both halves of an all-reduce) to each other member of its server
 * at once, and across servers each head S/c to its neighbours'. */
static void nvls_lines(const struct topology *t, enum step_kind kind, int n, int c,
                       const struct group_shape *gs, struct link intra, struct cost_algo_lines *out)
{
	int m = n / c;
	double f = (kind == STEP_ALLREDUCE ? 2.0 : 1.0) * (c - 1) / c;
	double bw = fmin(intra.bps / (c + 1), m > 1 ? 48e9 : 60e9);
	struct cost_line phys = {intra.alpha_s, f / intra.bps};
	double lat_us = 23;
	if (m > 1) {
		struct link nic = inter_link(t, gs->route, c * gs->concurrent);
		double k = m > 2 ? 2 : 1;
		phys.fixed_s += gs->route.alpha_s;
		phys.per_byte_s = fmax(phys.per_byte_s, k / c / nic.bps);
		bw = fmin(bw, nic.bps / k);
		lat_us += 2 * log2_floor(m) * 14;
	}
	out->applicable |= 1u << COLL_NVLS;
	out->line[COLL_NVLS] = phys;
	out->protos[COLL_NVLS] = 1u << COST_PROTO_SIMPLE;
	out->proto[COLL_NVLS][COST_PROTO_SIMPLE] =
	        (struct cost_line){phys.fixed_s + lat_us * 1e-6, 1 / (5.0 / 6 * c * bw)};
}

static void nccl_lines(const struct topology *t, enum step_kind kind, const int64_t *ranks, int n,
                       const struct group_shape *gs, struct link intra, struct cost_algo_lines *out)
{
	int m = gs->m;
	int ppn = gs->per_server;
	bool even = gs->blocks && ppn * m == n;
	bool ar = kind == STEP_ALLREDUCE, ag_rs = kind == STEP_ALLGATHER || kind == STEP_REDUCESCATTER;
	out->applicable = 1u << COLL_RING;
	if (kind == STEP_ALLTOALL)
		out->applicable |= 1u << COLL_DIRECT; /* grouped send/receive, every pair at once */
	if (!ar && !ag_rs)
		return;
	int c = cost_nvls_channels(t, kind, ranks, n);
	if (c > 0)
		nvls_lines(t, kind, n, c, gs, intra, out);
	double f = ar ? 2.0 * (n - 1) / n : (double)(n - 1) / n;
	/* NCCL's cap on LL's bus bandwidth, by servers: 1, 2, more */
	double ll_cap = t->coll.ll_max_busbw_bps[m > 2 ? 2 : m > 1 ? 1 : 0];
	/* Physical: rings over the rails when the group spans servers with
	 * several members on each; NCCL's tree for all-reduce across servers
	 * (a chain inside each, a double binary tree between them, pipelined:
	 * the busiest link sets the pace). */
	struct link nic = {0, 0};
	if (m > 1 && even) {
		nic = inter_link(t, gs->route, ppn * gs->concurrent);
		if (ppn > 1)
			out->line[COLL_RING].per_byte_s = f * rails_per_byte(1, 1, intra, nic, ppn);
		if (ar) {
			out->applicable |= 1u << COLL_TREE;
			/* per rail: each server sends and receives S/R (two servers) or
			 * 2S/R (more) over its NICs; inside, the chain carries S/R up
			 * and S/R down through every member but its ends */
			double k = m == 2 ? 1 : 2;
			struct link across = inter_link(t, gs->route, gs->concurrent);
			out->line[COLL_TREE] = (struct cost_line){
			        across.alpha_s + (ppn > 1 ? intra.alpha_s : 0),
			        ppn > 1 ? rails_per_byte(2, k, intra, nic, ppn) : k / nic.bps};
		}
	}
	int hw_in = t->coll.intra == TOPO_LINK_PCI ? NCCL_HW_PCI : NCCL_HW_NVLINK;
	/* ring */
	int steps = ar ? 2 * (n - 1) : n - 1, inter_steps = m > 1 ? (ar ? 2 * (m - 1) : m - 1) : 0;
	for (int p = 0; p < COST_PROTO_COUNT; p++) {
		double lat_us = ring_lat_us(t, hw_in, p, m, steps, inter_steps, false);
		double bw = 1, floor = 0;
		if (p == COST_PROTO_LL) {
			bw = m > 1 || ar ? 1.0 / 4 : 1.0 / 3;
			if (ll_cap > 0) /* bus bandwidth at most the cap: S x f / cap */
				floor = f / ll_cap;
		} else if (p == COST_PROTO_LL128) {
			/* on NVLink inside one server only: NCCL runs it across
			 * servers too, under a per-channel cap this model cannot
			 * price without NCCL's channel count (docs/cost-models.md) */
			if (m > 1 || hw_in != NCCL_HW_NVLINK)
				continue;
			bw = (double)n / m < 2 ? 0.7 : 0.92;
		}
		out->protos[COLL_RING] |= (unsigned char)(1u << p);
		out->proto[COLL_RING][p] = (struct cost_line){
		        out->line[COLL_RING].fixed_s + lat_us * 1e-6,
		        fmax(out->line[COLL_RING].per_byte_s / bw, floor)};
		out->cal_s[COLL_RING][p] =
		        (ring_lat_us(t, hw_in, p, m, steps, inter_steps, true) - lat_us) * 1e-6;
	}
	if (ar && m > 1)
		out->plateau_bytes = n / 16.0 * 65536;
	/* tree */
	if (!(out->applicable & (1u << COLL_TREE)))
		return;
	double cap = t->coll.tree_max_busbw_bps[m > 2];
	double simple = out->line[COLL_TREE].per_byte_s / NCCL_TREE_EFF;
	if (cap > 0 && 2 / cap > simple)
		simple = 2 / cap; /* the tree's algorithm bandwidth is half its bus bandwidth */
	for (int p = 0; p < COST_PROTO_COUNT; p++) {
		if (p == COST_PROTO_LL128)
			continue; /* across servers: left out, as for the ring */
		double lat_us = tree_lat_us(t, hw_in, p, ppn, m, false);
		out->cal_s[COLL_TREE][p] = (tree_lat_us(t, hw_in, p, ppn, m, true) - lat_us) * 1e-6;
		out->protos[COLL_TREE] |= (unsigned char)(1u << p);
		double per_byte = simple;
		if (p == COST_PROTO_LL) /* bus bandwidth / 3.8, at most the LL cap */
			per_byte = fmax(simple * 3.8, ll_cap > 0 ? 2 / ll_cap : 0);
		out->proto[COLL_TREE][p] = (struct cost_line){
		        out->line[COLL_TREE].fixed_s + lat_us * 1e-6, per_byte};
	}
}

/* Algorithm a's line with protocol p at S bytes, NCCL's size corrections
 * applied; its latency NCCL's own (`calibrated` false) or the topology's
 * calibrated one. */
static struct cost_line proto_at(const struct cost_algo_lines *l, enum collective_algo a, int p,
                                 double bytes, bool calibrated)
{
	struct cost_line x = l->proto[a][p];
	if (calibrated)
		x.fixed_s += l->cal_s[a][p];
	if (a == COLL_RING && p == COST_PROTO_SIMPLE && l->plateau_bytes > 0 &&
	    bytes >= l->plateau_bytes) /* NCCL's "plateau effect of ring": its latency x1.9 */
		x.fixed_s = l->line[a].fixed_s + 1.9 * (x.fixed_s - l->line[a].fixed_s);
	int lg = log2_floor(bytes / 64);
	if (a == COLL_TREE && lg < NCCL_TREE_CORR_SIZES)
		x.per_byte_s /= nccl_tree_corr[p][lg];
	return x;
}

/* Algorithm a at S bytes: the protocol NCCL picks, by its own constants
 * (into *proto), and that protocol's time, NCCL's (`calibrated` false: what
 * the choice among algorithms compares) or the calibrated one. */
static double algo_time(const struct cost_algo_lines *l, enum collective_algo a, double bytes,
                        int *proto, bool calibrated)
{
	if (proto)
		*proto = -1;
	if (bytes <= 0)
		return 0;
	if (!l->protos[a])
		return l->line[a].fixed_s + l->line[a].per_byte_s * bytes;
	double best = INFINITY;
	int best_p = -1;
	for (int p = 0; p < COST_PROTO_COUNT; p++) {
		if (!(l->protos[a] & (1u << p)))
			continue;
		struct cost_line x = proto_at(l, a, p, bytes, false);
		double s = x.fixed_s + x.per_byte_s * bytes;
		if (s < best * (1 - 1e-12)) {
			best = s;
			best_p = p;
		}
	}
	if (proto)
		*proto = best_p;
	if (calibrated && best_p >= 0) {
		struct cost_line x = proto_at(l, a, best_p, bytes, true);
		best = x.fixed_s + x.per_byte_s * bytes;
	}
	return best;
}

double cost_algo_time(const struct cost_algo_lines *l, enum collective_algo a, double bytes,
                      int *proto)
{
	return algo_time(l, a, bytes, proto, true);
}

bool cost_collective_wire(const struct topology *t, enum step_kind kind, enum collective_algo algo,
                          const int64_t *ranks, int n, double bytes, double *wire, double *extra_s)
{
	*wire = 1;
	*extra_s = 0;
	if (t->coll.library != TOPO_COLL_NCCL || n <= 1 || bytes <= 0)
		return false;
	struct cost_algo_lines l;
	cost_algo_lines_of(t, kind, ranks, n, &l);
	int p;
	if (algo == COLL_AUTO || !l.protos[algo])
		return false;
	cost_algo_time(&l, algo, bytes, &p);
	if (p < 0)
		return false;
	struct cost_line x = proto_at(&l, algo, p, bytes, true), phys = l.line[algo];
	*wire = phys.per_byte_s > 0 ? x.per_byte_s / phys.per_byte_s : 1;
	*extra_s = x.fixed_s - phys.fixed_s;
	return true;
}

/* Every algorithm's line for one group. An algorithm that does not apply
 * (its bit clear) gets the ring's line, so that asking for it gives the
 * ring, as the contract in cost.h says. */
void cost_algo_lines_of(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                        int n, struct cost_algo_lines *out)
{
	cost_algo_lines_in(t, kind, ranks, n, 0, out);
}

/* cost_algo_lines_in with the scratch `gs` (shape_new). */
static void lines_in(const struct topology *t, enum step_kind kind, const int64_t *ranks, int n,
                     int crossing, struct group_shape *gs, struct cost_algo_lines *out)
{
	memset(out, 0, sizeof(*out));
	out->applicable = 1u << COLL_RING;
	if (n <= 1 || kind == STEP_SLICE || kind == STEP_RESHAPE)
		return;
	group_shape(t, ranks, n, gs);
	gs->concurrent = gs->m > 1 && crossing > gs->n_intra ? crossing / gs->n_intra : 1;
	/* The link each algorithm's steps run on: one server's tier; the
	 * NICs when each server holds one rank; otherwise the slower of the
	 * two, with the NICs shared by the server's ranks for the algorithms
	 * in which all of them cross at once (halving-doubling, all-to-all). */
	struct link one, spread, intra = {0, 0}, inter = {0, 0};
	/* Hierarchical where every server holds as many of the group's ranks
	 * as the first (as far as the counts tell). */
	bool hier = gs->m > 1 && gs->n_intra > 1 && gs->n_intra * gs->m == n;
	if (gs->m == 1) {
		one = spread = intra_link(t, gs->on_server, gs->n_intra);
	} else if (gs->n_intra == 1) {
		one = spread = inter_link(t, gs->route, gs->concurrent);
	} else {
		intra = intra_link(t, gs->on_server, gs->n_intra);
		inter = inter_link(t, gs->route, gs->n_intra * gs->concurrent);
		one = link_worst(intra, inter_link(t, gs->route, gs->concurrent));
		spread = link_worst(intra, inter);
	}
	struct cost_line ring = ring_line(kind, n, kind == STEP_ALLTOALL ? spread : one);
	for (int k = 0; k < COLL_COUNT; k++)
		out->line[k] = ring;
	if (hier) {
		out->applicable |= 1u << COLL_HIERARCHICAL;
		out->line[COLL_HIERARCHICAL] = hier_line(kind, n, gs->n_intra, gs->m, intra, inter);
	}
	int pc = cost_pipeline_members(t, kind, ranks, n);
	if (pc > 0) {
		out->applicable |= 1u << COLL_PIPELINE;
		out->line[COLL_PIPELINE] = pipeline_line(t, kind, n, pc, gs);
	}
	int *pairs = (power_of_two(n) && kind != STEP_ALLTOALL) || kind == STEP_ALLREDUCE
	                     ? gs->pairs
	                     : NULL;
	struct link across = gs->m > 1 ? inter_link(t, gs->route, gs->concurrent) : one;
	if (pairs && power_of_two(n) && kind != STEP_ALLTOALL) {
		out->applicable |= 1u << COLL_HALVING_DOUBLING;
		out->line[COLL_HALVING_DOUBLING] =
		        hd_line(t, kind, ranks, n, gs,
		                gs->m > 1 ? inter_link(t, gs->route, gs->n_intra * gs->concurrent) : one, pairs);
	}
	if (pairs && kind == STEP_ALLREDUCE) {
		out->applicable |= 1u << COLL_TREE;
		out->line[COLL_TREE] = tree_line(t, ranks, n, gs, across, pairs);
	}
	bool mesh = topo_group_in_mesh(t, ranks, n);
	if (kind == STEP_ALLTOALL || mesh) {
		out->applicable |= 1u << COLL_DIRECT;
		out->line[COLL_DIRECT] = kind == STEP_ALLTOALL && hier
		                                 ? direct_split_line(n, gs->n_intra,
		                                                     topo_group_in_mesh(t, gs->on_server,
		                                                                        gs->n_intra),
		                                                     intra, inter)
		                                 : direct_line(kind, n, mesh, spread);
	}
	if (t->coll.library == TOPO_COLL_NCCL) {
		nccl_lines(t, kind, ranks, n, gs, gs->m == 1 ? one : intra, out);
		/* what NCCL does not run carries the ring's line, as above */
		for (int k = 0; k < COLL_COUNT; k++) {
			if (k == COLL_RING || (out->applicable & (1u << k)))
				continue;
			out->line[k] = out->line[COLL_RING];
			out->protos[k] = out->protos[COLL_RING];
			memcpy(out->proto[k], out->proto[COLL_RING], sizeof(out->proto[k]));
			memcpy(out->cal_s[k], out->cal_s[COLL_RING], sizeof(out->cal_s[k]));
		}
	}
}

void cost_algo_lines_in(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                        int n, int crossing, struct cost_algo_lines *out)
{
	struct group_shape *gs = n > 1 ? shape_new(t) : NULL;
	if (n > 1 && !gs) {
		memset(out, 0, sizeof(*out));
		out->applicable = 1u << COLL_RING;
		for (int k = 0; k < COLL_COUNT; k++)
			out->line[k] = (struct cost_line){INFINITY, 0};
		return;
	}
	lines_in(t, kind, ranks, n, crossing, gs, out);
	shape_free(gs);
}

/* The order in which ties go. */
static const enum collective_algo rule_order[] = {
        COLL_RING, COLL_HIERARCHICAL, COLL_HALVING_DOUBLING, COLL_TREE,
        COLL_DIRECT, COLL_NVLS, COLL_PIPELINE};
_Static_assert(COLL_COUNT == 8, "rule_order lists every algorithm but COLL_AUTO");

enum collective_algo cost_algo_pick(const struct cost_algo_lines *l, double bytes,
                                    enum collective_algo wanted, double *seconds)
{
	enum collective_algo best = COLL_RING;
	double best_s;
	if (wanted != COLL_AUTO && (l->applicable & (1u << wanted))) {
		best = wanted;
	} else {
		/* by NCCL's own latencies: a calibrated one changes the time, not the choice */
		best_s = algo_time(l, COLL_RING, bytes, NULL, false);
		for (size_t k = 1; k < SL_COUNTOF(rule_order); k++) {
			enum collective_algo c = rule_order[k];
			if (!(l->applicable & (1u << c)))
				continue;
			double s = algo_time(l, c, bytes, NULL, false);
			/* strictly less (beyond rounding): ties keep the earlier */
			if ((l->applicable & (1u << c)) && s < best_s * (1 - 1e-12)) {
				best = c;
				best_s = s;
			}
		}
	}
	if (seconds)
		*seconds = algo_time(l, best, bytes, NULL, true);
	return best;
}

/* The algorithm cost_collective_s stands for: hierarchical where it
 * applies, else the ring. */
static enum collective_algo natural_algo(const struct cost_algo_lines *l)
{
	return (l->applicable & (1u << COLL_HIERARCHICAL)) ? COLL_HIERARCHICAL : COLL_RING;
}

struct cost_line cost_collective_line(const struct topology *t, enum step_kind kind,
                                      const int64_t *ranks, int n)
{
	struct cost_algo_lines l;
	cost_algo_lines_of(t, kind, ranks, n, &l);
	return l.line[natural_algo(&l)];
}

double cost_collective_s(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                         int n, double bytes)
{
	if (n <= 1 || bytes <= 0)
		return 0;
	struct cost_line l = cost_collective_line(t, kind, ranks, n);
	return l.fixed_s + l.per_byte_s * bytes;
}

/* The ranks after which the topology repeats itself: a server's worth of
 * devices times the servers after which leaf (or rail group) boundaries
 * repeat. Every route between ranks moved by it keeps its bandwidth and
 * latency. 0 when that period is too long to be worth keeping. */
static int64_t translation_period(const struct topology *t)
{
	int64_t servers = 1;
	const struct topo_fabric *f = &t->fabric;
	if (f->kind == TOPO_FABRIC_RAIL_OPTIMIZED) {
		servers = f->servers_per_rail_group;
	} else if (f->kind == TOPO_FABRIC_FAT_TREE) {
		int64_t a = f->nics_per_leaf, b = t->nic.per_server;
		while (b) {
			int64_t r = a % b;
			a = b;
			b = r;
		}
		servers = f->nics_per_leaf / a;
	}
	int64_t p = servers * t->devices_per_server;
	return p > 0 && p <= (1 << 20) ? p : 0;
}

/* Groups are numbered row-major over the axes outside them, so when every
 * outside axis whose stride reaches the period has a stride that is a
 * multiple of it, the first groups (those with zeros on those axes) already
 * hold every position in the period: visit only them. */
static int64_t groups_to_visit(const struct rank_groups *g, int64_t period)
{
	const struct devmat *dm = &g->dm;
	bool in_group[PLAN_MAX_AXES] = {false};
	for (int k = 0; k < g->n_axes; k++)
		in_group[g->axes[k]] = true;
	int64_t stride = 1, visit = 1;
	for (int i = dm->n - 1; i >= 0; i--) {
		if (!in_group[i]) {
			if (stride < period)
				visit *= dm->size[i];
			else if (stride % period)
				return g->n_groups;
		}
		stride *= dm->size[i];
	}
	return visit < g->n_groups ? visit : g->n_groups;
}

/* Calls visit(ctx, lines) with the algorithm lines of one group of each
 * position in the topology's period (all groups when it has none); stops
 * when visit returns false. False when out of memory. */
static bool groups_visit(const struct topology *t, enum step_kind kind, const struct rank_groups *g,
                         bool (*visit)(void *ctx, const struct cost_algo_lines *l), void *ctx)
{
	int64_t *ranks = malloc((size_t)g->size * sizeof(*ranks));
	/* faults break the symmetry: every group is priced */
	int64_t period = t->faults ? 0 : translation_period(t), d = t->devices_per_server;
	uint8_t *seen = period > 0 ? calloc((size_t)period, 1) : NULL;
	uint8_t *seen_local = calloc((size_t)d, 1);
	struct group_shape *gs = shape_new(t);
	if (!ranks || (period > 0 && !seen) || !seen_local || !gs) {
		free(ranks);
		free(seen);
		free(seen_local);
		shape_free(gs);
		return false;
	}
	int64_t limit = period > 0 ? groups_to_visit(g, period) : g->n_groups;
	int crossing = cost_groups_crossing(t, g);
	/* Every group is the first one moved: its members lie from its first
	 * rank to that plus the last member's offset. */
	int64_t span = rank_groups_rank(g, 0, g->size - 1) - rank_groups_rank(g, 0, 0);
	bool more = true;
	for (int k = 0; k < limit && more; k++) {
		/* A group moved by whole periods of the topology costs the same,
		 * and so does a group inside one server moved by whole servers
		 * (servers are alike inside): cost one group of each position. */
		int64_t first = rank_groups_rank(g, k, 0);
		uint8_t *at = t->faults                       ? NULL
		              : first / d == (first + span) / d ? &seen_local[first % d]
		              : seen                          ? &seen[first % period]
		                                              : NULL;
		if (at) {
			if (*at)
				continue;
			*at = 1;
		}
		rank_groups_members(g, k, ranks);
		struct cost_algo_lines l;
		lines_in(t, kind, ranks, g->size, crossing, gs, &l);
		more = visit(ctx, &l);
	}
	free(ranks);
	free(seen);
	free(seen_local);
	shape_free(gs);
	return true;
}

/* Distinct lines collected by groups_visit: n = -1 once there are more
 * than max. */
struct distinct {
	struct cost_line *lines;
	struct cost_algo_lines *algo;
	int n, max;
};

static bool line_same(struct cost_line a, struct cost_line b)
{
	return a.fixed_s == b.fixed_s && a.per_byte_s == b.per_byte_s;
}

static bool add_natural(void *ctx, const struct cost_algo_lines *l)
{
	struct distinct *d = ctx;
	struct cost_line x = l->line[natural_algo(l)];
	for (int i = 0; i < d->n; i++)
		if (line_same(d->lines[i], x))
			return true;
	if (d->n == d->max) {
		d->n = -1;
		return false;
	}
	d->lines[d->n++] = x;
	return true;
}

static bool add_algo(void *ctx, const struct cost_algo_lines *l)
{
	struct distinct *d = ctx;
	for (int i = 0; i < d->n; i++) {
		bool same = d->algo[i].applicable == l->applicable &&
		            d->algo[i].plateau_bytes == l->plateau_bytes;
		for (int k = 0; same && k < COLL_COUNT; k++) {
			same = line_same(d->algo[i].line[k], l->line[k]) &&
			       d->algo[i].protos[k] == l->protos[k];
			for (int p = 0; same && p < COST_PROTO_COUNT; p++)
				same = !(l->protos[k] & (1u << p)) ||
				       (line_same(d->algo[i].proto[k][p], l->proto[k][p]) &&
				        d->algo[i].cal_s[k][p] == l->cal_s[k][p]);
		}
		if (same)
			return true;
	}
	if (d->n == d->max) {
		d->n = -1;
		return false;
	}
	d->algo[d->n++] = *l;
	return true;
}

int cost_groups_lines(const struct topology *t, enum step_kind kind, const struct rank_groups *g,
                      struct cost_line *lines, int max)
{
	if (g->size <= 1 || kind == STEP_SLICE || kind == STEP_RESHAPE)
		return 0;
	struct distinct d = {.lines = lines, .max = max};
	return groups_visit(t, kind, g, add_natural, &d) ? d.n : -1;
}

int cost_groups_algo_lines(const struct topology *t, enum step_kind kind,
                           const struct rank_groups *g, struct cost_algo_lines *lines, int max)
{
	if (g->size <= 1 || kind == STEP_SLICE || kind == STEP_RESHAPE)
		return 0;
	struct distinct d = {.algo = lines, .max = max};
	return groups_visit(t, kind, g, add_algo, &d) ? d.n : -1;
}

double cost_lines_max(const struct cost_line *lines, int n, double bytes)
{
	double worst = 0;
	for (int i = 0; i < n && bytes > 0; i++) {
		double s = lines[i].fixed_s + lines[i].per_byte_s * bytes;
		worst = s > worst ? s : worst;
	}
	return worst;
}

double cost_algo_lines_max(const struct cost_algo_lines *lines, int n, double bytes,
                           enum collective_algo wanted)
{
	double worst = 0;
	for (int i = 0; i < n && bytes > 0; i++) {
		double s;
		cost_algo_pick(&lines[i], bytes, wanted, &s);
		worst = s > worst ? s : worst;
	}
	return worst;
}

/* One collective priced on each group of a step's: by the algorithm
 * rule (ep NULL) or as HybridEP runs a MoE dispatch (cost_ep_hybrid_s). */
struct group_cost {
	const struct topology *t;
	double bytes;
	enum step_kind kind;
	enum collective_algo wanted;
	const struct cost_ep_route *ep;
};

/* The slowest of the groups, each costed on its own ranks. */
static double worst_group_s(const struct rank_groups *g, const struct group_cost *c)
{
	int64_t *ranks = malloc((size_t)g->size * sizeof(*ranks));
	if (!ranks)
		return INFINITY;
	double worst = 0;
	for (int k = 0; k < g->n_groups; k++) {
		rank_groups_members(g, k, ranks);
		double s = c->ep ? cost_ep_hybrid_s(c->t, ranks, g->size, c->bytes, c->ep)
		                 : cost_collective_algo_s(c->t, c->kind, c->wanted, ranks, g->size,
		                                          c->bytes);
		worst = s > worst ? s : worst;
	}
	free(ranks);
	return worst;
}

double cost_groups_algo_s(const struct topology *t, enum step_kind kind,
                          const struct rank_groups *g, double bytes, enum collective_algo wanted)
{
	struct cost_algo_lines lines[8];
	int n = cost_groups_algo_lines(t, kind, g, lines, (int)SL_COUNTOF(lines));
	if (n >= 0)
		return cost_algo_lines_max(lines, n, bytes, wanted);
	/* Groups of many shapes: cost them one by one. */
	struct group_cost c = {t, bytes, kind, wanted, NULL};
	return worst_group_s(g, &c);
}

/* ------------------------------------------------------------ HybridEP
 *
 * A mixture-of-experts dispatch (or combine) that crosses servers once per
 * token and server (cost.h, cost_ep_hybrid_s): the scheme of DeepEP's
 * normal kernels and of Megatron-Core's HybridEP (DeepSeek-V3 technical
 * report, section 3.2.2: a token to each target node once over InfiniBand,
 * then on over NVLink to the GPUs of its experts, the two overlapped). */

/* The chance that none of a token's k copies, drawn without repeats from E
 * experts, lands among one server's Es: C(E - Es, k) / C(E, k), by lgamma
 * so that k may carry a capacity factor's fraction. */
static double none_on_server(double E, double Es, double k)
{
	if (E - Es - k + 1 <= 0)
		return 0;
	return exp(lgamma(E - Es + 1) - lgamma(E - Es - k + 1) - lgamma(E + 1) + lgamma(E - k + 1));
}

bool cost_ep_hybrid_shape(const struct topology *t, const int64_t *ranks, int n,
                          const struct cost_ep_route *ep, int *per_server, double *to_server)
{
	int c;
	if (!ep || !(ep->experts > 0) || !(ep->copies > 0) || n < 2 ||
	    !topo_server_blocks(t, ranks, n, &c) || c >= n)
		return false;
	double m = (double)(n / c), k = fmin(ep->copies, ep->experts);
	*per_server = c;
	*to_server = (1 - none_on_server(ep->experts, ep->experts / m, k)) / ep->copies;
	return true;
}

double cost_ep_hybrid_s(const struct topology *t, const int64_t *ranks, int n, double bytes,
                        const struct cost_ep_route *ep)
{
	int c;
	double share;
	if (!cost_ep_hybrid_shape(t, ranks, n, ep, &c, &share))
		return cost_collective_algo_s(t, STEP_ALLTOALL, COLL_AUTO, ranks, n, bytes);
	if (bytes <= 0)
		return 0;
	int m = n / c;
	/* every rank of a server sends across at once, each to its peers */
	struct link across = inter_link(t, inter_route(t, ranks, n), c);
	double x = across.alpha_s + (double)(m - 1) * share * bytes / across.bps;
	if (c == 1)
		return x;
	struct link in = intra_link(t, ranks, c);
	double y = in.alpha_s + (double)(c - 1) / c * bytes / in.bps;
	return x > y ? x : y;
}

double cost_groups_ep_hybrid_s(const struct topology *t, const struct rank_groups *g,
                               double bytes, const struct cost_ep_route *ep)
{
	if (g->size <= 1 || bytes <= 0)
		return 0;
	struct group_cost c = {t, bytes, STEP_ALLTOALL, COLL_AUTO, ep};
	return worst_group_s(g, &c);
}

/* S of the formulas for a step: AllGather gathers s local pieces. */
static double message_bytes(const struct comm_step *st)
{
	double in = comm_step_bytes_in(st);
	return st->kind == STEP_ALLGATHER ? in * st->groups.size : in;
}

double cost_groups_s(const struct topology *t, enum step_kind kind, const struct rank_groups *g,
                     double bytes)
{
	struct cost_line lines[8];
	int n = cost_groups_lines(t, kind, g, lines, (int)SL_COUNTOF(lines));
	if (n >= 0)
		return cost_lines_max(lines, n, bytes);
	/* Groups of many shapes: cost them one by one. */
	int64_t *ranks = malloc((size_t)g->size * sizeof(*ranks));
	if (!ranks)
		return INFINITY;
	double worst = 0;
	for (int k = 0; k < g->n_groups; k++) {
		rank_groups_members(g, k, ranks);
		double s = cost_collective_s(t, kind, ranks, g->size, bytes);
		worst = s > worst ? s : worst;
	}
	free(ranks);
	return worst;
}

double cost_step_s(const struct topology *t, const struct comm_step *st)
{
	if (st->kind == STEP_SLICE || st->kind == STEP_RESHAPE || st->groups.size <= 1)
		return 0;
	return cost_groups_s(t, st->kind, &st->groups, message_bytes(st));
}

int cost_groups_crossing(const struct topology *t, const struct rank_groups *g)
{
	if (g->size <= 1 || g->n_groups <= 1)
		return 0;
	int64_t d = t->devices_per_server, first = rank_groups_rank(g, 0, 0);
	bool spans = false;
	for (int64_t i = 1; i < g->size && !spans; i++)
		spans = rank_groups_rank(g, 0, i) / d != first / d;
	if (!spans)
		return 0;
	/* the groups partition the stage's ranks: a server's worth of them,
	 * or all when the stage is smaller */
	int64_t all = g->size * g->n_groups;
	return (int)(all < d ? all : d);
}

enum collective_algo cost_choose_algo(const struct topology *t, enum step_kind kind,
                                      const int64_t *ranks, int n, double bytes,
                                      enum collective_algo wanted)
{
	return cost_choose_algo_in(t, kind, ranks, n, bytes, wanted, 0);
}

enum collective_algo cost_choose_algo_in(const struct topology *t, enum step_kind kind,
                                         const int64_t *ranks, int n, double bytes,
                                         enum collective_algo wanted, int crossing)
{
	struct cost_algo_lines l;
	cost_algo_lines_in(t, kind, ranks, n, crossing, &l);
	return cost_algo_pick(&l, bytes, wanted, NULL);
}

double cost_collective_algo_s(const struct topology *t, enum step_kind kind,
                              enum collective_algo algo, const int64_t *ranks, int n,
                              double bytes)
{
	return cost_collective_algo_in_s(t, kind, algo, ranks, n, bytes, 0);
}

double cost_collective_algo_in_s(const struct topology *t, enum step_kind kind,
                                 enum collective_algo algo, const int64_t *ranks, int n,
                                 double bytes, int crossing)
{
	if (n <= 1 || bytes <= 0)
		return 0;
	struct cost_algo_lines l;
	cost_algo_lines_in(t, kind, ranks, n, crossing, &l);
	if (algo == COLL_AUTO) {
		double s;
		cost_algo_pick(&l, bytes, COLL_AUTO, &s);
		return s;
	}
	return cost_algo_time(&l, algo, bytes, NULL);
}

double cost_p2p_s(const struct topology *t, int64_t src, int64_t dst, double bytes)
{
	double bps, lat;
	if (bytes <= 0 || src == dst || !topo_route(t, src, dst, &bps, &lat))
		return 0;
	return lat + bytes / bps;
}

const char *cost_collective_protocol(const struct topology *t, enum step_kind kind,
                                     enum collective_algo algo, const int64_t *ranks, int n,
                                     double bytes)
{
	if (t->coll.library != TOPO_COLL_NCCL || n <= 1 || bytes <= 0)
		return NULL;
	struct cost_algo_lines l;
	cost_algo_lines_of(t, kind, ranks, n, &l);
	int p = -1;
	if (algo != COLL_AUTO)
		cost_algo_time(&l, algo, bytes, &p);
	return p >= 0 ? cost_proto_names[p] : NULL;
}
