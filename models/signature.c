/* signature.c — the dimension signature of every op kind (docs/planner.md,
 * "Strategies and distributed operators"): each tensor dimension carries a label, einsum-
 * like, and each label a size and a role. MatMul is mk,kn->mn with k
 * summed; element-wise ops map every dimension to itself; a broadcast
 * dimension of size 1 carries no label (-1) and must stay whole.
 *
 * Labels are numbered in the order this file creates them; each gets a
 * letter for reports, the one the op's usual notation suggests (m, k, n
 * for MatMul, b for batch dimensions) or else the first free one from
 * 'a'. Units: sizes are element counts (int64_t). No hot path: the planner
 * asks once per op and candidate strategy.
 */
#include <stdio.h>
#include <string.h>

#include "models-int.h"

/* Marks the entries of in[] and out[] past a tensor's rank. */

/* Builds one signature; `ok` turns false when a limit is exceeded. */
struct sig_builder {
	const struct graph *g;
	const struct op *op;
	struct op_sig *s;
	bool ok;
};

static const struct tensor *in_t(const struct sig_builder *b, int i)
{
	return &b->g->tensors[b->op->in[i]];
}

static const struct tensor *out_t(const struct sig_builder *b, int k)
{
	return &b->g->tensors[b->op->out[k]];
}

/* A new label; `hint` is the preferred letter (0: the first free one). */
static int8_t label(struct sig_builder *b, int64_t size, enum sig_role role, char hint)
{
	struct op_sig *s = b->s;
	if (s->n_labels >= SIG_MAX_LABELS) {
		b->ok = false;
		return -1;
	}
	int l = s->n_labels++;
	s->size[l] = size;
	s->role[l] = role;
	char c = hint ? hint : 'a';
	for (int tries = 0; tries < 26; tries++) {
		bool used = false;
		for (int j = 0; j < l; j++)
			used |= s->name[j] == c;
		if (!used)
			break;
		c = c == 'z' ? 'a' : (char)(c + 1);
	}
	s->name[l] = c;
	return (int8_t)l;
}

/* Input i (or output k) takes a fresh KEEP label per dimension. */
static void fresh_in(struct sig_builder *b, int i)
{
	const struct tensor *t = in_t(b, i);
	for (int d = 0; d < t->rank; d++)
		b->s->in[i][d] = label(b, t->dims[d], SIG_KEEP, 0);
}

/* Output k carries the labels of input 0, dimension by dimension. */
static void same_as_in0(struct sig_builder *b, int k)
{
	for (int d = 0; d < out_t(b, k)->rank; d++)
		b->s->out[k][d] = b->s->in[0][d];
}

static int norm_axis(int axis, int rank)
{
	return axis < 0 ? axis + rank : axis;
}

/* ------------------------------------------------------------- per kind */

/* MatMul mk,kn->mn (km with transpose_a, nk with transpose_b);
 * BatchMatMul with leading batch labels shared by all three tensors. */
static void sig_matmul(struct sig_builder *b)
{
	const struct tensor *x = in_t(b, 0), *w = in_t(b, 1);
	int r = x->rank;
	struct op_sig *s = b->s;
	for (int d = 0; d < r - 2; d++)
		s->in[0][d] = s->in[1][d] = s->out[0][d] = label(b, x->dims[d], SIG_KEEP, 'b');
	bool ta = b->op->attrs.transpose_a, tb = b->op->attrs.transpose_b;
	int8_t m = label(b, x->dims[r - (ta ? 1 : 2)], SIG_KEEP, 'm');
	int8_t k = label(b, x->dims[r - (ta ? 2 : 1)], SIG_SUM, 'k');
	int8_t n = label(b, w->dims[r - (tb ? 2 : 1)], SIG_KEEP, 'n');
	s->in[0][r - 2] = ta ? k : m;
	s->in[0][r - 1] = ta ? m : k;
	s->in[1][r - 2] = tb ? n : k;
	s->in[1][r - 1] = tb ? k : n;
	s->out[0][r - 2] = m;
	s->out[0][r - 1] = n;
}

/* Add, Sub, Mul: numpy broadcasting, right-aligned. An input dimension
 * equal to the output's shares its label; a 1 stretched to more is -1. */
static void sig_broadcast(struct sig_builder *b)
{
	const struct tensor *y = out_t(b, 0);
	for (int d = 0; d < y->rank; d++)
		b->s->out[0][d] = label(b, y->dims[d], SIG_KEEP, 0);
	for (int i = 0; i < b->op->n_in; i++) {
		const struct tensor *t = in_t(b, i);
		for (int d = 0; d < t->rank; d++) {
			int od = y->rank - t->rank + d;
			b->s->in[i][d] = t->dims[d] == y->dims[od] ? b->s->out[0][od] : -1;
		}
	}
}

/* BiasAdd (...,n) + (n): the bias carries the last label. */
static void sig_biasadd(struct sig_builder *b)
{
	const struct tensor *x = in_t(b, 0);
	fresh_in(b, 0);
	same_as_in0(b, 0);
	b->s->in[1][0] = b->s->in[0][x->rank - 1];
}

/* ReLU, GeLU, SiLU, Dropout, Cast. */
static void sig_identity(struct sig_builder *b)
{
	fresh_in(b, 0);
	same_as_in0(b, 0);
}

/* Softmax: identity, the normalised axis whole. */
static void sig_softmax(struct sig_builder *b)
{
	sig_identity(b);
	int ax = norm_axis(b->op->attrs.axis, in_t(b, 0)->rank);
	b->s->role[b->s->in[0][ax]] = SIG_WHOLE;
}

/* LayerNorm(x, gamma, beta), RMSNorm(x, gamma): axes axis..end whole;
 * gamma and beta carry those labels. */
static void sig_norm(struct sig_builder *b)
{
	sig_identity(b);
	int r = in_t(b, 0)->rank, ax = norm_axis(b->op->attrs.axis, r);
	for (int d = ax; d < r; d++) {
		b->s->role[b->s->in[0][d]] = SIG_WHOLE;
		for (int i = 1; i < b->op->n_in; i++)
			b->s->in[i][d - ax] = b->s->in[0][d];
	}
}

/* Reshape: labels do not carry through; the planner's rule decides. */
static void sig_reshape(struct sig_builder *b)
{
	fresh_in(b, 0);
	const struct tensor *y = out_t(b, 0);
	for (int d = 0; d < y->rank; d++)
		b->s->out[0][d] = label(b, y->dims[d], SIG_KEEP, 0);
	b->s->rule = SIG_RULE_RESHAPE;
}

/* Transpose: out[d] = in[perm[d]]. */
static void sig_transpose(struct sig_builder *b)
{
	fresh_in(b, 0);
	for (int d = 0; d < out_t(b, 0)->rank; d++)
		b->s->out[0][d] = b->s->in[0][b->op->attrs.perm[d]];
}

/* ReduceSum, ReduceMean: reduced axes summed away (a kept dimension of
 * size 1 carries no label). No axes: all of them. */
static void sig_reduce(struct sig_builder *b)
{
	const struct op_attrs *at = &b->op->attrs;
	const struct tensor *x = in_t(b, 0);
	bool red[GRAPH_MAX_RANK] = {false};
	for (int d = 0; d < x->rank; d++)
		red[d] = at->n_axes == 0;
	for (int i = 0; i < at->n_axes; i++)
		red[norm_axis(at->axes[i], x->rank)] = true;
	int o = 0;
	for (int d = 0; d < x->rank; d++) {
		b->s->in[0][d] = label(b, x->dims[d], red[d] ? SIG_SUM : SIG_KEEP, 0);
		if (!red[d])
			b->s->out[0][o++] = b->s->in[0][d];
		else if (at->keep_dims)
			b->s->out[0][o++] = -1;
	}
}

/* Gather(table [V,h...], indices [i...]) -> [i..., h...]: a table cut on
 * V gives partial lookups that sum to the whole (seed 003). */
static void sig_gather(struct sig_builder *b)
{
	const struct tensor *t = in_t(b, 0), *ix = in_t(b, 1);
	struct op_sig *s = b->s;
	s->in[0][0] = label(b, t->dims[0], SIG_SUM, 'v');
	for (int d = 1; d < t->rank; d++)
		s->in[0][d] = label(b, t->dims[d], SIG_KEEP, 0);
	fresh_in(b, 1);
	for (int d = 0; d < ix->rank; d++)
		s->out[0][d] = s->in[1][d];
	for (int d = 1; d < t->rank; d++)
		s->out[0][ix->rank + d - 1] = s->in[0][d];
}

/* MoEDispatch: tokens (t, h) and index (e, c) -> slots (e, c, h), with c
 * labelled t: the dispatch is token-local, so the slots' C is cut exactly
 * as the tokens are (the sizes differ: C slots per expert, T tokens). */
static void sig_moe_dispatch(struct sig_builder *b)
{
	struct op_sig *s = b->s;
	int8_t t = label(b, in_t(b, 0)->dims[0], SIG_KEEP, 't');
	int8_t h = label(b, in_t(b, 0)->dims[1], SIG_KEEP, 'h');
	int8_t e = label(b, in_t(b, 1)->dims[0], SIG_KEEP, 'e');
	s->in[0][0] = t, s->in[0][1] = h;
	s->in[1][0] = e, s->in[1][1] = t;
	s->out[0][0] = e, s->out[0][1] = t, s->out[0][2] = h;
}

/* MoECombine: slots (e, c, h), index (t, k), probabilities (t, e) -> (t, h),
 * c labelled t as in the dispatch; e and k are summed (a rank holding some
 * experts' slots adds their share). */
static void sig_moe_combine(struct sig_builder *b)
{
	struct op_sig *s = b->s;
	int8_t t = label(b, in_t(b, 1)->dims[0], SIG_KEEP, 't');
	int8_t h = label(b, in_t(b, 0)->dims[2], SIG_KEEP, 'h');
	int8_t e = label(b, in_t(b, 0)->dims[0], SIG_SUM, 'e');
	int8_t k = label(b, in_t(b, 1)->dims[1], SIG_SUM, 'k');
	s->in[0][0] = e, s->in[0][1] = t, s->in[0][2] = h;
	s->in[1][0] = t, s->in[1][1] = k;
	s->in[2][0] = t, s->in[2][1] = e;
	s->out[0][0] = t, s->out[0][1] = h;
}

/* Concat: the axis is whole, with its own label in every tensor (sizes
 * differ); the other dimensions are shared. */
static void sig_concat(struct sig_builder *b)
{
	const struct tensor *y = out_t(b, 0);
	int ax = norm_axis(b->op->attrs.axis, y->rank);
	for (int d = 0; d < y->rank; d++)
		b->s->out[0][d] = label(b, y->dims[d], d == ax ? SIG_WHOLE : SIG_KEEP, 0);
	for (int i = 0; i < b->op->n_in; i++)
		for (int d = 0; d < y->rank; d++)
			b->s->in[i][d] = d == ax ? label(b, in_t(b, i)->dims[d], SIG_WHOLE, 0)
			                         : b->s->out[0][d];
}

/* Split: the axis whole (one label in the input, one shared by the equal
 * outputs); the other dimensions shared. */
static void sig_split(struct sig_builder *b)
{
	const struct tensor *x = in_t(b, 0);
	int ax = norm_axis(b->op->attrs.axis, x->rank);
	fresh_in(b, 0);
	b->s->role[b->s->in[0][ax]] = SIG_WHOLE;
	int8_t part = label(b, out_t(b, 0)->dims[ax], SIG_WHOLE, 0);
	for (int k = 0; k < b->op->n_out; k++) {
		same_as_in0(b, k);
		b->s->out[k][ax] = part;
	}
}

/* StridedSlice: a dimension whose size changes is whole on both sides. */
static void sig_slice(struct sig_builder *b)
{
	const struct tensor *x = in_t(b, 0), *y = out_t(b, 0);
	fresh_in(b, 0);
	same_as_in0(b, 0);
	for (int d = 0; d < x->rank; d++) {
		if (x->dims[d] == y->dims[d])
			continue;
		b->s->role[b->s->in[0][d]] = SIG_WHOLE;
		b->s->out[0][d] = label(b, y->dims[d], SIG_WHOLE, 0);
	}
}

/* SoftmaxCrossEntropy(logits [N,V], labels [N]) -> [N]: V summed, with
 * the vocabulary-parallel rule (seed 003). */
static void sig_sce(struct sig_builder *b)
{
	const struct tensor *l = in_t(b, 0);
	struct op_sig *s = b->s;
	int8_t n = label(b, l->dims[0], SIG_KEEP, 'n');
	int8_t v = label(b, l->dims[1], SIG_SUM, 'v');
	s->in[0][0] = s->in[1][0] = s->out[0][0] = n;
	s->in[0][1] = v;
	s->rule = SIG_RULE_VOCAB_CE;
}

static void (*const sig_rules[])(struct sig_builder *) = {
	[OP_MATMUL] = sig_matmul,
	[OP_BATCHMATMUL] = sig_matmul,
	[OP_ADD] = sig_broadcast,
	[OP_SUB] = sig_broadcast,
	[OP_MUL] = sig_broadcast,
	[OP_BIASADD] = sig_biasadd,
	[OP_RELU] = sig_identity,
	[OP_GELU] = sig_identity,
	[OP_SILU] = sig_identity,
	[OP_SIGMOID] = sig_identity,
	[OP_DROPOUT] = sig_identity,
	[OP_CAST] = sig_identity,
	[OP_SOFTMAX] = sig_softmax,
	[OP_LAYERNORM] = sig_norm,
	[OP_RMSNORM] = sig_norm,
	[OP_RESHAPE] = sig_reshape,
	[OP_TRANSPOSE] = sig_transpose,
	[OP_REDUCESUM] = sig_reduce,
	[OP_REDUCEMEAN] = sig_reduce,
	[OP_GATHER] = sig_gather,
	[OP_CONCAT] = sig_concat,
	[OP_SPLIT] = sig_split,
	[OP_STRIDEDSLICE] = sig_slice,
	[OP_SOFTMAXCROSSENTROPY] = sig_sce,
	[OP_MOEDISPATCH] = sig_moe_dispatch,
	[OP_MOECOMBINE] = sig_moe_combine,
};
_Static_assert(SL_COUNTOF(sig_rules) == OP_COUNT, "every op kind needs a signature");

bool graph_op_signature(const struct graph *g, int op, struct op_sig *out)
{
	SL_ASSERT(op >= 0 && op < g->n_ops);
	const struct op *o = &g->ops[op];
	memset(out, 0, sizeof(*out));
	if (o->n_in > SIG_MAX_TENSORS || o->n_out > SIG_MAX_TENSORS)
		return false;
	out->n_in = o->n_in;
	out->n_out = o->n_out;
	for (int i = 0; i < o->n_in; i++)
		out->in_rank[i] = g->tensors[o->in[i]].rank;
	for (int k = 0; k < o->n_out; k++)
		out->out_rank[k] = g->tensors[o->out[k]].rank;
	struct sig_builder b = {g, o, out, true};
	sig_rules[o->kind](&b);
	return b.ok;
}

/* One tensor's labels; '1' for a dimension without one. */
static size_t put_tensor(const struct op_sig *s, const int8_t *labels, int rank, char *buf,
                         size_t size, size_t o)
{
	for (int d = 0; d < rank && o + 1 < size; d++)
		buf[o++] = labels[d] < 0 ? '1' : s->name[labels[d]];
	return o;
}

const char *op_sig_format(const struct op_sig *s, char *buf, size_t size)
{
	size_t o = 0;
	if (size == 0)
		return buf;
	for (int i = 0; i < s->n_in; i++) {
		if (i && o + 1 < size)
			buf[o++] = ',';
		o = put_tensor(s, s->in[i], s->in_rank[i], buf, size, o);
	}
	if (o + 2 < size) {
		buf[o++] = '-';
		buf[o++] = '>';
	}
	for (int k = 0; k < s->n_out; k++) {
		if (k && o + 1 < size)
			buf[o++] = ',';
		o = put_tensor(s, s->out[k], s->out_rank[k], buf, size, o);
	}
	buf[o] = '\0';
	return buf;
}
