/* hf.c — a Hugging Face `config.json` read as one of our generators.
 *
 * transformers saves a model's hyper-parameters as a JSON object whose
 * "architectures" names the model class. The decoder-only families map
 * onto the two language-model generators of generate.c:
 *
 *   LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM -> llama
 *     (RMSNorm, SwiGLU MLP of intermediate_size, grouped-query attention
 *     with num_key_value_heads, rotary positions, untied head unless
 *     tie_word_embeddings; Qwen2 adds biases on q, k and v; head_dim,
 *     where it is not hidden_size / num_attention_heads, the heads' width)
 *   GPT2LMHeadModel -> gpt (LayerNorm, GeLU MLP of n_inner or 4h, learned
 *     positions of n_positions rows, biases, head tied to the embedding)
 *   GPTNeoXForCausalLM -> gpt (rotary, parallel residual when
 *     use_parallel_residual, biases, untied head unless tie_word_embeddings)
 *   MixtralForCausalLM -> llama with a mixture-of-experts MLP:
 *     num_local_experts experts of intermediate_size, num_experts_per_tok
 *     per token
 *   Qwen2MoeForCausalLM -> llama with num_experts experts of
 *     moe_intermediate_size, num_experts_per_tok per token, a shared
 *     expert of shared_expert_intermediate_size (as that many / the
 *     expert size shared experts) scaled by a sigmoid gate, biases on q,
 *     k and v; mlp_only_layers (the first layers only) dense
 *   DeepseekForCausalLM (DeepSeekMoE) -> llama with n_routed_experts
 *     experts and n_shared_experts shared experts of
 *     moe_intermediate_size, num_experts_per_tok per token, the first
 *     first_k_dense_replace layers dense (intermediate_size)
 *   Qwen3ForCausalLM -> llama with an RMSNorm over each head of q and k
 *     (qk_norm) and heads of head_dim (128 by default)
 *   Qwen3MoeForCausalLM -> the same with Qwen2-MoE's routed experts
 *     (num_experts, num_experts_per_tok, moe_intermediate_size), no
 *     shared expert
 *   DeepseekV3ForCausalLM (DeepSeek-V3) -> llama with multi-head latent
 *     attention (q_lora_rank, kv_lora_rank, qk_nope_head_dim,
 *     qk_rope_head_dim, v_head_dim), DeepSeekMoE as above with a sigmoid
 *     router and its selection bias, n_group / topk_group node-limited
 *     routing, and num_nextn_predict_layers multi-token prediction modules
 *
 * A config without "architectures" is read by its "model_type" (llama,
 * mistral, qwen2, gpt2, gpt_neox, mixtral, qwen2_moe, deepseek,
 * deepseek_v3, qwen3, qwen3_moe). Absent optional fields take the
 * defaults of the transformers configuration class of that architecture
 * (LlamaConfig, GPT2Config, ...);
 * JSON null counts as absent. Other members (rope_theta, rms_norm_eps,
 * sliding_window, ...) do not change parameters or FLOPs here and are not
 * read. Anything that would change the graph and that the generators
 * cannot express is refused with a diagnostic at that member.
 * No hot path.
 */
#include <cjson/cJSON.h>
#include <string.h>

#include "models-int.h"

enum hf_family {
	HF_LLAMA, HF_MISTRAL, HF_QWEN2, HF_GPT2, HF_GPTNEOX, HF_MIXTRAL, HF_QWEN2_MOE, HF_DEEPSEEK,
	HF_DEEPSEEK_V3, HF_QWEN3, HF_QWEN3_MOE, HF_COUNT
};

static const char *const hf_arch_names[HF_COUNT] = {
	"LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "GPT2LMHeadModel",
	"GPTNeoXForCausalLM", "MixtralForCausalLM", "Qwen2MoeForCausalLM", "DeepseekForCausalLM",
	"DeepseekV3ForCausalLM", "Qwen3ForCausalLM", "Qwen3MoeForCausalLM",
};
/* transformers' model_type of each, for configs without "architectures". */
static const char *const hf_model_types[HF_COUNT] = {"llama", "mistral", "qwen2", "gpt2",
                                                     "gpt_neox", "mixtral", "qwen2_moe",
                                                     "deepseek", "deepseek_v3", "qwen3",
                                                     "qwen3_moe"};
_Static_assert(HF_COUNT == 11, "hf_arch_names must list every architecture");

const char *const *graph_hf_architectures(int *n)
{
	*n = HF_COUNT;
	return hf_arch_names;
}

/* A member that is absent or null. */
static bool hf_get(const struct jv *obj, const char *key, struct jv *out)
{
	return jv_get(obj, key, out) && !cJSON_IsNull(out->node);
}

static bool hf_need(const struct jv *obj, const char *key, struct jv *out)
{
	if (hf_get(obj, key, out))
		return true;
	jv_error(out, "missing required field");
	return false;
}

static bool hf_count(const struct jv *obj, const char *key, bool required, int64_t dflt,
                     int64_t *out)
{
	struct jv v;
	*out = dflt;
	if (!(required ? hf_need(obj, key, &v) : hf_get(obj, key, &v)))
		return !required;
	return jv_int(&v, JR_RANGE(1, 1e15), out);
}

/* A positive real (rope_theta, rms_norm_eps, ...): dflt when absent. */
static bool hf_real(const struct jv *obj, const char *key, double dflt, double *out)
{
	struct jv v;
	*out = dflt;
	return !hf_get(obj, key, &v) || jv_number(&v, JR_POSITIVE, out);
}

/* tie_word_embeddings as the generators' tie_embeddings (1 or -1). */
static bool hf_tie(const struct jv *obj, bool dflt, int *out)
{
	struct jv v;
	bool b = dflt;
	bool ok = !hf_get(obj, "tie_word_embeddings", &v) || jv_bool(&v, &b);
	*out = b ? 1 : -1;
	return ok;
}

static bool hf_bool(const struct jv *obj, const char *key, bool dflt, bool *out)
{
	struct jv v;
	*out = dflt;
	return !hf_get(obj, key, &v) || jv_bool(&v, out);
}

/* An optional string member that must be one of `allowed` (NULL-ended):
 * the generators know one activation per family. */
static bool hf_one_of(const struct jv *obj, const char *key, const char *const *allowed,
                      const char *what)
{
	struct jv v;
	const char *s;
	if (!hf_get(obj, key, &v))
		return true;
	if (!jv_string(&v, &s))
		return false;
	for (const char *const *a = allowed; *a; a++)
		if (!strcmp(s, *a))
			return true;
	jv_error(&v, "\"%s\" is not supported: shardlab models %s", s, what);
	return false;
}

/* A boolean member whose other value the generators cannot express. */
static bool hf_must_be(const struct jv *obj, const char *key, bool want, const char *why)
{
	struct jv v;
	bool b;
	if (!hf_get(obj, key, &v))
		return true;
	if (!jv_bool(&v, &b))
		return false;
	if (b == want)
		return true;
	jv_error(&v, "%s is not supported: %s", b ? "true" : "false", why);
	return false;
}

static bool hf_dtype(const struct jv *root, enum dtype *out)
{
	struct jv v;
	*out = DT_BF16;
	/* transformers >= 4.56 writes "dtype", earlier versions "torch_dtype". */
	if (!hf_get(root, "torch_dtype", &v) && !hf_get(root, "dtype", &v))
		return true;
	return jv_dtype(&v, out);
}

/* An optional count that may be 0. */
static bool hf_count0(const struct jv *obj, const char *key, int64_t dflt, int64_t *out)
{
	struct jv v;
	*out = dflt;
	return !hf_get(obj, key, &v) || jv_int(&v, JR_RANGE(0, 1e15), out);
}

static const char *const silu[] = {"silu", "swish", NULL};

/* Qwen2MoeConfig (transformers; Qwen1.5-MoE-A2.7B's values are its
 * defaults): num_experts (60) experts of moe_intermediate_size (1408),
 * num_experts_per_tok (4) per token, one shared expert of
 * shared_expert_intermediate_size (5632) whose output a sigmoid of an
 * h x 1 linear scales, every decoder_sparse_step-th layer sparse except
 * mlp_only_layers. The generator's shared experts are expert-wide, so the
 * shared size must be a multiple of the expert size; its dense layers come
 * first, so only a step of 1 and mlp_only_layers [0, 1, ..., k-1] are
 * expressible. Qwen3MoeConfig (qwen3): the same routed experts with
 * defaults 128, 8 and 768, no shared expert, no q/k/v biases. */
static bool read_qwen_moe(const struct jv *r, bool qwen3, struct model_gen *g)
{
	int64_t shared = 0, step = 1;
	bool ok = hf_count(r, "num_experts", false, qwen3 ? 128 : 60, &g->experts);
	ok = hf_count(r, "num_experts_per_tok", false, qwen3 ? 8 : 4, &g->top_k) && ok;
	ok = hf_count(r, "moe_intermediate_size", false, qwen3 ? 768 : 1408, &g->expert_ffn) && ok;
	if (!qwen3) {
		ok = hf_count0(r, "shared_expert_intermediate_size", 5632, &shared) && ok;
		ok = hf_bool(r, "qkv_bias", true, &g->qkv_bias) && ok;
	}
	ok = hf_count(r, "decoder_sparse_step", false, 1, &step) && ok;
	if (!ok)
		return false;
	struct jv v, e;
	if (step != 1) {
		hf_get(r, "decoder_sparse_step", &v);
		jv_error(&v, "experts every %lld layers are not supported: the generator's dense "
		         "layers come first (dense_layers)", (long long)step);
		return false;
	}
	if (shared % g->expert_ffn) {
		hf_get(r, "shared_expert_intermediate_size", &v);
		jv_error(&v, "%lld is not a multiple of moe_intermediate_size %lld: the generator's "
		         "shared experts are as wide as the routed ones", (long long)shared,
		         (long long)g->expert_ffn);
		return false;
	}
	g->shared_experts = shared / g->expert_ffn;
	g->shared_expert_gate = shared > 0;
	if (hf_get(r, "mlp_only_layers", &v)) {
		if (!jv_is_array(&v, 0, 1 << 20))
			return false;
		int n = jv_len(&v);
		for (int i = 0; i < n; i++) {
			int64_t l;
			jv_at(&v, i, &e);
			if (!jv_int(&e, JR_RANGE(0, 1e15), &l))
				return false;
			if (l != i) {
				jv_error(&e, "dense layer %lld is not supported: the generator's dense layers "
				         "are the first ones (expected %d here)", (long long)l, i);
				return false;
			}
		}
		g->dense_layers = n;
	}
	return true;
}

/* moe_layer_freq (default 1): experts every that many layers; only 1 is
 * expressible (the generator's dense layers come first). */
static bool hf_moe_every_layer(const struct jv *r)
{
	int64_t freq = 1;
	struct jv v;
	if (!hf_count(r, "moe_layer_freq", false, 1, &freq))
		return false;
	if (freq == 1)
		return true;
	hf_get(r, "moe_layer_freq", &v);
	jv_error(&v, "experts every %lld layers are not supported: the generator's dense "
	         "layers come first (dense_layers)", (long long)freq);
	return false;
}

/* DeepseekConfig (DeepSeekMoE, Dai et al. 2024; deepseek-moe-16b's
 * config.json): n_routed_experts experts and n_shared_experts shared ones
 * of moe_intermediate_size, num_experts_per_tok per token, softmax
 * routing; the first first_k_dense_replace layers dense, then experts in
 * every moe_layer_freq-th layer (only 1 is expressible). No
 * n_routed_experts: a dense model. */
static bool read_deepseek(const struct jv *r, struct model_gen *g)
{
	static const char *const softmax[] = {"softmax", NULL};
	struct jv v;
	if (!hf_get(r, "n_routed_experts", &v))
		return true;
	bool ok = jv_int(&v, JR_RANGE(1, 1e15), &g->experts);
	ok = hf_count(r, "num_experts_per_tok", true, 0, &g->top_k) && ok;
	ok = hf_count(r, "moe_intermediate_size", true, 0, &g->expert_ffn) && ok;
	ok = hf_count0(r, "n_shared_experts", 0, &g->shared_experts) && ok;
	ok = hf_count0(r, "first_k_dense_replace", 0, &g->dense_layers) && ok;
	ok = hf_one_of(r, "scoring_func", softmax, "a softmax router") && ok;
	return ok && hf_moe_every_layer(r);
}
/* DeepseekV3Config (transformers' configuration_deepseek_v3.py, whose
 * defaults are DeepSeek-V3's own values; deepseek-ai/DeepSeek-V3's
 * config.json): DeepSeekMoE as read_deepseek with the V3 defaults
 * (256 routed experts and 1 shared of 2048, top-8, the first 3 layers
 * dense), scored by a sigmoid (scoring_func "sigmoid", with its selection
 * bias under topk_method "noaux_tc") or a softmax, routed within topk_group
 * of n_group groups; multi-head latent attention of kv_lora_rank 512,
 * q_lora_rank 1536 (null: queries without a latent), qk_nope_head_dim 128,
 * qk_rope_head_dim 64, v_head_dim 128; num_nextn_predict_layers (0 when
 * absent: transformers' class does not know it) multi-token prediction
 * modules. */
static bool read_deepseek_v3(const struct jv *r, struct model_gen *g)
{
	static const char *const scoring[] = {"sigmoid", "softmax", NULL};
	static const char *const methods[] = {"noaux_tc", "greedy", "group_limited_greedy", NULL};
	struct jv v;
	const char *fn = "sigmoid";
	bool ok = hf_count(r, "n_routed_experts", false, 256, &g->experts);
	ok = hf_count(r, "num_experts_per_tok", false, 8, &g->top_k) && ok;
	ok = hf_count(r, "moe_intermediate_size", false, 2048, &g->expert_ffn) && ok;
	ok = hf_count0(r, "n_shared_experts", 1, &g->shared_experts) && ok;
	ok = hf_count0(r, "first_k_dense_replace", 3, &g->dense_layers) && ok;
	ok = hf_one_of(r, "scoring_func", scoring, "a sigmoid or softmax router") && ok;
	ok = hf_one_of(r, "topk_method", methods, "top-k routing, within groups or not") && ok;
	if (hf_get(r, "scoring_func", &v))
		ok = jv_string(&v, &fn) && ok;
	g->sigmoid_router = !strcmp(fn, "sigmoid");
	ok = hf_count(r, "n_group", false, 8, &g->expert_groups) && ok;
	ok = hf_count(r, "topk_group", false, 4, &g->group_top_k) && ok;
	ok = hf_count(r, "kv_lora_rank", false, 512, &g->kv_lora_rank) && ok;
	if (jv_get(r, "q_lora_rank", &v) && cJSON_IsNull(v.node))
		g->q_lora_rank = 0;
	else
		ok = hf_count(r, "q_lora_rank", false, 1536, &g->q_lora_rank) && ok;
	ok = hf_count(r, "qk_nope_head_dim", false, 128, &g->qk_nope_head_dim) && ok;
	ok = hf_count(r, "qk_rope_head_dim", false, 64, &g->qk_rope_head_dim) && ok;
	ok = hf_count(r, "v_head_dim", false, 128, &g->v_head_dim) && ok;
	ok = hf_count0(r, "num_nextn_predict_layers", 0, &g->mtp_layers) && ok;
	if (ok && !hf_moe_every_layer(r))
		return false;
	if (ok && g->experts % g->expert_groups) {
		hf_get(r, "n_group", &v);
		jv_error(&v, "%lld groups do not divide %lld routed experts",
		         (long long)g->expert_groups, (long long)g->experts);
		return false;
	}
	if (ok && g->group_top_k > g->expert_groups) {
		hf_get(r, "topk_group", &v);
		jv_error(&v, "%lld of %lld groups: expected at most n_group",
		         (long long)g->group_top_k, (long long)g->expert_groups);
		return false;
	}
	return ok;
}

static const char *const gelu[] = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh",
                                   "gelu_python", NULL};

static bool read_llama(const struct jv *r, enum hf_family fam, struct model_gen *g)
{
	model_gen_defaults(g, GEN_LLAMA);
	bool ok = hf_count(r, "hidden_size", true, 0, &g->hidden);
	ok = hf_count(r, "num_hidden_layers", true, 0, &g->layers) && ok;
	ok = hf_count(r, "num_attention_heads", true, 0, &g->heads) && ok;
	/* LlamaConfig: num_key_value_heads None means multi-head attention. */
	ok = hf_count(r, "num_key_value_heads", false, g->heads, &g->kv_heads) && ok;
	ok = hf_count(r, "intermediate_size", true, 0, &g->ffn) && ok;
	ok = hf_count(r, "vocab_size", true, 0, &g->vocab) && ok;
	ok = hf_tie(r, false, &g->tie_embeddings) && ok;
	ok = hf_one_of(r, "hidden_act", silu, "the SwiGLU MLP with SiLU") && ok;
	ok = hf_must_be(r, "attention_bias", false,
	                "the generator has no biases on the attention projections") && ok;
	ok = hf_must_be(r, "mlp_bias", false, "the generator has no biases in the MLP") && ok;
	g->qkv_bias = fam == HF_QWEN2; /* Qwen2Attention: q, k, v with bias, o without */
	/* The configuration classes' defaults: rope_theta 10000 (MixtralConfig
	 * 1e6), rms_norm_eps 1e-6 (MixtralConfig 1e-5). */
	ok = hf_real(r, "rope_theta", fam == HF_MIXTRAL ? 1e6 : 1e4, &g->rope_theta) && ok;
	ok = hf_real(r, "rms_norm_eps", fam == HF_MIXTRAL ? 1e-5 : 1e-6, &g->norm_eps) && ok;
	if (fam == HF_MIXTRAL) {
		/* MixtralConfig: num_local_experts (8) SwiGLU experts of
		 * intermediate_size, num_experts_per_tok (2) per token, no shared
		 * expert; the router is a bias-free h x E linear. Mixtral routes
		 * without dropping tokens: capacity factor 1, the balanced share. */
		ok = hf_count(r, "num_local_experts", false, 8, &g->experts) && ok;
		ok = hf_count(r, "num_experts_per_tok", false, 2, &g->top_k) && ok;
		g->expert_ffn = g->ffn;
		g->capacity_factor = 1;
	}
	/* Both route without dropping tokens: capacity factor 1, as Mixtral. */
	if (fam == HF_QWEN2_MOE || fam == HF_QWEN3_MOE) {
		ok = read_qwen_moe(r, fam == HF_QWEN3_MOE, g) && ok;
		g->capacity_factor = 1;
	}
	/* Qwen3Attention: an RMSNorm over each head of q and of k; its
	 * sliding window (use_sliding_window) is not modelled. */
	if (fam == HF_QWEN3 || fam == HF_QWEN3_MOE) {
		g->qk_norm = true;
		ok = hf_must_be(r, "use_sliding_window", false,
		                "sliding-window attention is not modelled") && ok;
	}
	if (fam == HF_DEEPSEEK) {
		ok = read_deepseek(r, g) && ok;
		g->capacity_factor = 1;
	}
	if (fam == HF_DEEPSEEK_V3) {
		ok = read_deepseek_v3(r, g) && ok;
		g->capacity_factor = 1;
	}
	struct jv v;
	/* A head's width where it is not hidden_size / num_attention_heads
	 * (Mistral NeMo, Mistral Small 3, Qwen3, whose Qwen3Config defaults
	 * it to 128); DeepseekV3Config's head_dim is the rotary width, not a
	 * head's. */
	int64_t hd = fam == HF_QWEN3 ? 128 : 0;
	if (ok && fam != HF_DEEPSEEK_V3 && hf_get(r, "head_dim", &v))
		ok = jv_int(&v, JR_RANGE(1, 1 << 16), &hd);
	if (ok && hd > 0 && hd * g->heads != g->hidden)
		g->head_dim = hd;
	return ok;
}

static bool read_gpt2(const struct jv *r, struct model_gen *g)
{
	model_gen_defaults(g, GEN_GPT);
	bool ok = hf_count(r, "n_embd", true, 0, &g->hidden);
	ok = hf_count(r, "n_layer", true, 0, &g->layers) && ok;
	ok = hf_count(r, "n_head", true, 0, &g->heads) && ok;
	ok = hf_count(r, "vocab_size", true, 0, &g->vocab) && ok;
	ok = hf_count(r, "n_positions", true, 0, &g->max_positions) && ok;
	ok = hf_count(r, "n_inner", false, 4 * g->hidden, &g->ffn) && ok; /* null: 4 x n_embd */
	ok = hf_tie(r, true, &g->tie_embeddings) && ok;
	ok = hf_one_of(r, "activation_function", gelu, "the MLP with GeLU") && ok;
	ok = hf_must_be(r, "add_cross_attention", false, "shardlab models decoder-only blocks") && ok;
	ok = jv_opt_number(r, "resid_pdrop", JR_RANGE(0, 0.999), 0.1, &g->dropout) && ok;
	ok = hf_real(r, "layer_norm_epsilon", 1e-5, &g->norm_eps) && ok; /* GPT2Config */
	g->bias = true;
	return ok;
}

static bool read_neox(const struct jv *r, struct model_gen *g)
{
	model_gen_defaults(g, GEN_GPT);
	bool ok = hf_count(r, "hidden_size", true, 0, &g->hidden);
	ok = hf_count(r, "num_hidden_layers", true, 0, &g->layers) && ok;
	ok = hf_count(r, "num_attention_heads", true, 0, &g->heads) && ok;
	ok = hf_count(r, "intermediate_size", true, 0, &g->ffn) && ok;
	ok = hf_count(r, "vocab_size", true, 0, &g->vocab) && ok;
	ok = hf_tie(r, false, &g->tie_embeddings) && ok;
	ok = hf_bool(r, "use_parallel_residual", true, &g->parallel_residual) && ok;
	ok = hf_one_of(r, "hidden_act", gelu, "the MLP with GeLU") && ok;
	ok = hf_must_be(r, "attention_bias", true,
	                "the generator gives every linear layer a bias") && ok;
	ok = jv_opt_number(r, "hidden_dropout", JR_RANGE(0, 0.999), 0, &g->dropout) && ok;
	/* GPTNeoXConfig: rotary_emb_base 10000, layer_norm_eps 1e-5 */
	ok = hf_real(r, "rotary_emb_base", 1e4, &g->rope_theta) && ok;
	ok = hf_real(r, "layer_norm_eps", 1e-5, &g->norm_eps) && ok;
	g->rotary = true;
	g->bias = true;
	return ok;
}

/* The file name without folder and ".json". */
static const char *stem(struct arena *a, const char *path)
{
	const char *b = strrchr(path, '/');
	b = b ? b + 1 : path;
	size_t n = strlen(b);
	if (n > 5 && !strcmp(b + n - 5, ".json"))
		n -= 5;
	return arena_strndup(a, b, n);
}

bool graph_hf_read(struct arena *a, struct json_doc *doc, int64_t seq, int64_t micro_batch,
                   struct hf_model *out)
{
	struct jv root, v, e;
	memset(out, 0, sizeof *out);
	if (!jv_root(doc, &root))
		return false;
	size_t errors = doc->diags->errors;
	const char *arch;
	int fam = -1;
	if (!hf_get(&root, "architectures", &v) && hf_get(&root, "model_type", &e)) {
		/* Configs saved without "architectures" still say their family. */
		const char *type;
		if (!jv_string(&e, &type))
			return false;
		for (int i = 0; i < HF_COUNT; i++)
			if (!strcmp(type, hf_model_types[i]))
				fam = i;
		if (fam < 0) {
			jv_error(&e, "unknown model_type \"%s\" and no \"architectures\" (shardlab "
			         "imports llama, mistral, qwen2, gpt2, gpt_neox, mixtral, qwen2_moe, "
			         "deepseek, deepseek_v3, qwen3 and qwen3_moe)", type);
			return false;
		}
		arch = hf_arch_names[fam];
	} else {
		if (!hf_need(&root, "architectures", &v) || !jv_is_array(&v, 1, 1000))
			return false;
		jv_at(&v, 0, &e);
		if (!jv_string(&e, &arch))
			return false;
		for (int i = 0; i < HF_COUNT; i++)
			if (!strcmp(arch, hf_arch_names[i]))
				fam = i;
	}
	if (fam < 0) {
		jv_error(&e, "unknown architecture \"%s\" (shardlab imports LlamaForCausalLM, "
		         "MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel, "
		         "GPTNeoXForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM, "
		         "DeepseekForCausalLM, DeepseekV3ForCausalLM, Qwen3ForCausalLM and "
		         "Qwen3MoeForCausalLM)", arch);
		return false;
	}
	struct model_gen *g = &out->gen;
	bool ok;
	if (fam == HF_GPT2)
		ok = read_gpt2(&root, g);
	else if (fam == HF_GPTNEOX)
		ok = read_neox(&root, g);
	else
		ok = read_llama(&root, (enum hf_family)fam, g);
	ok = hf_dtype(&root, &g->dtype) && ok;
	/* The sequence: the context the model was trained for unless given. */
	const char *pos_key = fam == HF_GPT2 ? "n_positions" : "max_position_embeddings";
	int64_t ctx = 0;
	if (seq > 0) {
		g->seq = seq;
		if (hf_get(&root, pos_key, &v))
			ok = jv_int(&v, JR_RANGE(1, 1e15), &ctx) && ok;
	} else {
		ok = hf_count(&root, pos_key, true, 0, &ctx) && ok;
		g->seq = ctx;
	}
	g->micro_batch = micro_batch > 0 ? micro_batch : 1;
	if (!ok)
		return false;
	if (fam == HF_GPT2 && g->seq > g->max_positions) {
		hf_get(&root, "n_positions", &v);
		jv_error(&v, "the learned position table has %lld rows, fewer than the sequence of %lld",
		         (long long)g->max_positions, (long long)g->seq);
		return false;
	}
	const char *heads_key = fam == HF_GPT2 ? "n_head" : "num_attention_heads";
	const char *hidden_key = fam == HF_GPT2 ? "n_embd" : "hidden_size";
	if (g->head_dim == 0 && g->hidden % g->heads) {
		hf_get(&root, heads_key, &v);
		jv_error(&v, "%lld heads do not divide %s %lld", (long long)g->heads, hidden_key,
		         (long long)g->hidden);
		return false;
	}
	if (g->kind == GEN_LLAMA && g->heads % g->kv_heads) {
		hf_get(&root, "num_key_value_heads", &v);
		jv_error(&v, "%lld key/value heads do not divide %lld attention heads",
		         (long long)g->kv_heads, (long long)g->heads);
		return false;
	}
	out->architecture = arena_strdup(a, arch);
	out->name = stem(a, doc->file ? doc->file : "model");
	return out->architecture && out->name && doc->diags->errors == errors;
}

bool graph_hf_is_config(const struct jv *root)
{
	struct jv m;
	return !jv_get(root, "format", &m) &&
	       (jv_get(root, "architectures", &m) || jv_get(root, "model_type", &m));
}

struct graph *graph_hf_load_doc(struct arena *a, struct json_doc *doc, int64_t seq,
                                int64_t micro_batch)
{
	struct hf_model m;
	if (!graph_hf_read(a, doc, seq, micro_batch, &m))
		return NULL;
	struct graph *g = graph_generate(a, &m.gen, doc->diags);
	const char *path = doc->file ? doc->file : "config.json";
	if (g) {
		g->name = m.name;
		g->description = arena_printf(a, "%s from the Hugging Face config %s",
		                              m.architecture, path);
		g->file = arena_strdup(a, path);
	}
	return g;
}

struct graph *graph_hf_load(struct arena *a, const char *path, int64_t seq, int64_t micro_batch,
                            struct diag_list *diags)
{
	struct json_doc doc;
	struct graph *g = NULL;
	if (json_doc_load(&doc, path, diags))
		g = graph_hf_load_doc(a, &doc, seq, micro_batch);
	json_doc_free(&doc);
	return g;
}

struct cJSON *model_gen_json(const struct model_gen *g)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	const char *const *f = model_gen_fields(g->kind);
	for (; *f; f++) {
		const char *k = *f;
		cJSON *v = NULL;
		if (!strcmp(k, "kind"))
			v = cJSON_CreateString(model_gen_names[g->kind]);
		else if (!strcmp(k, "dtype"))
			v = cJSON_CreateString(dtype_names[g->dtype]);
		else if (!strcmp(k, "tie_embeddings"))
			v = cJSON_CreateBool(g->tie_embeddings ? g->tie_embeddings > 0
			                                       : g->kind == GEN_GPT);
		else if (!strcmp(k, "dropout"))
			v = cJSON_CreateNumber(g->dropout);
		else if (!strcmp(k, "capacity_factor"))
			v = cJSON_CreateNumber(g->capacity_factor > 0 ? g->capacity_factor : 1);
		else if (!strcmp(k, "rope_theta") || !strcmp(k, "norm_eps")) {
			double x = !strcmp(k, "rope_theta") ? g->rope_theta : g->norm_eps;
			if (!(x > 0) || (!strcmp(k, "rope_theta") && g->kind == GEN_GPT && !g->rotary))
				continue; /* not stated, or no rotary positions */
			v = cJSON_CreateNumber(x);
		}
#define NUM(name) else if (!strcmp(k, #name)) v = cJSON_CreateNumber((double)g->name);
#define BOOL(name) else if (!strcmp(k, #name)) v = cJSON_CreateBool(g->name);
		NUM(hidden) NUM(layers) NUM(heads) NUM(kv_heads) NUM(seq) NUM(vocab)
		NUM(micro_batch) NUM(ffn) NUM(max_positions) NUM(experts) NUM(top_k)
		NUM(shared_experts) NUM(expert_ffn) NUM(dense_layers)
		NUM(expert_groups) NUM(group_top_k) NUM(q_lora_rank) NUM(kv_lora_rank)
		NUM(qk_rope_head_dim) NUM(qk_nope_head_dim) NUM(v_head_dim) NUM(mtp_layers)
		NUM(head_dim) BOOL(bias) BOOL(qkv_bias) BOOL(parallel_residual) BOOL(rotary)
		BOOL(shared_expert_gate) BOOL(sigmoid_router) BOOL(fused_qkv) BOOL(fused_gate_up)
		BOOL(qk_norm)
#undef NUM
#undef BOOL
		/* The DeepSeek-V3 members and head_dim and qk_norm, left out at 0 /
		 * false (their default). */
		if (v && ((cJSON_IsNumber(v) && v->valuedouble == 0 &&
		           (!strcmp(k, "expert_groups") || !strcmp(k, "group_top_k") ||
		            !strcmp(k, "q_lora_rank") || !strcmp(k, "kv_lora_rank") ||
		            !strcmp(k, "qk_rope_head_dim") || !strcmp(k, "qk_nope_head_dim") ||
		            !strcmp(k, "v_head_dim") || !strcmp(k, "mtp_layers") ||
		            !strcmp(k, "head_dim"))) ||
		          (!strcmp(k, "sigmoid_router") && !g->sigmoid_router) ||
		          (!strcmp(k, "fused_qkv") && !g->fused_qkv) ||
		          (!strcmp(k, "fused_gate_up") && !g->fused_gate_up) ||
		          (!strcmp(k, "qk_norm") && !g->qk_norm))) {
			cJSON_Delete(v);
			continue;
		}
		if (!strcmp(k, "max_positions") && g->max_positions <= 0) {
			cJSON_Delete(v);
			continue;
		}
		if (g->experts <= 0 && (!strcmp(k, "experts") || !strcmp(k, "top_k") ||
		                        !strcmp(k, "shared_experts") || !strcmp(k, "expert_ffn") ||
		                        !strcmp(k, "capacity_factor") || !strcmp(k, "dense_layers") ||
		                        !strcmp(k, "shared_expert_gate"))) {
			cJSON_Delete(v);
			continue;
		}
		/* Left out at their defaults, so that files without them read back
		 * and write out the same. */
		if ((!strcmp(k, "dense_layers") && g->dense_layers <= 0) ||
		    (!strcmp(k, "expert_ffn") && g->expert_ffn <= 0) ||
		    (!strcmp(k, "shared_expert_gate") && !g->shared_expert_gate)) {
			cJSON_Delete(v);
			continue;
		}
		if (!strcmp(k, "kv_heads") && g->kv_heads <= 0) {
			cJSON_Delete(v);
			continue;
		}
		if (!v || !cJSON_AddItemToObject(o, k, v)) {
			cJSON_Delete(v);
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}
