/* models.h — the operator-graph IR, the op catalog, the JSON model loader
 * and the model generators (FFN, MLP, attention, transformer, GPT, LLaMA).
 *
 * A graph records shapes only: tensors are names, dtypes and dimensions;
 * nothing allocates tensor data. Ops are stored in a topological order
 * (ties kept in file order). Tensors are graph inputs, parameters
 * (weights) or activations (op outputs).
 *
 * Units: element counts and shapes int64_t; FLOPs and bytes double.
 * FLOPs count a multiply-add as 2. Bytes read/written are the op's own
 * tensors at their dtype (a view such as Reshape moves nothing).
 *
 * Data flow: util -> models. Nothing here knows about devices or plans;
 * planner/ distributes ops through the dimension signatures it derives
 * from the catalog (docs/planner.md, "Strategies and distributed operators").
 */
#ifndef SHARDLAB_MODELS_H
#define SHARDLAB_MODELS_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

#define MODEL_FORMAT "shardlab-model"
#define MODEL_VERSION 1
#define GRAPH_MAX_RANK 8
/* Largest element count of one tensor, and of a model's parameters
 * together: 2^53, where doubles stop counting exactly. GPT-3 has 1.75e11
 * parameters and the largest published models ~1e12; 2^53 is 9.0e15. */
#define GRAPH_MAX_ELEMENTS ((int64_t)1 << 53)

enum op_kind {
	OP_MATMUL,
	OP_BATCHMATMUL,
	OP_ADD,
	OP_SUB,
	OP_MUL,
	OP_BIASADD,
	OP_RELU,
	OP_GELU,
	OP_SILU,
	OP_SIGMOID,
	OP_DROPOUT,
	OP_CAST,
	OP_SOFTMAX,
	OP_LAYERNORM,
	OP_RMSNORM,
	OP_RESHAPE,
	OP_TRANSPOSE,
	OP_REDUCESUM,
	OP_REDUCEMEAN,
	OP_GATHER,
	OP_CONCAT,
	OP_SPLIT,
	OP_STRIDEDSLICE,
	OP_SOFTMAXCROSSENTROPY,
	OP_MOEDISPATCH,  /* token-local mixture-of-experts dispatch: tokens into expert slots */
	OP_MOECOMBINE,   /* its inverse: slots back to tokens, weighted by the router */
	OP_COUNT
};

/* "MatMul", "BatchMatMul", ... as written in model files. */
const char *op_kind_name(enum op_kind k);
/* -1 when unknown. */
int op_kind_parse(const char *name);

enum tensor_role { TENSOR_INPUT, TENSOR_PARAM, TENSOR_ACTIVATION };

struct tensor {
	const char *name;          /* inputs/params: as declared; outputs: op name, or "op:k" for k > 0 */
	enum tensor_role role;
	enum dtype dtype;
	int rank;
	int64_t dims[GRAPH_MAX_RANK];
	int64_t elems;             /* product of dims (1 for rank 0) */
	int producer;              /* op index, -1 for inputs and params */
	int n_consumers;
};

/* Attributes; which ones an op uses is in docs/formats.md. */
struct op_attrs {
	bool transpose_a, transpose_b;        /* MatMul, BatchMatMul */
	int axis;                             /* Softmax, Gather, Concat, Split, LayerNorm/RMSNorm begin axis */
	int n_axes;                           /* ReduceSum/ReduceMean */
	int axes[GRAPH_MAX_RANK];
	bool keep_dims;
	int n_shape;                          /* Reshape target / Transpose perm / StridedSlice begin,end,strides */
	int64_t shape[GRAPH_MAX_RANK];        /* Reshape (one -1 allowed in the file, resolved here) */
	int64_t perm[GRAPH_MAX_RANK];         /* Transpose */
	int64_t begin[GRAPH_MAX_RANK], end[GRAPH_MAX_RANK], strides[GRAPH_MAX_RANK];
	int n_outputs;                        /* Split */
	enum dtype to;                        /* Cast */
	double keep_prob;                     /* Dropout */
	bool view;                            /* StridedSlice: a view of its input (torch.split),
	                                         no kernel and no bytes moved */
};

struct op {
	const char *name;
	enum op_kind kind;
	int n_in, n_out;
	int *in, *out;                        /* tensor indices */
	struct op_attrs attrs;
	enum dtype dtype;                     /* of the (first) output */
	double flops;                         /* forward */
	double bytes_read, bytes_written;     /* forward */
	int64_t params;                       /* elements of the parameter inputs */
	int line;                             /* line in the model file, 0 if generated */
	bool moe_router;                      /* its output, through a Softmax or a Sigmoid, weighs
	                                         a MoECombine's picks: a mixture of experts'
	                                         router (set when the MoECombine is built) */
};

struct graph {
	const char *name;
	const char *description;              /* NULL when the file has none */
	const char *file;                     /* model file, or NULL when inline/generated */
	int64_t batch;                        /* samples per execution: a generator's micro_batch,
	                                         dim 0 of an explicit graph's first input (else 1) */
	const struct model_gen *gen;          /* the generator that built it; NULL for an
	                                         explicit graph */
	int n_ops, n_tensors;
	struct op *ops;                       /* topological order */
	struct tensor *tensors;
};

struct graph_totals {
	int64_t parameters;                   /* unique parameter tensors, elements */
	double parameter_bytes;
	double forward_flops;
	double matmul_flops;                  /* MatMul and BatchMatMul only */
	double bytes_read, bytes_written;
	int ops;
	int64_t active_parameters;            /* those one token uses: parameters less the
	                                         routed experts a mixture-of-experts
	                                         generator's router does not pick */
	int64_t mtp_parameters;               /* of the parameters, those of the
	                                         multi-token prediction modules (a
	                                         generator's "mtp.*" and layers past
	                                         `layers`) */
};

/* Load and validate a model file (explicit graph or generator form).
 * Returns NULL after adding diagnostics. Allocated in `a`. */
struct graph *graph_load(struct arena *a, const char *path, struct diag_list *diags);
/* The same from a parsed document whose "format" is MODEL_FORMAT. */
struct graph *graph_load_doc(struct arena *a, struct json_doc *doc);
/* A model object embedded in another file (a scenario's "model"): same
 * schema as a model file, "format"/"version" optional. */
struct graph *graph_load_value(struct arena *a, const struct jv *model);

/* Generators, also reachable from files as {"generator": {...}}. */
enum model_gen_kind { GEN_FFN, GEN_MLP, GEN_ATTENTION, GEN_TRANSFORMER, GEN_GPT, GEN_LLAMA, GEN_COUNT };
extern const char *const model_gen_names[GEN_COUNT];

struct model_gen {
	enum model_gen_kind kind;
	int64_t hidden, layers, heads, kv_heads, seq, vocab, micro_batch, ffn;
	enum dtype dtype;
	bool bias;                            /* linear layers carry biases (GPT yes, LLaMA no) */
	double dropout;                       /* 0: no Dropout ops */
	/* Variants the Hugging Face families need (docs/formats.md): */
	int tie_embeddings;                   /* the LM head is the word embedding transposed:
	                                         1 yes, -1 no, 0 the kind's own (GPT tied,
	                                         LLaMA not), so that a zeroed struct keeps
	                                         the generators as they were */
	bool qkv_bias;                        /* LLaMA: biases on q, k and v only (Qwen2) */
	bool parallel_residual;               /* GPT: attention and MLP read the same input,
	                                         x + attn(ln1(x)) + mlp(ln2(x)) (GPT-NeoX) */
	bool rotary;                          /* GPT: rotary positions, no learned position
	                                         table (GPT-NeoX) */
	int64_t max_positions;                /* GPT: rows of the learned position table;
	                                         0: seq */
	/* LLaMA: a mixture-of-experts MLP in every layer when experts > 0
	 * (docs/formats.md, docs/moe-cp.md): a router, top_k of `experts`
	 * SwiGLU experts of expert_ffn (0: ffn), shared_experts more of that
	 * size on every token, each expert padded to capacity_factor times its
	 * balanced share of the micro-batch's tokens (0: 1). The first
	 * dense_layers layers keep the dense MLP of ffn (DeepSeekMoE); with
	 * shared_expert_gate the shared experts' output is scaled by a
	 * sigmoid of an h x 1 linear (Qwen2-MoE). */
	int64_t experts, top_k, shared_experts, expert_ffn, dense_layers;
	double capacity_factor;
	bool shared_expert_gate;
	/* DeepSeek-V3 (Liu et al. 2024, arXiv 2412.19437, docs/formats.md):
	 * sigmoid_router scores the experts with a sigmoid and carries a
	 * per-expert selection bias (the auxiliary-loss-free balancing);
	 * expert_groups / group_top_k restrict a token to group_top_k of
	 * expert_groups groups of experts (node-limited routing: recorded and
	 * exported, the graph's shapes do not change). */
	bool sigmoid_router;
	int64_t expert_groups, group_top_k;
	/* LLaMA: multi-head latent attention (DeepSeek-V2/V3) when
	 * kv_lora_rank > 0: queries through a q_lora_rank latent (0: a plain
	 * projection), keys and values through a kv_lora_rank latent, heads of
	 * qk_nope_head_dim + qk_rope_head_dim for queries and keys (the rotary
	 * part of the key shared by all heads) and v_head_dim for values. */
	int64_t q_lora_rank, kv_lora_rank, qk_rope_head_dim, qk_nope_head_dim, v_head_dim;
	/* LLaMA: a head's width when it is not hidden / heads (0: that), as
	 * Mistral NeMo's 32 heads of 128 beside a hidden size of 5,120: the
	 * query and output projections are h x heads·head_dim, the key and
	 * value ones h x kv_heads·head_dim. */
	int64_t head_dim;
	/* LLaMA: multi-token prediction modules (DeepSeek-V3 §2.2), each a
	 * projection of the previous depth's hidden state and the next token's
	 * embedding, one more layer, and a loss through the shared head. */
	int64_t mtp_layers;
	/* Neither changes a shape or a FLOP; both are launch arguments
	 * (`plan --export megatron`): the rotary base and the normalisation's
	 * epsilon, 0 where not stated (the framework's default). */
	double rope_theta, norm_eps;
	/* GPT and LLaMA: one fused query-key-value projection "p.qkv" of
	 * (heads + 2 kv_heads) x head_dim columns laid out per key/value group,
	 * split into Q, K and V by views, as Megatron-LM runs it
	 * (`query_key_value` / `linear_qkv`); false: three projections.
	 * Parameters, FLOPs and activations are the same either way. */
	bool fused_qkv;
	/* LLaMA: the dense SwiGLU MLP's gate and up projections as one
	 * "p.gate_up" of 2 ffn columns, gate and up interleaved per column,
	 * split by views, as Megatron-Core's linear_fc1 with
	 * gated_linear_unit; false: two projections. */
	bool fused_gate_up;
	/* LLaMA: an RMSNorm over each head of the queries and of the keys
	 * before the scores, "p.q_norm" and "p.k_norm" with a [head_dim]
	 * weight each (Qwen3, OLMo 2; Megatron-Core's qk_layernorm). */
	bool qk_norm;
};
/* Fills defaults for a kind (see docs/formats.md). */
void model_gen_defaults(struct model_gen *g, enum model_gen_kind kind);
/* Does the generator kind take this member ("heads", "layers", ...)? */
bool model_gen_uses(enum model_gen_kind kind, const char *field);
/* The MLP's hidden size the generator builds: ffn, or the kind's default
 * (LLaMA: 8h/3 rounded up to a multiple of 256; the others 4h); 0 for a
 * kind without an MLP. */
int64_t model_gen_ffn(const struct model_gen *g);
/* Returns NULL after adding diagnostics (file may be NULL). */
struct graph *graph_generate(struct arena *a, const struct model_gen *g, struct diag_list *diags);
/* The generator behind graph_generate, reporting parameter errors at
 * members of `gen` when it is given (a file's generator object, or an
 * object holding the members a caller set, such as a scenario's
 * {"hf_config": ..., "fused_qkv": true}). */
struct graph *graph_generate_at(struct arena *a, const struct model_gen *g,
                                struct diag_list *diags, const struct jv *gen);

/* The generator's hyper-parameters as a model file's "generator" object
 * (the members its kind takes); NULL when out of memory. */
struct cJSON *model_gen_json(const struct model_gen *g);

/* ------------------------------------------- Hugging Face configurations */

/* A Hugging Face config.json read as a generator (models/hf.c and
 * docs/formats.md): LlamaForCausalLM, MistralForCausalLM,
 * Qwen2ForCausalLM and the mixtures of experts (Mixtral, Qwen2-MoE,
 * DeepSeekMoE) become "llama", GPT2LMHeadModel and GPTNeoXForCausalLM
 * "gpt". */
struct hf_model {
	struct model_gen gen;
	const char *architecture;             /* "LlamaForCausalLM" */
	const char *name;                     /* the file name without folder and ".json" */
};
/* The architectures read, in *n. */
const char *const *graph_hf_architectures(int *n);
/* seq 0: the config's context (max_position_embeddings, n_positions);
 * micro_batch 0: 1. False after diagnostics at the config's members. */
bool graph_hf_read(struct arena *a, struct json_doc *doc, int64_t seq, int64_t micro_batch,
                   struct hf_model *out);
/* Is this document's root a Hugging Face config: no "format", but an
 * "architectures" or "model_type"? */
bool graph_hf_is_config(const struct jv *root);
/* Read and generate: the graph is named after the file. NULL after
 * diagnostics. */
struct graph *graph_hf_load(struct arena *a, const char *path, int64_t seq, int64_t micro_batch,
                            struct diag_list *diags);
/* The same from a parsed document. */
struct graph *graph_hf_load_doc(struct arena *a, struct json_doc *doc, int64_t seq,
                                int64_t micro_batch);

/* Lookups; -1 when absent. */
int graph_find_op(const struct graph *g, const char *name);
/* The transformer layer of an op: N for an op named "layers.N.…" (the
 * generators' layers, which recomputation, ZeRO-3's units and the
 * pipeline's splits go by), -1 for the ops around them (embedding, head)
 * and for every op of a graph that names no layers. */
int graph_op_layer(const struct op *o);
/* A mixture of experts' router from a MoECombine's probabilities tensor
 * `probs` (its third input): the MatMul whose output the Softmax or
 * Sigmoid producing `probs` reads, its op index (-1 when there is none:
 * the probabilities come from elsewhere); *gate that Softmax's or
 * Sigmoid's (-1 with it). */
int graph_moe_router_of(const struct graph *g, int probs, int *gate);
/* Whether any of ops [lo, hi) belongs to a transformer layer: a pipeline
 * chunk that names none is one block to recomputation and memory. */
bool graph_ops_name_layers(const struct graph *g, int lo, int hi);
int graph_find_tensor(const struct graph *g, const char *name);
void graph_totals(const struct graph *g, struct graph_totals *out);
/* The model's parameter elements added up exactly, into *params; false
 * when they exceed GRAPH_MAX_ELEMENTS (the loaders refuse such a model,
 * so every graph they return passes). */
bool graph_params_fit(const struct graph *g, int64_t *params);

/* ------------------------------------------------- dimension signatures */

/* How an op's dimensions relate, einsum-like (docs/planner.md,
 * "Strategies and distributed operators"): every tensor dimension carries a label; a label cut the
 * same way in every tensor that carries it is a consistent cut. MatMul is
 * mk,kn->mn: m and n are kept, k is summed. The planner derives validity,
 * output layouts and the collectives of summed labels from this alone,
 * plus the few rules named in `rule`. */
#define SIG_MAX_LABELS 24
#define SIG_MAX_TENSORS 8

enum sig_role {
	SIG_KEEP,    /* appears in the output: cutting it cuts the output */
	SIG_SUM,     /* summed away (contracted, reduced, looked up): a cut leaves partial sums */
	SIG_WHOLE,   /* must stay whole on each device (a normalised or concatenated axis) */
};

enum sig_rule {
	SIG_RULE_NONE,
	SIG_RULE_RESHAPE,   /* labels do not carry through: the planner's reshape rule decides */
	SIG_RULE_VOCAB_CE,  /* SoftmaxCrossEntropy: a cut class label needs AllReduce(Max) and two AllReduce(Sum) */
};

struct op_sig {
	int n_labels;
	int64_t size[SIG_MAX_LABELS];
	enum sig_role role[SIG_MAX_LABELS];
	char name[SIG_MAX_LABELS];                    /* a letter per label, for reports: "mk,kn->mn" */
	int n_in, n_out;
	int in_rank[SIG_MAX_TENSORS], out_rank[SIG_MAX_TENSORS];
	int8_t in[SIG_MAX_TENSORS][GRAPH_MAX_RANK];   /* label of each input dimension; -1: broadcast, stays whole */
	int8_t out[SIG_MAX_TENSORS][GRAPH_MAX_RANK];  /* label of each output dimension; -1: none */
	enum sig_rule rule;
};

/* Op `op` as words that say everything a planner reads of it: kind,
 * dtype, FLOPs, bytes, parameters, every attribute, and each tensor's
 * role, dtype and shape in order, with which inputs repeat an earlier
 * one (names and positions in the graph excluded). Two ops with the same
 * words are alike: a transformer's layers repeat their ops' words.
 * Writes at most cap words into w and returns how many there are (more
 * than cap: they did not fit; GRAPH_OP_KEY_WORDS hold any op of at most
 * 2 x SIG_MAX_TENSORS tensors, every op a signature describes). */
#define GRAPH_OP_KEY_WORDS (18 + 6 * GRAPH_MAX_RANK + 2 * SIG_MAX_TENSORS * (4 + GRAPH_MAX_RANK))
int graph_op_key(const struct graph *g, int op, int64_t *w, int cap);

/* The signature of op `op`. False when the op has more tensors or labels
 * than a signature holds (such an op can only be replicated). */
bool graph_op_signature(const struct graph *g, int op, struct op_sig *out);
/* "mk,kn->mn" into buf. */
const char *op_sig_format(const struct op_sig *s, char *buf, size_t size);

#endif
