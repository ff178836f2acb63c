/* test_pipeline.c — pipeline schedules, their bubble (estimated and
 * simulated), ZeRO's traffic and the memory model, against hand counts.
 *
 * The test model (tests/data/good/matmul-chain-16.json) is sixteen equal
 * MatMuls, x [2, 16384] times W_i [16384, 16384] in fp16: every op the
 * same work, 2 x 16384 x 2 = 65,536 B of activation between two ops, each
 * W 16384 x 16384 x 2 = 536,870,912 B (268,435,456 elements). On four stages
 * of one NPU each (pipeline-chain-4p.json) every stage holds four MatMuls,
 * and with 8 micro-batches (global batch 16) the stages are equal; the
 * sends carry 64 KiB over an HCCS link (about 3 us against about 5 ms of
 * compute per micro-batch), which is what separates the simulation from
 * the ideal formulas below, by well under 1%.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fixture.h"
#include "sim.h"
#include "cost.h"
#include "planner.h"

TestSuite(pipeline, .init = fixture_setup, .fini = fixture_teardown);

#define CHAIN "tests/data/good/pipeline-chain-4p.json"
#define W_BYTES 536870912.0 /* 16384 x 16384 x 2 B */
#define W_ELEMS 268435456.0
#define ACT 65536.0         /* 2 x 16384 x 2 B */

static struct scenario *chain(enum pipeline_schedule sched, int64_t v, int zero)
{
	struct scenario *s = fixture_scenario(CHAIN);
	s->training.schedule = sched;
	s->training.virtual_stages = v;
	s->training.zero_stage = zero;
	return s;
}

static struct plan *dp_plan(struct scenario *s)
{
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_data_parallel(A, s, &o, &D);
	cr_assert_not_null(p);
	return p;
}

/* s's megatron plan (Megatron-LM's layout, compatible redistribution),
 * estimated into *e. */
static struct plan *megatron_estimated(struct scenario *s, struct estimate *e)
{
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron(A, s, &o, &D);
	cr_assert_not_null(p);
	cr_assert(plan_estimate(A, p, e, &D));
	return p;
}

/* The program simulated on the scenario's topology (coarse, the
 * collective rule's algorithms). */
static struct sim_result simulated(const struct scenario *s, const struct program *prog)
{
	struct sim_options o = {.fidelity = FIDELITY_COARSE, .algo = COLL_AUTO};
	struct sim_result r;
	cr_assert(sim_run(A, s->topo, prog, &o, &r, &D), "%s does not simulate", s->name);
	return r;
}

/* Each stage's simulated peak memory is the estimate's, to rounding. */
static void expect_peaks_are_estimates(const struct estimate *e, const struct sim_result *r,
                                       const struct program *prog, const char *what)
{
	for (int st = 0; st < e->n_stages; st++) {
		double want = e->stages[st].mem.total;
		double got = r->ranks[st * prog->stage_ranks].peak_memory_bytes;
		cr_expect(fabs(got - want) <= 1e-9 * want, "%s stage %d: simulated %.0f, estimated %.0f",
		          what, st, got, want);
	}
}

/* ------------------------------------------------------------ schedules */

static void expect_order(const struct prog_slot *sl, int n, const char *want)
{
	char got[512] = "";
	for (int i = 0; i < n; i++) {
		size_t k = strlen(got);
		snprintf(got + k, sizeof got - k, "%s%c%lld.%d", i ? " " : "",
		         sl[i].weight ? 'W' : sl[i].backward ? 'B' : 'F', (long long)sl[i].micro,
		         sl[i].chunk);
		k = strlen(got);
		if (sl[i].fb)  /* an F&B: the backward beside the forward */
			snprintf(got + k, sizeof got - k, "&B%lld.%d", (long long)sl[i].pair_micro,
			         sl[i].pair_chunk);
	}
	cr_expect_str_eq(got, want);
}

/* Megatron-Core's combined 1F1B (overlap_moe_expert_parallel_comm;
 * schedules.py get_pp_rank_microbatches: one more warm-up forward), by
 * hand. Without a pipeline (combined_1f1b_schedule_for_no_pipelining's
 * docstring): the first forward alone, each next forward with the
 * backward before it, the last backward alone. Interleaved, P = 2, v = 2,
 * m = 4, stage 0: the plain order above's 4 warm-up forwards and one more
 * (F2.0), then each steady forward with the backward 1F1B runs after it
 * (F3.0 with B0.2, F2.2 with B1.2, F3.2 with B0.0), then the cool-down
 * backwards alone; stage 1 warms up (v-1)P + 1 = 3 forwards. */
Test(pipeline, combined_1f1b_in_order)
{
	struct plan_part one = {.n_stages = 1, .virtual_stages = 1, .n_chunks = 1};
	struct prog_slot *sl;
	int n = plan_combined_schedule(A, &one, 4, 0, &sl);
	cr_assert_eq(n, 5);
	expect_order(sl, n, "F0.0 F1.0&B0.0 F2.0&B1.0 F3.0&B2.0 B3.0");
	cr_expect(sl[4].last && !sl[3].last, "the last backward starts the gradient sync");
	struct plan_part iv = {.n_stages = 2, .virtual_stages = 2, .n_chunks = 4};
	n = plan_combined_schedule(A, &iv, 4, 0, &sl);
	cr_assert_eq(n, 13);
	expect_order(sl, n, "F0.0 F1.0 F0.2 F1.2 F2.0 F3.0&B0.2 F2.2&B1.2 F3.2&B0.0 B1.0 B2.2 "
	                    "B3.2 B2.0 B3.0");
	n = plan_combined_schedule(A, &iv, 4, 1, &sl);
	expect_order(sl, n, "F0.1 F1.1 F0.3 F1.3&B0.3 F2.1&B1.3 F3.1&B0.1 F2.3&B1.1 F3.3&B2.3 "
	                    "B3.3 B2.1 B3.1");
	/* one micro-batch: nothing to pair */
	n = plan_combined_schedule(A, &one, 1, 0, &sl);
	expect_order(sl, n, "F0.0 B0.0");
}

/* P = 4, m = 8. 1F1B: stage s runs P-s-1 warm-up forwards, then one
 * forward and one backward, then the cool-down backwards; stage 3 (the
 * last) alternates from the start. GPipe: every forward, then every
 * backward from the last micro-batch. Written out by hand. */
Test(pipeline, schedules_in_order)
{
	struct plan_part pp = {.n_stages = 4, .virtual_stages = 1, .n_chunks = 4};
	struct prog_slot *sl;
	int n = plan_schedule(A, &pp, 8, SCHED_1F1B, 0, &sl);
	cr_assert_eq(n, 16);
	expect_order(sl, n, "F0.0 F1.0 F2.0 F3.0 B0.0 F4.0 B1.0 F5.0 B2.0 F6.0 B3.0 F7.0 B4.0 "
	                    "B5.0 B6.0 B7.0");
	n = plan_schedule(A, &pp, 8, SCHED_1F1B, 3, &sl);
	expect_order(sl, n, "F0.3 B0.3 F1.3 B1.3 F2.3 B2.3 F3.3 B3.3 F4.3 B4.3 F5.3 B5.3 F6.3 "
	                    "B6.3 F7.3 B7.3");
	cr_expect(sl[15].last && !sl[13].last, "the last backward starts the gradient sync");
	n = plan_schedule(A, &pp, 8, SCHED_GPIPE, 1, &sl);
	expect_order(sl, n, "F0.1 F1.1 F2.1 F3.1 F4.1 F5.1 F6.1 F7.1 B7.1 B6.1 B5.1 B4.1 B3.1 "
	                    "B2.1 B1.1 B0.1");
	/* Interleaved, P = 2, v = 2, m = 4 (Megatron): stage 0 holds chunks 0
	 * and 2; warm-up 2(P-0-1) + (v-1)P = 4 forward units: micro-batches 0,
	 * 1 of chunk 0, then 0, 1 of chunk 2; then F(2, 3 of chunk 0) against
	 * backwards (0, 1 of chunk 2), ...; backwards visit the last chunk
	 * first. */
	struct plan_part iv = {.n_stages = 2, .virtual_stages = 2, .n_chunks = 4};
	n = plan_schedule(A, &iv, 4, SCHED_INTERLEAVED_1F1B, 0, &sl);
	cr_assert_eq(n, 16);
	expect_order(sl, n, "F0.0 F1.0 F0.2 F1.2 F2.0 B0.2 F3.0 B1.2 F2.2 B0.0 F3.2 B1.0 B2.2 "
	                    "B3.2 B2.0 B3.0");
}

/* ZB-H1, P = 4, m = 6, written out by hand from Qi et al. (ICLR 2024),
 * figure 3, and the rule of their handcrafted schedule: stage s runs
 * P-s-1 warm-up forwards, s pairs F B whose W waits, F B W while forwards
 * remain, then B W, then the s waiting W's. Stage 0 is 1F1B with each
 * backward split; stage 3 defers three W's to the end. */
Test(pipeline, zb_h1_in_order)
{
	struct plan_part pp = {.n_stages = 4, .virtual_stages = 1, .n_chunks = 4};
	struct prog_slot *sl;
	int n = plan_schedule(A, &pp, 6, SCHED_ZB_H1, 0, &sl);
	cr_assert_eq(n, 18);
	expect_order(sl, n, "F0.0 F1.0 F2.0 F3.0 B0.0 W0.0 F4.0 B1.0 W1.0 F5.0 B2.0 W2.0 B3.0 W3.0 "
	                    "B4.0 W4.0 B5.0 W5.0");
	n = plan_schedule(A, &pp, 6, SCHED_ZB_H1, 3, &sl);
	expect_order(sl, n, "F0.3 B0.3 F1.3 B1.3 F2.3 B2.3 F3.3 B3.3 W0.3 F4.3 B4.3 W1.3 F5.3 B5.3 "
	                    "W2.3 W3.3 W4.3 W5.3");
	cr_expect(sl[17].last && sl[17].weight && !sl[16].last, "the last W starts the sync");
	cr_expect(sl[1].split && sl[1].backward && !sl[1].weight);
	n = plan_schedule(A, &pp, 6, SCHED_ZB_H1, 2, &sl);
	expect_order(sl, n, "F0.2 F1.2 B0.2 F2.2 B1.2 F3.2 B2.2 W0.2 F4.2 B3.2 W1.2 F5.2 B4.2 W2.2 "
	                    "B5.2 W3.2 W4.2 W5.2");
}

/* ---------------------------------------------------------------- bubble */

/* The simulated bubble fraction of a rank: of the iteration without its
 * optimizer (which runs after the flush, the same on every stage), the
 * part it does not compute: waits for the other stages at the start and
 * in steady state, and the early finish of the drain. */
static double optimizer_s(const struct program *prog, int64_t rank)
{
	const struct prog_stage *st = &prog->stages[rank / prog->stage_ranks];
	double tail = 0;
	for (int i = st->tail; i < st->tail + st->n_tail; i++)
		tail += prog->steps[i].kind == PROG_COMPUTE ? prog->steps[i].seconds : 0;
	return tail;
}

static double sim_bubble(const struct sim_result *r, const struct program *prog, int64_t rank)
{
	double tail = optimizer_s(prog, rank);
	return 1 - (r->ranks[rank].compute_s - tail) / (r->iteration_s - tail);
}

static void bubble_within(enum pipeline_schedule sched, int64_t v, double want, double tol)
{
	struct scenario *s = chain(sched, v, 0);
	struct plan *p = dp_plan(s);
	struct program prog;
	struct estimate e;
	cr_assert(plan_lower(A, p, 25 << 20, &prog, &D));
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_assert_eq(prog.n_chunks, 4 * (int)v);
	struct sim_result r = simulated(s, &prog);
	for (int64_t k = 0; k < r.n_ranks; k++) {
		double b = sim_bubble(&r, &prog, k);
		cr_expect(fabs(b - want) <= tol * want, "%s v=%lld rank %lld: bubble %.4f, want %.4f",
		          schedule_names[sched], (long long)v, (long long)k, b, want);
		/* The simulator's own split: waiting before the neighbour sent,
		 * and done early, are the bubble; the transfers are not. */
		double w = (r.ranks[k].pipeline_wait_s + r.ranks[k].idle_s) /
		           (r.iteration_s - optimizer_s(&prog, k));
		cr_expect(fabs(w - want) <= 0.02 * want, "%s v=%lld rank %lld: wait + idle %.4f, want %.4f",
		          schedule_names[sched], (long long)v, (long long)k, w, want);
	}
	/* The estimate's closed form, without the sends' time: the bubble is
	 * (p-1)/v of a stage's micro-batch time. */
	double t = e.stages[e.critical_stage].micro_s;
	cr_expect(fabs(e.bubble_s / (e.bubble_s + 8 * t) - want) <= 0.01 * want,
	          "estimated bubble fraction %.4f, want %.4f", e.bubble_s / (e.bubble_s + 8 * t), want);
}

static void bubble(enum pipeline_schedule sched, int64_t v, double want)
{
	bubble_within(sched, v, want, 0.01);
}

/* GPipe and 1F1B: (p-1)/(m+p-1) = 3/11 with p = 4, m = 8. */
Test(pipeline, gpipe_bubble)
{
	bubble(SCHED_GPIPE, 1, 3.0 / 11);
}

Test(pipeline, one_f_one_b_bubble)
{
	bubble(SCHED_1F1B, 1, 3.0 / 11);
}

/* The pipeline's sends, received: on the chain's 1F1B each 64 KiB send
 * crosses one HCCS link of 30 GB/s and 1 us (atlas800-910a.json) with
 * nothing else on it, 1 us + 65,536 / 30e9 s = 3.185 us. Stage 0 receives
 * the 8 micro-batches' gradients, stages 1 and 2 their activations and
 * gradients (16), stage 3 their activations (8); the simulated transfers
 * take exactly their time alone, which is part of the exposed
 * communication. */
Test(pipeline, sends_received_alone_take_their_time)
{
	struct scenario *s = chain(SCHED_1F1B, 1, 0);
	struct plan *p = dp_plan(s);
	struct program prog;
	cr_assert(plan_lower(A, p, 25 << 20, &prog, &D));
	struct sim_result r = simulated(s, &prog);
	static const int received[4] = {8, 16, 16, 8};
	double one = 1e-6 + ACT / 30e9;
	cr_assert_eq(r.n_ranks, 4);
	for (int k = 0; k < 4; k++) {
		cr_expect_float_eq(r.ranks[k].pipeline_alone_s, received[k] * one, 1e-9 * one,
		                   "rank %d: alone %.9g, want %.9g", k, r.ranks[k].pipeline_alone_s,
		                   received[k] * one);
		cr_expect_float_eq(r.ranks[k].pipeline_transfer_s, r.ranks[k].pipeline_alone_s, 1e-6 * one,
		                   "rank %d: took %.9g, alone %.9g", k, r.ranks[k].pipeline_transfer_s,
		                   r.ranks[k].pipeline_alone_s);
		cr_expect_leq(r.ranks[k].pipeline_transfer_s, r.ranks[k].comm_exposed_s * (1 + 1e-12));
	}
}

/* ZB-H1 (Qi et al. 2024, section 3.1): bubble (p-1)(T_F + T_B - T_W)
 * against 1F1B's (p-1)(T_F + T_B + T_W). The chain's stages are MatMuls
 * by a weight: T_B (the input gradient) = T_W (the weight gradient) =
 * T_F, so (p-1) T_F = 3 T_F of 8 x 3 T_F + 3 T_F: 1/9, simulated rank by
 * rank and estimated (1F1B on the same chain: 9 / 33 = 3/11). */
Test(pipeline, zb_h1_bubble)
{
	/* The simulated fraction counts the 64 KiB sends of each micro-batch
	 * (not compute) too, about 1% of so small a bubble: 2% here. */
	bubble_within(SCHED_ZB_H1, 1, 3.0 / 27, 0.02);
}

/* ZB-H1's memory: a split backward keeps its micro-batch's activations
 * until its W, so every stage holds up to P = 4 micro-batches (the
 * orders of zb_h1_in_order, counted by hand: stage 3 runs F0 B0 F1 B1 F2
 * B2 F3 B3 before its first W), where 1F1B's last stage holds one. */
Test(pipeline, zb_h1_holds_activations_until_w)
{
	struct estimate e1, ez;
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_1F1B, 1, 0)), &e1, &D));
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_ZB_H1, 1, 0)), &ez, &D));
	for (int s = 0; s < 4; s++) {
		cr_expect_eq(e1.stages[s].in_flight, 4 - s, "1F1B stage %d", s);
		cr_expect_eq(ez.stages[s].in_flight, 4, "ZB-H1 stage %d", s);
	}
}

/* ZB-V, P = 2, m = 2, worked by hand from the rule of zb_greedy (Qi et al.
 * 2024's V: stage 0 holds chunks 0 and 3, stage 1 chunks 1 and 2): steps
 * of one unit, each stage taking a ready B (lower chunk first), else a
 * ready F while it holds fewer than 2P = 4 chunk activations (higher
 * chunk first), else the W whose B finished first.
 *   step  0  1  2  3  4  5  6  7  8  9  10 11 12
 *   st 0  F00 F10 -  F03 B03 F13 B13 B00 W03 B10 W13 W00 W10
 *   st 1  -  F01 F02 F11 F12 B02 B01 B12 B11 W02 W01 W12 W11
 * (F03 waits for F02, done at step 3; B00 for B01, done at 7.) 13 steps
 * for 12 units a stage: one step of bubble, (P-1) T_F/2. Stage 0 holds at
 * most 4 chunk activations (after F13), 2 micro-batches of its two
 * chunks: P, as 1F1B's first stage. */
Test(pipeline, zb_v_in_order)
{
	struct plan_part pp = {.n_stages = 2, .virtual_stages = 2, .n_chunks = 4, .vshape = true};
	struct prog_slot *sl;
	int n = plan_schedule(A, &pp, 2, SCHED_ZB_V, 0, &sl);
	cr_assert_eq(n, 12);
	expect_order(sl, n, "F0.0 F1.0 F0.3 B0.3 F1.3 B1.3 B0.0 W0.3 B1.0 W1.3 W0.0 W1.0");
	cr_expect(sl[9].last && sl[11].last && !sl[10].last, "each chunk's last W starts its sync");
	n = plan_schedule(A, &pp, 2, SCHED_ZB_V, 1, &sl);
	expect_order(sl, n, "F0.1 F0.2 F1.1 F1.2 B0.2 B0.1 B1.2 B1.1 W0.2 W0.1 W1.2 W1.1");
	cr_expect_eq(part_stage(&pp, 3), 0, "the last chunk on stage 0 (the V)");
	cr_expect_eq(part_stage(&pp, 2), 1);
	cr_expect_eq(part_chunk(&pp, 1, 1), 2);
}

/* The chain lowered and estimated with a schedule of two chunks per
 * stage in a V (ZB-V's, DualPipe's two directions): chunks 0 1 2 3 on
 * stages 0 1 2 3, chunks 4 5 6 7 on 3 2 1 0. */
static struct scenario *lowered_v(enum pipeline_schedule sched, int64_t v, struct program *prog,
                                  struct estimate *e)
{
	struct scenario *s = chain(sched, v, 0);
	struct plan *p = dp_plan(s);
	cr_assert(plan_lower(A, p, 25 << 20, prog, &D));
	cr_assert(plan_estimate(A, p, e, &D));
	cr_assert_eq(prog->n_chunks, 8);
	static const int at[8] = {0, 1, 2, 3, 3, 2, 1, 0};
	for (int c = 0; c < 8; c++)
		cr_expect_eq(prog->chunks[c].stage, at[c], "%s chunk %d", schedule_names[sched], c);
	return s;
}

/* ZB-V on the chain: 8 chunks of two MatMuls, chunk c on stage c (c < 4)
 * or 7 - c. Each stage runs 8 micro-batches of two chunks of T_F/2 = T_B/2
 * = T_W/2 = T/2 each (T_B the input gradient and T_W the weight gradient
 * of a MatMul by a weight: each the forward's FLOPs). Bubble (P-1)(T_F +
 * T_B - T_W)/2 = 3 T/2 against 8 x 3T of work: 1.5 / 25.5 = 1/17, a
 * stage's fill, the first chunk's forwards reaching it (Qi et al. 2024
 * count it 0: their optimizer post-validation runs it under the previous
 * iteration's end, which a single synchronous iteration does not have).
 * Half ZB-H1's 3T. */
Test(pipeline, zb_v_bubble)
{
	struct program prog;
	struct estimate e;
	struct scenario *s = lowered_v(SCHED_ZB_V, 2, &prog, &e);
	/* chunk 3 hands on to chunk 4 without a send (both on stage 3) */
	const struct prog_chunk *c3 = &prog.chunks[3];
	for (int i = c3->fwd; i < c3->fwd + c3->n_fwd; i++)
		cr_expect_neq(prog.steps[i].kind, PROG_SEND, "chunk 3's forward sends nothing");
	struct sim_result r = simulated(s, &prog);
	/* The schedule is packed: no unit has slack, so the sends between
	 * the stages (64 KiB over HCCS at 30 GB/s after 1 us, 3.2 us against
	 * T = 1.8 ms) add to the critical path, at most one a step of its
	 * 3 x 2 x 8 + 3 = 51: the simulated bubble lies between the formula
	 * and that bound. */
	double T = e.category_s[EST_COMPUTE_FORWARD] / 8, send = ACT / 30e9 + 1e-6;
	double want = 1.5 / 25.5, most = (1.5 * T + 51 * send) / (25.5 * T + 51 * send);
	for (int64_t k = 0; k < r.n_ranks; k++) {
		double b = sim_bubble(&r, &prog, k);
		cr_expect(b >= 0.99 * want && b <= most, "rank %lld: bubble %.4f, want %.4f .. %.4f",
		          (long long)k, b, want, most);
	}
	double t = e.stages[e.critical_stage].micro_s;
	cr_expect(fabs(e.bubble_s / (e.bubble_s + 8 * t) - want) <= 0.01 * want,
	          "estimated bubble fraction %.4f, want %.4f", e.bubble_s / (e.bubble_s + 8 * t), want);
}

/* ZB-V's memory: at most 2P = 8 chunk activations on a stage, P = 4
 * micro-batches of its two chunks, the same peak as 1F1B's stage 0
 * (the paper's claim); the estimate walks the schedule to it. */
Test(pipeline, zb_v_memory_as_1f1b)
{
	struct estimate e1, ev;
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_1F1B, 1, 0)), &e1, &D));
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_ZB_V, 2, 0)), &ev, &D));
	for (int s = 0; s < 4; s++) {
		cr_expect_leq(ev.stages[s].in_flight, 4, "ZB-V stage %d", s);
		cr_expect_leq(ev.stages[s].mem.activations, e1.stages[0].mem.activations, "stage %d", s);
	}
	cr_expect_eq(ev.stages[0].in_flight, 4, "stage 0 reaches the cap");
}

/* ZB-H2 (Qi et al. 2024, section 3.1): up to 2P - 1 micro-batches in
 * flight buy a schedule without bubbles inside it (a parallelogram); one
 * synchronous iteration keeps its fill: stage s starts s T_F late and the
 * last stage ends 3 T_F after stage 0 would, (P-1) T_F = 3T of 8 x 3T +
 * 3T, 1/9, as ZB-H1 at T_F = T_B = T_W. Stage 0 runs F0 .. F6 (times 0 to
 * 7) before B0 comes back to it at 7 (F0 reaches stage 3 at 3, its B runs
 * 4 to 5 there and reaches stage 0 through stages 2 and 1 at 7): 7 = 2P
 * - 1 micro-batches held, counted by hand. */
Test(pipeline, zb_h2_bubble_and_memory)
{
	bubble_within(SCHED_ZB_H2, 1, 3.0 / 27, 0.02);
	struct estimate e;
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_ZB_H2, 1, 0)), &e, &D));
	cr_expect_eq(e.stages[0].in_flight, 7);
	for (int s = 1; s < 4; s++)
		cr_expect_leq(e.stages[s].in_flight, 7, "stage %d", s);
}

/* DeepSeek-V3's Table 2 (arXiv 2412.19437, section 3.2.1) on the chain,
 * PP = 4, in its terms: F = T (a stage's forward), W = T (its weight
 * gradients), B = 2T (the full backward: input and weight gradients),
 * F&B = 3T (a forward and a backward chunk overlapped: their compute
 * serialised, the 64 KiB sends hidden under it).
 *   1F1B      (PP-1)(F+B)          = 3 x 3T            = 9T   PP = 4 act.
 *   ZB1P      (PP-1)(F+B-2W)       = 3 x T             = 3T   PP
 *   DualPipe  (PP/2-1)(F&B+B-3W)   = 1 x (3T + 2T - 3T) = 2T   PP + 1 = 5
 * DualPipe's parameters 2x: stage d and stage 3 - d, 8 x 536,870,912 B;
 * its activations 5 micro-batches x 4 MatMul inputs x 65,536 B. */
Test(pipeline, table2_worked_example)
{
	struct estimate e1, ez, ed;
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_1F1B, 1, 0)), &e1, &D));
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_ZB_H1, 1, 0)), &ez, &D));
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_DUALPIPE, 1, 0)), &ed, &D));
	double T = e1.category_s[EST_COMPUTE_FORWARD] / 8;
	/* 1F1B and ZB1P carry the sends in F and B: within 1% */
	cr_expect(fabs(e1.bubble_s - 9 * T) <= 0.01 * 9 * T, "1F1B %g, want 9T = %g", e1.bubble_s, 9 * T);
	cr_expect(fabs(ez.bubble_s - 3 * T) <= 0.01 * 3 * T, "ZB1P %g, want 3T = %g", ez.bubble_s, 3 * T);
	/* DualPipe's estimate replays the stages' orders (dualpipe_bubble's
	 * timeline by hand): an F&B hides its two sends under its compute, a
	 * pass run alone does not, so the waits add at most one send (3.2 us
	 * of T = 1.8 ms) a unit on the critical path, 26 of them, as the
	 * simulation's */
	double send = ACT / 30e9 + 1e-6;
	cr_expect(ed.bubble_s >= 2 * T && ed.bubble_s <= 2 * T + 26 * send,
	          "DualPipe %g, want 2T = %g", ed.bubble_s, 2 * T);
	/* then the mirror copies' exchange (dualpipe_mirror_exchange_by_hand) */
	double sched = ed.iteration_s - ed.stages[0].optimizer_s - ed.stages[0].mirror_s;
	cr_expect(sched >= 26 * T && sched <= 26 * T + 26 * send,
	          "DualPipe: 8 micro-batches of F&B = 3T, then 2T: %g T", sched / T);
	for (int s = 0; s < 4; s++) {
		cr_expect_eq(e1.stages[s].in_flight, 4 - s);
		cr_expect_eq(ed.stages[s].in_flight, 5, "stage %d", s);
		cr_expect_eq(ed.stages[s].mem.params, 2 * 4 * W_BYTES, "stage %d", s);
		cr_expect_eq(ed.stages[s].mem.activations, 5 * 4 * ACT, "stage %d", s);
	}
}

/* DualPipe's order, written with b a split backward (its W later), B a
 * whole one, F.c+B.c an F&B (a forward overlapped with the other chunk's
 * backward). */
static void expect_dual_order(const struct prog_slot *sl, int n, int P, const char *want)
{
	char got[1024] = "";
	for (int i = 0; i < n; i++) {
		size_t k = strlen(got);
		int pair = 2 * P - 1 - sl[i].chunk;  /* the other chunk on its stage */
		if (sl[i].fb)
			snprintf(got + k, sizeof got - k, "%sF%lld.%d+B%lld.%d", i ? " " : "",
			         (long long)sl[i].micro, sl[i].chunk, (long long)sl[i].pair_micro, pair);
		else
			snprintf(got + k, sizeof got - k, "%s%c%lld.%d", i ? " " : "",
			         sl[i].weight     ? 'W'
			         : sl[i].backward ? (sl[i].split ? 'b' : 'B')
			                          : 'F',
			         (long long)sl[i].micro, sl[i].chunk);
	}
	cr_expect_str_eq(got, want);
}

/* DualPipe, P = 4, m = 8 (4 from each end), by hand from the eight steps
 * of deepseek-ai/DualPipe's DualPipe.step (H = P/2 = 2, n = m/2 = 4, h a
 * stage's distance from the nearer end). Stage 0 (h = 0) holds chunk 0
 * (forward direction) and chunk 7 (the reverse direction's copy of model
 * chunk 3): 2(H-h-1) = 2 warm-up F0; h+1 = 1 x (F0, F1); H-h-1 = 1 x (b1,
 * W, F1); n-P+h+1 = 1 x (F0&B1, F1&B0); 1 x (B1, F1&B0); 1 x (B1, b0) (the
 * later half of step 6's backwards split: B0 when h = 0); 1 x (W, b0);
 * h+1 = 1 W. Stage 1 (h = 1, a middle stage) holds chunks 1 and 6: no
 * warm-up, 2 x (F0, F1), 2 main steps of which the first runs F0 and B1
 * apart, then step 6's 2 x (B1, B0) split from the second (h odd: its
 * B1 too), the 2 W's. Stages 2 and 3 mirror 1 and 0, their phase 0 the
 * reverse direction (chunks 5 and 4 first). */
Test(pipeline, dualpipe_in_order)
{
	struct prog_slot *sl;
	int n = plan_dualpipe_schedule(A, 4, 8, 0, &sl);
	expect_dual_order(sl, n, 4, "F0.0 F1.0 F2.0 F0.7 b0.7 W0.7 F1.7 F3.0+B1.7 F2.7+B0.0 B2.7 "
	                            "F3.7+B1.0 B3.7 b2.0 W2.0 b3.0 W3.0");
	cr_expect(sl[n - 1].last && sl[11].last && !sl[13].last,
	          "chunk 0's last W and chunk 7's last whole B start their syncs");
	n = plan_dualpipe_schedule(A, 4, 8, 1, &sl);
	expect_dual_order(sl, n, 4, "F0.1 F0.6 F1.1 F1.6 F2.1 B0.6 F2.6+B0.1 F3.1+B1.6 F3.6+B1.1 "
	                            "B2.6 B2.1 b3.6 b3.1 W3.6 W3.1");
	n = plan_dualpipe_schedule(A, 4, 8, 3, &sl);
	expect_dual_order(sl, n, 4, "F0.4 F1.4 F2.4 F0.3 b0.3 W0.3 F1.3 F3.4+B1.3 F2.3+B0.4 B2.3 "
	                            "F3.3+B1.4 B3.3 b2.4 W2.4 b3.4 W3.4");
}

/* DualPipe simulated on the chain (P = 4, m = 8), DeepSeek-V3's Table 2
 * in its terms: F = T, B = 2T (the whole backward), W = T, F&B = 3T (no
 * communication to hide but the 64 KiB sends): bubble (P/2 - 1)(F&B + B -
 * 3W) = 2T against a stage's 8 x 3T of work. By hand, the orders of
 * dualpipe_in_order with each unit starting when its stage is free and
 * its input has come (an F&B hands both outputs on at its end), start
 * times in T (stages 3 and 2 run as 0 and 1, mirrored):
 *   stage 0  F0.0 0  F1.0 1  F2.0 2  F0.7 3  b0.7 4  W0.7 5  F1.7 6
 *            F3.0+B1.7 7-10, waits for B0.0 (stage 1's F2.6+B0.1, 8-11)
 *            F2.7+B0.0 11  B2.7 14-16, waits for B1.0 (stage 1, 14-17)
 *            F3.7+B1.0 17  B3.7 20  b2.0 22  W2.0 23  b3.0 24  W3.0 25-26
 *   stage 1  waits for F0.0 (0-1)  F0.1 1  F0.6 2  F1.1 3  F1.6 4  F2.1 5
 *            B0.6 6  F2.6+B0.1 8  F3.1+B1.6 11  F3.6+B1.1 14  B2.6 17
 *            B2.1 19-21, waits for B3.7 (stage 0, 20-22)  b3.6 22  b3.1 23
 *            W3.6 24  W3.1 25-26
 * Every stage ends its schedule at 26T having computed 24T: 2T of
 * bubble, as the formula; the sends (3.2 us each against T = 1.8 ms) add
 * a little. Memory: stage 0 holds F0.0 .. F2.0 and F0.7 (4), frees
 * one at W0.7, takes F1.7 (4), then F3.0 while B1.7's activations are
 * still held (5 = P + 1, Table 2's): the estimate's peak, to the byte. */
Test(pipeline, dualpipe_bubble)
{
	/* chunks 0 .. 3 the forward direction's, 4 .. 7 the reverse one's
	 * copies of model chunks 0 .. 3 on stages 3 .. 0 */
	struct program prog;
	struct estimate e;
	struct scenario *s = lowered_v(SCHED_DUALPIPE, 1, &prog, &e);
	struct sim_result r = simulated(s, &prog);
	double T = e.category_s[EST_COMPUTE_FORWARD] / 8, send = ACT / 30e9 + 1e-6;
	for (int64_t k = 0; k < r.n_ranks; k++) {
		/* at most one send a T on the critical path, 26 of them */
		double b = r.ranks[k].pipeline_wait_s + r.ranks[k].idle_s;
		cr_expect(b >= 0.99 * 2 * T && b <= 2 * T + 26 * send,
		          "rank %lld: bubble %.4f T, want 2T", (long long)k, b / T);
		/* then the mirrors' exchange (dualpipe_mirrors_exchange_gradients):
		 * 8 x 536,870,912 B each way over the 30 GB/s link */
		double x = 8 * W_BYTES / 30e9;
		cr_expect(r.ranks[k].comm_exposed_s >= x && r.ranks[k].comm_exposed_s <= x + 26 * send,
		          "rank %lld: exposed %g s, want %g s", (long long)k, r.ranks[k].comm_exposed_s, x);
		cr_expect(fabs(r.ranks[k].compute_s - optimizer_s(&prog, k) - 24 * T) <= 1e-9 * T,
		          "rank %lld computes 8 x 3T", (long long)k);
	}
	expect_peaks_are_estimates(&e, &r, &prog, "DualPipe");
	for (int st = 0; st < 4; st++)
		cr_expect_eq(e.stages[st].mem.activations, 5 * 4 * ACT, "stage %d", st);
}

/* The sends and receives in stage st's tail, into x[] (at most 4), and
 * how many of each. */
static int tail_p2p(const struct program *prog, int st, const struct prog_step **x, int *sends,
                    int *recvs)
{
	const struct prog_stage *ps = &prog->stages[st];
	int n = 0;
	*sends = *recvs = 0;
	for (int i = ps->tail; i < ps->tail + ps->n_tail; i++) {
		const struct prog_step *y = &prog->steps[i];
		if (y->kind != PROG_SEND && y->kind != PROG_RECV)
			continue;
		*sends += y->kind == PROG_SEND;
		*recvs += y->kind == PROG_RECV;
		if (n < 4)
			x[n++] = y;
	}
	return n;
}

/* DualPipe needs at least 2P micro-batches (dualpipe.py asserts it: its
 * main steps number m/2 - P + 1 on the end stages). The scenario loader
 * refuses fewer (tests/data/bad/scenario-dualpipe-few-micro-batches.json);
 * a batch changed after loading (simulate --global-batch) meets the
 * lowering's refusal: the chain's global batch of 8 is 4 micro-batches
 * of its 2 samples on 4 stages. */
Test(pipeline, dualpipe_refuses_fewer_than_2p_micro_batches)
{
	struct scenario *s = chain(SCHED_DUALPIPE, 1, 0);
	s->training.global_batch = 8;
	struct program prog;
	size_t before = D.count;
	cr_assert_not(plan_lower(A, dp_plan(s), 25 << 20, &prog, &D));
	cr_assert_eq(D.count, before + 1);
	cr_expect_str_eq(D.items[before].path, "training.schedule");
	cr_expect_not_null(strstr(D.items[before].msg, "not 4 micro-batches on 4 stages"), "%s",
	                   D.items[before].msg);
}

/* DualPipe's two copies of a model chunk (stage d's forward one and the
 * reverse direction's on stage P-1-d) add their gradients: after the
 * data-parallel synchronisation each stage sends its mirror the
 * gradients of both its chunks, 8 MatMul weights of 536,870,912 B on the
 * chain (one device a stage: nothing else to reduce), and receives as
 * many. */
Test(pipeline, dualpipe_mirrors_exchange_gradients)
{
	struct program prog;
	cr_assert(plan_lower(A, dp_plan(chain(SCHED_DUALPIPE, 1, 0)), 25 << 20, &prog, &D));
	for (int st = 0; st < 4; st++) {
		const struct prog_step *x[4];
		int sends, recvs, n = tail_p2p(&prog, st, x, &sends, &recvs);
		for (int i = 0; i < n; i++) {
			cr_expect_eq(x[i]->peer_stage, 3 - st, "stage %d", st);
			cr_expect_eq(x[i]->bytes, 8 * W_BYTES, "stage %d", st);
			int to = x[i]->kind == PROG_SEND ? 3 - st : st;
			cr_expect_eq(x[i]->channel, prog_mirror_channel(prog.n_chunks, 4, to));
		}
		cr_expect(sends == 1 && recvs == 1, "stage %d: %d sends, %d receives", st, sends, recvs);
	}
}

/* The estimate prices the mirror copies' exchange that the lowering
 * sends (dualpipe_mirrors_exchange_gradients), by hand: stage d and stage
 * 3 - d hold the same two model chunks, 4 MatMul weights each, fp16
 * gradients (2 B an element, the weights' own dtype: 536,870,912 B a
 * weight), so each of the 4 NPUs sends its mirror 8 x 536,870,912 B =
 * 4,294,967,296 B and receives as many at once: over the one HCCS link
 * of the Atlas 800 between them, 1 us + 4,294,967,296 B / 30 GB/s =
 * 143.166577 ms. Nothing else is synchronised (one NPU a stage, no
 * shared parameters): that is the tail's gradient_s and the breakdown's
 * gradient_sync. With ZeRO-1 on 2 NPUs a stage (data parallel 2, 8
 * micro-batches of 2 for a global batch of 32) each rank holds and
 * sends a half shard of each gradient, 4 x 536,870,912 B, and the
 * lowering sends the same bytes. */
Test(pipeline, dualpipe_mirror_exchange_by_hand)
{
	const double S = 8 * W_BYTES, want_s = 1e-6 + S / 30e9;
	struct estimate e;
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_DUALPIPE, 1, 0)), &e, &D));
	for (int st = 0; st < 4; st++) {
		const struct est_stage *es = &e.stages[st];
		cr_expect_eq(es->mirror_bytes, S, "stage %d: %.0f B", st, es->mirror_bytes);
		cr_expect(fabs(es->mirror_s - want_s) <= 1e-9 * want_s, "stage %d: %.9g s, want %.9g s",
		          st, es->mirror_s, want_s);
		cr_expect(fabs(es->gradient_s - want_s) <= 1e-9 * want_s, "stage %d: gradient_s %.9g s",
		          st, es->gradient_s);
	}
	cr_expect(fabs(e.category_s[EST_GRADIENT_SYNC] - want_s) <= 1e-9 * want_s,
	          "gradient_sync %.9g s, want %.9g s", e.category_s[EST_GRADIENT_SYNC], want_s);
	/* 1F1B has no mirror copies */
	struct estimate e1;
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_1F1B, 1, 0)), &e1, &D));
	for (int st = 0; st < 4; st++)
		cr_expect_eq(e1.stages[st].mirror_bytes, 0, "1F1B stage %d", st);
	/* ZeRO-1, data parallel 2: half of each gradient */
	struct scenario *s = chain(SCHED_DUALPIPE, 1, 1);
	s->devices = 8;
	s->training.global_batch = 32;
	struct plan *p = dp_plan(s);
	struct estimate ez;
	cr_assert(plan_estimate(A, p, &ez, &D));
	struct program prog;
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
	for (int st = 0; st < 4; st++) {
		cr_expect_eq(ez.stages[st].mirror_bytes, 4 * W_BYTES, "ZeRO-1 stage %d: %.0f B", st,
		             ez.stages[st].mirror_bytes);
		const struct prog_step *x[4];
		int sends, recvs, n = tail_p2p(&prog, st, x, &sends, &recvs);
		cr_expect(sends == 1 && recvs == 1, "ZeRO-1 stage %d: %d sends, %d receives", st, sends,
		          recvs);
		for (int i = 0; i < n; i++)
			cr_expect_eq(x[i]->bytes, 4 * W_BYTES, "ZeRO-1 stage %d", st);
	}
}

/* The data-parallel plan of s simulated within 3% of its estimate. */
static void simulated_as_estimated(struct scenario *s)
{
	struct plan *p = dp_plan(s);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	struct program prog;
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
	struct sim_result r = simulated(s, &prog);
	cr_expect(fabs(r.iteration_s - e.iteration_s) <= 0.03 * e.iteration_s,
	          "simulated %.6g s, estimated %.6g s", r.iteration_s, e.iteration_s);
}

/* DualPipe's estimate and simulation agree on the chain (P = 4, m = 8)
 * within the 3% the other schedules' comparisons allow: 26T of schedule
 * (dualpipe_bubble), then the mirror exchange of 143 ms, then the
 * optimizer, in both. Without the exchange the estimate was half the
 * simulation. On 2 NPUs a stage (data parallel 2, 8 micro-batches of a
 * global batch of 32), ZeRO 0 without overlap and ZeRO 1 with it: each
 * device synchronises both its chunks' gradients (1 GiB each over the 2
 * ranks) before the exchange, which the estimate's tail sums. ZeRO 2:
 * every micro-batch's reduce-scatters queue on the second stream, and
 * after the optimizer the device gathers both its chunks' updated
 * parameters, one after the other (before, the estimate counted the
 * larger chunk's gathers only, 5.5% under the simulation). */
Test(pipeline, dualpipe_estimate_meets_simulation)
{
	simulated_as_estimated(chain(SCHED_DUALPIPE, 1, 0));
	for (int zero = 0; zero < 3; zero++) {
		struct scenario *s = chain(SCHED_DUALPIPE, 1, zero);
		s->devices = 8;
		s->training.global_batch = 32;
		s->training.overlap_grad_reduce = zero == 1;
		simulated_as_estimated(s);
	}
}

/* DualPipe with tensor parallelism at the fewest micro-batches it runs
 * (tests/data/good/dualpipe-tp-8p.json: P = 4, m = 8, TP 2): of a
 * device's 8 forwards and 8 backwards, 3P/2 - h - 1 of each (5 on the
 * end stages, 4 on the middle ones) run alone, their all-reduces exposed;
 * only the rest are F&B's whose communication the other pass's compute
 * hides. The estimate replays each device's order with those units, as
 * the simulation runs it, and meets it within 1.5%; priced as m F&B's
 * and Table 2's bubble it was 4.2% under. */
Test(pipeline, dualpipe_lone_passes_expose_their_collectives)
{
	struct scenario *s = fixture_scenario("tests/data/good/dualpipe-tp-8p.json");
	struct estimate e;
	struct plan *p = megatron_estimated(s, &e);
	struct program prog;
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
	struct sim_result r = simulated(s, &prog);
	cr_expect(fabs(r.iteration_s - e.iteration_s) <= 0.015 * e.iteration_s,
	          "simulated %.6g s, estimated %.6g s", r.iteration_s, e.iteration_s);
	/* the collectives' exposed share: all of a lone pass's, so more than
	 * none on every device */
	cr_expect_gt(e.category_s[EST_COMM_FORWARD], 0);
	cr_expect_gt(e.category_s[EST_COMM_BACKWARD], 0);
}

/* DualPipe with MoE layers and a calibration's host time per MoE layer
 * and pass (train.moe_overhead_us, 300 us; docs/moe-cp.md): the wait is no
 * compute that hides the other pass's all-to-alls in an F&B, in the
 * estimate's replay as in the lowering. Eight narrow MoE layers (top-8 of
 * 16 experts of 64) over 4 stages of two DGX H100 each, EP 16 across the
 * two servers, 8 micro-batches: the estimate meets the simulation within
 * 2% (it was 3.1% under it while the replay counted the wait as compute
 * that hides). */
Test(pipeline, dualpipe_moe_host_time_hides_nothing)
{
	struct scenario *s = fixture_generated(
		A, &D,
		"{\"kind\": \"llama\", \"hidden\": 1024, \"layers\": 8, \"heads\": 8, \"ffn\": 2048,"
		" \"seq\": 1024, \"vocab\": 64, \"experts\": 16, \"top_k\": 8, \"expert_ffn\": 64,"
		" \"micro_batch\": 16, \"dtype\": \"bf16\"}",
		"dgx-h100-x64", 64,
		"{\"global_batch\": 128, \"pipeline_stages\": 4, \"schedule\": \"dualpipe\","
		" \"tensor_parallel\": 1, \"expert_parallel\": 16}");
	cr_assert_not_null(s);
	cost_cal_set(s->topo, CAL_TRAIN_MOE_OVERHEAD_US, NULL, 300);
	struct estimate e;
	struct plan *p = megatron_estimated(s, &e);
	cr_assert_eq(e.steps_per_iteration, 8);
	struct program prog;
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
	struct sim_result r = simulated(s, &prog);
	cr_expect(fabs(r.iteration_s - e.iteration_s) <= 0.02 * r.iteration_s,
	          "simulated %.6g s, estimated %.6g s", r.iteration_s, e.iteration_s);
}

/* A weight the first and the last stage share (tests/data/good/
 * dualpipe-tied-chain-4p.json: the last MatMul reads the first's w0, as
 * DeepSeek-V3's multi-token prediction module reads the main model's
 * embedding). Under 1F1B stages 0 and 3 are two NPUs: each sends the
 * other w0's fp16 gradient, 536,870,912 B, 1 us + W / 30 GB/s over their
 * HCCS link = 17.896 ms. Under DualPipe NPU 0 holds stage 0 and stage 3
 * (as NPU 3 does), so the two reads are one weight on one device
 * (DeepSeek-V3 section 3.2.3, the physical sharing of parameters and
 * gradients): nothing is sent between them, the mirror exchange carries
 * w0 once, 7 weights (w0..w3, w12..w14) = 3,758,096,384 B, 1 us + 7W /
 * 30 GB/s = 125.271 ms, and the pair holds 7 weights, not 8. Stages 1
 * and 2 still exchange 8 weights, 143.167 ms: the slowest tail, so
 * gradient_sync is 143.167 ms, not 17.896 + 143.167 = 161.063 ms. The
 * lowering sends what the estimate prices and the simulation meets it
 * (time within 3%, each stage's peak memory to rounding). */
Test(pipeline, dualpipe_shared_weight_stays_on_its_devices)
{
	const char *file = "tests/data/good/dualpipe-tied-chain-4p.json";
	const double W = W_BYTES, hccs = 30e9, mirror7 = 1e-6 + 7 * W / hccs,
	             mirror8 = 1e-6 + 8 * W / hccs, tied = 1e-6 + W / hccs;
	struct scenario *s1 = fixture_scenario(file);
	s1->training.schedule = SCHED_1F1B;
	struct estimate e1;
	cr_assert(plan_estimate(A, dp_plan(s1), &e1, &D));
	for (int st = 0; st < 4; st += 3) {
		cr_expect_eq(e1.stages[st].tied_bytes, W, "1F1B stage %d", st);
		cr_expect(fabs(e1.stages[st].tied_s - tied) <= 1e-9 * tied, "1F1B stage %d: %.9g s",
		          st, e1.stages[st].tied_s);
		cr_expect_eq(e1.stages[st].tied_local_bytes, 0);
	}

	struct scenario *s = fixture_scenario(file);
	struct plan *p = dp_plan(s);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	for (int st = 0; st < 4; st++) {
		const struct est_stage *es = &e.stages[st];
		bool end = st == 0 || st == 3;
		double want = end ? mirror7 : mirror8;
		cr_expect_eq(es->tied_bytes, 0, "stage %d sends nothing of w0", st);
		cr_expect_eq(es->tied_s, 0, "stage %d", st);
		cr_expect_eq(es->tied_local_bytes, end ? W : 0, "stage %d", st);
		cr_expect_eq(es->mirror_bytes, (end ? 7 : 8) * W, "stage %d: %.0f B", st,
		             es->mirror_bytes);
		cr_expect(fabs(es->gradient_s - want) <= 1e-9 * want, "stage %d: %.9g s, want %.9g s",
		          st, es->gradient_s, want);
		cr_expect_eq(es->mem.params, (end ? 7 : 8) * W, "stage %d", st);
	}
	cr_expect(fabs(e.stages[0].mem.grads * 8 - e.stages[1].mem.grads * 7) <= 1,
	          "w0's gradient once: %.0f of %.0f", e.stages[0].mem.grads, e.stages[1].mem.grads);
	cr_expect(fabs(e.stages[0].mem.optimizer * 8 - e.stages[1].mem.optimizer * 7) <= 1);
	cr_expect(fabs(e.category_s[EST_GRADIENT_SYNC] - mirror8) <= 1e-9 * mirror8,
	          "gradient_sync %.9g s, want %.9g s", e.category_s[EST_GRADIENT_SYNC], mirror8);

	struct program prog;
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
	for (int st = 0; st < 4; st++) {
		const struct prog_step *x[4];
		int sends, recvs, n = tail_p2p(&prog, st, x, &sends, &recvs);
		cr_expect(sends == 1 && recvs == 1, "stage %d: %d sends, %d receives (the mirror's)", st,
		          sends, recvs);
		for (int i = 0; i < n; i++) {
			cr_expect_eq(x[i]->peer_stage, 3 - st, "stage %d", st);
			cr_expect_eq(x[i]->bytes, e.stages[st].mirror_bytes, "stage %d", st);
		}
	}
	struct sim_result r = simulated(s, &prog);
	cr_expect(fabs(r.iteration_s - e.iteration_s) <= 0.03 * e.iteration_s,
	          "simulated %.6g s, estimated %.6g s", r.iteration_s, e.iteration_s);
	expect_peaks_are_estimates(&e, &r, &prog, "dualpipe, shared w0");
}

/* s's data-parallel plan estimated into *e and lowered into *prog at the
 * scenario's bucket size. */
static void estimated_and_lowered(struct scenario *s, struct estimate *e, struct program *prog)
{
	struct plan *p = dp_plan(s);
	cr_assert(plan_estimate(A, p, e, &D));
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, prog, &D));
}

/* dualpipe-tied-chain-4p on 8 NPUs: 2 a stage (data parallel 2), 16
 * micro-batches of 2 for a global batch of 32, at ZeRO stage `zero`. */
static struct scenario *tied_chain_dp2(int zero)
{
	struct scenario *s = fixture_scenario("tests/data/good/dualpipe-tied-chain-4p.json");
	s->devices = 8;
	s->training.global_batch = 32;
	s->training.zero_stage = zero;
	return s;
}

/* The shared weight's optimizer step, by hand (dualpipe-tied-chain-4p:
 * w0 read by the first MatMul and the last, held once by the devices of
 * stages 0 and 3, DeepSeek-V3 section 3.2.3): one weight, one gradient,
 * one update. Megatron-LM's mixed-precision step on an fp16 weight moves
 * 52 B an element (the fp16 gradient copied to fp32, read 2 write 4;
 * unscaled in place, 4 + 4; its norm, 4; Adam over the master and two
 * moments, 4 + 24; the master copied back, 4 + 2), at the 910A's 1,200
 * GB/s: W_ELEMS x 52 / 1.2e12 = 11.632 ms a weight. Stages 0 and 3 hold
 * 7 weights (w0..w3 and w12..w14), 81.43 ms; stages 1 and 2 8 weights,
 * 93.06 ms (before: 8 on every stage, w0 stepped twice). The lowered
 * tail runs the same step. With ZeRO-1 on 2 NPUs a stage each rank steps
 * half of each weight: 3.5 and 4 weights' worth. The state held (Megatron
 * DistOpt's fp16 bytes a parameter, 4 + 16 at d = 1): 7 x W_ELEMS x 20 B
 * on stages 0 and 3, 8 x on the others. */
Test(pipeline, dualpipe_shared_weight_updated_once)
{
	const double step = W_ELEMS * 52 / 1.2e12;
	for (int zero = 0; zero < 2; zero++) {
		struct scenario *s = fixture_scenario("tests/data/good/dualpipe-tied-chain-4p.json");
		s->training.zero_stage = zero;
		if (zero) {
			s->devices = 8;
			s->training.global_batch = 32;
		}
		double share = zero ? 0.5 : 1;
		struct estimate e;
		struct program prog;
		estimated_and_lowered(s, &e, &prog);
		for (int st = 0; st < 4; st++) {
			const struct est_stage *es = &e.stages[st];
			double weights = st == 0 || st == 3 ? 7 : 8, want = weights * share * step;
			cr_expect(fabs(es->optimizer_s - want) <= 1e-9 * want,
			          "ZeRO %d stage %d: %.9g s, want %.9g s", zero, st, es->optimizer_s, want);
			const struct prog_stage *ps = &prog.stages[st];
			double lowered = 0;
			for (int i = ps->tail; i < ps->tail + ps->n_tail; i++)
				if (prog.steps[i].phase == PHASE_OPTIMIZER &&
				    prog.steps[i].kind == PROG_COMPUTE)
					lowered += prog.steps[i].seconds;
			cr_expect(fabs(lowered - want) <= 1e-9 * want,
			          "ZeRO %d stage %d lowered: %.9g s, want %.9g s", zero, st, lowered, want);
			if (zero)
				continue;
			double state = es->mem.params + es->mem.grads + es->mem.optimizer;
			cr_expect(fabs(state - weights * W_ELEMS * 20) <= 1e-9 * state,
			          "stage %d: %.0f B, want %.0f B", st, state, weights * W_ELEMS * 20);
		}
	}
}

/* The shared weight's data-parallel synchronisation, by hand
 * (dualpipe-tied-chain-4p on 8 NPUs: 2 a stage, data parallel 2, 16
 * micro-batches of 2 for a global batch of 32). The devices of stages 0
 * and 3 hold both chunks, w0 once (DeepSeek-V3 section 3.2.3): one
 * gradient, which both chunks' backwards accumulate and the pair reduces
 * once over its data-parallel group, with chunk 0, which keeps its copy
 * (its memory and its optimizer step are chunk 0's:
 * dualpipe_shared_weight_updated_once). Stages 0 and 3 reduce 7 weights
 * (w0..w3, w12..w14), stages 1 and 2 8 (before: 8 everywhere, w0 in both
 * chunks' buckets). Each weight is its own bucket (536,870,912 B of fp16
 * gradient over the 25 MiB bucket size), all-reduced by the 2 ranks of
 * a stage over their HCCS link (30 GB/s, 1 us): 2(n-1)/n S/B + 2(n-1)a
 * = S/B + 2a = T = 17.898 ms, whatever the algorithm at n = 2 (the mesh's
 * direct all-reduce too: 2(a + S/2/B)). Without overlap the tail runs
 * them one after another: 7T = 125.284 ms on stages 0 and 3, 8T =
 * 143.182 ms on 1 and 2, then the mirror exchange. ZeRO-1 reduce-scatters
 * instead, (n-1)/n S/B + a, and all-gathers the updated fp16 weight, as
 * much again: T a weight as well, and the lowered tail carries 7 and 8
 * weights' bytes of each. With overlap (the default) each weight's
 * all-reduce starts when its MatMul's backward is done, b = 2 x S /
 * 1.2 TB/s = 0.895 ms (the weight read for the input gradient, its
 * gradient written: memory-bound), one after another: a chunk of four
 * exposes b + 4T - 4b, stage 0's chunk 3, whose last MatMul (mm15, w0)
 * now has none, 2b + 3T - 4b: 7T - 5b = 120.81 ms where stages 1 and 2
 * expose 8T - 6b = 137.81 ms (before: 137.81 on every stage). The
 * simulation meets the estimate (within 3%) with and without overlap. */
Test(pipeline, dualpipe_shared_weight_synchronised_once)
{
	const double T = W_BYTES / 30e9 + 2e-6, b = 2 * W_BYTES / 1.2e12;
	for (int k = 0; k < 3; k++) {
		int zero = k == 1;
		bool overlap = k == 2;
		struct scenario *s = tied_chain_dp2(zero);
		s->training.overlap_grad_reduce = overlap;
		struct estimate e;
		struct program prog;
		estimated_and_lowered(s, &e, &prog);
		for (int st = 0; st < 4; st++) {
			const struct est_stage *es = &e.stages[st];
			double w = st == 0 || st == 3 ? 7 : 8;
			double want = overlap ? w * T - (w - 2) * b : w * T;
			double got = es->gradient_s - es->mirror_s;
			cr_expect(fabs(got - want) <= 1e-4 * want, "case %d stage %d: %.9g s, want %.9g s",
			          k, st, got, want);
			if (overlap)
				continue;
			const struct prog_stage *ps = &prog.stages[st];
			double reduced = 0, gathered = 0;
			for (int i = ps->tail; i < ps->tail + ps->n_tail; i++) {
				const struct prog_step *x = &prog.steps[i];
				if (x->kind != PROG_COLLECTIVE)
					continue;
				if (x->phase == PHASE_GRADIENT) {
					cr_expect_eq(x->coll, zero ? STEP_REDUCESCATTER : STEP_ALLREDUCE);
					cr_expect_eq(x->groups.size, 2);
					reduced += x->bytes;
				} else if (x->phase == PHASE_PARAMS) {
					gathered += x->bytes;
				}
			}
			cr_expect_eq(reduced, w * W_BYTES, "case %d stage %d: %.0f B reduced", k, st,
			             reduced);
			cr_expect_eq(gathered, zero ? w * W_BYTES : 0, "case %d stage %d: %.0f B gathered",
			             k, st, gathered);
		}
		simulated_as_estimated(s);
	}
}

/* The data-parallel bytes of steps [from, from + n): into *rs the
 * gradients' reduce-scatters run every micro-batch (ZeRO 2 and 3's),
 * into *ag the parameters' all-gathers, each over a group of 2. */
static void dp_bytes(const struct program *prog, int from, int n, double *rs, double *ag)
{
	*rs = *ag = 0;
	for (int i = from; i < from + n; i++) {
		const struct prog_step *x = &prog->steps[i];
		if (x->kind != PROG_COLLECTIVE || (x->phase != PHASE_GRADIENT && x->phase != PHASE_PARAMS))
			continue;
		cr_expect_eq(x->groups.size, 2, "%s", x->label);
		if (x->phase == PHASE_GRADIENT && x->every_micro) {
			cr_expect_eq(x->coll, STEP_REDUCESCATTER, "%s", x->label);
			*rs += x->bytes;
		} else if (x->phase == PHASE_PARAMS) {
			cr_expect_eq(x->coll, STEP_ALLGATHER, "%s", x->label);
			*ag += x->bytes;
		}
	}
}

/* ZeRO 2 and 3 under DualPipe, by hand (dualpipe-tied-chain-4p on 8
 * NPUs: 2 a stage, data parallel 2, 16 micro-batches; each weight, W =
 * 536,870,912 B of fp16, its own bucket). ZeRO 2 reduce-scatters every
 * micro-batch's gradients on the second stream (DeepSpeed's stage 2 with
 * overlap_comm): a DualPipe device runs 16 micro-batches, 8 through each
 * of its two chunks, and each reduce-scatters the 4 weights that chunk
 * read, stage 0 w0..w3 with chunk 0 and w12..w14 and w0 with chunk 3: w0
 * 16 times, once for each micro-batch that crossed the device, as 1F1B's
 * stage 0 reduces it once a micro-batch. Each is another micro-batch's
 * gradient, none of them twice, so every chunk still reduce-scatters 4 W
 * a micro-batch. After the optimizer, though, the device holds one w0,
 * stepped once (dualpipe_shared_weight_updated_once), and all-gathers its
 * updated halves once, with chunk 0: 7 weights on stages 0 and 3 (w0..w3,
 * w12..w14), 8 on stages 1 and 2 (before: 8 everywhere in the lowering,
 * w0 twice; the estimate took the larger of its two chunks' tails, 4
 * weights' gathers, on every stage). Over the 2 ranks' HCCS link (30
 * GB/s, 1 us) a reduce-scatter or an all-gather of S = W takes (n-1)/n
 * S/B + (n-1) a = W / 60 GB/s + 1 us = r = 8.949 ms; a MatMul's backward
 * b = 2W / 1.2 TB/s = 0.895 ms (memory-bound), its forward b/2; a send of
 * the activations e = 1 us + 65,536 B / 30 GB/s = 3.18 us, k = 1 a
 * micro-batch on stages 0 and 3, 2 on 1 and 2. The stream-1 queue: each
 * of the first 15 micro-batches adds 4r against 6b + k e of compute and
 * sends, and the last one's four start with its MatMuls' backwards, b
 * apart, ending 4r - 3b after them: 64r - 93b - 15 k e; then g gathers,
 * g r: 0.55211 s on stages 0 and 3 (g = 7), 0.56101 s on 1 and 2 (g =
 * 8), before the mirror exchange. With training.overlap_param_gather each
 * chunk's gathers run under its first forward (4 x b/2 = 2b), carrying 4
 * and 3 weights on stages 0 and 3: 4r - 2b and 3r - 2b exposed, 2(4r -
 * 2b) on stages 1 and 2. The simulation meets the estimate within 3%.
 * ZeRO 3 is not affected: no gather after the optimizer; each pass
 * gathers the weights it reads (4 W a forward, w0 in both of stage 0's
 * chunks: each pass another micro-batch's) and every micro-batch
 * reduce-scatters its 4 W. */
Test(pipeline, dualpipe_shared_weight_gathered_once_zero2)
{
	const double r = W_BYTES / 60e9 + 1e-6, b = 2 * W_BYTES / 1.2e12, e = 1e-6 + ACT / 30e9;
	static const struct {
		int zero;
		bool overlap; /* training.overlap_param_gather */
	} cases[] = {{2, false}, {2, true}, {3, false}};
	for (int k = 0; k < 3; k++) {
		int zero = cases[k].zero;
		bool overlap = cases[k].overlap;
		struct scenario *s = tied_chain_dp2(zero);
		s->training.overlap_param_gather = overlap;
		struct estimate est;
		struct program prog;
		estimated_and_lowered(s, &est, &prog);
		cr_assert_eq(prog.n_chunks, 8);
		for (int st = 0; st < 4; st++) {
			bool end = st == 0 || st == 3;
			double g = end ? 7 : 8, sends = end ? 1 : 2;
			/* the stage's two chunks: its own, and the reverse
			 * direction's copy of chunk 3 - st */
			double first_gathers = 0;
			for (int x = 0; x < 8; x++) {
				const struct prog_chunk *c = &prog.chunks[x];
				if (c->stage != st)
					continue;
				double rs, ag, rs_f, ag_f;
				dp_bytes(&prog, c->whole, c->n_whole, &rs, &ag);
				cr_expect_eq(rs, 4 * W_BYTES, "case %d stage %d chunk %d: %.0f B a micro-batch",
				             k, st, x, rs);
				dp_bytes(&prog, c->fwd, c->n_fwd, &rs_f, &ag_f);
				if (zero == 3)
					cr_expect_eq(ag_f, 4 * W_BYTES, "stage %d chunk %d: %.0f B gathered", st,
					             x, ag_f);
				else
					first_gathers += ag_f;
			}
			const struct prog_stage *ps = &prog.stages[st];
			double rs, ag;
			dp_bytes(&prog, ps->tail, ps->n_tail, &rs, &ag);
			double tail_ag = zero == 2 && !overlap ? g * W_BYTES : 0;
			cr_expect_eq(ag, tail_ag, "case %d stage %d: %.0f B gathered after the optimizer", k,
			             st, ag);
			cr_expect_eq(first_gathers, overlap ? g * W_BYTES : 0,
			             "case %d stage %d: %.0f B gathered under the first forwards", k, st,
			             first_gathers);
			if (zero == 3)
				continue;
			double want = 64 * r - 93 * b - 15 * sends * e + (overlap ? g * r - 4 * b : g * r);
			double got = est.stages[st].gradient_s - est.stages[st].mirror_s;
			cr_expect(fabs(got - want) <= 1e-4 * want, "case %d stage %d: %.9g s, want %.9g s",
			          k, st, got, want);
		}
		if (zero == 2)
			simulated_as_estimated(s);
	}
}

/* Sums over steps [from, from + n) of the stream-0 compute seconds and
 * the compute run alongside collectives (overlap_s). */
static void range_sums(const struct program *prog, int from, int n, double *compute,
                       double *alongside, int *all_to_alls_hidden)
{
	*compute = *alongside = 0;
	for (int i = from; i < from + n; i++) {
		const struct prog_step *x = &prog->steps[i];
		if (x->kind == PROG_COMPUTE && x->stream == 0)
			*compute += x->seconds;
		if (x->kind == PROG_COLLECTIVE && x->stream == 0)
			*alongside += x->overlap_s;
		if (all_to_alls_hidden && x->kind == PROG_COLLECTIVE && x->coll == STEP_ALLTOALL &&
		    x->overlap_s > 0)
			++*all_to_alls_hidden;
	}
}

/* DualPipe's F&B on a mixture of experts (tests/data/good/dualpipe-moe-4p.json,
 * expert parallel 2): in the overlapped passes of chunk x's forward and
 * its stage's other chunk y's backward, the expert all-to-alls run
 * alongside the other pass's compute. Nothing is computed twice or lost:
 * the compute steps and the compute run alongside collectives add up to
 * the plain forward's and whole backward's compute; what the forward's
 * collectives take is at most the backward's compute and at most the
 * estimate's seconds of those collectives (comm_forward_s of the ops),
 * and the same the other way. */
Test(pipeline, dualpipe_overlaps_forward_and_backward)
{
	struct scenario *s = fixture_scenario("tests/data/good/dualpipe-moe-4p.json");
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron(A, s, &o, &D);
	cr_assert_not_null(p);
	struct program prog;
	struct estimate e;
	cr_assert(plan_lower(A, p, 25 << 20, &prog, &D));
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_assert_eq(prog.n_chunks, 4);
	int hidden_a2a = 0;
	for (int x = 0; x < 4; x++) {
		const struct prog_chunk *f = &prog.chunks[x], *b = &prog.chunks[f->pair];
		cr_expect_eq(b->stage, f->stage, "chunk %d's pair on its stage", x);
		cr_expect_neq(f->pair, x);
		double cf, af, cb, ab, cf0, af0, cb0, ab0;
		range_sums(&prog, f->ov_fwd, f->n_ov_fwd, &cf, &af, &hidden_a2a);
		range_sums(&prog, b->ov_bwd, b->n_ov_bwd, &cb, &ab, &hidden_a2a);
		range_sums(&prog, f->fwd, f->n_fwd, &cf0, &af0, NULL);
		range_sums(&prog, b->whole, b->n_whole, &cb0, &ab0, NULL);
		cr_expect(fabs(cf + cb + af + ab - (cf0 + cb0 + af0 + ab0)) <= 1e-9 * (cf0 + cb0),
		          "chunk %d: compute %g + alongside %g, plain %g + %g", x, cf + cb, af + ab,
		          cf0 + cb0, af0 + ab0);
		double talk_f = 0, talk_b = 0;
		int c = x < 2 ? x : x - 2, cb_model = f->pair < 2 ? f->pair : f->pair - 2;
		for (int i = e.part.first_op[c]; i < e.part.first_op[c + 1]; i++)
			talk_f += e.ops[i].comm_forward_s;
		for (int i = e.part.first_op[cb_model]; i < e.part.first_op[cb_model + 1]; i++)
			talk_b += e.ops[i].comm_backward_s;
		cr_expect(af - af0 > 0 && af - af0 <= fmin(cb0, talk_f) * (1 + 1e-9),
		          "chunk %d's forward hides %g s under %g s of compute (%g s of it)", x,
		          af - af0, cb0, talk_f);
		cr_expect(ab - ab0 >= 0 && ab - ab0 <= fmin(cf0, talk_b) * (1 + 1e-9),
		          "chunk %d's backward hides %g s under %g s of compute (%g s of it)",
		          f->pair, ab - ab0, cf0, talk_b);
	}
	cr_expect_gt(hidden_a2a, 0, "the expert all-to-alls run alongside compute");
	struct sim_result r = simulated(s, &prog);
	cr_expect_gt(r.iteration_s, 0);
}

/* Interleaved with v = 2 chunks per stage: the bubble time is (p-1)/v of
 * a micro-batch's time, 1.5 / (8 + 1.5). */
/* The gradient buckets under the interleaved schedule, by hand (the chain
 * on 4 NPUs: P = 2 stages of 2 (data parallel 2), v = 2 chunks of 4
 * MatMuls a stage, m = 4 micro-batches; ZeRO 0 with overlap_grad_reduce,
 * each weight its own bucket). Stage 0 ends "... B3.2 B2.0 B3.0"
 * (schedules_in_order): chunk 2's last backward, then micro-batch 2's and
 * 3's backwards of chunk 0. Each weight's all-reduce over the 2 ranks'
 * HCCS link (30 GB/s, 1 us) takes T = W / 30 GB/s + 2 us = 17.898 ms and
 * starts when its MatMul's backward (b = 2W / 1.2 TB/s = 0.895 ms) is
 * done, one after another: chunk 2's four from b, chunk 0's four behind
 * them, under 8 more backwards: exposed b + 8T - 12b = 8T - 11b = 133.33
 * ms. Walking the chunks' last backwards alone (before) gave 8T - 7b,
 * 3.6 ms more: the backward of micro-batch 2 through chunk 0 hides buckets
 * too. The simulation, which runs the schedule, meets the estimate. */
Test(pipeline, interleaved_buckets_run_under_the_last_group)
{
	const double T = W_BYTES / 30e9 + 2e-6, b = 2 * W_BYTES / 1.2e12;
	struct scenario *s = chain(SCHED_INTERLEAVED_1F1B, 2, 0);
	s->devices = 4;
	s->training.pipeline_stages = 2;
	s->training.global_batch = 8; /* the graph's batch of 2 split over 2 replicas: 4 steps */
	s->training.overlap_grad_reduce = true;
	struct plan *p = dp_plan(s);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_assert_eq(e.steps_per_iteration, 4, "%lld micro-batches", (long long)e.steps_per_iteration);
	double want = 8 * T - 11 * b, got = e.stages[0].gradient_s;
	cr_expect(fabs(got - want) <= 1e-4 * want, "stage 0: %.9g s, want %.9g s", got, want);
	simulated_as_estimated(s);
}

/* The updated parameters' gathers under the interleaved schedule, by hand
 * (the same chain, P = 2, v = 2, m = 4, ZeRO 1 with overlap_param_gather,
 * its reduce-scatters after the flush: overlap_grad_reduce false). Each
 * weight's reduce-scatter or all-gather over the 2 ranks takes r = W / 60
 * GB/s + 1 us = 8.949 ms; a chunk's forward of one micro-batch 4 x b/2 =
 * 2b. Stage 0 starts "F0.0 F1.0 F0.2": the gathers, chunk 0's four then
 * chunk 2's, run from the start; chunk 0's first forward waits 4r - 2b,
 * chunk 2's, two forwards later, 8r - (4r + 4b). The tail: 8 reduce-
 * scatters, 8r, then those waits: 16r - 6b = 137.82 ms (each chunk's
 * gathers beside its own first forward alone, before: 16r - 4b). The
 * simulation meets the estimate. */
Test(pipeline, interleaved_gathers_run_under_the_lower_chunks)
{
	const double r = W_BYTES / 60e9 + 1e-6, b = 2 * W_BYTES / 1.2e12;
	struct scenario *s = chain(SCHED_INTERLEAVED_1F1B, 2, 1);
	s->devices = 4;
	s->training.pipeline_stages = 2;
	s->training.global_batch = 8;
	s->training.overlap_grad_reduce = false;
	s->training.overlap_param_gather = true;
	struct plan *p = dp_plan(s);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	double want = 16 * r - 6 * b, got = e.stages[0].gradient_s;
	cr_expect(fabs(got - want) <= 1e-4 * want, "stage 0: %.9g s, want %.9g s", got, want);
	simulated_as_estimated(s);
}

Test(pipeline, interleaved_bubble_divides_by_v)
{
	bubble(SCHED_INTERLEAVED_1F1B, 2, 1.5 / 9.5);
}

/* ----------------------------------------------------------------- memory */

/* Stage 0 of the chain, 1F1B on one NPU per stage, by hand (fp16 model
 * state as Megatron-LM holds it: fp16 weights and gradients, fp32 master
 * weights, master gradients and two moments):
 *   parameters  4 x 536,870,912 B             =  2,147,483,648
 *   gradients   the same (fp16)               =  2,147,483,648
 *   Adam        4 x 268,435,456 x 16 B        = 17,179,869,184
 *   activations each MatMul keeps its input, 65,536 B, for its weight
 *               gradient: 4 per micro-batch, 4 micro-batches in flight on
 *               stage 0 of 4                  =      1,048,576
 *   buffers     no gradient to synchronise (one rank per stage): no
 *               bucket; send + receive of the 65,536 B boundary = 131,072
 *   reserve     atlas800-910a's memory_reserve_GB = 2,000,000,000
 *   total                                     = 23,476,016,128 */
Test(pipeline, memory_by_hand)
{
	struct plan *p = dp_plan(chain(SCHED_1F1B, 1, 0));
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	const struct est_memory *m = &e.stages[0].mem;
	cr_expect_eq(m->params, 2147483648.0);
	cr_expect_eq(m->grads, 2147483648.0);
	cr_expect_eq(m->optimizer, 17179869184.0);
	cr_expect_eq(m->activations, 1048576.0);
	cr_expect_eq(m->buffers, 131072.0, "%.0f", m->buffers);
	cr_expect_eq(m->reserve, 2e9, "%.0f", m->reserve);
	cr_expect_eq(m->total, 23476016128.0, "%.0f", m->total);
	cr_expect_eq(e.memory_bytes_per_device, 23476016128.0);
	/* Stage 3 holds one micro-batch in flight: its 4 MatMuls' inputs (the
	 * first is the input it received); GPipe holds all 8 everywhere. */
	cr_expect_eq(e.stages[3].mem.activations, 4 * ACT);
	cr_expect_eq(e.stages[3].in_flight, 1);
	p = dp_plan(chain(SCHED_GPIPE, 1, 0));
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_expect_eq(e.stages[0].mem.activations, 8 * 4 * ACT);
	cr_expect_eq(e.stages[3].mem.activations, 8 * 4 * ACT);
}

/* Two data-parallel replicas per stage (8 NPUs): every W replicated over
 * 2. ZeRO 1 halves the Adam state (16 B per fp16 parameter), 2 also the gradients, 3 also the
 * parameters (and gathers the largest op's W twice over: current and
 * prefetched). */
Test(pipeline, zero_memory_by_hand)
{
	static const struct {
		int zero;
		double params, grads, opt, zero3_buf;
	} want[] = {
		{0, 4 * W_BYTES, 4 * W_BYTES, 4 * W_ELEMS * 16, 0},
		{1, 4 * W_BYTES, 4 * W_BYTES, 4 * W_ELEMS * 16 / 2, 0},
		{2, 4 * W_BYTES, 4 * W_BYTES / 2, 4 * W_ELEMS * 16 / 2, 0},
		{3, 4 * W_BYTES / 2, 4 * W_BYTES / 2, 4 * W_ELEMS * 16 / 2, 2 * W_BYTES},
	};
	for (size_t k = 0; k < sizeof want / sizeof want[0]; k++) {
		struct scenario *s = chain(SCHED_1F1B, 1, want[k].zero);
		s->devices = 8;
		struct plan *p = dp_plan(s);
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D));
		const struct est_memory *m = &e.stages[0].mem;
		cr_expect_eq(m->params, want[k].params, "ZeRO %d params %.0f", want[k].zero, m->params);
		cr_expect_eq(m->grads, want[k].grads, "ZeRO %d grads %.0f", want[k].zero, m->grads);
		cr_expect_eq(m->optimizer, want[k].opt, "ZeRO %d Adam %.0f", want[k].zero, m->optimizer);
		/* buffers: a 25 MiB bucket (the stage synchronises 4 W of 512 MiB),
		 * the boundary's send and receive of half the batch (32,768 B
		 * each), ZeRO-3's gathered W twice */
		double buf = 25.0 * 1024 * 1024 + 2 * ACT / 2 + want[k].zero3_buf;
		cr_expect_eq(m->buffers, buf, "ZeRO %d buffers %.0f, want %.0f", want[k].zero,
		             m->buffers, buf);
	}
}

/* What stage 0 of s's data-parallel plan does in the parameters' phase
 * over an iteration: the bytes each device sends in its all-gathers
 * ((n-1)/n x S each), the gathers, and its compute steps on stream 0 (the
 * zero fills of DeepSpeed 2021) and on stream 1 (their list copies). */
struct param_steps {
	double sent;
	int gathers, fills, copies;
};

static struct param_steps stage0_param_steps(struct scenario *s)
{
	struct program prog;
	cr_assert(plan_lower(A, dp_plan(s), 25 << 20, &prog, &D));
	const struct prog_stage *st = &prog.stages[0];
	struct param_steps r = {0};
	for (int k = 0; k < st->n_slots; k++) {
		const struct prog_chunk *c = &prog.chunks[st->slots[k].chunk];
		int from = st->slots[k].backward ? c->bwd : c->fwd;
		int n = st->slots[k].backward ? c->n_bwd : c->n_fwd;
		for (int i = from; i < from + n; i++) {
			const struct prog_step *x = &prog.steps[i];
			if (x->phase != PHASE_PARAMS)
				continue;
			if (x->kind == PROG_COLLECTIVE) {
				cr_expect_eq(x->coll, STEP_ALLGATHER);
				r.sent += (x->groups.size - 1.0) / x->groups.size * x->bytes;
				r.gathers++;
			} else if (x->kind == PROG_COMPUTE) {
				r.fills += x->stream == 0;
				r.copies += x->stream == 1;
			}
		}
	}
	return r;
}

/* ZeRO-3's parameter traffic per iteration on one device of stage 0: each
 * of its 4 W gathered over the 2 replicas before every forward and every
 * backward, (n-1)/n x S with S = 536,870,912 B: 2 x 8 x 4 x 1/2 x S =
 * 32 S = 17,179,869,184 B. */
Test(pipeline, zero3_parameter_traffic)
{
	struct scenario *s = chain(SCHED_1F1B, 1, 3);
	s->devices = 8;
	struct param_steps r = stage0_param_steps(s);
	cr_expect_eq(r.sent, 32 * W_BYTES, "%.0f B", r.sent);
	cr_expect_eq(r.fills + r.copies, 0);
}

/* The chain's stage 0 under ZeRO-3 (its 4 MatMuls alike): an op's gather
 * G (its gather_s is 2 G, forward and backward), its gradient's
 * reduce-scatter R, its forward Cf and backward Cb; the gathers and the
 * reduce-scatters outlast the MatMuls. */
static void stage0_chain_figures(const struct estimate *e, double *G, double *R, double *Cf,
                                 double *Cb)
{
	int lo = e->part.first_op[0], hi = e->part.first_op[1], n = 0;
	for (int i = lo; i < hi; i++) {
		const struct est_op *o = &e->ops[i];
		if (o->gather_s <= 0)
			continue;
		n++;
		*G = o->gather_s / 2;
		*R = o->gradient_s;
		*Cf = o->compute_forward_s + o->comm_forward_s;
		*Cb = o->compute_backward_s + o->comm_backward_s;
	}
	cr_assert_eq(n, 4);
	cr_assert_gt(*G, *Cf);
	cr_assert_gt(*R, *Cb);
}

/* The simulation of the chain's ZeRO-3 program: the gathers handed to
 * stream 1 (every micro-batch) and the waits for them, counted over the
 * program, and the iteration within 3% of the estimate's, the tolerance
 * of the other overlap checks (tests/sim/test_lower.c). */
static void zero3_chain_simulated(struct scenario *s, int want_on_s1, int want_waits)
{
	struct plan *p = dp_plan(s);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	struct program prog;
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
	int on_s1 = 0, waits = 0;
	for (int k = 0; k < prog.n_steps; k++) {
		on_s1 += prog.steps[k].phase == PHASE_PARAMS && prog.steps[k].stream == 1 &&
		         prog.steps[k].every_micro;
		waits += prog.steps[k].wait_s1;
	}
	cr_expect_eq(on_s1, want_on_s1);
	cr_expect_eq(waits, want_waits);
	struct sim_result r = simulated(s, &prog);
	cr_expect(fabs(r.iteration_s - e.iteration_s) <= 0.03 * e.iteration_s,
	          "simulated %.6g s, estimated %.6g s", r.iteration_s, e.iteration_s);
}

/* ZeRO-3's prefetch, one stage of the chain (4 MatMuls, each its own W
 * of 536,870,912 B) over 2 replicas, per micro-batch. Each op's gather
 * takes G (its gather_s is 2 G, forward and backward), its gradient's
 * reduce-scatter R (its bucket alone), its forward Cf, its backward Cb;
 * on 2 NPUs of a 910A the gathers of 512 MiB outlast the MatMuls of a
 * 2-row batch by far. Forward: the first gather exposed, each of the 3
 * others issued when the op before starts: G + 3 (G - Cf). Backward (ops
 * in reverse): the first gather exposed; the second waits for its gather
 * alone (no bucket completed yet): G - Cb; the third and fourth for the
 * bucket completed before and their gather: 2 (R + G - Cb); the last
 * bucket handed at the end behind the one before: (R - Cb) + R. In all
 * 8 G + 4 R - 3 Cf - 4 Cb of exposed communication a micro-batch, where
 * it was 8 G + 4 R before prefetch. */
Test(pipeline, zero3_prefetch_hides_gathers_under_the_previous_op)
{
	struct scenario *s = chain(SCHED_1F1B, 1, 3);
	s->devices = 8;
	struct plan *p = dp_plan(s);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	double G, R, Cf, Cb;
	stage0_chain_figures(&e, &G, &R, &Cf, &Cb);
	double m = (double)e.steps_per_iteration;
	double want = 8 * G + 4 * R - 3 * Cf - 4 * Cb;
	double got = (e.category_s[EST_PARAM_GATHER] + e.category_s[EST_GRADIENT_SYNC]) / m;
	cr_expect(fabs(got - want) <= 1e-9 * want, "exposed %.12g s a micro-batch, want %.12g", got,
	          want);
	/* the gathers' part: forward 4 G - 3 Cf, backward G + (G - Cb) and
	 * G/(R+G) of the two intervals with a bucket */
	double g = 4 * G - 3 * Cf + 2 * G - Cb + 2 * (R + G - Cb) * G / (R + G);
	cr_expect(fabs(e.category_s[EST_PARAM_GATHER] / m - g) <= 1e-9 * g);
}

/* The simulation runs ZeRO-3's gathers and reduce-scatters on the second
 * stream in the order the estimate's walk assumes (the waits before each
 * op's compute): the iteration agrees with the estimate within 3%, the
 * tolerance of the other overlap checks (tests/sim/test_lower.c; here
 * 2.2%, the simulation the faster). */
Test(pipeline, zero3_prefetch_simulated_as_estimated)
{
	struct scenario *s = chain(SCHED_1F1B, 1, 3);
	s->devices = 8;
	/* per stage: 4 gathers forward and 4 backward; a wait before each of
	 * the 8 computes and one at the end of the backward */
	zero3_chain_simulated(s, 4 * 8, 4 * 9);
}

/* The chain as transformer layers of two MatMuls each ("layers.N." names:
 * ops 2k and 2k+1 the layer k), its ZeRO-3 run as PyTorch FSDP and
 * Megatron-FSDP run it (zero3_impl "fsdp"): a layer's parameters gathered
 * as one unit. */
static struct scenario *chain_fsdp(void)
{
	static const char *const names[16] = {
		"layers.0.a", "layers.0.b", "layers.1.a", "layers.1.b", "layers.2.a", "layers.2.b",
		"layers.3.a", "layers.3.b", "layers.4.a", "layers.4.b", "layers.5.a", "layers.5.b",
		"layers.6.a", "layers.6.b", "layers.7.a", "layers.7.b"};
	struct scenario *s = chain(SCHED_1F1B, 1, 3);
	s->devices = 8;
	s->training.zero3_impl = ZERO3_FSDP;
	struct graph *g = (struct graph *)s->graph;
	cr_assert_eq(g->n_ops, 16);
	for (int i = 0; i < 16; i++)
		g->ops[i].name = (char *)names[i];
	return s;
}

/* The same stage under FSDP: its 4 MatMuls two layers of 2, each layer's
 * gathers (2 G) issued together. Forward: the first layer's exposed, the
 * second's issued when the first is reached and run under its 2 MatMuls:
 * 2 G + (2 G - 2 Cf). Backward (layers in reverse): the last layer's 2 G
 * exposed; the first's issued when the last is reached, with no bucket
 * completed yet: 2 G - 2 Cb; the two buckets the last layer completed
 * handed then, behind it, and the first layer's two at the end: (2 R -
 * 2 Cb) + 2 R. In all 8 G + 4 R - 2 Cf - 4 Cb a micro-batch, the gathers'
 * part 8 G - 2 Cf - 2 Cb (each op gathered alone: 8 G + 4 R - 3 Cf -
 * 4 Cb; in this chain the gathers outlast the MatMuls, so an op's
 * prefetch hides more than a layer's). cost_zero3_unit names the units:
 * the layer under "fsdp", none under "collectives". */
Test(pipeline, fsdp_gathers_a_layer_at_a_time)
{
	struct scenario *s = chain_fsdp();
	cr_expect_eq(cost_zero3_unit(s->graph, &s->training, 3), 1);
	s->training.zero3_impl = ZERO3_COLLECTIVES;
	cr_expect_eq(cost_zero3_unit(s->graph, &s->training, 3), -1);
	s->training.zero3_impl = ZERO3_FSDP;
	struct plan *p = dp_plan(s);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	double G, R, Cf, Cb;
	stage0_chain_figures(&e, &G, &R, &Cf, &Cb);
	double m = (double)e.steps_per_iteration;
	double want = 8 * G + 4 * R - 2 * Cf - 4 * Cb;
	double got = (e.category_s[EST_PARAM_GATHER] + e.category_s[EST_GRADIENT_SYNC]) / m;
	cr_expect(fabs(got - want) <= 1e-9 * want, "exposed %.12g s a micro-batch, want %.12g", got,
	          want);
	double g = 8 * G - 2 * Cf - 2 * Cb;
	cr_expect(fabs(e.category_s[EST_PARAM_GATHER] / m - g) <= 1e-9 * g);
}

/* The simulation gathers a layer's parameters together too (a wait
 * before each layer's first MatMul, none before its second): 4 gathers
 * forward and 4 backward a stage as before, 4 waits where each op had
 * its own (9), and the iteration the estimate's within 3%. */
Test(pipeline, fsdp_simulated_as_estimated)
{
	/* per stage: 2 waits forward, 2 backward and one at the end */
	zero3_chain_simulated(chain_fsdp(), 4 * 8, 4 * 5);
}

/* ZeRO 2: every micro-batch's reduce-scatters on the second stream, which
 * nothing waits for before the flush; the estimate's backlog (the
 * buckets of a micro-batch of this chain outlast it: 512 MiB over 2 NPUs
 * against MatMuls of 2 rows) agrees with the simulation. */
Test(pipeline, zero2_reduce_scatters_queue_on_the_second_stream)
{
	struct scenario *s = chain(SCHED_1F1B, 1, 2);
	s->devices = 8;
	simulated_as_estimated(s);
}

/* Full recomputation redoes every forward in backward. The chain has no
 * transformer layers, so each stage's chunk is one block: per micro-batch
 * it keeps the block's input (65,536 B), 4 micro-batches in flight on
 * stage 0, and while the block is recomputed its 4 MatMuls' inputs. */
Test(pipeline, full_recompute)
{
	struct scenario *s = chain(SCHED_1F1B, 1, 0);
	s->training.recompute = RECOMPUTE_FULL;
	struct plan *p = dp_plan(s);
	struct estimate e, base;
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_assert(plan_estimate(A, dp_plan(chain(SCHED_1F1B, 1, 0)), &base, &D));
	cr_expect_eq(e.stages[0].mem.activations, 4 * ACT + 4 * ACT);
	cr_expect(fabs(e.category_s[EST_RECOMPUTE] - base.category_s[EST_COMPUTE_FORWARD]) <=
	          1e-12 * base.category_s[EST_COMPUTE_FORWARD]);
}

/* torchtitan's per-op policy (recompute "op") on the 1-layer GPT of
 * tests/data/good/korthikanti-gpt-8p.json on one GPU: the backward redoes
 * every op of the layer but its 1st, 3rd and 5th MatMuls (q, v and fc1:
 * every second aten.mm kept, counted from one), each at its forward's
 * time, and nothing outside the layer; the simulation redoes the same
 * ops (the iteration within the estimate's 3%), and its peak memory is
 * the estimate's. */
Test(pipeline, op_policy_recomputes_all_but_every_second_matmul)
{
	struct scenario *s = fixture_scenario("tests/data/good/korthikanti-gpt-8p.json");
	s->devices = 1;
	s->training.recompute = RECOMPUTE_OP;
	struct plan *p = dp_plan(s);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	static const char *const kept[] = {"layers.0.attn.q.matmul", "layers.0.attn.v.matmul",
	                                   "layers.0.mlp.fc1.matmul"};
	double sum = 0;
	int redone = 0;
	for (int i = 0; i < p->graph->n_ops; i++) {
		const char *name = p->graph->ops[i].name;
		bool keep = strncmp(name, "layers.0.", 9) != 0;
		for (size_t k = 0; k < sizeof kept / sizeof kept[0]; k++)
			keep = keep || !strcmp(name, kept[k]);
		double want = keep ? 0 : e.ops[i].compute_forward_s + e.ops[i].comm_forward_s;
		cr_expect(fabs(e.ops[i].recompute_s - want) <= 1e-15, "%s: recompute %g s, want %g s",
		          name, e.ops[i].recompute_s, want);
		sum += e.ops[i].recompute_s;
		redone += !keep && p->graph->ops[i].kind == OP_MATMUL;
	}
	cr_expect_eq(redone, 3, "k, out and fc2 redone");
	cr_expect(sum > 0);
	struct program prog;
	cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
	struct sim_result r = simulated(s, &prog);
	cr_expect(fabs(r.iteration_s - e.iteration_s) <= 0.03 * e.iteration_s,
	          "simulated %.6g s, estimated %.6g s", r.iteration_s, e.iteration_s);
	expect_peaks_are_estimates(&e, &r, &prog, "op");
}

/* Selective recomputation redoes the attention core: the scores
 * BatchMatMul, the Softmax and the dropout after it, not the context
 * BatchMatMul that ends it nor anything else (Korthikanti et al. 2022). */
Test(pipeline, attention_core_is_what_selective_recomputes)
{
	struct scenario *s = fixture_scenario("scenarios/megatron-attention-8p.json");
	bool *core = plan_attention_core(A, s->graph);
	cr_assert_not_null(core);
	int n = 0;
	for (int i = 0; i < s->graph->n_ops; i++) {
		const char *name = s->graph->ops[i].name;
		bool want = strstr(name, "scores") || strstr(name, "softmax") ||
		            strstr(name, "probs_dropout");
		cr_expect_eq(core[i], want, "%s", name);
		n += core[i];
	}
	cr_expect_eq(n, 3);
}

/* ------------------------------------------------------------ partition */

/* GPT-3 175B (scenarios/gpt3-175b-1024p.json: TP 8 in each DGX A100, 128
 * ranks a stage) on 8 stages of 6 chunks (interleaved), 2 of its 96 layers
 * a chunk. At the layer boundaries only the residual stream crosses,
 * [1, 2048, 12288] bf16 = 50,331,648 B per rank (micro-batch 1 per
 * replica); one op into the MLP (after ln2) its input is live too, twice
 * that. Cut at layer boundaries the last chunk holds the logits beside
 * its two layers, about 15% above a 48th of the model; cut after ln2 the
 * chunks balance, but every send doubles: 2 x 50,331,648 B over a 23.5
 * GB/s NIC is 4.3 ms more per cut and direction, against a chunk of
 * about 34 ms. The partition weighs the sends: every chunk but the first
 * starts at a layer's ln1 and hands on the residual stream alone. */
Test(pipeline, partition_weighs_the_sends_at_its_cuts)
{
	struct scenario *s = fixture_scenario("scenarios/gpt3-175b-1024p.json");
	s->training.schedule = SCHED_INTERLEAVED_1F1B;
	s->training.virtual_stages = 6;
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron(A, s, &o, &D);
	cr_assert_not_null(p);
	p->whole_layers = false; /* the cost-balanced split (megatron's own: below) */
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	const struct plan_part *pp = &e.part;
	cr_assert_eq(pp->n_chunks, 48);
	for (int c = 1; c < pp->n_chunks; c++) {
		const char *name = p->graph->ops[pp->first_op[c]].name;
		size_t len = strlen(name);
		cr_expect(len > 4 && !strcmp(name + len - 4, ".ln1"), "chunk %d starts at %s", c,
		          name);
		cr_expect_eq(pp->send_bytes[c - 1], 2048.0 * 12288 * 2, "chunk %d sends %g B", c - 1,
		             pp->send_bytes[c - 1]);
		/* the residual stream is replicated over the tensor-parallel 8:
		 * Megatron's scatter/gather sends an eighth from each */
		cr_expect_eq(pp->send_split[c - 1], 8);
		cr_expect_eq(pp->send_groups[c - 1].size, 8);
	}
	/* Stage 0 to stage 1 (ranks 0 and 128, servers 0 and 16 under leaves
	 * 0 and 6: NIC + leaf + spine + leaf + NIC = 0.6 + 3 x 0.3 + 0.6 =
	 * 2.1 us): 50,331,648 / 8 B over the 23.5 GB/s NIC = 267.72 us; then
	 * the all-gather of 50,331,648 B over the 8 GPUs of the server by
	 * NCCL's ring with Simple (7 steps of 1 us + 8.4 + 7 x 3.4 us +
	 * 7/8 S / 230.1 GB/s = 7 + 32.2 + 191.39 us; LL128 would take 238.3,
	 * LL far more): 500.4 us in all, against 2.144 ms for the whole
	 * tensor over one NIC. */
	double S = 2048.0 * 12288 * 2;
	double want = 2.1e-6 + S / 8 / 23.5e9 + (7 + 8.4 + 7 * 3.4) * 1e-6 + 0.875 * S / 230.1e9;
	double got = cost_part_send_s(s->topo, pp, 0, 0, 128, COLL_AUTO);
	cr_expect(fabs(got - want) <= 1e-3 * want, "scatter/gather send: got %.9g, want %.9g", got,
	          want);
}

/* The same cuts with training.pipeline_scatter_gather false (DeepSpeed's
 * pipeline engine, deepspeed/runtime/pipe/engine.py _exec_send_activations:
 * every rank sends its whole copy): nothing split, nothing gathered, and
 * stage 0 to stage 1 is the whole 50,331,648 B over one 23.5 GB/s NIC
 * after the 2.1 us path: 2.1 us + 2.1418 ms = 2.1439 ms, where the
 * scattered send above takes 500.4 us. */
Test(pipeline, whole_sends_without_scatter_gather)
{
	struct scenario *s = fixture_scenario("scenarios/gpt3-175b-1024p.json");
	s->training.schedule = SCHED_INTERLEAVED_1F1B;
	s->training.virtual_stages = 6;
	s->training.whole_sends = true;
	struct estimate e;
	megatron_estimated(s, &e);
	const struct plan_part *pp = &e.part;
	cr_assert_eq(pp->n_chunks, 48);
	for (int c = 1; c < pp->n_chunks; c++) {
		cr_expect_eq(pp->send_bytes[c - 1], 2048.0 * 12288 * 2);
		cr_expect_eq(pp->send_split[c - 1], 1, "chunk %d's send split", c - 1);
	}
	double S = 2048.0 * 12288 * 2;
	double want = 2.1e-6 + S / 23.5e9;
	double got = cost_part_send_s(s->topo, pp, 0, 0, 128, COLL_AUTO);
	cr_expect(fabs(got - want) <= 1e-3 * want, "whole send: got %.9g, want %.9g", got, want);
}

/* Whole sends and Megatron's scattered ones, simulated: a GPT of hidden
 * 1,024 (4 layers, sequence 1,024, micro-batch 4) at TP 2 and PP 2 across
 * two DGX A100 servers (ranks 0-7 and 8-15; 16 devices, DP 4): each
 * stage's output, [4, 1024, 1024] bf16 = 8 MiB a rank, replicated over
 * the TP pair, crosses servers. The simulation takes the same split as
 * the estimate (sim/lower.c reads it) and agrees within the 3% the other
 * comparisons allow, both ways; whole sends move twice the bytes over a
 * NIC a pair and gather nothing, and the estimate says by how much. */
Test(pipeline, whole_sends_simulated_as_estimated)
{
	for (int whole = 0; whole < 2; whole++) {
		struct scenario *s = fixture_generated(
		    A, &D,
		    "{\"kind\": \"gpt\", \"hidden\": 1024, \"layers\": 4, \"heads\": 8,"
		    " \"seq\": 1024, \"vocab\": 1024, \"micro_batch\": 4, \"dtype\": \"bf16\"}",
		    "dgx-a100-x128", 16,
		    "{\"global_batch\": 32, \"pipeline_stages\": 2, \"tensor_parallel\": 2}");
		s->training.whole_sends = whole;
		struct estimate e;
		struct plan *p = megatron_estimated(s, &e);
		cr_expect_eq(e.part.send_split[0], whole ? 1 : 2, "whole %d", whole);
		struct program prog;
		cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
		struct sim_result r = simulated(s, &prog);
		cr_expect(fabs(r.iteration_s - e.iteration_s) <= 0.03 * e.iteration_s,
		          "whole %d: simulated %.6g s, estimated %.6g s", whole, r.iteration_s,
		          e.iteration_s);
	}
}

/* A 4-layer GPT of hidden 256, vocabulary 32,768 and sequence 128, bf16,
 * on p GPUs of one DGX H100 in p stages of v chunks (global batch 12),
 * its head tied to the word embedding or not. */
static struct scenario *small_gpt(int p, int v, bool tied)
{
	char gen[512], tr[256];
	snprintf(gen, sizeof gen,
	         "{\"kind\": \"gpt\", \"hidden\": 256, \"layers\": 4, \"heads\": 4,"
	         " \"seq\": 128, \"vocab\": 32768, \"micro_batch\": 1, \"dtype\": \"bf16\","
	         " \"tie_embeddings\": %s}",
	         tied ? "true" : "false");
	snprintf(tr, sizeof tr,
	         "{\"global_batch\": 12, \"pipeline_stages\": %d, \"virtual_stages\": %d,"
	         " \"schedule\": \"%s\"}",
	         p, v, v > 1 ? "interleaved-1f1b" : "1f1b");
	return fixture_generated(A, &D, gen, "dgx-h100", p, tr);
}

/* An untied model whose multi-token prediction module looks its tokens
 * up in the main model's embedding (DeepSeek-V3, section 2.2) shares the
 * table between the first stage and the last, where the module is:
 * Megatron-Core's _allreduce_word_embedding_grads sums it when
 * mtp_num_layers is set even without share_embeddings_and_output_weights.
 * A 4-layer LLaMA of hidden 256, vocabulary 32,768, one prediction depth,
 * on 4 stages of one GPU, a layer each (first_stage_layers and
 * last_stage_layers 1: the module with the last stage, as
 * scenarios/deepseek-v3-h100-2048p.json splits it): 32,768 x 256 fp32 gradients = 33,554,432 B
 * each way between stages 0 and 3 under 1F1B; the head it shares with
 * the main model is on stage 3 with it (nothing more); without the module
 * nothing. Under DualPipe stages 0 and 3 are on the same GPUs: nothing
 * sent, the 33,554,432 B kept as one (tied_local_bytes). */
Test(pipeline, mtp_shares_the_embedding_untied)
{
	const double S = 32768.0 * 256 * 4;
	static const struct {
		int mtp;
		const char *schedule;
		double sent, local;
	} cases[] = {{1, "1f1b", 1, 0}, {0, "1f1b", 0, 0}, {1, "dualpipe", 0, 1}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char gen[512], tr[256];
		snprintf(gen, sizeof gen,
		         "{\"kind\": \"llama\", \"hidden\": 256, \"layers\": 4, \"heads\": 4,"
		         " \"seq\": 128, \"vocab\": 32768, \"micro_batch\": 1, \"dtype\": \"bf16\","
		         " \"mtp_layers\": %d}",
		         cases[k].mtp);
		snprintf(tr, sizeof tr,
		         "{\"global_batch\": 8, \"pipeline_stages\": 4, \"schedule\": \"%s\","
		         " \"first_stage_layers\": 1, \"last_stage_layers\": 1}",
		         cases[k].schedule);
		struct scenario *s = fixture_generated(A, &D, gen, "dgx-h100", 4, tr);
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct plan *p = plan_megatron(A, s, &o, &D);
		cr_assert_not_null(p);
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D));
		for (int st = 0; st < 4; st++) {
			bool end = st == 0 || st == 3;
			cr_expect_eq(e.stages[st].tied_bytes, end ? cases[k].sent * S : 0,
			             "case %zu stage %d: %.0f B", k, st, e.stages[st].tied_bytes);
			cr_expect_eq(e.stages[st].tied_local_bytes, end ? cases[k].local * S : 0,
			             "case %zu stage %d: %.0f B", k, st, e.stages[st].tied_local_bytes);
		}
	}
}

/* Layers that do not divide over the stages are still cut between whole
 * layers, through the estimate's own op costs (no framework cuts inside a
 * layer: Megatron-LM takes the first and last stages' counts, DeepSpeed's
 * PipelineModule partitions its list of layers). A 7-layer GPT of hidden
 * 256 and vocabulary 128 (its head a small fraction of a layer) on 3
 * stages: 3 + 2 + 2 layers in some order, the largest ceil(7 / 3) = 3,
 * every chunk but the first starting at a layer's ln1.
 * (uneven_whole_layers_by_hand below checks heavier ends with costs set by
 * hand.) */
Test(pipeline, megatron_cuts_uneven_layers_between_whole_layers)
{
	struct scenario *s = fixture_generated(
	    A, &D,
	    "{\"kind\": \"gpt\", \"hidden\": 256, \"layers\": 7, \"heads\": 4,"
	    " \"seq\": 128, \"vocab\": 128, \"micro_batch\": 1, \"dtype\": \"bf16\"}",
	    "dgx-h100", 3, "{\"global_batch\": 6, \"pipeline_stages\": 3}");
	struct estimate e;
	struct plan *p = megatron_estimated(s, &e);
	const struct plan_part *pp = &e.part;
	cr_assert_eq(pp->n_chunks, 3);
	cr_expect_eq(pp->first_op[0], 0);
	int total = 0, largest = 0, n[3] = {0};
	for (int c = 0; c < 3; c++) {
		const char *name = p->graph->ops[pp->first_op[c]].name;
		size_t len = strlen(name);
		if (c > 0)
			cr_expect(len > 4 && !strcmp(name + len - 4, ".ln1"), "chunk %d starts at %s", c,
			          name);
		for (int i = pp->first_op[c]; i < pp->first_op[c + 1]; i++) {
			const char *op = p->graph->ops[i].name;
			size_t l = strlen(op);
			n[c] += l > 4 && !strcmp(op + l - 4, ".ln1");
		}
		total += n[c];
		largest = n[c] > largest ? n[c] : largest;
	}
	cr_expect_eq(total, 7);
	cr_expect_eq(largest, 3, "%d %d %d", n[0], n[1], n[2]);
}

/* The layers that op range [from, to) starts (its ".ln1" ops). */
static int layers_from(const struct graph *g, int from, int to)
{
	int n = 0;
	for (int i = from; i < to; i++) {
		size_t l = strlen(g->ops[i].name);
		n += l > 4 && !strcmp(g->ops[i].name + l - 4, ".ln1");
	}
	return n;
}

/* The uneven whole-layer split by hand: plan_partition with op costs the
 * test sets, 1 on each layer's attention Softmax, `embed` on op 0 (the
 * word embedding), `head` on the last op (the loss), 0 elsewhere, so a
 * chunk costs its layers plus the ends it holds. 7 layers over 3 chunks
 * (L = a + b + c, costs embed + a, b, c + head): without ends the dearest
 * chunk holds ceil(7 / 3) = 3 layers, cost 3; a head of 2 layers' cost
 * leaves the last chunk 1 layer (3, 3, 1 + 2: 3 each, the only split of
 * dearest 3); ends of 1.5 each give them 2 layers and the middle 3 (3.5,
 * 3, 3.5; 3 + 2 + 2 costs 4.5, 2 + 2 + 3 costs 4.5, 1 + 4 + 2 costs 4).
 * A multi-token prediction module's layer (a LLaMA of 4 layers and one
 * depth, its Softmax costing 1 too) is no layer of the split: it stays in
 * the last chunk with the decoder's last layer (Megatron-Core puts it on
 * the last stage), 2 + 1 + (1 + 1), not the 2 + 2 + 1 that would give it
 * a chunk of its own. Every chunk but the first starts at a layer's ln1. */
Test(pipeline, uneven_whole_layers_by_hand)
{
	static const struct {
		const char *kind;
		int mtp;
		double embed, head, dearest;
		int layers[3]; /* 0: any split whose dearest chunk is `dearest` */
	} cases[] = {
	        {"gpt", 0, 0, 0, 3, {0}},
	        {"gpt", 0, 0, 2, 3, {3, 3, 1}},
	        {"gpt", 0, 1.5, 1.5, 3.5, {2, 3, 2}},
	        {"llama", 1, 0, 0, 2, {2, 1, 2}},
	};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char gen[512];
		snprintf(gen, sizeof gen,
		         "{\"kind\": \"%s\", \"hidden\": 64, \"layers\": %d, \"heads\": 4,"
		         " \"seq\": 64, \"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"%s}",
		         cases[k].kind, cases[k].mtp ? 4 : 7, cases[k].mtp ? ", \"mtp_layers\": 1" : "");
		struct scenario *s = fixture_generated(A, &D, gen, "dgx-h100", 3,
		                                       "{\"global_batch\": 6, \"pipeline_stages\": 3}");
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct plan *p = plan_megatron(A, s, &o, &D);
		cr_assert_not_null(p);
		cr_assert(p->whole_layers);
		const struct graph *g = p->graph;
		int n = g->n_ops;
		double *cost = arena_calloc(A, (size_t)n, sizeof(double));
		cr_assert_not_null(cost);
		for (int i = 0; i < n; i++)
			cost[i] = g->ops[i].kind == OP_SOFTMAX && !strstr(g->ops[i].name, "router");
		cost[0] += cases[k].embed;
		cost[n - 1] += cases[k].head;
		size_t notes = D.count;
		struct plan_part pp;
		cr_assert(plan_partition(A, p, cost, &pp, &D));
		cr_expect_gt(D.count, notes, "case %zu: a note that the layers do not divide", k);
		cr_assert_eq(pp.n_chunks, 3);
		cr_expect_eq(pp.first_op[0], 0);
		cr_expect_eq(pp.first_op[3], n);
		double dearest = 0;
		for (int c = 0; c < 3; c++) {
			int from = pp.first_op[c], to = pp.first_op[c + 1];
			const char *name = g->ops[from].name;
			size_t len = strlen(name);
			if (c > 0)
				cr_expect(len > 4 && !strcmp(name + len - 4, ".ln1"),
				          "case %zu: chunk %d starts at %s", k, c, name);
			double x = 0;
			for (int i = from; i < to; i++)
				x += cost[i];
			dearest = x > dearest ? x : dearest;
			if (cases[k].layers[0])
				cr_expect_eq(layers_from(g, from, to), cases[k].layers[c],
				             "case %zu chunk %d", k, c);
		}
		cr_expect_float_eq(dearest, cases[k].dearest, 1e-12, "case %zu", k);
		for (int i = 0; cases[k].mtp && i < n; i++)
			if (!strncmp(g->ops[i].name, "mtp.", 4) || !strncmp(g->ops[i].name, "layers.4.", 9))
				cr_expect_geq(i, pp.first_op[2], "case %zu: %s in the last chunk", k,
				              g->ops[i].name);
	}
}

/* Megatron-LM's own split (the megatron planner's plans): the same number
 * of whole layers in every chunk, the embedding in the first and the final
 * norm, head and loss in the last, however that weighs them. A 4-layer GPT
 * of hidden 256 and vocabulary 32,768 has a head of 2 s h V FLOPs, about
 * ten layers' worth (V / 12h = 10.7 of 24 s h^2 (1 + s/6h)): a split by
 * cost would leave the last stage the head alone. On 4 stages chunk c
 * starts at layer c's ln1 (chunk 0 at the embedding, op 0) and the last
 * runs to the loss; 2 stages of 2 chunks (interleaved) alike; 2 stages,
 * layer 2's. 2 x 3 = 6 chunks do not divide 4 layers: a note, and the
 * cost-balanced cuts. */
Test(pipeline, megatron_cuts_whole_layers)
{
	static const struct {
		int p, v, layers_per_chunk;
	} cases[] = {{4, 1, 1}, {2, 2, 1}, {2, 1, 2}, {2, 3, 0}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct scenario *s = small_gpt(cases[k].p, cases[k].v, true);
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct plan *p = plan_megatron(A, s, &o, &D);
		cr_assert_not_null(p);
		cr_assert(p->whole_layers);
		size_t notes = D.count;
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D));
		const struct plan_part *pp = &e.part;
		cr_assert_eq(pp->n_chunks, cases[k].p * cases[k].v);
		cr_expect_eq(pp->first_op[0], 0);
		cr_expect_eq(pp->first_op[pp->n_chunks], p->graph->n_ops);
		if (!cases[k].layers_per_chunk) {
			cr_expect_gt(D.count, notes, "a note that 4 layers do not divide into 6 chunks");
			continue;
		}
		for (int c = 1; c < pp->n_chunks; c++) {
			char want[64];
			snprintf(want, sizeof want, "layers.%d.ln1", c * cases[k].layers_per_chunk);
			cr_expect_str_eq(p->graph->ops[pp->first_op[c]].name, want, "P %d v %d chunk %d",
			                 cases[k].p, cases[k].v, c);
		}
	}
}

/* A head tied to the word embedding: Megatron-LM keeps the table on the
 * first stage and a copy on the last, and after the flush all-reduces
 * their gradients over the two (its embedding group). On 4 stages of one
 * GPU, the table is 32,768 x 256 elements with fp32 gradients (bf16
 * weights): 33,554,432 B, and the all-reduce of two ranks moves all of it
 * each way (2(k-1)/k = 1). GPU 0 to GPU 3 through the NVSwitch: 1 us +
 * S / (450 GB/s x 0.817). Stages 1 and 2 share nothing. Interleaved, 2
 * stages x 2 chunks: the head's chunk 3 is on stage 1, so stages 0 and 1
 * exchange. Untied: nothing to sum. The simulation runs the exchange in
 * the stages' tails, before the optimizer, on its own channels. */
Test(pipeline, tied_embedding_gradients_by_hand)
{
	const double S = 32768.0 * 256 * 4;
	const double want_s = 1e-6 + S / (450e9 * 0.817);
	static const struct {
		int p, v;
		bool tied;
		int a, b;  /* the stages that exchange; -1: none */
	} cases[] = {{4, 1, true, 0, 3}, {2, 2, true, 0, 1}, {4, 1, false, -1, -1}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct scenario *s = small_gpt(cases[k].p, cases[k].v, cases[k].tied);
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct plan *p = plan_megatron(A, s, &o, &D);
		cr_assert_not_null(p);
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D));
		for (int st = 0; st < e.n_stages; st++) {
			const struct est_stage *es = &e.stages[st];
			bool in = st == cases[k].a || st == cases[k].b;
			int other = st == cases[k].a ? cases[k].b : cases[k].a;
			cr_expect_eq(es->tied_bytes, in ? S : 0, "case %zu stage %d: %g B", k, st,
			             es->tied_bytes);
			cr_expect_eq(es->tied_next, in ? other : st, "case %zu stage %d", k, st);
			cr_expect_eq(es->tied_prev, in ? other : st, "case %zu stage %d", k, st);
			double want = in ? want_s : 0;
			cr_expect(fabs(es->tied_s - want) <= 1e-6 * want, "case %zu stage %d: %.9g s, want %.9g",
			          k, st, es->tied_s, want);
			cr_expect_geq(es->gradient_s, es->tied_s);
		}
		struct program prog;
		cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
		for (int st = 0; st < prog.n_stages; st++) {
			const struct prog_step *x[4];
			int sends, recvs, n = tail_p2p(&prog, st, x, &sends, &recvs);
			for (int i = 0; i < n; i++) {
				int to = x[i]->kind == PROG_SEND ? x[i]->peer_stage : st;
				cr_expect_eq(x[i]->bytes, S);
				cr_expect_eq(x[i]->channel, prog_tied_channel(prog.n_chunks, to));
				cr_expect_eq(x[i]->peer_stage, st == cases[k].a ? cases[k].b : cases[k].a);
			}
			bool in = st == cases[k].a || st == cases[k].b;
			cr_expect_eq(sends, in, "case %zu stage %d: %d sends", k, st, sends);
			cr_expect_eq(recvs, in, "case %zu stage %d: %d receives", k, st, recvs);
		}
		simulated(s, &prog);
	}
}

/* The simulation tracks what every rank holds over time (its stage's
 * model state, buffers and reserve, plus a chunk's activations from its
 * forward to its backward, plus a recomputed block while its backward
 * runs): its peak on each stage is the estimate's memory of that stage,
 * for every schedule and with full recomputation, since both walk the
 * same schedule. */
Test(pipeline, simulated_memory_peak_is_the_estimates)
{
	/* 8 micro-batches (2 x P), and 64: the estimate walks at most 2 x P
	 * of them (GPipe one, scaled), the simulation every one. */
	static const struct {
		enum pipeline_schedule sched;
		int64_t v;
		enum recompute_mode rec;
		int64_t global_batch;
	} cases[] = {{SCHED_1F1B, 1, RECOMPUTE_NONE, 16},
	             {SCHED_GPIPE, 1, RECOMPUTE_NONE, 16},
	             {SCHED_INTERLEAVED_1F1B, 2, RECOMPUTE_NONE, 16},
	             {SCHED_1F1B, 1, RECOMPUTE_FULL, 16},
	             {SCHED_1F1B, 1, RECOMPUTE_NONE, 128},
	             {SCHED_GPIPE, 1, RECOMPUTE_NONE, 128},
	             {SCHED_INTERLEAVED_1F1B, 2, RECOMPUTE_NONE, 128}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct scenario *s = chain(cases[k].sched, cases[k].v, 0);
		s->training.recompute = cases[k].rec;
		s->training.global_batch = cases[k].global_batch;
		struct plan *p = dp_plan(s);
		struct estimate e;
		struct program prog;
		cr_assert(plan_estimate(A, p, &e, &D));
		cr_assert(plan_lower(A, p, 25 << 20, &prog, &D));
		struct sim_result r = simulated(s, &prog);
		char what[32];
		snprintf(what, sizeof what, "case %zu", k);
		expect_peaks_are_estimates(&e, &r, &prog, what);
	}
}

/* ------------------------------------------------------ deep pipelines */

/* Megatron-LM's schedules keep, on pipeline rank s of P
 * (megatron/core/pipeline_parallel/schedules.py, get_pp_rank_microbatches,
 * NVIDIA/Megatron-LM at commit d98e8a6): 1F1B P - s - 1 warm-up forwards,
 * interleaved 2(P - s - 1) + (v - 1)P (microbatch_group_size_per_vp_stage
 * = P by default) chunk forwards, all of them when that reaches the m v
 * there are; then one forward before each backward, so at most
 * warm-up + 1 units are in flight: 1F1B min(P - s, m), interleaved
 * min(2(P - s - 1) + (v - 1)P + 1, m v) chunk units (v per micro-batch).
 * Walked here for P 16-64 and v 2-4, every stage, m = 2P and m = P. */
static int64_t megatron_units(int P, int v, int s, int64_t m)
{
	int64_t total = m * v;
	int64_t warm = v > 1 ? 2 * (int64_t)(P - s - 1) + (int64_t)(v - 1) * P : P - s - 1;
	warm = warm < total ? warm : total;
	return warm < total ? warm + 1 : total;
}

static int64_t walked_units(int P, int v, int s, int64_t m)
{
	struct plan_part pp = {.n_stages = P, .virtual_stages = v, .n_chunks = P * v};
	struct prog_slot *sl;
	int n = plan_schedule(A, &pp, m, v > 1 ? SCHED_INTERLEAVED_1F1B : SCHED_1F1B, s, &sl);
	cr_assert_eq(n, 2 * m * v);
	int64_t cur = 0, most = 0;
	for (int i = 0; i < n; i++) {
		cur += sl[i].backward ? -1 : 1;
		most = cur > most ? cur : most;
	}
	return most;
}

Test(pipeline, deep_pipelines_hold_what_megatron_schedules_keep)
{
	static const int Ps[] = {16, 32, 64}, vs[] = {1, 2, 3, 4};
	for (size_t i = 0; i < SL_COUNTOF(Ps); i++)
		for (size_t j = 0; j < SL_COUNTOF(vs); j++)
			for (int64_t m = Ps[i]; m <= 2 * Ps[i]; m += Ps[i])
				for (int s = 0; s < Ps[i]; s++) {
					int64_t got = walked_units(Ps[i], vs[j], s, m);
					int64_t want = megatron_units(Ps[i], vs[j], s, m);
					cr_expect_eq(got, want, "P %d v %d m %lld stage %d: %lld units, "
					             "Megatron %lld", Ps[i], vs[j], (long long)m, s,
					             (long long)got, (long long)want);
				}
	/* by hand: P 32, v 2, stage 0: 2 x 31 + 32 + 1 = 95 chunk units =
	 * 47.5 micro-batches, Megatron's 32 x (1 + 31/64); stage 31: 32 + 1 */
	cr_expect_eq(walked_units(32, 2, 0, 64), 95);
	cr_expect_eq(walked_units(32, 2, 31, 64), 33);
	/* P 64, v 4, stage 0: 126 + 192 + 1 = 319 units */
	cr_expect_eq(walked_units(64, 4, 0, 128), 319);
}

/* The estimate of a GPT of one layer per chunk (L = P v) on P stages, one
 * device each: a middle stage's chunks are whole layers, each keeping
 * Korthikanti's sbh (34 + 5as/h) + 16sb bytes (test_memory.c), so it
 * holds that times the units in flight; and the simulation's memory track
 * peaks where the estimate does, on every stage. */
Test(pipeline, deep_interleaved_activations_by_hand)
{
	static const struct {
		int P, v;
	} cases[] = {{16, 1}, {16, 2}, {16, 4}, {32, 2}, {64, 3}};
	const double s_ = 64, b_ = 1, h_ = 64, a_ = 4;
	const double layer = s_ * b_ * h_ * (34 + 5 * a_ * s_ / h_) + 16 * s_ * b_;
	for (size_t k = 0; k < SL_COUNTOF(cases); k++) {
		int P = cases[k].P, v = cases[k].v;
		int64_t m = 2 * P;
		char gen[256], tr[256];
		snprintf(gen, sizeof gen,
		         "{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": %d, \"heads\": 4, "
		         "\"seq\": 64, \"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"}",
		         P * v);
		snprintf(tr, sizeof tr,
		         "{\"global_batch\": %lld, \"pipeline_stages\": %d, \"virtual_stages\": %d, "
		         "\"schedule\": \"%s\"}",
		         (long long)m, P, v, v > 1 ? "interleaved-1f1b" : "1f1b");
		struct scenario *s = fixture_generated(A, &D, gen, "dgx-a100-x128", P, tr);
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct plan *p = plan_megatron_degree(A, s, &o, 1, &D);
		cr_assert_not_null(p);
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D));
		for (int st = 1; st + 1 < P; st++) {
			double units = (double)megatron_units(P, v, st, m);
			cr_expect(fabs(e.stages[st].in_flight - units / v) < 1e-12,
			          "P %d v %d stage %d: %.3f in flight, want %.3f", P, v, st,
			          e.stages[st].in_flight, units / v);
			cr_expect(fabs(e.stages[st].mem.activations - units * layer) <= 1e-9 * units * layer,
			          "P %d v %d stage %d: %.0f B, want %.0f x %.0f", P, v, st,
			          e.stages[st].mem.activations, units, layer);
		}
		if (P > 32)
			continue;  /* the simulation of the deepest is left to the estimate's walk */
		struct program prog;
		cr_assert(plan_lower(A, p, 25 << 20, &prog, &D));
		struct sim_result r = simulated(s, &prog);
		char what[48];
		snprintf(what, sizeof what, "P %d v %d", P, (int)v);
		expect_peaks_are_estimates(&e, &r, &prog, what);
	}
}

/* Uneven first and last stages (Megatron-LM's
 * --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers,
 * here pipeline_cuts): 6 layers on 4 stages as 1 + 2 + 2 + 1, the
 * embedding with the first and the head and loss with the last. The
 * middle stages hold, by hand, (P - s) micro-batches of their two layers
 * each: stage 1 3 x 2 x layer, stage 2 2 x 2 x layer. */
Test(pipeline, uneven_first_and_last_stages)
{
	const double s_ = 64, b_ = 1, h_ = 64, a_ = 4;
	const double layer = s_ * b_ * h_ * (34 + 5 * a_ * s_ / h_) + 16 * s_ * b_;
	struct scenario *s = fixture_generated(
	        A, &D,
	        "{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 6, \"heads\": 4, \"seq\": 64, "
	        "\"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"}",
	        "dgx-a100", 4,
	        "{\"global_batch\": 8, \"pipeline_stages\": 4, \"pipeline_cuts\": "
	        "[\"layers.1.ln1\", \"layers.3.ln1\", \"layers.5.ln1\"]}");
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron_degree(A, s, &o, 1, &D);
	cr_assert_not_null(p);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_expect(fabs(e.stages[1].mem.activations - 3 * 2 * layer) <= 1e-9 * layer,
	          "stage 1: %.0f B, want %.0f", e.stages[1].mem.activations, 3 * 2 * layer);
	cr_expect(fabs(e.stages[2].mem.activations - 2 * 2 * layer) <= 1e-9 * layer,
	          "stage 2: %.0f B, want %.0f", e.stages[2].mem.activations, 2 * 2 * layer);
	cr_expect_eq(e.stages[0].in_flight, 4);
	cr_expect_eq(e.stages[3].in_flight, 1);
	/* the first stage: 4 micro-batches of one layer and the embedding,
	 * more than one layer's 4 x layer; the last: one of a layer, the
	 * final norm, the head and the loss's fp32 softmax (s b V 4 B) */
	cr_expect_gt(e.stages[0].mem.activations, 4 * layer);
	cr_expect_gt(e.stages[3].mem.activations, layer + s_ * b_ * 256 * 4);
}

/* One layer's seconds per micro-batch: its ops' ("layers.N.") compute and
 * communication, forward and backward. */
static double layer_s(const struct graph *g, const struct estimate *e, int n)
{
	char pre[32];
	snprintf(pre, sizeof pre, "layers.%d.", n);
	double t = 0;
	for (int i = 0; i < g->n_ops; i++)
		if (strncmp(g->ops[i].name, pre, strlen(pre)) == 0)
			t += e->ops[i].compute_forward_s + e->ops[i].compute_backward_s +
			     e->ops[i].comm_forward_s + e->ops[i].comm_backward_s + e->ops[i].recompute_s;
	return t;
}

/* training.first_stage_layers and last_stage_layers (Megatron-LM's
 * --decoder-first-pipeline-num-layers / --decoder-last-pipeline-num-layers,
 * transformer_block.py): 6 layers on 4 stages with 1 on the first and 1
 * on the last leave 4 for the 2 middle stages, 2 each: chunk 1 starts at
 * layers.1.ln1, chunk 2 at layers.3.ln1, chunk 3 at layers.5.ln1, as the
 * same split by pipeline_cuts. The stages' times per micro-batch: the
 * middle stages two layers each (2 tau, tau one layer's seconds, the six
 * alike) plus their sends; the first one layer and the embedding, the last
 * one layer, the final norm, the head (h x V = 64 x 256 a token, a third
 * of a layer's 12 h^2) and the loss: so the slowest is stage 1 (the first
 * of the two equal middle ones), and 1F1B's time is m t_max + the others'
 * sum, m = 8 micro-batches. 1 + 3 + 2 (3 left for 2 stages) and a first
 * stage of 3 with 2 virtual stages are what Megatron-LM refuses: the
 * loader says so (tests/data/bad/scenario-uneven-stages.json). */
Test(pipeline, uneven_stages_as_megatron_splits_them)
{
	struct scenario *s = fixture_generated(
	        A, &D,
	        "{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 6, \"heads\": 4, \"seq\": 64, "
	        "\"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"}",
	        "dgx-a100", 4,
	        "{\"global_batch\": 8, \"pipeline_stages\": 4, \"first_stage_layers\": 1, "
	        "\"last_stage_layers\": 1}");
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron_degree(A, s, &o, 1, &D);
	cr_assert_not_null(p);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	const struct graph *g = p->graph;
	const char *want[] = {"layers.1.ln1", "layers.3.ln1", "layers.5.ln1"};
	cr_assert_eq(e.part.n_chunks, 4);
	for (int c = 1; c < 4; c++)
		cr_expect_str_eq(g->ops[e.part.first_op[c]].name, want[c - 1], "chunk %d", c);
	double tau = layer_s(g, &e, 0);
	for (int n = 1; n < 6; n++)
		cr_expect_float_eq(layer_s(g, &e, n), tau, 1e-12 * tau, "layer %d", n);
	for (int st = 1; st <= 2; st++)
		cr_expect_float_eq(e.stages[st].micro_s, 2 * tau + e.stages[st].p2p_s, 1e-9 * tau,
		                   "stage %d", st);
	cr_expect_lt(e.stages[0].micro_s, e.stages[1].micro_s);
	cr_expect_lt(e.stages[3].micro_s, e.stages[1].micro_s);
	cr_expect_eq(e.critical_stage, 1);
	double tmax = e.stages[1].micro_s, sum = 0;
	for (int st = 0; st < 4; st++)
		sum += e.stages[st].micro_s;
	cr_expect_float_eq(e.pipeline_s, 8 * tmax + (sum - tmax), 1e-9 * tmax);
	/* the refusals */
	char why[200];
	cr_expect_eq(scenario_stage_layers(6, 4, 1, 1, 2, NULL, 0, why, sizeof why), -1);
	cr_expect_eq(scenario_stage_layers(6, 4, 2, 3, 0, NULL, 0, why, sizeof why), -1);
	/* and what Megatron-LM accepts: DeepSeek-V3's 61 layers over 16 stages
	 * as 3 + 14 x 4 + 2 */
	cr_expect_eq(scenario_stage_layers(61, 16, 1, 3, 2, NULL, 0, NULL, 0), 3);
	cr_expect_eq(scenario_stage_layers(61, 16, 1, 3, 2, NULL, 7, NULL, 0), 4);
	cr_expect_eq(scenario_stage_layers(61, 16, 1, 3, 2, NULL, 15, NULL, 0), 2);
	cr_expect_eq(scenario_stage_layers(61, 16, 1, 0, 0, NULL, 0, NULL, 0), -1);
}

/* training.stage_layers, every stage's layers listed (Megatron-LM's
 * --pipeline-model-parallel-layout): the list 1, 2, 2, 1 is the split
 * first_stage_layers 1 and last_stage_layers 1 make (the test above), the
 * same chunks; 3, 1, 1, 1 starts chunk 1 after three layers, at
 * layers.3.ln1, then one layer a chunk (layers.4.ln1, layers.5.ln1). The
 * stages of one layer each then take tau and their sends, stage 0 three
 * tau with the embedding. A list that does not sum to the layers is
 * refused (tests/data/bad/scenario-stage-layers-*.json for the loader). */
Test(pipeline, stage_layers_list_generalises_the_uneven_ends)
{
	const char *gen = "{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 6, \"heads\": 4, "
	                  "\"seq\": 64, \"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"}";
	const char *train[] = {"{\"global_batch\": 8, \"pipeline_stages\": 4, "
	                       "\"stage_layers\": [1, 2, 2, 1]}",
	                       "{\"global_batch\": 8, \"pipeline_stages\": 4, "
	                       "\"stage_layers\": [3, 1, 1, 1]}"};
	const char *want[2][3] = {{"layers.1.ln1", "layers.3.ln1", "layers.5.ln1"},
	                          {"layers.3.ln1", "layers.4.ln1", "layers.5.ln1"}};
	for (int k = 0; k < 2; k++) {
		struct scenario *s = fixture_generated(A, &D, gen, "dgx-a100", 4, train[k]);
		cr_assert_not_null(s->training.stage_layers);
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct plan *p = plan_megatron_degree(A, s, &o, 1, &D);
		cr_assert_not_null(p);
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D));
		cr_assert_eq(e.part.n_chunks, 4);
		for (int c = 1; c < 4; c++)
			cr_expect_str_eq(p->graph->ops[e.part.first_op[c]].name, want[k][c - 1],
			                 "list %d chunk %d", k, c);
		if (k == 1) {
			double tau = layer_s(p->graph, &e, 3);
			for (int st = 1; st < 3; st++)
				cr_expect_float_eq(e.stages[st].micro_s, tau + e.stages[st].p2p_s,
				                   1e-9 * tau, "stage %d", st);
			cr_expect_gt(e.stages[0].micro_s, 3 * tau);
			cr_expect_eq(e.critical_stage, 0);
		}
	}
	const int64_t bad[] = {2, 2, 2, 2}, good[] = {3, 1, 1, 1};
	char why[200];
	cr_expect_eq(scenario_stage_layers(6, 4, 1, 0, 0, bad, 0, why, sizeof why), -1);
	cr_expect_str_eq(why, "the stages' layers sum to 8, not the model's 6");
	cr_expect_eq(scenario_stage_layers(6, 4, 1, 0, 0, good, 0, NULL, 0), 3);
	cr_expect_eq(scenario_stage_layers(6, 4, 1, 0, 0, good, 3, NULL, 0), 1);
}

/* The chunks' first ops against the names of want[0 .. k-2] (chunks 1 ..
 * k-1) for a generated gpt model (hidden 64, 4 heads, seq 64, vocab 256)
 * of `layers` layers on 4 devices of dgx-a100, Megatron's TP 1. */
static void expect_chunk_starts(int layers, const char *train, int k, const char *const *want)
{
	char gen[256];
	snprintf(gen, sizeof gen, "{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": %d, \"heads\": 4, "
	         "\"seq\": 64, \"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"}", layers);
	struct scenario *s = fixture_generated(A, &D, gen, "dgx-a100", 4, train);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron_degree(A, s, &o, 1, &D);
	cr_assert_not_null(p);
	struct estimate e;
	cr_assert(plan_estimate(A, p, &e, &D));
	cr_assert_eq(e.part.n_chunks, k, "%s", train);
	for (int c = 1; c < k; c++)
		cr_expect_str_eq(p->graph->ops[e.part.first_op[c]].name, want[c - 1], "%s: chunk %d: %s",
		                 train, c, p->graph->ops[e.part.first_op[c]].name);
}

/* Megatron-Core's account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split (transformer_block.py
 * get_num_layers_to_build): the embedding and the loss count as a layer
 * each. Llama 3.1 405B's 126 layers + 2 over PP 16 x VP 4 = 64 chunks are
 * 128 / 64 = 2 units a chunk: the first chunk 1 layer and the embedding,
 * the last 1 layer and the loss, the 62 others 2 layers. 125 layers (127
 * units) do not divide by 16 stages; 126 + 2 over PP 16 x VP 3 leave 8
 * units a stage, not a multiple of 3: both refused, as Megatron-Core
 * does. In the graph: 14 layers + 2 over PP 4 x VP 2 = 8 chunks of 2
 * units, chunk 0 layer 0 (with the embedding), chunk c of 1 .. 6 layers
 * 2c - 1 and 2c, chunk 7 layer 13 (with the loss); 6 layers + 2 over the
 * same 8 chunks are a unit a chunk: chunk 0 only the embedding (chunk 1
 * starts at layer 0's first norm), chunks 1 .. 6 a layer each, chunk 7
 * only the final norm, the head and the loss. */
Test(pipeline, embedding_and_loss_counted_as_layers)
{
	cr_expect_eq(scenario_accounted_layers(126, 16, 4, true, true, 0, NULL, 0), 1);
	cr_expect_eq(scenario_accounted_layers(126, 16, 4, true, true, 1, NULL, 0), 2);
	cr_expect_eq(scenario_accounted_layers(126, 16, 4, true, true, 62, NULL, 0), 2);
	cr_expect_eq(scenario_accounted_layers(126, 16, 4, true, true, 63, NULL, 0), 1);
	int64_t sum = 0;
	for (int c = 0; c < 64; c++)
		sum += scenario_accounted_layers(126, 16, 4, true, true, c, NULL, 0);
	cr_expect_eq(sum, 126);
	/* the embedding alone: 127 + 1 = 128 units, the last chunk keeps 2 */
	cr_expect_eq(scenario_accounted_layers(127, 16, 4, true, false, 0, NULL, 0), 1);
	cr_expect_eq(scenario_accounted_layers(127, 16, 4, true, false, 63, NULL, 0), 2);
	char why[200];
	cr_expect_eq(scenario_accounted_layers(125, 16, 4, true, true, 0, why, sizeof why), -1);
	cr_expect_str_eq(why, "125 layers + the embedding + the loss do not divide into 16 "
	                      "pipeline stages");
	cr_expect_eq(scenario_accounted_layers(126, 16, 3, true, true, 0, why, sizeof why), -1);
	cr_expect_str_eq(why, "each stage's 8 layers (the embedding and the loss counted) do not "
	                      "divide into its 3 virtual stages");
	const char *train = "{\"global_batch\": 8, \"pipeline_stages\": 4, \"virtual_stages\": 2, "
	                    "\"schedule\": \"interleaved-1f1b\", "
	                    "\"account_for_embedding_in_pipeline_split\": true, "
	                    "\"account_for_loss_in_pipeline_split\": true}";
	const char *const two[] = {"layers.1.ln1", "layers.3.ln1", "layers.5.ln1", "layers.7.ln1",
	                           "layers.9.ln1", "layers.11.ln1", "layers.13.ln1"};
	expect_chunk_starts(14, train, 8, two);
	const char *const one[] = {"layers.0.ln1", "layers.1.ln1", "layers.2.ln1", "layers.3.ln1",
	                           "layers.4.ln1", "layers.5.ln1", "final_ln"};
	expect_chunk_starts(6, train, 8, one);
}

/* ZB-V's V (Qi et al. 2024, "Pipeline parallelism with controllable
 * memory"): on 4 stages chunk d runs on stage d and chunk 7 - d on stage
 * d too, so in graph order the chunks' stages are 0 1 2 3 3 2 1 0.
 * stage_layers 4, 2, 2, 6 over 14 layers halve over each stage's two
 * chunks: 2 1 1 3 3 1 1 2 layers, so the chunks start at layers 2, 3, 4,
 * 7, 10, 11 and 12 (the interleaved rule, stage c mod 4, would give
 * 2 1 1 3 2 1 1 3: layers 2, 3, 4, 7, 9, 10, 11). first_stage_layers 4
 * and last_stage_layers 6 leave 4 for the two middle stages, the same
 * split. */
Test(pipeline, zb_v_stage_layers_follow_the_v)
{
	const char *const want[] = {"layers.2.ln1", "layers.3.ln1", "layers.4.ln1", "layers.7.ln1",
	                            "layers.10.ln1", "layers.11.ln1", "layers.12.ln1"};
	expect_chunk_starts(14, "{\"global_batch\": 8, \"pipeline_stages\": 4, \"schedule\": "
	                        "\"zb-v\", \"stage_layers\": [4, 2, 2, 6]}", 8, want);
	expect_chunk_starts(14, "{\"global_batch\": 8, \"pipeline_stages\": 4, \"schedule\": "
	                        "\"zb-v\", \"first_stage_layers\": 4, \"last_stage_layers\": 6}",
	                    8, want);
}

/* Multi-token prediction in Megatron-Core's split (core_v0.13.0,
 * megatron/core/transformer/multi_token_prediction.py,
 * get_mtp_num_layers_to_build: "we only support put all of MTP layers on
 * the last pipeline stage"; transformer_block.py get_num_layers_to_build
 * divides config.num_layers, the decoder's layers alone). A LLaMA MoE of
 * 4 layers (the first dense, then 4 experts of which 2 picked) and one
 * prediction depth has 5 attentions; the module's layer, layers.4., is no
 * layer of the division. By hand: PP 2, 4 / 2 = 2 layers a stage, chunk 1
 * at layers.2.ln1; PP 4, one a stage (layers.1, .2, .3); PP 2 x VP 2,
 * one a chunk, the module in chunk 3 (stage 1's last virtual stage, where
 * is_vp_last_stage and the last pipeline rank meet); the embedding and
 * the loss counted over PP 2 x VP 3, 6 units of one: chunk 0 the
 * embedding, chunks 1 to 4 a layer each, chunk 5 the final norm, head and
 * loss and the module after them. Counted as a layer, the module would
 * make 5 layers that divide none of these; PP 5, which 5 would divide,
 * does not divide 4: a note and the cost-balanced cuts. In every even
 * split each "mtp." op and each of layers.4.'s is in the last chunk. */
Test(pipeline, mtp_module_goes_with_the_last_stage)
{
	static const struct {
		int p, v;
		const char *extra;
		const char *want[5];
	} cases[] = {
	        {2, 1, "", {"layers.2.ln1"}},
	        {4, 1, "", {"layers.1.ln1", "layers.2.ln1", "layers.3.ln1"}},
	        {2, 2, "", {"layers.1.ln1", "layers.2.ln1", "layers.3.ln1"}},
	        {2, 3,
	         ", \"account_for_embedding_in_pipeline_split\": true, "
	         "\"account_for_loss_in_pipeline_split\": true",
	         {"layers.0.ln1", "layers.1.ln1", "layers.2.ln1", "layers.3.ln1", "final_ln"}},
	        {5, 1, "", {NULL}},
	};
	const char *gen = "{\"kind\": \"llama\", \"hidden\": 64, \"layers\": 4, \"heads\": 4, "
	                  "\"seq\": 64, \"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\", "
	                  "\"ffn\": 128, \"experts\": 4, \"top_k\": 2, \"expert_ffn\": 64, "
	                  "\"dense_layers\": 1, \"mtp_layers\": 1}";
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		char tr[512];
		snprintf(tr, sizeof tr,
		         "{\"global_batch\": 12, \"pipeline_stages\": %d, \"virtual_stages\": %d, "
		         "\"schedule\": \"%s\"%s}",
		         cases[k].p, cases[k].v, cases[k].v > 1 ? "interleaved-1f1b" : "1f1b",
		         cases[k].extra);
		struct scenario *s = fixture_generated(A, &D, gen, "dgx-a100", cases[k].p, tr);
		struct plan_options o = {.mode = REDIST_COMPAT};
		struct plan *p = plan_megatron(A, s, &o, &D);
		cr_assert_not_null(p);
		size_t notes = D.count;
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D));
		const struct graph *g = p->graph;
		int n = cases[k].p * cases[k].v;
		cr_assert_eq(e.part.n_chunks, n);
		if (!cases[k].want[0]) {
			cr_expect_gt(D.count, notes, "a note that 4 layers do not divide into 5 chunks");
			continue;
		}
		cr_expect_eq(D.count, notes, "case %zu: no note of a cost-balanced split", k);
		for (int c = 1; c < n; c++)
			cr_expect_str_eq(g->ops[e.part.first_op[c]].name, cases[k].want[c - 1],
			                 "case %zu chunk %d: %s", k, c, g->ops[e.part.first_op[c]].name);
		int mtp_ops = 0;
		for (int i = 0; i < g->n_ops; i++) {
			const char *nm = g->ops[i].name;
			if (strncmp(nm, "mtp.", 4) && strncmp(nm, "layers.4.", 9))
				continue;
			mtp_ops++;
			cr_expect_eq(e.part.chunk_of[i], n - 1, "case %zu: %s in chunk %d", k, nm,
			             e.part.chunk_of[i]);
		}
		cr_expect_gt(mtp_ops, 0);
	}
}

/* The rebalancing rule (scenario_rebalance_layers) by hand. 32 layers over
 * 4 stages, stage 0 twice as slow: the shares L (1/slow_s) / sum(1/slow)
 * are 32 x 0.5 / 3.5 = 4.57 and 32 / 3.5 = 9.14; whole layers, the
 * smallest largest time n_s slow_s is 10 (n_0 <= 5, the others <= 10, and
 * 4 + 3 x 9 = 31 < 32 layers with 9 as the bound), reached by 5, 9, 9, 9
 * (the tie at 4, 9, 9, 9 goes to the lower stage). 6 layers over 2
 * stages, the second twice as slow: 4 and 2 (times 4 and 4). In units of
 * 2 virtual stages, 8 layers, the second stage 3 times as slow: 6 and 2
 * (times 6 and 6; 4 and 4 would be 12). Caps: the three fast stages at 8
 * leave 8 for stage 0. Fewer layers than stages cannot be placed. */
Test(pipeline, rebalancing_rule_by_hand)
{
	int64_t out[4];
	const double slow4[] = {2, 1, 1, 1}, slow2[] = {1, 2}, slow3[] = {1, 3};
	cr_assert(scenario_rebalance_layers(32, 4, 1, slow4, NULL, out));
	cr_expect(out[0] == 5 && out[1] == 9 && out[2] == 9 && out[3] == 9,
	          "%lld/%lld/%lld/%lld", (long long)out[0], (long long)out[1], (long long)out[2],
	          (long long)out[3]);
	cr_assert(scenario_rebalance_layers(6, 2, 1, slow2, NULL, out));
	cr_expect(out[0] == 4 && out[1] == 2);
	cr_assert(scenario_rebalance_layers(8, 2, 2, slow3, NULL, out));
	cr_expect(out[0] == 6 && out[1] == 2);
	const int64_t cap[] = {32, 8, 8, 8};
	cr_assert(scenario_rebalance_layers(32, 4, 1, slow4, cap, out));
	cr_expect(out[0] == 8 && out[1] == 8 && out[2] == 8 && out[3] == 8);
	cr_expect_not(scenario_rebalance_layers(3, 4, 1, slow4, NULL, out));
	cr_expect_not(scenario_rebalance_layers(7, 2, 2, slow3, NULL, out));
}

/* Two stages of one GPU each, 6 layers, device 1 (stage 1) twice as slow
 * (a "device" fault, slowdown 2). The estimate prices each stage at its
 * slowest device: stage 0 at full speed, stage 1 at half. With the layers
 * rebalanced (training.rebalance: 4 and 2, the rule above) and m = 8
 * micro-batches of 1F1B, by hand from the same split without the fault
 * (stage times u_s = C_s + p_s, compute C_s, the sends p_s; no collective
 * with TP = DP = 1): t_0 = u_0, t_1 = 2 C_1 + p_1 and the pipeline
 * m max(t_0, t_1) + min(t_0, t_1). Kept at 3 and 3, stage 1 computes three
 * layers at half speed: the iteration is longer, and the simulation of
 * the rebalanced plan is faster than the simulation of the even one. */
Test(pipeline, rebalanced_two_stages_one_twice_slow)
{
	const char *gen = "{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 6, \"heads\": 4, "
	                  "\"seq\": 64, \"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"}";
	const char *fault = ", \"faults\": [{\"kind\": \"device\", \"server\": 0, \"device\": 1, "
	                    "\"slowdown\": 2}]";
	char t_rebal[512], t_even[512];
	snprintf(t_rebal, sizeof t_rebal, "{\"global_batch\": 8, \"pipeline_stages\": 2, "
	         "\"rebalance\": true}%s", fault);
	snprintf(t_even, sizeof t_even, "{\"global_batch\": 8, \"pipeline_stages\": 2}%s", fault);
	struct scenario *plain = fixture_generated(A, &D, gen, "dgx-a100", 2,
	                                           "{\"global_batch\": 8, \"pipeline_stages\": 2, "
	                                           "\"stage_layers\": [4, 2]}");
	struct scenario *rebal = fixture_generated(A, &D, gen, "dgx-a100", 2, t_rebal);
	struct scenario *even = fixture_generated(A, &D, gen, "dgx-a100", 2, t_even);
	cr_assert_not_null(rebal->training.stage_layers);
	cr_expect_eq(rebal->training.stage_layers[0], 4);
	cr_expect_eq(rebal->training.stage_layers[1], 2);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *pp = plan_megatron_degree(A, plain, &o, 1, &D);
	struct plan *pr = plan_megatron_degree(A, rebal, &o, 1, &D);
	struct plan *pe = plan_megatron_degree(A, even, &o, 1, &D);
	cr_assert(pp && pr && pe);
	struct estimate ep, er, ee;
	cr_assert(plan_estimate(A, pp, &ep, &D) && plan_estimate(A, pr, &er, &D) &&
	          plan_estimate(A, pe, &ee, &D));
	double u0 = ep.stages[0].micro_s, u1 = ep.stages[1].micro_s, p1 = ep.stages[1].p2p_s;
	double t0 = u0, t1 = 2 * (u1 - p1) + p1;
	cr_expect_float_eq(er.stages[0].micro_s, t0, 1e-9 * t0);
	cr_expect_float_eq(er.stages[1].micro_s, t1, 1e-9 * t1);
	cr_expect_float_eq(er.pipeline_s, 8 * fmax(t0, t1) + fmin(t0, t1), 1e-9 * t1);
	cr_expect_lt(er.iteration_s, ee.iteration_s);
	struct program gr, ge;
	cr_assert(plan_lower(A, pr, 25 << 20, &gr, &D));
	cr_assert(plan_lower(A, pe, 25 << 20, &ge, &D));
	struct sim_result sr = simulated(rebal, &gr), se = simulated(even, &ge);
	cr_expect_lt(sr.iteration_s, se.iteration_s, "rebalanced %.6g s, even %.6g s",
	             sr.iteration_s, se.iteration_s);
}

/* Rebalancing within memory (plan_rebalance): 80 layers of hidden 4096 in
 * 4 stages of one 80 GB A100 each (12 h^2 = 201M parameters a layer, 16
 * bytes of mixed-precision Adam state each: about 3.2 GB a layer), stage 0
 * 4 times as slow. The rule alone: the smallest largest time is 25 (n_0 <=
 * 6, the others <= 25 hold 81 layers; with 24, 78 < 80), reached as 6, 25,
 * 25, 24 (at 6, 24, 24, 24 the next two go to the lowest stages of time
 * 25). 25 layers are about 80 GB of state alone: over the device. Capped a
 * unit at a time while over memory and above the even share (20), the
 * full stages give layers back, none above what the rule alone gave them,
 * and the slow stage, which has room, takes them: each stage fits or
 * holds no more than 20, the 80 layers all placed. */
Test(pipeline, rebalancing_keeps_each_stage_within_memory)
{
	const char *gen = "{\"kind\": \"gpt\", \"hidden\": 4096, \"layers\": 80, \"heads\": 32, "
	                  "\"seq\": 512, \"vocab\": 32000, \"micro_batch\": 1, \"dtype\": \"bf16\"}";
	struct scenario *s = fixture_generated(
	        A, &D, gen, "dgx-a100", 4,
	        "{\"global_batch\": 8, \"pipeline_stages\": 4}, \"faults\": [{\"kind\": \"device\", "
	        "\"server\": 0, \"device\": 0, \"slowdown\": 4}]");
	double slow[4];
	scenario_stage_slowdowns(s->topo, 4, 4, slow);
	cr_expect(slow[0] == 4 && slow[1] == 1 && slow[3] == 1);
	int64_t free_split[4];
	cr_assert(scenario_rebalance_layers(80, 4, 1, slow, NULL, free_split));
	cr_expect(free_split[0] == 6 && free_split[1] == 25 && free_split[2] == 25 &&
	          free_split[3] == 24, "%lld/%lld/%lld/%lld", (long long)free_split[0],
	          (long long)free_split[1], (long long)free_split[2], (long long)free_split[3]);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron_degree(A, s, &o, 1, &D);
	cr_assert_not_null(p);
	struct estimator *x = plan_estimator_new(p, &D);
	cr_assert_not_null(x);
	struct estimate e;
	cr_assert(plan_rebalance(x, A, (struct scenario *)p->scenario, &e, &D));
	const int64_t *got = p->scenario->training.stage_layers;
	cr_assert_not_null(got);
	int64_t sum = 0;
	for (int k = 0; k < 4; k++) {
		sum += got[k];
		if (k > 0)
			cr_expect_leq(got[k], free_split[k], "stage %d", k);
		cr_expect(e.stages[k].mem.total <= e.hbm_bytes || got[k] <= 20,
		          "stage %d: %lld layers, %.3g of %.3g bytes", k, (long long)got[k],
		          e.stages[k].mem.total, e.hbm_bytes);
	}
	cr_expect_eq(sum, 80);
	cr_expect_lt(got[1], 25, "the cap moved layers off the full stages: %lld/%lld/%lld/%lld",
	             (long long)got[0], (long long)got[1], (long long)got[2], (long long)got[3]);
	cr_expect_gt(got[0], 6, "and onto the slow stage, which has room");
	plan_estimator_free(x);
}

/* ------------------------------------------------ DeepSpeed 2021's stage 3 */

/* DeepSpeed's stage 3 of 2021 (training.zero3_impl "deepspeed-2021",
 * planner/cost/zero3.c) against hand counts: which gathers it does again
 * by stage3_max_reuse_distance, the parameters it keeps whole, the copies
 * of its list collectives, its zero fills and bucket divisions, and the
 * simulation's agreement with the estimate. The chain on 8 NPUs: 2
 * replicas a stage. The 910A file has no kernel overhead and
 * memory_efficiency 1: a memory-bound kernel of b bytes takes b / 1.2e12 s
 * (hbm_bandwidth_GBps 1200). */

#define HBM_BPS 1.2e12 /* atlas800-910a.json: hbm_bandwidth_GBps 1200, efficiency 1 */

static struct scenario *ds_chain(enum zero3_impl impl, enum recompute_mode rec)
{
	struct scenario *s = chain(SCHED_1F1B, 1, 3);
	s->devices = 8;
	s->training.zero3_impl = impl;
	s->training.recompute = rec;
	return s;
}

static void estimated(struct scenario *s, struct estimate *e)
{
	cr_assert(plan_estimate(A, dp_plan(s), e, &D));
}

/* The four ops of stage 0's chunk that gather a W, in order. */
static int stage0_ops(const struct estimate *e, int ops[4])
{
	int n = 0;
	for (int i = e->part.first_op[0]; i < e->part.first_op[1]; i++)
		if (e->ops[i].gather_one_s > 0 && n < 4)
			ops[n++] = i;
	return n;
}

/* The chain without recomputation estimated with DeepSpeed 2021's stage 3
 * (ds) and with the collectives alone (base), each with its four ops. */
static void both(struct estimate *ds, struct estimate *base, int ops[4], int ob[4])
{
	estimated(ds_chain(ZERO3_DEEPSPEED_2021, RECOMPUTE_NONE), ds);
	estimated(ds_chain(ZERO3_COLLECTIVES, RECOMPUTE_NONE), base);
	cr_assert_eq(stage0_ops(ds, ops), 4);
	cr_assert_eq(stage0_ops(base, ob), 4);
}

/* P = 268,435,456 elements an op. Without recomputation DeepSpeed's trace
 * of a stage is F0 F1 F2 F3 B3 B2 B1 B0: between an op's forward and its
 * backward lie 2 P x (ops after it): 6 P, 4 P, 2 P, 0. 4 P = 1,073,741,824
 * is over the reuse distance of 10^9: ops 0 and 1 are released and
 * gathered again, ops 2 and 3 kept. With full recomputation (the chain
 * names no layers: the chunk is one block, F0..F3 R0..R3 B3..B0) each
 * recomputed op sees 3 P = 805,306,368 since its forward, under 10^9:
 * kept; the backward as before. */
Test(pipeline, deepspeed_regathers_by_reuse_distance)
{
	static const uint8_t bwd[4] = {1, 1, 0, 0};
	for (int full = 0; full <= 1; full++) {
		struct estimate e;
		estimated(ds_chain(ZERO3_DEEPSPEED_2021, full ? RECOMPUTE_FULL : RECOMPUTE_NONE), &e);
		int ops[4];
		cr_assert_eq(stage0_ops(&e, ops), 4);
		for (int k = 0; k < 4; k++) {
			cr_expect_eq(e.ops[ops[k]].gathers_rec, 0, "recompute %d op %d", full, k);
			cr_expect_eq(e.ops[ops[k]].gathers_bwd, bwd[k], "recompute %d op %d", full, k);
		}
	}
	/* the collectives alone gather each op before its backward */
	struct estimate e;
	estimated(ds_chain(ZERO3_COLLECTIVES, RECOMPUTE_FULL), &e);
	int ops[4];
	cr_assert_eq(stage0_ops(&e, ops), 4);
	for (int k = 0; k < 4; k++) {
		cr_expect_eq(e.ops[ops[k]].gathers_rec, 0);
		cr_expect_eq(e.ops[ops[k]].gathers_bwd, 1);
	}
}

/* One gather of a W over 2 replicas: the same all-gather, then two copy_
 * kernels (one a rank) of S / 2 read and written each: 2 S / B =
 * 1,073,741,824 / 1.2e12 = 894.785 us on the communication stream; the
 * buffer's zero fill before it, S / B = 447.392 us, in line (with the
 * host's issue of the copies, nothing on the 910A, whose file has no
 * kernel overhead: the GPT layer below checks that part). An op's
 * gather_s counts its gathers: forward and backward for ops 0 and 1,
 * forward alone for ops 2 and 3. */
Test(pipeline, deepspeed_gather_copies_and_fill)
{
	struct estimate ds, base;
	int ops[4], ob[4];
	both(&ds, &base, ops, ob);
	double copies = 2 * W_BYTES / HBM_BPS, fill = W_BYTES / HBM_BPS;
	for (int k = 0; k < 4; k++) {
		const struct est_op *o = &ds.ops[ops[k]], *b = &base.ops[ob[k]];
		double got = o->gather_one_s - b->gather_one_s;
		cr_expect(fabs(got - copies) <= 1e-9 * copies, "op %d copies %.9g s, want %.9g", k,
		          got, copies);
		cr_expect(fabs(o->gather_fill_s - fill) <= 1e-9 * fill, "op %d fill %.9g s", k,
		          o->gather_fill_s);
		cr_expect_eq(b->gather_fill_s, 0);
		double gathers = k < 2 ? 2 : 1;
		cr_expect(fabs(o->gather_s - gathers * o->gather_one_s) <= 1e-12 * o->gather_s);
	}
}

/* The lowered program gathers what the estimate counts: per micro-batch
 * on stage 0, 4 W forward and 2 backward (ops 1 and 0), each (n-1)/n x S
 * over 2 replicas: 8 micro-batches x 6 x S / 2 = 24 S (the collectives
 * alone: 32 S, test_pipeline.c), each after a zero fill on stream 0 and
 * followed by its copies on stream 1. */
Test(pipeline, deepspeed_parameter_traffic)
{
	struct param_steps r = stage0_param_steps(ds_chain(ZERO3_DEEPSPEED_2021, RECOMPUTE_NONE));
	cr_expect_eq(r.sent, 24 * W_BYTES, "%.0f B", r.sent);
	cr_expect_eq(r.gathers, 8 * 6);
	cr_expect_eq(r.fills, 8 * 6);
	cr_expect_eq(r.copies, 8 * 6);
}

/* Each W's gradient is a bucket of its own (512 MiB over the 25 MiB
 * bucket). DeepSpeed's flush divides the bucket buffer (25 MiB =
 * 26,214,400 B, read and written) and, the gradient being larger, the
 * gradient itself (2 S), then copies its list into a flat buffer (2 S over
 * two copy_ kernels) before the same reduce-scatter: (2 x 26,214,400 +
 * 4 S) / B = 2,199,912,448 / 1.2e12 = 1.833260 ms more per bucket. */
Test(pipeline, deepspeed_bucket_flush)
{
	struct estimate ds, base;
	int ops[4], ob[4];
	both(&ds, &base, ops, ob);
	double more = (2 * 26214400.0 + 4 * W_BYTES) / HBM_BPS;
	for (int k = 0; k < 4; k++) {
		double got = ds.ops[ops[k]].gradient_s - base.ops[ob[k]].gradient_s;
		cr_expect(fabs(got - more) <= 1e-9 * more, "op %d: %.9g s more, want %.9g", k, got,
		          more);
	}
}

/* The simulation runs DeepSpeed's fills on stream 0, its copies and
 * divisions on stream 1 around the collectives, as the estimate walks
 * them: the iteration agrees within 3% (test_pipeline.c's tolerance for
 * ZeRO-3's overlap), with and without recomputation. */
Test(pipeline, deepspeed_simulated_as_estimated)
{
	simulated_as_estimated(ds_chain(ZERO3_DEEPSPEED_2021, RECOMPUTE_NONE));
	simulated_as_estimated(ds_chain(ZERO3_DEEPSPEED_2021, RECOMPUTE_FULL));
}

/* A layer of the SC21 174.6B GPT (hidden 12288, ffn 49152) with every
 * layer checkpointed. Between an op's recomputation and its backward lie
 * the layer's ops after it, twice (recomputed, then back-propagated): fc2
 * only its bias (2 x 12,288 elements: kept); fc1 fc2 and its bias,
 * 2 x (603,979,776 + 12,288) = 1,207,984,128 >= 10^9: released and
 * gathered a third time, and so every op before it. Every op is gathered
 * again for its recomputation (the rest of the model lies between). The
 * biases and norms (12,288 elements, under 10^5) are kept whole: never
 * gathered. In line before each gather of fc1's weight (49,152 x 12,288
 * fp16, S = 1,207,959,552 B) over the 8 GPUs of a DGX A100 (o = 6.034 us,
 * 2000 GB/s x 0.9): its zero fill, o + S / 1.8e12 = 677.123 us, and the
 * host's issue of its 8 copies, 8 o = 48.272 us: 725.395 us. */
Test(pipeline, deepspeed_gpt_layer_regathers)
{
	const char *gen = "{\"kind\": \"gpt\", \"hidden\": 12288, \"layers\": 2, \"heads\": 96,"
	                  " \"seq\": 2048, \"vocab\": 51200, \"ffn\": 49152, \"micro_batch\": 8,"
	                  " \"dtype\": \"fp16\", \"bias\": true}";
	struct scenario *s = fixture_generated(
	        A, &D, gen, "dgx-a100", 8,
	        "{\"global_batch\": 8, \"zero_stage\": 3, \"recompute\": \"full\","
	        " \"dtype\": \"fp16\", \"zero3_impl\": \"deepspeed-2021\"}");
	struct estimate e;
	estimated(s, &e);
	static const struct {
		const char *name;
		int rec, bwd;
	} want[] = {
	        {"layers.0.attn.q.matmul", 1, 1},   {"layers.0.attn.k.matmul", 1, 1},
	        {"layers.0.attn.v.matmul", 1, 1},   {"layers.0.attn.out.matmul", 1, 1},
	        {"layers.0.mlp.fc1.matmul", 1, 1},  {"layers.0.mlp.fc2.matmul", 1, 0},
	        {"layers.1.mlp.fc1.matmul", 1, 1},  {"layers.1.mlp.fc2.matmul", 1, 0},
	};
	int found = 0, kept_whole = 0;
	for (int i = 0; i < s->graph->n_ops; i++) {
		const char *name = s->graph->ops[i].name;
		for (size_t k = 0; k < sizeof want / sizeof *want; k++)
			if (strcmp(name, want[k].name) == 0) {
				found++;
				cr_expect_gt(e.ops[i].gather_one_s, 0, "%s", name);
				cr_expect_eq(e.ops[i].gathers_rec, want[k].rec, "%s", name);
				cr_expect_eq(e.ops[i].gathers_bwd, want[k].bwd, "%s", name);
				if (strcmp(name, "layers.0.mlp.fc1.matmul") == 0) {
					double in_line = 6.034e-6 + 1207959552.0 / 1.8e12 + 8 * 6.034e-6;
					cr_expect(fabs(e.ops[i].gather_fill_s - in_line) <= 1e-9 * in_line,
					          "fc1 in line %.9g s, want %.9g", e.ops[i].gather_fill_s,
					          in_line);
				}
			}
		if (strncmp(name, "layers.0.", 9) == 0 &&
		    (strstr(name, ".bias") || strstr(name, "ln1") || strstr(name, "ln2"))) {
			kept_whole++;
			cr_expect_eq(e.ops[i].gather_one_s, 0, "%s gathered", name);
		}
	}
	cr_expect_eq(found, (int)(sizeof want / sizeof *want));
	cr_expect_gt(kept_whole, 0);
}
