/* score.c — predictions scored against the measurements: the mean
 * absolute percentage error (MAPE) of the estimates (or formulas) and of
 * the simulations, of the memory where a source measured it, and the
 * counts of failed and out-of-memory predictions, and the coverage of the
 * calibrated 90% intervals (docs/validation.md).
 *
 * Units: percent. Linear in the rows; the sums run in row order, so the
 * same rows always give the same bits.
 */
#include <math.h>

#include "validation.h"

/* A MAPE accumulated in order: validation_mape's sum, without the array. */
struct acc {
	double sum;
	int n;
};

static void acc_add(struct acc *m, double err_pct)
{
	m->sum += fabs(err_pct);
	m->n++;
}

static double acc_pct(const struct acc *m)
{
	return m->n > 0 ? m->sum / m->n : NAN;
}

struct validation_score validation_score_training(const struct validation_training_result *r,
                                                  int n)
{
	struct acc est = {0}, sim = {0}, mem = {0};
	struct validation_score s = {0};
	for (int i = 0; i < n; i++) {
		if (r[i].error) {
			s.failed++;
			continue;
		}
		s.oom += r[i].oom;
		s.oom_host += r[i].host_oom;
		s.oom_rows += r[i].oom || r[i].host_oom;
		s.host_rows += r[i].host_bytes > 0;
		acc_add(&est, r[i].est_err);
		s.estimate_iv_n += r[i].est_iv.have;
		s.estimate_covered += r[i].est_iv.have && r[i].est_covered;
		s.estimate_outside_n += r[i].est_iv.have && r[i].est_iv.n_outside > 0;
		s.estimate_outside_covered +=
		        r[i].est_iv.have && r[i].est_iv.n_outside > 0 && r[i].est_covered;
		s.simulation_iv_n += r[i].simulated && r[i].sim_iv.have;
		s.simulation_covered += r[i].simulated && r[i].sim_iv.have && r[i].sim_covered;
		if (r[i].simulated)
			acc_add(&sim, r[i].sim_err);
		if (r[i].row->memory_bytes > 0)
			acc_add(&mem, validation_error_pct(r[i].memory_bytes, r[i].row->memory_bytes));
	}
	s.estimate_pct = acc_pct(&est);
	s.estimate_n = est.n;
	s.simulation_pct = acc_pct(&sim);
	s.simulation_n = sim.n;
	s.memory_pct = acc_pct(&mem);
	s.memory_n = mem.n;
	return s;
}

struct validation_score validation_score_collectives(const struct validation_collective_result *r,
                                                     int n)
{
	struct acc est = {0}, sim = {0};
	for (int i = 0; i < n; i++)
		for (int k = 0; k < r[i].row->n_points; k++) {
			const struct validation_point_result *p = &r[i].points[k];
			acc_add(&est, p->formula_err);
			if (p->simulated)
				acc_add(&sim, p->sim_err);
		}
	return (struct validation_score){.estimate_pct = acc_pct(&est), .estimate_n = est.n,
	                                 .simulation_pct = acc_pct(&sim), .simulation_n = sim.n,
	                                 .memory_pct = NAN};
}
