/* misc.c — assertions, checked arithmetic, hashing, file reading, paths,
 * and the edit distance behind "did you mean" suggestions. Hot path:
 * util_hash_words (the planners' memo tables). */
/* realpath (X/Open) */
#define _XOPEN_SOURCE 700
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

void util_assert_fail(const char *file, int line, const char *expr)
{
	fflush(stdout);
	fprintf(stderr, "%s:%d: internal error: assertion failed: %s\n", file, line, expr);
	abort();
}

uint64_t util_hash_words(const int64_t *w, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++) {
		h ^= (uint64_t)w[i];
		h *= 1099511628211ull;
	}
	return h ^ (h >> 29);
}

static int cmp_double(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return (a > b) - (a < b);
}

double util_median(double *v, int n)
{
	SL_ASSERT(n >= 1);
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int64_t util_gcd64(int64_t a, int64_t b)
{
	while (b) {
		int64_t t = a % b;
		a = b;
		b = t;
	}
	return a;
}

bool util_mul_i64(int64_t a, int64_t b, int64_t *out)
{
	if (a == 0 || b == 0) {
		*out = 0;
		return true;
	}
	if (a < 0 || b < 0) {
		/* Shapes and counts are never negative here. */
		if (a == INT64_MIN || b == INT64_MIN)
			return false;
		bool neg = (a < 0) != (b < 0);
		int64_t r;
		if (!util_mul_i64(a < 0 ? -a : a, b < 0 ? -b : b, &r))
			return false;
		*out = neg ? -r : r;
		return true;
	}
	if (a > INT64_MAX / b)
		return false;
	*out = a * b;
	return true;
}

bool util_add_i64(int64_t a, int64_t b, int64_t *out)
{
	if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < INT64_MIN - b))
		return false;
	*out = a + b;
	return true;
}

char *util_read_file(const char *path, size_t *len_out, const char **err)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer; it is
	 * refused below like every other file that is not a regular one. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		*err = strerror(errno);
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) != 0) {
		*err = strerror(errno);
		close(fd);
		return NULL;
	}
	if (!S_ISREG(st.st_mode)) {
		*err = S_ISDIR(st.st_mode) ? strerror(EISDIR)
		       : "not a regular file (a device, FIFO or socket is never read)";
		close(fd);
		return NULL;
	}
	if (st.st_size > UTIL_READ_MAX_BYTES) {
		*err = "larger than the " UTIL_READ_MAX_TEXT " an input file may hold";
		close(fd);
		return NULL;
	}
	FILE *f = fdopen(fd, "rb");
	if (!f) {
		*err = strerror(errno);
		close(fd);
		return NULL;
	}
	size_t cap = (size_t)st.st_size + 2 > 4096 ? (size_t)st.st_size + 2 : 4096, len = 0;
	char *buf = malloc(cap);
	if (!buf) {
		fclose(f);
		*err = "out of memory";
		return NULL;
	}
	for (;;) {
		if (cap - len < 2) {
			/* The file grew while it was read. */
			if (cap > UTIL_READ_MAX_BYTES) {
				free(buf);
				fclose(f);
				*err = "larger than the " UTIL_READ_MAX_TEXT " an input file may hold";
				return NULL;
			}
			char *nb = realloc(buf, cap * 2);
			if (!nb) {
				free(buf);
				fclose(f);
				*err = "out of memory";
				return NULL;
			}
			buf = nb;
			cap *= 2;
		}
		size_t n = fread(buf + len, 1, cap - len - 1, f);
		len += n;
		if (n == 0) {
			if (ferror(f)) {
				*err = strerror(errno ? errno : EIO);
				free(buf);
				fclose(f);
				return NULL;
			}
			break;
		}
	}
	fclose(f);
	buf[len] = '\0';
	*len_out = len;
	return buf;
}

char *util_path_dir(struct arena *a, const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return arena_strdup(a, ".");
	if (slash == path)
		return arena_strdup(a, "/");
	return arena_strndup(a, path, (size_t)(slash - path));
}

/* Lexical clean-up so that messages name "models/ffn.json" rather than
 * "scenarios/../models/ffn.json": drops "." segments and folds "x/.." pairs
 * (a leading ".." is kept). */
static char *path_clean(struct arena *a, const char *p)
{
	size_t n = strlen(p);
	char *out = arena_alloc(a, n + 2);
	size_t *starts = arena_calloc(a, n + 1, sizeof(size_t));
	if (!out || !starts)
		return NULL;
	size_t o = 0, depth = 0, up = 0;
	bool abs_path = p[0] == '/';
	if (abs_path)
		out[o++] = '/';
	for (const char *s = p; *s;) {
		while (*s == '/')
			s++;
		const char *e = s;
		while (*e && *e != '/')
			e++;
		size_t len = (size_t)(e - s);
		if (len == 0 || (len == 1 && s[0] == '.')) {
			/* skip */
		} else if (len == 2 && s[0] == '.' && s[1] == '.' && depth > up) {
			depth--;
			o = starts[depth];
		} else {
			if (len == 2 && s[0] == '.' && s[1] == '.')
				up++;
			starts[depth++] = o;
			if (o > 0 && out[o - 1] != '/')
				out[o++] = '/';
			memcpy(out + o, s, len);
			o += len;
		}
		s = e;
	}
	if (o == 0)
		out[o++] = '.';
	out[o] = '\0';
	return out;
}

char *util_path_join(struct arena *a, const char *dir, const char *rel)
{
	if (rel[0] == '/' || !dir || !strcmp(dir, "."))
		return path_clean(a, rel);
	char *j = arena_printf(a, "%s/%s", dir, rel);
	return j ? path_clean(a, j) : NULL;
}

char *util_path_relative(struct arena *a, const char *from_dir, const char *to)
{
	char *f = realpath(from_dir && from_dir[0] ? from_dir : ".", NULL);
	char *t = realpath(to, NULL);
	char *out = NULL;
	if (f && t) {
		/* the longest common prefix of whole components */
		size_t i = 0, last = 0;
		while (f[i] && t[i] && f[i] == t[i]) {
			if (f[i] == '/')
				last = i;
			i++;
		}
		if (!f[i] && t[i] == '/')
			last = i;
		else if (!f[i] && !t[i])
			last = i;
		size_t ups = 0;
		for (const char *p = f + last; *p; p++)
			ups += *p == '/';
		if (f[last] == '\0' || !strcmp(f, "/"))
			ups = 0;
		size_t n = 3 * ups + strlen(t + last) + 2;
		out = arena_alloc(a, n);
		if (out) {
			out[0] = '\0';
			for (size_t k = 0; k < ups; k++)
				strcat(out, "../");
			strcat(out, t[last] == '/' ? t + last + 1 : t + last);
		}
	} else {
		out = arena_strdup(a, to);
	}
	free(f);
	free(t);
	return out;
}

int util_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	if (la > 64 || lb > 64)
		return 1000;
	int row[65];
	for (size_t j = 0; j <= lb; j++)
		row[j] = (int)j;
	for (size_t i = 1; i <= la; i++) {
		int diag = row[0];
		row[0] = (int)i;
		for (size_t j = 1; j <= lb; j++) {
			int up = row[j];
			int cost = a[i - 1] == b[j - 1] ? 0 : 1;
			int best = diag + cost;
			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			row[j] = best;
			diag = up;
		}
	}
	return row[lb];
}

const char *const dtype_names[DT_COUNT] = {"fp32", "fp16", "bf16", "int32", "int64", "bool"};
_Static_assert(DT_COUNT == 6, "dtype_names must list every dtype");

int64_t dtype_bytes(enum dtype t)
{
	static const int64_t bytes[DT_COUNT] = {4, 2, 2, 4, 8, 1};
	SL_ASSERT(t >= 0 && t < DT_COUNT);
	return bytes[t];
}

int dtype_parse(const char *s)
{
	static const struct {
		const char *alias;
		enum dtype t;
	} aliases[] = {{"float32", DT_FP32}, {"float16", DT_FP16}, {"bfloat16", DT_BF16}};
	for (int i = 0; i < DT_COUNT; i++)
		if (!strcmp(s, dtype_names[i]))
			return i;
	for (size_t i = 0; i < SL_COUNTOF(aliases); i++)
		if (!strcmp(s, aliases[i].alias))
			return (int)aliases[i].t;
	return -1;
}

bool jv_dtype(const struct jv *v, enum dtype *out)
{
	const char *s;
	if (!jv_string(v, &s))
		return false;
	int t = dtype_parse(s);
	if (t < 0) {
		jv_enum(v, dtype_names, DT_COUNT); /* reports with the list */
		return false;
	}
	*out = (enum dtype)t;
	return true;
}

size_t util_utf8_len(const unsigned char *p, size_t n)
{
	unsigned c = p[0];
	size_t k;
	unsigned lo = 0x80, hi = 0xbf;
	if (c < 0x80)
		return 1;
	else if (c >= 0xc2 && c <= 0xdf)
		k = 2;
	else if (c >= 0xe0 && c <= 0xef) {
		k = 3;
		if (c == 0xe0)
			lo = 0xa0;
		else if (c == 0xed)
			hi = 0x9f;
	} else if (c >= 0xf0 && c <= 0xf4) {
		k = 4;
		if (c == 0xf0)
			lo = 0x90;
		else if (c == 0xf4)
			hi = 0x8f;
	} else
		return 0;
	if (n < k || p[1] < lo || p[1] > hi)
		return 0;
	for (size_t j = 2; j < k; j++)
		if (p[j] < 0x80 || p[j] > 0xbf)
			return 0;
	return k;
}
