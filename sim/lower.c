/* lower.c — a plan as the programs the ranks run for one training
 * iteration (sim.h, plan_lower).
 *
 * Per pipeline chunk, one micro-batch's forward: the receive of the live
 * activations from the chunk before, then for each op in order the
 * redistributions into it, ZeRO-3's gather of the parameters it first
 * reads, its forward compute and its own collectives, then the send to the
 * next chunk. Its backward: the receive of the gradient, recomputation
 * (full: the chunk's forward compute and collectives again; selective: the
 * attention cores), then for each op in reverse the mirrors of its own
 * collectives, ZeRO-3's gather again, its backward compute, the gradient
 * buckets that compute completes (stream 1), the all-reduce of its
 * inputs' gradients and the mirrors of the redistributions into it; then
 * the gradient sent back. Per stage, after its schedule: the optimizer
 * and, for ZeRO 1 and 2, the all-gather of the updated parameters. The
 * collectives are listed by the same code as the estimate's (the plan's
 * collectives, planner/layout/plan_comm.c), and compute times are the
 * estimate's, so the two agree when nothing contends and nothing waits.
 * DualPipe (lower_dual) has each model chunk twice, once per direction,
 * with a whole backward and the overlapped passes of its F&B besides.
 *
 * Units: seconds, bytes (S of the formulas). Steps are SPMD per stage: one
 * array for all ranks, the rank groups a stage-relative description. Hot
 * path: one pass over ops and edges; labels are formatted once per step.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sim-int.h"

const char *const prog_phase_names[PHASE_COUNT] = {"forward",  "backward", "recompute", "pipeline",
                                                   "parameters", "gradient", "optimizer"};
_Static_assert(PHASE_COUNT == 7, "prog_phase_names covers every phase");

struct lower {
	struct arena *a;
	const struct plan *p;
	const struct estimate *e;
	struct prog_step *steps;
	int n, cap;
	int *bwd_step;                     /* per op: its backward compute step */
	int *fwd_step;                     /* per op: its forward compute step, latest pass */
	double *pend_fwd, *pend_bwd;       /* per op: compute that ran alongside collectives
	                                      lowered before it (plan_edge.hide), to take off */
	const int *grad_hiders;            /* plan_grad_hiders; NULL: none */
	enum prog_phase phase;
	int stage;                         /* of the chunk being lowered */
	int op;                            /* the op whose collectives are being listed */
	const char *suffix;                /* label suffix of those collectives */
	struct cost_ep_route ep;           /* their AllToAlls' MoE route (cost_moe_edge_route)
	                                      under training.moe_dispatcher "hybridep" or
	                                      "deepep"; experts 0: none */
	bool moe;                          /* they are a MoE dispatch's or combine's
	                                      (cost_moe_edge) */
	struct plan_bucket **buckets;      /* per chunk: its gradient buckets */
	int *n_buckets;
	struct plan_bucket **gathers;      /* per chunk: the buckets whose updated parameters
	                                      it gathers (ZeRO 1, 2; DualPipe: without what
	                                      cost_chunk_gather_skip leaves out) */
	int *n_gathers;
	const uint32_t *fused;             /* per op: plan_fused_input_grads */
	const struct param_reads *reads;   /* which reads of a parameter are its first */
	struct cost_act_scratch *act;      /* cost_chunk_activations' tables */
	const bool *recomputed;            /* per op: cost_recomputed */
	int lo;                            /* the first op of the chunk being lowered */
	bool mirror;                       /* DualPipe: lowering the reverse direction's copy
	                                      (model chunk c on stage P - 1 - c) */
	int n_prog;                        /* the program's chunks */
	bool oom;
};

/* The stage of model chunk c in the direction being lowered. */
static int chunk_stage(const struct lower *L, int c)
{
	int st = part_stage(&L->e->part, c);
	return L->mirror ? L->e->part.n_stages - 1 - st : st;
}

static struct prog_step *push(struct lower *L)
{
	if (L->n == L->cap) {
		int cap = L->cap ? 2 * L->cap : 256;
		struct prog_step *s = arena_grow(L->a, L->steps, (size_t)L->n, (size_t)cap,
		                                 sizeof(*s));
		if (!s) {
			L->oom = true;
			return NULL;
		}
		L->steps = s;
		L->cap = cap;
	}
	struct prog_step *s = &L->steps[L->n++];
	memset(s, 0, sizeof(*s));
	s->after = -1;
	s->stage = L->stage;
	s->phase = L->phase;
	return s;
}

static const char *op_name(const struct lower *L, int op)
{
	return L->p->graph->ops[op].name;
}

static void compute(struct lower *L, int op, double seconds)
{
	struct prog_step *s = push(L);
	if (!s)
		return;
	s->kind = PROG_COMPUTE;
	s->phase = L->phase;
	s->op = op;
	s->label = op >= 0 ? op_name(L, op) : "optimizer";
	s->seconds = seconds;
}

/* A plan_coll_sink: one stream-0 collective step per collective. */
static void collective(void *ctx, const struct plan_coll *c)
{
	struct lower *L = ctx;
	struct prog_step *s = push(L);
	if (!s)
		return;
	s->kind = PROG_COLLECTIVE;
	s->phase = L->phase;
	s->op = L->op;
	s->coll = c->kind;
	s->groups = c->groups;
	s->bytes = c->bytes;
	if (c->kind == STEP_ALLTOALL)
		s->ep = L->ep;
	s->moe = L->moe;
	s->label = arena_printf(L->a, "%s %s%s", op_name(L, L->op), step_kind_names[c->kind],
	                        L->suffix);
	if (!s->label)
		L->oom = true;
}

/* The MoE route of edge x's AllToAlls, as the estimate prices them
 * (estimate.c, edges). */
static void edge_route(struct lower *L, const struct plan_edge *x)
{
	cost_moe_edge_route(L->p->graph, &L->p->scenario->training, x->producer, x->consumer,
	                    &L->ep);
	L->moe = cost_moe_edge(L->p->graph, x->producer, x->consumer);
}

static void edge_route_end(struct lower *L)
{
	L->ep.experts = 0;
	L->moe = false;
}

/* After a ring edge's collective was pushed: it runs alongside (r - 1)/r
 * of the consumer's compute_s (the caller takes that off the compute
 * step). Returns the share, 0 when the edge is no ring or no collective
 * took it. */
static double ring_overlap(struct lower *L, const struct plan_edge *x, double compute_s)
{
	if (x->ring <= 1 || L->n == 0 || L->steps[L->n - 1].kind != PROG_COLLECTIVE)
		return 0;
	double s = compute_s * (double)(x->ring - 1) / x->ring;
	L->steps[L->n - 1].overlap_s = s;
	return s;
}

/* After a collective that op `at` pushed (training.tp_comm_overlap: an
 * edge's into `at`, or `at`'s input-gradient all-reduce that
 * plan_grad_hiders gives edge x's hiders): the hiding ops' compute run
 * alongside it, (r - 1)/r of their forward (backward: of half their
 * backward), as estimate.c's hide_overlap and hide_input_grads; with
 * tp_comm_overlap_slices n, (n - 1)/n of it beside the (n - 1)/n of the
 * transfer that is not the first slice's (estimate.c, tp_overlap_hidden). Taken off
 * each op's compute step: now when it was lowered in this pass (forward
 * before `at`; backward `at` and after), else when it is. Ops outside the
 * chunk [lo, hi) give nothing. */
static void hide_share(struct lower *L, const struct plan_edge *x, bool backward, int at, int lo,
                       int hi)
{
	if (x->n_hide == 0 || L->n == 0 || L->steps[L->n - 1].kind != PROG_COLLECTIVE)
		return;
	double r = (double)x->redist.steps[0].groups.size, f = (r - 1) / r, total = 0;
	double n = (double)L->p->scenario->training.tp_comm_overlap_slices;
	if (n > 1) {
		f = (n - 1) / n;
		L->steps[L->n - 1].alone_share = 1 / n;
	}
	for (int k = 0; k < x->n_hide; k++) {
		int h = x->hide[k];
		if (h < lo || h >= hi)
			continue;
		const struct est_op *o = &L->e->ops[h];
		double s = backward ? f * o->compute_backward_s / 2 : f * o->compute_forward_s;
		bool done = backward ? h >= at : h < at;
		int step = backward ? L->bwd_step[h] : L->fwd_step[h];
		if (done)
			L->steps[step].seconds -= s;
		else if (backward)
			L->pend_bwd[h] += s;
		else
			L->pend_fwd[h] += s;
		total += s;
	}
	L->steps[L->n - 1].overlap_s += total;
}

/* Edges into each op: idx[start[op] .. start[op+1]) are edge indices. */
static int *edges_by_consumer(struct lower *L, int **idx)
{
	const struct plan *p = L->p;
	int n_ops = p->graph->n_ops;
	int *start = arena_calloc(L->a, (size_t)n_ops + 2, sizeof(int));
	*idx = arena_calloc(L->a, (size_t)p->n_edges + 1, sizeof(int));
	if (!start || !*idx)
		return NULL;
	for (int k = 0; k < p->n_edges; k++)
		start[p->edges[k].consumer + 2]++;
	for (int i = 0; i < n_ops; i++)
		start[i + 2] += start[i + 1];
	for (int k = 0; k < p->n_edges; k++)
		(*idx)[start[p->edges[k].consumer + 1]++] = k;
	return start;
}

static void bucket_step(struct lower *L, const struct plan_bucket *b, int k, int stream, int after,
                        bool every);

/* A stream-1 compute step: `label`, `seconds` on the communication stream
 * after the step before it (DeepSpeed 2021's copies and divisions). */
static void s1_compute(struct lower *L, int op, double seconds, const char *label, int after,
                       bool every)
{
	if (!(seconds > 0))
		return;
	compute(L, op, seconds);
	if (L->n > 0 && !L->oom) {
		struct prog_step *s = &L->steps[L->n - 1];
		s->stream = 1;
		s->after = after;
		s->every_micro = every;
		s->label = label;
	}
}

/* ZeRO-3: the parameters op d is the first of its chunk to read, gathered
 * over their data-parallel groups before it runs, on stream 1 (handed
 * over every micro-batch; a stream-0 wait_s1 step waits for them), `times`
 * times. DeepSpeed 2021 (estimate.c's op_gather_s, zero3.c): the
 * parameters it keeps whole are not gathered; each buffer's zero fill and
 * the host's issue of the list's copies run on stream 0 before the gather
 * is handed over, and the copies' bytes follow the gather on stream 1. */
static void gather_params(struct lower *L, const struct dist_op *d, int times)
{
	const struct graph *g = L->p->graph;
	const struct training *tr = &L->p->scenario->training;
	const struct topo_device *dev = &L->p->scenario->topo->device;
	bool ds = cost_zero3_deepspeed(tr);
	int inputs[SIG_MAX_TENSORS];
	const struct comm_step *sync[SIG_MAX_TENSORS];
	int n = cost_zero3_gathered(g, tr, L->reads, L->lo, d, inputs, sync);
	enum prog_phase was = L->phase;
	L->phase = PHASE_PARAMS;
	for (int r = 0; r < times; r++)
		for (int k = 0; k < n; k++) {
			const struct layout *l = &d->in[inputs[k]];
			double bytes = cost_param_gather_bytes(g, tr, d->op, layout_local_bytes(l),
			                                       l->dtype);
			if (ds) {
				compute(L, d->op, cost_ds_gather_inline_s(dev, sync[k]->groups.size, bytes));
				if (L->n > 0 && !L->oom)
					L->steps[L->n - 1].label = arena_printf(
					        L->a, "%s zero fill, list copies issued (DeepSpeed)",
					        op_name(L, d->op));
			}
			struct plan_coll c = {PCOLL_FORWARD, STEP_ALLGATHER, sync[k]->groups, bytes, 0};
			L->op = d->op;
			L->suffix = " (ZeRO-3 parameters)";
			int before = L->n;
			collective(L, &c);
			if (L->n > before) {
				L->steps[L->n - 1].stream = 1;
				L->steps[L->n - 1].every_micro = true;
			}
			if (ds)
				s1_compute(L, d->op, cost_ds_copy_bytes_s(dev, sync[k]->groups.size, bytes),
				           arena_printf(L->a, "%s gathered list copied (DeepSpeed)",
				                        op_name(L, d->op)),
				           -1, true);
		}
	L->phase = was;
}

/* The gathers of op i's parameters in a pass (estimate.c's zero3_exposed):
 * the forward's (pass 0), the recomputed forward's (1: DeepSpeed 2021's
 * re-gathers) or the backward's (2). */
static int gathers_in(const struct lower *L, int i, int pass)
{
	const struct est_op *o = &L->e->ops[i];
	if (!(o->gather_one_s > 0))
		return 0;
	return pass == 0 ? 1 : pass == 1 ? o->gathers_rec : o->gathers_bwd;
}

/* Stream 0 waits for everything handed to stream 1 (ZeRO-3's gathers and
 * the reduce-scatters issued before them). */
static void wait_comm(struct lower *L, const char *label)
{
	compute(L, -1, 0);
	if (L->n > 0 && !L->oom) {
		L->steps[L->n - 1].wait_s1 = true;
		L->steps[L->n - 1].label = label;
	}
}

/* ZeRO-3's gathering unit of op i (cost_zero3_unit: a transformer layer
 * under PyTorch FSDP and Megatron-FSDP, -1 for an op gathered alone). */
static int zero3_unit(const struct lower *L, int i)
{
	return cost_zero3_unit(L->p->graph, &L->p->scenario->training, i);
}

/* The gathers of op i's unit from i on in direction dir within [lo, hi),
 * issued together. */
static void gather_unit(struct lower *L, int i, int dir, int lo, int hi, int pass)
{
	int u = zero3_unit(L, i);
	for (int k = i; k >= lo && k < hi && (k == i || (u >= 0 && zero3_unit(L, k) == u)); k += dir)
		if (gathers_in(L, k, pass))
			gather_params(L, &L->p->ops[k], gathers_in(L, k, pass));
}

/* ZeRO-3's prefetch (estimate.c's zero3_exposed): before op i's compute,
 * when op i is the first op of its unit with parameters to gather in the
 * pass's direction (dir +1 forward, -1 backward) within [lo, hi): the
 * first unit's gathers of the pass, the wait for them, the
 * reduce-scatters of the buckets completed since the last wait
 * (backward: *pend of them, from b), then the gathers of the next such
 * unit. Whether it waited (the pending buckets handed over). */
static bool zero3_before(struct lower *L, int i, int dir, int lo, int hi, bool *started,
                         const struct plan_bucket *b, int *pend, int n_pend, bool every)
{
	int pass = dir < 0 ? 2 : L->phase == PHASE_RECOMPUTE ? 1 : 0;
	if (!gathers_in(L, i, pass))
		return false;
	int u = zero3_unit(L, i);
	for (int k = i - dir; u >= 0 && k >= lo && k < hi && zero3_unit(L, k) == u; k -= dir)
		if (gathers_in(L, k, pass))
			return false; /* gathered with its unit */
	if (!*started)
		gather_unit(L, i, dir, lo, hi, pass);
	*started = true;
	wait_comm(L, "wait for the parameters (ZeRO-3)");
	for (int j = 0; j < n_pend; j++)
		bucket_step(L, &b[pend[j]], pend[j], 1, L->n - 1, every);
	for (int k = i + dir; k >= lo && k < hi; k += dir)
		if (!(u >= 0 && zero3_unit(L, k) == u) && gathers_in(L, k, pass)) {
			gather_unit(L, k, dir, lo, hi, pass);
			break;
		}
	return true;
}

/* The forward of ops [lo, hi): redistributions into each, its compute and
 * its own collectives; `gather` gathers parameters first (ZeRO-3); `core`
 * non-NULL keeps only those ops' compute (selective recomputation); `only`
 * non-NULL only those ops, with their collectives (training.recompute_layers:
 * cost_recomputed). */
static void forward(struct lower *L, const int *start, const int *idx, int lo, int hi,
                    bool gather, const bool *core, const bool *only)
{
	const struct plan *p = L->p;
	struct plan_coll_sink k = {collective, L};
	const char *tag = L->phase == PHASE_RECOMPUTE ? " (recompute)" : "";
	bool started = false;
	for (int i = lo; i < hi; i++) {
		const struct dist_op *d = &p->ops[i];
		if ((core && !core[i]) || (only && !only[i]))
			continue;
		L->op = i;
		double hidden = 0;
		if (!core) {
			L->suffix = L->phase == PHASE_RECOMPUTE ? " (recompute redistribution)"
			                                        : " (redistribution)";
			for (int j = start[i]; j < start[i + 1]; j++) {
				const struct plan_edge *x = &p->edges[idx[j]];
				edge_route(L, x);
				plan_colls_forward(x->redist.steps, x->redist.n_steps, &k);
				edge_route_end(L);
				hidden += ring_overlap(L, x, L->e->ops[i].compute_forward_s);
				hide_share(L, x, false, i, lo, hi);
			}
		}
		if (gather)
			zero3_before(L, i, 1, lo, hi, &started, NULL, NULL, 0, false);
		compute(L, i, L->e->ops[i].compute_forward_s - hidden - L->pend_fwd[i]);
		L->pend_fwd[i] = 0;
		L->fwd_step[i] = L->n - 1;
		if (*tag && L->n > 0)
			L->steps[L->n - 1].label = arena_printf(L->a, "%s%s", op_name(L, i), tag);
		L->suffix = tag;
		if (!core)
			plan_colls_forward(d->comm, d->n_comm, &k);
	}
}

/* Whether the gradient buckets are synchronised once, in the stage's tail
 * after the whole backward (ZeRO 0 and 1 without overlap), rather than on
 * stream 1 under the backward. */
static bool buckets_in_tail(const struct training *tr)
{
	return tr->zero_stage < 2 && !tr->overlap_grad_reduce;
}

/* A gradient bucket on `stream`: stream 1 after step `after`, or stream 0
 * (after -1) in order. */
/* DeepSpeed 2021's flush of a bucket on stream 1 (estimate.c's
 * ds_bucket_s, zero3.c): the bucket buffer divided, then each gradient's
 * list copied into a flat buffer and reduce-scattered on its own. */
static void ds_bucket_steps(struct lower *L, const struct plan_bucket *b, int k, int after,
                            bool every)
{
	const struct training *tr = &L->p->scenario->training;
	const struct topo_device *dev = &L->p->scenario->topo->device;
	enum prog_phase was = L->phase;
	L->phase = PHASE_GRADIENT;
	double wire = cost_bucket_wire_bytes(b, tr);
	double scale = b->bytes > 0 ? wire / b->bytes : 0;
	s1_compute(L, -1, cost_ds_bucket_div_s(dev, b, tr->gradient_bucket_bytes),
	           arena_printf(L->a, "gradient bucket %d divided (DeepSpeed)", k), after, every);
	for (int j = 0; j < b->n && !L->oom; j++) {
		double w = b->op_bytes[j] * scale;
		s1_compute(L, -1, cost_ds_list_copies_s(dev, b->groups->size, w),
		           arena_printf(L->a, "gradient bucket %d: list %d copied (DeepSpeed)", k, j),
		           after, every);
		struct prog_step *s = push(L);
		if (!s)
			break;
		s->kind = PROG_COLLECTIVE;
		s->stream = 1;
		s->op = -1;
		s->coll = b->kind;
		s->groups = *b->groups;
		s->bytes = w;
		s->after = after;
		s->every_micro = every;
		s->label = arena_printf(L->a, "gradient bucket %d: tensor %d of %d %s (DeepSpeed)", k,
		                        j + 1, b->n, step_kind_names[s->coll]);
		if (!s->label)
			L->oom = true;
	}
	L->phase = was;
}

static void bucket_step(struct lower *L, const struct plan_bucket *b, int k, int stream, int after,
                        bool every)
{
	if (stream == 1 && cost_zero3_deepspeed(&L->p->scenario->training)) {
		ds_bucket_steps(L, b, k, after, every);
		return;
	}
	struct prog_step *s = push(L);
	if (!s)
		return;
	s->kind = PROG_COLLECTIVE;
	s->phase = PHASE_GRADIENT;
	s->stream = stream;
	s->op = -1;
	s->coll = b->kind;
	s->groups = *b->groups;
	s->bytes = cost_bucket_wire_bytes(b, &L->p->scenario->training);
	s->after = after;
	s->every_micro = every;
	s->label = b->n == 1 ? arena_printf(L->a, "%s gradient %s", b->first, step_kind_names[s->coll])
	                     : arena_printf(L->a, "gradient bucket %d: %d tensors from %s", k, b->n,
	                                    b->first);
	if (!s->label)
		L->oom = true;
}

/* The backward of ops [lo, hi) in reverse, each bucket of `b` on stream 1
 * right after the backward compute that completes it. */
static void backward(struct lower *L, const int *start, const int *idx, int lo, int hi,
                     bool gather, const struct plan_bucket *b, int nb, bool split)
{
	const struct plan *p = L->p;
	struct plan_coll_sink k = {collective, L};
	const struct training *tr = &p->scenario->training;
	bool every = tr->zero_stage >= 2, started = false;
	if (buckets_in_tail(tr) || split)
		nb = 0; /* lower_tail, or the weight pass, synchronises them */
	/* ZeRO-3: the buckets completed since the last wait, handed over at
	 * the next (zero3_before) or at the chunk's end */
	int *pend = gather ? arena_alloc_raw(L->a, ((size_t)nb + 1) * sizeof(int)) : NULL;
	int n_pend = 0;
	if (gather && !pend) {
		L->oom = true;
		return;
	}
	for (int i = hi - 1; i >= lo; i--) {
		const struct dist_op *d = &p->ops[i];
		L->op = i;
		L->suffix = " (backward)";
		if (!plan_colls_backward(d->comm, d->n_comm, &d->out_partial[0], &k))
			L->oom = true;
		if (gather && zero3_before(L, i, -1, lo, hi, &started, b, pend, n_pend, every))
			n_pend = 0;
		double bwd_s = L->e->ops[i].compute_backward_s;
		compute(L, i, split ? bwd_s - plan_weight_grad_s(p->graph, i, bwd_s) : bwd_s);
		int cs = L->n - 1;
		L->bwd_step[i] = cs;
		double hidden = L->pend_bwd[i];
		L->pend_bwd[i] = 0;
		/* a ring passes its blocks around again in the backward, under
		 * half of its share of the compute, the gradients' under the
		 * other half (estimate.c's ring_overlap); the compute step keeps
		 * what no collective took */
		L->suffix = " (backward ring)";
		for (int j = start[i]; j < start[i + 1]; j++) {
			const struct plan_edge *x = &p->edges[idx[j]];
			if (x->ring > 1) {
				plan_colls_forward(x->redist.steps, x->redist.n_steps, &k);
				hidden += ring_overlap(L, x, L->e->ops[i].compute_backward_s / 2);
			}
		}
		for (int j = 0; j < nb; j++)
			if (b[j].last_op == i) {
				if (gather)
					pend[n_pend++] = j;
				else
					bucket_step(L, &b[j], j, 1, L->bwd_step[i], every);
			}
		L->suffix = " (input gradient)";
		int before = L->n;
		if (!plan_colls_input_grads(p->graph, d, L->fused[i], &k))
			L->oom = true;
		if (L->grad_hiders && L->grad_hiders[i] >= 0 && L->n > before)
			hide_share(L, &p->edges[L->grad_hiders[i]], true, i, lo, hi);
		L->suffix = " (backward redistribution)";
		for (int j = start[i + 1] - 1; j >= start[i]; j--) {
			const struct plan_edge *x = &p->edges[idx[j]];
			edge_route(L, x);
			if (x->redist.n_steps > 0 &&
			    !plan_colls_backward(x->redist.steps, x->redist.n_steps,
			                         plan_edge_start(p, x), &k))
				L->oom = true;
			edge_route_end(L);
			hidden += ring_overlap(L, x, L->e->ops[i].compute_backward_s / 2);
			hide_share(L, x, true, i, lo, hi);
		}
		if (hidden > 0 && cs >= 0 && L->steps[cs].kind == PROG_COMPUTE)
			L->steps[cs].seconds -= hidden;
	}
	/* ZeRO-3: the last reduce-scatters before the gradient goes back */
	for (int j = 0; j < n_pend; j++)
		bucket_step(L, &b[pend[j]], pend[j], 1, L->n - 1, every);
	if (gather && (n_pend > 0 || started))
		wait_comm(L, "wait for the gradients' reduce-scatters (ZeRO-3)");
}

/* A zero-bubble schedule's weight pass of ops [lo, hi) (W): in reverse,
 * each op's weight-gradient compute (plan_weight_grad_s) and the gradient
 * buckets it completes, on stream 1 right after it. */
static void weight_pass(struct lower *L, int lo, int hi, const struct plan_bucket *b, int nb)
{
	const struct training *tr = &L->p->scenario->training;
	bool every = tr->zero_stage >= 2;
	if (buckets_in_tail(tr))
		nb = 0;
	for (int i = hi - 1; i >= lo; i--) {
		double w = plan_weight_grad_s(L->p->graph, i, L->e->ops[i].compute_backward_s);
		bool closes = false;
		for (int j = 0; j < nb; j++)
			closes |= b[j].last_op == i;
		if (w <= 0 && !closes)
			continue;
		L->op = i;
		compute(L, i, w);
		int cs = L->n - 1;
		for (int j = 0; j < nb; j++)
			if (b[j].last_op == i)
				bucket_step(L, &b[j], j, 1, cs, every);
	}
}

/* An AllGather step of `bytes` over `groups` in `phase` (the current one
 * kept for the steps after it), on stream 0; NULL when out of memory. */
static struct prog_step *gather_step(struct lower *L, enum prog_phase phase,
                                     const struct rank_groups *groups, double bytes)
{
	enum prog_phase was = L->phase;
	L->phase = phase;
	struct prog_step *s = push(L);
	L->phase = was;
	if (!s)
		return NULL;
	s->kind = PROG_COLLECTIVE;
	s->op = -1;
	s->coll = STEP_ALLGATHER;
	s->groups = *groups;
	s->bytes = bytes;
	return s;
}

/* A SEND or RECV step of `bytes` on `channel` with the peers on stage
 * `peer`, in the current phase; NULL when out of memory. */
static struct prog_step *p2p_step(struct lower *L, enum prog_kind kind, double bytes,
                                  int channel, int peer)
{
	struct prog_step *s = push(L);
	if (!s)
		return NULL;
	s->kind = kind;
	s->op = -1;
	s->bytes = bytes;
	s->channel = channel;
	s->peer_stage = peer;
	return s;
}

/* A send or receive of the activations at boundary `c` (chunk c to c+1),
 * forward or their gradient backward. Nothing when both chunks are on one
 * stage. */
static void p2p(struct lower *L, enum prog_kind kind, int c, bool grad)
{
	const struct plan_part *pp = &L->e->part;
	int from = chunk_stage(L, grad ? c + 1 : c), to = chunk_stage(L, grad ? c : c + 1);
	if (from == to || pp->send_bytes[c] <= 0)
		return;
	double split = pp->send_split ? pp->send_split[c] : 1;
	enum prog_phase was = L->phase;
	L->phase = PHASE_PIPELINE;
	/* the reverse direction's boundaries are the program's P .. 2P - 2 */
	int x = L->mirror ? c + pp->n_stages : c;
	struct prog_step *s = p2p_step(L, kind, pp->send_bytes[c] / split, 2 * x + grad,
	                               kind == PROG_SEND ? to : from);
	L->phase = was;
	if (!s)
		return;
	s->label = arena_printf(L->a, "%s %s %s chunk %d", kind == PROG_SEND ? "send" : "receive",
	                        grad ? "gradient" : "activations", kind == PROG_SEND ? "to" : "from",
	                        grad == (kind == PROG_SEND) ? x : x + 1);
	if (!s->label)
		L->oom = true;
	if (kind != PROG_RECV || split <= 1)
		return;
	/* Megatron's scatter/gather: each copy's holder sent its part; the
	 * receivers put the tensor together over the copies' group */
	struct prog_step *g = gather_step(L, PHASE_PIPELINE, &pp->send_groups[c], pp->send_bytes[c]);
	if (!g)
		return;
	g->label = arena_printf(L->a, "gather %s from chunk %d", grad ? "gradient" : "activations",
	                        grad ? x + 1 : x);
	if (!g->label)
		L->oom = true;
}

/* The all-gather of bucket k's updated parameters (ZeRO 1, 2): stream 0
 * in the stage's tail, or stream 1 handed over in the first micro-batch's
 * forward (training.overlap_param_gather). */
static void param_gather(struct lower *L, const struct plan_bucket *b, int k, bool overlapped)
{
	struct prog_step *s = gather_step(L, PHASE_PARAMS, b->groups,
	                                  cost_bucket_gather_bytes(L->p->graph,
	                                                           &L->p->scenario->training, b));
	if (!s)
		return;
	s->stream = overlapped ? 1 : 0;
	s->first_micro = overlapped;
	s->label = arena_printf(L->a, "updated parameters %d AllGather (ZeRO-%d)", k,
	                        L->p->scenario->training.zero_stage);
	if (!s->label)
		L->oom = true;
}

/* Whether the updated parameters are gathered under the first forward. */
static bool gather_overlapped(const struct training *tr)
{
	return tr->overlap_param_gather && (tr->zero_stage == 1 || tr->zero_stage == 2);
}

/* Chunk c's buckets, activations and stage, before its passes. */
static void chunk_setup(struct lower *L, const bool *core, int c, struct prog_chunk *out)
{
	const struct plan_part *pp = &L->e->part;
	const struct training *tr = &L->p->scenario->training;
	int lo = pp->first_op[c], hi = pp->first_op[c + 1], skip_lo, skip_hi, gskip_lo, gskip_hi;
	struct plan_bucket *b, *gb;
	/* DualPipe: a parameter the device's other chunk read first is
	 * synchronised there, once, as the estimate does; with ZeRO 2 only
	 * its updated shards' gather is (each micro-batch reduce-scatters
	 * the gradient it adds) */
	cost_chunk_bucket_skip(L->p, pp, c, &skip_lo, &skip_hi);
	cost_chunk_gather_skip(L->p, pp, c, &gskip_lo, &gskip_hi);
	int nb = plan_gradient_buckets_except(L->a, L->p, L->reads, lo, hi, skip_lo, skip_hi,
	                                      tr->gradient_bucket_bytes, &b), ng = nb;
	gb = b;
	if (nb >= 0 && (tr->zero_stage == 1 || tr->zero_stage == 2) &&
	    (gskip_lo != skip_lo || gskip_hi != skip_hi))
		ng = plan_gradient_buckets_except(L->a, L->p, L->reads, lo, hi, gskip_lo, gskip_hi,
		                                  tr->gradient_bucket_bytes, &gb);
	if (nb < 0 || ng < 0) {
		L->oom = true;
		return;
	}
	L->lo = lo;
	L->buckets[c] = b;
	L->n_buckets[c] = nb;
	L->gathers[c] = gb;
	L->n_gathers[c] = ng;
	cost_chunk_activations(L->act, pp, core, c, &out->act_bytes, &out->work_bytes);
	L->stage = chunk_stage(L, c);
	out->stage = L->stage;
}

/* The activation offload's copies (training.activation_offload_layers):
 * what the estimate finds they outlast their windows of compute
 * (est_stage.offload_forward_s, offload_backward_s; docs/cost-models.md,
 * "Activation offload"), the compute stream waiting on the copy stream at
 * the end of the chunk's forward or backward; a stage's share split
 * evenly over its chunks. The copies themselves take no link here. */
static void offload_wait(struct lower *L, int c, bool backward)
{
	const struct est_stage *es = &L->e->stages[chunk_stage(L, c)];
	double s = (backward ? es->offload_backward_s : es->offload_forward_s) /
	           (double)L->e->part.virtual_stages;
	if (!(s > 0))
		return;
	compute(L, -1, s);
	if (L->n > 0)
		L->steps[L->n - 1].label = "activation offload: copies outlasting their window";
}

/* Chunk c's forward of one micro-batch: the receive, the ops, and the
 * send on when `send`. */
static void chunk_forward(struct lower *L, const int *start, const int *idx, int c, bool send)
{
	const struct plan_part *pp = &L->e->part;
	const struct training *tr = &L->p->scenario->training;
	int lo = pp->first_op[c], hi = pp->first_op[c + 1], nb = L->n_gathers[c];
	const struct plan_bucket *b = L->gathers[c];
	L->lo = lo;
	L->stage = chunk_stage(L, c);
	L->phase = PHASE_FORWARD;
	/* Megatron's --overlap-param-gather: the gathers start with the
	 * iteration (before the activations arrive) and the chunk's first
	 * forward waits for them before handing its output on */
	bool overlapped = gather_overlapped(tr);
	for (int k = 0; overlapped && k < nb; k++)
		param_gather(L, &b[k], k, true);
	if (c > 0)
		p2p(L, PROG_RECV, c - 1, false);
	forward(L, start, idx, lo, hi, tr->zero_stage >= 3, NULL, NULL);
	offload_wait(L, c, false);
	if (overlapped && nb > 0) {
		compute(L, -1, 0);
		if (L->n > 0) {
			L->steps[L->n - 1].wait_s1 = true;
			L->steps[L->n - 1].first_micro = true;
			L->steps[L->n - 1].label = "wait for the updated parameters";
		}
	}
	if (send && c + 1 < pp->n_chunks)
		p2p(L, PROG_SEND, c, false);
}

/* Chunk c's backward of one micro-batch: the gradient's receive,
 * recomputation, the ops in reverse (only their input gradients when
 * `split`), the gradient sent back. */
static void chunk_backward(struct lower *L, const int *start, const int *idx, const bool *core,
                           int c, bool split)
{
	const struct plan_part *pp = &L->e->part;
	const struct training *tr = &L->p->scenario->training;
	int lo = pp->first_op[c], hi = pp->first_op[c + 1];
	L->lo = lo;
	L->stage = chunk_stage(L, c);
	L->phase = PHASE_BACKWARD;
	if (c + 1 < pp->n_chunks)
		p2p(L, PROG_RECV, c, true);
	/* selective recomputation redoes the attention core, which
	 * FlashAttention's backward recomputes inside its own kernel; "op"
	 * the ops its policy does not keep (cost_recomputed) */
	bool full = tr->recompute == RECOMPUTE_FULL, by_op = tr->recompute == RECOMPUTE_OP;
	if (full || by_op || (tr->recompute == RECOMPUTE_SELECTIVE && !tr->flash_attention)) {
		L->phase = PHASE_RECOMPUTE;
		/* DeepSpeed 2021 gathers again what it released (gathers_rec) */
		forward(L, start, idx, lo, hi, cost_zero3_deepspeed(tr) && full,
		        tr->recompute == RECOMPUTE_SELECTIVE ? core : NULL,
		        full || by_op ? L->recomputed : NULL);
		L->phase = PHASE_BACKWARD;
	}
	backward(L, start, idx, lo, hi, tr->zero_stage >= 3, L->buckets[c], L->n_buckets[c], split);
	offload_wait(L, c, true);
	if (c > 0)
		p2p(L, PROG_SEND, c - 1, true);
}

static void lower_chunk(struct lower *L, const int *start, const int *idx, const bool *core,
                        int c, struct prog_chunk *out)
{
	const struct plan_part *pp = &L->e->part;
	const struct training *tr = &L->p->scenario->training;
	chunk_setup(L, core, c, out);
	if (L->oom)
		return;
	out->fwd = L->n;
	chunk_forward(L, start, idx, c, true);
	out->n_fwd = L->n - out->fwd;
	out->bwd = L->n;
	bool split = schedule_splits_backward(tr->schedule);
	chunk_backward(L, start, idx, core, c, split);
	out->n_bwd = L->n - out->bwd;
	out->wgt = L->n;
	if (split)
		weight_pass(L, pp->first_op[c], pp->first_op[c + 1], L->buckets[c], L->n_buckets[c]);
	out->n_wgt = L->n - out->wgt;
}

/* ------------------------------------------------------------ DualPipe */

/* An F&B: the forward steps [f0, f1) of one chunk and the backward steps
 * [b0, b1) of another on the stage run together. Their compute adds; each
 * op's own collectives and the redistributions into it (its estimated
 * seconds, est_op comm_forward_s, comm_backward_s) run alongside the other
 * pass's compute, as far as that compute lasts: the share is the
 * collective's overlap_s (spread over the op's collectives by bytes) and
 * is taken off the other pass's compute steps. DualPipe's (DeepSeek-V3,
 * section 3.2.1) overlaps them all; Megatron-Core's combined 1F1B (`moe`)
 * the MoE dispatches and combines only (est_op moe_forward_s,
 * moe_backward_s), the rest running on the compute stream. */
static bool ov_coll(const struct prog_step *s, bool moe)
{
	return s->kind == PROG_COLLECTIVE && s->stream == 0 && (!moe || s->moe);
}

static double ov_hide(struct lower *L, int from, int to, bool backward, double budget, bool moe)
{
	const struct est_op *o = L->e->ops;
	double hidden = 0;
	for (int i = from; i < to && budget - hidden > 0;) {
		int op = L->steps[i].op, j = i;
		double bytes = 0;
		for (; j < to && L->steps[j].op == op; j++)
			if (ov_coll(&L->steps[j], moe))
				bytes += L->steps[j].bytes;
		double talk = op < 0 ? 0
		              : moe ? (backward ? o[op].moe_backward_s : o[op].moe_forward_s)
		              : backward ? o[op].comm_backward_s +
		                               (L->recomputed[op] ? o[op].comm_forward_s : 0)
		                         : o[op].comm_forward_s;
		double h = fmin(talk, budget - hidden);
		for (int k = i; h > 0 && bytes > 0 && k < j; k++)
			if (ov_coll(&L->steps[k], moe))
				L->steps[k].overlap_s += h * L->steps[k].bytes / bytes;
		hidden += h > 0 && bytes > 0 ? h : 0;
		i = j;
	}
	return hidden;
}

/* A compute step that can run beside the other pass's collectives: any
 * of DualPipe's; of Megatron-Core's combined 1F1B (`moe`), a transformer
 * layer's only, since it pairs the two passes layer by layer and runs the
 * embedding, the output layer and the loss apart (model_chunk_schedule_
 * plan.py: pre- and post-process nodes outside TransformerLayerSchedulePlan.run). */
static bool ov_step(const struct lower *L, const struct prog_step *st, bool moe)
{
	return st->kind == PROG_COMPUTE && st->stream == 0 &&
	       (!moe || (st->op >= 0 && graph_op_layer(&L->p->graph->ops[st->op]) >= 0));
}

/* A compute step's device time: its seconds less its op's host wait
 * (est_op host_forward_s, host_backward_s), which hides nothing. */
static double ov_device_s(const struct lower *L, const struct prog_step *st)
{
	const struct est_op *o = st->op >= 0 ? &L->e->ops[st->op] : NULL;
	double host = !o ? 0 : st->phase == PHASE_BACKWARD ? o->host_backward_s : o->host_forward_s;
	return fmax(0, st->seconds - host);
}

static double ov_compute(const struct lower *L, int from, int to, bool moe)
{
	double s = 0;
	for (int i = from; i < to; i++)
		if (ov_step(L, &L->steps[i], moe))
			s += ov_device_s(L, &L->steps[i]);
	return s;
}

static void ov_take(struct lower *L, int from, int to, double seconds, bool moe)
{
	for (int i = from; i < to && seconds > 0; i++)
		if (ov_step(L, &L->steps[i], moe)) {
			double t = fmin(ov_device_s(L, &L->steps[i]), seconds);
			L->steps[i].seconds -= t;
			seconds -= t;
		}
}

static void fb_overlap(struct lower *L, int f0, int f1, int b0, int b1, bool moe)
{
	double cf = ov_compute(L, f0, f1, moe), cb = ov_compute(L, b0, b1, moe);
	ov_take(L, b0, b1, ov_hide(L, f0, f1, false, cb, moe), moe);
	ov_take(L, f0, f1, ov_hide(L, b0, b1, true, cf, moe), moe);
}

/* Megatron-Core's combined 1F1B (plan_combined_schedule): each chunk's
 * forward with its send and its backward with its own, lowered again
 * overlapped with each other (fb_overlap, the MoE all-to-alls only) for
 * the F&B slots, which pair a forward with another micro-batch's
 * backward of the same or another chunk on the stage: a chunk's
 * all-to-alls are hidden under its own other pass's compute, as much as
 * the paired chunk's when the stage's chunks are alike (the estimate
 * pairs the stage's sums, estimate.c combined_hidden). The forward's
 * activations are sent when it ends, before the backward beside it
 * (Megatron-Core sends them after the F&B). */
static void lower_combined(struct lower *L, const int *start, const int *idx, const bool *core,
                           int c, struct prog_chunk *x)
{
	x->ov_fwd = L->n;
	chunk_forward(L, start, idx, c, true);
	x->n_ov_fwd = L->n - x->ov_fwd;
	x->ov_bwd = L->n;
	chunk_backward(L, start, idx, core, c, false);
	x->n_ov_bwd = L->n - x->ov_bwd;
	if (!L->oom)
		fb_overlap(L, x->ov_fwd, x->ov_fwd + x->n_ov_fwd, x->ov_bwd, x->ov_bwd + x->n_ov_bwd,
		           true);
}

/* The program chunk of model chunk c in direction `mirror`, and the
 * other chunk on its stage (plan_dualpipe_schedule's numbering). */
static int dual_chunk(int P, int c, bool mirror)
{
	return mirror ? P + c : c;
}

static int dual_pair(int P, int x)
{
	int st = x < P ? x : 2 * P - 1 - x;
	return x < P ? 2 * P - 1 - st : st;
}

/* DualPipe's program: chunks 0 .. P-1 the forward direction's (as a
 * plain pipeline's), P .. 2P-1 the reverse direction's copy of model
 * chunks 0 .. P-1 on stages P-1 .. 0; each a split backward and its W
 * (the zero-bubble steps), a whole backward, and the overlapped passes
 * of the F&B slots (fb_overlap). */
static void lower_dual(struct lower *L, const int *start, const int *idx, const bool *core,
                       struct prog_chunk *out)
{
	int P = L->e->part.n_stages;
	for (int d = 0; d < 2 && !L->oom; d++) {
		L->mirror = d;
		for (int c = 0; c < P && !L->oom; c++) {
			struct prog_chunk *x = &out[dual_chunk(P, c, d)];
			lower_chunk(L, start, idx, core, c, x);
			x->pair = dual_pair(P, dual_chunk(P, c, d));
			x->whole = L->n;
			chunk_backward(L, start, idx, core, c, false);
			x->n_whole = L->n - x->whole;
			x->ov_fwd = L->n;
			chunk_forward(L, start, idx, c, false);
			x->n_ov_fwd = L->n - x->ov_fwd;
		}
	}
	/* the backward of an F&B, then the sends of both its passes */
	for (int x = 0; x < 2 * P && !L->oom; x++) {
		struct prog_chunk *y = &out[x];
		const struct prog_chunk *f = &out[y->pair];
		int fc = y->pair < P ? y->pair : y->pair - P;
		L->mirror = x >= P;
		y->ov_bwd = L->n;
		chunk_backward(L, start, idx, core, x < P ? x : x - P, false);
		int end = L->n;
		L->mirror = y->pair >= P;
		L->stage = y->stage;
		if (fc + 1 < P)
			p2p(L, PROG_SEND, fc, false);
		y->n_ov_bwd = L->n - y->ov_bwd;
		if (!L->oom)
			fb_overlap(L, f->ov_fwd, f->ov_fwd + f->n_ov_fwd, y->ov_bwd, end, false);
	}
	L->mirror = false;
}

/* The x-th model chunk of stage st: DualPipe's own (x = 0) and mirror's
 * (x = 1), else part_chunk's. */
static int stage_chunk(const struct lower *L, int st, int x)
{
	const struct plan_part *pp = &L->e->part;
	if (L->p->scenario->training.schedule == SCHED_DUALPIPE)
		return x ? pp->n_stages - 1 - st : st;
	return part_chunk(pp, st, x);
}

/* DualPipe's copies of a model chunk on stage d and stage P-1-d: after
 * each synchronised its gradients over its data-parallel group, the two
 * exchange them (a two-member all-reduce: the bytes once each way) and
 * add, as deepseek-ai/DualPipe's examples/example_dualpipe.py adds each
 * module's gradient and its mirror rank's before comparing them with the
 * reference; a stage sends its mirror both its chunks' gradients at once,
 * the bytes the estimate prices (est_stage.mirror_bytes: the two chunks'
 * cost_chunk_grad_bytes, a parameter both read counted once). */
static void mirror_exchange(struct lower *L, int st)
{
	int P = L->e->part.n_stages, peer = P - 1 - st;
	double bytes = L->e->stages[st].mirror_bytes;
	if (bytes <= 0)
		return;
	L->phase = PHASE_GRADIENT;
	for (int k = 0; k < 2; k++) {
		struct prog_step *s = p2p_step(L, k ? PROG_RECV : PROG_SEND, bytes,
		                               prog_mirror_channel(L->n_prog, P, k ? st : peer), peer);
		if (!s)
			return;
		s->label = arena_printf(L->a, "%s the mirror copies' gradients %s stage %d",
		                        k ? "receive" : "send", k ? "from" : "to", peer);
		if (!s->label)
			L->oom = true;
	}
}

/* A send or receive of shared parameters' gradients (estimate.c's
 * tied_params) to or from the peers on stage `peer`. None where the
 * sharing stages are on the same devices (DualPipe's first and last:
 * tied_bytes 0, tied_local_bytes the gradient kept as one). */
static void tied(struct lower *L, enum prog_kind kind, int peer, double bytes, int channel)
{
	struct prog_step *s = p2p_step(L, kind, bytes, channel, peer);
	if (!s)
		return;
	s->label = arena_printf(L->a, "%s shared parameters' gradients %s stage %d",
	                        kind == PROG_SEND ? "send" : "receive",
	                        kind == PROG_SEND ? "to" : "from", peer);
	if (!s->label)
		L->oom = true;
}

/* After a stage's schedule: the gradients of parameters it shares with
 * other stages sent round their ring, the optimizer, then (ZeRO 1, 2) the
 * updated parameters all-gathered, one per gradient bucket (DualPipe: a
 * parameter both chunks read once, with the first chunk's). */
static void lower_tail(struct lower *L, int st, struct prog_stage *out)
{
	const struct plan_part *pp = &L->e->part;
	const struct training *tr = &L->p->scenario->training;
	const struct est_stage *es = &L->e->stages[st];
	L->stage = st;
	out->tail = L->n;
	if (es->tied_bytes > 0) {
		L->phase = PHASE_GRADIENT;
		tied(L, PROG_SEND, es->tied_next, es->tied_bytes,
		     prog_tied_channel(L->n_prog, es->tied_next));
		tied(L, PROG_RECV, es->tied_prev, L->e->stages[es->tied_prev].tied_bytes,
		     prog_tied_channel(L->n_prog, st));
	}
	/* Without overlap (Megatron-LM's default, and its "local" DDP of
	 * 2021): every bucket once the whole backward is done, one after
	 * another on the compute stream, as the estimate prices them. */
	/* the stage's model chunks (DualPipe: its own and its mirror's) */
	bool dual = tr->schedule == SCHED_DUALPIPE;
	int nc = dual ? 2 : pp->virtual_stages;
	for (int x = 0; x < nc && buckets_in_tail(tr); x++) {
		int c = stage_chunk(L, st, x);
		L->phase = PHASE_GRADIENT;
		for (int k = 0; k < L->n_buckets[c]; k++)
			bucket_step(L, &L->buckets[c][k], k, 0, -1, false);
	}
	if (dual)
		mirror_exchange(L, st);
	L->phase = PHASE_OPTIMIZER;
	compute(L, -1, es->optimizer_s);
	for (int x = 0; x < nc && (tr->zero_stage == 1 || tr->zero_stage == 2) &&
	                !gather_overlapped(tr);
	     x++)
		for (int k = 0, c = stage_chunk(L, st, x); k < L->n_gathers[c]; k++)
			param_gather(L, &L->gathers[c][k], k, false);
	out->n_tail = L->n - out->tail;
}

bool plan_lower(struct arena *a, const struct plan *p, double bucket_bytes, struct program *out,
                struct diag_list *diags)
{
	SL_ASSERT(p && p->scenario && p->graph && out);
	memset(out, 0, sizeof(*out));
	struct estimate e;
	if (!plan_estimate(a, p, &e, diags))
		return false;
	const struct plan_part *pp = &e.part;
	struct scenario *sc = arena_alloc(a, sizeof(*sc));
	struct plan *pl = arena_alloc(a, sizeof(*pl));
	if (!sc || !pl)
		goto oom;
	/* the caller's bucket size */
	*sc = *p->scenario;
	sc->training.gradient_bucket_bytes = bucket_bytes;
	*pl = *p;
	pl->scenario = sc;
	bool dual = p->scenario->training.schedule == SCHED_DUALPIPE;
	struct lower L = {.a = a, .p = pl, .e = &e, .n_prog = dual ? 2 * pp->n_stages : pp->n_chunks};
	int *idx = NULL, *start = edges_by_consumer(&L, &idx);
	bool *core = plan_attention_core(a, p->graph);
	L.bwd_step = arena_calloc(a, (size_t)p->graph->n_ops + 1, sizeof(int));
	L.fwd_step = arena_calloc(a, (size_t)p->graph->n_ops + 1, sizeof(int));
	L.pend_fwd = arena_calloc(a, (size_t)p->graph->n_ops + 1, sizeof(double));
	L.pend_bwd = arena_calloc(a, (size_t)p->graph->n_ops + 1, sizeof(double));
	bool hiders_oom = false;
	L.grad_hiders = plan_grad_hiders(a, p, &hiders_oom);
	L.fused = plan_fused_input_grads(a, p);
	L.reads = plan_param_reads(a, p->graph);
	L.act = cost_act_scratch_new(a, pl);
	L.recomputed = cost_recomputed(a, pl, pp);
	out->chunks = arena_calloc(a, (size_t)L.n_prog + 1, sizeof(*out->chunks));
	out->stages = arena_calloc(a, (size_t)pp->n_stages + 1, sizeof(*out->stages));
	L.buckets = arena_calloc(a, (size_t)pp->n_chunks + 1, sizeof(*L.buckets));
	L.n_buckets = arena_calloc(a, (size_t)pp->n_chunks + 1, sizeof(int));
	L.gathers = arena_calloc(a, (size_t)pp->n_chunks + 1, sizeof(*L.gathers));
	L.n_gathers = arena_calloc(a, (size_t)pp->n_chunks + 1, sizeof(int));
	if (!start || !core || !L.bwd_step || !L.fwd_step || !L.pend_fwd || !L.pend_bwd || hiders_oom ||
	    !L.fused || !L.reads || !L.act || !L.recomputed || !out->chunks || !out->stages ||
	    !L.buckets || !L.n_buckets || !L.gathers || !L.n_gathers)
		goto oom;
	if (dual)
		lower_dual(&L, start, idx, core, out->chunks);
	bool combined = p->scenario->training.moe_a2a_overlap && !dual;
	for (int c = 0; c < pp->n_chunks && !L.oom && !dual; c++) {
		lower_chunk(&L, start, idx, core, c, &out->chunks[c]);
		if (combined && !L.oom)
			lower_combined(&L, start, idx, core, c, &out->chunks[c]);
	}
	for (int st = 0; st < pp->n_stages && !L.oom; st++) {
		lower_tail(&L, st, &out->stages[st]);
		out->stages[st].mem_base_bytes = e.stages[st].mem.total - e.stages[st].mem.activations;
		out->stages[st].n_slots =
		        dual ? plan_dualpipe_schedule(a, pp->n_stages, e.steps_per_iteration, st,
		                                      &out->stages[st].slots)
		             : combined ? plan_combined_schedule(a, pp, e.steps_per_iteration, st,
		                                                 &out->stages[st].slots)
		             : plan_schedule(a, pp, e.steps_per_iteration,
		                             p->scenario->training.schedule, st, &out->stages[st].slots);
		if (out->stages[st].n_slots < 0)
			goto oom;
	}
	if (L.oom)
		goto oom;
	out->n_stages = pp->n_stages;
	out->n_chunks = L.n_prog;
	out->stage_ranks = pp->stage_ranks;
	out->n_ranks = pp->stage_ranks * pp->n_stages;
	out->micro_batches = e.steps_per_iteration;
	out->n_steps = L.n;
	out->steps = L.steps;
	out->bucket_bytes = bucket_bytes;
	out->combined = combined;
	return true;
oom:
	diag_add(diags, DIAG_ERROR, p->scenario->file, 0, NULL, "out of memory lowering the plan");
	return false;
}
