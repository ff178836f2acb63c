/* query.c — routes and bandwidths on a loaded topology, for cost models.
 *
 * Ranks are server-major: rank r is local device r % devices_per_server of
 * server r / devices_per_server. Inside a server two devices talk over the
 * innermost tier in which they share a group; between servers a message
 * leaves through the sender's NIC, crosses the fabric (one leaf, or leaf,
 * spine, leaf) and enters through the receiver's NIC. docs/formats.md
 * ("Topology queries") states every formula used here.
 *
 * Units: bytes/s and seconds. Hot path: topo_tier_between and
 * topo_path_between are called per rank pair by cost models; they do
 * integer arithmetic only, no allocation. topo_bisection_bps is O(d^2)
 * in the devices of one server.
 */
#include "topologies-int.h"

#include <math.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stdio.h>

int topo_local_tier(const struct topology *t, int i, int j)
{
	for (int k = 0; k < t->n_tiers; k++) {
		int g = t->tiers[k].group_of[i];
		if (g >= 0 && g == t->tiers[k].group_of[j])
			return k;
	}
	return -1;
}

int topo_tier_between(const struct topology *t, int64_t a, int64_t b)
{
	SL_ASSERT(a >= 0 && a < t->n_devices && b >= 0 && b < t->n_devices);
	if (a == b)
		return TOPO_SELF;
	int64_t d = t->devices_per_server;
	if (a / d != b / d)
		return TOPO_NETWORK;
	int k = topo_local_tier(t, (int)(a % d), (int)(b % d));
	SL_ASSERT(k >= 0); /* the loader checks every pair shares a tier */
	if (t->faults)
		return topo_live_tier(t, a / d, (int)(a % d), (int)(b % d));
	return k;
}

/* ---------------------------------------------------------------- faults */

double topo_nic_rate(const struct topology *t, int64_t s, int k)
{
	const struct topo_faults *f = t->faults;
	if (!f || !f->nic_rate || s >= f->servers)
		return 1;
	return f->nic_rate[s * t->nic.per_server + k];
}

static double port_rate(const struct topo_faults *f, int64_t s, int k, int dev)
{
	double r = 1;
	for (int i = 0; i < f->n_links; i++) {
		const struct topo_link_fault *l = &f->links[i];
		if (l->server == s && l->tier == k && l->b < 0 && l->a == dev && l->rate < r)
			r = l->rate;
	}
	return r;
}

double topo_link_rate(const struct topology *t, int64_t s, int k, int a, int b)
{
	const struct topo_faults *f = t->faults;
	if (!f || f->n_links == 0)
		return 1;
	if (t->tiers[k].kind == TOPO_TIER_SWITCH)
		return fmin(port_rate(f, s, k, a), port_rate(f, s, k, b));
	double r = 1;
	for (int i = 0; i < f->n_links; i++) {
		const struct topo_link_fault *l = &f->links[i];
		if (l->server == s && l->tier == k &&
		    ((l->a == a && l->b == b) || (l->a == b && l->b == a)) && l->rate < r)
			r = l->rate;
	}
	return r;
}

int topo_live_tier(const struct topology *t, int64_t s, int a, int b)
{
	for (int k = 0; k < t->n_tiers; k++) {
		int g = t->tiers[k].group_of[a];
		if (g >= 0 && g == t->tiers[k].group_of[b] && topo_link_rate(t, s, k, a, b) > 0)
			return k;
	}
	return TOPO_NETWORK;
}

double topo_rank_slowdown(const struct topology *t, int64_t r)
{
	const struct topo_faults *f = t->faults;
	if (!f || !f->slowdown || r >= f->servers * t->devices_per_server)
		return 1;
	return f->slowdown[r];
}

double topo_spine_rate(const struct topology *t)
{
	return t->faults ? t->faults->spine_rate : 1;
}

int topo_nic_of(const struct topology *t, int64_t s, int local)
{
	int per = t->nic.per_server;
	int k = (int)((int64_t)local * per / t->devices_per_server);
	for (int i = 0; i < per; i++)
		if (topo_nic_rate(t, s, (k + i) % per) > 0)
			return (k + i) % per;
	return -1;
}

double topo_max_slowdown(const struct topology *t, int64_t n)
{
	const struct topo_faults *f = t->faults;
	double m = 1;
	if (!f || !f->slowdown)
		return m;
	int64_t end = f->servers * t->devices_per_server;
	for (int64_t r = 0; r < n && r < end; r++)
		m = fmax(m, f->slowdown[r]);
	return m;
}

int topo_group_tier(const struct topology *t, const int64_t *ranks, int n)
{
	int64_t d = t->devices_per_server;
	for (int i = 1; i < n; i++)
		if (ranks[i] / d != ranks[0] / d)
			return TOPO_NETWORK;
	for (int k = 0; k < t->n_tiers; k++) {
		int g = t->tiers[k].group_of[ranks[0] % d];
		bool all = g >= 0;
		for (int i = 1; all && i < n; i++)
			all = t->tiers[k].group_of[ranks[i] % d] == g;
		if (all)
			return k;
	}
	return TOPO_NETWORK;
}

int topo_torus_step(const struct topo_tier *k, int i, int dim, int dir)
{
	int c[3] = {i % k->dims[0], i / k->dims[0] % k->dims[1], i / (k->dims[0] * k->dims[1])};
	c[dim] = (c[dim] + dir + k->dims[dim]) % k->dims[dim];
	return c[0] + k->dims[0] * (c[1] + k->dims[1] * c[2]);
}

int topo_torus_delta(const struct topo_tier *k, int a, int b, int dim)
{
	int stride = dim == 0 ? 1 : dim == 1 ? k->dims[0] : k->dims[0] * k->dims[1];
	int n = k->dims[dim];
	int d = ((b / stride % n) - (a / stride % n) + n) % n;
	return d <= n / 2 ? d : d - n;
}

int topo_torus_hops(const struct topo_tier *k, int a, int b)
{
	int h = 0;
	for (int dim = 0; dim < 3; dim++)
		h += abs(topo_torus_delta(k, a, b, dim));
	return h;
}

bool topo_compute_calibrated(const struct topo_device *d)
{
	return d->gemm_half_dim > 0 || d->kernel_overhead_s > 0;
}

bool topo_group_in_mesh(const struct topology *t, const int64_t *ranks, int n)
{
	int k = topo_group_tier(t, ranks, n);
	return k >= 0 && t->tiers[k].kind == TOPO_TIER_MESH;
}

/* ----------------------------------------------------------------- paths */

/* Adds a hop; its name is formatted only when `named` (cost queries ask
 * for the figures alone, per rank pair, and formatting dominated them). */
static void hop(struct topo_path *p, bool named, double bps, double lat_s, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 5, 6)))
#endif
	;

static void hop(struct topo_path *p, bool named, double bps, double lat_s, const char *fmt, ...)
{
	SL_ASSERT(p->n_hops < TOPO_MAX_HOPS);
	struct topo_hop *h = &p->hops[p->n_hops++];
	h->what[0] = '\0';
	if (named) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(h->what, sizeof(h->what), fmt, ap);
		va_end(ap);
	}
	h->bandwidth_bps = bps;
	h->latency_s = lat_s;
	if (bps < p->bottleneck_bps)
		p->bottleneck_bps = bps;
	p->latency_s += lat_s;
}

static void path_in_server(const struct topology *t, int64_t s, int la, int lb,
                           struct topo_path *p, bool named)
{
	const struct topo_tier *tier = &t->tiers[p->tier];
	double bw = tier->bandwidth_bps;
	if (tier->kind == TOPO_TIER_TORUS) {
		/* dimension order, one link a step, the shorter way round */
		int at = la;
		for (int dim = 0; dim < 3; dim++) {
			int delta = topo_torus_delta(tier, la, lb, dim), dir = delta < 0 ? -1 : 1;
			for (int step = 0; step < abs(delta); step++) {
				int next = topo_torus_step(tier, at, dim, dir);
				hop(p, named, bw * topo_link_rate(t, s, p->tier, at, next), tier->latency_s,
				    "%s link %d-%d", tier->name, at, next);
				at = next;
			}
		}
	} else if (tier->kind == TOPO_TIER_MESH) {
		hop(p, named, bw * topo_link_rate(t, s, p->tier, la, lb), tier->latency_s,
		    "%s link %d-%d", tier->name, la, lb);
	} else {
		hop(p, named, bw * topo_link_rate(t, s, p->tier, la, la), tier->latency_s,
		    "%s port %d", tier->name, la);
		hop(p, named, bw * topo_link_rate(t, s, p->tier, lb, lb), 0, "%s port %d", tier->name,
		    lb);
	}
	if (tier->shared_bps > 0)
		hop(p, named, tier->shared_bps, 0, "%s shared", tier->name);
}

/* Leaf switch of a NIC (server s, local NIC k). Fat tree: global NIC index
 * / nics_per_leaf. Rail-optimized: rail k of the server's rail group. */
int64_t topo_leaf_switch(const struct topology *t, int64_t s, int k)
{
	int64_t per = t->nic.per_server;
	if (t->fabric.kind == TOPO_FABRIC_RAIL_OPTIMIZED)
		return s / t->fabric.servers_per_rail_group * per + k;
	return (s * per + k) / t->fabric.nics_per_leaf;
}

static bool path_fabric(const struct topology *t, int64_t sa, int ka, int64_t sb, int kb,
                        struct topo_path *p, bool named)
{
	const struct topo_fabric *f = &t->fabric;
	double nic = t->nic.bandwidth_bps;
	int64_t l1 = topo_leaf_switch(t, sa, ka), l2 = topo_leaf_switch(t, sb, kb);
	if (l1 == l2 && f->kind == TOPO_FABRIC_RAIL_OPTIMIZED) {
		hop(p, named, nic, f->switch_latency_s, "rail %d leaf", ka);
	} else if (l1 == l2) {
		hop(p, named, nic, f->switch_latency_s, "leaf %lld", (long long)l1);
	} else {
		hop(p, named, nic, f->switch_latency_s, "leaf %lld", (long long)l1);
		if (!(topo_spine_rate(t) > 0))
			return false; /* every spine down */
		hop(p, named, nic / f->oversubscription * topo_spine_rate(t), f->switch_latency_s,
		    "spine");
		hop(p, named, nic, f->switch_latency_s, "leaf %lld", (long long)l2);
	}
	return true;
}

static bool path_between(const struct topology *t, int64_t a, int64_t b, struct topo_path *out,
                         bool named)
{
	*out = (struct topo_path){.bottleneck_bps = INFINITY};
	if (a < 0 || b < 0 || a >= t->n_devices || b >= t->n_devices)
		return false;
	out->tier = topo_tier_between(t, a, b);
	int64_t d = t->devices_per_server;
	int la = (int)(a % d), lb = (int)(b % d);
	if (out->tier >= 0) {
		path_in_server(t, a / d, la, lb, out, named);
	} else if (out->tier == TOPO_NETWORK) {
		int ka = (int)(la * t->nic.per_server / d), kb = (int)(lb * t->nic.per_server / d);
		if (t->faults) {
			/* down NICs fail over; a server with none left has no
			 * path (topo_faults_connected refuses such a job) */
			ka = topo_nic_of(t, a / d, la);
			kb = topo_nic_of(t, b / d, lb);
			if (ka < 0 || kb < 0)
				return false;
		}
		const struct topo_nic *n = &t->nic;
		hop(out, named, n->bandwidth_bps * topo_nic_rate(t, a / d, ka), n->latency_s,
		    "nic %d of server %lld", ka, (long long)(a / d));
		if (!path_fabric(t, a / d, ka, b / d, kb, out, named))
			return false;
		hop(out, named, n->bandwidth_bps * topo_nic_rate(t, b / d, kb), n->latency_s,
		    "nic %d of server %lld", kb, (long long)(b / d));
	}
	return true;
}

bool topo_path_between(const struct topology *t, int64_t a, int64_t b, struct topo_path *out)
{
	return path_between(t, a, b, out, true);
}

bool topo_route(const struct topology *t, int64_t a, int64_t b, double *bottleneck_bps,
                double *latency_s)
{
	struct topo_path p;
	if (!path_between(t, a, b, &p, false))
		return false;
	*bottleneck_bps = p.bottleneck_bps;
	*latency_s = p.latency_s;
	return true;
}

/* ------------------------------------------------------------ bandwidths */

double topo_tier_device_bps(const struct topology *t, int tier)
{
	SL_ASSERT(tier >= 0 && tier < t->n_tiers);
	const struct topo_tier *k = &t->tiers[tier];
	if (k->kind == TOPO_TIER_SWITCH)
		return k->bandwidth_bps;
	if (k->kind == TOPO_TIER_TORUS) { /* two links a dimension (one where it has 2) */
		int links = 0;
		for (int dim = 0; dim < 3; dim++)
			links += k->dims[dim] > 2 ? 2 : k->dims[dim] - 1;
		return k->bandwidth_bps * links;
	}
	int largest = 0;
	for (int g = 0; g < k->n_groups; g++)
		if (k->group_size[g] > largest)
			largest = k->group_size[g];
	return k->bandwidth_bps * (largest - 1);
}

double topo_nic_device_bps(const struct topology *t)
{
	return t->nic.bandwidth_bps * t->nic.per_server / t->devices_per_server;
}

/* What tier k carries across the cut [0, h) | [h, d) of one server:
 * mesh: links (pairs i < h <= j whose innermost tier is k) times the link
 * bandwidth; switch: per group, min(members on side A, members on side B)
 * times the port bandwidth, counting only members with a partner on the
 * other side whose innermost tier is k. Capped by shared_bps. */
static double tier_cut_bps(const struct topology *t, int k, int h)
{
	const struct topo_tier *tier = &t->tiers[k];
	int d = t->devices_per_server;
	int64_t links = 0, ports = 0;
	for (int g = 0; g < tier->n_groups; g++) {
		int64_t in_a = 0, in_b = 0;
		for (int i = 0; i < d; i++) {
			if (tier->group_of[i] != g)
				continue;
			bool partner = false;
			for (int j = 0; j < d; j++) {
				if ((i < h) == (j < h) || topo_local_tier(t, i, j) != k)
					continue;
				partner = true;
				links += i < h;
			}
			in_a += partner && i < h;
			in_b += partner && i >= h;
		}
		ports += in_a < in_b ? in_a : in_b;
	}
	if (tier->kind == TOPO_TIER_TORUS) { /* the neighbour links across the cut, one way */
		links = 0;
		for (int i = 0; i < h; i++)
			for (int dim = 0; dim < 3; dim++)
				for (int dir = -1; dir <= 1 && tier->dims[dim] > 1; dir += 2) {
					if (dir == 1 && tier->dims[dim] == 2)
						continue; /* + and - reach the same neighbour */
					links += topo_torus_step(tier, i, dim, dir) >= h;
				}
	}
	double bps = tier->bandwidth_bps *
	             (double)(tier->kind == TOPO_TIER_SWITCH ? ports : links);
	return tier->shared_bps > 0 && tier->shared_bps < bps ? tier->shared_bps : bps;
}

/* Distinct NICs used by the local devices [lo, hi) of one server. */
static int64_t nics_used(const struct topology *t, int lo, int hi)
{
	if (lo >= hi)
		return 0;
	int64_t per = t->nic.per_server, d = t->devices_per_server;
	return (hi - 1) * per / d - lo * per / d + 1;
}

int64_t topo_fabric_leaves(const struct topology *t)
{
	if (t->fabric.kind == TOPO_FABRIC_NONE)
		return 0;
	int64_t per = t->nic.per_server;
	if (t->fabric.kind == TOPO_FABRIC_RAIL_OPTIMIZED) {
		int64_t g = t->fabric.servers_per_rail_group;
		return (t->servers + g - 1) / g * per;
	}
	return (t->servers * per + t->fabric.nics_per_leaf - 1) / t->fabric.nics_per_leaf;
}

double topo_bisection_bps(const struct topology *t)
{
	int64_t n = t->n_devices, h = n / 2, d = t->devices_per_server;
	if (t->servers < 2) {
		double sum = 0;
		for (int k = 0; k < t->n_tiers; k++)
			sum += tier_cut_bps(t, k, (int)h);
		return sum;
	}
	/* NICs serving ranks [0, h) and [h, n); a server the cut splits
	 * counts its NICs on each side it uses them. */
	int64_t full = h / d, rem = h % d;
	int64_t per = t->nic.per_server;
	int64_t nics_a = full * per + nics_used(t, 0, (int)rem);
	int64_t nics_b = rem ? (t->servers - full - 1) * per + nics_used(t, (int)rem, (int)d)
	                     : (t->servers - full) * per;
	double bps = (double)(nics_a < nics_b ? nics_a : nics_b) * t->nic.bandwidth_bps;
	bool one_leaf = t->fabric.kind == TOPO_FABRIC_RAIL_OPTIMIZED
	                        ? t->servers <= t->fabric.servers_per_rail_group
	                        : topo_fabric_leaves(t) <= 1;
	/* spines down or slower (t->faults) take their share of the uplinks */
	return one_leaf ? bps : bps / t->fabric.oversubscription * topo_spine_rate(t);
}

bool topo_server_blocks(const struct topology *t, const int64_t *ranks, int n, int *per_server)
{
	int64_t d = t->devices_per_server;
	int c = 1;
	while (c < n && ranks[c] / d == ranks[0] / d)
		c++;
	*per_server = c;
	if (n % c)
		return false;
	for (int i = 0; i < n; i++) {
		bool start = i % c == 0;
		if (i > 0 && (ranks[i] / d == ranks[i - 1] / d) == start)
			return false;
	}
	return true;
}
