/* test_studies.c — capacity-planning studies: the study loader, the
 * search space counted by hand, a point's figures from the formulas of
 * docs/formats.md, the Pareto front and the choices of fit on rows made
 * by hand, and the sweep as a user runs it: killed with SIGKILL in the
 * middle and run again, it ends with the rows of an uninterrupted run;
 * a database of other inputs refused; the same rows under mpirun; fault
 * cases priced by hand through the study path; a row's interval against
 * estimate's, and fit's 90th percentile on points made by hand. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <spawn.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "studies.h"

extern char **environ;

TestSuite(studies, .init = fixture_setup, .fini = fixture_teardown);

static struct study *load(const char *path)
{
	struct study *st = study_load(A, path, &D);
	cr_assert_not_null(st, "%s does not load", path);
	return st;
}

Test(studies, shipped_studies_pass_check)
{
	const char *files[] = {"scenarios/studies/teaching-gpt-4layer.json",
	                       "scenarios/studies/gpt3-175b-a100-h100.json",
	                       "scenarios/studies/llama2-70b-910b-h100.json",
	                       "scenarios/studies/llama2-70b-frontier.json",
	                       "scenarios/studies/nic-degradation-h100-1024.json",
	                       "scenarios/studies/placement-spine-h100-16p.json"};
	for (size_t i = 0; i < SL_COUNTOF(files); i++) {
		char args[256];
		snprintf(args, sizeof args, "check %s", files[i]);
		struct cli_run r = fixture_shardlab(args, true);
		cr_expect_eq(r.status, 0, "%s does not pass check:\n%s", files[i], r.out);
		free(r.out);
	}
}

/* One Atlas 800 (8 NPUs), a 4-layer generated GPT, global batch 8. By
 * hand (TP | 8, PP | 8/TP, PP <= 4 layers, DP = 8/TP/PP, micro-batch b of
 * 1, 2, 4, 8 with b DP | 8, m = 8/(b DP); 12 variants per schedule:
 * 3 recompute x 4 ZeRO; PP > 1 adds interleaving when m % PP == 0 and
 * 2 PP <= 4, and GPipe, which Megatron-LM does not run and the rules
 * refuse; the 16 heads, 8192 MLP columns, 1024 tokens and 4 layers divide
 * by every TP and PP):
 *   TP1 PP1: b1                      12
 *   TP1 PP2: b1 (m2, +int) 24, b2 12 36
 *   TP1 PP4: b1 b2 b4, 12 each       36
 *   TP2 PP1: b1 b2                   24
 *   TP2 PP2: b1 24, b2 24, b4 12     60
 *   TP2 PP4: b1 b2 b4 b8, 12 each    48
 *   TP4 PP1: b1 b2 b4                36
 *   TP4 PP2: b1 24 b2 24 b4 24 b8 12 84
 *   TP8 PP1: b1 b2 b4 b8             48
 * and with TP > 1 each unit twice, sequence parallelism off and on:
 * 84 + 2 x (132 + 120 + 48) = 684 points in 6 + 2 x (9 + 7 + 4) = 46
 * units (GPipe's 12 in each of the 5 + 2 x 11 pipelined units, 324,
 * refused). */
Test(studies, search_space_counted_by_hand)
{
	struct study *st = load("tests/data/studies/tiny.json");
	int n_units;
	int64_t n_points;
	struct study_unit *u = study_units(A, st, &n_units, &n_points);
	cr_assert_not_null(u);
	cr_expect_eq(n_units, 46);
	cr_expect_eq(n_points, 684);
	/* The first unit: TP 1, PP 1, DP 8, micro-batch 1, one micro-batch. */
	cr_expect_eq(u[0].configs[0].tp, 1);
	cr_expect_eq(u[0].configs[0].dp, 8);
	cr_expect_eq(u[0].configs[0].micro_batches, 1);
	cr_expect_eq(u[0].n_configs, 12);
	/* plan_search's own enumeration agrees. */
	struct scenario s = *st->scenario;
	struct topology t = *st->clusters[0].topo;
	t.servers = 1;
	t.n_devices = 8;
	s.topo = &t;
	s.devices = 8;
	s.training.global_batch = 8;
	struct search_result r;
	struct plan_options o = {0};
	cr_assert(plan_search(A, &s, &o, &r, &D));
	cr_expect_eq(r.n_configs, 684);
	cr_expect_eq(r.refused[SEARCH_RULE_SCHEDULE], 324);
	/* Counted cell by cell without holding the units: the same 46 units,
	 * 684 points, one cell, and at most 24 points a unit (TP1 PP2 b1
	 * above: 1F1B and interleaved, x 12), GPipe's 324 left out. */
	struct study_size sz;
	cr_assert(study_count(st, &sz));
	cr_expect_eq(sz.cells, 1);
	cr_expect_eq(sz.units, 46);
	cr_expect_eq(sz.points, 684);
	cr_expect_eq(sz.max_configs, 24);
	cr_expect_eq(sz.refused[SEARCH_RULE_SCHEDULE], 324);
}

/* Issue 42: a study's size is known before any work. The counts of the
 * cell-by-cell walk are those of the whole enumeration, on every shipped
 * study; a sweep over the limit is refused with the count, up front. */
Test(studies, count_walks_the_same_points_as_the_enumeration)
{
	static const char *const files[] = {"tests/data/studies/tiny.json",
	                                    "tests/data/studies/moe.json",
	                                    "tests/data/studies/cp.json",
	                                    "tests/data/studies/resume.json"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct study *st = load(files[i]);
		int n_units;
		int64_t n_points;
		cr_assert_not_null(study_units(A, st, &n_units, &n_points));
		struct study_size sz;
		cr_assert(study_count(st, &sz));
		cr_expect_eq(sz.units, n_units, "%s", files[i]);
		cr_expect_eq(sz.points, n_points, "%s", files[i]);
		int64_t cells = 0;
		for (int c = 0; c < st->n_clusters; c++)
			cells += (int64_t)st->clusters[c].n_sizes * st->n_batches;
		cr_expect_eq(sz.cells, cells, "%s", files[i]);
	}
}

Test(studies, sweep_over_the_limit_is_refused_up_front)
{
	char dir[] = "/tmp/shardlab-limit-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[600], args[1400];
	snprintf(db, sizeof db, "%s/t.db", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/tiny.json --db %s --max-points 683",
	         db);
	struct cli_run r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	/* tiny.json's "clusters" is on its line 7; 684 points (above). */
	cr_expect_str_eq(r.out, "tests/data/studies/tiny.json:7: clusters: the study has 684 points "
	                        "(1 cluster sizes x global batches, 46 units), more than the 683 a "
	                        "sweep takes (--max-points N raises the limit; docs/studies.md, "
	                        "\"How big a study may be\")\n");
	free(r.out);
	cr_expect_eq(access(db, F_OK), -1, "nothing is written for a refused study");
	snprintf(args, sizeof args, "check tests/data/studies/tiny.json --max-points 683");
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "check tests/data/studies/tiny.json --max-points 684");
	r = fixture_shardlab(args, false);
	cr_expect_eq(r.status, 0, "%s", r.out);
	free(r.out);
	rmdir(dir);
}

/* A point's figures by hand: 8 devices, 0.1 s per iteration of which
 * 0.08 s compute, 65,536 tokens per iteration, 10^15 model FLOPs per
 * iteration; the goal 2e9 tokens; 2.0 per device-hour; 50 W idle,
 * 310 W busy; the Ascend 910's 320 TFLOP/s fp16.
 *   iterations    ceil(2e9 / 65536) = ceil(30517.58) = 30518
 *   time          30518 x 0.1 = 3051.8 s
 *   device-hours  8 x 3051.8 / 3600 = 6.781778
 *   energy        8 x 30518 x (50 x 0.1 + 260 x 0.08) / 3.6e6 = 1.749699 kWh
 *   cost          6.781778 x 2 = 13.563556
 *   MFU           1e15 / (8 x 320e12 x 0.1) = 3.90625
 *   tokens/s      655,360 */
Test(studies, point_figures_by_hand)
{
	struct study *st = load("tests/data/studies/tiny.json");
	st->goal = (struct study_goal){.tokens = 2e9};
	st->goodput.on = false; /* the ideal figures; goodput below */
	struct study_row r = {.cluster = 0, .devices = 8, .iteration_s = 0.1, .compute_s = 0.08,
	                      .model_flops = 1e15, .tokens_per_iteration = 65536};
	study_row_figures(st, &r);
	cr_expect_float_eq(r.goodput, 1, 1e-12);
	cr_expect_float_eq(r.effective_time_s, r.time_to_train_s, 1e-12);
	cr_expect_float_eq(r.iterations, 30518, 1e-9);
	cr_expect_float_eq(r.time_to_train_s, 3051.8, 1e-9);
	cr_expect_float_eq(r.device_hours, 6.781778, 1e-6);
	cr_expect_float_eq(r.energy_kwh, 1.749699, 1e-6);
	cr_expect_float_eq(r.cost, 13.563556, 1e-6);
	cr_expect_float_eq(r.mfu, 3.90625, 1e-9);
	cr_expect_float_eq(r.tokens_per_s, 655360, 1e-6);
	/* No price, no power: no cost, no energy. */
	st->clusters[0].price_per_device_hour = -1;
	st->clusters[0].idle_w = st->clusters[0].busy_w = -1;
	study_row_figures(st, &r);
	cr_expect(isnan(r.cost) && isnan(r.energy_kwh));
}

/* Daly's model by hand (Future Generation Computer Systems 22(3), 2006,
 * eqs. 11 and 37): 1,024 devices failing at 1e-4 per device-hour,
 *   M     = 3600 / (1e-4 x 1024)                       = 35,156.25 s
 * a 1 TB checkpoint over 10 GB/s each way, a 600 s relaunch,
 *   delta = 1e12 / 1e10 = 100 s, R = 600 + 100          = 700 s
 *   x     = delta / 2M                                  = 0.00142222
 *   tau   = sqrt(2 delta M) (1 + sqrt(x)/3 + x/9) - delta
 *         = 2,651.6504 x 1.0127288 - 100                = 2,585.4028 s
 *   T_w   = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau
 * for T_s = 1e6 s of training                           = 1,101,084.96 s
 * goodput 1e6 / T_w = 0.908195, interruptions T_w / M = 31.3198.
 * Asynchronous, 2 GB a device copied to the host at 32 GB/s stops the job
 * 0.0625 s a checkpoint; Daly's interval for that, 66.25 s, is shorter than
 * the 100 s write, so the interval is the write: T_w = 1,022,202.25 s,
 * goodput 0.978280. */
Test(studies, goodput_by_hand)
{
	struct study_goodput g;
	study_goodput_defaults(&g);
	g.failures_per_device_hour = 1e-4;
	g.relaunch_s = 600;
	g.storage_write_bps = g.storage_read_bps = 1e10;
	struct study_goodput_out o;
	study_goodput_eval(&g, 1024, 1e12, 2e9, 1e6, &o);
	cr_expect_float_eq(o.mtbf_s, 35156.25, 1e-9);
	cr_expect_float_eq(o.checkpoint_s, 100, 1e-12);
	cr_expect_float_eq(o.restart_s, 700, 1e-12);
	cr_expect_float_eq(o.interval_s, 2585.4028, 1e-4);
	cr_expect_float_eq(o.wall_s, 1101084.96, 1e-2);
	cr_expect_float_eq(o.goodput, 0.908195, 1e-6);
	cr_expect_float_eq(o.interruptions, 31.3198, 1e-4);
	/* the interval alone */
	cr_expect_float_eq(study_goodput_daly_interval_s(100, 35156.25), 2585.4028, 1e-4);
	g.async = true;
	study_goodput_eval(&g, 1024, 1e12, 2e9, 1e6, &o);
	cr_expect_float_eq(o.checkpoint_s, 0.0625, 1e-12);
	cr_expect_float_eq(o.interval_s, 100, 1e-12);
	cr_expect_float_eq(o.wall_s, 1022202.25, 1e-2);
	cr_expect_float_eq(o.goodput, 0.978280, 1e-6);
	/* a given interval is kept */
	g.async = false;
	g.interval_s = 3600;
	study_goodput_eval(&g, 1024, 1e12, 2e9, 1e6, &o);
	cr_expect_float_eq(o.interval_s, 3600, 1e-12);
	/* no failures: one checkpoint at the end */
	g.failures_per_device_hour = 0;
	g.interval_s = 0;
	study_goodput_eval(&g, 1024, 1e12, 2e9, 1e6, &o);
	cr_expect_float_eq(o.wall_s, 1e6 + 100, 1e-12);
	cr_expect_eq(o.interruptions, 0);
	/* the default rate: Llama 3's 419 interruptions in 54 days on 16,384 GPUs */
	cr_expect_float_eq(study_default_failures_per_device_hour, 419 / (54.0 * 24 * 16384), 1e-12);
}

/* A row's effective figures: device-hours, energy and cost over the
 * effective time (energy at the training's mean draw), and `fit` answers
 * on the effective time. */
Test(studies, goodput_prices_the_effective_time)
{
	struct study *st = load("tests/data/studies/tiny.json");
	st->goal = (struct study_goal){.tokens = 2e9};
	st->goodput.failures_per_device_hour = 0.01; /* M = 3600 / 0.08 = 45,000 s */
	st->goodput.relaunch_s = 600;
	struct study_row r = {.cluster = 0, .devices = 8, .iteration_s = 0.1, .compute_s = 0.08,
	                      .model_flops = 1e15, .tokens_per_iteration = 65536,
	                      .state_bytes = 0, .state_bytes_per_device = 0};
	study_row_figures(st, &r);
	/* no state: checkpoints cost nothing (delta 0), Daly's interval tends to
	 * 0 and T_w to T_s e^{R/M} = 3051.8 e^{600/45000} = 3,092.76 s */
	double M = 45000, T = 3051.8;
	double w = T * exp(600 / M);
	cr_expect_float_eq(w, 3092.76, 1e-2);
	cr_expect_float_eq(r.checkpoint_interval_s, 0, 1e-12);
	cr_expect_float_eq(r.effective_time_s, w, 1e-9 * w);
	cr_expect_float_eq(r.goodput, T / w, 1e-12);
	cr_expect_float_eq(r.device_hours, 8 * w / 3600, 1e-9);
	cr_expect_float_eq(r.cost, 2 * 8 * w / 3600, 1e-9);
	cr_expect_float_eq(r.energy_kwh, 1.749699 * w / T, 1e-6);
}

/* The estimate's MFU on a real point: 3 x the graph's forward FLOPs (the
 * model FLOPs, 6 N per token plus attention) over the devices' peak. For
 * the 4-layer GPT (h 2048, s 1024, V 51200, ffn 8192) per sequence, the
 * forward GEMMs alone are 2 s (4 layers x 12 h^2 + V h) + 4 layers x 2 s^2 h
 * = 2 x 1024 x (4 x 50.33M + 104.86M) + 4 x 2 x 1024^2 x 2048 = 6.39e11;
 * the whole graph's forward FLOPs are a little more (softmax, layernorm). */
Test(studies, mfu_counts_model_flops)
{
	struct study *st = load("tests/data/studies/tiny.json");
	int n_units;
	int64_t n_points;
	struct study_unit *u = study_units(A, st, &n_units, &n_points);
	struct study_row *rows = arena_calloc(A, (size_t)u[0].n_configs, sizeof *rows);
	cr_assert(study_eval_unit(A, st, &u[0], NULL, rows));
	cr_assert(rows[0].ok, "%s", rows[0].error);
	double fwd_per_seq = 2.0 * 1024 * (4 * 12.0 * 2048 * 2048 + 51200.0 * 2048) +
	                     4 * 2.0 * 1024 * 1024 * 2048 * 2;
	/* Global batch 8: MFU >= 3 x 8 x GEMM FLOPs / (8 x 320e12 x t), and
	 * within 5% of it. */
	double gemm_mfu = 3 * 8 * fwd_per_seq / (8 * 320e12 * rows[0].iteration_s);
	cr_expect_geq(rows[0].mfu, gemm_mfu * 0.999, "mfu %g, GEMMs alone %g", rows[0].mfu, gemm_mfu);
	cr_expect_leq(rows[0].mfu, gemm_mfu * 1.05, "mfu %g, GEMMs alone %g", rows[0].mfu, gemm_mfu);
	cr_expect_float_eq(rows[0].tokens_per_s, 8 * 1024 / rows[0].iteration_s, 1e-6);
	cr_expect_float_eq(rows[0].iterations, 1000, 1e-9);
}

/* Rows made by hand: (effective time to train, cost); fit decides on the
 * effective time.
 *   0: 1, 10   1: 2, 5   2: 3, 6 (beaten by 1)   3: 4, 1
 *   4: 2, 5 (equal to 1: the first kept)   5: 0.5, 0.5 but OOM
 *   6: 5, 0.5 but over the 4.5-day... deadline of 4.5 s here */
Test(studies, pareto_and_choices_by_hand)
{
	struct study *st = load("tests/data/studies/tiny.json");
	st->goal.days = 4.5 / 86400;
	double tc[][2] = {{1, 10}, {2, 5}, {3, 6}, {4, 1}, {2, 5}, {0.5, 0.5}, {5, 0.5}};
	int64_t devices[] = {32, 16, 16, 8, 16, 4, 4};
	double energy[] = {7, 6, 5, 9, 6, 1, 1};
	struct study_row rows[7];
	for (int i = 0; i < 7; i++)
		rows[i] = (struct study_row){.ok = true, .oom = i == 5, .devices = devices[i],
		                             .effective_time_s = tc[i][0], .cost = tc[i][1],
		                             .energy_kwh = energy[i]};
	int front[7];
	int n = study_pareto(st, rows, 7, front);
	cr_assert_eq(n, 3);
	cr_expect_eq(front[0], 0);
	cr_expect_eq(front[1], 1);
	cr_expect_eq(front[2], 3);
	cr_expect_eq(study_best(st, rows, 7, -1, 0), 0);  /* fastest */
	cr_expect_eq(study_best(st, rows, 7, -1, 1), 3);  /* cheapest */
	cr_expect_eq(study_best(st, rows, 7, -1, 2), 2);  /* least energy that meets */
	/* Smallest: 8 devices (row 3); rows 5 and 6 have 4 but do not meet. */
	cr_expect_eq(study_smallest(st, rows, 7, 0), 3);
	/* Without the deadline row 6 meets: 4 devices, and the cheapest. */
	st->goal.days = 0;
	cr_expect_eq(study_smallest(st, rows, 7, 0), 6);
	cr_expect_eq(study_best(st, rows, 7, -1, 1), 6);
	/* Top 2 per size by time among those that fit. */
	for (int i = 0; i < 7; i++)
		rows[i].servers = 1;
	int top[7];
	cr_expect_eq(study_top_per_size(rows, 7, 2, top), 2);
	cr_expect_eq(top[0], 0);
	cr_expect_eq(top[1], 1);
}

/* ----------------------------------------------------- the sweep, killed */

/* Column col of the first row `sql` gives over the database at db; -1
 * when it cannot be read. */
static int64_t query_int(const char *db, const char *sql, int col)
{
	sqlite3 *h;
	int64_t n = -1;
	if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK) {
		sqlite3_stmt *q;
		sqlite3_busy_timeout(h, 2000);
		if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) == SQLITE_OK) {
			if (sqlite3_step(q) == SQLITE_ROW)
				n = sqlite3_column_int64(q, col);
			sqlite3_finalize(q);
		}
	}
	sqlite3_close(h);
	return n;
}

static int64_t count_rows(const char *db)
{
	return query_int(db, "SELECT count(*) FROM points", 0);
}

/* `shardlab ARGS`, a sweep into an empty database: every one of `points`
 * computed. */
static void sweep_all(const char *args, int64_t points)
{
	char want[64];
	snprintf(want, sizeof want, "(%lld computed, 0 already stored)", (long long)points);
	struct cli_run r = fixture_shardlab(args, false);
	cr_expect_eq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, want) != NULL, "%s", r.out);
	free(r.out);
}

/* Every column of every row but the ones that vary by run (none should):
 * the whole table as text, in key order. */
static char *dump_rows(const char *db)
{
	sqlite3 *h;
	cr_assert_eq(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	sqlite3_stmt *q;
	cr_assert_eq(sqlite3_prepare_v2(h,
	                                "SELECT * FROM points ORDER BY cluster, servers, global_batch,"
	                                " tp, pp, micro_batch, schedule, virtual_stages, recompute,"
	                                " zero_stage",
	                                -1, &q, NULL),
	             SQLITE_OK);
	size_t cap = 1 << 20, len = 0;
	char *out = malloc(cap);
	out[0] = '\0';
	while (sqlite3_step(q) == SQLITE_ROW) {
		for (int c = 0; c < sqlite3_column_count(q); c++) {
			const unsigned char *t = sqlite3_column_text(q, c);
			size_t need = (t ? strlen((const char *)t) : 4) + 2;
			if (len + need + 1 > cap)
				out = realloc(out, cap *= 2);
			len += (size_t)sprintf(out + len, "%s%c", t ? (const char *)t : "NULL",
			                       c + 1 < sqlite3_column_count(q) ? '|' : '\n');
		}
	}
	sqlite3_finalize(q);
	sqlite3_close(h);
	return out;
}

static unsigned char *slurp_bytes(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s was not written", path);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	fseek(f, 0, SEEK_SET);
	unsigned char *b = malloc((size_t)len + 1);
	cr_assert_not_null(b);
	*n = fread(b, 1, (size_t)len, f);
	b[*n] = '\0'; /* text files are read as strings */
	fclose(f);
	return b;
}

static void remove_db(const char *db)
{
	char p[700];
	remove(db);
	snprintf(p, sizeof p, "%s-wal", db);
	remove(p);
	snprintf(p, sizeof p, "%s-shm", db);
	remove(p);
}

Test(studies, sweep_killed_then_resumed_gives_the_same_rows, .timeout = 300)
{
	const char *exe = getenv("SHARDLAB");
	cr_assert_not_null(exe);
	char dir[] = "/tmp/shardlab-sweep-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db1[600], db2[600];
	snprintf(db1, sizeof db1, "%s/killed.db", dir);
	snprintf(db2, sizeof db2, "%s/whole.db", dir);
	/* The study's size as the enumeration counts it (the enumeration is
	 * counted by hand on the tiny study above); what this test checks is
	 * that kept + computed make it up and that nothing is lost or redone. */
	const int64_t total = 3420;

	char *argv[] = {(char *)exe, "sweep", "tests/data/studies/resume.json", "--db", db1, NULL};
	pid_t pid;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", 1, 0);
	cr_assert_eq(posix_spawn(&pid, exe, &fa, NULL, argv, environ), 0);
	posix_spawn_file_actions_destroy(&fa);
	/* Kill it as soon as some rows are stored. */
	int64_t seen = 0;
	for (int i = 0; i < 60000 && seen <= 0; i++) {
		struct timespec ts = {0, 2000000};
		nanosleep(&ts, NULL);
		seen = count_rows(db1);
	}
	kill(pid, SIGKILL);
	int status;
	waitpid(pid, &status, 0);
	cr_assert(WIFSIGNALED(status), "the sweep ended before it could be killed");
	int64_t kept = count_rows(db1);
	cr_assert_gt(kept, 0);
	cr_assert_lt(kept, total, "the sweep was killed after it finished");

	/* Run again: the stored rows are kept, the rest computed. */
	char args[1400], want[256];
	snprintf(args, sizeof args, "sweep tests/data/studies/resume.json --db %s", db1);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	snprintf(want, sizeof want, "sweep resume: %lld points (%lld computed, %lld already stored)",
	         (long long)total, (long long)(total - kept), (long long)kept);
	cr_expect(strstr(r.out, want) != NULL, "got: %s\nwant: %s", r.out, want);
	free(r.out);
	/* A third run computes nothing. */
	r = fixture_shardlab(args, false);
	snprintf(want, sizeof want, "(0 computed, %lld already stored)", (long long)total);
	cr_expect(strstr(r.out, want) != NULL, "got: %s", r.out);
	free(r.out);

	snprintf(args, sizeof args, "sweep tests/data/studies/resume.json --db %s", db2);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	free(r.out);
	char *a = dump_rows(db1), *b = dump_rows(db2);
	cr_expect_eq(count_rows(db2), total);
	cr_expect(strcmp(a, b) == 0, "the resumed sweep's rows differ from an uninterrupted run's");
	free(a);
	free(b);

#ifdef SHARDLAB_TEST_MPIRUN
	/* The same sweep over 3 MPI ranks: the same rows. */
	char db3[600];
	snprintf(db3, sizeof db3, "%s/mpi.db", dir);
	/* OpenMPI's own allocations outlive MPI_Finalize: under
	 * AddressSanitizer the ranks do not report them as leaks. */
	snprintf(args, sizeof args,
	         "ASAN_OPTIONS=detect_leaks=0:halt_on_error=1 %s --allow-run-as-root --oversubscribe "
	         "-x ASAN_OPTIONS -n 3 %s sweep tests/data/studies/resume.json --db %s >%s/mpi.out 2>&1",
	         SHARDLAB_TEST_MPIRUN, exe, db3, dir);
	int rc = system(args);
	cr_assert_eq(rc, 0, "mpirun failed (%d); see %s/mpi.out", rc, dir);
	a = dump_rows(db2);
	b = dump_rows(db3);
	cr_expect(strcmp(a, b) == 0, "the MPI sweep's rows differ from the serial run's");
	free(a);
	free(b);
	remove_db(db3);
	snprintf(args, sizeof args, "%s/mpi.out", dir);
	remove(args);
#endif
	remove_db(db1);
	remove_db(db2);
	rmdir(dir);
}

/* A study whose goal, prices, power, currency and goodput change is
 * priced again from its stored points: nothing planned again, no --force;
 * fit and the database agree on the new figures. */
Test(studies, what_ifs_reprice_without_replanning)
{
	char dir[] = "/tmp/shardlab-study-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[600], args[1400];
	snprintf(db, sizeof db, "%s/w.db", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/tiny.json --db %s", db);
	sweep_all(args, 684);
	snprintf(args, sizeof args, "sweep tests/data/studies/tiny-repriced.json --db %s", db);
	struct cli_run r = fixture_shardlab(args, false);
	cr_expect_eq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "(0 computed, 684 already stored)") != NULL, "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "fit tests/data/studies/tiny-repriced.json --db %s --json", db);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "%s", r.out);
	cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(j, "currency")->valuestring, "EUR");
	cJSON *fast = cJSON_GetObjectItemCaseSensitive(j, "fastest");
	double it = cJSON_GetObjectItemCaseSensitive(fast, "iteration_s")->valuedouble;
	double t = cJSON_GetObjectItemCaseSensitive(fast, "time_to_train_s")->valuedouble;
	double eff = cJSON_GetObjectItemCaseSensitive(fast, "effective_time_s")->valuedouble;
	double cost = cJSON_GetObjectItemCaseSensitive(fast, "cost")->valuedouble;
	/* 2,000 iterations now; 8 devices at 0.001 failures per device-hour:
	 * M = 450,000 s; no checkpoint bytes to speak of beside the relaunch */
	cr_expect_float_eq(t, 2000 * it, 1e-9 * t);
	cr_expect_float_eq(cost, 8 * eff / 3600 * 3.0, 1e-9 * cost);
	cr_expect(eff > t, "effective %g, ideal %g", eff, t);
	cJSON_Delete(j);
	free(r.out);
	/* the database holds the new figures */
	char sql[256];
	snprintf(sql, sizeof sql, "SELECT count(*) FROM points WHERE ok = 1 AND abs(cost - "
	                          "devices * effective_time_s / 3600 * 3.0) > 1e-6 * cost");
	cr_expect_eq(query_int(db, sql, 0), 0);
	cr_expect_eq(query_int(db, "SELECT count(*) FROM points WHERE ok = 1 AND "
	                           "abs(time_to_train_s - 2000 * iteration_s) > 1e-9", 0), 0);
	remove_db(db);
	rmdir(dir);
}

/* fit's chosen point as a scenario and as launch files: the scenario
 * estimates as the study's row did; its plan exported to MindSpore's
 * strategy file and read back (every op configured, propagation) gives the
 * same estimate, to the last bit, pipeline stages included; Megatron-LM's
 * arguments carry the pipeline. The 4-layer GPT at TP 2 x PP 2 x 2 virtual
 * stages on 8 NPUs: DP 2, 8 / (1 x 2) = 4 micro-batches, 1 layer a chunk. */
Test(studies, fit_emits_a_runnable_point)
{
	char dir[] = "/tmp/shardlab-emit-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[600], args[4096], sc[600], mg[600], ms[600], copy[600];
	snprintf(db, sizeof db, "%s/p.db", dir);
	snprintf(sc, sizeof sc, "%s/point.json", dir);
	snprintf(mg, sizeof mg, "%s/megatron.sh", dir);
	snprintf(ms, sizeof ms, "%s/strategy.json", dir);
	snprintf(copy, sizeof copy, "%s/reimported.json", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/pipelined.json --db %s", db);
	sweep_all(args, 1);
	snprintf(args, sizeof args, "fit tests/data/studies/pipelined.json --db %s --json "
	         "--emit-scenario %s --emit-megatron %s --emit-mindspore %s", db, sc, mg, ms);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "%s", r.out);
	double row_s = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "fastest"),
	                                               "iteration_s")->valuedouble;
	cJSON_Delete(j);
	free(r.out);
	/* the scenario as the row */
	struct scenario *s1 = fixture_scenario(sc);
	cr_expect_eq(s1->devices, 8);
	cr_expect_eq(s1->training.pipeline_stages, 2);
	cr_expect_eq(s1->training.virtual_stages, 2);
	cr_expect_eq(s1->training.micro_batches, 4);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p1 = plan_make(A, s1, PLANNER_MEGATRON, &o, &D);
	cr_assert_not_null(p1);
	struct estimate e1, e2;
	cr_assert(plan_estimate(A, p1, &e1, &D));
	cr_expect_eq(e1.iteration_s, row_s, "scenario %.17g, row %.17g", e1.iteration_s, row_s);
	/* the strategy file read back */
	size_t n;
	char *text = (char *)slurp_bytes(sc, &n);
	cJSON *sj = cJSON_Parse(text);
	free(text);
	cr_assert_not_null(sj);
	cJSON_AddStringToObject(sj, "mindspore_strategy", "strategy.json");
	cJSON_ReplaceItemInObjectCaseSensitive(sj, "planners", cJSON_CreateStringArray(
	                                       (const char *[]){"propagate"}, 1));
	char *out = cJSON_Print(sj);
	cJSON_Delete(sj);
	FILE *f = fopen(copy, "wb");
	cr_assert_not_null(f);
	fputs(out, f);
	fclose(f);
	free(out);
	struct scenario *s2 = fixture_scenario(copy);
	cr_expect_eq(s2->n_shards, s2->graph->n_ops, "every op comes configured from the file");
	struct plan *p2 = plan_make(A, s2, PLANNER_PROPAGATE, &o, &D);
	cr_assert_not_null(p2);
	cr_assert(plan_estimate(A, p2, &e2, &D));
	cr_expect_eq(e1.iteration_s, e2.iteration_s);
	cr_expect_eq(e1.memory_bytes_per_device, e2.memory_bytes_per_device);
	cr_expect_eq(e1.bubble_s, e2.bubble_s);
	/* Megatron-LM's arguments */
	char *m = (char *)slurp_bytes(mg, &n);
	cr_expect(strstr(m, "--tensor-model-parallel-size 2 \\\n") != NULL, "%s", m);
	cr_expect(strstr(m, "--pipeline-model-parallel-size 2 \\\n") != NULL, "%s", m);
	cr_expect(strstr(m, "--num-layers-per-virtual-pipeline-stage 1 \\\n") != NULL, "%s", m);
	cr_expect(strstr(m, "--recompute-granularity selective \\\n") != NULL, "%s", m);
	cr_expect(strstr(m, "--micro-batch-size 1 \\\n") != NULL, "%s", m);
	free(m);
	/* an unknown pick */
	snprintf(args, sizeof args, "fit tests/data/studies/pipelined.json --db %s --pick quickest "
	         "--emit-scenario %s", db, sc);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 2);
	cr_expect(strstr(r.out, "--pick: expected fastest, cheapest, least-energy, smallest or a "
	                        "cluster family") != NULL, "%s", r.out);
	free(r.out);
	remove(sc);
	remove(mg);
	remove(ms);
	remove(copy);
	remove_db(db);
	rmdir(dir);
}

Test(studies, other_inputs_refused_then_forced, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-study-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[600], study[600], args[1400];
	snprintf(db, sizeof db, "%s/t.db", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/tiny.json --db %s", db);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0);
	free(r.out);
	/* The same study on another topology file: other inputs. */
	snprintf(study, sizeof study, "tests/data/studies/tiny-changed.json");
	snprintf(args, sizeof args, "sweep %s --db %s", study, db);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.out, "holds the sweep of other inputs") != NULL, "%s", r.out);
	cr_expect(strstr(r.out, "--force") != NULL, "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "fit %s --db %s", study, db);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.out, "was swept for other inputs") != NULL, "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "sweep %s --db %s --force", study, db);
	sweep_all(args, 684);
	remove_db(db);
	rmdir(dir);
}

/* A study's inputs hash covers the figures a topology takes from its base
 * file, the collective library's among them: the same cluster file over a
 * base whose server gains NVLS (or changes its LL caps) hashes otherwise,
 * so a sweep of the old figures is refused, not reused. */
static uint64_t hash_with_base(const char *dir, const char *collectives)
{
	char path[700], cwd[PATH_MAX], scenario[PATH_MAX + 40];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(scenario, sizeof scenario, "%s/scenarios/gpt-4layer-32p.json", cwd);
	snprintf(path, sizeof path, "%s/base.json", dir);
	fixture_write(path,
	              "{\"format\": \"shardlab-topology\", \"version\": 1, \"name\": \"b\", "
	              "\"source\": \"tests\", \"device\": {\"kind\": \"GPU\", \"peak_tflops\": "
	              "{\"fp16\": 100, \"bf16\": 100}, \"hbm_GB\": 40, \"hbm_bandwidth_GBps\": 1000}, "
	              "\"server\": {\"devices\": 8, \"tiers\": [{\"name\": \"nvswitch\", \"kind\": "
	              "\"switch\", \"bandwidth_GBps\": 300, \"latency_us\": 1}], \"nic\": "
	              "{\"per_server\": 8, \"rate_Gbps\": 200, \"latency_us\": 0.6}, "
	              "\"collectives\": %s}}\n",
	              collectives);
	snprintf(path, sizeof path, "%s/cluster.json", dir);
	fixture_write(path,
	              "{\"format\": \"shardlab-topology\", \"version\": 1, \"name\": \"c\", "
	              "\"source\": \"tests\", \"base\": \"base.json\", \"cluster\": {\"servers\": 4, "
	              "\"fabric\": {\"kind\": \"fat-tree\", \"nics_per_leaf\": 32, "
	              "\"oversubscription\": 1, \"switch_latency_us\": 0.5}}}\n");
	snprintf(path, sizeof path, "%s/study.json", dir);
	fixture_write(path,
	              "{\"format\": \"shardlab-study\", \"version\": 1, \"name\": \"h\", "
	              "\"scenario\": \"%s\", \"clusters\": [{\"name\": \"g\", \"topology\": "
	              "\"cluster.json\", \"servers\": [1], \"price_per_device_hour\": 2.0, "
	              "\"power_w\": {\"idle\": 50, \"busy\": 300}}], \"global_batch\": 8, "
	              "\"goal\": {\"iterations\": 1000}}\n",
	              scenario);
	return load(path)->inputs_hash;
}

Test(studies, inputs_hash_covers_the_base_files_collectives)
{
	char dir[] = "/tmp/shardlab-hash-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	uint64_t plain = hash_with_base(dir, "{\"library\": \"nccl\"}");
	uint64_t again = hash_with_base(dir, "{\"library\": \"nccl\"}");
	uint64_t nvls = hash_with_base(dir, "{\"library\": \"nccl\", \"nvls\": true}");
	uint64_t caps = hash_with_base(
	        dir, "{\"library\": \"nccl\", \"ll_max_busbw_GBps\": [87.7, 22.5, 19.0]}");
	cr_expect_eq(plain, again);
	cr_expect_neq(plain, nvls);
	cr_expect_neq(plain, caps);
	const char *names[] = {"base.json", "cluster.json", "study.json"};
	for (size_t i = 0; i < SL_COUNTOF(names); i++) {
		char path[700];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		remove(path);
	}
	rmdir(dir);
}

/* The inputs' hash is over the files' text, not over the paths they were
 * named by: the same study loaded from the repository's root, by its
 * absolute path and from another working directory hashes the same (a
 * sweep made in one directory is answered by fit in another). */
Test(studies, inputs_hash_is_the_same_from_any_directory)
{
	const char *rel = "scenarios/studies/teaching-gpt-4layer.json";
	char cwd[PATH_MAX], abs[PATH_MAX + 64];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(abs, sizeof abs, "%s/%s", cwd, rel);
	uint64_t here = load(rel)->inputs_hash;
	uint64_t absolute = load(abs)->inputs_hash;
	cr_assert_eq(chdir("scenarios"), 0);
	uint64_t below = load("studies/teaching-gpt-4layer.json")->inputs_hash;
	cr_assert_eq(chdir(".."), 0);
	cr_expect_eq(here, absolute);
	cr_expect_eq(here, below);
}

/* fit on the tiny study: 1000 iterations, no deadline, one family. The
 * fastest point's time to train is 1000 x its iteration time, its cost
 * 8 devices x that / 3600 x 2.0; JSON and CSV say the same. */
/* Sweeps study into db (dir/t.db, dir made from its template) and
 * answers it with fit --json: the run and its parsed JSON in *j. */
static struct cli_run sweep_then_fit(const char *study, char *dir, char db[600], cJSON **j)
{
	cr_assert_not_null(mkdtemp(dir));
	char args[1400];
	snprintf(db, 600, "%s/t.db", dir);
	snprintf(args, sizeof args, "sweep %s --db %s", study, db);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "fit %s --db %s --json", study, db);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0);
	*j = cJSON_Parse(r.out);
	cr_assert_not_null(*j, "%s", r.out);
	return r;
}

Test(studies, fit_reports_the_fastest_point, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-fit-XXXXXX";
	char db[600], args[1400];
	cJSON *j;
	struct cli_run r = sweep_then_fit("tests/data/studies/tiny.json", dir, db, &j);
	cJSON *fast = cJSON_GetObjectItemCaseSensitive(j, "fastest");
	double it = cJSON_GetObjectItemCaseSensitive(fast, "iteration_s")->valuedouble;
	double t = cJSON_GetObjectItemCaseSensitive(fast, "time_to_train_s")->valuedouble;
	double cost = cJSON_GetObjectItemCaseSensitive(fast, "cost")->valuedouble;
	double eff = cJSON_GetObjectItemCaseSensitive(fast, "effective_time_s")->valuedouble;
	double gp = cJSON_GetObjectItemCaseSensitive(fast, "goodput")->valuedouble;
	cr_expect_float_eq(t, 1000 * it, 1e-9 * t);
	cr_expect_float_eq(gp, t / eff, 1e-9);
	cr_expect(gp > 0.5 && gp < 1, "goodput %g", gp);
	cr_expect_float_eq(cost, 8 * eff / 3600 * 2.0, 1e-9 * cost);
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(j, "points")->valueint, 684);
	/* The Pareto front: time ascending, cost strictly descending. */
	cJSON *pa = cJSON_GetObjectItemCaseSensitive(j, "pareto");
	cr_assert_gt(cJSON_GetArraySize(pa), 0);
	double pt = -1, pc = INFINITY;
	cJSON *e;
	cJSON_ArrayForEach(e, pa)
	{
		double et = cJSON_GetObjectItemCaseSensitive(e, "time_to_train_s")->valuedouble;
		double ec = cJSON_GetObjectItemCaseSensitive(e, "cost")->valuedouble;
		cr_expect_geq(et, pt);
		cr_expect_lt(ec, pc);
		pt = et;
		pc = ec;
	}
	/* One family, all on one server of 8: the fastest is also the
	 * cheapest (same devices, cost proportional to time): a front of one. */
	cr_expect_eq(cJSON_GetArraySize(pa), 1);
	cJSON_Delete(j);
	free(r.out);
	snprintf(args, sizeof args, "fit tests/data/studies/tiny.json --db %s --csv", db);
	r = fixture_shardlab(args, false);
	cr_expect(strncmp(r.out, "role,cluster,device_kind,servers,devices,global_batch,config,", 61) == 0,
	          "%s", r.out);
	cr_expect(strstr(r.out, "\nfastest,910a,\"Ascend 910\",1,8,8,") != NULL, "%s", r.out);
	free(r.out);
	remove_db(db);
	rmdir(dir);
}

/* The optimizer offload's host memory marks a point out of memory like
 * the device's (issue 44). offload-host sweeps one scenario, optimizer
 * offloaded, on two one-server B200 clusters alike but for the host's
 * memory, so each has the same points. Every configuration puts each
 * weight's state (bf16: 4 B fp32 master + 8 B Adam moments = 12 B) on the
 * host at least once: the word embedding alone, 1,024 x 256 weights, is
 * 3.1 MB, over the small host's 1 MB, so all its points are refused. The
 * whole model is under 2 M weights (2 layers x 12 x 256^2 + the
 * embeddings' (1,024 + 128) x 256), 8 replicas of its state under 0.2 GB:
 * every point of the 2 TB host fits it, and the device (3 of 180 GB). */
Test(studies, offload_over_the_host_memory_is_out_of_memory, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-host-XXXXXX";
	char db[600], args[1400];
	cJSON *j;
	struct cli_run r = sweep_then_fit("tests/data/studies/offload-host.json", dir, db, &j);
	int points = cJSON_GetObjectItemCaseSensitive(j, "points")->valueint;
	cr_expect_gt(points, 0);
	cr_expect_eq(points % 2, 0);
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(j, "host_oom")->valueint, points / 2);
	cr_expect_eq(cJSON_GetObjectItemCaseSensitive(j, "meet_goal")->valueint, points / 2);
	cJSON *sm = cJSON_GetObjectItemCaseSensitive(j, "smallest");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(sm, "small-host")), "%s", r.out);
	cJSON *big = cJSON_GetObjectItemCaseSensitive(sm, "b200");
	cr_expect(cJSON_IsObject(big), "%s", r.out);
	cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(
	                 cJSON_GetObjectItemCaseSensitive(j, "fastest"), "cluster")->valuestring,
	                 "b200");
	cJSON_Delete(j);
	free(r.out);
	/* the text says why the others are left */
	snprintf(args, sizeof args, "fit tests/data/studies/offload-host.json --db %s", db);
	r = fixture_shardlab(args, false);
	char want[200];
	snprintf(want, sizeof want, "%d over the host's memory (the optimizer offload: "
	         "server.host.memory_GB)", points / 2);
	cr_expect(strstr(r.out, want), "%s", r.out);
	free(r.out);
	remove_db(db);
	rmdir(dir);
}

/* ------------------------------------------------ what-if overrides */

static double json_number(const char *text, const char *key)
{
	cJSON *j = cJSON_Parse(text);
	cr_assert_not_null(j, "%s", text);
	cJSON *v = cJSON_GetObjectItemCaseSensitive(j, key);
	cr_assert(cJSON_IsNumber(v), "no number \"%s\" in %s", key, text);
	double x = v->valuedouble;
	cJSON_Delete(j);
	return x;
}

/* gpt-4layer-32p: 32 NPUs on 4 Atlas 800 servers, a graph of 32 samples,
 * global batch 32. --devices 64 grows it to 8 servers; --global-batch 96
 * makes 96 / 32 = 3 graph executions per iteration; --topology takes
 * another cluster, all of it. */
Test(studies, overrides_on_estimate, .timeout = 120)
{
	struct cli_run r = fixture_shardlab(
		"estimate scenarios/gpt-4layer-32p.json --planner megatron --ops 0 --json --devices 64",
		false);
	cr_assert_eq(r.status, 0);
	cr_expect_eq(json_number(r.out, "devices"), 64);
	free(r.out);
	r = fixture_shardlab("estimate scenarios/gpt-4layer-32p.json --planner megatron --ops 0 "
	                     "--json --global-batch 96",
	                     false);
	cr_assert_eq(r.status, 0);
	cr_expect_eq(json_number(r.out, "steps_per_iteration"), 3);
	cr_expect_eq(json_number(r.out, "devices"), 32);
	free(r.out);
	r = fixture_shardlab("plan scenarios/gpt-4layer-32p.json --planner megatron --json "
	                     "--topology topologies/dgx-a100.json",
	                     false);
	cr_assert_eq(r.status, 0);
	cr_expect_eq(json_number(r.out, "devices"), 8);
	cr_expect(strstr(r.out, "\"topology\":\t\"dgx-a100\"") != NULL, "%s", r.out);
	free(r.out);
	/* Bad values: exit 1 with a message naming the option. */
	r = fixture_shardlab("estimate scenarios/gpt-4layer-32p.json --devices 60", true);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.out, "--devices: the topology atlas800-910a-x4 has 32 devices, 60 asked "
	                        "for; to grow it by whole servers ask for a multiple of its 8") != NULL,
	          "%s", r.out);
	free(r.out);
	r = fixture_shardlab("simulate scenarios/gpt-4layer-32p.json --global-batch 48", true);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.out, "--global-batch: a global batch of 48 is not a multiple of the "
	                        "model's batch of 32") != NULL, "%s", r.out);
	free(r.out);
	r = fixture_shardlab("compare scenarios/ffn-8p.json --devices 0", true);
	cr_expect_eq(r.status, 2);
	free(r.out);
}

/* ------------------------------------------------------------- plot */


/* A PNG of 1500 x 1160 pixels (the IHDR chunk's big-endian width and
 * height at bytes 16 and 20), an SVG with the panels' axis labels, the
 * same bytes twice; a file name of no known kind refused; the database
 * tells the plot the study's name, currency and goal. */
Test(studies, plot_writes_png_and_svg, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-plot-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[600], args[1400], png[600], svg[600], svg2[600];
	snprintf(db, sizeof db, "%s/t.db", dir);
	snprintf(png, sizeof png, "%s/t.png", dir);
	snprintf(svg, sizeof svg, "%s/t.svg", dir);
	snprintf(svg2, sizeof svg2, "%s/t2.svg", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/tiny.json --db %s", db);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0);
	free(r.out);
	snprintf(args, sizeof args, "plot %s --out %s", db, png);
	r = fixture_shardlab(args, true);
	cr_assert_eq(r.status, 0, "%s", r.out);
	free(r.out);
	size_t n;
	unsigned char *b = slurp_bytes(png, &n);
	cr_assert_gt(n, 24);
	cr_expect(memcmp(b, "\x89PNG\r\n\x1a\n", 8) == 0);
	unsigned w = (unsigned)b[16] << 24 | (unsigned)b[17] << 16 | (unsigned)b[18] << 8 | b[19];
	unsigned h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
	cr_expect_eq(w, 1500);
	cr_expect_eq(h, 1160);
	free(b);
	struct study_store *st;
	cr_assert(study_store_open_ro(db, &st, NULL, args, sizeof args), "%s", args);
	struct study_plot_info info;
	cr_assert(study_store_info(st, A, &info));
	cr_expect_str_eq(info.title, "tiny");
	cr_expect_str_eq(info.currency, "USD");
	cr_expect_float_eq(info.deadline_s, 0, 1e-12);
	cr_expect_float_eq(info.budget, 0, 1e-12);
	study_store_close(st);
	snprintf(args, sizeof args, "plot %s --out %s --title tiny", db, svg);
	r = fixture_shardlab(args, true);
	cr_assert_eq(r.status, 0, "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "plot %s --out %s --title tiny", db, svg2);
	r = fixture_shardlab(args, true);
	free(r.out);
	size_t n2;
	b = slurp_bytes(svg, &n);
	unsigned char *b2 = slurp_bytes(svg2, &n2);
	cr_expect(n == n2 && memcmp(b, b2, n) == 0, "two plots of the same rows differ");
	cr_expect(memcmp(b, "<?xml", 5) == 0);
	free(b);
	free(b2);
	snprintf(args, sizeof args, "plot %s --out %s/t.jpg", db, dir);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.out, "must end in .svg, .png or .pdf") != NULL, "%s", r.out);
	free(r.out);
	remove(png);
	remove(svg);
	remove(svg2);
	remove_db(db);
	rmdir(dir);
}

/* Listed configurations on 8 devices, global batch 8: TP 8 gives DP 1 and
 * 8 / (1 x 1) = 8 micro-batches; TP 2 x PP 2 gives DP 2 and 8 / (2 x 2) = 2
 * micro-batches of 2 samples; TP 3 divides no server of 8 and is no point;
 * the same TP 2 x PP 2 with GPipe, and PP 8 over the 4 layers, Megatron-LM
 * refuses. */
Test(studies, listed_configurations)
{
	struct study *st = load("tests/data/studies/list.json");
	int n_units;
	int64_t n_points;
	struct study_unit *u = study_units(A, st, &n_units, &n_points);
	cr_assert_eq(n_units, 2);
	cr_expect_eq(n_points, 2);
	cr_expect_eq(u[0].configs[0].tp, 8);
	cr_expect_eq(u[0].configs[0].dp, 1);
	cr_expect_eq(u[0].configs[0].micro_batches, 8);
	cr_expect_eq(u[1].configs[0].dp, 2);
	cr_expect_eq(u[1].configs[0].micro_batches, 2);
	cr_expect_eq(u[1].configs[0].schedule, SCHED_1F1B);
	cr_expect_eq(u[1].configs[0].recompute, RECOMPUTE_FULL);
	struct study_size sz;
	cr_assert(study_count(st, &sz));
	for (int k = 0; k < SEARCH_RULE_COUNT; k++)
		cr_expect_eq(sz.refused[k], k == SEARCH_RULE_SCHEDULE || k == SEARCH_RULE_LAYERS_PP, "%s",
		             search_rule_names[k]);
	struct study_row r;
	cr_assert(study_eval_unit(A, st, &u[1], NULL, &r));
	cr_expect(r.ok, "%s", r.error ? r.error : "");
	cr_expect_float_eq(r.time_to_train_s, 10 * r.iteration_s, 1e-12);
	/* The pipeline's bubble is part of the iteration, 1F1B over 2 stages. */
	cr_expect_gt(r.bubble_s, 0);
}

/* A parallel degree of a configuration. */
static int64_t ep_of(const struct search_config *c)
{
	return c->ep;
}

static int64_t cp_of(const struct search_config *c)
{
	return c->cp;
}

/* A study counted by hand: `units` units of `points` points, `over` of
 * them with degree > 1. Swept into a fresh database, db in the temporary
 * directory dir (both left for the caller; args the sweep's command), it
 * stores every point, `column` > 1 in `over` of them. */
static void counted_study(const char *path, int units, int64_t points,
                          int64_t (*degree)(const struct search_config *), int64_t over,
                          const char *column, char dir[], char db[600], char args[1400])
{
	struct study *st = load(path);
	int n_units;
	int64_t n_points, n_over = 0;
	struct study_unit *u = study_units(A, st, &n_units, &n_points);
	cr_assert_not_null(u);
	cr_expect_eq(n_units, units);
	cr_expect_eq(n_points, points);
	for (int i = 0; i < n_units; i++)
		for (int k = 0; k < u[i].n_configs; k++)
			n_over += degree(&u[i].configs[k]) > 1;
	cr_expect_eq(n_over, over);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, 600, "%s/s.db", dir);
	snprintf(args, 1400, "sweep %s --db %s", path, db);
	sweep_all(args, points);
	cr_expect_eq(count_rows(db), points);
	char sql[128];
	snprintf(sql, sizeof sql, "SELECT sum(%s > 1) FROM points", column);
	cr_expect_eq(query_int(db, sql, 0), over, "%s", column);
}

/* tests/data/studies/moe.json: a 2-layer mixture of 4 experts on 8 NPUs,
 * global batch 8. As above with PP <= 2 layers, and each unit once per EP
 * dividing DP and 4, and with SP once per EP above DP that folds over TP
 * (a multiple of TP dividing DP x TP) and divides 4 (interleaving needs
 * 2 PP <= 2 layers: never; GPipe refused; TP 8 refused, the model's 4
 * heads do not divide by it; EP 8 refused, it does not divide 4):
 *   TP1 PP1 DP8: b1       x EP 1 2 4                           3 units x 12 =  36
 *   TP1 PP2 DP4: b1 b2    x EP 1 2 4                           6        x 12 =  72
 *   TP2 PP1 DP4: b1 b2    x SP x EP 1 2 4                     12        x 12 = 144
 *   TP2 PP2 DP2: b1 b2 b4 x (EP 1 2; with SP EP 1 2 4)        15        x 12 = 180
 *   TP4 PP1 DP2: b1 b2 b4 x (EP 1 2; with SP EP 1 2 4)        15        x 12 = 180
 *   TP4 PP2 DP1: b1..b8   x (EP 1; with SP EP 1 4)            12        x 12 = 144
 * 63 units, 756 points; EP > 1: 24 + 48 + 96 + 108 + 108 + 48 = 432 (120
 * of them folded: EP 4 over TP 2 x DP 2, TP 4 x DP 2 and TP 4 x DP 1). */
Test(studies, expert_parallelism_counted_by_hand, .timeout = 120)
{
	/* The sweep stores them as distinct points, EP in its own column. */
	char dir[] = "/tmp/shardlab-study-XXXXXX", db[600], args[1400];
	counted_study("tests/data/studies/moe.json", 63, 756, ep_of, 432, "expert_parallel", dir, db,
	              args);
	/* A database from before the column is refused, then rebuilt. */
	remove_db(db);
	sqlite3 *h;
	cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(h, "CREATE TABLE points(inputs_hash TEXT, cluster INTEGER);",
	                          NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	struct cli_run r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1);
	cr_expect(strstr(r.out, "was written by an earlier shardlab (schema before 2), whose "
	                        "points lack some of the expert_parallel, context_parallel, "
	                        "checksum, goodput, fault case and interval columns") != NULL, "%s",
	          r.out);
	free(r.out);
	snprintf(args, sizeof args, "sweep tests/data/studies/moe.json --db %s --force", db);
	sweep_all(args, 756);
	remove_db(db);
	rmdir(dir);
}

/* tests/data/studies/cp.json: a 2-layer LLaMA (s 16) on 8 NPUs, global
 * batch 8, its scenario letting the search try CP up to 2. Without CP as
 * moe.json less EP: 11 units without a pipeline x 12 + 16 with PP 2 x 12
 * = 324 (TP 8 refused: 4 heads). CP 2 takes one sequence a replica (b 1),
 * DP = 8 / (TP PP 2); 16 tokens are a multiple of 2 x CP and 8 a CP rank
 * divide by TP under SP:
 *   TP1 PP1 DP4 (1 unit), TP2 PP1 DP2 x SP (2), TP4 PP1 DP1 x SP (2):  5 x 12
 *   TP1 PP2 DP2 (1), TP2 PP2 DP1 x SP (2):                             3 x 12
 * 96 more: 420 points in 35 units. */
Test(studies, context_parallelism_counted_by_hand, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-study-XXXXXX", db[600], args[1400];
	counted_study("tests/data/studies/cp.json", 35, 420, cp_of, 96, "context_parallel", dir, db,
	              args);
	cr_expect_gt(query_int(db, "SELECT sum(context_parallel > 1 AND ok = 1) FROM points", 0), 0,
	             "some CP points are planned");
	remove_db(db);
	rmdir(dir);
}

/* ------------------------------------------------- issue 42: the store */

/* A byte of a stored row flipped in the file: fit refuses the database,
 * naming the row; a sweep run again computes that row anew (and only it)
 * with a warning, after which fit reads the database. */
Test(studies, flipped_byte_in_a_row_is_caught_by_fit_and_resume, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-flip-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[600], sweep[1400], fit[1400];
	snprintf(db, sizeof db, "%s/t.db", dir);
	snprintf(sweep, sizeof sweep, "sweep tests/data/studies/tiny.json --db %s", db);
	snprintf(fit, sizeof fit, "fit tests/data/studies/tiny.json --db %s", db);
	sweep_all(sweep, 684);
	/* The sweep closed the database: its WAL is folded into the file. One
	 * row's iteration time, as SQLite keeps a REAL (8 bytes, big-endian). */
	sqlite3 *h;
	cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
	sqlite3_stmt *q;
	cr_assert_eq(sqlite3_prepare_v2(h, "SELECT iteration_s FROM points WHERE ok = 1 AND rowid = "
	                                "(SELECT min(rowid) FROM points WHERE ok = 1)", -1, &q, NULL),
	             SQLITE_OK);
	cr_assert_eq(sqlite3_step(q), SQLITE_ROW);
	double x = sqlite3_column_double(q, 0);
	sqlite3_finalize(q);
	sqlite3_close(h);
	unsigned char want[8];
	uint64_t bits;
	memcpy(&bits, &x, 8);
	for (int i = 0; i < 8; i++)
		want[i] = (unsigned char)(bits >> (56 - 8 * i));
	FILE *f = fopen(db, "r+b");
	cr_assert_not_null(f);
	static unsigned char buf[1 << 22];
	size_t n = fread(buf, 1, sizeof buf, f);
	long at = -1;
	for (size_t i = 0; i + 8 <= n && at < 0; i++)
		if (!memcmp(buf + i, want, 8))
			at = (long)i;
	cr_assert_geq(at, 0, "the value is not in the file");
	buf[at + 7] ^= 1;  /* the last bit of the mantissa */
	cr_assert_eq(fseek(f, at + 7, SEEK_SET), 0);
	cr_assert_eq(fputc(buf[at + 7], f), buf[at + 7]);
	fclose(f);

	struct cli_run r = fixture_shardlab(fit, true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect(strstr(r.out, "fails its checksum: the database was changed or damaged") != NULL,
	          "%s", r.out);
	free(r.out);

	r = fixture_shardlab(sweep, true);
	cr_expect_eq(r.status, 0, "%s", r.out);
	char warn[800];
	snprintf(warn, sizeof warn, "shardlab sweep: warning: 1 stored row of %s failed the checksum "
	         "of its figures (changed or damaged since written) and is computed again\n", db);
	cr_expect_str_eq(r.out, warn);
	free(r.out);
	cr_expect_eq(count_rows(db), 684);
	r = fixture_shardlab(fit, false);
	cr_expect_eq(r.status, 0, "%s", r.out);
	free(r.out);
	remove_db(db);
	rmdir(dir);
}

/* A second writer while a sweep holds the database is refused (the test
 * holds the writer's lock as a running sweep does). */
Test(studies, second_writer_is_refused, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-busy-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[600], args[1400];
	snprintf(db, sizeof db, "%s/t.db", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/tiny.json --db %s", db);
	int fd = open(db, O_RDWR | O_CREAT, 0644);
	cr_assert_geq(fd, 0);
	cr_assert_eq(flock(fd, LOCK_EX), 0);
	struct cli_run r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	char want[800];
	snprintf(want, sizeof want, "shardlab sweep: %s is being written by another sweep: wait for "
	         "it to finish (then run this one again to resume), or sweep into another "
	         "database\n", db);
	cr_expect_str_eq(r.out, want);
	free(r.out);
	close(fd);
	sweep_all(args, 684);
	remove_db(db);
	rmdir(dir);
}

/* What SQLite cannot read is told in its own words, not as "not a sweep
 * database"; a database without the sweep's tables is told as such. */
Test(studies, storage_errors_in_sqlites_words)
{
	char dir[] = "/tmp/shardlab-junk-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char db[600], args[1400], want[1400];
	snprintf(db, sizeof db, "%s/junk.db", dir);
	FILE *f = fopen(db, "wb");
	cr_assert_not_null(f);
	for (int i = 0; i < 4096; i++)
		fputc((i * 131) & 0xff, f);
	fclose(f);
	snprintf(args, sizeof args, "fit tests/data/studies/tiny.json --db %s", db);
	struct cli_run r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1);
	snprintf(want, sizeof want, "shardlab fit: cannot read %s: file is not a database\n", db);
	cr_expect_str_eq(r.out, want);
	free(r.out);
	remove(db);
	sqlite3 *h;
	cr_assert_eq(sqlite3_open(db, &h), SQLITE_OK);
	cr_assert_eq(sqlite3_exec(h, "CREATE TABLE t(x);", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(h);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1);
	snprintf(want, sizeof want, "shardlab fit: %s is not a shardlab sweep database (it has no "
	         "meta table)\n", db);
	cr_expect_str_eq(r.out, want);
	free(r.out);
	remove_db(db);
	rmdir(dir);
}

/* ------------------------------------------------------- fault cases */

/* The rows of a study computed through the sweep's path (study_units,
 * study_eval_unit), every unit's points in order; *n of them. */
static struct study_row *eval_all(const struct study *st, int *n)
{
	int nu;
	int64_t np;
	struct study_unit *u = study_units(A, st, &nu, &np);
	cr_assert_not_null(u);
	struct study_row *rows = arena_calloc(A, (size_t)np, sizeof *rows);
	int k = 0;
	for (int i = 0; i < nu; i++) {
		cr_assert(study_eval_unit(A, st, &u[i], NULL, &rows[k]));
		k += u[i].n_configs;
	}
	*n = k;
	return rows;
}

/* tests/data/studies/faults.json: a one-layer GPT (hidden 256, FFN 1024,
 * vocabulary 512, sequence 128) data parallel on two-spines-x4's four
 * one-GPU servers (one 12.5 GB/s NIC each, two spines), its gradients in
 * one bucket. Parameters, by hand: word embedding 512 x 256 = 131,072;
 * positions 128 x 256 = 32,768; QKV 256 x 768 + 768 = 197,376; projection
 * 256 x 256 + 256 = 65,792; FFN 256 x 1024 + 1024 = 263,168 and 1024 x 256
 * + 256 = 262,400; two layer norms 2 x 512 and the final one 512: 954,112,
 * whose fp32 gradients are S = 3,816,448 bytes. The ring all-reduce over 4
 * ranks moves S/4 per step in 6 steps, each as slow as its slowest hop:
 * one NIC at half rate adds 6 x (S/4) x (1/6.25e9 - 1/12.5e9) = 6 x
 * 954,112 / 12.5e9 = 457.97376 us to the gradient sync; a second NIC at
 * half rate on another server adds nothing more (the same slowest hop);
 * a spine down leaves each route across the spines 6.25 GB/s (the
 * leaf's uplinks halved): the same again. A server twice as slow doubles
 * every compute category and leaves the communication as it was. */
Test(studies, fault_cases_priced_by_hand, .timeout = 120)
{
	struct study *st = load("tests/data/studies/faults.json");
	cr_assert_eq(st->n_faults, 5);
	struct study_size size;
	cr_assert(study_count(st, &size));
	cr_expect_eq(size.cells, 5, "a cell per fault case");
	cr_expect_eq(size.points, 5);
	int n;
	struct study_row *r = eval_all(st, &n);
	cr_assert_eq(n, 5);
	for (int k = 0; k < n; k++) {
		cr_assert(r[k].ok, "case %d: %s", k, r[k].error ? r[k].error : "");
		cr_expect_eq(r[k].fault, k, "the rows come case by case");
		cr_expect(isnan(r[k].iteration_rel_sd), "no calibration: no interval");
	}
	double dgrad = 6 * 954112 / 12.5e9;
	const double *g = NULL;
	double g0 = r[0].category_s[EST_GRADIENT_SYNC];
	for (int k = 1; k <= 3; k++) {
		g = r[k].category_s;
		cr_expect(fabs(g[EST_GRADIENT_SYNC] - g0 - dgrad) <= 1e-9 * dgrad,
		          "case %s: gradient sync %.9g s, want %.9g + %.9g", st->faults[k].name,
		          g[EST_GRADIENT_SYNC], g0, dgrad);
		/* the iteration grows by that, and a little more: a 64 KB backward
		 * collective's bandwidth term doubles too */
		double d = r[k].iteration_s - r[0].iteration_s;
		cr_expect(d >= dgrad && d <= 1.02 * dgrad, "case %s: iteration +%.9g s, want %.9g",
		          st->faults[k].name, d, dgrad);
	}
	g = r[4].category_s;
	for (int c = 0; c < EST_CATEGORY_COUNT; c++) {
		bool compute = c == EST_COMPUTE_FORWARD || c == EST_COMPUTE_BACKWARD ||
		               c == EST_OPTIMIZER;
		double want = r[0].category_s[c] * (compute ? 2 : 1);
		cr_expect(fabs(g[c] - want) <= 1e-9 * fmax(want, 1e-12),
		          "slow server, category %d: %.9g, want %.9g", c, g[c], want);
	}
	/* The simulation runs the point with its fault: the NIC at half rate
	 * slows the simulated iteration by about the hand figure. */
	cr_assert(study_simulate(A, st, &r[0]));
	cr_assert(study_simulate(A, st, &r[1]));
	cr_assert(r[0].simulated && r[1].simulated, "%s / %s", r[0].sim_error ? r[0].sim_error : "",
	          r[1].sim_error ? r[1].sim_error : "");
	double ds = r[1].sim_iteration_s - r[0].sim_iteration_s;
	cr_expect(fabs(ds - dgrad) <= 0.1 * dgrad, "simulated +%.9g s, want about %.9g", ds, dgrad);
	/* fit's reading: the point's scenario carries the case's faults */
	struct scenario *s = study_point_scenario(A, st, &r[1], &D);
	cr_assert_not_null(s);
	cr_expect_not_null(s->topo->faults);
	cr_expect(strstr(s->name, "1 NIC at 50%") != NULL, "%s", s->name);
}

/* tests/data/studies/placement.json: the one-layer GPT of faults.json
 * (S = 3,816,448 bytes of fp32 gradients, above) data parallel on two
 * one-GPU servers of two-spines-x4's four, placed as each case says
 * (scenarios/jobs.c's placement, as cosim's): packed, servers 0 and 1,
 * under one leaf; spread, servers 0 and 2, one from each leaf. The ring
 * all-reduce over 2 ranks moves S/2 twice. Packed, no route crosses a
 * spine, so a spine down changes nothing: the same simulated iteration.
 * Spread, the pair's route crosses the spines, and with spine 1 down it
 * gets the leaf's uplinks left, 6.25 GB/s instead of 12.5: 2 x (S/2) x
 * (1/6.25e9 - 1/12.5e9) = S / 12.5e9 = 305.3 us more (within 10%, as the
 * fault test above). The estimate sees the job packed (ranks on the
 * cluster's first servers) whatever the policy: every case alike. */
Test(studies, placement_packed_under_one_leaf_misses_a_spine_fault, .timeout = 120)
{
	struct study *st = load("tests/data/studies/placement.json");
	cr_assert_eq(st->n_faults, 4);
	cr_expect_eq(st->faults[0].placement, JOB_PACKED);
	cr_expect_eq(st->faults[2].placement, JOB_SPREAD);
	cr_expect_eq(st->faults[3].cluster_servers, 4);
	int n;
	struct study_row *r = eval_all(st, &n);
	cr_assert_eq(n, 4);
	for (int k = 0; k < n; k++) {
		cr_assert(r[k].ok, "case %d: %s", k, r[k].error ? r[k].error : "");
		cr_expect_eq(r[k].devices, 2);
		cr_expect_float_eq(r[k].iteration_s, r[0].iteration_s, 1e-12 * r[0].iteration_s,
		                   "case %s: the estimate sees the job packed", st->faults[k].name);
		cr_assert(study_simulate(A, st, &r[k]));
		cr_assert(r[k].simulated, "%s", r[k].sim_error ? r[k].sim_error : "");
	}
	cr_expect_float_eq(r[1].sim_iteration_s, r[0].sim_iteration_s, 1e-9 * r[0].sim_iteration_s,
	                   "packed: the spine fault changes nothing");
	double want = 3816448 / 12.5e9, got = r[3].sim_iteration_s - r[2].sim_iteration_s;
	cr_expect(fabs(got - want) <= 0.1 * want, "spread: spine down +%.9g s, want about %.9g",
	          got, want);
}

/* tests/data/studies/rebalance.json: six layers in two pipeline stages,
 * server 3 (stage 1, ranks 2 and 3) twice as slow. Rebalanced, the rule
 * gives the stages 4 and 2 layers (times 4 and 2 x 2 = 4; 3 and 3 would
 * be 3 and 6), which the sweep's estimate, the simulation and fit's
 * reading of the point (study_row_stage_layers, the scenario fit writes)
 * all use: both iterations are shorter than the even split's. */
Test(studies, rebalance_fault_case_moves_layers_off_the_slow_stage, .timeout = 120)
{
	struct study *st = load("tests/data/studies/rebalance.json");
	cr_assert_eq(st->n_faults, 2);
	cr_expect_not(st->faults[0].rebalance);
	cr_expect(st->faults[1].rebalance);
	int n;
	struct study_row *r = eval_all(st, &n);
	cr_assert_eq(n, 2);
	cr_assert(r[0].ok && r[1].ok, "%s / %s", r[0].error ? r[0].error : "",
	          r[1].error ? r[1].error : "");
	cr_expect_lt(r[1].iteration_s, r[0].iteration_s);
	cr_expect_null(study_row_stage_layers(A, st, &r[0]));
	const char *layers = study_row_stage_layers(A, st, &r[1]);
	cr_assert_not_null(layers);
	cr_expect_str_eq(layers, "4/2");
	struct scenario *s = study_point_scenario(A, st, &r[1], &D);
	cr_assert(s && s->training.stage_layers);
	cr_expect(s->training.stage_layers[0] == 4 && s->training.stage_layers[1] == 2);
	cr_assert(study_simulate(A, st, &r[0]) && study_simulate(A, st, &r[1]));
	cr_assert(r[0].simulated && r[1].simulated);
	cr_expect_lt(r[1].sim_iteration_s, r[0].sim_iteration_s);
}

/* tests/data/studies/rebalance-uneven.json: six layers in four pipeline
 * stages, server 3 (stage 3) twice as slow. Split evenly, 4 stages do not
 * divide 6 layers: Megatron-LM refuses it (layers-pp). Rebalanced, the
 * rule gives each stage a layer, then the two left one at a time to the
 * stage whose time with one more is least: stages 0 to 2 at 2 x 1 = 2
 * against stage 3's 2 x 2 = 4, ties to the lower stage: 2/2/1/1, which
 * Megatron-LM runs as a layout. So the rebalanced case has the point and
 * the even one none. The search space on the same 4 GPUs (TP 1; PP 1, 2,
 * 4; micro-batches b x DP dividing 16): evenly, PP 1 (DP 4, b 1, 2, 4) 3
 * groups x 12 and PP 2 (DP 2, b 1, 2, 4, 8) 4 groups x 12 of 1F1B (the
 * interleaved 2 x 2 chunks do not divide 6 layers, GPipe is refused), 84
 * points; rebalanced, PP 4's 4 groups x 12 of 1F1B too (6 layers over 4
 * stages) and PP 2 interleaved in units of 2 layers (4/2) save b 8's (16 /
 * (8 x 2) = 1 micro-batch, not a multiple of 2 stages): 3 x 12, 168.
 * The rebalanced point simulates too (the layers 2/2/1/1 lowered). */
Test(studies, rebalance_fault_case_tries_depths_that_do_not_divide_the_layers, .timeout = 120)
{
	struct study *st = load("tests/data/studies/rebalance-uneven.json");
	struct study_size sz;
	cr_assert(study_count(st, &sz));
	cr_expect_eq(sz.points, 1);
	cr_expect_eq(sz.refused[SEARCH_RULE_LAYERS_PP], 1);
	int n;
	struct study_row *r = eval_all(st, &n);
	cr_assert_eq(n, 1);
	cr_expect_eq(r[0].fault, 1);
	cr_assert(r[0].ok, "%s", r[0].error ? r[0].error : "");
	const char *layers = study_row_stage_layers(A, st, &r[0]);
	cr_assert_not_null(layers);
	cr_expect_str_eq(layers, "2/2/1/1");
	cr_assert(study_simulate(A, st, &r[0]));
	cr_expect(r[0].simulated, "%s", r[0].sim_error ? r[0].sim_error : "");
	st->search = true;
	int nu;
	int64_t points[2];
	for (int cell = 0; cell < 2; cell++)
		cr_assert_not_null(study_cell_units(A, st, cell, &nu, &points[cell]));
	cr_expect_eq(points[0], 84);
	cr_expect_eq(points[1], 168);
}

/* The fault case is a key column: a sweep stores a row per case, fit
 * answers the first and tabulates the rest, --fault answers another. */
Test(studies, fault_cases_stored_and_fitted, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-faults-XXXXXX", db[600], args[1400];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/f.db", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/faults.json --db %s", db);
	sweep_all(args, 5);
	cr_expect_eq(query_int(db, "SELECT count(DISTINCT fault_name) FROM points", 0), 5);
	cr_expect_eq(query_int(db, "SELECT count(*) FROM points WHERE iteration_lo_s IS NULL", 0),
	             5, "no calibration: no interval");
	snprintf(args, sizeof args, "fit tests/data/studies/faults.json --db %s", db);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect(strstr(r.out, "fault case: none") != NULL, "%s", r.out);
	cr_expect(strstr(r.out, "server 2x slower") != NULL, "%s", r.out);
	cr_expect(strstr(r.out, "intervals: none (the sweep had no calibration") != NULL, "%s",
	          r.out);
	free(r.out);
	snprintf(args, sizeof args, "fit tests/data/studies/faults.json --db %s --json "
	         "--fault 'spine down'", db);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "%s", r.out);
	cJSON *fastest = cJSON_GetObjectItemCaseSensitive(j, "fastest");
	cr_expect_str_eq(cJSON_GetObjectItemCaseSensitive(fastest, "fault")->valuestring,
	                 "spine down");
	cr_expect(cJSON_IsNull(cJSON_GetObjectItemCaseSensitive(fastest, "interval")));
	cr_expect_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(j, "faults")), 5);
	cJSON_Delete(j);
	free(r.out);
	/* plot: panel (g) makes the page 460 px taller; the store names the
	 * cases; the report tabulates them */
	char png[700], page[700];
	snprintf(png, sizeof png, "%s/f.png", dir);
	snprintf(args, sizeof args, "plot %s --out %s", db, png);
	r = fixture_shardlab(args, true);
	cr_assert_eq(r.status, 0, "%s", r.out);
	free(r.out);
	size_t nb;
	unsigned char *b = slurp_bytes(png, &nb);
	cr_assert_gt(nb, 24);
	unsigned h = (unsigned)b[20] << 24 | (unsigned)b[21] << 16 | (unsigned)b[22] << 8 | b[23];
	cr_expect_eq(h, 1160 + 460);
	free(b);
	struct study_store *so;
	cr_assert(study_store_open_ro(db, &so, NULL, args, sizeof args), "%s", args);
	struct study_plot_info info;
	cr_assert(study_store_info(so, A, &info));
	cr_expect_eq(info.n_faults, 5);
	cr_expect_str_eq(info.fault_names[3], "spine down");
	study_store_close(so);
	snprintf(page, sizeof page, "%s/f.html", dir);
	snprintf(args, sizeof args, "report tests/data/studies/faults.json --db %s --out %s", db,
	         page);
	r = fixture_shardlab(args, true);
	cr_assert_eq(r.status, 0, "%s", r.out);
	free(r.out);
	b = slurp_bytes(page, &nb);
	int rows_seen = 0;
	for (const char *p = (const char *)b; (p = strstr(p, "class=\"faults-row\"")); p++)
		rows_seen++;
	cr_expect_eq(rows_seen, 5, "a row per fault case");
	free(b);
	snprintf(args, sizeof args, "rm -rf '%s/f-plans'", dir);
	cr_expect_eq(system(args), 0);
	remove(png);
	remove(page);
	snprintf(args, sizeof args, "fit tests/data/studies/faults.json --db %s --fault nowhere", db);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 2, "%s", r.out);
	free(r.out);
	/* without intervals, no percentile but the median */
	snprintf(args, sizeof args, "fit tests/data/studies/faults.json --db %s --percentile 90", db);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect(strstr(r.out, "the points of cluster gpu in ") != NULL, "%s", r.out);
	cr_expect(strstr(r.out, "no calibration is shipped for the GPU: fit one from measured "
	                        "iterations (calibrate --runs) and sweep with --calibration FILE") !=
	          NULL, "%s", r.out);
	free(r.out);
	remove_db(db);
	rmdir(dir);
}

/* fit --percentile on a cluster swept bare whose device has a shipped
 * calibration (the A100 of calibrated.json): the way to an interval is to
 * sweep again with it, and the message names the file. */
Test(studies, percentile_names_the_calibration_a_bare_sweep_left_out, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-pct-XXXXXX", db[600], args[1400];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/p.db", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/calibrated.json --db %s "
	         "--calibration none", db);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "fit tests/data/studies/calibrated.json --db %s --percentile 90",
	         db);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect(strstr(r.out, "the points of cluster a100 in ") != NULL, "%s", r.out);
	cr_expect(strstr(r.out, "it was swept without a calibration: sweep again with "
	                        "--calibration auto (the NVIDIA A100 SXM 80GB's is ") != NULL,
	          "%s", r.out);
	cr_expect(strstr(r.out, "calibration/a100-sxm.json)") != NULL, "%s", r.out);
	free(r.out);
	remove_db(db);
	rmdir(dir);
}

/* ---------------------------------------------------------- intervals */

/* A row's interval is the one estimate --calibration prints for the same
 * point: the sweep with calibration/a100-sxm.json, fit's fastest point
 * emitted as a scenario, and estimate of it with that calibration. */
Test(studies, row_interval_is_the_estimates, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-interval-XXXXXX", db[600], sc[600], args[1400];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/c.db", dir);
	snprintf(sc, sizeof sc, "%s/point.json", dir);
	snprintf(args, sizeof args, "sweep tests/data/studies/calibrated.json --db %s "
	         "--calibration calibration/a100-sxm.json", db);
	sweep_all(args, 2);
	cr_expect_eq(query_int(db, "SELECT count(*) FROM points WHERE iteration_hi_s IS NULL", 0), 0);
	snprintf(args, sizeof args, "fit tests/data/studies/calibrated.json --db %s --json "
	         "--emit-scenario %s", db, sc);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "%s", r.out);
	cJSON *iv = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "fastest"),
	                                             "interval");
	cr_assert(cJSON_IsObject(iv), "%s", r.out);
	double lo = cJSON_GetObjectItemCaseSensitive(iv, "iteration_lo_s")->valuedouble;
	double hi = cJSON_GetObjectItemCaseSensitive(iv, "iteration_hi_s")->valuedouble;
	/* and the settings outside the calibration's runs, the same as the
	 * estimate's (the shipped file, found again by its hash) */
	cJSON *out = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "fastest"),
	                                              "outside_fitted_runs");
	cr_assert(cJSON_IsArray(out), "%s", r.out);
	char *row_out = cJSON_PrintUnformatted(out);
	cJSON_Delete(j);
	free(r.out);
	snprintf(args, sizeof args, "estimate %s --calibration calibration/a100-sxm.json --json", sc);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "%s", r.out);
	iv = cJSON_GetObjectItemCaseSensitive(j, "interval");
	double elo = cJSON_GetObjectItemCaseSensitive(iv, "lo_s")->valuedouble;
	double ehi = cJSON_GetObjectItemCaseSensitive(iv, "hi_s")->valuedouble;
	cr_expect(fabs(lo - elo) <= 1e-9 * ehi, "lo: row %.12g, estimate %.12g", lo, elo);
	cr_expect(fabs(hi - ehi) <= 1e-9 * ehi, "hi: row %.12g, estimate %.12g", hi, ehi);
	char *est_out = cJSON_PrintUnformatted(cJSON_GetObjectItemCaseSensitive(iv,
	                                                                       "outside_fitted_runs"));
	cr_expect_str_eq(row_out, est_out);
	free(row_out);
	free(est_out);
	cJSON_Delete(j);
	free(r.out);
	/* Resuming with another calibration (here none) is refused. */
	snprintf(args, sizeof args, "sweep tests/data/studies/calibrated.json --db %s "
	         "--calibration none", db);
	r = fixture_shardlab(args, true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect(strstr(r.out, "other calibrations (a100=a100-sxm:") != NULL, "%s", r.out);
	free(r.out);
	remove(sc);
	remove_db(db);
	rmdir(dir);
}

/* A sweep with --calibration FILE records the file (relative to the
 * database's folder, meta's calibration_files), and fit finds it again:
 * its fastest point, 8 fp16 devices, lies outside the file's runs of
 * 16-64 bf16 ones (tests/data/calibrate/runs-16-64.json); once the file
 * changes (another hash), fit no longer knows the runs (null), as after a
 * sweep whose calibration is gone. The sweep's summary counts the points
 * outside by setting. */
Test(studies, fit_finds_a_swept_calibration_file_again, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-swcal-XXXXXX", db[600], cal[600], args[1400];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(db, sizeof db, "%s/c.db", dir);
	snprintf(cal, sizeof cal, "%s/runs.json", dir);
	/* a copy of tests/data/calibrate/runs-16-64.json, which the test changes */
	FILE *in = fopen("tests/data/calibrate/runs-16-64.json", "r"), *f = fopen(cal, "w");
	cr_assert(in && f);
	for (int c; (c = fgetc(in)) != EOF;)
		fputc(c, f);
	cr_assert(fclose(in) == 0 && fclose(f) == 0);
	snprintf(args, sizeof args, "sweep tests/data/studies/calibrated.json --db %s "
	         "--calibration %s", db, cal);
	/* the summary counts them: both points run on 8 fp16 devices */
	struct cli_run sw = fixture_shardlab(args, false);
	cr_assert_eq(sw.status, 0, "%s", sw.out);
	cr_expect(strstr(sw.out, "(2 computed, 0 already stored)"), "%s", sw.out);
	cr_expect(strstr(sw.out, "cluster a100: 2 of 2 points outside the runs its calibration"),
	          "%s", sw.out);
	cr_expect(strstr(sw.out, "\n  devices: 2 (fitted: 16-64); compute: 2 (fitted: bf16)\n"),
	          "%s", sw.out);
	free(sw.out);
	cr_expect_eq(query_int(db, "SELECT value = 'a100=runs.json' FROM meta WHERE key = "
	                           "'calibration_files'", 0), 1);
	snprintf(args, sizeof args, "fit tests/data/studies/calibrated.json --db %s --csv", db);
	struct cli_run c = fixture_shardlab(args, false);
	cr_assert_eq(c.status, 0, "%s", c.out);
	cr_expect(strstr(c.out, ",outside_fitted_runs\n"), "%s", c.out);
	cr_expect(strstr(c.out, ",\"8 devices (fitted: 16-64), fp16 compute (fitted: bf16)\"\n"),
	          "%s", c.out);
	free(c.out);
	snprintf(args, sizeof args, "fit tests/data/studies/calibrated.json --db %s --json", db);
	for (int k = 0; k < 2; k++) {
		struct cli_run r = fixture_shardlab(args, false);
		cr_assert_eq(r.status, 0, "%s", r.out);
		cJSON *j = cJSON_Parse(r.out);
		cr_assert_not_null(j, "%s", r.out);
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(
		        cJSON_GetObjectItemCaseSensitive(j, "fastest"), "outside_fitted_runs");
		if (k == 0) {
			char *got = cJSON_PrintUnformatted(o);
			cr_expect_str_eq(got, "[{\"setting\":\"devices\",\"value\":\"8\","
			                      "\"fitted\":\"16-64\"},{\"setting\":\"compute\","
			                      "\"value\":\"fp16\",\"fitted\":\"bf16\"}]");
			free(got);
		} else {
			cr_expect(cJSON_IsNull(o), "%s", r.out);
		}
		cJSON_Delete(j);
		free(r.out);
		/* the file changed after the sweep: not the one its rows were priced with */
		f = fopen(cal, "a");
		cr_assert_not_null(f);
		cr_assert(fputs("\n", f) >= 0 && fclose(f) == 0);
	}
	remove(cal);
	remove_db(db);
	rmdir(dir);
}

/* Two points by hand: A at 10 s with a log spread of 0.2, B at 10.5 s with
 * 0.01, their 90% intervals t exp(± 1.943180 s) (Student's t of 95%, 6
 * degrees of freedom, tables). On the estimate (the median) A is the
 * faster. At the 90th percentile, z_90 / z_95 = 1.2815516 / 1.6448536 of
 * the way to the upper end on ln t: A takes 10 exp(1.943180 x 0.2 x
 * 0.7791280) = 13.536399 s and B 10.5 exp(1.943180 x 0.01 x 0.7791280) =
 * 10.660178 s: B is chosen. At the 95th the upper end itself. The
 * interval's ends stay. */
Test(studies, percentile_90_ranks_by_the_upper_time)
{
	struct study *st = load("tests/data/studies/tiny.json");
	double t[] = {10, 10.5}, sd[] = {0.2, 0.01};
	struct study_row rows[2];
	for (int i = 0; i < 2; i++) {
		rows[i] = (struct study_row){.ok = true, .devices = 8, .servers = 1,
		                             .iteration_s = t[i], .iteration_rel_sd = sd[i],
		                             .iteration_lo_s = t[i] * exp(-1.943180 * sd[i]),
		                             .iteration_hi_s = t[i] * exp(1.943180 * sd[i]),
		                             .tokens_per_iteration = 8192, .model_flops = 1e15,
		                             .compute_s = 1, .state_bytes = 1e9,
		                             .state_bytes_per_device = 1e8};
		study_row_figures(st, &rows[i]);
		cr_assert(study_row_has_interval(&rows[i]));
		cr_expect(rows[i].effective_lo_s < rows[i].effective_time_s &&
		          rows[i].effective_time_s < rows[i].effective_hi_s);
	}
	cr_expect_eq(study_best(st, rows, 2, -1, 0), 0, "the median picks A");
	for (int i = 0; i < 2; i++)
		study_row_at_percentile(st, &rows[i], 0.9);
	cr_expect_float_eq(rows[0].iteration_s, 13.536399, 1e-6);
	cr_expect_float_eq(rows[1].iteration_s, 10.660178, 1e-6);
	cr_expect_float_eq(rows[0].time_to_train_s, 1000 * 13.536399, 1e-3);
	cr_expect_float_eq(rows[0].iteration_hi_s, 10 * exp(1.943180 * 0.2), 1e-6);
	cr_expect_eq(study_best(st, rows, 2, -1, 0), 1, "the 90th percentile picks B");
	struct study_row at95 = rows[1];
	at95.iteration_s = 10.5;
	study_row_at_percentile(st, &at95, 0.95);
	cr_expect_float_eq(at95.iteration_s, at95.iteration_hi_s, 1e-9, "the 95th: the upper end");
	/* A row without an interval is left as it is. */
	struct study_row none = rows[0];
	none.iteration_rel_sd = NAN;
	none.iteration_s = 10;
	study_row_at_percentile(st, &none, 0.9);
	cr_expect_float_eq(none.iteration_s, 10, 1e-12);
}

/* fit's note on a device whose kernel model is not calibrated names the
 * calibration the sweep recorded for its cluster (the database's meta),
 * not the study's topology file, which carries none: the B200's shipped
 * calibration by default, and no calibration under --calibration none. */
Test(studies, fit_names_the_calibration_the_sweep_used, .timeout = 120)
{
	char dir[] = "/tmp/shardlab-fitcal-XXXXXX", db[600], args[1400];
	cr_assert_not_null(mkdtemp(dir));
	const char *cal[] = {"", " --calibration none"};
	const char *want[] = {"the calibration blackwell scales its times",
	                      "compute model is not calibrated"};
	for (int k = 0; k < 2; k++) {
		snprintf(db, sizeof db, "%s/b%d.db", dir, k);
		snprintf(args, sizeof args, "sweep tests/data/studies/blackwell.json --db %s%s", db,
		         cal[k]);
		sweep_all(args, 1);
		snprintf(args, sizeof args, "fit tests/data/studies/blackwell.json --db %s", db);
		struct cli_run r = fixture_shardlab(args, false);
		cr_assert_eq(r.status, 0, "%s", r.out);
		cr_expect(strstr(r.out, want[k]) != NULL, "%s", r.out);
		free(r.out);
		remove_db(db);
	}
	rmdir(dir);
}
