/* test_cli.c — the command line as a user meets it: the bad-input corpus
 * (each file's exact diagnostics), every shipped file passing `check`, and
 * the help of every command. Runs the built binary ($SHARDLAB) from the
 * source root. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#define BAD_DIR "tests/data/bad"

struct run {
	char *out;   /* the stream asked for */
	int status;  /* exit status, or 128 + signal */
};

/* Runs `shardlab ARGS`, keeping stderr (want_err) or stdout. */
static struct run shardlab(const char *args, bool want_err)
{
	const char *exe = getenv("SHARDLAB");
	cr_assert_not_null(exe, "SHARDLAB is not set (run the tests through meson test)");
	char cmd[4096];
	snprintf(cmd, sizeof cmd, "'%s' %s %s", exe, args,
	         want_err ? "2>&1 >/dev/null" : "2>/dev/null");
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t cap = 1 << 16, len = 0;
	char *buf = malloc(cap);
	size_t n;
	while ((n = fread(buf + len, 1, cap - len - 1, p)) > 0) {
		len += n;
		if (cap - len < 2) {
			cap *= 2;
			buf = realloc(buf, cap);
		}
	}
	buf[len] = '\0';
	int st = pclose(p);
	struct run r = {buf, WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st)};
	return r;
}

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	char *s = malloc((size_t)n + 1);
	size_t got = fread(s, 1, (size_t)n, f);
	s[got] = '\0';
	fclose(f);
	return s;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted names in dir ending with suffix. */
static int list_files(const char *dir, const char *suffix, char ***out)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "cannot open %s", dir);
	int n = 0, cap = 64;
	char **v = malloc(sizeof(char *) * (size_t)cap);
	struct dirent *e;
	size_t sl = strlen(suffix);
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l <= sl || strcmp(e->d_name + l - sl, suffix))
			continue;
		if (n == cap)
			v = realloc(v, sizeof(char *) * (size_t)(cap *= 2));
		v[n++] = strdup(e->d_name);
	}
	closedir(d);
	qsort(v, (size_t)n, sizeof(char *), cmp_str);
	*out = v;
	return n;
}

Test(cli, bad_corpus_gives_exact_diagnostics)
{
	char **names;
	int n = list_files(BAD_DIR, ".json", &names);
	cr_expect_geq(n, 30, "the corpus should hold at least 30 bad files, found %d", n);
	for (int i = 0; i < n; i++) {
		char path[512], exp_path[512], args[600];
		snprintf(path, sizeof path, BAD_DIR "/%s", names[i]);
		snprintf(exp_path, sizeof exp_path, BAD_DIR "/%.*s.expected",
		         (int)(strlen(names[i]) - 5), names[i]);
		char *expected = slurp(exp_path);
		cr_expect_not_null(expected, "%s has no .expected file", path);
		snprintf(args, sizeof args, "check '%s'", path);
		struct run r = shardlab(args, true);
		cr_expect_eq(r.status, 1, "%s: exit status %d, expected 1\n%s", path, r.status, r.out);
		if (expected)
			cr_expect_str_eq(r.out, expected, "%s: diagnostics differ\n--- got\n%s--- expected\n%s",
			                 path, r.out, expected);
		free(expected);
		free(r.out);
		free(names[i]);
	}
	free(names);
}

Test(cli, every_expected_file_has_its_input)
{
	char **names;
	int n = list_files(BAD_DIR, ".expected", &names);
	for (int i = 0; i < n; i++) {
		char path[512];
		snprintf(path, sizeof path, BAD_DIR "/%.*s.json", (int)(strlen(names[i]) - 9), names[i]);
		FILE *f = fopen(path, "rb");
		cr_expect_not_null(f, "%s/%s has no input file", BAD_DIR, names[i]);
		if (f)
			fclose(f);
		free(names[i]);
	}
	free(names);
}

static void check_dir(const char *dir)
{
	char **names;
	int n = list_files(dir, ".json", &names);
	cr_expect_gt(n, 0, "no JSON files in %s", dir);
	for (int i = 0; i < n; i++) {
		char args[600];
		snprintf(args, sizeof args, "check '%s/%s'", dir, names[i]);
		struct run r = shardlab(args, true);
		cr_expect_eq(r.status, 0, "%s/%s does not pass check:\n%s", dir, names[i], r.out);
		cr_expect_str_empty(r.out, "%s/%s: unexpected diagnostics:\n%s", dir, names[i], r.out);
		free(r.out);
		free(names[i]);
	}
	free(names);
}

Test(cli, shipped_topologies_pass_check) { check_dir("topologies"); }
Test(cli, shipped_models_pass_check) { check_dir("models"); }
Test(cli, shipped_scenarios_pass_check) { check_dir("scenarios"); }

Test(cli, check_reports_the_default_scenario)
{
	/* ffn-8p uses the model "ffn" on all 8 devices of one Atlas 800. */
	struct run r = shardlab("check scenarios/ffn-8p.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.out, "ok  scenarios/ffn-8p.json  (scenario: ffn on 8 of 8 devices)\n");
	free(r.out);
}

Test(cli, check_reports_every_file)
{
	/* One good and one missing file: exit 1, the good one still reported. */
	struct run r = shardlab("check scenarios/ffn-8p.json no/such.json", true);
	cr_assert_eq(r.status, 1);
	cr_assert_str_eq(r.out, "no/such.json: cannot read the file: No such file or directory\n");
	free(r.out);
}

Test(cli, help_is_complete)
{
	static const char *const cmds[] = {"check", "topo", "graph", "explain"};
	struct run r = shardlab("--help", false);
	cr_assert_eq(r.status, 0);
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		char needle[32];
		snprintf(needle, sizeof needle, "  %s ", cmds[i]);
		cr_expect_not_null(strstr(r.out, needle), "shardlab --help does not list %s", cmds[i]);
	}
	free(r.out);
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		char args[64], usage[64];
		snprintf(args, sizeof args, "%s --help", cmds[i]);
		snprintf(usage, sizeof usage, "usage: shardlab %s", cmds[i]);
		r = shardlab(args, false);
		cr_expect_eq(r.status, 0, "%s --help exits %d", cmds[i], r.status);
		cr_expect_not_null(strstr(r.out, usage), "%s --help lacks a usage line", cmds[i]);
		cr_expect_not_null(strstr(r.out, "exit status"), "%s --help lacks exit status", cmds[i]);
		free(r.out);
	}
}

Test(cli, usage_errors_exit_2)
{
	struct run r = shardlab("frobnicate", true);
	cr_assert_eq(r.status, 2);
	cr_assert_str_eq(r.out, "shardlab: unknown command 'frobnicate' (see shardlab --help)\n");
	free(r.out);
	r = shardlab("check", true);
	cr_assert_eq(r.status, 2);
	free(r.out);
}

Test(cli, commands_say_which_kind_of_file_they_take)
{
	/* topo takes a topology or a scenario; models/ffn.json says "format":
	 * "shardlab-model" on its line 2. */
	struct run r = shardlab("topo models/ffn.json", true);
	cr_assert_eq(r.status, 1);
	cr_assert_str_eq(r.out, "models/ffn.json:2: format: expected \"shardlab-topology\" or "
	                        "\"shardlab-scenario\" for this command, got \"shardlab-model\"\n");
	free(r.out);
}

Test(cli, graph_and_topo_take_a_scenario)
{
	/* The default scenario's model is seed 000's FFN (5 ops) and its
	 * topology one Atlas 800 (8 x Ascend 910). */
	struct run r = shardlab("graph scenarios/ffn-8p.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "model ffn: 5 ops"));
	free(r.out);
	r = shardlab("topo scenarios/ffn-8p.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "topology atlas800-910a: 8 × Ascend 910"));
	free(r.out);
}

/* ------------------------------------------------------------ explain */

static cJSON *explain_json(const char *scenario)
{
	char args[256];
	snprintf(args, sizeof args, "explain --json --ranks 0 %s", scenario);
	struct run r = shardlab(args, false);
	cr_assert_eq(r.status, 0, "explain %s exits %d", scenario, r.status);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "explain --json %s does not print JSON", scenario);
	free(r.out);
	return j;
}

/* "[[0,1],[2,3]]" for a step's groups. */
static char *groups_of(const cJSON *step)
{
	return cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(step, "groups"));
}

static const cJSON *nth(const cJSON *obj, const char *key, int i)
{
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(obj, key);
	cr_assert(cJSON_IsArray(a), "%s is not an array", key);
	const cJSON *e = cJSON_GetArrayItem(a, i);
	cr_assert_not_null(e, "%s[%d] is missing", key, i);
	return e;
}

static void expect_step(const cJSON *step, const char *kind, const char *groups)
{
	const cJSON *k = cJSON_GetObjectItemCaseSensitive(step, "kind");
	cr_assert_str_eq(cJSON_GetStringValue(k), kind);
	char *g = groups_of(step);
	cr_assert_str_eq(g, groups);
	free(g);
}

Test(cli, explain_json_seed_collectives)
{
	/* Seed 004: one AllGather over 0-1-2-3 between matmul1 and matmul2. */
	cJSON *j = explain_json("scenarios/seed004-allgather-4p.json");
	const cJSON *r = nth(j, "redistributions", 0);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "redistributions")), 1);
	expect_step(nth(r, "steps", 0), "AllGather", "[[0,1,2,3]]");
	cJSON_Delete(j);
	/* Seed 003: Z = YB with ((2,2),(2,1)) all-reduces over {0,1} and {2,3}. */
	j = explain_json("scenarios/seed003-matmul-4p.json");
	expect_step(nth(nth(j, "ops", 1), "comm", 0), "AllReduce", "[[0,1],[2,3]]");
	cJSON_Delete(j);
	/* Seed 004 Layout: the ReduceScatter over the ranks sharing mp, sp-major. */
	j = explain_json("scenarios/seed004-layout-8p.json");
	expect_step(nth(nth(j, "ops", 0), "comm", 0), "ReduceScatter", "[[0,4,2,6],[1,5,3,7]]");
	cJSON_Delete(j);
	/* Seed 000's IR: AllReduce over 0-1-2-3 (4-5-6-7), then StridedSlice. */
	j = explain_json("scenarios/seed000-ffn-ir-8p.json");
	expect_step(nth(nth(j, "ops", 3), "comm", 0), "AllReduce", "[[0,1,2,3],[4,5,6,7]]");
	expect_step(nth(nth(j, "redistributions", 0), "steps", 0), "StridedSlice", "[]");
	const cJSON *mm = nth(j, "ops", 0);
	char *dm = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(mm, "device_matrix"));
	cr_assert_str_eq(dm, "[2,1,4]");
	free(dm);
	char *st = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(mm, "strategy"));
	cr_assert_str_eq(st, "[[2,1],[1,4]]");
	free(st);
	cJSON_Delete(j);
}

Test(cli, explain_refuses_an_invalid_strategy)
{
	struct run r = shardlab("explain tests/data/bad/scenario-strategy-invalid.json", true);
	cr_assert_eq(r.status, 1);
	cr_assert_not_null(strstr(r.out, "tests/data/bad/scenario-strategy-invalid.json:9: "));
	free(r.out);
}
