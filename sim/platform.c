/* platform.c — the topology as SimGrid links and routes.
 *
 * Every hop of topo_path_between becomes a link of the same bandwidth and
 * latency, one per direction: a mesh tier has a link per ordered pair of a
 * server ("s0-hccs-0-1"); a switch tier a transmit and a receive port per
 * device ("s0-pcie-3-tx", the tier's latency on the sender's port) and the
 * tier's shared cap if it has one ("s0-pcie-shared"); a NIC a transmit and
 * a receive link ("nic-3-s12-tx" carries the NIC's latency and the first
 * leaf switch's, "-rx" the NIC's) and, towards the spine, its share of the
 * leaf's uplinks ("nic-3-s12-up" and "-down", bandwidth NIC /
 * oversubscription, one switch latency each). A route within a leaf is
 * tx, rx (2 NIC + 1 switch latencies), across the spine tx, up, down, rx
 * (2 NIC + 3 switch latencies), as the cost model's paths. No link is
 * shared by every route (it would couple all flows in the bandwidth-sharing solver, docs/simulation.md).
 *
 * Faults (t->faults, a scenario's "faults"): every link runs at its
 * rate; a route takes the innermost tier whose link is up, else the NICs,
 * and a device whose NIC is down sends through the next one of its server
 * that is up; spine faults scale every up and down link by the uplinks
 * left (topologies.h).
 *
 * Routes exist only for the ordered pairs that carry messages (found by a
 * dry run of the collectives), so the XML grows with the traffic pattern,
 * not with the square of the ranks. Link ids are arithmetic per server;
 * pairs sit in an integer hash. Hot path: sim_net_pair, once per message.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "sim-int.h"

/* Ids inside one server's block: per tier a mesh (d x d) or ports (2d),
 * then one shared cap per tier, then 4 per NIC. */
static int64_t tier_ids(const struct topology *t, int k)
{
	int64_t d = t->devices_per_server;
	if (t->tiers[k].kind == TOPO_TIER_TORUS)
		return 6 * d; /* per device a link each way along each of 3 dimensions */
	return t->tiers[k].kind == TOPO_TIER_MESH ? d * d : 2 * d;
}

static int64_t tier_off(const struct topology *t, int k)
{
	int64_t off = 0;
	for (int i = 0; i < k; i++)
		off += tier_ids(t, i);
	return off;
}

static int64_t shared_off(const struct topology *t, int k)
{
	return tier_off(t, t->n_tiers) + k;
}

static int64_t nic_off(const struct topology *t)
{
	return tier_off(t, t->n_tiers) + t->n_tiers;
}

enum { NIC_TX, NIC_RX, NIC_UP, NIC_DOWN };

bool sim_net_init(struct sim_net *net, const struct topology *t, int64_t base, int64_t n_ranks)
{
	memset(net, 0, sizeof(*net));
	net->t = t;
	net->base = base;
	net->n_ranks = n_ranks;
	int64_t d = t->devices_per_server;
	net->server0 = base / d;
	net->n_servers = (base + n_ranks - 1) / d - net->server0 + 1;
	net->per_server_ids = nic_off(t) + 4 * (int64_t)t->nic.per_server;
	int64_t ids = net->per_server_ids * net->n_servers;
	net->compact = malloc((size_t)ids * sizeof(*net->compact));
	net->hash_cap = 1024;
	net->hash_key = malloc((size_t)net->hash_cap * sizeof(*net->hash_key));
	net->hash_val = malloc((size_t)net->hash_cap * sizeof(*net->hash_val));
	if (!net->compact || !net->hash_key || !net->hash_val)
		return false;
	memset(net->compact, 0xff, (size_t)ids * sizeof(*net->compact));
	memset(net->hash_key, 0xff, (size_t)net->hash_cap * sizeof(*net->hash_key));
	return true;
}

void sim_net_free(struct sim_net *net)
{
	free(net->compact);
	free(net->link_id);
	free(net->pair_src);
	free(net->pair_dst);
	free(net->route);
	free(net->hash_key);
	free(net->hash_val);
	free(net->pair_used);
	free(net->host_used);
	memset(net, 0, sizeof(*net));
}

static uint64_t mix(int64_t key)
{
	uint64_t x = (uint64_t)key * UINT64_C(0x9E3779B97F4A7C15);
	return x ^ (x >> 29);
}

int sim_net_pair(const struct sim_net *net, int64_t src, int64_t dst)
{
	int64_t key = (src - net->base) * net->n_ranks + (dst - net->base);
	uint64_t mask = (uint64_t)net->hash_cap - 1;
	for (uint64_t h = mix(key) & mask;; h = (h + 1) & mask) {
		if (net->hash_key[h] == key)
			return net->hash_val[h];
		if (net->hash_key[h] < 0)
			return -1;
	}
}

static void hash_put(int64_t *keys, int32_t *vals, int64_t cap, int64_t key, int32_t val)
{
	uint64_t mask = (uint64_t)cap - 1;
	uint64_t h = mix(key) & mask;
	while (keys[h] >= 0)
		h = (h + 1) & mask;
	keys[h] = key;
	vals[h] = val;
}

static bool hash_grow(struct sim_net *net)
{
	int64_t cap = net->hash_cap * 2;
	int64_t *keys = malloc((size_t)cap * sizeof(*keys));
	int32_t *vals = malloc((size_t)cap * sizeof(*vals));
	if (!keys || !vals) {
		free(keys);
		free(vals);
		return false;
	}
	memset(keys, 0xff, (size_t)cap * sizeof(*keys));
	for (int64_t i = 0; i < net->hash_cap; i++)
		if (net->hash_key[i] >= 0)
			hash_put(keys, vals, cap, net->hash_key[i], net->hash_val[i]);
	free(net->hash_key);
	free(net->hash_val);
	net->hash_key = keys;
	net->hash_val = vals;
	net->hash_cap = cap;
	return true;
}

/* The compact index of a link id, adding it when new; -1 on OOM. */
static int32_t use_link(struct sim_net *net, int64_t id)
{
	if (net->compact[id] >= 0)
		return net->compact[id];
	if (net->n_links == net->cap_links) {
		int cap = net->cap_links ? 2 * net->cap_links : 256;
		int64_t *p = realloc(net->link_id, (size_t)cap * sizeof(*p));
		if (!p)
			return -1;
		net->link_id = p;
		net->cap_links = cap;
	}
	net->link_id[net->n_links] = id;
	return net->compact[id] = net->n_links++;
}

static int64_t leaf_of(const struct topology *t, int64_t s, int k)
{
	int64_t per = t->nic.per_server;
	if (t->fabric.kind == TOPO_FABRIC_RAIL_OPTIMIZED)
		return s / t->fabric.servers_per_rail_group * per + k;
	return (s * per + k) / t->fabric.nics_per_leaf;
}

static int pooled_route(const struct sim_net *net, int64_t a, int64_t b,
                        int64_t ids[SIM_ROUTE_MAX]);

/* The link ids of the route a -> b, as query.c's path_between. */
static int route_ids(const struct sim_net *net, int64_t a, int64_t b, int64_t ids[SIM_ROUTE_MAX])
{
	const struct topology *t = net->t;
	int64_t d = t->devices_per_server;
	int64_t sa = a / d, sb = b / d;
	int la = (int)(a % d), lb = (int)(b % d);
	int64_t blk_a = (sa - net->server0) * net->per_server_ids;
	int64_t blk_b = (sb - net->server0) * net->per_server_ids;
	int n = 0;
	int k = topo_tier_between(t, a, b);
	if (k < 0 && net->leaf_uplinks)
		return pooled_route(net, a, b, ids);
	if (k >= 0 && t->tiers[k].kind == TOPO_TIER_TORUS) {
		/* as query.c's path: dimension order, the shorter way round */
		const struct topo_tier *tier = &t->tiers[k];
		int at = la;
		for (int dim = 0; dim < 3; dim++) {
			int delta = topo_torus_delta(tier, la, lb, dim), dir = delta < 0 ? -1 : 1;
			for (int s = 0; s < abs(delta); s++) {
				ids[n++] = blk_a + tier_off(t, k) + 6 * at + 2 * dim + (dir > 0);
				at = topo_torus_step(tier, at, dim, dir);
			}
		}
		return n;
	}
	if (k >= 0) {
		if (t->tiers[k].kind == TOPO_TIER_MESH) {
			ids[n++] = blk_a + tier_off(t, k) + la * d + lb;
		} else {
			ids[n++] = blk_a + tier_off(t, k) + 2 * la;
			ids[n++] = blk_a + tier_off(t, k) + 2 * lb + 1;
		}
		if (t->tiers[k].shared_bps > 0)
			ids[n++] = blk_a + shared_off(t, k);
		return n;
	}
	int per = t->nic.per_server;
	int ka = (int)(la * per / d), kb = (int)(lb * per / d);
	if (t->faults) {
		/* a NIC that is down fails over (topo_nic_of); the scenario's
		 * loader refused a job some of whose ranks have none left */
		ka = topo_nic_of(t, sa, la);
		kb = topo_nic_of(t, sb, lb);
		SL_ASSERT(ka >= 0 && kb >= 0);
	}
	ids[n++] = blk_a + nic_off(t) + 4 * ka + NIC_TX;
	if (leaf_of(t, sa, ka) != leaf_of(t, sb, kb)) {
		ids[n++] = blk_a + nic_off(t) + 4 * ka + NIC_UP;
		ids[n++] = blk_b + nic_off(t) + 4 * kb + NIC_DOWN;
	}
	ids[n++] = blk_b + nic_off(t) + 4 * kb + NIC_RX;
	return n;
}

/* Across servers with the leaves' uplinks pooled: tx, the leaf's pooled
 * uplink and the far leaf's downlink when the leaves differ, rx. */
static int pooled_route(const struct sim_net *net, int64_t a, int64_t b,
                        int64_t ids[SIM_ROUTE_MAX])
{
	const struct topology *t = net->t;
	int64_t d = t->devices_per_server, sa = a / d, sb = b / d;
	int per = t->nic.per_server;
	int ka = (int)(a % d * per / d), kb = (int)(b % d * per / d);
	int64_t la = leaf_of(t, sa, ka), lb = leaf_of(t, sb, kb);
	int64_t leaves = net->per_server_ids * net->n_servers;
	int n = 0;
	ids[n++] = (sa - net->server0) * net->per_server_ids + nic_off(t) + 4 * ka + NIC_TX;
	if (la != lb) {
		ids[n++] = leaves + 2 * la;
		ids[n++] = leaves + 2 * lb + 1;
	}
	ids[n++] = (sb - net->server0) * net->per_server_ids + nic_off(t) + 4 * kb + NIC_RX;
	return n;
}

bool sim_net_init_pooled(struct sim_net *net, const struct topology *t, int64_t base,
                         int64_t n_ranks)
{
	if (!sim_net_init(net, t, base, n_ranks))
		return false;
	net->leaf_uplinks = true;
	int64_t last = net->server0 + net->n_servers - 1;
	/* one server has no fabric, and no route leaves it */
	if (t->fabric.kind == TOPO_FABRIC_NONE || t->nic.per_server < 1)
		return true;
	net->n_leaves = leaf_of(t, last, t->nic.per_server - 1) + 1;
	int64_t ids = net->per_server_ids * net->n_servers;
	int32_t *c = realloc(net->compact, (size_t)(ids + 2 * net->n_leaves) * sizeof(*c));
	if (!c)
		return false;
	net->compact = c;
	memset(c + ids, 0xff, (size_t)(2 * net->n_leaves) * sizeof(*c));
	return true;
}

static bool add_pair_slot(struct sim_net *net)
{
	if (net->n_pairs < net->cap_pairs)
		return true;
	int cap = net->cap_pairs ? 2 * net->cap_pairs : 256;
	int32_t *s = realloc(net->pair_src, (size_t)cap * sizeof(*s));
	if (s)
		net->pair_src = s;
	int32_t *d = realloc(net->pair_dst, (size_t)cap * sizeof(*d));
	if (d)
		net->pair_dst = d;
	struct sim_route *r = realloc(net->route, (size_t)cap * sizeof(*r));
	if (r)
		net->route = r;
	if (!s || !d || !r)
		return false;
	net->cap_pairs = cap;
	return true;
}

int sim_net_pair_add(struct sim_net *net, int64_t src, int64_t dst)
{
	int p = sim_net_pair(net, src, dst);
	if (p >= 0)
		return p;
	if ((net->n_pairs + 1) * 2 > net->hash_cap && !hash_grow(net))
		return -1;
	if (!add_pair_slot(net))
		return -1;
	int64_t ids[SIM_ROUTE_MAX];
	struct sim_route r = {.n = route_ids(net, src, dst, ids)};
	for (int i = 0; i < r.n; i++)
		if ((r.link[i] = use_link(net, ids[i])) < 0)
			return -1;
	p = net->n_pairs++;
	net->pair_src[p] = (int32_t)(src - net->base);
	net->pair_dst[p] = (int32_t)(dst - net->base);
	net->route[p] = r;
	hash_put(net->hash_key, net->hash_val, net->hash_cap,
	         (src - net->base) * net->n_ranks + (dst - net->base), p);
	return p;
}

/* A NIC link's name, bandwidth and latency by its id (as
 * sim_net_link_info's). */
static void nic_link_info(const struct sim_net *net, int64_t id, char *name, size_t name_len,
                          double *bps, double *latency_s)
{
	const struct topology *t = net->t;
	int64_t s = id / net->per_server_ids + net->server0, r = id % net->per_server_ids;
	static const char *const what[] = {"tx", "rx", "up", "down"};
	int64_t k = (r - nic_off(t)) / 4, w = (r - nic_off(t)) % 4;
	double sw = t->fabric.switch_latency_s, nic = t->nic.latency_s;
	double lat[] = {nic + sw, nic, sw, sw};
	double over = t->fabric.oversubscription > 1 ? t->fabric.oversubscription : 1;
	snprintf(name, name_len, "nic-%" PRId64 "-s%" PRId64 "-%s", k, s, what[w]);
	*bps = w >= NIC_UP ? t->nic.bandwidth_bps / over * topo_spine_rate(t)
	                   : t->nic.bandwidth_bps * topo_nic_rate(t, s, (int)k);
	*latency_s = lat[w];
}

void sim_net_link_info(const struct sim_net *net, int link, char *name, size_t name_len,
                       double *bps, double *latency_s)
{
	const struct topology *t = net->t;
	int64_t id = net->link_id[link];
	int64_t leaves = net->per_server_ids * net->n_servers;
	if (id >= leaves) {
		/* a leaf's pooled uplinks: every NIC port under it, oversubscribed */
		double over = t->fabric.oversubscription > 1 ? t->fabric.oversubscription : 1;
		int ports = t->fabric.kind == TOPO_FABRIC_RAIL_OPTIMIZED
		            ? t->fabric.servers_per_rail_group : t->fabric.nics_per_leaf;
		snprintf(name, name_len, "leaf-%" PRId64 "-%s", (id - leaves) / 2,
		         (id - leaves) % 2 ? "down" : "up");
		*bps = ports * t->nic.bandwidth_bps / over;
		*latency_s = t->fabric.switch_latency_s;
		return;
	}
	int64_t s = id / net->per_server_ids + net->server0, r = id % net->per_server_ids;
	int64_t d = t->devices_per_server;
	if (r >= nic_off(t)) {
		nic_link_info(net, id, name, name_len, bps, latency_s);
		return;
	}
	if (r >= shared_off(t, 0)) {
		const struct topo_tier *tier = &t->tiers[r - shared_off(t, 0)];
		snprintf(name, name_len, "s%" PRId64 "-%s-shared", s, tier->name);
		*bps = tier->shared_bps;
		*latency_s = 0;
		return;
	}
	int k = 0;
	while (r >= tier_off(t, k + 1))
		k++;
	const struct topo_tier *tier = &t->tiers[k];
	int64_t x = r - tier_off(t, k);
	*bps = tier->bandwidth_bps;
	if (t->faults) { /* a degraded link or port (a mesh's a -> b, a switch's port a, a torus's hop) */
		if (tier->kind == TOPO_TIER_TORUS) {
			int at = (int)(x / 6), dim = (int)(x % 6 / 2);
			*bps *= topo_link_rate(t, s, k, at, topo_torus_step(tier, at, dim, x % 2 ? 1 : -1));
		} else {
			*bps *= tier->kind == TOPO_TIER_MESH
			                ? topo_link_rate(t, s, k, (int)(x / d), (int)(x % d))
			                : topo_link_rate(t, s, k, (int)(x / 2), (int)(x / 2));
		}
	}
	if (tier->kind == TOPO_TIER_TORUS) {
		static const char axis[] = "xyz";
		snprintf(name, name_len, "s%" PRId64 "-%s-%" PRId64 "-%c%c", s, tier->name, x / 6,
		         axis[x % 6 / 2], x % 2 ? '+' : '-');
		*latency_s = tier->latency_s;
	} else if (tier->kind == TOPO_TIER_MESH) {
		snprintf(name, name_len, "s%" PRId64 "-%s-%" PRId64 "-%" PRId64, s, tier->name, x / d,
		         x % d);
		*latency_s = tier->latency_s;
	} else {
		snprintf(name, name_len, "s%" PRId64 "-%s-%" PRId64 "-%s", s, tier->name, x / 2,
		         x % 2 ? "rx" : "tx");
		*latency_s = x % 2 ? 0 : tier->latency_s;
	}
}

static double host_speed(const struct topology *t)
{
	double peak = 0;
	for (int i = 0; i < DT_COUNT; i++)
		if (t->device.peak_flops[i] > peak)
			peak = t->device.peak_flops[i];
	return peak > 0 ? peak : 1e12;
}

/* Whether the leaves' pooled uplinks can limit a flow. Not
 * oversubscribed and without faults, a pool carries every NIC port under
 * it at the NIC's rate, as much as the NICs' own links feeding it: the
 * NICs limit first, whatever the traffic (sim/run.c's binds says the same
 * to the representatives). */
static bool pools_bind(const struct sim_net *net)
{
	return net->t->fabric.oversubscription > 1 || net->t->faults;
}

/* The pooled link a route crosses, for SimGrid, where pools cannot bind:
 * the sending NIC's own share of the uplinks (for a leaf's "up") or the
 * receiving NIC's (for "down"), the links a route takes without pooling,
 * at the same rate as the NIC's and the same switch latency. A pool would
 * couple every flow under the leaf in SimGrid's bandwidth-sharing solver
 * (each flow's start or end re-solves them all: lmm::System's
 * update_modified_cnst_set_rec and MaxMin::do_solve), for the same rates;
 * the engine keeps counting the pool's bytes under its name. Sets *id to
 * the NIC link's id (beyond the compact links) and returns true, or false
 * for a link that is not a pool or where pools bind. */
static bool unpooled_link(const struct sim_net *net, int p, int link, int64_t *id)
{
	if (!sim_net_pooled(net, link) || pools_bind(net))
		return false;
	const struct topology *t = net->t;
	int64_t d = t->devices_per_server;
	bool up = (net->link_id[link] - net->per_server_ids * net->n_servers) % 2 == 0;
	int64_t r = net->base + (up ? net->pair_src[p] : net->pair_dst[p]);
	int k = (int)(r % d * t->nic.per_server / d);
	*id = (r / d - net->server0) * net->per_server_ids + nic_off(t) + 4 * k +
	      (up ? NIC_UP : NIC_DOWN);
	return true;
}

/* A link's element: compact link `link`, or (link < 0) NIC link `id`. */
static void link_xml(const struct sim_net *net, FILE *f, int link, int64_t id)
{
	char name[96];
	double bps, lat;
	if (link >= 0)
		sim_net_link_info(net, link, name, sizeof(name), &bps, &lat);
	else
		nic_link_info(net, id, name, sizeof(name), &bps, &lat);
	fprintf(f, "<link id=\"%s\" bandwidth=\"%.17gBps\" latency=\"%.17gs\"/>\n", name, bps, lat);
}

bool sim_net_write_xml(const struct sim_net *net, FILE *f)
{
	fprintf(f, "<?xml version='1.0'?>\n"
	           "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
	           "<platform version=\"4.1\">\n<zone id=\"world\" routing=\"Full\">\n");
	double speed = host_speed(net->t);
	for (int64_t r = 0; r < net->n_ranks; r++)
		if (!net->host_used || net->host_used[r])
			fprintf(f, "<host id=\"r%" PRId64 "\" speed=\"%.17gf\"/>\n", net->base + r, speed);
	/* with pair_used, the links of the routes written only; a pool that
	 * cannot bind is written as the NICs' shares (unpooled_link) */
	bool swap = net->leaf_uplinks && !pools_bind(net);
	uint8_t *link_used = net->pair_used || swap ? calloc((size_t)net->n_links + 1, 1) : NULL;
	int64_t n_ids = net->per_server_ids * net->n_servers;
	uint8_t *nic_used = swap ? calloc((size_t)n_ids + 1, 1) : NULL;
	if ((link_used == NULL) != !(net->pair_used || swap) || (swap && !nic_used)) {
		free(link_used);
		return false;
	}
	for (int p = 0; link_used && p < net->n_pairs; p++)
		for (int i = 0; (!net->pair_used || net->pair_used[p]) && i < net->route[p].n; i++) {
			int64_t id;
			if (unpooled_link(net, p, net->route[p].link[i], &id))
				nic_used[id] = 1;
			else
				link_used[net->route[p].link[i]] = 1;
		}
	for (int l = 0; l < net->n_links; l++) {
		if (link_used && !link_used[l])
			continue;
		link_xml(net, f, l, -1);
	}
	for (int64_t id = 0; nic_used && id < n_ids; id++)
		if (nic_used[id] && !(net->compact[id] >= 0 && link_used[net->compact[id]]))
			link_xml(net, f, -1, id);
	free(link_used);
	free(nic_used);
	for (int p = 0; p < net->n_pairs; p++) {
		if (net->pair_used && !net->pair_used[p])
			continue;
		fprintf(f, "<route src=\"r%" PRId64 "\" dst=\"r%" PRId64 "\" symmetrical=\"NO\">",
		        net->base + net->pair_src[p], net->base + net->pair_dst[p]);
		for (int i = 0; i < net->route[p].n; i++) {
			char name[96];
			double bps, lat;
			int64_t id;
			if (unpooled_link(net, p, net->route[p].link[i], &id))
				nic_link_info(net, id, name, sizeof(name), &bps, &lat);
			else
				sim_net_link_info(net, net->route[p].link[i], name, sizeof(name), &bps, &lat);
			fprintf(f, "<link_ctn id=\"%s\"/>", name);
		}
		fprintf(f, "</route>\n");
	}
	fprintf(f, "</zone>\n</platform>\n");
	return !ferror(f);
}
