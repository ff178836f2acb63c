/* test_propagate.c — strategy enumeration, the redistribution cost cache
 * and sharding propagation (issue 4; seed 000). Every expected value is
 * derived in the comment above it, from the seed or by hand; the oracle
 * test prices every candidate with redist_derive itself. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "fixture.h"


TestSuite(propagate, .init = fixture_setup, .fini = fixture_teardown);

/* ----------------------------------------------------------- helpers */

/* A scenario on the 8-device Atlas 800 from a model body, a shard object
 * and the all_devices switch. */
static struct scenario *scenario_of(const char *model, int devices, const char *shard,
                                    bool all_devices)
{
	size_t n = strlen(model) + strlen(shard) + 1024;
	char *text = malloc(n);
	snprintf(text, n,
	         "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"mem\","
	         " \"model\": {\"name\": \"m\", %s}, \"topology\": \"../topologies/atlas800-910a.json\","
	         " \"devices\": %d, \"shard\": {%s}, \"planners\": [\"propagate\"],"
	         " \"propagation\": {\"all_devices\": %s},"
	         " \"training\": {\"global_batch\": 8, \"dtype\": \"fp32\"}}",
	         model, devices, shard, all_devices ? "true" : "false");
	struct json_doc doc;
	struct scenario *s = NULL;
	if (json_doc_parse(&doc, "scenarios/mem.json", text, strlen(text), &D))
		s = scenario_load_doc(A, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(s, "scenario does not load: %s", text);
	free(text);
	return s;
}

static struct plan *propagate(const struct scenario *s)
{
	struct plan *p = plan_propagate(A, s, REDIST_COMPAT, &D);
	cr_assert_not_null(p);
	return p;
}

static int op_of(const struct plan *p, const char *name)
{
	int i = graph_find_op(p->graph, name);
	cr_assert_geq(i, 0, "no op %s", name);
	return i;
}

/* Op `name` has cuts {a0, a1} on input 0 and {b0, b1} (or fewer) on input 1. */
static void expect_cuts(const struct plan *p, const char *name, int n_in, const int64_t *want)
{
	const struct dist_op *d = &p->ops[op_of(p, name)];
	int k = 0;
	for (int i = 0; i < n_in; i++)
		for (int dd = 0; dd < d->in[i].rank; dd++, k++)
			cr_expect_eq(d->cuts[i][dd], want[k], "%s: input %d dim %d cut %lld, expected %lld",
			             name, i, dd, (long long)d->cuts[i][dd], (long long)want[k]);
}

static void expect_source(const struct plan *p, const char *name, enum strategy_source src,
                          const char *from)
{
	const struct dist_op *d = &p->ops[op_of(p, name)];
	cr_expect_eq(d->source, src, "%s: source %s", name, strategy_source_names[d->source]);
	if (from)
		cr_expect_eq(d->from_op, op_of(p, from), "%s: from op %d", name, d->from_op);
}

/* ------------------------------------------------------- enumeration */

static const char *MATMUL_64 =
	"\"inputs\": [{\"name\": \"x\", \"shape\": [64, 64]}],"
	"\"parameters\": [{\"name\": \"w\", \"shape\": [64, 64]}],"
	"\"ops\": [{\"name\": \"mm\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"]}]";

Test(propagate, enumerate_matmul_in_descending_order)
{
	/* MatMul mk,kn->mn, 64 each, 8 devices: (m,k,n) with product 8, in
	 * descending lexicographic order, then replication: (8,1,1) (4,2,1)
	 * (4,1,2) (2,4,1) (2,2,2) (2,1,4) (1,8,1) (1,4,2) (1,2,4) (1,1,8) and
	 * (1,1,1): 11. The tuple form: X = (m,k), W = (k,n). */
	struct scenario *s = scenario_of(MATMUL_64, 8, "", true);
	struct strategy *c;
	int n = plan_enumerate(A, s->graph, 0, 8, true, &c);
	static const int64_t want[11][3] = {{8, 1, 1}, {4, 2, 1}, {4, 1, 2}, {2, 4, 1},
	                                    {2, 2, 2}, {2, 1, 4}, {1, 8, 1}, {1, 4, 2},
	                                    {1, 2, 4}, {1, 1, 8}, {1, 1, 1}};
	cr_assert_eq(n, 11);
	for (int i = 0; i < n; i++) {
		cr_expect_eq(c[i].cuts[0][0], want[i][0], "candidate %d", i);
		cr_expect_eq(c[i].cuts[0][1], want[i][1], "candidate %d", i);
		cr_expect_eq(c[i].cuts[1][0], want[i][1], "candidate %d", i);
		cr_expect_eq(c[i].cuts[1][1], want[i][2], "candidate %d", i);
	}
	/* Partial use: (2^i, 2^j, 2^k) with i+j+k <= 3 is C(6,3) = 20
	 * vectors; (1,1,1) among them comes last as replication: still 20. */
	n = plan_enumerate(A, s->graph, 0, 8, false, &c);
	cr_assert_eq(n, 20);
	cr_expect_eq(c[0].cuts[0][0], 8);
	cr_expect_eq(c[n - 1].cuts[0][0] * c[n - 1].cuts[0][1] * c[n - 1].cuts[1][1], 1);
	/* One device: only replication. */
	cr_expect_eq(plan_enumerate(A, s->graph, 0, 1, true, &c), 1);
}

Test(propagate, enumerate_respects_whole_labels_and_reshape)
{
	/* LayerNorm over the last axis of [4, 64] on 8 devices: the normalised
	 * label is whole and 4 rows cannot use 8 devices, so only replication
	 * (gamma and beta carry the whole label). Reshape [8,64] -> [8,4,16]:
	 * the input labels (8, 64) take (8,1) (4,2) (2,4) (1,8); the cut of 64
	 * carries to the output dimension 4, which 8 does not divide, so (1,8)
	 * is refused: 3 candidates and replication. */
	struct scenario *s = scenario_of(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [4, 64]}, {\"name\": \"y\", \"shape\": [8, 64]}],"
		"\"parameters\": [{\"name\": \"g\", \"shape\": [64]}, {\"name\": \"b\", \"shape\": [64]}],"
		"\"ops\": [{\"name\": \"ln\", \"kind\": \"LayerNorm\", \"inputs\": [\"x\", \"g\", \"b\"],"
		"           \"attrs\": {\"axis\": -1}},"
		"          {\"name\": \"r\", \"kind\": \"Reshape\", \"inputs\": [\"y\"],"
		"           \"attrs\": {\"shape\": [8, 4, 16]}}]",
		8, "", true);
	struct strategy *c;
	cr_expect_eq(plan_enumerate(A, s->graph, 0, 8, true, &c), 1);
	int n = plan_enumerate(A, s->graph, 1, 8, true, &c);
	cr_assert_eq(n, 4);
	static const int64_t want[4][2] = {{8, 1}, {4, 2}, {2, 4}, {1, 1}};
	for (int i = 0; i < n; i++) {
		cr_expect_eq(c[i].cuts[0][0], want[i][0], "candidate %d", i);
		cr_expect_eq(c[i].cuts[0][1], want[i][1], "candidate %d", i);
	}
}

Test(propagate, enumerate_batchmatmul_on_8192_devices)
{
	/* BatchMatMul [64,64,64,64] x [64,64,64,64]: labels b1 b2 m k n, each
	 * of size 2^6; on 2^13 devices the exponents (e1..e5) sum to 13 with
	 * each <= 6. Without the bound C(17,4) = 2380 vectors; those with some
	 * e >= 7 number 5 * C(10,4) = 1050 (two cannot both be >= 7); so 1330,
	 * plus replication: 1331. */
	struct scenario *s = scenario_of(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [64, 64, 64, 64]},"
		"             {\"name\": \"y\", \"shape\": [64, 64, 64, 64]}],"
		"\"ops\": [{\"name\": \"bmm\", \"kind\": \"BatchMatMul\", \"inputs\": [\"x\", \"y\"]}]",
		8, "", true);
	struct strategy *c;
	int n = plan_enumerate(A, s->graph, 0, 8192, true, &c);
	cr_assert_eq(n, 1331);
	/* First: the first label as cut as it can be (64), then the second
	 * (64), the rest 2: (64, 64, 2, 1, 1). */
	cr_expect_eq(c[0].cuts[0][0], 64);
	cr_expect_eq(c[0].cuts[0][1], 64);
	cr_expect_eq(c[0].cuts[0][2], 2);
	cr_expect_eq(c[0].cuts[1][3], 1);
}

/* -------------------------------------------------------------- cache */

static struct layout rows_layout(int64_t n_dev, int64_t base, int64_t split)
{
	int64_t sizes[2] = {split, n_dev / split};
	struct devmat dm;
	cr_assert(devmat_init(&dm, 2, sizes, NULL, base));
	struct tensor t = {.name = "z", .dtype = DT_FP32, .rank = 2, .dims = {64, 64}};
	struct layout l;
	layout_init(&l, &dm, &t);
	if (split > 1) {
		l.n_map[0] = 1;
		l.map[0][0] = 0;
	}
	return l;
}

Test(propagate, cache_derives_a_pair_once)
{
	/* Seed 000 figure (a) on 4 devices: Z 64x64 fp32 rows split 4 ways
	 * to Z whole is an AllGather: each device sends its 16x64x4 = 4096
	 * bytes to 3 others, 12288 bytes. */
	struct redist_cache *c = redist_cache_new();
	cr_assert_not_null(c);
	struct layout src = rows_layout(4, 0, 4), dst = rows_layout(4, 0, 1);
	/* (Criterion's float macros evaluate their arguments more than once.) */
	double b1 = redist_cache_bytes(c, &src, &dst), b2 = redist_cache_bytes(c, &src, &dst);
	cr_expect_float_eq(b1, 12288.0, 1e-9);
	cr_expect_float_eq(b2, 12288.0, 1e-9);
	int64_t hits, misses;
	redist_cache_stats(c, &hits, &misses);
	cr_expect_eq(misses, 1);
	cr_expect_eq(hits, 1, "hits %lld", (long long)hits);
	/* The other way is a StridedSlice: free, and another pair. */
	double back = redist_cache_bytes(c, &dst, &src);
	cr_expect_float_eq(back, 0.0, 0);
	/* The same placement described over [4] instead of [4, 1]: 0. */
	struct layout flat = src;
	flat.dm.n = 1;
	double same = redist_cache_bytes(c, &src, &flat);
	cr_expect_float_eq(same, 0.0, 0);
	/* Ranks 4-7 against ranks 0-3: no redistribution, -1. */
	struct layout other = rows_layout(4, 4, 4);
	double none = redist_cache_bytes(c, &src, &other);
	cr_expect_float_eq(none, -1.0, 0);
	redist_cache_stats(c, &hits, &misses);
	cr_expect_eq(misses, 4);
	cr_expect_eq(hits, 1, "hits %lld", (long long)hits);
	redist_cache_free(c);
	redist_cache_free(NULL);
}

/* ------------------------------------------------------- seed 000 */

Test(propagate, seed000_ffn_golden)
{
	/* Seed 000: dense1.matmul.shard(((2,1),(1,4))) on 8 devices; the IR
	 * shows Add ((2,4),(4)), ReLU ((2,4)), MatMul ((2,4),(4,1)), Add
	 * ((2,4),(4)). Each follows from a zero-cost edge: MatMul ((2,1),(1,4))
	 * has device matrix [2,1,4] and hands on Y with rows over the 2-axis
	 * and columns over the 4-axis; of the Add's candidates (8,1) (4,2)
	 * (2,4) (1,8) (1,1) only (2,4) is that placement; the same for ReLU;
	 * of the MatMul's, only ((2,4),(4,1)) reads X that way. */
	struct plan *p = propagate(fixture_scenario("scenarios/ffn-8p.json"));
	expect_cuts(p, "dense1.matmul", 2, (int64_t[]){2, 1, 1, 4});
	expect_cuts(p, "dense1.add", 2, (int64_t[]){2, 4, 4});
	expect_cuts(p, "relu", 1, (int64_t[]){2, 4});
	expect_cuts(p, "dense2.matmul", 2, (int64_t[]){2, 4, 4, 1});
	expect_cuts(p, "dense2.add", 2, (int64_t[]){2, 4, 4});
	expect_source(p, "dense1.matmul", STRATEGY_CONFIGURED, NULL);
	expect_source(p, "dense1.add", STRATEGY_PROPAGATED, "dense1.matmul");
	expect_source(p, "relu", STRATEGY_PROPAGATED, "dense1.add");
	expect_source(p, "dense2.matmul", STRATEGY_PROPAGATED, "relu");
	expect_source(p, "dense2.add", STRATEGY_PROPAGATED, "dense2.matmul");
	cr_expect_eq(p->n_unreached, 0);

	/* dense2.matmul cuts k in 4: AllReduce over the ranks varying along
	 * the 4-axis of [2,4,1] (rank = 4*a0 + a1): 0-1-2-3 for rank 0. */
	const struct dist_op *mm2 = &p->ops[op_of(p, "dense2.matmul")];
	cr_assert_eq(mm2->n_comm, 1);
	cr_expect_eq(mm2->comm[0].kind, STEP_ALLREDUCE);
	const struct rank_groups *g = &mm2->comm[0].groups;
	cr_assert_eq(g->size, 4);
	for (int r = 0; r < 4; r++)
		cr_expect_eq(rank_groups_rank(g, 0, r), r);

	/* Why dense2.add takes ((2,4),(4)): the MatMul hands on Y rows split
	 * 2 ways (ranks 0-3 rows 0-31) and columns whole, so (8,1), (4,2) and
	 * (2,4) are all StridedSlices, 0 bytes (3 tied of 5 candidates). All
	 * three use 8 devices: 64*64 FLOPs / 8 each. Bytes per rank (X slice +
	 * bias slice + Y slice, fp32): (8,1) 8*64 + 64 + 8*64 = 1088 elements,
	 * (4,2) 16*32 + 32 + 512 = 1056, (2,4) 32*16 + 16 + 512 = 1040: the
	 * least, so (2,4). */
	const struct plan_choice *ch = &p->choices[op_of(p, "dense2.add")];
	cr_expect_eq(ch->n_candidates, 5);
	cr_expect_eq(ch->n_tied, 3);
	cr_expect_float_eq(ch->edge_bytes, 0.0, 0);
	cr_expect_float_eq(p->ops[op_of(p, "dense2.add")].bytes_per_rank, 1040.0 * 4, 1e-9);

	/* The only edge with a step: dense2.matmul -> dense2.add, one
	 * StridedSlice to the 32x16 slice (rows by 2, columns by 4). */
	cr_assert_eq(p->n_edges, 1);
	const struct plan_edge *e = &p->edges[0];
	cr_expect_eq(e->producer, op_of(p, "dense2.matmul"));
	cr_expect_eq(e->consumer, op_of(p, "dense2.add"));
	cr_assert_eq(e->redist.n_steps, 1);
	cr_expect_eq(e->redist.steps[0].kind, STEP_SLICE);
	int64_t shape[GRAPH_MAX_RANK];
	layout_local_shape(&e->redist.steps[0].after, shape);
	cr_expect_eq(shape[0], 32);
	cr_expect_eq(shape[1], 16);
	cr_expect_float_eq(e->redist.bytes_per_device, 0.0, 0);
}

Test(propagate, seed000_figure_relu_fixed)
{
	/* Seed 000's figure: ReLU fixed at [2,4]; the MatMul after it takes
	 * [[2,4],[4,1]], the one candidate reading X as the ReLU hands it on.
	 * Backward, dense1.add takes (2,4) (zero cost; replication is also free
	 * to slice from but does 8x the FLOPs per rank). dense1.matmul: the
	 * free candidates whose output covers each rank's (32x16) slice are
	 * (2,1,4), (2,4,1), (1,2,4), (1,8,1) and replication; replication
	 * does 8x the FLOPs; bytes per rank (X + W + Y slices): (2,1,4)
	 * 2048+1024+512, (2,4,1) 512+1024+2048, (1,2,4) 2048+512+1024, all
	 * 3584, (1,8,1) 512+512+4096 = 5120. Own communication: (2,1,4) W's
	 * gradient over the 2-axis, 2*(1/2)*4096 = 4096 bytes; (2,4,1) the
	 * AllReduce of Y over 4, 2*(3/4)*8192 = 12288, plus 4096; (1,2,4) the
	 * AllReduce of Y over 2, 2*(1/2)*4096 = 4096 and no gradient. (2,1,4)
	 * and (1,2,4) tie at 4096; (2,1,4) comes first in enumeration order. */
	struct plan *p = propagate(fixture_scenario("scenarios/seed000-figure-relu-8p.json"));
	expect_cuts(p, "dense2.matmul", 2, (int64_t[]){2, 4, 4, 1});
	expect_source(p, "dense2.matmul", STRATEGY_PROPAGATED, "relu");
	expect_cuts(p, "dense1.add", 2, (int64_t[]){2, 4, 4});
	expect_source(p, "dense1.add", STRATEGY_PROPAGATED, "relu");
	expect_cuts(p, "dense1.matmul", 2, (int64_t[]){2, 1, 1, 4});
	expect_source(p, "dense1.matmul", STRATEGY_PROPAGATED, "dense1.add");
	expect_cuts(p, "dense2.add", 2, (int64_t[]){2, 4, 4});
	const struct plan_choice *ch = &p->choices[op_of(p, "dense1.matmul")];
	cr_expect_eq(ch->n_tied, 5);
	cr_expect_eq(ch->n_candidates, 11);
}

/* ------------------------------------------------------ other rules */

Test(propagate, reshape_takes_a_free_layout)
{
	/* mm ((2,1),(1,4)) hands on Y [8,64] rows over the 2-axis, columns
	 * over the 4-axis of [2,1,4]. Reshape to [8,4,16]: candidates (8,1)
	 * (4,2) (2,4) and replication ((1,8) is refused: 8 does not divide
	 * the output dimension 4). Only (2,4) holds on every rank exactly the
	 * slice it has: no communication; (8,1), (4,2) and replication need
	 * the columns gathered. */
	struct scenario *s = scenario_of(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [8, 64]}],"
		"\"parameters\": [{\"name\": \"w\", \"shape\": [64, 64]}],"
		"\"ops\": [{\"name\": \"mm\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"]},"
		"          {\"name\": \"r\", \"kind\": \"Reshape\", \"inputs\": [\"mm\"],"
		"           \"attrs\": {\"shape\": [8, 4, 16]}}]",
		8, "\"mm\": [[2, 1], [1, 4]]", true);
	struct plan *p = propagate(s);
	expect_cuts(p, "r", 1, (int64_t[]){2, 4});
	const struct plan_choice *ch = &p->choices[1];
	cr_expect_eq(ch->n_candidates, 4);
	cr_expect_eq(ch->n_tied, 1);
	cr_expect_float_eq(ch->edge_bytes, 0.0, 0);
	cr_expect_eq(p->n_edges, 0);
	/* Backward too: with the Reshape's consumer fixed, the Reshape picks
	 * the layout its consumer reads. relu on [8,4,16] cut (2,4,1) reads
	 * rows by 2 and the 4-dim by 4; the Reshape (2,4) hands on exactly
	 * that. */
	s = scenario_of(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [8, 64]}],"
		"\"ops\": [{\"name\": \"r\", \"kind\": \"Reshape\", \"inputs\": [\"x\"],"
		"           \"attrs\": {\"shape\": [8, 4, 16]}},"
		"          {\"name\": \"act\", \"kind\": \"ReLU\", \"inputs\": [\"r\"]}]",
		8, "\"act\": [[2, 4, 1]]", true);
	p = propagate(s);
	expect_cuts(p, "r", 1, (int64_t[]){2, 4});
	cr_expect_float_eq(p->choices[0].edge_bytes, 0.0, 0);
}

Test(propagate, unreached_ops_are_data_parallel)
{
	/* Two separate branches; only the first has a configured op. The
	 * second (mm2, act2) is never reached: data parallel, the batch of 16
	 * rows cut 8 ways, parameters whole; 2 unreached. */
	struct scenario *s = scenario_of(
		"\"inputs\": [{\"name\": \"x\", \"shape\": [16, 32]}, {\"name\": \"y\", \"shape\": [16, 32]}],"
		"\"parameters\": [{\"name\": \"w1\", \"shape\": [32, 32]}, {\"name\": \"w2\", \"shape\": [32, 32]}],"
		"\"ops\": [{\"name\": \"mm1\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w1\"]},"
		"          {\"name\": \"act1\", \"kind\": \"ReLU\", \"inputs\": [\"mm1\"]},"
		"          {\"name\": \"mm2\", \"kind\": \"MatMul\", \"inputs\": [\"y\", \"w2\"]},"
		"          {\"name\": \"act2\", \"kind\": \"ReLU\", \"inputs\": [\"mm2\"]}]",
		8, "\"mm1\": [[1, 2], [2, 4]]", true);
	struct plan *p = propagate(s);
	cr_expect_eq(p->n_unreached, 2);
	expect_source(p, "act1", STRATEGY_PROPAGATED, "mm1");
	expect_source(p, "mm2", STRATEGY_DEFAULT, NULL);
	expect_source(p, "act2", STRATEGY_DEFAULT, NULL);
	expect_cuts(p, "mm2", 2, (int64_t[]){8, 1, 1, 1});
	expect_cuts(p, "act2", 1, (int64_t[]){8, 1});
	cr_expect_eq(p->choices[2].n_candidates, 0);
}

/* A small GPT: 2 heads of 16, sequence 8, vocabulary 64, no dropout. */
static struct scenario *small_gpt(int layers, const char *shard)
{
	char model[512];
	snprintf(model, sizeof model,
	         "\"generator\": {\"kind\": \"gpt\", \"layers\": %d,"
	         " \"hidden\": 32, \"heads\": 2, \"seq\": 8, \"vocab\": 64, \"micro_batch\": 2,"
	         " \"dropout\": 0, \"dtype\": \"fp32\"}",
	         layers);
	return scenario_of(model, 8, shard, true);
}

Test(propagate, tied_embedding_placed_once)
{
	/* lm_head = MatMul(x, embed.word.weight^T) configured vocabulary
	 * parallel: W [V,h] rows cut 8. embed.word (Gather of the same
	 * parameter) is decided later, by propagation, and must read the
	 * table in the same placement: rows over all 8 devices. Its own
	 * neighbours would not ask for that (the Add after it reads [B,s,h]),
	 * so only the consistency rule puts it there. */
	struct plan *p = propagate(small_gpt(2, "\"lm_head\": [[1, 1], [8, 1]]"));
	int emb = op_of(p, "embed.word"), head = op_of(p, "lm_head");
	cr_expect_eq(p->ops[emb].source, STRATEGY_PROPAGATED);
	cr_expect(layout_same_placement(&p->ops[emb].in[0], &p->ops[head].in[1]));
	cr_expect_eq(p->ops[emb].cuts[0][0], 8);
	cr_expect_not(p->choices[emb].param_conflict);
	cr_expect_eq(p->n_unreached, 0);
	/* Configured in the middle instead: whichever of the two is decided
	 * first, the other follows. */
	p = propagate(small_gpt(2, "\"layers.0.mlp.fc1.matmul\": [[2, 1], [1, 4]]"));
	emb = op_of(p, "embed.word");
	head = op_of(p, "lm_head");
	cr_expect(layout_same_placement(&p->ops[emb].in[0], &p->ops[head].in[1]));
	cr_expect_not(p->choices[emb].param_conflict);
	cr_expect_not(p->choices[head].param_conflict);
}

Test(propagate, repeated_layers_hit_the_cache)
{
	/* Layers are identical, so once propagation has walked one, the ops
	 * of the next meet neighbours laid out as their twins' were and take
	 * their twins' decisions without pricing anything: 8 layers ask the
	 * cache exactly what 4 layers do (the same misses and hits). Deciding
	 * every op afresh, 8 layers ask no pair that 4 layers did not (the
	 * same misses) and ask each again (more hits), far more often than
	 * they derive. */
	int64_t hits[2][2], misses[2][2];
	int layers[2] = {4, 8};
	for (int fresh = 0; fresh < 2; fresh++)
		for (int i = 0; i < 2; i++) {
			struct redist_cache *c = redist_cache_new();
			struct scenario *s =
				small_gpt(layers[i], "\"layers.0.mlp.fc1.matmul\": [[2, 1], [1, 4]]");
			struct plan *p = fresh ? plan_propagate_fresh(A, s, REDIST_COMPAT, c, &D)
			                       : plan_propagate_cache(A, s, REDIST_COMPAT, c, &D);
			cr_assert_not_null(p);
			redist_cache_stats(c, &hits[fresh][i], &misses[fresh][i]);
			redist_cache_free(c);
		}
	cr_expect_eq(misses[0][1], misses[0][0]);
	cr_expect_eq(hits[0][1], hits[0][0], "remembered: hits %lld and %lld",
	             (long long)hits[0][0], (long long)hits[0][1]);
	cr_expect_eq(misses[1][1], misses[1][0], "misses %lld and %lld", (long long)misses[1][0],
	             (long long)misses[1][1]);
	cr_expect_eq(misses[1][0], misses[0][0]);
	cr_expect_gt(hits[1][1], hits[1][0]);
	cr_expect_gt(hits[1][1], 4 * misses[1][1], "hits %lld misses %lld", (long long)hits[1][1],
	             (long long)misses[1][1]);
}

/* The two plans are the same op by op: strategies, layouts, where each
 * came from and the figures of its choice, and the same edges. */
static void expect_same_plans(const struct plan *p, const struct plan *q, const char *what)
{
	cr_assert_eq(p->graph->n_ops, q->graph->n_ops);
	for (int v = 0; v < p->graph->n_ops; v++) {
		const struct dist_op *a = &p->ops[v], *b = &q->ops[v];
		cr_expect_eq(a->source, b->source, "%s op %d", what, v);
		cr_expect_eq(a->from_op, b->from_op, "%s op %d", what, v);
		cr_assert_eq(a->n_in, b->n_in);
		for (int i = 0; i < a->n_in; i++) {
			int64_t x[LAYOUT_KEY_WORDS], y[LAYOUT_KEY_WORDS];
			int n = layout_key(&a->in[i], x);
			cr_expect(n == layout_key(&b->in[i], y) && !memcmp(x, y, (size_t)n * sizeof(x[0])),
			          "%s op %d input %d", what, v, i);
			for (int d = 0; d < a->in[i].rank; d++)
				cr_expect_eq(a->cuts[i][d], b->cuts[i][d], "%s op %d", what, v);
		}
		cr_expect_eq(a->n_comm, b->n_comm, "%s op %d", what, v);
		cr_expect_eq(a->n_grad, b->n_grad, "%s op %d", what, v);
		cr_expect_eq(p->choices[v].n_candidates, q->choices[v].n_candidates, "%s op %d", what, v);
		cr_expect_eq(p->choices[v].n_tied, q->choices[v].n_tied, "%s op %d", what, v);
		cr_expect_eq(p->choices[v].edge_bytes, q->choices[v].edge_bytes, "%s op %d", what, v);
		cr_expect_eq(p->choices[v].param_conflict, q->choices[v].param_conflict, "%s op %d",
		             what, v);
	}
	cr_expect_eq(p->n_edges, q->n_edges, "%s", what);
	cr_expect_eq(p->n_unreached, q->n_unreached, "%s", what);
}

Test(propagate, remembered_decisions_change_nothing)
{
	/* Every op decided afresh against decisions taken from alike twins:
	 * the same plan, on GPTs configured in different places (a column-
	 * and a row-parallel MatMul, the tied head, the attention, partial
	 * device use), on 8 devices. */
	static const struct {
		int layers;
		const char *shard;
	} cases[] = {
		{6, "\"layers.0.mlp.fc1.matmul\": [[2, 1], [1, 4]]"},
		{6, "\"layers.2.mlp.fc2.matmul\": [[1, 8], [8, 1]]"},
		{4, "\"lm_head\": [[1, 1], [8, 1]]"},
		{5, "\"layers.1.attn.q.matmul\": [[4, 1], [1, 2]]"},
		{5, "\"layers.0.attn.out.matmul\": [[2, 2], [2, 1]], "
		    "\"layers.3.mlp.fc1.matmul\": [[8, 1], [1, 1]]"},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct scenario *s = small_gpt(cases[k].layers, cases[k].shard);
		struct redist_cache *c = redist_cache_new();
		struct plan *p = plan_propagate_cache(A, s, REDIST_COMPAT, c, &D);
		struct plan *q = plan_propagate_fresh(A, s, REDIST_COMPAT, c, &D);
		redist_cache_free(c);
		cr_assert(p && q, "%s", cases[k].shard);
		expect_same_plans(p, q, cases[k].shard);
	}
}

/* ------------------------------------------------------------ oracle */

/* A fixed-seed generator (xorshift), so that the cases never change. */
static uint64_t rng = 0x2545F4914F6CDD1Dull;
static int rnd(int n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (int)(rng % (uint64_t)n);
}

/* The model of case `shape`: a chain of n ops over [M, N] (MatMul with its
 * own [N, N] weight, Add of a [N] bias, ReLU, Softmax) or a diamond
 * a = MatMul(x), b = ReLU(a), c = MatMul(a), d = Add(b, c), e = ReLU(d). */
static void oracle_model(char *buf, size_t size, bool diamond, int n, int64_t M, int64_t N)
{
	static const char *const kinds[4] = {"MatMul", "Add", "ReLU", "Softmax"};
	size_t o = (size_t)snprintf(buf, size,
	                            "\"inputs\": [{\"name\": \"x\", \"shape\": [%lld, %lld]}],"
	                            "\"parameters\": [",
	                            (long long)M, (long long)N);
	for (int i = 0; i < 6; i++)
		o += (size_t)snprintf(buf + o, size - o,
		                      "%s{\"name\": \"w%d\", \"shape\": [%lld, %lld]},"
		                      "{\"name\": \"b%d\", \"shape\": [%lld]}",
		                      i ? "," : "", i, (long long)N, (long long)N, i, (long long)N);
	o += (size_t)snprintf(buf + o, size - o, "], \"ops\": [");
	if (diamond) {
		snprintf(buf + o, size - o,
		         "{\"name\": \"op0\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w0\"]},"
		         "{\"name\": \"op1\", \"kind\": \"ReLU\", \"inputs\": [\"op0\"]},"
		         "{\"name\": \"op2\", \"kind\": \"MatMul\", \"inputs\": [\"op0\", \"w1\"]},"
		         "{\"name\": \"op3\", \"kind\": \"Add\", \"inputs\": [\"op1\", \"op2\"]},"
		         "{\"name\": \"op4\", \"kind\": \"ReLU\", \"inputs\": [\"op3\"]}]");
		return;
	}
	for (int i = 0; i < n; i++) {
		int k = rnd(4);
		char prev[16];
		snprintf(prev, sizeof prev, i ? "op%d" : "x", i - 1);
		if (k == 0)
			o += (size_t)snprintf(buf + o, size - o,
			                      "%s{\"name\": \"op%d\", \"kind\": \"MatMul\", \"inputs\": [\"%s\", \"w%d\"]}",
			                      i ? "," : "", i, prev, i);
		else if (k == 1)
			o += (size_t)snprintf(buf + o, size - o,
			                      "%s{\"name\": \"op%d\", \"kind\": \"Add\", \"inputs\": [\"%s\", \"b%d\"]}",
			                      i ? "," : "", i, prev, i);
		else
			o += (size_t)snprintf(buf + o, size - o,
			                      "%s{\"name\": \"op%d\", \"kind\": \"%s\", \"inputs\": [\"%s\"]%s}",
			                      i ? "," : "", i, kinds[k], prev,
			                      k == 3 ? ", \"attrs\": {\"axis\": -1}" : "");
	}
	snprintf(buf + o, size - o, "]");
}

/* Every valid strategy of op v, by brute force over the cuts of each
 * input dimension (divisors of the device count), independently of
 * plan_enumerate: those distop accepts that use all devices (or any
 * number), plus replication. Calls f on each. */
struct brute {
	const struct graph *g;
	int v;
	int64_t n;
	bool all;
	int64_t cuts[SIG_MAX_TENSORS][GRAPH_MAX_RANK];
	int count;
	double least;                      /* least edge cost */
	const struct plan *p;
	const int *nbr;
	int n_nbr;
};

/* Edge bytes of dist op d (standing for v) to the neighbours in nbr,
 * from redist_derive directly. */
static double oracle_cost(const struct brute *b, const struct dist_op *d)
{
	const struct graph *g = b->g;
	const struct op *o = &g->ops[b->v];
	double sum = 0;
	for (int k = 0; k < b->n_nbr; k++) {
		int w = b->nbr[k];
		const struct dist_op *dw = &b->p->ops[w];
		for (int j = 0; j < o->n_in; j++)
			if (g->tensors[o->in[j]].producer == w) {
				struct redist r;
				cr_assert(redist_derive(A, &dw->out[0], &d->in[j], &r, &D));
				sum += r.bytes_per_device;
			}
		for (int j = 0; j < g->ops[w].n_in; j++)
			if (g->ops[w].in[j] == o->out[0]) {
				struct redist r;
				cr_assert(redist_derive(A, &d->out[0], &dw->in[j], &r, &D));
				sum += r.bytes_per_device;
			}
	}
	return sum;
}

static void brute_visit(struct brute *b)
{
	struct op_sig sig;
	cr_assert(graph_op_signature(b->g, b->v, &sig));
	int64_t used = 1;
	bool ones = true;
	int64_t seen[SIG_MAX_LABELS] = {0};
	for (int i = 0; i < b->g->ops[b->v].n_in; i++)
		for (int d = 0; d < sig.in_rank[i]; d++) {
			int l = sig.in[i][d];
			ones &= b->cuts[i][d] == 1;
			if (l >= 0 && !seen[l]) {
				seen[l] = b->cuts[i][d];
				used *= b->cuts[i][d];
			}
		}
	if (b->all && used != b->n && !ones)
		return;
	struct diag_list quiet;
	diag_list_init(&quiet);
	struct dist_op d;
	bool ok = dist_op_from_cuts(A, b->g, b->v, (const int64_t(*)[GRAPH_MAX_RANK])b->cuts, b->n,
	                            &d, &quiet);
	diag_list_free(&quiet);
	if (!ok)
		return;
	b->count++;
	double c = oracle_cost(b, &d);
	if (c < b->least)
		b->least = c;
}

static void brute_dims(struct brute *b, int i, int d)
{
	const struct op *o = &b->g->ops[b->v];
	if (i == o->n_in) {
		brute_visit(b);
		return;
	}
	const struct tensor *t = &b->g->tensors[o->in[i]];
	if (d == t->rank) {
		brute_dims(b, i + 1, 0);
		return;
	}
	for (int64_t k = 1; k <= b->n; k++)
		if (b->n % k == 0 && t->dims[d] % k == 0) {
			b->cuts[i][d] = k;
			brute_dims(b, i, d + 1);
		}
}

static bool adjacent(const struct graph *g, int u, int v)
{
	for (int j = 0; j < g->ops[v].n_in; j++)
		if (g->tensors[g->ops[v].in[j]].producer == u)
			return true;
	for (int j = 0; j < g->ops[u].n_in; j++)
		if (g->tensors[g->ops[u].in[j]].producer == v)
			return true;
	return false;
}

Test(propagate, oracle_least_edge_cost_on_chains_and_diamonds)
{
	/* 200 random chains (2-6 ops) and 5-op diamonds, 2/4/6/8 devices, all
	 * or partial device use, one op configured with a random valid
	 * strategy. With one configured op c, an unconfigured neighbour v of c
	 * is decided from c and, where it waited for a second producer, from
	 * the op that released it (its from_op): those are exactly the ops
	 * decided before it among its neighbours. The oracle prices every
	 * valid strategy of v against them with redist_derive and checks that
	 * the chosen one costs the least, and that propagation saw as many
	 * candidates. */
	static const int devs[4] = {2, 4, 6, 8};
	static const int64_t sizes[3] = {12, 24, 48};
	int checked = 0;
	for (int t = 0; t < 200; t++) {
		bool diamond = t % 4 == 3, all = rnd(3) > 0;
		int n_ops = diamond ? 5 : 2 + rnd(5), n = devs[rnd(4)];
		char model[8192];
		oracle_model(model, sizeof model, diamond, n_ops, sizes[rnd(3)], sizes[rnd(3)]);
		struct scenario *s0 = scenario_of(model, n, "", all);
		int c = rnd(n_ops);
		struct strategy *cand;
		int nc = plan_enumerate(A, s0->graph, c, n, all, &cand);
		cr_assert_gt(nc, 0);
		const struct strategy *st = &cand[rnd(nc)];
		char shard[512];
		size_t o = (size_t)snprintf(shard, sizeof shard, "\"op%d\": [", c);
		const struct op *oc = &s0->graph->ops[c];
		for (int i = 0; i < oc->n_in; i++) {
			const struct tensor *tt = &s0->graph->tensors[oc->in[i]];
			o += (size_t)snprintf(shard + o, sizeof shard - o, "%s[", i ? ", " : "");
			for (int d = 0; d < tt->rank; d++)
				o += (size_t)snprintf(shard + o, sizeof shard - o, "%s%lld", d ? ", " : "",
				                      (long long)st->cuts[i][d]);
			o += (size_t)snprintf(shard + o, sizeof shard - o, "]");
		}
		snprintf(shard + o, sizeof shard - o, "]");
		struct scenario *s = scenario_of(model, n, shard, all);
		struct plan *p = propagate(s);
		const struct graph *g = s->graph;
		for (int v = 0; v < g->n_ops; v++) {
			if (v == c || !adjacent(g, c, v))
				continue;
			const struct dist_op *dv = &p->ops[v];
			cr_assert_eq(dv->source, STRATEGY_PROPAGATED, "case %d op %d", t, v);
			int nbr[2] = {c, dv->from_op};
			struct brute b = {.g = g, .v = v, .n = n, .all = all, .least = HUGE_VAL, .p = p,
			                  .nbr = nbr, .n_nbr = dv->from_op == c ? 1 : 2};
			brute_dims(&b, 0, 0);
			double chosen = oracle_cost(&b, dv);
			cr_expect_float_eq(chosen, b.least, 1e-6 * fmax(1, b.least),
			                   "case %d (%s, %d devices) op%d: chosen %g, least %g", t,
			                   diamond ? "diamond" : "chain", n, v, chosen, b.least);
			cr_expect_float_eq(p->choices[v].edge_bytes, b.least, 1e-6 * fmax(1, b.least),
			                   "case %d op%d", t, v);
			cr_expect_eq(p->choices[v].n_candidates, b.count, "case %d op%d: %d candidates, "
			             "brute force %d", t, v, p->choices[v].n_candidates, b.count);
			checked++;
		}
	}
	cr_expect_geq(checked, 200);
}
