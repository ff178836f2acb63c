/* test_csv.c — every table a command prints as CSV (cli/csv.c and each
 * command's --csv): RFC 4180 quoting, numbers in full, one header row with
 * units in the names and rows of the same width; values checked by hand
 * on seed 000's FFN and against the same command's --json. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fixture.h"

/* ------------------------------------------------ a small RFC 4180 reader */

#define MAX_FIELDS 32
#define MAX_ROWS 4096

struct table {
	int n_rows, n_cols;
	char *cell[MAX_ROWS][MAX_FIELDS];
};

/* Parses text into t (fields malloc'd); false when a row's width differs
 * from the header's. */
static bool parse_csv(const char *text, struct table *t)
{
	memset(t, 0, sizeof *t);
	const char *p = text;
	while (*p && t->n_rows < MAX_ROWS) {
		int col = 0;
		for (;;) {
			char buf[4096];
			size_t n = 0;
			if (*p == '"') {
				for (p++; *p && !(*p == '"' && p[1] != '"'); p++) {
					if (*p == '"')
						p++;
					buf[n++] = *p;
				}
				if (*p == '"')
					p++;
			} else {
				while (*p && *p != ',' && *p != '\n')
					buf[n++] = *p++;
			}
			buf[n] = '\0';
			cr_assert_lt(col, MAX_FIELDS);
			t->cell[t->n_rows][col++] = strdup(buf);
			if (*p == ',') {
				p++;
				continue;
			}
			if (*p == '\n')
				p++;
			break;
		}
		if (t->n_rows == 0)
			t->n_cols = col;
		else if (col != t->n_cols)
			return false;
		t->n_rows++;
	}
	return true;
}

static void free_table(struct table *t)
{
	for (int r = 0; r < t->n_rows; r++)
		for (int c = 0; c < MAX_FIELDS; c++)
			free(t->cell[r][c]);
}

static int column(const struct table *t, const char *name)
{
	for (int c = 0; c < t->n_cols; c++)
		if (!strcmp(t->cell[0][c], name))
			return c;
	cr_assert_fail("no column %s", name);
	return -1;
}

static struct table *run_csv(const char *args)
{
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "shardlab %s exits %d", args, r.status);
	struct table *t = malloc(sizeof *t);
	cr_assert(parse_csv(r.out, t), "shardlab %s: rows of unequal width:\n%s", args, r.out);
	free(r.out);
	return t;
}

/* ---------------------------------------------------------- the writer */

Test(csv, quoting_and_numbers)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	struct cli_csv c = {.f = f};
	static const char *const cols[] = {"a", "b,c", NULL};
	cli_csv_header(&c, cols);
	cli_csv_str(&c, "say \"hi\"");
	cli_csv_str(&c, NULL);
	cli_csv_num(&c, 0.1);
	cli_csv_num(&c, 1.0 / 3);
	cli_csv_int(&c, -42);
	cli_csv_str(&c, "two\nlines");
	cli_csv_end(&c);
	fclose(f);
	/* 0.1 reads back from 15 digits; 1/3 needs 17. */
	cr_assert_str_eq(text, "a,\"b,c\"\n\"say \"\"hi\"\"\",,0.1,0.33333333333333331,-42,"
	                       "\"two\nlines\"\n");
	free(text);
}

/* ------------------------------------------------------------ commands */

Test(csv, graph_of_the_ffn_by_hand)
{
	/* models/ffn.json: x [64,64] fp32; dense1.matmul 2·64³ = 524,288 FLOPs,
	 * reads x and W (2·64·64·4 = 32,768 B), writes 64·64·4 = 16,384 B,
	 * 4,096 parameters; dense1.add reads 16,384 + 256 B. */
	struct table *t = run_csv("graph models/ffn.json --csv");
	cr_assert_eq(t->n_rows, 1 + 5);
	cr_assert_str_eq(t->cell[1][column(t, "name")], "dense1.matmul");
	cr_assert_str_eq(t->cell[1][column(t, "forward_flops")], "524288");
	cr_assert_str_eq(t->cell[1][column(t, "bytes_read_bytes")], "32768");
	cr_assert_str_eq(t->cell[1][column(t, "bytes_written_bytes")], "16384");
	cr_assert_str_eq(t->cell[1][column(t, "parameters_elements")], "4096");
	cr_assert_str_eq(t->cell[1][column(t, "inputs")], "[64,64] [64,64]");
	cr_assert_str_eq(t->cell[2][column(t, "bytes_read_bytes")], "16640");
	free_table(t);
	free(t);
}

Test(csv, plan_of_seed000)
{
	/* Seed 000's propagation; dense2.matmul's partial sums [32,64] fp32
	 * (8,192 B) all-reduced over 4 ranks: 2·3/4·8,192 = 12,288 B per
	 * device; dense1.matmul's weight slice [64,16] fp32 (4,096 B)
	 * all-reduced over 2 ranks: 2·1/2·4,096 = 4,096 B. */
	struct table *t = run_csv("plan scenarios/ffn-8p.json --csv");
	cr_assert_eq(t->n_rows, 1 + 5);
	static const char *const want[] = {"((2, 1), (1, 4))", "((2, 4), (4,))", "((2, 4))",
	                                   "((2, 4), (4, 1))", "((2, 4), (4,))"};
	int st = column(t, "strategy");
	for (int i = 0; i < 5; i++)
		cr_expect_str_eq(t->cell[i + 1][st], want[i]);
	cr_assert_str_eq(t->cell[1][column(t, "source")], "configured");
	cr_assert_str_eq(t->cell[2][column(t, "source")], "propagated");
	cr_assert_str_eq(t->cell[2][column(t, "from")], "dense1.matmul");
	cr_assert_str_eq(t->cell[4][column(t, "forward_comm_bytes_per_device")], "12288");
	cr_assert_str_eq(t->cell[1][column(t, "gradient_bytes_per_device")], "4096");
	free_table(t);
	free(t);
}

/* cJSON prints 15 digits when they read back within its tolerance
 * (a few ulps), the CSV every digit: equal to that tolerance. */
static bool same(const char *csv, double json)
{
	double v = strtod(csv, NULL);
	return fabs(v - json) <= 4e-16 * fabs(json);
}

static double jnum(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	cr_assert(cJSON_IsNumber(v), "no number %s", k);
	return v->valuedouble;
}

Test(csv, estimate_rows_are_the_json_ops)
{
	struct table *t = run_csv("estimate scenarios/gpt-small-910a-32p.json --csv");
	struct cli_run r = fixture_shardlab("estimate scenarios/gpt-small-910a-32p.json --json",
	                                    false);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j);
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops");
	cr_assert_eq(t->n_rows - 1, cJSON_GetArraySize(ops));
	int k = 1, total = column(t, "total_s"), fwd = column(t, "compute_forward_s");
	int stage = column(t, "stage");
	bool both_stages[2] = {false, false};
	for (const cJSON *o = ops->child; o; o = o->next, k++) {
		cr_expect(same(t->cell[k][total], jnum(o, "total_s")));
		cr_expect(same(t->cell[k][fwd], jnum(o, "compute_forward_s")));
		int s = atoi(t->cell[k][stage]);
		cr_assert(s == 0 || s == 1);
		both_stages[s] = true;
	}
	cr_expect(both_stages[0] && both_stages[1], "two pipeline stages");
	cJSON_Delete(j);
	free(r.out);
	free_table(t);
	free(t);
}

Test(csv, compare_rows_are_the_json_rows, .timeout = 60)
{
	struct table *t = run_csv("compare scenarios/ffn-8p.json --csv");
	struct cli_run r = fixture_shardlab("compare scenarios/ffn-8p.json --json", false);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j);
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
	cr_assert_eq(t->n_rows - 1, cJSON_GetArraySize(rows));
	int k = 1;
	for (const cJSON *o = rows->child; o; o = o->next, k++) {
		cr_expect_str_eq(t->cell[k][column(t, "planner")],
		                 cJSON_GetObjectItemCaseSensitive(o, "planner")->valuestring);
		cr_expect(same(t->cell[k][column(t, "estimated_s")], jnum(o, "estimate_s")));
		cr_expect(same(t->cell[k][column(t, "simulated_s")], jnum(o, "simulated_s")));
		cr_expect(same(t->cell[k][column(t, "memory_bytes_per_device")],
		               jnum(o, "memory_bytes_per_device")));
	}
	cJSON_Delete(j);
	free(r.out);
	free_table(t);
	free(t);
}

Test(csv, megatron_search_lists_every_configuration, .timeout = 60)
{
	/* tests/planner/test_search.c counts 324 configurations, all of which
	 * fit. */
	struct table *t = run_csv("compare tests/data/good/search-gpt-4p.json --planner "
	                          "megatron-search --top 2 --csv");
	cr_assert_eq(t->n_rows - 1, 324);
	int sim = column(t, "simulated_s");
	cr_expect_neq(t->cell[1][sim][0], '\0');
	cr_expect_neq(t->cell[2][sim][0], '\0');
	cr_expect_eq(t->cell[3][sim][0], '\0');
	for (int k = 1; k < t->n_rows; k++) {
		int64_t tp = atoll(t->cell[k][column(t, "tp")]), pp = atoll(t->cell[k][column(t, "pp")]);
		int64_t dp = atoll(t->cell[k][column(t, "dp")]);
		cr_expect_eq(tp * pp * dp, 4, "row %d uses the 4 devices", k);
	}
	free_table(t);
	free(t);
}

Test(csv, explain_of_seed000)
{
	/* docs/planner.md: MatMul ((2,1),(1,4)) on 8 devices has the device matrix
	 * [2, 1, 4], X maps to [2, 1], W to [1, 0], Y to [2, 0]; X's slice is
	 * [32, 64] (8,192 B in fp32), W's [64, 16] (4,096 B). */
	struct table *t = run_csv("explain scenarios/ffn-8p-layout.json --csv");
	free_table(t);
	free(t);
	t = run_csv("explain scenarios/ffn-8p.json --csv");
	int dm = column(t, "device_matrix"), map = column(t, "tensor_map");
	int sl = column(t, "slice_shape"), by = column(t, "slice_bytes");
	cr_assert_str_eq(t->cell[1][column(t, "op")], "dense1.matmul");
	cr_assert_str_eq(t->cell[1][dm], "[2, 1, 4]");
	cr_assert_str_eq(t->cell[1][map], "[2, 1]");
	cr_assert_str_eq(t->cell[2][map], "[1, 0]");
	cr_assert_str_eq(t->cell[3][map], "[2, 0]");
	cr_assert_str_eq(t->cell[3][column(t, "role")], "output 0");
	cr_assert_str_eq(t->cell[1][sl], "[32, 64]");
	cr_assert_str_eq(t->cell[1][by], "8192");
	cr_assert_str_eq(t->cell[2][sl], "[64, 16]");
	cr_assert_str_eq(t->cell[2][by], "4096");
	free_table(t);
	free(t);
}

Test(csv, topo_links_and_path)
{
	/* dgx-a100: NVSwitch ports of 300 GB/s at efficiency 0.767 (230.1 GB/s),
	 * HDR NICs of 25 GB/s at 0.94 (23.5 GB/s), one per GPU. */
	struct table *t = run_csv("topo topologies/dgx-a100.json --csv");
	cr_assert_eq(t->n_rows, 3);
	cr_assert_str_eq(t->cell[1][column(t, "link")], "nvswitch");
	cr_assert_eq(strtod(t->cell[1][column(t, "line_rate_bytes_per_s")], NULL), 300e9);
	cr_assert_eq(strtod(t->cell[1][column(t, "link_bytes_per_s")], NULL), 300e9 * 0.767);
	cr_assert_str_eq(t->cell[1][column(t, "groups")], "{0,1,2,3,4,5,6,7}");
	cr_assert_str_eq(t->cell[2][column(t, "link")], "nic");
	cr_assert_eq(strtod(t->cell[2][column(t, "link_bytes_per_s")], NULL), 25e9 * 0.94);
	free_table(t);
	free(t);
	/* Ranks 3 and 77 of 128 DGX A100 are in servers 0 and 9: NIC, leaf,
	 * spine, leaf, NIC (docs/formats.md, "Topology queries"). */
	t = run_csv("topo topologies/dgx-a100-x128.json --between 3 77 --csv");
	cr_assert_eq(t->n_rows, 1 + 5);
	cr_assert_str_eq(t->cell[3][column(t, "what")], "spine");
	free_table(t);
	free(t);
}

Test(csv, simulate_one_row_per_rank, .timeout = 60)
{
	/* gpt-small-910a-32p: 32 ranks in 2 stages of 16. */
	struct table *t = run_csv("simulate scenarios/gpt-small-910a-32p.json --csv");
	cr_assert_eq(t->n_rows, 1 + 32);
	for (int k = 1; k <= 32; k++) {
		cr_expect_eq(atoi(t->cell[k][column(t, "rank")]), k - 1);
		cr_expect_eq(atoi(t->cell[k][column(t, "stage")]), (k - 1) / 16);
		double sum = strtod(t->cell[k][column(t, "compute_s")], NULL) +
		             strtod(t->cell[k][column(t, "comm_exposed_s")], NULL) +
		             strtod(t->cell[k][column(t, "pipeline_wait_s")], NULL) +
		             strtod(t->cell[k][column(t, "idle_s")], NULL);
		double it = strtod(t->cell[k][column(t, "iteration_s")], NULL);
		/* docs/simulation.md: the four parts make up each rank's iteration. */
		cr_expect(fabs(sum - it) <= 1e-9 * it, "rank %d: %g of %g", k - 1, sum, it);
	}
	free_table(t);
	free(t);
}

Test(csv, validate_rows_and_points, .timeout = 60)
{
	struct table *t = run_csv("validate tests/data/good/validate-training.json "
	                          "--estimate-only --csv");
	struct cli_run r = fixture_shardlab("validate tests/data/good/validate-training.json "
	                                    "--estimate-only --json", false);
	cJSON *j = cJSON_Parse(r.out);
	const cJSON *rows = cJSON_GetObjectItemCaseSensitive(j, "rows");
	cr_assert_eq(t->n_rows - 1, cJSON_GetArraySize(rows));
	int k = 1;
	for (const cJSON *o = rows->child; o; o = o->next, k++) {
		const cJSON *e = cJSON_GetObjectItemCaseSensitive(o, "estimate");
		if (cJSON_IsObject(e))
			cr_expect(same(t->cell[k][column(t, "estimated_error_pct")],
			               jnum(e, "error_pct")));
		cr_expect_eq(t->cell[k][column(t, "simulated_iteration_s")][0], '\0');
	}
	cJSON_Delete(j);
	free(r.out);
	free_table(t);
	free(t);
	/* Collectives: one row per message size; busbw = S / t x 2(n-1)/n for
	 * an all-reduce over 8 ranks (nccl-tests). */
	t = run_csv("validate tests/data/good/validate-collectives.json --estimate-only --csv");
	cr_assert_geq(t->n_rows, 2);
	for (k = 1; k < t->n_rows; k++) {
		if (strcmp(t->cell[k][column(t, "collective")], "AllReduce") ||
		    atoi(t->cell[k][column(t, "devices")]) != 8)
			continue;
		double S = strtod(t->cell[k][column(t, "bytes")], NULL);
		double s = strtod(t->cell[k][column(t, "formula_s")], NULL);
		double bw = strtod(t->cell[k][column(t, "formula_busbw_bytes_per_s")], NULL);
		cr_expect(fabs(bw - S / s * 2 * 7 / 8) <= 1e-9 * bw);
	}
	free_table(t);
	free(t);
}

Test(csv, calibrate_residuals)
{
	/* The first row is a 256³ bf16 GEMM: operands and result of 256 x 256
	 * x 2 B each, 393,216 B; model_s = measured_s (1 + relative). */
	struct table *t = run_csv("calibrate calibration/synthetic-a100-example.csv --topology "
	                          "topologies/dgx-a100.json --csv");
	cr_assert_str_eq(t->cell[1][column(t, "kind")], "gemm");
	cr_assert_str_eq(t->cell[1][column(t, "m")], "256");
	cr_assert_str_eq(t->cell[1][column(t, "bytes")], "393216");
	for (int k = 1; k < t->n_rows; k++) {
		double m = strtod(t->cell[k][column(t, "measured_s")], NULL);
		double p = strtod(t->cell[k][column(t, "model_s")], NULL);
		double e = strtod(t->cell[k][column(t, "relative_error_pct")], NULL);
		cr_expect(fabs(100 * (p / m - 1) - e) <= 1e-9, "row %d", k);
	}
	free_table(t);
	free(t);
}

Test(csv, advise_of_seed000)
{
	/* Seed 000: the second Add is the op a user should configure. */
	struct table *t = run_csv("advise scenarios/ffn-8p.json --csv");
	cr_assert_eq(t->n_rows, 2);
	cr_assert_str_eq(t->cell[1][column(t, "rule")], "tied-choice");
	cr_assert_str_eq(t->cell[1][column(t, "op")], "dense2.add");
	cr_assert_str_eq(t->cell[1][column(t, "suggestion")], "\"dense2.add\": [[2, 4], [4]]");
	free_table(t);
	free(t);
}

Test(csv, every_table_command_documents_csv)
{
	static const char *const cmds[] = {"topo", "calibrate", "graph", "explain", "plan",
	                                   "advise", "estimate", "simulate", "compare", "validate"};
	for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
		char args[64];
		snprintf(args, sizeof args, "%s --help", cmds[i]);
		struct cli_run r = fixture_shardlab(args, false);
		cr_expect_not_null(strstr(r.out, "--csv"), "%s --help does not mention --csv", cmds[i]);
		free(r.out);
	}
}
