/* test_llm_foundry_mpt.c — validation/llm-foundry-mpt.json, MosaicML's MPT
 * throughput tables (mosaicml/llm-foundry scripts/train/benchmarking/
 * README.md at commit 061f2c7; docs/validation.md, "llm-foundry MPT on A100
 * and H100"): every row loads with what its table states and plans. The
 * expected figures are the tables' columns and what follows from them by
 * hand:
 *
 *   FSDP FULL_SHARD over all the GPUs: DP = GPUs, TP = PP = CP = 1;
 *   GlobalBatchSize = MicroBatchSize x GPUs x GradAccum;
 *   tokens an iteration = GlobalBatchSize x SeqLen;
 *   NumParams = l (12 d^2 + 13 d) + 50368 d + s d + 2 d (the yamls' d_model
 *   and n_layers, vocabulary 50,368, biases, learned positions of the
 *   sequence's length, a tied embedding): for mpt-7b at 2048,
 *   32 (201,326,592 + 53,248) + 206,307,328 + 8,388,608 + 8,192
 *   = 6,442,450,944 + 1,703,936 + 214,704,128 = 6,658,859,008, the table's;
 *   MFU = (6 N + 12 l d s) x (T/s/GPU) / peak (the README's formula, its
 *   attention term n_layers x 2 x 2 x d_model x s^2 a sequence, with the
 *   A100's 312 and the H100's 989 TFLOP/s): 7b at 2048 on A100,
 *   (39,953,154,048 + 3,221,225,472) x 4,641 / 312e12 = 64.2%, the
 *   table's 64.23. */
#include <math.h>

#include "table_rows.h"

TestSuite(llm_foundry_mpt, .init = fixture_setup, .fini = fixture_teardown);

#define MPT_FILE "validation/llm-foundry-mpt.json"

/* The tables' rows, in file order: GPUs, GBS, MBS, SeqLen, TP, PP, CP, VP,
 * GradAccum, NumParams; FSDP. */
static const struct table_row rows[] = {
	{"MPT-125m A100", 8, 512, 32, 2048, 1, 1, 1, 1, 2, 125311488, true},
	{"MPT-350m A100", 8, 512, 32, 2048, 1, 1, 1, 1, 2, 355985408, true},
	{"MPT-760m A100", 8, 384, 24, 2048, 1, 1, 1, 1, 2, 760470528, true},
	{"MPT-1b A100", 8, 448, 14, 2048, 1, 1, 1, 1, 4, 1315950592, true},
	{"MPT-3b A100", 8, 160, 10, 2048, 1, 1, 1, 1, 2, 2651837440, true},
	{"MPT-7b A100", 8, 96, 6, 2048, 1, 1, 1, 1, 2, 6658859008, true},
	{"MPT-13b A100", 8, 48, 2, 2048, 1, 1, 1, 1, 3, 12853954560, true},
	{"MPT-30b A100", 8, 504, 3, 2048, 1, 1, 1, 1, 21, 29975214080, true},
	{"MPT-1b A100", 8, 96, 3, 8192, 1, 1, 1, 1, 4, 1328533504, true},
	{"MPT-7b A100", 8, 128, 8, 8192, 1, 1, 1, 1, 2, 6684024832, true},
	{"MPT-13b A100", 8, 120, 5, 8192, 1, 1, 1, 1, 3, 12885411840, true},
	{"MPT-7b A100", 8, 32, 2, 32768, 1, 1, 1, 1, 2, 6784688128, true},
	{"MPT-1b H100", 8, 112, 14, 2048, 1, 1, 1, 1, 1, 1315950592, true},
	{"MPT-3b H100", 8, 240, 5, 4096, 1, 1, 1, 1, 6, 2657080320, true},
	{"MPT-7b H100", 8, 48, 6, 2048, 1, 1, 1, 1, 1, 6658859008, true},
	{"MPT-7b H100", 8, 128, 8, 8192, 1, 1, 1, 1, 2, 6684024832, true},
	{"MPT-13b H100", 8, 16, 2, 2048, 1, 1, 1, 1, 1, 12853954560, true},
	{"MPT-13b H100", 8, 240, 10, 4096, 1, 1, 1, 1, 3, 12864440320, true},
	{"MPT-30b H100", 8, 504, 3, 2048, 1, 1, 1, 1, 21, 29975214080, true},
	/* the A100 40GB table, 8 to 128 GPUs */
	{"MPT-1b A100 40GB 8 ", 8, 512, 8, 2048, 1, 1, 1, 1, 8, 1315950592, true},
	{"MPT-1b A100 40GB 16 ", 16, 128, 8, 2048, 1, 1, 1, 1, 1, 1315950592, true},
	{"MPT-1b A100 40GB 64 ", 64, 640, 10, 2048, 1, 1, 1, 1, 1, 1315950592, true},
	{"MPT-1b A100 40GB 128 ", 128, 1280, 10, 2048, 1, 1, 1, 1, 1, 1315950592, true},
	{"MPT-7b A100 40GB 8 ", 8, 384, 12, 2048, 1, 1, 1, 1, 4, 6658859008, true},
	{"MPT-7b A100 40GB 16 ", 16, 256, 16, 2048, 1, 1, 1, 1, 1, 6658859008, true},
	{"MPT-7b A100 40GB 32 ", 32, 576, 18, 2048, 1, 1, 1, 1, 1, 6658859008, true},
	{"MPT-7b A100 40GB 64 ", 64, 1152, 18, 2048, 1, 1, 1, 1, 1, 6658859008, true},
	{"MPT-7b A100 40GB 128 ", 128, 2304, 18, 2048, 1, 1, 1, 1, 1, 6658859008, true},
	{"MPT-13b A100 40GB 8 ", 8, 512, 4, 2048, 1, 1, 1, 1, 16, 12853954560, true},
	{"MPT-13b A100 40GB 16 ", 16, 160, 10, 2048, 1, 1, 1, 1, 1, 12853954560, true},
	{"MPT-13b A100 40GB 32 ", 32, 448, 14, 2048, 1, 1, 1, 1, 1, 12853954560, true},
	{"MPT-13b A100 40GB 64 ", 64, 1024, 16, 2048, 1, 1, 1, 1, 1, 12853954560, true},
	{"MPT-13b A100 40GB 128 ", 128, 2048, 16, 2048, 1, 1, 1, 1, 1, 12853954560, true},
	{"MPT-30b A100 40GB 32 ", 32, 128, 4, 2048, 1, 1, 1, 1, 1, 29975214080, true},
	{"MPT-30b A100 40GB 128 ", 128, 768, 6, 2048, 1, 1, 1, 1, 1, 29975214080, true},
	{"MPT-70b A100 40GB 64 ", 64, 128, 2, 2048, 1, 1, 1, 1, 1, 64862437376, true},
	{"MPT-70b A100 40GB 128 ", 128, 512, 4, 2048, 1, 1, 1, 1, 1, 64862437376, true},
};
#define N_ROWS ((int)(sizeof rows / sizeof rows[0]))

Test(llm_foundry_mpt, rows_load_with_the_tables_parallelism_and_plan, .timeout = 300)
{
	table_rows_check(MPT_FILE, rows, N_ROWS);
}

/* Each row's T/s/GPU, its Activation Checkpointing column and its MFU
 * column: the MFU the README's formula gives from the transcribed
 * throughput is the table's within 0.1% of it and the rounding of the
 * T/s/GPU to a token (the tables compute both from the run's samples a
 * second; T/s/GPU is T/s over the GPUs, rounded: 70b on 128 A100 40GB
 * prints 376 for 48,194 / 128 = 376.5, 0.13%). */
Test(llm_foundry_mpt, rows_carry_the_tables_throughput_and_settings, .timeout = 60)
{
	static const struct {
		double tps, mfu;
		bool ckpt, h100;
		int64_t d, l;
	} want[] = {
		{141737, 44.45, false, false, 768, 12},  {58782, 51.62, false, false, 1024, 24},
		{32434, 56.85, false, false, 1536, 24},  {20513, 59.86, false, false, 2048, 24},
		{10811, 62.11, false, false, 2560, 32},  {4641, 64.23, false, false, 4096, 32},
		{2262, 59.57, false, false, 5120, 40},   {916, 55.3, true, false, 7168, 48},
		{13814, 56.69, false, false, 2048, 24},  {3206, 54.47, true, false, 4096, 32},
		{1795, 56.07, true, false, 5120, 40},    {1672, 49.46, true, false, 4096, 32},
		{45455, 41.82, false, true, 2048, 24},   {20964, 42.31, false, true, 2560, 32},
		{10643, 46.44, false, true, 4096, 32},   {6935, 37.14, true, true, 4096, 32},
		{4792, 39.79, false, true, 5120, 40},    {4717, 41.6, true, true, 5120, 40},
		{2002, 38.11, true, true, 7168, 48},
		{19271, 56.23, false, false, 2048, 24}, {19085, 55.69, false, false, 2048, 24},
		{19001, 55.44, false, false, 2048, 24}, {18647, 54.41, false, false, 2048, 24},
		{3679, 50.92, true, false, 4096, 32},   {3645, 50.44, true, false, 4096, 32},
		{3725, 51.55, true, false, 4096, 32},   {3665, 50.73, true, false, 4096, 32},
		{3623, 50.14, true, false, 4096, 32},   {1668, 43.94, true, false, 5120, 40},
		{1993, 52.5, true, false, 5120, 40},    {1998, 52.62, true, false, 5120, 40},
		{1976, 52.04, true, false, 5120, 40},   {1972, 51.93, true, false, 5120, 40},
		{857, 51.74, true, false, 7168, 48},    {865, 52.25, true, false, 7168, 48},
		{276, 35.87, true, false, 8192, 80},    {376, 48.91, true, false, 8192, 80},
	};
	cr_assert_eq((int)(sizeof want / sizeof want[0]), N_ROWS);
	struct validation *v = validation_load(A, MPT_FILE, &D);
	cr_assert_not_null(v);
	cr_assert_eq(v->n_rows, N_ROWS);
	for (int i = 0; i < N_ROWS; i++) {
		const struct validation_training_row *r = &v->training[i];
		const struct scenario *s = r->scenario;
		cr_expect_eq(r->value, want[i].tps, "%s", r->name);
		double seq = (double)rows[i].seq, d = (double)want[i].d, l = (double)want[i].l;
		double mfu = (6 * (double)rows[i].params + 12 * l * d * seq) * want[i].tps /
		             (want[i].h100 ? 989e12 : 312e12) * 100;
		cr_expect(fabs(mfu - want[i].mfu) <= (1e-3 + 0.5 / want[i].tps) * want[i].mfu,
		          "%s: MFU %.3f, the table's %.2f", r->name, mfu, want[i].mfu);
		cr_expect_eq(s->training.recompute, want[i].ckpt ? RECOMPUTE_FULL : RECOMPUTE_NONE, "%s",
		             r->name);
		/* FSDP one block a unit; flash_attn's fused cross-entropy */
		cr_expect_eq(s->training.zero3_impl, ZERO3_FSDP, "%s", r->name);
		cr_expect_eq(s->training.cross_entropy, XENT_FUSED, "%s", r->name);
		cr_expect(s->training.flash_attention, "%s", r->name);
		/* the A100 40GB table: the 40GB part's memory (A100 datasheet:
		 * 40 GB at 1,555 GB/s) and Composer's PURE precision, bf16
		 * reductions; the others' DEFAULT, fp32 reductions */
		bool forty = strstr(r->name, "40GB") != NULL;
		cr_expect_str_eq(s->topo->device.kind,
		                 want[i].h100 ? "NVIDIA H100 SXM"
		                 : forty      ? "NVIDIA A100 SXM 40GB" : "NVIDIA A100 SXM 80GB",
		                 "%s", r->name);
		cr_expect_eq(s->topo->device.hbm_bytes, forty ? 40e9 : 80e9, "%s", r->name);
		cr_expect_eq(s->training.grad_reduce_in_bf16, forty, "%s", r->name);
	}
}
