/* plan.c — a distributed op for every op of a scenario's graph, and the
 * redistribution on every edge whose two ends disagree.
 *
 * Configured ops take their shard() strategy; the others are data parallel
 * (MindSpore's default, seed 004) until a planner chooses better. An edge
 * runs from the layout its producer hands on to the layout its consumer
 * reads. In MindSpore-compatible mode a producer with partial sums
 * completes them itself (AllReduce) and the edge starts from the complete
 * tensor, as seed 000's IR shows; in fused mode the edge starts from the
 * partial sums when the producer has a single consumer, so the completion
 * can be a ReduceScatter where the consumer splits the tensor. Either way
 * every edge records what fusing would save.
 *
 * Graph inputs and parameters have no producer: they are loaded in the
 * layout their consumer reads, so they start no edge.
 *
 * Units: bytes per device (double). No hot path: one pass over the ops.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

int plan_output_index(const struct op *p, int t)
{
	for (int k = 0; k < p->n_out; k++)
		if (p->out[k] == t)
			return k;
	SL_ASSERT(!"tensor not produced by its producer");
	return -1;
}

static double comm_bytes(const struct dist_op *d)
{
	double b = 0;
	for (int i = 0; i < d->n_comm; i++)
		b += d->comm[i].bytes_per_device;
	return b;
}

/* Do the two ends of an edge hold the same data on the same ranks? */
static bool same(const struct layout *a, const struct layout *b)
{
	return layout_same_placement(a, b);
}

/* The edge producer -> (c, j): derives the steps and the fused saving. */
static bool plan_edge(struct arena *a, struct plan *p, int c, int j, struct diag_list *diags)
{
	const struct graph *g = p->graph;
	int t = g->ops[c].in[j];
	int prod = g->tensors[t].producer;
	if (prod < 0)
		return true;
	struct dist_op *src_op = &p->ops[prod];
	int k = plan_output_index(&g->ops[prod], t);
	const struct layout *dst = &p->ops[c].in[j];
	const struct layout *complete = &src_op->out[k];
	const struct layout *partial = &src_op->out_partial[k];
	/* Fusable: the producer's own communication only completes the partial
	 * sums (no out_strategy of its own) and nobody else reads them. */
	struct layout completed = *partial;
	completed.partial = 0;
	bool fusable = partial->partial && g->tensors[t].n_consumers == 1 &&
	               same(&completed, complete);
	bool fused = fusable && p->mode == REDIST_FUSED;
	const struct layout *src = fused ? partial : complete;
	if (!fused && same(src, dst) && !fusable)
		return true;

	struct plan_edge e = {.tensor = t,
	                      .producer = prod,
	                      .producer_out = k,
	                      .consumer = c,
	                      .consumer_in = j};
	if (!same(src, dst) && !redist_derive(a, src, dst, &e.redist, diags))
		return false;
	if (fusable) {
		struct redist other;
		if (!redist_derive(a, fused ? complete : partial, dst, &other, diags))
			return false;
		double compat = fused ? comm_bytes(src_op) + other.bytes_per_device
		                      : comm_bytes(src_op) + e.redist.bytes_per_device;
		double fusedb = fused ? e.redist.bytes_per_device : other.bytes_per_device;
		e.fused_saving_bytes = compat > fusedb ? compat - fusedb : 0;
	}
	if (fused)
		src_op->n_comm = 0; /* the edge completes the partial sums */
	if (e.redist.n_steps == 0 && e.fused_saving_bytes == 0)
		return true;
	p->edges[p->n_edges++] = e; /* room for every input: plan_derive_edges */
	return true;
}

struct plan *plan_configured(struct arena *a, const struct scenario *s, enum redist_mode mode,
                             struct diag_list *diags)
{
	const struct graph *g = s->graph;
	struct plan *p = arena_calloc(a, 1, sizeof(*p));
	if (!p)
		return NULL;
	p->scenario = s;
	p->graph = g;
	p->mode = mode;
	p->n_devices = s->devices / s->training.pipeline_stages;
	p->ops = arena_calloc(a, (size_t)(g->n_ops ? g->n_ops : 1), sizeof(*p->ops));
	if (!p->ops)
		return NULL;
	size_t errors = diags->errors;
	for (int i = 0; i < g->n_ops; i++) {
		const struct shard_config *cfg = scenario_shard_for(s, i);
		if (cfg)
			dist_op_from_config(a, g, i, cfg, p->n_devices, &p->ops[i], diags);
		else
			dist_op_data_parallel(a, g, i, p->n_devices, &p->ops[i], diags);
	}
	if (diags->errors > errors || !plan_derive_edges(a, p, diags))
		return NULL;
	return p;
}

bool plan_derive_edges(struct arena *a, struct plan *p, struct diag_list *diags)
{
	/* At most one edge per op input: one allocation, not one per edge. */
	size_t inputs = 1;
	for (int c = 0; c < p->graph->n_ops; c++)
		inputs += (size_t)p->graph->ops[c].n_in;
	p->n_edges = 0;
	p->edges = arena_alloc(a, inputs * sizeof(*p->edges));
	if (!p->edges) {
		diag_add(diags, DIAG_ERROR, p->scenario->file, 0, NULL,
		         "out of memory deriving the plan's edges");
		return false;
	}
	for (int c = 0; c < p->graph->n_ops; c++)
		for (int j = 0; j < p->graph->ops[c].n_in; j++)
			if (!plan_edge(a, p, c, j, diags))
				return false;
	plan_find_alike(a, p); /* out of memory leaves it NULL: slower, not wrong */
	return true;
}

/* ------------------------------------------------------------ ops alike */

static void words_layout(struct word_buf *k, const struct layout *l)
{
	int64_t *w = word_buf_room(k, LAYOUT_KEY_WORDS);
	if (w)
		k->n += (size_t)layout_key(l, w);
}

static void words_steps(struct word_buf *k, const struct comm_step *st, int n)
{
	word_buf_add(k, n);
	for (int i = 0; i < n; i++) {
		const struct rank_groups *g = &st[i].groups;
		word_buf_add(k, st[i].kind);
		word_buf_add(k, st[i].reduce);
		word_buf_add(k, st[i].dim);
		word_buf_add(k, st[i].to_dim);
		word_buf_add(k, st[i].concat);
		word_buf_add(k, util_double_bits(st[i].bytes_per_device));
		word_buf_add(k, g->n_groups);
		word_buf_add(k, g->size);
		word_buf_add(k, g->n_axes);
		for (int x = 0; x < g->n_axes; x++)
			word_buf_add(k, g->axes[x]);
		word_buf_add(k, g->dm.n);
		for (int x = 0; x < g->dm.n; x++)
			word_buf_add(k, g->dm.size[x]);
		word_buf_add(k, g->dm.base);
		words_layout(k, &st[i].after);
	}
}

/* Op c's words: the graph's, its distributed op's, and per input whether
 * it has a producer, how many read the tensor, and the redistribution of
 * its edge (edge_of: index into p->edges, or -1), whose start layout is
 * all the consumer sees of the producer. */
int *plan_grad_hiders(struct arena *a, const struct plan *p, bool *oom)
{
	int *h = NULL;
	for (int e = 0; e < p->n_edges; e++) {
		const struct plan_edge *x = &p->edges[e];
		if (x->n_hide == 0 || x->redist.steps[0].kind != STEP_ALLGATHER ||
		    x->hide[0] == x->consumer)
			continue; /* only a gather before a norm the MatMuls read */
		if (!h) {
			h = arena_alloc_raw(a, ((size_t)p->graph->n_ops + 1) * sizeof(int));
			if (!h) {
				*oom = true;
				return NULL;
			}
			for (int i = 0; i < p->graph->n_ops; i++)
				h[i] = -1;
		}
		h[x->hide[0]] = e;
	}
	return h;
}

static void op_words(const struct plan *p, int c, const int *edge_of, const int *hiders,
                     struct word_buf *k)
{
	const struct graph *g = p->graph;
	const struct dist_op *d = &p->ops[c];
	k->n = 0;
	int64_t *w = word_buf_room(k, GRAPH_OP_KEY_WORDS);
	int n = w ? graph_op_key(g, c, w, GRAPH_OP_KEY_WORDS) : -1;
	if (n < 0 || n > GRAPH_OP_KEY_WORDS)
		return; /* no room (oom), or no key: the op stands alone */
	k->n = (size_t)n;
	word_buf_add(k, util_double_bits(d->flops_per_rank));
	word_buf_add(k, util_double_bits(d->bytes_per_rank));
	word_buf_add(k, d->n_in);
	word_buf_add(k, d->n_out);
	for (int i = 0; i < d->n_in; i++)
		words_layout(k, &d->in[i]);
	for (int j = 0; j < d->n_out; j++) {
		words_layout(k, &d->out_partial[j]);
		words_layout(k, &d->out[j]);
	}
	words_steps(k, d->comm, d->n_comm);
	words_steps(k, d->grad, d->n_grad);
	for (int j = 0; j < g->ops[c].n_in; j++) {
		const struct tensor *t = &g->tensors[g->ops[c].in[j]];
		word_buf_add(k, t->producer < 0);
		word_buf_add(k, t->n_consumers);
		int e = edge_of[j];
		if (e < 0) {
			word_buf_add(k, -1);
			continue;
		}
		const struct plan_edge *x = &p->edges[e];
		word_buf_add(k, util_double_bits(x->fused_saving_bytes));
		word_buf_add(k, x->ring);
		word_buf_add(k, x->n_hide);
		/* the ops hiding its collectives set what stays exposed */
		for (int h = 0; h < x->n_hide; h++) {
			const struct dist_op *o = &p->ops[x->hide[h]];
			word_buf_add(k, util_double_bits(o->flops_per_rank));
			word_buf_add(k, util_double_bits(o->bytes_per_rank));
		}
		words_layout(k, plan_edge_start(p, x));
		words_steps(k, x->redist.steps, x->redist.n_steps);
	}
	/* its input gradient's all-reduce under the GEMMs of an edge's hiders */
	const struct plan_edge *x = hiders && hiders[c] >= 0 ? &p->edges[hiders[c]] : NULL;
	word_buf_add(k, x ? x->n_hide : 0);
	for (int h = 0; x && h < x->n_hide; h++)
		word_buf_add(k, util_double_bits(p->ops[x->hide[h]].flops_per_rank));
}

bool plan_find_alike(struct arena *a, struct plan *p)
{
	const struct graph *g = p->graph;
	int max_in = 1;
	for (int c = 0; c < g->n_ops; c++)
		max_in = g->ops[c].n_in > max_in ? g->ops[c].n_in : max_in;
	int *alike = arena_alloc(a, ((size_t)g->n_ops + 1) * sizeof(int));
	int *first = arena_alloc(a, ((size_t)g->n_ops + 1) * sizeof(int)); /* class -> op */
	int *edge_of = malloc((size_t)max_in * sizeof(int));
	struct word_table *t = word_table_new();
	struct word_buf k = {0};
	bool oom = false;
	const int *hiders = plan_grad_hiders(a, p, &oom);
	bool ok = alike && first && edge_of && t && !oom;
	for (int c = 0, e = 0; ok && c < g->n_ops; c++) {
		for (int j = 0; j < g->ops[c].n_in; j++)
			edge_of[j] = -1;
		for (; e < p->n_edges && p->edges[e].consumer == c; e++)
			edge_of[p->edges[e].consumer_in] = e;
		op_words(p, c, edge_of, hiders, &k);
		ok = !k.oom;
		int64_t classes = word_table_count(t);
		int64_t id = ok && k.n > 0 ? word_table_add(t, k.w, k.n) : -1;
		if (id == classes)
			first[id] = c; /* a new class, named by its first op */
		alike[c] = id >= 0 ? first[id] : c; /* no key: the op stands alone */
		ok = ok && (id >= 0 || k.n == 0);
	}
	free(edge_of);
	word_buf_free(&k);
	word_table_free(t);
	p->alike = ok ? alike : NULL;
	return ok;
}

/* Slices of an op's largest parameter input (0 when it has none); the
 * slices of a batched weight's leading dimension (the experts of a
 * mixture, [E, a, b]) are expert parallelism, into *ep, not TP. */
static int64_t param_slices(const struct plan *p, const struct dist_op *d, int64_t *ep)
{
	const struct op *op = &p->graph->ops[d->op];
	int64_t best_elems = -1, slices = 0;
	*ep = 1;
	for (int i = 0; i < d->n_in && i < op->n_in; i++) {
		const struct tensor *t = &p->graph->tensors[op->in[i]];
		if (t->role != TENSOR_PARAM || t->elems <= best_elems)
			continue;
		best_elems = t->elems;
		slices = 1;
		*ep = 1;
		for (int k = 0; k < d->in[i].rank; k++) {
			bool experts = k == 0 && op->kind == OP_BATCHMATMUL && t->rank >= 3;
			if (experts)
				*ep = layout_slices(&d->in[i], k);
			else
				slices *= layout_slices(&d->in[i], k);
		}
	}
	return slices;
}

void plan_shape(const struct plan *p, struct plan_shape *out)
{
	enum { MAX_PATTERNS = 32 };
	struct pattern {
		int64_t tp, dp, copies;
		double flops;
	} pat[MAX_PATTERNS];
	int n = 0;
	double total = 0;
	int64_t ep_most = 1;
	*out = (struct plan_shape){1, 1, 1, 1, 1, 0, false};
	/* The ops that hold weights say how the plan cuts the model: those
	 * without (attention's scores and context, element-wise ops) follow
	 * their inputs' cuts, and at long sequences the attention's FLOPs
	 * would otherwise name the pattern with no TP at all. */
	bool weighted = false;
	for (int i = 0; i < p->graph->n_ops && !weighted; i++) {
		int64_t ep;
		weighted = p->graph->ops[i].flops > 0 && p->ops[i].flops_per_rank > 0 &&
		           param_slices(p, &p->ops[i], &ep) > 0;
	}
	for (int i = 0; i < p->graph->n_ops; i++) {
		const struct op *op = &p->graph->ops[i];
		const struct dist_op *d = &p->ops[i];
		if (op->flops <= 0 || d->flops_per_rank <= 0)
			continue;
		int64_t split = llround(op->flops / d->flops_per_rank);
		split = split < 1 ? 1 : split > p->n_devices ? p->n_devices : split;
		int64_t ep;
		int64_t tp = param_slices(p, d, &ep);
		if (weighted && tp == 0)
			continue;
		tp = tp < 1 || tp > split || split % tp ? 1 : tp;
		ep_most = ep > ep_most ? ep : ep_most;
		/* the experts, named by EP, leave TP x DP to the rest: folded
		 * over the tensor-parallel ranks (EP above DP) they would read
		 * as TP 1 x DP EP */
		if (ep > 1)
			continue;
		struct pattern key = {tp, split / tp, p->n_devices / split, op->flops};
		int k = 0;
		while (k < n && (pat[k].tp != key.tp || pat[k].dp != key.dp || pat[k].copies != key.copies))
			k++;
		if (k == n && n == MAX_PATTERNS)
			k = 0;   /* more patterns than a summary can name: count them with the first */
		else if (k == n)
			pat[n++] = (struct pattern){key.tp, key.dp, key.copies, 0};
		pat[k].flops += op->flops;
		total += op->flops;
	}
	out->ep = ep_most;
	if (n == 0)
		return;
	int best = 0;
	for (int k = 1; k < n; k++)
		if (pat[k].flops > pat[best].flops)
			best = k;
	/* context parallelism cuts the tokens as data parallelism does: the
	 * scenario says how much of the split it is */
	int64_t cp = p->scenario ? p->scenario->training.context_parallel : 1;
	bool cut = cp > 1 && pat[best].dp % cp == 0;
	*out = (struct plan_shape){.tp = pat[best].tp, .cp = cut ? cp : 1,
	                           .dp = cut ? pat[best].dp / cp : pat[best].dp,
	                           .copies = pat[best].copies, .ep = ep_most,
	                           .share = pat[best].flops / total, .compute = true};
}
