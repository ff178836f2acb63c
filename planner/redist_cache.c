/* redist_cache.c — redistribution bytes per device between two layouts,
 * remembered per layout pair (sharding propagation, seed 000, step 2).
 *
 * Propagation prices every candidate strategy of an op against the
 * layouts of its decided neighbours; a graph of repeated layers asks the
 * same pairs again and again. The key is a canonical serialisation of the
 * two layouts (dtype, rank, shape, device-matrix sizes and first rank,
 * each dimension's axes, the partial-sum axes): never a pointer, and axis
 * names do not matter. Two descriptions of one placement are different
 * keys with the same answer. The table is open addressing over a 64-bit
 * FNV-1a hash of the key's words; it is only ever looked up, never iterated, so
 * its order cannot reach any output.
 *
 * Units: bytes per device (double); -1 when redist_derive finds no
 * redistribution (the two layouts cover different ranks). Hot path:
 * redist_cache_bytes, once per candidate and decided neighbour; a hit
 * costs one serialisation, one hash and one key comparison.
 */
#include <stdlib.h>
#include <string.h>

#include "planner-int.h"

#define KEY_WORDS_MAX LAYOUT_KEY_WORDS   /* one layout's (layout_key) */

struct cache_entry {
	uint64_t hash;
	size_t key;                       /* offset in the key pool; SIZE_MAX: empty */
	int len;                          /* words */
	double bytes;
};

struct redist_cache {
	struct cache_entry *slots;
	size_t cap, used;                 /* cap: a power of two */
	int64_t *pool;                    /* keys, back to back */
	size_t pool_len, pool_cap;
	int64_t hits, misses;
};

struct redist_cache *redist_cache_new(void)
{
	struct redist_cache *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->cap = 1024;
	c->slots = malloc(c->cap * sizeof(*c->slots));
	if (!c->slots) {
		free(c);
		return NULL;
	}
	for (size_t i = 0; i < c->cap; i++)
		c->slots[i].key = SIZE_MAX;
	return c;
}

void redist_cache_free(struct redist_cache *c)
{
	if (!c)
		return;
	free(c->slots);
	free(c->pool);
	free(c);
}

void redist_cache_stats(const struct redist_cache *c, int64_t *hits, int64_t *misses)
{
	*hits = c ? c->hits : 0;
	*misses = c ? c->misses : 0;
}

static struct cache_entry *probe(const struct redist_cache *c, uint64_t h, const int64_t *w,
                                 int n)
{
	for (size_t i = h & (c->cap - 1);; i = (i + 1) & (c->cap - 1)) {
		struct cache_entry *e = &c->slots[i];
		if (e->key == SIZE_MAX)
			return e;
		if (e->hash == h && e->len == n &&
		    !memcmp(c->pool + e->key, w, (size_t)n * sizeof(*w)))
			return e;
	}
}

/* Doubles the table when it is half full; false when out of memory. */
static bool grow(struct redist_cache *c)
{
	if (2 * (c->used + 1) <= c->cap)
		return true;
	struct redist_cache old = *c;
	c->cap *= 2;
	c->slots = malloc(c->cap * sizeof(*c->slots));
	if (!c->slots) {
		*c = old;
		return false;
	}
	for (size_t i = 0; i < c->cap; i++)
		c->slots[i].key = SIZE_MAX;
	for (size_t i = 0; i < old.cap; i++) {
		const struct cache_entry *e = &old.slots[i];
		if (e->key == SIZE_MAX)
			continue;
		size_t j = e->hash & (c->cap - 1);
		while (c->slots[j].key != SIZE_MAX)
			j = (j + 1) & (c->cap - 1);
		c->slots[j] = *e;
	}
	free(old.slots);
	return true;
}

static bool pool_add(struct redist_cache *c, const int64_t *w, int n, size_t *off)
{
	if (c->pool_len + (size_t)n > c->pool_cap) {
		size_t cap = c->pool_cap ? c->pool_cap : 4096;
		while (cap < c->pool_len + (size_t)n)
			cap *= 2;
		int64_t *p = realloc(c->pool, cap * sizeof(*p));
		if (!p)
			return false;
		c->pool = p;
		c->pool_cap = cap;
	}
	*off = c->pool_len;
	memcpy(c->pool + c->pool_len, w, (size_t)n * sizeof(*w));
	c->pool_len += (size_t)n;
	return true;
}

/* What redist_derive says, in bytes per device (without building its rank
 * groups); -1 when it fails. */
static double derive_bytes(const struct layout *src, const struct layout *dst)
{
	if (layout_same_placement(src, dst))
		return 0;
	return redist_bytes(src, dst);
}

/* Remembers the answer; when memory runs out the answer is still right,
 * only not remembered. */
static void remember(struct redist_cache *c, const int64_t *w, int n, uint64_t h, double bytes)
{
	size_t off;
	if (!grow(c) || !pool_add(c, w, n, &off))
		return;
	struct cache_entry *e = probe(c, h, w, n);
	*e = (struct cache_entry){.hash = h, .key = off, .len = n, .bytes = bytes};
	c->used++;
}

double redist_cache_bytes(struct redist_cache *c, const struct layout *src,
                          const struct layout *dst)
{
	int64_t w[2 * KEY_WORDS_MAX];
	int n = layout_key(src, w);
	n += layout_key(dst, w + n);
	uint64_t h = util_hash_words(w, n);
	struct cache_entry *e = probe(c, h, w, n);
	if (e->key != SIZE_MAX) {
		c->hits++;
		return e->bytes;
	}
	c->misses++;
	double bytes = derive_bytes(src, dst);
	remember(c, w, n, h, bytes);
	return bytes;
}
