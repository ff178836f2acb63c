/* test_estimate.c — the symbolic cost model: collectives against the α–β
 * formulas on the shipped topologies, the compute model, and a whole estimate
 * of the Megatron MLP worked out by hand (every expected value is derived
 * in the comments from the topology files and the model's shapes, never
 * copied from the program's output).
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "planner.h"
#include "fixture.h"

#define GB 1e9
#define US 1e-6

static void near(double got, double want, const char *what)
{
	double tol = 1e-3 * fabs(want);
	cr_assert(fabs(got - want) <= tol, "%s: got %.9g, want %.9g (0.1%%)", what, got, want);
}

/* Ring formulas of docs/planner.md ("Communication") over one tier: n ranks, S bytes. */
static double ar(int n, double S, double B, double alpha)
{
	return 2.0 * (n - 1) / n * S / B + 2.0 * (n - 1) * alpha;
}

static double ag(int n, double S, double B, double alpha)
{
	return (double)(n - 1) / n * S / B + (n - 1) * alpha;
}

/* NCCL's ring all-reduce inside one NVLink server (its tuning model,
 * src/graph/tuning.cc of v2.8.3; docs/cost-models.md): the least
 * of LL (3.6 us base, 0.47 us a step, a quarter of the bandwidth), LL128
 * (10 us, 1.9 us a step, 0.92 of it) and Simple (8.4 us, 3.4 us a step,
 * all of it), each on top of the links' own 2(n-1) α. */
static double nccl_ring_ar(int n, double S, double B, double alpha)
{
	double steps = 2.0 * (n - 1), bw = 2.0 * (n - 1) / n * S / B, links = steps * alpha;
	double ll = links + (3.6 + steps * 0.47) * US + 4 * bw;
	double ll128 = links + (10 + steps * 1.9) * US + bw / 0.92;
	double simple = links + (8.4 + steps * 3.4) * US + bw;
	return fmin(ll, fmin(ll128, simple));
}

static const double S = 64.0 * 1024 * 1024; /* a 64 MiB message */

/* Every kind on one group, against the flat ring on (B, α). */
static void flat_all_kinds(const struct topology *t, const int64_t *r, int n, double B,
                           double alpha, const char *what)
{
	char w[128];
	snprintf(w, sizeof w, "%s AllReduce", what);
	near(cost_collective_s(t, STEP_ALLREDUCE, r, n, S), ar(n, S, B, alpha), w);
	snprintf(w, sizeof w, "%s AllGather", what);
	near(cost_collective_s(t, STEP_ALLGATHER, r, n, S), ag(n, S, B, alpha), w);
	snprintf(w, sizeof w, "%s ReduceScatter", what);
	near(cost_collective_s(t, STEP_REDUCESCATTER, r, n, S), ag(n, S, B, alpha), w);
	snprintf(w, sizeof w, "%s AllToAll", what);
	near(cost_collective_s(t, STEP_ALLTOALL, r, n, S), ag(n, S, B, alpha), w);
}

/* atlas800-910a.json: HCCS groups {0-3} and {4-7}, 30 GB/s per link and
 * 1 us; the groups meet over PCIe, 31 GB/s per port and 2 us. */
Test(estimate, collective_inside_an_hccs_group)
{
	struct arena *a = arena_new();
	const struct topology *t = fixture_topology(a, "atlas800-910a");
	int64_t r[4] = {0, 1, 2, 3};
	/* A ring inside the mesh uses one 30 GB/s link per neighbour. */
	flat_all_kinds(t, r, 4, 30 * GB, 1 * US, "910A {0,1,2,3}");
	int64_t r2[4] = {4, 5, 6, 7};
	flat_all_kinds(t, r2, 4, 30 * GB, 1 * US, "910A {4,5,6,7}");
	arena_free(a);
}

Test(estimate, collective_across_the_hccs_groups)
{
	struct arena *a = arena_new();
	const struct topology *t = fixture_topology(a, "atlas800-910a");
	/* 0 and 4 share no HCCS group: PCIe, 31 GB/s, 2 us. */
	int64_t r[2] = {0, 4};
	flat_all_kinds(t, r, 2, 31 * GB, 2 * US, "910A {0,4}");
	/* All eight: the ring crosses PCIe twice; its bottleneck and the
	 * common tier are PCIe. */
	int64_t r8[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	flat_all_kinds(t, r8, 8, 31 * GB, 2 * US, "910A {0..7}");
	arena_free(a);
}

/* dgx-a100.json: NVSwitch ports of 300 GB/s at efficiency 0.767, 1 us, no
 * shared cap. */
Test(estimate, collective_inside_nvswitch)
{
	struct arena *a = arena_new();
	const struct topology *t = fixture_topology(a, "dgx-a100");
	int64_t r[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	flat_all_kinds(t, r, 8, A100_NVSWITCH_BPS, 1 * US, "DGX {0..7}");
	int64_t r2[2] = {2, 5};
	flat_all_kinds(t, r2, 2, A100_NVSWITCH_BPS, 1 * US, "DGX {2,5}");
	arena_free(a);
}

/* atlas800-910a-x4.json: one device per server, so the ring runs over
 * the NICs only: 100 Gb/s = 12.5 GB/s; the fat tree puts 32 NIC ports
 * under a leaf, so the 4 servers' 32 NICs share leaf 0 and a path is
 * NIC (0.6 us) + leaf (0.6 us) + NIC (0.6 us) = 1.8 us. */
Test(estimate, collective_across_servers_over_the_nics)
{
	struct arena *a = arena_new();
	const struct topology *t = fixture_topology(a, "atlas800-910a-x4");
	int64_t r[4] = {0, 8, 16, 24};
	flat_all_kinds(t, r, 4, 12.5 * GB, 1.8 * US, "910A-x4 {0,8,16,24}");
	arena_free(a);
}

/* All 32 ranks of atlas800-910a-x4: the hierarchical form. n_intra = 8
 * per server (common tier PCIe: 31 GB/s, 2 us), m = 4 servers over the
 * NICs (12.5 GB/s, 1.8 us; 8 NICs for 8 ranks: no sharing).
 *   AllReduce = 2 x RS_intra(8, S) + AR_inter(4, S/8). */
Test(estimate, hierarchical_allreduce_910a_x4)
{
	struct arena *a = arena_new();
	const struct topology *t = fixture_topology(a, "atlas800-910a-x4");
	int64_t r[32];
	for (int i = 0; i < 32; i++)
		r[i] = i;
	double want = 2 * ag(8, S, 31 * GB, 2 * US) + ar(4, S / 8, 12.5 * GB, 1.8 * US);
	near(cost_collective_s(t, STEP_ALLREDUCE, r, 32, S), want, "910A-x4 all 32 AllReduce");
	arena_free(a);
}

/* dgx-a100-x128 with tensor parallelism 4 inside a server and data
 * parallelism across: rank 0's data-parallel group is {0, 4, 8, ...,
 * 1020}, 256 ranks, n_intra = 2 per server (NVSwitch 300 GB/s at
 * efficiency 0.767, 1 us), m = 128 servers. Inter-server: HDR 200 Gb/s =
 * 25 GB/s per NIC at efficiency 0.94 (8 NICs,
 * 2 ranks: no sharing, oversubscription 1); 20 NIC ports per leaf, so
 * rank 0 (leaf 0) reaches server 127 (leaf (127*8+4)/20 = 51) through
 * NIC 0.6 + leaf 0.3 + spine 0.3 + leaf 0.3 + NIC 0.6 = 2.1 us (the worst
 * path sets α).
 *   AllReduce      = 2 x RS(2, S, NVSwitch) + AR(128, S/2, IB)
 *   AllGather, RS  = AG(128, S/2, IB) + AG(2, S, NVSwitch)
 *   AllToAll       = (256-2)/256 S / B_ib + (2-1)/256 S / B_nv + 255 x 2.1 us */
Test(estimate, hierarchical_tp_times_dp_dgx_a100_x128)
{
	struct arena *a = arena_new();
	const struct topology *t = fixture_topology(a, "dgx-a100-x128:none");
	int64_t r[256];
	for (int i = 0; i < 256; i++)
		r[i] = 4 * i;
	double ib = A100_NIC_BPS, nv = A100_NVSWITCH_BPS, al = 2.1 * US;
	near(cost_collective_s(t, STEP_ALLREDUCE, r, 256, S),
	     2 * ag(2, S, nv, 1 * US) + ar(128, S / 2, ib, al), "TPxDP AllReduce");
	double g = ag(128, S / 2, ib, al) + ag(2, S, nv, 1 * US);
	near(cost_collective_s(t, STEP_ALLGATHER, r, 256, S), g, "TPxDP AllGather");
	near(cost_collective_s(t, STEP_REDUCESCATTER, r, 256, S), g, "TPxDP ReduceScatter");
	near(cost_collective_s(t, STEP_ALLTOALL, r, 256, S),
	     254.0 / 256 * S / ib + 1.0 / 256 * S / nv + 255 * al, "TPxDP AllToAll");
	/* One rank per server (the DP group of a TP-8 layout): a flat ring
	 * over the NICs. */
	int64_t r1[128];
	for (int i = 0; i < 128; i++)
		r1[i] = 8 * i;
	near(cost_collective_s(t, STEP_ALLREDUCE, r1, 128, S), ar(128, S, ib, al),
	     "one per server AllReduce");
	arena_free(a);
}

/* The fast tier is the NVLink domain, however large (docs/planner.md):
 * a tensor-parallel group of 16 inside one GB200 NVL72 rack rings over
 * NVLink 5 (900 GB/s one way at efficiency 0.817, 1 us per hop); on HGX
 * B200 servers of 8 the same 16 ranks are two servers, so the group runs
 * hierarchically: a reduce-scatter over 8 on NVLink, an all-reduce of
 * S/8 between the 2 servers over the NICs (400 Gb/s = 50 GB/s at 0.94;
 * NIC 0.6 + leaf 0.3 + NIC 0.6 = 1.5 us, both NICs under one leaf of
 * 32), an all-gather over 8 on NVLink. */
Test(estimate, tp16_in_an_nvl72_rack_rides_nvlink_but_crosses_nics_on_hgx_b200)
{
	struct arena *a = arena_new();
	double nv = 900 * GB * 0.817, nic = 50 * GB * 0.94;
	int64_t r[16];
	for (int i = 0; i < 16; i++)
		r[i] = i;
	const struct topology *rack = fixture_topology(a, "gb200-nvl72:none");
	cr_assert_eq(topo_group_tier(rack, r, 16), 0, "one NVLink domain");
	flat_all_kinds(rack, r, 16, nv, 1 * US, "NVL72 {0..15}");
	const struct topology *hgx = fixture_topology(a, "hgx-b200-x64:none");
	cr_assert_eq(topo_group_tier(hgx, r, 16), TOPO_NETWORK, "two servers");
	near(cost_collective_s(hgx, STEP_ALLREDUCE, r, 16, S),
	     2 * ag(8, S, nv, 1 * US) + ar(2, S / 8, nic, 1.5 * US), "HGX B200 {0..15} AllReduce");
	cr_expect_gt(cost_collective_s(hgx, STEP_ALLREDUCE, r, 16, S),
	             1.5 * cost_collective_s(rack, STEP_ALLREDUCE, r, 16, S));
	/* A CloudMatrix384-style supernode: 384 NPUs on one UB fabric
	 * (392 GB/s one way, line rate, 1 us) */
	const struct topology *cm = fixture_topology(a, "cloudmatrix384:none");
	int64_t r48[48];
	for (int i = 0; i < 48; i++)
		r48[i] = 8 * i; /* one NPU of each of the 48 nodes */
	flat_all_kinds(cm, r48, 48, 392 * GB, 1 * US, "CloudMatrix384, one NPU per node");
	arena_free(a);
}

/* The compute model (docs/cost-models.md) on dgx-a100.json: bf16 peak
 * P = 312 TFLOP/s, matmul_efficiency 0.8692, HBM 2 TB/s with
 * memory_efficiency 0.9 (B = 1.8 TB/s), gemm_half_dim h = 55.39, kernel
 * overhead o = 6.034 us:
 *   t = o + max(F / (P · 0.8692 · g(m) g(n) g(k)), bytes / B),  g(x) = x / (x + h).
 * P · 0.8692 = 271.1904 TFLOP/s. */
#define A100_RATE (312e12 * 0.8692)
#define A100_HBM (2e12 * 0.9)
#define A100_H 55.39
#define A100_O 6.034e-6

static double g_a100(double x)
{
	return x / (x + A100_H);
}

Test(estimate, compute_model_by_hand)
{
	struct arena *a = arena_new();
	const struct topology *t = fixture_topology(a, "dgx-a100");
	bool fb = false;
	/* A 4096^3 GEMM: F = 2 · 4096^3 = 1.374e11 FLOPs, 3 · 4096^2 bf16
	 * elements = 1.007e8 bytes. g(4096) = 4096 / 4151.39 = 0.98666, cubed
	 * 0.96050: 1.374e11 / (271.19e12 · 0.96050) = 527.6 us against
	 * 1.007e8 / 1.8e12 = 55.9 us, so t = 6.034 + 527.6 = 533.7 us (the
	 * roofline alone, at the peak: 440.5 us). */
	double n = 4096, f = 2 * n * n * n, b = 3 * n * n * 2;
	double g3 = g_a100(n) * g_a100(n) * g_a100(n);
	near(cost_compute_s(&t->device, DT_BF16, &(struct cost_work){f, b, n, n, n}, &fb),
	     A100_O + f / (A100_RATE * g3), "4096^3 GEMM");
	near(A100_O + f / (A100_RATE * g3), 533.672e-6, "4096^3 by hand");
	cr_assert(!fb);
	/* Skinny, 4096 x 8 times 8 x 4096: F = 2 · 4096 · 4096 · 8 = 2.68e8;
	 * g(8) = 8 / 63.39 = 0.12620, g = 0.12620 · 0.98666^2 = 0.12286, so
	 * the GEMM term is 2.68e8 / (271.19e12 · 0.12286) = 8.06 us; the bytes,
	 * (4096·8 + 8·4096 + 4096·4096) · 2 = 33685504, take 18.71 us: memory-
	 * bound, t = 6.034 + 18.714 = 24.748 us. */
	double sf = 2 * 4096.0 * 4096 * 8, sb = (4096.0 * 8 + 8 * 4096 + 4096.0 * 4096) * 2;
	near(cost_compute_s(&t->device, DT_BF16, &(struct cost_work){sf, sb, 4096, 4096, 8}, NULL),
	     A100_O + sb / A100_HBM, "4096 x 4096 x 8 GEMM");
	near(A100_O + sb / A100_HBM, 24.748169e-6, "skinny by hand");
	/* 256 x 4096 times 4096 x 256: F = 5.37e8; bytes (2 · 256 · 4096 +
	 * 256^2) · 2 = 4325376 take 2.403 us, and at 271.19 TFLOP/s the FLOPs
	 * alone 1.980 us: a plain roofline calls it memory-bound. The shape
	 * factor g(256)^2 g(4096) = 0.82212^2 · 0.98666 = 0.66686 makes the
	 * GEMM term 2.969 us, which wins: t = 6.034 + 2.969 = 9.003 us. */
	double qf = 2 * 256.0 * 256 * 4096, qb = (2 * 256.0 * 4096 + 256 * 256) * 2;
	double qg = g_a100(256) * g_a100(256) * g_a100(4096);
	near(cost_compute_s(&t->device, DT_BF16, &(struct cost_work){qf, qb, 256, 256, 4096}, NULL),
	     A100_O + qf / (A100_RATE * qg), "256 x 256 x 4096 GEMM");
	near(A100_O + qf / (A100_RATE * qg), 9.0026e-6, "shape-bound by hand");
	/* An element-wise op: 1 FLOP and 4 bytes per element of 2^28
	 * elements, no GEMM dimensions (no shape factor): memory-bound,
	 * 6.034 us + 2^30 / 1.8e12 = 602.5 us. */
	double e = 268435456;
	near(cost_compute_s(&t->device, DT_BF16, &(struct cost_work){e, 4 * e, 0, 0, 0}, NULL),
	     A100_O + 4 * e / A100_HBM, "memory-bound");
	/* No work (a view such as Reshape) launches nothing: 0, no overhead. */
	cr_assert_eq(cost_compute_s(&t->device, DT_BF16, &(struct cost_work){0, 0, 0, 0, 0}, NULL), 0);
	/* int32 has no peak: the fastest floating one (bf16) and the flag. */
	fb = false;
	near(cost_compute_s(&t->device, DT_INT32, &(struct cost_work){f, b, n, n, n}, &fb),
	     A100_O + f / (A100_RATE * g3), "int32 falls back to bf16's peak");
	cr_assert(fb);
	arena_free(a);
}

/* A file without the new members means what it meant: atlas800-910a.json
 * says gemm_half_dim 0 and kernel_overhead_us 0, so the model is the
 * roofline max(F / (320 TFLOP/s · 0.81875), bytes / 1.2 TB/s): 4096^3 at
 * 262 TFLOP/s is 524.6 us, whatever its shape. */
Test(estimate, zero_half_dim_and_overhead_are_the_roofline)
{
	struct arena *a = arena_new();
	const struct topology *t = fixture_topology(a, "atlas800-910a");
	double n = 4096, f = 2 * n * n * n, b = 3 * n * n * 2;
	near(cost_compute_s(&t->device, DT_FP16, &(struct cost_work){f, b, n, n, n}, NULL),
	     f / 262e12, "910A 4096^3");
	near(cost_compute_s(&t->device, DT_FP16, &(struct cost_work){f, b, 0, 0, 0}, NULL),
	     f / 262e12, "the same FLOPs without GEMM dimensions");
	arena_free(a);
}

/* The local GEMM of a distributed op: a BatchMatMul of x [4, 8, 32] with
 * transpose_a (batch 4, k 8, m 32) and w [4, 16, 8] with transpose_b
 * (n 16, k 8), cut ((2, 1, 2), (2, 2, 1)) on 8 devices: batch 2, m 16,
 * n 8, k 8 on each rank, the batch folded into m = 2 · 16 = 32.
 * FLOPs per rank 2 · 4 · 32 · 16 · 8 / 8 = 4096 = 2 · 32 · 8 · 8. */
Test(estimate, local_gemm_dimensions_of_a_distributed_op)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	static const char text[] =
		"{\"format\": \"shardlab-model\", \"version\": 1, \"name\": \"t\",\n"
		" \"inputs\": [{\"name\": \"x\", \"shape\": [4, 8, 32]}],\n"
		" \"parameters\": [{\"name\": \"w\", \"shape\": [4, 16, 8]}],\n"
		" \"ops\": [{\"name\": \"bmm\", \"kind\": \"BatchMatMul\", \"inputs\": [\"x\", \"w\"],\n"
		"          \"attrs\": {\"transpose_a\": true, \"transpose_b\": true}},\n"
		"         {\"name\": \"relu\", \"kind\": \"ReLU\", \"inputs\": [\"bmm\"]}]}\n";
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, "mem.json", text, strlen(text), &d));
	struct graph *g = graph_load_doc(a, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(g);
	const int64_t cuts[2][GRAPH_MAX_RANK] = {{2, 1, 2}, {2, 2, 1}};
	struct dist_op op;
	cr_assert(dist_op_from_cuts(a, g, 0, cuts, 8, &op, &d));
	struct cost_work w;
	cr_assert(cost_op_work(g, &op, &w));
	cr_assert_eq(w.m, 32);
	cr_assert_eq(w.n, 8);
	cr_assert_eq(w.k, 8);
	cr_assert_eq(w.flops, 4096);
	/* ReLU is no GEMM: no dimensions. */
	const int64_t rcuts[1][GRAPH_MAX_RANK] = {{2, 2, 2}};
	cr_assert(dist_op_from_cuts(a, g, 1, rcuts, 8, &op, &d));
	cr_assert(!cost_op_work(g, &op, &w));
	cr_assert(w.m == 0 && w.n == 0 && w.k == 0);
	diag_list_free(&d);
	arena_free(a);
}

/* ------------------------------------------------------ a whole estimate */

static struct scenario *load(struct arena *a, const char *path)
{
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = scenario_load(a, path, &d);
	cr_assert_not_null(s, "%s does not load", path);
	diag_list_free(&d);
	return s;
}

/* The scenario's estimate; `whole`: its gradient buckets priced whole
 * after the backward (overlap_grad_reduce false), as the hand sums do. */
static struct plan *estimate_as(struct arena *a, const char *path, struct estimate *e, bool whole)
{
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = load(a, path);
	if (whole)
		s->training.overlap_grad_reduce = false;
	struct plan *p = plan_propagate(a, s, REDIST_COMPAT, &d);
	cr_assert_not_null(p);
	cr_assert(plan_estimate(a, p, e, &d));
	cr_assert_eq(d.errors, 0);
	diag_list_free(&d);
	return p;
}

static struct plan *estimate_of(struct arena *a, const char *path, struct estimate *e)
{
	return estimate_as(a, path, e, true);
}

/* scenarios/megatron-mlp-8p.json: the mlp generator with hidden h = 1024,
 * ffn 4h = 4096, seq 512, micro_batch 2 (so x is [B*s, h] = [1024, 1024]),
 * bf16, on the 8 GPUs of dgx-a100 (the compute model above; NVSwitch
 * 300 GB/s at efficiency 0.767 and 1 us), global batch 2 = the micro_batch: 1 step per
 * iteration. Strategies: fc1.matmul ((1,1),(1,8)), fc1.bias_add
 * ((1,8),(8)), gelu ((1,8)), fc2.matmul ((1,8),(8,1)), fc2.bias_add
 * ((1,1),(1)), dropout ((1,1)). Per device (bf16 = 2 bytes; Mi = 2^20),
 * every kernel o = 6.034 us plus the larger of its GEMM and memory terms:
 *   fc1.matmul  X 1024x1024, W 1024x512, Y 1024x512: the local GEMM is
 *               m 1024, k 1024, n 512, 2*1024*1024*512 FLOPs; g = g(1024)^2
 *               g(512) = 0.94869^2 · 0.90238 = 0.81214, so 1.0737e9 /
 *               (271.19e12 · 0.81214) = 4.875 us against 4 MiB / 1.8 TB/s =
 *               2.33 us: fwd = 6.034 + 4.875 = 10.909 us; bwd 2x fwd (two
 *               GEMMs of the same dimensions in another order)
 *   fc1.bias    X 1024x512, b 512, Y 1024x512: memory-bound,
 *               o + (1 Mi + 1 KiB + 1 Mi) / 1.8 TB/s, bwd 1x
 *   gelu        8 FLOPs per element of 1024x512, o + 2 MiB / 1.8 TB/s, bwd 1x
 *   fc2.matmul  X 1024x512, W 512x1024, Y 1024x1024: m 1024, k 512, n 1024,
 *               the same FLOPs and the same g: fwd as fc1's, bwd 2x; its
 *               partial sums all-reduced over the 8 GPUs: S = 1024*1024*2 bytes
 *   fc2.bias    replicated: o + (2 MiB + 2 KiB + 2 MiB) / 1.8 TB/s, bwd 1x
 *   dropout     replicated: o + 4 MiB / 1.8 TB/s, bwd 1x
 * Backward communication: fc2's AllReduce mirrors to nothing; fc1 is
 * column-parallel, its input x is replicated across the axis that cuts W
 * and Y, so dX is all-reduced over the 8 GPUs (Megatron's "f"): the same
 * 2 MiB AllReduce.
 * Gradient sync: fc1.weight, fc1.bias and fc2.weight are split 8 ways
 * (no replica); fc2.bias [1024] is replicated on all 8: AllReduce of
 * 2 KiB.
 * The algorithm (scenario's collective_algo "auto"): dgx-a100 names NCCL
 * as its collective library, which inside one server runs rings
 * (nccl_ring_ar): 2 MiB goes as LL128 (14 + 10 + 26.6 us + 1.75 S/(0.92 B)
 * = 67.9 us against LL's 87.8 and Simple's 86.0), the 4 KiB gradient as LL
 * (14 + 3.6 + 6.58 us + 4 · 1.75 S/B = 24.3 us).
 * Optimizer: local elements 1024*512 + 512 + 512*1024 + 1024 = 1050112,
 * in bf16 each moves 38 bytes at 1.8 TB/s (the norm 4, Adam 28, the copy
 * back to bf16 6: optimizer_step_by_hand), without per-kernel overheads.
 * Memory: parameters and gradients 1050112 x 2 bytes each; optimizer
 * state (fp32 master + 2 moments) 12 bytes per element; activations
 * (local outputs) 1 + 1 + 1 + 2 + 2 + 2 = 9 MiB. */
Test(estimate, megatron_mlp_by_hand)
{
	struct arena *a = arena_new();
	struct estimate e;
	estimate_of(a, "scenarios/megatron-mlp-8p.json", &e);
	const double Mi = 1048576, hbm = A100_HBM, o = A100_O;
	/* every kernel is the slowest of the 8 devices' (speed_cv 0.01):
	 * 1 + 0.01 Φ^-1(7.625 / 8.25) = 1 + 0.01 x 1.4342 */
	const double slow = 1 + 0.01 * 1.4342002;
	double g = g_a100(1024) * g_a100(1024) * g_a100(512);
	double mm = slow * (o + 2.0 * 1024 * 1024 * 512 / (A100_RATE * g));
	near(mm, 10.909e-6 * slow, "a MatMul by hand");
	double fc1b = slow * (o + (Mi + 1024 + Mi) / hbm), gelu = slow * (o + 2 * Mi / hbm);
	double fc2b = slow * (o + (2 * Mi + 2048 + 2 * Mi) / hbm), drop = slow * (o + 4 * Mi / hbm);
	double fwd = mm + fc1b + gelu + mm + fc2b + drop;
	double bwd = 2 * mm + fc1b + gelu + 2 * mm + fc2b + drop;
	double ar2m = nccl_ring_ar(8, 2 * Mi, A100_NVSWITCH_BPS, 1 * US);
	near(ar2m, 67.94e-6, "the 2 MiB AllReduce by hand");
	/* fc2.bias, 1024 bf16 elements replicated on the 8 ranks: its gradient
	 * all-reduced in fp32 as Megatron-LM does for bf16 models, 4096 B */
	double grad = nccl_ring_ar(8, 4096, A100_NVSWITCH_BPS, 1 * US);
	near(grad, 24.31e-6, "the gradient's AllReduce by hand");
	double elems = 1024.0 * 512 + 512 + 512.0 * 1024 + 1024;
	double opt = elems * 38 / hbm;

	cr_assert_eq(e.steps_per_iteration, 1);
	cr_assert(!e.compute_fallback);
	near(e.category_s[EST_COMPUTE_FORWARD], fwd, "compute forward");
	near(e.category_s[EST_COMPUTE_BACKWARD], bwd, "compute backward");
	near(e.category_s[EST_COMM_FORWARD], ar2m, "forward AllReduce");
	cr_assert_eq(e.category_s[EST_REDISTRIBUTION], 0);
	near(e.category_s[EST_COMM_BACKWARD], ar2m, "backward: fc1's input-gradient AllReduce");
	near(e.category_s[EST_GRADIENT_SYNC], grad, "gradient sync of fc2.bias");
	near(e.category_s[EST_OPTIMIZER], opt, "optimizer");
	near(e.compute_s, fwd + bwd + opt, "compute_s");
	near(e.comm_s, 2 * ar2m + grad, "comm_s");
	near(e.iteration_s, fwd + bwd + opt + 2 * ar2m + grad, "iteration_s");

	near(e.ops[0].compute_forward_s, mm, "fc1 forward");
	near(e.ops[3].compute_forward_s, mm, "fc2 forward: the same dimensions in another order");
	near(e.ops[0].comm_backward_s, ar2m, "fc1.matmul's dX AllReduce");
	near(e.ops[3].comm_forward_s, ar2m, "fc2.matmul's AllReduce");
	near(e.ops[4].gradient_s, grad, "fc2.bias_add's gradient");
	near(e.ops[0].compute_backward_s, 2 * mm, "fc1 backward");

	/* bf16 weights, fp32 gradient accumulation, fp32 master + two moments */
	near(e.param_bytes, elems * 2, "parameters");
	near(e.grad_bytes, elems * 4, "gradients");
	near(e.optimizer_bytes, elems * 12, "optimizer state");
	/* What backward reads, per rank: fc1 its input X (1024 x 1024 bf16,
	 * 2 Mi), GeLU its input (1024 x 512, 1 Mi), fc2 its input (1 Mi), the
	 * dropout a 1-byte mask of the complete output (1 Mi); the bias adds
	 * nothing. */
	near(e.activation_bytes, 5 * Mi, "activations");
	near(e.reserve_bytes, 3e9, "dgx-a100's memory_reserve_GB");
	near(e.memory_bytes_per_device, elems * (2 + 4 + 12) + 5 * Mi + 3e9, "memory");
	arena_free(a);
}

/* The scenario's collective_algo is the estimate's too: the same MLP
 * without the collective library (the links' formulas, where auto picks
 * halving-doubling) with the ring asked for prices its three AllReduces
 * as rings, 2·7/8·S/B + 14 α each. */
Test(estimate, wanted_algorithm_is_priced)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = load(a, "scenarios/megatron-mlp-8p.json");
	s->training.overlap_grad_reduce = false;  /* the gradient priced whole */
	s->topo->coll.library = TOPO_COLL_NONE;
	s->sim.collective_algo = COLL_RING;
	struct plan *p = plan_propagate(a, s, REDIST_COMPAT, &d);
	struct estimate e;
	cr_assert(plan_estimate(a, p, &e, &d));
	const double Mi = 1048576;
	double ar2m = ar(8, 2 * Mi, A100_NVSWITCH_BPS, 1 * US);
	double grad = ar(8, 4096, A100_NVSWITCH_BPS, 1 * US); /* in fp32 */
	near(e.category_s[EST_COMM_FORWARD], ar2m, "ring forward AllReduce");
	near(e.category_s[EST_COMM_BACKWARD], ar2m, "ring dX AllReduce");
	near(e.category_s[EST_GRADIENT_SYNC], grad, "ring gradient");
	diag_list_free(&d);
	arena_free(a);
}

/* A parameter read by two ops counts once: the same MLP with global batch
 * 4 runs 2 steps; the per-step categories double, the rest do not. */
Test(estimate, steps_scale_per_step_categories_only)
{
	struct arena *a = arena_new();
	struct estimate e1, e2;
	estimate_of(a, "scenarios/megatron-mlp-8p.json", &e1);
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = load(a, "scenarios/megatron-mlp-8p.json");
	s->training.global_batch = 4;
	s->training.overlap_grad_reduce = false;  /* as estimate_of */
	struct plan *p = plan_propagate(a, s, REDIST_COMPAT, &d);
	cr_assert(plan_estimate(a, p, &e2, &d));
	cr_assert_eq(e2.steps_per_iteration, 2);
	for (int k = EST_COMPUTE_FORWARD; k <= EST_COMM_BACKWARD; k++)
		near(e2.category_s[k], 2 * e1.category_s[k], est_category_names[k]);
	near(e2.category_s[EST_GRADIENT_SYNC], e1.category_s[EST_GRADIENT_SYNC], "sync once");
	near(e2.category_s[EST_OPTIMIZER], e1.category_s[EST_OPTIMIZER], "optimizer once");
	/* 3 samples do not divide into batches of 2: a warning, 2 steps. */
	s->training.global_batch = 3;
	size_t before = d.count;
	cr_assert(plan_estimate(a, p, &e2, &d));
	cr_assert_eq(e2.steps_per_iteration, 2);
	cr_assert_gt(d.count, before);
	cr_assert_str_eq(d.items[before].path, "training.global_batch");
	diag_list_free(&d);
	arena_free(a);
}

/* ffn-8p is fp32 on Ascend 910, whose file gives only an fp16 peak. */
Test(estimate, fp32_on_ascend_910_falls_back)
{
	struct arena *a = arena_new();
	struct estimate e;
	estimate_of(a, "scenarios/ffn-8p.json", &e);
	cr_assert(e.compute_fallback);
	/* x is [64, 64] and the global batch 64: one step. */
	cr_assert_eq(e.steps_per_iteration, 1);
	arena_free(a);
}

/* Every shipped scenario estimates, and the parts add up. */
Test(estimate, shipped_scenarios_add_up)
{
	static const char *const files[] = {
		"scenarios/ffn-8p.json", "scenarios/ffn-8p-layout.json",
		"scenarios/megatron-attention-8p.json", "scenarios/megatron-mlp-8p.json",
		"scenarios/seed000-alltoall-4p.json", "scenarios/seed000-ffn-ir-8p.json",
		"scenarios/seed000-figure-relu-8p.json", "scenarios/seed003-matmul-4p.json",
		"scenarios/seed004-allgather-4p.json", "scenarios/seed004-layout-8p.json",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct arena *a = arena_new();
		struct estimate e;
		estimate_of(a, files[i], &e);
		double sum = 0;
		for (int k = 0; k < EST_CATEGORY_COUNT; k++) {
			cr_assert_geq(e.category_s[k], 0, "%s", files[i]);
			sum += e.category_s[k];
		}
		near(sum, e.iteration_s, files[i]);
		near(e.compute_s + e.comm_s, e.iteration_s, files[i]);
		cr_assert_gt(e.iteration_s, 0, "%s", files[i]);
		arena_free(a);
	}
}

/* ------------------------------------------------------------------- CLI */

static double num(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	cr_assert(cJSON_IsNumber(v), "missing number \"%s\"", key);
	return v->valuedouble;
}

Test(estimate, cli_json_agrees_with_the_library)
{
	struct cli_run r = fixture_shardlab("estimate scenarios/megatron-mlp-8p.json --json "
	                                    "--calibration none", false);
	cr_assert_eq(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "not JSON: %s", r.out);
	struct arena *a = arena_new();
	struct estimate e;
	struct plan *p = estimate_as(a, "scenarios/megatron-mlp-8p.json", &e, false);
	near(num(j, "iteration_s"), e.iteration_s, "iteration_s");
	near(num(j, "compute_s"), e.compute_s, "compute_s");
	near(num(j, "comm_s"), e.comm_s, "comm_s");
	near(num(j, "memory_bytes_per_device"), e.memory_bytes_per_device, "memory");
	cr_assert_eq(num(j, "steps_per_iteration"), 1);
	near(num(j, "rec_cost"), plan_rec_cost(p), "rec_cost");
	const cJSON *pl = cJSON_GetObjectItemCaseSensitive(j, "planner");
	cr_assert(cJSON_IsString(pl) && !strcmp(pl->valuestring, "propagate"));
	const cJSON *bd = cJSON_GetObjectItemCaseSensitive(j, "breakdown");
	cr_assert_eq(cJSON_GetArraySize(bd), EST_CATEGORY_COUNT);
	for (int k = 0; k < EST_CATEGORY_COUNT; k++) {
		const cJSON *c = cJSON_GetArrayItem(bd, k);
		const cJSON *name = cJSON_GetObjectItemCaseSensitive(c, "category");
		cr_assert(cJSON_IsString(name) && !strcmp(name->valuestring, est_category_names[k]));
		near(num(c, "s"), e.category_s[k], est_category_names[k]);
	}
	const cJSON *ops = cJSON_GetObjectItemCaseSensitive(j, "ops");
	cr_assert_eq(cJSON_GetArraySize(ops), 6);
	const cJSON *o0 = cJSON_GetArrayItem(ops, 0);
	cr_assert_str_eq(cJSON_GetObjectItemCaseSensitive(o0, "name")->valuestring, "mlp.fc1.matmul");
	near(num(o0, "compute_forward_s"), e.ops[0].compute_forward_s, "ops[0] forward");
	near(num(o0, "comm_backward_s"), e.ops[0].comm_backward_s, "ops[0] comm backward");
	cJSON_Delete(j);
	free(r.out);
	arena_free(a);
}


/* Without --calibration the command applies the device's shipped
 * calibration (dgx-a100's A100 SXM: calibration/a100-sxm.json), and names
 * it: its iteration time is the library's with that file applied. */
Test(estimate, cli_default_is_the_shipped_calibration)
{
	struct cli_run r = fixture_shardlab("estimate scenarios/megatron-mlp-8p.json --json", false);
	cr_assert_eq(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "not JSON: %s", r.out);
	const cJSON *cal = cJSON_GetObjectItemCaseSensitive(j, "calibration");
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(cal, "name");
	cr_assert(cJSON_IsString(name) && !strcmp(name->valuestring, "a100-sxm"), "%s", r.out);
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = load(a, "scenarios/megatron-mlp-8p.json");
	struct calibration *c = cost_calibration_load(a, "calibration/a100-sxm.json", &d);
	cr_assert(c && cost_calibration_apply(c, s->topo, &d));
	struct plan *p = plan_propagate(a, s, REDIST_COMPAT, &d);
	struct estimate e;
	cr_assert(p && plan_estimate(a, p, &e, &d));
	cr_assert_eq(d.errors, 0);
	near(num(j, "iteration_s"), e.iteration_s, "iteration_s");
	diag_list_free(&d);
	arena_free(a);
	cJSON_Delete(j);
	free(r.out);
}
Test(estimate, cli_usage_and_help)
{
	struct cli_run r = fixture_shardlab("estimate --help", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "usage: shardlab estimate"));
	cr_assert_not_null(strstr(r.out, "--ops"));
	free(r.out);
	static const struct {
		const char *args;
		int status;
	} bad[] = {
		{"estimate", 2},
		{"estimate scenarios/megatron-mlp-8p.json --planner nope", 2},
		{"estimate scenarios/megatron-mlp-8p.json --ops -1", 2},
		{"estimate tests/data/no-such-file.json", 1},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		r = fixture_shardlab(bad[i].args, true);
		cr_expect_eq(r.status, bad[i].status, "%s: %d", bad[i].args, r.status);
		free(r.out);
	}
	/* Text: the headline figures. */
	r = fixture_shardlab("estimate scenarios/megatron-mlp-8p.json", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "micro-batches"));
	cr_assert_not_null(strstr(r.out, "gradient_sync"));
	cr_assert_not_null(strstr(r.out, "mlp.fc1.matmul"));
	free(r.out);
}

/* cost_groups_s costs one group per position in the topology's period
 * (a server times the servers after which leaves repeat), and one per
 * position inside a server for groups inside one, and trusts that a group
 * moved by whole periods, or by whole servers, costs the same. Check that
 * against costing every group, for several device matrices, axes and
 * kinds on three fabrics, one of them with servers whose devices are not
 * all alike (two HCCS meshes of four joined by PCIe). */
static void expect_every_group(const struct topology *t, const struct rank_groups *g,
                               const char *name, size_t shape, size_t axes)
{
	static const enum step_kind kinds[] = {STEP_ALLREDUCE, STEP_ALLGATHER, STEP_ALLTOALL};
	int64_t *r = malloc((size_t)g->size * sizeof(*r));
	for (size_t ki = 0; ki < SL_COUNTOF(kinds); ki++) {
		double worst = 0, bytes = 1 << 20;
		for (int k = 0; k < g->n_groups; k++) {
			rank_groups_members(g, k, r);
			double s = cost_collective_s(t, kinds[ki], r, g->size, bytes);
			worst = s > worst ? s : worst;
		}
		double got = cost_groups_s(t, kinds[ki], g, bytes);
		cr_expect(fabs(got - worst) <= 1e-12 * worst,
		          "%s shape %zu axes %zu kind %zu: %.15g, every group %.15g", name, shape, axes,
		          ki, got, worst);
	}
	free(r);
}

Test(estimate, group_costs_agree_with_every_group)
{
	struct arena *a = arena_new();
	static const char *const names[] = {"atlas800t-a2-910b-x16", "dgx-a100-x128",
	                                    "atlas800-910a-x4"};
	static const int64_t shapes[][4] = {{16, 8, 1, 1}, {2, 8, 4, 2}, {4, 4, 4, 2}, {128, 1, 1, 1},
	                                    {2, 2, 2, 1}, {1, 4, 2, 1}};
	static const int axes_sets[][2] = {{0, -1}, {1, -1}, {2, 3}, {0, 2}, {3, 1}};
	for (size_t ti = 0; ti < SL_COUNTOF(names); ti++) {
		struct topology *t = fixture_topology(a, names[ti]);
		for (size_t si = 0; si < SL_COUNTOF(shapes); si++) {
			int64_t sizes[4];
			int64_t n = 1;
			for (int k = 0; k < 4; k++)
				n *= sizes[k] = shapes[si][k];
			if (n > t->n_devices)
				continue;
			/* Scale the last axis so the matrix covers the whole cluster. */
			sizes[3] *= t->n_devices / n;
			struct devmat dm;
			cr_assert(devmat_init(&dm, 4, sizes, NULL, 0));
			for (size_t ai = 0; ai < 5; ai++) {
				int axes[2], na = 0;
				for (int k = 0; k < 2; k++)
					if (axes_sets[ai][k] >= 0)
						axes[na++] = axes_sets[ai][k];
				struct rank_groups g;
				cr_assert(devmat_groups(&dm, axes, na, &g));
				expect_every_group(t, &g, names[ti], si, ai);
			}
		}
		/* Stage-like matrices from odd first ranks: groups inside one
		 * server at different positions ({1,2} in one mesh, {3,4}
		 * across two on the 910A), and groups across servers. */
		static const int64_t small[][2] = {{2, 2}, {2, 4}, {4, 2}};
		static const int64_t bases[] = {1, 3, 10};
		for (size_t bi = 0; bi < SL_COUNTOF(bases); bi++)
			for (size_t si = 0; si < SL_COUNTOF(small); si++) {
				struct devmat dm;
				if (bases[bi] + small[si][0] * small[si][1] > t->n_devices)
					continue;
				cr_assert(devmat_init(&dm, 2, small[si], NULL, bases[bi]));
				for (int ax = 0; ax < 2; ax++) {
					struct rank_groups g;
					cr_assert(devmat_groups(&dm, &ax, 1, &g));
					expect_every_group(t, &g, names[ti], 100 + bi * 10 + si, (size_t)ax);
				}
			}
	}
	arena_free(a);
}

/* Stragglers (docs/cost-models.md): with speed_cv σ the slowest of n
 * devices is expected 1 + σ Φ^-1((n - 0.375) / (n + 0.25)) slower (Blom);
 * Φ^-1 of 383.625 / 384.25 is 2.94275 (Python's statistics.NormalDist
 * gives 2.9427519) and of 2239.625 / 2240.25 is 3.45126. The draws of
 * cost_device_speed have mean 1 and standard deviation σ. */
Test(estimate, straggler_factor_and_device_speeds)
{
	struct topo_device d = {.speed_cv = 0.01};
	near(cost_straggler_factor(&d, 384), 1 + 0.01 * 2.9427519, "384 devices");
	near(cost_straggler_factor(&d, 2240), 1 + 0.01 * 3.4512611, "2240 devices");
	cr_assert_eq(cost_straggler_factor(&d, 1), 1);
	struct topo_device none = {0};
	cr_assert_eq(cost_straggler_factor(&none, 2240), 1);
	cr_assert_eq(cost_device_speed(&none, 7, 3), 1);
	double sum = 0, sq = 0;
	const int n = 200000;
	for (int r = 0; r < n; r++) {
		double f = cost_device_speed(&d, 42, r);
		sum += f;
		sq += f * f;
		cr_assert_eq(f, cost_device_speed(&d, 42, r), "deterministic");
	}
	double mean = sum / n, sd = sqrt(sq / n - mean * mean);
	/* the sample mean is within 5 standard errors (σ/√n = 2.2e-5) of 1 */
	cr_assert(fabs(mean - 1) < 5 * 0.01 / sqrt(n), "mean %g", mean);
	cr_assert(fabs(sd / 0.01 - 1) < 0.02, "standard deviation %g", sd);
	cr_assert_neq(cost_device_speed(&d, 42, 0), cost_device_speed(&d, 43, 0), "the seed matters");
}

/* Ops alike (plan_find_alike) are priced once: every shipped kind of plan
 * estimates exactly as it does with each op priced alone (p->alike NULL),
 * op by op and in every total, compared bit for bit. */
static void expect_alike_changes_nothing(const char *path, enum planner_kind kind)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = load(a, path);
	struct plan_options o = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_TOPOLOGY};
	struct plan *p = plan_make(a, s, kind, &o, &d);
	cr_assert_not_null(p, "%s %s: %s", path, planner_names[kind], d.count ? d.items[0].msg : "");
	cr_assert_not_null(p->alike, "%s %s", path, planner_names[kind]);
	struct plan alone = *p;
	alone.alike = NULL;
	struct estimate e, f;
	cr_assert(plan_estimate(a, p, &e, &d));
	cr_assert(plan_estimate(a, &alone, &f, &d));
	cr_assert_eq(e.n_ops, f.n_ops);
	for (int i = 0; i < e.n_ops; i++) {
		const struct est_op *x = &e.ops[i], *y = &f.ops[i];
		bool same = x->op == y->op && x->chunk == y->chunk &&
		            x->compute_forward_s == y->compute_forward_s &&
		            x->compute_backward_s == y->compute_backward_s &&
		            x->comm_forward_s == y->comm_forward_s &&
		            x->comm_backward_s == y->comm_backward_s &&
		            x->redistribution_s == y->redistribution_s &&
		            x->recompute_s == y->recompute_s && x->gather_s == y->gather_s &&
		            x->gradient_s == y->gradient_s && x->activation_bytes == y->activation_bytes;
		cr_expect(same, "%s %s: op %d (%s)", path, planner_names[kind], i,
		          s->graph->ops[i].name);
	}
	cr_expect_eq(e.iteration_s, f.iteration_s, "%s %s", path, planner_names[kind]);
	cr_expect_eq(e.memory_bytes_per_device, f.memory_bytes_per_device, "%s", path);
	cr_expect_eq(e.bubble_s, f.bubble_s, "%s", path);
	for (int k = 0; k < EST_CATEGORY_COUNT; k++)
		cr_expect_eq(e.category_s[k], f.category_s[k], "%s category %d", path, k);
	diag_list_free(&d);
	arena_free(a);
}

Test(estimate, ops_alike_are_priced_as_themselves)
{
	static const char *const files[] = {
		"scenarios/ffn-8p.json",          "scenarios/seed000-ffn-ir-8p.json",
		"scenarios/megatron-mlp-8p.json", "scenarios/megatron-attention-8p.json",
		"scenarios/gpt-4layer-32p.json",  "scenarios/gpt-small-910a-32p.json",
	};
	static const enum planner_kind kinds[] = {PLANNER_PROPAGATE, PLANNER_RECURSIVE,
	                                          PLANNER_DATA_PARALLEL, PLANNER_MEGATRON};
	for (size_t i = 0; i < SL_COUNTOF(files); i++)
		for (size_t k = 0; k < SL_COUNTOF(kinds); k++)
			expect_alike_changes_nothing(files[i], kinds[k]);
	/* pipelines of many layers, where the batch allows no pure data
	 * parallelism */
	expect_alike_changes_nothing("scenarios/mistral-7b-h100-64p.json", PLANNER_MEGATRON);
	expect_alike_changes_nothing("scenarios/mistral-7b-h100-64p.json", PLANNER_PROPAGATE);
	expect_alike_changes_nothing("scenarios/llama2-70b-910b-128p.json", PLANNER_MEGATRON);
	expect_alike_changes_nothing("scenarios/gpt3-175b-1024p.json", PLANNER_MEGATRON);
}

/* On a model of repeated layers the classes are one layer's ops and the
 * ends: 4 layers of a GPT have no more classes than 1 layer's ops plus the
 * embedding and head, and two ops of different kinds are never alike. */
Test(estimate, repeated_layers_are_alike)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = load(a, "scenarios/gpt-4layer-32p.json");
	struct plan *p = plan_make(a, s, PLANNER_MEGATRON, &(struct plan_options){0}, &d);
	cr_assert_not_null(p);
	cr_assert_not_null(p->alike);
	const struct graph *g = s->graph;
	int classes = 0;
	for (int i = 0; i < g->n_ops; i++) {
		int r = p->alike[i];
		cr_assert(r >= 0 && r <= i);
		cr_assert_eq(p->alike[r], r, "a class is named by its first op");
		cr_expect_eq(g->ops[r].kind, g->ops[i].kind, "%s alike %s", g->ops[i].name,
		             g->ops[r].name);
		classes += r == i;
	}
	cr_expect_lt(classes, g->n_ops / 2, "%d classes of %d ops", classes, g->n_ops);
	diag_list_free(&d);
	arena_free(a);
}

/* An n-layer LLaMA (h 64, 4 heads of 16, ffn 128, s 32, vocab 64, one
 * sequence) of `dtype` on one H100 with `training` (a JSON object), its
 * megatron plan estimated into e. */
static const struct plan *llama_estimate(struct arena *a, struct diag_list *d, int layers,
                                         const char *dtype, const char *training,
                                         struct estimate *e)
{
	char gen[256];
	snprintf(gen, sizeof gen,
	         "{\"kind\": \"llama\", \"hidden\": 64, \"layers\": %d, \"heads\": 4, \"ffn\": 128,"
	         " \"seq\": 32, \"vocab\": 64, \"micro_batch\": 1, \"dtype\": \"%s\"}",
	         layers, dtype);
	struct scenario *s = fixture_generated(a, d, gen, "dgx-h100", 1, training);
	struct plan_options o = {.mode = REDIST_COMPAT};
	const struct plan *p = plan_megatron(a, s, &o, d);
	cr_assert_not_null(p);
	cr_assert(plan_estimate(a, p, e, d));
	return p;
}

static const struct plan *llama1_estimate(struct arena *a, struct diag_list *d, const char *dtype,
                                          const char *training, struct estimate *e)
{
	return llama_estimate(a, d, 1, dtype, training, e);
}

/* FlashAttention (training.flash_attention) on a 1-layer LLaMA (h 64, 4
 * heads of 16, s 32, one sequence) on one H100. The scores and the context
 * run causal, half their FLOPs, reading Q and K (the context V, writing
 * O): the compute model of those works; backward 2.5x; the Softmax in the
 * kernel costs nothing. The kernel keeps Q and K [1, 4, 32, 16] bf16 =
 * 4,096 B each and a log-sum-exp per query row, 4 x 32 x 4 B = 512 B; the
 * context keeps V (4,096 B), never the probabilities; selective
 * recomputation has nothing left to redo. Without the flag the softmax
 * keeps its [1, 4, 32, 32] output, 8,192 B. */
Test(estimate, flash_attention_by_hand)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct estimate e[2];
	const struct plan *p[2];
	for (int f = 0; f < 2; f++)
		p[f] = llama1_estimate(a, &d, "bf16",
		                       f ? "{\"recompute\": \"selective\", \"flash_attention\": true}"
		                         : "{\"recompute\": \"selective\", \"flash_attention\": false}",
		                       &e[f]);
	const struct graph *g = p[1]->graph;
	const struct topo_device *dev = &p[1]->scenario->topo->device;
	int sc = graph_find_op(g, "layers.0.attn.scores"), sm = graph_find_op(g, "layers.0.attn.softmax");
	int cx = graph_find_op(g, "layers.0.attn.context");
	cr_assert(sc >= 0 && sm >= 0 && cx >= 0);
	struct cost_work w;
	cost_op_work(g, &p[1]->ops[sc], &w);
	w.flops /= 2;
	w.bytes = 4096 + 4096;
	double want = cost_compute_s(dev, DT_BF16, &w, NULL);
	cr_expect_float_eq(e[1].ops[sc].compute_forward_s, want, 1e-15);
	cr_expect_float_eq(e[1].ops[sc].compute_backward_s, 2.5 * want, 1e-15);
	cost_op_work(g, &p[1]->ops[cx], &w);
	w.flops /= 2;
	w.bytes = 4096 + 4096;
	cr_expect_float_eq(e[1].ops[cx].compute_forward_s, cost_compute_s(dev, DT_BF16, &w, NULL),
	                   1e-15);
	cr_expect_eq(e[1].ops[sm].compute_forward_s, 0);
	cr_expect_eq(e[1].ops[sm].compute_backward_s, 0);
	cr_expect_gt(e[0].ops[sm].compute_forward_s, 0);
	/* what each keeps */
	cr_expect_float_eq(e[1].ops[sc].activation_bytes, 4096 + 4096 + 512, 1e-9);
	cr_expect_float_eq(e[1].ops[sm].activation_bytes, 0, 1e-9);
	cr_expect_float_eq(e[1].ops[cx].activation_bytes, 4096, 1e-9);
	cr_expect_float_eq(e[0].ops[sm].activation_bytes, 8192, 1e-9);
	cr_expect_eq(e[1].ops[sc].recompute_s, 0);
	cr_expect_gt(e[0].ops[sc].recompute_s, 0);
	diag_list_free(&d);
	arena_free(a);
}

/* Context parallelism's merges (Transformer Engine's P2P ring attention):
 * the same 1-layer LLaMA on 2 H100s at CP 2 with FlashAttention. A rank
 * holds 16 of the 32 queries: the context's output [1, 4, 16, 16] is 1,024
 * elements; V gathered over the ring [1, 4, 32, 16], its shard 1,024, K's
 * the same. The forward adds the fp32 output's passes, 1,024 x (6 + 0.75
 * x 10 + 6) B = 19,968 B, in cp + 1 = 3 kernels; the backward the dQ, dK
 * and dV additions, (1,024 + 2,048) x 0.75 x 6 B = 13,824 B, in 3 (cp -
 * 1) = 3 kernels; on top of the kernel's own (flash_attention_by_hand's
 * pricing of the local shapes). The scores are as without CP. */
Test(estimate, context_parallel_merges_by_hand)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = fixture_generated(
	    a, &d,
	    "{\"kind\": \"llama\", \"hidden\": 64, \"layers\": 1, \"heads\": 4, \"ffn\": 128,"
	    " \"seq\": 32, \"vocab\": 64, \"micro_batch\": 1, \"dtype\": \"bf16\"}",
	    "dgx-h100", 2,
	    "{\"flash_attention\": true, \"context_parallel\": 2, \"tensor_parallel\": 1}");
	struct plan_options o = {.mode = REDIST_COMPAT};
	const struct plan *p = plan_megatron(a, s, &o, &d);
	cr_assert_not_null(p);
	struct estimate e;
	cr_assert(plan_estimate(a, p, &e, &d));
	const struct graph *g = p->graph;
	const struct topo_device *dev = &s->topo->device;
	int sc = graph_find_op(g, "layers.0.attn.scores"), cx = graph_find_op(g, "layers.0.attn.context");
	cr_assert(sc >= 0 && cx >= 0);
	cr_expect_eq(layout_local_elems(&p->ops[cx].out[0]), 1024);
	cr_expect_eq(layout_local_elems(&p->ops[cx].in[1]), 2048);
	struct cost_work w;
	cost_op_work(g, &p->ops[cx], &w);
	w.flops /= 2;
	w.bytes = (double)layout_local_bytes(&p->ops[cx].in[1]) +
	          (double)layout_local_bytes(&p->ops[cx].out[0]);
	/* the slower of the 2 devices sets the pace (speed_cv) */
	double slow = cost_slowest_factor(s->topo, 2);
	double kernel = cost_compute_s(dev, DT_BF16, &w, NULL) * slow;
	struct cost_work f = {0, 19968, 0, 0, 0}, b = {0, 13824, 0, 0, 0};
	double fwd = (cost_compute_s(dev, DT_BF16, &f, NULL) + 2 * dev->kernel_overhead_s) * slow;
	double bwd = (cost_compute_s(dev, DT_BF16, &b, NULL) + 2 * dev->kernel_overhead_s) * slow;
	cr_expect_float_eq(e.ops[cx].compute_forward_s, kernel + fwd, 1e-15);
	cr_expect_float_eq(e.ops[cx].compute_backward_s, 2.5 * kernel + bwd, 1e-15);
	cost_op_work(g, &p->ops[sc], &w);
	w.flops /= 2;
	w.bytes = (double)layout_local_bytes(&p->ops[sc].in[0]) +
	          (double)layout_local_bytes(&p->ops[sc].in[1]);
	cr_expect_float_eq(e.ops[sc].compute_forward_s, cost_compute_s(dev, DT_BF16, &w, NULL) * slow,
	                   1e-15);
	diag_list_free(&d);
	arena_free(a);
}

/* Memory-bound kernels by class (the device's kernel_efficiency). On a
 * 1-layer LLaMA (h 64, 4 heads, s 32, ffn 128) on one H100 (HBM 3.35 TB/s,
 * overhead 6.922 us, memory_efficiency 0.9165; dgx-h100.json's classes):
 * the Softmax [1, 4, 32, 32] bf16 reads and writes 8,192 B each, forward
 * o + 16,384 / (3.35e12 x 0.6047), backward twice o + 16,384 / (3.35e12 x
 * 0.5947); the SiLU [32, 128] the same bytes at the activation's 0.9165 and
 * 0.5342, backward once; the residual Add [32, 64] (two reads and a write
 * of 4,096 B) has no class and streams at memory_efficiency both ways. */
Test(estimate, memory_bound_kernels_by_class_by_hand)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct estimate e;
	const struct plan *p = llama1_estimate(a, &d, "bf16", "{}", &e);
	const struct graph *g = p->graph;
	const double o = 6.922e-6, B = 3350e9;
	static const struct {
		const char *op;
		double bytes, fwd_eff, bwd_eff, bwd_factor;
	} cases[] = {
		{"layers.0.attn.softmax", 16384, 0.6047, 0.5947, 2},
		{"layers.0.mlp.silu", 16384, 0.9165, 0.5342, 1},
		{"layers.0.residual1", 12288, 0.9165, 0.9165, 1},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int k = graph_find_op(g, cases[i].op);
		cr_assert(k >= 0, "%s", cases[i].op);
		double f = o + cases[i].bytes / (B * cases[i].fwd_eff);
		double b = cases[i].bwd_factor * (o + cases[i].bytes / (B * cases[i].bwd_eff));
		cr_expect(fabs(e.ops[k].compute_forward_s - f) < 1e-12 * f + 1e-15, "%s forward %.6g, want %.6g",
		          cases[i].op, e.ops[k].compute_forward_s, f);
		cr_expect(fabs(e.ops[k].compute_backward_s - b) < 1e-12 * b + 1e-15,
		          "%s backward %.6g, want %.6g", cases[i].op, e.ops[k].compute_backward_s, b);
	}
	diag_list_free(&d);
	arena_free(a);
}

/* Gradient accumulation without fusion (training.gradient_accumulation_fusion
 * false, Megatron-LM before February 2022): after each micro-batch's
 * backward, every parameter's new gradient is added into its buffer by a
 * kernel of its own, reading the gradient (the parameter's dtype) and the
 * buffer and writing the buffer. On a 1-layer LLaMA (h 64, ffn 128) on one
 * H100, mlp.gate's W [64, 128] is 8,192 elements: in bf16 (fp32 buffer)
 * 8,192 x (2 + 4 + 4) = 81,920 B, in fp16 (fp16 buffer) 8,192 x 6 =
 * 49,152 B, each one memory-bound kernel: o + B / (HBM x eta_mem). The
 * forward does not change; an op without parameters neither. */
Test(estimate, separate_gradient_accumulation_by_hand)
{
	static const struct {
		const char *dtype;
		double bytes;
	} cases[] = {{"bf16", 8192.0 * 10}, {"fp16", 8192.0 * 6}};
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct arena *a = arena_new();
		struct diag_list d;
		diag_list_init(&d);
		struct estimate e[2];
		const struct plan *p[2];
		for (int f = 0; f < 2; f++) {
			p[f] = llama1_estimate(a, &d, cases[k].dtype,
			                       f ? "{\"gradient_accumulation_fusion\": false}"
			                         : "{\"gradient_accumulation_fusion\": true}",
			                       &e[f]);
			cr_assert_eq(p[f]->scenario->training.separate_grad_accumulation, f == 1);
		}
		const struct graph *g = p[1]->graph;
		const struct topo_device *dev = &p[1]->scenario->topo->device;
		int gate = graph_find_op(g, "layers.0.mlp.gate.matmul");
		int silu = graph_find_op(g, "layers.0.mlp.silu");
		cr_assert(gate >= 0 && silu >= 0);
		double want = dev->kernel_overhead_s +
		              cases[k].bytes / (dev->hbm_bps * dev->memory_efficiency);
		cr_expect_float_eq(e[1].ops[gate].compute_backward_s - e[0].ops[gate].compute_backward_s,
		                   want, 1e-15, "%s", cases[k].dtype);
		cr_expect_eq(e[1].ops[gate].compute_forward_s, e[0].ops[gate].compute_forward_s);
		cr_expect_eq(e[1].ops[silu].compute_backward_s, e[0].ops[silu].compute_backward_s);
		diag_list_free(&d);
		arena_free(a);
	}
}

/* The optimizer step as Megatron-LM's mixed-precision optimizer runs it,
 * every pass memory-bound, bytes per local parameter element:
 *   fp16: fp16 gradients copied to fp32 (2 + 4), unscaled in place (4 +
 *         4), their norm (4), Adam (gradient 4, master and two moments read
 *         and written 24), the master copied back (4 + 2): 52;
 *   bf16: the gradients are fp32 already and unscaled: 4 + 28 + 6 = 38;
 *   fp32: 4 + 28 = 32 (the weight is the master).
 * The optimizer's state in other precisions (training.main_params_dtype,
 * exp_avg_dtype, exp_avg_sq_dtype) read and written at their own bytes:
 *   bf16, all three bf16 (apex's DistributedFusedAdam with dtype bf16):
 *         norm 4, Adam 4 + 2 (2 + 2 + 2), the master copied back 2 + 2: 24;
 *   the same with bf16 gradients (grad_reduce_in_bf16): copied to fp32
 *         first, 2 + 4: 30;
 *   bf16, no master copy (apex's with the model's dtype), bf16 moments and
 *         gradients: the weight updated in place as a recipe without a
 *         master does it, 2 (norm) + 2 + 2 (2 + 2) + 2 (2 + 2) = 16;
 *   bf16, FP8 moments: 4 + (4 + 2 (4 + 1 + 1)) + (4 + 2) = 26;
 *   fp16, fp16 master: 6 + 8 + 4 + (4 + 2 (2 + 4 + 4)) + (2 + 2) = 46.
 * The 1-layer LLaMA (h 64, 4 heads, ffn 128, vocabulary 64, untied) holds
 * 64 x 64 (embedding) + 4 x 64 x 64 (q, k, v, o) + 3 x 64 x 128 (gate,
 * up, down) + 64 x 64 (head) + 3 x 64 (norms) = 49,344 elements on its
 * one device. */
Test(estimate, optimizer_step_by_hand)
{
	static const struct {
		const char *dtype, *training;
		double w, bytes;
	} cases[] = {
		{"fp16", "{}", 2, 52},
		{"bf16", "{}", 2, 38},
		{"fp32", "{}", 4, 32},
		{"bf16",
		 "{\"main_params_dtype\": \"bf16\", \"exp_avg_dtype\": \"bf16\", "
		 "\"exp_avg_sq_dtype\": \"bf16\"}",
		 2, 24},
		{"bf16",
		 "{\"main_params_dtype\": \"bf16\", \"exp_avg_dtype\": \"bf16\", "
		 "\"exp_avg_sq_dtype\": \"bf16\", \"grad_reduce_in_bf16\": true}",
		 2, 30},
		{"bf16",
		 "{\"main_params_dtype\": \"none\", \"exp_avg_dtype\": \"bf16\", "
		 "\"exp_avg_sq_dtype\": \"bf16\", \"grad_reduce_in_bf16\": true}",
		 2, 16},
		{"bf16", "{\"exp_avg_dtype\": \"fp8\", \"exp_avg_sq_dtype\": \"fp8\"}", 2, 26},
		{"fp16", "{\"main_params_dtype\": \"fp16\"}", 2, 46},
	};
	const double elems = 49344;
	for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct arena *a = arena_new();
		struct diag_list d;
		diag_list_init(&d);
		struct estimate e;
		const struct plan *p = llama1_estimate(a, &d, cases[k].dtype, cases[k].training, &e);
		cr_assert_not_null(p, "%s %s", cases[k].dtype, cases[k].training);
		const struct topo_device *dev = &p->scenario->topo->device;
		cr_expect_float_eq(e.param_bytes, elems * cases[k].w, 1e-9, "%s", cases[k].dtype);
		cr_expect_float_eq(e.category_s[EST_OPTIMIZER],
		                   elems * cases[k].bytes / (dev->hbm_bps * dev->memory_efficiency),
		                   1e-15, "%s %s", cases[k].dtype, cases[k].training);
		diag_list_free(&d);
		arena_free(a);
	}
}

/* training.overlap_grad_reduce (the shipped default): megatron-mlp-8p's one
 * bucket, fc2.bias's 2 KiB all-reduce (R = 24.3 us by hand above), starts
 * when fc2.bias's backward compute is done and runs under the rest of the
 * backward: its collectives after that compute and every op before it;
 * only what it outlasts is left after the flush, max(0, R - rest). */
Test(estimate, overlapped_gradients_run_under_the_backward)
{
	struct arena *a = arena_new();
	struct estimate e, whole;
	estimate_as(a, "scenarios/megatron-mlp-8p.json", &e, false);
	estimate_of(a, "scenarios/megatron-mlp-8p.json", &whole);
	int j = -1, n = 0;
	for (int i = 0; i < e.n_ops; i++)
		if (whole.ops[i].gradient_s > 0) {
			j = i;
			n++;
		}
	cr_assert_eq(n, 1);
	double R = whole.ops[j].gradient_s, rest = e.ops[j].comm_backward_s;
	for (int i = 0; i < j; i++)
		rest += e.ops[i].compute_backward_s + e.ops[i].comm_backward_s;
	near(whole.category_s[EST_GRADIENT_SYNC], R, "whole");
	double want = fmax(0, R - rest);
	cr_expect(fabs(e.category_s[EST_GRADIENT_SYNC] - want) <= 1e-12, "exposed %g s, want %g",
	          e.category_s[EST_GRADIENT_SYNC], want);
	near(e.iteration_s, whole.iteration_s - R + want, "iteration_s");
	arena_free(a);
}

/* The loss as Megatron-LM runs it (training.cross_entropy; docs/cost-models.md,
 * "The loss"): each pass over the local logits one memory-bound kernel,
 * o + bytes / (HBM x eta_mem). The 1-layer LLaMA's logits are [32, 64] on
 * one H100: 2,048 elements. Bytes an element (megatron/core/tensor_parallel/
 * cross_entropy.py), with bf16 logits:
 *   vocab-parallel      forward  .float() 2 + 4, max 4, -= max 4 + 4, exp 4 + 4,
 *                                sum 4, /= sum 4 + 4: 6 kernels, 38 B;
 *                       backward *= grad 4 + 4, the upcast's backward 4 + 2:
 *                                2 kernels, 14 B;
 *   vocab-parallel-jit  forward  .float() with max 2 + 4, -= max with exp and
 *                                sum 4 + 4, /= sum 4 + 4: 3 kernels, 22 B;
 *                       backward as above;
 *   mindformers         forward  + 0 2 + 2, cast 2 + 4, max 4, - max 4 + 4, exp
 *                                4 + 4, sum 4, - log(sum) 4 + 4, one-hot 4, x one-hot
 *                                4 + 4 + 4, negation 4 + 4, sum 4: 11 kernels, 70 B;
 *                       backward exp 4 + 4, - one-hot 4 + 4 + 4, x dout 4 + 4, x the
 *                                repeat 4 + 4, cast back 4 + 2: 5 kernels, 42 B;
 *   pytorch             forward  .float() 2 + 4, log_softmax's row max 4, its sum
 *                                of exponentials 4, its output 4 + 4: 4 kernels,
 *                                22 B (nll_loss reads one element a row);
 *                       backward nll_loss's dense gradient 4, log_softmax's row
 *                                sum of the gradient 4, gradOutput - exp(output) x
 *                                sum 4 + 4 + 4, the upcast's backward 4 + 2: 4
 *                                kernels, 26 B;
 * with fp32 logits no cast: vocab-parallel 5 kernels, 32 B forward, 1
 * kernel, 8 B backward; vocab-parallel-jit 3 kernels (max alone reads 4),
 * 20 B forward; mindformers 10 kernels, 68 B (+ 0 reads and writes 4 + 4)
 * forward, 4 kernels, 36 B backward; pytorch 3 kernels, 16 B forward, 3
 * kernels, 20 B backward. "fused" is one kernel priced by the device's loss class
 * (the memory_bound_kernels test's rule: 0.2184 forward). PyTorch's
 * backward holds two fp32 gradients of the logits beside the saved fp32
 * log-probabilities: 8 B a logit more activation memory than the
 * in-place losses. */
Test(estimate, megatron_cross_entropy_passes_by_hand)
{
	static const struct {
		const char *dtype, *xent;
		double fk, fb, bk, bb;  /* kernels and bytes an element, forward and backward */
	} cases[] = {
		{"bf16", "vocab-parallel", 6, 38, 2, 14},
		{"bf16", "vocab-parallel-jit", 3, 22, 2, 14},
		{"fp32", "vocab-parallel", 5, 32, 1, 8},
		{"fp32", "vocab-parallel-jit", 3, 20, 1, 8},
		{"bf16", "mindformers", 11, 70, 5, 42},
		{"fp32", "mindformers", 10, 68, 4, 36},
		{"bf16", "pytorch", 4, 22, 4, 26},
		{"fp32", "pytorch", 3, 16, 3, 20},
	};
	const double n = 32 * 64;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct arena *a = arena_new();
		struct diag_list d;
		diag_list_init(&d);
		char training[64];
		snprintf(training, sizeof training, "{\"cross_entropy\": \"%s\"}", cases[i].xent);
		struct estimate e;
		const struct plan *p = llama1_estimate(a, &d, cases[i].dtype, training, &e);
		const struct topo_device *dev = &p->scenario->topo->device;
		double o = dev->kernel_overhead_s, rate = dev->hbm_bps * dev->memory_efficiency;
		int k = graph_find_op(p->graph, "loss");
		cr_assert(k >= 0);
		double f = cases[i].fk * o + cases[i].fb * n / rate;
		double b = cases[i].bk * o + cases[i].bb * n / rate;
		cr_expect(fabs(e.ops[k].compute_forward_s - f) < 1e-12 * f, "%s %s forward %.9g, want %.9g",
		          cases[i].dtype, cases[i].xent, e.ops[k].compute_forward_s, f);
		cr_expect(fabs(e.ops[k].compute_backward_s - b) < 1e-12 * b,
		          "%s %s backward %.9g, want %.9g", cases[i].dtype, cases[i].xent,
		          e.ops[k].compute_backward_s, b);
		diag_list_free(&d);
		arena_free(a);
	}
	/* the default is vocab-parallel; "fused" is the loss class's one kernel */
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct estimate def, fused;
	const struct plan *p = llama1_estimate(a, &d, "bf16", "{}", &def);
	cr_expect_eq(p->scenario->training.cross_entropy, XENT_VOCAB_PARALLEL);
	p = llama1_estimate(a, &d, "bf16", "{\"cross_entropy\": \"fused\"}", &fused);
	int k = graph_find_op(p->graph, "loss");
	const struct topo_device *dev = &p->scenario->topo->device;
	double f = dev->kernel_overhead_s + p->ops[k].bytes_per_rank / (dev->hbm_bps * 0.2184);
	cr_expect(fabs(fused.ops[k].compute_forward_s - f) < 1e-12 * f, "fused forward %.9g, want %.9g",
	          fused.ops[k].compute_forward_s, f);
	double vp = 6 * dev->kernel_overhead_s + 38 * n / (dev->hbm_bps * dev->memory_efficiency);
	cr_expect(fabs(def.ops[k].compute_forward_s - vp) < 1e-12 * vp, "default forward %.9g, want %.9g",
	          def.ops[k].compute_forward_s, vp);
	struct estimate pt;
	llama1_estimate(a, &d, "bf16", "{\"cross_entropy\": \"pytorch\"}", &pt);
	double more = pt.stages[0].mem.activations - def.stages[0].mem.activations;
	cr_expect(fabs(more - 8 * n) < 1e-9, "pytorch's loss holds %.9g B more, want %.9g", more,
	          8 * n);
	diag_list_free(&d);
	arena_free(a);
}

/* The 4-layer LLaMA with full recomputation of `layers` layers
 * (training.recompute_layers; 0: every layer; -1: no recomputation). */
static const struct plan *llama4_recompute(struct arena *a, struct diag_list *d, int layers,
                                           struct estimate *e)
{
	char training[96];
	if (layers > 0)
		snprintf(training, sizeof training,
		         "{\"recompute\": \"full\", \"recompute_layers\": %d}", layers);
	else
		snprintf(training, sizeof training, "{\"recompute\": \"%s\"}",
		         layers < 0 ? "none" : "full");
	return llama_estimate(a, d, 4, "bf16", training, e);
}

/* Megatron-LM's --recompute-method block --recompute-num-layers N
 * (training.recompute_layers): the first N layers of a chunk recomputed,
 * the rest keeping their activations. With the four layers alike and one
 * chunk, N = 1 recomputes exactly the ops of layers.0 (each its forward and
 * forward communication again, as under full recomputation) and nothing
 * outside the layers. Memory, with x a layer's input and s what a layer
 * saves (s > x): full recomputation keeps the four inputs and, while a
 * layer is recomputed, its s: O + 4x + s; N layers keep N inputs and
 * 4 - N layers' s, and the backward frees those before it recomputes:
 * O + N x + (4 - N) s for N = 1 .. 3. So S_1 - S_none, S_2 - S_1 and
 * S_3 - S_2 are all x - s, and S_full - S_3 is x: layers.0's input
 * [32, 64] bf16, 4,096 bytes. N = 4, every layer of the chunk, is full
 * recomputation, which redoes the layers alone: the frameworks checkpoint
 * each transformer layer, so the embedding, the final norm, the head and
 * the loss run once (Megatron-LM's --recompute-method uniform checkpoints
 * the transformer block's layers; the memory has always kept their
 * activations). */
Test(estimate, recompute_layers_block_method)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct estimate full, none, n[5];
	const struct plan *p = llama4_recompute(a, &d, 0, &full);
	llama4_recompute(a, &d, -1, &none);
	for (int k = 1; k <= 4; k++)
		llama4_recompute(a, &d, k, &n[k]);
	const struct graph *g = p->graph;
	double rec1 = 0, rec4 = 0;
	for (int i = 0; i < g->n_ops; i++) {
		const char *name = g->ops[i].name;
		bool l0 = strncmp(name, "layers.0.", 9) == 0, layer = strncmp(name, "layers.", 7) == 0;
		double redo = full.ops[i].compute_forward_s + full.ops[i].comm_forward_s;
		cr_expect_eq(n[1].ops[i].recompute_s, l0 ? redo : 0, "%s: %g", name,
		             n[1].ops[i].recompute_s);
		cr_expect_eq(n[4].ops[i].recompute_s, layer ? redo : 0, "%s", name);
		cr_expect_eq(full.ops[i].recompute_s, layer ? redo : 0, "%s: full", name);
		rec1 += n[1].ops[i].recompute_s;
		rec4 += n[4].ops[i].recompute_s;
	}
	cr_expect(rec1 > 0 && fabs(4 * rec1 - rec4) <= 1e-9 * rec4, "layers alike: %g x 4 against %g",
	          rec1, rec4);
	double step = n[1].activation_bytes - none.activation_bytes;
	cr_expect(step < 0, "recomputing a layer saves memory: %g", step);
	cr_expect_eq(n[2].activation_bytes - n[1].activation_bytes, step);
	cr_expect_eq(n[3].activation_bytes - n[2].activation_bytes, step);
	cr_expect_eq(full.activation_bytes - n[3].activation_bytes, 4096);
	cr_expect_eq(n[4].activation_bytes, full.activation_bytes);
	cr_expect_eq(n[4].iteration_s, full.iteration_s);
	diag_list_free(&d);
	arena_free(a);
}

/* Sequence parallelism (Korthikanti et al. 2022): Megatron-LM runs both
 * norms of a layer on the sequence shard and gathers after them. The plan
 * gathers before the norm that feeds q, k and v (one redistribution per
 * edge; docs/cost-models.md), so the estimate prices that norm on the
 * shard as Megatron runs it: on a 2-layer GPT at TP 4 with sequence
 * parallelism, layers.1.ln1 (gathered before it) and layers.1.ln2 (on the
 * shard) are the same LayerNorm of [32 / 4, 64] a rank, forward and
 * backward alike. (A LLaMA's ln2 feeds gate and up, and is gathered
 * before too.) */
Test(estimate, sequence_parallel_norm_before_qkv_on_the_shard)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = fixture_generated(
	        a, &d,
	        "{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 2, \"heads\": 4, \"ffn\": 128,"
	        " \"seq\": 32, \"vocab\": 64, \"micro_batch\": 1, \"dtype\": \"bf16\"}",
	        "dgx-h100", 4, "{\"tensor_parallel\": 4, \"sequence_parallel\": true}");
	struct plan_options o = {.mode = REDIST_FUSED};
	const struct plan *p = plan_megatron(a, s, &o, &d);
	cr_assert_not_null(p);
	struct estimate e;
	cr_assert(plan_estimate(a, p, &e, &d));
	int ln1 = graph_find_op(p->graph, "layers.1.ln1"), ln2 = graph_find_op(p->graph, "layers.1.ln2");
	cr_assert(ln1 >= 0 && ln2 >= 0);
	cr_expect(layout_local_bytes(&p->ops[ln1].in[0]) > layout_local_bytes(&p->ops[ln2].in[0]),
	          "the plan gathers before ln1");
	double f1 = e.ops[ln1].compute_forward_s, f2 = e.ops[ln2].compute_forward_s;
	double b1 = e.ops[ln1].compute_backward_s, b2 = e.ops[ln2].compute_backward_s;
	cr_expect(f2 > 0 && fabs(f1 - f2) <= 1e-9 * f2, "forward %.9g against %.9g", f1, f2);
	cr_expect(b2 > 0 && fabs(b1 - b2) <= 1e-9 * b2, "backward %.9g against %.9g", b1, b2);
	diag_list_free(&d);
	arena_free(a);
}

/* training.tp_comm_overlap_slices (MindFormers' fine_grain_interleave n):
 * a layer's blocks run as n slices of the sequence, each slice's
 * collective beside another slice's compute, a pipeline of n items
 * through the two: of a collective of t beside compute c, the first
 * slice's t/n runs alone, and of the rest (n - 1)/n of the smaller of t
 * and c is hidden. By hand from the plan without the overlap: each edge
 * the planner marks (plan_edge.hide) exposes, forward, its AllGather or
 * ReduceScatter t less (n - 1)/n min(t, c_f) of its hiding ops' forward
 * c_f; the two estimates' redistribution differ by that sum. The small
 * GPT at TP 4 with sequence parallelism on one H100 server. */
Test(estimate, tp_comm_overlap_slices_hide_by_the_pipeline_of_slices)
{
	static const char *const gen =
	        "{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 2, \"heads\": 4, \"ffn\": 128,"
	        " \"seq\": 32, \"vocab\": 64, \"micro_batch\": 1, \"dtype\": \"bf16\"}";
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *off = fixture_generated(
	        a, &d, gen, "dgx-h100", 4, "{\"tensor_parallel\": 4, \"sequence_parallel\": true}");
	cr_assert_not_null(off);
	struct plan_options o = {.mode = REDIST_FUSED};
	const struct plan *po = plan_megatron(a, off, &o, &d);
	cr_assert_not_null(po);
	struct estimate eo;
	cr_assert(plan_estimate(a, po, &eo, &d));
	for (int n = 2; n <= 4; n += 2) {
		char tr[160];
		snprintf(tr, sizeof tr,
		         "{\"tensor_parallel\": 4, \"sequence_parallel\": true,"
		         " \"tp_comm_overlap\": true, \"tp_comm_overlap_slices\": %d}", n);
		struct scenario *on = fixture_generated(a, &d, gen, "dgx-h100", 4, tr);
		cr_assert_not_null(on);
		const struct plan *pn = plan_megatron(a, on, &o, &d);
		cr_assert_not_null(pn);
		struct estimate en;
		cr_assert(plan_estimate(a, pn, &en, &d));
		double hidden = 0;
		int marked = 0;
		for (int k = 0; k < pn->n_edges; k++) {
			const struct plan_edge *x = &pn->edges[k];
			if (x->n_hide == 0)
				continue;
			marked++;
			/* the consumer's forward redistribution without the overlap
			 * is this edge's alone (one edge into each marked op) */
			double t = eo.ops[x->consumer].redistribution_s, cf = 0;
			for (int h = 0; h < x->n_hide; h++)
				cf += eo.ops[x->hide[h]].compute_forward_s;
			hidden += (double)(n - 1) / n * fmin(t, cf);
		}
		cr_expect_gt(marked, 0);
		cr_expect_gt(hidden, 0);
		double want = eo.category_s[EST_REDISTRIBUTION] - hidden;
		double got = en.category_s[EST_REDISTRIBUTION];
		cr_expect(fabs(got - want) <= 1e-9 * want, "n %d: redistribution %.12g, by hand %.12g", n,
		          got, want);
		/* the compute is the same: the slices move nothing off the GEMMs */
		cr_expect(fabs(en.compute_s - eo.compute_s) <= 1e-12 * eo.compute_s);
	}
	diag_list_free(&d);
	arena_free(a);
}
