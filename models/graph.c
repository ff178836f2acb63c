/* graph.c — the operator graph: the builder that appends tensors and ops
 * in topological order (running the catalog's shape rule for every op),
 * lookups by name and the totals (parameters, FLOPs, bytes).
 *
 * Units: element counts int64_t; FLOPs and bytes double. The builder's
 * arrays double as they grow, so a GPT-3 graph (~3000 ops) is built in
 * linear time; lookups by name are linear scans (callers look up a few
 * names, never every op).
 */
#include "models-int.h"

#include <stdio.h>
#include <string.h>

bool graph_builder_init(struct graph_builder *b, struct arena *a, const char *name)
{
	memset(b, 0, sizeof(*b));
	b->a = a;
	b->g = arena_alloc(a, sizeof(*b->g));
	if (!b->g)
		return false;
	b->g->name = arena_strdup(a, name);
	return b->g->name != NULL;
}

static bool grow(struct graph_builder *b, void **arr, int *cap, int n, size_t size)
{
	if (n < *cap)
		return true;
	int ncap = *cap ? *cap * 2 : 64;
	void *p = arena_grow(b->a, *arr, (size_t)*cap, (size_t)ncap, size);
	if (!p) {
		b->oom = true;
		return false;
	}
	*arr = p;
	*cap = ncap;
	return true;
}

static int add_tensor(struct graph_builder *b, const char *name, enum tensor_role role,
                      enum dtype dt, int rank, const int64_t *dims, int64_t elems)
{
	struct graph *g = b->g;
	void *arr = g->tensors;
	if (!grow(b, &arr, &b->cap_tensors, g->n_tensors, sizeof(struct tensor)))
		return -1;
	g->tensors = arr;
	struct tensor *t = &g->tensors[g->n_tensors];
	memset(t, 0, sizeof(*t));
	t->name = arena_strdup(b->a, name);
	if (!t->name) {
		b->oom = true;
		return -1;
	}
	t->role = role;
	t->dtype = dt;
	t->rank = rank;
	memcpy(t->dims, dims, (size_t)rank * sizeof(*dims));
	t->elems = elems;
	t->producer = -1;
	return g->n_tensors++;
}

bool graph_builder_reserve(struct graph_builder *b, int n_ops, int n_tensors)
{
	struct graph *g = b->g;
	if (n_ops > b->cap_ops) {
		void *p = arena_grow(b->a, g->ops, (size_t)b->cap_ops, (size_t)n_ops, sizeof(struct op));
		if (!p) {
			b->oom = true;
			return false;
		}
		g->ops = p;
		b->cap_ops = n_ops;
	}
	if (n_tensors > b->cap_tensors) {
		void *p = arena_grow(b->a, g->tensors, (size_t)b->cap_tensors, (size_t)n_tensors,
		                     sizeof(struct tensor));
		if (!p) {
			b->oom = true;
			return false;
		}
		g->tensors = p;
		b->cap_tensors = n_tensors;
	}
	return true;
}

int graph_builder_tensor(struct graph_builder *b, const char *name, enum tensor_role role,
                         enum dtype dt, int rank, const int64_t *dims)
{
	SL_ASSERT(rank >= 0 && rank <= GRAPH_MAX_RANK);
	int64_t e = 1;
	for (int i = 0; i < rank; i++) {
		SL_ASSERT(dims[i] >= 1);
		SL_ASSERT(util_mul_i64(e, dims[i], &e));
	}
	return add_tensor(b, name, role, dt, rank, dims, e);
}

/* models.h */
int graph_moe_router_of(const struct graph *g, int probs, int *gate)
{
	int p = g->tensors[probs].producer;
	*gate = -1;
	if (p < 0 || (g->ops[p].kind != OP_SOFTMAX && g->ops[p].kind != OP_SIGMOID))
		return -1;
	int r = g->tensors[g->ops[p].in[0]].producer;
	if (r < 0 || g->ops[r].kind != OP_MATMUL)
		return -1;
	*gate = p;
	return r;
}

/* The router, which frameworks run apart from the other Linears (cost.h,
 * cost_fp8_linear), marked when its MoECombine is built. */
static void mark_router(struct graph *g, int probs)
{
	int gate, r = graph_moe_router_of(g, probs, &gate);
	if (r >= 0)
		g->ops[r].moe_router = true;
}

int graph_builder_op(struct graph_builder *b, enum op_kind kind, const char *name, const int *in,
                     int n_in, const struct op_attrs *at, int line, const struct op_site *site)
{
	const struct op_info *info = op_info(kind);
	SL_ASSERT(n_in >= info->min_in && (info->max_in == 0 || n_in <= info->max_in));
	struct graph *g = b->g;
	for (int i = 0; i < n_in; i++)
		if (in[i] < 0)
			return -1;
	const struct tensor **tin = arena_calloc(b->a, (size_t)n_in, sizeof(*tin));
	struct op_attrs attrs = *at;
	int n_out = op_n_outputs(kind, &attrs);
	struct op_shape *out = arena_calloc(b->a, (size_t)n_out, sizeof(*out));
	int *ins = arena_calloc(b->a, (size_t)n_in, sizeof(*ins));
	int *outs = arena_calloc(b->a, (size_t)n_out, sizeof(*outs));
	if (!tin || !out || !ins || !outs) {
		b->oom = true;
		return -1;
	}
	for (int i = 0; i < n_in; i++)
		tin[i] = &g->tensors[in[i]];
	struct op_infer c = {kind, n_in, n_out, tin, &attrs, out, site};
	if (!info->infer(&c))
		return -1;

	void *arr = g->ops;
	if (!grow(b, &arr, &b->cap_ops, g->n_ops, sizeof(struct op)))
		return -1;
	g->ops = arr;
	int first = g->n_tensors;
	for (int k = 0; k < n_out; k++) {
		const char *tname = k ? arena_printf(b->a, "%s:%d", name, k) : name;
		int t = !tname ? -1 : add_tensor(b, tname, TENSOR_ACTIVATION, out[k].dtype, out[k].rank, out[k].dims,
		                   out[k].elems);
		if (t < 0) {
			b->oom = true;
			return -1;
		}
		g->tensors[t].producer = g->n_ops;
		outs[k] = t;
	}
	for (int i = 0; i < n_in; i++) {
		ins[i] = in[i];
		g->tensors[in[i]].n_consumers++;
	}
	struct op *op = &g->ops[g->n_ops];
	memset(op, 0, sizeof(*op));
	op->name = g->tensors[first].name;
	op->kind = kind;
	op->n_in = n_in;
	op->n_out = n_out;
	op->in = ins;
	op->out = outs;
	op->attrs = attrs;
	op->dtype = out[0].dtype;
	op->line = line;
	op_costs(op, g->tensors);
	if (kind == OP_MOECOMBINE)
		mark_router(g, in[2]);
	g->n_ops++;
	return first;
}

int graph_find_op(const struct graph *g, const char *name)
{
	for (int i = 0; g && i < g->n_ops; i++)
		if (!strcmp(g->ops[i].name, name))
			return i;
	return -1;
}

/* models.h */
int graph_op_layer(const struct op *o)
{
	const char *p = o->name;
	if (!p || strncmp(p, "layers.", 7) != 0 || p[7] < '0' || p[7] > '9')
		return -1;
	int n = 0;
	for (p += 7; *p >= '0' && *p <= '9' && n < 100000000; p++)
		n = 10 * n + (*p - '0');
	return *p == '.' ? n : -1;
}

bool graph_ops_name_layers(const struct graph *g, int lo, int hi)
{
	for (int i = lo; i < hi; i++)
		if (graph_op_layer(&g->ops[i]) >= 0)
			return true;
	return false;
}

int graph_find_tensor(const struct graph *g, const char *name)
{
	for (int i = 0; g && i < g->n_tensors; i++)
		if (!strcmp(g->tensors[i].name, name))
			return i;
	return -1;
}

bool graph_params_fit(const struct graph *g, int64_t *params)
{
	int64_t n = 0;
	*params = 0;
	for (int i = 0; g && i < g->n_tensors; i++) {
		if (g->tensors[i].role != TENSOR_PARAM)
			continue;
		if (!util_add_i64(n, g->tensors[i].elems, &n) || n > GRAPH_MAX_ELEMENTS) {
			*params = INT64_MAX;
			return false;
		}
	}
	*params = n;
	return true;
}

void graph_totals(const struct graph *g, struct graph_totals *out)
{
	memset(out, 0, sizeof(*out));
	if (!g)
		return;
	for (int i = 0; i < g->n_tensors; i++) {
		const struct tensor *t = &g->tensors[i];
		if (t->role != TENSOR_PARAM)
			continue;
		out->parameters += t->elems;
		long long at = -1;
		if (g->gen && t->name && (!strncmp(t->name, "mtp.", 4) ||
		                          (sscanf(t->name, "layers.%lld.", &at) == 1 &&
		                           at >= g->gen->layers)))
			out->mtp_parameters += t->elems;
		out->parameter_bytes += (double)t->elems * (double)dtype_bytes(t->dtype);
	}
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *op = &g->ops[i];
		out->forward_flops += op->flops;
		if (op->kind == OP_MATMUL || op->kind == OP_BATCHMATMUL)
			out->matmul_flops += op->flops;
		out->bytes_read += op->bytes_read;
		out->bytes_written += op->bytes_written;
	}
	out->ops = g->n_ops;
	out->active_parameters = out->parameters;
	const struct model_gen *m = g->gen;
	if (m && m->kind == GEN_LLAMA && m->experts > 0) {
		int64_t f = m->expert_ffn > 0 ? m->expert_ffn : m->ffn;
		/* The generator builds them: 3 h x f matrices per routed expert. */
		for (int i = 0; i < g->n_tensors; i++)
			if (g->tensors[i].role == TENSOR_PARAM && g->tensors[i].rank == 3)
				f = g->tensors[i].dims[1] == m->hidden ? g->tensors[i].dims[2]
				                                       : g->tensors[i].dims[1];
		out->active_parameters -= (m->layers - m->dense_layers + m->mtp_layers) *
		                          (m->experts - m->top_k) * 3 *
		                          m->hidden * f;
	}
}

/* ------------------------------------------------------------ likeness */

/* Appends a word, when there is room. */
static void word(int64_t *w, int *n, int cap, int64_t v)
{
	if (*n < cap)
		w[*n] = v;
	(*n)++;
}

int graph_op_key(const struct graph *g, int op, int64_t *w, int cap)
{
	const struct op *o = &g->ops[op];
	const struct op_attrs *at = &o->attrs;
	int n = 0;
	word(w, &n, cap, o->kind);
	word(w, &n, cap, o->dtype);
	word(w, &n, cap, util_double_bits(o->flops));
	word(w, &n, cap, util_double_bits(o->bytes_read));
	word(w, &n, cap, util_double_bits(o->bytes_written));
	word(w, &n, cap, o->params);
	/* every attribute of struct op_attrs */
	word(w, &n, cap, at->transpose_a);
	word(w, &n, cap, at->transpose_b);
	word(w, &n, cap, at->axis);
	word(w, &n, cap, at->n_axes);
	for (int k = 0; k < at->n_axes && k < GRAPH_MAX_RANK; k++)
		word(w, &n, cap, at->axes[k]);
	word(w, &n, cap, at->keep_dims);
	word(w, &n, cap, at->n_shape);
	for (int k = 0; k < at->n_shape && k < GRAPH_MAX_RANK; k++) {
		word(w, &n, cap, at->shape[k]);
		word(w, &n, cap, at->perm[k]);
		word(w, &n, cap, at->begin[k]);
		word(w, &n, cap, at->end[k]);
		word(w, &n, cap, at->strides[k]);
	}
	word(w, &n, cap, at->n_outputs);
	word(w, &n, cap, at->to);
	word(w, &n, cap, util_double_bits(at->keep_prob));
	word(w, &n, cap, at->view);
	/* the tensors, and which inputs repeat an earlier one */
	word(w, &n, cap, o->n_in);
	word(w, &n, cap, o->n_out);
	for (int i = 0; i < o->n_in + o->n_out; i++) {
		int t = i < o->n_in ? o->in[i] : o->out[i - o->n_in];
		const struct tensor *x = &g->tensors[t];
		word(w, &n, cap, x->role);
		word(w, &n, cap, x->dtype);
		word(w, &n, cap, x->rank);
		for (int d = 0; d < x->rank; d++)
			word(w, &n, cap, x->dims[d]);
		int first = i;
		for (int j = 0; j < i && i < o->n_in; j++)
			if (o->in[j] == t) {
				first = j;
				break;
			}
		word(w, &n, cap, first);
	}
	return n;
}
