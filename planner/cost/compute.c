/* compute.c — the time of one kernel on one device (cost_compute_s,
 * docs/cost-models.md): a kernel's fixed overhead plus the larger of its
 * GEMM time, at the device's peak times η_max times a shape factor
 * g(m)·g(n)·g(k) that small or skinny GEMMs fall below, and its memory
 * time at the HBM bandwidth times η_mem. Other kernels have no shape
 * factor. cost_op_work gives an op's local GEMM dimensions from its
 * layouts; it is called once per op and allocates nothing.
 *
 * Units: seconds, FLOPs, bytes, FLOP/s, bytes/s. Hot path: the estimate
 * prices every op with it; no allocation.
 */
#include <math.h>

#include <gsl/gsl_cdf.h>

#include "cost-int.h"

double cost_device_peak(const struct topo_device *d, enum dtype dt, bool *fallback)
{
	double peak = d->peak_flops[dt];
	if (peak > 0)
		return peak;
	static const enum dtype floats[] = {DT_BF16, DT_FP16, DT_FP32};
	for (size_t i = 0; i < SL_COUNTOF(floats); i++)
		if (d->peak_flops[floats[i]] > peak)
			peak = d->peak_flops[floats[i]];
	if (fallback)
		*fallback = true;
	return peak;
}

double cost_kernel_s(const struct cost_kernel_model *p, const struct cost_work *w)
{
	if (w->flops <= 0 && w->bytes <= 0)
		return 0; /* no kernel runs (a view) */
	double g = 1;
	if (w->m > 0 && w->n > 0 && w->k > 0)
		g = cost_shape_factor(w->m, p->half_dim) * cost_shape_factor(w->n, p->half_dim) *
		    cost_shape_factor(w->k, p->half_dim);
	double t_flops = w->flops > 0 && p->gemm_flops > 0 ? w->flops / (p->gemm_flops * g) : 0;
	double t_bytes = w->bytes > 0 ? w->bytes / p->memory_bps : 0;
	return p->overhead_s + (t_flops > t_bytes ? t_flops : t_bytes);
}

double cost_compute_s(const struct topo_device *d, enum dtype dt, const struct cost_work *w,
                      bool *fallback)
{
	bool fb = false;
	double peak = cost_device_peak(d, dt, &fb);
	if (fallback && fb && w->flops > 0)
		*fallback = true;
	struct cost_kernel_model p = {peak * d->matmul_efficiency, d->gemm_half_dim,
	                              d->hbm_bps * d->memory_efficiency, d->kernel_overhead_s};
	return cost_kernel_s(&p, w);
}

double cost_fp8_gemm_s(const struct topo_device *d, const struct cost_work *w, bool *fallback)
{
	struct topo_device f = *d;
	for (int i = 0; i < DT_COUNT; i++)
		f.peak_flops[i] = d->peak_fp8_flops;
	if (d->fp8_matmul_efficiency > 0)
		f.matmul_efficiency = d->fp8_matmul_efficiency;
	return cost_compute_s(&f, DT_BF16, w, fallback);
}

#define FP8_CAST_BYTES 4.0 /* read bf16 (2), write FP8 and its transpose (1 + 1) */

double cost_fp8_cast_s(const struct topo_device *d, double elems)
{
	struct cost_work w = {0, elems * FP8_CAST_BYTES, 0, 0, 0};
	return cost_compute_s(d, DT_BF16, &w, NULL);
}

int cost_kernel_class(enum op_kind kind)
{
	switch (kind) {
	case OP_LAYERNORM:
	case OP_RMSNORM:
		return TOPO_KC_NORM;
	case OP_SOFTMAX:
		return TOPO_KC_SOFTMAX;
	case OP_DROPOUT:
		return TOPO_KC_DROPOUT;
	case OP_GELU:
	case OP_SILU:
	case OP_RELU:
	case OP_SIGMOID:
		return TOPO_KC_ACTIVATION;
	case OP_SOFTMAXCROSSENTROPY:
		return TOPO_KC_LOSS;
	default:
		return -1;
	}
}

double cost_op_kernel_s(const struct topo_device *d, enum op_kind kind, enum dtype dt,
                        const struct cost_work *w, bool backward, bool *fallback)
{
	int c = cost_kernel_class(kind);
	if (c < 0 || d->kernel_efficiency[c][backward] <= 0)
		return cost_compute_s(d, dt, w, fallback);
	struct topo_device k = *d;
	k.memory_efficiency = d->kernel_efficiency[c][backward];
	return cost_compute_s(&k, dt, w, fallback);
}

bool cost_op_work(const struct graph *g, const struct dist_op *d, struct cost_work *w)
{
	const struct op *o = &g->ops[d->op];
	*w = (struct cost_work){d->flops_per_rank, d->bytes_per_rank, 0, 0, 0};
	if (o->kind != OP_MATMUL && o->kind != OP_BATCHMATMUL)
		return false;
	/* X [batch..., m, k] (k, m with transpose_a) times W [batch..., k, n]
	 * (n, k with transpose_b), as models/catalog.c shapes them; a rank
	 * holds the slices of its layouts. */
	int64_t x[GRAPH_MAX_RANK], y[GRAPH_MAX_RANK];
	int r = d->in[0].rank;
	SL_ASSERT(r >= 2 && d->in[1].rank == r);
	layout_local_shape(&d->in[0], x);
	layout_local_shape(&d->in[1], y);
	bool ta = o->attrs.transpose_a, tb = o->attrs.transpose_b;
	double batch = 1;
	for (int i = 0; i < r - 2; i++)
		batch *= (double)x[i];
	w->m = batch * (double)x[r - (ta ? 1 : 2)];
	w->k = (double)x[r - (ta ? 2 : 1)];
	w->n = (double)y[r - (tb ? 2 : 1)];
	return true;
}

double cost_straggler_factor(const struct topo_device *d, int64_t n_devices)
{
	if (d->speed_cv <= 0 || n_devices <= 1)
		return 1;
	double n = (double)n_devices;
	return 1 + d->speed_cv * gsl_cdf_ugaussian_Pinv((n - 0.375) / (n + 0.25));
}

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

double cost_device_speed(const struct topo_device *d, uint64_t seed, int64_t rank)
{
	if (d->speed_cv <= 0)
		return 1;
	uint64_t h = splitmix64(seed ^ splitmix64((uint64_t)rank));
	/* two uniforms in (0, 1) from the top 53 bits of two draws */
	double u1 = ((double)(h >> 11) + 0.5) / 9007199254740992.0;
	double u2 = ((double)(splitmix64(h) >> 11) + 0.5) / 9007199254740992.0;
	double z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
	double f = 1 + d->speed_cv * z;
	return f < 0.5 ? 0.5 : f;
}

double cost_rank_factor(const struct topology *t, uint64_t seed, int64_t rank)
{
	return cost_device_speed(&t->device, seed, rank) * topo_rank_slowdown(t, rank);
}

double cost_slowest_factor(const struct topology *t, int64_t n)
{
	return cost_straggler_factor(&t->device, n) * topo_max_slowdown(t, n);
}
