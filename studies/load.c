/* load.c — the study loader (docs/formats.md, "Studies").
 *
 * A study names a scenario (file or inline object: the model and the
 * training settings; its own topology and device count are replaced by
 * each cluster's), cluster families with their server counts, prices and
 * power, the configurations, the global batches and the goal. Every
 * problem is reported in one run as FILE:LINE: PATH: MESSAGE. The inputs'
 * hash covers the text of the study and of every file it reads, and the
 * loaded topologies' figures (which a "base" file may hold). No hot path.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "studies-int.h"

/* ------------------------------------------------------------------ hash */

uint64_t studies_fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		h ^= b[i];
		h *= STUDIES_FNV_PRIME;
	}
	return h;
}


static uint64_t fnv_str(uint64_t h, const char *s)
{
	return studies_fnv(h, s ? s : "", s ? strlen(s) + 1 : 1);
}

static uint64_t fnv_num(uint64_t h, double x)
{
	char buf[40];
	int n = snprintf(buf, sizeof buf, "%.17g;", x);
	return studies_fnv(h, buf, (size_t)n);
}

/* A file's text, not its name: the same study read from another working
 * directory, or through another relative path, hashes the same. A file
 * that cannot be read hashes as its name (the loader reported it). */
static uint64_t fnv_file(uint64_t h, const char *path)
{
	if (!path)
		return fnv_str(h, path);
	size_t len = 0;
	const char *err;
	char *text = util_read_file(path, &len, &err);
	h = text ? studies_fnv(fnv_str(h, "file"), text, len) : fnv_str(h, path);
	free(text);
	return h;
}

/* The figures a cost model reads, wherever the file took them from. */
static uint64_t fnv_topo(uint64_t h, const struct topology *t)
{
	const struct topo_device *d = &t->device;
	h = fnv_str(h, d->kind);
	for (int i = 0; i < DT_COUNT; i++)
		h = fnv_num(h, d->peak_flops[i]);
	double dev[] = {d->hbm_bytes,      d->hbm_bps,           d->matmul_efficiency,
	                d->memory_efficiency, d->gemm_half_dim, d->kernel_overhead_s,
	                d->memory_reserve_bytes, d->speed_cv};
	for (size_t i = 0; i < SL_COUNTOF(dev); i++)
		h = fnv_num(h, dev[i]);
	h = fnv_num(h, t->devices_per_server);
	for (int k = 0; k < t->n_tiers; k++) {
		const struct topo_tier *x = &t->tiers[k];
		h = fnv_str(h, x->name);
		double tier[] = {x->kind, x->n_groups, x->bandwidth_bps, x->latency_s, x->shared_bps};
		for (size_t i = 0; i < SL_COUNTOF(tier); i++)
			h = fnv_num(h, tier[i]);
		for (int i = 0; i < t->devices_per_server; i++)
			h = fnv_num(h, x->group_of[i]);
	}
	double net[] = {t->nic.per_server, t->nic.bandwidth_bps, t->nic.latency_s, t->fabric.kind,
	                t->fabric.nics_per_leaf, t->fabric.servers_per_rail_group,
	                t->fabric.oversubscription, t->fabric.switch_latency_s};
	for (size_t i = 0; i < SL_COUNTOF(net); i++)
		h = fnv_num(h, net[i]);
	const struct topo_collectives *c = &t->coll;
	double coll[] = {c->library, c->intra, c->tree_max_busbw_bps[0], c->tree_max_busbw_bps[1],
	                 c->ll_max_busbw_bps[0], c->ll_max_busbw_bps[1], c->ll_max_busbw_bps[2],
	                 c->nvls, c->pipeline};
	for (size_t i = 0; i < SL_COUNTOF(coll); i++)
		h = fnv_num(h, coll[i]);
	/* calibrated NCCL hop latencies, where any is set (so that an
	 * uncalibrated topology keeps its hash) */
	for (int hw = 0; c->hop_set && hw < 3; hw++)
		for (int al = 0; al < 2; al++)
			for (int p = 0; p < 3; p++)
				if (c->hop_set & TOPO_NCCL_HOP_BIT(hw, al, p))
					h = fnv_num(fnv_num(h, hw * 6 + al * 3 + p), c->hop_us[hw][al][p]);
	return h;
}

const char *study_hash_text(char buf[17], uint64_t h)
{
	snprintf(buf, 17, "%016llx", (unsigned long long)h);
	return buf;
}

/* --------------------------------------------------------------- fields */

/* An integer or a list of them, ascending and distinct after sorting;
 * `what` names them in messages. */
static int cmp_i64(const void *pa, const void *pb)
{
	int64_t a = *(const int64_t *)pa, b = *(const int64_t *)pb;
	return (a > b) - (a < b);
}

static bool read_counts(struct arena *a, const struct jv *v, int64_t max, int64_t **out, int *n)
{
	if (v->node && cJSON_IsNumber(v->node)) {
		*out = arena_alloc(a, sizeof **out);
		*n = 1;
		return *out && jv_int(v, JR_RANGE(1, (double)max), &(*out)[0]);
	}
	if (!jv_is_array(v, 1, 4096))
		return false;
	int len = jv_len(v);
	*out = arena_calloc(a, (size_t)len, sizeof **out);
	if (!*out)
		return false;
	bool ok = true;
	struct jv e;
	int i = 0;
	for (bool more = jv_first(v, &e); more; more = jv_next(v, &e), i++)
		ok = jv_int(&e, JR_RANGE(1, (double)max), &(*out)[i]) && ok;
	if (!ok)
		return false;
	qsort(*out, (size_t)len, sizeof **out, cmp_i64);
	for (i = 1; i < len; i++)
		if ((*out)[i] == (*out)[i - 1]) {
			jv_error(v, "%lld is listed twice", (long long)(*out)[i]);
			return false;
		}
	*n = len;
	return true;
}

static bool read_power(struct study_cluster *c, const struct jv *obj)
{
	static const char *const keys[] = {"idle", "busy", NULL};
	struct jv v;
	c->idle_w = c->busy_w = -1;
	if (!jv_get(obj, "power_w", &v))
		return true;
	if (!jv_open(&v, keys))
		return false;
	bool ok = jv_req_number(&v, "idle", JR_NONNEG, &c->idle_w);
	ok = jv_req_number(&v, "busy", JR_POSITIVE, &c->busy_w) && ok;
	if (ok && c->busy_w < c->idle_w) {
		struct jv b;
		jv_get(&v, "busy", &b);
		jv_error(&b, "busy power %g W is below the idle power %g W", c->busy_w, c->idle_w);
		ok = false;
	}
	if (!ok)
		c->idle_w = c->busy_w = -1;
	return ok;
}

static bool read_cluster(struct arena *a, const char *dir, const struct jv *v,
                         struct study_cluster *c, uint64_t *h)
{
	static const char *const keys[] = {"name", "topology", "servers", "price_per_device_hour",
	                                   "power_w", "source", NULL};
	if (!jv_open(v, keys))
		return false;
	c->line = v->line;
	const char *str;
	bool ok = true;
	if (jv_req_string(v, "name", &str))
		c->name = arena_strdup(a, str);
	else
		ok = false;
	struct jv t, s;
	if (jv_need(v, "topology", &t) && jv_string(&t, &str)) {
		c->topology_file = util_path_join(a, dir, str);
		size_t before = v->doc->diags->errors;
		c->topo = c->topology_file ? topo_load(a, c->topology_file, v->doc->diags) : NULL;
		if (!c->topo && v->doc->diags->errors == before)
			jv_error(&t, "cannot load the topology \"%s\"", str);
		if (c->topo)
			*h = fnv_topo(fnv_file(*h, c->topology_file), c->topo);
		ok = c->topo && ok;
	} else {
		ok = false;
	}
	if (jv_need(v, "servers", &s) && read_counts(a, &s, 1 << 20, &c->servers, &c->n_sizes)) {
		char why[256];
		for (int i = 0; c->topo && i < c->n_sizes; i++) {
			if (!topo_servers_ok(c->topo, c->servers[i], why, sizeof why)) {
				jv_error(&s, "%s", why);
				ok = false;
				if (c->topo->fabric.kind == TOPO_FABRIC_NONE)
					break;
			}
		}
	} else {
		ok = false;
	}
	ok = jv_opt_number(v, "price_per_device_hour", JR_NONNEG, -1, &c->price_per_device_hour) &&
	     ok;
	ok = read_power(c, v) && ok;
	struct jv src;
	if (jv_get(v, "source", &src))
		ok = jv_string(&src, &str) && ok;
	return ok;
}

static bool read_clusters(struct arena *a, const char *dir, const struct jv *root,
                          struct study *st, uint64_t *h)
{
	struct jv v;
	if (!jv_need(root, "clusters", &v))
		return false;
	st->clusters_line = v.line;
	if (!jv_is_array(&v, 1, 64))
		return false;
	st->n_clusters = jv_len(&v);
	st->clusters = arena_calloc(a, (size_t)st->n_clusters, sizeof *st->clusters);
	if (!st->clusters)
		return false;
	bool ok = true;
	struct jv e;
	int i = 0;
	for (bool more = jv_first(&v, &e); more; more = jv_next(&v, &e), i++) {
		ok = read_cluster(a, dir, &e, &st->clusters[i], h) && ok;
		for (int k = 0; k < i && st->clusters[i].name; k++)
			if (st->clusters[k].name && !strcmp(st->clusters[k].name, st->clusters[i].name)) {
				struct jv n;
				jv_get(&e, "name", &n);
				jv_error(&n, "the cluster name \"%s\" is used twice", st->clusters[i].name);
				ok = false;
			}
	}
	return ok;
}

static bool read_config(const struct jv *v, struct search_config *c)
{
	static const char *const keys[] = {"tensor_parallel", "pipeline_stages", "micro_batch",
	                                   "schedule", "virtual_stages", "recompute", "zero_stage",
	                                   "expert_parallel", "context_parallel", NULL};
	if (!jv_open(v, keys))
		return false;
	int64_t zero = 0;
	bool ok = jv_req_int(v, "tensor_parallel", JR_RANGE(1, 1 << 20), &c->tp);
	ok = jv_opt_int(v, "pipeline_stages", JR_RANGE(1, 1 << 20), 1, &c->pp) && ok;
	ok = jv_opt_int(v, "micro_batch", JR_RANGE(1, 1 << 20), 1, &c->micro_batch) && ok;
	ok = jv_opt_int(v, "virtual_stages", JR_RANGE(1, 64), 1, &c->virtual_stages) && ok;
	ok = jv_opt_int(v, "zero_stage", JR_RANGE(0, 3), 0, &zero) && ok;
	ok = jv_opt_int(v, "expert_parallel", JR_RANGE(1, 1 << 16), 1, &c->ep) && ok;
	ok = jv_opt_int(v, "context_parallel", JR_RANGE(1, 1 << 16), 1, &c->cp) && ok;
	c->zero_stage = (int)zero;
	struct jv f;
	c->schedule = SCHED_1F1B;
	if (jv_get(v, "schedule", &f)) {
		int k = jv_enum(&f, schedule_names, SCHED_COUNT);
		ok = k >= 0 && ok;
		c->schedule = k >= 0 ? (enum pipeline_schedule)k : SCHED_1F1B;
	}
	c->recompute = RECOMPUTE_NONE;
	if (jv_get(v, "recompute", &f)) {
		int k = jv_enum(&f, recompute_names, RECOMPUTE_COUNT);
		ok = k >= 0 && ok;
		c->recompute = k >= 0 ? (enum recompute_mode)k : RECOMPUTE_NONE;
	}
	if (ok && (c->virtual_stages > 1) != (c->schedule == SCHED_INTERLEAVED_1F1B)) {
		jv_get(v, "virtual_stages", &f);
		jv_error(f.node ? &f : v, "the interleaved-1f1b schedule needs virtual_stages of 2 or "
		         "more, and only it takes them");
		ok = false;
	}
	return ok;
}

static bool read_configs(struct arena *a, const struct jv *root, struct study *st)
{
	struct jv v;
	st->search = true;
	if (!jv_get(root, "configurations", &v))
		return true;
	if (v.node && cJSON_IsString(v.node)) {
		if (strcmp(v.node->valuestring, "search")) {
			jv_error(&v, "expected \"search\" or a list of configurations, got \"%s\"",
			         v.node->valuestring);
			return false;
		}
		return true;
	}
	if (!jv_is_array(&v, 1, 100000))
		return false;
	st->search = false;
	st->n_configs = jv_len(&v);
	st->configs = arena_calloc(a, (size_t)st->n_configs, sizeof *st->configs);
	if (!st->configs)
		return false;
	bool ok = true;
	struct jv e;
	int i = 0;
	for (bool more = jv_first(&v, &e); more; more = jv_next(&v, &e), i++)
		ok = read_config(&e, &st->configs[i]) && ok;
	return ok;
}

static bool read_goal(const struct jv *root, struct study *st)
{
	static const char *const keys[] = {"tokens", "iterations", "days", "budget", NULL};
	struct jv v, t, it;
	if (!jv_need(root, "goal", &v) || !jv_open(&v, keys))
		return false;
	bool has_t = jv_get(&v, "tokens", &t), has_i = jv_get(&v, "iterations", &it);
	bool ok = true;
	if (has_t == has_i) {
		jv_error(&v, "give the goal as \"tokens\" or as \"iterations\", one of them");
		ok = false;
	} else if (has_t) {
		ok = jv_number(&t, JR_POSITIVE, &st->goal.tokens);
		const struct graph *g = st->scenario ? st->scenario->graph : NULL;
		if (ok && g && (!g->gen || g->gen->seq <= 0)) {
			jv_error(&t, "the model %s has no sequence length (not a generated model): give "
			         "the goal in iterations", g->name);
			ok = false;
		}
	} else {
		ok = jv_int(&it, JR_RANGE(1, 1e15), &st->goal.iterations);
	}
	ok = jv_opt_number(&v, "budget", JR_NONNEG, 0, &st->goal.budget) && ok;
	return jv_opt_number(&v, "days", JR_NONNEG, 0, &st->goal.days) && ok;
}

/* "goodput": false, or an object of figures (GB/s for the rates). */
static bool read_goodput(const struct jv *root, struct study *st)
{
	static const char *const keys[] = {"failures_per_device_hour", "relaunch_s",
	                                   "storage_write_gbps", "storage_read_gbps", "checkpoint",
	                                   "host_copy_gbps", "checkpoint_interval_s", NULL};
	static const char *const modes[] = {"sync", "async"};
	struct study_goodput *g = &st->goodput;
	study_goodput_defaults(g);
	struct jv v, m;
	if (!jv_get(root, "goodput", &v))
		return true;
	if (v.node && cJSON_IsBool(v.node)) {
		if (!jv_bool(&v, &g->on))
			return false;
		if (!g->on)
			return true;
		jv_error(&v, "expected false (ideal times) or an object of goodput figures, got true");
		return false;
	}
	if (!jv_open(&v, keys))
		return false;
	double wr = g->storage_write_bps / 1e9, rd = g->storage_read_bps / 1e9,
	       host = g->host_copy_bps / 1e9;
	bool ok = jv_opt_number(&v, "failures_per_device_hour", JR_RANGE(0, 1),
	                        g->failures_per_device_hour, &g->failures_per_device_hour);
	ok = jv_opt_number(&v, "relaunch_s", JR_RANGE(0, 1e7), g->relaunch_s, &g->relaunch_s) && ok;
	ok = jv_opt_number(&v, "storage_write_gbps", JR_POSITIVE, wr, &wr) && ok;
	ok = jv_opt_number(&v, "storage_read_gbps", JR_POSITIVE, rd, &rd) && ok;
	ok = jv_opt_number(&v, "host_copy_gbps", JR_POSITIVE, host, &host) && ok;
	ok = jv_opt_number(&v, "checkpoint_interval_s", JR_NONNEG, 0, &g->interval_s) && ok;
	if (jv_get(&v, "checkpoint", &m)) {
		int k = jv_enum(&m, modes, 2);
		if (k < 0)
			ok = false;
		else
			g->async = k == 1;
	}
	g->storage_write_bps = wr * 1e9;
	g->storage_read_bps = rd * 1e9;
	g->host_copy_bps = host * 1e9;
	return ok;
}

static const struct scenario *read_scenario(struct arena *a, const char *dir,
                                            const struct jv *root, uint64_t *h)
{
	struct jv v;
	if (!jv_need(root, "scenario", &v))
		return NULL;
	struct scenario *s = NULL;
	if (v.node && cJSON_IsString(v.node)) {
		const char *rel;
		if (!jv_string(&v, &rel))
			return NULL;
		const char *path = util_path_join(a, dir, rel);
		size_t before = v.doc->diags->errors;
		s = path ? scenario_load(a, path, v.doc->diags) : NULL;
		if (!s && v.doc->diags->errors == before)
			jv_error(&v, "cannot load the scenario \"%s\"", rel);
		*h = fnv_file(*h, path);
	} else if (v.node && cJSON_IsObject(v.node)) {
		s = scenario_load_value(a, &v, "scenario");
	} else {
		char b[64];
		jv_error(&v, "expected a scenario file name or a scenario object, got %s",
		         jv_describe(&v, b, sizeof b));
		return NULL;
	}
	if (s) {
		*h = fnv_file(*h, s->model_file);
		*h = fnv_file(*h, s->topology_file);
	}
	return s;
}

/* ---------------------------------------------------------- fault cases */

/* A fault case's list checked on every cluster at its smallest size (the
 * indices) and its largest (where the most leaves depend on the spines),
 * each refusal noted with the size; in a scratch arena: the cases keep
 * only their text, applied again per cell (study_fault_topology), where a
 * size between that the faults cut apart is a failed row saying so.
 * Two checks a cluster and case bound the loader's work whatever the
 * sizes listed. */
static bool check_fault_case(const struct study *st, const struct study_fault *f, const char *dir,
                             const struct jv *fv)
{
	bool placed = f->placement != JOB_PLACEMENT_COUNT;
	for (int c = 0; c < st->n_clusters; c++) {
		const struct study_cluster *cl = &st->clusters[c];
		for (int i = 0; cl->topo && i < cl->n_sizes;
		     i = i == cl->n_sizes - 1 || placed ? cl->n_sizes : cl->n_sizes - 1) {
			struct arena *a = arena_new();
			int64_t at = placed ? f->cluster_servers : cl->servers[i];
			const struct topology *t = a ? topo_with_servers(a, cl->topo, at) : NULL;
			size_t before = fv->doc->diags->errors;
			bool ok = t && scenario_faults_apply(a, t, t->n_devices, fv, dir);
			if (!ok && fv->doc->diags->errors == before)
				jv_error(fv, "out of memory checking the faults");
			else if (!ok && (st->n_clusters > 1 || cl->n_sizes > 1 || placed))
				jv_note(fv, "on cluster \"%s\" at %lld servers", cl->name, (long long)at);
			arena_free(a);
			if (!ok)
				return false;
		}
	}
	return true;
}

/* The text of the topology files a case's servers take their devices
 * from ("device_from") into the inputs' hash. */
static uint64_t fnv_device_files(struct arena *a, const char *dir, const cJSON *list, uint64_t h)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, list) {
		const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "device_from");
		if (cJSON_IsString(d))
			h = fnv_file(h, util_path_join(a, dir, d->valuestring));
	}
	return h;
}

/* A fault case's "placement" and "cluster_servers", given together: the
 * cluster the job is placed on is at least every cluster's largest size. */
static bool read_placement(const struct study *st, const struct jv *v, struct study_fault *f,
                           uint64_t *h)
{
	static const char *const policies[] = {"packed", "spread", NULL};
	struct jv pv, cv;
	f->placement = JOB_PLACEMENT_COUNT;
	bool have_p = jv_get(v, "placement", &pv), have_c = jv_get(v, "cluster_servers", &cv);
	if (!have_p && !have_c)
		return true;
	if (have_p != have_c) {
		jv_error(have_p ? &pv : &cv, "a placement needs the cluster it places the job on: "
		         "give \"placement\" and \"cluster_servers\" together");
		return false;
	}
	const char *str;
	if (!jv_string(&pv, &str))
		return false;
	for (int k = 0; policies[k]; k++)
		if (!strcmp(str, policies[k]))
			f->placement = k == 0 ? JOB_PACKED : JOB_SPREAD;
	if (f->placement == JOB_PLACEMENT_COUNT) {
		jv_error(&pv, "expected \"packed\" or \"spread\", got \"%s\"", str);
		return false;
	}
	if (!jv_int(&cv, JR_RANGE(1, 1 << 24), &f->cluster_servers))
		return false;
	for (int c = 0; c < st->n_clusters; c++) {
		const struct study_cluster *cl = &st->clusters[c];
		int64_t most = cl->n_sizes > 0 ? cl->servers[cl->n_sizes - 1] : 0;
		if (most > f->cluster_servers) {
			jv_error(&cv, "the job is placed on a cluster of %lld servers, smaller than "
			         "cluster \"%s\"'s %lld", (long long)f->cluster_servers, cl->name,
			         (long long)most);
			return false;
		}
	}
	*h = fnv_str(*h, str);
	*h = fnv_num(*h, (double)f->cluster_servers);
	return true;
}

static bool read_fault_case(struct arena *a, const char *dir, const struct jv *v,
                            struct study *st, struct study_fault *f, uint64_t *h)
{
	static const char *const keys[] = {"name",      "faults",          "description",
	                                   "rebalance", "placement", "cluster_servers", NULL};
	if (!jv_open(v, keys))
		return false;
	f->line = v->line;
	f->file = st->file;
	const char *str;
	bool ok = true;
	struct jv n, fv, dv;
	if (jv_need(v, "name", &n) && jv_string(&n, &str))
		f->name = arena_strdup(a, str);
	else
		ok = false;
	if (jv_get(v, "description", &dv))
		ok = jv_string(&dv, &str) && ok;
	ok = jv_opt_bool(v, "rebalance", false, &f->rebalance) && ok;
	if (f->rebalance)  /* only then: the hashes of studies without it stay */
		*h = fnv_str(*h, "rebalance");
	if (f->rebalance && st->scenario && scenario_rebalance_accounted(&st->scenario->training)) {
		struct jv rv;
		jv_get(v, "rebalance", &rv);
		jv_error(&rv, "%s", scenario_rebalance_accounted(&st->scenario->training));
		ok = false;
	}
	/* the faults are checked on the cluster the job is placed on: not
	 * without one */
	bool placed = read_placement(st, v, f, h);
	ok = placed && ok;
	if (!jv_need(v, "faults", &fv) || !jv_is_array(&fv, 0, 1 << 20))
		return false;
	if (jv_len(&fv) > 0 && placed) {
		char *text = cJSON_PrintUnformatted(fv.node);
		f->text = text ? arena_printf(a, "{\"faults\":%s}", text) : NULL;
		cJSON_free(text);
		if (!f->text)
			return false;
		ok = check_fault_case(st, f, dir, &fv) && ok;
		*h = fnv_device_files(a, dir, fv.node, *h);
	}
	return ok && f->name;
}

/* "faults": the fault cases, each a named list of faults (none: one case,
 * "none"). */
static bool read_faults(struct arena *a, const char *dir, const struct jv *root,
                        struct study *st, uint64_t *h)
{
	struct jv v;
	if (!jv_get(root, "faults", &v)) {
		st->n_faults = 1;
		st->faults = arena_calloc(a, 1, sizeof *st->faults);
		if (!st->faults)
			return false;
		st->faults[0] = (struct study_fault){.name = "none", .file = st->file,
		                                     .placement = JOB_PLACEMENT_COUNT};
		return true;
	}
	if (!jv_is_array(&v, 1, STUDY_MAX_FAULTS))
		return false;
	st->n_faults = jv_len(&v);
	st->faults = arena_calloc(a, (size_t)st->n_faults, sizeof *st->faults);
	if (!st->faults)
		return false;
	bool ok = true;
	struct jv e;
	int i = 0;
	for (bool more = jv_first(&v, &e); more; more = jv_next(&v, &e), i++) {
		ok = read_fault_case(a, dir, &e, st, &st->faults[i], h) && ok;
		for (int k = 0; k < i && st->faults[i].name; k++)
			if (st->faults[k].name && !strcmp(st->faults[k].name, st->faults[i].name)) {
				struct jv n;
				jv_get(&e, "name", &n);
				jv_error(&n, "the fault case name \"%s\" is used twice", st->faults[i].name);
				ok = false;
			}
	}
	return ok;
}

const struct topology *study_fault_topology(struct arena *a, const struct study *st, int cluster,
                                            int64_t servers, int fault, struct diag_list *d)
{
	const struct study_fault *f = &st->faults[fault];
	if (f->placement != JOB_PLACEMENT_COUNT)
		servers = f->cluster_servers;
	const struct topology *t = topo_with_servers(a, st->clusters[cluster].topo, servers);
	if (!t || !f->text)
		return t;
	struct json_doc doc;
	struct jv root, v;
	const struct topology *ft = NULL;
	if (json_doc_parse(&doc, f->file, f->text, strlen(f->text), d) && jv_root(&doc, &root) &&
	    jv_need(&root, "faults", &v))
		ft = scenario_faults_apply(a, t, t->n_devices, &v, st->dir);
	json_doc_free(&doc);
	return ft;
}

const char *study_calibration_entry(struct arena *a, const char *cluster,
                                    const struct calibration *cal)
{
	char h[17];
	if (!cal)
		return arena_printf(a, "%s=none", cluster);
	/* FNV-1a of the calibration file's text, as 16 hex digits */
	study_hash_text(h, fnv_file(STUDIES_FNV_OFFSET, cal->file));
	return arena_printf(a, "%s=%s:%s", cluster, cal->name, h);
}

const char *study_calibration_key(struct arena *a, const struct study *st)
{
	const char *key = "";
	for (int c = 0; key && c < st->n_clusters; c++) {
		const char *e = study_calibration_entry(a, st->clusters[c].name,
		                                        st->clusters[c].topo->calibration);
		key = e ? arena_printf(a, "%s%s%s", key, c ? "; " : "", e) : NULL;
	}
	return key;
}

/* What re-prices the points without re-planning them (docs/studies.md,
 * "Quick what-ifs"): the goal, goodput and currency, each cluster's price
 * and power. */
static const char *const price_keys[] = {"goal", "goodput", "currency", "description", "source",
                                         NULL};
static const char *const cluster_price_keys[] = {"price_per_device_hour", "power_w", NULL};

/* FNV-1a of the compact print of a tree (NULL: the empty string). */
static uint64_t fnv_json(uint64_t h, const cJSON *j)
{
	char *text = j ? cJSON_PrintUnformatted(j) : NULL;
	if (text) {
		h = studies_fnv(h, text, strlen(text));
		cJSON_free(text);
	}
	return h;
}

/* The study's own part of the inputs' hash: the document less what only
 * prices the points. */
static uint64_t plan_hash(const cJSON *root)
{
	cJSON *copy = root ? cJSON_Duplicate(root, true) : NULL;
	if (!copy)
		return STUDIES_FNV_OFFSET;
	for (const char *const *k = price_keys; *k; k++)
		cJSON_DeleteItemFromObjectCaseSensitive(copy, *k);
	cJSON *cl = cJSON_GetObjectItemCaseSensitive(copy, "clusters"), *c;
	cJSON_ArrayForEach(c, cl)
		for (const char *const *k = cluster_price_keys; *k; k++)
			cJSON_DeleteItemFromObjectCaseSensitive(c, *k);
	uint64_t h = fnv_json(STUDIES_FNV_OFFSET, copy);
	cJSON_Delete(copy);
	return h;
}

/* The hash of what only prices the points. */
static uint64_t prices_hash(const cJSON *root)
{
	uint64_t h = STUDIES_FNV_OFFSET;
	for (const char *const *k = price_keys; *k; k++)
		h = fnv_json(h, cJSON_GetObjectItemCaseSensitive(root, *k));
	const cJSON *cl = cJSON_GetObjectItemCaseSensitive(root, "clusters"), *c;
	cJSON_ArrayForEach(c, cl)
		for (const char *const *k = cluster_price_keys; *k; k++)
			h = fnv_json(h, cJSON_GetObjectItemCaseSensitive(c, *k));
	return h;
}

struct study *study_load_doc(struct arena *a, struct json_doc *doc)
{
	static const char *const keys[] = {"format",   "version",        "name",
	                                   "description", "source",      "scenario",
	                                   "clusters", "configurations", "global_batch",
	                                   "goal",     "goodput",        "currency",
	                                   "faults",   NULL};
	struct jv root, v;
	if (!jv_root(doc, &root) || !jv_header(&root, STUDY_FORMAT, STUDY_VERSION))
		return NULL;
	size_t errors = doc->diags->errors;
	struct study *st = arena_alloc(a, sizeof *st);
	const char *dir = util_path_dir(a, doc->file);
	if (!st || !dir)
		return NULL;
	st->file = arena_strdup(a, doc->file);
	st->dir = dir;
	uint64_t h = plan_hash(doc->root);
	bool ok = jv_keys(&root, keys);
	const char *str;
	if (jv_req_string(&root, "name", &str))
		st->name = arena_strdup(a, str);
	else
		ok = false;
	if (jv_get(&root, "description", &v)) {
		if (jv_string(&v, &str))
			st->description = arena_strdup(a, str);
		else
			ok = false;
	}
	if (jv_get(&root, "source", &v))
		ok = jv_string(&v, &str) && ok;
	st->scenario = read_scenario(a, dir, &root, &h);
	ok = st->scenario && ok;
	st->moe = st->scenario && cost_graph_has_moe(st->scenario->graph);
	bool clusters_ok = read_clusters(a, dir, &root, st, &h);
	ok = clusters_ok && ok;
	if (st->scenario && st->scenario->topo && st->scenario->topo->faults) {
		jv_get(&root, "scenario", &v);
		jv_error(&v, "the scenario has faults, which name elements of its own topology, "
		         "replaced by each cluster's: give them as a case of the study's \"faults\"");
		ok = false;
	}
	/* The fault cases are checked on every cluster's sizes: after them. */
	ok = (clusters_ok ? read_faults(a, dir, &root, st, &h) : !jv_get(&root, "faults", &v)) && ok;
	ok = read_configs(a, &root, st) && ok;
	if (jv_get(&root, "global_batch", &v))
		ok = read_counts(a, &v, (int64_t)1e12, &st->global_batches, &st->n_batches) && ok;
	else if (st->scenario) {
		st->global_batches = arena_alloc(a, sizeof *st->global_batches);
		if (st->global_batches) {
			st->global_batches[0] = st->scenario->training.global_batch;
			st->n_batches = 1;
		}
	}
	ok = read_goal(&root, st) && ok;
	ok = read_goodput(&root, st) && ok;
	st->currency = "USD";
	if (jv_get(&root, "currency", &v)) {
		if (jv_string(&v, &str) && str[0])
			st->currency = arena_strdup(a, str);
		else
			ok = false;
	}
	st->inputs_hash = h;
	st->prices_hash = prices_hash(doc->root);
	return ok && doc->diags->errors == errors ? st : NULL;
}

struct study *study_load(struct arena *a, const char *path, struct diag_list *diags)
{
	struct json_doc doc;
	struct study *st = NULL;
	if (json_doc_load(&doc, path, diags))
		st = study_load_doc(a, &doc);
	json_doc_free(&doc);
	return st;
}
