/* load.c — the scenario loader and validator.
 *
 * A scenario names a model (file or inline object) and a topology (file),
 * the devices it uses, shard() configurations by op name in MindSpore's
 * tuple form or seed 004's Layout form, the planners to run, training
 * settings and simulation options. Everything that can be checked without
 * planning is checked here, every problem reported in one run. Paths are
 * relative to the scenario's folder. No hot path.
 */
#include <cjson/cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scenarios-int.h"

const char *const planner_names[PLANNER_COUNT] = {
	"propagate", "recursive", "data-parallel", "megatron", "megatron-search",
};
const char *const schedule_names[SCHED_COUNT] = {"gpipe", "1f1b", "interleaved-1f1b", "zb-h1",
                                                 "zb-v",  "zb-h2", "dualpipe"};
const char *const recompute_names[RECOMPUTE_COUNT] = {"none", "selective", "full", "op"};
const char *const zero3_impl_names[ZERO3_IMPL_COUNT] = {"collectives", "deepspeed-2021", "fsdp"};
_Static_assert(ZERO3_IMPL_COUNT == 3, "zero3_impl_names must list every implementation");
const char *const framework_names[FRAMEWORK_COUNT] = {"megatron", "pytorch"};
_Static_assert(FRAMEWORK_COUNT == 2, "framework_names must list every family");
const char *const cross_entropy_names[XENT_COUNT] = {"vocab-parallel", "vocab-parallel-jit",
                                                     "mindformers", "fused", "pytorch"};
_Static_assert(XENT_COUNT == 5, "cross_entropy_names must list every implementation");
const char *const moe_dispatcher_names[MOE_DISPATCH_COUNT] = {"alltoall", "hybridep", "deepep"};
_Static_assert(MOE_DISPATCH_COUNT == 3, "moe_dispatcher_names must list every dispatcher");
const char *const fidelity_names[FIDELITY_COUNT] = {"coarse", "step", "phase",
                                                    "representative"};
const char *const collective_algo_names[COLL_COUNT] = {
	"auto", "ring", "tree", "halving-doubling", "hierarchical", "direct", "nvls", "pipeline",
};
_Static_assert(PLANNER_COUNT == 5, "planner_names must list every planner");
_Static_assert(SCHED_COUNT == 7, "schedule_names must list every schedule");
_Static_assert(RECOMPUTE_COUNT == 4, "recompute_names must list every mode");
const char *const precision_names[PRECISION_COUNT] = {
        "auto", "megatron-bf16", "megatron-fp16", "fp32", "mindformers",
        "mindformers-fp32-weights", "fp8-hybrid", "fp8-e4m3"};
_Static_assert(PRECISION_COUNT == 8, "precision_names must list every recipe");
const char *const state_dtype_names[STATE_DTYPE_COUNT] = {"fp32", "fp16", "bf16", "fp8", "none"};
_Static_assert(STATE_DTYPE_COUNT == 5, "state_dtype_names must list every dtype");

int state_dtype_bytes(enum state_dtype d)
{
	return d == STATE_NONE ? 0 : d == STATE_FP8 ? 1 : d == STATE_FP32 ? 4 : 2;
}
_Static_assert(FIDELITY_COUNT == 4, "fidelity_names must list every fidelity");
_Static_assert(COLL_COUNT == 8, "collective_algo_names must list every algorithm");

struct loader {
	struct arena *a;
	struct scenario *s;
	struct diag_list *diags;
	const char *dir; /* the scenario's folder */
	int64_t stage_devices; /* devices per pipeline stage, 0 if unknown */
};

/* ------------------------------------------------------------ referenced files */

/* {"hf_config": "path", "seq": N, "micro_batch": B, "name": "...",
 * "fused_qkv": bool, "fused_gate_up": bool}: a Hugging Face config.json
 * (models/hf.c), with the generator's fused projections when asked
 * (docs/formats.md, "Fused QKV"). */
static struct graph *load_hf_model(struct loader *L, const struct jv *v)
{
	static const char *const keys[] = {"hf_config", "seq", "micro_batch", "name", "fused_qkv",
	                                   "fused_gate_up", NULL};
	struct jv f;
	const char *rel = NULL, *name = NULL;
	int64_t seq = 0, mb = 0;
	bool fused = false, gate_up = false;
	bool ok = jv_keys(v, keys);
	ok = jv_req_string(v, "hf_config", &rel) && ok;
	ok = jv_opt_int(v, "seq", JR_RANGE(1, 1e12), 0, &seq) && ok;
	ok = jv_opt_int(v, "micro_batch", JR_RANGE(1, 1e12), 0, &mb) && ok;
	ok = jv_opt_bool(v, "fused_qkv", false, &fused) && ok;
	ok = jv_opt_bool(v, "fused_gate_up", false, &gate_up) && ok;
	if (jv_get(v, "name", &f))
		ok = jv_string(&f, &name) && ok;
	if (!ok)
		return NULL;
	const char *path = util_path_join(L->a, L->dir, rel);
	L->s->model_file = path;
	size_t before = L->diags->errors, at = L->diags->count;
	struct graph *g = path ? graph_hf_load(L->a, path, seq, mb, L->diags) : NULL;
	jv_get(v, "hf_config", &f);
	if (!g && L->diags->errors == before)
		jv_error(&f, "cannot load the Hugging Face config \"%s\"", rel);
	jv_named_here(&f, at);
	if (g && gate_up && g->gen && !model_gen_uses(g->gen->kind, "fused_gate_up")) {
		jv_get(v, "fused_gate_up", &f);
		jv_error(&f, "the config is read as a \"%s\" generator, whose MLP has no gate "
		         "projection (fused_gate_up is for the gated MLPs of \"llama\")",
		         model_gen_names[g->gen->kind]);
		return NULL;
	}
	if (g && (fused || gate_up) && g->gen) {
		/* the config's generator again, with the projections fused */
		struct model_gen gen = *g->gen;
		gen.fused_qkv = fused;
		gen.fused_gate_up = gate_up;
		struct graph *h = graph_generate_at(L->a, &gen, L->diags, v);
		if (h) {
			h->name = g->name;
			h->description = g->description;
			h->file = g->file;
		}
		g = h;
	}
	if (g && name)
		g->name = arena_strdup(L->a, name);
	if (g && seq <= 0 && g->gen)
		jv_note(v, "no \"seq\": the sequence is the config's longest context, %lld tokens; "
		        "give the sequence the run trains on", (long long)g->gen->seq);
	return g;
}

static struct graph *load_model(struct loader *L, const struct jv *v)
{
	if (v->node && cJSON_IsString(v->node)) {
		const char *rel;
		if (!jv_string(v, &rel))
			return NULL;
		const char *path = util_path_join(L->a, L->dir, rel);
		L->s->model_file = path;
		size_t before = L->diags->errors, at = L->diags->count;
		struct graph *g = path ? graph_load(L->a, path, L->diags) : NULL;
		if (!g && L->diags->errors == before)
			jv_error(v, "cannot load the model \"%s\"", rel);
		jv_named_here(v, at);
		return g;
	}
	if (v->node && cJSON_IsObject(v->node) &&
	    cJSON_GetObjectItemCaseSensitive(v->node, "hf_config"))
		return load_hf_model(L, v);
	if (v->node && cJSON_IsObject(v->node))
		return graph_load_value(L->a, v);
	char b[64];
	jv_error(v, "expected a model file name or a model object, got %s",
	         jv_describe(v, b, sizeof b));
	return NULL;
}

static struct topology *load_topology(struct loader *L, const struct jv *v)
{
	const char *rel;
	if (!jv_string(v, &rel))
		return NULL;
	const char *path = util_path_join(L->a, L->dir, rel);
	L->s->topology_file = path;
	size_t before = L->diags->errors, at = L->diags->count;
	struct topology *t = path ? topo_load(L->a, path, L->diags) : NULL;
	if (!t && L->diags->errors == before)
		jv_error(v, "cannot load the topology \"%s\"", rel);
	jv_named_here(v, at);
	return t;
}

/* --------------------------------------------------------------- shard configs */

static const struct tensor *op_input(const struct graph *g, int op, int i)
{
	return &g->tensors[g->ops[op].in[i]];
}

/* Tuple form: [[2,1],[1,4]]. */
static bool read_tuple(struct loader *L, struct shard_config *c, const struct jv *v)
{
	const struct graph *g = L->s->graph;
	const struct op *op = &g->ops[c->op];
	if (!jv_is_array(v, 0, 0x7fffffff))
		return false;
	if (jv_len(v) != op->n_in) {
		jv_error(v, "%s \"%s\" has %d input%s, the strategy gives %d", op_kind_name(op->kind),
		         op->name, op->n_in, op->n_in == 1 ? "" : "s", jv_len(v));
		return false;
	}
	c->cuts = arena_calloc(L->a, (size_t)op->n_in, sizeof(*c->cuts));
	if (!c->cuts)
		return false;
	bool ok = true;
	for (int i = 0; i < op->n_in; i++) {
		struct jv in;
		jv_at(v, i, &in);
		const struct tensor *t = op_input(g, c->op, i);
		if (!jv_is_array(&in, 0, 0x7fffffff)) {
			ok = false;
			continue;
		}
		if (jv_len(&in) != t->rank) {
			jv_error(&in, "input %d (%s) has rank %d, the strategy gives %d cut%s", i, t->name,
			         t->rank, jv_len(&in), jv_len(&in) == 1 ? "" : "s");
			ok = false;
			continue;
		}
		int64_t used = 1;
		bool in_ok = true;
		for (int d = 0; d < t->rank; d++) {
			struct jv cut;
			jv_at(&in, d, &cut);
			int64_t k;
			if (!jv_int(&cut, JR_RANGE(1, 1 << 30), &k)) {
				in_ok = false;
				continue;
			}
			if (t->dims[d] % k) {
				jv_error(&cut, "cut %lld does not divide dimension %d of %s (size %lld)",
				         (long long)k, d, t->name, (long long)t->dims[d]);
				in_ok = false;
				continue;
			}
			c->cuts[i][d] = k;
			if (!util_mul_i64(used, k, &used))
				used = INT64_MAX;
		}
		if (in_ok && L->stage_devices && (used > L->stage_devices || L->stage_devices % used)) {
			jv_error(&in, "input %d is cut into %lld slices, which does not divide the %lld "
			         "devices of a stage", i, (long long)used, (long long)L->stage_devices);
			in_ok = false;
		}
		ok = ok && in_ok;
	}
	return ok;
}

static int axis_index(const struct shard_config *c, const char *name)
{
	for (int i = 0; i < c->n_dev_axes; i++)
		if (!strcmp(c->axis_names[i], name))
			return i;
	return -1;
}

static bool is_none(const struct jv *v)
{
	return v->node && (cJSON_IsNull(v->node) ||
	                   (cJSON_IsString(v->node) && !strcmp(v->node->valuestring, "None")));
}

/* One axis name of a Layout map; adds it to dim d of m. */
static bool read_axis(const struct shard_config *c, const struct jv *v, struct shard_tensor_map *m,
                      int d, bool used[SHARD_MAX_AXES])
{
	const char *name;
	if (!jv_string(v, &name))
		return false;
	int ax = axis_index(c, name);
	if (ax < 0) {
		char list[256] = "";
		size_t o = 0;
		for (int i = 0; i < c->n_dev_axes && o + 40 < sizeof list; i++)
			o += (size_t)snprintf(list + o, sizeof list - o, "%s\"%s\"", i ? ", " : "",
			                      c->axis_names[i]);
		jv_error(v, "unknown device axis \"%s\" (the layout names %s, or \"None\")", name, list);
		return false;
	}
	if (used[ax]) {
		jv_error(v, "device axis \"%s\" is used twice in one tensor", name);
		return false;
	}
	used[ax] = true;
	m->axes[d][m->n_axes[d]++] = ax;
	return true;
}

/* One tensor's map in the Layout form: ["mp", ["sp","dp"]]. */
static bool read_map(const struct shard_config *c, const struct jv *v, const struct tensor *t,
                     struct shard_tensor_map *m)
{
	if (!jv_is_array(v, 0, 0x7fffffff))
		return false;
	if (jv_len(v) != t->rank) {
		jv_error(v, "%s has rank %d, the layout maps %d dimension%s", t->name, t->rank,
		         jv_len(v), jv_len(v) == 1 ? "" : "s");
		return false;
	}
	m->rank = t->rank;
	bool used[SHARD_MAX_AXES] = {false};
	bool ok = true;
	for (int d = 0; d < t->rank; d++) {
		struct jv dim;
		jv_at(v, d, &dim);
		if (is_none(&dim))
			continue;
		if (dim.node && cJSON_IsArray(dim.node)) {
			if (!jv_is_array(&dim, 1, SHARD_MAX_AXES)) {
				ok = false;
				continue;
			}
			for (int k = 0; k < jv_len(&dim); k++) {
				struct jv ax;
				jv_at(&dim, k, &ax);
				ok = read_axis(c, &ax, m, d, used) && ok;
			}
		} else {
			ok = read_axis(c, &dim, m, d, used) && ok;
		}
		int64_t slices = 1;
		for (int k = 0; k < m->n_axes[d]; k++)
			slices *= c->device_matrix[m->axes[d][k]];
		if (ok && t->dims[d] % slices) {
			jv_error(&dim, "%lld slices do not divide dimension %d of %s (size %lld)",
			         (long long)slices, d, t->name, (long long)t->dims[d]);
			ok = false;
		}
	}
	return ok;
}

/* Layout form: {"device_matrix": [...], "alias": [...], "in": [...], "out": [...]}. */
static bool read_layout(struct loader *L, struct shard_config *c, const struct jv *v)
{
	static const char *const keys[] = {"device_matrix", "alias", "in", "out", NULL};
	const struct graph *g = L->s->graph;
	const struct op *op = &g->ops[c->op];
	if (!jv_open(v, keys))
		return false;
	struct jv dm, al, in, out;
	bool have = jv_need(v, "device_matrix", &dm);
	have = jv_need(v, "alias", &al) && have;
	have = jv_need(v, "in", &in) && have;
	if (!have)
		return false;
	if (!jv_is_array(&dm, 1, SHARD_MAX_AXES) || !jv_is_array(&al, 1, SHARD_MAX_AXES))
		return false;
	if (jv_len(&al) != jv_len(&dm)) {
		jv_error(&al, "expected %d axis names (one per device-matrix axis), got %d",
		         jv_len(&dm), jv_len(&al));
		return false;
	}
	int n_axes = jv_len(&dm);
	int64_t total = 1;
	bool ok = true;
	/* n_dev_axes counts the names recorded so far: axis_index looks only
	 * at those. */
	c->n_dev_axes = 0;
	for (int i = 0; i < n_axes; i++) {
		struct jv e, n;
		jv_at(&dm, i, &e);
		jv_at(&al, i, &n);
		ok = jv_int(&e, JR_RANGE(1, 1 << 20), &c->device_matrix[i]) && ok;
		const char *name = NULL;
		c->axis_names[i] = "";
		c->n_dev_axes = i + 1;
		if (!jv_string(&n, &name)) {
			ok = false;
			continue;
		}
		if (!strcmp(name, "None")) {
			jv_error(&n, "\"None\" means \"not split\" and cannot name an axis");
			ok = false;
		} else if (axis_index(c, name) >= 0) {
			jv_error(&n, "axis name \"%s\" is used twice", name);
			ok = false;
		}
		c->axis_names[i] = arena_strdup(L->a, name);
		if (ok && !util_mul_i64(total, c->device_matrix[i], &total))
			total = INT64_MAX;
	}
	if (!ok)
		return false;
	if (L->stage_devices && total != L->stage_devices) {
		jv_error(&dm, "the device matrix holds %lld devices, a stage has %lld", (long long)total,
		         (long long)L->stage_devices);
		ok = false;
	}
	if (!jv_is_array(&in, 0, 0x7fffffff))
		return false;
	if (jv_len(&in) != op->n_in) {
		jv_error(&in, "%s \"%s\" has %d input%s, the layout gives %d", op_kind_name(op->kind),
		         op->name, op->n_in, op->n_in == 1 ? "" : "s", jv_len(&in));
		return false;
	}
	c->in_maps = arena_calloc(L->a, (size_t)op->n_in, sizeof(*c->in_maps));
	if (!c->in_maps)
		return false;
	for (int i = 0; i < op->n_in; i++) {
		struct jv e;
		jv_at(&in, i, &e);
		ok = read_map(c, &e, op_input(g, c->op, i), &c->in_maps[i]) && ok;
	}
	if (jv_get(v, "out", &out)) {
		if (!jv_is_array(&out, op->n_out, op->n_out))
			return false;
		c->n_out = op->n_out;
		c->out_maps = arena_calloc(L->a, (size_t)op->n_out, sizeof(*c->out_maps));
		if (!c->out_maps)
			return false;
		for (int i = 0; i < op->n_out; i++) {
			struct jv e;
			jv_at(&out, i, &e);
			ok = read_map(c, &e, &g->tensors[op->out[i]], &c->out_maps[i]) && ok;
		}
	}
	return ok;
}

static void suggest_op(const struct graph *g, const struct jv *v, const char *name)
{
	int best = -1, best_d = 1000;
	for (int i = 0; i < g->n_ops; i++) {
		int d = util_edit_distance(g->ops[i].name, name);
		if (d < best_d) {
			best_d = d;
			best = i;
		}
	}
	if (best >= 0 && best_d <= 3)
		jv_error(v, "no op named \"%s\" in model %s (did you mean \"%s\"?)", name, g->name,
		         g->ops[best].name);
	else
		jv_error(v, "no op named \"%s\" in model %s", name, g->name);
}

/* One shard() entry `e` (an op name `name` and its strategy `val`, the
 * same value for the scenario's "shard" and the tuple of a MindSpore
 * strategy file), stated in `file`. */
static bool add_shard(struct loader *L, const struct jv *e, const char *name, const struct jv *val,
                      const char *file)
{
	for (int k = 0; k < L->s->n_shards; k++)
		if (!strcmp(L->s->shards[k].op_name, name)) {
			jv_error(e, "op \"%s\" is configured twice (also at %s:%d)", name,
			         L->s->shards[k].file, L->s->shards[k].line);
			return false;
		}
	int op = graph_find_op(L->s->graph, name);
	if (op < 0) {
		suggest_op(L->s->graph, e, name);
		return false;
	}
	struct shard_config *c = &L->s->shards[L->s->n_shards];
	c->op_name = L->s->graph->ops[op].name;
	c->op = op;
	c->file = file;
	c->line = e->line;
	c->path = arena_strdup(L->a, e->path);
	c->n_in = L->s->graph->ops[op].n_in;
	bool good;
	if (val->node && cJSON_IsObject(val->node)) {
		c->form = SHARD_LAYOUT;
		good = read_layout(L, c, val);
	} else if (val->node && cJSON_IsArray(val->node)) {
		c->form = SHARD_TUPLE;
		good = read_tuple(L, c, val);
	} else {
		char b[64];
		jv_error(val, "expected a strategy ([[2,1],[1,4]]) or a layout object, got %s",
		         jv_describe(val, b, sizeof b));
		good = false;
	}
	if (good)
		L->s->n_shards++;
	return good;
}

/* Room for n more shard configs. */
static bool grow_shards(struct loader *L, int n)
{
	struct shard_config *v = arena_grow(L->a, L->s->shards, (size_t)L->s->n_shards,
	                                    (size_t)(L->s->n_shards + n + 1), sizeof(*v));
	if (!v)
		return false;
	L->s->shards = v;
	return true;
}

static bool read_shards(struct loader *L, const struct jv *v)
{
	if (!jv_is_object(v))
		return false;
	int n = jv_len(v);
	if (!grow_shards(L, n))
		return false;
	bool ok = true;
	for (int i = 0; i < n; i++) {
		struct jv e;
		jv_at(v, i, &e);
		ok = add_shard(L, &e, jv_key(&e), &e, L->s->file) && ok;
	}
	return ok;
}

/* One input's entry of MindSpore's "parallel_layout_value_item":
 * {"alias_name": [...], "dev_matrix": [...], "interleaved_parallel": false,
 * "tensor_map": [[2], [1, 0], [-1]]}: per dimension the device-matrix axes
 * counted from the right, major first, -1 for not split. The first input
 * sets the op's device matrix; the others must repeat it. */
static bool read_ms_tensor(struct loader *L, struct shard_config *c, const struct jv *v, int i)
{
	static const char *const keys[] = {"alias_name", "dev_matrix", "interleaved_parallel",
	                                   "tensor_map", NULL};
	const struct tensor *t = op_input(L->s->graph, c->op, i);
	struct jv dm, al, tm, il, e;
	if (!jv_open(v, keys))
		return false;
	bool have = jv_need(v, "dev_matrix", &dm);
	have = jv_need(v, "alias_name", &al) && have;
	have = jv_need(v, "tensor_map", &tm) && have;
	if (!have || !jv_is_array(&dm, 1, SHARD_MAX_AXES) || !jv_is_array(&al, 1, SHARD_MAX_AXES))
		return false;
	bool interleaved = false;
	if (jv_get(v, "interleaved_parallel", &il) && jv_bool(&il, &interleaved) && interleaved) {
		jv_error(&il, "interleaved parallelism is not modelled");
		return false;
	}
	int n = jv_len(&dm);
	if (jv_len(&al) != n) {
		jv_error(&al, "expected %d axis names (one per device-matrix axis), got %d", n,
		         jv_len(&al));
		return false;
	}
	bool ok = true;
	int64_t total = 1;
	for (int k = 0; k < n; k++) {
		int64_t size;
		const char *name;
		jv_at(&dm, k, &e);
		if (!jv_int(&e, JR_RANGE(1, 1 << 20), &size))
			return false;
		jv_at(&al, k, &e);
		if (!jv_string(&e, &name))
			return false;
		if (i == 0) {
			c->device_matrix[k] = size;
			c->axis_names[k] = arena_strdup(L->a, name);
			for (int j = 0; j < k; j++)
				if (!strcmp(c->axis_names[j], name)) {
					jv_error(&e, "axis name \"%s\" is used twice", name);
					ok = false;
				}
		} else if (n != c->n_dev_axes || size != c->device_matrix[k] ||
		           strcmp(name, c->axis_names[k])) {
			jv_error(&dm, "input %d has another device matrix than input 0: shardlab gives an "
			         "op one device matrix", i);
			return false;
		}
		if (!util_mul_i64(total, size, &total))
			total = INT64_MAX;
	}
	if (i == 0) {
		c->n_dev_axes = n;
		if (L->stage_devices && total != L->stage_devices) {
			jv_error(&dm, "the device matrix holds %lld devices, a stage has %lld",
			         (long long)total, (long long)L->stage_devices);
			return false;
		}
	}
	if (!ok || !jv_is_array(&tm, 0, GRAPH_MAX_RANK))
		return false;
	if (jv_len(&tm) != t->rank) {
		jv_error(&tm, "%s has rank %d, the layout maps %d dimension%s", t->name, t->rank,
		         jv_len(&tm), jv_len(&tm) == 1 ? "" : "s");
		return false;
	}
	struct shard_tensor_map *m = &c->in_maps[i];
	m->rank = t->rank;
	bool used[SHARD_MAX_AXES] = {false};
	for (int d = 0; d < t->rank; d++) {
		struct jv dim, ax;
		jv_at(&tm, d, &dim);
		bool list = dim.node && cJSON_IsArray(dim.node);
		if (list && !jv_is_array(&dim, 1, SHARD_MAX_AXES))
			return false;
		int64_t slices = 1;
		for (int k = 0; k < (list ? jv_len(&dim) : 1); k++) {
			int64_t x;
			if (list)
				jv_at(&dim, k, &ax);
			else
				ax = dim;
			if (!jv_int(&ax, JR_RANGE(-1, n - 1), &x))
				return false;
			if (x < 0)
				continue;
			int axis = n - 1 - (int)x;
			if (used[axis]) {
				jv_error(&ax, "device axis %lld is used twice in one tensor", (long long)x);
				return false;
			}
			used[axis] = true;
			m->axes[d][m->n_axes[d]++] = axis;
			slices *= c->device_matrix[axis];
		}
		if (t->dims[d] % slices) {
			jv_error(&dim, "%lld slices do not divide dimension %d of %s (size %lld)",
			         (long long)slices, d, t->name, (long long)t->dims[d]);
			return false;
		}
	}
	return true;
}

/* An op's "parallel_layout_value_item": {"0": input 0's layout, ...}. */
static bool read_ms_layout(struct loader *L, struct shard_config *c, const struct jv *v)
{
	const struct op *op = &L->s->graph->ops[c->op];
	if (!jv_is_object(v))
		return false;
	if (jv_len(v) != op->n_in) {
		jv_error(v, "%s \"%s\" has %d input%s, the layout gives %d", op_kind_name(op->kind),
		         op->name, op->n_in, op->n_in == 1 ? "" : "s", jv_len(v));
		return false;
	}
	c->form = SHARD_LAYOUT;
	c->in_maps = arena_calloc(L->a, (size_t)op->n_in, sizeof(*c->in_maps));
	if (!c->in_maps)
		return false;
	for (int i = 0; i < op->n_in; i++) {
		char key[16];
		struct jv e;
		snprintf(key, sizeof key, "%d", i);
		if (!jv_need(v, key, &e) || !read_ms_tensor(L, c, &e, i))
			return false;
	}
	return true;
}

/* The strategy file's pipeline stages as the pipeline's cuts, when the
 * scenario states none: in graph order every change of stage starts a
 * model chunk (chunk c on stage c mod PP, as an interleaved schedule
 * places them), and PP x virtual stages chunks of every op staged are
 * the cuts, so that a plan exported with its stages comes back with the
 * same partition. Otherwise the chunks balance by cost, as without. */
static void stages_as_cuts(struct loader *L, const int *stage_of)
{
	struct training *t = &L->s->training;
	int n = L->s->graph->n_ops;
	int64_t chunks = t->pipeline_stages * (t->virtual_stages > 0 ? t->virtual_stages : 1);
	if (t->n_cuts || chunks < 2 || chunks > n)
		return;
	int *cuts = arena_alloc(L->a, (size_t)chunks * sizeof(int));
	if (!cuts)
		return;
	int k = 0, prev = -1;
	for (int i = 0; i < n; i++) {
		if (stage_of[i] < 0)
			return; /* an op without a stage */
		if (i > 0 && stage_of[i] != prev) {
			if (k == chunks - 1)
				return;
			cuts[k++] = i;
		}
		if (stage_of[i] != (int)((k) % t->pipeline_stages))
			return; /* not chunk k's stage */
		prev = stage_of[i];
	}
	if (k != chunks - 1)
		return;
	t->n_cuts = k;
	t->cuts = cuts;
}

/* "mindspore_strategy": a file in the JSON that MindSpore's
 * set_op_strategy_config(mode="SAVE") writes (docs/formats.md):
 *   {"current_stage": 0, "parallel_strategy_item":
 *     {"OP": {"stage": 0, "parallel_strategy": [[2, 1], [1, 4]]}, ...}}
 * Each entry becomes a shard() configuration of the op named OP. */
static bool read_ms_strategy(struct loader *L, const struct jv *v)
{
	static const char *const top[] = {"current_stage", "parallel_strategy_item",
	                                  "parallel_layout_value_item", NULL};
	static const char *const item[] = {"stage", "parallel_strategy", NULL};
	const char *rel;
	if (!jv_string(v, &rel))
		return false;
	const char *path = util_path_join(L->a, L->dir, rel);
	struct json_doc doc;
	if (!path)
		return false;
	size_t before = L->diags->errors;
	bool ok = json_doc_load(&doc, path, L->diags);
	struct jv root, items, f;
	int64_t stage;
	ok = ok && jv_root(&doc, &root) && jv_keys(&root, top);
	if (ok && jv_get(&root, "current_stage", &f))
		ok = jv_int(&f, JR_RANGE(0, 1 << 30), &stage);
	ok = ok && jv_need(&root, "parallel_strategy_item", &items) && jv_is_object(&items);
	int n = ok ? jv_len(&items) : 0;
	/* Ops given as layouts first: their tuple in parallel_strategy_item
	 * says less (which ranks repeat a slice is the layout's). */
	struct jv layouts;
	bool have_layouts = ok && jv_get(&root, "parallel_layout_value_item", &layouts);
	if (have_layouts && !jv_is_object(&layouts))
		ok = have_layouts = false;
	ok = ok && grow_shards(L, n + (have_layouts ? jv_len(&layouts) : 0));
	have_layouts = have_layouts && ok;
	const char *file = arena_strdup(L->a, path);
	bool ready = ok;
	for (int i = 0; have_layouts && i < jv_len(&layouts); i++) {
		struct jv e;
		jv_at(&layouts, i, &e);
		const char *name = jv_key(&e);
		int op = graph_find_op(L->s->graph, name);
		if (op < 0) {
			suggest_op(L->s->graph, &e, name);
			ok = false;
			continue;
		}
		bool dup = false;
		for (int k = 0; k < L->s->n_shards && !dup; k++)
			dup = L->s->shards[k].op == op;
		if (dup) {
			jv_error(&e, "op \"%s\" is configured twice", name);
			ok = false;
			continue;
		}
		struct shard_config *c = &L->s->shards[L->s->n_shards];
		*c = (struct shard_config){.op_name = L->s->graph->ops[op].name, .op = op,
		                           .file = file, .line = e.line,
		                           .path = arena_strdup(L->a, e.path),
		                           .n_in = L->s->graph->ops[op].n_in};
		if (read_ms_layout(L, c, &e))
			L->s->n_shards++;
		else
			ok = false;
	}
	int n_ops = L->s->graph->n_ops;
	int *stage_of = ready ? arena_alloc(L->a, ((size_t)n_ops + 1) * sizeof(int)) : NULL;
	for (int i = 0; stage_of && i < n_ops; i++)
		stage_of[i] = -1;
	for (int i = 0; ready && i < n; i++) {
		struct jv e, strat, lay;
		jv_at(&items, i, &e);
		bool good = jv_open(&e, item) && jv_need(&e, "parallel_strategy", &strat);
		if (good && jv_get(&e, "stage", &f)) {
			good = jv_int(&f, JR_RANGE(0, 1 << 30), &stage);
			int op = good && stage_of ? graph_find_op(L->s->graph, jv_key(&e)) : -1;
			if (op >= 0)
				stage_of[op] = (int)stage;
		}
		if (good && have_layouts && jv_get(&layouts, jv_key(&e), &lay))
			continue;
		ok = good && add_shard(L, &e, jv_key(&e), &strat, file) && ok;
	}
	if (ok && stage_of)
		stages_as_cuts(L, stage_of);
	json_doc_free(&doc);
	if (!ok && L->diags->errors == before)
		jv_error(v, "cannot read the MindSpore strategy \"%s\"", rel);
	return ok && L->diags->errors == before;
}

/* -------------------------------------------------------------- settings */

static bool read_planners(struct loader *L, const struct jv *obj)
{
	struct jv v;
	if (!jv_get(obj, "planners", &v)) {
		L->s->planners[0] = PLANNER_PROPAGATE;
		L->s->n_planners = 1;
		return true;
	}
	if (!jv_is_array(&v, 1, PLANNER_COUNT))
		return false;
	bool ok = true;
	for (int i = 0; i < jv_len(&v); i++) {
		struct jv e;
		jv_at(&v, i, &e);
		int k = jv_enum(&e, planner_names, PLANNER_COUNT);
		if (k < 0) {
			ok = false;
			continue;
		}
		for (int j = 0; j < L->s->n_planners; j++)
			if (L->s->planners[j] == (enum planner_kind)k) {
				jv_error(&e, "planner \"%s\" is listed twice", planner_names[k]);
				ok = false;
				k = -1;
				break;
			}
		if (k >= 0)
			L->s->planners[L->s->n_planners++] = (enum planner_kind)k;
	}
	return ok;
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

/* training.pipeline_cuts: the op that starts each model chunk after the
 * first, in graph order; pipeline_stages x virtual_stages - 1 of them. */
static bool read_cuts(struct loader *L, const struct jv *v)
{
	struct training *t = &L->s->training;
	struct jv arr, e;
	if (!jv_get(v, "pipeline_cuts", &arr))
		return true;
	int64_t want = t->pipeline_stages * t->virtual_stages - 1;
	if (!jv_is_array(&arr, 0, 1 << 20))
		return false;
	if (jv_len(&arr) != want) {
		jv_error(&arr, "%d cuts for %lld model chunks (pipeline_stages x virtual_stages): "
		         "%lld expected", jv_len(&arr), (long long)(want + 1), (long long)want);
		return false;
	}
	t->n_cuts = (int)want;
	t->cuts = arena_calloc(L->a, (size_t)want + 1, sizeof(int));
	if (!t->cuts)
		return false;
	bool ok = true;
	int k = 0, prev = 0;
	for (bool more = jv_first(&arr, &e); more; more = jv_next(&arr, &e), k++) {
		const char *name;
		if (!jv_string(&e, &name)) {
			ok = false;
			continue;
		}
		int op = L->s->graph ? graph_find_op(L->s->graph, name) : -1;
		if (op < 0 && L->s->graph) {
			jv_error(&e, "no op named \"%s\" in %s", name, L->s->graph->name);
			ok = false;
		} else if (op <= prev && L->s->graph) {
			jv_error(&e, "\"%s\" does not come after the previous cut in graph order "
			         "(every chunk needs at least one op)", name);
			ok = false;
		}
		t->cuts[k] = op;
		prev = op > prev ? op : prev;
	}
	return ok;
}

/* Whether a precision recipe trains parameters of dtype d (MindFormers'
 * compute_dtype: float16 on Ascend 910A, float16 or bfloat16 on 910B). */
static bool precision_takes(enum precision_recipe r, enum dtype d)
{
	switch (r) {
	case PRECISION_MEGATRON_BF16:
	case PRECISION_FP8_HYBRID:
	case PRECISION_FP8_E4M3:
		return d == DT_BF16;
	case PRECISION_FP32:
		return d == DT_FP32;
	case PRECISION_MEGATRON_FP16:
		return d == DT_FP16;
	case PRECISION_MINDFORMERS:
	case PRECISION_MINDFORMERS_FP32_WEIGHTS:
		return d == DT_FP16 || d == DT_BF16;
	default:
		return true;
	}
}

/* The dtype of the graph's first floating-point parameter; false when it
 * has none. */
static bool param_dtype(const struct graph *g, enum dtype *out)
{
	for (int i = 0; g && i < g->n_tensors; i++) {
		enum dtype d = g->tensors[i].dtype;
		if (g->tensors[i].role == TENSOR_PARAM && (d == DT_FP32 || d == DT_FP16 || d == DT_BF16)) {
			*out = d;
			return true;
		}
	}
	return false;
}

/* training.stage_layers' rules: stages entries, each at least one layer
 * and a multiple of the virtual stages, summing to the layers. */
static int64_t listed_stage_layers(int64_t layers, int64_t stages, int64_t v,
                                   const int64_t *list, int64_t stage, char *why,
                                   size_t why_size)
{
	int64_t sum = 0;
	for (int64_t k = 0; k < stages; k++) {
		if (list[k] < 1 || list[k] % v) {
			if (v > 1)
				snprintf(why, why_size, "stage %lld's %lld layers are not a positive "
				         "multiple of its %lld virtual stages", (long long)k,
				         (long long)list[k], (long long)v);
			else
				snprintf(why, why_size, "stage %lld's %lld layers are not at least 1",
				         (long long)k, (long long)list[k]);
			return -1;
		}
		sum += list[k];
	}
	if (layers > 0 && sum != layers) {
		snprintf(why, why_size, "the stages' layers sum to %lld, not the model's %lld",
		         (long long)sum, (long long)layers);
		return -1;
	}
	return list[stage];
}

int64_t scenario_stage_layers(int64_t layers, int64_t stages, int64_t virtual, int64_t first,
                              int64_t last, const int64_t *list, int64_t stage, char *why,
                              size_t why_size)
{
	char dummy[8];
	if (!why) {
		why = dummy;
		why_size = sizeof dummy;
	}
	int64_t v = virtual > 1 ? virtual : 1, rest = layers, middle = stages;
	if (list)
		return listed_stage_layers(layers, stages, v, list, stage, why, why_size);
	if (stages < 2 && (first > 0 || last > 0)) {
		snprintf(why, why_size, "an uneven first or last stage needs 2 pipeline stages or more");
		return -1;
	}
	const int64_t end[2] = {first, last};
	for (int k = 0; k < 2; k++) {
		if (end[k] <= 0)
			continue;
		if (end[k] % v) {
			snprintf(why, why_size, "the %s stage's %lld layers do not divide into its %lld "
			         "virtual stages", k ? "last" : "first", (long long)end[k], (long long)v);
			return -1;
		}
		rest -= end[k];
		middle--;
	}
	if (rest < 0 || (rest > 0) != (middle > 0)) {
		snprintf(why, why_size, "%lld layers are left for the %lld stages between the first and "
		         "the last (of %lld layers): both must be 0 or neither", (long long)rest,
		         (long long)middle, (long long)layers);
		return -1;
	}
	if (middle > 0 && (rest % middle || (rest / middle) % v)) {
		snprintf(why, why_size, "the %lld layers left for the %lld stages between the first and "
		         "the last do not split evenly over them%s", (long long)rest, (long long)middle,
		         v > 1 ? " and their virtual stages" : "");
		return -1;
	}
	if (stage == 0 && first > 0)
		return first;
	if (stage == stages - 1 && last > 0)
		return last;
	return middle > 0 ? rest / middle : 0;
}

int64_t scenario_accounted_layers(int64_t layers, int64_t stages, int64_t virtual, bool embedding,
                                  bool loss, int64_t chunk, char *why, size_t why_size)
{
	char dummy[8];
	if (!why) {
		why = dummy;
		why_size = sizeof dummy;
	}
	int64_t p = stages > 1 ? stages : 1, v = virtual > 1 ? virtual : 1;
	int64_t units = layers + embedding + loss;
	if (units % p) {
		snprintf(why, why_size, "%lld layers%s%s do not divide into %lld pipeline stages",
		         (long long)layers, embedding ? " + the embedding" : "",
		         loss ? " + the loss" : "", (long long)p);
		return -1;
	}
	if ((units / p) % v) {
		snprintf(why, why_size, "each stage's %lld layers (the embedding and the loss counted) "
		         "do not divide into its %lld virtual stages", (long long)(units / p),
		         (long long)v);
		return -1;
	}
	int64_t n = units / (p * v);
	if (chunk == 0 && embedding)
		n--;
	if (chunk == p * v - 1 && loss)
		n--;
	if (n < 0) {
		snprintf(why, why_size, "one model chunk of %lld units cannot hold both the embedding "
		         "and the loss", (long long)(units / (p * v)));
		return -1;
	}
	return n;
}

/* scenarios.h */
const char *scenario_moe_a2a_overlap_refusal(const struct training *t)
{
	if (t->expert_parallel < 2)
		return "the all-to-alls overlapped are expert parallelism's: set expert_parallel "
		       "above 1";
	if (t->schedule != SCHED_1F1B && t->schedule != SCHED_INTERLEAVED_1F1B)
		return "it pairs 1F1B's forwards and backwards: schedule \"1f1b\" or "
		       "\"interleaved-1f1b\" (\"dualpipe\" overlaps its own)";
	if (t->pipeline_stages > 1 && t->virtual_stages < 2)
		return "under a pipeline it needs virtual stages: set virtual_stages above 1, or "
		       "pipeline_stages 1";
	if (t->recompute == RECOMPUTE_FULL)
		return "it refuses full recomputation: recompute \"none\" or \"selective\"";
	return NULL;
}

/* Megatron-Core's TransformerConfig.__post_init__ (core_r0.8.0 to
 * core_v0.15.0, megatron/core/transformer/transformer_config.py):
 * cpu_offloading_num_layers in [0, num_layers) ("CPU offloading can be done
 * only for layers less than ..."), "Currently there is no support for
 * Pipeline parallelism with CPU offloading", "CPU offloading does not work
 * when activation recomputation is enabled". */
enum scenario_offload_refusal scenario_offload_refusal(int64_t offload, int64_t layers,
                                                       int64_t stages,
                                                       enum recompute_mode recompute,
                                                       char *why, size_t why_size)
{
	char dummy[8];
	if (!why) {
		why = dummy;
		why_size = sizeof dummy;
	}
	if (offload < 1)
		return SCENARIO_OFFLOAD_OK;
	if (layers < 1) {
		snprintf(why, why_size, "the activations offloaded are whole transformer layers'; the "
		         "model has none (a generator's \"layers\")");
		return SCENARIO_OFFLOAD_NO_LAYERS;
	}
	if (offload >= layers) {
		snprintf(why, why_size, "Megatron-Core offloads fewer layers than the model's %lld "
		         "(--cpu-offloading-num-layers < --num-layers), not %lld", (long long)layers,
		         (long long)offload);
		return SCENARIO_OFFLOAD_ALL_LAYERS;
	}
	if (stages > 1) {
		snprintf(why, why_size, "Megatron-Core has no activation offload with pipeline "
		         "parallelism (--cpu-offloading needs --pipeline-model-parallel-size 1): %lld "
		         "pipeline stages", (long long)stages);
		return SCENARIO_OFFLOAD_PIPELINE;
	}
	if (recompute != RECOMPUTE_NONE) {
		snprintf(why, why_size, "Megatron-Core has no activation offload with recomputation "
		         "(--cpu-offloading refuses --recompute-granularity): recompute \"%s\", not "
		         "\"none\"", recompute_names[recompute]);
		return SCENARIO_OFFLOAD_RECOMPUTE;
	}
	return SCENARIO_OFFLOAD_OK;
}

/* The rebalancing rule's heap: stages by their time with one more unit,
 * ties to the lower stage. */
struct stage_key {
	double t;
	int s;
};

static bool key_before(struct stage_key a, struct stage_key b)
{
	return a.t < b.t || (a.t == b.t && a.s < b.s);
}

static void heap_down(struct stage_key *h, int n, int i)
{
	for (;;) {
		int l = 2 * i + 1, r = l + 1, m = i;
		if (l < n && key_before(h[l], h[m]))
			m = l;
		if (r < n && key_before(h[r], h[m]))
			m = r;
		if (m == i)
			return;
		struct stage_key x = h[i];
		h[i] = h[m];
		h[m] = x;
		i = m;
	}
}

bool scenario_rebalance_layers(int64_t layers, int stages, int64_t unit, const double *slow,
                               const int64_t *cap, int64_t *out)
{
	int64_t u = unit > 1 ? unit : 1;
	if (stages < 1 || layers % u || layers < (int64_t)stages * u)
		return false;
	for (int s = 0; s < stages; s++) {
		out[s] = u;
		if (cap && cap[s] < u)
			return false;
	}
	/* one unit at a time to the least (n_s + u) slow_s: a heap keeps the
	 * choice O(log P) a unit */
	struct stage_key *h = malloc((size_t)stages * sizeof *h);
	if (!h)
		return false;
	int n = 0;
	for (int s = 0; s < stages; s++)
		if (!cap || out[s] + u <= cap[s])
			h[n++] = (struct stage_key){(double)(out[s] + u) * (slow[s] > 0 ? slow[s] : 1), s};
	for (int i = n / 2 - 1; i >= 0; i--)
		heap_down(h, n, i);
	int64_t left = layers - (int64_t)stages * u;
	for (; left > 0 && n > 0; left -= u) {
		int s = h[0].s;
		out[s] += u;
		if (cap && out[s] + u > cap[s])
			h[0] = h[--n];
		else
			h[0].t = (double)(out[s] + u) * (slow[s] > 0 ? slow[s] : 1);
		heap_down(h, n, 0);
	}
	free(h);
	return left == 0;
}

/* training.stage_layers: an array of pipeline_stages positive integers
 * (the rules against the model's layers in check_uneven). */
static bool read_stage_layers(struct loader *L, const struct jv *v)
{
	struct training *t = &L->s->training;
	struct jv arr, e;
	if (!jv_get(v, "stage_layers", &arr))
		return true;
	if (!jv_is_array(&arr, 1, 1 << 20))
		return false;
	if (jv_len(&arr) != t->pipeline_stages) {
		jv_error(&arr, "%d entries for %lld pipeline stages: one per stage expected",
		         jv_len(&arr), (long long)t->pipeline_stages);
		return false;
	}
	int64_t *list = arena_calloc(L->a, (size_t)t->pipeline_stages, sizeof(int64_t));
	if (!list)
		return false;
	bool ok = true;
	int k = 0;
	for (bool more = jv_first(&arr, &e); more; more = jv_next(&arr, &e), k++)
		ok = jv_int(&e, JR_RANGE(1, 1e6), &list[k]) && ok;
	t->stage_layers = ok ? list : NULL;
	return ok;
}

void scenario_stage_slowdowns(const struct topology *t, int64_t devices, int64_t stages,
                              double *out)
{
	int64_t per = stages > 0 ? devices / stages : devices;
	for (int64_t s = 0; s < stages; s++) {
		out[s] = 1;
		for (int64_t r = s * per; r < (s + 1) * per; r++)
			out[s] = fmax(out[s], topo_rank_slowdown(t, r));
	}
}

const char *scenario_rebalance_accounted(const struct training *t)
{
	if (!t->embedding_in_split && !t->loss_in_split)
		return NULL;
	return "rebalanced layers run as Megatron-LM's --pipeline-model-parallel-layout, which "
	       "Megatron-Core does not take beside account_for_embedding_in_pipeline_split or "
	       "account_for_loss_in_pipeline_split: give one or the other";
}

/* training.rebalance: stage_layers by the rebalancing rule from the
 * faults (the topology's slowdowns), after they are read. */
static bool rebalance_training(struct loader *L, const struct jv *root)
{
	struct scenario *s = L->s;
	struct training *t = &s->training;
	struct jv tv, f;
	jv_get(root, "training", &tv);
	jv_get(&tv, "rebalance", &f);
	if (t->stage_layers || t->first_stage_layers > 0 || t->last_stage_layers > 0 ||
	    t->n_cuts > 0) {
		jv_error(&f, "rebalance sets every stage's layers itself: give it or stage_layers, "
		         "first_stage_layers, last_stage_layers or pipeline_cuts, not both");
		return false;
	}
	if (scenario_rebalance_accounted(t)) {
		jv_error(&f, "%s", scenario_rebalance_accounted(t));
		return false;
	}
	int64_t layers = s->graph && s->graph->gen ? s->graph->gen->layers : 0;
	int64_t P = t->pipeline_stages, unit = t->virtual_stages > 1 ? t->virtual_stages : 1;
	if (P < 2 || layers < 1 || t->schedule == SCHED_ZB_V || t->schedule == SCHED_DUALPIPE) {
		jv_error(&f, "rebalancing moves layers between pipeline stages: it needs 2 stages or "
		         "more (not %lld), a generated model's layers and a schedule that takes "
		         "stage_layers (not \"zb-v\" or \"dualpipe\")", (long long)P);
		return false;
	}
	double *slow = arena_calloc(L->a, (size_t)P, sizeof(double));
	int64_t *list = arena_calloc(L->a, (size_t)P, sizeof(int64_t));
	if (!slow || !list)
		return false;
	scenario_stage_slowdowns(s->topo, s->devices, P, slow);
	if (!scenario_rebalance_layers(layers, (int)P, unit, slow, NULL, list)) {
		jv_error(&f, "the model's %lld layers do not split over %lld pipeline stages of at "
		         "least %lld layers each, a multiple of the virtual stages",
		         (long long)layers, (long long)P, (long long)unit);
		return false;
	}
	t->stage_layers = list;
	return true;
}

/* training.account_for_embedding_in_pipeline_split / account_for_loss_in_
 * pipeline_split: Megatron-Core's refusals (transformer_config.py
 * __post_init__: not with the uneven first and last stages nor with the
 * layout; the layers with the embedding and the loss divide by the stages
 * and a stage's by its virtual stages). */
static bool check_accounted(struct loader *L, const struct jv *v)
{
	const struct training *t = &L->s->training;
	struct jv f;
	jv_get(v, t->embedding_in_split ? "account_for_embedding_in_pipeline_split"
	                                : "account_for_loss_in_pipeline_split", &f);
	if (t->n_cuts > 0) {
		jv_error(&f, "pipeline_cuts places every cut itself: give it or the embedding and loss "
		         "accounting, not both");
		return false;
	}
	if (t->first_stage_layers > 0 || t->last_stage_layers > 0 || t->stage_layers) {
		jv_error(&f, "Megatron-Core does not count the embedding and the loss as layers with "
		         "%s: give one or the other", t->stage_layers ? "stage_layers (its "
		         "--pipeline-model-parallel-layout)" : "first_stage_layers / last_stage_layers");
		return false;
	}
	if (t->schedule == SCHED_DUALPIPE) {
		jv_error(&f, "the \"dualpipe\" schedule splits the model by its own rule; the embedding "
		         "and loss accounting needs another schedule");
		return false;
	}
	const struct model_gen *g = L->s->graph ? L->s->graph->gen : NULL;
	int64_t layers = g && g->layers > 0 ? g->layers : 0;
	char why[200];
	if (layers > 0 && scenario_accounted_layers(layers, t->pipeline_stages, t->virtual_stages,
	                                            t->embedding_in_split, t->loss_in_split, 0,
	                                            why, sizeof why) < 0) {
		jv_error(&f, "Megatron-Core refuses this split of %lld layers over %lld pipeline "
		         "stages: %s", (long long)layers, (long long)t->pipeline_stages, why);
		return false;
	}
	return true;
}

/* training.first_stage_layers / last_stage_layers and stage_layers:
 * Megatron-LM's rules against the generated model's layers (an explicit
 * graph's are counted when it is split, planner/cost/pipeline.c). */
static bool check_uneven(struct loader *L, const struct jv *v)
{
	const struct training *t = &L->s->training;
	bool ends = t->first_stage_layers > 0 || t->last_stage_layers > 0;
	bool accounted = t->embedding_in_split || t->loss_in_split;
	if (!ends && !t->stage_layers && !accounted)
		return true;
	struct jv f;
	if (accounted)
		return check_accounted(L, v);
	jv_get(v, t->stage_layers ? "stage_layers"
	          : t->first_stage_layers > 0 ? "first_stage_layers" : "last_stage_layers", &f);
	if (t->n_cuts > 0) {
		jv_error(&f, "pipeline_cuts places every cut itself: give it or the stages' layers, "
		         "not both");
		return false;
	}
	if (t->stage_layers && ends) {
		jv_error(&f, "stage_layers gives every stage's layers: give it or first_stage_layers / "
		         "last_stage_layers, not both (Megatron-LM's --pipeline-model-parallel-layout "
		         "cannot be set with them)");
		return false;
	}
	/* ZB-V splits each stage's layers evenly over its two chunks (d and
	 * 2P - 1 - d), as the virtual stages; DualPipe's halves mirror the
	 * model and take no list */
	if (t->stage_layers && t->schedule == SCHED_DUALPIPE) {
		jv_error(&f, "the \"%s\" schedule places two chunks of equal layers on each stage: "
		         "stage_layers needs \"1f1b\", \"gpipe\", \"interleaved-1f1b\", \"zb-h1\", "
		         "\"zb-h2\" or \"zb-v\"", schedule_names[t->schedule]);
		return false;
	}
	const struct model_gen *g = L->s->graph ? L->s->graph->gen : NULL;
	int64_t layers = g && g->layers > 0 ? g->layers : 0;
	char why[200];
	if ((layers || t->pipeline_stages < 2 || t->stage_layers) &&
	    scenario_stage_layers(layers, t->pipeline_stages, t->virtual_stages,
	                          t->first_stage_layers, t->last_stage_layers, t->stage_layers, 0,
	                          why, sizeof why) < 0) {
		if (t->stage_layers)
			jv_error(&f, "the list does not split the model's %lld layers over %lld pipeline "
			         "stages: %s", (long long)layers, (long long)t->pipeline_stages, why);
		else
			jv_error(&f, "Megatron-LM refuses this split of %lld layers over %lld pipeline "
			         "stages: %s", (long long)layers, (long long)t->pipeline_stages, why);
		return false;
	}
	return true;
}

static bool read_training(struct loader *L, const struct jv *obj)
{
	static const char *const keys[] = {"global_batch",  "micro_batches", "pipeline_stages",
	                                   "virtual_stages", "schedule",      "recompute",
	                                   "zero_stage",     "dtype",         "gradient_bucket_mb",
	                                   "sequence_parallel", "pipeline_cuts",
	                                   "expert_parallel", "tensor_parallel",
	                                   "context_parallel", "flash_attention",
	                                   "gradient_accumulation_fusion", "overlap_grad_reduce",
	                                   "tp_comm_overlap", "tp_comm_overlap_slices",
	                                   "overlap_param_gather", "precision",
	                                   "optimizer_offload", "first_stage_layers",
	                                   "last_stage_layers", "stage_layers", "rebalance",
	                                   "grad_reduce_in_bf16", "fp8_param_gather",
	                                   "activation_offload_layers",
	                                   "account_for_embedding_in_pipeline_split",
	                                   "account_for_loss_in_pipeline_split", "zero3_impl",
	                                   "cross_entropy", "recompute_layers",
	                                   "pipeline_scatter_gather", "main_params_dtype",
	                                   "exp_avg_dtype", "exp_avg_sq_dtype", "framework",
	                                   "moe_dispatcher", "moe_a2a_overlap", NULL};
	struct training *t = &L->s->training;
	int sched = SCHED_1F1B, rec = RECOMPUTE_NONE, prec = PRECISION_AUTO,
	    z3 = ZERO3_COLLECTIVES, xent = XENT_VOCAB_PARALLEL, mp = STATE_FP32, ea = STATE_FP32,
	    eas = STATE_FP32, fw = FRAMEWORK_MEGATRON, disp = MOE_DISPATCH_ALLTOALL;
	int64_t zero = 0;
	t->dtype = L->s->graph && L->s->graph->n_ops ? L->s->graph->ops[0].dtype : DT_FP32;
	struct jv v;
	t->gradient_bucket_bytes = 25.0 * 1024 * 1024; /* PyTorch DDP's default */
	t->overlap_grad_reduce = true;                  /* and its behaviour */
	if (!jv_get(obj, "training", &v)) {
		t->global_batch = t->micro_batches = t->pipeline_stages = t->virtual_stages = 1;
		t->expert_parallel = t->context_parallel = 1;
		t->schedule = SCHED_1F1B;
		return true;
	}
	if (!jv_open(&v, keys))
		return false;
	bool ok = jv_opt_int(&v, "global_batch", JR_RANGE(1, SCENARIO_MAX_GLOBAL_BATCH), 1,
	                     &t->global_batch);
	ok = jv_opt_int(&v, "micro_batches", JR_RANGE(1, SCENARIO_MAX_MICRO_BATCHES), 1,
	                &t->micro_batches) && ok;
	ok = jv_opt_int(&v, "pipeline_stages", JR_RANGE(1, 1e6), 1, &t->pipeline_stages) && ok;
	ok = jv_opt_int(&v, "virtual_stages", JR_RANGE(1, 1e4), 1, &t->virtual_stages) && ok;
	ok = opt_enum(&v, "schedule", schedule_names, SCHED_COUNT, SCHED_1F1B, &sched) && ok;
	ok = opt_enum(&v, "recompute", recompute_names, RECOMPUTE_COUNT, RECOMPUTE_NONE, &rec) && ok;
	ok = jv_opt_int(&v, "zero_stage", JR_RANGE(0, 3), 0, &zero) && ok;
	ok = opt_enum(&v, "zero3_impl", zero3_impl_names, ZERO3_IMPL_COUNT, ZERO3_COLLECTIVES, &z3) &&
	     ok;
	ok = opt_enum(&v, "cross_entropy", cross_entropy_names, XENT_COUNT, XENT_VOCAB_PARALLEL,
	              &xent) && ok;
	ok = opt_enum(&v, "framework", framework_names, FRAMEWORK_COUNT, FRAMEWORK_MEGATRON, &fw) &&
	     ok;
	ok = opt_enum(&v, "moe_dispatcher", moe_dispatcher_names, MOE_DISPATCH_COUNT,
	              MOE_DISPATCH_ALLTOALL, &disp) && ok;
	ok = opt_enum(&v, "precision", precision_names, PRECISION_COUNT, PRECISION_AUTO, &prec) && ok;
	/* Megatron-LM's --main-params-dtype takes fp32 or fp16, apex's
	 * DistributedFusedAdam any 16-bit dtype or none (its dtype the model's):
	 * no FP8 master copy; the moments take FP8 (Transformer Engine's
	 * FusedAdam) and are always there */
	ok = opt_enum(&v, "main_params_dtype", state_dtype_names, STATE_DTYPE_COUNT, STATE_FP32, &mp) &&
	     ok;
	ok = opt_enum(&v, "exp_avg_dtype", state_dtype_names, STATE_NONE, STATE_FP32, &ea) && ok;
	ok = opt_enum(&v, "exp_avg_sq_dtype", state_dtype_names, STATE_NONE, STATE_FP32, &eas) && ok;
	if (mp == STATE_FP8) {
		struct jv f;
		jv_get(&v, "main_params_dtype", &f);
		jv_error(&f, "a master copy is fp32, fp16, bf16 or none (the optimizer steps the "
		         "16-bit weights themselves), not fp8");
		ok = false;
		mp = STATE_FP32;
	}
	t->main_params_dtype = (enum state_dtype)mp;
	t->exp_avg_dtype = (enum state_dtype)ea;
	t->exp_avg_sq_dtype = (enum state_dtype)eas;
	ok = jv_opt_bool(&v, "sequence_parallel", false, &t->sequence_parallel) && ok;
	ok = jv_opt_bool(&v, "flash_attention", false, &t->flash_attention) && ok;
	bool fused_accumulation = true;
	ok = jv_opt_bool(&v, "gradient_accumulation_fusion", true, &fused_accumulation) && ok;
	t->separate_grad_accumulation = !fused_accumulation;
	ok = jv_opt_bool(&v, "overlap_grad_reduce", true, &t->overlap_grad_reduce) && ok;
	ok = jv_opt_bool(&v, "tp_comm_overlap", false, &t->tp_comm_overlap) && ok;
	ok = jv_opt_bool(&v, "overlap_param_gather", false, &t->overlap_param_gather) && ok;
	ok = jv_opt_bool(&v, "optimizer_offload", false, &t->optimizer_offload) && ok;
	ok = jv_opt_bool(&v, "grad_reduce_in_bf16", false, &t->grad_reduce_in_bf16) && ok;
	ok = jv_opt_bool(&v, "fp8_param_gather", false, &t->fp8_param_gather) && ok;
	ok = jv_opt_bool(&v, "rebalance", false, &t->rebalance) && ok;
	ok = jv_opt_bool(&v, "moe_a2a_overlap", false, &t->moe_a2a_overlap) && ok;
	ok = jv_opt_bool(&v, "account_for_embedding_in_pipeline_split", false,
	                 &t->embedding_in_split) && ok;
	ok = jv_opt_bool(&v, "account_for_loss_in_pipeline_split", false, &t->loss_in_split) && ok;
	bool scatter_gather = true;
	ok = jv_opt_bool(&v, "pipeline_scatter_gather", true, &scatter_gather) && ok;
	t->whole_sends = !scatter_gather;
	ok = jv_opt_int(&v, "expert_parallel", JR_RANGE(1, 1 << 16), 1, &t->expert_parallel) && ok;
	ok = jv_opt_int(&v, "tensor_parallel", JR_RANGE(1, 1 << 20), 0, &t->tensor_parallel) && ok;
	ok = jv_opt_int(&v, "context_parallel", JR_RANGE(1, 1 << 16), 1, &t->context_parallel) && ok;
	ok = jv_opt_int(&v, "first_stage_layers", JR_RANGE(1, 1e6), 0, &t->first_stage_layers) && ok;
	ok = jv_opt_int(&v, "last_stage_layers", JR_RANGE(1, 1e6), 0, &t->last_stage_layers) && ok;
	ok = jv_opt_int(&v, "activation_offload_layers", JR_RANGE(0, 1e6), 0,
	                &t->activation_offload_layers) && ok;
	ok = jv_opt_int(&v, "recompute_layers", JR_RANGE(1, 1e6), 0, &t->recompute_layers) && ok;
	ok = jv_opt_int(&v, "tp_comm_overlap_slices", JR_RANGE(2, 64), 0,
	                &t->tp_comm_overlap_slices) && ok;
	struct jv mb;
	t->micro_batches_set = jv_get(&v, "micro_batches", &mb);
	double bucket_mb;
	ok = jv_opt_number(&v, "gradient_bucket_mb", JR_RANGE(0, 1e6), 25, &bucket_mb) && ok;
	t->gradient_bucket_bytes = bucket_mb * 1024 * 1024;
	struct jv dt;
	if (jv_get(&v, "dtype", &dt))
		ok = jv_dtype(&dt, &t->dtype) && ok;
	t->schedule = (enum pipeline_schedule)sched;
	t->recompute = (enum recompute_mode)rec;
	t->zero_stage = (int)zero;
	t->zero3_impl = (enum zero3_impl)z3;
	t->cross_entropy = (enum cross_entropy)xent;
	t->framework = (enum framework)fw;
	t->moe_dispatcher = (enum moe_dispatcher)disp;
	t->precision = (enum precision_recipe)prec;
	/* Relations between fields; a field that failed to read stands at its
	 * default here, so each problem is reported once. */
	struct jv f;
	if (t->global_batch % t->micro_batches) {
		jv_get(&v, "micro_batches", &f);
		jv_error(&f, "%lld micro-batches do not divide the global batch of %lld",
		         (long long)t->micro_batches, (long long)t->global_batch);
		ok = false;
	}
	if (t->tp_comm_overlap && !t->sequence_parallel) {
		jv_get(&v, "tp_comm_overlap", &f);
		jv_error(&f, "the tensor-parallel communication overlapped is sequence parallelism's "
		         "(Megatron-LM's --tp-comm-overlap needs --sequence-parallel): set "
		         "sequence_parallel true");
		ok = false;
	}
	/* the slices are how the overlap is run: named with it */
	if (jv_get(&v, "tp_comm_overlap_slices", &f) && !t->tp_comm_overlap) {
		jv_error(&f, "the slices are those of the tensor-parallel communication's overlap "
		         "(MindFormers' fine_grain_interleave): set tp_comm_overlap true");
		ok = false;
	}
	if (t->overlap_param_gather && zero != 1 && zero != 2) {
		jv_get(&v, "overlap_param_gather", &f);
		jv_error(&f, "the parameter all-gather overlapped is the distributed optimizer's "
		         "(Megatron-LM's --overlap-param-gather needs --use-distributed-optimizer): "
		         "zero_stage 1 or 2, not %lld", (long long)zero);
		ok = false;
	}
	/* the combined 1F1B's conditions (scenario_moe_a2a_overlap_refusal) */
	const char *a2a_why = scenario_moe_a2a_overlap_refusal(t);
	if (t->moe_a2a_overlap && a2a_why && jv_get(&v, "moe_a2a_overlap", &f)) {
		jv_error(&f, "Megatron-Core's --overlap-moe-expert-parallel-comm: %s", a2a_why);
		ok = false;
	}
	/* Megatron-LM's block method recomputes whole layers (arguments.py:
	 * --recompute-method needs --recompute-granularity full) */
	if (jv_get(&v, "recompute_layers", &f) && t->recompute != RECOMPUTE_FULL) {
		jv_error(&f, "the layers recomputed are recomputed whole (Megatron-LM's "
		         "--recompute-method block needs --recompute-granularity full): recompute "
		         "\"full\", not \"%s\"", recompute_names[t->recompute]);
		ok = false;
	} else if (jv_get(&v, "recompute_layers", &f) && t->zero_stage == 3 &&
	           t->zero3_impl == ZERO3_DEEPSPEED_2021) {
		jv_error(&f, "DeepSpeed's stage 3 is priced with every layer recomputed (its "
		         "re-gathers, docs/cost-models.md): leave recompute_layers out");
		ok = false;
	}
	/* an implementation of ZeRO-3 is named for ZeRO-3 only */
	if (jv_get(&v, "zero3_impl", &f) && zero != 3) {
		jv_error(&f, "the implementation of ZeRO-3 is named for ZeRO-3: zero_stage 3, "
		         "not %lld", (long long)zero);
		ok = false;
	}
	enum dtype have;
	if (param_dtype(L->s->graph, &have) && !precision_takes(t->precision, have)) {
		jv_get(&v, "precision", &f);
		jv_error(&f, "the recipe \"%s\" trains %s parameters; the model's are %s",
		         precision_names[prec],
		         t->precision == PRECISION_MEGATRON_BF16 || t->precision == PRECISION_FP8_HYBRID ||
		                 t->precision == PRECISION_FP8_E4M3
		             ? "bf16"
		         : t->precision == PRECISION_FP32        ? "fp32"
		         : t->precision == PRECISION_MEGATRON_FP16 ? "fp16"
		                                                 : "fp16 or bf16",
		         dtype_names[have]);
		ok = false;
	}
	/* a master copy's dtype needs a recipe that keeps one: Megatron-LM's
	 * mixed-precision ones (the fp32 and MindFormers recipes step the
	 * weights themselves) */
	if (t->main_params_dtype != STATE_FP32) {
		enum dtype pd = DT_FP32;
		bool known = param_dtype(L->s->graph, &pd);
		bool master = t->precision == PRECISION_MEGATRON_BF16 ||
		              t->precision == PRECISION_MEGATRON_FP16 || t->precision == PRECISION_FP8_HYBRID ||
		              t->precision == PRECISION_FP8_E4M3 ||
		              (t->precision == PRECISION_AUTO && known && pd != DT_FP32);
		if (!master) {
			jv_get(&v, "main_params_dtype", &f);
			jv_error(&f, "a master copy in %s needs a recipe that keeps one (precision "
			         "\"megatron-bf16\", \"megatron-fp16\", \"fp8-hybrid\" or \"fp8-e4m3\", or "
			         "\"auto\" with 16-bit parameters), not \"%s\"%s%s%s",
			         state_dtype_names[t->main_params_dtype], precision_names[prec],
			         known ? " on " : "", known ? dtype_names[pd] : "",
			         known ? " parameters" : "");
			ok = false;
		}
	}
	if (t->grad_reduce_in_bf16) {
		enum dtype pd = DT_FP32;
		bool known = param_dtype(L->s->graph, &pd);
		bool bf16 = t->precision == PRECISION_MEGATRON_BF16 || t->precision == PRECISION_FP8_HYBRID ||
		            t->precision == PRECISION_FP8_E4M3 ||
		            (t->precision == PRECISION_AUTO && known && pd == DT_BF16);
		if (!bf16) {
			jv_get(&v, "grad_reduce_in_bf16", &f);
			jv_error(&f, "gradients reduced in bf16 are Megatron-LM's bf16 recipes' "
			         "(--grad-reduce-in-bf16 with --bf16): precision \"megatron-bf16\", "
			         "\"fp8-hybrid\" or \"fp8-e4m3\", or \"auto\" with bf16 parameters, not "
			         "\"%s\"%s%s%s", precision_names[prec],
			         known ? " on " : "", known ? dtype_names[pd] : "",
			         known ? " parameters" : "");
			ok = false;
		}
	}
	/* Megatron-LM's arguments.py: "--fp8-param-gather only supported with
	 * distributed optimizer, torch fsdp2, megatron fsdp" (core_v0.19.0), and
	 * only FP8 weights can be gathered in FP8 */
	if (t->fp8_param_gather &&
	    ((t->precision != PRECISION_FP8_HYBRID && t->precision != PRECISION_FP8_E4M3) ||
	     t->zero_stage < 1)) {
		jv_get(&v, "fp8_param_gather", &f);
		jv_error(&f, "FP8 parameters (--fp8-param-gather) are an FP8 recipe's (precision "
		         "\"fp8-hybrid\" or \"fp8-e4m3\") under the distributed optimizer or FSDP "
		         "(zero_stage 1 to 3), not precision \"%s\" with zero_stage %d",
		         precision_names[prec], t->zero_stage);
		ok = false;
	}
	const struct topology *topo = L->s->topo;
	if ((t->precision == PRECISION_FP8_HYBRID || t->precision == PRECISION_FP8_E4M3) && topo &&
	    topo->device.peak_fp8_flops <= 0) {
		jv_get(&v, "precision", &f);
		jv_error(&f, "the recipe \"%s\" runs the GEMMs in FP8, and the %s of %s has no FP8 "
		         "rate (its device.peak_tflops has no \"fp8\")",
		         precision_names[prec], topo->device.kind, topo->name);
		ok = false;
	}
	if (t->virtual_stages > 1 && sched != SCHED_INTERLEAVED_1F1B &&
	    !(sched == SCHED_ZB_V && t->virtual_stages == 2)) {
		jv_get(&v, "virtual_stages", &f);
		if (sched == SCHED_ZB_V)
			jv_error(&f, "the \"zb-v\" schedule places 2 chunks on each stage, not %lld",
			         (long long)t->virtual_stages);
		else
			jv_error(&f, "virtual stages need the \"interleaved-1f1b\" schedule");
		ok = false;
	}
	/* ZB-V: chunk d and chunk 2 PP - 1 - d on stage d, each of whole layers
	 * (sail-sg/zero-bubble-pipeline-parallelism: the layers of a stage
	 * split into its two chunks evenly) */
	if (sched == SCHED_ZB_V)
		t->virtual_stages = 2;
	int64_t layers = L->s->graph && L->s->graph->gen ? L->s->graph->gen->layers : 0;
	/* (a split given by the stages' layers or with the embedding and the
	 * loss counted is checked by its own rules below) */
	struct jv listed;
	bool split_given = t->first_stage_layers > 0 || t->last_stage_layers > 0 ||
	                   t->embedding_in_split || t->loss_in_split ||
	                   jv_get(&v, "stage_layers", &listed);
	if (sched == SCHED_ZB_V && layers > 0 && !split_given && layers % (2 * t->pipeline_stages)) {
		jv_get(&v, "schedule", &f);
		jv_error(&f, "the \"zb-v\" schedule places 2 chunks of whole layers on each stage: "
		         "%lld layers do not split into 2 x %lld pipeline stages",
		         (long long)layers, (long long)t->pipeline_stages);
		ok = false;
	}
	/* DualPipe feeds micro-batches from both ends: half from each, one
	 * half of the stages mirroring the other (DeepSeek-V3, section 3.2.1) */
	if (sched == SCHED_DUALPIPE && t->pipeline_stages % 2) {
		jv_get(&v, "schedule", &f);
		jv_error(&f, "the \"dualpipe\" schedule needs an even number of pipeline stages, "
		         "not %lld", (long long)t->pipeline_stages);
		ok = false;
	}
	if (L->s->devices && (t->pipeline_stages > L->s->devices || L->s->devices % t->pipeline_stages)) {
		jv_get(&v, "pipeline_stages", &f);
		jv_error(&f, "%lld pipeline stages do not divide the %lld devices",
		         (long long)t->pipeline_stages, (long long)L->s->devices);
		ok = false;
	}
	/* The graph is one micro-batch of every data-parallel replica
	 * together: its batch fixes the micro-batch count. */
	int64_t gb = L->s->graph && L->s->graph->batch > 0 ? L->s->graph->batch : 0;
	if (ok && gb && t->micro_batches_set && t->micro_batches * gb != t->global_batch) {
		jv_get(&v, "micro_batches", &f);
		jv_error(&f, "the model's batch of %lld samples makes %lld micro-batches of the "
		         "global batch of %lld, not %lld", (long long)gb,
		         (long long)(t->global_batch / gb), (long long)t->global_batch,
		         (long long)t->micro_batches);
		ok = false;
	}
	int64_t m = gb && t->global_batch % gb == 0 ? t->global_batch / gb : 0;
	if (ok && m > SCENARIO_MAX_MICRO_BATCHES) {
		jv_get(&v, "global_batch", &f);
		jv_error(&f, "the model's batch of %lld samples makes %lld micro-batches of the global "
		         "batch of %lld, more than the %d an iteration may have", (long long)gb,
		         (long long)m, (long long)t->global_batch, SCENARIO_MAX_MICRO_BATCHES);
		ok = false;
	}
	if (ok && m && sched == SCHED_INTERLEAVED_1F1B && t->virtual_stages > 1 &&
	    m % t->pipeline_stages) {
		jv_get(&v, "virtual_stages", &f);
		jv_error(&f, "the interleaved schedule needs the micro-batches (%lld) to be a multiple "
		         "of the pipeline stages (%lld)", (long long)m, (long long)t->pipeline_stages);
		ok = false;
	}
	if (ok && m && sched == SCHED_DUALPIPE && m % 2) {
		jv_get(&v, "schedule", &f);
		jv_error(&f, "the \"dualpipe\" schedule feeds half the micro-batches from each end of "
		         "the pipeline: %lld micro-batches do not halve", (long long)m);
		ok = false;
	}
	/* deepseek-ai/DualPipe's step asserts num_chunks >= num_ranks * 2: its
	 * main F&B steps number m/2 - P + h + 1 on a stage h from the nearer
	 * end, at least one on the ends */
	if (ok && m && sched == SCHED_DUALPIPE && m < 2 * t->pipeline_stages) {
		jv_get(&v, "schedule", &f);
		jv_error(&f, "the \"dualpipe\" schedule needs at least twice as many micro-batches as "
		         "pipeline stages (%lld), not %lld", (long long)(2 * t->pipeline_stages),
		         (long long)m);
		ok = false;
	}
	if (ok && L->s->graph && t->pipeline_stages * t->virtual_stages > L->s->graph->n_ops) {
		jv_get(&v, "pipeline_stages", &f);
		jv_error(&f, "%lld model chunks for %d ops", (long long)(t->pipeline_stages *
		         t->virtual_stages), L->s->graph->n_ops);
		ok = false;
	}
	int64_t experts = L->s->graph && L->s->graph->gen ? L->s->graph->gen->experts : 0;
	if (t->expert_parallel > 1 && (experts < 1 || experts % t->expert_parallel)) {
		jv_get(&v, "expert_parallel", &f);
		if (experts < 1)
			jv_error(&f, "expert parallelism %lld needs a mixture-of-experts model (a "
			         "generator with experts)", (long long)t->expert_parallel);
		else
			jv_error(&f, "expert parallelism %lld does not divide the model's %lld experts",
			         (long long)t->expert_parallel, (long long)experts);
		ok = false;
	}
	/* torchtitan's per-op policy checkpoints transformer layers: on a
	 * graph that names none (a model file without "layers.N." ops) it
	 * recomputes nothing */
	if (t->recompute == RECOMPUTE_OP && L->s->graph) {
		bool named = false;
		for (int i = 0; i < L->s->graph->n_ops && !named; i++)
			named = graph_op_layer(&L->s->graph->ops[i]) >= 0;
		if (!named) {
			jv_get(&v, "recompute", &f);
			jv_note(&f, "\"op\" checkpoints transformer layers (ops named \"layers.N.\", as "
			        "the generators name them); this model names none, so nothing is "
			        "recomputed");
		}
	}
	/* Megatron-Core's refusals of activation offload
	 * (scenario_offload_refusal) */
	char offload_why[200];
	if (scenario_offload_refusal(t->activation_offload_layers, layers, t->pipeline_stages,
	                             t->recompute, offload_why, sizeof offload_why) !=
	    SCENARIO_OFFLOAD_OK) {
		jv_get(&v, "activation_offload_layers", &f);
		jv_error(&f, "%s", offload_why);
		ok = false;
	}
	if (ok && m)
		t->micro_batches = m;
	if (ok)
		ok = read_cuts(L, &v);
	if (ok)
		ok = read_stage_layers(L, &v);
	if (ok)
		ok = check_uneven(L, &v);
	return ok;
}

static bool read_propagation(struct loader *L, const struct jv *obj)
{
	static const char *const keys[] = {"all_devices", NULL};
	struct jv v;
	L->s->propagation.all_devices = true;
	if (!jv_get(obj, "propagation", &v))
		return true;
	if (!jv_open(&v, keys))
		return false;
	return jv_opt_bool(&v, "all_devices", true, &L->s->propagation.all_devices);
}

static bool read_simulation(struct loader *L, const struct jv *obj)
{
	static const char *const keys[] = {"fidelity", "collective_algo", NULL};
	struct jv v;
	int fid = FIDELITY_COARSE, algo = COLL_AUTO;
	bool ok = true;
	if (jv_get(obj, "simulation", &v)) {
		if (!jv_open(&v, keys))
			return false;
		ok = opt_enum(&v, "fidelity", fidelity_names, FIDELITY_COUNT, FIDELITY_COARSE, &fid);
		ok = opt_enum(&v, "collective_algo", collective_algo_names, COLL_COUNT, COLL_AUTO,
		              &algo) && ok;
	}
	L->s->sim.fidelity = (enum sim_fidelity)fid;
	L->s->sim.collective_algo = (enum collective_algo)algo;
	return ok;
}

/* ------------------------------------------------------------------ entry */

/* The scenario object `root` of doc (the whole file, or a member of
 * another kind of file); its "name" may be left out when default_name is
 * not NULL. */
static struct scenario *load_object(struct arena *a, struct json_doc *doc, const struct jv *obj,
                                    const char *default_name)
{
	static const char *const keys[] = {"format",  "version", "name",     "description",
	                                   "model",   "topology", "devices", "shard",
	                                   "planners", "training", "simulation", "propagation",
	                                   "mindspore_strategy", "faults", NULL};
	const struct jv root = *obj;
	struct jv v;
	size_t errors_before = doc->diags->errors;
	struct scenario *s = arena_alloc(a, sizeof(*s));
	if (!s)
		return NULL;
	struct loader L = {.a = a, .s = s, .diags = doc->diags, .dir = util_path_dir(a, doc->file)};
	s->file = arena_strdup(a, doc->file);
	bool ok = jv_keys(&root, keys);
	const char *str;
	if (default_name && !jv_get(&root, "name", &v))
		s->name = arena_strdup(a, default_name);
	else if (jv_req_string(&root, "name", &str))
		s->name = arena_strdup(a, str);
	else
		ok = false;
	if (jv_get(&root, "description", &v)) {
		if (jv_string(&v, &str))
			s->description = arena_strdup(a, str);
		else
			ok = false;
	}
	if (jv_need(&root, "model", &v)) {
		s->graph = load_model(&L, &v);
		ok = s->graph && ok;
	} else {
		ok = false;
	}
	if (jv_need(&root, "topology", &v)) {
		s->topo = load_topology(&L, &v);
		ok = s->topo && ok;
	} else {
		ok = false;
	}
	if (jv_get(&root, "devices", &v)) {
		if (!jv_int(&v, JR_RANGE(1, SCENARIO_MAX_DEVICES), &s->devices))
			ok = false;
		else if (s->topo) {
			char why[256];
			struct topology *t = topo_for_devices(L.a, s->topo, s->devices, why, sizeof why);
			if (!t) {
				jv_error(&v, "%s", why);
				s->devices = 0;
				ok = false;
			} else {
				s->topo = t;
			}
		}
	} else if (s->topo) {
		s->devices = s->topo->n_devices;
	}
	ok = read_planners(&L, &root) && ok;
	ok = read_training(&L, &root) && ok;
	ok = read_simulation(&L, &root) && ok;
	ok = read_propagation(&L, &root) && ok;
	if (jv_get(&root, "faults", &v) && s->topo && s->devices)
		ok = scenario_read_faults(a, s, &v, L.dir) && ok;
	if (ok && s->training.rebalance && s->topo)
		ok = rebalance_training(&L, &root);
	if (s->devices && s->training.pipeline_stages &&
	    s->devices % s->training.pipeline_stages == 0)
		L.stage_devices = s->devices / s->training.pipeline_stages;
	if (jv_get(&root, "shard", &v)) {
		if (s->graph)
			ok = read_shards(&L, &v) && ok;
	}
	if (jv_get(&root, "mindspore_strategy", &v)) {
		if (s->graph)
			ok = read_ms_strategy(&L, &v) && ok;
	}
	return ok && doc->diags->errors == errors_before ? s : NULL;
}

struct scenario *scenario_load_doc(struct arena *a, struct json_doc *doc)
{
	struct jv root;
	if (!jv_root(doc, &root) || !jv_header(&root, SCENARIO_FORMAT, SCENARIO_VERSION))
		return NULL;
	return load_object(a, doc, &root, NULL);
}

struct scenario *scenario_load_value(struct arena *a, const struct jv *v, const char *default_name)
{
	struct jv f;
	const char *fmt;
	int64_t version;
	if (!jv_is_object(v))
		return NULL;
	bool ok = true;
	if (jv_get(v, "format", &f) && jv_string(&f, &fmt) && strcmp(fmt, SCENARIO_FORMAT)) {
		jv_error(&f, "expected \"%s\", got \"%s\"", SCENARIO_FORMAT, fmt);
		ok = false;
	}
	if (jv_get(v, "version", &f) && jv_int(&f, JR_RANGE(1, 1000000), &version) &&
	    version != SCENARIO_VERSION) {
		jv_error(&f, "unsupported version %lld (this shardlab reads version %d)",
		         (long long)version, SCENARIO_VERSION);
		ok = false;
	}
	struct scenario *s = load_object(a, v->doc, v, default_name);
	return ok ? s : NULL;
}

struct scenario *scenario_load(struct arena *a, const char *path, struct diag_list *diags)
{
	struct json_doc doc;
	struct scenario *s = NULL;
	if (json_doc_load(&doc, path, diags))
		s = scenario_load_doc(a, &doc);
	json_doc_free(&doc);
	return s;
}

const struct shard_config *scenario_shard_for(const struct scenario *s, int op)
{
	for (int i = 0; i < s->n_shards; i++)
		if (s->shards[i].op == op)
			return &s->shards[i];
	return NULL;
}
