/* planner-int.h — details shared by the planner's files, not part of its
 * public interface. */
#ifndef SHARDLAB_PLANNER_INT_H
#define SHARDLAB_PLANNER_INT_H

#include "planner.h"

/* Rewrites two layouts over one device matrix: the coarsest matrix whose
 * axes refine the axes of both (an axis of 4 that the other side cuts as
 * 2 x 2 becomes two axes of 2). The tensor maps and partial sets follow;
 * axes of size 1 disappear. False when the two matrices have no common
 * refinement (2 x 3 against 3 x 2) or cover different ranks. */
bool layout_refine(const struct layout *a, const struct layout *b, struct layout *ra,
                   struct layout *rb);

/* The axes over which copies of the tensor are replicated: used by no
 * dimension and not partial, with size > 1, as a bit mask. */
uint32_t layout_replica_axes(const struct layout *l);

/* The bytes per device redist_derive would find, without building rank
 * groups (a cost query); -1 when there is no redistribution. */
double redist_bytes(const struct layout *src, const struct layout *dst);

/* Which output of op p is tensor t (it must be one). */
int plan_output_index(const struct op *p, int t);

/* Bitmask helpers. */
static inline int axis_popcount(uint32_t m)
{
	int n = 0;
	for (; m; m &= m - 1)
		n++;
	return n;
}

#endif
