/* test_faults.c — faults and degradations (a scenario's "faults"): the
 * estimate's closed forms and the simulation against hand calculations.
 *
 * Figures used (the files in topologies/ and tests/data/good/):
 *   atlas800-910a   HCCS mesh 30 GB/s, 1 us per link, groups of 4; PCIe
 *                   switch 31 GB/s, 2 us (the latency on the sender's port)
 *   two-spines-x4   four one-GPU servers, one 12.5 GB/s NIC each (0.6 us),
 *                   two servers to a leaf (0.3 us a switch), two spines,
 *                   non-blocking: in a leaf 0.6 + 0.3 + 0.6 = 1.5 us,
 *                   across the spines 0.6 + 0.3 + 0.3 + 0.3 + 0.6 = 2.1 us
 *   pcie-4gpu-1nic-x2  4 GPUs on one PCIe switch (31 GB/s, 1 us) per
 *                   server, one 12.5 GB/s NIC (0.6 us), one leaf (0.3 us)
 * The ring all-reduce over n ranks is 2(n-1) steps of S/n, each step as
 * slow as its slowest link: 2(n-1) (α + S/n / B_slowest).
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "sim.h"
#include "fixture.h"

#define GB 1e9
#define US 1e-6

TestSuite(faults, .init = fixture_setup, .fini = fixture_teardown);

static void within(double got, double want, double rel, const char *what)
{
	cr_assert(fabs(got - want) <= rel * fabs(want), "%s: got %.9g, want %.9g (%.1f%%)", what,
	          got, want, 100 * rel);
}

/* The topology of a scenario of the FFN model on `topology` (a path from
 * the source root) with the JSON array `faults`. */
static struct topology *faulted(const char *topology, const char *faults)
{
	char text[2048];
	snprintf(text, sizeof text,
	         "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"f\", "
	         "\"model\": \"models/ffn.json\", \"topology\": \"%s\", \"faults\": %s}",
	         topology, faults);
	struct scenario *s = fixture_scenario_text(A, &D, "faults.json", text);
	cr_assert_not_null(s->topo->faults);
	return s->topo;
}

/* One collective of `bytes` over ranks [0, n) (one group) simulated on t. */
static double simulate(const struct topology *t, enum step_kind kind, int64_t n, double bytes,
                       enum sim_fidelity fid, double compute_s, struct sim_result *out)
{
	struct devmat dm;
	int64_t sz[] = {n};
	int axis = 0;
	cr_assert(devmat_init(&dm, 1, sz, NULL, 0));
	struct prog_step st[2];
	st[0] = (struct prog_step){.kind = PROG_COMPUTE, .label = "work", .seconds = compute_s,
	                           .after = -1, .op = -1};
	st[1] = (struct prog_step){.kind = PROG_COLLECTIVE, .phase = PHASE_FORWARD, .op = -1,
	                           .label = "collective", .coll = kind, .bytes = bytes,
	                           .after = -1};
	cr_assert(devmat_groups(&dm, &axis, 1, &st[1].groups));
	struct program p = fixture_program(A, st, 2, 2, n, 1);
	struct sim_options o = {.fidelity = fid, .algo = COLL_RING};
	struct sim_result r;
	bool ok = sim_run(A, t, &p, &o, &r, &D);
	cr_assert(ok, "sim_run failed: %s", D.count ? D.items[0].msg : "?");
	if (out)
		*out = r;
	return r.iteration_s;
}

/* Four NPUs of one HCCS group, the link between 0 and 1 at half its rate
 * (15 GB/s both ways), S = 64 MB: the ring 0 -> 1 -> 2 -> 3 -> 0 moves
 * S/4 = 16 MB per step on every link at once, so every step waits for the
 * slow one: 6 x (1 us + 16e6 / 15e9) = 6 us + 6.4 ms, against 6 us + 3.2
 * ms with every link whole. The estimate's closed form says the same. */
Test(faults, ring_allreduce_paced_by_a_link_at_half_rate)
{
	struct topology *t = faulted("topologies/atlas800-910a.json",
	                             "[{\"kind\": \"link\", \"server\": 0, \"tier\": \"hccs\", "
	                             "\"devices\": [1, 0], \"rate\": 0.5}]");
	double S = 64e6, want = 6 * (1 * US + 16e6 / (15 * GB));
	int64_t r[] = {0, 1, 2, 3};
	within(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_RING, r, 4, S), want, 1e-9,
	       "estimate");
	within(simulate(t, STEP_ALLREDUCE, 4, S, FIDELITY_STEP, 0, NULL), want, 0.01, "step");
	within(simulate(t, STEP_ALLREDUCE, 4, S, FIDELITY_COARSE, 0, NULL), want, 0.01, "coarse");
	struct topo_path p;
	cr_assert(topo_path_between(t, 1, 0, &p));
	within(p.bottleneck_bps, 15 * GB, 1e-12, "the degraded link, both ways");
}

/* A mesh link down: the pair goes round it over the next tier (PCIe, 31
 * GB/s, 2 us), as the path says; other pairs keep their link. */
Test(faults, a_link_down_is_routed_round)
{
	struct topology *t = faulted("topologies/atlas800-910a.json",
	                             "[{\"kind\": \"link\", \"server\": 0, \"tier\": \"hccs\", "
	                             "\"devices\": [0, 1], \"down\": true}]");
	cr_assert_eq(topo_tier_between(t, 0, 1), 1, "pcie");
	cr_assert_eq(topo_tier_between(t, 0, 2), 0, "hccs");
	double bps, lat;
	cr_assert(topo_route(t, 1, 0, &bps, &lat));
	within(bps, 31 * GB, 1e-12, "PCIe port");
	within(lat, 2 * US, 1e-12, "PCIe latency");
}

/* two-spines-x4 with one spine down: each leaf keeps half its uplinks, so
 * the bisection halves (2 NICs x 12.5 GB/s = 25 GB/s -> 12.5 GB/s) and a
 * route across the spines gets 12.5 / 2 = 6.25 GB/s (the NIC's share of
 * the uplinks left). A ring all-reduce over the four servers, S = 64 MB:
 * two of its four hops cross the spines, so every step takes 2.1 us +
 * 16e6 / 6.25e9 = 2.56 ms: 6 x (2.1 us + 2.56 ms), against 6 x (2.1 us +
 * 1.28 ms) with both spines up. The job stays connected. */
Test(faults, a_spine_down_halves_the_bisection_not_the_connectivity)
{
	struct arena *a = arena_new();
	struct topology *whole = fixture_topology(a, "../tests/data/good/two-spines-x4");
	within(topo_bisection_bps(whole), 25 * GB, 1e-12, "bisection, both spines");
	struct topology *t = faulted("tests/data/good/two-spines-x4.json",
	                             "[{\"kind\": \"spine\", \"spine\": 1, \"down\": true}]");
	within(topo_bisection_bps(t), 12.5 * GB, 1e-12, "bisection, one spine");
	double S = 64e6, want = 6 * (2.1 * US + 16e6 / (6.25 * GB));
	int64_t r[] = {0, 1, 2, 3};
	within(cost_collective_algo_s(t, STEP_ALLREDUCE, COLL_RING, r, 4, S), want, 1e-9,
	       "estimate");
	within(simulate(t, STEP_ALLREDUCE, 4, S, FIDELITY_STEP, 0, NULL), want, 0.01, "step");
	within(simulate(whole, STEP_ALLREDUCE, 4, S, FIDELITY_STEP, 0, NULL),
	       6 * (2.1 * US + 16e6 / (12.5 * GB)), 0.01, "both spines");
	arena_free(a);
}

/* Device 3 of pcie-4gpu-1nic-x2 twice as slow: the estimate prices every
 * op at the slowest member's pace (factor 2), so a program step of 10 ms
 * is the slow device's time and the others take 5 ms; the all-reduce of
 * the data-parallel group starts when the slow one arrives. Iteration =
 * 10 ms + the ring on PCIe, 6 x (1 us + 1e6 / 31e9); the other ranks
 * spend the 5 ms they wait for it as waiting on a straggler, not as
 * communication. */
Test(faults, a_slow_device_sets_the_pace_of_its_group)
{
	struct topology *t = faulted("tests/data/good/pcie-4gpu-1nic-x2.json",
	                             "[{\"kind\": \"device\", \"server\": 0, \"device\": 3, "
	                             "\"slowdown\": 2}]");
	within(cost_slowest_factor(t, 8), 2, 1e-12, "slowest factor");
	within(cost_slowest_factor(t, 3), 1, 1e-12, "without device 3");
	double S = 4e6, ar = 6 * (1 * US + 1e6 / (31 * GB));
	for (int f = 0; f < 2; f++) {
		struct sim_result r;
		double it = simulate(t, STEP_ALLREDUCE, 4, S, f ? FIDELITY_COARSE : FIDELITY_STEP,
		                     10e-3, &r);
		within(it, 10e-3 + ar, 0.002, f ? "coarse" : "step");
		within(r.ranks[3].compute_s, 10e-3, 1e-9, "the slow device computes 10 ms");
		within(r.ranks[0].compute_s, 5e-3, 1e-9, "the others 5 ms");
		within(r.ranks[0].straggler_wait_s, 5e-3, 0.01, "waiting on the straggler");
		cr_assert_lt(r.ranks[0].comm_exposed_s, 2 * ar, "not counted as communication");
		within(r.ranks[3].straggler_wait_s + 1, 1, 1e-9, "the straggler waits on none");
	}
}

/* A server of another device kind: the ratio of the two devices' dense
 * 16-bit GEMM rates (peak x matmul efficiency). dgx-a100's A100 runs bf16
 * at 312 TFLOP/s; a server of dgx-h100's H100 (989 TFLOP/s) in it is
 * faster, so the A100s still set the pace (factor 1), while an A100
 * server in dgx-h100 slows its ranks by (989 x e_H100) / (312 x e_A100). */
Test(faults, a_server_of_another_kind)
{
	struct arena *a = arena_new();
	struct topology *h100 = fixture_topology(a, "dgx-h100");
	struct topology *a100 = fixture_topology(a, "dgx-a100");
	double want = 989e12 * h100->device.matmul_efficiency /
	              (312e12 * a100->device.matmul_efficiency);
	within(h100->device.peak_flops[DT_BF16], 989e12, 0.01, "H100 bf16 peak");
	within(a100->device.peak_flops[DT_BF16], 312e12, 0.01, "A100 bf16 peak");
	struct topology *t = faulted("topologies/dgx-h100-x64.json",
	                             "[{\"kind\": \"server\", \"server\": 1, \"device_from\": "
	                             "\"topologies/dgx-a100.json\"}]");
	within(topo_rank_slowdown(t, 8), want, 1e-9, "an A100 rank");
	within(topo_rank_slowdown(t, 7), 1, 1e-12, "an H100 rank");
	within(cost_slowest_factor(t, 16) / cost_straggler_factor(&t->device, 16), want, 1e-9,
	       "the job's pace");
	arena_free(a);
}

/* A NIC down fails over to the server's other NIC: dgx-h100-x64's 8 NICs,
 * NIC 3 of server 0 down, device 3's traffic goes out through NIC 4. */
Test(faults, a_nic_down_fails_over)
{
	struct topology *t = faulted("topologies/dgx-h100-x64.json",
	                             "[{\"kind\": \"nic\", \"server\": 0, \"nic\": 3, \"down\": true},"
	                             " {\"kind\": \"nic\", \"server\": 1, \"nic\": 0, \"rate\": 0.5}]");
	cr_assert_eq(topo_nic_of(t, 0, 3), 4);
	cr_assert_eq(topo_nic_of(t, 0, 2), 2);
	struct topo_path p;
	cr_assert(topo_path_between(t, 3, 11, &p));
	cr_assert_str_eq(p.hops[0].what, "nic 4 of server 0");
	double bps, lat;
	cr_assert(topo_route(t, 0, 8, &bps, &lat));
	within(bps, H100_NIC_BPS / 2, 1e-12, "NIC 0 of server 1 at half rate");
}

/* Faults that cut ranks off are refused, naming who lost whom (the
 * bad-input corpus holds the exact messages): both spines down split
 * the two leaves. */
Test(faults, a_disconnecting_fault_names_the_ranks)
{
	struct arena *a = arena_new();
	struct topology *t = fixture_topology(a, "../tests/data/good/two-spines-x4");
	struct topo_faults f = {.servers = 4, .spine_rate = 0, .n_down_spines = 2};
	t->faults = &f;
	char why[256];
	cr_assert_not(topo_faults_connected(t, 4, why, sizeof why));
	cr_assert_str_eq(why, "the faults split the job's ranks into 2 parts that cannot reach "
	                      "each other: ranks 0-1 | ranks 2-3");
	cr_assert(topo_faults_connected(t, 2, why, sizeof why), "ranks 0-1 share a leaf");
	arena_free(a);
}
