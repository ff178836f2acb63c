/* sweep.c — the points of a study, what each costs, and the answers fit
 * gives.
 *
 * The configuration space is the megatron-search's (planner.h, "Plan
 * search"), enumerated by the search's own plan_search_groups so that each
 * point can be stored and resumed on its own. A unit (one search group:
 * TP, PP, micro-batch, sequence parallelism) is planned once with Megatron's rule
 * (plan_search_plan) and each variant estimated (plan_estimate) in an
 * arena of its own, as the search does.
 *
 * A point's figures (docs/formats.md, "Studies"):
 *   tokens/s       = global batch x seq / iteration_s
 *   MFU            = 3 x forward FLOPs per iteration / (devices x peak x iteration_s)
 *   iterations     = ceil(goal tokens / tokens per iteration), or the goal's
 *   time to train  = iterations x iteration_s
 *   device-hours   = devices x time to train / 3600
 *   energy (kWh)   = devices x iterations x (idle_w x iteration_s
 *                    + (busy_w - idle_w) x compute_s) / 3.6e6
 *   cost           = device-hours x price per device-hour
 *
 * Hot path: study_eval_unit, once per unit; the estimate dominates.
 */
#include <gsl/gsl_cdf.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "studies-int.h"

/* Appends a unit; false when out of memory. */
static bool push(struct arena *a, struct study_unit **u, int *n, int *cap,
                 const struct study_unit *x)
{
	if (*n == *cap) {
		int nc = *cap ? *cap * 2 : 64;
		*u = arena_grow(a, *u, (size_t)*cap, (size_t)nc, sizeof **u);
		if (!*u)
			return false;
		*cap = nc;
	}
	(*u)[(*n)++] = *x;
	return true;
}

/* The search's units of one (cluster, size, batch): its groups, each
 * planned once (plan_search_groups, the search's own enumeration). */
static bool search_units(struct arena *a, const struct study *st, struct study_unit base,
                         int64_t dps, const struct topology *rebalance, struct study_unit **u,
                         int *n, int *cap, int64_t *points, int64_t *refused)
{
	int ng;
	struct search_group *gs = plan_search_groups(a, st->scenario->graph, base.devices, dps,
	                                             base.global_batch, true,
	                                             st->scenario->training.context_parallel,
	                                             &st->scenario->training, rebalance, &ng,
	                                             refused);
	if (!gs)
		return false;
	for (int i = 0; i < ng; i++) {
		struct study_unit x = base;
		x.n_configs = gs[i].n_configs;
		x.configs = gs[i].configs;
		*points += x.n_configs;
		if (!push(a, u, n, cap, &x))
			return false;
	}
	return true;
}

/* The listed configurations that the size allows (TP dividing a server,
 * TP x PP x CP the devices, EP dividing DP; CP with a generated dense
 * model and one sample a replica, as the search tries it), one unit each,
 * less those Megatron-LM refuses (counted into refused when not NULL). A
 * model with a fixed batch, not generated, sets the micro-batch: its
 * batch / DP. */
static bool list_units(struct arena *a, const struct study *st, struct study_unit base,
                       int64_t dps, const struct topology *rebalance, struct study_unit **u,
                       int *n, int *cap, int64_t *points, int64_t *refused)
{
	int64_t N = base.devices, G = base.global_batch;
	const struct graph *g = st->scenario->graph;
	const struct training *t = &st->scenario->training;
	for (int i = 0; i < st->n_configs; i++) {
		struct search_config c = st->configs[i];
		c.activation_offload_layers = t->activation_offload_layers;
		c.embedding_in_split = t->embedding_in_split;
		c.loss_in_split = t->loss_in_split;
		int64_t cp = c.cp > 1 ? c.cp : 1;
		if (dps % c.tp || N % (c.tp * c.pp * cp))
			continue;
		c.dp = N / (c.tp * c.pp * cp);
		if (c.ep > 1 && c.dp % c.ep)
			continue;
		if (cp > 1 && (!g->gen || g->gen->experts > 0 || c.micro_batch != 1))
			continue;
		if (!g->gen) {  /* the graph's batch is fixed: it sets the micro-batch */
			if (g->batch % c.dp)
				continue;
			c.micro_batch = g->batch / c.dp;
		}
		c.micro_batches = G % (c.micro_batch * c.dp) ? 0 : G / (c.micro_batch * c.dp);
		if (rebalance && c.pp > 1)
			c.stage_layers = plan_rebalanced_layers(
				a, g, rebalance, N, c.pp,
				c.schedule == SCHED_INTERLEAVED_1F1B && c.virtual_stages > 1
					? c.virtual_stages : 1);
		enum search_rule rule = plan_search_rule(g, G, &c);
		if (rule != SEARCH_RULE_NONE) {
			if (refused)
				refused[rule]++;
			continue;
		}
		struct study_unit x = base;
		x.n_configs = 1;
		x.configs = arena_alloc(a, sizeof *x.configs);
		if (!x.configs)
			return false;
		x.configs[0] = c;
		++*points;
		if (!push(a, u, n, cap, &x))
			return false;
	}
	return true;
}

int64_t study_n_cells(const struct study *st)
{
	int64_t n = 0;
	for (int c = 0; c < st->n_clusters; c++)
		n += (int64_t)st->clusters[c].n_sizes * st->n_faults * st->n_batches;
	return n;
}

/* The units of one cell appended to *u (*n of them, room for *cap). */
static bool cell_units(struct arena *a, const struct study *st, int64_t cell,
                       struct study_unit **u, int *n, int *cap, int64_t *points,
                       int64_t *refused)
{
	int c = 0;
	for (; c < st->n_clusters; c++) {
		int64_t k = (int64_t)st->clusters[c].n_sizes * st->n_faults * st->n_batches;
		if (cell < k)
			break;
		cell -= k;
	}
	SL_ASSERT(c < st->n_clusters);
	const struct study_cluster *cl = &st->clusters[c];
	int64_t per_size = (int64_t)st->n_faults * st->n_batches;
	int s = (int)(cell / per_size), f = (int)(cell % per_size / st->n_batches),
	    b = (int)(cell % st->n_batches);
	int64_t dps = cl->topo->devices_per_server;
	struct study_unit base = {.cluster = c, .fault = f, .servers = cl->servers[s],
	                          .devices = cl->servers[s] * dps,
	                          .global_batch = st->global_batches[b]};
	/* A "rebalance" case splits the layers by the rebalancing rule at
	 * every pipeline depth, as megatron-search does under
	 * training.rebalance: the depths that do not divide the layers are
	 * points too. A case whose faults cannot be applied at this size keeps
	 * the even split (its rows fail, saying why). */
	const struct topology *rebalance = NULL;
	if (st->faults[f].rebalance) {
		struct diag_list d;
		diag_list_init(&d);
		rebalance = study_fault_topology(a, st, c, base.servers, f, &d);
		bool oom = !rebalance && d.oom;
		diag_list_free(&d);
		if (oom)
			return false;
	}
	return st->search ? search_units(a, st, base, dps, rebalance, u, n, cap, points, refused)
	                  : list_units(a, st, base, dps, rebalance, u, n, cap, points, refused);
}

struct study_unit *study_cell_units(struct arena *a, const struct study *st, int64_t cell,
                                    int *n, int64_t *n_points)
{
	struct study_unit *u = NULL;
	int cap = 0;
	*n = 0;
	*n_points = 0;
	if (!cell_units(a, st, cell, &u, n, &cap, n_points, NULL))
		return NULL;
	return u ? u : arena_alloc(a, sizeof *u);
}

struct study_unit *study_units(struct arena *a, const struct study *st, int *n,
                               int64_t *n_points)
{
	struct study_unit *u = NULL;
	int cap = 0;
	*n = 0;
	*n_points = 0;
	for (int64_t cell = 0, cells = study_n_cells(st); cell < cells; cell++)
		if (!cell_units(a, st, cell, &u, n, &cap, n_points, NULL))
			return NULL;
	if (!u)
		u = arena_alloc(a, sizeof *u);
	return u;
}

bool study_count(const struct study *st, struct study_size *out)
{
	*out = (struct study_size){.cells = study_n_cells(st), .max_configs = 1};
	struct arena *a = NULL;
	for (int64_t cell = 0; cell < out->cells; cell++) {
		/* A fresh arena every few cells: what a cell allocates is dropped
		 * once counted. */
		if (!a || cell % 64 == 0) {
			arena_free(a);
			if (!(a = arena_new()))
				return false;
		}
		int n = 0, cap = 0;
		int64_t points = 0;
		struct study_unit *u = NULL;
		if (!cell_units(a, st, cell, &u, &n, &cap, &points, out->refused)) {
			arena_free(a);
			return false;
		}
		out->units += n;
		out->points += points;
		for (int i = 0; i < n; i++)
			out->max_configs = u[i].n_configs > out->max_configs ? u[i].n_configs
			                                                     : out->max_configs;
	}
	arena_free(a);
	return true;
}

bool study_check_size(const struct study *st, int64_t max_points, struct study_size *out,
                      struct diag_list *d)
{
	/* Counting takes time in proportion to the cells: a study of more
	 * cells than points allowed (each cell holds a point or more, short
	 * of a batch no configuration divides) is refused uncounted. */
	int64_t cells = study_n_cells(st);
	const char *cases = st->n_faults > 1 ? " x fault cases" : "";
	if (cells > max_points) {
		*out = (struct study_size){.cells = cells};
		diag_add(d, DIAG_ERROR, st->file, st->clusters_line, "clusters",
		         "the study has %lld cluster sizes x global batches%s, each a point or more, "
		         "more than the %lld points a sweep takes (--max-points N raises the limit; "
		         "docs/studies.md, \"How big a study may be\")",
		         (long long)cells, cases, (long long)max_points);
		return false;
	}
	if (!study_count(st, out)) {
		diag_add(d, DIAG_ERROR, st->file, 0, NULL, "out of memory counting the study's points");
		return false;
	}
	if (out->points <= max_points)
		return true;
	diag_add(d, DIAG_ERROR, st->file, st->clusters_line, "clusters",
	         "the study has %lld points (%lld cluster sizes x global batches%s, %lld units), "
	         "more than the %lld a sweep takes (--max-points N raises the limit; "
	         "docs/studies.md, \"How big a study may be\")",
	         (long long)out->points, (long long)out->cells, cases, (long long)out->units,
	         (long long)max_points);
	return false;
}

/* ------------------------------------------------------------ one point */

void study_row_figures(const struct study *st, struct study_row *r)
{
	const struct study_cluster *cl = &st->clusters[r->cluster];
	const struct topology *t = cl->topo;
	double n = (double)r->devices;
	enum dtype dt = st->scenario->training.dtype;
	double peak = t->device.peak_flops[dt];
	r->tokens_per_s = r->tokens_per_iteration / r->iteration_s;
	r->mfu = peak > 0 ? r->model_flops / (n * peak * r->iteration_s) : NAN;
	if (st->goal.iterations)
		r->iterations = (double)st->goal.iterations;
	else
		r->iterations = ceil(st->goal.tokens / r->tokens_per_iteration);
	r->time_to_train_s = r->iterations * r->iteration_s;
	struct study_goodput_out g;
	study_goodput_eval(&st->goodput, n, r->state_bytes, r->state_bytes_per_device,
	                   r->time_to_train_s, &g);
	r->goodput = g.goodput;
	r->checkpoint_interval_s = g.interval_s;
	r->interruptions = g.interruptions;
	r->effective_time_s = g.wall_s;
	r->device_hours = n * r->effective_time_s / 3600;
	/* The run's power over the wall time as over the training: restarts
	 * and checkpoints at the same mean draw (docs/studies.md). */
	r->energy_kwh = cl->busy_w >= 0
		? n * r->iterations * (cl->idle_w * r->iteration_s +
		                       (cl->busy_w - cl->idle_w) * r->compute_s) / 3.6e6 / r->goodput
		: NAN;
	r->cost = cl->price_per_device_hour >= 0 ? r->device_hours * cl->price_per_device_hour : NAN;
	r->effective_lo_s = r->effective_hi_s = NAN;
	if (study_row_has_interval(r)) {
		/* The effective time grows with the iteration time: its ends are
		 * those of the interval's. */
		double ends[2] = {r->iteration_lo_s, r->iteration_hi_s};
		for (int k = 0; k < 2; k++) {
			study_goodput_eval(&st->goodput, n, r->state_bytes, r->state_bytes_per_device,
			                   r->iterations * ends[k], &g);
			*(k ? &r->effective_hi_s : &r->effective_lo_s) = g.wall_s;
		}
	}
}

bool study_row_has_interval(const struct study_row *r)
{
	return r->ok && !isnan(r->iteration_rel_sd);
}

int study_row_outside(const struct calibration *c, const struct study *st,
                      const struct study_row *r, struct cal_outside *out)
{
	const struct cal_fit *tf = cost_calibration_training_fit_for(c, st->moe);
	if (!tf || !tf->runs.have || !r->ok)
		return -1;
	/* the row's configuration over the study's training */
	struct training t = st->scenario->training;
	t.pipeline_stages = r->config.pp;
	t.context_parallel = r->config.cp > 1 ? r->config.cp : 1;
	t.zero_stage = r->config.zero_stage;
	t.recompute = r->config.recompute;
	struct cal_point pt;
	cost_cal_point_of(&t, st->scenario->graph, r->devices, r->config.tp, r->config.ep, &pt);
	return cost_cal_outside(&tf->runs, &pt, out);
}

void study_row_at_percentile(const struct study *st, struct study_row *r, double p)
{
	if (!study_row_has_interval(r))
		return;
	/* The interval is lognormal, t exp(± q s) (cost_interval_of): on ln t
	 * the P-th percentile is z_P / z_95 of the way to its upper end, the
	 * 95th percentile (exact there and at the median; between them the
	 * normal's shape stands for Student's t). */
	double t = r->iteration_s, up = r->iteration_hi_s / t;
	if (!(t > 0) || !(up > 1) || !isfinite(up))
		return;
	r->iteration_s = t * pow(up, gsl_cdf_ugaussian_Pinv(p) / gsl_cdf_ugaussian_Pinv(0.95));
	study_row_figures(st, r);
}

/* The unit's scenario: the study's on the cluster at its size, under its
 * fault case, at its batch; NULL after diagnostics or out of memory. */
static struct scenario *unit_scenario(struct arena *a, const struct study *st, int cluster,
                                      int64_t servers, int fault, int64_t global_batch,
                                      struct diag_list *d)
{
	const struct topology *t = study_fault_topology(a, st, cluster, servers, fault, d);
	struct scenario *s = t ? arena_alloc(a, sizeof *s) : NULL;
	if (!s)
		return NULL;
	*s = *st->scenario;
	s->topo = (struct topology *)t;
	s->topology_file = st->clusters[cluster].topology_file;
	/* placed on a larger cluster, the job's ranks are its first servers'
	 * devices (packed) to the estimate; study_simulate places them */
	s->devices = servers * t->devices_per_server;
	s->training.global_batch = global_batch;
	s->training.n_cuts = 0;
	s->training.cuts = NULL;
	s->n_shards = 0;
	s->shards = NULL;
	return s;
}

/* A fault case with "rebalance": the layers of p's scenario (in `a`) moved
 * between its pipeline stages by their speed (plan_rebalance); nothing to
 * do with one stage or without the option. False after diagnostics. */
static bool rebalance_plan(struct arena *a, const struct study *st, int fault,
                           const struct plan *p, struct diag_list *diags)
{
	struct scenario *s = (struct scenario *)p->scenario;
	if (!st->faults[fault].rebalance || s->training.pipeline_stages < 2)
		return true;
	struct estimator *x = plan_estimator_new(p, diags);
	struct estimate e;
	bool ok = x && plan_rebalance(x, a, s, &e, diags);
	plan_estimator_free(x);
	return ok;
}

struct scenario *study_point_scenario(struct arena *a, const struct study *st,
                                      const struct study_row *r, struct diag_list *diags)
{
	struct scenario *u = unit_scenario(a, st, r->cluster, r->servers, r->fault, r->global_batch,
	                                   diags);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = u && st->faults[r->fault].rebalance
	                         ? plan_search_plan(a, u, &r->config, &o, diags) : NULL;
	if (p && !rebalance_plan(a, st, r->fault, p, diags))
		return NULL;
	struct scenario *s = p ? (struct scenario *)p->scenario
	                   : u ? plan_search_scenario(a, u, &r->config, diags) : NULL;
	if (!s)
		return NULL;
	s->name = arena_printf(a, "%s-%s-%lld", st->name, st->clusters[r->cluster].name,
	                       (long long)r->devices);
	if (st->faults[r->fault].text)
		s->name = arena_printf(a, "%s-%s", s->name, st->faults[r->fault].name);
	char c[128];
	s->description = arena_printf(a, "The point of study %s that fit chose: %s on %lld devices "
	                              "of %s, global batch %lld.", st->name,
	                              plan_search_config_text(c, sizeof c, &r->config),
	                              (long long)r->devices, st->clusters[r->cluster].name,
	                              (long long)r->global_batch);
	s->n_planners = 1;
	s->planners[0] = PLANNER_MEGATRON;
	return s->name && s->description ? s : NULL;
}

/* The scenario's training as configuration c sets it (as the search does). */
static void set_training(struct training *t, const struct training *user,
                         const struct search_config *c, int64_t global_batch)
{
	*t = *user;
	t->global_batch = global_batch;
	t->pipeline_stages = c->pp;
	t->virtual_stages = c->virtual_stages;
	t->schedule = c->schedule;
	t->recompute = c->recompute;
	t->zero_stage = c->zero_stage;
	t->sequence_parallel = c->sequence_parallel;
	t->expert_parallel = c->ep > 1 ? c->ep : 1;
	t->context_parallel = c->cp > 1 ? c->cp : 1;
	t->tensor_parallel = c->tp;
	t->micro_batches = c->micro_batches;
	t->micro_batches_set = true;
	t->n_cuts = 0;
	t->cuts = NULL;
	t->first_stage_layers = t->last_stage_layers = 0;
	t->stage_layers = c->stage_layers;
}

static double tokens_per_iteration(const struct graph *g, int64_t global_batch)
{
	return (double)global_batch * (g->gen && g->gen->seq > 0 ? (double)g->gen->seq : 1);
}

/* The estimate's host verdict (training.optimizer_offload against
 * server.host.memory_GB, as `estimate` gives it); FIT_YES when unchecked. */
static enum fit_class host_fit(const struct estimate *e)
{
	if (!(e->host_capacity_bytes > 0) || !(e->host_bytes_per_server > 0))
		return FIT_YES;
	struct cost_verdict v;
	cost_memory_verdict(e->host_bytes_per_server, e->host_capacity_bytes, &v);
	return v.fit;
}

static void fill_from_estimate(const struct study *st, struct study_row *r,
                               const struct estimate *e, const struct graph *g)
{
	struct graph_totals tot;
	graph_totals(g, &tot);
	r->ok = true;
	r->iteration_s = e->iteration_s;
	r->memory_bytes = e->memory_bytes_per_device;
	r->hbm_bytes = e->hbm_bytes;
	r->host_fit = host_fit(e);
	r->oom = study_row_fit(r) == FIT_NO;
	r->compute_s = e->compute_s;
	r->comm_s = e->comm_s;
	r->bubble_s = e->bubble_s;
	memcpy(r->category_s, e->category_s, sizeof r->category_s);
	r->model_flops = 3 * tot.forward_flops * (double)r->config.micro_batches;
	r->tokens_per_iteration = tokens_per_iteration(g, r->global_batch);
	/* A checkpoint holds the weights and the optimizer's state as the
	 * precision recipe keeps them (Megatron-LM: the model's parameters, the
	 * fp32 main parameters and Adam's two moments; not the fp32 gradients
	 * of its fp16 recipe's master copies), written once whatever the
	 * replicas. */
	struct cost_state_bytes b;
	cost_state_bytes(&st->scenario->training, st->scenario->training.dtype, &b);
	r->state_bytes = (double)tot.parameters * (b.weight + b.master + b.moments);
	r->state_bytes_per_device = e->param_bytes + e->optimizer_bytes;
	study_row_figures(st, r);
}

static void row_head(struct study_row *r, const struct study_unit *u, const struct search_config *c)
{
	*r = (struct study_row){.cluster = u->cluster, .fault = u->fault, .servers = u->servers,
	                        .devices = u->devices, .global_batch = u->global_batch, .config = *c,
	                        .iteration_rel_sd = NAN, .iteration_lo_s = NAN,
	                        .iteration_hi_s = NAN, .effective_lo_s = NAN,
	                        .effective_hi_s = NAN};
}

/* The row's 90% interval from the calibration the plan's topology carries
 * (cost_calibration_interval: two estimates per figure); none without a
 * training fit. False only when out of memory. */
static bool row_interval(struct arena *a, const struct study *st, const struct plan *p,
                         struct study_row *r)
{
	const struct calibration *c = p->scenario->topo->calibration;
	if (!c || !r->ok)
		return true;
	struct cal_interval iv;
	if (!cost_calibration_interval(a, c, p, &iv))
		return false;
	if (!iv.have)
		return true;
	struct cal_interval at;
	cost_interval_at(&iv, r->iteration_s, &at);
	r->iteration_rel_sd = iv.rel_sd;
	r->iteration_lo_s = at.lo_s;
	r->iteration_hi_s = at.hi_s;
	study_row_figures(st, r);
	return true;
}

bool study_eval_unit(struct arena *a, const struct study *st, const struct study_unit *u,
                     const bool *skip, struct study_row *rows)
{
	int todo = 0;
	for (int i = 0; i < u->n_configs; i++)
		todo += !(skip && skip[i]);
	if (!todo)
		return true;
	struct arena *ua = arena_new();
	if (!ua)
		return false;
	struct diag_list d;
	diag_list_init(&d);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct scenario *s = unit_scenario(ua, st, u->cluster, u->servers, u->fault, u->global_batch,
	                                   &d);
	struct plan *p = s ? plan_search_plan(ua, s, &u->configs[0], &o, &d) : NULL;
	/* Every variant keeps the plan: it is priced once (plan_estimator_new). */
	struct estimator *x = p ? plan_estimator_new(p, &d) : NULL;
	struct scenario *sc = x ? (struct scenario *)p->scenario : NULL;
	const char *why = sc ? NULL : arena_strdup(a, diag_first_error(ua, &d));
	bool oom = (!s && !d.errors) || d.oom;
	for (int i = 0; i < u->n_configs && !oom; i++) {
		if (skip && skip[i])
			continue;
		struct study_row *r = &rows[i];
		row_head(r, u, &u->configs[i]);
		if (!sc) {
			r->error = why;
			continue;
		}
		struct arena *ea = arena_new();
		struct diag_list ed;
		diag_list_init(&ed);
		struct estimate e;
		set_training(&sc->training, &s->training, &u->configs[i], u->global_batch);
		bool rebalance = st->faults[u->fault].rebalance && sc->training.pipeline_stages > 1;
		if (ea && (rebalance ? plan_rebalance(x, ea, sc, &e, &ed)
		                     : plan_estimator_run(x, ea, &e, &ed))) {
			fill_from_estimate(st, r, &e, sc->graph);
			oom = !row_interval(ea, st, p, r);
		} else {
			r->error = arena_strdup(a, ea ? diag_first_error(ea, &ed) : "out of memory");
		}
		oom = oom || !ea || ed.oom;
		diag_list_free(&ed);
		arena_free(ea);
	}
	plan_estimator_free(x);
	diag_list_free(&d);
	arena_free(ua);
	return !oom;
}

/* The program simulated on the scenario's topology: its ranks on the
 * first devices, or, under a fault case with a placement, on the servers
 * the placement gives the job on the case's larger cluster (jobs.c's
 * packed or spread, as cosim places a job), one job of sim_run_jobs. */
static bool simulate_placed(struct arena *a, const struct study *st, int fault,
                            const struct scenario *s, const struct program *prog,
                            const struct sim_options *so, struct sim_result *res,
                            struct diag_list *d)
{
	const struct study_fault *f = &st->faults[fault];
	const struct topology *t = s->topo;
	if (f->placement == JOB_PLACEMENT_COUNT)
		return sim_run(a, t, prog, so, res, d);
	int64_t per = t->devices_per_server, n = (s->devices + per - 1) / per;
	int64_t *servers = arena_calloc(a, (size_t)n + 1, sizeof(int64_t));
	int64_t *devices = arena_calloc(a, (size_t)s->devices + 1, sizeof(int64_t));
	if (!servers || !devices) {
		d->oom = true;
		return false;
	}
	if (jobs_place_servers(t, f->placement, NULL, (int)n, servers) != n) {
		diag_add(d, DIAG_ERROR, f->file, f->line, "faults",
		         "%lld servers cannot be placed on the cluster of %lld", (long long)n,
		         (long long)t->servers);
		return false;
	}
	for (int64_t r = 0; r < s->devices; r++)
		devices[r] = servers[r / per] * per + r % per;
	struct sim_job job = {.prog = prog, .devices = devices};
	return sim_run_jobs(a, t, &job, 1, so, res, NULL, d);
}

bool study_simulate(struct arena *a, const struct study *st, struct study_row *r)
{
	struct arena *sa = arena_new();
	if (!sa)
		return false;
	struct diag_list d;
	diag_list_init(&d);
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct scenario *s = unit_scenario(sa, st, r->cluster, r->servers, r->fault, r->global_batch,
	                                   &d);
	struct plan *p = s ? plan_search_plan(sa, s, &r->config, &o, &d) : NULL;
	struct program prog;
	struct sim_result res;
	struct sim_options so = {.fidelity = FIDELITY_COARSE, .algo = st->scenario->sim.collective_algo};
	bool ok = p && rebalance_plan(sa, st, r->fault, p, &d) &&
	          plan_lower(sa, p, p->scenario->training.gradient_bucket_bytes, &prog, &d) &&
	          simulate_placed(sa, st, r->fault, p->scenario, &prog, &so, &res, &d);
	bool oom = (!s && !d.errors) || d.oom;
	r->simulated = ok;
	r->sim_error = ok ? NULL : arena_strdup(a, diag_first_error(sa, &d));
	if (ok) {
		double c = 0, x = 0, w = 0;
		for (int64_t k = 0; k < res.n_ranks; k++) {
			c += res.ranks[k].compute_s;
			x += res.ranks[k].comm_exposed_s;
			w += res.ranks[k].pipeline_wait_s + res.ranks[k].idle_s;
		}
		double n = res.n_ranks > 0 ? (double)res.n_ranks : 1;
		r->sim_iteration_s = res.iteration_s;
		r->sim_compute_s = c / n;
		r->sim_comm_s = x / n;
		r->sim_bubble_s = w / n;
		r->sim_time_to_train_s = r->iterations * res.iteration_s;
	}
	diag_list_free(&d);
	arena_free(sa);
	return !oom;
}

/* ------------------------------------------------------------------ fit */

enum fit_class study_fit_worse(enum fit_class a, enum fit_class b)
{
	return a > b ? a : b;
}

enum fit_class study_row_fit(const struct study_row *r)
{
	struct cost_verdict v;
	cost_memory_verdict(r->memory_bytes, r->hbm_bytes, &v);
	return study_fit_worse(v.fit, r->host_fit);
}

int study_oom_code(const struct study_row *r)
{
	struct cost_verdict v;
	cost_memory_verdict(r->memory_bytes, r->hbm_bytes, &v);
	int c = r->host_fit == FIT_NO ? 2 : r->host_fit == FIT_TIGHT ? 4 : 0;
	if (r->oom && (c != 2 || v.fit == FIT_NO))
		c |= 1;
	return c;
}

void study_oom_decode(struct study_row *r, int code)
{
	r->oom = (code & 3) != 0;
	r->host_fit = code & 2 ? FIT_NO : code & 4 ? FIT_TIGHT : FIT_YES;
}

bool study_row_meets(const struct study *st, const struct study_row *r)
{
	if (!r->ok || r->oom || study_row_fit(r) != FIT_YES)
		return false;
	if (st->goal.budget > 0 && !(r->cost <= st->goal.budget))
		return false;
	return !(st->goal.days > 0) || r->effective_time_s <= st->goal.days * 86400;
}

static double key_of(const struct study_row *r, int key)
{
	return key == 0 ? r->effective_time_s : key == 1 ? r->cost : r->energy_kwh;
}

int study_best(const struct study *st, const struct study_row *rows, int n, int cluster, int key)
{
	int best = -1;
	for (int i = 0; i < n; i++) {
		const struct study_row *r = &rows[i];
		if ((cluster >= 0 && r->cluster != cluster) || !study_row_meets(st, r) ||
		    isnan(key_of(r, key)))
			continue;
		if (best < 0 || key_of(r, key) < key_of(&rows[best], key) ||
		    (key_of(r, key) == key_of(&rows[best], key) && r->devices < rows[best].devices))
			best = i;
	}
	return best;
}

int study_smallest(const struct study *st, const struct study_row *rows, int n, int cluster)
{
	int best = -1;
	for (int i = 0; i < n; i++) {
		const struct study_row *r = &rows[i];
		if (r->cluster != cluster || !study_row_meets(st, r))
			continue;
		if (best < 0 || r->devices < rows[best].devices ||
		    (r->devices == rows[best].devices && r->effective_time_s < rows[best].effective_time_s))
			best = i;
	}
	return best;
}

static const struct study_row *sort_rows;

static int by_time_then_cost(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;
	const struct study_row *x = &sort_rows[a], *y = &sort_rows[b];
	if (x->effective_time_s != y->effective_time_s)
		return x->effective_time_s < y->effective_time_s ? -1 : 1;
	if (x->cost != y->cost)
		return x->cost < y->cost ? -1 : 1;
	return (a > b) - (a < b);
}

int study_pareto(const struct study *st, const struct study_row *rows, int n, int *out)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (study_row_meets(st, &rows[i]) && !isnan(rows[i].cost))
			out[m++] = i;
	sort_rows = rows;
	qsort(out, (size_t)m, sizeof *out, by_time_then_cost);
	/* Walking by time, a point is on the front when it is cheaper than
	 * every faster one. */
	int k = 0;
	double least = INFINITY;
	for (int i = 0; i < m; i++)
		if (rows[out[i]].cost < least) {
			least = rows[out[i]].cost;
			out[k++] = out[i];
		}
	return k;
}

static int by_time(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;
	const struct study_row *x = &sort_rows[a], *y = &sort_rows[b];
	if (x->effective_time_s != y->effective_time_s)
		return x->effective_time_s < y->effective_time_s ? -1 : 1;
	return (a > b) - (a < b);
}

int study_top_per_size(const struct study_row *rows, int n, int k, int *out)
{
	int m = 0;
	int *tmp = n ? malloc((size_t)n * sizeof *tmp) : NULL;
	if (n && !tmp)
		return 0;
	sort_rows = rows;
	for (int i = 0; i < n;) {
		int j = i, t = 0;
		while (j < n && rows[j].cluster == rows[i].cluster && rows[j].servers == rows[i].servers &&
		       rows[j].fault == rows[i].fault) {
			if (rows[j].ok && !rows[j].oom)
				tmp[t++] = j;
			j++;
		}
		qsort(tmp, (size_t)t, sizeof *tmp, by_time);
		for (int q = 0; q < t && q < k; q++)
			out[m++] = tmp[q];
		i = j;
	}
	free(tmp);
	return m;
}

int study_fault_rows(const struct study_row *rows, int n, int fault, struct study_row *out)
{
	int m = 0;
	for (int i = 0; i < n; i++)
		if (rows[i].fault == fault)
			out[m++] = rows[i];
	return m;
}

int study_same_plan(const struct study_row *rows, int n, const struct study_row *r, int fault)
{
	char want[128], have[128];
	plan_search_config_text(want, sizeof want, &r->config);
	for (int j = 0; j < n; j++) {
		const struct study_row *x = &rows[j];
		if (x->fault != fault || x->cluster != r->cluster || x->servers != r->servers ||
		    x->global_batch != r->global_batch)
			continue;
		if (!strcmp(want, plan_search_config_text(have, sizeof have, &x->config)))
			return j;
	}
	return -1;
}

const char *study_row_stage_layers(struct arena *a, const struct study *st,
                                   const struct study_row *r)
{
	if (!st->faults[r->fault].rebalance || r->config.pp < 2)
		return NULL;
	struct arena *pa = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct scenario *s = pa ? study_point_scenario(pa, st, r, &d) : NULL;
	const char *text = NULL;
	if (s && s->training.stage_layers) {
		text = "";
		for (int64_t k = 0; text && k < s->training.pipeline_stages; k++)
			text = arena_printf(a, "%s%s%lld", text, k ? "/" : "",
			                    (long long)s->training.stage_layers[k]);
	}
	diag_list_free(&d);
	arena_free(pa);
	return text;
}
