/* enumerate.c — the candidate strategies of an unconfigured op, for
 * sharding propagation (MindSpore semantics, seed 000, step 1).
 *
 * From the op's dimension signature: every label carried by an input
 * dimension that may be cut (kept or summed, not whole; a broadcast
 * dimension carries no label) takes a cut dividing both its size and the
 * device count; the product of the cuts equals the device count (or, when
 * `all_devices` is false, divides it); full replication comes last. The
 * cuts are generated depth first over the labels in the signature's
 * order, each label's cuts in descending order, so the list is in
 * descending lexicographic order of the label cut vector. A cut vector
 * built this way is consistent by construction (one cut per label, in
 * every tensor that carries it); the rules a label vector cannot show (the
 * Reshape rule, the device-matrix axis limit) are left to
 * dist_op_from_cuts, which is asked about every candidate of such ops.
 *
 * Units: cuts are slice counts (int64_t). Hot path: 8,192 devices give a
 * five-label BatchMatMul a few thousand candidates; the search visits only
 * cut vectors whose partial product divides the device count.
 */
#include <string.h>

#include "planner-int.h"

/* The labels enumeration cuts and the cuts each may take. */
struct enum_ctx {
	const struct op_sig *sig;
	int n_in;
	int n_lab;
	int lab[SIG_MAX_LABELS];                   /* cuttable labels, signature order */
	int n_div[SIG_MAX_LABELS];
	int64_t *div[SIG_MAX_LABELS];              /* divisors, descending */
	int64_t n_devices;
	bool all_devices;
	int64_t cut[SIG_MAX_LABELS];               /* by label, during the search */
	struct strategy *out;                      /* NULL while counting */
	int n;
};

/* Divisors of x in descending order, in the arena; *n their count. */
static int64_t *divisors_desc(struct arena *a, int64_t x, int *n)
{
	int count = 0;
	for (int64_t k = 1; k <= x / k; k++)
		if (x % k == 0)
			count += k == x / k ? 1 : 2;
	int64_t *d = arena_alloc(a, (size_t)count * sizeof(*d));
	*n = 0;
	if (!d)
		return NULL;
	int m = 0;
	/* x/k for ascending k: the divisors above sqrt(x), descending... */
	for (int64_t k = 1; k <= x / k; k++)
		if (x % k == 0)
			d[m++] = x / k;
	/* ...then k itself for descending k, skipping a square root seen. */
	for (int i = m - 1; i >= 0; i--)
		if (x / d[i] != d[i])
			d[m++] = x / d[i];
	*n = m;
	return d;
}

/* Is label l carried by an input dimension? */
static bool on_input(const struct op_sig *s, int n_in, int l)
{
	for (int i = 0; i < n_in; i++)
		for (int d = 0; d < s->in_rank[i]; d++)
			if (s->in[i][d] == l)
				return true;
	return false;
}

static void emit(struct enum_ctx *c)
{
	if (c->out) {
		struct strategy *st = &c->out[c->n];
		for (int i = 0; i < SIG_MAX_TENSORS; i++)
			for (int d = 0; d < GRAPH_MAX_RANK; d++) {
				int l = i < c->n_in && d < c->sig->in_rank[i] ? c->sig->in[i][d] : -1;
				st->cuts[i][d] = l >= 0 && c->cut[l] ? c->cut[l] : 1;
			}
	}
	c->n++;
}

/* Label k onwards, with `left` devices still to divide among them. */
static void search(struct enum_ctx *c, int k, int64_t left, bool any_cut)
{
	if (k == c->n_lab) {
		if (any_cut && (!c->all_devices || left == 1))
			emit(c);
		return;
	}
	int l = c->lab[k];
	for (int j = 0; j < c->n_div[k]; j++) {
		int64_t v = c->div[k][j];
		if (left % v)
			continue;
		c->cut[l] = v;
		search(c, k + 1, left / v, any_cut || v > 1);
	}
	c->cut[l] = 0;
}

static void all_ones(struct strategy *st)
{
	for (int i = 0; i < SIG_MAX_TENSORS; i++)
		for (int d = 0; d < GRAPH_MAX_RANK; d++)
			st->cuts[i][d] = 1;
}

/* Does distop accept candidate st? */
static bool accepted(const struct graph *g, int op, const struct strategy *st, int64_t n_devices)
{
	return dist_op_cuts_valid(g, op, (const int64_t(*)[GRAPH_MAX_RANK])st->cuts, n_devices);
}

/* Signatures whose validity is more than a consistent label vector: a
 * rule of their own, or so many labels that the device matrix may not
 * hold one axis per label. */
static bool needs_check(const struct op_sig *s)
{
	return s->rule != SIG_RULE_NONE || s->n_labels + 1 > PLAN_MAX_AXES;
}

int plan_enumerate(struct arena *a, const struct graph *g, int op, int64_t n_devices,
                   bool all_devices, struct strategy **out)
{
	SL_ASSERT(n_devices >= 1);
	*out = NULL;
	struct op_sig sig;
	if (!graph_op_signature(g, op, &sig))
		return 0;
	struct enum_ctx c;
	memset(&c, 0, sizeof(c));
	c.sig = &sig;
	c.n_in = g->ops[op].n_in;
	c.n_devices = n_devices;
	c.all_devices = all_devices;
	for (int l = 0; l < sig.n_labels; l++) {
		if (sig.role[l] == SIG_WHOLE || !on_input(&sig, c.n_in, l))
			continue;
		c.lab[c.n_lab] = l;
		c.div[c.n_lab] = divisors_desc(a, util_gcd64(sig.size[l], n_devices), &c.n_div[c.n_lab]);
		if (!c.div[c.n_lab])
			return 0;
		c.n_lab++;
	}
	search(&c, 0, n_devices, false);
	int n = c.n + 1;
	struct strategy *v = arena_alloc(a, (size_t)n * sizeof(*v));
	if (!v)
		return 0;
	c.out = v;
	c.n = 0;
	search(&c, 0, n_devices, false);
	all_ones(&v[c.n]);
	if (needs_check(&sig)) {
		int kept = 0;
		for (int i = 0; i < n; i++)
			if (accepted(g, op, &v[i], n_devices))
				v[kept++] = v[i];
		n = kept;
	}
	*out = n ? v : NULL;
	return n;
}
