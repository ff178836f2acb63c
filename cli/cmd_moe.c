/* cmd_moe.c — `shardlab moe` and `shardlab cp`: one mixture-of-experts
 * layer under expert parallelism, and one attention layer under context
 * parallelism (ring attention), counted and priced on a topology's links
 * by the closed forms of planner/cost/moe_cp.c (docs/moe-cp.md).
 *
 * Both print per layer and per rank: parameters, buffers, bytes on the
 * wire, FLOPs, and the time of the collectives on the group's ranks; as
 * text, or with --json as one object of the same figures.
 */
#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void moe_help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab moe TOPOLOGY --hidden H --expert-ffn F --experts E --top-k K\n"
	        "                    [--shared N] [--plain] [--capacity-factor X] [--tokens T]\n"
	        "                    [--ep N] [--etp N] [--first-rank R] [--dtype DT] [--json]\n"
	        "       shardlab moe TOPOLOGY --model MODEL [options]\n"
	        "\n"
	        "One mixture-of-experts layer under expert parallelism (docs/moe-cp.md):\n"
	        "parameters (total, active per token, held per device), the expert\n"
	        "capacity, the dispatch and combine AllToAll buffers and their time over\n"
	        "the expert-parallel group's ranks on TOPOLOGY, and the FLOPs and kernel\n"
	        "time of the routed experts on one rank. A layer does 4 AllToAlls per\n"
	        "micro-batch (dispatch and combine, forward and backward). When the group\n"
	        "spans servers, the same AllToAll as HybridEP runs it (training.\n"
	        "moe_dispatcher \"hybridep\": a token sent once to each other server that\n"
	        "holds one of its experts, forwarded inside it).\n"
	        "\n"
	        "options:\n"
	        "  --model MODEL         take the layer from a model: a shardlab model (or\n"
	        "                        scenario) whose llama generator has experts, or a\n"
	        "                        Hugging Face config (Mixtral, Qwen2-MoE, Qwen3-MoE,\n"
	        "                        DeepSeekMoE, DeepSeek-V3);\n"
	        "                        its hidden, expert ffn, experts, top-k, shared\n"
	        "                        experts, capacity factor, dtype and micro-batch tokens\n"
	        "                        (micro_batch x seq) fill what the options do not give\n"
	        "  --hidden H            hidden size\n"
	        "  --expert-ffn F        one expert's intermediate size\n"
	        "  --experts E           routed experts\n"
	        "  --top-k K             experts per token (1..E)\n"
	        "  --shared N            shared experts of size F every token uses (default 0)\n"
	        "  --plain               experts are fc1, fc2 (default: SwiGLU gate, up, down)\n"
	        "  --capacity-factor X   slots per expert over the balanced share (default 1)\n"
	        "  --tokens T            tokens a rank holds entering the layer (default 4096)\n"
	        "  --ep N                expert-parallel degree, dividing E (default 1)\n"
	        "  --etp N               expert tensor-parallel degree, dividing F (default 1)\n"
	        "  --first-rank R        the group: ranks R + i*etp, i < ep (default 0)\n"
	        "  --dtype DT            bf16 (default), fp16, fp32\n"
	        "  --json                print JSON: \"model\" ({\"name\", \"file\"} or null),\n"
	        "                        \"layer\", \"topology\", \"ep\", \"etp\", \"ranks\"\n"
	        "                        {\"first\", \"last\", \"step\"}, \"params_total\",\n"
	        "                        \"params_active\", \"params_per_device\",\n"
	        "                        \"capacity_slots\", \"tokens_per_rank\", \"alltoall\"\n"
	        "                        {\"bytes_per_rank\", \"bytes_leaving\", \"seconds\",\n"
	        "                        \"per_micro_batch\", \"seconds_per_micro_batch\"},\n"
	        "                        \"hybridep\" (null inside one server),\n"
	        "                        \"etp_gather_bytes\", \"expert_flops\",\n"
	        "                        \"expert_slots\", \"expert_kernel_s\", \"active_flops\",\n"
	        "                        \"router_flops\", \"shared_flops\"\n"
	        "  -h, --help            this help\n"
	        "\n"
	        "exit status: 0 success, 1 invalid topology or layer, 2 usage error.\n");
}

static void cp_help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab cp TOPOLOGY --seq S --heads A --head-dim D [--kv-heads K]\n"
	        "                   [--batch B] [--cp N] [--non-causal] [--first-rank R]\n"
	        "                   [--stride N] [--dtype DT] [--json]\n"
	        "\n"
	        "One attention layer under context parallelism, ring attention as\n"
	        "Megatron-LM's CP does it (docs/moe-cp.md): the K/V chunk each ring step\n"
	        "sends, the bytes per rank forward and backward, the causal work per rank\n"
	        "with Megatron's 2*cp-chunk balancing against a contiguous split, and a\n"
	        "forward ring pass on TOPOLOGY with each hop overlapped with the\n"
	        "attention of the block in hand.\n"
	        "\n"
	        "options:\n"
	        "  --seq S          sequence length (divisible by 2*cp when causal)\n"
	        "  --heads A        query heads\n"
	        "  --head-dim D     head dimension\n"
	        "  --kv-heads K     key/value heads, dividing A (default A)\n"
	        "  --batch B        sequences per micro-batch (default 1)\n"
	        "  --cp N           context-parallel degree (default 1)\n"
	        "  --non-causal     full attention (default causal)\n"
	        "  --first-rank R   the ring: ranks R + i*stride, i < cp (default 0)\n"
	        "  --stride N       (default 1)\n"
	        "  --dtype DT       bf16 (default), fp16, fp32\n"
	        "  --json           print JSON: \"attention\", \"topology\", \"cp\", \"ranks\"\n"
	        "                   {\"first\", \"last\", \"step\"}, \"tokens_per_rank\", \"ring\"\n"
	        "                   {\"steps\", \"chunk_bytes\", \"forward_bytes\",\n"
	        "                   \"backward_bytes\", \"in_flight_bytes\"}, \"flops_per_rank\",\n"
	        "                   \"flops_busiest_contiguous\", \"imbalance\",\n"
	        "                   \"forward_pass_s\", \"block_s\", \"exposed_s\"\n"
	        "  -h, --help       this help\n"
	        "\n"
	        "exit status: 0 success, 1 invalid topology or layer, 2 usage error.\n");
}

static int parse_factor(const char *cmd, const char *opt, const char *v, double *out)
{
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (*v == '\0' || *end != '\0' || errno || !(x > 0) || !isfinite(x)) {
		fprintf(stderr, "shardlab %s: %s takes a positive number, got '%s'\n", cmd, opt, v);
		return EXIT_USAGE;
	}
	*out = x;
	return EXIT_OK;
}

static int parse_dtype(const char *cmd, const char *v, enum dtype *out)
{
	int d = dtype_parse(v);
	if (d != DT_BF16 && d != DT_FP16 && d != DT_FP32) {
		fprintf(stderr, "shardlab %s: --dtype takes bf16, fp16 or fp32, got '%s'\n", cmd, v);
		return EXIT_USAGE;
	}
	*out = (enum dtype)d;
	return EXIT_OK;
}

/* "--name VALUE" counts: which option, into where. */
struct count_opt {
	const char *name;
	int64_t *dst;
};

static int parse_counts(const char *cmd, int argc, char **argv, int *i,
                        const struct count_opt *opts, int n, bool *matched)
{
	*matched = false;
	for (int k = 0; k < n; k++) {
		if (strcmp(argv[*i], opts[k].name))
			continue;
		*matched = true;
		if (*i + 1 >= argc) {
			fprintf(stderr, "shardlab %s: %s needs a value\n", cmd, opts[k].name);
			return EXIT_USAGE;
		}
		return cli_parse_count(cmd, opts[k].name, argv[++*i], (int64_t)1 << 40, opts[k].dst);
	}
	return EXIT_OK;
}

static int need(const char *cmd, const char *opt, int64_t v)
{
	if (v >= 1)
		return EXIT_OK;
	fprintf(stderr, "shardlab %s: %s is required and must be 1 or more\n", cmd, opt);
	return EXIT_USAGE;
}

/* Ranks first + i*stride, i < n, all on the topology; NULL after a
 * message. */
static int64_t *group_ranks(const char *cmd, const struct topology *t, int64_t first,
                            int64_t stride, int64_t n)
{
	if (first + (n - 1) * stride >= t->n_devices) {
		fprintf(stderr, "shardlab %s: the group's last rank %lld is beyond the topology's "
		        "%lld devices\n", cmd, (long long)(first + (n - 1) * stride),
		        (long long)t->n_devices);
		return NULL;
	}
	int64_t *r = malloc((size_t)n * sizeof *r);
	if (!r) {
		fprintf(stderr, "shardlab %s: out of memory\n", cmd);
		return NULL;
	}
	for (int64_t i = 0; i < n; i++)
		r[i] = first + i * stride;
	return r;
}

/* The MoE layer of a model's generator, for the shape members the options
 * left at 0 (and the capacity factor and dtype when not given). */
static int moe_from_model(const char *path, struct moe_shape *m, int64_t *tokens, bool cf,
                          bool dt, cJSON *json)
{
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct graph *g = a ? cli_load_graph(a, path, &d) : NULL;
	cli_print_diags(&d);
	diag_list_free(&d);
	int rc = g ? EXIT_OK : EXIT_INVALID;
	const struct model_gen *gen = g ? g->gen : NULL;
	if (g && (!gen || gen->kind != GEN_LLAMA || gen->experts < 1)) {
		fprintf(stderr, "shardlab moe: %s: not a mixture-of-experts model (its generator has "
		        "no experts)\n", path);
		rc = EXIT_INVALID;
	} else if (g) {
		int64_t *dst[] = {&m->hidden, &m->expert_ffn, &m->experts, &m->top_k,
		                  &m->shared_experts};
		const int64_t src[] = {gen->hidden, gen->expert_ffn > 0 ? gen->expert_ffn : gen->ffn,
		                       gen->experts, gen->top_k, gen->shared_experts};
		for (size_t i = 0; i < SL_COUNTOF(dst); i++)
			if (*dst[i] == 0)
				*dst[i] = src[i];
		if (*tokens == 0)
			*tokens = gen->micro_batch * gen->seq;
		if (!cf)
			m->capacity_factor = gen->capacity_factor > 0 ? gen->capacity_factor : 1;
		if (!dt)
			m->dtype = gen->dtype;
		m->shared_gate = gen->shared_expert_gate;
		if (json) {
			cJSON *o = cJSON_AddObjectToObject(json, "model");
			cJSON_AddStringToObject(o, "name", g->name);
			cJSON_AddStringToObject(o, "file", path);
		} else {
			printf("model: %s (%s)\n", g->name, path);
		}
	}
	arena_free(a);
	return rc;
}

/* {"first", "last", "step"} of a group's ranks. */
static cJSON *ranks_json(const int64_t *ranks, int64_t n, int64_t step)
{
	cJSON *o = cJSON_CreateObject();
	cJSON_AddNumberToObject(o, "first", (double)ranks[0]);
	cJSON_AddNumberToObject(o, "last", (double)ranks[n - 1]);
	cJSON_AddNumberToObject(o, "step", (double)step);
	return o;
}

/* The figures the text prints, in its units (bytes, seconds, FLOPs). */
static void moe_json(cJSON *o, const struct moe_shape *m, const struct moe_parallel *p,
                     const struct moe_layer *l, const struct topology *t, const int64_t *ranks,
                     int64_t tokens, double a2a, double kern)
{
	cJSON *y = cJSON_AddObjectToObject(o, "layer");
	cJSON_AddNumberToObject(y, "hidden", (double)m->hidden);
	cJSON_AddNumberToObject(y, "expert_ffn", (double)m->expert_ffn);
	cJSON_AddNumberToObject(y, "experts", (double)m->experts);
	cJSON_AddNumberToObject(y, "top_k", (double)m->top_k);
	cJSON_AddNumberToObject(y, "shared_experts", (double)m->shared_experts);
	cJSON_AddBoolToObject(y, "gated", m->gated);
	cJSON_AddNumberToObject(y, "capacity_factor", m->capacity_factor);
	cJSON_AddStringToObject(y, "dtype", dtype_names[m->dtype]);
	cJSON_AddStringToObject(o, "topology", t->name);
	cJSON_AddNumberToObject(o, "ep", (double)p->ep);
	cJSON_AddNumberToObject(o, "etp", (double)p->etp);
	cJSON_AddItemToObject(o, "ranks", ranks_json(ranks, p->ep, p->etp));
	cJSON_AddNumberToObject(o, "params_total", (double)l->params_total);
	cJSON_AddNumberToObject(o, "params_active", (double)l->params_active);
	cJSON_AddNumberToObject(o, "params_per_device", (double)l->params_per_device);
	cJSON_AddNumberToObject(o, "capacity_slots", (double)l->capacity);
	cJSON_AddNumberToObject(o, "tokens_per_rank", (double)tokens);
	cJSON *x = cJSON_AddObjectToObject(o, "alltoall");
	cJSON_AddNumberToObject(x, "bytes_per_rank", l->dispatch_bytes);
	cJSON_AddNumberToObject(x, "bytes_leaving",
	                        l->dispatch_bytes * (double)(p->ep - 1) / (double)p->ep);
	cJSON_AddNumberToObject(x, "seconds", a2a);
	cJSON_AddNumberToObject(x, "per_micro_batch", 4);
	cJSON_AddNumberToObject(x, "seconds_per_micro_batch", 4 * a2a);
	if (p->etp > 1)
		cJSON_AddNumberToObject(o, "etp_gather_bytes", l->etp_gather_bytes);
	else
		cJSON_AddNullToObject(o, "etp_gather_bytes");
	cJSON_AddNumberToObject(o, "expert_flops", l->expert_flops);
	cJSON_AddNumberToObject(o, "expert_slots", l->expert_slots);
	cJSON_AddNumberToObject(o, "expert_kernel_s", kern);
	cJSON_AddNumberToObject(o, "active_flops", l->active_flops);
	cJSON_AddNumberToObject(o, "router_flops", l->router_flops);
	cJSON_AddNumberToObject(o, "shared_flops", l->shared_flops);
}

int cmd_moe(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		moe_help(stdout);
		return EXIT_OK;
	}
	struct moe_shape m = {.capacity_factor = 1, .gated = true, .dtype = DT_BF16};
	struct moe_parallel p = {.ep = 1, .etp = 1};
	int64_t tokens = 0, first = 0;
	const char *file = NULL, *model = NULL;
	bool plain = false, cf = false, dt = false, json = false;
	const struct count_opt counts[] = {
		{"--hidden", &m.hidden}, {"--expert-ffn", &m.expert_ffn}, {"--experts", &m.experts},
		{"--top-k", &m.top_k}, {"--shared", &m.shared_experts}, {"--tokens", &tokens},
		{"--ep", &p.ep}, {"--etp", &p.etp}, {"--first-rank", &first},
	};
	for (int i = 1; i < argc; i++) {
		bool matched;
		int rc = parse_counts("moe", argc, argv, &i, counts, (int)SL_COUNTOF(counts), &matched);
		if (rc != EXIT_OK)
			return rc;
		if (matched)
			continue;
		if (!strcmp(argv[i], "--plain")) {
			plain = true;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--model") && i + 1 < argc) {
			model = argv[++i];
		} else if (!strcmp(argv[i], "--capacity-factor") && i + 1 < argc) {
			if (parse_factor("moe", argv[i], argv[i + 1], &m.capacity_factor) != EXIT_OK)
				return EXIT_USAGE;
			cf = true;
			i++;
		} else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
			if (parse_dtype("moe", argv[++i], &m.dtype) != EXIT_OK)
				return EXIT_USAGE;
			dt = true;
		} else if (argv[i][0] != '-' && !file) {
			file = argv[i];
		} else {
			fprintf(stderr, "shardlab moe: unexpected argument '%s' (see shardlab moe --help)\n",
			        argv[i]);
			return EXIT_USAGE;
		}
	}
	if (!file) {
		fprintf(stderr, "shardlab moe: name a topology (see shardlab moe --help)\n");
		return EXIT_USAGE;
	}
	m.gated = !plain;
	cJSON *root = json ? cJSON_CreateObject() : NULL;
	if (json && !root) {
		fprintf(stderr, "shardlab moe: out of memory\n");
		return EXIT_INVALID;
	}
	if (model) {
		int rc = moe_from_model(model, &m, &tokens, cf, dt, root);
		if (rc != EXIT_OK) {
			cJSON_Delete(root);
			return rc;
		}
	} else if (root) {
		cJSON_AddNullToObject(root, "model");
	}
	if (tokens == 0)
		tokens = 4096;
	if (need("moe", "--hidden", m.hidden) || need("moe", "--expert-ffn", m.expert_ffn) ||
	    need("moe", "--experts", m.experts) || need("moe", "--top-k", m.top_k) ||
	    need("moe", "--tokens", tokens) || need("moe", "--ep", p.ep) ||
	    need("moe", "--etp", p.etp)) {
		cJSON_Delete(root);
		return EXIT_USAGE;
	}
	struct moe_layer l;
	if (!cost_moe_layer(&m, &p, tokens, &l)) {
		fprintf(stderr, "shardlab moe: invalid layer: top-k must be at most the experts, --ep "
		        "must divide --experts, --etp must divide --expert-ffn, and the counts stay "
		        "below 2^53\n");
		cJSON_Delete(root);
		return EXIT_INVALID;
	}
	struct diag_list d;
	diag_list_init(&d);
	struct arena *ar = arena_new();
	struct topology *t = ar ? cli_load_topology(ar, file, &d) : NULL;
	cli_print_diags(&d);
	int rc = EXIT_INVALID;
	int64_t *ranks = t ? group_ranks("moe", t, first, p.etp, p.ep) : NULL;
	if (ranks) {
		double a2a = cost_moe_alltoall_s(t, ranks, (int)p.ep, &l);
		struct cost_work w = {.flops = l.expert_flops, .m = l.expert_slots,
		                      .n = (double)(m.expert_ffn / p.etp), .k = (double)m.hidden};
		double kern = cost_compute_s(&t->device, m.dtype, &w, NULL);
		struct cost_ep_route ep = {(double)m.experts,
		                           (double)(l.capacity * m.experts) / (double)tokens};
		int c;
		double share;
		bool hybrid = cost_ep_hybrid_shape(t, ranks, (int)p.ep, &ep, &c, &share);
		if (root) {
			moe_json(root, &m, &p, &l, t, ranks, tokens, a2a, kern);
			if (hybrid) {
				cJSON *h = cJSON_AddObjectToObject(root, "hybridep");
				cJSON_AddNumberToObject(h, "bytes_to_each_other_server",
				                        share * l.dispatch_bytes);
				cJSON_AddNumberToObject(h, "other_servers", (double)(p.ep / c - 1));
				cJSON_AddNumberToObject(h, "bytes_to_each_own_rank", l.dispatch_bytes / c);
				cJSON_AddNumberToObject(h, "own_ranks", c - 1);
				cJSON_AddNumberToObject(h, "seconds", cost_ep_hybrid_s(t, ranks, (int)p.ep,
				                                                       l.dispatch_bytes, &ep));
			} else {
				cJSON_AddNullToObject(root, "hybridep");
			}
			rc = report_print_json(root, "moe");
			root = NULL;
			goto done;
		}
		printf("MoE layer: hidden %lld, expert ffn %lld, %lld experts, top-%lld, %lld shared, "
		       "%s, capacity factor %g, %s\n", (long long)m.hidden, (long long)m.expert_ffn,
		       (long long)m.experts, (long long)m.top_k, (long long)m.shared_experts,
		       m.gated ? "gated (SwiGLU)" : "plain", m.capacity_factor, dtype_names[m.dtype]);
		printf("parallelism: EP %lld, ETP %lld; group ranks %lld..%lld step %lld on %s\n",
		       (long long)p.ep, (long long)p.etp, (long long)first,
		       (long long)ranks[p.ep - 1], (long long)p.etp, t->name);
		printf("parameters: %lld total, %lld active per token, %lld per device\n",
		       (long long)l.params_total, (long long)l.params_active,
		       (long long)l.params_per_device);
		printf("capacity: %lld slots per expert per rank (%lld tokens per rank)\n",
		       (long long)l.capacity, (long long)tokens);
		printf("AllToAll (dispatch or combine): %.0f bytes per rank, %.0f leave it; "
		       "%.6g s each, 4 per micro-batch: %.6g s\n", l.dispatch_bytes,
		       l.dispatch_bytes * (double)(p.ep - 1) / (double)p.ep, a2a, 4 * a2a);
		/* HybridEP (training.moe_dispatcher "hybridep"): a token crosses to
		 * each other server holding one of its experts once */
		if (hybrid)
			printf("HybridEP (dispatch or combine): %.0f bytes to each of %lld other "
			       "servers, %.0f to each of %d ranks of its own; %.6g s each\n",
			       share * l.dispatch_bytes, (long long)(p.ep / c - 1),
			       l.dispatch_bytes / c, c - 1,
			       cost_ep_hybrid_s(t, ranks, (int)p.ep, l.dispatch_bytes, &ep));
		if (p.etp > 1)
			printf("ETP gather (and reduce-scatter): %.0f bytes\n", l.etp_gather_bytes);
		printf("expert FLOPs per rank (forward): %.6g over %.0f slots, %.6g s; active %.6g, "
		       "router %.6g, shared %.6g\n", l.expert_flops, l.expert_slots, kern,
		       l.active_flops, l.router_flops, l.shared_flops);
		rc = EXIT_OK;
	}
done:
	cJSON_Delete(root);
	free(ranks);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}

static cJSON *cp_json(const struct cp_attention *at, const struct cp_layer *c,
                      const struct topology *t, const int64_t *ranks, int64_t cp, int64_t stride,
                      double pass, double block, double exposed)
{
	cJSON *o = cJSON_CreateObject();
	cJSON *y = cJSON_AddObjectToObject(o, "attention");
	cJSON_AddNumberToObject(y, "batch", (double)at->batch);
	cJSON_AddNumberToObject(y, "seq", (double)at->seq);
	cJSON_AddNumberToObject(y, "heads", (double)at->heads);
	cJSON_AddNumberToObject(y, "kv_heads", (double)at->kv_heads);
	cJSON_AddNumberToObject(y, "head_dim", (double)at->head_dim);
	cJSON_AddBoolToObject(y, "causal", at->causal);
	cJSON_AddStringToObject(y, "dtype", dtype_names[at->dtype]);
	cJSON_AddStringToObject(o, "topology", t->name);
	cJSON_AddNumberToObject(o, "cp", (double)cp);
	cJSON_AddItemToObject(o, "ranks", ranks_json(ranks, cp, stride));
	cJSON_AddNumberToObject(o, "tokens_per_rank", (double)c->local_seq);
	cJSON *r = cJSON_AddObjectToObject(o, "ring");
	cJSON_AddNumberToObject(r, "steps", (double)c->steps);
	cJSON_AddNumberToObject(r, "chunk_bytes", c->kv_chunk_bytes);
	cJSON_AddNumberToObject(r, "forward_bytes", c->fwd_send_bytes);
	cJSON_AddNumberToObject(r, "backward_bytes", c->bwd_send_bytes);
	cJSON_AddNumberToObject(r, "in_flight_bytes", c->kv_buffer_bytes);
	cJSON_AddNumberToObject(o, "flops_per_rank", c->core_flops_rank);
	cJSON_AddNumberToObject(o, "flops_busiest_contiguous", c->core_flops_max_contiguous);
	cJSON_AddNumberToObject(o, "imbalance", c->imbalance);
	cJSON_AddNumberToObject(o, "forward_pass_s", pass);
	cJSON_AddNumberToObject(o, "block_s", block);
	cJSON_AddNumberToObject(o, "exposed_s", exposed);
	return o;
}

int cmd_cp(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		cp_help(stdout);
		return EXIT_OK;
	}
	struct cp_attention at = {.batch = 1, .dtype = DT_BF16, .causal = true};
	int64_t cp = 1, first = 0, stride = 1;
	const char *file = NULL;
	bool json = false;
	const struct count_opt counts[] = {
		{"--seq", &at.seq}, {"--heads", &at.heads}, {"--head-dim", &at.head_dim},
		{"--kv-heads", &at.kv_heads}, {"--batch", &at.batch}, {"--cp", &cp},
		{"--first-rank", &first}, {"--stride", &stride},
	};
	for (int i = 1; i < argc; i++) {
		bool matched;
		int rc = parse_counts("cp", argc, argv, &i, counts, (int)SL_COUNTOF(counts), &matched);
		if (rc != EXIT_OK)
			return rc;
		if (matched)
			continue;
		if (!strcmp(argv[i], "--non-causal")) {
			at.causal = false;
		} else if (!strcmp(argv[i], "--json")) {
			json = true;
		} else if (!strcmp(argv[i], "--dtype") && i + 1 < argc) {
			if (parse_dtype("cp", argv[++i], &at.dtype) != EXIT_OK)
				return EXIT_USAGE;
		} else if (argv[i][0] != '-' && !file) {
			file = argv[i];
		} else {
			fprintf(stderr, "shardlab cp: unexpected argument '%s' (see shardlab cp --help)\n",
			        argv[i]);
			return EXIT_USAGE;
		}
	}
	if (!file) {
		fprintf(stderr, "shardlab cp: name a topology (see shardlab cp --help)\n");
		return EXIT_USAGE;
	}
	if (at.kv_heads == 0)
		at.kv_heads = at.heads;
	if (need("cp", "--seq", at.seq) || need("cp", "--heads", at.heads) ||
	    need("cp", "--head-dim", at.head_dim) || need("cp", "--batch", at.batch) ||
	    need("cp", "--cp", cp) || need("cp", "--stride", stride))
		return EXIT_USAGE;
	struct cp_layer c;
	if (!cost_cp_attention(&at, cp, &c)) {
		fprintf(stderr, "shardlab cp: invalid layer: --kv-heads must divide --heads and --seq "
		        "must divide by %s\n", at.causal ? "2 x --cp (causal balancing)" : "--cp");
		return EXIT_INVALID;
	}
	struct diag_list d;
	diag_list_init(&d);
	struct arena *ar = arena_new();
	struct topology *t = ar ? cli_load_topology(ar, file, &d) : NULL;
	cli_print_diags(&d);
	int rc = EXIT_INVALID;
	int64_t *ranks = t ? group_ranks("cp", t, first, stride, cp) : NULL;
	if (ranks) {
		struct cost_work w = {.flops = c.core_flops_rank / (double)cp};
		double block = cost_compute_s(&t->device, at.dtype, &w, NULL), exposed;
		double pass = cost_cp_ring_s(t, ranks, (int)cp, c.kv_chunk_bytes, block, &exposed);
		if (json) {
			rc = report_print_json(cp_json(&at, &c, t, ranks, cp, stride, pass, block,
			                               exposed), "cp");
			goto done;
		}
		printf("attention: batch %lld, seq %lld, %lld heads, %lld KV heads, head dim %lld, "
		       "%s, %s\n", (long long)at.batch, (long long)at.seq, (long long)at.heads,
		       (long long)at.kv_heads, (long long)at.head_dim, at.causal ? "causal" : "full",
		       dtype_names[at.dtype]);
		printf("context parallelism: CP %lld, ring ranks %lld..%lld step %lld on %s\n",
		       (long long)cp, (long long)first, (long long)ranks[cp - 1], (long long)stride,
		       t->name);
		printf("tokens per rank: %lld\n", (long long)c.local_seq);
		printf("ring: %lld steps of %.0f bytes (K and V); per rank per layer %.0f bytes "
		       "forward, %.0f backward; %.0f bytes in flight\n", (long long)c.steps,
		       c.kv_chunk_bytes, c.fwd_send_bytes, c.bwd_send_bytes, c.kv_buffer_bytes);
		printf("attention FLOPs per rank (forward): %.6g balanced; contiguous split: busiest "
		       "%.6g (x%.4g the average)\n", c.core_flops_rank, c.core_flops_max_contiguous,
		       c.imbalance);
		printf("forward ring pass: %.6g s (%lld blocks of %.6g s, %.6g s exposed)\n", pass,
		       (long long)cp, block, exposed);
		rc = EXIT_OK;
	}
done:
	free(ranks);
	diag_list_free(&d);
	arena_free(ar);
	return rc;
}
