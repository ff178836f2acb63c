/* scale.c — a plan shrunk for verification: which dimension sizes shrink
 * by the scale, and which must stay.
 *
 * A size v shrinks by as much of the scale S as keeps every cut the plan
 * makes of a dimension of that size dividing it: with c the lcm of its
 * slices over every layout of every op, op communication step and
 * redistribution step, v becomes v / gcd(S, v / c). Every layout then
 * stays valid with the same maps and device matrices.
 * Sizes are the unit, not tensors: the same size always shrinks the same
 * way, so a label keeps one size in every tensor that carries it. Ops that
 * relate sizes by arithmetic (Reshape's runs of equal products, Concat's
 * sum, Split's parts, StridedSlice's absolute bounds) could break; a
 * Reshape's two sides then shrink by the gcd of their factors, the other
 * ops keep the sizes involved whole, and the check repeats until nothing
 * breaks (it ends: every round divides some factor, and 1 stays 1).
 *
 * Units: element counts int64_t. No hot path: a few passes over the plan.
 */
#include <stdlib.h>
#include <string.h>

#include "verify-int.h"

static int find(const struct verify_scaling *sc, int64_t v)
{
	for (int i = 0; i < sc->n; i++)
		if (sc->value[i] == v)
			return i;
	return -1;
}

static void need(struct verify_scaling *sc, const struct layout *l)
{
	for (int d = 0; d < l->rank; d++) {
		int i = find(sc, l->shape[d]);
		if (i < 0)
			continue;
		int64_t k = layout_slices(l, d), r = sc->req[i];
		sc->req[i] = r / util_gcd64(r, k) * k;
	}
}

int64_t verify_scaling_dim(const struct verify_scaling *sc, int64_t v)
{
	int i = find(sc, v);
	return i < 0 ? v : v / sc->f[i];
}

/* Keeps v whole; true if that changed anything. */
static bool freeze(struct verify_scaling *sc, int64_t v)
{
	int i = find(sc, v);
	if (i < 0 || sc->f[i] == 1)
		return false;
	sc->f[i] = 1;
	return true;
}

/* The product of the shrink factors of dims [lo, hi) of t; -1 on overflow. */
static int64_t factor_product(const struct verify_scaling *sc, const struct tensor *t, int lo,
                              int hi)
{
	int64_t p = 1;
	for (int d = lo; d < hi; d++) {
		int i = find(sc, t->dims[d]);
		if (i >= 0 && !util_mul_i64(p, sc->f[i], &p))
			return -1;
	}
	return p;
}

/* Divides the factors of dims [lo, hi) of t by `by` in all (it divides
 * their product), the first dims first. */
static bool reduce(struct verify_scaling *sc, const struct tensor *t, int lo, int hi, int64_t by)
{
	bool any = false;
	for (int d = lo; d < hi && by > 1; d++) {
		int i = find(sc, t->dims[d]);
		if (i < 0)
			continue;
		int64_t g = util_gcd64(sc->f[i], by);
		if (g > 1) {
			sc->f[i] /= g;
			by /= g;
			any = true;
		}
	}
	return any;
}

static bool freeze_range(struct verify_scaling *sc, const struct tensor *t, int lo, int hi)
{
	bool any = false;
	for (int d = lo; d < hi; d++)
		any |= freeze(sc, t->dims[d]);
	return any;
}

/* Reshape: consecutive runs of input and output dims with equal products
 * must keep equal products: where the factors of the two sides differ,
 * both are cut down to their gcd ([h] -> [heads, hd] shrinks h by as much
 * as heads and hd shrink together). */
static bool fix_reshape(struct verify_scaling *sc, const struct tensor *x, const struct tensor *y)
{
	int i = 0, j = 0;
	bool any = false;
	while (i < x->rank || j < y->rank) {
		int i0 = i, j0 = j;
		int64_t p = i < x->rank ? x->dims[i++] : 1, q = j < y->rank ? y->dims[j++] : 1;
		while (p != q && (i < x->rank || j < y->rank)) {
			if ((p < q && i < x->rank) || j >= y->rank)
				p *= x->dims[i++];
			else
				q *= y->dims[j++];
		}
		int64_t fl = factor_product(sc, x, i0, i), fr = factor_product(sc, y, j0, j);
		if (fl == fr)
			continue;
		if (fl < 0 || fr < 0) {
			any |= freeze_range(sc, x, i0, i);
			any |= freeze_range(sc, y, j0, j);
			continue;
		}
		int64_t g = util_gcd64(fl, fr);
		any |= reduce(sc, x, i0, i, fl / g);
		any |= reduce(sc, y, j0, j, fr / g);
	}
	return any;
}

/* One pass over the ops that relate sizes; true when it changed any. */
static bool fix_ops(struct verify_scaling *sc, const struct graph *g)
{
	bool any = false;
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *o = &g->ops[i];
		const struct tensor *x = &g->tensors[o->in[0]], *y = &g->tensors[o->out[0]];
		switch (o->kind) {
		case OP_RESHAPE:
			any |= fix_reshape(sc, x, y);
			break;
		case OP_STRIDEDSLICE:
			for (int d = 0; d < x->rank && d < y->rank; d++)
				if (x->dims[d] != y->dims[d]) {
					any |= freeze(sc, x->dims[d]);
					any |= freeze(sc, y->dims[d]);
				}
			break;
		case OP_CONCAT:
		case OP_SPLIT: {
			int ax = o->attrs.axis < 0 ? o->attrs.axis + y->rank : o->attrs.axis;
			const struct tensor *w = o->kind == OP_CONCAT ? y : x;
			int64_t whole = verify_scaling_dim(sc, w->dims[ax]), parts = 0;
			int n = o->kind == OP_CONCAT ? o->n_in : o->n_out;
			for (int k = 0; k < n; k++) {
				int t = o->kind == OP_CONCAT ? o->in[k] : o->out[k];
				parts += verify_scaling_dim(sc, g->tensors[t].dims[ax]);
			}
			if (whole != parts) {
				any |= freeze(sc, w->dims[ax]);
				for (int k = 0; k < n; k++) {
					int t = o->kind == OP_CONCAT ? o->in[k] : o->out[k];
					any |= freeze(sc, g->tensors[t].dims[ax]);
				}
			}
			break;
		}
		default:
			break;
		}
	}
	return any;
}

bool verify_scaling_init(struct verify_scaling *sc, const struct plan *p, int64_t scale)
{
	const struct graph *g = p->graph;
	memset(sc, 0, sizeof(*sc));
	sc->scale = scale;
	size_t cap = 1;
	for (int t = 0; t < g->n_tensors; t++)
		cap += (size_t)g->tensors[t].rank;
	sc->value = calloc(cap, sizeof(*sc->value));
	sc->req = calloc(cap, sizeof(*sc->req));
	sc->f = calloc(cap, sizeof(*sc->f));
	if (!sc->value || !sc->req || !sc->f) {
		verify_scaling_free(sc);
		return false;
	}
	for (int t = 0; t < g->n_tensors; t++)
		for (int d = 0; d < g->tensors[t].rank; d++)
			if (find(sc, g->tensors[t].dims[d]) < 0) {
				sc->value[sc->n] = g->tensors[t].dims[d];
				sc->req[sc->n++] = 1;
			}
	for (int i = 0; i < g->n_ops; i++) {
		const struct dist_op *d = &p->ops[i];
		for (int j = 0; j < d->n_in; j++)
			need(sc, &d->in[j]);
		for (int k = 0; k < d->n_out; k++) {
			need(sc, &d->out_partial[k]);
			need(sc, &d->out[k]);
		}
		for (int k = 0; k < d->n_comm; k++)
			need(sc, &d->comm[k].after);
	}
	for (int e = 0; e < p->n_edges; e++)
		for (int k = 0; k < p->edges[e].redist.n_steps; k++)
			need(sc, &p->edges[e].redist.steps[k].after);
	for (int i = 0; i < sc->n; i++)
		sc->f[i] = sc->value[i] / verify_scaled_dim(sc->value[i], scale, sc->req[i]);
	while (fix_ops(sc, g))
		;
	return true;
}

void verify_scaling_free(struct verify_scaling *sc)
{
	free(sc->value);
	free(sc->req);
	free(sc->f);
	memset(sc, 0, sizeof(*sc));
}
