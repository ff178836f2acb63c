/* scenarios.h — a study to run: a model on a topology with some devices,
 * the shard() configurations the user wrote, the planners to compare, the
 * training settings and the simulation options.
 *
 * The loader validates everything it can without planning: op names
 * exist, each strategy has one entry per op input and one cut per tensor
 * dimension, cuts divide the dimensions, strategies fit the device count,
 * the topology has the devices. Planning itself is planner/'s job.
 *
 * Data flow: util, topologies, models -> scenarios -> planner.
 */
#ifndef SHARDLAB_SCENARIOS_H
#define SHARDLAB_SCENARIOS_H

#include <stdbool.h>
#include <stdint.h>

#include "models.h"
#include "topologies.h"
#include "util.h"

#define SCENARIO_FORMAT "shardlab-scenario"
#define SCENARIO_VERSION 1
#define SHARD_MAX_AXES 8
/* Bounds of a training iteration, far beyond published runs: the largest
 * global batches are tens of thousands of samples (LAMB trains BERT with
 * 65,536), and Megatron-LM's 1T-parameter run has 512 micro-batches per
 * pipeline per iteration (global batch 3072, data parallel 6). The
 * planners and the simulator do work in proportion to the micro-batches. */
#define SCENARIO_MAX_GLOBAL_BATCH (1 << 24)
#define SCENARIO_MAX_DEVICES (1 << 30)      /* "devices" and --devices */
#define SCENARIO_MAX_MICRO_BATCHES (1 << 14)

enum shard_form {
	SHARD_TUPLE,   /* [[2,1],[1,4]]: slices per dimension of each input */
	SHARD_LAYOUT,  /* seed 004's Layout: named device axes mapped to tensor dimensions */
};

/* One tensor's placement in the Layout form: for each dimension, the
 * device-matrix axes it is split over, major first (none = not split). */
struct shard_tensor_map {
	int rank;
	int n_axes[GRAPH_MAX_RANK];
	int axes[GRAPH_MAX_RANK][SHARD_MAX_AXES]; /* indices into device_matrix */
};

struct shard_config {
	const char *op_name;
	int op;                       /* index in the graph's ops */
	const char *file;             /* the scenario file, line and JSON path that state it */
	int line;
	const char *path;
	enum shard_form form;
	int n_in;
	/* SHARD_TUPLE: cuts[i][d] slices of dimension d of input i. */
	int64_t (*cuts)[GRAPH_MAX_RANK];
	/* SHARD_LAYOUT: device matrix with axis names, and a map per input and
	 * (optionally, n_out > 0) per output. */
	int n_dev_axes;
	int64_t device_matrix[SHARD_MAX_AXES];
	const char *axis_names[SHARD_MAX_AXES];
	struct shard_tensor_map *in_maps;
	int n_out;
	struct shard_tensor_map *out_maps;
};

enum planner_kind {
	PLANNER_PROPAGATE,
	PLANNER_RECURSIVE,
	PLANNER_DATA_PARALLEL,
	PLANNER_MEGATRON,
	PLANNER_MEGATRON_SEARCH,
	PLANNER_COUNT
};
extern const char *const planner_names[PLANNER_COUNT];

/* ZB-H1, ZB-H2 and ZB-V: Qi et al., "Zero Bubble Pipeline Parallelism",
 * ICLR 2024, and "Pipeline Parallelism with Controllable Memory", 2024;
 * DualPipe: DeepSeek-V3 technical report (arXiv 2412.19437), section
 * 3.2.1 (docs/cost-models.md, "Pipeline schedules"). */
enum pipeline_schedule {
	SCHED_GPIPE, SCHED_1F1B, SCHED_INTERLEAVED_1F1B, SCHED_ZB_H1, SCHED_ZB_V, SCHED_ZB_H2,
	SCHED_DUALPIPE, SCHED_COUNT
};
extern const char *const schedule_names[SCHED_COUNT];

/* The schedules that split each backward into an input-gradient pass B
 * and a weight-gradient pass W run later. */
static inline bool schedule_splits_backward(enum pipeline_schedule s)
{
	return s == SCHED_ZB_H1 || s == SCHED_ZB_V || s == SCHED_ZB_H2 || s == SCHED_DUALPIPE;
}

/* What a backward recomputes (docs/cost-models.md, "Recomputation"): nothing;
 * Megatron-LM's attention core (selective); every op of each layer (full);
 * torchtitan's per-op policy (op): inside each transformer layer every
 * second matrix multiply, the fused attention and the expert dispatch are
 * kept, the rest redone. */
enum recompute_mode {
	RECOMPUTE_NONE,
	RECOMPUTE_SELECTIVE,
	RECOMPUTE_FULL,
	RECOMPUTE_OP,
	RECOMPUTE_COUNT
};
extern const char *const recompute_names[RECOMPUTE_COUNT];

/* Which implementation runs ZeRO-3 (docs/cost-models.md, "A ZeRO-3
 * framework's own costs"): its collectives alone, each op's parameters
 * gathered on their own and prefetched one op ahead (the default); PyTorch
 * FSDP and Megatron-FSDP, which gather each transformer layer's
 * parameters as one unit and prefetch the next layer's; or DeepSpeed's
 * stage 3 as released in 2021 (v0.3.13-v0.5.x), with its per-parameter
 * gathers and reduce-scatters through list collectives, the copies they
 * make, and its release of parameters by reuse distance. */
enum zero3_impl { ZERO3_COLLECTIVES, ZERO3_DEEPSPEED_2021, ZERO3_FSDP, ZERO3_IMPL_COUNT };
extern const char *const zero3_impl_names[ZERO3_IMPL_COUNT];

/* The family of software stacks the run uses, which picks the shipped
 * calibration a command applies by default (docs/validation.md, "Shipped
 * calibrations"): Megatron-LM and the stacks built on its kernels
 * (Megatron-Core, NeMo, Megatron-Bridge, MindSpeed, MindFormers,
 * Megatron-DeepSpeed; the default), or PyTorch-native eager stacks (FSDP
 * and FSDP2 without Transformer Engine: torchtitan, llm-foundry/Composer,
 * NeMo AutoModel, Hugging Face Accelerate). Nothing else reads it. */
enum framework { FRAMEWORK_MEGATRON, FRAMEWORK_PYTORCH, FRAMEWORK_COUNT };
extern const char *const framework_names[FRAMEWORK_COUNT];

/* How the language model's softmax cross-entropy runs (docs/cost-models.md,
 * "The loss"): Megatron-LM's vocabulary-parallel cross-entropy, its passes
 * over fp32 logits one kernel each (the default: Megatron-LM, Megatron-Core
 * without --cross-entropy-loss-fusion, and the frameworks built on them);
 * the same passes fused by Megatron-Core's --cross-entropy-loss-fusion
 * (its "native" implementation, three kernels); MindFormers' CrossEntropyLoss
 * (a log-softmax and a one-hot NLL, one operator a kernel); one fused kernel
 * (Transformer Engine's), priced by the device's `loss` kernel class; or
 * PyTorch's eager F.cross_entropy over logits upcast to fp32 (torchtitan's
 * loss: a log-softmax and an NLL, whose backward holds two more fp32 copies
 * of the logits). */
enum cross_entropy {
	XENT_VOCAB_PARALLEL,
	XENT_VOCAB_PARALLEL_JIT,
	XENT_MINDFORMERS,
	XENT_FUSED,
	XENT_PYTORCH,
	XENT_COUNT
};
extern const char *const cross_entropy_names[XENT_COUNT];

/* How a mixture-of-experts layer's tokens reach the ranks of their experts
 * (docs/moe-cp.md, "Dispatchers"): Megatron-Core's all-to-all token
 * dispatcher, every copy of a token to its expert's rank in one AllToAll
 * over the expert-parallel group; or its flex dispatcher with the HybridEP
 * or the DeepEP backend (the scheme of DeepSeek-V3's report, section
 * 3.2.2), which send a token once to each other server holding one of its
 * experts, to the rank of the same local index there, and forward it over
 * that server's own links to the experts' ranks, the two legs pipelined:
 * the same bytes, priced alike. */
enum moe_dispatcher {
	MOE_DISPATCH_ALLTOALL, MOE_DISPATCH_HYBRIDEP, MOE_DISPATCH_DEEPEP, MOE_DISPATCH_COUNT
};
extern const char *const moe_dispatcher_names[MOE_DISPATCH_COUNT];
/* Whether a token crosses to each server once (HybridEP, DeepEP). */
static inline bool moe_dispatch_per_server(enum moe_dispatcher d)
{
	return d == MOE_DISPATCH_HYBRIDEP || d == MOE_DISPATCH_DEEPEP;
}

/* How the model state is held (docs/cost-models.md, "Precision recipes"):
 * auto by the parameters' dtype (Megatron-LM's recipe for bf16 and fp16,
 * plain fp32 Adam); Megatron-LM's bf16 with fp32 gradient accumulation
 * (main_grad) and its fp16 with loss scaling; MindFormers on Ascend (fp16
 * with loss scaling, or bf16), its weights and its accumulated gradients
 * (cloned from them) in the compute dtype or in fp32 (param_init_type). */
enum precision_recipe {
	PRECISION_AUTO,
	PRECISION_MEGATRON_BF16,
	PRECISION_MEGATRON_FP16,
	PRECISION_FP32,
	PRECISION_MINDFORMERS,
	PRECISION_MINDFORMERS_FP32_WEIGHTS,
	PRECISION_FP8_HYBRID,  /* Transformer Engine FP8 over Megatron-LM's bf16 recipe: E4M3
	                          forward, E5M2 gradients (--fp8-format hybrid) */
	PRECISION_FP8_E4M3,    /* the same with E4M3 everywhere (--fp8-format e4m3) */
	PRECISION_COUNT
};
extern const char *const precision_names[PRECISION_COUNT];

/* The optimizer's own state in a precision other than fp32: Megatron-Core's
 * precision-aware optimizer (--main-params-dtype, --exp-avg-dtype,
 * --exp-avg-sq-dtype; Transformer Engine's FusedAdam, whose FP8 state is
 * one byte an element with a scale per tensor) and apex's
 * DistributedFusedAdam (its dtype: every state tensor; no copy of the
 * parameters when that is the model's own dtype: STATE_NONE, a master
 * copy's only). */
enum state_dtype { STATE_FP32, STATE_FP16, STATE_BF16, STATE_FP8, STATE_NONE, STATE_DTYPE_COUNT };
extern const char *const state_dtype_names[STATE_DTYPE_COUNT];
int state_dtype_bytes(enum state_dtype d);

/* coarse: one transfer per rank per collective phase, and a collective no
 * other traffic can touch by its formula (sim/run.c); phase: the transfers
 * for every collective; step: every algorithm step a message. */
enum sim_fidelity {
	FIDELITY_COARSE, FIDELITY_STEP, FIDELITY_PHASE,
	FIDELITY_REPRESENTATIVE, /* coarse, one rank per data-parallel group (docs/simulation.md) */
	FIDELITY_COUNT
};
extern const char *const fidelity_names[FIDELITY_COUNT];

enum collective_algo {
	COLL_AUTO, COLL_RING, COLL_TREE, COLL_HALVING_DOUBLING, COLL_HIERARCHICAL, COLL_DIRECT,
	COLL_NVLS, /* NCCL's NVLink SHARP: the switch reduces (topologies.h, topo_collectives.nvls) */
	COLL_PIPELINE, /* HCCL's pipelined hierarchical form (topo_collectives.pipeline) */
	COLL_COUNT
};
extern const char *const collective_algo_names[COLL_COUNT];

struct training {
	int64_t global_batch;         /* samples per iteration */
	int64_t micro_batches;        /* per iteration per pipeline: global_batch / the graph's
	                                 batch (the graph is one micro-batch of all replicas) */
	int64_t pipeline_stages;
	int64_t virtual_stages;       /* per device: interleaved schedule; ZB-V's 2 */
	enum pipeline_schedule schedule;
	enum recompute_mode recompute;
	int64_t recompute_layers;     /* with recompute full: the first N transformer layers of
	                                 each pipeline chunk recomputed, the others keeping
	                                 their activations (Megatron-LM's --recompute-method
	                                 block --recompute-num-layers N); 0: every layer */
	int zero_stage;               /* 0..3 */
	enum zero3_impl zero3_impl;   /* with zero_stage 3: the framework that runs it */
	enum framework framework;     /* the stack's family: the default calibration */
	enum cross_entropy cross_entropy; /* how the loss runs */
	enum moe_dispatcher moe_dispatcher; /* how MoE tokens reach their experts */
	bool moe_a2a_overlap;         /* Megatron-Core's --overlap-moe-expert-parallel-comm:
	                                 1F1B's steady state runs one micro-batch's forward
	                                 and another's backward together, each one's expert
	                                 dispatches and combines under the other's compute */
	enum precision_recipe precision; /* the model state's bytes per parameter */
	bool grad_reduce_in_bf16;     /* Megatron-LM's --grad-reduce-in-bf16: bf16 weights'
	                                 gradients kept and reduced in bf16, not fp32 */
	enum state_dtype main_params_dtype; /* the optimizer's master copy of the weights
	                                       (recipes that keep one; fp32 by default) */
	enum state_dtype exp_avg_dtype;     /* Adam's first moment (fp32 by default) */
	enum state_dtype exp_avg_sq_dtype;  /* and its second */
	bool fp8_param_gather;        /* Megatron-Core's --fp8-param-gather: the FP8 recipes'
	                                 Linear weights held in FP8 alone (no bf16 copy) and
	                                 all-gathered in FP8 */
	enum dtype dtype;             /* compute dtype */
	double gradient_bucket_bytes; /* gradient all-reduces fused up to this size (0: none) */
	bool sequence_parallel;       /* Megatron's: LayerNorm/Dropout split along the sequence */
	bool flash_attention;         /* causal attention as one fused kernel (FlashAttention) */
	bool separate_grad_accumulation; /* each micro-batch's weight gradients added into the
	                                    gradient buffer by a kernel of their own (the JSON's
	                                    gradient_accumulation_fusion false); else the
	                                    weight-gradient GEMMs add into it */
	bool overlap_grad_reduce;     /* the gradient buckets synchronised under the last
	                                 micro-batch's backward, as it completes each (else
	                                 after the backward, before the optimizer) */
	bool optimizer_offload;       /* ZeRO-Offload / Megatron-LM's --optimizer-cpu-offload: the
	                                 master weights and moments in host memory, the step on
	                                 the CPUs (docs/cost-models.md, "Optimizer offload") */
	int64_t activation_offload_layers; /* Megatron-Core's --cpu-offloading-num-layers: the
	                                 saved activations of the first N transformer layers
	                                 copied to host memory in forward and back in backward
	                                 (Transformer Engine's cpu_offload; docs/cost-models.md,
	                                 "Activation offload"); 0: none */
	bool overlap_param_gather;    /* Megatron-LM's --overlap-param-gather (ZeRO 1, 2): the
	                                 updated parameters all-gathered under the next
	                                 iteration's first forward, not after the optimizer */
	bool tp_comm_overlap;         /* Megatron-LM's --tp-comm-overlap: sequence parallelism's
	                                 tensor-parallel collectives run under the GEMMs next to
	                                 them (Transformer Engine's userbuffers) */
	int64_t tp_comm_overlap_slices; /* with tp_comm_overlap: MindFormers' fine_grain_interleave
	                                 n, each layer's blocks run as n slices of the sequence,
	                                 a slice's collectives under the others' compute (0:
	                                 Transformer Engine's ring over the group) */
	int64_t tensor_parallel;      /* the megatron planner's degree (0: the largest that fits
	                                 a server and the shapes) */
	int64_t context_parallel;     /* CP: ranks that share out each sequence (1: none) */
	int64_t expert_parallel;      /* EP: ranks of a data-parallel group that share out a
	                                 mixture-of-experts layer's experts (1: each holds all) */
	int64_t first_stage_layers;   /* Megatron-LM's --decoder-first-pipeline-num-layers: the
	                                 first stage's transformer layers (0: an even split) */
	int64_t last_stage_layers;    /* --decoder-last-pipeline-num-layers: the last stage's */
	const int64_t *stage_layers;  /* [pipeline_stages]: each stage's transformer layers
	                                 (Megatron-LM's --pipeline-model-parallel-layout), or
	                                 NULL (even, or first/last above) */
	bool embedding_in_split;      /* Megatron-Core's account_for_embedding_in_pipeline_split:
	                                 the embedding counts as a layer when the layers are
	                                 divided among the chunks (scenario_accounted_layers) */
	bool loss_in_split;           /* account_for_loss_in_pipeline_split: the loss (final
	                                 norm, head and loss) counts as one too */
	bool whole_sends;             /* pipeline_scatter_gather false: every tensor-parallel
	                                 rank sends its whole copy of a stage's output (DeepSpeed's
	                                 pipeline engine), not Megatron-LM's scattered parts */
	bool rebalance;               /* the file's "rebalance": stage_layers set by the
	                                 rebalancing rule from the faults */
	bool micro_batches_set;       /* the file states micro_batches */
	int n_cuts;                   /* pipeline_cuts: 0 = balance the chunks by cost */
	int *cuts;                    /* the first op of chunks 1 .. n_cuts, ascending */
};

struct propagation_options {
	bool all_devices;             /* candidate strategies use every device (default true) */
};

struct simulation_options {
	enum sim_fidelity fidelity;
	enum collective_algo collective_algo;
};

struct scenario {
	const char *name;
	const char *description;
	const char *file;
	const char *model_file;       /* NULL when the model is inline */
	const char *topology_file;
	struct graph *graph;
	struct topology *topo;
	int64_t devices;              /* devices the study uses (ranks 0..devices-1) */
	int n_shards;
	struct shard_config *shards;  /* in file order */
	int n_planners;
	enum planner_kind planners[PLANNER_COUNT];
	struct training training;
	struct propagation_options propagation;
	struct simulation_options sim;
};

/* Load and validate a scenario and the model and topology it names (paths
 * relative to the scenario's folder). NULL after diagnostics. */
struct scenario *scenario_load(struct arena *a, const char *path, struct diag_list *diags);
/* The same from a parsed document whose "format" is SCENARIO_FORMAT. */
struct scenario *scenario_load_doc(struct arena *a, struct json_doc *doc);
/* A scenario object embedded in another file (a validation row's
 * "scenario"): the same schema, "format" and "version" optional, and
 * "name" too when default_name is not NULL; paths relative to that file's
 * folder. */
struct scenario *scenario_load_value(struct arena *a, const struct jv *v, const char *default_name);
/* A "faults" array `v` (docs/formats.md, "faults") applied to a copy of
 * t running `devices` ranks, as a scenario's: the copy, or NULL after
 * diagnostics (an element t does not have, a fault that disconnects the
 * ranks). Paths (device_from) relative to `dir`. For a study's fault
 * cases, which apply one list to each cluster size. */
struct topology *scenario_faults_apply(struct arena *a, const struct topology *t, int64_t devices,
                                       const struct jv *v, const char *dir);

/* ------------------------------------------------ jobs on one cluster
 *
 * Several scenarios (jobs) placed on one topology, simulated together
 * (jobs.c; docs/formats.md). */
#define JOBS_FORMAT "shardlab-jobs"
#define JOBS_MAX 64

enum job_placement { JOB_PACKED, JOB_SPREAD, JOB_LISTED, JOB_PLACEMENT_COUNT };
extern const char *const job_placement_names[JOB_PLACEMENT_COUNT];

struct job_spec {
	const char *name;
	struct scenario *scenario;         /* its topology replaced by the jobs file's */
	enum job_placement placement;
	int n_listed;
	int64_t *listed;                   /* JOB_LISTED: the servers the file lists */
	int n_servers;
	int64_t *servers;                  /* the servers it got, in rank order */
	int64_t *devices;                  /* [scenario->devices]: rank r's device */
	int line;
};

struct jobs_file {
	const char *file, *name;
	struct topology *topo;             /* the shared fabric */
	int n_jobs;
	struct job_spec *jobs;
	struct diag_list *diags;
};

/* Loads a jobs file, its topology and every job's scenario, and places
 * the jobs (listed first, then in file order). NULL after diagnostics:
 * FILE:LINE: PATH: message. */
struct jobs_file *jobs_load(struct arena *a, const char *path, struct diag_list *diags);
/* The same from a parsed document whose "format" is JOBS_FORMAT. */
struct jobs_file *jobs_load_doc(struct arena *a, struct json_doc *doc);
/* The leaf switch (rail group) a server's first NIC hangs from. */
int64_t jobs_server_leaf(const struct topology *t, int64_t server);
/* The servers a job of n servers gets on t placed "packed" (the lowest
 * free first) or "spread" (one free server from each leaf in turn),
 * `taken` (may be NULL: none) marking servers already given: into
 * servers[], in rank order. The count found (< n when too few are free),
 * -1 when out of memory. */
int jobs_place_servers(const struct topology *t, enum job_placement how, const uint8_t *taken,
                       int n, int64_t *servers);

/* The shard() configuration of an op, or NULL. */
const struct shard_config *scenario_shard_for(const struct scenario *s, int op);

/* The scenario as a scenario file's JSON (write.c): its model's generator
 * inline (an explicit graph by its file), its topology and model paths
 * relative to `dir` (the folder the file goes in), every training setting;
 * no shard() entries. Loading it gives the scenario back. NULL when out of
 * memory. */
struct cJSON *scenario_json(struct arena *a, const struct scenario *s, const char *dir);

/* Megatron-LM's uneven pipeline: `layers` transformer layers over `stages`
 * stages of `virtual` chunks each. With `list` (training.stage_layers,
 * Megatron-LM's --pipeline-model-parallel-layout, `stages` entries) stage
 * s holds list[s], each at least 1 and a multiple of `virtual` (split
 * evenly over its chunks), the entries summing to `layers`. Without it
 * (--decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-
 * layers; megatron/core/transformer/transformer_config.py and
 * transformer_block.py) the first stage holds `first` layers and the last
 * `last` (0: split evenly with the middle ones), the stages between them
 * an equal share of the rest. The layers of stage `stage`, or -1 when
 * the split is refused; then, with `why`, the reason in words. */
int64_t scenario_stage_layers(int64_t layers, int64_t stages, int64_t virtual, int64_t first,
                              int64_t last, const int64_t *list, int64_t stage, char *why,
                              size_t why_size);

/* Megatron-Core's account_for_embedding_in_pipeline_split and
 * account_for_loss_in_pipeline_split (megatron/core/transformer/
 * transformer_block.py get_num_layers_to_build, transformer_config.py):
 * `layers` transformer layers, plus one for the embedding when `embedding`
 * and one for the loss when `loss`, divided evenly over `stages` stages of
 * `virtual` chunks each; the first chunk in graph order builds one layer
 * fewer for the embedding, the last one fewer for the loss. The layers of
 * chunk `chunk` (graph order, 0 .. stages x virtual - 1), or -1 when
 * Megatron-Core refuses the split (the units do not divide by the stages,
 * or a stage's units by its virtual stages); then, with `why`, the reason
 * in words. */
int64_t scenario_accounted_layers(int64_t layers, int64_t stages, int64_t virtual, bool embedding,
                                  bool loss, int64_t chunk, char *why, size_t why_size);

/* Megatron-Core's refusals of activation offload (--cpu-offloading-num-
 * layers; TransformerConfig.__post_init__ in megatron/core/transformer/
 * transformer_config.py, core_r0.8.0 to core_v0.15.0), in the order they
 * are checked: `offload` layers offloaded (> 0) of a model of `layers`
 * transformer layers (0: it has none), over `stages` pipeline stages, with
 * `recompute`. The loader, `plan --export megatron` and megatron-search
 * (plan_search_rule) all ask it. With `why`, the reason in words. */
/* Why Megatron-Core would not run training.moe_a2a_overlap
 * (--overlap-moe-expert-parallel-comm) with t's parallelism
 * (TransformerConfig.__post_init__, megatron/core/transformer/
 * transformer_config.py): no expert parallelism, a schedule other than
 * 1F1B's, a pipeline without virtual stages, full recomputation; NULL when
 * it would. The loader refuses the field then; megatron-search's
 * configurations run without it (plan_search_scenario). */
const char *scenario_moe_a2a_overlap_refusal(const struct training *t);

enum scenario_offload_refusal {
	SCENARIO_OFFLOAD_OK,
	SCENARIO_OFFLOAD_NO_LAYERS,        /* the model has no transformer layers */
	SCENARIO_OFFLOAD_ALL_LAYERS,       /* not fewer than the model's layers */
	SCENARIO_OFFLOAD_PIPELINE,         /* with pipeline parallelism */
	SCENARIO_OFFLOAD_RECOMPUTE,        /* with activation recomputation */
};
enum scenario_offload_refusal scenario_offload_refusal(int64_t offload, int64_t layers,
                                                       int64_t stages,
                                                       enum recompute_mode recompute,
                                                       char *why, size_t why_size);

/* Why t's embedding and loss accounting cannot go with rebalanced layers
 * (a scenario's training.rebalance, a study's "rebalance" fault case):
 * the rebalanced layers run as Megatron-LM's --pipeline-model-parallel-
 * layout, which Megatron-Core refuses beside account_for_embedding_in_
 * pipeline_split / account_for_loss_in_pipeline_split (transformer_config.
 * py, core_v0.15.0: "pipeline_model_parallel_layout cannot be set with
 * other pipeline layout arguments"). NULL when t accounts for neither. */
const char *scenario_rebalance_accounted(const struct training *t);

/* The rebalancing rule (docs/formats.md, "training.stage_layers"): `layers`
 * over `stages` stages in proportion to each stage's speed 1 / slow[s]
 * (slow[s]: the compute-time factor of the slowest device among stage s's
 * ranks), whole layers, each stage at least `unit` layers and a multiple
 * of `unit` (the virtual stages), at most cap[s] when cap is not NULL.
 * The rule: every stage starts with one unit; the remaining units go one
 * at a time to the stage whose time with one more, (n_s + unit) slow_s,
 * is least (ties: the lower stage), skipping stages at their cap. That
 * minimises the largest n_s slow_s: the counts come as close to the
 * shares L (1/slow_s) / sum(1/slow) as whole units allow. Into out[];
 * false when the layers cannot be placed (fewer than stages x unit, or
 * not a multiple of unit, or over the caps). */
bool scenario_rebalance_layers(int64_t layers, int stages, int64_t unit, const double *slow,
                               const int64_t *cap, int64_t *out);
/* Each pipeline stage's pace under t's faults: the largest
 * topo_rank_slowdown among its ranks, stage s holding ranks
 * [s D / P, (s + 1) D / P) of `devices` D over `stages` P. */
void scenario_stage_slowdowns(const struct topology *t, int64_t devices, int64_t stages,
                              double *out);

#endif
