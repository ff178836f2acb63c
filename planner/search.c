/* search.c — Megatron-style plan search (`--planner megatron-search`):
 * the configurations a capacity planner would try by hand, every one of
 * them, planned by Megatron's rule and ranked by the estimator.
 *
 * A configuration is (TP, CP, PP, DP, micro-batch, sequence parallelism,
 * expert parallelism, schedule, recompute, ZeRO). Those that share (TP,
 * CP, PP, micro-batch, sequence parallelism, EP) share a plan: Megatron's
 * rule depends on the tensor-, context- and expert-parallel degrees,
 * sequence parallelism, the devices of a stage and
 * the graph (whose batch is the micro-batch of every replica), not on the
 * schedule, the recomputation or ZeRO, which only the estimate reads. So
 * the search plans once per group and estimates every variant of it, each
 * estimate in an arena of its own so that memory stays that of one plan.
 *
 * Enumeration order (ties in the ranking keep it): TP ascending, PP
 * ascending, CP ascending (every divisor of the stage's devices / TP up to
 * the scenario's training.context_parallel, which is 1 unless it asks;
 * with CP > 1 one sequence a replica), micro-batch ascending, sequence
 * parallelism off then on (on only with TP > 1), EP ascending (every
 * divisor of DP that divides the experts of a mixture-of-experts model; 1
 * otherwise), schedule 1F1B, interleaved, GPipe, recompute none, selective,
 * full, ZeRO 0 to 3.
 *
 * Units: seconds, bytes (double); counts int64_t.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner-int.h"

static const int64_t micro_batch_choices[] = {1, 2, 4, 8};
static const enum pipeline_schedule schedule_order[] = {SCHED_1F1B, SCHED_INTERLEAVED_1F1B,
                                                        SCHED_GPIPE};
enum {
	SEARCH_VIRTUAL = 2,          /* virtual stages of the interleaved schedule */
	SEARCH_ZERO_STAGES = 4,      /* ZeRO 0 .. 3 */
};

/* The most model chunks a pipeline may have: one generated layer each,
 * or one op each for an explicit graph. */
static int64_t chunk_limit(const struct graph *g)
{
	if (g->gen && g->gen->layers > 0)
		return g->gen->layers;
	return g->n_ops;
}

/* ------------------------------------------------------------ the rules */

const char *const search_rule_names[SEARCH_RULE_COUNT] = {
	"none", "heads-tp", "kv-heads-tp", "ffn-tp", "layers-pp", "seq-sp", "seq-cp",
	"experts-ep", "batch-dp", "schedule", "layers-vpp", "micro-batches-pp", "offload-pp",
	"offload-recompute", "recompute-op",
};
_Static_assert(SEARCH_RULE_COUNT == 15, "search_rule_names out of step");

/* The generator's member when its kind takes it, else 0. */
static int64_t gen_member(const struct model_gen *m, const char *field, int64_t v)
{
	return m && model_gen_uses(m->kind, field) ? v : 0;
}

enum search_rule plan_search_rule(const struct graph *g, int64_t G, const struct search_config *c)
{
	const struct model_gen *m = g->gen;
	int64_t heads = gen_member(m, "heads", m ? m->heads : 0);
	int64_t kv = gen_member(m, "kv_heads", m ? m->kv_heads : 0);
	int64_t layers = gen_member(m, "layers", m ? m->layers : 0);
	int64_t seq = gen_member(m, "seq", m ? m->seq : 0);
	int64_t ffn = m ? model_gen_ffn(m) : 0;
	int64_t experts = m ? m->experts : 0;
	int64_t cp = c->cp > 1 ? c->cp : 1, ep = c->ep > 1 ? c->ep : 1;
	int64_t chunks = c->pp * (c->virtual_stages > 1 ? c->virtual_stages : 1);
	bool interleaved = c->pp > 1 && c->schedule == SCHED_INTERLEAVED_1F1B;
	if (kv < 1)
		kv = heads;
	if (heads > 0 && heads % c->tp)
		return SEARCH_RULE_HEADS_TP;
	if (kv > 0 && kv % c->tp && c->tp % kv)
		return SEARCH_RULE_KV_HEADS_TP;
	if (ffn > 0 && ffn % c->tp)
		return SEARCH_RULE_FFN_TP;
	bool uneven = c->first_stage_layers > 0 || c->last_stage_layers > 0 || c->stage_layers;
	/* the embedding and the loss counted as layers take the place of
	 * any other split, as the estimate counts them (pipeline.c) */
	bool accounted = c->embedding_in_split || c->loss_in_split;
	if (layers > 0 && accounted &&
	    scenario_accounted_layers(layers, c->pp, 1, c->embedding_in_split, c->loss_in_split, 0,
	                              NULL, 0) < 0)
		return SEARCH_RULE_LAYERS_PP;
	if (layers > 0 && !accounted && uneven &&
	    scenario_stage_layers(layers, c->pp, interleaved ? c->virtual_stages : 1,
	                          c->first_stage_layers, c->last_stage_layers, c->stage_layers, 0,
	                          NULL, 0) < 0)
		return SEARCH_RULE_LAYERS_PP;
	if (layers > 0 && !accounted && !uneven && layers % c->pp)
		return SEARCH_RULE_LAYERS_PP;
	if (seq > 0 && c->sequence_parallel && c->tp > 1 && (seq / cp) % c->tp)
		return SEARCH_RULE_SEQ_SP;
	if (seq > 0 && cp > 1 && seq % (2 * cp))
		return SEARCH_RULE_SEQ_CP;
	if (ep > 1 && (experts < 1 || experts % ep))
		return SEARCH_RULE_EXPERTS_EP;
	if (c->micro_batch < 1 || c->dp < 1 || G % (c->micro_batch * c->dp))
		return SEARCH_RULE_BATCH_DP;
	if (c->pp > 1 && c->schedule != SCHED_1F1B && c->schedule != SCHED_INTERLEAVED_1F1B)
		return SEARCH_RULE_SCHEDULE;
	if (interleaved && layers > 0 && accounted &&
	    scenario_accounted_layers(layers, c->pp, c->virtual_stages, c->embedding_in_split,
	                              c->loss_in_split, 0, NULL, 0) < 0)
		return SEARCH_RULE_LAYERS_VPP;
	if (interleaved && layers > 0 && !accounted && !uneven && layers % chunks)
		return SEARCH_RULE_LAYERS_VPP;
	if (interleaved && c->micro_batches % c->pp)
		return SEARCH_RULE_MICRO_BATCHES_PP;
	/* torchtitan's per-op policy: Megatron-Core's TransformerConfig takes
	 * recompute_granularity "full" or "selective" only */
	if (c->recompute == RECOMPUTE_OP)
		return SEARCH_RULE_RECOMPUTE_OP;
	/* the refusals that do not depend on the configuration (a model
	 * without layers, all of them offloaded) are the loader's */
	switch (scenario_offload_refusal(c->activation_offload_layers, layers, c->pp, c->recompute,
	                                 NULL, 0)) {
	case SCENARIO_OFFLOAD_PIPELINE:
		return SEARCH_RULE_OFFLOAD_PP;
	case SCENARIO_OFFLOAD_RECOMPUTE:
		return SEARCH_RULE_OFFLOAD_RECOMPUTE;
	default:
		return SEARCH_RULE_NONE;
	}
}

const char *plan_search_rule_text(char *buf, size_t size, enum search_rule r,
                                  const struct graph *g, int64_t G, const struct search_config *c)
{
	const struct model_gen *m = g->gen;
	long long tp = c->tp, pp = c->pp, cp = c->cp > 1 ? c->cp : 1, ep = c->ep;
	long long heads = m ? m->heads : 0, layers = m ? m->layers : 0, seq = m ? m->seq : 0;
	long long kv = m && m->kv_heads > 0 ? m->kv_heads : heads;
	switch (r) {
	case SEARCH_RULE_HEADS_TP:
		snprintf(buf, size, "tensor parallel %lld does not divide the %lld attention heads",
		         tp, heads);
		break;
	case SEARCH_RULE_KV_HEADS_TP:
		snprintf(buf, size, "tensor parallel %lld is neither a multiple nor a divisor of the "
		         "%lld key-value heads (query groups)", tp, kv);
		break;
	case SEARCH_RULE_FFN_TP:
		snprintf(buf, size, "tensor parallel %lld does not divide the MLP's hidden size %lld",
		         tp, m ? (long long)model_gen_ffn(m) : 0LL);
		break;
	case SEARCH_RULE_LAYERS_PP:
		if (c->embedding_in_split || c->loss_in_split) {
			char why[200];
			scenario_accounted_layers(layers, pp, 1, c->embedding_in_split, c->loss_in_split,
			                          0, why, sizeof why);
			snprintf(buf, size, "%s", why);
		} else if (c->first_stage_layers > 0 || c->last_stage_layers > 0 || c->stage_layers) {
			char why[200];
			scenario_stage_layers(layers, pp, c->schedule == SCHED_INTERLEAVED_1F1B &&
			                      c->virtual_stages > 1 ? c->virtual_stages : 1,
			                      c->first_stage_layers, c->last_stage_layers, c->stage_layers,
			                      0, why, sizeof why);
			if (c->stage_layers)
				snprintf(buf, size, "the stages' layers listed do not split the %lld layers "
				         "over %lld pipeline stages: %s", layers, pp, why);
			else
				snprintf(buf, size, "%lld pipeline stages with %lld layers on the first and "
				         "%lld on the last (0: even) do not split the %lld layers: %s", pp,
				         (long long)c->first_stage_layers, (long long)c->last_stage_layers,
				         layers, why);
		} else {
			snprintf(buf, size, "%lld pipeline stages do not divide the %lld layers", pp,
			         layers);
		}
		break;
	case SEARCH_RULE_SEQ_SP:
		snprintf(buf, size, "sequence parallelism over tensor parallel %lld does not divide "
		         "the sequence of %lld tokens%s", tp, seq / cp,
		         cp > 1 ? " on a context-parallel rank" : "");
		break;
	case SEARCH_RULE_SEQ_CP:
		snprintf(buf, size, "the sequence of %lld tokens is not a multiple of 2 x context "
		         "parallel %lld", seq, cp);
		break;
	case SEARCH_RULE_EXPERTS_EP:
		snprintf(buf, size, "expert parallel %lld does not divide the %lld experts", ep,
		         m ? (long long)m->experts : 0LL);
		break;
	case SEARCH_RULE_BATCH_DP:
		snprintf(buf, size, "the global batch of %lld is not a multiple of data parallel %lld "
		         "x micro-batch %lld", (long long)G, (long long)c->dp,
		         (long long)c->micro_batch);
		break;
	case SEARCH_RULE_SCHEDULE:
		/* Megatron-LM's schedules are 1F1B and interleaved 1F1B; the
		 * zero-bubble ones are flags of sail-sg's fork of it (its README) */
		snprintf(buf, size, "Megatron-LM has no %s schedule (it runs 1F1B)%s",
		         c->schedule == SCHED_ZB_H1   ? "zero-bubble (ZB-H1)"
		         : c->schedule == SCHED_ZB_V  ? "zero-bubble (ZB-V)"
		         : c->schedule == SCHED_ZB_H2 ? "zero-bubble (ZB-H2)"
		         : c->schedule == SCHED_DUALPIPE ? "DualPipe"
		                                         : "GPipe",
		         c->schedule == SCHED_ZB_V
		             ? "; sail-sg/zero-bubble-pipeline-parallelism's fork runs it with "
		               "--zero-bubble-v-schedule"
		         : c->schedule == SCHED_ZB_H1 || c->schedule == SCHED_ZB_H2
		             ? "; sail-sg/zero-bubble-pipeline-parallelism's fork runs it with "
		               "--enable-zero-bubble"
		         : c->schedule == SCHED_DUALPIPE
		             ? "; deepseek-ai/DualPipe implements it for PyTorch"
		             : "");
		break;
	case SEARCH_RULE_LAYERS_VPP:
		if (c->embedding_in_split || c->loss_in_split) {
			char why[200];
			scenario_accounted_layers(layers, pp, c->virtual_stages, c->embedding_in_split,
			                          c->loss_in_split, 0, why, sizeof why);
			snprintf(buf, size, "%s", why);
			break;
		}
		snprintf(buf, size, "%lld layers do not split into %lld stages x %lld virtual stages",
		         layers, pp, (long long)c->virtual_stages);
		break;
	case SEARCH_RULE_MICRO_BATCHES_PP:
		snprintf(buf, size, "the interleaved schedule needs the %lld micro-batches to be a "
		         "multiple of the %lld pipeline stages", (long long)c->micro_batches, pp);
		break;
	case SEARCH_RULE_OFFLOAD_PP:
	case SEARCH_RULE_OFFLOAD_RECOMPUTE: {
		char why[200];
		scenario_offload_refusal(c->activation_offload_layers, layers, pp, c->recompute, why,
		                         sizeof why);
		snprintf(buf, size, "%s", why);
		break;
	}
	case SEARCH_RULE_RECOMPUTE_OP:
		snprintf(buf, size, "recompute \"op\" (torchtitan's per-op selective checkpointing) "
		         "is not a Megatron-LM recompute granularity (full or selective)");
		break;
	case SEARCH_RULE_NONE:
	case SEARCH_RULE_COUNT:
		snprintf(buf, size, "runnable");
		break;
	}
	return buf;
}

/* ------------------------------------------------------ the enumeration */

/* How the search splits the layers over a configuration's pipeline
 * stages (docs/planner.md, "Plan search", "The stages' layers"): evenly
 * (NULL members, the study sweep's enumeration); the scenario's fixed
 * split (training.stage_layers or first_stage_layers / last_stage_layers)
 * at its own depth only; or, under training.rebalance, the rebalancing
 * rule from the faults at every depth. */
struct search_split {
	struct arena *a;                   /* the rebalanced lists */
	const struct training *user;       /* the scenario's: every configuration keeps its
	                                      activation offload and embedding and loss
	                                      accounting (the rules read them), or NULL */
	const struct training *fixed;      /* the user's split at fixed->pipeline_stages, or NULL */
	const struct topology *topo;       /* rebalance: its faults; NULL: no rebalancing */
	int64_t devices;
};

const int64_t *plan_rebalanced_layers(struct arena *a, const struct graph *g,
                                      const struct topology *t, int64_t devices, int64_t pp,
                                      int64_t unit)
{
	int64_t L = g->gen ? g->gen->layers : 0;
	if (!t || pp < 2 || L < 1)
		return NULL;
	double *slow = malloc((size_t)pp * sizeof *slow);
	int64_t *list = arena_calloc(a, (size_t)pp, sizeof *list);
	bool ok = slow && list;
	if (ok) {
		scenario_stage_slowdowns(t, devices, pp, slow);
		ok = scenario_rebalance_layers(L, (int)pp, unit, slow, NULL, list);
	}
	free(slow);
	return ok ? list : NULL;
}

/* The rebalancing rule's layers under the split (plan_rebalanced_layers,
 * no memory cap: run_group caps with plan_rebalance); NULL without
 * rebalancing or when they cannot be placed (the even rules then refuse
 * the configuration). */
static const int64_t *rebalanced(const struct search_split *sp, const struct graph *g, int64_t pp,
                                 int64_t unit)
{
	return sp && sp->topo ? plan_rebalanced_layers(sp->a, g, sp->topo, sp->devices, pp, unit)
	                      : NULL;
}

/* c's stages' layers by the split. */
static void split_layers(const struct search_split *sp, const int64_t *rebalanced_list,
                         struct search_config *c)
{
	if (sp && sp->user) {
		c->activation_offload_layers = sp->user->activation_offload_layers;
		c->embedding_in_split = sp->user->embedding_in_split;
		c->loss_in_split = sp->user->loss_in_split;
	}
	if (rebalanced_list) {
		c->stage_layers = rebalanced_list;
	} else if (sp && sp->fixed && c->pp == sp->fixed->pipeline_stages) {
		c->first_stage_layers = sp->fixed->first_stage_layers;
		c->last_stage_layers = sp->fixed->last_stage_layers;
		c->stage_layers = sp->fixed->stage_layers;
	}
}

/* The configurations of a group that the rules let through, in
 * enumeration order, into out (when not NULL; refused, when not NULL,
 * counts the others by rule); returns how many. Interleaving is tried
 * when 2 x PP chunks fit the model. */
static int expand(const struct graph *g, int64_t G, const struct search_group *gr, int64_t limit,
                  const struct search_split *sp, struct search_config *out, int64_t *refused)
{
	int n = 0;
	for (size_t k = 0; k < SL_COUNTOF(schedule_order); k++) {
		enum pipeline_schedule sc = schedule_order[k];
		if (gr->pp == 1 && sc != SCHED_1F1B)
			continue;
		if (sc == SCHED_INTERLEAVED_1F1B && SEARCH_VIRTUAL * gr->pp > limit)
			continue;
		int64_t v = sc == SCHED_INTERLEAVED_1F1B ? SEARCH_VIRTUAL : 1;
		const int64_t *list = rebalanced(sp, g, gr->pp, v);
		/* Megatron-LM's three: torchtitan's per-op policy is not a
		 * Megatron-LM configuration */
		for (int r = RECOMPUTE_NONE; r <= RECOMPUTE_FULL; r++)
			for (int z = 0; z < SEARCH_ZERO_STAGES; z++) {
				struct search_config c = {
					.tp = gr->tp, .pp = gr->pp, .dp = gr->dp,
					.micro_batch = gr->micro_batch, .micro_batches = gr->micro_batches,
					.sequence_parallel = gr->sp, .ep = gr->ep, .cp = gr->cp,
					.schedule = sc, .virtual_stages = v,
					.recompute = (enum recompute_mode)r, .zero_stage = z};
				split_layers(sp, list, &c);
				enum search_rule rule = plan_search_rule(g, G, &c);
				if (rule != SEARCH_RULE_NONE) {
					if (refused)
						refused[rule]++;
					continue;
				}
				if (out)
					out[n] = c;
				n++;
			}
	}
	return n;
}

/* EP 1, or an EP of a mixture that the megatron planner lays out
 * (plan_ep_fits: dividing DP, or folded above it with SP). */
static bool ep_fits(int64_t ep, int64_t dp, int64_t tp, int sp, int64_t experts)
{
	return ep == 1 || (experts >= 1 && plan_ep_fits(ep, dp, tp, sp));
}

static struct search_group *groups(struct arena *a, const struct graph *g, int64_t N,
                                   int64_t dps, int64_t G, bool with_ep, int64_t max_cp,
                                   const struct search_split *split, int *n,
                                   int64_t refused[SEARCH_RULE_COUNT])
{
	int64_t limit = chunk_limit(g);
	int64_t moe = g->gen ? g->gen->experts : 0, experts = with_ep ? moe : 0;
	int cap = 64;
	struct search_group *out = arena_alloc(a, (size_t)cap * sizeof *out);
	*n = 0;
	/* The space: TP inside a server (plan_tp_in_server), PP at most the model's chunks, CP
	 * for a generated dense model, the micro-batches whose replicas divide
	 * the global batch, EP for a mixture (folded above DP too); the rules then refuse what
	 * Megatron-LM would. */
	for (int64_t tp = 1; out && tp <= dps && tp <= N; tp++) {
		if (!plan_tp_in_server(dps, N, tp) || N % tp)
			continue;
		for (int64_t pp = 1; out && pp <= N / tp && pp <= limit; pp++) {
			if ((N / tp) % pp)
				continue;
			for (int64_t cp = 1; out && cp <= max_cp && cp <= N / tp / pp; cp++) {
				if ((N / tp / pp) % cp || (cp > 1 && (!g->gen || moe > 0)))
					continue;
				int64_t dp = N / tp / pp / cp;
				for (size_t k = 0; out && k < SL_COUNTOF(micro_batch_choices); k++) {
					int64_t b = micro_batch_choices[k];
					if (!g->gen) {  /* the graph's batch is fixed */
						if (g->batch % dp || k > 0)
							break;
						b = g->batch / dp;
					}
					if (cp > 1 && b > 1)  /* one sequence a replica */
						break;
					if (G % (b * dp))
						continue;
					for (int sp = 0; out && sp <= (tp > 1); sp++)
					for (int64_t ep = 1; out && ep <= dp * tp; ep++) {
						if (!ep_fits(ep, dp, tp, sp, experts))
							continue;
						if (*n == cap) {
							out = arena_grow(a, out, (size_t)cap, (size_t)cap * 2, sizeof *out);
							cap *= 2;
							if (!out)
								break;
						}
						struct search_group gr = {tp, pp, dp, b, G / (b * dp), sp, ep, cp, 0,
						                          NULL};
						gr.n_configs = expand(g, G, &gr, limit, split, NULL, refused);
						if (gr.n_configs == 0)
							continue;
						gr.configs = arena_calloc(a, (size_t)gr.n_configs + 1,
						                          sizeof *gr.configs);
						if (!gr.configs)
							return NULL;
						expand(g, G, &gr, limit, split, gr.configs, NULL);
						out[(*n)++] = gr;
					}
				}
			}
		}
	}
	return out;
}

struct search_group *plan_search_groups(struct arena *a, const struct graph *g, int64_t N,
                                        int64_t dps, int64_t G, bool with_ep, int64_t max_cp,
                                        const struct training *t,
                                        const struct topology *rebalance, int *n,
                                        int64_t refused[SEARCH_RULE_COUNT])
{
	struct search_split sp = {.a = a, .user = t, .topo = rebalance, .devices = N};
	return groups(a, g, N, dps, G, with_ep, max_cp, &sp, n, refused);
}

/* ------------------------------------------------- one configuration */

/* The graph at b x DP samples per micro-batch: generated again, or the
 * scenario's own when its batch is that already. */
static struct graph *graph_at(struct arena *a, const struct scenario *s, int64_t batch,
                              struct diag_list *diags)
{
	const struct graph *g = s->graph;
	if (g->batch == batch)
		return (struct graph *)g;
	if (!g->gen) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
		         "the model's batch is fixed at %lld samples, not %lld", (long long)g->batch,
		         (long long)batch);
		return NULL;
	}
	struct model_gen gen = *g->gen;
	gen.micro_batch = batch;
	struct graph *out = graph_generate(a, &gen, diags);
	if (out) {
		out->name = g->name;
		out->description = g->description;
		out->file = g->file;
	}
	return out;
}

static void set_training(struct training *t, const struct training *user,
                         const struct search_config *c)
{
	*t = *user;
	t->pipeline_stages = c->pp;
	t->virtual_stages = c->virtual_stages;
	t->schedule = c->schedule;
	t->recompute = c->recompute;
	/* the scenario's block of recomputed layers where the configuration
	 * recomputes in full (validation rows and study points are built here) */
	t->recompute_layers = c->recompute == RECOMPUTE_FULL ? user->recompute_layers : 0;
	t->zero_stage = c->zero_stage;
	t->sequence_parallel = c->sequence_parallel;
	t->expert_parallel = c->ep > 0 ? c->ep : user->expert_parallel;
	t->tensor_parallel = c->tp;
	t->context_parallel = c->cp > 0 ? c->cp : 1;
	t->micro_batches = c->micro_batches;
	t->micro_batches_set = true;
	/* The user's cuts hold for the user's pipeline only; the stages'
	 * layers are the configuration's (search_split). */
	if (c->pp != user->pipeline_stages || c->virtual_stages != user->virtual_stages) {
		t->n_cuts = 0;
		t->cuts = NULL;
	}
	t->first_stage_layers = c->first_stage_layers;
	t->last_stage_layers = c->last_stage_layers;
	t->stage_layers = c->stage_layers;
	/* the all-to-alls overlapped where Megatron-Core runs it */
	t->moe_a2a_overlap = user->moe_a2a_overlap && !scenario_moe_a2a_overlap_refusal(t);
}

struct scenario *plan_search_scenario(struct arena *a, const struct scenario *s,
                                      const struct search_config *c, struct diag_list *diags)
{
	struct scenario *out = arena_alloc(a, sizeof *out);
	struct graph *g = out ? graph_at(a, s, c->micro_batch * c->dp, diags) : NULL;
	if (!g)
		return NULL;
	*out = *s;
	out->graph = g;
	out->n_shards = 0;
	out->shards = NULL;
	set_training(&out->training, &s->training, c);
	return out;
}

struct plan *plan_search_plan(struct arena *a, const struct scenario *s,
                              const struct search_config *c, const struct plan_options *o,
                              struct diag_list *diags)
{
	struct scenario *sc = plan_search_scenario(a, s, c, diags);
	return sc ? plan_megatron_degree(a, sc, o, c->tp, diags) : NULL;
}

const char *plan_search_config_text(char *buf, size_t size, const struct search_config *c)
{
	char sched[32];
	if (c->virtual_stages > 1)
		snprintf(sched, sizeof sched, "%s/%lld", schedule_names[c->schedule],
		         (long long)c->virtual_stages);
	else
		snprintf(sched, sizeof sched, "%s", schedule_names[c->schedule]);
	char ep[32] = "";
	if (c->ep > 1)
		snprintf(ep, sizeof ep, " EP %lld", (long long)c->ep);
	char cp[32] = "";
	if (c->cp > 1)
		snprintf(cp, sizeof cp, " CP %lld", (long long)c->cp);
	snprintf(buf, size, "TP %lld%s%s PP %lld DP %lld%s mb %lld %s %s ZeRO %d", (long long)c->tp,
	         c->sequence_parallel ? " SP" : "", cp, (long long)c->pp, (long long)c->dp, ep,
	         (long long)c->micro_batch, c->pp > 1 ? sched : "no-pipeline",
	         recompute_names[c->recompute], c->zero_stage);
	return buf;
}

/* ---------------------------------------------------------- the search */

/* How far a candidate is over memory, the device's and its server host's
 * (the optimizer offload) together; 0 when it fits both. */
static double cand_over(const struct search_candidate *c)
{
	return (c->oom_overflow_bytes > 0 ? c->oom_overflow_bytes : 0) +
	       (c->host_overflow_bytes > 0 ? c->host_overflow_bytes : 0);
}

static int cand_cmp(const void *pa, const void *pb)
{
	const struct search_candidate *a = pa, *b = pb;
	bool fa = !(cand_over(a) > 0), fb = !(cand_over(b) > 0);
	if (fa != fb)
		return fa ? -1 : 1;
	double ka = fa ? a->iteration_s : cand_over(a);
	double kb = fb ? b->iteration_s : cand_over(b);
	if (ka != kb)
		return ka < kb ? -1 : 1;
	if (a->memory_bytes != b->memory_bytes)
		return a->memory_bytes < b->memory_bytes ? -1 : 1;
	return (a->order > b->order) - (a->order < b->order);
}

/* The layers plan_rebalance chose (in an arena about to go) kept in `a`
 * as c's: the configuration the search ranks is the one it estimated,
 * and plan_search_plan plans it again with them. */
static bool keep_layers(struct arena *a, const int64_t *list, struct search_config *c,
                        struct diag_list *d)
{
	if (list == c->stage_layers)
		return true;
	if (memcmp(list, c->stage_layers, (size_t)c->pp * sizeof *list) == 0)
		return true;
	int64_t *copy = arena_alloc(a, (size_t)c->pp * sizeof *copy);
	if (!copy) {
		d->oom = true;
		return false;
	}
	memcpy(copy, list, (size_t)c->pp * sizeof *copy);
	c->stage_layers = copy;
	return true;
}

/* Plans one group and estimates its variants into out[*n ..]; false when
 * out of memory. */
static bool run_group(struct arena *a, const struct scenario *s, const struct plan_options *o,
                      const struct search_group *gr, struct search_result *r, int64_t *done,
                      int64_t total)
{
	struct arena *ga = arena_new();
	if (!ga)
		return false;
	struct diag_list d;
	diag_list_init(&d);
	int n = gr->n_configs;
	const struct search_config *cfg = gr->configs;
	struct plan *p = plan_search_plan(ga, s, &cfg[0], o, &d);
	/* The variants keep the plan: it is priced once. */
	struct estimator *x = p ? plan_estimator_new(p, &d) : NULL;
	struct scenario *sc = x ? (struct scenario *)p->scenario : NULL;
	for (int i = 0; i < n; i++) {
		struct arena *ea = sc ? arena_new() : NULL;
		struct estimate e;
		bool ok = false;
		/* rebalancing: the rule's layers capped where a stage is over
		 * its memory, as a study's rebalance case does */
		bool rebalance = s->training.rebalance && cfg[i].pp > 1 && cfg[i].stage_layers;
		if (ea) {
			set_training(&sc->training, &s->training, &cfg[i]);
			ok = rebalance ? plan_rebalance(x, ea, sc, &e, &d)
			               : plan_estimator_run(x, ea, &e, &d);
		}
		struct search_config chosen = cfg[i];
		if (ok && rebalance)
			ok = keep_layers(a, sc->training.stage_layers, &chosen, &d);
		if (ok) {
			struct search_candidate *c = &r->cands[r->n++];
			*c = (struct search_candidate){
				.config = chosen, .iteration_s = e.iteration_s,
				.memory_bytes = e.memory_bytes_per_device,
				.oom_overflow_bytes = e.oom_overflow_bytes,
				.host_bytes = e.host_bytes_per_server,
				.host_overflow_bytes = e.host_overflow_bytes, .bubble_s = e.bubble_s,
				.order = *done};
			r->n_oom_hbm += c->oom_overflow_bytes > 0;
			r->n_oom_host += c->host_overflow_bytes > 0;
			if (cand_over(c) > 0)
				r->n_oom++;
			else
				r->n_fit++;
		} else {
			r->n_failed++;
			if (!r->failure)
				r->failure = diag_first_error(a, &d);
		}
		if (sc)  /* nothing left pointing into ea */
			sc->training.stage_layers = cfg[i].stage_layers;
		arena_free(ea);
		++*done;
		if (o->progress)
			o->progress(o->progress_ctx, (double)*done / (double)total);
	}
	bool oom = d.oom;
	plan_estimator_free(x);
	diag_list_free(&d);
	arena_free(ga);
	return !oom;
}

/* What the search does with the scenario's stages' layers, as a note. */
static void split_note(const struct scenario *s, struct diag_list *diags)
{
	const struct training *t = &s->training;
	long long P = t->pipeline_stages;
	if (t->rebalance) {
		diag_add(diags, DIAG_NOTE, s->file, 0, "training.rebalance",
		         "megatron-search rebalances the layers of every pipelined configuration over "
		         "its own stages by their speed under the faults (and their memory), not "
		         "only over the scenario's %lld", P);
	} else if (t->stage_layers || t->first_stage_layers > 0 || t->last_stage_layers > 0) {
		char list[256] = "";
		size_t used = 0;
		for (int64_t k = 0; t->stage_layers && k < P && used < sizeof list; k++)
			used += (size_t)snprintf(list + used, sizeof list - used, "%s%lld", k ? "/" : "",
			                         (long long)t->stage_layers[k]);
		if (!t->stage_layers)
			snprintf(list, sizeof list, "%lld on the first, %lld on the last, 0: even",
			         (long long)t->first_stage_layers, (long long)t->last_stage_layers);
		diag_add(diags, DIAG_NOTE, s->file, 0,
		         t->stage_layers ? "training.stage_layers"
		         : t->first_stage_layers > 0 ? "training.first_stage_layers"
		                                     : "training.last_stage_layers",
		         "the stages' layers (%s) are for %lld pipeline stages: megatron-search keeps "
		         "them for its configurations of PP %lld and splits the layers evenly at the "
		         "other depths", list, P, P);
	}
}

bool plan_search(struct arena *a, const struct scenario *s, const struct plan_options *o,
                 struct search_result *out, struct diag_list *diags)
{
	*out = (struct search_result){0};
	int n_groups;
	const struct training *t = &s->training;
	bool fixed = !t->rebalance && (t->stage_layers || t->first_stage_layers > 0 ||
	                               t->last_stage_layers > 0);
	struct search_split sp = {.a = a, .user = t, .fixed = fixed ? t : NULL,
	                          .topo = t->rebalance ? s->topo : NULL, .devices = s->devices};
	struct search_group *gs = groups(a, s->graph, s->devices, s->topo->devices_per_server,
	                                 t->global_batch, true, t->context_parallel, &sp, &n_groups,
	                                 out->refused);
	for (int i = 0; gs && i < n_groups; i++)
		out->n_configs += gs[i].n_configs;
	out->cands = gs ? arena_calloc(a, (size_t)out->n_configs + 1, sizeof *out->cands) : NULL;
	if (!gs || !out->cands) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "out of memory in the plan search");
		return false;
	}
	if (n_groups == 0) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
		         "megatron-search: no TP x PP x DP of %lld devices (TP dividing a server of "
		         "%lld) has a micro-batch that divides the global batch of %lld%s",
		         (long long)s->devices, (long long)s->topo->devices_per_server,
		         (long long)s->training.global_batch,
		         s->graph->gen ? "" : " and a data-parallel degree that divides the model's batch");
		return false;
	}
	if (s->n_shards)
		diag_add(diags, DIAG_NOTE, s->file, 0, NULL,
		         "the megatron-search planner ignores the scenario's %d shard() entr%s",
		         s->n_shards, s->n_shards == 1 ? "y" : "ies");
	split_note(s, diags);
	int64_t done = 0;
	for (int i = 0; i < n_groups; i++)
		if (!run_group(a, s, o, &gs[i], out, &done, out->n_configs)) {
			diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "out of memory in the plan search");
			return false;
		}
	qsort(out->cands, (size_t)out->n, sizeof *out->cands, cand_cmp);
	if (out->n == 0) {
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
		         "megatron-search: none of the %lld configurations could be planned; the "
		         "first reason: %s", (long long)out->n_configs,
		         out->failure ? out->failure : "unknown");
		return false;
	}
	return true;
}

/* The fastest configuration that fits, planned. */
struct plan *plan_megatron_search(struct arena *a, const struct scenario *s,
                                  const struct plan_options *o, struct diag_list *diags)
{
	struct search_result r;
	if (!plan_search(a, s, o, &r, diags))
		return NULL;
	char text[128], over[32];
	const struct search_candidate *best = &r.cands[0];
	if (r.n_fit == 0 && !(best->oom_overflow_bytes > 0)) {
		diag_add(diags, DIAG_ERROR, s->file, 0, "training.optimizer_offload",
		         "megatron-search: none of the %lld configurations fits: the closest, %s, fits "
		         "the device but its offloaded optimizer state is %.3g GB over the %.3g GB of "
		         "a server's host memory (server.host.memory_GB)", (long long)r.n_configs,
		         plan_search_config_text(text, sizeof text, &best->config),
		         best->host_overflow_bytes / 1e9, s->topo->host.capacity_bytes / 1e9);
		return NULL;
	}
	if (r.n_fit == 0) {
		snprintf(over, sizeof over, "%.3g GB", best->oom_overflow_bytes / 1e9);
		diag_add(diags, DIAG_ERROR, s->file, 0, NULL,
		         "megatron-search: none of the %lld configurations fits the %.3g GB of a "
		         "device; the closest, %s, is %s over", (long long)r.n_configs,
		         s->topo->device.hbm_bytes / 1e9,
		         plan_search_config_text(text, sizeof text, &best->config), over);
		return NULL;
	}
	struct search_result *kept = arena_alloc(a, sizeof *kept);
	struct plan *p = kept ? plan_search_plan(a, s, &best->config, o, diags) : NULL;
	if (p) {
		*kept = r;
		p->search = kept;
	}
	return p;
}

/* ---------------------------------------------------------- rebalancing */

bool plan_rebalance(struct estimator *x, struct arena *a, struct scenario *s, struct estimate *e,
                    struct diag_list *diags)
{
	struct training *tr = &s->training;
	const int64_t *before = tr->stage_layers;
	int64_t P = tr->pipeline_stages, L = s->graph->gen ? s->graph->gen->layers : 0;
	int64_t unit = tr->schedule == SCHED_INTERLEAVED_1F1B && tr->virtual_stages > 1
	                       ? tr->virtual_stages : 1;
	double *slow = arena_calloc(a, (size_t)P, sizeof(double));
	int64_t *cap = arena_calloc(a, (size_t)P, sizeof(int64_t));
	if (!slow || !cap) {
		diags->oom = true;
		return false;
	}
	scenario_stage_slowdowns(s->topo, s->devices, P, slow);
	int64_t even = (L + P * unit - 1) / (P * unit) * unit;
	for (int64_t k = 0; k < P; k++)
		cap[k] = L;
	/* each round lowers one cap by a unit: at most L rounds */
	for (int64_t round = 0; round <= L; round++) {
		int64_t *list = arena_calloc(a, (size_t)P, sizeof(int64_t));
		if (!list) {
			diags->oom = true;
			break;
		}
		if (L < 1 || !scenario_rebalance_layers(L, (int)P, unit, slow, cap, list)) {
			diag_add(diags, DIAG_ERROR, s->file, 0, "training.rebalance",
			         "the model's %lld layers do not split over %lld pipeline stages of "
			         "at least %lld layers each within the devices' memory",
			         (long long)L, (long long)P, (long long)unit);
			break;
		}
		tr->stage_layers = list;
		if (!plan_estimator_run(x, a, e, diags))
			break;
		int over = -1;
		for (int k = 0; k < e->n_stages && over < 0; k++)
			if (e->stages[k].mem.total > e->hbm_bytes && list[k] > even)
				over = k;
		if (over < 0)
			return true;
		cap[over] = list[over] - unit;
	}
	tr->stage_layers = before;
	return false;
}
