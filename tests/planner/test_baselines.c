/* test_baselines.c — the data-parallel and Megatron-style baseline plans
 * (issue 5, point 4). Expected strategies, groups and byte counts are
 * worked out by hand in the comment above each check, from the generators'
 * shapes (docs/formats.md), the hand-written Megatron scenarios (seeds 001
 * and 003) and the ring formula 2(s-1)/s * L of an AllReduce. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "planner.h"
#include "fixture.h"

static const struct plan_options OPT = {.mode = REDIST_COMPAT, .rec_cost = REC_COST_TOPOLOGY};

TestSuite(baselines, .init = fixture_setup, .fini = fixture_teardown);

/* ----------------------------------------------------------- helpers */

/* A scenario from a generator object, a topology file, a device count and
 * more training fields (each with a leading comma). */
static struct scenario *generated_with(const char *gen, const char *topo, int devices,
                                       const char *training)
{
	char tr[1024];
	snprintf(tr, sizeof tr, "{\"global_batch\": 8, \"dtype\": \"bf16\"%s}", training);
	return fixture_generated(A, &D, gen, topo, devices, tr);
}

static struct scenario *generated(const char *gen, const char *topo, int devices)
{
	return generated_with(gen, topo, devices, "");
}

static int op_of(const struct plan *p, const char *name)
{
	int i = graph_find_op(p->graph, name);
	cr_assert_geq(i, 0, "no op %s", name);
	return i;
}

static const struct dist_op *dop(const struct plan *p, const char *name)
{
	return &p->ops[op_of(p, name)];
}

/* The cuts of every input of op `name`, dimension by dimension, in order. */
static void expect_cuts(const struct plan *p, const char *name, const int64_t *want, int n)
{
	const struct dist_op *d = dop(p, name);
	int k = 0;
	for (int i = 0; i < d->n_in; i++)
		for (int dd = 0; dd < d->in[i].rank; dd++, k++)
			if (k < n)
				cr_expect_eq(d->cuts[i][dd], want[k], "%s: input %d dim %d cut %lld, expected %lld",
				             name, i, dd, (long long)d->cuts[i][dd], (long long)want[k]);
	cr_expect_eq(k, n, "%s: %d cuts, expected %d", name, k, n);
}

/* Group g of a step is ranks first, first + stride, ... (size of them). */
static void expect_group(const struct comm_step *st, int g, int size, int64_t first,
                         int64_t stride)
{
	cr_assert_lt(g, st->groups.n_groups);
	cr_assert_eq(st->groups.size, size, "group size %d, expected %d", st->groups.size, size);
	for (int r = 0; r < size; r++)
		cr_expect_eq(rank_groups_rank(&st->groups, g, r), first + r * stride,
		             "group %d rank %d", g, r);
}

/* Forward AllReduces of the ops themselves, all ops together. */
static int count_allreduce(const struct plan *p, enum reduce_op red)
{
	int n = 0;
	for (int i = 0; i < p->graph->n_ops; i++)
		for (int k = 0; k < p->ops[i].n_comm; k++)
			n += p->ops[i].comm[k].kind == STEP_ALLREDUCE && p->ops[i].comm[k].reduce == red;
	return n;
}

static double redist_bytes_total(const struct plan *p)
{
	double b = 0;
	for (int e = 0; e < p->n_edges; e++)
		b += p->edges[e].redist.bytes_per_device;
	return b;
}

/* Does some diagnostic of this severity contain `text`? */
static bool has_diag(enum diag_severity sev, const char *text)
{
	for (size_t i = 0; i < D.count; i++)
		if (D.items[i].severity == sev && D.items[i].msg && strstr(D.items[i].msg, text))
			return true;
	return false;
}

/* The megatron plan matches the hand-configured one op by op: same cuts,
 * same layouts read and handed on, same forward communication. */
static void expect_same_plan(const struct plan *got, const struct plan *want)
{
	const struct graph *g = got->graph;
	for (int i = 0; i < g->n_ops; i++) {
		const struct dist_op *a = &got->ops[i], *b = &want->ops[i];
		const char *n = g->ops[i].name;
		for (int j = 0; j < a->n_in; j++) {
			for (int d = 0; d < a->in[j].rank; d++)
				cr_expect_eq(a->cuts[j][d], b->cuts[j][d], "%s input %d dim %d", n, j, d);
			cr_expect(layout_same_placement(&a->in[j], &b->in[j]), "%s input %d layout", n, j);
		}
		for (int k = 0; k < a->n_out; k++)
			cr_expect(layout_same_placement(&a->out[k], &b->out[k]), "%s output %d layout", n, k);
		cr_expect_eq(a->n_comm, b->n_comm, "%s: %d forward steps, hand plan %d", n, a->n_comm,
		             b->n_comm);
		for (int k = 0; k < a->n_comm && k < b->n_comm; k++) {
			cr_expect_eq(a->comm[k].kind, b->comm[k].kind, "%s step %d", n, k);
			cr_expect_float_eq(a->comm[k].bytes_per_device, b->comm[k].bytes_per_device, 1e-9,
			                   "%s step %d bytes", n, k);
		}
	}
	cr_expect_eq(got->n_edges, want->n_edges);
	cr_expect_float_eq(redist_bytes_total(got), redist_bytes_total(want), 1e-9);
}

/* ------------------------------------------------------ data parallel */

Test(baselines, data_parallel_ffn_cuts_the_batch_over_all_devices)
{
	/* Seed 000's FFN, x [64,64] fp32, on 8 devices: every op cuts dim 0
	 * of x (or of the activation it reads) 8 ways and replicates the
	 * parameters: MatMul ((8,1),(1,1)), Add ((8,1),(1,)), ReLU ((8,1)).
	 * The scenario's shard() of dense1.matmul is ignored (a note says so). */
	struct scenario *s = fixture_scenario("scenarios/ffn-8p.json");
	struct plan *p = plan_data_parallel(A, s, &OPT, &D);
	cr_assert_not_null(p);
	cr_expect_eq(p->scenario, s);
	static const int64_t mm[] = {8, 1, 1, 1}, add[] = {8, 1, 1}, relu[] = {8, 1};
	expect_cuts(p, "dense1.matmul", mm, 4);
	expect_cuts(p, "dense1.add", add, 3);
	expect_cuts(p, "relu", relu, 2);
	expect_cuts(p, "dense2.matmul", mm, 4);
	expect_cuts(p, "dense2.add", add, 3);
	for (int i = 0; i < p->graph->n_ops; i++) {
		cr_expect_eq(p->ops[i].source, STRATEGY_PLANNED, "op %d", i);
		cr_expect_eq(p->ops[i].n_comm, 0, "op %d has forward communication", i);
	}
	/* Every consumer reads the batch rows its producer left: no edges. */
	cr_expect_eq(p->n_edges, 0);
	/* Gradients: each parameter's gradient is all-reduced over the one
	 * group of all 8 ranks. Weight [64,64] fp32 = 16384 B on each rank:
	 * 2*7/8 * 16384 = 28672 B; bias [64] = 256 B: 2*7/8 * 256 = 448 B. */
	static const char *const ops[] = {"dense1.matmul", "dense1.add", "dense2.matmul", "dense2.add"};
	static const double bytes[] = {28672, 448, 28672, 448};
	for (int i = 0; i < 4; i++) {
		const struct dist_op *d = dop(p, ops[i]);
		cr_assert_eq(d->n_grad, 1, "%s: %d gradient steps", ops[i], d->n_grad);
		cr_expect_eq(d->grad[0].kind, STEP_ALLREDUCE);
		cr_expect_eq(d->grad[0].groups.n_groups, 1);
		expect_group(&d->grad[0], 0, 8, 0, 1);
		cr_expect_float_eq(d->grad[0].bytes_per_device, bytes[i], 1e-9, "%s", ops[i]);
	}
	cr_expect(has_diag(DIAG_NOTE, "the data-parallel baseline ignores the scenario's 1 shard() "
	                              "entry"));
	cr_expect_eq(D.errors, 0);
}

Test(baselines, data_parallel_needs_a_batch_that_splits)
{
	/* FFN with micro_batch 12 on 8 devices: data parallelism replicates the
	 * model and splits the batch, and 12 rows do not split 8 ways: no plan,
	 * an error saying what to change. */
	struct scenario *s = generated("{\"kind\": \"ffn\", \"micro_batch\": 12, \"dtype\": \"fp32\"}",
	                               "atlas800-910a", 8);
	struct plan *p = plan_data_parallel(A, s, &OPT, &D);
	cr_assert_null(p);
	cr_expect(has_diag(DIAG_ERROR, "data parallel over 8 devices must split the batch, but "
	                               "input \"x\" has batch 12"));
	cr_expect(has_diag(DIAG_ERROR, "to a multiple of 8"));
}

/* --------------------------------------------------- Megatron, one server */

Test(baselines, megatron_mlp_on_one_server_matches_the_hand_plan)
{
	/* megatron-mlp-8p (seeds 001, 003): dgx-a100 has 8 GPUs per server,
	 * so T = 8 and D = 1. fc1 reads x, which no column-parallel MatMul
	 * produced: column parallel ((1,1),(1,8)). fc2 reads fc1's columns
	 * through BiasAdd and GeLU: row parallel ((1,8),(8,1)), ending in the
	 * one AllReduce of [B*s, h] = [1024, 1024] bf16 = 2 MiB:
	 * 2*7/8 * 2097152 = 3670016 B over ranks 0..7. */
	struct scenario *s = fixture_scenario("scenarios/megatron-mlp-8p.json");
	struct plan *hand = plan_configured(A, s, REDIST_COMPAT, &D);
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(hand);
	cr_assert_not_null(p);
	static const int64_t fc1[] = {1, 1, 1, 8}, fc2[] = {1, 8, 8, 1};
	expect_cuts(p, "mlp.fc1.matmul", fc1, 4);
	expect_cuts(p, "mlp.fc2.matmul", fc2, 4);
	cr_expect_eq(count_allreduce(p, REDUCE_SUM), 1);
	cr_expect_eq(count_allreduce(p, REDUCE_MAX), 0);
	const struct dist_op *d = dop(p, "mlp.fc2.matmul");
	cr_assert_eq(d->n_comm, 1);
	expect_group(&d->comm[0], 0, 8, 0, 1);
	cr_expect_float_eq(d->comm[0].bytes_per_device, 3670016.0, 1e-9);
	expect_same_plan(p, hand);
	/* The MatMuls are the rule's, the BiasAdd and GeLU between them come
	 * from propagation, the ops after the AllReduce are the rule's data
	 * parallel (here D = 1: replicated). */
	cr_expect_eq(dop(p, "mlp.fc1.matmul")->source, STRATEGY_PLANNED);
	cr_expect_eq(dop(p, "mlp.fc2.matmul")->source, STRATEGY_PLANNED);
	cr_expect_eq(dop(p, "mlp.fc1.bias_add")->source, STRATEGY_PROPAGATED);
	cr_expect_eq(dop(p, "mlp.gelu")->source, STRATEGY_PROPAGATED);
	cr_expect_geq(dop(p, "mlp.gelu")->from_op, 0);
	cr_expect_eq(dop(p, "mlp.dropout")->source, STRATEGY_PLANNED);
	cr_expect(has_diag(DIAG_NOTE, "the megatron baseline ignores the scenario's 6 shard() entries"));
	cr_expect_eq(D.errors, 0);
}

Test(baselines, megatron_attention_cuts_heads_through_propagation)
{
	/* megatron-attention-8p: q, k, v column parallel ((1,1),(1,8)); the
	 * reshapes [B*s, a*d] -> [B,s,a,d] move the column cut onto the 16
	 * heads (8 slices of 2), the transposes onto dim 1 of [B,a,s,d], and
	 * the two BatchMatMuls take it from propagation: ((1,8,1,1),(1,8,1,1)).
	 * The output projection reads the heads back as columns: row parallel
	 * ((1,8),(8,1)) with the block's one AllReduce. */
	struct scenario *s = fixture_scenario("scenarios/megatron-attention-8p.json");
	struct plan *hand = plan_configured(A, s, REDIST_COMPAT, &D);
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(hand);
	cr_assert_not_null(p);
	static const int64_t col[] = {1, 1, 1, 8}, row[] = {1, 8, 8, 1};
	static const int64_t bmm[] = {1, 8, 1, 1, 1, 8, 1, 1};
	expect_cuts(p, "attn.q.matmul", col, 4);
	expect_cuts(p, "attn.k.matmul", col, 4);
	expect_cuts(p, "attn.v.matmul", col, 4);
	expect_cuts(p, "attn.scores", bmm, 8);
	expect_cuts(p, "attn.context", bmm, 8);
	expect_cuts(p, "attn.out.matmul", row, 4);
	cr_expect_eq(dop(p, "attn.scores")->source, STRATEGY_PROPAGATED);
	cr_expect_eq(dop(p, "attn.context")->source, STRATEGY_PROPAGATED);
	cr_expect_eq(count_allreduce(p, REDUCE_SUM), 1);
	cr_expect_eq(dop(p, "attn.out.matmul")->n_comm, 1);
	expect_same_plan(p, hand);
	cr_expect_eq(D.errors, 0);
}

/* --------------------------------------------------- Megatron, two servers */

Test(baselines, megatron_on_two_servers_adds_data_parallel_across)
{
	/* The MLP generator (hidden 1024, ffn 4096, seq 512, micro_batch 2:
	 * x [1024, 1024]) on 16 GPUs of dgx-a100-x128 (8 per server): T = 8,
	 * D = 2. The (dp, mp) device matrix is [2, 8], mp minor: ranks 0-7
	 * are server 0. fc1 ((2,1),(1,8)): the batch rows cut by D, the
	 * weight by columns; fc2 ((2,8),(8,1)). */
	struct scenario *s = generated("{\"kind\": \"mlp\", \"hidden\": 1024, \"seq\": 512,"
	                               " \"micro_batch\": 2}", "dgx-a100-x128", 16);
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(p);
	static const int64_t fc1[] = {2, 1, 1, 8}, fc2[] = {2, 8, 8, 1};
	expect_cuts(p, "mlp.fc1.matmul", fc1, 4);
	expect_cuts(p, "mlp.fc2.matmul", fc2, 4);
	/* fc2's AllReduce stays inside each server: {0..7} and {8..15}, on
	 * the local [512, 1024] bf16 = 1 MiB: 2*7/8 * 1048576 = 1835008 B. */
	const struct dist_op *d = dop(p, "mlp.fc2.matmul");
	cr_assert_eq(d->n_comm, 1);
	cr_expect_eq(d->comm[0].groups.n_groups, 2);
	expect_group(&d->comm[0], 0, 8, 0, 1);
	expect_group(&d->comm[0], 1, 8, 8, 1);
	cr_expect_float_eq(d->comm[0].bytes_per_device, 1835008.0, 1e-9);
	/* fc1's weight slice [1024, 512] bf16 = 1 MiB is held by one rank of
	 * each server: its gradient is all-reduced over the 2 replicas
	 * {0,8}, {1,9}, ..., {7,15}: 2*1/2 * 1048576 = 1048576 B. */
	d = dop(p, "mlp.fc1.matmul");
	cr_assert_eq(d->n_grad, 1);
	cr_expect_eq(d->grad[0].groups.n_groups, 8);
	for (int g = 0; g < 8; g++)
		expect_group(&d->grad[0], g, 2, g, 8);
	cr_expect_float_eq(d->grad[0].bytes_per_device, 1048576.0, 1e-9);
	/* The same for fc2's weight [512, 1024] slice. */
	d = dop(p, "mlp.fc2.matmul");
	cr_assert_eq(d->n_grad, 1);
	for (int g = 0; g < 8; g++)
		expect_group(&d->grad[0], g, 2, g, 8);
	/* After the AllReduce, the rows stay cut by D: no redistribution. */
	static const int64_t bias[] = {2, 1, 1}, drop[] = {2, 1};
	expect_cuts(p, "mlp.fc2.bias_add", bias, 3);
	expect_cuts(p, "mlp.dropout", drop, 2);
	cr_expect_float_eq(redist_bytes_total(p), 0, 1e-9);
	cr_expect_eq(D.errors, 0);
}

Test(baselines, megatron_degree_may_span_whole_servers)
{
	/* Asked for exactly TP 16 on 16 GPUs of dgx-a100-x128 (two servers of
	 * 8), as Narayanan et al. run TP 16 and 32 in their figure 13: the
	 * (dp, mp) device matrix is [1, 16], fc1 ((1,1),(1,16)), fc2
	 * ((1,16),(16,1)), and fc2's AllReduce spans both servers, {0..15},
	 * on the whole [1024, 1024] bf16 output = 2 MiB:
	 * 2*15/16 * 2097152 = 3932160 B. */
	struct scenario *s = generated("{\"kind\": \"mlp\", \"hidden\": 1024, \"seq\": 512,"
	                               " \"micro_batch\": 2}", "dgx-a100-x128", 16);
	struct plan *p = plan_megatron_degree(A, s, &OPT, 16, &D);
	cr_assert_not_null(p);
	static const int64_t fc1[] = {1, 1, 1, 16}, fc2[] = {1, 16, 16, 1};
	expect_cuts(p, "mlp.fc1.matmul", fc1, 4);
	expect_cuts(p, "mlp.fc2.matmul", fc2, 4);
	const struct dist_op *d = dop(p, "mlp.fc2.matmul");
	cr_assert_eq(d->n_comm, 1);
	cr_expect_eq(d->comm[0].groups.n_groups, 1);
	expect_group(&d->comm[0], 0, 16, 0, 1);
	cr_expect_float_eq(d->comm[0].bytes_per_device, 3932160.0, 1e-9);
	cr_expect_eq(D.errors, 0);
	/* 32 does not divide the 16 devices: no plan, and the reason. */
	cr_assert_null(plan_megatron_degree(A, s, &OPT, 32, &D));
	cr_assert(has_diag(DIAG_ERROR, "tensor parallel 32 does not fit"));
	diag_list_free(&D);
	diag_list_init(&D);
}

/* The fast tier is the server, whatever its size (docs/planner.md): TP 16
 * on 64 GPUs of one GB200 NVL72 rack (72 GPUs in one NVLink domain) keeps
 * every group inside it, though 16 does not divide 72; fc2's all-reduce is
 * {0..15}. On a cluster of racks the same degree would put a group across
 * two racks (ranks 64-79), so it is refused there. */
Test(baselines, megatron_tp16_inside_one_nvl72_rack)
{
	const char *mlp = "{\"kind\": \"mlp\", \"hidden\": 1024, \"seq\": 512, \"micro_batch\": 4}";
	struct scenario *s = generated(mlp, "gb200-nvl72", 64);
	struct plan *p = plan_megatron_degree(A, s, &OPT, 16, &D);
	cr_assert_not_null(p);
	static const int64_t fc1[] = {4, 1, 1, 16}, fc2[] = {4, 16, 16, 1};
	expect_cuts(p, "mlp.fc1.matmul", fc1, 4);
	expect_cuts(p, "mlp.fc2.matmul", fc2, 4);
	const struct dist_op *d = dop(p, "mlp.fc2.matmul");
	cr_assert_eq(d->n_comm, 1);
	expect_group(&d->comm[0], 0, 16, 0, 1);
	cr_expect_eq(topo_group_tier(s->topo, (const int64_t[]){0, 15}, 2), 0);
	cr_expect_eq(D.errors, 0);
	/* 576 GPUs of 8 racks: groups of 16 would straddle the racks */
	struct scenario *c = generated(mlp, "gb200-nvl72-x8", 576);
	cr_assert_null(plan_megatron_degree(A, c, &OPT, 16, &D));
	cr_assert(has_diag(DIAG_ERROR, "tensor parallel 16 does not fit"));
	diag_list_free(&D);
	diag_list_init(&D);
	/* the rule itself */
	cr_expect(plan_tp_in_server(72, 64, 16));   /* one rack, 64 used */
	cr_expect(!plan_tp_in_server(72, 576, 16)); /* racks: 16 does not divide 72 */
	cr_expect(plan_tp_in_server(72, 576, 8));
	cr_expect(plan_tp_in_server(384, 384, 32)); /* a supernode */
	cr_expect(!plan_tp_in_server(8, 64, 16));   /* over a server of 8 */
}

Test(baselines, megatron_gpt_is_vocabulary_parallel)
{
	/* A small GPT (hidden 64, 2 layers, 8 heads, seq 16, vocab 256, ffn
	 * 256, micro_batch 2) on 16 GPUs of dgx-a100-x128: T = 8 (8 divides
	 * the heads, 256 and 64), D = 2 (divides micro_batch 2). */
	struct scenario *s = generated("{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 2,"
	                               " \"heads\": 8, \"seq\": 16, \"vocab\": 256, \"ffn\": 256,"
	                               " \"micro_batch\": 2}", "dgx-a100-x128", 16);
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(p);
	/* The word embedding [256, 64] is cut by rows (vocabulary) 8 ways,
	 * the tokens [2, 16] by batch 2 ways: partial lookups summed by one
	 * AllReduce inside each server. */
	static const int64_t emb[] = {8, 1, 2, 1};
	expect_cuts(p, "embed.word", emb, 4);
	const struct dist_op *d = dop(p, "embed.word");
	cr_expect_eq(d->source, STRATEGY_PLANNED);
	cr_assert_eq(d->n_comm, 1);
	cr_expect_eq(d->comm[0].kind, STEP_ALLREDUCE);
	expect_group(&d->comm[0], 0, 8, 0, 1);
	expect_group(&d->comm[0], 1, 8, 8, 1);
	/* The tied output projection reads the same [V, h] table with
	 * transpose_b: column parallel over V is the table cut (8, 1). */
	static const int64_t head[] = {2, 1, 8, 1};
	expect_cuts(p, "lm_head", head, 4);
	cr_expect(layout_same_placement(&dop(p, "lm_head")->in[1], &dop(p, "embed.word")->in[0]));
	/* The loss over [B*s, V] = [32, 256]: ((2, 8), (2,)), with seed 003's
	 * AllReduce(max) and two AllReduce(sum) inside each server. */
	static const int64_t loss[] = {2, 8, 2};
	expect_cuts(p, "loss", loss, 3);
	d = dop(p, "loss");
	cr_expect_eq(d->source, STRATEGY_PLANNED);
	cr_assert_eq(d->n_comm, 3);
	static const enum reduce_op red[] = {REDUCE_MAX, REDUCE_SUM, REDUCE_SUM};
	for (int k = 0; k < 3; k++) {
		cr_expect_eq(d->comm[k].kind, STEP_ALLREDUCE);
		cr_expect_eq(d->comm[k].reduce, red[k], "loss step %d", k);
		expect_group(&d->comm[k], 0, 8, 0, 1);
	}
	/* Forward AllReduces, counted by hand: per layer the attention output
	 * and fc2 (2 x 2 layers), the embedding (1), the loss's two sums and
	 * the mean of the loss over the batch cut D ways (1): 8 sums and 1
	 * max. No redistribution: every op reads its input as it was left. */
	cr_expect_eq(count_allreduce(p, REDUCE_SUM), 8);
	cr_expect_eq(count_allreduce(p, REDUCE_MAX), 1);
	cr_expect_float_eq(redist_bytes_total(p), 0, 1e-9);
	d = dop(p, "loss.mean");
	cr_assert_eq(d->n_comm, 1);
	for (int g = 0; g < 8; g++)
		expect_group(&d->comm[0], g, 2, g, 8);
	/* Attention heads: 8 heads cut 8 ways, batch 2 ways. */
	static const int64_t bmm[] = {2, 8, 1, 1, 2, 8, 1, 1};
	expect_cuts(p, "layers.1.attn.scores", bmm, 8);
	static const int64_t ln[] = {2, 1, 1, 1};
	expect_cuts(p, "layers.0.ln2", ln, 4);
	cr_expect_eq(D.errors, 0);
}

Test(baselines, megatron_takes_a_smaller_degree_when_heads_do_not_split)
{
	/* Attention with 4 heads on 8 GPUs of one dgx-a100: a column cut of
	 * 8 would land on the 4 heads of [B,s,a,d], which 8 does not divide,
	 * so T is the next divisor of 8 the shapes allow: 4, and D = 2. */
	struct scenario *s = generated("{\"kind\": \"attention\", \"hidden\": 256, \"heads\": 4,"
	                               " \"seq\": 64, \"micro_batch\": 2}", "dgx-a100", 8);
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(p);
	static const int64_t col[] = {2, 1, 1, 4}, row[] = {2, 4, 4, 1};
	static const int64_t bmm[] = {2, 4, 1, 1, 2, 4, 1, 1};
	expect_cuts(p, "attn.q.matmul", col, 4);
	expect_cuts(p, "attn.scores", bmm, 8);
	expect_cuts(p, "attn.out.matmul", row, 4);
	/* The AllReduce of the row-parallel projection: ranks 0-3 and 4-7. */
	const struct dist_op *d = dop(p, "attn.out.matmul");
	cr_assert_eq(d->n_comm, 1);
	expect_group(&d->comm[0], 0, 4, 0, 1);
	expect_group(&d->comm[0], 1, 4, 4, 1);
	cr_expect_float_eq(redist_bytes_total(p), 0, 1e-9);
	cr_expect_eq(D.errors, 0);
}

Test(baselines, megatron_says_what_to_change_when_the_batch_does_not_split)
{
	/* GPT-3 175B (micro_batch 1) on all 1024 GPUs of dgx-a100-x128:
	 * T = 8, D = 1024 / 8 = 128, which does not divide a batch of 1. */
	char text[1024];
	snprintf(text, sizeof text,
	         "{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"mem\","
	         " \"model\": \"../models/gpt3-175b.json\","
	         " \"topology\": \"../topologies/dgx-a100-x128.json\", \"devices\": 1024,"
	         " \"training\": {\"global_batch\": 1536, \"dtype\": \"bf16\"}}");
	struct json_doc doc;
	struct scenario *s = NULL;
	if (json_doc_parse(&doc, "scenarios/mem.json", text, strlen(text), &D))
		s = scenario_load_doc(A, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(s);
	cr_expect_null(plan_megatron(A, s, &OPT, &D));
	cr_expect_eq(D.errors, 1);
	cr_expect(has_diag(DIAG_ERROR, "tensor parallel 8 inside a server leaves data parallel of "
	                               "degree 128 across servers"));
	cr_expect(has_diag(DIAG_ERROR, "input \"tokens\" has batch 1; set the model's batch (a "
	                               "generator's micro_batch) to a multiple of 128"));
	diag_list_free(&D);
	diag_list_init(&D);
}

Test(baselines, megatron_fused_mode_keeps_the_same_strategies)
{
	/* The redistribution mode changes edges only: on the two-server MLP
	 * the strategies are those of the compatible mode. */
	struct scenario *s = generated("{\"kind\": \"mlp\", \"hidden\": 1024, \"seq\": 512,"
	                               " \"micro_batch\": 2}", "dgx-a100-x128", 16);
	struct plan_options fused = {.mode = REDIST_FUSED, .rec_cost = REC_COST_TOPOLOGY};
	struct plan *a = plan_megatron(A, s, &OPT, &D), *b = plan_megatron(A, s, &fused, &D);
	cr_assert_not_null(a);
	cr_assert_not_null(b);
	for (int i = 0; i < a->graph->n_ops; i++)
		for (int j = 0; j < a->ops[i].n_in; j++)
			for (int d = 0; d < a->ops[i].in[j].rank; d++)
				cr_expect_eq(a->ops[i].cuts[j][d], b->ops[i].cuts[j][d]);
	cr_expect_eq(b->mode, REDIST_FUSED);
}

Test(baselines, shipped_megatron_gpt_scenario_plans)
{
	/* scenarios/megatron-gpt-8.3b-512p.json: Shoeybi et al.'s 8.3B model,
	 * 8-way tensor parallel and 64-way data parallel on 512 GPUs. Every
	 * layer's MatMuls are cut by T = 8 inside a server, the batch of 512
	 * by D = 64: fc1 reads [512*1024, 3072], cut ((64, 1), (1, 8)). */
	struct scenario *s = fixture_scenario("scenarios/megatron-gpt-8.3b-512p.json");
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(p);
	static const int64_t fc1[] = {64, 1, 1, 8}, fc2[] = {64, 8, 8, 1};
	expect_cuts(p, "layers.71.mlp.fc1.matmul", fc1, 4);
	expect_cuts(p, "layers.71.mlp.fc2.matmul", fc2, 4);
	/* 72 layers x 2 + embedding + loss (2 sums) + mean = 148 sums. */
	cr_expect_eq(count_allreduce(p, REDUCE_SUM), 148);
	cr_expect_float_eq(redist_bytes_total(p), 0, 1e-9);
	cr_expect_eq(D.errors, 0);
}

/* ------------------------------------------ Megatron, sequence parallelism */

/* The small GPT of megatron_gpt_is_vocabulary_parallel: hidden h = 64,
 * 2 layers, 8 heads, seq s = 16, micro_batch B = 2. Its layers work on
 * [B*s, h] = [32, 64] bf16. On 16 GPUs of dgx-a100-x128 (8 per server):
 * T = 8, D = 2, tensor-parallel groups {0..7} and {8..15}. */
#define SP_GPT(seq)                                                                            \
	"{\"kind\": \"gpt\", \"hidden\": 64, \"layers\": 2, \"heads\": 8, \"seq\": " seq ","      \
	" \"vocab\": 256, \"ffn\": 256, \"micro_batch\": 2}"
#define SP_ON ", \"sequence_parallel\": true"

static bool named(const struct plan *p, int op, const char *prefix)
{
	return !strncmp(p->graph->ops[op].name, prefix, strlen(prefix));
}

/* The edge into input `in` of op `consumer`; NULL when none. */
static const struct plan_edge *edge_into(const struct plan *p, const char *consumer, int in)
{
	int c = op_of(p, consumer);
	for (int e = 0; e < p->n_edges; e++)
		if (p->edges[e].consumer == c && p->edges[e].consumer_in == in)
			return &p->edges[e];
	return NULL;
}

/* Edge into (consumer, in) from `producer`: one step of this kind on dim 0
 * over the two tensor-parallel groups, `bytes` per device. */
static void expect_tp_edge(const struct plan *p, const char *producer, const char *consumer,
                           int in, enum step_kind kind, double bytes)
{
	const struct plan_edge *e = edge_into(p, consumer, in);
	cr_assert_not_null(e, "no edge into %s", consumer);
	cr_expect_eq(e->producer, op_of(p, producer), "%s: producer", consumer);
	cr_assert_eq(e->redist.n_steps, 1, "%s: %d steps", consumer, e->redist.n_steps);
	const struct comm_step *st = &e->redist.steps[0];
	cr_expect_eq(st->kind, kind, "%s: %s", consumer, step_kind_names[st->kind]);
	cr_expect_eq(st->dim, 0, "%s: dim %d", consumer, st->dim);
	cr_expect_eq(st->groups.n_groups, 2, "%s", consumer);
	expect_group(st, 0, 8, 0, 1);
	expect_group(st, 1, 8, 8, 1);
	cr_expect_float_eq(st->bytes_per_device, bytes, 1e-9, "%s", consumer);
}

/* Forward AllReduces in ops whose names start with `prefix` and in the
 * edges into them. */
static int allreduces_in(const struct plan *p, const char *prefix)
{
	int n = 0;
	for (int i = 0; i < p->graph->n_ops; i++)
		for (int k = 0; named(p, i, prefix) && k < p->ops[i].n_comm; k++)
			n += p->ops[i].comm[k].kind == STEP_ALLREDUCE;
	for (int e = 0; e < p->n_edges; e++)
		for (int k = 0; named(p, p->edges[e].consumer, prefix) && k < p->edges[e].redist.n_steps;
		     k++)
			n += p->edges[e].redist.steps[k].kind == STEP_ALLREDUCE;
	return n;
}

/* Bytes per device of the collectives over the tensor-parallel groups of 8
 * ranks (checked to be {0..7}, {8..15}) in some steps. */
static double tp_steps_bytes(const struct comm_step *st, int n)
{
	double b = 0;
	for (int k = 0; k < n; k++) {
		if (st[k].groups.size != 8)
			continue;
		expect_group(&st[k], 0, 8, 0, 1);
		expect_group(&st[k], 1, 8, 8, 1);
		b += st[k].bytes_per_device;
	}
	return b;
}

/* The same over the ops named `prefix...` and the edges into them. */
static double tp_bytes(const struct plan *p, const char *prefix)
{
	double b = 0;
	for (int i = 0; i < p->graph->n_ops; i++)
		if (named(p, i, prefix))
			b += tp_steps_bytes(p->ops[i].comm, p->ops[i].n_comm);
	for (int e = 0; e < p->n_edges; e++)
		if (named(p, p->edges[e].consumer, prefix))
			b += tp_steps_bytes(p->edges[e].redist.steps, p->edges[e].redist.n_steps);
	return b;
}

/* Every op cut the same way in both plans. */
static void expect_same_cuts(const struct plan *a, const struct plan *b, const char *prefix)
{
	for (int i = 0; i < a->graph->n_ops; i++)
		for (int j = 0; named(a, i, prefix) && j < a->ops[i].n_in; j++)
			for (int d = 0; d < a->ops[i].in[j].rank; d++)
				cr_expect_eq(a->ops[i].cuts[j][d], b->ops[i].cuts[j][d], "%s input %d dim %d",
				             a->graph->ops[i].name, j, d);
}

Test(baselines, megatron_sequence_parallel_reduce_scatters_and_gathers)
{
	struct scenario *off = generated(SP_GPT("16"), "dgx-a100-x128", 16);
	struct scenario *on = generated_with(SP_GPT("16"), "dgx-a100-x128", 16, SP_ON);
	cr_assert(on->training.sequence_parallel);
	struct plan *q = plan_megatron(A, off, &OPT, &D), *p = plan_megatron(A, on, &OPT, &D);
	cr_assert_not_null(q);
	cr_assert_not_null(p);
	/* Asked for the compatible mode, the SP plan is fused anyway. */
	cr_expect_eq(q->mode, REDIST_COMPAT);
	cr_expect_eq(p->mode, REDIST_FUSED);
	/* The tensor-parallel ops are cut as without SP: fc1 ((2,1),(1,8)),
	 * fc2 ((2,8),(8,1)), the head cut through attention. */
	static const int64_t fc1[] = {2, 1, 1, 8}, fc2[] = {2, 8, 8, 1};
	static const int64_t bmm[] = {2, 8, 1, 1, 2, 8, 1, 1};
	expect_cuts(p, "layers.1.mlp.fc1.matmul", fc1, 4);
	expect_cuts(p, "layers.1.mlp.fc2.matmul", fc2, 4);
	expect_cuts(p, "layers.1.attn.scores", bmm, 8);
	expect_same_cuts(p, q, "layers.0.attn.q");
	expect_same_cuts(p, q, "lm_head");
	expect_same_cuts(p, q, "embed.word");
	expect_same_cuts(p, q, "loss");
	/* Between the regions, dim 0 of [32, 64] is cut D x T = 16 ways (2
	 * rows a rank): bias ((16,1),(1,)), dropout ((16,1)), residual
	 * ((16,1),(16,1)), LayerNorm ((16,1),(1,),(1,)). The first norm of a
	 * layer feeds q, k and v: it stays ((2,1),(1,),(1,)), gathered once at
	 * its input. */
	static const int64_t bias[] = {16, 1, 1}, drop[] = {16, 1}, res[] = {16, 1, 16, 1};
	static const int64_t ln[] = {16, 1, 1, 1}, ln1[] = {2, 1, 1, 1};
	expect_cuts(p, "layers.0.attn.out.bias_add", bias, 3);
	expect_cuts(p, "layers.0.mlp.dropout", drop, 2);
	expect_cuts(p, "layers.0.residual1", res, 4);
	expect_cuts(p, "layers.1.ln2", ln, 4);
	expect_cuts(p, "final_ln", ln, 4);
	expect_cuts(p, "layers.1.ln1", ln1, 4);
	/* dp major, mp minor: rank 9 = (dp 1, mp 1) holds slice 1*8 + 1 = 9 of
	 * 16, rows [18, 20), all 64 columns. */
	int64_t lo[GRAPH_MAX_RANK], hi[GRAPH_MAX_RANK];
	layout_slice(&dop(p, "layers.1.ln2")->out[0], 9, lo, hi);
	cr_expect(lo[0] == 18 && hi[0] == 20 && lo[1] == 0 && hi[1] == 64);
	/* Without SP each layer has its two AllReduces (attention output, fc2);
	 * with SP none, in the ops or in the edges into them. */
	cr_expect_eq(allreduces_in(q, "layers."), 4);
	cr_expect_eq(allreduces_in(p, "layers."), 0);
	/* A row-parallel MatMul keeps its partial sums [32/2, 64] bf16 =
	 * 2048 B: the edge into its bias completes them by a ReduceScatter on
	 * dim 0, 7/8 * 2048 = 1792 B. The norm's slice [2, 64] bf16 = 256 B is
	 * gathered for a column-parallel MatMul: 7 * 256 = 1792 B. */
	for (int l = 0; l < 2; l++) {
		char a[64], b[64];
		static const char *const row[] = {"attn.out", "mlp.fc2"};
		for (int k = 0; k < 2; k++) {
			snprintf(a, sizeof a, "layers.%d.%s.matmul", l, row[k]);
			snprintf(b, sizeof b, "layers.%d.%s.bias_add", l, row[k]);
			cr_expect_eq(dop(p, a)->n_comm, 0, "%s completes its own sums", a);
			expect_tp_edge(p, a, b, 0, STEP_REDUCESCATTER, 1792);
			cr_expect_eq(edge_into(p, b, 0)->redist.steps[0].reduce, REDUCE_SUM);
		}
		snprintf(a, sizeof a, "layers.%d.ln2", l);
		snprintf(b, sizeof b, "layers.%d.mlp.fc1.matmul", l);
		expect_tp_edge(p, a, b, 0, STEP_ALLGATHER, 1792);
	}
	expect_tp_edge(p, "layers.0.residual2", "layers.1.ln1", 0, STEP_ALLGATHER, 1792);
	expect_tp_edge(p, "final_ln", "lm_head", 0, STEP_ALLGATHER, 1792);
	/* The first layer's residual reads the embedding (whole over T) and
	 * keeps its rows: a StridedSlice, no traffic. */
	const struct plan_edge *e = edge_into(p, "layers.0.residual1", 0);
	cr_assert_not_null(e);
	cr_expect_float_eq(e->redist.bytes_per_device, 0, 1e-9);
	cr_expect_null(edge_into(p, "layers.0.ln1", 0));
	cr_expect_eq(D.errors, 0);
}

/* training.tp_comm_overlap: which GEMMs run under which of sequence
 * parallelism's collectives, and what stays exposed in the estimate. */
Test(baselines, megatron_tp_comm_overlap_hides_the_collectives_under_their_gemms)
{
	struct scenario *on = generated_with(SP_GPT("16"), "dgx-a100-x128", 16, SP_ON);
	struct scenario *ov = generated_with(SP_GPT("16"), "dgx-a100-x128", 16,
	                                     SP_ON ", \"tp_comm_overlap\": true");
	cr_assert(ov->training.tp_comm_overlap);
	struct plan *p = plan_megatron(A, on, &OPT, &D), *q = plan_megatron(A, ov, &OPT, &D);
	cr_assert_not_null(p);
	cr_assert_not_null(q);
	/* The gather into fc1 runs under fc1; the reduce-scatters completing
	 * the row-parallel sums under the output projection and fc2; the
	 * gather into layer 1's first norm (it feeds q, k and v, which stay
	 * cut by columns) under the three of them. Without the flag, none. */
	static const struct {
		const char *consumer, *hide[3];
		int n;
	} marks[] = {
		{"layers.1.mlp.fc1.matmul", {"layers.1.mlp.fc1.matmul"}, 1},
		{"layers.1.attn.out.bias_add", {"layers.1.attn.out.matmul"}, 1},
		{"layers.1.mlp.fc2.bias_add", {"layers.1.mlp.fc2.matmul"}, 1},
		{"layers.1.ln1", {"layers.1.attn.q.matmul", "layers.1.attn.k.matmul",
		                  "layers.1.attn.v.matmul"}, 3},
	};
	struct estimate a, b;
	cr_assert(plan_estimate(A, p, &a, &D));
	cr_assert(plan_estimate(A, q, &b, &D));
	for (size_t m = 0; m < sizeof marks / sizeof marks[0]; m++) {
		const struct plan_edge *x = edge_into(q, marks[m].consumer, 0);
		cr_assert_not_null(x, "%s", marks[m].consumer);
		cr_assert_eq(edge_into(p, marks[m].consumer, 0)->n_hide, 0);
		cr_assert_eq(x->n_hide, marks[m].n, "%s: %d", marks[m].consumer, x->n_hide);
		double cf = 0, cb = 0;
		for (int k = 0; k < marks[m].n; k++) {
			int h = op_of(q, marks[m].hide[k]);
			cr_expect_eq(x->hide[k], h, "%s hides %s", marks[m].consumer, marks[m].hide[k]);
			cf += a.ops[h].compute_forward_s;
			cb += a.ops[h].compute_backward_s;
		}
		/* A ring of T = 8: 7/8 of the forward under the forward
		 * collective, 7/8 of half the backward under its mirror; these
		 * consumers have no other communication of their own. */
		int c = op_of(q, marks[m].consumer);
		double f0 = a.ops[c].comm_forward_s, b0 = a.ops[c].comm_backward_s;
		cr_assert_gt(f0, 0);
		cr_expect_float_eq(b.ops[c].comm_forward_s, fmax(0, f0 - 7.0 / 8 * cf), 1e-12 * f0,
		                   "%s forward", marks[m].consumer);
		cr_expect_float_eq(b.ops[c].comm_backward_s, fmax(0, b0 - 7.0 / 8 * cb / 2), 1e-12 * b0,
		                   "%s backward", marks[m].consumer);
		cr_expect_float_eq(b.ops[c].compute_forward_s, a.ops[c].compute_forward_s, 1e-15);
	}
	/* Compute is untouched. q's all-reduce of its input's gradient (the
	 * three GEMMs' partial sums, the gathered norm being whole) runs under
	 * the other half of their backward, 7/8 of it; k and v have none. */
	cr_expect_float_eq(b.compute_s, a.compute_s, 1e-12 * a.compute_s);
	static const char *const qkv[] = {"layers.1.attn.q.matmul", "layers.1.attn.k.matmul",
	                                  "layers.1.attn.v.matmul"};
	double cb = 0;
	for (int k = 0; k < 3; k++)
		cb += a.ops[op_of(q, qkv[k])].compute_backward_s;
	int qm = op_of(q, qkv[0]), km = op_of(q, qkv[1]);
	double q0 = a.ops[qm].comm_backward_s;
	cr_assert_gt(q0, 0);
	cr_expect_float_eq(b.ops[qm].comm_backward_s, fmax(0, q0 - 7.0 / 8 * cb / 2), 1e-12 * q0);
	cr_expect_float_eq(b.ops[km].comm_backward_s, a.ops[km].comm_backward_s, 1e-15);
	/* the first layer's q reads a norm that needs no gather: nothing */
	int q0m = op_of(q, "layers.0.attn.q.matmul");
	cr_expect_float_eq(b.ops[q0m].comm_backward_s, a.ops[q0m].comm_backward_s, 1e-15);
	cr_expect_lt(b.iteration_s, a.iteration_s);
	cr_expect_eq(D.errors, 0);
	/* TP 16 spans two servers of 8: nothing overlapped, and a note says
	 * why (the userbuffers need the group on one server's NVLink). */
	struct scenario *wide = generated_with(
		"{\"kind\": \"gpt\", \"hidden\": 128, \"layers\": 2, \"heads\": 16, \"seq\": 16,"
		" \"vocab\": 256, \"ffn\": 512, \"micro_batch\": 1}",
		"dgx-a100-x128", 16, SP_ON ", \"tp_comm_overlap\": true, \"tensor_parallel\": 16");
	size_t before = D.count;
	struct plan *w = plan_megatron(A, wide, &OPT, &D);
	cr_assert_not_null(w);
	for (int e = 0; e < w->n_edges; e++)
		cr_expect_eq(w->edges[e].n_hide, 0);
	bool noted = false;
	for (size_t k = before; k < D.count; k++)
		noted |= D.items[k].severity == DIAG_NOTE &&
		         strstr(D.items[k].msg, "tensor parallel 16 spans servers of 8 devices") != NULL;
	cr_expect(noted);
	cr_expect_eq(D.errors, 0);
}

Test(baselines, megatron_sequence_parallel_keeps_the_tensor_parallel_bytes)
{
	struct scenario *off = generated(SP_GPT("16"), "dgx-a100-x128", 16);
	struct scenario *on = generated_with(SP_GPT("16"), "dgx-a100-x128", 16, SP_ON);
	struct plan *q = plan_megatron(A, off, &OPT, &D), *p = plan_megatron(A, on, &OPT, &D);
	cr_assert_not_null(q);
	cr_assert_not_null(p);
	/* One layer without SP: two AllReduces of the local [B*s/D, h] =
	 * [16, 64] bf16 = 2048 B, 2 * (2*7/8 * 2048) = 7168 B per device.
	 * With SP the same layer (the second: its input comes from a
	 * sequence-parallel residual) sends two ReduceScatters of those
	 * 2048 B, 7/8 * 2048 each, and two AllGathers of the 2048/8 = 256 B
	 * slices, 7 * 256 each (into ln1 and fc1): 4 * 1792 = 7168 B. */
	cr_expect_float_eq(tp_bytes(q, "layers.1."), 7168, 1e-9);
	cr_expect_float_eq(tp_bytes(p, "layers.1."), 7168, 1e-9);
	/* The first layer reads the embedding whole over T: no gather into
	 * its ln1, 7168 - 1792 = 5376 B; that gather is the one into the
	 * output projection instead, after the sequence-parallel final norm. */
	cr_expect_float_eq(tp_bytes(q, "layers.0."), 7168, 1e-9);
	cr_expect_float_eq(tp_bytes(p, "layers.0."), 5376, 1e-9);
	cr_expect_float_eq(tp_bytes(q, "lm_head"), 0, 1e-9);
	cr_expect_float_eq(tp_bytes(p, "lm_head"), 1792, 1e-9);
	cr_expect_eq(D.errors, 0);
}

Test(baselines, megatron_sequence_parallel_shrinks_the_activations_between_regions)
{
	struct scenario *off = generated(SP_GPT("16"), "dgx-a100-x128", 16);
	struct scenario *on = generated_with(SP_GPT("16"), "dgx-a100-x128", 16, SP_ON);
	struct plan *q = plan_megatron(A, off, &OPT, &D), *p = plan_megatron(A, on, &OPT, &D);
	cr_assert_not_null(q);
	cr_assert_not_null(p);
	/* The output of a LayerNorm, dropout, bias or residual Add between the
	 * regions: [32/D, 64] = 1024 elements a rank without SP, [32/16, 64] =
	 * 128 = 1024 / T with it. */
	static const char *const ops[] = {
		"layers.0.attn.out.bias_add", "layers.0.attn.out.dropout", "layers.0.residual1",
		"layers.0.ln2", "layers.0.mlp.fc2.bias_add", "layers.0.mlp.dropout",
		"layers.0.residual2", "layers.1.attn.out.dropout", "layers.1.ln2",
		"layers.1.mlp.dropout", "layers.1.residual2", "final_ln"};
	for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++) {
		cr_expect_eq(layout_local_elems(&dop(q, ops[i])->out[0]), 1024, "%s", ops[i]);
		cr_expect_eq(layout_local_elems(&dop(p, ops[i])->out[0]), 128, "%s", ops[i]);
	}
	/* The norm before q, k and v stays whole over T (1024 both ways), and
	 * so do the ops inside the regions: the attention probabilities
	 * [B/D, a/T, s, s] = [1, 1, 16, 16] = 256. */
	static const char *const same[] = {"layers.0.ln1", "layers.1.ln1",
	                                   "layers.1.attn.probs_dropout"};
	static const int64_t elems[] = {1024, 1024, 256};
	for (int i = 0; i < 3; i++) {
		cr_expect_eq(layout_local_elems(&dop(q, same[i])->out[0]), elems[i], "%s", same[i]);
		cr_expect_eq(layout_local_elems(&dop(p, same[i])->out[0]), elems[i], "%s", same[i]);
	}
	cr_expect_eq(D.errors, 0);
}

Test(baselines, megatron_sequence_parallel_falls_back_where_tokens_do_not_split)
{
	/* seq 12: [B*s, h] = [24, 64], and D x T = 16 does not divide 24 (D = 2
	 * does). The four ops reading a row-parallel output (each layer's two
	 * bias Adds) cannot cut 16 ways, so nothing after them can: one
	 * warning, and the plan is the one without SP, in the mode asked for. */
	struct scenario *off = generated(SP_GPT("12"), "dgx-a100-x128", 16);
	struct scenario *on = generated_with(SP_GPT("12"), "dgx-a100-x128", 16, SP_ON);
	struct plan *q = plan_megatron(A, off, &OPT, &D), *p = plan_megatron(A, on, &OPT, &D);
	cr_assert_not_null(q);
	cr_assert_not_null(p);
	cr_expect(has_diag(DIAG_WARNING, "sequence parallelism cuts the batch dimension (B x s "
	                                 "tokens in a transformer) of the ops after a row-parallel "
	                                 "MatMul 16 ways (data parallel 2 x tensor parallel 8), but "
	                                 "op \"layers.0.attn.out.bias_add\" has 24 there (and 3 more "
	                                 "ops like it)"));
	cr_expect(has_diag(DIAG_WARNING, "make that dimension a multiple of 16"));
	cr_expect_eq(D.errors, 0);
	cr_expect_eq(p->mode, REDIST_COMPAT);
	expect_same_cuts(p, q, "");
	cr_expect_eq(allreduces_in(p, "layers."), 4);
	cr_expect_eq(dop(p, "layers.0.attn.out.matmul")->n_comm, 1);
	cr_expect_float_eq(redist_bytes_total(p), 0, 1e-9);
}

Test(baselines, data_parallel_says_sequence_parallelism_changes_nothing)
{
	/* Without tensor parallelism there is no mp axis to cut over: the
	 * data-parallel plan of the GPT is the same with the flag, and a note
	 * says so. On 2 GPUs (the batch of 2 splits 2 ways, not 16) every op
	 * cuts dim 0 of [32, 64] 2 ways. */
	struct scenario *on = generated_with(SP_GPT("16"), "dgx-a100", 2, SP_ON);
	struct plan *p = plan_data_parallel(A, on, &OPT, &D);
	cr_assert_not_null(p);
	cr_expect(has_diag(DIAG_NOTE, "the data-parallel baseline has no tensor parallelism here "
	                              "(degree 1): training.sequence_parallel changes nothing"));
	cr_expect_eq(p->mode, REDIST_COMPAT);
	static const int64_t ln[] = {2, 1, 1, 1};
	expect_cuts(p, "layers.0.ln1", ln, 4);
	expect_cuts(p, "layers.0.ln2", ln, 4);
	cr_expect_eq(p->n_edges, 0);
	cr_expect_eq(D.errors, 0);
}

/* Input-gradient all-reduces (plan_fused_input_grads), in bytes per device
 * of ops named `prefix...`: ring AllReduce 2(s-1)/s x S. */
struct grad_sum {
	double bytes;
	int count;
};

static void add_grad(void *ctx, const struct plan_coll *c)
{
	struct grad_sum *g = ctx;
	cr_expect_eq(c->kind, STEP_ALLREDUCE);
	g->bytes += 2.0 * (c->groups.size - 1) / c->groups.size * c->bytes;
	g->count++;
}

static struct grad_sum input_grads(const struct plan *p, const char *prefix, uint32_t *mask_of)
{
	uint32_t *fused = plan_fused_input_grads(A, p);
	cr_assert_not_null(fused);
	struct grad_sum g = {0, 0};
	struct plan_coll_sink k = {add_grad, &g};
	for (int i = 0; i < p->graph->n_ops; i++)
		if (named(p, i, prefix))
			cr_assert(plan_colls_input_grads(p->graph, &p->ops[i], fused[i], &k));
	if (mask_of)
		*mask_of = fused[op_of(p, "layers.1.mlp.fc1.matmul")];
	return g;
}

Test(baselines, megatron_input_gradients_are_all_reduced_once_per_tensor)
{
	/* Layer 1 of the small GPT, T = 8: the column-parallel q, k and v read
	 * ln1's output [32/D, 64] = [16, 64] bf16 = 2048 B whole over T, each
	 * with a gradient partial over T; fc1 reads ln2's the same way. The
	 * three shares are summed before one AllReduce: 2 x 7/8 x 2048 =
	 * 3584 B, and 3584 B for fc1: 7168 B, the forward's two AllReduces
	 * (megatron_sequence_parallel_keeps_the_tensor_parallel_bytes), not
	 * 4 x 3584. With sequence parallelism fc1's input comes through an
	 * AllGather over T, whose mirror ReduceScatter completes the gradient:
	 * only q, k and v's 3584 B remain (the norm ln1 stays whole, so its
	 * input's AllGather mirror is priced apart, docs/planner.md). */
	struct scenario *off = generated(SP_GPT("16"), "dgx-a100-x128", 16);
	struct scenario *on = generated_with(SP_GPT("16"), "dgx-a100-x128", 16, SP_ON);
	struct plan *q = plan_megatron(A, off, &OPT, &D), *p = plan_megatron(A, on, &OPT, &D);
	cr_assert_not_null(q);
	cr_assert_not_null(p);
	uint32_t fc1;
	struct grad_sum g = input_grads(q, "layers.1.", &fc1);
	cr_expect_eq(g.count, 2);
	cr_expect_float_eq(g.bytes, 7168, 1e-9);
	cr_expect_eq(fc1, 0);
	g = input_grads(p, "layers.1.", &fc1);
	cr_expect_eq(g.count, 1);
	cr_expect_float_eq(g.bytes, 3584, 1e-9);
	cr_expect_eq(fc1, 1u, "fc1's input 0 is folded into the AllGather's mirror");
	cr_expect_eq(D.errors, 0);
}

/* ------------------------------------------------ expert parallelism */

/* A 2-layer mixture of experts (h 8, f 16, E 4, top-2, capacity factor 1,
 * s 4, 8 sequences) on 8 GPUs, TP 1, EP 4: data parallel 8 = 2 x 4, the
 * expert-parallel groups of 4 consecutive ranks. */
#define MOE_GEN "{\"kind\": \"llama\", \"hidden\": 8, \"layers\": 2, \"heads\": 2, \"ffn\": 16," \
                " \"seq\": 4, \"vocab\": 10, \"experts\": 4, \"top_k\": 2, \"micro_batch\": 8," \
                " \"dtype\": \"bf16\"}"

/* The one redistribution into op `to` from `from`, NULL when none. */
static const struct redist *edge_redist(const struct plan *p, const char *from, const char *to)
{
	int a = op_of(p, from), b = op_of(p, to);
	for (int e = 0; e < p->n_edges; e++)
		if (p->edges[e].producer == a && p->edges[e].consumer == b)
			return &p->edges[e].redist;
	return NULL;
}

/* The dispatch's and the combine's edges of each of `layers` layers: one
 * AllToAll of `bytes` a device over `n_groups` groups of `size`, each rank
 * holding `after` elements of the slots after it; the last step on *last. */
static void expect_moe_alltoalls(const struct plan *p, int layers, double bytes, int size,
                                 int n_groups, int64_t after, const struct comm_step **last)
{
	const char *hops[2][2] = {{"mlp.dispatch", "mlp.experts.input"},
	                          {"mlp.experts.down.matmul", "mlp.combine"}};
	for (int l = 0; l < layers; l++)
		for (int h = 0; h < 2; h++) {
			char from[64], to[64];
			snprintf(from, sizeof from, "layers.%d.%s", l, hops[h][0]);
			snprintf(to, sizeof to, "layers.%d.%s", l, hops[h][1]);
			const struct redist *r = edge_redist(p, from, to);
			cr_assert_not_null(r, "%s -> %s", from, to);
			cr_assert_eq(r->n_steps, 1, "%s -> %s", from, to);
			const struct comm_step *st = &r->steps[0];
			cr_expect_eq(st->kind, STEP_ALLTOALL);
			cr_expect_float_eq(st->bytes_per_device, bytes, 1e-9);
			cr_expect_eq(st->groups.size, size);
			cr_expect_eq(st->groups.n_groups, n_groups);
			cr_expect_eq(layout_local_elems(&st->after), after);
			*last = st;
		}
}

Test(baselines, megatron_expert_parallel_counted_by_hand)
{
	struct scenario *s = generated_with(MOE_GEN, "dgx-h100", 8,
	                                    ", \"tensor_parallel\": 1, \"expert_parallel\": 4");
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(p);
	/* T = 8 x 4 = 32 tokens, 4 a rank; C = 8 x ceil(4 x 2 / 4) = 16 slots
	 * an expert, 2 a rank: each rank dispatches [4, 2, 8] = 64 bf16 =
	 * 128 B, of which 3/4 leave it: 96 B. The AllToAll moves the split
	 * from the slots to the experts ([1, 8, 8] after), the combine's back. */
	int alltoalls = 0;
	for (int e = 0; e < p->n_edges; e++)
		for (int k = 0; k < p->edges[e].redist.n_steps; k++)
			alltoalls += p->edges[e].redist.steps[k].kind == STEP_ALLTOALL;
	cr_expect_eq(alltoalls, 4, "two AllToAlls a layer, forward");
	const struct comm_step *st = NULL;
	expect_moe_alltoalls(p, 2, 96, 4, 2, 64, &st);
	int64_t mm[4];
	rank_groups_members(&st->groups, 1, mm);
	cr_expect(mm[0] == 4 && mm[1] == 5 && mm[2] == 6 && mm[3] == 7);
	/* Each expert weight [4, 8, 16] is cut over EP: [1, 8, 16] = 128 a
	 * rank, its gradient all-reduced over the 2 ranks holding the same
	 * expert ({0, 4}, ...): 2 x 1/2 x 256 B = 256 B. */
	const struct dist_op *gate = dop(p, "layers.0.mlp.experts.gate.matmul");
	cr_expect_eq(layout_local_elems(&gate->in[1]), 128);
	cr_assert_eq(gate->n_grad, 1);
	cr_expect_eq(gate->grad[0].kind, STEP_ALLREDUCE);
	cr_expect_eq(gate->grad[0].groups.size, 2);
	int64_t m[2];
	rank_groups_members(&gate->grad[0].groups, 0, m);
	cr_expect(m[0] == 0 && m[1] == 4);
	cr_expect_float_eq(gate->grad[0].bytes_per_device, 256, 1e-9);
	/* The router [8, 4] stays whole, its gradient over all 8 ranks. */
	const struct dist_op *router = dop(p, "layers.0.mlp.router.matmul");
	cr_expect_eq(layout_local_elems(&router->in[1]), 32);
	cr_assert_eq(router->n_grad, 1);
	cr_expect_eq(router->grad[0].groups.size, 8);
	cr_expect_eq(D.errors, 0);
}

/* EP 1: every rank holds every expert and fills its own slots: no
 * AllToAll, the expert weights' gradients over all 8 ranks. */
Test(baselines, megatron_without_expert_parallelism_sends_no_alltoall)
{
	struct scenario *s = generated_with(MOE_GEN, "dgx-h100", 8, ", \"tensor_parallel\": 1");
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(p);
	for (int e = 0; e < p->n_edges; e++)
		for (int k = 0; k < p->edges[e].redist.n_steps; k++)
			cr_expect_neq(p->edges[e].redist.steps[k].kind, STEP_ALLTOALL);
	const struct dist_op *gate = dop(p, "layers.1.mlp.experts.gate.matmul");
	cr_expect_eq(layout_local_elems(&gate->in[1]), 512);
	cr_assert_eq(gate->n_grad, 1);
	cr_expect_eq(gate->grad[0].groups.size, 8);
	cr_expect_eq(D.errors, 0);
}

/* EP divides the data-parallel degree, or folds over the tensor-parallel
 * ranks: TP 2 on 8 ranks leaves DP 4; 6 experts' EP 3 divides neither;
 * EP 8 (DP 4 x TP 2) folds, with sequence parallelism only; TP 8 leaves
 * DP 1, whose EP 2 is no multiple of TP 8. */
Test(baselines, megatron_expert_parallel_must_divide_or_fold)
{
#define EP_GEN(experts)                                                                        \
	"{\"kind\": \"llama\", \"hidden\": 8, \"layers\": 1, \"heads\": 8, \"ffn\": 16,"         \
	" \"seq\": 8, \"vocab\": 16, \"experts\": " experts ", \"top_k\": 2, \"micro_batch\": 8}"
	struct scenario *s = generated_with(EP_GEN("6"), "dgx-h100", 8,
	                                    ", \"tensor_parallel\": 2, \"expert_parallel\": 3");
	cr_expect_null(plan_megatron(A, s, &OPT, &D));
	cr_expect(has_diag(DIAG_ERROR, "expert parallelism 3 must divide the data-parallel degree, "
	                               "4 here"));
	s = generated_with(EP_GEN("8"), "dgx-h100", 8,
	                   ", \"tensor_parallel\": 2, \"expert_parallel\": 8");
	cr_expect_null(plan_megatron(A, s, &OPT, &D));
	cr_expect(has_diag(DIAG_ERROR, "set training.sequence_parallel true"));
	s = generated_with(EP_GEN("8"), "dgx-h100", 8,
	                   ", \"tensor_parallel\": 8, \"expert_parallel\": 2");
	cr_expect_null(plan_megatron(A, s, &OPT, &D));
	cr_expect(has_diag(DIAG_ERROR, "must be a multiple of tensor parallel 8"));
#undef EP_GEN
}

/* Megatron-Core's parallel folding (expert_tensor_parallel_size 1): a
 * 2-layer mixture of experts (h 8, f 16, 8 experts, top-2, s 4, 8
 * sequences) on 8 GPUs, TP 2 with sequence parallelism, DP 4, EP 8 over
 * all of them. T = 32 tokens, 4 a rank (the sequence shards: DP 4 x TP
 * 2); C = 8 x ceil(4 x 2 / 8) = 8 slots an expert, 1 a rank: each rank
 * dispatches [8, 1, 8] = 64 bf16 = 128 B, 7/8 of it away: 112 B, over the
 * one group of 8; after, [1, 8, 8]. Each expert weight [8, 8, 16] whole on
 * one rank ([1, 8, 16] = 128), no other rank holding it: no gradient
 * reduction. The router, the dispatch and the combine read the 4 tokens
 * of the rank's shard, with nothing sent to them. */
Test(baselines, megatron_expert_parallel_folds_over_tensor_parallel)
{
	struct scenario *s = generated_with(
	    "{\"kind\": \"llama\", \"hidden\": 8, \"layers\": 2, \"heads\": 2, \"ffn\": 16,"
	    " \"seq\": 4, \"vocab\": 16, \"experts\": 8, \"top_k\": 2, \"micro_batch\": 8,"
	    " \"dtype\": \"bf16\"}",
	    "dgx-h100", 8,
	    ", \"tensor_parallel\": 2, \"sequence_parallel\": true, \"expert_parallel\": 8");
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(p);
	const struct comm_step *st = NULL;
	expect_moe_alltoalls(p, 2, 112, 8, 1, 64, &st);
	const struct dist_op *gate = dop(p, "layers.0.mlp.experts.gate.matmul");
	cr_expect_eq(layout_local_elems(&gate->in[1]), 128);
	cr_expect_eq(gate->n_grad, 0);
	static const char *const tok[] = {"layers.0.mlp.router.matmul", "layers.0.mlp.dispatch",
	                                  "layers.1.mlp.router.matmul", "layers.1.mlp.dispatch"};
	for (int i = 0; i < 4; i++) {
		const struct dist_op *d = dop(p, tok[i]);
		cr_expect_eq(layout_local_elems(&d->in[0]), 4 * 8, "%s", tok[i]);
		int into = op_of(p, tok[i]);
		for (int e = 0; e < p->n_edges; e++)
			if (p->edges[e].consumer == into)
				cr_expect_eq(p->edges[e].redist.n_steps, 0, "%s", tok[i]);
	}
	/* the combine's output, the layer's residual stream, stays a shard */
	const struct dist_op *comb = dop(p, "layers.1.mlp.combine");
	cr_expect_eq(layout_local_elems(&comb->out[0]), 4 * 8);
	cr_expect_eq(D.errors, 0);
}

/* ---------------------------------------------- context parallelism */

/* A 1-layer LLaMA (h 64, 4 heads of d 16, 2 key/value heads, s 32) on 8
 * GPUs, TP 2 x CP 2 x DP 2: one sequence a replica, each cut in two
 * pieces of 16 tokens. */
#define CP_GEN "{\"kind\": \"llama\", \"hidden\": 64, \"layers\": 1, \"heads\": 4, \"kv_heads\": 2," \
               " \"ffn\": 128, \"seq\": 32, \"vocab\": 128, \"micro_batch\": 2, \"dtype\": \"bf16\"}"

Test(baselines, megatron_context_parallel_counted_by_hand)
{
	struct scenario *s = generated_with(CP_GEN, "dgx-h100", 8,
	                                    ", \"tensor_parallel\": 2,"
	                                    " \"context_parallel\": 2");
	struct plan *p = plan_megatron(A, s, &OPT, &D);
	cr_assert_not_null(p, "%s", diag_first_error(A, &D));
	/* Rank = 4 dp + 2 cp + mp: the CP groups {0, 2}, {1, 3}, {4, 6},
	 * {5, 7}. A rank's keys [1, kv/TP = 1, d 16, s/CP = 16] bf16 = 512 B,
	 * all-gathered over its CP pair: (2 - 1) x 512 = 512 B; the values
	 * alike. Nothing else crosses a CP group forward. */
	int gathers = 0;
	for (int e = 0; e < p->n_edges; e++)
		for (int k = 0; k < p->edges[e].redist.n_steps; k++) {
			const struct comm_step *st = &p->edges[e].redist.steps[k];
			if (st->kind == STEP_SLICE || st->kind == STEP_RESHAPE)
				continue;
			int64_t m[2];
			rank_groups_members(&st->groups, 0, m);
			cr_expect_eq(st->kind, STEP_ALLGATHER);
			cr_expect_eq(st->groups.size, 2);
			cr_expect(m[0] == 0 && m[1] == 2, "group {%lld, %lld}", (long long)m[0],
			          (long long)m[1]);
			cr_expect_float_eq(st->bytes_per_device, 512, 1e-9);
			gathers++;
		}
	cr_expect_eq(gathers, 2, "the keys and the values");
	const struct redist *k = edge_redist(p, "layers.0.attn.k.transpose", "layers.0.attn.scores");
	cr_assert_not_null(k);
	cr_expect_eq(k->steps[0].after.shape[3], 32);
	/* The queries of a group [s·g/CP = 32, d]: the scores [1, 1, 32, 32]
	 * a rank, an eighth of the FLOPs. */
	const struct dist_op *sc = dop(p, "layers.0.attn.scores");
	cr_expect_eq(layout_local_elems(&sc->out[0]), 32 * 32);
	cr_expect_float_eq(sc->flops_per_rank, p->graph->ops[op_of(p, "layers.0.attn.scores")].flops / 8,
	                   1e-9);
	/* The q weight [64, 64] cut by columns over TP: [64, 32] = 4,096 B,
	 * its gradient all-reduced over the 4 ranks of DP x CP: 2 x 3/4 x
	 * 4,096 = 6,144 B. */
	const struct dist_op *q = dop(p, "layers.0.attn.q.matmul");
	cr_assert_eq(q->n_grad, 1);
	cr_expect_eq(q->grad[0].groups.size, 4);
	int64_t m[4];
	rank_groups_members(&q->grad[0].groups, 0, m);
	cr_expect(m[0] == 0 && m[1] == 2 && m[2] == 4 && m[3] == 6);
	cr_expect_float_eq(q->grad[0].bytes_per_device, 6144, 1e-9);
	cr_expect_eq(D.errors, 0);
}

/* Two sequences a replica: CP would cut between sequences, not within. */
Test(baselines, megatron_context_parallel_needs_one_sequence_a_replica)
{
	struct scenario *s = generated_with(
	    "{\"kind\": \"llama\", \"hidden\": 64, \"layers\": 1, \"heads\": 4, \"ffn\": 128,"
	    " \"seq\": 32, \"vocab\": 128, \"micro_batch\": 4}",
	    "dgx-h100", 8, ", \"tensor_parallel\": 2, \"context_parallel\": 2");
	cr_expect_null(plan_megatron(A, s, &OPT, &D));
	cr_expect(has_diag(DIAG_ERROR, "context parallelism 2 does not fit: it needs one sequence "
	                               "per data-parallel replica"));
}

/* ------------------------- tensor parallelism above the key-value heads */

/* The local elements of the parameters of the ops whose names start with
 * `prefix`, on rank 0 (every rank alike). */
static double local_param_elems(const struct plan *p, const char *prefix)
{
	double n = 0;
	for (int i = 0; i < p->graph->n_ops; i++) {
		if (!named(p, i, prefix))
			continue;
		const struct op *o = &p->graph->ops[i];
		for (int k = 0; k < o->n_in; k++)
			if (p->graph->tensors[o->in[k]].role == TENSOR_PARAM)
				n += layout_local_bytes(&p->ops[i].in[k]) /
				     dtype_bytes(p->graph->tensors[o->in[k]].dtype);
	}
	return n;
}

/* LLaMA-2 70B's attention (h 8192, 64 heads of 128, 8 key-value heads)
 * at TP 16 in a CloudMatrix384 supernode, as Megatron-Core runs it
 * (megatron/core/transformer/attention.py, num_query_groups < TP):
 * linear_qkv stays one column-parallel weight of (64 + 2 x 8) x 128 =
 * 10,240 columns split 16 ways, linear_proj row parallel, so a rank holds
 *   8192 x 10240 / 16 + 8192 x 8192 / 16 = 5,242,880 + 4,194,304
 *   = 9,437,184 weights (18,874,368 B in bf16),
 * not the 10,485,760 of a K and V head replicated on two ranks each
 * (8192 x (4 x 128 + 2 x 128) + 4,194,304). The QKV output is
 * all-gathered over the 16 ranks: a rank receives 15/16 of B s x 10,240
 * x 2 B (B = 1, s = 128: 2,457,600 B). Each rank computes a 16th of the
 * scores: 4 heads' worth, [1, 1, 128 x 8 / 2, 128] of [1, 8, 1024, 128]. */
Test(baselines, megatron_tp_above_the_kv_heads_as_megatron_core)
{
	const char *gen = "{\"kind\": \"llama\", \"hidden\": 8192, \"layers\": 1, \"heads\": 64, "
	                  "\"kv_heads\": 8, \"ffn\": 28672, \"seq\": 128, \"vocab\": 32000, "
	                  "\"micro_batch\": 1, \"dtype\": \"bf16\"}";
	struct scenario *s = generated_with(gen, "cloudmatrix384", 16, "");
	struct plan *p = plan_megatron_degree(A, s, &OPT, 16, &D);
	cr_assert_not_null(p);
	cr_expect_eq(D.errors, 0);
	cr_expect_float_eq(local_param_elems(p, "layers.0.attn."), 9437184.0, 1e-6);
	cr_expect_float_eq(local_param_elems(p, "layers.0.attn.k."), 8192.0 * 1024 / 16, 1e-6);
	double gathered = 0;
	const char *into[] = {"layers.0.attn.q.reshape", "layers.0.attn.k.reshape",
	                      "layers.0.attn.v.reshape"};
	for (int k = 0; k < 3; k++) {
		const struct plan_edge *e = edge_into(p, into[k], 0);
		cr_assert_not_null(e, "%s", into[k]);
		cr_assert_eq(e->redist.n_steps, 1);
		cr_expect_eq(e->redist.steps[0].kind, STEP_ALLGATHER);
		cr_expect_eq(e->redist.steps[0].groups.size, 16);
		gathered += e->redist.steps[0].bytes_per_device;
	}
	cr_expect_float_eq(gathered, 15.0 / 16 * 128 * 10240 * 2, 1e-6);
	static const int64_t scores[] = {1, 8, 2, 1, 1, 8, 1, 1};
	expect_cuts(p, "layers.0.attn.scores", scores, 8);
	/* the MLP as ever: a 16th of 3 x 8192 x 28672 */
	cr_expect_float_eq(local_param_elems(p, "layers.0.mlp."), 3.0 * 8192 * 28672 / 16, 1e-6);
}

/* Megatron-Core's rule (transformer_config.py): the query groups must be a
 * multiple or a divisor of TP. 12 heads in 4 groups: TP 6 is neither
 * (refused, in those words), TP 4 divides them. 8 heads of 64 in 2
 * groups at TP 8 (4 ranks a group): a rank holds an 8th of the QKV
 * weight's (8 + 2 x 2) x 64 columns and of the output projection. */
Test(baselines, megatron_kv_heads_refused_by_megatron_cores_rule)
{
	const char *gen = "{\"kind\": \"llama\", \"hidden\": 768, \"layers\": 1, \"heads\": 12, "
	                  "\"kv_heads\": 4, \"ffn\": 1536, \"seq\": 48, \"vocab\": 1536, "
	                  "\"micro_batch\": 1, \"dtype\": \"bf16\"}";
	struct scenario *s = generated_with(gen, "cloudmatrix384", 6, "");
	cr_expect_null(plan_megatron_degree(A, s, &OPT, 6, &D));
	cr_expect(has_diag(DIAG_ERROR, "tensor parallel 6 is neither a multiple nor a divisor of "
	                               "the 4 key-value heads"));
	diag_list_free(&D);
	diag_list_init(&D);
	struct scenario *s4 = generated_with(gen, "cloudmatrix384", 4, "");
	cr_expect_not_null(plan_megatron_degree(A, s4, &OPT, 4, &D));
	const char *small = "{\"kind\": \"llama\", \"hidden\": 512, \"layers\": 1, \"heads\": 8, "
	                    "\"kv_heads\": 2, \"ffn\": 1024, \"seq\": 64, \"vocab\": 1024, "
	                    "\"micro_batch\": 1, \"dtype\": \"bf16\"}";
	struct scenario *s8 = generated_with(small, "cloudmatrix384", 8, "");
	struct plan *p = plan_megatron_degree(A, s8, &OPT, 8, &D);
	cr_assert_not_null(p);
	cr_expect_eq(D.errors, 0);
	cr_expect_float_eq(local_param_elems(p, "layers.0.attn."),
	                   (512.0 * (8 + 2 * 2) * 64 + 512.0 * 512) / 8, 1e-6);
	/* with context parallelism: not modelled, and said so */
	struct scenario *cp = generated_with(small, "cloudmatrix384", 8, ", \"context_parallel\": 2");
	cr_expect_null(plan_megatron_degree(A, cp, &OPT, 4, &D));
	cr_expect(has_diag(DIAG_ERROR, "tensor parallel 4 above the model's 2 key-value heads with "
	                               "context parallelism 2 is not modelled"));
}

/* --------------------------------------------------- fused QKV projection */

/* The bytes per device of the redistributions into ops named `prefix`. */
static double attn_redist_bytes(const struct plan *p, const char *prefix)
{
	double b = 0;
	for (int e = 0; e < p->n_edges; e++)
		if (named(p, p->edges[e].consumer, prefix))
			for (int k = 0; k < p->edges[e].redist.n_steps; k++)
				b += p->edges[e].redist.steps[k].bytes_per_device;
	return b;
}

#define FUSED_GEN(fused)                                                                   \
	"{\"kind\": \"llama\", \"hidden\": 512, \"layers\": 1, \"heads\": 8, \"kv_heads\": 2, " \
	"\"ffn\": 1024, \"seq\": 64, \"vocab\": 1024, \"micro_batch\": 1, \"dtype\": \"bf16\", " \
	"\"fused_qkv\": " fused "}"

/* Megatron-LM's query_key_value / linear_qkv (megatron/core/transformer/
 * attention.py, get_query_key_value_tensors): one column-parallel weight
 * of (8 + 2 x 2) x 64 = 768 columns, each group's [4 query heads | key |
 * value] whole on a rank. At TP 2 (one group a rank) the views need no
 * communication: the attention has none but the output projection's
 * AllReduce, and a rank holds (512 x 768 + 512 x 512) / 2 weights as with
 * three projections. At TP 8 (above the 2 groups, Megatron-Core's
 * sub-sharding) the QKV output is all-gathered once: 7/8 x 64 x 768 x 2 B
 * = 86,016 B a device, what the three gathers of Q, K and V add up to. */
Test(baselines, megatron_fused_qkv_is_one_column_parallel_projection)
{
	struct scenario *s = generated(FUSED_GEN("true"), "dgx-h100", 2);
	struct plan *p = plan_megatron_degree(A, s, &OPT, 2, &D);
	cr_assert_not_null(p);
	cr_expect_eq(D.errors, 0);
	static const int64_t qkv[] = {1, 1, 1, 2};
	expect_cuts(p, "layers.0.attn.qkv.matmul", qkv, 4);
	cr_expect_eq(attn_redist_bytes(p, "layers.0.attn."), 0);
	cr_expect_float_eq(local_param_elems(p, "layers.0.attn."), (512.0 * 768 + 512 * 512) / 2,
	                   1e-6);
	struct scenario *s8 = generated(FUSED_GEN("true"), "dgx-h100", 8);
	struct plan *p8 = plan_megatron_degree(A, s8, &OPT, 8, &D);
	cr_assert_not_null(p8);
	const struct plan_edge *e = edge_into(p8, "layers.0.attn.qkv.reshape", 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->redist.n_steps, 1);
	cr_expect_eq(e->redist.steps[0].kind, STEP_ALLGATHER);
	cr_expect_float_eq(e->redist.steps[0].bytes_per_device, 7.0 / 8 * 64 * 768 * 2, 1e-6);
	struct scenario *u8 = generated(FUSED_GEN("false"), "dgx-h100", 8);
	struct plan *q8 = plan_megatron_degree(A, u8, &OPT, 8, &D);
	cr_assert_not_null(q8);
	cr_expect_float_eq(attn_redist_bytes(q8, "layers.0.attn."),
	                   attn_redist_bytes(p8, "layers.0.attn."), 1e-9);
}

/* Megatron-Core's linear_fc1 with gated_linear_unit (fused_gate_up): one
 * column-parallel projection of 2 x 1024 columns at TP 2, a rank holding
 * 1024 of them (its gate and its up columns together): the MLP needs no
 * redistribution, and the estimate keeps the memory and the communication
 * of two projections. */
Test(baselines, megatron_fused_gate_up_is_one_column_parallel_projection)
{
	struct estimate e[2];
	for (int f = 0; f < 2; f++) {
		const char *gen = f ? "{\"kind\": \"llama\", \"hidden\": 512, \"layers\": 1, "
		                      "\"heads\": 8, \"kv_heads\": 2, \"ffn\": 1024, \"seq\": 64, "
		                      "\"vocab\": 1024, \"micro_batch\": 1, \"fused_gate_up\": true}"
		                    : FUSED_GEN("false");
		struct scenario *s = generated(gen, "dgx-h100", 2);
		struct plan *p = plan_megatron_degree(A, s, &OPT, 2, &D);
		cr_assert_not_null(p);
		cr_assert(plan_estimate(A, p, &e[f], &D));
		cr_expect_eq(attn_redist_bytes(p, "layers.0.mlp."), 0);
		cr_expect_float_eq(local_param_elems(p, "layers.0.mlp."), 3.0 * 512 * 1024 / 2, 1e-6);
		if (f) {
			static const int64_t fc1[] = {1, 1, 1, 2};
			expect_cuts(p, "layers.0.mlp.gate_up.matmul", fc1, 4);
		}
	}
	cr_expect_eq(e[1].activation_bytes, e[0].activation_bytes);
	cr_expect_float_eq(e[1].comm_s, e[0].comm_s, 1e-12 * e[0].comm_s); /* summed in another order */
	cr_expect_lt(e[1].compute_s, e[0].compute_s);
}

/* Fused or not, the estimate keeps the same memory (the views save
 * nothing; the projection's input is kept once either way) and the same
 * communication; the fused plan runs fewer kernels. Megatron-LM's
 * arguments (plan --export megatron) do not change: Megatron-LM always
 * fuses. */
Test(baselines, megatron_fused_qkv_same_memory_fewer_kernels)
{
	struct estimate e[2];
	for (int f = 0; f < 2; f++) {
		struct scenario *s = generated(f ? FUSED_GEN("true") : FUSED_GEN("false"), "dgx-h100", 2);
		struct plan *p = plan_megatron_degree(A, s, &OPT, 2, &D);
		cr_assert_not_null(p);
		cr_assert(plan_estimate(A, p, &e[f], &D));
	}
	cr_expect_eq(e[1].activation_bytes, e[0].activation_bytes);
	cr_expect_eq(e[1].memory_bytes_per_device, e[0].memory_bytes_per_device);
	cr_expect_eq(e[1].param_bytes, e[0].param_bytes);
	cr_expect_lt(e[1].compute_s, e[0].compute_s);
	char dir[] = "/tmp/shardlab-fqkv-XXXXXX", cwd[512], path[600], args[700];
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	snprintf(path, sizeof path, "%s/s.json", dir);
	char *out[2];
	for (int f = 0; f < 2; f++) {
		fixture_write(path, "{\"format\": \"shardlab-scenario\", \"version\": 1, "
		              "\"name\": \"fq\", \"model\": {\"name\": \"m\", \"generator\": %s}, "
		              "\"topology\": \"%s/topologies/dgx-h100.json\", \"devices\": 8, "
		              "\"training\": {\"global_batch\": 8, \"dtype\": \"bf16\"}}",
		              f ? FUSED_GEN("true") : FUSED_GEN("false"), cwd);
		snprintf(args, sizeof args, "plan %s --planner megatron --export megatron -", path);
		struct cli_run r = fixture_shardlab(args, false);
		cr_assert_eq(r.status, 0, "%s", r.out);
		out[f] = r.out;
	}
	remove(path);
	rmdir(dir);
	cr_expect_str_eq(out[1], out[0]);
	free(out[0]);
	free(out[1]);
}
