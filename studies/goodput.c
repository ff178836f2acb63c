/* goodput.c — how long a training run really takes on a cluster that
 * fails: interruptions, restarts, the work lost since the last
 * checkpoint and the checkpoints themselves (docs/studies.md, "Goodput").
 *
 * Failures arrive as a Poisson process at the job's rate, `devices` times
 * the per-device-hour rate, so the job's mean time between failures is
 * M = 3600 / (rate x devices) seconds. With a checkpoint every tau seconds
 * of training that stops the job for delta seconds, and R seconds to come
 * back after a failure (relaunch, then the last checkpoint read from
 * storage), Daly's model (J. T. Daly, "A higher order estimate of the
 * optimum checkpoint interval for restart dumps", Future Generation
 * Computer Systems 22(3), 2006, eq. 11) gives the expected wall time of
 * T_s seconds of training:
 *
 *   T_w = M e^{R/M} (e^{(tau + delta)/M} - 1) T_s / tau
 *
 * and its optimum interval (eq. 37), for delta < 2M,
 *
 *   tau = sqrt(2 delta M) [1 + (1/3) sqrt(delta / 2M) + (1/9) (delta / 2M)] - delta,
 *
 * M otherwise: Young's sqrt(2 delta M) (CACM 17(9), 1974) with Daly's
 * higher-order terms. Goodput = T_s / T_w; expected interruptions T_w / M.
 * An asynchronous checkpoint stops the job only for the copy of each
 * device's state to host memory; its write to storage runs behind, so the
 * interval is at least the write.
 *
 * Units: seconds, bytes, bytes/s, failures per device-hour. No hot path:
 * once per stored row.
 */
#include <math.h>

#include "studies.h"

/* Llama 3's pre-training on 16,384 H100s: 419 unexpected interruptions
 * in a 54-day window (Dubey et al., "The Llama 3 Herd of Models", 2024,
 * section 3.3.4, table 5). */
const double study_default_failures_per_device_hour = 419.0 / (54.0 * 24.0 * 16384.0);

void study_goodput_defaults(struct study_goodput *g)
{
	*g = (struct study_goodput){
		.on = true,
		.failures_per_device_hour = study_default_failures_per_device_hour,
		/* checkpoint-based restarts of a 1,024-GPU job: minutes (TrainMover,
		 * Lao et al., arXiv 2412.12636: ~70x its ~10 s downtime) */
		.relaunch_s = 600,
		/* Meta's Tectonic for Llama 3: 2 TB/s sustained (Dubey et al. 2024,
		 * section 3.3.1) */
		.storage_write_bps = 2e12,
		.storage_read_bps = 2e12,
		/* PCIe 4.0 x16, one direction (PCI-SIG): an asynchronous snapshot */
		.host_copy_bps = 32e9,
	};
}

double study_goodput_wall_s(double solve_s, double mtbf_s, double restart_s, double interval_s,
                            double checkpoint_s)
{
	if (!(solve_s > 0))
		return 0;
	if (!isfinite(mtbf_s)) /* no failures: the checkpoints alone */
		return interval_s > 0 ? solve_s * (1 + checkpoint_s / interval_s) : solve_s;
	if (!(interval_s > 0)) /* free checkpoints taken continuously: the limit tau -> 0 */
		return solve_s * exp(restart_s / mtbf_s);
	return mtbf_s * exp(restart_s / mtbf_s) * expm1((interval_s + checkpoint_s) / mtbf_s) *
	       solve_s / interval_s;
}

double study_goodput_daly_interval_s(double checkpoint_s, double mtbf_s)
{
	if (!isfinite(mtbf_s))
		return INFINITY;
	if (checkpoint_s >= 2 * mtbf_s)
		return mtbf_s;
	double x = checkpoint_s / (2 * mtbf_s);
	return sqrt(2 * checkpoint_s * mtbf_s) * (1 + sqrt(x) / 3 + x / 9) - checkpoint_s;
}

void study_goodput_eval(const struct study_goodput *g, double devices, double state_bytes,
                        double state_bytes_per_device, double solve_s, struct study_goodput_out *o)
{
	*o = (struct study_goodput_out){.goodput = 1, .wall_s = solve_s, .mtbf_s = INFINITY,
	                                .interval_s = solve_s};
	if (!g->on || !(solve_s > 0))
		return;
	double rate = g->failures_per_device_hour * devices / 3600;
	o->mtbf_s = rate > 0 ? 1 / rate : INFINITY;
	o->write_s = state_bytes / g->storage_write_bps;
	o->checkpoint_s = g->async ? state_bytes_per_device / g->host_copy_bps : o->write_s;
	o->restart_s = g->relaunch_s + state_bytes / g->storage_read_bps;
	double tau = g->interval_s > 0 ? g->interval_s
	                               : study_goodput_daly_interval_s(o->checkpoint_s, o->mtbf_s);
	if (g->async && tau < o->write_s)
		tau = o->write_s;
	/* A run shorter than the interval checkpoints once, at its end. */
	if (tau > solve_s)
		tau = solve_s;
	o->interval_s = tau;
	o->wall_s = study_goodput_wall_s(solve_s, o->mtbf_s, o->restart_s, tau, o->checkpoint_s);
	o->goodput = solve_s / o->wall_s;
	o->interruptions = isfinite(o->mtbf_s) ? o->wall_s / o->mtbf_s : 0;
}
