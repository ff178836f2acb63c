/* test_validate.c — the validation module and `shardlab validate`: the
 * FLOP counts and unit conversions worked out by hand, the MAPE, the bus
 * bandwidth factors, the loader's handling of the files in
 * tests/data/good/validate-*.json, and end-to-end runs of the built
 * binary ($SHARDLAB, from the source root) on a tiny training file and on
 * collectives whose simulated bus bandwidth is derived here from the
 * topology's figures. The bad-input corpus (tests/data/bad/validation-*)
 * runs with the rest of the corpus in test_cli.c.
 *
 * Figures used: topologies/dgx-a100.json, NVSwitch ports of 300 GB/s
 * (one direction) at efficiency 0.767, B = 230.1 GB/s (A100_NVSWITCH_BPS),
 * with 1 us latency on the sender's port; its collectives library NCCL.
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "validation.h"
#include "fixture.h"
#include "table_rows.h"

#define GIB 1073741824.0
#define MIB 1048576.0

TestSuite(validate, .init = fixture_setup, .fini = fixture_teardown);

static void near(double got, double want, double rel, const char *what)
{
	cr_assert(fabs(got - want) <= rel * fabs(want), "%s: got %.12g, want %.12g", what, got, want);
}

/* The tiny GPT of tests/data/good/validate-training.json: hidden 64,
 * 2 layers, 8 heads, seq 16, vocabulary 128, ffn 256. */
static struct graph *tiny_gpt(int64_t micro_batch)
{
	struct model_gen g = {.kind = GEN_GPT, .hidden = 64, .layers = 2, .heads = 8, .kv_heads = 8,
	                      .seq = 16, .vocab = 128, .micro_batch = micro_batch, .ffn = 256,
	                      .dtype = DT_BF16, .bias = true, .dropout = 0.1};
	struct graph *out = graph_generate(A, &g, &D);
	cr_assert_not_null(out);
	return out;
}

/* ------------------------------------------------------------ by hand */

Test(validate, megatron_flops_by_hand)
{
	/* F = 96 B s l h^2 (1 + s/(6h) + V/(16 l h)) with B = 8, s = 16, l = 2,
	 * h = 64, V = 128: 96 x 8 x 16 x 2 x 4096 = 100,663,296; the bracket is
	 * 1 + 16/384 + 128/2048 = 1 + 1/24 + 1/16 = 53/48, so
	 * F = 100,663,296 x 53 / 48 = 111,149,056. */
	const char *why = NULL;
	double f = validation_flops_per_iteration(tiny_gpt(1), FLOPS_MEGATRON, 8, &why);
	cr_assert_eq(f, 111149056.0, "got %.1f", f);
	cr_assert_null(why);
}

Test(validate, model_and_palm_flops_by_hand)
{
	/* Parameters of the tiny GPT: embedding 128 x 64 = 8,192 (tied with the
	 * output projection), positions 16 x 64 = 1,024; per layer q, k, v, out
	 * 4 (64 x 64 + 64) = 16,640, fc1 64 x 256 + 256 = 16,640, fc2 256 x 64 +
	 * 64 = 16,448, two LayerNorms 4 x 64 = 256: 49,984, twice 99,968; the
	 * final norm 128. N = 109,312. With B = 8, s = 16 (128 tokens):
	 * model 6 N x 128 = 83,951,616; palm adds 12 l h s = 12 x 2 x 64 x 16 =
	 * 24,576 per token: (655,872 + 24,576) x 128 = 87,097,344. */
	struct graph *g = tiny_gpt(1);
	cr_assert_eq(validation_flops_per_iteration(g, FLOPS_MODEL, 8, NULL), 83951616.0);
	cr_assert_eq(validation_flops_per_iteration(g, FLOPS_PALM, 8, NULL), 87097344.0);
}

Test(validate, palm_flops_count_heads_of_head_dim)
{
	/* A llama of hidden 64, 1 layer, 8 heads of head_dim 16 (8 x 16 = 128
	 * beside the hidden 64), kv 2, ffn 96, V 100, seq 16, untied: N =
	 * 6,400 embedding + 192 norms + q 64 x 128 + k, v 2 x 64 x 32 + out
	 * 128 x 64 = 20,480 + MLP 3 x 64 x 96 = 18,432 + head 6,400 = 51,904.
	 * PaLM's 12 L H Q T term with H Q = 8 x 16 = 128 (not the hidden 64):
	 * 12 x 1 x 128 x 16 = 24,576 a token; with B = 3, s = 16 (48 tokens):
	 * (6 x 51,904 + 24,576) x 48 = 336,000 x 48 = 16,128,000. */
	struct model_gen g = {.kind = GEN_LLAMA, .hidden = 64, .layers = 1, .heads = 8, .kv_heads = 2,
	                      .head_dim = 16, .seq = 16, .vocab = 100, .micro_batch = 1, .ffn = 96,
	                      .dtype = DT_BF16};
	struct graph *llama = graph_generate(A, &g, &D);
	cr_assert_not_null(llama);
	cr_assert_eq(validation_flops_per_iteration(llama, FLOPS_MODEL, 3, NULL), 6.0 * 51904 * 48);
	cr_assert_eq(validation_flops_per_iteration(llama, FLOPS_PALM, 3, NULL), 16128000.0);
}

Test(validate, megatron_flops_need_a_gpt_with_ffn_4h)
{
	struct model_gen g = {.kind = GEN_LLAMA, .hidden = 64, .layers = 2, .heads = 8, .kv_heads = 8,
	                      .seq = 16, .vocab = 128, .micro_batch = 1, .ffn = 256,
	                      .dtype = DT_BF16};
	struct graph *llama = graph_generate(A, &g, &D);
	cr_assert_not_null(llama);
	const char *why = NULL;
	cr_assert_lt(validation_flops_per_iteration(llama, FLOPS_MEGATRON, 8, &why), 0);
	cr_assert_not_null(strstr(why, "gpt generator with ffn = 4 x hidden"), "%s", why);
}

Test(validate, unit_conversions_by_hand)
{
	/* 8 devices, global batch 16 of 16 tokens (256 tokens), an iteration
	 * of 2 ms, and the FLOP count of megatron_flops_by_hand doubled for
	 * B = 16: 222,298,112 FLOPs. */
	struct scenario s = {.devices = 8, .training = {.global_batch = 16}};
	struct validation_training_row r = {.scenario = &s, .flops_per_iteration = 222298112.0,
	                                    .tokens_per_iteration = 256};
	double t = 2e-3;
	r.measure = MEASURE_ITERATION_S;
	cr_assert_eq(validation_predicted(&r, t), 2e-3);
	/* 222,298,112 / (8 x 2e-3) = 13,893,632,000 FLOP/s = 0.013893632 TFLOP/s */
	r.measure = MEASURE_TFLOPS_PER_DEVICE;
	near(validation_predicted(&r, t), 0.013893632, 1e-12, "TFLOP/s per device");
	/* 256 / (8 x 2e-3) = 16,000 tokens/s per device, 128,000 in all; 8,000 samples/s */
	r.measure = MEASURE_TOKENS_PER_S_PER_DEVICE;
	near(validation_predicted(&r, t), 16000, 1e-12, "tokens/s per device");
	r.measure = MEASURE_TOKENS_PER_S;
	near(validation_predicted(&r, t), 128000, 1e-12, "tokens/s");
	r.measure = MEASURE_SAMPLES_PER_S;
	near(validation_predicted(&r, t), 8000, 1e-12, "samples/s");
}

Test(validate, errors_and_mape_by_hand)
{
	/* 110 against 100: +10%; 80 against 100: -20%; 130 against 100: +30%.
	 * MAPE = (10 + 20 + 30) / 3 = 20%. */
	double e[3] = {validation_error_pct(110, 100), validation_error_pct(80, 100),
	               validation_error_pct(130, 100)};
	near(e[0], 10, 1e-12, "+10%");
	near(e[1], -20, 1e-12, "-20%");
	near(e[2], 30, 1e-12, "+30%");
	near(validation_mape(e, 3), 20, 1e-12, "MAPE");
	cr_assert(isnan(validation_mape(e, 0)));
}

Test(validate, bus_factors)
{
	/* nccl-tests: all-reduce 2(n-1)/n, the others (n-1)/n. */
	cr_assert_eq(validation_bus_factor(STEP_ALLREDUCE, 8), 1.75);
	cr_assert_eq(validation_bus_factor(STEP_ALLREDUCE, 2), 1.0);
	cr_assert_eq(validation_bus_factor(STEP_ALLGATHER, 8), 0.875);
	cr_assert_eq(validation_bus_factor(STEP_REDUCESCATTER, 16), 0.9375);
	cr_assert_eq(validation_bus_factor(STEP_ALLTOALL, 4), 0.75);
}

/* ------------------------------------------------------------- loading */

Test(validate, loads_the_tiny_training_file)
{
	/* Row 0: TP 4 on 8 devices leaves DP 2; micro_batch 2 per replica makes
	 * the graph's batch 4 and 16 / 4 = 4 micro-batches. Row 1: 2 stages of
	 * 4 devices, TP 2, DP 2, micro_batch 1: batch 2, 8 micro-batches (a
	 * multiple of the 2 stages, as the interleaved schedule needs). */
	struct validation *v = validation_load(A, "tests/data/good/validate-training.json", &D);
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, VALIDATION_TRAINING);
	cr_assert_eq(v->n_rows, 4);
	const struct validation_training_row *r = &v->training[0];
	cr_assert_str_eq(r->name, "tiny TP 4 DP 2");
	cr_assert_eq(r->planner, PLANNER_MEGATRON);
	cr_assert_eq(r->tensor_parallel, 4);
	cr_assert_eq(r->scenario->graph->batch, 4);
	cr_assert_eq(r->scenario->training.micro_batches, 4);
	cr_assert_eq(r->measure, MEASURE_TFLOPS_PER_DEVICE);
	cr_assert_eq(r->flops, FLOPS_MEGATRON);
	cr_assert_eq(r->flops_per_iteration, 222298112.0, "2 x megatron_flops_by_hand");
	cr_assert_eq(r->tokens_per_iteration, 256);
	r = &v->training[1];
	cr_assert_eq(r->scenario->graph->batch, 2);
	cr_assert_eq(r->scenario->training.micro_batches, 8);
	cr_assert_eq(r->scenario->training.pipeline_stages, 2);
	cr_assert_eq(r->scenario->training.virtual_stages, 2);
	cr_assert_eq(r->measure, MEASURE_ITERATION_S);
	cr_assert_eq(r->value, 0.001);
}

/* validation/holdout.json, the held-out published runs (docs/validation.md,
 * 'Held-out published runs'): it loads without a diagnostic. Its errors are
 * reported, never tested against a threshold. */
Test(validate, loads_the_holdout_set)
{
	struct validation *v = validation_load(A, "validation/holdout.json", &D);
	cr_assert_not_null(v);
	cr_assert_eq(D.count, 0);
	cr_assert_eq(v->kind, VALIDATION_TRAINING);
	cr_assert_eq(v->n_rows, 10);
	/* BLOOM-176B: 384 GPUs at TP 4 and 12 stages leave DP 8; micro-batch
	 * 2 per replica and 2,048 sequences make 2048 / (8 x 2) = 128
	 * micro-batches. */
	const struct validation_training_row *r = &v->training[0];
	cr_assert_eq(r->tensor_parallel, 4);
	cr_assert_eq(r->scenario->training.pipeline_stages, 12);
	cr_assert_eq(r->scenario->training.micro_batches, 128);
	/* its slurm file's 'type:transformer|embedding' split (70 layers and
	 * the two tied embeddings, 6 a stage) and BF16_Optimizer's fp32
	 * gradient copies after each micro-batch */
	cr_assert(r->scenario->training.embedding_in_split);
	cr_assert(r->scenario->training.loss_in_split);
	cr_assert(r->scenario->training.separate_grad_accumulation);
	/* Llama 3 405B: 126 layers + the embedding + the loss over 16 stages
	 * are 8 slots a stage; the first chunk only the embedding (section
	 * 3.3.2) makes a chunk one slot, V = 8; FSDP's sharded gradients are
	 * ZeRO 2. */
	for (int i = 1; i < 3; i++) {
		cr_assert_eq(v->training[i].scenario->training.virtual_stages, 8);
		cr_assert_eq(v->training[i].scenario->training.zero_stage, 2);
	}
	/* Llama 3 405B on 16,384 GPUs: DP 16384 / (8 x 16) = 128, 2048 / 128
	 * = 16 micro-batches of 1 (Table 4's 16 sequences per DP group). */
	r = &v->training[2];
	cr_assert_eq(r->scenario->training.micro_batches, 16);
	/* MT-NLG 530B on 2,240, 2,800 and 3,360 GPUs: DP = GPUs / (8 x 35) = 8,
	 * 10 and 12, 1,920 / DP = 240, 192 and 160 micro-batches of 1; DeepSpeed's
	 * pipeline engine sends whole copies. */
	static const int64_t mb[] = {240, 192, 160};
	for (int i = 0; i < 3; i++) {
		r = &v->training[3 + i];
		cr_assert_eq(r->scenario->training.pipeline_stages, 35);
		cr_assert_eq(r->scenario->training.micro_batches, mb[i]);
		cr_assert(r->scenario->training.whole_sends);
		cr_assert_eq(r->measure, MEASURE_ITERATION_S);
	}
	/* Megatron-LM's 22B, 175B, 530B and 1T (Korthikanti et al. 2022):
	 * TP 8 x PP on 8 x PP GPUs is DP 1, so the global batch is that many
	 * micro-batches of 1. Each iteration time, with the configuration it
	 * is transcribed with, must give the README's (commit 841f789) model
	 * FLOPs utilization by the paper's count, 72 B s l h^2 (1 + s/(6h) +
	 * V/(12 l h)) over GPUs x 312 TFLOP/s, and its hardware utilization
	 * with the recomputed attention scores, s/(3h) in place of s/(6h),
	 * each to the rounding of a time given to 3-4 digits: 22B, 4 x 2048
	 * x 48 x 6144^2 x 72 (1 + 0.0556 + 0.0145) / (1.10 x 8 x 312e12) =
	 * 41.65% against 41.5%. */
	static const struct {
		int64_t gpus, pp, batch;
		double mfu, hfu;
	} k[] = {{8, 1, 4, 41.5, 43.7}, {64, 8, 64, 51.4, 52.8},
	         {280, 35, 280, 56.0, 57.0}, {512, 64, 512, 56.3, 57.0}};
	for (int i = 0; i < 4; i++) {
		r = &v->training[6 + i];
		const struct scenario *s = r->scenario;
		const struct model_gen *m = s->graph->gen;
		cr_assert_eq(s->devices, k[i].gpus, "%s", r->name);
		cr_assert_eq(r->tensor_parallel, 8);
		cr_assert_eq(s->training.pipeline_stages, k[i].pp, "%s", r->name);
		cr_assert_eq(8 * k[i].pp, k[i].gpus, "DP 1");
		cr_assert_eq(s->training.micro_batches, k[i].batch, "%s", r->name);
		cr_assert(s->training.sequence_parallel);
		cr_assert_eq(s->training.recompute, RECOMPUTE_SELECTIVE);
		cr_assert_eq(r->measure, MEASURE_ITERATION_S);
		double B = (double)k[i].batch, sq = (double)m->seq, l = (double)m->layers,
		       h = (double)m->hidden, V = (double)m->vocab;
		/* the FLOPs the GPUs could do in the iteration, per percent */
		double one_pct = (double)k[i].gpus * 312e12 * r->value / 100;
		double base = 72 * B * sq * l * h * h;
		cr_expect(fabs(base * (1 + sq / (6 * h) + V / (12 * l * h)) / one_pct - k[i].mfu) < 0.2,
		          "%s: MFU", r->name);
		cr_expect(fabs(base * (1 + sq / (3 * h) + V / (12 * l * h)) / one_pct - k[i].hfu) < 0.2,
		          "%s: HFU", r->name);
	}
}

Test(validate, rows_keep_sequence_and_context_parallelism)
{
	/* tests/data/good/validate-sp-cp.json. Row 0: TP 4 with sequence
	 * parallelism on 8 devices, DP 2, micro_batch 2: batch 4, 4
	 * micro-batches, SP kept. Row 1: TP 2 x CP 2 on 8 devices leaves DP
	 * 8 / (2 x 2) = 2, micro_batch 1: batch 2 (not 4, as DP = 8 / TP
	 * would make it), 16 / 2 = 8 micro-batches, CP kept. */
	struct validation *v = validation_load(A, "tests/data/good/validate-sp-cp.json", &D);
	cr_assert_not_null(v);
	cr_assert_eq(v->n_rows, 2);
	const struct scenario *s = v->training[0].scenario;
	cr_assert(s->training.sequence_parallel);
	cr_assert_eq(s->graph->batch, 4);
	cr_assert_eq(s->training.micro_batches, 4);
	s = v->training[1].scenario;
	cr_assert_eq(s->training.context_parallel, 2);
	cr_assert_eq(s->graph->batch, 2);
	cr_assert_eq(s->training.micro_batches, 8);
}

Test(validate, loads_the_collectives_file)
{
	/* Row 1 states no devices: all 8 of the server. Row 2's algbw of
	 * 200 GB/s is a bus bandwidth of 200 x 7/8 = 175 GB/s. */
	struct validation *v = validation_load(A, "tests/data/good/validate-collectives.json", &D);
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, VALIDATION_COLLECTIVES);
	cr_assert_eq(v->n_rows, 3);
	cr_assert_eq(v->collectives[0].collective, STEP_ALLREDUCE);
	cr_assert_eq(v->collectives[0].algo, COLL_AUTO);
	cr_assert_eq(v->collectives[1].devices, 8);
	cr_assert_eq(v->collectives[1].algo, COLL_RING);
	const struct validation_point *p = &v->collectives[2].points[0];
	cr_assert_eq(v->collectives[2].collective, STEP_ALLGATHER);
	cr_assert(p->measured_algbw);
	near(p->busbw_bps, 175e9, 1e-12, "busbw from algbw");
	cr_assert_eq(p->bytes, 32 * MIB);
}

Test(validate, rows_grow_a_cluster_by_whole_servers)
{
	/* atlas800-910a-x4.json has 4 servers of 8; rows on 64 devices run on
	 * 8 servers of the same fabric, as atlas800-910a-x8.json states them. */
	struct validation *v = validation_load(A, "tests/data/good/validate-grown.json", &D);
	cr_assert_not_null(v);
	const struct topology *g = v->training[0].scenario->topo, *w = v->training[1].scenario->topo;
	cr_assert_eq(g->servers, 8);
	cr_assert_eq(g->n_devices, 64);
	cr_assert_eq(w->servers, 8);
	cr_assert_eq(g->fabric.nics_per_leaf, w->fabric.nics_per_leaf);
	cr_assert_eq(topo_fabric_leaves(g), topo_fabric_leaves(w));
	cr_assert_eq(topo_bisection_bps(g), topo_bisection_bps(w));
	v = validation_load(A, "tests/data/good/validate-grown-collectives.json", &D);
	cr_assert_not_null(v);
	cr_assert_eq(v->collectives[0].topo->servers, 8);
	cr_assert_eq(v->collectives[0].devices, 64);
}

/* ------------------------------------------------------- the command */

static cJSON *json_of(const char *args)
{
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "shardlab %s exits %d", args, r.status);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "shardlab %s does not print JSON:\n%s", args, r.out);
	free(r.out);
	return j;
}

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	cr_assert(cJSON_IsNumber(v), "%s is not a number", key);
	return v->valuedouble;
}

static const cJSON *member(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	cr_assert_not_null(v, "no member %s", key);
	return v;
}

Test(validate, training_end_to_end)
{
	/* Every row planned, estimated and simulated. Row 0 counts
	 * 222,298,112 FLOPs per iteration (the megatron formula, B = 16), so
	 * its predictions are F / (8 devices x t) / 1e12 TFLOP/s against the
	 * measured 0.5; row 2's are 256 tokens / (8 x t) against 100,000.
	 * Row 3 asks TP 8 of a model with 4 heads: no plan, left out of the
	 * MAPE with its reason, exit status 0 all the same. */
	cJSON *j = json_of("validate --json tests/data/good/validate-training.json");
	const cJSON *rows = member(j, "rows");
	cr_assert_eq(cJSON_GetArraySize(rows), 4);
	double errs_est[3], errs_sim[3];
	static const double measured[3] = {0.5, 0.001, 100000};
	for (int i = 0; i < 3; i++) {
		const cJSON *r = cJSON_GetArrayItem(rows, i);
		cr_assert(cJSON_IsNull(member(r, "error")), "row %d failed", i);
		const cJSON *e = member(r, "estimate"), *s = member(r, "simulation");
		cr_assert(cJSON_IsObject(s), "row %d was not simulated", i);
		double te = num(e, "iteration_s"), ts = num(s, "iteration_s");
		cr_assert_gt(te, 0);
		cr_assert_gt(ts, 0);
		double ve = i == 0 ? 222298112.0 / (8 * te) / 1e12 : i == 1 ? te : 256 / (8 * te);
		double vs = i == 0 ? 222298112.0 / (8 * ts) / 1e12 : i == 1 ? ts : 256 / (8 * ts);
		near(num(e, "value"), ve, 1e-9, "estimate in the row's unit");
		near(num(s, "value"), vs, 1e-9, "simulation in the row's unit");
		errs_est[i] = 100 * (ve / measured[i] - 1);
		errs_sim[i] = 100 * (vs / measured[i] - 1);
		near(num(e, "error_pct"), errs_est[i], 1e-9, "estimate error");
		near(num(s, "error_pct"), errs_sim[i], 1e-9, "simulation error");
	}
	const cJSON *bad = cJSON_GetArrayItem(rows, 3);
	cr_assert(cJSON_IsString(member(bad, "error")));
	cr_assert_not_null(strstr(member(bad, "error")->valuestring, "tensor parallel 8 does not fit"));
	cr_assert(cJSON_IsNull(member(bad, "estimate")));
	const cJSON *m = member(j, "mape");
	double want_e = (fabs(errs_est[0]) + fabs(errs_est[1]) + fabs(errs_est[2])) / 3;
	double want_s = (fabs(errs_sim[0]) + fabs(errs_sim[1]) + fabs(errs_sim[2])) / 3;
	near(num(m, "estimate_pct"), want_e, 1e-9, "estimate MAPE");
	near(num(m, "simulation_pct"), want_s, 1e-9, "simulation MAPE");
	cr_assert_eq(num(m, "estimate_rows"), 3);
	cr_assert_eq(num(m, "left_out_rows"), 1);
	cJSON_Delete(j);
}

Test(validate, estimate_only_and_rows)
{
	/* --estimate-only leaves the simulation out; --rows keeps the rows
	 * whose name matches the glob. */
	cJSON *j = json_of("validate --json --estimate-only --rows 'tiny t*' "
	                   "tests/data/good/validate-training.json");
	const cJSON *rows = member(j, "rows");
	cr_assert_eq(cJSON_GetArraySize(rows), 1);
	cr_assert_str_eq(member(cJSON_GetArrayItem(rows, 0), "name")->valuestring, "tiny tokens");
	cr_assert(cJSON_IsNull(member(cJSON_GetArrayItem(rows, 0), "simulation")));
	cr_assert(cJSON_IsNull(member(member(j, "mape"), "simulation_pct")));
	cJSON_Delete(j);
	struct cli_run r = fixture_shardlab("validate --rows 'none*' tests/data/good/validate-training.json", true);
	cr_assert_eq(r.status, 1);
	cr_assert_str_eq(r.out, "shardlab validate: no row of "
	                        "tests/data/good/validate-training.json matches 'none*'\n");
	free(r.out);
}

Test(validate, text_is_deterministic)
{
	struct cli_run a = fixture_shardlab("validate tests/data/good/validate-training.json", false);
	struct cli_run b = fixture_shardlab("validate tests/data/good/validate-training.json", false);
	cr_assert_eq(a.status, 0);
	cr_assert_str_eq(a.out, b.out);
	/* Rows in this process, one after another, or in three workers at
	 * once (a row that cannot be planned among them): the same report. */
	for (int j = 0; j < 2; j++) {
		struct cli_run c = fixture_shardlab(j ? "validate --jobs 3 --json "
		                                        "tests/data/good/validate-training.json"
		                                      : "validate --jobs 1 --json "
		                                        "tests/data/good/validate-training.json",
		                                    false);
		struct cli_run d = fixture_shardlab("validate --jobs 2 --json "
		                                    "tests/data/good/validate-training.json", false);
		cr_assert_eq(c.status, 0, "%s", c.out);
		cr_expect_str_eq(c.out, d.out);
		free(c.out);
		free(d.out);
	}
	struct cli_run e = fixture_shardlab("validate --jobs 4 tests/data/good/validate-training.json",
	                                    false);
	cr_expect_str_eq(e.out, a.out);
	free(e.out);
	cr_assert_not_null(strstr(a.out, "  1 of 4 rows left out (could not be planned or estimated)\n"), "%s", a.out);
	cr_assert_not_null(strstr(a.out, "  0 of 4 rows predicted OOM though the run trained"), "%s", a.out);
	cr_assert_not_null(strstr(a.out, "  tiny TP 8, 4 heads: tensor parallel 8 does not fit"));
	free(a.out);
	free(b.out);
}

Test(validate, collectives_by_hand)
{
	/* 8 GPUs of a DGX A100, whose collectives library is NCCL: inside one
	 * server it runs rings, priced by its tuning model (docs/cost-models.md,
	 * "Collective libraries") on top of the links' 1 us a step:
	 * S = 1 GiB all-reduce, 14 steps, 1.75 S / B = 8.1660 ms:
	 *   LL      14 + 3.6 + 14 x 0.47 us + 4 x 1.75 S / B
	 *   LL128   14 + 10 + 14 x 1.9 us + 1.75 S / (0.92 B)
	 *   Simple  14 + 8.4 + 14 x 3.4 us + 1.75 S / B = 8.2360 ms, the least;
	 * busbw = S / t x 1.75 = 228.14 GB/s, -0.81% against the measured 230.
	 * The ring asked for (row 2) is the same. All-gather of S = 32 MiB
	 * (row 3), 7 steps, 7/8 S / B = 127.60 us: LL 7 + 3.6 + 3.29 us + 3 x
	 * 127.60 us (a third of the bandwidth inside a server), LL128 7 + 10 +
	 * 13.3 us + 127.60 / 0.92 us = 169.0 us, Simple 7 + 8.4 + 23.8 +
	 * 127.60 us = 166.80 us: Simple; busbw = S / t x 7/8 = 176.02 GB/s
	 * against 200 x 7/8 = 175 GB/s measured: +0.58%. */
	double S = GIB, s32 = 32 * MIB, B = A100_NVSWITCH_BPS;
	double t0 = (14 + 8.4 + 14 * 3.4) * 1e-6 + 1.75 * S / B;
	double t2 = (7 + 8.4 + 7 * 3.4) * 1e-6 + 0.875 * s32 / B;
	const double want[3] = {S / t0 * 1.75, S / t0 * 1.75, s32 / t2 * 0.875};
	const double meas[3] = {230e9, 230e9, 175e9};
	cJSON *j = json_of("validate --json tests/data/good/validate-collectives.json");
	const cJSON *rows = member(j, "rows");
	cr_assert_eq(cJSON_GetArraySize(rows), 3);
	double sum = 0;
	for (int i = 0; i < 3; i++) {
		const cJSON *p = cJSON_GetArrayItem(member(cJSON_GetArrayItem(rows, i), "points"), 0);
		cr_assert_str_eq(member(p, "algorithm")->valuestring, "ring");
		cr_assert_str_eq(member(p, "protocol")->valuestring, "Simple");
		near(num(p, "simulated_busbw_bps"), want[i], 0.001, "simulated busbw");
		near(num(p, "formula_busbw_bps"), want[i], 0.001, "formula busbw");
		near(num(p, "measured_busbw_bps"), meas[i], 1e-12, "measured busbw");
		near(num(p, "simulated_error_pct"), 100 * (want[i] / meas[i] - 1), 0.002, "error");
		sum += fabs(100 * (want[i] / meas[i] - 1));
	}
	near(want[0], 228.14e9, 1e-4, "row 1 by hand");
	near(want[2], 176.02e9, 1e-4, "row 3 by hand");
	near(num(member(j, "mape"), "simulation_pct"), sum / 3, 0.002, "MAPE");
	cJSON_Delete(j);
	/* The text: the first and last rows' figures rounded by hand. */
	struct cli_run r = fixture_shardlab("validate tests/data/good/validate-collectives.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "230 GB/s                228 GB/s   -0.8%     228 GB/s   "
	                                 "-0.8%\n"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "175 GB/s (algbw 200)    176 GB/s   +0.6%     176 GB/s   "
	                                 "+0.6%\n"), "%s", r.out);
	free(r.out);
}

/* The grown cluster and the file that states it give the same figures,
 * estimated and simulated, training and collectives alike. */
Test(validate, a_grown_cluster_runs_as_the_file_that_states_it)
{
	cJSON *j = json_of("validate --json tests/data/good/validate-grown.json");
	const cJSON *rows = member(j, "rows");
	cr_assert_eq(cJSON_GetArraySize(rows), 2);
	const cJSON *a = cJSON_GetArrayItem(rows, 0), *b = cJSON_GetArrayItem(rows, 1);
	cr_assert_eq(num(a, "devices"), 64);
	cr_assert_eq(num(member(a, "estimate"), "iteration_s"), num(member(b, "estimate"), "iteration_s"));
	cr_assert_eq(num(member(a, "simulation"), "iteration_s"),
	             num(member(b, "simulation"), "iteration_s"));
	cJSON_Delete(j);
	j = json_of("validate --json tests/data/good/validate-grown-collectives.json");
	rows = member(j, "rows");
	const cJSON *p = cJSON_GetArrayItem(member(cJSON_GetArrayItem(rows, 0), "points"), 0);
	const cJSON *q = cJSON_GetArrayItem(member(cJSON_GetArrayItem(rows, 1), "points"), 0);
	cr_assert_eq(num(p, "simulated_busbw_bps"), num(q, "simulated_busbw_bps"));
	cr_assert_eq(num(p, "formula_busbw_bps"), num(q, "formula_busbw_bps"));
	cJSON_Delete(j);
}

Test(validate, usage_errors)
{
	struct cli_run r = fixture_shardlab("validate", true);
	cr_assert_eq(r.status, 2);
	cr_assert_str_eq(r.out, "shardlab validate: missing FILE (see --help)\n");
	free(r.out);
	r = fixture_shardlab("validate --jobs two tests/data/good/validate-training.json", true);
	cr_assert_eq(r.status, 2);
	cr_assert_str_eq(r.out, "shardlab validate: --jobs takes a count from 0 to 1024, got 'two'\n");
	free(r.out);
	r = fixture_shardlab("validate --frobnicate tests/data/good/validate-training.json", true);
	cr_assert_eq(r.status, 2);
	cr_assert_str_eq(r.out, "shardlab validate: unknown option '--frobnicate' (see --help)\n");
	free(r.out);
	/* A scenario is not a validation file: exit 1 with the diagnostic. */
	r = fixture_shardlab("validate scenarios/ffn-8p.json", true);
	cr_assert_eq(r.status, 1);
	cr_assert_str_eq(r.out, "scenarios/ffn-8p.json:2: format: expected \"shardlab-validation\", "
	                        "got \"shardlab-scenario\"\n");
	free(r.out);
}

/* A row may carry the measured peak memory per device: validate reports
 * the estimate's error against it, 100 (estimated / measured - 1), in the
 * JSON and in a table of its own with the rows' MAPE. The tiny file's
 * first row says 4 GB. */
Test(validate, memory_error_where_the_source_measured_it)
{
	cJSON *j = json_of("validate --json --estimate-only tests/data/good/validate-training.json");
	const cJSON *row = cJSON_GetArrayItem(member(j, "rows"), 0);
	const cJSON *est = member(row, "estimate");
	cr_assert_float_eq(member(member(row, "measured"), "memory_bytes_per_device")->valuedouble,
	                   4e9, 1);
	double mem = member(est, "memory_bytes_per_device")->valuedouble;
	cr_expect_float_eq(member(est, "memory_error_pct")->valuedouble, 100 * (mem / 4e9 - 1), 1e-9);
	cr_expect(cJSON_IsNull(member(member(cJSON_GetArrayItem(member(j, "rows"), 1), "estimate"),
	                              "memory_error_pct")));
	cJSON_Delete(j);
	struct cli_run r = fixture_shardlab("validate --estimate-only "
	                                    "tests/data/good/validate-training.json", false);
	cr_expect(strstr(r.out, "memory per device (peak), where the source measured it\n"), "%s",
	          r.out);
	cr_expect(strstr(r.out, "  memory     ") && strstr(r.out, " over 1 row\n"), "%s", r.out);
	free(r.out);
}

/* ------------------------------------------------- the library's runner */

/* The runner as a library: the collectives file's formula figures, worked
 * out by hand in collectives_by_hand, without the command line. */
Test(validate, library_runs_the_collectives_formula)
{
	struct validation *v = validation_load(A, "tests/data/good/validate-collectives.json", &D);
	cr_assert_not_null(v);
	double S = GIB, s32 = 32 * MIB, B = A100_NVSWITCH_BPS;
	double t0 = (14 + 8.4 + 14 * 3.4) * 1e-6 + 1.75 * S / B;
	double t2 = (7 + 8.4 + 7 * 3.4) * 1e-6 + 0.875 * s32 / B;
	const double want_s[3] = {t0, t0, t2};
	struct validation_run_options o = {.estimate_only = true};
	struct validation_collective_result r[3];
	for (int i = 0; i < 3; i++) {
		cr_assert(validation_run_collective(A, &v->collectives[i], &o, &r[i]));
		const struct validation_point_result *p = &r[i].points[0];
		cr_assert_eq(p->algo, COLL_RING);
		cr_assert_str_eq(p->protocol, "Simple");
		near(p->formula_s, want_s[i], 0.001, "formula time");
		cr_assert_not(p->simulated);
		cr_assert_null(p->sim_error);
	}
	struct validation_score s = validation_score_collectives(r, 3);
	cr_assert_eq(s.estimate_n, 3);
	cr_assert_eq(s.simulation_n, 0);
	cr_assert(isnan(s.simulation_pct));
	/* |228.14/230 - 1| twice and |176.02/175 - 1|: (0.81 + 0.81 + 0.58) / 3. */
	near(s.estimate_pct, (2 * fabs(100 * (S / t0 * 1.75 / 230e9 - 1)) +
	                      fabs(100 * (s32 / t2 * 0.875 / 175e9 - 1))) / 3, 1e-9, "MAPE");
	near(s.estimate_pct, (0.809 + 0.809 + 0.583) / 3, 0.01, "MAPE by hand");
}

/* The scores by hand: four rows, one failed, one OOM, two simulated, one
 * with a measured memory. */
Test(validate, scores_by_hand)
{
	struct validation_training_row rows[4] = {{.memory_bytes = 0}, {.memory_bytes = 40e9},
	                                          {.memory_bytes = 0}, {.memory_bytes = 10e9}};
	struct validation_training_result r[4] = {
		{.row = &rows[0], .est_err = 10, .simulated = true, .sim_err = -4},
		{.row = &rows[1], .est_err = -20, .memory_bytes = 30e9, .oom = true},
		{.row = &rows[2], .est_err = 6, .simulated = true, .sim_err = 8},
		{.row = &rows[3], .error = "could not be planned", .est_err = 99},
	};
	struct validation_score s = validation_score_training(r, 4);
	cr_assert_eq(s.estimate_n, 3);
	near(s.estimate_pct, 12, 1e-12, "estimate MAPE (10 + 20 + 6) / 3");
	cr_assert_eq(s.simulation_n, 2);
	near(s.simulation_pct, 6, 1e-12, "simulation MAPE (4 + 8) / 2");
	cr_assert_eq(s.memory_n, 1);
	near(s.memory_pct, 25, 1e-12, "memory MAPE |30/40 - 1|");
	cr_assert_eq(s.failed, 1);
	cr_assert_eq(s.oom, 1);
	struct validation_score none = validation_score_training(r, 0);
	cr_assert(isnan(none.estimate_pct) && none.estimate_n == 0);
}

/* A training row that cannot be planned is a result with its reason, not
 * a failed run; the others are estimated and not simulated. */
Test(validate, library_runs_training_rows)
{
	struct validation *v = validation_load(A, "tests/data/good/validate-training.json", &D);
	cr_assert_not_null(v);
	struct validation_run_options o = {.estimate_only = true};
	int failed = 0;
	for (int i = 0; i < v->n_rows; i++) {
		struct validation_training_result r;
		validation_run_training(A, &v->training[i], &o, &r);
		cr_assert_eq(r.row, &v->training[i]);
		if (r.error) {
			failed++;
			cr_assert_not_null(strstr(r.error, "tensor parallel 8 does not fit"), "%s", r.error);
			continue;
		}
		cr_assert_not_null(r.plan);
		cr_assert_gt(r.est_s, 0);
		near(r.est_value, validation_predicted(r.row, r.est_s), 1e-12, "value");
		near(r.est_err, validation_error_pct(r.est_value, r.row->value), 1e-12, "error");
		cr_assert_not(r.simulated);
		cr_assert_null(r.sim_error);
	}
	cr_assert_eq(failed, 1);
}

/* --calibration: the NVSwitch ports at half their 300 GB/s line rate, B =
 * 150 GB/s; the 1 GiB all-reduce of collectives_by_hand still runs ring
 * Simple, t = (14 + 8.4 + 14 x 3.4) us + 1.75 S / B. The report names the
 * calibration; a calibration of another device is refused. */
Test(validate, a_calibration_replaces_what_it_names, .timeout = 60)
{
	double S = GIB, B = 150e9;
	double t0 = (14 + 8.4 + 14 * 3.4) * 1e-6 + 1.75 * S / B;
	cJSON *j = json_of("validate --json --estimate-only tests/data/good/validate-collectives.json "
	                   "--calibration tests/data/calibrate/a100-half.json");
	const cJSON *p = cJSON_GetArrayItem(member(cJSON_GetArrayItem(member(j, "rows"), 0),
	                                           "points"), 0);
	cr_assert_str_eq(member(p, "protocol")->valuestring, "Simple");
	near(num(p, "formula_busbw_bps"), S / t0 * 1.75, 1e-9, "formula busbw at half the line rate");
	cr_assert_str_eq(member(member(j, "calibration"), "name")->valuestring, "a100-half");
	cJSON_Delete(j);
	struct cli_run r = fixture_shardlab("validate --estimate-only "
	                                    "tests/data/good/validate-collectives.json --calibration "
	                                    "tests/data/calibrate/a100-half.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "\ncalibration a100-half (tests/data/calibrate/a100-half.json)"
	                                 ": 1 figure\n"), "%s", r.out);
	free(r.out);
	r = fixture_shardlab("validate --estimate-only tests/data/good/validate-collectives.json "
	                     "--calibration tests/data/calibrate/pcie.json", true);
	cr_assert_eq(r.status, 1);
	cr_assert_str_eq(r.out, "tests/data/calibrate/pcie.json:6: device: the calibration was fitted "
	                        "on \"GPU\", the topology dgx-a100 has \"NVIDIA A100 SXM 80GB\"\n");
	free(r.out);
}

/* ------------------------------------------------- fits (validation/fit.c) */

/* A model whose figures enter as a training time does: a compute part over
 * a rate ratio, a communication part over a bandwidth ratio, and a count
 * of ops times an overhead (us). Point i's parts are fixed below. */
struct synth {
	double a[64], b[64], k[64];
};

static double synth_predict(void *ctx, int i, const double *x)
{
	const struct synth *s = ctx;
	return s->a[i] / x[0] + s->b[i] / x[1] + s->k[i] * x[2] * 1e-6;
}

static struct synth synth_points(int n)
{
	struct synth s;
	for (int i = 0; i < n; i++) {
		s.a[i] = 1 + (i % 5);
		s.b[i] = 0.5 + 0.3 * (i % 7);
		s.k[i] = 1e4 * (1 + (i % 3));
	}
	return s;
}

static void synth_model(struct validation_model *m, struct synth *s, const double *measured, int n)
{
	*m = (struct validation_model){.n_points = n, .n_figures = 3, .lo = {0.5, 0.5, 0},
	                               .hi = {1.5, 1.5, 200}, .start = {1, 1, 10},
	                               .measured = measured, .predict = synth_predict, .ctx = s};
}

/* Standard normal draws from a fixed LCG (Box-Muller): the same every run. */
static double normal_draw(uint64_t *state)
{
	double u[2];
	for (int j = 0; j < 2; j++) {
		*state = *state * 6364136223846793005ull + 1442695040888963407ull;
		u[j] = ((*state >> 11) + 0.5) / 9007199254740992.0;
	}
	return sqrt(-2 * log(u[0])) * cos(6.283185307179586 * u[1]);
}

/* Measurements made from known figures (0.8, 0.9, 20 us) with no noise:
 * the fit finds them, and every row predicted by the fit of the others
 * (leave-one-out, 8 rows) is exact. */
Test(validate, leave_one_out_of_an_exact_model_is_zero)
{
	const double truth[3] = {0.8, 0.9, 20};
	struct synth s = synth_points(8);
	double meas[8];
	for (int i = 0; i < 8; i++)
		meas[i] = synth_predict(&s, i, truth);
	struct validation_model m;
	synth_model(&m, &s, meas, 8);
	struct validation_fit_result f;
	cr_assert(validation_fit_model(A, &m, &f));
	cr_assert(f.ok);
	for (int j = 0; j < 3; j++)
		near(f.value[j], truth[j], 1e-5, "figure");
	cr_assert_str_eq(f.cv_method, "leave-one-out");
	cr_assert_eq(f.cv_folds, 8);
	cr_assert_eq(f.cv_failed, 0);
	cr_assert(f.cv_mape_pct < 1e-4, "cv MAPE %g%%", f.cv_mape_pct);
	cr_assert(f.mape_pct < 1e-4);
	cr_assert(!f.ill_conditioned);
	for (int j = 0; j < 3; j++)
		cr_assert(f.identifiable[j]);
}

/* The same figures under multiplicative noise of 2% (fixed draws), 40
 * rows: each figure found within two of its standard errors, the
 * cross-validation 10-fold (over 20 rows), its residual spread near the
 * noise's (between half and twice 2%). */
Test(validate, fit_recovers_known_figures_within_their_errors)
{
	const double truth[3] = {0.8, 0.9, 20}, sigma = 0.02;
	struct synth s = synth_points(40);
	double meas[40];
	uint64_t st = 42;
	for (int i = 0; i < 40; i++)
		meas[i] = synth_predict(&s, i, truth) * (1 + sigma * normal_draw(&st));
	struct validation_model m;
	synth_model(&m, &s, meas, 40);
	struct validation_fit_result f;
	cr_assert(validation_fit_model(A, &m, &f));
	cr_assert(f.ok);
	for (int j = 0; j < 3; j++) {
		cr_assert(isfinite(f.std_error[j]) && f.std_error[j] > 0);
		cr_assert(fabs(f.value[j] - truth[j]) <= 2 * f.std_error[j],
		          "figure %d: %g, truth %g, std error %g", j, f.value[j], truth[j],
		          f.std_error[j]);
		near(f.covariance[j * 3 + j], f.std_error[j] * f.std_error[j], 1e-12, "variance");
	}
	cr_assert_str_eq(f.cv_method, "k-fold");
	cr_assert_eq(f.cv_folds, 10);
	cr_assert(f.cv_rms_pct > 50 * sigma && f.cv_rms_pct < 200 * sigma, "cv rms %g%%",
	          f.cv_rms_pct);
}

/* One figure, a scale x predicting every row (predicted = x): least
 * squares on the relative errors give x = sum(1/m) / sum(1/m^2), so each
 * held-out prediction is that over the other four rows, by hand. Four rows
 * near 1 and one at 1.3: the ln(predicted / measured) RMS of the five
 * held-out residuals, and the held-out coverage: each |r_i| against
 * t(0.95, 3 dof) = 2.353363 (tables) times the RMS of the other four;
 * the row at 1.3 (|r| 0.260 against 0.121) is the one outside. */
static double scale_predict(void *ctx, int i, const double *x)
{
	(void)ctx;
	(void)i;
	return x[0];
}

Test(validate, held_out_log_spread_and_coverage_by_hand)
{
	const double meas[5] = {1.0, 1.02, 0.98, 1.01, 1.3};
	struct validation_model m = {.n_points = 5, .n_figures = 1, .lo = {0.5}, .hi = {1.5},
	                             .start = {1}, .measured = meas, .predict = scale_predict};
	struct validation_fit_result f;
	cr_assert(validation_fit_model(A, &m, &f));
	cr_assert(f.ok);
	double r[5], cl = 0;
	for (int i = 0; i < 5; i++) {
		double a = 0, b = 0;
		for (int j = 0; j < 5; j++)
			if (j != i) {
				a += 1 / meas[j];
				b += 1 / (meas[j] * meas[j]);
			}
		r[i] = log(a / b / meas[i]);
		cl += r[i] * r[i];
	}
	near(f.cv_log_rms, sqrt(cl / 5), 1e-6, "ln rms");
	int covered = 0;
	for (int i = 0; i < 5; i++)
		covered += fabs(r[i]) <= 2.353363 * sqrt((cl - r[i] * r[i]) / 4);
	cr_assert_eq(covered, 4);
	cr_assert_eq(f.cv_coverable, 5);
	cr_assert_eq(f.cv_covered, 4);
}

/* Huber's loss against least squares, one scale figure (predicted = x)
 * over four rows measured at 1 and one at 2, which no x describes with
 * the others. Least squares on the relative errors x/m - 1: x =
 * sum(1/m) / sum(1/m^2) = 4.5 / 4.25 = 1.0588, the outlier dragging every
 * row 5.9% off. Huber's: the four rows' errors are x - 1, the fifth's
 * x/2 - 1 is clipped at k s (s = 1.4826 median |r| = 1.4826 |x - 1|),
 * so the estimating equation 4 (x - 1) - 0.5 k s = 0 has x = 1 for its
 * only root (4 > 0.5 x 1.345 x 1.4826): the four rows exact, the
 * outlier's weight towards 0. */
Test(validate, huber_loss_keeps_one_row_from_dragging_the_figure)
{
	const double meas[5] = {1, 1, 1, 1, 2};
	struct validation_model m = {.n_points = 5, .n_figures = 1, .lo = {0.5}, .hi = {1.5},
	                             .start = {1.2}, .measured = meas, .predict = scale_predict};
	struct validation_fit_result ls, hu;
	cr_assert(validation_fit_model(A, &m, &ls));
	cr_assert(ls.ok);
	near(ls.value[0], 4.5 / 4.25, 1e-5, "least squares");
	cr_assert(!isfinite(ls.robust_scale));
	for (int i = 0; i < 5; i++)
		cr_assert_eq(ls.weight[i], 1.0);
	m.loss = VALIDATION_LOSS_HUBER;
	cr_assert(validation_fit_model(A, &m, &hu));
	cr_assert(hu.ok);
	near(hu.value[0], 1, 1e-3, "huber");
	for (int i = 0; i < 4; i++)
		cr_assert_eq(hu.weight[i], 1.0);
	cr_assert(hu.weight[4] < 0.01, "the outlier's weight %g", hu.weight[4]);
	/* Held out, each of the four is predicted from three exact rows and
	 * the outlier: exact again; the outlier from the four: x = 1, -50%. */
	for (int i = 0; i < 4; i++)
		cr_assert(fabs(hu.cv_err_pct[i]) < 0.1, "row %d held out: %g%%", i, hu.cv_err_pct[i]);
	near(hu.cv_err_pct[4], -50, 0.1, "the outlier held out");
}


/* Two figures that move every row alike cannot be told apart: the
 * Jacobian is singular, the fit says so. */
static double twin_predict(void *ctx, int i, const double *x)
{
	(void)ctx;
	return (1 + i) / (x[0] * x[1]);
}

Test(validate, twin_figures_are_not_identifiable)
{
	double meas[6];
	for (int i = 0; i < 6; i++)
		meas[i] = (1 + i) / (0.8 * 0.9);
	struct validation_model m = {.n_points = 6, .n_figures = 2, .lo = {0.5, 0.5},
	                             .hi = {1.5, 1.5}, .start = {1, 1}, .measured = meas,
	                             .predict = twin_predict};
	struct validation_fit_result f;
	cr_assert(validation_fit_model(A, &m, &f));
	cr_assert(f.ok);
	cr_assert(f.ill_conditioned);
	cr_assert(!f.identifiable[0] && !f.identifiable[1]);
}

/* A figure the optimum pushes past its bound stops at it, and is
 * reported there. */
Test(validate, a_figure_at_its_bound_is_reported)
{
	const double truth[3] = {0.8, 0.9, 0};
	struct synth s = synth_points(8);
	double meas[8];
	for (int i = 0; i < 8; i++)
		meas[i] = synth_predict(&s, i, truth) * 0.999 - s.k[i] * 5e-6;
	struct validation_model m;
	synth_model(&m, &s, meas, 8);
	struct validation_fit_result f;
	cr_assert(validation_fit_model(A, &m, &f));
	cr_assert(f.ok);
	cr_assert(f.at_bound[2], "overhead %g", f.value[2]);
	cr_assert(!f.identifiable[2]);
}

/* The rows of tests/data/good/validate-fit.json (GPTs of hidden 1024 to
 * 4096 under TP, PP and DP on one DGX A100), measured as their own
 * estimates with GEMMs at 0.8 of the device's rate, the links at 0.7 of
 * their bandwidth and 30 us of framework time per op and pass: the fit
 * through the estimates finds the three, and out of sample every row is
 * exact. */
Test(validate, training_fit_recovers_figures_set_on_the_rows, .timeout = 300)
{
	struct validation *v = validation_load(A, "tests/data/good/validate-fit.json", &D);
	cr_assert_not_null(v);
	struct validation_fit_options o = {
		.n_figures = 3,
		.figures = {CAL_TRAIN_GEMM_EFFICIENCY, CAL_TRAIN_COMM_EFFICIENCY,
		            CAL_TRAIN_OP_OVERHEAD_US}};
	const double truth[3] = {0.8, 0.7, 30};
	struct validation_run_options ro = {.estimate_only = true};
	for (int i = 0; i < v->n_rows; i++) {
		struct validation_training_row *r = &v->training[i];
		struct topology saved = *r->scenario->topo;
		for (int j = 0; j < 3; j++)
			cost_cal_set(r->scenario->topo, o.figures[j], NULL, truth[j]);
		struct validation_training_result res;
		validation_run_training(A, r, &ro, &res);
		*r->scenario->topo = saved;
		cr_assert_null(res.error, "%s", res.error);
		r->value = res.est_value;
	}
	struct validation_training_fit tf;
	cr_assert(validation_fit_training(A, v, &o, &tf));
	cr_assert(tf.fit.ok, "%s", tf.fit.why);
	cr_assert_eq(tf.fit.n_points, 5);
	near(tf.fit.value[0], truth[0], 1e-3, "gemm efficiency");
	near(tf.fit.value[1], truth[1], 1e-3, "comm efficiency");
	near(tf.fit.value[2], truth[2], 1e-3, "overhead");
	cr_assert(tf.fit.cv_mape_pct < 0.01, "cv MAPE %g%%", tf.fit.cv_mape_pct);
}

/* A ratio figure's upper bound is the physical one where that is tighter
 * than 1.5: the GEMM rate at the device's peak, the NICs at their line
 * rate. topologies/dgx-a100.json: matmul_efficiency 0.8692 (1 / 0.8692 =
 * 1.1505), NIC efficiency 0.94 (1 / 0.94 = 1.0638). Rows made with GEMMs
 * at 1.3 of the device's rate (above its peak) leave the figure at its
 * cap, flagged. */
Test(validate, training_figures_stop_at_the_physical_rate, .timeout = 300)
{
	struct validation *v = validation_load(A, "tests/data/good/validate-fit.json", &D);
	cr_assert_not_null(v);
	const struct topology *t = v->training[0].scenario->topo;
	near(t->device.matmul_efficiency, 0.8692, 1e-12, "the file's GEMM efficiency");
	near(t->nic.efficiency, 0.94, 1e-12, "the file's NIC efficiency");
	struct validation_run_options ro = {.estimate_only = true};
	for (int i = 0; i < v->n_rows; i++) {
		struct validation_training_row *r = &v->training[i];
		struct topology saved = *r->scenario->topo;
		cost_cal_set(r->scenario->topo, CAL_TRAIN_GEMM_EFFICIENCY, NULL, 1.3);
		struct validation_training_result res;
		validation_run_training(A, r, &ro, &res);
		*r->scenario->topo = saved;
		cr_assert_null(res.error, "%s", res.error);
		r->value = res.est_value;
	}
	struct validation_fit_options o = {
		.n_figures = 2, .figures = {CAL_TRAIN_GEMM_EFFICIENCY, CAL_TRAIN_NIC_EFFICIENCY}};
	struct validation_training_fit tf;
	cr_assert(validation_fit_training(A, v, &o, &tf));
	cr_assert(tf.fit.ok, "%s", tf.fit.why);
	near(tf.lo[0], 0.5, 1e-12, "GEMM lower bound");
	near(tf.hi[0], 1 / 0.8692, 1e-9, "GEMM upper bound");
	near(tf.lo[1], 0.5, 1e-12, "NIC lower bound");
	near(tf.hi[1], 1 / 0.94, 1e-9, "NIC upper bound");
	cr_assert(tf.fit.at_bound[0], "GEMM figure %g not flagged at its bound", tf.fit.value[0]);
	cr_assert(tf.fit.value[0] <= 1 / 0.8692 + 1e-9, "GEMM figure %g above the peak",
	          tf.fit.value[0]);
	cr_assert(!tf.fit.identifiable[1], "NICs no row crosses: not identifiable");
}

/* validation/megatron-bridge.json (docs/validation.md, "Megatron-Bridge
 * on B200, GB200 and H100"): every row loads with the parallelism of
 * NVIDIA's table and plans. By hand, from the table's columns (Megatron-
 * Bridge docs/performance-summary.md, 25.11 container): DP = GPUs / (TP x
 * PP x CP), the graph one micro-batch of every replica (MBS x DP samples),
 * and GBS / (MBS x DP) micro-batches, the table's own GA column. The models'
 * parameters, counted by hand from the Hugging Face configs (untied
 * embeddings): l layers of (2 h^2 + 2 h x 1024 + 3 h f + 2 h) + 2 x 128256
 * x h + h, e.g. 8B: 32 x 218,112,000 + 1,050,673,152 + 4096 =
 * 8,030,261,248; 70B (h 8192, f 28672, 80 layers) 70,553,706,496; 405B
 * (h 16384, f 53248, 126 layers) 405,853,388,800: the model cards' 8B, 70B
 * and 405B. */
Test(validate, megatron_bridge_rows_load_with_the_tables_parallelism_and_plan, .timeout = 120)
{
	/* prefix, GPUs, GBS, MBS, sequence, TP, PP, CP, VP, GA, parameters, FSDP */
	static const struct table_row want[] = {
		{"GB200 LLAMA3_8B ", 8, 128, 2, 8192, 1, 1, 1, 1, 8, 8030261248, false},
		{"GB200 LLAMA3_70B ", 64, 256, 2, 8192, 1, 1, 1, 1, 2, 70553706496, true},
		{"GB200 LLAMA3.1_405B ", 256, 1536, 1, 8192, 4, 16, 1, 4, 384, 405853388800, false},
		{"B200 LLAMA3_8B ", 8, 128, 2, 8192, 1, 1, 1, 1, 8, 8030261248, false},
		{"B200 LLAMA3.1_405B ", 128, 64, 1, 8192, 4, 8, 2, 8, 32, 405853388800, false},
		{"H100 LLAMA3_8B ", 8, 128, 1, 8192, 1, 1, 1, 1, 16, 8030261248, true},
		{"H100 LLAMA3_70B ", 64, 128, 1, 8192, 4, 8, 1, 5, 64, 70553706496, false},
		{"H100 LLAMA3.1_405B ", 1024, 512, 1, 8192, 8, 8, 2, 8, 64, 405853388800, false},
	};
	table_rows_check("validation/megatron-bridge.json", want, (int)(sizeof want / sizeof want[0]));
}

/* validation/mindspeed-llm-910b.json, MindSpeed-LLM's performance table at
 * v1.0.RC2.0 (docs/validation.md, "Ascend 910B: MindSpeed-LLM"): every row
 * loads, its data-parallel degree and micro-batches follow from its
 * script's figures (DP = NPUs / (TP x PP), GBS / (MBS x DP) micro-batches,
 * GBS x sequence tokens an iteration), and it is estimated. Its errors are
 * reported, never tested against a threshold. Five models' parameters by
 * hand from their published dimensions (untied unless said):
 *   LLaMA-2 13B: 2 x 32000 x 5120 + 40 (4 x 5120^2 + 3 x 5120 x 13824
 *     + 2 x 5120) + 5120 = 327,680,000 + 12,688,179,200 + 5,120
 *     = 13,015,864,320;
 *   LLaMA-3 8B: 2 x 128256 x 4096 + 32 (2 x 4096^2 + 2 x 4096 x 1024
 *     + 3 x 4096 x 14336 + 2 x 4096) + 4096 = 8,030,261,248;
 *   Qwen1.5 0.5B (tied, q/k/v biases): 151936 x 1024 + 24 (4 x 1024^2
 *     + 3 x 1024 + 3 x 1024 x 2816 + 2 x 1024) + 1024 = 463,987,712;
 *   Yi 34B: 2 x 64000 x 7168 + 60 (2 x 7168^2 + 2 x 7168 x 1024
 *     + 3 x 7168 x 20480 + 2 x 7168) + 7168 = 34,388,917,248;
 *   Gemma 7B (tied, 16 heads of 256 = 4096 beside hidden 3072, no
 *     grouping): 256000 x 3072 + 28 (3072 x 3 x 4096 + 4096 x 3072
 *     + 3 x 3072 x 24576 + 2 x 3072) + 3072 = 786,432,000
 *     + 28 x 276,830,208 + 3,072 = 8,537,680,896 (the published 8.54B). */
Test(validate, loads_the_mindspeed_llm_set)
{
	struct validation *v = validation_load(A, "validation/mindspeed-llm-910b.json", &D);
	cr_assert_not_null(v);
	cr_assert_eq(D.count, 0);
	cr_assert_eq(v->n_rows, 30);
	static const struct {
		const char *prefix;
		int64_t params;
	} by_hand[] = {{"MindSpeed-LLM Gemma 7B ", 8537680896},
	               {"MindSpeed-LLM LLaMA-2 13B ", 13015864320},
	               {"MindSpeed-LLM LLaMA-3 8B ", 8030261248},
	               {"MindSpeed-LLM Qwen1.5 0.5B ", 463987712},
	               {"MindSpeed-LLM Yi 34B ", 34388917248}};
	int found = 0;
	struct validation_run_options o = {.estimate_only = true};
	for (int i = 0; i < v->n_rows; i++) {
		const struct validation_training_row *r = &v->training[i];
		const struct scenario *s = r->scenario;
		int64_t tp = r->tensor_parallel, pp = s->training.pipeline_stages;
		int64_t dp = s->devices / (tp * pp), gbs = s->training.global_batch;
		cr_expect_eq(dp * tp * pp, s->devices, "%s", r->name);
		cr_expect_eq(s->graph->batch, r->micro_batch * dp, "%s", r->name);
		cr_expect_eq(s->training.micro_batches * r->micro_batch * dp, gbs, "%s", r->name);
		cr_expect_eq(r->measure, MEASURE_TOKENS_PER_S_PER_DEVICE, "%s", r->name);
		cr_expect_eq(r->tokens_per_iteration, (double)gbs * (double)s->graph->gen->seq,
		             "%s", r->name);
		for (size_t k = 0; k < sizeof by_hand / sizeof by_hand[0]; k++) {
			if (strncmp(r->name, by_hand[k].prefix, strlen(by_hand[k].prefix)))
				continue;
			int64_t params = 0;
			cr_assert(graph_params_fit(s->graph, &params));
			cr_expect_eq(params, by_hand[k].params, "%s", r->name);
			found++;
		}
		struct validation_training_result res;
		validation_run_training(A, r, &o, &res);
		cr_expect_null(res.error, "%s: %s", r->name, res.error);
		cr_expect_gt(res.est_s, 0, "%s", r->name);
	}
	cr_expect_eq(found, 5);
}

/* validation/mlperf-gpt3-h100.json: NVIDIA's MLPerf Training v3.1 GPT-3
 * runs on 64 to 1,344 DGX H100. Each row's GPUs are its nodes x 8, its
 * data-parallel degree GPUs / (TP 4 x PP 8), its micro-batches a pipeline
 * the logged global batch over that (micro-batch 1): 2,048 / 16 = 128,
 * 3,072 / 24 = 128, then 16, 16, 16 at 128 to 256 replicas and 8 at 320
 * and 336, by hand. The model is GPT-3 175B with the benchmark's 50,257
 * tokens padded to 50,688: 96 (12 h^2 + 13 h) + 50,688 h + 2,048 h + 2 h
 * at h = 12,288 = 174,609,555,456 parameters. Every row plans and
 * estimates. */
Test(validate, loads_the_mlperf_set)
{
	struct validation *v = validation_load(A, "validation/mlperf-gpt3-h100.json", &D);
	cr_assert_not_null(v);
	cr_assert_eq(D.count, 0);
	cr_assert_eq(v->n_rows, 7);
	static const struct {
		int64_t nodes, gbs, micro;
	} by_hand[] = {{64, 2048, 128}, {96, 3072, 128}, {512, 2048, 16}, {768, 3072, 16},
	               {1024, 4096, 16}, {1280, 2560, 8}, {1344, 2688, 8}};
	struct validation_run_options o = {.estimate_only = true};
	for (int i = 0; i < v->n_rows; i++) {
		const struct validation_training_row *r = &v->training[i];
		const struct scenario *s = r->scenario;
		cr_expect_eq(s->devices, by_hand[i].nodes * 8, "%s", r->name);
		cr_expect_eq(s->training.global_batch, by_hand[i].gbs, "%s", r->name);
		cr_expect_eq(s->training.micro_batches, by_hand[i].micro, "%s", r->name);
		cr_expect_eq(r->tensor_parallel, 4, "%s", r->name);
		cr_expect_eq(s->training.pipeline_stages, 8, "%s", r->name);
		cr_expect_eq(s->training.virtual_stages, 12, "%s", r->name);
		cr_expect_eq(r->measure, MEASURE_ITERATION_S, "%s", r->name);
		int64_t params = 0;
		cr_assert(graph_params_fit(s->graph, &params));
		cr_expect_eq(params, 174609555456, "%s", r->name);
		struct validation_training_result res;
		validation_run_training(A, r, &o, &res);
		cr_expect_null(res.error, "%s: %s", r->name, res.error);
		cr_expect_gt(res.est_s, 0, "%s", r->name);
	}
}
