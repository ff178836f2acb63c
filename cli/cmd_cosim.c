/* cmd_cosim.c — `shardlab cosim JOBS`: several jobs on one cluster. Each
 * job's scenario is planned, estimated and lowered; each job is simulated
 * alone on its servers, then all together in one SimGrid run
 * (sim_run_jobs, a leaf's uplinks one pool its NICs share). Prints per
 * job the iteration alone and together, the slowdown and where the extra
 * time went (exposed communication on links shared with named jobs, or
 * waiting), and the links the jobs fight over, as text or JSON. This file
 * only parses and prints.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab cosim JOBS [--fidelity F] [--seed N] [--trace FILE]\n"
	        "                           [--calibration FILE|auto|none] [--json]\n"
	        "\n"
	        "Several training jobs on one cluster (a jobs file, docs/formats.md): each\n"
	        "job's scenario planned by its first planner, placed on its servers\n"
	        "(packed, spread or listed), simulated alone and then with all the others\n"
	        "in one SimGrid run, where their traffic shares the fabric (a leaf's uplinks\n"
	        "are one pool its NICs share: docs/simulation.md, \"Several jobs\"). Prints per\n"
	        "job its servers, iteration time alone and together and the slowdown; where\n"
	        "the extra time went (exposed communication on links shared with the jobs\n"
	        "named, or waiting for a pipeline stage or a straggler); and the links more\n"
	        "than one job used, with each job's bytes.\n"
	        "\n"
	        "options:\n"
	        "  --fidelity F   coarse (default), phase, step or representative, as for\n"
	        "                 shardlab simulate\n"
	        "  --seed N       the draw of the devices' speeds (stragglers); default 0\n"
	        "  --calibration FILE\n"
	        "                 a calibration file applied to the cluster's topology;\n"
	        "                 \"auto\" (the default): the one the topology file names,\n"
	        "                 else the shipped one of its device (for the first job's\n"
	        "                 training.framework) where there is one; \"none\": the\n"
	        "                 bare model\n"
	        "  --trace FILE   write the run together as a Chrome trace (Perfetto): a\n"
	        "                 process per rank named \"job NAME rank K\", and per job its\n"
	        "                 busiest links' utilisation over time as counter tracks\n"
	        "  --json         print JSON: \"jobs_file\", \"topology\", \"jobs\" ([{\"name\",\n"
	        "                 \"scenario\", \"placement\", \"servers\", \"ranks\",\n"
	        "                 \"alone_s\", \"together_s\", \"slowdown\", \"estimate_s\",\n"
	        "                 \"alone\"/\"together\" ({\"compute_s\", \"comm_exposed_s\",\n"
	        "                 \"pipeline_wait_s\", \"idle_s\"}: means over its ranks),\n"
	        "                 \"shares_links_with\", \"links_over_time\" ({\"bin_s\",\n"
	        "                 \"links\": [{\"name\", \"utilisation\"}]}: together)}])\n"
	        "                 and \"shared_links\" ([{\"name\",\n"
	        "                 \"bandwidth_bps\", \"bytes\" (per job)}], most loaded first)\n"
	        "  -h, --help     this help\n"
	        "\n"
	        "exit status: 0 success, 1 invalid jobs file or scenario, or a plan that\n"
	        "cannot be lowered or simulated (diagnostics on stderr), 2 usage error.\n");
}

struct args {
	const char *file, *trace, *calibration;
	bool json;
	int fidelity;
	uint64_t seed;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.fidelity = FIDELITY_COARSE};
	for (int i = 1; i < argc; i++) {
		const char *o = argv[i];
		if (!strcmp(o, "--json")) {
			a->json = true;
		} else if ((!strcmp(o, "--fidelity") || !strcmp(o, "--seed") || !strcmp(o, "--trace") ||
		            !strcmp(o, "--calibration")) &&
		           i + 1 < argc) {
			const char *v = argv[++i];
			if (!strcmp(o, "--trace")) {
				a->trace = v;
			} else if (!strcmp(o, "--calibration")) {
				a->calibration = v;
			} else if (!strcmp(o, "--fidelity")) {
				a->fidelity = cli_parse_name("cosim", o, v, fidelity_names, FIDELITY_COUNT);
				if (a->fidelity < 0)
					return EXIT_USAGE;
			} else {
				char *end;
				errno = 0;
				unsigned long long s = strtoull(v, &end, 10);
				if (!*v || *end || errno || v[0] == '-') {
					fprintf(stderr, "shardlab cosim: --seed: expected an integer, got '%s'\n",
					        v);
					return EXIT_USAGE;
				}
				a->seed = s;
			}
		} else if (o[0] == '-' || a->file) {
			fprintf(stderr, "shardlab cosim: unexpected '%s' (see --help)\n", o);
			return EXIT_USAGE;
		} else {
			a->file = o;
		}
	}
	if (!a->file) {
		fprintf(stderr, "shardlab cosim: name a jobs file (see --help)\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* One job: its plan, estimate and program, its runs alone and together. */
struct job_run {
	const struct job_spec *spec;
	enum planner_kind planner;
	struct estimate est;
	struct program prog;
	struct sim_result alone, together;
};

/* Means over the ranks of where their iteration went. */
struct where_went {
	double compute_s, comm_s, wait_s, idle_s;
};

static struct where_went mean_of(const struct sim_result *r)
{
	struct where_went w = {0};
	for (int64_t k = 0; k < r->n_ranks; k++) {
		w.compute_s += r->ranks[k].compute_s;
		w.comm_s += r->ranks[k].comm_exposed_s;
		w.wait_s += r->ranks[k].pipeline_wait_s;
		w.idle_s += r->ranks[k].idle_s;
	}
	double n = r->n_ranks > 0 ? (double)r->n_ranks : 1;
	return (struct where_went){w.compute_s / n, w.comm_s / n, w.wait_s / n, w.idle_s / n};
}

static bool prepare(struct arena *a, const struct job_spec *j, struct job_run *out,
                    struct diag_list *d)
{
	const struct scenario *s = j->scenario;
	out->spec = j;
	out->planner = s->n_planners > 0 && cli_planner_available(s->planners[0]) ? s->planners[0]
	                                                                         : PLANNER_PROPAGATE;
	struct plan_options po = {0};
	struct plan *p = plan_make(a, s, out->planner, &po, d);
	return p && plan_estimate(a, p, &out->est, d) &&
	       plan_lower(a, p, s->training.gradient_bucket_bytes, &out->prog, d);
}

/* Whether jobs x and y both used a shared link. */
static bool share(const struct sim_shared *sh, int x, int y)
{
	for (int i = 0; i < sh->n_links; i++)
		if (sh->links[i].bytes[x] > 0 && sh->links[i].bytes[y] > 0)
			return true;
	return false;
}

static const char *servers_text(char *buf, size_t size, const struct job_spec *j)
{
	size_t n = 0;
	buf[0] = '\0';
	for (int k = 0; k < j->n_servers && n + 24 < size; k++) {
		int64_t s = j->servers[k], e = s;
		while (k + 1 < j->n_servers && j->servers[k + 1] == e + 1)
			e = j->servers[++k];
		n += (size_t)snprintf(buf + n, size - n, "%s%" PRId64, n ? "," : "", s);
		if (e > s)
			n += (size_t)snprintf(buf + n, size - n, "-%" PRId64, e);
	}
	return buf;
}


/* A difference of seconds with its sign and an SI prefix: "+8.93 ms",
 * "-1.34 us", "0 s". */
static const char *signed_si(char buf[40], double v)
{
	char si[32];
	cli_si(si, sizeof si, fabs(v), "s");
	snprintf(buf, 40, "%s%s", v > 0 ? "+" : v < 0 ? "-" : "", si);
	return buf;
}
static void text(const struct jobs_file *f, const struct job_run *r, const struct sim_shared *sh,
                 int fidelity)
{
	char b[4][32], srv[96];
	printf("cosim %s: %d job%s on %s (%d server%s of %d devices), fidelity %s, leaf uplinks "
	       "pooled\n", f->name, f->n_jobs, f->n_jobs == 1 ? "" : "s", f->topo->name,
	       f->topo->servers, f->topo->servers == 1 ? "" : "s", f->topo->devices_per_server,
	       fidelity_names[fidelity]);
	char cw[1024];
	printf("calibration %s\n\n", cli_calibration_words(cw, sizeof cw, f->topo, false));
	printf("  %-16s %7s  %-8s %-16s %11s %11s %9s\n", "job", "ranks", "placed", "servers",
	       "alone", "together", "slowdown");
	for (int j = 0; j < f->n_jobs; j++) {
		const struct job_spec *s = r[j].spec;
		printf("  %-16s %7" PRId64 "  %-8s %-16s %11s %11s %8.3fx\n", s->name,
		       s->scenario->devices, job_placement_names[s->placement],
		       servers_text(srv, sizeof srv, s), cli_si(b[0], 32, r[j].alone.iteration_s, "s"),
		       cli_si(b[1], 32, r[j].together.iteration_s, "s"),
		       r[j].alone.iteration_s > 0 ? r[j].together.iteration_s / r[j].alone.iteration_s
		                                  : 0);
	}
	printf("\nwhere the time went (means over each job's ranks, together less alone)\n");
	for (int j = 0; j < f->n_jobs; j++) {
		struct where_went x = mean_of(&r[j].alone), y = mean_of(&r[j].together);
		char d[4][40];
		printf("  %-16s compute %s, exposed communication %s, pipeline wait %s, idle %s",
		       r[j].spec->name, signed_si(d[0], y.compute_s - x.compute_s),
		       signed_si(d[1], y.comm_s - x.comm_s), signed_si(d[2], y.wait_s - x.wait_s),
		       signed_si(d[3], y.idle_s - x.idle_s));
		int named = 0;
		for (int k = 0; k < f->n_jobs; k++)
			if (k != j && share(sh, j, k))
				printf("%s%s", named++ ? ", " : ": contention on links shared with ",
				       r[k].spec->name);
		printf("%s\n", named ? "" : ": no link shared with another job");
	}
	for (int j = 0; j < f->n_jobs; j++) {
		printf("\n%s's busiest links over time, together\n", r[j].spec->name);
		report_sim_link_series(stdout, "  ", &r[j].together);
	}
	printf("\nlinks more than one job used (most loaded first; every job's traffic over\n"
	       "time in bins of %s, as above)\n", cli_si(b[2], 32, sh->bin_s, "s"));
	if (sh->n_links == 0)
		printf("  none: no job's traffic crossed another's\n");
	int used = 0;
	for (int i = 0; i < sh->n_links; i++)
		for (int k = 0; k < SIM_BINS; k++)
			used = sh->links[i].utilisation[k] > 0 && k + 1 > used ? k + 1 : used;
	for (int i = 0; i < sh->n_links && i < 10; i++) {
		printf("  %-14s %10s ", sh->links[i].name,
		       cli_si(b[2], 32, sh->links[i].bandwidth_bps, "B/s"));
		report_util_row(stdout, sh->links[i].utilisation, used);
		for (int j = 0; j < f->n_jobs; j++)
			if (sh->links[i].bytes[j] > 0)
				printf(" %s %s", r[j].spec->name, cli_si(b[3], 32, sh->links[i].bytes[j], "B"));
		printf("\n");
	}
	if (sh->n_links > 10)
		printf("  ... %d more\n", sh->n_links - 10);
}

static cJSON *json_went(const struct sim_result *r)
{
	struct where_went w = mean_of(r);
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "compute_s", w.compute_s);
	cJSON_AddNumberToObject(o, "comm_exposed_s", w.comm_s);
	cJSON_AddNumberToObject(o, "pipeline_wait_s", w.wait_s);
	cJSON_AddNumberToObject(o, "idle_s", w.idle_s);
	return o;
}

static cJSON *json(const struct jobs_file *f, const struct job_run *r,
                   const struct sim_shared *sh, int fidelity)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "jobs_file", f->name);
	cJSON_AddStringToObject(root, "topology", f->topo->name);
	cJSON_AddStringToObject(root, "fidelity", fidelity_names[fidelity]);
	cJSON_AddItemToObject(root, "calibration", cli_calibration_json(f->topo));
	cJSON *jobs = cJSON_AddArrayToObject(root, "jobs");
	for (int j = 0; j < f->n_jobs; j++) {
		const struct job_spec *s = r[j].spec;
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", s->name);
		cJSON_AddStringToObject(o, "scenario", s->scenario->name);
		cJSON_AddStringToObject(o, "planner", planner_names[r[j].planner]);
		cJSON_AddStringToObject(o, "placement", job_placement_names[s->placement]);
		cJSON *srv = cJSON_AddArrayToObject(o, "servers");
		for (int k = 0; k < s->n_servers; k++)
			cJSON_AddItemToArray(srv, cJSON_CreateNumber((double)s->servers[k]));
		cJSON_AddNumberToObject(o, "ranks", (double)s->scenario->devices);
		cJSON_AddNumberToObject(o, "estimate_s", r[j].est.iteration_s);
		cJSON_AddNumberToObject(o, "alone_s", r[j].alone.iteration_s);
		cJSON_AddNumberToObject(o, "together_s", r[j].together.iteration_s);
		cJSON_AddNumberToObject(o, "slowdown", r[j].alone.iteration_s > 0
		                        ? r[j].together.iteration_s / r[j].alone.iteration_s : 0);
		cJSON_AddItemToObject(o, "alone", json_went(&r[j].alone));
		cJSON_AddItemToObject(o, "together", json_went(&r[j].together));
		cJSON *with = cJSON_AddArrayToObject(o, "shares_links_with");
		for (int k = 0; k < f->n_jobs; k++)
			if (k != j && share(sh, j, k))
				cJSON_AddItemToArray(with, cJSON_CreateString(r[k].spec->name));
		const struct sim_result *t = &r[j].together;
		cJSON *lot = cJSON_AddObjectToObject(o, "links_over_time");
		cJSON_AddNumberToObject(lot, "bin_s", t->bin_s);
		cJSON *ls = cJSON_AddArrayToObject(lot, "links");
		for (int i = 0; i < t->n_series; i++) {
			cJSON *l = cJSON_CreateObject();
			cJSON_AddStringToObject(l, "name", t->links[t->series[i].link].name);
			cJSON_AddItemToObject(l, "utilisation",
			                      cJSON_CreateDoubleArray(t->series[i].utilisation, SIM_BINS));
			cJSON_AddItemToArray(ls, l);
		}
		cJSON_AddItemToArray(jobs, o);
	}
	cJSON *links = cJSON_AddArrayToObject(root, "shared_links");
	for (int i = 0; i < sh->n_links; i++) {
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "name", sh->links[i].name);
		cJSON_AddNumberToObject(o, "bandwidth_bps", sh->links[i].bandwidth_bps);
		cJSON *bytes = cJSON_AddObjectToObject(o, "bytes");
		for (int j = 0; j < f->n_jobs; j++)
			cJSON_AddNumberToObject(bytes, r[j].spec->name, sh->links[i].bytes[j]);
		cJSON_AddItemToArray(links, o);
	}
	return root;
}

static bool run_all(struct arena *ar, const struct jobs_file *f, const struct sim_options *o,
                    bool trace, struct job_run *r, struct sim_shared *sh, struct diag_list *d)
{
	struct sim_options together_o = *o;
	together_o.trace = trace;
	struct sim_job *jobs = arena_calloc(ar, (size_t)f->n_jobs, sizeof(*jobs));
	struct sim_result *together = arena_calloc(ar, (size_t)f->n_jobs, sizeof(*together));
	if (!jobs || !together)
		return false;
	for (int j = 0; j < f->n_jobs; j++) {
		if (!prepare(ar, &f->jobs[j], &r[j], d))
			return false;
		jobs[j] = (struct sim_job){&r[j].prog, f->jobs[j].devices};
		if (!sim_run_jobs(ar, f->topo, &jobs[j], 1, o, &r[j].alone, NULL, d))
			return false;
	}
	if (!sim_run_jobs(ar, f->topo, jobs, f->n_jobs, &together_o, together, sh, d))
		return false;
	for (int j = 0; j < f->n_jobs; j++)
		r[j].together = together[j];
	return true;
}

static bool write_trace(struct arena *ar, const char *path, const struct jobs_file *f,
                        const struct job_run *r)
{
	struct sim_result *res = arena_calloc(ar, (size_t)f->n_jobs, sizeof(*res));
	const struct program **progs = arena_calloc(ar, (size_t)f->n_jobs, sizeof(*progs));
	const char **names = arena_calloc(ar, (size_t)f->n_jobs, sizeof(*names));
	char title[256], err[512];
	if (!res || !progs || !names) {
		fprintf(stderr, "shardlab cosim: out of memory\n");
		return false;
	}
	for (int j = 0; j < f->n_jobs; j++) {
		res[j] = r[j].together;
		progs[j] = &r[j].prog;
		names[j] = r[j].spec->name;
	}
	snprintf(title, sizeof title, "shardlab cosim %s", f->name);
	if (report_trace_jobs_write(path, res, progs, names, f->n_jobs, title, err, sizeof err))
		return true;
	fprintf(stderr, "shardlab cosim: %s\n", err);
	return false;
}

int cmd_cosim(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	struct args a;
	int rc = parse_args(argc, argv, &a);
	if (rc != EXIT_OK)
		return rc;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *ar = arena_new();
	struct jobs_file *f = jobs_load(ar, a.file, &d);
	/* the shared fabric takes the first job's family's calibration */
	enum framework fw = f && f->n_jobs ? f->jobs[0].scenario->training.framework
	                                   : FRAMEWORK_MEGATRON;
	if (f && !(a.calibration ? cli_apply_calibration(ar, a.calibration, f->topo, fw, &d)
	                         : cli_default_calibration(ar, f->topo, fw, &d)))
		f = NULL;
	struct job_run *r = f ? arena_calloc(ar, (size_t)f->n_jobs, sizeof(*r)) : NULL;
	struct sim_options o = {.fidelity = (enum sim_fidelity)a.fidelity, .algo = COLL_AUTO,
	                        .seed = a.seed, .leaf_uplinks = true};
	bool trace = a.trace != NULL;
	struct sim_shared sh;
	bool ok = r && run_all(ar, f, &o, trace, r, &sh, &d);
	cli_print_diags(&d);
	rc = ok ? EXIT_OK : EXIT_INVALID;
	if (ok && trace && !write_trace(ar, a.trace, f, r))
		rc = EXIT_INVALID;
	if (rc == EXIT_OK && a.json)
		rc = report_print_json(json(f, r, &sh, a.fidelity), "cosim");
	else if (rc == EXIT_OK)
		text(f, r, &sh, a.fidelity);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
