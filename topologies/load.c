/* load.c — reading and validating shardlab-topology files (version 1).
 *
 * A file describes one device kind, one server (devices, intra-server
 * tiers, NICs) and optionally a cluster of such servers on a fabric given by
 * parameters. A cluster file may take its device and server from a "base"
 * file. Every value is read through the jv_* accessors so that each bad
 * field becomes a diagnostic `file:line: json.path: message`, and reading
 * goes on after an error so one run reports every problem.
 *
 * Units: files say TFLOP/s, GB (10^9 bytes), GB/s, Gb/s (rate_Gbps) and
 * microseconds; the struct holds FLOP/s, bytes, bytes/s and seconds.
 * Not a hot path: a file is read once per run.
 */
#include "topologies-int.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const topo_tier_kind_names[TOPO_TIER_KIND_COUNT] = {"mesh", "switch", "torus"};
const char *const topo_fabric_kind_names[TOPO_FABRIC_KIND_COUNT] = {"none", "fat-tree",
                                                                     "rail-optimized"};
_Static_assert(TOPO_TIER_KIND_COUNT == 3, "topo_tier_kind_names out of step");
_Static_assert(TOPO_FABRIC_KIND_COUNT == 3, "topo_fabric_kind_names out of step");

#define MAX_DEVICES_PER_SERVER 4096
#define INT32_LIMIT 2147483647.0

static size_t errors_of(const struct jv *v)
{
	return v->doc->diags->errors;
}

/* A string copied into the arena; NULL after a diagnostic. */
static const char *copy_string(struct arena *a, const struct jv *v)
{
	const char *s = NULL;
	if (!jv_string(v, &s))
		return NULL;
	char *c = arena_strdup(a, s);
	if (!c)
		jv_error(v, "out of memory");
	return c;
}

static const char *req_string(struct arena *a, const struct jv *obj, const char *key)
{
	struct jv m;
	return jv_need(obj, key, &m) ? copy_string(a, &m) : NULL;
}

static void *alloc_at(struct arena *a, const struct jv *at, size_t n, size_t size)
{
	void *p = arena_calloc(a, n, size);
	if (!p)
		jv_error(at, "out of memory");
	return p;
}

/* Physical ranges of the figures a file gives. Each spans orders of
 * magnitude beyond today's hardware (an H100 has 989 dense fp16 TFLOP/s,
 * 80 GB of HBM at 3.35 TB/s; NVLink 4 runs 450 GB/s per direction per GPU;
 * NICs 400 Gb/s; links 0.1 to 10 us), yet keeps every time shardlab
 * derives from them finite and printable. */
struct phys {
	double lo, hi;
	const char *unit, *meaning; /* unit: " GB/s", ":1" */
};
static const struct phys PHYS_TFLOPS = {1e-6, 1e6, " TFLOP/s", "1 MFLOP/s to 1 EFLOP/s per device"};
static const struct phys PHYS_HBM_GB = {1e-3, 1e6, " GB", "1 MB to 1 PB per device"};
static const struct phys PHYS_HOST_GB = {1e-3, 1e9, " GB", "1 MB to 1 EB per server"};
static const struct phys PHYS_HBM_GBPS = {1e-3, 1e6, " GB/s", "1 MB/s to 1 PB/s per device"};
static const struct phys PHYS_LINK_GBPS = {1e-3, 1e5, " GB/s", "1 MB/s to 100 TB/s per link"};
static const struct phys PHYS_NIC_GBITPS = {1e-2, 1e6, " Gb/s", "10 Mb/s to 1 Pb/s per NIC"};
static const struct phys PHYS_LATENCY_US = {0, 1e6, " us", "at most 1 s"};
static const struct phys PHYS_OVERSUB = {1, 1e3, ":1", "at most 1000:1"};

/* A number that read well (its sign and type checked by the caller's
 * jv_* read) but lies outside the physical range: reported, false. */
static bool in_phys(const struct jv *obj, const char *key, double x, const struct phys *r)
{
	if (x >= r->lo && x <= r->hi)
		return true;
	struct jv m;
	jv_get(obj, key, &m);
	jv_error(&m, "%.15g%s is outside the range %g to %g%s (%s)", x, r->unit, r->lo, r->hi,
	         r->unit, r->meaning);
	return false;
}

/* ---------------------------------------------------------------- device */

static void read_peaks(const struct jv *pv, struct topo_device *d)
{
	/* the dtypes, and "fp8": the FP8 tensor-core rate, which no tensor of a
	 * graph has as its dtype (the FP8 recipe casts to it, docs/formats.md) */
	static const char *const keys[] = {"fp32", "fp16", "bf16", "int32", "int64", "bool", "fp8",
	                                   NULL};
	_Static_assert(DT_COUNT == 6, "peak_tflops keys out of step with enum dtype");
	if (!jv_open(pv, keys))
		return;
	int n = jv_len(pv);
	if (n == 0)
		jv_error(pv, "expected at least one dtype (fp32, fp16, bf16, int32, int64 or bool)");
	for (int i = 0; i < n; i++) {
		struct jv m;
		jv_at(pv, i, &m);
		bool fp8 = !strcmp(jv_key(&m), "fp8");
		int dt = dtype_parse(jv_key(&m));
		double tflops = 0;
		if (!fp8 && (dt < 0 || strcmp(dtype_names[dt], jv_key(&m))))
			continue; /* reported by jv_keys */
		if (!jv_number(&m, JR_POSITIVE, &tflops) || !in_phys(pv, jv_key(&m), tflops, &PHYS_TFLOPS))
			continue;
		if (fp8)
			d->peak_fp8_flops = tflops * 1e12;
		else
			d->peak_flops[dt] = tflops * 1e12;
	}
}

const char *const topo_kernel_class_names[TOPO_KC_COUNT + 1] = {
	[TOPO_KC_NORM] = "norm",
	[TOPO_KC_SOFTMAX] = "softmax",
	[TOPO_KC_DROPOUT] = "dropout",
	[TOPO_KC_ACTIVATION] = "activation",
	[TOPO_KC_LOSS] = "loss",
	[TOPO_KC_COUNT] = NULL,
};

/* "kernel_efficiency": {"norm": [forward, backward], ...}: each a fraction
 * of the HBM rate in (0, 1] (docs/formats.md). */
static void read_kernel_efficiency(const struct jv *kv, struct topo_device *d)
{
	if (!jv_open(kv, topo_kernel_class_names))
		return;
	for (int c = 0; c < TOPO_KC_COUNT; c++) {
		struct jv pair, e;
		if (!jv_get(kv, topo_kernel_class_names[c], &pair))
			continue;
		if (!jv_is_array(&pair, 2, 2))
			continue;
		for (int i = 0; i < 2; i++) {
			double f = 0;
			jv_at(&pair, i, &e);
			if (jv_number(&e, JR_FRACTION, &f))
				d->kernel_efficiency[c][i] = f;
		}
	}
}

static void read_device(struct arena *a, const struct jv *dv, struct topo_device *d)
{
	static const char *const keys[] = {"kind",
	                                   "peak_tflops",
	                                   "hbm_GB",
	                                   "hbm_bandwidth_GBps",
	                                   "matmul_efficiency",
	                                   "memory_efficiency",
	                                   "gemm_half_dim",
	                                   "kernel_overhead_us",
	                                   "memory_reserve_GB",
	                                   "speed_cv",
	                                   "kernel_efficiency",
	                                   "fp8_matmul_efficiency",
	                                   NULL};
	if (!jv_open(dv, keys))
		return;
	struct jv pv, kv;
	double gb = 0, gbps = 0, us = 0;
	d->kind = req_string(a, dv, "kind");
	if (jv_need(dv, "peak_tflops", &pv))
		read_peaks(&pv, d);
	if (jv_req_number(dv, "hbm_GB", JR_POSITIVE, &gb) && in_phys(dv, "hbm_GB", gb, &PHYS_HBM_GB))
		d->hbm_bytes = gb * 1e9;
	if (jv_req_number(dv, "hbm_bandwidth_GBps", JR_POSITIVE, &gbps) &&
	    in_phys(dv, "hbm_bandwidth_GBps", gbps, &PHYS_HBM_GBPS))
		d->hbm_bps = gbps * 1e9;
	jv_opt_number(dv, "matmul_efficiency", JR_FRACTION, 1, &d->matmul_efficiency);
	jv_opt_number(dv, "memory_efficiency", JR_FRACTION, 1, &d->memory_efficiency);
	/* The compute model's shape and launch terms (docs/cost-models.md):
	 * 0, the default, leaves them out, so that a file without them means
	 * what it meant before they existed. */
	jv_opt_number(dv, "gemm_half_dim", JR_RANGE(0, TOPO_MAX_GEMM_HALF_DIM), 0, &d->gemm_half_dim);
	if (jv_opt_number(dv, "kernel_overhead_us", JR_RANGE(0, TOPO_MAX_KERNEL_OVERHEAD_US), 0, &us))
		d->kernel_overhead_s = us * 1e-6;
	/* What the runtime takes before the model gets any (docs/cost-models.md,
	 * "Memory"): 0, the default, leaves it out. */
	double reserve = 0;
	if (jv_opt_number(dv, "memory_reserve_GB", JR_RANGE(0, 1e3), 0, &reserve))
		d->memory_reserve_bytes = reserve * 1e9;
	/* Devices of one kind are not equally fast (docs/cost-models.md,
	 * "Stragglers"): 0, the default, makes them so. */
	jv_opt_number(dv, "speed_cv", JR_RANGE(0, 0.5), 0, &d->speed_cv);
	/* Memory-bound kernels by class (docs/cost-models.md): absent, every
	 * class streams at memory_efficiency, as before the member existed. */
	if (jv_get(dv, "kernel_efficiency", &kv))
		read_kernel_efficiency(&kv, d);
	/* FP8 GEMMs (the fp8 recipes, docs/formats.md): their own measured
	 * fraction where the file has one, else the bf16 one. */
	jv_opt_number(dv, "fp8_matmul_efficiency", JR_FRACTION, d->matmul_efficiency,
	              &d->fp8_matmul_efficiency);
	if (jv_get(dv, "fp8_matmul_efficiency", &kv) && d->peak_fp8_flops <= 0)
		jv_error(&kv, "no FP8 rate to scale: give peak_tflops.fp8 too");
}

/* ----------------------------------------------------------------- tiers */

/* One group of a tier: device indices, none twice in the tier. */
static void read_group(const struct jv *gv, int g, struct topo_tier *tier, int devices)
{
	if (!jv_is_array(gv, 2, 0x7fffffff))
		return;
	for (int i = 0; i < jv_len(gv); i++) {
		struct jv e;
		int64_t dev = 0;
		jv_at(gv, i, &e);
		if (!jv_int(&e, JR_RANGE(0, devices - 1), &dev))
			continue;
		if (tier->group_of[dev] >= 0) {
			jv_error(&e, "device %d is already in groups[%d] of this tier", (int)dev,
			         tier->group_of[dev]);
			continue;
		}
		tier->group_of[dev] = g;
		tier->group_size[g]++;
	}
}

/* "groups", or one group of every device when absent. */
static void read_groups(struct arena *a, const struct jv *tv, struct topo_tier *tier, int devices)
{
	struct jv gv;
	tier->group_of = alloc_at(a, tv, (size_t)devices, sizeof(int));
	if (!tier->group_of)
		return;
	for (int d = 0; d < devices; d++)
		tier->group_of[d] = -1;
	if (!jv_get(tv, "groups", &gv)) {
		tier->n_groups = 1;
		tier->group_size = alloc_at(a, tv, 1, sizeof(int));
		if (tier->group_size)
			tier->group_size[0] = devices;
		for (int d = 0; tier->group_size && d < devices; d++)
			tier->group_of[d] = 0;
		return;
	}
	if (!jv_is_array(&gv, 1, devices))
		return;
	tier->n_groups = jv_len(&gv);
	tier->group_size = alloc_at(a, &gv, (size_t)tier->n_groups, sizeof(int));
	for (int g = 0; tier->group_size && g < tier->n_groups; g++) {
		struct jv e;
		jv_at(&gv, g, &e);
		read_group(&e, g, tier, devices);
	}
}

/* A torus tier's "dims": 1 to 3 extents whose product is the server's
 * devices, a route at most TOPO_TORUS_MAX_HOPS links long; one group of
 * every device. Other kinds have no "dims". */
static void read_dims(const struct jv *tv, struct topo_tier *tier, int devices)
{
	struct jv dv, gv;
	bool has = jv_get(tv, "dims", &dv);
	if (tier->kind != TOPO_TIER_TORUS) {
		if (has)
			jv_error(&dv, "only a torus tier has dims");
		return;
	}
	if (jv_get(tv, "groups", &gv))
		jv_error(&gv, "a torus tier joins every device of the server: remove \"groups\"");
	if (!has) {
		jv_need(tv, "dims", &dv);
		return;
	}
	if (!jv_is_array(&dv, 1, 3))
		return;
	int64_t product = 1, hops = 0;
	tier->dims[0] = tier->dims[1] = tier->dims[2] = 1;
	for (int i = 0; i < jv_len(&dv); i++) {
		struct jv e;
		int64_t x = 0;
		jv_at(&dv, i, &e);
		if (!jv_int(&e, JR_RANGE(1, MAX_DEVICES_PER_SERVER), &x))
			return;
		tier->dims[i] = (int)x;
		product *= x;
		hops += x / 2;
	}
	if (product != devices)
		jv_error(&dv, "the torus has %lld devices, the server %d", (long long)product, devices);
	else if (hops > TOPO_TORUS_MAX_HOPS)
		jv_error(&dv, "its longest route crosses %lld links, more than %d", (long long)hops,
		         TOPO_TORUS_MAX_HOPS);
}

static void read_tier(struct arena *a, const struct jv *tv, struct topo_tier *tier, int devices)
{
	static const char *const keys[] = {"name",        "kind",       "groups",
	                                   "bandwidth_GBps", "efficiency", "latency_us",
	                                   "shared_GBps", "dims", NULL};
	if (!jv_open(tv, keys))
		return;
	struct jv kv;
	double gbps = 0, us = 0, shared = 0;
	tier->name = req_string(a, tv, "name");
	if (jv_need(tv, "kind", &kv)) {
		int k = jv_enum(&kv, topo_tier_kind_names, TOPO_TIER_KIND_COUNT);
		tier->kind = k < 0 ? TOPO_TIER_MESH : (enum topo_tier_kind)k;
	}
	if (devices >= 2)
		read_groups(a, tv, tier, devices);
	read_dims(tv, tier, devices);
	jv_opt_number(tv, "efficiency", JR_FRACTION, 1, &tier->efficiency);
	if (jv_req_number(tv, "bandwidth_GBps", JR_POSITIVE, &gbps) &&
	    in_phys(tv, "bandwidth_GBps", gbps, &PHYS_LINK_GBPS))
		tier->bandwidth_bps = gbps * 1e9 * tier->efficiency;
	if (jv_req_number(tv, "latency_us", JR_NONNEG, &us) &&
	    in_phys(tv, "latency_us", us, &PHYS_LATENCY_US))
		tier->latency_s = us * 1e-6;
	if (jv_opt_number(tv, "shared_GBps", JR_POSITIVE, 0, &shared) &&
	    (shared == 0 || in_phys(tv, "shared_GBps", shared, &PHYS_LINK_GBPS)))
		tier->shared_bps = shared * 1e9;
}

/* Every pair of devices must share a group in at least one tier. */
static void check_pairs(const struct jv *tiers_v, const struct topology *t)
{
	int64_t bad = 0;
	int first_a = -1, first_b = -1;
	for (int i = 0; i < t->devices_per_server; i++) {
		for (int j = i + 1; j < t->devices_per_server; j++) {
			if (topo_local_tier(t, i, j) >= 0)
				continue;
			if (bad++ == 0) {
				first_a = i;
				first_b = j;
			}
		}
	}
	if (bad == 1)
		jv_error(tiers_v, "devices %d and %d share no tier", first_a, first_b);
	else if (bad > 1)
		jv_error(tiers_v, "devices %d and %d share no tier (%lld pairs share none)", first_a,
		         first_b, (long long)bad);
}

static void read_tiers(struct arena *a, const struct jv *tv, struct topology *t)
{
	size_t before = errors_of(tv);
	if (!jv_is_array(tv, 1, TOPO_MAX_TIERS))
		return;
	t->n_tiers = jv_len(tv);
	for (int i = 0; i < t->n_tiers; i++) {
		struct jv e, nv;
		jv_at(tv, i, &e);
		read_tier(a, &e, &t->tiers[i], t->devices_per_server);
		for (int k = 0; k < i && t->tiers[i].name; k++) {
			if (t->tiers[k].name && !strcmp(t->tiers[k].name, t->tiers[i].name)) {
				jv_get(&e, "name", &nv);
				jv_error(&nv, "tier name \"%s\" is already used by tiers[%d]",
				         t->tiers[i].name, k);
				break;
			}
		}
	}
	if (errors_of(tv) == before && t->devices_per_server >= 2)
		check_pairs(tv, t);
}

/* ---------------------------------------------------------------- server */

static void read_nic(const struct jv *nv, struct topology *t)
{
	static const char *const keys[] = {"per_server", "rate_Gbps", "efficiency", "latency_us",
	                                   NULL};
	if (!jv_open(nv, keys))
		return;
	int devices = t->devices_per_server;
	int64_t per = 0;
	double gbit = 0, us = 0;
	struct jv pv;
	if (jv_need(nv, "per_server", &pv) &&
	    jv_int(&pv, JR_RANGE(1, MAX_DEVICES_PER_SERVER), &per)) {
		if (devices > 0 && devices % per)
			jv_error(&pv, "%d NICs cannot be shared evenly by the server's %d device%s",
			         (int)per, devices, devices == 1 ? "" : "s");
		else
			t->nic.per_server = (int)per;
	}
	jv_opt_number(nv, "efficiency", JR_FRACTION, 1, &t->nic.efficiency);
	if (jv_req_number(nv, "rate_Gbps", JR_POSITIVE, &gbit) &&
	    in_phys(nv, "rate_Gbps", gbit, &PHYS_NIC_GBITPS))
		t->nic.bandwidth_bps = gbit * 1e9 / 8 * t->nic.efficiency;
	if (jv_req_number(nv, "latency_us", JR_NONNEG, &us) &&
	    in_phys(nv, "latency_us", us, &PHYS_LATENCY_US))
		t->nic.latency_s = us * 1e-6;
}

const char *const topo_coll_library_names[TOPO_COLL_LIBRARY_COUNT] = {"none", "nccl", "hccl"};
const char *const topo_link_class_names[TOPO_LINK_CLASS_COUNT] = {"nvlink", "pci"};
_Static_assert(TOPO_COLL_LIBRARY_COUNT == 3 && TOPO_LINK_CLASS_COUNT == 2,
               "library or link class names out of step");

/* An array of n bus-bandwidth caps in GB/s ("tree_max_busbw_GBps",
 * "ll_max_busbw_GBps"), stored in bytes/s; a missing member leaves them 0
 * (no cap). */
static void read_caps(const struct jv *cv, const char *key, int n, double *out)
{
	struct jv v;
	if (!jv_get(cv, key, &v) || !jv_is_array(&v, n, n))
		return;
	for (int i = 0; i < n; i++) {
		struct jv e;
		double gb = 0;
		jv_at(&v, i, &e);
		if (!jv_number(&e, JR_POSITIVE, &gb))
			continue;
		if (gb < PHYS_LINK_GBPS.lo || gb > PHYS_LINK_GBPS.hi)
			jv_error(&e, "%.15g GB/s is outside the range %g to %g GB/s (%s)", gb,
			         PHYS_LINK_GBPS.lo, PHYS_LINK_GBPS.hi, PHYS_LINK_GBPS.meaning);
		else
			out[i] = gb * 1e9;
	}
}

static void read_collectives(const struct jv *cv, struct topology *t)
{
	static const char *const keys[] = {"library", "intra", "tree_max_busbw_GBps",
	                                   "ll_max_busbw_GBps", "nvls", "pipeline", NULL};
	if (!jv_open(cv, keys))
		return;
	struct jv v;
	if (jv_need(cv, "library", &v)) {
		int k = jv_enum(&v, topo_coll_library_names, TOPO_COLL_LIBRARY_COUNT);
		if (k >= 0)
			t->coll.library = (enum topo_coll_library)k;
	}
	if (jv_get(cv, "intra", &v)) {
		int k = jv_enum(&v, topo_link_class_names, TOPO_LINK_CLASS_COUNT);
		if (k >= 0)
			t->coll.intra = (enum topo_link_class)k;
	}
	read_caps(cv, "tree_max_busbw_GBps", 2, t->coll.tree_max_busbw_bps);
	read_caps(cv, "ll_max_busbw_GBps", 3, t->coll.ll_max_busbw_bps);
	if (jv_opt_bool(cv, "nvls", false, &t->coll.nvls) && t->coll.nvls) {
		/* NVLink SHARP: NCCL on NVLink through a switch that reduces */
		jv_get(cv, "nvls", &v);
		bool sw = t->n_tiers > 0 && t->tiers[t->n_tiers - 1].kind == TOPO_TIER_SWITCH;
		if (t->coll.library != TOPO_COLL_NCCL || t->coll.intra != TOPO_LINK_NVLINK || !sw) {
			jv_error(&v, "NVLS needs \"library\": \"nccl\", \"intra\": \"nvlink\" and a "
			             "server whose outermost tier is a switch");
			t->coll.nvls = false;
		}
	}
	if (jv_opt_bool(cv, "pipeline", false, &t->coll.pipeline) && t->coll.pipeline &&
	    t->coll.library != TOPO_COLL_HCCL) {
		jv_get(cv, "pipeline", &v);
		jv_error(&v, "the pipeline algorithm is HCCL's: it needs \"library\": \"hccl\"");
		t->coll.pipeline = false;
	}
}

/* "host": the device's link to its host's memory, its share of that
 * memory's bandwidth (the offloaded optimizer's, docs/formats.md), and,
 * optionally, the server's host memory capacity. */
static void read_host(const struct jv *hv, struct topology *t)
{
	static const char *const keys[] = {"link_GBps", "memory_GBps", "memory_GB", NULL};
	if (!jv_open(hv, keys))
		return;
	double link = 0, mem = 0;
	if (jv_req_number(hv, "link_GBps", JR_POSITIVE, &link) &&
	    in_phys(hv, "link_GBps", link, &PHYS_LINK_GBPS))
		t->host.link_bps = link * 1e9;
	if (jv_req_number(hv, "memory_GBps", JR_POSITIVE, &mem) &&
	    in_phys(hv, "memory_GBps", mem, &PHYS_HBM_GBPS))
		t->host.memory_bps = mem * 1e9;
	double cap = 0;
	if (jv_opt_number(hv, "memory_GB", JR_POSITIVE, 0, &cap) && cap > 0 &&
	    in_phys(hv, "memory_GB", cap, &PHYS_HOST_GB))
		t->host.capacity_bytes = cap * 1e9;
	t->host.given = true;
}

static void read_server(struct arena *a, const struct jv *sv, struct topology *t)
{
	static const char *const keys[] = {"devices", "tiers", "nic", "collectives", "host", NULL};
	if (!jv_open(sv, keys))
		return;
	int64_t devices = 0;
	struct jv tv, nv;
	if (jv_req_int(sv, "devices", JR_RANGE(1, MAX_DEVICES_PER_SERVER), &devices))
		t->devices_per_server = (int)devices;
	if (!jv_get(sv, "tiers", &tv)) {
		if (devices > 1)
			jv_need(sv, "tiers", &tv);
	} else if (devices == 1) {
		jv_error(&tv, "a server with one device has no tiers; remove \"tiers\"");
	} else {
		read_tiers(a, &tv, t);
	}
	if (jv_need(sv, "nic", &nv))
		read_nic(&nv, t);
	struct jv cv, hv;
	if (jv_get(sv, "collectives", &cv))
		read_collectives(&cv, t);
	t->host = (struct topo_host){.link_bps = TOPO_HOST_LINK_GBPS * 1e9,
	                             .memory_bps = TOPO_HOST_MEMORY_GBPS * 1e9};
	if (jv_get(sv, "host", &hv))
		read_host(&hv, t);
}

/* --------------------------------------------------------------- cluster */

/* A member that only one fabric kind may have. */
static void forbid(const struct jv *fv, const char *key, const char *why)
{
	struct jv m;
	if (jv_get(fv, key, &m))
		jv_error(&m, "%s", why);
}

static void read_fabric(const struct jv *fv, struct topo_fabric *f)
{
	static const char *const keys[] = {"kind", "nics_per_leaf", "servers_per_rail_group",
	                                   "oversubscription", "switch_latency_us", "spines",
	                                   NULL};
	if (!jv_open(fv, keys))
		return;
	struct jv kv;
	int64_t n = 0;
	double us = 0;
	if (jv_need(fv, "kind", &kv)) {
		int k = jv_enum(&kv, topo_fabric_kind_names + 1, TOPO_FABRIC_KIND_COUNT - 1);
		f->kind = (enum topo_fabric_kind)(k + 1); /* NONE when bad */
	}
	if (f->kind == TOPO_FABRIC_FAT_TREE) {
		if (jv_req_int(fv, "nics_per_leaf", JR_RANGE(1, INT32_LIMIT), &n))
			f->nics_per_leaf = (int)n;
		forbid(fv, "servers_per_rail_group", "only a rail-optimized fabric has rail groups");
	} else if (f->kind == TOPO_FABRIC_RAIL_OPTIMIZED) {
		if (jv_req_int(fv, "servers_per_rail_group", JR_RANGE(1, INT32_LIMIT), &n)) {
			f->servers_per_rail_group = (int)n;
			f->nics_per_leaf = (int)n; /* a rail leaf serves one NIC per server */
		}
		forbid(fv, "nics_per_leaf",
		       "a rail-optimized fabric has one leaf per rail and rail group; "
		       "use servers_per_rail_group");
	}
	if (jv_opt_number(fv, "oversubscription", JR_RANGE(1, 1e308), 1, &f->oversubscription) &&
	    !in_phys(fv, "oversubscription", f->oversubscription, &PHYS_OVERSUB))
		f->oversubscription = 1;
	if (jv_req_number(fv, "switch_latency_us", JR_NONNEG, &us) &&
	    in_phys(fv, "switch_latency_us", us, &PHYS_LATENCY_US))
		f->switch_latency_s = us * 1e-6;
	/* the spine switches the leaves' uplinks spread over (a scenario's
	 * faults may name one); a leaf has at most a few hundred ports */
	if (jv_opt_int(fv, "spines", JR_RANGE(1, 4096), 0, &n))
		f->spines = (int)n;
}

static void read_cluster(const struct jv *cv, struct topology *t)
{
	static const char *const keys[] = {"servers", "fabric", NULL};
	if (!jv_open(cv, keys))
		return;
	int64_t servers = 0;
	struct jv sv, fv;
	if (jv_need(cv, "servers", &sv) && jv_int(&sv, JR_RANGE(1, INT32_LIMIT), &servers)) {
		int64_t d = t->devices_per_server;
		if (d > 0 && servers * d > (int64_t)INT32_LIMIT)
			jv_error(&sv, "%lld servers of %lld devices make %lld ranks, more than %lld",
			         (long long)servers, (long long)d, (long long)(servers * d),
			         (long long)INT32_LIMIT);
		else
			t->servers = (int)servers;
	}
	if (jv_need(cv, "fabric", &fv))
		read_fabric(&fv, &t->fabric);
}

/* ------------------------------------------------------------- documents */

static void read_doc(struct arena *a, struct json_doc *doc, struct topology *t, bool is_base);

/* The base file's format when it is a string, NULL otherwise; reports
 * nothing (read_doc reports a bad header). */
static const char *peek_format(const struct json_doc *doc)
{
	if (!cJSON_IsObject(doc->root))
		return NULL;
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc->root, "format");
	return cJSON_IsString(f) ? f->valuestring : NULL;
}

/* The device and server of `t` from the file named by "base". */
static void read_base(struct arena *a, const struct jv *bv, struct topology *t)
{
	const char *rel = NULL, *err = NULL;
	size_t len = 0;
	if (!jv_string(bv, &rel))
		return;
	char *path = util_path_join(a, util_path_dir(a, bv->doc->file), rel);
	if (!path) {
		jv_error(bv, "out of memory");
		return;
	}
	char *text = util_read_file(path, &len, &err);
	if (!text) {
		jv_error(bv, "cannot read the base file %s: %s", path, err);
		return;
	}
	struct json_doc bdoc;
	bool parsed = json_doc_parse(&bdoc, path, text, len, bv->doc->diags);
	free(text);
	const char *fmt = parsed ? peek_format(&bdoc) : NULL;
	if (fmt && strcmp(fmt, TOPO_FORMAT)) {
		jv_error(bv, "the base file %s is a \"%s\" file, not a \"%s\"", path, fmt, TOPO_FORMAT);
	} else if (parsed) {
		struct topology base = {0};
		read_doc(a, &bdoc, &base, true);
		t->device = base.device;
		t->devices_per_server = base.devices_per_server;
		t->n_tiers = base.n_tiers;
		memcpy(t->tiers, base.tiers, sizeof(t->tiers));
		t->nic = base.nic;
		t->coll = base.coll;
		t->host = base.host;
		t->calibration_file = base.calibration_file;
	}
	json_doc_free(&bdoc);
}

/* Device and server from this file, or from the base it names. */
static void read_machine(struct arena *a, const struct jv *root, struct topology *t,
                         bool is_base)
{
	struct jv bv, dv, sv;
	if (jv_get(root, "base", &bv)) {
		if (is_base) {
			jv_error(&bv, "a base topology cannot name a base of its own");
			return;
		}
		if (jv_get(root, "device", &dv))
			jv_error(&dv, "not allowed with \"base\" (the device comes from the base file)");
		if (jv_get(root, "server", &sv))
			jv_error(&sv, "not allowed with \"base\" (the server comes from the base file)");
		read_base(a, &bv, t);
		return;
	}
	if (jv_need(root, "device", &dv))
		read_device(a, &dv, &t->device);
	if (jv_need(root, "server", &sv))
		read_server(a, &sv, t);
}

/* "calibration": a calibration file from the topology's folder, which the
 * commands apply by default (cli/interval.c), or "none". Only its
 * presence is checked here: it is read, and its device held to this
 * topology's, where it is applied. */
static void read_calibration(struct arena *a, const struct jv *cv, struct topology *t)
{
	const char *rel = NULL;
	if (!jv_string(cv, &rel))
		return;
	if (!strcmp(rel, "none")) {
		t->calibration_file = "none";
		return;
	}
	char *path = util_path_join(a, util_path_dir(a, cv->doc->file), rel);
	if (!path) {
		jv_error(cv, "out of memory");
		return;
	}
	errno = 0;
	FILE *f = fopen(path, "r");
	bool unreadable = !f || (getc(f) == EOF && ferror(f)); /* a folder opens, not reads */
	int err = errno;
	if (f)
		fclose(f);
	if (unreadable) {
		jv_error(cv, "cannot read the calibration file %s: %s", path,
		         strerror(err ? err : EIO));
		return;
	}
	t->calibration_file = path;
}

static void read_doc(struct arena *a, struct json_doc *doc, struct topology *t, bool is_base)
{
	static const char *const keys[] = {"format", "version", "name",   "description", "source",
	                                   "base",   "device",  "server", "cluster",     "calibration",
	                                   NULL};
	struct jv root, dv, cv;
	/* another kind of file, or a version this does not read: its keys
	 * would only add errors that say the same (as every other loader) */
	if (!jv_root(doc, &root) || !jv_header(&root, TOPO_FORMAT, TOPO_VERSION))
		return;
	jv_keys(&root, keys);
	t->name = req_string(a, &root, "name");
	t->source = req_string(a, &root, "source");
	if (jv_get(&root, "description", &dv))
		t->description = copy_string(a, &dv);
	read_machine(a, &root, t, is_base);
	if (jv_get(&root, "calibration", &cv))
		read_calibration(a, &cv, t);
	t->servers = 1;
	t->fabric.oversubscription = 1;
	if (jv_get(&root, "cluster", &cv)) {
		if (is_base)
			jv_error(&cv, "a base topology describes one server and cannot have a cluster");
		else
			read_cluster(&cv, t);
	}
	t->n_devices = (int64_t)t->servers * t->devices_per_server;
}

struct topology *topo_load_doc(struct arena *a, struct json_doc *doc)
{
	SL_ASSERT(a && doc && doc->diags);
	if (!doc->root)
		return NULL; /* the parser has reported why */
	size_t before = doc->diags->errors;
	struct topology *t = arena_calloc(a, 1, sizeof(*t));
	if (!t) {
		diag_add(doc->diags, DIAG_ERROR, doc->file, 0, NULL, "out of memory");
		return NULL;
	}
	t->file = arena_strdup(a, doc->file ? doc->file : "");
	read_doc(a, doc, t, false);
	return doc->diags->errors == before && t->file ? t : NULL;
}

struct topology *topo_load(struct arena *a, const char *path, struct diag_list *diags)
{
	struct json_doc doc;
	struct topology *t = NULL;
	if (json_doc_load(&doc, path, diags))
		t = topo_load_doc(a, &doc);
	json_doc_free(&doc);
	return t;
}

/* ------------------------------------------------------------- resizing */

bool topo_servers_ok(const struct topology *t, int64_t servers, char *why, size_t size)
{
	SL_ASSERT(t && why && size);
	int64_t d = t->devices_per_server;
	if (servers < 1)
		snprintf(why, size, "%lld servers: a cluster has at least one", (long long)servers);
	else if (servers > 1 && t->fabric.kind == TOPO_FABRIC_NONE)
		snprintf(why, size,
		         "the topology %s is one server with no fabric between servers; name a "
		         "cluster topology file",
		         t->name);
	else if (t->fabric.kind == TOPO_FABRIC_RAIL_OPTIMIZED &&
	         servers > t->fabric.servers_per_rail_group &&
	         servers % t->fabric.servers_per_rail_group)
		snprintf(why, size, "%lld servers are not whole rail groups of %d", (long long)servers,
		         t->fabric.servers_per_rail_group);
	else if ((double)servers * (double)d > INT32_LIMIT)
		snprintf(why, size, "%lld servers of %lld devices make more than %.0f ranks",
		         (long long)servers, (long long)d, INT32_LIMIT);
	else
		return true;
	return false;
}

struct topology *topo_with_servers(struct arena *a, const struct topology *t, int64_t servers)
{
	SL_ASSERT(a && t && servers >= 1 && servers <= (int64_t)INT32_LIMIT);
	struct topology *g = arena_alloc(a, sizeof(*g));
	if (!g)
		return NULL;
	*g = *t;
	g->servers = (int)servers;
	g->n_devices = servers * t->devices_per_server;
	return g;
}

struct topology *topo_for_devices(struct arena *a, struct topology *t, int64_t devices,
                                  char *why, size_t size)
{
	SL_ASSERT(a && t && why && size);
	if (devices <= t->n_devices)
		return t;
	int64_t d = t->devices_per_server;
	if (t->fabric.kind == TOPO_FABRIC_NONE) {
		snprintf(why, size,
		         "the topology %s is one server of %lld devices, %lld asked for; a cluster "
		         "topology file grows by whole servers",
		         t->name, (long long)t->n_devices, (long long)devices);
		return NULL;
	}
	if (devices % d) {
		snprintf(why, size,
		         "the topology %s has %lld devices, %lld asked for; to grow it by whole "
		         "servers ask for a multiple of its %lld devices per server",
		         t->name, (long long)t->n_devices, (long long)devices, (long long)d);
		return NULL;
	}
	if (!topo_servers_ok(t, devices / d, why, size))
		return NULL;
	struct topology *g = topo_with_servers(a, t, devices / d);
	if (!g)
		snprintf(why, size, "out of memory");
	return g;
}
