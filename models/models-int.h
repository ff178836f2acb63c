/* models-int.h — private to models/: the op catalog's per-kind rules and
 * the graph builder that the file loader and the generators share, so that
 * shape inference, FLOPs and bytes have one code path.
 */
#ifndef SHARDLAB_MODELS_INT_H
#define SHARDLAB_MODELS_INT_H

#include "models.h"

/* Where a diagnostic about an op goes: the op's object in a model file,
 * else the generator object of a file, else the bare list (path
 * "generator"). */
struct op_site {
	struct diag_list *diags;
	const struct jv *op;
	const struct jv *gen;
	const char *name;
};

/* An inferred output. */
struct op_shape {
	int rank;
	int64_t dims[GRAPH_MAX_RANK];
	int64_t elems;
	enum dtype dtype;
};

/* One shape inference: the rule reads `in` and `at` (it may resolve
 * attributes, e.g. Reshape's -1 or a negative axis) and fills `out`. */
struct op_infer {
	enum op_kind kind;
	int n_in, n_out;
	const struct tensor *const *in;
	struct op_attrs *at;
	struct op_shape *out;
	const struct op_site *site;
};

/* How forward FLOPs are counted. */
enum flop_rule {
	FLOP_NONE,      /* views and data movement */
	FLOP_OUT,       /* per_elem per output element */
	FLOP_IN0,       /* per_elem per element of input 0 */
	FLOP_CONTRACT,  /* 2 x output elements x contracted length */
};

struct op_info {
	const char *name;
	int min_in, max_in;          /* max_in 0: no upper bound */
	int n_out;                   /* 0: attrs.n_outputs (Split) */
	const char *const *attrs;    /* keys a model file may give, NULL-ended */
	const char *const *required; /* of those, the ones it must give */
	enum flop_rule flops;
	double per_elem;
	bool (*infer)(struct op_infer *c);
};

const struct op_info *op_info(enum op_kind k);
void op_attrs_default(enum op_kind k, struct op_attrs *at);
int op_n_outputs(enum op_kind k, const struct op_attrs *at);
/* FLOPs, bytes and parameter elements of an op whose tensors exist. */
void op_costs(struct op *op, const struct tensor *ts);
/* A diagnostic about an op; `where` is a member path inside the op object
 * such as "inputs" or "attrs.perm". */
void op_error(const struct op_site *s, const char *where, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;
/* "[64,32]" into buf. */
const char *op_shape_str(char *buf, size_t size, int rank, const int64_t *dims);

/* The builder: tensors and ops appended in topological order. */
struct graph_builder {
	struct arena *a;
	struct graph *g;
	int cap_ops, cap_tensors;
	bool oom;
};

/* False when out of memory. */
bool graph_builder_init(struct graph_builder *b, struct arena *a, const char *name);
/* Room for at least n_ops ops and n_tensors tensors in all, so that a
 * builder that knows its size allocates once rather than doubling (each
 * doubling copies the array and leaves the old one in the arena). False
 * when out of memory. */
bool graph_builder_reserve(struct graph_builder *b, int n_ops, int n_tensors);
/* A graph input or parameter; -1 when out of memory. The shape must be
 * valid (rank <= GRAPH_MAX_RANK, dims >= 1, element count in range). */
int graph_builder_tensor(struct graph_builder *b, const char *name, enum tensor_role role,
                         enum dtype dt, int rank, const int64_t *dims);
/* An op over existing tensors: infers its outputs and returns the index of
 * output 0. Returns -1 after a diagnostic at `site`, or silently when an
 * input is -1 (a failed producer: its consumers are not checked). */
int graph_builder_op(struct graph_builder *b, enum op_kind kind, const char *name, const int *in,
                     int n_in, const struct op_attrs *at, int line, const struct op_site *site);

/* Generator parameters a model file may give for a kind, NULL-ended. */
const char *const *model_gen_fields(enum model_gen_kind kind);

#endif
