/* cost-int.h — details shared by the cost model's files, not part of its
 * public interface. */
#ifndef SHARDLAB_COST_INT_H
#define SHARDLAB_COST_INT_H

#include <gsl/gsl_multifit_nlinear.h>

#include "cost.h"

/* GSL's trust-region Levenberg-Marquardt on fdf from x (the solution back
 * in x, at most 500 iterations; running out of them, or a step that cannot
 * improve, keeps the best point): the sum of squared residuals in *cost,
 * the iterations in *iterations and the unscaled covariance (J^T J)^-1 in
 * covar, each when not NULL. False when GSL fails. The calibration fits
 * (calibrate.c, calcoll.c) share it. */
bool cost_lm_solve(gsl_multifit_nlinear_fdf *fdf, gsl_vector *x, gsl_matrix *covar,
                   double *cost, int *iterations);
/* A measured table's text (malloc'd, NUL-ended), or NULL after a
 * diagnostic "cannot read the table: WHY". */
char *cost_read_table(const char *path, size_t *len, struct diag_list *diags);

/* The compute model with its parameters resolved for one device and
 * dtype (cost_compute_s; the calibration fits these): the asymptotic GEMM
 * rate peak · η_max, the half-dimension, the sustained memory bandwidth
 * hbm · η_mem and the per-kernel overhead. */
struct cost_kernel_model {
	double gemm_flops;     /* FLOP/s */
	double half_dim;       /* elements; 0: no shape factor */
	double memory_bps;     /* bytes/s; INFINITY: no memory floor */
	double overhead_s;
};
/* g(x) = x / (x + half_dim), 1 when half_dim is 0. */
static inline double cost_shape_factor(double x, double half_dim)
{
	return half_dim > 0 ? x / (x + half_dim) : 1;
}
/* The model's seconds for work w (cost.h, cost_compute_s). */
double cost_kernel_s(const struct cost_kernel_model *p, const struct cost_work *w);
/* The device's peak for dtype dt; a dtype without one takes the fastest
 * floating peak and sets *fallback (if not NULL). */
double cost_device_peak(const struct topo_device *d, enum dtype dt, bool *fallback);

/* A collective's time as a line in its message S: fixed_s + per_byte_s x S
 * (every formula of collectives.c is linear in S). */
struct cost_line {
	double fixed_s, per_byte_s;
};
struct cost_line cost_collective_line(const struct topology *t, enum step_kind kind,
                                      const int64_t *ranks, int n);
/* The distinct lines of a step's groups (groups of one shape share one),
 * at most max; -1 when there are more. */
int cost_groups_lines(const struct topology *t, enum step_kind kind, const struct rank_groups *g,
                      struct cost_line *lines, int max);
/* The slowest of those lines at S bytes. */
double cost_lines_max(const struct cost_line *lines, int n, double bytes);

/* Every algorithm's line for one group (cost.h, cost_choose_algo):
 * line[algo] for each algorithm but COLL_AUTO, `applicable` a bit per
 * algorithm that applies to this kind and group (the ring always); an
 * algorithm that does not apply carries the ring's line. cost_collective_s
 * is line[COLL_HIERARCHICAL] where that applies, else line[COLL_RING].
 *
 * line[] is physical: the α–β time of the transfers the simulator runs.
 * A collective library (topologies.h, TOPO_COLL_NCCL) prices an algorithm
 * by its protocols instead: protos[algo] has a bit per protocol it may
 * use, proto[algo][p] their lines (library latency and protocol
 * efficiency included), and the algorithm takes the least of them at S
 * bytes, NCCL's size-dependent corrections applied (cost_algo_time). */
enum cost_proto { COST_PROTO_LL, COST_PROTO_LL128, COST_PROTO_SIMPLE, COST_PROTO_COUNT };
extern const char *const cost_proto_names[COST_PROTO_COUNT];

struct cost_algo_lines {
	unsigned applicable;
	struct cost_line line[COLL_COUNT];
	unsigned char protos[COLL_COUNT];  /* 0: the physical line alone */
	struct cost_line proto[COLL_COUNT][COST_PROTO_COUNT];
	double cal_s[COLL_COUNT][COST_PROTO_COUNT]; /* a calibrated hop latency's change to
	                                      proto[][]'s latency (0: none); NCCL's choice
	                                      reads proto[][] alone (cost_algo_time) */
	double plateau_bytes;              /* NCCL ring Simple all-reduce across servers: latency
	                                      x1.9 from this size on (0: never) */
};
/* Algorithm a's time at S bytes: its physical line, or its protocols'
 * least by NCCL's own latencies (that protocol into *proto if not NULL; -1
 * for none), timed with the calibrated latency where one is set. */
double cost_algo_time(const struct cost_algo_lines *l, enum collective_algo a, double bytes,
                      int *proto);
/* NCCL's hop latency hwLat[hw][algo][proto] as the topology's time reads
 * it (topo_collectives.hop_us where set), us. */
double cost_nccl_hop_us(const struct topology *t, int hw, int algo, int proto);
/* A parameter's value in the topology, in the figure's units (cost_cal_set's
 * inverse) for the figures a collective fit sets: tier and NIC latencies
 * and efficiencies, NCCL's hop latencies; NAN for the others. */
double cost_cal_get(const struct topology *t, enum cal_param p, const char *tier);
void cost_algo_lines_of(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                        int n, struct cost_algo_lines *out);
/* The same for a group of a step whose groups put `crossing` ranks on each
 * server they span (cost_groups_crossing; 0: the group alone): the NICs
 * are shared among the step's groups that cross them at once. */
void cost_algo_lines_in(const struct topology *t, enum step_kind kind, const int64_t *ranks,
                        int n, int crossing, struct cost_algo_lines *out);
/* The rule at S bytes: `wanted` where it applies, else the least time
 * among the applicable algorithms (ties: ring, hierarchical,
 * halving-doubling, tree, direct); its time into *seconds if not NULL. */
enum collective_algo cost_algo_pick(const struct cost_algo_lines *l, double bytes,
                                    enum collective_algo wanted, double *seconds);
/* The distinct algorithm lines of a step's groups, at most max; -1 when
 * there are more. */
int cost_groups_algo_lines(const struct topology *t, enum step_kind kind,
                           const struct rank_groups *g, struct cost_algo_lines *lines, int max);
/* The slowest group at S bytes, each group timed by the rule's choice. */
double cost_algo_lines_max(const struct cost_algo_lines *lines, int n, double bytes,
                           enum collective_algo wanted);
/* The same from the groups (cost_groups_s with the rule). */
double cost_groups_algo_s(const struct topology *t, enum step_kind kind,
                          const struct rank_groups *g, double bytes, enum collective_algo wanted);

/* Time of a point-to-point message between two ranks: latency + S /
 * the bottleneck of their path. */
double cost_p2p_s(const struct topology *t, int64_t src, int64_t dst, double bytes);

/* Whether op `op` runs in FP8 under recipe r: a MatMul with a weight inside
 * a transformer layer (the ops named "layers.N.", as the generators name
 * them). Megatron-LM builds those Linears from Transformer Engine; its
 * embedding, output layer and a mixture of experts' router (op.moe_router)
 * stay bf16. The input that is not the weight
 * into *x (-1 when it does not). */
bool cost_fp8_linear(const struct graph *g, enum precision_recipe r, int op, int *x);
/* A norm the plan runs on a gathered input (a sequence-parallel plan
 * gathers before a norm that feeds several column-parallel MatMuls):
 * the fraction of it that Megatron-LM runs on the sequence shard before
 * the gather; 1 for any other op (memory.c). */
double cost_act_norm_fraction(const struct cost_act_scratch *x, int op);

#endif
