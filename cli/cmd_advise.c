/* cmd_advise.c — `shardlab advise SCENARIO`: seed 000's three rules of
 * thumb for configuring sharding propagation, checked on the plan it
 * produces.
 *
 *  a. Configure ops with weights and ops that change tensor rank: warn
 *     where such an op is unconfigured and propagation had several equally
 *     cheap strategies for it (its choice was a tie-break, not the user's
 *     intent).
 *  b. Configured strategies can force costly redistributions: the K edges
 *     with the most bytes per device.
 *  c. Configure the boundary where the parallel style changes: an op is
 *     model parallel when it splits a parameter input, data parallel when
 *     it has parameters and splits none; an op without parameters takes
 *     the style its inputs' producers agree on, none where they disagree.
 *     Warn where the style changes along an edge between two unconfigured
 *     ops, naming the consumer.
 *
 * Each warning names the op and suggests a `shard` entry to paste. Advice
 * is not an error: exit 0 with warnings. Linear in ops and edges, plus an
 * enumeration of the strategies of the K edges' ends.
 */
#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab advise SCENARIO [--top K] [--json | --csv]\n"
	        "\n"
	        "Plan a scenario by sharding propagation and check it against seed 000's\n"
	        "rules of thumb for choosing which ops to configure:\n"
	        "  tied-choice     an op with weights, or one that changes tensor rank,\n"
	        "                  is unconfigured and propagation had several equally\n"
	        "                  cheap strategies for it\n"
	        "  costly-edge     the K redistributions with the most bytes per device\n"
	        "                  that the strategies force\n"
	        "  style-change    the parallel style changes (data parallel: parameters\n"
	        "                  not split; model parallel: a parameter split; ops\n"
	        "                  without parameters follow their inputs, none where\n"
	        "                  those disagree) along an edge between two\n"
	        "                  unconfigured ops\n"
	        "Each warning names the op and suggests a \"shard\" entry to paste into\n"
	        "the scenario: the strategy propagation chose, or for a costly edge one\n"
	        "that reads the tensor as its producer leaves it.\n"
	        "\n"
	        "options:\n"
	        "  --top K     list the K costliest redistributions (default 5)\n"
	        "  --json      print JSON: {\"scenario\", \"model\", \"topology\", \"devices\",\n"
	        "              \"planner\", \"mode\", \"warnings\": [{\"rule\", \"op\", \"message\",\n"
	        "              \"suggestion\" (a shard entry or null), and per rule\n"
	        "              \"n_tied\", \"edge_bytes\" | \"redistribution\" (as plan\n"
	        "              writes them) | \"from\", \"from_style\", \"style\"}]}\n"
	        "  --csv       print the warnings as CSV, one row each: rule, op, message,\n"
	        "              suggestion (the \"shard\" entry to paste; empty when none),\n"
	        "              bytes_per_device (costly-edge: the redistribution's;\n"
	        "              tied-choice: the tied edge bytes)\n"
	        "  -h, --help  this help\n"
	        "\n"
	        "exit status: 0 success, warnings or not, 1 invalid scenario or strategy\n"
	        "(diagnostics on stderr), 2 usage error.\n");
}

struct args {
	const char *file;
	bool json, csv;
	int64_t top;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.top = 5};
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!strcmp(argv[i], "--csv")) {
			a->csv = true;
		} else if (!strcmp(argv[i], "--top") && i + 1 < argc) {
			if (cli_parse_count("advise", "--top", argv[++i], INT32_MAX, &a->top) != EXIT_OK)
				return EXIT_USAGE;
		} else if (cli_scenario_word("advise", argv[i], &a->file) != EXIT_OK) {
			return EXIT_USAGE;
		}
	}
	return cli_scenario_named("advise", a->file);
}

/* ------------------------------------------------------------- checks */

enum rule { RULE_TIED, RULE_COSTLY, RULE_STYLE, RULE_COUNT };
static const char *const rule_names[RULE_COUNT] = {"tied-choice", "costly-edge", "style-change"};

enum style { STYLE_NONE, STYLE_DATA, STYLE_MODEL };
static const char *const style_names[] = {"none", "data parallel", "model parallel"};

struct warning {
	enum rule rule;
	int op;                         /* the op named */
	const struct dist_op *suggest;  /* the strategy to paste, NULL when none */
	const struct plan_edge *edge;   /* RULE_COSTLY */
	int from;                       /* RULE_STYLE: the producer */
	enum style from_style, style;
};

struct advice {
	const struct plan *p;
	int n;
	struct warning *w;              /* at most 2 x ops + edges */
};

static bool has_param(const struct graph *g, int op)
{
	for (int i = 0; i < g->ops[op].n_in; i++)
		if (g->tensors[g->ops[op].in[i]].role == TENSOR_PARAM)
			return true;
	return false;
}

static bool changes_rank(const struct graph *g, int op)
{
	const struct op *o = &g->ops[op];
	if (o->n_in == 0)
		return false;
	for (int k = 0; k < o->n_out; k++)
		if (g->tensors[o->out[k]].rank != g->tensors[o->in[0]].rank)
			return true;
	return false;
}

static bool configured(const struct plan *p, int op)
{
	return p->ops[op].source == STRATEGY_CONFIGURED;
}

/* Rule a. */
static void check_tied(struct advice *ad)
{
	const struct plan *p = ad->p;
	for (int i = 0; p->choices && i < p->graph->n_ops; i++) {
		if (p->ops[i].source != STRATEGY_PROPAGATED || p->choices[i].n_tied <= 1)
			continue;
		if (has_param(p->graph, i) || changes_rank(p->graph, i))
			ad->w[ad->n++] = (struct warning){.rule = RULE_TIED, .op = i, .suggest = &p->ops[i]};
	}
}

/* A strategy of `op` whose layout of input `in` (in >= 0) or output `out`
 * is the same placement as `want`: the first in enumeration order. */
static const struct dist_op *matching(struct arena *a, const struct plan *p, int op, int in,
                                      int out, const struct layout *want)
{
	struct strategy *st;
	bool all = p->scenario->propagation.all_devices;
	int n = plan_enumerate(a, p->graph, op, p->n_devices, all, &st);
	struct diag_list scratch;
	diag_list_init(&scratch);
	struct dist_op *d = arena_alloc(a, sizeof(*d));
	const struct dist_op *found = NULL;
	for (int k = 0; d && k < n && !found; k++) {
		if (!dist_op_from_cuts(a, p->graph, op, (const int64_t(*)[GRAPH_MAX_RANK])st[k].cuts,
		                       p->n_devices, d, &scratch))
			continue;
		if (layout_same_placement(in >= 0 ? &d->in[in] : &d->out[out], want))
			found = d;
	}
	diag_list_free(&scratch);
	return found;
}

static int edge_cmp(const void *pa, const void *pb)
{
	const struct plan_edge *a = *(const struct plan_edge *const *)pa;
	const struct plan_edge *b = *(const struct plan_edge *const *)pb;
	if (a->redist.bytes_per_device != b->redist.bytes_per_device)
		return a->redist.bytes_per_device > b->redist.bytes_per_device ? -1 : 1;
	return a < b ? -1 : a > b; /* edges are stored in op order */
}

/* Rule b: suggest the consumer reading the tensor as the producer leaves
 * it, else the producer leaving it as the consumer reads it. */
static void check_costly(struct advice *ad, struct arena *a, int64_t top)
{
	const struct plan *p = ad->p;
	const struct plan_edge **e = arena_calloc(a, (size_t)p->n_edges + 1, sizeof(*e));
	int n = 0;
	for (int i = 0; e && i < p->n_edges; i++)
		if (p->edges[i].redist.bytes_per_device > 0)
			e[n++] = &p->edges[i];
	if (n > 1)
		qsort(e, (size_t)n, sizeof(*e), edge_cmp);
	for (int i = 0; i < n && i < top; i++) {
		const struct plan_edge *x = e[i];
		const struct layout *left = &p->ops[x->producer].out[x->producer_out];
		const struct layout *read = &p->ops[x->consumer].in[x->consumer_in];
		struct warning w = {.rule = RULE_COSTLY, .op = x->consumer, .edge = x};
		if (!configured(p, x->consumer) || configured(p, x->producer))
			w.suggest = matching(a, p, x->consumer, x->consumer_in, -1, left);
		if (!w.suggest) {
			w.suggest = matching(a, p, x->producer, -1, x->producer_out, read);
			w.op = w.suggest ? x->producer : x->consumer;
		}
		ad->w[ad->n++] = w;
	}
}

static enum style own_style(const struct plan *p, int op)
{
	const struct graph *g = p->graph;
	const struct dist_op *d = &p->ops[op];
	enum style s = STYLE_NONE;
	for (int i = 0; i < d->n_in; i++) {
		const struct tensor *t = &g->tensors[g->ops[op].in[i]];
		if (t->role != TENSOR_PARAM)
			continue;
		s = s == STYLE_NONE ? STYLE_DATA : s;
		for (int k = 0; k < t->rank; k++)
			if (d->cuts[i][k] > 1)
				s = STYLE_MODEL;
	}
	return s;
}

/* The producer of input j of op i whose style differs from `want`, among
 * inputs from unconfigured ops with a style; -1 when none. */
static int differing_input(const struct plan *p, const enum style *st, int i, enum style want)
{
	const struct graph *g = p->graph;
	for (int j = 0; j < g->ops[i].n_in; j++) {
		int prod = g->tensors[g->ops[i].in[j]].producer;
		if (prod >= 0 && !configured(p, prod) && st[prod] != STYLE_NONE && st[prod] != want)
			return prod;
	}
	return -1;
}

/* The style of the first input whose producer has one. */
static enum style first_input_style(const struct graph *g, const enum style *st, int i)
{
	for (int j = 0; j < g->ops[i].n_in; j++) {
		int prod = g->tensors[g->ops[i].in[j]].producer;
		if (prod >= 0 && st[prod] != STYLE_NONE)
			return st[prod];
	}
	return STYLE_NONE;
}

static bool inputs_disagree(const struct graph *g, const enum style *st, int i, enum style want)
{
	for (int j = 0; j < g->ops[i].n_in; j++) {
		int prod = g->tensors[g->ops[i].in[j]].producer;
		if (prod >= 0 && st[prod] != STYLE_NONE && st[prod] != want)
			return true;
	}
	return false;
}

/* Rule c. Ops are in topological order, so producers' styles are known.
 * An op without parameters whose inputs disagree is itself the boundary:
 * it is named, and passes no style on (a residual stream would otherwise
 * carry one style through every layer). */
static void check_style(struct advice *ad, struct arena *a)
{
	const struct plan *p = ad->p;
	const struct graph *g = p->graph;
	enum style *st = arena_calloc(a, (size_t)g->n_ops + 1, sizeof(*st));
	for (int i = 0; st && i < g->n_ops; i++) {
		enum style own = own_style(p, i);
		enum style want = own != STYLE_NONE ? own : first_input_style(g, st, i);
		st[i] = own == STYLE_NONE && inputs_disagree(g, st, i, want) ? STYLE_NONE : want;
		int from = want != STYLE_NONE && !configured(p, i) ? differing_input(p, st, i, want) : -1;
		if (from >= 0)
			ad->w[ad->n++] = (struct warning){.rule = RULE_STYLE, .op = i,
			                                  .suggest = &p->ops[i], .from = from,
			                                  .from_style = st[from], .style = want};
	}
}

/* ------------------------------------------------------------ writers */

static const char *message(char *buf, size_t size, const struct plan *p,
                           const struct warning *w)
{
	const struct graph *g = p->graph;
	char by[32], st[512];
	const char *name = g->ops[w->op].name;
	switch (w->rule) {
	case RULE_TIED:
		snprintf(buf, size,
		         "%s (%s, %s) is not configured and %d strategies tied at %s of "
		         "redistribution per device; propagation took %s by its tie-break",
		         name, op_kind_name(g->ops[w->op].kind),
		         has_param(g, w->op) ? "has weights" : "changes tensor rank",
		         p->choices[w->op].n_tied, cli_si(by, sizeof by, p->choices[w->op].edge_bytes, "B"),
		         report_strategy_text(st, sizeof st, g, &p->ops[w->op]));
		break;
	case RULE_COSTLY:
		snprintf(buf, size, "%s -> %s (input %d) redistributes %s per device",
		         g->ops[w->edge->producer].name, g->ops[w->edge->consumer].name,
		         w->edge->consumer_in, cli_si(by, sizeof by, w->edge->redist.bytes_per_device, "B"));
		break;
	default:
		snprintf(buf, size,
		         "%s is %s but its input from %s is %s, and neither op is configured: "
		         "configure the boundary",
		         name, style_names[w->style], g->ops[w->from].name, style_names[w->from_style]);
		break;
	}
	return buf;
}

/* An op name with every run of digits as '#': layers.7.attn.k.matmul and
 * layers.8.attn.k.matmul are the same op of two layers. */
static void name_pattern(const char *name, char *out, size_t size)
{
	size_t o = 0;
	for (const char *c = name; *c && o + 1 < size; c++) {
		if (*c >= '0' && *c <= '9') {
			out[o++] = '#';
			while (c[1] >= '0' && c[1] <= '9')
				c++;
		} else {
			out[o++] = *c;
		}
	}
	out[o] = '\0';
}

/* Do two warnings say the same thing about the same op of different
 * layers? Costly edges are few and always listed. */
static bool repeats(const struct plan *p, const struct warning *a, const struct warning *b)
{
	const struct graph *g = p->graph;
	char x[256], y[256];
	if (a->rule != b->rule || a->rule == RULE_COSTLY)
		return false;
	name_pattern(g->ops[a->op].name, x, sizeof x);
	name_pattern(g->ops[b->op].name, y, sizeof y);
	if (strcmp(x, y))
		return false;
	if (a->rule == RULE_STYLE) {
		name_pattern(g->ops[a->from].name, x, sizeof x);
		name_pattern(g->ops[b->from].name, y, sizeof y);
		return !strcmp(x, y) && a->style == b->style && a->from_style == b->from_style;
	}
	if (p->choices[a->op].n_tied != p->choices[b->op].n_tied || !a->suggest || !b->suggest)
		return false;
	report_strategy_text(x, sizeof x, g, a->suggest);
	report_strategy_text(y, sizeof y, g, b->suggest);
	return !strcmp(x, y);
}

static void print_text(const struct advice *ad, const struct report_options *o)
{
	const struct plan *p = ad->p;
	const struct scenario *s = p->scenario;
	char msg[1024], entry[640];
	bool *shown = calloc((size_t)(ad->n ? ad->n : 1), sizeof(bool));
	printf("advise %s: model %s on %" PRId64 " devices of %s, planner %s\n", s->name,
	       p->graph->name, p->n_devices, s->topo->name, o->planner);
	for (int i = 0; i < ad->n; i++) {
		const struct warning *w = &ad->w[i];
		if (shown && shown[i])
			continue;
		printf("\nwarning: %s: %s\n", rule_names[w->rule], message(msg, sizeof msg, p, w));
		if (w->edge)
			for (int k = 0; k < w->edge->redist.n_steps; k++)
				report_text_step("    ", &w->edge->redist.steps[k]);
		if (w->suggest)
			printf("  suggest: %s\n",
			       report_shard_entry(entry, sizeof entry, p->graph, w->suggest));
		else if (w->rule == RULE_COSTLY)
			printf("  no strategy of either op reads the tensor as the other leaves it\n");
		/* The same warning for the same op of other layers, once. */
		int more = 0, last = i;
		for (int k = i + 1; shown && k < ad->n; k++)
			if (!shown[k] && repeats(p, w, &ad->w[k])) {
				shown[k] = true;
				more++;
				last = k;
			}
		if (more)
			printf("  the same for %d more op%s like it, through %s\n", more,
			       more == 1 ? "" : "s", p->graph->ops[ad->w[last].op].name);
	}
	free(shown);
	printf("\n%d warning%s\n", ad->n, ad->n == 1 ? "" : "s");
}

static cJSON *json_warning(const struct plan *p, const struct warning *w)
{
	char msg[1024], entry[640];
	cJSON *o = cJSON_CreateObject();
	cJSON_AddStringToObject(o, "rule", rule_names[w->rule]);
	cJSON_AddStringToObject(o, "op", p->graph->ops[w->op].name);
	cJSON_AddStringToObject(o, "message", message(msg, sizeof msg, p, w));
	if (w->suggest)
		cJSON_AddStringToObject(o, "suggestion",
		                        report_shard_entry(entry, sizeof entry, p->graph, w->suggest));
	else
		cJSON_AddNullToObject(o, "suggestion");
	if (w->rule == RULE_TIED) {
		cJSON_AddNumberToObject(o, "n_tied", p->choices[w->op].n_tied);
		cJSON_AddNumberToObject(o, "edge_bytes", p->choices[w->op].edge_bytes);
	} else if (w->rule == RULE_COSTLY) {
		cJSON_AddItemToObject(o, "redistribution", report_json_edge(p, w->edge));
	} else {
		cJSON_AddStringToObject(o, "from", p->graph->ops[w->from].name);
		cJSON_AddStringToObject(o, "from_style", style_names[w->from_style]);
		cJSON_AddStringToObject(o, "style", style_names[w->style]);
	}
	return o;
}

static cJSON *json_advice(const struct advice *ad, const struct report_options *o)
{
	cJSON *root = report_json_head(ad->p, o);
	cJSON *ws = cJSON_CreateArray();
	for (int i = 0; i < ad->n; i++)
		cJSON_AddItemToArray(ws, json_warning(ad->p, &ad->w[i]));
	cJSON_AddItemToObject(root, "warnings", ws);
	return root;
}

static void csv_advice(const struct advice *ad)
{
	static const char *const cols[] = {"rule", "op", "message", "suggestion",
	                                   "bytes_per_device", NULL};
	const struct plan *p = ad->p;
	struct cli_csv c = {.f = stdout};
	char msg[1024], entry[640];
	cli_csv_header(&c, cols);
	for (int i = 0; i < ad->n; i++) {
		const struct warning *w = &ad->w[i];
		cli_csv_str(&c, rule_names[w->rule]);
		cli_csv_str(&c, p->graph->ops[w->op].name);
		cli_csv_str(&c, message(msg, sizeof msg, p, w));
		cli_csv_str(&c, w->suggest ? report_shard_entry(entry, sizeof entry, p->graph, w->suggest)
		                       : NULL);
		if (w->rule == RULE_COSTLY)
			cli_csv_num(&c, w->edge->redist.bytes_per_device);
		else if (w->rule == RULE_TIED)
			cli_csv_num(&c, p->choices[w->op].edge_bytes);
		else
			cli_csv_str(&c, NULL);
		cli_csv_end(&c);
	}
}

int cmd_advise(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	struct args a;
	int rc = parse_args(argc, argv, &a);
	if (rc != EXIT_OK)
		return rc;
	struct diag_list d;
	diag_list_init(&d);
	struct arena *ar = arena_new();
	struct scenario *s = ar ? scenario_load(ar, a.file, &d) : NULL;
	if (s && !cli_default_calibration(ar, s->topo, s->training.framework, &d))
		s = NULL;
	struct plan *p = s ? plan_propagate(ar, s, REDIST_COMPAT, &d) : NULL;
	cli_print_diags(&d);
	struct advice ad = {.p = p};
	if (p)
		ad.w = arena_calloc(ar, 2 * (size_t)p->graph->n_ops + (size_t)p->n_edges + 1, sizeof(*ad.w));
	rc = ad.w ? EXIT_OK : EXIT_INVALID;
	if (ad.w) {
		check_tied(&ad);
		check_costly(&ad, ar, a.top);
		check_style(&ad, ar);
	}
	struct report_options o = {.command = "advise", .planner = planner_names[PLANNER_PROPAGATE]};
	if (ad.w && a.json)
		rc = report_print_json(json_advice(&ad, &o), "advise");
	else if (ad.w && a.csv)
		csv_advice(&ad);
	else if (ad.w)
		print_text(&ad, &o);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
