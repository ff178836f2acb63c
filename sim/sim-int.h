/* sim-int.h — the simulator's private pieces.
 *
 * - net (platform.c): the links of the platform and the route of every
 *   ordered rank pair the program sends on, mirroring topo_path_between's
 *   hops so that an uncontended transfer takes latency + bytes/bandwidth
 *   with the cost model's numbers; the SimGrid XML written from them.
 * - collectives (collectives.c): a collective of one rank as a short list
 *   of operations (send, receive, wait, sleep) per algorithm and fidelity.
 *   The engine runs the list; the setup runs it dry to find the pairs.
 * - run.c: the SimGrid engine in the child process; sim.c: the fork, the
 *   pipe and the result.
 *
 * Nothing here is exported beyond sim/. Units: bytes, bytes/s, seconds.
 */
#ifndef SHARDLAB_SIM_INT_H
#define SHARDLAB_SIM_INT_H

#include <stdio.h>

#include "sim.h"

/* ---------------------------------------------------------------- links */

#define SIM_ROUTE_MAX TOPO_TORUS_MAX_HOPS /* a torus tier's longest route (a NIC route has
                                              4 links, a switch's 3) */

struct sim_route {
	int n;
	int32_t link[SIM_ROUTE_MAX];     /* compact link indices */
};

struct sim_net {
	const struct topology *t;
	int64_t base, n_ranks;             /* the program's ranks: hosts r<base>.. */
	int64_t server0, n_servers;        /* servers the ranks live on */
	int64_t per_server_ids;            /* link ids one server owns */
	int32_t *compact;                  /* link id -> compact index, -1 unused */
	int n_links, cap_links;
	int64_t *link_id;                  /* compact index -> link id */
	/* ordered pairs (host indices) that carry messages, with their routes */
	int n_pairs, cap_pairs;
	int32_t *pair_src, *pair_dst;
	struct sim_route *route;
	int64_t *hash_key;                 /* open addressing: src * n_ranks + dst, -1 empty */
	int32_t *hash_val;
	int64_t hash_cap;
	/* Jobs together (sim_options.leaf_uplinks): a route across the spine
	 * crosses its leaf's uplinks as one pool shared by every NIC under the
	 * leaf ("leaf-2-up", "leaf-5-down": NICs x NIC rate / oversubscription,
	 * a switch latency each) instead of each NIC's fixed share of them. */
	bool leaf_uplinks;
	int64_t n_leaves;                  /* leaves numbered from 0; ids after the servers' */
	/* When set (fidelity representative), the platform holds only these
	 * pairs' routes, these hosts and the links of those routes. */
	uint8_t *pair_used;                /* [pair] */
	uint8_t *host_used;                /* [host - base] */
};

bool sim_net_init(struct sim_net *net, const struct topology *t, int64_t base, int64_t n_ranks);
/* The same with the leaves' uplinks pooled (struct sim_net.leaf_uplinks). */
bool sim_net_init_pooled(struct sim_net *net, const struct topology *t, int64_t base,
                         int64_t n_ranks);
void sim_net_free(struct sim_net *net);
/* Whether a link is a leaf's pooled uplinks: its share of each user
 * depends on the traffic under the whole leaf, which no formula prices. */
static inline bool sim_net_pooled(const struct sim_net *net, int link)
{
	return net->link_id[link] >= net->per_server_ids * net->n_servers;
}
/* The pair index of (src, dst) (ranks), adding it and its route when new;
 * -1 when out of memory. */
int sim_net_pair_add(struct sim_net *net, int64_t src, int64_t dst);
/* The pair index, -1 when the setup never saw it. Hot path: integer hash. */
int sim_net_pair(const struct sim_net *net, int64_t src, int64_t dst);
/* The link's name, bandwidth and latency. */
void sim_net_link_info(const struct sim_net *net, int link, char *name, size_t name_len,
                       double *bps, double *latency_s);
/* The platform XML (DTD 4.1): hosts, used links, a route per pair. */
bool sim_net_write_xml(const struct sim_net *net, FILE *f);

/* ---------------------------------------------------------- collectives */

enum sim_op_kind { SIM_OP_SEND, SIM_OP_RECV, SIM_OP_WAIT, SIM_OP_SLEEP };

struct sim_op {
	enum sim_op_kind kind;
	int64_t peer;                      /* rank */
	double amount;                     /* bytes (send) or seconds (sleep) */
};

struct sim_ops {
	int n, cap;
	struct sim_op *op;                 /* malloc'd, grown per collective, never per message */
	int64_t *members;                  /* scratch: the group's ranks */
	int64_t *scratch;                  /* scratch: a sub-group */
	int members_cap;
	bool oom;
	/* The library pricing of the last group asked (cost_collective_wire):
	 * the members of one group ask one after another. */
	struct sim_wire_memo {
		bool valid;
		int kind, algo, n;
		int64_t first, last;
		double bytes, wire, extra_s;
	} wire_memo;
	/* Whether the last group asked sits in whole-server blocks, of how
	 * many members (topo_server_blocks; collectives.c, rails). */
	struct sim_blocks_memo {
		bool valid, blocks;
		const struct topology *t;
		int n, c;
		int64_t first, last;
	} blocks_memo;
	/* The latencies hd_one_link last summed, and the ranks they were for
	 * (the member, then its partners at n/4, n/8, ..., 1): a rank
	 * synchronises bucket after bucket in one group. */
	struct sim_hd_memo {
		const struct topology *t;
		int n_key;
		int64_t key[32];
		double lat;
	} hd_memo;
};

/* The algorithm a group's collective really runs: the requested one, or
 * ring where it does not apply (halving-doubling on a group that is not a
 * power of two, tree for other than AllReduce, hierarchical inside one
 * server or on uneven servers, direct for other than AllToAll). */
enum collective_algo sim_algo_effective(const struct topology *t, enum step_kind kind,
                                        enum collective_algo algo, const int64_t *ranks, int n);
/* Halving-doubling at fidelity coarse or phase where every step of every
 * member crosses routes of one bandwidth (sim_hd_one_link): each pass is
 * one exchange of its steps' bytes, (n-1)/n·S, with the member at
 * distance n/2, then a sleep of the other steps' latencies. The same time
 * uncontended, and the same bytes on every device's ports and NICs; the
 * fabric links between see them on the partner's route. Never a
 * collective_algo of the planner: only the simulator's setup picks it and
 * reports it as halving-doubling. */
#define SIM_HD_ONE_LINK ((enum collective_algo)COLL_COUNT)
bool sim_hd_one_link(const struct topology *t, const int64_t *ranks, int n);
/* A MoE dispatch or combine under training.moe_dispatcher "hybridep" or
 * "deepep" (prog_step.ep, cost_ep_hybrid_s): every member sends at once its share
 * for each other server to the member of its local index there and S/c to
 * each other member of its own server (the forwarded copies: the two legs
 * pipelined, as the cost prices them). Only the simulator's setup picks
 * it, for an AllToAll whose group spans servers in whole blocks, and
 * reports it as direct. */
#define SIM_EP_HYBRID ((enum collective_algo)(COLL_COUNT + 1))

/* The operations of member `me` of a group (ranks[0..n)) for collective
 * step st (its kind, S of the formulas, its MoE route) with an effective
 * algorithm (or SIM_HD_ONE_LINK, SIM_EP_HYBRID). */
void sim_coll_ops(struct sim_ops *ops, const struct topology *t, const struct prog_step *st,
                  enum collective_algo algo, enum sim_fidelity fid, const int64_t *ranks, int n,
                  int me);
/* Grows the scratch arrays to hold n ranks. */
bool sim_ops_reserve(struct sim_ops *ops, int n);
void sim_ops_free(struct sim_ops *ops);

/* --------------------------------------------------------------- engine */

/* Runs the jobs' simulation in this process (the child) and writes the
 * results to fd: each job's, then the links they shared. Returns the exit
 * status for the child. */
int sim_child_run_jobs(const struct topology *t, const struct sim_job *jobs, int n_jobs,
                       const struct sim_options *o, int fd);

/* Fidelity representative: each rank's representative in rep_of
 * (p->n_ranks entries; a rank that runs stands for itself). False when
 * out of memory or a group's member is outside the program. */
bool sim_representatives(const struct program *p, int64_t *rep_of, struct sim_ops *ops);

#endif
