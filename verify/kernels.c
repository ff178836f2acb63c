/* kernels.c — the op catalog executed on numbers, on one rank's boxes of
 * its tensors (or on the whole tensors, for the reference).
 *
 * GEMMs (MatMul, BatchMatMul) go to GSL's BLAS on gsl_matrix views of the
 * rank's buffers; element-wise ops, softmax, the norms and reductions are
 * plain loops. Ops that only move elements (Reshape, StridedSlice, Concat,
 * Split) map each output element's global index to the input element it
 * copies and fetch it from the rank's box: a plan that leaves that element
 * on another rank is broken, and says so. Gather looks up the table rows
 * the rank holds (zeros elsewhere, partial sums when the table is cut).
 * MoEDispatch copies into slot (e, c) the token its index names (a global
 * token, which must be on the rank: the dispatch is token-local);
 * MoECombine adds, for each of a token's k picks, the slot its index
 * names (e·C + c, flat) times the router's probability of expert e, the
 * experts the rank does not hold leaving partial sums.
 *
 * Everything is double precision. Dropout keeps an element when a hash of
 * its global index is below keep_prob, so every rank draws the mask the
 * reference draws. LayerNorm and RMSNorm use epsilon 1e-5.
 *
 * Hot path: the element loops, linear in the rank's elements.
 */
#include <gsl/gsl_blas.h>
#include <gsl/gsl_errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "verify-int.h"

#define NORM_EPS 1e-5

double verify_hash01(uint64_t key)
{
	uint64_t z = key + 0x9e3779b97f4a7c15ull;
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	z ^= z >> 31;
	return (double)(z >> 11) * 0x1.0p-53;
}

int64_t verify_elems(const int64_t *shape, int rank)
{
	int64_t n = 1;
	for (int d = 0; d < rank; d++)
		n *= shape[d];
	return n;
}

/* Multi-index of flat position f in shape. */
static void unravel(int64_t f, const int64_t *shape, int rank, int64_t *idx)
{
	for (int d = rank - 1; d >= 0; d--) {
		idx[d] = shape[d] ? f % shape[d] : 0;
		f = shape[d] ? f / shape[d] : 0;
	}
}

/* The multi-index after idx in shape, row-major, in place (the last
 * wraps to all zeros): a loop over flat positions 0, 1, ... keeps its
 * index this way instead of dividing it out of each position. */
static inline void next_index(int64_t *idx, const int64_t *shape, int rank)
{
	for (int d = rank - 1; d >= 0; d--) {
		if (++idx[d] < shape[d])
			return;
		idx[d] = 0;
	}
}

static int64_t ravel(const int64_t *idx, const int64_t *shape, int rank)
{
	int64_t f = 0;
	for (int d = 0; d < rank; d++)
		f = f * shape[d] + idx[d];
	return f;
}

static void fail(char *why, size_t n, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static void fail(char *why, size_t n, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, n, fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------- GEMMs */

static enum vk_status k_matmul(const struct op *o, const struct vpiece *in, struct vpiece *out,
                               char *why, size_t wn)
{
	const struct vpiece *x = &in[0], *w = &in[1];
	int r = x->rank;
	if (r < 2 || w->rank != r || out->rank != r) {
		fail(why, wn, "%s with tensors of ranks %d, %d, %d", op_kind_name(o->kind), r, w->rank,
		     out->rank);
		return VK_UNSUPPORTED;
	}
	bool ta = o->attrs.transpose_a, tb = o->attrs.transpose_b;
	int64_t batch = verify_elems(x->shape, r - 2);
	size_t xr = (size_t)x->shape[r - 2], xc = (size_t)x->shape[r - 1];
	size_t wr = (size_t)w->shape[r - 2], wc = (size_t)w->shape[r - 1];
	size_t ym = (size_t)out->shape[r - 2], yn = (size_t)out->shape[r - 1];
	size_t k1 = ta ? xr : xc, k2 = tb ? wc : wr;
	if (k1 != k2 || (ta ? xc : xr) != ym || (tb ? wr : wc) != yn ||
	    verify_elems(w->shape, r - 2) != batch || verify_elems(out->shape, r - 2) != batch) {
		fail(why, wn, "local shapes do not multiply: %zux%zu times %zux%zu into %zux%zu", xr,
		     xc, wr, wc, ym, yn);
		return VK_BROKEN;
	}
	for (int64_t b = 0; b < batch; b++) {
		gsl_matrix_const_view A = gsl_matrix_const_view_array(x->data + (size_t)b * xr * xc, xr, xc);
		gsl_matrix_const_view B = gsl_matrix_const_view_array(w->data + (size_t)b * wr * wc, wr, wc);
		gsl_matrix_view C = gsl_matrix_view_array(out->data + (size_t)b * ym * yn, ym, yn);
		int rc = gsl_blas_dgemm(ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
		                        1.0, &A.matrix, &B.matrix, 0.0, &C.matrix);
		if (rc != GSL_SUCCESS) {
			fail(why, wn, "gsl_blas_dgemm: %s", gsl_strerror(rc));
			return VK_BROKEN;
		}
	}
	return VK_OK;
}

/* ------------------------------------------------------ element-wise */

/* Add, Sub, Mul, BiasAdd: numpy broadcasting, right-aligned; a dimension
 * of size 1 stretches. */
static enum vk_status k_binary(const struct op *o, const struct vpiece *in, struct vpiece *out,
                               char *why, size_t wn)
{
	const struct vpiece *x = &in[0], *y = &in[1];
	int r = out->rank;
	for (int i = 0; i < 2; i++)
		for (int d = 0; d < in[i].rank; d++) {
			int64_t s = in[i].shape[d], t = out->shape[r - in[i].rank + d];
			if (s != t && s != 1) {
				fail(why, wn, "input %d dimension %d holds %lld elements, the output %lld", i,
				     d, (long long)s, (long long)t);
				return VK_BROKEN;
			}
		}
	int64_t n = verify_elems(out->shape, r), idx[GRAPH_MAX_RANK] = {0}, ix[GRAPH_MAX_RANK];
	for (int64_t f = 0; f < n; f++, next_index(idx, out->shape, r)) {
		double v[2];
		for (int i = 0; i < 2; i++) {
			const struct vpiece *p = i ? y : x;
			for (int d = 0; d < p->rank; d++)
				ix[d] = p->shape[d] == 1 ? 0 : idx[r - p->rank + d];
			v[i] = p->data[ravel(ix, p->shape, p->rank)];
		}
		out->data[f] = o->kind == OP_SUB ? v[0] - v[1] : o->kind == OP_MUL ? v[0] * v[1]
		                                                                  : v[0] + v[1];
	}
	return VK_OK;
}

static enum vk_status k_unary(const struct op *o, const struct vpiece *in, struct vpiece *out,
                              uint64_t salt)
{
	int64_t n = verify_elems(out->shape, out->rank), idx[GRAPH_MAX_RANK] = {0};
	int64_t gx[GRAPH_MAX_RANK];
	double keep = o->attrs.keep_prob > 0 ? o->attrs.keep_prob : 1;
	bool dropout = o->kind == OP_DROPOUT;
	for (int64_t f = 0; f < n; f++) {
		double x = in[0].data[f], y = x;
		switch (o->kind) {
		case OP_RELU:
			y = x > 0 ? x : 0;
			break;
		case OP_GELU:
			y = 0.5 * x * (1 + erf(x / sqrt(2.0)));
			break;
		case OP_SILU:
			y = x / (1 + exp(-x));
			break;
		case OP_SIGMOID:
			y = 1 / (1 + exp(-x));
			break;
		case OP_DROPOUT: {
			for (int d = 0; d < out->rank; d++)
				gx[d] = idx[d] + out->lo[d];
			uint64_t g = (uint64_t)ravel(gx, out->full, out->rank);
			y = verify_hash01(salt * 0x100000001b3ull ^ g) < keep ? x / keep : 0;
			break;
		}
		default: /* Cast: the value, in double */
			break;
		}
		out->data[f] = y;
		if (dropout)
			next_index(idx, out->shape, out->rank);
	}
	return VK_OK;
}

/* ---------------------------------------------- softmax and the norms */

static int norm_axis(int axis, int rank)
{
	return axis < 0 ? axis + rank : axis;
}

static enum vk_status k_softmax(const struct op *o, const struct vpiece *in, struct vpiece *out,
                                char *why, size_t wn)
{
	int r = out->rank, ax = norm_axis(o->attrs.axis, r);
	if (in->shape[ax] != in->full[ax]) {
		fail(why, wn, "Softmax over a cut axis (%lld of %lld)", (long long)in->shape[ax],
		     (long long)in->full[ax]);
		return VK_BROKEN;
	}
	int64_t outer = verify_elems(in->shape, ax), len = in->shape[ax];
	int64_t inner = verify_elems(in->shape + ax + 1, r - ax - 1);
	for (int64_t a = 0; a < outer; a++)
		for (int64_t c = 0; c < inner; c++) {
			const double *x = in->data + a * len * inner + c;
			double *y = out->data + a * len * inner + c;
			double m = -INFINITY, s = 0;
			for (int64_t i = 0; i < len; i++)
				m = fmax(m, x[i * inner]);
			for (int64_t i = 0; i < len; i++)
				s += y[i * inner] = exp(x[i * inner] - m);
			for (int64_t i = 0; i < len; i++)
				y[i * inner] /= s;
		}
	return VK_OK;
}

static enum vk_status k_norm(const struct op *o, const struct vpiece *in, struct vpiece *out,
                             char *why, size_t wn)
{
	int r = out->rank, ax = norm_axis(o->attrs.axis, r);
	for (int d = ax; d < r; d++)
		if (in->shape[d] != in->full[d]) {
			fail(why, wn, "%s over a cut dimension %d (%lld of %lld)", op_kind_name(o->kind), d,
			     (long long)in->shape[d], (long long)in->full[d]);
			return VK_BROKEN;
		}
	int64_t outer = verify_elems(in->shape, ax), len = verify_elems(in->shape + ax, r - ax);
	bool ln = o->kind == OP_LAYERNORM;
	const double *gamma = o->n_in > 1 ? in[1].data : NULL;
	const double *beta = ln && o->n_in > 2 ? in[2].data : NULL;
	for (int64_t a = 0; a < outer; a++) {
		const double *x = in->data + a * len;
		double *y = out->data + a * len;
		double mean = 0, var = 0;
		if (ln) {
			for (int64_t i = 0; i < len; i++)
				mean += x[i];
			mean /= (double)len;
		}
		for (int64_t i = 0; i < len; i++)
			var += (x[i] - mean) * (x[i] - mean);
		double inv = 1 / sqrt(var / (double)len + NORM_EPS);
		for (int64_t i = 0; i < len; i++)
			y[i] = (x[i] - mean) * inv * (gamma ? gamma[i] : 1) + (beta ? beta[i] : 0);
	}
	return VK_OK;
}

/* The axes a ReduceSum/ReduceMean reduces (all of them when it names
 * none) into red[], and how many elements of the whole tensor each output
 * element sums. */
static double reduced_axes(const struct op *o, const struct vpiece *in, bool red[GRAPH_MAX_RANK])
{
	int r = in->rank;
	for (int d = 0; d < r; d++)
		red[d] = o->attrs.n_axes == 0;
	for (int i = 0; i < o->attrs.n_axes; i++)
		red[norm_axis(o->attrs.axes[i], r)] = true;
	double count = 1;
	for (int d = 0; d < r; d++)
		if (red[d])
			count *= (double)in->full[d];
	return count;
}

/* ReduceSum, ReduceMean: a rank's box of a cut reduced axis gives a
 * partial sum; the mean divides by the whole count. */
static enum vk_status k_reduce(const struct op *o, const struct vpiece *in, struct vpiece *out)
{
	int r = in->rank;
	bool red[GRAPH_MAX_RANK] = {false};
	double count = reduced_axes(o, in, red);
	int64_t n = verify_elems(out->shape, out->rank), m = verify_elems(in->shape, r);
	memset(out->data, 0, (size_t)n * sizeof(double));
	int64_t idx[GRAPH_MAX_RANK] = {0}, oi[GRAPH_MAX_RANK];
	for (int64_t f = 0; f < m; f++, next_index(idx, in->shape, r)) {
		int k = 0;
		for (int d = 0; d < r; d++) {
			if (!red[d])
				oi[k++] = idx[d];
			else if (o->attrs.keep_dims)
				oi[k++] = 0;
		}
		out->data[ravel(oi, out->shape, out->rank)] += in->data[f];
	}
	if (o->kind == OP_REDUCEMEAN)
		for (int64_t f = 0; f < n; f++)
			out->data[f] /= count;
	return VK_OK;
}

static enum vk_status k_transpose(const struct op *o, const struct vpiece *in, struct vpiece *out)
{
	int r = in->rank;
	int64_t n = verify_elems(out->shape, r), idx[GRAPH_MAX_RANK] = {0}, ix[GRAPH_MAX_RANK];
	for (int64_t f = 0; f < n; f++, next_index(idx, out->shape, r)) {
		for (int d = 0; d < r; d++)
			ix[o->attrs.perm[d]] = idx[d];
		out->data[f] = in->data[ravel(ix, in->shape, r)];
	}
	return VK_OK;
}

/* ------------------------------------------------ ops that move elements */

/* The input (*which) and its global index that global output index g of
 * output k copies. */
static void source_of(const struct op *o, const struct vpiece *in, int k, const int64_t *g,
                      const struct vpiece *outp, int *which, int64_t *gi)
{
	int r = outp->rank;
	*which = 0;
	switch (o->kind) {
	case OP_RESHAPE:
		unravel(ravel(g, outp->full, r), in[0].full, in[0].rank, gi);
		break;
	case OP_STRIDEDSLICE:
		for (int d = 0; d < r; d++)
			gi[d] = d < o->attrs.n_shape
			            ? o->attrs.begin[d] + g[d] * (o->attrs.strides[d] ? o->attrs.strides[d] : 1)
			            : g[d];
		break;
	case OP_CONCAT: {
		int ax = norm_axis(o->attrs.axis, r);
		memcpy(gi, g, (size_t)r * sizeof(*gi));
		int64_t off = 0;
		int j = 0;
		while (j + 1 < o->n_in && g[ax] >= off + in[j].full[ax])
			off += in[j++].full[ax];
		*which = j;
		gi[ax] = g[ax] - off;
		break;
	}
	case OP_SPLIT: {
		int ax = norm_axis(o->attrs.axis, r);
		memcpy(gi, g, (size_t)r * sizeof(*gi));
		gi[ax] = g[ax] + (int64_t)k * outp->full[ax];
		break;
	}
	default:
		SL_ASSERT(0);
	}
}

/* The element walk of the data-movement ops (Concat, Split, StridedSlice,
 * Reshape, Transpose as their sources say): for every element of each
 * output piece y[k] (the outputs forward, their gradients backward), the
 * input piece and its local index it comes from. Forward (din NULL)
 * copies it into out[k] (y0 is out); backward adds y0's element into that
 * input's gradient din[j] (when the input has one). */
/* Where output k's element at local index idx comes from: the input j
 * and its local index li there; false when this rank does not hold it. */
static bool move_source(const struct op *o, const struct vpiece *in, int k,
                        const struct vpiece *y, const int64_t *idx, int *j, int64_t *li)
{
	int64_t g[GRAPH_MAX_RANK], gi[GRAPH_MAX_RANK];
	for (int d = 0; d < y->rank; d++)
		g[d] = idx[d] + y->lo[d];
	source_of(o, in, k, g, y, j, gi);
	const struct vpiece *x = &in[*j];
	for (int d = 0; d < x->rank; d++) {
		li[d] = gi[d] - x->lo[d];
		if (li[d] < 0 || li[d] >= x->shape[d])
			return false;
	}
	return true;
}

/* Whether a row of L elements of y (the last dimension, from idx with
 * idx[last] == 0) comes from one run of L consecutive elements of one
 * input piece; its start in *j and *at. True when the row's first and
 * last elements are held, in the same input, on the same line of it, L - 1
 * apart: every op here maps a row affinely (Reshape keeps the order of the
 * elements, Concat, Split and StridedSlice shift them, a stride other
 * than 1 fails the test), so the elements between lie between. */
static bool move_run(const struct op *o, const struct vpiece *in, int k, const struct vpiece *y,
                     int64_t *idx, int *j, int64_t *at)
{
	int r = y->rank, j1;
	int64_t L = y->shape[r - 1], l0[GRAPH_MAX_RANK], l1[GRAPH_MAX_RANK];
	if (!move_source(o, in, k, y, idx, j, l0))
		return false;
	idx[r - 1] = L - 1;
	bool ok = move_source(o, in, k, y, idx, &j1, l1) && j1 == *j;
	idx[r - 1] = 0;
	const struct vpiece *x = &in[*j];
	int xr = x->rank;
	ok = ok && xr > 0 && l1[xr - 1] - l0[xr - 1] == L - 1;
	for (int d = 0; ok && d < xr - 1; d++)
		ok = l0[d] == l1[d];
	*at = ok ? ravel(l0, x->shape, xr) : 0;
	return ok;
}

static enum vk_status walk_move(const struct op *o, const struct vpiece *in,
                                const struct vpiece *y0, struct vpiece *out, struct vpiece *din,
                                char *why, size_t wn)
{
	int64_t idx[GRAPH_MAX_RANK], g[GRAPH_MAX_RANK], gi[GRAPH_MAX_RANK], li[GRAPH_MAX_RANK];
	for (int k = 0; k < o->n_out; k++) {
		const struct vpiece *y = &y0[k];
		int64_t n = verify_elems(y->shape, y->rank);
		int r = y->rank;
		int64_t L = r > 0 ? y->shape[r - 1] : 1;
		for (int d = 0; d < r; d++)
			idx[d] = 0;
		/* row by row of the output piece (its last dimension): a row that
		 * is one run of an input is copied (added) at once */
		for (int64_t f0 = 0; L > 0 && f0 < n; f0 += L) {
			int jr;
			int64_t at;
			if (L > 1 && move_run(o, in, k, y, idx, &jr, &at)) {
				if (!din)
					memcpy(out[k].data + f0, in[jr].data + at, (size_t)L * sizeof(double));
				else if (din[jr].data)
					for (int64_t i = 0; i < L; i++)
						din[jr].data[at + i] += y->data[f0 + i];
			} else {
				for (int64_t f = f0; f < f0 + L; f++) {
					if (r > 0)
						idx[r - 1] = f - f0;
					for (int d = 0; d < r; d++)
						g[d] = idx[d] + y->lo[d];
					int j;
					source_of(o, in, k, g, y, &j, gi);
					const struct vpiece *x = &in[j];
					for (int d = 0; d < x->rank; d++) {
						li[d] = gi[d] - x->lo[d];
						if (li[d] >= 0 && li[d] < x->shape[d])
							continue;
						if (din)
							fail(why, wn, "the gradient of output %d needs input %d elements "
							     "this rank does not hold", k, j);
						else
							fail(why, wn, "output %d element at dimension %d index %lld needs "
							     "input %d index %lld there, which this rank does not hold "
							     "(it holds %lld..%lld)", k, d, (long long)g[d], j,
							     (long long)gi[d], (long long)x->lo[d],
							     (long long)(x->lo[d] + x->shape[d] - 1));
						return VK_BROKEN;
					}
					if (!din)
						out[k].data[f] = x->data[ravel(li, x->shape, x->rank)];
					else if (din[j].data)
						din[j].data[ravel(li, x->shape, x->rank)] += y->data[f];
				}
				if (r > 0)
					idx[r - 1] = 0;
			}
			for (int d = r - 2; d >= 0; d--) { /* the next row */
				if (++idx[d] < y->shape[d])
					break;
				idx[d] = 0;
			}
		}
	}
	return VK_OK;
}

static enum vk_status k_move(const struct op *o, const struct vpiece *in, struct vpiece *out,
                             char *why, size_t wn)
{
	return walk_move(o, in, out, out, NULL, why, wn);
}

/* Gather(table [V, h...], indices [i...]) -> [i..., h...]: rows the rank
 * holds, zeros for the others (their owners add them in). */
static enum vk_status k_gather(const struct vpiece *in, struct vpiece *out, char *why, size_t wn)
{
	const struct vpiece *t = &in[0], *ix = &in[1];
	int64_t n = verify_elems(out->shape, out->rank), idx[GRAPH_MAX_RANK], ti[GRAPH_MAX_RANK];
	for (int64_t f = 0; f < n; f++) {
		unravel(f, out->shape, out->rank, idx);
		double v = ix->data[ravel(idx, ix->shape, ix->rank)];
		int64_t row = (int64_t)v - t->lo[0];
		if (v < 0 || (int64_t)v >= t->full[0]) {
			fail(why, wn, "index %g outside the table's %lld rows", v, (long long)t->full[0]);
			return VK_BROKEN;
		}
		if (row < 0 || row >= t->shape[0]) {
			out->data[f] = 0;
			continue;
		}
		ti[0] = row;
		for (int d = 1; d < t->rank; d++)
			ti[d] = idx[ix->rank + d - 1];
		out->data[f] = t->data[ravel(ti, t->shape, t->rank)];
	}
	return VK_OK;
}

/* Global (i, j) of a rank's 2-D box as a flat local position, -1 when
 * outside the box. */
static int64_t at2(const struct vpiece *p, int64_t i, int64_t j)
{
	i -= p->lo[0], j -= p->lo[1];
	if (i < 0 || i >= p->shape[0] || j < 0 || j >= p->shape[1])
		return -1;
	return i * p->shape[1] + j;
}

/* MoEDispatch(x [T, h], index [E, C]) -> slots [E, C, h]: slot (e, c)
 * holds token index[e, c]. */
static enum vk_status k_moe_dispatch(const struct vpiece *in, struct vpiece *out, char *why,
                                     size_t wn)
{
	const struct vpiece *x = &in[0], *ix = &in[1];
	for (int64_t e = 0; e < out->shape[0]; e++)
		for (int64_t c = 0; c < out->shape[1]; c++) {
			int64_t ge = out->lo[0] + e, gc = out->lo[1] + c, k = at2(ix, ge, gc);
			double tok = k >= 0 ? ix->data[k] : -1;
			for (int64_t h = 0; h < out->shape[2]; h++) {
				int64_t xi = at2(x, (int64_t)tok, out->lo[2] + h);
				if (k < 0 || xi < 0) {
					fail(why, wn, "slot (%lld, %lld) needs token %g, not on this rank",
					     (long long)ge, (long long)gc, tok);
					return VK_BROKEN;
				}
				out->data[(e * out->shape[1] + c) * out->shape[2] + h] = x->data[xi];
			}
		}
	return VK_OK;
}

/* Where pick j of token t reads (MoECombine): the slot's local (e, c) and
 * the probability's flat position; *held false when the rank does not
 * hold expert e (a partial sum: nothing to add); -1 when broken. */
static int moe_pick(const struct vpiece *y, const struct vpiece *ix, const struct vpiece *pr,
                    int64_t t, int64_t j, int64_t *e, int64_t *c, int64_t *pi)
{
	int64_t k = at2(ix, t, j);
	if (k < 0)
		return -1;
	int64_t flat = (int64_t)ix->data[k], C = y->full[1];
	int64_t ge = flat / C, gc = flat % C;
	*e = ge - y->lo[0];
	*c = gc - y->lo[1];
	if (*e < 0 || *e >= y->shape[0])
		return 0;
	*pi = at2(pr, t, ge);
	return *c < 0 || *c >= y->shape[1] || *pi < 0 ? -1 : 1;
}

/* MoECombine(slots [E, C, h], index [T, k], probs [T, E]) -> [T, h]. */
static enum vk_status k_moe_combine(const struct vpiece *in, struct vpiece *out, char *why,
                                    size_t wn)
{
	const struct vpiece *y = &in[0], *ix = &in[1], *pr = &in[2];
	if (y->lo[2] != out->lo[1] || y->shape[2] != out->shape[1]) {
		fail(why, wn, "the slots' hidden columns differ from the output's");
		return VK_BROKEN;
	}
	for (int64_t t = 0; t < out->shape[0]; t++)
		for (int64_t h = 0; h < out->shape[1]; h++) {
			double acc = 0;
			for (int64_t j = ix->lo[1]; j < ix->lo[1] + ix->shape[1]; j++) {
				int64_t e, c, pi, gt = out->lo[0] + t;
				int held = moe_pick(y, ix, pr, gt, j, &e, &c, &pi);
				if (held < 0) {
					fail(why, wn, "token %lld's pick %lld reads a slot or probability "
					     "not on this rank", (long long)gt, (long long)j);
					return VK_BROKEN;
				}
				if (held)
					acc += pr->data[pi] * y->data[(e * y->shape[1] + c) * y->shape[2] + h];
			}
			out->data[t * out->shape[1] + h] = acc;
		}
	return VK_OK;
}

/* SoftmaxCrossEntropy(logits [N, V], labels [N]) -> [N], per row
 * log(sum exp) - the label's logit, when the rank holds every class. */
static enum vk_status k_sce(const struct vpiece *in, struct vpiece *out, char *why, size_t wn)
{
	const struct vpiece *l = &in[0], *lab = &in[1];
	if (l->shape[1] != l->full[1]) {
		fail(why, wn, "op kind SoftmaxCrossEntropy with a cut class dimension unsupported");
		return VK_UNSUPPORTED;
	}
	int64_t v = l->shape[1];
	for (int64_t i = 0; i < out->shape[0]; i++) {
		const double *x = l->data + i * v;
		double m = -INFINITY, s = 0;
		for (int64_t c = 0; c < v; c++)
			m = fmax(m, x[c]);
		for (int64_t c = 0; c < v; c++)
			s += exp(x[c] - m);
		int64_t c = (int64_t)lab->data[i];
		if (c < 0 || c >= v) {
			fail(why, wn, "label %lld outside the %lld classes", (long long)c, (long long)v);
			return VK_BROKEN;
		}
		out->data[i] = log(s) + m - x[c];
	}
	return VK_OK;
}

enum vk_status verify_kernel(const struct graph *g, int op, const struct vpiece *in,
                             struct vpiece *out, uint64_t salt, char *why, size_t why_size)
{
	const struct op *o = &g->ops[op];
	switch (o->kind) {
	case OP_MATMUL:
	case OP_BATCHMATMUL:
		return k_matmul(o, in, out, why, why_size);
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_BIASADD:
		return k_binary(o, in, out, why, why_size);
	case OP_RELU:
	case OP_GELU:
	case OP_SILU:
	case OP_SIGMOID:
	case OP_DROPOUT:
	case OP_CAST:
		return k_unary(o, in, out, salt);
	case OP_SOFTMAX:
		return k_softmax(o, in, out, why, why_size);
	case OP_LAYERNORM:
	case OP_RMSNORM:
		return k_norm(o, in, out, why, why_size);
	case OP_REDUCESUM:
	case OP_REDUCEMEAN:
		return k_reduce(o, in, out);
	case OP_TRANSPOSE:
		return k_transpose(o, in, out);
	case OP_RESHAPE:
	case OP_STRIDEDSLICE:
	case OP_CONCAT:
	case OP_SPLIT:
		return k_move(o, in, out, why, why_size);
	case OP_GATHER:
		return k_gather(in, out, why, why_size);
	case OP_SOFTMAXCROSSENTROPY:
		return k_sce(in, out, why, why_size);
	case OP_MOEDISPATCH:
		return k_moe_dispatch(in, out, why, why_size);
	case OP_MOECOMBINE:
		return k_moe_combine(in, out, why, why_size);
	default:
		fail(why, why_size, "op kind %s unsupported", op_kind_name(o->kind));
		return VK_UNSUPPORTED;
	}
}

/* ------------------------------------------------------ the backward */

/* MoEDispatch: each slot's gradient back to its token. */
static enum vk_status v_moe_dispatch(const struct vpiece *in, const struct vpiece *dy,
                                     struct vpiece *din)
{
	const struct vpiece *x = &in[0], *ix = &in[1];
	if (!din[0].data)
		return VK_OK;
	for (int64_t e = 0; e < dy->shape[0]; e++)
		for (int64_t c = 0; c < dy->shape[1]; c++) {
			int64_t k = at2(ix, dy->lo[0] + e, dy->lo[1] + c);
			for (int64_t h = 0; k >= 0 && h < dy->shape[2]; h++) {
				int64_t xi = at2(x, (int64_t)ix->data[k], dy->lo[2] + h);
				if (xi >= 0)
					din[0].data[xi] += dy->data[(e * dy->shape[1] + c) * dy->shape[2] + h];
			}
		}
	return VK_OK;
}

/* MoECombine: dSlots = p·dY at each pick's slot, dProbs = slot · dY. */
static enum vk_status v_moe_combine(const struct vpiece *in, const struct vpiece *dy,
                                    struct vpiece *din)
{
	const struct vpiece *y = &in[0], *ix = &in[1], *pr = &in[2];
	for (int64_t t = 0; t < dy->shape[0]; t++)
		for (int64_t j = ix->lo[1]; j < ix->lo[1] + ix->shape[1]; j++) {
			int64_t e, c, pi;
			if (moe_pick(y, ix, pr, dy->lo[0] + t, j, &e, &c, &pi) <= 0)
				continue;
			for (int64_t h = 0; h < dy->shape[1]; h++) {
				int64_t yi = (e * y->shape[1] + c) * y->shape[2] + h;
				double g = dy->data[t * dy->shape[1] + h];
				if (din[0].data)
					din[0].data[yi] += pr->data[pi] * g;
				if (din[2].data)
					din[2].data[pi] += y->data[yi] * g;
			}
		}
	return VK_OK;
}

/* dX and dW of a GEMM, accumulated (beta 1): with A = op(X), B = op(W),
 * Y = A B: dA = dY B^T and dB = A^T dY, then undone through the
 * transposes (dX = dA, or dA^T when X was transposed). */
static enum vk_status v_matmul(const struct op *o, const struct vpiece *in,
                               const struct vpiece *dy, struct vpiece *din, char *why, size_t wn)
{
	const struct vpiece *x = &in[0], *w = &in[1];
	int r = x->rank;
	bool ta = o->attrs.transpose_a, tb = o->attrs.transpose_b;
	int64_t batch = verify_elems(x->shape, r - 2);
	size_t xr = (size_t)x->shape[r - 2], xc = (size_t)x->shape[r - 1];
	size_t wr = (size_t)w->shape[r - 2], wc = (size_t)w->shape[r - 1];
	size_t ym = (size_t)dy->shape[r - 2], yn = (size_t)dy->shape[r - 1];
	for (int64_t b = 0; b < batch; b++) {
		gsl_matrix_const_view X = gsl_matrix_const_view_array(x->data + (size_t)b * xr * xc, xr, xc);
		gsl_matrix_const_view W = gsl_matrix_const_view_array(w->data + (size_t)b * wr * wc, wr, wc);
		gsl_matrix_const_view G = gsl_matrix_const_view_array(dy->data + (size_t)b * ym * yn, ym, yn);
		int rc = GSL_SUCCESS;
		if (din[0].data) {
			gsl_matrix_view DX = gsl_matrix_view_array(din[0].data + (size_t)b * xr * xc, xr, xc);
			/* dA = G op(W)^T; dX = dA (ta: dA^T = op(W) G^T) */
			if (!ta)
				rc = gsl_blas_dgemm(CblasNoTrans, tb ? CblasNoTrans : CblasTrans, 1.0, &G.matrix,
				                    &W.matrix, 1.0, &DX.matrix);
			else
				rc = gsl_blas_dgemm(tb ? CblasTrans : CblasNoTrans, CblasTrans, 1.0, &W.matrix,
				                    &G.matrix, 1.0, &DX.matrix);
		}
		if (rc == GSL_SUCCESS && din[1].data) {
			gsl_matrix_view DW = gsl_matrix_view_array(din[1].data + (size_t)b * wr * wc, wr, wc);
			/* dB = op(X)^T G; dW = dB (tb: dB^T = G^T op(X)) */
			if (!tb)
				rc = gsl_blas_dgemm(ta ? CblasNoTrans : CblasTrans, CblasNoTrans, 1.0, &X.matrix,
				                    &G.matrix, 1.0, &DW.matrix);
			else
				rc = gsl_blas_dgemm(CblasTrans, ta ? CblasTrans : CblasNoTrans, 1.0, &G.matrix,
				                    &X.matrix, 1.0, &DW.matrix);
		}
		if (rc != GSL_SUCCESS) {
			fail(why, wn, "gsl_blas_dgemm: %s", gsl_strerror(rc));
			return VK_BROKEN;
		}
	}
	return VK_OK;
}

static enum vk_status v_binary(const struct op *o, const struct vpiece *in,
                               const struct vpiece *dy, struct vpiece *din)
{
	int r = dy->rank;
	int64_t n = verify_elems(dy->shape, r), idx[GRAPH_MAX_RANK] = {0}, ix[GRAPH_MAX_RANK];
	for (int64_t f = 0; f < n; f++, next_index(idx, dy->shape, r)) {
		int64_t at[2];
		double v[2];
		for (int i = 0; i < 2; i++) {
			const struct vpiece *p = &in[i];
			for (int d = 0; d < p->rank; d++)
				ix[d] = p->shape[d] == 1 ? 0 : idx[r - p->rank + d];
			at[i] = ravel(ix, p->shape, p->rank);
			v[i] = p->data[at[i]];
		}
		double gy = dy->data[f];
		for (int i = 0; i < 2; i++) {
			if (!din[i].data)
				continue;
			double gi = o->kind == OP_MUL ? gy * v[1 - i] : o->kind == OP_SUB && i ? -gy : gy;
			din[i].data[at[i]] += gi;
		}
	}
	return VK_OK;
}

static enum vk_status v_unary(const struct op *o, const struct vpiece *in,
                              const struct vpiece *dy, struct vpiece *din, uint64_t salt)
{
	int64_t n = verify_elems(dy->shape, dy->rank), idx[GRAPH_MAX_RANK] = {0};
	int64_t gx[GRAPH_MAX_RANK];
	double keep = o->attrs.keep_prob > 0 ? o->attrs.keep_prob : 1;
	bool dropout = o->kind == OP_DROPOUT;
	if (!din[0].data)
		return VK_OK;
	for (int64_t f = 0; f < n; f++) {
		double x = in[0].data[f], g = dy->data[f], d = 1;
		switch (o->kind) {
		case OP_RELU:
			d = x > 0 ? 1 : 0;
			break;
		case OP_GELU:
			d = 0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-0.5 * x * x) / sqrt(2 * 3.14159265358979323846);
			break;
		case OP_SILU: {
			double s = 1 / (1 + exp(-x));
			d = s + x * s * (1 - s);
			break;
		}
		case OP_SIGMOID: {
			double s = 1 / (1 + exp(-x));
			d = s * (1 - s);
			break;
		}
		case OP_DROPOUT: {
			for (int k = 0; k < dy->rank; k++)
				gx[k] = idx[k] + dy->lo[k];
			uint64_t gk = (uint64_t)ravel(gx, dy->full, dy->rank);
			d = verify_hash01(salt * 0x100000001b3ull ^ gk) < keep ? 1 / keep : 0;
			break;
		}
		default:
			break;
		}
		din[0].data[f] += g * d;
		if (dropout)
			next_index(idx, dy->shape, dy->rank);
	}
	return VK_OK;
}

static enum vk_status v_softmax(const struct op *o, const struct vpiece *in,
                                const struct vpiece *dy, struct vpiece *din)
{
	int r = dy->rank, ax = norm_axis(o->attrs.axis, r);
	int64_t outer = verify_elems(in->shape, ax), len = in->shape[ax];
	int64_t inner = verify_elems(in->shape + ax + 1, r - ax - 1);
	if (!din[0].data)
		return VK_OK;
	double *y = calloc((size_t)len, sizeof(double));
	if (!y)
		return VK_BROKEN;
	for (int64_t a = 0; a < outer; a++)
		for (int64_t c = 0; c < inner; c++) {
			size_t base = (size_t)(a * len * inner + c);
			const double *x = in->data + base, *g = dy->data + base;
			double m = -INFINITY, s = 0, dot = 0;
			for (int64_t i = 0; i < len; i++)
				m = fmax(m, x[i * inner]);
			for (int64_t i = 0; i < len; i++)
				s += exp(x[i * inner] - m);
			for (int64_t i = 0; i < len; i++) {
				y[i] = exp(x[i * inner] - m) / s;
				dot += y[i] * g[i * inner];
			}
			for (int64_t i = 0; i < len; i++)
				din[0].data[base + (size_t)(i * inner)] += y[i] * (g[i * inner] - dot);
		}
	free(y);
	return VK_OK;
}

static enum vk_status v_norm(const struct op *o, const struct vpiece *in,
                             const struct vpiece *dy, struct vpiece *din)
{
	int r = dy->rank, ax = norm_axis(o->attrs.axis, r);
	int64_t outer = verify_elems(in->shape, ax), len = verify_elems(in->shape + ax, r - ax);
	bool ln = o->kind == OP_LAYERNORM;
	const double *gamma = o->n_in > 1 ? in[1].data : NULL;
	for (int64_t a = 0; a < outer; a++) {
		const double *x = in->data + a * len, *g = dy->data + a * len;
		double mean = 0, var = 0, s1 = 0, s2 = 0;
		if (ln) {
			for (int64_t i = 0; i < len; i++)
				mean += x[i];
			mean /= (double)len;
		}
		for (int64_t i = 0; i < len; i++)
			var += (x[i] - mean) * (x[i] - mean);
		double inv = 1 / sqrt(var / (double)len + NORM_EPS);
		for (int64_t i = 0; i < len; i++) {
			double xh = (x[i] - mean) * inv, gh = g[i] * (gamma ? gamma[i] : 1);
			if (o->n_in > 1 && din[1].data)
				din[1].data[i] += g[i] * xh;
			if (ln && o->n_in > 2 && din[2].data)
				din[2].data[i] += g[i];
			s1 += gh;
			s2 += gh * xh;
		}
		if (!din[0].data)
			continue;
		for (int64_t i = 0; i < len; i++) {
			double xh = (x[i] - mean) * inv, gh = g[i] * (gamma ? gamma[i] : 1);
			din[0].data[a * len + i] +=
			    ln ? inv * (gh - s1 / (double)len - xh * s2 / (double)len)
			       : inv * (gh - xh * s2 / (double)len);
		}
	}
	return VK_OK;
}

static enum vk_status v_reduce(const struct op *o, const struct vpiece *in,
                               const struct vpiece *dy, struct vpiece *din)
{
	int r = in->rank;
	bool red[GRAPH_MAX_RANK] = {false};
	double count = reduced_axes(o, in, red);
	double scale = o->kind == OP_REDUCEMEAN ? 1 / count : 1;
	int64_t m = verify_elems(in->shape, r), idx[GRAPH_MAX_RANK] = {0}, oi[GRAPH_MAX_RANK];
	if (!din[0].data)
		return VK_OK;
	for (int64_t f = 0; f < m; f++, next_index(idx, in->shape, r)) {
		int k = 0;
		for (int d = 0; d < r; d++) {
			if (!red[d])
				oi[k++] = idx[d];
			else if (o->attrs.keep_dims)
				oi[k++] = 0;
		}
		din[0].data[f] += scale * dy->data[ravel(oi, dy->shape, dy->rank)];
	}
	return VK_OK;
}

static enum vk_status v_transpose(const struct op *o, const struct vpiece *in,
                                  const struct vpiece *dy, struct vpiece *din)
{
	int r = in->rank;
	int64_t n = verify_elems(dy->shape, r), idx[GRAPH_MAX_RANK] = {0}, ix[GRAPH_MAX_RANK];
	if (!din[0].data)
		return VK_OK;
	for (int64_t f = 0; f < n; f++, next_index(idx, dy->shape, r)) {
		for (int d = 0; d < r; d++)
			ix[o->attrs.perm[d]] = idx[d];
		din[0].data[ravel(ix, in->shape, r)] += dy->data[f];
	}
	return VK_OK;
}

static enum vk_status v_move(const struct op *o, const struct vpiece *in,
                             const struct vpiece *dy, struct vpiece *din, char *why, size_t wn)
{
	return walk_move(o, in, dy, NULL, din, why, wn);
}

static enum vk_status v_gather(const struct vpiece *in, const struct vpiece *dy,
                               struct vpiece *din)
{
	const struct vpiece *t = &in[0], *ix = &in[1];
	int64_t n = verify_elems(dy->shape, dy->rank), idx[GRAPH_MAX_RANK], ti[GRAPH_MAX_RANK];
	if (!din[0].data)
		return VK_OK;
	for (int64_t f = 0; f < n; f++) {
		unravel(f, dy->shape, dy->rank, idx);
		int64_t row = (int64_t)ix->data[ravel(idx, ix->shape, ix->rank)] - t->lo[0];
		if (row < 0 || row >= t->shape[0])
			continue;
		ti[0] = row;
		for (int d = 1; d < t->rank; d++)
			ti[d] = idx[ix->rank + d - 1];
		din[0].data[ravel(ti, t->shape, t->rank)] += dy->data[f];
	}
	return VK_OK;
}

/* d loss_i / d logit_ic = softmax_ic - [c = label_i]; with the whole
 * row's max and sum of exponentials from the caller when the rank holds
 * only some classes. */
static enum vk_status v_sce(const struct vpiece *in, const struct vpiece *dy, struct vpiece *din,
                            const double *rmax, const double *rsum)
{
	const struct vpiece *l = &in[0], *lab = &in[1];
	int64_t v = l->shape[1];
	if (!din[0].data)
		return VK_OK;
	for (int64_t i = 0; i < dy->shape[0]; i++) {
		const double *x = l->data + i * v;
		double m, s = 0;
		if (rmax) {
			m = rmax[i];
			s = rsum[i];
		} else {
			m = -INFINITY;
			for (int64_t c = 0; c < v; c++)
				m = fmax(m, x[c]);
			for (int64_t c = 0; c < v; c++)
				s += exp(x[c] - m);
		}
		int64_t cls = (int64_t)lab->data[i] - l->lo[1];
		for (int64_t c = 0; c < v; c++)
			din[0].data[i * v + c] += dy->data[i] * (exp(x[c] - m) / s - (c == cls ? 1 : 0));
	}
	return VK_OK;
}

enum vk_status verify_vjp(const struct graph *g, int op, const struct vpiece *in,
                          const struct vpiece *dout, struct vpiece *din, const double *rmax,
                          const double *rsum, uint64_t salt, char *why, size_t why_size)
{
	const struct op *o = &g->ops[op];
	switch (o->kind) {
	case OP_MATMUL:
	case OP_BATCHMATMUL:
		return v_matmul(o, in, dout, din, why, why_size);
	case OP_ADD:
	case OP_SUB:
	case OP_MUL:
	case OP_BIASADD:
		return v_binary(o, in, dout, din);
	case OP_RELU:
	case OP_GELU:
	case OP_SILU:
	case OP_SIGMOID:
	case OP_DROPOUT:
	case OP_CAST:
		return v_unary(o, in, dout, din, salt);
	case OP_SOFTMAX:
		return v_softmax(o, in, dout, din);
	case OP_LAYERNORM:
	case OP_RMSNORM:
		return v_norm(o, in, dout, din);
	case OP_REDUCESUM:
	case OP_REDUCEMEAN:
		return v_reduce(o, in, dout, din);
	case OP_TRANSPOSE:
		return v_transpose(o, in, dout, din);
	case OP_RESHAPE:
	case OP_STRIDEDSLICE:
	case OP_CONCAT:
	case OP_SPLIT:
		return v_move(o, in, dout, din, why, why_size);
	case OP_GATHER:
		return v_gather(in, dout, din);
	case OP_SOFTMAXCROSSENTROPY:
		return v_sce(in, dout, din, rmax, rsum);
	case OP_MOEDISPATCH:
		return v_moe_dispatch(in, dout, din);
	case OP_MOECOMBINE:
		return v_moe_combine(in, dout, din);
	default:
		fail(why, why_size, "the gradient of op kind %s unsupported", op_kind_name(o->kind));
		return VK_UNSUPPORTED;
	}
}
