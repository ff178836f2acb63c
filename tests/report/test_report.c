/* test_report.c — `shardlab report`'s pages, opened in a real browser.
 *
 * Each page is written by the built shardlab and loaded by headless
 * Chromium (Debian's chromium, installed by scripts/setup.sh), which dumps
 * the DOM after the page's scripts ran and renders a screenshot. The
 * checks: no script error (the page counts them into an attribute of
 * <html>) and no console message, and the elements the page promises:
 * one mesh cell per device, one timeline row per chosen rank, one table
 * row per Pareto point (as many as `shardlab fit --json` lists). Expected
 * counts come from the scenarios (8 devices of seed 000's FFN, 64 GPUs of
 * the 162B study) and the command line, not from the page.
 *
 * Each browser launch is bounded by timeout(1); it takes a few seconds.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture.h"

TestSuite(report, .init = fixture_setup, .fini = fixture_teardown, .timeout = 300);

static char dir[64];

static void make_dir(void)
{
	snprintf(dir, sizeof dir, "/tmp/shardlab-report-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
}

static void remove_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

/* The whole output of a shell command (stdout), its exit status in *rc. */
static char *capture(const char *cmd, int *rc)
{
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p, "%s", cmd);
	size_t cap = 1 << 16, len = 0;
	char *s = malloc(cap);
	cr_assert_not_null(s);
	size_t n;
	while ((n = fread(s + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (len + 1 == cap) {
			cap *= 2;
			s = realloc(s, cap);
			cr_assert_not_null(s);
		}
	}
	s[len] = '\0';
	int st = pclose(p);
	*rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128;
	return s;
}

static int count(const char *s, const char *what)
{
	int n = 0;
	for (const char *p = strstr(s, what); p; p = strstr(p + 1, what))
		n++;
	return n;
}

/* The browser, as the tests run it: headless, no sandbox (CI runs as
 * root), its own profile, console messages on stderr. */
#define CHROMIUM "timeout 60 chromium --headless=new --no-sandbox --disable-gpu --no-first-run " \
	"--disable-dev-shm-usage --hide-scrollbars --enable-logging=stderr --v=0 "

/* The page's DOM after its scripts ran (`fragment`: "#ranks=7" or "");
 * fails on a script error or a console message. */
static char *dom_of(const char *page, const char *fragment)
{
	char cwd[512], cmd[2048];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(cmd, sizeof cmd,
	         CHROMIUM "--user-data-dir=%s/profile --virtual-time-budget=3000 --dump-dom "
	                  "'file://%s/%s%s' 2>%s/console.txt",
	         dir, page[0] == '/' ? "" : cwd, page, fragment, dir);
	int rc;
	char *dom = capture(cmd, &rc);
	cr_assert_eq(rc, 0, "chromium failed (%d): is Debian's chromium installed? "
	                    "bash scripts/setup.sh installs it\n%s", rc, cmd);
	cr_assert(strstr(dom, "</html>"), "no page in the DOM dump of %s", page);
	cr_expect(strstr(dom, "data-errors=\"0\""), "script errors in %s: %.300s", page,
	          strstr(dom, "data-last-error") ? strstr(dom, "data-last-error") : "?");
	snprintf(cmd, sizeof cmd, "grep -c ':CONSOLE' %s/console.txt", dir);
	char *c = capture(cmd, &rc);
	cr_expect_eq(atoi(c), 0, "console messages while loading %s (see %s/console.txt)", page, dir);
	free(c);
	return dom;
}

/* A copy of the page that, once loaded, clicks every control a reader
 * would: each mesh button (the colourings), each table header (twice:
 * both sort orders), each rank's bar and the picker's button. Its DOM
 * (dom_of) must show no script error; returns the copy's path. */
static char *clicking_copy(const char *page)
{
	FILE *f = fopen(page, "rb");
	cr_assert_not_null(f);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	cr_assert_not_null(s);
	cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
	s[n] = '\0';
	fclose(f);
	char *end = strstr(s, "</body>");
	cr_assert_not_null(end);
	static char path[160];
	snprintf(path, sizeof path, "%s/clicked.html", dir);
	FILE *o = fopen(path, "wb");
	cr_assert_not_null(o);
	fwrite(s, 1, (size_t)(end - s), o);
	fputs("<script>document.querySelectorAll('[data-colour],th,th,.rank-bar,#rank-pick-go')"
	      ".forEach(function(e){e.dispatchEvent(new MouseEvent('click',{bubbles:true}));});"
	      "document.documentElement.setAttribute('data-clicked','yes');</script>", o);
	fputs(end, o);
	cr_assert_eq(fclose(o), 0);
	free(s);
	return path;
}

/* A screenshot at 1280 px renders: a PNG of some size. */
static void screenshot(const char *page)
{
	char cwd[512], cmd[2048], png[128];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(png, sizeof png, "%s/shot.png", dir);
	snprintf(cmd, sizeof cmd,
	         CHROMIUM "--user-data-dir=%s/profile --window-size=1280,2000 --screenshot=%s "
	                  "'file://%s/%s' >/dev/null 2>&1",
	         dir, png, page[0] == '/' ? "" : cwd, page);
	cr_assert_eq(system(cmd), 0, "%s", cmd);
	FILE *f = fopen(png, "rb");
	cr_assert_not_null(f, "no screenshot of %s", page);
	unsigned char sig[8] = {0};
	size_t n = fread(sig, 1, sizeof sig, f);
	fseek(f, 0, SEEK_END);
	long size = ftell(f);
	fclose(f);
	cr_expect(n == 8 && !memcmp(sig, "\x89PNG\r\n\x1a\n", 8), "not a PNG");
	cr_expect_gt(size, 20000, "a blank screenshot of %s (%ld bytes)", page, size);
}

/* Runs shardlab ARGS; expects exit status `want`. */
static void shardlab(const char *args, int want)
{
	struct cli_run r = fixture_shardlab(args, true);
	cr_assert_eq(r.status, want, "shardlab %s: status %d\n%s", args, r.status, r.out);
	free(r.out);
}

/* The part of the DOM from `from` to the end of its element's figure. */
static char *figure_of(const char *dom, const char *id)
{
	char key[64];
	snprintf(key, sizeof key, "id=\"%s\"", id);
	const char *a = strstr(dom, key);
	cr_assert_not_null(a, "no %s", id);
	const char *b = strstr(a, "</figure>");
	cr_assert_not_null(b);
	return strndup(a, (size_t)(b - a));
}

/* --out naming the page's own input (by another path) is refused before
 * anything is read or written: the input stays as it was. The copy's
 * relative model path no longer resolves, so a report that went ahead
 * would fail to load it and write nothing either. */
Test(report, out_onto_its_input_is_refused)
{
	char tmp[] = "/tmp/shardlab-rout-XXXXXX", in[64], args[256];
	cr_assert_not_null(mkdtemp(tmp));
	snprintf(in, sizeof in, "%s/s.json", tmp);
	FILE *f = fopen(in, "w");
	cr_assert(f && fputs("{}\n", f) >= 0 && fclose(f) == 0);
	snprintf(args, sizeof args, "report %s --out %s/./s.json", in, tmp);
	struct cli_run r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 2, "%s", r.out);
	cr_expect(strstr(r.out, "shardlab report: --out ") && strstr(r.out, "is the input "),
	          "%s", r.out);
	free(r.out);
	char back[8] = {0};
	f = fopen(in, "r");
	cr_assert_not_null(f);
	size_t n = fread(back, 1, sizeof back - 1, f);
	fclose(f);
	cr_expect(n == 3 && !strcmp(back, "{}\n"), "the input is as it was: %s", back);
	remove(in);
	rmdir(tmp);
}

/* Teaching page 1 (docs/report.md): seed 000's FFN planned by
 * propagation and by the recursive search. The scenario runs on 8
 * Ascend 910 of one Atlas 800: each plan's mesh has 8 cells. */
Test(report, plan_page_has_one_mesh_cell_per_device)
{
	make_dir();
	char args[512], page[128];
	snprintf(page, sizeof page, "%s/ffn.html", dir);
	snprintf(args, sizeof args, "report scenarios/ffn-8p.json --planner propagate "
	                            "--planner recursive --rec-cost mindspore --out %s", page);
	shardlab(args, 0);
	char *dom = dom_of(page, "");
	for (int m = 0; m < 2; m++) {
		char id[16];
		snprintf(id, sizeof id, "mesh-%d", m);
		char *fig = figure_of(dom, id);
		cr_expect_eq(count(fig, "class=\"mesh-cell\""), 8, "%s", id);
		for (int r = 0; r < 8; r++) {
			char cell[48];
			snprintf(cell, sizeof cell, "data-rank=\"%d\"", r);
			cr_expect_eq(count(fig, cell), 1, "%s: rank %d", id, r);
		}
		free(fig);
	}
	/* the FFN's 5 ops in each plan's table */
	cr_expect_eq(count(dom, "class=\"op-row\""), 10);
	free(dom);
	/* every button and header clicked: no script error, and the mesh
	 * repainted (a cell's tooltip names its slice) */
	dom = dom_of(clicking_copy(page), "");
	cr_expect(strstr(dom, "data-clicked=\"yes\""));
	cr_expect(strstr(dom, "<title>rank 0: "), "the mesh was painted");
	free(dom);
	screenshot(page);
	remove_dir();
}

/* Seed 000's golden plan on the page: dense2.matmul's AllReduce over
 * ranks 0-1-2-3 and 4-5-6-7, then a StridedSlice (DESIGN: sharding
 * propagation). Clicking nothing, the mesh shows dense1.matmul's output
 * (2 x 4 slices of (64, 64): 8 distinct slices of [32, 16]). */
Test(report, plan_page_shows_the_seed_collectives)
{
	make_dir();
	char args[512], page[128];
	snprintf(page, sizeof page, "%s/ffn.html", dir);
	snprintf(args, sizeof args, "report scenarios/seed000-ffn-ir-8p.json --out %s", page);
	shardlab(args, 0);
	char *dom = dom_of(page, "");
	cr_expect(strstr(dom, "{0,1,2,3} {4,5,6,7}"), "the AllReduce groups");
	cr_expect(strstr(dom, "StridedSlice"));
	char *fig = figure_of(dom, "mesh-0");
	cr_expect(strstr(fig, "[0:32, 0:16]") && strstr(fig, "[32:64, 48:64]"));
	free(fig);
	free(dom);
	remove_dir();
}

/* A simulation's page: one timeline row per rank asked for, in order;
 * the rank picker (here through the page's #ranks= fragment) unfolds the
 * group of a rank that has no row of its own. */
Test(report, sim_page_has_one_timeline_row_per_chosen_rank)
{
	make_dir();
	char args[512], page[128];
	snprintf(page, sizeof page, "%s/sim.html", dir);
	snprintf(args, sizeof args, "report scenarios/ffn-8p.json --simulate --ranks 0,3,5-6 --out %s",
	         page);
	shardlab(args, 0);
	char *dom = dom_of(page, "#ranks=7");
	cr_expect_eq(count(dom, "class=\"tl-row\""), 4);
	const char *a = strstr(dom, "class=\"tl-row\" data-rank=\"0\"");
	const char *b = strstr(dom, "class=\"tl-row\" data-rank=\"3\"");
	const char *c = strstr(dom, "class=\"tl-row\" data-rank=\"5\"");
	const char *d = strstr(dom, "class=\"tl-row\" data-rank=\"6\"");
	cr_expect(a && b && c && d && a < b && b < c && c < d, "rows 0, 3, 5, 6 in order");
	/* every rank is in exactly one group row; rank 7's is shown */
	cr_expect_geq(count(dom, "class=\"tl-group"), 1);
	cr_expect_eq(count(dom, "class=\"tl-group shown\""), 1);
	cr_expect_eq(count(dom, "class=\"rank-bar\""), 8);
	/* one server: traffic inside it, and a line of it over time */
	cr_expect_eq(count(dom, "class=\"traffic-line\""), 2);
	/* the busiest links over time: a row per link, at most 8 (SIM_SERIES_LINKS) */
	int link_rows = count(dom, "class=\"link-row\"");
	cr_expect(link_rows >= 1 && link_rows <= 8, "%d rows of links over time", link_rows);
	char *fig = figure_of(dom, "mesh-0");
	cr_expect_eq(count(fig, "class=\"mesh-cell\""), 8);
	free(fig);
	free(dom);
	/* every rank's bar clicked: each group row shown */
	dom = dom_of(clicking_copy(page), "");
	cr_expect(strstr(dom, "data-clicked=\"yes\""));
	cr_expect_eq(count(dom, "class=\"tl-group\""), 0, "a group row left folded");
	free(dom);
	screenshot(page);
	remove_dir();
}

/* Teaching page 2: the 162B model's TP/PP trade-off on 64 GPUs. One table
 * row per Pareto point, as many as fit lists; one row per point of the
 * study (3 configurations x 1 size x 1 batch); each linked plan is a mesh
 * of the 64 GPUs. */
Test(report, study_page_has_one_row_per_pareto_point)
{
	make_dir();
	char args[512], page[128], db[128];
	const char *study = "scenarios/studies/gpt-162b-tp-pp-64.json";
	snprintf(db, sizeof db, "%s/s.db", dir);
	snprintf(page, sizeof page, "%s/study.html", dir);
	snprintf(args, sizeof args, "sweep %s --db %s --simulate-top 1", study, db);
	shardlab(args, 0);
	snprintf(args, sizeof args, "fit %s --db %s --json", study, db);
	struct cli_run fit = fixture_shardlab(args, false);
	cr_assert_eq(fit.status, 0);
	const char *pa = strstr(fit.out, "\"pareto\"");
	cr_assert_not_null(pa);
	int n_front = count(pa, "\"cluster\"");
	cr_expect_geq(n_front, 1);
	free(fit.out);
	snprintf(args, sizeof args, "report %s --db %s --out %s", study, db, page);
	shardlab(args, 0);
	char *dom = dom_of(page, "");
	cr_expect_eq(count(dom, "class=\"pareto-row\""), n_front);
	cr_expect_eq(count(dom, "class=\"point-row\""), 3);
	cr_expect_eq(count(dom, "class=\"best-row\""), 1);
	char *fig = figure_of(dom, "mesh-0");
	cr_expect_eq(count(fig, "class=\"mesh-cell\""), 64);
	free(fig);
	cr_expect(strstr(dom, "<svg"), "the figures");
	/* each Pareto and best-per-size row links to its plan page, written
	 * beside the study's: opened, a plan with one mesh cell per device
	 * of the point (64) and a way back */
	const char *rows[] = {"class=\"pareto-row\"", "class=\"best-row\""};
	for (int k = 0; k < 2; k++) {
		const char *row = strstr(dom, rows[k]);
		cr_assert_not_null(row);
		const char *end = strstr(row, "</tr>");
		const char *a = strstr(row, "class=\"plan-link\" href=\"");
		cr_assert(a && a < end, "a %s links to no plan page", rows[k]);
		a += strlen("class=\"plan-link\" href=\"");
		char plan[256];
		snprintf(plan, sizeof plan, "%s/%.*s", dir, (int)(strchr(a, '"') - a), a);
		cr_expect(strstr(plan, "/study-plans/plan-"), "%s", plan);
		char *pdom = dom_of(plan, "");
		char *pfig = figure_of(pdom, "mesh-0");
		cr_expect_eq(count(pfig, "class=\"mesh-cell\""), 64, "%s", plan);
		free(pfig);
		cr_expect(count(pdom, "class=\"op-row\"") >= 1, "%s: the ops", plan);
		cr_expect(strstr(pdom, "href=\"../study.html\""), "%s: no way back", plan);
		free(pdom);
	}
	free(dom);
	dom = dom_of(clicking_copy(page), "");
	cr_expect(strstr(dom, "data-clicked=\"yes\""));
	free(dom);
	screenshot(page);
	remove_dir();
}

/* A page whose name holds URL delimiters ("#", "?", a space) links to its
 * plan pages percent-encoded (RFC 3986), while the files keep the name:
 * "st#1? x.html" -> href "st%231%3F%20x-plans/plan-0.html", written in
 * "st#1? x-plans/". Read from the file, no browser needed. */
Test(report, plan_links_are_percent_encoded)
{
	make_dir();
	char args[512], page[128], db[128], plan[160];
	const char *study = "scenarios/studies/gpt-162b-tp-pp-64.json";
	snprintf(db, sizeof db, "%s/s.db", dir);
	snprintf(page, sizeof page, "%s/st#1? x.html", dir);
	snprintf(args, sizeof args, "sweep %s --db %s", study, db);
	shardlab(args, 0);
	snprintf(args, sizeof args, "report %s --db %s --out '%s'", study, db, page);
	shardlab(args, 0);
	FILE *f = fopen(page, "rb");
	cr_assert_not_null(f, "%s", page);
	static char html[1 << 22];
	size_t n = fread(html, 1, sizeof html - 1, f);
	html[n] = '\0';
	fclose(f);
	cr_expect(strstr(html, "href=\"st%231%3F%20x-plans/plan-0.html\""), "no encoded link");
	cr_expect_null(strstr(html, "href=\"st#1"), "a raw '#' in a link");
	snprintf(plan, sizeof plan, "%s/st#1? x-plans/plan-0.html", dir);
	f = fopen(plan, "rb");
	cr_assert_not_null(f, "%s", plan);
	n = fread(html, 1, sizeof html - 1, f);
	html[n] = '\0';
	fclose(f);
	cr_expect(strstr(html, "href=\"../st%231%3F%20x.html\""), "no encoded way back");
	remove_dir();
}

/* The same inputs give the same page, byte for byte. */
Test(report, pages_are_deterministic)
{
	make_dir();
	char args[512], cmd[512];
	for (int i = 0; i < 2; i++) {
		snprintf(args, sizeof args,
		         "report scenarios/gpt-small-910a-32p.json --simulate --out %s/p%d.html", dir, i);
		shardlab(args, 0);
	}
	snprintf(cmd, sizeof cmd, "cmp -s %s/p0.html %s/p1.html", dir, dir);
	cr_expect_eq(system(cmd), 0);
	remove_dir();
}

/* Usage errors name what is wrong; nothing is written. */
Test(report, refuses_bad_usage_and_writes_nothing)
{
	make_dir();
	char args[512], page[128];
	snprintf(page, sizeof page, "%s/x.html", dir);
	struct {
		const char *args;              /* then --out PAGE, unless the case is its absence */
		int status;
		const char *message;
	} cases[] = {
		{"report scenarios/ffn-8p.json", 2, "missing --out"},
		{"report scenarios/ffn-8p.json --simulate --ranks 8", 2,
		 "rank 8 is beyond the simulation's 8 ranks"},
		{"report scenarios/ffn-8p.json --simulate --ranks 2-x", 2, "--ranks takes"},
		{"report scenarios/ffn-8p.json --ranks 1", 2, "--ranks chooses"},
		{"report scenarios/studies/gpt-162b-tp-pp-64.json", 2, "needs --db"},
		{"report scenarios/ffn-8p.json --db x.db", 2, "is not one"},
		{"report tests/data/bad/scenario-bad-settings.json", 1, "propogate"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		snprintf(args, sizeof args, "%s%s%s", cases[i].args, i ? " --out " : "", i ? page : "");
		struct cli_run r = fixture_shardlab(args, true);
		cr_expect_eq(r.status, cases[i].status, "%s: %d\n%s", args, r.status, r.out);
		cr_expect(strstr(r.out, cases[i].message), "%s:\n%s", args, r.out);
		free(r.out);
		cr_expect_neq(access(page, F_OK), 0, "%s wrote a page", args);
	}
	snprintf(args, sizeof args, "report scenarios/ffn-8p.json --out %s/no/such/dir/x.html", dir);
	struct cli_run r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.out, "cannot write"), "%s", r.out);
	free(r.out);
	remove_dir();
}

/* A simulation's page gives the simulated time its 90% interval and names
 * the calibration, as `simulate` does, and the plan's settings outside
 * the runs the calibration was fitted on: the 4-layer GPT's megatron plan
 * (32 fp16 Ascend 910s, sequence 1,024) against runs of 16-64 bf16
 * devices at sequence 1,024 (tests/data/calibrate/runs-16-64.json);
 * without a calibration, why there is no interval. */
Test(report, sim_page_names_its_calibration_and_interval)
{
	make_dir();
	static const char cal[] = "tests/data/calibrate/runs-16-64.json";
	char page[128], args[512];
	snprintf(page, sizeof page, "%s/sim.html", dir);
	snprintf(args, sizeof args, "report scenarios/gpt-4layer-32p.json --planner megatron "
	         "--simulate --calibration %s --out %s", cal, page);
	shardlab(args, 0);
	int rc;
	snprintf(args, sizeof args, "cat '%s'", page);
	char *html = capture(args, &rc);
	cr_assert_eq(rc, 0);
	cr_expect(strstr(html, "<div>90% interval<b>"), "no interval on the page");
	cr_expect(strstr(html, "<p>Calibration: runs ("), "no calibration on the page");
	cr_expect(strstr(html, "<p class=\"note\">Outside the runs the calibration was fitted on: fp16 "
	                       "compute (fitted: bf16). The interval is the spread over those runs, "
	                       "not beyond them.</p>"),
	          "no settings outside the runs on the page");
	free(html);
	snprintf(args, sizeof args, "report scenarios/gpt-4layer-32p.json --planner megatron "
	         "--simulate --calibration none --out %s", page);
	shardlab(args, 0);
	snprintf(args, sizeof args, "cat '%s'", page);
	html = capture(args, &rc);
	cr_expect(strstr(html, "<p>Calibration: none (uncalibrated: no interval).</p>"));
	cr_expect(!strstr(html, "90% interval"));
	free(html);
	remove_dir();
}

/* A study's page lists the `fit` answers whose settings lie outside the
 * runs their cluster's calibration was fitted on: the 4-layer GPT
 * (sequence 1,024, no recomputation) on one DGX A100 of 8 GPUs, swept
 * with the A100's shipped calibration, fitted on the SC21 runs of 32 to
 * 3,072 GPUs at sequence 2,048 with full recomputation; each interval in
 * the tables is marked, and the table of every point counts them. Swept
 * with --calibration none, the page has no such list and no mark. */
Test(report, study_page_names_the_answers_outside_the_fitted_runs)
{
	make_dir();
	char db[128], page[128], args[512];
	static const char *const study = "tests/data/studies/calibrated.json";
	for (int k = 0; k < 2; k++) {
		snprintf(db, sizeof db, "%s/c%d.db", dir, k);
		snprintf(page, sizeof page, "%s/c%d.html", dir, k);
		snprintf(args, sizeof args, "sweep %s --db %s%s", study, db,
		         k ? " --calibration none" : "");
		shardlab(args, 0);
		snprintf(args, sizeof args, "report %s --db %s --out %s", study, db, page);
		shardlab(args, 0);
		int rc;
		snprintf(args, sizeof args, "cat '%s'", page);
		char *html = capture(args, &rc);
		cr_assert_eq(rc, 0);
		const char *want = "<li>smallest a100: 8 devices (fitted: 32-3072), sequence 1024 "
		                   "(fitted: 2048), recompute none (fitted: full)</li>";
		if (k == 0) {
			cr_expect(strstr(html, want), "no answer outside the runs on the page");
			cr_expect(strstr(html, "<li>fastest a100: 8 devices"), "the fastest not named "
			                                                       "with its cluster");
			/* every interval of the two points is marked, its settings in
			 * its tooltip, and the table of every point says how many */
			cr_expect(strstr(html, "title=\"outside the runs the calibration was fitted on: 8 "
			                       "devices (fitted: 32-3072), sequence 1024 (fitted: 2048), "
			                       "recompute none (fitted: full)\">"),
			          "no interval marked with its settings");
			cr_expect(strstr(html, "\u2020 2 point(s) outside the runs"), "no legend");
		} else {
			cr_expect(!strstr(html, "Outside the runs their calibration"), "no calibration");
			cr_expect(!strstr(html, "\u2020"), "a mark without a calibration");
		}
		free(html);
	}
	remove_dir();
}
