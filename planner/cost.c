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
		struct topo_path p;
		if (!topo_path_between(t, ranks[0], ranks[i], &p))
			continue;
		if (p.bottleneck_bps < l.bps)
			l.bps = p.bottleneck_bps;
		if (p.latency_s > l.alpha_s)
			l.alpha_s = p.latency_s;
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

/* The flat ring formulas. */
static double ring_s(enum step_kind kind, int n, double bytes, struct link l)
{
	if (n <= 1)
		return 0;
	double f = (double)(n - 1) / n;
	switch (kind) {
	case STEP_ALLREDUCE:
		return 2 * f * bytes / l.bps + 2 * (n - 1) * l.alpha_s;
	case STEP_ALLGATHER:
	case STEP_REDUCESCATTER:
	case STEP_ALLTOALL:
		return f * bytes / l.bps + (n - 1) * l.alpha_s;
	default:
		return 0;
	}
}

double cost_collective_s(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                         int n, double bytes)
{
	if (n <= 1 || bytes <= 0 || kind == STEP_SLICE || kind == STEP_RESHAPE)
		return 0;
	int64_t d = t->devices_per_server;
	/* The group's ranks on its first server, and how many servers it spans
	 * (a bitmap over the servers: a group may hold thousands of ranks). */
	int local[4096], n_intra = 0, m = 0;
	size_t words = ((size_t)t->servers + 63) / 64;
	uint64_t *seen = calloc(words ? words : 1, sizeof(uint64_t));
	if (!seen)
		return INFINITY;
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
		return ring_s(kind, n, bytes, intra_link(t, local, n_intra));
	struct link inter = inter_link(t, ranks, n, n_intra);
	if (n_intra == 1)
		return ring_s(kind, n, bytes, inter);
	struct link intra = intra_link(t, local, n_intra);
	switch (kind) {
	case STEP_ALLREDUCE:
		/* reduce-scatter inside, all-reduce of S/n_intra across, all-gather inside */
		return 2 * ring_s(STEP_REDUCESCATTER, n_intra, bytes, intra) +
		       ring_s(STEP_ALLREDUCE, m, bytes / n_intra, inter);
	case STEP_ALLGATHER:
	case STEP_REDUCESCATTER:
		/* across servers on S/n_intra, then inside on S (or the mirror) */
		return ring_s(kind, m, bytes / n_intra, inter) + ring_s(kind, n_intra, bytes, intra);
	default: {
		/* AllToAll: what leaves the server goes over the NICs, the rest
		 * over the server's tier; (n-1) exchanges of the slowest latency. */
		double out = (double)(n - n_intra) / n * bytes, in = (double)(n_intra - 1) / n * bytes;
		return out / inter.bps + in / intra.bps + (n - 1) * inter.alpha_s;
	}
	}
}

/* S of the formulas for a step: AllGather gathers s local pieces. */
static double message_bytes(const struct comm_step *st)
{
	double in = comm_step_bytes_in(st);
	return st->kind == STEP_ALLGATHER ? in * st->groups.size : in;
}

double cost_step_s(const struct topology *t, const struct comm_step *st)
{
	if (st->kind == STEP_SLICE || st->kind == STEP_RESHAPE || st->groups.size <= 1)
		return 0;
	double bytes = message_bytes(st), worst = 0;
	for (int g = 0; g < st->groups.n_groups; g++) {
		const int64_t *r = st->groups.ranks + (size_t)g * (size_t)st->groups.size;
		double s = cost_collective_s(t, st->kind, r, st->groups.size, bytes);
		if (s > worst)
			worst = s;
	}
	return worst;
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
