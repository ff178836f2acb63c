/* run.c — the validation rows predicted: a training row planned, estimated
 * in closed form and simulated; a collective's message sizes priced by
 * their formula and simulated alone (docs/validation.md).
 *
 * Nothing here prints: the caller shows progress through the options'
 * callbacks and prints the results. A failure is a row's result (its
 * first diagnostic's message), not the run's: every row is predicted.
 *
 * Units: seconds, bytes, bytes/s. The simulations dominate the time.
 */
#include <stdio.h>
#include <string.h>

#include "validation.h"

/* The message of the list's first error (without file and line: the rows
 * name where it came from), in the arena. */
static const char *first_error(struct arena *a, const struct diag_list *d)
{
	for (size_t i = 0; i < d->count; i++)
		if (d->items[i].severity == DIAG_ERROR)
			return arena_strdup(a, d->items[i].msg);
	return d->oom ? "out of memory" : "failed without a diagnostic";
}

/* ---------------------------------------------------------- training */

/* An interval in seconds as the row's unit: a rate's ends swap. */
static void in_unit(const struct validation_training_row *row, const struct cal_interval *iv,
                    double *lo, double *hi, bool *covered)
{
	double a = validation_predicted(row, iv->lo_s), b = validation_predicted(row, iv->hi_s);
	*lo = a < b ? a : b;
	*hi = a < b ? b : a;
	*covered = row->value >= *lo && row->value <= *hi;
}

void validation_run_training(struct arena *a, const struct validation_training_row *row,
                             const struct validation_run_options *o,
                             struct validation_training_result *out)
{
	*out = (struct validation_training_result){
		.row = row, .hbm_bytes = row->scenario->topo->device.hbm_bytes};
	struct diag_list d;
	diag_list_init(&d);
	struct plan_options po = {.mode = REDIST_COMPAT, .progress = o->plan_progress,
	                          .progress_ctx = o->plan_progress_ctx};
	struct plan *p = row->tensor_parallel > 0 ?
		plan_megatron_degree(a, row->scenario, &po, row->tensor_parallel, &d) :
		plan_make(a, row->scenario, row->planner, &po, &d);
	struct estimate *est = p ? arena_calloc(a, 1, sizeof *est) : NULL;
	out->plan = p;
	if (!est || !plan_estimate(a, p, est, &d)) {
		out->error = first_error(a, &d);
		diag_list_free(&d);
		return;
	}
	out->est_s = est->iteration_s;
	out->est_value = validation_predicted(row, out->est_s);
	out->est_err = validation_error_pct(out->est_value, row->value);
	out->memory_bytes = est->memory_bytes_per_device;
	struct cost_verdict v;  /* OOM: the band is over the memory, "does not fit" */
	cost_memory_verdict(est->memory_bytes_per_device, est->hbm_bytes, &v);
	out->oom = v.fit == FIT_NO;
	out->host_bytes = est->host_bytes_per_server;
	out->host_capacity_bytes = est->host_capacity_bytes;
	if (out->host_bytes > 0 && out->host_capacity_bytes > 0) {
		cost_memory_verdict(out->host_bytes, out->host_capacity_bytes, &v);
		out->host_oom = v.fit == FIT_NO;
	}
	if (!cost_calibration_interval(a, p->scenario->topo->calibration, p, &out->est_iv))
		out->est_iv = (struct cal_interval){.why = "out of memory: no interval"};
	out->sim_iv = out->est_iv;
	if (out->est_iv.have)
		in_unit(row, &out->est_iv, &out->est_lo, &out->est_hi, &out->est_covered);
	if (!o->estimate_only) {
		const struct scenario *s = p->scenario;
		struct sim_options so = {.fidelity = s->sim.fidelity, .algo = s->sim.collective_algo,
		                         .progress = o->sim_progress,
		                         .progress_ctx = o->sim_progress_ctx};
		struct sim_plan_outcome *r = arena_calloc(a, 1, sizeof *r);
		if (r && sim_plan(a, p, s->training.gradient_bucket_bytes, 0, &so, r, &d)) {
			out->simulated = true;
			out->sim_s = r->sim.iteration_s;
			out->sim_value = validation_predicted(row, out->sim_s);
			out->sim_err = validation_error_pct(out->sim_value, row->value);
			cost_interval_at(&out->est_iv, out->sim_s, &out->sim_iv);
			if (out->sim_iv.have)
				in_unit(row, &out->sim_iv, &out->sim_lo, &out->sim_hi, &out->sim_covered);
		} else {
			out->sim_error = r ? first_error(a, &d) : "out of memory";
		}
	}
	diag_list_free(&d);
}

/* ------------------------------------------------------- collectives */

/* One collective over ranks 0 .. n-1 as a one-step program. */
static struct program lone_program(struct arena *a, enum step_kind kind, int64_t n, double bytes)
{
	struct prog_step *st = arena_calloc(a, 1, sizeof *st);
	struct prog_chunk *c = arena_calloc(a, 1, sizeof *c);
	struct prog_stage *sg = arena_calloc(a, 1, sizeof *sg);
	struct prog_slot *sl = arena_calloc(a, 1, sizeof *sl);
	if (!st || !c || !sg || !sl)
		return (struct program){0};
	struct devmat dm;
	int axis = 0;
	*st = (struct prog_step){.kind = PROG_COLLECTIVE, .phase = PHASE_FORWARD, .op = -1,
	                         .label = step_kind_names[kind], .coll = kind, .bytes = bytes,
	                         .after = -1};
	if (!devmat_init(&dm, 1, &n, NULL, 0) || !devmat_groups(&dm, &axis, 1, &st->groups))
		return (struct program){0};
	*c = (struct prog_chunk){.stage = 0, .fwd = 0, .n_fwd = 1, .bwd = 1, .n_bwd = 0};
	*sl = (struct prog_slot){.chunk = 0, .micro = 0, .backward = false, .last = true};
	*sg = (struct prog_stage){.n_slots = 1, .slots = sl, .tail = 1, .n_tail = 0};
	return (struct program){.n_ranks = n, .stage_ranks = n, .n_stages = 1, .n_chunks = 1,
	                        .micro_batches = 1, .chunks = c, .stages = sg, .n_steps = 1,
	                        .steps = st};
}

static void run_point(struct arena *a, const struct validation_collective_row *row,
                      const int64_t *ranks, const struct validation_point *pt,
                      const struct validation_run_options *o, struct validation_point_result *out)
{
	*out = (struct validation_point_result){.pt = pt};
	int n = (int)row->devices;
	double f = validation_bus_factor(row->collective, row->devices);
	out->algo = cost_choose_algo(row->topo, row->collective, ranks, n, pt->bytes, row->algo);
	out->formula_s = cost_collective_algo_s(row->topo, row->collective, out->algo, ranks, n,
	                                        pt->bytes);
	out->protocol = cost_collective_protocol(row->topo, row->collective, out->algo, ranks, n,
	                                         pt->bytes);
	out->formula_busbw_bps = out->formula_s > 0 ? pt->bytes / out->formula_s * f : 0;
	out->formula_err = validation_error_pct(out->formula_busbw_bps, pt->busbw_bps);
	if (o->estimate_only)
		return;
	struct arena *sa = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct program p = sa ? lone_program(sa, row->collective, row->devices, pt->bytes)
	                      : (struct program){0};
	struct sim_options so = {
		.fidelity = row->devices > VALIDATION_STEP_MAX_RANKS ? FIDELITY_COARSE : FIDELITY_STEP,
		.algo = row->algo, .progress = o->sim_progress, .progress_ctx = o->sim_progress_ctx};
	struct sim_result r;
	if (p.steps && sim_run(sa, row->topo, &p, &so, &r, &d) && r.iteration_s > 0) {
		out->simulated = true;
		out->sim_s = r.iteration_s;
		if (r.n_collectives > 0)
			out->algo = r.collectives[0].algo;
		out->sim_busbw_bps = pt->bytes / r.iteration_s * f;
		out->sim_err = validation_error_pct(out->sim_busbw_bps, pt->busbw_bps);
	} else {
		out->sim_error = p.steps ? first_error(a, &d) : "out of memory";
	}
	diag_list_free(&d);
	arena_free(sa);
}

bool validation_run_collective(struct arena *a, const struct validation_collective_row *row,
                               const struct validation_run_options *o,
                               struct validation_collective_result *out)
{
	int64_t *ranks = arena_calloc(a, (size_t)row->devices, sizeof *ranks);
	struct validation_point_result *pts = arena_calloc(a, (size_t)row->n_points + 1, sizeof *pts);
	*out = (struct validation_collective_result){.row = row, .points = pts};
	if (!ranks || !pts)
		return false;
	for (int64_t r = 0; r < row->devices; r++)
		ranks[r] = r;
	for (int k = 0; k < row->n_points; k++)
		run_point(a, row, ranks, &row->points[k], o, &pts[k]);
	return true;
}
