/* test_lower.c — lowering a plan to the program every rank runs, and the
 * collective algorithms' rule. Every expected step, group, message and
 * choice is worked out in the comments from the scenario, the model's
 * shapes and the topology files, never copied from the program's output.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner.h"
#include "sim.h"
#include "fixture.h"

#define GB 1e9
#define US 1e-6


TestSuite(lower, .init = fixture_setup, .fini = fixture_teardown);

static struct plan *plan_of(const char *path)
{
	struct scenario *s = fixture_scenario(path);
	struct plan *p = plan_propagate(A, s, REDIST_COMPAT, &D);
	cr_assert_not_null(p, "%s does not plan", path);
	return p;
}

/* The sorted members of every group, as one string: "0,1,2,3|4,5,6,7". */
static char *groups_str(const struct rank_groups *g)
{
	size_t cap = 4096, n = 0;
	char *s = arena_alloc(A, cap);
	int64_t r[64];
	cr_assert(g->size <= 64);
	for (int k = 0; k < g->n_groups; k++) {
		rank_groups_members(g, k, r);
		for (int i = 0; i < g->size; i++)
			for (int j = i + 1; j < g->size; j++)
				if (r[j] < r[i]) {
					int64_t x = r[i];
					r[i] = r[j];
					r[j] = x;
				}
		for (int i = 0; i < g->size; i++)
			n += (size_t)snprintf(s + n, cap - n, "%s%lld", i ? "," : k ? "|" : "",
			                      (long long)r[i]);
	}
	return s;
}

struct want {
	enum prog_kind kind;
	enum prog_phase phase;
	int stream;
	const char *op;          /* the graph op's name, NULL for -1 */
	enum step_kind coll;
	const char *groups;      /* as groups_str */
	double bytes;
	int after;
};

static int op_index(const struct graph *g, const char *name)
{
	for (int i = 0; i < g->n_ops; i++)
		if (!strcmp(g->ops[i].name, name))
			return i;
	cr_assert_fail("no op %s", name);
	return -1;
}

/* The old flat layout of a one-stage program, which the hand-derived
 * tables below list: the chunk's stream-0 steps (forward, backward), the
 * tail (optimizer), then the stream-1 buckets, their `after` renumbered.
 * *section: the count of the first part (what repeats per micro-batch). */
static void flatten(struct program *p, int *section)
{
	cr_assert_eq(p->n_stages, 1);
	cr_assert_eq(p->n_chunks, 1);
	struct prog_step *out = arena_calloc(A, (size_t)p->n_steps + 1, sizeof(*out));
	int *at = arena_calloc(A, (size_t)p->n_steps + 1, sizeof(int));
	cr_assert(out && at);
	int n = 0;
	const struct prog_chunk *c = &p->chunks[0];
	for (int part = 0; part < 2; part++)
		for (int i = part ? c->bwd : c->fwd; i < (part ? c->bwd + c->n_bwd : c->fwd + c->n_fwd); i++)
			if (p->steps[i].stream == 0) {
				at[i] = n;
				out[n++] = p->steps[i];
			}
	*section = n;
	for (int i = p->stages[0].tail; i < p->stages[0].tail + p->stages[0].n_tail; i++)
		out[n++] = p->steps[i];
	for (int i = 0; i < p->n_steps; i++)
		if (p->steps[i].stream == 1) {
			out[n] = p->steps[i];
			out[n++].after = at[p->steps[i].after];
		}
	cr_assert_eq(n, p->n_steps);
	p->steps = out;
}

/* How often step k of a one-stage program runs in an iteration. */
static double times_run(const struct program *p, int k)
{
	const struct prog_stage *st = &p->stages[0];
	if (k >= st->tail && k < st->tail + st->n_tail)
		return 1;
	if (p->steps[k].stream == 1 && !p->steps[k].every_micro)
		return 1;
	return (double)p->micro_batches;
}

static void expect_steps(const struct plan *p, const struct program *prog, const struct want *w,
                         int n)
{
	cr_assert_eq(prog->n_steps, n, "%d steps, want %d", prog->n_steps, n);
	for (int k = 0; k < n; k++) {
		const struct prog_step *s = &prog->steps[k];
		cr_expect_eq(s->kind, w[k].kind, "step %d kind", k);
		cr_expect_eq(s->phase, w[k].phase, "step %d phase", k);
		cr_expect_eq(s->stream, w[k].stream, "step %d stream", k);
		cr_expect_eq(s->op, w[k].op ? op_index(p->graph, w[k].op) : -1, "step %d op", k);
		cr_expect_eq(s->after, w[k].after, "step %d after %d, want %d", k, s->after, w[k].after);
		cr_expect_not_null(s->label, "step %d label", k);
		if (w[k].kind != PROG_COLLECTIVE)
			continue;
		cr_expect_eq(s->coll, w[k].coll, "step %d: %s, want %s", k, step_kind_names[s->coll],
		             step_kind_names[w[k].coll]);
		cr_expect_str_eq(groups_str(&s->groups), w[k].groups, "step %d groups", k);
		cr_expect(fabs(s->bytes - w[k].bytes) <= 1e-9 * w[k].bytes, "step %d: %g bytes, want %g",
		          k, s->bytes, w[k].bytes);
	}
}

#define C(ph, op) {PROG_COMPUTE, ph, 0, op, 0, NULL, 0, -1}
#define X(ph, op, kind, groups, bytes) {PROG_COLLECTIVE, ph, 0, op, kind, groups, bytes, -1}
#define G(kind, groups, bytes, after) \
	{PROG_COLLECTIVE, PHASE_GRADIENT, 1, NULL, kind, groups, bytes, after}

static const char *const QUADS = "0,1,2,3|4,5,6,7";
static const char *const PAIRS = "0,4|1,5|2,6|3,7";

/* Seed 000's FFN, every op configured as in its IR (fp32, x [64, 64], one
 * step per iteration: global batch 64 = the graph's batch 64):
 *   dense1.matmul ((2,1),(1,4)): device matrix [2,1,4]; X rows by 2, W
 *     columns by 4, Y [32,16] per rank, no partial sums. Backward: dX is
 *     a partial sum over the 4-axis (Megatron's "f"): AllReduce over the
 *     ranks differing in that axis, {0,1,2,3} and {4,5,6,7}, of the local
 *     X: 32 x 64 x 4 B = 8192 B. W [64,16] is replicated over the 2-axis:
 *     its gradient is all-reduced over {0,4},{1,5},{2,6},{3,7}: 64 x 16 x
 *     4 = 4096 B.
 *   dense1.add ((2,4),(4)): reads Y as laid out (no edge); bias [16] per
 *     rank, replicated over the 2-axis: 64 B over the pairs.
 *   relu ((2,4)): nothing.
 *   dense2.matmul ((2,4),(4,1)): the contracted dimension cut in 4, Y
 *     [32,64] partial: AllReduce over the quads of 32 x 64 x 4 = 8192 B
 *     (MindSpore-compatible: the op completes its sums); it mirrors to
 *     nothing. X's map uses both axes: no "f". W [16,64] replicated over
 *     the 2-axis: 4096 B over the pairs.
 *   dense2.add ((2,4),(4)): the edge from dense2.matmul is a StridedSlice
 *     of dimension 1 by 4 (no traffic); its backward mirror gathers the
 *     slices over the quads, S = the slice's source, 8192 B. Bias: 64 B
 *     over the pairs.
 * Stream 0: forward 0-5, backward 6-12 (section of 13), optimizer 13.
 * Gradients become ready at the backward compute of their op: dense2.bias
 * at 6, dense2.weight at 8, dense1.bias at 10, dense1.weight at 11. */
static const struct want ffn_steps[] = {
	C(PHASE_FORWARD, "dense1.matmul"),                                        /* 0 */
	C(PHASE_FORWARD, "dense1.add"),                                           /* 1 */
	C(PHASE_FORWARD, "relu"),                                                 /* 2 */
	C(PHASE_FORWARD, "dense2.matmul"),                                        /* 3 */
	X(PHASE_FORWARD, "dense2.matmul", STEP_ALLREDUCE, "0,1,2,3|4,5,6,7", 8192), /* 4 */
	C(PHASE_FORWARD, "dense2.add"),                                           /* 5 */
	C(PHASE_BACKWARD, "dense2.add"),                                          /* 6 */
	X(PHASE_BACKWARD, "dense2.add", STEP_ALLGATHER, "0,1,2,3|4,5,6,7", 8192), /* 7 */
	C(PHASE_BACKWARD, "dense2.matmul"),                                       /* 8 */
	C(PHASE_BACKWARD, "relu"),                                                /* 9 */
	C(PHASE_BACKWARD, "dense1.add"),                                          /* 10 */
	C(PHASE_BACKWARD, "dense1.matmul"),                                       /* 11 */
	X(PHASE_BACKWARD, "dense1.matmul", STEP_ALLREDUCE, "0,1,2,3|4,5,6,7", 8192), /* 12 */
	C(PHASE_OPTIMIZER, NULL),                                                 /* 13 */
};

/* With buckets of 1 MiB the four gradients share kind and groups and fit
 * one bucket of 64 + 4096 + 64 + 4096 = 8320 B, after the last (11). */
Test(lower, seed000_ffn_steps_and_one_bucket)
{
	struct plan *p = plan_of("scenarios/seed000-ffn-ir-8p.json");
	struct program prog;
	cr_assert(plan_lower(A, p, 1 << 20, &prog, &D));
	int section;
	flatten(&prog, &section);
	struct want w[15];
	memcpy(w, ffn_steps, sizeof ffn_steps);
	w[14] = (struct want)G(STEP_ALLREDUCE, "0,4|1,5|2,6|3,7", 8320, 11);
	expect_steps(p, &prog, w, 15);
	cr_assert_eq(section, 13);
	cr_assert_eq(prog.micro_batches, 1);
	cr_assert_eq(prog.n_ranks, 8);
	(void)QUADS;
	(void)PAIRS;
}

/* training.overlap_grad_reduce false (Megatron-LM's default): the same
 * bucket, but in the stage's tail on the compute stream, after the whole
 * backward and before the optimizer, as the estimate prices it. */
Test(lower, seed000_ffn_bucket_after_the_backward_without_overlap)
{
	struct scenario *s = scenario_load(A, "scenarios/seed000-ffn-ir-8p.json", &D);
	cr_assert_not_null(s);
	cr_assert(s->training.overlap_grad_reduce, "overlapped by default, as PyTorch DDP");
	s->training.overlap_grad_reduce = false;
	struct plan *p = plan_propagate(A, s, REDIST_COMPAT, &D);
	cr_assert_not_null(p);
	struct program prog;
	cr_assert(plan_lower(A, p, 1 << 20, &prog, &D));
	int section;
	flatten(&prog, &section);
	struct want w[15];
	memcpy(w, ffn_steps, 13 * sizeof ffn_steps[0]);
	w[13] = (struct want){PROG_COLLECTIVE, PHASE_GRADIENT, 0, NULL, STEP_ALLREDUCE,
	                      "0,4|1,5|2,6|3,7", 8320, -1};
	w[14] = ffn_steps[13];
	expect_steps(p, &prog, w, 15);
	cr_assert_eq(section, 13);
}

/* The estimate shares each bucket's time among the ops whose gradients it
 * carries, by bytes: in the one 8320 B bucket of 1 MiB buckets each
 * weight's MatMul gets 4096/8320 of it and each bias's Add 64/8320; in
 * buckets of 4 KiB (one gradient each) each op gets its own bucket's
 * time. Either way the ops' figures sum to the gradient_sync category. */
Test(lower, seed000_ffn_gradient_time_by_bucket)
{
	static const double sizes[] = {1 << 20, 4096};
	for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
		struct scenario *s = scenario_load(A, "scenarios/seed000-ffn-ir-8p.json", &D);
		cr_assert_not_null(s);
		s->training.gradient_bucket_bytes = sizes[k];
		s->training.overlap_grad_reduce = false;  /* priced whole, after the backward */
		struct plan *p = plan_propagate(A, s, REDIST_COMPAT, &D);
		struct estimate e;
		cr_assert(p && plan_estimate(A, p, &e, &D));
		const struct graph *g = p->graph;
		double mm1 = e.ops[graph_find_op(g, "dense1.matmul")].gradient_s;
		double add1 = e.ops[graph_find_op(g, "dense1.add")].gradient_s;
		double mm2 = e.ops[graph_find_op(g, "dense2.matmul")].gradient_s;
		double add2 = e.ops[graph_find_op(g, "dense2.add")].gradient_s;
		double total = e.category_s[EST_GRADIENT_SYNC], sum = 0;
		for (int i = 0; i < e.n_ops; i++)
			sum += e.ops[i].gradient_s;
		cr_expect_float_eq(sum, total, 1e-9 * total, "buckets of %g B: %g s vs %g s",
		                   sizes[k], sum, total);
		cr_expect_float_eq(mm1, mm2, 1e-12, "same weight size, same share");
		cr_expect_float_eq(add1, add2, 1e-12, "same bias size, same share");
		if (k == 0) {
			cr_expect_float_eq(mm1, total * 4096 / 8320, 1e-9 * total);
			cr_expect_float_eq(add1, total * 64 / 8320, 1e-9 * total);
		} else {
			cr_expect_gt(mm1, add1, "4096 B all-reduce slower than 64 B");
			cr_expect_float_eq(2 * (mm1 + add1), total, 1e-9 * total);
		}
	}
}

/* Buckets of 4 KiB: dense2.bias (64) opens a bucket and dense2.weight
 * (4096) does not fit beside it, so it closes; dense2.weight opens the
 * next, dense1.bias does not fit (4160 > 4096): a third, which
 * dense1.weight does not fit either: four buckets, each one gradient. */
Test(lower, seed000_ffn_small_buckets)
{
	struct plan *p = plan_of("scenarios/seed000-ffn-ir-8p.json");
	struct program prog;
	cr_assert(plan_lower(A, p, 4096, &prog, &D));
	int section;
	flatten(&prog, &section);
	struct want w[18];
	memcpy(w, ffn_steps, sizeof ffn_steps);
	w[14] = (struct want)G(STEP_ALLREDUCE, PAIRS, 64, 6);
	w[15] = (struct want)G(STEP_ALLREDUCE, PAIRS, 4096, 8);
	w[16] = (struct want)G(STEP_ALLREDUCE, PAIRS, 64, 10);
	w[17] = (struct want)G(STEP_ALLREDUCE, PAIRS, 4096, 11);
	expect_steps(p, &prog, w, 18);
	/* 4160 B fits buckets of 4160: dense2.bias + dense2.weight, then
	 * dense1.bias + dense1.weight. */
	cr_assert(plan_lower(A, p, 4160, &prog, &D));
	flatten(&prog, &section);
	w[14] = (struct want)G(STEP_ALLREDUCE, PAIRS, 4160, 8);
	w[15] = (struct want)G(STEP_ALLREDUCE, PAIRS, 4160, 11);
	expect_steps(p, &prog, w, 16);
}

/* megatron-mlp-8p (tests/planner/cost/test_estimate.c derives the plan): fc1 column-parallel,
 * fc2 row-parallel on the 8 GPUs of one DGX A100. Forward: fc2.matmul's
 * partial sums all-reduced over the 8 GPUs, S = 1024 x 1024 x 2 B (bf16)
 * = 2 MiB. Backward: fc1.matmul's input-gradient AllReduce of the same
 * 2 MiB; fc2's AllReduce mirrors to nothing. Only fc2.bias [1024] is
 * replicated: one gradient of 1024 elements, ready at fc2.bias_add's
 * backward compute (step 8), in one bucket, all-reduced in fp32 as
 * Megatron-LM does for bf16 models: 4 KiB. */
Test(lower, megatron_mlp)
{
	struct plan *p = plan_of("scenarios/megatron-mlp-8p.json");
	struct program prog;
	cr_assert(plan_lower(A, p, 25 << 20, &prog, &D));
	int section;
	flatten(&prog, &section);
	const char *all = "0,1,2,3,4,5,6,7";
	const double mib2 = 2 * 1048576.0;
	struct want w[] = {
		C(PHASE_FORWARD, "mlp.fc1.matmul"),                          /* 0 */
		C(PHASE_FORWARD, "mlp.fc1.bias_add"),                        /* 1 */
		C(PHASE_FORWARD, "mlp.gelu"),                                /* 2 */
		C(PHASE_FORWARD, "mlp.fc2.matmul"),                          /* 3 */
		X(PHASE_FORWARD, "mlp.fc2.matmul", STEP_ALLREDUCE, all, mib2), /* 4 */
		C(PHASE_FORWARD, "mlp.fc2.bias_add"),                        /* 5 */
		C(PHASE_FORWARD, "mlp.dropout"),                             /* 6 */
		C(PHASE_BACKWARD, "mlp.dropout"),                            /* 7 */
		C(PHASE_BACKWARD, "mlp.fc2.bias_add"),                       /* 8 */
		C(PHASE_BACKWARD, "mlp.fc2.matmul"),                         /* 9 */
		C(PHASE_BACKWARD, "mlp.gelu"),                               /* 10 */
		C(PHASE_BACKWARD, "mlp.fc1.bias_add"),                       /* 11 */
		C(PHASE_BACKWARD, "mlp.fc1.matmul"),                         /* 12 */
		X(PHASE_BACKWARD, "mlp.fc1.matmul", STEP_ALLREDUCE, all, mib2), /* 13 */
		C(PHASE_OPTIMIZER, NULL),                                    /* 14 */
		G(STEP_ALLREDUCE, all, 4096, 8),                             /* 15: fp32 gradient */
	};
	expect_steps(p, &prog, w, (int)(sizeof w / sizeof w[0]));
	cr_assert_eq(section, 14);
}

/* ------------------------------------- the program adds up to the estimate */

/* The slowest group of a collective, each group by the rule's algorithm:
 * what the simulator sees when nothing contends. */
static double step_formula_s(const struct topology *t, const struct prog_step *s,
                             enum collective_algo wanted)
{
	int64_t r[1024];
	double worst = 0;
	cr_assert(s->groups.size <= 1024);
	for (int k = 0; k < s->groups.n_groups; k++) {
		rank_groups_members(&s->groups, k, r);
		enum collective_algo al = cost_choose_algo(t, s->coll, r, s->groups.size, s->bytes,
		                                           wanted);
		double x = cost_collective_algo_s(t, s->coll, al, r, s->groups.size, s->bytes);
		worst = x > worst ? x : worst;
	}
	return worst;
}

/* The program's compute seconds (section x repeat + optimizer) and its
 * collectives' formula times are exactly the estimate's compute_s and
 * comm_s, with the scenario's gradient buckets (both fuse them by
 * plan_gradient_buckets) or with none (bucket_bytes 0: every gradient its
 * own all-reduce): the estimate is the program with no overlap and no
 * contention. */
static void adds_up(const char *path, enum collective_algo wanted, int64_t global_batch,
                    double bucket_bytes)
{
	struct scenario *s = fixture_scenario(path);
	s->sim.collective_algo = wanted;
	s->training.gradient_bucket_bytes = bucket_bytes;
	s->training.overlap_grad_reduce = false;  /* the buckets after the backward, unhidden */
	if (global_batch > 0)
		s->training.global_batch = global_batch;
	struct plan *p = plan_propagate(A, s, REDIST_COMPAT, &D);
	cr_assert_not_null(p, "%s", path);
	struct program prog;
	struct estimate e;
	cr_assert(plan_lower(A, p, bucket_bytes, &prog, &D), "%s", path);
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_assert_eq(prog.micro_batches, e.steps_per_iteration);
	double compute = 0, comm = 0;
	for (int k = 0; k < prog.n_steps; k++) {
		const struct prog_step *st = &prog.steps[k];
		double times = times_run(&prog, k);
		if (st->kind == PROG_COMPUTE)
			compute += times * st->seconds;
		else
			comm += times * step_formula_s(s->topo, st, wanted);
	}
	cr_expect(fabs(compute - e.compute_s) <= 1e-9 * e.compute_s, "%s compute %.15g, estimate %.15g",
	          path, compute, e.compute_s);
	cr_expect(fabs(comm - e.comm_s) <= 1e-9 * e.comm_s, "%s (%s) comm %.15g, estimate %.15g", path,
	          collective_algo_names[wanted], comm, e.comm_s);
}

Test(lower, program_adds_up_to_the_estimate)
{
	static const char *const files[] = {
		"scenarios/ffn-8p.json", "scenarios/ffn-8p-layout.json",
		"scenarios/megatron-attention-8p.json", "scenarios/megatron-mlp-8p.json",
		"scenarios/seed000-alltoall-4p.json", "scenarios/seed000-ffn-ir-8p.json",
		"scenarios/seed000-figure-relu-8p.json", "scenarios/seed003-matmul-4p.json",
		"scenarios/seed004-allgather-4p.json", "scenarios/seed004-layout-8p.json",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
		for (int al = 0; al < COLL_COUNT; al++) {
			adds_up(files[i], (enum collective_algo)al, 0, 0);
			adds_up(files[i], (enum collective_algo)al, 0, 25.0 * 1024 * 1024);
		}
	/* Several steps per iteration: the section repeats. */
	adds_up("scenarios/megatron-mlp-8p.json", COLL_AUTO, 6, 25.0 * 1024 * 1024);
}

/* The --max-events budget counts what runs: at fidelity representative
 * one rank per data-parallel group. gpt-4layer-dp32 is data parallel on
 * 32 ranks (one group of 32, one representative: 1/32 of the steps);
 * gpt-small-910a-32p's Megatron plan is TP 8 x PP 2 x DP 2 (each stage's
 * 16 ranks are 8 pairs of replicas: 8 run, half the steps). */
Test(lower, representative_budget_counts_the_ranks_that_run)
{
	static const struct {
		const char *path;
		bool megatron;
		int64_t running;
	} cases[] = {
		{"scenarios/jobs/gpt-4layer-dp32.json", false, 1},
		{"scenarios/gpt-small-910a-32p.json", true, 16},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct scenario *s = fixture_scenario(cases[i].path);
		struct plan_options o = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_TOPOLOGY};
		struct plan *p = cases[i].megatron ? plan_megatron(A, s, &o, &D)
		                                   : plan_data_parallel(A, s, &o, &D);
		cr_assert_not_null(p, "%s", cases[i].path);
		struct program prog;
		cr_assert(plan_lower(A, p, 25 << 20, &prog, &D), "%s", cases[i].path);
		cr_assert_eq(prog.n_ranks, 32);
		double all = sim_program_events(&prog);
		int64_t running;
		cr_expect_eq(sim_program_events_run(&prog, FIDELITY_COARSE, &running), all);
		cr_expect_eq(running, 32);
		double rep = sim_program_events_run(&prog, FIDELITY_REPRESENTATIVE, &running);
		cr_expect_eq(running, cases[i].running, "%s: %lld ranks run", cases[i].path,
		             (long long)running);
		cr_expect_eq(rep * 32, all * (double)cases[i].running, "%s: %g of %g steps",
		             cases[i].path, rep, all);
	}
}

/* Scenario s planned by the megatron rule, lowered with every gradient
 * its own all-reduce, and estimated. */
static struct plan *megatron_lowered(struct scenario *s, struct program *prog, struct estimate *e)
{
	struct plan_options o = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_TOPOLOGY};
	struct plan *p = plan_megatron(A, s, &o, &D);
	cr_assert_not_null(p);
	cr_assert(plan_lower(A, p, 0, prog, &D));
	cr_assert(plan_estimate(A, p, e, &D));
	return p;
}

/* The Megatron plan of the 8.3B model on 512 GPUs (64 DGX A100): groups
 * across servers, hierarchical and flat algorithms in play. */
Test(lower, megatron_gpt_across_servers_adds_up)
{
	struct scenario *s = scenario_load(A, "scenarios/megatron-gpt-8.3b-512p.json", &D);
	cr_assert_not_null(s);
	s->training.gradient_bucket_bytes = 0; /* every gradient its own all-reduce */
	s->training.overlap_grad_reduce = false; /* after the backward, unhidden */
	struct program prog;
	struct estimate e;
	struct plan *p = megatron_lowered(s, &prog, &e);
	double comm = 0;
	for (int k = 0; k < prog.n_steps; k++) {
		const struct prog_step *st = &prog.steps[k];
		if (st->kind == PROG_COLLECTIVE)
			comm += times_run(&prog, k) *
			        step_formula_s(s->topo, st, COLL_AUTO);
	}
	cr_expect(fabs(comm - e.comm_s) <= 1e-9 * e.comm_s, "comm %.15g, estimate %.15g", comm,
	          e.comm_s);
	/* Buckets of 25 MB fuse: fewer stream-1 steps than gradients. */
	s->training.overlap_grad_reduce = true;
	struct program fused;
	cr_assert(plan_lower(A, p, 25e6, &fused, &D));
	int n0 = 0, n1 = 0;
	struct program each;
	cr_assert(plan_lower(A, p, 0, &each, &D));
	for (int k = 0; k < each.n_steps; k++)
		n0 += each.steps[k].stream == 1;
	for (int k = 0; k < fused.n_steps; k++) {
		n1 += fused.steps[k].stream == 1;
		if (fused.steps[k].stream == 1) {
			/* Over 25 MB only when one gradient is larger by itself
			 * (buckets count the bf16 parameters; the collective moves
			 * their fp32 gradients, twice the bytes). */
			bool fused_many = !strncmp(fused.steps[k].label, "gradient bucket", 15);
			cr_expect(!fused_many || fused.steps[k].bytes <= 2 * 25e6, "bucket %d: %g B", k,
			          fused.steps[k].bytes);
			cr_expect(fused.steps[k].after >= 0 && fused.steps[k].after < k &&
			          fused.steps[fused.steps[k].after].phase == PHASE_BACKWARD);
		}
	}
	cr_expect_lt(n1, n0, "%d buckets for %d gradients", n1, n0);
}

/* A fused QKV projection (generator member fused_qkv) lowers as any plan:
 * the program's compute and collectives add up to the estimate, at TP 2
 * (one key/value group a rank: no redistribution in the attention) and at
 * TP 8 above the 2 groups (the fused output all-gathered once); the views
 * take no time. `shardlab simulate` runs it. */
Test(lower, fused_qkv_adds_up_and_simulates)
{
	char dir[] = "/tmp/shardlab-fqkv-XXXXXX", cwd[512], path[600], args[700];
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(path, sizeof path, "%s/s.json", dir);
	for (int devices = 2; devices <= 8; devices *= 4) {
		fixture_write(path, "{\"format\": \"shardlab-scenario\", \"version\": 1, "
		              "\"name\": \"fq\", \"model\": {\"name\": \"m\", \"generator\": "
		              "{\"kind\": \"llama\", \"hidden\": 512, \"layers\": 2, \"heads\": 8, "
		              "\"kv_heads\": 2, \"ffn\": 1024, \"seq\": 128, \"vocab\": 1024, "
		              "\"micro_batch\": 2, \"fused_qkv\": true}}, \"topology\": "
		              "\"%s/topologies/dgx-h100.json\", \"devices\": %d, \"planners\": "
		              "[\"megatron\"], \"training\": {\"global_batch\": 4, \"dtype\": \"bf16\"}}",
		              cwd, devices);
		struct scenario *s = fixture_scenario(path);
		s->training.gradient_bucket_bytes = 0;
		s->training.overlap_grad_reduce = false;
		struct program prog;
		struct estimate e;
		megatron_lowered(s, &prog, &e);
		double compute = 0, comm = 0;
		for (int k = 0; k < prog.n_steps; k++) {
			const struct prog_step *st = &prog.steps[k];
			if (st->kind == PROG_COMPUTE && st->label && strstr(st->label, ".split"))
				cr_expect_eq(st->seconds, 0, "a view ran: %s", st->label);
			if (st->kind == PROG_COMPUTE)
				compute += times_run(&prog, k) * st->seconds;
			else
				comm += times_run(&prog, k) * step_formula_s(s->topo, st, COLL_AUTO);
		}
		cr_expect(fabs(compute - e.compute_s) <= 1e-9 * e.compute_s, "TP %d compute %.15g, "
		          "estimate %.15g", devices, compute, e.compute_s);
		cr_expect(fabs(comm - e.comm_s) <= 1e-9 * e.comm_s, "TP %d comm %.15g, estimate %.15g",
		          devices, comm, e.comm_s);
		snprintf(args, sizeof args, "simulate %s", path);
		struct cli_run r = fixture_shardlab(args, false);
		cr_expect_eq(r.status, 0, "%s", r.out);
		cr_expect_not_null(strstr(r.out, "iteration            simulated"), "%s", r.out);
		free(r.out);
	}
	remove(path);
	rmdir(dir);
}

/* training.tp_comm_overlap: the collectives of sequence parallelism carry
 * the compute run alongside them (overlap_s), taken off their GEMMs'
 * steps, so that the program still adds up to the estimate: compute steps
 * plus what ran alongside give the estimate's compute, and each
 * collective's formula beyond what ran alongside it its communication
 * (estimate.c's hide_overlap, the simulator's overlap_s). The small GPT of
 * test_baselines.c's sequence-parallel tests on 16 GPUs (T = 8, D = 2).
 * With tp_comm_overlap_slices, the first slice's share of each such
 * transfer (alone_share) has nothing beside it. */
static void tp_comm_overlap_adds_up(const char *slices)
{
	char tr[256];
	snprintf(tr, sizeof tr,
	         "{\"global_batch\": 8, \"dtype\": \"bf16\", \"sequence_parallel\": true,"
	         " \"tp_comm_overlap\": true, \"gradient_bucket_mb\": 0,"
	         " \"overlap_grad_reduce\": false%s}", slices);
	struct scenario *s = fixture_generated(
		A, &D,
		"{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 2, \"heads\": 8, \"seq\": 16,"
		" \"vocab\": 256, \"ffn\": 256, \"micro_batch\": 2}",
		"dgx-a100-x128", 16, tr);
	cr_assert_not_null(s);
	struct program prog;
	struct estimate e;
	megatron_lowered(s, &prog, &e);
	double compute = 0, comm = 0, alongside = 0;
	for (int k = 0; k < prog.n_steps; k++) {
		const struct prog_step *st = &prog.steps[k];
		double times = times_run(&prog, k);
		cr_expect_geq(st->seconds, 0, "%s", st->label);
		if (st->kind == PROG_COMPUTE) {
			compute += times * st->seconds;
		} else if (st->kind == PROG_COLLECTIVE) {
			double f = step_formula_s(s->topo, st, COLL_AUTO);
			compute += times * st->overlap_s;
			alongside += times * st->overlap_s;
			comm += times * (f - fmin(st->overlap_s, (1 - st->alone_share) * f));
			cr_expect(st->overlap_s == 0 || st->alone_share == (slices[0] ? 0.5 : 0),
			          "%s: alone %g", st->label, st->alone_share);
		}
	}
	cr_expect_gt(alongside, 0);
	cr_expect(fabs(compute - e.compute_s) <= 1e-9 * e.compute_s, "compute %.15g, estimate %.15g",
	          compute, e.compute_s);
	cr_expect(fabs(comm - e.comm_s) <= 1e-9 * e.comm_s, "comm %.15g, estimate %.15g", comm,
	          e.comm_s);
}

Test(lower, megatron_tp_comm_overlap_adds_up)
{
	tp_comm_overlap_adds_up("");
}

Test(lower, tp_comm_overlap_slices_add_up)
{
	tp_comm_overlap_adds_up(", \"tp_comm_overlap_slices\": 2");
}

/* training.overlap_param_gather: ZeRO 1's all-gathers of the updated
 * parameters leave the tail for stream 1, handed over in the first
 * micro-batch's forward, which waits for them before it goes on; the
 * estimate exposes what they outlast of that forward. 32 GPUs of
 * dgx-h100-x64 (4 servers) in data parallelism, a GPT wide enough that the
 * gathers outlast the forward; the gradients reduced after the backward
 * (as the estimate prices them) so that only the gathers overlap. */
Test(lower, overlap_param_gather_moves_the_gathers_under_the_first_forward)
{
	static const char *const gen =
		"{\"kind\": \"gpt\", \"hidden\": 1024, \"layers\": 2, \"heads\": 8, \"seq\": 64,"
		" \"vocab\": 4096, \"ffn\": 4096, \"micro_batch\": 32}";
	struct scenario *off = fixture_generated(
		A, &D, gen, "dgx-h100-x64", 32,
		"{\"global_batch\": 128, \"dtype\": \"bf16\", \"zero_stage\": 1,"
		" \"overlap_grad_reduce\": false}");
	struct scenario *on = fixture_generated(
		A, &D, gen, "dgx-h100-x64", 32,
		"{\"global_batch\": 128, \"dtype\": \"bf16\", \"zero_stage\": 1,"
		" \"overlap_grad_reduce\": false, \"overlap_param_gather\": true}");
	cr_assert(off && on);
	/* every gradient its own bucket, as the lowering below */
	off->training.gradient_bucket_bytes = on->training.gradient_bucket_bytes = 0;
	struct program po, pn;
	struct estimate eo, en;
	megatron_lowered(off, &po, &eo);
	megatron_lowered(on, &pn, &en);
	/* Without: the gathers in the tail, on stream 0; their formula AG. */
	double ag = 0;
	int n_off = 0, n_on = 0, waits = 0;
	const struct prog_stage *t = &po.stages[0];
	for (int k = t->tail; k < t->tail + t->n_tail; k++)
		if (po.steps[k].phase == PHASE_PARAMS) {
			ag += step_formula_s(off->topo, &po.steps[k], COLL_AUTO);
			n_off++;
		}
	cr_assert_gt(n_off, 0);
	/* With: as many on stream 1 in the forward, first micro-batch only,
	 * then one wait; none in the tail. */
	const struct prog_chunk *c = &pn.chunks[0];
	for (int k = c->fwd; k < c->fwd + c->n_fwd; k++) {
		const struct prog_step *st = &pn.steps[k];
		n_on += st->phase == PHASE_PARAMS && st->stream == 1 && st->first_micro;
		waits += st->wait_s1 && st->first_micro;
	}
	t = &pn.stages[0];
	for (int k = t->tail; k < t->tail + t->n_tail; k++)
		cr_expect_neq(pn.steps[k].phase, PHASE_PARAMS);
	cr_expect_eq(n_on, n_off);
	cr_expect_eq(waits, 1);
	/* The forward of one micro-batch, compute and communication. */
	double fwd = 0;
	for (int i = 0; i < on->graph->n_ops; i++)
		fwd += en.ops[i].compute_forward_s + en.ops[i].comm_forward_s;
	cr_assert_gt(ag, fwd, "the gathers (%g s) should outlast the forward (%g s)", ag, fwd);
	double want = eo.iteration_s - ag + (ag - fwd);
	cr_expect(fabs(en.iteration_s - want) <= 1e-9 * want, "iteration %.12g, want %.12g",
	          en.iteration_s, want);
	/* Simulated, the first forward waits for the gathers as the estimate
	 * says (within the devices' spread, which the estimate prices at the
	 * slowest of them) and the iteration is faster than without. Here
	 * the gathers take 1.9 ms, the forward 0.7: without the wait the
	 * simulation would be 13% under the estimate, without the overlap
	 * 8% over it. */
	struct sim_options so = {.fidelity = FIDELITY_COARSE, .algo = COLL_AUTO};
	struct sim_result ro, rn;
	cr_assert(sim_run(A, off->topo, &po, &so, &ro, &D));
	cr_assert(sim_run(A, on->topo, &pn, &so, &rn, &D));
	cr_expect(fabs(rn.iteration_s - en.iteration_s) <= 0.03 * en.iteration_s,
	          "simulated %.6g s, estimated %.6g s", rn.iteration_s, en.iteration_s);
	cr_expect_lt(rn.iteration_s, ro.iteration_s);
}

/* --------------------------------------------------------- the rule */

static double ar_ring(int n, double S, double B, double a)
{
	return 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * a;
}

static void near(double got, double want, const char *what)
{
	cr_expect(fabs(got - want) <= 1e-9 * fabs(want), "%s: got %.12g, want %.12g", what, got, want);
}

/* dgx-a100: NVSwitch ports of 300 GB/s at efficiency 0.767 (B = 230.1
 * GB/s), 1 us. Eight GPUs, AllReduce:
 *   ring   14 α + 2·7/8·S/B
 *   HD      6 α + 2·7/8·S/B    (3 exchanges each way)
 *   tree    6 (α + S/B)        (3 rounds up, 3 down)
 * HD is below the ring for every S (same bandwidth term, fewer
 * latencies) and below the tree for every S > 0: auto takes HD; asking
 * for the ring or the tree gets them. Two GPUs: ring and HD are both
 * 2α + S/B; the tie goes to the ring. */
Test(lower, rule_power_of_two_inside_a_server)
{
	struct topology *t = fixture_topology(A, "dgx-a100:none");
	int64_t r[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	double B = A100_NVSWITCH_BPS, a = 1 * US;
	for (double S = 1024; S < 2e9; S *= 1024) {
		cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 8, S, COLL_AUTO),
		             COLL_HALVING_DOUBLING, "S = %g", S);
		near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 8, S),
		     6 * a + 2.0 * 7 / 8 * S / B, "auto = HD");
		near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_TREE, r, 8, S), 6 * (a + S / B),
		     "tree");
		near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_RING, r, 8, S), ar_ring(8, S, B, a),
		     "ring");
	}
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 8, 1e6, COLL_RING), COLL_RING);
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 8, 1e6, COLL_TREE), COLL_TREE);
	/* AllGather: HD 3α + 7/8·S/B against the ring's 7α + 7/8·S/B. */
	cr_expect_eq(cost_choose_algo(t, STEP_ALLGATHER, r, 8, 1e6, COLL_AUTO),
	             COLL_HALVING_DOUBLING);
	near(cost_collective_algo_s(t, STEP_ALLGATHER, COLL_AUTO, r, 8, 1e6),
	     3 * a + 7.0 / 8 * 1e6 / B, "AllGather HD");
	/* The tree has no AllGather of its own: asking for it gets the rule. */
	cr_expect_eq(cost_choose_algo(t, STEP_ALLGATHER, r, 8, 1e6, COLL_TREE),
	             COLL_HALVING_DOUBLING);
	/* AllToAll: the ring (pairwise) pays 7α + 7/8·S/B, direct sends all
	 * pieces at once through the NVSwitch port: α + 7/8·S/B. */
	cr_expect_eq(cost_choose_algo(t, STEP_ALLTOALL, r, 8, 1e6, COLL_AUTO), COLL_DIRECT);
	near(cost_collective_algo_s(t, STEP_ALLTOALL, COLL_AUTO, r, 8, 1e6), a + 7.0 / 8 * 1e6 / B,
	     "AllToAll direct");
	cr_expect_eq(cost_choose_algo(t, STEP_ALLTOALL, r, 8, 1e6, COLL_DIRECT), COLL_DIRECT);
	int64_t r2[2] = {2, 5};
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r2, 2, 1e6, COLL_AUTO), COLL_RING);
}

/* Six GPUs of the DGX (not a power of two: no HD). AllReduce:
 *   ring   10 α + 2·5/6·S/B
 *   tree    6 (α + S/B)        (ceil(log2 6) = 3 rounds each way)
 * tree < ring  <=>  6 S/B - 5/3 S/B < 4 α  <=>  S < 4 α B / (13/3)
 *   = 12 α B / 13 = 12 x 1e-6 x 230.1e9 / 13 = 212,400 B.
 * So 1 KiB goes by the tree, 1 MiB by the ring; asking for HD gets the
 * rule's choice. */
Test(lower, rule_small_tree_large_ring)
{
	struct topology *t = fixture_topology(A, "dgx-a100:none");
	int64_t r[6] = {0, 1, 2, 3, 4, 5};
	double B = A100_NVSWITCH_BPS, a = 1 * US;
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 6, 1024, COLL_AUTO), COLL_TREE);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 6, 1024), 6 * (a + 1024 / B),
	     "1 KiB tree");
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 6, 1048576, COLL_AUTO), COLL_RING);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 6, 1048576),
	     ar_ring(6, 1048576, B, a), "1 MiB ring");
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 6, 207000, COLL_AUTO), COLL_TREE);
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 6, 218000, COLL_AUTO), COLL_RING);
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 6, 1024, COLL_HALVING_DOUBLING),
	             COLL_TREE);
	/* HD asked for on 6 ranks is the ring's formula. */
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_HALVING_DOUBLING, r, 6, 1048576),
	     ar_ring(6, 1048576, B, a), "HD on 6 = ring");
}

/* Two DGX A100 of dgx-a100-x128, all 16 GPUs. Inside: NVSwitch B_nv =
 * 300 GB/s x 0.767 = 230.1 GB/s, 1 us. Across: B_ib = 25 GB/s x 0.94 =
 * 23.5 GB/s per NIC (8 NICs for 8 GPUs: not shared); both
 * servers' NICs (0-15) sit under leaf 0 (20 ports a leaf): NIC 0.6 + leaf
 * 0.3 + NIC 0.6 = 1.5 us. Each step of a log-depth algorithm runs on the
 * link its pairs use:
 *   HD    reduce-scatter: distance 8 across (S/2), 4, 2, 1 inside (S/4,
 *         S/8, S/16); the all-gather mirrors it:
 *         2 (1.5 us + 3 x 1 us) + S (2·(1/2)/B_ib + 2·(7/16)/B_nv)
 *         = 9 us + S (1/23.5e9 + 0.875/230.1e9)
 *   tree  rounds 1, 2, 4 inside, 8 across, up and down:
 *         2 (3 x 1 us + 1.5 us) + S (6/B_nv + 2/B_ib)
 *         = 9 us + S (6/230.1e9 + 2/23.5e9)
 *   hierarchical  2 (7 α_nv + 7/8 S/B_nv) + 2 α_ib + 2·1/2·(S/8)/B_ib
 *         = 17 us + S (1.75/230.1e9 + 1/(8·23.5e9))
 *   ring (flat, on the slower link: B_ib, 1.5 us) 30 α + 2·15/16 S/B
 * 1 KiB: HD 9.0475 us, tree 9.1138 us, hierarchical 17.05 us: HD.
 * 64 MiB: hierarchical 17 us + 0.8673 ms against HD 9 us + 3.1108 ms. */
Test(lower, rule_across_servers_hd_small_hierarchical_large)
{
	struct topology *t = fixture_topology(A, "dgx-a100-x128:none");
	int64_t r[16];
	for (int i = 0; i < 16; i++)
		r[i] = i;
	double nv = A100_NVSWITCH_BPS, ib = A100_NIC_BPS, anv = 1 * US, aib = 1.5 * US;
	double small = 1024, large = 64.0 * 1048576;
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 16, small, COLL_AUTO),
	             COLL_HALVING_DOUBLING);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 16, small),
	     2 * (aib + 3 * anv) + small * (1 / ib + 0.875 / nv), "1 KiB HD");
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_TREE, r, 16, small),
	     2 * (3 * anv + aib) + small * (6 / nv + 2 / ib), "1 KiB tree");
	double hier = 2 * (7 * anv + 7.0 / 8 * large / nv) + 2 * aib + large / 8 / ib;
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 16, large, COLL_AUTO), COLL_HIERARCHICAL);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 16, large), hier,
	     "64 MiB hierarchical");
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_RING, r, 16, large),
	     ar_ring(16, large, ib, aib), "flat ring");
	/* cost_collective_s stays the hierarchical form across servers. */
	near(cost_collective_s(t, STEP_ALLREDUCE, r, 16, large), hier, "cost_collective_s");
	/* One GPU per server (ranks 0, 8, 16, 24: leaf 0 holds NICs 0-19,
	 * server 2's NIC 16 too, server 3's NIC 24 is on leaf 1: 2.1 us
	 * through the spine): no hierarchical form; 1 KiB by HD
	 * (4 α + 1.5 S/B), 64 MiB by HD too (the same bandwidth term as the
	 * ring with fewer latencies). */
	int64_t r4[4] = {0, 8, 16, 24};
	double a4 = 2.1 * US;
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r4, 4, small, COLL_AUTO),
	             COLL_HALVING_DOUBLING);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r4, 4, small),
	     4 * a4 + 1.5 * small / ib, "4 servers HD");
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r4, 4, large, COLL_HIERARCHICAL),
	             COLL_HALVING_DOUBLING);
}

/* The FFN's collectives on atlas800-910a: the AllReduce over an HCCS quad
 * (a full mesh of 30 GB/s links, 1 us) of 8 KiB goes direct, every member
 * sending a quarter to each of the others at once, each on its own link,
 * twice (reduce-scatter, all-gather): 2 α + 2·S/(4B), below HD's
 * 4 α + 1.5 S/B; a pair across the HCCS groups over PCIe (31 GB/s, 2 us)
 * by the ring (a tie with HD): 2 (n-1) α + 2 (n-1)/n S/B = 2 α + S/B. */
Test(lower, rule_on_the_ffn_collectives)
{
	struct topology *t = fixture_topology(A, "atlas800-910a");
	int64_t q[4] = {0, 1, 2, 3}, pr[2] = {0, 4};
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, q, 4, 8192, COLL_AUTO), COLL_DIRECT);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, q, 4, 8192),
	     2 * US + 0.5 * 8192 / (30 * GB), "quad direct");
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_HALVING_DOUBLING, q, 4, 8192),
	     4 * US + 1.5 * 8192 / (30 * GB), "quad HD");
	/* AllGather direct: α + S/(4B), a quarter on each link. */
	near(cost_collective_algo_s(t, STEP_ALLGATHER, COLL_AUTO, q, 4, 8192),
	     1 * US + 0.25 * 8192 / (30 * GB), "quad AllGather direct");
	/* Direct over PCIe (a switch) is no algorithm of AllReduce: the rule's. */
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, pr, 2, 4096, COLL_DIRECT), COLL_RING);
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, pr, 2, 4096, COLL_AUTO), COLL_RING);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, pr, 2, 4096),
	     4 * US + 4096 / (31 * GB), "pair ring");
}

/* NCCL (dgx-a100's collectives library) on two DGX A100 of dgx-a100-x128,
 * all 16 GPUs (docs/cost-models.md, "Collective libraries"). Links:
 * NVSwitch B_nv = 230.1 GB/s, 1 us; a NIC per GPU, B_ib = 23.5 GB/s, NIC
 * + leaf + NIC = 1.5 us.
 *   rings over the rails: 8 rings of S/8, each leaving a server on its own
 *     GPU's NIC: per byte 1.875 max((7/8)/B_nv, 1/(8 B_ib)) = 9.973e-12 s,
 *     30 steps at the slower link's 1.5 us = 45 us;
 *   tree: a chain of 8 in each server (2 x 7/8 of S through every GPU's
 *     port) and S/8 per GPU between the 2 servers: per byte
 *     max(1.75/B_nv, 1/(8 B_ib)) = 7.606e-12 s, over NCCL's 0.92 and
 *     capped at dgx-a100's 110 GB/s of bus bandwidth (algorithm bandwidth
 *     55 GB/s): 1/55e9 = 1.818e-11 s; 1.5 + 1 = 2.5 us of links.
 * NCCL's latencies (tuning.cc v2.8.3, us): ring LL 3.6 + 28 x 0.47 x 1.8
 * (inside, across servers) + 2 x 2.7 = 32.688, its bandwidth / 4; ring
 * Simple 8.4 + 28 x 3.4 + 2 x 9.6 = 122.8, x1.9 from 64 KiB on (16/16 x
 * 64 KiB); tree LL 4.4 + 2 (7 x 0.52 x 1.8 + 5.0) = 27.504, bandwidth /
 * 3.8; tree Simple 2 (7 x 28 + 28) = 448. LL's bus bandwidth is at most
 * dgx-a100's 22.5 GB/s on two servers (NCCL's llMaxBws for AMD CPUs): the
 * ring's algorithm bandwidth 22.5 / 1.875 = 12 GB/s, the tree's 11.25.
 *   1 GiB: ring Simple 45 + 1.9 x 122.8 us + 10.708 ms = 10.987 ms beats
 *     the tree's 2.5 + 448 us + 19.522 ms.
 *   1 MiB: ring LL 45 + 32.688 us + 2^20 x 1.875 / 22.5e9 s = 165.07 us
 *     (uncapped, 4 x 9.973e-12 s a byte, it would be 119.5 us) beats tree
 *     LL (2.5 + 27.504 + 2^20 x 2 / 22.5e9 / 0.5, NCCL's correction at
 *     2^14 x 64 bytes: 216.4 us) and ring Simple (288.8 us).
 *   4 KiB: tree LL, its bandwidth also x 0.7 (NCCL's correction at
 *     2^6 x 64 bytes): 2.5 + 27.504 + 4096 x 2 / 22.5e9 / 0.7 us =
 *     30.52 us, against ring LL's 45 + 32.688 + 0.341 = 78.03 us. */
Test(lower, nccl_rails_and_tree_across_two_servers)
{
	struct topology *t = fixture_topology(A, "dgx-a100-x128");
	int64_t r[16];
	for (int i = 0; i < 16; i++)
		r[i] = i;
	double nv = A100_NVSWITCH_BPS, ib = A100_NIC_BPS;
	double ring_b = 1.875 * fmax(0.875 / nv, 1 / (8 * ib)), tree_b = 2 / 110e9;
	double ll_ring_b = 1.875 / 22.5e9, ll_tree_b = 2 / 22.5e9, M = 1048576.0;
	double G = 1073741824.0;
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 16, G, COLL_AUTO), COLL_RING);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 16, G),
	     45 * US + 1.9 * 122.8 * US + G * ring_b, "1 GiB: ring Simple");
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_TREE, r, 16, G),
	     2.5 * US + 448 * US + G * tree_b, "1 GiB: tree Simple");
	/* NCCL 2.8.3's tree correction by size, Simple: 0.9 from 256 to 512
	 * MiB (floor(log2(S / 64)) = 22), 0.8 from 8 to 16 MiB (17) */
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_TREE, r, 16, 256 * M),
	     2.5 * US + 448 * US + 256 * M * tree_b / 0.9, "256 MiB: tree Simple, corrected");
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_TREE, r, 16, 8 * M),
	     2.5 * US + 448 * US + 8 * M * tree_b / 0.8, "8 MiB: tree Simple, corrected");
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 16, M, COLL_AUTO), COLL_RING);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 16, M),
	     45 * US + 32.688 * US + M * ll_ring_b, "1 MiB: ring LL at the LL cap");
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_TREE, r, 16, M),
	     2.5 * US + 27.504 * US + M * ll_tree_b / 0.5, "1 MiB: tree LL at the LL cap");
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 16, 4096, COLL_AUTO), COLL_TREE);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 16, 4096),
	     2.5 * US + 27.504 * US + 4096 * ll_tree_b / 0.7, "4 KiB: tree LL");
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_RING, r, 16, 4096),
	     45 * US + 32.688 * US + 4096 * ll_ring_b, "4 KiB: ring LL");
	/* NCCL runs neither halving-doubling nor the hierarchical form: asked
	 * for, they get the rule's choice. */
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 16, G, COLL_HIERARCHICAL), COLL_RING);
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 16, 4096, COLL_HALVING_DOUBLING),
	             COLL_TREE);
}

Test(lower, nccl_nvls_on_an_nvlink_sharp_switch)
{
	/* dgx-h100: NVSwitch port B = 450 GB/s x 0.817, 1 us; "nvls": true.
	 * NCCL's NVLS (tuning.cc, v2.19.3-1): c channels of bw = B/(c+1), at
	 * most 60 GB/s; algorithm bandwidth 5/6 x c x bw; latency 23 us. */
	struct topology *t = fixture_topology(A, "dgx-h100");
	int64_t r[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	double B = 450e9 * 0.817, G = 1073741824.0;
	double eight = 5.0 / 6 * 8 * (B / 9); /* 272.3 GB/s: busbw 1.75 x = 476.6 */
	double four = 5.0 / 6 * 4 * 60e9;     /* B/5 = 73.5 GB/s, capped at 60 */
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 8, G, COLL_AUTO), COLL_NVLS);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 8, G),
	     1 * US + 23 * US + G / eight, "8 GPUs, 1 GiB: NVLS");
	/* 4 GPUs: NVLS at 200 GB/s, the ring 4/6 B = 245 GB/s: the ring */
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_NVLS, r, 4, G),
	     1 * US + 23 * US + G / four, "4 GPUs, 1 GiB: NVLS");
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 4, G, COLL_AUTO), COLL_RING);
	/* all-gather: NVLS priced alike (272 GB/s), the ring's 8/7 B faster */
	near(cost_collective_algo_s(t, STEP_ALLGATHER, COLL_NVLS, r, 8, G),
	     1 * US + 23 * US + G / eight, "8 GPUs all-gather: NVLS");
	cr_expect_eq(cost_choose_algo(t, STEP_ALLGATHER, r, 8, G, COLL_AUTO), COLL_RING);
	/* NCCL leaves NVLS off with two GPUs, and where the switch does not
	 * reduce (dgx-a100) */
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 2, G, COLL_NVLS), COLL_RING);
	struct topology *a100 = fixture_topology(A, "dgx-a100");
	cr_expect_eq(cost_choose_algo(a100, STEP_ALLREDUCE, r, 8, G, COLL_NVLS), COLL_RING);

	/* The NVLS tree across servers (dgx-h100-x64: NIC 50 GB/s x 0.94, one
	 * leaf, route 2 x 0.6 + 0.3 us): bw at most the NIC on two servers
	 * (B/9 = 40.9 GB/s is less), half of it on more (23.5 GB/s); latency
	 * 23 us + 2 log2(m) x 14 us. */
	struct topology *x64 = fixture_topology(A, "dgx-h100-x64");
	int64_t q[32];
	for (int i = 0; i < 32; i++)
		q[i] = i;
	double nic = 50e9 * 0.94, four_servers = 5.0 / 6 * 8 * (nic / 2);
	cr_expect_eq(cost_choose_algo(x64, STEP_ALLREDUCE, q, 16, G, COLL_AUTO), COLL_NVLS);
	near(cost_collective_algo_s(x64, STEP_ALLREDUCE, COLL_AUTO, q, 16, G),
	     1 * US + 1.5 * US + 51 * US + G / eight, "2 servers: NVLS tree");
	near(cost_collective_algo_s(x64, STEP_ALLREDUCE, COLL_NVLS, q, 32, G),
	     1 * US + 1.5 * US + 79 * US + G / four_servers, "4 servers: NVLS tree");
	/* reduce-scatter across servers: no NVLS */
	cr_expect_eq(cost_choose_algo(x64, STEP_REDUCESCATTER, q, 16, G, COLL_NVLS), COLL_RING);
}

Test(lower, hccl_pipeline_across_servers)
{
	/* atlas800t-a2-910b-x16 ("library": "hccl", "pipeline": true): HCCS
	 * mesh links of 56 GB/s x 0.33, 1 us; NICs 200 Gb/s = 25 GB/s, 0.6 us,
	 * 0.6 us a switch: servers 0-3 share a leaf (2 x 0.6 + 0.6 = 1.8 us),
	 * 0-7 cross the spine (2 x 0.6 + 3 x 0.6 = 3.0 us). HCCL's pipeline,
	 * blocks of S/n: a phase is (m-1) steps of the slower of the servers'
	 * ring and the forwarding inside, then one step inside; an all-reduce
	 * two phases. Two servers of 8 (n = 16): both steps are 1.8 us and
	 * S/16 over one HCCS link (18.48 GB/s is below the NIC's 25), so
	 * 2 x (1 + 1.8) us + 4 S/16 / B = 5.6 us + S / 73.92 GB/s. */
	struct topology *t = fixture_topology(A, "atlas800t-a2-910b-x16");
	int64_t r[64];
	for (int i = 0; i < 64; i++)
		r[i] = i;
	double B = 56e9 * 0.33, G = 1073741824.0;
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 16, G, COLL_AUTO), COLL_PIPELINE);
	near(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 16, G),
	     5.6 * US + G / (4 * B), "2 servers, all-reduce");
	/* all-gather over 8 servers (n = 64): 1 + 7 x 3.0 us and 8 blocks of
	 * S/64 inside */
	near(cost_collective_algo_s(t, STEP_ALLGATHER, COLL_PIPELINE, r, 64, G),
	     22 * US + G / (8 * B), "8 servers, all-gather");
	/* one server, or one member a server: not the pipeline */
	cr_expect_eq(cost_choose_algo(t, STEP_ALLREDUCE, r, 8, G, COLL_PIPELINE), COLL_DIRECT);
	int64_t one_each[4] = {0, 8, 16, 24};
	cr_expect_neq(cost_choose_algo(t, STEP_ALLREDUCE, one_each, 4, G, COLL_PIPELINE),
	              COLL_PIPELINE);
	/* Atlas 800 (910A): HCCL without the pipeline */
	struct topology *a = fixture_topology(A, "atlas800-910a-x4");
	cr_expect_neq(cost_choose_algo(a, STEP_ALLREDUCE, r, 16, G, COLL_PIPELINE), COLL_PIPELINE);
}

/* ZeRO-3 on a 2-layer GPT (hidden 64, 4 heads, seq 16, vocabulary 128,
 * ffn 256; 109,312 parameters: a layer's two LayerNorms 2 x 128, QKV
 * as three 64 x 64 + 64 (the generator's Q, K and V), projection
 * 64 x 64 + 64, fc1 64 x 256 + 256, fc2 256 x 64 + 64 = 49,984, twice,
 * the word embedding 128 x 64 = 8,192, the positions 16 x 64 = 1,024, the
 * final LayerNorm 128), data parallel over 4 GPUs. Per micro-batch every
 * parameter tensor is all-gathered once before the forward and once
 * before the backward over the 4 replicas: 16 tensors a layer, the two
 * embeddings and the final LayerNorm's 2 make 36 gathers a pass of
 * S = 109,312 x 2 B = 218,624 B in all (bf16; the
 * head, tied to the word embedding, gathers nothing of its own), each on
 * stream 1, every micro-batch. */
Test(lower, zero3_gathers_every_parameter_twice_a_micro_batch)
{
	struct scenario *s = fixture_generated(
		A, &D,
		"{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 2, \"heads\": 4, \"seq\": 16,"
		" \"vocab\": 128, \"ffn\": 256, \"micro_batch\": 4}",
		"dgx-a100", 4, "{\"global_batch\": 8, \"dtype\": \"bf16\", \"zero_stage\": 3}");
	cr_assert_not_null(s);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_data_parallel(A, s, &o, &D);
	cr_assert_not_null(p);
	struct program prog;
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
	cr_assert_eq(prog.micro_batches, 2);
	const struct prog_chunk *c = &prog.chunks[0];
	for (int pass = 0; pass < 2; pass++) {
		int from = pass ? c->bwd : c->fwd, n = pass ? c->n_bwd : c->n_fwd, count = 0;
		double bytes = 0;
		for (int k = from; k < from + n; k++) {
			const struct prog_step *st = &prog.steps[k];
			if (st->kind != PROG_COLLECTIVE || st->phase != PHASE_PARAMS)
				continue;
			cr_expect_eq(st->coll, STEP_ALLGATHER);
			cr_expect_eq(st->groups.size, 4);
			cr_expect(st->stream == 1 && st->every_micro);
			count++;
			bytes += st->bytes;
		}
		cr_expect_eq(count, 36, "%s: %d gathers", pass ? "backward" : "forward", count);
		cr_expect_eq(bytes, 218624.0, "%s: %.0f B", pass ? "backward" : "forward", bytes);
	}
}

/* The optimizer offload in the program (docs/cost-models.md, "Optimizer
 * offload"): the lowered optimizer step of a megatron plan is the
 * estimate's, and that is the offloaded step by hand: per local parameter
 * element (ZeRO 0, TP 8 on one DGX H100 server: each rank's slice), the
 * fp32 gradient (4 B) and the bf16 weight (2 B) over the default host link
 * (31.5 GB/s), Megatron's bf16 step (38 B) over the default host memory
 * share (51.2 GB/s). */
Test(lower, optimizer_offload_is_the_programs_optimizer_step)
{
	struct scenario *s = fixture_generated(
	        A, &D,
	        "{\"kind\": \"llama\", \"hidden\": 1024, \"layers\": 2, \"heads\": 16, \"kv_heads\": 8, "
	        "\"ffn\": 4096, \"seq\": 512, \"vocab\": 32000, \"dtype\": \"bf16\", \"micro_batch\": 4}",
	        "dgx-h100", 8,
	        "{\"global_batch\": 8, \"dtype\": \"bf16\", \"optimizer_offload\": true}");
	struct program prog;
	struct estimate e;
	megatron_lowered(s, &prog, &e);
	double opt = -1;
	for (int k = 0; k < prog.n_steps; k++)
		if (prog.steps[k].kind == PROG_COMPUTE && prog.steps[k].op < 0 &&
		    !strcmp(prog.steps[k].label, "optimizer"))
			opt = prog.steps[k].seconds;
	cr_assert_geq(opt, 0, "no optimizer step");
	double elems = e.param_bytes / 2;
	cr_expect_float_eq(opt, elems * (6 / 31.5e9 + 38 / 51.2e9), 1e-9);
	cr_expect_float_eq(opt, e.stages[0].optimizer_s, 1e-12);
	cr_expect_eq(e.stages[0].mem.optimizer, 0);
}

/* The activation offload's exposed copies (docs/cost-models.md, "Activation
 * offload"): over a 1 GB/s host link every copy outlasts its window, and
 * the program waits, once per micro-batch, after the chunk's forward and
 * after its backward, for what the estimate finds exposed: one step each,
 * the forward's before the backward's; nothing without offload. */
Test(lower, activation_offload_waits_are_the_estimates)
{
	for (int n = 0; n <= 2; n += 2) {
		char tr[128];
		snprintf(tr, sizeof tr, "{\"global_batch\": 8, \"tensor_parallel\": 8, "
		         "\"activation_offload_layers\": %d}", n);
		struct scenario *s = fixture_generated(
		        A, &D,
		        "{\"kind\": \"llama\", \"hidden\": 1024, \"layers\": 4, \"heads\": 16, "
		        "\"kv_heads\": 8, \"ffn\": 4096, \"seq\": 512, \"vocab\": 32000, "
		        "\"dtype\": \"bf16\", \"micro_batch\": 8}",
		        "dgx-h100", 8, tr);
		s->topo->host.link_bps = 1e9;
		struct program prog;
		struct estimate e;
		megatron_lowered(s, &prog, &e);
		int seen = 0;
		for (int k = 0; k < prog.n_steps; k++) {
			const struct prog_step *st = &prog.steps[k];
			if (st->kind != PROG_COMPUTE || st->op >= 0 || strncmp(st->label, "activation", 10))
				continue;
			cr_expect_float_eq(st->seconds, seen == 0 ? e.stages[0].offload_forward_s
			                                          : e.stages[0].offload_backward_s, 1e-15);
			cr_expect_eq(st->phase, seen == 0 ? PHASE_FORWARD : PHASE_BACKWARD);
			seen++;
		}
		cr_expect_eq(seen, n ? 2 : 0, "%d layers offloaded: %d waits", n, seen);
		if (n)
			cr_expect_gt(e.stages[0].offload_forward_s, 0);
	}
}

/* Two plans of generator `gen` on 16 GPUs of two DGX H100, the trainings
 * `t[0]` and `t[1]`, estimated and lowered with every gradient its own
 * bucket. */
static void moe_pair(const char *gen, const char *const t[2], struct scenario *s[2],
                     struct program prog[2], struct estimate e[2])
{
	for (int k = 0; k < 2; k++) {
		s[k] = fixture_generated(A, &D, gen, "dgx-h100-x64", 16, t[k]);
		cr_assert_not_null(s[k]);
		s[k]->training.gradient_bucket_bytes = 0; /* as the lowering below */
		megatron_lowered(s[k], &prog[k], &e[k]);
	}
}

/* training.moe_dispatcher: a one-layer MoE (16 experts, top-4, h 256) over
 * EP 16 on two DGX H100. Every AllToAll of the program is a dispatch or a
 * combine and carries the route (16 experts, 4 slots a token) only under
 * "hybridep" (and "deepep", priced alike); the estimate's redistributions are the forward's two a
 * micro-batch, each the HybridEP time of the group's ranks on the rank's
 * buffer; and the
 * simulator, which sends each leg's pieces at once on their own links,
 * lands on the estimate under either dispatcher (the plain one's legs at
 * once too: the pieces for the other server over the NICs, the rest over
 * NVLink, as cost_collective_algo_s's direct form prices them). */
Test(lower, moe_dispatcher_hybridep_prices_and_simulates_the_route)
{
	static const char *const gen =
		"{\"kind\": \"llama\", \"hidden\": 256, \"layers\": 1, \"heads\": 4, \"ffn\": 512,"
		" \"seq\": 1024, \"vocab\": 64, \"experts\": 16, \"top_k\": 4, \"micro_batch\": 16,"
		" \"dtype\": \"bf16\"}";
	static const char *const t[2] = {
		"{\"global_batch\": 32, \"tensor_parallel\": 1, \"expert_parallel\": 16}",
		"{\"global_batch\": 32, \"tensor_parallel\": 1, \"expert_parallel\": 16,"
		" \"moe_dispatcher\": \"hybridep\"}"};
	struct scenario *s[2];
	struct program prog[2];
	struct estimate e[2];
	moe_pair(gen, t, s, prog, e);
	cr_expect_eq(s[1]->training.moe_dispatcher, MOE_DISPATCH_HYBRIDEP);
	int64_t ranks[16];
	for (int i = 0; i < 16; i++)
		ranks[i] = i;
	double bytes = -1;
	int n_a2a[2] = {0, 0};
	for (int k = 0; k < 2; k++)
		for (int i = 0; i < prog[k].n_steps; i++) {
			const struct prog_step *st = &prog[k].steps[i];
			if (st->kind != PROG_COLLECTIVE || st->coll != STEP_ALLTOALL)
				continue;
			n_a2a[k]++;
			cr_expect_eq(st->groups.size, 16);
			cr_expect_float_eq(st->ep.experts, k ? 16 : 0, 0);
			cr_expect_float_eq(st->ep.copies, k ? 4 : 0, 0);
			bytes = st->bytes;
		}
	/* dispatch and combine, forward and backward (a micro-batch's lists) */
	cr_expect_eq(n_a2a[0], 4);
	cr_expect_eq(n_a2a[1], 4);
	/* a rank's sequence of 1,024 tokens, 4 slots each, of 256 bf16 */
	cr_expect_float_eq(bytes, 1024 * 4 * 256 * 2.0, 1e-9);
	struct cost_ep_route ep = {.experts = 16, .copies = 4};
	double hy = cost_ep_hybrid_s(s[1]->topo, ranks, 16, bytes, &ep);
	double plain = cost_collective_algo_s(s[0]->topo, STEP_ALLTOALL, COLL_AUTO, ranks, 16, bytes);
	/* the forward's dispatch and combine in each of the 2 micro-batches */
	cr_expect_float_eq(e[1].category_s[EST_REDISTRIBUTION], 4 * hy, 1e-15, "%.9g against %.9g",
	                   e[1].category_s[EST_REDISTRIBUTION], 4 * hy);
	cr_expect_float_eq(e[0].category_s[EST_REDISTRIBUTION], 4 * plain, 1e-15, "%.9g against %.9g",
	                   e[0].category_s[EST_REDISTRIBUTION], 4 * plain);
	cr_expect_lt(hy, plain);
	/* DeepEP's normal kernels move the same bytes: priced alike */
	struct scenario *dp = fixture_generated(
		A, &D, gen, "dgx-h100-x64", 16,
		"{\"global_batch\": 32, \"tensor_parallel\": 1, \"expert_parallel\": 16,"
		" \"moe_dispatcher\": \"deepep\"}");
	cr_assert_not_null(dp);
	dp->training.gradient_bucket_bytes = 0;
	struct program pd;
	struct estimate ed;
	megatron_lowered(dp, &pd, &ed);
	cr_expect_float_eq(ed.iteration_s, e[1].iteration_s, 1e-15);
	struct sim_options so = {.fidelity = FIDELITY_COARSE, .algo = COLL_AUTO};
	for (int k = 0; k < 2; k++) {
		struct sim_result r;
		cr_assert(sim_run(A, s[k]->topo, &prog[k], &so, &r, &D));
		cr_expect(fabs(r.iteration_s - e[k].iteration_s) <= 0.03 * e[k].iteration_s,
		          "%s: simulated %.6g s, estimated %.6g s", k ? "hybridep" : "alltoall",
		          r.iteration_s, e[k].iteration_s);
	}
}

/* training.moe_a2a_overlap, Megatron-Core's combined 1F1B without a
 * pipeline (combined_1f1b_schedule_for_no_pipelining): the first forward
 * alone, then m - 1 F&B slots, each micro-batch's forward beside the
 * backward of the one before, then the last backward alone. In an F&B the
 * forward's dispatch and combine run beside the backward's compute and
 * the backward's beside the forward's: per pair min(A_f, C_b) + min(A_b,
 * C_f) hidden. The one-layer model on two servers: every other
 * communication is the gradients' once an iteration, so A_f is the
 * redistribution and A_b the backward communication of a micro-batch. */
Test(lower, moe_a2a_overlap_pairs_the_micro_batches)
{
	static const char *const gen =
		"{\"kind\": \"llama\", \"hidden\": 1024, \"layers\": 1, \"heads\": 8, \"ffn\": 2048,"
		" \"seq\": 1024, \"vocab\": 64, \"experts\": 16, \"top_k\": 2, \"micro_batch\": 16,"
		" \"dtype\": \"bf16\"}";
	static const char *const t[2] = {
		"{\"global_batch\": 64, \"tensor_parallel\": 1, \"expert_parallel\": 16}",
		"{\"global_batch\": 64, \"tensor_parallel\": 1, \"expert_parallel\": 16,"
		" \"moe_a2a_overlap\": true}"};
	struct scenario *s[2];
	struct program prog[2];
	struct estimate e[2];
	moe_pair(gen, t, s, prog, e);
	cr_expect(s[1]->training.moe_a2a_overlap);
	double m = 4;
	cr_assert_eq(e[0].steps_per_iteration, 4);
	/* the order: F0, F1&B0, F2&B1, F3&B2, B3 */
	const struct prog_stage *st = &prog[1].stages[0];
	cr_assert_eq(st->n_slots, 5);
	cr_expect(!st->slots[0].fb && !st->slots[0].backward && st->slots[0].micro == 0);
	for (int i = 1; i < 4; i++) {
		cr_expect(st->slots[i].fb, "slot %d", i);
		cr_expect_eq(st->slots[i].micro, i);
		cr_expect_eq(st->slots[i].pair_chunk, 0);
		cr_expect_eq(st->slots[i].pair_micro, i - 1);
	}
	cr_expect(st->slots[4].backward && st->slots[4].micro == 3 && st->slots[4].last);
	cr_expect(prog[1].combined && !prog[0].combined);
	/* every AllToAll a dispatch's or combine's, and nothing else */
	for (int i = 0; i < prog[1].n_steps; i++) {
		const struct prog_step *x = &prog[1].steps[i];
		if (x->kind == PROG_COLLECTIVE)
			cr_expect_eq(x->moe, x->coll == STEP_ALLTOALL, "%s", x->label);
	}
	const double *c = e[0].category_s;
	double af = c[EST_REDISTRIBUTION] / m, ab = c[EST_COMM_BACKWARD] / m;
	/* the budget: the transformer layer's compute (Megatron-Core pairs
	 * the passes layer by layer; the embedding, head and loss apart) */
	double cf = 0, cb = 0;
	const struct graph *g = s[0]->graph;
	for (int i = 0; i < g->n_ops; i++)
		if (graph_op_layer(&g->ops[i]) >= 0) {
			cf += e[0].ops[i].compute_forward_s;
			cb += e[0].ops[i].compute_backward_s + e[0].ops[i].recompute_s;
		}
	cr_assert_gt(af, 0);
	cr_assert_gt(ab, 0);
	double hidden = (m - 1) * (fmin(af, cb) + fmin(ab, cf));
	cr_expect_float_eq(e[0].iteration_s - e[1].iteration_s, hidden, 1e-12, "%.9g against %.9g",
	                   e[0].iteration_s - e[1].iteration_s, hidden);
	cr_expect_float_eq(e[1].stages[0].moe_hidden_s, hidden, 1e-12);
	cr_expect_float_eq(e[1].category_s[EST_REDISTRIBUTION],
	                   c[EST_REDISTRIBUTION] - (m - 1) * fmin(af, cb), 1e-12);
	/* the activations: one micro-batch in flight, as plain 1F1B */
	cr_expect_float_eq(e[1].activation_bytes, e[0].activation_bytes, 1e-9);
	/* the simulation pairs them as the estimate does */
	struct sim_options so = {.fidelity = FIDELITY_COARSE, .algo = COLL_AUTO};
	struct sim_result r[2];
	for (int k = 0; k < 2; k++) {
		cr_assert(sim_run(A, s[k]->topo, &prog[k], &so, &r[k], &D));
		cr_expect(fabs(r[k].iteration_s - e[k].iteration_s) <= 0.03 * e[k].iteration_s,
		          "%s: simulated %.6g s, estimated %.6g s", k ? "combined" : "1F1B",
		          r[k].iteration_s, e[k].iteration_s);
	}
	cr_expect_lt(r[1].iteration_s, r[0].iteration_s - 0.5 * hidden);
}

/* A calibration's train.moe_overhead_us, H (the host's time per mixture-
 * of-experts layer and pass beyond its kernels): on a one-layer model of
 * four micro-batches it adds 2 x 4 x H an iteration, forward and backward
 * of each, to plain 1F1B and to the combined 1F1B alike: it is not device
 * compute, so the all-to-alls hidden under the other pass stay those of
 * the figure's absence (the model's narrow experts, top-8, make the
 * backward's all-to-alls longer than the forward's compute: a budget with
 * H in it would hide more). The simulation adds the same. */
Test(lower, moe_host_time_adds_once_a_layer_and_pass_and_hides_nothing)
{
	static const char *const gen =
		"{\"kind\": \"llama\", \"hidden\": 1024, \"layers\": 1, \"heads\": 8, \"ffn\": 2048,"
		" \"seq\": 1024, \"vocab\": 64, \"experts\": 16, \"top_k\": 8, \"expert_ffn\": 64,"
		" \"micro_batch\": 16, \"dtype\": \"bf16\"}";
	static const char *const t[2] = {
		"{\"global_batch\": 64, \"tensor_parallel\": 1, \"expert_parallel\": 16}",
		"{\"global_batch\": 64, \"tensor_parallel\": 1, \"expert_parallel\": 16,"
		" \"moe_a2a_overlap\": true}"};
	const double H = 500e-6, m = 4;
	struct sim_options so = {.fidelity = FIDELITY_COARSE, .algo = COLL_AUTO};
	for (int k = 0; k < 2; k++) {
		struct estimate e[2];
		struct sim_result r[2];
		for (int h = 0; h < 2; h++) {
			struct scenario *s = fixture_generated(A, &D, gen, "dgx-h100-x64", 16, t[k]);
			cr_assert_not_null(s);
			s->training.gradient_bucket_bytes = 0;
			if (h)
				cost_cal_set(s->topo, CAL_TRAIN_MOE_OVERHEAD_US, NULL, H * 1e6);
			struct program prog;
			megatron_lowered(s, &prog, &e[h]);
			cr_assert(sim_run(A, s->topo, &prog, &so, &r[h], &D));
		}
		cr_assert_eq(e[0].steps_per_iteration, 4);
		cr_expect_float_eq(e[1].iteration_s - e[0].iteration_s, 2 * m * H, 1e-12,
		                   "%s: %.9g s more", k ? "combined" : "1F1B",
		                   e[1].iteration_s - e[0].iteration_s);
		cr_expect_float_eq(e[1].stages[0].moe_hidden_s, e[0].stages[0].moe_hidden_s, 1e-15);
		cr_expect(fabs((r[1].iteration_s - r[0].iteration_s) - 2 * m * H) <= 0.05 * 2 * m * H,
		          "%s: simulated %.6g s more", k ? "combined" : "1F1B",
		          r[1].iteration_s - r[0].iteration_s);
	}
}
