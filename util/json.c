/* json.c — user files through cJSON, with line numbers and typed reads.
 *
 * cJSON keeps no positions. After a successful parse we walk the text once
 * more in step with the tree (both are in document order) and record the
 * line of every value; for a member of an object we record the line of its
 * key, which is where a reader looks. Syntax errors get their line from the
 * offset where cJSON stopped. The position table is sorted by item address
 * and only ever searched, never iterated, so output stays deterministic.
 *
 * The jv_* accessors carry a JSON path ("links[3].bandwidth_gbps") and turn
 * every wrong type, missing field, unknown key or out-of-range number into
 * a diagnostic `file:line: path: message`.
 */
#include "util.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct json_pos {
	const cJSON *item;
	int line;
};

/* ------------------------------------------------------------- positions */

struct scan {
	const char *t;
	size_t i, len;
	int line;
	struct json_pos *pos;
	size_t npos, cap;
	bool oom;
	const char *file;
	struct diag_list *diags; /* where bad strings are reported */
	bool bad;                /* a string was not valid UTF-8 or held a NUL */
};

static void path_member(char *dst, const char *parent, const char *key);
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void path_set(char *dst, const char *fmt, ...);

/* Whether t[i] ends a line: "\n", "\r\n" (counted at its "\n"), or a
 * lone "\r", as files saved with old Mac line endings have them, which
 * would otherwise put every diagnostic on line 1. */
static bool line_end(const char *t, size_t len, size_t i)
{
	return t[i] == '\n' || (t[i] == '\r' && (i + 1 >= len || t[i + 1] != '\n'));
}

static void scan_adv(struct scan *s, size_t n)
{
	for (size_t k = 0; k < n && s->i < s->len; k++, s->i++)
		if (line_end(s->t, s->len, s->i))
			s->line++;
}

static void scan_ws(struct scan *s)
{
	while (s->i < s->len && (unsigned char)s->t[s->i] <= 32)
		scan_adv(s, 1);
}

static void scan_record(struct scan *s, const cJSON *item, int line)
{
	if (s->npos == s->cap) {
		size_t ncap = s->cap ? s->cap * 2 : 64;
		struct json_pos *n = realloc(s->pos, ncap * sizeof(*n));
		if (!n) {
			s->oom = true;
			return;
		}
		s->pos = n;
		s->cap = ncap;
	}
	s->pos[s->npos].item = item;
	s->pos[s->npos].line = line;
	s->npos++;
}

/* The control character an escape at p stands for ("\\n", "\\u001b",
 * "\\u009b"), or 0x100 when it stands for none. */
static unsigned escaped_control(const unsigned char *p, size_t n)
{
	switch (p[1]) {
	case 'b': return 0x08;
	case 't': return 0x09;
	case 'n': return 0x0a;
	case 'f': return 0x0c;
	case 'r': return 0x0d;
	case 'u': break;
	default: return 0x100;
	}
	if (n < 6)
		return 0x100;
	unsigned v = 0;
	for (int i = 2; i < 6; i++) {
		unsigned c = p[i], d;
		if (c >= '0' && c <= '9')
			d = c - '0';
		else if ((c | 0x20) >= 'a' && (c | 0x20) <= 'f')
			d = (c | 0x20) - 'a' + 10;
		else
			return 0x100;
		v = v * 16 + d;
	}
	return v < 0x20 || (v >= 0x7f && v <= 0x9f) ? v : 0x100;
}

/* A string at the cursor (a key when `key`), checked on the way: every
 * name shardlab reads is written back into reports (JSON among them), so
 * a string must be valid UTF-8 and must not hide a NUL behind "\u0000",
 * which would cut it short; nor may it hold a control character (C0, DEL
 * or C1), raw or escaped, which a terminal printing the name would obey
 * (an ESC sequence clears the screen, a newline splits a table's row).
 * `path` names the value (for a key, its object). */
static void scan_string(struct scan *s, const char *path, bool key)
{
	int line = s->line;
	const char *what = key ? "a key" : "a string";
	bool reported = false;
	scan_adv(s, 1); /* opening quote */
	while (s->i < s->len && s->t[s->i] != '"') {
		const unsigned char *p = (const unsigned char *)s->t + s->i;
		size_t step = 1;
		const char *why = NULL;
		char buf[96];
		unsigned ctl = 0x100; /* a control character found here, raw or escaped */
		if (*p == '\\') {
			step = 2;
			if (s->i + 6 <= s->len && !memcmp(p, "\\u0000", 6))
				why = "holds \"\\u0000\" (a NUL character, which would cut it short)";
			else if (s->i + 1 < s->len)
				ctl = escaped_control(p, s->len - s->i);
		} else if (*p < 0x20 || *p == 0x7f) {
			ctl = *p;
		} else if (*p >= 0x80) {
			step = util_utf8_len(p, s->len - s->i);
			if (!step) {
				step = 1;
				snprintf(buf, sizeof buf, "is not valid UTF-8 (byte 0x%02x)", *p);
				why = buf;
			} else if (step == 2 && p[0] == 0xc2 && p[1] < 0xa0) {
				ctl = p[1]; /* U+0080 to U+009F, the C1 controls */
			}
		}
		if (!why && ctl < 0x100) {
			snprintf(buf, sizeof buf, "holds the control character 0x%02x (a terminal "
			         "would obey it)", ctl);
			why = buf;
		}
		if (why && !reported && s->diags) {
			diag_add(s->diags, DIAG_ERROR, s->file, line, *path ? path : NULL, "%s %s", what,
			         why);
			reported = true;
			s->bad = true;
		}
		scan_adv(s, step);
	}
	scan_adv(s, 1);
}

/* The value at the cursor belongs to `item`; `record` is false when the
 * caller already recorded the key's line. */
static void scan_value(struct scan *s, const cJSON *item, bool record, const char *path)
{
	scan_ws(s);
	if (record)
		scan_record(s, item, s->line);
	if (s->i >= s->len)
		return;
	char c = s->t[s->i];
	if (c == '{' || c == '[') {
		bool obj = c == '{';
		scan_adv(s, 1);
		int index = 0;
		char sub[JSON_PATH_MAX];
		for (const cJSON *ch = item->child; ch; ch = ch->next, index++) {
			scan_ws(s);
			if (obj) {
				scan_record(s, ch, s->line);
				size_t bad = s->diags ? s->diags->errors : 0;
				scan_string(s, path, true);
				if (s->diags && s->diags->errors > bad)
					path_set(sub, "%s", path); /* not the bad key's bytes */
				else
					path_member(sub, path, ch->string);
				scan_ws(s);
				scan_adv(s, 1); /* ':' */
				scan_value(s, ch, false, sub);
			} else {
				path_set(sub, "%s[%d]", path, index);
				scan_value(s, ch, true, sub);
			}
			scan_ws(s);
			if (s->i < s->len && s->t[s->i] == ',')
				scan_adv(s, 1);
		}
		scan_ws(s);
		scan_adv(s, 1); /* closing bracket */
	} else if (c == '"') {
		scan_string(s, path, false);
	} else if (c == 't' || c == 'n') {
		scan_adv(s, 4);
	} else if (c == 'f') {
		scan_adv(s, 5);
	} else {
		while (s->i < s->len && strchr("0123456789+-eE.", s->t[s->i]) && s->t[s->i])
			scan_adv(s, 1);
	}
}

static int pos_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct json_pos *)a)->item;
	uintptr_t y = (uintptr_t)((const struct json_pos *)b)->item;
	return x < y ? -1 : x > y;
}

int json_doc_line(const struct json_doc *doc, const cJSON *item)
{
	if (!doc || !item || !doc->pos)
		return 0;
	struct json_pos key = {item, 0};
	const struct json_pos *p =
		bsearch(&key, doc->pos, doc->npos, sizeof(*doc->pos), pos_cmp);
	return p ? p->line : 0;
}

/* ------------------------------------------------------------- documents */

static int line_at(const char *t, size_t len, size_t off)
{
	int line = 1;
	for (size_t i = 0; i < off; i++)
		if (line_end(t, len, i))
			line++;
	return line;
}

/* Deepest nesting of arrays/objects reached before `end`, strings skipped. */
static int max_depth(const char *t, size_t end)
{
	int depth = 0, best = 0;
	bool in_str = false;
	for (size_t i = 0; i < end; i++) {
		char c = t[i];
		if (in_str) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_str = false;
		} else if (c == '"') {
			in_str = true;
		} else if (c == '[' || c == '{') {
			if (++depth > best)
				best = depth;
		} else if (c == ']' || c == '}') {
			depth--;
		}
	}
	return best;
}

/* Printable excerpt of the text at `off` for syntax messages. */
static void excerpt(const char *t, size_t len, size_t off, char *buf, size_t size)
{
	size_t o = 0;
	for (size_t i = off; i < len && i < off + 12 && o + 5 < size; i++) {
		unsigned char c = (unsigned char)t[i];
		if (c == '\n' || c == '\r')
			break;
		if (c >= 32 && c < 127)
			buf[o++] = (char)c;
		else
			o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
	}
	buf[o] = '\0';
}

bool json_doc_parse(struct json_doc *doc, const char *file, const char *text, size_t len,
                    struct diag_list *diags)
{
	memset(doc, 0, sizeof(*doc));
	doc->file = file;
	doc->diags = diags;
	doc->text = malloc(len + 1);
	if (!doc->text) {
		diag_add(diags, DIAG_ERROR, file, 0, NULL, "out of memory reading the file");
		return false;
	}
	memcpy(doc->text, text, len);
	doc->text[len] = '\0';
	doc->len = len;

	const char *nul = memchr(text, '\0', len);
	if (nul) {
		diag_add(diags, DIAG_ERROR, file, line_at(text, len, (size_t)(nul - text)), NULL,
		         "not a text file: NUL byte at offset %zu", (size_t)(nul - text));
		return false;
	}
	size_t first = 0;
	while (first < len && (unsigned char)text[first] <= 32)
		first++;
	if (first == len) {
		diag_add(diags, DIAG_ERROR, file, line_at(text, len, len), NULL,
		         "the file is empty (expected a JSON object)");
		return false;
	}

	const char *end = NULL;
	doc->root = cJSON_ParseWithLengthOpts(doc->text, len, &end, 0);
	if (!doc->root) {
		size_t off = end ? (size_t)(end - doc->text) : 0;
		if (off > len)
			off = len;
		if (max_depth(doc->text, off + 1) > CJSON_NESTING_LIMIT) {
			diag_add(diags, DIAG_ERROR, file, line_at(doc->text, len, off), NULL,
			         "syntax error: arrays or objects nested deeper than %d levels",
			         CJSON_NESTING_LIMIT);
		} else if (off + 1 >= len && !strchr("]}", doc->text[off])) {
			diag_add(diags, DIAG_ERROR, file, line_at(doc->text, len, off), NULL,
			         "syntax error: unexpected end of file");
		} else {
			char ex[64];
			excerpt(doc->text, len, off, ex, sizeof ex);
			diag_add(diags, DIAG_ERROR, file, line_at(doc->text, len, off), NULL,
			         "syntax error at '%s'", ex);
		}
		return false;
	}
	size_t off = (size_t)(end - doc->text);
	while (off < len && (unsigned char)doc->text[off] <= 32)
		off++;
	if (off < len) {
		char ex[64];
		excerpt(doc->text, len, off, ex, sizeof ex);
		diag_add(diags, DIAG_ERROR, file, line_at(doc->text, len, off), NULL,
		         "syntax error: unexpected '%s' after the end of the JSON value", ex);
		cJSON_Delete(doc->root);
		doc->root = NULL;
		return false;
	}

	struct scan s = {.t = doc->text, .len = len, .line = 1, .file = file, .diags = diags};
	if (len >= 3 && !memcmp(doc->text, "\xef\xbb\xbf", 3))
		s.i = 3;
	scan_value(&s, doc->root, true, "");
	if (s.bad) {
		free(s.pos);
		cJSON_Delete(doc->root);
		doc->root = NULL;
		return false;
	}
	if (s.oom) {
		free(s.pos);
		diag_add(diags, DIAG_ERROR, file, 0, NULL, "out of memory reading the file");
		return false;
	}
	qsort(s.pos, s.npos, sizeof(*s.pos), pos_cmp);
	doc->pos = s.pos;
	doc->npos = s.npos;
	return true;
}

bool json_doc_load(struct json_doc *doc, const char *path, struct diag_list *diags)
{
	size_t len = 0;
	const char *err = NULL;
	char *text = util_read_file(path, &len, &err);
	if (!text) {
		memset(doc, 0, sizeof(*doc));
		doc->file = path;
		doc->diags = diags;
		diag_add(diags, DIAG_ERROR, path, 0, NULL, "cannot read the file: %s", err);
		return false;
	}
	bool ok = json_doc_parse(doc, path, text, len, diags);
	free(text);
	return ok;
}

void json_doc_free(struct json_doc *doc)
{
	if (!doc)
		return;
	cJSON_Delete(doc->root);
	free(doc->text);
	free(doc->pos);
	doc->root = NULL;
	doc->text = NULL;
	doc->pos = NULL;
}

/* ----------------------------------------------------------------- paths */

static bool is_ident(const char *k)
{
	if (!(isalpha((unsigned char)*k) || *k == '_'))
		return false;
	for (; *k; k++)
		if (!(isalnum((unsigned char)*k) || *k == '_'))
			return false;
	return true;
}

/* Paths longer than JSON_PATH_MAX are cut; they stay readable. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void path_set(char *dst, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(dst, JSON_PATH_MAX, fmt, ap);
	va_end(ap);
}

static void path_member(char *dst, const char *parent, const char *key)
{
	if (is_ident(key))
		path_set(dst, "%s%s%s", parent, *parent ? "." : "", key);
	else
		path_set(dst, "%s[\"%s\"]", parent, key);
}

/* ------------------------------------------------------------- accessors */

bool jv_root(struct json_doc *doc, struct jv *out)
{
	memset(out, 0, sizeof(*out));
	out->doc = doc;
	out->node = doc->root;
	out->line = json_doc_line(doc, doc->root);
	if (!doc->root)
		return false;
	if (!cJSON_IsObject(doc->root)) {
		char b[64];
		diag_add(doc->diags, DIAG_ERROR, doc->file, out->line, NULL,
		         "expected a JSON object at the top level, got %s", jv_describe(out, b, sizeof b));
		return false;
	}
	return true;
}

#if defined(__GNUC__)
__attribute__((format(printf, 3, 0)))
#endif
static void jv_report(const struct jv *v, enum diag_severity sev, const char *fmt, va_list ap)
{
	diag_addv(v->doc->diags, sev, v->doc->file, v->line, v->path, fmt, ap);
}

void jv_error(const struct jv *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	jv_report(v, DIAG_ERROR, fmt, ap);
	va_end(ap);
}

void jv_warning(const struct jv *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	jv_report(v, DIAG_WARNING, fmt, ap);
	va_end(ap);
}

void jv_note(const struct jv *v, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	jv_report(v, DIAG_NOTE, fmt, ap);
	va_end(ap);
}

void jv_named_here(const struct jv *v, size_t from)
{
	const struct diag_list *d = v->doc->diags;
	for (size_t i = from; i < d->count; i++) {
		const struct diag *g = &d->items[i];
		if (g->severity == DIAG_ERROR && g->file && v->doc->file &&
		    strcmp(g->file, v->doc->file)) {
			jv_note(v, "the file named here");
			return;
		}
	}
}

const char *jv_describe(const struct jv *v, char *buf, size_t size)
{
	const cJSON *n = v->node;
	if (!n)
		snprintf(buf, size, "nothing");
	else if (cJSON_IsString(n)) {
		size_t o = 0;
		buf[o++] = '"';
		const char *s = n->valuestring;
		size_t k = 0;
		for (; s[k] && o + 8 < size && k < 40; k++) {
			unsigned char c = (unsigned char)s[k];
			if (c == '"' || c == '\\') {
				buf[o++] = '\\';
				buf[o++] = (char)c;
			} else if (c < 32 || c == 127) {
				o += (size_t)snprintf(buf + o, size - o, "\\x%02x", c);
			} else {
				buf[o++] = (char)c;
			}
		}
		if (s[k] && o + 4 < size) {
			memcpy(buf + o, "...", 3);
			o += 3;
		}
		buf[o++] = '"';
		buf[o] = '\0';
	} else if (cJSON_IsNumber(n))
		snprintf(buf, size, "%.15g", n->valuedouble);
	else if (cJSON_IsBool(n))
		snprintf(buf, size, "%s", cJSON_IsTrue(n) ? "true" : "false");
	else if (cJSON_IsNull(n))
		snprintf(buf, size, "null");
	else if (cJSON_IsArray(n))
		snprintf(buf, size, "an array");
	else if (cJSON_IsObject(n))
		snprintf(buf, size, "an object");
	else
		snprintf(buf, size, "an invalid value");
	return buf;
}

static void expected(const struct jv *v, const char *what)
{
	char b[96];
	jv_error(v, "expected %s, got %s", what, jv_describe(v, b, sizeof b));
}

bool jv_keys(const struct jv *obj, const char *const allowed[])
{
	if (!jv_is_object(obj))
		return false;
	bool ok = true;
	for (const cJSON *ch = obj->node->child; ch; ch = ch->next) {
		struct jv m = {.doc = obj->doc, .node = ch, .line = json_doc_line(obj->doc, ch)};
		path_member(m.path, obj->path, ch->string);
		for (const cJSON *p = obj->node->child; p != ch; p = p->next) {
			if (!strcmp(p->string, ch->string)) {
				jv_error(&m, "duplicate key \"%s\" (first at line %d)", ch->string,
				         json_doc_line(obj->doc, p));
				ok = false;
				break;
			}
		}
		bool known = false;
		const char *best = NULL;
		int best_d = 1000;
		for (size_t i = 0; allowed[i]; i++) {
			if (!strcmp(allowed[i], ch->string)) {
				known = true;
				break;
			}
			int d = util_edit_distance(allowed[i], ch->string);
			if (d < best_d) {
				best_d = d;
				best = allowed[i];
			}
		}
		if (known)
			continue;
		ok = false;
		size_t kl = strlen(ch->string);
		/* Close, but not a wholesale replacement of a short key. */
		if (best && best_d < (int)kl && best_d <= (kl < 6 ? 1 : kl < 12 ? 2 : 3))
			jv_error(&m, "unknown key \"%s\" (did you mean \"%s\"?)", ch->string, best);
		else {
			size_t len = 1;
			for (size_t i = 0; allowed[i]; i++)
				len += strlen(allowed[i]) + 4;
			char *list = malloc(len);
			if (!list) {
				jv_error(&m, "unknown key \"%s\"", ch->string);
				continue;
			}
			size_t o = 0;
			list[0] = '\0';
			for (size_t i = 0; allowed[i]; i++)
				o += (size_t)snprintf(list + o, len - o, "%s\"%s\"", i ? ", " : "",
				                      allowed[i]);
			jv_error(&m, "unknown key \"%s\" (allowed: %s)", ch->string, list);
			free(list);
		}
	}
	return ok;
}

bool jv_open(const struct jv *v, const char *const allowed[])
{
	if (!jv_is_object(v))
		return false;
	jv_keys(v, allowed);
	return true;
}

bool jv_get(const struct jv *obj, const char *key, struct jv *out)
{
	memset(out, 0, sizeof(*out));
	out->doc = obj->doc;
	out->index = -1;
	out->line = obj->line;
	path_member(out->path, obj->path, key);
	if (!obj->node || !cJSON_IsObject(obj->node))
		return false;
	const cJSON *n = cJSON_GetObjectItemCaseSensitive(obj->node, key);
	if (!n)
		return false;
	out->node = n;
	out->line = json_doc_line(obj->doc, n);
	return true;
}

bool jv_need(const struct jv *obj, const char *key, struct jv *out)
{
	if (jv_get(obj, key, out))
		return true;
	if (obj->node && cJSON_IsObject(obj->node))
		jv_error(out, "missing required field");
	return false;
}

int jv_len(const struct jv *arr)
{
	return arr->node ? cJSON_GetArraySize(arr->node) : 0;
}

/* Fills `out` for child `n` (at position i) of `arr`. */
static void child_of(const struct jv *arr, const cJSON *n, int i, struct jv *out)
{
	memset(out, 0, sizeof(*out));
	out->doc = arr->doc;
	out->node = n;
	out->index = i;
	out->line = n ? json_doc_line(arr->doc, n) : arr->line;
	if (n && cJSON_IsObject(arr->node))
		path_member(out->path, arr->path, n->string);
	else
		path_set(out->path, "%s[%d]", arr->path, i);
}

void jv_at(const struct jv *arr, int i, struct jv *out)
{
	const cJSON *n = arr->node ? arr->node->child : NULL;
	for (int k = 0; n && k < i; k++)
		n = n->next;
	child_of(arr, n, i, out);
}

bool jv_first(const struct jv *arr, struct jv *out)
{
	const cJSON *n = arr->node ? arr->node->child : NULL;
	child_of(arr, n, 0, out);
	return n != NULL;
}

bool jv_next(const struct jv *arr, struct jv *cur)
{
	const cJSON *n = cur->node ? cur->node->next : NULL;
	child_of(arr, n, cur->index + 1, cur);
	return n != NULL;
}

const char *jv_key(const struct jv *v)
{
	return v->node ? v->node->string : NULL;
}

bool jv_is_object(const struct jv *v)
{
	if (v->node && cJSON_IsObject(v->node))
		return true;
	expected(v, "an object");
	return false;
}

bool jv_is_array(const struct jv *v, int min_len, int max_len)
{
	if (!v->node || !cJSON_IsArray(v->node)) {
		expected(v, "an array");
		return false;
	}
	int n = cJSON_GetArraySize(v->node);
	if (n < min_len || n > max_len) {
		if (min_len == max_len)
			jv_error(v, "expected an array of %d element%s, got %d", min_len,
			         min_len == 1 ? "" : "s", n);
		else if (max_len == 0x7fffffff)
			jv_error(v, "expected an array of at least %d element%s, got %d", min_len,
			         min_len == 1 ? "" : "s", n);
		else
			jv_error(v, "expected an array of %d to %d elements, got %d", min_len, max_len, n);
		return false;
	}
	return true;
}

/* A bound as a reader writes it: integers in full, others as %g. */
static const char *bound(double x, bool integer, char *buf, size_t size)
{
	if (integer && x > -1e18 && x < 1e18)
		snprintf(buf, size, "%.0f", x);
	else
		snprintf(buf, size, "%.15g", x);
	return buf;
}

static void range_text(struct jrange r, bool integer, char *buf, size_t size)
{
	const char *what = integer ? "an integer" : "a number";
	bool lo = r.lo > -1e307, hi = r.hi < 1e307;
	char l[32], h[32];
	bound(r.lo, integer, l, sizeof l);
	bound(r.hi, integer, h, sizeof h);
	if (r.lo == 0 && r.lo_open && !hi)
		snprintf(buf, size, "a positive %s", integer ? "integer" : "number");
	else if (r.lo == 0 && !r.lo_open && !hi)
		snprintf(buf, size, "%s >= 0", what);
	else if (lo && hi && r.lo_open)
		snprintf(buf, size, "%s in (%s, %s]", what, l, h);
	else if (lo && hi)
		snprintf(buf, size, "%s between %s and %s", what, l, h);
	else if (lo)
		snprintf(buf, size, "%s %s %s", what, r.lo_open ? ">" : ">=", l);
	else if (hi)
		snprintf(buf, size, "%s <= %s", what, h);
	else
		snprintf(buf, size, "%s", what);
}

static bool in_range(double x, struct jrange r)
{
	return (r.lo_open ? x > r.lo : x >= r.lo) && x <= r.hi;
}

bool jv_number(const struct jv *v, struct jrange r, double *out)
{
	char want[96];
	range_text(r, false, want, sizeof want);
	if (!v->node || !cJSON_IsNumber(v->node) || !isfinite(v->node->valuedouble) ||
	    !in_range(v->node->valuedouble, r)) {
		expected(v, want);
		return false;
	}
	*out = v->node->valuedouble;
	return true;
}

bool jv_int(const struct jv *v, struct jrange r, int64_t *out)
{
	char want[96];
	range_text(r, true, want, sizeof want);
	double d = v->node && cJSON_IsNumber(v->node) ? v->node->valuedouble : NAN;
	/* 2^63 is not representable in int64_t: compare strictly. */
	if (!isfinite(d) || d != floor(d) || d >= 9223372036854775808.0 ||
	    d < -9223372036854775808.0 || !in_range(d, r)) {
		expected(v, want);
		return false;
	}
	*out = (int64_t)d;
	return true;
}

bool jv_bool(const struct jv *v, bool *out)
{
	if (!v->node || !cJSON_IsBool(v->node)) {
		expected(v, "true or false");
		return false;
	}
	*out = cJSON_IsTrue(v->node);
	return true;
}

bool jv_string(const struct jv *v, const char **out)
{
	if (!v->node || !cJSON_IsString(v->node) || !v->node->valuestring[0]) {
		expected(v, "a non-empty string");
		return false;
	}
	*out = v->node->valuestring;
	return true;
}

int jv_enum(const struct jv *v, const char *const names[], int n)
{
	char list[512] = "";
	size_t o = 0;
	for (int i = 0; i < n && o + 64 < sizeof list; i++)
		o += (size_t)snprintf(list + o, sizeof list - o, "%s\"%s\"",
		                      i == 0 ? "" : i == n - 1 ? " or " : ", ", names[i]);
	if (!v->node || !cJSON_IsString(v->node)) {
		char want[600];
		snprintf(want, sizeof want, "one of %s", list);
		expected(v, want);
		return -1;
	}
	const char *s = v->node->valuestring;
	int best = -1, best_d = 1000;
	for (int i = 0; i < n; i++) {
		if (!strcmp(names[i], s))
			return i;
		int d = util_edit_distance(names[i], s);
		if (d < best_d) {
			best_d = d;
			best = i;
		}
	}
	char got[96];
	jv_describe(v, got, sizeof got);
	if (best >= 0 && best_d <= 2 && strlen(s) > 2)
		jv_error(v, "expected one of %s, got %s (did you mean \"%s\"?)", list, got, names[best]);
	else
		jv_error(v, "expected one of %s, got %s", list, got);
	return -1;
}

bool jv_opt_number(const struct jv *obj, const char *key, struct jrange r, double dflt, double *out)
{
	struct jv m;
	*out = dflt; /* also on failure, so callers can go on checking */
	if (!jv_get(obj, key, &m))
		return true;
	return jv_number(&m, r, out);
}

bool jv_opt_int(const struct jv *obj, const char *key, struct jrange r, int64_t dflt, int64_t *out)
{
	struct jv m;
	*out = dflt; /* also on failure, so callers can go on checking */
	if (!jv_get(obj, key, &m))
		return true;
	return jv_int(&m, r, out);
}

bool jv_opt_bool(const struct jv *obj, const char *key, bool dflt, bool *out)
{
	struct jv m;
	*out = dflt; /* also on failure, so callers can go on checking */
	if (!jv_get(obj, key, &m))
		return true;
	return jv_bool(&m, out);
}

bool jv_req_number(const struct jv *obj, const char *key, struct jrange r, double *out)
{
	struct jv m;
	return jv_need(obj, key, &m) && jv_number(&m, r, out);
}

bool jv_req_int(const struct jv *obj, const char *key, struct jrange r, int64_t *out)
{
	struct jv m;
	return jv_need(obj, key, &m) && jv_int(&m, r, out);
}

bool jv_req_string(const struct jv *obj, const char *key, const char **out)
{
	struct jv m;
	return jv_need(obj, key, &m) && jv_string(&m, out);
}

const char *jv_format(const struct jv *root, int64_t *version)
{
	const char *fmt = NULL;
	if (!jv_req_string(root, "format", &fmt))
		return NULL;
	if (!jv_req_int(root, "version", JR_RANGE(1, 1000000), version))
		return NULL;
	return fmt;
}

bool jv_header(const struct jv *root, const char *format, int version)
{
	int64_t found = 0;
	struct jv v;
	const char *fmt = jv_format(root, &found);
	if (!fmt)
		return false;
	if (strcmp(fmt, format)) {
		jv_get(root, "format", &v);
		jv_error(&v, "expected \"%s\", got \"%s\"", format, fmt);
		return false;
	}
	if (found != version) {
		jv_get(root, "version", &v);
		jv_error(&v, "unsupported version %lld (this shardlab reads version %d)",
		         (long long)found, version);
		return false;
	}
	return true;
}
