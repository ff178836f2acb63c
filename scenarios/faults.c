/* faults.c — a scenario's "faults": what of the cluster is down or slower
 * than its topology file says (docs/formats.md, "Faults").
 *
 * Each entry names one element by its indices in the topology (a NIC, an
 * intra-server link or port, a leaf or spine switch, a device, a server)
 * and how it is degraded: down, a fraction of its rate, a slowdown of its
 * compute, or (a server) the devices of another topology file. They fold
 * into a struct topo_faults on a copy of the scenario's topology, which
 * every route query, cost model and the simulator then read. Several
 * faults on one element multiply. A set of faults that leaves ranks of the
 * job unable to reach each other is refused with those ranks named
 * (topo_faults_connected). No hot path.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "scenarios-int.h"

enum fault_kind { FK_NIC, FK_LINK, FK_LEAF, FK_SPINE, FK_DEVICE, FK_SERVER, FK_COUNT };
static const char *const fault_kind_names[FK_COUNT] = {"nic",    "link",   "leaf",
                                                       "spine",  "device", "server"};
/* A slowdown beyond this is a device that has stopped, not a slow one. */
#define FAULT_MAX_SLOWDOWN 1000

/* The keys each kind of entry may have. */
static const char *const *fault_keys(enum fault_kind k)
{
	static const char *const nic[] = {"kind", "server", "nic", "rate", "down", NULL};
	static const char *const link[] = {"kind", "server", "tier", "devices", "device",
	                                   "rate", "down", NULL};
	static const char *const leaf[] = {"kind", "leaf", "rate", "down", NULL};
	static const char *const spine[] = {"kind", "spine", "rate", "down", NULL};
	static const char *const device[] = {"kind", "server", "device", "slowdown", NULL};
	static const char *const server[] = {"kind", "server", "slowdown", "device_from", NULL};
	static const char *const *const all[FK_COUNT] = {nic, link, leaf, spine, device, server};
	return all[k];
}

/* "rate" (0 < r <= 1) or "down": true, exactly one; 0 = down. */
static bool read_rate(const struct jv *e, double *rate)
{
	struct jv r, d;
	bool has_r = jv_get(e, "rate", &r), has_d = jv_get(e, "down", &d);
	*rate = 1;
	if (has_r && has_d) {
		jv_error(&d, "give \"rate\" or \"down\", not both");
		return false;
	}
	if (!has_r && !has_d) {
		jv_error(e, "expected \"rate\" (a fraction of the rate, above 0 and at most 1) or "
		            "\"down\": true");
		return false;
	}
	if (has_r)
		return jv_number(&r, JR_FRACTION, rate);
	bool down = false;
	if (!jv_bool(&d, &down))
		return false;
	if (!down) {
		jv_error(&d, "expected true (leave out an element that is up)");
		return false;
	}
	*rate = 0;
	return true;
}

static bool read_index(const struct jv *e, const char *key, int64_t count, const char *what,
                       int64_t *out)
{
	struct jv v;
	if (!jv_need(e, key, &v) || !jv_int(&v, JR_ANY, out))
		return false;
	if (*out < 0 || *out >= count) {
		jv_error(&v, "expected a %s index from 0 to %lld, got %lld", what,
		         (long long)count - 1, (long long)*out);
		return false;
	}
	return true;
}

/* The largest 16-bit dense peak (else fp32) times the GEMM efficiency:
 * what decides a training step's compute on a device. */
static double gemm_rate(const struct topo_device *d)
{
	double p = fmax(d->peak_flops[DT_BF16], d->peak_flops[DT_FP16]);
	if (p <= 0)
		p = d->peak_flops[DT_FP32];
	return p * (d->matmul_efficiency > 0 ? d->matmul_efficiency : 1);
}

struct fault_build {
	struct arena *a;
	const struct topology *t;
	const char *dir;
	struct topo_faults *f;
	double *spine_rates;
	int cap_links;
};

static double *rates_array(struct fault_build *b, double **p, int64_t n)
{
	if (!*p) {
		*p = arena_alloc(b->a, (size_t)n * sizeof(**p));
		if (*p)
			for (int64_t i = 0; i < n; i++)
				(*p)[i] = 1;
	}
	return *p;
}

static bool add_link(struct fault_build *b, struct topo_link_fault l)
{
	struct topo_faults *f = b->f;
	if (f->n_links == b->cap_links) {
		int cap = b->cap_links ? 2 * b->cap_links : 8;
		struct topo_link_fault *p = arena_alloc(b->a, (size_t)cap * sizeof(*p));
		if (!p)
			return false;
		if (f->n_links)
			memcpy(p, f->links, (size_t)f->n_links * sizeof(*p));
		f->links = p;
		b->cap_links = cap;
	}
	f->links[f->n_links++] = l;
	return true;
}

static bool read_link(struct fault_build *b, const struct jv *e, int64_t server, double rate)
{
	const struct topology *t = b->t;
	struct jv v, dv;
	const char *name;
	if (!jv_need(e, "tier", &v) || !jv_string(&v, &name))
		return false;
	int k = 0;
	while (k < t->n_tiers && strcmp(t->tiers[k].name, name))
		k++;
	if (k == t->n_tiers) {
		char list[160] = "";
		for (int i = 0; i < t->n_tiers; i++) {
			size_t u = strlen(list);
			snprintf(list + u, sizeof list - u, "%s\"%s\"", i ? ", " : "", t->tiers[i].name);
		}
		jv_error(&v, "expected a tier of the topology %s (%s), got \"%s\"", t->name, list, name);
		return false;
	}
	const struct topo_tier *tier = &t->tiers[k];
	int64_t dev = t->devices_per_server;
	struct topo_link_fault l = {.server = server, .tier = k, .a = -1, .b = -1, .rate = rate};
	if (tier->kind == TOPO_TIER_SWITCH) {
		if (jv_get(e, "devices", &dv)) {
			jv_error(&dv, "a %s tier links each device to the switch by its own port: name "
			              "the port by \"device\"", topo_tier_kind_names[tier->kind]);
			return false;
		}
		int64_t a;
		if (!read_index(e, "device", dev, "device", &a))
			return false;
		if (tier->group_of[a] < 0) {
			jv_get(e, "device", &dv);
			jv_error(&dv, "device %lld has no port on the tier \"%s\"", (long long)a, name);
			return false;
		}
		l.a = (int)a;
		return add_link(b, l);
	}
	if (jv_get(e, "device", &dv)) {
		jv_error(&dv, "a mesh tier has a link per pair of devices: name it by \"devices\": "
		              "[a, b]");
		return false;
	}
	if (!jv_need(e, "devices", &dv) || !jv_is_array(&dv, 2, 2))
		return false;
	int64_t ab[2];
	for (int i = 0; i < 2; i++) {
		struct jv x;
		jv_at(&dv, i, &x);
		if (!jv_int(&x, JR_RANGE(0, (double)dev - 1), &ab[i]))
			return false;
	}
	if (ab[0] == ab[1] || tier->group_of[ab[0]] < 0 ||
	    tier->group_of[ab[0]] != tier->group_of[ab[1]]) {
		jv_error(&dv, "no \"%s\" link joins devices %lld and %lld", name, (long long)ab[0],
		         (long long)ab[1]);
		return false;
	}
	l.a = (int)ab[0];
	l.b = (int)ab[1];
	return add_link(b, l);
}

static bool read_server(struct fault_build *b, const struct jv *e, int64_t server)
{
	const struct topology *t = b->t;
	struct jv sv, dv;
	bool has_s = jv_get(e, "slowdown", &sv), has_d = jv_get(e, "device_from", &dv);
	if (has_s == has_d) {
		jv_error(has_s ? &dv : e, has_s ? "give \"slowdown\" or \"device_from\", not both"
		                                : "expected \"slowdown\" (a factor of at least 1) or "
		                                  "\"device_from\" (a topology file)");
		return false;
	}
	double factor = 1;
	if (has_s) {
		if (!jv_number(&sv, JR_RANGE(1, FAULT_MAX_SLOWDOWN), &factor))
			return false;
	} else {
		const char *rel;
		if (!jv_string(&dv, &rel))
			return false;
		const char *path = util_path_join(b->a, b->dir, rel);
		struct diag_list *diags = dv.doc->diags;
		struct topology *other = path ? topo_load(b->a, path, diags) : NULL;
		if (!other) {
			jv_error(&dv, "cannot load the topology \"%s\"", rel);
			return false;
		}
		double mine = gemm_rate(&t->device), theirs = gemm_rate(&other->device);
		if (!(theirs > 0) || !(mine > 0)) {
			jv_error(&dv, "the device of \"%s\" states no dense peak to compare", rel);
			return false;
		}
		factor = mine / theirs;
	}
	double *slow = rates_array(b, &b->f->slowdown, t->n_devices);
	if (!slow)
		return false;
	for (int64_t i = 0; i < t->devices_per_server; i++)
		slow[server * t->devices_per_server + i] *= factor;
	return true;
}

static bool read_fault(struct fault_build *b, const struct jv *e)
{
	const struct topology *t = b->t;
	struct jv kv;
	if (!jv_is_object(e) || !jv_need(e, "kind", &kv))
		return false;
	int k = jv_enum(&kv, fault_kind_names, FK_COUNT);
	if (k < 0)
		return false;
	bool ok = jv_keys(e, fault_keys((enum fault_kind)k));
	int64_t server = 0, idx = 0, per = t->nic.per_server;
	double rate = 1, slowdown = 1;
	int64_t leaves = topo_fabric_leaves(t);
	switch ((enum fault_kind)k) {
	case FK_NIC:
		if (!read_index(e, "server", t->servers, "server", &server) ||
		    !read_index(e, "nic", per, "NIC", &idx) || !read_rate(e, &rate))
			return false;
		if (!rates_array(b, &b->f->nic_rate, t->servers * per))
			return false;
		b->f->nic_rate[server * per + idx] *= rate;
		return ok;
	case FK_LINK:
		if (!read_index(e, "server", t->servers, "server", &server) || !read_rate(e, &rate))
			return false;
		return read_link(b, e, server, rate) && ok;
	case FK_LEAF:
		if (leaves == 0) {
			jv_error(e, "the topology %s is one server: it has no leaf switches", t->name);
			return false;
		}
		if (!read_index(e, "leaf", leaves, "leaf", &idx) || !read_rate(e, &rate))
			return false;
		if (!rates_array(b, &b->f->nic_rate, t->servers * per))
			return false;
		for (int64_t s = 0; s < t->servers; s++)
			for (int n = 0; n < per; n++)
				if (topo_leaf_switch(t, s, n) == idx)
					b->f->nic_rate[s * per + n] *= rate;
		return ok;
	case FK_SPINE:
		if (t->fabric.spines == 0) {
			jv_error(e, "the fabric of the topology %s states no spine switches "
			            "(cluster.fabric.spines)", t->name);
			return false;
		}
		if (!read_index(e, "spine", t->fabric.spines, "spine", &idx) || !read_rate(e, &rate))
			return false;
		b->spine_rates[idx] *= rate;
		return ok;
	case FK_DEVICE: {
		struct jv sv;
		if (!read_index(e, "server", t->servers, "server", &server) ||
		    !read_index(e, "device", t->devices_per_server, "device", &idx) ||
		    !jv_need(e, "slowdown", &sv) ||
		    !jv_number(&sv, JR_RANGE(1, FAULT_MAX_SLOWDOWN), &slowdown))
			return false;
		double *slow = rates_array(b, &b->f->slowdown, t->n_devices);
		if (!slow)
			return false;
		slow[server * t->devices_per_server + idx] *= slowdown;
		return ok;
	}
	case FK_SERVER:
		if (!read_index(e, "server", t->servers, "server", &server))
			return false;
		return read_server(b, e, server) && ok;
	case FK_COUNT:
		break;
	}
	return false;
}

bool scenario_read_faults(struct arena *a, struct scenario *s, const struct jv *v,
                          const char *dir)
{
	if (!jv_is_array(v, 0, 1 << 20))
		return false;
	const struct topology *t = s->topo;
	struct topo_faults *f = arena_calloc(a, 1, sizeof(*f));
	double *spines = arena_alloc(a, (size_t)(t->fabric.spines + 1) * sizeof(*spines));
	if (!f || !spines)
		return false;
	for (int i = 0; i <= t->fabric.spines; i++)
		spines[i] = 1;
	f->servers = t->servers;
	struct fault_build b = {.a = a, .t = t, .dir = dir, .f = f, .spine_rates = spines};
	bool ok = true;
	struct jv e;
	for (bool more = jv_first(v, &e); more; more = jv_next(v, &e))
		ok = read_fault(&b, &e) && ok;
	if (!ok)
		return false;
	f->spine_rate = 1;
	if (t->fabric.spines > 0) {
		double sum = 0;
		for (int i = 0; i < t->fabric.spines; i++) {
			sum += spines[i];
			f->n_down_spines += spines[i] == 0;
		}
		f->spine_rate = sum / t->fabric.spines;
	}
	struct topology *ft = arena_alloc(a, sizeof(*ft));
	if (!ft)
		return false;
	*ft = *t;
	ft->faults = f;
	char why[512];
	if (!topo_faults_connected(ft, s->devices, why, sizeof why)) {
		jv_error(v, "%s", why);
		return false;
	}
	s->topo = ft;
	return true;
}

struct topology *scenario_faults_apply(struct arena *a, const struct topology *t, int64_t devices,
                                       const struct jv *v, const char *dir)
{
	struct scenario s = {.topo = (struct topology *)t, .devices = devices};
	return scenario_read_faults(a, &s, v, dir) ? s.topo : NULL;
}
