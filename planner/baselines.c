/* baselines.c — two plans to measure the searches against (issue 5):
 * data parallel over every device, and Megatron-LM's tensor parallelism
 * (Shoeybi et al. 2019; seeds 001 and 003) inside a server with data
 * parallelism across servers.
 *
 * Megatron is decided from the graph alone (shapes, parameters,
 * signatures; never op names). One pass in op order follows which tensor
 * dimensions carry a tensor-parallel cut: a MatMul with a parameter weight
 * whose input does not carry the cut on its contracted dimension is column
 * parallel (its output columns cut T ways); one whose input does is row
 * parallel (partial sums, one AllReduce). The cut travels through every
 * op whose signature keeps the label (element-wise ops, bias, transpose,
 * the batch dimension of BatchMatMul: the attention heads) and through a
 * Reshape that moves it onto a major dimension it divides. The vocabulary
 * is the class dimension of a cross-entropy; a Gather from a parameter table
 * of that many rows is vocabulary parallel, the loss too. Every other op
 * that reads no tensor-parallel cut is data parallel over D (the dimension
 * that carries the batch, traced the same way from the graph's first input)
 * and replicated over T. Those ops become synthetic shard() entries in the
 * Layout form over a (dp, mp) device matrix of D x T (mp minor, so that a
 * tensor-parallel group is consecutive ranks: one server), and sharding
 * propagation fills in the ops between a column- and a row-parallel MatMul.
 *
 * With training.sequence_parallel (Korthikanti et al. 2022) the
 * data-parallel ops after a row-parallel MatMul (its bias and dropout, the
 * residual Adds, the norms, up to the next column-parallel MatMul) also cut
 * their batch dimension over mp: dim 0 of [B*s, h] D*T ways, dp major. The
 * row-parallel partial sums are then completed by a ReduceScatter and the
 * column-parallel input gathered by an AllGather; the plan is built in the
 * fused redistribution mode, whatever the option says, since the compatible
 * mode would AllReduce and slice instead. A norm feeding several
 * column-parallel MatMuls (q, k, v) stays whole and is gathered at its
 * input, once (docs/planner.md).
 *
 * A tensor-parallel degree above the model's key-value heads (a multiple
 * of them) runs as Megatron-Core runs it: Q, K and V column parallel over
 * T, their outputs all-gathered, the attention core over (dp, kv, rep),
 * each key-value head on T / kv ranks (mark_kv; docs/planner.md).
 *
 * With training.expert_parallel (EP) the experts of a mixture-of-experts
 * layer (the ops between a MoEDispatch and its MoECombine) take shard()s
 * over (dp/ep, ep, mp), the expert dimension over ep: the layout algebra
 * then sends the slots by AllToAll over each EP group. With
 * training.context_parallel (CP) every op takes a shard() over (dp, cp,
 * mp), the tokens cut (dp, cp) and the sequence traced to the queries of
 * the attention, whose keys and values are then all-gathered over each CP
 * group (docs/moe-cp.md).
 *
 * Units: element counts int64_t. No hot path: one pass over the ops per
 * tensor-parallel degree tried, two more for sequence parallelism, then one
 * propagation.
 */
#include <stdio.h>
#include <string.h>

#include "planner-int.h"

#define MEGA_PATH "planner megatron"

/* What the Megatron rule makes of an op. */
enum mega_role {
	MEGA_FOLLOW,   /* reads a tensor-parallel cut: left to propagation */
	MEGA_DATA,     /* outside the tensor-parallel regions: data parallel over D, replicated over T */
	MEGA_COLUMN,   /* MatMul, weight cut by output columns */
	MEGA_ROW,      /* MatMul, weight cut by rows (the contracted dimension) */
	MEGA_VOCAB,    /* Gather from the vocabulary table, or the loss over it */
	MEGA_KV_GATHER,/* T above the key-value heads: a Reshape of Q, K or V's output, whole
	                  over T (the AllGather of the QKV output Megatron-Core runs) */
	MEGA_KV_CORE,  /* T above the key-value heads: the attention core over (dp, kv, rep) */
	MEGA_KV_MERGE, /* T above the key-value heads: the Reshape merging the heads back into
	                  the row-parallel MatMul's columns, (kv, rep) */
};

struct mega {
	struct arena *a;
	const struct scenario *s;
	const struct graph *g;
	int64_t n, t, d;        /* devices of the stage, tensor- and data-parallel degrees */
	int64_t t_max;          /* the largest tensor-parallel degree allowed (1: data parallel) */
	uint8_t *split;         /* per tensor: bit k set when dimension k carries the T cut */
	uint8_t *batch;         /* per tensor: bit k set when dimension k carries the batch */
	enum mega_role *role;   /* per op */
	bool *seq;              /* per op: sequence parallel (dp and mp both cut the batch dim) */
	int64_t ep;             /* expert-parallel degree (divides d; or, folded, a multiple of t
	                           dividing d x t) */
	bool fold;              /* ep > d: Megatron-Core's parallel folding, the experts over the
	                           stage's tensor- and data-parallel ranks (ETP 1) */
	uint8_t *moe;           /* per op: MOE_EXPERT, MOE_TOKENS or 0 */
	int64_t kv_rep;         /* T / the key-value heads when T exceeds them (each head's
	                           ranks), else 1 */
	uint8_t *rows;          /* per tensor: bit k set when dimension k carries the rep cut
	                           (the grouped queries' rows, kv_rep > 1) */
	int64_t cp;             /* context-parallel degree: n = d x cp x t */
	uint8_t *seqm;          /* per tensor: bit k set when dimension k carries the sequence
	                           (the cp cut) */
};

/* Mixture-of-experts ops: the experts (between a MoEDispatch and its
 * MoECombine) run over a (dp/ep, ep, mp) matrix, the expert dimension cut
 * over ep; the dispatch, the combine and the router stay with the tokens. */
enum { MOE_EXPERT = 1, MOE_TOKENS = 2 };

/* ------------------------------------------------------------ helpers */

/* The graph's batch: dimension 0 of its first input (NULL when none). */
static const struct tensor *batch_input(const struct graph *g)
{
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].role == TENSOR_INPUT && g->tensors[t].rank > 0)
			return &g->tensors[t];
	return NULL;
}

static void note_ignored(const struct scenario *s, const char *planner, struct diag_list *diags)
{
	if (s->n_shards)
		diag_add(diags, DIAG_NOTE, s->file, 0, NULL,
		         "the %s baseline ignores the scenario's %d shard() entr%s", planner,
		         s->n_shards, s->n_shards == 1 ? "y" : "ies");
}

/* The same scenario with other shard() entries. */
static struct scenario *with_shards(struct arena *a, const struct scenario *s,
                                    struct shard_config *shards, int n)
{
	struct scenario *c = arena_alloc(a, sizeof(*c));
	if (!c)
		return NULL;
	*c = *s;
	c->shards = shards;
	c->n_shards = n;
	return c;
}

/* ------------------------------------------------------ data parallel */

/* ------------------------------------------ Megatron: which op does what */

/* Is `v` the class dimension of some cross-entropy of the graph? */
static bool is_vocab(const struct graph *g, int64_t v)
{
	struct op_sig sig;
	for (int i = 0; i < g->n_ops; i++) {
		if (!graph_op_signature(g, i, &sig) || sig.rule != SIG_RULE_VOCAB_CE)
			continue;
		for (int l = 0; l < sig.n_labels; l++)
			if (sig.role[l] == SIG_SUM && sig.size[l] == v)
				return true;
	}
	return false;
}

/* The label of the first dimension of an input that carries a cut (bit d
 * of mask[tensor]) and whose role is not SIG_WHOLE, -1 when none. */
static int cut_label(const struct mega *M, const uint8_t *mask, const struct op_sig *sig, int op)
{
	const struct op *o = &M->g->ops[op];
	for (int i = 0; i < o->n_in; i++)
		for (int d = 0; d < M->g->tensors[o->in[i]].rank; d++) {
			int l = sig->in[i][d];
			if ((mask[o->in[i]] & (1u << d)) && l >= 0 && sig->role[l] != SIG_WHOLE)
				return l;
		}
	return -1;
}

static bool any_cut(const struct mega *M, const uint8_t *mask, int op)
{
	const struct op *o = &M->g->ops[op];
	for (int i = 0; i < o->n_in; i++)
		if (mask[o->in[i]])
			return true;
	return false;
}

/* The label with this role among input i's (the first), -1 when none. */
static int label_of(const struct mega *M, const struct op_sig *sig, int op, int i,
                    enum sig_role role)
{
	int r = M->g->tensors[M->g->ops[op].in[i]].rank;
	for (int d = 0; d < r; d++)
		if (sig->in[i][d] >= 0 && sig->role[sig->in[i][d]] == role)
			return sig->in[i][d];
	return -1;
}

/* The first kept label of input i that input 0 does not carry (a
 * weight's output columns, past the batch labels it shares), -1 when none. */
static int new_label(const struct mega *M, const struct op_sig *sig, int op, int i)
{
	int r = M->g->tensors[M->g->ops[op].in[i]].rank, r0 = M->g->tensors[M->g->ops[op].in[0]].rank;
	for (int d = 0; d < r; d++) {
		int l = sig->in[i][d];
		bool shared = false;
		for (int e = 0; e < r0; e++)
			shared |= sig->in[0][e] == l;
		if (l >= 0 && sig->role[l] == SIG_KEEP && !shared)
			return l;
	}
	return -1;
}

/* Which ops are the experts, the dispatch, the combine and the router (a
 * MatMul whose Softmax weights a combine), from the graph alone. */
static void mark_moe(struct mega *M)
{
	const struct graph *g = M->g;
	uint8_t *expert = arena_calloc(M->a, (size_t)g->n_tensors + 1, 1);
	for (int i = 0; expert && i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (o->kind == OP_MOEDISPATCH) {
			M->moe[i] = MOE_TOKENS;
			expert[o->out[0]] = 1;
			continue;
		}
		if (o->kind == OP_MOECOMBINE) {
			M->moe[i] = MOE_TOKENS;
			int sm, r = graph_moe_router_of(g, o->in[2], &sm);
			if (r >= 0)
				M->moe[sm] = M->moe[r] = MOE_TOKENS;
			continue;
		}
		for (int j = 0; j < o->n_in; j++)
			if (expert[o->in[j]])
				M->moe[i] = MOE_EXPERT;
		for (int k = 0; M->moe[i] == MOE_EXPERT && k < o->n_out; k++)
			expert[o->out[k]] = 1;
	}
}

/* A Gather from a parameter table whose rows are the vocabulary. */
static bool vocab_gather(const struct mega *M, int op)
{
	const struct op *o = &M->g->ops[op];
	if (o->kind != OP_GATHER || o->n_in < 1)
		return false;
	const struct tensor *table = &M->g->tensors[o->in[0]];
	return table->role == TENSOR_PARAM && table->rank >= 1 &&
	       is_vocab(M->g, table->dims[0]);
}

static enum mega_role op_role(const struct mega *M, int op, const struct op_sig *sig)
{
	const struct graph *g = M->g;
	const struct op *o = &g->ops[op];
	if (sig->rule == SIG_RULE_VOCAB_CE || vocab_gather(M, op))
		return MEGA_VOCAB;
	if (M->moe[op] == MOE_TOKENS)
		return MEGA_DATA;
	bool weight = o->n_in == 2 && g->tensors[o->in[0]].role != TENSOR_PARAM &&
	              g->tensors[o->in[1]].role == TENSOR_PARAM;
	int wr = weight ? g->tensors[o->in[1]].rank : 0;
	if ((o->kind == OP_MATMUL && wr == 2) ||
	    (o->kind == OP_BATCHMATMUL && wr == 3 && M->moe[op] == MOE_EXPERT)) {
		int k = label_of(M, sig, op, 0, SIG_SUM);
		return k >= 0 && cut_label(M, M->split, sig, op) == k ? MEGA_ROW : MEGA_COLUMN;
	}
	return any_cut(M, M->split, op) ? MEGA_FOLLOW : MEGA_DATA;
}

/* The output dimension of a Reshape that input dimension d's cut of
 * `degree` lands on (as many elements before it, the cut on its major
 * part), -1 when it cannot land; *fits false when it lands on a dimension
 * the degree does not divide. */
static int reshape_target(const struct tensor *x, const struct tensor *y, int d, int64_t degree,
                          int64_t kv_rep, bool *fits)
{
	int64_t before = 1, at = 1;
	for (int k = 0; k < d; k++)
		before *= x->dims[k];
	for (int e = 0; e < y->rank; at *= y->dims[e], e++) {
		if (at != before || y->dims[e] == 1)
			continue;
		int64_t xs = x->dims[d], ys = y->dims[e];
		if (xs <= ys ? ys % xs : xs % ys)
			return -1;
		int64_t lands = xs <= ys ? xs : ys;
		/* T above the key-value heads: the cut lands on the heads, each
		 * head's kv_rep ranks sharing it (Megatron-Core's sub-sharding) */
		*fits = lands % degree == 0 || (kv_rep > 1 && lands * kv_rep == degree);
		return *fits ? e : -1;
	}
	return -1;
}

/* A cut of `degree` through an op: every kept label carries it (a Reshape
 * onto the dimension it lands on). False when a Reshape would land it on a
 * dimension the degree does not divide (it then stops there). */
static bool carry(const struct mega *M, uint8_t *mask, int op, const struct op_sig *sig,
                  int64_t degree)
{
	const struct op *o = &M->g->ops[op];
	const struct tensor *ts = M->g->tensors;
	bool fits = true;
	if (sig->rule == SIG_RULE_RESHAPE) {
		for (int d = 0; d < ts[o->in[0]].rank; d++) {
			int e = mask[o->in[0]] & (1u << d)
			            ? reshape_target(&ts[o->in[0]], &ts[o->out[0]], d, degree,
			                             mask == M->split ? M->kv_rep : 1, &fits)
			            : -1;
			if (e >= 0)
				mask[o->out[0]] |= (uint8_t)(1u << e);
		}
		return fits;
	}
	bool cut[SIG_MAX_LABELS] = {false};
	for (int i = 0; i < o->n_in; i++)
		for (int d = 0; d < ts[o->in[i]].rank; d++) {
			int l = sig->in[i][d];
			if ((mask[o->in[i]] & (1u << d)) && l >= 0 && sig->role[l] == SIG_KEEP)
				cut[l] = true;
		}
	for (int k = 0; k < o->n_out; k++)
		for (int d = 0; d < ts[o->out[k]].rank; d++)
			if (sig->out[k][d] >= 0 && cut[sig->out[k][d]])
				mask[o->out[k]] |= (uint8_t)(1u << d);
	return true;
}

/* A column-parallel MatMul's output columns carry the cut. */
static void mark_columns(struct mega *M, int op, const struct op_sig *sig, int n)
{
	const struct op *o = &M->g->ops[op];
	for (int d = 0; d < M->g->tensors[o->out[0]].rank; d++)
		if (sig->out[0][d] == n)
			M->split[o->out[0]] |= (uint8_t)(1u << d);
}

/* The label a role cuts T ways, -1 when none. */
static int mp_label(const struct mega *M, int op, const struct op_sig *sig)
{
	switch (M->role[op]) {
	case MEGA_COLUMN: return new_label(M, sig, op, 1);
	case MEGA_ROW:
	case MEGA_VOCAB: return label_of(M, sig, op, 0, SIG_SUM);
	default: return -1;
	}
}

/* Megatron-Core's sub-sharding of the key-value heads (megatron/core/
 * transformer/attention.py, num_query_groups < the tensor-parallel size):
 * T / the generator's key-value heads when T is above them and a multiple
 * of them (transformer_config.py refuses T neither a multiple nor a
 * divisor), else 1. */
static int64_t kv_replicas(const struct mega *M)
{
	const struct model_gen *g = M->g->gen;
	int64_t kv = g && model_gen_uses(g->kind, "kv_heads") && g->kv_heads > 0 ? g->kv_heads : 0;
	if (kv < 1 || kv >= g->heads || M->t <= kv || M->t % kv)
		return 1;
	return M->t / kv;
}

/* Roles of every op for the tensor-parallel degree M->t, in op order.
 * False when the model's shapes do not allow it (a label it would cut, or
 * a dimension a Reshape lands the cut on, that T does not divide). */
static bool classify(struct mega *M)
{
	const struct graph *g = M->g;
	memset(M->split, 0, (size_t)g->n_tensors);
	M->kv_rep = kv_replicas(M);
	for (int i = 0; i < g->n_ops; i++) {
		struct op_sig sig;
		M->role[i] = MEGA_FOLLOW;
		if (!graph_op_signature(g, i, &sig))
			continue;
		M->role[i] = op_role(M, i, &sig);
		int l = mp_label(M, i, &sig);
		if (M->role[i] == MEGA_FOLLOW && !carry(M, M->split, i, &sig, M->t))
			return false;
		if (l >= 0 && sig.size[l] % M->t)
			return false;
		if (M->role[i] == MEGA_COLUMN)
			mark_columns(M, i, &sig, l);
	}
	return true;
}

/* T: the largest degree whose groups stay inside a server (the fast tier,
 * plan_tp_in_server: a divisor of the server's device count, or any degree
 * when every device is one server's, as in one NVL72 rack) and that divides
 * the stage's devices and the shapes allow. Asked for exactly a degree that spans whole
 * servers (`exact`, a multiple of the server's devices that divides the
 * stage's), that degree when the shapes allow it: Megatron-LM runs such
 * configurations too (Narayanan et al. SC21, figure 13: TP 16 and 32 on
 * DGX A100s), its tensor-parallel groups then crossing the NICs. */
static void choose_degrees(struct mega *M, bool exact)
{
	int64_t dps = M->s->topo->devices_per_server;
	if (exact && M->t_max > dps && M->t_max % dps == 0 && M->n % M->t_max == 0) {
		M->t = M->t_max;
		if (classify(M)) {
			M->d = M->n / M->t;
			return;
		}
	}
	int64_t top = dps < M->n ? dps : M->n;
	if (top > M->t_max)
		top = M->t_max;
	for (M->t = top; M->t > 1; M->t--)
		if (plan_tp_in_server(dps, M->s->devices, M->t) && M->n % M->t == 0 && classify(M))
			break;
	if (M->t == 1)
		classify(M);
	M->d = M->n / M->t;
}

/* Which dimensions carry the batch: dimension 0 of the graph's first input,
 * then every kept label and Reshape the data-parallel degree divides. */
static void trace_batch(struct mega *M, const struct tensor *b)
{
	const struct graph *g = M->g;
	memset(M->batch, 0, (size_t)g->n_tensors);
	M->batch[b - g->tensors] = 1;
	/* Other inputs shaped as the first carry the batch alike (the tokens
	 * a multi-token prediction module reads ahead, models/generate.c). */
	for (int t = 0; t < g->n_tensors; t++)
		if (g->tensors[t].role == TENSOR_INPUT && g->tensors[t].rank == b->rank &&
		    !memcmp(g->tensors[t].dims, b->dims, (size_t)b->rank * sizeof(b->dims[0])))
			M->batch[t] = 1;
	for (int i = 0; i < g->n_ops; i++) {
		struct op_sig sig;
		if (graph_op_signature(g, i, &sig))
			carry(M, M->batch, i, &sig, M->d);
	}
}

/* --------------------------------------- Megatron: context parallelism */

/* A Reshape's landing of the data- and context-parallel cuts: per run of
 * merged dimensions ([B·s] <-> [B, s]), the cuts of its input dims major
 * first (D where a dim carries the batch, cp where it carries the
 * sequence), each output dim taking them until cut whole, as the layout
 * algebra's spill does; the dims the cp cut lands on carry the sequence. */
static void land_sequence(struct mega *M, int op)
{
	const struct op *o = &M->g->ops[op];
	const struct tensor *x = &M->g->tensors[o->in[0]], *y = &M->g->tensors[o->out[0]];
	int in0[GRAPH_MAX_RANK], in1[GRAPH_MAX_RANK], out0[GRAPH_MAX_RANK];
	int runs = layout_reshape_runs(x, y, in0, in1, out0);
	for (int r = 0; r < runs; r++) {
		int i0 = in0[r], i = in1[r], j0 = out0[r], j = r + 1 < runs ? out0[r + 1] : y->rank;
		int64_t size[2 * GRAPH_MAX_RANK];
		bool seqcut[2 * GRAPH_MAX_RANK];
		int n = 0;
		for (int d = i0; d < i; d++) {
			if ((M->batch[o->in[0]] >> d) & 1)
				size[n] = M->d, seqcut[n++] = false;
			if ((M->seqm[o->in[0]] >> d) & 1)
				size[n] = M->cp, seqcut[n++] = true;
		}
		int e = j0;
		int64_t have = 1;
		for (int k = 0; k < n; k++) {
			while (e < j && (y->dims[e] == 1 || have == y->dims[e]) && size[k] > 1) {
				e++;
				have = 1;
			}
			if (e == j || y->dims[e] % (have * size[k]))
				break;
			have *= size[k];
			if (seqcut[k])
				M->seqm[o->out[0]] |= (uint8_t)(1u << e);
		}
	}
}

/* Which dimensions carry the sequence: dimension 1 of the graph's first
 * input (the tokens [B, s] of a generated transformer), then, op by op,
 * the first input label that carries it (a query's sequence, not a key's:
 * the keys and values are gathered over the context-parallel group), and
 * a Reshape's landing. */
static void trace_seq(struct mega *M, const struct tensor *b)
{
	const struct graph *g = M->g;
	memset(M->seqm, 0, (size_t)g->n_tensors);
	M->seqm[b - g->tensors] = 2;
	for (int i = 0; i < g->n_ops; i++) {
		struct op_sig sig;
		if (!graph_op_signature(g, i, &sig))
			continue;
		if (sig.rule == SIG_RULE_RESHAPE) {
			land_sequence(M, i);
			continue;
		}
		int l = cut_label(M, M->seqm, &sig, i);
		for (int k = 0; l >= 0 && k < g->ops[i].n_out; k++)
			for (int d = 0; d < g->tensors[g->ops[i].out[k]].rank; d++)
				if (sig.out[k][d] == l)
					M->seqm[g->ops[i].out[k]] |= (uint8_t)(1u << d);
	}
}

/* Context parallelism needs one sequence per replica (the tokens B·s cut
 * D x cp ways land on whole sequences, then on pieces of each), a
 * sequence cp divides, and no experts (their slots are not cut by it). */
static bool cp_fits(const struct mega *M, const struct tensor *b, struct diag_list *diags)
{
	const struct scenario *s = M->s;
	int64_t seq = s->graph->gen ? s->graph->gen->seq : 0;
	const char *why = NULL;
	char buf[300];
	if (M->n % (M->t * M->cp)) {
		snprintf(buf, sizeof buf, "it must divide the %lld devices of a stage over tensor "
		         "parallel %lld", (long long)M->n, (long long)M->t);
		why = buf;
	} else if (!b || !s->graph->gen || seq < 1 || b->rank != 2 || b->dims[1] != seq) {
		why = "it cuts a generated transformer's sequence, and this model is not one";
	} else if (b->dims[0] != M->n / (M->t * M->cp)) {
		snprintf(buf, sizeof buf, "it needs one sequence per data-parallel replica per "
		         "micro-batch (the model's micro_batch %lld = the data-parallel degree), not %lld",
		         (long long)(M->n / (M->t * M->cp)), (long long)b->dims[0]);
		why = buf;
	} else if (seq % M->cp) {
		snprintf(buf, sizeof buf, "it must divide the sequence of %lld", (long long)seq);
		why = buf;
	} else if (s->graph->gen->experts > 0) {
		why = "a mixture of experts with context parallelism is not modelled yet";
	}
	if (why)
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "context parallelism %lld does not fit: %s",
		         (long long)M->cp, why);
	return !why;
}

/* The keys' and values' AllGathers over the CP groups, into the scores
 * and the context (input 1 of a batched MatMul of activations), run as
 * Megatron's ring: each of the CP - 1 blocks passed on while the block in
 * hand is computed. The ops' classes of alike change with them. */
static bool mark_rings(const struct mega *M, struct arena *a, struct plan *p)
{
	const struct graph *g = M->g;
	for (int e = 0; e < p->n_edges; e++) {
		struct plan_edge *x = &p->edges[e];
		const struct op *o = &g->ops[x->consumer];
		if (x->consumer_in == 1 && o->kind == OP_BATCHMATMUL && o->params == 0 &&
		    x->redist.n_steps == 1 && x->redist.steps[0].kind == STEP_ALLGATHER &&
		    x->redist.steps[0].groups.size == M->cp)
			x->ring = (int)M->cp;
	}
	return plan_find_alike(a, p);
}

/* Inside a transformer layer ("layers.N."): Megatron-Core's linear layers
 * there are Transformer Engine's; its output layer is a column-parallel
 * linear of its own, without the userbuffers. */
static bool in_layer(const struct graph *g, int op)
{
	return op >= 0 && graph_op_layer(&g->ops[op]) >= 0;
}

/* training.tp_comm_overlap (Megatron-LM's --tp-comm-overlap, Transformer
 * Engine's userbuffers): sequence parallelism's collectives over the
 * tensor-parallel groups of a layer run under the GEMMs next to them. The
 * AllGather of the tokens runs under the column-parallel MatMuls that read
 * them (the consumer, or those reading the consumer's output when the
 * gather lands on the norm before Q, K and V), the ReduceScatter completing
 * a row-parallel MatMul's partial sums under that MatMul; each as a ring of
 * T - 1 steps (the estimate and sim/lower.c price the shares). */
static bool mark_tp_overlap(const struct mega *M, struct arena *a, struct plan *p)
{
	const struct graph *g = M->g;
	for (int e = 0; e < p->n_edges; e++) {
		struct plan_edge *x = &p->edges[e];
		if (x->ring > 1 || x->redist.n_steps != 1 || x->redist.steps[0].groups.size != M->t)
			continue;
		enum step_kind k = x->redist.steps[0].kind;
		if (!in_layer(g, x->consumer))
			continue;
		if (k == STEP_REDUCESCATTER && x->producer >= 0 && M->role[x->producer] == MEGA_ROW) {
			x->hide[x->n_hide++] = x->producer;
		} else if (k == STEP_ALLGATHER && M->role[x->consumer] == MEGA_COLUMN) {
			x->hide[x->n_hide++] = x->consumer;
		} else if (k == STEP_ALLGATHER && g->ops[x->consumer].n_out == 1) {
			int out = g->ops[x->consumer].out[0];
			for (int i = x->consumer + 1; i < g->n_ops && x->n_hide < 3; i++) {
				const struct op *o = &g->ops[i];
				if (M->role[i] != MEGA_COLUMN || !in_layer(g, i))
					continue;
				for (int j = 0; j < o->n_in; j++)
					if (o->in[j] == out) {
						x->hide[x->n_hide++] = i;
						break;
					}
			}
		}
	}
	return plan_find_alike(a, p);
}

/* --------------------------- Megatron: T above the key-value heads */

/* Does an input or output of the op carry the T cut on a dimension T does
 * not divide (a key-value head dimension, its heads fewer than T)? */
static bool on_kv_heads(const struct mega *M, int op)
{
	const struct op *o = &M->g->ops[op];
	for (int k = 0; k < o->n_in + o->n_out; k++) {
		int t = k < o->n_in ? o->in[k] : o->out[k - o->n_in];
		for (int d = 0; d < M->g->tensors[t].rank; d++)
			if ((M->split[t] >> d & 1) && M->g->tensors[t].dims[d] % M->t)
				return true;
	}
	return false;
}

/* The dimension of a Reshape's other side that dimension d lands on: the
 * major dimension (of size > 1) of the run of merged dimensions holding it. */
static int reshape_major(const struct tensor *from, const struct tensor *to, int d, bool forward)
{
	int in0[GRAPH_MAX_RANK], in1[GRAPH_MAX_RANK], out0[GRAPH_MAX_RANK];
	const struct tensor *x = forward ? from : to, *y = forward ? to : from;
	int runs = layout_reshape_runs(x, y, in0, in1, out0);
	for (int r = 0; r < runs; r++) {
		int i1 = in1[r], o1 = r + 1 < runs ? out0[r + 1] : y->rank;
		int lo = forward ? in0[r] : out0[r], hi = forward ? i1 : o1;
		if (d < lo || d >= hi)
			continue;
		int tlo = forward ? out0[r] : in0[r], thi = forward ? o1 : i1;
		for (int e = tlo; e < thi; e++)
			if (to->dims[e] > 1)
				return e;
		return tlo;
	}
	return -1;
}

/* The rows' mark through a view op (Reshape, Transpose) forward (input 0
 * to output) or backward. */
static void view_rows(struct mega *M, int op, bool forward)
{
	const struct op *o = &M->g->ops[op];
	const struct tensor *ts = M->g->tensors;
	int from = forward ? o->in[0] : o->out[0], to = forward ? o->out[0] : o->in[0];
	for (int d = 0; d < ts[from].rank; d++) {
		if (!(M->rows[from] >> d & 1))
			continue;
		int e = -1;
		if (o->kind == OP_TRANSPOSE) {
			for (int k = 0; k < ts[o->out[0]].rank; k++)
				if (forward ? o->attrs.perm[k] == d : k == d)
					e = forward ? k : (int)o->attrs.perm[k];
		} else {
			e = reshape_major(&ts[from], &ts[to], d, forward);
		}
		if (e >= 0)
			M->rows[to] |= (uint8_t)(1u << e);
	}
}

/* With T above the key-value heads (kv_rep > 1), as Megatron-Core runs it
 * (attention.py, get_query_key_value_tensors): Q, K and V stay column
 * parallel over T, their weights and GEMMs a T-th each; their outputs are
 * all-gathered over the T ranks (the Reshapes after them read them whole:
 * MEGA_KV_GATHER) and each rank takes its head's K and V and its T-th of
 * the queries; the attention core (the batched MatMuls of two activations,
 * the Softmax and Dropout between them: MEGA_KV_CORE) runs over (dp, kv,
 * rep), the key-value heads over kv and the grouped queries' rows over
 * rep, each rank a T-th of the scores. The graph's grouped rows are
 * sequence major ([s, g], for context parallelism), so rep cuts the rows
 * by sequence where Megatron-Core cuts them by head: the same FLOPs and
 * bytes; the Reshape merging the heads into the row-parallel output
 * projection's columns (MEGA_KV_MERGE, over (kv, rep)) then takes the
 * context by an AllToAll inside each head's ranks. K's and V's views stay
 * whole over rep. */
static void mark_kv(struct mega *M)
{
	const struct graph *g = M->g;
	if (M->kv_rep <= 1)
		return;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (M->role[i] != MEGA_FOLLOW || !on_kv_heads(M, i))
			continue;
		int pr = g->tensors[o->in[0]].producer;
		if (o->kind == OP_RESHAPE && pr >= 0 && M->role[pr] == MEGA_COLUMN) {
			M->role[i] = MEGA_KV_GATHER;
		} else if ((o->kind == OP_BATCHMATMUL && o->params == 0) || o->kind == OP_SOFTMAX ||
		           o->kind == OP_DROPOUT) {
			M->role[i] = MEGA_KV_CORE;
			int r = g->tensors[o->in[0]].rank;
			M->rows[o->in[0]] |= (uint8_t)(1u << (r - 2));
			M->rows[o->out[0]] |= (uint8_t)(1u << (r - 2));
		}
	}
	/* the views between: backward from the core to the gathered Q, K and
	 * V, forward from it to the merge into the output projection */
	for (int i = g->n_ops - 1; i >= 0; i--) {
		const struct op *o = &g->ops[i];
		if (M->role[i] == MEGA_FOLLOW && on_kv_heads(M, i) &&
		    (o->kind == OP_RESHAPE || o->kind == OP_TRANSPOSE) && M->rows[o->out[0]])
			view_rows(M, i, false);
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		if (M->role[i] != MEGA_FOLLOW || !on_kv_heads(M, i) ||
		    (o->kind != OP_RESHAPE && o->kind != OP_TRANSPOSE))
			continue;
		bool merge = false;
		for (int j = i + 1; j < g->n_ops; j++)
			for (int k = 0; k < g->ops[j].n_in; k++)
				merge |= g->ops[j].in[k] == o->out[0] && M->role[j] == MEGA_ROW;
		if (merge) {
			M->role[i] = MEGA_KV_MERGE;
			continue;
		}
		if (M->rows[o->in[0]])
			view_rows(M, i, true);
		M->role[i] = MEGA_KV_CORE; /* K's and V's views too: whole over rep */
	}
}

/* A core op's shard() over (dp, kv, rep): the batch label on dp, the
 * key-value heads' (the label carrying the T cut) on kv, the rows (the
 * dimensions M->rows marks) on rep; the merge's, the dimension after the
 * heads' on rep (the cut spills onto the grouped queries). */
static void map_kv_core(const struct mega *M, int op, const struct op_sig *sig,
                        struct shard_config *c)
{
	const struct graph *g = M->g;
	const struct op *o = &g->ops[op];
	int dp = cut_label(M, M->batch, sig, op), kv = cut_label(M, M->split, sig, op);
	c->n_dev_axes = 3;
	c->device_matrix[0] = M->d;
	c->device_matrix[1] = M->t / M->kv_rep;
	c->device_matrix[2] = M->kv_rep;
	c->axis_names[0] = "dp";
	c->axis_names[1] = "kv";
	c->axis_names[2] = "rep";
	for (int i = 0; i < o->n_in; i++) {
		const struct tensor *x = &g->tensors[o->in[i]];
		struct shard_tensor_map *m = &c->in_maps[i];
		memset(m, 0, sizeof(*m));
		m->rank = x->rank;
		for (int d = 0; d < m->rank; d++) {
			int l = sig->in[i][d], axis = -1;
			bool rows = M->role[op] == MEGA_KV_MERGE
			                    ? d > 0 && (M->split[o->in[i]] >> (d - 1) & 1)
			                    : (M->rows[o->in[i]] >> d & 1);
			if (rows)
				axis = 2;
			else if (l >= 0 && l == kv)
				axis = 1;
			else if (l >= 0 && l == dp)
				axis = 0;
			if (axis >= 0) {
				m->n_axes[d] = 1;
				m->axes[d][0] = axis;
			}
		}
	}
}

/* ------------------------------------- Megatron: sequence parallelism */

/* Does the op read what a row-parallel MatMul or a sequence-parallel op
 * produced? */
static bool after_row(const struct mega *M, int op)
{
	const struct op *o = &M->g->ops[op];
	for (int i = 0; i < o->n_in; i++) {
		int p = M->g->tensors[o->in[i]].producer;
		if (p >= 0 && (M->role[p] == MEGA_ROW || M->seq[p]))
			return true;
	}
	return false;
}

/* The ops between the tensor-parallel regions that cut their batch
 * dimension over mp too. Forward, in op order: a data-parallel op reading
 * a row-parallel MatMul's output or a sequence-parallel op's, when D x T
 * divides its batch dimension (else a warning and no SP for it). Then
 * backward: an op whose outputs feed two or more ops that read them whole
 * over T (q, k and v; LLaMA's gate and up) stays whole, so that its input
 * is gathered once rather than its output once per reader: a plan has one
 * redistribution per edge, none shared. */
static bool mark_sequence(struct mega *M, struct diag_list *diags)
{
	const struct graph *g = M->g;
	int n_odd = 0, odd = -1;
	int64_t odd_size = 0;
	for (int i = 0; i < g->n_ops; i++) {
		struct op_sig sig;
		/* folded, the router, the dispatch and the combine take the
		 * sequence shards (Megatron-Core's token dispatcher reads them) */
		bool tokens = M->fold && M->moe[i] == MOE_TOKENS;
		if (M->role[i] != MEGA_DATA || (M->moe[i] && !tokens) || (!tokens && !after_row(M, i)) ||
		    !graph_op_signature(g, i, &sig))
			continue;
		int dp = cut_label(M, M->batch, &sig, i);
		if (dp < 0)
			continue;
		if (sig.size[dp] % M->n) {
			if (!n_odd++) {
				odd = i;
				odd_size = sig.size[dp];
			}
			continue;
		}
		M->seq[i] = true;
	}
	if (n_odd) {
		char more[64] = "";
		if (n_odd > 1)
			snprintf(more, sizeof more, " (and %d more ops like it)", n_odd - 1);
		diag_add(diags, DIAG_WARNING, M->s->file, 0, NULL,
		         "sequence parallelism cuts the batch dimension (B x s tokens in a transformer) "
		         "of the ops after a row-parallel MatMul %lld ways (data parallel %lld x tensor "
		         "parallel %lld), but op \"%s\" has %lld there%s; those ops, and the ops after "
		         "them up to the next column-parallel MatMul, keep their activations replicated "
		         "over the tensor-parallel group (make that dimension a multiple of %lld)",
		         (long long)M->n, (long long)M->d, (long long)M->t, g->ops[odd].name,
		         (long long)odd_size, more, (long long)M->n);
	}
	int *whole = arena_calloc(M->a, (size_t)g->n_tensors + 1, sizeof(int));
	if (!whole)
		return false;
	for (int i = g->n_ops - 1; i >= 0; i--) {
		const struct op *o = &g->ops[i];
		int readers = 0;
		for (int k = 0; k < o->n_out; k++)
			readers += whole[o->out[k]];
		if (readers > 1)
			M->seq[i] = false;
		for (int j = 0; j < o->n_in && !M->seq[i]; j++)
			whole[o->in[j]]++;
	}
	return true;
}

/* ------------------------------------------ Megatron: synthetic shards */

/* Input i of an op in the Layout form: the dimensions labelled `dp` on
 * axis 0, those labelled `mp` on axis 1; with `seq`, those labelled `dp`
 * on both, axis 0 major (sequence parallelism). */
static void map_input(struct shard_tensor_map *m, const struct op_sig *sig, int i, int rank,
                      int dp, int mp, bool seq)
{
	memset(m, 0, sizeof(*m));
	m->rank = rank;
	for (int d = 0; d < rank; d++) {
		int l = sig->in[i][d];
		if (l >= 0 && (l == dp || l == mp)) {
			m->n_axes[d] = 1;
			m->axes[d][0] = l == dp ? 0 : 1;
		}
		if (l >= 0 && l == dp && seq) {
			m->n_axes[d] = 2;
			m->axes[d][1] = 1;
		}
	}
}

/* Input i of an expert op over (dp/ep, ep, mp): the batch label (the
 * slots' C) on axis 0, the expert label on axis 1, the mp label on 2. */
static void map_expert(struct shard_tensor_map *m, const struct op_sig *sig, int i, int rank,
                       int dp, int ep, int mp)
{
	memset(m, 0, sizeof(*m));
	m->rank = rank;
	for (int d = 0; d < rank; d++) {
		int l = sig->in[i][d];
		int axis = l < 0 ? -1 : l == dp ? 0 : l == ep ? 1 : l == mp ? 2 : -1;
		if (axis >= 0) {
			m->n_axes[d] = 1;
			m->axes[d][0] = axis;
		}
	}
}

/* Input i over (dp, cp, mp): the batch label on dp, the sequence label
 * on cp (both, dp major, on the merged tokens B·s), the mp label on mp;
 * with `seq` (sequence parallelism) the tokens on all three. */
static void map_cp(struct shard_tensor_map *m, const struct op_sig *sig, int i, int rank, int dp,
                   int sq, int mp, bool seq)
{
	memset(m, 0, sizeof(*m));
	m->rank = rank;
	for (int d = 0; d < rank; d++) {
		int l = sig->in[i][d];
		if (l < 0)
			continue;
		if (l == dp)
			m->axes[d][m->n_axes[d]++] = 0;
		if (l == sq)
			m->axes[d][m->n_axes[d]++] = 1;
		if (l == mp || (seq && l == dp && l == sq))
			m->axes[d][m->n_axes[d]++] = 2;
	}
}

static bool synth_shard(const struct mega *M, int op, struct shard_config *c)
{
	const struct graph *g = M->g;
	const struct op *o = &g->ops[op];
	struct op_sig sig;
	if (!graph_op_signature(g, op, &sig))
		return false;
	bool expert = M->moe[op] == MOE_EXPERT;
	int mp = mp_label(M, op, &sig), dp = cut_label(M, M->batch, &sig, op);
	if (expert && mp < 0)
		mp = cut_label(M, M->split, &sig, op);
	memset(c, 0, sizeof(*c));
	c->op_name = o->name;
	c->op = op;
	c->file = M->s->file;
	c->path = MEGA_PATH;
	c->form = SHARD_LAYOUT;
	c->n_in = o->n_in;
	c->in_maps = arena_calloc(M->a, (size_t)o->n_in, sizeof(*c->in_maps));
	if (!c->in_maps)
		return false;
	if (M->role[op] == MEGA_KV_CORE || M->role[op] == MEGA_KV_MERGE) {
		map_kv_core(M, op, &sig, c);
		return true;
	}
	if (expert) {
		/* folded: the experts over (d t / ep, ep), whole (ETP 1), the EP
		 * groups consecutive ranks, a tensor-parallel group inside one */
		c->n_dev_axes = 3;
		c->device_matrix[0] = M->fold ? M->d * M->t / M->ep : M->d / M->ep;
		c->device_matrix[1] = M->ep;
		c->device_matrix[2] = M->fold ? 1 : M->t;
		c->axis_names[0] = "dp";
		c->axis_names[1] = "ep";
		c->axis_names[2] = "mp";
		int e = sig.in[0][0]; /* every expert tensor is [E, C, ...] */
		for (int i = 0; i < o->n_in; i++)
			map_expert(&c->in_maps[i], &sig, i, g->tensors[o->in[i]].rank, dp, e,
			           M->fold || mp == e || mp == dp ? -1 : mp);
		return true;
	}
	if (M->cp > 1) {
		if (mp < 0)
			mp = cut_label(M, M->split, &sig, op);
		int sq = cut_label(M, M->seqm, &sig, op);
		c->n_dev_axes = 3;
		c->device_matrix[0] = M->d;
		c->device_matrix[1] = M->cp;
		c->device_matrix[2] = M->t;
		c->axis_names[0] = "dp";
		c->axis_names[1] = "cp";
		c->axis_names[2] = "mp";
		for (int i = 0; i < o->n_in; i++)
			map_cp(&c->in_maps[i], &sig, i, g->tensors[o->in[i]].rank, dp, sq,
			       mp == dp || mp == sq ? -1 : mp, M->seq[op]);
		return true;
	}
	c->n_dev_axes = 2;
	c->device_matrix[0] = M->d;
	c->device_matrix[1] = M->t;
	c->axis_names[0] = "dp";
	c->axis_names[1] = "mp";
	for (int i = 0; i < o->n_in; i++)
		map_input(&c->in_maps[i], &sig, i, g->tensors[o->in[i]].rank, dp == mp ? -1 : dp, mp,
		          M->seq[op]);
	return true;
}

/* Expert parallelism's layout: EP divides the data-parallel degree D (each
 * tensor-parallel rank of an EP group sends its own copies of its
 * replica's tokens), or, above D, Megatron-Core's parallel folding
 * (Liu et al., arXiv 2504.14960, "MoE Parallel Folding"; expert_tensor_parallel_size 1):
 * EP a multiple of T dividing D x T, the experts whole over groups of EP
 * consecutive ranks, every rank dispatching its own sequence shard, which
 * sequence parallelism gives it (Megatron-Core's ModelParallelConfig:
 * "When using expert parallelism and tensor parallelism for training,
 * sequence parallelism must be used"). Sets M->fold. */
static bool experts_fit(struct mega *M, struct diag_list *diags)
{
	const struct scenario *s = M->s;
	M->fold = M->ep > M->d;
	if (plan_ep_fits(M->ep, M->d, M->t, s->training.sequence_parallel))
		return true;
	/* which of the rules it breaks */
	if (!M->fold) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
		         "expert parallelism %lld must divide the data-parallel degree, %lld here "
		         "(%lld devices a stage over tensor parallel %lld): the experts are shared out "
		         "among the ranks of a data-parallel group, or, above it, among its "
		         "tensor-parallel ranks too", (long long)M->ep, (long long)M->d,
		         (long long)M->n, (long long)M->t);
		return false;
	}
	if (M->ep % M->t || (M->d * M->t) % M->ep) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
		         "expert parallelism %lld above the data-parallel degree %lld folds over the "
		         "tensor-parallel ranks (Megatron-Core's parallel folding, experts whole): it "
		         "must be a multiple of tensor parallel %lld dividing the %lld devices of a "
		         "stage", (long long)M->ep, (long long)M->d, (long long)M->t,
		         (long long)(M->d * M->t));
		return false;
	}
	diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
	         "expert parallelism %lld above the data-parallel degree %lld folds over the "
	         "tensor-parallel ranks, each dispatching its own sequence shard: set "
	         "training.sequence_parallel true (Megatron-Core wants sequence parallelism "
	         "with expert and tensor parallelism)", (long long)M->ep, (long long)M->d);
	return false;
}

/* D must split the batch: say what to change when it does not. */
static bool batch_splits(const struct mega *M, const struct tensor *b, struct diag_list *diags)
{
	if (b->dims[0] % M->d == 0)
		return true;
	if (M->t_max == 1) {
		diag_add(diags, DIAG_ERROR, M->s->file, 0, NULL,
		         "data parallel over %lld devices must split the batch, but input \"%s\" has "
		         "batch %lld; set the model's batch (a generator's micro_batch) to a multiple of "
		         "%lld, or use fewer devices", (long long)M->n, b->name, (long long)b->dims[0],
		         (long long)M->n);
		return false;
	}
	diag_add(diags, DIAG_ERROR, M->s->file, 0, NULL,
	         "megatron on %lld devices: tensor parallel %lld inside a server leaves data parallel "
	         "of degree %lld across servers, which must split the batch, but input \"%s\" has "
	         "batch %lld; set the model's batch (a generator's micro_batch) to a multiple of %lld, "
	         "or use fewer devices", (long long)M->n, (long long)M->t, (long long)M->d, b->name,
	         (long long)b->dims[0], (long long)M->d);
	return false;
}

/* Does the rule decide the op (else propagation does)? */
static bool decided(const struct mega *M, int op)
{
	return M->role[op] != MEGA_FOLLOW || M->moe[op] == MOE_EXPERT || M->cp > 1;
}

/* The synthetic shard() of every op the rule decides, in op order. */
static struct shard_config *synth_shards(const struct mega *M, int *n)
{
	*n = 0;
	for (int i = 0; i < M->g->n_ops; i++)
		*n += decided(M, i);
	struct shard_config *shards = arena_calloc(M->a, (size_t)*n + 1, sizeof(*shards));
	if (!shards)
		return NULL;
	for (int i = 0, k = 0; i < M->g->n_ops; i++)
		if (decided(M, i) && !synth_shard(M, i, &shards[k++]))
			return NULL;
	return shards;
}

/* Megatron's rule with tensor parallelism of at most t_max (1: every op
 * data parallel along the batch, the model replicated); exactly t_max when
 * `exact` (the plan search asks for each degree in turn), else NULL. */
static struct plan *megatron_plan(struct arena *a, const struct scenario *s,
                                  const struct plan_options *o, int64_t t_max, bool exact,
                                  const char *planner, struct diag_list *diags)
{
	const struct graph *g = s->graph;
	struct mega M = {.a = a, .s = s, .g = g, .n = s->devices / s->training.pipeline_stages,
	                 .t_max = t_max};
	const struct tensor *b = batch_input(g);
	M.split = arena_calloc(a, (size_t)g->n_tensors + 1, 1);
	M.batch = arena_calloc(a, (size_t)g->n_tensors + 1, 1);
	M.role = arena_calloc(a, (size_t)g->n_ops + 1, sizeof(*M.role));
	M.seq = arena_calloc(a, (size_t)g->n_ops + 1, sizeof(*M.seq));
	M.moe = arena_calloc(a, (size_t)g->n_ops + 1, 1);
	M.seqm = arena_calloc(a, (size_t)g->n_tensors + 1, 1);
	M.rows = arena_calloc(a, (size_t)g->n_tensors + 1, 1);
	if (!M.split || !M.batch || !M.role || !M.seq || !M.moe || !M.seqm || !M.rows)
		return NULL;
	M.cp = s->training.context_parallel > 1 ? s->training.context_parallel : 1;
	M.ep = s->training.expert_parallel > 1 ? s->training.expert_parallel : 1;
	if (t_max == 1 && !exact && (M.cp > 1 || M.ep > 1)) {
		/* the data-parallel baseline replicates the model whole */
		diag_add(diags, DIAG_NOTE, s->file, 0, NULL,
		         "the %s baseline replicates the model: training.context_parallel and "
		         "training.expert_parallel apply to the megatron planners", planner);
		M.cp = M.ep = 1;
	}
	mark_moe(&M);
	if (!exact)
		note_ignored(s, planner, diags);
	choose_degrees(&M, exact);
	/* A degree asked for: the model's shape first, as Megatron-LM checks
	 * it, in the words of the rule it breaks. */
	struct search_config asked = {.tp = t_max, .pp = 1, .dp = 1, .micro_batch = 1,
	                              .micro_batches = 1, .schedule = SCHED_1F1B};
	enum search_rule rule = exact && g->gen ? plan_search_rule(g, 1, &asked) : SEARCH_RULE_NONE;
	if (rule == SEARCH_RULE_HEADS_TP || rule == SEARCH_RULE_KV_HEADS_TP ||
	    rule == SEARCH_RULE_FFN_TP) {
		char why[160];
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "tensor parallel %lld does not fit: %s",
		         (long long)t_max, plan_search_rule_text(why, sizeof why, rule, g, 1, &asked));
		return NULL;
	}
	if (exact && M.t != t_max) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
		         "tensor parallel %lld does not fit: its groups must each stay inside a server "
		         "of %lld devices (dividing it, or all the devices in one) or span whole "
		         "servers, divide the %lld devices of a stage, and the layers' heads and "
		         "columns", (long long)t_max, (long long)s->topo->devices_per_server,
		         (long long)M.n);
		return NULL;
	}
	if (M.kv_rep > 1 && M.cp > 1) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
		         "tensor parallel %lld above the model's %lld key-value heads with context "
		         "parallelism %lld is not modelled: use a tensor-parallel degree that divides "
		         "the key-value heads, or no context parallelism", (long long)M.t,
		         (long long)(M.t / M.kv_rep), (long long)M.cp);
		return NULL;
	}
	mark_kv(&M);
	if (M.cp > 1) {
		if (!cp_fits(&M, b, diags))
			return NULL;
		M.d = M.n / (M.t * M.cp);
	}
	if (b && !batch_splits(&M, b, diags))
		return NULL;
	if (!experts_fit(&M, diags))
		return NULL;
	if (b)
		trace_batch(&M, b);
	if (b && M.cp > 1)
		trace_seq(&M, b);
	bool seq = s->training.sequence_parallel && M.t > 1;
	if (s->training.sequence_parallel && !seq)
		diag_add(diags, DIAG_NOTE, s->file, 0, NULL,
		         "the %s baseline has no tensor parallelism here (degree 1): "
		         "training.sequence_parallel changes nothing", planner);
	if (seq && !mark_sequence(&M, diags))
		return NULL;
	/* The row-parallel partial sums reach a sequence-parallel op as a
	 * ReduceScatter only when the edge completes them: fused mode. */
	enum redist_mode mode = o->mode;
	for (int i = 0; i < g->n_ops; i++)
		if (M.seq[i])
			mode = REDIST_FUSED;
	int n;
	struct shard_config *shards = synth_shards(&M, &n);
	struct scenario *mine = shards ? with_shards(a, s, shards, n) : NULL;
	struct plan *p = mine ? plan_propagate(a, mine, mode, diags) : NULL;
	if (!p)
		return NULL;
	p->scenario = s;
	/* Megatron-LM gives each pipeline stage (each virtual chunk) the same
	 * number of whole layers, the embedding to the first and the head to
	 * the last (megatron/model/transformer.py, num_layers / PP). */
	p->whole_layers = strcmp(planner, "megatron") == 0;
	if (M.cp > 1 && !mark_rings(&M, a, p))
		return NULL;
	if (seq && s->training.tp_comm_overlap && M.t > s->topo->devices_per_server) {
		diag_add(diags, DIAG_NOTE, s->file, 0, NULL,
		         "training.tp_comm_overlap: Transformer Engine's userbuffers overlap a "
		         "tensor-parallel group inside one server (NVLink); tensor parallel %lld spans "
		         "servers of %d devices, so its communication is not overlapped",
		         (long long)M.t, s->topo->devices_per_server);
	} else if (seq && s->training.tp_comm_overlap && !mark_tp_overlap(&M, a, p)) {
		return NULL;
	}
	/* Without tensor parallelism every op follows the batch rule. */
	for (int i = 0; i < g->n_ops; i++)
		if (decided(&M, i) || t_max == 1)
			p->ops[i].source = STRATEGY_PLANNED;
	return p;
}

struct plan *plan_megatron(struct arena *a, const struct scenario *s,
                           const struct plan_options *o, struct diag_list *diags)
{
	if (s->training.tensor_parallel > 0) {
		note_ignored(s, "megatron", diags);
		return megatron_plan(a, s, o, s->training.tensor_parallel, true, "megatron", diags);
	}
	return megatron_plan(a, s, o, INT64_MAX, false, "megatron", diags);
}

struct plan *plan_data_parallel(struct arena *a, const struct scenario *s,
                                const struct plan_options *o, struct diag_list *diags)
{
	return megatron_plan(a, s, o, 1, false, "data-parallel", diags);
}

struct plan *plan_megatron_degree(struct arena *a, const struct scenario *s,
                                  const struct plan_options *o, int64_t tp,
                                  struct diag_list *diags)
{
	return megatron_plan(a, s, o, tp, true, "megatron", diags);
}
