/* arena.c — bump allocator in chained blocks.
 *
 * One arena per loaded scenario holds the topology, the graph, plans and
 * strings; arena_free releases it in one call. Allocations are zeroed and
 * aligned to 16 bytes. Large requests get a block of their own so that a
 * big array does not waste the tail of the current block. Hot path:
 * arena_alloc (pointer bump).
 *
 * Freed blocks wait in a per-thread cache (BLOCK_CACHE standard blocks,
 * BIG_CACHE large ones) for the next arena: planners and the estimate
 * make and free an arena per candidate, and without the cache each such
 * arena got fresh pages from the kernel (page faults were a sixth of a
 * plan search's time). The cache is released at exit.
 */
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ARENA_ALIGN 16
#define ARENA_BLOCK (64 * 1024)
#define BLOCK_CACHE 256            /* 16 MiB of standard blocks at most */
#define BIG_CACHE 16               /* large blocks kept ... */
#define BIG_CACHE_BYTES ((size_t)64 << 20)  /* ... and their bytes at most */

struct arena_block {
	struct arena_block *next;
	size_t size, used;
	_Alignas(ARENA_ALIGN) unsigned char data[];
};

struct arena {
	struct arena_block *head;
	size_t total;
};

/* Blocks freed by this thread's arenas, for its next ones: standard
 * blocks on a list, large blocks (an array of their own) in a few slots. */
static _Thread_local struct {
	struct arena_block *head;
	int n;
	struct arena_block *big[BIG_CACHE];
	size_t big_bytes;
	bool registered;
} cache;

static void cache_release(void)
{
	while (cache.head) {
		struct arena_block *n = cache.head->next;
		free(cache.head);
		cache.head = n;
	}
	cache.n = 0;
	for (int i = 0; i < BIG_CACHE; i++) {
		free(cache.big[i]);
		cache.big[i] = NULL;
	}
	cache.big_bytes = 0;
}

/* Keeps a freed block for a later arena; false when there is no room. */
static bool cache_keep(struct arena_block *b)
{
	if (!cache.registered) {
		cache.registered = true;
		(void)atexit(cache_release);  /* else the blocks stay reachable */
	}
	if (b->size == ARENA_BLOCK) {
		if (cache.n == BLOCK_CACHE)
			return false;
		b->next = cache.head;
		cache.head = b;
		cache.n++;
		return true;
	}
	if (cache.big_bytes + b->size > BIG_CACHE_BYTES)
		return false;
	for (int i = 0; i < BIG_CACHE; i++)
		if (!cache.big[i]) {
			cache.big[i] = b;
			cache.big_bytes += b->size;
			return true;
		}
	return false;
}

/* A kept block for `size` bytes: a standard one, or a large one of at
 * least size and at most 4 x size bytes (the smallest such); NULL when none. */
static struct arena_block *cache_take(size_t size)
{
	struct arena_block *b = NULL;
	if (size == ARENA_BLOCK) {
		b = cache.head;
		if (b) {
			cache.head = b->next;
			cache.n--;
		}
		return b;
	}
	int best = -1;
	for (int i = 0; i < BIG_CACHE; i++)
		if (cache.big[i] && cache.big[i]->size >= size && cache.big[i]->size / 4 <= size &&
		    (best < 0 || cache.big[i]->size < cache.big[best]->size))
			best = i;
	if (best >= 0) {
		b = cache.big[best];
		cache.big[best] = NULL;
		cache.big_bytes -= b->size;
	}
	return b;
}

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
		if (!cache_keep(b))
			free(b);
		b = n;
	}
	free(a);
}

static struct arena_block *block_new(size_t size)
{
	if (size > SIZE_MAX - sizeof(struct arena_block))
		return NULL;
	struct arena_block *b = cache_take(size);
	if (b) {
		b->next = NULL;
		b->used = 0;
		return b;
	}
	b = malloc(sizeof(*b) + size);
	if (!b)
		return NULL;
	b->next = NULL;
	b->size = size;
	b->used = 0;
	return b;
}

void *arena_alloc_raw(struct arena *a, size_t size)
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
	return p;
}

void *arena_alloc(struct arena *a, size_t size)
{
	void *p = arena_alloc_raw(a, size);
	if (p)
		memset(p, 0, size ? size : 1);
	return p;
}

void *arena_dup(struct arena *a, const void *src, size_t size)
{
	void *p = arena_alloc_raw(a, size);
	if (p && size)
		memcpy(p, src, size);
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
