/* verify-int.h — what verify.c and kernels.c share: a piece of a tensor as
 * one rank holds it, and the op kernels that run on such pieces. */
#ifndef SHARDLAB_VERIFY_INT_H
#define SHARDLAB_VERIFY_INT_H

#include <stddef.h>

#include "verify.h"

/* A box of a tensor: `shape` elements from `lo` of a whole of shape
 * `full`, row-major in `data`. The reference is the box of the whole. */
struct vpiece {
	double *data;
	int rank;
	int64_t shape[GRAPH_MAX_RANK];
	int64_t lo[GRAPH_MAX_RANK];
	int64_t full[GRAPH_MAX_RANK];
};

enum vk_status { VK_OK, VK_UNSUPPORTED, VK_BROKEN };

/* Runs op `op` of g (shapes already scaled) on one rank's pieces: the
 * inputs `in[n_in]`, the outputs `out[n_out]` (data allocated, shapes and
 * boxes set). An op whose reduced dimension is cut leaves partial sums
 * that add up to the whole (ReduceMean divides by the whole count; Gather
 * looks up only the rows the rank holds). VK_BROKEN when an output needs
 * an element the rank does not hold; VK_UNSUPPORTED for what the verifier
 * cannot execute; `why` says which. `salt` seeds Dropout's mask. */
enum vk_status verify_kernel(const struct graph *g, int op, const struct vpiece *in,
                             struct vpiece *out, uint64_t salt, char *why, size_t why_size);

/* Which sizes shrink at a scale (scale.c). */
struct verify_scaling {
	int64_t scale;
	int n;                 /* distinct sizes */
	int64_t *value, *req;  /* each size, and the lcm of the plan's cuts of it */
	int64_t *f;            /* each size shrinks to value / f (f = 1: whole) */
};
/* False when out of memory. */
bool verify_scaling_init(struct verify_scaling *sc, const struct plan *p, int64_t scale);
void verify_scaling_free(struct verify_scaling *sc);
int64_t verify_scaling_dim(const struct verify_scaling *sc, int64_t v);

/* The backward of op `op` on one rank's pieces: `in` the forward inputs,
 * `dout` the gradients of the outputs (the rank's boxes, complete), `din`
 * the inputs' gradients, accumulated (+=) into the caller's zeroed
 * buffers; a NULL din[j].data is skipped (indices). The result is this
 * rank's share: where the op cut labels an input does not carry, the
 * ranks' shares add up to the gradient. Cross-entropy over a cut class
 * dimension takes each row's global max and sum of exponentials in rmax
 * and rsum (else NULL). */
enum vk_status verify_vjp(const struct graph *g, int op, const struct vpiece *in,
                          const struct vpiece *dout, struct vpiece *din, const double *rmax,
                          const double *rsum, uint64_t salt, char *why, size_t why_size);

/* A uniform number in [0, 1) from a key (splitmix64). */
double verify_hash01(uint64_t key);

int64_t verify_elems(const int64_t *shape, int rank);

#endif
