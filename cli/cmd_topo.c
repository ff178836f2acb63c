/* cmd_topo.c — `shardlab topo FILE [--between A B] [--json]`: describe a
 * topology (device, intra-server tiers, NICs, fabric, bisection) or the
 * path between two ranks, for people or (with --json) for scripts.
 *
 * Figures are printed with fixed formats (cli_si: three significant
 * digits; latencies in microseconds with %.3g), so the same file always
 * gives the same bytes. JSON numbers are in bytes, bytes/s, FLOP/s and
 * seconds.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab topo FILE [--between A B] [--json | --csv]\n"
	        "\n"
	        "Describe a topology: the device (peak FLOP/s per dtype, HBM, and the\n"
	        "compute model's efficiencies, GEMM half-dimension, per-kernel\n"
	        "overhead and the memory-bound kernels' classes (kernel_efficiency)\n"
	        "where the file states them: docs/cost-models.md), each intra-server\n"
	        "tier (bandwidth per device, latency, kind, groups), the NICs, the\n"
	        "inter-server fabric, the collective library (docs/cost-models.md),\n"
	        "the calibration every command that prices it applies by default (the\n"
	        "one the file names, \"calibration\", JSON \"calibration_file\"; else\n"
	        "its device's shipped one, that of a PyTorch-family run beside it\n"
	        "where it differs, with a line when its training figures were\n"
	        "transferred from another device (calibrate --transfer); or none:\n"
	        "JSON \"default_calibration\" by training.framework, a path or\n"
	        "null),\n"
	        "and the bisection bandwidth (the cut between ranks [0, n/2) and\n"
	        "[n/2, n), one direction). Bandwidths are the achievable rates every\n"
	        "cost model and the simulator use: the file's line rate times the\n"
	        "link's efficiency, shown beside it when below 1. FILE is a topology\n"
	        "file or a scenario file (its topology is described).\n"
	        "\n"
	        "options:\n"
	        "  --between A B  the path from rank A to rank B instead: every hop with\n"
	        "                 its bandwidth and latency, the bottleneck bandwidth,\n"
	        "                 the total latency and the tier the ranks talk over.\n"
	        "                 Ranks are server-major: rank r is device\n"
	        "                 r %% devices_per_server of server r / devices_per_server.\n"
	        "  --json         print the same facts as JSON (bytes, bytes/s, FLOP/s,\n"
	        "                 seconds)\n"
	        "  --csv          print the links as CSV, one row per intra-server tier\n"
	        "                 and one for the NICs: link, kind, groups (device lists\n"
	        "                 joined by \" \"), line_rate_bytes_per_s, efficiency,\n"
	        "                 link_bytes_per_s (achievable: per mesh link, switch\n"
	        "                 port or NIC), device_bytes_per_s (achievable, per\n"
	        "                 device),\n"
	        "                 latency_s; with --between, one row per hop: hop,\n"
	        "                 what, bandwidth_bytes_per_s, latency_s\n"
	        "  -h, --help     this help\n"
	        "\n"
	        "exit status: 0 success, 1 invalid file (diagnostics on stderr),\n"
	        "2 usage error (including a rank out of range).\n");
}

struct topo_args {
	const char *file;
	bool json, csv, between;
	long long a, b;
};

static bool parse_rank(const char *s, long long *out)
{
	char *end = NULL;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (errno || end == s || *end) {
		fprintf(stderr, "shardlab topo: '%s' is not a rank (expected an integer)\n", s);
		return false;
	}
	*out = v;
	return true;
}

static bool parse_args(int argc, char **argv, struct topo_args *args)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			args->json = true;
		} else if (!strcmp(argv[i], "--csv")) {
			args->csv = true;
		} else if (!strcmp(argv[i], "--between")) {
			if (i + 2 >= argc) {
				fprintf(stderr, "shardlab topo: --between needs two ranks\n");
				return false;
			}
			args->between = true;
			if (!parse_rank(argv[i + 1], &args->a) || !parse_rank(argv[i + 2], &args->b))
				return false;
			i += 2;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "shardlab topo: unknown option '%s'\n", argv[i]);
			return false;
		} else if (args->file) {
			fprintf(stderr, "shardlab topo: one FILE only ('%s' and '%s')\n", args->file,
			        argv[i]);
			return false;
		} else {
			args->file = argv[i];
		}
	}
	if (!args->file)
		fprintf(stderr, "shardlab topo: missing FILE\n");
	return args->file != NULL;
}

static const char *tier_label(const struct topology *t, int tier)
{
	return tier >= 0 ? t->tiers[tier].name : tier == TOPO_NETWORK ? "network" : "same rank";
}

/* ------------------------------------------------------------ human text */

static void print_groups(const struct topo_tier *k)
{
	bool same = true;
	for (int g = 1; g < k->n_groups; g++)
		same = same && k->group_size[g] == k->group_size[0];
	if (same) {
		printf("%d × %d", k->n_groups, k->group_size[0]);
	} else {
		for (int g = 0; g < k->n_groups; g++)
			printf("%s%d", g ? "+" : "", k->group_size[g]);
	}
	char b[32];
	printf(" (%s per %s", cli_si(b, sizeof b, k->bandwidth_bps, "B/s"),
	       k->kind == TOPO_TIER_SWITCH ? "port" : "link");
	if (k->efficiency < 1)
		printf(", %.3g of the line rate", k->efficiency);
	if (k->shared_bps > 0)
		printf(", shared %s", cli_si(b, sizeof b, k->shared_bps, "B/s"));
	printf(")\n");
}

static void print_device(const struct topo_device *d)
{
	char b[32], c[32];
	printf("device   %s: peak", d->kind);
	const char *sep = " ";
	for (int i = 0; i < DT_COUNT; i++) {
		if (d->peak_flops[i] <= 0)
			continue;
		printf("%s%s %s", sep, dtype_names[i], cli_si(b, sizeof b, d->peak_flops[i], "FLOP/s"));
		sep = ", ";
	}
	if (d->peak_fp8_flops > 0)
		printf("%sfp8 %s", sep, cli_si(b, sizeof b, d->peak_fp8_flops, "FLOP/s"));
	printf("; HBM %s at %s; efficiency matmul %.3g, memory %.3g\n",
	       cli_si(b, sizeof b, d->hbm_bytes, "B"), cli_si(c, sizeof c, d->hbm_bps, "B/s"),
	       d->matmul_efficiency, d->memory_efficiency);
	/* The rest of the compute model (docs/cost-models.md). */
	printf("kernels  GEMM half-dimension %.4g%s, overhead %.4g us per kernel", d->gemm_half_dim,
	       d->gemm_half_dim > 0 ? "" : " (no shape factor)", d->kernel_overhead_s * 1e6);
	if (d->speed_cv > 0)
		printf("; devices spread %.3g (stragglers)", d->speed_cv);
	printf("\n");
	/* Memory-bound kernels by class, where the file states them. */
	const char *lead = "         memory-bound kernels (forward / backward, of the HBM rate):";
	for (int k = 0; k < TOPO_KC_COUNT; k++) {
		if (d->kernel_efficiency[k][0] <= 0 && d->kernel_efficiency[k][1] <= 0)
			continue;
		printf("%s %s %.3g / %.3g", lead, topo_kernel_class_names[k],
		       d->kernel_efficiency[k][0] > 0 ? d->kernel_efficiency[k][0] : d->memory_efficiency,
		       d->kernel_efficiency[k][1] > 0 ? d->kernel_efficiency[k][1] : d->memory_efficiency);
		lead = ",";
	}
	if (strcmp(lead, ",") == 0)
		printf("\n");
}

/* The collective library and its settings (docs/cost-models.md). */
static void print_collectives(const struct topology *t)
{
	const struct topo_collectives *c = &t->coll;
	if (c->library == TOPO_COLL_NONE) {
		printf("collectives the links' formulas (no library)\n");
		return;
	}
	if (c->library == TOPO_COLL_HCCL) {
		printf("collectives hccl, the links' formulas%s\n",
		       c->pipeline ? ", its pipeline across servers" : "");
		return;
	}
	printf("collectives %s, inside %s", topo_coll_library_names[c->library],
	       topo_link_class_names[c->intra]);
	if (c->tree_max_busbw_bps[0] > 0 || c->tree_max_busbw_bps[1] > 0)
		printf(", tree bus bandwidth at most %.4g / %.4g GB/s (2 servers / more)",
		       c->tree_max_busbw_bps[0] / 1e9, c->tree_max_busbw_bps[1] / 1e9);
	if (c->ll_max_busbw_bps[0] > 0 || c->ll_max_busbw_bps[1] > 0 || c->ll_max_busbw_bps[2] > 0)
		printf(", LL bus bandwidth at most %.4g / %.4g / %.4g GB/s (1 server / 2 / more)",
		       c->ll_max_busbw_bps[0] / 1e9, c->ll_max_busbw_bps[1] / 1e9,
		       c->ll_max_busbw_bps[2] / 1e9);
	if (c->nvls)
		printf(", NVLS (the switch reduces)");
	printf("\n");
}

static void print_fabric(const struct topology *t)
{
	const struct topo_fabric *f = &t->fabric;
	if (f->kind == TOPO_FABRIC_NONE) {
		printf("fabric   none (one server)\n");
		return;
	}
	int64_t n = topo_fabric_leaves(t);
	printf("fabric   %s, ", topo_fabric_kind_names[f->kind]);
	if (f->kind == TOPO_FABRIC_RAIL_OPTIMIZED)
		printf("%d servers per rail group, ", f->servers_per_rail_group);
	else
		printf("%d NICs per leaf, ", f->nics_per_leaf);
	printf("%lld lea%s, oversubscription %.3g, switch %.3g us\n", (long long)n,
	       n == 1 ? "f" : "ves", f->oversubscription, f->switch_latency_s * 1e6);
}

/* The calibration every command that prices t applies by default, by
 * framework family: the file's own, else its device's shipped one (NULL:
 * none, the bare model). */
static void default_calibrations(struct arena *a, const struct topology *t,
                                 const char *out[FRAMEWORK_COUNT])
{
	for (int f = 0; f < FRAMEWORK_COUNT; f++)
		out[f] = cli_default_calibration_file(a, t, (enum framework)f);
}

static void print_calibration(struct arena *a, const struct topology *t)
{
	const char *cal[FRAMEWORK_COUNT];
	default_calibrations(a, t, cal);
	if (t->calibration_file) /* named by the file: the commands' default */
		printf("calibration: %s (the file's own, the default of every command that prices "
		       "it)\n", t->calibration_file);
	else if (!cal[FRAMEWORK_MEGATRON])
		printf("calibration: none (no shipped calibration for the %s: the bare model, no "
		       "intervals)\n", t->device.kind ? t->device.kind : "device");
	else if (cal[FRAMEWORK_PYTORCH] && strcmp(cal[FRAMEWORK_PYTORCH], cal[FRAMEWORK_MEGATRON]))
		printf("calibration: %s (the device's shipped one, the default of every command "
		       "that prices it; of a run with training.framework \"pytorch\": %s)\n",
		       cal[FRAMEWORK_MEGATRON], cal[FRAMEWORK_PYTORCH]);
	else
		printf("calibration: %s (the device's shipped one, the default of every command "
		       "that prices it)\n", cal[FRAMEWORK_MEGATRON]);
	/* A default whose training figures were carried from another device
	 * says so before anyone runs it. */
	const char *file = t->calibration_file ? t->calibration_file : cal[FRAMEWORK_MEGATRON];
	struct diag_list d;
	diag_list_init(&d);
	const struct calibration *c = file ? cost_calibration_load(a, file, &d) : NULL;
	const struct cal_fit *tf = c ? cost_calibration_training_fit(c) : NULL;
	diag_list_free(&d);
	if (tf && tf->from_calibration)
		printf("  its training figures transferred from %s, fitted on %s%s rows: not "
		       "measured on the %s\n", tf->from_calibration, tf->from_device ? "" : "another ",
		       tf->from_device ? tf->from_device : "device's",
		       t->device.kind ? t->device.kind : "device");
}

static void print_topology(struct arena *a, const struct topology *t)
{
	char b[32], c[32];
	printf("topology %s: %lld × %s (%d server%s × %d)\n", t->name, (long long)t->n_devices,
	       t->device.kind, t->servers, t->servers == 1 ? "" : "s", t->devices_per_server);
	printf("source: %s\n", t->source);
	print_calibration(a, t);
	print_device(&t->device);
	printf("%-8s %-14s %-9s %-7s %s\n", "tier", "per device", "latency", "kind", "groups");
	for (int k = 0; k < t->n_tiers; k++) {
		const struct topo_tier *tier = &t->tiers[k];
		snprintf(c, sizeof c, "%.3g us", tier->latency_s * 1e6);
		printf("%-8s %-14s %-9s %-7s ", tier->name,
		       cli_si(b, sizeof b, topo_tier_device_bps(t, k), "B/s"), c,
		       topo_tier_kind_names[tier->kind]);
		print_groups(tier);
	}
	snprintf(c, sizeof c, "%.3g us", t->nic.latency_s * 1e6);
	printf("%-8s %-14s %-9s %.3g Gb/s, %d per server", "nic",
	       cli_si(b, sizeof b, topo_nic_device_bps(t), "B/s"), c,
	       t->nic.bandwidth_bps / t->nic.efficiency * 8 / 1e9, t->nic.per_server);
	if (t->nic.efficiency < 1)
		printf(" (%.3g of the line rate)", t->nic.efficiency);
	printf("\n");
	print_fabric(t);
	print_collectives(t);
	printf("bisection %s\n", cli_si(b, sizeof b, topo_bisection_bps(t), "B/s"));
}

static void print_path(const struct topology *t, long long a, long long b,
                       const struct topo_path *p)
{
	char bw[32];
	printf("path %lld -> %lld (%s)\n", a, b, tier_label(t, p->tier));
	for (int i = 0; i < p->n_hops; i++)
		printf("  %-24s %-12s %.3g us\n", p->hops[i].what,
		       cli_si(bw, sizeof bw, p->hops[i].bandwidth_bps, "B/s"),
		       p->hops[i].latency_s * 1e6);
	if (p->n_hops == 0)
		printf("bottleneck none, latency 0 us, tier %s\n", tier_label(t, p->tier));
	else
		printf("bottleneck %s, latency %.3g us, tier %s\n",
		       cli_si(bw, sizeof bw, p->bottleneck_bps, "B/s"), p->latency_s * 1e6,
		       tier_label(t, p->tier));
}

/* ------------------------------------------------------------------ JSON */

static cJSON *json_tier(const struct topology *t, int k)
{
	const struct topo_tier *tier = &t->tiers[k];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", tier->name);
	cJSON_AddStringToObject(o, "kind", topo_tier_kind_names[tier->kind]);
	cJSON *groups = cJSON_AddArrayToObject(o, "groups");
	for (int g = 0; g < tier->n_groups; g++) {
		cJSON *members = cJSON_CreateArray();
		for (int d = 0; d < t->devices_per_server; d++)
			if (tier->group_of[d] == g)
				cJSON_AddItemToArray(members, cJSON_CreateNumber(d));
		cJSON_AddItemToArray(groups, members);
	}
	cJSON_AddNumberToObject(o, "bandwidth_bps", tier->bandwidth_bps);
	cJSON_AddNumberToObject(o, "efficiency", tier->efficiency);
	cJSON_AddNumberToObject(o, "device_bps", topo_tier_device_bps(t, k));
	cJSON_AddNumberToObject(o, "latency_s", tier->latency_s);
	if (tier->shared_bps > 0)
		cJSON_AddNumberToObject(o, "shared_bps", tier->shared_bps);
	return o;
}

static cJSON *json_device(const struct topo_device *d)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kind", d->kind);
	cJSON *peaks = cJSON_AddObjectToObject(o, "peak_flops");
	for (int i = 0; i < DT_COUNT; i++)
		if (d->peak_flops[i] > 0)
			cJSON_AddNumberToObject(peaks, dtype_names[i], d->peak_flops[i]);
	if (d->peak_fp8_flops > 0)
		cJSON_AddNumberToObject(peaks, "fp8", d->peak_fp8_flops);
	cJSON_AddNumberToObject(o, "hbm_bytes", d->hbm_bytes);
	cJSON_AddNumberToObject(o, "hbm_bps", d->hbm_bps);
	cJSON_AddNumberToObject(o, "matmul_efficiency", d->matmul_efficiency);
	cJSON_AddNumberToObject(o, "memory_efficiency", d->memory_efficiency);
	cJSON_AddNumberToObject(o, "gemm_half_dim", d->gemm_half_dim);
	cJSON_AddNumberToObject(o, "kernel_overhead_s", d->kernel_overhead_s);
	cJSON_AddNumberToObject(o, "speed_cv", d->speed_cv);
	/* every class, memory_efficiency where the file states none */
	cJSON *ke = cJSON_AddObjectToObject(o, "kernel_efficiency");
	for (int k = 0; k < TOPO_KC_COUNT; k++) {
		double fb[2];
		for (int i = 0; i < 2; i++)
			fb[i] = d->kernel_efficiency[k][i] > 0 ? d->kernel_efficiency[k][i] : d->memory_efficiency;
		cJSON_AddItemToObject(ke, topo_kernel_class_names[k], cJSON_CreateDoubleArray(fb, 2));
	}
	return o;
}

/* A library's bus-bandwidth caps in bytes/s, null where there is none. */
static void json_caps(cJSON *o, const char *key, const double *caps, int n)
{
	cJSON *a = cJSON_AddArrayToObject(o, key);
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, caps[i] > 0 ? cJSON_CreateNumber(caps[i]) : cJSON_CreateNull());
}

static cJSON *json_fabric(const struct topology *t)
{
	const struct topo_fabric *f = &t->fabric;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kind", topo_fabric_kind_names[f->kind]);
	if (f->kind == TOPO_FABRIC_FAT_TREE)
		cJSON_AddNumberToObject(o, "nics_per_leaf", f->nics_per_leaf);
	if (f->kind == TOPO_FABRIC_RAIL_OPTIMIZED)
		cJSON_AddNumberToObject(o, "servers_per_rail_group", f->servers_per_rail_group);
	if (f->kind != TOPO_FABRIC_NONE) {
		cJSON_AddNumberToObject(o, "leaves", (double)topo_fabric_leaves(t));
		cJSON_AddNumberToObject(o, "oversubscription", f->oversubscription);
		cJSON_AddNumberToObject(o, "switch_latency_s", f->switch_latency_s);
	}
	return o;
}

static cJSON *json_path(const struct topology *t, long long a, long long b,
                        const struct topo_path *p)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "from", (double)a);
	cJSON_AddNumberToObject(o, "to", (double)b);
	cJSON_AddStringToObject(o, "tier", tier_label(t, p->tier));
	cJSON *hops = cJSON_AddArrayToObject(o, "hops");
	for (int i = 0; i < p->n_hops; i++) {
		cJSON *h = cJSON_CreateObject();
		cJSON_AddStringToObject(h, "what", p->hops[i].what);
		cJSON_AddNumberToObject(h, "bandwidth_bps", p->hops[i].bandwidth_bps);
		cJSON_AddNumberToObject(h, "latency_s", p->hops[i].latency_s);
		cJSON_AddItemToArray(hops, h);
	}
	if (p->n_hops)
		cJSON_AddNumberToObject(o, "bottleneck_bps", p->bottleneck_bps);
	else
		cJSON_AddNullToObject(o, "bottleneck_bps");
	cJSON_AddNumberToObject(o, "latency_s", p->latency_s);
	return o;
}

static cJSON *json_topology(struct arena *a, const struct topology *t)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", t->name);
	cJSON_AddStringToObject(o, "source", t->source);
	cJSON_AddStringToObject(o, "file", t->file);
	if (t->calibration_file)
		cJSON_AddStringToObject(o, "calibration_file", t->calibration_file);
	const char *cal[FRAMEWORK_COUNT];
	default_calibrations(a, t, cal);
	cJSON *dc = cJSON_AddObjectToObject(o, "default_calibration");
	for (int f = 0; f < FRAMEWORK_COUNT; f++)
		if (cal[f])
			cJSON_AddStringToObject(dc, framework_names[f], cal[f]);
		else
			cJSON_AddNullToObject(dc, framework_names[f]);
	cJSON_AddNumberToObject(o, "devices", (double)t->n_devices);
	cJSON_AddNumberToObject(o, "servers", t->servers);
	cJSON_AddNumberToObject(o, "devices_per_server", t->devices_per_server);
	cJSON_AddItemToObject(o, "device", json_device(&t->device));
	cJSON *tiers = cJSON_AddArrayToObject(o, "tiers");
	for (int k = 0; k < t->n_tiers; k++)
		cJSON_AddItemToArray(tiers, json_tier(t, k));
	cJSON *nic = cJSON_AddObjectToObject(o, "nic");
	cJSON_AddNumberToObject(nic, "per_server", t->nic.per_server);
	cJSON_AddNumberToObject(nic, "bandwidth_bps", t->nic.bandwidth_bps);
	cJSON_AddNumberToObject(nic, "efficiency", t->nic.efficiency);
	cJSON_AddNumberToObject(nic, "device_bps", topo_nic_device_bps(t));
	cJSON_AddNumberToObject(nic, "latency_s", t->nic.latency_s);
	cJSON_AddItemToObject(o, "fabric", json_fabric(t));
	cJSON *coll = cJSON_AddObjectToObject(o, "collectives");
	cJSON_AddStringToObject(coll, "library", topo_coll_library_names[t->coll.library]);
	cJSON_AddStringToObject(coll, "intra", topo_link_class_names[t->coll.intra]);
	json_caps(coll, "tree_max_busbw_bps", t->coll.tree_max_busbw_bps, 2);
	json_caps(coll, "ll_max_busbw_bps", t->coll.ll_max_busbw_bps, 3);
	cJSON_AddBoolToObject(coll, "nvls", t->coll.nvls);
	cJSON_AddBoolToObject(coll, "pipeline", t->coll.pipeline);
	cJSON_AddNumberToObject(o, "bisection_bps", topo_bisection_bps(t));
	return o;
}

static int print_json(cJSON *o)
{
	char *s = o ? cJSON_Print(o) : NULL;
	cJSON_Delete(o);
	if (!s) {
		fprintf(stderr, "shardlab: out of memory\n");
		return EXIT_INVALID;
	}
	printf("%s\n", s);
	cJSON_free(s);
	return EXIT_OK;
}

/* ------------------------------------------------------------------- CSV */

static void csv_links(const struct topology *t)
{
	static const char *const cols[] = {"link", "kind", "groups", "line_rate_bytes_per_s",
	                                   "efficiency", "link_bytes_per_s", "device_bytes_per_s",
	                                   "latency_s", NULL};
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, cols);
	for (int k = 0; k < t->n_tiers; k++) {
		const struct topo_tier *tier = &t->tiers[k];
		char groups[2048];
		size_t o = 0;
		groups[0] = '\0';
		for (int g = 0; g < tier->n_groups && o + 16 < sizeof groups; g++) {
			o += (size_t)snprintf(groups + o, sizeof groups - o, "%s{", g ? " " : "");
			bool first = true;
			for (int d = 0; d < t->devices_per_server && o + 16 < sizeof groups; d++)
				if (tier->group_of[d] == g) {
					o += (size_t)snprintf(groups + o, sizeof groups - o, "%s%d",
					                      first ? "" : ",", d);
					first = false;
				}
			o += (size_t)snprintf(groups + o, sizeof groups - o, "}");
		}
		cli_csv_str(&c, tier->name);
		cli_csv_str(&c, topo_tier_kind_names[tier->kind]);
		cli_csv_str(&c, groups);
		cli_csv_num(&c, tier->bandwidth_bps / tier->efficiency);
		cli_csv_num(&c, tier->efficiency);
		cli_csv_num(&c, tier->bandwidth_bps);
		cli_csv_num(&c, topo_tier_device_bps(t, k));
		cli_csv_num(&c, tier->latency_s);
		cli_csv_end(&c);
	}
	cli_csv_str(&c, "nic");
	cli_csv_str(&c, "nic");
	cli_csv_str(&c, NULL);
	cli_csv_num(&c, t->nic.bandwidth_bps / t->nic.efficiency);
	cli_csv_num(&c, t->nic.efficiency);
	cli_csv_num(&c, t->nic.bandwidth_bps);
	cli_csv_num(&c, topo_nic_device_bps(t));
	cli_csv_num(&c, t->nic.latency_s);
	cli_csv_end(&c);
}

static void csv_path(const struct topo_path *p)
{
	static const char *const cols[] = {"hop", "what", "bandwidth_bytes_per_s", "latency_s",
	                                   NULL};
	struct cli_csv c = {.f = stdout};
	cli_csv_header(&c, cols);
	for (int i = 0; i < p->n_hops; i++) {
		cli_csv_int(&c, i);
		cli_csv_str(&c, p->hops[i].what);
		cli_csv_num(&c, p->hops[i].bandwidth_bps);
		cli_csv_num(&c, p->hops[i].latency_s);
		cli_csv_end(&c);
	}
}

/* ------------------------------------------------------------------ main */

static int run(struct arena *a, const struct topology *t, const struct topo_args *args)
{
	struct topo_path p;
	if (args->between) {
		long long bad = args->a < 0 || args->a >= t->n_devices ? args->a : args->b;
		if (!topo_path_between(t, args->a, args->b, &p)) {
			fprintf(stderr, "shardlab topo: rank %lld is out of range (%s has ranks 0 to %lld)\n",
			        bad, t->name, (long long)t->n_devices - 1);
			return EXIT_USAGE;
		}
	}
	if (args->csv) {
		if (args->between)
			csv_path(&p);
		else
			csv_links(t);
		return EXIT_OK;
	}
	if (!args->json) {
		if (args->between)
			print_path(t, args->a, args->b, &p);
		else
			print_topology(a, t);
		return EXIT_OK;
	}
	cJSON *o = json_topology(a, t);
	if (o && args->between)
		cJSON_AddItemToObject(o, "path", json_path(t, args->a, args->b, &p));
	return print_json(o);
}

int cmd_topo(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	struct topo_args args = {0};
	if (!parse_args(argc, argv, &args)) {
		fprintf(stderr, "usage: shardlab topo FILE [--between A B] [--json] (see --help)\n");
		return EXIT_USAGE;
	}
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct topology *t = a ? cli_load_topology(a, args.file, &d) : NULL;
	cli_print_diags(&d);
	int rc = t ? run(a, t, &args) : EXIT_INVALID;
	if (!a)
		fprintf(stderr, "shardlab: out of memory\n");
	diag_list_free(&d);
	arena_free(a);
	return rc;
}
