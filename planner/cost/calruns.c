/* calruns.c — the runs a calibration's training fit was fitted on, and a
 * plan's settings outside them (docs/validation.md, "Outside the fitted
 * runs").
 *
 * A training fit's figures are fitted to whole iterations of some runs:
 * their devices, tensor-, pipeline-, context- and expert-parallel
 * degrees, ZeRO stage, recomputation, number format and framework. Its
 * cross-validated spread, and so every interval drawn from it, holds for
 * runs like those; a plan with a setting none of them had is an
 * extrapolation the spread does not measure. `calibrate --runs` records
 * each setting's values over the fitted rows' plans, and every prediction
 * names the settings of its plan that lie outside them.
 *
 * Units: counts. No hot path: one pass over a plan's ops (plan_shape).
 */
#include <stdio.h>
#include <string.h>

#include "cost-int.h"

const char *const cal_setting_keys[CAL_SET_COUNT] = {
        "devices", "tensor_parallel", "pipeline_stages", "context_parallel", "expert_parallel",
        "sequence", "zero_stage", "recompute", "compute", "framework"};
const char *const cal_compute_names[CAL_COMPUTE_COUNT] = {"fp32", "fp16", "bf16", "fp8"};

void cost_cal_point_of(const struct training *t, const struct graph *g, int64_t devices,
                       int64_t tp, int64_t ep, struct cal_point *out)
{
	int compute = cost_precision_fp8(t->precision) ? 3
	              : t->dtype == DT_FP16            ? 1
	              : t->dtype == DT_BF16            ? 2
	                                               : 0;
	*out = (struct cal_point){.v = {
	        [CAL_SET_DEVICES] = devices,
	        [CAL_SET_TP] = tp > 1 ? tp : 1,
	        [CAL_SET_PP] = t->pipeline_stages > 1 ? t->pipeline_stages : 1,
	        [CAL_SET_CP] = t->context_parallel > 1 ? t->context_parallel : 1,
	        [CAL_SET_EP] = ep > 1 ? ep : 1,
	        [CAL_SET_SEQ] = g && g->gen && g->gen->seq > 0 ? g->gen->seq : 0,
	        [CAL_SET_ZERO] = t->zero_stage,
	        [CAL_SET_RECOMPUTE] = t->recompute,
	        [CAL_SET_COMPUTE] = compute,
	        [CAL_SET_FRAMEWORK] = t->framework,
	}};
}

void cost_cal_point(const struct plan *p, struct cal_point *out)
{
	const struct training *t = &p->scenario->training;
	struct plan_shape sh;
	plan_shape(p, &sh);
	/* a pipelined plan is one stage's, on its devices */
	int64_t pp = t->pipeline_stages > 1 ? t->pipeline_stages : 1;
	cost_cal_point_of(t, p->graph, p->n_devices * pp, sh.tp, sh.ep, out);
}

void cost_cal_runs_add(struct cal_runs *r, const struct cal_point *pt)
{
	for (int k = 0; k < CAL_SET_RANGES; k++) {
		int64_t v = pt->v[k];
		bool first = k == CAL_SET_SEQ ? r->lo[k] == 0 : !r->have;
		if (k == CAL_SET_SEQ && v == 0)
			continue;
		r->lo[k] = first || v < r->lo[k] ? v : r->lo[k];
		r->hi[k] = first || v > r->hi[k] ? v : r->hi[k];
	}
	for (int k = CAL_SET_RANGES; k < CAL_SET_COUNT; k++)
		r->seen[k] |= 1u << pt->v[k];
	r->have = true;
}

/* A set's value in words. */
static const char *value_name(int k, int64_t v, char *buf, size_t size)
{
	switch (k) {
	case CAL_SET_RECOMPUTE:
		return v >= 0 && v < RECOMPUTE_COUNT ? recompute_names[v] : "?";
	case CAL_SET_COMPUTE:
		return v >= 0 && v < CAL_COMPUTE_COUNT ? cal_compute_names[v] : "?";
	case CAL_SET_FRAMEWORK:
		return v >= 0 && v < FRAMEWORK_COUNT ? framework_names[v] : "?";
	default:
		snprintf(buf, size, "%lld", (long long)v);
		return buf;
	}
}

/* What the runs hold of setting k, in words: "1-8", "4096", "none, full". */
static void fitted_text(char *buf, size_t size, const struct cal_runs *r, int k)
{
	char b[24];
	if (k < CAL_SET_RANGES) {
		if (r->lo[k] == r->hi[k])
			snprintf(buf, size, "%lld", (long long)r->lo[k]);
		else
			snprintf(buf, size, "%lld-%lld", (long long)r->lo[k], (long long)r->hi[k]);
		return;
	}
	size_t len = 0;
	buf[0] = 0;
	for (int j = 0; j < 32 && len < size; j++)
		if (r->seen[k] >> j & 1) {
			int w = snprintf(buf + len, size - len, "%s%s", len ? ", " : "",
			                 value_name(k, j, b, sizeof b));
			len += w > 0 ? (size_t)w : 0;
		}
}

/* Each setting's name in words. */
static const char *const setting_label[CAL_SET_COUNT] = {
        "devices", "TP", "PP", "CP", "EP", "sequence", "ZeRO", "recompute", "compute",
        "framework"};

/* Setting k at `value` in words, then `tail`, after sep, at buf + *len:
 * "TP 8", "32 devices", "fp16 compute" (the devices and the number format
 * after their value). */
static void setting_text(char *buf, size_t size, size_t *len, const char *sep, int k,
                         const char *value, const char *tail)
{
	if (*len >= size)
		return;
	bool after = k == CAL_SET_DEVICES || k == CAL_SET_COMPUTE;
	int w = after ? snprintf(buf + *len, size - *len, "%s%s %s%s", sep, value, setting_label[k],
	                         tail)
	              : snprintf(buf + *len, size - *len, "%s%s %s%s", sep, setting_label[k], value,
	                         tail);
	*len += w > 0 ? (size_t)w : 0;
}

int cost_cal_outside(const struct cal_runs *r, const struct cal_point *pt,
                     struct cal_outside *out)
{
	int n = 0;
	if (!r || !r->have)
		return 0;
	for (int k = 0; k < CAL_SET_COUNT; k++) {
		int64_t v = pt->v[k];
		char b[24];
		bool inside = k < CAL_SET_RANGES
		                      ? (v >= r->lo[k] && v <= r->hi[k]) ||
		                                (k == CAL_SET_SEQ && (v == 0 || r->lo[k] == 0))
		                      : v >= 0 && v < 32 && (r->seen[k] >> v & 1);
		if (inside)
			continue;
		struct cal_outside *o = &out[n++];
		*o = (struct cal_outside){.setting = (enum cal_setting)k};
		snprintf(o->value, sizeof o->value, "%s", value_name(k, v, b, sizeof b));
		fitted_text(o->fitted, sizeof o->fitted, r, k);
	}
	return n;
}

const char *cost_cal_outside_text(char *buf, size_t size, const struct cal_outside *o, int n)
{
	size_t len = 0;
	if (size)
		buf[0] = 0;
	for (int i = 0; i < n; i++) {
		char tail[96];
		snprintf(tail, sizeof tail, " (fitted: %s)", o[i].fitted);
		setting_text(buf, size, &len, i ? ", " : "", o[i].setting, o[i].value, tail);
	}
	return buf;
}

const char *cost_cal_outside_tally_text(char *buf, size_t size, const struct cal_runs *r,
                                        const int64_t count[CAL_SET_COUNT])
{
	size_t len = 0;
	if (size)
		buf[0] = 0;
	for (int k = 0; r->have && k < CAL_SET_COUNT && len < size; k++) {
		if (count[k] <= 0)
			continue;
		char v[96];
		fitted_text(v, sizeof v, r, k);
		int w = snprintf(buf + len, size - len, "%s%s: %lld (fitted: %s)", len ? "; " : "",
		                 setting_label[k], (long long)count[k], v);
		len += w > 0 ? (size_t)w : 0;
	}
	return buf;
}

const char *cost_cal_runs_text(char *buf, size_t size, const struct cal_runs *r)
{
	size_t len = 0;
	if (size)
		buf[0] = 0;
	for (int k = 0; r->have && k < CAL_SET_COUNT; k++) {
		char v[96];
		if (k == CAL_SET_SEQ && r->lo[k] == 0)
			continue;  /* no fitted row's sequence was known */
		fitted_text(v, sizeof v, r, k);
		setting_text(buf, size, &len, len ? ", " : "", k, v, "");
	}
	return buf;
}
