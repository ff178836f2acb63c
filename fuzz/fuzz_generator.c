/* fuzz_generator.c — the model generators' parameters (models/generate.c)
 * from raw bytes: kind, the eight sizes (each left at its default, small,
 * a shifted 32-bit value or negative), dtype, bias and dropout, then the
 * mixture-of-experts members (five counts the same way, the capacity
 * factor, the shared experts' gate, q/k/v biases). A graph that comes back
 * must count its parameters within GRAPH_MAX_ELEMENTS, its active ones
 * between 0 and that. */
#include <string.h>

#include "fuzz.h"
#include "models.h"

struct bytes {
	const uint8_t *p;
	size_t n;
};

static unsigned take(struct bytes *b)
{
	if (!b->n)
		return 0;
	b->n--;
	return *b->p++;
}

static uint32_t take32(struct bytes *b)
{
	uint32_t v = 0;
	for (int i = 0; i < 4; i++)
		v = v << 8 | take(b);
	return v;
}

static void size_field(struct bytes *b, int64_t *f)
{
	unsigned sel = take(b);
	uint32_t v = take32(b);
	switch (sel % 4) {
	case 0: break; /* the default */
	case 1: *f = v % 4096; break;
	case 2: *f = (int64_t)v << ((sel >> 2) % 32); break;
	case 3: *f = -(int64_t)v; break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct bytes b = {data, size};
	struct model_gen g;
	model_gen_defaults(&g, (enum model_gen_kind)(take(&b) % GEN_COUNT));
	int64_t *fields[] = {&g.hidden, &g.layers, &g.heads, &g.kv_heads,
	                     &g.seq,    &g.vocab,  &g.micro_batch, &g.ffn};
	for (size_t i = 0; i < SL_COUNTOF(fields); i++)
		size_field(&b, fields[i]);
	/* Layers cost time in proportion and every layer runs the same code;
	 * the generator allows 10,000 and the kinds default to 24 or 32. Most
	 * runs keep at most 8 so that the fuzzer explores the sizes; when the
	 * next byte is 255, from 9 to 256 (an input that has run out reads 0, so
	 * a short input is a short run). Graphs of up to 10,000 layers (some
	 * 100 MB zeroed under the sanitizers, a second each; the fuzzer's
	 * mutations produce 255 often) took most of the time: 18 to 91 inputs a
	 * second. The 10,000-layer limit itself is read from files, which
	 * fuzz_model and fuzz_check reach. */
	if (g.layers > 8)
		g.layers = take(&b) == 255 ? 9 + g.layers % 248 : g.layers % 8 + 1;
	unsigned dt = take(&b);
	if (dt % 2)
		g.dtype = (enum dtype)(dt / 2 % (DT_COUNT + 1));
	g.bias = take(&b) & 1;
	g.dropout = take(&b) / 200.0;
	int64_t *moe[] = {&g.experts, &g.top_k, &g.shared_experts, &g.expert_ffn, &g.dense_layers};
	for (size_t i = 0; i < SL_COUNTOF(moe); i++)
		size_field(&b, moe[i]);
	g.capacity_factor = (double)take(&b) / 16.0 - 1;
	unsigned flags = take(&b);
	g.shared_expert_gate = flags & 1;
	g.qkv_bias = flags & 2;
	g.fused_qkv = flags & 4;
	g.fused_gate_up = flags & 8;
	g.qk_norm = flags & 16;
	size_field(&b, &g.head_dim);

	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct graph *gr = a ? graph_generate(a, &g, &d) : NULL;
	if (gr) {
		struct graph_totals t;
		int64_t params;
		graph_totals(gr, &t);
		SL_ASSERT(graph_params_fit(gr, &params));
		SL_ASSERT(t.parameters == params);
		SL_ASSERT(t.active_parameters >= 0 && t.active_parameters <= t.parameters);
	}
	fuzz_diags_done(&d);
	arena_free(a);
	return 0;
}
