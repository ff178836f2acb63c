/* planner.h — the strategies: which sharding each op of a scenario gets.
 *
 * - The scenario's shard() configurations completed by sharding
 *   propagation (MindSpore semantics, seed 000);
 * - MindSpore's double-recursive search (seed 002), faithful or with the
 *   topology's costs;
 * - baselines: data parallel, Megatron-style tensor parallelism, and the
 *   Megatron-style plan search over (TP, PP, DP, micro-batch, schedule,
 *   recompute, ZeRO), ranked by the estimate.
 *
 * The strategies build plans of layouts (layout.h) and consult the cost
 * model (cost.h); both headers come with this one.
 *
 * Data flow: layout -> cost -> planner -> sim. The planner never prints
 * and never calls the simulator.
 */
#ifndef SHARDLAB_PLANNER_H
#define SHARDLAB_PLANNER_H

#include "cost.h"

/* --------------------------------------------------------- enumeration */

/* A strategy in the tuple form: slices per dimension of each input. */
struct strategy {
	int64_t cuts[SIG_MAX_TENSORS][GRAPH_MAX_RANK];
};

/* Every valid strategy of an unconfigured op, as cuts per input dimension:
 * each label's cut divides the label's size and the device count; the cuts
 * use all n_devices (their product equals it) unless `all_devices` is
 * false, when any product dividing n_devices is allowed; plus full
 * replication. Order: descending lexicographic in the signature's label
 * order (the first label cut most first), replication last. Returns the
 * count (0 when none), cuts in *out (arena). */
int plan_enumerate(struct arena *a, const struct graph *g, int op, int64_t n_devices,
                   bool all_devices, struct strategy **out);

/* Redistribution bytes per device between two layouts, remembered per
 * layout pair so that repeated layers cost one derivation. */
struct redist_cache;
struct redist_cache *redist_cache_new(void);
void redist_cache_free(struct redist_cache *c);
/* -1 when no redistribution exists (different rank sets). */
double redist_cache_bytes(struct redist_cache *c, const struct layout *src,
                          const struct layout *dst);
/* Lookups answered from the cache / derived, for benchmarks. */
void redist_cache_stats(const struct redist_cache *c, int64_t *hits, int64_t *misses);

/* Sharding propagation (MindSpore semantics, seed 000; docs/planner.md):
 * from every configured op, breadth-first over both directions, each
 * unreached unconfigured neighbour takes the strategy with the least edge
 * communication, ties broken by less computation, then less communication
 * of its own (forward and gradient), then enumeration order; an op with
 * several op inputs waits until all are decided; ops never reached are
 * data parallel. The same edges and savings as plan_configured. */
struct plan *plan_propagate(struct arena *a, const struct scenario *s, enum redist_mode mode,
                            struct diag_list *diags);
/* The same with the caller's cost cache (to read its statistics, or to
 * share it between runs). */
struct plan *plan_propagate_cache(struct arena *a, const struct scenario *s,
                                  enum redist_mode mode, struct redist_cache *cache,
                                  struct diag_list *diags);
/* The same deciding every op afresh: plan_propagate takes an op's decision
 * from a decided op alike it (same graph_op_key words) whose neighbours
 * were laid out alike, which must not change the plan; tests compare the
 * two. */
struct plan *plan_propagate_fresh(struct arena *a, const struct scenario *s,
                                  enum redist_mode mode, struct redist_cache *cache,
                                  struct diag_list *diags);

/* ------------------------------------------------------- other planners */

enum rec_cost {
	REC_COST_TOPOLOGY,   /* seconds from bytes, FLOPs and the topology's tiers (default) */
	REC_COST_MINDSPORE,  /* the reference's dimensionless element-count constants */
	REC_COST_COUNT
};
extern const char *const rec_cost_names[REC_COST_COUNT];

/* The order in which the recursive search visits ops within a level. */
enum rec_order {
	REC_ORDER_REVERSE,   /* reverse topological (default) */
	REC_ORDER_WEIGHT,    /* descending cost weight: the least cost of a valid cut at the
	                        level's start, heaviest first; ties reverse topological */
	REC_ORDER_COUNT
};
extern const char *const rec_order_names[REC_ORDER_COUNT];

struct plan_options {
	enum redist_mode mode;
	enum rec_cost rec_cost;            /* the recursive planner */
	enum rec_order rec_order;          /* the recursive planner */
	/* Long work (the plan search) reports how far it is, `fraction` in
	 * [0, 1]; NULL: nothing reported. */
	void (*progress)(void *ctx, double fraction);
	void *progress_ctx;
};

/* Data parallel over all devices: the model replicated, the batch split
 * (the Megatron rule with tensor-parallel degree 1); the scenario's shard()
 * entries are ignored. */
struct plan *plan_data_parallel(struct arena *a, const struct scenario *s,
                                const struct plan_options *o, struct diag_list *diags);
/* Megatron-LM style: tensor parallel inside a server (MatMuls with weights
 * cut by columns then rows, attention by heads, vocabulary-parallel
 * embedding and loss) and data parallel across servers; the ops between
 * follow by propagation. The scenario's shard() entries are ignored. */
struct plan *plan_megatron(struct arena *a, const struct scenario *s,
                           const struct plan_options *o, struct diag_list *diags);
/* MindSpore's double-recursive strategy search (docs/planner.md), faithful with
 * REC_COST_MINDSPORE, topology-aware with REC_COST_TOPOLOGY. */
struct plan *plan_recursive(struct arena *a, const struct scenario *s,
                            const struct plan_options *o, struct diag_list *diags);
/* The reference's dimensionless cost of a complete plan (the sum of its
 * ops' per-op rec costs and neighbour terms, docs/planner.md), for reports. */
double plan_rec_cost(const struct plan *p);

/* Megatron's rule with exactly `tp` as the tensor-parallel degree (a
 * divisor of a server's devices, or a multiple of them whose groups span
 * whole servers); NULL with a diagnostic when the server, the stage or the
 * shapes do not allow it. */
struct plan *plan_megatron_degree(struct arena *a, const struct scenario *s,
                                  const struct plan_options *o, int64_t tp,
                                  struct diag_list *diags);

/* Megatron-style plan search (docs/planner.md, "Plan search"): every
 * (TP, PP, DP, micro-batch, sequence parallelism, schedule, recompute,
 * ZeRO) the devices and the global batch allow, each planned by Megatron's
 * rule and estimated, ranked by the estimate among those that fit the
 * device memory. TP divides a server, PP x TP x DP = devices; the
 * micro-batch (samples per replica) is 1, 2, 4 or 8 when the model comes
 * from a generator (the graph is generated again at micro-batch x DP
 * samples), else the graph's batch / DP; sequence parallelism off and,
 * with TP > 1, on; schedules GPipe, 1F1B and interleaved 1F1B with 2
 * virtual stages when PP > 1; recompute none, selective and full; ZeRO 0
 * to 3. The scenario's global batch, dtype and bucket size stay. */
struct search_config {
	int64_t tp, pp, dp;
	int64_t micro_batch;               /* samples per replica per micro-batch */
	int64_t micro_batches;             /* per iteration */
	bool sequence_parallel;            /* Megatron's, with TP > 1 */
	int64_t ep;                        /* expert parallel, dividing DP, or above it a multiple
	                                      of TP dividing DP x TP with SP (folded); 0 or 1: none */
	int64_t cp;                        /* context parallel (0 or 1: none); TP x CP x DP x PP
	                                      are the devices */
	enum pipeline_schedule schedule;
	int64_t virtual_stages;
	enum recompute_mode recompute;
	int zero_stage;
	int64_t first_stage_layers;        /* Megatron-LM's uneven pipeline (0: even). The search
	                                      sets these three from the scenario's
	                                      training.first_stage_layers / last_stage_layers /
	                                      stage_layers at its own PP only, and stage_layers
	                                      from the rebalancing rule at every PP under
	                                      training.rebalance (docs/planner.md, "Plan search") */
	int64_t last_stage_layers;
	const int64_t *stage_layers;       /* [pp]: each stage's layers, or NULL */
	/* The scenario's settings that every configuration keeps and the
	 * rules read (plan_search_rule): */
	int64_t activation_offload_layers; /* training.activation_offload_layers (0: none) */
	bool embedding_in_split;           /* training.account_for_embedding_in_pipeline_split */
	bool loss_in_split;                /* training.account_for_loss_in_pipeline_split */
};

struct search_candidate {
	struct search_config config;
	double iteration_s;                /* the estimate */
	double memory_bytes;               /* the largest device */
	double oom_overflow_bytes;         /* 0: fits */
	double host_bytes;                 /* training.optimizer_offload: the state on a server's
	                                      host (0 without the offload) */
	double host_overflow_bytes;        /* training.optimizer_offload: how far the state
	                                      is over a server's host memory; 0: fits or not
	                                      checked. Over it is out of memory as the device */
	double bubble_s;
	int64_t order;                     /* its place in the enumeration (ties keep it) */
};

/* The rules of the framework the search plans for, Megatron-LM
 * (docs/studies.md, "Runnable configurations", cites each check's source
 * file): a configuration that breaks one cannot be launched, so the search
 * and the study sweep leave it out and count it by the first rule it
 * breaks, in this order. */
enum search_rule {
	/* (the layer rules count the embedding and the loss as layers where
	 * the configuration accounts for them, scenario_accounted_layers; the
	 * offload rules are scenario_offload_refusal's) */
	SEARCH_RULE_NONE,
	SEARCH_RULE_HEADS_TP,                     /* attention heads divided by TP */
	SEARCH_RULE_KV_HEADS_TP,                  /* query groups a multiple or divisor of TP */
	SEARCH_RULE_FFN_TP,                       /* the MLP's hidden size divided by TP */
	SEARCH_RULE_LAYERS_PP,                    /* layers divided by PP (the even split) */
	SEARCH_RULE_SEQ_SP,                       /* the sequence divided by TP under SP */
	SEARCH_RULE_SEQ_CP,                       /* the sequence a multiple of 2 x CP */
	SEARCH_RULE_EXPERTS_EP,                   /* experts divided by EP */
	SEARCH_RULE_BATCH_DP,                     /* the global batch divided by DP x micro-batch */
	SEARCH_RULE_SCHEDULE,                     /* GPipe: no Megatron-LM schedule */
	SEARCH_RULE_LAYERS_VPP,                   /* interleaved: a stage's layers by virtual stages */
	SEARCH_RULE_MICRO_BATCHES_PP,             /* interleaved: micro-batches divided by PP */
	SEARCH_RULE_OFFLOAD_PP,                   /* activation offload with PP > 1 */
	SEARCH_RULE_OFFLOAD_RECOMPUTE,            /* activation offload with recomputation */
	SEARCH_RULE_RECOMPUTE_OP,                 /* recompute "op": not a Megatron-LM granularity */
	SEARCH_RULE_COUNT
};
/* Short names ("heads-tp") for JSON and the store. */
extern const char *const search_rule_names[SEARCH_RULE_COUNT];
/* The first rule c breaks for graph g (its generator's shape; a graph
 * without one is held to the batch and schedule rules only) at a global
 * batch; SEARCH_RULE_NONE when Megatron-LM runs it. */
enum search_rule plan_search_rule(const struct graph *g, int64_t global_batch,
                                  const struct search_config *c);
/* The rule in words with the numbers that break it ("tensor parallel 8
 * does not divide the 28 attention heads"). */
const char *plan_search_rule_text(char *buf, size_t size, enum search_rule r,
                                  const struct graph *g, int64_t global_batch,
                                  const struct search_config *c);

struct search_result {
	int64_t n_configs;                 /* enumerated */
	int64_t refused[SEARCH_RULE_COUNT];       /* left out by rule (not in n_configs) */
	int64_t n_fit, n_oom;              /* estimated: fit the memory (the device's and, with
	                                      the optimizer offload, the host's), or not */
	int64_t n_oom_hbm, n_oom_host;     /* of n_oom: over the device's HBM; over a server's
	                                      host memory (the offload); one over both is in both */
	int64_t n_failed;                  /* Megatron's rule could not plan them */
	const char *failure;               /* the first reason, NULL when none failed */
	int n;                             /* candidates estimated */
	struct search_candidate *cands;    /* those that fit first, fastest first (ties: less
	                                      memory, then enumeration order), then the OOM ones
	                                      by overflow */
};

/* The configurations that share a plan: one (TP, PP, micro-batch,
 * sequence parallelism), its configurations in enumeration order. */
struct search_group {
	int64_t tp, pp, dp, micro_batch, micro_batches;
	bool sp;
	int64_t ep, cp;
	int n_configs;
	struct search_config *configs;
};
/* Whether tensor parallelism `tp` keeps each of its groups (consecutive
 * ranks tp at a time, over `devices`) inside one server of `dps`: the
 * server is the fast tier (an NVLink domain, a UB supernode), however many
 * devices it has (docs/planner.md, "The fast tier"). True when tp divides
 * the server, or when all the devices are one server's. */
bool plan_tp_in_server(int64_t dps, int64_t devices, int64_t tp);

/* The search's groups, in enumeration order, for `devices` devices in
 * servers of `devices_per_server`, a global batch and graph g (its
 * generator, or its fixed batch), expert parallelism tried when `with_ep`
 * and g has experts, context parallelism up to `max_cp` (1: none); the
 * count into *n (arena). Every configuration keeps t's activation offload
 * and embedding and loss accounting (t NULL: none). The layers are split
 * evenly, or, with `rebalance` (a topology under faults, `devices` of it),
 * by the rebalancing rule at every pipeline depth, as megatron-search does
 * under training.rebalance. The configurations a rule refuses are left
 * out and added to refused[rule] (when refused is not NULL). NULL when out
 * of memory. The study sweep enumerates the same space with it. */
struct search_group *plan_search_groups(struct arena *a, const struct graph *g,
                                        int64_t devices, int64_t devices_per_server,
                                        int64_t global_batch, bool with_ep, int64_t max_cp,
                                        const struct training *t,
                                        const struct topology *rebalance, int *n,
                                        int64_t refused[SEARCH_RULE_COUNT]);

/* The rebalancing rule's layers (scenario_rebalance_layers, no memory
 * cap) of a generated model g over pp stages of at least `unit` layers
 * each (the virtual stages), the stages' paces those of the first
 * `devices` of topology t under its faults (scenario_stage_slowdowns), in
 * a; NULL when they cannot be placed, with one stage, or out of memory.
 * megatron-search under training.rebalance and a study's "rebalance" fault
 * case split each configuration's layers so before the rules check it. */
const int64_t *plan_rebalanced_layers(struct arena *a, const struct graph *g,
                                      const struct topology *t, int64_t devices, int64_t pp,
                                      int64_t unit);

/* Runs the search; false after diagnostics (no configuration could be
 * planned, or out of memory). Progress through o->progress. */
bool plan_search(struct arena *a, const struct scenario *s, const struct plan_options *o,
                 struct search_result *out, struct diag_list *diags);
/* The scenario as one configuration sets it (the graph generated again at
 * its micro-batch, its pipeline and training settings), and its plan.
 * NULL after diagnostics. */
struct scenario *plan_search_scenario(struct arena *a, const struct scenario *s,
                                      const struct search_config *c, struct diag_list *diags);
struct plan *plan_search_plan(struct arena *a, const struct scenario *s,
                              const struct search_config *c, const struct plan_options *o,
                              struct diag_list *diags);
/* "TP 8 PP 8 DP 16 mb 1 1f1b full ZeRO 1" (interleaved: "interleaved-1f1b/2";
 * " EP 4" after DP with expert parallelism, " CP 2" after TP with context
 * parallelism). */
const char *plan_search_config_text(char *buf, size_t size, const struct search_config *c);

/* Rebalancing with memory (docs/formats.md, "rebalance"): the generated
 * model's layers over the pipeline stages of s (the scenario of x's plan)
 * in proportion to each stage's speed under its topology's faults
 * (scenario_stage_slowdowns, scenario_rebalance_layers), set as
 * s->training.stage_layers (in a) and estimated with x into *e. While a
 * stage is over its device's memory and holds more than an even share
 * (ceil(L / P), in whole virtual stages), it is capped a unit lower and
 * the rule runs again. False (a diagnostic) when the layers cannot be
 * placed or the estimate fails; s's training is then as it was. */
bool plan_rebalance(struct estimator *x, struct arena *a, struct scenario *s, struct estimate *e,
                    struct diag_list *diags);

/* Any planner by kind. PLANNER_MEGATRON_SEARCH: the search's fastest plan
 * that fits (planned on plan_search_scenario, its p->scenario). NULL with
 * a diagnostic for a planner this version does not have. */
struct plan *plan_make(struct arena *a, const struct scenario *s, enum planner_kind kind,
                       const struct plan_options *o, struct diag_list *diags);

#endif
