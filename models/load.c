/* load.c — the model file loader: an explicit operator graph (inputs,
 * parameters, ops in any order) or a generator with hyper-parameters.
 *
 * Reading goes in passes so that one run reports every bad field: the
 * header, the declared tensors, each op on its own (name, kind, input
 * count, attributes), then the input references (by name, "op:k" for
 * output k), then a topological sort (Kahn, ties in file order) that finds
 * cycles, then shape inference in that order through the graph builder.
 * An op that fails silences its consumers: one mistake, one diagnostic.
 *
 * Units: shapes in elements. Names are looked up through a hash table in
 * a scratch arena, so a GPT-3-sized file (~3000 ops) loads in linear time.
 * The cJSON tree is only read here; everything kept is copied into the
 * caller's arena.
 */
#include "models-int.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DIM 9007199254740992.0 /* 2^53: larger dims are not exact in JSON numbers */
#define MAX_SPLIT 1024
#define SUGGEST_MAX 32             /* unknown names that get a "did you mean" */

/* A name declared in the file: a tensor (ref >= 0), a tensor that failed
 * to load (-1) or op i (-(i + 2)). */
struct name_ent {
	const char *key;
	int ref;
	int line;
};

struct lref {
	int tensor;  /* >= 0: a declared tensor; -1: an op's output */
	int op, k;
};

struct lop {
	struct jv jv, inputs;
	const char *name;
	int kind;    /* -1 when unknown */
	bool bad;    /* not built; its consumers are skipped silently */
	struct op_attrs at;
	int n_in;
	struct lref *refs;
	int out0;    /* tensor of output 0 once built, -1 if not */
};

struct loader {
	struct arena *a, *tmp;
	struct diag_list *diags;
	struct graph_builder b;
	struct name_ent *tab;
	size_t cap;
	const char **names;  /* declared names in file order, for suggestions */
	int n_names;
	struct lop *ops;
	int n_ops;
	int suggested;
};

/* ----------------------------------------------------------------- names */

static uint64_t hash_str(const char *s)
{
	uint64_t h = 1469598103934665603ull;
	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return h;
}

static struct name_ent *slot(struct loader *L, const char *key)
{
	size_t i = (size_t)hash_str(key) & (L->cap - 1);
	while (L->tab[i].key && strcmp(L->tab[i].key, key))
		i = (i + 1) & (L->cap - 1);
	return &L->tab[i];
}

static const struct name_ent *lookup(struct loader *L, const char *key)
{
	const struct name_ent *e = slot(L, key);
	return e->key ? e : NULL;
}

/* Declares a name; reports a ':' in it or a name declared before. */
static bool claim(struct loader *L, const struct jv *v, const char *name, int ref)
{
	if (strchr(name, ':')) {
		jv_error(v, "\"%s\": a name cannot contain ':' (\"op:1\" names an op's second output)",
		         name);
		return false;
	}
	struct name_ent *e = slot(L, name);
	if (e->key) {
		jv_error(v, "duplicate name \"%s\" (first at line %d)", name, e->line);
		return false;
	}
	e->key = name;
	e->ref = ref;
	e->line = v->line;
	L->names[L->n_names++] = name;
	return true;
}

static void unknown_name(struct loader *L, const struct jv *v, const char *name)
{
	const char *best = NULL;
	int best_d = 1000;
	size_t len = strlen(name);
	if (L->suggested++ < SUGGEST_MAX) {
		for (int i = 0; i < L->n_names; i++) {
			int d = util_edit_distance(L->names[i], name);
			if (d < best_d) {
				best_d = d;
				best = L->names[i];
			}
		}
	}
	if (best && best_d <= (len < 6 ? 1 : len < 12 ? 2 : 3))
		jv_error(v, "unknown tensor \"%s\" (did you mean \"%s\"?)", name, best);
	else
		jv_error(v, "unknown tensor \"%s\" (not a graph input, parameter or op)", name);
}

/* --------------------------------------------------------------- tensors */

/* An integer >= lo and at most 2^53 (beyond, JSON numbers are not exact). */
static bool read_count(const struct jv *v, int64_t lo, int64_t *out)
{
	if (!jv_int(v, lo == 1 ? JR_POSITIVE : JR_RANGE((double)lo, 1e308), out))
		return false;
	if (*out > (int64_t)MAX_DIM) {
		jv_error(v, "expected at most 2^53 (9007199254740992), got %lld", (long long)*out);
		return false;
	}
	return true;
}

static bool read_shape(const struct jv *v, int *rank, int64_t *dims)
{
	if (!jv_is_array(v, 0, INT_MAX))
		return false;
	int n = jv_len(v);
	if (n > GRAPH_MAX_RANK) {
		jv_error(v, "rank %d exceeds the limit of %d dimensions", n, GRAPH_MAX_RANK);
		return false;
	}
	bool ok = true;
	int64_t elems = 1;
	for (int i = 0; i < n; i++) {
		struct jv e;
		jv_at(v, i, &e);
		ok = read_count(&e, 1, &dims[i]) && ok;
		if (ok && !util_mul_i64(elems, dims[i], &elems)) {
			jv_error(v, "element count overflows 64 bits");
			return false;
		}
	}
	if (ok && elems > GRAPH_MAX_ELEMENTS) {
		jv_error(v, "%lld elements, more than 2^53 (%lld) in one tensor", (long long)elems,
		         (long long)GRAPH_MAX_ELEMENTS);
		return false;
	}
	*rank = n;
	return ok;
}

static void read_tensors(struct loader *L, const struct jv *root, const char *key,
                         enum tensor_role role)
{
	static const char *const keys[] = {"name", "shape", "dtype", NULL};
	struct jv arr;
	if (!jv_get(root, key, &arr) || !jv_is_array(&arr, 0, INT_MAX))
		return;
	for (int i = 0; i < jv_len(&arr); i++) {
		struct jv t, m;
		jv_at(&arr, i, &t);
		if (!jv_is_object(&t))
			continue;
		bool ok = jv_keys(&t, keys);
		const char *name = NULL;
		bool named = jv_need(&t, "name", &m) && jv_string(&m, &name);
		struct jv name_jv = m;
		int rank = 0;
		int64_t dims[GRAPH_MAX_RANK];
		ok = jv_need(&t, "shape", &m) && read_shape(&m, &rank, dims) && ok;
		enum dtype dt = DT_FP32;
		if (jv_get(&t, "dtype", &m))
			ok = jv_dtype(&m, &dt) && ok;
		if (!named)
			continue;
		int ref = -1;
		if (ok && !lookup(L, name) && !strchr(name, ':')) {
			ref = graph_builder_tensor(&L->b, name, role, dt, rank, dims);
			if (ref < 0)
				return;
		}
		claim(L, &name_jv, name, ref);
	}
}

/* ------------------------------------------------------------ attributes */

/* hi == 0: up to 2^53. */
static bool read_ints(const struct jv *v, int64_t lo, int64_t hi, int64_t *out, int *n)
{
	if (!jv_is_array(v, 0, INT_MAX))
		return false;
	if (jv_len(v) > GRAPH_MAX_RANK) {
		jv_error(v, "expected at most %d entries (one per dimension), got %d", GRAPH_MAX_RANK,
		         jv_len(v));
		return false;
	}
	bool ok = true;
	*n = jv_len(v);
	for (int i = 0; i < *n; i++) {
		struct jv e;
		jv_at(v, i, &e);
		if (hi == 0)
			ok = read_count(&e, lo, &out[i]) && ok;
		else
			ok = jv_int(&e, JR_RANGE((double)lo, (double)hi), &out[i]) && ok;
	}
	return ok;
}

/* Reshape's target: dims >= 1, or one -1 for "the rest". */
static bool read_target(const struct jv *v, struct op_attrs *at)
{
	if (!read_ints(v, -1, 0, at->shape, &at->n_shape))
		return false;
	int free_dims = 0;
	for (int i = 0; i < at->n_shape; i++) {
		struct jv e;
		jv_at(v, i, &e);
		if (at->shape[i] == 0) {
			jv_error(&e, "expected a positive integer or -1, got 0");
			return false;
		}
		if (at->shape[i] == -1 && ++free_dims > 1) {
			jv_error(&e, "only one dimension can be -1");
			return false;
		}
	}
	return true;
}

/* counts[0..2]: entries of begin, end, strides. */
static bool read_attr(const char *key, const struct jv *v, struct op_attrs *at, int counts[3])
{
	int64_t x, tmp[GRAPH_MAX_RANK];
	int n;
	if (!strcmp(key, "transpose_a"))
		return jv_bool(v, &at->transpose_a);
	if (!strcmp(key, "transpose_b"))
		return jv_bool(v, &at->transpose_b);
	if (!strcmp(key, "keep_dims"))
		return jv_bool(v, &at->keep_dims);
	if (!strcmp(key, "axis")) {
		if (!jv_int(v, JR_RANGE(-GRAPH_MAX_RANK, GRAPH_MAX_RANK - 1), &x))
			return false;
		at->axis = (int)x;
		return true;
	}
	if (!strcmp(key, "axes")) {
		if (!read_ints(v, -GRAPH_MAX_RANK, GRAPH_MAX_RANK - 1, tmp, &n))
			return false;
		if (n == 0) {
			jv_error(v, "expected at least one axis (leave \"axes\" out to reduce them all)");
			return false;
		}
		at->n_axes = n;
		for (int i = 0; i < n; i++)
			at->axes[i] = (int)tmp[i];
		return true;
	}
	if (!strcmp(key, "shape"))
		return read_target(v, at);
	if (!strcmp(key, "perm"))
		return read_ints(v, 0, GRAPH_MAX_RANK - 1, at->perm, &at->n_shape);
	if (!strcmp(key, "begin"))
		return read_ints(v, 0, 0, at->begin, &counts[0]);
	if (!strcmp(key, "end"))
		return read_ints(v, 1, 0, at->end, &counts[1]);
	if (!strcmp(key, "strides"))
		return read_ints(v, 1, 0, at->strides, &counts[2]);
	if (!strcmp(key, "outputs")) {
		if (!jv_int(v, JR_RANGE(1, MAX_SPLIT), &x))
			return false;
		at->n_outputs = (int)x;
		return true;
	}
	if (!strcmp(key, "to"))
		return jv_dtype(v, &at->to);
	if (!strcmp(key, "keep_prob"))
		return jv_number(v, JR_FRACTION, &at->keep_prob);
	if (!strcmp(key, "view"))
		return jv_bool(v, &at->view);
	SL_ASSERT(!"an attribute in the catalog has no reader");
	return false;
}

static bool read_attrs(struct lop *o)
{
	const struct op_info *info = op_info(o->kind);
	struct jv attrs, m;
	op_attrs_default(o->kind, &o->at);
	bool present = jv_get(&o->jv, "attrs", &attrs);
	bool ok = !present || jv_keys(&attrs, info->attrs);
	int counts[3] = {-1, -1, -1};
	for (const char *const *k = info->attrs; present && *k; k++)
		if (jv_get(&attrs, *k, &m))
			ok = read_attr(*k, &m, &o->at, counts) && ok;
	for (const char *const *k = info->required; *k; k++) {
		if (!jv_get(&attrs, *k, &m)) {
			jv_error(&m, "missing required field");
			ok = false;
		}
	}
	if (ok && o->kind == OP_STRIDEDSLICE) {
		o->at.n_shape = counts[0];
		for (int i = 1; i < 3; i++) {
			if (counts[i] >= 0 && counts[i] != counts[0]) {
				jv_get(&attrs, i == 1 ? "end" : "strides", &m);
				jv_error(&m, "expected %d entries, as many as \"begin\", got %d", counts[0],
				         counts[i]);
				ok = false;
			}
		}
	}
	return ok;
}

/* ------------------------------------------------------------------- ops */

static const char *const *kind_names(void)
{
	static const char *names[OP_COUNT];
	for (int k = 0; k < OP_COUNT; k++)
		names[k] = op_kind_name((enum op_kind)k);
	return names;
}

static void read_op(struct loader *L, int i, struct lop *o)
{
	static const char *const keys[] = {"name", "kind", "inputs", "attrs", NULL};
	struct jv m;
	o->kind = -1;
	o->out0 = -1;
	o->bad = true;
	if (!jv_is_object(&o->jv))
		return;
	bool ok = jv_keys(&o->jv, keys);
	if (jv_need(&o->jv, "name", &m) && jv_string(&m, &o->name))
		ok = claim(L, &m, o->name, -(i + 2)) && ok;
	else
		ok = false;
	if (jv_need(&o->jv, "kind", &m))
		o->kind = jv_enum(&m, kind_names(), OP_COUNT);
	bool listed = jv_need(&o->jv, "inputs", &o->inputs) && jv_is_array(&o->inputs, 0, INT_MAX);
	for (int j = 0; listed && j < jv_len(&o->inputs); j++) {
		const char *s;
		jv_at(&o->inputs, j, &m);
		listed = jv_string(&m, &s);
	}
	if (o->kind < 0)
		return;
	const struct op_info *info = op_info(o->kind);
	ok = read_attrs(o) && ok;
	if (!listed)
		return;
	o->n_in = jv_len(&o->inputs);
	if (o->n_in < info->min_in || (info->max_in && o->n_in > info->max_in)) {
		if (info->max_in == 0)
			jv_error(&o->inputs, "%s takes at least %d inputs, got %d", info->name, info->min_in,
			         o->n_in);
		else
			jv_error(&o->inputs, "%s takes %d input%s, got %d", info->name, info->min_in,
			         info->min_in == 1 ? "" : "s", o->n_in);
		return;
	}
	o->bad = !ok;
}

/* Resolves "name" or "op:k"; false after a diagnostic or for a tensor that
 * failed to load (silently). */
static bool resolve(struct loader *L, const struct jv *v, const char *s, struct lref *r)
{
	const struct name_ent *e = lookup(L, s);
	r->tensor = -1;
	r->k = 0;
	if (e && e->ref == -1)
		return false;
	if (e) {
		if (e->ref >= 0)
			r->tensor = e->ref;
		else
			r->op = -(e->ref + 2);
		return true;
	}
	const char *colon = strrchr(s, ':');
	size_t nd = colon ? strspn(colon + 1, "0123456789") : 0;
	if (colon && colon > s && nd > 0 && nd < 6 && !colon[1 + nd]) {
		char *op = arena_strndup(L->tmp, s, (size_t)(colon - s));
		e = op ? lookup(L, op) : NULL;
		if (e && e->ref < -1) {
			r->op = -(e->ref + 2);
			r->k = (int)strtol(colon + 1, NULL, 10);
			const struct lop *p = &L->ops[r->op];
			int n_out = p->kind >= 0 ? op_n_outputs(p->kind, &p->at) : INT_MAX;
			if (r->k < n_out)
				return true;
			jv_error(v, "op \"%s\" has %d output%s: \"%s\" names none", op, n_out,
			         n_out == 1 ? "" : "s", s);
			return false;
		}
	}
	unknown_name(L, v, s);
	return false;
}

static void resolve_inputs(struct loader *L, struct lop *o)
{
	if (o->kind < 0 || o->n_in == 0)
		return;
	o->refs = arena_calloc(L->tmp, (size_t)o->n_in, sizeof(*o->refs));
	if (!o->refs) {
		L->b.oom = true;
		return;
	}
	for (int j = 0; j < o->n_in; j++) {
		struct jv m;
		const char *s;
		jv_at(&o->inputs, j, &m);
		if (!jv_string(&m, &s) || !resolve(L, &m, s, &o->refs[j])) {
			o->bad = true;
			o->refs[j].tensor = -1;
			o->refs[j].op = -1;
		}
	}
}

/* ------------------------------------------------------------- sorting */

static void heap_push(int *h, int *n, int x)
{
	int i = (*n)++;
	while (i > 0 && h[(i - 1) / 2] > x) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = x;
}

static int heap_pop(int *h, int *n)
{
	int top = h[0], x = h[--*n], i = 0;
	for (;;) {
		int c = 2 * i + 1;
		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1] < h[c])
			c++;
		if (x <= h[c])
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n > 0)
		h[i] = x;
	return top;
}

/* The op producing input j of o, or -1. */
static int pred(const struct lop *o, int j)
{
	return o->refs && o->refs[j].tensor < 0 && o->refs[j].op >= 0 ? o->refs[j].op : -1;
}

/* Reports the cycle through the predecessors of `start` if it is new. */
static void report_cycle(struct loader *L, int start, int *state, int *stack)
{
	int n = 0, x = start;
	while (state[x] == 0) {
		state[x] = 1;
		stack[n++] = x;
		int p = -1;
		for (int j = 0; j < L->ops[x].n_in && p < 0; j++) {
			int q = pred(&L->ops[x], j);
			if (q >= 0 && state[q] != 3)
				p = q;
		}
		SL_ASSERT(p >= 0);
		x = p;
	}
	if (state[x] == 1) {
		int from = n - 1;
		while (stack[from] != x)
			from--;
		/* stack[from..n-1] runs against the data flow; find the first op in file order. */
		int first = from;
		for (int i = from; i < n; i++)
			if (stack[i] < stack[first])
				first = i;
		char msg[800];
		size_t o = 0;
		int len = n - from;
		for (int s = 0; s <= len && o < sizeof msg - 8; s++) {
			int at = first - s;
			if (at < from)
				at += len;
			o += (size_t)snprintf(msg + o, sizeof msg - o, "%s%s", s ? " -> " : "",
			                      L->ops[stack[at]].name);
		}
		if (o >= sizeof msg - 8)
			snprintf(msg + sizeof msg - 8, 8, " ...");
		jv_error(&L->ops[stack[first]].inputs, "cycle: %s", msg);
	}
	for (int i = 0; i < n; i++)
		state[stack[i]] = 2;
}

/* Kahn's algorithm, ties in file order; fills order[], returns its length. */
static int sort_ops(struct loader *L, int *order)
{
	int n = L->n_ops;
	int *indeg = arena_calloc(L->tmp, (size_t)n + 1, sizeof(int));
	int *start = arena_calloc(L->tmp, (size_t)n + 2, sizeof(int));
	int *heap = arena_calloc(L->tmp, (size_t)n + 1, sizeof(int));
	int total = 0;
	for (int i = 0; i < n; i++)
		for (int j = 0; j < L->ops[i].n_in; j++)
			if (pred(&L->ops[i], j) >= 0)
				total++;
	int *cons = arena_calloc(L->tmp, (size_t)total + 1, sizeof(int));
	if (!indeg || !start || !heap || !cons) {
		L->b.oom = true;
		return 0;
	}
	for (int i = 0; i < n; i++)
		for (int j = 0; j < L->ops[i].n_in; j++)
			if (pred(&L->ops[i], j) >= 0) {
				start[pred(&L->ops[i], j) + 2]++;
				indeg[i]++;
			}
	for (int i = 0; i < n; i++)
		start[i + 2] += start[i + 1];
	for (int i = 0; i < n; i++)
		for (int j = 0; j < L->ops[i].n_in; j++)
			if (pred(&L->ops[i], j) >= 0)
				cons[start[pred(&L->ops[i], j) + 1]++] = i;
	int hn = 0, done = 0;
	for (int i = 0; i < n; i++)
		if (indeg[i] == 0)
			heap_push(heap, &hn, i);
	while (hn > 0) {
		int x = heap_pop(heap, &hn);
		order[done++] = x;
		for (int c = start[x]; c < start[x + 1]; c++)
			if (--indeg[cons[c]] == 0)
				heap_push(heap, &hn, cons[c]);
	}
	if (done < n) {
		/* state: 0 left unsorted, 1 on the walk, 2 walked, 3 sorted. */
		int *state = indeg, *stack = heap;
		for (int i = 0; i < n; i++)
			state[i] = 0;
		for (int i = 0; i < done; i++)
			state[order[i]] = 3;
		for (int i = 0; i < n; i++)
			if (state[i] == 0)
				report_cycle(L, i, state, stack);
	}
	return done;
}

/* -------------------------------------------------------------- building */

static void build(struct loader *L, const int *order, int n)
{
	int *in = NULL;
	int cap = 0;
	for (int s = 0; s < n && !L->b.oom; s++) {
		struct lop *o = &L->ops[order[s]];
		if (o->bad)
			continue;
		if (o->n_in > cap) {
			cap = o->n_in * 2;
			in = arena_calloc(L->tmp, (size_t)cap, sizeof(int));
			if (!in) {
				L->b.oom = true;
				return;
			}
		}
		for (int j = 0; j < o->n_in; j++) {
			const struct lref *r = &o->refs[j];
			int p = r->tensor >= 0 ? -1 : L->ops[r->op].out0;
			in[j] = r->tensor >= 0 ? r->tensor : p < 0 ? -1 : p + r->k;
		}
		struct op_site site = {L->diags, &o->jv, NULL, o->name};
		o->out0 = graph_builder_op(&L->b, (enum op_kind)o->kind, o->name, in, o->n_in, &o->at,
		                           o->jv.line, &site);
	}
}

static void load_ops(struct loader *L, const struct jv *ops)
{
	L->n_ops = jv_len(ops);
	L->ops = arena_calloc(L->tmp, (size_t)L->n_ops + 1, sizeof(*L->ops));
	int *order = arena_calloc(L->tmp, (size_t)L->n_ops + 1, sizeof(int));
	if (!L->ops || !order) {
		L->b.oom = true;
		return;
	}
	struct jv e;
	for (bool more = jv_first(ops, &e); more && e.index < L->n_ops; more = jv_next(ops, &e))
		L->ops[e.index].jv = e;
	for (int i = 0; i < L->n_ops; i++)
		read_op(L, i, &L->ops[i]);
	for (int i = 0; i < L->n_ops; i++)
		resolve_inputs(L, &L->ops[i]);
	int n = sort_ops(L, order);
	build(L, order, n);
}

/* ---------------------------------------------------------------- header */

static struct graph *load_generator(struct loader *L, const struct jv *gen)
{
	static const struct {
		const char *key;
		size_t off;
	} ints[] = {
		{"hidden", offsetof(struct model_gen, hidden)},
		{"layers", offsetof(struct model_gen, layers)},
		{"heads", offsetof(struct model_gen, heads)},
		{"kv_heads", offsetof(struct model_gen, kv_heads)},
		{"seq", offsetof(struct model_gen, seq)},
		{"vocab", offsetof(struct model_gen, vocab)},
		{"micro_batch", offsetof(struct model_gen, micro_batch)},
		{"ffn", offsetof(struct model_gen, ffn)},
		{"max_positions", offsetof(struct model_gen, max_positions)},
		{"experts", offsetof(struct model_gen, experts)},
		{"top_k", offsetof(struct model_gen, top_k)},
		{"expert_ffn", offsetof(struct model_gen, expert_ffn)},
	};
	struct jv m;
	if (!jv_is_object(gen) || !jv_need(gen, "kind", &m))
		return NULL;
	int kind = jv_enum(&m, model_gen_names, GEN_COUNT);
	if (kind < 0)
		return NULL;
	struct model_gen g;
	model_gen_defaults(&g, (enum model_gen_kind)kind);
	/* Unknown keys do not stop the checks of the values given. */
	bool keys_ok = jv_keys(gen, model_gen_fields((enum model_gen_kind)kind)), ok = true;
	for (size_t i = 0; i < SL_COUNTOF(ints); i++)
		if (jv_get(gen, ints[i].key, &m))
			ok = read_count(&m, 1, (int64_t *)((char *)&g + ints[i].off)) && ok;
	if (jv_get(gen, "dtype", &m))
		ok = jv_dtype(&m, &g.dtype) && ok;
	ok = jv_opt_bool(gen, "bias", g.bias, &g.bias) && ok;
	bool tie = kind == GEN_GPT;
	if (jv_get(gen, "tie_embeddings", &m)) {
		ok = jv_bool(&m, &tie) && ok;
		g.tie_embeddings = tie ? 1 : -1;
	}
	ok = jv_opt_bool(gen, "qkv_bias", g.qkv_bias, &g.qkv_bias) && ok;
	ok = jv_opt_bool(gen, "fused_qkv", g.fused_qkv, &g.fused_qkv) && ok;
	ok = jv_opt_bool(gen, "fused_gate_up", g.fused_gate_up, &g.fused_gate_up) && ok;
	ok = jv_opt_bool(gen, "qk_norm", g.qk_norm, &g.qk_norm) && ok;
	if (jv_get(gen, "shared_experts", &m))
		ok = read_count(&m, 0, &g.shared_experts) && ok;
	if (jv_get(gen, "dense_layers", &m))
		ok = read_count(&m, 0, &g.dense_layers) && ok;
	static const struct {
		const char *key;
		size_t off;
	} counts0[] = {
		{"expert_groups", offsetof(struct model_gen, expert_groups)},
		{"group_top_k", offsetof(struct model_gen, group_top_k)},
		{"q_lora_rank", offsetof(struct model_gen, q_lora_rank)},
		{"kv_lora_rank", offsetof(struct model_gen, kv_lora_rank)},
		{"qk_rope_head_dim", offsetof(struct model_gen, qk_rope_head_dim)},
		{"qk_nope_head_dim", offsetof(struct model_gen, qk_nope_head_dim)},
		{"v_head_dim", offsetof(struct model_gen, v_head_dim)},
		{"mtp_layers", offsetof(struct model_gen, mtp_layers)},
		{"head_dim", offsetof(struct model_gen, head_dim)},
	};
	for (size_t i = 0; i < SL_COUNTOF(counts0); i++)
		if (jv_get(gen, counts0[i].key, &m))
			ok = read_count(&m, 0, (int64_t *)((char *)&g + counts0[i].off)) && ok;
	ok = jv_opt_bool(gen, "sigmoid_router", g.sigmoid_router, &g.sigmoid_router) && ok;
	ok = jv_opt_bool(gen, "shared_expert_gate", g.shared_expert_gate,
	                 &g.shared_expert_gate) && ok;
	ok = jv_opt_number(gen, "capacity_factor", JR_POSITIVE, g.capacity_factor,
	                   &g.capacity_factor) && ok;
	ok = jv_opt_bool(gen, "parallel_residual", g.parallel_residual, &g.parallel_residual) && ok;
	ok = jv_opt_bool(gen, "rotary", g.rotary, &g.rotary) && ok;
	ok = jv_opt_number(gen, "dropout", JR_NONNEG, g.dropout, &g.dropout) && ok;
	ok = jv_opt_number(gen, "rope_theta", JR_POSITIVE, 0, &g.rope_theta) && ok;
	ok = jv_opt_number(gen, "norm_eps", JR_FRACTION, 0, &g.norm_eps) && ok;
	if (!ok)
		return NULL;
	struct graph *graph = graph_generate_at(L->a, &g, L->diags, gen);
	return keys_ok ? graph : NULL;
}

static struct graph *load_explicit(struct loader *L, const struct jv *m, const char *name)
{
	struct jv ops;
	if (!graph_builder_init(&L->b, L->a, name))
		return NULL;
	int n = 0;
	static const char *const lists[] = {"inputs", "parameters", "ops"};
	for (size_t i = 0; i < SL_COUNTOF(lists); i++)
		if (jv_get(m, lists[i], &ops))
			n += jv_len(&ops);
	for (L->cap = 16; L->cap < 2 * (size_t)n + 2; L->cap *= 2)
		;
	L->tab = arena_calloc(L->tmp, L->cap, sizeof(*L->tab));
	L->names = arena_calloc(L->tmp, (size_t)n + 1, sizeof(*L->names));
	if (!L->tab || !L->names)
		return NULL;
	read_tensors(L, m, "inputs", TENSOR_INPUT);
	read_tensors(L, m, "parameters", TENSOR_PARAM);
	if (jv_need(m, "ops", &ops) && jv_is_array(&ops, 1, INT_MAX))
		load_ops(L, &ops);
	return L->b.g;
}

/* The part of a model object after "format"/"version". */
static struct graph *load_model(struct arena *a, const struct jv *m, const char *file)
{
	static const char *const keys[] = {"format", "version", "name", "description", "inputs",
	                                   "parameters", "ops", "generator", NULL};
	struct diag_list *diags = m->doc->diags;
	size_t errors = diags->errors;
	struct jv v, gen;
	const char *name = NULL, *desc = NULL;
	jv_keys(m, keys);
	jv_req_string(m, "name", &name);
	if (jv_get(m, "description", &v))
		jv_string(&v, &desc);
	bool has_gen = jv_get(m, "generator", &gen);
	if (has_gen && jv_get(m, "ops", &v))
		jv_error(&gen, "a model has \"ops\" or a \"generator\", not both");
	else if (!has_gen && !jv_get(m, "ops", &v))
		jv_error(&v, "missing required field (or give a \"generator\")");
	static const char *const made[] = {"inputs", "parameters"};
	for (size_t i = 0; has_gen && i < SL_COUNTOF(made); i++)
		if (jv_get(m, made[i], &v))
			jv_error(&v, "not allowed with a \"generator\", which makes its own");
	if (diags->errors > errors)
		return NULL;

	struct loader L;
	memset(&L, 0, sizeof L);
	L.a = a;
	L.diags = diags;
	L.tmp = arena_new();
	struct graph *g = NULL;
	if (L.tmp)
		g = has_gen ? load_generator(&L, &gen) : load_explicit(&L, m, name);
	if (!L.tmp || L.b.oom) {
		jv_error(m, "out of memory loading the model");
		g = NULL;
	}
	arena_free(L.tmp);
	int64_t params;
	if (g && diags->errors == errors && !graph_params_fit(g, &params)) {
		if (!jv_get(m, has_gen ? "generator" : "parameters", &v))
			v = *m;
		jv_error(&v, "the model has more than 2^53 (%lld) parameters; the largest published "
		         "models have about 10^12", (long long)GRAPH_MAX_ELEMENTS);
	}
	if (!g || diags->errors > errors)
		return NULL;
	g->name = arena_strdup(a, name);
	g->description = desc ? arena_strdup(a, desc) : NULL;
	if (!has_gen) {
		g->batch = 1;
		for (int i = 0; i < g->n_tensors; i++)
			if (g->tensors[i].role == TENSOR_INPUT && g->tensors[i].rank > 0) {
				g->batch = g->tensors[i].dims[0];
				break;
			}
	}
	g->file = file ? arena_strdup(a, file) : NULL;
	return g;
}

struct graph *graph_load_value(struct arena *a, const struct jv *model)
{
	struct jv v;
	const char *fmt;
	int64_t version;
	if (!jv_is_object(model))
		return NULL;
	bool ok = true;
	if (jv_get(model, "format", &v) && jv_string(&v, &fmt) && strcmp(fmt, MODEL_FORMAT)) {
		jv_error(&v, "expected \"%s\", got \"%s\"", MODEL_FORMAT, fmt);
		ok = false;
	}
	if (jv_get(model, "version", &v) && jv_int(&v, JR_RANGE(1, 1000000), &version) &&
	    version != MODEL_VERSION) {
		jv_error(&v, "unsupported version %lld (this shardlab reads version %d)",
		         (long long)version, MODEL_VERSION);
		ok = false;
	}
	/* Another kind of file (a topology pasted in): its keys are not a
	 * model's, and one diagnostic says so. */
	if (!ok)
		return NULL;
	return load_model(a, model, NULL);
}

struct graph *graph_load_doc(struct arena *a, struct json_doc *doc)
{
	struct jv root;
	if (!jv_root(doc, &root) || !jv_header(&root, MODEL_FORMAT, MODEL_VERSION))
		return NULL;
	return load_model(a, &root, doc->file);
}

struct graph *graph_load(struct arena *a, const char *path, struct diag_list *diags)
{
	struct json_doc doc;
	struct graph *g = NULL;
	if (json_doc_load(&doc, path, diags))
		g = graph_load_doc(a, &doc);
	json_doc_free(&doc);
	return g;
}
