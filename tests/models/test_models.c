/* test_models.c — the op catalog, the model loader and the generators.
 *
 * Expected values are worked out by hand or from published formulas (the
 * derivation sits beside each assertion), never copied from shardlab's
 * own output. Run from the repository root.
 */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "models.h"

/* Loads an in-memory model; diagnostics land in *d (caller frees). */
static struct graph *load_text(struct arena *a, const char *text, struct diag_list *d)
{
	struct json_doc doc;
	struct graph *g = NULL;
	diag_list_init(d);
	if (json_doc_parse(&doc, "mem.json", text, strlen(text), d))
		g = graph_load_doc(a, &doc);
	json_doc_free(&doc);
	return g;
}

/* Joins the diagnostics as "line: path: message" lines. */
static void diag_text(const struct diag_list *d, char *buf, size_t size)
{
	size_t o = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < d->count && o < size; i++)
		o += (size_t)snprintf(buf + o, size - o, "%d: %s: %s\n", d->items[i].line,
		                      d->items[i].path ? d->items[i].path : "", d->items[i].msg);
}

#define HEAD "{\"format\": \"shardlab-model\", \"version\": 1, \"name\": \"t\",\n"

static const struct tensor *out_of(const struct graph *g, const char *op)
{
	int i = graph_find_op(g, op);
	cr_assert(i >= 0, "op %s missing", op);
	return &g->tensors[g->ops[i].out[0]];
}

static void assert_dims(const struct tensor *t, int rank, const int64_t *dims)
{
	cr_assert_eq(t->rank, rank, "%s: rank %d, want %d", t->name, t->rank, rank);
	for (int i = 0; i < rank; i++)
		cr_assert_eq(t->dims[i], dims[i], "%s: dim %d is %lld, want %lld", t->name, i,
		             (long long)t->dims[i], (long long)dims[i]);
}

static struct graph *gen(struct arena *a, struct model_gen *p)
{
	struct diag_list d;
	diag_list_init(&d);
	struct graph *g = graph_generate(a, p, &d);
	char buf[2048];
	diag_text(&d, buf, sizeof buf);
	cr_assert_not_null(g, "generator failed:\n%s", buf);
	diag_list_free(&d);
	return g;
}

/* ------------------------------------------------------------------ FFN */

static void check_ffn(const struct graph *g)
{
	static const char *const names[] = {"dense1.matmul", "dense1.add", "relu", "dense2.matmul",
	                                    "dense2.add"};
	static const enum op_kind kinds[] = {OP_MATMUL, OP_ADD, OP_RELU, OP_MATMUL, OP_ADD};
	cr_assert_eq(g->n_ops, 5);
	for (int i = 0; i < 5; i++) {
		cr_assert_str_eq(g->ops[i].name, names[i]);
		cr_assert_eq(g->ops[i].kind, kinds[i]);
	}
	/* MatMul [64,64] x [64,64]: 2·m·k·n = 2·64·64·64 = 524288. */
	cr_assert_eq(g->ops[0].flops, 2.0 * 64 * 64 * 64);
	cr_assert_eq(g->ops[3].flops, 2.0 * 64 * 64 * 64);
	/* Add: one FLOP per output element, 64·64. */
	cr_assert_eq(g->ops[1].flops, 64.0 * 64);
	struct graph_totals t;
	graph_totals(g, &t);
	/* Two Dense layers of a 64x64 weight and a 64 bias. */
	cr_assert_eq(t.parameters, 2 * (64 * 64 + 64));
	cr_assert_eq(t.parameter_bytes, 4.0 * 2 * (64 * 64 + 64));
	cr_assert_eq(t.matmul_flops, 2 * 2.0 * 64 * 64 * 64);
	/* MatMul bytes: x and W read (2·4096·4 B), y written (4096·4 B). */
	cr_assert_eq(g->ops[0].bytes_read, 2 * 4096 * 4.0);
	cr_assert_eq(g->ops[0].bytes_written, 4096 * 4.0);
	cr_assert_eq(g->ops[0].params, 64 * 64);
	for (int i = 0; i < g->n_tensors; i++)
		if (!strcmp(g->tensors[i].name, "x"))
			cr_assert_eq(g->tensors[i].role, TENSOR_INPUT);
	int w = graph_find_tensor(g, "dense2.bias");
	cr_assert(w >= 0 && g->tensors[w].role == TENSOR_PARAM && g->tensors[w].elems == 64);
}

Test(models, ffn_file_matches_seed)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct graph *g = graph_load(a, "models/ffn.json", &d);
	cr_assert_not_null(g);
	cr_assert_eq(d.errors, 0);
	cr_assert_str_eq(g->file, "models/ffn.json");
	check_ffn(g);
	diag_list_free(&d);
	arena_free(a);
}

Test(models, ffn_generator_matches_seed)
{
	struct arena *a = arena_new();
	struct model_gen p;
	model_gen_defaults(&p, GEN_FFN);
	cr_assert_eq(p.hidden, 64);
	cr_assert_eq(p.micro_batch, 64);
	check_ffn(gen(a, &p));
	arena_free(a);
}

/* --------------------------------------------------------------- GPT-3 */

Test(models, gpt3_175b_parameters_and_flops)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct graph *g = graph_load(a, "models/gpt3-175b.json", &d);
	cr_assert_not_null(g);
	struct graph_totals t;
	graph_totals(g, &t);
	double h = 12288, l = 96, V = 51200, s = 2048, B = 1;
	/* Narayanan et al. (SC21): P = 12·l·h²·(1 + 13/(12h) + (V+s)/(12·l·h)):
	 * per layer QKV 3h²+3h, projection h²+h, MLP 8h²+5h, two LayerNorms 4h;
	 * plus word (V·h) and position (s·h) embeddings. ≈ 174.6e9. */
	double P = 12 * l * h * h * (1 + 13 / (12 * h) + (V + s) / (12 * l * h));
	cr_assert(fabs((double)t.parameters - P) / P < 1e-3, "parameters %lld vs %.0f",
	          (long long)t.parameters, P);
	cr_assert(fabs(P - 174.6e9) / 174.6e9 < 1e-3);
	/* Forward FLOPs: 24·B·s·l·h²·(1 + s/(6h)) from the matmuls of the layers
	 * (QKV 6Bsh², projection 2Bsh², MLP 16Bsh², scores and context 4Bs²h),
	 * plus the LM head 2·B·s·h·V. */
	double F = 24 * B * s * l * h * h * (1 + s / (6 * h)) + 2 * B * s * h * V;
	cr_assert(fabs(t.forward_flops - F) / F < 1e-3, "forward %.6g vs %.6g", t.forward_flops, F);
	/* The matmuls alone are exactly that formula. */
	cr_assert(fabs(t.matmul_flops - F) / F < 1e-12, "matmul %.17g vs %.17g", t.matmul_flops, F);
	/* Weight tying: the LM head reads the word embedding [V,h] transposed. */
	int head = graph_find_op(g, "lm_head");
	int wte = graph_find_tensor(g, "embed.word.weight");
	cr_assert(head >= 0 && wte >= 0);
	cr_assert_eq(g->ops[head].in[1], wte);
	cr_assert(g->ops[head].attrs.transpose_b);
	cr_assert_eq(g->tensors[wte].n_consumers, 2);
	diag_list_free(&d);
	arena_free(a);
}

/* The generator builds the first layer, then makes room for the others in
 * one allocation: the layers built after that must be those a one-layer
 * model has, repeated, with every op reading tensors made before it. */
Test(models, generated_layers_repeat_after_the_first)
{
	struct arena *a = arena_new();
	struct model_gen p;
	model_gen_defaults(&p, GEN_GPT);
	p.hidden = 64, p.heads = 4, p.seq = 16, p.vocab = 128, p.layers = 1;
	const struct graph *one = gen(a, &p);
	p.layers = 5;
	const struct graph *five = gen(a, &p);
	/* Each layer adds the same ops and tensors: five layers have four
	 * layers' worth more than one. */
	p.layers = 2;
	const struct graph *two = gen(a, &p);
	int per_op = two->n_ops - one->n_ops, per_tensor = two->n_tensors - one->n_tensors;
	cr_assert_gt(per_op, 0);
	cr_assert_eq(five->n_ops, one->n_ops + 4 * per_op);
	cr_assert_eq(five->n_tensors, one->n_tensors + 4 * per_tensor);
	/* The embedding and the first layer come first in both, op for op. */
	int head = graph_find_op(one, "final_ln");
	cr_assert_gt(head, per_op);
	for (int i = 0; i < head; i++) {
		cr_assert_str_eq(five->ops[i].name, one->ops[i].name);
		cr_assert_eq(five->ops[i].flops, one->ops[i].flops);
	}
	for (int l = 0; l < 5; l++) {
		char name[64];
		snprintf(name, sizeof name, "layers.%d.ln1", l);
		cr_assert_geq(graph_find_op(five, name), 0, "%s missing", name);
	}
	for (int i = 0; i < five->n_ops; i++) {
		const struct op *op = &five->ops[i];
		for (int k = 0; k < op->n_in; k++)
			cr_assert_lt(five->tensors[op->in[k]].producer, i, "%s reads a later tensor", op->name);
		for (int k = 0; k < op->n_out; k++)
			cr_assert_eq(five->tensors[op->out[k]].producer, i);
	}
	arena_free(a);
}

/* --------------------------------------------------------------- LLaMA */

Test(models, llama2_7b_parameters_exact)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct graph *g = graph_load(a, "models/llama2-7b.json", &d);
	cr_assert_not_null(g);
	struct graph_totals t;
	graph_totals(g, &t);
	/* h 4096, kv·d = 32·128 = 4096, ffn 11008, V 32000, 32 layers:
	 *   embedding          32000·4096           =   131,072,000
	 *   per layer: q,k,v,o 4·4096·4096          =    67,108,864
	 *              MLP     3·4096·11008         =   135,266,304
	 *              norms   2·4096               =         8,192
	 *              sum                           =   202,383,360
	 *   32 layers                               = 6,476,267,520
	 *   final norm 4096, head 4096·32000        =   131,076,096
	 *   total                                   = 6,738,415,616 */
	cr_assert_eq(t.parameters, 6738415616LL);
	diag_list_free(&d);
	arena_free(a);
}

Test(models, llama2_70b_parameters_exact)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct graph *g = graph_load(a, "models/llama2-70b.json", &d);
	cr_assert_not_null(g);
	struct graph_totals t;
	graph_totals(g, &t);
	/* h 8192, 64 heads of d = 128, kv 8 -> kv·d = 1024, ffn 28672, V 32000, 80 layers:
	 *   embedding          32000·8192            =    262,144,000
	 *   per layer: q, o    2·8192·8192           =    134,217,728
	 *              k, v    2·8192·1024           =     16,777,216
	 *              MLP     3·8192·28672          =    704,643,072
	 *              norms   2·8192                =         16,384
	 *              sum                            =    855,654,400
	 *   80 layers                                = 68,452,352,000
	 *   final norm 8192, head 8192·32000         =    262,152,192
	 *   total                                    = 68,976,648,192 */
	cr_assert_eq(t.parameters, 68976648192LL);
	diag_list_free(&d);
	arena_free(a);
}

Test(models, llama_gqa_shapes)
{
	struct arena *a = arena_new();
	struct model_gen p;
	model_gen_defaults(&p, GEN_LLAMA);
	p.hidden = 64;
	p.layers = 1;
	p.heads = 8;
	p.kv_heads = 2;
	p.seq = 16;
	p.vocab = 100;
	p.micro_batch = 3;
	p.ffn = 96;
	struct graph *g = gen(a, &p);
	/* B 3, s 16, a 8, kv 2, d 64/8 = 8, g = a/kv = 4; the queries of a
	 * group as rows [s, g], the sequence major. */
	assert_dims(out_of(g, "layers.0.attn.q.matmul"), 2, (int64_t[]){48, 64});
	assert_dims(out_of(g, "layers.0.attn.k.matmul"), 2, (int64_t[]){48, 16});
	assert_dims(out_of(g, "layers.0.attn.q.reshape"), 5, (int64_t[]){3, 16, 2, 4, 8});
	assert_dims(out_of(g, "layers.0.attn.q.transpose"), 5, (int64_t[]){3, 2, 16, 4, 8});
	assert_dims(out_of(g, "layers.0.attn.q.group"), 4, (int64_t[]){3, 2, 64, 8});
	assert_dims(out_of(g, "layers.0.attn.k.transpose"), 4, (int64_t[]){3, 2, 8, 16});
	assert_dims(out_of(g, "layers.0.attn.v.transpose"), 4, (int64_t[]){3, 2, 16, 8});
	assert_dims(out_of(g, "layers.0.attn.scores"), 4, (int64_t[]){3, 2, 64, 16});
	assert_dims(out_of(g, "layers.0.attn.context"), 4, (int64_t[]){3, 2, 64, 8});
	assert_dims(out_of(g, "layers.0.attn.context.ungroup"), 5, (int64_t[]){3, 2, 16, 4, 8});
	assert_dims(out_of(g, "layers.0.attn.context.transpose"), 5, (int64_t[]){3, 16, 2, 4, 8});
	assert_dims(out_of(g, "layers.0.attn.context.reshape"), 2, (int64_t[]){48, 64});
	assert_dims(out_of(g, "layers.0.mlp.mul"), 2, (int64_t[]){48, 96});
	assert_dims(out_of(g, "lm_head"), 2, (int64_t[]){48, 100});
	assert_dims(out_of(g, "loss"), 1, (int64_t[]){48});
	cr_assert_eq(out_of(g, "loss.mean")->rank, 0);
	/* Scores: 2·batch·m·k·n = 2·(3·2)·64·8·16 FLOPs. */
	cr_assert_eq(g->ops[graph_find_op(g, "layers.0.attn.scores")].flops, 2.0 * 6 * 64 * 8 * 16);
	cr_assert_eq(graph_find_op(g, "embed.pos"), -1);
	arena_free(a);
}

Test(models, generator_defaults_and_errors)
{
	struct model_gen p;
	model_gen_defaults(&p, GEN_LLAMA);
	p.kv_heads = 5; /* does not divide 32 heads */
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	cr_assert_null(graph_generate(a, &p, &d));
	cr_assert_eq(d.errors, 1);
	cr_assert_str_eq(d.items[0].path, "generator.kv_heads");
	diag_list_free(&d);
	/* LLaMA's default FFN size: 8h/3 rounded up to 256 -> 11008 for h 4096,
	 * so the defaults give LLaMA-2 7B. */
	model_gen_defaults(&p, GEN_LLAMA);
	struct graph_totals t;
	graph_totals(gen(a, &p), &t);
	cr_assert_eq(t.parameters, 6738415616LL);
	arena_free(a);
}

Test(models, mlp_and_attention_generators)
{
	struct arena *a = arena_new();
	struct model_gen p;
	model_gen_defaults(&p, GEN_MLP);
	p.hidden = 32;
	p.seq = 8;
	p.micro_batch = 2;
	struct graph *g = gen(a, &p);
	/* MatMul, BiasAdd, GeLU, MatMul, BiasAdd, Dropout (dropout 0.1). */
	static const enum op_kind mlp[] = {OP_MATMUL, OP_BIASADD, OP_GELU, OP_MATMUL, OP_BIASADD,
	                                   OP_DROPOUT};
	cr_assert_eq(g->n_ops, 6);
	for (int i = 0; i < 6; i++)
		cr_assert_eq(g->ops[i].kind, mlp[i]);
	/* ffn defaults to 4h = 128: fc1 2·(2·8)·32·128 FLOPs. */
	assert_dims(out_of(g, "mlp.fc1.matmul"), 2, (int64_t[]){16, 128});
	cr_assert_eq(g->ops[0].flops, 2.0 * 16 * 32 * 128);
	cr_assert_float_eq(g->ops[5].attrs.keep_prob, 0.9, 1e-12);

	model_gen_defaults(&p, GEN_ATTENTION);
	p.hidden = 32;
	p.heads = 4;
	p.seq = 8;
	p.micro_batch = 2;
	g = gen(a, &p);
	/* B 2, s 8, a 4, d 8: q [B,a,s,d], k [B,a,d,s], scores [B,a,s,s]. */
	assert_dims(out_of(g, "attn.q.transpose"), 4, (int64_t[]){2, 4, 8, 8});
	assert_dims(out_of(g, "attn.k.transpose"), 4, (int64_t[]){2, 4, 8, 8});
	assert_dims(out_of(g, "attn.scores"), 4, (int64_t[]){2, 4, 8, 8});
	assert_dims(out_of(g, "attn.out.dropout"), 2, (int64_t[]){16, 32});
	/* Softmax: 5 FLOPs per element of [2,4,8,8]. */
	cr_assert_eq(g->ops[graph_find_op(g, "attn.softmax")].flops, 5.0 * 2 * 4 * 8 * 8);
	arena_free(a);
}

/* Members a kind does not use change nothing, however large: an MLP
 * generator with heads and kv_heads near 2^62, a negative head_dim and
 * qk_norm is the MLP of mlp_and_attention_generators (the size checks
 * once multiplied the unused heads; the sanitizer build runs this). An
 * attention generator ignores head_dim and qk_norm, which are llama's. */
Test(models, members_a_kind_does_not_use_change_nothing)
{
	struct arena *a = arena_new();
	struct model_gen p;
	model_gen_defaults(&p, GEN_MLP);
	p.hidden = 32, p.seq = 8, p.micro_batch = 2;
	p.heads = p.kv_heads = (int64_t)1 << 62;
	p.head_dim = -5;
	p.qk_norm = p.fused_qkv = true;
	struct graph *g = gen(a, &p);
	cr_expect_eq(g->n_ops, 6);
	assert_dims(out_of(g, "mlp.fc1.matmul"), 2, (int64_t[]){16, 128});
	model_gen_defaults(&p, GEN_ATTENTION);
	p.hidden = 32, p.heads = 4, p.seq = 8, p.micro_batch = 2;
	p.head_dim = 16;
	p.qk_norm = true;
	g = gen(a, &p);
	assert_dims(out_of(g, "attn.q.transpose"), 4, (int64_t[]){2, 4, 8, 8});
	cr_expect_eq(graph_find_op(g, "attn.q_norm"), -1);
	arena_free(a);
}

/* ------------------------------------------------------- shape inference */

Test(models, broadcasting_reshape_transpose_split)
{
	const char *text = HEAD
		"\"inputs\": [{\"name\": \"x\", \"shape\": [4, 1, 6]}, {\"name\": \"y\", \"shape\": [5, 1]}],\n"
		"\"ops\": [\n"
		"{\"name\": \"add\", \"kind\": \"Add\", \"inputs\": [\"x\", \"y\"]},\n"
		"{\"name\": \"r\", \"kind\": \"Reshape\", \"inputs\": [\"add\"], \"attrs\": {\"shape\": [-1, 10, 3]}},\n"
		"{\"name\": \"t\", \"kind\": \"Transpose\", \"inputs\": [\"r\"], \"attrs\": {\"perm\": [2, 0, 1]}},\n"
		"{\"name\": \"s\", \"kind\": \"Split\", \"inputs\": [\"t\"], \"attrs\": {\"axis\": -1, \"outputs\": 5}},\n"
		"{\"name\": \"c\", \"kind\": \"Concat\", \"inputs\": [\"s:4\", \"s\", \"s:1\"], \"attrs\": {\"axis\": 2}},\n"
		"{\"name\": \"sum\", \"kind\": \"ReduceSum\", \"inputs\": [\"c\"], \"attrs\": {\"axes\": [0, -1], \"keep_dims\": true}},\n"
		"{\"name\": \"sl\", \"kind\": \"StridedSlice\", \"inputs\": [\"t\"], \"attrs\": {\"begin\": [0, 1, 2], \"end\": [3, 4, 10], \"strides\": [1, 2, 3]}},\n"
		"{\"name\": \"cast\", \"kind\": \"Cast\", \"inputs\": [\"sl\"], \"attrs\": {\"to\": \"float16\"}}\n"
		"]}";
	struct arena *a = arena_new();
	struct diag_list d;
	struct graph *g = load_text(a, text, &d);
	char buf[2048];
	diag_text(&d, buf, sizeof buf);
	cr_assert_not_null(g, "%s", buf);
	/* [4,1,6] + [5,1] -> [4,5,6] (1s stretch; missing leading dims are 1). */
	assert_dims(out_of(g, "add"), 3, (int64_t[]){4, 5, 6});
	cr_assert_eq(g->ops[0].flops, 120);
	/* 120 elements, [-1,10,3] -> -1 = 120/30 = 4. */
	assert_dims(out_of(g, "r"), 3, (int64_t[]){4, 10, 3});
	cr_assert_eq(g->ops[1].bytes_read + g->ops[1].bytes_written, 0);
	/* perm [2,0,1]: out[i] = in[perm[i]] -> [3,4,10]. */
	assert_dims(out_of(g, "t"), 3, (int64_t[]){3, 4, 10});
	/* Split the last axis (10) in 5: five [3,4,2]; "s:4" is the fifth. */
	cr_assert_eq(g->ops[graph_find_op(g, "s")].n_out, 5);
	cr_assert(graph_find_tensor(g, "s:4") >= 0);
	/* Concat three [3,4,2] on axis 2 -> [3,4,6]. */
	assert_dims(out_of(g, "c"), 3, (int64_t[]){3, 4, 6});
	/* Reduce axes 0 and 2 keeping dims -> [1,4,1]; 1 FLOP per input element (72). */
	assert_dims(out_of(g, "sum"), 3, (int64_t[]){1, 4, 1});
	cr_assert_eq(g->ops[graph_find_op(g, "sum")].flops, 72);
	/* Slices: ceil((3-0)/1) = 3, ceil((4-1)/2) = 2, ceil((10-2)/3) = 3. */
	assert_dims(out_of(g, "sl"), 3, (int64_t[]){3, 2, 3});
	cr_assert_eq(out_of(g, "cast")->dtype, DT_FP16);
	diag_list_free(&d);
	arena_free(a);
}

Test(models, ops_sorted_topologically_in_file_order)
{
	const char *text = HEAD
		"\"inputs\": [{\"name\": \"x\", \"shape\": [2, 2]}],\n"
		"\"ops\": [\n"
		"{\"name\": \"d\", \"kind\": \"Add\", \"inputs\": [\"b\", \"c\"]},\n"
		"{\"name\": \"b\", \"kind\": \"ReLU\", \"inputs\": [\"a\"]},\n"
		"{\"name\": \"c\", \"kind\": \"GeLU\", \"inputs\": [\"x\"]},\n"
		"{\"name\": \"a\", \"kind\": \"SiLU\", \"inputs\": [\"x\"]}\n"
		"]}";
	struct arena *a = arena_new();
	struct diag_list d;
	struct graph *g = load_text(a, text, &d);
	cr_assert_not_null(g);
	/* Ready at first: c (file 2) and a (file 3) -> c; then a; then b; then d. */
	static const char *const order[] = {"c", "a", "b", "d"};
	for (int i = 0; i < 4; i++)
		cr_assert_str_eq(g->ops[i].name, order[i]);
	cr_assert_eq(g->ops[0].line, 6);
	diag_list_free(&d);
	arena_free(a);
}

Test(models, errors_reported_together_without_cascade)
{
	const char *text = HEAD
		"\"inputs\": [{\"name\": \"x\", \"shape\": [64, 32]}],\n"
		"\"parameters\": [{\"name\": \"w\", \"shape\": [64, 64]}],\n"
		"\"ops\": [\n"
		"{\"name\": \"mm\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"]},\n"
		"{\"name\": \"relu\", \"kind\": \"ReLU\", \"inputs\": [\"mm\"]},\n"
		"{\"name\": \"w\", \"kind\": \"ReLU\", \"inputs\": [\"x\"]},\n"
		"{\"name\": \"p\", \"kind\": \"Add\", \"inputs\": [\"q\", \"x\"]},\n"
		"{\"name\": \"q\", \"kind\": \"Add\", \"inputs\": [\"p\", \"x\"]},\n"
		"{\"name\": \"t\", \"kind\": \"Transpose\", \"inputs\": [\"x\"], \"attrs\": {\"perm\": [1, 0, 2]}}\n"
		"]}";
	struct arena *a = arena_new();
	struct diag_list d;
	struct graph *g = load_text(a, text, &d);
	cr_assert_null(g);
	char buf[4096];
	diag_text(&d, buf, sizeof buf);
	/* Discovery order: names while reading ops, then cycles, then shapes in
	 * topological order; relu (a consumer of the failed mm) says nothing. */
	const char *want =
		"7: ops[2].name: duplicate name \"w\" (first at line 3)\n"
		"8: ops[3].inputs: cycle: p -> q -> p\n"
		"5: ops[0].inputs: MatMul contracted dimensions differ: [64,32] x [64,64] (32 != 64)\n"
		"10: ops[5].attrs.perm: [1,0,2] is not a permutation of 0..1 (the input is [64,32])\n";
	cr_assert_str_eq(buf, want);
	diag_list_free(&d);
	arena_free(a);
}

Test(models, inline_model_value)
{
	/* A scenario embeds a model without format/version. */
	const char *text = "{\"model\": {\"name\": \"inline\", \"generator\": {\"kind\": \"ffn\", \"hidden\": 8}}}";
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, "s.json", text, strlen(text), &d));
	struct jv root, m;
	cr_assert(jv_root(&doc, &root));
	cr_assert(jv_get(&root, "model", &m));
	struct graph *g = graph_load_value(a, &m);
	json_doc_free(&doc);
	cr_assert_not_null(g);
	cr_assert_str_eq(g->name, "inline");
	cr_assert_null(g->file);
	struct graph_totals t;
	graph_totals(g, &t);
	/* hidden 8: 2·(8·8 + 8) parameters. */
	cr_assert_eq(t.parameters, 2 * (8 * 8 + 8));
	diag_list_free(&d);
	arena_free(a);
}

Test(models, catalog_names_round_trip)
{
	for (int k = 0; k < OP_COUNT; k++)
		cr_assert_eq(op_kind_parse(op_kind_name((enum op_kind)k)), k);
	cr_assert_eq(op_kind_parse("Matmul"), -1);
	cr_assert_str_eq(op_kind_name(OP_SOFTMAXCROSSENTROPY), "SoftmaxCrossEntropy");
}

/* Every shipped model loads without a diagnostic. */
Test(models, shipped_models_validate)
{
	static const char *const files[] = {"models/ffn.json", "models/gpt3-175b.json",
	                                    "models/llama2-7b.json", "models/llama2-70b.json"};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		struct arena *a = arena_new();
		struct diag_list d;
		diag_list_init(&d);
		struct graph *g = graph_load(a, files[i], &d);
		cr_assert_not_null(g, "%s", files[i]);
		cr_assert_eq(d.count, 0, "%s", files[i]);
		diag_list_free(&d);
		arena_free(a);
	}
}

Test(models, graph_command_totals)
{
	const char *exe = getenv("SHARDLAB");
	cr_assert_not_null(exe);
	char cmd[1024];
	snprintf(cmd, sizeof cmd, "%s graph models/ffn.json --json", exe);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	char out[16384];
	size_t n = fread(out, 1, sizeof out - 1, p);
	out[n] = '\0';
	cr_assert_eq(pclose(p), 0);
	/* parameters 2·(64·64+64) = 8320; forward FLOPs 2·524288 (MatMuls) +
	 * 3·4096 (two Adds, one ReLU) = 1060864. */
	cr_assert(strstr(out, "\"parameters\":8320,"), "%s", out);
	cr_assert(strstr(out, "\"forward_flops\":1060864,"), "%s", out);
	snprintf(cmd, sizeof cmd, "%s graph --bogus >/dev/null 2>&1", exe);
	cr_assert_eq(WEXITSTATUS(system(cmd)), 2);
	snprintf(cmd, sizeof cmd, "%s graph tests/data/bad/model-cycle.json >/dev/null 2>&1", exe);
	cr_assert_eq(WEXITSTATUS(system(cmd)), 1);
}

/* ------------------------------------------------- dimension signatures */

/* The signature string and roles of op `name` in a model given as text. */
static void assert_sig(const char *ops_and_tensors, const char *op, const char *want,
                       struct op_sig *sig)
{
	char text[4096];
	snprintf(text, sizeof text, HEAD "%s}", ops_and_tensors);
	struct arena *a = arena_new();
	struct diag_list d;
	struct graph *g = load_text(a, text, &d);
	char buf[2048];
	diag_text(&d, buf, sizeof buf);
	cr_assert_not_null(g, "%s", buf);
	int i = graph_find_op(g, op);
	cr_assert(i >= 0);
	cr_assert(graph_op_signature(g, i, sig));
	char s[128];
	cr_assert_str_eq(op_sig_format(sig, s, sizeof s), want, "%s: got %s, want %s", op, s, want);
	diag_list_free(&d);
	arena_free(a);
}

/* Role of the label of input i, dimension d. */
static enum sig_role role_of(const struct op_sig *s, int i, int d)
{
	cr_assert(s->in[i][d] >= 0);
	return s->role[s->in[i][d]];
}

Test(models, signature_matmul)
{
	struct op_sig s;
	/* MatMul [m,k] x [k,n] -> [m,n] (docs/planner.md: mk,kn->mn); k is summed. */
	assert_sig("\"inputs\": [{\"name\": \"x\", \"shape\": [64, 32]}],"
	           "\"parameters\": [{\"name\": \"w\", \"shape\": [32, 16]}],"
	           "\"ops\": [{\"name\": \"mm\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"]}]",
	           "mm", "mk,kn->mn", &s);
	cr_assert_eq(role_of(&s, 0, 0), SIG_KEEP);
	cr_assert_eq(role_of(&s, 0, 1), SIG_SUM);
	cr_assert_eq(role_of(&s, 1, 1), SIG_KEEP);
	cr_assert_eq(s.size[s.in[0][1]], 32);
	/* transpose_a: x is [k,m]; transpose_b: w is [n,k]. */
	assert_sig("\"inputs\": [{\"name\": \"x\", \"shape\": [32, 64]}],"
	           "\"parameters\": [{\"name\": \"w\", \"shape\": [16, 32]}],"
	           "\"ops\": [{\"name\": \"mm\", \"kind\": \"MatMul\", \"inputs\": [\"x\", \"w\"],"
	           " \"attrs\": {\"transpose_a\": true, \"transpose_b\": true}}]",
	           "mm", "km,nk->mn", &s);
	cr_assert_eq(role_of(&s, 1, 1), SIG_SUM);
	/* BatchMatMul [2,4,8,16] x [2,4,16,8]: two batch labels (b, then the
	 * next free letter c) shared by all three tensors, then mk,kn->mn. */
	assert_sig("\"inputs\": [{\"name\": \"q\", \"shape\": [2, 4, 8, 16]},"
	           " {\"name\": \"k\", \"shape\": [2, 4, 16, 8]}],"
	           "\"ops\": [{\"name\": \"bmm\", \"kind\": \"BatchMatMul\", \"inputs\": [\"q\", \"k\"]}]",
	           "bmm", "bcmk,bckn->bcmn", &s);
	cr_assert_eq(role_of(&s, 0, 0), SIG_KEEP);
	cr_assert_eq(role_of(&s, 1, 2), SIG_SUM);
}

Test(models, signature_broadcast_and_bias)
{
	struct op_sig s;
	/* [4,1,6] + [5,1] -> [4,5,6] labelled abc: x's 1 stretched to 5 and
	 * y's 1 stretched to 6 carry no label ('1'); y's 5 shares b. */
	assert_sig("\"inputs\": [{\"name\": \"x\", \"shape\": [4, 1, 6]}, {\"name\": \"y\", \"shape\": [5, 1]}],"
	           "\"ops\": [{\"name\": \"add\", \"kind\": \"Add\", \"inputs\": [\"x\", \"y\"]}]",
	           "add", "a1c,b1->abc", &s);
	cr_assert_eq(s.in[0][1], -1);
	/* BiasAdd [8,16] + [16]: the bias carries the last label. */
	assert_sig("\"inputs\": [{\"name\": \"x\", \"shape\": [8, 16]}],"
	           "\"parameters\": [{\"name\": \"b\", \"shape\": [16]}],"
	           "\"ops\": [{\"name\": \"ba\", \"kind\": \"BiasAdd\", \"inputs\": [\"x\", \"b\"]}]",
	           "ba", "ab,b->ab", &s);
}

Test(models, signature_norm_gather_reduce)
{
	struct op_sig s;
	/* LayerNorm over axes 1.. of [4,8,16]: b and c whole, gamma/beta bc. */
	assert_sig("\"inputs\": [{\"name\": \"x\", \"shape\": [4, 8, 16]}],"
	           "\"parameters\": [{\"name\": \"g\", \"shape\": [8, 16]}, {\"name\": \"be\", \"shape\": [8, 16]}],"
	           "\"ops\": [{\"name\": \"ln\", \"kind\": \"LayerNorm\", \"inputs\": [\"x\", \"g\", \"be\"],"
	           " \"attrs\": {\"axis\": 1}}]",
	           "ln", "abc,bc,bc->abc", &s);
	cr_assert_eq(role_of(&s, 0, 0), SIG_KEEP);
	cr_assert_eq(role_of(&s, 0, 1), SIG_WHOLE);
	cr_assert_eq(role_of(&s, 0, 2), SIG_WHOLE);
	/* Gather(table [100,16], indices [4,8]) -> [4,8,16]: V (letter v)
	 * summed; the table's h is a, the indices b c. */
	assert_sig("\"inputs\": [{\"name\": \"ix\", \"shape\": [4, 8], \"dtype\": \"int32\"}],"
	           "\"parameters\": [{\"name\": \"t\", \"shape\": [100, 16]}],"
	           "\"ops\": [{\"name\": \"g\", \"kind\": \"Gather\", \"inputs\": [\"t\", \"ix\"]}]",
	           "g", "va,bc->bca", &s);
	cr_assert_eq(role_of(&s, 0, 0), SIG_SUM);
	cr_assert_eq(s.size[s.in[0][0]], 100);
	/* ReduceSum over axis 1 of [4,5,6]: b summed away; with keep_dims the
	 * size-1 dimension carries no label. */
	assert_sig("\"inputs\": [{\"name\": \"x\", \"shape\": [4, 5, 6]}],"
	           "\"ops\": [{\"name\": \"r\", \"kind\": \"ReduceSum\", \"inputs\": [\"x\"], \"attrs\": {\"axes\": [1]}}]",
	           "r", "abc->ac", &s);
	cr_assert_eq(role_of(&s, 0, 1), SIG_SUM);
	assert_sig("\"inputs\": [{\"name\": \"x\", \"shape\": [4, 5, 6]}],"
	           "\"ops\": [{\"name\": \"r\", \"kind\": \"ReduceSum\", \"inputs\": [\"x\"],"
	           " \"attrs\": {\"axes\": [1], \"keep_dims\": true}}]",
	           "r", "abc->a1c", &s);
}

Test(models, signature_cross_entropy_and_concat)
{
	struct op_sig s;
	/* SoftmaxCrossEntropy(logits [N,V], labels [N]) -> [N]: V summed, with
	 * the vocabulary-parallel rule (seed 003). */
	assert_sig("\"inputs\": [{\"name\": \"lg\", \"shape\": [8, 100]},"
	           " {\"name\": \"y\", \"shape\": [8], \"dtype\": \"int32\"}],"
	           "\"ops\": [{\"name\": \"ce\", \"kind\": \"SoftmaxCrossEntropy\", \"inputs\": [\"lg\", \"y\"]}]",
	           "ce", "nv,n->n", &s);
	cr_assert_eq(s.rule, SIG_RULE_VOCAB_CE);
	cr_assert_eq(role_of(&s, 0, 1), SIG_SUM);
	/* Concat [3,4] and [3,6] on axis 1 -> [3,10]: a shared; the output axis
	 * b (10) and each input's axis (c: 4, d: 6) whole. */
	assert_sig("\"inputs\": [{\"name\": \"x\", \"shape\": [3, 4]}, {\"name\": \"y\", \"shape\": [3, 6]}],"
	           "\"ops\": [{\"name\": \"c\", \"kind\": \"Concat\", \"inputs\": [\"x\", \"y\"], \"attrs\": {\"axis\": 1}}]",
	           "c", "ac,ad->ab", &s);
	cr_assert_eq(role_of(&s, 0, 1), SIG_WHOLE);
	cr_assert_eq(role_of(&s, 1, 1), SIG_WHOLE);
	cr_assert_eq(s.size[s.in[1][1]], 6);
	cr_assert_eq(s.size[s.out[0][1]], 10);
}

Test(models, graph_batch_is_the_samples_per_execution)
{
	/* The FFN's explicit input x is [64, 64]: 64 samples; GPT-3's generator
	 * says micro_batch 1 (its first input is the [1, 2048] token batch). */
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct graph *ffn = graph_load(a, "models/ffn.json", &d);
	struct graph *gpt = graph_load(a, "models/gpt3-175b.json", &d);
	cr_assert_not_null(ffn);
	cr_assert_not_null(gpt);
	cr_assert_eq(ffn->batch, 64);
	cr_assert_eq(gpt->batch, 1);
	diag_list_free(&d);
	arena_free(a);
}

/* ------------------------------------------------- mixture of experts */

/* A 2-layer LLaMA with a mixture-of-experts MLP, counted by hand:
 * h 8, 2 heads, ffn 16 (the experts' size), seq 3, micro-batch 2, vocab
 * 10, 4 experts, top-2, one shared expert, capacity factor 1.25. */
Test(models, moe_two_layers_counted_by_hand)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct model_gen gen;
	model_gen_defaults(&gen, GEN_LLAMA);
	gen.hidden = 8, gen.layers = 2, gen.heads = 2, gen.ffn = 16, gen.seq = 3;
	gen.micro_batch = 2, gen.vocab = 10;
	gen.experts = 4, gen.top_k = 2, gen.shared_experts = 1, gen.capacity_factor = 1.25;
	struct graph *g = graph_generate(a, &gen, &d);
	cr_assert_not_null(g);
	struct graph_totals t;
	graph_totals(g, &t);
	/* Per layer: norms 2·8 = 16; q, k, v, o 4·8·8 = 256; router 8·4 = 32;
	 * routed experts 4 · 3·8·16 = 1536; shared 3·8·16 = 384: 2224.
	 * Two layers 4448; embedding 80, final norm 8, head 80: 4616. Active:
	 * 2 of the 4 experts per layer, 4616 - 2·2·384 = 3080. */
	cr_expect_eq(t.parameters, 4616);
	cr_expect_eq(t.active_parameters, 3080);
	/* T = 2·3 = 6 tokens; C = 2 sequences · ceil(1.25·3·2/4) = 2·2 = 4
	 * slots per expert: the dispatch fills [4, 4, 8], each expert MatMul is
	 * 2·4·4·8·16 = 4096 FLOPs (gate, up and down: 12288 per layer). */
	int op = graph_find_op(g, "layers.1.mlp.dispatch");
	cr_assert_geq(op, 0);
	const struct tensor *slots = &g->tensors[g->ops[op].out[0]];
	cr_expect_eq(slots->rank, 3);
	cr_expect_eq(slots->dims[0], 4);
	cr_expect_eq(slots->dims[1], 4);
	cr_expect_eq(slots->dims[2], 8);
	double expert = 0;
	const char *names[] = {"layers.0.mlp.experts.gate.matmul", "layers.0.mlp.experts.up.matmul",
	                       "layers.0.mlp.experts.down.matmul"};
	for (int i = 0; i < 3; i++) {
		op = graph_find_op(g, names[i]);
		cr_assert_geq(op, 0, "%s", names[i]);
		expert += g->ops[op].flops;
	}
	cr_expect_float_eq(expert, 12288, 1e-9);
	/* The combine brings the k = 2 picks of each of the T = 6 tokens back,
	 * weighted and summed: [6, 8], 2·6·8·2 = 192 FLOPs; it reads 6·2 slot
	 * rows of 8 (bf16: 192 bytes), the [6, 2] int32 index (48) and the
	 * [6, 4] bf16 probabilities (48). */
	op = graph_find_op(g, "layers.0.mlp.combine");
	cr_assert_geq(op, 0);
	cr_expect_eq(g->ops[op].kind, OP_MOECOMBINE);
	const struct tensor *y = &g->tensors[g->ops[op].out[0]];
	cr_expect_eq(y->rank, 2);
	cr_expect_eq(y->dims[0], 6);
	cr_expect_eq(y->dims[1], 8);
	cr_expect_float_eq(g->ops[op].flops, 192, 1e-9);
	cr_expect_float_eq(g->ops[op].bytes_read, 192 + 48 + 48, 1e-9);
	cr_expect_float_eq(g->ops[op].bytes_written, 96, 1e-9);
	/* The routers, whose Softmax weighs the combines' picks, are marked;
	 * the shared expert's and every other MatMul are not. */
	int routers = 0;
	for (int i = 0; i < g->n_ops; i++) {
		bool is = strstr(g->ops[i].name, ".mlp.router.matmul") != NULL;
		cr_expect_eq(g->ops[i].moe_router, is, "%s", g->ops[i].name);
		routers += g->ops[i].moe_router;
	}
	cr_expect_eq(routers, 2);
	diag_list_free(&d);
	arena_free(a);
}

/* Mixtral 8x7B (Jiang et al. 2024): 46.7B parameters, 12.9B active. */
Test(models, mixtral_parameters_total_and_active)
{
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct model_gen gen;
	model_gen_defaults(&gen, GEN_LLAMA);
	gen.hidden = 4096, gen.layers = 32, gen.heads = 32, gen.kv_heads = 8, gen.ffn = 14336;
	gen.seq = 16, gen.vocab = 32000, gen.experts = 8, gen.top_k = 2;
	struct graph *g = graph_generate(a, &gen, &d);
	cr_assert_not_null(g);
	struct graph_totals t;
	graph_totals(g, &t);
	/* One expert 3·4096·14336 = 176,160,768. Per layer: 8 experts
	 * 1,409,286,144, router 32,768, attention 2·4096² + 2·4096·1024 =
	 * 41,943,040, norms 8,192: 1,451,270,144; 32 layers 46,440,644,608;
	 * final norm 4,096, embedding and head 2·32000·4096 = 262,144,000:
	 * 46,702,792,704. Active: 6 experts fewer per layer,
	 * 46,702,792,704 - 32·6·176,160,768 = 12,879,925,248. */
	cr_expect_eq(t.parameters, 46702792704LL);
	cr_expect_eq(t.active_parameters, 12879925248LL);
	diag_list_free(&d);
	arena_free(a);
}

/* ------------------------------------------------------------ fused QKV */

/* The grouped-query LLaMA of llama_gqa_shapes: h 64, 8 heads of d = 8 in
 * kv = 2 groups, B 3, s 16, ffn 96, V 100, one layer. */
static void small_llama(struct model_gen *p)
{
	model_gen_defaults(p, GEN_LLAMA);
	p->hidden = 64, p->layers = 1, p->heads = 8, p->kv_heads = 2, p->seq = 16, p->vocab = 100;
	p->micro_batch = 3, p->ffn = 96;
}

/* The model of p without and with the member *flag (a field of p), both
 * of `params` parameters (a hand count) and the same forward FLOPs; returns
 * the fused graph, the other in *sep. */
static struct graph *with_and_without(struct arena *a, struct model_gen *p, bool *flag,
                                      int64_t params, struct graph **sep)
{
	*flag = false;
	*sep = gen(a, p);
	*flag = true;
	struct graph *g = gen(a, p);
	struct graph_totals ts, tf;
	graph_totals(*sep, &ts);
	graph_totals(g, &tf);
	cr_expect_eq(ts.parameters, params);
	cr_expect_eq(tf.parameters, params);
	cr_expect_eq(tf.forward_flops, ts.forward_flops);
	cr_expect_eq(tf.matmul_flops, ts.matmul_flops);
	return g;
}

/* The attention's MatMuls with a weight, in layer 0. */
static int attn_weight_matmuls(const struct graph *g)
{
	int n = 0;
	for (int i = 0; i < g->n_ops; i++)
		n += g->ops[i].kind == OP_MATMUL && g->ops[i].params > 0 &&
		     !strncmp(g->ops[i].name, "layers.0.attn.", 14);
	return n;
}

/* fused_qkv on a grouped-query LLaMA with q/k/v biases: h 64, 8 heads of
 * d = 8 in kv = 2 groups of g = 4, B 3, s 16 (48 tokens), ffn 96, V 100.
 * Hand count: embedding 100·64 = 6400; RMSNorms 3·64 = 192; the
 * projections 64·(64 + 16 + 16) = 6144 weights and 96 biases whether one
 * or three; output 64·64 = 4096; MLP 3·64·96 = 18432; head 6400: 41,760.
 * The fused GEMM 2·48·64·96 = 589,824 FLOPs, the sum of the three
 * (2·48·64·64 + 2·2·48·64·16). Megatron's layout per group: the g query
 * heads' columns, then the key's, then the value's, of (g + 2)·d = 48. */
Test(models, fused_qkv_llama_counted_by_hand)
{
	struct arena *a = arena_new();
	struct model_gen p;
	small_llama(&p);
	p.qkv_bias = true;
	struct graph *sep, *g = with_and_without(a, &p, &p.fused_qkv, 41760, &sep);
	/* one projection, where there were three */
	cr_expect_eq(attn_weight_matmuls(sep), 4);
	cr_expect_eq(attn_weight_matmuls(g), 2);
	cr_expect_eq(graph_find_op(g, "layers.0.attn.q.matmul"), -1);
	cr_expect_eq(graph_find_op(g, "layers.0.attn.k.matmul"), -1);
	int qkv = graph_find_op(g, "layers.0.attn.qkv.matmul");
	cr_assert_geq(qkv, 0);
	cr_expect_eq(g->ops[qkv].flops, 589824.0);
	cr_expect_eq(g->ops[qkv].params, 64 * 96);
	assert_dims(out_of(g, "layers.0.attn.qkv.bias_add"), 2, (int64_t[]){48, 96});
	assert_dims(out_of(g, "layers.0.attn.qkv.reshape"), 4, (int64_t[]){3, 16, 2, 48});
	static const char *const views[] = {"layers.0.attn.q.split", "layers.0.attn.k.split",
	                                    "layers.0.attn.v.split"};
	static const int64_t from[] = {0, 32, 40}, to[] = {32, 40, 48};
	for (int k = 0; k < 3; k++) {
		int i = graph_find_op(g, views[k]);
		cr_assert_geq(i, 0, "%s", views[k]);
		const struct op *o = &g->ops[i];
		cr_expect_eq(o->kind, OP_STRIDEDSLICE);
		cr_expect(o->attrs.view);
		cr_expect_eq(o->attrs.begin[3], from[k]);
		cr_expect_eq(o->attrs.end[3], to[k]);
		/* a view: no FLOPs, no bytes moved */
		cr_expect_eq(o->flops, 0);
		cr_expect_eq(o->bytes_read + o->bytes_written, 0);
		assert_dims(&g->tensors[o->out[0]], 4, (int64_t[]){3, 16, 2, to[k] - from[k]});
	}
	/* from there on the attention of llama_gqa_shapes */
	assert_dims(out_of(g, "layers.0.attn.q.reshape"), 5, (int64_t[]){3, 16, 2, 4, 8});
	assert_dims(out_of(g, "layers.0.attn.k.transpose"), 4, (int64_t[]){3, 2, 8, 16});
	assert_dims(out_of(g, "layers.0.attn.scores"), 4, (int64_t[]){3, 2, 64, 16});
	arena_free(a);
}

/* GPT (every head its own key and value: kv = heads = 4, d = 16, biases):
 * the groups are the heads, [q | k | v] of 3·16 columns each, so the views
 * are already [B, s, heads, d] and no Reshape follows them. The projection
 * 64·192 + 192 = 12,480 elements = 3·(64·64 + 64). */
Test(models, fused_qkv_gpt_heads_as_groups)
{
	struct arena *a = arena_new();
	struct model_gen p;
	model_gen_defaults(&p, GEN_GPT);
	p.hidden = 64, p.layers = 1, p.heads = 4, p.seq = 8, p.vocab = 50, p.micro_batch = 2;
	/* embedding 50·64 + positions 8·64, three LayerNorms 3·128, the
	 * projection 12,480, output 64·64 + 64, fc1 64·256 + 256, fc2
	 * 256·64 + 64, the head tied: 3200 + 512 + 384 + 12480 + 4160 +
	 * 16640 + 16448 = 53,824 */
	struct graph *sep, *g = with_and_without(a, &p, &p.fused_qkv, 53824, &sep);
	(void)sep;	int w = graph_find_tensor(g, "layers.0.attn.qkv.weight");
	int b = graph_find_tensor(g, "layers.0.attn.qkv.bias");
	cr_assert(w >= 0 && b >= 0);
	cr_expect_eq(g->tensors[w].elems + g->tensors[b].elems, 12480);
	assert_dims(out_of(g, "layers.0.attn.qkv.reshape"), 4, (int64_t[]){2, 8, 4, 48});
	assert_dims(out_of(g, "layers.0.attn.k.split"), 4, (int64_t[]){2, 8, 4, 16});
	cr_expect_eq(graph_find_op(g, "layers.0.attn.k.reshape"), -1);
	cr_expect_eq(graph_find_op(g, "layers.0.attn.q.reshape"), -1);
	assert_dims(out_of(g, "layers.0.attn.q.transpose"), 4, (int64_t[]){2, 4, 8, 16});
	arena_free(a);
}

/* The member in a model file, its default, and a StridedSlice marked as a
 * view in an explicit graph (no bytes, where the plain one reads its input
 * and writes its output: 4·12·2 + 4·8·2 = 160 bytes in bf16). */
Test(models, fused_qkv_member_and_view_attribute)
{
	struct arena *a = arena_new();
	struct diag_list d;
	struct graph *g = load_text(a, HEAD "\"generator\": {\"kind\": \"gpt\", \"hidden\": 64, "
	                            "\"layers\": 1, \"heads\": 4, \"seq\": 8, \"vocab\": 32, "
	                            "\"fused_qkv\": true}}", &d);
	cr_assert_not_null(g);
	cr_expect(g->gen->fused_qkv);
	cr_expect_geq(graph_find_op(g, "layers.0.attn.qkv.matmul"), 0);
	diag_list_free(&d);
	struct model_gen p;
	model_gen_defaults(&p, GEN_LLAMA);
	cr_expect(!p.fused_qkv);
	g = load_text(a, HEAD "\"inputs\": [{\"name\": \"x\", \"shape\": [4, 12], \"dtype\": "
	              "\"bf16\"}], \"ops\": [{\"name\": \"v\", \"kind\": \"StridedSlice\", "
	              "\"inputs\": [\"x\"], \"attrs\": {\"begin\": [0, 0], \"end\": [4, 8], "
	              "\"view\": true}}, {\"name\": \"c\", \"kind\": \"StridedSlice\", \"inputs\": "
	              "[\"x\"], \"attrs\": {\"begin\": [0, 0], \"end\": [4, 8]}}]}", &d);
	cr_assert_not_null(g);
	const struct op *v = &g->ops[graph_find_op(g, "v")], *c = &g->ops[graph_find_op(g, "c")];
	cr_expect_eq(v->bytes_read + v->bytes_written, 0);
	cr_expect_eq(c->bytes_read + c->bytes_written, 160);
	diag_list_free(&d);
	arena_free(a);
}

/* ------------------------------------------------------- fused gate/up */

/* fused_gate_up on the LLaMA of fused_qkv_llama_counted_by_hand (h 64,
 * ffn 96, 48 tokens): one projection [64, 192] = 12,288 weights, the
 * gate's and the up's 2·64·96; one GEMM of 2·48·64·192 = 1,179,648 FLOPs,
 * the two's sum; its output viewed [48, 96, 2] (gate and up interleaved
 * per column) and split by views into [48, 96, 1] each, reshaped to the
 * [48, 96] that SiLU and Mul read. */
Test(models, fused_gate_up_counted_by_hand)
{
	struct arena *a = arena_new();
	struct model_gen p;
	small_llama(&p);
	/* 41,760 of fused_qkv_llama_counted_by_hand less the 96 q/k/v biases */
	struct graph *sep, *g = with_and_without(a, &p, &p.fused_gate_up, 41664, &sep);
	cr_expect_eq(graph_find_op(g, "layers.0.mlp.gate.matmul"), -1);
	cr_expect_eq(graph_find_op(g, "layers.0.mlp.up.matmul"), -1);
	int i = graph_find_op(g, "layers.0.mlp.gate_up.matmul");
	cr_assert_geq(i, 0);
	cr_expect_eq(g->ops[i].flops, 1179648.0);
	cr_expect_eq(g->ops[i].params, 12288);
	assert_dims(out_of(g, "layers.0.mlp.gate_up.reshape"), 3, (int64_t[]){48, 96, 2});
	static const char *const views[] = {"layers.0.mlp.gate.split", "layers.0.mlp.up.split"};
	for (int k = 0; k < 2; k++) {
		const struct op *o = &g->ops[graph_find_op(g, views[k])];
		cr_expect(o->attrs.view);
		cr_expect_eq(o->attrs.begin[2], k);
		cr_expect_eq(o->bytes_read + o->bytes_written, 0);
		assert_dims(&g->tensors[o->out[0]], 3, (int64_t[]){48, 96, 1});
	}
	assert_dims(out_of(g, "layers.0.mlp.silu"), 2, (int64_t[]){48, 96});
	assert_dims(out_of(g, "layers.0.mlp.mul"), 2, (int64_t[]){48, 96});
	arena_free(a);
}

/* head_dim wider than hidden / heads (Mistral NeMo's 32 x 128 beside 5,120):
 * small_llama with 8 heads of d = 16 (a·d = 128 beside h = 64), kv 2
 * (kv·d = 32), B 3, s 16 (48 tokens). Hand count: embedding 100·64 = 6400;
 * RMSNorms 3·64 = 192; q 64·128 = 8192, k and v 64·32 = 2048 each, out
 * 128·64 = 8192; MLP 3·64·96 = 18432; head 6400: 51,904. Scores and
 * context 2·(3·2)·64·16·16 = 196,608 FLOPs each, out 2·48·128·64 =
 * 786,432; fused, one projection of 64·(8 + 2·2)·16 = 64·192 = 12,288. */
Test(models, head_dim_wider_than_hidden_over_heads)
{
	struct arena *a = arena_new();
	struct model_gen p;
	small_llama(&p);
	p.head_dim = 16;
	struct graph *sep, *g = with_and_without(a, &p, &p.fused_qkv, 51904, &sep);
	assert_dims(out_of(sep, "layers.0.attn.q.matmul"), 2, (int64_t[]){48, 128});
	assert_dims(out_of(sep, "layers.0.attn.k.matmul"), 2, (int64_t[]){48, 32});
	assert_dims(out_of(sep, "layers.0.attn.q.reshape"), 5, (int64_t[]){3, 16, 2, 4, 16});
	assert_dims(out_of(sep, "layers.0.attn.k.transpose"), 4, (int64_t[]){3, 2, 16, 16});
	assert_dims(out_of(sep, "layers.0.attn.scores"), 4, (int64_t[]){3, 2, 64, 16});
	assert_dims(out_of(sep, "layers.0.attn.context.reshape"), 2, (int64_t[]){48, 128});
	assert_dims(out_of(sep, "layers.0.attn.out.matmul"), 2, (int64_t[]){48, 64});
	const struct op *o = &sep->ops[graph_find_op(sep, "layers.0.attn.scores")];
	cr_expect_eq(o->flops, 196608.0);
	o = &sep->ops[graph_find_op(sep, "layers.0.attn.context")];
	cr_expect_eq(o->flops, 196608.0);
	o = &sep->ops[graph_find_op(sep, "layers.0.attn.out.matmul")];
	cr_expect_eq(o->flops, 786432.0);
	cr_expect_eq(o->params, 128 * 64);
	int qkv = graph_find_op(g, "layers.0.attn.qkv.matmul");
	cr_assert_geq(qkv, 0);
	cr_expect_eq(g->ops[qkv].params, 12288);
	assert_dims(out_of(g, "layers.0.attn.qkv.reshape"), 4, (int64_t[]){3, 16, 2, 96});
	arena_free(a);
}

/* qk_norm (Qwen3): small_llama (h 64, 8 heads of d = 8 in kv = 2 groups,
 * B 3, s 16) with an RMSNorm of [8] over each head of q and of k, after
 * their reshapes and before their transposes, as Qwen3Attention applies
 * q_norm and k_norm to the [B, s, heads, d] views: 41,664 parameters
 * (fused_gate_up_counted_by_hand) + 2·8 = 41,680; the norms' shapes those
 * of q.reshape [3,16,2,4,8] and k.reshape [3,16,2,8]. */
Test(models, qk_norm_over_each_head)
{
	struct arena *a = arena_new();
	struct model_gen p;
	small_llama(&p);
	p.qk_norm = true;
	struct graph *g = gen(a, &p);
	struct graph_totals t;
	graph_totals(g, &t);
	cr_expect_eq(t.parameters, 41680);
	int qn = graph_find_op(g, "layers.0.attn.q_norm"), kn = graph_find_op(g, "layers.0.attn.k_norm");
	cr_assert_geq(qn, 0);
	cr_assert_geq(kn, 0);
	cr_expect_eq(g->ops[qn].kind, OP_RMSNORM);
	assert_dims(out_of(g, "layers.0.attn.q_norm"), 5, (int64_t[]){3, 16, 2, 4, 8});
	assert_dims(out_of(g, "layers.0.attn.k_norm"), 4, (int64_t[]){3, 16, 2, 8});
	assert_dims(&g->tensors[graph_find_tensor(g, "layers.0.attn.q_norm.gamma")], 1,
	            (int64_t[]){8});
	/* the transposes read the norms' outputs */
	const struct op *qt = &g->ops[graph_find_op(g, "layers.0.attn.q.transpose")];
	const struct op *kt = &g->ops[graph_find_op(g, "layers.0.attn.k.transpose")];
	cr_expect_eq(qt->in[0], g->ops[qn].out[0]);
	cr_expect_eq(kt->in[0], g->ops[kn].out[0]);
	arena_free(a);
}

/* head_dim frees the heads from dividing the hidden size, and is refused
 * beside multi-head latent attention, whose heads have their own widths. */
Test(models, head_dim_checks)
{
	struct arena *a = arena_new();
	struct model_gen p;
	small_llama(&p);
	p.heads = 6, p.kv_heads = 2;
	struct diag_list d;
	diag_list_init(&d);
	cr_expect_null(graph_generate(a, &p, &d));
	char buf[1024];
	diag_text(&d, buf, sizeof buf);
	cr_expect(strstr(buf, "heads (6) must divide hidden (64), or head_dim give a head's width"),
	          "%s", buf);
	p.head_dim = 16;
	cr_expect_not_null(gen(a, &p));
	small_llama(&p);
	p.head_dim = 16, p.kv_lora_rank = 8, p.qk_nope_head_dim = 4, p.qk_rope_head_dim = 2;
	p.v_head_dim = 4;
	struct diag_list d2;
	diag_list_init(&d2);
	cr_expect_null(graph_generate(a, &p, &d2));
	diag_text(&d2, buf, sizeof buf);
	cr_expect(strstr(buf, "head_dim is not for multi-head latent attention"), "%s", buf);
	cr_expect(!strstr(buf, "qk_norm"), "%s", buf);
	p.head_dim = 0, p.qk_norm = true;
	struct diag_list d3;
	diag_list_init(&d3);
	cr_expect_null(graph_generate(a, &p, &d3));
	diag_text(&d3, buf, sizeof buf);
	cr_expect(strstr(buf, "qk_norm is not for multi-head latent attention"), "%s", buf);
	diag_list_free(&d3);
	diag_list_free(&d);
	diag_list_free(&d2);
	arena_free(a);
}
