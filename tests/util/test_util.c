/* test_util.c — arena, diagnostics, JSON positions and typed reads, dtypes,
 * paths. Expected lines and messages are read off the literal documents
 * written in each test. */
#include <criterion/criterion.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "util.h"

/* ------------------------------------------------------------------ arena */

Test(util, arena_zeroes_and_aligns)
{
	struct arena *a = arena_new();
	cr_assert_not_null(a);
	for (int i = 1; i < 2000; i += 37) {
		unsigned char *p = arena_alloc(a, (size_t)i);
		cr_assert_not_null(p);
		cr_assert_eq((uintptr_t)p % 16, 0, "allocation of %d bytes not 16-aligned", i);
		for (int k = 0; k < i; k++)
			cr_assert_eq(p[k], 0);
		memset(p, 0xab, (size_t)i);
	}
	/* A block larger than the arena's block size gets its own block. */
	unsigned char *big = arena_alloc(a, 1 << 20);
	cr_assert_not_null(big);
	cr_assert_eq(big[(1 << 20) - 1], 0);
	cr_assert_geq(arena_used(a), (size_t)1 << 20);
	arena_free(a);
	arena_free(NULL);
}

Test(util, arena_refuses_overflowing_sizes)
{
	struct arena *a = arena_new();
	cr_assert_null(arena_calloc(a, SIZE_MAX / 2, 4));
	cr_assert_null(arena_alloc(a, SIZE_MAX - 3));
	arena_free(a);
}

/* arena_alloc_raw hands out aligned memory the caller fills (it may hold
 * an earlier arena's bytes: blocks are reused); arena_dup copies. */
Test(util, arena_raw_and_dup)
{
	struct arena *a = arena_new();
	for (int i = 1; i < 2000; i += 37) {
		unsigned char *p = arena_alloc_raw(a, (size_t)i);
		cr_assert_not_null(p);
		cr_assert_eq((uintptr_t)p % 16, 0, "raw allocation of %d bytes not 16-aligned", i);
		memset(p, 0xcd, (size_t)i);
	}
	double src[5] = {1.5, -2, 3.25, 0, 1e300};
	double *d = arena_dup(a, src, sizeof src);
	cr_assert_not_null(d);
	cr_assert_neq(d, src);
	cr_assert_eq(memcmp(d, src, sizeof src), 0);
	unsigned char *from = malloc(1 << 20);
	cr_assert_not_null(from);
	memset(from, 7, 1 << 20);
	unsigned char *big = arena_dup(a, from, 1 << 20);  /* a block of its own */
	free(from);
	cr_assert_eq(big[0], 7);
	cr_assert_eq(big[(1 << 20) - 1], 7);
	cr_assert_not_null(arena_dup(a, NULL, 0), "an empty copy is still an allocation");
	cr_assert_null(arena_alloc_raw(a, SIZE_MAX - 3));
	arena_free(a);
}

Test(util, arena_strings_and_grow)
{
	struct arena *a = arena_new();
	cr_assert_str_eq(arena_strdup(a, "hccs"), "hccs");
	cr_assert_str_eq(arena_strndup(a, "nvswitch", 2), "nv");
	cr_assert_str_eq(arena_printf(a, "%s[%d]", "links", 3), "links[3]");
	int *v = arena_calloc(a, 4, sizeof(int));
	for (int i = 0; i < 4; i++)
		v[i] = i + 1;
	int *w = arena_grow(a, v, 4, 8, sizeof(int));
	cr_assert_eq(w[3], 4);
	cr_assert_eq(w[7], 0);
	arena_free(a);
}

/* ------------------------------------------------------------ diagnostics */

Test(util, diag_format_and_count)
{
	struct diag_list d;
	diag_list_init(&d);
	diag_add(&d, DIAG_ERROR, "topologies/x.json", 14, "links[3].bandwidth_GBps",
	         "expected a positive number, got \"%s\"", "fast");
	diag_add(&d, DIAG_WARNING, "a.json", 0, NULL, "careful");
	cr_assert_eq(d.count, 2);
	cr_assert_eq(d.errors, 1);
	char *s = diag_format(&d.items[0]);
	cr_assert_str_eq(s, "topologies/x.json:14: links[3].bandwidth_GBps: expected a positive "
	                    "number, got \"fast\"");
	free(s);
	s = diag_format(&d.items[1]);
	cr_assert_str_eq(s, "a.json: warning: careful");
	free(s);
	diag_list_free(&d);
}

Test(util, diag_list_is_bounded)
{
	struct diag_list d;
	diag_list_init(&d);
	for (int i = 0; i < DIAG_LIST_MAX + 50; i++)
		diag_add(&d, DIAG_ERROR, "f", i + 1, NULL, "e%d", i);
	cr_assert_eq(d.count, DIAG_LIST_MAX);
	cr_assert_eq(d.dropped, 50);
	cr_assert_eq(d.errors, DIAG_LIST_MAX + 50);
	diag_list_free(&d);
}

/* ------------------------------------------------------------------- json */

static struct diag_list diags;
static struct json_doc doc;

static bool parse(const char *text)
{
	diag_list_init(&diags);
	return json_doc_parse(&doc, "t.json", text, strlen(text), &diags);
}

static void done(void)
{
	json_doc_free(&doc);
	diag_list_free(&diags);
}

static const char *diag0(void)
{
	static char buf[512];
	cr_assert_geq(diags.count, 1, "expected a diagnostic");
	char *s = diag_format(&diags.items[0]);
	snprintf(buf, sizeof buf, "%s", s);
	free(s);
	return buf;
}

Test(util, json_lines_of_keys_and_elements)
{
	const char *text = "{\n"
	                   "  \"a\": 1,\n"
	                   "  \"b\": {\n"
	                   "    \"c\": [10,\n"
	                   "          20,\n"
	                   "          {\"d\": true}]\n"
	                   "  }\n"
	                   "}\n";
	cr_assert(parse(text));
	struct jv root, b, c, e;
	cr_assert(jv_root(&doc, &root));
	cr_assert_eq(root.line, 1);
	cr_assert(jv_get(&root, "a", &e));
	cr_assert_eq(e.line, 2);
	cr_assert(jv_get(&root, "b", &b));
	cr_assert_eq(b.line, 3);
	cr_assert(jv_get(&b, "c", &c));
	cr_assert_eq(c.line, 4);
	cr_assert_str_eq(c.path, "b.c");
	jv_at(&c, 1, &e);
	cr_assert_eq(e.line, 5);
	cr_assert_str_eq(e.path, "b.c[1]");
	jv_at(&c, 2, &e);
	cr_assert_eq(e.line, 6);
	struct jv d;
	cr_assert(jv_get(&e, "d", &d));
	cr_assert_eq(d.line, 6);
	cr_assert_str_eq(d.path, "b.c[2].d");
	done();
}

Test(util, json_strings_with_braces_do_not_confuse_lines)
{
	const char *text = "{\"s\": \"{[\\\"\\\\n\",\n\"t\": 2}";
	cr_assert(parse(text));
	struct jv root, t;
	jv_root(&doc, &root);
	cr_assert(jv_get(&root, "t", &t));
	cr_assert_eq(t.line, 2);
	done();
}

Test(util, json_syntax_error_line)
{
	/* The array is never closed: cJSON stops at the '}' on line 4. */
	cr_assert_not(parse("{\n  \"a\": [1,\n  2,\n}\n"));
	cr_assert_str_eq(diag0(), "t.json:4: syntax error at '}'");
	done();
}

/* Old Mac files end their lines with a lone "\r": each one is a line end,
 * as "\n" is, and "\r\n" still counts once. */
Test(util, json_lines_end_at_a_lone_cr)
{
	cr_assert(parse("{\r  \"a\": 1,\r  \"b\": [1,\r    2]\r}\r"));
	struct jv root, e, b;
	jv_root(&doc, &root);
	cr_assert(jv_get(&root, "a", &e));
	cr_assert_eq(e.line, 2);
	cr_assert(jv_get(&root, "b", &b));
	cr_assert_eq(b.line, 3);
	jv_at(&b, 1, &e);
	cr_assert_eq(e.line, 4);
	done();
	/* line 2 ends at "\r", the empty line 3 at "\r\n" */
	cr_assert(parse("{\r\n\"a\": 1,\r\r\n\"b\": 2}"));
	jv_root(&doc, &root);
	cr_assert(jv_get(&root, "a", &e));
	cr_assert_eq(e.line, 2);
	cr_assert(jv_get(&root, "b", &e));
	cr_assert_eq(e.line, 4);
	done();
	/* syntax errors count the same way; the excerpt stops at the line's end */
	cr_assert_not(parse("{\r  \"a\": [1,\r  2,\r}\r"));
	cr_assert_str_eq(diag0(), "t.json:4: syntax error at '}'");
	done();
	cr_assert_not(parse("{\"a\": 1}\r\rxyz\rmore"));
	cr_assert_str_eq(diag0(), "t.json:3: syntax error: unexpected 'xyz' after the end of the "
	                          "JSON value");
	done();
	cr_assert_not(parse(" \r\r"));
	cr_assert_str_eq(diag0(), "t.json:3: the file is empty (expected a JSON object)");
	done();
}

Test(util, json_empty_and_binary)
{
	cr_assert_not(parse("  \n\n"));
	cr_assert_str_eq(diag0(), "t.json:3: the file is empty (expected a JSON object)");
	done();
	diag_list_init(&diags);
	cr_assert_not(json_doc_parse(&doc, "t.json", "{\"a\"\0\x01", 6, &diags));
	cr_assert_str_eq(diag0(), "t.json:1: not a text file: NUL byte at offset 4");
	done();
}

Test(util, json_deep_nesting_is_refused)
{
	size_t n = 10000;
	char *t = malloc(2 * n + 1);
	memset(t, '[', n);
	memset(t + n, ']', n);
	t[2 * n] = '\0';
	cr_assert_not(parse(t));
	cr_assert_str_eq(diag0(), "t.json:1: syntax error: arrays or objects nested deeper than "
	                          "1000 levels");
	free(t);
	done();
}

Test(util, json_trailing_garbage)
{
	cr_assert_not(parse("{\"a\": 1}\n\nxyz"));
	cr_assert_str_eq(diag0(), "t.json:3: syntax error: unexpected 'xyz' after the end of the "
	                          "JSON value");
	done();
}

Test(util, json_top_level_must_be_object)
{
	cr_assert(parse("[1, 2]"));
	struct jv root;
	cr_assert_not(jv_root(&doc, &root));
	cr_assert_str_eq(diag0(), "t.json:1: expected a JSON object at the top level, got an array");
	done();
}

Test(util, json_unknown_and_duplicate_keys)
{
	static const char *const allowed[] = {"bandwidth_GBps", "latency_us", NULL};
	cr_assert(parse("{\"bandwith_GBps\": 1,\n \"latency_us\": 2,\n \"latency_us\": 3,\n"
	                " \"zzz\": 0}"));
	struct jv root;
	jv_root(&doc, &root);
	cr_assert_not(jv_keys(&root, allowed));
	cr_assert_eq(diags.count, 3);
	cr_assert_str_eq(diag0(), "t.json:1: bandwith_GBps: unknown key \"bandwith_GBps\" (did "
	                          "you mean \"bandwidth_GBps\"?)");
	char *s = diag_format(&diags.items[1]);
	cr_assert_str_eq(s, "t.json:3: latency_us: duplicate key \"latency_us\" (first at line 2)");
	free(s);
	s = diag_format(&diags.items[2]);
	cr_assert_str_eq(s, "t.json:4: zzz: unknown key \"zzz\" (allowed: \"bandwidth_GBps\", "
	                    "\"latency_us\")");
	free(s);
	done();
}

/* An object of many long keys (a scenario's training section has 40): the
 * unknown key's message names every one of them, the last included, by
 * hand: 48 keys "key_with_a_long_name_NN", each 24 characters quoted and
 * 2 of separator, past any fixed message buffer of 1,024. */
Test(util, json_unknown_key_lists_every_allowed_key)
{
	static char names[48][32];
	static const char *allowed[49];
	for (int i = 0; i < 48; i++) {
		snprintf(names[i], sizeof names[i], "key_with_a_long_name_%02d", i);
		allowed[i] = names[i];
	}
	allowed[48] = NULL;
	cr_assert(parse("{\"zzz\": 0}"));
	struct jv root;
	jv_root(&doc, &root);
	cr_assert_not(jv_keys(&root, allowed));
	cr_assert_eq(diags.count, 1);
	char *m = diag_format(&diags.items[0]);
	cr_assert_not_null(m);
	cr_assert(strstr(m, "(allowed: \"key_with_a_long_name_00\", "), "%s", m);
	cr_assert(strstr(m, ", \"key_with_a_long_name_47\")"), "the last key missing: %s", m);
	size_t want = strlen("t.json:1: zzz: unknown key \"zzz\" (allowed: ") + 48 * 25 + 47 * 2 + 1;
	cr_assert_eq(strlen(m), want, "%zu characters, %zu by hand", strlen(m), want);
	free(m);
	done();
}

Test(util, json_numbers_and_ranges)
{
	cr_assert(parse("{\"bw\": \"fast\", \"n\": 2.5, \"big\": 9223372036854775808,"
	                " \"z\": 0, \"f\": 1e999, \"ok\": 8}"));
	struct jv root, v;
	jv_root(&doc, &root);
	double x;
	int64_t i;
	cr_assert_not(jv_req_number(&root, "bw", JR_POSITIVE, &x));
	cr_assert_str_eq(diag0(), "t.json:1: bw: expected a positive number, got \"fast\"");
	jv_get(&root, "n", &v);
	cr_assert_not(jv_int(&v, JR_RANGE(1, 8), &i));
	jv_get(&root, "big", &v);
	cr_assert_not(jv_int(&v, JR_ANY, &i)); /* 2^63 does not fit int64 */
	jv_get(&root, "z", &v);
	cr_assert_not(jv_number(&v, JR_POSITIVE, &x));
	cr_assert(jv_number(&v, JR_NONNEG, &x));
	jv_get(&root, "f", &v);
	cr_assert_not(jv_number(&v, JR_ANY, &x)); /* infinity */
	cr_assert(jv_req_int(&root, "ok", JR_RANGE(1, 8), &i));
	cr_assert_eq(i, 8);
	cr_assert_not(jv_req_int(&root, "missing", JR_ANY, &i));
	char *s = diag_format(&diags.items[1]);
	cr_assert_str_eq(s, "t.json:1: n: expected an integer between 1 and 8, got 2.5");
	free(s);
	s = diag_format(&diags.items[diags.count - 1]);
	cr_assert_str_eq(s, "t.json:1: missing: missing required field");
	free(s);
	done();
}

Test(util, json_enum_and_dtype)
{
	static const char *const kinds[] = {"mesh", "switch"};
	cr_assert(parse("{\"k\": \"swich\", \"t\": \"float32\", \"u\": \"fp8\"}"));
	struct jv root, v;
	jv_root(&doc, &root);
	jv_get(&root, "k", &v);
	cr_assert_eq(jv_enum(&v, kinds, 2), -1);
	cr_assert_str_eq(diag0(), "t.json:1: k: expected one of \"mesh\" or \"switch\", got "
	                          "\"swich\" (did you mean \"switch\"?)");
	enum dtype t;
	jv_get(&root, "t", &v);
	cr_assert(jv_dtype(&v, &t));
	cr_assert_eq(t, DT_FP32);
	jv_get(&root, "u", &v);
	cr_assert_not(jv_dtype(&v, &t));
	cr_assert_eq(dtype_bytes(DT_BF16), 2);
	cr_assert_eq(dtype_parse("bfloat16"), DT_BF16);
	done();
}

Test(util, json_paths_quote_keys_with_dots)
{
	cr_assert(parse("{\"shard\": {\"dense1.matmul\": 3}}"));
	struct jv root, s, e;
	jv_root(&doc, &root);
	jv_get(&root, "shard", &s);
	jv_at(&s, 0, &e);
	cr_assert_str_eq(e.path, "shard[\"dense1.matmul\"]");
	cr_assert_str_eq(jv_key(&e), "dense1.matmul");
	done();
}

/* ------------------------------------------------------------------ misc */

Test(util, checked_arithmetic)
{
	int64_t r;
	cr_assert(util_mul_i64(INT64_C(3037000499), INT64_C(3037000499), &r));
	cr_assert_not(util_mul_i64(INT64_C(3037000500), INT64_C(3037000500), &r));
	cr_assert_not(util_mul_i64(INT64_C(1) << 62, 4, &r));
	cr_assert(util_add_i64(INT64_MAX - 1, 1, &r));
	cr_assert_not(util_add_i64(INT64_MAX, 1, &r));
}

Test(util, paths_and_edit_distance)
{
	struct arena *a = arena_new();
	cr_assert_str_eq(util_path_dir(a, "scenarios/ffn-8p.json"), "scenarios");
	cr_assert_str_eq(util_path_dir(a, "ffn.json"), ".");
	cr_assert_str_eq(util_path_join(a, "scenarios", "../models/ffn.json"), "models/ffn.json");
	cr_assert_str_eq(util_path_join(a, "a", "../../c"), "../c");
	cr_assert_str_eq(util_path_join(a, "x", "/abs/t.json"), "/abs/t.json");
	cr_assert_eq(util_edit_distance("kitten", "sitting"), 3);
	cr_assert_eq(util_edit_distance("", "abc"), 3);
	arena_free(a);
}

Test(util, json_iteration_is_in_order_with_paths)
{
	cr_assert(parse("{\"ops\": [\n{\"a\": 1},\n2,\n\"x\"],\n \"o\": {\"k\": 1, \"l\": 2}}"));
	struct jv root, arr, e, o;
	jv_root(&doc, &root);
	jv_get(&root, "ops", &arr);
	int n = 0;
	for (bool more = jv_first(&arr, &e); more; more = jv_next(&arr, &e)) {
		/* element i sits on line i + 2 */
		cr_assert_eq(e.index, n);
		cr_assert_eq(e.line, n + 2);
		char want[32];
		snprintf(want, sizeof want, "ops[%d]", n);
		cr_assert_str_eq(e.path, want);
		n++;
	}
	cr_assert_eq(n, 3);
	jv_get(&root, "o", &o);
	cr_assert(jv_first(&o, &e));
	cr_assert_str_eq(e.path, "o.k");
	cr_assert(jv_next(&o, &e));
	cr_assert_str_eq(e.path, "o.l");
	cr_assert_not(jv_next(&o, &e));
	struct jv empty;
	jv_get(&root, "missing", &empty);
	cr_assert_not(jv_first(&empty, &e));
	done();
}

Test(util, json_open_reports_unknown_keys_but_reads_on)
{
	static const char *const allowed[] = {"a", NULL};
	cr_assert(parse("{\"o\": {\"a\": 1, \"b\": 2}, \"n\": 3}"));
	struct jv root, o, n;
	jv_root(&doc, &root);
	jv_get(&root, "o", &o);
	cr_assert(jv_open(&o, allowed));
	cr_assert_eq(diags.errors, 1);
	jv_get(&root, "n", &n);
	cr_assert_not(jv_open(&n, allowed));
	cr_assert_str_eq(diag0(), "t.json:1: o.b: unknown key \"b\" (allowed: \"a\")");
	cr_assert_eq(diags.errors, 2);
	done();
}

Test(util, json_integer_ranges_print_in_full)
{
	cr_assert(parse("{\"d\": 0}"));
	struct jv root, d;
	int64_t x;
	jv_root(&doc, &root);
	jv_get(&root, "d", &d);
	cr_assert_not(jv_int(&d, JR_RANGE(1, 9007199254740992.0), &x));
	cr_assert_str_eq(diag0(), "t.json:1: d: expected an integer between 1 and "
	                          "9007199254740992, got 0");
	done();
}

Test(util, word_table_keys_compared_whole)
{
	struct word_table *t = word_table_new();
	cr_assert_not_null(t);
	int64_t a[3] = {1, 2, 3}, b[3] = {1, 2, 4};
	cr_expect_eq(word_table_find(t, a, 3), -1);
	cr_expect_eq(word_table_add(t, a, 3), 0);
	cr_expect_eq(word_table_add(t, b, 3), 1);
	cr_expect_eq(word_table_add(t, a, 2), 2);   /* a prefix is another key */
	cr_expect_eq(word_table_add(t, a, 3), 0);   /* there already */
	cr_expect_eq(word_table_find(t, a, 3), 0);
	cr_expect_eq(word_table_find(t, b, 3), 1);
	cr_expect_eq(word_table_find(t, a, 2), 2);
	cr_expect_eq(word_table_find(t, a, 1), -1);
	/* 5,000 keys: the table doubles several times and keeps them all */
	for (int64_t i = 0; i < 5000; i++) {
		int64_t w[2] = {i, -i};
		cr_assert_eq(word_table_add(t, w, 2), 3 + i);
	}
	for (int64_t i = 0; i < 5000; i++) {
		int64_t w[2] = {i, -i}, x[2] = {i, i + 10000};
		cr_expect_eq(word_table_find(t, w, 2), 3 + i);
		cr_expect_eq(word_table_find(t, x, 2), -1);
	}
	cr_expect_eq(word_table_count(t), 5003);
	word_table_free(t);
}

/* A key is written word by word into a buffer that grows: 3,000 words
 * (past the first 1,024) keep their order, and a room asked for is
 * writable at once. */
Test(util, word_buf_grows_and_keeps_its_words)
{
	struct word_buf b = {0};
	for (int64_t i = 0; i < 3000; i++)
		word_buf_add(&b, 7 * i);
	int64_t *w = word_buf_room(&b, 2000);
	cr_assert_not_null(w);
	w[1999] = -1;
	cr_expect(!b.oom);
	cr_assert_eq(b.n, 3000);
	cr_expect_geq(b.cap, 5000);
	for (int64_t i = 0; i < 3000; i++)
		cr_expect_eq(b.w[i], 7 * i);
	word_buf_free(&b);
	cr_expect_null(b.w);
	cr_expect_eq(b.n, 0);
	/* equal words, equal doubles: 0.5 is 0x3fe0000000000000; -0.0 and 0.0
	 * are different words */
	cr_expect_eq(util_double_bits(0.5), 0x3fe0000000000000);
	cr_expect_neq(util_double_bits(-0.0), util_double_bits(0.0));
}

Test(util, gcd_by_hand)
{
	cr_expect_eq(util_gcd64(12, 18), 6);
	cr_expect_eq(util_gcd64(18, 12), 6);
	cr_expect_eq(util_gcd64(7, 0), 7);
	cr_expect_eq(util_gcd64(0, 5), 5);
	cr_expect_eq(util_gcd64(4096, 384), 128);
	cr_expect_eq(util_gcd64(13, 7), 1);
}

/* Issue 42: only regular files are read, and only up to the cap; a device
 * is refused before a byte is read, a FIFO without waiting for a writer. */
Test(util, read_file_refuses_devices_fifos_and_huge_files)
{
	size_t len = 0;
	const char *err = NULL;
	cr_assert_null(util_read_file("/dev/zero", &len, &err));
	cr_assert_str_eq(err, "not a regular file (a device, FIFO or socket is never read)");
	err = NULL;
	cr_assert_null(util_read_file("/dev/urandom", &len, &err));
	cr_assert_not_null(err);

	char dir[] = "/tmp/shardlab-read-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	char fifo[64], big[64];
	snprintf(fifo, sizeof fifo, "%s/fifo", dir);
	snprintf(big, sizeof big, "%s/big.json", dir);
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	err = NULL;
	cr_assert_null(util_read_file(fifo, &len, &err));
	cr_assert_str_eq(err, "not a regular file (a device, FIFO or socket is never read)");

	/* A sparse file one byte over the cap (no disk used). */
	FILE *f = fopen(big, "w");
	cr_assert_not_null(f);
	cr_assert_eq(ftruncate(fileno(f), (off_t)UTIL_READ_MAX_BYTES + 1), 0);
	fclose(f);
	err = NULL;
	cr_assert_null(util_read_file(big, &len, &err));
	cr_assert_str_eq(err, "larger than the 64 MiB an input file may hold");
	/* At the cap it is read. */
	cr_assert_eq(truncate(big, (off_t)UTIL_READ_MAX_BYTES), 0);
	char *text = util_read_file(big, &len, &err);
	cr_assert_not_null(text);
	cr_assert_eq(len, (size_t)64 << 20);
	free(text);
	unlink(big);
	unlink(fifo);
	rmdir(dir);
}
