/* test_search.c — megatron-search: the configurations it enumerates,
 * counted by hand; its ranking; the plan it returns; memory trade-offs the
 * that follow from the memory model by hand (ZeRO 1 and 2 over DP 4;
 * selective recomputation); every variant the estimator runs against a
 * fresh plan_estimate of its own plan.
 *
 * search-gpt-4p: a 2-layer GPT on 4 NPUs of an 8-NPU server, global batch
 * 8. TP divides 8 and 4: {1, 2, 4}; PP divides 4 / TP and is at most the
 * 2 layers; DP = 4 / (TP PP); micro-batch b in {1, 2, 4, 8} with b x DP
 * dividing 8:
 *   TP 1 PP 1 DP 4: b 1, 2        (2)
 *   TP 1 PP 2 DP 2: b 1, 2, 4     (3)
 *   TP 2 PP 1 DP 2: b 1, 2, 4     (3)
 *   TP 2 PP 2 DP 1: b 1, 2, 4, 8  (4)
 *   TP 4 PP 1 DP 1: b 1, 2, 4, 8  (4)
 * With TP > 1 each (TP, PP, b) is two groups, sequence parallelism off and
 * on. Each group has 3 recompute x 4 ZeRO variants per schedule: one
 * schedule without a pipeline; with PP 2, 1F1B only (interleaving needs
 * 2 x PP = 4 chunks of at most 2 layers: none; GPipe, which Megatron-LM
 * does not run, is refused: 12 a group). Without a pipeline
 * 12 x (2 + 2x3 + 2x4) = 192, with PP 2 12 x (3 + 2x4) = 132: 324
 * configurations, and 132 GPipe ones refused. The 4 heads, the MLP's 256
 * columns and the 16 tokens divide by every TP, the 2 layers by every PP.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"

TestSuite(search, .init = fixture_setup, .fini = fixture_teardown);

#define TINY "tests/data/good/search-gpt-4p.json"

static struct search_result run(struct scenario *s)
{
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct search_result r;
	cr_assert(plan_search(A, s, &o, &r, &D));
	return r;
}

Test(search, enumerates_the_configurations_counted_by_hand)
{
	struct search_result r = run(fixture_scenario(TINY));
	cr_expect_eq(r.n_configs, 324);
	cr_expect_eq(r.n_fit + r.n_oom + r.n_failed, 324);
	for (int k = 0; k < SEARCH_RULE_COUNT; k++)
		cr_expect_eq(r.refused[k], k == SEARCH_RULE_SCHEDULE ? 132 : 0, "%s",
		             search_rule_names[k]);
	cr_expect_eq(r.n, r.n_fit + r.n_oom);
	int pp2 = 0, tp4 = 0, gpipe = 0, interleaved = 0, b8 = 0, sp = 0;
	for (int i = 0; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		cr_expect_eq(c->tp * c->pp * c->dp, 4);
		cr_expect_eq(c->micro_batches * c->micro_batch * c->dp, 8);
		pp2 += c->pp == 2;
		tp4 += c->tp == 4;
		gpipe += c->schedule == SCHED_GPIPE;
		interleaved += c->schedule == SCHED_INTERLEAVED_1F1B;
		b8 += c->micro_batch == 8;
		sp += c->sequence_parallel;
		cr_expect(!c->sequence_parallel || c->tp > 1);
	}
	cr_expect_eq(r.n_failed, 0, "%s", r.failure ? r.failure : "");
	cr_expect_eq(pp2, 12 * 11);       /* (3 + 2 x 4) groups x 1 schedule x 12 */
	cr_expect_eq(tp4, 12 * 4 * 2);
	cr_expect_eq(gpipe, 0);
	cr_expect_eq(interleaved, 0);
	cr_expect_eq(b8, 2 * (12 + 12)); /* TP 4 PP 1 and TP 2 PP 2, DP 1, SP off and on */
	cr_expect_eq(sp, 12 * (3 + 4) + 12 * 4); /* the TP > 1 groups, once each */
}

/* The first candidate of EP ep at TP tp, planned: 4 AllToAlls (two a
 * layer) over groups of `size`. */
static void expect_search_alltoalls(const struct search_result *r, int64_t ep, int64_t tp,
                                    int size)
{
	for (int i = 0; i < r->n; i++) {
		if (r->cands[i].config.ep != ep || r->cands[i].config.tp != tp)
			continue;
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct scenario *s = fixture_scenario("tests/data/good/search-moe-4p.json");
		struct plan *p = plan_search_plan(A, s, &r->cands[i].config, &o, &D);
		cr_assert_not_null(p);
		int a2a = 0;
		for (int e = 0; e < p->n_edges; e++)
			for (int k = 0; k < p->edges[e].redist.n_steps; k++)
				a2a += p->edges[e].redist.steps[k].kind == STEP_ALLTOALL &&
				       p->edges[e].redist.steps[k].groups.size == size;
		cr_expect_eq(a2a, 4, "EP %lld TP %lld: two AllToAlls a layer over groups of %d, got %d",
		             (long long)ep, (long long)tp, size, a2a);
		return;
	}
	cr_assert_fail("no candidate of EP %lld at TP %lld", (long long)ep, (long long)tp);
}

/* search-moe-4p: search-gpt-4p's space for a 2-layer mixture of 4
 * experts, EP dividing DP and 4 as one more axis of each group, and above
 * DP, with sequence parallelism, Megatron-Core's parallel folding (a
 * multiple of TP dividing DP x TP):
 *   TP 1 PP 1 DP 4: b 1, 2       x EP 1, 2, 4                       6 groups
 *   TP 1 PP 2 DP 2: b 1, 2, 4    x EP 1, 2                          6
 *   TP 2 PP 1 DP 2: b 1, 2, 4    x (EP 1, 2; with SP EP 1, 2, 4)   15
 *   TP 2 PP 2 DP 1: b 1, 2, 4, 8 x (EP 1; with SP EP 1, 2)         12
 *   TP 4 PP 1 DP 1: b 1, 2, 4, 8 x (EP 1; with SP EP 1, 4)         12
 * 33 groups without a pipeline x 12 = 396, 18 with PP 2 x 12 (1F1B; GPipe
 * refused) = 216: 612. EP > 1: 24 groups x 12 = 288; EP 4: 9 x 12 = 108;
 * folded (EP above DP): 11 x 12 = 132, every one with SP. The 4 experts
 * divide by every EP tried. */
Test(search, expert_parallelism_is_one_more_axis)
{
	struct search_result r = run(fixture_scenario("tests/data/good/search-moe-4p.json"));
	cr_expect_eq(r.n_configs, 612);
	cr_expect_eq(r.refused[SEARCH_RULE_SCHEDULE], 18 * 12);
	cr_expect_eq(r.refused[SEARCH_RULE_EXPERTS_EP], 0);
	cr_expect_eq(r.n_failed, 0, "%s", r.failure ? r.failure : "");
	int ep = 0, ep4 = 0, folded = 0;
	for (int i = 0; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		if (c->ep > c->dp) {
			folded++;
			cr_expect(c->sequence_parallel && c->ep % c->tp == 0 && (c->dp * c->tp) % c->ep == 0,
			          "EP %lld folded over TP %lld DP %lld", (long long)c->ep,
			          (long long)c->tp, (long long)c->dp);
		} else {
			cr_expect_eq(c->dp % c->ep, 0);
		}
		ep += c->ep > 1;
		ep4 += c->ep == 4;
	}
	cr_expect_eq(ep, 288);
	cr_expect_eq(ep4, 108);
	cr_expect_eq(folded, 132);
	/* the plan of an EP 2 configuration sends its slots by AllToAll over
	 * the EP pairs, two a layer; a folded EP 4 at TP 4 over all four ranks */
	expect_search_alltoalls(&r, 2, 1, 2);
	expect_search_alltoalls(&r, 4, 4, 4);
}

/* search-cp-4p: search-gpt-4p's space for a 2-layer LLaMA (s 16) whose
 * scenario lets the search try context parallelism up to 2. CP 2 takes
 * one sequence a replica (b 1) and divides the stage over TP:
 *   TP 1 PP 1: CP 2 DP 2 b 1         1 group  x 12
 *   TP 1 PP 2: CP 2 DP 1 b 1         1        x 12 (GPipe's 12 refused)
 *   TP 2 PP 1: CP 2 DP 1 b 1 x SP    2        x 12
 * 48 more than search-gpt-4p's 324: 372 (16 tokens: a multiple of 2 x CP,
 * and 8 a CP rank divide by TP 2 under SP). */
Test(search, context_parallelism_when_the_scenario_asks)
{
	struct search_result r = run(fixture_scenario("tests/data/good/search-cp-4p.json"));
	cr_expect_eq(r.n_configs, 372);
	cr_expect_eq(r.refused[SEARCH_RULE_SCHEDULE], 132 + 12);
	cr_expect_eq(r.n_failed, 0, "%s", r.failure ? r.failure : "");
	int cp = 0;
	for (int i = 0; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		cr_expect_eq(c->tp * c->cp * c->pp * c->dp, 4);
		if (c->cp > 1) {
			cp++;
			cr_expect_eq(c->micro_batch, 1);
		}
	}
	cr_expect_eq(cp, 48);
}

Test(search, ranks_those_that_fit_fastest_first_then_the_oom_ones)
{
	struct scenario *s = fixture_scenario(TINY);
	/* a device too small for the larger half of the configurations */
	struct search_result all = run(s);
	cr_assert_gt(all.n, 0);
	double lo = all.cands[0].memory_bytes, hi = lo;
	for (int i = 1; i < all.n; i++) {
		lo = fmin(lo, all.cands[i].memory_bytes);
		hi = fmax(hi, all.cands[i].memory_bytes);
	}
	s->topo->device.hbm_bytes = (lo + hi) / 2;
	struct search_result r = run(s);
	cr_expect_gt(r.n_fit, 0);
	cr_expect_gt(r.n_oom, 0);
	for (int i = 0; i < r.n; i++) {
		const struct search_candidate *c = &r.cands[i];
		bool fits = c->memory_bytes <= s->topo->device.hbm_bytes;
		cr_expect_eq(fits, i < r.n_fit, "rank %d: memory %g, HBM %g", i + 1, c->memory_bytes,
		             s->topo->device.hbm_bytes);
		cr_expect_eq(c->oom_overflow_bytes > 0, !fits);
		if (i > 0 && i < r.n_fit)
			cr_expect_leq(r.cands[i - 1].iteration_s, c->iteration_s);
		if (i > r.n_fit)
			cr_expect_leq(r.cands[i - 1].oom_overflow_bytes, c->oom_overflow_bytes);
	}
}

Test(search, the_planner_returns_the_first_configuration_planned)
{
	struct scenario *s = fixture_scenario(TINY);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_make(A, s, PLANNER_MEGATRON_SEARCH, &o, &D);
	cr_assert_not_null(p);
	cr_assert_not_null(p->search);
	const struct search_config *c = &p->search->cands[0].config;
	const struct training *t = &p->scenario->training;
	cr_expect_eq(t->pipeline_stages, c->pp);
	cr_expect_eq(t->zero_stage, c->zero_stage);
	cr_expect_eq(t->recompute, c->recompute);
	cr_expect_eq(t->schedule, c->schedule);
	cr_expect_eq(t->micro_batches, c->micro_batches);
	cr_expect_eq(p->graph->batch, c->micro_batch * c->dp);
	cr_expect_eq(p->n_devices, 4 / c->pp);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_expect_float_eq(e.iteration_s, p->search->cands[0].iteration_s,
	                   1e-12 * e.iteration_s);
}

/* One group's variants by (recompute, ZeRO). */
/* training.tensor_parallel is read by the megatron planner alone: the
 * others plan without it and say so, once each; megatron is silent. */
Test(search, a_stated_tensor_parallel_degree_other_planners_do_not_read_is_named)
{
	struct scenario *s = fixture_scenario(TINY);
	s->training.tensor_parallel = 2;
	struct plan_options o = {.mode = REDIST_COMPAT};
	static const struct {
		enum planner_kind kind;
		const char *says;
	} cases[] = {{PLANNER_DATA_PARALLEL, "planner \"data-parallel\" does not read it"},
	             {PLANNER_MEGATRON_SEARCH, "planner \"megatron-search\" searches its own degrees"},
	             {PLANNER_MEGATRON, NULL}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct diag_list d;
		diag_list_init(&d);
		plan_make(A, s, cases[k].kind, &o, &d);
		int named = 0;
		for (size_t i = 0; i < d.count; i++)
			if (d.items[i].path && !strcmp(d.items[i].path, "training.tensor_parallel") &&
			    d.items[i].severity == DIAG_WARNING) {
				named++;
				cr_expect(cases[k].says && strstr(d.items[i].msg, cases[k].says), "%s",
				          d.items[i].msg);
				cr_expect(strstr(d.items[i].msg, "2 is the megatron planner's"), "%s",
				          d.items[i].msg);
			}
		cr_expect_eq(named, cases[k].says ? 1 : 0, "planner %d: %d warnings", (int)cases[k].kind,
		             named);
		diag_list_free(&d);
	}
}

static const struct search_candidate *find(const struct search_result *r, int64_t tp, int64_t pp,
                                           int64_t b, enum recompute_mode rec, int zero)
{
	for (int i = 0; i < r->n; i++) {
		const struct search_config *c = &r->cands[i].config;
		if (c->tp == tp && c->pp == pp && c->micro_batch == b && c->recompute == rec &&
		    c->zero_stage == zero && c->schedule == SCHED_1F1B)
			return &r->cands[i];
	}
	cr_assert_fail("no TP %lld PP %lld mb %lld", (long long)tp, (long long)pp, (long long)b);
	return NULL;
}

Test(search, selective_recomputation_never_costs_memory)
{
	/* It keeps fewer activations and adds no working set (full
	 * recomputation adds one: a whole chunk's forward at a time). */
	struct search_result r = run(fixture_scenario(TINY));
	for (int z = 0; z <= 3; z++)
		cr_expect_lt(find(&r, 1, 2, 4, RECOMPUTE_SELECTIVE, z)->memory_bytes,
		             find(&r, 1, 2, 4, RECOMPUTE_NONE, z)->memory_bytes, "ZeRO %d", z);
}

Test(search, zero_1_shards_the_adam_state_over_data_parallel)
{
	/* TP 1 PP 1 DP 4, no pipeline: every device holds every parameter.
	 * ZeRO 1 keeps a quarter of the fp16 model's 16 bytes of Adam state
	 * (fp32 master weights and gradients, two fp32 moments) per parameter:
	 * it saves 16 x 3/4 x parameters, and nothing else changes. */
	struct scenario *s = fixture_scenario(TINY);
	struct graph_totals gt;
	graph_totals(s->graph, &gt);
	struct search_result r = run(s);
	double saved = find(&r, 1, 1, 1, RECOMPUTE_NONE, 0)->memory_bytes -
	               find(&r, 1, 1, 1, RECOMPUTE_NONE, 1)->memory_bytes;
	cr_expect_float_eq(saved, 16.0 * 0.75 * (double)gt.parameters, 1e-6 * saved,
	                   "saved %.0f B, parameters %lld", saved, (long long)gt.parameters);
	/* ZeRO 2 shards the fp16 gradients too: 2 x 3/4 x parameters more. */
	saved = find(&r, 1, 1, 1, RECOMPUTE_NONE, 1)->memory_bytes -
	        find(&r, 1, 1, 1, RECOMPUTE_NONE, 2)->memory_bytes;
	cr_expect_float_eq(saved, 2.0 * 0.75 * (double)gt.parameters, 1e-6 * saved,
	                   "saved %.0f B, parameters %lld", saved, (long long)gt.parameters);
}

Test(search, nothing_fits_a_tiny_device)
{
	struct scenario *s = fixture_scenario(TINY);
	s->topo->device.hbm_bytes = 1000;
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct diag_list d;
	diag_list_init(&d);
	cr_expect_null(plan_make(A, s, PLANNER_MEGATRON_SEARCH, &o, &d));
	bool said = false;
	for (size_t i = 0; i < d.count; i++)
		said = said || strstr(d.items[i].msg, "none of the 324 configurations fits");
	cr_expect(said, "a diagnostic saying that nothing fits");
	diag_list_free(&d);
}

/* Every candidate's figures against a fresh plan_estimate of its own plan:
 * the search plans a group once and runs each variant through one
 * estimator, which remembers partitions and per-chunk buckets, parameters
 * and activations across the variants; none of that may change a figure
 * (compared exactly, not to a tolerance). */
static void expect_fresh_estimates(struct scenario *s)
{
	struct search_result r = run(s);
	struct plan_options o = {.mode = REDIST_COMPAT};
	int interleaved = 0;
	for (int i = 0; i < r.n; i++) {
		const struct search_candidate *c = &r.cands[i];
		char text[128];
		plan_search_config_text(text, sizeof text, &c->config);
		struct plan *p = plan_search_plan(A, s, &c->config, &o, &D);
		cr_assert_not_null(p, "%s", text);
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D), "%s", text);
		cr_expect_eq(e.iteration_s, c->iteration_s, "%s: %.17g fresh, %.17g searched", text,
		             e.iteration_s, c->iteration_s);
		cr_expect_eq(e.memory_bytes_per_device, c->memory_bytes, "%s", text);
		cr_expect_eq(e.oom_overflow_bytes, c->oom_overflow_bytes, "%s", text);
		cr_expect_eq(e.bubble_s, c->bubble_s, "%s", text);
		interleaved += c->config.schedule == SCHED_INTERLEAVED_1F1B;
	}
	cr_expect_gt(r.n, 0);
	if (s->graph->gen->layers >= 4)
		cr_expect_gt(interleaved, 0);
}

Test(search, each_variant_is_estimated_as_afresh)
{
	expect_fresh_estimates(fixture_scenario(TINY));
	/* Eight layers on all 8 NPUs, global batch 16: pipelines of 2, 4 and
	 * 8 stages, interleaved ones among them (partitions of one plan with
	 * 1 and 2 chunks per stage). */
	struct scenario *s = fixture_scenario(TINY);
	struct model_gen gen = *s->graph->gen;
	gen.layers = 8;
	struct graph *g = graph_generate(A, &gen, &D);
	cr_assert_not_null(g);
	s->graph = g;
	s->devices = 8;
	s->training.global_batch = 16;
	expect_fresh_estimates(s);
}

/* Megatron-LM's launch checks, each case worked from its rule by hand on
 * Qwen2-7B's shape (28 heads, 4 KV heads, 28 layers, MLP 18,944, 4,096
 * tokens) unless it says otherwise; global batch 64. */
static enum search_rule rule_of(struct model_gen m, struct search_config c)
{
	struct graph g = {.gen = &m};
	if (c.micro_batch == 0)
		c.micro_batch = 1;
	if (c.dp == 0)
		c.dp = 1;
	if (c.micro_batches == 0)
		c.micro_batches = 64 / (c.micro_batch * c.dp);
	if (c.virtual_stages == 0)
		c.virtual_stages = c.schedule == SCHED_INTERLEAVED_1F1B ? 2 : 1;
	return plan_search_rule(&g, 64, &c);
}

Test(search, megatron_lm_rules_by_hand)
{
	struct model_gen q;
	model_gen_defaults(&q, GEN_LLAMA);
	q.hidden = 3584, q.heads = 28, q.kv_heads = 4, q.layers = 28, q.ffn = 18944, q.seq = 4096;
	const enum pipeline_schedule F = SCHED_1F1B, I = SCHED_INTERLEAVED_1F1B;
	/* 28 % 8 = 4: the heads do not split over TP 8 */
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 8, .pp = 1, .schedule = F}),
	             SEARCH_RULE_HEADS_TP);
	/* TP 4: 28 / 4 = 7 heads, 1 KV head, 4,736 MLP columns a rank */
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 4, .pp = 2, .schedule = F}),
	             SEARCH_RULE_NONE);
	/* 28 % 3 = 1: no even split over 3 stages */
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 4, .pp = 3, .schedule = F}),
	             SEARCH_RULE_LAYERS_PP);
	/* GPipe: Megatron-LM runs 1F1B */
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 2, .pp = 2, .schedule = SCHED_GPIPE}),
	             SEARCH_RULE_SCHEDULE);
	/* interleaved over 4 stages x 2: 28 % 8 = 4 */
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 2, .pp = 4, .schedule = I}),
	             SEARCH_RULE_LAYERS_VPP);
	/* over 7 stages x 2: 28 % 14 = 0, but 64 micro-batches % 7 = 1; 14
	 * micro-batches run */
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 1, .pp = 7, .schedule = I}),
	             SEARCH_RULE_MICRO_BATCHES_PP);
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 1, .pp = 7, .schedule = I,
	                                               .micro_batches = 14}),
	             SEARCH_RULE_NONE);
	/* 4,096 tokens: 4,096 % (2 x 3) = 4 */
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 1, .pp = 1, .cp = 3, .schedule = F}),
	             SEARCH_RULE_SEQ_CP);
	/* the global batch 64 over DP 3 */
	cr_expect_eq(rule_of(q, (struct search_config){.tp = 1, .pp = 1, .dp = 3, .schedule = F}),
	             SEARCH_RULE_BATCH_DP);
	/* KV heads: 6 over TP 4 is neither a multiple nor a divisor (48 heads
	 * split); 2 KV heads over TP 4 are replicated, as Megatron-Core does */
	struct model_gen k = q;
	k.heads = 48, k.kv_heads = 6, k.hidden = 6144;
	cr_expect_eq(rule_of(k, (struct search_config){.tp = 4, .pp = 1, .schedule = F}),
	             SEARCH_RULE_KV_HEADS_TP);
	k.kv_heads = 2;
	cr_expect_eq(rule_of(k, (struct search_config){.tp = 4, .pp = 1, .schedule = F}),
	             SEARCH_RULE_NONE);
	/* a GPT of 12 heads and an MLP of 3,070 columns: 3,070 % 4 = 2 */
	struct model_gen g;
	model_gen_defaults(&g, GEN_GPT);
	g.hidden = 768, g.heads = 12, g.ffn = 3070, g.layers = 12, g.seq = 1026;
	cr_expect_eq(rule_of(g, (struct search_config){.tp = 4, .pp = 1, .schedule = F}),
	             SEARCH_RULE_FFN_TP);
	/* 1,026 tokens under sequence parallelism over TP 4: 1,026 % 4 = 2;
	 * TP 2 splits them, and without SP nothing is cut */
	g.ffn = 3072;
	cr_expect_eq(rule_of(g, (struct search_config){.tp = 4, .pp = 1, .sequence_parallel = true,
	                                               .schedule = F}),
	             SEARCH_RULE_SEQ_SP);
	cr_expect_eq(rule_of(g, (struct search_config){.tp = 2, .pp = 1, .sequence_parallel = true,
	                                               .schedule = F}),
	             SEARCH_RULE_NONE);
	cr_expect_eq(rule_of(g, (struct search_config){.tp = 4, .pp = 1, .schedule = F}),
	             SEARCH_RULE_NONE);
	/* 8 experts over EP 3 */
	struct model_gen e = q;
	e.experts = 8, e.top_k = 2;
	cr_expect_eq(rule_of(e, (struct search_config){.tp = 1, .pp = 1, .dp = 4, .ep = 3,
	                                               .schedule = F}),
	             SEARCH_RULE_EXPERTS_EP);
	/* the words say the numbers */
	char buf[160];
	struct graph gq = {.gen = &q};
	struct search_config c8 = {.tp = 8, .pp = 1, .dp = 1, .micro_batch = 1};
	cr_expect_str_eq(plan_search_rule_text(buf, sizeof buf, SEARCH_RULE_HEADS_TP, &gq, 64, &c8),
	                 "tensor parallel 8 does not divide the 28 attention heads");
	struct search_config c3 = {.tp = 4, .pp = 3, .dp = 1, .micro_batch = 1};
	cr_expect_str_eq(plan_search_rule_text(buf, sizeof buf, SEARCH_RULE_LAYERS_PP, &gq, 64, &c3),
	                 "3 pipeline stages do not divide the 28 layers");
}

/* Megatron-Core's refusals that a scenario's settings bring to every
 * configuration, on Qwen2-7B's shape (28 layers):
 * - the embedding and the loss counted as layers
 *   (account_for_embedding_in_pipeline_split / _loss_; transformer_config.py
 *   __post_init__, core_v0.15.0: "num_layers ... must be divisible by
 *   pipeline_model_parallel_size" with num_layers + 1 for each, then that
 *   per rank by the virtual stages): 28 + 2 = 30 units. PP 4 divides 28
 *   but not 30 (30 % 4 = 2); PP 3 divides 30 but not 28; interleaved over
 *   PP 2 x 2, a stage's 15 units do not halve; over PP 5 x 2 a stage's 6
 *   do (10 micro-batches: a multiple of 5). The embedding alone: 29 units,
 *   PP 4 refused too (29 % 4 = 1).
 * - activation offload (--cpu-offloading-num-layers; the same __post_init__:
 *   "Currently there is no support for Pipeline parallelism with CPU
 *   offloading", "CPU offloading does not work when activation
 *   recomputation is enabled"): 4 of the 28 layers offloaded refuse PP 2
 *   and selective or full recomputation; PP 1 without recomputation runs. */
Test(search, the_scenarios_accounting_and_offload_by_hand)
{
	struct model_gen q;
	model_gen_defaults(&q, GEN_LLAMA);
	q.hidden = 3584, q.heads = 28, q.kv_heads = 4, q.layers = 28, q.ffn = 18944, q.seq = 4096;
	const enum pipeline_schedule F = SCHED_1F1B, I = SCHED_INTERLEAVED_1F1B;
	struct search_config acc = {.tp = 4, .schedule = F, .embedding_in_split = true,
	                            .loss_in_split = true};
	acc.pp = 4;
	cr_expect_eq(rule_of(q, acc), SEARCH_RULE_LAYERS_PP);
	acc.pp = 3;
	cr_expect_eq(rule_of(q, acc), SEARCH_RULE_NONE);
	acc.pp = 2, acc.schedule = I;
	cr_expect_eq(rule_of(q, acc), SEARCH_RULE_LAYERS_VPP);
	acc.pp = 5, acc.tp = 1, acc.micro_batches = 10;
	cr_expect_eq(rule_of(q, acc), SEARCH_RULE_NONE);
	struct search_config emb = {.tp = 4, .pp = 4, .schedule = F, .embedding_in_split = true};
	cr_expect_eq(rule_of(q, emb), SEARCH_RULE_LAYERS_PP);
	emb.pp = 2;
	cr_expect_eq(rule_of(q, emb), SEARCH_RULE_LAYERS_PP); /* 29 % 2 = 1 */
	emb.pp = 1;
	cr_expect_eq(rule_of(q, emb), SEARCH_RULE_NONE);
	struct search_config off = {.tp = 4, .pp = 2, .schedule = F,
	                            .activation_offload_layers = 4};
	cr_expect_eq(rule_of(q, off), SEARCH_RULE_OFFLOAD_PP);
	off.pp = 1;
	cr_expect_eq(rule_of(q, off), SEARCH_RULE_NONE);
	off.recompute = RECOMPUTE_SELECTIVE;
	cr_expect_eq(rule_of(q, off), SEARCH_RULE_OFFLOAD_RECOMPUTE);
	off.recompute = RECOMPUTE_FULL;
	cr_expect_eq(rule_of(q, off), SEARCH_RULE_OFFLOAD_RECOMPUTE);
	/* torchtitan's per-op policy is no recompute_granularity of
	 * Megatron-Core's TransformerConfig ("full" or "selective"), with or
	 * without offload */
	off.recompute = RECOMPUTE_OP;
	cr_expect_eq(rule_of(q, off), SEARCH_RULE_RECOMPUTE_OP);
	off.activation_offload_layers = 0;
	cr_expect_eq(rule_of(q, off), SEARCH_RULE_RECOMPUTE_OP);
	off.recompute = RECOMPUTE_NONE;
	cr_expect_eq(rule_of(q, off), SEARCH_RULE_NONE);
	/* the words: the loader's (scenario_offload_refusal) and the split's
	 * (scenario_accounted_layers) */
	char buf[200];
	struct graph gq = {.gen = &q};
	acc = (struct search_config){.tp = 4, .pp = 4, .dp = 1, .micro_batch = 1,
	                             .schedule = F, .embedding_in_split = true,
	                             .loss_in_split = true};
	cr_expect_str_eq(plan_search_rule_text(buf, sizeof buf, SEARCH_RULE_LAYERS_PP, &gq, 64, &acc),
	                 "28 layers + the embedding + the loss do not divide into 4 pipeline "
	                 "stages");
	acc.pp = 2, acc.schedule = I, acc.virtual_stages = 2;
	cr_expect_str_eq(plan_search_rule_text(buf, sizeof buf, SEARCH_RULE_LAYERS_VPP, &gq, 64,
	                                       &acc),
	                 "each stage's 15 layers (the embedding and the loss counted) do not divide "
	                 "into its 2 virtual stages");
	off = (struct search_config){.tp = 4, .pp = 2, .dp = 1, .micro_batch = 1, .schedule = F,
	                             .activation_offload_layers = 4};
	cr_expect_str_eq(plan_search_rule_text(buf, sizeof buf, SEARCH_RULE_OFFLOAD_PP, &gq, 64, &off),
	                 "Megatron-Core has no activation offload with pipeline parallelism "
	                 "(--cpu-offloading needs --pipeline-model-parallel-size 1): 2 pipeline "
	                 "stages");
	off.pp = 1, off.recompute = RECOMPUTE_FULL;
	cr_expect_str_eq(plan_search_rule_text(buf, sizeof buf, SEARCH_RULE_OFFLOAD_RECOMPUTE, &gq,
	                                       64, &off),
	                 "Megatron-Core has no activation offload with recomputation "
	                 "(--cpu-offloading refuses --recompute-granularity): recompute \"full\", "
	                 "not \"none\"");
	cr_expect_str_eq(plan_search_rule_text(buf, sizeof buf, SEARCH_RULE_RECOMPUTE_OP, &gq, 64,
	                                       &off),
	                 "recompute \"op\" (torchtitan's per-op selective checkpointing) is not a "
	                 "Megatron-LM recompute granularity (full or selective)");
}

/* search-offload-4p: search-gpt-4p (its count at the top) with 1 of its 2
 * layers' activations offloaded: PP 2 and recomputation are refused. Of the 11 PP 2 groups'
 * 2 x 12 configurations, GPipe's 132 break the schedule rule first (it is
 * checked before) and 1F1B's 132 the offload's; of the 16 groups without
 * a pipeline (2 + 2 x 3 + 2 x 4), 8 of each 12 recompute (selective or
 * full): 128. Left: 16 x 4 (ZeRO 0 to 3) = 64, none of them ranked with a
 * pipeline or recomputation. */
Test(search, activation_offload_refuses_pipelines_and_recomputation)
{
	struct scenario *s = fixture_scenario("tests/data/good/search-offload-4p.json");
	cr_assert_eq(s->training.activation_offload_layers, 1);
	struct search_result r = run(s);
	cr_expect_eq(r.n_configs, 64);
	cr_expect_eq(r.refused[SEARCH_RULE_SCHEDULE], 132);
	cr_expect_eq(r.refused[SEARCH_RULE_OFFLOAD_PP], 132);
	cr_expect_eq(r.refused[SEARCH_RULE_OFFLOAD_RECOMPUTE], 128);
	cr_expect_eq(r.n_failed, 0, "%s", r.failure ? r.failure : "");
	cr_expect_eq(r.n, 64);
	for (int i = 0; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		cr_expect_eq(c->pp, 1);
		cr_expect_eq(c->recompute, RECOMPUTE_NONE);
		cr_expect_eq(c->activation_offload_layers, 1);
	}
	/* the planner's choice is one of them */
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_make(A, s, PLANNER_MEGATRON_SEARCH, &o, &D);
	cr_assert_not_null(p);
	cr_expect_eq(p->scenario->training.pipeline_stages, 1);
	cr_expect_eq(p->scenario->training.recompute, RECOMPUTE_NONE);
	cr_expect_eq(p->scenario->training.activation_offload_layers, 1);
}

/* search-gpt-4p at 3 layers: PP is 1 or 2 (at most the 3 layers, dividing
 * 4), and 2 stages do not divide 3 layers: the 11 PP 2 groups' 264
 * configurations (1F1B and GPipe) are refused by layers-pp, which comes
 * first. With the embedding counted, 3 + 1 = 4 units halve (1 layer and
 * the embedding, 2 layers): 1F1B's 132 run, GPipe's 132 are refused by
 * the schedule, 192 + 132 = 324 configurations as at 2 layers. With the
 * loss counted too, 5 units do not halve: 264 refused again. */
Test(search, the_embedding_and_the_loss_count_as_layers)
{
	struct scenario *s = fixture_scenario(TINY);
	struct model_gen gen = *s->graph->gen;
	gen.layers = 3;
	s->graph = graph_generate(A, &gen, &D);
	cr_assert_not_null(s->graph);
	struct search_result r = run(s);
	cr_expect_eq(r.n_configs, 192);
	cr_expect_eq(r.refused[SEARCH_RULE_LAYERS_PP], 264);
	s->training.embedding_in_split = true;
	r = run(s);
	cr_expect_eq(r.n_configs, 324);
	cr_expect_eq(r.refused[SEARCH_RULE_LAYERS_PP], 0);
	cr_expect_eq(r.refused[SEARCH_RULE_SCHEDULE], 132);
	cr_expect_eq(r.n_failed, 0, "%s", r.failure ? r.failure : "");
	int pp2 = 0;
	for (int i = 0; i < r.n; i++)
		pp2 += r.cands[i].config.pp == 2 && r.cands[i].config.embedding_in_split;
	cr_expect_eq(pp2, 132);
	s->training.loss_in_split = true;
	r = run(s);
	cr_expect_eq(r.n_configs, 192);
	cr_expect_eq(r.refused[SEARCH_RULE_LAYERS_PP], 264);
}

/* The search over Qwen2-7B's shape on 24 GPUs (servers of 8): no TP 8 (28
 * heads), no PP 3 or 6 (28 layers), and those it left out counted. */
Test(search, the_enumeration_keeps_out_what_megatron_lm_refuses)
{
	struct model_gen q;
	model_gen_defaults(&q, GEN_LLAMA);
	q.hidden = 3584, q.heads = 28, q.kv_heads = 4, q.layers = 28, q.ffn = 18944, q.seq = 4096;
	struct graph g = {.gen = &q, .n_ops = 1000, .batch = 1};
	int64_t refused[SEARCH_RULE_COUNT] = {0};
	int n;
	struct search_group *gs = plan_search_groups(A, &g, 24, 8, 96, true, 1, NULL, NULL, &n, refused);
	cr_assert_not_null(gs);
	cr_assert_gt(n, 0);
	bool tp4pp2 = false;
	for (int i = 0; i < n; i++) {
		cr_expect_neq(gs[i].tp, 8);
		cr_expect(gs[i].pp != 3 && gs[i].pp != 6, "PP %lld", (long long)gs[i].pp);
		tp4pp2 = tp4pp2 || (gs[i].tp == 4 && gs[i].pp == 2);
		for (int k = 0; k < gs[i].n_configs; k++)
			cr_expect_eq(plan_search_rule(&g, 96, &gs[i].configs[k]), SEARCH_RULE_NONE);
	}
	cr_expect(tp4pp2);
	cr_expect_gt(refused[SEARCH_RULE_HEADS_TP], 0);
	cr_expect_gt(refused[SEARCH_RULE_LAYERS_PP], 0);
	cr_expect_gt(refused[SEARCH_RULE_SCHEDULE], 0);
}

/* ------------------------------------------------ the stages' layers */

#define STAGE_LAYERS "tests/data/good/search-stage-layers-4p.json"

static bool has_note(const char *path, const char *text)
{
	for (size_t i = 0; i < D.count; i++)
		if (D.items[i].severity == DIAG_NOTE && D.items[i].path &&
		    !strcmp(D.items[i].path, path) && strstr(D.items[i].msg, text))
			return true;
	return false;
}

/* search-stage-layers-4p fixes 4 and 2 layers on its 2 stages: every
 * configuration of PP 2 keeps them, those without a pipeline have none,
 * and PP 4 (6 layers do not split evenly over 4 stages) is refused as
 * before. With the split, interleaving 2 virtual stages is runnable
 * (4 and 2 are even; evenly, 6 layers over 2 x 2 chunks are not), so PP 2
 * has 1F1B and interleaved configurations. */
Test(search, a_fixed_split_holds_at_its_own_depth)
{
	struct scenario *s = fixture_scenario(STAGE_LAYERS);
	struct search_result r = run(s);
	int pp2 = 0, interleaved = 0;
	for (int i = 0; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		cr_expect_neq(c->pp, 4);
		if (c->pp == 2) {
			cr_assert_not_null(c->stage_layers);
			cr_expect(c->stage_layers[0] == 4 && c->stage_layers[1] == 2);
			pp2++;
			interleaved += c->schedule == SCHED_INTERLEAVED_1F1B;
		} else {
			cr_expect_null(c->stage_layers);
		}
		cr_expect_eq(c->first_stage_layers, 0);
		cr_expect_eq(c->last_stage_layers, 0);
	}
	cr_expect_gt(pp2, 0);
	cr_expect_gt(interleaved, 0);
	cr_expect(r.refused[SEARCH_RULE_LAYERS_PP] > 0);
	cr_expect_eq(r.refused[SEARCH_RULE_LAYERS_VPP], 0);
	cr_expect(has_note("training.stage_layers", "the stages' layers (4/2) are for 2 pipeline "
	                   "stages: megatron-search keeps them for its configurations of PP 2 and "
	                   "splits the layers evenly at the other depths"));
	expect_fresh_estimates(fixture_scenario(STAGE_LAYERS));
}

/* The split is estimated, not only carried: TP 1 PP 2's first stage holds
 * 4 layers where the even split gives it 3, the second 2 where it gives
 * it 3: one GPT layer more and one less, 12 h^2 + 13 h = 12 x 64^2 +
 * 13 x 64 = 49,984 fp16 parameters, 99,968 bytes. */
Test(search, a_fixed_split_is_what_the_estimate_prices)
{
	struct scenario *s = fixture_scenario(STAGE_LAYERS);
	struct search_result r = run(s);
	const struct search_candidate *c = find(&r, 1, 2, 4, RECOMPUTE_NONE, 0);
	struct search_config even = c->config;
	even.stage_layers = NULL;
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct estimate e4, e3;
	struct plan *p = plan_search_plan(A, s, &c->config, &o, &D);
	cr_assert(p && plan_estimate(A, p, &e4, &D));
	p = plan_search_plan(A, s, &even, &o, &D);
	cr_assert(p && plan_estimate(A, p, &e3, &D));
	cr_assert(e4.n_stages == 2 && e3.n_stages == 2);
	cr_expect_float_eq(e4.stages[0].mem.params - e3.stages[0].mem.params, 99968.0, 1e-6);
	cr_expect_float_eq(e3.stages[1].mem.params - e4.stages[1].mem.params, 99968.0, 1e-6);
	cr_expect_eq(e4.iteration_s, c->iteration_s);
}

/* slow-server-rebalanced-h100-32p: 8 layers on 4 DGX H100s, server 2 of
 * A100s (about 3 times slower, more than 1.5 is all that matters below).
 * The rule by hand at each depth (each stage starts with a unit; the
 * next goes to the least (n + unit) x slow, ties to the lower stage), the
 * slowdown s about 3.05 (the scenario's 6 and 2 x 3.0 = 6.1):
 *   PP 2 (stage 1 = servers 2 and 3): 1, 1; stage 0 takes units while
 *     n + 1 <= 2 s = 6.1: up to 6; then 7 > 6.1: the last to stage 1:
 *     6, 2. Interleaved (units of 2): 2, 2; 4 and 6 < 4 s = 12.2: 6, 2;
 *   PP 4 (a server a stage, stage 2 slow): 1, 1, 1, 1; 2 < 2 s to stages
 *     0, 1 and 3, the last to stage 0 (3 < 6.1): 3, 2, 1, 2. Interleaved:
 *     8 layers are 4 stages x 2 units: 2, 2, 2, 2;
 *   PP 8: one layer a stage.
 * Every configuration fits the 80 GB (so no stage is capped); the
 * scenario's own (TP 8 PP 2 DP 2, micro-batch 1, 1F1B) is priced as the
 * scenario is, its 6 and 2 layers. */
Test(search, rebalancing_holds_at_every_depth, .timeout = 120)
{
	struct scenario *s = fixture_scenario("scenarios/slow-server-rebalanced-h100-32p.json");
	struct search_result r = run(s);
	cr_expect_eq(r.n_oom, 0);
	static const int64_t pp2[] = {6, 2}, pp4[] = {3, 2, 1, 2}, pp4v[] = {2, 2, 2, 2};
	int seen[9] = {0};
	for (int i = 0; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		bool v2 = c->schedule == SCHED_INTERLEAVED_1F1B;
		const int64_t *want = c->pp == 2 ? pp2 : c->pp == 4 ? (v2 ? pp4v : pp4) : NULL;
		if (c->pp == 1) {
			cr_expect_null(c->stage_layers);
			continue;
		}
		cr_assert_not_null(c->stage_layers, "PP %lld", (long long)c->pp);
		for (int64_t k = 0; k < c->pp; k++)
			cr_expect_eq(c->stage_layers[k], want ? want[k] : 1, "PP %lld%s stage %lld",
			             (long long)c->pp, v2 ? " interleaved" : "", (long long)k);
		seen[c->pp]++;
	}
	cr_expect_gt(seen[2], 0);
	cr_expect_gt(seen[4], 0);
	cr_expect_gt(seen[8], 0);
	cr_expect(has_note("training.rebalance", "megatron-search rebalances the layers of every "
	                   "pipelined configuration over its own stages"));
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *own = plan_make(A, s, PLANNER_MEGATRON, &o, &D);
	struct estimate e;
	cr_assert(own && plan_estimate(A, own, &e, &D));
	bool found = false;
	for (int i = 0; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		if (c->tp != 8 || c->pp != 2 || c->micro_batch != 1 || c->sequence_parallel ||
		    c->schedule != SCHED_1F1B || c->recompute != s->training.recompute ||
		    c->zero_stage != s->training.zero_stage)
			continue;
		found = true;
		cr_expect_float_eq(r.cands[i].iteration_s, e.iteration_s, 1e-9 * e.iteration_s);
	}
	cr_expect(found);
}

/* ------------------------------------------- device and host memory apart */

/* offload-gpt-8p (hidden 256, 2 layers, 4 heads, sequence 128, vocabulary
 * 1,024, 8 B200s, global batch 8), its optimizer offloaded: 324
 * configurations, counted as search-gpt-4p's: TP 1 PP 1 DP 8 (b 1), TP 1
 * PP 2 DP 4 (b 1, 2), TP 2 PP 1 DP 4 (b 1, 2), TP 2 PP 2 DP 2 (b 1, 2, 4),
 * TP 4 PP 1 DP 2 (b 1, 2, 4), TP 4 PP 2 DP 1 (b 1, 2, 4, 8), SP off and on
 * with TP > 1: 1 + 2 + 4 + 6 + 6 + 8 = 27 groups x 12 (TP 8 does not
 * divide the 4 heads). The weights: word embedding 1,024 x 256 = 262,144,
 * positions 128 x 256 = 32,768, a layer 12 x 256^2 + 13 x 256 = 789,760,
 * final norm 512: 1,874,944, 22.5 MB of offloaded state at 12 B each. A
 * host of 150 MB holds the 8 GPUs' states: whole on each GPU (TP 1 PP 1
 * DP 8, ZeRO 0, its 3 recompute modes) 8 x 22.5 = 180 MB is over it (its
 * band's bottom, 171 MB, too); the next largest, TP 1 PP 2 with ZeRO 0,
 * 8 x 12 x (262,144 + 32,768 + 789,760) = 104 MB, is under it. The device
 * (180 GB) holds 3 GB of reserve and a few MB: every configuration fits
 * it; with 1 GB none does (the reserve alone is over it). */
Test(search, the_device_and_the_host_are_counted_apart)
{
	struct scenario *s = fixture_scenario("tests/data/studies/offload-gpt-8p.json");
	s->topo->host.capacity_bytes = 0.15e9;
	struct search_result r = run(s);
	cr_expect_eq(r.n_configs, 324);
	cr_expect_eq(r.n_oom_hbm, 0);
	cr_expect_eq(r.n_oom_host, 3);
	cr_expect_eq(r.n_oom, 3);
	cr_expect_eq(r.n_fit, 321);
	for (int i = r.n_fit; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		cr_expect(c->tp == 1 && c->pp == 1 && c->dp == 8 && c->zero_stage == 0);
		cr_expect_float_eq(r.cands[i].host_bytes, 8 * 12 * 1874944.0, 1e-6);
	}
	s->topo->device.hbm_bytes = 1e9;
	r = run(s);
	cr_expect_eq(r.n_oom_hbm, 324);
	cr_expect_eq(r.n_oom_host, 3);
	cr_expect_eq(r.n_oom, 324);
	cr_expect_eq(r.n_fit, 0);
}

/* A multi-token prediction module is no layer of megatron-search's split
 * either (docs/planner.md, "A multi-token prediction module"): the search
 * admits a depth by the generator's 4 decoder layers, not the 5
 * attentions with the module's, and its configurations are cut by the
 * same rule as the megatron planner's plans (plan_partition): a LLaMA MoE
 * of 4 layers and one prediction depth on 4 GPUs runs at PP 2 (2 layers a
 * stage, the second stage from layers.2.ln1) and PP 4 (one a stage), the
 * module's ops and its layer layers.4. in the last chunk, by hand as in
 * tests/planner/cost/test_pipeline.c (mtp_module_goes_with_the_last_stage). */
Test(search, an_mtp_module_is_no_layer_of_the_split)
{
	struct scenario *s = fixture_generated(
	        A, &D,
	        "{\"kind\": \"llama\", \"hidden\": 64, \"layers\": 4, \"heads\": 4, \"seq\": 64, "
	        "\"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\", \"ffn\": 128, "
	        "\"experts\": 4, \"top_k\": 2, \"expert_ffn\": 64, \"dense_layers\": 1, "
	        "\"mtp_layers\": 1}",
	        "dgx-a100", 4, "{\"global_batch\": 8}");
	struct search_result r = run(s);
	int seen[5] = {0};
	struct plan_options o = {.mode = REDIST_COMPAT};
	for (int i = 0; i < r.n; i++) {
		const struct search_config *c = &r.cands[i].config;
		cr_assert(c->pp >= 1 && c->pp <= 4);
		if (c->pp == 1 || c->schedule != SCHED_1F1B || seen[c->pp]++)
			continue;
		struct estimate e;
		struct plan *p = plan_search_plan(A, s, c, &o, &D);
		cr_assert(p && plan_estimate(A, p, &e, &D));
		const struct graph *g = p->graph;
		int n = (int)c->pp;
		cr_assert_eq(e.part.n_chunks, n);
		for (int k = 1; k < n; k++) {
			char want[32];
			snprintf(want, sizeof want, "layers.%d.ln1", k * 4 / n);
			cr_expect_str_eq(g->ops[e.part.first_op[k]].name, want, "PP %d chunk %d", n, k);
		}
		for (int x = 0; x < g->n_ops; x++)
			if (!strncmp(g->ops[x].name, "mtp.", 4) || !strncmp(g->ops[x].name, "layers.4.", 9))
				cr_expect_eq(e.part.chunk_of[x], n - 1, "PP %d: %s", n, g->ops[x].name);
	}
	cr_expect_gt(seen[2], 0);
	cr_expect_gt(seen[4], 0);
	cr_expect_eq(seen[3], 0);
}

/* training.moe_a2a_overlap in megatron-search: each configuration runs the
 * all-to-alls overlapped where Megatron-Core accepts it
 * (scenario_moe_a2a_overlap_refusal) and without where it does not: with
 * expert parallelism and 1F1B without a pipeline, or interleaved; not
 * under a plain pipeline, without EP, or with full recomputation. */
Test(search, moe_a2a_overlap_where_megatron_runs_it)
{
	struct scenario *s = fixture_generated(
	        A, &D,
	        "{\"kind\": \"llama\", \"hidden\": 64, \"layers\": 4, \"heads\": 4, \"seq\": 64, "
	        "\"vocab\": 256, \"micro_batch\": 4, \"dtype\": \"bf16\", \"ffn\": 128, "
	        "\"experts\": 4, \"top_k\": 2}",
	        "dgx-a100", 4, "{\"global_batch\": 8, \"expert_parallel\": 4, \"moe_a2a_overlap\": true}");
	cr_assert_not_null(s);
	static const struct {
		int64_t pp, v, ep;
		enum pipeline_schedule sched;
		enum recompute_mode rec;
		bool on;
	} cfg[] = {
		{1, 1, 4, SCHED_1F1B, RECOMPUTE_NONE, true},
		{2, 2, 2, SCHED_INTERLEAVED_1F1B, RECOMPUTE_SELECTIVE, true},
		{2, 1, 2, SCHED_1F1B, RECOMPUTE_NONE, false},
		{1, 1, 1, SCHED_1F1B, RECOMPUTE_NONE, false},
		{1, 1, 4, SCHED_1F1B, RECOMPUTE_FULL, false},
	};
	for (size_t k = 0; k < sizeof cfg / sizeof cfg[0]; k++) {
		struct search_config c = {.tp = 1, .pp = cfg[k].pp, .dp = 4 / cfg[k].pp, .micro_batch = 1,
		                          .ep = cfg[k].ep, .schedule = cfg[k].sched,
		                          .virtual_stages = cfg[k].v, .recompute = cfg[k].rec,
		                          .zero_stage = 1};
		c.micro_batches = 8 / c.dp;
		struct scenario *x = plan_search_scenario(A, s, &c, &D);
		cr_assert_not_null(x, "config %zu", k);
		cr_expect_eq(x->training.moe_a2a_overlap, cfg[k].on, "config %zu", k);
	}
}
