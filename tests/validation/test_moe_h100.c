/* test_moe_h100.c — validation/moe-h100.json, the held-out mixtures of
 * experts on H100 (docs/validation.md, "Mixtures of experts on H100 (a
 * held-out check)"): every row loads with the parallelism its table states
 * and plans. The expected figures are the table's columns and what follows
 * from them by hand (table_rows.h):
 *
 *   DP = 16 / (TP 1 x PP 1 x CP 1) = 16, micro-batches = 1024 / (1 x 16)
 *   = 64 (the 26.04 to 26.06 containers); with PP 2 (26.02, 26.02.01)
 *   DP = 16 / (1 x 2 x 1) = 8 and 1024 / (1 x 8) = 128; tokens an
 *   iteration = 1024 x 4096,
 *
 * and Qwen3-30B-A3B's parameters from its config.json (h 2048, 48 layers,
 * 32 query and 4 key-value heads of 128, QK-Norm, 128 experts of 768 with a
 * router, vocabulary 151,936, untied):
 *   attention 2048 x 32 x 128 (q) + 2 x 2048 x 4 x 128 (k, v)
 *   + 32 x 128 x 2048 (out) + 2 x 128 (q_norm, k_norm) = 18,874,624;
 *   experts 128 x 3 x 2048 x 768 + 2048 x 128 (router) = 604,241,920;
 *   two RMSNorms 4,096: a layer 623,120,640, 48 of them 29,909,790,720;
 *   + 2 x 151,936 x 2048 (embedding, head) + 2048 (final norm)
 *   = 30,532,122,624 (the model card's 30.5B); Qwen3-235B-A22B's
 * 235,093,634,560 as tests/models/test_hf.c counts them, its rows DP =
 * 256 / (TP 2 x PP 8) = 16 and 8192 / (1 x 16) = 512 micro-batches. */
#include "table_rows.h"

TestSuite(moe_h100, .init = fixture_setup, .fini = fixture_teardown);

Test(moe_h100, rows_load_with_the_tables_parallelism_and_plan, .timeout = 300)
{
	static const struct table_row want[] = {
		{"MB 26.02 Qwen3_30B_a3B ", 16, 1024, 1, 4096, 1, 2, 1, 12, 128, 30532122624, false},
		{"MB 26.02.01 Qwen3_30B_a3B ", 16, 1024, 1, 4096, 1, 2, 1, 12, 128, 30532122624, false},
		{"MB 26.04 Qwen3_30B_a3B ", 16, 1024, 1, 4096, 1, 1, 1, 1, 64, 30532122624, false},
		{"MB 26.04.01 Qwen3_30B_a3B ", 16, 1024, 1, 4096, 1, 1, 1, 1, 64, 30532122624, false},
		{"MB 26.06 Qwen3_30B_a3B ", 16, 1024, 1, 4096, 1, 1, 1, 1, 64, 30532122624, false},
		{"MB 26.02 Qwen3_235B_a22B ", 256, 8192, 1, 4096, 2, 8, 1, 4, 512, 235093634560, false},
		{"MB 26.02.01 Qwen3_235B_a22B ", 256, 8192, 1, 4096, 2, 8, 1, 4, 512, 235093634560, false},
		{"MB 26.04 Qwen3_235B_a22B ", 256, 8192, 1, 4096, 2, 8, 1, 4, 512, 235093634560, false},
		{"MB 26.04.01 Qwen3_235B_a22B ", 256, 8192, 1, 4096, 2, 8, 1, 4, 512, 235093634560, false},
	};
	table_rows_check("validation/moe-h100.json", want, (int)(sizeof want / sizeof want[0]));
	/* each row with the dispatcher, the expert parallelism and the
	 * all-to-all overlap its recipe names: Qwen3-30B-A3B in the 26.02
	 * containers DeepEP, EP 8, moe_a2a_overlap, in the later ones HybridEP,
	 * EP 16, none; Qwen3-235B-A22B the all-to-all dispatcher, EP 32 (above
	 * DP 16: folded over TP 2, with sequence parallelism), moe_a2a_overlap */
	struct validation *v = validation_load(A, "validation/moe-h100.json", &D);
	cr_assert_not_null(v);
	static const struct {
		enum moe_dispatcher disp;
		int64_t ep;
		bool overlap;
	} want_moe[] = {{MOE_DISPATCH_DEEPEP, 8, true}, {MOE_DISPATCH_DEEPEP, 8, true},
	                {MOE_DISPATCH_HYBRIDEP, 16, false}, {MOE_DISPATCH_HYBRIDEP, 16, false},
	                {MOE_DISPATCH_HYBRIDEP, 16, false}, {MOE_DISPATCH_ALLTOALL, 32, true},
	                {MOE_DISPATCH_ALLTOALL, 32, true}, {MOE_DISPATCH_ALLTOALL, 32, true},
	                {MOE_DISPATCH_ALLTOALL, 32, true}};
	cr_assert_eq(v->n_rows, 9);
	for (int i = 0; i < v->n_rows; i++) {
		const struct scenario *s = v->training[i].scenario;
		cr_expect_eq(s->training.moe_dispatcher, want_moe[i].disp, "%s", v->training[i].name);
		cr_expect_eq(s->training.expert_parallel, want_moe[i].ep, "%s", v->training[i].name);
		cr_expect_eq(s->training.moe_a2a_overlap, want_moe[i].overlap, "%s", v->training[i].name);
		cr_expect_eq(s->training.sequence_parallel, want_moe[i].ep == 32, "%s",
		             v->training[i].name);
	}
	/* and the plan column names the dispatcher beside the expert
	 * parallelism, so a reader sees which of the two priced the row (in the
	 * same test: as two, run in parallel, criterion's runner leaked 48
	 * bytes under the sanitizer build) */
	struct cli_run r = fixture_shardlab(
		"validate validation/moe-h100.json --estimate-only --rows 'MB 26.04 *'", false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "TP 1 x DP 16, EP 16 (HybridEP)"), "%s", r.out);
	free(r.out);
}
