/* cmd_check.c — `shardlab check FILE...`: validate files of any kind.
 *
 * The kind comes from the file's "format". Every diagnostic of every file
 * goes to stderr; each valid file gets one line on stdout. Exit 1 if any
 * file is invalid. */
#include <string.h>

#include "cli.h"
#include "planner.h"
#include "studies.h"
#include "validation.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab check [--max-points N] FILE...\n"
	        "\n"
	        "Validate topology, model, scenario, validation, study and calibration\n"
	        "files. The kind of each file is read from its \"format\" field\n"
	        "(shardlab-topology, shardlab-model, shardlab-scenario,\n"
	        "shardlab-validation, shardlab-study, shardlab-calibration). A study is\n"
	        "checked with the scenario, model and topologies it names, and its\n"
	        "summary counts its points (counted without being held: a study of\n"
	        "more than --max-points N points, by default 1000000, is refused as\n"
	        "sweep refuses it) and those Megatron-LM would refuse. A scenario is\n"
	        "checked together with the model and the topology it names, and each\n"
	        "shard() strategy it configures against its op's distribution rules; a\n"
	        "validation file together with every scenario, model and topology its\n"
	        "rows name. A Hugging Face config.json (no \"format\", an \"architectures\"\n"
	        "or \"model_type\") is read as shardlab import hf reads it.\n"
	        "\n"
	        "Each valid file prints one line on stdout:\n"
	        "  ok  FILE  (KIND: SUMMARY)\n"
	        "Every problem prints on stderr as FILE:LINE: JSON.PATH: MESSAGE; all\n"
	        "problems of a file are reported in one run.\n"
	        "\n"
	        "exit status: 0 all files valid, 1 some file invalid, 2 usage error.\n");
}

/* Each configured strategy against its op's distribution rules (a MatMul's
 * contracted dimension cut alike in both inputs, ...): the loader checked
 * only shapes and device counts. */
static bool strategies_valid(struct arena *a, const struct scenario *s, struct diag_list *d)
{
	size_t errors = d->errors;
	int64_t stage = s->devices / s->training.pipeline_stages;
	for (int i = 0; i < s->n_shards; i++) {
		struct dist_op op;
		dist_op_from_config(a, s->graph, s->shards[i].op, &s->shards[i], stage, &op, d);
	}
	return d->errors == errors;
}

/* --max-points: the largest study check accepts, as sweep does. */
static int64_t check_max_points = STUDY_MAX_POINTS;

void cli_check_set_max_points(int64_t n)
{
	check_max_points = n;
}

/* The calibration a topology names, read and held to its device (applied
 * to t, which the check then drops); NULL when it names none, or after
 * diagnostics with *ok false. */
static const struct calibration *named_calibration(struct arena *a, struct topology *t,
                                                   struct diag_list *d, bool *ok)
{
	*ok = true;
	if (!t || !t->calibration_file || !strcmp(t->calibration_file, "none"))
		return NULL;
	struct calibration *c = cost_calibration_load(a, t->calibration_file, d);
	*ok = c && cost_calibration_apply(c, t, d);
	return *ok ? c : NULL;
}

bool cli_check_doc(struct arena *a, struct json_doc *doc, char *summary, size_t size)
{
	struct diag_list *d = doc->diags;
	struct jv root;
	int64_t version;
	const char *fmt = NULL;
	bool hf = false;
	size_t errors = d->errors;
	summary[0] = '\0';
	if (jv_root(doc, &root)) {
		/* A Hugging Face config.json has no "format" but says its model. */
		hf = graph_hf_is_config(&root);
		if (!hf)
			fmt = jv_format(&root, &version);
	}
	if (hf) {
		struct hf_model m;
		struct graph *g = graph_hf_read(a, doc, 0, 0, &m) ? graph_generate(a, &m.gen, d) : NULL;
		if (g) {
			struct graph_totals tot;
			char p[32];
			graph_totals(g, &tot);
			snprintf(summary, size, "Hugging Face config: %s, %s parameters", m.architecture,
			         cli_si(p, sizeof p, (double)tot.parameters, ""));
		}
	} else if (!fmt) {
		/* reported */
	} else if (!strcmp(fmt, TOPO_FORMAT)) {
		struct topology *t = topo_load_doc(a, doc);
		bool cal_ok;
		const struct calibration *c = named_calibration(a, t, d, &cal_ok);
		if (!cal_ok)
			t = NULL;
		if (t && c)
			snprintf(summary, size, "topology: %lld × %s, calibration %s",
			         (long long)t->n_devices, t->device.kind, c->name);
		else if (t)
			snprintf(summary, size, "topology: %lld × %s", (long long)t->n_devices,
			         t->device.kind);
	} else if (!strcmp(fmt, MODEL_FORMAT)) {
		struct graph *g = graph_load_doc(a, doc);
		if (g) {
			struct graph_totals tot;
			char p[32];
			graph_totals(g, &tot);
			snprintf(summary, size, "model: %d ops, %s parameters", tot.ops,
			         cli_si(p, sizeof p, (double)tot.parameters, ""));
		}
	} else if (!strcmp(fmt, SCENARIO_FORMAT)) {
		struct scenario *s = scenario_load_doc(a, doc);
		bool cal_ok = true;
		if (s)
			named_calibration(a, s->topo, d, &cal_ok);
		if (s && (!cal_ok || !strategies_valid(a, s, d)))
			s = NULL;
		if (s)
			snprintf(summary, size, "scenario: %s on %lld of %lld devices", s->graph->name,
			         (long long)s->devices, (long long)s->topo->n_devices);
	} else if (!strcmp(fmt, VALIDATION_FORMAT)) {
		struct validation *v = validation_load_doc(a, doc);
		if (v)
			snprintf(summary, size, "validation: %s, %d row%s",
			         validation_kind_names[v->kind], v->n_rows, v->n_rows == 1 ? "" : "s");
	} else if (!strcmp(fmt, STUDY_FORMAT)) {
		struct study *st = study_load_doc(a, doc);
		struct study_size sz;
		if (st && study_check_size(st, check_max_points, &sz, d)) {
			int64_t left_out = 0;
			for (int k = 0; k < SEARCH_RULE_COUNT; k++)
				left_out += sz.refused[k];
			char cases[48] = "";
			if (st->n_faults > 1)
				snprintf(cases, sizeof cases, ", %d fault cases", st->n_faults);
			snprintf(summary, size, "study: %s, %d cluster famil%s%s, %lld points (%lld left "
			         "out as Megatron-LM would refuse them)", st->scenario->graph->name,
			         st->n_clusters, st->n_clusters == 1 ? "y" : "ies", cases,
			         (long long)sz.points, (long long)left_out);
		}
	} else if (!strcmp(fmt, JOBS_FORMAT)) {
		struct jobs_file *jf = jobs_load_doc(a, doc);
		if (jf)
			snprintf(summary, size, "jobs: %d job%s on %s", jf->n_jobs,
			         jf->n_jobs == 1 ? "" : "s", jf->topo->name);
	} else if (!strcmp(fmt, CALIBRATION_FORMAT)) {
		struct calibration *c = cost_calibration_load_doc(a, doc);
		if (c)
			snprintf(summary, size, "calibration: %s, %d figure%s", c->name, c->n_figures,
			         c->n_figures == 1 ? "" : "s");
	} else {
		struct jv f;
		jv_get(&root, "format", &f);
		jv_error(&f, "unknown format \"%s\" (expected \"%s\", \"%s\", \"%s\", \"%s\", "
		         "\"%s\", \"%s\" or \"%s\")", fmt, TOPO_FORMAT, MODEL_FORMAT, SCENARIO_FORMAT,
		         VALIDATION_FORMAT, STUDY_FORMAT, CALIBRATION_FORMAT, JOBS_FORMAT);
	}
	return summary[0] && d->errors == errors;
}

static bool check_one(const char *path)
{
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct json_doc doc;
	char summary[160] = "";
	bool ok = false;
	if (!a) {
		fprintf(stderr, "shardlab: out of memory\n");
		return false;
	}
	if (json_doc_load(&doc, path, &d))
		ok = cli_check_doc(a, &doc, summary, sizeof summary);
	json_doc_free(&doc);
	cli_print_diags(&d);
	if (ok)
		printf("ok  %s  (%s)\n", path, summary);
	diag_list_free(&d);
	arena_free(a);
	return ok;
}

int cmd_check(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	if (argc < 2) {
		help(stderr);
		return EXIT_USAGE;
	}
	int bad = 0, files = 0;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max-points") && i + 1 < argc) {
			if (cli_parse_range("check", argv[i], argv[i + 1], 1, INT64_MAX,
			                    &check_max_points) != EXIT_OK)
				return EXIT_USAGE;
			i++;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "shardlab check: unknown option '%s' (see --help)\n", argv[i]);
			return EXIT_USAGE;
		}
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--max-points")) {
			i++;
			continue;
		}
		files++;
		if (!check_one(argv[i]))
			bad++;
	}
	if (!files) {
		help(stderr);
		return EXIT_USAGE;
	}
	return bad ? EXIT_INVALID : EXIT_OK;
}
