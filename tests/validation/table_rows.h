/* table_rows.h — one check for the validation files whose rows are a
 * published performance table (validation/megatron-bridge.json,
 * nemo-h100.json): each row loads with the parallelism its table states
 * and plans. The expected figures are the table's columns and what follows
 * from them by hand: DP = GPUs / (TP x PP x CP), the graph one micro-batch
 * of every replica (MBS x DP samples), GBS / (MBS x DP) micro-batches (the
 * tables' GA column where they print one), GBS x sequence tokens an
 * iteration, and the model's parameters counted from its published
 * dimensions. Included by the test programs of tests/validation/. */
#ifndef SHARDLAB_TEST_TABLE_ROWS_H
#define SHARDLAB_TEST_TABLE_ROWS_H

#include <criterion/criterion.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "validation.h"
#include "fixture.h"

struct table_row {
	const char *prefix; /* the start of the row's name */
	int64_t gpus, gbs, mbs, seq, tp, pp, cp, vp, ga, params;
	bool fsdp; /* ZeRO 3 (Megatron-FSDP), else the distributed optimizer */
};

/* Loads `path` and checks its rows, in file order, against want[0..n). */
static inline void table_rows_check(const char *path, const struct table_row *want, int n)
{
	struct validation *v = validation_load(A, path, &D);
	cr_assert_not_null(v);
	cr_assert_eq(v->kind, VALIDATION_TRAINING);
	cr_assert_eq(v->n_rows, n);
	struct validation_run_options o = {.estimate_only = true};
	for (int i = 0; i < n; i++) {
		const struct validation_training_row *r = &v->training[i];
		const struct scenario *s = r->scenario;
		int64_t dp = want[i].gpus / (want[i].tp * want[i].pp * want[i].cp), params = 0;
		cr_assert(!strncmp(r->name, want[i].prefix, strlen(want[i].prefix)), "%s", r->name);
		cr_expect_eq(dp * want[i].tp * want[i].pp * want[i].cp, want[i].gpus, "%s", r->name);
		cr_expect_eq(want[i].gbs, want[i].ga * want[i].mbs * dp, "%s: GBS = GA x MBS x DP", r->name);
		cr_expect_eq(s->devices, want[i].gpus, "%s", r->name);
		cr_expect_eq(r->tensor_parallel, want[i].tp, "%s", r->name);
		cr_expect_eq(r->micro_batch, want[i].mbs, "%s", r->name);
		cr_expect_eq(s->training.pipeline_stages, want[i].pp, "%s", r->name);
		cr_expect_eq(s->training.context_parallel, want[i].cp, "%s", r->name);
		cr_expect_eq(s->training.virtual_stages, want[i].vp, "%s", r->name);
		cr_expect_eq(s->training.zero_stage, want[i].fsdp ? 3 : 1, "%s", r->name);
		cr_expect_eq(s->training.global_batch, want[i].gbs, "%s", r->name);
		cr_expect_eq(s->graph->batch, want[i].mbs * dp, "%s", r->name);
		cr_expect_eq(s->training.micro_batches, want[i].ga, "%s: GBS / (MBS x DP)", r->name);
		cr_assert(graph_params_fit(s->graph, &params));
		cr_expect_eq(params, want[i].params, "%s", r->name);
		cr_expect_eq(r->measure, MEASURE_TOKENS_PER_S_PER_DEVICE, "%s", r->name);
		cr_expect_eq(r->tokens_per_iteration, (double)want[i].gbs * (double)want[i].seq, "%s", r->name);
		struct validation_training_result res;
		validation_run_training(A, r, &o, &res);
		cr_expect_null(res.error, "%s: %s", r->name, res.error);
		cr_expect_not_null(res.plan, "%s", r->name);
		cr_expect_gt(res.est_s, 0, "%s", r->name);
	}
}

#endif
