/* layout.c — device matrices and tensor layouts.
 *
 * A device matrix is a list of axis sizes, major first, over the ranks
 * base .. base+N-1 in row-major order: for [2, 1, 4], rank 5 has
 * coordinates (1, 0, 1). A layout maps each tensor dimension to the axes
 * that split it, major first: the slice index of dimension d on a rank is
 * the mixed-radix number its coordinates on those axes form, and the rank
 * holds [s*n/S, (s+1)*n/S) of that dimension (n its size, S the number of
 * slices). Axes used by no dimension replicate the tensor; partial axes
 * hold partial sums.
 *
 * Two descriptions of one placement are compared on the common refinement
 * of their device matrices: the coarsest list of axes whose boundaries
 * (the strides of row-major order) include the boundaries of both.
 *
 * Units: element counts int64_t, bytes double. No hot path: planning
 * calls these per op and per candidate strategy, never per element.
 */
#include <string.h>

#include "layout.h"

bool devmat_init(struct devmat *dm, int n, const int64_t *sizes, const char *const *names,
                 int64_t base)
{
	memset(dm, 0, sizeof(*dm));
	if (n < 0 || n > PLAN_MAX_AXES)
		return false;
	dm->n = n;
	dm->base = base;
	dm->n_devices = 1;
	for (int i = 0; i < n; i++) {
		if (sizes[i] < 1 || !util_mul_i64(dm->n_devices, sizes[i], &dm->n_devices))
			return false;
		dm->size[i] = sizes[i];
		dm->name[i] = names ? names[i] : NULL;
	}
	return true;
}

void devmat_coords(const struct devmat *dm, int64_t rank, int64_t coord[PLAN_MAX_AXES])
{
	SL_ASSERT(rank >= dm->base && rank < dm->base + dm->n_devices);
	int64_t r = rank - dm->base;
	for (int i = dm->n - 1; i >= 0; i--) {
		coord[i] = r % dm->size[i];
		r /= dm->size[i];
	}
}

int64_t devmat_rank(const struct devmat *dm, const int64_t coord[PLAN_MAX_AXES])
{
	int64_t r = 0;
	for (int i = 0; i < dm->n; i++)
		r = r * dm->size[i] + coord[i];
	return dm->base + r;
}

bool devmat_groups(const struct devmat *dm, const int *axes, int n_axes, struct rank_groups *out)
{
	memset(out, 0, sizeof(*out));
	int64_t size = 1;
	bool in_group[PLAN_MAX_AXES] = {false};
	for (int k = 0; k < n_axes; k++) {
		SL_ASSERT(axes[k] >= 0 && axes[k] < dm->n && !in_group[axes[k]]);
		in_group[axes[k]] = true;
		size *= dm->size[axes[k]];
		out->axes[k] = (int8_t)axes[k];
	}
	int64_t n_groups = dm->n_devices / size;
	if (size > INT32_MAX || n_groups > INT32_MAX)
		return false;
	out->size = (int)size;
	out->n_groups = (int)n_groups;
	out->dm = *dm;
	out->n_axes = n_axes;
	return true;
}

/* A canonical form of rank groups: the (size, stride) of the axes that
 * count members (in member order) or groups (row-major), without axes of
 * size 1 and with an axis merged into the one before it when the two are
 * contiguous. */
static int groups_canon(const struct rank_groups *g, bool members, int64_t out[PLAN_MAX_AXES][2])
{
	const struct devmat *dm = &g->dm;
	int64_t stride[PLAN_MAX_AXES];
	bool in_group[PLAN_MAX_AXES] = {false};
	int64_t st = 1;
	for (int i = dm->n - 1; i >= 0; i--) {
		stride[i] = st;
		st *= dm->size[i];
	}
	for (int k = 0; k < g->n_axes; k++)
		in_group[g->axes[k]] = true;
	int n = 0, count = members ? g->n_axes : dm->n;
	for (int k = 0; k < count; k++) {
		int ax = members ? g->axes[k] : k;
		if ((!members && in_group[ax]) || dm->size[ax] == 1)
			continue;
		int64_t size = dm->size[ax], str = stride[ax];
		if (n > 0 && out[n - 1][1] == size * str) {
			out[n - 1][0] *= size;
			out[n - 1][1] = str;
		} else {
			out[n][0] = size;
			out[n++][1] = str;
		}
	}
	return n;
}

int rank_groups_key(const struct rank_groups *g, int64_t w[RANK_GROUPS_KEY_WORDS])
{
	int n = 0;
	w[n++] = g->size;
	w[n++] = g->n_groups;
	w[n++] = g->dm.base;
	for (int members = 0; members <= 1; members++) {
		int64_t f[PLAN_MAX_AXES][2];
		int m = groups_canon(g, members, f);
		for (int k = 0; k < m; k++) {
			w[n++] = f[k][0];
			w[n++] = f[k][1];
		}
		w[n++] = -1;  /* the form ends */
	}
	return n;
}

int64_t rank_groups_rank(const struct rank_groups *g, int group, int member)
{
	SL_ASSERT(group >= 0 && group < g->n_groups && member >= 0 && member < g->size);
	const struct devmat *dm = &g->dm;
	bool in_group[PLAN_MAX_AXES] = {false};
	int64_t coord[PLAN_MAX_AXES] = {0};
	for (int k = 0; k < g->n_axes; k++)
		in_group[g->axes[k]] = true;
	/* The other axes count groups row-major (so groups come ordered by
	 * their first rank); the group's axes count members in the order given. */
	int64_t rest = group;
	for (int i = dm->n - 1; i >= 0; i--) {
		if (in_group[i])
			continue;
		coord[i] = rest % dm->size[i];
		rest /= dm->size[i];
	}
	int64_t x = member;
	for (int k = g->n_axes - 1; k >= 0; k--) {
		coord[g->axes[k]] = x % dm->size[g->axes[k]];
		x /= dm->size[g->axes[k]];
	}
	return devmat_rank(dm, coord);
}

/* Member m is member 0 plus the strides of m's digits on the group's axes
 * (the last axis fastest): an odometer over those digits. */
void rank_groups_members(const struct rank_groups *g, int group, int64_t *out)
{
	const struct devmat *dm = &g->dm;
	int64_t stride[PLAN_MAX_AXES], digit[PLAN_MAX_AXES] = {0}, st = 1;
	for (int i = dm->n - 1; i >= 0; i--) {
		stride[i] = st;
		st *= dm->size[i];
	}
	int64_t r = rank_groups_rank(g, group, 0);
	for (int m = 0; m < g->size; m++) {
		out[m] = r;
		for (int k = g->n_axes - 1; k >= 0; k--) {
			int ax = g->axes[k];
			if (++digit[k] < dm->size[ax]) {
				r += stride[ax];
				break;
			}
			digit[k] = 0;
			r -= (dm->size[ax] - 1) * stride[ax];
		}
	}
}

/* ----------------------------------------------------------------- layouts */

void layout_init(struct layout *l, const struct devmat *dm, const struct tensor *t)
{
	memset(l, 0, sizeof(*l));
	l->dm = *dm;
	l->dtype = t->dtype;
	l->rank = t->rank;
	memcpy(l->shape, t->dims, sizeof(l->shape));
}

int64_t layout_slices(const struct layout *l, int d)
{
	int64_t s = 1;
	for (int k = 0; k < l->n_map[d]; k++)
		s *= l->dm.size[l->map[d][k]];
	return s;
}

void layout_slice(const struct layout *l, int64_t rank, int64_t lo[GRAPH_MAX_RANK],
                  int64_t hi[GRAPH_MAX_RANK])
{
	int64_t coord[PLAN_MAX_AXES];
	devmat_coords(&l->dm, rank, coord);
	for (int d = 0; d < l->rank; d++) {
		int64_t s = 0;
		for (int k = 0; k < l->n_map[d]; k++)
			s = s * l->dm.size[l->map[d][k]] + coord[l->map[d][k]];
		int64_t len = l->shape[d] / layout_slices(l, d);
		lo[d] = s * len;
		hi[d] = lo[d] + len;
	}
}

void layout_local_shape(const struct layout *l, int64_t shape[GRAPH_MAX_RANK])
{
	for (int d = 0; d < l->rank; d++)
		shape[d] = l->shape[d] / layout_slices(l, d);
}

int64_t layout_local_elems(const struct layout *l)
{
	int64_t shape[GRAPH_MAX_RANK], n = 1;
	layout_local_shape(l, shape);
	for (int d = 0; d < l->rank; d++)
		n *= shape[d];
	return n;
}

double layout_local_bytes(const struct layout *l)
{
	return (double)layout_local_elems(l) * (double)dtype_bytes(l->dtype);
}

bool layout_valid(const struct layout *l)
{
	uint32_t used = 0;
	for (int d = 0; d < l->rank; d++) {
		for (int k = 0; k < l->n_map[d]; k++) {
			int a = l->map[d][k];
			if (a < 0 || a >= l->dm.n || (used & (1u << a)))
				return false;
			used |= 1u << a;
		}
		if (l->shape[d] % layout_slices(l, d))
			return false;
	}
	return (used & l->partial) == 0 && (l->partial >> l->dm.n) == 0;
}

uint32_t layout_replica_axes(const struct layout *l)
{
	uint32_t used = l->partial;
	for (int d = 0; d < l->rank; d++)
		for (int k = 0; k < l->n_map[d]; k++)
			used |= 1u << l->map[d][k];
	uint32_t rep = 0;
	for (int a = 0; a < l->dm.n; a++)
		if (!(used & (1u << a)) && l->dm.size[a] > 1)
			rep |= 1u << a;
	return rep;
}

int layout_tensor_map(const struct layout *l, int d, int out[PLAN_MAX_AXES])
{
	for (int k = 0; k < l->n_map[d]; k++)
		out[k] = l->dm.n - 1 - l->map[d][k];
	return l->n_map[d];
}

/* ------------------------------------------------------------- refinement */

/* Boundaries of a device matrix: the strides of its axes and N. Axis i
 * spans [stride_i, stride_i * size_i). */
static int boundaries(const struct devmat *dm, int64_t *b)
{
	int n = 0;
	int64_t stride = 1;
	b[n++] = 1;
	for (int i = dm->n - 1; i >= 0; i--) {
		stride *= dm->size[i];
		if (stride != b[n - 1])
			b[n++] = stride;
	}
	return n;
}

/* Rewrites l over `fine` (whose boundaries include l's). */
static void refine_onto(const struct layout *l, const struct devmat *fine, const int64_t *fb,
                        int nfb, struct layout *out)
{
	/* Axis i of l spans the fine axes between boundaries stride_i and
	 * stride_i * size_i; fine axis j (major first) spans [fb[k], fb[k+1])
	 * with k = nfb - 2 - j. */
	int first[PLAN_MAX_AXES], count[PLAN_MAX_AXES];
	int64_t stride = 1;
	for (int i = l->dm.n - 1; i >= 0; i--) {
		int64_t lo = stride, hi = stride * l->dm.size[i];
		int lo_k = 0, hi_k = 0;
		for (int k = 0; k < nfb; k++) {
			if (fb[k] == lo)
				lo_k = k;
			if (fb[k] == hi)
				hi_k = k;
		}
		/* fine axes for boundary intervals lo_k .. hi_k-1, major first */
		count[i] = hi_k - lo_k;
		first[i] = nfb - 1 - hi_k;
		stride = hi;
	}
	*out = *l;
	out->dm = *fine;
	out->partial = 0;
	for (int d = 0; d < l->rank; d++) {
		int n = 0;
		for (int k = 0; k < l->n_map[d]; k++) {
			int i = l->map[d][k];
			for (int j = 0; j < count[i]; j++)
				out->map[d][n++] = (int8_t)(first[i] + j);
		}
		out->n_map[d] = n;
	}
	for (int i = 0; i < l->dm.n; i++)
		if (l->partial & (1u << i))
			for (int j = 0; j < count[i]; j++)
				out->partial |= 1u << (first[i] + j);
}

bool layout_refine(const struct layout *a, const struct layout *b, struct layout *ra,
                   struct layout *rb)
{
	if (a->dm.n_devices != b->dm.n_devices || a->dm.base != b->dm.base)
		return false;
	int64_t ba[PLAN_MAX_AXES + 1], bb[PLAN_MAX_AXES + 1], u[2 * PLAN_MAX_AXES + 2];
	int na = boundaries(&a->dm, ba), nb = boundaries(&b->dm, bb), nu = 0;
	/* Merge the two ascending lists without duplicates. */
	for (int i = 0, j = 0; i < na || j < nb;) {
		int64_t x = j >= nb || (i < na && ba[i] <= bb[j]) ? ba[i] : bb[j];
		if (i < na && ba[i] == x)
			i++;
		if (j < nb && bb[j] == x)
			j++;
		u[nu++] = x;
	}
	if (nu - 1 > PLAN_MAX_AXES)
		return false;
	int64_t sizes[PLAN_MAX_AXES];
	for (int k = 1; k < nu; k++) {
		if (u[k] % u[k - 1])
			return false; /* no common refinement */
		sizes[nu - 1 - k] = u[k] / u[k - 1];
	}
	struct devmat fine;
	if (!devmat_init(&fine, nu - 1, sizes, NULL, a->dm.base))
		return false;
	refine_onto(a, &fine, u, nu, ra);
	refine_onto(b, &fine, u, nu, rb);
	return true;
}

static bool same_slices(const struct layout *a, const struct layout *b)
{
	for (int64_t r = a->dm.base; r < a->dm.base + a->dm.n_devices; r++) {
		int64_t alo[GRAPH_MAX_RANK], ahi[GRAPH_MAX_RANK], blo[GRAPH_MAX_RANK],
			bhi[GRAPH_MAX_RANK];
		layout_slice(a, r, alo, ahi);
		layout_slice(b, r, blo, bhi);
		for (int d = 0; d < a->rank; d++)
			if (alo[d] != blo[d] || ahi[d] != bhi[d])
				return false;
	}
	return true;
}

int layout_key(const struct layout *l, int64_t w[LAYOUT_KEY_WORDS])
{
	int n = 0;
	w[n++] = l->dtype;
	w[n++] = l->rank;
	for (int d = 0; d < l->rank; d++)
		w[n++] = l->shape[d];
	w[n++] = l->dm.n;
	for (int a = 0; a < l->dm.n; a++)
		w[n++] = l->dm.size[a];
	w[n++] = l->dm.base;
	for (int d = 0; d < l->rank; d++) {
		w[n++] = l->n_map[d];
		for (int k = 0; k < l->n_map[d]; k++)
			w[n++] = l->map[d][k];
	}
	w[n++] = l->partial;
	return n;
}

bool layout_same_placement(const struct layout *a, const struct layout *b)
{
	if (a->rank != b->rank || a->dm.n_devices != b->dm.n_devices || a->dm.base != b->dm.base)
		return false;
	for (int d = 0; d < a->rank; d++)
		if (a->shape[d] != b->shape[d])
			return false;
	struct layout ra, rb;
	if (!layout_refine(a, b, &ra, &rb)) {
		/* No common axes (2 x 3 against 3 x 2): compare what each rank
		 * holds. Partial sums over such matrices are never equal. */
		return !a->partial && !b->partial && same_slices(a, b);
	}
	if (ra.partial != rb.partial)
		return false;
	for (int d = 0; d < a->rank; d++) {
		if (ra.n_map[d] != rb.n_map[d])
			return false;
		for (int k = 0; k < ra.n_map[d]; k++)
			if (ra.map[d][k] != rb.map[d][k])
				return false;
	}
	return true;
}

bool rank_groups_locate(const struct rank_groups *g, int64_t rank, int *group, int *member)
{
	const struct devmat *dm = &g->dm;
	if (rank < dm->base || rank >= dm->base + dm->n_devices)
		return false;
	int64_t coord[PLAN_MAX_AXES];
	bool in_group[PLAN_MAX_AXES] = {false};
	devmat_coords(dm, rank, coord);
	int64_t m = 0, k = 0;
	for (int i = 0; i < g->n_axes; i++) {
		in_group[g->axes[i]] = true;
		m = m * dm->size[g->axes[i]] + coord[g->axes[i]];
	}
	for (int i = 0; i < dm->n; i++)
		if (!in_group[i])
			k = k * dm->size[i] + coord[i];
	*group = (int)k;
	*member = (int)m;
	return true;
}
