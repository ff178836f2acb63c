/* catalog.c — the op catalog: for each op kind its name, input and output
 * counts, the attributes a model file may give, the shape rule, and the
 * forward cost (FLOPs, bytes read and written).
 *
 * Units: shapes and element counts int64_t; FLOPs and bytes double. A
 * multiply-add counts 2 FLOPs (MatMul 2mkn). Bytes are the op's own input
 * and output tensors at their dtype; Reshape is a view and moves nothing,
 * Gather reads only the table rows it copies. docs/formats.md lists
 * every rule. No hot path: each rule runs once per op at load time.
 */
#include "models-int.h"

#include <stdio.h>
#include <string.h>

/* ----------------------------------------------------------- diagnostics */

void op_error(const struct op_site *s, const char *where, const char *fmt, ...)
{
	char msg[900];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (s->op) {
		/* Walk "attrs.perm" member by member; jv_get keeps the parent's
		 * line for an absent member. */
		struct jv cur = *s->op, next;
		char part[64];
		const char *p = where;
		while (*p) {
			size_t n = strcspn(p, ".");
			if (n >= sizeof part)
				n = sizeof part - 1;
			memcpy(part, p, n);
			part[n] = '\0';
			jv_get(&cur, part, &next);
			cur = next;
			p += n + (p[n] == '.');
		}
		jv_error(&cur, "%s", msg);
	} else if (s->gen) {
		jv_error(s->gen, "op \"%s\": %s", s->name, msg);
	} else {
		diag_add(s->diags, DIAG_ERROR, NULL, 0, "generator", "op \"%s\": %s", s->name, msg);
	}
}

const char *op_shape_str(char *buf, size_t size, int rank, const int64_t *dims)
{
	size_t o = (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < rank && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%s%lld", i ? "," : "", (long long)dims[i]);
	if (o < size)
		snprintf(buf + o, size - o, "]");
	return buf;
}

#define SHAPE_BUF 200
#define SHP(buf, t) op_shape_str(buf, sizeof buf, (t)->rank, (t)->dims)

/* ---------------------------------------------------------------- helpers */

static bool set_out(struct op_infer *c, int k, int rank, const int64_t *dims, enum dtype dt)
{
	const char *name = op_info(c->kind)->name;
	if (rank > GRAPH_MAX_RANK) {
		op_error(c->site, "inputs", "%s output rank %d exceeds the limit of %d", name, rank,
		         GRAPH_MAX_RANK);
		return false;
	}
	struct op_shape *o = &c->out[k];
	int64_t e = 1;
	for (int i = 0; i < rank; i++) {
		if (!util_mul_i64(e, dims[i], &e)) {
			char b[SHAPE_BUF];
			op_error(c->site, "inputs", "%s output %s: element count overflows 64 bits", name,
			         op_shape_str(b, sizeof b, rank, dims));
			return false;
		}
		o->dims[i] = dims[i];
	}
	if (e > GRAPH_MAX_ELEMENTS) {
		char b[SHAPE_BUF];
		op_error(c->site, "inputs", "%s output %s: %lld elements, more than 2^53 (%lld) in one tensor",
		         name, op_shape_str(b, sizeof b, rank, dims), (long long)e,
		         (long long)GRAPH_MAX_ELEMENTS);
		return false;
	}
	o->rank = rank;
	o->elems = e;
	o->dtype = dt;
	return true;
}

static bool same_dtype(struct op_infer *c)
{
	for (int i = 1; i < c->n_in; i++) {
		if (c->in[i]->dtype != c->in[0]->dtype) {
			op_error(c->site, "inputs", "%s input dtypes differ: %s and %s",
			         op_info(c->kind)->name, dtype_names[c->in[0]->dtype],
			         dtype_names[c->in[i]->dtype]);
			return false;
		}
	}
	return true;
}

static bool is_int(enum dtype t)
{
	return t == DT_INT32 || t == DT_INT64;
}

/* A possibly negative axis into 0..rank-1, reported at attrs.axis. */
static bool norm_axis(struct op_infer *c, int *axis, int rank)
{
	if (*axis < -rank || *axis >= rank) {
		op_error(c->site, "attrs.axis", "axis %d is out of range for a rank-%d input (expected %d..%d)",
		         *axis, rank, -rank, rank - 1);
		return false;
	}
	if (*axis < 0)
		*axis += rank;
	return true;
}

/* ------------------------------------------------------------ shape rules */

/* MatMul (2-D) and BatchMatMul (equal leading batch dims). */
static bool infer_matmul(struct op_infer *c)
{
	const struct tensor *x = c->in[0], *w = c->in[1];
	const char *name = op_info(c->kind)->name;
	char b1[SHAPE_BUF], b2[SHAPE_BUF];
	bool batched = c->kind == OP_BATCHMATMUL;
	if (!batched && (x->rank != 2 || w->rank != 2)) {
		op_error(c->site, "inputs", "MatMul needs 2-D inputs: %s x %s", SHP(b1, x), SHP(b2, w));
		return false;
	}
	if (batched && (x->rank < 3 || x->rank != w->rank)) {
		op_error(c->site, "inputs", "BatchMatMul needs inputs of the same rank >= 3: %s x %s",
		         SHP(b1, x), SHP(b2, w));
		return false;
	}
	int r = x->rank;
	for (int i = 0; i < r - 2; i++) {
		if (x->dims[i] != w->dims[i]) {
			op_error(c->site, "inputs", "BatchMatMul batch dimensions differ: %s x %s (%lld != %lld)",
			         SHP(b1, x), SHP(b2, w), (long long)x->dims[i], (long long)w->dims[i]);
			return false;
		}
	}
	bool ta = c->at->transpose_a, tb = c->at->transpose_b;
	int64_t m = x->dims[r - (ta ? 1 : 2)], k1 = x->dims[r - (ta ? 2 : 1)];
	int64_t k2 = w->dims[r - (tb ? 1 : 2)], n = w->dims[r - (tb ? 2 : 1)];
	if (k1 != k2) {
		op_error(c->site, "inputs", "%s contracted dimensions differ: %s x %s (%lld != %lld)", name,
		         SHP(b1, x), SHP(b2, w), (long long)k1, (long long)k2);
		return false;
	}
	if (!same_dtype(c))
		return false;
	int64_t d[GRAPH_MAX_RANK];
	memcpy(d, x->dims, sizeof d);
	d[r - 2] = m;
	d[r - 1] = n;
	return set_out(c, 0, r, d, x->dtype);
}

/* Add, Sub, Mul: numpy broadcasting, aligned on the right. */
static bool infer_broadcast(struct op_infer *c)
{
	const struct tensor *x = c->in[0], *y = c->in[1];
	int r = x->rank > y->rank ? x->rank : y->rank;
	int64_t d[GRAPH_MAX_RANK];
	for (int i = 0; i < r; i++) {
		int64_t dx = i < x->rank ? x->dims[x->rank - 1 - i] : 1;
		int64_t dy = i < y->rank ? y->dims[y->rank - 1 - i] : 1;
		if (dx != dy && dx != 1 && dy != 1) {
			char b1[SHAPE_BUF], b2[SHAPE_BUF];
			op_error(c->site, "inputs",
			         "%s shapes do not broadcast: %s and %s (%lld vs %lld at axis %d)",
			         op_info(c->kind)->name, SHP(b1, x), SHP(b2, y), (long long)dx, (long long)dy,
			         -(i + 1));
			return false;
		}
		d[r - 1 - i] = dx == 1 ? dy : dx;
	}
	return same_dtype(c) && set_out(c, 0, r, d, x->dtype);
}

static bool infer_biasadd(struct op_infer *c)
{
	const struct tensor *x = c->in[0], *bias = c->in[1];
	char b1[SHAPE_BUF], b2[SHAPE_BUF];
	if (x->rank < 1 || bias->rank != 1 || bias->dims[0] != x->dims[x->rank - 1]) {
		op_error(c->site, "inputs",
		         "BiasAdd needs a bias as long as the last dimension: %s + %s", SHP(b1, x),
		         SHP(b2, bias));
		return false;
	}
	return same_dtype(c) && set_out(c, 0, x->rank, x->dims, x->dtype);
}

/* ReLU, GeLU, SiLU, Dropout, Cast: the input's shape. */
static bool infer_unary(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	return set_out(c, 0, x->rank, x->dims, c->kind == OP_CAST ? c->at->to : x->dtype);
}

static bool infer_softmax(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	return norm_axis(c, &c->at->axis, x->rank) && set_out(c, 0, x->rank, x->dims, x->dtype);
}

/* LayerNorm(x, gamma, beta), RMSNorm(x, gamma): x.shape[axis:] each. */
static bool infer_norm(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	if (!norm_axis(c, &c->at->axis, x->rank))
		return false;
	int ax = c->at->axis, nr = x->rank - ax;
	for (int i = 1; i < c->n_in; i++) {
		const struct tensor *p = c->in[i];
		bool ok = p->rank == nr;
		for (int k = 0; ok && k < nr; k++)
			ok = p->dims[k] == x->dims[ax + k];
		if (!ok) {
			char b1[SHAPE_BUF], b2[SHAPE_BUF], b3[SHAPE_BUF];
			op_error(c->site, "inputs", "%s %s shape %s differs from the normalised axes of %s: %s",
			         op_info(c->kind)->name, i == 1 ? "gamma" : "beta", SHP(b1, p), SHP(b2, x),
			         op_shape_str(b3, sizeof b3, nr, x->dims + ax));
			return false;
		}
	}
	return set_out(c, 0, x->rank, x->dims, x->dtype);
}

static bool infer_reshape(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	struct op_attrs *at = c->at;
	int64_t known = 1;
	int free_at = -1;
	char b1[SHAPE_BUF], b2[SHAPE_BUF];
	for (int i = 0; i < at->n_shape; i++) {
		if (at->shape[i] == -1)
			free_at = i;
		else if (!util_mul_i64(known, at->shape[i], &known)) {
			op_error(c->site, "attrs.shape", "element count overflows 64 bits");
			return false;
		}
	}
	if (free_at >= 0) {
		if (x->elems % known != 0) {
			op_error(c->site, "attrs.shape",
			         "cannot infer -1: %s has %lld elements, not a multiple of %lld", SHP(b1, x),
			         (long long)x->elems, (long long)known);
			return false;
		}
		at->shape[free_at] = x->elems / known;
		known = x->elems;
	}
	if (known != x->elems) {
		op_error(c->site, "attrs.shape", "Reshape element count differs: %s has %lld elements, %s has %lld",
		         SHP(b1, x), (long long)x->elems,
		         op_shape_str(b2, sizeof b2, at->n_shape, at->shape), (long long)known);
		return false;
	}
	return set_out(c, 0, at->n_shape, at->shape, x->dtype);
}

static bool infer_transpose(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	const struct op_attrs *at = c->at;
	bool seen[GRAPH_MAX_RANK] = {false};
	bool ok = at->n_shape == x->rank;
	for (int i = 0; ok && i < at->n_shape; i++) {
		ok = at->perm[i] >= 0 && at->perm[i] < x->rank && !seen[at->perm[i]];
		if (ok)
			seen[at->perm[i]] = true;
	}
	char b1[SHAPE_BUF], b2[SHAPE_BUF];
	if (!ok) {
		op_error(c->site, "attrs.perm", "%s is not a permutation of 0..%d (the input is %s)",
		         op_shape_str(b1, sizeof b1, at->n_shape, at->perm), x->rank - 1, SHP(b2, x));
		return false;
	}
	int64_t d[GRAPH_MAX_RANK];
	for (int i = 0; i < x->rank; i++)
		d[i] = x->dims[at->perm[i]];
	return set_out(c, 0, x->rank, d, x->dtype);
}

/* ReduceSum, ReduceMean: axes (all when none given), keep_dims. */
static bool infer_reduce(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	struct op_attrs *at = c->at;
	bool cut[GRAPH_MAX_RANK] = {false};
	if (at->n_axes == 0)
		for (int i = 0; i < x->rank; i++)
			cut[i] = true;
	for (int i = 0; i < at->n_axes; i++) {
		int ax = at->axes[i];
		if (ax < -x->rank || ax >= x->rank || cut[ax < 0 ? ax + x->rank : ax]) {
			op_error(c->site, "attrs.axes",
			         "axis %d is out of range or repeated for a rank-%d input (expected %d..%d)",
			         ax, x->rank, -x->rank, x->rank - 1);
			return false;
		}
		at->axes[i] = ax < 0 ? ax + x->rank : ax;
		cut[at->axes[i]] = true;
	}
	int64_t d[GRAPH_MAX_RANK];
	int r = 0;
	for (int i = 0; i < x->rank; i++) {
		if (!cut[i])
			d[r++] = x->dims[i];
		else if (at->keep_dims)
			d[r++] = 1;
	}
	return set_out(c, 0, r, d, x->dtype);
}

/* Gather(table, indices) on axis 0: indices.shape + table.shape[1:]. */
static bool infer_gather(struct op_infer *c)
{
	const struct tensor *t = c->in[0], *ix = c->in[1];
	if (t->rank < 1) {
		op_error(c->site, "inputs", "Gather needs a table of rank >= 1, got a scalar");
		return false;
	}
	if (!is_int(ix->dtype)) {
		op_error(c->site, "inputs", "Gather indices must be int32 or int64, got %s",
		         dtype_names[ix->dtype]);
		return false;
	}
	int64_t d[2 * GRAPH_MAX_RANK];
	int r = 0;
	for (int i = 0; i < ix->rank; i++)
		d[r++] = ix->dims[i];
	for (int i = 1; i < t->rank; i++)
		d[r++] = t->dims[i];
	return set_out(c, 0, r, d, t->dtype);
}

static bool infer_concat(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	if (!norm_axis(c, &c->at->axis, x->rank) || !same_dtype(c))
		return false;
	int ax = c->at->axis;
	int64_t d[GRAPH_MAX_RANK];
	memcpy(d, x->dims, sizeof d);
	for (int i = 1; i < c->n_in; i++) {
		const struct tensor *y = c->in[i];
		bool ok = y->rank == x->rank;
		for (int k = 0; ok && k < x->rank; k++)
			ok = k == ax || y->dims[k] == x->dims[k];
		if (!ok) {
			char b1[SHAPE_BUF], b2[SHAPE_BUF];
			op_error(c->site, "inputs", "Concat inputs differ outside axis %d: %s and %s", ax,
			         SHP(b1, x), SHP(b2, y));
			return false;
		}
		if (!util_add_i64(d[ax], y->dims[ax], &d[ax])) {
			op_error(c->site, "inputs", "Concat output dimension overflows 64 bits");
			return false;
		}
	}
	return set_out(c, 0, x->rank, d, x->dtype);
}

static bool infer_split(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	if (!norm_axis(c, &c->at->axis, x->rank))
		return false;
	int ax = c->at->axis, n = c->at->n_outputs;
	if (x->dims[ax] % n != 0) {
		char b[SHAPE_BUF];
		op_error(c->site, "attrs.outputs",
		         "dimension %d of %s (%lld) does not split into %d equal parts", ax, SHP(b, x),
		         (long long)x->dims[ax], n);
		return false;
	}
	int64_t d[GRAPH_MAX_RANK];
	memcpy(d, x->dims, sizeof d);
	d[ax] /= n;
	for (int k = 0; k < n; k++)
		if (!set_out(c, k, x->rank, d, x->dtype))
			return false;
	return true;
}

static bool infer_slice(struct op_infer *c)
{
	const struct tensor *x = c->in[0];
	const struct op_attrs *at = c->at;
	char b[SHAPE_BUF];
	if (at->n_shape != x->rank) {
		op_error(c->site, "attrs.begin", "StridedSlice needs %d begin/end entries for %s, got %d",
		         x->rank, SHP(b, x), at->n_shape);
		return false;
	}
	int64_t d[GRAPH_MAX_RANK];
	for (int i = 0; i < x->rank; i++) {
		if (at->begin[i] >= at->end[i] || at->end[i] > x->dims[i]) {
			op_error(c->site, "attrs.end",
			         "dimension %d of %s: expected 0 <= begin < end <= %lld, got begin %lld, end %lld",
			         i, SHP(b, x), (long long)x->dims[i], (long long)at->begin[i],
			         (long long)at->end[i]);
			return false;
		}
		d[i] = (at->end[i] - at->begin[i] + at->strides[i] - 1) / at->strides[i];
	}
	return set_out(c, 0, x->rank, d, x->dtype);
}

/* SoftmaxCrossEntropy(logits [N,V], labels [N] int) -> loss [N]. */
static bool infer_sce(struct op_infer *c)
{
	const struct tensor *l = c->in[0], *y = c->in[1];
	char b1[SHAPE_BUF], b2[SHAPE_BUF];
	if (l->rank != 2 || y->rank != 1 || y->dims[0] != l->dims[0]) {
		op_error(c->site, "inputs",
		         "SoftmaxCrossEntropy needs logits [N,V] and labels [N]: %s and %s", SHP(b1, l),
		         SHP(b2, y));
		return false;
	}
	if (!is_int(y->dtype)) {
		op_error(c->site, "inputs", "SoftmaxCrossEntropy labels must be int32 or int64, got %s",
		         dtype_names[y->dtype]);
		return false;
	}
	return set_out(c, 0, 1, y->dims, l->dtype);
}

/* MoEDispatch: tokens x [T, h] and the routing decision index [E, C]
 * (int) -> slots [E, C, h]. Token-local: the slots a rank fills come from
 * the tokens it holds, so a cut of the tokens cuts the slots' C alike. */
static bool infer_moe_dispatch(struct op_infer *c)
{
	const struct tensor *x = c->in[0], *ix = c->in[1];
	char b1[SHAPE_BUF], b2[SHAPE_BUF];
	if (x->rank != 2 || ix->rank != 2) {
		op_error(c->site, "inputs", "MoEDispatch needs tokens [T,h] and an index [E,C]: %s "
		         "and %s", SHP(b1, x), SHP(b2, ix));
		return false;
	}
	if (!is_int(ix->dtype)) {
		op_error(c->site, "inputs", "MoEDispatch index must be int32 or int64, got %s",
		         dtype_names[ix->dtype]);
		return false;
	}
	int64_t d[3] = {ix->dims[0], ix->dims[1], x->dims[1]};
	return set_out(c, 0, 3, d, x->dtype);
}

/* MoECombine: slots [E, C, h], index [T, k] (int: which slots hold a
 * token's k picks) and the router's probabilities [T, E] -> [T, h], the
 * k picks weighted and summed. */
static bool infer_moe_combine(struct op_infer *c)
{
	const struct tensor *y = c->in[0], *ix = c->in[1], *pr = c->in[2];
	char b1[SHAPE_BUF], b2[SHAPE_BUF], b3[SHAPE_BUF];
	if (y->rank != 3 || ix->rank != 2 || pr->rank != 2 || pr->dims[0] != ix->dims[0] ||
	    pr->dims[1] != y->dims[0] || ix->dims[1] > y->dims[0]) {
		op_error(c->site, "inputs", "MoECombine needs slots [E,C,h], an index [T,k] with "
		         "k <= E and probabilities [T,E]: %s, %s and %s", SHP(b1, y), SHP(b2, ix),
		         SHP(b3, pr));
		return false;
	}
	if (!is_int(ix->dtype)) {
		op_error(c->site, "inputs", "MoECombine index must be int32 or int64, got %s",
		         dtype_names[ix->dtype]);
		return false;
	}
	int64_t d[2] = {ix->dims[0], y->dims[2]};
	return set_out(c, 0, 2, d, y->dtype);
}

/* ----------------------------------------------------------------- table */

#define LIST(...) ((const char *const[]){__VA_ARGS__, NULL})
static const char *const no_attrs[] = {NULL};

static const struct op_info catalog[] = {
	[OP_MATMUL] = {"MatMul", 2, 2, 1, LIST("transpose_a", "transpose_b"), no_attrs,
	               FLOP_CONTRACT, 2, infer_matmul},
	[OP_BATCHMATMUL] = {"BatchMatMul", 2, 2, 1, LIST("transpose_a", "transpose_b"), no_attrs,
	                    FLOP_CONTRACT, 2, infer_matmul},
	[OP_ADD] = {"Add", 2, 2, 1, no_attrs, no_attrs, FLOP_OUT, 1, infer_broadcast},
	[OP_SUB] = {"Sub", 2, 2, 1, no_attrs, no_attrs, FLOP_OUT, 1, infer_broadcast},
	[OP_MUL] = {"Mul", 2, 2, 1, no_attrs, no_attrs, FLOP_OUT, 1, infer_broadcast},
	[OP_BIASADD] = {"BiasAdd", 2, 2, 1, no_attrs, no_attrs, FLOP_OUT, 1, infer_biasadd},
	[OP_RELU] = {"ReLU", 1, 1, 1, no_attrs, no_attrs, FLOP_OUT, 1, infer_unary},
	[OP_GELU] = {"GeLU", 1, 1, 1, no_attrs, no_attrs, FLOP_OUT, 8, infer_unary},
	[OP_SILU] = {"SiLU", 1, 1, 1, no_attrs, no_attrs, FLOP_OUT, 4, infer_unary},
	[OP_SIGMOID] = {"Sigmoid", 1, 1, 1, no_attrs, no_attrs, FLOP_OUT, 3, infer_unary},
	[OP_DROPOUT] = {"Dropout", 1, 1, 1, LIST("keep_prob"), no_attrs, FLOP_OUT, 2, infer_unary},
	[OP_CAST] = {"Cast", 1, 1, 1, LIST("to"), LIST("to"), FLOP_NONE, 0, infer_unary},
	[OP_SOFTMAX] = {"Softmax", 1, 1, 1, LIST("axis"), no_attrs, FLOP_OUT, 5, infer_softmax},
	[OP_LAYERNORM] = {"LayerNorm", 3, 3, 1, LIST("axis"), no_attrs, FLOP_OUT, 8, infer_norm},
	[OP_RMSNORM] = {"RMSNorm", 2, 2, 1, LIST("axis"), no_attrs, FLOP_OUT, 4, infer_norm},
	[OP_RESHAPE] = {"Reshape", 1, 1, 1, LIST("shape"), LIST("shape"), FLOP_NONE, 0,
	                infer_reshape},
	[OP_TRANSPOSE] = {"Transpose", 1, 1, 1, LIST("perm"), LIST("perm"), FLOP_NONE, 0,
	                  infer_transpose},
	[OP_REDUCESUM] = {"ReduceSum", 1, 1, 1, LIST("axes", "keep_dims"), no_attrs, FLOP_IN0, 1,
	                  infer_reduce},
	[OP_REDUCEMEAN] = {"ReduceMean", 1, 1, 1, LIST("axes", "keep_dims"), no_attrs, FLOP_IN0, 1,
	                   infer_reduce},
	[OP_GATHER] = {"Gather", 2, 2, 1, no_attrs, no_attrs, FLOP_NONE, 0, infer_gather},
	[OP_CONCAT] = {"Concat", 2, 0, 1, LIST("axis"), no_attrs, FLOP_NONE, 0, infer_concat},
	[OP_SPLIT] = {"Split", 1, 1, 0, LIST("axis", "outputs"), LIST("outputs"), FLOP_NONE, 0,
	              infer_split},
	[OP_STRIDEDSLICE] = {"StridedSlice", 1, 1, 1, LIST("begin", "end", "strides", "view"),
	                     LIST("begin", "end"), FLOP_NONE, 0, infer_slice},
	[OP_SOFTMAXCROSSENTROPY] = {"SoftmaxCrossEntropy", 2, 2, 1, no_attrs, no_attrs, FLOP_IN0, 5,
	                            infer_sce},
	[OP_MOEDISPATCH] = {"MoEDispatch", 2, 2, 1, no_attrs, no_attrs, FLOP_NONE, 0,
	                    infer_moe_dispatch},
	[OP_MOECOMBINE] = {"MoECombine", 3, 3, 1, no_attrs, no_attrs, FLOP_NONE, 0,
	                   infer_moe_combine},
};
_Static_assert(OP_COUNT == 26, "the op catalog must list every op kind");
_Static_assert(SL_COUNTOF(catalog) == OP_COUNT, "the op catalog must list every op kind");

const struct op_info *op_info(enum op_kind k)
{
	SL_ASSERT(k >= 0 && k < OP_COUNT);
	return &catalog[k];
}

const char *op_kind_name(enum op_kind k)
{
	return op_info(k)->name;
}

int op_kind_parse(const char *name)
{
	for (int k = 0; k < OP_COUNT; k++)
		if (!strcmp(catalog[k].name, name))
			return k;
	return -1;
}

void op_attrs_default(enum op_kind k, struct op_attrs *at)
{
	memset(at, 0, sizeof(*at));
	at->axis = k == OP_SOFTMAX || k == OP_LAYERNORM || k == OP_RMSNORM ? -1 : 0;
	at->keep_prob = 0.9;
	at->n_outputs = 1;
	at->to = DT_FP32;
	for (int i = 0; i < GRAPH_MAX_RANK; i++)
		at->strides[i] = 1;
}

int op_n_outputs(enum op_kind k, const struct op_attrs *at)
{
	int n = op_info(k)->n_out;
	return n ? n : at->n_outputs;
}

static double tensor_bytes(const struct tensor *t)
{
	return (double)t->elems * (double)dtype_bytes(t->dtype);
}

void op_costs(struct op *op, const struct tensor *ts)
{
	const struct op_info *info = op_info(op->kind);
	const struct tensor *x = &ts[op->in[0]], *y = &ts[op->out[0]];
	switch (info->flops) {
	case FLOP_NONE: op->flops = 0; break;
	case FLOP_OUT: op->flops = info->per_elem * (double)y->elems; break;
	case FLOP_IN0: op->flops = info->per_elem * (double)x->elems; break;
	case FLOP_CONTRACT:
		/* Contracted length: the last dim of x, or the one before with transpose_a. */
		op->flops = info->per_elem * (double)y->elems *
		            (double)x->dims[x->rank - (op->attrs.transpose_a ? 2 : 1)];
		break;
	}
	if (op->kind == OP_MOECOMBINE) /* each output element: k multiply-adds */
		op->flops = 2 * (double)y->elems * (double)ts[op->in[1]].dims[1];
	op->bytes_read = op->bytes_written = 0;
	op->params = 0;
	for (int i = 0; i < op->n_in; i++) {
		const struct tensor *t = &ts[op->in[i]];
		if (t->role == TENSOR_PARAM)
			op->params += t->elems;
		if ((op->kind == OP_GATHER || op->kind == OP_MOEDISPATCH) && i == 0)
			op->bytes_read += tensor_bytes(y); /* the rows copied, not the table */
		else if (op->kind == OP_MOECOMBINE && i == 0)
			op->bytes_read += tensor_bytes(y) * (double)ts[op->in[1]].dims[1]; /* k rows each */
		else
			op->bytes_read += tensor_bytes(t);
	}
	for (int k = 0; k < op->n_out; k++)
		op->bytes_written += tensor_bytes(&ts[op->out[k]]);
	if (op->kind == OP_RESHAPE || (op->kind == OP_STRIDEDSLICE && op->attrs.view))
		op->bytes_read = op->bytes_written = 0;
}
