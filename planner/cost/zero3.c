/* DeepSpeed's stage 3 as released in 2021 (training.zero3_impl
 * "deepspeed-2021"; DeepSpeed v0.3.13 to v0.5.x): what it does beyond the
 * collectives of each parameter, read from its source at tag v0.4.0
 * (deepspeed/runtime/zero/partition_parameters.py, stage3.py,
 * constants.py; the same code from v0.3.13 to v0.5.x) and from PyTorch's
 * ProcessGroupNCCL of the time (torch/lib/c10d/ProcessGroupNCCL.cpp):
 *
 * - a parameter of fewer than stage3_param_persistence_threshold elements
 *   (10^5 by default) is never partitioned: it is not gathered;
 * - each gathered parameter is all-gathered on its own (_allgather_param)
 *   into a buffer first filled with zeros (torch.zeros of the whole
 *   gathered size, then torch.cuda.synchronize() before the collective
 *   is issued), through torch.distributed.all_gather with a list of one
 *   output view per rank, which ProcessGroupNCCL gathers into a flat
 *   buffer of its own and copies out, one copy_ per rank, on its stream
 *   after the collective. The host issues all of it (the prefetch of the
 *   next module's parameters included) from the module's pre-forward or
 *   pre-backward hook, right after synchronising the device and before
 *   the module's kernels: the fill and the issue of the copies are in
 *   line, the copies' bytes follow the gather;
 * - after its forward a module's parameters are released (partitioned
 *   again) unless the elements of the parameters used before its next use
 *   are fewer than stage3_max_reuse_distance (10^9): with each layer's
 *   activations checkpointed, a layer's ops are gathered for the forward,
 *   again for its recomputation, and a third time for their backward when
 *   the ops after them in the layer hold 10^9 elements or more (counted
 *   twice: recomputed and back-propagated);
 * - gradients go into a bucket of reduce_bucket_size elements; at each
 *   flush the whole bucket buffer is divided by the data-parallel size
 *   (tensor.div_), and each parameter of the bucket is reduce-scattered
 *   on its own (_reduce_scatter_gradient) from a list of one input view
 *   per rank, which ProcessGroupNCCL copies into a flat buffer, one copy_
 *   per rank, before the collective.
 *
 * The copies, fills and divisions are memory-bound kernels priced as any
 * (cost_compute_s: the device's kernel overhead plus the bytes at its
 * memory rate). Units: seconds, bytes, elements. */
#include "cost-int.h"

#include <string.h>

/* deepspeed/runtime/zero/constants.py (v0.4.0):
 * ZERO_OPTIMIZATION_PARAM_PERSISTENCE_THRESHOLD_DEFAULT = 100000,
 * ZERO_OPTIMIZATION_MAX_REUSE_DISTANCE_DEFAULT = 1000000000 */
#define DS_PERSISTENCE_ELEMS 1e5
#define DS_MAX_REUSE_ELEMS 1e9

bool cost_zero3_deepspeed(const struct training *t)
{
	return t->zero_stage >= 3 && t->zero3_impl == ZERO3_DEEPSPEED_2021;
}

int cost_zero3_unit(const struct graph *g, const struct training *tr, int op)
{
	if (tr->zero_stage < 3 || tr->zero3_impl != ZERO3_FSDP)
		return -1;
	return graph_op_layer(&g->ops[op]);
}

bool cost_ds_persistent(double elems)
{
	return elems < DS_PERSISTENCE_ELEMS;
}

/* One memory-bound kernel moving `bytes`. */
static double mem_kernel_s(const struct topo_device *d, double bytes)
{
	struct cost_work w = {0, bytes, 0, 0, 0};
	return cost_compute_s(d, DT_FP16, &w, NULL);
}

double cost_ds_gather_inline_s(const struct topo_device *d, int64_t ranks, double bytes)
{
	if (!(bytes > 0))
		return 0;
	/* the fill, then, the device idle since the module's synchronisation,
	 * the host's issue of the list's copy_ kernels (one a rank) before it
	 * returns to issue the module's own */
	return mem_kernel_s(d, bytes) + (ranks > 1 ? (double)ranks * d->kernel_overhead_s : 0);
}

double cost_ds_copy_bytes_s(const struct topo_device *d, int64_t ranks, double bytes)
{
	if (ranks <= 1 || !(bytes > 0))
		return 0;
	/* their fixed cost counted where they are issued (above) */
	return mem_kernel_s(d, 2 * bytes) - d->kernel_overhead_s;
}

double cost_ds_list_copies_s(const struct topo_device *d, int64_t ranks, double bytes)
{
	if (ranks <= 1 || !(bytes > 0))
		return 0;
	/* one copy_ per rank, each reading and writing bytes / ranks */
	return (double)ranks * mem_kernel_s(d, 2 * bytes / (double)ranks);
}

double cost_ds_bucket_div_s(const struct topo_device *d, const struct plan_bucket *b,
                            double cap_bytes)
{
	/* the bucket buffer (reduce_bucket_size elements) whatever it holds,
	 * and a gradient larger than it, reduced from its own tensor
	 * (stage3.py, reduce_ipg_grads, average_tensor) */
	double s = mem_kernel_s(d, 2 * cap_bytes);
	if (b->bytes > cap_bytes)
		s += mem_kernel_s(d, 2 * b->bytes);
	return s;
}

int cost_zero3_gathered(const struct graph *g, const struct training *tr,
                        const struct param_reads *r, int lo, const struct dist_op *d,
                        int inputs[SIG_MAX_TENSORS], const struct comm_step *sync[SIG_MAX_TENSORS])
{
	int n = plan_op_params(g, r, lo, d, inputs, sync), m = 0;
	bool ds = cost_zero3_deepspeed(tr);
	for (int k = 0; k < n; k++) {
		if (!sync[k] || (ds && cost_ds_persistent((double)layout_local_elems(&d->in[inputs[k]]))))
			continue;
		inputs[m] = inputs[k];
		sync[m++] = sync[k];
	}
	return m;
}

/* The elements of the parameters op d is the first of [lo, ...) to read. */
static double op_param_elems(const struct graph *g, const struct param_reads *r, int lo,
                             const struct dist_op *d)
{
	int inputs[SIG_MAX_TENSORS];
	const struct comm_step *sync[SIG_MAX_TENSORS];
	int n = plan_op_params(g, r, lo, d, inputs, sync);
	double e = 0;
	for (int k = 0; k < n; k++)
		e += (double)layout_local_elems(&d->in[inputs[k]]);
	return e;
}

/* DeepSpeed's trace of one micro-batch over the ops [lo, hi): the
 * forward, then the backward in reverse, where each checkpointed block
 * (a layer under full recomputation; the chunk when it names none) is
 * first recomputed forward. Each entry an op, tagged by pass. */
struct use {
	int op;
	int pass; /* 0 forward, 1 recomputed, 2 backward */
};

bool cost_ds_regathers(struct arena *a, const struct graph *g, const struct plan *p,
                       const struct param_reads *r, int lo, int hi, enum recompute_mode rec,
                       uint8_t *rec_n, uint8_t *bwd_n)
{
	int n = hi - lo;
	if (n <= 0)
		return true;
	double *elems = arena_calloc(a, (size_t)n, sizeof(double));
	struct use *t = arena_alloc_raw(a, 3 * (size_t)n * sizeof(*t));
	int *last = arena_alloc_raw(a, (size_t)n * sizeof(int));
	double *at = arena_alloc_raw(a, (3 * (size_t)n + 1) * sizeof(double));
	if (!elems || !t || !last || !at)
		return false;
	for (int i = lo; i < hi; i++)
		elems[i - lo] = op_param_elems(g, r, lo, &p->ops[i]);
	int k = 0;
	for (int i = lo; i < hi; i++)
		t[k++] = (struct use){i, 0};
	bool full = rec == RECOMPUTE_FULL, layers = full && graph_ops_name_layers(g, lo, hi);
	for (int j = hi; j > lo;) {
		int L = graph_op_layer(&g->ops[j - 1]), i = j - 1;
		while (i > lo && graph_op_layer(&g->ops[i - 1]) == L)
			i--;
		bool block = full && (L >= 0 || !layers);
		for (int x = i; x < j && block; x++)
			t[k++] = (struct use){x, 1};
		for (int x = j - 1; x >= i; x--)
			t[k++] = (struct use){x, 2};
		j = i;
	}
	/* at[u]: the elements of the uses before u; an op's parameters are
	 * still there at a use when those between it and its previous use
	 * are fewer than the reuse distance */
	at[0] = 0;
	for (int u = 0; u < k; u++)
		at[u + 1] = at[u] + elems[t[u].op - lo];
	for (int x = 0; x < n; x++) {
		last[x] = -1;
		rec_n[x] = bwd_n[x] = 0;
	}
	for (int u = 0; u < k; u++) {
		int x = t[u].op - lo, prev = last[x];
		last[x] = u;
		if (t[u].pass == 0)
			continue;
		bool kept = prev >= 0 && at[u] - at[prev + 1] < DS_MAX_REUSE_ELEMS;
		if (!kept)
			*(t[u].pass == 1 ? &rec_n[x] : &bwd_n[x]) = 1;
	}
	return true;
}
