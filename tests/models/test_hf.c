/* test_hf.c — Hugging Face configs in (models/hf.c, `shardlab import hf`,
 * a scenario's {"hf_config": ...}): the parameter totals of the shipped
 * configs against the totals their authors published, worked out again by
 * hand from each architecture's layers; the generator variants the
 * families need; diagnostics naming the field of a bad config. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"

TestSuite(hf, .init = fixture_setup, .fini = fixture_teardown);

/* The config imported at sequence seq, micro-batch 1, and its totals. */
static const struct graph *hf_load(const char *path, int64_t seq, struct graph_totals *t)
{
	struct graph *g = graph_hf_load(A, path, seq, 1, &D);
	cr_assert_not_null(g, "%s does not import", path);
	graph_totals(g, t);
	return g;
}

static int64_t hf_params(const char *path, int64_t seq)
{
	struct graph_totals t;
	hf_load(path, seq, &t);
	return t.parameters;
}

Test(hf, llama2_7b_published_total)
{
	/* Touvron et al. 2023 and the model card: 6,738,415,616.
	 * h 4096, 32 layers, 32 heads, kv 32 (d 128), ffn 11008, V 32000, untied:
	 *   embedding + head  2·32000·4096       =   262,144,000
	 *   per layer q,k,v,o 4·4096·4096        =    67,108,864
	 *             SwiGLU  3·4096·11008       =   135,266,304
	 *             2 RMSNorm 2·4096           =         8,192
	 *   32 layers         32·202,383,360     = 6,476,267,520
	 *   final RMSNorm                        =         4,096
	 *   total                                = 6,738,415,616 */
	cr_assert_eq(hf_params("models/hf/llama-2-7b.json", 4096), 6738415616LL);
}

Test(hf, mixtral_published_total_and_active)
{
	/* Jiang et al. 2024: 46.7B parameters, 12.9B active per token.
	 * h 4096, 32 layers, 32 heads, 8 KV heads (d 128), 8 experts of
	 * intermediate 14336, top-2, V 32000, untied:
	 *   embedding + head  2·32000·4096                =    262,144,000
	 *   per layer q,o 2·4096², k,v 2·4096·1024        =     41,943,040
	 *             router 4096·8                        =         32,768
	 *             experts 8·3·4096·14336               =  1,409,286,144
	 *             2 RMSNorm                            =          8,192
	 *   32 layers         32·1,451,270,144             = 46,440,644,608
	 *   final RMSNorm                                  =          4,096
	 *   total                                          = 46,702,792,704
	 *   active: 6 unpicked experts fewer per layer,
	 *   46,702,792,704 − 32·6·176,160,768              = 12,879,925,248 */
	struct graph_totals t;
	const struct graph *g = hf_load("models/hf/mixtral-8x7b-v0.1.json", 64, &t);
	cr_expect_eq(g->gen->experts, 8);
	cr_expect_eq(g->gen->top_k, 2);
	cr_expect_eq(t.parameters, 46702792704LL);
	cr_expect_eq(t.active_parameters, 12879925248LL);
}

Test(hf, qwen_moe_published_total_and_active)
{
	/* Qwen1.5-MoE-A2.7B model card: 14.3B parameters, 2.7B activated.
	 * h 2048, 24 layers, 16 heads (MHA, biases on q, k, v), 60 experts of
	 * 1408, top-4, one shared expert of 5632 (= 4 x 1408) with a sigmoid
	 * gate h x 1, V 151936, untied:
	 *   embedding + head  2·151936·2048                  =    622,329,856
	 *   per layer q,k,v 3·2048² + 3·2048, o 2048²         =     16,783,360
	 *             2 RMSNorm                               =          4,096
	 *             router 2048·60                          =        122,880
	 *             experts 60·3·2048·1408                  =    519,045,120
	 *             shared expert 3·2048·5632               =     34,603,008
	 *             shared expert gate 2048·1               =          2,048
	 *   24 layers         24·570,560,512                  = 13,693,452,288
	 *   final RMSNorm                                     =          2,048
	 *   total                                             = 14,315,784,192
	 *   active: 56 unpicked experts fewer per layer,
	 *   14,315,784,192 − 24·56·8,650,752                  =  2,689,173,504 */
	struct graph_totals t;
	const struct graph *g = hf_load("models/hf/qwen1.5-moe-a2.7b-chat.json", 64, &t);
	cr_expect_eq(g->gen->shared_experts, 4);
	cr_expect(g->gen->shared_expert_gate);
	cr_expect(g->gen->qkv_bias);
	cr_expect_eq(t.parameters, 14315784192LL);
	cr_expect_eq(t.active_parameters, 2689173504LL);
}

Test(hf, qwen3_qk_norm_published_total)
{
	/* Qwen3-8B model card: 8.2B parameters, 6.95B non-embedding. h 4096,
	 * 36 layers, 32 heads of 128 (the hidden size), kv 8 (1024 wide), an
	 * RMSNorm of 128 over each head of q and of k, ffn 12288, V 151936,
	 * untied:
	 *   embedding + head  2·151936·4096                   =  1,244,659,712
	 *   per layer q,o 2·4096² = 33,554,432; k,v 2·4096·1024 = 8,388,608;
	 *             SwiGLU 3·4096·12288 = 150,994,944; norms 2·4096 = 8,192;
	 *             q_norm, k_norm 2·128 = 256; sum          =    192,946,432
	 *   36 layers                                          =  6,946,071,552
	 *   final norm 4096; total                             =  8,190,735,360
	 *   (non-embedding 6,946,075,648: the card's 6.95B) */
	struct graph_totals t;
	const struct graph *g = hf_load("models/hf/qwen3-8b.json", 4096, &t);
	cr_expect(g->gen->qk_norm);
	cr_expect_eq(g->gen->head_dim, 0); /* 128 is hidden / heads here */
	cr_expect_geq(graph_find_op(g, "layers.0.attn.q_norm"), 0);
	cr_expect_geq(graph_find_op(g, "layers.35.attn.k_norm"), 0);
	cr_expect_eq(t.parameters, 8190735360LL);
}

Test(hf, qwen3_moe_published_total_and_active)
{
	/* Qwen3-30B-A3B model card: 30.5B parameters, 3.3B activated, 29.9B
	 * non-embedding. h 2048, 48 layers, 32 heads of head_dim 128 (4096
	 * wide, not hidden / heads = 64), kv 4 (512 wide), qk_norm, 128 experts
	 * of 768, top-8, no shared expert, V 151936, untied:
	 *   embedding + head  2·151936·2048                   =    622,329,856
	 *   per layer q,o 2·2048·4096 = 16,777,216; k,v 2·2048·512 = 2,097,152;
	 *             router 2048·128 = 262,144;
	 *             experts 128·3·2048·768 = 603,979,776;
	 *             norms 2·2048 + 2·128 = 4,352; sum        =    623,120,640
	 *   48 layers                                          = 29,909,790,720
	 *   final norm 2048; total                             = 30,532,122,624
	 *   active: 120 unpicked experts fewer per layer,
	 *   30,532,122,624 − 48·120·4,718,592                  =  3,353,032,704 */
	struct graph_totals t;
	const struct graph *g = hf_load("models/hf/qwen3-30b-a3b.json", 64, &t);
	cr_expect_eq(g->gen->experts, 128);
	cr_expect_eq(g->gen->top_k, 8);
	cr_expect_eq(g->gen->shared_experts, 0);
	cr_expect_eq(g->gen->head_dim, 128);
	cr_expect(g->gen->qk_norm);
	cr_expect_not(g->gen->qkv_bias);
	cr_expect_eq(t.parameters, 30532122624LL);
	cr_expect_eq(t.active_parameters, 3353032704LL);
}

Test(hf, qwen3_235b_published_total_and_active)
{
	/* Qwen3-235B-A22B model card: 235B parameters, 22B activated, 234B
	 * non-embedding. h 4096, 94 layers, 64 heads of 128 (8192 wide), kv 4
	 * (512 wide), qk_norm, 128 experts of 1536, top-8, V 151936, untied:
	 *   embedding + head  2·151936·4096                   =   1,244,659,712
	 *   per layer q,o 2·4096·8192 = 67,108,864; k,v 2·4096·512 = 4,194,304;
	 *             router 4096·128 = 524,288;
	 *             experts 128·3·4096·1536 = 2,415,919,104;
	 *             norms 2·4096 + 2·128 = 8,448; sum        =   2,487,755,008
	 *   94 layers                                          = 233,848,970,752
	 *   final norm 4096; total                             = 235,093,634,560
	 *   active: 120 unpicked experts fewer per layer,
	 *   235,093,634,560 − 94·120·18,874,368                =  22,190,763,520 */
	struct graph_totals t;
	const struct graph *g = hf_load("models/hf/qwen3-235b-a22b.json", 64, &t);
	cr_expect_eq(g->gen->experts, 128);
	cr_expect_eq(g->gen->top_k, 8);
	cr_expect_eq(g->gen->layers, 94);
	cr_expect_eq(t.parameters, 235093634560LL);
	cr_expect_eq(t.active_parameters, 22190763520LL);
}

Test(hf, deepseek_moe_published_total_and_active)
{
	/* DeepSeekMoE 16B (Dai et al. 2024): 16.4B parameters, 2.8B activated.
	 * h 2048, 28 layers, 16 heads (MHA), the first layer dense (SwiGLU of
	 * 10944), then 64 routed experts and 2 shared of 1408, top-6,
	 * V 102400, untied:
	 *   embedding + head  2·102400·2048                  =    419,430,400
	 *   attention 4·2048², 2 RMSNorm 2·2048               =     16,781,312
	 *   layer 0: + dense MLP 3·2048·10944                 =     84,021,248
	 *   layers 1-27: + router 2048·64, experts
	 *     64·3·2048·1408, shared 2·3·2048·1408            =    587,862,016
	 *     27 of them                                      = 15,872,274,432
	 *   final RMSNorm                                     =          2,048
	 *   total                                             = 16,375,728,128
	 *   active: 58 unpicked experts fewer in 27 layers,
	 *   16,375,728,128 − 27·58·8,650,752                  =  2,828,650,496 */
	struct graph_totals t;
	const struct graph *g = hf_load("models/hf/deepseek-moe-16b-base.json", 64, &t);
	cr_expect_eq(g->gen->dense_layers, 1);
	cr_expect_eq(g->gen->shared_experts, 2);
	cr_expect_eq(t.parameters, 16375728128LL);
	cr_expect_eq(t.active_parameters, 2828650496LL);
}

Test(hf, deepseek_v3_published_totals)
{
	/* DeepSeek-V3 (Liu et al. 2024, arXiv 2412.19437, §4.2 and the model
	 * card): 671B parameters in the main model, 37B activated per token,
	 * 685B on the hub with the multi-token prediction (MTP) module; the
	 * repository's README_WEIGHTS.md: 36.6B activated, the MTP module 11.5B
	 * of its own (it shares the embedding and the output head).
	 * h 7168, 61 layers, 128 heads, MLA with q_lora 1536, kv_lora 512, nope
	 * 128, rope 64, v 128; the first 3 layers dense (SwiGLU of 18432), then
	 * 256 routed experts and 1 shared of 2048, top-8, a sigmoid router with
	 * a per-expert bias; V 129280, untied. One MLA layer, by the checkpoint's
	 * matrices:
	 *   q_a_proj 7168·1536                        =  11,010,048
	 *   q_a_layernorm                             =       1,536
	 *   q_b_proj 1536·128·(128+64)                =  37,748,736
	 *   kv_a_proj_with_mqa 7168·(512+64)          =   4,128,768
	 *   kv_a_layernorm                            =         512
	 *   kv_b_proj 512·128·(128+128)               =  16,777,216
	 *   o_proj 128·128·7168                       = 117,440,512
	 *   attention                                 = 187,107,328
	 * Layers (2 RMSNorm 2·7168 = 14,336 each):
	 *   dense: 187,107,328 + 14,336 + 3·7168·18432 (396,361,728)
	 *                                             =     583,483,392
	 *   MoE: an expert 3·7168·2048 = 44,040,192; 257 of them
	 *     11,318,329,344, router 7168·256 1,835,008, bias 256
	 *     + attention + norms                     =  11,507,286,272
	 *   main: 3·583,483,392 + 58·11,507,286,272   = 669,173,053,952
	 *     + embedding and head 2·129280·7168 (1,853,358,080)
	 *     + final norm 7168                       = 671,026,419,200  (671B)
	 *   active: 248 unpicked experts fewer in 58 layers,
	 *     671,026,419,200 − 58·248·44,040,192     =  37,552,297,472
	 *     less the embedding table (a lookup, no
	 *     multiply), 926,679,040                  =  36,625,618,432  (36.6B, 37B)
	 *   MTP: eh_proj 2·7168·7168 (102,760,448), enorm, hnorm and its final
	 *     norm 3·7168, one MoE layer              =  11,610,068,224  (11.5B + 0.1B)
	 *   the hub's 685B: main + MTP + the MTP's own copies of embedding and
	 *     head in the checkpoint (1,853,358,080)  = 684,489,845,504
	 *     + the FP8 checkpoint's fp32 block scales, one per 128x128 block
	 *     of every layer's matrices but the router: an MLA layer 11,448
	 *     (12·56 + 192·12 + 5·56 + 256·4 + 56·128), a dense MLP 3·144·56 =
	 *     24,192, an expert 3·16·56 = 2,688 (257 per MoE layer); 3 dense and
	 *     59 MoE layers: 3·35,640 + 59·702,264    =      41,540,496
	 *                                             = 684,531,386,000  (685B) */
	struct graph_totals t;
	const struct graph *g = hf_load("models/hf/deepseek-v3.json", 4096, &t);
	cr_expect_eq(g->gen->kv_lora_rank, 512);
	cr_expect_eq(g->gen->q_lora_rank, 1536);
	cr_expect_eq(g->gen->dense_layers, 3);
	cr_expect_eq(g->gen->mtp_layers, 1);
	cr_expect(g->gen->sigmoid_router);
	cr_expect_eq(g->gen->expert_groups, 8);
	cr_expect_eq(g->gen->group_top_k, 4);
	int64_t main = t.parameters - t.mtp_parameters;
	cr_expect_eq(main, 671026419200LL);
	cr_expect_eq(t.mtp_parameters, 11610068224LL);
	/* the MTP layer's unpicked experts are not active either */
	int64_t active = t.active_parameters - (t.mtp_parameters - 248LL * 44040192);
	cr_expect_eq(active, 37552297472LL);
	/* to the published precision */
	cr_expect(llabs(main - 671000000000LL) < 500000000LL);
	cr_expect(llabs(active - 926679040LL - 37000000000LL) < 500000000LL);
	int64_t hub = main + t.mtp_parameters + 2LL * 129280 * 7168 + 41540496;
	cr_expect_eq(hub, 684531386000LL);
	cr_expect(llabs(hub - 685000000000LL) < 500000000LL);
	cr_expect_eq(graph_find_op(g, "layers.61.mlp.experts.gate.matmul") >= 0, true);
}

Test(hf, mla_layer_by_hand)
{
	/* One layer of multi-head latent attention (DeepSeek-V2 §2.1) with
	 * small sizes: h 64, 4 heads, q_lora 16, kv_lora 8, nope 6, rope 2,
	 * v 5, a dense SwiGLU MLP of 32, V 10, untied:
	 *   q_a 64·16 = 1,024, q_a_norm 16, q_b 16·4·(6+2) = 512,
	 *   kv_a (with the rotary key) 64·(8+2) = 640, kv_a_norm 8,
	 *   kv_b 8·4·(6+5) = 352, out 4·5·64 = 1,280   attention = 3,832
	 *   2 RMSNorm 128, MLP 3·64·32 = 6,144         layer     = 10,104
	 *   embedding + head 2·10·64 = 1,280, final norm 64   total = 11,448
	 * FLOPs of the scores at seq 8, micro-batch 1: 2·4·8·8·(6+2) = 4,096;
	 * of the context 2·4·8·8·5 = 2,560. */
	struct model_gen m;
	model_gen_defaults(&m, GEN_LLAMA);
	m.hidden = 64;
	m.layers = 1;
	m.heads = 4;
	m.ffn = 32;
	m.vocab = 10;
	m.seq = 8;
	m.q_lora_rank = 16;
	m.kv_lora_rank = 8;
	m.qk_nope_head_dim = 6;
	m.qk_rope_head_dim = 2;
	m.v_head_dim = 5;
	struct graph *g = graph_generate(A, &m, &D);
	cr_assert_not_null(g);
	struct graph_totals t;
	graph_totals(g, &t);
	cr_expect_eq(t.parameters, 11448);
	int sn = graph_find_op(g, "layers.0.attn.scores");
	int sr = graph_find_op(g, "layers.0.attn.scores_rope");
	int cx = graph_find_op(g, "layers.0.attn.context");
	cr_assert(sn >= 0 && sr >= 0 && cx >= 0);
	cr_expect_eq(g->ops[sn].flops + g->ops[sr].flops, 4096.0);
	cr_expect_eq(g->ops[cx].flops, 2560.0);
}

Test(hf, llama2_13b_published_total)
{
	/* Model card: 13,015,864,320. h 5120, 40 layers, kv 40, ffn 13824, V 32000:
	 *   embedding + head  2·32000·5120       =   327,680,000
	 *   per layer 4·5120² + 3·5120·13824 + 2·5120
	 *           = 104,857,600 + 212,336,640 + 10,240 = 317,204,480
	 *   40 layers                            = 12,688,179,200
	 *   final norm 5120; total               = 13,015,864,320 */
	cr_assert_eq(hf_params("models/hf/llama-2-13b.json", 4096), 13015864320LL);
}

Test(hf, llama2_70b_published_total)
{
	/* Model card: 68,976,648,192. h 8192, 80 layers, 64 heads of 128,
	 * kv 8 (GQA: k and v are 8192 x 1024), ffn 28672, V 32000:
	 *   embedding + head  2·32000·8192       =    524,288,000
	 *   per layer q,o 2·8192², k,v 2·8192·1024, SwiGLU 3·8192·28672, norms 2·8192
	 *           = 134,217,728 + 16,777,216 + 704,643,072 + 16,384 = 855,654,400
	 *   80 layers                            = 68,452,352,000
	 *   final norm 8192; total               = 68,976,648,192 */
	cr_assert_eq(hf_params("models/hf/llama-2-70b.json", 4096), 68976648192LL);
}

Test(hf, mistral_7b_published_total)
{
	/* Jiang et al. 2023 / model card: 7,241,732,096 (7.24B).
	 * h 4096, 32 layers, 32 heads of 128, kv 8, ffn 14336, V 32000, untied:
	 *   embedding + head  2·32000·4096                =   262,144,000
	 *   per layer q,o 2·4096², k,v 2·4096·1024, SwiGLU 3·4096·14336, norms 2·4096
	 *           = 33,554,432 + 8,388,608 + 176,160,768 + 8,192 = 218,112,000
	 *   32 layers                                     = 6,979,584,000
	 *   final norm 4096; total                        = 7,241,732,096 */
	cr_assert_eq(hf_params("models/hf/mistral-7b-v0.1.json", 4096), 7241732096LL);
}

Test(hf, qwen2_7b_published_total)
{
	/* Qwen2 technical report / model card: 7,615,616,512 (7.62B).
	 * h 3584, 28 layers, 28 heads of 128, kv 4 (512 wide), ffn 18944,
	 * V 152064, untied, biases on q, k, v:
	 *   embedding + head  2·152064·3584               = 1,089,994,752
	 *   per layer q 3584²+3584 = 12,848,640; k, v 2·(3584·512+512) = 3,671,040;
	 *             o 3584² = 12,845,056; SwiGLU 3·3584·18944 = 203,685,888;
	 *             norms 2·3584 = 7,168;  sum            =   233,057,792
	 *   28 layers                                     = 6,525,618,176
	 *   final norm 3584; total                        = 7,615,616,512 */
	cr_assert_eq(hf_params("models/hf/qwen2-7b.json", 4096), 7615616512LL);
}

Test(hf, llama32_1b_tied_published_total)
{
	/* Llama 3.2 1B (model card: 1.23B), a head tied to the embedding,
	 * head_dim 64 given explicitly, rope_scaling an object:
	 * h 2048, 16 layers, 32 heads of 64, kv 8 (512 wide), ffn 8192, V 128256:
	 *   embedding (tied, once)  128256·2048                  =   262,668,288
	 *   per layer q,o 2·2048², k,v 2·2048·512, SwiGLU 3·2048·8192, norms 2·2048
	 *           = 8,388,608 + 2,097,152 + 50,331,648 + 4,096  =    60,821,504
	 *   16 layers                                              =   973,144,064
	 *   final norm 2048; total                                 = 1,235,814,400 */
	cr_assert_eq(hf_params("models/hf/llama-3.2-1b.json", 8192), 1235814400LL);
}

Test(hf, mistral_nemo_head_dim_published_total)
{
	/* Mistral NeMo 12B (mistralai/Mistral-Nemo-Base-2407: 12.2B), heads
	 * of head_dim 128 where hidden_size / num_attention_heads is 160:
	 * h 5120, 40 layers, 32 heads of 128 (4096 wide), kv 8 (1024 wide),
	 * ffn 14336, V 131072, untied:
	 *   embedding + head  2·131072·5120                        = 1,342,177,280
	 *   per layer q, o 2·5120·4096 = 41,943,040; k, v 2·5120·1024 = 10,485,760;
	 *             SwiGLU 3·5120·14336 = 220,200,960; norms 2·5120 = 10,240;
	 *             sum                                         =   272,640,000
	 *   40 layers                                             = 10,905,600,000
	 *   final norm 5120; total                                = 12,247,782,400 */
	cr_assert_eq(hf_params("models/hf/mistral-nemo-base-2407.json", 4096), 12247782400LL);
}

Test(hf, model_type_stands_for_architectures)
{
	/* The LLaMA-2 7B config without "architectures": read by model_type. */
	static const char text[] =
		"{\"model_type\": \"llama\", \"hidden_size\": 4096, \"num_hidden_layers\": 32,"
		" \"num_attention_heads\": 32, \"num_key_value_heads\": 32,"
		" \"intermediate_size\": 11008, \"vocab_size\": 32000,"
		" \"max_position_embeddings\": 4096}";
	struct json_doc doc;
	struct hf_model m;
	cr_assert(json_doc_parse(&doc, "config.json", text, sizeof text - 1, &D));
	cr_assert(graph_hf_read(A, &doc, 0, 0, &m));
	json_doc_free(&doc);
	cr_assert_str_eq(m.architecture, "LlamaForCausalLM");
	struct graph *g = graph_generate(A, &m.gen, &D);
	cr_assert_not_null(g);
	struct graph_totals t;
	graph_totals(g, &t);
	cr_assert_eq(t.parameters, 6738415616LL); /* as llama2_7b_published_total */
}

Test(hf, gpt2_published_total)
{
	/* GPT-2 small, 124,439,808 (the count of the released checkpoint).
	 * h 768, 12 layers, 1024 positions, V 50257, tied head, biases:
	 *   wte 50257·768 = 38,597,376; wpe 1024·768 = 786,432
	 *   per layer LN 2·2·768 = 3,072; qkv 768·2304+2304 = 1,771,776;
	 *             proj 768²+768 = 590,592; fc 768·3072+3072 = 2,362,368;
	 *             fc2 3072·768+768 = 2,360,064; sum = 7,087,872
	 *   12 layers = 85,054,464; final LN 1,536
	 *   total = 124,439,808. The position table counts whole at any --seq. */
	cr_assert_eq(hf_params("models/hf/gpt2.json", 1024), 124439808LL);
	cr_assert_eq(hf_params("models/hf/gpt2.json", 128), 124439808LL);
}

Test(hf, pythia_published_totals)
{
	/* Biderman et al. 2023 (Pythia), Table 1 total parameters.
	 * 160M: h 768, 12 layers, ffn 3072, V 50304, untied, rotary (no table):
	 *   embed_in + embed_out 2·50304·768 = 77,266,944
	 *   per layer as GPT-2's = 7,087,872; 12 layers = 85,054,464; final LN 1,536
	 *   total = 162,322,944
	 * 1.4B: h 2048, 24 layers, ffn 8192:
	 *   2·50304·2048 = 206,045,184
	 *   per layer 4·2048 + (2048·6144+6144) + (2048²+2048) + (2048·8192+8192)
	 *             + (8192·2048+2048) = 50,358,272; 24 layers = 1,208,598,528
	 *   final LN 4,096; total = 1,414,647,808 */
	cr_assert_eq(hf_params("models/hf/pythia-160m.json", 2048), 162322944LL);
	cr_assert_eq(hf_params("models/hf/pythia-1.4b.json", 2048), 1414647808LL);
}

Test(hf, defaults_from_the_config)
{
	/* No --seq: the context the config states; micro-batch 1. */
	struct graph *g = graph_hf_load(A, "models/hf/llama-2-7b.json", 0, 0, &D);
	cr_assert_not_null(g);
	cr_assert_eq(g->gen->seq, 4096);
	cr_assert_eq(g->gen->micro_batch, 1);
	cr_assert_eq(g->gen->dtype, DT_FP16); /* "torch_dtype": "float16" */
	cr_assert_str_eq(g->name, "llama-2-7b");
	g = graph_hf_load(A, "models/hf/gpt2.json", 0, 0, &D);
	cr_assert_not_null(g);
	cr_assert_eq(g->gen->seq, 1024);      /* n_positions */
	cr_assert_eq(g->gen->dtype, DT_BF16); /* no torch_dtype */
	cr_assert_eq(g->gen->tie_embeddings, 1);
	cr_assert_eq(graph_find_tensor(g, "lm_head.weight"), -1);
}

/* Structure the families need beyond the totals. */
Test(hf, family_structures)
{
	/* GPT-NeoX: no position table, an untied head, and the MLP's norm
	 * reading the block input (parallel residual). */
	struct graph *g = graph_hf_load(A, "models/hf/pythia-160m.json", 256, 1, &D);
	cr_assert_not_null(g);
	cr_assert_eq(graph_find_tensor(g, "embed.pos.weight"), -1);
	cr_assert_geq(graph_find_tensor(g, "lm_head.weight"), 0);
	int ln1 = graph_find_op(g, "layers.3.ln1"), ln2 = graph_find_op(g, "layers.3.ln2");
	cr_assert(ln1 >= 0 && ln2 >= 0);
	cr_assert_eq(g->ops[ln2].in[0], g->ops[ln1].in[0]);
	/* GPT-2: sequential residual, the MLP norm reads residual1. */
	g = graph_hf_load(A, "models/hf/gpt2.json", 256, 1, &D);
	cr_assert_not_null(g);
	ln2 = graph_find_op(g, "layers.3.ln2");
	int r1 = graph_find_op(g, "layers.3.residual1");
	cr_assert_eq(g->ops[ln2].in[0], g->ops[r1].out[0]);
	/* Qwen2: q, k, v carry biases of 3584, 512, 512; o none. */
	g = graph_hf_load(A, "models/hf/qwen2-7b.json", 256, 1, &D);
	cr_assert_not_null(g);
	int qb = graph_find_tensor(g, "layers.0.attn.q.bias");
	int kb = graph_find_tensor(g, "layers.0.attn.k.bias");
	cr_assert(qb >= 0 && kb >= 0);
	cr_assert_eq(g->tensors[qb].dims[0], 3584);
	cr_assert_eq(g->tensors[kb].dims[0], 512);
	cr_assert_eq(graph_find_tensor(g, "layers.0.attn.out.bias"), -1);
	/* Mistral: k is 4096 x 1024 (8 key/value heads of 128). */
	g = graph_hf_load(A, "models/hf/mistral-7b-v0.1.json", 256, 1, &D);
	cr_assert_not_null(g);
	int kw = graph_find_tensor(g, "layers.0.attn.k.weight");
	cr_assert_eq(g->tensors[kw].dims[1], 1024);
}

/* The first diagnostic of a config given as text, formatted. */
static char *first_diag(const char *text)
{
	struct json_doc doc;
	struct hf_model m;
	struct diag_list d;
	diag_list_init(&d);
	bool ok = json_doc_parse(&doc, "config.json", text, strlen(text), &d) &&
	          graph_hf_read(A, &doc, 0, 0, &m);
	json_doc_free(&doc);
	cr_assert(!ok, "the config was accepted:\n%s", text);
	cr_assert_gt(d.count, 0);
	char *s = diag_format(&d.items[0]);
	diag_list_free(&d);
	return s;
}

Test(hf, bad_configs_name_the_field)
{
	static const struct {
		const char *text, *want;
	} cases[] = {
		{"{\"vocab_size\": 32000}",
		 "config.json:1: architectures: missing required field"},
		{"{\"model_type\": \"bert\"}",
		 "config.json:1: model_type: unknown model_type \"bert\" and no \"architectures\" "
		 "(shardlab imports llama, mistral, qwen2, gpt2, gpt_neox, mixtral, qwen2_moe, "
		 "deepseek, deepseek_v3, qwen3 and qwen3_moe)"},
		{"{\"model_type\": \"llama\", \"hidden_size\": 4096}",
		 "config.json:1: num_hidden_layers: missing required field"},
		{"{\n\"architectures\": [\"BertForMaskedLM\"]\n}",
		 "config.json:2: architectures[0]: unknown architecture \"BertForMaskedLM\" (shardlab "
		 "imports LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM, GPT2LMHeadModel, "
		 "GPTNeoXForCausalLM, MixtralForCausalLM, Qwen2MoeForCausalLM, "
		 "DeepseekForCausalLM, DeepseekV3ForCausalLM, Qwen3ForCausalLM and "
		 "Qwen3MoeForCausalLM)"},
		{"{\"architectures\": [\"Qwen2MoeForCausalLM\"], \"hidden_size\": 2048, "
		 "\"num_hidden_layers\": 24, \"num_attention_heads\": 16, \"intermediate_size\": 5632, "
		 "\"vocab_size\": 151936, \"max_position_embeddings\": 8192, "
		 "\"decoder_sparse_step\": 2}",
		 "config.json:1: decoder_sparse_step: experts every 2 layers are not supported: the "
		 "generator's dense layers come first (dense_layers)"},
		{"{\"architectures\": [\"Qwen2MoeForCausalLM\"], \"hidden_size\": 2048, "
		 "\"num_hidden_layers\": 24, \"num_attention_heads\": 16, \"intermediate_size\": 5632, "
		 "\"vocab_size\": 151936, \"max_position_embeddings\": 8192, "
		 "\"shared_expert_intermediate_size\": 5000}",
		 "config.json:1: shared_expert_intermediate_size: 5000 is not a multiple of "
		 "moe_intermediate_size 1408: the generator's shared experts are as wide as the routed "
		 "ones"},
		{"{\"architectures\": [\"Qwen2MoeForCausalLM\"], \"hidden_size\": 2048, "
		 "\"num_hidden_layers\": 24, \"num_attention_heads\": 16, \"intermediate_size\": 5632, "
		 "\"vocab_size\": 151936, \"max_position_embeddings\": 8192, "
		 "\"mlp_only_layers\": [0, 2]}",
		 "config.json:1: mlp_only_layers[1]: dense layer 2 is not supported: the generator's "
		 "dense layers are the first ones (expected 1 here)"},
		{"{\"architectures\": [\"DeepseekForCausalLM\"], \"hidden_size\": 2048, "
		 "\"num_hidden_layers\": 28, \"num_attention_heads\": 16, \"intermediate_size\": 10944, "
		 "\"vocab_size\": 102400, \"max_position_embeddings\": 4096, \"n_routed_experts\": 64, "
		 "\"num_experts_per_tok\": 6, \"moe_intermediate_size\": 1408, "
		 "\"scoring_func\": \"sigmoid\"}",
		 "config.json:1: scoring_func: \"sigmoid\" is not supported: shardlab models a softmax "
		 "router"},
		{"{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 4096, "
		 "\"num_hidden_layers\": 36, \"num_attention_heads\": 32, \"intermediate_size\": 12288, "
		 "\"vocab_size\": 151936, \"max_position_embeddings\": 40960, "
		 "\"use_sliding_window\": true}",
		 "config.json:1: use_sliding_window: true is not supported: sliding-window attention is "
		 "not modelled"},
		{"{\"architectures\": [\"Qwen3ForCausalLM\"], \"hidden_size\": 4096, "
		 "\"num_hidden_layers\": 36, \"num_attention_heads\": 32, \"intermediate_size\": 12288, "
		 "\"vocab_size\": 151936, \"max_position_embeddings\": 40960, \"head_dim\": 0}",
		 "config.json:1: head_dim: expected an integer between 1 and 65536, got 0"},
		{"{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"hidden_size\": 7168, "
		 "\"num_hidden_layers\": 61, \"num_attention_heads\": 128, \"intermediate_size\": 18432, "
		 "\"vocab_size\": 129280, \"max_position_embeddings\": 4096, \"n_group\": 6}",
		 "config.json:1: n_group: 6 groups do not divide 256 routed experts"},
		{"{\"architectures\": [\"DeepseekV3ForCausalLM\"], \"hidden_size\": 7168, "
		 "\"num_hidden_layers\": 61, \"num_attention_heads\": 128, \"intermediate_size\": 18432, "
		 "\"vocab_size\": 129280, \"max_position_embeddings\": 4096, \"topk_method\": \"random\"}",
		 "config.json:1: topk_method: \"random\" is not supported: shardlab models top-k routing, "
		 "within groups or not"},
		{"{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096, "
		 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"vocab_size\": 32000, "
		 "\"max_position_embeddings\": 4096}",
		 "config.json:1: intermediate_size: missing required field"},
		{"{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096, "
		 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"intermediate_size\": 11008, "
		 "\"vocab_size\": \"32000\", \"max_position_embeddings\": 4096}",
		 "config.json:1: vocab_size: expected an integer between 1 and 1000000000000000, got \"32000\""},
		{"{\"architectures\": [\"MistralForCausalLM\"], \"hidden_size\": 4096, "
		 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"num_key_value_heads\": 5, "
		 "\"intermediate_size\": 14336, \"vocab_size\": 32000, \"max_position_embeddings\": 4096}",
		 "config.json:1: num_key_value_heads: 5 key/value heads do not divide 32 attention heads"},
		{"{\"architectures\": [\"LlamaForCausalLM\"], \"hidden_size\": 4096, "
		 "\"num_hidden_layers\": 32, \"num_attention_heads\": 32, \"intermediate_size\": 11008, "
		 "\"vocab_size\": 32000, \"max_position_embeddings\": 4096, \"hidden_act\": \"gelu\"}",
		 "config.json:1: hidden_act: \"gelu\" is not supported: shardlab models the SwiGLU MLP "
		 "with SiLU"},
		{"{\"architectures\": [\"GPT2LMHeadModel\"], \"n_embd\": 768, \"n_layer\": 12, "
		 "\"n_head\": 12, \"vocab_size\": 50257}",
		 "config.json:1: n_positions: missing required field"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *s = first_diag(cases[i].text);
		cr_expect_str_eq(s, cases[i].want, "case %zu", i);
		free(s);
	}
}

Test(hf, scenario_names_a_config)
{
	struct scenario *s = fixture_scenario("scenarios/mistral-7b-h100-64p.json");
	struct graph_totals t;
	graph_totals(s->graph, &t);
	cr_assert_eq(t.parameters, 7241732096LL); /* as mistral_7b_published_total */
	cr_assert_str_eq(s->model_file, "models/hf/mistral-7b-v0.1.json");
	cr_assert_eq(s->graph->gen->seq, 4096);
	cr_assert_eq(s->graph->gen->micro_batch, 4);
}

Test(hf, scenario_reports_a_bad_member)
{
	static const char text[] =
		"{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"x\",\n"
		" \"model\": {\"hf_config\": \"../models/hf/gpt2.json\", \"seqq\": 128},\n"
		" \"topology\": \"../topologies/dgx-a100.json\"}\n";
	struct json_doc doc;
	struct diag_list d;
	diag_list_init(&d);
	cr_assert(json_doc_parse(&doc, "scenarios/x.json", text, sizeof text - 1, &d));
	cr_assert_null(scenario_load_doc(A, &doc));
	json_doc_free(&doc);
	cr_assert_geq(d.count, 1);
	char *s = diag_format(&d.items[0]);
	cr_expect_str_eq(s, "scenarios/x.json:2: model.seqq: unknown key \"seqq\" (did you mean \"seq\"?)");
	free(s);
	diag_list_free(&d);
}

/* A config keeps three projections unless the scenario or the import asks
 * for the fused one (docs/formats.md, "Fused QKV"); either way Qwen2-7B
 * holds its published 7,615,616,512 parameters (qwen2_7b_published_total),
 * its q, k and v biases now one [(28 + 2 x 4) x 128] bias. */
Test(hf, fused_qkv_when_asked)
{
	static const char text[] =
		"{\"format\": \"shardlab-scenario\", \"version\": 1, \"name\": \"x\",\n"
		" \"model\": {\"hf_config\": \"../models/hf/qwen2-7b.json\", \"seq\": 256,\n"
		"           \"fused_qkv\": true},\n"
		" \"topology\": \"../topologies/dgx-a100.json\"}\n";
	struct scenario *s = fixture_scenario_text(A, &D, "scenarios/x.json", text);
	struct graph_totals t;
	graph_totals(s->graph, &t);
	cr_expect_eq(t.parameters, 7615616512LL);
	cr_expect(s->graph->gen->fused_qkv);
	cr_expect_eq(graph_find_op(s->graph, "layers.0.attn.q.matmul"), -1);
	int b = graph_find_tensor(s->graph, "layers.0.attn.qkv.bias");
	cr_assert_geq(b, 0);
	cr_expect_eq(s->graph->tensors[b].elems, (28 + 2 * 4) * 128);
	cr_expect_str_eq(s->model_file, "models/hf/qwen2-7b.json");
	struct scenario *plain = fixture_scenario("scenarios/mistral-7b-h100-64p.json");
	cr_expect(!plain->graph->gen->fused_qkv);
	cr_expect_geq(graph_find_op(plain->graph, "layers.0.attn.q.matmul"), 0);
	struct cli_run r = fixture_shardlab("import hf models/hf/qwen2-7b.json --seq 256 "
	                                    "--fused-qkv", false);
	cr_assert_eq(r.status, 0);
	cr_expect_not_null(strstr(r.out, "\"fused_qkv\":\ttrue"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "7,615,616,512 parameters"));
	free(r.out);
	/* the MLP's gate and up as one (llama_2_7b_published_total), and
	 * refused where the MLP has no gate (GPT-2's GeLU MLP) */
	r = fixture_shardlab("import hf models/hf/llama-2-7b.json --seq 256 --fused-gate-up", false);
	cr_assert_eq(r.status, 0);
	cr_expect_not_null(strstr(r.out, "\"fused_gate_up\":\ttrue"), "%s", r.out);
	cr_expect_not_null(strstr(r.out, "6,738,415,616 parameters"));
	free(r.out);
	r = fixture_shardlab("import hf models/hf/gpt2.json --seq 256 --fused-gate-up", true);
	cr_expect_eq(r.status, 1);
	cr_expect_str_eq(r.out, "models/hf/gpt2.json: --fused-gate-up: the config is read as a "
	                        "\"gpt\" generator, whose MLP has no gate projection (the option "
	                        "is for the gated MLPs of \"llama\")\n");
	free(r.out);
}

Test(hf, import_writes_a_model_file_that_loads)
{
	struct cli_run r = fixture_shardlab("import hf models/hf/qwen2-7b.json --seq 2048 "
	                                    "--micro-batch 2", false);
	cr_assert_eq(r.status, 0);
	struct json_doc doc;
	cr_assert(json_doc_parse(&doc, "stdout", r.out, strlen(r.out), &D));
	struct graph *g = graph_load_doc(A, &doc);
	json_doc_free(&doc);
	cr_assert_not_null(g, "the imported model does not load:\n%s", r.out);
	struct graph_totals t;
	graph_totals(g, &t);
	cr_assert_eq(t.parameters, 7615616512LL); /* as qwen2_7b_published_total */
	cr_assert_str_eq(g->name, "qwen2-7b");
	cr_assert_eq(g->gen->seq, 2048);
	cr_assert_eq(g->gen->micro_batch, 2);
	cr_assert(g->gen->qkv_bias);
	cr_assert_not_null(strstr(r.out, "7,615,616,512 parameters"));
	free(r.out);
}

Test(hf, import_diagnostics_and_usage)
{
	struct cli_run r = fixture_shardlab("import hf models/hf/gpt2.json --seq 2048", true);
	cr_assert_eq(r.status, 1);
	cr_assert_str_eq(r.out, "models/hf/gpt2.json:17: n_positions: the learned position table "
	                        "has 1024 rows, fewer than the sequence of 2048\n");
	free(r.out);
	r = fixture_shardlab("import onnx models/hf/gpt2.json", true);
	cr_assert_eq(r.status, 2);
	free(r.out);
	r = fixture_shardlab("import hf", true);
	cr_assert_eq(r.status, 2);
	free(r.out);
	r = fixture_shardlab("import --help", false);
	cr_assert_eq(r.status, 0);
	cr_assert_not_null(strstr(r.out, "usage: shardlab import hf"));
	free(r.out);
}

Test(hf, every_shipped_config_imports)
{
	static const char *const files[] = {
		"gpt2", "llama-2-7b", "llama-2-13b", "llama-2-70b", "llama-3.2-1b", "mistral-7b-v0.1",
		"mistral-nemo-base-2407", "pythia-160m", "pythia-1.4b", "qwen2-7b", "qwen3-8b",
		"qwen3-30b-a3b",
	};
	for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
		char args[256];
		snprintf(args, sizeof args, "import hf models/hf/%s.json --seq 512", files[i]);
		struct cli_run r = fixture_shardlab(args, true);
		cr_expect_eq(r.status, 0, "%s: %s", files[i], r.out);
		cr_expect_str_empty(r.out, "%s: %s", files[i], r.out);
		free(r.out);
	}
}

Test(hf, generator_tie_embeddings_in_a_model_file)
{
	/* llama with hidden 64, 1 layer, 4 heads, ffn 128, vocab 100:
	 *   embedding 100·64 = 6,400; layer 4·64² + 3·64·128 + 2·64 = 41,088;
	 *   final norm 64: tied 47,552, untied 47,552 + 6,400 = 53,952. */
	static const char fmt[] =
		"{\"format\": \"shardlab-model\", \"version\": 1, \"name\": \"t\", \"generator\": "
		"{\"kind\": \"llama\", \"hidden\": 64, \"layers\": 1, \"heads\": 4, \"ffn\": 128, "
		"\"vocab\": 100, \"seq\": 8%s}}";
	static const char *const tie[] = {"", ", \"tie_embeddings\": true",
	                                  ", \"tie_embeddings\": false"};
	static const int64_t want[] = {53952, 47552, 53952};
	for (int i = 0; i < 3; i++) {
		char text[512];
		snprintf(text, sizeof text, fmt, tie[i]);
		struct json_doc doc;
		cr_assert(json_doc_parse(&doc, "t.json", text, strlen(text), &D));
		struct graph *g = graph_load_doc(A, &doc);
		json_doc_free(&doc);
		cr_assert_not_null(g);
		struct graph_totals t;
		graph_totals(g, &t);
		cr_expect_eq(t.parameters, want[i], "case %d: %lld", i, (long long)t.parameters);
	}
}
