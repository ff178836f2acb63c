/* pipeline.c — pipeline parallelism: the model split into chunks on
 * disjoint rank sets, and the order in which a stage runs its chunks'
 * forward and backward passes over the micro-batches (cost.h,
 * plan_partition and plan_schedule; docs/planner.md, "Pipelines").
 *
 * A chunk is a contiguous run of ops in graph order; chunk c runs on stage
 * c mod P (Megatron's interleaving: stage s holds chunks s, s+P, ...).
 * Cuts go where the fewest activation bytes cross (a transformer's layer
 * and half-layer boundaries: only the residual stream is live there); among
 * those, the cuts that make the most expensive chunk cheapest
 * (minimax partition: the least bound a greedy split meets, found by
 * bisection). Where there are not enough such positions, or they cannot
 * balance the chunks within 5% of the ideal (a loss is the cheapest cut
 * of a language model, and a useless one), the next-fewest bytes are
 * admitted too. The megatron planner's plans cut at whole layers only:
 * Megatron-LM's equal counts, or where those do not divide, the same
 * minimax over the boundaries between layers (no framework cuts inside
 * a layer); the levels are left for more chunks than layers.
 *
 * Schedules follow the published ones: GPipe (every forward, then every
 * backward, last micro-batch first), 1F1B (PipeDream-Flush: P-s-1 warm-up
 * forwards on stage s, then one forward one backward, then the cool-down
 * backwards) and Megatron-LM's interleaved 1F1B (Narayanan et al. SC21;
 * warm-up 2(P-s-1) + (v-1)P chunk forwards, all m v when that reaches
 * them, chunks visited in groups of P micro-batches: megatron/core/
 * pipeline_parallel/schedules.py, get_pp_rank_microbatches and
 * get_schedule_table, NVIDIA/Megatron-LM at commit d98e8a6), the
 * zero-bubble ones (Qi et al. 2024) and DualPipe (DeepSeek-V3, the eight
 * steps of deepseek-ai/DualPipe's dualpipe.py at commit 3da1bbe).
 *
 * Units: bytes per rank, seconds. No hot path: O(ops) for the live bytes,
 * O(levels x bisection steps x chunks x log candidates) for the partition.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cost-int.h"

/* ------------------------------------------------------- live activations */

/* live[i] for 0 < i < n_ops: bytes per rank of op outputs made before op i
 * and read at or after it. */
static double *live_bytes(struct arena *a, const struct plan *p)
{
	const struct graph *g = p->graph;
	int n = g->n_ops;
	double *diff = arena_calloc(a, (size_t)n + 2, sizeof(double));
	int *last = arena_alloc_raw(a, ((size_t)g->n_tensors + 1) * sizeof(int));
	if (!diff || !last)
		return NULL;
	for (int t = 0; t < g->n_tensors; t++)
		last[t] = -1;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < g->ops[i].n_in; j++)
			last[g->ops[i].in[j]] = i;
	for (int i = 0; i < n; i++) {
		const struct op *o = &g->ops[i];
		for (int k = 0; k < o->n_out; k++) {
			int t = o->out[k];
			if (last[t] <= i)
				continue;
			double b = layout_local_bytes(&p->ops[i].out[k]);
			diff[i + 1] += b;   /* live from the cut after op i ... */
			diff[last[t] + 1] -= b; /* ... to the cut before its last reader */
		}
	}
	double run = 0;
	for (int i = 0; i <= n; i++) {
		run += diff[i];
		diff[i] = i == 0 || i == n ? 0 : run;
	}
	return diff;
}

/* ------------------------------------------------------------ partition */

#define PART_LEVELS 32  /* cut levels (distinct live byte counts) tried at most */

/* The least value above `floor` among the live bytes of the inner cuts;
 * -1 when none. */
static double next_level(const double *live, int n, double floor)
{
	double best = -1;
	for (int i = 1; i < n; i++)
		if (live[i] > floor && (best < 0 || live[i] < best))
			best = live[i];
	return best;
}

/* The chunks of cost at most B each when every chunk runs as far as it
 * can: their starts into first[] (when not NULL) and their count, or k + 1
 * when more than k are needed. Points pt[0..np) ascending, pt[0] = 0 and
 * pt[np-1] = n; a chunk runs from a point to a later one. O(k log np). */
static int greedy(const double *prefix, const int *pt, int np, double B, int k, int *first)
{
	int x = 0, chunks = 0;
	while (x < np - 1) {
		if (chunks == k)
			return k + 1;
		int lo = x, hi = np - 1;   /* the furthest y with cost(x, y) <= B */
		while (lo < hi) {
			int mid = lo + (hi - lo + 1) / 2;
			if (prefix[pt[mid]] - prefix[pt[x]] <= B)
				lo = mid;
			else
				hi = mid - 1;
		}
		if (lo == x)
			return k + 1;      /* one step between points is dearer than B */
		if (first)
			first[chunks] = x;
		chunks++;
		x = lo;
	}
	return chunks;
}

/* Minimax split of [0, n) into k chunks at candidate positions pos[0..c)
 * (ascending, inside (0, n)); chunk starts into first[0..k]. The least
 * bound B that the greedy split meets, by bisection (feasibility grows
 * with B), to a relative 1e-12; then the greedy chunks at B, and while
 * there are fewer than k the dearest chunk that can be split is split
 * where its larger half is cheapest. */
static bool minimax(struct arena *a, const double *prefix, int n, const int *pos, int c, int k,
                    int *first)
{
	int np = c + 2;
	int *pt = arena_alloc(a, (size_t)np * sizeof(int));
	int *at = arena_alloc(a, ((size_t)k + 1) * sizeof(int));  /* chunk starts as point indices */
	if (!pt || !at)
		return false;
	pt[0] = 0;
	memcpy(pt + 1, pos, (size_t)c * sizeof(int));
	pt[np - 1] = n;
	double lo = prefix[n] / k, hi = prefix[n];
	for (int x = 0; x + 1 < np; x++) {
		double step = prefix[pt[x + 1]] - prefix[pt[x]];
		lo = step > lo ? step : lo;
	}
	if (greedy(prefix, pt, np, lo, k, NULL) <= k) {
		hi = lo;
	} else {
		for (int it = 0; it < 200 && hi - lo > 1e-12 * hi; it++) {
			double mid = lo + (hi - lo) / 2;
			if (greedy(prefix, pt, np, mid, k, NULL) <= k)
				hi = mid;
			else
				lo = mid;
		}
	}
	int m = greedy(prefix, pt, np, hi, k, at);
	SL_ASSERT(m >= 1 && m <= k);
	at[m] = np - 1;
	for (; m < k; m++) {
		int best = -1, split = -1;
		double best_cost = -1;
		for (int j = 0; j < m; j++) {
			double cost = prefix[pt[at[j + 1]]] - prefix[pt[at[j]]];
			if (at[j + 1] - at[j] < 2 || cost <= best_cost)
				continue;
			int y_best = -1;
			double half = 0;
			for (int y = at[j] + 1; y < at[j + 1]; y++) {
				double l = prefix[pt[y]] - prefix[pt[at[j]]];
				double r = prefix[pt[at[j + 1]]] - prefix[pt[y]];
				double worse = l > r ? l : r;
				if (y_best < 0 || worse < half) {
					y_best = y;
					half = worse;
				}
			}
			best = j;
			split = y_best;
			best_cost = cost;
		}
		SL_ASSERT(best >= 0);  /* np - 1 >= k segments */
		memmove(at + best + 2, at + best + 1, (size_t)(m - best) * sizeof(int));
		at[best + 1] = split;
	}
	for (int j = 0; j <= k; j++)
		first[j] = pt[at[j]];
	return true;
}

/* An attention's softmax: a Softmax whose input comes, through at most a
 * few one-input ops (scale, mask), from a BatchMatMul of two activations
 * (the scores; a router's Softmax reads a MatMul with a weight). */
static bool attention_softmax(const struct graph *g, int i)
{
	if (g->ops[i].kind != OP_SOFTMAX)
		return false;
	int t = g->ops[i].in[0];
	for (int hop = 0; hop < 4; hop++) {
		int q = g->tensors[t].producer;
		if (q < 0)
			return false;
		const struct op *o = &g->ops[q];
		if (o->kind == OP_BATCHMATMUL)
			return o->params == 0;
		/* multi-head latent attention adds its rotary scores to the
		 * others (models/generate.c): follow the first addend */
		if (o->n_in != 1 && o->kind != OP_ADD)
			return false;
		t = o->in[0];
	}
	return false;
}

/* The first op of the multi-token prediction module (the generator's
 * "mtp." ops, after the decoder's final norm, head and loss), n when the
 * graph has none: the decoder's layers are the attentions before it. */
static int decoder_end(const struct graph *g)
{
	for (int i = 0; g->gen && g->gen->mtp_layers > 0 && i < g->n_ops; i++)
		if (strncmp(g->ops[i].name, "mtp.", 4) == 0)
			return i;
	return g->n_ops;
}

/* Op x normalises (a layer's norms, the final one). */
static bool norm_at(const struct graph *g, int x)
{
	return g->ops[x].kind == OP_LAYERNORM || g->ops[x].kind == OP_RMSNORM;
}

/* The layers of chunk c (graph order) under the scenario's split, its
 * transformer layers `decoder`: Megatron-Core's embedding and loss
 * accounting (scenario_accounted_layers), the stages' layers
 * (scenario_stage_layers: the stage holding chunk c, part_stage, its
 * layers over its virtual stages), or an even share; -1 when the split
 * does not fit. */
static int64_t chunk_layers(const struct training *tr, const struct plan_part *pp, int64_t decoder,
                            int c)
{
	int64_t P = pp->n_stages, V = pp->virtual_stages;
	if (tr->embedding_in_split || tr->loss_in_split)
		return scenario_accounted_layers(decoder, P, V, tr->embedding_in_split,
		                                 tr->loss_in_split, c, NULL, 0);
	if (tr->first_stage_layers > 0 || tr->last_stage_layers > 0 || tr->stage_layers) {
		int64_t n = scenario_stage_layers(decoder, P, V, tr->first_stage_layers,
		                                  tr->last_stage_layers, tr->stage_layers,
		                                  part_stage(pp, c), NULL, 0);
		return n < 0 || n % V ? -1 : n / V;
	}
	return decoder % pp->n_chunks ? -1 : decoder / pp->n_chunks;
}

/* Megatron-LM's split (plan.whole_layers): the layers are counted by their
 * attentions; layer j starts at the last cut with the fewest live bytes
 * after layer j-1's attention and up to its own (the residual stream
 * between the previous MLP and this layer's norm). With L layers and k
 * chunks, k dividing L, chunk c starts at layer c L/k: the embedding goes
 * with the first chunk, the final norm, head and loss with the last.
 * With training.stage_layers or first_stage_layers / last_stage_layers
 * (Megatron-LM's uneven pipeline, scenario_stage_layers) each chunk holds
 * its stage's layers over the stage's chunks (pp's placement: chunk c =
 * v P + s, virtual stage v of stage s, interleaved; ZB-V's V, chunks d and
 * 2P - 1 - d on stage d); with the embedding and the loss accounted
 * (scenario_accounted_layers) the first chunk holds a layer fewer and the
 * last a layer fewer, possibly none: a last chunk of no layer starts at
 * the last cut of fewest live bytes after the last attention among those
 * before a norm (so it holds the final norm, head and loss, as
 * Megatron-Core builds them on that chunk). The layers divided are the
 * decoder's alone, in every case: a multi-token prediction module (the
 * generator's "mtp." ops and its layers numbered after the decoder's)
 * comes after them and goes with the last chunk, the last virtual stage of
 * the last stage (core_v0.13.0, megatron/core/transformer/
 * multi_token_prediction.py, get_mtp_num_layers_to_build: "we only
 * support put all of MTP layers on the last pipeline stage"; the division
 * in transformer_block.py's get_num_layers_to_build is of num_layers,
 * without mtp_num_layers). False (first untouched) when the graph has no
 * attention or the split does not fit its layers; *layers gets the
 * decoder's. */
static bool whole_layer_cuts(const struct graph *g, const struct training *tr,
                             const struct plan_part *pp, const double *live, int *first,
                             int *layers)
{
	int n = g->n_ops, L = 0, prev = 0, c = 1, k = pp->n_chunks;
	for (int i = 0; i < n; i++)
		L += attention_softmax(g, i);
	bool given = tr->first_stage_layers > 0 || tr->last_stage_layers > 0 || tr->stage_layers ||
	             tr->embedding_in_split || tr->loss_in_split;
	int64_t mtp = g->gen && g->gen->mtp_layers > 0 ? g->gen->mtp_layers : 0;
	int64_t decoder = mtp < L ? L - mtp : L;
	if (given && g->gen && g->gen->layers > 0 && g->gen->layers <= L)
		decoder = g->gen->layers;
	*layers = (int)decoder;
	if (L == 0)
		return false;
	/* the module's first op: a last chunk of no decoder layer starts
	 * before the final norm, not inside the module */
	int main_end = mtp > 0 ? decoder_end(g) : n;
	/* next: the layer chunk c starts at, the sum of the chunks' before it */
	int64_t next = 0;
	for (int i = 0, j = 0; i <= n; i++) {
		/* past the decoder's last layer: chunks of no layer after it */
		bool tail = i == n || j >= decoder;
		if (i < n && !attention_softmax(g, i))
			continue;
		while (c < k) {
			int64_t before = chunk_layers(tr, pp, decoder, c - 1);
			if (before < 0)
				return false;
			if (j != next + before)
				break;
			int at = prev + 1;
			for (int x = prev + 2; x < n && x <= i; x++)
				if (live[x] <= live[at])
					at = x;
			if (tail) {  /* before the last of the norms with the fewest bytes */
				for (int x = prev + 1, best = -1; x < main_end; x++)
					if (norm_at(g, x) && (best < 0 || live[x] <= live[best]))
						at = best = x;
			}
			if (at >= n)
				return false;
			first[c++] = at;
			next += before;
		}
		prev = i;
		j++;
	}
	if (c != k)
		return false;
	first[0] = 0;
	first[k] = n;
	return true;
}

/* Megatron's scatter/gather at the cut before op b: the largest tensor
 * made before b and read at or after it; when it is replicated over some
 * axes of the stage (and holds no partial sums), its copies split the
 * send (*split, the copies) and all-gather it over those axes (*groups).
 * False when out of memory. */
static bool send_scatter(const struct plan *p, const int *last, int b, double *split,
                         struct rank_groups *groups)
{
	const struct graph *g = p->graph;
	const struct layout *best = NULL;
	double best_bytes = 0;
	for (int i = 0; i < b; i++) {
		const struct op *o = &g->ops[i];
		for (int k = 0; k < o->n_out; k++) {
			double bytes = layout_local_bytes(&p->ops[i].out[k]);
			if (last[o->out[k]] >= b && bytes > best_bytes) {
				best = &p->ops[i].out[k];
				best_bytes = bytes;
			}
		}
	}
	*split = 1;
	if (!best || best->partial)
		return true;
	uint32_t rep = layout_replica_axes(best);
	int axes[PLAN_MAX_AXES], n = 0;
	double copies = 1;
	for (int x = 0; x < best->dm.n; x++)
		if (rep & (1u << x)) {
			axes[n++] = x;
			copies *= (double)best->dm.size[x];
		}
	if (copies <= 1)
		return true;
	if (!devmat_groups(&best->dm, axes, n, groups))
		return false;
	*split = copies;
	return true;
}

double cost_part_send_s(const struct topology *t, const struct plan_part *pp, int c, int64_t from,
                        int64_t to, enum collective_algo wanted)
{
	double bytes = pp->send_bytes[c];
	if (bytes <= 0 || from == to)  /* ZB-V's turn: both chunks on one stage */
		return 0;
	double split = pp->send_split ? pp->send_split[c] : 1;
	if (split <= 1)
		return cost_p2p_s(t, from, to, bytes);
	return cost_p2p_s(t, from, to, bytes / split) +
	       cost_groups_algo_s(t, STEP_ALLGATHER, &pp->send_groups[c], bytes, wanted);
}

/* The seconds a chunk's sends at the cut before op i take per micro-batch:
 * the activations one way, their gradient the other, between the first
 * ranks of two neighbouring stages (every boundary alike); 0 at the ends. */
static double cut_send_s(const struct plan *p, const struct plan_part *pp, int i)
{
	int n = p->graph->n_ops;
	if (i <= 0 || i >= n || pp->n_stages < 2)
		return 0;
	const struct topology *t = p->scenario->topo;
	return cost_p2p_s(t, 0, pp->stage_ranks, pp->live[i]);
}

/* The cuts between consecutive attention layers of the decoder (the op
 * with the fewest live bytes after one layer's attention and up to the
 * next one's, the later on a tie, as whole_layer_cuts picks them) into
 * pos; their count. The embedding stays before the first and the head
 * after the last; a multi-token prediction module's layers are none of
 * them (it goes with the last chunk, as whole_layer_cuts puts it). */
static int layer_boundaries(const struct graph *g, const double *live, int *pos)
{
	int n = decoder_end(g), c = 0, prev = -1;
	for (int i = 0; i < n; i++) {
		if (!attention_softmax(g, i))
			continue;
		if (prev >= 0) {
			int at = prev + 1;
			for (int x = prev + 2; x <= i; x++)
				if (live[x] <= live[at])
					at = x;
			pos[c++] = at;
		}
		prev = i;
	}
	return c;
}

bool plan_partition(struct arena *a, const struct plan *p, const double *op_cost,
                    struct plan_part *out, struct diag_list *diags)
{
	const struct scenario *s = p->scenario;
	const struct training *tr = &s->training;
	int n = p->graph->n_ops;
	memset(out, 0, sizeof(*out));
	out->n_stages = (int)tr->pipeline_stages;
	out->virtual_stages = tr->schedule == SCHED_ZB_V ? 2 : (int)tr->virtual_stages;
	out->vshape = tr->schedule == SCHED_ZB_V;
	out->n_chunks = out->n_stages * out->virtual_stages;
	out->stage_ranks = p->n_devices;
	int k = out->n_chunks;
	out->live = live_bytes(a, p);
	out->first_op = arena_calloc(a, (size_t)k + 1, sizeof(int));
	out->send_bytes = arena_calloc(a, (size_t)k + 1, sizeof(double));
	out->chunk_of = arena_calloc(a, (size_t)n + 1, sizeof(int));
	if (!out->live || !out->first_op || !out->send_bytes || !out->chunk_of)
		goto oom;
	out->live_min = next_level(out->live, n, -1);
	if (k > n) {
		diag_add(diags, DIAG_ERROR, s->file, 0, "training.pipeline_stages",
		         "%d model chunks for %d ops", k, n);
		return false;
	}
	int layers = 0;
	if (tr->n_cuts == k - 1 && k > 1) {
		for (int c = 1; c < k; c++)
			out->first_op[c] = tr->cuts[c - 1];
		out->first_op[k] = n;
	} else if (k > 1 && (p->whole_layers || tr->first_stage_layers > 0 ||
	                     tr->last_stage_layers > 0 || tr->stage_layers ||
	                     tr->embedding_in_split || tr->loss_in_split) &&
	           whole_layer_cuts(p->graph, tr, out, out->live, out->first_op, &layers)) {
		/* Megatron-LM's split, even or with the first and last stages' layers */
	} else if (k > 1) {
		double *prefix = arena_alloc(a, ((size_t)n + 1) * sizeof(double));
		int *pos = arena_alloc(a, ((size_t)n + 1) * sizeof(int));
		int *first = arena_alloc(a, ((size_t)k + 1) * sizeof(int));
		if (!prefix || !pos || !first)
			goto oom;
		/* Megatron's plans keep whole layers, as the frameworks split
		 * them (Megatron-LM; DeepSpeed's PipelineModule partitions a list
		 * of layers): the cuts between layers where the chunks' costs
		 * balance, when there are enough of them; else the levels below. */
		int nb = p->whole_layers && layers > 0 ? layer_boundaries(p->graph, out->live, pos) : 0;
		const char *how = nb >= k - 1 ? "cut between whole layers where the chunks' costs balance"
		                              : "cut where the chunks' costs balance";
		if (tr->embedding_in_split || tr->loss_in_split)
			diag_add(diags, DIAG_NOTE, s->file, 0,
			         tr->embedding_in_split ? "training.account_for_embedding_in_pipeline_split"
			                                : "training.account_for_loss_in_pipeline_split",
			         "the model's %d attention layers with the embedding and the loss counted "
			         "do not split over %d pipeline chunks as Megatron-Core would: %s",
			         layers, k, how);
		else if (tr->stage_layers)
			diag_add(diags, DIAG_NOTE, s->file, 0, "training.stage_layers",
			         "the stages' layers do not split the model's %d attention layers over "
			         "%d pipeline chunks as listed: %s", layers, k, how);
		else if (tr->first_stage_layers > 0 || tr->last_stage_layers > 0)
			diag_add(diags, DIAG_NOTE, s->file, 0, "training.first_stage_layers",
			         "the first and last stages' layers do not split the model's %d "
			         "attention layers over %d pipeline chunks as Megatron-LM would: %s",
			         layers, k, how);
		if (p->whole_layers && layers > 0)
			diag_add(diags, DIAG_NOTE, s->file, 0, "training.pipeline_stages",
			         "%d layers do not divide into %d pipeline chunks of whole layers, "
			         "as Megatron-LM splits them: %s", layers, k,
			         nb >= k - 1 ? how : "fewer layers than chunks: cut where the chunks' "
			                             "costs balance");
		else if (p->whole_layers)
			diag_add(diags, DIAG_NOTE, s->file, 0, "training.pipeline_stages",
			         "the model has no attention layers to split whole, as Megatron-LM does: "
			         "cut where the chunks' costs balance");
		prefix[0] = 0;
		for (int i = 0; i < n; i++)
			prefix[i + 1] = prefix[i] + op_cost[i];
		/* Cut levels from the fewest live bytes up, until one whose best
		 * split is within 5% of the ideal (a k-th of the cost, or the
		 * dearest op); of those tried, the split whose dearest chunk
		 * costs least with the sends at its cuts (a higher level buys
		 * balance with more bytes at every cut). */
		double total = prefix[n], dearest = 0, best = -1;
		for (int i = 0; i < n; i++)
			dearest = op_cost[i] > dearest ? op_cost[i] : dearest;
		double ideal = total / k > dearest ? total / k : dearest;
		if (nb >= k - 1 && !minimax(a, prefix, n, pos, nb, k, out->first_op))
			goto oom;
		int tried = 0;
		for (double level = out->live_min; nb < k - 1 && level >= 0 && tried < PART_LEVELS;
		     level = next_level(out->live, n, level)) {
			int c = 0;
			for (int i = 1; i < n; i++)
				if (out->live[i] <= level)
					pos[c++] = i;
			if (c < k - 1)
				continue;
			tried++;
			if (!minimax(a, prefix, n, pos, c, k, first))
				goto oom;
			double worst = 0, score = 0;
			for (int j = 0; j < k; j++) {
				double x = prefix[first[j + 1]] - prefix[first[j]];
				worst = x > worst ? x : worst;
				x += cut_send_s(p, out, first[j]) + cut_send_s(p, out, first[j + 1]);
				score = x > score ? x : score;
			}
			if (best < 0 || score < best) {
				best = score;
				memcpy(out->first_op, first, ((size_t)k + 1) * sizeof(int));
			}
			if (worst <= 1.05 * ideal)
				break;
		}
	} else {
		out->first_op[1] = n;
	}
	out->send_split = arena_calloc(a, (size_t)k + 1, sizeof(double));
	out->send_groups = arena_calloc(a, (size_t)k + 1, sizeof(struct rank_groups));
	int *last = arena_alloc_raw(a, ((size_t)p->graph->n_tensors + 1) * sizeof(int));
	if (!out->send_split || !out->send_groups || !last)
		goto oom;
	/* each tensor's last reader */
	for (int t = 0; t < p->graph->n_tensors; t++)
		last[t] = -1;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < p->graph->ops[i].n_in; j++)
			last[p->graph->ops[i].in[j]] = i;
	for (int c = 0; c < k; c++) {
		for (int i = out->first_op[c]; i < out->first_op[c + 1]; i++)
			out->chunk_of[i] = c;
		out->send_bytes[c] = c + 1 < k ? out->live[out->first_op[c + 1]] : 0;
		out->send_split[c] = 1;
		/* training.pipeline_scatter_gather false: whole copies, one a rank */
		if (c + 1 < k && !tr->whole_sends &&
		    !send_scatter(p, last, out->first_op[c + 1], &out->send_split[c], &out->send_groups[c]))
			goto oom;
	}
	return true;
oom:
	diag_add(diags, DIAG_ERROR, s->file, 0, NULL, "out of memory splitting the pipeline");
	return false;
}

/* ------------------------------------------------------------ schedules */

/* The k-th forward (or backward) unit of a stage: Megatron's interleaved
 * order runs local chunk (k mod Pv) div P (backward: counted from the
 * last chunk) on micro-batch (k div Pv) P + k mod P; with one chunk per
 * stage that is micro-batch k. */
static struct prog_slot unit(int64_t k, int P, int v, int stage, bool backward)
{
	int64_t in_group = k % ((int64_t)P * v);
	int local = (int)(in_group / P);
	if (backward)
		local = v - 1 - local;
	int64_t micro = v > 1 ? (k / ((int64_t)P * v)) * P + in_group % P : k;
	return (struct prog_slot){.chunk = local * P + stage, .micro = micro, .backward = backward};
}

double plan_weight_grad_s(const struct graph *g, int i, double backward_s)
{
	const struct op *o = &g->ops[i];
	if (o->kind != OP_MATMUL && o->kind != OP_BATCHMATMUL)
		return 0;
	for (int j = 0; j < o->n_in; j++)
		if (g->tensors[o->in[j]].role == TENSOR_PARAM)
			return backward_s / 2;
	return 0;
}

/* ZB-H1 (Qi et al., ICLR 2024, section 3.1 and figure 3; the handcrafted
 * schedule of sail-sg/zero-bubble-pipeline-parallelism): stage s of P runs
 * P-s-1 warm-up forwards (as 1F1B), then s times a forward and an
 * input-gradient backward B whose weight pass W waits, then F, B, W while
 * forwards remain, then B, W, then the s weight passes left, oldest first.
 * The W's that wait fill the drain, in which the B's now travel back
 * without their weight gradients: bubble (P-1)(T_F + T_B - T_W) when
 * T_W <= T_F, T_B, against 1F1B's (P-1)(T_F + T_B + T_W); at most P-s
 * micro-batches in flight, as 1F1B. One chunk per stage. */
static int zb_h1(struct prog_slot *s, int64_t m, int P, int stage)
{
	int n = 0;
	int64_t f = 0, b = 0, w = 0;
#define ZB_F() (s[n++] = (struct prog_slot){.chunk = stage, .micro = f++})
#define ZB_B() (s[n++] = (struct prog_slot){.chunk = stage, .micro = b++, .backward = true, .split = true})
#define ZB_W() (s[n++] = (struct prog_slot){.chunk = stage, .micro = w++, .weight = true})
	for (int k = 0; k < P - stage - 1 && f < m; k++)
		ZB_F();
	for (int k = 0; k < stage && f < m; k++) {
		ZB_F();
		ZB_B();
	}
	while (f < m) {
		ZB_F();
		ZB_B();
		ZB_W();
	}
	while (b < m) {
		ZB_B();
		ZB_W();
	}
	while (w < m)
		ZB_W();
#undef ZB_F
#undef ZB_B
#undef ZB_W
	s[n - 1].last = true;  /* the last W: where the gradient synchronisation starts */
	return n;
}

/* ZB-V and ZB-H2 (Qi et al. 2024; "Pipeline Parallelism with Controllable
 * Memory", 2024, whose schedules come from a greedy pass over the units'
 * times, as sail-sg/zero-bubble-pipeline-parallelism's v_schedule finds
 * them from measured T_F, T_B, T_W): list scheduling of every stage at
 * once. The stage that is free first takes, of the units ready then: an
 * input-gradient backward B (the lower chunk first: its micro-batch is
 * nearer its end); else a forward F while the stage holds fewer than
 * `cap` chunk activations (the higher chunk first: nearer the loss); else
 * the weight pass W whose B finished first, unless a B or an F comes
 * sooner than half of that W. With nothing ready it waits for the next
 * finish. A chunk's activations are held from its F to its
 * W. Times per chunk from pp->unit_s (the estimate's), else one unit each
 * (T_F = T_B = T_W, the papers' design point). Every unit starts after
 * its inputs finished, so the stages' orders cannot wait on each other in
 * a circle whatever the real times. ZB-V: two chunks per stage in a V,
 * cap 2P (P micro-batches of a whole stage: 1F1B's first stage); ZB-H2:
 * one chunk per stage, cap 2P - 1. Stage `stage`'s units into s[], and
 * their count. Scratch O(chunks x m), freed before returning; time
 * O(units x P). Returns -1 when out of memory. */
static int zb_greedy(struct prog_slot *s, int64_t m, const struct plan_part *pp, int cap,
                     int stage)
{
	int P = pp->n_stages, C = pp->n_chunks, v = pp->virtual_stages;
	size_t cells = (size_t)C * (size_t)m;
	double *fdone = malloc(cells * sizeof(double)), *bdone = malloc(cells * sizeof(double));
	double *t = calloc((size_t)P, sizeof(double)), *wait = malloc((size_t)P * sizeof(double));
	int64_t *cnt = calloc((size_t)C * 3, sizeof(int64_t));
	int *mem = calloc((size_t)P, sizeof(int));
	if (!fdone || !bdone || !t || !wait || !cnt || !mem) {
		free(fdone), free(bdone), free(t), free(wait), free(cnt), free(mem);
		return -1;
	}
	for (size_t i = 0; i < cells; i++)
		fdone[i] = bdone[i] = INFINITY;
	for (int d = 0; d < P; d++)
		wait[d] = -1;
	int64_t *fc = cnt, *bc = cnt + C, *wc = cnt + 2 * C;
	int64_t left = 3 * (int64_t)cells;
	int n = 0;
	bool capped = true;
	while (left > 0) {
		double now = INFINITY;
		for (int d = 0; d < P; d++)
			now = t[d] < now ? t[d] : now;
		bool any = false;
		for (int d = 0; d < P; d++) {
			if (t[d] > now)
				continue;
			int c = -1, kind = 0;  /* 0 F, 1 B, 2 W */
			double next = INFINITY;  /* the next time one of its units' inputs is done */
			for (int k = 0; k < v && c < 0; k++) {
				int x = part_chunk(pp, d, k);
				int64_t j = bc[x];
				double r = j >= m ? INFINITY
				           : x == C - 1 ? fdone[(size_t)x * m + j] : bdone[(size_t)(x + 1) * m + j];
				if (r <= now)
					c = x, kind = 1;
				else
					next = r < next ? r : next;
			}
			for (int k = v - 1; k >= 0 && c < 0 && (!capped || mem[d] < cap); k--) {
				int x = part_chunk(pp, d, k);
				int64_t j = fc[x];
				double r = j >= m ? INFINITY : x == 0 ? 0 : fdone[(size_t)(x - 1) * m + j];
				if (r <= now)
					c = x, kind = 0;
				else
					next = r < next ? r : next;
			}
			double oldest = INFINITY;
			for (int k = 0; k < v && (c < 0 || kind == 2); k++) {
				int x = part_chunk(pp, d, k);
				double r = wc[x] < bc[x] ? bdone[(size_t)x * m + wc[x]] : INFINITY;
				if (r <= now && r < oldest) {
					oldest = r;
					c = x, kind = 2;
				}
			}
			/* a W that would hold back a B or F due sooner than half of
			 * it waits for that instead (with the sends' few
			 * microseconds, the units' inputs come just after a free
			 * stage: a W taken then would delay the critical path by
			 * most of a W) */
			if (c >= 0 && kind == 2 && pp->unit_s && next - now < pp->unit_s[3 * c + 2] / 2)
				c = -1;
			if (c < 0) {
				wait[d] = next;
				continue;
			}
			any = true;
			left--;
			double dur = pp->unit_s ? pp->unit_s[3 * c + kind] : 1;
			t[d] = now + (dur > 0 ? dur : 0);
			int64_t j = (kind == 0 ? fc : kind == 1 ? bc : wc)[c]++;
			if (kind == 0) {
				fdone[(size_t)c * m + j] = t[d];
				mem[d]++;
			} else if (kind == 1) {
				bdone[(size_t)c * m + j] = t[d];
			} else {
				mem[d]--;
			}
			if (d == stage)
				s[n++] = (struct prog_slot){.chunk = c, .micro = j, .backward = kind == 1,
				                            .split = kind == 1, .weight = kind == 2};
		}
		/* a stage with nothing ready waits for its next input, or for
		 * another stage's next finish, which may make one */
		double soonest = INFINITY;
		for (int e = 0; e < P; e++)
			soonest = t[e] > now && t[e] < soonest ? t[e] : soonest;
		bool stuck = !any;
		for (int d = 0; d < P; d++) {
			if (t[d] <= now && wait[d] >= 0) {
				double x = wait[d] < soonest ? wait[d] : soonest;
				t[d] = x < INFINITY ? x : now;
				stuck = stuck && x == INFINITY;
			}
			wait[d] = -1;
		}
		/* every stage waits on a forward that the cap holds back: let
		 * one through (a guard; the caps above leave room) */
		capped = !stuck;
	}
	free(fdone), free(bdone), free(t), free(wait), free(cnt), free(mem);
	/* The last W of each chunk: where its gradient synchronisation starts. */
	bool seen[2] = {false, false};
	for (int i = n - 1; i >= 0; i--) {
		int k = s[i].chunk == part_chunk(pp, stage, 0) ? 0 : 1;
		if (s[i].weight && !seen[k])
			s[i].last = seen[k] = true;
	}
	return n;
}

/* plan_schedule's orders; `combined`: Megatron-Core's combined 1F1B
 * (plan_combined_schedule), one more warm-up forward and each steady
 * forward and backward one F&B slot. */
static int one_f_one_b(struct arena *a, const struct plan_part *pp, int64_t m,
                       enum pipeline_schedule sched, bool combined, int stage,
                       struct prog_slot **out)
{
	int P = pp->n_stages, v = pp->virtual_stages;
	int64_t total = m * v, warm;
	struct prog_slot *s = arena_calloc(a, (size_t)(3 * total) + 1, sizeof(*s));
	bool *seen = arena_calloc(a, (size_t)pp->n_chunks + 1, sizeof(bool));
	if (!s || !seen)
		return -1;
	if (sched == SCHED_ZB_H1 && v == 1) {
		*out = s;
		return zb_h1(s, m, P, stage);
	}
	if ((sched == SCHED_ZB_V && v == 2) || (sched == SCHED_ZB_H2 && v == 1)) {
		*out = s;
		return zb_greedy(s, m, pp, sched == SCHED_ZB_V ? 2 * P : 2 * P - 1, stage);
	}
	if (sched == SCHED_GPIPE && v == 1)
		warm = total;
	else if (v > 1)  /* all of them only when this reaches m v: with m = P the later
	                    stages still alternate (get_pp_rank_microbatches) */
		warm = 2 * (int64_t)(P - stage - 1) + (int64_t)(v - 1) * P;
	else
		warm = P - stage - 1;
	/* get_pp_rank_microbatches: "one extra micro-batch forward step
	 * before the 1f1b stages" (no pipeline: the first forward alone) */
	if (combined)
		warm += 1;
	if (warm > total)
		warm = total;
	int n = 0;
	/* warm-up forwards; then one forward, one backward (combined: the
	 * two one F&B slot); then the cool-down backwards. GPipe: every
	 * forward, then every backward, the last micro-batch first. */
	for (int64_t k = 0; k < warm; k++)
		s[n++] = unit(k, P, v, stage, false);
	for (int64_t k = 0; k < total - warm; k++) {
		s[n++] = unit(warm + k, P, v, stage, false);
		struct prog_slot b = unit(k, P, v, stage, true);
		if (combined) {
			s[n - 1].fb = true;
			s[n - 1].pair_chunk = b.chunk;
			s[n - 1].pair_micro = b.micro;
		} else {
			s[n++] = b;
		}
	}
	for (int64_t k = total - warm; k < total; k++)
		s[n++] = unit(sched == SCHED_GPIPE && v == 1 ? total - 1 - k : k, P, v, stage, true);
	/* The last backward of each chunk: where its once-per-iteration
	 * gradient synchronisation starts. */
	for (int i = n - 1; i >= 0; i--) {
		int done = s[i].backward ? s[i].chunk : s[i].fb ? s[i].pair_chunk : -1;
		if (done >= 0 && !seen[done])
			s[i].last = seen[done] = true;
	}
	*out = s;
	return n;
}

int plan_schedule(struct arena *a, const struct plan_part *pp, int64_t m,
                  enum pipeline_schedule sched, int stage, struct prog_slot **out)
{
	return one_f_one_b(a, pp, m, sched, false, stage, out);
}

int plan_combined_schedule(struct arena *a, const struct plan_part *pp, int64_t m, int stage,
                           struct prog_slot **out)
{
	return one_f_one_b(a, pp, m, pp->virtual_stages > 1 ? SCHED_INTERLEAVED_1F1B : SCHED_1F1B,
	                   true, stage, out);
}

/* DualPipe's order (cost.h, plan_dualpipe_schedule), the eight steps of
 * deepseek-ai/DualPipe's DualPipe.step. A stage's phase 0 is the
 * direction whose micro-batches reach it first (the forward one on the
 * first half of the stages, the reverse one on the second half); h is its
 * distance from the nearer end, H = P/2, n = m/2:
 *   1  2(H-h-1) x F0                       warm-up
 *   2  h+1 x (F0, F1)
 *   3  H-h-1 x (B1 split, W, F1)           zero bubble
 *   4  n-P+h+1 x (F0&B1, F1&B0)            the main, overlapped steps (the
 *                                          middle stages' first F0, B1 apart)
 *   5  H-h-1 x (B1, F1&B0)
 *   6  h+1 x (B1, B0)                      the later half split
 *   7  H-h-1 x (W, B0 split)
 *   8  h+1 x W
 * A split B leaves its W to a queue the W's take in order. */
struct dual_order {
	struct prog_slot *s;
	int n, chunk[2];                       /* the program chunk of each direction */
	int64_t f[2], b[2];                    /* forwards, backwards done per direction */
	struct prog_slot *queue;               /* the split B's whose W waits */
	int q_head, q_tail;
};

static void dual_f(struct dual_order *o, int dir)
{
	o->s[o->n++] = (struct prog_slot){.chunk = o->chunk[dir], .micro = o->f[dir]++};
}

static void dual_b(struct dual_order *o, int dir, bool split)
{
	struct prog_slot x = {.chunk = o->chunk[dir], .micro = o->b[dir]++, .backward = true,
	                      .split = split};
	o->s[o->n++] = x;
	if (split)
		o->queue[o->q_tail++] = (struct prog_slot){.chunk = x.chunk, .micro = x.micro,
		                                           .weight = true};
}

static void dual_w(struct dual_order *o)
{
	o->s[o->n++] = o->queue[o->q_head++];
}

static void dual_fb(struct dual_order *o, int fdir, int bdir)
{
	o->s[o->n++] = (struct prog_slot){.chunk = o->chunk[fdir], .micro = o->f[fdir]++,
	                                  .fb = true, .pair_chunk = o->chunk[bdir],
	                                  .pair_micro = o->b[bdir]++};
}

int plan_dualpipe_schedule(struct arena *a, int P, int64_t m, int stage, struct prog_slot **out)
{
	SL_ASSERT(P % 2 == 0 && m % 2 == 0 && m >= 2 * (int64_t)P);
	struct dual_order o = {.s = arena_calloc(a, 2 * (size_t)m + 1, sizeof(*o.s)),
	                       .queue = arena_calloc(a, (size_t)m + 1, sizeof(*o.queue))};
	if (!o.s || !o.queue)
		return -1;
	int H = P / 2, h = stage < P - 1 - stage ? stage : P - 1 - stage;
	int64_t n = m / 2;
	bool second = stage >= H;
	/* phase 0: the direction that reaches this stage first */
	o.chunk[second] = stage;
	o.chunk[!second] = 2 * P - 1 - stage;
	bool middle = h == H - 1;
	for (int k = 0; k < 2 * (H - h - 1); k++)
		dual_f(&o, 0);
	for (int k = 0; k < h + 1; k++) {
		dual_f(&o, 0);
		dual_f(&o, 1);
	}
	for (int k = 0; k < H - h - 1; k++) {
		dual_b(&o, 1, true);
		dual_w(&o);
		dual_f(&o, 1);
	}
	for (int64_t k = 0; k < n - P + h + 1; k++) {
		if (k == 0 && middle) {
			/* "we don't overlap these two chunks to further reduce
			 * bubble size" (dualpipe.py) */
			dual_f(&o, 0);
			dual_b(&o, 1, false);
		} else {
			dual_fb(&o, 0, 1);
		}
		dual_fb(&o, 1, 0);
	}
	for (int k = 0; k < H - h - 1; k++) {
		dual_b(&o, 1, false);
		dual_fb(&o, 1, 0);
	}
	/* the later half of these backwards split: from B1 of the middle one
	 * when h + 1 is even, else from its B0 */
	for (int k = 0; k < h + 1; k++) {
		bool from = k > (h + 1) / 2 || (k == (h + 1) / 2 && h % 2 == 1);
		dual_b(&o, 1, from);
		dual_b(&o, 0, k >= (h + 1) / 2);
	}
	for (int k = 0; k < H - h - 1; k++) {
		dual_w(&o);
		dual_b(&o, 0, true);
	}
	while (o.q_head < o.q_tail)
		dual_w(&o);
	/* Each chunk's last backward work (its last W, or its last whole B,
	 * alone or in an F&B): where its gradient synchronisation starts. */
	bool seen[2] = {false, false};
	for (int i = o.n - 1; i >= 0; i--) {
		struct prog_slot *x = &o.s[i];
		int done = x->weight || (x->backward && !x->split) ? x->chunk
		           : x->fb ? (x->chunk == o.chunk[0] ? o.chunk[1] : o.chunk[0]) : -1;
		int k = done == o.chunk[0] ? 0 : 1;
		if (done >= 0 && !seen[k])
			x->last = seen[k] = true;
	}
	*out = o.s;
	return o.n;
}
