/* cmd_graph.c — `shardlab graph FILE [--json]`: a model's operators with
 * their shapes, forward FLOPs and parameters, then the totals.
 *
 * FILE is a model or a scenario (its "model"). The table uses readable
 * figures ("174.6 G", "5.5 PFLOP"); --json prints exact numbers. Every
 * pass is linear in the ops (GPT-3 is ~3000 of them).
 */
#include <inttypes.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab graph FILE [--json | --csv]\n"
	        "\n"
	        "List a model's operators in topological order: index, name, kind, input\n"
	        "shapes, output shapes with dtype, forward FLOPs and parameter elements,\n"
	        "then the totals (ops, parameters, active parameters of a mixture of\n"
	        "experts, parameter bytes, forward FLOPs, and the\n"
	        "FLOPs of MatMul and BatchMatMul alone).\n"
	        "\n"
	        "FILE is a model file (\"format\": \"shardlab-model\", an explicit graph or a\n"
	        "generator), a scenario file, whose model is listed, or a Hugging Face\n"
	        "config.json, read as `shardlab import hf` reads it (at its own context).\n"
	        "\n"
	        "options:\n"
	        "  --json     print JSON with exact numbers instead of the table:\n"
	        "             {\"name\", \"ops\": [{\"name\", \"kind\", \"inputs\": [{\"name\",\n"
	        "             \"shape\", \"dtype\"}], \"outputs\": [...], \"flops\", \"bytes_read\",\n"
	        "             \"bytes_written\", \"parameters\"}], \"totals\": {\"ops\",\n"
	        "             \"parameters\", \"parameter_bytes\", \"forward_flops\",\n"
	        "             \"matmul_flops\"}}\n"
	        "  --csv      print the ops as CSV, one row per op in topological\n"
	        "             order: index, name, kind, inputs, outputs (shapes, the\n"
	        "             outputs with dtype, space separated), forward_flops,\n"
	        "             bytes_read_bytes, bytes_written_bytes,\n"
	        "             parameters_elements\n"
	        "  -h, --help print this help\n"
	        "\n"
	        "FLOPs count a multiply-add as 2 (MatMul: 2mkn); parameters are elements.\n"
	        "A parameter used by two ops (tied embeddings) counts once in the totals.\n"
	        "\n"
	        "exit status: 0 success, 1 invalid file (diagnostics on stderr),\n"
	        "2 usage error.\n");
}

/* "[64,64] fp32" for each tensor of the list, space separated. */
static void shapes(char *buf, size_t size, const struct graph *g, const int *t, int n, bool dtype)
{
	size_t o = 0;
	buf[0] = '\0';
	for (int i = 0; i < n && o + 1 < size; i++) {
		const struct tensor *x = &g->tensors[t[i]];
		o += (size_t)snprintf(buf + o, size - o, "%s[", i ? " " : "");
		for (int d = 0; d < x->rank && o + 1 < size; d++)
			o += (size_t)snprintf(buf + o, size - o, "%s%" PRId64, d ? "," : "", x->dims[d]);
		if (o + 1 < size)
			o += (size_t)snprintf(buf + o, size - o, "]%s%s", dtype ? " " : "",
			                      dtype ? dtype_names[x->dtype] : "");
	}
}

static int print_table(const struct graph *g)
{
	int wname = 4, wkind = 4, win = 6, wout = 7;
	char in[512], out[512], f[32], p[32];
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *op = &g->ops[i];
		int n = (int)strlen(op->name), k = (int)strlen(op_kind_name(op->kind));
		wname = n > wname ? n : wname;
		wkind = k > wkind ? k : wkind;
		shapes(in, sizeof in, g, op->in, op->n_in, false);
		shapes(out, sizeof out, g, op->out, op->n_out, true);
		win = (int)strlen(in) > win ? (int)strlen(in) : win;
		wout = (int)strlen(out) > wout ? (int)strlen(out) : wout;
	}
	printf("model %s: %d ops\n\n", g->name, g->n_ops);
	printf("%5s  %-*s  %-*s  %-*s  %-*s  %12s  %10s\n", "#", wname, "name", wkind, "kind", win,
	       "inputs", wout, "outputs", "FLOPs", "params");
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *op = &g->ops[i];
		shapes(in, sizeof in, g, op->in, op->n_in, false);
		shapes(out, sizeof out, g, op->out, op->n_out, true);
		printf("%5d  %-*s  %-*s  %-*s  %-*s  %12s  %10s\n", i, wname, op->name, wkind,
		       op_kind_name(op->kind), win, in, wout, out, cli_si(f, sizeof f, op->flops, "FLOP"),
		       op->params ? cli_si(p, sizeof p, (double)op->params, "") : "-");
	}
	struct graph_totals t;
	graph_totals(g, &t);
	printf("\ntotals\n");
	printf("  ops              %d\n", t.ops);
	printf("  parameters       %s (%" PRId64 ")\n", cli_si(p, sizeof p, (double)t.parameters, ""),
	       t.parameters);
	if (t.active_parameters != t.parameters)
		printf("  active params    %s (%" PRId64 ", per token: the experts its router "
		       "picks)\n", cli_si(p, sizeof p, (double)t.active_parameters, ""),
		       t.active_parameters);
	printf("  parameter bytes  %s\n", cli_si(p, sizeof p, t.parameter_bytes, "B"));
	printf("  forward FLOPs    %s\n", cli_si(f, sizeof f, t.forward_flops, "FLOP"));
	printf("  matmul FLOPs     %s\n", cli_si(f, sizeof f, t.matmul_flops, "FLOP"));
	return EXIT_OK;
}

static void json_str(const char *s)
{
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_tensors(const struct graph *g, const int *t, int n)
{
	putchar('[');
	for (int i = 0; i < n; i++) {
		const struct tensor *x = &g->tensors[t[i]];
		printf("%s{\"name\":", i ? "," : "");
		json_str(x->name);
		printf(",\"shape\":[");
		for (int d = 0; d < x->rank; d++)
			printf("%s%" PRId64, d ? "," : "", x->dims[d]);
		printf("],\"dtype\":\"%s\"}", dtype_names[x->dtype]);
	}
	putchar(']');
}

/* FLOPs and bytes are whole numbers well below 2^53 for real models. */
static int print_json(const struct graph *g)
{
	printf("{\"name\":");
	json_str(g->name);
	printf(",\n\"ops\":[\n");
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *op = &g->ops[i];
		printf("{\"name\":");
		json_str(op->name);
		printf(",\"kind\":\"%s\",\"inputs\":", op_kind_name(op->kind));
		json_tensors(g, op->in, op->n_in);
		printf(",\"outputs\":");
		json_tensors(g, op->out, op->n_out);
		printf(",\"flops\":%.0f,\"bytes_read\":%.0f,\"bytes_written\":%.0f,\"parameters\":%" PRId64
		       "}%s\n",
		       op->flops, op->bytes_read, op->bytes_written, op->params,
		       i + 1 < g->n_ops ? "," : "");
	}
	struct graph_totals t;
	graph_totals(g, &t);
	printf("],\n\"totals\":{\"ops\":%d,\"parameters\":%" PRId64
	       ",\"parameter_bytes\":%.0f,\"forward_flops\":%.0f,\"matmul_flops\":%.0f}}\n",
	       t.ops, t.parameters, t.parameter_bytes, t.forward_flops, t.matmul_flops);
	return EXIT_OK;
}

static int print_csv(const struct graph *g)
{
	static const char *const cols[] = {"index", "name", "kind", "inputs", "outputs",
	                                   "forward_flops", "bytes_read_bytes",
	                                   "bytes_written_bytes", "parameters_elements", NULL};
	struct cli_csv c = {.f = stdout};
	char b[512];
	cli_csv_header(&c, cols);
	for (int i = 0; i < g->n_ops; i++) {
		const struct op *op = &g->ops[i];
		cli_csv_int(&c, i);
		cli_csv_str(&c, op->name);
		cli_csv_str(&c, op_kind_name(op->kind));
		shapes(b, sizeof b, g, op->in, op->n_in, false);
		cli_csv_str(&c, b);
		shapes(b, sizeof b, g, op->out, op->n_out, true);
		cli_csv_str(&c, b);
		cli_csv_num(&c, op->flops);
		cli_csv_num(&c, op->bytes_read);
		cli_csv_num(&c, op->bytes_written);
		cli_csv_int(&c, op->params);
		cli_csv_end(&c);
	}
	return EXIT_OK;
}

int cmd_graph(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	const char *path = NULL;
	bool json = false, csv = false;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--csv")) {
			csv = true;
		} else if (argv[i][0] == '-' || path) {
			fprintf(stderr, "shardlab graph: unexpected argument '%s'\n\n", argv[i]);
			help(stderr);
			return EXIT_USAGE;
		} else {
			path = argv[i];
		}
	}
	if (!path) {
		help(stderr);
		return EXIT_USAGE;
	}
	struct arena *a = arena_new();
	if (!a) {
		fprintf(stderr, "shardlab: out of memory\n");
		return EXIT_INVALID;
	}
	struct diag_list d;
	diag_list_init(&d);
	struct graph *g = cli_load_graph(a, path, &d);
	cli_print_diags(&d);
	int rc = !g || d.errors ? EXIT_INVALID
	         : json         ? print_json(g)
	         : csv          ? print_csv(g)
	                        : print_table(g);
	diag_list_free(&d);
	arena_free(a);
	return rc;
}
