/* write.c — a scenario as a scenario file (docs/formats.md), the reverse
 * of load.c: what `fit --emit-scenario` writes for the point it chose.
 *
 * The model goes in as its generator's hyper-parameters (or the path of
 * its model file when it is an explicit graph), the topology as a path
 * relative to the file's folder, the training settings every one, so that
 * loading the file gives the scenario back. shard() entries are not
 * written (a Megatron-style plan needs none). No hot path.
 */
#include <cjson/cJSON.h>

#include "scenarios.h"

static void add_num(cJSON *o, const char *k, double v)
{
	cJSON_AddNumberToObject(o, k, v);
}

static cJSON *training_json(const struct training *t)
{
	cJSON *o = cJSON_CreateObject();
	if (!o)
		return NULL;
	add_num(o, "global_batch", (double)t->global_batch);
	add_num(o, "micro_batches", (double)t->micro_batches);
	add_num(o, "pipeline_stages", (double)t->pipeline_stages);
	if (t->schedule == SCHED_INTERLEAVED_1F1B)
		add_num(o, "virtual_stages", (double)t->virtual_stages);
	cJSON_AddStringToObject(o, "schedule", schedule_names[t->schedule]);
	cJSON_AddStringToObject(o, "recompute", recompute_names[t->recompute]);
	if (t->recompute == RECOMPUTE_FULL && t->recompute_layers > 0)
		add_num(o, "recompute_layers", (double)t->recompute_layers);
	add_num(o, "zero_stage", t->zero_stage);
	if (t->zero_stage == 3 && t->zero3_impl != ZERO3_COLLECTIVES)
		cJSON_AddStringToObject(o, "zero3_impl", zero3_impl_names[t->zero3_impl]);
	if (t->cross_entropy != XENT_VOCAB_PARALLEL)
		cJSON_AddStringToObject(o, "cross_entropy", cross_entropy_names[t->cross_entropy]);
	if (t->framework != FRAMEWORK_MEGATRON)
		cJSON_AddStringToObject(o, "framework", framework_names[t->framework]);
	if (t->moe_dispatcher != MOE_DISPATCH_ALLTOALL)
		cJSON_AddStringToObject(o, "moe_dispatcher", moe_dispatcher_names[t->moe_dispatcher]);
	if (t->moe_a2a_overlap)
		cJSON_AddBoolToObject(o, "moe_a2a_overlap", true);
	cJSON_AddStringToObject(o, "dtype", dtype_names[t->dtype]);
	if (t->precision != PRECISION_AUTO)
		cJSON_AddStringToObject(o, "precision", precision_names[t->precision]);
	if (t->grad_reduce_in_bf16)
		cJSON_AddBoolToObject(o, "grad_reduce_in_bf16", true);
	if (t->fp8_param_gather)
		cJSON_AddBoolToObject(o, "fp8_param_gather", true);
	if (t->main_params_dtype != STATE_FP32)
		cJSON_AddStringToObject(o, "main_params_dtype", state_dtype_names[t->main_params_dtype]);
	if (t->exp_avg_dtype != STATE_FP32)
		cJSON_AddStringToObject(o, "exp_avg_dtype", state_dtype_names[t->exp_avg_dtype]);
	if (t->exp_avg_sq_dtype != STATE_FP32)
		cJSON_AddStringToObject(o, "exp_avg_sq_dtype", state_dtype_names[t->exp_avg_sq_dtype]);
	add_num(o, "gradient_bucket_mb", t->gradient_bucket_bytes / (1024.0 * 1024.0));
	if (t->tensor_parallel > 0)
		add_num(o, "tensor_parallel", (double)t->tensor_parallel);
	cJSON_AddBoolToObject(o, "sequence_parallel", t->sequence_parallel);
	if (t->context_parallel > 1)
		add_num(o, "context_parallel", (double)t->context_parallel);
	if (t->expert_parallel > 1)
		add_num(o, "expert_parallel", (double)t->expert_parallel);
	cJSON_AddBoolToObject(o, "flash_attention", t->flash_attention);
	cJSON_AddBoolToObject(o, "gradient_accumulation_fusion", !t->separate_grad_accumulation);
	cJSON_AddBoolToObject(o, "overlap_grad_reduce", t->overlap_grad_reduce);
	/* each only where the loader takes it */
	if (t->sequence_parallel)
		cJSON_AddBoolToObject(o, "tp_comm_overlap", t->tp_comm_overlap);
	if (t->tp_comm_overlap && t->tp_comm_overlap_slices > 0)
		add_num(o, "tp_comm_overlap_slices", (double)t->tp_comm_overlap_slices);
	if (t->zero_stage == 1 || t->zero_stage == 2)
		cJSON_AddBoolToObject(o, "overlap_param_gather", t->overlap_param_gather);
	if (t->optimizer_offload)
		cJSON_AddBoolToObject(o, "optimizer_offload", true);
	if (t->activation_offload_layers > 0)
		add_num(o, "activation_offload_layers", (double)t->activation_offload_layers);
	if (t->first_stage_layers > 0)
		add_num(o, "first_stage_layers", (double)t->first_stage_layers);
	if (t->last_stage_layers > 0)
		add_num(o, "last_stage_layers", (double)t->last_stage_layers);
	if (t->embedding_in_split)
		cJSON_AddBoolToObject(o, "account_for_embedding_in_pipeline_split", true);
	if (t->loss_in_split)
		cJSON_AddBoolToObject(o, "account_for_loss_in_pipeline_split", true);
	if (t->whole_sends)
		cJSON_AddBoolToObject(o, "pipeline_scatter_gather", false);
	if (t->stage_layers) {
		cJSON *l = cJSON_AddArrayToObject(o, "stage_layers");
		for (int64_t k = 0; l && k < t->pipeline_stages; k++)
			cJSON_AddItemToArray(l, cJSON_CreateNumber((double)t->stage_layers[k]));
	}
	return o;
}

struct cJSON *scenario_json(struct arena *a, const struct scenario *s, const char *dir)
{
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return NULL;
	cJSON_AddStringToObject(root, "format", SCENARIO_FORMAT);
	add_num(root, "version", SCENARIO_VERSION);
	cJSON_AddStringToObject(root, "name", s->name);
	if (s->description)
		cJSON_AddStringToObject(root, "description", s->description);
	const struct graph *g = s->graph;
	if (g->gen) {
		cJSON *m = cJSON_AddObjectToObject(root, "model");
		cJSON *gen = model_gen_json(g->gen);
		if (!m || !gen) {
			cJSON_Delete(gen);
			cJSON_Delete(root);
			return NULL;
		}
		cJSON_AddStringToObject(m, "name", g->name);
		cJSON_AddItemToObject(m, "generator", gen);
	} else if (s->model_file) {
		char *rel = util_path_relative(a, dir, s->model_file);
		cJSON_AddStringToObject(root, "model", rel ? rel : s->model_file);
	}
	char *topo = util_path_relative(a, dir, s->topology_file);
	cJSON_AddStringToObject(root, "topology", topo ? topo : s->topology_file);
	add_num(root, "devices", (double)s->devices);
	cJSON *pl = cJSON_AddArrayToObject(root, "planners");
	for (int i = 0; pl && i < s->n_planners; i++)
		cJSON_AddItemToArray(pl, cJSON_CreateString(planner_names[s->planners[i]]));
	cJSON *t = training_json(&s->training);
	if (!t || !cJSON_AddItemToObject(root, "training", t)) {
		cJSON_Delete(t);
		cJSON_Delete(root);
		return NULL;
	}
	cJSON *sim = cJSON_AddObjectToObject(root, "simulation");
	if (sim) {
		cJSON_AddStringToObject(sim, "fidelity", fidelity_names[s->sim.fidelity]);
		cJSON_AddStringToObject(sim, "collective_algo",
		                        collective_algo_names[s->sim.collective_algo]);
	}
	return root;
}
