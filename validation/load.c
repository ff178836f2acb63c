/* load.c — the validation file loader and the unit conversions.
 *
 * A validation file names published measurements: training runs (a
 * scenario each, inline or a file, plus the tensor-parallel degree and
 * micro-batch a scenario cannot state and the measured figure) or
 * collectives (a topology, a device count, a collective and measured
 * bandwidths by message size). Everything that can be checked without
 * planning is checked here, every problem reported in one run; a
 * configuration the planner then cannot build is the caller's row
 * failure. Paths are relative to the file's folder. No hot path.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "validation.h"

const char *const validation_kind_names[VALIDATION_KIND_COUNT] = {"training", "collectives"};
const char *const validation_measure_names[MEASURE_COUNT] = {
	"iteration_s", "tflops_per_device", "tokens_per_s_per_device", "tokens_per_s",
	"samples_per_s",
};
const char *const validation_flops_names[FLOPS_COUNT] = {"megatron", "model", "palm"};
_Static_assert(VALIDATION_KIND_COUNT == 2, "validation_kind_names must list every kind");
_Static_assert(MEASURE_COUNT == 5, "validation_measure_names must list every measurement");
_Static_assert(FLOPS_COUNT == 3, "validation_flops_names must list every FLOP count");

/* The collectives a row may name, nccl-tests' words, and their steps. */
static const char *const collective_names[] = {"all-reduce", "all-gather", "reduce-scatter",
                                               "all-to-all"};
static const enum step_kind collective_steps[] = {STEP_ALLREDUCE, STEP_ALLGATHER,
                                                  STEP_REDUCESCATTER, STEP_ALLTOALL};
_Static_assert(SL_COUNTOF(collective_names) == SL_COUNTOF(collective_steps),
               "one step per collective name");

#define GBPS 1e9

struct vloader {
	struct arena *a;
	struct validation *v;
	struct diag_list *diags;
	const char *dir;           /* the file's folder */
};

/* ------------------------------------------------------------ conversions */

double validation_flops_per_iteration(const struct graph *g, enum validation_flops how,
                                      int64_t global_batch, const char **why)
{
	const char *dummy;
	why = why ? why : &dummy;
	const struct model_gen *m = g->gen;
	if (!m || m->seq <= 0) {
		*why = "counting FLOPs needs a model from a generator (its layers, hidden size and "
		       "sequence length)";
		return -1;
	}
	double B = (double)global_batch, s = (double)m->seq, l = (double)m->layers,
	       h = (double)m->hidden, V = (double)m->vocab;
	switch (how) {
	case FLOPS_MEGATRON:
		if (m->kind != GEN_GPT || m->ffn != 4 * m->hidden) {
			*why = "the megatron count is for a gpt generator with ffn = 4 x hidden "
			       "(use \"model\" or \"palm\")";
			return -1;
		}
		return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
	case FLOPS_MODEL:
	case FLOPS_PALM: {
		struct graph_totals t;
		graph_totals(g, &t);
		double per_token = 6 * (double)t.parameters;
		if (how == FLOPS_PALM) {
			if (m->layers <= 0) {
				*why = "the palm count needs the model's layers";
				return -1;
			}
			/* 12 L H Q T (Chowdhery et al. 2022, appendix B): H heads
			 * of Q, the hidden size unless the model sets head_dim */
			double hq = m->head_dim > 0 ? (double)m->heads * (double)m->head_dim : h;
			per_token += 12 * l * hq * s;
		}
		return per_token * B * s;
	}
	case FLOPS_COUNT:
		break;
	}
	SL_ASSERT(!"unknown FLOP count");
	return -1;
}

double validation_predicted(const struct validation_training_row *r, double iteration_s)
{
	const struct scenario *s = r->scenario;
	double n = (double)s->devices, t = iteration_s;
	switch (r->measure) {
	case MEASURE_ITERATION_S:
		return t;
	case MEASURE_TFLOPS_PER_DEVICE:
		return r->flops_per_iteration / (n * t) / 1e12;
	case MEASURE_TOKENS_PER_S_PER_DEVICE:
		return r->tokens_per_iteration / (n * t);
	case MEASURE_TOKENS_PER_S:
		return r->tokens_per_iteration / t;
	case MEASURE_SAMPLES_PER_S:
		return (double)s->training.global_batch / t;
	case MEASURE_COUNT:
		break;
	}
	SL_ASSERT(!"unknown measurement");
	return 0;
}

double validation_bus_factor(enum step_kind kind, int64_t n)
{
	double f = n > 0 ? (double)(n - 1) / (double)n : 0;
	switch (kind) {
	case STEP_ALLREDUCE:
		return 2 * f;
	case STEP_ALLGATHER:
	case STEP_REDUCESCATTER:
	case STEP_ALLTOALL:
		return f;
	default:
		return 1;
	}
}

double validation_error_pct(double predicted, double measured)
{
	return measured > 0 ? 100 * (predicted / measured - 1) : 0;
}

double validation_mape(const double *errors_pct, int n)
{
	if (n <= 0)
		return NAN;
	double sum = 0;
	for (int i = 0; i < n; i++)
		sum += fabs(errors_pct[i]);
	return sum / n;
}

/* ------------------------------------------------------------ helpers */

static bool opt_text(struct vloader *L, const struct jv *obj, const char *key, const char **out)
{
	struct jv v;
	const char *s;
	*out = NULL;
	if (!jv_get(obj, key, &v))
		return true;
	if (!jv_string(&v, &s))
		return false;
	*out = arena_strdup(L->a, s);
	return *out != NULL;
}

static bool req_text(struct vloader *L, const struct jv *obj, const char *key, const char **out)
{
	const char *s;
	*out = NULL;
	if (!jv_req_string(obj, key, &s))
		return false;
	*out = arena_strdup(L->a, s);
	return *out != NULL;
}

static bool opt_enum(const struct jv *obj, const char *key, const char *const names[], int n,
                     int dflt, int *out)
{
	struct jv v;
	*out = dflt;
	if (!jv_get(obj, key, &v))
		return true;
	int k = jv_enum(&v, names, n);
	if (k < 0)
		return false;
	*out = k;
	return true;
}

/* ---------------------------------------------------------- training rows */

static struct scenario *row_scenario(struct vloader *L, const struct jv *v, const char *name)
{
	if (v->node && cJSON_IsString(v->node)) {
		const char *rel;
		if (!jv_string(v, &rel))
			return NULL;
		const char *path = util_path_join(L->a, L->dir, rel);
		size_t before = L->diags->errors, at = L->diags->count;
		struct scenario *s = path ? scenario_load(L->a, path, L->diags) : NULL;
		if (!s && L->diags->errors == before)
			jv_error(v, "cannot load the scenario \"%s\"", rel);
		jv_named_here(v, at);
		return s;
	}
	if (v->node && cJSON_IsObject(v->node))
		return scenario_load_value(L->a, v, name);
	char b[64];
	jv_error(v, "expected a scenario file name or a scenario object, got %s",
	         jv_describe(v, b, sizeof b));
	return NULL;
}

/* "measured": {"kind", "value", "flops"}. */
static bool read_measured(const struct jv *row, struct validation_training_row *r)
{
	static const char *const keys[] = {"kind", "value", "flops", NULL};
	struct jv m, k, f;
	if (!jv_need(row, "measured", &m) || !jv_open(&m, keys))
		return false;
	bool ok = true;
	if (!jv_need(&m, "kind", &k)) {
		ok = false;
	} else {
		int kind = jv_enum(&k, validation_measure_names, MEASURE_COUNT);
		ok = kind >= 0;
		r->measure = kind >= 0 ? (enum validation_measure)kind : MEASURE_ITERATION_S;
	}
	/* Whatever the unit (seconds per iteration, TFLOP/s per device, tokens
	 * or samples per second), a measurement lies within 10^-9 to 10^12:
	 * beyond, the comparison's figures stop being printable. */
	struct jv vv;
	bool got = jv_req_number(&m, "value", JR_POSITIVE, &r->value);
	if (got && (r->value < 1e-9 || r->value > 1e12)) {
		jv_get(&m, "value", &vv);
		jv_error(&vv, "%g is outside the range 1e-09 to 1e+12 of a measurement", r->value);
		got = false;
	}
	ok = got && ok;
	bool has_flops = jv_get(&m, "flops", &f);
	if (ok && r->measure == MEASURE_TFLOPS_PER_DEVICE) {
		int how;
		if (!has_flops) {
			jv_need(&m, "flops", &f);
			return false;
		}
		if (!opt_enum(&m, "flops", validation_flops_names, FLOPS_COUNT, 0, &how))
			return false;
		r->flops = (enum validation_flops)how;
	} else if (ok && has_flops) {
		jv_error(&f, "\"flops\" says how a tflops_per_device figure was counted; this row "
		         "measures %s", validation_measure_names[r->measure]);
		ok = false;
	}
	if (!ok || !r->scenario)
		return ok;
	const struct scenario *s = r->scenario;
	const char *why = NULL;
	if (r->measure == MEASURE_TFLOPS_PER_DEVICE) {
		r->flops_per_iteration =
			validation_flops_per_iteration(s->graph, r->flops, s->training.global_batch, &why);
		if (r->flops_per_iteration < 0) {
			jv_error(&f, "%s", why);
			return false;
		}
	}
	const struct model_gen *gen = s->graph->gen;
	r->tokens_per_iteration = gen && gen->seq > 0 ?
		(double)s->training.global_batch * (double)gen->seq : 0;
	if ((r->measure == MEASURE_TOKENS_PER_S_PER_DEVICE || r->measure == MEASURE_TOKENS_PER_S) &&
	    r->tokens_per_iteration <= 0) {
		jv_error(&k, "%s needs the model's sequence length: a model from a generator",
		         validation_measure_names[r->measure]);
		return false;
	}
	return true;
}

/* The row's tensor-parallel degree and micro-batch against its scenario;
 * with a micro-batch, the scenario at micro_batch x DP samples per
 * micro-batch (as the plan search builds its configurations). */
static bool apply_parallel(struct vloader *L, const struct jv *row,
                           struct validation_training_row *r)
{
	struct scenario *s = r->scenario;
	const struct training *t = &s->training;
	struct jv tpv, mbv;
	bool has_tp = jv_get(row, "tensor_parallel", &tpv), has_mb = jv_get(row, "micro_batch", &mbv);
	int64_t stage = s->devices / t->pipeline_stages;
	if (has_tp && r->planner != PLANNER_MEGATRON) {
		jv_error(&tpv, "tensor_parallel is read by the megatron planner only, not %s",
		         planner_names[r->planner]);
		return false;
	}
	if (has_tp && stage % r->tensor_parallel) {
		jv_error(&tpv, "tensor parallel %lld does not divide the %lld devices of a pipeline "
		         "stage (%lld devices, %lld stages)", (long long)r->tensor_parallel,
		         (long long)stage, (long long)s->devices, (long long)t->pipeline_stages);
		return false;
	}
	if (!has_mb)
		return true;
	if (!has_tp) {
		jv_error(&mbv, "micro_batch needs tensor_parallel (the data-parallel degree is the "
		         "devices of a stage / tensor_parallel)");
		return false;
	}
	if (!s->graph->gen) {
		jv_error(&mbv, "micro_batch needs a model from a generator (it is generated again at "
		         "micro_batch x data-parallel samples)");
		return false;
	}
	if (t->micro_batches_set) {
		jv_error(&mbv, "give the row's micro_batch or the scenario's training.micro_batches, "
		         "not both");
		return false;
	}
	/* context parallelism cuts each sequence, not the batch: the replicas
	 * are the stage's devices over TP x CP */
	int64_t cp = t->context_parallel > 1 ? t->context_parallel : 1;
	if ((stage / r->tensor_parallel) % cp) {
		jv_error(&tpv, "tensor parallel %lld x the scenario's context parallel %lld does not "
		         "divide the %lld devices of a pipeline stage", (long long)r->tensor_parallel, (long long)cp,
		         (long long)stage);
		return false;
	}
	int64_t dp = stage / r->tensor_parallel / cp, batch;
	if (!util_mul_i64(r->micro_batch, dp, &batch) || t->global_batch % batch) {
		jv_error(&mbv, "micro-batches of %lld samples (micro_batch %lld x data parallel %lld) "
		         "do not divide the global batch of %lld", (long long)(r->micro_batch * dp),
		         (long long)r->micro_batch, (long long)dp, (long long)t->global_batch);
		return false;
	}
	int64_t m = t->global_batch / batch;
	if (t->schedule == SCHED_INTERLEAVED_1F1B && t->virtual_stages > 1 && m % t->pipeline_stages) {
		jv_error(&mbv, "%lld micro-batches: the interleaved schedule needs a multiple of the "
		         "%lld pipeline stages", (long long)m, (long long)t->pipeline_stages);
		return false;
	}
	struct search_config c = {.tp = r->tensor_parallel, .pp = t->pipeline_stages, .dp = dp,
	                          .micro_batch = r->micro_batch, .micro_batches = m,
	                          .sequence_parallel = t->sequence_parallel,
	                          .ep = t->expert_parallel, .cp = cp,
	                          .schedule = t->schedule, .virtual_stages = t->virtual_stages,
	                          .recompute = t->recompute, .zero_stage = t->zero_stage};
	size_t before = L->diags->errors;
	struct scenario *sc = plan_search_scenario(L->a, s, &c, L->diags);
	if (!sc) {
		if (L->diags->errors == before)
			jv_error(&mbv, "cannot generate the model at %lld samples", (long long)batch);
		return false;
	}
	r->scenario = sc;
	return true;
}

static bool read_training_row(struct vloader *L, const struct jv *row,
                              struct validation_training_row *r)
{
	static const char *const keys[] = {"name",           "source",      "note",    "scenario",
	                                   "planner",        "tensor_parallel",       "micro_batch",
	                                   "measured",       "memory_GB",   NULL};
	if (!jv_open(row, keys))
		return false;
	r->line = row->line;
	bool ok = req_text(L, row, "name", &r->name);
	ok = req_text(L, row, "source", &r->source) && ok;
	ok = opt_text(L, row, "note", &r->note) && ok;
	int planner;
	ok = opt_enum(row, "planner", planner_names, PLANNER_COUNT, PLANNER_MEGATRON, &planner) && ok;
	r->planner = (enum planner_kind)planner;
	ok = jv_opt_int(row, "tensor_parallel", JR_RANGE(1, 1 << 20), 0, &r->tensor_parallel) && ok;
	ok = jv_opt_int(row, "micro_batch", JR_RANGE(1, 1 << 30), 0, &r->micro_batch) && ok;
	double gb = 0;
	ok = jv_opt_number(row, "memory_GB", JR_RANGE(1e-3, 1e5), 0, &gb) && ok;
	r->memory_bytes = gb * 1e9;
	struct jv sv;
	if (jv_need(row, "scenario", &sv)) {
		r->scenario = row_scenario(L, &sv, r->name ? r->name : "row");
		ok = r->scenario && ok;
	} else {
		ok = false;
	}
	if (ok)
		ok = apply_parallel(L, row, r);
	return read_measured(row, r) && ok;
}

/* ------------------------------------------------------- collective rows */

static bool read_point(const struct jv *p, const struct validation_collective_row *r,
                       struct validation_point *out)
{
	static const char *const keys[] = {"bytes", "busbw_GBps", "algbw_GBps", NULL};
	if (!jv_open(p, keys))
		return false;
	struct jv bus, alg;
	/* Whole bytes, as calibrate reads a benchmark's sizes: a fraction is
	 * a slip (a unit, a digit), not a size nccl-tests could have run. */
	int64_t bytes = 0;
	bool ok = jv_req_int(p, "bytes", JR_RANGE(1, 1e15), &bytes);
	out->bytes = (double)bytes;
	bool has_bus = jv_get(p, "busbw_GBps", &bus), has_alg = jv_get(p, "algbw_GBps", &alg);
	double gbps;
	if (has_bus && has_alg) {
		jv_error(&alg, "give busbw_GBps or algbw_GBps, not both");
		return false;
	}
	if (!has_bus && !has_alg) {
		jv_error(p, "missing busbw_GBps or algbw_GBps");
		return false;
	}
	/* Measured bandwidths as a topology's links allow them: 1 MB/s to
	 * 100 TB/s (docs/formats.md). */
	if (!jv_number(has_bus ? &bus : &alg, JR_RANGE(1e-3, 1e5), &gbps))
		return false;
	out->measured_algbw = has_alg;
	out->busbw_bps = gbps * GBPS * (has_alg ? validation_bus_factor(r->collective, r->devices) : 1);
	return ok;
}

/* A point's size, where it stands in the row and its line. */
struct point_at {
	double bytes;
	int i, line;
};

static int by_size(const void *x, const void *y)
{
	const struct point_at *p = x, *q = y;
	return p->bytes < q->bytes ? -1 : p->bytes > q->bytes ? 1 : p->i - q->i;
}

/* One point per size: a size given twice would be simulated twice and
 * weigh double in the MAPE, and two bandwidths for one size are two
 * sources or a copy slip, which the file should settle (docs/validation.md,
 * "Collective rows"). Each repeat is reported at its bytes, naming the
 * first. at: the row's n points with their lines, sorted here; a point
 * without a size (bytes 0, already reported) is left out. */
static bool unique_sizes(struct vloader *L, const struct jv *pts, struct point_at *at, int n)
{
	qsort(at, (size_t)n, sizeof *at, by_size);
	/* first[i]: the point that gave point i's size first, when not i */
	struct point_at *first = NULL;
	for (int k = 1, j = 0; k < n; k++) {
		if (at[k].bytes != at[j].bytes) {
			j = k;
			continue;
		}
		if (at[k].bytes == 0)
			continue;
		if (!first && !(first = arena_calloc(L->a, (size_t)n, sizeof *first)))
			return false;
		first[at[k].i] = at[j];
	}
	if (!first)
		return true;
	struct jv p, b;
	int i = 0;
	for (bool more = jv_first(pts, &p); more; more = jv_next(pts, &p), i++)
		if (first[i].bytes != 0 && jv_get(&p, "bytes", &b))
			jv_error(&b, "the size of points[%d] (line %d) again: give each size once",
			         first[i].i, first[i].line);
	return false;
}

static bool read_collective_row(struct vloader *L, const struct jv *row,
                                struct validation_collective_row *r)
{
	static const char *const keys[] = {"name",       "system",     "source",          "note",
	                                   "topology",   "devices",    "collective",
	                                   "collective_algo",          "points",          NULL};
	if (!jv_open(row, keys))
		return false;
	r->line = row->line;
	bool ok = req_text(L, row, "name", &r->name);
	ok = opt_text(L, row, "system", &r->system) && ok;
	ok = req_text(L, row, "source", &r->source) && ok;
	ok = opt_text(L, row, "note", &r->note) && ok;
	struct jv v;
	if (jv_need(row, "topology", &v)) {
		const char *rel;
		if (jv_string(&v, &rel)) {
			const char *path = util_path_join(L->a, L->dir, rel);
			size_t before = L->diags->errors, at = L->diags->count;
			r->topo = path ? topo_load(L->a, path, L->diags) : NULL;
			if (!r->topo && L->diags->errors == before)
				jv_error(&v, "cannot load the topology \"%s\"", rel);
			jv_named_here(&v, at);
		}
	}
	ok = r->topo && ok;
	if (jv_get(row, "devices", &v)) {
		if (!jv_int(&v, JR_RANGE(2, 1 << 30), &r->devices)) {
			ok = false;
		} else if (r->topo) {
			char why[256];
			struct topology *t = topo_for_devices(L->a, r->topo, r->devices, why, sizeof why);
			if (!t) {
				jv_error(&v, "%s", why);
				ok = false;
			} else {
				r->topo = t;
			}
		}
	} else if (r->topo) {
		r->devices = r->topo->n_devices;
		if (r->devices < 2) {
			jv_need(row, "devices", &v);
			ok = false;
		}
	}
	int k = 0, algo = COLL_AUTO;
	if (jv_need(row, "collective", &v)) {
		k = jv_enum(&v, collective_names, (int)SL_COUNTOF(collective_names));
		ok = k >= 0 && ok;
	} else {
		ok = false;
	}
	r->collective = collective_steps[k < 0 ? 0 : k];
	ok = opt_enum(row, "collective_algo", collective_algo_names, COLL_COUNT, COLL_AUTO, &algo) &&
	     ok;
	r->algo = (enum collective_algo)algo;
	struct jv pts, p;
	if (!jv_need(row, "points", &pts) || !jv_is_array(&pts, 1, 1 << 16))
		return false;
	r->n_points = jv_len(&pts);
	r->points = arena_calloc(L->a, (size_t)r->n_points, sizeof(*r->points));
	if (!r->points)
		return false;
	struct point_at *at = arena_calloc(L->a, (size_t)r->n_points, sizeof *at);
	if (!at)
		return false;
	int i = 0;
	for (bool more = jv_first(&pts, &p); more; more = jv_next(&pts, &p), i++) {
		ok = read_point(&p, r, &r->points[i]) && ok;
		at[i] = (struct point_at){r->points[i].bytes, i, p.line};
	}
	return unique_sizes(L, &pts, at, r->n_points) && ok;
}

/* ------------------------------------------------------------------ entry */

struct validation *validation_load_doc(struct arena *a, struct json_doc *doc)
{
	static const char *const keys[] = {"format", "version", "kind", "name", "description",
	                                   "rows", NULL};
	struct jv root, v, rows, row;
	if (!jv_root(doc, &root) || !jv_header(&root, VALIDATION_FORMAT, VALIDATION_VERSION))
		return NULL;
	size_t errors_before = doc->diags->errors;
	struct validation *val = arena_alloc(a, sizeof(*val));
	if (!val)
		return NULL;
	struct vloader L = {.a = a, .v = val, .diags = doc->diags,
	                    .dir = util_path_dir(a, doc->file)};
	val->file = arena_strdup(a, doc->file);
	bool ok = jv_keys(&root, keys);
	ok = req_text(&L, &root, "name", &val->name) && ok;
	ok = opt_text(&L, &root, "description", &val->description) && ok;
	int kind = -1;
	if (jv_need(&root, "kind", &v))
		kind = jv_enum(&v, validation_kind_names, VALIDATION_KIND_COUNT);
	bool have_rows = jv_need(&root, "rows", &rows) && jv_is_array(&rows, 1, 1 << 16);
	if (kind < 0 || !have_rows)
		return NULL;
	val->kind = (enum validation_kind)kind;
	val->n_rows = jv_len(&rows);
	if (val->kind == VALIDATION_TRAINING)
		val->training = arena_calloc(a, (size_t)val->n_rows, sizeof(*val->training));
	else
		val->collectives = arena_calloc(a, (size_t)val->n_rows, sizeof(*val->collectives));
	if (!val->training && !val->collectives)
		return NULL;
	int i = 0;
	for (bool more = jv_first(&rows, &row); more; more = jv_next(&rows, &row), i++) {
		if (val->kind == VALIDATION_TRAINING)
			ok = read_training_row(&L, &row, &val->training[i]) && ok;
		else
			ok = read_collective_row(&L, &row, &val->collectives[i]) && ok;
	}
	for (int k = 0; k < val->n_rows; k++)
		for (int j = 0; j < k; j++) {
			const char *nk = val->training ? val->training[k].name : val->collectives[k].name;
			const char *nj = val->training ? val->training[j].name : val->collectives[j].name;
			if (nk && nj && !strcmp(nk, nj)) {
				jv_at(&rows, k, &row);
				jv_get(&row, "name", &v);
				jv_error(&v, "row name \"%s\" is used twice (first in rows[%d])", nk, j);
				ok = false;
				break;
			}
		}
	return ok && doc->diags->errors == errors_before ? val : NULL;
}

struct validation *validation_load(struct arena *a, const char *path, struct diag_list *diags)
{
	struct json_doc doc;
	struct validation *v = NULL;
	if (json_doc_load(&doc, path, diags))
		v = validation_load_doc(a, &doc);
	json_doc_free(&doc);
	return v;
}
