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
#include <unistd.h>

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
	static const char *const cmds[] = {"check", "topo", "graph", "explain", "plan", "advise"};
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

/* --------------------------------------------------------- plan, advise */

static cJSON *run_json(const char *args)
{
	struct run r = shardlab(args, false);
	cr_assert_eq(r.status, 0, "shardlab %s exits %d", args, r.status);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "shardlab %s does not print JSON", args);
	free(r.out);
	return j;
}

static const char *str_of(const cJSON *obj, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(obj, key);
	cr_assert(cJSON_IsString(v), "%s is not a string", key);
	return v->valuestring;
}

static void expect_compact(const cJSON *obj, const char *key, const char *want)
{
	char *got = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(obj, key));
	cr_assert_str_eq(got, want, "%s: got %s, want %s", key, got, want);
	free(got);
}

Test(cli, plan_json_ffn_golden)
{
	/* Seed 000 with dense1.matmul ((2,1),(1,4)) on 8 devices: the matmul's
	 * output is rows by 2, columns by 4, so the Add (bias cut as its
	 * columns) and ReLU keep ((2,4)) at no cost; the second MatMul must read
	 * relu's layout: rows 2, k 4, hence ((2,4),(4,1)), whose partial sums
	 * over k are all-reduced by the ranks sharing a row block: {0,1,2,3}
	 * and {4,5,6,7} (device matrix [2,4,1], rank = 4·row + k). The second
	 * Add's ((2,4),(4)) then takes columns by 4 from the complete rows-by-2
	 * tensor: one StridedSlice, no traffic. */
	static const struct {
		const char *name, *strategy, *source, *from;
	} want[] = {
		{"dense1.matmul", "[[2,1],[1,4]]", "configured", NULL},
		{"dense1.add", "[[2,4],[4]]", "propagated", "dense1.matmul"},
		{"relu", "[[2,4]]", "propagated", "dense1.add"},
		{"dense2.matmul", "[[2,4],[4,1]]", "propagated", "relu"},
		{"dense2.add", "[[2,4],[4]]", "propagated", "dense2.matmul"},
	};
	cJSON *j = run_json("plan --json scenarios/ffn-8p.json");
	cr_assert_str_eq(str_of(j, "planner"), "propagate");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "ops")), 5);
	for (int i = 0; i < 5; i++) {
		const cJSON *op = nth(j, "ops", i);
		cr_assert_str_eq(str_of(op, "name"), want[i].name);
		expect_compact(op, "strategy", want[i].strategy);
		cr_assert_str_eq(str_of(op, "source"), want[i].source, "%s", want[i].name);
		const cJSON *from = cJSON_GetObjectItemCaseSensitive(op, "from");
		if (want[i].from)
			cr_assert_str_eq(cJSON_GetStringValue(from), want[i].from, "%s", want[i].name);
		else
			cr_assert(cJSON_IsNull(from), "%s: from is not null", want[i].name);
		const cJSON *choice = cJSON_GetObjectItemCaseSensitive(op, "choice");
		cr_assert(i == 0 ? cJSON_IsNull(choice) : cJSON_IsObject(choice));
	}
	const cJSON *mm2 = nth(j, "ops", 3);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(mm2, "comm")), 1);
	expect_step(nth(mm2, "comm", 0), "AllReduce", "[[0,1,2,3],[4,5,6,7]]");
	/* Every op had exactly one zero-cost candidate but the last Add (see
	 * advise_ffn_warns_only_about_the_second_add). */
	const cJSON *choice = cJSON_GetObjectItemCaseSensitive(mm2, "choice");
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(choice, "n_tied")->valueint, 1);
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(choice, "edge_bytes")->valuedouble, 0);
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "redistributions")), 1);
	const cJSON *r = nth(j, "redistributions", 0);
	cr_assert_str_eq(str_of(r, "from"), "dense2.matmul");
	cr_assert_str_eq(str_of(r, "to"), "dense2.add");
	cr_assert_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(r, "steps")), 1);
	expect_step(nth(r, "steps", 0), "StridedSlice", "[]");
	expect_compact(nth(r, "steps", 0), "slice_shape", "[32,16]");
	expect_compact(j, "unreached", "[]");
	cJSON_Delete(j);
}

Test(cli, plan_text_names_sources)
{
	struct run r = shardlab("plan scenarios/ffn-8p.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "planner propagate"));
	cr_assert_not_null(strstr(r.out, "((2, 4), (4, 1))  propagated from relu"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "AllReduce(sum) {0,1,2,3} {4,5,6,7}"));
	cr_assert_not_null(strstr(r.out, "unreached ops             0\n"));
	free(r.out);
}

/* The warnings of `advise --json`, checked to be an array. */
static const cJSON *warnings_of(const cJSON *j)
{
	const cJSON *w = cJSON_GetObjectItemCaseSensitive(j, "warnings");
	cr_assert(cJSON_IsArray(w));
	return w;
}

Test(cli, advise_ffn_warns_only_about_the_second_add)
{
	/* Rule a looks at dense1.add, dense2.matmul and dense2.add (weights; no
	 * op changes rank). dense1.add must read dense1.matmul's rows-2 by
	 * columns-4 output: of the Add's strategies on 8 devices, (8,1), (4,2),
	 * (2,4), (1,8) and replication, only (2,4) needs no traffic; likewise
	 * dense2.matmul only as ((2,4),(4,1)). dense2.add reads the complete
	 * rows-by-2 output of the AllReduce: (8,1), (4,2) and (2,4) all slice
	 * it for free, so 3 tie (the gradient of the bias decides). Rule b: the
	 * only edge is a StridedSlice (0 bytes). Rule c: every op with weights
	 * splits them (model parallel), relu follows dense1.add. */
	cJSON *j = run_json("advise --json scenarios/ffn-8p.json");
	const cJSON *w = warnings_of(j);
	cr_assert_eq(cJSON_GetArraySize(w), 1);
	const cJSON *a = cJSON_GetArrayItem(w, 0);
	cr_assert_str_eq(str_of(a, "rule"), "tied-choice");
	cr_assert_str_eq(str_of(a, "op"), "dense2.add");
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(a, "n_tied")->valueint, 3);
	cr_assert_str_eq(str_of(a, "suggestion"), "\"dense2.add\": [[2, 4], [4]]");
	cJSON_Delete(j);
	struct run r = shardlab("advise scenarios/ffn-8p.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_null(strstr(r.out, "dense2.matmul"), "%s", r.out);
	cr_assert_null(strstr(r.out, "dense1.add"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "suggest: \"dense2.add\": [[2, 4], [4]]\n"));
	free(r.out);
}

Test(cli, advise_lists_a_forced_redistribution)
{
	/* Seed 004: both matmuls configured, matmul1 leaves its 64x64 fp32
	 * output rows by 4, matmul2 reads it whole: an AllGather over 4 ranks of
	 * L = 16·64·4 = 4096 bytes, 3·L = 12288 per device. The one strategy of
	 * matmul2 on 4 devices that reads rows by 4 is ((4,1),(1,1)). */
	cJSON *j = run_json("advise --json scenarios/seed004-allgather-4p.json");
	const cJSON *w = warnings_of(j);
	cr_assert_eq(cJSON_GetArraySize(w), 1);
	const cJSON *a = cJSON_GetArrayItem(w, 0);
	cr_assert_str_eq(str_of(a, "rule"), "costly-edge");
	cr_assert_str_eq(str_of(a, "op"), "matmul2");
	const cJSON *e = cJSON_GetObjectItemCaseSensitive(a, "redistribution");
	cr_assert_eq(cJSON_GetObjectItemCaseSensitive(e, "bytes_per_device")->valuedouble, 12288);
	expect_step(nth(e, "steps", 0), "AllGather", "[[0,1,2,3]]");
	cr_assert_str_eq(str_of(a, "suggestion"), "\"matmul2\": [[4, 1], [1, 1]]");
	cJSON_Delete(j);
	/* --top 0 lists none. */
	j = run_json("advise --json --top 0 scenarios/seed004-allgather-4p.json");
	cr_assert_eq(cJSON_GetArraySize(warnings_of(j)), 0);
	cJSON_Delete(j);
}

Test(cli, advise_names_an_unconfigured_style_boundary)
{
	/* Two branches meet in an Add. mm1 is configured data parallel
	 * ((8,1),(1,1)): mmA can only read its rows-by-8 output for free as
	 * ((8,1),(1,1)), data parallel too. mm2 is configured model parallel
	 * ((1,1),(1,8)): mmB can only read its columns-by-8 output for free as
	 * ((1,8),(8,1)), its weight cut by rows (model parallel), all-reduced to
	 * a complete tensor. The Add waits for both: (8,1) is the one free
	 * choice for mmA's side and slices mmB's side, so it follows mmA (data
	 * parallel). The style changes on mmB -> add, neither configured. */
	char cwd[1024], dir[] = "/tmp/shardlab-advise-XXXXXX", path[64];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/style.json", dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fprintf(f,
	        "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"style\",\n"
	        " \"model\": {\"name\": \"two-branches\",\n"
	        "  \"inputs\": [{\"name\": \"x\", \"shape\": [64, 64], \"dtype\": \"fp32\"},\n"
	        "             {\"name\": \"y\", \"shape\": [64, 64], \"dtype\": \"fp32\"}],\n"
	        "  \"parameters\": [{\"name\": \"w1\", \"shape\": [64, 64], \"dtype\": \"fp32\"},\n"
	        "                 {\"name\": \"wa\", \"shape\": [64, 64], \"dtype\": \"fp32\"},\n"
	        "                 {\"name\": \"w2\", \"shape\": [64, 64], \"dtype\": \"fp32\"},\n"
	        "                 {\"name\": \"wb\", \"shape\": [64, 64], \"dtype\": \"fp32\"}],\n"
	        "  \"ops\": [{\"name\": \"mm1\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w1\"]},\n"
	        "          {\"name\": \"mmA\", \"kind\": \"MatMul\", \"inputs\": [\"mm1\", \"wa\"]},\n"
	        "          {\"name\": \"mm2\", \"kind\": \"MatMul\", \"inputs\": [\"y\", \"w2\"]},\n"
	        "          {\"name\": \"mmB\", \"kind\": \"MatMul\", \"inputs\": [\"mm2\", \"wb\"]},\n"
	        "          {\"name\": \"add\", \"kind\": \"Add\", \"inputs\": [\"mmA\", \"mmB\"]}]},\n"
	        " \"topology\": \"%s/topologies/atlas800-910a.json\",\n"
	        " \"devices\": 8,\n"
	        " \"shard\": {\"mm1\": [[8, 1], [1, 1]], \"mm2\": [[1, 1], [1, 8]]},\n"
	        " \"training\": {\"global_batch\": 64, \"dtype\": \"fp32\"}}\n",
	        cwd);
	fclose(f);
	char args[128];
	snprintf(args, sizeof args, "advise --json %s", path);
	cJSON *j = run_json(args);
	const cJSON *w = warnings_of(j);
	cr_assert_eq(cJSON_GetArraySize(w), 1);
	const cJSON *a = cJSON_GetArrayItem(w, 0);
	cr_assert_str_eq(str_of(a, "rule"), "style-change");
	cr_assert_str_eq(str_of(a, "op"), "add");
	cr_assert_str_eq(str_of(a, "from"), "mmB");
	cr_assert_str_eq(str_of(a, "from_style"), "model parallel");
	cr_assert_str_eq(str_of(a, "style"), "data parallel");
	cr_assert_str_eq(str_of(a, "suggestion"), "\"add\": [[8, 1], [8, 1]]");
	cJSON_Delete(j);
	remove(path);
	remove(dir);
}

Test(cli, plan_and_advise_usage_errors_exit_2)
{
	static const struct {
		const char *args, *err;
	} cases[] = {
		{"plan", "shardlab plan: missing SCENARIO (see --help)\n"},
		{"plan scenarios/ffn-8p.json --planner bogus",
		 "shardlab plan: unknown planner 'bogus'; available: propagate recursive "
		 "data-parallel megatron\n"},
		{"plan scenarios/ffn-8p.json --planner megatron-search",
		 "shardlab plan: planner 'megatron-search' is not available yet; available: propagate "
		 "recursive data-parallel megatron\n"},
		{"plan scenarios/ffn-8p.json --rec-cost exact",
		 "shardlab plan: --rec-cost takes topology or mindspore, got 'exact'\n"},
		{"plan scenarios/ffn-8p.json --frob", "shardlab plan: unknown option '--frob' (see --help)\n"},
		{"advise", "shardlab advise: missing SCENARIO (see --help)\n"},
		{"advise scenarios/ffn-8p.json --top x",
		 "shardlab advise: --top takes a count >= 0, got 'x'\n"},
		{"advise a.json b.json", "shardlab advise: one scenario at a time ('b.json')\n"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct run r = shardlab(cases[i].args, true);
		cr_expect_eq(r.status, 2, "%s exits %d", cases[i].args, r.status);
		cr_expect_str_eq(r.out, cases[i].err, "%s", cases[i].args);
		free(r.out);
	}
	/* An invalid scenario is input, not usage: exit 1 for both. */
	struct run r = shardlab("plan tests/data/bad/scenario-strategy-invalid.json", true);
	cr_expect_eq(r.status, 1);
	free(r.out);
	r = shardlab("advise tests/data/bad/scenario-strategy-invalid.json", true);
	cr_expect_eq(r.status, 1);
	free(r.out);
}
