/* test_moe_cp.c — the closed forms of expert parallelism and context
 * parallelism (planner/cost/moe_cp.c) against counts worked out by hand
 * below, line by line. */
#include <criterion/criterion.h>
#include <math.h>

#include "fixture.h"

TestSuite(moe_cp, .init = fixture_setup, .fini = fixture_teardown);

/* A small MoE layer: h = 8, expert_ffn f = 16, E = 4 routed experts,
 * top-2, one shared expert, SwiGLU experts (gate, up, down), bf16 (2
 * bytes), capacity factor 1.25. */
static const struct moe_shape small = {
	.hidden = 8, .expert_ffn = 16, .experts = 4, .top_k = 2, .shared_experts = 1,
	.gated = true, .capacity_factor = 1.25, .dtype = DT_BF16,
};

Test(moe_cp, two_layer_moe_counted_by_hand)
{
	/* A rank holds t = 6 tokens (micro-batch 2 x sequence 3); EP 2. */
	struct moe_parallel p = {.ep = 2, .etp = 1};
	struct moe_layer l;
	cr_assert(cost_moe_layer(&small, &p, 6, &l));
	/* One expert: 3 matrices of 8 x 16 = 384 parameters.
	 * Routed: 4 x 384 = 1536; shared: 384; router: 8 x 4 = 32.
	 * Total 1536 + 384 + 32 = 1952 per layer, 3904 for 2 layers. */
	cr_expect_eq(l.params_total, 1952);
	cr_expect_eq(2 * l.params_total, 3904);
	/* Active per token: 2 routed (768) + shared 384 + router 32 = 1184 per
	 * layer, 2368 for 2 layers. */
	cr_expect_eq(l.params_active, 1184);
	cr_expect_eq(2 * l.params_active, 2368);
	/* Per device: 1536 / 2 + 384 + 32 = 1184. */
	cr_expect_eq(l.params_per_device, 1184);
	/* Capacity: ceil(1.25 x 6 x 2 / 4) = ceil(3.75) = 4 slots per expert. */
	cr_expect_eq(l.capacity, 4);
	/* One AllToAll's buffer: E x C x h x 2 bytes = 4 x 4 x 8 x 2 = 256. */
	cr_expect_float_eq(l.dispatch_bytes, 256, 1e-9);
	/* Per micro-batch: 2 layers x (dispatch + combine) x (forward +
	 * backward) = 8 AllToAlls, 8 x 256 = 2048 bytes buffered per rank, of
	 * which (ep - 1) / ep = 1/2 crosses to the other rank: 1024. */
	cr_expect_float_eq(8 * l.dispatch_bytes * (p.ep - 1) / p.ep, 1024, 1e-9);
	/* The rank's 2 experts run ep x C = 8 slots each: 16 slots,
	 * 2 x 16 x 384 = 12288 FLOPs forward. */
	cr_expect_float_eq(l.expert_slots, 16, 1e-12);
	cr_expect_float_eq(l.expert_flops, 12288, 1e-9);
	/* Active (no padding): 2 x 6 tokens x 2 experts x 384 = 9216; router
	 * 2 x 6 x 32 = 384; shared 2 x 6 x 384 = 4608. */
	cr_expect_float_eq(l.active_flops, 9216, 1e-9);
	cr_expect_float_eq(l.router_flops, 384, 1e-9);
	cr_expect_float_eq(l.shared_flops, 4608, 1e-9);
	cr_expect_float_eq(l.etp_gather_bytes, 0, 1e-12);
	/* Qwen2-MoE's gate on the shared expert: an h x 1 linear, 8 more
	 * parameters in each count (replicated like the router) and
	 * 2 x 6 x 8 = 96 more router FLOPs. */
	struct moe_shape gated = small;
	gated.shared_gate = true;
	cr_assert(cost_moe_layer(&gated, &p, 6, &l));
	cr_expect_eq(l.params_total, 1960);
	cr_expect_eq(l.params_active, 1192);
	cr_expect_eq(l.params_per_device, 1192);
	cr_expect_float_eq(l.router_flops, 480, 1e-9);
}

Test(moe_cp, expert_tensor_parallelism)
{
	/* EP 2 x ETP 2 on the same layer, 6 tokens per rank. Per device:
	 * 1536 / (2 x 2) + 384 / 2 + 32 = 384 + 192 + 32 = 608. The ETP pair
	 * gathers its slots: 2 x 16 = 32, each on half the matrices
	 * (192 parameters per expert): 2 x 32 x 192 = 12288 FLOPs; the gather
	 * is 32 slots x 8 x 2 bytes = 512 bytes. */
	struct moe_parallel p = {.ep = 2, .etp = 2};
	struct moe_layer l;
	cr_assert(cost_moe_layer(&small, &p, 6, &l));
	cr_expect_eq(l.params_per_device, 608);
	cr_expect_float_eq(l.expert_slots, 32, 1e-12);
	cr_expect_float_eq(l.expert_flops, 12288, 1e-9);
	cr_expect_float_eq(l.etp_gather_bytes, 512, 1e-9);
	cr_expect_float_eq(l.shared_flops, 2304, 1e-9); /* 2 x 6 x 192 */
}

Test(moe_cp, moe_invalid_degrees)
{
	struct moe_layer l;
	struct moe_parallel p3 = {.ep = 3, .etp = 1}, e3 = {.ep = 1, .etp = 3};
	cr_expect(!cost_moe_layer(&small, &p3, 6, &l)); /* 3 does not divide E = 4 */
	cr_expect(!cost_moe_layer(&small, &e3, 6, &l)); /* 3 does not divide f = 16 */
	struct moe_shape k5 = small;
	k5.top_k = 5;                                   /* more than E */
	struct moe_parallel p = {.ep = 1, .etp = 1};
	cr_expect(!cost_moe_layer(&k5, &p, 6, &l));
}

Test(moe_cp, moe_alltoall_on_the_topology)
{
	/* The AllToAll as the topology's rule runs it. Inside an Atlas 800T A2
	 * (HCCS full mesh, 56 GB/s x 0.33 per peer link, 1 us) HCCL's direct
	 * all-to-all sends each of the 7 peers its S/8 on its own link at once:
	 * 1 us + S / (8 x 18.48 GB/s); for the 256-byte buffer of the small
	 * layer over EP 8 that is 1 us + 1.73 ns. A pairwise ring on one link
	 * would take 7 us + 7/8 S / B. */
	struct topology *t = fixture_topology(A, "atlas800t-a2-910b");
	struct moe_parallel p = {.ep = 2, .etp = 1};
	struct moe_layer l;
	cr_assert(cost_moe_layer(&small, &p, 6, &l));
	int64_t ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	double B = 56e9 * 0.33;
	cr_expect_float_eq(cost_moe_alltoall_s(t, ranks, 8, &l), 1e-6 + 256 / (8 * B), 1e-15);
}

/* Causal attention, B = 1, s = 16, 4 heads, 2 KV heads, d = 8, bf16. */
static const struct cp_attention att = {
	.batch = 1, .seq = 16, .heads = 4, .kv_heads = 2, .head_dim = 8,
	.dtype = DT_BF16, .causal = true,
};

Test(moe_cp, cp_ring_bytes_and_balance_by_hand)
{
	struct cp_layer c;
	cr_assert(cost_cp_attention(&att, 2, &c));
	/* CP 2: 8 tokens per rank; one ring step carries K and V of them:
	 * 2 x 1 x 8 x 2 KV heads x 8 x 2 bytes = 512. One step forward (512),
	 * K, V and dK, dV backward (1024), two chunks in flight (1024). */
	cr_expect_eq(c.local_seq, 8);
	cr_expect_eq(c.steps, 1);
	cr_expect_float_eq(c.kv_chunk_bytes, 512, 1e-9);
	cr_expect_float_eq(c.fwd_send_bytes, 512, 1e-9);
	cr_expect_float_eq(c.bwd_send_bytes, 1024, 1e-9);
	cr_expect_float_eq(c.kv_buffer_bytes, 1024, 1e-9);
	/* Causal pairs (key <= query); 4 chunks of 4 tokens. Rank 0 holds
	 * chunks 0 and 3: queries 0..3 see 1+2+3+4 = 10 keys, queries 12..15
	 * see 13+14+15+16 = 58: 68 pairs. Rank 1 (chunks 1, 2): 26 + 42 = 68.
	 * Each pair is QK^T and PV, 2 x 8 FLOPs each, for 4 heads:
	 * 4 x 8 x 4 = 128 FLOPs; 68 x 128 = 8704. */
	cr_expect_float_eq(c.core_flops_rank, 8704, 1e-9);
	/* Contiguous halves: rank 1's queries 8..15 see 9+...+16 = 100 keys,
	 * 12800 FLOPs, 100/68 of the average (136 pairs / 2 ranks). */
	cr_expect_float_eq(c.core_flops_max_contiguous, 12800, 1e-9);
	cr_expect_float_eq(c.imbalance, 100.0 / 68.0, 1e-12);
}

Test(moe_cp, cp_non_causal_and_invalid)
{
	struct cp_attention full = att;
	full.causal = false;
	struct cp_layer c;
	/* CP 4: 4 queries x 16 keys x 128 = 8192 FLOPs on every rank; 3 steps
	 * of K and V of 4 tokens: 2 x 4 x 2 x 8 x 2 = 256 bytes each. */
	cr_assert(cost_cp_attention(&full, 4, &c));
	cr_expect_float_eq(c.core_flops_rank, 8192, 1e-9);
	cr_expect_float_eq(c.imbalance, 1, 1e-12);
	cr_expect_float_eq(c.kv_chunk_bytes, 256, 1e-9);
	cr_expect_float_eq(c.fwd_send_bytes, 768, 1e-9);
	/* Causal CP 16 needs 32 chunks of a 16-token sequence: refused. */
	cr_expect(!cost_cp_attention(&att, 16, &c));
	cr_expect(!cost_cp_attention(&att, 0, &c));
}

Test(moe_cp, cp_ring_overlap)
{
	/* 4 GPUs of one DGX H100: every hop is NVSwitch, 1 us and 367.65 GB/s.
	 * A 1 MB chunk takes 1e-6 + 1e6 / 367.65e9 s per hop. */
	struct topology *t = fixture_topology(A, "dgx-h100");
	int64_t ranks[4] = {0, 1, 2, 3};
	double hop = 1e-6 + 1e6 / H100_NVSWITCH_BPS, exposed;
	/* No compute to hide it: 4 blocks of 0 s and 3 hops exposed. */
	cr_expect_float_eq(cost_cp_ring_s(t, ranks, 4, 1e6, 0, &exposed), 3 * hop, 1e-15);
	cr_expect_float_eq(exposed, 3 * hop, 1e-15);
	/* Blocks of 1 ms hide every hop: 4 ms, nothing exposed. */
	cr_expect_float_eq(cost_cp_ring_s(t, ranks, 4, 1e6, 1e-3, &exposed), 4e-3, 1e-15);
	cr_expect_float_eq(exposed, 0, 1e-18);
	/* Blocks of half a hop: 4 x hop/2 + 3 x hop/2. */
	cr_expect_float_eq(cost_cp_ring_s(t, ranks, 4, 1e6, hop / 2, NULL), 3.5 * hop, 1e-15);
}

/* The plans price what the closed form prices: Megatron with EP 8 on one
 * Atlas 800T A2, a 1-layer mixture (h 64, f 128, 8 experts, top-2, s 64,
 * one sequence a rank). Per rank C = ceil(64 x 2 / 8) = 16 slots, a
 * buffer S = 8 x 16 x 64 x 2 bytes = 16,384: the dispatch's AllToAll in
 * the plan holds S before it and the estimate prices it as
 * cost_moe_alltoall_s over the 8 ranks: HCCL's direct all-to-all, 1 us +
 * S / (8 x 18.48 GB/s). */
Test(moe_cp, plan_alltoall_is_the_closed_form)
{
	struct scenario *s = fixture_generated(
	    A, &D,
	    "{\"kind\": \"llama\", \"hidden\": 64, \"layers\": 1, \"heads\": 4, \"ffn\": 128,"
	    " \"seq\": 64, \"vocab\": 32, \"experts\": 8, \"top_k\": 2, \"micro_batch\": 8,"
	    " \"dtype\": \"bf16\"}",
	    "atlas800t-a2-910b", 8,
	    "{\"global_batch\": 8, \"tensor_parallel\": 1, \"expert_parallel\": 8}");
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron(A, s, &o, &D);
	cr_assert_not_null(p);
	const struct comm_step *st = NULL;
	for (int e = 0; e < p->n_edges && !st; e++)
		if (p->edges[e].redist.n_steps == 1 &&
		    p->edges[e].redist.steps[0].kind == STEP_ALLTOALL)
			st = &p->edges[e].redist.steps[0];
	cr_assert_not_null(st);
	struct moe_shape m = {.hidden = 64, .expert_ffn = 128, .experts = 8, .top_k = 2,
	                      .gated = true, .capacity_factor = 1, .dtype = DT_BF16};
	struct moe_parallel par = {.ep = 8, .etp = 1};
	struct moe_layer l;
	cr_assert(cost_moe_layer(&m, &par, 64, &l));
	cr_expect_eq(l.capacity, 16);
	cr_expect_float_eq(l.dispatch_bytes, 16384, 1e-9);
	cr_expect_float_eq(comm_step_bytes_in(st), 16384, 1e-9);
	int64_t ranks[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	double want = cost_moe_alltoall_s(s->topo, ranks, 8, &l);
	cr_expect_float_eq(want, 1e-6 + 16384 / (8 * 56e9 * 0.33), 1e-15);
	/* the group's ranks, priced by the algorithm rule */
	int64_t members[8];
	cr_assert_eq(st->groups.size, 8);
	rank_groups_members(&st->groups, 0, members);
	double got = cost_collective_algo_s(s->topo, st->kind, COLL_AUTO, members, 8,
	                                    comm_step_bytes_in(st));
	cr_expect_float_eq(got, want, 1e-15, "%.9g against %.9g", got, want);
	/* and the estimate's forward redistributions are the dispatch and the
	 * combine, one micro-batch: 2 x that */
	struct estimate est;
	cr_assert(plan_estimate(A, p, &est, &D));
	cr_expect_float_eq(est.category_s[EST_REDISTRIBUTION], 2 * want, 1e-15, "%.9g",
	                   est.category_s[EST_REDISTRIBUTION]);
}

/* A plan's CP ring: LLaMA (h 512, 8 heads of 64, s 4096, one layer) on
 * 16 H100s, TP 8 inside a server x CP 2 across two. The keys' AllGather
 * over each CP pair (a rank's [1, 1, 64, 2048] bf16 = 262,144 bytes,
 * S = 524,288 gathered) runs under (2 - 1)/2 of the scores' compute, the
 * values' under the context's: each exposes what that half of its
 * consumer does not hide, forward; backward the ring passes the blocks
 * again and their gradients' ReduceScatter, each under a quarter of the
 * backward compute (half of it, shared). */
Test(moe_cp, plan_cp_ring_hides_under_half_the_attention)
{
	struct scenario *s = fixture_generated(
	    A, &D,
	    "{\"kind\": \"llama\", \"hidden\": 512, \"layers\": 1, \"heads\": 8, \"ffn\": 1024,"
	    " \"seq\": 4096, \"vocab\": 64, \"micro_batch\": 1, \"dtype\": \"bf16\"}",
	    "dgx-h100-x64", 16,
	    "{\"global_batch\": 1, \"tensor_parallel\": 8, \"context_parallel\": 2}");
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_megatron(A, s, &o, &D);
	cr_assert_not_null(p, "%s", diag_first_error(A, &D));
	struct estimate est;
	cr_assert(plan_estimate(A, p, &est, &D));
	int rings = 0;
	for (int e = 0; e < p->n_edges; e++) {
		const struct plan_edge *x = &p->edges[e];
		if (x->ring == 0)
			continue;
		rings++;
		cr_expect_eq(x->ring, 2);
		const struct comm_step *st = &x->redist.steps[0];
		cr_expect_float_eq(comm_step_bytes_in(st), 262144, 1e-9);
		int64_t m[2];
		rank_groups_members(&st->groups, 0, m);
		cr_expect(m[0] == 0 && m[1] == 8, "a CP pair spans the two servers");
		double ag = cost_collective_algo_s(s->topo, STEP_ALLGATHER, COLL_AUTO, m, 2, 524288);
		double rs = cost_collective_algo_s(s->topo, STEP_REDUCESCATTER, COLL_AUTO, m, 2, 524288);
		const struct est_op *eo = &est.ops[x->consumer];
		double fwd = fmax(0, ag - eo->compute_forward_s / 2);
		/* the backward passes the blocks again (ag) and the gradients
		 * (rs), each under half of the backward's share */
		double bwd = fmax(0, ag - eo->compute_backward_s / 4) +
		             fmax(0, rs - eo->compute_backward_s / 4);
		cr_expect_gt(fwd, 0, "the transfer outlasts half the compute here");
		cr_expect_float_eq(eo->comm_forward_s, fwd, 1e-15, "%.9g against %.9g",
		                   eo->comm_forward_s, fwd);
		cr_expect_float_eq(eo->comm_backward_s, bwd, 1e-15, "%.9g against %.9g",
		                   eo->comm_backward_s, bwd);
	}
	cr_expect_eq(rings, 2, "the keys and the values");
}

/* HybridEP (training.moe_dispatcher "hybridep"): a token crosses to each
 * other server holding one of its experts once. E = 4 experts, k = 2, over
 * 4 ranks on two servers of 2 (one expert a rank, two a server): a token
 * misses a given server when both its picks fall on the other server's 2
 * experts, C(2,2)/C(4,2) = 1/6 of the pairs; so it crosses 5/6 of the time
 * in one copy, 5/12 of its 2 slots, where the plain dispatcher sends the
 * copy of each pick on the other server: 1/2 of its slots. */
Test(moe_cp, hybridep_share_counted_by_hand)
{
	struct topology *t = fixture_topology(A, "dgx-h100-x64");
	struct cost_ep_route ep = {.experts = 4, .copies = 2};
	int64_t ranks[4] = {0, 1, 8, 9};
	int c = 0;
	double share = 0;
	cr_assert(cost_ep_hybrid_shape(t, ranks, 4, &ep, &c, &share));
	cr_expect_eq(c, 2);
	cr_expect_float_eq(share, 5.0 / 12, 1e-12, "%.15g", share);
	/* 128 experts, top-8, 16 ranks on two servers: a server misses a token
	 * with the chance 64/128 x 63/127 x ... x 57/121 */
	ep = (struct cost_ep_route){.experts = 128, .copies = 8};
	int64_t two[16];
	for (int i = 0; i < 16; i++)
		two[i] = i;
	double miss = 1;
	for (int i = 0; i < 8; i++)
		miss *= (64.0 - i) / (128.0 - i);
	cr_assert(cost_ep_hybrid_shape(t, two, 16, &ep, &c, &share));
	cr_expect_eq(c, 8);
	cr_expect_float_eq(share, (1 - miss) / 8, 1e-12, "%.15g", share);
	/* inside one server, or not in whole-server blocks: no such shape */
	cr_expect_not(cost_ep_hybrid_shape(t, two, 8, &ep, &c, &share));
	int64_t uneven[4] = {0, 1, 2, 8};
	cr_expect_not(cost_ep_hybrid_shape(t, uneven, 4, &ep, &c, &share));
	ep.experts = 0;
	cr_expect_not(cost_ep_hybrid_shape(t, two, 16, &ep, &c, &share));
}

/* The time of a dispatch on two DGX H100 (NDR NICs: 400 Gb/s x 0.94 = 47
 * GB/s a GPU, one each; NVSwitch ports 450 GB/s x 0.817 = 367.65 GB/s, 1
 * us): Qwen3-30B-A3B's 134,217,728-byte buffer (4,096 tokens x 8 slots x
 * 2,048 x 2 bytes) over EP 16. HybridEP's two legs run at once: across,
 * (1 - miss)/8 x S = 16.7 MB at 47 GB/s, 356 us; inside, 7/8 x S at
 * 367.65 GB/s, 319 us; the slower after its latency. The plain direct
 * all-to-all also runs its legs at once, but sends half of S across (the
 * 8 other-server ranks' pieces): 1,428 us against 7/16 x S inside, 160 us. */
Test(moe_cp, hybridep_and_direct_alltoall_two_legs_at_once)
{
	struct topology *t = fixture_topology(A, "dgx-h100-x64");
	int64_t ranks[16];
	for (int i = 0; i < 16; i++)
		ranks[i] = i;
	double S = 134217728, nic = 400e9 / 8 * 0.94, nvl = 450e9 * 0.817, bps, across;
	cr_assert(topo_route(t, 0, 8, &bps, &across));
	cr_expect_float_eq(bps, nic, 1);
	double miss = 1;
	for (int i = 0; i < 8; i++)
		miss *= (64.0 - i) / (128.0 - i);
	struct cost_ep_route ep = {.experts = 128, .copies = 8};
	double want = fmax(across + (1 - miss) / 8 * S / nic, 1e-6 + 7.0 / 8 * S / nvl);
	double got = cost_ep_hybrid_s(t, ranks, 16, S, &ep);
	cr_expect_float_eq(got, want, 1e-12, "%.12g against %.12g", got, want);
	cr_expect_float_eq(got, 355.9e-6 + across, 0.1e-6, "%.9g", got);
	double plain = fmax(across, 1e-6) + fmax(8.0 / 16 * S / nic, 7.0 / 16 * S / nvl);
	double direct = cost_collective_algo_s(t, STEP_ALLTOALL, COLL_DIRECT, ranks, 16, S);
	cr_expect_float_eq(direct, plain, 1e-12, "%.12g against %.12g", direct, plain);
	/* not an edge of experts: the plain rule */
	ep.experts = 0;
	cr_expect_float_eq(cost_ep_hybrid_s(t, ranks, 16, S, &ep),
	                   cost_collective_algo_s(t, STEP_ALLTOALL, COLL_AUTO, ranks, 16, S), 1e-15);
}
