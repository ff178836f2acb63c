/* cmd_verify.c — `shardlab verify SCENARIO`: the plan executed on real
 * numbers, rank by rank, against the unsharded model (verify/).
 *
 * One line per op output and per redistributed edge with the largest
 * absolute and relative error and a verdict; exit status 0 only when every
 * tensor matches within the tolerance. --trace-rank R prints what rank R
 * loads, computes and receives at each step; --json prints the same as a
 * tree. Before running, the memory verify would need is bounded and a
 * scale suggested when it is too much.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "verify.h"

#define DEFAULT_MAX_MIB 4096

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab verify SCENARIO [--planner NAME] [--fused] [--scale S]\n"
	        "                       [--seed N] [--tolerance X] [--trace-rank R]\n"
	        "                       [--max-memory MIB] [--json]\n"
	        "\n"
	        "Run a scenario's plan on real numbers and check that it computes what\n"
	        "the unsharded model computes. Every rank holds only its slices of each\n"
	        "tensor; each op runs on them (GSL BLAS for MatMul and BatchMatMul,\n"
	        "loops for the rest); the op's own collectives and every redistribution\n"
	        "step of the plan move the ranks' buffers over their rank groups. Each\n"
	        "op's output and each redistributed input is compared, rank by rank,\n"
	        "with the same tensor computed once on one device in double precision\n"
	        "from the same seeded inputs (partial sums added over their groups).\n"
	        "Then the backward pass: every parameter's gradient against the\n"
	        "unsharded one; with ZeRO, each rank's chunk after the gradient\n"
	        "reduce-scatter; with pipeline stages, the activations each cut sends\n"
	        "against what the ranks hold live there.\n"
	        "\n"
	        "options:\n"
	        "  --planner NAME   plan with this planner (default: the scenario's first,\n"
	        "                   else propagate); --fused, --rec-cost, --rec-order as for\n"
	        "                   plan\n"
	        "  --scale S        shrink every dimension by as much of S as keeps every\n"
	        "                   cut of the plan dividing it, and Reshapes consistent:\n"
	        "                   the same strategy on smaller tensors (default 1;\n"
	        "                   docs/verify.md)\n"
	        "  --seed N         seed of the inputs and parameters (default 1)\n"
	        "  --tolerance X    largest error, relative to the largest magnitude of the\n"
	        "                   reference tensor, that matches (default 1e-9)\n"
	        "  --trace-rank R   print what rank R loads, computes and receives at every\n"
	        "                   step of the forward pass, with the ranks of each\n"
	        "                   collective's group\n"
	        "  --max-memory MIB refuse to run when verify could need more (default %d)\n"
	        "  --json           print JSON: {\"scenario\", \"planner\", \"devices\", \"scale\",\n"
	        "                   \"seed\", \"tolerance\", \"checks\": [{\"kind\" (op, edge, grad\n"
	        "                   or stage), \"name\", \"tensor\", \"max_abs\", \"max_rel\",\n"
	        "                   \"verdict\", \"note\"}], \"counts\", \"passed\", \"max_rel\",\n"
	        "                   \"reference_bytes\", \"peak_rank_bytes\", \"trace\"}\n"
	        "  -h, --help       this help\n"
	        "\n"
	        "verdicts: match; mismatch (the numbers differ); broken (the plan cannot\n"
	        "run: a step leaves shapes or slices its layout does not have, an op\n"
	        "needs an element its rank does not hold); not verified (an op the\n"
	        "verifier cannot execute, with the reason).\n"
	        "\n"
	        "exit status: 0 every tensor matches, 1 a tensor does not match or could\n"
	        "not be verified, or invalid input (diagnostics on stderr), 2 usage error.\n",
	        DEFAULT_MAX_MIB);
}

struct args {
	const char *file;
	bool json;
	int64_t max_mib;
	struct cli_plan_args plan;
	struct verify_options o;
};

static int parse_double(const char *text, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(text, &end);
	if (*text == '\0' || *end != '\0' || errno || !(v >= 0) || v > 1) {
		fprintf(stderr, "shardlab verify: --tolerance takes a number from 0 to 1, got '%s'\n",
		        text);
		return EXIT_USAGE;
	}
	*out = v;
	return EXIT_OK;
}

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.max_mib = DEFAULT_MAX_MIB};
	verify_options_init(&a->o);
	int rc = EXIT_OK;
	int64_t v;
	for (int i = 1; i < argc && rc == EXIT_OK; i++) {
		int taken = cli_plan_option("verify", argc, argv, &i, &a->plan);
		if (taken) {
			rc = taken < 0 ? EXIT_USAGE : EXIT_OK;
		} else if (!strcmp(argv[i], "--json")) {
			a->json = true;
		} else if (!strcmp(argv[i], "--scale") && i + 1 < argc) {
			rc = cli_parse_count("verify", "--scale", argv[++i], INT32_MAX, &a->o.scale);
			if (rc == EXIT_OK && a->o.scale < 1) {
				fprintf(stderr, "shardlab verify: --scale takes a count of at least 1\n");
				rc = EXIT_USAGE;
			}
		} else if (!strcmp(argv[i], "--seed") && i + 1 < argc) {
			rc = cli_parse_count("verify", "--seed", argv[++i], INT64_MAX, &v);
			a->o.seed = (uint64_t)v;
		} else if (!strcmp(argv[i], "--tolerance") && i + 1 < argc) {
			rc = parse_double(argv[++i], &a->o.tolerance);
		} else if (!strcmp(argv[i], "--trace-rank") && i + 1 < argc) {
			rc = cli_parse_count("verify", "--trace-rank", argv[++i], INT64_MAX,
			                     &a->o.trace_rank);
		} else if (!strcmp(argv[i], "--max-memory") && i + 1 < argc) {
			rc = cli_parse_count("verify", "--max-memory", argv[++i], INT32_MAX, &a->max_mib);
		} else {
			rc = cli_scenario_word("verify", argv[i], &a->file);
		}
	}
	return rc == EXIT_OK ? cli_scenario_named("verify", a->file) : rc;
}

static const char *kind_name(enum verify_what w)
{
	return w == VERIFY_OP     ? "op"
	       : w == VERIFY_EDGE ? "edge"
	       : w == VERIFY_GRAD ? "grad"
	                          : "stage";
}

static void print_text(const struct plan *p, const char *planner, const struct args *a,
                       const struct verify_result *r)
{
	printf("verify %s: planner %s, %lld devices per stage, scale %lld, seed %llu\n",
	       p->scenario->file, planner, (long long)p->n_devices, (long long)r->scale,
	       (unsigned long long)a->o.seed);
	printf("tolerance %.3g, relative to the largest magnitude of each reference tensor\n",
	       a->o.tolerance);
	if (r->n_trace) {
		printf("\nrank %lld, step by step:\n", (long long)a->o.trace_rank);
		for (int i = 0; i < r->n_trace; i++)
			printf("  %s\n", r->trace[i]);
	}
	int w = 24;
	for (int k = 0; k < r->n_checks; k++) {
		int l = (int)strlen(r->checks[k].label);
		if (l > w)
			w = l;
	}
	printf("\n  %-*s  %-4s  %9s  %9s  %s\n", w, "tensor", "kind", "max abs", "max rel",
	       "verdict");
	for (int k = 0; k < r->n_checks; k++) {
		const struct verify_check *c = &r->checks[k];
		printf("  %-*s  %-4s  %9.2e  %9.2e  %s%s%s\n", w, c->label, kind_name(c->what),
		       c->max_abs, c->max_rel, verify_status_names[c->status], c->note ? ": " : "",
		       c->note ? c->note : "");
	}
	if (r->gradients_skipped)
		printf("\ngradients not checked: the forward pass did not verify\n");
	printf("\nmemory: reference %.1f MiB, ranks' buffers at most %.1f MiB\n",
	       r->reference_bytes / 1048576.0, r->peak_rank_bytes / 1048576.0);
	if (p->scenario->training.pipeline_stages > 1)
		printf("pipeline: %lld stages run the same plan on their own ranks; checked: the "
		       "activations each cut sends\n", (long long)p->scenario->training.pipeline_stages);
	if (r->passed)
		printf("verified: all %d tensors match (largest relative error %.2e)\n", r->n_checks,
		       r->max_rel);
	else
		printf("NOT VERIFIED: %d of %d tensors match; %d mismatch, %d broken, %d not "
		       "verified\n", r->n_match, r->n_checks, r->n_mismatch, r->n_broken,
		       r->n_unsupported);
}

static int print_json(const struct plan *p, const char *planner, const struct args *a,
                      const struct verify_result *r)
{
	cJSON *root = cJSON_CreateObject();
	if (!root)
		return EXIT_INVALID;
	cJSON_AddStringToObject(root, "scenario", p->scenario->file);
	cJSON_AddStringToObject(root, "planner", planner);
	cJSON_AddNumberToObject(root, "devices", (double)p->n_devices);
	cJSON_AddNumberToObject(root, "scale", (double)r->scale);
	cJSON_AddNumberToObject(root, "seed", (double)a->o.seed);
	cJSON_AddNumberToObject(root, "tolerance", a->o.tolerance);
	cJSON *arr = cJSON_AddArrayToObject(root, "checks");
	for (int k = 0; arr && k < r->n_checks; k++) {
		const struct verify_check *c = &r->checks[k];
		cJSON *o = cJSON_CreateObject();
		if (!o)
			break;
		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "kind", kind_name(c->what));
		cJSON_AddStringToObject(o, "name", c->label);
		cJSON_AddStringToObject(o, "tensor", p->graph->tensors[c->tensor].name);
		cJSON_AddNumberToObject(o, "max_abs", c->max_abs);
		cJSON_AddNumberToObject(o, "max_rel", c->max_rel);
		cJSON_AddStringToObject(o, "verdict", verify_status_names[c->status]);
		if (c->note)
			cJSON_AddStringToObject(o, "note", c->note);
		else
			cJSON_AddNullToObject(o, "note");
	}
	cJSON *n = cJSON_AddObjectToObject(root, "counts");
	if (n) {
		cJSON_AddNumberToObject(n, "match", r->n_match);
		cJSON_AddNumberToObject(n, "mismatch", r->n_mismatch);
		cJSON_AddNumberToObject(n, "broken", r->n_broken);
		cJSON_AddNumberToObject(n, "not_verified", r->n_unsupported);
	}
	cJSON_AddBoolToObject(root, "passed", r->passed);
	cJSON_AddNumberToObject(root, "max_rel", r->max_rel);
	cJSON_AddNumberToObject(root, "reference_bytes", r->reference_bytes);
	cJSON_AddNumberToObject(root, "peak_rank_bytes", r->peak_rank_bytes);
	if (a->o.trace_rank >= 0) {
		cJSON *t = cJSON_AddArrayToObject(root, "trace");
		for (int i = 0; t && i < r->n_trace; i++)
			cJSON_AddItemToArray(t, cJSON_CreateString(r->trace[i]));
	}
	return report_print_json(root, "verify");
}

int cmd_verify(int argc, char **argv)
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
	struct scenario *s = NULL;
	enum planner_kind kind = PLANNER_PROPAGATE;
	struct plan *p = cli_load_plan(ar, a.file, &a.plan, &s, &kind, &d);
	bool ok = p != NULL;
	if (ok && a.o.trace_rank >= p->n_devices) {
		diag_add(&d, DIAG_ERROR, NULL, 0, NULL,
		         "--trace-rank %lld: the plan has ranks 0 to %lld", (long long)a.o.trace_rank,
		         (long long)p->n_devices - 1);
		ok = false;
	}
	if (ok) {
		double limit = (double)a.max_mib * 1048576.0;
		double need = verify_memory_bound(p, a.o.scale);
		if (need > limit) {
			int64_t s2 = verify_suggest_scale(p, a.o.scale, limit);
			if (s2 > 0)
				diag_add(&d, DIAG_ERROR, s->file, 0, NULL,
				         "verify could need %.0f MiB at scale %lld, more than --max-memory "
				         "%lld; try --scale %lld (at most %.0f MiB; docs/verify.md)",
				         need / 1048576.0, (long long)a.o.scale, (long long)a.max_mib,
				         (long long)s2, verify_memory_bound(p, s2) / 1048576.0);
			else
				diag_add(&d, DIAG_ERROR, s->file, 0, NULL,
				         "verify could need %.0f MiB at scale %lld, more than --max-memory "
				         "%lld, and no --scale up to 1024 brings it under (a dimension "
				         "shrinks only as far as the plan's cuts of it allow; "
				         "docs/verify.md)", need / 1048576.0, (long long)a.o.scale,
				         (long long)a.max_mib);
			ok = false;
		}
	}
	struct verify_result r;
	ok = ok && verify_plan(ar, p, &a.o, &r, &d);
	cli_print_diags(&d);
	if (!ok)
		rc = EXIT_INVALID;
	else if (a.json)
		rc = print_json(p, planner_names[kind], &a, &r);
	else
		print_text(p, planner_names[kind], &a, &r);
	if (ok && rc == EXIT_OK && !r.passed)
		rc = EXIT_INVALID;
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
