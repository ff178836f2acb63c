/* estimate.c — the symbolic estimate of a complete plan: one training
 * iteration's time and one device's memory, in closed form
 * (docs/planner-estimate.md has every formula).
 *
 * The graph is one step batch, sharded by the plan; an iteration runs it
 * steps_per_iteration = global_batch / graph batch times (forward, then
 * backward with mirrored communication), then synchronises the gradients
 * once and runs Adam once. Per op: compute by the device's kernel model
 * (cost_compute_s, docs/cost-models.md), backward compute by a per-kind
 * table, the op's own collectives and the redistributions into it
 * (cost_step_s), their mirrors in backward, and the all-reduce of an
 * input's gradient over the axes the op cuts elsewhere (Megatron's "f").
 * No overlap and no contention: that is the simulator's. Plans are
 * symmetric: memory is rank 0's.
 *
 * Units: seconds, bytes, FLOPs. Hot path: one pass over ops and edges;
 * each collective walks its rank groups once (cost_step_s).
 */
#include <stdlib.h>
#include <math.h>
#include <string.h>

#include "cost-int.h"

const char *const est_category_names[EST_CATEGORY_COUNT] = {
	"compute_forward", "compute_backward", "comm_forward", "redistribution",
	"comm_backward", "recompute", "param_gather", "pipeline_p2p", "gradient_sync", "optimizer",
	"pipeline_bubble",
};

/* ------------------------------------------------ backward compute table */

enum bwd_rule {
	BWD_SCALE,        /* factor x the forward time */
	BWD_SCATTER_ADD,  /* read the output gradient, read-modify-write table rows */
};

struct bwd_kind {
	enum bwd_rule rule;
	double factor;    /* BWD_SCALE: backward / forward time */
};

/* MatMul-like: input and weight gradients, each a forward's work (the
 * GEMMs dX = dY·Wᵀ and dW = Xᵀ·dY have the forward's dimensions in another
 * order, and the shape factor g(m)·g(n)·g(k) does not depend on the order).
 * Element-wise and data movement: about one forward pass of bytes.
 * Normalisations: the gradient reads the input, the output gradient and
 * the saved statistics twice over (~2x). */
static const struct bwd_kind bwd_table[OP_COUNT] = {
	[OP_MATMUL] = {BWD_SCALE, 2},
	[OP_BATCHMATMUL] = {BWD_SCALE, 2},
	[OP_ADD] = {BWD_SCALE, 1},
	[OP_SUB] = {BWD_SCALE, 1},
	[OP_MUL] = {BWD_SCALE, 1},
	[OP_BIASADD] = {BWD_SCALE, 1},
	[OP_RELU] = {BWD_SCALE, 1},
	[OP_GELU] = {BWD_SCALE, 1},
	[OP_SILU] = {BWD_SCALE, 1},
	[OP_SIGMOID] = {BWD_SCALE, 1},
	[OP_DROPOUT] = {BWD_SCALE, 1},
	[OP_CAST] = {BWD_SCALE, 1},
	[OP_SOFTMAX] = {BWD_SCALE, 2},
	[OP_LAYERNORM] = {BWD_SCALE, 2},
	[OP_RMSNORM] = {BWD_SCALE, 2},
	[OP_RESHAPE] = {BWD_SCALE, 0},
	[OP_TRANSPOSE] = {BWD_SCALE, 1},
	[OP_REDUCESUM] = {BWD_SCALE, 1},
	[OP_REDUCEMEAN] = {BWD_SCALE, 1},
	[OP_GATHER] = {BWD_SCATTER_ADD, 0},
	[OP_CONCAT] = {BWD_SCALE, 1},
	[OP_SPLIT] = {BWD_SCALE, 1},
	[OP_STRIDEDSLICE] = {BWD_SCALE, 1},
	[OP_SOFTMAXCROSSENTROPY] = {BWD_SCALE, 1},
	[OP_MOEDISPATCH] = {BWD_SCALE, 1},
	[OP_MOECOMBINE] = {BWD_SCALE, 2},
};
_Static_assert(OP_COUNT == 26, "bwd_table covers every op kind");

double cost_kernel_class_backward_factor(int cls)
{
	double f = 0;
	for (int k = 0; k < OP_COUNT; k++)
		if (cost_kernel_class((enum op_kind)k) == cls) {
			SL_ASSERT(f == 0 || f == bwd_table[k].factor); /* one factor a class */
			f = bwd_table[k].factor;
		}
	SL_ASSERT(f > 0);
	return f;
}

/* The optimizer step per local parameter element, in bytes moved, as
 * Megatron-LM's mixed-precision optimizer runs it (Float16Optimizer-
 * WithFloat16Params.step, megatron/optimizer/optimizer.py at commit
 * de7dc40; its distributed optimizer makes the same passes over a shard),
 * every pass memory-bound:
 *   - gradients kept in fp16 (cost_grad_bytes_per_elem) copied to fp32
 *     main gradients: read g, write 4;
 *   - fp16's loss scale: the main gradients unscaled and checked for
 *     inf/NaN in place, read and write 4 (bf16 and fp32 have no scaler);
 *   - their norm for clipping (--clip-grad, 1.0 by default): read 4 (the
 *     rescale, run only when the norm is over the limit, is not counted);
 *   - Adam (apex's FusedAdam): the gradient read, the fp32 master (the
 *     weight itself for fp32) and two moments read and written, 4 + 24;
 *   - the master copied back to the weight: read 4, write w (not fp32).
 * fp16 52 B, bf16 38 B, fp32 32 B. A recipe without a master copy
 * (MindFormers': AdamW updates the weight in place from the accumulated
 * gradient) reads the gradient once, unscales it in place under fp16's
 * loss scale, takes its norm, and reads and writes the weight and the two
 * moments: mindformers on fp16 4 (unscale) + 2 (norm) + 2 + 4 + 16 = 28 B,
 * on bf16 24 B. A master copy or moments in another precision
 * (training.main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype) are read
 * and written, and the master read for the copy back, at their own
 * bytes: bf16 with all three in bf16 4 (norm) + 4 + 2 (2 + 2 + 2) (Adam) + 2
 * + 2 (the copy back) = 24 B. */
static double optimizer_step_bytes(const struct training *tr, enum dtype dt)
{
	struct cost_state_bytes b;
	cost_state_bytes(tr, dt, &b);
	double w = b.weight, g = b.grad, f = (double)dtype_bytes(DT_FP32);
	bool master = b.master + b.master_grad > 0, scaled = dt == DT_FP16;
	if (!master)
		return (scaled ? 2 * g : 0) + g + g + 2 * w + 2 * b.moments;
	double copy = g < f ? g + f : 0, unscale = scaled ? 2 * f : 0, norm = f;
	double adam = f + 2 * (b.master + b.moments), back = b.master + w;
	return copy + unscale + norm + adam + back;
}

/* ------------------------------------------------------------ the state */

/* The time lines of a collective's groups, one per algorithm
 * (cost_groups_algo_lines), which hold for every message size: the groups
 * are costed once, not once per size, and the algorithm rule is taken at
 * each size. The lines sit in a pool; a slot points into it. */
struct line_memo {
	uint64_t key;            /* 0: empty */
	int n;                   /* distinct group shapes; -1: too many to remember */
	int at;                  /* their lines: pool[at .. at+n) */
};

#define MEMO_SLOTS 4096     /* the estimate's memo: room to spare (each of a plan's tens of groups takes
                             two slots, its description's and its own) */
#define CHUNK_SLOTS 512     /* pipeline chunks remembered (stage()) */
#define SHAPES_MAX 4         /* group shapes remembered per collective */

struct est_ctx {
	const struct graph *g;
	const struct topology *t;
	struct arena *scratch;   /* the context, its memo and the rank groups it builds */
	struct estimate *e;      /* categories and memory accumulate here */
	int64_t steps;           /* graph executions per iteration */
	enum collective_algo wanted;  /* the scenario's simulation.collective_algo */
	double slow;             /* the slowest device's compute factor (cost_slowest_factor) */
	double faults_slow;      /* the largest fault slowdown (topo_max_slowdown): the
	                            optimizer's pace, which speed_cv does not scale */
	const struct param_reads *reads;  /* which reads of a parameter are its first */
	struct cost_act_scratch *act;     /* the plan's saved tensors (the estimator's; NULL in a
	                                     context without a plan) */
	const uint32_t *fused;   /* per op: plan_fused_input_grads, NULL without a plan's edges */
	const uint8_t *attn;     /* per op: plan_attention_fused with flash_attention, else NULL */
	const int *ring_in;      /* per op: the ring size of an edge into it (plan_edge.ring:
	                            context parallelism's K and V), else 0; NULL without a plan */
	bool add_grads;          /* training.separate_grad_accumulation */
	enum precision_recipe prec;  /* training.precision */
	const struct training *train;  /* the scenario's (its state's bytes, fp8_param_gather) */
	struct cost_ep_route ep;       /* the edge priced now: a MoE dispatch or combine that
	                                  training.moe_dispatcher "hybridep" or "deepep" runs
	                                  (experts 0: none) */
	bool offload;            /* training.optimizer_offload */
	struct line_memo *lines; /* memo_slots, open addressing */
	uint64_t memo_slots;
	struct cost_algo_lines *pool;
	int pool_n, pool_cap;
	struct chunk_memo *chunks;  /* CHUNK_SLOTS, open addressing; NULL until a stage needs it */
	bool oom;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15u + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdu;
}

/* --------------------------------------------------------- the batch */

/* Samples in one step batch: the generator's micro_batch, read back from
 * the model object (the graph does not record it), else dim 0 of the
 * first graph input. */
int64_t est_steps(const struct scenario *s, struct diag_list *diags)
{
	int64_t b = s->graph->batch > 0 ? s->graph->batch : 1, gb = s->training.global_batch;
	if (gb < 1)
		gb = 1;
	if (gb % b == 0)
		return gb / b;
	int64_t steps = (gb + b - 1) / b;
	diag_add(diags, DIAG_WARNING, s->file, 0, "training.global_batch",
	         "%lld samples is not a multiple of the model's batch of %lld: the estimate runs "
	         "%lld steps (%lld samples)", (long long)gb, (long long)b, (long long)steps,
	         (long long)(steps * b));
	return steps;
}

/* ------------------------------------------------------- communication */

/* The slot of a key: where it is, or the empty slot it would take; NULL
 * when the table is full (the caller then does not remember). */
static struct line_memo *memo_slot(struct est_ctx *c, uint64_t key)
{
	for (uint64_t i = 0; i < c->memo_slots; i++) {
		struct line_memo *m = &c->lines[(key + i) % c->memo_slots];
		if (m->key == key || m->key == 0)
			return m;
	}
	return NULL;
}

/* Room for n more lines in the pool; false when out of memory. */
static bool pool_reserve(struct est_ctx *c, int n)
{
	if (c->pool_n + n <= c->pool_cap)
		return true;
	int cap = c->pool_cap ? 2 * c->pool_cap : 256;
	struct cost_algo_lines *p = arena_grow(c->scratch, c->pool, (size_t)c->pool_n, (size_t)cap,
	                                       sizeof(*p));
	if (!p)
		return false;
	c->pool = p;
	c->pool_cap = cap;
	return true;
}

/* Remembers lines under `key` (n of them, from `at` in the pool). */
static void memo_put(struct est_ctx *c, uint64_t key, int n, int at)
{
	struct line_memo *m = memo_slot(c, key);
	if (m)
		*m = (struct line_memo){key, n, at};
}

/* The slowest of a collective's groups on message S, by the lines of
 * the slot's groups. */
static double memo_s(struct est_ctx *c, const struct line_memo *m, enum step_kind kind,
                     const struct rank_groups *g, double bytes)
{
	return m->n >= 0 ? cost_algo_lines_max(c->pool + m->at, m->n, bytes, c->wanted)
	                 : cost_groups_algo_s(c->t, kind, g, bytes, c->wanted);
}

/* The slowest group of a collective of `kind` on message S, each group by
 * the algorithm rule (cost_groups_algo_s), the lines remembered. They are
 * looked up by the groups' description (device matrix, axes), cheap to
 * hash, and when that is new by the groups themselves (rank_groups_key):
 * one plan describes the same groups in several ways, and each is costed
 * once. The two kinds of key differ in their low bits. */
static double groups_s(struct est_ctx *c, enum step_kind kind, const struct rank_groups *g,
                       double bytes)
{
	if (g->size <= 1 || kind == STEP_SLICE || kind == STEP_RESHAPE || bytes <= 0)
		return 0;
	uint64_t key = mix(mix(mix(0, (uint64_t)kind), (uint64_t)g->size), (uint64_t)g->n_groups);
	key = mix(mix(key, (uint64_t)g->dm.base), (uint64_t)g->dm.n);
	for (int k = 0; k < g->dm.n; k++)
		key = mix(key, (uint64_t)g->dm.size[k]);
	for (int k = 0; k < g->n_axes; k++)
		key = mix(key, 0x100 + (uint64_t)g->axes[k]);
	key = (key & ~(uint64_t)3) | 1;
	const struct line_memo *m = memo_slot(c, key);
	if (m && m->key == key)
		return memo_s(c, m, kind, g, bytes);
	int64_t w[RANK_GROUPS_KEY_WORDS];
	int nw = rank_groups_key(g, w);
	uint64_t same = (mix(util_hash_words(w, (size_t)nw), (uint64_t)kind) & ~(uint64_t)3) | 3;
	m = memo_slot(c, same);
	if (m && m->key == same) {
		struct line_memo alias = *m;
		memo_put(c, key, alias.n, alias.at);
		return memo_s(c, &alias, kind, g, bytes);
	}
	struct cost_algo_lines fresh[SHAPES_MAX];
	int n = cost_groups_algo_lines(c->t, kind, g, fresh, SHAPES_MAX);
	if (n < 0 || pool_reserve(c, n)) {
		if (n > 0)
			memcpy(c->pool + c->pool_n, fresh, (size_t)n * sizeof(fresh[0]));
		memo_put(c, same, n, c->pool_n);
		memo_put(c, key, n, c->pool_n);
		c->pool_n += n > 0 ? n : 0;
	}
	return n >= 0 ? cost_algo_lines_max(fresh, n, bytes, c->wanted)
	              : cost_groups_algo_s(c->t, kind, g, bytes, c->wanted);
}

/* A sink that adds up the collectives' times. */
struct pricer {
	struct est_ctx *c;
	double s;
};

static void price(void *ctx, const struct plan_coll *pc)
{
	struct pricer *p = ctx;
	if (pc->kind == STEP_ALLTOALL && p->c->ep.experts > 0)
		p->s += cost_groups_ep_hybrid_s(p->c->t, &pc->groups, pc->bytes, &p->c->ep);
	else
		p->s += groups_s(p->c, pc->kind, &pc->groups, pc->bytes);
}

/* Forward time of a sequence of steps starting from `start`, and the time
 * of their mirrors in backward. */
static void steps_s(struct est_ctx *c, const struct comm_step *steps, int n,
                    const struct layout *start, double *fwd, double *bwd)
{
	struct pricer f = {c, 0}, b = {c, 0};
	struct plan_coll_sink kf = {price, &f}, kb = {price, &b};
	plan_colls_forward(steps, n, &kf);
	if (!plan_colls_backward(steps, n, start, &kb))
		c->oom = true;
	*fwd += f.s;
	*bwd += b.s;
}

/* ---------------------------------------------------------------- per op */

/* FlashAttention (Dao et al. 2022; FlashAttention-2, Dao 2023): the
 * scores, the softmax, the dropout and the context as one kernel that never
 * writes the scores to memory. The two GEMMs run causal, half their FLOPs
 * (the masked blocks skipped), reading Q, K and V and writing O; the
 * element-wise ops between cost nothing of their own; the backward
 * recomputes the scores and runs five GEMMs to the forward's two: 2.5x. */
#define FLASH_CAUSAL 0.5
#define FLASH_BACKWARD 2.5

/* Context parallelism's merging of the ring's partial results, as
 * Transformer Engine's AttnFuncWithCPAndKVP2P does it (transformer_engine/
 * pytorch/attention/dot_product_attention/context_parallel.py): each of
 * the cp steps' attention writes its own bf16 output and log-sum-exp;
 * the forward then builds the output in fp32 (the first step's scaled,
 * flash_attn_fwd_out_correction_init: read 2 B, write 4 B an element), adds
 * each later step's scaled in (flash_attn_fwd_out_correction: read 2 + 4,
 * write 4; on half the rows, the causal second half, for the steps past a
 * rank's own, so 3/4 of the rows on average over the ranks) and casts it
 * back (read 4, write 2); the backward adds each later step's dQ, dK and
 * dV into the accumulated ones (bf16 add_: read 2 + 2, write 2, the same
 * 3/4). One kernel each: cp + 1 forward, 3 (cp - 1) backward. */
#define CP_OUT_FIRST_B 6.0      /* out_init: 2 read, 4 written */
#define CP_OUT_STEP_B 10.0      /* a step's correction: 2 + 4 read, 4 written */
#define CP_OUT_CAST_B 6.0       /* fp32 out read, bf16 written */
#define CP_GRAD_STEP_B 6.0      /* dq_ / dk_ / dv_ added: 2 + 2 read, 2 written */
#define CP_STEP_ROWS 0.75       /* the steps' share of rows corrected, causal */

static bool flash_compute(struct est_ctx *c, const struct dist_op *d, struct est_op *eo)
{
	int part = c->attn ? c->attn[d->op] : ATTN_NONE;
	if (part == ATTN_NONE)
		return false;
	if (part == ATTN_INNER)
		return true;  /* inside the kernel */
	const struct op *o = &c->g->ops[d->op];
	struct cost_work w;
	cost_op_work(c->g, d, &w);
	w.flops *= FLASH_CAUSAL;
	/* scores: Q and K read; context: V read, O written */
	w.bytes = part == ATTN_SCORES ? layout_local_bytes(&d->in[0]) + layout_local_bytes(&d->in[1])
	                              : layout_local_bytes(&d->in[1]) + layout_local_bytes(&d->out[0]);
	eo->compute_forward_s = cost_compute_s(&c->t->device, o->dtype, &w,
	                                       &c->e->compute_fallback) * c->slow;
	eo->compute_backward_s = FLASH_BACKWARD * eo->compute_forward_s;
	double cp = c->ring_in ? (double)c->ring_in[d->op] : 0;
	if (part == ATTN_CONTEXT && cp > 1) {
		/* the output's elements (the rank's queries) and the K and V
		 * shards' (the gathered V over cp, twice) */
		double out_e = (double)layout_local_elems(&d->out[0]);
		double kv_e = 2.0 * (double)layout_local_elems(&d->in[1]) / cp;
		double steps = CP_STEP_ROWS * (cp - 1);
		struct cost_work f = {0, out_e * (CP_OUT_FIRST_B + steps * CP_OUT_STEP_B + CP_OUT_CAST_B),
		                      0, 0, 0};
		struct cost_work b = {0, (out_e + kv_e) * steps * CP_GRAD_STEP_B, 0, 0, 0};
		const struct topo_device *dev = &c->t->device;
		eo->compute_forward_s += (cost_compute_s(dev, o->dtype, &f, NULL) +
		                          cp * dev->kernel_overhead_s) * c->slow;
		eo->compute_backward_s += (cost_compute_s(dev, o->dtype, &b, NULL) +
		                           (3 * (cp - 1) - 1) * dev->kernel_overhead_s) * c->slow;
	}
	return true;
}

/* Gradient accumulation without fusion (training.separate_grad_accumulation,
 * Megatron-LM before its gradient_accumulation_fusion): after each
 * micro-batch's backward, one kernel per parameter adds the new gradient
 * (the parameter's dtype) into the accumulation buffer (fp16: fp16; else
 * fp32), reading both and writing the buffer. */
static double grad_add_s(const struct est_ctx *c, const struct dist_op *d)
{
	const struct op *o = &c->g->ops[d->op];
	double s = 0;
	for (int i = 0; i < o->n_in; i++) {
		const struct tensor *t = &c->g->tensors[o->in[i]];
		if (t->role != TENSOR_PARAM)
			continue;
		double elems = (double)layout_local_elems(&d->in[i]);
		struct cost_work w = {0, elems * ((double)dtype_bytes(t->dtype) +
		                                  2 * cost_grad_bytes_per_elem(c->train, t->dtype)), 0, 0, 0};
		s += cost_compute_s(&c->t->device, t->dtype, &w, NULL);
	}
	return s;
}

/* The FP8 recipes (docs/cost-models.md, "FP8 training"): a MatMul with a
 * weight (a Linear: Transformer Engine runs those in FP8; attention's
 * batched GEMMs stay bf16) runs its forward GEMM and its two backward ones
 * at the FP8 rate, after casting its input (forward) and its output's
 * gradient (backward) to FP8; the weight's cast is once an iteration
 * (optimizer_elem_s). False for any other op. */
static bool fp8_compute(struct est_ctx *c, const struct dist_op *d, struct est_op *eo)
{
	const struct op *o = &c->g->ops[d->op];
	int x;
	if (!cost_fp8_linear(c->g, c->prec, d->op, &x))
		return false;
	const struct topo_device *dev = &c->t->device;
	struct cost_work w;
	cost_op_work(c->g, d, &w);
	double gemm = cost_fp8_gemm_s(dev, &w, &c->e->compute_fallback);
	double cast_x = cost_fp8_cast_s(dev, (double)layout_local_elems(&d->in[x]));
	double cast_dy = cost_fp8_cast_s(dev, (double)layout_local_elems(&d->out[0]));
	eo->compute_forward_s = (gemm + cast_x) * c->slow;
	eo->compute_backward_s = (bwd_table[o->kind].factor * gemm + cast_dy) * c->slow;
	if (c->add_grads)
		eo->compute_backward_s += grad_add_s(c, d) * c->slow;
	return true;
}

/* The passes of the softmax cross-entropy over the logits as Megatron-LM
 * runs it (docs/cost-models.md, "The loss"; megatron/core/tensor_parallel/
 * cross_entropy.py, megatron/core/fusions/fused_cross_entropy.py): bytes
 * per local logit element, one kernel each, memory-bound at the device's
 * streaming rate. The logits are upcast to fp32 first (16-bit logits:
 * read 2, write 4) and the gradient cast back (read 4, write 2). */
struct xent_pass {
	double half, full;  /* bytes with 16-bit logits, with fp32 logits (no cast) */
};
#define XENT_PASSES 11
static const struct xent_pass xent_forward[][XENT_PASSES] = {
	/* vocab-parallel: .float(), max, -= max, exp, sum, /= sum */
	[XENT_VOCAB_PARALLEL] = {{6, 0}, {4, 4}, {8, 8}, {8, 8}, {4, 4}, {8, 8}},
	/* vocab-parallel-jit: .float() with max; -= max, exp and sum; /= sum */
	[XENT_VOCAB_PARALLEL_JIT] = {{6, 4}, {8, 8}, {8, 8}},
	/* mindformers (mindformers/core/loss/loss.py, CrossEntropyLoss with its
	 * _LogSoftmax and _NLLLoss): + 0 (forcing the redistribution under
	 * semi-auto parallelism), cast, max, - max, exp, sum, - log(sum) (the
	 * log-softmax written), the one-hot label written, log-softmax x
	 * one-hot, negation, sum */
	[XENT_MINDFORMERS] = {{4, 8}, {6, 0}, {4, 4}, {8, 8}, {8, 8}, {4, 4}, {8, 8}, {4, 4},
	                      {12, 12}, {8, 8}, {4, 4}},
	/* pytorch: F.cross_entropy(logits.float(), labels) in eager PyTorch
	 * (torchtitan's loss_fn): the upcast, then aten's log_softmax over a
	 * row longer than its shared-memory kernel holds (aten/src/ATen/native/
	 * cuda/SoftMax.cu, cunn_SoftMaxForward: the row's max, the sum of
	 * exponentials, the output written), then nll_loss (one element a row) */
	[XENT_PYTORCH] = {{6, 0}, {4, 4}, {4, 4}, {8, 8}},
};
static const struct xent_pass xent_backward[][XENT_PASSES] = {
	/* grad_input *= grad_output (the target's -= 1 touches one element a
	 * row); the upcast's backward */
	[XENT_VOCAB_PARALLEL] = {{8, 8}, {6, 0}},
	[XENT_VOCAB_PARALLEL_JIT] = {{8, 8}, {6, 0}},
	/* the two cells' bprops: exp of the log-softmax, - one-hot, x dout,
	 * x the loss's repeat factor, the cast back */
	[XENT_MINDFORMERS] = {{8, 8}, {12, 12}, {8, 8}, {8, 8}, {6, 0}},
	/* nll_loss's backward writes a dense gradient (zeros, one element a
	 * row set); log_softmax's backward (cunn_SoftMaxBackward) sums each
	 * row of the gradient, then writes gradOutput - exp(output) x sum;
	 * the upcast's backward */
	[XENT_PYTORCH] = {{4, 4}, {4, 4}, {12, 12}, {6, 0}},
};

static double xent_passes_s(const struct topo_device *dev, const struct xent_pass *p,
                            double elems, bool half)
{
	double s = 0;
	for (int i = 0; i < XENT_PASSES; i++) {
		struct cost_work w = {0, (half ? p[i].half : p[i].full) * elems, 0, 0, 0};
		s += cost_compute_s(dev, DT_FP32, &w, NULL); /* no bytes: no kernel */
	}
	return s;
}

/* A SoftmaxCrossEntropy priced as Megatron-LM runs it (training.cross_entropy
 * other than "fused"); false for any other op. */
static bool xent_compute(struct est_ctx *c, const struct dist_op *d, struct est_op *eo)
{
	const struct op *o = &c->g->ops[d->op];
	enum cross_entropy x = c->train->cross_entropy;
	if (o->kind != OP_SOFTMAXCROSSENTROPY || x == XENT_FUSED)
		return false;
	double elems = (double)layout_local_elems(&d->in[0]);
	bool half = dtype_bytes(c->g->tensors[o->in[0]].dtype) == 2;
	const struct topo_device *dev = &c->t->device;
	eo->compute_forward_s = xent_passes_s(dev, xent_forward[x], elems, half) * c->slow;
	eo->compute_backward_s = xent_passes_s(dev, xent_backward[x], elems, half) * c->slow;
	return true;
}

static void op_compute(struct est_ctx *c, const struct dist_op *d, struct est_op *eo)
{
	const struct op *o = &c->g->ops[d->op];
	const struct topo_device *dev = &c->t->device;
	const struct bwd_kind *k = &bwd_table[o->kind];
	if (flash_compute(c, d, eo) || fp8_compute(c, d, eo) || xent_compute(c, d, eo))
		return;
	struct cost_work w;
	cost_op_work(c->g, d, &w);
	/* the norm before q, k and v of a sequence-parallel plan, which the
	 * plan runs gathered, runs on the sequence shard as Megatron-LM runs
	 * it (the gather moves the same bytes after it); another plan that
	 * gathers before a norm runs the norm gathered */
	double shard = c->act && c->train->sequence_parallel ? cost_act_norm_fraction(c->act, d->op)
	                                                     : 1;
	if (shard < 1) {
		double weights = 0; /* read whole either way */
		for (int i = 0; i < o->n_in; i++)
			if (c->g->tensors[o->in[i]].role == TENSOR_PARAM)
				weights += layout_local_bytes(&d->in[i]);
		w.flops *= shard;
		w.bytes = (w.bytes - weights) * shard + weights;
	}
	eo->compute_forward_s = cost_op_kernel_s(dev, o->kind, o->dtype, &w, false,
	                                         &c->e->compute_fallback);
	if (k->rule == BWD_SCATTER_ADD) {
		double dy = 0;
		for (int j = 0; j < d->n_out; j++)
			dy += layout_local_bytes(&d->out[j]);
		struct cost_work sw = {0, 3 * dy, 0, 0, 0};
		eo->compute_backward_s = cost_compute_s(dev, o->dtype, &sw, NULL);
	} else {
		/* a kernel class's backward has a rate of its own; any other op's
		 * backward is its forward's work again */
		double once = cost_kernel_class(o->kind) >= 0
		                  ? cost_op_kernel_s(dev, o->kind, o->dtype, &w, true, NULL)
		                  : eo->compute_forward_s;
		eo->compute_backward_s = k->factor * once;
	}
	if (c->add_grads)
		eo->compute_backward_s += grad_add_s(c, d);
	eo->compute_forward_s *= c->slow;
	eo->compute_backward_s *= c->slow;
}

/* The op's own forward collectives and their mirrors, and the all-reduce
 * of its inputs' gradients. */
static void op_comm(struct est_ctx *c, const struct dist_op *d, struct est_op *eo)
{
	double fwd = 0, bwd = 0;
	steps_s(c, d->comm, d->n_comm, &d->out_partial[0], &fwd, &bwd);
	eo->comm_forward_s += fwd;
	c->e->category_s[EST_COMM_FORWARD] += fwd;
	struct pricer f = {c, 0};
	struct plan_coll_sink k = {price, &f};
	if (!plan_colls_input_grads(c->g, d, c->fused ? c->fused[d->op] : 0, &k))
		c->oom = true;
	eo->comm_backward_s += bwd + f.s;
	eo->input_grad_s += f.s;
	c->e->category_s[EST_COMM_BACKWARD] += bwd + f.s;
}

/* The optimizer step's seconds per local parameter element of dtype dt
 * (docs/cost-models.md, "Optimizer offload", "FP8 training"): on the
 * device, optimizer_step_bytes at the HBM rate; offloaded (ZeRO-Offload,
 * Megatron-LM's --optimizer-cpu-offload), the gradient down the host link,
 * the same passes over host memory at the device's share of its
 * bandwidth, the updated weight back up the link, one after the other.
 * Under the FP8 recipes a Linear's updated weight (of op `op`) is then
 * cast to FP8 on the device (its copy and the transpose, kept for every
 * micro-batch of the iteration). */
static double optimizer_elem_s(const struct est_ctx *c, int op, enum dtype dt)
{
	const struct topo_device *dev = &c->t->device;
	double hbm = dev->hbm_bps * dev->memory_efficiency, s;
	if (c->offload) {
		struct cost_state_bytes b;
		cost_state_bytes(c->train, dt, &b);
		s = (b.grad + b.weight) / c->t->host.link_bps +
		    optimizer_step_bytes(c->train, dt) / c->t->host.memory_bps;
	} else {
		s = optimizer_step_bytes(c->train, dt) / hbm;
	}
	int x;
	if (cost_fp8_linear(c->g, c->prec, op, &x))
		s += 4.0 / hbm; /* FP8_CAST_BYTES: read 2, write 1 + 1 */
	return s;
}

/* Gradient synchronisation, optimizer and memory of the op's parameters
 * that no earlier op read; returns the optimizer's seconds. */
static double op_params(struct est_ctx *c, const struct dist_op *d, struct est_op *eo)
{
	const struct graph *g = c->g;
	const struct op *o = &g->ops[d->op];
	struct estimate *e = c->e;
	int inputs[SIG_MAX_TENSORS];
	const struct comm_step *sync[SIG_MAX_TENSORS];
	int n = plan_op_params(g, c->reads, 0, d, inputs, sync);
	double opt = 0;
	for (int k = 0; k < n; k++) {
		int i = inputs[k];
		const struct tensor *t = &g->tensors[o->in[i]];
		double elems = (double)layout_local_elems(&d->in[i]);
		if (sync[k]) {
			struct pricer pr = {c, 0};
			struct plan_coll_sink sk = {price, &pr};
			plan_colls_forward(sync[k], 1, &sk);
			eo->gradient_s += pr.s;
			e->category_s[EST_GRADIENT_SYNC] += pr.s;
		}
		double u = elems * optimizer_elem_s(c, d->op, t->dtype);
		e->category_s[EST_OPTIMIZER] += u;
		opt += u;
		e->param_bytes += elems * cost_param_bytes_per_elem(c->train, t->dtype);
		e->grad_bytes += elems * cost_grad_bytes_per_elem(c->train, t->dtype);
		e->optimizer_bytes += elems * cost_optimizer_bytes_per_elem(c->train, t->dtype);
	}
	return opt;
}

/* The op's compute and its own communication, per micro-batch. */
static void op_work(struct est_ctx *c, const struct dist_op *d, struct est_op *eo)
{
	memset(eo, 0, sizeof(*eo));
	eo->op = d->op;
	op_compute(c, d, eo);
	op_comm(c, d, eo);
}

double est_op_s(struct est_ctx *c, const struct dist_op *d, struct est_op *eo)
{
	op_work(c, d, eo);
	double opt = op_params(c, d, eo);
	c->e->category_s[EST_COMPUTE_FORWARD] += eo->compute_forward_s;
	c->e->category_s[EST_COMPUTE_BACKWARD] += eo->compute_backward_s;
	return (double)c->steps * (eo->compute_forward_s + eo->compute_backward_s +
	                           eo->comm_forward_s + eo->comm_backward_s) +
	       eo->gradient_s + opt;
}

double est_edge_s(struct est_ctx *c, const struct layout *start, const struct redist *r,
                  struct est_op *eo)
{
	double fwd = 0, bwd = 0;
	steps_s(c, r->steps, r->n_steps, start, &fwd, &bwd);
	eo->comm_forward_s += fwd;
	eo->redistribution_s += fwd;
	eo->comm_backward_s += bwd;
	c->e->category_s[EST_REDISTRIBUTION] += fwd;
	c->e->category_s[EST_COMM_BACKWARD] += bwd;
	return (double)c->steps * (fwd + bwd);
}

/* Is op i priced as the first op alike it (plan_find_alike)? Its input
 * gradients must fuse alike too, which depends on who else reads them. */
static bool twin(const struct est_ctx *c, const struct plan *p, int i)
{
	return p->alike && p->alike[i] != i && c->fused[p->alike[i]] == c->fused[i];
}

/* A ring edge (plan_edge.ring): its AllGather forward (fwd) and its
 * mirror backward (bwd), and in the backward the blocks passed around
 * again (the ring keeps only its own, as the memory counts): a second
 * fwd. Of each, what its share of (r - 1)/r of the consumer's compute does
 * not hide is exposed, as in cost_cp_ring_s: r·b + (r - 1)·max(0, hop - b)
 * with the compute r·b; the backward's two halves share theirs. The
 * lowering gives the simulator the same shares (sim/lower.c). */
static void ring_overlap(struct est_ctx *c, int r, double fwd, double bwd, struct est_op *eo)
{
	double f = (double)(r - 1) / r;
	double hf = fmin(fwd, f * eo->compute_forward_s);
	double half = f * eo->compute_backward_s / 2;
	double hb = fmin(fwd, half) + fmin(bwd, half);
	eo->comm_forward_s -= hf;
	eo->redistribution_s -= hf;
	eo->comm_backward_s += fwd - hb;
	c->e->category_s[EST_REDISTRIBUTION] -= hf;
	c->e->category_s[EST_COMM_BACKWARD] += fwd - hb;
}

/* The forward and the backward compute of the ops hiding an edge's
 * collectives (plan_edge.hide: training.tp_comm_overlap), summed; a
 * twin's are its first's. */
static void hide_compute(const struct est_ctx *c, const struct plan *p, const struct plan_edge *x,
                         double *fwd, double *bwd)
{
	*fwd = *bwd = 0;
	for (int k = 0; k < x->n_hide; k++) {
		int h = x->hide[k];
		const struct est_op *o = &c->e->ops[twin(c, p, h) ? p->alike[h] : h];
		*fwd += o->compute_forward_s;
		*bwd += o->compute_backward_s;
	}
}

/* What compute of c hides of a collective of t under
 * training.tp_comm_overlap, over a group of r: Transformer Engine's ring
 * passes r - 1 blocks while it computes the one in hand, hiding t under
 * (r - 1)/r of c; MindFormers' fine_grain_interleave runs the layer's
 * blocks as n slices of the sequence (tp_comm_overlap_slices), each
 * slice's collective beside another slice's compute: a pipeline of n
 * items through the two, whose first collective and last compute run
 * alone, hiding (n - 1)/n of the smaller of t and c. */
static double tp_overlap_hidden(const struct training *tr, double r, double t, double c)
{
	double n = (double)tr->tp_comm_overlap_slices;
	if (n > 1)
		return (n - 1) / n * fmin(t, c);
	return fmin(t, (r - 1) / r * c);
}

/* Tensor-parallel communication under the GEMMs (plan_edge.hide): the
 * forward collective (fwd) under the hiding ops' forward, its mirror (bwd)
 * under half their backward (the data-gradient GEMM; the weight-gradient
 * half is the other collectives'), each as tp_overlap_hidden says.
 * The lowering gives the simulator the same shares. */
static void hide_overlap(struct est_ctx *c, const struct plan *p, const struct plan_edge *x,
                         double fwd, double bwd, struct est_op *eo)
{
	double r = (double)x->redist.steps[0].groups.size, cf, cb;
	hide_compute(c, p, x, &cf, &cb);
	double hf = tp_overlap_hidden(c->train, r, fwd, cf);
	double hb = tp_overlap_hidden(c->train, r, bwd, cb / 2);
	eo->comm_forward_s -= hf;
	eo->redistribution_s -= hf;
	eo->comm_backward_s -= hb;
	c->e->category_s[EST_REDISTRIBUTION] -= hf;
	c->e->category_s[EST_COMM_BACKWARD] -= hb;
}

/* The all-reduce of a MatMul's input gradient that sums its fellow
 * readers' partial gradients of a gathered norm's output (q of q, k and
 * v: plan_grad_hiders) under (r - 1)/r of the other half of their
 * backward (the weight-gradient GEMMs; the data-gradient half hides the
 * gather's mirror). Each class's first op once, its twins copied. */
static void hide_input_grads(struct est_ctx *c, const struct plan *p)
{
	for (int k = 0; k < p->n_edges; k++) {
		const struct plan_edge *x = &p->edges[k];
		if (x->n_hide == 0 || x->redist.steps[0].kind != STEP_ALLGATHER ||
		    x->hide[0] == x->consumer || twin(c, p, x->hide[0]))
			continue;
		struct est_op *q = &c->e->ops[x->hide[0]];
		double r = (double)x->redist.steps[0].groups.size, cf, cb;
		hide_compute(c, p, x, &cf, &cb);
		double h = tp_overlap_hidden(c->train, r, q->input_grad_s, cb / 2);
		q->input_grad_s -= h;
		q->comm_backward_s -= h;
		c->e->category_s[EST_COMM_BACKWARD] -= h;
	}
}

/* Redistributions: forward into the consumer, mirrored in backward (a
 * twin's are its first's, copied with the rest of it). */
static void edges(struct est_ctx *c, const struct plan *p)
{
	for (int k = 0; k < p->n_edges; k++) {
		const struct plan_edge *x = &p->edges[k];
		if (x->redist.n_steps == 0 || twin(c, p, x->consumer))
			continue;
		struct est_op *eo = &c->e->ops[x->consumer];
		double f0 = eo->comm_forward_s, b0 = eo->comm_backward_s;
		cost_moe_edge_route(c->g, c->train, x->producer, x->consumer, &c->ep);
		est_edge_s(c, plan_edge_start(p, x), &x->redist, eo);
		c->ep.experts = 0;
		if (x->ring > 1)
			ring_overlap(c, x->ring, eo->comm_forward_s - f0, eo->comm_backward_s - b0, eo);
		else if (x->n_hide > 0)
			hide_overlap(c, p, x, eo->comm_forward_s - f0, eo->comm_backward_s - b0, eo);
		if (cost_moe_edge(c->g, x->producer, x->consumer)) {
			eo->moe_forward_s += eo->comm_forward_s - f0;
			eo->moe_backward_s += eo->comm_backward_s - b0;
		}
	}
	hide_input_grads(c, p);
}

struct est_ctx *est_ctx_new(const struct scenario *s, int64_t steps, size_t memo_slots,
                            struct estimate *e)
{
	const struct graph *g = s->graph;
	struct arena *a = arena_new();
	struct est_ctx *c = a ? arena_calloc(a, 1, sizeof(*c)) : NULL;
	if (!c) {
		arena_free(a);
		return NULL;
	}
	*c = (struct est_ctx){.g = g, .t = s->topo, .scratch = a, .e = e, .steps = steps,
	                      .wanted = s->sim.collective_algo, .memo_slots = memo_slots,
	                      .slow = cost_slowest_factor(s->topo, s->devices),
	                      .faults_slow = topo_max_slowdown(s->topo, s->devices),
	                      .add_grads = s->training.separate_grad_accumulation,
	                      .prec = s->training.precision,
	                      .train = &s->training,
	                      .offload = s->training.optimizer_offload};
	c->reads = plan_param_reads(a, g);
	c->lines = arena_calloc(a, memo_slots, sizeof(*c->lines));
	if (s->training.flash_attention)
		c->attn = plan_attention_fused(a, g);
	if (!c->reads || !c->lines || (s->training.flash_attention && !c->attn)) {
		arena_free(a);
		return NULL;
	}
	return c;
}

void est_ctx_free(struct est_ctx *c)
{
	if (c)
		arena_free(c->scratch);
}

bool est_ctx_oom(const struct est_ctx *c)
{
	return c->oom;
}

/* ------------------------------------------------ recomputation, ZeRO */

/* ZeRO-3: op d's parameters (those it is the first of its chunk, from op
 * lo, to read) all-gathered over their data-parallel groups before it
 * runs: one gather of them into eo->gather_one_s (on the communication
 * stream) and, under DeepSpeed 2021 (zero3.c), what it puts in line (the
 * zero fill of their buffers, the host's issue of the list's copies) into
 * eo->gather_fill_s, the gathers skipping the parameters it keeps whole
 * and each followed by its copies' bytes; the bytes gathered into
 * *gathered. */
static void op_gather_s(struct est_ctx *c, int lo, const struct dist_op *d, struct est_op *eo,
                        double *gathered)
{
	int inputs[SIG_MAX_TENSORS];
	const struct comm_step *sync[SIG_MAX_TENSORS];
	int n = cost_zero3_gathered(c->g, c->train, c->reads, lo, d, inputs, sync);
	bool ds = cost_zero3_deepspeed(c->train);
	const struct topo_device *dev = &c->t->device;
	eo->gather_one_s = eo->gather_fill_s = 0;
	*gathered = 0;
	for (int k = 0; k < n; k++) {
		const struct layout *l = &d->in[inputs[k]];
		double bytes = layout_local_bytes(l);
		double wire = cost_param_gather_bytes(c->g, c->train, d->op, bytes, l->dtype);
		eo->gather_one_s += groups_s(c, STEP_ALLGATHER, &sync[k]->groups, wire);
		if (ds) {
			eo->gather_one_s += cost_ds_copy_bytes_s(dev, sync[k]->groups.size, wire);
			eo->gather_fill_s += cost_ds_gather_inline_s(dev, sync[k]->groups.size, wire);
		}
		*gathered += bytes;
	}
}

/* Op i's gathers in a pass: the forward's (0), the recomputed forward's
 * (1: DeepSpeed 2021's re-gathers) or the backward's (2). */
static double pass_gather_s(const struct est_op *o, int pass)
{
	return o->gather_one_s * (pass == 0 ? 1 : pass == 1 ? o->gathers_rec : o->gathers_bwd);
}

/* What ZeRO-3 gathers at op i in a pass walked in direction dir within
 * [lo, hi): nothing when i's gathering unit (cost_zero3_unit) was reached
 * before i, else the unit's gathers from i on, all issued together. */
static double unit_gather_s(const struct est_ctx *c, int i, int dir, int lo, int hi, int pass)
{
	const struct est_op *o = c->e->ops;
	if (!(pass_gather_s(&o[i], pass) > 0))
		return 0;
	int u = cost_zero3_unit(c->g, c->train, i);
	if (u < 0)
		return pass_gather_s(&o[i], pass);
	for (int k = i - dir; k >= lo && k < hi && cost_zero3_unit(c->g, c->train, k) == u; k -= dir)
		if (pass_gather_s(&o[k], pass) > 0)
			return 0;
	double g = 0;
	for (int k = i; k >= lo && k < hi && cost_zero3_unit(c->g, c->train, k) == u; k += dir)
		g += pass_gather_s(&o[k], pass);
	return g;
}

/* One pass's gathers walked in the pass's order, each unit's prefetched
 * when the previous unit's are waited for (zero3_exposed): the forward
 * (pass 0) or its recomputation (pass 1, DeepSpeed 2021's gathers
 * again), both over the same work; what is exposed. */
static double forward_gathers(const struct est_ctx *c, int lo, int hi, int pass)
{
	const struct est_op *o = c->e->ops;
	double seg = 0, eg = 0;
	bool started = false;
	/* the redistributions into an op run before its gather is waited
	 * for */
	for (int i = lo; i < hi; i++) {
		double g = unit_gather_s(c, i, +1, lo, hi, pass);
		seg += o[i].redistribution_s;
		if (g > 0) {
			eg += started ? fmax(0, g - seg) : g;
			started = true;
			seg = 0;
		}
		seg += o[i].compute_forward_s + o[i].comm_forward_s - o[i].redistribution_s;
	}
	return eg;
}

/* ZeRO-3's communication as DeepSpeed stage 3 and PyTorch FSDP run it,
 * one micro-batch of the chunk [lo, hi): what of it is exposed, into
 * *gather_s (parameter all-gathers) and *rs_s (gradient reduce-scatters).
 * One communication stream per rank runs the gathers and reduce-scatters
 * in the order they are issued (FSDP: one NCCL communicator for both).
 * Parameters are gathered by unit (cost_zero3_unit): a transformer
 * layer's all at its first op that gathers under PyTorch FSDP and
 * Megatron-FSDP ("fsdp"), each op's on its own otherwise and outside the
 * layers. Forward: the first unit's gather of the pass is exposed;
 * each unit, when reached, issues the next unit's gather (prefetch), so
 * that gather runs under the unit's compute and whatever runs until the
 * next one (implicit forward prefetching, "The 1st all-gather
 * will not be able to overlap with anything": PyTorch's FSDP notes,
 * docs.pytorch.org/docs/stable/notes/fsdp.html; DeepSpeed's
 * stage3_prefetch_bucket_size). Backward, ops in reverse: the same for the
 * gathers again (FSDP's BACKWARD_PRE prefetch), and the buckets completed
 * since the last unit that gathered are reduce-scattered ahead of the next
 * gather; the last ones at the end of the chunk's backward, exposed (the
 * gradients are reduced every micro-batch: DeepSpeed's stage 3 with
 * gradient accumulation, Megatron-FSDP's optim_grads_params). An
 * interval's exposed time is what its issued communication outlasts the
 * work between the two ops' compute; it is shared between gathers and
 * reduce-scatters by their times. The backward interval counts each op's
 * whole backward communication (its mirrors, input gradients,
 * redistributions) in the work, as the simulation places them around its
 * compute (sim/lower.c); they differ only by the mirrors of the two ops'
 * own collectives, none without tensor parallelism. */
static void zero3_exposed(const struct est_ctx *c, int lo, int hi, const double *rs_by_op,
                          double *gather_s, double *rs_s)
{
	const struct est_op *o = c->e->ops;
	double eg = forward_gathers(c, lo, hi, 0), er = 0;
	bool again = false;
	for (int i = lo; i < hi; i++) {
		again |= o[i].gathers_rec > 0;
		/* DeepSpeed 2021's fills and copy issues: after the host's
		 * synchronisation, before the op's kernels are issued */
		eg += o[i].gather_fill_s * (1 + o[i].gathers_rec + o[i].gathers_bwd);
	}
	if (again)
		eg += forward_gathers(c, lo, hi, 1);
	/* backward */
	double pend = 0, acc = 0, seg = 0;
	bool started = false;
	for (int i = hi - 1; i >= lo; i--) {
		double g = unit_gather_s(c, i, -1, lo, hi, 2);
		if (g > 0) {
			if (!started) {
				eg += g;
			} else {
				double e = fmax(0, pend + g - seg);
				eg += e * g / (pend + g);
				er += e * pend / (pend + g);
			}
			started = true;
			pend = acc;
			acc = 0;
			seg = 0;
		}
		seg += o[i].compute_backward_s + o[i].comm_backward_s;
		acc += rs_by_op[i];
	}
	er += fmax(0, pend - seg) + acc;
	*gather_s = eg;
	*rs_s = er;
}

/* Whether sl[0..n) is a schedule of whole forwards and backwards of this
 * stage's v chunks (not the zero-bubble schedules' split backwards or
 * DualPipe's paired units), which the walks below follow. */
static bool plain_order(const struct plan_part *pp, int st, const struct prog_slot *sl, int n)
{
	if (!sl || n <= 0)
		return false;
	for (int i = 0; i < n; i++) {
		int k = (sl[i].chunk - st) / pp->n_stages;
		if (sl[i].split || sl[i].weight || sl[i].fb || sl[i].chunk < st || k >= pp->virtual_stages)
			return false;
	}
	return true;
}

/* training.overlap_param_gather (ZeRO 1, 2): the updated parameters'
 * all-gathers, issued in the chunks' order on one stream as the iteration
 * starts (Megatron-Core dispatches the first bucket's and prefetches the
 * next in each bucket's forward pre-hook), each chunk's beside its first
 * forward, which waits for what its gathers outlast. The stage's units
 * are walked from the start to the last of its chunks' first forwards:
 * under 1F1B the first unit is the only chunk's first forward, under the
 * interleaved schedule chunk k's comes after p micro-batches' forwards of
 * each chunk below it, under which its gathers run. gather[k] and
 * forward[k]: local chunk k's gathers and one micro-batch's forward.
 * Returns the waits; without a plain order, each chunk's gathers beside
 * its own first forward alone. */
static double overlapped_head(const struct est_ctx *c, int st, const struct prog_slot *sl, int n,
                              const double *gather, const double *forward)
{
	const struct plan_part *pp = &c->e->part;
	const struct est_op *o = c->e->ops;
	int v = pp->virtual_stages;
	double exposed = 0;
	bool first[64] = {false};
	if (v > (int)SL_COUNTOF(first) || !plain_order(pp, st, sl, n)) {
		for (int k = 0; k < v; k++)
			exposed += fmax(0, gather[k] - forward[k]);
		return exposed;
	}
	double t = 0, comm = 0;
	int seen = 0;
	for (int u = 0; u < n && seen < v; u++) {
		int ch = sl[u].chunk, k = (ch - st) / pp->n_stages;
		int lo = pp->first_op[ch], hi = pp->first_op[ch + 1];
		if (sl[u].backward) {
			for (int i = lo; i < hi; i++)
				t += o[i].recompute_s + o[i].compute_backward_s + o[i].comm_backward_s;
			continue;
		}
		if (first[k]) {
			t += forward[k];
			continue;
		}
		first[k] = true;
		seen++;
		/* the gathers of the chunks up to k, one after another */
		comm += gather[k];
		double end = fmax(t + forward[k], comm);
		exposed += end - (t + forward[k]);
		t = end;
	}
	return exposed;
}

/* training.overlap_grad_reduce with ZeRO 0 or 1 (Megatron-LM's
 * --overlap-grad-reduce, PyTorch DDP): each bucket is all-reduced (or
 * reduce-scattered) on a stream of its own as soon as the last
 * micro-batch's backward has produced all of its gradients, one bucket
 * after another (megatron/core/distributed/param_and_grad_buffer.py:
 * a bucket's grad-reduce starts when its last parameter's gradient is
 * ready, in the last micro-batch only; torch.nn.parallel.
 * DistributedDataParallel's Reducer). What runs after the backward is
 * exposed: the stage's units from the first of its chunks' last backwards
 * to the end of its schedule (sl[0..n), the order plan_schedule gives),
 * walked one after another: a forward its ops' compute and collectives, a
 * backward each op's recompute, backward compute and collectives in turn,
 * a chunk's buckets ready in its last backward, each when its last op's
 * backward compute is done (rs_by_op: its time at that op). Under the
 * interleaved schedule a chunk's last backward comes a group of
 * micro-batches' backwards of the lower chunks before the end (Megatron's
 * order: the last p micro-batches run chunk v - 1's backwards, then chunk
 * v - 2's...), and its buckets run under those; under 1F1B the last
 * backward ends the schedule. Without the slots (or with the zero-bubble
 * schedules' split backwards) the chunks' last backwards alone are
 * walked, the highest chunk first. The walk counts no wait between units
 * (the drain has some, under which buckets would progress): what it
 * exposes is at most what the schedule exposes. The simulation runs the
 * same buckets on its second stream (sim/lower.c). */
static double overlapped_tail(const struct est_ctx *c, int st, const double *rs_by_op,
                              const struct prog_slot *sl, int n)
{
	const struct plan_part *pp = &c->e->part;
	const struct est_op *o = c->e->ops;
	double t = 0, comm = 0;
	int v = pp->virtual_stages, first = n, last[64];
	bool walk = v <= (int)SL_COUNTOF(last) && plain_order(pp, st, sl, n);
	for (int k = 0; walk && k < v; k++)
		last[k] = -1;
	for (int i = 0; walk && i < n; i++)
		if (sl[i].backward)
			last[(sl[i].chunk - st) / pp->n_stages] = i;
	for (int k = 0; walk && k < v; k++) {
		if (last[k] < 0)
			walk = false;
		else if (last[k] < first)
			first = last[k];
	}
	for (int u = first; walk && u < n; u++) {
		int ch = sl[u].chunk, lo = pp->first_op[ch], hi = pp->first_op[ch + 1];
		if (!sl[u].backward) {
			for (int i = lo; i < hi; i++)
				t += o[i].compute_forward_s + o[i].comm_forward_s;
			continue;
		}
		bool final = u == last[(ch - st) / pp->n_stages];
		for (int i = lo; i < hi; i++)
			t += o[i].recompute_s;
		for (int i = hi - 1; i >= lo; i--) {
			t += o[i].compute_backward_s;
			if (final && rs_by_op[i] > 0)
				comm = fmax(comm, t) + rs_by_op[i];
			t += o[i].comm_backward_s;
		}
	}
	if (walk)
		return fmax(0, comm - t);
	for (int k = pp->virtual_stages - 1; k >= 0; k--) {
		int ch = part_chunk(pp, st, k);
		int lo = pp->first_op[ch], hi = pp->first_op[ch + 1];
		for (int i = lo; i < hi; i++)
			t += o[i].recompute_s;
		for (int i = hi - 1; i >= lo; i--) {
			t += o[i].compute_backward_s;
			if (rs_by_op[i] > 0)
				comm = fmax(comm, t) + rs_by_op[i];
			t += o[i].comm_backward_s;
		}
	}
	return fmax(0, comm - t);
}

/* ------------------------------------------------------------ per stage */

/* The most activation bytes a stage holds at once, walking its schedule:
 * a unit's forward adds its chunk's, its backward frees them; a combined
 * F&B (plan_combined_schedule) frees the backward's layer by layer as its
 * forward keeps its own, counted at its end (one layer's bytes above
 * that, at most, not counted). */
static void in_flight(const struct prog_slot *sl, int n, const double *act, const struct plan_part *pp,
                      double *bytes, double *units)
{
	double cur = 0, k = 0;
	*bytes = *units = 0;
	for (int i = 0; i < n; i++) {
		if (sl[i].fb) {
			cur += act[sl[i].chunk] - act[sl[i].pair_chunk];
			*bytes = cur > *bytes ? cur : *bytes;
			continue;
		}
		/* a split backward keeps the activations its W reads (held
		 * whole until W: the weight gradients' inputs are most of them) */
		double sign = sl[i].split ? 0 : sl[i].backward || sl[i].weight ? -1 : 1;
		cur += sign * act[sl[i].chunk];
		k += sign;
		*bytes = cur > *bytes ? cur : *bytes;
		*units = k > *units ? k : *units;
	}
	*units /= pp->virtual_stages;
}

struct stage_sums {
	double cat[EST_CATEGORY_COUNT];      /* per micro-batch, then the once-per-iteration ones */
	double micro_s, tail_s;
	double gather_tail_s;                /* of tail_s, the updated parameters' all-gathers
	                                        (ZeRO 1, 2; overlapped: what they outlast) */
	double weight_s;                     /* of micro_s, the weight gradients' compute (W) */
	double recompute_talk_s;             /* of cat[EST_RECOMPUTE], the recomputed forwards'
	                                        collectives */
	double moe_forward_s, moe_backward_s; /* of cat[EST_REDISTRIBUTION] and
	                                        cat[EST_COMM_BACKWARD]: the MoE dispatches and
	                                        combines (est_op) */
	double layer_f, layer_b;             /* of the forward and backward compute (with the
	                                        recomputation's), the transformer layers' */
	double host_f, host_b;               /* of the forward and backward compute (with the
	                                        recomputation's): the host's waits (est_op
	                                        host_forward_s), which hide nothing */
	bool dual;                           /* DualPipe: bubble_s is the stage's (dualpipe()) */
	double bubble_s;
};

/* ------------------------------------------------------------ chunks */

/* A parameter a chunk holds (the first of the chunk's ops to read it). */
struct param_rec {
	int op;
	enum dtype dtype;
	bool synced;             /* replicated: it has a synchronisation step */
	double elems, bytes;     /* local */
	double dp;               /* its synchronisation group's size, else 1 */
};

/* What a chunk (ops [lo, hi)) contributes whatever the training settings
 * (its parameters), and what depends on one setting each (its buckets on
 * ZeRO >= 1 and the bucket size, its activations on the recomputation),
 * filled as runs ask. A search's variants share chunks. */
struct chunk_memo {
	int lo, hi;              /* hi 0: an empty slot */
	struct arena *home;      /* where its arrays live: the estimator's, or one run's */
	int n_params;
	struct param_rec *params;
	struct bucket_set {
		bool have;
		double bucket_bytes;
		int skip_lo, skip_hi;    /* the parameters left out (cost_chunk_bucket_skip) */
		int n;
		struct plan_bucket *b;
	} sync[2];               /* ZeRO 0, ZeRO >= 1 (ReduceScatters) */
	struct bucket_set gath;  /* ZeRO 2 under DualPipe: the buckets whose updated
	                            parameters are gathered, when they are not sync[1]'s
	                            (cost_chunk_gather_skip) */
	bool have_act[RECOMPUTE_COUNT];
	double act[RECOMPUTE_COUNT], work[RECOMPUTE_COUNT];
};

/* Fills m's parameters; false when out of memory. */
static bool chunk_params(struct est_ctx *c, const struct plan *p, struct chunk_memo *m)
{
	int room = 0;
	for (int i = m->lo; i < m->hi; i++)
		room += c->g->ops[i].n_in;
	m->params = arena_alloc_raw(m->home, ((size_t)room + 1) * sizeof(*m->params)); /* [n_params) */
	if (!m->params)
		return false;
	m->n_params = 0;
	for (int i = m->lo; i < m->hi; i++) {
		int inputs[SIG_MAX_TENSORS];
		const struct comm_step *sync[SIG_MAX_TENSORS];
		int np = plan_op_params(c->g, c->reads, m->lo, &p->ops[i], inputs, sync);
		for (int k = 0; k < np; k++) {
			const struct tensor *t = &c->g->tensors[c->g->ops[i].in[inputs[k]]];
			double elems = (double)layout_local_elems(&p->ops[i].in[inputs[k]]);
			m->params[m->n_params++] = (struct param_rec){
				i, t->dtype, sync[k] != NULL, elems, elems * (double)dtype_bytes(t->dtype),
				sync[k] ? sync[k]->groups.size : 1};
		}
	}
	return true;
}

/* The chunk [lo, hi): remembered, or new (remembered when the table has
 * room, else in `a` for this run); NULL when out of memory. */
static struct chunk_memo *chunk(struct est_ctx *c, struct arena *a, const struct plan *p, int lo,
                                int hi)
{
	if (!c->chunks)
		c->chunks = arena_calloc(c->scratch, CHUNK_SLOTS, sizeof(*c->chunks));
	struct chunk_memo *m = NULL;
	struct arena *keep = a;
	uint64_t h = mix(mix(0, (uint64_t)lo), (uint64_t)hi);
	for (int i = 0; c->chunks && i < CHUNK_SLOTS; i++) {
		struct chunk_memo *x = &c->chunks[(h + (uint64_t)i) % CHUNK_SLOTS];
		if (x->hi != 0 && x->lo == lo && x->hi == hi)
			return x;
		if (x->hi == 0) {
			m = x;
			keep = c->scratch;
			break;
		}
	}
	if (!m)
		m = arena_calloc(a, 1, sizeof(*m));
	if (!m)
		return NULL;
	*m = (struct chunk_memo){.lo = lo, .hi = hi, .home = keep};
	if (!chunk_params(c, p, m)) {
		m->hi = 0;
		return NULL;
	}
	return m;
}

/* A bucket as DeepSpeed 2021's stage 3 reduces it (zero3.c): its buffer
 * divided by the data-parallel size, then each gradient reduce-scattered
 * on its own after its list's copies into a flat buffer, all on the
 * communication stream. */
static double ds_bucket_s(struct est_ctx *c, const struct plan_bucket *b)
{
	const struct topo_device *dev = &c->t->device;
	double wire = cost_bucket_wire_bytes(b, c->train);
	double scale = b->bytes > 0 ? wire / b->bytes : 0;
	double t = cost_ds_bucket_div_s(dev, b, c->train->gradient_bucket_bytes);
	for (int j = 0; j < b->n; j++) {
		double w = b->op_bytes[j] * scale;
		t += groups_s(c, b->kind, b->groups, w) +
		     cost_ds_list_copies_s(dev, b->groups->size, w);
	}
	return t;
}

/* The chunk's buckets in slot x leaving out the parameters whose previous
 * read is among the ops [skip_lo, skip_hi): remembered, or made now;
 * false when out of memory. */
static bool chunk_buckets(struct est_ctx *c, const struct plan *p, struct chunk_memo *m,
                          struct bucket_set *x, int skip_lo, int skip_hi)
{
	double bucket_bytes = p->scenario->training.gradient_bucket_bytes;
	if (x->have && x->bucket_bytes == bucket_bytes && x->skip_lo == skip_lo &&
	    x->skip_hi == skip_hi)
		return true;
	x->n = plan_gradient_buckets_except(m->home, p, c->reads, m->lo, m->hi, skip_lo, skip_hi,
	                                    bucket_bytes, &x->b);
	x->have = x->n >= 0;
	x->bucket_bytes = bucket_bytes;
	x->skip_lo = skip_lo;
	x->skip_hi = skip_hi;
	return x->have;
}

/* The all-gather of bucket b's updated parameters (ZeRO 1, 2): into
 * *gather_s with training.overlap_param_gather, else into *once_s; into
 * *gathered_s as well. */
static void bucket_gather(struct est_ctx *c, const struct training *tr, const struct plan_bucket *b,
                          double *once_s, double *gather_s, double *gathered_s)
{
	double t = groups_s(c, STEP_ALLGATHER, b->groups, cost_bucket_gather_bytes(c->g, tr, b));
	*(tr->overlap_param_gather ? gather_s : once_s) += t;
	*gathered_s += t;
}

/* Gradient buckets of one chunk: their time into rs_by_op at the op whose
 * backward completes them (ZeRO 2 and 3, and ZeRO 0/1 with
 * training.overlap_grad_reduce; given then), else per micro-batch (ZeRO 2)
 * into *micro_s or once into *once_s; the ZeRO 1/2 gather of the
 * updated parameters into *once_s too, or into *gather_s with
 * training.overlap_param_gather, and into *gathered_s either way; the ops'
 * shares; the bytes synchronised. Chunk ch's buckets leave out what
 * cost_chunk_bucket_skip says, its gathers what cost_chunk_gather_skip
 * says (DualPipe: a parameter its device's other chunk synchronises, or
 * steps and gathers). */
static bool chunk_sync(struct est_ctx *c, const struct plan *p, int ch, struct chunk_memo *m,
                       double *micro_s, double *once_s, double *gather_s, double *gathered_s,
                       double *synced_bytes, double *rs_by_op)
{
	const struct training *tr = &p->scenario->training;
	int zero = tr->zero_stage, z = zero >= 1, skip_lo, skip_hi, gskip_lo, gskip_hi;
	cost_chunk_bucket_skip(p, &c->e->part, ch, &skip_lo, &skip_hi);
	cost_chunk_gather_skip(p, &c->e->part, ch, &gskip_lo, &gskip_hi);
	if (!chunk_buckets(c, p, m, &m->sync[z], skip_lo, skip_hi))
		return false;
	/* the gathers' buckets, when they leave out what the reductions keep */
	bool apart = (zero == 1 || zero == 2) && (gskip_lo != skip_lo || gskip_hi != skip_hi);
	if (apart && !chunk_buckets(c, p, m, &m->gath, gskip_lo, gskip_hi))
		return false;
	const struct plan_bucket *b = m->sync[z].b;
	bool ds = cost_zero3_deepspeed(tr);
	for (int k = 0; k < m->sync[z].n; k++) {
		double t = ds ? ds_bucket_s(c, &b[k])
		              : groups_s(c, b[k].kind, b[k].groups,
		                         cost_bucket_wire_bytes(&b[k], c->train));
		for (int j = 0; j < b[k].n && b[k].bytes > 0; j++)
			c->e->ops[b[k].ops[j]].gradient_s += t * b[k].op_bytes[j] / b[k].bytes;
		if (rs_by_op && (zero >= 2 || tr->overlap_grad_reduce))
			rs_by_op[b[k].last_op] += t;  /* zero3_exposed, overlapped_tail place them */
		else
			*(zero >= 2 ? micro_s : once_s) += t;
		if ((zero == 1 || zero == 2) && !apart)
			bucket_gather(c, tr, &b[k], once_s, gather_s, gathered_s);
		*synced_bytes += b[k].bytes;
	}
	for (int k = 0; apart && k < m->gath.n; k++)
		bucket_gather(c, tr, &m->gath.b[k], once_s, gather_s, gathered_s);
	return true;
}

/* The chunk's activations under the scenario's recomputation. */
static void chunk_act(struct est_ctx *c, const struct plan *p, const bool *core, int ch,
                      struct chunk_memo *m, double *stored, double *working)
{
	enum recompute_mode rec = p->scenario->training.recompute;
	if (!m->have_act[rec]) {
		cost_chunk_activations(c->act, &c->e->part, core, ch, &m->act[rec], &m->work[rec]);
		m->have_act[rec] = true;
	}
	*stored = m->act[rec];
	*working = m->work[rec];
}

/* The reads of parameters that more than one op reads (a head tied to
 * the word embedding), grouped by parameter, each group in op order: the
 * only reads that can put a parameter on two pipeline stages. Made once
 * per plan (plan_estimator_new); none for most models. */
struct shared_read {
	int tensor, op, in;
};

static int shared_read_cmp(const void *x, const void *y)
{
	const struct shared_read *a = x, *b = y;
	if (a->tensor != b->tensor)
		return a->tensor < b->tensor ? -1 : 1;
	if (a->op != b->op)
		return a->op < b->op ? -1 : 1;
	return (a->in > b->in) - (a->in < b->in);
}

/* Into *out (in `a`), their count; -1 when out of memory. */
static int shared_reads(struct arena *a, const struct graph *g, struct shared_read **out)
{
	int *readers = arena_calloc(a, (size_t)g->n_tensors + 1, sizeof(int));
	int *last = arena_alloc_raw(a, ((size_t)g->n_tensors + 1) * sizeof(int));
	if (!readers || !last)
		return -1;
	for (int t = 0; t < g->n_tensors; t++)
		last[t] = -1;
	int n = 0;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++) {
			int t = g->ops[i].in[j];
			if (g->tensors[t].role == TENSOR_PARAM && last[t] != i) {
				last[t] = i;
				readers[t]++;
			}
		}
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			n += readers[g->ops[i].in[j]] > 1 && g->tensors[g->ops[i].in[j]].role == TENSOR_PARAM;
	*out = arena_alloc_raw(a, ((size_t)n + 1) * sizeof(**out));
	if (!*out)
		return -1;
	int k = 0;
	for (int i = 0; i < g->n_ops; i++)
		for (int j = 0; j < g->ops[i].n_in; j++) {
			int t = g->ops[i].in[j];
			if (g->tensors[t].role == TENSOR_PARAM && readers[t] > 1)
				(*out)[k++] = (struct shared_read){t, i, j};
		}
	qsort(*out, (size_t)n, sizeof(**out), shared_read_cmp);
	return n;
}

/* The set of stages s belongs to (union-find, paths halved as it goes). */
static int stage_root(int *up, int s)
{
	while (up[s] != s)
		s = up[s] = up[up[s]];
	return s;
}

/* Parameters read on several stages: Megatron-LM keeps the word embedding
 * on the first stage and a copy for the tied head on the last, and after
 * the flush all-reduces the two copies' gradients over its "embedding
 * group" (train_step in megatron/training.py at commit de7dc40;
 * _allreduce_word_embedding_grads in core/distributed/
 * finalize_model_grads.py today). Here the stages that share any
 * parameter form a ring (union of the sharing sets): each rank sends
 * 2(k-1)/k of its copies' gradient bytes to its peer on the next of the
 * k stages and receives the previous one's, all at once (for k = 2 an
 * exchange: the all-reduce of two ranks moves S each way). The peers are
 * the ranks at the same place in their stages, which hold the same slice
 * when the copies are cut alike, as Megatron's vocabulary-parallel
 * embedding and head are. Fills every stage's tied_* fields from the
 * plan's shared reads; false when out of memory.
 *
 * Under DualPipe a device holds stage d and stage P-1-d, so the first
 * stage's embedding and the last's head or multi-token prediction module
 * that share it are on the same devices: DeepSeek-V3 (arXiv 2412.19437,
 * section 3.2.3, "Shared Embedding and Output Head for Multi-Token
 * Prediction") deploys them on one PP rank for "the physical sharing of
 * parameters and gradients" between the MTP module and the main model.
 * A pair of such stages sharing only with each other (k = 2) keeps one
 * gradient that both copies' backwards accumulate into, as one stage
 * does for a parameter two of its ops read: nothing is sent and nothing
 * is added afterwards (tied_local_bytes says how much; tied_bytes and
 * tied_s stay 0). A ring of more stages still sends. */
static bool tied_params(struct est_ctx *c, struct arena *a, const struct plan *p,
                        const struct shared_read *sr, int n_sr, struct estimate *e)
{
	const struct graph *g = p->graph;
	const struct plan_part *pp = &e->part;
	int n_st = pp->n_stages;
	for (int s = 0; s < n_st; s++)
		e->stages[s].tied_next = e->stages[s].tied_prev = s;
	if (n_st < 2 || n_sr == 0)
		return true;
	int *up = arena_alloc_raw(a, ((size_t)n_st + 1) * sizeof(int));
	int *size = arena_calloc(a, (size_t)n_st + 1, sizeof(int));
	double *bytes = arena_calloc(a, (size_t)n_st + 1, sizeof(double));
	if (!up || !size || !bytes)
		return false;
	for (int s = 0; s < n_st; s++)
		up[s] = s;
	/* per parameter (a run of sr[]): its stages joined; each stage's
	 * slice, at its first read there, counted once when there are two */
	bool any = false;
	for (int lo = 0, hi; lo < n_sr; lo = hi) {
		for (hi = lo + 1; hi < n_sr && sr[hi].tensor == sr[lo].tensor; hi++)
			;
		int first = part_stage(pp, pp->chunk_of[sr[lo].op]);
		bool shared = false;
		for (int k = lo + 1; k < hi; k++) {
			int s = part_stage(pp, pp->chunk_of[sr[k].op]);
			if (s != first) {
				up[stage_root(up, first)] = stage_root(up, s);
				shared = true;
			}
		}
		if (!shared)
			continue;
		any = true;
		for (int k = lo; k < hi; k++) {
			int s = part_stage(pp, pp->chunk_of[sr[k].op]), seen = 0;
			for (int x = lo; x < k && !seen; x++)
				seen = part_stage(pp, pp->chunk_of[sr[x].op]) == s;
			if (!seen)
				bytes[s] += (double)layout_local_elems(&p->ops[sr[k].op].in[sr[k].in]) *
				            cost_grad_bytes_per_elem(c->train, g->tensors[sr[k].tensor].dtype);
		}
	}
	if (!any)
		return true;
	for (int s = 0; s < n_st; s++)
		size[stage_root(up, s)]++;
	bool dual = p->scenario->training.schedule == SCHED_DUALPIPE && n_st % 2 == 0;
	for (int s = 0; s < n_st; s++) {
		int r = stage_root(up, s), k = size[r];
		struct est_stage *es = &e->stages[s];
		if (k < 2)
			continue;
		if (dual && k == 2 && stage_root(up, n_st - 1 - s) == r) {
			es->tied_next = es->tied_prev = n_st - 1 - s;
			es->tied_local_bytes = bytes[s];
			continue;
		}
		int next = s, prev = s;
		for (int d = 1; d < n_st; d++)
			if (stage_root(up, (s + d) % n_st) == r) {
				next = (s + d) % n_st;
				break;
			}
		for (int d = 1; d < n_st; d++)
			if (stage_root(up, (s - d + n_st) % n_st) == r) {
				prev = (s - d + n_st) % n_st;
				break;
			}
		es->tied_next = next;
		es->tied_prev = prev;
		es->tied_bytes = bytes[s] * 2 * (k - 1) / k;
		es->tied_s = cost_p2p_s(c->t, (int64_t)s * pp->stage_ranks,
		                        (int64_t)next * pp->stage_ranks, es->tied_bytes);
	}
	return true;
}

/* Chunk ch's sends per micro-batch: its activations to the next chunk's
 * stage, their gradient back to the previous chunk's (nothing between two
 * chunks of one stage). */
static void chunk_sends_s(const struct est_ctx *c, const struct plan_part *pp, int ch, double *fwd,
                          double *bwd)
{
	int64_t me = (int64_t)part_stage(pp, ch) * pp->stage_ranks;
	*fwd = ch + 1 < pp->n_chunks ? cost_part_send_s(c->t, pp, ch, me,
	                                                (int64_t)part_stage(pp, ch + 1) * pp->stage_ranks,
	                                                c->wanted)
	                             : 0;
	*bwd = ch > 0 ? cost_part_send_s(c->t, pp, ch - 1, me,
	                                 (int64_t)part_stage(pp, ch - 1) * pp->stage_ranks, c->wanted)
	              : 0;
}

/* The fault slowdown of stage st relative to the whole job's, which the
 * per-op compute times carry (c->slow): the slowest device among the
 * stage's ranks, [st R, (st + 1) R), sets the stage's pace, so a stage
 * without a slow device runs at its own speed and the pipeline's slowest
 * stage sets the schedule's (docs/simulation.md, "Faults"). 1 without
 * faults or with one stage. */
static double stage_slow(const struct est_ctx *c, const struct plan_part *pp, int st)
{
	if (c->faults_slow <= 1 || pp->n_stages < 2)
		return 1;
	double m = 1;
	int64_t lo = (int64_t)st * pp->stage_ranks;
	for (int64_t r = lo; r < lo + pp->stage_ranks; r++)
		m = fmax(m, topo_rank_slowdown(c->t, r));
	return m / c->faults_slow;
}

/* Activation offload (docs/cost-models.md, "Activation offload";
 * Transformer Engine v2.8's cpu_offload.py, AsyncDoubleBufferGroupOffloadHandler):
 * the first N of the chunk's L transformer layers keep their saved
 * tensors in host memory. Memory: each leaves the device once copied,
 * except one layer's (the last copied out is freed at the forward's last
 * commit, the first copied back arrives while the last layer's backward
 * runs): *keep is that layer's bytes less all the offloaded ones, *host
 * the offloaded ones, per micro-batch. Time: the copies run on their own
 * streams, one layer's at a time, and the compute stream waits for each
 * at the next of the N windows of L/N layers (layer_window_map): a copy of
 * b bytes over the host link leaves max(0, b / link - (L/N) x a layer's
 * mean time) exposed, forward (device to host) and backward (host to
 * device) each. */
static bool chunk_offload(struct est_ctx *c, struct arena *a, const struct plan *p,
                          const bool *core, int ch, double slow, double *keep, double *host,
                          double *fwd_s, double *bwd_s)
{
	int64_t n = p->scenario->training.activation_offload_layers;
	const struct plan_part *pp = &c->e->part;
	double *bytes = arena_alloc_raw(a, (size_t)n * sizeof(double));
	uint8_t *in_layer = arena_alloc_raw(a, (size_t)c->g->n_ops + 1);
	if (!bytes || !in_layer)
		return false;
	double largest;
	int64_t layers;
	cost_chunk_offload(c->act, pp, core, ch, n, bytes, host, &largest, &layers, in_layer);
	*keep = largest - *host;
	*fwd_s = *bwd_s = 0;
	if (layers < 1 || !(*host > 0))
		return true;
	double f = 0, b = 0;
	for (int i = pp->first_op[ch]; i < pp->first_op[ch + 1]; i++)
		if (in_layer[i]) {
			const struct est_op *eo = &c->e->ops[i];
			f += eo->compute_forward_s * slow + eo->comm_forward_s;
			b += eo->compute_backward_s * slow + eo->comm_backward_s;
		}
	/* a window: L/N layers of the mean layer's f/L, that is f/N */
	for (int64_t k = 0; k < n; k++) {
		double copy = bytes[k] / c->t->host.link_bps;
		*fwd_s += fmax(0, copy - f / (double)n);
		*bwd_s += fmax(0, copy - b / (double)n);
	}
	return true;
}

/* training.moe_a2a_overlap, Megatron-Core's combined 1F1B
 * (plan_combined_schedule; megatron/core/models/common/
 * model_chunk_schedule_plan.py, TransformerLayerSchedulePlan.run): in an
 * F&B the forward's dispatches and combines run on the communication
 * stream beside the backward's compute, the backward's beside the
 * forward's. Of a micro-batch's, min(A_f, C_b) + min(A_b, C_f) is hidden
 * (A the all-to-alls, C the transformer layers' compute, recomputation
 * included: Megatron-Core pairs the passes layer by layer and runs the
 * embedding, the output layer and the loss apart), in the units the
 * schedule pairs: m v less the warm-up
 * of stage s, 2(P - s - 1) + (v - 1) P + 1 with virtual stages, P - s
 * without (all of them when that reaches m v), the cool-down backwards
 * alone. Taken off the stage's redistribution and backward communication
 * and its micro-batch time; es->moe_hidden_s the seconds an iteration. */
static void combined_hidden(const struct plan_part *pp, int st, int64_t m, struct est_stage *es,
                            struct stage_sums *ss)
{
	int64_t P = pp->n_stages, v = pp->virtual_stages, units = m * v;
	int64_t warm = (v > 1 ? 2 * (P - st - 1) + (v - 1) * P : P - st - 1) + 1;
	double paired = warm >= units ? 0 : (double)(units - warm) / (double)units;
	double cf = ss->layer_f, cb = ss->layer_b;
	double hf = fmin(ss->moe_forward_s, cb) * paired, hb = fmin(ss->moe_backward_s, cf) * paired;
	ss->cat[EST_REDISTRIBUTION] -= hf;
	ss->cat[EST_COMM_BACKWARD] -= hb;
	ss->micro_s -= hf + hb;
	es->moe_hidden_s = (hf + hb) * (double)m;
}

/* A stage: its chunks' per-micro-batch time, its tail, its memory. */
static bool stage(struct est_ctx *c, struct arena *a, const struct plan *p, const bool *core,
                  int st, struct est_stage *es, struct stage_sums *ss)
{
	const struct training *tr = &p->scenario->training;
	const struct plan_part *pp = &c->e->part;
	struct estimate *e = c->e;
	int zero = tr->zero_stage;
	double *act = arena_calloc(a, (size_t)pp->n_chunks + 1, sizeof(double));
	double working = 0, synced = 0, gathered_max = 0, tail_sync = 0;
	/* each local chunk's updated parameters' gathers and one micro-batch's
	 * forward (overlap_param_gather: overlapped_head) */
	double *head_gather = arena_calloc(a, (size_t)pp->virtual_stages, sizeof(double));
	double *head_forward = arena_calloc(a, (size_t)pp->virtual_stages, sizeof(double));
	bool placed = zero >= 2 || tr->overlap_grad_reduce;
	double *rs = placed ? arena_calloc(a, (size_t)c->g->n_ops + 1, sizeof(double)) : NULL;
	double fp8_meta = 0; /* the FP8 recipes' scaling state (cost_fp8_meta_bytes) */
	double host_act = 0; /* the offloaded activations per micro-batch (chunk_offload) */
	if (!act || !head_gather || !head_forward || (placed && !rs))
		return false;
	memset(ss, 0, sizeof(*ss));
	double slow = stage_slow(c, pp, st);
	for (int local = 0; local < pp->virtual_stages; local++) {
		int ch = part_chunk(pp, st, local);
		int lo = pp->first_op[ch], hi = pp->first_op[ch + 1];
		struct chunk_memo *m = chunk(c, a, p, lo, hi);
		if (!m)
			return false;
		for (int i = lo; i < hi; i++) {
			const struct est_op *eo = &e->ops[i];
			ss->cat[EST_COMPUTE_FORWARD] += eo->compute_forward_s * slow;
			ss->cat[EST_COMPUTE_BACKWARD] += eo->compute_backward_s * slow;
			if (schedule_splits_backward(tr->schedule))
				ss->weight_s += plan_weight_grad_s(p->graph, i, eo->compute_backward_s) *
				                slow;
			ss->cat[EST_COMM_FORWARD] += eo->comm_forward_s - eo->redistribution_s;
			ss->cat[EST_REDISTRIBUTION] += eo->redistribution_s;
			ss->cat[EST_COMM_BACKWARD] += eo->comm_backward_s;
			ss->moe_forward_s += eo->moe_forward_s;
			ss->moe_backward_s += eo->moe_backward_s;
			/* a recomputed op's forward compute again, not its
			 * collectives (recompute_talk_s below) */
			ss->host_f += eo->host_forward_s * slow;
			ss->host_b += (eo->host_backward_s + (eo->recompute_s > 0 ? eo->host_forward_s : 0)) *
			              slow;
			if (graph_op_layer(&c->g->ops[i]) >= 0) {
				/* device compute only: the host's wait hides nothing */
				double f = eo->compute_forward_s - eo->host_forward_s;
				ss->layer_f += f * slow;
				ss->layer_b += (eo->compute_backward_s - eo->host_backward_s +
				                (eo->recompute_s > 0 ? f : 0)) * slow;
			}
			ss->cat[EST_RECOMPUTE] += eo->recompute_s * slow;
			if (eo->recompute_s > 0)
				ss->recompute_talk_s += (eo->recompute_s - eo->compute_forward_s) * slow;
			if (zero < 3)
				ss->cat[EST_PARAM_GATHER] += eo->gather_s;
		}
		/* parameters: memory (ZeRO shards over their data-parallel
		 * groups), the optimizer over this device's share; ZeRO-3
		 * gathers one op's at a time */
		double gathered = 0;
		for (int k = 0; k < m->n_params; k++) {
			const struct param_rec *r = &m->params[k];
			es->mem.params += r->elems * cost_param_bytes_per_elem(c->train, r->dtype) /
			                  (zero >= 3 ? r->dp : 1);
			es->mem.grads += r->elems * cost_grad_bytes_per_elem(c->train, r->dtype) /
			                 (zero >= 2 ? r->dp : 1);
			/* offloaded, the optimizer's state is in host memory */
			double opt = r->elems * cost_optimizer_bytes_per_elem(c->train, r->dtype) /
			             (zero >= 1 ? r->dp : 1);
			if (c->offload)
				es->mem.host += opt;
			else
				es->mem.optimizer += opt;
			es->optimizer_s += r->elems / (zero >= 1 ? r->dp : 1) * optimizer_elem_s(c, r->op, r->dtype) *
			                   c->faults_slow * slow;
			/* the FP8 recipes: each Linear's FP8 weight and transpose,
			 * and its scaling state */
			int x;
			if (cost_fp8_linear(c->g, c->prec, r->op, &x)) {
				struct cost_state_bytes b;
				cost_state_bytes(c->train, r->dtype, &b);
				/* with FP8 parameters the FP8 copy is the weight */
				double w = tr->fp8_param_gather ? b.fp8 - b.weight : b.fp8;
				es->mem.params += r->elems * w / (zero >= 3 ? r->dp : 1);
				if (k + 1 == m->n_params || m->params[k + 1].op != r->op)
					fp8_meta += cost_fp8_meta_bytes();
			}
			gathered += r->synced ? r->bytes : 0;
			if (k + 1 == m->n_params || m->params[k + 1].op != r->op) {
				gathered_max = gathered > gathered_max ? gathered : gathered_max;
				gathered = 0;
			}
		}
		double gather = 0, gathers = 0, forward = 0;
		if (!chunk_sync(c, p, ch, m, &ss->cat[EST_GRADIENT_SYNC], &tail_sync, &gather, &gathers,
		                &synced, rs))
			return false;
		if (zero >= 3) {
			double eg, er;
			zero3_exposed(c, lo, hi, rs, &eg, &er);
			ss->cat[EST_PARAM_GATHER] += eg;
			ss->cat[EST_GRADIENT_SYNC] += er;
		}
		/* the updated parameters' gathers: after the optimizer, or
		 * (overlap_param_gather) beside the chunk's first forward, which
		 * waits for what they outlast (overlapped_head, below) */
		for (int i = lo; i < hi && tr->overlap_param_gather; i++)
			forward += e->ops[i].compute_forward_s + e->ops[i].comm_forward_s;
		head_gather[local] = gather;
		head_forward[local] = forward;
		if (!tr->overlap_param_gather)
			ss->gather_tail_s += gathers;
		double w;
		chunk_act(c, p, core, ch, m, &act[ch], &w);
		working = w > working ? w : working;
		if (tr->activation_offload_layers > 0) {
			double keep, host, fwd, bwd;
			if (!chunk_offload(c, a, p, core, ch, slow, &keep, &host, &fwd, &bwd))
				return false;
			act[ch] += keep;
			host_act += host;
			ss->cat[EST_COMM_FORWARD] += fwd;
			ss->cat[EST_COMM_BACKWARD] += bwd;
			es->offload_s += fwd + bwd;
			es->offload_forward_s += fwd;
			es->offload_backward_s += bwd;
		}
		/* the pipeline's sends: activations forward, their gradient back */
		double fwd_send, bwd_send;
		chunk_sends_s(c, &c->e->part, ch, &fwd_send, &bwd_send);
		ss->cat[EST_PIPELINE_P2P] += fwd_send + bwd_send;
		double p2p_buf = 2 * pp->send_bytes[ch];
		es->mem.buffers = p2p_buf > es->mem.buffers ? p2p_buf : es->mem.buffers;
	}
	for (int k = 0; k <= EST_GRADIENT_SYNC; k++)
		if (k != EST_OPTIMIZER)
			ss->micro_s += ss->cat[k];
	if (tr->moe_a2a_overlap && tr->schedule != SCHED_DUALPIPE)
		combined_hidden(pp, st, e->steps_per_iteration, es, ss);
	/* The stage's order of units (plan_schedule). The most in flight does
	 * not grow past 2 x P micro-batches with 1F1B and interleaving (their
	 * warm-up is at most that long), and GPipe holds every micro-batch: one
	 * is walked and scaled. The drain, where the buckets run, is the last
	 * group's whatever the count. So the walk, and the estimate, cost the
	 * same whatever the micro-batch count. */
	struct prog_slot *sl, *mem_sl;
	int64_t m = e->steps_per_iteration, walk = m, cap = 2 * (int64_t)pp->n_stages;
	if (tr->schedule == SCHED_GPIPE)
		walk = 1;
	else if (m > cap)
		walk = cap;
	int n = plan_schedule(a, pp, walk, tr->schedule, st, &sl), mem_n = n;
	if (n < 0)
		return false;
	/* the combined 1F1B's order holds the activations; the walks below
	 * (the buckets and gathers under the units) follow the plain order
	 * it pairs */
	mem_sl = sl;
	if (tr->moe_a2a_overlap && tr->schedule != SCHED_DUALPIPE &&
	    (mem_n = plan_combined_schedule(a, pp, walk, st, &mem_sl)) < 0)
		return false;
	const struct prog_slot *order = tr->schedule == SCHED_GPIPE ? NULL : sl;
	if (tr->overlap_param_gather) {
		double g = overlapped_head(c, st, order, n, head_gather, head_forward);
		tail_sync += g;
		ss->gather_tail_s += g;
	}
	if (zero < 2 && tr->overlap_grad_reduce)
		tail_sync += overlapped_tail(c, st, rs, order, n);
	/* ZeRO 2: every micro-batch's buckets reduce-scattered on the second
	 * stream, which nothing waits for until the flush (DeepSpeed's
	 * overlap_comm; the simulation's stream 1): the last micro-batch's
	 * leave what they outlast of its backward, and when a micro-batch's
	 * buckets take longer than the micro-batch, the backlog of the
	 * m - 1 before it */
	if (zero == 2) {
		double r = 0;
		for (int i = 0; i < c->g->n_ops; i++)
			r += rs[i];
		tail_sync += overlapped_tail(c, st, rs, order, n) +
		             fmax(0, (double)(e->steps_per_iteration - 1) * (r - ss->micro_s));
	}
	/* the tail: the buckets left for the flush, the tied parameters'
	 * sums, the optimizer */
	ss->tail_s = tail_sync + es->tied_s;
	es->gradient_s = tail_sync + es->tied_s;
	ss->cat[EST_OPTIMIZER] = es->optimizer_s;
	es->micro_s = ss->micro_s;
	es->p2p_s = ss->cat[EST_PIPELINE_P2P];
	/* memory: activations in flight by the schedule, buffers */
	in_flight(mem_sl, mem_n, act, pp, &es->mem.activations, &es->in_flight);
	if (tr->schedule == SCHED_GPIPE) {
		es->mem.activations *= (double)m;
		es->in_flight *= (double)m;
	}
	if (tr->schedule == SCHED_DUALPIPE) {
		/* PP + 1 micro-batches (DeepSeek-V3, Table 2); dualpipe() adds
		 * the mirror stage's chunk */
		es->in_flight = (double)pp->n_stages + 1;
		es->mem.activations = es->in_flight * act[part_chunk(pp, st, 0)];
	}
	es->mem.activations += working;
	es->mem.host_activations = es->in_flight * host_act;
	es->mem.host += es->mem.host_activations;
	double bucket = tr->gradient_bucket_bytes < synced ? tr->gradient_bucket_bytes : synced;
	es->mem.buffers += bucket + (zero >= 3 ? 2 * gathered_max : 0) + fp8_meta;
	es->mem.reserve = c->t->device.memory_reserve_bytes;
	es->mem.total = es->mem.params + es->mem.grads + es->mem.optimizer + es->mem.activations +
	                es->mem.buffers + es->mem.reserve;
	return true;
}

/* A calibration's host time per mixture-of-experts layer and pass
 * (train.moe_overhead_us, H; docs/moe-cp.md, "The host's time per
 * layer"): the host's wait for the experts' token counts and its launches
 * after it, H on each pass of each MoE layer, added to the MoEDispatch
 * op's compute (host_forward_s, host_backward_s, which hide nothing); not
 * scaled by a slow device. */
static void moe_host(const struct est_ctx *c, const struct graph *g, struct est_op *ops)
{
	double H = c->t->train.moe_overhead_s;
	for (int i = 0; H > 0 && i < g->n_ops; i++)
		if (g->ops[i].kind == OP_MOEDISPATCH) {
			ops[i].host_forward_s = ops[i].host_backward_s = H;
			ops[i].compute_forward_s += H;
			ops[i].compute_backward_s += H;
		}
}

/* Per op: recomputation and ZeRO-3's gathers (per micro-batch). */
static void op_extras(struct est_ctx *c, struct arena *a, const struct plan *p, const bool *core)
{
	const struct training *tr = &p->scenario->training;
	const struct plan_part *pp = &c->e->part;
	const bool *rec = cost_recomputed(a, p, pp);
	if (!rec) {
		c->oom = true;
		return;
	}
	for (int ch = 0; ch < pp->n_chunks; ch++) {
		int lo = pp->first_op[ch], hi = pp->first_op[ch + 1];
		for (int i = lo; i < hi; i++) {
			struct est_op *eo = &c->e->ops[i];
			eo->chunk = ch;
			if (rec[i])
				eo->recompute_s = eo->compute_forward_s + eo->comm_forward_s;
			else if (tr->recompute == RECOMPUTE_SELECTIVE && core[i] && !c->attn)
				eo->recompute_s = eo->compute_forward_s;  /* FlashAttention's backward
				                                             recomputes it already */
			double g;
			if (tr->zero_stage >= 3) {
				op_gather_s(c, lo, &p->ops[i], eo, &g);
				eo->gathers_bwd = 1;
			}
		}
		/* DeepSpeed 2021 gathers again what it released (zero3.c) */
		if (cost_zero3_deepspeed(tr) && hi > lo) {
			uint8_t *rn = arena_alloc_raw(a, 2 * (size_t)(hi - lo));
			if (!rn || !cost_ds_regathers(a, c->g, p, c->reads, lo, hi,
			                              tr->recompute, rn, rn + (hi - lo))) {
				c->oom = true;
				return;
			}
			for (int i = lo; i < hi; i++) {
				c->e->ops[i].gathers_rec = rn[i - lo];
				c->e->ops[i].gathers_bwd = rn[hi - lo + i - lo];
			}
		}
		for (int i = lo; i < hi && tr->zero_stage >= 3; i++) {
			struct est_op *eo = &c->e->ops[i];
			eo->gather_s = eo->gather_one_s * (1 + eo->gathers_rec + eo->gathers_bwd);
		}
	}
}

/* The zero-bubble greedy schedules' times (pipeline.c, zb_greedy): each
 * chunk's forward F with its collectives and its send on; its input
 * gradients B with the rest of its backward (recomputation, collectives,
 * the gradient's send back); its weight gradients W (plan_weight_grad_s). */
static bool unit_times(struct est_ctx *c, struct arena *a, const struct plan *p)
{
	struct plan_part *pp = &c->e->part;
	const struct est_op *o = c->e->ops;
	pp->unit_s = arena_calloc(a, 3 * (size_t)pp->n_chunks, sizeof(double));
	if (!pp->unit_s)
		return false;
	for (int ch = 0; ch < pp->n_chunks; ch++) {
		double *u = &pp->unit_s[3 * ch];
		for (int i = pp->first_op[ch]; i < pp->first_op[ch + 1]; i++) {
			double w = plan_weight_grad_s(p->graph, i, o[i].compute_backward_s);
			u[0] += o[i].compute_forward_s + o[i].comm_forward_s;
			u[1] += o[i].compute_backward_s - w + o[i].comm_backward_s + o[i].recompute_s;
			u[2] += w;
		}
		double fwd_send, bwd_send;
		chunk_sends_s(c, &c->e->part, ch, &fwd_send, &bwd_send);
		u[0] += fwd_send;
		u[1] += bwd_send;
	}
	return true;
}

/* The chunk's gradient bytes (cost.h): each parameter at its first read
 * in [lo, hi), as lower.c's buckets and the estimate's memory count it. */
/* cost_chunk_grad_bytes, leaving out the parameters whose previous read
 * is among the ops [skip_lo, skip_hi) (none when skip_hi <= skip_lo). */
static double chunk_grad_bytes(const struct plan *p, const struct param_reads *r, int lo, int hi,
                               int skip_lo, int skip_hi)
{
	const struct training *tr = &p->scenario->training;
	const struct graph *g = p->graph;
	double bytes = 0;
	for (int i = lo; i < hi; i++) {
		const struct dist_op *d = &p->ops[i];
		int inputs[SIG_MAX_TENSORS];
		const struct comm_step *sync[SIG_MAX_TENSORS];
		int n = plan_op_params(g, r, lo, d, inputs, sync);
		for (int k = 0; k < n; k++) {
			int prev = r->prev[i][inputs[k]];
			if (prev >= skip_lo && prev < skip_hi)
				continue;
			enum dtype dt = g->tensors[g->ops[i].in[inputs[k]]].dtype;
			double w = (double)dtype_bytes(dt), b = layout_local_bytes(&d->in[inputs[k]]);
			if (w > 0)
				b *= cost_grad_bytes_per_elem(tr, dt) / w;
			if (tr->zero_stage >= 1 && sync[k] && sync[k]->groups.size > 1)
				b /= (double)sync[k]->groups.size;
			bytes += b;
		}
	}
	return bytes;
}

double cost_chunk_grad_bytes(const struct plan *p, const struct param_reads *r, int lo, int hi)
{
	return chunk_grad_bytes(p, r, lo, hi, 0, 0);
}

/* DualPipe's pair (cost_chunk_bucket_skip, cost_chunk_gather_skip):
 * chunk c >= P/2 leaves out what chunk P-1-c read before it when `on`. */
static void pair_skip(const struct plan *p, const struct plan_part *pp, int c, bool on, int *lo,
                      int *hi)
{
	int P = pp->n_stages, keep = P - 1 - c;
	*lo = *hi = 0;
	if (!on || p->scenario->training.schedule != SCHED_DUALPIPE || P % 2 || c < P / 2 || keep < 0)
		return;
	*lo = pp->first_op[keep];
	*hi = pp->first_op[keep + 1];
}

void cost_chunk_bucket_skip(const struct plan *p, const struct plan_part *pp, int c, int *lo,
                            int *hi)
{
	pair_skip(p, pp, c, p->scenario->training.zero_stage < 2, lo, hi);
}

void cost_chunk_gather_skip(const struct plan *p, const struct plan_part *pp, int c, int *lo,
                            int *hi)
{
	int zero = p->scenario->training.zero_stage;
	pair_skip(p, pp, c, zero == 1 || zero == 2, lo, hi);
}

/* DualPipe: the memory of the parameters that chunk [lo_x, hi_x) reads
 * after chunk [lo_d, hi_d) did (the embedding that a multi-token
 * prediction module or a tied head on the last stage shares with the
 * first), which a device holding both chunks keeps once (tied_params):
 * its weights, gradients and optimizer state as the chunks count them
 * (ZeRO's shards; not the FP8 recipes' extra copies), the optimizer's in
 * host memory when offloaded; and into *opt_s the optimizer step's
 * seconds that chunk x's stage counted for them at its pace `slow`, which
 * the device runs once, with chunk d's (DeepSeek-V3, section 3.2.3: one
 * parameter, one gradient, so one update). */
static void pair_shared_memory(const struct est_ctx *c, const struct plan *p, int lo_d, int hi_d,
                               int lo_x, int hi_x, double slow, struct est_memory *out,
                               double *opt_s)
{
	int zero = p->scenario->training.zero_stage;
	*out = (struct est_memory){0};
	*opt_s = 0;
	for (int i = lo_x; i < hi_x; i++) {
		int inputs[SIG_MAX_TENSORS];
		const struct comm_step *sync[SIG_MAX_TENSORS];
		int n = plan_op_params(c->g, c->reads, lo_x, &p->ops[i], inputs, sync);
		for (int k = 0; k < n; k++) {
			int prev = c->reads->prev[i][inputs[k]];
			if (prev < lo_d || prev >= hi_d)
				continue;
			enum dtype dt = c->g->tensors[c->g->ops[i].in[inputs[k]]].dtype;
			double elems = (double)layout_local_elems(&p->ops[i].in[inputs[k]]);
			double dp = sync[k] ? (double)sync[k]->groups.size : 1;
			out->params += elems * cost_param_bytes_per_elem(c->train, dt) /
			               (zero >= 3 ? dp : 1);
			out->grads += elems * cost_grad_bytes_per_elem(c->train, dt) /
			              (zero >= 2 ? dp : 1);
			double opt = elems * cost_optimizer_bytes_per_elem(c->train, dt) /
			             (zero >= 1 ? dp : 1);
			if (c->offload)
				out->host += opt;
			else
				out->optimizer += opt;
			*opt_s += elems / (zero >= 1 ? dp : 1) * optimizer_elem_s(c, i, dt) * slow;
		}
	}
}

/* DualPipe's timeline on the estimate's times: each device runs its
 * order (plan_dualpipe_schedule) and a unit starts when its device is
 * free and its input has come, an F&B when both its inputs have, handing
 * both outputs on at its end (tests/planner/cost/test_pipeline.c,
 * dualpipe_bubble, works the chain by hand). A unit of model stage s
 * lasts, from its stage sums: a forward cf + tf, a whole backward cb + tb,
 * a split one cb - W + tb, a W W (cf, cb compute with the recomputation's,
 * tf, tb the collectives and redistributions of each pass, a recomputed
 * forward's in tb; ZeRO-3's gathers and the per-micro-batch reduction
 * added as they are, hidden by nothing); an F&B of stage s1's forward and stage
 * s2's backward cf1 + cb2 + (tf1 - cb2)+ + (tb2 - cf1)+: each pass's
 * communication runs alongside the other pass's computation, what
 * outlasts it exposed, as the lowering overlaps them (sim/lower.c). The
 * passes run alone, 3P/2 - h - 1 forwards and as many backwards of a
 * device's m of each (DualPipe.step's steps 1-3 and 5-7, h its distance
 * from the nearer end), expose all their communication. A send costs its
 * sender nothing and delays its receiver's input (chunk_sends_s), as the
 * lowering's sends. Each device's
 * end of schedule into end[] and its exposed communication into talk[];
 * false when out of memory. O(P m) time and memory. */
static bool dual_replay(const struct est_ctx *ec, const struct plan_part *pp, int64_t m,
                        const struct stage_sums *ss, double *end, double *talk)
{
	int P = pp->n_stages, C = 2 * P;
	struct arena *a = arena_new();
	struct prog_slot **prog = a ? arena_calloc(a, (size_t)P, sizeof(*prog)) : NULL;
	int *n = a ? arena_calloc(a, (size_t)P, sizeof(int)) : NULL;
	int *at = a ? arena_calloc(a, (size_t)P, sizeof(int)) : NULL;
	double *fdone = a ? arena_alloc_raw(a, (size_t)C * (size_t)m * sizeof(double)) : NULL;
	double *bdone = a ? arena_alloc_raw(a, (size_t)C * (size_t)m * sizeof(double)) : NULL;
	/* the passes' times by model stage (program chunk c < P is stage c's
	 * forward-direction copy, c >= P the reverse one's of stage c - P) */
	struct {
		double cf, tf, xf, cb, tb, xb, w, fsend, bsend, hf, hb;
	} *u = a ? arena_calloc(a, (size_t)P, sizeof(*u)) : NULL;
	bool ok = prog && n && at && fdone && bdone && u;
	for (int d = 0; ok && d < P; d++)
		ok = (n[d] = plan_dualpipe_schedule(a, P, m, d, &prog[d])) >= 0;
	if (!ok) {
		arena_free(a);
		return false;
	}
	for (size_t i = 0; i < (size_t)C * (size_t)m; i++)
		fdone[i] = bdone[i] = -1;
	for (int s = 0; s < P; s++) {
		const double *k = ss[s].cat;
		u[s].cf = k[EST_COMPUTE_FORWARD];
		u[s].tf = k[EST_COMM_FORWARD] + k[EST_REDISTRIBUTION];
		u[s].xf = k[EST_PARAM_GATHER] / 2;
		u[s].cb = k[EST_COMPUTE_BACKWARD] + k[EST_RECOMPUTE] - ss[s].recompute_talk_s;
		u[s].tb = k[EST_COMM_BACKWARD] + ss[s].recompute_talk_s;
		u[s].xb = k[EST_PARAM_GATHER] / 2 + k[EST_GRADIENT_SYNC];
		u[s].w = ss[s].weight_s;
		u[s].hf = ss[s].host_f;  /* compute that hides nothing */
		u[s].hb = ss[s].host_b;
		chunk_sends_s(ec, pp, s, &u[s].fsend, &u[s].bsend);
	}
	for (int d = 0; d < P; d++)
		end[d] = talk[d] = 0;
	for (bool moved = true; moved;) {
		moved = false;
		for (int d = 0; d < P; d++) {
			for (; at[d] < n[d]; at[d]++) {
				const struct prog_slot *sl = &prog[d][at[d]];
				int c = sl->chunk, s = c < P ? c : c - P;
				/* the chunk whose backward an F&B runs: the other one on
				 * this device */
				int cbk = sl->fb ? (c == d ? C - 1 - d : d) : c, sb = cbk < P ? cbk : cbk - P;
				bool fwd = !sl->backward && !sl->weight, bwd = sl->backward || sl->fb;
				int64_t jf = sl->micro, jb = sl->fb ? sl->pair_micro : sl->micro;
				double ready = end[d];
				if (fwd && c != 0 && c != P) {
					double r = fdone[(size_t)(c - 1) * m + jf];
					if (r < 0)
						break;
					ready = fmax(ready, r + u[s - 1].fsend);
				}
				if (bwd) {
					bool last = cbk == P - 1 || cbk == C - 1;
					double r = last ? fdone[(size_t)cbk * m + jb] : bdone[(size_t)(cbk + 1) * m + jb];
					if (r < 0)
						break;
					ready = fmax(ready, r + (last ? 0 : u[sb + 1].bsend));
				}
				double dur, exposed;
				if (sl->fb) {
					exposed = fmax(0, u[s].tf - (u[sb].cb - u[sb].hb)) +
					          fmax(0, u[sb].tb - (u[s].cf - u[s].hf));
					dur = u[s].cf + u[sb].cb + exposed + u[s].xf + u[sb].xb;
				} else if (sl->weight) {
					exposed = 0;
					dur = u[s].w;
				} else if (sl->backward) {
					exposed = u[s].tb;
					dur = u[s].cb - (sl->split ? u[s].w : 0) + u[s].tb + u[s].xb;
				} else {
					exposed = u[s].tf;
					dur = u[s].cf + u[s].tf + u[s].xf;
				}
				end[d] = ready + dur;
				talk[d] += exposed;
				if (fwd)
					fdone[(size_t)c * m + jf] = end[d];
				if (bwd)
					bdone[(size_t)cbk * m + jb] = end[d];
				moved = true;
			}
		}
	}
	for (int d = 0; d < P; d++)
		SL_ASSERT(at[d] == n[d]);
	arena_free(a);
	return true;
}

/* DualPipe (DeepSeek-V3 technical report, arXiv 2412.19437, section
 * 3.2.1 and Table 2): micro-batches fed from both ends, device d holding
 * stage d's layers and, for the other direction, stage P-1-d's: half the
 * micro-batches through each, so a device's per-micro-batch sums are the
 * mean of the pair's, its parameters, gradients and optimizer state both
 * stages' (2x; a parameter both read once, and its optimizer step once:
 * pair_shared_memory), its activations PP + 1 micro-batches of the pair's
 * mean.
 * A forward and a backward chunk run overlapped (F&B): the communication
 * of each (the EP all-to-all, the collectives) under the computation of
 * the other; the passes without a partner expose theirs. The schedule is
 * each device's order replayed (dual_replay), Table 2's (PP/2 - 1)(F&B +
 * B - 3W) at equal units without communication (B the full backward, W
 * its weight gradients); each device's categories hold its exposed
 * communication's share and its bubble the rest of its timeline. After the flush
 * the two copies of each model chunk add their gradients (deepseek-ai/
 * DualPipe's examples/example_dualpipe.py adds each module's and its
 * mirror rank's): each rank sends the rank in its place on the mirror
 * stage both chunks' gradients (cost_chunk_grad_bytes, ZeRO's shard of
 * them; a parameter both chunks read once, one gradient on the device,
 * tied_params) and receives as many at once, latency + bytes / bandwidth of the
 * route between the two stages (an all-reduce of two ranks moves the
 * bytes once each way), after the data-parallel synchronisation and
 * before the optimizer: part of the tail and of gradient_sync, as the
 * lowering sends it (sim/lower.c, mirror_exchange). */
static bool dualpipe(const struct est_ctx *c, const struct plan *p, struct estimate *e,
                     struct stage_sums *ss)
{
	static const enum est_category comm[] = {EST_COMM_FORWARD, EST_REDISTRIBUTION,
	                                         EST_COMM_BACKWARD};
	const struct plan_part *pp = &e->part;
	int zero = p->scenario->training.zero_stage;
	int P = pp->n_stages;
	double m = (double)c->steps;
	double *end = malloc(2 * (size_t)P * sizeof(double)), *exposed = end ? end + P : NULL;
	if (!end || !dual_replay(c, pp, c->steps, ss, end, exposed)) {
		free(end);
		return false;
	}
	for (int d = 0; d < P / 2; d++) {
		int x = P - 1 - d;
		/* a parameter both chunks read (the embedding that the last
		 * chunk's multi-token prediction shares) is one gradient on the
		 * device (tied_params), sent once */
		double bytes = cost_chunk_grad_bytes(p, c->reads, pp->first_op[d], pp->first_op[d + 1]) +
		               chunk_grad_bytes(p, c->reads, pp->first_op[x], pp->first_op[x + 1],
		                                pp->first_op[d], pp->first_op[d + 1]);
		double mirror = bytes > 0 ? cost_p2p_s(c->t, (int64_t)d * pp->stage_ranks,
		                                       (int64_t)x * pp->stage_ranks, bytes)
		                          : 0;
		/* the parameters both chunks read: kept and updated once */
		struct est_memory sh;
		double sh_opt;
		pair_shared_memory(c, p, pp->first_op[d], pp->first_op[d + 1], pp->first_op[x],
		                   pp->first_op[x + 1], c->faults_slow * stage_slow(c, pp, x), &sh,
		                   &sh_opt);
		struct stage_sums u = ss[d];
		for (int k = 0; k < EST_CATEGORY_COUNT; k++)
			u.cat[k] = k == EST_OPTIMIZER ? ss[d].cat[k] + ss[x].cat[k] - sh_opt
			                              : (ss[d].cat[k] + ss[x].cat[k]) / 2;
		u.weight_s = (ss[d].weight_s + ss[x].weight_s) / 2;
		u.recompute_talk_s = (ss[d].recompute_talk_s + ss[x].recompute_talk_s) / 2;
		/* the tail: a device synchronises both its chunks' buckets,
		 * one after the other (sim/lower.c, lower_tail; overlapped,
		 * both chunks' last backwards end in the cool-down's run of
		 * W's, so neither hides much of the other's); ZeRO 2's backlog
		 * counts m micro-batches of a chunk where the device runs m/2
		 * of each, the pair's already, but its all-gathers of the
		 * updated parameters are each chunk's, one after the other
		 * (chunk x's without the parameter chunk d gathers:
		 * cost_chunk_gather_skip). Each stage its own tied
		 * parameters' sum; then the mirror exchange */
		double td = ss[d].tail_s - e->stages[d].tied_s, tx = ss[x].tail_s - e->stages[x].tied_s;
		double gd = ss[d].gather_tail_s, gx = ss[x].gather_tail_s;
		double sync = zero < 2 ? td + tx : fmax(td - gd, tx - gx) + gd + gx;
		u.gather_tail_s = gd + gx;
		u.tail_s = sync + fmax(e->stages[d].tied_s, e->stages[x].tied_s) + mirror;
		u.dual = true;
		double talk = u.recompute_talk_s;
		for (size_t k = 0; k < sizeof comm / sizeof *comm; k++)
			talk += u.cat[comm[k]];
		/* each device's own timeline (dual_replay): what of its m
		 * micro-batches' communication the other pass's computation did
		 * not hide, spread over them, and the rest of its schedule idle */
		for (int k = 0; k < 2; k++) {
			int dev = k ? x : d;
			struct stage_sums v = u;
			double left = talk > 0 ? exposed[dev] / (m * talk) : 0;
			for (size_t i = 0; i < sizeof comm / sizeof *comm; i++)
				v.cat[comm[i]] *= left;
			v.cat[EST_RECOMPUTE] -= (1 - left) * u.recompute_talk_s;
			/* the sends cost the sender nothing: their receivers' waits
			 * are in the bubble */
			v.cat[EST_PIPELINE_P2P] = 0;
			v.micro_s = 0;
			for (int i = 0; i <= EST_GRADIENT_SYNC; i++)
				if (i != EST_OPTIMIZER)
					v.micro_s += v.cat[i];
			v.bubble_s = fmax(0, end[dev] - m * v.micro_s);
			ss[dev] = v;
		}
		struct est_memory md = e->stages[d].mem, mx = e->stages[x].mem;
		for (int k = 0; k < 2; k++) {
			struct est_stage *es = &e->stages[k ? x : d];
			/* both chunks' state, a parameter they share once */
			es->mem.params = md.params + mx.params - sh.params;
			es->mem.grads = md.grads + mx.grads - sh.grads;
			es->mem.optimizer = md.optimizer + mx.optimizer - sh.optimizer;
			es->mem.activations = (md.activations + mx.activations) / 2;
			es->mem.buffers = fmax(md.buffers, mx.buffers);
			es->mem.total = es->mem.params + es->mem.grads + es->mem.optimizer +
			                es->mem.activations + es->mem.buffers + es->mem.reserve;
			es->micro_s = ss[k ? x : d].micro_s;
			es->optimizer_s = u.cat[EST_OPTIMIZER];
			es->mirror_bytes = bytes;
			es->mirror_s = mirror;
			es->gradient_s = sync + es->tied_s + mirror;
		}
	}
	free(end);
	return true;
}

/* The schedule's time: the slowest stage every micro-batch, plus the fill
 * and drain of the others (a v-th of it with v chunks per stage), then the
 * slowest tail; the categories are the slowest stage's. */
static void assemble(struct estimate *e, const struct stage_sums *ss)
{
	const struct plan_part *pp = &e->part;
	double m = (double)e->steps_per_iteration, sum = 0, tmax = -1, tail = -1;
	int crit = 0, last = 0;
	double dual_end = 0;   /* DualPipe: the last device's end of schedule (dualpipe) */
	for (int s = 0; s < pp->n_stages; s++) {
		sum += ss[s].micro_s;
		if (ss[s].micro_s > tmax) {
			tmax = ss[s].micro_s;
			crit = s;
		}
		if (ss[s].dual)
			dual_end = fmax(dual_end, m * ss[s].micro_s + ss[s].bubble_s);
		if (ss[s].tail_s + ss[s].cat[EST_OPTIMIZER] > tail) {
			tail = ss[s].tail_s + ss[s].cat[EST_OPTIMIZER];
			last = s;
		}
	}
	e->critical_stage = crit;
	e->pipeline_s = ss[crit].dual ? dual_end : m * tmax + (sum - tmax) / pp->virtual_stages;
	/* ZB-H1: the drain's B's travel back without their W's, which fill
	 * it: (P-1)(T_F + T_B - T_W) for 1F1B's (P-1)(T_F + T_B + T_W), each
	 * stage but the slowest 2 T_W shorter (Qi et al. 2024, section 3.1).
	 * ZB-V: the same in chunks of half a stage, (P-1)(T_F + T_B - T_W)/2,
	 * which is the fill of the first chunk's forwards, (P-1) T_F / 2, at
	 * the papers' T_F = T_B = T_W (docs/cost-models.md, "Pipeline
	 * schedules") */
	for (int s = 0; s < pp->n_stages && !ss[crit].dual; s++)
		e->pipeline_s -= s == crit ? 0 : 2 * ss[s].weight_s / pp->virtual_stages;
	e->bubble_s = e->pipeline_s - m * tmax;
	for (int k = 0; k < EST_CATEGORY_COUNT; k++)
		e->category_s[k] = m * ss[crit].cat[k];
	e->category_s[EST_BUBBLE] = e->bubble_s;
	e->category_s[EST_OPTIMIZER] = ss[last].cat[EST_OPTIMIZER];
	e->category_s[EST_GRADIENT_SYNC] += e->stages[last].gradient_s;
	e->compute_s = e->category_s[EST_COMPUTE_FORWARD] + e->category_s[EST_COMPUTE_BACKWARD] +
	               e->category_s[EST_RECOMPUTE] + e->category_s[EST_OPTIMIZER];
	e->comm_s = 0;
	for (int k = 0; k < EST_CATEGORY_COUNT; k++)
		e->comm_s += e->category_s[k];
	e->comm_s -= e->compute_s + e->bubble_s;
	e->iteration_s = e->compute_s + e->comm_s + e->bubble_s;
	int big = 0;
	for (int s = 1; s < pp->n_stages; s++)
		if (e->stages[s].mem.total > e->stages[big].mem.total)
			big = s;
	const struct est_memory *mm = &e->stages[big].mem;
	e->memory_stage = big;
	e->param_bytes = mm->params;
	e->grad_bytes = mm->grads;
	e->optimizer_bytes = mm->optimizer;
	e->activation_bytes = mm->activations;
	e->buffer_bytes = mm->buffers;
	e->reserve_bytes = mm->reserve;
	e->memory_bytes_per_device = mm->total;
}

/* The optimizer offload's host memory (docs/cost-models.md, "Optimizer
 * offload"): a server's host holds the offloaded state of each of its
 * devices the job uses, counted at the largest device's (stages may
 * differ), against the server's host memory when the topology states it. */
static void host_memory(const struct scenario *s, struct estimate *e)
{
	const struct topology *t = s->topo;
	for (int st = 0; st < e->n_stages; st++)
		if (e->stages[st].mem.host > e->host_bytes_per_device) {
			e->host_bytes_per_device = e->stages[st].mem.host;
			e->host_activation_bytes_per_device = e->stages[st].mem.host_activations;
		}
	int64_t on_server = s->devices < t->devices_per_server ? s->devices : t->devices_per_server;
	e->host_bytes_per_server = e->host_bytes_per_device * (double)on_server;
	e->host_capacity_bytes = t->host.capacity_bytes;
	e->host_overflow_bytes = e->host_capacity_bytes > 0 &&
	                                 e->host_bytes_per_server > e->host_capacity_bytes
	                                 ? e->host_bytes_per_server - e->host_capacity_bytes : 0;
}

/* ----------------------------------------------------------- estimator */

#define PART_MEMO 4   /* partitions remembered (a search's group needs 2) */

/* A partition and the settings it was made for (all plan_partition reads
 * of the training). */
struct part_memo {
	bool used;
	int64_t stages, virt;
	int n_cuts;
	int *cuts;
	struct plan_part part;
};

struct estimator {
	const struct plan *p;
	struct est_ctx *c;       /* its arena holds what follows */
	struct estimate base;    /* the per-op pass: ops[], compute_fallback */
	const bool *core;        /* plan_attention_core */
	double *cost;            /* per op: seconds per micro-batch, for the partition */
	struct part_memo parts[PART_MEMO];
	int next_part;           /* the slot the next new partition takes */
	struct shared_read *shared;  /* shared_reads */
	int n_shared;
};

/* Copies a partition's arrays into `a`; false when out of memory. */
static bool part_copy(struct arena *a, const struct plan_part *from, int n_ops,
                      struct plan_part *to)
{
	*to = *from;
	size_t k = (size_t)from->n_chunks;
#define COPY(field, count)                                                                   \
	do {                                                                                 \
		to->field = arena_dup(a, from->field, (count) * sizeof(*to->field));         \
		if (!to->field)                                                              \
			return false;                                                        \
	} while (0)
	COPY(first_op, k + 1);
	COPY(chunk_of, (size_t)n_ops + 1);
	COPY(send_bytes, k + 1);
	COPY(live, (size_t)n_ops + 1);
	COPY(send_split, k + 1);
	COPY(send_groups, k + 1);
#undef COPY
	return true;
}

/* The partition for the scenario's pipeline settings into out (in `a`):
 * remembered, or made and remembered. */
static bool partition(struct estimator *x, struct arena *a, struct plan_part *out,
                      struct diag_list *diags)
{
	const struct training *tr = &x->p->scenario->training;
	int n_ops = x->p->graph->n_ops;
	if (tr->stage_layers)  /* a list the memo's key does not hold: made afresh */
		return plan_partition(a, x->p, x->cost, out, diags);
	for (int i = 0; i < PART_MEMO; i++) {
		const struct part_memo *m = &x->parts[i];
		if (m->used && m->stages == tr->pipeline_stages && m->virt == tr->virtual_stages &&
		    m->n_cuts == tr->n_cuts &&
		    (tr->n_cuts == 0 || !memcmp(m->cuts, tr->cuts, (size_t)tr->n_cuts * sizeof(int))))
			return part_copy(a, &m->part, n_ops, out);
	}
	if (!plan_partition(a, x->p, x->cost, out, diags))
		return false;
	struct part_memo *m = &x->parts[x->next_part];
	struct arena *keep = x->c->scratch;
	*m = (struct part_memo){false, tr->pipeline_stages, tr->virtual_stages, tr->n_cuts, NULL, {0}};
	if (tr->n_cuts > 0) {
		m->cuts = arena_alloc(keep, (size_t)tr->n_cuts * sizeof(int));
		if (!m->cuts)
			return true;  /* not remembered */
		memcpy(m->cuts, tr->cuts, (size_t)tr->n_cuts * sizeof(int));
	}
	m->used = part_copy(keep, out, n_ops, &m->part);
	x->next_part = (x->next_part + 1) % PART_MEMO;
	return true;
}

struct estimator *plan_estimator_new(const struct plan *p, struct diag_list *diags)
{
	SL_ASSERT(p && p->scenario && p->graph);
	const struct graph *g = p->graph;
	const struct scenario *s = p->scenario;
	struct estimator *x = calloc(1, sizeof(*x));
	if (x)
		x->c = est_ctx_new(s, 1, MEMO_SLOTS, &x->base);
	struct est_ctx *c = x ? x->c : NULL;
	struct arena *a = c ? c->scratch : NULL;
	if (a) {
		x->p = p;
		x->base.n_ops = g->n_ops;
		/* every op's is written below: priced, or copied from its class's */
		x->base.ops = arena_alloc_raw(a, ((size_t)g->n_ops + 1) * sizeof(*x->base.ops));
		x->core = plan_attention_core(a, g);
		x->cost = arena_calloc(a, (size_t)g->n_ops + 1, sizeof(double));
		c->fused = plan_fused_input_grads(a, p);
		c->act = cost_act_scratch_new(a, p);
		x->n_shared = shared_reads(a, g, &x->shared);
	}
	int *ring_in = a ? arena_calloc(a, (size_t)g->n_ops + 1, sizeof(int)) : NULL;
	for (int k = 0; ring_in && k < p->n_edges; k++)
		if (p->edges[k].ring > 1)
			ring_in[p->edges[k].consumer] = p->edges[k].ring;
	c->ring_in = ring_in;
	bool ok = a && x->base.ops && x->core && x->cost && c->fused && c->act && x->n_shared >= 0 &&
	          ring_in;
	/* Each op's work per micro-batch (its parameters are the chunks'
	 * business, plan_estimator_run): one op per class of ops alike, then
	 * the redistributions into them, then the others as copies. */
	for (int i = 0; ok && i < g->n_ops; i++)
		if (!twin(c, p, i))
			op_work(c, &p->ops[i], &x->base.ops[i]);
	if (ok)
		edges(c, p);
	for (int i = 0; ok && i < g->n_ops; i++) {
		struct est_op *eo = &x->base.ops[i];
		if (twin(c, p, i)) {
			*eo = x->base.ops[p->alike[i]];
			eo->op = i;
		}
		eo->activation_bytes = cost_act_op_bytes(c->act, i);
	}
	if (ok)
		moe_host(c, g, x->base.ops);
	for (int i = 0; ok && i < g->n_ops; i++) {
		const struct est_op *eo = &x->base.ops[i];
		x->cost[i] = eo->compute_forward_s + eo->compute_backward_s + eo->comm_forward_s +
		             eo->comm_backward_s;
	}
	if (!ok || c->oom) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "out of memory estimating the plan");
		plan_estimator_free(x);
		return NULL;
	}
	return x;
}

void plan_estimator_free(struct estimator *x)
{
	if (x) {
		est_ctx_free(x->c);
		free(x);
	}
}

bool plan_estimator_run(struct estimator *x, struct arena *a, struct estimate *out,
                        struct diag_list *diags)
{
	const struct plan *p = x->p;
	const struct graph *g = p->graph;
	const struct scenario *s = p->scenario;
	struct est_ctx *c = x->c;
	memset(out, 0, sizeof(*out));
	out->n_ops = g->n_ops;
	out->ops = arena_dup(a, x->base.ops, (size_t)g->n_ops * sizeof(*out->ops));
	if (!out->ops) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "out of memory estimating the plan");
		return false;
	}
	out->compute_fallback = x->base.compute_fallback;
	c->steps = out->steps_per_iteration = est_steps(s, diags);
	/* The chunks, by each op's seconds per micro-batch. */
	if (!partition(x, a, &out->part, diags))
		return false;
	c->e = out;
	out->n_stages = out->part.n_stages;
	out->stages = arena_calloc(a, (size_t)out->n_stages + 1, sizeof(*out->stages));
	struct stage_sums *ss = arena_calloc(a, (size_t)out->n_stages + 1, sizeof(*ss));
	bool ok = out->stages && ss;
	if (ok)
		op_extras(c, a, p, x->core);
	if (ok && (s->training.schedule == SCHED_ZB_V || s->training.schedule == SCHED_ZB_H2))
		ok = unit_times(c, a, p);
	ok = ok && tied_params(c, a, p, x->shared, x->n_shared, out);
	for (int i = 0; ok && i < g->n_ops; i++)
		out->ops[i].gradient_s = 0;
	for (int st = 0; ok && st < out->n_stages; st++)
		ok = stage(c, a, p, x->core, st, &out->stages[st], &ss[st]);
	c->e = &x->base;
	if (!ok || c->oom) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "out of memory estimating the plan");
		return false;
	}
	if (s->training.schedule == SCHED_DUALPIPE &&
	    (out->n_stages % 2 || out->steps_per_iteration % 2 ||
	     out->steps_per_iteration < 2 * (int64_t)out->n_stages)) {
		/* scenario_load refuses these; a plan made otherwise may not */
		diag_add(diags, DIAG_ERROR, s->file, 0, "training.schedule",
		         "the \"dualpipe\" schedule runs an even number of micro-batches, at least "
		         "twice the pipeline stages, on an even number of stages, not %lld "
		         "micro-batches on %d stages", (long long)out->steps_per_iteration,
		         out->n_stages);
		return false;
	}
	if (s->training.schedule == SCHED_DUALPIPE && !dualpipe(c, p, out, ss)) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "out of memory estimating the plan");
		return false;
	}
	assemble(out, ss);
	out->hbm_bytes = s->topo->device.hbm_bytes;
	out->oom_overflow_bytes = out->memory_bytes_per_device > out->hbm_bytes
	                                  ? out->memory_bytes_per_device - out->hbm_bytes : 0;
	host_memory(s, out);
	return true;
}

bool plan_estimate(struct arena *a, const struct plan *p, struct estimate *out,
                   struct diag_list *diags)
{
	struct estimator *x = plan_estimator_new(p, diags);
	bool ok = x && plan_estimator_run(x, a, out, diags);
	plan_estimator_free(x);
	if (!x)
		memset(out, 0, sizeof(*out));
	return ok;
}
