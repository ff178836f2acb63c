/* test_export.c — plans out to the frameworks and back (cli/export.c and
 * the scenario's "mindspore_strategy"): MindSpore's operator strategy JSON
 * in the layout MindSpore's set_op_strategy_config writes, with seed
 * 000's propagated strategies; the file read back as shard() configs gives
 * the same plan; Megatron-LM's arguments worked out from the scenarios. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "fixture.h"

/* The source tree: meson runs the tests there (tests/meson.build, workdir);
 * $PWD is the shell's, wherever meson was started from. */
static const char *source_root(void)
{
	static char dir[4096];
	return getcwd(dir, sizeof dir) ? dir : ".";
}

TestSuite(export, .init = fixture_setup, .fini = fixture_teardown);

static char *tmp_dir(void)
{
	char *d = strdup("/tmp/shardlab-export-XXXXXX");
	cr_assert_not_null(mkdtemp(d));
	return d;
}

static const cJSON *member(const cJSON *o, const char *k)
{
	const cJSON *m = cJSON_GetObjectItemCaseSensitive(o, k);
	cr_assert_not_null(m, "no member \"%s\"", k);
	return m;
}

/* "[[2,1],[1,4]]" of a parallel_strategy array. */
static void strategy_text(const cJSON *a, char *buf, size_t size)
{
	char *s = cJSON_PrintUnformatted(a);
	snprintf(buf, size, "%s", s);
	free(s);
}

Test(export, mindspore_json_of_seed000)
{
	/* Seed 000: dense1.matmul configured ((2,1),(1,4)) on 8 devices;
	 * propagation gives Add ((2,4),(4)), ReLU ((2,4)), MatMul ((2,4),(4,1)),
	 * Add ((2,4),(4)) (seed 000's golden result, docs/planner.md). MindSpore's file:
	 * {"current_stage": 0, "parallel_strategy_item": {NAME: {"parallel_strategy":
	 * [...], "stage": 0}}}, keys in byte order. */
	struct cli_run r = fixture_shardlab("plan scenarios/ffn-8p.json --export mindspore -", false);
	cr_assert_eq(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "not JSON:\n%s", r.out);
	cr_assert_eq(cJSON_GetArraySize(j), 2);
	cr_assert_str_eq(j->child->string, "current_stage");
	cr_assert_eq(member(j, "current_stage")->valuedouble, 0);
	const cJSON *items = member(j, "parallel_strategy_item");
	static const char *const names[] = {"dense1.add", "dense1.matmul", "dense2.add",
	                                    "dense2.matmul", "relu"};
	static const char *const want[] = {"[[2,4],[4]]", "[[2,1],[1,4]]", "[[2,4],[4]]",
	                                   "[[2,4],[4,1]]", "[[2,4]]"};
	cr_assert_eq(cJSON_GetArraySize(items), 5);
	int k = 0;
	for (const cJSON *it = items->child; it; it = it->next, k++) {
		cr_assert_str_eq(it->string, names[k]); /* byte order */
		cr_assert_eq(cJSON_GetArraySize(it), 2);
		cr_assert_str_eq(it->child->string, "parallel_strategy");
		cr_assert_str_eq(it->child->next->string, "stage");
		cr_assert_eq(member(it, "stage")->valuedouble, 0);
		char s[128];
		strategy_text(member(it, "parallel_strategy"), s, sizeof s);
		cr_expect_str_eq(s, want[k], "%s", names[k]);
	}
	cJSON_Delete(j);
	free(r.out);
}

Test(export, mindspore_stage_follows_the_pipeline)
{
	/* gpt-small-910a-32p: two pipeline stages; the first op (the embedding)
	 * is on stage 0 and the loss on stage 1. */
	struct cli_run r = fixture_shardlab("plan scenarios/gpt-small-910a-32p.json --export "
	                                    "mindspore -", false);
	cr_assert_eq(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j);
	const cJSON *items = member(j, "parallel_strategy_item");
	cr_expect_eq(member(member(items, "embed.word"), "stage")->valuedouble, 0);
	cr_expect_eq(member(member(items, "loss"), "stage")->valuedouble, 1);
	cJSON_Delete(j);
	free(r.out);
}

/* The scenario `base` with its "shard" replaced by "mindspore_strategy". */
static char *scenario_reading(const char *dir, const char *base, const char *strategy)
{
	FILE *f = fopen(base, "rb");
	cr_assert_not_null(f);
	char text[65536];
	size_t n = fread(text, 1, sizeof text - 1, f);
	fclose(f);
	text[n] = '\0';
	cJSON *s = cJSON_Parse(text);
	cr_assert_not_null(s);
	cJSON_DeleteItemFromObjectCaseSensitive(s, "shard");
	/* Paths in the copy: absolute, as it lives elsewhere. */
	char cwd[1024], path[2048];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	static const char *const refs[] = {"model", "topology"};
	for (int i = 0; i < 2; i++) {
		cJSON *v = cJSON_GetObjectItemCaseSensitive(s, refs[i]);
		if (cJSON_IsString(v)) {
			snprintf(path, sizeof path, "%s/scenarios/%s", cwd, v->valuestring);
			cJSON_ReplaceItemInObjectCaseSensitive(s, refs[i], cJSON_CreateString(path));
		}
	}
	cJSON_AddStringToObject(s, "mindspore_strategy", strategy);
	char *out = cJSON_Print(s);
	cJSON_Delete(s);
	char *file = malloc(strlen(dir) + 32);
	sprintf(file, "%s/roundtrip.json", dir);
	f = fopen(file, "wb");
	fputs(out, f);
	fclose(f);
	free(out);
	return file;
}

static enum planner_kind planner_kind_named(const char *name)
{
	for (int k = 0; k < PLANNER_COUNT; k++)
		if (!strcmp(planner_names[k], name))
			return (enum planner_kind)k;
	cr_assert_fail("no planner %s", name);
	return PLANNER_PROPAGATE;
}

static void round_trip(const char *scenario, const char *planner)
{
	char *dir = tmp_dir(), args[1024], strategy[512];
	snprintf(strategy, sizeof strategy, "%s/strategy.json", dir);
	snprintf(args, sizeof args, "plan %s --planner %s --export mindspore %s", scenario, planner,
	         strategy);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0);
	free(r.out);
	char *copy = scenario_reading(dir, scenario, strategy);

	struct scenario *s1 = fixture_scenario(scenario);
	struct scenario *s2 = fixture_scenario(copy);
	cr_assert_eq(s2->n_shards, s2->graph->n_ops, "every op comes configured from the file");
	struct plan_options o = {0};
	struct plan *p1 = plan_make(A, s1, planner_kind_named(planner), &o, &D);
	struct plan *p2 = plan_make(A, s2, PLANNER_PROPAGATE, &o, &D);
	cr_assert(p1 && p2);
	for (int i = 0; i < s1->graph->n_ops; i++) {
		const struct op *op = &s1->graph->ops[i];
		for (int k = 0; k < op->n_in; k++)
			for (int d = 0; d < s1->graph->tensors[op->in[k]].rank; d++)
				cr_expect_eq(p1->ops[i].cuts[k][d], p2->ops[i].cuts[k][d],
				             "%s input %d dim %d", op->name, k, d);
		cr_expect_eq(p2->ops[i].source, STRATEGY_CONFIGURED);
	}
	struct estimate e1, e2;
	cr_assert(plan_estimate(A, p1, &e1, &D) && plan_estimate(A, p2, &e2, &D));
	cr_expect_eq(e1.iteration_s, e2.iteration_s);
	cr_expect_eq(e1.memory_bytes_per_device, e2.memory_bytes_per_device);
	unlink(strategy);
	unlink(copy);
	rmdir(dir);
	free(copy);
	free(dir);
}

Test(export, mindspore_round_trip_propagation) { round_trip("scenarios/ffn-8p.json", "propagate"); }
Test(export, mindspore_round_trip_recursive)
{
	round_trip("scenarios/gpt-4layer-32p.json", "recursive");
}
Test(export, mindspore_round_trip_megatron)
{
	round_trip("scenarios/megatron-mlp-8p.json", "megatron");
}

static void strategy_diag(const char *json, const char *want)
{
	char *dir = tmp_dir(), path[512];
	snprintf(path, sizeof path, "%s/bad.json", dir);
	FILE *f = fopen(path, "wb");
	fputs(json, f);
	fclose(f);
	char *copy = scenario_reading(dir, "scenarios/ffn-8p.json", path);
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = scenario_load(A, copy, &d);
	cr_assert_null(s);
	cr_assert_geq(d.count, 1);
	char *got = diag_format(&d.items[0]);
	char expect[1024];
	snprintf(expect, sizeof expect, "%s:%s", path, want);
	cr_expect_str_eq(got, expect);
	free(got);
	diag_list_free(&d);
	unlink(path);
	unlink(copy);
	rmdir(dir);
	free(copy);
	free(dir);
}

Test(export, mindspore_strategy_diagnostics)
{
	strategy_diag("{\"current_stage\": 0, \"parallel_strategy_item\": {\n"
	              " \"dense9.matmul\": {\"stage\": 0, \"parallel_strategy\": [[2, 1], [1, 4]]}}}\n",
	              "2: parallel_strategy_item[\"dense9.matmul\"]: no op named \"dense9.matmul\" in "
	              "model ffn (did you mean \"dense1.matmul\"?)");
	strategy_diag("{\"current_stage\": 0, \"parallel_strategy_item\": {\n"
	              " \"relu\": {\"stage\": 0, \"parallel_strategy\": [[3, 1]]}}}\n",
	              "2: parallel_strategy_item.relu.parallel_strategy[0][0]: cut 3 does not divide "
	              "dimension 0 of dense1.add (size 64)");
	strategy_diag("{\"current_stage\": 0}\n", "1: parallel_strategy_item: missing required field");
	strategy_diag("{\"current_stage\": 0, \"parallel_strategy_item\": {\n"
	              " \"relu\": {\"stage\": 0, \"strategy\": [[1, 1]]}}}\n",
	              "2: parallel_strategy_item.relu.strategy: unknown key \"strategy\" (allowed: "
	              "\"stage\", \"parallel_strategy\")");
}

/* ------------------------------------------------------------ Megatron */

Test(export, megatron_arguments_of_the_mistral_scenario)
{
	/* mistral-7b-h100-64p: 64 GPUs in 8 DGX H100 servers; the megatron
	 * planner puts TP 8 inside a server, the scenario asks for 2 pipeline
	 * stages, so DP = 64 / (8 x 2) = 4; the graph's micro_batch 4 is one
	 * micro-batch of the 4 replicas: 1 sample each. Selective recompute,
	 * ZeRO 1, global batch 256. Mistral 7B: 32 layers, hidden 4096, ffn
	 * 14336, 32 heads in 8 query groups, RoPE, RMSNorm, SwiGLU, no biases,
	 * untied head, sequence 4096, vocabulary 32000, rotary base 10000,
 * RMSNorm epsilon 1e-5 (its config.json), bf16. */
	struct cli_run r = fixture_shardlab("plan scenarios/mistral-7b-h100-64p.json --export "
	                                    "megatron -", false);
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.out,
	                 "# Megatron-LM arguments for mistral-7b-h100-64p: 64 devices = TP 8 x PP 2 "
	                 "x DP 4\n"
	                 "--tensor-model-parallel-size 8 \\\n"
	                 "--pipeline-model-parallel-size 2 \\\n"
	                 "--recompute-granularity selective \\\n"
	                 "--use-distributed-optimizer \\\n"
	                 "--micro-batch-size 1 \\\n"
	                 "--global-batch-size 256 \\\n"
	                 "--num-layers 32 \\\n"
	                 "--hidden-size 4096 \\\n"
	                 "--ffn-hidden-size 14336 \\\n"
	                 "--num-attention-heads 32 \\\n"
	                 "--group-query-attention \\\n"
	                 "--num-query-groups 8 \\\n"
	                 "--seq-length 4096 \\\n"
	                 "--vocab-size 32000 \\\n"
	                 "--max-position-embeddings 4096 \\\n"
	                 "--position-embedding-type rope \\\n"
	                 "--rotary-base 10000 \\\n"
	                 "--norm-epsilon 1e-05 \\\n"
	                 "--normalization RMSNorm \\\n"
	                 "--swiglu \\\n"
	                 "--disable-bias-linear \\\n"
	                 "--untie-embeddings-and-output-weights \\\n"
	                 "--hidden-dropout 0 \\\n"
	                 "--attention-dropout 0 \\\n"
	                 "--bf16\n");
	free(r.out);
}

Test(export, megatron_virtual_pipeline_and_sequence_parallel)
{
	/* llama2-70b-h100-512p: TP 8, PP 8, 2 chunks per stage over 80 layers:
	 * 80 / (8 x 2) = 5 layers per virtual stage; DP = 512 / 64 = 8, and the
	 * graph's micro_batch 8 is 1 sample per replica. */
	struct cli_run r = fixture_shardlab("plan scenarios/llama2-70b-h100-512p.json --export "
	                                    "megatron -", false);
	cr_assert_eq(r.status, 0);
	cr_expect_not_null(strstr(r.out, "TP 8 x PP 8 x DP 8\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--num-layers-per-virtual-pipeline-stage 5 \\\n"));
	cr_expect_not_null(strstr(r.out, "--micro-batch-size 1 \\\n"));
	cr_expect_not_null(strstr(r.out, "--global-batch-size 1024 \\\n"));
	free(r.out);
}

Test(export, megatron_tp_comm_overlap)
{
	/* A GPT at TP 4 with sequence parallelism and its communication
	 * overlapped: both flags, in Megatron-LM's order; without the overlap,
	 * --sequence-parallel alone; with MindFormers' slices, the flag and a
	 * comment that Megatron-LM has none. */
	char dir[] = "/tmp/shardlab-export-XXXXXX", path[128], args[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/sp.json", dir);
	static const char *const overlap[] = {"true", "false", "true, \"tp_comm_overlap_slices\": 2"};
	for (int k = 0; k < 3; k++) {
		fixture_write(path,
		              "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"sp\","
		              " \"model\": {\"name\": \"m\", \"generator\": {\"kind\": \"gpt\","
		              " \"hidden\": 256, \"layers\": 2, \"heads\": 8, \"seq\": 128,"
		              " \"vocab\": 1024, \"ffn\": 1024, \"micro_batch\": 2}},"
		              " \"topology\": \"%s/topologies/dgx-h100.json\", \"devices\": 8,"
		              " \"training\": {\"global_batch\": 8, \"tensor_parallel\": 4,"
		              " \"sequence_parallel\": true, \"tp_comm_overlap\": %s}}",
		              source_root(), overlap[k]);
		snprintf(args, sizeof args, "plan %s --planner megatron --export megatron -", path);
		struct cli_run r = fixture_shardlab(args, false);
		cr_assert_eq(r.status, 0, "%s", r.out);
		cr_expect_not_null(strstr(r.out, "TP 4 x PP 1 x DP 2\n"), "%s", r.out);
		if (k == 0) {
			cr_expect_not_null(strstr(r.out, "--sequence-parallel \\\n--tp-comm-overlap \\\n"),
			                   "%s", r.out);
			/* the plan names the GEMMs under each collective: fc1's
			 * gather runs under fc1 */
			snprintf(args, sizeof args, "plan %s --planner megatron", path);
			struct cli_run t = fixture_shardlab(args, false);
			cr_expect_not_null(strstr(t.out, "layers.0.ln2 -> layers.0.mlp.fc1.matmul (input 0): "),
			                   "%s", t.out);
			cr_expect_not_null(strstr(t.out, ", under the GEMM of layers.0.mlp.fc1.matmul\n"),
			                   "%s", t.out);
			free(t.out);
		}
		else if (k == 1)
			cr_expect(strstr(r.out, "--sequence-parallel \\\n") &&
			          !strstr(r.out, "--tp-comm-overlap"), "%s", r.out);
		else
			cr_expect(strstr(r.out, "--tp-comm-overlap \\\n") &&
			          strstr(r.out, "\n# tp_comm_overlap_slices (MindFormers' fine_grain_interleave) "
			                        "has no Megatron-LM flag"), "%s", r.out);
		if (k != 2)
			cr_expect_null(strstr(r.out, "tp_comm_overlap_slices"), "%s", r.out);
		free(r.out);
	}
	remove(path);
	rmdir(dir);
}

/* A 4-layer GPT (8 heads) on `devices` GPUs of a DGX H100, `batch`
 * samples a micro-batch over the replicas, as `training` sets it,
 * exported; the arguments (stdout) or the error (want_err: stderr, exit 1). */
static struct cli_run export_gpt(int devices, int batch, const char *training, bool want_err)
{
	char dir[] = "/tmp/shardlab-export-XXXXXX", path[128], args[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/m.json", dir);
	fixture_write(path,
	              "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"m\","
	              " \"model\": {\"name\": \"m\", \"generator\": {\"kind\": \"gpt\","
	              " \"hidden\": 256, \"layers\": 4, \"heads\": 8, \"seq\": 128,"
	              " \"vocab\": 1024, \"ffn\": 1024, \"micro_batch\": %d}},"
	              " \"topology\": \"%s/topologies/dgx-h100.json\", \"devices\": %d,"
	              " \"training\": {\"global_batch\": 12, %s}}",
	              batch, source_root(), devices, training);
	snprintf(args, sizeof args, "plan %s --planner megatron --export megatron -", path);
	struct cli_run r = fixture_shardlab(args, want_err);
	remove(path);
	rmdir(dir);
	return r;
}

Test(export, megatron_refuses_what_megatron_lm_refuses)
{
	/* 3 stages over 4 layers: Megatron-LM's arguments.py asserts "Number of
	 * layers should be divisible by the pipeline-model-parallel size". */
	struct cli_run r = export_gpt(6, 1, "\"tensor_parallel\": 2, \"pipeline_stages\": 3, "
	                              "\"micro_batches\": 12", true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "Megatron-LM would refuse this plan: 3 pipeline stages do "
	                                 "not divide the 4 layers"), "%s", r.out);
	free(r.out);
	/* GPipe: Megatron-LM's schedules are 1F1B and interleaved 1F1B. */
	r = export_gpt(8, 2, "\"tensor_parallel\": 2, \"pipeline_stages\": 2, "
	               "\"micro_batches\": 6, \"schedule\": \"gpipe\"", true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "Megatron-LM has no GPipe schedule"), "%s", r.out);
	free(r.out);
	/* nor the zero-bubble schedule of Qi et al. (sail-sg's fork has it) */
	r = export_gpt(8, 2, "\"tensor_parallel\": 2, \"pipeline_stages\": 2, "
	               "\"micro_batches\": 6, \"schedule\": \"zb-h1\"", true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "Megatron-LM has no zero-bubble (ZB-H1) schedule"), "%s",
	                   r.out);
	free(r.out);
	/* ZB-V (2 chunks of 2 layers on each of 2 stages) and DualPipe: no
	 * Megatron-LM flag either; the refusal names where they run */
	r = export_gpt(8, 2, "\"tensor_parallel\": 2, \"pipeline_stages\": 2, "
	               "\"micro_batches\": 6, \"schedule\": \"zb-v\"", true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "Megatron-LM has no zero-bubble (ZB-V) schedule (it runs "
	                                 "1F1B); sail-sg/zero-bubble-pipeline-parallelism's fork "
	                                 "runs it with --zero-bubble-v-schedule"), "%s", r.out);
	free(r.out);
	r = export_gpt(8, 2, "\"tensor_parallel\": 2, \"pipeline_stages\": 2, "
	               "\"micro_batches\": 6, \"schedule\": \"dualpipe\"", true);
	cr_expect_eq(r.status, 1, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "Megatron-LM has no DualPipe schedule"), "%s", r.out);
	free(r.out);
}

/* `plan --planner megatron --export megatron -` of a scenario on the 8
 * GPUs of a DGX H100 with the model and training objects given (JSON). */
static struct cli_run export_scenario(const char *model, const char *training)
{
	char dir[] = "/tmp/shardlab-export-XXXXXX", path[128], args[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/m.json", dir);
	fixture_write(path,
	              "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"m\","
	              " \"model\": %s, \"topology\": \"%s/topologies/dgx-h100.json\","
	              " \"devices\": 8, \"training\": %s}",
	              model, source_root(), training);
	snprintf(args, sizeof args, "plan %s --planner megatron --export megatron -", path);
	struct cli_run r = fixture_shardlab(args, false);
	remove(path);
	rmdir(dir);
	return r;
}

/* The scenario model object naming models/hf/FILE at sequence 4096. */
static const char *hf_model(char *buf, size_t size, const char *file, int micro_batch)
{
	snprintf(buf, size, "{\"hf_config\": \"%s/models/hf/%s\", \"seq\": 4096, "
	         "\"micro_batch\": %d}", source_root(), file, micro_batch);
	return buf;
}

/* DeepSeek-V3's architecture as Megatron-Core's TransformerConfig names
 * it (NVIDIA/Megatron-LM, transformer_config.py: multi_latent_attention,
 * q_lora_rank, kv_lora_rank, qk_head_dim, qk_pos_emb_head_dim, v_head_dim,
 * mtp_num_layers, moe_router_score_function, moe_router_enable_expert_bias,
 * moe_router_num_groups, moe_router_group_topk), from a small MLA + MoE
 * generator with one prediction module. */
Test(export, megatron_mla_mtp_and_sigmoid_router)
{
	struct cli_run r = export_scenario(
	        "{\"name\": \"m\", \"generator\": {\"kind\": \"llama\","
	        " \"hidden\": 256, \"layers\": 4, \"heads\": 8, \"seq\": 128, \"vocab\": 1024,"
	        " \"ffn\": 512, \"micro_batch\": 8, \"experts\": 8, \"top_k\": 2,"
	        " \"shared_experts\": 1, \"expert_ffn\": 64, \"dense_layers\": 1,"
	        " \"sigmoid_router\": true, \"expert_groups\": 4, \"group_top_k\": 2,"
	        " \"q_lora_rank\": 64, \"kv_lora_rank\": 32, \"qk_rope_head_dim\": 16,"
	        " \"qk_nope_head_dim\": 32, \"v_head_dim\": 32, \"mtp_layers\": 1}}",
	        "{\"global_batch\": 16, \"tensor_parallel\": 1, \"expert_parallel\": 4}");
	cr_assert_eq(r.status, 0, "%s", r.out);
	static const char *const want[] = {
		"--multi-latent-attention", "--q-lora-rank 64", "--kv-lora-rank 32",
		"--qk-head-dim 32", "--qk-pos-emb-head-dim 16", "--v-head-dim 32",
		"--mtp-num-layers 1", "--moe-router-score-function sigmoid",
		"--moe-router-enable-expert-bias", "--moe-router-num-groups 4",
		"--moe-router-group-topk 2"};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		cr_expect_not_null(strstr(r.out, want[i]), "%s missing:\n%s", want[i], r.out);
	free(r.out);
}

/* A head width other than hidden / heads (Mistral NeMo's config, 32 heads
 * of 128 beside a hidden size of 5,120) is Megatron-LM's --kv-channels;
 * without head_dim the argument is left out (Megatron-LM derives it). */
Test(export, megatron_kv_channels_of_a_head_dim)
{
	char model[4352]; /* source_root() is a path */
	struct cli_run r = export_scenario(hf_model(model, sizeof model,
	                                            "mistral-nemo-base-2407.json", 1),
	                                   "{\"global_batch\": 8, \"tensor_parallel\": 8}");
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--hidden-size 5120 \\\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--num-attention-heads 32 \\\n--kv-channels 128 \\\n"),
	                   "%s", r.out);
	free(r.out);
	r = fixture_shardlab("plan scenarios/mistral-7b-h100-64p.json --export megatron -", false);
	cr_assert_eq(r.status, 0);
	cr_expect_null(strstr(r.out, "--kv-channels"), "%s", r.out);
	cr_expect_null(strstr(r.out, "--qk-layernorm"), "%s", r.out);
	free(r.out);
}

/* Qwen3's RMSNorm over each head of q and k (qk_norm) is Megatron-Core's
 * qk_layernorm (--qk-layernorm); Qwen3-30B-A3B's heads of 128 beside a
 * hidden size of 2,048 are --kv-channels 128. */
Test(export, megatron_qk_layernorm_of_qwen3)
{
	char model[4352]; /* source_root() is a path */
	struct cli_run r = export_scenario(hf_model(model, sizeof model, "qwen3-30b-a3b.json", 8),
	                                   "{\"global_batch\": 64, \"tensor_parallel\": 1, "
	                                   "\"expert_parallel\": 8}");
	cr_assert_eq(r.status, 0, "%s", r.out);
	static const char *const want[] = {"--kv-channels 128", "--qk-layernorm",
	                                   "--num-experts 128", "--moe-router-topk 8",
	                                   "--moe-ffn-hidden-size 768"};
	for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
		cr_expect_not_null(strstr(r.out, want[i]), "%s missing:\n%s", want[i], r.out);
	free(r.out);
}

/* training.moe_dispatcher "hybridep" and "deepep" are Megatron-Core's flex
 * dispatcher with that backend (TransformerConfig's
 * moe_token_dispatcher_type and moe_flex_dispatcher_backend), unpadded as
 * Megatron-Bridge's recipes run it; the default the all-to-all dispatcher
 * padded to the capacity. */
Test(export, megatron_moe_dispatcher)
{
	char model[4352], training[160], want[96]; /* source_root() is a path */
	static const char *const backend[] = {NULL, "hybridep", "deepep"};
	for (int k = 0; k < 3; k++) {
		/* the HybridEP run with its all-to-alls overlapped, too */
		snprintf(training, sizeof training,
		         "{\"global_batch\": 64, \"tensor_parallel\": 1, \"expert_parallel\": 8%s%s%s%s}",
		         backend[k] ? ", \"moe_dispatcher\": \"" : "", backend[k] ? backend[k] : "",
		         backend[k] ? "\"" : "", k == 1 ? ", \"moe_a2a_overlap\": true" : "");
		struct cli_run r = export_scenario(
			hf_model(model, sizeof model, "qwen3-30b-a3b.json", 8), training);
		cr_assert_eq(r.status, 0, "%s", r.out);
		bool flex = backend[k] != NULL;
		cr_expect_eq(strstr(r.out, "--moe-token-dispatcher-type flex \\\n") != NULL, flex, "%s",
		             r.out);
		if (flex) {
			snprintf(want, sizeof want, "--moe-flex-dispatcher-backend %s \\\n", backend[k]);
			cr_expect_not_null(strstr(r.out, want), "%s", r.out);
		}
		cr_expect_eq(strstr(r.out, "--moe-token-dispatcher-type alltoall \\\n") != NULL, !flex,
		             "%s", r.out);
		cr_expect_eq(strstr(r.out, "--moe-pad-expert-input-to-capacity") != NULL, !flex, "%s",
		             r.out);
		cr_expect_eq(strstr(r.out, "--overlap-moe-expert-parallel-comm \\\n") != NULL, k == 1,
		             "%s", r.out);
		free(r.out);
	}
}

/* Expert parallelism folded above DP (EP 8 over TP 2 x DP 4 on a DGX
 * H100, with sequence parallelism): the experts whole on each rank,
 * Megatron-Core's --expert-tensor-parallel-size 1, whose default is TP
 * (ModelParallelConfig.expert_tensor_parallel_size); EP 4 dividing DP 4
 * keeps the default and says nothing. */
Test(export, megatron_folded_experts_at_expert_tensor_parallel_1)
{
	char model[4352];
	static const char *const training[] = {
		"{\"global_batch\": 64, \"tensor_parallel\": 2, \"sequence_parallel\": true, "
		"\"expert_parallel\": 8}",
		"{\"global_batch\": 64, \"tensor_parallel\": 2, \"sequence_parallel\": true, "
		"\"expert_parallel\": 4}"};
	for (int k = 0; k < 2; k++) {
		struct cli_run r =
		        export_scenario(hf_model(model, sizeof model, "qwen3-30b-a3b.json", 4), training[k]);
		cr_assert_eq(r.status, 0, "%s", r.out);
		cr_expect_not_null(strstr(r.out, k == 0 ? "--expert-model-parallel-size 8 \\\n"
		                                        : "--expert-model-parallel-size 4 \\\n"),
		                   "%s", r.out);
		cr_expect_eq(strstr(r.out, "--expert-tensor-parallel-size 1 \\\n") != NULL, k == 0, "%s",
		             r.out);
		free(r.out);
	}
}

Test(export, megatron_zero_2_and_3_as_megatron_fsdp)
{
	/* ZeRO 1: the distributed optimizer; 2 and 3: Megatron-FSDP sharding the
	 * gradients (optim_grads), then the parameters (optim_grads_params). */
	static const char *const strategy[] = {NULL, NULL, "optim_grads", "optim_grads_params"};
	for (int z = 0; z <= 3; z++) {
		char training[96], want[128];
		snprintf(training, sizeof training, "\"tensor_parallel\": 2, \"zero_stage\": %d", z);
		struct cli_run r = export_gpt(8, 4, training, false);
		cr_assert_eq(r.status, 0, "%s", r.out);
		cr_expect_eq(strstr(r.out, "--use-distributed-optimizer \\\n") != NULL, z >= 1, "%s",
		             r.out);
		cr_expect_eq(strstr(r.out, "--use-megatron-fsdp \\\n") != NULL, z >= 2, "%s", r.out);
		if (strategy[z]) {
			snprintf(want, sizeof want, "--data-parallel-sharding-strategy %s \\\n",
			         strategy[z]);
			cr_expect_not_null(strstr(r.out, want), "%s", r.out);
		}
		free(r.out);
	}
}

Test(export, megatron_needs_a_megatron_plan)
{
	struct cli_run r = fixture_shardlab("plan scenarios/ffn-8p.json --export megatron -", true);
	cr_assert_eq(r.status, 1);
	cr_assert_str_eq(r.out, "shardlab plan: --export megatron: Megatron-LM's arguments describe "
	                        "a Megatron-style plan: plan with --planner megatron or "
	                        "megatron-search (this plan is propagate's)\n");
	free(r.out);
	r = fixture_shardlab("plan scenarios/ffn-8p.json --export onnx -", true);
	cr_assert_eq(r.status, 2);
	free(r.out);
	r = fixture_shardlab("plan scenarios/ffn-8p.json --export mindspore", true);
	cr_assert_eq(r.status, 2);
	free(r.out);
}

Test(export, mindspore_round_trip_pipeline)
{
	/* Two pipeline stages: the strategies come back, and the stages the
	 * estimate cuts from them are the same. */
	round_trip("scenarios/gpt-small-910a-32p.json", "megatron");
}

Test(export, mindspore_layouts_where_the_tuple_is_not_enough)
{
	/* gpt-small-910a-32p under megatron: 16 NPUs per stage, TP 8 inside an
	 * Atlas 800 and DP 2, as the device matrix (dp 2, mp 8). A LayerNorm
	 * ((2, 1), (1,), (1,)) leaves 8 copies of each batch half; the tuple
	 * form would put the repeat axis first (MindSpore's default) and the
	 * copies on ranks 0, 2, 4, ..., where Megatron keeps them on one server:
	 * the file gives its layout, the batch dimension on dp (axis 1 counted
	 * from the right). The seed's FFN needs no layout. */
	struct cli_run r = fixture_shardlab("plan scenarios/gpt-small-910a-32p.json --planner "
	                                    "megatron --export mindspore -", false);
	cr_assert_eq(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j);
	cr_assert_str_eq(j->child->next->string, "parallel_layout_value_item");
	cr_assert_str_eq(j->child->next->next->string, "parallel_strategy_item");
	const cJSON *ln = member(member(j, "parallel_layout_value_item"), "layers.0.ln1");
	char s[256];
	strategy_text(member(member(ln, "0"), "dev_matrix"), s, sizeof s);
	cr_expect_str_eq(s, "[2,8]");
	strategy_text(member(member(ln, "0"), "alias_name"), s, sizeof s);
	cr_expect_str_eq(s, "[\"dp\",\"mp\"]");
	strategy_text(member(member(ln, "0"), "tensor_map"), s, sizeof s);
	cr_expect_str_eq(s, "[[1],[-1]]");
	strategy_text(member(member(ln, "1"), "tensor_map"), s, sizeof s);
	cr_expect_str_eq(s, "[[-1]]");
	cr_expect(cJSON_IsFalse(member(member(ln, "0"), "interleaved_parallel")));
	/* The same op keeps its tuple in parallel_strategy_item. */
	strategy_text(member(member(member(j, "parallel_strategy_item"), "layers.0.ln1"),
	                     "parallel_strategy"), s, sizeof s);
	cr_expect_str_eq(s, "[[2,1],[1],[1]]");
	cJSON_Delete(j);
	free(r.out);

	r = fixture_shardlab("plan scenarios/ffn-8p.json --export mindspore -", false);
	j = cJSON_Parse(r.out);
	cr_assert_null(cJSON_GetObjectItemCaseSensitive(j, "parallel_layout_value_item"));
	cJSON_Delete(j);
	free(r.out);
}

Test(export, mindspore_layout_diagnostics)
{
	strategy_diag("{\"current_stage\": 0, \"parallel_strategy_item\": {},\n"
	              " \"parallel_layout_value_item\": {\"relu\": {\"0\": {\"alias_name\": [\"a\", "
	              "\"b\"],\n \"dev_matrix\": [2, 4], \"interleaved_parallel\": false, "
	              "\"tensor_map\": [[1], [2]]}}}}\n",
	              "3: parallel_layout_value_item.relu[\"0\"].tensor_map[1][0]: expected an "
	              "integer between -1 and 1, got 2");
	strategy_diag("{\"current_stage\": 0, \"parallel_strategy_item\": {},\n"
	              " \"parallel_layout_value_item\": {\"relu\": {\"0\": {\"alias_name\": [\"a\", "
	              "\"b\"],\n \"dev_matrix\": [2, 2], \"interleaved_parallel\": false, "
	              "\"tensor_map\": [[1], [0]]}}}}\n",
	              "3: parallel_layout_value_item.relu[\"0\"].dev_matrix: the device matrix holds "
	              "4 devices, a stage has 8");
}

Test(export, megatron_arguments_follow_the_search_choice, .timeout = 60)
{
	/* Whatever megatron-search chooses, the arguments say the same degrees
	 * and micro-batch as its own line in plan's report. */
	struct cli_run r = fixture_shardlab("plan tests/data/good/search-gpt-4p.json", false);
	cr_assert_eq(r.status, 0);
	const char *chose = strstr(r.out, "megatron-search chose TP ");
	cr_assert_not_null(chose);
	long long tp, pp, dp, mb;
	cr_assert_eq(sscanf(chose, "megatron-search chose TP %lld PP %lld DP %lld mb %lld", &tp, &pp,
	                    &dp, &mb), 4);
	free(r.out);
	r = fixture_shardlab("plan tests/data/good/search-gpt-4p.json --export megatron -", false);
	cr_assert_eq(r.status, 0);
	char want[256];
	snprintf(want, sizeof want, "4 devices = TP %lld x PP %lld x DP %lld\n", tp, pp, dp);
	cr_expect_not_null(strstr(r.out, want), "%s", r.out);
	snprintf(want, sizeof want, "--micro-batch-size %lld \\\n", mb);
	cr_expect_not_null(strstr(r.out, want), "%s", r.out);
	/* The scenario's global batch, and the model: 2 layers of 64, 4 heads. */
	cr_expect_not_null(strstr(r.out, "--global-batch-size 8 \\\n"));
	cr_expect_not_null(strstr(r.out, "--num-layers 2 \\\n--hidden-size 64 \\\n"));
	cr_expect_eq(tp * pp * dp, 4);
	free(r.out);
}

Test(export, megatron_fp8_and_offloads)
{
	/* The FP8 recipe and the offloads as Megatron-LM's flags
	 * (docs/formats.md): --fp8-format hybrid with Transformer Engine's
	 * delayed-scaling history the estimate prices, Megatron-Core's
	 * FP8 parameters (--fp8-param-gather, with the distributed optimizer),
	 * optimizer CPU offload of the whole optimizer, and its activation
	 * offload of one layer (core_v0.16.0, megatron/training/arguments.py:
	 * --cpu-offloading-num-layers, which turns cpu_offloading on; that
	 * field has no flag of its own). */
	char dir[] = "/tmp/shardlab-export-XXXXXX", path[128], args[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/fp8.json", dir);
	fixture_write(path,
	              "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"fp8\","
	              " \"model\": {\"name\": \"m\", \"generator\": {\"kind\": \"gpt\","
	              " \"hidden\": 256, \"layers\": 2, \"heads\": 8, \"seq\": 128,"
	              " \"vocab\": 1024, \"ffn\": 1024, \"micro_batch\": 2, \"dtype\": \"bf16\"}},"
	              " \"topology\": \"%s/topologies/dgx-h100.json\", \"devices\": 8,"
	              " \"training\": {\"global_batch\": 8, \"tensor_parallel\": 4,"
	              " \"precision\": \"fp8-hybrid\", \"optimizer_offload\": true,"
	              " \"zero_stage\": 1, \"fp8_param_gather\": true,"
	              " \"activation_offload_layers\": 1}}",
	              source_root());
	snprintf(args, sizeof args, "plan %s --planner megatron --export megatron -", path);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--bf16 \\\n--fp8-format hybrid \\\n"
	                                 "--fp8-amax-history-len 1024 \\\n"
	                                 "--fp8-amax-compute-algo max \\\n"
	                                 "--fp8-param-gather \\\n"
	                                 "--optimizer-cpu-offload \\\n"
	                                 "--optimizer-offload-fraction 1.0 \\\n"
	                                 "--use-precision-aware-optimizer \\\n"
	                                 "--cpu-offloading-num-layers 1\n"),
	                   "%s", r.out);
	cr_expect_null(strstr(r.out, "--cpu-offloading \\"), "%s", r.out);
	free(r.out);
	unlink(path);
	rmdir(dir);
}

Test(export, megatron_stage_layers_as_the_layout)
{
	/* training.stage_layers as Megatron-LM's --pipeline-model-parallel-layout
	 * (megatron/core/transformer/pipeline_parallel_layer_layout.py: stages
	 * split by "|", "E" the embedding first, "L" the loss last, "t*n" n
	 * decoder layers, commas cosmetic): 4 layers over 2 stages as 3 and 1
	 * is "Et*3|t*1,L"; interleaved over 2 virtual stages, 2 and 2 are one
	 * layer in each chunk, in layer order (virtual stage v of rank s the
	 * (v P + s)-th): "Et*1|t*1|t*1|t*1,L", which sets the virtual stages
	 * itself (no --num-virtual-stages-per-pipeline-rank, nor
	 * --num-layers-per-virtual-pipeline-stage, nor the first/last flags:
	 * Megatron-LM refuses them beside a layout). */
	struct cli_run r = export_gpt(2, 1, "\"pipeline_stages\": 2, \"stage_layers\": [3, 1]",
	                              false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--pipeline-model-parallel-size 2 \\\n"
	                                 "--pipeline-model-parallel-layout \"Et*3|t*1,L\""),
	                   "%s", r.out);
	cr_expect_null(strstr(r.out, "--decoder-first-pipeline-num-layers"), "%s", r.out);
	free(r.out);
	r = export_gpt(2, 1, "\"pipeline_stages\": 2, \"virtual_stages\": 2, "
	               "\"schedule\": \"interleaved-1f1b\", \"stage_layers\": [2, 2]", false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--pipeline-model-parallel-layout \"Et*1|t*1|t*1|t*1,L\""),
	                   "%s", r.out);
	cr_expect_null(strstr(r.out, "--num-virtual-stages-per-pipeline-rank"), "%s", r.out);
	cr_expect_null(strstr(r.out, "--num-layers-per-virtual-pipeline-stage"), "%s", r.out);
	free(r.out);
}

Test(export, megatron_embedding_and_loss_in_the_split)
{
	/* Megatron-Core's account_for_embedding_in_pipeline_split and
	 * account_for_loss_in_pipeline_split as its flags: 4 layers over 3
	 * stages are refused (3 does not divide 4), 4 + the embedding + the
	 * loss = 6 units are 2 a stage (arguments.py counts them); interleaved
	 * over 2 virtual stages, 6 / (3 x 2) = 1 unit a chunk:
	 * --num-layers-per-virtual-pipeline-stage 1 (the first chunk only the
	 * embedding, the last only the loss). */
	const char *acc = "\"account_for_embedding_in_pipeline_split\": true, "
	                  "\"account_for_loss_in_pipeline_split\": true";
	char training[256];
	snprintf(training, sizeof training, "\"pipeline_stages\": 3, \"micro_batches\": 12, %s",
	         acc);
	struct cli_run r = export_gpt(3, 1, training, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--pipeline-model-parallel-size 3 \\\n"
	                                 "--account-for-embedding-in-pipeline-split \\\n"
	                                 "--account-for-loss-in-pipeline-split \\\n"),
	                   "%s", r.out);
	cr_expect_null(strstr(r.out, "--num-layers-per-virtual-pipeline-stage"), "%s", r.out);
	free(r.out);
	snprintf(training, sizeof training, "\"pipeline_stages\": 3, \"micro_batches\": 12, "
	         "\"virtual_stages\": 2, \"schedule\": \"interleaved-1f1b\", %s", acc);
	r = export_gpt(3, 1, training, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--pipeline-model-parallel-size 3 \\\n"
	                                 "--num-layers-per-virtual-pipeline-stage 1 \\\n"
	                                 "--account-for-embedding-in-pipeline-split \\\n"),
	                   "%s", r.out);
	free(r.out);
}

Test(export, megatron_uneven_first_and_last_stages)
{
	/* training.first_stage_layers / last_stage_layers as Megatron-LM's
	 * --decoder-first-pipeline-num-layers and
	 * --decoder-last-pipeline-num-layers: 6 layers on 4 stages as 1 + 2 +
	 * 2 + 1 (megatron/core/transformer/transformer_block.py), which an even
	 * split (4 does not divide 6) refuses; interleaved, the virtual stages
	 * are given per rank (--num-virtual-stages-per-pipeline-rank, which
	 * arguments.py asks for with an uneven pipeline): 2 + 1 + 1 + 2 over 2
	 * virtual stages each would not divide, 2 + 2 + 2 + 2 of 8 does. */
	char dir[] = "/tmp/shardlab-export-XXXXXX", path[128], args[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/uneven.json", dir);
	const char *pwd = source_root();
	fixture_write(path,
	              "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"uneven\","
	              " \"model\": {\"name\": \"m\", \"generator\": {\"kind\": \"gpt\","
	              " \"hidden\": 64, \"layers\": 6, \"heads\": 4, \"seq\": 64,"
	              " \"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"}},"
	              " \"topology\": \"%s/topologies/dgx-a100.json\", \"devices\": 4,"
	              " \"training\": {\"global_batch\": 8, \"pipeline_stages\": 4,"
	              " \"first_stage_layers\": 1, \"last_stage_layers\": 1}}", pwd);
	snprintf(args, sizeof args, "plan %s --planner megatron --export megatron -", path);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--pipeline-model-parallel-size 4 \\\n"
	                                 "--decoder-first-pipeline-num-layers 1 \\\n"
	                                 "--decoder-last-pipeline-num-layers 1 \\\n"),
	                   "%s", r.out);
	free(r.out);
	fixture_write(path,
	              "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"uneven\","
	              " \"model\": {\"name\": \"m\", \"generator\": {\"kind\": \"gpt\","
	              " \"hidden\": 64, \"layers\": 8, \"heads\": 4, \"seq\": 64,"
	              " \"vocab\": 256, \"micro_batch\": 1, \"dtype\": \"bf16\"}},"
	              " \"topology\": \"%s/topologies/dgx-a100.json\", \"devices\": 4,"
	              " \"training\": {\"global_batch\": 8, \"pipeline_stages\": 4,"
	              " \"virtual_stages\": 2, \"schedule\": \"interleaved-1f1b\","
	              " \"first_stage_layers\": 2}}", pwd);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--pipeline-model-parallel-size 4 \\\n"
	                                 "--num-virtual-stages-per-pipeline-rank 2 \\\n"
	                                 "--decoder-first-pipeline-num-layers 2 \\\n"),
	                   "%s", r.out);
	cr_expect_null(strstr(r.out, "--num-layers-per-virtual-pipeline-stage"), "%s", r.out);
	free(r.out);
	unlink(path);
	rmdir(dir);
}

/* search-offload-4p: search-gpt-4p (its 324 configurations counted in tests/planner/
 * test_search.c) with one of its two layers' activations offloaded
 * (--cpu-offloading-num-layers 1): Megatron-Core refuses pipeline
 * parallelism and recomputation beside it (transformer_config.py), so
 * megatron-search leaves out the 132 1F1B configurations of PP 2 (GPipe's
 * 132 break the schedule rule first) and the 128 of the 16 groups without
 * a pipeline that recompute (8 of each 12), keeps 16 x 4 = 64, and the
 * arguments it exports run: PP 1, no --recompute-granularity. */
Test(export, megatron_search_with_activation_offload_is_runnable)
{
	const char *path = "tests/data/good/search-offload-4p.json";
	char args[256];
	snprintf(args, sizeof args, "plan %s --planner megatron-search --export megatron -", path);
	struct cli_run r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--pipeline-model-parallel-size 1 \\\n"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--cpu-offloading-num-layers 1"), "%s", r.out);
	cr_expect_null(strstr(r.out, "--recompute-granularity"), "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "compare %s --planner megatron-search --top 1", path);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "megatron-search: 64 configurations"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "  left out, as Megatron-LM would refuse them: 392 (132 "
	                                 "GPipe (Megatron-LM runs 1F1B); 132 activation offload "
	                                 "with PP > 1; 128 activation offload with "
	                                 "recomputation)\n"), "%s", r.out);
	free(r.out);
	snprintf(args, sizeof args, "compare %s --planner megatron-search --top 1 --json", path);
	r = fixture_shardlab(args, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "%s", r.out);
	const cJSON *refused = member(member(j, "search"), "refused");
	cr_expect_eq(member(refused, "offload-pp")->valuedouble, 132);
	cr_expect_eq(member(refused, "offload-recompute")->valuedouble, 128);
	cJSON_Delete(j);
	free(r.out);
}

Test(export, megatron_cross_entropy_fusion)
{
	/* training.cross_entropy: the default (vocab-parallel) is Megatron-LM's
	 * own and writes nothing; vocab-parallel-jit its --cross-entropy-loss-
	 * fusion (the native implementation, the flag's default); fused adds
	 * --cross-entropy-fusion-impl te; MindFormers' has no equal and writes
	 * nothing. */
	static const struct {
		const char *xent;
		bool fusion, te;
	} cases[] = {{"vocab-parallel", false, false},
	             {"vocab-parallel-jit", true, false},
	             {"mindformers", false, false},
	             {"fused", true, true}};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char training[96];
		snprintf(training, sizeof training, "\"tensor_parallel\": 2, \"cross_entropy\": \"%s\"",
		         cases[i].xent);
		struct cli_run r = export_gpt(8, 4, training, false);
		cr_assert_eq(r.status, 0, "%s", r.out);
		cr_expect_eq(strstr(r.out, "--cross-entropy-loss-fusion \\\n") != NULL, cases[i].fusion,
		             "%s: %s", cases[i].xent, r.out);
		cr_expect_eq(strstr(r.out, "--cross-entropy-fusion-impl te \\\n") != NULL, cases[i].te,
		             "%s: %s", cases[i].xent, r.out);
		free(r.out);
	}
}

Test(export, megatron_recompute_layers_as_the_block_method)
{
	/* training.recompute_layers N: Megatron-LM's --recompute-method block
	 * --recompute-num-layers N; without it, every layer (uniform, 1). */
	struct cli_run r = export_gpt(8, 4, "\"tensor_parallel\": 2, \"recompute\": \"full\", "
	                                    "\"recompute_layers\": 1", false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--recompute-granularity full \\\n--recompute-method block "
	                                 "\\\n--recompute-num-layers 1 \\\n"), "%s", r.out);
	free(r.out);
	r = export_gpt(8, 4, "\"tensor_parallel\": 2, \"recompute\": \"full\"", false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cr_expect_not_null(strstr(r.out, "--recompute-method uniform \\\n--recompute-num-layers 1 \\\n"),
	                   "%s", r.out);
	free(r.out);
}

/* PyTorch's eager loss has no Megatron-LM flag: the export gives no loss
 * fusion and says so in a comment after the command. torchtitan's per-op
 * checkpointing is no Megatron-LM recompute granularity: the export
 * refuses the plan by the search's rule (recompute-op). */
Test(export, pytorch_modes_are_named_not_exported, .timeout = 60)
{
	char dir[] = "/tmp/shardlab-export-XXXXXX", path[128], args[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/tt.json", dir);
	for (int op = 0; op < 2; op++) {
		fixture_write(path,
		              "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"tt\","
		              " \"model\": {\"name\": \"m\", \"generator\": {\"kind\": \"llama\","
		              " \"hidden\": 256, \"layers\": 2, \"heads\": 8, \"seq\": 128,"
		              " \"vocab\": 1024, \"ffn\": 768, \"micro_batch\": 8}},"
		              " \"topology\": \"%s/topologies/dgx-h100.json\", \"devices\": 8,"
		              " \"training\": {\"global_batch\": 8, \"recompute\": \"%s\","
		              " \"cross_entropy\": \"pytorch\"}}",
		              source_root(), op ? "op" : "none");
		snprintf(args, sizeof args, "plan %s --planner megatron --export megatron -", path);
		struct cli_run r = fixture_shardlab(args, op == 1);
		if (op) {
			cr_expect_neq(r.status, 0, "%s", r.out);
			cr_expect_not_null(strstr(r.out, "Megatron-LM would refuse this plan: recompute "
			                                 "\"op\" (torchtitan's per-op selective "
			                                 "checkpointing) is not a Megatron-LM recompute "
			                                 "granularity"), "%s", r.out);
		} else {
			cr_assert_eq(r.status, 0, "%s", r.out);
			cr_expect_null(strstr(r.out, "\n--cross-entropy-loss-fusion"), "%s", r.out);
			cr_expect_not_null(strstr(r.out, "\n# cross_entropy \"pytorch\" (PyTorch's "
			                                 "F.cross_entropy over fp32 logits) has no "
			                                 "Megatron-LM flag"), "%s", r.out);
		}
		free(r.out);
	}
	remove(path);
	rmdir(dir);
}
