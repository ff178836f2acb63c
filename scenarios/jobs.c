/* jobs.c — several scenarios (jobs) placed on one cluster: the jobs file.
 *
 * A jobs file names a topology (the shared fabric) and the jobs on it:
 * each a scenario file and a placement, the servers it gets: "packed"
 * (the lowest-numbered free servers, so a job fills leaf after leaf),
 * "spread" (one server from each leaf in turn: the job spans every leaf
 * it can) or a list of servers. Listed jobs take their servers first,
 * then the others in file order. A job's rank r runs on its
 * (r / devices per server)-th server, device r mod devices per server.
 * The scenarios are loaded as scenario files are and then run on the
 * jobs file's topology (docs/formats.md, "Jobs on one cluster").
 *
 * Units: servers and devices are counts and indices.
 */
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "scenarios.h"

const char *const job_placement_names[JOB_PLACEMENT_COUNT] = {"packed", "spread", "listed"};

/* The leaf switch a server's first NIC hangs from (a rail group on a
 * rail-optimized fabric), as the fabric numbers them. */
int64_t jobs_server_leaf(const struct topology *t, int64_t server)
{
	if (t->fabric.kind == TOPO_FABRIC_RAIL_OPTIMIZED && t->fabric.servers_per_rail_group > 0)
		return server / t->fabric.servers_per_rail_group;
	if (t->fabric.kind == TOPO_FABRIC_FAT_TREE && t->fabric.nics_per_leaf > 0)
		return server * t->nic.per_server / t->fabric.nics_per_leaf;
	return 0;
}

static bool read_servers(struct arena *a, struct job_spec *j, const struct jv *v,
                         const struct topology *t)
{
	static const char *const keys[] = {"servers", NULL};
	if (!jv_open(v, keys))
		return false;
	struct jv arr, e;
	if (!jv_need(v, "servers", &arr) || !jv_is_array(&arr, 1, t->servers))
		return false;
	j->n_listed = jv_len(&arr);
	j->listed = arena_calloc(a, (size_t)j->n_listed + 1, sizeof(*j->listed));
	if (!j->listed)
		return false;
	bool ok = true;
	int k = 0;
	for (bool more = jv_first(&arr, &e); more; more = jv_next(&arr, &e), k++) {
		ok = jv_int(&e, JR_RANGE(0, t->servers - 1), &j->listed[k]) && ok;
		for (int x = 0; ok && x < k; x++)
			if (j->listed[x] == j->listed[k]) {
				jv_error(&e, "server %lld is listed twice", (long long)j->listed[k]);
				ok = false;
			}
	}
	return ok;
}

static bool read_job(struct arena *a, struct jobs_file *f, struct job_spec *j,
                     const struct jv *v, const char *dir)
{
	static const char *const keys[] = {"name", "scenario", "placement", NULL};
	if (!jv_open(v, keys))
		return false;
	bool ok = true;
	const char *name = NULL, *rel = NULL;
	ok = jv_req_string(v, "name", &name) && ok;
	j->name = name ? arena_strdup(a, name) : NULL;
	j->line = v->line;
	struct jv pl;
	if (jv_need(v, "placement", &pl)) {
		if (pl.node && cJSON_IsString(pl.node)) {
			int k = jv_enum(&pl, job_placement_names, JOB_LISTED);
			j->placement = k >= 0 ? (enum job_placement)k : JOB_PACKED;
			ok = k >= 0 && ok;
		} else {
			j->placement = JOB_LISTED;
			ok = f->topo && read_servers(a, j, &pl, f->topo) && ok;
		}
	} else {
		ok = false;
	}
	if (!jv_req_string(v, "scenario", &rel))
		return false;
	struct jv sv;
	jv_get(v, "scenario", &sv);
	const char *path = util_path_join(a, dir, rel);
	size_t before = f->diags->errors;
	j->scenario = path ? scenario_load(a, path, f->diags) : NULL;
	if (!j->scenario) {
		if (f->diags->errors == before)
			jv_error(&sv, "cannot load the scenario \"%s\"", rel);
		return false;
	}
	if (!f->topo || !ok)
		return false;
	if (j->scenario->devices > f->topo->n_devices) {
		jv_error(&sv, "the scenario runs on %lld devices, more than the topology's %lld",
		         (long long)j->scenario->devices, (long long)f->topo->n_devices);
		return false;
	}
	int64_t d = f->topo->devices_per_server;
	int64_t need = (j->scenario->devices + d - 1) / d;
	if (j->placement == JOB_LISTED && j->n_listed != need) {
		jv_error(&pl, "the scenario's %lld devices need %lld server%s of %lld devices, "
		         "%d listed", (long long)j->scenario->devices, (long long)need,
		         need == 1 ? "" : "s", (long long)d, j->n_listed);
		return false;
	}
	j->n_servers = (int)need;
	/* the job runs on the jobs' fabric */
	j->scenario->topo = f->topo;
	return true;
}

int jobs_place_servers(const struct topology *t, enum job_placement how, const uint8_t *taken,
                       int n, int64_t *servers)
{
	int k = 0;
	if (how == JOB_PACKED) {
		for (int64_t s = 0; s < t->servers && k < n; s++)
			if (!(taken && taken[s]))
				servers[k++] = s;
		return k;
	}
	/* spread: one free server from each leaf in turn, the lowest free of
	 * each leaf first */
	int64_t leaves = jobs_server_leaf(t, t->servers - 1) + 1;
	uint8_t *used = calloc((size_t)t->servers + 1, 1);
	if (!used)
		return -1;
	for (bool any = true; any && k < n;) {
		any = false;
		for (int64_t leaf = 0; leaf < leaves && k < n; leaf++)
			for (int64_t s = 0; s < t->servers; s++)
				if (!(taken && taken[s]) && !used[s] && jobs_server_leaf(t, s) == leaf) {
					servers[k++] = s;
					used[s] = 1;
					any = true;
					break;
				}
	}
	free(used);
	return k;
}

/* The servers of job j: listed, packed (lowest free first) or spread
 * (one free server from each leaf in turn). */
static bool place(struct arena *a, struct jobs_file *f, struct job_spec *j, uint8_t *taken,
                  const struct jv *v)
{
	const struct topology *t = f->topo;
	int64_t *servers = arena_calloc(a, (size_t)j->n_servers + 1, sizeof(*servers));
	if (!servers)
		return false;
	int k = 0;
	if (j->placement == JOB_LISTED) {
		for (; k < j->n_servers; k++) {
			if (taken[j->listed[k]]) {
				jv_error(v, "server %lld is another job's", (long long)j->listed[k]);
				return false;
			}
			servers[k] = j->listed[k];
		}
	} else {
		k = jobs_place_servers(t, j->placement, taken, j->n_servers, servers);
		if (k < 0)
			return false;
	}
	if (k < j->n_servers) {
		int64_t free_n = 0;
		for (int64_t s = 0; s < t->servers; s++)
			free_n += !taken[s];
		jv_error(v, "the job needs %d server%s, %lld of the topology's %d are free",
		         j->n_servers, j->n_servers == 1 ? "" : "s", (long long)free_n, t->servers);
		return false;
	}
	for (int x = 0; x < k; x++)
		taken[servers[x]] = 1;
	int64_t d = t->devices_per_server, n = j->scenario->devices;
	j->servers = servers;
	j->devices = arena_calloc(a, (size_t)n + 1, sizeof(*j->devices));
	if (!j->devices)
		return false;
	for (int64_t r = 0; r < n; r++)
		j->devices[r] = servers[r / d] * d + r % d;
	return true;
}

static bool place_all(struct arena *a, struct jobs_file *f, const struct jv *jobs)
{
	uint8_t *taken = calloc((size_t)f->topo->servers + 1, 1);
	if (!taken)
		return false;
	bool ok = true;
	/* listed jobs first: they say which servers they want */
	for (int pass = 0; pass < 2 && ok; pass++)
		for (int i = 0; i < f->n_jobs && ok; i++) {
			struct job_spec *j = &f->jobs[i];
			if ((j->placement == JOB_LISTED) != (pass == 0))
				continue;
			struct jv v, pl;
			jv_at(jobs, i, &v);
			jv_get(&v, "placement", &pl);
			ok = place(a, f, j, taken, &pl);
		}
	free(taken);
	return ok;
}

struct jobs_file *jobs_load_doc(struct arena *a, struct json_doc *doc)
{
	static const char *const keys[] = {"format", "version", "name", "description", "topology",
	                                   "jobs", NULL};
	struct jv root, v, jobs, e;
	struct jobs_file *f = arena_calloc(a, 1, sizeof(*f));
	if (!f || !jv_root(doc, &root) || !jv_header(&root, JOBS_FORMAT, 1))
		return NULL;
	f->diags = doc->diags;
	size_t errors = doc->diags->errors;
	f->file = arena_strdup(a, doc->file);
	bool ok = jv_keys(&root, keys);
	const char *name = NULL, *rel = NULL;
	ok = jv_req_string(&root, "name", &name) && ok;
	f->name = name ? arena_strdup(a, name) : NULL;
	if (jv_get(&root, "description", &v)) {
		const char *s;
		ok = jv_string(&v, &s) && ok;
	}
	const char *dir = util_path_dir(a, doc->file);
	if (jv_req_string(&root, "topology", &rel)) {
		jv_get(&root, "topology", &v);
		const char *path = util_path_join(a, dir, rel);
		size_t before = doc->diags->errors;
		f->topo = path ? topo_load(a, path, doc->diags) : NULL;
		if (!f->topo && doc->diags->errors == before)
			jv_error(&v, "cannot load the topology \"%s\"", rel);
	}
	ok = f->topo && ok;
	if (!jv_need(&root, "jobs", &jobs) || !jv_is_array(&jobs, 1, JOBS_MAX))
		return NULL;
	f->n_jobs = jv_len(&jobs);
	f->jobs = arena_calloc(a, (size_t)f->n_jobs + 1, sizeof(*f->jobs));
	if (!f->jobs)
		return NULL;
	int i = 0;
	for (bool more = jv_first(&jobs, &e); more; more = jv_next(&jobs, &e), i++) {
		ok = read_job(a, f, &f->jobs[i], &e, dir) && ok;
		for (int x = 0; ok && x < i; x++)
			if (strcmp(f->jobs[x].name, f->jobs[i].name) == 0) {
				jv_get(&e, "name", &v);
				jv_error(&v, "the name \"%s\" is jobs[%d]'s too", f->jobs[i].name, x);
				ok = false;
			}
	}
	if (!ok || doc->diags->errors > errors || !place_all(a, f, &jobs))
		return NULL;
	return f;
}

struct jobs_file *jobs_load(struct arena *a, const char *path, struct diag_list *diags)
{
	struct json_doc doc;
	struct jobs_file *f = NULL;
	if (json_doc_load(&doc, path, diags))
		f = jobs_load_doc(a, &doc);
	json_doc_free(&doc);
	return f;
}
