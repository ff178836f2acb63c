/* cmd_import.c — `shardlab import hf CONFIG.json`: a Hugging Face model
 * configuration as a shardlab model file on stdout.
 *
 * The config is read by models/hf.c into a generator; the model is
 * generated once to check it and to state its parameter count, then
 * written in the generator form (docs/formats.md), so that the file is
 * short and says every hyper-parameter it uses. No hot path.
 */
#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab import hf CONFIG.json [--seq N] [--micro-batch B]\n"
	        "                                      [--name NAME] [--fused-qkv]\n"
	        "                                      [--fused-gate-up]\n"
	        "\n"
	        "Read a Hugging Face model configuration (the config.json that\n"
	        "transformers' save_pretrained writes beside the weights) and print a\n"
	        "shardlab model file (\"format\": \"shardlab-model\", generator form) on\n"
	        "stdout. Architectures read (the first of \"architectures\"):\n"
	        "  LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM -> \"llama\"\n"
	        "    (RMSNorm, SwiGLU MLP, grouped-query attention, rotary positions;\n"
	        "    Qwen2 with biases on q, k and v; heads head_dim wide where the\n"
	        "    config gives one other than hidden_size / num_attention_heads,\n"
	        "    as Mistral NeMo)\n"
	        "  GPT2LMHeadModel -> \"gpt\" (LayerNorm, GeLU MLP, learned positions,\n"
	        "    head tied to the word embedding)\n"
	        "  GPTNeoXForCausalLM -> \"gpt\" (rotary positions, parallel residual)\n"
	        "  MixtralForCausalLM, Qwen2MoeForCausalLM, DeepseekForCausalLM ->\n"
	        "    \"llama\" with a mixture of experts\n"
	        "  Qwen3ForCausalLM -> \"llama\" with an RMSNorm over each head of q and\n"
	        "    k (qk_norm); Qwen3MoeForCausalLM the same with routed experts\n"
	        "  DeepseekV3ForCausalLM -> \"llama\" with multi-head latent attention,\n"
	        "    DeepSeekMoE (shared and routed experts, a sigmoid router, the first\n"
	        "    layers dense) and the multi-token prediction modules\n"
	        "Fields the config leaves out take the defaults of the transformers\n"
	        "configuration class; a missing required field, an unknown architecture\n"
	        "or a setting the generators cannot express is a diagnostic naming the\n"
	        "field (docs/formats.md lists the fields read).\n"
	        "\n"
	        "A scenario can name the config directly:\n"
	        "  \"model\": {\"hf_config\": \"../models/hf/llama-2-7b.json\", \"seq\": 4096}\n"
	        "\n"
	        "options:\n"
	        "  --seq N          sequence length of a sample (default: the config's\n"
	        "                   max_position_embeddings, or n_positions for GPT-2)\n"
	        "  --micro-batch B  samples per micro-batch (default 1)\n"
	        "  --name NAME      the model's name (default: the file name without\n"
	        "                   folder and .json)\n"
	        "  --fused-qkv      one query-key-value projection split by views, as\n"
	        "                   Megatron-LM runs it (the generator's fused_qkv;\n"
	        "                   default: three projections, as transformers has them;\n"
	        "                   a scenario's hf_config object takes \"fused_qkv\": true)\n"
	        "  --fused-gate-up  LLaMA-style models: the MLP's gate and up projections as\n"
	        "                   one, as Megatron-Core's linear_fc1 (fused_gate_up;\n"
	        "                   \"fused_gate_up\": true in a scenario)\n"
	        "  -h, --help       this help\n"
	        "\n"
	        "The description of the model file states the architecture, the source\n"
	        "file and the parameter count.\n"
	        "\n"
	        "exit status: 0 success, 1 invalid config (diagnostics on stderr as\n"
	        "FILE:LINE: FIELD: MESSAGE), 2 usage error.\n");
}

struct args {
	const char *file, *name;
	int64_t seq, micro_batch;
	bool fused_qkv, fused_gate_up;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){0};
	if (argc < 2 || strcmp(argv[1], "hf")) {
		fprintf(stderr, "shardlab import: the first argument names the source format: hf "
		                "(see shardlab import --help)\n");
		return EXIT_USAGE;
	}
	for (int i = 2; i < argc; i++) {
		bool value = i + 1 < argc;
		int rc = EXIT_OK;
		if (!strcmp(argv[i], "--seq") && value)
			rc = cli_parse_count("import", "--seq", argv[++i], 1LL << 40, &a->seq);
		else if (!strcmp(argv[i], "--micro-batch") && value)
			rc = cli_parse_count("import", "--micro-batch", argv[++i], 1LL << 40,
			                     &a->micro_batch);
		else if (!strcmp(argv[i], "--name") && value)
			a->name = argv[++i];
		else if (!strcmp(argv[i], "--fused-qkv"))
			a->fused_qkv = true;
		else if (!strcmp(argv[i], "--fused-gate-up"))
			a->fused_gate_up = true;
		else if (argv[i][0] == '-' || a->file) {
			fprintf(stderr, "shardlab import: unexpected '%s' (see shardlab import --help)\n",
			        argv[i]);
			return EXIT_USAGE;
		} else
			a->file = argv[i];
		if (rc != EXIT_OK)
			return rc;
	}
	if (!a->file) {
		fprintf(stderr, "shardlab import: name a config.json (see shardlab import --help)\n");
		return EXIT_USAGE;
	}
	return EXIT_OK;
}

/* "6,738,415,616" */
static const char *grouped(char *buf, size_t size, int64_t v)
{
	char d[32];
	int n = snprintf(d, sizeof d, "%lld", (long long)v), o = 0;
	for (int i = 0; i < n && (size_t)o + 2 < size; i++) {
		if (i && (n - i) % 3 == 0)
			buf[o++] = ',';
		buf[o++] = d[i];
	}
	buf[o] = '\0';
	return buf;
}

int cmd_import(int argc, char **argv)
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
	struct json_doc doc;
	struct hf_model m;
	struct graph *g = NULL;
	bool read = ar && json_doc_load(&doc, a.file, &d);
	if (read && graph_hf_read(ar, &doc, a.seq, a.micro_batch, &m)) {
		m.gen.fused_qkv = a.fused_qkv;
		m.gen.fused_gate_up = a.fused_gate_up;
		if (a.fused_gate_up && !model_gen_uses(m.gen.kind, "fused_gate_up"))
			diag_add(&d, DIAG_ERROR, a.file, 0, NULL, "--fused-gate-up: the config is read as "
			         "a \"%s\" generator, whose MLP has no gate projection (the option is for "
			         "the gated MLPs of \"llama\")", model_gen_names[m.gen.kind]);
		else
			g = graph_generate(ar, &m.gen, &d);
	}
	if (read)
		json_doc_free(&doc);
	if (g && a.seq <= 0)
		diag_add(&d, DIAG_NOTE, a.file, 0, NULL,
		         "no --seq: the sequence is the config's longest context, %lld tokens; give "
		         "the sequence the run trains on", (long long)m.gen.seq);
	cli_print_diags(&d);
	rc = EXIT_INVALID;
	if (g) {
		struct graph_totals t;
		graph_totals(g, &t);
		char n[40];
		cJSON *root = cJSON_CreateObject();
		cJSON_AddStringToObject(root, "format", MODEL_FORMAT);
		cJSON_AddNumberToObject(root, "version", MODEL_VERSION);
		cJSON_AddStringToObject(root, "name", a.name ? a.name : m.name);
		char n2[40];
		char *desc = arena_printf(ar, "%s imported from the Hugging Face config %s: %s "
		                          "parameters%s%s%s.", m.architecture, a.file,
		                          grouped(n, sizeof n, t.parameters),
		                          t.mtp_parameters > 0 ? " (" : "",
		                          t.mtp_parameters > 0
		                              ? grouped(n2, sizeof n2, t.mtp_parameters) : "",
		                          t.mtp_parameters > 0
		                              ? " of them in the multi-token prediction module, which "
		                                "shares the embedding and the output head)" : "");
		cJSON_AddStringToObject(root, "description", desc ? desc : "");
		cJSON *gen = model_gen_json(&m.gen);
		if (gen)
			cJSON_AddItemToObject(root, "generator", gen);
		rc = gen && desc ? report_print_json(root, "import") : EXIT_INVALID;
		if (!gen || !desc) {
			cJSON_Delete(root);
			fprintf(stderr, "shardlab import: out of memory\n");
		}
	}
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
