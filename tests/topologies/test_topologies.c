/* test_topologies.c — the topology loader, validator and queries.
 *
 * Every expected value is worked out by hand in the comment beside it,
 * from the figures in the shipped files (which come from
 * the public documents of docs/sources.md) and the formulas in docs/formats.md.
 * Units: bytes/s and seconds; GB/s = 1e9 bytes/s, Gb/s = 1e9/8 bytes/s.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "topologies.h"

#define GBPS 1e9
#define US 1e-6

static void assert_close(double got, double want, const char *what)
{
	cr_assert(fabs(got - want) <= 1e-9 * fabs(want) + 1e-18, "%s: got %.17g, want %.17g", what,
	          got, want);
}

struct fixture {
	struct arena *a;
	struct diag_list d;
};

static struct fixture fx;

static void setup(void)
{
	fx.a = arena_new();
	diag_list_init(&fx.d);
}

static void teardown(void)
{
	diag_list_free(&fx.d);
	arena_free(fx.a);
}

static void print_diags(void)
{
	for (size_t i = 0; i < fx.d.count; i++) {
		char *s = diag_format(&fx.d.items[i]);
		cr_log_error("%s", s);
		free(s);
	}
}

static struct topology *load_ok(const char *path)
{
	struct topology *t = topo_load(fx.a, path, &fx.d);
	print_diags();
	cr_assert_not_null(t, "%s should load", path);
	cr_assert_eq(fx.d.count, 0, "%s: %zu diagnostics", path, fx.d.count);
	return t;
}

/* A document from text in which ' stands for " (readable C literals). */
static struct topology *load_text(const char *file, const char *text)
{
	char *s = strdup(text);
	for (char *p = s; *p; p++)
		if (*p == '\'')
			*p = '"';
	struct json_doc doc;
	struct topology *t = NULL;
	if (json_doc_parse(&doc, file, s, strlen(s), &fx.d))
		t = topo_load_doc(fx.a, &doc);
	json_doc_free(&doc);
	free(s);
	return t;
}

/* The n-th diagnostic, formatted, compared with `want`. */
static void assert_diag(size_t n, const char *want)
{
	cr_assert_lt(n, fx.d.count, "no diagnostic %zu (want %s)", n, want);
	char *s = diag_format(&fx.d.items[n]);
	cr_assert_str_eq(s, want);
	free(s);
}

#define HEADER "{'format': 'shardlab-topology', 'version': 1, 'name': 't', 'source': 'test', " \
	"'device': {'kind': 'X', 'peak_tflops': {'fp16': 100}, 'hbm_GB': 16, "                \
	"'hbm_bandwidth_GBps': 900}, "

TestSuite(topologies, .init = setup, .fini = teardown);

/* ----------------------------------------------------------- shipped files */

Test(topologies, shipped_files_load_with_their_device_counts)
{
	static const struct {
		const char *file;
		int64_t devices;
	} files[] = {
		{"topologies/atlas800-910a.json", 8},
		{"topologies/atlas800t-a2-910b.json", 8},
		{"topologies/dgx-a100.json", 8},
		{"topologies/dgx-a100-40gb.json", 8},
		{"topologies/dgx-h100.json", 8},
		{"topologies/dgx-h200.json", 8},
		{"topologies/pcie-8gpu.json", 8},
		{"topologies/atlas800-910a-x4.json", 4 * 8},          /* 32 NPUs */
		{"topologies/atlas800t-a2-910b-x16.json", 16 * 8},    /* 128 */
		{"topologies/atlas800t-a2-910b-x1024.json", 1024 * 8}, /* 8192 */
		{"topologies/dgx-a100-x128.json", 128 * 8},           /* 1024 GPUs */
		{"topologies/dgx-h100-x64.json", 64 * 8},             /* 512 */
		{"topologies/dgx-h200-x64.json", 64 * 8},             /* 512 */
		{"topologies/dgx-a100-x384.json", 384 * 8},           /* 3072 */
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct topology *t = load_ok(files[i].file);
		cr_assert_eq(t->n_devices, files[i].devices, "%s", files[i].file);
		cr_assert_eq(t->devices_per_server, 8, "%s", files[i].file);
		cr_assert_eq(t->servers * 8, files[i].devices, "%s", files[i].file);
		cr_assert_str_eq(t->file, files[i].file);
		/* every figure traceable to a public document of docs/sources.md */
		cr_assert(strstr(t->source, "docs/sources.md"), "%s", files[i].file);
		cr_assert(!strstr(t->source, "shared/"), "%s", files[i].file);
	}
}

/* Issue 44's hardware: each file's devices and scale-up domain as the
 * vendors publish them (docs/sources.md): HGX B200 and MI300X servers of 8,
 * a GB200 NVL72 rack as one NVLink domain of 72, Ascend 910C servers of 8
 * and a CloudMatrix384 supernode of 384 on one UB fabric. */
Test(topologies, frontier_files_load_with_their_domains_and_figures)
{
	static const struct {
		const char *file;
		int64_t devices;
		int per_server;
		double bf16_tflops, fp8_tflops, hbm_gb, hbm_gbps, link_gbps;
	} files[] = {
		{"topologies/hgx-b200.json", 8, 8, 2250, 4500, 180, 7700, 900},
		{"topologies/hgx-b200-x64.json", 512, 8, 2250, 4500, 180, 7700, 900},
		{"topologies/gb200-nvl72.json", 72, 72, 2500, 5000, 186, 8000, 900},
		{"topologies/gb200-nvl72-x8.json", 576, 72, 2500, 5000, 186, 8000, 900},
		{"topologies/mi300x.json", 8, 8, 1307.4, 2614.9, 192, 5300, 64},
		{"topologies/mi300x-x64.json", 512, 8, 1307.4, 2614.9, 192, 5300, 64},
		{"topologies/atlas-910c.json", 8, 8, 752, 0, 128, 3200, 392},
		{"topologies/atlas-910c-x48.json", 384, 8, 752, 0, 128, 3200, 392},
		{"topologies/cloudmatrix384.json", 384, 384, 752, 0, 128, 3200, 392},
		{"topologies/cloudmatrix384-x4.json", 1536, 384, 752, 0, 128, 3200, 392},
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		const char *f = files[i].file;
		struct topology *t = load_ok(f);
		cr_assert_eq(t->n_devices, files[i].devices, "%s", f);
		cr_assert_eq(t->devices_per_server, files[i].per_server, "%s", f);
		assert_close(t->device.peak_flops[DT_BF16], files[i].bf16_tflops * 1e12, f);
		assert_close(t->device.peak_fp8_flops, files[i].fp8_tflops * 1e12, f);
		assert_close(t->device.hbm_bytes, files[i].hbm_gb * 1e9, f);
		assert_close(t->device.hbm_bps, files[i].hbm_gbps * GBPS, f);
		assert_close(t->tiers[0].bandwidth_bps, files[i].link_gbps * GBPS * t->tiers[0].efficiency, f);
		/* one tier joins the whole domain */
		cr_assert_eq(t->tiers[0].n_groups, 1, "%s", f);
		cr_assert_eq(t->tiers[0].group_size[0], files[i].per_server, "%s", f);
		/* one 400 Gb/s NIC per device */
		cr_assert_eq(t->nic.per_server, files[i].per_server, "%s", f);
		assert_close(t->nic.bandwidth_bps, 50 * GBPS * t->nic.efficiency, f);
		/* none is calibrated: the note says so (docs/cost-models.md) */
		cr_assert(!topo_compute_calibrated(&t->device), "%s", f);
		cr_assert(strstr(t->source, "docs/sources.md"), "%s", f);
		cr_assert(!strstr(t->source, "shared/"), "%s", f);
	}
	/* the host side: PCIe 5.0 x16 (63 GB/s) and 2 x 8 channels of DDR5-5600
	 * over 8 GPUs (2 x 358.4 / 8 = 89.6 GB/s); Grace: C2C 450 GB/s one way
	 * shared by 2 GPUs, LPDDR5X 512 GB/s shared by 2 */
	struct topology *b = load_ok("topologies/hgx-b200-x64.json");
	assert_close(b->host.link_bps, 63 * GBPS, "B200 host link");
	assert_close(b->host.memory_bps, 2 * 358.4 / 8 * GBPS, "B200 host memory");
	struct topology *g = load_ok("topologies/gb200-nvl72.json");
	assert_close(g->host.link_bps, 450.0 / 2 * GBPS, "GB200 C2C");
	assert_close(g->host.memory_bps, 512.0 / 2 * GBPS, "Grace memory");
	/* a file without "host": PCIe 4.0 x16 and the DGX A100's DDR4 share */
	struct topology *c = load_ok("topologies/cloudmatrix384.json");
	assert_close(c->host.link_bps, 31.5 * GBPS, "default host link"); /* 16 x 16 GT/s x 128/130 / 8 */
	assert_close(c->host.memory_bps, 2 * 204.8 / 8 * GBPS, "default host memory");
	/* the H100's FP8: 1,979 dense, 1,519 of it measured (calibration/h100-sxm-fp8.csv) */
	struct topology *h = load_ok("topologies/dgx-h100.json");
	assert_close(h->device.peak_fp8_flops, 1979e12, "H100 fp8");
	assert_close(h->device.fp8_matmul_efficiency, 0.7676, "H100 fp8 efficiency"); /* 1519 / 1979 */
	assert_close(b->device.fp8_matmul_efficiency, b->device.matmul_efficiency,
	             "fp8 efficiency defaults to the bf16 one");
}

/* A TPU v5p-style 4 x 4 x 4 torus (device x + 4 (y + 4 z)): routes go
 * dimension by dimension, the shorter way round; 0 -> 63 = (3, 3, 3) is
 * one wrap-around link in each dimension, 0 -> 3 -> 15 -> 63, 3 us; 0 ->
 * 42 = (2, 2, 2) two links in each, 6 (the longest route). Bisection:
 * cutting z in {0, 1} | {2, 3} crosses 2 x 16 links of 100 GB/s one way. */
Test(topologies, torus_routes_and_bisection)
{
	struct topology *t = load_ok("topologies/tpu-v5p-4x4x4.json");
	cr_assert_eq(t->tiers[0].kind, TOPO_TIER_TORUS);
	struct topo_path p;
	cr_assert(topo_path_between(t, 0, 63, &p));
	cr_assert_eq(p.n_hops, 3);
	cr_assert_str_eq(p.hops[0].what, "ici link 0-3");
	cr_assert_str_eq(p.hops[1].what, "ici link 3-15");
	cr_assert_str_eq(p.hops[2].what, "ici link 15-63");
	assert_close(p.latency_s, 3e-6, "3 hops");
	assert_close(p.bottleneck_bps, 100 * GBPS, "one ICI link");
	cr_assert(topo_path_between(t, 0, 42, &p));
	cr_assert_eq(p.n_hops, 6);
	cr_assert_eq(topo_torus_hops(&t->tiers[0], 0, 42), 6);
	assert_close(topo_bisection_bps(t), 32 * 100 * GBPS, "torus bisection");
	assert_close(topo_tier_device_bps(t, 0), 6 * 100 * GBPS, "6 links a chip");
}

Test(topologies, units_are_converted_to_bytes_flops_and_seconds)
{
	struct topology *t = load_ok("topologies/atlas800-910a.json");
	cr_assert_str_eq(t->device.kind, "Ascend 910");
	assert_close(t->device.peak_flops[DT_FP16], 320e12, "fp16 peak");  /* 320 TFLOP/s */
	cr_assert_eq(t->device.peak_flops[DT_BF16], 0);                     /* not given */
	assert_close(t->device.matmul_efficiency, 262.0 / 320, "matmul");   /* ~262 of 320 */
	assert_close(t->device.memory_efficiency, 1, "memory eff default");
	assert_close(t->device.hbm_bytes, 32e9, "HBM");                    /* 32 GB */
	assert_close(t->device.hbm_bps, 1200 * GBPS, "HBM bandwidth");     /* ~1.2 TB/s */
	cr_assert_eq(t->n_tiers, 2);
	cr_assert_str_eq(t->tiers[0].name, "hccs");
	cr_assert_eq(t->tiers[0].kind, TOPO_TIER_MESH);
	cr_assert_eq(t->tiers[0].n_groups, 2);
	cr_assert_eq(t->tiers[0].group_of[5], 1); /* device 5 is in 4-7 */
	assert_close(t->tiers[0].latency_s, 1 * US, "hccs latency");
	cr_assert_eq(t->tiers[1].kind, TOPO_TIER_SWITCH);
	cr_assert_eq(t->tiers[1].shared_bps, 0);
	assert_close(t->nic.bandwidth_bps, 100e9 / 8, "nic");              /* 100 Gb/s = 12.5 GB/s */
	assert_close(t->nic.latency_s, 0.6 * US, "nic latency");
	cr_assert_eq(t->servers, 1);
	cr_assert_eq(t->fabric.kind, TOPO_FABRIC_NONE);

	/* No public per-shape or per-kernel figure for the 910A: the compute
	 * model's shape and launch terms are off. */
	cr_assert_eq(t->device.gemm_half_dim, 0);
	cr_assert_eq(t->device.kernel_overhead_s, 0);

	struct topology *b = load_ok("topologies/atlas800t-a2-910b.json");
	assert_close(b->device.peak_flops[DT_BF16], 353e12, "910B bf16");
	/* 328 / 353 = 0.92917847..., written 0.929178 in the file */
	cr_assert(fabs(b->device.matmul_efficiency - 328.0 / 353) < 1e-6);
}

/* The compute model's parameters (docs/cost-models.md): the A100s'
 * matmul_efficiency is the maximum achievable bf16 matmul rate (the MAMF
 * table) over the peak, written to four significant digits: A100 SXM
 * 271.2 / 312 = 0.86923, A100 PCIe 252.9 / 312 = 0.81058, with the
 * half-dimension 55.39 and overhead 6.034 us fitted to OpenXLA's H100
 * table; the H100 SXM's four come from its measured table: 0.8321, 95.88,
 * 6.922 us (microseconds in the file, seconds inside). */
Test(topologies, compute_model_parameters_of_the_gpus)
{
	static const struct {
		const char *file;
		double efficiency;
		double memory_efficiency;
		double half_dim, overhead_us;
	} gpus[] = {
		/* H100 SXM: measured (calibration/h100-sxm-measured.csv): the fit's
		 * asymptote 823 TFLOP/s; STREAM triad 3.07 of 3.35 TB/s */
		{"topologies/dgx-h100.json", 0.8321, 0.9165, 95.88, 6.922},
		/* H200 SXM: measured (calibration/h200-sxm-measured.csv), triad
		 * 4.39 of 4.8 TB/s */
		{"topologies/dgx-h200.json", 0.7875, 0.9152, 72.53, 6.615},
		/* A100 80GB: 1.80 of 2.0 TB/s measured by a streaming read kernel */
		{"topologies/dgx-a100.json", 271.2 / 312, 0.9, 55.39, 6.034},
		/* A100 40GB: the same GA100's figures, the 80GB part's HBM ratio */
		{"topologies/dgx-a100-40gb.json", 271.2 / 312, 0.9, 55.39, 6.034},
		{"topologies/pcie-8gpu.json", 252.9 / 312, 0.9, 55.39, 6.034},
		{"topologies/dgx-a100-x128.json", 271.2 / 312, 0.9, 55.39, 6.034}, /* its base's */
	};
	for (size_t i = 0; i < sizeof gpus / sizeof gpus[0]; i++) {
		struct topology *t = load_ok(gpus[i].file);
		cr_assert(fabs(t->device.matmul_efficiency - gpus[i].efficiency) < 5e-5, "%s: %.6g",
		          gpus[i].file, t->device.matmul_efficiency);
		assert_close(t->device.memory_efficiency, gpus[i].memory_efficiency, gpus[i].file);
		assert_close(t->device.gemm_half_dim, gpus[i].half_dim, gpus[i].file);
		assert_close(t->device.kernel_overhead_s, gpus[i].overhead_us * US, gpus[i].file);
	}
}

/* A file without kernel_efficiency leaves every class at 0 (the
 * memory_efficiency); a cluster takes its base's classes. */
Test(topologies, kernel_efficiency_absent_or_from_the_base)
{
	struct topology *a100 = load_ok("topologies/dgx-a100.json");
	struct topology *h200 = load_ok("topologies/dgx-h200-x64.json");
	for (int k = 0; k < TOPO_KC_COUNT; k++)
		for (int i = 0; i < 2; i++) {
			cr_expect_eq(a100->device.kernel_efficiency[k][i], 0);
			cr_expect_gt(h200->device.kernel_efficiency[k][i], 0);
		}
	assert_close(h200->device.kernel_efficiency[TOPO_KC_NORM][0], 0.5739, "norm forward");
	assert_close(h200->device.kernel_efficiency[TOPO_KC_LOSS][1], 0.1119, "loss backward");
}

Test(topologies, cluster_takes_device_and_server_from_its_base)
{
	struct topology *t = load_ok("topologies/dgx-a100-x128.json");
	cr_assert_str_eq(t->name, "dgx-a100-x128");
	cr_assert_str_eq(t->device.kind, "NVIDIA A100 SXM 80GB");
	/* the base's 300 GB/s port at its efficiency 0.767 */
	assert_close(t->tiers[0].bandwidth_bps, 300 * 0.767 * GBPS, "nvswitch port");
	assert_close(t->tiers[0].efficiency, 0.767, "nvswitch efficiency");
	assert_close(t->nic.bandwidth_bps, 25 * 0.94 * GBPS, "nic");
	cr_assert_eq(t->servers, 128);
	cr_assert_eq(t->fabric.kind, TOPO_FABRIC_FAT_TREE);
	cr_assert_eq(t->fabric.nics_per_leaf, 20);
	assert_close(t->fabric.oversubscription, 1, "oversubscription");
	assert_close(t->fabric.switch_latency_s, 0.3 * US, "switch latency");
}

/* ------------------------------------------------------------------ tiers */

Test(topologies, tier_between_ranks_of_the_910a_cluster)
{
	struct topology *t = load_ok("topologies/atlas800-910a-x4.json");
	cr_assert_eq(topo_tier_between(t, 0, 3), 0);  /* both in HCCS group 0-3 */
	cr_assert_eq(topo_tier_between(t, 4, 7), 0);  /* both in HCCS group 4-7 */
	cr_assert_eq(topo_tier_between(t, 0, 4), 1);  /* across the groups: PCIe */
	cr_assert_eq(topo_tier_between(t, 0, 8), TOPO_NETWORK); /* rank 8 = server 1 */
	cr_assert_eq(topo_tier_between(t, 9, 10), 0); /* local 1 and 2 of server 1 */
	cr_assert_eq(topo_tier_between(t, 31, 31), TOPO_SELF);
}

Test(topologies, per_device_tier_and_nic_bandwidth)
{
	struct topology *b = load_ok("topologies/atlas800t-a2-910b.json");
	/* 7 peers x 56 GB/s at efficiency 0.33 */
	assert_close(topo_tier_device_bps(b, 0), 7 * 56 * 0.33 * GBPS, "910B hccs");
	assert_close(topo_nic_device_bps(b), 25 * GBPS, "910B nic"); /* 200 Gb/s x 8 / 8 = 25 GB/s */
	struct topology *a = load_ok("topologies/atlas800-910a.json");
	assert_close(topo_tier_device_bps(a, 0), 3 * 30 * GBPS, "910A hccs"); /* group of 4: 3 links */
	assert_close(topo_tier_device_bps(a, 1), 31 * GBPS, "910A pcie port");
	struct topology *p = load_ok("topologies/pcie-8gpu.json");
	assert_close(topo_nic_device_bps(p), 25 * GBPS * 2 / 8, "pcie nic"); /* 2 NICs for 8 GPUs */
}

/* A link's "efficiency" scales its line rate into the rate every cost
 * model uses; without one the line rate stands. */
Test(topologies, link_efficiency_scales_the_line_rate)
{
	struct topology *t = load_text("e.json", HEADER
		"'server': {'devices': 4, 'tiers': ["
		"{'name': 'm', 'kind': 'mesh', 'groups': [[0,1],[2,3]], 'bandwidth_GBps': 10,"
		" 'efficiency': 0.5, 'latency_us': 1},"
		"{'name': 's', 'kind': 'switch', 'bandwidth_GBps': 5, 'latency_us': 2}],"
		"'nic': {'per_server': 4, 'rate_Gbps': 80, 'efficiency': 0.25, 'latency_us': 1}}}");
	print_diags();
	cr_assert_not_null(t);
	assert_close(t->tiers[0].bandwidth_bps, 5 * GBPS, "mesh: 10 GB/s x 0.5");
	assert_close(t->tiers[0].efficiency, 0.5, "mesh efficiency");
	assert_close(t->tiers[1].bandwidth_bps, 5 * GBPS, "switch: line rate");
	assert_close(t->tiers[1].efficiency, 1, "switch efficiency");
	assert_close(t->nic.bandwidth_bps, 2.5 * GBPS, "nic: 80 Gb/s = 10 GB/s x 0.25");
	struct topo_path p;
	cr_assert(topo_path_between(t, 0, 1, &p));
	assert_close(p.bottleneck_bps, 5 * GBPS, "path over the mesh link");
	cr_assert_eq(topo_group_tier(t, (int64_t[]){0, 1}, 2), 0);
	cr_assert_eq(topo_group_tier(t, (int64_t[]){0, 2}, 2), 1);
	cr_assert_eq(topo_group_tier(t, (int64_t[]){1, 2, 3}, 3), 1);
}

Test(topologies, mesh_device_bandwidth_uses_the_largest_group)
{
	/* groups of 3 and 2: the largest has 2 peers per device, 2 x 10 GB/s. */
	struct topology *t = load_text("m.json", HEADER
		"'server': {'devices': 5, 'tiers': ["
		"{'name': 'm', 'kind': 'mesh', 'groups': [[0,1,2],[3,4]], 'bandwidth_GBps': 10, 'latency_us': 1},"
		"{'name': 's', 'kind': 'switch', 'bandwidth_GBps': 5, 'latency_us': 2}],"
		"'nic': {'per_server': 1, 'rate_Gbps': 8, 'latency_us': 1}}}");
	print_diags();
	cr_assert_not_null(t);
	assert_close(topo_tier_device_bps(t, 0), 2 * 10 * GBPS, "mesh");
	assert_close(topo_nic_device_bps(t), 1 * GBPS / 5, "nic"); /* 8 Gb/s = 1 GB/s, 1 NIC for 5 */
}

/* ------------------------------------------------------------------ paths */

Test(topologies, paths_inside_a_server)
{
	struct topology *a = load_ok("topologies/atlas800-910a.json");
	struct topo_path p;
	cr_assert(topo_path_between(a, 0, 1, &p));
	cr_assert_eq(p.tier, 0);
	cr_assert_eq(p.n_hops, 1);
	cr_assert_str_eq(p.hops[0].what, "hccs link 0-1");
	assert_close(p.bottleneck_bps, 30 * GBPS, "hccs link");
	assert_close(p.latency_s, 1 * US, "hccs latency");

	/* 0 and 5 are in different HCCS groups: two PCIe ports, 31 GB/s, 2 us. */
	cr_assert(topo_path_between(a, 0, 5, &p));
	cr_assert_eq(p.tier, 1);
	cr_assert_eq(p.n_hops, 2);
	cr_assert_str_eq(p.hops[0].what, "pcie port 0");
	cr_assert_str_eq(p.hops[1].what, "pcie port 5");
	assert_close(p.bottleneck_bps, 31 * GBPS, "pcie");
	assert_close(p.latency_s, 2 * US, "pcie latency");

	/* pcie-8gpu 1 -> 6: the cpu tier (ports 31 GB/s, shared cap 31 GB/s, 2 us). */
	struct topology *c = load_ok("topologies/pcie-8gpu.json");
	cr_assert(topo_path_between(c, 1, 6, &p));
	cr_assert_eq(p.tier, 1);
	cr_assert_eq(p.n_hops, 3);
	cr_assert_str_eq(p.hops[2].what, "cpu shared");
	assert_close(p.bottleneck_bps, 31 * GBPS, "cpu");
	assert_close(p.latency_s, 2 * US, "cpu latency");
	/* 1 -> 2 under one PCIe switch: 1 us. */
	cr_assert(topo_path_between(c, 1, 2, &p));
	cr_assert_eq(p.tier, 0);
	assert_close(p.latency_s, 1 * US, "pcie switch latency");

	cr_assert(topo_path_between(c, 3, 3, &p));
	cr_assert_eq(p.tier, TOPO_SELF);
	cr_assert_eq(p.n_hops, 0);
	cr_assert_eq(p.latency_s, 0);
	cr_assert(!topo_path_between(c, 0, 8, &p)); /* 8 devices: ranks 0..7 */
	cr_assert(!topo_path_between(c, -1, 0, &p));
}

Test(topologies, paths_across_a_fat_tree)
{
	/* 16 servers x 8 NICs = 128 NICs, 32 per leaf: leaves 0..3. NIC 25 GB/s,
	 * 0.6 us per NIC, 0.6 us per switch. */
	struct topology *t = load_ok("topologies/atlas800t-a2-910b-x16.json");
	struct topo_path p;
	/* rank 0 = NIC 0 of server 0 (global 0), rank 8 = NIC 0 of server 1
	 * (global 8): both under leaf 0. Latency 0.6 + 0.6 + 0.6 = 1.8 us. */
	cr_assert(topo_path_between(t, 0, 8, &p));
	cr_assert_eq(p.tier, TOPO_NETWORK);
	cr_assert_eq(p.n_hops, 3);
	cr_assert_str_eq(p.hops[0].what, "nic 0 of server 0");
	cr_assert_str_eq(p.hops[1].what, "leaf 0");
	cr_assert_str_eq(p.hops[2].what, "nic 0 of server 1");
	assert_close(p.bottleneck_bps, 25 * GBPS, "same leaf");
	assert_close(p.latency_s, 1.8 * US, "same leaf latency");
	/* rank 127 = NIC 7 of server 15, global 127 -> leaf 3: nic, leaf 0,
	 * spine, leaf 3, nic. 2 x 0.6 + 3 x 0.6 = 3.0 us. */
	cr_assert(topo_path_between(t, 0, 127, &p));
	cr_assert_eq(p.n_hops, 5);
	cr_assert_str_eq(p.hops[2].what, "spine");
	cr_assert_str_eq(p.hops[3].what, "leaf 3");
	cr_assert_str_eq(p.hops[4].what, "nic 7 of server 15");
	assert_close(p.bottleneck_bps, 25 * GBPS, "cross leaf, oversubscription 1");
	assert_close(p.latency_s, 3.0 * US, "cross leaf latency");

	/* DGX A100 x128: 20 NICs per leaf, switch 0.3 us. Rank 19 = server 2,
	 * NIC 3, global 19 -> leaf 0 (with rank 0): 0.6 + 0.3 + 0.6 = 1.5 us.
	 * Rank 20 = server 2, NIC 4, global 20 -> leaf 1: 1.2 + 0.9 = 2.1 us. */
	struct topology *d = load_ok("topologies/dgx-a100-x128.json");
	cr_assert(topo_path_between(d, 0, 19, &p));
	cr_assert_eq(p.n_hops, 3);
	assert_close(p.latency_s, 1.5 * US, "dgx same leaf");
	cr_assert(topo_path_between(d, 0, 20, &p));
	cr_assert_eq(p.n_hops, 5);
	cr_assert_str_eq(p.hops[3].what, "leaf 1");
	assert_close(p.latency_s, 2.1 * US, "dgx cross leaf");
}

#define TWO_PER_SERVER \
	"'server': {'devices': 2, 'tiers': [{'name': 'l', 'kind': 'mesh', 'bandwidth_GBps': 100, " \
	"'latency_us': 1}], 'nic': {'per_server': 2, 'rate_Gbps': 800, 'latency_us': 1}}, "

Test(topologies, paths_across_a_rail_optimized_fabric_and_oversubscription)
{
	/* 4 servers x 2 devices, one 800 Gb/s = 100 GB/s NIC per device, rail
	 * groups of 2 servers, oversubscription 4, switch 0.5 us, NIC 1 us. */
	struct topology *t = load_text("r.json", HEADER TWO_PER_SERVER
		"'cluster': {'servers': 4, 'fabric': {'kind': 'rail-optimized', "
		"'servers_per_rail_group': 2, 'oversubscription': 4, 'switch_latency_us': 0.5}}}");
	print_diags();
	cr_assert_not_null(t);
	struct topo_path p;
	/* rank 0 (server 0, NIC 0) -> rank 2 (server 1, NIC 0): rail 0 of group 0. */
	cr_assert(topo_path_between(t, 0, 2, &p));
	cr_assert_eq(p.n_hops, 3);
	cr_assert_str_eq(p.hops[1].what, "rail 0 leaf");
	assert_close(p.latency_s, 2.5 * US, "rail");    /* 1 + 0.5 + 1 */
	assert_close(p.bottleneck_bps, 100 * GBPS, "rail");
	/* rank 0 -> rank 3 (server 1, NIC 1): leaves 0 and 1, through the spine
	 * at 100 / 4 = 25 GB/s; 1 + 3 x 0.5 + 1 = 3.5 us. */
	cr_assert(topo_path_between(t, 0, 3, &p));
	cr_assert_eq(p.n_hops, 5);
	cr_assert_str_eq(p.hops[1].what, "leaf 0");
	cr_assert_str_eq(p.hops[3].what, "leaf 1");
	assert_close(p.bottleneck_bps, 25 * GBPS, "spine");
	assert_close(p.latency_s, 3.5 * US, "spine latency");
	/* rank 0 -> rank 4 (server 2 = rail group 1, NIC 0): leaf 1 x 2 + 0 = 2. */
	cr_assert(topo_path_between(t, 0, 4, &p));
	cr_assert_str_eq(p.hops[3].what, "leaf 2");
	/* Bisection: ranks 0-3 | 4-7 are servers 0-1 | 2-3, 4 NICs each,
	 * two rail groups so the spine counts: 4 x 100 / 4 = 100 GB/s. */
	assert_close(topo_bisection_bps(t), 100 * GBPS, "rail bisection");
}

/* -------------------------------------------------------------- bisection */

Test(topologies, bisection_of_single_servers)
{
	/* 910A, cut 0-3 | 4-7: no HCCS pair crosses (groups are 0-3 and 4-7);
	 * PCIe: min(4, 4) ports x 31 GB/s = 124 GB/s, no shared cap in the file. */
	assert_close(topo_bisection_bps(load_ok("topologies/atlas800-910a.json")), 4 * 31 * GBPS,
	             "910A");
	/* 910B full mesh: 4 x 4 = 16 links cross, x 56 GB/s x 0.33. */
	assert_close(topo_bisection_bps(load_ok("topologies/atlas800t-a2-910b.json")),
	             16 * 56 * 0.33 * GBPS, "910B");
	/* DGX A100: min(4, 4) NVSwitch ports x 300 GB/s x 0.767. */
	assert_close(topo_bisection_bps(load_ok("topologies/dgx-a100.json")),
	             4 * 300 * 0.767 * GBPS, "DGX A100");
	/* PCIe server: the switches hold 0-3 and 4-7 (nothing crosses); the cpu
	 * tier min(4, 4) x 31 = 124 GB/s, capped by its shared 31 GB/s. */
	assert_close(topo_bisection_bps(load_ok("topologies/pcie-8gpu.json")), 31 * GBPS, "pcie");
}

Test(topologies, bisection_counts_a_pair_on_its_innermost_tier_only)
{
	/* 4 devices; mesh groups {0,2} {1,3} at 10 GB/s; a switch over all at
	 * 1 GB/s. Cut {0,1} | {2,3}: mesh links 0-2 and 1-3 cross (2 x 10);
	 * switch pairs 0-3 and 1-2 have no mesh group in common, so every
	 * device has a partner there: min(2, 2) x 1. Total 22 GB/s. */
	struct topology *t = load_text("i.json", HEADER
		"'server': {'devices': 4, 'tiers': ["
		"{'name': 'm', 'kind': 'mesh', 'groups': [[0,2],[1,3]], 'bandwidth_GBps': 10, 'latency_us': 1},"
		"{'name': 's', 'kind': 'switch', 'bandwidth_GBps': 1, 'latency_us': 2}],"
		"'nic': {'per_server': 1, 'rate_Gbps': 8, 'latency_us': 1}}}");
	print_diags();
	cr_assert_not_null(t);
	assert_close(topo_bisection_bps(t), 22 * GBPS, "innermost");
}

Test(topologies, bisection_of_clusters)
{
	/* 910B x16: ranks 0-63 | 64-127 = servers 0-7 | 8-15, 64 NICs a side,
	 * x 25 GB/s = 1.6 TB/s; oversubscription 1. */
	assert_close(topo_bisection_bps(load_ok("topologies/atlas800t-a2-910b-x16.json")),
	             64 * 25 * GBPS, "910B x16");
	/* 910A x4: 2 servers x 8 NICs x 12.5 GB/s = 200 GB/s (one leaf of 32). */
	assert_close(topo_bisection_bps(load_ok("topologies/atlas800-910a-x4.json")),
	             16 * 12.5 * GBPS, "910A x4");
	/* DGX A100 x128: 64 servers x 8 NICs x 25 GB/s x 0.94. */
	assert_close(topo_bisection_bps(load_ok("topologies/dgx-a100-x128.json")),
	             512 * 25 * 0.94 * GBPS, "DGX A100 x128");
}

Test(topologies, bisection_of_an_odd_cluster_with_oversubscription)
{
	/* 3 servers x 4 devices, 2 NICs per server (devices 0,1 -> NIC 0; 2,3 ->
	 * NIC 1), 100 GB/s each, 2 NICs per leaf (3 leaves), oversubscription 2.
	 * Cut ranks 0-5 | 6-11: side A = server 0 (2 NICs) + devices 0,1 of
	 * server 1 (NIC 0) = 3; side B = NIC 1 of server 1 + server 2 = 3.
	 * 3 x 100 / 2 = 150 GB/s. */
	struct topology *t = load_text("o.json", HEADER
		"'server': {'devices': 4, 'tiers': [{'name': 'l', 'kind': 'mesh', 'bandwidth_GBps': 100,"
		"'latency_us': 1}], 'nic': {'per_server': 2, 'rate_Gbps': 800, 'latency_us': 1}},"
		"'cluster': {'servers': 3, 'fabric': {'kind': 'fat-tree', 'nics_per_leaf': 2,"
		"'oversubscription': 2, 'switch_latency_us': 0.5}}}");
	print_diags();
	cr_assert_not_null(t);
	assert_close(topo_bisection_bps(t), 150 * GBPS, "odd cluster");
	/* Rank 5 = server 1 device 1 -> NIC 0 of server 1 (global NIC 2, leaf 1). */
	struct topo_path p;
	cr_assert(topo_path_between(t, 5, 0, &p));
	cr_assert_str_eq(p.hops[0].what, "nic 0 of server 1");
	cr_assert_str_eq(p.hops[1].what, "leaf 1");
	cr_assert_str_eq(p.hops[3].what, "leaf 0");
	assert_close(p.bottleneck_bps, 50 * GBPS, "spine at 100 / 2");
}

Test(topologies, a_cluster_grows_by_whole_servers_on_its_fabric)
{
	char why[256] = "";
	struct topology *t = load_ok("topologies/dgx-a100-x128.json");
	/* Fewer devices than the file has: the file itself. */
	cr_assert_eq(topo_for_devices(fx.a, t, 64, why, sizeof why), t);
	cr_assert_eq(topo_for_devices(fx.a, t, 1024, why, sizeof why), t);
	/* 2,048 devices: 256 servers of 8 on the same fat tree; the file is kept. */
	struct topology *g = topo_for_devices(fx.a, t, 2048, why, sizeof why);
	cr_assert_not_null(g, "%s", why);
	cr_assert_neq(g, t);
	cr_assert_eq(g->servers, 256);
	cr_assert_eq(g->n_devices, 2048);
	cr_assert_eq(t->servers, 128);
	cr_assert_str_eq(g->name, t->name);
	/* Its bisection: 128 servers x 8 NICs a side x 25 GB/s x 0.94. */
	assert_close(topo_bisection_bps(g), 1024 * 25 * 0.94 * GBPS, "grown bisection");
	/* Rank 2047 (server 255, NIC 7) reaches rank 0 across the spine: 8 NICs
	 * x 256 servers / 20 per leaf -> leaves 0 and 102. */
	struct topo_path p;
	cr_assert(topo_path_between(g, 2047, 0, &p));
	cr_assert_eq(p.tier, TOPO_NETWORK);
	cr_assert_str_eq(p.hops[0].what, "nic 7 of server 255");
	cr_assert_eq(topo_fabric_leaves(g), 103);
	/* Not whole servers, or one server with no fabric: the reason. */
	cr_assert_null(topo_for_devices(fx.a, t, 2044, why, sizeof why));
	cr_assert(strstr(why, "ask for a multiple of its 8 devices per server"), "%s", why);
	struct topology *one = load_ok("topologies/dgx-a100.json");
	cr_assert_null(topo_for_devices(fx.a, one, 16, why, sizeof why));
	cr_assert(strstr(why, "is one server of 8 devices, 16 asked for"), "%s", why);
	cr_assert(topo_servers_ok(one, 1, why, sizeof why));
	cr_assert(!topo_servers_ok(one, 2, why, sizeof why));
	/* A rail-optimized fabric of 4-server rail groups takes 1-4 servers or
	 * multiples of 4; ranks stay below 2^31. */
	struct topology *r = load_text("r.json", HEADER
		"'server': {'devices': 2, 'tiers': [{'name': 'l', 'kind': 'mesh', 'bandwidth_GBps': 100,"
		"'latency_us': 1}], 'nic': {'per_server': 2, 'rate_Gbps': 400, 'latency_us': 1}},"
		"'cluster': {'servers': 4, 'fabric': {'kind': 'rail-optimized', "
		"'servers_per_rail_group': 4, 'switch_latency_us': 0.5}}}");
	print_diags();
	cr_assert_not_null(r);
	cr_assert(topo_servers_ok(r, 3, why, sizeof why));
	cr_assert(topo_servers_ok(r, 12, why, sizeof why));
	cr_assert(!topo_servers_ok(r, 6, why, sizeof why));
	cr_assert_str_eq(why, "6 servers are not whole rail groups of 4");
	cr_assert_null(topo_for_devices(fx.a, r, 12, why, sizeof why));
	cr_assert_not_null(topo_for_devices(fx.a, r, 16, why, sizeof why));
	cr_assert(!topo_servers_ok(r, (int64_t)1 << 31, why, sizeof why));
	cr_assert(strstr(why, "make more than 2147483647 ranks"), "%s", why);
}

/* ----------------------------------------------------------------- errors */

Test(topologies, every_error_of_a_document_is_reported)
{
	struct topology *t = load_text("bad.json",
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'device': {'kind': 'X', 'peak_tflops': {}, 'hbm_GB': 0, 'hbm_bandwidth_GBps': 1},\n"
		"'server': {'devices': 8, 'tiers': [{'name': 'h', 'kind': 'mesh', 'groups': [[0,1,2,3],[4,5,6,7]],\n"
		"  'bandwidth_GBps': 1, 'latency_us': 1}],\n"
		"  'nic': {'per_server': 8, 'rate_Gbps': 1, 'latency_us': 1}},\n"
		"'cluster': {'servers': 2, 'fabric': {'kind': 'fat-tree', 'servers_per_rail_group': 2,\n"
		"  'switch_latency_us': 1}}}");
	cr_assert_null(t);
	/* Line 2: empty peaks, zero HBM; line 3: devices 0 and 4 (the first of
	 * 4 x 4 = 16 pairs across the two HCCS groups) share no tier; line 6: a
	 * fat tree needs nics_per_leaf and has no rail groups. */
	assert_diag(0, "bad.json:2: device.peak_tflops: expected at least one dtype "
	               "(fp32, fp16, bf16, int32, int64 or bool)");
	assert_diag(1, "bad.json:2: device.hbm_GB: expected a positive number, got 0");
	assert_diag(2, "bad.json:3: server.tiers: devices 0 and 4 share no tier "
	               "(16 pairs share none)");
	assert_diag(3, "bad.json:6: cluster.fabric.nics_per_leaf: missing required field");
	assert_diag(4, "bad.json:6: cluster.fabric.servers_per_rail_group: "
	               "only a rail-optimized fabric has rail groups");
	cr_assert_eq(fx.d.count, 5);
}

/* The compute model's members: absent means 0 (no shape factor, no
 * overhead); present, a number in [0, 65536] and [0, 1000] us. */
Test(topologies, compute_model_members_are_validated)
{
	struct topology *t = load_text("ok.json", HEADER
		"'server': {'devices': 1, 'nic': {'per_server': 1, 'rate_Gbps': 1, 'latency_us': 1}}}");
	cr_assert_not_null(t);
	cr_assert_eq(t->device.gemm_half_dim, 0);
	cr_assert_eq(t->device.kernel_overhead_s, 0);
	t = load_text("c.json",
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'device': {'kind': 'X', 'peak_tflops': {'fp16': 1}, 'hbm_GB': 1, 'hbm_bandwidth_GBps': 1,\n"
		"  'gemm_half_dim': -8,\n"
		"  'kernel_overhead_us': '5',\n"
		"  'kernel_overhead': 5},\n"
		"'server': {'devices': 1, 'nic': {'per_server': 1, 'rate_Gbps': 1, 'latency_us': 1}}}");
	cr_assert_null(t);
	assert_diag(0, "c.json:5: device.kernel_overhead: unknown key \"kernel_overhead\" "
	               "(did you mean \"kernel_overhead_us\"?)");
	assert_diag(1, "c.json:3: device.gemm_half_dim: expected a number between 0 and 65536, "
	               "got -8");
	assert_diag(2, "c.json:4: device.kernel_overhead_us: expected a number between 0 and 1000, "
	               "got \"5\"");
	cr_assert_eq(fx.d.count, 3);
}

Test(topologies, unknown_keys_and_missing_server)
{
	struct topology *t = load_text("k.json",
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's', 'clustre': 1,\n"
		"'device': {'kind': 'X', 'peak_tflops': {'fp16': 1}, 'hbm_GB': 1, 'hbm_bandwidth_GBps': 1}}");
	cr_assert_null(t);
	assert_diag(0, "k.json:1: clustre: unknown key \"clustre\" (did you mean \"cluster\"?)");
	assert_diag(1, "k.json:1: server: missing required field");
	cr_assert_eq(fx.d.count, 2);
}

Test(topologies, wrong_format_and_version)
{
	cr_assert_null(load_text("f.json", "{'format': 'shardlab-model', 'version': 1}"));
	cr_assert_null(load_text("v.json", "{'format': 'shardlab-topology',\n'version': 2}"));
	assert_diag(0, "f.json:1: format: expected \"shardlab-topology\", got \"shardlab-model\"");
	/* further: name, source, device, server missing */
	size_t n = 0;
	while (n < fx.d.count && strncmp(fx.d.items[n].file, "v.json", 6))
		n++;
	assert_diag(n, "v.json:2: version: unsupported version 2 (this shardlab reads version 1)");
}

Test(topologies, base_must_be_a_topology)
{
	char dir[] = "/tmp/shardlab-topo-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char model[128], cluster[128];
	snprintf(model, sizeof model, "%s/model.json", dir);
	snprintf(cluster, sizeof cluster, "%s/cluster.json", dir);
	FILE *f = fopen(model, "w");
	cr_assert_not_null(f);
	fputs("{\"format\": \"shardlab-model\", \"version\": 1}\n", f);
	fclose(f);
	struct topology *t = load_text(cluster,
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'base': 'model.json', 'cluster': {'servers': 2, 'fabric': {'kind': 'fat-tree',\n"
		"'nics_per_leaf': 8, 'switch_latency_us': 1}}}");
	cr_assert_null(t);
	char want[512];
	snprintf(want, sizeof want,
	         "%s:2: base: the base file %s is a \"shardlab-model\" file, not a "
	         "\"shardlab-topology\"", cluster, model);
	assert_diag(0, want);
	cr_assert_eq(fx.d.count, 1);
	remove(model);
	remove(dir);
}

Test(topologies, errors_inside_a_base_name_the_base_file)
{
	char dir[] = "/tmp/shardlab-topo-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char server[128], cluster[128];
	snprintf(server, sizeof server, "%s/server.json", dir);
	snprintf(cluster, sizeof cluster, "%s/c.json", dir);
	FILE *f = fopen(server, "w");
	cr_assert_not_null(f);
	fputs("{\"format\": \"shardlab-topology\", \"version\": 1, \"name\": \"s\", \"source\": \"s\",\n"
	      "\"device\": {\"kind\": \"X\", \"peak_tflops\": {\"fp16\": 1}, \"hbm_GB\": 1,\n"
	      "  \"hbm_bandwidth_GBps\": 1},\n"
	      "\"server\": {\"devices\": 1, \"nic\": {\"per_server\": 1, \"rate_Gbps\": \"fast\",\n"
	      "  \"latency_us\": 1}}}\n", f);
	fclose(f);
	cr_assert_null(load_text(cluster,
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'base': 'server.json', 'cluster': {'servers': 2, 'fabric': {'kind': 'fat-tree',\n"
		"'nics_per_leaf': 8, 'switch_latency_us': 1}}}"));
	char want[512];
	snprintf(want, sizeof want,
	         "%s:4: server.nic.rate_Gbps: expected a positive number, got \"fast\"", server);
	assert_diag(0, want);
	cr_assert_eq(fx.d.count, 1);
	remove(server);
	remove(dir);
}

Test(topologies, loading_a_missing_file_is_a_diagnostic)
{
	cr_assert_null(topo_load(fx.a, "topologies/no-such-file.json", &fx.d));
	cr_assert_eq(fx.d.count, 1);
	cr_assert_eq(fx.d.errors, 1);
}

/* "calibration" names a calibration file from the topology's folder (the
 * commands apply it by default) or "none"; a missing file is an error at
 * its line; a cluster takes its base's unless it names its own. */
Test(topologies, calibration_is_named_from_the_files_folder_and_inherited)
{
	char dir[] = "/tmp/shardlab-topo-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char server[128], cluster[128], cal[128], other[128], want[512];
	snprintf(server, sizeof server, "%s/server.json", dir);
	snprintf(cluster, sizeof cluster, "%s/c.json", dir);
	snprintf(cal, sizeof cal, "%s/mine.json", dir);
	snprintf(other, sizeof other, "%s/other.json", dir);
	/* presence is what the topology checks; the command reads the file */
	FILE *f = fopen(cal, "w");
	cr_assert_not_null(f);
	fputs("{}\n", f);
	fclose(f);
	f = fopen(other, "w");
	cr_assert_not_null(f);
	fputs("{}\n", f);
	fclose(f);
	f = fopen(server, "w");
	cr_assert_not_null(f);
	fputs("{\"format\": \"shardlab-topology\", \"version\": 1, \"name\": \"s\", \"source\": \"s\",\n"
	      "\"calibration\": \"mine.json\",\n"
	      "\"device\": {\"kind\": \"X\", \"peak_tflops\": {\"fp16\": 1}, \"hbm_GB\": 1,\n"
	      "  \"hbm_bandwidth_GBps\": 1},\n"
	      "\"server\": {\"devices\": 1, \"nic\": {\"per_server\": 1, \"rate_Gbps\": 100,\n"
	      "  \"latency_us\": 1}}}\n", f);
	fclose(f);

	struct topology *t = load_ok(server);
	cr_expect_str_eq(t->calibration_file, cal);
	t = load_text(cluster,
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'base': 'server.json', 'cluster': {'servers': 2, 'fabric': {'kind': 'fat-tree',\n"
		"'nics_per_leaf': 8, 'switch_latency_us': 1}}}");
	cr_assert_not_null(t);
	cr_expect_str_eq(t->calibration_file, cal); /* the base's */
	t = load_text(cluster,
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'base': 'server.json', 'calibration': 'other.json',\n"
		"'cluster': {'servers': 2, 'fabric': {'kind': 'fat-tree',\n"
		"'nics_per_leaf': 8, 'switch_latency_us': 1}}}");
	cr_assert_not_null(t);
	cr_expect_str_eq(t->calibration_file, other); /* its own */
	t = load_text(cluster,
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'base': 'server.json', 'calibration': 'none',\n"
		"'cluster': {'servers': 2, 'fabric': {'kind': 'fat-tree',\n"
		"'nics_per_leaf': 8, 'switch_latency_us': 1}}}");
	cr_assert_not_null(t);
	cr_expect_str_eq(t->calibration_file, "none");
	cr_assert_eq(fx.d.count, 0);

	cr_assert_null(load_text(cluster,
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'base': 'server.json',\n"
		"'calibration': 'gone.json', 'cluster': {'servers': 2, 'fabric': {'kind': 'fat-tree',\n"
		"'nics_per_leaf': 8, 'switch_latency_us': 1}}}"));
	snprintf(want, sizeof want,
	         "%s:3: calibration: cannot read the calibration file %s/gone.json: No such file or "
	         "directory", cluster, dir);
	assert_diag(0, want);
	cr_assert_eq(fx.d.count, 1);
	/* a folder opens but does not read */
	cr_assert_null(load_text(cluster,
		"{'format': 'shardlab-topology', 'version': 1, 'name': 'x', 'source': 's',\n"
		"'base': 'server.json', 'calibration': '.',\n"
		"'cluster': {'servers': 2, 'fabric': {'kind': 'fat-tree',\n"
		"'nics_per_leaf': 8, 'switch_latency_us': 1}}}"));
	snprintf(want, sizeof want,
	         "%s:2: calibration: cannot read the calibration file %s: Is a directory", cluster,
	         dir);
	assert_diag(1, want);
	remove(server);
	remove(cal);
	remove(other);
	remove(dir);
}
