/* test_redistribution.c — redist_derive against the seeds' examples and
 * against an executor that moves index sets through the derived steps.
 *
 * Expected values are derived by hand in the comments. Device axes are
 * numbered major first (axis 0 is the leftmost size of the device matrix);
 * ranks are row-major over the matrix. Tensors are float32 (4 bytes).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include <criterion/criterion.h>

#include "layout.h"

/* ------------------------------------------------------------- helpers */

static void lay(struct layout *l, int n_axes, const int64_t *sizes, int rank,
                const int64_t *shape)
{
	struct devmat dm;
	cr_assert(devmat_init(&dm, n_axes, sizes, NULL, 0));
	struct tensor t = {.name = "t", .dtype = DT_FP32, .rank = rank};
	memcpy(t.dims, shape, (size_t)rank * sizeof(int64_t));
	layout_init(l, &dm, &t);
}

/* Dimension d split by n axes, major first. */
static void split(struct layout *l, int d, int n, ...)
{
	va_list ap;
	va_start(ap, n);
	l->n_map[d] = n;
	for (int k = 0; k < n; k++)
		l->map[d][k] = (int8_t)va_arg(ap, int);
	va_end(ap);
}

static void expect_groups(const struct rank_groups *g, int n_groups, int size,
                          const int64_t *ranks)
{
	cr_assert_eq(g->n_groups, n_groups);
	cr_assert_eq(g->size, size);
	for (int i = 0; i < n_groups * size; i++)
		cr_expect_eq(rank_groups_rank(g, i / size, i % size), ranks[i],
		             "group rank %d: %lld, expected %lld", i,
		             (long long)rank_groups_rank(g, i / size, i % size), (long long)ranks[i]);
}

static struct redist derive_ok(struct arena *a, const struct layout *src,
                               const struct layout *dst)
{
	struct diag_list dl = {0};
	struct redist r;
	cr_assert(redist_derive(a, src, dst, &r, &dl));
	cr_assert_eq(dl.errors, 0);
	diag_list_free(&dl);
	if (r.n_steps > 0)
		cr_assert(layout_same_placement(&r.steps[r.n_steps - 1].after, dst));
	return r;
}

static const int64_t ROWS64[] = {64, 64};

/* ------------------------------------------------------------- seed 000 */

/* Figure (a): Z 64x64 rows split over 4 ranks ([4], dim 0 on axis 0); the
 * consumer wants Z whole. One AllGather over 0-1-2-3 on dim 0 (no Concat:
 * MindSpore's AllGather concatenates on dim 0). L = 16*64*4 = 4096 bytes,
 * sent (s-1)*L = 3*4096 = 12288. */
Test(redistribution, seed000_allgather)
{
	struct arena *a = arena_new();
	int64_t dm[] = {4};
	struct layout src, dst;
	lay(&src, 1, dm, 2, ROWS64);
	split(&src, 0, 1, 0);
	lay(&dst, 1, dm, 2, ROWS64);
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 1);
	cr_expect_eq(r.steps[0].kind, STEP_ALLGATHER);
	cr_expect_eq(r.steps[0].dim, 0);
	cr_expect_not(r.steps[0].concat);
	expect_groups(&r.steps[0].groups, 1, 4, (int64_t[]){0, 1, 2, 3});
	cr_expect_float_eq(r.steps[0].bytes_per_device, 3.0 * 16 * 64 * 4, 1e-9);
	cr_expect_float_eq(r.bytes_per_device, 12288.0, 1e-9);
	arena_free(a);
}

/* Figure (b): rows split over 4 -> columns split over 4. One AllToAll over
 * 0-1-2-3 from dim 0 to dim 1: each rank keeps 1/4 of its 16x64 block and
 * sends 3/4 of it: 3/4 * 4096 = 3072 bytes. */
Test(redistribution, seed000_alltoall)
{
	struct arena *a = arena_new();
	int64_t dm[] = {4};
	struct layout src, dst;
	lay(&src, 1, dm, 2, ROWS64);
	split(&src, 0, 1, 0);
	lay(&dst, 1, dm, 2, ROWS64);
	split(&dst, 1, 1, 0);
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 1);
	cr_expect_eq(r.steps[0].kind, STEP_ALLTOALL);
	cr_expect_eq(r.steps[0].dim, 0);
	cr_expect_eq(r.steps[0].to_dim, 1);
	expect_groups(&r.steps[0].groups, 1, 4, (int64_t[]){0, 1, 2, 3});
	cr_expect_float_eq(r.bytes_per_device, 3072.0, 1e-9);
	arena_free(a);
}

/* The FFN's second MatMul ((2,4),(4,1)) on 8 devices: device matrix
 * [2,4,1]; X rows on axis 0, X cols (k) on axis 1; W rows on axis 1, W cols
 * on axis 2. The output (64x64) has rows on axis 0, cols on axis 2 (size
 * 1) and is partial over axis 1. The consumer Add ((2,4),(4)) has device
 * matrix [2,4] with rows on axis 0, cols on axis 1. Rank r = 4*a0 + a1, so
 * the ranks varying along the 4-axis are 0-1-2-3 and 4-5-6-7. A rank holds
 * 32x64 before: L = 32*64*4 = 8192; ReduceScatter onto dim 1 sends
 * 3/4 * 8192 = 6144 (an AllReduce would send 2*3/4*L = 12288). */
Test(redistribution, seed000_ffn_reducescatter)
{
	struct arena *a = arena_new();
	struct layout src, dst;
	lay(&src, 3, (int64_t[]){2, 4, 1}, 2, ROWS64);
	split(&src, 0, 1, 0);
	split(&src, 1, 1, 2);
	src.partial = 1u << 1;
	lay(&dst, 2, (int64_t[]){2, 4}, 2, ROWS64);
	split(&dst, 0, 1, 0);
	split(&dst, 1, 1, 1);
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 1);
	cr_expect_eq(r.steps[0].kind, STEP_REDUCESCATTER);
	cr_expect_eq(r.steps[0].reduce, REDUCE_SUM);
	cr_expect_eq(r.steps[0].dim, 1);
	expect_groups(&r.steps[0].groups, 2, 4, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
	cr_expect_float_eq(r.bytes_per_device, 6144.0, 1e-9);

	/* The completed output (after MindSpore's AllReduce) to the same
	 * consumer: every rank keeps columns 16*a1 .. 16*a1+15 of its 32 rows,
	 * one StridedSlice to 32x16, no traffic (seed 000's IR). */
	src.partial = 0;
	r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 1);
	cr_expect_eq(r.steps[0].kind, STEP_SLICE);
	cr_expect_eq(r.steps[0].dim, 1);
	cr_expect_eq(r.steps[0].groups.n_groups, 0);
	cr_expect_float_eq(r.bytes_per_device, 0.0, 1e-12);
	int64_t shape[GRAPH_MAX_RANK];
	layout_local_shape(&r.steps[0].after, shape);
	cr_expect_eq(shape[0], 32);
	cr_expect_eq(shape[1], 16);
	arena_free(a);
}

/* ------------------------------------------------------------- seed 004 */

/* (c) matmul1 ((4,1),(1,1)): device matrix [4,1,1], its output (MS map
 * [2,0]) has rows on axis 0, cols on axis 2 (size 1). matmul2
 * ((1,1),(1,4)): device matrix [1,1,4], X (MS map [2,1]) on axes 0 and 1,
 * both of size 1: X replicated. One AllGather over 0-1-2-3 of dim 0,
 * L = 16*64*4, bytes 3L = 12288. */
Test(redistribution, seed004_matmul_chain_allgather)
{
	struct arena *a = arena_new();
	struct layout src, dst;
	lay(&src, 3, (int64_t[]){4, 1, 1}, 2, ROWS64);
	split(&src, 0, 1, 0);
	split(&src, 1, 1, 2);
	lay(&dst, 3, (int64_t[]){1, 1, 4}, 2, ROWS64);
	split(&dst, 0, 1, 0);
	split(&dst, 1, 1, 1);
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 1);
	cr_expect_eq(r.steps[0].kind, STEP_ALLGATHER);
	cr_expect_eq(r.steps[0].dim, 0);
	expect_groups(&r.steps[0].groups, 1, 4, (int64_t[]){0, 1, 2, 3});
	cr_expect_float_eq(r.bytes_per_device, 12288.0, 1e-9);
	arena_free(a);
}

/* (e) Layout((2,2,2), ("dp","sp","mp")): axes dp=0, sp=1, mp=2, rank
 * r = 4*dp + 2*sp + mp. X ("mp", ("sp","dp")) times W (("sp","dp"), None)
 * contracts over sp,dp: the output (here 16x8) has rows on mp and is
 * partial over sp and dp. The out-layout (("mp","sp","dp"), None) wants
 * rows on [mp, sp, dp]: a ReduceScatter over sp and dp onto dim 0, the
 * group's ranks ordered sp-major, dp-minor as the list says, mp fixed:
 * mp=0: (sp,dp) = (0,0),(0,1),(1,0),(1,1) -> ranks 0, 4, 2, 6;
 * mp=1: 1, 5, 3, 7. L = 8*8*4 = 256, bytes 3/4 * 256 = 192. (Two
 * ReduceScatters over 2 would also send 128 + 64 = 192, in two steps.) */
Test(redistribution, seed004_layout_reducescatter)
{
	struct arena *a = arena_new();
	static const char *const names[] = {"dp", "sp", "mp"};
	struct devmat dm;
	cr_assert(devmat_init(&dm, 3, (int64_t[]){2, 2, 2}, names, 0));
	struct tensor t = {.name = "y", .dtype = DT_FP32, .rank = 2, .dims = {16, 8}};
	struct layout src, dst;
	layout_init(&src, &dm, &t);
	split(&src, 0, 1, 2);
	src.partial = (1u << 1) | (1u << 0);
	layout_init(&dst, &dm, &t);
	split(&dst, 0, 3, 2, 1, 0);
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 1);
	cr_expect_eq(r.steps[0].kind, STEP_REDUCESCATTER);
	cr_expect_eq(r.steps[0].dim, 0);
	expect_groups(&r.steps[0].groups, 2, 4, (int64_t[]){0, 4, 2, 6, 1, 5, 3, 7});
	cr_expect_float_eq(r.bytes_per_device, 192.0, 1e-9);
	arena_free(a);
}

/* ---------------------------------------------------- general behaviour */

/* Rows over [u, v] -> rows over [v, u] on [2,2], 8x8: no prefix in common,
 * so both axes leave dim 0. u sits in the middle and cannot be gathered
 * alone. Gathering [u,v] at once: 3L (L = 2*8*4 = 64); gathering v then u:
 * L + 2L = 3L in one more step. So: one AllGather over both axes (group
 * 0-1-2-3), then one StridedSlice of dim 0 onto [v,u]; 192 bytes. */
Test(redistribution, swapped_axes_gather_whole_run)
{
	struct arena *a = arena_new();
	struct layout src, dst;
	lay(&src, 2, (int64_t[]){2, 2}, 2, (int64_t[]){8, 8});
	split(&src, 0, 2, 0, 1);
	lay(&dst, 2, (int64_t[]){2, 2}, 2, (int64_t[]){8, 8});
	split(&dst, 0, 2, 1, 0);
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 2);
	cr_expect_eq(r.steps[0].kind, STEP_ALLGATHER);
	expect_groups(&r.steps[0].groups, 1, 4, (int64_t[]){0, 1, 2, 3});
	cr_expect_eq(r.steps[1].kind, STEP_SLICE);
	cr_expect_float_eq(r.bytes_per_device, 192.0, 1e-9);
	arena_free(a);
}

/* Rows split by u (axis 0 of [2,2]), dst columns split by v (axis 1):
 * slicing v first (free) halves the block, then gathering u sends
 * 1 * (4*4*4) = 64 bytes instead of 1 * (4*8*4) = 128. */
Test(redistribution, slice_before_gather)
{
	struct arena *a = arena_new();
	struct layout src, dst;
	lay(&src, 2, (int64_t[]){2, 2}, 2, (int64_t[]){8, 8});
	split(&src, 0, 1, 0);
	lay(&dst, 2, (int64_t[]){2, 2}, 2, (int64_t[]){8, 8});
	split(&dst, 1, 1, 1);
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 2);
	cr_expect_eq(r.steps[0].kind, STEP_SLICE);
	cr_expect_eq(r.steps[1].kind, STEP_ALLGATHER);
	cr_expect(r.steps[1].concat == false);
	/* ranks varying along u: {0,2} and {1,3} */
	expect_groups(&r.steps[1].groups, 2, 2, (int64_t[]){0, 2, 1, 3});
	cr_expect_float_eq(r.bytes_per_device, 64.0, 1e-9);
	arena_free(a);
}

/* [8] with rows on its one axis and [2,4] with rows on [0,1] put rows
 * 2*r .. 2*r+1 (of 16) on rank r both: zero steps. */
Test(redistribution, same_placement_zero_steps)
{
	struct arena *a = arena_new();
	struct layout src, dst;
	lay(&src, 1, (int64_t[]){8}, 2, (int64_t[]){16, 4});
	split(&src, 0, 1, 0);
	lay(&dst, 2, (int64_t[]){2, 4}, 2, (int64_t[]){16, 4});
	split(&dst, 0, 2, 0, 1);
	struct redist r = derive_ok(a, &src, &dst);
	cr_expect_eq(r.n_steps, 0);
	cr_expect_float_eq(r.bytes_per_device, 0.0, 1e-12);
	arena_free(a);
}

/* Partial over 2 x 2 to replicated: one AllReduce over 4 sends
 * 2*3/4 L = 1.5L; two over 2 would send L + L. L = 4*4*4 = 64 -> 96. */
Test(redistribution, allreduce_all_partial_axes_at_once)
{
	struct arena *a = arena_new();
	struct layout src, dst;
	lay(&src, 2, (int64_t[]){2, 2}, 2, (int64_t[]){4, 4});
	src.partial = 3;
	lay(&dst, 2, (int64_t[]){2, 2}, 2, (int64_t[]){4, 4});
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 1);
	cr_expect_eq(r.steps[0].kind, STEP_ALLREDUCE);
	expect_groups(&r.steps[0].groups, 1, 4, (int64_t[]){0, 1, 2, 3});
	cr_expect_float_eq(r.bytes_per_device, 96.0, 1e-9);
	arena_free(a);
}

/* [2,3] against [3,2] have no common refinement. Rows 2 ways on [2,3]
 * (rank r = 3*a + b holds half a) to rows 3 ways on [3,2] (r = 2*a + b
 * holds third a): the fallback gathers rows over the ranks varying along
 * the 2-axis of [2,3], {0,3}, {1,4}, {2,5}, sending 1 * (3*4*4) = 48, then
 * slices. */
Test(redistribution, no_common_refinement_fallback)
{
	struct arena *a = arena_new();
	struct layout src, dst;
	lay(&src, 2, (int64_t[]){2, 3}, 2, (int64_t[]){6, 4});
	split(&src, 0, 1, 0);
	lay(&dst, 2, (int64_t[]){3, 2}, 2, (int64_t[]){6, 4});
	split(&dst, 0, 1, 0);
	struct redist r = derive_ok(a, &src, &dst);
	cr_assert_eq(r.n_steps, 2);
	cr_expect_eq(r.steps[0].kind, STEP_ALLGATHER);
	expect_groups(&r.steps[0].groups, 3, 2, (int64_t[]){0, 3, 1, 4, 2, 5});
	cr_expect_float_eq(r.steps[0].bytes_per_device, 48.0, 1e-9);
	cr_expect_eq(r.steps[1].kind, STEP_SLICE);
	cr_expect(strstr(r.steps[0].why, "fallback") != NULL);
	arena_free(a);
}

Test(redistribution, bad_pairs_diagnosed)
{
	struct arena *a = arena_new();
	struct layout src, dst;
	struct redist r;
	struct diag_list dl = {0};
	lay(&src, 1, (int64_t[]){4}, 2, ROWS64);
	lay(&dst, 1, (int64_t[]){8}, 2, ROWS64);
	cr_expect_not(redist_derive(a, &src, &dst, &r, &dl));
	cr_expect_eq(dl.errors, 1);
	lay(&dst, 1, (int64_t[]){4}, 2, (int64_t[]){64, 32});
	cr_expect_not(redist_derive(a, &src, &dst, &r, &dl));
	cr_expect_eq(dl.errors, 2);
	lay(&dst, 1, (int64_t[]){4}, 2, ROWS64);
	dst.partial = 1;
	cr_expect_not(redist_derive(a, &src, &dst, &r, &dl));
	cr_expect_eq(dl.errors, 3);
	diag_list_free(&dl);
	arena_free(a);
}

/* ------------------------------------------------------ property test */

/* Every rank holds a row-major array of global element indices with, per
 * element, a mask of the partial-sum contributors it already includes
 * (one bit per coordinate over src's partial axes). The executor moves
 * these arrays as the collectives would, in group order, and never looks
 * at the layouts except to know where a Slice keeps its part. */
struct held {
	int64_t shape[GRAPH_MAX_RANK];
	int64_t n;
	int64_t *idx;
	uint32_t *mask;
};

struct exec {
	int rank;
	int64_t n_ranks, base;
	struct held *h;
	double elem_bytes;
};

static uint64_t rng_state = 0x5eed5eedULL;
static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33) % n;
}

static void held_alloc(struct held *h, int rank, const int64_t *shape)
{
	h->n = 1;
	for (int d = 0; d < rank; d++) {
		h->shape[d] = shape[d];
		h->n *= shape[d];
	}
	h->idx = malloc((size_t)(h->n ? h->n : 1) * sizeof(int64_t));
	h->mask = malloc((size_t)(h->n ? h->n : 1) * sizeof(uint32_t));
	cr_assert(h->idx && h->mask);
}

static void held_free(struct held *h)
{
	free(h->idx);
	free(h->mask);
	h->idx = NULL;
	h->mask = NULL;
}

static struct held held_copy(int rank, const struct held *h)
{
	struct held c;
	held_alloc(&c, rank, h->shape);
	memcpy(c.idx, h->idx, (size_t)h->n * sizeof(int64_t));
	memcpy(c.mask, h->mask, (size_t)h->n * sizeof(uint32_t));
	return c;
}

/* outer * shape[d] * inner = n for a row-major array. */
static void around(int rank, const int64_t *shape, int d, int64_t *outer, int64_t *inner)
{
	*outer = *inner = 1;
	for (int i = 0; i < d; i++)
		*outer *= shape[i];
	for (int i = d + 1; i < rank; i++)
		*inner *= shape[i];
}

/* The part [off, off+len) of h along dim d. */
static struct held held_part(int rank, const struct held *h, int d, int64_t off, int64_t len)
{
	struct held p;
	int64_t shape[GRAPH_MAX_RANK], outer, inner;
	memcpy(shape, h->shape, sizeof(shape));
	shape[d] = len;
	held_alloc(&p, rank, shape);
	around(rank, h->shape, d, &outer, &inner);
	for (int64_t o = 0; o < outer; o++) {
		size_t from = (size_t)((o * h->shape[d] + off) * inner), to = (size_t)(o * len * inner);
		memcpy(p.idx + to, h->idx + from, (size_t)(len * inner) * sizeof(int64_t));
		memcpy(p.mask + to, h->mask + from, (size_t)(len * inner) * sizeof(uint32_t));
	}
	return p;
}

/* Blocks concatenated along d, in the order given. */
static struct held held_concat(int rank, struct held *const *b, int n, int d)
{
	struct held c;
	int64_t shape[GRAPH_MAX_RANK], outer, inner;
	memcpy(shape, b[0]->shape, sizeof(shape));
	shape[d] = 0;
	for (int j = 0; j < n; j++) {
		for (int i = 0; i < rank; i++)
			cr_assert(i == d || b[j]->shape[i] == b[0]->shape[i], "concat of mismatched blocks");
		shape[d] += b[j]->shape[d];
	}
	held_alloc(&c, rank, shape);
	around(rank, shape, d, &outer, &inner);
	size_t to = 0;
	for (int64_t o = 0; o < outer; o++) {
		for (int j = 0; j < n; j++) {
			size_t k = (size_t)(b[j]->shape[d] * inner), from = (size_t)o * k;
			memcpy(c.idx + to, b[j]->idx + from, k * sizeof(int64_t));
			memcpy(c.mask + to, b[j]->mask + from, k * sizeof(uint32_t));
			to += k;
		}
	}
	return c;
}

/* Members' arrays hold the same elements; masks OR, never overlapping
 * (a contribution counted twice would be a wrong sum). */
static void reduce_group(struct exec *x, const int64_t *grp, int s, struct held *sum)
{
	struct held *h0 = &x->h[grp[0] - x->base];
	held_alloc(sum, x->rank, h0->shape);
	memcpy(sum->idx, h0->idx, (size_t)h0->n * sizeof(int64_t));
	memset(sum->mask, 0, (size_t)h0->n * sizeof(uint32_t));
	for (int j = 0; j < s; j++) {
		struct held *h = &x->h[grp[j] - x->base];
		cr_assert_eq(h->n, h0->n);
		cr_assert(!memcmp(h->idx, h0->idx, (size_t)h->n * sizeof(int64_t)),
		          "reduction over different elements");
		for (int64_t e = 0; e < h->n; e++) {
			cr_assert_eq(sum->mask[e] & h->mask[e], 0, "contribution counted twice");
			sum->mask[e] |= h->mask[e];
		}
	}
}

/* Bytes each rank sends under the ring algorithms, from its own L. */
static double sent_bytes(enum step_kind k, int s, double l)
{
	switch (k) {
	case STEP_ALLGATHER:
		return (s - 1) * l;
	case STEP_ALLREDUCE:
		return 2.0 * (s - 1) * (l / s);
	case STEP_REDUCESCATTER:
	case STEP_ALLTOALL:
		return (s - 1) * (l / s);
	default:
		return 0;
	}
}

static void exec_group(struct exec *x, const struct comm_step *st, const int64_t *grp,
                       struct held *next)
{
	int s = st->groups.size;
	struct held *blocks[64];
	cr_assert(s <= (int)SL_COUNTOF(blocks));
	for (int j = 0; j < s; j++)
		blocks[j] = &x->h[grp[j] - x->base];
	if (st->kind == STEP_ALLGATHER) {
		for (int j = 0; j < s; j++)
			next[grp[j] - x->base] = held_concat(x->rank, blocks, s, st->dim);
	} else if (st->kind == STEP_ALLTOALL) {
		/* member i splits along to_dim into s parts, part j to member j;
		 * member j concatenates what it receives along dim, i in order */
		for (int j = 0; j < s; j++) {
			struct held parts[64], *pp[64];
			cr_assert(s <= 64);
			for (int i = 0; i < s; i++) {
				int64_t len = blocks[i]->shape[st->to_dim] / s;
				cr_assert_eq(len * s, blocks[i]->shape[st->to_dim]);
				parts[i] = held_part(x->rank, blocks[i], st->to_dim, j * len, len);
				pp[i] = &parts[i];
			}
			next[grp[j] - x->base] = held_concat(x->rank, pp, s, st->dim);
			for (int i = 0; i < s; i++)
				held_free(&parts[i]);
		}
	} else {
		struct held sum;
		reduce_group(x, grp, s, &sum);
		for (int j = 0; j < s; j++) {
			if (st->kind == STEP_ALLREDUCE) {
				next[grp[j] - x->base] = held_copy(x->rank, &sum);
				continue;
			}
			int64_t len = sum.shape[st->dim] / s;
			cr_assert_eq(len * s, sum.shape[st->dim]);
			next[grp[j] - x->base] = held_part(x->rank, &sum, st->dim, j * len, len);
		}
		held_free(&sum);
	}
}

/* A Slice: each rank keeps the sub-box `after` gives it, which must lie
 * in what it holds (`before` says where that is). */
static void exec_slice(struct exec *x, const struct comm_step *st, const struct layout *before,
                       struct held *next)
{
	for (int64_t r = 0; r < x->n_ranks; r++) {
		int64_t blo[GRAPH_MAX_RANK], bhi[GRAPH_MAX_RANK], alo[GRAPH_MAX_RANK],
			ahi[GRAPH_MAX_RANK];
		layout_slice(before, x->base + r, blo, bhi);
		layout_slice(&st->after, x->base + r, alo, ahi);
		for (int d = 0; d < x->rank; d++)
			if (d != st->dim)
				cr_assert(alo[d] == blo[d] && ahi[d] == bhi[d], "slice of another dim");
		int d = st->dim;
		cr_assert(alo[d] >= blo[d] && ahi[d] <= bhi[d], "slice outside what the rank holds");
		next[r] = held_part(x->rank, &x->h[r], d, alo[d] - blo[d], ahi[d] - alo[d]);
	}
}

/* Each rank holds exactly its slice of l, row-major; masks full when l is
 * not partial. */
static void check_holds(const struct exec *x, const struct layout *l, uint32_t full)
{
	for (int64_t r = 0; r < x->n_ranks; r++) {
		int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK], c[GRAPH_MAX_RANK];
		layout_slice(l, x->base + r, lo, hi);
		const struct held *h = &x->h[r];
		int64_t e = 0;
		for (int d = 0; d < x->rank; d++) {
			cr_assert_eq(h->shape[d], hi[d] - lo[d], "rank %lld dim %d", (long long)r, d);
			c[d] = lo[d];
		}
		for (;;) {
			int64_t g = 0;
			for (int d = 0; d < x->rank; d++)
				g = g * l->shape[d] + c[d];
			cr_assert_eq(h->idx[e], g, "rank %lld element %lld", (long long)r, (long long)e);
			if (!l->partial)
				cr_assert_eq(h->mask[e], full, "rank %lld: partial sum left", (long long)r);
			e++;
			int d = x->rank - 1;
			for (; d >= 0 && ++c[d] == hi[d]; d--)
				c[d] = lo[d];
			if (d < 0)
				break;
		}
		cr_assert_eq(e, h->n);
	}
}

static void exec_init(struct exec *x, const struct layout *src, uint32_t *full)
{
	x->rank = src->rank;
	x->n_ranks = src->dm.n_devices;
	x->base = src->dm.base;
	x->elem_bytes = (double)dtype_bytes(src->dtype);
	x->h = calloc((size_t)x->n_ranks, sizeof(*x->h));
	int64_t n_contrib = 1;
	for (int a = 0; a < src->dm.n; a++)
		if (src->partial & (1u << a))
			n_contrib *= src->dm.size[a];
	cr_assert(n_contrib <= 16);
	*full = (uint32_t)((1u << n_contrib) - 1);
	for (int64_t r = 0; r < x->n_ranks; r++) {
		int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK], shape[GRAPH_MAX_RANK];
		int64_t coord[PLAN_MAX_AXES], who = 0;
		layout_slice(src, x->base + r, lo, hi);
		devmat_coords(&src->dm, x->base + r, coord);
		for (int a = 0; a < src->dm.n; a++)
			if (src->partial & (1u << a))
				who = who * src->dm.size[a] + coord[a];
		for (int d = 0; d < x->rank; d++)
			shape[d] = hi[d] - lo[d];
		held_alloc(&x->h[r], x->rank, shape);
		/* fill via the checker's walk order */
		int64_t c[GRAPH_MAX_RANK], e = 0;
		memcpy(c, lo, sizeof(c));
		for (;;) {
			int64_t g = 0;
			for (int d = 0; d < x->rank; d++)
				g = g * src->shape[d] + c[d];
			x->h[r].idx[e] = g;
			x->h[r].mask[e++] = 1u << who;
			int d = x->rank - 1;
			for (; d >= 0 && ++c[d] == hi[d]; d--)
				c[d] = lo[d];
			if (d < 0)
				break;
		}
	}
}

/* Runs the steps; checks holdings after each step and the bytes sent. */
static void exec_run(const struct layout *src, const struct layout *dst, const struct redist *r)
{
	struct exec x;
	uint32_t full;
	exec_init(&x, src, &full);
	check_holds(&x, src, full);
	double *total = calloc((size_t)x.n_ranks, sizeof(double));
	const struct layout *before = src;
	for (int i = 0; i < r->n_steps; i++) {
		const struct comm_step *st = &r->steps[i];
		struct held *next = calloc((size_t)x.n_ranks, sizeof(*next));
		if (st->kind == STEP_SLICE) {
			exec_slice(&x, st, before, next);
		} else {
			const struct rank_groups *g = &st->groups;
			cr_assert_eq((int64_t)g->n_groups * g->size, x.n_ranks, "groups cover every rank");
			int64_t *members = malloc((size_t)g->size * sizeof(*members));
			for (int k = 0; k < g->n_groups; k++) {
				rank_groups_members(g, k, members);
				exec_group(&x, st, members, next);
			}
			free(members);
			for (int64_t q = 0; q < x.n_ranks; q++) {
				cr_assert(next[q].idx != NULL, "rank %lld in no group", (long long)q);
				double sent = sent_bytes(st->kind, g->size, (double)x.h[q].n * x.elem_bytes);
				cr_assert(sent <= st->bytes_per_device * (1 + 1e-12),
				          "step %d: rank sends %g > %g", i, sent, st->bytes_per_device);
				total[q] += sent;
			}
		}
		for (int64_t q = 0; q < x.n_ranks; q++) {
			held_free(&x.h[q]);
			x.h[q] = next[q];
		}
		free(next);
		check_holds(&x, &st->after, full);
		before = &st->after;
	}
	check_holds(&x, dst, full);
	for (int64_t q = 0; q < x.n_ranks; q++) {
		cr_assert(total[q] <= r->bytes_per_device * (1 + 1e-12));
		held_free(&x.h[q]);
	}
	free(total);
	free(x.h);
}

/* Bytes of the plan that completes partial sums with one AllReduce, then
 * gathers dim 0, 1, ... in turn: an upper bound for the minimum. */
static double naive_bytes(const struct layout *src)
{
	double l = layout_local_bytes(src), b = 0;
	int64_t p = 1;
	for (int a = 0; a < src->dm.n; a++)
		if (src->partial & (1u << a))
			p *= src->dm.size[a];
	b += 2.0 * (double)(p - 1) / (double)p * l;
	for (int d = 0; d < src->rank; d++) {
		int64_t s = layout_slices(src, d);
		b += (double)(s - 1) * l;
		l *= (double)s;
	}
	return b;
}

static const int64_t DEVICE_COUNTS[] = {2, 3, 4, 6, 8, 9, 12, 16};

/* A random factoring of n into axes (sometimes with a size-1 axis). */
static void random_devmat(struct devmat *dm, int64_t n)
{
	int64_t sizes[PLAN_MAX_AXES];
	int k = 0;
	while (n > 1 || k == 0) {
		if (rnd(8) == 0 && k < 6) {
			sizes[k++] = 1;
			continue;
		}
		int64_t div[16];
		int nd = 0;
		for (int64_t f = 2; f <= n; f++)
			if (n % f == 0)
				div[nd++] = f;
		if (nd == 0) {
			sizes[k++] = 1;
			break;
		}
		sizes[k] = div[rnd((uint32_t)nd)];
		n /= sizes[k++];
	}
	cr_assert(devmat_init(dm, k, sizes, NULL, 0));
}

/* Axes to dims in random order, or replicated, or (if allowed) partial. */
static void random_maps(struct layout *l, bool partial_ok)
{
	int order[PLAN_MAX_AXES];
	for (int a = 0; a < l->dm.n; a++)
		order[a] = a;
	for (int a = l->dm.n - 1; a > 0; a--) {
		int b = (int)rnd((uint32_t)a + 1), t = order[a];
		order[a] = order[b];
		order[b] = t;
	}
	for (int i = 0; i < l->dm.n; i++) {
		int a = order[i];
		uint32_t c = rnd((uint32_t)l->rank + 2);
		if ((int)c < l->rank)
			l->map[c][l->n_map[c]++] = (int8_t)a;
		else if (c == (uint32_t)l->rank + 1 && partial_ok)
			l->partial |= 1u << a;
	}
}

static int64_t lcm(int64_t a, int64_t b)
{
	int64_t x = a, y = b;
	while (y) {
		int64_t t = x % y;
		x = y;
		y = t;
	}
	return a / x * b;
}

/* Issue 3, point 4g: random pairs of layouts over 2..16 devices; the
 * executor reproduces dst's slices on every rank and no rank sends more
 * than the derivation claims. */
Test(redistribution, property_random_layouts)
{
	struct arena *a = arena_new();
	int fallbacks = 0, with_steps = 0, kinds[STEP_KIND_COUNT] = {0};
	for (int it = 0; it < 400; it++) {
		int64_t n = DEVICE_COUNTS[rnd(SL_COUNTOF(DEVICE_COUNTS))];
		int rank = 1 + (int)rnd(3);
		struct devmat dsrc, ddst;
		random_devmat(&dsrc, n);
		random_devmat(&ddst, n);
		struct tensor t = {.name = "t", .dtype = DT_FP32, .rank = rank};
		for (int d = 0; d < rank; d++)
			t.dims[d] = 1;
		struct layout src, dst;
		layout_init(&src, &dsrc, &t);
		layout_init(&dst, &ddst, &t);
		random_maps(&src, rnd(2) == 0);
		random_maps(&dst, false);
		for (int d = 0; d < rank; d++) {
			int64_t m = lcm(layout_slices(&src, d), layout_slices(&dst, d));
			src.shape[d] = dst.shape[d] = m * (1 + rnd(2));
		}
		cr_assert(layout_valid(&src) && layout_valid(&dst));
		struct redist r;
		struct diag_list dl = {0};
		cr_assert(redist_derive(a, &src, &dst, &r, &dl), "case %d", it);
		diag_list_free(&dl);
		double sum = 0;
		for (int i = 0; i < r.n_steps; i++) {
			sum += r.steps[i].bytes_per_device;
			kinds[r.steps[i].kind]++;
			if (strstr(r.steps[i].why, "fallback"))
				fallbacks++;
		}
		cr_assert_float_eq(sum, r.bytes_per_device, 1e-9);
		cr_assert(r.bytes_per_device <= naive_bytes(&src) * (1 + 1e-12), "case %d", it);
		with_steps += r.n_steps > 0;
		exec_run(&src, &dst, &r);
	}
	cr_log_info("%d cases with steps, %d steps from fallbacks; %d Slice, %d AllGather, "
	            "%d AllToAll, %d AllReduce, %d ReduceScatter",
	            with_steps, fallbacks, kinds[STEP_SLICE], kinds[STEP_ALLGATHER],
	            kinds[STEP_ALLTOALL], kinds[STEP_ALLREDUCE], kinds[STEP_REDUCESCATTER]);
	for (int k = 0; k < STEP_RESHAPE; k++)
		cr_expect_gt(kinds[k], 0, "no %s in the random cases", step_kind_names[k]);
	arena_free(a);
}
