/* redistribution.c — the collective steps that turn one layout of a tensor
 * into another.
 *
 * Both layouts are first rewritten over their common refined device matrix
 * (layout_refine): one list of unit axes, each dimension's map an ordered
 * list of them, major first. A redistribution is then a path of moves
 * between states (each dimension's list, the set of partial axes): Slice
 * appends replicated axes at the minor end of a list, AllGather removes a
 * suffix, AllToAll moves a suffix to the minor end of another list,
 * AllReduce makes partial axes replicated, ReduceScatter appends partial
 * axes to a list. Only the minor end of a list moves, so every rank always
 * holds one box of the tensor. A best-first (Dijkstra) search finds the
 * path with the fewest bytes per device; ties go to fewer steps, then to
 * the fixed move order. Its moves only head toward `dst`: a list shrinks to
 * the longest common prefix of its src and dst lists, then grows toward its
 * dst list. Where the matrices have no common refinement, or the search
 * hits its bound, the plan is the always-correct AllReduce, AllGather of
 * every split dimension, then StridedSlice.
 *
 * Units: bytes per device double, from L, the bytes a device holds before
 * the step (layout.h). The search compares exact integer costs in units
 * of B/N^2 (B the whole tensor, N devices). Hot path: the propagation
 * planner derives one redistribution per pair of candidate strategies;
 * states are 12 bytes hashed by content, scratch lives in a private arena
 * freed before return.
 */
#include <string.h>

#include "layout.h"

static inline int axis_popcount(uint32_t m)
{
	int n = 0;
	for (; m; m &= m - 1)
		n++;
	return n;
}

const char *const step_kind_names[STEP_KIND_COUNT] = {
	"StridedSlice", "AllGather", "AllToAll", "AllReduce", "ReduceScatter", "Reshape",
};
_Static_assert(STEP_KIND_COUNT == 6, "step_kind_names out of step");

#define SEARCH_MAX_STATES 16384
#define SEARCH_MAX_DEVICES ((int64_t)1 << 24)  /* N^2 times a step's factor fits int64 */
#define AR_SUBSET_MAX_AXES 6                   /* above this, AllReduce all partial axes at once */

/* A search state. code[d] >= 0: dim d holds the first lcp[d] + code[d]
 * axes of its src list; code[d] < 0: the first lcp[d] - code[d] axes of its
 * dst list (so 0 is the common prefix, whichever way it is reached). */
struct state {
	int8_t code[GRAPH_MAX_RANK];
	uint32_t partial;
};
_Static_assert(sizeof(struct state) == GRAPH_MAX_RANK + 4, "state must have no padding");

struct move {
	enum step_kind kind;
	int dim, to_dim;
	int n_axes;
	int axes[PLAN_MAX_AXES];  /* the group's axes, in collective order */
};

struct node {
	struct state st;
	int64_t cost;             /* units of B/N^2 */
	int steps;
	int parent;               /* -1: the start */
	struct move mv;           /* from the parent */
	bool done;
};

struct heap_item {
	int64_t cost;
	int steps;
	int64_t seq;
	int node;
};

struct search {
	struct arena *scratch;
	const struct layout *src, *dst;  /* over the refined matrix */
	int lcp[GRAPH_MAX_RANK];
	int64_t n2;
	struct node *nodes;
	int n_nodes, cap_nodes;
	int *table;                      /* open addressing on state content; -1 empty */
	int table_size;
	struct heap_item *heap;
	int n_heap, cap_heap;
	int64_t seq;
	bool oom;
};

/* ------------------------------------------------------------ states */

static int dim_list(const struct search *s, const struct state *st, int d, const int8_t **axes)
{
	if (st->code[d] >= 0) {
		*axes = s->src->map[d];
		return s->lcp[d] + st->code[d];
	}
	*axes = s->dst->map[d];
	return s->lcp[d] - st->code[d];
}

static void state_layout(const struct search *s, const struct state *st, struct layout *out)
{
	*out = *s->dst;
	out->partial = st->partial;
	memset(out->map, 0, sizeof(out->map));
	for (int d = 0; d < out->rank; d++) {
		const int8_t *axes;
		out->n_map[d] = dim_list(s, st, d, &axes);
		memcpy(out->map[d], axes, (size_t)out->n_map[d]);
	}
}

/* Axes that split some dimension. */
static uint32_t split_axes(const struct search *s, const struct state *st)
{
	uint32_t m = 0;
	for (int d = 0; d < s->dst->rank; d++) {
		const int8_t *axes;
		int n = dim_list(s, st, d, &axes);
		for (int k = 0; k < n; k++)
			m |= 1u << axes[k];
	}
	return m;
}

static int64_t axes_product(const struct devmat *dm, uint32_t m)
{
	int64_t p = 1;
	for (int a = 0; a < dm->n; a++)
		if (m & (1u << a))
			p *= dm->size[a];
	return p;
}

static bool is_goal(const struct search *s, const struct state *st)
{
	if (st->partial)
		return false;
	for (int d = 0; d < s->dst->rank; d++)
		if (st->code[d] != s->lcp[d] - s->dst->n_map[d])
			return false;
	return true;
}

/* --------------------------------------------------- nodes, hash, heap */

static uint32_t state_hash(const struct state *st)
{
	const unsigned char *p = (const unsigned char *)st;
	uint32_t h = 2166136261u;
	for (size_t i = 0; i < sizeof(*st); i++)
		h = (h ^ p[i]) * 16777619u;
	return h;
}

static bool table_rebuild(struct search *s, int size)
{
	int *t = arena_calloc(s->scratch, (size_t)size, sizeof(int));
	if (!t)
		return false;
	memset(t, -1, (size_t)size * sizeof(int));
	for (int i = 0; i < s->n_nodes; i++) {
		uint32_t h = state_hash(&s->nodes[i].st) & (uint32_t)(size - 1);
		while (t[h] >= 0)
			h = (h + 1) & (uint32_t)(size - 1);
		t[h] = i;
	}
	s->table = t;
	s->table_size = size;
	return true;
}

/* The node of a state, added when new (cost -1); -1 when out of memory. */
static int node_find(struct search *s, const struct state *st)
{
	uint32_t mask = (uint32_t)(s->table_size - 1), h = state_hash(st) & mask;
	for (; s->table[h] >= 0; h = (h + 1) & mask)
		if (!memcmp(&s->nodes[s->table[h]].st, st, sizeof(*st)))
			return s->table[h];
	if (s->n_nodes == s->cap_nodes) {
		struct node *n = arena_grow(s->scratch, s->nodes, (size_t)s->cap_nodes,
		                            (size_t)s->cap_nodes * 2, sizeof(*n));
		if (!n)
			return -1;
		s->nodes = n;
		s->cap_nodes *= 2;
	}
	int i = s->n_nodes++;
	memset(&s->nodes[i], 0, sizeof(s->nodes[i]));
	s->nodes[i].st = *st;
	s->nodes[i].cost = -1;
	s->nodes[i].parent = -1;
	s->table[h] = i;
	if (2 * s->n_nodes > s->table_size && !table_rebuild(s, 2 * s->table_size))
		return -1;
	return i;
}

static bool heap_less(const struct heap_item *a, const struct heap_item *b)
{
	if (a->cost != b->cost)
		return a->cost < b->cost;
	if (a->steps != b->steps)
		return a->steps < b->steps;
	return a->seq < b->seq;
}

static bool heap_push(struct search *s, int node)
{
	if (s->n_heap == s->cap_heap) {
		struct heap_item *h = arena_grow(s->scratch, s->heap, (size_t)s->cap_heap,
		                                 (size_t)s->cap_heap * 2, sizeof(*h));
		if (!h)
			return false;
		s->heap = h;
		s->cap_heap *= 2;
	}
	struct heap_item it = {s->nodes[node].cost, s->nodes[node].steps, s->seq++, node};
	int i = s->n_heap++;
	for (; i > 0 && heap_less(&it, &s->heap[(i - 1) / 2]); i = (i - 1) / 2)
		s->heap[i] = s->heap[(i - 1) / 2];
	s->heap[i] = it;
	return true;
}

static struct heap_item heap_pop(struct search *s)
{
	struct heap_item top = s->heap[0], last = s->heap[--s->n_heap];
	int i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= s->n_heap)
			break;
		if (c + 1 < s->n_heap && heap_less(&s->heap[c + 1], &s->heap[c]))
			c++;
		if (!heap_less(&s->heap[c], &last))
			break;
		s->heap[i] = s->heap[c];
		i = c;
	}
	if (s->n_heap > 0)
		s->heap[i] = last;
	return top;
}

/* ---------------------------------------------------------------- moves */

/* Cost of a move in units of B/N^2, with p the split product before it. */
static int64_t move_cost(const struct search *s, const struct move *m, int64_t p)
{
	int64_t g = 1;
	for (int k = 0; k < m->n_axes; k++)
		g *= s->dst->dm.size[m->axes[k]];
	int64_t l = s->n2 / p;  /* L */
	switch (m->kind) {
	case STEP_ALLGATHER:
		return (g - 1) * l;
	case STEP_ALLTOALL:
	case STEP_REDUCESCATTER:
		return (g - 1) * (l / g);
	case STEP_ALLREDUCE:
		return 2 * (g - 1) * (l / g);
	default:
		return 0;
	}
}

static struct state move_apply(const struct state *st, const struct move *m)
{
	struct state n = *st;
	int8_t k = (int8_t)m->n_axes;
	switch (m->kind) {
	case STEP_SLICE:
		n.code[m->dim] = (int8_t)(n.code[m->dim] - k);
		break;
	case STEP_ALLGATHER:
		n.code[m->dim] = (int8_t)(n.code[m->dim] - k);
		break;
	case STEP_ALLTOALL:
		n.code[m->dim] = (int8_t)(n.code[m->dim] - k);
		n.code[m->to_dim] = (int8_t)(n.code[m->to_dim] - k);
		break;
	case STEP_REDUCESCATTER:
	case STEP_ALLREDUCE:
		if (m->kind == STEP_REDUCESCATTER)
			n.code[m->dim] = (int8_t)(n.code[m->dim] - k);
		for (int i = 0; i < m->n_axes; i++)
			n.partial &= ~(1u << m->axes[i]);
		break;
	default:
		SL_ASSERT(0);
	}
	return n;
}

/* Relaxes the edge from node `from` along move m. */
static bool relax(struct search *s, int from, const struct move *m, int64_t p)
{
	struct state st = move_apply(&s->nodes[from].st, m);
	int64_t cost = s->nodes[from].cost + move_cost(s, m, p);
	int steps = s->nodes[from].steps + 1;
	int i = node_find(s, &st);
	if (i < 0)
		return false;
	struct node *n = &s->nodes[i];
	if (n->done || (n->cost >= 0 && (n->cost < cost || (n->cost == cost && n->steps <= steps))))
		return true;
	n->cost = cost;
	n->steps = steps;
	n->parent = from;
	n->mv = *m;
	return heap_push(s, i);
}

/* Slice and ReduceScatter: runs of the axes dst wants next in dim e, all
 * in `have` (replicated, or partial). */
static bool grow_moves(struct search *s, int from, enum step_kind kind, uint32_t have, int64_t p)
{
	const struct state *st = &s->nodes[from].st;
	for (int e = 0; e < s->dst->rank; e++) {
		if (st->code[e] > 0)
			continue;
		int len = s->lcp[e] - st->code[e];
		struct move m = {.kind = kind, .dim = e, .to_dim = -1};
		for (int k = len; k < s->dst->n_map[e] && (have & (1u << s->dst->map[e][k])); k++) {
			m.axes[m.n_axes++] = s->dst->map[e][k];
			if (!relax(s, from, &m, p))
				return false;
			st = &s->nodes[from].st;  /* relax may grow the node array */
		}
	}
	return true;
}

static bool allreduce_moves(struct search *s, int from, int64_t p)
{
	uint32_t part = s->nodes[from].st.partial;
	bool subsets = axis_popcount(part) <= AR_SUBSET_MAX_AXES;
	for (uint32_t sub = part; sub; sub = subsets ? (sub - 1) & part : 0) {
		struct move m = {.kind = STEP_ALLREDUCE, .dim = -1, .to_dim = -1};
		for (int a = 0; a < PLAN_MAX_AXES; a++)
			if (sub & (1u << a))
				m.axes[m.n_axes++] = a;
		if (!relax(s, from, &m, p))
			return false;
	}
	return true;
}

/* AllToAll and AllGather: a suffix of a shrinking dim d. */
static bool shrink_moves(struct search *s, int from, enum step_kind kind, int64_t p)
{
	for (int d = 0; d < s->dst->rank; d++) {
		struct state st = s->nodes[from].st;
		if (st.code[d] <= 0)
			continue;
		int len = s->lcp[d] + st.code[d];
		for (int k = 1; k <= st.code[d]; k++) {
			const int8_t *suffix = s->src->map[d] + len - k;
			struct move m = {.kind = kind, .dim = d, .to_dim = -1, .n_axes = k};
			for (int i = 0; i < k; i++)
				m.axes[i] = suffix[i];
			if (kind == STEP_ALLGATHER) {
				if (!relax(s, from, &m, p))
					return false;
				continue;
			}
			for (int e = 0; e < s->dst->rank; e++) {
				int elen = s->lcp[e] - st.code[e];
				if (e == d || st.code[e] > 0 || elen + k > s->dst->n_map[e] ||
				    memcmp(s->dst->map[e] + elen, suffix, (size_t)k))
					continue;
				m.to_dim = e;
				if (!relax(s, from, &m, p))
					return false;
			}
		}
	}
	return true;
}

static bool expand(struct search *s, int from)
{
	struct state st = s->nodes[from].st;
	uint32_t split = split_axes(s, &st);
	int64_t p = axes_product(&s->dst->dm, split);
	uint32_t all = (1u << s->dst->dm.n) - 1;  /* dm.n <= PLAN_MAX_AXES < 32 */
	uint32_t replicated = all & ~split & ~st.partial;
	return grow_moves(s, from, STEP_SLICE, replicated, p) &&
	       grow_moves(s, from, STEP_REDUCESCATTER, st.partial, p) &&
	       allreduce_moves(s, from, p) &&
	       shrink_moves(s, from, STEP_ALLTOALL, p) &&
	       shrink_moves(s, from, STEP_ALLGATHER, p);
}

static int common_prefix(const struct layout *a, const struct layout *b, int d)
{
	int n = 0;
	while (n < a->n_map[d] && n < b->n_map[d] && a->map[d][n] == b->map[d][n])
		n++;
	return n;
}

enum search_status { SEARCH_FOUND, SEARCH_BOUND, SEARCH_OOM };

/* Dijkstra from src to dst; on SEARCH_FOUND, *goal is the goal node. */
static enum search_status search_run(struct search *s, int *goal)
{
	s->cap_nodes = 64;
	s->cap_heap = 64;
	s->nodes = arena_calloc(s->scratch, (size_t)s->cap_nodes, sizeof(*s->nodes));
	s->heap = arena_calloc(s->scratch, (size_t)s->cap_heap, sizeof(*s->heap));
	if (!s->nodes || !s->heap || !table_rebuild(s, 128))
		return SEARCH_OOM;
	struct state start = {{0}, s->src->partial};
	for (int d = 0; d < s->src->rank; d++) {
		s->lcp[d] = common_prefix(s->src, s->dst, d);
		start.code[d] = (int8_t)(s->src->n_map[d] - s->lcp[d]);
	}
	int i = node_find(s, &start);
	if (i < 0)
		return SEARCH_OOM;
	s->nodes[i].cost = 0;
	if (!heap_push(s, i))
		return SEARCH_OOM;
	while (s->n_heap > 0) {
		struct heap_item it = heap_pop(s);
		struct node *n = &s->nodes[it.node];
		if (n->done || it.cost != n->cost || it.steps != n->steps)
			continue;
		n->done = true;
		if (is_goal(s, &n->st)) {
			*goal = it.node;
			return SEARCH_FOUND;
		}
		if (s->n_nodes > SEARCH_MAX_STATES)
			return SEARCH_BOUND;
		if (!expand(s, it.node))
			return SEARCH_OOM;
	}
	SL_ASSERT(0); /* gather then slice always reaches dst */
	return SEARCH_BOUND;
}

/* ---------------------------------------------------------------- steps */

static double step_bytes(enum step_kind kind, int64_t g, double l)
{
	switch (kind) {
	case STEP_ALLGATHER:
		return (double)(g - 1) * l;
	case STEP_ALLTOALL:
	case STEP_REDUCESCATTER:
		return (double)(g - 1) * l / (double)g;
	case STEP_ALLREDUCE:
		return 2.0 * (double)(g - 1) * l / (double)g;
	default:
		return 0;
	}
}

static const char *step_why(struct arena *a, const struct comm_step *st, int64_t g,
                            const char *note)
{
	switch (st->kind) {
	case STEP_SLICE:
		return arena_printf(a, "keep this rank's part of dim %d (%lld more slices)%s",
		                    st->dim, (long long)g, note);
	case STEP_ALLGATHER:
		return arena_printf(a, "gather dim %d over %lld ranks%s%s", st->dim, (long long)g,
		                    st->concat ? ", then Concat on it" : "", note);
	case STEP_ALLTOALL:
		return arena_printf(a, "move a %lld-way split from dim %d to dim %d%s", (long long)g,
		                    st->dim, st->to_dim, note);
	case STEP_ALLREDUCE:
		return arena_printf(a, "complete partial sums over %lld ranks%s", (long long)g, note);
	case STEP_REDUCESCATTER:
		return arena_printf(a, "complete partial sums over %lld ranks, leaving dim %d split%s",
		                    (long long)g, st->dim, note);
	default:
		return note;
	}
}

/* Fills one step going from `before` by a move over `axes` of before's
 * matrix; `after` is set by the caller beforehand. Without `groups` (a cost
 * query) the rank lists and the reason are left out. */
static bool step_fill(struct arena *a, struct comm_step *st, const struct layout *before,
                      enum step_kind kind, int dim, int to_dim, const int *axes, int n_axes,
                      const char *note, bool groups)
{
	int64_t g = 1;
	for (int k = 0; k < n_axes; k++)
		g *= before->dm.size[axes[k]];
	st->kind = kind;
	st->reduce = REDUCE_SUM;
	st->dim = dim;
	st->to_dim = to_dim;
	st->concat = kind == STEP_ALLGATHER && dim != 0;
	st->bytes_per_device = step_bytes(kind, g, layout_local_bytes(before));
	memset(&st->groups, 0, sizeof(st->groups));
	if (!groups)
		return true;
	if (kind != STEP_SLICE && !devmat_groups(&before->dm, axes, n_axes, &st->groups))
		return false;
	st->why = step_why(a, st, g, note);
	return st->why != NULL;
}

/* The path ending at node `goal`, as steps. */
static bool path_steps(struct arena *a, const struct search *s, int goal, struct redist *out,
                       bool groups)
{
	int n = 0;
	for (int i = goal; s->nodes[i].parent >= 0; i = s->nodes[i].parent)
		n++;
	out->n_steps = n;
	out->steps = n ? arena_calloc(a, (size_t)n, sizeof(*out->steps)) : NULL;
	if (n && !out->steps)
		return false;
	for (int i = goal, k = n - 1; k >= 0; i = s->nodes[i].parent, k--) {
		const struct node *nd = &s->nodes[i];
		struct layout before;
		state_layout(s, &s->nodes[nd->parent].st, &before);
		struct comm_step *st = &out->steps[k];
		state_layout(s, &nd->st, &st->after);
		if (!step_fill(a, st, &before, nd->mv.kind, nd->mv.dim, nd->mv.to_dim, nd->mv.axes,
		               nd->mv.n_axes, "", groups))
			return false;
	}
	return true;
}

static bool push_step(struct arena *a, struct redist *out, int cap, struct layout *cur,
                      enum step_kind kind, int dim, const int *axes, int n_axes,
                      const struct layout *after, const char *note, bool groups)
{
	SL_ASSERT(out->n_steps < cap);
	struct comm_step *st = &out->steps[out->n_steps++];
	st->after = *after;
	bool ok = step_fill(a, st, cur, kind, dim, -1, axes, n_axes, note, groups);
	*cur = *after;
	return ok;
}

/* The always-correct plan: complete partial sums, gather every split
 * dimension (over src's matrix), then slice to dst (over dst's matrix).
 * Not minimal. */
static bool gather_then_slice(struct arena *a, const struct layout *src,
                              const struct layout *dst, const char *note, struct redist *out,
                              bool groups)
{
	int cap = 1 + 2 * src->rank;
	out->n_steps = 0;
	out->steps = arena_calloc(a, (size_t)cap, sizeof(*out->steps));
	if (!out->steps)
		return false;
	struct layout cur = *src, next = *src;
	int axes[PLAN_MAX_AXES], n = 0;
	for (int i = 0; i < src->dm.n; i++)
		if (src->partial & (1u << i))
			axes[n++] = i;
	next.partial = 0;
	if (axes_product(&src->dm, src->partial) > 1 &&
	    !push_step(a, out, cap, &cur, STEP_ALLREDUCE, -1, axes, n, &next, note, groups))
		return false;
	cur = next;
	for (int d = 0; d < src->rank; d++) {
		for (n = 0; n < src->n_map[d]; n++)
			axes[n] = src->map[d][n];
		next.n_map[d] = 0;
		if (layout_slices(src, d) > 1 &&
		    !push_step(a, out, cap, &cur, STEP_ALLGATHER, d, axes, n, &next, note, groups))
			return false;
		cur = next;
	}
	next = *dst;
	for (int d = 0; d < dst->rank; d++)
		next.n_map[d] = 0;
	cur = next;  /* both fully replicated: the same placement */
	for (int d = 0; d < dst->rank; d++) {
		next.n_map[d] = dst->n_map[d];
		memcpy(next.map[d], dst->map[d], sizeof(next.map[d]));
		for (n = 0; n < dst->n_map[d]; n++)
			axes[n] = dst->map[d][n];
		if (layout_slices(dst, d) > 1 &&
		    !push_step(a, out, cap, &cur, STEP_SLICE, d, axes, n, &next, note, groups))
			return false;
		cur = next;
	}
	return true;
}

/* ------------------------------------------------------------- checking */

static bool check_pair(const struct layout *src, const struct layout *dst,
                       struct diag_list *diags)
{
	if (src->rank != dst->rank) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "redistribution between tensors of different rank (%d and %d)", src->rank,
		         dst->rank);
		return false;
	}
	for (int d = 0; d < src->rank; d++) {
		if (src->shape[d] != dst->shape[d]) {
			diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
			         "redistribution between different shapes (dim %d: %lld and %lld)", d,
			         (long long)src->shape[d], (long long)dst->shape[d]);
			return false;
		}
	}
	if (src->dm.n_devices != dst->dm.n_devices || src->dm.base != dst->dm.base) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "redistribution between different rank sets (%lld ranks from %lld, and "
		         "%lld ranks from %lld)",
		         (long long)src->dm.n_devices, (long long)src->dm.base,
		         (long long)dst->dm.n_devices, (long long)dst->dm.base);
		return false;
	}
	if (src->dtype != dst->dtype) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "redistribution between different dtypes (%s and %s)",
		         dtype_names[src->dtype], dtype_names[dst->dtype]);
		return false;
	}
	if (dst->partial) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "redistribution to a layout holding partial sums (expected a complete "
		         "destination)");
		return false;
	}
	if (!layout_valid(src) || !layout_valid(dst)) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "redistribution of an invalid %s layout (an axis used twice, or a "
		         "dimension its slices do not divide)",
		         layout_valid(src) ? "destination" : "source");
		return false;
	}
	return true;
}

static bool derive(struct arena *a, const struct layout *src, const struct layout *dst,
                   struct redist *out, bool groups)
{
	struct layout rs, rd;
	if (!layout_refine(src, dst, &rs, &rd)) {
		if (layout_same_placement(src, dst))
			return true;  /* 2 x 3 against 3 x 2 cutting one dim 6 ways */
		return gather_then_slice(a, src, dst,
		                         " (fallback: the device matrices have no common "
		                         "refinement; gather then slice, not minimal)",
		                         out, groups);
	}
	if (rs.dm.n_devices > SEARCH_MAX_DEVICES)
		return gather_then_slice(a, &rs, &rd,
		                         " (fallback: too many devices for the exact search; "
		                         "gather then slice, not minimal)",
		                         out, groups);
	struct search s = {.src = &rs, .dst = &rd, .n2 = rs.dm.n_devices * rs.dm.n_devices};
	s.scratch = arena_new();
	if (!s.scratch)
		return false;
	int goal = -1;
	enum search_status r = search_run(&s, &goal);
	bool ok = r != SEARCH_OOM;
	if (r == SEARCH_FOUND)
		ok = path_steps(a, &s, goal, out, groups);
	else if (r == SEARCH_BOUND)
		ok = gather_then_slice(a, &rs, &rd,
		                       " (fallback: the search hit its state bound; gather then "
		                       "slice, not minimal)",
		                       out, groups);
	arena_free(s.scratch);
	return ok;
}

bool redist_derive(struct arena *a, const struct layout *src, const struct layout *dst,
                   struct redist *out, struct diag_list *diags)
{
	memset(out, 0, sizeof(*out));
	if (!check_pair(src, dst, diags))
		return false;
	if (!derive(a, src, dst, out, true)) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "out of memory deriving a redistribution");
		memset(out, 0, sizeof(*out));
		return false;
	}
	for (int i = 0; i < out->n_steps; i++)
		out->bytes_per_device += out->steps[i].bytes_per_device;
	return true;
}

double redist_bytes(const struct layout *src, const struct layout *dst)
{
	struct diag_list quiet;
	diag_list_init(&quiet);
	struct arena *a = arena_new();
	struct redist r = {0};
	bool ok = a && check_pair(src, dst, &quiet) && derive(a, src, dst, &r, false);
	double bytes = 0;
	for (int i = 0; ok && i < r.n_steps; i++)
		bytes += r.steps[i].bytes_per_device;
	arena_free(a);
	diag_list_free(&quiet);
	return ok ? bytes : -1;
}

double comm_step_bytes_in(const struct comm_step *st)
{
	double after = layout_local_bytes(&st->after);
	double s = st->groups.size > 0 ? (double)st->groups.size : 1;
	switch (st->kind) {
	case STEP_ALLGATHER:
		return after / s;
	case STEP_REDUCESCATTER:
		return after * s;
	default:
		return after;
	}
}
