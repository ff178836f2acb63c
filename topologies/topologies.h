/* topologies.h — clusters of Ascend or GPU servers and their interconnects.
 *
 * A topology is one device kind, a server (devices plus intra-server tiers
 * and NICs) and optionally a cluster of such servers on a fabric stated by
 * parameters (server count, leaf size, oversubscription, switch latency),
 * never by listing links. Ranks are numbered server-major: rank r lives on
 * server r / devices_per_server as local device r % devices_per_server.
 *
 * Units inside: bytes, bytes/s, FLOP/s, seconds. Files say GB/s (10^9),
 * Gb/s where the field name says so, TFLOP/s, GB (10^9 bytes), microseconds.
 * A tier's or NIC's bandwidth inside is what collectives achieve on it: the
 * file's line rate times its "efficiency" (docs/formats.md), so that every
 * cost model and the simulator see the same achievable rate.
 *
 * Data flow: util -> topologies. Nothing here knows about graphs or plans.
 */
#ifndef SHARDLAB_TOPOLOGIES_H
#define SHARDLAB_TOPOLOGIES_H

#include <stdbool.h>
#include <stdint.h>

#include "util.h"

#define TOPO_FORMAT "shardlab-topology"
#define TOPO_VERSION 1
#define TOPO_MAX_TIERS 4
/* Bounds of the compute model's parameters in a file: beyond them a value
 * is a mistake (a half-dimension past any real matrix, an overhead of
 * more than a millisecond per kernel). */
#define TOPO_MAX_GEMM_HALF_DIM 65536
#define TOPO_MAX_KERNEL_OVERHEAD_US 1000

/* Classes of memory-bound kernels whose rate a device file may state apart
 * from the streaming rate (docs/cost-models.md, "Memory-bound kernels by
 * class"): the planner maps each op kind to one of them or to none. */
enum topo_kernel_class {
	TOPO_KC_NORM,       /* LayerNorm, RMSNorm */
	TOPO_KC_SOFTMAX,
	TOPO_KC_DROPOUT,
	TOPO_KC_ACTIVATION, /* GeLU, SiLU, ReLU, sigmoid */
	TOPO_KC_LOSS,       /* softmax cross-entropy */
	TOPO_KC_COUNT
};
extern const char *const topo_kernel_class_names[TOPO_KC_COUNT + 1]; /* NULL-terminated */

struct topo_device {
	const char *kind;                /* "Ascend 910", "NVIDIA A100 SXM 80GB" */
	double peak_flops[DT_COUNT];     /* dense peak per dtype, FLOP/s; 0 = not given */
	double peak_fp8_flops;           /* dense FP8 tensor-core peak, FLOP/s (the rate the
	                                    FP8 recipe's GEMMs run at); 0 = no FP8 */
	double fp8_matmul_efficiency;    /* achievable fraction of peak_fp8_flops for large FP8
	                                    GEMMs; the file's matmul_efficiency when not given */
	double hbm_bytes;
	double hbm_bps;                  /* HBM bandwidth, bytes/s */
	double matmul_efficiency;        /* achievable fraction of peak for large GEMMs (η_max) */
	double memory_efficiency;        /* achievable fraction of HBM bandwidth (η_mem) */
	double gemm_half_dim;            /* GEMM dimension at which its shape factor is 1/2
	                                    (docs/cost-models.md); 0 = no shape penalty */
	double kernel_overhead_s;        /* fixed time of every kernel launched; 0 = none */
	double memory_reserve_bytes;     /* HBM the runtime holds (context, workspaces,
	                                    communication buffers, allocator slack); 0 = none */
	double speed_cv;                 /* spread of compute time between devices of this kind:
	                                    standard deviation over mean (stragglers); 0 = none */
	double kernel_efficiency[TOPO_KC_COUNT][2]; /* fraction of hbm_bps a class of
	                                    memory-bound kernels moves its bytes at, forward
	                                    and backward; 0 = memory_efficiency */
};

enum topo_tier_kind {
	TOPO_TIER_MESH,   /* a dedicated link between every pair of a group (HCCS) */
	TOPO_TIER_SWITCH, /* each member has one port into a non-blocking switch (NVSwitch, PCIe) */
	TOPO_TIER_TORUS,  /* a 1-, 2- or 3-D torus of the whole server: a link from each device
	                     to its neighbours, both ways round every dimension (TPU's ICI);
	                     messages go dimension by dimension, the shorter way round */
	TOPO_TIER_KIND_COUNT
};
extern const char *const topo_tier_kind_names[TOPO_TIER_KIND_COUNT];

/* One intra-server tier. Two devices of a server talk over the first tier
 * (innermost first) in which they share a group. */
struct topo_tier {
	const char *name;            /* "hccs", "nvswitch", "pcie" */
	enum topo_tier_kind kind;
	int n_groups;
	int *group_of;               /* [devices_per_server]: group index, or -1 if not in this tier */
	int *group_size;             /* [n_groups] */
	double bandwidth_bps;        /* mesh: per peer link; switch: per device port; one direction;
	                                achievable: the file's line rate x efficiency */
	double efficiency;           /* achievable fraction of the line rate (1 = line rate) */
	double latency_s;            /* one-way device-to-device latency across the tier */
	double shared_bps;           /* aggregate cap on traffic crossing the tier; 0 = none */
	int dims[3];                 /* torus: its extent per dimension (x fastest: device
	                                x + X (y + Y z)), 1 where it has fewer; else 0 */
};

/* The most links a route crosses inside a torus tier (the loader bounds
 * the sum of half the extents by it) and the torus' hop arithmetic: the
 * neighbour of device i one step along dimension k (dir +1 or -1), and
 * the hops between two devices (dimension order, the shorter way). */
#define TOPO_TORUS_MAX_HOPS 12
int topo_torus_step(const struct topo_tier *k, int i, int dim, int dir);
int topo_torus_hops(const struct topo_tier *k, int a, int b);
/* Steps along dimension `dim` from a to b, signed: the shorter way round
 * (a tie goes up). */
int topo_torus_delta(const struct topo_tier *k, int a, int b, int dim);

/* The library that runs the collectives, as a cost model (docs/cost-models.md,
 * "Collective libraries"). TOPO_COLL_NONE: the links' α–β formulas of every
 * algorithm shardlab knows (ring, tree, halving-doubling, hierarchical,
 * direct). TOPO_COLL_NCCL: NCCL's algorithms (rings over the server's NICs,
 * its pipelined tree for all-reduce, direct all-to-all) and protocols (LL,
 * LL128, Simple), priced with the latencies and protocol efficiencies of
 * NCCL's tuning model. TOPO_COLL_HCCL: the links' formulas, as HCCL
 * publishes its algorithms without a tuning model, and its pipelined
 * hierarchical algorithm across servers where `pipeline` is set. */
enum topo_coll_library { TOPO_COLL_NONE, TOPO_COLL_NCCL, TOPO_COLL_HCCL, TOPO_COLL_LIBRARY_COUNT };
extern const char *const topo_coll_library_names[TOPO_COLL_LIBRARY_COUNT];
/* NCCL's hop-latency class of the links inside a server. */
enum topo_link_class { TOPO_LINK_NVLINK, TOPO_LINK_PCI, TOPO_LINK_CLASS_COUNT };
extern const char *const topo_link_class_names[TOPO_LINK_CLASS_COUNT];

struct topo_collectives {
	enum topo_coll_library library;
	enum topo_link_class intra;  /* NCCL: the class of the server's tiers */
	double tree_max_busbw_bps[2];/* NCCL: the tree's bus-bandwidth cap on 2 servers or
	                                fewer, on more; 0 = none */
	double ll_max_busbw_bps[3];  /* NCCL: the LL protocol's bus-bandwidth cap on one
	                                server, on 2, on more; 0 = none */
	bool nvls;                   /* NCCL: the server's switch tier reduces and multicasts
	                                (NVLink SHARP), so NCCL's NVLS algorithms run */
	bool pipeline;               /* HCCL: its pipeline algorithm across servers (Atlas A2):
	                                the servers' ring and the forwarding inside at once */
	/* NCCL: calibrated per-hop latencies (a calibration's "nccl.ALGO.PROTO.HW_us",
	 * docs/formats.md), in place of NCCL's hwLat in the time of that
	 * algorithm and protocol, never in NCCL's choice:
	 * hop_us[hardware: NVLink, PCI, network][algorithm: tree, ring][protocol: LL,
	 * LL128, Simple], us; bit TOPO_NCCL_HOP_BIT(hw, algo, proto) of hop_set
	 * says that entry is set (clear: NCCL's own). */
	double hop_us[3][2][3];
	unsigned hop_set;
};
#define TOPO_NCCL_HOP_BIT(hw, algo, proto) (1u << ((hw) * 6 + (algo) * 3 + (proto)))

struct topo_nic {
	int per_server;              /* device d uses NIC d * per_server / devices_per_server */
	double bandwidth_bps;        /* per NIC, one direction, achievable: line rate x efficiency */
	double efficiency;           /* achievable fraction of the line rate (1 = line rate) */
	double latency_s;            /* per NIC traversal (counted at both ends) */
};

enum topo_fabric_kind {
	TOPO_FABRIC_NONE,            /* a single server */
	TOPO_FABRIC_FAT_TREE,        /* leaf switches under a spine level */
	TOPO_FABRIC_RAIL_OPTIMIZED,  /* NIC k of every server in a rail group shares leaf k */
	TOPO_FABRIC_KIND_COUNT
};
extern const char *const topo_fabric_kind_names[TOPO_FABRIC_KIND_COUNT];

struct topo_fabric {
	enum topo_fabric_kind kind;
	int nics_per_leaf;           /* fat tree: NIC ports under one leaf switch */
	int servers_per_rail_group;  /* rail-optimized: servers whose NIC k share leaf k */
	double oversubscription;     /* leaf down:up bandwidth ratio, >= 1 (1 = non-blocking) */
	double switch_latency_s;     /* per switch traversal */
	int spines;                  /* spine switches each leaf's uplinks spread over evenly;
	                                0 = not stated (a fault cannot name one) */
};

/* Faults and degradations of a cluster (a scenario's "faults",
 * docs/formats.md): what is down or slower than the file says. Rates are
 * fractions of a link's achievable rate (0 = down); slowdowns multiply a
 * device's compute time. Attached to a topology of a fixed server count:
 * servers beyond `servers` (a topology grown later) are nominal. */
struct topo_link_fault {
	int64_t server;
	int tier;
	int a, b;                    /* mesh: the link between local devices a and b (both
	                                directions); switch: device a's port (b = -1) */
	double rate;
};

struct topo_faults {
	int64_t servers;             /* the server count the arrays below cover */
	int n_links;
	struct topo_link_fault *links;
	double *nic_rate;            /* [servers * nic.per_server]: a NIC's rate, its leaf's
	                                folded in; NULL = all nominal */
	double spine_rate;           /* fraction of every leaf's uplinks left (the spines'
	                                rates summed over their count); 1 = all up */
	double *slowdown;            /* [servers * devices_per_server]: compute time factor
	                                of each rank (1 = nominal); NULL = all nominal */
	int n_down_spines;           /* spines down, for what the estimate says */
};

/* The host side of each device (docs/formats.md, `server.host`): the link
 * between the device and its CPU's memory, and the share of the CPUs'
 * memory bandwidth one device's offloaded optimizer step gets. Defaults
 * (TOPO_HOST_LINK_GBPS, TOPO_HOST_MEMORY_GBPS) when the file has none. */
#define TOPO_HOST_LINK_GBPS 31.5    /* PCIe 4.0 x16, one direction ([PCIe4]) */
#define TOPO_HOST_MEMORY_GBPS 51.2  /* DGX A100: 2 x 8 channels of DDR4-3200 (204.8 GB/s a
                                       socket) over 8 GPUs ([DGX-A100], [EPYC-7742]) */
struct topo_host {
	double link_bps;             /* device <-> host memory, one direction, per device */
	double memory_bps;           /* host memory bandwidth per device (its share) */
	double capacity_bytes;       /* the server's host memory, shared by its devices;
	                                0 = not stated (the offload's host memory unchecked) */
	bool given;                  /* the file states them (else the defaults above) */
};

/* The end-to-end figures a training calibration applied (planner/cost/
 * calfile.c, docs/formats.md): already folded into the device's and the
 * links' parameters; kept so that applying a figure again (or nudging it
 * for a prediction interval) replaces it rather than compounding it. 0 =
 * none applied (a ratio of 1, no overhead). */
struct topo_train {
	double gemm_efficiency;      /* GEMM rate under training load / the device's */
	double comm_efficiency;      /* links' bandwidth under training load / the topology's */
	double op_overhead_s;        /* framework time per op per pass, in kernel_overhead_s */
	double nic_efficiency;       /* NICs' bandwidth under training load / the rest's */
	double moe_overhead_s;       /* framework time per mixture-of-experts layer per pass,
	                                beyond its kernels (on its MoEDispatch op) */
};

struct calibration;  /* planner/cost's: this module only holds a pointer to it */

struct topology {
	const char *name;
	const char *description;     /* NULL when the file has none */
	const char *source;          /* citation of the figures */
	const char *file;            /* the file it was loaded from */
	const char *calibration_file; /* the calibration the file names ("calibration",
	                                 from the file's folder; a cluster takes its
	                                 base's unless it names one), applied by
	                                 default in place of the device's shipped one;
	                                 "none": the bare model; NULL: not named */
	struct topo_device device;
	int devices_per_server;
	int n_tiers;
	struct topo_tier tiers[TOPO_MAX_TIERS];
	struct topo_nic nic;
	struct topo_collectives coll;
	struct topo_host host;
	int servers;                 /* 1 for a single server */
	struct topo_fabric fabric;
	int64_t n_devices;           /* servers * devices_per_server */
	struct topo_train train;     /* figures a calibration applied; zero: none */
	const struct calibration *calibration; /* the one applied last (cost_calibration_apply),
	                                          whose fits give predictions their interval;
	                                          NULL: uncalibrated */
	const struct topo_faults *faults; /* NULL: the cluster as its file says */
};

/* Load and validate a topology file. Returns NULL after adding diagnostics.
 * A cluster file may name its server file with "base" (relative to the
 * file's folder). Everything is allocated in `a`. */
struct topology *topo_load(struct arena *a, const char *path, struct diag_list *diags);
/* The same from an already parsed document whose "format" is TOPO_FORMAT. */
struct topology *topo_load_doc(struct arena *a, struct json_doc *doc);

/* Whether the cluster of `t` can have `servers` servers on its fabric:
 * more than one needs a cluster file (a single-server file has no fabric),
 * a rail-optimized fabric takes whole rail groups (or less than one), and
 * the ranks stay below 2^31. False with the reason in why[size]. */
bool topo_servers_ok(const struct topology *t, int64_t servers, char *why, size_t size);
/* A copy of `t` with `servers` servers on the same fabric (topo_servers_ok
 * holds), allocated in `a`; NULL when out of memory. */
struct topology *topo_with_servers(struct arena *a, const struct topology *t, int64_t servers);
/* The topology that runs `devices` ranks: `t` itself when it has that many,
 * else `t` grown by whole servers on its fabric (a multiple of its devices
 * per server that topo_servers_ok allows). NULL with the reason in
 * why[size] (or "out of memory"). */
struct topology *topo_for_devices(struct arena *a, struct topology *t, int64_t devices,
                                  char *why, size_t size);

/* ------------------------------------------------------------- queries */

#define TOPO_NETWORK (-1)   /* topo_tier_between: the ranks talk over the NICs */
#define TOPO_SELF (-2)      /* the same rank */

/* Has the device's compute model been fitted to kernel timings (a GEMM
 * shape factor or a per-kernel overhead)? Without, every GEMM runs at the
 * asymptotic rate and a kernel costs nothing to launch: estimates are
 * optimistic (docs/cost-models.md, "Calibration status"). */
bool topo_compute_calibrated(const struct topo_device *d);

/* Index of the intra-server tier two ranks use, TOPO_NETWORK or TOPO_SELF. */
int topo_tier_between(const struct topology *t, int64_t a, int64_t b);
/* The innermost tier holding all n ranks (n >= 2) in one of its groups;
 * TOPO_NETWORK when they span servers or no tier holds them together. */
int topo_group_tier(const struct topology *t, const int64_t *ranks, int n);
/* Whether that tier is a mesh: a link of its own between every pair. */
bool topo_group_in_mesh(const struct topology *t, const int64_t *ranks, int n);
/* Whether n ranks (n >= 1) come in whole-server blocks: consecutive runs of
 * the same length, each on one server, each on another server than the
 * run before it. The run length into *per_server. */
bool topo_server_blocks(const struct topology *t, const int64_t *ranks, int n, int *per_server);

#define TOPO_MAX_HOPS 12

struct topo_hop {
	char what[48];               /* "hccs link 0-1", "nic 3 of server 0", "leaf 2", "spine" */
	double bandwidth_bps;
	double latency_s;
};

struct topo_path {
	int n_hops;
	struct topo_hop hops[TOPO_MAX_HOPS];
	int tier;                    /* as topo_tier_between */
	double bottleneck_bps;       /* least bandwidth along the path */
	double latency_s;            /* sum of the hops' latencies */
};

/* Path between two ranks; false if a rank is out of range. */
bool topo_path_between(const struct topology *t, int64_t a, int64_t b, struct topo_path *out);
/* The same path's bottleneck and latency alone, without naming the hops
 * (for cost models that ask per rank pair). */
bool topo_route(const struct topology *t, int64_t a, int64_t b, double *bottleneck_bps,
                double *latency_s);

/* Per-device bandwidth a tier offers (mesh: all its links together; switch:
 * its port), and the per-device NIC bandwidth, one direction. */
double topo_tier_device_bps(const struct topology *t, int tier);
double topo_nic_device_bps(const struct topology *t);

/* ------------------------------------------------------------- faults */

/* A NIC's, a link's and a rank's state under t->faults (all nominal
 * without): the rate of local NIC k of server s (0 = down, its leaf
 * included); the rate of tier k's link between local devices a and b of
 * server s (a switch tier: the slower of their ports); the factor of
 * rank r's compute time; the rate left on the leaves' uplinks. */
double topo_nic_rate(const struct topology *t, int64_t s, int k);
double topo_link_rate(const struct topology *t, int64_t s, int k, int a, int b);
double topo_rank_slowdown(const struct topology *t, int64_t r);
double topo_spine_rate(const struct topology *t);
/* The NIC local device `local` of server s sends through: its own, or,
 * when that one is down, the next one of the server that is up (the
 * traffic fails over); -1 when every NIC of the server is down. */
int topo_nic_of(const struct topology *t, int64_t s, int local);
/* The largest compute factor among ranks [0, n). */
double topo_max_slowdown(const struct topology *t, int64_t n);
/* Whether ranks [0, n) can all reach each other under t->faults. When
 * not, why[size] names which ranks lost which and what cut them off. */
bool topo_faults_connected(const struct topology *t, int64_t n, char *why, size_t size);

/* The leaf switch of local NIC k of server s (a fabric's leaves are
 * numbered 0 .. topo_fabric_leaves - 1). */
int64_t topo_leaf_switch(const struct topology *t, int64_t s, int k);

/* Leaf switches of the fabric (0 for a single server). */
int64_t topo_fabric_leaves(const struct topology *t);

/* Bandwidth across the cut between ranks [0, n/2) and [n/2, n), one
 * direction: the worst balanced cut for these regular topologies. */
double topo_bisection_bps(const struct topology *t);

#endif
