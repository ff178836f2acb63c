/* test_nemo_h100.c — validation/nemo-h100.json, the held-out H100 set of
 * NVIDIA NeMo's published pre-training tables (docs/validation.md, "NeMo
 * on H100 (a held-out check)"): every row loads with the parallelism its
 * table states and plans. The expected figures are the tables' columns and
 * what follows from them by hand:
 *
 *   DP = GPUs / (TP x PP x CP), micro-batches = GBS / (MBS x DP),
 *   tokens an iteration = GBS x sequence,
 *
 * and each model's parameters from its published dimensions (h hidden, l
 * layers, f ffn, V vocabulary, s sequence, a heads, kv key-value heads,
 * d = h / a):
 *
 *   gpt (GPT-3: biases, LayerNorm weight and bias, learned positions, tied
 *   output): l (4 h^2 + 2 h f + 9 h + f) + V h + s h + 2 h;
 *   gpt without biases, rotary, untied (Nemotron-3):
 *   l (4 h^2 + 2 h f + 4 h) + 2 V h + 2 h;
 *   llama (RMSNorm, grouped-query attention, SwiGLU, untied):
 *   l (2 h^2 + 2 h kv d + 3 h f + 2 h) + 2 V h + h.
 *
 * GPT3-5B: 24 (4 x 4096^2 + 2 x 4096 x 16384 + 9 x 4096 + 16384)
 *   + 50304 x 4096 + 2048 x 4096 + 8192 = 24 x 201,379,840 + 206,045,184
 *   + 8,388,608 + 8,192 = 5,047,558,144 (vocabulary 50,257 padded to 128 x TP).
 * LLAMA2-7B: 32 (2 x 4096^2 + 2 x 4096 x 4096 + 3 x 4096 x 11008 + 8192)
 *   + 2 x 32000 x 4096 + 4096 = 32 x 202,383,360 + 262,148,096
 *   = 6,738,415,616 (Llama 2's published 6.74B).
 * Nemotron-340B (llama with ffn 49,152 = 2/3 x 73,728, kv 8, d 192):
 *   96 (2 x 18432^2 + 2 x 18432 x 1536 + 3 x 18432 x 49152 + 36864)
 *   + 2 x 256000 x 18432 + 18432 = 96 x 3,454,046,208 + 9,437,202,432
 *   = 341,025,638,400. The others follow the same formulas. */
#include "table_rows.h"

TestSuite(nemo_h100, .init = fixture_setup, .fini = fixture_teardown);

Test(nemo_h100, rows_load_with_the_tables_parallelism_and_plan, .timeout = 300)
{
	static const struct table_row want[] = {
		/* NeMo 24.12 user guide, "Performance Benchmarks", DGX-H100. */
		{"NeMo 24.12 GPT3-5B ", 64, 2048, 4, 2048, 1, 1, 1, 1, 8, 5047558144, false},
		{"NeMo 24.12 GPT3-20B ", 64, 256, 2, 2048, 2, 1, 1, 1, 4, 20257296384, false},
		{"NeMo 24.12 GPT3-175B 128 ", 128, 256, 1, 2048, 4, 8, 1, 6, 64, 174609555456, false},
		{"NeMo 24.12 GPT3-175B 512 ", 512, 2048, 2, 2048, 4, 8, 1, 6, 64, 174609555456, false},
		{"NeMo 24.12 LLAMA2-7B ", 8, 128, 1, 4096, 1, 1, 1, 1, 16, 6738415616, false},
		{"NeMo 24.12 LLAMA2-13B ", 16, 128, 1, 4096, 1, 4, 1, 10, 32, 13015864320, false},
		{"NeMo 24.12 LLAMA2-70B ", 64, 128, 1, 4096, 4, 4, 1, 20, 32, 68976648192, false},
		{"NeMo 24.12 Nemotron-8B ", 64, 256, 4, 4096, 2, 1, 1, 1, 2, 8540135424, false},
		{"NeMo 24.12 Nemotron-22B ", 64, 256, 2, 4096, 2, 4, 1, 10, 16, 21266116608, false},
		{"NeMo 24.12 Nemotron-340B ", 128, 32, 1, 4096, 8, 8, 1, 12, 16, 341025638400, false},
		{"NeMo 24.12 LLAMA3-8B ", 8, 128, 1, 8192, 1, 1, 2, 1, 32, 8030261248, false},
		{"NeMo 24.12 LLAMA3-70B ", 64, 128, 1, 8192, 4, 4, 2, 5, 64, 70553706496, false},
		/* Megatron-Bridge's archive, later containers, DGX-H100. */
		{"MB 25.09 LLAMA3_8B ", 8, 128, 1, 8192, 1, 1, 1, 1, 16, 8030261248, true},
		{"MB 25.09 LLAMA3_70B ", 64, 128, 1, 8192, 4, 8, 1, 5, 64, 70553706496, false},
		{"MB 25.09 LLAMA3.1_405B ", 1024, 512, 1, 8192, 8, 8, 2, 8, 64, 405853388800, false},
		{"MB 26.02 LLAMA3_70B ", 64, 256, 1, 8192, 4, 8, 1, 5, 128, 70553706496, false},
		{"MB 26.02 LLAMA3.1_405B ", 1024, 1536, 1, 8192, 8, 8, 2, 8, 192, 405853388800, false},
		{"MB 26.02.01 LLAMA3_70B ", 64, 256, 1, 8192, 4, 8, 1, 5, 128, 70553706496, false},
		{"MB 26.04 LLAMA3_70B ", 64, 256, 1, 8192, 4, 8, 1, 5, 128, 70553706496, false},
		{"MB 26.04.01 LLAMA3_70B ", 64, 256, 1, 8192, 4, 8, 1, 5, 128, 70553706496, false},
		{"MB 26.04.01 LLAMA3.1_405B ", 1024, 1536, 1, 8192, 8, 8, 2, 8, 192, 405853388800, false},
		{"MB 26.06 LLAMA3.1_405B ", 1024, 1536, 1, 8192, 8, 8, 2, 8, 192, 405853388800, false},
	};
	table_rows_check("validation/nemo-h100.json", want, (int)(sizeof want / sizeof want[0]));
}
