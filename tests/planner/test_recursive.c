/* test_recursive.c — the double-recursive search (issue 5): a MatMul chain
 * worked out by hand level by level, element-wise ops copying their
 * neighbour, a shared parameter unified, a non-divisible cut reset, prime-
 * factor levels, and the two cost modes on the shipped scenario where they
 * differ. Every expected value is derived in the comment above it. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "fixture.h"


TestSuite(recursive, .init = fixture_setup, .fini = fixture_teardown);

/* A scenario from a model body and a shard object on a shipped topology. */
static struct scenario *scenario_of(const char *model, const char *topo, int devices,
                                    const char *shard)
{
	size_t n = strlen(model) + strlen(shard) + 1024;
	char *text = malloc(n);
	snprintf(text, n,
	         "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"mem\","
	         " \"model\": {\"name\": \"m\", %s}, \"topology\": \"../topologies/%s.json\","
	         " \"devices\": %d, \"shard\": {%s}, \"planners\": [\"recursive\"],"
	         " \"training\": {\"global_batch\": 8, \"dtype\": \"fp32\"}}",
	         model, topo, devices, shard);
	struct json_doc doc;
	struct scenario *s = NULL;
	if (json_doc_parse(&doc, "scenarios/mem.json", text, strlen(text), &D))
		s = scenario_load_doc(A, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(s, "scenario does not load: %s", text);
	free(text);
	return s;
}

static struct plan *plan(const struct scenario *s, enum rec_cost mode)
{
	struct plan_options o = {.mode = REDIST_COMPAT, .rec_cost = mode};
	struct plan *p = plan_recursive(A, s, &o, &D);
	cr_assert_not_null(p);
	return p;
}

static int op_of(const struct plan *p, const char *name)
{
	int i = graph_find_op(p->graph, name);
	cr_assert_geq(i, 0, "no op %s", name);
	return i;
}

/* Op `name` has these cuts, input by input, dimension by dimension. */
static void expect_cuts(const struct plan *p, const char *name, const int64_t *want)
{
	const struct dist_op *d = &p->ops[op_of(p, name)];
	int k = 0;
	for (int i = 0; i < d->n_in; i++)
		for (int dd = 0; dd < d->in[i].rank; dd++, k++)
			cr_expect_eq(d->cuts[i][dd], want[k], "%s: input %d dim %d cut %lld, expected %lld",
			             name, i, dd, (long long)d->cuts[i][dd], (long long)want[k]);
}

/* mm1 = x[256,64] . w1[64,1024]; (relu;) mm2 = y[256,1024] . w2[1024,64]. */
static const char *CHAIN =
	"\"inputs\": [{\"name\": \"x\", \"shape\": [256, 64]}],"
	"\"parameters\": [{\"name\": \"w1\", \"shape\": [64, 1024]},"
	"                 {\"name\": \"w2\", \"shape\": [1024, 64]}],"
	"\"ops\": [{\"name\": \"mm1\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w1\"]},"
	"        {\"name\": \"mm2\", \"kind\": \"MatMul\", \"inputs\": [\"mm1\", \"w2\"]}]";

static const char *CHAIN_RELU =
	"\"inputs\": [{\"name\": \"x\", \"shape\": [256, 64]}],"
	"\"parameters\": [{\"name\": \"w1\", \"shape\": [64, 1024]},"
	"                 {\"name\": \"w2\", \"shape\": [1024, 64]}],"
	"\"ops\": [{\"name\": \"mm1\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w1\"]},"
	"        {\"name\": \"relu\", \"kind\": \"ReLU\", \"inputs\": [\"mm1\"]},"
	"        {\"name\": \"mm2\", \"kind\": \"MatMul\", \"inputs\": [\"relu\", \"w2\"]}]";

/* The faithful search on 4 devices: two levels of halving, ops visited in
 * reverse topological order (mm2, then mm1). MatMul local sizes i x k
 * times k x j; cut i costs c.j.k/2 (c = 1), cut j i.k/2, cut k i.j/2; a
 * neighbour decided at this level that cuts the shared tensor y
 * differently adds 16 x |y local|; no cut costs (1.5 min)^2/350.
 *
 * Level 1 (each op has the whole tensors):
 *   mm2 (i=256, k=1024, j=64), nothing decided yet:
 *     cut i 1024*64/2 = 32768, cut j 256*1024/2 = 131072,
 *     cut k 256*64/2 = 8192 <- least; no cut (1.5*8192)^2/350 = 431,414.
 *     mm2 cuts k: y is cut on its columns (dimension w of n,c,h,w).
 *   mm1 (i=256, k=64, j=1024), mm2 decided, y local 256 x 1024:
 *     cut i 64*1024/2 = 32768 + 16*262144 (y cut on rows, not columns),
 *     cut j 256*64/2 = 8192 + 0 (y cut on columns, as mm2) <- least,
 *     cut k 256*1024/2 = 131072 + 16*262144 (y not cut).
 * Level 2:
 *   mm2 (i=256, k=512, j=64): cut i 512*64/2 = 16384, cut j 256*512/2 =
 *     65536, cut k 256*64/2 = 8192 <- least (no cut 431,414).
 *   mm1 (i=256, k=64, j=512), y local 256 x 512: cut i 64*512/2 = 16384
 *     + 16*131072, cut j 256*64/2 = 8192 <- least, cut k 256*512/2 + ...
 * Result: mm1 ((1,1),(1,4)), mm2 ((1,4),(4,1)): Megatron's column-then-
 * row split, found by element counts alone. */
Test(recursive, matmul_chain_by_hand)
{
	struct plan *p = plan(scenario_of(CHAIN, "atlas800-910a", 4, ""), REC_COST_MINDSPORE);
	expect_cuts(p, "mm1", (const int64_t[]){1, 1, 1, 4});
	expect_cuts(p, "mm2", (const int64_t[]){1, 4, 4, 1});
	cr_expect_eq(p->ops[op_of(p, "mm1")].source, STRATEGY_PLANNED);
	cr_expect_eq(p->ops[op_of(p, "mm1")].from_op, -1);
	/* The two ops agree on y: no redistribution. */
	cr_expect_eq(p->n_edges, 0);
}

/* Visit order (faithful costs, 4 devices): mm1 = x[256,4096] . w1[4096,64],
 * mm2 = y[256,64] . w2[64,16]. The two ops disagree on y: mm1 alone would
 * cut k (partial sums, y not cut), mm2 alone cuts i (y by rows). A
 * neighbour decided at the level with another cut of y adds 16 x |y| =
 * 16 x 256 x 64 = 262,144.
 * Weights at level 1 (least per-op cost of a valid cut):
 *   mm1: cut i 64*4096/2 = 131,072; cut j 256*4096/2 = 524,288;
 *        cut k 256*64/2 = 8,192 <- weight 8,192.
 *   mm2: cut i 16*64/2 = 512; cut j 256*64/2 = 8,192; cut k 256*16/2 =
 *        2,048 <- weight 512.
 * Reverse topological (mm2 first), level 1: mm2 cuts i (512 < no cut
 *   (1.5*512)^2/350 = 1,685); mm1: cut i 131,072 + 0 beats cut k 8,192 +
 *   262,144 and no cut 431,414 + 262,144. Level 2 (i halved): mm2 cut i
 *   512 again; mm1 cut i 131,072 vs cut k 128*64/2 + 16*128*64 = 135,168:
 *   cut i. Both ((4,1),(1,1)).
 * Descending weight (mm1 first, weights the same at level 2), level 1:
 *   mm1 cuts k (8,192; no neighbour decided yet); mm2: cut i 512 +
 *   262,144, cut j 8,192 + 0 (y cut by neither), cut k 2,048 + 262,144,
 *   no cut 1,685 + 0: no cut. Level 2: mm1 (k local 2048) cut k 8,192
 *   again; mm2 no cut again. mm1 ((1,4),(4,1)), mm2 ((1,1),(1,1)).
 * The scenario is tests/data/good/rec-order-chain-4p.json. */
Test(recursive, visit_order_by_hand)
{
	struct scenario *s = scenario_load(A, "tests/data/good/rec-order-chain-4p.json", &D);
	cr_assert_not_null(s);
	struct plan_options o = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_MINDSPORE};
	struct plan *rev = plan_recursive(A, s, &o, &D);
	o.rec_order = REC_ORDER_WEIGHT;
	struct plan *w = plan_recursive(A, s, &o, &D);
	cr_assert(rev && w);
	expect_cuts(rev, "mm1", (const int64_t[]){4, 1, 1, 1});
	expect_cuts(rev, "mm2", (const int64_t[]){4, 1, 1, 1});
	expect_cuts(w, "mm1", (const int64_t[]){1, 4, 4, 1});
	expect_cuts(w, "mm2", (const int64_t[]){1, 1, 1, 1});
}

/* The same chain with a ReLU between: the ReLU leaves the partitioned
 * graph (mm2 is rewired to mm1, so the search is the one above) and then
 * copies mm1's cut of y (forward first): ((1,4)). */
Test(recursive, elementwise_copies_its_neighbour)
{
	struct plan *p = plan(scenario_of(CHAIN_RELU, "atlas800-910a", 4, ""), REC_COST_MINDSPORE);
	expect_cuts(p, "mm1", (const int64_t[]){1, 1, 1, 4});
	expect_cuts(p, "relu", (const int64_t[]){1, 4});
	expect_cuts(p, "mm2", (const int64_t[]){1, 4, 4, 1});
	cr_expect_eq(p->n_edges, 0);
}

/* Both MatMuls read w [64,64]; mm1 is configured ((1,1),(1,4)), so w is
 * cut 4 on its columns. Whatever the search chooses for mm2, the fix-up
 * gives mm2's w the owner's cuts (1,4): the parameter is unified. */
Test(recursive, shared_parameter_unified)
{
	const char *model =
		"\"inputs\": [{\"name\": \"x\", \"shape\": [256, 64]}],"
		"\"parameters\": [{\"name\": \"w\", \"shape\": [64, 64]}],"
		"\"ops\": [{\"name\": \"mm1\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"]},"
		"        {\"name\": \"mm2\", \"kind\": \"MatMul\", \"inputs\": [\"mm1\", \"w\"]}]";
	for (int m = 0; m < REC_COST_COUNT; m++) {
		struct plan *p = plan(scenario_of(model, "atlas800-910a", 4,
		                                  "\"mm1\": [[1, 1], [1, 4]]"), (enum rec_cost)m);
		const struct dist_op *d = &p->ops[op_of(p, "mm2")];
		cr_expect_eq(d->cuts[1][0], 1, "%s", rec_cost_names[m]);
		cr_expect_eq(d->cuts[1][1], 4, "%s", rec_cost_names[m]);
		cr_expect_eq(p->ops[op_of(p, "mm1")].source, STRATEGY_CONFIGURED);
	}
}

/* A ReLU alone on [6, 8] over 4 devices has no neighbour, so it falls back
 * to data parallel: dimension 0 cut 4. 6 is not divisible by 4, so the cut
 * resets to 1: ((1, 1)). */
Test(recursive, non_divisible_cut_resets_to_one)
{
	const char *model =
		"\"inputs\": [{\"name\": \"x\", \"shape\": [6, 8]}],"
		"\"ops\": [{\"name\": \"relu\", \"kind\": \"ReLU\", \"inputs\": [\"x\"]}]";
	struct plan *p = plan(scenario_of(model, "atlas800-910a", 4, ""), REC_COST_MINDSPORE);
	expect_cuts(p, "relu", (const int64_t[]){1, 1});
}

/* 12 devices: levels 2, 2, 3 (prime factors, ascending). One MatMul
 * x [96,64] . w [64,128] (i=96, k=64, j=128):
 *   level 1 (f=2): cut i 64*128/2 = 4096, cut j 96*64/2 = 3072 <- least,
 *                  cut k 96*128/2 = 6144.
 *   level 2 (f=2, j=64): cut i 64*64/2 = 2048 <- least, cut j 96*64/2 =
 *                  3072, cut k 96*64/2 = 3072.
 *   level 3 (f=3, i=48): only i is divisible by 3 (j and k are 64):
 *                  2048, against no cut (1.5*2048)^2/350 = 26,963.
 * Result ((6, 1), (1, 2)) on 12 devices. */
Test(recursive, twelve_devices_prime_levels)
{
	const char *model =
		"\"inputs\": [{\"name\": \"x\", \"shape\": [96, 64]}],"
		"\"parameters\": [{\"name\": \"w\", \"shape\": [64, 128]}],"
		"\"ops\": [{\"name\": \"mm\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"]}]";
	struct plan *p = plan(scenario_of(model, "atlas800-910a-x4", 12, ""), REC_COST_MINDSPORE);
	cr_assert_eq(p->n_devices, 12);
	expect_cuts(p, "mm", (const int64_t[]){6, 1, 1, 2});
}

/* scenarios/rec-latency-2p.json: two 64 x 64 fp32 MatMuls on 2 Ascend 910.
 * mindspore: every cut costs 64*64/2 = 2048 (a tie, broken by the first
 * label, i), no cut (1.5*2048)^2/350 = 26,963: mm2 cuts i; mm1's cut i
 * agrees with it on the shared tensor (no neighbour term): both ((2,1),(1,1)).
 * The topology mode's level search keeps both whole (a cut's AllReduce
 * pays 2(n-1)α = 2 us of latency, more than the op's compute), but its
 * result is then refined on the estimator's objective starting from the
 * better of its own plan and the reference's: the refined plan is never
 * estimated slower than the reference's. */
Test(recursive, cost_modes_on_shipped_scenario)
{
	struct scenario *s = scenario_load(A, "scenarios/rec-latency-2p.json", &D);
	cr_assert_not_null(s);
	struct plan *ms = plan(s, REC_COST_MINDSPORE);
	expect_cuts(ms, "matmul1", (const int64_t[]){2, 1, 1, 1});
	expect_cuts(ms, "matmul2", (const int64_t[]){2, 1, 1, 1});
	struct plan *tp = plan(s, REC_COST_TOPOLOGY);
	struct estimate em, et;
	cr_assert(plan_estimate(A, ms, &em, &D));
	cr_assert(plan_estimate(A, tp, &et, &D));
	cr_expect_leq(et.iteration_s, em.iteration_s);
}

/* The property the refinement guarantees (it starts from the better of
 * the two searches by plan_estimate and accepts only improvements of the
 * estimator's objective): on every shipped scenario the topology mode's
 * estimate is at most the reference's. */
Test(recursive, topology_never_worse_than_reference)
{
	static const char *const files[] = {
		"scenarios/ffn-8p.json", "scenarios/ffn-8p-layout.json",
		"scenarios/seed000-ffn-ir-8p.json", "scenarios/seed000-figure-relu-8p.json",
		"scenarios/seed000-alltoall-4p.json", "scenarios/seed003-matmul-4p.json",
		"scenarios/seed004-allgather-4p.json", "scenarios/seed004-layout-8p.json",
		"scenarios/megatron-mlp-8p.json", "scenarios/megatron-attention-8p.json",
		"scenarios/rec-latency-2p.json", "scenarios/megatron-gpt-8.3b-512p.json",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct scenario *s = scenario_load(A, files[i], &D);
		cr_assert_not_null(s, "%s", files[i]);
		struct estimate em, et;
		cr_assert(plan_estimate(A, plan(s, REC_COST_MINDSPORE), &em, &D));
		cr_assert(plan_estimate(A, plan(s, REC_COST_TOPOLOGY), &et, &D));
		cr_expect_leq(et.iteration_s, em.iteration_s, "%s: topology %g s, mindspore %g s",
		              files[i], et.iteration_s, em.iteration_s);
	}
	diag_list_free(&D);
	diag_list_init(&D); /* warnings (fp32 without a peak) are not failures */
}

/* plan_rec_cost replays the chain's cuts: mm1 cuts j twice (8192 at
 * 256x64 local x, twice since x is never cut), mm2 cuts k twice (256*64/2
 * = 8192 each, the output 256 x 64 never cut): 4 x 8192 = 32768, and no
 * edge redistributes. */
Test(recursive, rec_cost_of_the_chain)
{
	struct plan *p = plan(scenario_of(CHAIN, "atlas800-910a", 4, ""), REC_COST_MINDSPORE);
	cr_expect_float_eq(plan_rec_cost(p), 32768.0, 1e-9);
}

/* Every shipped scenario plans in both modes. */
Test(recursive, shipped_scenarios_plan)
{
	static const char *const files[] = {
		"scenarios/ffn-8p.json", "scenarios/seed000-ffn-ir-8p.json",
		"scenarios/megatron-mlp-8p.json", "scenarios/megatron-attention-8p.json",
		"scenarios/seed004-layout-8p.json", "scenarios/rec-latency-2p.json",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct scenario *s = scenario_load(A, files[i], &D);
		cr_assert_not_null(s, "%s", files[i]);
		for (int m = 0; m < REC_COST_COUNT; m++)
			plan(s, (enum rec_cost)m);
	}
}

Test(recursive, topology_beats_the_reference_on_the_ffn)
{
	/* Seed 000's FFN on one Atlas 800 (dense1.matmul configured). Both
	 * modes agree on every op but the last Add: the reference's level costs
	 * cut it ((2,1),(1,)) -- its bias replicated on all 8 NPUs -- while the
	 * estimator's prices keep the ((2,4),(4,)) the MatMul before it hands on
	 * (seed 000's answer): the bias cut 4 ways, replicated over the 2-axis.
	 * Gradients are all-reduced in buckets of one kind and groups (25 MiB,
	 * plan_gradient_buckets). In the topology plan every parameter is
	 * replicated over the 2-axis only, so one bucket holds them all over the
	 * pairs {0,4},{1,5},.. (PCIe: 31 GB/s, 2 us), fp32 local sizes
	 * W1 64x16 + b1 16 + W2 16x64 + b2 16 = 2080 elements = 8320 B:
	 *   2 ranks, any algorithm: 2*2e-6 + 8320/31e9
	 * In the reference plan the last bias (256 B) is replicated on all 8 and
	 * needs its own bucket, the other three share the pairs' (8256 B):
	 *   pairs: 2*2e-6 + 8256/31e9
	 *   8 ranks, 256 B: halving-doubling is the cheapest (tree and ring pay
	 *   more latency or bytes): distance 4 over PCIe, 2 and 1 over HCCS
	 *   (30 GB/s, 1 us), each twice: 2*(2+1+1)e-6 + 256/31e9 + (64+32)*2/30e9
	 * so gradient sync differs by 8e-6 + 192/31e9 + 192/30e9; the reference's
	 * plan also needs a redistribution the other does not. */
	struct scenario *s = scenario_load(A, "scenarios/ffn-8p.json", &D);
	cr_assert_not_null(s);
	s->training.overlap_grad_reduce = false;  /* the buckets priced whole, as summed here */
	struct plan *ms = plan(s, REC_COST_MINDSPORE), *tp = plan(s, REC_COST_TOPOLOGY);
	expect_cuts(ms, "dense2.add", (const int64_t[]){2, 1, 1});
	expect_cuts(tp, "dense2.add", (const int64_t[]){2, 4, 4});
	struct estimate em, et;
	cr_assert(plan_estimate(A, ms, &em, &D));
	cr_assert(plan_estimate(A, tp, &et, &D));
	double want = 8e-6 + 192 / 31e9 + 192 / 30e9;
	double got = em.category_s[EST_GRADIENT_SYNC] - et.category_s[EST_GRADIENT_SYNC];
	cr_expect(fabs(got - want) <= 1e-3 * want, "gradient sync differs by %.9g, want %.9g", got,
	          want);
	cr_expect_gt(em.category_s[EST_REDISTRIBUTION], 0);
	cr_expect_float_eq(et.category_s[EST_REDISTRIBUTION], 0.0, 0);
	cr_expect_lt(et.iteration_s, em.iteration_s);
}

Test(recursive, topology_never_worse_than_the_baselines)
{
	/* The topology mode starts from the best of both searches and the
	 * baselines (with the configured ops kept) and only accepts
	 * improvements: on the 4-layer GPT on 32 NPUs (nothing configured) its
	 * estimate is at most data parallel's and Megatron's. */
	struct scenario *s = scenario_load(A, "scenarios/gpt-4layer-32p.json", &D);
	cr_assert_not_null(s);
	struct plan_options o = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_TOPOLOGY};
	struct plan *tp = plan(s, REC_COST_TOPOLOGY);
	struct plan *dp = plan_data_parallel(A, s, &o, &D);
	struct plan *mg = plan_megatron(A, s, &o, &D);
	cr_assert(dp && mg);
	struct estimate et, ed, em;
	cr_assert(plan_estimate(A, tp, &et, &D) && plan_estimate(A, dp, &ed, &D) &&
	          plan_estimate(A, mg, &em, &D));
	cr_expect_leq(et.iteration_s, ed.iteration_s * (1 + 1e-12));
	cr_expect_leq(et.iteration_s, em.iteration_s * (1 + 1e-12));
}
