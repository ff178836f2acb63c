/* test_layout.c — the layout algebra (device matrices, slices, rank
 * groups, placement equality) and whole plans of the seed scenarios:
 * which collectives appear, over which ranks, with how many bytes. Every
 * expected value is derived in the comment above it. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"
#include "fixture.h"


TestSuite(layout, .init = fixture_setup, .fini = fixture_teardown);

static struct devmat dm_of(int n, const int64_t *sizes, const char *const *names)
{
	struct devmat dm;
	cr_assert(devmat_init(&dm, n, sizes, names, 0));
	return dm;
}

static struct layout layout_of(const struct devmat *dm, int rank, const int64_t *shape)
{
	struct tensor t = {.name = "t", .dtype = DT_FP32, .rank = rank};
	memcpy(t.dims, shape, sizeof(int64_t) * (size_t)rank);
	struct layout l;
	layout_init(&l, dm, &t);
	return l;
}

static void split(struct layout *l, int d, int n, const int *axes)
{
	l->n_map[d] = n;
	for (int k = 0; k < n; k++)
		l->map[d][k] = (int8_t)axes[k];
}

/* Every rank of every group, in order, against a flat list. */
static void assert_members(const struct rank_groups *g, const int64_t *want, size_t n)
{
	cr_assert_eq((size_t)g->n_groups * (size_t)g->size, n);
	int64_t *got = calloc((size_t)g->size, sizeof(*got));
	cr_assert_not_null(got);
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(rank_groups_rank(g, (int)(i / (size_t)g->size), (int)(i % (size_t)g->size)),
		             want[i], "member %zu", i);
		if (i % (size_t)g->size == 0)
			rank_groups_members(g, (int)(i / (size_t)g->size), got);
		cr_assert_eq(got[i % (size_t)g->size], want[i], "rank_groups_members: member %zu", i);
	}
	free(got);
}

/* ---------------------------------------------------------------- layouts */

Test(layout, seed000_slices_on_device_matrix_2_1_4)
{
	/* Seed 000 figure (c): MatMul ((2,1),(1,4)) on 8 devices has device
	 * matrix [2,1,4]; X maps to (axis 0, axis 1), W to (axis 1, axis 2).
	 * Row-major: rank r has coordinates (r/4, 0, r%4). X (64x64): devices
	 * 0-3 hold X0 = rows 0-31, 4-7 hold X1 = rows 32-63; W: devices 0 and 4
	 * hold W0 = columns 0-15, 1 and 5 columns 16-31, ... */
	int64_t sizes[] = {2, 1, 4}, shape[] = {64, 64};
	struct devmat dm = dm_of(3, sizes, NULL);
	struct layout x = layout_of(&dm, 2, shape), w = layout_of(&dm, 2, shape);
	split(&x, 0, 1, (int[]){0});
	split(&x, 1, 1, (int[]){1});
	split(&w, 0, 1, (int[]){1});
	split(&w, 1, 1, (int[]){2});
	for (int64_t r = 0; r < 8; r++) {
		int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK];
		layout_slice(&x, r, lo, hi);
		cr_assert_eq(lo[0], r < 4 ? 0 : 32, "rank %ld", (long)r);
		cr_assert_eq(hi[0], r < 4 ? 32 : 64);
		cr_assert_eq(lo[1], 0);
		cr_assert_eq(hi[1], 64);
		layout_slice(&w, r, lo, hi);
		cr_assert_eq(lo[1], (r % 4) * 16, "rank %ld", (long)r);
		cr_assert_eq(hi[1], (r % 4) * 16 + 16);
	}
	/* MindSpore's tensor maps count from the right: X [2, 1], W [1, 0]. */
	int m[PLAN_MAX_AXES];
	cr_assert_eq(layout_tensor_map(&x, 0, m), 1);
	cr_assert_eq(m[0], 2);
	layout_tensor_map(&x, 1, m);
	cr_assert_eq(m[0], 1);
	layout_tensor_map(&w, 1, m);
	cr_assert_eq(m[0], 0);
	cr_assert_eq(layout_local_elems(&x), 32 * 64);
	cr_assert_float_eq(layout_local_bytes(&w), 64.0 * 16 * 4, 0);
}

Test(layout, seed004_row0_lands_on_ranks_0_4_2_6)
{
	/* Layout((2,2,2), ("dp","sp","mp")), a = [[a0..a3],[a4..a7]] as
	 * ("mp", ("sp","dp")): row index from mp (axis 2), column index =
	 * sp*2 + dp. Rank = dp*4 + sp*2 + mp. Row 0 (mp = 0): column 0 ->
	 * (sp,dp) = (0,0) rank 0; column 1 -> (0,1) rank 4; column 2 -> (1,0)
	 * rank 2; column 3 -> (1,1) rank 6. */
	static const char *const names[] = {"dp", "sp", "mp"};
	int64_t sizes[] = {2, 2, 2}, shape[] = {2, 4};
	struct devmat dm = dm_of(3, sizes, names);
	struct layout a = layout_of(&dm, 2, shape);
	split(&a, 0, 1, (int[]){2});
	split(&a, 1, 2, (int[]){1, 0});
	int64_t expect_rank[4] = {0, 4, 2, 6};
	for (int col = 0; col < 4; col++) {
		int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK];
		layout_slice(&a, expect_rank[col], lo, hi);
		cr_assert_eq(lo[0], 0);
		cr_assert_eq(lo[1], col, "a%d should be on rank %ld", col, (long)expect_rank[col]);
		cr_assert_eq(hi[1], col + 1);
	}
	/* Its tensor map: dim 0 on mp = 0 from the right, dim 1 on (sp, dp) = (1, 2). */
	int m[PLAN_MAX_AXES];
	cr_assert_eq(layout_tensor_map(&a, 1, m), 2);
	cr_assert_eq(m[0], 1);
	cr_assert_eq(m[1], 2);
}

Test(layout, rank_groups_along_axes)
{
	/* [2,2,2]: rank = 4a + 2b + c. Along axes (1,2): a fixed -> {0,1,2,3}
	 * and {4,5,6,7}. Along (2,1) the same sets ordered c-major: {0,2,1,3}.
	 * Along axis 0: {0,4} {1,5} {2,6} {3,7}. */
	int64_t sizes[] = {2, 2, 2};
	struct devmat dm = dm_of(3, sizes, NULL);
	struct rank_groups g;
	cr_assert(devmat_groups(&dm, (int[]){1, 2}, 2, &g));
	cr_assert_eq(g.n_groups, 2);
	cr_assert_eq(g.size, 4);
	int64_t want12[] = {0, 1, 2, 3, 4, 5, 6, 7};
	assert_members(&g, want12, sizeof want12 / sizeof want12[0]);
	cr_assert(devmat_groups(&dm, (int[]){2, 1}, 2, &g));
	int64_t want21[] = {0, 2, 1, 3, 4, 6, 5, 7};
	assert_members(&g, want21, sizeof want21 / sizeof want21[0]);
	cr_assert(devmat_groups(&dm, (int[]){0}, 1, &g));
	int64_t want0[] = {0, 4, 1, 5, 2, 6, 3, 7};
	assert_members(&g, want0, sizeof want0 / sizeof want0[0]);
	/* A base offset moves every rank. */
	struct devmat off;
	devmat_init(&off, 1, (int64_t[]){4}, NULL, 8);
	cr_assert(devmat_groups(&off, (int[]){0}, 1, &g));
	int64_t want_off[] = {8, 9, 10, 11};
	assert_members(&g, want_off, sizeof want_off / sizeof want_off[0]);
}

/* rank_groups_key: the same ranks in the same groups and order give the
 * same words however the device matrix is factored. By hand: all 8 ranks
 * in order over [8] along 0, over [2,4] along (0,1) and over [2,1,4]
 * along (0,1,2) are one group 0..7; along (1,0) of [2,4] the order is
 * 0,4,1,5,.. (another key); along 1 of [2,4] the groups {0..3} {4..7}
 * differ from along 1 of [4,2] ({0,1} ..). And the words agree with the
 * member lists on every pair of descriptions below. */
static bool same_lists(const struct rank_groups *a, const struct rank_groups *b)
{
	if (a->size != b->size || a->n_groups != b->n_groups)
		return false;
	for (int k = 0; k < a->n_groups; k++)
		for (int i = 0; i < a->size; i++)
			if (rank_groups_rank(a, k, i) != rank_groups_rank(b, k, i))
				return false;
	return true;
}

Test(layout, rank_groups_key_whatever_the_factoring)
{
	static const int64_t shapes[][3] = {{8, 1, 1}, {2, 4, 1}, {2, 1, 4}, {4, 2, 1}, {2, 2, 2}};
	static const int axes_sets[][3] = {{0, -1, -1}, {1, -1, -1}, {2, -1, -1}, {0, 1, -1},
	                                   {1, 0, -1},  {0, 2, -1},  {1, 2, -1},  {0, 1, 2},
	                                   {2, 1, 0}};
	struct rank_groups all[5 * 9];
	int n = 0;
	for (int si = 0; si < 5; si++) {
		struct devmat dm = dm_of(3, shapes[si], NULL);
		for (int ai = 0; ai < 9; ai++) {
			int axes[3], na = 0;
			for (int k = 0; k < 3; k++)
				if (axes_sets[ai][k] >= 0)
					axes[na++] = axes_sets[ai][k];
			cr_assert(devmat_groups(&dm, axes, na, &all[n++]));
		}
	}
	int64_t w1[RANK_GROUPS_KEY_WORDS], w2[RANK_GROUPS_KEY_WORDS];
	int equal = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			int n1 = rank_groups_key(&all[i], w1), n2 = rank_groups_key(&all[j], w2);
			bool same = n1 == n2 && !memcmp(w1, w2, (size_t)n1 * sizeof(w1[0]));
			cr_assert_eq(same, same_lists(&all[i], &all[j]), "descriptions %d and %d", i, j);
			equal += same && i != j;
		}
	cr_assert_gt(equal, 0, "some descriptions of the same groups differ in their matrices");
	/* the cases by hand */
	struct devmat d8 = dm_of(1, (int64_t[]){8}, NULL), d24 = dm_of(2, (int64_t[]){2, 4}, NULL),
		      d42 = dm_of(2, (int64_t[]){4, 2}, NULL);
	struct rank_groups a, b;
	cr_assert(devmat_groups(&d8, (int[]){0}, 1, &a));
	cr_assert(devmat_groups(&d24, (int[]){0, 1}, 2, &b));
	int n1 = rank_groups_key(&a, w1), n2 = rank_groups_key(&b, w2);
	cr_assert(n1 == n2 && !memcmp(w1, w2, (size_t)n1 * sizeof(w1[0])), "one group 0..7");
	cr_assert(devmat_groups(&d24, (int[]){1, 0}, 2, &b));
	n2 = rank_groups_key(&b, w2);
	cr_assert(n1 != n2 || memcmp(w1, w2, (size_t)n1 * sizeof(w1[0])), "0,4,1,5,..: another order");
	cr_assert(devmat_groups(&d24, (int[]){1}, 1, &a));
	cr_assert(devmat_groups(&d42, (int[]){1}, 1, &b));
	n1 = rank_groups_key(&a, w1);
	n2 = rank_groups_key(&b, w2);
	cr_assert(n1 != n2 || memcmp(w1, w2, (size_t)n1 * sizeof(w1[0])), "fours against pairs");
	/* the first rank is part of the key */
	struct devmat off = dm_of(1, (int64_t[]){8}, NULL);
	off.base = 8;
	cr_assert(devmat_groups(&d8, (int[]){0}, 1, &a));
	cr_assert(devmat_groups(&off, (int[]){0}, 1, &b));
	n1 = rank_groups_key(&a, w1);
	n2 = rank_groups_key(&b, w2);
	cr_assert(n1 != n2 || memcmp(w1, w2, (size_t)n1 * sizeof(w1[0])), "ranks 8..15");
}

Test(layout, same_placement_whatever_the_description)
{
	int64_t s8[] = {8}, s24[] = {2, 4}, s214[] = {2, 1, 4}, shape[] = {64, 64};
	struct devmat d8 = dm_of(1, s8, NULL), d24 = dm_of(2, s24, NULL),
		      d214 = dm_of(3, s214, NULL);
	/* Rows over [8] == rows over (2, 4) of [2,4]: slice = 4a + b = rank. */
	struct layout a = layout_of(&d8, 2, shape), b = layout_of(&d24, 2, shape);
	split(&a, 0, 1, (int[]){0});
	split(&b, 0, 2, (int[]){0, 1});
	cr_assert(layout_same_placement(&a, &b));
	/* (4, 2) order: slice = b*2 + a, a different placement. */
	split(&b, 0, 2, (int[]){1, 0});
	cr_assert_not(layout_same_placement(&a, &b));
	/* A size-1 axis changes nothing: rows on axis 0 of [2,1,4], columns on
	 * the size-1 axis, equals rows on axis 0 of [2,4]. */
	struct layout c = layout_of(&d214, 2, shape), e = layout_of(&d24, 2, shape);
	split(&c, 0, 1, (int[]){0});
	split(&c, 1, 1, (int[]){1});
	split(&e, 0, 1, (int[]){0});
	cr_assert(layout_same_placement(&c, &e));
	/* Replicated is not split; partial is not complete. */
	struct layout r = layout_of(&d8, 2, shape);
	cr_assert_not(layout_same_placement(&a, &r));
	struct layout p = r;
	p.partial = 1;
	cr_assert_not(layout_same_placement(&p, &r));
	/* 2x3 against 3x2 have no common axes: both replicated still agree. */
	struct devmat d23 = dm_of(2, (int64_t[]){2, 3}, NULL), d32 = dm_of(2, (int64_t[]){3, 2}, NULL);
	int64_t sh6[] = {6};
	struct layout r23 = layout_of(&d23, 1, sh6), r32 = layout_of(&d32, 1, sh6);
	cr_assert(layout_same_placement(&r23, &r32));
	/* ... and a 1-D split over all six ranks in rank order agrees too. */
	split(&r23, 0, 2, (int[]){0, 1});
	split(&r32, 0, 2, (int[]){0, 1});
	cr_assert(layout_same_placement(&r23, &r32));
	split(&r32, 0, 2, (int[]){1, 0});
	cr_assert_not(layout_same_placement(&r23, &r32));
}

Test(layout, refinement_of_two_device_matrices)
{
	/* [4,2] and [2,4] over 8 ranks: boundaries {1,2,8} and {1,4,8} -> the
	 * common refinement has boundaries {1,2,4,8}: axes [2,2,2]. Rows on the
	 * 4-axis of [4,2] become rows on the first two unit axes. */
	int64_t s42[] = {4, 2}, s24[] = {2, 4}, shape[] = {16};
	struct devmat d42 = dm_of(2, s42, NULL), d24 = dm_of(2, s24, NULL);
	struct layout a = layout_of(&d42, 1, shape), b = layout_of(&d24, 1, shape), ra, rb;
	split(&a, 0, 1, (int[]){0});
	b.partial = 1u << 1; /* partial over the 4-axis */
	cr_assert(layout_refine(&a, &b, &ra, &rb));
	cr_assert_eq(ra.dm.n, 3);
	for (int i = 0; i < 3; i++)
		cr_assert_eq(ra.dm.size[i], 2);
	cr_assert_eq(ra.n_map[0], 2);
	cr_assert_eq(ra.map[0][0], 0);
	cr_assert_eq(ra.map[0][1], 1);
	cr_assert_eq(rb.partial, (1u << 1) | (1u << 2));
	/* No refinement of 2x3 and 3x2. */
	struct devmat d23 = dm_of(2, (int64_t[]){2, 3}, NULL), d32 = dm_of(2, (int64_t[]){3, 2}, NULL);
	int64_t sh6[] = {6};
	struct layout x = layout_of(&d23, 1, sh6), y = layout_of(&d32, 1, sh6);
	cr_assert_not(layout_refine(&x, &y, &ra, &rb));
}

Test(layout, layout_validity)
{
	int64_t s24[] = {2, 4}, shape[] = {6, 8};
	struct devmat d = dm_of(2, s24, NULL);
	struct layout l = layout_of(&d, 2, shape);
	split(&l, 1, 1, (int[]){1});
	cr_assert(layout_valid(&l));
	split(&l, 0, 1, (int[]){1}); /* axis 1 twice */
	cr_assert_not(layout_valid(&l));
	split(&l, 0, 1, (int[]){0});
	cr_assert(layout_valid(&l));
	split(&l, 0, 2, (int[]){0, 1}); /* 8 slices of 6 rows */
	l.n_map[1] = 0;
	cr_assert_not(layout_valid(&l));
}

/* ------------------------------------------------------------------ plans */

static struct plan *plan_of(const char *path, enum redist_mode mode)
{
	struct scenario *s = fixture_scenario(path);
	struct plan *p = plan_configured(A, s, mode, &D);
	cr_assert_not_null(p, "%s does not plan", path);
	return p;
}

static const struct dist_op *op_named(const struct plan *p, const char *name)
{
	int i = graph_find_op(p->graph, name);
	cr_assert_geq(i, 0, "no op %s", name);
	return &p->ops[i];
}

static void assert_groups(const struct rank_groups *g, int n_groups, int size, const int64_t *ranks)
{
	cr_assert_eq(g->n_groups, n_groups);
	cr_assert_eq(g->size, size);
	for (int i = 0; i < n_groups * size; i++)
		cr_assert_eq(rank_groups_rank(g, i / size, i % size), ranks[i],
		             "rank %d of the groups: %ld, expected %ld", i,
		             (long)rank_groups_rank(g, i / size, i % size), (long)ranks[i]);
	assert_members(g, ranks, (size_t)(n_groups * size));
}

static int count_comm(const struct plan *p)
{
	int n = 0;
	for (int i = 0; i < p->graph->n_ops; i++)
		n += p->ops[i].n_comm;
	return n;
}

Test(layout, seed000_configured_matmul_2_1_4)
{
	struct plan *p = plan_of("scenarios/ffn-8p.json", REDIST_COMPAT);
	const struct dist_op *mm = op_named(p, "dense1.matmul");
	cr_assert_eq(mm->source, STRATEGY_CONFIGURED);
	cr_assert_eq(mm->dm.n, 3);
	cr_assert_eq(mm->dm.size[0], 2);
	cr_assert_eq(mm->dm.size[1], 1);
	cr_assert_eq(mm->dm.size[2], 4);
	/* Y maps to [2, 0]: rows on the 2-axis, columns on the 4-axis. */
	int m[PLAN_MAX_AXES];
	layout_tensor_map(&mm->out[0], 0, m);
	cr_assert_eq(m[0], 2);
	layout_tensor_map(&mm->out[0], 1, m);
	cr_assert_eq(m[0], 0);
	cr_assert_eq(mm->n_comm, 0);
	/* The ReLU was not configured: data parallel, rows over all 8. */
	const struct dist_op *relu = op_named(p, "relu");
	cr_assert_eq(relu->source, STRATEGY_DEFAULT);
	cr_assert_eq(relu->cuts[0][0], 8);
	cr_assert_eq(relu->cuts[0][1], 1);
}

Test(layout, seed000_ir_allreduce_then_stridedslice)
{
	/* Seed 000's IR: the second MatMul ((2,4),(4,1)) has device matrix
	 * [2,4,1]; its contracted dimension is cut over the 4-axis, so it ends
	 * in an AllReduce with group_ranks 0-1-2-3 (and 4-5-6-7). Its output
	 * (rows by 2, replicated over the 4-axis) is 32x64 per rank; the Add
	 * ((2,4),(4)) wants rows by 2 and columns by 4: a StridedSlice to
	 * (32, 16), no traffic. AllReduce bytes: 2 (4-1)/4 x 32*64*4 = 12288. */
	struct plan *p = plan_of("scenarios/seed000-ffn-ir-8p.json", REDIST_COMPAT);
	const struct dist_op *mm2 = op_named(p, "dense2.matmul");
	cr_assert_eq(mm2->n_comm, 1);
	cr_assert_eq(mm2->comm[0].kind, STEP_ALLREDUCE);
	int64_t groups[] = {0, 1, 2, 3, 4, 5, 6, 7};
	assert_groups(&mm2->comm[0].groups, 2, 4, groups);
	cr_assert_float_eq(mm2->comm[0].bytes_per_device, 12288.0, 1e-9);
	/* Only one edge differs: dense2.matmul -> dense2.add. */
	cr_assert_eq(p->n_edges, 1);
	const struct plan_edge *e = &p->edges[0];
	cr_assert_str_eq(p->graph->ops[e->consumer].name, "dense2.add");
	cr_assert_eq(e->redist.n_steps, 1);
	cr_assert_eq(e->redist.steps[0].kind, STEP_SLICE);
	cr_assert_float_eq(e->redist.bytes_per_device, 0.0, 0);
	int64_t local[GRAPH_MAX_RANK];
	layout_local_shape(&e->redist.steps[0].after, local);
	cr_assert_eq(local[0], 32);
	cr_assert_eq(local[1], 16);
	/* Fused, a ReduceScatter over the same groups: (4-1)/4 x 8192 = 6144
	 * bytes instead of 12288 + 0: saves 6144. */
	cr_assert_float_eq(e->fused_saving_bytes, 6144.0, 1e-9);
	p = plan_of("scenarios/seed000-ffn-ir-8p.json", REDIST_FUSED);
	mm2 = op_named(p, "dense2.matmul");
	cr_assert_eq(mm2->n_comm, 0);
	cr_assert_eq(p->n_edges, 1);
	e = &p->edges[0];
	cr_assert_eq(e->redist.n_steps, 1);
	cr_assert_eq(e->redist.steps[0].kind, STEP_REDUCESCATTER);
	assert_groups(&e->redist.steps[0].groups, 2, 4, groups);
	cr_assert_float_eq(e->redist.bytes_per_device, 6144.0, 1e-9);
}

Test(layout, seed004_one_allgather)
{
	/* matmul1 ((4,1),(1,1)): its output rows are split over 4 ranks, 16x64
	 * each. matmul2 ((1,1),(1,4)) reads it whole: one AllGather over
	 * 0-1-2-3 on dim 0 (no Concat needed), (4-1) x 16*64*4 = 12288 bytes. */
	struct plan *p = plan_of("scenarios/seed004-allgather-4p.json", REDIST_COMPAT);
	cr_assert_eq(count_comm(p), 0);
	cr_assert_eq(p->n_edges, 1);
	const struct redist *r = &p->edges[0].redist;
	cr_assert_eq(r->n_steps, 1);
	cr_assert_eq(r->steps[0].kind, STEP_ALLGATHER);
	cr_assert_eq(r->steps[0].dim, 0);
	cr_assert_not(r->steps[0].concat);
	int64_t g[] = {0, 1, 2, 3};
	assert_groups(&r->steps[0].groups, 1, 4, g);
	cr_assert_float_eq(r->bytes_per_device, 12288.0, 1e-9);
}

Test(layout, seed000_figure_b_alltoall)
{
	/* Z rows split over 4; matmul2 ((1,4),(4,1)) reads Z with its columns
	 * (the contracted dimension) split over 4: one AllToAll over 0-1-2-3
	 * from dim 0 to dim 1, (4-1)/4 x 16*64*4 = 3072 bytes. matmul2 then
	 * holds partial sums of the whole 64x64 output: AllReduce over all 4,
	 * 2 (3/4) x 64*64*4 = 24576 bytes. */
	struct plan *p = plan_of("scenarios/seed000-alltoall-4p.json", REDIST_COMPAT);
	cr_assert_eq(p->n_edges, 1);
	const struct redist *r = &p->edges[0].redist;
	cr_assert_eq(r->n_steps, 1);
	cr_assert_eq(r->steps[0].kind, STEP_ALLTOALL);
	cr_assert_eq(r->steps[0].dim, 0);
	cr_assert_eq(r->steps[0].to_dim, 1);
	int64_t g[] = {0, 1, 2, 3};
	assert_groups(&r->steps[0].groups, 1, 4, g);
	cr_assert_float_eq(r->bytes_per_device, 3072.0, 1e-9);
	const struct dist_op *mm2 = op_named(p, "matmul2");
	cr_assert_eq(mm2->n_comm, 1);
	cr_assert_eq(mm2->comm[0].kind, STEP_ALLREDUCE);
	assert_groups(&mm2->comm[0].groups, 1, 4, g);
	cr_assert_float_eq(mm2->comm[0].bytes_per_device, 24576.0, 1e-9);
}

Test(layout, seed003_allreduce_over_pairs)
{
	/* Y = XA ((2,1),(1,2)): device matrix [2,1,2], Y rows on the major 2,
	 * columns on the minor 2. Z = YB ((2,2),(2,1)): device matrix [2,2,1],
	 * Y rows on the major 2 and columns on the middle 2 -- the same ranks
	 * (rank = 2a + b either way), so no redistribution. Z's contracted
	 * dimension is cut on the middle axis: AllReduce over ranks sharing the
	 * row coordinate, {0,1} and {2,3}; Z is 32x64 per rank:
	 * 2 (1/2) x 32*64*4 = 8192 bytes. */
	struct plan *p = plan_of("scenarios/seed003-matmul-4p.json", REDIST_COMPAT);
	cr_assert_eq(p->n_edges, 0);
	const struct dist_op *mm2 = op_named(p, "matmul2");
	cr_assert_eq(mm2->n_comm, 1);
	cr_assert_eq(mm2->comm[0].kind, STEP_ALLREDUCE);
	int64_t g[] = {0, 1, 2, 3};
	assert_groups(&mm2->comm[0].groups, 2, 2, g);
	cr_assert_float_eq(mm2->comm[0].bytes_per_device, 8192.0, 1e-9);
	cr_assert_eq(op_named(p, "matmul1")->n_comm, 0);
}

Test(layout, seed004_layout_reducescatter)
{
	/* Layout((2,2,2), (dp, sp, mp)); rank = 4 dp + 2 sp + mp. matmul1 reads
	 * X as ("mp", ("sp","dp")) and W as (("sp","dp"), None): the contracted
	 * dimension is split over sp then dp, so Y is a partial sum over sp and
	 * dp with rows on mp: 32x64 per rank. The out layout (("mp","sp","dp"),
	 * None) splits the rows further by sp then dp: a ReduceScatter over the
	 * ranks sharing mp, ordered sp-major, dp-minor: mp = 0: (sp,dp) = (0,0)
	 * 0, (0,1) 4, (1,0) 2, (1,1) 6; mp = 1: 1, 5, 3, 7. Bytes:
	 * (4-1)/4 x 32*64*4 = 6144. matmul2 reads Y in exactly that layout. */
	struct plan *p = plan_of("scenarios/seed004-layout-8p.json", REDIST_COMPAT);
	const struct dist_op *mm1 = op_named(p, "matmul1");
	cr_assert_eq(mm1->n_comm, 1);
	cr_assert_eq(mm1->comm[0].kind, STEP_REDUCESCATTER);
	int64_t g[] = {0, 4, 2, 6, 1, 5, 3, 7};
	assert_groups(&mm1->comm[0].groups, 2, 4, g);
	cr_assert_float_eq(mm1->comm[0].bytes_per_device, 6144.0, 1e-9);
	cr_assert_eq(p->n_edges, 0);
}

Test(layout, megatron_mlp_one_allreduce)
{
	/* Seeds 001/003: W1 by columns, W2 by rows over 8: the only forward
	 * communication is fc2's AllReduce of the [B*s, h] = [1024, 1024] bf16
	 * activation (2 MiB) over all 8 ranks: 2 (7/8) x 2097152 = 3670016
	 * bytes; no redistribution anywhere. */
	struct plan *p = plan_of("scenarios/megatron-mlp-8p.json", REDIST_COMPAT);
	cr_assert_eq(count_comm(p), 1);
	const struct dist_op *fc2 = op_named(p, "mlp.fc2.matmul");
	cr_assert_eq(fc2->n_comm, 1);
	cr_assert_eq(fc2->comm[0].kind, STEP_ALLREDUCE);
	int64_t g[] = {0, 1, 2, 3, 4, 5, 6, 7};
	assert_groups(&fc2->comm[0].groups, 1, 8, g);
	cr_assert_float_eq(fc2->comm[0].bytes_per_device, 3670016.0, 1e-6);
	cr_assert_eq(p->n_edges, 0);
}

Test(layout, megatron_attention_one_allreduce)
{
	/* Heads cut over 8: q/k/v by columns, every per-head op on the head
	 * dimension, the output projection by rows: one AllReduce of [1024,
	 * 1024] bf16 after attn.out.matmul, as for the MLP. */
	struct plan *p = plan_of("scenarios/megatron-attention-8p.json", REDIST_COMPAT);
	cr_assert_eq(count_comm(p), 1);
	const struct dist_op *out = op_named(p, "attn.out.matmul");
	cr_assert_eq(out->n_comm, 1);
	cr_assert_eq(out->comm[0].kind, STEP_ALLREDUCE);
	cr_assert_float_eq(out->comm[0].bytes_per_device, 3670016.0, 1e-6);
	cr_assert_eq(p->n_edges, 0);
}
