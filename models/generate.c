/* generate.c — model generators: FFN (seed 000), Megatron MLP and
 * self-attention (seeds 001, 003), pre-LN transformer blocks, GPT and
 * LLaMA (grouped-query attention, SwiGLU, RMSNorm) from a few
 * hyper-parameters. Graphs go through the same builder as model files, so
 * shapes, FLOPs and bytes come from the one catalog.
 *
 * Units: sizes in elements (hidden, ffn, vocab, seq); B = micro_batch.
 * Op and parameter names are documented in docs/formats.md
 * ("layers.{i}.attn.q.matmul", ...). No hot path: a GPT-3 graph is ~3000
 * ops built once.
 */
#include "models-int.h"

#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

const char *const model_gen_names[GEN_COUNT] = {"ffn", "mlp", "attention", "transformer", "gpt",
                                                "llama"};
_Static_assert(GEN_COUNT == 6, "model_gen_names must list every generator");

#define MAX_LAYERS 10000

struct gen {
	struct graph_builder b;
	struct arena *a;
	const struct model_gen *p;
	struct diag_list *diags;
	const struct jv *gen;
	struct op_site site;
	int64_t B, s, h, a_heads, kv, d, ffn, V;
	int64_t E, k, C, ef;       /* MoE: experts, top-k, slots per expert, expert ffn */
	int64_t qr, kvr, dn, dr, dv; /* MLA (kvr > 0): latent ranks and head widths */
	enum dtype dt;
	bool llama;
	bool qk_norm;                 /* the model's qk_norm, where its kind has it */
};

/* ------------------------------------------------------------- defaults */

void model_gen_defaults(struct model_gen *g, enum model_gen_kind kind)
{
	SL_ASSERT(kind >= 0 && kind < GEN_COUNT);
	memset(g, 0, sizeof(*g));
	g->kind = kind;
	if (kind == GEN_FFN) {
		g->hidden = 64;
		g->micro_batch = 64;
		g->dtype = DT_FP32;
		g->bias = true;
		return;
	}
	if (kind == GEN_LLAMA) {
		/* LLaMA-2 7B (Touvron et al. 2023, Table 1 and the released config). */
		g->hidden = 4096;
		g->layers = 32;
		g->heads = 32;
		g->seq = 4096;
		g->vocab = 32000;
		g->micro_batch = 1;
		g->dtype = DT_BF16;
		g->bias = false;
		g->dropout = 0;
		return;
	}
	/* GPT-2 medium sized (Megatron-LM's 345M example: 24 x 1024, 16 heads). */
	g->hidden = 1024;
	g->layers = 24;
	g->heads = 16;
	g->seq = 1024;
	g->vocab = 51200;
	g->micro_batch = 1;
	g->dtype = DT_BF16;
	g->bias = true;
	g->dropout = 0.1;
}

const char *const *model_gen_fields(enum model_gen_kind kind)
{
	static const char *const ffn[] = {"kind", "hidden", "micro_batch", "dtype", NULL};
	static const char *const mlp[] = {"kind", "hidden", "ffn", "seq", "micro_batch", "dtype",
	                                  "bias", "dropout", NULL};
	static const char *const attention[] = {"kind", "hidden", "heads", "seq", "micro_batch",
	                                        "dtype", "bias", "dropout", NULL};
	static const char *const transformer[] = {"kind", "hidden", "layers", "heads", "ffn", "seq",
	                                          "micro_batch", "dtype", "bias", "dropout", NULL};
	static const char *const gpt[] = {"kind", "hidden", "layers", "heads", "ffn", "seq", "vocab",
	                                  "micro_batch", "dtype", "bias", "dropout",
	                                  "tie_embeddings", "parallel_residual", "rotary",
	                                  "max_positions", "rope_theta", "norm_eps", "fused_qkv",
	                                  NULL};
	static const char *const llama[] = {"kind", "hidden", "layers", "heads", "kv_heads", "ffn",
	                                    "seq", "vocab", "micro_batch", "dtype",
	                                    "tie_embeddings", "qkv_bias", "experts", "top_k",
	                                    "shared_experts", "expert_ffn", "capacity_factor",
	                                    "dense_layers", "shared_expert_gate", "rope_theta",
	                                    "norm_eps", "sigmoid_router", "expert_groups",
	                                    "group_top_k", "q_lora_rank", "kv_lora_rank",
	                                    "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim",
	                                    "mtp_layers", "fused_qkv", "fused_gate_up", "head_dim",
	                                    "qk_norm", NULL};
	static const char *const *const all[GEN_COUNT] = {ffn, mlp, attention, transformer, gpt,
	                                                   llama};
	SL_ASSERT(kind >= 0 && kind < GEN_COUNT);
	return all[kind];
}

/* ------------------------------------------------------------ validation */

static void gen_err(struct gen *G, const char *field, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static void gen_err(struct gen *G, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (G->gen) {
		struct jv m;
		if (!jv_get(G->gen, field, &m))
			m = *G->gen;
		jv_error(&m, "%s", msg);
	} else {
		char path[64];
		snprintf(path, sizeof path, "generator.%s", field);
		diag_add(G->diags, DIAG_ERROR, NULL, 0, path, "%s", msg);
	}
}

bool model_gen_uses(enum model_gen_kind kind, const char *field)
{
	for (const char *const *f = model_gen_fields(kind); *f; f++)
		if (!strcmp(*f, field))
			return true;
	return false;
}

static bool check_positive(struct gen *G, const char *field, int64_t v)
{
	if (!model_gen_uses(G->p->kind, field) || v >= 1)
		return true;
	gen_err(G, field, "expected a positive integer, got %lld", (long long)v);
	return false;
}

/* a * b into *out when it stays within one tensor's limit. */
static bool fits(int64_t a, int64_t b, int64_t *out)
{
	return util_mul_i64(a, b, out) && *out <= GRAPH_MAX_ELEMENTS;
}

/* The largest tensors (activations B·s·max(h, ffn, V, heads·head_dim),
 * attention scores B·heads·s², weights h·max(ffn, V); the fused
 * projections' (heads + 2 kv_heads)·head_dim and 2 ffn) must stay within
 * GRAPH_MAX_ELEMENTS. */
static bool sizes_fit(struct gen *G)
{
	int64_t bs, x;
	int64_t wide = G->ffn > G->h ? G->ffn : G->h;
	if (G->V > wide)
		wide = G->V;
	/* the queries' columns a·d and the fused projection's (a + 2 kv)·d,
	 * where the kind has heads (kv is unchecked otherwise) */
	int64_t ad = 0, qkv = 0;
	bool ok = !model_gen_uses(G->p->kind, "heads") ||
	          (G->kv <= GRAPH_MAX_ELEMENTS && fits(G->a_heads, G->d, &ad) &&
	           fits(G->a_heads + 2 * G->kv, G->d, &qkv));
	if (ad > wide)
		wide = ad;
	if (G->p->fused_qkv && qkv > wide)
		wide = qkv;
	if (G->p->fused_gate_up && 2 * G->ffn > wide)
		wide = 2 * G->ffn;
	ok = ok && fits(G->B, G->s, &bs) && fits(bs, wide, &x) && fits(bs, G->a_heads, &x) &&
	     fits(x, G->s, &x) && fits(G->h, wide, &x) && fits(G->a_heads, G->d, &x) &&
	     fits(x, G->h, &x);
	if (!ok)
		gen_err(G, "hidden", "the model's largest tensors would have more than 2^53 (%lld) "
		        "elements", (long long)GRAPH_MAX_ELEMENTS);
	return ok;
}

/* Upper bounds of the size parameters, each well beyond published models
 * (hidden 12,288 in GPT-3 and 25,600 in Megatron-LM's 1T model; vocabularies
 * of 32,000 to 256,000; contexts of up to a million tokens), so that
 * products of a few of them stay exact. */
static const struct {
	const char *field;
	int64_t max;
	const char *max_text;
} gen_limits[] = {
	{"hidden", (int64_t)1 << 20, "2^20"},
	{"ffn", (int64_t)1 << 22, "2^22"},
	{"heads", (int64_t)1 << 16, "2^16"},
	{"kv_heads", (int64_t)1 << 16, "2^16"},
	{"seq", (int64_t)1 << 24, "2^24"},
	{"vocab", (int64_t)1 << 24, "2^24"},
	{"micro_batch", (int64_t)1 << 20, "2^20"},
};

static bool check_limits(struct gen *G)
{
	const struct model_gen *p = G->p;
	const int64_t values[] = {p->hidden, p->ffn, p->heads, p->kv_heads, p->seq, p->vocab,
	                          p->micro_batch};
	_Static_assert(SL_COUNTOF(values) == SL_COUNTOF(gen_limits), "gen_limits out of step");
	bool ok = true;
	for (size_t i = 0; i < SL_COUNTOF(gen_limits); i++) {
		if (!model_gen_uses(p->kind, gen_limits[i].field) || values[i] <= gen_limits[i].max)
			continue;
		gen_err(G, gen_limits[i].field, "expected at most %lld (%s), got %lld; published "
		        "models stay far below", (long long)gen_limits[i].max, gen_limits[i].max_text,
		        (long long)values[i]);
		ok = false;
	}
	return ok;
}

static int64_t llama_ffn(int64_t h)
{
	/* LLaMA's rule: 2/3 of 4h, rounded up to a multiple of 256. */
	int64_t f = 8 * h / 3;
	return (f + 255) / 256 * 256;
}

int64_t model_gen_ffn(const struct model_gen *g)
{
	if (!model_gen_uses(g->kind, "ffn"))
		return 0;
	return g->ffn > 0 ? g->ffn : g->kind == GEN_LLAMA ? llama_ffn(g->hidden) : 4 * g->hidden;
}

/* The mixture-of-experts members (LLaMA only): top_k in 1..experts,
 * counts within the limits of the other sizes, a positive capacity
 * factor; C = B x ceil(capacity_factor x s x top_k / experts): the
 * capacity is counted per sequence, so that a split of the batch splits
 * the slots alike (token-local dispatch, docs/moe-cp.md). */
static bool moe_check(struct gen *G)
{
	const struct model_gen *p = G->p;
	if (!model_gen_uses(p->kind, "experts") || (p->experts == 0 && p->top_k == 0 &&
	                                  p->shared_experts == 0 && p->expert_ffn == 0 &&
	                                  p->dense_layers == 0 && !p->shared_expert_gate &&
	                                  !p->sigmoid_router && p->expert_groups == 0 &&
	                                  p->group_top_k == 0))
		return true;
	bool ok = true;
	if (p->experts < 1 || p->experts > ((int64_t)1 << 16)) {
		gen_err(G, "experts", "expected 1 to 65536 experts with top_k, shared_experts or "
		        "expert_ffn, got %lld", (long long)p->experts);
		return false;
	}
	if (p->top_k < 1 || p->top_k > p->experts) {
		gen_err(G, "top_k", "expected 1 to experts (%lld), got %lld", (long long)p->experts,
		        (long long)p->top_k);
		ok = false;
	}
	if (p->shared_experts < 0 || p->shared_experts > ((int64_t)1 << 16)) {
		gen_err(G, "shared_experts", "expected 0 to 65536, got %lld",
		        (long long)p->shared_experts);
		ok = false;
	}
	if (p->expert_ffn < 0 || p->expert_ffn > ((int64_t)1 << 22)) {
		gen_err(G, "expert_ffn", "expected 1 to 2^22 (0: ffn), got %lld",
		        (long long)p->expert_ffn);
		ok = false;
	}
	if (p->dense_layers < 0 || p->dense_layers >= p->layers) {
		gen_err(G, "dense_layers", "expected 0 to layers - 1 (%lld): at least one layer has "
		        "the experts, got %lld", (long long)(p->layers - 1), (long long)p->dense_layers);
		ok = false;
	}
	if (p->shared_expert_gate && p->shared_experts < 1) {
		gen_err(G, "shared_expert_gate", "gates the shared experts' output, but there are "
		        "none (set shared_experts)");
		ok = false;
	}
	if (p->expert_groups < 0 || (p->expert_groups > 0 && p->experts % p->expert_groups)) {
		gen_err(G, "expert_groups", "expected 0 (no groups) or a divisor of experts (%lld), "
		        "got %lld", (long long)p->experts, (long long)p->expert_groups);
		ok = false;
	} else if (p->group_top_k < 0 || p->group_top_k > p->expert_groups ||
	           (p->expert_groups > 0 && p->group_top_k < 1) ||
	           (p->expert_groups > 0 &&
	            p->group_top_k * (p->experts / p->expert_groups) < p->top_k)) {
		gen_err(G, "group_top_k", "expected 1 to expert_groups (%lld) with expert_groups, "
		        "enough groups to hold top_k (%lld) experts, 0 without; got %lld",
		        (long long)p->expert_groups, (long long)p->top_k, (long long)p->group_top_k);
		ok = false;
	}
	double cf = p->capacity_factor > 0 ? p->capacity_factor : 1;
	if (p->capacity_factor < 0 || !(cf <= 64)) {
		gen_err(G, "capacity_factor", "expected a number above 0 and at most 64, got %g",
		        p->capacity_factor);
		ok = false;
	}
	if (!ok)
		return false;
	G->E = p->experts;
	G->k = p->top_k;
	G->ef = p->expert_ffn > 0 ? p->expert_ffn : G->ffn;
	G->C = G->B * (int64_t)ceil(cf * (double)G->s * (double)G->k / (double)G->E);
	int64_t x;
	if (!fits(G->E, G->C, &x) || !fits(x, G->ef > G->h ? G->ef : G->h, &x) ||
	    !fits(G->E, G->h, &x) || !fits(x, G->ef, &x)) {
		gen_err(G, "experts", "the experts' tensors would have more than 2^53 (%lld) "
		        "elements", (long long)GRAPH_MAX_ELEMENTS);
		return false;
	}
	return true;
}

/* Multi-head latent attention (LLaMA only): with kv_lora_rank > 0 every
 * head width positive, q_lora_rank 0 (a plain query projection) or
 * positive; without it none of the MLA members. The widest MLA tensors
 * (B·s·heads·(nope + rope), the latent up-projections) within the limit.
 * mtp_layers 0 to 16 (DeepSeek-V3 trains with 1). */
static bool mla_check(struct gen *G)
{
	const struct model_gen *p = G->p;
	if (!model_gen_uses(p->kind, "kv_lora_rank"))
		return true;
	const char *names[] = {"q_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim",
	                       "v_head_dim"};
	const int64_t v[] = {p->q_lora_rank, p->qk_rope_head_dim, p->qk_nope_head_dim,
	                     p->v_head_dim};
	bool ok = true;
	if (p->mtp_layers < 0 || p->mtp_layers > 16) {
		gen_err(G, "mtp_layers", "expected 0 to 16 prediction depths, got %lld",
		        (long long)p->mtp_layers);
		ok = false;
	}
	if (p->kv_lora_rank < 0 || p->kv_lora_rank > ((int64_t)1 << 20)) {
		gen_err(G, "kv_lora_rank", "expected 0 (no latent attention) to 2^20, got %lld",
		        (long long)p->kv_lora_rank);
		return false;
	}
	for (size_t i = 0; i < SL_COUNTOF(v); i++) {
		bool need = p->kv_lora_rank > 0 && i > 0;
		if (p->kv_lora_rank == 0 && v[i] != 0) {
			gen_err(G, names[i], "belongs to multi-head latent attention: set kv_lora_rank "
			        "too, got %lld without it", (long long)v[i]);
			ok = false;
		} else if (v[i] < (need ? 1 : 0) || v[i] > ((int64_t)1 << 20)) {
			gen_err(G, names[i], "expected %s to 2^20, got %lld", need ? "1" : "0",
			        (long long)v[i]);
			ok = false;
		}
	}
	if (p->kv_lora_rank > 0 && p->fused_qkv) {
		gen_err(G, "fused_qkv", "multi-head latent attention has no fused query-key-value "
		        "projection: its queries and its keys and values come from separate latents");
		ok = false;
	}
	if (!ok || p->kv_lora_rank == 0)
		return ok;
	G->qr = p->q_lora_rank;
	G->kvr = p->kv_lora_rank;
	G->dn = p->qk_nope_head_dim;
	G->dr = p->qk_rope_head_dim;
	G->dv = p->v_head_dim;
	int64_t bs, x, wide = G->dn + G->dr > G->dv ? G->dn + G->dr : G->dv;
	if (!fits(G->B, G->s, &bs) || !fits(bs, G->a_heads, &x) || !fits(x, wide, &x) ||
	    !fits(G->a_heads, wide, &x) || !fits(x, G->h > G->kvr ? G->h : G->kvr, &x) ||
	    (G->qr > 0 && !fits(x, G->qr, &x))) {
		gen_err(G, "kv_lora_rank", "the latent attention's tensors would have more than 2^53 "
		        "(%lld) elements", (long long)GRAPH_MAX_ELEMENTS);
		return false;
	}
	return true;
}

static bool gen_check(struct gen *G)
{
	const struct model_gen *p = G->p;
	bool ok = check_positive(G, "hidden", p->hidden) && check_positive(G, "micro_batch", p->micro_batch);
	ok = check_positive(G, "layers", p->layers) && ok;
	ok = check_positive(G, "heads", p->heads) && ok;
	ok = check_positive(G, "seq", p->seq) && ok;
	ok = check_positive(G, "vocab", p->vocab) && ok;
	if (p->ffn < 0 && model_gen_uses(p->kind, "ffn"))
		ok = check_positive(G, "ffn", p->ffn) && ok;
	if (p->kv_heads < 0 && model_gen_uses(p->kind, "kv_heads"))
		ok = check_positive(G, "kv_heads", p->kv_heads) && ok;
	if (p->max_positions < 0 && model_gen_uses(p->kind, "max_positions"))
		ok = check_positive(G, "max_positions", p->max_positions) && ok;
	if (p->max_positions > 0 && model_gen_uses(p->kind, "max_positions") && !p->rotary &&
	    p->max_positions < p->seq) {
		gen_err(G, "max_positions", "a position table of %lld rows cannot cover seq %lld",
		        (long long)p->max_positions, (long long)p->seq);
		ok = false;
	}
	if (model_gen_uses(p->kind, "layers") && p->layers > MAX_LAYERS) {
		gen_err(G, "layers", "expected at most %d layers, got %lld", MAX_LAYERS,
		        (long long)p->layers);
		ok = false;
	}
	ok = check_limits(G) && ok;
	if (p->dropout < 0 || p->dropout >= 1) {
		gen_err(G, "dropout", "expected a number >= 0 and below 1, got %g", p->dropout);
		ok = false;
	}
	if (p->dtype < 0 || p->dtype >= DT_COUNT) {
		gen_err(G, "dtype", "unknown dtype %d", (int)p->dtype);
		ok = false;
	}
	if (!ok)
		return false;
	bool heads = model_gen_uses(p->kind, "heads");
	/* a head's width other than hidden / heads (llama only) */
	int64_t head_dim = model_gen_uses(p->kind, "head_dim") ? p->head_dim : 0;
	if (head_dim > 0 && p->kv_lora_rank > 0) {
		gen_err(G, "head_dim", "head_dim is not for multi-head latent attention "
		        "(kv_lora_rank), whose heads are qk_nope_head_dim + qk_rope_head_dim and "
		        "v_head_dim wide");
		ok = false;
	}
	if (p->qk_norm && p->kv_lora_rank > 0) {
		gen_err(G, "qk_norm", "qk_norm is not for multi-head latent attention "
		        "(kv_lora_rank), which normalises its latents instead");
		ok = false;
	}
	if (head_dim < 0 || head_dim > (int64_t)1 << 16) {
		gen_err(G, "head_dim", "expected 1 to 2^16 (0: hidden / heads), got %lld",
		        (long long)head_dim);
		ok = false;
	}
	if (heads && head_dim == 0 && p->hidden % p->heads != 0) {
		gen_err(G, "heads", "heads (%lld) must divide hidden (%lld), or head_dim give a "
		        "head's width", (long long)p->heads, (long long)p->hidden);
		ok = false;
	}
	G->kv = p->kv_heads > 0 && model_gen_uses(p->kind, "kv_heads") ? p->kv_heads : p->heads;
	if (heads && p->heads % G->kv != 0) {
		gen_err(G, "kv_heads", "kv_heads (%lld) must divide heads (%lld)", (long long)G->kv,
		        (long long)p->heads);
		ok = false;
	}
	if (!ok)
		return false;
	G->B = p->micro_batch;
	G->s = model_gen_uses(p->kind, "seq") ? p->seq : 1;
	G->h = p->hidden;
	G->a_heads = heads ? p->heads : 1;
	G->d = head_dim > 0 ? head_dim : G->h / G->a_heads;
	G->qk_norm = p->qk_norm && model_gen_uses(p->kind, "qk_norm");
	G->ffn = model_gen_ffn(p);
	G->V = model_gen_uses(p->kind, "vocab") ? p->vocab : 1;
	G->dt = p->dtype;
	G->llama = p->kind == GEN_LLAMA;
	ok = moe_check(G);
	if (!mla_check(G) || !ok)
		return false;
	return sizes_fit(G);
}

/* --------------------------------------------------------------- helpers */

/* Generated names are short; a longer one is a bug here. */
static void name_fmt(char *buf, size_t size, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static void name_fmt(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	SL_ASSERT(n >= 0 && (size_t)n < size);
}

static int emit(struct gen *G, enum op_kind k, const char *name, const struct op_attrs *at,
                int n_in, const int *in)
{
	struct op_attrs dflt;
	if (!at) {
		op_attrs_default(k, &dflt);
		at = &dflt;
	}
	G->site.name = name;
	return graph_builder_op(&G->b, k, name, in, n_in, at, 0, &G->site);
}

static int op1(struct gen *G, enum op_kind k, const char *p, const char *sfx, int x,
               const struct op_attrs *at)
{
	char name[256];
	name_fmt(name, sizeof name, "%s%s", p, sfx);
	return emit(G, k, name, at, 1, &x);
}

static int op2(struct gen *G, enum op_kind k, const char *p, const char *sfx, int x, int y,
               const struct op_attrs *at)
{
	char name[256];
	name_fmt(name, sizeof name, "%s%s", p, sfx);
	int in[2] = {x, y};
	return emit(G, k, name, at, 2, in);
}

static int op3(struct gen *G, enum op_kind k, const char *p, const char *sfx, int x, int y,
               int z)
{
	char name[256];
	name_fmt(name, sizeof name, "%s%s", p, sfx);
	int in[3] = {x, y, z};
	return emit(G, k, name, NULL, 3, in);
}

static int tensor(struct gen *G, enum tensor_role role, const char *p, const char *sfx,
                  enum dtype dt, int rank, int64_t d0, int64_t d1)
{
	char name[256];
	name_fmt(name, sizeof name, "%s%s", p, sfx);
	int64_t dims[2] = {d0, d1};
	return graph_builder_tensor(&G->b, name, role, dt, rank, dims);
}

static int param(struct gen *G, const char *p, const char *sfx, int rank, int64_t d0, int64_t d1)
{
	return tensor(G, TENSOR_PARAM, p, sfx, G->dt, rank, d0, d1);
}

/* "p.matmul" with "p.weight" [in,out], then "p.bias_add" with "p.bias". */
static int linear(struct gen *G, const char *p, int x, int64_t in, int64_t out, bool bias)
{
	char q[256];
	name_fmt(q, sizeof q, "%s.", p);
	int y = op2(G, OP_MATMUL, q, "matmul", x, param(G, q, "weight", 2, in, out), NULL);
	if (bias)
		y = op2(G, OP_BIASADD, q, "bias_add", y, param(G, q, "bias", 1, out, 0), NULL);
	return y;
}

static int dropout(struct gen *G, const char *p, const char *sfx, int x)
{
	if (G->p->dropout <= 0 || G->llama)
		return x;
	struct op_attrs at;
	op_attrs_default(OP_DROPOUT, &at);
	at.keep_prob = 1 - G->p->dropout;
	return op1(G, OP_DROPOUT, p, sfx, x, &at);
}

static int reshape(struct gen *G, const char *p, const char *sfx, int x, int n, const int64_t *d)
{
	struct op_attrs at;
	op_attrs_default(OP_RESHAPE, &at);
	at.n_shape = n;
	memcpy(at.shape, d, (size_t)n * sizeof(*d));
	return op1(G, OP_RESHAPE, p, sfx, x, &at);
}

static int transpose_n(struct gen *G, const char *p, const char *sfx, int x, int n,
                       const int64_t *perm)
{
	struct op_attrs at;
	op_attrs_default(OP_TRANSPOSE, &at);
	at.n_shape = n;
	memcpy(at.perm, perm, (size_t)n * sizeof(*perm));
	return op1(G, OP_TRANSPOSE, p, sfx, x, &at);
}

static int transpose(struct gen *G, const char *p, const char *sfx, int x, const int64_t perm[4])
{
	return transpose_n(G, p, sfx, x, 4, perm);
}

/* LayerNorm (GPT) or RMSNorm (LLaMA) over the hidden axis: "name",
 * "name.gamma" (and "name.beta"). */
static int norm(struct gen *G, const char *name, int x)
{
	int g = param(G, name, ".gamma", 1, G->h, 0);
	if (G->llama)
		return op2(G, OP_RMSNORM, name, "", x, g, NULL);
	int in[3] = {x, g, param(G, name, ".beta", 1, G->h, 0)};
	return emit(G, OP_LAYERNORM, name, NULL, 3, in);
}

/* RMSNorm over a latent of width w: "name", "name.gamma". */
static int norm_w(struct gen *G, const char *name, int x, int64_t w)
{
	return op2(G, OP_RMSNORM, name, "", x, param(G, name, ".gamma", 1, w, 0), NULL);
}

/* ---------------------------------------------------------------- blocks */

/* Multi-head latent attention on x [B*s, h] (DeepSeek-V2 §2.1, DeepSeek-V3
 * §2.1.1; transformers' DeepseekV3Attention without the inference-time
 * absorption): queries through "p.q_a" [h, qr], RMSNorm "p.q_a_norm" and
 * the up-projections "p.q_b_nope" [qr, a·dn] and "p.q_b_rope" [qr, a·dr]
 * (one [qr, a(dn+dr)] matrix in the checkpoint, split by columns here);
 * keys and values through the latent "p.kv_a" [h, kvr] with RMSNorm
 * "p.kv_a_norm", up-projected by "p.k_b" [kvr, a·dn] and "p.v_b"
 * [kvr, a·dv]; the rotary key "p.k_rope" [h, dr] (the checkpoint's
 * kv_a_proj_with_mqa holds kv_a and k_rope as one [h, kvr + dr]) is one
 * head shared by all, so its scores are a BatchMatMul of every query row
 * (sequence major, heads minor, as grouped-query attention) by it, added
 * to the per-head scores of the non-rotary parts; the output "p.out"
 * [a·dv, h]. Parameters and FLOPs as the published layer; the matrices
 * split by columns change neither. */
static int mla_attention(struct gen *G, const char *p, int x)
{
	int64_t B = G->B, s = G->s, a = G->a_heads, dn = G->dn, dr = G->dr, dv = G->dv;
	static const int64_t to_heads[4] = {0, 2, 1, 3}, to_keys[4] = {0, 2, 3, 1};
	char n[256];
	int qx = x;
	int64_t qin = G->h;
	if (G->qr > 0) {
		name_fmt(n, sizeof n, "%sq_a", p);
		qx = linear(G, n, x, G->h, G->qr, false);
		name_fmt(n, sizeof n, "%sq_a_norm", p);
		qx = norm_w(G, n, qx, G->qr);
		qin = G->qr;
	}
	name_fmt(n, sizeof n, "%s%s", p, G->qr > 0 ? "q_b_nope" : "q_nope");
	int qn = linear(G, n, qx, qin, a * dn, false);
	name_fmt(n, sizeof n, "%s%s", p, G->qr > 0 ? "q_b_rope" : "q_rope");
	int qp = linear(G, n, qx, qin, a * dr, false);
	name_fmt(n, sizeof n, "%skv_a", p);
	int c = linear(G, n, x, G->h, G->kvr, false);
	name_fmt(n, sizeof n, "%skv_a_norm", p);
	c = norm_w(G, n, c, G->kvr);
	name_fmt(n, sizeof n, "%sk_rope", p);
	int kp = linear(G, n, x, G->h, dr, false);
	name_fmt(n, sizeof n, "%sk_b", p);
	int kn = linear(G, n, c, G->kvr, a * dn, false);
	name_fmt(n, sizeof n, "%sv_b", p);
	int v = linear(G, n, c, G->kvr, a * dv, false);

	qn = reshape(G, p, "q_nope.reshape", qn, 4, (int64_t[]){B, s, a, dn});
	qn = transpose(G, p, "q_nope.transpose", qn, to_heads);
	kn = reshape(G, p, "k_nope.reshape", kn, 4, (int64_t[]){B, s, a, dn});
	kn = transpose(G, p, "k_nope.transpose", kn, to_keys);
	v = reshape(G, p, "v.reshape", v, 4, (int64_t[]){B, s, a, dv});
	v = transpose(G, p, "v.transpose", v, to_heads);
	/* the rotary part: rows [B, s·a, dr] by the shared key [B, dr, s] */
	qp = reshape(G, p, "q_rope.reshape", qp, 3, (int64_t[]){B, s * a, dr});
	kp = reshape(G, p, "k_rope.reshape", kp, 3, (int64_t[]){B, s, dr});
	kp = transpose_n(G, p, "k_rope.transpose", kp, 3, (int64_t[]){0, 2, 1});
	int sr = op2(G, OP_BATCHMATMUL, p, "scores_rope", qp, kp, NULL);
	sr = reshape(G, p, "scores_rope.reshape", sr, 4, (int64_t[]){B, s, a, s});
	sr = transpose(G, p, "scores_rope.transpose", sr, to_heads);
	int sc = op2(G, OP_BATCHMATMUL, p, "scores", qn, kn, NULL);
	sc = op2(G, OP_ADD, p, "scores_add", sc, sr, NULL);
	sc = op1(G, OP_SOFTMAX, p, "softmax", sc, NULL);
	int ctx = op2(G, OP_BATCHMATMUL, p, "context", sc, v, NULL);
	ctx = transpose(G, p, "context.transpose", ctx, to_heads);
	ctx = reshape(G, p, "context.reshape", ctx, 2, (int64_t[]){B * s, a * dv});
	name_fmt(n, sizeof n, "%sout", p);
	return linear(G, n, ctx, a * dv, G->h, false);
}

/* A Reshape of x to d, or x itself when it has that shape already (the
 * fused projection's views are shaped [B, s, kv, ...] from the start). */
static int reshape_to(struct gen *G, const char *p, const char *sfx, int x, int n,
                      const int64_t *d)
{
	const struct tensor *t = x >= 0 ? &G->b.g->tensors[x] : NULL;
	if (t && t->rank == n && !memcmp(t->dims, d, (size_t)n * sizeof(*d)))
		return x;
	return reshape(G, p, sfx, x, n, d);
}

/* The view "p.<sfx>" of x keeping [from, to) of its last dimension: a
 * StridedSlice marked as a view (torch.split, torch.chunk), which moves
 * nothing. */
static int column_view(struct gen *G, const char *p, const char *sfx, int x, int64_t from,
                       int64_t to)
{
	if (x < 0)
		return -1;
	const struct tensor *t = &G->b.g->tensors[x];
	struct op_attrs at;
	op_attrs_default(OP_STRIDEDSLICE, &at);
	at.n_shape = t->rank;
	memcpy(at.end, t->dims, (size_t)t->rank * sizeof(*t->dims));
	at.begin[t->rank - 1] = from;
	at.end[t->rank - 1] = to;
	at.view = true;
	return op1(G, OP_STRIDEDSLICE, p, sfx, x, &at);
}

/* Fused QKV (generator member fused_qkv), as Megatron-LM runs it
 * (megatron/core/transformer/attention.py at core_v0.8.0,
 * SelfAttention.get_query_key_value_tensors; megatron/model/transformer.py
 * at de7dc40, ParallelAttention's query_key_value): one projection "p.qkv"
 * [h, kv (g + 2) d] of x [B*s, h], its columns grouped per key/value head
 * (the g query heads of the group, then its key, then its value), viewed
 * as [B, s, kv, (g + 2) d] ("p.qkv.reshape") and split by views into
 * "p.q.split" [B, s, kv, g d], "p.k.split" and "p.v.split" [B, s, kv, d].
 * A column-parallel cut of the projection lands on whole groups (the kv
 * dimension), so the views need no communication. The weight holds the
 * three projections' elements, the GEMM their FLOPs. */
static void qkv_fused(struct gen *G, const char *p, int x, bool bias, int *q, int *k, int *v)
{
	int64_t B = G->B, s = G->s, kv = G->kv, d = G->d, g = G->a_heads / kv, w = (g + 2) * d;
	char n[256];
	name_fmt(n, sizeof n, "%sqkv", p);
	int y = linear(G, n, x, G->h, kv * w, bias);
	y = reshape(G, p, "qkv.reshape", y, 4, (int64_t[]){B, s, kv, w});
	*q = column_view(G, p, "q.split", y, 0, g * d);
	*k = column_view(G, p, "k.split", y, g * d, (g + 1) * d);
	*v = column_view(G, p, "v.split", y, (g + 1) * d, w);
}

/* qk_norm: an RMSNorm "p" + sfx over each head of x (its last axis,
 * head_dim wide), or x itself without qk_norm. */
static int head_norm(struct gen *G, const char *p, const char *sfx, int x)
{
	if (!G->qk_norm)
		return x;
	char n[256];
	name_fmt(n, sizeof n, "%s%s", p, sfx);
	return norm_w(G, n, x, G->d);
}

/* Self-attention on x [B*s, h]; grouped-query when kv < heads. */
static int attention(struct gen *G, const char *p, int x)
{
	int64_t B = G->B, s = G->s, a = G->a_heads, kv = G->kv, d = G->d, ad = a * d;
	bool bias = G->p->bias && !G->llama, grouped = kv < a;
	bool qkv_bias = bias || (G->llama && G->p->qkv_bias);
	static const int64_t to_heads[4] = {0, 2, 1, 3}, to_keys[4] = {0, 2, 3, 1};
	char n[256];
	int64_t g = a / kv;
	int q, k, v;
	if (G->p->fused_qkv) {
		qkv_fused(G, p, x, qkv_bias, &q, &k, &v);
	} else {
		name_fmt(n, sizeof n, "%sq", p);
		q = linear(G, n, x, G->h, ad, qkv_bias);
		name_fmt(n, sizeof n, "%sk", p);
		k = linear(G, n, x, G->h, kv * d, qkv_bias);
		name_fmt(n, sizeof n, "%sv", p);
		v = linear(G, n, x, G->h, kv * d, qkv_bias);
	}

	/* Grouped: the queries of a key/value head's group as rows [s, g] with
	 * the sequence major, so that a cut of the sequence (context
	 * parallelism) lands on whole rows of every group. */
	static const int64_t swap5[5] = {0, 2, 1, 3, 4};
	if (grouped) {
		q = reshape(G, p, "q.reshape", q, 5, (int64_t[]){B, s, kv, g, d});
		q = head_norm(G, p, "q_norm", q);
		q = transpose_n(G, p, "q.transpose", q, 5, swap5);
		q = reshape(G, p, "q.group", q, 4, (int64_t[]){B, kv, s * g, d});
	} else {
		q = reshape_to(G, p, "q.reshape", q, 4, (int64_t[]){B, s, a, d});
		q = head_norm(G, p, "q_norm", q);
		q = transpose(G, p, "q.transpose", q, to_heads);
	}
	k = reshape_to(G, p, "k.reshape", k, 4, (int64_t[]){B, s, kv, d});
	k = head_norm(G, p, "k_norm", k);
	k = transpose(G, p, "k.transpose", k, to_keys);
	v = reshape_to(G, p, "v.reshape", v, 4, (int64_t[]){B, s, kv, d});
	v = transpose(G, p, "v.transpose", v, to_heads);

	int sc = op2(G, OP_BATCHMATMUL, p, "scores", q, k, NULL);
	sc = op1(G, OP_SOFTMAX, p, "softmax", sc, NULL);
	sc = dropout(G, p, "probs_dropout", sc);
	int c = op2(G, OP_BATCHMATMUL, p, "context", sc, v, NULL);
	if (grouped) {
		c = reshape(G, p, "context.ungroup", c, 5, (int64_t[]){B, kv, s, g, d});
		c = transpose_n(G, p, "context.transpose", c, 5, swap5);
	} else {
		c = transpose(G, p, "context.transpose", c, to_heads);
	}
	c = reshape(G, p, "context.reshape", c, 2, (int64_t[]){B * s, ad});
	name_fmt(n, sizeof n, "%sout", p);
	int o = linear(G, n, c, ad, G->h, bias);
	return dropout(G, p, "out.dropout", o);
}

/* "p.weight" [E, a, b] of one linear per expert, and the batched MatMul
 * "p.matmul" of x [E, C, a] by it. */
static int expert_linear(struct gen *G, const char *p, int x, int64_t a, int64_t b)
{
	char name[256];
	name_fmt(name, sizeof name, "%s.weight", p);
	int64_t dims[3] = {G->E, a, b};
	int w = graph_builder_tensor(&G->b, name, TENSOR_PARAM, G->dt, 3, dims);
	name_fmt(name, sizeof name, "%s.", p);
	return op2(G, OP_BATCHMATMUL, name, "matmul", x, w, NULL);
}

/* A mixture-of-experts MLP on x [T, h], T = B·s (docs/moe-cp.md): the
 * router "p.router" [h, E] and its Softmax "p.router.softmax" [T, E]; the
 * dispatch "p.dispatch", a MoEDispatch of x by the routing decision
 * "p.dispatch_index" [E, C] (an input: which tokens the top-k picks is
 * data, the graph carries its shape) into E x C slots, each rank's tokens
 * into its own share of the slots, viewed as "p.experts.input"; the experts "p.experts.gate/up/down" as
 * batched MatMuls over [E, h, f] weights with SiLU and Mul; the combine
 * "p.combine", a MoECombine of the slots back by "p.combine_index" [T, k],
 * weighted by the router's probabilities and summed over the k picks;
 * shared experts "p.shared.gate/up/down" of shared_experts x f, added
 * ("p.shared_add"). Planners cut the expert dimension E over an
 * expert-parallel group; the dispatch and combine then become AllToAlls. */
static int moe_mlp(struct gen *G, const char *p, int x)
{
	int64_t T = G->B * G->s, h = G->h, f = G->ef;
	char n[256];
	name_fmt(n, sizeof n, "%srouter", p);
	int r = linear(G, n, x, h, G->E, false);
	int probs;
	if (G->p->sigmoid_router) {
		/* DeepSeek-V3: sigmoid affinities weigh the picks; the picks rank
		 * them plus a per-expert bias "p.router.score_bias" [E] (its
		 * e_score_correction_bias), which nothing downstream reads. */
		probs = op1(G, OP_SIGMOID, p, "router.sigmoid", r, NULL);
		op2(G, OP_BIASADD, p, "router.score_bias_add", probs,
		    param(G, p, "router.score_bias", 1, G->E, 0), NULL);
	} else {
		probs = op1(G, OP_SOFTMAX, p, "router.softmax", r, NULL);
	}
	int di = tensor(G, TENSOR_INPUT, p, "dispatch_index", DT_INT32, 2, G->E, G->C);
	int slots = op2(G, OP_MOEDISPATCH, p, "dispatch", x, di, NULL);
	/* The slots as the experts receive them: a view, no work, read by both
	 * gate and up, so that an expert-parallel plan sends them once. */
	slots = reshape(G, p, "experts.input", slots, 3, (int64_t[]){G->E, G->C, h});
	name_fmt(n, sizeof n, "%sexperts.gate", p);
	int gate = expert_linear(G, n, slots, h, f);
	name_fmt(n, sizeof n, "%sexperts.up", p);
	int up = expert_linear(G, n, slots, h, f);
	gate = op1(G, OP_SILU, p, "experts.silu", gate, NULL);
	int y = op2(G, OP_MUL, p, "experts.mul", gate, up, NULL);
	name_fmt(n, sizeof n, "%sexperts.down", p);
	y = expert_linear(G, n, y, f, h);
	int ci = tensor(G, TENSOR_INPUT, p, "combine_index", DT_INT32, 2, T, G->k);
	y = op3(G, OP_MOECOMBINE, p, "combine", y, ci, probs);
	if (G->p->shared_experts > 0) {
		int64_t sf = G->p->shared_experts * f;
		name_fmt(n, sizeof n, "%sshared.gate", p);
		int sg = linear(G, n, x, h, sf, false);
		name_fmt(n, sizeof n, "%sshared.up", p);
		int su = linear(G, n, x, h, sf, false);
		sg = op1(G, OP_SILU, p, "shared.silu", sg, NULL);
		int sy = op2(G, OP_MUL, p, "shared.mul", sg, su, NULL);
		name_fmt(n, sizeof n, "%sshared.down", p);
		sy = linear(G, n, sy, sf, h, false);
		if (G->p->shared_expert_gate) {
			name_fmt(n, sizeof n, "%sshared_gate", p);
			int sw = linear(G, n, x, h, 1, false);
			sw = op1(G, OP_SIGMOID, p, "shared_gate.sigmoid", sw, NULL);
			sy = op2(G, OP_MUL, p, "shared_gate.mul", sy, sw, NULL);
		}
		y = op2(G, OP_ADD, p, "shared_add", y, sy, NULL);
	}
	return y;
}

/* GPT: fc1, GeLU, fc2, Dropout. LLaMA (SwiGLU): gate, up, SiLU, Mul, down;
 * a mixture of experts in layer i past the first dense_layers. */
static int mlp(struct gen *G, int64_t i, const char *p, int x)
{
	char n[256];
	if (G->E > 0 && i >= G->p->dense_layers)
		return moe_mlp(G, p, x);
	if (!G->llama) {
		name_fmt(n, sizeof n, "%sfc1", p);
		int y = linear(G, n, x, G->h, G->ffn, G->p->bias);
		y = op1(G, OP_GELU, p, "gelu", y, NULL);
		name_fmt(n, sizeof n, "%sfc2", p);
		y = linear(G, n, y, G->ffn, G->h, G->p->bias);
		return dropout(G, p, "dropout", y);
	}
	int gate, up;
	if (G->p->fused_gate_up) {
		/* Megatron-Core's linear_fc1 with gated_linear_unit (megatron/
		 * core/transformer/mlp.py at core_v0.8.0: one GEMM of 2 ffn
		 * columns, its output chunked into gate and up by views): here
		 * gate and up interleaved per column, viewed [B*s, ffn, 2], so
		 * that a column-parallel cut lands on ffn and a rank holds its
		 * gate columns with their up columns, as Megatron's per-rank
		 * [gate | up] does (a permutation of the columns: the same
		 * function, parameters and FLOPs) */
		int64_t T = G->B * G->s, f = G->ffn;
		name_fmt(n, sizeof n, "%sgate_up", p);
		int y = linear(G, n, x, G->h, 2 * f, false);
		y = reshape(G, p, "gate_up.reshape", y, 3, (int64_t[]){T, f, 2});
		gate = column_view(G, p, "gate.split", y, 0, 1);
		gate = reshape(G, p, "gate.reshape", gate, 2, (int64_t[]){T, f});
		up = column_view(G, p, "up.split", y, 1, 2);
		up = reshape(G, p, "up.reshape", up, 2, (int64_t[]){T, f});
	} else {
		name_fmt(n, sizeof n, "%sgate", p);
		gate = linear(G, n, x, G->h, G->ffn, false);
		name_fmt(n, sizeof n, "%sup", p);
		up = linear(G, n, x, G->h, G->ffn, false);
	}
	gate = op1(G, OP_SILU, p, "silu", gate, NULL);
	int y = op2(G, OP_MUL, p, "mul", gate, up, NULL);
	name_fmt(n, sizeof n, "%sdown", p);
	return linear(G, n, y, G->ffn, G->h, false);
}

/* Pre-LN block i on x [B*s, h]. With a parallel residual (GPT-NeoX) the
 * MLP's norm reads the block's input rather than the first residual sum:
 * residual2 = (x + attn(ln1(x))) + mlp(ln2(x)). */
static int layer(struct gen *G, int64_t i, int x)
{
	char p[64], n[96];
	name_fmt(p, sizeof p, "layers.%lld.", (long long)i);
	name_fmt(n, sizeof n, "%sln1", p);
	int y = norm(G, n, x);
	name_fmt(n, sizeof n, "%sattn.", p);
	y = G->kvr > 0 ? mla_attention(G, n, y) : attention(G, n, y);
	int r = op2(G, OP_ADD, p, "residual1", x, y, NULL);
	name_fmt(n, sizeof n, "%sln2", p);
	y = norm(G, n, G->p->kind == GEN_GPT && G->p->parallel_residual ? x : r);
	name_fmt(n, sizeof n, "%smlp.", p);
	y = mlp(G, i, n, y);
	return op2(G, OP_ADD, p, "residual2", r, y, NULL);
}

/* The transformer layers, one after another. Every layer adds the same ops
 * (past the first dense_layers of a mixture of experts), so once the first
 * of them is built the builder makes room for the rest and a few ops after
 * them in one allocation, instead of doubling its arrays again and again (a
 * 96-layer GPT-3 has ~3,000 ops of 480 bytes). */
static int layers(struct gen *G, int x)
{
	int64_t first = G->E > 0 ? G->p->dense_layers : 0;
	for (int64_t i = 0; i < G->p->layers && !G->b.oom; i++) {
		int ops = G->b.g->n_ops, tensors = G->b.g->n_tensors;
		x = layer(G, i, x);
		if (i == first && i + 1 < G->p->layers && !G->b.oom) {
			int64_t more = G->p->layers - 1 - i, tail = 64;
			int64_t n_ops = G->b.g->n_ops + (G->b.g->n_ops - ops) * more + tail;
			int64_t n_tensors = G->b.g->n_tensors + (G->b.g->n_tensors - tensors) * more + tail;
			if (n_ops <= INT_MAX && n_tensors <= INT_MAX)
				graph_builder_reserve(&G->b, (int)n_ops, (int)n_tensors);
		}
	}
	return x;
}

/* ------------------------------------------------------------ generators */

/* Seed 000: x -> Dense -> ReLU -> Dense, each Dense a MatMul and an Add. */
static void gen_ffn(struct gen *G)
{
	int64_t h = G->h;
	int x = tensor(G, TENSOR_INPUT, "x", "", G->dt, 2, G->B, h);
	int w1 = param(G, "dense1.weight", "", 2, h, h), b1 = param(G, "dense1.bias", "", 1, h, 0);
	int w2 = param(G, "dense2.weight", "", 2, h, h), b2 = param(G, "dense2.bias", "", 1, h, 0);
	int y = op2(G, OP_MATMUL, "dense1.matmul", "", x, w1, NULL);
	y = op2(G, OP_ADD, "dense1.add", "", y, b1, NULL);
	y = op1(G, OP_RELU, "relu", "", y, NULL);
	y = op2(G, OP_MATMUL, "dense2.matmul", "", y, w2, NULL);
	op2(G, OP_ADD, "dense2.add", "", y, b2, NULL);
}

/* GPT and LLaMA: embeddings, layers, final norm, LM head, loss. */
static void gen_lm(struct gen *G)
{
	int64_t B = G->B, s = G->s, h = G->h, V = G->V;
	int tokens = tensor(G, TENSOR_INPUT, "tokens", "", DT_INT32, 2, B, s);
	int x, wte = param(G, "embed.word.weight", "", 2, V, h);
	if (G->llama || G->p->rotary) {
		x = op2(G, OP_GATHER, "embed.word", "", wte, tokens, NULL);
		if (!G->llama)
			x = dropout(G, "embed.", "dropout", x);
	} else {
		int64_t rows = G->p->max_positions > 0 ? G->p->max_positions : s;
		int pos = tensor(G, TENSOR_INPUT, "positions", "", DT_INT32, 1, s, 0);
		int wpe = param(G, "embed.pos.weight", "", 2, rows, h);
		int we = op2(G, OP_GATHER, "embed.word", "", wte, tokens, NULL);
		int pe = op2(G, OP_GATHER, "embed.pos", "", wpe, pos, NULL);
		x = op2(G, OP_ADD, "embed.add", "", we, pe, NULL);
		x = dropout(G, "embed.", "dropout", x);
	}
	int labels = tensor(G, TENSOR_INPUT, "labels", "", DT_INT32, 1, B * s, 0);
	x = reshape(G, "embed.", "reshape", x, 2, (int64_t[]){B * s, h});
	x = layers(G, x);
	int h_prev = x;
	x = norm(G, "final_ln", x);
	struct op_attrs at;
	op_attrs_default(OP_MATMUL, &at);
	int logits, head = wte;
	bool tied = G->p->tie_embeddings ? G->p->tie_embeddings > 0 : !G->llama;
	if (!tied) {
		head = param(G, "lm_head.weight", "", 2, h, V);
		logits = op2(G, OP_MATMUL, "lm_head", "", x, head, &at);
	} else {
		at.transpose_b = true; /* weight tying: the word embedding [V,h] */
		logits = op2(G, OP_MATMUL, "lm_head", "", x, wte, &at);
	}
	int loss = op2(G, OP_SOFTMAXCROSSENTROPY, "loss", "", logits, labels, NULL);
	op1(G, OP_REDUCEMEAN, "loss", ".mean", loss, NULL);
	/* Multi-token prediction (DeepSeek-V3 §2.2, figure 3): depth j
	 * normalises the previous depth's hidden state ("mtp.{j}.hnorm"; the
	 * main model's last layer output for the first) and the embedding of
	 * the tokens j + 1 ahead ("mtp.{j}.tokens", looked up in the shared
	 * word embedding, "mtp.{j}.enorm"), projects the two halves of their
	 * concatenation with "mtp.{j}.eh_proj.h" and "mtp.{j}.eh_proj.e" [h, h]
	 * (the paper's M_k, [h, 2h], split by rows), adds them, runs one more
	 * layer ("layers.{L+j}.", numbered after the main ones as the
	 * checkpoint does) and its own norm "mtp.{j}.final_ln", and the shared
	 * output head into its loss "mtp.{j}.loss" against "mtp.{j}.labels". */
	for (int64_t j = 0; j < G->p->mtp_layers && !G->b.oom; j++) {
		char q[64], n[96];
		name_fmt(q, sizeof q, "mtp.%lld.", (long long)j);
		name_fmt(n, sizeof n, "%shnorm", q);
		int hn = norm(G, n, h_prev);
		int tk = tensor(G, TENSOR_INPUT, q, "tokens", DT_INT32, 2, B, s);
		int e = op2(G, OP_GATHER, q, "embed", wte, tk, NULL);
		e = reshape(G, q, "embed.reshape", e, 2, (int64_t[]){B * s, h});
		name_fmt(n, sizeof n, "%senorm", q);
		e = norm(G, n, e);
		name_fmt(n, sizeof n, "%seh_proj.h", q);
		int y = linear(G, n, hn, h, h, false);
		name_fmt(n, sizeof n, "%seh_proj.e", q);
		y = op2(G, OP_ADD, q, "eh_proj.add", y, linear(G, n, e, h, h, false), NULL);
		h_prev = y = layer(G, G->p->layers + j, y);
		name_fmt(n, sizeof n, "%sfinal_ln", q);
		y = norm(G, n, y);
		int lt = tensor(G, TENSOR_INPUT, q, "labels", DT_INT32, 1, B * s, 0);
		int lg = op2(G, OP_MATMUL, q, "lm_head", y, head, &at);
		lg = op2(G, OP_SOFTMAXCROSSENTROPY, q, "loss", lg, lt, NULL);
		op1(G, OP_REDUCEMEAN, q, "loss.mean", lg, NULL);
	}
}

static void gen_body(struct gen *G)
{
	enum model_gen_kind k = G->p->kind;
	if (k == GEN_FFN) {
		gen_ffn(G);
		return;
	}
	if (k == GEN_GPT || k == GEN_LLAMA) {
		gen_lm(G);
		return;
	}
	int x = tensor(G, TENSOR_INPUT, "x", "", G->dt, 2, G->B * G->s, G->h);
	if (k == GEN_MLP)
		mlp(G, 0, "mlp.", x);
	else if (k == GEN_ATTENTION)
		attention(G, "attn.", x);
	else
		x = layers(G, x);
}

struct graph *graph_generate_at(struct arena *a, const struct model_gen *g,
                                struct diag_list *diags, const struct jv *gen)
{
	struct gen G;
	memset(&G, 0, sizeof G);
	G.a = a;
	G.p = g;
	G.diags = diags;
	G.gen = gen;
	G.site.diags = diags;
	G.site.gen = gen;
	SL_ASSERT(g->kind >= 0 && g->kind < GEN_COUNT);
	size_t errors = diags->errors;
	if (!gen_check(&G))
		return NULL;
	if (!graph_builder_init(&G.b, a, model_gen_names[g->kind])) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "out of memory building the model");
		return NULL;
	}
	gen_body(&G);
	if (G.b.oom) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "out of memory building the model");
		return NULL;
	}
	if (diags->errors > errors)
		return NULL;
	struct model_gen *copy = arena_alloc(a, sizeof *copy);
	if (!copy) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "out of memory building the model");
		return NULL;
	}
	*copy = *g;
	G.b.g->gen = copy;
	G.b.g->batch = g->micro_batch;
	return G.b.g;
}

struct graph *graph_generate(struct arena *a, const struct model_gen *g, struct diag_list *diags)
{
	return graph_generate_at(a, g, diags, NULL);
}
