/* test_scenarios.c — the scenario loader on the shipped scenarios (seed 000's
 * FFN with its shard() configuration, seed 004's Layout form) and on
 * in-memory documents. Expected values are read off the seeds and the files'
 * own text. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios.h"
#include "fixture.h"


static struct scenario *load(const char *path)
{
	struct scenario *s = scenario_load(A, path, &D);
	return s;
}

/* A scenario of a tiny GPT on a DGX A100: its parameters' dtype and what
 * follows global_batch in its training block (each item led by a comma). */
#define TINY_GPT(dtype, training)                                                              \
	"{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"tiny\","                   \
	" \"model\": {\"name\": \"tiny\", \"generator\": {\"kind\": \"gpt\","                    \
	"   \"hidden\": 64, \"layers\": 4, \"heads\": 4, \"seq\": 32,"                             \
	"   \"vocab\": 128, \"micro_batch\": 8, \"dtype\": \"" dtype "\"}},"                        \
	" \"topology\": \"../topologies/dgx-a100.json\","                                          \
	" \"training\": {\"global_batch\": 8" training "}}"

static struct scenario *parse(const char *text)
{
	struct json_doc doc;
	struct scenario *s = NULL;
	if (json_doc_parse(&doc, "scenarios/mem.json", text, strlen(text), &D))
		s = scenario_load_doc(A, &doc);
	json_doc_free(&doc);
	return s;
}

TestSuite(scenarios, .init = fixture_setup, .fini = fixture_teardown);

Test(scenarios, seed000_ffn_8p)
{
	struct scenario *s = load("scenarios/ffn-8p.json");
	cr_assert_not_null(s);
	cr_assert_eq(D.count, 0);
	/* Seed 000: FFN = dense1 (MatMul, Add), ReLU, dense2 (MatMul, Add) on 8
	 * devices with self.dense1.matmul.shard(((2, 1), (1, 4))). */
	cr_assert_str_eq(s->graph->name, "ffn");
	cr_assert_eq(s->graph->n_ops, 5);
	cr_assert_eq(s->devices, 8);
	cr_assert_eq(s->topo->n_devices, 8);
	cr_assert_str_eq(s->model_file, "models/ffn.json");
	cr_assert_str_eq(s->topology_file, "topologies/atlas800-910a.json");
	cr_assert_eq(s->n_shards, 1);
	const struct shard_config *c = &s->shards[0];
	cr_assert_str_eq(c->op_name, "dense1.matmul");
	cr_assert_eq(c->form, SHARD_TUPLE);
	cr_assert_eq(c->n_in, 2);
	cr_assert_eq(c->cuts[0][0], 2);
	cr_assert_eq(c->cuts[0][1], 1);
	cr_assert_eq(c->cuts[1][0], 1);
	cr_assert_eq(c->cuts[1][1], 4);
	cr_assert_eq(scenario_shard_for(s, c->op), c);
	cr_assert_null(scenario_shard_for(s, graph_find_op(s->graph, "relu")));
	cr_assert_eq(s->n_planners, 1);
	cr_assert_eq(s->planners[0], PLANNER_PROPAGATE);
	cr_assert_eq(s->training.global_batch, 64);
	cr_assert_eq(s->training.micro_batches, 1);
	cr_assert_eq(s->training.pipeline_stages, 1);
	cr_assert_eq(s->training.dtype, DT_FP32);
	cr_assert_eq(s->sim.fidelity, FIDELITY_COARSE);
}

Test(scenarios, seed004_layout_form)
{
	struct scenario *s = load("scenarios/ffn-8p-layout.json");
	cr_assert_not_null(s);
	const struct shard_config *c = &s->shards[0];
	cr_assert_eq(c->form, SHARD_LAYOUT);
	/* Layout((2, 2, 2), ("dp", "sp", "mp")) */
	cr_assert_eq(c->n_dev_axes, 3);
	cr_assert_eq(c->device_matrix[0], 2);
	cr_assert_str_eq(c->axis_names[0], "dp");
	cr_assert_str_eq(c->axis_names[2], "mp");
	/* layout("mp", ("sp", "dp")): dim 0 on mp (axis 2); dim 1 on sp then dp
	 * (axes 1, 0), major first. */
	const struct shard_tensor_map *x = &c->in_maps[0];
	cr_assert_eq(x->rank, 2);
	cr_assert_eq(x->n_axes[0], 1);
	cr_assert_eq(x->axes[0][0], 2);
	cr_assert_eq(x->n_axes[1], 2);
	cr_assert_eq(x->axes[1][0], 1);
	cr_assert_eq(x->axes[1][1], 0);
	/* layout(("sp", "dp"), "None") */
	const struct shard_tensor_map *w = &c->in_maps[1];
	cr_assert_eq(w->n_axes[0], 2);
	cr_assert_eq(w->n_axes[1], 0);
	cr_assert_eq(c->n_out, 0);
}

Test(scenarios, defaults_and_inline_model)
{
	/* No "devices": all of the topology's 8; no planners: propagation. */
	struct scenario *s = parse("{\"format\": \"shardlab-scenario\", \"version\": 1,"
	                           " \"name\": \"inline\","
	                           " \"model\": {\"name\": \"tiny\","
	                           "   \"generator\": {\"kind\": \"ffn\", \"hidden\": 16, \"micro_batch\": 8}},"
	                           " \"topology\": \"../topologies/atlas800-910a.json\"}");
	cr_assert_not_null(s);
	cr_assert_eq(s->devices, 8);
	cr_assert_null(s->model_file);
	cr_assert_eq(s->n_planners, 1);
	cr_assert_eq(s->planners[0], PLANNER_PROPAGATE);
	int mm = graph_find_op(s->graph, "dense1.matmul");
	cr_assert_geq(mm, 0);
	/* x is micro_batch x hidden = 8 x 16 */
	const struct tensor *x = &s->graph->tensors[s->graph->ops[mm].in[0]];
	cr_assert_eq(x->dims[0], 8);
	cr_assert_eq(x->dims[1], 16);
}

/* More devices than a cluster file has: the cluster grows by whole servers
 * on its fabric (dgx-a100-x128: 128 servers of 8, 1,024 GPUs; 3,072 GPUs
 * are 384 servers); the shipped topology is left as it is. */
Test(scenarios, devices_grow_a_cluster_by_whole_servers)
{
#define GROWN                                                                           \
	"{\"format\": \"shardlab-scenario\", \"version\": 1,\n"                                  \
	" \"name\": \"big\",\n"                                                                \
	" \"model\": {\"name\": \"tiny\", \"generator\": {\"kind\": \"ffn\","                     \
	" \"hidden\": 16, \"micro_batch\": 8}},\n"                                             \
	" \"topology\": \"../topologies/dgx-a100-x128.json\",\n"                               \
	" \"devices\": %d}"
	char text[512];
	snprintf(text, sizeof text, GROWN, 3072);
	struct scenario *s = parse(text);
	cr_assert_not_null(s);
	cr_assert_eq(s->devices, 3072);
	cr_assert_eq(s->topo->servers, 384);
	cr_assert_eq(s->topo->n_devices, 3072);
	cr_assert_str_eq(s->topo->name, "dgx-a100-x128");
	/* 3,071 GPUs are not whole servers: an error on the devices line (5). */
	snprintf(text, sizeof text, GROWN, 3071);
	cr_assert_null(parse(text));
	cr_assert_eq(D.errors, 1);
	cr_assert_eq(D.items[0].line, 5);
	cr_assert(strstr(D.items[0].msg, "the topology dgx-a100-x128 has 1024 devices, 3071 asked "
	                                 "for; to grow it by whole servers ask for a multiple of "
	                                 "its 8 devices per server"),
	          "%s", D.items[0].msg);
#undef GROWN
}

Test(scenarios, every_problem_in_one_run)
{
	struct scenario *s = parse("{\"format\": \"shardlab-scenario\", \"version\": 1,\n"
	                           " \"name\": \"bad\",\n"
	                           " \"model\": \"../models/ffn.json\",\n"
	                           " \"topology\": \"../topologies/atlas800-910a.json\",\n"
	                           " \"devices\": 9,\n"
	                           " \"shard\": {\"relu\": [[3, 4]], \"nope\": [[1]]},\n"
	                           " \"training\": {\"global_batch\": 0}}");
	cr_assert_null(s);
	/* devices (line 5), the ReLU cut 3 of 64 rows (line 6), the unknown op
	 * (line 6), the global batch (line 7). */
	cr_assert_eq(D.errors, 4);
	int lines[4] = {0};
	for (size_t i = 0; i < 4; i++)
		lines[i] = D.items[i].line;
	cr_assert_eq(lines[0], 5);
	cr_assert_eq(lines[3], 6);
}

/* ffn.json on one Atlas 800 with this "training" object (the object
 * starts on line 5). */
static struct scenario *parse_training(const char *training)
{
	char text[1024];
	snprintf(text, sizeof(text),
	         "{\"format\": \"shardlab-scenario\", \"version\": 1,\n"
	         " \"name\": \"training\",\n"
	         " \"model\": \"../models/ffn.json\",\n"
	         " \"topology\": \"../topologies/atlas800-910a.json\",\n"
	         " \"training\": %s}", training);
	return parse(text);
}

/* The graph is one micro-batch of all replicas: ffn.json's batch of 64
 * makes a global batch of 256 four micro-batches; a file that says
 * otherwise is told so on its line. */
Test(scenarios, micro_batches_follow_the_model_batch)
{
	struct scenario *s = parse_training("{\"global_batch\": 256,\n"
	                                    "   \"pipeline_stages\": 2, \"recompute\": \"selective\","
	                                    " \"zero_stage\": 1}");
	cr_assert_not_null(s);
	cr_assert_eq(D.count, 0);
	cr_expect_eq(s->training.micro_batches, 4);
	cr_assert_null(parse_training("{\"global_batch\": 256,\n   \"micro_batches\": 8}"));
	cr_assert_eq(D.errors, 1);
	cr_expect_eq(D.items[0].line, 6);
	cr_expect_str_eq(D.items[0].path, "training.micro_batches");
	cr_expect_not_null(strstr(D.items[0].msg, "the model's batch of 64 samples makes 4 "
	                                          "micro-batches of the global batch of 256, not 8"),
	                   "%s", D.items[0].msg);
}

/* pipeline_cuts name ops in graph order, one per chunk after the first. */
Test(scenarios, pipeline_cuts_are_checked)
{
	struct scenario *s = parse_training("{\"pipeline_stages\": 2,\n"
	                                    "   \"pipeline_cuts\": [\"relu\"]}");
	cr_assert_not_null(s);
	cr_expect_eq(s->training.n_cuts, 1);
	cr_expect_eq(s->training.cuts[0], graph_find_op(s->graph, "relu"));
	cr_assert_null(parse_training("{\"pipeline_stages\": 2,\n   \"pipeline_cuts\": [\"rleu\"]}"));
	cr_expect_not_null(strstr(D.items[0].msg, "no op named \"rleu\""));
	cr_expect_str_eq(D.items[0].path, "training.pipeline_cuts[0]");
	cr_assert_null(parse_training("{\"pipeline_stages\": 2,\n   \"pipeline_cuts\": []}"));
	cr_expect_not_null(strstr(D.items[D.count - 1].msg, "0 cuts for 2 model chunks"));
}

Test(scenarios, layout_slices_must_divide)
{
	/* ReLU's input (the output of dense1.add) is 64 x 64. A device axis of
	 * 6 on 6 devices is a valid matrix, but 6 slices do not divide 64 rows. */
	struct scenario *s = parse("{\"format\": \"shardlab-scenario\", \"version\": 1,\n"
	                           " \"name\": \"bad\", \"devices\": 6,\n"
	                           " \"model\": \"../models/ffn.json\",\n"
	                           " \"topology\": \"../topologies/atlas800-910a.json\",\n"
	                           " \"shard\": {\"relu\": {\"device_matrix\": [6],"
	                           " \"alias\": [\"mp\"], \"in\": [[\"mp\", \"None\"]]}}}");
	cr_assert_null(s);
	cr_assert_eq(D.errors, 1);
	char *m = diag_format(&D.items[0]);
	cr_assert_str_eq(m, "scenarios/mem.json:5: shard.relu.in[0][0]: 6 slices do not divide "
	                    "dimension 0 of dense1.add (size 64)");
	free(m);
}

/* A jobs file's placement, by hand. atlas800-910a-x8-oversub2: 8 servers
 * of 8 NPUs, 8 NICs each, leaves of 16 NIC ports: servers 0-1 under leaf
 * 0, 2-3 leaf 1, 4-5 leaf 2, 6-7 leaf 3. The listed job takes server 5
 * first; then, in file order, "packed" (2 servers) the lowest free ones,
 * 0 and 1; "spread" (2) one free server from each leaf in turn: leaf 0
 * has none left, leaf 1 gives 2, leaf 2 gives 4. Rank r runs on device
 * server(r / 8) x 8 + r mod 8. */
Test(scenarios, jobs_placed_listed_first_then_packed_and_spread)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct jobs_file *f = jobs_load(a, "tests/data/cosim/mixed.json", &d);
	cr_assert_not_null(f, "%s", d.count ? d.items[0].msg : "?");
	cr_assert_eq(f->n_jobs, 3);
	static const int64_t want[3][2] = {{0, 1}, {2, 4}, {5, -1}};
	for (int j = 0; j < 3; j++) {
		cr_assert_eq(f->jobs[j].n_servers, j == 2 ? 1 : 2);
		for (int k = 0; k < f->jobs[j].n_servers; k++)
			cr_expect_eq(f->jobs[j].servers[k], want[j][k], "job %d server %d", j, k);
	}
	cr_expect_eq(f->jobs[1].devices[0], 16);
	cr_expect_eq(f->jobs[1].devices[9], 4 * 8 + 1);
	cr_expect_eq(f->jobs[2].devices[7], 5 * 8 + 7);
	/* every job runs on the jobs file's topology */
	for (int j = 0; j < 3; j++)
		cr_expect_eq(f->jobs[j].scenario->topo, f->topo);
	cr_expect_eq(jobs_server_leaf(f->topo, 5), 2);
	diag_list_free(&d);
	arena_free(a);
}

/* training.activation_offload_layers: read, 0 by default, and written back
 * by scenario_json (a plan `fit` writes), which reads again as the same. */
Test(scenarios, activation_offload_layers_read_and_written)
{
#define OFFLOAD_DOC(extra)                                                                     \
	"{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"offload\","                \
	" \"model\": {\"name\": \"tiny\", \"generator\": {\"kind\": \"gpt\","                    \
	"   \"hidden\": 64, \"layers\": 4, \"heads\": 4, \"seq\": 32,"                             \
	"   \"vocab\": 128, \"micro_batch\": 8, \"dtype\": \"bf16\"}},"                           \
	" \"topology\": \"../topologies/dgx-h100.json\","                                          \
	" \"training\": {\"global_batch\": 8" extra "}}"
	struct scenario *s = parse(OFFLOAD_DOC(""));
	cr_assert_not_null(s);
	cr_expect_eq(s->training.activation_offload_layers, 0);
	s = parse(OFFLOAD_DOC(", \"activation_offload_layers\": 3"));
#undef OFFLOAD_DOC
	cr_assert_not_null(s);
	cr_expect_eq(s->training.activation_offload_layers, 3);
	cJSON *j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(tr, "activation_offload_layers");
	cr_assert(cJSON_IsNumber(n));
	cr_expect_eq(n->valuedouble, 3);
	cJSON_Delete(j);
}

/* training.zero3_impl: "collectives" by default, "deepspeed-2021" read
 * with zero_stage 3 and written back by scenario_json (a plan `fit`
 * writes) only where it is not the default. */
Test(scenarios, zero3_impl_read_and_written)
{
	struct scenario *s = parse(TINY_GPT("fp16", ", \"zero_stage\": 3"));
	cr_assert_not_null(s);
	cr_expect_eq(s->training.zero3_impl, ZERO3_COLLECTIVES);
	cJSON *j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(tr, "zero3_impl"));
	cJSON_Delete(j);
	s = parse(TINY_GPT("fp16", ", \"zero_stage\": 3" ", \"zero3_impl\": \"deepspeed-2021\""));
	cr_assert_not_null(s);
	cr_expect_eq(s->training.zero3_impl, ZERO3_DEEPSPEED_2021);
	j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(tr, "zero3_impl");
	cr_assert(cJSON_IsString(n));
	cr_expect_str_eq(n->valuestring, "deepspeed-2021");
	cJSON_Delete(j);
}

/* A training member that names a choice: left out of what scenario_json
 * writes (a plan `fit` writes) at its default, written back as `value` once
 * set; `bad` an error at its line naming the choices. Returns the scenario
 * read with `value`. */
static struct scenario *choice_read_and_written(const char *field, const char *value,
                                                const char *bad)
{
	struct scenario *s = parse(TINY_GPT("bf16", ""));
	cr_assert_not_null(s);
	cJSON *j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(tr, field), "%s written at its default",
	               field);
	cJSON_Delete(j);
	char extra[128], text[1024];
	snprintf(extra, sizeof extra, ", \"%s\": \"%s\"", field, bad);
	snprintf(text, sizeof text, TINY_GPT("bf16", "%s"), extra);
	size_t before = D.count;
	cr_expect_null(parse(text));
	cr_assert_gt(D.count, before);
	char *msg = diag_format(&D.items[before]);
	char want[128], quoted[64];
	snprintf(want, sizeof want, "training.%s", field);
	snprintf(quoted, sizeof quoted, "\"%s\"", value);
	cr_expect(strstr(msg, want) && strstr(msg, quoted), "%s", msg);
	free(msg);
	snprintf(extra, sizeof extra, ", \"%s\": \"%s\"", field, value);
	snprintf(text, sizeof text, TINY_GPT("bf16", "%s"), extra);
	s = parse(text);
	cr_assert_not_null(s);
	j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(tr, field);
	cr_assert(cJSON_IsString(n), "%s not written", field);
	cr_expect_str_eq(n->valuestring, value);
	cJSON_Delete(j);
	return s;
}

/* training.framework: "megatron" by default, "pytorch" read and written
 * back only where it is not the default; another name is an error at its
 * line naming the choices. */
Test(scenarios, framework_read_and_written)
{
	struct scenario *s = parse(TINY_GPT("bf16", ""));
	cr_assert_not_null(s);
	cr_expect_eq(s->training.framework, FRAMEWORK_MEGATRON);
	s = choice_read_and_written("framework", "pytorch", "jax");
	cr_expect_eq(s->training.framework, FRAMEWORK_PYTORCH);
}

/* training.moe_dispatcher: "alltoall" by default, "hybridep" and "deepep"
 * read and written back; Megatron-Core's "flex" names the dispatcher, not
 * its backend, and is refused. */
Test(scenarios, moe_dispatcher_read_and_written)
{
	struct scenario *s = parse(TINY_GPT("bf16", ""));
	cr_assert_not_null(s);
	cr_expect_eq(s->training.moe_dispatcher, MOE_DISPATCH_ALLTOALL);
	s = choice_read_and_written("moe_dispatcher", "hybridep", "flex");
	cr_expect_eq(s->training.moe_dispatcher, MOE_DISPATCH_HYBRIDEP);
	s = choice_read_and_written("moe_dispatcher", "deepep", "nccl");
	cr_expect_eq(s->training.moe_dispatcher, MOE_DISPATCH_DEEPEP);
}

/* A 2-layer mixture of experts on two DGX H100. */
#define TINY_MOE(training)                                                                      \
	"{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"moe\","                    \
	" \"model\": {\"name\": \"moe\", \"generator\": {\"kind\": \"llama\", \"hidden\": 64,"       \
	"   \"layers\": 2, \"heads\": 4, \"ffn\": 128, \"seq\": 32, \"vocab\": 128,"                \
	"   \"experts\": 4, \"top_k\": 2, \"micro_batch\": 8, \"dtype\": \"bf16\"}},"               \
	" \"topology\": \"../topologies/dgx-h100-x64.json\", \"devices\": 16,"                       \
	" \"training\": {\"global_batch\": 16" training "}}"

/* training.moe_a2a_overlap: false by default and not written; true read
 * and written back; refused, on its own line, where Megatron-Core refuses
 * --overlap-moe-expert-parallel-comm (TransformerConfig.__post_init__): no
 * expert parallelism, a pipeline without virtual stages, full
 * recomputation, or a schedule other than 1F1B's. */
Test(scenarios, moe_a2a_overlap_read_written_and_refused)
{
	struct scenario *s = parse(TINY_MOE(""));
	cr_assert_not_null(s);
	cr_expect_not(s->training.moe_a2a_overlap);
	cJSON *j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "training"),
	                                                "moe_a2a_overlap"));
	cJSON_Delete(j);
	s = parse(TINY_MOE(", \"expert_parallel\": 2, \"moe_a2a_overlap\": true"));
	cr_assert_not_null(s);
	cr_expect(s->training.moe_a2a_overlap);
	j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	cr_expect(cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(
	        cJSON_GetObjectItemCaseSensitive(j, "training"), "moe_a2a_overlap")));
	/* and the file reads back (the generator's expert_ffn, 0 for the
	 * MLP's ffn, left out: the reader takes 1 and up) */
	char *written = cJSON_Print(j);
	cJSON_Delete(j);
	cr_assert_not_null(written);
	struct scenario *back = parse(written);
	free(written);
	cr_assert_not_null(back);
	cr_expect(back->training.moe_a2a_overlap);
	cr_expect_eq(back->graph->n_ops, s->graph->n_ops);
	static const struct {
		const char *training, *why;
	} bad[] = {
		{", \"moe_a2a_overlap\": true", "set expert_parallel above 1"},
		{", \"expert_parallel\": 2, \"pipeline_stages\": 2, \"moe_a2a_overlap\": true",
		 "set virtual_stages above 1"},
		{", \"expert_parallel\": 2, \"recompute\": \"full\", \"moe_a2a_overlap\": true",
		 "refuses full recomputation"},
		{", \"expert_parallel\": 2, \"pipeline_stages\": 2, \"schedule\": \"zb-h1\","
		 " \"moe_a2a_overlap\": true", "schedule \"1f1b\""},
	};
	for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
		char text[1024];
		snprintf(text, sizeof text, TINY_MOE("%s"), bad[k].training);
		size_t before = D.count;
		cr_expect_null(parse(text), "%s", bad[k].training);
		cr_assert_gt(D.count, before, "%s", bad[k].training);
		char *msg = diag_format(&D.items[before]);
		cr_expect(strstr(msg, "training.moe_a2a_overlap") && strstr(msg, bad[k].why), "%s", msg);
		free(msg);
	}
}

/* training.pipeline_scatter_gather: true by default (Megatron-LM's
 * scatter/gather of the pipeline's sends), false read as whole sends and
 * written back by scenario_json only then. */
/* training.main_params_dtype, exp_avg_dtype, exp_avg_sq_dtype: read,
 * written back only when set, and a master copy's dtype refused on a
 * recipe without one (fp32 Adam steps the weights themselves). */
Test(scenarios, optimizer_state_dtypes_read_and_written)
{
	struct scenario *s = parse(TINY_GPT("bf16", ""));
	cr_assert_not_null(s);
	cr_expect_eq(s->training.main_params_dtype, STATE_FP32);
	cJSON *j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(tr, "exp_avg_dtype"));
	cJSON_Delete(j);
	s = parse(TINY_GPT("bf16", ", \"main_params_dtype\": \"bf16\", \"exp_avg_dtype\": \"fp8\","
	                         " \"exp_avg_sq_dtype\": \"fp16\""));
	cr_assert_not_null(s);
	cr_expect_eq(s->training.main_params_dtype, STATE_BF16);
	cr_expect_eq(s->training.exp_avg_dtype, STATE_FP8);
	cr_expect_eq(s->training.exp_avg_sq_dtype, STATE_FP16);
	j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	cr_expect_str_eq(cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tr, "exp_avg_dtype")),
	                 "fp8");
	cr_expect_str_eq(
		cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(tr, "main_params_dtype")), "bf16");
	cJSON_Delete(j);
	cr_expect_null(parse(TINY_GPT("fp32", ", \"main_params_dtype\": \"fp16\"")));
	cr_expect_null(parse(TINY_GPT("bf16", ", \"main_params_dtype\": \"fp8\"")));
}

Test(scenarios, pipeline_scatter_gather_read_and_written)
{
	struct scenario *s = parse(TINY_GPT("fp16", ", \"pipeline_stages\": 2"));
	cr_assert_not_null(s);
	cr_expect_not(s->training.whole_sends);
	cJSON *j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	const cJSON *tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	cr_expect_null(cJSON_GetObjectItemCaseSensitive(tr, "pipeline_scatter_gather"));
	cJSON_Delete(j);
	s = parse(TINY_GPT("fp16", ", \"pipeline_stages\": 2" ", \"pipeline_scatter_gather\": false"));
	cr_assert_not_null(s);
	cr_expect(s->training.whole_sends);
	j = scenario_json(A, s, "scenarios");
	cr_assert_not_null(j);
	tr = cJSON_GetObjectItemCaseSensitive(j, "training");
	cr_expect(cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(tr, "pipeline_scatter_gather")));
	cJSON_Delete(j);
}

/* The notes of D whose message holds `needle`. */
static int notes_with(const char *needle)
{
	int n = 0;
	for (size_t i = 0; i < D.count; i++)
		n += D.items[i].severity == DIAG_NOTE && strstr(D.items[i].msg, needle) != NULL;
	return n;
}

/* recompute "op" reads, and on a graph whose ops name no transformer layer
 * (the ffn generator's "dense1.matmul", ...) the loader says it recomputes
 * nothing; a generator's GPT (layers.N.…) gets no such note. */
Test(scenarios, op_recompute_notes_a_graph_without_layers)
{
	const char *none = "names none, so nothing is recomputed";
	struct scenario *s = parse(TINY_GPT("bf16", ", \"recompute\": \"op\""));
	cr_assert_not_null(s);
	cr_expect_eq(s->training.recompute, RECOMPUTE_OP);
	cr_expect_eq(notes_with(none), 0);
	s = parse("{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"ffn\","
	          " \"model\": {\"name\": \"tiny\","
	          "   \"generator\": {\"kind\": \"ffn\", \"hidden\": 16, \"micro_batch\": 8}},"
	          " \"topology\": \"../topologies/atlas800-910a.json\","
	          " \"training\": {\"recompute\": \"op\"}}");
	cr_assert_not_null(s);
	cr_expect_eq(notes_with(none), 1);
}
