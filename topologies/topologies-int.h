/* topologies-int.h — private helpers shared by load.c and query.c. */
#ifndef SHARDLAB_TOPOLOGIES_INT_H
#define SHARDLAB_TOPOLOGIES_INT_H

#include "topologies.h"

/* Innermost tier in which local devices i and j of one server share a
 * group, or -1 when they share none (i != j). */
int topo_local_tier(const struct topology *t, int i, int j);

#endif
