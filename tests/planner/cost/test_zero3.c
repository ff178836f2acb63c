/* test_zero3.c — DeepSpeed's stage 3 of 2021 (training.zero3_impl
 * "deepspeed-2021", planner/cost/zero3.c) against hand counts: which
 * gathers it does again by stage3_max_reuse_distance, the parameters it
 * keeps whole, the copies of its list collectives, its zero fills and
 * bucket divisions, and the simulation's agreement with the estimate.
 *
 * Most tests use the chain of test_pipeline.c
 * (tests/data/good/pipeline-chain-4p.json): sixteen MatMuls, each W of
 * 16384 x 16384 fp16 = 268,435,456 elements, 536,870,912 B, four a stage,
 * here on 8 NPUs of an Atlas 800 (910A): 2 replicas a stage. The 910A file
 * has no kernel overhead and memory_efficiency 1: a memory-bound kernel of
 * b bytes takes b / 1.2e12 s (hbm_bandwidth_GBps 1200).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <string.h>

#include "fixture.h"
#include "sim.h"
#include "cost.h"
#include "planner.h"

TestSuite(zero3, .init = fixture_setup, .fini = fixture_teardown);

#define CHAIN "tests/data/good/pipeline-chain-4p.json"
#define W_BYTES 536870912.0 /* 16384 x 16384 x 2 B */
#define HBM_BPS 1.2e12      /* atlas800-910a.json: hbm_bandwidth_GBps 1200, efficiency 1 */

static struct scenario *chain(enum zero3_impl impl, enum recompute_mode rec)
{
	struct scenario *s = fixture_scenario(CHAIN);
	s->devices = 8;
	s->training.zero_stage = 3;
	s->training.zero3_impl = impl;
	s->training.recompute = rec;
	return s;
}

static struct plan *dp_plan(struct scenario *s)
{
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_data_parallel(A, s, &o, &D);
	cr_assert_not_null(p);
	return p;
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

/* P = 268,435,456 elements an op. Without recomputation DeepSpeed's trace
 * of a stage is F0 F1 F2 F3 B3 B2 B1 B0: between an op's forward and its
 * backward lie 2 P x (ops after it): 6 P, 4 P, 2 P, 0. 4 P = 1,073,741,824
 * is over the reuse distance of 10^9: ops 0 and 1 are released and
 * gathered again, ops 2 and 3 kept. With full recomputation (the chain
 * names no layers: the chunk is one block, F0..F3 R0..R3 B3..B0) each
 * recomputed op sees 3 P = 805,306,368 since its forward, under 10^9:
 * kept; the backward as before. */
Test(zero3, deepspeed_regathers_by_reuse_distance)
{
	static const uint8_t bwd[4] = {1, 1, 0, 0};
	for (int full = 0; full <= 1; full++) {
		struct estimate e;
		estimated(chain(ZERO3_DEEPSPEED_2021, full ? RECOMPUTE_FULL : RECOMPUTE_NONE), &e);
		int ops[4];
		cr_assert_eq(stage0_ops(&e, ops), 4);
		for (int k = 0; k < 4; k++) {
			cr_expect_eq(e.ops[ops[k]].gathers_rec, 0, "recompute %d op %d", full, k);
			cr_expect_eq(e.ops[ops[k]].gathers_bwd, bwd[k], "recompute %d op %d", full, k);
		}
	}
	/* the collectives alone gather each op before its backward */
	struct estimate e;
	estimated(chain(ZERO3_COLLECTIVES, RECOMPUTE_FULL), &e);
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
 * buffer's zero fill before it, S / B = 447.392 us, in line. An op's
 * gather_s counts its gathers: forward and backward for ops 0 and 1,
 * forward alone for ops 2 and 3. */
Test(zero3, deepspeed_gather_copies_and_fill)
{
	struct estimate ds, base;
	estimated(chain(ZERO3_DEEPSPEED_2021, RECOMPUTE_NONE), &ds);
	estimated(chain(ZERO3_COLLECTIVES, RECOMPUTE_NONE), &base);
	int ops[4], ob[4];
	cr_assert_eq(stage0_ops(&ds, ops), 4);
	cr_assert_eq(stage0_ops(&base, ob), 4);
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
Test(zero3, deepspeed_parameter_traffic)
{
	struct scenario *s = chain(ZERO3_DEEPSPEED_2021, RECOMPUTE_NONE);
	struct plan *p = dp_plan(s);
	struct program prog;
	cr_assert(plan_lower(A, p, 25 << 20, &prog, &D));
	const struct prog_stage *st = &prog.stages[0];
	double sent = 0;
	int fills = 0, copies = 0, gathers = 0;
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
				sent += (x->groups.size - 1.0) / x->groups.size * x->bytes;
				gathers++;
			} else if (x->kind == PROG_COMPUTE) {
				fills += x->stream == 0;
				copies += x->stream == 1;
			}
		}
	}
	cr_expect_eq(sent, 24 * W_BYTES, "%.0f B", sent);
	cr_expect_eq(gathers, 8 * 6);
	cr_expect_eq(fills, 8 * 6);
	cr_expect_eq(copies, 8 * 6);
}

/* Each W's gradient is a bucket of its own (512 MiB over the 25 MiB
 * bucket). DeepSpeed's flush divides the bucket buffer (25 MiB =
 * 26,214,400 B, read and written) and, the gradient being larger, the
 * gradient itself (2 S), then copies its list into a flat buffer (2 S over
 * two copy_ kernels) before the same reduce-scatter: (2 x 26,214,400 +
 * 4 S) / B = 2,199,912,448 / 1.2e12 = 1.833260 ms more per bucket. */
Test(zero3, deepspeed_bucket_flush)
{
	struct estimate ds, base;
	estimated(chain(ZERO3_DEEPSPEED_2021, RECOMPUTE_NONE), &ds);
	estimated(chain(ZERO3_COLLECTIVES, RECOMPUTE_NONE), &base);
	int ops[4], ob[4];
	cr_assert_eq(stage0_ops(&ds, ops), 4);
	cr_assert_eq(stage0_ops(&base, ob), 4);
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
Test(zero3, deepspeed_simulated_as_estimated)
{
	for (int full = 0; full <= 1; full++) {
		struct scenario *s = chain(ZERO3_DEEPSPEED_2021, full ? RECOMPUTE_FULL : RECOMPUTE_NONE);
		struct plan *p = dp_plan(s);
		struct estimate e;
		cr_assert(plan_estimate(A, p, &e, &D));
		struct program prog;
		cr_assert(plan_lower(A, p, s->training.gradient_bucket_bytes, &prog, &D));
		struct sim_options o = {.fidelity = FIDELITY_COARSE, .algo = COLL_AUTO};
		struct sim_result r;
		cr_assert(sim_run(A, s->topo, &prog, &o, &r, &D));
		cr_expect(fabs(r.iteration_s - e.iteration_s) <= 0.03 * e.iteration_s,
		          "recompute %d: simulated %.6g s, estimated %.6g s", full, r.iteration_s,
		          e.iteration_s);
	}
}

/* A layer of the SC21 174.6B GPT (hidden 12288, ffn 49152) with every
 * layer checkpointed. Between an op's recomputation and its backward lie
 * the layer's ops after it, twice (recomputed, then back-propagated): fc2
 * only its bias (2 x 12,288 elements: kept); fc1 fc2 and its bias,
 * 2 x (603,979,776 + 12,288) = 1,207,984,128 >= 10^9: released and
 * gathered a third time, and so every op before it. Every op is gathered
 * again for its recomputation (the rest of the model lies between). The
 * biases and norms (12,288 elements, under 10^5) are kept whole: never
 * gathered. */
Test(zero3, deepspeed_gpt_layer_regathers)
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
