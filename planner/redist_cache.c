/* redist_cache.c — redistribution bytes per device between two layouts,
 * remembered per layout pair (sharding propagation, seed 000, step 2).
 *
 * Propagation prices every candidate strategy of an op against the
 * layouts of its decided neighbours; a graph of repeated layers asks the
 * same pairs again and again. The key is a canonical serialisation of the
 * two layouts (dtype, rank, shape, device-matrix sizes and first rank,
 * each dimension's axes, the partial-sum axes): never a pointer, and axis
 * names do not matter. Two descriptions of one placement are different
 * keys with the same answer. The table is util's word_table (keys
 * compared whole; only ever looked up, so its order reaches no output),
 * the answers an array indexed like its keys.
 *
 * Units: bytes per device (double); -1 when redist_derive finds no
 * redistribution (the two layouts cover different ranks). Hot path:
 * redist_cache_bytes, once per candidate and decided neighbour; a hit
 * costs one serialisation, one hash and one key comparison.
 */
#include <stdlib.h>
#include <string.h>

#include "planner-int.h"

struct redist_cache {
	struct word_table *keys;
	double *bytes;                    /* per key, in order of addition */
	size_t n, cap;
	int64_t hits, misses;
};

struct redist_cache *redist_cache_new(void)
{
	struct redist_cache *c = calloc(1, sizeof(*c));
	if (c)
		c->keys = word_table_new();
	if (c && !c->keys) {
		free(c);
		c = NULL;
	}
	return c;
}

void redist_cache_free(struct redist_cache *c)
{
	if (!c)
		return;
	word_table_free(c->keys);
	free(c->bytes);
	free(c);
}

void redist_cache_stats(const struct redist_cache *c, int64_t *hits, int64_t *misses)
{
	*hits = c ? c->hits : 0;
	*misses = c ? c->misses : 0;
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
static void remember(struct redist_cache *c, const int64_t *w, size_t n, double bytes)
{
	if (c->n == c->cap) {  /* room for the answer before its key */
		size_t cap = c->cap ? 2 * c->cap : 1024;
		double *b = realloc(c->bytes, cap * sizeof(*b));
		if (!b)
			return;
		c->bytes = b;
		c->cap = cap;
	}
	int64_t i = word_table_add(c->keys, w, n);
	if (i < 0)
		return;
	SL_ASSERT((size_t)i == c->n);  /* asked only after a miss */
	c->bytes[c->n++] = bytes;
}

double redist_cache_bytes(struct redist_cache *c, const struct layout *src,
                          const struct layout *dst)
{
	int64_t w[2 * LAYOUT_KEY_WORDS];
	int n = layout_key(src, w);
	n += layout_key(dst, w + n);
	int64_t i = word_table_find(c->keys, w, (size_t)n);
	if (i >= 0) {
		c->hits++;
		return c->bytes[i];
	}
	c->misses++;
	double bytes = derive_bytes(src, dst);
	remember(c, w, (size_t)n, bytes);
	return bytes;
}
