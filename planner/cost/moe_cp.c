/* moe_cp.c — the closed forms of expert parallelism (mixture-of-experts
 * layers) and context parallelism (ring attention), per layer and per
 * rank (docs/moe-cp.md).
 *
 * Expert parallelism, as GShard (Lepikhin et al. 2020) and Megatron-Core's
 * all-to-all token dispatcher do it: a router (h x E MatMul) picks k of E
 * experts per token; each rank packs its t tokens' k copies into a buffer
 * of E x C slots, C = ceil(capacity_factor · t · k / E) per expert (Switch
 * Transformer, Fedus et al. 2021: the capacity factor pads every expert to
 * that share; tokens beyond it are dropped); an AllToAll over the
 * expert-parallel group of `ep` ranks sends each rank the slots of its E/ep
 * experts (dispatch), the experts run, and a second AllToAll of the same
 * buffer brings the results back (combine). The backward repeats both.
 * Expert tensor parallelism (`etp`) cuts each expert's matrices over etp
 * ranks, column then row parallel, which gather the dispatched slots of
 * their group before the experts and reduce-scatter the results after.
 *
 * Context parallelism, as Megatron-LM's CP (ring attention in
 * TransformerEngine, Liu et al. 2023 "Ring Attention"): the sequence is
 * split over cp ranks; each attention layer passes the K and V of its
 * local tokens around the ring in cp - 1 steps, each step overlapped with
 * the attention of the block already received; the backward sends K and V
 * again and the partial dK and dV alongside (twice the forward's bytes).
 * Causal attention is balanced by cutting the sequence into 2·cp chunks
 * and giving rank r chunks r and 2cp-1-r.
 *
 * Units: elements, FLOPs (a multiply-add is 2), bytes, seconds. No hot
 * path: a handful of products per call.
 */
#include <math.h>
#include <string.h>

#include "cost-int.h"

/* a * b, false past 2^53 (doubles stop counting exactly there). */
static bool mul_fits(int64_t a, int64_t b, int64_t *out)
{
	return util_mul_i64(a, b, out) && *out <= GRAPH_MAX_ELEMENTS;
}

bool cost_moe_layer(const struct moe_shape *m, const struct moe_parallel *p, int64_t tokens,
                    struct moe_layer *out)
{
	memset(out, 0, sizeof *out);
	if (m->hidden < 1 || m->expert_ffn < 1 || m->experts < 1 || m->top_k < 1 ||
	    m->top_k > m->experts || m->shared_experts < 0 || !(m->capacity_factor > 0) ||
	    m->dtype < 0 || m->dtype >= DT_COUNT || p->ep < 1 || p->etp < 1 ||
	    m->experts % p->ep != 0 || m->expert_ffn % p->etp != 0 || tokens < 1)
		return false;
	int64_t h = m->hidden, f = m->expert_ffn, E = m->experts, k = m->top_k;
	int64_t mats = m->gated ? 3 : 2;
	int64_t one, routed, shared, router, x;
	if (!mul_fits(h, f, &one) || !mul_fits(one, mats, &one) || !mul_fits(one, E, &routed) ||
	    !mul_fits(one, m->shared_experts, &shared) || !mul_fits(h, E, &router))
		return false;
	if (m->shared_gate)
		router += h;
	out->params_total = routed + shared + router;
	out->params_active = one * k + shared + router;
	out->params_per_device = routed / (p->ep * p->etp) + shared / p->etp + router;
	/* Slots per expert in one rank's buffer. */
	double want = ceil(m->capacity_factor * (double)tokens * (double)k / (double)E);
	if (want > (double)GRAPH_MAX_ELEMENTS)
		return false;
	out->capacity = (int64_t)want;
	if (!mul_fits(out->capacity, E, &x) || !mul_fits(x, h, &x))
		return false;
	double bytes = (double)dtype_bytes(m->dtype);
	out->dispatch_bytes = (double)x * bytes;
	/* A rank runs E/ep experts on the slots of every rank of its group:
	 * ep · C slots each, E · C in all; with etp the group of etp ranks
	 * gathers its members' slots and each runs 1/etp of the matrices. */
	double slots = (double)E * (double)out->capacity;
	out->expert_slots = slots * (double)p->etp;
	out->expert_flops = 2.0 * out->expert_slots * (double)(one / p->etp);
	out->etp_gather_bytes = p->etp > 1 ? out->expert_slots * (double)h * bytes : 0;
	out->router_flops = 2.0 * (double)tokens * (double)router;
	out->shared_flops = 2.0 * (double)tokens * (double)(shared / p->etp);
	out->active_flops = 2.0 * (double)tokens * (double)(one * k);
	return true;
}

double cost_moe_alltoall_s(const struct topology *t, const int64_t *ep_ranks, int ep,
                           const struct moe_layer *l)
{
	/* the algorithm the library or the rule would run (on a full mesh
	 * every peer at once, each on its own link) */
	return cost_collective_algo_s(t, STEP_ALLTOALL, COLL_AUTO, ep_ranks, ep, l->dispatch_bytes);
}

bool cost_moe_edge(const struct graph *g, int producer, int consumer)
{
	return (producer >= 0 && g->ops[producer].kind == OP_MOEDISPATCH) ||
	       (consumer >= 0 && g->ops[consumer].kind == OP_MOECOMBINE);
}

bool cost_moe_edge_route(const struct graph *g, const struct training *t, int producer,
                         int consumer, struct cost_ep_route *out)
{
	/* the slots [E, C, h] against the tokens [T, h] */
	const struct tensor *slots, *tokens;
	out->experts = out->copies = 0;
	if (!moe_dispatch_per_server(t->moe_dispatcher) || !cost_moe_edge(g, producer, consumer)) {
		return false;
	} else if (producer >= 0 && g->ops[producer].kind == OP_MOEDISPATCH) {
		slots = &g->tensors[g->ops[producer].out[0]];
		tokens = &g->tensors[g->ops[producer].in[0]];
	} else {
		slots = &g->tensors[g->ops[consumer].in[0]];
		tokens = &g->tensors[g->ops[consumer].out[0]];
	}
	if (slots->rank != 3 || tokens->rank != 2 || tokens->dims[0] < 1)
		return false;
	out->experts = (double)slots->dims[0];
	out->copies = (double)slots->dims[0] * (double)slots->dims[1] / (double)tokens->dims[0];
	return true;
}

/* Query-key pairs (key at or before the query) of queries [q0, q0+n)
 * against every key up to them: n·q0 + n(n+1)/2. */
static double causal_pairs(double q0, double n)
{
	return n * q0 + n * (n + 1) / 2;
}

bool cost_cp_attention(const struct cp_attention *a, int64_t cp, struct cp_layer *out)
{
	memset(out, 0, sizeof *out);
	if (a->batch < 1 || a->seq < 1 || a->heads < 1 || a->kv_heads < 1 || a->head_dim < 1 ||
	    a->heads % a->kv_heads != 0 || a->dtype < 0 || a->dtype >= DT_COUNT || cp < 1)
		return false;
	int64_t split = a->causal ? 2 * cp : cp;
	if (a->seq % split != 0)
		return false;
	double B = (double)a->batch, s = (double)a->seq, d = (double)a->head_dim;
	double heads = (double)a->heads, bytes = (double)dtype_bytes(a->dtype);
	double L = s / (double)cp;
	out->local_seq = a->seq / cp;
	out->steps = cp - 1;
	/* K and V of the local tokens: 2 · B · (s/cp) · kv_heads · d. */
	out->kv_chunk_bytes = 2.0 * B * L * (double)a->kv_heads * d * bytes;
	out->fwd_send_bytes = (double)(cp - 1) * out->kv_chunk_bytes;
	out->bwd_send_bytes = 2.0 * out->fwd_send_bytes;
	out->kv_buffer_bytes = cp > 1 ? 2.0 * out->kv_chunk_bytes : 0;
	/* QK^T and PV: 2 · d FLOPs each per (query, key) pair and head. */
	double per_pair = 4.0 * d * heads * B;
	if (!a->causal) {
		out->core_flops_rank = per_pair * L * s;
		out->core_flops_max_contiguous = out->core_flops_rank;
		out->imbalance = 1;
		return true;
	}
	/* Balanced: chunks r and 2cp-1-r of size c = s/(2cp); every rank the
	 * same count, c²(2cp-1) + c(c+1). */
	double c = s / (2.0 * (double)cp);
	out->core_flops_rank = per_pair * (causal_pairs(0, c) + causal_pairs((2.0 * (double)cp - 1) * c, c));
	/* Contiguous: the last rank's queries see the whole sequence. */
	out->core_flops_max_contiguous = per_pair * causal_pairs(s - L, L);
	out->imbalance = out->core_flops_max_contiguous / (per_pair * s * (s + 1) / 2 / (double)cp);
	return true;
}

double cost_cp_ring_s(const struct topology *t, const int64_t *ranks, int cp, double chunk_bytes,
                      double block_s, double *exposed_s)
{
	/* The slowest hop of the ring sets every step's pace. */
	double hop = 0;
	for (int i = 0; i < cp && cp > 1; i++) {
		double x = cost_p2p_s(t, ranks[i], ranks[(i + 1) % cp], chunk_bytes);
		if (x > hop)
			hop = x;
	}
	/* cp blocks of attention; steps 1..cp-1 each wait for a chunk sent
	 * while the previous block computed. */
	double exposed = cp > 1 ? (double)(cp - 1) * fmax(0, hop - block_s) : 0;
	if (exposed_s)
		*exposed_s = exposed;
	return (double)cp * block_s + exposed;
}
