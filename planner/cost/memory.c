/* memory.c — what a device holds: model state as the frameworks hold it,
 * and the activations the backward pass really keeps (docs/cost-models.md,
 * "Memory").
 *
 * Model state per local parameter element by the scenario's precision
 * recipe: mixed-precision Adam as Megatron-LM holds it (its
 * distributed-optimizer table): bf16 weights with fp32 gradient
 * accumulation (2 + 4 bytes) and an fp32 master copy and two fp32 moments
 * (12 bytes); fp16 weights and fp16 gradients (2 + 2) with fp32 master
 * weights, master gradients and moments (16); fp32 weights and gradients
 * (4 + 4) with two moments (8); or as MindFormers holds it: weights and
 * accumulated gradients in one dtype, fp32 moments, no master copy; the
 * FP8 recipes Megatron-LM's bf16 one plus Transformer Engine's FP8 copy of
 * each weight and its transpose (1 + 1 bytes). ZeRO
 * divides the state, then the gradients, then the weights over the
 * data-parallel group. The verdict: the peak +- 5% against the device.
 *
 * Activations: each op saves for its backward what its gradient reads
 * (Korthikanti et al. 2022, §4): a MatMul its non-parameter inputs, GeLU
 * and SiLU their input, ReLU and Softmax their output, Dropout a 1-byte
 * mask, LayerNorm its input and two fp32 statistics per row (RMSNorm one),
 * Mul the inputs the other input's gradient needs (a gated unit's
 * activation output excepted: Megatron-LM's fused SwiGLU and GeGLU save
 * the gate and up projections and recompute it), the cross-entropy its
 * fp32 softmax, a Gather its indices; additions, casts, views and
 * reshapes nothing. Under an FP8 recipe a Transformer Engine Linear keeps
 * the FP8 copy of its input (1 byte an element) instead of the input,
 * shared by the Linears reading one tensor, and the fused attention keeps
 * its bf16 output beside the output projection's FP8 copy. A tensor saved by several ops is held once, in the
 * smaller of its producer's layout and the reader's (Megatron keeps the
 * sequence-parallel input of a column-parallel MatMul split and gathers it
 * again in backward; a norm the plan runs after the gather counts as run
 * before it; under sequence parallelism the embedding's output is held
 * split, as Megatron reduce-scatters it). Recomputation as Megatron does it: selective drops
 * what the attention cores save (their inputs from outside the core stay),
 * full keeps only each transformer layer's input (the ops named
 * "layers.N.", the generators' names; a chunk with no such ops is one
 * block) and holds one layer's activations while it is recomputed.
 *
 * Units: bytes per device per micro-batch. Hot path: none (a pass over a
 * chunk's ops per estimate).
 */
#include <string.h>

#include "cost-int.h"

static void state_bytes(enum precision_recipe r, enum dtype dt, struct cost_state_bytes *out);

void cost_state_bytes(const struct training *tr, enum dtype dt, struct cost_state_bytes *out)
{
	state_bytes(tr ? tr->precision : PRECISION_AUTO, dt, out);
	if (!tr)
		return;
	/* --grad-reduce-in-bf16: the bf16 recipes' fp32 main gradient kept in
	 * bf16 (the optimizer still steps an fp32 master copy) */
	if (tr->grad_reduce_in_bf16 && out->master > 0 && out->weight == 2 && out->grad > 2)
		out->grad = 2;
	/* the precision-aware optimizer's master weight and moments */
	if (out->master > 0)
		out->master = state_dtype_bytes(tr->main_params_dtype);
	if (out->moments > 0)
		out->moments = state_dtype_bytes(tr->exp_avg_dtype) + state_dtype_bytes(tr->exp_avg_sq_dtype);
}

static void state_bytes(enum precision_recipe r, enum dtype dt, struct cost_state_bytes *out)
{
	switch (r) {
	case PRECISION_MEGATRON_BF16: /* bf16 weight, fp32 main_grad, fp32 master + moments */
		*out = (struct cost_state_bytes){2, 4, 4, 0, 8, 0};
		return;
	case PRECISION_MEGATRON_FP16: /* fp16 weight and gradient; fp32 master weight and
	                                 gradient, moments */
		*out = (struct cost_state_bytes){2, 2, 4, 4, 8, 0};
		return;
	case PRECISION_FP32:          /* the weight is the master */
		*out = (struct cost_state_bytes){4, 4, 0, 0, 8, 0};
		return;
	case PRECISION_MINDFORMERS: /* fp16 or bf16 weight, accu_grads cloned from it, fp32
	                               moments */
		*out = (struct cost_state_bytes){(double)dtype_bytes(dt), (double)dtype_bytes(dt), 0, 0,
		                                 8, 0};
		return;
	case PRECISION_MINDFORMERS_FP32_WEIGHTS: /* param_init_type float32: the same in fp32 */
		*out = (struct cost_state_bytes){4, 4, 0, 0, 8, 0};
		return;
	case PRECISION_FP8_HYBRID: /* Megatron-LM's bf16 recipe, and Transformer Engine's FP8 */
	case PRECISION_FP8_E4M3:   /* weight and its transpose (1 + 1) */
		*out = (struct cost_state_bytes){2, 4, 4, 0, 8, 2};
		return;
	default:
		break;
	}
	switch (dt) {
	case DT_FP16:
		state_bytes(PRECISION_MEGATRON_FP16, dt, out);
		return;
	case DT_FP32:
		state_bytes(PRECISION_FP32, dt, out);
		return;
	case DT_BF16:
		state_bytes(PRECISION_MEGATRON_BF16, dt, out);
		return;
	default: /* not trained: its bytes, nothing else */
		*out = (struct cost_state_bytes){(double)dtype_bytes(dt), 0, 0, 0, 0, 0};
		return;
	}
}

double cost_param_bytes_per_elem(const struct training *tr, enum dtype dt)
{
	struct cost_state_bytes b;
	cost_state_bytes(tr, dt, &b);
	return b.weight;
}

bool cost_precision_fp8(enum precision_recipe r)
{
	return r == PRECISION_FP8_HYBRID || r == PRECISION_FP8_E4M3;
}

bool cost_fp8_linear(const struct graph *g, enum precision_recipe r, int op, int *x)
{
	const struct op *o = &g->ops[op];
	*x = -1;
	/* a MatMul with a weight, or a BatchMatMul with one: a mixture of
	 * experts' local experts, which Megatron-Core runs as one grouped GEMM
	 * in FP8 too (Transformer Engine's GroupedLinear); attention's batched
	 * GEMMs read no weight; not a mixture of experts' router, a GEMM in
	 * the input's precision outside Transformer Engine's Linears
	 * (Megatron-Core's router_gating_linear, megatron/core/transformer/
	 * moe/moe_utils.py: bf16 operands, the logits in moe_router_dtype) */
	if (!cost_precision_fp8(r) || (o->kind != OP_MATMUL && o->kind != OP_BATCHMATMUL) ||
	    graph_op_layer(o) < 0 || o->moe_router)
		return false;
	bool weight = false;
	for (int k = 0; k < o->n_in && k < 2; k++) {
		if (g->tensors[o->in[k]].role == TENSOR_PARAM)
			weight = true;
		else
			*x = k;
	}
	return weight && *x >= 0;
}

double cost_fp8_meta_bytes(void)
{
	double tensors = 3 + 2, f = (double)dtype_bytes(DT_FP32);
	return tensors * COST_FP8_AMAX_HISTORY * f + tensors * 2 * f;
}

double cost_grad_bytes_per_elem(const struct training *tr, enum dtype dt)
{
	struct cost_state_bytes b;
	cost_state_bytes(tr, dt, &b);
	return b.grad;
}

double cost_optimizer_bytes_per_elem(const struct training *tr, enum dtype dt)
{
	struct cost_state_bytes b;
	cost_state_bytes(tr, dt, &b);
	return b.master + b.master_grad + b.moments;
}

double cost_bucket_wire_bytes(const struct plan_bucket *b, const struct training *tr)
{
	double w = (double)dtype_bytes(b->dtype);
	return w > 0 ? b->bytes * cost_grad_bytes_per_elem(tr, b->dtype) / w : b->bytes;
}

double cost_param_gather_bytes(const struct graph *g, const struct training *tr, int op,
                               double bytes, enum dtype dt)
{
	int x;
	double w = (double)dtype_bytes(dt);
	if (!tr->fp8_param_gather || w <= 1 || !cost_fp8_linear(g, tr->precision, op, &x))
		return bytes;
	return bytes / w;
}

double cost_bucket_gather_bytes(const struct graph *g, const struct training *tr,
                                const struct plan_bucket *b)
{
	if (!tr->fp8_param_gather)
		return b->bytes;
	double s = 0;
	for (int j = 0; j < b->n; j++)
		s += cost_param_gather_bytes(g, tr, b->ops[j], b->op_bytes[j], b->dtype);
	return s;
}

/* The band around a predicted peak (docs/cost-models.md, "Fits, tight,
 * does not fit"): Megatron-LM's theoretical memory adds 5% for the
 * optimizer's and other temporaries (overhead_factor = 1.05 in
 * megatron/training/theoretical_memory_usage.py), which the model does not
 * list, and the caching allocator's fragmentation comes on top on the
 * same order; the model's own error against the closed forms is a few
 * percent the other way. */
#define MEMORY_BAND 0.05

void cost_memory_verdict(double peak_bytes, double capacity_bytes, struct cost_verdict *out)
{
	out->peak_bytes = peak_bytes;
	out->capacity_bytes = capacity_bytes;
	out->low_bytes = peak_bytes * (1 - MEMORY_BAND);
	out->high_bytes = peak_bytes * (1 + MEMORY_BAND);
	out->margin_bytes = capacity_bytes - peak_bytes;
	if (!(out->high_bytes > capacity_bytes))
		out->fit = FIT_YES;
	else if (out->low_bytes > capacity_bytes)
		out->fit = FIT_NO;
	else
		out->fit = FIT_TIGHT;
}

const char *const cost_fit_names[FIT_COUNT] = {"fits", "tight", "does not fit"};


/* torchtitan's per-op selective checkpointing (recompute "op"; pytorch/
 * torchtitan torchtitan/parallelisms/parallelize_llama.py at 9dec370,
 * _apply_ac_to_transformer_block with selective_ac_option "op"): in each
 * transformer layer the policy keeps the outputs of the ops of its
 * _save_list (aten.mm, the scaled-dot-product attention kernels, the
 * tensor-parallel reduce-scatter), except every second mm of the layer's
 * forward counted from one, and recomputes every other op in the
 * backward. In the graph: the layer's MatMuls by their order (the 1st,
 * 3rd, ... kept), the fused attention's ops (with FlashAttention: `attn`,
 * plan_attention_fused; an unfused attention's BatchMatMuls are aten.bmm,
 * not in the list) and the expert dispatch and combine (all_to_all_single,
 * in the list of torchtitan's later torchtitan/distributed/
 * activation_checkpoint.py). Ops outside the layers are not checkpointed.
 * Into kept[] and recomputed[] (either may be NULL), per op. */
static void op_policy(const struct graph *g, const uint8_t *attn, bool *kept, bool *recomputed)
{
	int last = -1, mm = 0;
	for (int i = 0; i < g->n_ops; i++) {
		int L = graph_op_layer(&g->ops[i]);
		if (L < 0)
			continue;
		if (L != last) {
			last = L;
			mm = 0;
		}
		enum op_kind k = g->ops[i].kind;
		bool keep = (attn && attn[i] != ATTN_NONE) || k == OP_MOEDISPATCH || k == OP_MOECOMBINE;
		if (k == OP_MATMUL && !keep)
			keep = ++mm % 2 == 1;
		if (kept)
			kept[i] = keep;
		if (recomputed)
			recomputed[i] = !keep;
	}
}

/* cost.h */
bool *cost_recomputed(struct arena *a, const struct plan *p, const struct plan_part *pp)
{
	const struct training *t = &p->scenario->training;
	const struct graph *g = p->graph;
	bool *r = arena_calloc(a, (size_t)g->n_ops + 1, sizeof(bool));
	if (r && t->recompute == RECOMPUTE_OP) {
		const uint8_t *attn = NULL;
		if (t->flash_attention && !(attn = plan_attention_fused(a, g)))
			return NULL;
		op_policy(g, attn, NULL, r);
		return r;
	}
	if (!r || t->recompute != RECOMPUTE_FULL)
		return r;
	for (int ch = 0; ch < pp->n_chunks; ch++) {
		int lo = pp->first_op[ch], hi = pp->first_op[ch + 1], n = 0, last = -1;
		bool layers = graph_ops_name_layers(g, lo, hi);
		for (int i = lo; i < hi; i++) {
			int L = graph_op_layer(&g->ops[i]);
			if (L >= 0 && L != last) {
				n++;
				last = L;
			}
			/* the frameworks checkpoint the transformer layers alone:
			 * the embedding, the final norm, the head and the loss run
			 * once and keep their activations, as the memory counts them
			 * (cost_chunk_activations; a chunk that names no layers is one
			 * block) */
			r[i] = layers ? L >= 0 && (t->recompute_layers <= 0 || n <= t->recompute_layers)
			              : t->recompute_layers <= 0;
		}
	}
	return r;
}

static bool has_gradient(const struct tensor *t)
{
	return t->dtype == DT_FP32 || t->dtype == DT_FP16 || t->dtype == DT_BF16;
}

/* Megatron-LM's embedding under sequence parallelism reduce-scatters its
 * output into the sequence-parallel region before its dropout
 * (LanguageModelEmbedding, reduce_scatter_embeddings): what the ops before
 * the first transformer layer make is held split over the tensor-parallel
 * group, where a plan may run them replicated over it. The copies of op
 * op's output l (tensor t) over its replica axes when op comes before the
 * first op of a transformer layer (first_layer; -1: the graph has none)
 * and t carries the batch's tokens (dimension 0 the graph's batch, or its
 * batch x sequence: not a position table), else 1. */
static double embedding_scatter(const struct plan *p, int first_layer, int op, int t,
                                const struct layout *l)
{
	const struct graph *g = p->graph;
	const struct tensor *tt = &g->tensors[t];
	int64_t tokens = g->gen && g->gen->seq > 0 ? g->batch * g->gen->seq : -1;
	if (!p->scenario || !p->scenario->training.sequence_parallel || l->partial ||
	    op >= first_layer || tt->rank < 2 || (tt->dims[0] != g->batch && tt->dims[0] != tokens))
		return 1;
	uint32_t rep = layout_replica_axes(l);
	double copies = 1;
	for (int x = 0; x < l->dm.n; x++)
		if (rep & (1u << x))
			copies *= (double)l->dm.size[x];
	return copies;
}

/* The smaller of the layout op d reads of input i and the layout its
 * producer hands on (split as Megatron holds the embedding's output). */
static double held_bytes(const struct plan *p, int fl, const struct dist_op *d, int i)
{
	const struct graph *g = p->graph;
	int t = g->ops[d->op].in[i];
	double b = layout_local_bytes(&d->in[i]);
	int pr = g->tensors[t].producer;
	if (pr >= 0) {
		const struct dist_op *src = &p->ops[pr];
		const struct layout *out = &src->out[plan_output_index(&g->ops[pr], t)];
		double q = layout_local_bytes(out) / embedding_scatter(p, fl, pr, t, out);
		b = q < b ? q : b;
	}
	return b;
}

/* A norm the plan runs on a gathered input (a sequence-parallel plan
 * gathers before a norm that feeds several column-parallel MatMuls, one
 * redistribution per edge) is, for memory, what Megatron runs before the
 * gather: its statistics and its output are held at the size of its input
 * before the gather. The fraction, 1 for any other op. */
static double gathered_norm(const struct plan *p, int fl, int op)
{
	const struct op *o = &p->graph->ops[op];
	if (o->kind != OP_LAYERNORM && o->kind != OP_RMSNORM)
		return 1;
	double in = layout_local_bytes(&p->ops[op].in[0]);
	return in > 0 ? held_bytes(p, fl, &p->ops[op], 0) / in : 1;
}

/* The bytes a rank holds of input i of op d when it is saved. */
static double saved_input_bytes(const struct plan *p, int fl, const struct dist_op *d, int i)
{
	int pr = p->graph->tensors[p->graph->ops[d->op].in[i]].producer;
	return held_bytes(p, fl, d, i) * (pr >= 0 ? gathered_norm(p, fl, pr) : 1);
}

/* A tensor an op saves for its backward, and its bytes on one rank; a mask
 * or a statistic has tensor -1 (never shared); the FP8 copy of tensor t
 * that Transformer Engine's Linears keep is n_tensors + t (shared by the
 * Linears reading t, apart from t itself). */
struct saved {
	int tensor;
	double bytes;
};

/* What op `op` saves, into keep[]; returns the count. `attn` (with
 * FlashAttention: plan_attention_fused) fuses the attention: the kernel
 * keeps Q, K, V and each query row's log-sum-exp (fp32), never the scores
 * or the probabilities. */
static int op_saved(const struct plan *p, int fl, const uint8_t *attn, int op,
                    struct saved keep[SIG_MAX_TENSORS + 2])
{
	const struct graph *g = p->graph;
	const struct op *o = &g->ops[op];
	const struct dist_op *d = &p->ops[op];
	int n = 0;
	int part = attn ? attn[op] : ATTN_NONE;
	if (part == ATTN_INNER)
		return 0;
	if (part == ATTN_SCORES) {
		for (int i = 0; i < 2; i++)
			keep[n++] = (struct saved){o->in[i], saved_input_bytes(p, fl, d, i)};
		int64_t shape[GRAPH_MAX_RANK];
		layout_local_shape(&d->out[0], shape);
		double rows = (double)layout_local_elems(&d->out[0]) / (double)shape[d->out[0].rank - 1];
		keep[n++] = (struct saved){-1, rows * 4};
		return n;
	}
	enum precision_recipe prec = p->scenario ? p->scenario->training.precision : PRECISION_AUTO;
	if (part == ATTN_CONTEXT) {
		keep[n++] = (struct saved){o->in[1], saved_input_bytes(p, fl, d, 1)};
		/* its output, which the kernel's backward reads: the output
		 * projection's saved input unless that keeps an FP8 copy */
		if (cost_precision_fp8(prec))
			keep[n++] = (struct saved){o->out[0], layout_local_bytes(&d->out[0])};
		return n;
	}
	int x;
	switch (o->kind) {
	case OP_MATMUL:
	case OP_BATCHMATMUL:
		if (cost_fp8_linear(g, prec, op, &x)) {
			/* Transformer Engine keeps the quantized input (its
			 * column-wise FP8 data, or the row-wise shard it gathers
			 * again under sequence parallelism): 1 byte an element */
			double b = saved_input_bytes(p, fl, d, x) /
			           (double)dtype_bytes(g->tensors[o->in[x]].dtype);
			keep[n++] = (struct saved){g->n_tensors + o->in[x], b};
			break;
		}
		for (int i = 0; i < o->n_in && i < 2; i++)
			if (g->tensors[o->in[i]].role != TENSOR_PARAM)
				keep[n++] = (struct saved){o->in[i], saved_input_bytes(p, fl, d, i)};
		break;
	case OP_MUL:
		/* dA = dY·B, dB = dY·A: each input is kept when the other needs a
		 * gradient; a gated unit's activation output (SiLU or GeLU of the
		 * gate) is not: Megatron-LM's fused bias_swiglu / bias_geglu (its
		 * default) and Transformer Engine's LayerNormMLP save the gate's
		 * input, which the activation keeps, and recompute it */
		for (int i = 0; i < o->n_in && i < 2; i++) {
			const struct tensor *in = &g->tensors[o->in[i]], *other = &g->tensors[o->in[1 - i]];
			int pr = in->producer;
			if (pr >= 0 && (g->ops[pr].kind == OP_SILU || g->ops[pr].kind == OP_GELU))
				continue;
			if (in->role != TENSOR_PARAM && has_gradient(other))
				keep[n++] = (struct saved){o->in[i], saved_input_bytes(p, fl, d, i)};
		}
		break;
	case OP_GELU:
	case OP_SILU:
		keep[n++] = (struct saved){o->in[0], saved_input_bytes(p, fl, d, 0)};
		break;
	case OP_RELU:
	case OP_SIGMOID: /* σ' = σ(1 - σ): the output */
	case OP_SOFTMAX:
		keep[n++] = (struct saved){o->out[0], layout_local_bytes(&d->out[0])};
		break;
	case OP_DROPOUT:
		keep[n++] = (struct saved){-1, (double)layout_local_elems(&d->out[0]) /
		                                   embedding_scatter(p, fl, op, o->out[0], &d->out[0])};
		break;
	case OP_LAYERNORM:
	case OP_RMSNORM: {
		keep[n++] = (struct saved){o->in[0], saved_input_bytes(p, fl, d, 0)};
		int64_t shape[GRAPH_MAX_RANK], row = 1;
		layout_local_shape(&d->in[0], shape);
		for (int k = o->attrs.axis; k < d->in[0].rank; k++)
			row *= shape[k];
		double rows = row > 0 ? (double)layout_local_elems(&d->in[0]) / (double)row : 0;
		keep[n++] = (struct saved){-1, rows * 4 * (o->kind == OP_LAYERNORM ? 2 : 1) *
		                                   gathered_norm(p, fl, op)};
		break;
	}
	case OP_SOFTMAXCROSSENTROPY:
		keep[n++] = (struct saved){-1, (double)layout_local_elems(&d->in[0]) * 4};
		break;
	case OP_MOEDISPATCH: /* the index, to send the slots' gradients back */
		keep[n++] = (struct saved){o->in[1], saved_input_bytes(p, fl, d, 1)};
		break;
	case OP_MOECOMBINE: /* dProbs reads the slots; dSlots the index and probabilities */
		for (int i = 0; i < o->n_in; i++)
			keep[n++] = (struct saved){o->in[i], saved_input_bytes(p, fl, d, i)};
		break;
	case OP_GATHER:
		for (int i = 0; i < o->n_in; i++)
			if (!has_gradient(&g->tensors[o->in[i]]))
				keep[n++] = (struct saved){o->in[i], saved_input_bytes(p, fl, d, i)};
		break;
	default:
		break; /* additions, casts, views, reductions, slices: nothing */
	}
	return n;
}

/* Bytes counted per tensor in one pass; an entry holds only when stamped
 * with the pass, so a new pass clears the table in O(1). */
struct seen {
	double *bytes;
	uint32_t *stamp;
	uint32_t pass;
	int n;
};

struct cost_act_scratch {
	const struct plan *p;
	struct seen chunk, layer;
	struct saved *rec;       /* what every op saves (op_saved), op after op */
	int *first;              /* [n_ops + 1]: op i's are rec[first[i] .. first[i + 1]) */
	int first_layer;         /* the first op of a transformer layer; -1: none */
	const uint8_t *attn;     /* plan_attention_fused with FlashAttention, else NULL */
	bool *kept;              /* per op: its output kept under recompute "op" (op_policy) */
};

static bool seen_init(struct arena *a, struct seen *s, int n)
{
	s->bytes = arena_alloc_raw(a, ((size_t)n + 1) * sizeof(double)); /* read when stamped */
	s->stamp = arena_alloc(a, ((size_t)n + 1) * sizeof(uint32_t));
	s->pass = 0;
	s->n = n;
	return s->bytes && s->stamp;
}

static void seen_clear(struct seen *s)
{
	if (++s->pass == 0) {  /* wrapped: every stamp is stale again */
		s->pass = 1;
		memset(s->stamp, 0, ((size_t)s->n + 1) * sizeof(uint32_t));
	}
}

static double seen_get(const struct seen *s, int t)
{
	return s->stamp[t] == s->pass ? s->bytes[t] : 0;
}

static void seen_set(struct seen *s, int t, double b)
{
	s->stamp[t] = s->pass;
	s->bytes[t] = b;
}

/* Every op's saved tensors, once: the estimate reads them per op and per
 * chunk, under each recomputation a search tries. */
static bool saved_records(struct arena *a, struct cost_act_scratch *x)
{
	const struct plan *p = x->p;
	int n_ops = p->graph->n_ops, cap = 2 * n_ops + 16, n = 0;
	x->first = arena_alloc_raw(a, ((size_t)n_ops + 1) * sizeof(int));
	x->rec = arena_alloc_raw(a, (size_t)cap * sizeof(*x->rec));
	if (!x->first || !x->rec)
		return false;
	const uint8_t *attn = NULL;
	if (p->scenario && p->scenario->training.flash_attention &&
	    !(attn = plan_attention_fused(a, p->graph)))
		return false;
	x->attn = attn;
	for (int i = 0; i < n_ops; i++) {
		struct saved keep[SIG_MAX_TENSORS + 2];
		int k = op_saved(p, x->first_layer, attn, i, keep);
		if (n + k > cap) {
			struct saved *r = arena_grow(a, x->rec, (size_t)n, (size_t)(2 * cap), sizeof(*r));
			if (!r)
				return false;
			x->rec = r;
			cap *= 2;
		}
		x->first[i] = n;
		memcpy(x->rec + n, keep, (size_t)k * sizeof(keep[0]));
		n += k;
	}
	x->first[n_ops] = n;
	return true;
}

struct cost_act_scratch *cost_act_scratch_new(struct arena *a, const struct plan *p)
{
	const struct graph *g = p->graph;
	struct cost_act_scratch *x = arena_alloc(a, sizeof(*x));
	if (!x)
		return NULL;
	x->p = p;
	x->first_layer = -1;
	for (int i = 0; i < g->n_ops && x->first_layer < 0; i++)
		if (graph_op_layer(&g->ops[i]) >= 0)
			x->first_layer = i;
	if (!seen_init(a, &x->chunk, 2 * g->n_tensors) || !seen_init(a, &x->layer, 2 * g->n_tensors) ||
	    !saved_records(a, x) || !(x->kept = arena_calloc(a, (size_t)g->n_ops + 1, sizeof(bool))))
		return NULL;
	op_policy(g, x->attn, x->kept, NULL);
	return x;
}

double cost_act_op_bytes(const struct cost_act_scratch *x, int op)
{
	double sum = 0;
	for (int k = x->first[op]; k < x->first[op + 1]; k++)
		sum += x->rec[k].bytes;
	return sum;
}

/* cost-int.h */
double cost_act_norm_fraction(const struct cost_act_scratch *x, int op)
{
	return gathered_norm(x->p, x->first_layer, op);
}

/* Adds what ops [lo, hi) save, each shared tensor once (seen marks the
 * tensors counted: a tensor's largest saved size wins), skipping what the
 * attention cores save when `skip_core`. */
static double saved_sum(const struct cost_act_scratch *x, const bool *core, bool skip_core,
                        int lo, int hi, struct seen *seen)
{
	const struct graph *g = x->p->graph;
	double sum = 0;
	for (int i = lo; i < hi; i++) {
		for (int k = x->first[i]; k < x->first[i + 1]; k++) {
			const struct saved *r = &x->rec[k];
			int t = r->tensor;
			/* selective: what is produced inside a core is recomputed
			 * (a core op's output or mask, and a core output read
			 * after it); what a core reads from outside stays */
			int base = t >= g->n_tensors ? t - g->n_tensors : t;
			bool inside = t >= 0 ? g->tensors[base].producer >= 0 && core[g->tensors[base].producer]
			                     : core[i];
			if (skip_core && inside)
				continue;
			if (t < 0) {
				sum += r->bytes;
			} else {
				double had = seen_get(seen, t);
				if (r->bytes > had) {
					sum += r->bytes - had;
					seen_set(seen, t, r->bytes);
				}
			}
		}
	}
	return sum;
}

/* What the loss of ops [lo, hi) holds beside what it saves while its
 * backward runs: with training.cross_entropy "pytorch", aten's
 * nll_loss_backward writes the log-probabilities' gradient and
 * log_softmax's backward a new gradient of the logits, both fp32 beside
 * the saved fp32 log-probabilities (8 bytes a logit); the other losses
 * work in place. */
static double loss_working(const struct cost_act_scratch *x, int lo, int hi)
{
	const struct plan *p = x->p;
	double w = 0;
	if (!p->scenario || p->scenario->training.cross_entropy != XENT_PYTORCH)
		return 0;
	for (int i = lo; i < hi; i++)
		if (p->graph->ops[i].kind == OP_SOFTMAXCROSSENTROPY)
			w = fmax(w, 8 * (double)layout_local_elems(&p->ops[i].in[0]));
	return w;
}

/* What the layer of ops [lo, hi) reads from outside it (its input), each
 * tensor once (seen). */
static double layer_input(const struct cost_act_scratch *x, int lo, int hi, struct seen *seen)
{
	const struct plan *p = x->p;
	const struct graph *g = p->graph;
	double sum = 0;
	for (int k = lo; k < hi; k++)
		for (int in = 0; in < g->ops[k].n_in; in++) {
			int t = g->ops[k].in[in], pr = g->tensors[t].producer;
			if (g->tensors[t].role == TENSOR_PARAM || (pr >= lo && pr < hi) ||
			    seen_get(seen, t) > 0)
				continue;
			double b = saved_input_bytes(p, x->first_layer, &p->ops[k], in);
			seen_set(seen, t, b);
			sum += b;
		}
	return sum;
}

/* The outputs recompute "op" keeps of ops [lo, hi) (op_policy): a kept
 * op's output; of the fused attention, its output (the context
 * BatchMatMul's) and each query row's log-sum-exp (the scores op's
 * statistic), as PyTorch's flash-attention op returns them. */
static double kept_outputs(const struct cost_act_scratch *x, int lo, int hi, struct seen *seen)
{
	const struct plan *p = x->p;
	const struct graph *g = p->graph;
	double sum = 0;
	for (int k = lo; k < hi; k++) {
		int part = x->attn ? x->attn[k] : ATTN_NONE;
		if (!x->kept[k] || part == ATTN_INNER)
			continue;
		if (part == ATTN_SCORES) {
			for (int r = x->first[k]; r < x->first[k + 1]; r++)
				if (x->rec[r].tensor < 0)
					sum += x->rec[r].bytes;
			continue;
		}
		for (int o = 0; o < g->ops[k].n_out; o++) {
			int t = g->ops[k].out[o];
			double b = layout_local_bytes(&p->ops[k].out[o]);
			if (b > seen_get(seen, t)) {
				sum += b - seen_get(seen, t);
				seen_set(seen, t, b);
			}
		}
	}
	return sum;
}

void cost_chunk_activations(struct cost_act_scratch *x, const struct plan_part *pp,
                            const bool *core, int ch, double *stored, double *working)
{
	const struct plan *p = x->p;
	const struct graph *g = p->graph;
	enum recompute_mode rec = p->scenario->training.recompute;
	int lo = pp->first_op[ch], hi = pp->first_op[ch + 1];
	struct seen *seen = &x->chunk;
	seen_clear(seen);
	double loss = loss_working(x, lo, hi);
	*working = loss;
	if (rec != RECOMPUTE_FULL && rec != RECOMPUTE_OP) {
		*stored = saved_sum(x, core, rec == RECOMPUTE_SELECTIVE, lo, hi, seen);
		return;
	}
	*working = 0;
	/* Full: the ops outside any layer save as usual; a layer keeps its
	 * input (the tensors its ops read from outside it) and, while it is
	 * recomputed in backward, everything it saves. A chunk without named
	 * layers is one block. Op: a layer keeps its input and the outputs of
	 * the ops the policy keeps (op_policy), and holds everything it saves
	 * while it is recomputed. */
	*stored = 0;
	bool layers = graph_ops_name_layers(g, lo, hi);
	int64_t n_rec = p->scenario->training.recompute_layers, ord = 0;
	double kept = 0; /* what the layers after the first N save */
	for (int i = lo; i < hi;) {
		int L = graph_op_layer(&g->ops[i]), j = i + 1;
		while (j < hi && graph_op_layer(&g->ops[j]) == L)
			j++;
		ord += L >= 0;
		if (L < 0 && (layers || rec == RECOMPUTE_OP)) {
			*stored += saved_sum(x, core, false, i, j, seen);
		} else if (L >= 0 && rec == RECOMPUTE_OP) {
			*stored += layer_input(x, i, j, seen) + kept_outputs(x, i, j, seen);
			/* the recomputation adds what is not kept already */
			seen_clear(&x->layer);
			layer_input(x, i, j, &x->layer);
			kept_outputs(x, i, j, &x->layer);
			double w = saved_sum(x, core, false, i, j, &x->layer);
			*working = w > *working ? w : *working;
		} else if (L >= 0 && n_rec > 0 && ord > n_rec) {
			/* recompute_layers: the chunk's layers after the first N save
			 * as without recomputation */
			double b = saved_sum(x, core, false, i, j, seen);
			*stored += b;
			kept += b;
		} else {
			*stored += layer_input(x, i, j, seen);
			seen_clear(&x->layer);
			double w = saved_sum(x, core, false, i, j, &x->layer);
			*working = w > *working ? w : *working;
		}
		i = j;
	}
	/* the backward frees the kept layers' activations before it reaches
	 * the recomputed ones: the peak is the larger of the two */
	*working = fmax(loss, *working > kept ? *working - kept : 0);
}

/* Activation offload (Transformer Engine v2.8's cpu_offload.py, which
 * Megatron-Core's --cpu-offloading-num-layers drives): the offload groups
 * are the first n_offload transformer layers' commits (current_group <
 * num_offload_group); of what a layer saves, the handler moves the tensors
 * marked for it (mark_activation_offload): Transformer Engine's Linears'
 * and norms' inputs and statistics, its attention's tensors, Megatron's
 * fused SwiGLU's input (megatron/core/fusions/fused_bias_swiglu.py,
 * cpu_offload_input). The dropout masks outside the attention core
 * (Megatron's bias-dropout-add, not marked) stay. Each layer's bytes are
 * counted on their own. */
void cost_chunk_offload(struct cost_act_scratch *x, const struct plan_part *pp, const bool *core,
                        int ch, int64_t n_offload, double *layer_bytes, double *offloaded,
                        double *largest, int64_t *layers, uint8_t *layer_ops)
{
	const struct graph *g = x->p->graph;
	int lo = pp->first_op[ch], hi = pp->first_op[ch + 1];
	memset(layer_bytes, 0, (size_t)n_offload * sizeof(double));
	*offloaded = *largest = 0;
	*layers = 0;
	for (int i = lo; i < hi;) {
		int L = graph_op_layer(&g->ops[i]), j = i + 1;
		while (j < hi && graph_op_layer(&g->ops[j]) == L)
			j++;
		for (int k = i; k < j; k++)
			layer_ops[k] = L >= 0;
		if (L >= 0) {
			(*layers)++;
			if (L < n_offload) {
				seen_clear(&x->layer);
				double b = 0;
				for (int k = i; k < j; k++)
					if (g->ops[k].kind != OP_DROPOUT || core[k])
						b += saved_sum(x, core, false, k, k + 1, &x->layer);
				layer_bytes[L] += b;
				*offloaded += b;
				*largest = layer_bytes[L] > *largest ? layer_bytes[L] : *largest;
			}
		}
		i = j;
	}
}
