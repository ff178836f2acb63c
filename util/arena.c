/* arena.c — bump allocator in chained blocks.
 *
 * One arena per loaded scenario holds the topology, the graph, plans and
 * strings; arena_free releases it in one call. Allocations are zeroed and
 * aligned to 16 bytes. Large requests get a block of their own so that a
 * big array does not waste the tail of the current block. Hot path:
 * arena_alloc (pointer bump).
 */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16
#define ARENA_BLOCK (64 * 1024)

struct arena_block {
	struct arena_block *next;
	size_t size, used;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

struct arena {
	struct arena_block *head;
	size_t total;
};

struct arena *arena_new(void)
{
	return calloc(1, sizeof(struct arena));
}

void arena_free(struct arena *a)
{
	if (!a)
		return;
	struct arena_block *b = a->head;
	while (b) {
		struct arena_block *n = b->next;
		free(b);
		b = n;
	}
	free(a);
}

static struct arena_block *block_new(size_t size)
{
	if (size > SIZE_MAX - sizeof(struct arena_block))
		return NULL;
	struct arena_block *b = malloc(sizeof(*b) + size);
	if (!b)
		return NULL;
	b->next = NULL;
	b->size = size;
	b->used = 0;
	return b;
}

void *arena_alloc(struct arena *a, size_t size)
{
	SL_ASSERT(a);
	if (size == 0)
		size = 1;
	if (size > SIZE_MAX - ARENA_ALIGN)
		return NULL;
	size = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	struct arena_block *b = a->head;
	if (!b || b->size - b->used < size) {
		if (size > ARENA_BLOCK / 4) {
			/* A block of its own, kept behind the current one. */
			struct arena_block *big = block_new(size);
			if (!big)
				return NULL;
			big->used = size;
			if (b) {
				big->next = b->next;
				b->next = big;
			} else {
				a->head = big;
			}
			a->total += size;
			memset(big->data, 0, size);
			return big->data;
		}
		b = block_new(ARENA_BLOCK);
		if (!b)
			return NULL;
		b->next = a->head;
		a->head = b;
	}
	void *p = b->data + b->used;
	b->used += size;
	a->total += size;
	memset(p, 0, size);
	return p;
}

void *arena_calloc(struct arena *a, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		return NULL;
	return arena_alloc(a, n * size);
}

void *arena_grow(struct arena *a, void *old, size_t old_n, size_t new_n, size_t size)
{
	void *p = arena_calloc(a, new_n, size);
	if (p && old && old_n)
		memcpy(p, old, (old_n < new_n ? old_n : new_n) * size);
	return p;
}

char *arena_strndup(struct arena *a, const char *s, size_t n)
{
	char *p = arena_alloc(a, n + 1);
	if (p) {
		memcpy(p, s, n);
		p[n] = '\0';
	}
	return p;
}

char *arena_strdup(struct arena *a, const char *s)
{
	return s ? arena_strndup(a, s, strlen(s)) : NULL;
}

char *arena_printf(struct arena *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		return NULL;
	char *p = arena_alloc(a, (size_t)n + 1);
	if (!p)
		return NULL;
	va_start(ap, fmt);
	vsnprintf(p, (size_t)n + 1, fmt, ap);
	va_end(ap);
	return p;
}

size_t arena_used(const struct arena *a)
{
	return a ? a->total : 0;
}
