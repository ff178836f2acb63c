/* cmd_estimate.c — `shardlab estimate SCENARIO`: the symbolic estimate of
 * a plan (planner/cost/estimate.c): iteration time, its compute and
 * communication shares, the breakdown by category, memory per device
 * against the device's HBM, the reference's rec cost and the ops that
 * take the most time, as text or JSON. Linear in ops; the top-ops table
 * sorts once.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab estimate SCENARIO [--planner NAME] [--rec-cost MODE] [--fused]\n"
	        "                                  [--rec-order ORDER] [--ops N] [--json | --csv]\n"
	        "                                  [--devices N] [--topology FILE] [--global-batch B]\n"
	        "\n"
	        "Plan a scenario and estimate one training iteration in closed form\n"
	        "(docs/planner.md, \"The symbolic estimate\"): the graph is one step\n"
	        "batch, run global_batch / batch times (forward, backward with mirrored\n"
	        "communication), then the gradient synchronisation and an Adam update\n"
	        "once. Prints the iteration time, steps per iteration, the compute and\n"
	        "communication time, the breakdown by category (seconds and share),\n"
	        "memory per device (parameters, gradients, optimizer state,\n"
	        "activations) against the device's HBM with its verdict (\"fits (71 of\n"
	        "80 GB)\", \"tight (77-83 of 80 GB)\": the peak +- 5%% straddles the HBM,\n"
	        "\"does not fit (105 of 80 GB)\"); with training.optimizer_offload and\n"
	        "training.activation_offload_layers, the optimizer state and the\n"
	        "offloaded activations a server's host memory holds, against the topology's\n"
	        "server.host.memory_GB with the same verdict; the reference's dimensionless\n"
	        "rec cost, and the ops that take the most time. No overlap and no\n"
	        "contention: those are the simulator's, but for collectives that run\n"
	        "inside a computation (a context-parallel ring; with\n"
	        "training.tp_comm_overlap, sequence parallelism's under their GEMMs)\n"
	        "and, with training.overlap_param_gather, the updated parameters'\n"
	        "gathers beside the first forward.\n"
	        "\n");
	fprintf(f,
	        "options:\n%s"
	        "  --planner NAME  propagate, recursive, data-parallel, megatron or\n"
	        "                  megatron-search (its choice on the second line), as\n"
	        "                  for shardlab plan. Default: the scenario's first\n"
	        "                  planner when it is available, else propagate\n"
	        "  --rec-cost MODE the recursive planner's costs: topology (default) or\n"
	        "                  mindspore\n"
	        "  --rec-order O   its visit order within a level: reverse-topological\n"
	        "                  (default) or weight, as for shardlab plan\n"
	        "  --fused         complete partial sums with a ReduceScatter where the\n"
	        "                  consumer wants the result split (default: MindSpore-\n"
	        "                  compatible)\n"
	        "  --ops N         list the N ops that take the most time (default 10;\n"
	        "                  0 for none)\n"
	        "  --json          print JSON: \"scenario\", \"model\", \"topology\",\n"
	        "                  \"devices\", \"planner\", \"mode\", \"iteration_s\",\n"
	        "                  \"hybridep_iteration_s\" and\n"
	        "                  \"moe_a2a_overlap_iteration_s\" (below),\n"
	        "                  \"compute_s\", \"comm_s\", \"moe_hidden_s\" (with\n"
	        "                  training.moe_a2a_overlap: the expert all-to-alls'\n"
	        "                  seconds an iteration hidden, not in comm_s),\n"
	        "                  \"steps_per_iteration\",\n"
	        "                  \"breakdown\" ([{\"category\", \"s\"}]), \"memory\"\n"
	        "                  ({\"parameters\", \"gradients\", \"optimizer\",\n"
	        "                  \"activations\", \"buffers\", \"reserve\", \"hbm\"} in bytes, of the\n"
	        "                  largest device; \"stage\" it is on),\n"
	        "                  \"pipeline\" ({\"stages\", \"virtual_stages\",\n"
	        "                  \"micro_batches\", \"schedule\", \"pipeline_s\",\n"
	        "                  \"bubble_s\", \"bubble_fraction\", \"critical_stage\",\n"
	        "                  \"per_stage\": [{\"first_op\", \"last_op\", \"micro_s\",\n"
	        "                  \"p2p_s\", \"gradient_s\", \"tied_bytes\", \"tied_s\"\n"
	        "                  (the sum of parameters shared with other stages, as\n"
	        "                  a head tied to the embedding: bytes sent, seconds;\n"
	        "                  part of gradient_s; dualpipe's first and last stage,\n"
	        "                  on the same devices, send nothing and have\n"
	        "                  \"tied_local_bytes\", the bytes kept as one),\n"
	        "                  \"mirror_bytes\", \"mirror_s\"\n"
	        "                  (dualpipe: both chunks' gradients sent to the mirror\n"
	        "                  stage; part of gradient_s), \"optimizer_s\",\n"
	        "                  \"in_flight\", \"memory_bytes\"}]}),\n"
	        "                  \"training\" ({\"zero_stage\", \"recompute\", \"precision\",\n"
	        "                  \"sequence_parallel\", \"context_parallel\",\n"
	        "                  \"expert_parallel\"}),\n"
	        "                  \"memory_bytes_per_device\", \"oom\" (the band is over\n"
	        "                  the HBM: \"does not fit\"), \"memory_verdict\" (\"fits\",\n"
	        "                  \"tight\" or \"does not fit\"), \"memory_low_bytes\",\n"
	        "                  \"memory_high_bytes\" (the band: the peak +- 5%%,\n"
	        "                  docs/cost-models.md), \"memory_margin_bytes\" (the\n"
	        "                  HBM less the peak), \"oom_overflow_bytes\" (the peak\n"
	        "                  over the HBM; 0 when under), with an offload and a\n"
	        "                  stated host memory \"host_oom\" and\n"
	        "                  \"host_overflow_bytes\" (host_memory's, beside them),\n"
	        "                  with\n"
	        "                  training.optimizer_offload or\n"
	        "                  training.activation_offload_layers \"host_memory\"\n"
	        "                  ({\"optimizer_bytes_per_device\",\n"
	        "                  \"activation_bytes_per_device\" (with the latter),\n"
	        "                  \"bytes_per_server\",\n"
	        "                  and where the topology states server.host.memory_GB\n"
	        "                  \"capacity_bytes\", \"oom\", \"overflow_bytes\"}),\n"
	        "                  \"rec_cost\",\n"
	        "                  \"compute_fallback\" and \"ops\" (every op, graph order:\n"
	        "                  {\"name\", \"kind\", \"compute_forward_s\",\n"
	        "                  \"compute_backward_s\", \"comm_forward_s\",\n"
	        "                  \"comm_backward_s\", \"gradient_s\", \"activation_bytes\",\n"
	        "                  \"total_s\"}; --ops does not apply)\n",
	        cli_override_help);
	fprintf(f,
	        "  --csv           print every op as CSV, graph order (--ops does not\n"
	        "                  apply): index, name, kind, stage, compute_forward_s,\n"
	        "                  compute_backward_s, comm_forward_s, comm_backward_s\n"
	        "                  (per micro-batch step), recompute_s, gather_s,\n"
	        "                  gradient_s (per iteration), activation_bytes,\n"
	        "                  total_s (per iteration), share_pct (of the iteration)\n"
	        "  -h, --help      this help\n"
	        "\n"
	        "Times of an op are per micro-batch except gradient_s (once per\n"
	        "iteration); total_s is its share of the iteration on its stage.\n"
	        "\n"
	        "A mixture of experts whose expert all-to-alls cross servers under the\n"
	        "default dispatcher gets a note (and in JSON \"hybridep_iteration_s\"):\n"
	        "its iteration with training.moe_dispatcher \"hybridep\", a token sent\n"
	        "across once to each server holding one of its experts (docs/moe-cp.md,\n"
	        "\"Dispatchers\"), when that is at least 1%% less. One whose parallelism\n"
	        "Megatron-Core would run with training.moe_a2a_overlap and that does not\n"
	        "set it gets another (\"moe_a2a_overlap_iteration_s\"): its iteration\n"
	        "with the all-to-alls under another micro-batch's compute (docs/moe-cp.md,\n"
	        "\"Overlapping the all-to-alls\"), when that is at least 1%% less. One that\n"
	        "sets it, under a pipeline whose sends cross servers and with all-to-alls\n"
	        "that cross them too, gets a third (\"pipeline_sends_beside_alltoalls\":\n"
	        "true): the estimate prices each send alone, the simulation beside the\n"
	        "all-to-alls that keep those NICs busy.\n"
	        "\n"
	        "exit status: 0 success, 1 invalid scenario or strategy (diagnostics on\n"
	        "stderr), 2 usage error (including a planner that is unknown or not\n"
	        "available yet).\n");
}

struct args {
	const char *file;
	bool json, csv;
	struct cli_plan_args plan;
	int64_t ops;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.ops = 10};
	int rc = EXIT_OK;
	for (int i = 1; i < argc && rc == EXIT_OK; i++) {
		int taken = cli_plan_option("estimate", argc, argv, &i, &a->plan);
		if (taken) {
			rc = taken < 0 ? EXIT_USAGE : EXIT_OK;
		} else if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!strcmp(argv[i], "--csv")) {
			a->csv = true;
		} else if (!strcmp(argv[i], "--ops") && i + 1 < argc) {
			rc = cli_parse_count("estimate", "--ops", argv[++i], INT32_MAX, &a->ops);
		} else {
			rc = cli_scenario_word("estimate", argv[i], &a->file);
		}
	}
	return rc == EXIT_OK ? cli_scenario_named("estimate", a->file) : rc;
}

/* An op's share of the iteration: its per-step times times the steps,
 * plus its gradient synchronisation. */
static double op_total_s(const struct estimate *e, const struct est_op *o)
{
	return (double)e->steps_per_iteration * (o->compute_forward_s + o->compute_backward_s +
	                                         o->comm_forward_s + o->comm_backward_s +
	                                         o->recompute_s + o->gather_s) +
	       o->gradient_s;
}

/* ------------------------------------------------------------------ text */

static const char *sec(char *buf, size_t n, double s)
{
	return cli_si(buf, n, s, "s");
}

static double share(double part, double whole)
{
	return whole > 0 ? 100 * part / whole : 0;
}

/* A mixture of experts' two settings to try first (moe_notes): the
 * iterations with them, 0 when not at least 1% less. */
struct moe_notes {
	double hybridep_s, overlap_s;
	bool sends_beside;  /* under training.moe_a2a_overlap, the pipeline's sends cross
	                       servers whose NICs the expert all-to-alls cross too */
};

static void text_head(const struct plan *p, const struct estimate *e, const char *planner,
                      const struct moe_notes *mn)
{
	char b1[32], b2[32];
	printf("estimate %s: model %s on %" PRId64 " devices of %s, planner %s (%s redistribution)\n",
	       p->scenario->name, p->graph->name, p->scenario->devices, p->scenario->topo->name, planner,
	       p->mode == REDIST_FUSED ? "fused" : "MindSpore-compatible");
	report_search_chosen(stdout, p);
	cli_note_uncalibrated(stdout, p->scenario->topo);
	cli_note_faults(stdout, p->scenario->topo, p->scenario->devices);
	if (mn->hybridep_s > 0)
		printf("note: the expert all-to-alls cross servers; with training.moe_dispatcher "
		       "\"hybridep\" (a token across once to each server that holds one of its "
		       "experts; docs/moe-cp.md) the iteration is %s, %.0f%% less\n",
		       sec(b1, sizeof b1, mn->hybridep_s), 100 * (1 - mn->hybridep_s / e->iteration_s));
	if (mn->overlap_s > 0)
		printf("note: with training.moe_a2a_overlap (the expert all-to-alls under another "
		       "micro-batch's compute, Megatron-Core's --overlap-moe-expert-parallel-comm; "
		       "docs/moe-cp.md) the iteration is %s, %.0f%% less\n",
		       sec(b1, sizeof b1, mn->overlap_s), 100 * (1 - mn->overlap_s / e->iteration_s));
	if (mn->sends_beside)
		printf("note: the pipeline's sends cross the NICs that the expert all-to-alls cross, "
		       "which training.moe_a2a_overlap runs beside the compute through the F&B slots; the "
		       "estimate prices each send alone, shardlab simulate beside the all-to-alls "
		       "(docs/moe-cp.md, \"Overlapping the all-to-alls\")\n");
	printf("\n");
	struct cal_interval iv;
	char ivt[96];
	cli_interval(p, &iv);
	printf("  iteration            %s%s\n", sec(b1, sizeof b1, e->iteration_s),
	       cli_interval_text(ivt, sizeof ivt, &iv));
	cli_calibration_line(stdout, "  ", p->scenario->topo, cost_graph_has_moe(p->graph));
	cli_outside_line(stdout, "  ", &iv);
	printf("  micro-batches        %" PRId64 "\n", e->steps_per_iteration);
	printf("  compute              %-10s %5.1f%%\n", sec(b1, sizeof b1, e->compute_s),
	       share(e->compute_s, e->iteration_s));
	printf("  communication        %-10s %5.1f%%\n", sec(b2, sizeof b2, e->comm_s),
	       share(e->comm_s, e->iteration_s));
	double moe = e->stages[e->critical_stage].moe_hidden_s;
	if (moe > 0)
		printf("  all-to-alls hidden   %-10s beside the paired micro-batch's compute, not "
		       "in the communication (training.moe_a2a_overlap)\n",
		       sec(b1, sizeof b1, moe));
}

static void text_breakdown(const struct estimate *e)
{
	char b[32];
	printf("\nbreakdown\n");
	for (int k = 0; k < EST_CATEGORY_COUNT; k++)
		printf("  %-18s %-10s %5.1f%%\n", est_category_names[k],
		       sec(b, sizeof b, e->category_s[k]), share(e->category_s[k], e->iteration_s));
}

static void text_pipeline(const struct plan *p, const struct estimate *e)
{
	const struct training *t = &p->scenario->training;
	const struct plan_part *pp = &e->part;
	char b[4][32];
	if (pp->n_stages <= 1)
		return;
	printf("\npipeline: %d stages x %lld ranks, %d chunk%s per stage, %s, %lld micro-batches\n",
	       pp->n_stages, (long long)pp->stage_ranks, pp->virtual_stages,
	       pp->virtual_stages == 1 ? "" : "s",
	       schedule_names[pp->virtual_stages > 1 && !pp->vshape ? SCHED_INTERLEAVED_1F1B
	                                                             : t->schedule],
	       (long long)e->steps_per_iteration);
	printf("  bubble %s of %s (%.1f%%)\n", sec(b[0], 32, e->bubble_s),
	       sec(b[1], 32, e->iteration_s), share(e->bubble_s, e->iteration_s));
	if (t->stage_layers) {
		printf("  layers per stage ");
		for (int64_t k = 0; k < t->pipeline_stages; k++)
			printf("%s%lld", k ? "/" : "", (long long)t->stage_layers[k]);
		printf(" (%s)\n", t->rebalance ? "rebalanced by the stages' speed under the faults"
		                                : "training.stage_layers");
	}
	printf("  %-6s %-34s %-10s %-10s %-9s %s\n", "stage", "ops", "micro-batch", "p2p",
	       "in flight", "memory");
	for (int s = 0; s < pp->n_stages; s++) {
		const struct est_stage *es = &e->stages[s];
		int lo = pp->first_op[s], hi = pp->first_op[s + 1] - 1;
		char ops[128];
		if (pp->virtual_stages > 1)
			snprintf(ops, sizeof ops, "%d chunks", pp->virtual_stages);
		else
			snprintf(ops, sizeof ops, "%.15s .. %.15s", p->graph->ops[lo].name,
			         p->graph->ops[hi].name);
		printf("  %-6d %-34s %-10s %-10s %-9.3g %s%s\n", s, ops, sec(b[0], 32, es->micro_s),
		       sec(b[1], 32, es->p2p_s), es->in_flight, cli_si(b[2], 32, es->mem.total, "B"),
		       s == e->critical_stage ? "  (slowest)" : "");
	}
	/* the stages that share parameters (a head tied to the embedding) */
	for (int s = 0; s < pp->n_stages; s++) {
		const struct est_stage *es = &e->stages[s];
		if (es->tied_local_bytes > 0 && s < es->tied_next)
			printf("  shared parameters' gradients: stages %d and %d on the same devices "
			       "(dualpipe), %s a rank kept as one, nothing sent\n",
			       s, es->tied_next, cli_si(b[2], 32, es->tied_local_bytes, "B"));
		if (es->tied_bytes <= 0)
			continue;
		printf("  shared parameters' gradients, after the flush: stage %d sends %s a rank "
		       "to stage %d (%s)\n",
		       s, cli_si(b[2], 32, es->tied_bytes, "B"), es->tied_next,
		       sec(b[0], 32, es->tied_s));
	}
	/* DualPipe: the two copies of each model chunk, stages d and P-1-d,
	 * each sending the other as much */
	for (int s = 0; s < pp->n_stages / 2; s++) {
		const struct est_stage *es = &e->stages[s];
		if (es->mirror_bytes <= 0)
			continue;
		printf("  mirror copies' gradients, after the flush: stages %d and %d send each "
		       "other %s a rank (%s)\n",
		       s, pp->n_stages - 1 - s, cli_si(b[2], 32, es->mirror_bytes, "B"),
		       sec(b[0], 32, es->mirror_s));
	}
}

/* training.optimizer_offload and training.activation_offload_layers: the
 * optimizer state and the offloaded activations in a server's host
 * memory, with its verdict as the device's when the topology states the
 * host's memory (server.host.memory_GB). */
static void text_host(const struct plan *p, const struct estimate *e)
{
	char b1[32], b2[32], verdict[96];
	const struct topology *t = p->scenario->topo;
	int64_t on = p->scenario->devices < t->devices_per_server ? p->scenario->devices
	                                                          : t->devices_per_server;
	const struct training *tr = &p->scenario->training;
	if (!tr->activation_offload_layers) {
		printf("\nhost memory per server (training.optimizer_offload: the optimizer state)\n");
		printf("  %-18s %s a device x %lld devices = %s\n", "optimizer state",
		       cli_si(b1, sizeof b1, e->host_bytes_per_device, "B"), (long long)on,
		       cli_si(b2, sizeof b2, e->host_bytes_per_server, "B"));
	} else {
		double act = e->host_activation_bytes_per_device;
		printf("\nhost memory per server (training.%s)\n",
		       tr->optimizer_offload ? "optimizer_offload, activation_offload_layers"
		                             : "activation_offload_layers");
		if (tr->optimizer_offload)
			printf("  %-18s %s a device\n", "optimizer state",
			       cli_si(b1, sizeof b1, e->host_bytes_per_device - act, "B"));
		printf("  %-18s %s a device (%lld layers)\n", "activations",
		       cli_si(b1, sizeof b1, act, "B"), (long long)tr->activation_offload_layers);
		printf("  %-18s %s a device x %lld devices = %s\n", "total",
		       cli_si(b1, sizeof b1, e->host_bytes_per_device, "B"), (long long)on,
		       cli_si(b2, sizeof b2, e->host_bytes_per_server, "B"));
	}
	if (e->host_capacity_bytes <= 0) {
		printf("  %-18s not checked: the topology states no server.host.memory_GB\n",
		       "verdict");
		return;
	}
	printf("  %-18s %s, margin %s (band: the peak +- 5%%)\n", "verdict",
	       cli_verdict_text(verdict, sizeof verdict, e->host_bytes_per_server,
	                        e->host_capacity_bytes),
	       cli_si(b1, sizeof b1, e->host_capacity_bytes - e->host_bytes_per_server, "B"));
}

static void text_memory(const struct plan *p, const struct estimate *e)
{
	static const char *const names[] = {"parameters", "gradients", "optimizer state",
	                                    "activations", "comm buffers", "runtime reserve"};
	double v[] = {e->param_bytes, e->grad_bytes, e->optimizer_bytes, e->activation_bytes,
	              e->buffer_bytes, e->reserve_bytes};
	double hbm = p->scenario->topo->device.hbm_bytes;
	char b1[32], b2[32], verdict[96];
	const struct training *tr = &p->scenario->training;
	printf("\nmemory per device (the largest: stage %d; ZeRO %d, recompute %s, precision %s)\n",
	       e->memory_stage, tr->zero_stage, recompute_names[tr->recompute],
	       precision_names[tr->precision]);
	for (size_t k = 0; k < SL_COUNTOF(names); k++)
		printf("  %-18s %s\n", names[k], cli_si(b1, sizeof b1, v[k], "B"));
	printf("  %-18s %s of %s HBM (%.1f%%)\n", "total",
	       cli_si(b1, sizeof b1, e->memory_bytes_per_device, "B"), cli_si(b2, sizeof b2, hbm, "B"),
	       share(e->memory_bytes_per_device, hbm));
	printf("  %-18s %s, margin %s (band: the peak +- 5%%)\n", "verdict",
	       cli_verdict_text(verdict, sizeof verdict, e->memory_bytes_per_device, hbm),
	       cli_si(b1, sizeof b1, hbm - e->memory_bytes_per_device, "B"));
	if (tr->optimizer_offload || tr->activation_offload_layers)
		text_host(p, e);
	printf("\nrec cost (dimensionless)  %.6g\n", plan_rec_cost(p));
}

static const struct estimate *sort_e;

static int by_total(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;
	double ta = op_total_s(sort_e, &sort_e->ops[a]), tb = op_total_s(sort_e, &sort_e->ops[b]);
	if (ta != tb)
		return ta > tb ? -1 : 1;
	return a - b;
}

static void text_ops(const struct plan *p, const struct estimate *e, int n)
{
	if (n == 0 || e->n_ops == 0)
		return;
	int *idx = malloc((size_t)e->n_ops * sizeof(*idx));
	if (!idx)
		return;
	for (int i = 0; i < e->n_ops; i++)
		idx[i] = i;
	sort_e = e;
	qsort(idx, (size_t)e->n_ops, sizeof(*idx), by_total);
	if (n > e->n_ops)
		n = e->n_ops;
	int w = 2, wk = 12;
	for (int i = 0; i < n; i++) {
		int l = (int)strlen(p->graph->ops[idx[i]].name);
		int k = (int)strlen(op_kind_name(p->graph->ops[idx[i]].kind));
		w = l > w ? l : w;
		wk = k > wk ? k : wk;
	}
	printf("\ntop %d ops by time per iteration (forward, backward and comm per step)\n", n);
	printf("  %-*s  %-*s %-9s %-9s %-9s %-9s %-9s %-9s %s\n", w, "op", wk, "kind", "forward",
	       "backward", "comm fwd", "comm bwd", "gradient", "total", "share");
	for (int i = 0; i < n; i++) {
		const struct est_op *o = &e->ops[idx[i]];
		const struct op *op = &p->graph->ops[idx[i]];
		char b[7][32];
		double t = op_total_s(e, o);
		printf("  %-*s  %-*s %-9s %-9s %-9s %-9s %-9s %-9s %5.1f%%\n", w, op->name, wk,
		       op_kind_name(op->kind), sec(b[0], 32, o->compute_forward_s),
		       sec(b[1], 32, o->compute_backward_s), sec(b[2], 32, o->comm_forward_s),
		       sec(b[3], 32, o->comm_backward_s), sec(b[4], 32, o->gradient_s),
		       sec(b[5], 32, t), share(t, e->iteration_s));
	}
	free(idx);
}

/* ------------------------------------------------------------------- csv */

static void csv_ops(const struct plan *p, const struct estimate *e)
{
	static const char *const cols[] = {
		"index", "name", "kind", "stage", "compute_forward_s", "compute_backward_s",
		"comm_forward_s", "comm_backward_s", "recompute_s", "gather_s", "gradient_s",
		"activation_bytes", "total_s", "share_pct", NULL};
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, cols);
	for (int i = 0; i < e->n_ops; i++) {
		const struct est_op *o = &e->ops[i];
		const struct op *op = &p->graph->ops[o->op];
		double t = op_total_s(e, o);
		cli_csv_int(&c, o->op);
		cli_csv_str(&c, op->name);
		cli_csv_str(&c, op_kind_name(op->kind));
		cli_csv_int(&c, e->part.n_stages > 0 ? part_stage(&e->part, o->chunk) : 0);
		cli_csv_num(&c, o->compute_forward_s);
		cli_csv_num(&c, o->compute_backward_s);
		cli_csv_num(&c, o->comm_forward_s);
		cli_csv_num(&c, o->comm_backward_s);
		cli_csv_num(&c, o->recompute_s);
		cli_csv_num(&c, o->gather_s);
		cli_csv_num(&c, o->gradient_s);
		cli_csv_num(&c, o->activation_bytes);
		cli_csv_num(&c, t);
		cli_csv_num(&c, share(t, e->iteration_s));
		cli_csv_end(&c);
	}
}

/* ------------------------------------------------------------------ json */

static cJSON *json_op(const struct plan *p, const struct estimate *e, const struct est_op *o)
{
	cJSON *j = cJSON_CreateObject();
	const struct op *op = &p->graph->ops[o->op];
	cJSON_AddStringToObject(j, "name", op->name);
	cJSON_AddStringToObject(j, "kind", op_kind_name(op->kind));
	cJSON_AddNumberToObject(j, "compute_forward_s", o->compute_forward_s);
	cJSON_AddNumberToObject(j, "compute_backward_s", o->compute_backward_s);
	cJSON_AddNumberToObject(j, "comm_forward_s", o->comm_forward_s);
	cJSON_AddNumberToObject(j, "comm_backward_s", o->comm_backward_s);
	cJSON_AddNumberToObject(j, "gradient_s", o->gradient_s);
	cJSON_AddNumberToObject(j, "activation_bytes", o->activation_bytes);
	cJSON_AddNumberToObject(j, "chunk", o->chunk);
	cJSON_AddNumberToObject(j, "total_s", op_total_s(e, o));
	return j;
}

static cJSON *json_estimate(const struct plan *p, const struct estimate *e,
                            const struct report_options *ro, const struct moe_notes *mn)
{
	cJSON *root = report_json_head(p, ro);
	cJSON_AddNumberToObject(root, "iteration_s", e->iteration_s);
	if (mn->hybridep_s > 0)
		cJSON_AddNumberToObject(root, "hybridep_iteration_s", mn->hybridep_s);
	if (mn->overlap_s > 0)
		cJSON_AddNumberToObject(root, "moe_a2a_overlap_iteration_s", mn->overlap_s);
	if (mn->sends_beside)
		cJSON_AddTrueToObject(root, "pipeline_sends_beside_alltoalls");
	struct cal_interval iv;
	cli_interval(p, &iv);
	cJSON_AddItemToObject(root, "calibration", cli_calibration_json(p->scenario->topo));
	cJSON_AddItemToObject(root, "interval", cli_interval_json(&iv));
	cJSON_AddNumberToObject(root, "compute_s", e->compute_s);
	cJSON_AddNumberToObject(root, "comm_s", e->comm_s);
	if (p->scenario->training.moe_a2a_overlap)
		cJSON_AddNumberToObject(root, "moe_hidden_s", e->stages[e->critical_stage].moe_hidden_s);
	cJSON_AddNumberToObject(root, "steps_per_iteration", (double)e->steps_per_iteration);
	cJSON *bd = cJSON_AddArrayToObject(root, "breakdown");
	for (int k = 0; k < EST_CATEGORY_COUNT; k++) {
		cJSON *c = cJSON_CreateObject();
		cJSON_AddStringToObject(c, "category", est_category_names[k]);
		cJSON_AddNumberToObject(c, "s", e->category_s[k]);
		cJSON_AddItemToArray(bd, c);
	}
	cJSON *m = cJSON_AddObjectToObject(root, "memory");
	cJSON_AddNumberToObject(m, "parameters", e->param_bytes);
	cJSON_AddNumberToObject(m, "gradients", e->grad_bytes);
	cJSON_AddNumberToObject(m, "optimizer", e->optimizer_bytes);
	cJSON_AddNumberToObject(m, "activations", e->activation_bytes);
	cJSON_AddNumberToObject(m, "buffers", e->buffer_bytes);
	cJSON_AddNumberToObject(m, "reserve", e->reserve_bytes);
	cJSON_AddNumberToObject(m, "hbm", p->scenario->topo->device.hbm_bytes);
	cJSON_AddNumberToObject(m, "stage", e->memory_stage);
	if (p->scenario->training.optimizer_offload || p->scenario->training.activation_offload_layers) {
		cJSON *h = cJSON_AddObjectToObject(root, "host_memory");
		cJSON_AddNumberToObject(h, "optimizer_bytes_per_device",
		                        e->host_bytes_per_device - e->host_activation_bytes_per_device);
		if (p->scenario->training.activation_offload_layers)
			cJSON_AddNumberToObject(h, "activation_bytes_per_device",
			                        e->host_activation_bytes_per_device);
		cJSON_AddNumberToObject(h, "bytes_per_server", e->host_bytes_per_server);
		if (e->host_capacity_bytes > 0) {
			cJSON_AddNumberToObject(h, "capacity_bytes", e->host_capacity_bytes);
			struct cost_verdict v;
			cost_memory_verdict(e->host_bytes_per_server, e->host_capacity_bytes, &v);
			cJSON_AddBoolToObject(h, "oom", v.fit == FIT_NO);
			cJSON_AddNumberToObject(h, "overflow_bytes", e->host_overflow_bytes);
		}
	}
	report_json_pipeline(root, p, e);
	cJSON_AddNumberToObject(root, "memory_bytes_per_device", e->memory_bytes_per_device);
	report_json_oom(root, e->memory_bytes_per_device, p->scenario->topo->device.hbm_bytes);
	if (e->host_bytes_per_server > 0)  /* beside "oom", as simulate and compare put it */
		report_json_host_oom(root, e->host_bytes_per_server, e->host_capacity_bytes);
	cJSON_AddNumberToObject(root, "rec_cost", plan_rec_cost(p));
	cJSON_AddBoolToObject(root, "compute_fallback", e->compute_fallback);
	cJSON *ops = cJSON_AddArrayToObject(root, "ops");
	for (int i = 0; i < e->n_ops; i++)
		cJSON_AddItemToArray(ops, json_op(p, e, &e->ops[i]));
	return root;
}

/* ------------------------------------------------------------------- run */

/* The plan's iteration under training `alt` instead of the scenario's,
 * when that is at least 1% less; 0 otherwise. The scenario is put back. */
static double alternative_s(struct arena *ar, struct plan *p, struct scenario *s,
                            const struct estimate *e, const struct training *alt)
{
	struct diag_list d;
	diag_list_init(&d);
	struct estimate h;
	struct training keep = s->training;
	s->training = *alt;
	bool ok = plan_estimate(ar, p, &h, &d);
	s->training = keep;
	diag_list_free(&d);
	return ok && h.iteration_s < 0.99 * e->iteration_s ? h.iteration_s : 0;
}

/* Whether two neighbouring stages of the pipeline sit on different
 * servers (rank r on server r / devices_per_server): their sends cross
 * NICs. */
static bool sends_cross_servers(const struct topology *t, const struct plan_part *pp)
{
	int64_t d = t->devices_per_server > 0 ? t->devices_per_server : 1;
	for (int st = 0; st + 1 < pp->n_stages; st++)
		if ((st * pp->stage_ranks) / d != ((st + 1) * pp->stage_ranks) / d)
			return true;
	return false;
}

/* Whether an AllToAll of the plan has a group spanning servers (its
 * groups are alike: the first one's members tell). */
static bool alltoalls_cross_servers(const struct plan *p)
{
	int64_t d = p->scenario->topo->devices_per_server > 0 ? p->scenario->topo->devices_per_server
	                                                      : 1;
	for (int i = 0; i < p->n_edges; i++)
		for (int k = 0; k < p->edges[i].redist.n_steps; k++) {
			const struct comm_step *st = &p->edges[i].redist.steps[k];
			if (st->kind != STEP_ALLTOALL || st->groups.size < 2)
				continue;
			int64_t first = rank_groups_rank(&st->groups, 0, 0) / d;
			for (int64_t m = 1; m < st->groups.size; m++)
				if (rank_groups_rank(&st->groups, 0, m) / d != first)
					return true;
		}
	return false;
}

/* A mixture of experts' two settings to try first (docs/moe-cp.md), each
 * when it is at least 1% faster: the HybridEP dispatcher where the plan
 * runs Megatron-Core's all-to-all one (the EP groups span servers), and
 * the all-to-alls under another micro-batch's compute
 * (training.moe_a2a_overlap) where Megatron-Core would run it with the
 * scenario's parallelism. */
static struct moe_notes moe_notes(struct arena *ar, struct plan *p, struct scenario *s,
                                  const struct estimate *e)
{
	struct moe_notes n = {0, 0, false};
	bool moe = false;
	for (int i = 0; i < p->graph->n_ops && !moe; i++)
		moe = p->graph->ops[i].kind == OP_MOEDISPATCH;
	if (!moe)
		return n;
	struct training alt = s->training;
	if (alt.moe_dispatcher == MOE_DISPATCH_ALLTOALL) {
		alt.moe_dispatcher = MOE_DISPATCH_HYBRIDEP;
		n.hybridep_s = alternative_s(ar, p, s, e, &alt);
	}
	alt = s->training;
	alt.moe_a2a_overlap = true;
	if (!s->training.moe_a2a_overlap && !scenario_moe_a2a_overlap_refusal(&alt))
		n.overlap_s = alternative_s(ar, p, s, e, &alt);
	n.sends_beside = s->training.moe_a2a_overlap && sends_cross_servers(s->topo, &e->part) &&
	                 alltoalls_cross_servers(p);
	return n;
}

static void fallback_warning(const struct plan *p, const struct estimate *e)
{
	if (e->compute_fallback)
		fprintf(stderr,
		        "shardlab estimate: warning: the topology gives %s no peak for some op's "
		        "dtype (the scenario computes in %s); those ops are costed at the device's "
		        "fastest floating-point peak\n",
		        p->scenario->topo->device.kind, dtype_names[p->scenario->training.dtype]);
}

int cmd_estimate(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	struct args a;
	int rc = parse_args(argc, argv, &a);
	if (rc != EXIT_OK)
		return rc;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *ar = arena_new();
	struct scenario *s;
	enum planner_kind kind;
	struct plan *p = cli_load_plan(ar, a.file, &a.plan, &s, &kind, &d);
	struct estimate e;
	bool ok = p && plan_estimate(ar, p, &e, &d);
	cli_print_diags(&d);
	struct report_options o = {.command = "estimate", .planner = planner_names[kind]};
	rc = ok ? EXIT_OK : EXIT_INVALID;
	struct moe_notes mn = {0, 0, false};
	if (ok) {
		fallback_warning(p, &e);
		if (!a.csv)
			mn = moe_notes(ar, p, s, &e);
	}
	if (ok && a.json) {
		rc = report_print_json(json_estimate(p, &e, &o, &mn), "estimate");
	} else if (ok && a.csv) {
		csv_ops(p, &e);
	} else if (ok) {
		text_head(p, &e, o.planner, &mn);
		text_breakdown(&e);
		text_pipeline(p, &e);
		text_memory(p, &e);
		text_ops(p, &e, (int)a.ops);
	}
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
