/* report.c — the plan writers that `explain`, `plan` and `advise` share.
 *
 * One piece of code prints a plan as text or JSON: each op with its
 * strategy (tuple form), source, device matrix, its own forward
 * communication and gradient all-reduce; each redistribution with its
 * steps (rank groups and bytes per device); the totals. `explain` asks for
 * the detail of every op (tensors, tensor maps, the slices of the first
 * ranks), `plan` for one line per op and the propagation's choices.
 *
 * Units: bytes per device, FLOPs per rank (double). Linear in ops, edges
 * and ranks shown; no hot path.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "report.h"

/* ------------------------------------------------------ text fragments */

/* Appends to a fixed buffer, cutting what does not fit. */
struct sbuf {
	char *s;
	size_t size, len;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void sb_add(struct sbuf *b, const char *fmt, ...)
{
	if (b->len + 1 >= b->size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(b->s + b->len, b->size - b->len, fmt, ap);
	va_end(ap);
	if (n > 0)
		b->len = b->len + (size_t)n < b->size ? b->len + (size_t)n : b->size - 1;
}

/* The cuts of each input, with the given brackets: "((2, 4), (4,))" or
 * "[[2, 4], [4]]". */
static const char *cuts_text(char *buf, size_t size, const struct graph *g,
                             const struct dist_op *d, bool tuple)
{
	struct sbuf b = {buf, size, 0};
	buf[0] = '\0';
	sb_add(&b, tuple ? "(" : "[");
	for (int i = 0; i < d->n_in; i++) {
		const struct tensor *t = &g->tensors[g->ops[d->op].in[i]];
		sb_add(&b, "%s%s", i ? ", " : "", tuple ? "(" : "[");
		for (int k = 0; k < t->rank; k++)
			sb_add(&b, "%s%" PRId64, k ? ", " : "", d->cuts[i][k]);
		sb_add(&b, "%s", !tuple ? "]" : t->rank == 1 ? ",)" : ")");
	}
	sb_add(&b, tuple ? ")" : "]");
	return buf;
}

const char *report_strategy_text(char *buf, size_t size, const struct graph *g,
                                 const struct dist_op *d)
{
	return cuts_text(buf, size, g, d, true);
}

const char *report_shard_entry(char *buf, size_t size, const struct graph *g,
                               const struct dist_op *d)
{
	char cuts[512];
	snprintf(buf, size, "\"%s\": %s", g->ops[d->op].name, cuts_text(cuts, sizeof cuts, g, d, false));
	return buf;
}

static const char *devmat_text(char *buf, size_t size, const struct devmat *dm)
{
	struct sbuf b = {buf, size, 0};
	buf[0] = '\0';
	sb_add(&b, "[");
	for (int i = 0; i < dm->n; i++) {
		if (dm->name[i])
			sb_add(&b, "%s%s=%" PRId64, i ? ", " : "", dm->name[i], dm->size[i]);
		else
			sb_add(&b, "%s%" PRId64, i ? ", " : "", dm->size[i]);
	}
	sb_add(&b, "]");
	return buf;
}

static const char *map_text(char *buf, size_t size, const struct layout *l)
{
	struct sbuf b = {buf, size, 0};
	buf[0] = '\0';
	sb_add(&b, "[");
	for (int d = 0; d < l->rank; d++) {
		int m[PLAN_MAX_AXES];
		int n = layout_tensor_map(l, d, m);
		sb_add(&b, "%s", d ? ", " : "");
		if (n == 0)
			sb_add(&b, "-1");
		else if (n == 1)
			sb_add(&b, "%d", m[0]);
		else
			for (int k = 0; k < n; k++)
				sb_add(&b, "%s%d%s", k ? ", " : "(", m[k], k == n - 1 ? ")" : "");
	}
	sb_add(&b, "]");
	if (l->partial)
		sb_add(&b, " partial");
	return buf;
}

static const char *shape_text(char *buf, size_t size, int rank, const int64_t *shape)
{
	struct sbuf b = {buf, size, 0};
	buf[0] = '\0';
	sb_add(&b, "[");
	for (int d = 0; d < rank; d++)
		sb_add(&b, "%s%" PRId64, d ? ", " : "", shape[d]);
	sb_add(&b, "]");
	return buf;
}

static const char *slice_text(char *buf, size_t size, const struct layout *l, int64_t rank)
{
	int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK];
	struct sbuf b = {buf, size, 0};
	buf[0] = '\0';
	layout_slice(l, rank, lo, hi);
	sb_add(&b, "[");
	for (int d = 0; d < l->rank; d++)
		sb_add(&b, "%s%" PRId64 ":%" PRId64, d ? ", " : "", lo[d], hi[d]);
	sb_add(&b, "]");
	return buf;
}

static const char *groups_text(char *buf, size_t size, const struct rank_groups *g)
{
	enum { SHOWN = 8 };
	struct sbuf b = {buf, size, 0};
	buf[0] = '\0';
	for (int i = 0; i < g->n_groups && i < SHOWN; i++) {
		sb_add(&b, "%s{", i ? " " : "");
		for (int k = 0; k < g->size; k++) {
			/* A long group: its first ranks, then its last. */
			if (g->size > 2 * SHOWN && k == SHOWN) {
				sb_add(&b, ",...");
				k = g->size - 1;
			}
			sb_add(&b, "%s%" PRId64, k ? "," : "", rank_groups_rank(g, i, k));
		}
		sb_add(&b, "}");
	}
	if (g->n_groups > SHOWN)
		sb_add(&b, " ... (%d groups of %d)", g->n_groups, g->size);
	return buf;
}

void report_text_step(const char *indent, const struct comm_step *c)
{
	char g[512], by[32], sh[96], name[48];
	int64_t local[GRAPH_MAX_RANK];
	layout_local_shape(&c->after, local);
	printf("%s%-22s", indent, report_step_text(name, sizeof name, c));
	if (c->dim >= 0 && c->kind == STEP_ALLTOALL)
		printf(" dim %d -> %d", c->dim, c->to_dim);
	else if (c->dim >= 0)
		printf(" dim %d", c->dim);
	if (c->groups.n_groups)
		printf("  %s", groups_text(g, sizeof g, &c->groups));
	printf("  %s per device  -> slice %s", cli_si(by, sizeof by, c->bytes_per_device, "B"),
	       shape_text(sh, sizeof sh, c->after.rank, local));
	if (c->why)
		printf("  (%s)", c->why);
	printf("\n");
}

/* ------------------------------------------------------------ op text */

/* explain: an op with its tensors and the slices of the first ranks. */
static void print_op_detail(const struct plan *p, const struct dist_op *d, int64_t show_ranks)
{
	const struct graph *g = p->graph;
	const struct op *op = &g->ops[d->op];
	char s1[512], s2[256], s3[96], s4[96];
	printf("%s  %s  %s", op->name, op_kind_name(op->kind), strategy_source_names[d->source]);
	printf("\n  strategy       %s\n", report_strategy_text(s1, sizeof s1, g, d));
	printf("  device matrix  %s\n", devmat_text(s1, sizeof s1, &d->dm));
	int wname = 6;
	for (int i = 0; i < op->n_in + op->n_out; i++) {
		int t = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
		int n = (int)strlen(g->tensors[t].name) + (i < op->n_in ? 0 : 3);
		wname = n > wname ? n : wname;
	}
	printf("  %-*s  %-16s %-16s %s\n", wname, "tensor", "shape", "tensor map", "slice");
	for (int i = 0; i < op->n_in + op->n_out; i++) {
		bool in = i < op->n_in;
		const struct layout *l = in ? &d->in[i] : &d->out[i - op->n_in];
		int t = in ? op->in[i] : op->out[i - op->n_in];
		int64_t local[GRAPH_MAX_RANK];
		layout_local_shape(l, local);
		char name[160];
		snprintf(name, sizeof name, "%s%s", in ? "" : "-> ", g->tensors[t].name);
		printf("  %-*s  %-16s %-16s %s\n", wname, name, shape_text(s3, sizeof s3, l->rank, l->shape),
		       map_text(s2, sizeof s2, l), shape_text(s4, sizeof s4, l->rank, local));
	}
	printf("  per rank       %s, %s\n", cli_si(s3, sizeof s3, d->flops_per_rank, "FLOP"),
	       cli_si(s4, sizeof s4, d->bytes_per_rank, "B"));
	if (!d->n_comm)
		printf("  forward        none\n");
	for (int i = 0; i < d->n_comm; i++)
		report_text_step(i ? "                 " : "  forward        ", &d->comm[i]);
	for (int i = 0; i < d->n_grad; i++)
		report_text_step(i ? "                 " : "  gradient       ", &d->grad[i]);
	int64_t n = show_ranks < p->n_devices ? show_ranks : p->n_devices;
	if (n == 0)
		return;
	printf("  rank");
	for (int i = 0; i < op->n_in + op->n_out; i++) {
		int t = i < op->n_in ? op->in[i] : op->out[i - op->n_in];
		printf("  %-22s", g->tensors[t].name);
	}
	printf("\n");
	for (int64_t r = 0; r < n; r++) {
		printf("  %4" PRId64, r);
		for (int i = 0; i < op->n_in + op->n_out; i++) {
			const struct layout *l = i < op->n_in ? &d->in[i] : &d->out[i - op->n_in];
			printf("  %-22s", slice_text(s1, sizeof s1, l, l->dm.base + r));
		}
		printf("\n");
	}
	if (n < p->n_devices)
		printf("  ... %" PRId64 " more ranks (--ranks)\n", p->n_devices - n);
}

const char *report_source_text(char *buf, size_t size, const struct plan *p,
                               const struct dist_op *d)
{
	if (d->source == STRATEGY_PROPAGATED && d->from_op >= 0)
		snprintf(buf, size, "propagated from %s", p->graph->ops[d->from_op].name);
	else if (d->source == STRATEGY_DEFAULT && p->choices)
		snprintf(buf, size, "default (never reached)");
	else
		snprintf(buf, size, "%s", strategy_source_names[d->source]);
	return buf;
}

/* "AllReduce(sum) {0,1,2,3} {4,5,6,7} 12.3 kB", the steps joined by "; ". */
static const char *comm_summary(char *buf, size_t size, const struct dist_op *d)
{
	struct sbuf b = {buf, size, 0};
	char name[48], g[512], by[32];
	buf[0] = '\0';
	if (!d->n_comm)
		sb_add(&b, "none");
	for (int i = 0; i < d->n_comm; i++) {
		const struct comm_step *c = &d->comm[i];
		sb_add(&b, "%s%s", i ? "; " : "", report_step_text(name, sizeof name, c));
		if (c->groups.n_groups)
			sb_add(&b, " %s", groups_text(g, sizeof g, &c->groups));
		sb_add(&b, " %s", cli_si(by, sizeof by, c->bytes_per_device, "B"));
	}
	return buf;
}

/* plan: one line per op, columns aligned. */
static void print_op_lines(const struct plan *p)
{
	const struct graph *g = p->graph;
	char st[512], src[192], comm[1024];
	int w[4] = {4, 4, 8, 6};
	for (int pass = 0; pass < 2; pass++) {
		if (pass)
			printf("  %-*s  %-*s  %-*s  %-*s  forward communication\n", w[0], "op", w[1],
			       "kind", w[2], "strategy", w[3], "source");
		for (int i = 0; i < g->n_ops; i++) {
			const struct dist_op *d = &p->ops[i];
			const char *col[4] = {g->ops[i].name, op_kind_name(g->ops[i].kind),
			                      report_strategy_text(st, sizeof st, g, d),
			                      report_source_text(src, sizeof src, p, d)};
			for (int k = 0; k < 4 && !pass; k++)
				w[k] = (int)strlen(col[k]) > w[k] ? (int)strlen(col[k]) : w[k];
			if (pass)
				printf("  %-*s  %-*s  %-*s  %-*s  %s\n", w[0], col[0], w[1], col[1], w[2],
				       col[2], w[3], col[3], comm_summary(comm, sizeof comm, d));
		}
	}
}

/* ----------------------------------------------------- plan as text */

struct totals {
	double forward, redistribution, gradient, fused_saving;
};

static void sum_totals(const struct plan *p, struct totals *t)
{
	*t = (struct totals){0};
	for (int i = 0; i < p->graph->n_ops; i++) {
		for (int k = 0; k < p->ops[i].n_comm; k++)
			t->forward += p->ops[i].comm[k].bytes_per_device;
		for (int k = 0; k < p->ops[i].n_grad; k++)
			t->gradient += p->ops[i].grad[k].bytes_per_device;
	}
	for (int e = 0; e < p->n_edges; e++) {
		t->redistribution += p->edges[e].redist.bytes_per_device;
		t->fused_saving += p->edges[e].fused_saving_bytes;
	}
}

void report_text_edge(const struct plan *p, const struct plan_edge *x, const char *indent)
{
	const struct graph *g = p->graph;
	char b[64], ind[64];
	printf("%s%s -> %s (input %d): %s per device", indent, g->tensors[x->tensor].name,
	       g->ops[x->consumer].name, x->consumer_in,
	       cli_si(b, sizeof b, x->redist.bytes_per_device, "B"));
	if (x->fused_saving_bytes > 0)
		printf(", fusing saves %s", cli_si(b, sizeof b, x->fused_saving_bytes, "B"));
	if (x->ring > 1)
		printf(", a ring of %d under the consumer's compute", x->ring);
	for (int k = 0; k < x->n_hide; k++)
		printf("%s%s", k ? ", " : x->n_hide > 1 ? ", under the GEMMs of " : ", under the GEMM of ",
		       g->ops[x->hide[k]].name);
	printf("\n");
	snprintf(ind, sizeof ind, "%s  ", indent);
	for (int k = 0; k < x->redist.n_steps; k++)
		report_text_step(ind, &x->redist.steps[k]);
}

static void print_unreached(const struct plan *p)
{
	printf("  unreached ops             %d", p->n_unreached);
	for (int i = 0, n = 0; i < p->graph->n_ops; i++)
		if (p->ops[i].source == STRATEGY_DEFAULT)
			printf("%s%s", n++ ? ", " : " (data parallel: ", p->graph->ops[i].name);
	printf("%s\n", p->n_unreached ? ")" : "");
}

void report_text(const struct plan *p, const struct report_options *o)
{
	const struct scenario *s = p->scenario;
	const struct graph *g = p->graph;
	char b[64];
	printf("%s %s: model %s on %" PRId64 " devices of %s", o->command, s->name, g->name,
	       s->devices, s->topo->name);
	if (o->planner)
		printf(", planner %s", o->planner);
	printf(" (%s redistribution)\n", p->mode == REDIST_FUSED ? "fused" : "MindSpore-compatible");
	report_search_chosen(stdout, p);
	if (o->detail) {
		for (int i = 0; i < g->n_ops; i++) {
			printf("\n");
			print_op_detail(p, &p->ops[i], o->ranks);
		}
	} else {
		printf("\n");
		print_op_lines(p);
	}
	printf("\nredistributions\n");
	if (!p->n_edges)
		printf("  none: every consumer reads its input as the producer leaves it\n");
	for (int e = 0; e < p->n_edges; e++)
		report_text_edge(p, &p->edges[e], "  ");
	struct totals t;
	sum_totals(p, &t);
	printf("\ntotals per device\n");
	printf("  forward op communication  %s\n", cli_si(b, sizeof b, t.forward, "B"));
	printf("  redistribution            %s\n", cli_si(b, sizeof b, t.redistribution, "B"));
	printf("  gradient all-reduce       %s\n", cli_si(b, sizeof b, t.gradient, "B"));
	printf("  fused mode would save     %s\n", cli_si(b, sizeof b, t.fused_saving, "B"));
	if (p->choices)
		print_unreached(p);
}

/* ---------------------------------------------------------------- CSV */

void report_csv(const struct plan *p)
{
	static const char *const cols[] = {
		"index", "name", "kind", "strategy", "source", "from", "forward_communication",
		"forward_comm_bytes_per_device", "redistribution_in_bytes_per_device",
		"gradient_bytes_per_device", NULL};
	const struct graph *g = p->graph;
	struct cli_csv c = {.f = stdout};
	char st[512], comm[1024];
	double *redist = calloc((size_t)g->n_ops + 1, sizeof *redist);
	for (int e = 0; redist && e < p->n_edges; e++)
		redist[p->edges[e].consumer] += p->edges[e].redist.bytes_per_device;
	cli_csv_header(&c, cols);
	for (int i = 0; i < g->n_ops; i++) {
		const struct dist_op *d = &p->ops[i];
		double fwd = 0, grad = 0;
		for (int k = 0; k < d->n_comm; k++)
			fwd += d->comm[k].bytes_per_device;
		for (int k = 0; k < d->n_grad; k++)
			grad += d->grad[k].bytes_per_device;
		cli_csv_int(&c, i);
		cli_csv_str(&c, g->ops[i].name);
		cli_csv_str(&c, op_kind_name(g->ops[i].kind));
		cli_csv_str(&c, report_strategy_text(st, sizeof st, g, d));
		cli_csv_str(&c, strategy_source_names[d->source]);
		cli_csv_str(&c, d->source == STRATEGY_PROPAGATED && d->from_op >= 0 ? g->ops[d->from_op].name
		                                                            : NULL);
		cli_csv_str(&c, comm_summary(comm, sizeof comm, d));
		cli_csv_num(&c, fwd);
		cli_csv_num(&c, redist ? redist[i] : 0);
		cli_csv_num(&c, grad);
		cli_csv_end(&c);
	}
	free(redist);
}

void report_csv_tensors(const struct plan *p)
{
	static const char *const cols[] = {
		"op_index", "op", "kind", "device_matrix", "tensor", "role", "shape", "tensor_map",
		"slice_shape", "slice_bytes", NULL};
	const struct graph *g = p->graph;
	struct cli_csv c = {.f = stdout};
	char s1[512], s2[256], s3[96], s4[96];
	cli_csv_header(&c, cols);
	for (int i = 0; i < g->n_ops; i++) {
		const struct dist_op *d = &p->ops[i];
		const struct op *op = &g->ops[i];
		for (int k = 0; k < op->n_in + op->n_out; k++) {
			bool in = k < op->n_in;
			const struct layout *l = in ? &d->in[k] : &d->out[k - op->n_in];
			int t = in ? op->in[k] : op->out[k - op->n_in];
			int64_t local[GRAPH_MAX_RANK];
			layout_local_shape(l, local);
			char role[32];
			snprintf(role, sizeof role, "%s %d", in ? "input" : "output", in ? k : k - op->n_in);
			cli_csv_int(&c, i);
			cli_csv_str(&c, op->name);
			cli_csv_str(&c, op_kind_name(op->kind));
			cli_csv_str(&c, devmat_text(s1, sizeof s1, &d->dm));
			cli_csv_str(&c, g->tensors[t].name);
			cli_csv_str(&c, role);
			cli_csv_str(&c, shape_text(s3, sizeof s3, l->rank, l->shape));
			cli_csv_str(&c, map_text(s2, sizeof s2, l));
			cli_csv_str(&c, shape_text(s4, sizeof s4, l->rank, local));
			cli_csv_num(&c, (double)layout_local_elems(l) * (double)dtype_bytes(l->dtype));
			cli_csv_end(&c);
		}
	}
}

/* --------------------------------------------------------------- JSON */

static cJSON *int_array(const int64_t *v, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber((double)v[i]));
	return a;
}

static cJSON *json_map(const struct layout *l)
{
	cJSON *a = cJSON_CreateArray();
	for (int d = 0; d < l->rank; d++) {
		int m[PLAN_MAX_AXES];
		int n = layout_tensor_map(l, d, m);
		if (n <= 1) {
			cJSON_AddItemToArray(a, cJSON_CreateNumber(n ? m[0] : -1));
			continue;
		}
		cJSON *dims = cJSON_CreateArray();
		for (int k = 0; k < n; k++)
			cJSON_AddItemToArray(dims, cJSON_CreateNumber(m[k]));
		cJSON_AddItemToArray(a, dims);
	}
	return a;
}

static cJSON *json_groups(const struct rank_groups *g)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < g->n_groups; i++) {
		cJSON *r = cJSON_CreateArray();
		for (int k = 0; k < g->size; k++)
			cJSON_AddItemToArray(r, cJSON_CreateNumber((double)rank_groups_rank(g, i, k)));
		cJSON_AddItemToArray(a, r);
	}
	return a;
}

static cJSON *json_step(const struct comm_step *c)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "kind", step_kind_names[c->kind]);
	if (c->kind == STEP_ALLREDUCE || c->kind == STEP_REDUCESCATTER)
		cJSON_AddStringToObject(o, "reduce", c->reduce == REDUCE_MAX ? "max" : "sum");
	if (c->dim >= 0)
		cJSON_AddNumberToObject(o, "dim", c->dim);
	if (c->kind == STEP_ALLTOALL)
		cJSON_AddNumberToObject(o, "to_dim", c->to_dim);
	if (c->kind == STEP_ALLGATHER)
		cJSON_AddBoolToObject(o, "concat", c->concat);
	cJSON_AddItemToObject(o, "groups", json_groups(&c->groups));
	cJSON_AddNumberToObject(o, "bytes_per_device", c->bytes_per_device);
	int64_t local[GRAPH_MAX_RANK];
	layout_local_shape(&c->after, local);
	cJSON_AddItemToObject(o, "slice_shape", int_array(local, c->after.rank));
	if (c->why)
		cJSON_AddStringToObject(o, "why", c->why);
	return o;
}

static cJSON *json_steps(const struct comm_step *c, int n)
{
	cJSON *a = cJSON_CreateArray();
	for (int i = 0; i < n; i++)
		cJSON_AddItemToArray(a, json_step(&c[i]));
	return a;
}

static cJSON *json_tensor(const struct graph *g, int t, const struct layout *l, const char *role)
{
	cJSON *o = cJSON_CreateObject();
	int64_t local[GRAPH_MAX_RANK];
	layout_local_shape(l, local);
	cJSON_AddStringToObject(o, "name", g->tensors[t].name);
	cJSON_AddStringToObject(o, "role", role);
	cJSON_AddItemToObject(o, "shape", int_array(l->shape, l->rank));
	cJSON_AddItemToObject(o, "tensor_map", json_map(l));
	cJSON_AddBoolToObject(o, "partial", l->partial != 0);
	cJSON_AddItemToObject(o, "slice_shape", int_array(local, l->rank));
	return o;
}

static cJSON *json_slices(const struct plan *p, const struct dist_op *d, int64_t ranks)
{
	const struct op *op = &p->graph->ops[d->op];
	cJSON *a = cJSON_CreateArray();
	for (int64_t r = 0; r < ranks && r < p->n_devices; r++) {
		cJSON *o = cJSON_CreateObject(), *ts = cJSON_CreateArray();
		cJSON_AddNumberToObject(o, "rank", (double)(d->dm.base + r));
		for (int i = 0; i < op->n_in + op->n_out; i++) {
			const struct layout *l = i < op->n_in ? &d->in[i] : &d->out[i - op->n_in];
			int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK];
			layout_slice(l, l->dm.base + r, lo, hi);
			cJSON *dims = cJSON_CreateArray();
			for (int k = 0; k < l->rank; k++) {
				int64_t range[2] = {lo[k], hi[k]};
				cJSON_AddItemToArray(dims, int_array(range, 2));
			}
			cJSON_AddItemToArray(ts, dims);
		}
		cJSON_AddItemToObject(o, "tensors", ts);
		cJSON_AddItemToArray(a, o);
	}
	return a;
}

cJSON *report_json_strategy(const struct graph *g, const struct dist_op *d)
{
	cJSON *st = cJSON_CreateArray();
	for (int i = 0; i < d->n_in; i++)
		cJSON_AddItemToArray(st, int_array(d->cuts[i], g->tensors[g->ops[d->op].in[i]].rank));
	return st;
}

/* How propagation chose the op; null for configured ops. */
static cJSON *json_choice(const struct plan *p, int i)
{
	const struct plan_choice *c = &p->choices[i];
	if (p->ops[i].source == STRATEGY_CONFIGURED)
		return cJSON_CreateNull();
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "n_candidates", c->n_candidates);
	cJSON_AddNumberToObject(o, "n_tied", c->n_tied);
	cJSON_AddNumberToObject(o, "edge_bytes", c->edge_bytes);
	cJSON_AddBoolToObject(o, "param_conflict", c->param_conflict);
	return o;
}

static cJSON *json_op(const struct plan *p, const struct dist_op *d, const struct report_options *ro)
{
	const struct graph *g = p->graph;
	const struct op *op = &g->ops[d->op];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "name", op->name);
	cJSON_AddStringToObject(o, "kind", op_kind_name(op->kind));
	cJSON_AddStringToObject(o, "source", strategy_source_names[d->source]);
	if (d->source == STRATEGY_PROPAGATED && d->from_op >= 0)
		cJSON_AddStringToObject(o, "from", g->ops[d->from_op].name);
	else
		cJSON_AddNullToObject(o, "from");
	cJSON_AddItemToObject(o, "strategy", report_json_strategy(g, d));
	cJSON_AddItemToObject(o, "device_matrix", int_array(d->dm.size, d->dm.n));
	if (d->dm.n > 0 && d->dm.name[0]) {
		cJSON *names = cJSON_CreateArray();
		for (int i = 0; i < d->dm.n; i++)
			cJSON_AddItemToArray(names, cJSON_CreateString(d->dm.name[i]));
		cJSON_AddItemToObject(o, "axis_names", names);
	}
	cJSON *ts = cJSON_CreateArray();
	for (int i = 0; i < op->n_in; i++)
		cJSON_AddItemToArray(ts, json_tensor(g, op->in[i], &d->in[i], "input"));
	for (int i = 0; i < op->n_out; i++)
		cJSON_AddItemToArray(ts, json_tensor(g, op->out[i], &d->out[i], "output"));
	cJSON_AddItemToObject(o, "tensors", ts);
	cJSON_AddItemToObject(o, "comm", json_steps(d->comm, d->n_comm));
	cJSON_AddItemToObject(o, "grad", json_steps(d->grad, d->n_grad));
	cJSON_AddNumberToObject(o, "flops_per_rank", d->flops_per_rank);
	cJSON_AddNumberToObject(o, "bytes_per_rank", d->bytes_per_rank);
	if (ro->detail)
		cJSON_AddItemToObject(o, "slices", json_slices(p, d, ro->ranks));
	if (p->choices)
		cJSON_AddItemToObject(o, "choice", json_choice(p, d->op));
	return o;
}

cJSON *report_json_edge(const struct plan *p, const struct plan_edge *x)
{
	const struct graph *g = p->graph;
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "tensor", g->tensors[x->tensor].name);
	cJSON_AddStringToObject(o, "from", g->ops[x->producer].name);
	cJSON_AddStringToObject(o, "to", g->ops[x->consumer].name);
	cJSON_AddNumberToObject(o, "input", x->consumer_in);
	cJSON_AddItemToObject(o, "steps", json_steps(x->redist.steps, x->redist.n_steps));
	cJSON_AddNumberToObject(o, "bytes_per_device", x->redist.bytes_per_device);
	cJSON_AddNumberToObject(o, "fused_saving_bytes", x->fused_saving_bytes);
	if (x->ring > 1)
		cJSON_AddNumberToObject(o, "ring", x->ring);
	if (x->n_hide > 0) {
		cJSON *h = cJSON_AddArrayToObject(o, "hidden_by");
		for (int k = 0; k < x->n_hide; k++)
			cJSON_AddItemToArray(h, cJSON_CreateString(g->ops[x->hide[k]].name));
	}
	return o;
}

cJSON *report_json_head(const struct plan *p, const struct report_options *o)
{
	cJSON *root = cJSON_CreateObject();
	cJSON_AddStringToObject(root, "scenario", p->scenario->name);
	cJSON_AddStringToObject(root, "model", p->graph->name);
	cJSON_AddStringToObject(root, "topology", p->scenario->topo->name);
	cJSON_AddBoolToObject(root, "compute_calibrated",
	                      topo_compute_calibrated(&p->scenario->topo->device));
	cJSON_AddNumberToObject(root, "devices", (double)p->scenario->devices);
	cJSON_AddNumberToObject(root, "stage_devices", (double)p->n_devices);
	if (o->planner)
		cJSON_AddStringToObject(root, "planner", o->planner);
	cJSON_AddStringToObject(root, "mode", p->mode == REDIST_FUSED ? "fused" : "compat");
	if (p->search) {
		cJSON *sr = report_json_search_counts(p->search);
		cJSON_AddItemToObject(sr, "chosen", report_json_search_config(&p->search->cands[0].config));
		cJSON_AddItemToObject(root, "search", sr);
	}
	return root;
}

void report_search_chosen(FILE *f, const struct plan *p)
{
	if (!p->search)
		return;
	const struct search_result *r = p->search;
	char c[128];
	fprintf(f, "megatron-search chose %s: the fastest by the estimate of the %" PRId64
	        " configurations that fit (of %" PRId64 "); shardlab compare --planner "
	        "megatron-search ranks and simulates them\n",
	        plan_search_config_text(c, sizeof c, &r->cands[0].config), r->n_fit, r->n_configs);
}

cJSON *report_json_search_config(const struct search_config *c)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "tensor_parallel", (double)c->tp);
	cJSON_AddNumberToObject(j, "pipeline_stages", (double)c->pp);
	cJSON_AddNumberToObject(j, "data_parallel", (double)c->dp);
	cJSON_AddNumberToObject(j, "micro_batch", (double)c->micro_batch);
	cJSON_AddNumberToObject(j, "micro_batches", (double)c->micro_batches);
	cJSON_AddBoolToObject(j, "sequence_parallel", c->sequence_parallel);
	cJSON_AddNumberToObject(j, "expert_parallel", (double)(c->ep > 1 ? c->ep : 1));
	cJSON_AddNumberToObject(j, "context_parallel", (double)(c->cp > 1 ? c->cp : 1));
	cJSON_AddStringToObject(j, "schedule", schedule_names[c->schedule]);
	cJSON_AddNumberToObject(j, "virtual_stages", (double)c->virtual_stages);
	cJSON_AddStringToObject(j, "recompute", recompute_names[c->recompute]);
	cJSON_AddNumberToObject(j, "zero_stage", c->zero_stage);
	if (c->stage_layers) {
		cJSON *l = cJSON_AddArrayToObject(j, "stage_layers");
		for (int64_t k = 0; l && k < c->pp; k++)
			cJSON_AddItemToArray(l, cJSON_CreateNumber((double)c->stage_layers[k]));
	}
	if (c->first_stage_layers > 0)
		cJSON_AddNumberToObject(j, "first_stage_layers", (double)c->first_stage_layers);
	if (c->last_stage_layers > 0)
		cJSON_AddNumberToObject(j, "last_stage_layers", (double)c->last_stage_layers);
	return j;
}

cJSON *report_json_search_counts(const struct search_result *r)
{
	cJSON *j = cJSON_CreateObject();
	cJSON_AddNumberToObject(j, "configurations", (double)r->n_configs);
	cJSON_AddNumberToObject(j, "fit", (double)r->n_fit);
	cJSON_AddNumberToObject(j, "oom", (double)r->n_oom);
	cJSON_AddNumberToObject(j, "oom_hbm", (double)r->n_oom_hbm);
	cJSON_AddNumberToObject(j, "oom_host", (double)r->n_oom_host);
	cJSON_AddNumberToObject(j, "failed", (double)r->n_failed);
	if (r->failure)
		cJSON_AddStringToObject(j, "first_failure", r->failure);
	else
		cJSON_AddNullToObject(j, "first_failure");
	cJSON_AddItemToObject(j, "refused", report_json_refused(r->refused));
	return j;
}

cJSON *report_json_refused(const int64_t refused[SEARCH_RULE_COUNT])
{
	cJSON *j = cJSON_CreateObject();
	for (int k = SEARCH_RULE_NONE + 1; k < SEARCH_RULE_COUNT; k++)
		if (refused[k] > 0)
			cJSON_AddNumberToObject(j, search_rule_names[k], (double)refused[k]);
	return j;
}

/* What each rule means, for the text summary. */
static const char *const rule_words[SEARCH_RULE_COUNT] = {
	[SEARCH_RULE_HEADS_TP] = "TP does not divide the heads",
	[SEARCH_RULE_KV_HEADS_TP] = "TP neither a multiple nor a divisor of the KV heads",
	[SEARCH_RULE_FFN_TP] = "TP does not divide the MLP",
	/* planner/search.c's rule: the even split, the fixed split
	 * (stage_layers / first_ / last_stage_layers), or the layers plus the
	 * embedding and loss units (account_for_*_in_pipeline_split) */
	[SEARCH_RULE_LAYERS_PP] = "layers (with any embedding/loss units) do not split over PP",
	[SEARCH_RULE_SEQ_SP] = "TP does not divide the sequence (SP)",
	[SEARCH_RULE_SEQ_CP] = "sequence not a multiple of 2 x CP",
	[SEARCH_RULE_EXPERTS_EP] = "EP does not divide the experts",
	[SEARCH_RULE_BATCH_DP] = "DP x micro-batch does not divide the global batch",
	[SEARCH_RULE_SCHEDULE] = "GPipe (Megatron-LM runs 1F1B)",
	[SEARCH_RULE_LAYERS_VPP] = "virtual stages do not divide a stage's layers",
	[SEARCH_RULE_MICRO_BATCHES_PP] = "interleaved with micro-batches not a multiple of PP",
	[SEARCH_RULE_OFFLOAD_PP] = "activation offload with PP > 1",
	[SEARCH_RULE_OFFLOAD_RECOMPUTE] = "activation offload with recomputation",
	[SEARCH_RULE_RECOMPUTE_OP] = "recompute \"op\" (torchtitan's policy)",
};

void report_refused_text(FILE *f, const int64_t refused[SEARCH_RULE_COUNT])
{
	int64_t total = 0;
	for (int k = SEARCH_RULE_NONE + 1; k < SEARCH_RULE_COUNT; k++)
		total += refused[k];
	if (total == 0)
		return;
	fprintf(f, "  left out, as Megatron-LM would refuse them: %" PRId64 " (", total);
	bool first = true;
	for (int k = SEARCH_RULE_NONE + 1; k < SEARCH_RULE_COUNT; k++)
		if (refused[k] > 0) {
			fprintf(f, "%s%" PRId64 " %s", first ? "" : "; ", refused[k], rule_words[k]);
			first = false;
		}
	fputs(")\n", f);
}

cJSON *report_json(const struct plan *p, const struct report_options *o)
{
	const struct graph *g = p->graph;
	cJSON *root = report_json_head(p, o);
	cJSON *ops = cJSON_CreateArray();
	for (int i = 0; i < g->n_ops; i++)
		cJSON_AddItemToArray(ops, json_op(p, &p->ops[i], o));
	cJSON_AddItemToObject(root, "ops", ops);
	cJSON *rs = cJSON_CreateArray();
	for (int e = 0; e < p->n_edges; e++)
		cJSON_AddItemToArray(rs, report_json_edge(p, &p->edges[e]));
	cJSON_AddItemToObject(root, "redistributions", rs);
	struct totals t;
	sum_totals(p, &t);
	cJSON *tot = cJSON_CreateObject();
	cJSON_AddNumberToObject(tot, "forward_comm_bytes_per_device", t.forward);
	cJSON_AddNumberToObject(tot, "redistribution_bytes_per_device", t.redistribution);
	cJSON_AddNumberToObject(tot, "gradient_bytes_per_device", t.gradient);
	cJSON_AddNumberToObject(tot, "fused_saving_bytes_per_device", t.fused_saving);
	cJSON_AddItemToObject(root, "totals", tot);
	if (p->choices) {
		cJSON *un = cJSON_CreateArray();
		for (int i = 0; i < g->n_ops; i++)
			if (p->ops[i].source == STRATEGY_DEFAULT)
				cJSON_AddItemToArray(un, cJSON_CreateString(g->ops[i].name));
		cJSON_AddItemToObject(root, "unreached", un);
	}
	return root;
}

void report_json_oom(cJSON *obj, double memory, double hbm)
{
	struct cost_verdict v;
	cost_memory_verdict(memory, hbm, &v);
	cJSON_AddBoolToObject(obj, "oom", v.fit == FIT_NO);
	cli_json_verdict(obj, memory, hbm);
	cJSON_AddNumberToObject(obj, "oom_overflow_bytes", memory > hbm ? memory - hbm : 0);
}

int report_print_json(cJSON *root, const char *command)
{
	char *s = root ? cJSON_Print(root) : NULL;
	int rc = EXIT_OK;
	if (s) {
		printf("%s\n", s);
	} else {
		fprintf(stderr, "shardlab %s: out of memory\n", command);
		rc = EXIT_INVALID;
	}
	free(s);
	cJSON_Delete(root);
	return rc;
}

void report_json_pipeline(cJSON *obj, const struct plan *p, const struct estimate *e)
{
	const struct training *t = &p->scenario->training;
	const struct plan_part *pp = &e->part;
	cJSON *j = cJSON_AddObjectToObject(obj, "pipeline");
	cJSON_AddNumberToObject(j, "stages", pp->n_stages);
	cJSON_AddNumberToObject(j, "virtual_stages", pp->virtual_stages);
	cJSON_AddNumberToObject(j, "micro_batches", (double)e->steps_per_iteration);
	cJSON_AddStringToObject(j, "schedule", schedule_names[t->schedule]);
	cJSON_AddNumberToObject(j, "pipeline_s", e->pipeline_s);
	cJSON_AddNumberToObject(j, "bubble_s", e->bubble_s);
	cJSON_AddNumberToObject(j, "bubble_fraction", e->iteration_s > 0 ? e->bubble_s / e->iteration_s : 0);
	cJSON_AddNumberToObject(j, "critical_stage", e->critical_stage);
	cJSON *a = cJSON_AddArrayToObject(j, "per_stage");
	for (int s = 0; s < pp->n_stages; s++) {
		const struct est_stage *es = &e->stages[s];
		cJSON *o = cJSON_CreateObject();
		cJSON_AddStringToObject(o, "first_op", p->graph->ops[pp->first_op[s]].name);
		cJSON_AddStringToObject(o, "last_op", p->graph->ops[pp->first_op[s + 1] - 1].name);
		cJSON_AddNumberToObject(o, "micro_s", es->micro_s);
		cJSON_AddNumberToObject(o, "p2p_s", es->p2p_s);
		cJSON_AddNumberToObject(o, "gradient_s", es->gradient_s);
		cJSON_AddNumberToObject(o, "tied_bytes", es->tied_bytes);
		cJSON_AddNumberToObject(o, "tied_s", es->tied_s);
		if (es->tied_local_bytes > 0)  /* dualpipe: shared on the same devices */
			cJSON_AddNumberToObject(o, "tied_local_bytes", es->tied_local_bytes);
		cJSON_AddNumberToObject(o, "mirror_bytes", es->mirror_bytes);
		cJSON_AddNumberToObject(o, "mirror_s", es->mirror_s);
		cJSON_AddNumberToObject(o, "optimizer_s", es->optimizer_s);
		cJSON_AddNumberToObject(o, "in_flight", es->in_flight);
		cJSON_AddNumberToObject(o, "memory_bytes", es->mem.total);
		cJSON_AddItemToArray(a, o);
	}
	cJSON *tr = cJSON_AddObjectToObject(obj, "training");
	cJSON_AddNumberToObject(tr, "zero_stage", t->zero_stage);
	cJSON_AddStringToObject(tr, "recompute", recompute_names[t->recompute]);
	cJSON_AddStringToObject(tr, "precision", precision_names[t->precision]);
	cJSON_AddBoolToObject(tr, "sequence_parallel", t->sequence_parallel);
	cJSON_AddNumberToObject(tr, "context_parallel",
	                        (double)(t->context_parallel > 1 ? t->context_parallel : 1));
	cJSON_AddNumberToObject(tr, "expert_parallel",
	                        (double)(t->expert_parallel > 1 ? t->expert_parallel : 1));
}
