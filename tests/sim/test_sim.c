/* test_sim.c — the simulator against the α–β formulas.
 *
 * Programs are built by hand (a collective step or two over rank groups
 * from devmat_groups) and simulated on shipped topologies; every expected
 * time is derived in the comments from the topology files' figures and
 * the algorithm's steps, never copied from the program's output.
 * Figures used (the files in topologies/):
 *   atlas800-910a   HCCS mesh 30 GB/s, 1 us; PCIe switch 31 GB/s, 2 us
 *                   (the latency on the sender's port)
 *   atlas800-910a-x4  + NICs 100 Gb/s = 12.5 GB/s, 0.6 us; one leaf of 32
 *                   NIC ports, 0.6 us: rank to rank 0.6 + 0.6 + 0.6 = 1.8 us
 *   dgx-a100        NVSwitch ports 300 GB/s at efficiency 0.767 = 230.1 GB/s
 *                   (A100_NVSWITCH_BPS), 1 us
 *   dgx-a100-x128   + NICs 200 Gb/s = 25 GB/s at efficiency 0.94 = 23.5 GB/s
 *                   (A100_NIC_BPS), 0.6 us; leaves of 20 NIC
 *                   ports, 0.3 us a switch: 1.5 us in a leaf, 2.1 us across
 *   pcie-8gpu       two PCIe switches of 4 (31 GB/s, 1 us) joined through
 *                   the CPU (31 GB/s ports, 2 us, 31 GB/s shared by all)
 */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"
#include "fixture.h"

#define GB 1e9
#define US 1e-6

static void within(double got, double want, double rel, const char *what)
{
	cr_assert(fabs(got - want) <= rel * fabs(want), "%s: got %.9g, want %.9g (%.1f%%)", what,
	          got, want, 100 * rel);
}

/* A collective step over the groups of `axes` of a device matrix. */
static struct prog_step coll_step(const int64_t *sizes, int n_sizes, int axis,
                                  enum step_kind kind, double bytes, int stream)
{
	struct devmat dm;
	cr_assert(devmat_init(&dm, n_sizes, sizes, NULL, 0));
	struct prog_step st = {.kind = PROG_COLLECTIVE, .phase = PHASE_FORWARD, .stream = stream,
	                       .op = -1, .label = "collective", .coll = kind, .bytes = bytes,
	                       .after = -1};
	cr_assert(devmat_groups(&dm, &axis, 1, &st.groups));
	return st;
}

struct run {
	struct arena *a;
	struct sim_result r;
};

static struct run simulate(const char *tname, struct prog_step *steps, int n_steps,
                           int n_section, int64_t n_ranks, enum collective_algo algo,
                           enum sim_fidelity fid)
{
	struct run run = {.a = arena_new()};
	struct topology *t = fixture_topology(run.a, tname);
	struct program p = fixture_program(run.a, steps, n_steps, n_section, n_ranks, 1);
	struct sim_options o = {.fidelity = fid, .algo = algo};
	struct diag_list d;
	diag_list_init(&d);
	bool ok = sim_run(run.a, t, &p, &o, &run.r, &d);
	cr_assert(ok, "sim_run failed: %s", d.count ? d.items[0].msg : "?");
	diag_list_free(&d);
	return run;
}

/* One collective alone: the iteration time. */
static double lone(const char *tname, const int64_t *sizes, int n_sizes, int axis,
                   enum step_kind kind, enum collective_algo algo, enum sim_fidelity fid,
                   double bytes)
{
	int64_t n = 1;
	for (int i = 0; i < n_sizes; i++)
		n *= sizes[i];
	struct prog_step st = coll_step(sizes, n_sizes, axis, kind, bytes, 0);
	struct run run = simulate(tname, &st, 1, 1, n, algo, fid);
	double s = run.r.iteration_s;
	arena_free(run.a);
	return s;
}

Test(sim, ring_allreduce_in_an_hccs_group)
{
	/* 4 NPUs of one HCCS group, S = 64 MB: 2(n-1) = 6 steps of S/4 over
	 * one mesh link each: 6 x (1 us + 16e6 / 30e9) = 6 us + 3.2 ms. */
	double S = 64e6;
	int64_t sz[] = {4};
	double want = 6 * (1 * US + S / 4 / (30 * GB));
	within(lone("atlas800-910a", sz, 1, 0, STEP_ALLREDUCE, COLL_RING, FIDELITY_STEP, S), want,
	       0.01, "step");
	within(lone("atlas800-910a", sz, 1, 0, STEP_ALLREDUCE, COLL_RING, FIDELITY_COARSE, S), want,
	       0.01, "coarse");
}

/* A torus tier (tpu-v5p-4x4x4.json: 4 x 4 x 4 chips, 100 GB/s one way
 * per ICI link, 1 us a hop). A ring along x, chips 0-3, wraps round the
 * x dimension, one link a step: 2(n-1) = 6 steps of S/4, 6 x (1 us +
 * 16e6 / 100e9) = 966 us, as the α–β formula. A ring over the 4 chips
 * 0, 16, 32, 48 (the z axis: groups of the device matrix [4, 16]'s axis 0)
 * is the same over the z links. */
Test(sim, ring_allreduce_round_a_torus_dimension)
{
	double S = 64e6, want = 6 * (1 * US + S / 4 / (100 * GB));
	int64_t x[] = {4}, z[] = {4, 16};
	within(lone("tpu-v5p-4x4x4", x, 1, 0, STEP_ALLREDUCE, COLL_RING, FIDELITY_STEP, S), want,
	       0.01, "x ring");
	within(lone("tpu-v5p-4x4x4", z, 2, 0, STEP_ALLREDUCE, COLL_RING, FIDELITY_STEP, S), want,
	       0.01, "z rings");
}

Test(sim, ring_allreduce_small_message_latency)
{
	/* Latency-bound: S = 4 kB on the same 4 NPUs: 6 x (1 us + 1e3 / 30e9). */
	int64_t sz[] = {4};
	double want = 6 * (1 * US + 1e3 / (30 * GB));
	within(lone("atlas800-910a", sz, 1, 0, STEP_ALLREDUCE, COLL_RING, FIDELITY_STEP, 4e3), want,
	       0.01, "step");
}

Test(sim, across_the_two_hccs_groups)
{
	/* Devices 0 and 4 (and 1-5, 2-6, 3-7 at once, on their own PCIe
	 * ports): ring all-reduce of 2 ranks = 2 steps of S/2 over PCIe:
	 * 2 x (2 us + 32e6 / 31e9). */
	double S = 64e6;
	int64_t sz[] = {2, 4};
	double want = 2 * (2 * US + S / 2 / (31 * GB));
	within(lone("atlas800-910a", sz, 2, 0, STEP_ALLREDUCE, COLL_RING, FIDELITY_STEP, S), want,
	       0.01, "step");
}

Test(sim, ring_sizes_in_a_dgx_server)
{
	/* NVSwitch ports, n = 2, 4, 8, S = 32 MB: ring all-gather is n-1
	 * steps of S/n: (n-1)(1 us + S/n / B_nv). */
	double S = 32e6;
	for (int64_t n = 2; n <= 8; n *= 2) {
		int64_t sz[] = {n};
		double want = (double)(n - 1) * (1 * US + S / (double)n / (A100_NVSWITCH_BPS));
		within(lone("dgx-a100:none", sz, 1, 0, STEP_ALLGATHER, COLL_RING, FIDELITY_STEP, S), want,
		       0.01, "allgather");
	}
}

Test(sim, ring_across_servers)
{
	/* atlas800-910a-x4: ranks 0, 8, 16, 24 (one per server; 8 such groups
	 * on their own NICs), S = 64 MB: 6 steps of S/4 over the NICs:
	 * 6 x (1.8 us + 16e6 / 12.5e9). */
	double S = 64e6;
	int64_t sz[] = {4, 8};
	double want = 6 * (1.8 * US + S / 4 / (12.5 * GB));
	within(lone("atlas800-910a-x4", sz, 2, 0, STEP_ALLREDUCE, COLL_RING, FIDELITY_STEP, S), want,
	       0.01, "step");
	within(lone("atlas800-910a-x4", sz, 2, 0, STEP_ALLREDUCE, COLL_RING, FIDELITY_COARSE, S),
	       want, 0.01, "coarse");
}

Test(sim, ring_16_and_32_servers)
{
	/* dgx-a100-x128, one GPU per server (n = 16, 32), ring reduce-scatter
	 * of S = 256 MB: n-1 steps of S/n over B_ib NICs. Neighbours sit in
	 * one leaf (1.5 us) or two (2.1 us); the worst is taken and the
	 * latencies are under 0.1% of the time. */
	double S = 256e6;
	for (int64_t n = 16; n <= 32; n *= 2) {
		int64_t sz[] = {n, 8};
		double want = (double)(n - 1) * (2.1 * US + S / (double)n / (A100_NIC_BPS));
		within(lone("dgx-a100-x128:none", sz, 2, 0, STEP_REDUCESCATTER, COLL_RING, FIDELITY_STEP, S),
		       want, 0.01, "reduce-scatter");
	}
}

Test(sim, tree_allreduce)
{
	/* Binomial tree over 8 GPUs of a DGX: reduce then broadcast,
	 * ceil(log2 8) = 3 rounds each of the whole S = 8 MB:
	 * 6 x (1 us + 8e6 / B_nv). */
	double S = 8e6;
	int64_t sz[] = {8};
	double want = 6 * (1 * US + S / (A100_NVSWITCH_BPS));
	within(lone("dgx-a100:none", sz, 1, 0, STEP_ALLREDUCE, COLL_TREE, FIDELITY_STEP, S), want, 0.01,
	       "tree");
}

Test(sim, halving_doubling_allreduce)
{
	/* All 8 NPUs of an Atlas 800: halving exchanges S/2 with the rank 4
	 * away (PCIe), S/4 with 2 away and S/8 with 1 away (HCCS), doubling
	 * mirrors it: 2 [(2 us + S/2/31e9) + (1 us + S/4/30e9) + (1 us + S/8/30e9)]. */
	double S = 64e6;
	int64_t sz[] = {8};
	double want = 2 * ((2 * US + S / 2 / (31 * GB)) + (1 * US + S / 4 / (30 * GB)) +
	                   (1 * US + S / 8 / (30 * GB)));
	within(lone("atlas800-910a", sz, 1, 0, STEP_ALLREDUCE, COLL_HALVING_DOUBLING, FIDELITY_STEP,
	            S),
	       want, 0.01, "halving-doubling");
}

Test(sim, hierarchical_allreduce_64)
{
	/* dgx-a100-x128, 64 GPUs on 8 servers, S = 256 MB: ring
	 * reduce-scatter inside (7 steps of S/8 on NVSwitch), ring all-reduce
	 * of S/8 across the 8 servers (14 steps of S/64 on the NICs; 2.1 us the
	 * worst path), ring all-gather inside: 14 (1 us + S/8/B_nv) +
	 * 14 (2.1 us + S/64/B_ib). */
	double S = 256e6;
	int64_t sz[] = {64};
	double want = 14 * (1 * US + S / 8 / (A100_NVSWITCH_BPS)) + 14 * (2.1 * US + S / 64 / (A100_NIC_BPS));
	within(lone("dgx-a100-x128:none", sz, 1, 0, STEP_ALLREDUCE, COLL_HIERARCHICAL, FIDELITY_STEP, S),
	       want, 0.01, "step");
	within(lone("dgx-a100-x128:none", sz, 1, 0, STEP_ALLREDUCE, COLL_HIERARCHICAL, FIDELITY_COARSE,
	            S),
	       want, 0.01, "coarse");
}

Test(sim, direct_alltoall)
{
	/* 8 GPUs of a DGX send S/8 to each of the 7 others at once: 7 flows
	 * share each transmit and each receive port, each gets B_nv/7:
	 * 1 us + (S/8) / (B_nv / 7) = 1 us + 7/8 S / B_nv. */
	double S = 64e6;
	int64_t sz[] = {8};
	double want = 1 * US + 7.0 / 8 * S / (A100_NVSWITCH_BPS);
	within(lone("dgx-a100:none", sz, 1, 0, STEP_ALLTOALL, COLL_DIRECT, FIDELITY_STEP, S), want, 0.01,
	       "direct");
	/* pairwise (ring): 7 steps of S/8: 7 (1 us + S/8/B_nv) */
	want = 7 * (1 * US + S / 8 / (A100_NVSWITCH_BPS));
	within(lone("dgx-a100:none", sz, 1, 0, STEP_ALLTOALL, COLL_RING, FIDELITY_STEP, S), want, 0.01,
	       "pairwise");
}

/* Halving-doubling whose steps all cross one bandwidth runs, at fidelity
 * coarse (here phase, which keeps the transfers), as one exchange per pass
 * with the member at distance n/2 and a sleep of the other steps'
 * latencies. 8 GPUs of a DGX A100 (every step through the NVSwitch ports,
 * B = A100_NVSWITCH_BPS, 1 us), all-reduce of S = 64 MB: 6 us + 2·7/8·S/B
 * either way; 2 exchanges per member (16 messages) against 6 step by step
 * (48). On the 8 NPUs of an Atlas 800 the steps mix PCIe (distance 4,
 * 31 GB/s) and HCCS (30 GB/s): step by step at every fidelity. */
Test(sim, halving_doubling_in_one_exchange_where_its_steps_share_a_bandwidth)
{
	double S = 64e6;
	int64_t sz[] = {8};
	struct prog_step st = coll_step(sz, 1, 0, STEP_ALLREDUCE, S, 0);
	struct run p = simulate("dgx-a100:none", &st, 1, 1, 8, COLL_HALVING_DOUBLING, FIDELITY_PHASE);
	struct run s = simulate("dgx-a100:none", &st, 1, 1, 8, COLL_HALVING_DOUBLING, FIDELITY_STEP);
	double want = 6 * US + 1.75 * S / A100_NVSWITCH_BPS;
	within(p.r.iteration_s, want, 1e-4, "one exchange a pass");
	within(s.r.iteration_s, want, 1e-4, "step by step");
	cr_expect_eq(p.r.messages, 16);
	cr_expect_eq(s.r.messages, 48);
	arena_free(p.a);
	arena_free(s.a);
	p = simulate("atlas800-910a", &st, 1, 1, 8, COLL_HALVING_DOUBLING, FIDELITY_PHASE);
	cr_expect_eq(p.r.messages, 48, "mixed bandwidths: %lld messages", (long long)p.r.messages);
	arena_free(p.a);
}

Test(sim, direct_in_a_mesh)
{
	/* An HCCS quad of atlas800-910a (a 30 GB/s link per pair, 1 us):
	 * direct all-gather sends each member's S/4 to the 3 others at once,
	 * each on its own link: 1 us + S/4/30e9; all-reduce is a direct
	 * reduce-scatter then a direct all-gather: twice that. */
	double S = 64e6;
	int64_t sz[] = {2, 4}; /* axis 1: the quads {0..3} and {4..7} */
	double once = 1 * US + S / 4 / (30 * GB);
	within(lone("atlas800-910a", sz, 2, 1, STEP_ALLGATHER, COLL_DIRECT, FIDELITY_STEP, S), once,
	       0.01, "all-gather");
	within(lone("atlas800-910a", sz, 2, 1, STEP_ALLREDUCE, COLL_DIRECT, FIDELITY_STEP, S),
	       2 * once, 0.01, "all-reduce");
	within(lone("atlas800-910a", sz, 2, 1, STEP_ALLREDUCE, COLL_DIRECT, FIDELITY_COARSE, S),
	       2 * once, 0.01, "all-reduce, coarse");
	/* The 8 NPUs span the two quads (PCIe between): direct is no
	 * all-reduce there, the ring runs: 14 steps of S/8, each paced by its
	 * slowest transfer, an HCCS one (1 us + S/8/30e9 = 267.7 us against
	 * PCIe's 2 us + S/8/31e9 = 260.1 us). */
	int64_t all[] = {8};
	within(lone("atlas800-910a", all, 1, 0, STEP_ALLREDUCE, COLL_DIRECT, FIDELITY_STEP, S),
	       14 * (1 * US + S / 8 / (30 * GB)), 0.01, "across the quads");
}

Test(sim, fair_sharing_on_a_shared_link)
{
	/* pcie-8gpu: GPUs 0-4, 1-5, 2-6 and 3-7 each all-reduce S = 64 MB
	 * at once (two ring steps of S/2, each pair sending both ways), all
	 * across the CPU tier, whose 31 GB/s are shared by every flow: 8 flows,
	 * 31/8 GB/s each (their own 31 GB/s ports are not the limit), so each
	 * collective takes 2 (2 us + S/2 / (31e9 / 8)). */
	double S = 64e6;
	int64_t sz[] = {2, 4};
	struct prog_step st = coll_step(sz, 2, 0, STEP_ALLREDUCE, S, 0);
	struct run run = simulate("pcie-8gpu:none", &st, 1, 1, 8, COLL_RING, FIDELITY_STEP);
	within(run.r.iteration_s, 2 * (2 * US + S / 2 / (31 * GB / 8)), 0.02, "four groups");
	cr_assert_eq(run.r.n_collectives, 1);
	within(run.r.collectives[0].simulated_s, run.r.iteration_s, 1e-9, "slowest rank");
	cr_assert(strstr(run.r.links[0].name, "cpu-shared"), "busiest %s", run.r.links[0].name);
	arena_free(run.a);
}

Test(sim, two_streams_share_ports)
{
	/* atlas800-910a, ranks 0 and 4 over PCIe: stream 0 and stream 1 each
	 * all-reduce S = 64 MB at once over the same ports. Each ring step's
	 * flow shares its transmit port with the other stream's: 15.5 GB/s,
	 * so each collective takes 2 (2 us + S/2 / 15.5e9), twice the
	 * bandwidth term of one alone (2 (2 us + S/2 / 31e9)). */
	double S = 64e6;
	struct prog_step st[2];
	int64_t sz24[] = {2, 4};
	st[0] = coll_step(sz24, 2, 0, STEP_ALLREDUCE, S, 0);
	st[1] = coll_step(sz24, 2, 0, STEP_ALLREDUCE, S, 1);
	struct run run = simulate("atlas800-910a", st, 2, 1, 8, COLL_RING, FIDELITY_STEP);
	double want = 2 * (2 * US + S / 2 / (15.5 * GB));
	cr_assert_eq(run.r.n_collectives, 2);
	for (int i = 0; i < 2; i++)
		within(run.r.collectives[i].simulated_s, want, 0.02, "each stream");
	within(run.r.iteration_s, want, 0.02, "iteration");
	arena_free(run.a);
}

Test(sim, link_bytes_and_rank_times)
{
	/* The HCCS ring of 4: each directed link r -> r+1 carries the 6 chunks
	 * of S/4 = 1.5 S; each rank's stream 0 is in the collective throughout. */
	double S = 64e6;
	int64_t sz[] = {4};
	struct prog_step st[2];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .stream = 0, .op = 0, .label = "matmul",
	                           .seconds = 1e-3, .after = -1};
	st[1] = coll_step(sz, 1, 0, STEP_ALLREDUCE, S, 0);
	struct run run = simulate("atlas800-910a", st, 2, 2, 4, COLL_RING, FIDELITY_STEP);
	double coll = 6 * (1 * US + S / 4 / (30 * GB));
	within(run.r.iteration_s, 1e-3 + coll, 0.01, "iteration");
	cr_assert_eq(run.r.n_links, 4);
	cr_assert_eq(run.r.messages, 4 * 6);
	for (int i = 0; i < run.r.n_links; i++) {
		within(run.r.links[i].bytes, 1.5 * S, 1e-9, "link bytes");
		cr_assert(strstr(run.r.links[i].name, "hccs"), "%s", run.r.links[i].name);
	}
	cr_assert_eq(run.r.n_ranks, 4);
	for (int r = 0; r < 4; r++) {
		within(run.r.ranks[r].compute_s, 1e-3, 1e-9, "compute");
		within(run.r.ranks[r].comm_exposed_s, coll, 0.01, "exposed");
	}
	arena_free(run.a);
}

Test(sim, gradient_stream_overlaps_and_optimizer_waits)
{
	/* Stream 0: backward compute 1 ms, then the optimizer 0.5 ms; stream 1:
	 * a gradient all-reduce (HCCS ring of 4, S = 64 MB: 6 (1 us + S/4/30e9)
	 * = 3.206 ms) that starts after the backward step. The optimizer waits
	 * for it: 1 + 3.206 + 0.5 ms; stream 0's wait for the gradients is
	 * exposed communication, and it never idles. */
	double S = 64e6;
	int64_t sz[] = {4};
	struct prog_step st[3];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .phase = PHASE_BACKWARD, .stream = 0,
	                           .label = "backward", .seconds = 1e-3, .after = -1};
	st[1] = (struct prog_step){.kind = PROG_COMPUTE, .phase = PHASE_OPTIMIZER, .stream = 0,
	                           .op = -1, .label = "optimizer", .seconds = 0.5e-3, .after = -1};
	st[2] = coll_step(sz, 1, 0, STEP_ALLREDUCE, S, 1);
	st[2].phase = PHASE_GRADIENT;
	st[2].after = 0;
	struct run run = simulate("atlas800-910a", st, 3, 1, 4, COLL_RING, FIDELITY_STEP);
	double coll = 6 * (1 * US + S / 4 / (30 * GB));
	within(run.r.iteration_s, 1.5e-3 + coll, 0.01, "iteration");
	within(run.r.ranks[0].compute_s, 1.5e-3, 1e-9, "compute");
	within(run.r.ranks[0].comm_exposed_s, coll, 0.01, "exposed");
	cr_assert(run.r.ranks[0].idle_s < 1e-9, "idle %g", run.r.ranks[0].idle_s);
	arena_free(run.a);
}

Test(sim, trace_events)
{
	/* compute then a collective on 2 ranks: 2 events per rank, named by
	 * the steps' labels, in time order per rank. */
	int64_t sz[] = {2};
	struct prog_step st[2];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .label = "matmul", .seconds = 1e-3,
	                           .after = -1};
	st[1] = coll_step(sz, 1, 0, STEP_ALLGATHER, 1e6, 0);
	struct run run = {.a = arena_new()};
	struct topology *t = fixture_topology(run.a, "dgx-a100:none");
	struct program p = fixture_program(run.a, st, 2, 2, 2, 2);
	struct sim_options o = {.fidelity = FIDELITY_STEP, .algo = COLL_RING, .trace = true};
	struct diag_list d;
	diag_list_init(&d);
	cr_assert(sim_run(run.a, t, &p, &o, &run.r, &d));
	cr_assert_eq(run.r.n_events, 2 * 2 * 2, "2 ranks x 2 repetitions x 2 steps");
	for (int64_t i = 0; i < run.r.n_events; i++) {
		const struct sim_event *e = &run.r.events[i];
		cr_assert_str_eq(e->name, e->kind == SIM_EV_COMPUTE ? "matmul" : "collective");
		cr_assert(e->end_s >= e->start_s);
	}
	diag_list_free(&d);
	arena_free(run.a);
}

/* Fidelity coarse prices a collective by its formula where nothing else
 * can touch its links (sim/run.c); fidelity phase runs the same coarse
 * transfers for every collective. On a contention-free program the two
 * must agree in every figure. */
static struct run sim_with(const char *tname, struct prog_step *st, int n_steps, int n_section,
                           int64_t n_ranks, int64_t repeat, enum collective_algo algo,
                           enum sim_fidelity fid, bool trace)
{
	struct run run = {.a = arena_new()};
	struct topology *t = fixture_topology(run.a, tname);
	struct program p = fixture_program(run.a, st, n_steps, n_section, n_ranks, repeat);
	struct sim_options o = {.fidelity = fid, .algo = algo, .trace = trace};
	struct diag_list d;
	diag_list_init(&d);
	cr_assert(sim_run(run.a, t, &p, &o, &run.r, &d), "sim_run: %s",
	          d.count ? d.items[0].msg : "?");
	diag_list_free(&d);
	return run;
}

Test(sim, formula_collectives_match_their_transfers)
{
	/* dgx-a100, the 8 GPUs as one tensor-parallel group, 3 micro-batches
	 * of: compute 1 ms, ring all-reduce of S = 32 MB. Every transfer of
	 * the ring crosses two NVSwitch ports nothing else uses, so coarse
	 * prices each by its formula: 2 (n-1) (1 us + S/8 / B_nv) = 14 us +
	 * 186.67 us; the iteration is 3 (1 ms + that), no message at all, and
	 * phase's 8 ranks x 2 transfers x 3 give the same figures. */
	double S = 32e6;
	int64_t sz[] = {8};
	struct prog_step st[2];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .label = "matmul", .seconds = 1e-3,
	                           .after = -1};
	st[1] = coll_step(sz, 1, 0, STEP_ALLREDUCE, S, 0);
	double coll = 14 * (1 * US + S / 8 / (A100_NVSWITCH_BPS));
	struct run c = sim_with("dgx-a100:none", st, 2, 2, 8, 3, COLL_RING, FIDELITY_COARSE, false);
	struct run p = sim_with("dgx-a100:none", st, 2, 2, 8, 3, COLL_RING, FIDELITY_PHASE, false);
	within(c.r.iteration_s, 3 * (1e-3 + coll), 1e-9, "coarse");
	within(p.r.iteration_s, 3 * (1e-3 + coll), 1e-9, "phase");
	cr_assert_eq(c.r.messages, 0);
	cr_assert_eq(c.r.by_formula, 3, "one group, 3 micro-batches");
	cr_assert_eq(p.r.messages, 8 * 2 * 3);
	cr_assert_eq(p.r.by_formula, 0);
	for (int r = 0; r < 8; r++) {
		within(c.r.ranks[r].compute_s, p.r.ranks[r].compute_s, 1e-9, "compute");
		within(c.r.ranks[r].comm_exposed_s, 3 * coll, 1e-9, "exposed");
		within(p.r.ranks[r].comm_exposed_s, 3 * coll, 1e-9, "exposed (phase)");
	}
	/* Each ring transfer carries 7 S/8 per phase: every port 2 x 3 x 7S/8. */
	cr_assert_eq(c.r.n_links, p.r.n_links);
	cr_assert_eq(c.r.n_links, 16, "8 transmit and 8 receive ports");
	for (int i = 0; i < c.r.n_links; i++) {
		within(c.r.links[i].bytes, 6 * 7 * S / 8, 1e-12, "link bytes");
		within(p.r.links[i].bytes, 6 * 7 * S / 8, 1e-12, "link bytes (phase)");
	}
	arena_free(c.a);
	arena_free(p.a);
}

Test(sim, a_ring_across_two_tiers_runs_its_transfers)
{
	/* atlas800-910a, a ring of all 8 NPUs: 6 hops on HCCS (30 GB/s, 1 us)
	 * and 2 on PCIe (31 GB/s, 2 us). The formula prices the ring at one
	 * rate; its transfers pace each other hop by hop, so coarse leaves it
	 * to them: the same messages and time as phase. */
	int64_t sz[] = {8};
	struct prog_step st = coll_step(sz, 1, 0, STEP_ALLREDUCE, 64e6, 0);
	struct run c = sim_with("atlas800-910a", &st, 1, 1, 8, 1, COLL_RING, FIDELITY_COARSE, false);
	struct run p = sim_with("atlas800-910a", &st, 1, 1, 8, 1, COLL_RING, FIDELITY_PHASE, false);
	cr_assert_eq(c.r.by_formula, 0);
	cr_assert_eq(c.r.messages, 8 * 2);
	within(c.r.iteration_s, p.r.iteration_s, 1e-12, "iteration");
	arena_free(c.a);
	arena_free(p.a);
}

Test(sim, shared_ports_keep_their_transfers)
{
	/* two_streams_share_ports at fidelity coarse: the two streams' groups
	 * share the PCIe ports, so neither goes by its formula and each still
	 * takes twice the bandwidth term: 2 (2 us + S/2 / 15.5e9). */
	double S = 64e6;
	struct prog_step st[2];
	int64_t sz24[] = {2, 4};
	st[0] = coll_step(sz24, 2, 0, STEP_ALLREDUCE, S, 0);
	st[1] = coll_step(sz24, 2, 0, STEP_ALLREDUCE, S, 1);
	struct run c = sim_with("atlas800-910a", st, 2, 1, 8, 1, COLL_RING, FIDELITY_COARSE, false);
	cr_assert_eq(c.r.by_formula, 0);
	within(c.r.iteration_s, 2 * (2 * US + S / 2 / (15.5 * GB)), 0.02, "iteration");
	arena_free(c.a);
}

Test(sim, compute_runs_are_slept_at_once_but_traced_one_by_one)
{
	/* Two compute steps of 1 and 2 ms, then a formula all-gather on the
	 * 2 GPUs of dgx-a100 (1 us + S/2 / B_nv for S = 1 MB), twice. The
	 * trace still shows each step: per rank and repetition k (period
	 * T = 3 ms + the collective), matmul [kT, kT + 1 ms], gelu [kT + 1 ms,
	 * kT + 3 ms], the collective [kT + 3 ms, (k+1) T]. */
	int64_t sz[] = {2};
	double coll = 1 * US + 0.5e6 / (A100_NVSWITCH_BPS), T = 3e-3 + coll;
	struct prog_step st[3];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .label = "matmul", .seconds = 1e-3,
	                           .after = -1};
	st[1] = (struct prog_step){.kind = PROG_COMPUTE, .label = "gelu", .seconds = 2e-3,
	                           .after = -1};
	st[2] = coll_step(sz, 1, 0, STEP_ALLGATHER, 1e6, 0);
	struct run c = sim_with("dgx-a100:none", st, 3, 3, 2, 2, COLL_RING, FIDELITY_COARSE, true);
	cr_assert_eq(c.r.by_formula, 2);
	within(c.r.iteration_s, 2 * T, 1e-9, "iteration");
	cr_assert_eq(c.r.n_events, 2 * 2 * 3);
	int seen = 0;
	for (int64_t i = 0; i < c.r.n_events; i++) {
		const struct sim_event *e = &c.r.events[i];
		double k = (double)e->micro * T;
		double s0 = !strcmp(e->name, "matmul") ? k : !strcmp(e->name, "gelu") ? k + 1e-3
		                                                                       : k + 3e-3;
		double s1 = !strcmp(e->name, "matmul") ? k + 1e-3 : !strcmp(e->name, "gelu")
		                                                        ? k + 3e-3 : k + T;
		within(e->start_s + 1, s0 + 1, 1e-12, e->name);
		within(e->end_s + 1, s1 + 1, 1e-12, e->name);
		seen++;
	}
	cr_assert_eq(seen, 12);
	arena_free(c.a);
}

Test(sim, gradient_buckets_beside_formula_collectives)
{
	/* dgx-a100, 8 GPUs, 2 micro-batches of: compute 1 ms, a tensor-
	 * parallel ring all-reduce (stream 0, S = 32 MB), compute 1 ms, another;
	 * a gradient ring all-reduce of 64 MB on stream 1 after the first
	 * compute of the last micro-batch (once per iteration: it shares the
	 * ports). While it runs, stream 0's collective meets it on the ports:
	 * coarse runs that one's transfers (or the gradients wait for its
	 * formula), phase shares the ports. Both load the ports with the same
	 * bytes, so the iteration is the same within the time the two orders
	 * can differ by: at most one tensor-parallel all-reduce, 2.6% of it
	 * here; and the first micro-batch (no gradients yet) goes by formula. */
	double S = 32e6;
	int64_t sz[] = {8};
	struct prog_step st[5];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .label = "a", .seconds = 1e-3,
	                           .after = -1};
	st[1] = coll_step(sz, 1, 0, STEP_ALLREDUCE, S, 0);
	st[2] = (struct prog_step){.kind = PROG_COMPUTE, .label = "b", .seconds = 1e-3,
	                           .after = -1};
	st[3] = coll_step(sz, 1, 0, STEP_ALLREDUCE, S, 0);
	st[4] = coll_step(sz, 1, 0, STEP_ALLREDUCE, 2 * S, 1);
	st[4].phase = PHASE_GRADIENT;
	st[4].after = 0;
	struct run c = sim_with("dgx-a100:none", st, 5, 4, 8, 2, COLL_RING, FIDELITY_COARSE, false);
	struct run p = sim_with("dgx-a100:none", st, 5, 4, 8, 2, COLL_RING, FIDELITY_PHASE, false);
	double tp = 14 * (1 * US + S / 8 / (A100_NVSWITCH_BPS));
	cr_assert(c.r.by_formula >= 2, "the first micro-batch's two: %lld",
	          (long long)c.r.by_formula);
	within(c.r.iteration_s, p.r.iteration_s, tp / p.r.iteration_s, "iteration");
	arena_free(c.a);
	arena_free(p.a);
}

Test(sim, bad_program_is_a_diagnostic)
{
	/* 16 ranks on an 8-device server: an error, no crash. */
	struct arena *a = arena_new();
	struct topology *t = fixture_topology(a, "dgx-a100:none");
	struct program p = fixture_program(a, NULL, 0, 0, 16, 1);
	struct sim_options o = {0};
	struct sim_result r;
	struct diag_list d;
	diag_list_init(&d);
	cr_assert(!sim_run(a, t, &p, &o, &r, &d));
	cr_assert_eq(d.errors, 1);
	diag_list_free(&d);
	arena_free(a);
}

/* NCCL's algorithms run as transfers (dgx-a100-x128, its library NCCL):
 * the 16 GPUs of two servers all-reduce S = 256 MiB by rings over the
 * rails and by the tree; each simulated alone takes its formula
 * (tests/sim/test_lower.c derives both by hand) within 2%: the rings'
 * steps, the chains' and the servers' exchanges on the links, the
 * protocol's latency slept first and its efficiency in the bytes. */
Test(sim, nccl_rails_and_tree_take_their_formula)
{
	int64_t sz[] = {16};
	double S = 256.0 * 1048576;
	struct arena *a = arena_new();
	struct topology *t = fixture_topology(a, "dgx-a100-x128");
	int64_t r[16];
	for (int i = 0; i < 16; i++)
		r[i] = i;
	const enum collective_algo algos[2] = {COLL_RING, COLL_TREE};
	for (int k = 0; k < 2; k++) {
		double f = cost_collective_algo_s(t, STEP_ALLREDUCE, algos[k], r, 16, S);
		within(lone("dgx-a100-x128", sz, 1, 0, STEP_ALLREDUCE, algos[k], FIDELITY_STEP, S), f,
		       0.02, algos[k] == COLL_RING ? "rails" : "tree");
	}
	/* all-gather and reduce-scatter: rings over the rails too, at step
	 * fidelity and at coarse (one transfer per ring and phase) */
	const enum step_kind kinds[2] = {STEP_ALLGATHER, STEP_REDUCESCATTER};
	const enum sim_fidelity fids[2] = {FIDELITY_STEP, FIDELITY_PHASE};
	for (int k = 0; k < 2; k++) {
		double f = cost_collective_algo_s(t, kinds[k], COLL_RING, r, 16, S);
		for (int x = 0; x < 2; x++)
			within(lone("dgx-a100-x128", sz, 1, 0, kinds[k], COLL_AUTO, fids[x], S), f, 0.02,
			       step_kind_names[kinds[k]]);
	}
	arena_free(a);
}

/* One collective of n ranks 0..n-1 simulated alone on `topo` (asking for
 * `asked`) takes the formula of `algo` within 2%; the formula returned. */
static double takes_its_formula(const char *topo, int n, enum step_kind kind,
                                enum collective_algo asked, enum collective_algo algo, double S,
                                const char *what)
{
	struct arena *a = arena_new();
	struct topology *t = fixture_topology(a, topo);
	int64_t r[64], size[1] = {n};
	cr_assert_leq(n, 64);
	for (int i = 0; i < n; i++)
		r[i] = i;
	double f = cost_collective_algo_s(t, kind, algo, r, n, S);
	within(lone(topo, size, 1, 0, kind, asked, FIDELITY_STEP, S), f, 0.02, what);
	arena_free(a);
	return f;
}

/* NCCL's NVLS as transfers (dgx-h100, "nvls": true): 8 GPUs of one server
 * all-reduce 1 GiB, and 16 of two servers (dgx-h100-x64) by the NVLS
 * tree: each member's shares to the others of its server at once (and
 * S/8 to its peer on the other server), the switch's reduction in the
 * bytes' scale. Simulated alone each takes its formula
 * (tests/sim/test_lower.c derives both by hand: 24 us + S / 272.3 GB/s
 * and 53.5 us + S / 272.3 GB/s) within 2%; all-gather inside the server
 * asked for NVLS too. */
Test(sim, nccl_nvls_takes_its_formula)
{
	double S = 1073741824.0;
	double f = takes_its_formula("dgx-h100", 8, STEP_ALLREDUCE, COLL_AUTO, COLL_NVLS, S,
	                             "one server");
	within(f, 24e-6 + S / (5.0 / 6 * 8 * 450e9 * 0.817 / 9), 1e-9, "formula, by hand");
	takes_its_formula("dgx-h100", 8, STEP_ALLGATHER, COLL_NVLS, COLL_NVLS, S, "all-gather");
	takes_its_formula("dgx-h100-x64", 16, STEP_ALLREDUCE, COLL_AUTO, COLL_NVLS, S,
	                  "two servers");
}

/* HCCL's pipeline as transfers (atlas800t-a2-910b-x16): 16 NPUs of two
 * servers all-reduce 1 GiB, 64 of eight all-gather it; each round's
 * transfers across and inside run at once. Simulated alone each takes its
 * formula (tests/sim/test_lower.c: 5.6 us + S / 73.92 GB/s, 22 us + S /
 * 147.8 GB/s) within 2%. */
Test(sim, hccl_pipeline_takes_its_formula)
{
	double S = 1073741824.0;
	double f = takes_its_formula("atlas800t-a2-910b-x16", 16, STEP_ALLREDUCE, COLL_AUTO,
	                             COLL_PIPELINE, S, "all-reduce");
	within(f, 5.6e-6 + S / (4 * 56e9 * 0.33), 1e-9, "formula, by hand");
	takes_its_formula("atlas800t-a2-910b-x16", 64, STEP_ALLGATHER, COLL_PIPELINE, COLL_PIPELINE,
	                  S, "all-gather");
}

/* Groups of one step share the NICs they cross at once. Two servers of 4
 * GPUs with one 12.5 GB/s NIC each (tests/data/good/pcie-4gpu-1nic-x2.json,
 * no collective library), tensor parallel 4 inside x data parallel 2: the
 * data-parallel all-reduce of S = 64 MiB runs in 4 groups {i, 4 + i} at
 * once, all through each server's one NIC. The step puts 4 ranks on each
 * server (cost_groups_crossing); a group's ring of 2 then has a quarter of
 * the NIC: 2 x 1/2 x S / (12.5 GB/s / 4) + 2 x (0.6 + 0.3 + 0.6) us =
 * 21.4780 ms + 3 us, where the group alone would take a quarter of the
 * bandwidth term. Simulated with the four groups' transfers contending,
 * the step takes that within 3%. */
Test(sim, concurrent_groups_share_the_nics)
{
	const char *topo = "../tests/data/good/pcie-4gpu-1nic-x2";
	int64_t sz[] = {2, 4};
	double S = 64.0 * 1048576;
	struct prog_step st = coll_step(sz, 2, 0, STEP_ALLREDUCE, S, 0);
	struct arena *a = arena_new();
	struct topology *t = fixture_topology(a, topo);
	cr_assert_eq(cost_groups_crossing(t, &st.groups), 4);
	int64_t r[2] = {1, 5};
	double want = S / (12.5e9 / 4) + 2 * 1.5e-6;
	within(cost_collective_algo_in_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 2, S, 4), want, 1e-9,
	       "shared NIC, by hand");
	within(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_AUTO, r, 2, S),
	       S / 12.5e9 + 2 * 1.5e-6, 1e-9, "the group alone");
	struct run run = simulate(topo, &st, 1, 1, 8, COLL_AUTO, FIDELITY_STEP);
	within(run.r.iteration_s, want, 0.03, "simulated");
	arena_free(run.a);
	arena_free(a);
}

/* Stragglers in the simulation: 8 ranks of one server, each computing
 * 10 ms then all-reducing 1 MB, with speed_cv 0.05. Each rank computes
 * 10 ms x its speed / the slowest's expected factor (the program's
 * compute is the estimate's, which is already the slowest device's): the
 * collective starts when the slowest rank arrives, so the iteration is
 * the same all-reduce after max over ranks of that compute. The same seed
 * gives the same iteration; another seed another. */
Test(sim, stragglers_wait_for_the_slowest)
{
	int64_t sz[] = {8};
	struct prog_step st[2];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .label = "work", .seconds = 10e-3,
	                           .after = -1};
	st[1] = coll_step(sz, 1, 0, STEP_ALLREDUCE, 1e6, 0);
	double it[3];
	const uint64_t seeds[3] = {5, 5, 6};
	for (int k = 0; k < 3; k++) {
		struct run run = {.a = arena_new()};
		struct topology *t = fixture_topology(run.a, "dgx-a100:none");
		t->device.speed_cv = 0.05;
		struct program p = fixture_program(run.a, st, 2, 2, 8, 1);
		struct sim_options o = {.fidelity = FIDELITY_STEP, .algo = COLL_RING, .seed = seeds[k]};
		struct diag_list d;
		diag_list_init(&d);
		cr_assert(sim_run(run.a, t, &p, &o, &run.r, &d));
		it[k] = run.r.iteration_s;
		double slowest = 0;
		for (int r = 0; r < 8; r++)
			slowest = fmax(slowest, cost_device_speed(&t->device, seeds[k], r));
		double comp = 10e-3 * slowest / cost_straggler_factor(&t->device, 8);
		/* the all-reduce alone: the ring of 8 on NVSwitch, 14 us + 1.75 MB / B */
		double ar = 14e-6 + 1.75e6 / A100_NVSWITCH_BPS;
		within(it[k], comp + ar, 0.002, "slowest rank's compute + the all-reduce");
		/* the collective's own time starts when its last member arrives:
		 * the others' wait is theirs, not the links' (the fastest rank
		 * waits some 10 ms x 0.05 x 3, a hundred times the all-reduce) */
		cr_assert_eq(run.r.n_collectives, 1);
		within(run.r.collectives[0].simulated_s, ar, 0.01, "the all-reduce, not the wait");
		diag_list_free(&d);
		arena_free(run.a);
	}
	cr_assert_eq(it[0], it[1], "same seed, same result");
	cr_assert_neq(it[0], it[2], "another seed");
}

/* Stragglers on the formula path: dgx-a100 as shipped (NCCL, speed_cv
 * 0.01), the 8 GPUs all-reducing 32 MB after 1 ms of compute, 3
 * micro-batches. Coarse prices the collectives by their formula and lets
 * the ranks of the middle micro-batch go on without a barrier (lockstep),
 * charging each the wait for the slowest; phase runs every transfer and
 * barrier. Both: 3 x (1 ms x the slowest rank's factor / the expected
 * slowest's + the collective's formula). */
Test(sim, stragglers_in_lockstep_as_at_the_barrier)
{
	double S = 32e6;
	int64_t sz[] = {8};
	struct prog_step st[2];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .label = "matmul", .seconds = 1e-3,
	                           .after = -1};
	st[1] = coll_step(sz, 1, 0, STEP_ALLREDUCE, S, 0);
	struct run c = sim_with("dgx-a100", st, 2, 2, 8, 3, COLL_RING, FIDELITY_COARSE, false);
	struct run p = sim_with("dgx-a100", st, 2, 2, 8, 3, COLL_RING, FIDELITY_PHASE, false);
	struct topology *t = fixture_topology(c.a, "dgx-a100");
	int64_t r[8] = {0, 1, 2, 3, 4, 5, 6, 7};
	double slowest = 0;
	for (int k = 0; k < 8; k++)
		slowest = fmax(slowest, cost_device_speed(&t->device, 0, k));
	double comp = 1e-3 * slowest / cost_straggler_factor(&t->device, 8);
	double f = cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_RING, r, 8, S);
	cr_assert_gt(c.r.by_formula, 0);
	within(c.r.iteration_s, 3 * (comp + f), 1e-6, "coarse");
	within(p.r.iteration_s, 3 * (comp + f), 1e-3, "phase");
	/* and each collective's own time is its formula, the wait left out */
	within(c.r.collectives[0].simulated_s, f, 1e-6, "coarse, the collective");
	within(p.r.collectives[0].simulated_s, f, 1e-3, "phase, the collective");
	arena_free(c.a);
	arena_free(p.a);
}

/* shardlab simulate --seed: the same seed, the same bytes; another seed,
 * another draw of the devices' speeds (dgx-h100's speed_cv 0.01); a seed
 * that is not a count is a usage error. */
Test(sim, cli_seed)
{
	struct cli_run a = fixture_shardlab("simulate --json scenarios/mistral-7b-h100-64p.json --seed 1",
	                                    false);
	struct cli_run b = fixture_shardlab("simulate --json scenarios/mistral-7b-h100-64p.json --seed 1",
	                                    false);
	struct cli_run c = fixture_shardlab("simulate --json scenarios/mistral-7b-h100-64p.json --seed 2",
	                                    false);
	cr_assert_eq(a.status, 0);
	cr_assert_str_eq(a.out, b.out);
	cr_assert_str_neq(a.out, c.out);
	cr_assert_not_null(strstr(a.out, "\"seed\":\t1,"), "%s", a.out);
	free(a.out);
	free(b.out);
	free(c.out);
	struct cli_run e = fixture_shardlab("simulate scenarios/ffn-8p.json --seed -1", true);
	cr_assert_eq(e.status, 2);
	cr_assert_str_eq(e.out, "shardlab simulate: --seed: expected an integer from 0 to "
	                        "18446744073709551615, got '-1'\n");
	free(e.out);
}

/* ------------------------------------------------------------ jobs together
 *
 * tests/data/cosim/two-leaves.json: four 8-NPU servers, servers 0-1 under
 * leaf 0 and 2-3 under leaf 1 (16 NIC ports a leaf), one 100 Gb/s NIC per
 * NPU (B = 12.5 GB/s, 0.6 us), switches 0.6 us, oversubscribed 16:1: with
 * the leaves' uplinks pooled a leaf's uplink carries 16 x 12.5 / 16 =
 * 12.5 GB/s in all. A route across the spine: tx (0.6 + 0.6 us), leaf up
 * (0.6), leaf down (0.6), rx (0.6): 3 us; within a leaf tx, rx: 1.8 us. */

struct jobs_run {
	struct arena *a;
	struct sim_result r[2];
	struct sim_shared shared;
};

/* Jobs of one AllReduce each (ring, S bytes) over all their ranks, on
 * the devices given, simulated together (n_jobs 2) or alone (1), at a
 * fidelity; at fidelity representative the AllReduce is the gradients'
 * (phase gradient: its group is the data-parallel one, rank 0 runs it for
 * all). */
static struct jobs_run jobs_simulate_over(int n_jobs, int64_t n_ranks, const int64_t *devices[2],
                                          double bytes, enum sim_fidelity fid, double over)
{
	struct jobs_run run = {.a = arena_new()};
	struct diag_list d;
	diag_list_init(&d);
	struct topology *t = topo_load(run.a, "tests/data/cosim/two-leaves.json", &d);
	cr_assert_not_null(t);
	t->coll.library = TOPO_COLL_NONE;
	t->device.speed_cv = 0;
	if (over > 0)
		t->fabric.oversubscription = over;
	int64_t sizes[] = {n_ranks};
	struct prog_step st = coll_step(sizes, 1, 0, STEP_ALLREDUCE, bytes, 0);
	if (fid == FIDELITY_REPRESENTATIVE)
		st.phase = PHASE_GRADIENT;
	struct program p = fixture_program(run.a, &st, 1, 1, n_ranks, 1);
	struct sim_job jobs[2] = {{&p, devices[0]}, {&p, devices[1]}};
	struct sim_options o = {.fidelity = fid, .algo = COLL_RING, .leaf_uplinks = true};
	bool ok = sim_run_jobs(run.a, t, jobs, n_jobs, &o, run.r, &run.shared, &d);
	cr_assert(ok, "sim_run_jobs failed: %s", d.count ? d.items[0].msg : "?");
	diag_list_free(&d);
	return run;
}

/* The same on the file's fabric (oversubscribed 16:1). */
static struct jobs_run jobs_simulate_at(int n_jobs, int64_t n_ranks, const int64_t *devices[2],
                                        double bytes, enum sim_fidelity fid)
{
	return jobs_simulate_over(n_jobs, n_ranks, devices, bytes, fid, 0);
}

static struct jobs_run jobs_simulate(int n_jobs, int64_t n_ranks, const int64_t *devices[2],
                                     double bytes)
{
	return jobs_simulate_at(n_jobs, n_ranks, devices, bytes, FIDELITY_COARSE);
}

/* The links two rings share: both leaves' uplinks and downlinks, S bytes
 * from each job, at a utilisation over the run's bins 1 to 18. */
static void expect_leaves_shared(const struct sim_shared *sh, double S, double utilisation)
{
	cr_assert_eq(sh->n_links, 4);
	for (int i = 0; i < 4; i++) {
		cr_assert(strncmp(sh->links[i].name, "leaf-", 5) == 0, "%s", sh->links[i].name);
		within(sh->links[i].bytes[0], S, 1e-12, "job 0's bytes");
		within(sh->links[i].bytes[1], S, 1e-12, "job 1's bytes");
		for (int k = 1; k < 19; k++)
			within(sh->links[i].utilisation[k], utilisation, 1e-3, "a shared link, a bin");
	}
}

Test(sim, two_rings_sharing_one_uplink_get_half_its_rate)
{
	/* Two 2-rank rings from server 0 (leaf 0) to server 2 (leaf 1): NPU 0
	 * with 16, NPU 1 with 17. Each ring AllReduce of S: two phases of
	 * S/2 each way. Alone a phase takes S/2 / 12.5 GB/s + 3 us; together
	 * both rings' flows cross leaf 0's uplink (and leaf 1's), 6.25 GB/s
	 * each: S/2 / 6.25 GB/s + 3 us. S = 125 MB: alone 2 x (5 ms + 3 us),
	 * together 2 x (10 ms + 3 us). */
	static const int64_t a[] = {0, 16}, b[] = {1, 17};
	const int64_t *devs[2] = {a, b};
	double S = 125e6;
	struct jobs_run alone = jobs_simulate(1, 2, devs, S);
	within(alone.r[0].iteration_s, 2 * (S / 2 / (12.5 * GB) + 3 * US), 1e-9, "alone");
	struct jobs_run both = jobs_simulate(2, 2, devs, S);
	for (int j = 0; j < 2; j++)
		within(both.r[j].iteration_s, 2 * (S / 2 / (6.25 * GB) + 3 * US), 1e-9, "together");
	/* Over time every link of a ring's route carries its flow: alone at
	 * the full 12.5 GB/s (utilisation 1), together at half. The bins start
	 * at 1 us and double until the iteration fits in 32: alone (10.006 ms)
	 * 512 us wide, together (20.006 ms) 1,024 us; a bin wholly inside
	 * the run sees the flow's bytes at their mean rate, S/2 over 5 ms +
	 * 3 us (alone) or 10 ms + 3 us (together), a 3 us latency in 5 ms:
	 * within 0.1% of 1 and 0.5. Past the end, nothing. */
	within(alone.r[0].bin_s, 512 * US, 1e-12, "bin width alone");
	within(both.r[0].bin_s, 1024 * US, 1e-12, "bin width together");
	cr_assert_gt(alone.r[0].n_series, 0);
	for (int i = 0; i < alone.r[0].n_series; i++)
		for (int k = 1; k < 19; k++)
			within(alone.r[0].series[i].utilisation[k], 1, 1e-3, "alone, a bin");
	for (int i = 0; i < both.r[0].n_series; i++) {
		for (int k = 1; k < 19; k++)
			within(both.r[0].series[i].utilisation[k], 0.5, 1e-3, "together, a bin");
		cr_expect_eq(both.r[0].series[i].utilisation[25], 0);
	}
	/* The links they fight over: both leaves' uplinks and downlinks, S each
	 * way from each job; both flows at 6.25 GB/s fill the 12.5 GB/s link. */
	expect_leaves_shared(&both.shared, S, 1);
	arena_free(alone.a);
	arena_free(both.a);
}

/* The two rings above on the fabric not oversubscribed: a leaf's pooled
 * uplinks carry its 16 NIC ports' 16 x 12.5 = 200 GB/s, which the NICs
 * cannot fill, so SimGrid is given each NIC's own share of them (the same
 * switch latency; sim/platform.c, unpooled_link) and the rings run at
 * their NICs' rate together as alone: 2 x (S/2 / 12.5 GB/s + 3 us). The
 * links they share are still the leaves' pools, S each way from each job,
 * two flows of 12.5 GB/s in 200: utilisation 1/8. */
Test(sim, rings_on_a_fabric_not_oversubscribed_do_not_contend)
{
	static const int64_t a[] = {0, 16}, b[] = {1, 17};
	const int64_t *devs[2] = {a, b};
	double S = 125e6, want = 2 * (S / 2 / (12.5 * GB) + 3 * US);
	struct jobs_run alone = jobs_simulate_over(1, 2, devs, S, FIDELITY_COARSE, 1);
	struct jobs_run both = jobs_simulate_over(2, 2, devs, S, FIDELITY_COARSE, 1);
	within(alone.r[0].iteration_s, want, 1e-9, "alone");
	for (int j = 0; j < 2; j++)
		within(both.r[j].iteration_s, want, 1e-9, "together");
	expect_leaves_shared(&both.shared, S, 0.125);
	arena_free(alone.a);
	arena_free(both.a);
}

Test(sim, a_job_packed_under_one_leaf_is_unaffected_by_another)
{
	/* Job 0 on NPU 0 (server 0) and 8 (server 1), both under leaf 0: tx,
	 * rx, 1.8 us; its ring takes 2 x (S/2 / 12.5 GB/s + 1.8 us) alone and
	 * beside job 1 (NPU 1 and 17), whose flows cross leaf 0's uplink on
	 * other NICs. */
	static const int64_t a[] = {0, 8}, b[] = {1, 17};
	const int64_t *devs[2] = {a, b};
	double S = 125e6, want = 2 * (S / 2 / (12.5 * GB) + 1.8 * US);
	struct jobs_run alone = jobs_simulate(1, 2, devs, S);
	struct jobs_run both = jobs_simulate(2, 2, devs, S);
	within(alone.r[0].iteration_s, want, 1e-9, "alone");
	within(both.r[0].iteration_s, want, 1e-9, "together");
	cr_assert_eq(both.shared.n_links, 0);
	arena_free(alone.a);
	arena_free(both.a);
}

Test(sim, data_parallel_jobs_contend_on_the_spine_only_when_spread)
{
	/* Two 16-rank data-parallel jobs, one ring AllReduce of S each: of a
	 * ring's 16 hops two cross servers (7 -> 8, 15 -> 0) at 12.5 GB/s,
	 * the rest inside a server at 30 or 31 GB/s, so a phase lasts as long
	 * as its cross-server transfer of 15/16 S (latencies: microseconds
	 * against 0.12 s). Packed (job 0 on servers 0-1, job 1 on 2-3) the
	 * hops stay under their leaf: 2 x 15/16 S / 12.5 GB/s alone or
	 * together. Spread (job 0 on servers 0 and 2, job 1 on 1 and 3) both
	 * jobs' hops cross the spine: alone the same, together the two share
	 * each leaf's 12.5 GB/s uplink: 2 x 15/16 S / 6.25 GB/s. */
	int64_t packed[2][16], spread[2][16];
	for (int r = 0; r < 16; r++) {
		packed[0][r] = r;
		packed[1][r] = 16 + r;
		spread[0][r] = r < 8 ? r : 16 + r - 8;
		spread[1][r] = r < 8 ? 8 + r : 24 + r - 8;
	}
	double S = 1.6e9, fast = 2 * 15.0 / 16 * S / (12.5 * GB);
	const int64_t *p[2] = {packed[0], packed[1]}, *s[2] = {spread[0], spread[1]};
	struct jobs_run pa = jobs_simulate(1, 16, p, S), pb = jobs_simulate(2, 16, p, S);
	struct jobs_run sa = jobs_simulate(1, 16, s, S), sb = jobs_simulate(2, 16, s, S);
	within(pa.r[0].iteration_s, fast, 1e-3, "packed alone");
	within(pb.r[0].iteration_s, pa.r[0].iteration_s, 1e-12, "packed together");
	within(pb.r[1].iteration_s, pa.r[0].iteration_s, 1e-12, "packed together, job 1");
	within(sa.r[0].iteration_s, fast, 1e-3, "spread alone");
	within(sb.r[0].iteration_s, 2 * fast, 1e-3, "spread together");
	within(sb.r[1].iteration_s, 2 * fast, 1e-3, "spread together, job 1");
	cr_assert_eq(pb.shared.n_links, 0);
	cr_assert_eq(sb.shared.n_links, 4);
	arena_free(pa.a);
	arena_free(pb.a);
	arena_free(sa.a);
	arena_free(sb.a);
}

Test(sim, jobs_on_one_device_are_refused)
{
	struct arena *a = arena_new();
	struct topology *t = fixture_topology(a, "atlas800-910a-x4:none");
	int64_t sizes[] = {2};
	struct prog_step st = coll_step(sizes, 1, 0, STEP_ALLREDUCE, 1e6, 0);
	struct program p = fixture_program(a, &st, 1, 1, 2, 1);
	static const int64_t x[] = {0, 1}, y[] = {1, 2};
	struct sim_job jobs[2] = {{&p, x}, {&p, y}};
	struct sim_options o = {.fidelity = FIDELITY_COARSE};
	struct sim_result r[2];
	struct diag_list d;
	diag_list_init(&d);
	cr_assert(!sim_run_jobs(a, t, jobs, 2, &o, r, NULL, &d));
	cr_assert_str_eq(d.items[0].msg, "simulation: job 1's rank 0 is placed on device 1, which "
	                                 "another rank holds");
	diag_list_free(&d);
	arena_free(a);
}

/* ------------------------------------------------- fidelity representative
 *
 * One rank per data-parallel group runs (its group's first member); the
 * group's collectives run every member's transfers at once, round by
 * round, from that rank; its replicas report its figures. */

/* The hand case above at fidelity representative: rank 0 of each 2-rank
 * ring runs both its own transfer and its replica's; both cross the
 * leaves' 12.5 GB/s pools (oversubscribed, so they run as flows), and
 * together the two jobs' four flows each way halve them as before. */
Test(sim, representative_rings_sharing_one_uplink_get_half_its_rate)
{
	static const int64_t a[] = {0, 16}, b[] = {1, 17};
	const int64_t *devs[2] = {a, b};
	double S = 125e6;
	struct jobs_run alone = jobs_simulate_at(1, 2, devs, S, FIDELITY_REPRESENTATIVE);
	within(alone.r[0].iteration_s, 2 * (S / 2 / (12.5 * GB) + 3 * US), 1e-9, "alone");
	struct jobs_run both = jobs_simulate_at(2, 2, devs, S, FIDELITY_REPRESENTATIVE);
	for (int j = 0; j < 2; j++)
		within(both.r[j].iteration_s, 2 * (S / 2 / (6.25 * GB) + 3 * US), 1e-9, "together");
	/* the replica reports its representative's figures */
	within(both.r[0].ranks[1].comm_exposed_s, both.r[0].ranks[0].comm_exposed_s, 1e-12,
	       "replica");
	cr_assert_eq(both.shared.n_links, 4);
	for (int i = 0; i < 4; i++) {
		within(both.shared.links[i].bytes[0], S, 1e-12, "job 0's bytes");
		within(both.shared.links[i].bytes[1], S, 1e-12, "job 1's bytes");
	}
	arena_free(alone.a);
	arena_free(both.a);
}

/* `shardlab cosim FILE --json` at a fidelity: each job's alone_s,
 * together_s (out[2 * job], out[2 * job + 1]). */
static void cosim_times(const char *file, const char *fidelity, double out[4])
{
	char cmd[512];
	snprintf(cmd, sizeof(cmd), "cosim %s --json --fidelity %s", file, fidelity);
	struct cli_run r = fixture_shardlab(cmd, false);
	cr_assert_eq(r.status, 0, "%s", r.out);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "%s", r.out);
	const cJSON *fid = cJSON_GetObjectItemCaseSensitive(j, "fidelity");
	cr_assert(cJSON_IsString(fid) && !strcmp(fid->valuestring, fidelity));
	const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(j, "jobs");
	cr_assert_eq(cJSON_GetArraySize(jobs), 2);
	for (int k = 0; k < 2; k++) {
		const cJSON *job = cJSON_GetArrayItem(jobs, k);
		out[2 * k] = cJSON_GetObjectItemCaseSensitive(job, "alone_s")->valuedouble;
		out[2 * k + 1] = cJSON_GetObjectItemCaseSensitive(job, "together_s")->valuedouble;
	}
	cJSON_Delete(j);
	free(r.out);
}

/* Representative against coarse on two jobs of 32 ranks placed spread on
 * a fabric oversubscribed 2:1 (their gradients contend on the spine): a
 * data-parallel job (one representative runs all 32 members' transfers)
 * and a TP 8 x PP 2 x DP 2 one (the 16 ranks of replica 0 run). Both
 * fidelities run the same transfers on the same links; they differ in
 * when: coarse starts a member's round when its own previous round ends,
 * representative starts every member's round together and ends it with
 * the slowest, and replicas whose transfers are alike (one bandwidth and
 * latency, on links only they load) take the representative's time. The
 * drift coarse allows is at most one round's spread per collective, a
 * latency-sized or contention-sized fraction of communication that is
 * itself under the iteration: within 2% of the iteration, and the
 * slowdown (together over alone) within 0.02. */
static void representative_agrees(const char *file)
{
	double c[4], r[4];
	cosim_times(file, "coarse", c);
	cosim_times(file, "representative", r);
	for (int k = 0; k < 4; k++)
		within(r[k], c[k], 0.02, file);
	for (int k = 0; k < 2; k++)
		cr_expect(fabs(r[2 * k + 1] / r[2 * k] - c[2 * k + 1] / c[2 * k]) < 0.02,
		          "%s: job %d's slowdown %.4f (representative) against %.4f (coarse)", file, k,
		          r[2 * k + 1] / r[2 * k], c[2 * k + 1] / c[2 * k]);
}

Test(sim, representative_agrees_with_coarse_data_parallel)
{
	representative_agrees("scenarios/jobs/two-jobs-spread.json");
}

Test(sim, representative_agrees_with_coarse_tp_pp_dp)
{
	representative_agrees("tests/data/cosim/two-megatron-spread.json");
}
