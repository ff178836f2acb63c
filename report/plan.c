/* plan.c — a plan drawn: what `explain` prints, on the devices.
 *
 * The devices are drawn as the topology's servers (one cell per device,
 * the first tier's groups outlined). Each op's tensors and each
 * collective's rank groups become a "colouring" of the cells: a label
 * per rank (the slice it holds, or the group it belongs to). The
 * colourings are written once each (the layers of a model repeat the same
 * layouts) as JSON the page's script paints from; the first op's output
 * is painted in the SVG itself, so that the page shows a layout without
 * scripts and in print. Tables list the ops (strategy, source, device
 * matrix, tensor maps) and every collective and redistribution step
 * (groups, bytes per device), each row a button that paints its
 * colouring.
 *
 * Linear in ops x tensors x devices (layout_slice per rank); no hot path.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report-int.h"

/* -------------------------------------------------------- colourings */

struct colouring {
	int n_labels;
	char **labels;
	int *idx;                          /* [devices]: label index or -1 */
	uint64_t hash;
};

struct colourings {
	int64_t n_devices;
	int n, cap;
	struct colouring *c;
	bool oom;
};

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

static void colouring_free(struct colouring *c)
{
	for (int i = 0; i < c->n_labels; i++)
		free(c->labels[i]);
	free(c->labels);
	free(c->idx);
}

static void colourings_free(struct colourings *cs)
{
	for (int i = 0; i < cs->n; i++)
		colouring_free(&cs->c[i]);
	free(cs->c);
}

static bool colouring_same(const struct colouring *a, const struct colouring *b, int64_t n)
{
	if (a->hash != b->hash || a->n_labels != b->n_labels ||
	    memcmp(a->idx, b->idx, (size_t)n * sizeof *a->idx))
		return false;
	for (int i = 0; i < a->n_labels; i++)
		if (strcmp(a->labels[i], b->labels[i]))
			return false;
	return true;
}

/* Keeps c (taking its memory) unless an equal one is kept: its index, -1
 * when out of memory. */
static int colourings_add(struct colourings *cs, struct colouring *c)
{
	uint64_t h = fnv(1469598103934665603ull, c->idx, (size_t)cs->n_devices * sizeof *c->idx);
	for (int i = 0; i < c->n_labels; i++)
		h = fnv(h, c->labels[i], strlen(c->labels[i]));
	c->hash = h;
	for (int i = 0; i < cs->n; i++)
		if (colouring_same(&cs->c[i], c, cs->n_devices)) {
			colouring_free(c);
			return i;
		}
	if (cs->n == cs->cap) {
		int cap = cs->cap ? 2 * cs->cap : 64;
		struct colouring *m = realloc(cs->c, (size_t)cap * sizeof *m);
		if (!m) {
			colouring_free(c);
			cs->oom = true;
			return -1;
		}
		cs->c = m;
		cs->cap = cap;
	}
	cs->c[cs->n] = *c;
	return cs->n++;
}

/* A label, found or appended: its index, -1 when out of memory. */
static int label_of(struct colouring *c, const char *text)
{
	for (int i = c->n_labels - 1; i >= 0 && i >= c->n_labels - 4; i--)
		if (!strcmp(c->labels[i], text))
			return i;
	for (int i = 0; i < c->n_labels - 4; i++)
		if (!strcmp(c->labels[i], text))
			return i;
	char **m = realloc(c->labels, ((size_t)c->n_labels + 1) * sizeof *m);
	char *s = strdup(text);
	if (!m || !s) {
		free(s);
		if (m)
			c->labels = m;
		return -1;
	}
	c->labels = m;
	c->labels[c->n_labels] = s;
	return c->n_labels++;
}

static bool colouring_init(struct colouring *c, int64_t n)
{
	*c = (struct colouring){0};
	c->idx = malloc((size_t)(n > 0 ? n : 1) * sizeof *c->idx);
	if (!c->idx)
		return false;
	for (int64_t r = 0; r < n; r++)
		c->idx[r] = -1;
	return true;
}

/* Which slice of tensor layout l each rank holds: "[0:32, 16:32]", with
 * " partial" where it holds partial sums. */
static int colour_layout(struct colourings *cs, const struct layout *l)
{
	struct colouring c;
	if (!colouring_init(&c, cs->n_devices)) {
		cs->oom = true;
		return -1;
	}
	int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK];
	int64_t end = l->dm.base + l->dm.n_devices;
	for (int64_t r = l->dm.base; r < end && r < cs->n_devices; r++) {
		char t[256];
		size_t o = 0;
		layout_slice(l, r, lo, hi);
		t[o++] = '[';
		for (int d = 0; d < l->rank && o < sizeof t - 40; d++)
			o += (size_t)snprintf(t + o, sizeof t - o, "%s%" PRId64 ":%" PRId64, d ? ", " : "",
			                      lo[d], hi[d]);
		snprintf(t + o, sizeof t - o, "]%s", l->partial ? " partial sum" : "");
		int k = label_of(&c, t);
		if (k < 0) {
			colouring_free(&c);
			cs->oom = true;
			return -1;
		}
		c.idx[r] = k;
	}
	return colourings_add(cs, &c);
}

/* Which group of a step each rank belongs to: "{0,1,2,3}". */
static int colour_groups(struct colourings *cs, const struct rank_groups *g)
{
	struct colouring c;
	if (!colouring_init(&c, cs->n_devices)) {
		cs->oom = true;
		return -1;
	}
	for (int i = 0; i < g->n_groups; i++) {
		char t[160];
		size_t o = 0;
		t[o++] = '{';
		for (int k = 0; k < g->size && o < sizeof t - 48; k++)
			o += (size_t)snprintf(t + o, sizeof t - o, "%s%" PRId64, k ? "," : "",
			                      rank_groups_rank(g, i, k));
		snprintf(t + o, sizeof t - o, "%s}", o >= sizeof t - 48 ? ",..." : "");
		int k = label_of(&c, t);
		if (k < 0) {
			colouring_free(&c);
			cs->oom = true;
			return -1;
		}
		for (int m = 0; m < g->size; m++) {
			int64_t r = rank_groups_rank(g, i, m);
			if (r >= 0 && r < cs->n_devices)
				c.idx[r] = k;
		}
	}
	return colourings_add(cs, &c);
}

/* A JSON string of s (quotes, backslashes, '<' and controls escaped: it
 * sits in a <script> element). */
static void json_str(struct report_html *h, const char *s)
{
	rh_put(h, "\"");
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c == '"' || *c == '\\')
			rh_printf(h, "\\%c", *c);
		else if (*c < 0x20 || *c == '<' || *c == '>' || *c == '&')
			rh_printf(h, "\\u%04x", *c);
		else
			rh_printf(h, "%c", *c);
	}
	rh_put(h, "\"");
}

static void colourings_write(struct report_html *h, int mesh, const struct colourings *cs)
{
	char col[8];
	rh_printf(h, "<script type=\"application/json\" id=\"mesh-%d-data\">{\"p\":[", mesh);
	for (int k = 0; k < RH_COLOURS; k++)
		rh_printf(h, "%s\"%s\"", k ? "," : "", rh_colour(col, k));
	rh_put(h, "],\"c\":[");
	for (int i = 0; i < cs->n; i++) {
		const struct colouring *c = &cs->c[i];
		rh_put(h, i ? ",\n{\"l\":[" : "\n{\"l\":[");
		for (int k = 0; k < c->n_labels; k++) {
			if (k)
				rh_put(h, ",");
			json_str(h, c->labels[k]);
		}
		rh_put(h, "],\"i\":\"");
		for (int64_t r = 0; r < cs->n_devices; r++)
			rh_printf(h, "%s%d", r ? "," : "", c->idx[r]);
		rh_put(h, "\"}");
	}
	rh_put(h, "]}</script>\n");
}

/* ---------------------------------------------------------- the words */

static const char *devmat_words(char *buf, size_t size, const struct devmat *dm)
{
	size_t o = (size_t)snprintf(buf, size, "[");
	for (int i = 0; i < dm->n && o < size - 24; i++)
		o += (size_t)(dm->name[i] ? snprintf(buf + o, size - o, "%s%s=%" PRId64, i ? ", " : "",
		                                      dm->name[i], dm->size[i])
		                          : snprintf(buf + o, size - o, "%s%" PRId64, i ? ", " : "",
		                                     dm->size[i]));
	snprintf(buf + o, size - o, "]");
	return buf;
}

static const char *shape_words(char *buf, size_t size, int rank, const int64_t *shape)
{
	size_t o = (size_t)snprintf(buf, size, "[");
	for (int d = 0; d < rank && o < size - 24; d++)
		o += (size_t)snprintf(buf + o, size - o, "%s%" PRId64, d ? ", " : "", shape[d]);
	snprintf(buf + o, size - o, "]");
	return buf;
}

/* "{0,1,2,3} {4,5,6,7}", the first groups, then how many more. */
static const char *groups_words(char *buf, size_t size, const struct rank_groups *g)
{
	enum { GROUPS = 4, MEMBERS = 8 };
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < g->n_groups && i < GROUPS && o < size - 64; i++) {
		o += (size_t)snprintf(buf + o, size - o, "%s{", i ? " " : "");
		for (int k = 0; k < g->size && k < MEMBERS; k++)
			o += (size_t)snprintf(buf + o, size - o, "%s%" PRId64, k ? "," : "",
			                      rank_groups_rank(g, i, k));
		o += (size_t)snprintf(buf + o, size - o, "%s}", g->size > MEMBERS ? ",..." : "");
	}
	if (g->n_groups > GROUPS && o < size)
		snprintf(buf + o, size - o, " ... (%d groups of %d)", g->n_groups, g->size);
	return buf;
}

const char *report_step_text(char *buf, size_t size, const struct comm_step *c)
{
	if (c->kind == STEP_ALLREDUCE || c->kind == STEP_REDUCESCATTER)
		snprintf(buf, size, "%s(%s)", step_kind_names[c->kind],
		         c->reduce == REDUCE_MAX ? "max" : "sum");
	else if (c->kind == STEP_ALLGATHER && c->concat)
		snprintf(buf, size, "%s+Concat", step_kind_names[c->kind]);
	else
		snprintf(buf, size, "%s", step_kind_names[c->kind]);
	return buf;
}

/* ------------------------------------------------------------ tables */

struct plan_ctx {
	struct report_html *h;
	const struct plan *p;
	struct colourings cs;
	int mesh;
	int64_t n_devices;
};

/* A button that paints colouring k on the mesh, titled for the legend. */
static void paint_button(struct plan_ctx *x, int k, const char *label, const char *title)
{
	if (k < 0)
		return;
	rh_printf(x->h, "<button class=\"noprint\" data-mesh=\"mesh-%d\" data-colour=\"%d\" "
	                "title=\"",
	          x->mesh, k);
	rh_esc(x->h, title);
	rh_put(x->h, "\">");
	rh_esc(x->h, label);
	rh_put(x->h, "</button> ");
}

/* One communication row: where, step, groups, bytes; a button that shows
 * its groups. */
static void comm_row(struct plan_ctx *x, const char *where, const struct comm_step *c)
{
	struct report_html *h = x->h;
	char name[64], g[512], by[32], sh[96];
	int64_t local[GRAPH_MAX_RANK];
	layout_local_shape(&c->after, local);
	rh_put(h, "<tr>");
	rh_td(h, where);
	rh_td(h, report_step_text(name, sizeof name, c));
	if (c->dim >= 0 && c->kind == STEP_ALLTOALL)
		snprintf(g, sizeof g, "%d -> %d", c->dim, c->to_dim);
	else if (c->dim >= 0)
		snprintf(g, sizeof g, "%d", c->dim);
	else
		snprintf(g, sizeof g, "-");
	rh_td(h, g);
	rh_put(h, "<td>");
	if (c->groups.n_groups) {
		char title[256];
		snprintf(title, sizeof title, "%s %s: groups", where, name);
		paint_button(x, colour_groups(&x->cs, &c->groups), "show", title);
		rh_esc(h, groups_words(g, sizeof g, &c->groups));
	} else {
		rh_put(h, "none (no traffic)");
	}
	rh_put(h, "</td>");
	rh_td_num(h, c->bytes_per_device, rh_si(h, by, sizeof by, c->bytes_per_device, "B"));
	rh_td(h, shape_words(sh, sizeof sh, c->after.rank, local));
	rh_td(h, c->why ? c->why : "");
	rh_put(h, "</tr>\n");
}

static void tensor_buttons(struct plan_ctx *x, const struct dist_op *d)
{
	const struct graph *g = x->p->graph;
	const struct op *op = &g->ops[d->op];
	for (int i = 0; i < d->n_in; i++) {
		char label[16], title[256];
		snprintf(label, sizeof label, "in %d", i);
		snprintf(title, sizeof title, "%s input %d (%s): slice per rank", op->name, i,
		         g->tensors[op->in[i]].name);
		paint_button(x, colour_layout(&x->cs, &d->in[i]), label, title);
	}
	for (int i = 0; i < d->n_out; i++) {
		char label[16], title[256];
		snprintf(label, sizeof label, "out %d", i);
		snprintf(title, sizeof title, "%s output %d: slice per rank", op->name, i);
		paint_button(x, colour_layout(&x->cs, &d->out[i]), label, title);
	}
}

static void ops_table(struct plan_ctx *x, const struct report_plan_words *w)
{
	struct report_html *h = x->h;
	const struct plan *p = x->p;
	const struct graph *g = p->graph;
	/* the buttons beside the op's name: in view at 1280 px however wide
	 * the strategies and names make the table */
	static const char *const cols[] = {"#", "op", "show on mesh", "kind", "strategy", "source",
	                                   "device matrix: tensor maps (in ; out)", "comm / device",
	                                   NULL};
	rh_put(h, "<div class=\"scroll\">");
	rh_table_begin(h, "ops", cols);
	for (int i = 0; i < g->n_ops; i++) {
		const struct dist_op *d = &p->ops[i];
		const struct op *op = &g->ops[i];
		char b[512], num[32];
		rh_printf(h, "<tr class=\"op-row\" id=\"op-%d\">", i);
		rh_td_num(h, i, (snprintf(num, sizeof num, "%d", i), num));
		rh_td(h, op->name);
		rh_put(h, "<td>");
		tensor_buttons(x, d);
		rh_put(h, "</td>");
		rh_td(h, op_kind_name(op->kind));
		rh_put(h, "<td><code>");
		rh_esc(h, w && w->strategy ? w->strategy[i] : "");
		rh_put(h, "</code></td>");
		rh_td(h, w && w->source ? w->source[i] : strategy_source_names[d->source]);
		rh_put(h, "<td><code>");
		rh_esc(h, devmat_words(b, sizeof b, &d->dm));
		rh_put(h, ":<br>");
		for (int t = 0; t < d->n_in + d->n_out; t++) {
			const struct layout *l = t < d->n_in ? &d->in[t] : &d->out[t - d->n_in];
			size_t o = 0;
			o += (size_t)snprintf(b + o, sizeof b - o, "%s[", t == d->n_in ? " ; " : t ? " " : "");
			for (int k = 0; k < l->rank && o < sizeof b - 32; k++) {
				int m[PLAN_MAX_AXES];
				int n = layout_tensor_map(l, k, m);
				o += (size_t)snprintf(b + o, sizeof b - o, "%s%d", k ? "," : "", n ? m[0] : -1);
			}
			snprintf(b + o, sizeof b - o, "]");
			rh_esc(h, b);
		}
		rh_put(h, "</code></td>");
		double bytes = 0;
		for (int c = 0; c < d->n_comm; c++)
			bytes += d->comm[c].bytes_per_device;
		rh_td_num(h, bytes, rh_si(h, num, sizeof num, bytes, "B"));
		rh_put(h, "</tr>\n");
	}
	rh_table_end(h);
	rh_put(h, "</div>\n");
}

static void comm_tables(struct plan_ctx *x, double *fused_b)
{
	struct report_html *h = x->h;
	const struct plan *p = x->p;
	const struct graph *g = p->graph;
	static const char *const cols[] = {"where", "step", "dim", "rank groups", "bytes / device",
	                                   "slice after", "why", NULL};
	rh_put(h, "<h3>Collectives of the ops (forward) and their gradients</h3>\n"
	          "<div class=\"scroll\">");
	rh_table_begin(h, "comm", cols);
	for (int i = 0; i < g->n_ops; i++) {
		const struct dist_op *d = &p->ops[i];
		char where[256];
		for (int c = 0; c < d->n_comm; c++) {
			snprintf(where, sizeof where, "%s", g->ops[i].name);
			comm_row(x, where, &d->comm[c]);
		}
		for (int c = 0; c < d->n_grad; c++) {
			snprintf(where, sizeof where, "%s (gradient)", g->ops[i].name);
			comm_row(x, where, &d->grad[c]);
		}
	}
	rh_table_end(h);
	rh_put(h, "</div>\n<h3>Redistributions between ops</h3>\n");
	if (!p->n_edges) {
		rh_put(h, "<p>None: every consumer reads its input in the layout its producer "
		          "leaves.</p>\n");
		return;
	}
	rh_put(h, "<div class=\"scroll\">");
	rh_table_begin(h, "redist", cols);
	for (int e = 0; e < p->n_edges; e++) {
		const struct plan_edge *x2 = &p->edges[e];
		char where[320];
		snprintf(where, sizeof where, "%s -> %s (input %d)",
		         x2->producer >= 0 ? g->ops[x2->producer].name : g->tensors[x2->tensor].name,
		         g->ops[x2->consumer].name, x2->consumer_in);
		for (int s = 0; s < x2->redist.n_steps; s++)
			comm_row(x, where, &x2->redist.steps[s]);
		*fused_b += x2->fused_saving_bytes;
	}
	rh_table_end(h);
	rh_put(h, "</div>\n");
}

/* A plan's bytes per device: its ops' forward collectives, the
 * redistributions, the gradient all-reduces (explain's totals). */
static void plan_bytes(const struct plan *p, double *op_b, double *redist_b, double *grad_b)
{
	*op_b = *redist_b = *grad_b = 0;
	for (int i = 0; i < p->graph->n_ops; i++) {
		for (int c = 0; c < p->ops[i].n_comm; c++)
			*op_b += p->ops[i].comm[c].bytes_per_device;
		for (int c = 0; c < p->ops[i].n_grad; c++)
			*grad_b += p->ops[i].grad[c].bytes_per_device;
	}
	for (int e = 0; e < p->n_edges; e++)
		*redist_b += p->edges[e].redist.bytes_per_device;
}

static void tiers_words(struct report_html *h, const struct topology *t, int64_t n_devices)
{
	char b1[32], b2[32];
	rh_put(h, "<p>");
	rh_esc(h, t->name);
	rh_printf(h, ": %lld devices in %lld server(s) of %d. Tiers: ", (long long)n_devices,
	          (long long)((n_devices + t->devices_per_server - 1) / t->devices_per_server),
	          t->devices_per_server);
	for (int i = 0; i < t->n_tiers; i++) {
		const struct topo_tier *x = &t->tiers[i];
		rh_printf(h, "%s<b>", i ? "; " : "");
		rh_esc(h, x->name);
		rh_printf(h, "</b> %d group(s), %s per link, latency %s", x->n_groups,
		          rh_si(h, b1, sizeof b1, x->bandwidth_bps, "B/s"),
		          rh_si(h, b2, sizeof b2, x->latency_s, "s"));
	}
	if (t->servers > 1 || n_devices > t->devices_per_server)
		rh_printf(h, "; between servers %d NIC(s) each at %s", t->nic.per_server,
		          rh_si(h, b1, sizeof b1, t->nic.bandwidth_bps, "B/s"));
	rh_put(h, ". Dashed outlines: the first tier's groups.</p>\n");
}

void report_html_plan(struct report_html *h, const char *id, const struct plan *p,
                      const struct report_plan_words *w)
{
	const struct topology *t = p->scenario->topo;
	const struct graph *g = p->graph;
	/* every stage's devices (a plan's n_devices are one stage's) */
	int64_t devices = p->scenario->devices > p->n_devices ? p->scenario->devices : p->n_devices;
	struct plan_ctx x = {.h = h, .p = p, .n_devices = devices, .cs = {.n_devices = devices}};
	rh_printf(h, "<section class=\"plan\" id=\"%s\">\n<h2>Plan", id);
	if (w && w->planner) {
		rh_put(h, ": ");
		rh_esc(h, w->planner);
	}
	if (w && w->summary) {
		rh_put(h, " — ");
		rh_esc(h, w->summary);
	}
	rh_put(h, "</h2>\n<div class=\"facts\">");
	char b[64];
	rh_put(h, "<div>scenario<b>");
	rh_esc(h, p->scenario->name);
	rh_put(h, "</b></div><div>model<b>");
	rh_esc(h, g->name);
	rh_printf(h, "</b></div><div>devices<b>%lld of ", (long long)devices);
	rh_esc(h, t->device.kind);
	if (devices != p->n_devices)
		rh_printf(h, ", %lld per pipeline stage", (long long)p->n_devices);
	rh_printf(h, "</b></div><div>operators<b>%d</b></div><div>redistributions<b>%d</b></div>"
	             "<div>mode<b>%s</b></div></div>\n",
	          g->n_ops, p->n_edges, p->mode == REDIST_FUSED ? "fused" : "MindSpore-compatible");
	tiers_words(h, t, devices);

	/* The mesh, painted with the first op's output; the colourings of
	 * every tensor and step are collected while the tables are written
	 * and follow as data. */
	int first = g->n_ops > 0 && p->ops[0].n_out > 0 ? colour_layout(&x.cs, &p->ops[0].out[0]) : -1;
	int *fill = first >= 0 ? x.cs.c[first].idx : NULL;
	char cap[256];
	snprintf(cap, sizeof cap, "One cell per device, coloured by what the legend names: the "
	                          "slice of a tensor each rank holds, or the rank groups of a "
	                          "collective. The buttons in the tables choose; grey: not held.");
	x.mesh = rh_mesh(h, t, devices, fill, cap);
	if (first >= 0) {
		rh_put(h, "<b>");
		rh_esc(h, g->ops[0].name);
		rh_put(h, " output 0: slice per rank</b> ");
		for (int k = 0; k < x.cs.c[first].n_labels && k < 48; k++)
			rh_legend_item(h, k, x.cs.c[first].labels[k]);
		if (x.cs.c[first].n_labels > 48)
			rh_printf(h, "<span>... %d more (the colours repeat every %d)</span>",
			          x.cs.c[first].n_labels - 48, RH_COLOURS);
	}
	rh_mesh_end(h);

	rh_put(h, "<h3>Operators</h3>\n<p>Strategy in MindSpore's tuple form (slices per dimension "
	          "of each input); tensor maps name device-matrix dimensions counted from the right, "
	          "-1 for not split.</p>\n");
	ops_table(&x, w);
	double op_b, redist_b, grad_b, fused_b = 0;
	comm_tables(&x, &fused_b);
	plan_bytes(p, &op_b, &redist_b, &grad_b);
	rh_put(h, "<h3>Totals per device</h3>\n<table><tbody>");
	const char *names[] = {"forward op communication", "redistribution", "gradient all-reduce",
	                       "fused mode would save"};
	double v[] = {op_b, redist_b, grad_b, fused_b};
	for (int i = 0; i < 4; i++) {
		rh_put(h, "<tr>");
		rh_td(h, names[i]);
		rh_td_num(h, v[i], rh_si(h, b, sizeof b, v[i], "B"));
		rh_put(h, "</tr>");
	}
	rh_put(h, "</tbody></table>\n");
	colourings_write(h, x.mesh, &x.cs);
	if (x.cs.oom)
		h->oom = true;
	colourings_free(&x.cs);
	rh_put(h, "</section>\n");
}

void report_html_plans_differ(struct report_html *h, const struct plan *const *p,
                              const struct report_plan_words *w, int n)
{
	if (n < 2)
		return;
	const struct graph *g = p[0]->graph;
	rh_put(h, "<section id=\"plans-differ\"><h2>Where the plans differ</h2>\n");
	rh_put(h, "<table class=\"differ\"><thead><tr><th>op</th>");
	for (int k = 0; k < n; k++) {
		rh_printf(h, "<th><a href=\"#plan-%d\">", k);
		rh_esc(h, w[k].planner ? w[k].planner : "plan");
		rh_put(h, "</a></th>");
	}
	rh_put(h, "</tr></thead><tbody>\n");
	int differ = 0;
	for (int i = 0; i < g->n_ops; i++) {
		bool same = true;
		for (int k = 1; k < n; k++)
			same &= p[k]->graph->n_ops == g->n_ops && !strcmp(w[k].strategy[i], w[0].strategy[i]);
		if (same)
			continue;
		differ++;
		rh_put(h, "<tr class=\"differ-row\">");
		rh_td(h, g->ops[i].name);
		for (int k = 0; k < n; k++) {
			rh_put(h, "<td><code>");
			rh_esc(h, i < p[k]->graph->n_ops ? w[k].strategy[i] : "-");
			rh_put(h, "</code></td>");
		}
		rh_put(h, "</tr>\n");
	}
	const char *names[] = {"forward op communication / device", "redistribution / device",
	                       "gradient all-reduce / device"};
	for (int m = 0; m < 3; m++) {
		rh_put(h, "<tr>");
		rh_td(h, names[m]);
		for (int k = 0; k < n; k++) {
			double v[3];
			char b[32];
			plan_bytes(p[k], &v[0], &v[1], &v[2]);
			rh_td_num(h, v[m], rh_si(h, b, sizeof b, v[m], "B"));
		}
		rh_put(h, "</tr>\n");
	}
	rh_printf(h, "</tbody></table>\n<p>%d op(s) of %d planned differently.</p></section>\n",
	          differ, g->n_ops);
}
