/* faults.c — whether a job's ranks still reach each other under faults.
 *
 * A route exists between two ranks of one server when a tier joins them
 * with its link up, or when both still have a NIC (topo_nic_of) on leaves
 * that reach each other; between servers when both have a NIC and their
 * leaves are the same or a spine is up (topologies.h, t->faults). The
 * ranks, the leaves and one node for the spine level go into a union-find;
 * ranks in different sets lost each other. Pairs of one server that the
 * sets join only through a third device (devices do not forward) are
 * checked one by one after.
 *
 * Cost: O(n α(n)) for n ranks plus O(d^2) per server for d devices; run
 * once per scenario, never per message.
 */
#include "topologies-int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int64_t find(int64_t *up, int64_t x)
{
	while (up[x] != x) {
		up[x] = up[up[x]];
		x = up[x];
	}
	return x;
}

static void join(int64_t *up, int64_t a, int64_t b)
{
	a = find(up, a);
	b = find(up, b);
	if (a != b)
		up[a > b ? a : b] = a < b ? a : b; /* the smaller rank is the root */
}

/* Appends ", a-b" style ranges of the ranks whose root is `root`. */
static void ranges_of(const int64_t *up_root, int64_t n, int64_t root, char *buf, size_t size)
{
	size_t used = strlen(buf);
	bool first = true;
	for (int64_t r = 0; r < n && used + 24 < size; r++) {
		if (up_root[r] != root || (r > 0 && up_root[r - 1] == root))
			continue;
		int64_t e = r;
		while (e + 1 < n && up_root[e + 1] == root)
			e++;
		int w = e > r ? snprintf(buf + used, size - used, "%s%lld-%lld", first ? "" : ", ",
		                         (long long)r, (long long)e)
		              : snprintf(buf + used, size - used, "%s%lld", first ? "" : ", ",
		                         (long long)r);
		if (w < 0 || (size_t)w >= size - used)
			break;
		used += (size_t)w;
		first = false;
	}
	if (used + 24 >= size && size > 4)
		snprintf(buf + size - 5, 5, "...");
}

/* Whether two local devices of server s have a route (see above). */
static bool pair_routed(const struct topology *t, int64_t s, int a, int b)
{
	if (topo_live_tier(t, s, a, b) >= 0)
		return true;
	int ka = topo_nic_of(t, s, a), kb = topo_nic_of(t, s, b);
	if (ka < 0 || kb < 0)
		return false;
	return topo_leaf_switch(t, s, ka) == topo_leaf_switch(t, s, kb) || topo_spine_rate(t) > 0;
}

bool topo_faults_connected(const struct topology *t, int64_t n, char *why, size_t size)
{
	SL_ASSERT(why && size > 0);
	why[0] = '\0';
	if (!t->faults || n <= 1)
		return true;
	int64_t d = t->devices_per_server, leaves = topo_fabric_leaves(t);
	int64_t nodes = n + leaves + 1, spine = n + leaves;
	int64_t *up = malloc((size_t)nodes * sizeof(*up));
	if (!up) {
		snprintf(why, size, "out of memory checking the faults");
		return false;
	}
	for (int64_t i = 0; i < nodes; i++)
		up[i] = i;
	int64_t servers = (n + d - 1) / d;
	for (int64_t s = 0; s < servers; s++) {
		int here = (int)(n - s * d < d ? n - s * d : d);
		for (int a = 0; a < here; a++)
			for (int b = a + 1; b < here; b++)
				if (topo_live_tier(t, s, a, b) >= 0)
					join(up, s * d + a, s * d + b);
	}
	bool spine_up = topo_spine_rate(t) > 0;
	for (int64_t r = 0; r < n && leaves > 0; r++) {
		int k = topo_nic_of(t, r / d, (int)(r % d));
		if (k < 0)
			continue;
		int64_t leaf = n + topo_leaf_switch(t, r / d, k);
		join(up, r, leaf);
		if (spine_up)
			join(up, leaf, spine);
	}
	for (int64_t r = 0; r < n; r++)
		up[r] = find(up, r);
	int64_t parts = 0;
	for (int64_t r = 0; r < n; r++)
		parts += up[r] == r;
	bool ok = parts == 1;
	if (!ok) {
		snprintf(why, size, "the faults split the job's ranks into %lld parts that cannot reach "
		                    "each other: ranks ", (long long)parts);
		int64_t shown = 0;
		for (int64_t r = 0; r < n && shown < 4; r++) {
			if (up[r] != r)
				continue;
			if (shown++) {
				size_t used = strlen(why);
				snprintf(why + used, size - used, " | ranks ");
			}
			ranges_of(up, n, r, why, size);
		}
		if (shown < parts) {
			size_t used = strlen(why);
			snprintf(why + used, size - used, " | ...");
		}
	}
	/* Devices do not forward: a pair of one server joined only through a
	 * third device has no route. */
	for (int64_t s = 0; ok && s < servers; s++) {
		int here = (int)(n - s * d < d ? n - s * d : d);
		for (int a = 0; ok && a < here; a++)
			for (int b = a + 1; ok && b < here; b++)
				if (!pair_routed(t, s, a, b)) {
					snprintf(why, size,
					         "the faults leave ranks %lld and %lld (server %lld) no path: "
					         "no tier's link between them is up and they have no NIC "
					         "left to go round",
					         (long long)(s * d + a), (long long)(s * d + b), (long long)s);
					ok = false;
				}
	}
	free(up);
	return ok;
}
