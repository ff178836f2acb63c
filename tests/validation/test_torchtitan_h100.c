/* test_torchtitan_h100.c — validation/torchtitan-h100.json, the held-out
 * eager FSDP rows of torchtitan's published H100 tables (docs/validation.md,
 * "torchtitan on H100 (a held-out check)"): every row loads with the
 * parallelism its table states and plans. The expected figures are the
 * tables' and what follows from them by hand (pytorch/torchtitan
 * docs/performance.md, Tables 1 and 3; train_configs/llama3_8b.toml at the
 * tested commit 9dec370 for the sequence):
 *
 *   FSDP over every GPU: DP = GPUs, TP = PP = CP = 1; local batch 2, so
 *   global batch = 2 x GPUs and one micro-batch an iteration;
 *   tokens an iteration = global batch x 8192;
 *   measured memory = the table's GiB x 2^30 bytes.
 *
 * Llama 3.1 8B's parameters from its dimensions (torchtitan's "8B": h 4096,
 * l 32, 32 heads, 8 key-value heads of d 128, ffn 14,336, V 128,256, an
 * untied output): l (2 h^2 + 2 h kv d + 3 h f + 2 h) + 2 V h + h
 * = 32 (33,554,432 + 8,388,608 + 176,160,768 + 8,192) + 1,050,673,152
 * + 4,096 = 6,979,584,000 + 1,050,677,248 = 8,030,261,248. */
#include <math.h>

#include "table_rows.h"

TestSuite(torchtitan_h100, .init = fixture_setup, .fini = fixture_teardown);

Test(torchtitan_h100, rows_load_with_the_tables_parallelism_and_plan, .timeout = 300)
{
	static const struct table_row want[] = {
		/* Table 1: 8 GPUs, local batch 2, global batch 16. */
		{"Llama 3.1 8B FSDP 8 GPUs", 8, 16, 2, 8192, 1, 1, 1, 1, 1, 8030261248, true},
		/* Table 3: 128 GPUs, local batch 2, global batch 256. */
		{"Llama 3.1 8B FSDP 128 GPUs", 128, 256, 2, 8192, 1, 1, 1, 1, 1, 8030261248, true},
	};
	table_rows_check("validation/torchtitan-h100.json", want, (int)(sizeof want / sizeof want[0]));
}

Test(torchtitan_h100, rows_carry_the_tables_throughput_and_memory, .timeout = 60)
{
	/* Tables 1 and 3, row "FSDP": TPS/GPU and Memory(GiB). */
	static const struct {
		double tps, gib;
	} want[] = {{5762, 82.4}, {5605, 67.0}};
	struct validation *v = validation_load(A, "validation/torchtitan-h100.json", &D);
	cr_assert_not_null(v);
	cr_assert_eq(v->n_rows, 2);
	for (int i = 0; i < 2; i++) {
		const struct validation_training_row *r = &v->training[i];
		cr_expect_eq(r->value, want[i].tps, "%s", r->name);
		/* the file's GB are the GiB x 1.073741824, rounded to 10 MB */
		cr_expect(fabs(r->memory_bytes - want[i].gib * 1073741824.0) <= 0.005e9, "%s: %g", r->name,
		          r->memory_bytes);
		cr_expect_eq(r->scenario->training.zero3_impl, ZERO3_FSDP, "%s", r->name);
		/* selective_ac_option "op"; train.py's loss_fn: F.cross_entropy of
		 * the logits upcast to fp32 */
		cr_expect_eq(r->scenario->training.recompute, RECOMPUTE_OP, "%s", r->name);
		cr_expect_eq(r->scenario->training.cross_entropy, XENT_PYTORCH, "%s", r->name);
	}
}
