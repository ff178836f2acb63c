/* cmd_report.c — `shardlab report`: one self-contained HTML page.
 *
 * `report SCENARIO` draws the plan of one or more planners (what explain
 * prints); with --simulate, the plan is estimated and simulated (traced)
 * and the page adds the simulation; `report STUDY --db FILE` draws a
 * study from the rows sweep stored. The pages are built by report/ from
 * the same structures the text and JSON outputs print from, with the
 * words of report.c's writers; this file parses, loads and writes the
 * page atomically (output.c).
 */
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "report.h"
#include "studies.h"

#define MIB 1048576.0
enum { MAX_PLANNERS = 8, MAX_RANKS = 256 };

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab report SCENARIO --out FILE.html [--planner NAME]...\n"
	        "                       [--simulate [--ranks LIST] [--fidelity F] [--max-events N]]\n"
	        "                       [--rec-cost MODE] [--rec-order ORDER] [--fused]\n"
	        "                       [--devices N] [--topology FILE] [--global-batch B]\n"
	        "       shardlab report STUDY --db FILE --out FILE.html\n"
	        "\n"
	        "Write one self-contained HTML page (docs/report.md): styles, pictures\n"
	        "(SVG) and the little JavaScript it uses are inline, nothing is fetched\n"
	        "when it is opened; it reads at 1280 px and prints.\n"
	        "\n"
	        "A scenario's page draws its plan, what `shardlab explain` prints: the\n"
	        "devices as the topology's servers, one cell per device, coloured by\n"
	        "the slice of a tensor each rank holds (every op's inputs and outputs\n"
	        "one click away), every op with its strategy, device matrix and tensor\n"
	        "maps, every collective and redistribution step with its rank groups\n"
	        "(shown on the devices) and bytes per device. --planner, given several\n"
	        "times, draws each planner's plan on the same page.\n"
	        "\n"
	        "With --simulate the plan is estimated and simulated (traced) as\n"
	        "`shardlab simulate` does, and the page adds: the simulated time's\n"
	        "90%% interval and the calibration (with the plan's settings outside\n"
	        "the runs it was fitted on), estimate beside\n"
	        "simulation (with an offload, a server's host memory and its\n"
	        "verdict) and where they disagree (overlap, contention), every\n"
	        "rank's compute / exposed communication / pipeline wait / idle, a\n"
	        "timeline (both streams) per chosen rank, the other ranks folded into\n"
	        "groups whose timelines look the same (the page's rank picker unfolds\n"
	        "them), memory over time and the busiest links.\n"
	        "\n"
	        "A study's page (the file's \"format\" is shardlab-study) draws the\n"
	        "rows `shardlab sweep` stored in the database: the figures of\n"
	        "`shardlab plot`, the answer of `shardlab fit`, sortable tables of the\n"
	        "Pareto front and of the best configuration per cluster size, each\n"
	        "linking to its plan: a page per linked point, drawn as a scenario's\n"
	        "plan is, written beside FILE.html in FILE-plans/plan-K.html (keep\n"
	        "the directory with the page).\n"
	        "\n"
	        "options:\n"
	        "  --out FILE        the page to write (required); replaced atomically,\n"
	        "                    refused when it names the scenario, study or database\n"
	        "  --planner NAME    propagate, recursive, data-parallel, megatron or\n"
	        "                    megatron-search; repeat it to draw several plans\n"
	        "                    (default: the scenario's first planner)\n"
	        "  --simulate        simulate the plan (one planner) and draw it\n"
	        "  --ranks LIST      the ranks drawn one timeline row each, as\n"
	        "                    \"0,5,17-20\" (at most %d; default: the first rank of\n"
	        "                    each stage and the rank that waits longest on\n"
	        "                    communication)\n"
	        "  --fidelity F      coarse, phase, step or representative, as for shardlab\n"
	        "                    simulate\n"
	        "  --max-events N    refuse a simulation of more program steps x ranks\n"
	        "                    (default 1e10)\n"
	        "  --db FILE         a study's sweep database (required with a study)\n"
	        "%s"
	        "  -h, --help        this help\n"
	        "\n"
	        "exit status: 0 success, 1 invalid input (diagnostics on stderr) or a\n"
	        "page that cannot be written, 2 usage error.\n",
	        MAX_RANKS, cli_override_help);
}

struct args {
	const char *file, *out, *db;
	bool simulate;
	struct cli_plan_args plan;
	int n_planners;
	enum planner_kind planners[MAX_PLANNERS];
	int fidelity;                      /* -1: the scenario's */
	double max_events;
	const char *ranks;
};

static int parse_option(int argc, char **argv, int *i, struct args *a)
{
	const char *o = argv[*i];
	if (!strcmp(o, "--simulate")) {
		a->simulate = true;
		return EXIT_OK;
	}
	if (!strcmp(o, "--planner") && *i + 1 < argc) {
		int k = cli_parse_planner("report", argv[++*i]);
		if (k < 0)
			return EXIT_USAGE;
		if (a->n_planners == MAX_PLANNERS) {
			fprintf(stderr, "shardlab report: at most %d --planner\n", MAX_PLANNERS);
			return EXIT_USAGE;
		}
		a->planners[a->n_planners++] = (enum planner_kind)k;
		return EXIT_OK;
	}
	int taken = cli_plan_option("report", argc, argv, i, &a->plan);
	if (taken)
		return taken < 0 ? EXIT_USAGE : EXIT_OK;
	if (*i + 1 >= argc) {
		fprintf(stderr, "shardlab report: unknown option '%s' (see --help)\n", o);
		return EXIT_USAGE;
	}
	const char *v = argv[++*i];
	int k = 0;
	if (!strcmp(o, "--out"))
		a->out = v;
	else if (!strcmp(o, "--db"))
		a->db = v;
	else if (!strcmp(o, "--ranks"))
		a->ranks = v;
	else if (!strcmp(o, "--max-events"))
		return cli_parse_max_events("report", v, &a->max_events);
	else if (!strcmp(o, "--fidelity") &&
	         (k = cli_parse_name("report", o, v, fidelity_names, FIDELITY_COUNT)) >= 0)
		a->fidelity = k;
	else if (k >= 0) {
		fprintf(stderr, "shardlab report: unknown option '%s' (see --help)\n", o);
		return EXIT_USAGE;
	}
	return k >= 0 ? EXIT_OK : EXIT_USAGE;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.fidelity = -1};
	int rc = EXIT_OK;
	for (int i = 1; i < argc && rc == EXIT_OK; i++) {
		if (argv[i][0] == '-')
			rc = parse_option(argc, argv, &i, a);
		else
			rc = cli_scenario_word("report", argv[i], &a->file);
	}
	if (rc == EXIT_OK)
		rc = cli_scenario_named("report", a->file);
	if (rc == EXIT_OK && !a->out) {
		fprintf(stderr, "shardlab report: missing --out FILE.html (see --help)\n");
		rc = EXIT_USAGE;
	}
	if (rc == EXIT_OK && a->simulate && a->n_planners > 1) {
		fprintf(stderr, "shardlab report: --simulate draws one plan; name one --planner\n");
		rc = EXIT_USAGE;
	}
	if (rc == EXIT_OK && a->ranks && !a->simulate) {
		fprintf(stderr, "shardlab report: --ranks chooses the timelines of --simulate\n");
		rc = EXIT_USAGE;
	}
	return rc;
}

/* "0,5,17-20" into out (at most MAX_RANKS, each once, in the order
 * given), each below n_ranks. */
static int parse_ranks(const char *s, int64_t n_ranks, int64_t *out, int *n)
{
	*n = 0;
	const char *c = s;
	while (*c) {
		char *end;
		errno = 0;
		long long lo = strtoll(c, &end, 10), hi = lo;
		bool bad = end == c || errno || lo < 0 || *c == '-' || *c == '+';
		if (!bad && *end == '-') {
			const char *d = end + 1;
			hi = strtoll(d, &end, 10);
			bad = end == d || errno || hi < lo || *d == '-' || *d == '+';
		}
		if (bad || (*end && *end != ',')) {
			fprintf(stderr, "shardlab report: --ranks takes ranks and ranges as \"0,5,17-20\", "
			                "got '%s'\n", s);
			return EXIT_USAGE;
		}
		if (hi >= n_ranks) {
			fprintf(stderr, "shardlab report: --ranks: rank %lld is beyond the simulation's "
			                "%lld ranks (0 to %lld)\n",
			        hi, (long long)n_ranks, (long long)n_ranks - 1);
			return EXIT_USAGE;
		}
		for (long long r = lo; r <= hi; r++) {
			bool seen = false;
			for (int k = 0; k < *n && !seen; k++)
				seen = out[k] == r;
			if (seen)
				continue;
			if (*n == MAX_RANKS) {
				fprintf(stderr, "shardlab report: --ranks: at most %d ranks\n", MAX_RANKS);
				return EXIT_USAGE;
			}
			out[(*n)++] = r;
		}
		c = *end ? end + 1 : end;
	}
	if (*n == 0) {
		fprintf(stderr, "shardlab report: --ranks names no rank\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* The page into the file, atomically. */
static int write_page(const char *path, struct report_html *h)
{
	size_t len = 0;
	char *page = report_html_finish(h, &len);
	if (!page) {
		fprintf(stderr, "shardlab report: out of memory\n");
		return EXIT_INVALID;
	}
	char err[512];
	struct cli_out o;
	bool ok = cli_out_open(&o, path, err, sizeof err);
	if (ok) {
		fwrite(page, 1, len, o.f);
		ok = cli_out_close(&o, err, sizeof err);
	}
	free(page);
	if (!ok) {
		fprintf(stderr, "shardlab report: %s\n", err);
		return EXIT_INVALID;
	}
	return EXIT_OK;
}

/* The words explain and plan use for the plan's ops. */
static bool plan_words(struct arena *a, const struct plan *p, enum planner_kind kind,
                       enum rec_cost rc, struct report_plan_words *w)
{
	int n = p->graph->n_ops;
	char **strategy = arena_calloc(a, (size_t)n + 1, sizeof *strategy);
	char **source = arena_calloc(a, (size_t)n + 1, sizeof *source);
	char summary[64], buf[512];
	if (!strategy || !source)
		return false;
	for (int i = 0; i < n; i++) {
		strategy[i] = arena_strdup(a, report_strategy_text(buf, sizeof buf, p->graph, &p->ops[i]));
		source[i] = arena_strdup(a, report_source_text(buf, sizeof buf, p, &p->ops[i]));
		if (!strategy[i] || !source[i])
			return false;
	}
	*w = (struct report_plan_words){
		.planner = kind == PLANNER_RECURSIVE ? arena_printf(a, "%s (%s costs)", planner_names[kind],
		                                                     rec_cost_names[rc])
		                                     : planner_names[kind],
		.summary = arena_strdup(a, report_strategy_summary(summary, sizeof summary, p)),
		.strategy = (const char *const *)strategy,
		.source = (const char *const *)source,
	};
	return w->summary && w->planner;
}

static int scenario_page(const struct args *a)
{
	struct diag_list d;
	diag_list_init(&d);
	struct arena *ar = arena_new();
	int rc = ar ? EXIT_OK : EXIT_INVALID;
	struct report_html *h = NULL;
	int n = a->n_planners ? a->n_planners : 1;
	const struct plan *plans[MAX_PLANNERS];
	struct report_plan_words words[MAX_PLANNERS];
	struct scenario *s = NULL;
	enum planner_kind kind = PLANNER_PROPAGATE;
	for (int i = 0; rc == EXIT_OK && i < n; i++) {
		struct cli_plan_args pa = a->plan;
		if (a->n_planners) {
			pa.named = true;
			pa.planner = a->planners[i];
		}
		struct plan *p = cli_load_plan(ar, a->file, &pa, &s, &kind, &d);
		plans[i] = p;
		if (!p || !plan_words(ar, p, kind, pa.o.rec_cost, &words[i]))
			rc = EXIT_INVALID;
	}
	if (rc == EXIT_OK) {
		const struct plan *p = plans[0];
		char title[512], sub[512];
		int64_t devices = p->scenario->devices > p->n_devices ? p->scenario->devices
		                                                      : p->n_devices;
		snprintf(title, sizeof title, "shardlab report: %s", p->scenario->name);
		snprintf(sub, sizeof sub, "model %s on %lld devices of %s (%s)", p->graph->name,
		         (long long)devices, p->scenario->topo->name, a->file);
		h = report_html_new(title, sub, cli_si);
		if (!h)
			rc = EXIT_INVALID;
		else if (p->scenario->description)
			report_html_prose(h, NULL, p->scenario->description);
	}
	if (rc == EXIT_OK) {
		report_html_plans_differ(h, plans, words, n);
		for (int i = 0; i < n; i++) {
			char id[32];
			snprintf(id, sizeof id, "plan-%d", i);
			report_html_plan(h, id, plans[i], &words[i]);
		}
	}
	if (rc == EXIT_OK && a->simulate) { /* one plan (parse_args) */
		struct cli_sim_setup o = {
			.fidelity = a->fidelity >= 0 ? (enum sim_fidelity)a->fidelity
			                             : s ? s->sim.fidelity : FIDELITY_COARSE,
			.algo = s ? s->sim.collective_algo : COLL_AUTO,
			.bucket_bytes = s ? s->training.gradient_bucket_bytes : 25 * MIB,
			.max_events = a->max_events,
			.trace = true,
			.label = planner_names[kind],
		};
		struct cli_sim_outcome r;
		int64_t *ranks = arena_calloc(ar, MAX_RANKS, sizeof *ranks);
		struct report_sim_view v = {.ranks = ranks};
		if (!ranks || !cli_simulate_plan(ar, plans[0], &o, &r, &d))
			rc = EXIT_INVALID;
		else if (a->ranks)
			rc = parse_ranks(a->ranks, r.sim.n_ranks, ranks, &v.n_ranks);
		struct cal_interval ie, is;
		char cal_words[1024];
		if (rc == EXIT_OK) {
			cli_interval(plans[0], &ie);
			cost_interval_at(&ie, r.sim.iteration_s, &is);
			v.interval = &is;
			v.calibration = cli_calibration_words(cal_words, sizeof cal_words,
			                                      plans[0]->scenario->topo,
			                                      cost_graph_has_moe(plans[0]->graph));
			report_html_sim(h, plans[0], &r.est, &r.prog, &r.sim, &v);
		}
	}
	cli_print_diags(&d);
	if (rc == EXIT_OK)
		rc = write_page(a->out, h);
	else
		report_html_free(h);
	if (!ar)
		fprintf(stderr, "shardlab report: out of memory\n");
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}

/* NAME as a relative URL's path segment (RFC 3986, section 2): every
 * byte but the unreserved ones percent-encoded, so that a page called
 * "a#1.html" links to "a%231-plans/plan-0.html", not to a fragment. */
static const char *url_segment(struct arena *ar, const char *name, size_t len)
{
	char *u = arena_alloc(ar, 3 * len + 1);
	if (!u)
		return NULL;
	size_t k = 0;
	for (size_t i = 0; i < len; i++) {
		unsigned char ch = (unsigned char)name[i];
		if ((ch >= 'A' && ch <= 'Z') || (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
		    ch == '-' || ch == '.' || ch == '_' || ch == '~')
			u[k++] = (char)ch;
		else
			k += (size_t)snprintf(u + k, 4, "%%%02X", ch);
	}
	u[k] = 0;
	return u;
}

/* The plan pages of a study's linked rows, beside its page: FILE.html's
 * in FILE-plans/plan-K.html, each the plan (megatron, as the sweep planned
 * the point) of a scenario of the point (study_point_scenario, as fit
 * --emit-scenario writes it), drawn as `report SCENARIO` draws one. The
 * pages are built in memory first (pages[k], hrefs per row for the study
 * page); written by write_plan_pages. */
struct plan_pages {
	const char *dir;                   /* FILE-plans */
	int n;
	char *page[REPORT_STUDY_MAX_PLANS];
	size_t len[REPORT_STUDY_MAX_PLANS];
	const char **href;                 /* per row */
};

static int build_plan_pages(struct arena *ar, const char *out, const struct study *st,
                            const struct study_row *rows, int n, struct plan_pages *pp)
{
	const char *base = strrchr(out, '/') ? strrchr(out, '/') + 1 : out;
	size_t stem = strlen(base);
	if (stem > 5 && !strcmp(base + stem - 5, ".html"))
		stem -= 5;
	const char *dir = util_path_dir(ar, out);
	const char *sub = arena_printf(ar, "%.*s-plans", (int)stem, base);
	const char *sub_url = sub ? url_segment(ar, sub, strlen(sub)) : NULL;
	const char *base_url = url_segment(ar, base, strlen(base));
	pp->href = arena_calloc(ar, (size_t)n + 1, sizeof *pp->href);
	int linked[REPORT_STUDY_MAX_PLANS];
	pp->n = report_study_linked(st, rows, n, linked);
	if (!dir || !sub_url || !base_url || !pp->href || pp->n < 0 ||
	    !(pp->dir = arena_printf(ar, "%s/%s", dir, sub))) {
		fprintf(stderr, "shardlab report: out of memory\n");
		return EXIT_INVALID;
	}
	struct diag_list d;
	diag_list_init(&d);
	int rc = EXIT_OK;
	for (int k = 0; rc == EXIT_OK && k < pp->n; k++) {
		const struct study_row *r = &rows[linked[k]];
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct scenario *s = study_point_scenario(ar, st, r, &d);
		struct plan *p = s ? plan_make(ar, s, PLANNER_MEGATRON, &o, &d) : NULL;
		struct report_plan_words w;
		if (!p || !plan_words(ar, p, PLANNER_MEGATRON, o.rec_cost, &w)) {
			rc = EXIT_INVALID;
			break;
		}
		char title[512], sub2[512];
		snprintf(title, sizeof title, "shardlab report: %s", s->name);
		snprintf(sub2, sizeof sub2, "a point of study %s: model %s on %lld devices of %s, "
		         "global batch %lld", st->name, p->graph->name, (long long)r->devices,
		         s->topo->name, (long long)r->global_batch);
		const char *back = arena_printf(ar, "back to the study %s", st->name);
		const char *back_href = arena_printf(ar, "../%s", base_url);
		struct report_html *h = back && back_href ? report_html_new(title, sub2, cli_si) : NULL;
		if (h) {
			report_html_link(h, back, back_href);
			report_html_plan(h, "plan-0", p, &w);
		}
		pp->page[k] = h ? report_html_finish(h, &pp->len[k]) : NULL;
		pp->href[linked[k]] = arena_printf(ar, "%s/plan-%d.html", sub_url, k);
		if (!pp->page[k] || !pp->href[linked[k]]) {
			fprintf(stderr, "shardlab report: out of memory\n");
			rc = EXIT_INVALID;
		}
	}
	cli_print_diags(&d);
	diag_list_free(&d);
	return rc;
}

/* The plan pages into FILE-plans/ (made when missing), each atomically. */
static int write_plan_pages(const struct plan_pages *pp)
{
	if (pp->n > 0 && mkdir(pp->dir, 0777) != 0 && errno != EEXIST) {
		fprintf(stderr, "shardlab report: %s: cannot create the directory of the plan pages: "
		        "%s\n", pp->dir, strerror(errno));
		return EXIT_INVALID;
	}
	for (int k = 0; k < pp->n; k++) {
		char path[4096], err[512];
		snprintf(path, sizeof path, "%s/plan-%d.html", pp->dir, k);
		struct cli_out o;
		bool ok = cli_out_open(&o, path, err, sizeof err);
		if (ok) {
			fwrite(pp->page[k], 1, pp->len[k], o.f);
			ok = cli_out_close(&o, err, sizeof err);
		}
		if (!ok) {
			fprintf(stderr, "shardlab report: %s\n", err);
			return EXIT_INVALID;
		}
	}
	return EXIT_OK;
}

static int study_page(const struct args *a)
{
	if (!a->db) {
		fprintf(stderr, "shardlab report: a study's page needs --db FILE (see --help)\n");
		return EXIT_USAGE;
	}
	struct arena *ar = arena_new();
	const struct study *st = NULL;
	struct study_row *rows = NULL;
	int n = 0;
	int rc = ar ? cli_load_study_rows("report", ar, a->file, a->db, &st, &rows, &n)
	            : EXIT_INVALID;
	struct plan_pages pp = {0};
	if (rc == EXIT_OK)
		rc = build_plan_pages(ar, a->out, st, rows, n, &pp);
	if (rc == EXIT_OK) {
		char title[512], sub[512], err[512] = "out of memory";
		snprintf(title, sizeof title, "shardlab report: study %s", st->name);
		snprintf(sub, sizeof sub, "%s, swept into %s", a->file, a->db);
		struct report_html *h = report_html_new(title, sub, cli_si);
		/* the calibrations the sweep recorded, where they are found again */
		struct study_store *db = NULL;
		struct study_plot_info info = {0};
		char dberr[512];
		if (study_store_open_ro(a->db, &db, NULL, dberr, sizeof dberr))
			study_store_info(db, ar, &info);
		study_store_close(db);
		const struct calibration **cal = cli_swept_calibrations(ar, st, &info, a->db);
		if (h && report_html_study(h, st, rows, n, pp.href, cal, err, sizeof err)) {
			rc = write_plan_pages(&pp);
			if (rc == EXIT_OK)
				rc = write_page(a->out, h);
			else
				report_html_free(h);
		} else {
			fprintf(stderr, "shardlab report: %s\n", err);
			report_html_free(h);
			rc = EXIT_INVALID;
		}
	}
	for (int k = 0; k < pp.n; k++)
		free(pp.page[k]);
	arena_free(ar);
	/* The font caches cairo and fontconfig keep for the process (the
	 * figures), released so that leak checkers see only our own memory. */
	cairo_debug_reset_static_data();
	FcFini();
	return rc;
}

/* Whether the file is a study: its "format" says so (anything else goes
 * to the scenario loader, which reports what is wrong with it). */
static bool is_study(const char *file)
{
	struct diag_list d;
	diag_list_init(&d);
	struct json_doc doc = {0};
	bool study = false;
	if (json_doc_load(&doc, file, &d) && doc.root) {
		const cJSON *f = cJSON_GetObjectItemCaseSensitive(doc.root, "format");
		study = cJSON_IsString(f) && !strcmp(f->valuestring, STUDY_FORMAT);
	}
	json_doc_free(&doc);
	diag_list_free(&d);
	return study;
}

int cmd_report(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	struct args a;
	int rc = parse_args(argc, argv, &a);
	if (rc != EXIT_OK)
		return rc;
	const char *const inputs[] = {a.file, a.db};
	if (cli_out_overwrites("report", a.out, inputs, 2))
		return EXIT_USAGE;
	if (is_study(a.file)) {
		if (a.simulate || a.n_planners || a.plan.named) {
			fprintf(stderr, "shardlab report: a study's page takes --db and --out only\n");
			return EXIT_USAGE;
		}
		return study_page(&a);
	}
	if (a.db) {
		fprintf(stderr, "shardlab report: --db goes with a study file; %s is not one\n", a.file);
		return EXIT_USAGE;
	}
	return scenario_page(&a);
}
