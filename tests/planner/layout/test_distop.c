/* test_distop.c — distributed operators from dimension signatures.
 *
 * Every expected value is derived by hand from the seeds (000: MindSpore
 * sharding and the FFN; 001/003: Megatron tensor parallelism and
 * vocabulary-parallel cross-entropy; 004: Layout) in the comment beside
 * it, never copied from shardlab's output. Run from the repository root.
 */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

#include "planner.h"
#include "fixture.h"

#define HEAD "{\"format\": \"shardlab-model\", \"version\": 1, \"name\": \"t\",\n"


TestSuite(distop, .init = fixture_setup, .fini = fixture_teardown);

/* A graph from the body of a model object. */
static struct graph *load(const char *body)
{
	char text[4096];
	snprintf(text, sizeof text, HEAD "%s}", body);
	struct json_doc doc;
	struct graph *g = NULL;
	if (json_doc_parse(&doc, "mem.json", text, strlen(text), &D))
		g = graph_load_doc(A, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(g, "%s", D.count ? D.items[0].msg : "?");
	return g;
}

/* A MatMul "mm" of x [m,k] (input) and w [k,n] (parameter). */
static struct graph *matmul(int64_t m, int64_t k, int64_t n)
{
	char body[1024];
	snprintf(body, sizeof body,
	         "\"inputs\": [{\"name\": \"x\", \"shape\": [%lld, %lld]}],"
	         "\"parameters\": [{\"name\": \"w\", \"shape\": [%lld, %lld]}],"
	         "\"ops\": [{\"name\": \"mm\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"]}]",
	         (long long)m, (long long)k, (long long)k, (long long)n);
	return load(body);
}

/* Distributes op 0 under cuts (two inputs at most here). */
static bool cut(const struct graph *g, int op, const int64_t (*cuts)[GRAPH_MAX_RANK], int64_t n,
                struct dist_op *d)
{
	return dist_op_from_cuts(A, g, op, cuts, n, d, &D);
}

static void assert_dm(const struct devmat *dm, int n, const int64_t *sizes)
{
	cr_assert_eq(dm->n, n, "device matrix has %d axes, want %d", dm->n, n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(dm->size[i], sizes[i], "axis %d is %lld, want %lld", i,
		             (long long)dm->size[i], (long long)sizes[i]);
}

static void assert_map(const struct layout *l, int d, int n, const int *want)
{
	int m[PLAN_MAX_AXES];
	cr_assert_eq(layout_tensor_map(l, d, m), n);
	for (int i = 0; i < n; i++)
		cr_assert_eq(m[i], want[i], "dim %d map[%d] = %d, want %d", d, i, m[i], want[i]);
}

/* groups as a flat list, group after group. */
static void assert_groups(const struct rank_groups *g, int n_groups, int size,
                          const int64_t *ranks)
{
	cr_assert_eq(g->n_groups, n_groups, "%d groups, want %d", g->n_groups, n_groups);
	cr_assert_eq(g->size, size, "groups of %d, want %d", g->size, size);
	for (int i = 0; i < n_groups * size; i++)
		cr_assert_eq(rank_groups_rank(g, i / g->size, i % g->size), ranks[i],
		             "rank %d of the groups is %lld, want %lld", i,
		             (long long)rank_groups_rank(g, i / g->size, i % g->size), (long long)ranks[i]);
}

static void assert_diag(const char *want)
{
	for (size_t i = 0; i < D.count; i++)
		if (strstr(D.items[i].msg, want))
			return;
	cr_assert_fail("no diagnostic \"%s\"; first: \"%s\"", want, D.count ? D.items[0].msg : "");
}

/* ------------------------------------------------------------- seed 000 */

Test(distop, seed000_matmul_2_1_1_4)
{
	struct graph *g = matmul(64, 64, 64);
	struct dist_op d;
	const int64_t cuts[2][GRAPH_MAX_RANK] = {{2, 1}, {1, 4}};
	cr_assert(cut(g, 0, cuts, 8, &d));
	/* ((a,b),(b,c)) -> [a,b,c] = [2,1,4]; 2*1*4 = 8 devices, no repeat. */
	assert_dm(&d.dm, 3, (int64_t[]){2, 1, 4});
	/* Tensor maps count axes from the right: m is axis 0 -> 2, k axis 1
	 * -> 1, n axis 2 -> 0. X [2,1], W [1,0], Y [2,0] (docs/planner.md). */
	assert_map(&d.in[0], 0, 1, (int[]){2});
	assert_map(&d.in[0], 1, 1, (int[]){1});
	assert_map(&d.in[1], 0, 1, (int[]){1});
	assert_map(&d.in[1], 1, 1, (int[]){0});
	assert_map(&d.out[0], 0, 1, (int[]){2});
	assert_map(&d.out[0], 1, 1, (int[]){0});
	/* Row-major over [2,1,4]: rank r has coordinates (r/4, 0, r%4). X rows
	 * are cut by the first: ranks 0-3 rows 0-31, 4-7 rows 32-63, all 64
	 * columns. W columns by the last: 16 per slice, rank r cols 16(r%4). */
	for (int64_t r = 0; r < 8; r++) {
		int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK];
		layout_slice(&d.in[0], r, lo, hi);
		cr_assert_eq(lo[0], r < 4 ? 0 : 32);
		cr_assert_eq(hi[0], r < 4 ? 32 : 64);
		cr_assert_eq(lo[1], 0);
		cr_assert_eq(hi[1], 64);
		layout_slice(&d.in[1], r, lo, hi);
		cr_assert_eq(lo[0], 0);
		cr_assert_eq(hi[0], 64);
		cr_assert_eq(lo[1], 16 * (r % 4));
		cr_assert_eq(hi[1], 16 * (r % 4) + 16);
	}
	/* k is cut 1: nothing partial, no forward communication. */
	cr_assert_eq(d.out_partial[0].partial, 0);
	cr_assert_eq(d.n_comm, 0);
	/* W [k,n] uses axes 1 and 2; axis 0 (size 2) replicates it, so ranks
	 * differing only there hold the same slice: {0,4},{1,5},{2,6},{3,7}.
	 * Local W [64,16] fp32 = 4096 B; AllReduce 2(2-1)/2 * 4096 = 4096. */
	cr_assert_eq(d.n_grad, 1);
	cr_assert_eq(d.grad[0].kind, STEP_ALLREDUCE);
	assert_groups(&d.grad[0].groups, 4, 2, (int64_t[]){0, 4, 1, 5, 2, 6, 3, 7});
	cr_assert_eq(d.grad[0].bytes_per_device, 4096);
	/* 2*64^3 FLOPs over 2*1*4 = 8 distinct slices of work. */
	cr_assert_eq(d.flops_per_rank, 2.0 * 64 * 64 * 64 / 8);
	/* Local X [32,64] + W [64,16] + Y [32,16], fp32:
	 * (2048 + 1024 + 512) * 4 = 14336 B. */
	cr_assert_eq(d.bytes_per_rank, 14336);
	cr_assert_eq(d.source, STRATEGY_CONFIGURED);
}

Test(distop, seed000_ffn_second_matmul_allreduce)
{
	struct graph *g = matmul(64, 64, 64);
	struct dist_op d;
	const int64_t cuts[2][GRAPH_MAX_RANK] = {{2, 4}, {4, 1}};
	cr_assert(cut(g, 0, cuts, 8, &d));
	/* [m,k,n] = [2,4,1]; k (axis 1, size 4) is cut: partial sums over it,
	 * completed over the ranks that vary only along axis 1: for m = 0
	 * ranks 0-3, for m = 1 ranks 4-7 (seed 000: "AllReduce over 0-1-2-3").
	 * Local Y [32,64] fp32 = 8192 B; 2(4-1)/4 * 8192 = 12288 B. */
	assert_dm(&d.dm, 3, (int64_t[]){2, 4, 1});
	cr_assert_eq(d.out_partial[0].partial, 1u << 1);
	cr_assert_eq(d.out[0].partial, 0);
	cr_assert_eq(d.n_comm, 1);
	cr_assert_eq(d.comm[0].kind, STEP_ALLREDUCE);
	cr_assert_eq(d.comm[0].reduce, REDUCE_SUM);
	assert_groups(&d.comm[0].groups, 2, 4, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
	cr_assert_eq(d.comm[0].bytes_per_device, 12288);
	cr_assert(strstr(d.comm[0].why, "k"));
}

Test(distop, repeat_dimension_prepended)
{
	struct graph *g = matmul(64, 64, 64);
	struct dist_op d;
	const int64_t cuts[2][GRAPH_MAX_RANK] = {{2, 1}, {1, 2}};
	cr_assert(cut(g, 0, cuts, 8, &d));
	/* 2*1*2 = 4 devices of 8: a repeat axis of 8/4 = 2 first:
	 * [2, 2, 1, 2]. X's m is axis 1 -> map 4-1-1 = 2, k axis 2 -> 1. */
	assert_dm(&d.dm, 4, (int64_t[]){2, 2, 1, 2});
	assert_map(&d.in[0], 0, 1, (int[]){2});
	assert_map(&d.in[0], 1, 1, (int[]){1});
	assert_map(&d.in[1], 1, 1, (int[]){0});
	/* W is replicated over axes 0 (repeat) and 1 (m): ranks with equal
	 * n coordinate (r % 2): {0,2,4,6} and {1,3,5,7}. */
	cr_assert_eq(d.n_grad, 1);
	assert_groups(&d.grad[0].groups, 2, 4, (int64_t[]){0, 2, 4, 6, 1, 3, 5, 7});
	/* Replicated copies do the same work: 2*64^3 / 4. */
	cr_assert_eq(d.flops_per_rank, 2.0 * 64 * 64 * 64 / 4);
}

/* ------------------------------------------------------------- seed 003 */

Test(distop, seed003_second_matmul_allreduce_pairs)
{
	/* Z = Y B on 4 devices, ((2,2),(2,1)): [m,k,n] = [2,2,1]; k on axis 1.
	 * Rank r = 2m + k: the pairs differing in k are {0,1} and {2,3}. */
	struct graph *g = matmul(8, 8, 8);
	struct dist_op d;
	const int64_t cuts[2][GRAPH_MAX_RANK] = {{2, 2}, {2, 1}};
	cr_assert(cut(g, 0, cuts, 4, &d));
	assert_dm(&d.dm, 3, (int64_t[]){2, 2, 1});
	cr_assert_eq(d.n_comm, 1);
	assert_groups(&d.comm[0].groups, 2, 2, (int64_t[]){0, 1, 2, 3});
	/* Local Z [4,8] fp32 = 128 B; 2(2-1)/2 * 128 = 128 B. */
	cr_assert_eq(d.comm[0].bytes_per_device, 128);
	/* B [k,n] is replicated over m (axis 0): {0,2} and {1,3}. */
	cr_assert_eq(d.n_grad, 1);
	assert_groups(&d.grad[0].groups, 2, 2, (int64_t[]){0, 2, 1, 3});
}

Test(distop, megatron_mlp_one_allreduce)
{
	/* Megatron MLP on 8 (seeds 001/003): x [B*s = 16, h = 8], W1 [8,32]
	 * cut by columns ((1,1),(1,8)), W2 [32,8] by rows ((1,8),(8,1)). */
	struct graph *g = load(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [16, 8]}],"
		"\"parameters\": [{\"name\": \"w1\", \"shape\": [8, 32]}, {\"name\": \"w2\","
		" \"shape\": [32, 8]}],"
		"\"ops\": [{\"name\": \"fc1\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w1\"]},"
		" {\"name\": \"gelu\", \"kind\": \"GeLU\", \"inputs\": [\"fc1\"]},"
		" {\"name\": \"fc2\", \"kind\": \"MatMul\", \"inputs\": [\"gelu\", \"w2\"]}]");
	struct dist_op d1, d2;
	const int64_t c1[2][GRAPH_MAX_RANK] = {{1, 1}, {1, 8}};
	const int64_t c2[2][GRAPH_MAX_RANK] = {{1, 8}, {8, 1}};
	cr_assert(cut(g, 0, c1, 8, &d1));
	cr_assert(cut(g, 2, c2, 8, &d2));
	/* fc1: only n is cut; nothing summed is cut, no communication. W1 is
	 * split 8 ways over every rank: no gradient AllReduce either. */
	cr_assert_eq(d1.n_comm, 0);
	cr_assert_eq(d1.n_grad, 0);
	/* fc2: k cut 8 over every rank: one AllReduce over 0..7 of the whole
	 * activation [16,8] fp32 = 512 B: 2(8-1)/8 * 512 = 896 B per device. */
	cr_assert_eq(d2.n_comm, 1);
	assert_groups(&d2.comm[0].groups, 1, 8, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
	cr_assert_eq(layout_local_bytes(&d2.out_partial[0]), 512);
	cr_assert_eq(d2.comm[0].bytes_per_device, 896);
}

Test(distop, megatron_attention_heads_no_comm)
{
	/* Scores = Q K^T per head: [B=2,a=8,s=4,d=4] x [2,8,4,4], heads (the
	 * second batch label) cut 8: nothing summed is cut, no communication. */
	struct graph *g = load(
		"\"inputs\": [{\"name\": \"q\", \"shape\": [2, 8, 4, 4]}, {\"name\": \"k\","
		" \"shape\": [2, 8, 4, 4]}],"
		"\"ops\": [{\"name\": \"scores\", \"kind\": \"BatchMatMul\","
		" \"inputs\": [\"q\", \"k\"]},"
		" {\"name\": \"ctx\", \"kind\": \"BatchMatMul\", \"inputs\": [\"scores\","
		" \"k\"]}]");
	const int64_t c[2][GRAPH_MAX_RANK] = {{1, 8, 1, 1}, {1, 8, 1, 1}};
	for (int op = 0; op < 2; op++) {
		struct dist_op d;
		cr_assert(cut(g, op, c, 8, &d));
		/* labels b, c (heads), m, k, n -> [1, 8, 1, 1, 1]. */
		assert_dm(&d.dm, 5, (int64_t[]){1, 8, 1, 1, 1});
		cr_assert_eq(d.n_comm, 0);
		cr_assert_eq(layout_slices(&d.out[0], 1), 8);
	}
}

Test(distop, vocab_parallel_cross_entropy)
{
	/* logits [8,64] cut ((1,4),(1)) on 4: [n,v] = [1,4]. Seed 003: the
	 * per-row max (MAX), the sum of exponentials (SUM) and the target
	 * logit (SUM), each fp32 [8] = 32 B, over {0,1,2,3}:
	 * 2(4-1)/4 * 32 = 48 B each. The loss [8] is then complete. */
	struct graph *g = load(
		"\"inputs\": [{\"name\": \"lg\", \"shape\": [8, 64]}, {\"name\": \"y\","
		" \"shape\": [8], \"dtype\": \"int32\"}],"
		"\"ops\": [{\"name\": \"ce\", \"kind\": \"SoftmaxCrossEntropy\","
		" \"inputs\": [\"lg\", \"y\"]}]");
	struct dist_op d;
	const int64_t c[2][GRAPH_MAX_RANK] = {{1, 4}, {1}};
	cr_assert(cut(g, 0, c, 4, &d));
	assert_dm(&d.dm, 2, (int64_t[]){1, 4});
	cr_assert_eq(d.n_comm, 3);
	static const enum reduce_op red[3] = {REDUCE_MAX, REDUCE_SUM, REDUCE_SUM};
	for (int k = 0; k < 3; k++) {
		cr_assert_eq(d.comm[k].kind, STEP_ALLREDUCE);
		cr_assert_eq(d.comm[k].reduce, red[k]);
		assert_groups(&d.comm[k].groups, 1, 4, (int64_t[]){0, 1, 2, 3});
		cr_assert_eq(d.comm[k].bytes_per_device, 48);
	}
	cr_assert_eq(d.out[0].partial, 0);
	cr_assert_eq(d.out_partial[0].partial, 0);
}

Test(distop, gather_table_cut_by_rows)
{
	/* Gather(table [64,16] cut (4,1), indices [2,8] (1,1)) on 4: labels
	 * v, h, i1, i2 -> [4,1,1,1]. Each rank looks up its 16 rows (zero for
	 * the others): the output [2,8,16] is partial over axis 0, completed
	 * over {0,1,2,3}: local output 256 fp32 = 1024 B, 2(3)/4 * 1024 = 1536. */
	struct graph *g = load(
		"\"inputs\": [{\"name\": \"ix\", \"shape\": [2, 8], \"dtype\": \"int32\"}],"
		"\"parameters\": [{\"name\": \"t\", \"shape\": [64, 16]}],"
		"\"ops\": [{\"name\": \"g\", \"kind\": \"Gather\", \"inputs\": [\"t\", \"ix\"]}]");
	struct dist_op d;
	const int64_t c[2][GRAPH_MAX_RANK] = {{4, 1}, {1, 1}};
	cr_assert(cut(g, 0, c, 4, &d));
	assert_dm(&d.dm, 4, (int64_t[]){4, 1, 1, 1});
	cr_assert_eq(d.out_partial[0].partial, 1u);
	cr_assert_eq(d.n_comm, 1);
	cr_assert_eq(d.comm[0].reduce, REDUCE_SUM);
	assert_groups(&d.comm[0].groups, 1, 4, (int64_t[]){0, 1, 2, 3});
	cr_assert_eq(d.comm[0].bytes_per_device, 1536);
	/* The table is split over every rank: no gradient AllReduce. */
	cr_assert_eq(d.n_grad, 0);
}

Test(distop, reshape_carries_major_cut)
{
	/* [4,6,8] -> [24,8]: runs {4,6}->{24}, {8}->{8}. A cut 2 on dim 0 (the
	 * major dim of its run) carries to output dim 0: 2 slices of 12 rows;
	 * each rank's [2,6,8] reshapes to its [12,8]. */
	struct graph *g = load(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [4, 6, 8]}],"
		"\"ops\": [{\"name\": \"r\", \"kind\": \"Reshape\", \"inputs\": [\"x\"],"
		" \"attrs\": {\"shape\": [24, 8]}}]");
	struct dist_op d;
	const int64_t c[1][GRAPH_MAX_RANK] = {{2, 1, 1}};
	cr_assert(cut(g, 0, c, 2, &d));
	cr_assert_eq(layout_slices(&d.out[0], 0), 2);
	cr_assert_eq(layout_slices(&d.out[0], 1), 1);
	cr_assert_eq(d.n_comm, 0);
	const int64_t bad[1][GRAPH_MAX_RANK] = {{1, 2, 1}};
	cr_assert_not(cut(g, 0, bad, 2, &d));
	assert_diag("Reshape \"r\" (abc->de): dimension 1 of input 0 (x) is cut 2, but it merges into output "
	            "dimension 0 behind dimension 0; only the major dimension of a merged group "
	            "may be cut");
}

/* -------------------------------------------------------------- refusals */

Test(distop, refuses_contracted_dim_cut_differently)
{
	struct graph *g = matmul(64, 64, 64);
	struct dist_op d;
	const int64_t c[2][GRAPH_MAX_RANK] = {{1, 2}, {4, 1}};
	cr_assert_not(cut(g, 0, c, 8, &d));
	assert_diag("MatMul \"mm\" (mk,kn->mn): dimension k is cut 2 in input 0 (x) but 4 in input 1 (w)");
}

Test(distop, refuses_softmax_axis_cut)
{
	struct graph *g = load("\"inputs\": [{\"name\": \"x\", \"shape\": [8, 16]}],"
	                       "\"ops\": [{\"name\": \"sm\", \"kind\": \"Softmax\","
	                       " \"inputs\": [\"x\"]}]");
	struct dist_op d;
	const int64_t c[1][GRAPH_MAX_RANK] = {{1, 2}};
	cr_assert_not(cut(g, 0, c, 2, &d));
	assert_diag("Softmax \"sm\" (ab->ab): Softmax normalises over dimension 1, which must stay whole on "
	            "each device (input 0 (x) cuts it 2)");
}

Test(distop, refuses_broadcast_dim_cut)
{
	/* [8,16] + [1,16]: y's dim 0 is 1 stretched to 8. */
	struct graph *g = load(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [8, 16]}, {\"name\": \"y\","
		" \"shape\": [1, 16]}],"
		"\"ops\": [{\"name\": \"add\", \"kind\": \"Add\", \"inputs\": [\"x\", \"y\"]}]");
	struct dist_op d;
	const int64_t c[2][GRAPH_MAX_RANK] = {{2, 1}, {2, 1}};
	cr_assert_not(cut(g, 0, c, 2, &d));
	assert_diag("Add \"add\" (ab,1b->ab): dimension 0 of input 1 (y) is broadcast (size 1 against 8 in the "
	            "output), so it must stay whole, but it is cut 2");
	/* Cut consistently (y whole), it is fine: x rows 2 ways, y replicated. */
	const int64_t ok[2][GRAPH_MAX_RANK] = {{2, 1}, {1, 1}};
	cr_assert(cut(g, 0, ok, 2, &d));
	cr_assert_eq(layout_slices(&d.out[0], 0), 2);
}

Test(distop, refuses_cut_not_dividing)
{
	struct graph *g = matmul(6, 64, 64);
	struct dist_op d;
	const int64_t c[2][GRAPH_MAX_RANK] = {{4, 1}, {1, 1}};
	cr_assert_not(cut(g, 0, c, 8, &d));
	assert_diag("MatMul \"mm\" (mk,kn->mn): dimension 0 of input 0 (x) has size 6, which 4 slices do not "
	            "divide");
}

Test(distop, refuses_devices_not_divided)
{
	struct graph *g = matmul(6, 64, 64);
	struct dist_op d;
	const int64_t c[2][GRAPH_MAX_RANK] = {{3, 1}, {1, 1}};
	cr_assert_not(cut(g, 0, c, 8, &d));
	assert_diag("MatMul \"mm\" (mk,kn->mn): the strategy uses 3 x 1 x 1 = 3 devices, which does not divide "
	            "the 8 devices");
}

/* ------------------------------------------------------- the Layout form */

/* Seed 004: Layout((2,2,2), ("dp","sp","mp")), X ("mp", ("sp","dp")),
 * W (("sp","dp"), None), out (("mp","sp","dp"), None). Axes: dp 0, sp 1,
 * mp 2. */
static struct shard_config seed004_config(bool with_out, struct shard_tensor_map maps[3])
{
	static const char *const names[3] = {"dp", "sp", "mp"};
	memset(maps, 0, 3 * sizeof(maps[0]));
	maps[0] = (struct shard_tensor_map){2, {1, 2}, {{2}, {1, 0}}};
	maps[1] = (struct shard_tensor_map){2, {2, 0}, {{1, 0}}};
	maps[2] = (struct shard_tensor_map){2, {3, 0}, {{2, 1, 0}}};
	struct shard_config cfg = {0};
	cfg.op_name = "mm";
	cfg.line = 7;
	cfg.form = SHARD_LAYOUT;
	cfg.n_in = 2;
	cfg.n_dev_axes = 3;
	for (int i = 0; i < 3; i++) {
		cfg.device_matrix[i] = 2;
		cfg.axis_names[i] = names[i];
	}
	cfg.in_maps = maps;
	cfg.n_out = with_out ? 1 : 0;
	cfg.out_maps = with_out ? &maps[2] : NULL;
	return cfg;
}

Test(distop, seed004_layout_partial_allreduce)
{
	/* X [16,32], W [32,16]: m on mp, k on (sp,dp), n whole. Without an
	 * out layout: out_partial m on mp, partial over sp and dp (axes 0,1),
	 * completed by an AllReduce over the ranks sharing the mp coordinate:
	 * rank = 4dp + 2sp + mp, so {0,2,4,6} and {1,3,5,7} (devmat_groups
	 * orders a group by the axes in order, dp major). Local Y [8,16] fp32
	 * = 512 B, 2(4-1)/4 * 512 = 768 B. */
	struct graph *g = matmul(16, 32, 16);
	struct shard_tensor_map maps[3];
	struct shard_config cfg = seed004_config(false, maps);
	struct dist_op d;
	cr_assert(dist_op_from_config(A, g, 0, &cfg, 8, &d, &D));
	assert_dm(&d.dm, 3, (int64_t[]){2, 2, 2});
	cr_assert_str_eq(d.dm.name[1], "sp");
	cr_assert_eq(d.out_partial[0].partial, 3u);
	assert_map(&d.out_partial[0], 0, 1, (int[]){0});
	assert_map(&d.in[0], 1, 2, (int[]){1, 2});
	cr_assert_eq(d.cuts[0][0], 2);
	cr_assert_eq(d.cuts[0][1], 4);
	cr_assert_eq(d.n_comm, 1);
	assert_groups(&d.comm[0].groups, 2, 4, (int64_t[]){0, 2, 4, 6, 1, 3, 5, 7});
	cr_assert_eq(d.comm[0].bytes_per_device, 768);
}

Test(distop, seed004_layout_out_reducescatter)
{
	/* With out (("mp","sp","dp"), None): Y's rows are split 8 ways, slice
	 * index 4mp + 2sp + dp. The partial sums over (sp, dp) end split over
	 * them: one ReduceScatter per mp coordinate. For mp = 0 the members
	 * (sp,dp) = (0,0),(0,1),(1,0),(1,1) are ranks 0,4,2,6 and take row
	 * slices 0,1,2,3 of the mp-0 half: group {0,4,2,6}; for mp = 1
	 * {1,5,3,7}. Each holds a partial [8,16] fp32 = 512 B and sends
	 * (4-1)/4 * 512 = 384 B. */
	struct graph *g = matmul(16, 32, 16);
	struct shard_tensor_map maps[3];
	struct shard_config cfg = seed004_config(true, maps);
	struct dist_op d;
	cr_assert(dist_op_from_config(A, g, 0, &cfg, 8, &d, &D), "%s",
	          D.count ? D.items[0].msg : "");
	cr_assert_eq(d.out_partial[0].partial, 3u);
	cr_assert_eq(d.out[0].partial, 0);
	assert_map(&d.out[0], 0, 3, (int[]){0, 1, 2});
	cr_assert_eq(d.n_comm, 1);
	cr_assert_eq(d.comm[0].kind, STEP_REDUCESCATTER);
	cr_assert_eq(d.comm[0].groups.n_groups, 2);
	cr_assert_eq(d.comm[0].groups.size, 4);
	/* The sets {0,2,4,6} and {1,3,5,7} (the order inside a group is the
	 * scatter order, derived above as 0,4,2,6). */
	for (int k = 0; k < 2; k++) {
		int64_t seen = 0;
		for (int j = 0; j < 4; j++)
			seen |= (int64_t)1 << rank_groups_rank(&d.comm[0].groups, k, j);
		cr_assert_eq(seen, k == 0 ? 0x55 : 0xaa);
	}
	cr_assert_eq(d.comm[0].bytes_per_device, 384);
}

Test(distop, layout_refuses_inconsistent_label)
{
	struct graph *g = matmul(16, 32, 16);
	struct shard_tensor_map maps[3];
	struct shard_config cfg = seed004_config(false, maps);
	/* W's k on ("dp") only, while X has it on ("sp","dp"). */
	maps[1] = (struct shard_tensor_map){2, {1, 0}, {{0}}};
	struct dist_op d;
	cr_assert_not(dist_op_from_config(A, g, 0, &cfg, 8, &d, &D));
	assert_diag("MatMul \"mm\" (mk,kn->mn): dimension k is mapped to (sp, dp) in input 0 (x) but to dp in "
	            "input 1 (w)");
	cr_assert_eq(D.items[0].line, 7);
}

/* --------------------------------------------------------- data parallel */

Test(distop, data_parallel_matmul_add_gather)
{
	struct graph *g = load(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [64, 16]}, {\"name\": \"ix\","
		" \"shape\": [8, 4], \"dtype\": \"int32\"}],"
		"\"parameters\": [{\"name\": \"w\", \"shape\": [16, 16]}, {\"name\": \"b\","
		" \"shape\": [16]},"
		" {\"name\": \"t\", \"shape\": [100, 16]}],"
		"\"ops\": [{\"name\": \"mm\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"]},"
		" {\"name\": \"add\", \"kind\": \"Add\", \"inputs\": [\"mm\", \"b\"]},"
		" {\"name\": \"g\", \"kind\": \"Gather\", \"inputs\": [\"t\", \"ix\"]},"
		" {\"name\": \"sm\", \"kind\": \"Softmax\", \"inputs\": [\"g\"]}]");
	struct dist_op d;
	/* MatMul: x rows cut 8 ((8,1),(1,1)) -> [8,1,1]; W replicated on all
	 * 8 ranks: its gradient all-reduced over 0..7. */
	cr_assert(dist_op_data_parallel(A, g, graph_find_op(g, "mm"), 8, &d, &D));
	cr_assert_eq(d.source, STRATEGY_DEFAULT);
	assert_dm(&d.dm, 3, (int64_t[]){8, 1, 1});
	cr_assert_eq(d.cuts[0][0], 8);
	cr_assert_eq(d.cuts[1][0], 1);
	cr_assert_eq(d.n_comm, 0);
	cr_assert_eq(d.n_grad, 1);
	assert_groups(&d.grad[0].groups, 1, 8, (int64_t[]){0, 1, 2, 3, 4, 5, 6, 7});
	/* Add [64,16] + bias [16]: rows cut 8, bias (no batch label) whole. */
	cr_assert(dist_op_data_parallel(A, g, graph_find_op(g, "add"), 8, &d, &D));
	assert_dm(&d.dm, 2, (int64_t[]){8, 1});
	cr_assert_eq(d.cuts[1][0], 1);
	cr_assert_eq(d.n_grad, 1);
	cr_assert_eq(d.grad[0].groups.size, 8);
	/* Gather: the table is a parameter, so the indices [8,4] are the first
	 * non-parameter input: their dim 0 cut 8. Labels in order of first
	 * appearance v, h (table), i1, i2 (indices) -> [1,1,8,1]; output
	 * [8,4,16] rows on axis 2; no partial sums (v is cut 1). */
	cr_assert(dist_op_data_parallel(A, g, graph_find_op(g, "g"), 8, &d, &D));
	assert_dm(&d.dm, 4, (int64_t[]){1, 1, 8, 1});
	assert_map(&d.out[0], 0, 1, (int[]){1});
	cr_assert_eq(d.n_comm, 0);
	cr_assert_eq(d.n_grad, 1);
	/* Softmax of [8,4,16]: 8 rows divide 8 -> cut. */
	cr_assert(dist_op_data_parallel(A, g, graph_find_op(g, "sm"), 8, &d, &D));
	cr_assert_eq(d.cuts[0][0], 8);
	/* 6 rows on 4 devices do not divide: fully replicated, a repeat axis
	 * of 4 before the two size-1 label axes. */
	struct graph *g6 = matmul(6, 16, 16);
	cr_assert(dist_op_data_parallel(A, g6, 0, 4, &d, &D));
	assert_dm(&d.dm, 4, (int64_t[]){4, 1, 1, 1});
	cr_assert_eq(d.flops_per_rank, 2.0 * 6 * 16 * 16);
	cr_assert_eq(D.count, 0);
}

Test(distop, reshape_size_one_dims_aside)
{
	/* [1,8,4] -> [8,4,1]: runs {1,8}->{8}, {4}->{4,1}. The major dim of the
	 * first run is 8 (the 1 before it splits nothing): a cut 2 there is
	 * allowed and carries to output dim 0. */
	struct graph *g = load(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [1, 8, 4]}],"
		"\"ops\": [{\"name\": \"r\", \"kind\": \"Reshape\", \"inputs\": [\"x\"],"
		" \"attrs\": {\"shape\": [8, 4, 1]}}]");
	struct dist_op d;
	const int64_t c[1][GRAPH_MAX_RANK] = {{1, 2, 2}};
	cr_assert(cut(g, 0, c, 4, &d), "%s", D.count ? D.items[0].msg : "");
	cr_assert_eq(layout_slices(&d.out[0], 0), 2);
	cr_assert_eq(layout_slices(&d.out[0], 1), 2);
	cr_assert_eq(layout_slices(&d.out[0], 2), 1);
}
