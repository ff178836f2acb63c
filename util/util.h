/* util.h — the small pieces every shardlab module stands on.
 *
 * - arena: one allocation region per loaded scenario; everything loaded
 *   (topology, graph, plans, strings) lives in it and one call frees it all.
 * - diag: diagnostics collected into a caller-owned list, formatted as
 *   `file:line: json.path: message`.
 * - json: reading user files with cJSON, with the positions cJSON does not
 *   keep (line of every value), and typed accessors that report unknown
 *   keys, wrong types, missing fields and out-of-range numbers.
 * - SL_ASSERT: always-on assertion for programmer errors.
 *
 * Library code never prints or exits; only cli/ talks to the terminal.
 */
#ifndef SHARDLAB_UTIL_H
#define SHARDLAB_UTIL_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct cJSON;
struct arena;

/* ---------------------------------------------------------------- assert */

void util_assert_fail(const char *file, int line, const char *expr)
#if defined(__GNUC__)
	__attribute__((noreturn))
#endif
	;
#define SL_ASSERT(x) \
	do { if (!(x)) util_assert_fail(__FILE__, __LINE__, #x); } while (0)

#define SL_COUNTOF(a) (sizeof(a) / sizeof((a)[0]))

/* Overflow-checked int64 arithmetic: return false on overflow. */
bool util_mul_i64(int64_t a, int64_t b, int64_t *out);
/* Greatest common divisor of a, b >= 0 (gcd(a, 0) = a). */
int64_t util_gcd64(int64_t a, int64_t b);
/* The median of v[n] (n >= 1), which it sorts in place. */
double util_median(double *v, int n);
/* A hash of n 64-bit words (FNV-1a over words, then a shift so that the
 * low bits depend on every word), for tables keyed by such words. */
uint64_t util_hash_words(const int64_t *w, size_t n);

/* A table keyed by strings of 64-bit words (words.c), compared whole. A
 * key's entry is its index in order of addition (0, 1, ...); the caller
 * keeps the values. */
struct word_table;
struct word_table *word_table_new(void);  /* NULL when out of memory */
void word_table_free(struct word_table *t);
/* The index of key w[0..n) (n > 0), or -1 when it is not there. */
int64_t word_table_find(const struct word_table *t, const int64_t *w, size_t n);
/* Adds the key (its index when it was there already); -1 when out of
 * memory (nothing added). */
int64_t word_table_add(struct word_table *t, const int64_t *w, size_t n);
/* The keys held (the next key's index). */
int64_t word_table_count(const struct word_table *t);

/* A key being written (words.c): words w[0..n) in a buffer that grows.
 * A failed allocation sets oom and keeps the buffer as it was; zero
 * initialised is empty. */
struct word_buf {
	int64_t *w;
	size_t n, cap;
	bool oom;
};
/* Room for `more` words after w[n]: their address, or NULL (oom set). */
int64_t *word_buf_room(struct word_buf *b, size_t more);
void word_buf_add(struct word_buf *b, int64_t v);
void word_buf_free(struct word_buf *b);
/* A double's bits as a word, for keys: equal words, equal doubles. */
int64_t util_double_bits(double x);
bool util_add_i64(int64_t a, int64_t b, int64_t *out);

/* Read a whole file into a NUL-terminated malloc'd buffer. Returns NULL and
 * sets *err (a static string from strerror or our own) on failure. Only a
 * regular file of at most UTIL_READ_MAX_BYTES is read: a device
 * (/dev/zero, /dev/urandom), FIFO or socket is refused before a byte is
 * read, and so is a larger file (docs/robustness.md, "Limits"). */
#define UTIL_READ_MAX_BYTES (64 << 20)
#define UTIL_READ_MAX_TEXT "64 MiB"
char *util_read_file(const char *path, size_t *len_out, const char **err);

/* Directory part of a path ("a/b/c.json" -> "a/b", "c.json" -> ".") and
 * a path resolved against a directory (absolute paths are kept). */
char *util_path_dir(struct arena *a, const char *path);
char *util_path_join(struct arena *a, const char *dir, const char *rel);
/* The path of `to` (an existing file) relative to the folder from_dir, by
 * their real paths ("../topologies/x.json"); `to` as given when either
 * cannot be resolved. */
char *util_path_relative(struct arena *a, const char *from_dir, const char *to);

/* Edit distance, for "did you mean" suggestions. */
int util_edit_distance(const char *a, const char *b);

/* Length of the UTF-8 sequence at p (at most n bytes there), 0 when it is
 * not valid (RFC 3629: no overlong forms, surrogates or code points above
 * U+10FFFF). */
size_t util_utf8_len(const unsigned char *p, size_t n);

/* ----------------------------------------------------------------- arena */

struct arena;

/* NULL when out of memory. */
struct arena *arena_new(void);
/* Frees every allocation made from the arena. arena_free(NULL) is a no-op. */
void arena_free(struct arena *a);
/* Zeroed memory aligned for any type; NULL when out of memory or when
 * n * size overflows. */
void *arena_alloc(struct arena *a, size_t size);
void *arena_calloc(struct arena *a, size_t n, size_t size);
/* Not zeroed: for arrays the caller writes in full before reading them. */
void *arena_alloc_raw(struct arena *a, size_t size);
/* A copy of `size` bytes of src. */
void *arena_dup(struct arena *a, const void *src, size_t size);
/* Grows an array held in the arena (old contents copied, old block kept
 * until the arena is freed). */
void *arena_grow(struct arena *a, void *old, size_t old_n, size_t new_n, size_t size);
char *arena_strdup(struct arena *a, const char *s);
char *arena_strndup(struct arena *a, const char *s, size_t n);
char *arena_printf(struct arena *a, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
/* Bytes handed out so far (for benchmarks and tests). */
size_t arena_used(const struct arena *a);

/* ----------------------------------------------------------- diagnostics */

enum diag_severity { DIAG_ERROR, DIAG_WARNING, DIAG_NOTE };

struct diag {
	enum diag_severity severity;
	char *file;  /* may be NULL */
	int line;    /* 0: no line */
	char *path;  /* JSON path such as "links[3].bandwidth_gbps"; may be NULL */
	char *msg;
};

/* Caller-owned list of diagnostics. Zero-initialise, or diag_list_init. */
struct diag_list {
	struct diag *items;
	size_t count, cap;
	size_t errors;  /* count of DIAG_ERROR items */
	size_t dropped; /* diagnostics not kept after DIAG_LIST_MAX */
	bool oom;       /* an allocation failed while recording */
};

#define DIAG_LIST_MAX 200

void diag_list_init(struct diag_list *l);
void diag_list_free(struct diag_list *l);
void diag_add(struct diag_list *l, enum diag_severity sev, const char *file, int line,
              const char *path, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 6, 7)))
#endif
	;
void diag_addv(struct diag_list *l, enum diag_severity sev, const char *file, int line,
               const char *path, const char *fmt, va_list ap)
#if defined(__GNUC__)
	__attribute__((format(printf, 6, 0)))
#endif
	;
/* "file:line: path: message", with "warning: " / "note: " before the
 * message for those severities. Returns a malloc'd string (NULL on OOM). */
char *diag_format(const struct diag *d);
/* The first error of a list, formatted, in the arena: "out of memory" when
 * the list ran out, "failed without a diagnostic" when it has none. */
const char *diag_first_error(struct arena *a, const struct diag_list *l);

/* ------------------------------------------------------------------ json */

/* A parsed user file: its text, the cJSON tree and the line of every value
 * (for a member of an object, the line of its key). */
struct json_doc {
	const char *file;        /* display path, as given by the user */
	char *text;
	size_t len;
	struct cJSON *root;      /* NULL when the file did not parse */
	struct json_pos *pos;    /* sorted by item address, for lookups only */
	size_t npos;
	struct diag_list *diags; /* where every diagnostic about this file goes */
};

/* Read and parse a file. On failure (unreadable, not text, syntax error)
 * records a diagnostic with the line and returns false; the doc is still
 * safe to json_doc_free. */
bool json_doc_load(struct json_doc *doc, const char *path, struct diag_list *diags);
/* The same from text in memory (copied). */
bool json_doc_parse(struct json_doc *doc, const char *file, const char *text, size_t len,
                    struct diag_list *diags);
void json_doc_free(struct json_doc *doc);
/* Line of an item of this doc's tree (1-based), 0 if unknown. */
int json_doc_line(const struct json_doc *doc, const struct cJSON *item);

#define JSON_PATH_MAX 192

/* A value inside a document together with its JSON path, for reading a
 * file field by field with diagnostics that say where. `node` is NULL for
 * an absent optional member. */
struct jv {
	struct json_doc *doc;
	const struct cJSON *node;
	int line;
	int index;  /* position in the parent array or object; -1 for jv_get */
	char path[JSON_PATH_MAX];
};

/* Numeric range for jv_number / jv_int. */
struct jrange {
	double lo, hi;
	bool lo_open; /* lo < x rather than lo <= x */
};
#define JR_ANY       ((struct jrange){-1e308, 1e308, false})
#define JR_POSITIVE  ((struct jrange){0, 1e308, true})
#define JR_NONNEG    ((struct jrange){0, 1e308, false})
#define JR_FRACTION  ((struct jrange){0, 1, true})   /* 0 < x <= 1 */
#define JR_RANGE(a, b) ((struct jrange){(a), (b), false})

/* The document root; reports when it is not an object. */
bool jv_root(struct json_doc *doc, struct jv *out);
/* An error at this value (its line and path). */
void jv_error(const struct jv *v, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
void jv_warning(const struct jv *v, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
void jv_note(const struct jv *v, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
/* After loading the file the string v names: when that added errors in
 * another file than v's (the diagnostics from item `from` on), a note at
 * v, so that "x.json: cannot read the file" says which reference it was. */
void jv_named_here(const struct jv *v, size_t from);

/* Checks `obj` is an object whose keys are all in `allowed` (NULL-ended);
 * reports each unknown key (with a suggestion when one is close) and each
 * duplicate key. Returns false when anything was reported. */
bool jv_keys(const struct jv *obj, const char *const allowed[]);

/* An object whose keys are checked as jv_keys does; false (after a
 * diagnostic) only when `v` is not an object, so that the caller goes on
 * reading the known fields after reporting unknown ones. */
bool jv_open(const struct jv *v, const char *const allowed[]);

/* Member of an object. jv_get: false when absent (no diagnostic; out->node
 * is NULL and out->path names the member). jv_need: reports a missing
 * required field. */
bool jv_get(const struct jv *obj, const char *key, struct jv *out);
bool jv_need(const struct jv *obj, const char *key, struct jv *out);
/* Element of an array, or member of an object, by position (no checks:
 * i < jv_len). O(i): walk long arrays with jv_first/jv_next instead:
 *   for (bool more = jv_first(&arr, &e); more; more = jv_next(&arr, &e)) */
void jv_at(const struct jv *arr, int i, struct jv *out);
bool jv_first(const struct jv *arr, struct jv *out);
bool jv_next(const struct jv *arr, struct jv *cur);
int jv_len(const struct jv *arr);
/* Key of a member reached through jv_at on an object. */
const char *jv_key(const struct jv *v);

/* Typed reads: each reports a wrong type or an out-of-range value with
 * "expected ..., got ..." and returns false. */
bool jv_is_object(const struct jv *v);
bool jv_is_array(const struct jv *v, int min_len, int max_len);
bool jv_number(const struct jv *v, struct jrange r, double *out);
bool jv_int(const struct jv *v, struct jrange r, int64_t *out);
bool jv_bool(const struct jv *v, bool *out);
/* Non-empty string; the result points into the cJSON tree (copy it into an
 * arena if it must outlive the doc). */
bool jv_string(const struct jv *v, const char **out);
/* One of names[0..n-1]; reports the allowed values otherwise. Returns the
 * index, or -1. */
int jv_enum(const struct jv *v, const char *const names[], int n);
/* "a string", "the number 3", "an object", ... for messages. Writes into buf. */
const char *jv_describe(const struct jv *v, char *buf, size_t size);

/* Field helpers: optional member `key` of `obj`; absent -> *out = dflt and
 * true. Present and bad -> diagnostic, *out = dflt, and false. */
bool jv_opt_number(const struct jv *obj, const char *key, struct jrange r, double dflt, double *out);
bool jv_opt_int(const struct jv *obj, const char *key, struct jrange r, int64_t dflt, int64_t *out);
bool jv_opt_bool(const struct jv *obj, const char *key, bool dflt, bool *out);
/* Required member helpers. */
bool jv_req_number(const struct jv *obj, const char *key, struct jrange r, double *out);
bool jv_req_int(const struct jv *obj, const char *key, struct jrange r, int64_t *out);
bool jv_req_string(const struct jv *obj, const char *key, const char **out);

/* The "format" and "version" header every shardlab file carries. Returns
 * the format name found (pointing into the doc), or NULL after a
 * diagnostic. Does not check which format it is. */
const char *jv_format(const struct jv *root, int64_t *version);
/* The header of a file of one format: reports a missing or other "format"
 * and a version this shardlab does not read. True when both match. */
bool jv_header(const struct jv *root, const char *format, int version);

/* ---------------------------------------------------------------- dtypes */

/* Element types, shared by models (tensors) and topologies (peak FLOP/s
 * per dtype). Canonical names: fp32 fp16 bf16 int32 int64 bool; files may
 * also say float32, float16, bfloat16. */
enum dtype { DT_FP32, DT_FP16, DT_BF16, DT_INT32, DT_INT64, DT_BOOL, DT_COUNT };

extern const char *const dtype_names[DT_COUNT];
int64_t dtype_bytes(enum dtype t);
/* -1 when unknown. */
int dtype_parse(const char *s);
/* A dtype field: reports unknown names (listing the allowed ones). */
bool jv_dtype(const struct jv *v, enum dtype *out);

#endif
