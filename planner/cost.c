/* cost.c — the symbolic cost of collectives and of compute on a topology.
 *
 * Collectives follow the α–β formulas of their ring algorithms (nccl-tests
 * conventions, DESIGN.md "Communication cost"), for a group of n ranks and
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
 * Compute is a roofline against the device's peaks and efficiencies.
 *
 * Units: bytes, bytes/s, seconds, FLOPs. Hot path: cost_step_s is called
 * per collective of a plan; it walks each group once.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "planner-int.h"

double comm_step_bytes_in(const struct comm_step *st)
{
	double after = layout_local_bytes(&st->after);
	double s = st->groups.size > 0 ? (double)st->groups.size : 1;
	switch (st->kind) {
	case STEP_ALLGATHER:
		return after / s;
	case STEP_REDUCESCATTER:
		return after * s;
	default:
		return after;
	}
}

/* Bandwidth and latency of one level a group crosses. */
struct link {
	double bps, alpha_s;
};

/* The innermost tier holding every listed local device in one group. */
static int common_tier(const struct topology *t, const int *local, int n)
{
	for (int k = 0; k < t->n_tiers; k++) {
		int g = t->tiers[k].group_of[local[0]];
		bool all = g >= 0;
		for (int i = 1; all && i < n; i++)
			all = t->tiers[k].group_of[local[i]] == g;
		if (all)
			return k;
	}
	return -1;
}

/* The link a ring over these local devices of one server runs on. */
static struct link intra_link(const struct topology *t, const int *local, int n)
{
	int k = common_tier(t, local, n);
	if (k < 0) {
		/* No tier joins them all (the loader guarantees pairs, not
		 * groups): take the outermost tier. */
		k = t->n_tiers - 1;
	}
	const struct topo_tier *tier = &t->tiers[k];
	struct link l = {tier->bandwidth_bps, tier->latency_s};
	if (tier->shared_bps > 0 && tier->shared_bps / n < l.bps)
		l.bps = tier->shared_bps / n;
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

/* The link between servers for a group spanning them: the worst path from
 * the group's first rank to the other servers' ranks, the NIC shared when
 * more ranks of a server send at once than it has NICs. */
static struct link inter_link(const struct topology *t, const int64_t *ranks, int n, int n_intra)
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
		if (l.bps <= worst.bps * (1 + 1e-12) && l.alpha_s >= worst.alpha_s * (1 - 1e-12))
			break;
	}
	if (n_intra > t->nic.per_server) {
		double share = t->nic.bandwidth_bps * t->nic.per_server / n_intra;
		if (share < l.bps)
			l.bps = share;
	}
	return l;
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

struct cost_line cost_collective_line(const struct topology *t, enum step_kind kind,
                                      const int64_t *ranks, int n)
{
	struct cost_line none = {0, 0};
	if (n <= 1 || kind == STEP_SLICE || kind == STEP_RESHAPE)
		return none;
	int64_t d = t->devices_per_server;
	/* The group's ranks on its first server, and how many servers it spans
	 * (a bitmap over the servers: a group may hold thousands of ranks). */
	int local[4096], n_intra = 0, m = 0;
	size_t words = ((size_t)t->servers + 63) / 64;
	uint64_t *seen = calloc(words ? words : 1, sizeof(uint64_t));
	if (!seen)
		return (struct cost_line){INFINITY, 0};
	for (int i = 0; i < n; i++) {
		int64_t s = ranks[i] / d;
		if (s == ranks[0] / d && n_intra < (int)SL_COUNTOF(local))
			local[n_intra++] = (int)(ranks[i] % d);
		if (!(seen[s / 64] & (UINT64_C(1) << (s % 64)))) {
			seen[s / 64] |= UINT64_C(1) << (s % 64);
			m++;
		}
	}
	free(seen);
	if (m == 1)
		return ring_line(kind, n, intra_link(t, local, n_intra));
	struct link inter = inter_link(t, ranks, n, n_intra);
	if (n_intra == 1)
		return ring_line(kind, n, inter);
	struct link intra = intra_link(t, local, n_intra);
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

int cost_groups_lines(const struct topology *t, enum step_kind kind, const struct rank_groups *g,
                      struct cost_line *lines, int max)
{
	if (g->size <= 1 || kind == STEP_SLICE || kind == STEP_RESHAPE)
		return 0;
	int64_t *ranks = malloc((size_t)g->size * sizeof(*ranks));
	int64_t period = translation_period(t);
	uint8_t *seen = period > 0 ? calloc((size_t)period, 1) : NULL;
	if (!ranks || (period > 0 && !seen)) {
		free(ranks);
		free(seen);
		return -1;
	}
	int n = 0;
	int64_t limit = period > 0 ? groups_to_visit(g, period) : g->n_groups;
	for (int k = 0; k < limit && n >= 0; k++) {
		/* A group moved by whole periods of the topology costs the same:
		 * cost one group of each position in the period. */
		if (seen) {
			int64_t at = rank_groups_rank(g, k, 0) % period;
			if (seen[at])
				continue;
			seen[at] = 1;
		}
		rank_groups_members(g, k, ranks);
		struct cost_line l = cost_collective_line(t, kind, ranks, g->size);
		bool known = false;
		for (int i = 0; i < n && !known; i++)
			known = lines[i].fixed_s == l.fixed_s && lines[i].per_byte_s == l.per_byte_s;
		if (known)
			continue;
		if (n == max)
			n = -1;
		else
			lines[n++] = l;
	}
	free(ranks);
	free(seen);
	return n;
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

double cost_compute_s(const struct topo_device *d, enum dtype dt, double flops, double bytes,
                      bool *fallback)
{
	double peak = d->peak_flops[dt];
	if (peak <= 0) {
		static const enum dtype floats[] = {DT_BF16, DT_FP16, DT_FP32};
		for (size_t i = 0; i < SL_COUNTOF(floats); i++)
			if (d->peak_flops[floats[i]] > peak)
				peak = d->peak_flops[floats[i]];
		if (fallback && flops > 0)
			*fallback = true;
	}
	double t_flops = flops > 0 && peak > 0 ? flops / (peak * d->matmul_efficiency) : 0;
	double t_bytes = bytes > 0 ? bytes / (d->hbm_bps * d->memory_efficiency) : 0;
	return t_flops > t_bytes ? t_flops : t_bytes;
}

/* stub until the algorithm rule lands: ring/hierarchical for every group */
enum collective_algo cost_choose_algo(const struct topology *t, enum step_kind kind,
                                      const int64_t *ranks, int n, double bytes,
                                      enum collective_algo wanted)
{
	(void)t; (void)kind; (void)ranks; (void)n; (void)bytes;
	return wanted == COLL_AUTO ? COLL_RING : wanted;
}

double cost_collective_algo_s(const struct topology *t, enum step_kind kind,
                              enum collective_algo algo, const int64_t *ranks, int n,
                              double bytes)
{
	(void)algo;
	return cost_collective_s(t, kind, ranks, n, bytes);
}
