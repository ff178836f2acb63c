/* topologies-int.h — private helpers shared by load.c and query.c. */
#ifndef SHARDLAB_TOPOLOGIES_INT_H
#define SHARDLAB_TOPOLOGIES_INT_H

#include "topologies.h"

/* Innermost tier in which local devices i and j of one server share a
 * group, or -1 when they share none (i != j). */
int topo_local_tier(const struct topology *t, int i, int j);

/* The innermost tier joining local devices a and b of server s whose link
 * between them is up (t->faults), or TOPO_NETWORK. */
int topo_live_tier(const struct topology *t, int64_t s, int a, int b);

#endif
