/* fuzz_json.c — the JSON reader (util/json.c): parse, record positions,
 * then walk every value through the typed accessors as a loader would. */
#include <cjson/cJSON.h>

#include "fuzz.h"

static void walk(const struct jv *v, int depth)
{
	static const char *const none[] = {NULL};
	char buf[96];
	double x;
	int64_t n;
	bool b;
	const char *s;
	jv_describe(v, buf, sizeof buf);
	jv_number(v, JR_POSITIVE, &x);
	jv_int(v, JR_RANGE(-5, 1e12), &n);
	jv_bool(v, &b);
	jv_string(v, &s);
	if (!v->node || depth > 64)
		return;
	if (cJSON_IsObject(v->node)) {
		struct jv m;
		jv_keys(v, none);
		jv_get(v, "format", &m);
		jv_header(v, "shardlab-model", 1);
	}
	if (cJSON_IsObject(v->node) || cJSON_IsArray(v->node)) {
		struct jv e;
		for (bool more = jv_first(v, &e); more; more = jv_next(v, &e))
			walk(&e, depth + 1);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct diag_list d;
	struct json_doc doc;
	diag_list_init(&d);
	if (json_doc_parse(&doc, "fuzz.json", (const char *)data, size, &d)) {
		struct jv root;
		jv_root(&doc, &root);
		root.node = doc.root;
		walk(&root, 0);
	}
	json_doc_free(&doc);
	fuzz_diags_done(&d);
	return 0;
}
