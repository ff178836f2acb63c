/* export.c — a plan in the formats the training frameworks read:
 *
 * - MindSpore's operator strategy file, the JSON that
 *   mindspore.parallel.set_op_strategy_config(mode="SAVE", path=...)
 *   writes and mode="LOAD" reads back under sharding propagation
 *   (StrategyCheckpoint::SaveAutoOpStrategy in MindSpore's
 *   frontend/parallel/strategy_checkpoint): a "current_stage" of 0 and,
 *   per operator, {"stage": pipeline stage, "parallel_strategy": slices per
 *   dimension of each input}. Keys are written in byte order, as
 *   MindSpore's JSON library (an ordered std::map) writes them, so that
 *   the two files compare line by line after formatting.
 * - Megatron-LM's launch arguments for a Megatron-style plan (the megatron
 *   planner's, or megatron-search's choice): parallel degrees, the
 *   virtual pipeline, sequence parallelism, recomputation, the distributed
 *   optimizer, batch sizes, and the model's shape when a generator made it.
 *
 * docs/formats.md describes both. Linear in the ops; no hot path.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"

const char *const export_format_names[EXPORT_COUNT] = {"mindspore", "megatron"};
_Static_assert(EXPORT_COUNT == 2, "export_format_names must list every format");

/* ------------------------------------------------------------ MindSpore */

/* Insertion sort: qsort_r is not C11, and a graph has thousands of ops at
 * most (GPT-3: ~3000), sorted once. Stable, so equal names keep op order. */
static void sort_ops(int *v, int n, const struct graph *g)
{
	for (int i = 1; i < n; i++) {
		int x = v[i], j = i;
		while (j > 0 && strcmp(g->ops[v[j - 1]].name, g->ops[x].name) > 0) {
			v[j] = v[j - 1];
			j--;
		}
		v[j] = x;
	}
}

/* Whether the tuple form says all of an op's placement: the op re-derived
 * from its cuts puts every input slice on the same ranks. */
static bool tuple_suffices(struct arena *a, const struct plan *p, int i)
{
	const struct dist_op *d = &p->ops[i];
	struct dist_op t;
	struct diag_list dl;
	diag_list_init(&dl);
	bool same = d->cuts && dist_op_from_cuts(a, p->graph, i,
	                                         (const int64_t (*)[GRAPH_MAX_RANK])d->cuts,
	                                         p->n_devices, &t, &dl);
	for (int k = 0; same && k < d->n_in; k++)
		same = layout_same_placement(&t.in[k], &d->in[k]);
	diag_list_free(&dl);
	return same;
}

/* MindSpore's layout of an op's inputs ("parallel_layout_value_item"):
 * {"0": {"alias_name", "dev_matrix", "interleaved_parallel",
 * "tensor_map"}, ...}, keys in byte order. Axes without a name are called
 * "axisK" (K from the major end). */
static cJSON *ms_layout(const struct plan *p, int i)
{
	const struct op *op = &p->graph->ops[i];
	const struct dist_op *d = &p->ops[i];
	cJSON *o = cJSON_CreateObject();
	for (int k = 0; o && k < op->n_in && k < d->n_in; k++) {
		const struct layout *l = &d->in[k];
		char key[16], name[32];
		snprintf(key, sizeof key, "%d", k);
		cJSON *e = cJSON_CreateObject(), *al = cJSON_CreateArray(), *dm = cJSON_CreateArray();
		cJSON *tm = cJSON_CreateArray();
		bool ok = e && al && dm && tm;
		for (int x = 0; ok && x < l->dm.n; x++) {
			snprintf(name, sizeof name, "axis%d", x);
			ok = cJSON_AddItemToArray(al, cJSON_CreateString(l->dm.name[x] ? l->dm.name[x]
			                                                              : name)) &&
			     cJSON_AddItemToArray(dm, cJSON_CreateNumber((double)l->dm.size[x]));
		}
		for (int r = 0; ok && r < l->rank; r++) {
			int m[PLAN_MAX_AXES];
			int n = layout_tensor_map(l, r, m);
			cJSON *dim = cJSON_CreateArray();
			ok = dim && cJSON_AddItemToArray(tm, dim);
			if (ok && n == 0)
				ok = cJSON_AddItemToArray(dim, cJSON_CreateNumber(-1));
			for (int q = 0; ok && q < n; q++)
				ok = cJSON_AddItemToArray(dim, cJSON_CreateNumber(m[q]));
		}
		if (ok) {
			cJSON_AddItemToObject(e, "alias_name", al);
			cJSON_AddItemToObject(e, "dev_matrix", dm);
			cJSON_AddBoolToObject(e, "interleaved_parallel", false);
			cJSON_AddItemToObject(e, "tensor_map", tm);
			cJSON_AddItemToObject(o, key, e);
		} else {
			cJSON_Delete(e);
			cJSON_Delete(al);
			cJSON_Delete(dm);
			cJSON_Delete(tm);
			cJSON_Delete(o);
			return NULL;
		}
	}
	return o;
}

cJSON *report_mindspore_strategy(const struct plan *p, const struct plan_part *part)
{
	const struct graph *g = p->graph;
	int *order = malloc(sizeof(int) * (size_t)(g->n_ops + 1));
	struct arena *scratch = arena_new();
	cJSON *layouts = NULL;
	cJSON *root = cJSON_CreateObject();
	cJSON *items = root ? cJSON_CreateObject() : NULL;
	bool ok = order && items && cJSON_AddNumberToObject(root, "current_stage", 0);
	for (int i = 0; ok && i < g->n_ops; i++)
		order[i] = i;
	if (ok)
		sort_ops(order, g->n_ops, g);
	for (int k = 0; ok && k < g->n_ops; k++) {
		int i = order[k];
		const struct op *op = &g->ops[i];
		const struct dist_op *d = &p->ops[i];
		int stage = part && part->chunk_of ? part_stage(part, part->chunk_of[i]) : 0;
		cJSON *item = cJSON_CreateObject(), *strat = cJSON_CreateArray();
		ok = item && strat && cJSON_AddItemToObject(item, "parallel_strategy", strat);
		if (!ok) {
			cJSON_Delete(strat);
			cJSON_Delete(item);
			break;
		}
		for (int in = 0; ok && in < op->n_in; in++) {
			const struct tensor *t = &g->tensors[op->in[in]];
			cJSON *dims = cJSON_CreateArray();
			ok = dims && cJSON_AddItemToArray(strat, dims);
			for (int r = 0; ok && r < t->rank; r++) {
				int64_t c = in < d->n_in && d->cuts ? d->cuts[in][r] : 1;
				ok = cJSON_AddItemToArray(dims, cJSON_CreateNumber((double)(c > 0 ? c : 1)));
			}
		}
		ok = ok && cJSON_AddNumberToObject(item, "stage", stage);
		if (!cJSON_AddItemToObject(items, op->name, item)) {
			cJSON_Delete(item);
			ok = false;
		}
		if (ok && scratch && !tuple_suffices(scratch, p, i)) {
			cJSON *lay = ms_layout(p, i);
			if (!layouts && lay) {
				layouts = cJSON_CreateObject();
				ok = layouts != NULL;
			}
			if (!lay || !ok || !cJSON_AddItemToObject(layouts, op->name, lay)) {
				cJSON_Delete(lay);
				ok = false;
			}
		}
	}
	arena_free(scratch);
	free(order);
	/* Byte order: parallel_layout_value_item before parallel_strategy_item. */
	if (ok && layouts) {
		ok = cJSON_AddItemToObject(root, "parallel_layout_value_item", layouts);
		if (ok)
			layouts = NULL;
	}
	if (ok) {
		ok = cJSON_AddItemToObject(root, "parallel_strategy_item", items);
		if (ok)
			items = NULL;
	}
	cJSON_Delete(layouts);
	cJSON_Delete(items);
	if (!ok) {
		cJSON_Delete(root);
		return NULL;
	}
	return root;
}

/* ------------------------------------------------------------- Megatron */

/* Slices of an op's largest parameter input (1 when it has none). */
static int64_t param_slices(const struct plan *p, int i)
{
	const struct op *op = &p->graph->ops[i];
	const struct dist_op *d = &p->ops[i];
	int64_t best = -1, slices = 1;
	for (int k = 0; k < op->n_in && k < d->n_in; k++) {
		const struct tensor *t = &p->graph->tensors[op->in[k]];
		if (t->role != TENSOR_PARAM || t->elems <= best || !d->cuts)
			continue;
		best = t->elems;
		slices = 1;
		for (int r = 0; r < t->rank; r++)
			slices *= d->cuts[k][r] > 0 ? d->cuts[k][r] : 1;
	}
	return slices;
}

bool report_megatron_config(const struct plan *p, enum planner_kind kind,
                            struct search_config *out, char *err, size_t err_size)
{
	const struct scenario *s = p->scenario;
	const struct training *t = &s->training;
	if (kind == PLANNER_MEGATRON_SEARCH && p->search && p->search->n > 0) {
		*out = p->search->cands[0].config;
		return true;
	}
	if (kind != PLANNER_MEGATRON) {
		snprintf(err, err_size, "Megatron-LM's arguments describe a Megatron-style plan: "
		         "plan with --planner megatron or megatron-search (this plan is %s's)",
		         planner_names[kind]);
		return false;
	}
	/* The tensor-parallel degree: the slices of the weight of the MatMul
	 * that does the most FLOPs with one (a transformer's MLP; the experts of
	 * a mixture are batched MatMuls, their weights cut over EP too). */
	int heaviest = -1;
	for (int i = 0; i < p->graph->n_ops; i++)
		if (p->graph->ops[i].params > 0 && p->graph->ops[i].kind == OP_MATMUL &&
		    (heaviest < 0 || p->graph->ops[i].flops > p->graph->ops[heaviest].flops))
			heaviest = i;
	int64_t tp = heaviest >= 0 ? param_slices(p, heaviest) : 1;
	int64_t pp = t->pipeline_stages > 0 ? t->pipeline_stages : 1;
	if (tp < 1 || p->n_devices % tp) {
		snprintf(err, err_size, "the plan's tensor-parallel degree %lld does not divide the "
		         "%lld devices of a stage", (long long)tp, (long long)p->n_devices);
		return false;
	}
	int64_t cp = t->context_parallel > 1 ? t->context_parallel : 1;
	int64_t dp = p->n_devices / tp / cp;
	if (p->graph->batch % dp) {
		snprintf(err, err_size, "the model's batch of %lld samples does not split over %lld "
		         "data-parallel replicas", (long long)p->graph->batch, (long long)dp);
		return false;
	}
	*out = (struct search_config){
		.tp = tp, .pp = pp, .dp = dp,
		.micro_batch = p->graph->batch / dp,
		.micro_batches = t->micro_batches,
		.schedule = t->schedule,
		.virtual_stages = t->virtual_stages > 0 ? t->virtual_stages : 1,
		.recompute = t->recompute,
		.zero_stage = t->zero_stage,
		.ep = t->expert_parallel > 1 ? t->expert_parallel : 1,
		.cp = t->context_parallel > 1 ? t->context_parallel : 1,
		.sequence_parallel = t->sequence_parallel && tp > 1,
		.first_stage_layers = t->first_stage_layers,
		.last_stage_layers = t->last_stage_layers,
		.stage_layers = t->stage_layers,
		.activation_offload_layers = t->activation_offload_layers,
		.embedding_in_split = t->embedding_in_split,
		.loss_in_split = t->loss_in_split,
	};
	/* Arguments Megatron-LM refuses at launch are no answer: the search's
	 * rules (the embedding and the loss counted as layers where accounted,
	 * the activation offload's refusals) */
	const struct graph *g = p->graph;
	enum search_rule rule = plan_search_rule(g, t->global_batch, out);
	if (rule != SEARCH_RULE_NONE) {
		char why[256];
		snprintf(err, err_size, "Megatron-LM would refuse this plan: %s",
		         plan_search_rule_text(why, sizeof why, rule, g, t->global_batch, out));
		return false;
	}
	return true;
}

static void arg(FILE *f, bool *first, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

static void arg(FILE *f, bool *first, const char *fmt, ...)
{
	va_list ap;
	if (!*first)
		fputs(" \\\n", f);
	*first = false;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
}

/* The model's shape, when a transformer generator made it; its experts'
 * dispatcher the scenario's. */
static void model_args(FILE *f, bool *first, const struct model_gen *g,
                       enum moe_dispatcher dispatcher)
{
	if (!g || (g->kind != GEN_GPT && g->kind != GEN_LLAMA))
		return;
	bool llama = g->kind == GEN_LLAMA;
	int64_t ffn = model_gen_ffn(g);
	arg(f, first, "--num-layers %lld", (long long)g->layers);
	arg(f, first, "--hidden-size %lld", (long long)g->hidden);
	arg(f, first, "--ffn-hidden-size %lld", (long long)ffn);
	arg(f, first, "--num-attention-heads %lld", (long long)g->heads);
	if (llama && g->head_dim > 0)  /* a head's width when not hidden / heads */
		arg(f, first, "--kv-channels %lld", (long long)g->head_dim);
	if (llama && g->qk_norm)
		arg(f, first, "--qk-layernorm");
	if (llama && g->kv_heads > 0 && g->kv_heads < g->heads) {
		arg(f, first, "--group-query-attention");
		arg(f, first, "--num-query-groups %lld", (long long)g->kv_heads);
	}
	arg(f, first, "--seq-length %lld", (long long)g->seq);
	/* the vocabulary as planned; a run names its tokenizer beside it */
	arg(f, first, "--vocab-size %lld", (long long)g->vocab);
	int64_t positions = !llama && !g->rotary && g->max_positions > 0 ? g->max_positions : g->seq;
	arg(f, first, "--max-position-embeddings %lld", (long long)positions);
	if (llama || g->rotary) {
		arg(f, first, "--position-embedding-type rope");
		if (g->rope_theta > 0)
			arg(f, first, "--rotary-base %.0f", g->rope_theta);
	}
	if (g->norm_eps > 0)
		arg(f, first, "--norm-epsilon %g", g->norm_eps);
	if (llama) {
		arg(f, first, "--normalization RMSNorm");
		arg(f, first, "--swiglu");
		arg(f, first, "--disable-bias-linear");
		if (g->qkv_bias)
			arg(f, first, "--add-qkv-bias");
	} else if (!g->bias) {
		arg(f, first, "--disable-bias-linear");
	}
	if (llama && g->experts > 0) { /* Megatron-Core MoE (docs/moe-cp.md) */
		arg(f, first, "--num-experts %lld", (long long)g->experts);
		arg(f, first, "--moe-router-topk %lld", (long long)g->top_k);
		arg(f, first, "--moe-ffn-hidden-size %lld",
		    (long long)(g->expert_ffn > 0 ? g->expert_ffn : ffn));
		if (g->shared_experts > 0)
			arg(f, first, "--moe-shared-expert-intermediate-size %lld",
			    (long long)(g->shared_experts * (g->expert_ffn > 0 ? g->expert_ffn : ffn)));
		if (g->dense_layers > 0)
			arg(f, first, "--moe-layer-freq \"([0]*%lld+[1]*%lld)\"", (long long)g->dense_layers,
			    (long long)(g->layers - g->dense_layers));
		if (g->sigmoid_router) { /* DeepSeek-V3's router (Megatron-Core's TransformerConfig) */
			arg(f, first, "--moe-router-score-function sigmoid");
			arg(f, first, "--moe-router-enable-expert-bias");
		}
		if (g->expert_groups > 0) {
			arg(f, first, "--moe-router-num-groups %lld", (long long)g->expert_groups);
			arg(f, first, "--moe-router-group-topk %lld", (long long)g->group_top_k);
		}
		if (moe_dispatch_per_server(dispatcher)) {
			/* Megatron-Core's flex dispatcher, unpadded as
			 * Megatron-Bridge's recipes run it (TransformerConfig
			 * refuses the padding with the deepep backend) */
			arg(f, first, "--moe-token-dispatcher-type flex");
			arg(f, first, "--moe-flex-dispatcher-backend %s", moe_dispatcher_names[dispatcher]);
			arg(f, first, "--moe-expert-capacity-factor %g",
			    g->capacity_factor > 0 ? g->capacity_factor : 1.0);
		} else {
			arg(f, first, "--moe-token-dispatcher-type alltoall");
			arg(f, first, "--moe-expert-capacity-factor %g",
			    g->capacity_factor > 0 ? g->capacity_factor : 1.0);
			arg(f, first, "--moe-pad-expert-input-to-capacity");
		}
	}
	if (llama && g->kv_lora_rank > 0) { /* multi-head latent attention (Megatron-Core MLA) */
		arg(f, first, "--multi-latent-attention");
		if (g->q_lora_rank > 0)
			arg(f, first, "--q-lora-rank %lld", (long long)g->q_lora_rank);
		arg(f, first, "--kv-lora-rank %lld", (long long)g->kv_lora_rank);
		arg(f, first, "--qk-head-dim %lld", (long long)g->qk_nope_head_dim);
		arg(f, first, "--qk-pos-emb-head-dim %lld", (long long)g->qk_rope_head_dim);
		arg(f, first, "--v-head-dim %lld", (long long)g->v_head_dim);
	}
	if (llama && g->mtp_layers > 0)
		arg(f, first, "--mtp-num-layers %lld", (long long)g->mtp_layers);
	bool tied = g->tie_embeddings ? g->tie_embeddings > 0 : !llama;
	if (!tied)
		arg(f, first, "--untie-embeddings-and-output-weights");
	if (!llama) {
		arg(f, first, "--hidden-dropout %g", g->dropout);
		arg(f, first, "--attention-dropout %g", g->dropout);
	} else {
		arg(f, first, "--hidden-dropout 0");
		arg(f, first, "--attention-dropout 0");
	}
}

/* training.stage_layers as Megatron-LM's --pipeline-model-parallel-layout
 * (megatron/core/transformer/pipeline_parallel_layer_layout.py): the
 * chunks split by "|" in layer order, virtual stage v of pipeline rank s
 * the (v P + s)-th, each stage's layers split evenly over its virtual
 * stages; "E" the embedding on the first chunk, "L" the loss on the last,
 * "t*n" n decoder layers, "m" a multi-token prediction module (after the
 * last chunk's decoder layers, where Megatron-LM wants it). The VPP size
 * follows from the chunk count, so no --num-virtual-stages-per-pipeline-
 * rank with it. */
static void megatron_layout_arg(FILE *f, bool *first, const struct search_config *c,
                                const struct model_gen *g)
{
	int64_t v = c->virtual_stages > 1 ? c->virtual_stages : 1;
	int64_t mtp = g && g->mtp_layers > 0 ? g->mtp_layers : 0;
	arg(f, first, "%s", "--pipeline-model-parallel-layout \"");
	for (int64_t k = 0; k < c->pp * v; k++) {
		bool last = k + 1 == c->pp * v;
		fprintf(f, "%s%st*%lld", k ? "|" : "", k ? "" : "E",
		        (long long)(c->stage_layers[k % c->pp] / v));
		if (last && mtp > 0)
			fprintf(f, ",m*%lld", (long long)mtp);
		if (last)
			fputs(",L", f);
	}
	fputc('"', f);
}

void report_megatron_args(FILE *f, const struct plan *p, const struct search_config *c)
{
	const struct scenario *s = p->scenario;
	const struct training *t = &s->training;
	const struct model_gen *g = p->graph->gen;
	int64_t cp = c->cp > 1 ? c->cp : 1;
	char cps[32] = "";
	if (cp > 1)
		snprintf(cps, sizeof cps, " x CP %lld", (long long)cp);
	fprintf(f, "# Megatron-LM arguments for %s: %lld devices = TP %lld%s x PP %lld x DP %lld\n",
	        s->name, (long long)(c->tp * cp * c->pp * c->dp), (long long)c->tp, cps,
	        (long long)c->pp, (long long)c->dp);
	bool first = true;
	arg(f, &first, "--tensor-model-parallel-size %lld", (long long)c->tp);
	arg(f, &first, "--pipeline-model-parallel-size %lld", (long long)c->pp);
	bool uneven = c->first_stage_layers > 0 || c->last_stage_layers > 0 || c->stage_layers;
	/* Megatron-Core's embedding and loss accounting: each counts as a
	 * layer in the division, also of the virtual stages (arguments.py) */
	bool emb = t->embedding_in_split && !uneven, loss = t->loss_in_split && !uneven;
	int64_t units = g ? g->layers + emb + loss : 0;
	if (c->pp > 1 && c->virtual_stages > 1 && g && g->layers > 0 && !uneven &&
	    units % (c->pp * c->virtual_stages) == 0)
		arg(f, &first, "--num-layers-per-virtual-pipeline-stage %lld",
		    (long long)(units / (c->pp * c->virtual_stages)));
	if (c->pp > 1 && emb)
		arg(f, &first, "--account-for-embedding-in-pipeline-split");
	if (c->pp > 1 && loss)
		arg(f, &first, "--account-for-loss-in-pipeline-split");
	/* Megatron-LM's uneven pipeline (arguments.py: with it, the virtual
	 * stages are given per rank) */
	if (c->pp > 1 && c->stage_layers)
		megatron_layout_arg(f, &first, c, g);
	else if (c->pp > 1 && c->virtual_stages > 1 && uneven)
		arg(f, &first, "--num-virtual-stages-per-pipeline-rank %lld",
		    (long long)c->virtual_stages);
	if (c->pp > 1 && c->first_stage_layers > 0)
		arg(f, &first, "--decoder-first-pipeline-num-layers %lld",
		    (long long)c->first_stage_layers);
	if (c->pp > 1 && c->last_stage_layers > 0)
		arg(f, &first, "--decoder-last-pipeline-num-layers %lld",
		    (long long)c->last_stage_layers);
	if (t->sequence_parallel && c->tp > 1)
		arg(f, &first, "--sequence-parallel");
	if (t->tp_comm_overlap && t->sequence_parallel && c->tp > 1)
		arg(f, &first, "--tp-comm-overlap");
	if (c->ep > 1)
		arg(f, &first, "--expert-model-parallel-size %lld", (long long)c->ep);
	/* folded above DP (the experts whole over EP ranks of the stage):
	 * Megatron-Core's expert tensor parallelism 1, where its default is
	 * TP (docs/moe-cp.md, "Expert parallelism in a plan") */
	if (c->ep > c->dp && c->tp > 1)
		arg(f, &first, "--expert-tensor-parallel-size 1");
	if (c->cp > 1)
		arg(f, &first, "--context-parallel-size %lld", (long long)c->cp);
	if (c->ep > 1 && t->moe_a2a_overlap)
		arg(f, &first, "--overlap-moe-expert-parallel-comm");
	if (c->recompute == RECOMPUTE_SELECTIVE) {
		arg(f, &first, "--recompute-granularity selective");
	} else if (c->recompute == RECOMPUTE_FULL && t->recompute_layers > 0) {
		/* the first N layers of each chunk (training.recompute_layers) */
		arg(f, &first, "--recompute-granularity full");
		arg(f, &first, "--recompute-method block");
		arg(f, &first, "--recompute-num-layers %lld", (long long)t->recompute_layers);
	} else if (c->recompute == RECOMPUTE_FULL) {
		arg(f, &first, "--recompute-granularity full");
		arg(f, &first, "--recompute-method uniform");
		arg(f, &first, "--recompute-num-layers 1");
	}
	if (c->zero_stage >= 1)
		arg(f, &first, "--use-distributed-optimizer");
	if (c->zero_stage >= 2) { /* Megatron-FSDP shards the gradients, then the parameters */
		arg(f, &first, "--use-megatron-fsdp");
		arg(f, &first, "--data-parallel-sharding-strategy %s",
		    c->zero_stage == 2 ? "optim_grads" : "optim_grads_params");
	}
	if (c->zero_stage >= 1 && t->overlap_param_gather)
		arg(f, &first, "--overlap-param-gather");
	if (t->flash_attention)
		arg(f, &first, "--attention-backend flash");
	/* the loss (docs/cost-models.md, "The loss"); vocab-parallel is the
	 * default, and MindFormers' has no Megatron-LM equal: Megatron-LM
	 * then runs its default */
	if (t->cross_entropy == XENT_VOCAB_PARALLEL_JIT || t->cross_entropy == XENT_FUSED)
		arg(f, &first, "--cross-entropy-loss-fusion");
	if (t->cross_entropy == XENT_FUSED)
		arg(f, &first, "--cross-entropy-fusion-impl te");
	arg(f, &first, "--micro-batch-size %lld", (long long)c->micro_batch);
	arg(f, &first, "--global-batch-size %lld", (long long)t->global_batch);
	model_args(f, &first, g, t->moe_dispatcher);
	enum dtype dt = t->dtype;
	if (dt == DT_BF16)
		arg(f, &first, "--bf16");
	else if (dt == DT_FP16)
		arg(f, &first, "--fp16");
	/* The FP8 recipes (Transformer Engine's delayed scaling, as the
	 * estimate prices it: its amax history of 1024, the largest of it) */
	if (t->precision == PRECISION_FP8_HYBRID || t->precision == PRECISION_FP8_E4M3) {
		arg(f, &first, "--fp8-format %s", t->precision == PRECISION_FP8_HYBRID ? "hybrid" : "e4m3");
		arg(f, &first, "--fp8-amax-history-len 1024");
		arg(f, &first, "--fp8-amax-compute-algo max");
	}
	if (t->grad_reduce_in_bf16)
		arg(f, &first, "--grad-reduce-in-bf16");
	if (t->fp8_param_gather)
		arg(f, &first, "--fp8-param-gather");
	/* The optimizer in host memory (Megatron-Core's optimizer CPU offload:
	 * the whole of it, its state in the parameters' precision where it can) */
	bool state16 = t->main_params_dtype != STATE_FP32 || t->exp_avg_dtype != STATE_FP32 ||
	               t->exp_avg_sq_dtype != STATE_FP32;
	if (t->optimizer_offload) {
		arg(f, &first, "--optimizer-cpu-offload");
		arg(f, &first, "--optimizer-offload-fraction 1.0");
	}
	/* the optimizer's state in other precisions (Megatron-LM's
	 * --main-params-dtype takes fp32 or fp16: a bf16 master copy, apex's,
	 * has no flag, noted below) */
	if (t->optimizer_offload || state16)
		arg(f, &first, "--use-precision-aware-optimizer");
	if (t->main_params_dtype == STATE_FP16)
		arg(f, &first, "--main-params-dtype fp16");
	if (t->exp_avg_dtype != STATE_FP32)
		arg(f, &first, "--exp-avg-dtype %s", state_dtype_names[t->exp_avg_dtype]);
	if (t->exp_avg_sq_dtype != STATE_FP32)
		arg(f, &first, "--exp-avg-sq-dtype %s", state_dtype_names[t->exp_avg_sq_dtype]);
	/* The activations of the first N layers in host memory (Megatron-Core's
	 * CPU offloading through Transformer Engine): Megatron-LM core_v0.16.0's
	 * megatron/training/arguments.py generates --cpu-offloading-num-layers
	 * from TransformerConfig and sets cpu_offloading itself when it is
	 * above 0; cpu_offloading has no flag of its own (excluded there) */
	if (t->activation_offload_layers > 0)
		arg(f, &first, "--cpu-offloading-num-layers %lld", (long long)t->activation_offload_layers);
	fputc('\n', f);
	if (g && g->kind == GEN_GPT && g->parallel_residual)
		fprintf(f, "# the model's parallel residual (GPT-NeoX) has no Megatron-LM flag\n");
	if (t->main_params_dtype == STATE_BF16)
		fprintf(f, "# main_params_dtype bf16 (apex's DistributedFusedAdam) has no Megatron-LM "
		        "flag: --main-params-dtype takes fp32 or fp16\n");
	if (t->cross_entropy == XENT_PYTORCH)
		fprintf(f, "# cross_entropy \"pytorch\" (PyTorch's F.cross_entropy over fp32 logits) has "
		        "no Megatron-LM flag: Megatron-LM runs its vocabulary-parallel loss\n");
	if (t->tp_comm_overlap && t->tp_comm_overlap_slices > 0 && t->sequence_parallel && c->tp > 1)
		fprintf(f, "# tp_comm_overlap_slices (MindFormers' fine_grain_interleave) has no "
		        "Megatron-LM flag: --tp-comm-overlap runs Transformer Engine's ring instead\n");
}

char *report_export_text(struct arena *ar, const struct plan *p, enum planner_kind kind,
                         enum export_format format, struct diag_list *d, char *err,
                         size_t err_size)
{
	char *text = NULL;
	size_t len = 0;
	snprintf(err, err_size, "out of memory");
	if (format == EXPORT_MEGATRON) {
		struct search_config c;
		if (!report_megatron_config(p, kind, &c, err, err_size))
			return NULL;
		FILE *m = open_memstream(&text, &len);
		if (m) {
			report_megatron_args(m, p, &c);
			if (fclose(m) != 0) {
				free(text);
				text = NULL;
			}
		}
		return text;
	}
	/* The pipeline stage of each op comes from the estimate's partition. */
	struct estimate e;
	const struct plan_part *part = NULL;
	if (p->scenario->training.pipeline_stages > 1) {
		if (!plan_estimate(ar, p, &e, d)) {
			snprintf(err, err_size, "the plan could not be estimated");
			return NULL;
		}
		part = &e.part;
	}
	cJSON *j = report_mindspore_strategy(p, part);
	char *s = j ? cJSON_Print(j) : NULL;
	cJSON_Delete(j);
	size_t n = s ? strlen(s) : 0;
	text = s ? malloc(n + 2) : NULL;
	if (text) {
		memcpy(text, s, n);
		memcpy(text + n, "\n", 2);
	}
	free(s);
	return text;
}

/* ----------------------------------------------------------------- files */

bool report_write_file(const char *path, const char *text, char *err, size_t err_size)
{
	struct cli_out o;
	if (!cli_out_open(&o, path, err, err_size))
		return false;
	fputs(text, o.f);
	return cli_out_close(&o, err, err_size);
}
