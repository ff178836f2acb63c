/* test_verify.c — numeric verification (verify/): the seed-000 plan run on
 * real numbers matches the unsharded FFN with the collectives the seed
 * shows; a redistribution that swaps two ranks' slices is caught; an op
 * the verifier cannot run is reported, never passed; every shipped
 * scenario small enough passes. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "verify.h"

TestSuite(verify, .init = fixture_setup, .fini = fixture_teardown);

static struct plan *plan_of(struct scenario *s)
{
	enum planner_kind k = s->n_planners ? s->planners[0] : PLANNER_PROPAGATE;
	struct plan_options o = {.mode = REDIST_COMPAT};
	struct plan *p = plan_make(A, s, k, &o, &D);
	cr_assert_not_null(p, "%s does not plan", s->file);
	return p;
}

static const struct verify_check *check_named(const struct verify_result *r, const char *label)
{
	for (int k = 0; k < r->n_checks; k++)
		if (!strcmp(r->checks[k].label, label))
			return &r->checks[k];
	cr_assert_fail("no check named %s", label);
	return NULL;
}

static bool traced(const struct verify_result *r, const char *text)
{
	for (int i = 0; i < r->n_trace; i++)
		if (strstr(r->trace[i], text))
			return true;
	return false;
}

/* Seed 000: dense1.matmul ((2,1),(1,4)) on 8 devices; propagation gives
 * dense2.matmul ((2,4),(4,1)), whose partial sums an AllReduce over ranks
 * 0-1-2-3 completes, then a StridedSlice to (32, 16) for dense2.add
 * ((2,4),(4)). Rank 0 holds x rows 0..31 and W1 columns 0..15. */
Test(verify, seed000_ffn_matches_with_the_seeds_collectives)
{
	struct plan *p = plan_of(fixture_scenario("scenarios/seed000-ffn-ir-8p.json"));
	struct verify_options o;
	verify_options_init(&o);
	o.trace_rank = 0;
	struct verify_result r;
	cr_assert(verify_plan(A, p, &o, &r, &D));
	cr_expect(r.passed);
	/* five op outputs and the one redistributed edge */
	cr_expect_eq(r.n_checks, 6);
	const struct verify_check *e = check_named(&r, "dense2.matmul -> dense2.add");
	cr_expect_eq(e->what, VERIFY_EDGE);
	cr_expect_eq(e->status, VERIFY_MATCH);
	cr_expect(traced(&r, "loads x[0:32, 0:64]"));
	cr_expect(traced(&r, "loads dense1.weight[0:64, 0:16]"));
	cr_expect(traced(&r, "AllReduce (sum) with ranks 0 1 2 3: holds dense2.matmul[0:32, 0:64]"));
	cr_expect(traced(&r, "StridedSlice dim 1: holds dense2.matmul[0:32, 0:16]"));
	/* the errors are rounding only: sums of 64 products of numbers in
	 * [-1, 1] in two orders differ by far less than 1e-12 */
	cr_expect_lt(r.max_rel, 1e-12);
}

/* The test-only hook: after the StridedSlice, ranks 0 and 1 swap their
 * slices. They hold different columns (0..15 and 16..31), so the edge and
 * dense2.add must both mismatch, and the error is of the size of the
 * values themselves (not rounding). */
Test(verify, swapped_slices_fail)
{
	struct plan *p = plan_of(fixture_scenario("scenarios/seed000-ffn-ir-8p.json"));
	int edge = -1;
	for (int i = 0; i < p->n_edges; i++)
		if (p->edges[i].redist.n_steps > 0)
			edge = i;
	cr_assert_geq(edge, 0);
	struct verify_options o;
	verify_options_init(&o);
	o.fault = (struct verify_fault){.edge = edge, .step = 0, .rank_a = 0, .rank_b = 1};
	struct verify_result r;
	cr_assert(verify_plan(A, p, &o, &r, &D));
	cr_expect(!r.passed);
	const struct verify_check *e = check_named(&r, "dense2.matmul -> dense2.add");
	cr_expect_eq(e->status, VERIFY_MISMATCH);
	cr_expect_gt(e->max_rel, 1e-3);
	cr_expect_eq(check_named(&r, "dense2.add")->status, VERIFY_MISMATCH);
	/* the ops before the edge are untouched */
	cr_expect_eq(check_named(&r, "dense2.matmul")->status, VERIFY_MATCH);
	cr_expect_eq(r.n_mismatch, 2);
}

/* Ranks 0 and 4 hold different rows of the same columns: also caught. */
Test(verify, swapped_rows_fail)
{
	struct plan *p = plan_of(fixture_scenario("scenarios/seed000-ffn-ir-8p.json"));
	int edge = -1;
	for (int i = 0; i < p->n_edges; i++)
		if (p->edges[i].redist.n_steps > 0)
			edge = i;
	struct verify_options o;
	verify_options_init(&o);
	o.fault = (struct verify_fault){.edge = edge, .step = 0, .rank_a = 0, .rank_b = 4};
	struct verify_result r;
	cr_assert(verify_plan(A, p, &o, &r, &D));
	cr_expect(!r.passed);
}

/* A cut vocabulary: the lookup's partial rows and the MatMul verify; the
 * cross-entropy over a cut class dimension is not run, and the verdict
 * says so instead of passing. */
Test(verify, unsupported_op_is_not_verified)
{
	struct plan *p = plan_of(fixture_scenario("tests/data/good/verify-vocab-4p.json"));
	struct verify_options o;
	verify_options_init(&o);
	struct verify_result r;
	cr_assert(verify_plan(A, p, &o, &r, &D));
	cr_expect(!r.passed);
	cr_expect_eq(check_named(&r, "embed")->status, VERIFY_MATCH);
	cr_expect_eq(check_named(&r, "logits")->status, VERIFY_MATCH);
	const struct verify_check *c = check_named(&r, "loss");
	cr_expect_eq(c->status, VERIFY_UNSUPPORTED);
	cr_expect(c->note && strstr(c->note, "SoftmaxCrossEntropy"));
	cr_expect_eq(r.n_unsupported, 1);
}

/* By hand: 64 / 2 = 32, a multiple of 8; 64 / 16 = 4 is not, so 64
 * stays; 12 is not divisible by 8 after any halving; scale 1 changes
 * nothing. */
Test(verify, scaled_dimensions_keep_cuts_dividing)
{
	cr_expect_eq(verify_scaled_dim(64, 2, 8), 32);
	cr_expect_eq(verify_scaled_dim(64, 8, 8), 8);
	cr_expect_eq(verify_scaled_dim(64, 16, 8), 64);
	cr_expect_eq(verify_scaled_dim(12, 2, 8), 12);
	cr_expect_eq(verify_scaled_dim(4096, 1, 8), 4096);
	cr_expect_eq(verify_scaled_dim(1024, 3, 8), 1024);
}

/* A shrunk plan is the same strategy on smaller tensors: the Megatron MLP
 * ([1024, 1024] tokens x hidden, TP 8) at a quarter of each dimension. */
Test(verify, scaled_megatron_mlp_matches)
{
	struct plan *p = plan_of(fixture_scenario("scenarios/megatron-mlp-8p.json"));
	struct verify_options o;
	verify_options_init(&o);
	o.scale = 4;
	struct verify_result r;
	cr_assert(verify_plan(A, p, &o, &r, &D));
	cr_expect(r.passed);
	/* the reference at scale 4 is a sixteenth of scale 1's (every tensor
	 * is two-dimensional with both dimensions shrunk, or one-dimensional
	 * with one shrunk: at most a quarter) */
	cr_expect_lt(r.reference_bytes, verify_reference_bytes(p, 1) / 4 + 1);
}

/* Every shipped scenario whose verification stays small passes, at scale
 * 1 when it fits 64 MiB, else at the first power-of-two scale that does
 * (up to 64). */
Test(verify, shipped_scenarios_pass, .timeout = 600)
{
	DIR *dir = opendir("scenarios");
	cr_assert_not_null(dir);
	struct dirent *e;
	char *names[64];
	int n = 0;
	while ((e = readdir(dir)) && n < 64) {
		size_t l = strlen(e->d_name);
		if (l > 5 && !strcmp(e->d_name + l - 5, ".json"))
			names[n++] = strdup(e->d_name);
	}
	closedir(dir);
	int verified = 0;
	for (int i = 0; i < n; i++) {
		char path[300];
		snprintf(path, sizeof path, "scenarios/%s", names[i]);
		free(names[i]);
		struct plan *p = plan_of(fixture_scenario(path));
		int64_t scale = 1;
		while (scale <= 64 && verify_memory_bound(p, scale) > 64.0 * 1048576)
			scale *= 2;
		if (scale > 64)
			continue;
		struct verify_options o;
		verify_options_init(&o);
		o.scale = scale;
		struct verify_result r;
		struct diag_list d;
		diag_list_init(&d);
		bool ok = verify_plan(A, p, &o, &r, &d);
		diag_list_free(&d);
		if (!ok)
			continue; /* a scale this scenario's reshapes cannot take */
		for (int k = 0; k < r.n_checks; k++)
			cr_expect_eq(r.checks[k].status, VERIFY_MATCH, "%s (scale %lld): %s: %s (%s)",
			             path, (long long)scale, r.checks[k].label,
			             verify_status_names[r.checks[k].status],
			             r.checks[k].note ? r.checks[k].note : "");
		cr_expect(r.passed, "%s does not verify", path);
		verified++;
	}
	/* the seeds' ten scenarios (ffn, dense-matmul) and the Megatron MLP and
	 * attention on both topologies */
	cr_expect_geq(verified, 13);
}

/* The command: exit 0 and a verdict line when it matches; exit 1 and the
 * reason when an op cannot be verified; JSON says the same. */
Test(verify, command_exit_status_and_json)
{
	struct cli_run ok = fixture_shardlab("verify scenarios/seed000-ffn-ir-8p.json", false);
	cr_expect_eq(ok.status, 0);
	cr_expect(strstr(ok.out, "verified: all 6 tensors match"), "%s", ok.out);
	free(ok.out);
	struct cli_run bad = fixture_shardlab("verify tests/data/good/verify-vocab-4p.json", false);
	cr_expect_eq(bad.status, 1);
	cr_expect(strstr(bad.out, "not verified: rank 0: op kind SoftmaxCrossEntropy"), "%s",
	          bad.out);
	free(bad.out);
	struct cli_run js = fixture_shardlab("verify scenarios/seed000-ffn-ir-8p.json --json", false);
	cr_expect_eq(js.status, 0);
	cr_expect(strstr(js.out, "\"passed\":\ttrue") || strstr(js.out, "\"passed\": true"), "%s",
	          js.out);
	free(js.out);
	struct cli_run use = fixture_shardlab("verify scenarios/ffn-8p.json --scale 0", true);
	cr_expect_eq(use.status, 2);
	free(use.out);
}
