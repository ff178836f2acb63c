/* fixture.c — the test programs' shared set-up (fixture.h). */
#include <string.h>
#include "fixture.h"

#include <criterion/criterion.h>
#include <criterion/hooks.h>
#include <criterion/internal/ordered-set.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>

/* A test's own .timeout is Criterion's and wins over meson's
 * timeout_multiplier, so under valgrind (some 20 to 50 times slower) a test
 * allowed 60 s would fail on time alone. SHARDLAB_TEST_TIMEOUT_SCALE (set
 * by the valgrind test setup in meson.build) multiplies every such
 * timeout before the first test starts. */
ReportHook(PRE_ALL)(struct criterion_test_set *set)
{
	const char *env = getenv("SHARDLAB_TEST_TIMEOUT_SCALE");
	double scale = env ? strtod(env, NULL) : 1;
	if (!(scale > 1))
		return;
	FOREACH_SET(struct criterion_suite_set *suite, set->suites) {
		FOREACH_SET(struct criterion_test *test, suite->tests) {
			test->data->timeout *= scale;
		}
	}
}

struct arena *A;
struct diag_list D;

void fixture_setup(void)
{
	A = arena_new();
	diag_list_init(&D);
}

void fixture_teardown(void)
{
	for (size_t i = 0; i < D.count; i++) {
		char *s = diag_format(&D.items[i]);
		fprintf(stderr, "%s\n", s ? s : "out of memory");
		free(s);
	}
	diag_list_free(&D);
	arena_free(A);
	A = NULL;
}

struct scenario *fixture_scenario(const char *path)
{
	struct scenario *s = scenario_load(A, path, &D);
	cr_assert_not_null(s, "%s does not load", path);
	return s;
}

struct scenario *fixture_scenario_text(struct arena *a, struct diag_list *d, const char *path,
                                       const char *text)
{
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, path, text, strlen(text), d), "%s does not parse", path);
	struct scenario *s = scenario_load_doc(a, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(s, "%s does not load", path);
	return s;
}

struct scenario *fixture_generated(struct arena *a, struct diag_list *d, const char *generator,
                                   const char *topology, int devices, const char *training)
{
	char text[4096];
	int n = snprintf(text, sizeof text,
	                 "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"g\","
	                 " \"model\": {\"name\": \"m\", \"generator\": %s},"
	                 " \"topology\": \"../topologies/%s.json\", \"devices\": %d,"
	                 " \"training\": %s}",
	                 generator, topology, devices, training);
	cr_assert(n > 0 && (size_t)n < sizeof text, "the scenario's text is too long");
	return fixture_scenario_text(a, d, "scenarios/g.json", text);
}

struct topology *fixture_topology(struct arena *a, const char *name)
{
	struct diag_list d;
	diag_list_init(&d);
	char path[256];
	/* "NAME:none": the file's topology without its collective library
	 * and its stragglers, for tests of the α–β formulas and the
	 * simulator's mechanics themselves */
	const char *colon = strchr(name, ':');
	bool none = colon && strcmp(colon, ":none") == 0;
	snprintf(path, sizeof path, "topologies/%.*s.json", colon ? (int)(colon - name) : (int)strlen(name),
	         name);
	struct topology *t = topo_load(a, path, &d);
	if (t && none) {
		t->coll.library = TOPO_COLL_NONE;
		t->device.speed_cv = 0;
	}
	for (size_t i = 0; !t && i < d.count; i++) {
		char *s = diag_format(&d.items[i]);
		fprintf(stderr, "%s\n", s ? s : "out of memory");
		free(s);
	}
	diag_list_free(&d);
	cr_assert_not_null(t, "%s does not load", path);
	return t;
}

struct program fixture_program(struct arena *a, const struct prog_step *steps, int n_steps,
                               int n_section, int64_t n_ranks, int64_t repeat)
{
	struct prog_step *v = arena_calloc(a, (size_t)n_steps + 1, sizeof(*v));
	int *at = arena_calloc(a, (size_t)n_steps + 1, sizeof(int));
	struct prog_chunk *c = arena_calloc(a, 1, sizeof(*c));
	struct prog_stage *st = arena_calloc(a, 1, sizeof(*st));
	struct prog_slot *sl = arena_calloc(a, (size_t)repeat + 1, sizeof(*sl));
	cr_assert(v && at && c && st && sl);
	int n = 0;
	for (int j = 0; j < n_steps; j++)
		if (steps[j].stream == 1 && steps[j].after < 0)
			v[n++] = steps[j]; /* starts at once */
	for (int i = 0; i < n_section; i++) {
		at[i] = n;
		v[n++] = steps[i];
		for (int j = 0; j < n_steps; j++)
			if (steps[j].stream == 1 && steps[j].after == i) {
				v[n] = steps[j];
				v[n++].after = at[i];
			}
	}
	c->n_fwd = n;
	st->tail = n;
	for (int i = n_section; i < n_steps; i++)
		if (steps[i].stream == 0)
			v[n++] = steps[i];
	st->n_tail = n - st->tail;
	for (int64_t k = 0; k < repeat; k++)
		sl[k] = (struct prog_slot){.chunk = 0, .micro = k, .last = k == repeat - 1};
	st->n_slots = (int)repeat;
	st->slots = sl;
	cr_assert_eq(n, n_steps, "stream-1 steps wait for a step of the section");
	return (struct program){.n_ranks = n_ranks, .stage_ranks = n_ranks, .n_stages = 1,
	                        .n_chunks = 1, .micro_batches = repeat, .chunks = c, .stages = st,
	                        .n_steps = n, .steps = v};
}

struct cli_run fixture_shardlab(const char *args, bool want_err)
{
	const char *exe = getenv("SHARDLAB");
	cr_assert_not_null(exe, "SHARDLAB is not set (run the tests through meson test)");
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "'%s' %s %s", exe, args,
	         want_err ? "2>&1 >/dev/null" : "2>/dev/null");
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t cap = 1 << 16, len = 0, n;
	char *buf = malloc(cap);
	cr_assert_not_null(buf);
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 2) {
			buf = realloc(buf, cap *= 2);
			cr_assert_not_null(buf);
		}
	}
	buf[len] = '\0';
	int st = pclose(p);
	return (struct cli_run){buf, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)};
}

void fixture_write(const char *path, const char *fmt, ...)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f, "cannot write %s", path);
	va_list ap;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	cr_assert_eq(fclose(f), 0, "cannot write %s", path);
}
