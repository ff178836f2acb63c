/* words.c — a table keyed by strings of 64-bit words, and the buffer
 * such keys are written into: the planners'
 * memos (redistribution bytes per layout pair, propagation's remembered
 * decisions) key their answers by what the answer depends on, serialised
 * as words, and compare keys whole, never by hash alone.
 *
 * Open addressing over util_hash_words, doubled when half full; the keys
 * lie back to back in one pool. A key's entry is its index in order of
 * addition, so the caller keeps the values in an array of its own. The
 * table is only looked up, never iterated, so its order reaches no output.
 * Hot path: word_table_find (one hash, one probe sequence, one memcmp).
 */
#include "util.h"

#include <stdlib.h>
#include <string.h>

struct slot {
	uint64_t hash;
	size_t key, len;                  /* words in the pool; len 0: empty */
	int64_t index;
};

struct word_table {
	struct slot *slots;
	size_t cap, used;                 /* cap: a power of two */
	struct word_buf pool;
};

struct word_table *word_table_new(void)
{
	struct word_table *t = calloc(1, sizeof(*t));
	if (t) {
		t->cap = 1024;
		t->slots = calloc(t->cap, sizeof(*t->slots));
	}
	if (t && !t->slots) {
		free(t);
		t = NULL;
	}
	return t;
}

void word_table_free(struct word_table *t)
{
	if (t) {
		free(t->slots);
		word_buf_free(&t->pool);
		free(t);
	}
}

/* The slot of key w[0..n), or the empty slot it would take. */
static struct slot *probe(const struct word_table *t, uint64_t h, const int64_t *w, size_t n)
{
	for (size_t i = h & (t->cap - 1);; i = (i + 1) & (t->cap - 1)) {
		struct slot *s = &t->slots[i];
		if (!s->len ||
		    (s->hash == h && s->len == n && !memcmp(t->pool.w + s->key, w, n * sizeof(*w))))
			return s;
	}
}

int64_t word_table_find(const struct word_table *t, const int64_t *w, size_t n)
{
	SL_ASSERT(n > 0);
	const struct slot *s = probe(t, util_hash_words(w, n), w, n);
	return s->len ? s->index : -1;
}

/* Doubles the table when it is half full; false when out of memory. */
static bool grow(struct word_table *t)
{
	if (2 * (t->used + 1) <= t->cap)
		return true;
	struct slot *slots = calloc(2 * t->cap, sizeof(*slots));
	if (!slots)
		return false;
	size_t cap = 2 * t->cap;
	for (size_t i = 0; i < t->cap; i++) {
		const struct slot *s = &t->slots[i];
		if (!s->len)
			continue;
		size_t j = s->hash & (cap - 1);
		while (slots[j].len)
			j = (j + 1) & (cap - 1);
		slots[j] = *s;
	}
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return true;
}

int64_t word_table_add(struct word_table *t, const int64_t *w, size_t n)
{
	SL_ASSERT(n > 0);
	if (!grow(t))
		return -1;
	int64_t *at = word_buf_room(&t->pool, n);
	if (!at)
		return -1;
	uint64_t h = util_hash_words(w, n);
	struct slot *s = probe(t, h, w, n);
	if (s->len)
		return s->index;
	memcpy(at, w, n * sizeof(*w));
	*s = (struct slot){h, t->pool.n, n, (int64_t)t->used};
	t->pool.n += n;
	return (int64_t)t->used++;
}

int64_t word_table_count(const struct word_table *t)
{
	return (int64_t)t->used;
}

int64_t *word_buf_room(struct word_buf *b, size_t more)
{
	if (b->n + more > b->cap) {
		size_t cap = b->cap ? 2 * b->cap : 1024;
		while (cap < b->n + more)
			cap *= 2;
		int64_t *w = realloc(b->w, cap * sizeof(*w));
		if (!w) {
			b->oom = true;
			return NULL;
		}
		b->w = w;
		b->cap = cap;
	}
	return b->w + b->n;
}

void word_buf_add(struct word_buf *b, int64_t v)
{
	int64_t *w = word_buf_room(b, 1);
	if (w) {
		*w = v;
		b->n++;
	}
}

void word_buf_free(struct word_buf *b)
{
	free(b->w);
	*b = (struct word_buf){0};
}

int64_t util_double_bits(double x)
{
	int64_t v;
	memcpy(&v, &x, sizeof v);
	return v;
}
