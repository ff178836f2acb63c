/* diag.c — diagnostics collected into a caller-owned list.
 *
 * One run reports every bad field of a file, then the caller decides what
 * to do. Strings are malloc'd copies owned by the list. The list keeps at
 * most DIAG_LIST_MAX entries so a pathological file cannot flood memory; it
 * counts the rest in `dropped`. A diagnostic is one line whatever it
 * quotes: control characters from a file (a key "a\nb") are kept as \xNN.
 */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void diag_list_init(struct diag_list *l)
{
	memset(l, 0, sizeof(*l));
}

void diag_list_free(struct diag_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++) {
		free(l->items[i].file);
		free(l->items[i].path);
		free(l->items[i].msg);
	}
	free(l->items);
	memset(l, 0, sizeof(*l));
}

static char *dup_or_null(const char *s, bool *oom)
{
	if (!s || !*s)
		return NULL;
	size_t n = 1;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		n += *c < 0x20 || *c == 0x7f ? 4 : 1;
	char *p = malloc(n);
	if (!p) {
		*oom = true;
		return NULL;
	}
	char *o = p;
	for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
		if (*c < 0x20 || *c == 0x7f)
			o += snprintf(o, 5, "\\x%02x", *c);
		else
			*o++ = (char)*c;
	}
	*o = '\0';
	return p;
}

void diag_addv(struct diag_list *l, enum diag_severity sev, const char *file, int line,
               const char *path, const char *fmt, va_list ap)
{
	if (sev == DIAG_ERROR)
		l->errors++;
	if (l->count >= DIAG_LIST_MAX) {
		l->dropped++;
		return;
	}
	if (l->count == l->cap) {
		size_t ncap = l->cap ? l->cap * 2 : 16;
		struct diag *n = realloc(l->items, ncap * sizeof(*n));
		if (!n) {
			l->oom = true;
			return;
		}
		l->items = n;
		l->cap = ncap;
	}
	/* The message at its full length: a list of allowed keys runs past
	 * any fixed buffer. */
	va_list aq;
	va_copy(aq, ap);
	int n = vsnprintf(NULL, 0, fmt, aq);
	va_end(aq);
	char *msg = n >= 0 ? malloc((size_t)n + 1) : NULL;
	if (!msg) {
		l->oom = true;
		return;
	}
	vsnprintf(msg, (size_t)n + 1, fmt, ap);
	struct diag *d = &l->items[l->count++];
	d->severity = sev;
	d->line = line;
	d->file = dup_or_null(file, &l->oom);
	d->path = dup_or_null(path, &l->oom);
	d->msg = msg;
}

void diag_add(struct diag_list *l, enum diag_severity sev, const char *file, int line,
              const char *path, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_addv(l, sev, file, line, path, fmt, ap);
	va_end(ap);
}

char *diag_format(const struct diag *d)
{
	static const char *const sev[] = {"", "warning: ", "note: "};
	char line[32] = "";
	if (d->line > 0)
		snprintf(line, sizeof line, ":%d", d->line);
	const char *file = d->file ? d->file : "shardlab";
	const char *msg = d->msg ? d->msg : "(out of memory)";
	size_t n = strlen(file) + strlen(line) + (d->path ? strlen(d->path) + 2 : 0) +
	           strlen(msg) + 16;
	char *s = malloc(n);
	if (!s)
		return NULL;
	snprintf(s, n, "%s%s: %s%s%s%s", file, line, d->path ? d->path : "", d->path ? ": " : "",
	         sev[d->severity], msg);
	return s;
}

const char *diag_first_error(struct arena *a, const struct diag_list *l)
{
	for (size_t i = 0; i < l->count; i++)
		if (l->items[i].severity == DIAG_ERROR) {
			char *s = diag_format(&l->items[i]);
			const char *copy = s ? arena_strdup(a, s) : NULL;
			free(s);
			return copy ? copy : "out of memory";
		}
	return l->oom ? "out of memory" : "failed without a diagnostic";
}
