/* store.c — a study's rows in SQLite (docs/formats.md, "The sweep
 * database").
 *
 * One table `points`, one row per point, keyed by the point (cluster,
 * servers, fault case, global batch, TP, PP, micro-batch, sequence parallelism, expert
 * and context parallelism, schedule, virtual stages, recompute, ZeRO), every row carrying the
 * inputs' hash; a `meta` table holds the hash the database was written for,
 * the schema's version (STORE_SCHEMA) and the clusters' calibrations. WAL journal, synchronous
 * NORMAL: a committed transaction survives the process being killed; a
 * unit's rows go in one transaction, so a kill loses at most the unit
 * being written, which a rerun computes again. No hot path beyond one
 * prepared INSERT per point.
 *
 * Every row carries a checksum of its figures (FNV-1a over the values as
 * stored: a byte changed in the file changes a figure, and the checksum
 * no longer matches). A sweep that opens the database verifies every row
 * and deletes those that fail, so that it computes them again; fit and
 * plot refuse a database holding one. One sweep writes a database at a
 * time: the writer holds an flock(2) on the database file (independent of
 * SQLite's own fcntl locks, and taken before SQLite opens the file, so
 * that closing it never drops SQLite's locks), and a second sweep is
 * refused.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "studies-int.h"

struct study_store {
	sqlite3 *db;
	sqlite3_stmt *insert, *done, *sim;
	const struct study *st;
	char hash[17];
	const char *path;
	int lock_fd;                       /* the writer's flock, -1 when read-only */
	const char *calibration;           /* study_calibration_key; the writer's (malloc'd) */
	const char *calibration_files;     /* each cluster's calibration file, relative to the
	                                      database's folder ("a100=../c.json; h100=none");
	                                      the writer's (malloc'd) */
	int64_t bad_rows;                  /* rows that failed their checksum */
};

/* Column names of the estimate's categories: "est_" + the category. The
 * point's key is a UNIQUE index beside a rowid table: rows of ~400 bytes
 * append to the table, the key's B-tree stays small (WITHOUT ROWID would
 * move whole rows through page splits). */
static const char *const schema =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
	"CREATE TABLE IF NOT EXISTS points("
	" inputs_hash TEXT NOT NULL, cluster INTEGER NOT NULL, cluster_name TEXT NOT NULL,"
	" device_kind TEXT NOT NULL, topology TEXT NOT NULL,"
	" servers INTEGER NOT NULL, devices INTEGER NOT NULL, global_batch INTEGER NOT NULL,"
	" tp INTEGER NOT NULL, pp INTEGER NOT NULL, dp INTEGER NOT NULL,"
	" micro_batch INTEGER NOT NULL, micro_batches INTEGER NOT NULL,"
	" schedule INTEGER NOT NULL, virtual_stages INTEGER NOT NULL,"
	" recompute INTEGER NOT NULL, zero_stage INTEGER NOT NULL, config TEXT NOT NULL,"
	" ok INTEGER NOT NULL, error TEXT,"
	" iteration_s REAL, tokens_per_s REAL, mfu REAL, memory_bytes REAL, hbm_bytes REAL,"
	" oom INTEGER, compute_s REAL, comm_s REAL, bubble_s REAL,"
	" est_compute_forward REAL, est_compute_backward REAL, est_comm_forward REAL,"
	" est_redistribution REAL, est_comm_backward REAL, est_recompute REAL,"
	" est_param_gather REAL, est_pipeline_p2p REAL, est_gradient_sync REAL,"
	" est_optimizer REAL, est_pipeline_bubble REAL,"
	" iterations REAL, time_to_train_s REAL, device_hours REAL, energy_kwh REAL, cost REAL,"
	" simulated INTEGER NOT NULL DEFAULT 0, sim_error TEXT, sim_iteration_s REAL,"
	" sim_compute_s REAL, sim_comm_s REAL, sim_bubble_s REAL, sim_time_to_train_s REAL,"
	" sequence_parallel INTEGER NOT NULL DEFAULT 0,"
	" expert_parallel INTEGER NOT NULL DEFAULT 1,"
	" context_parallel INTEGER NOT NULL DEFAULT 1,"
	" model_flops REAL, tokens_per_iteration REAL, state_bytes REAL,"
	" state_bytes_per_device REAL, goodput REAL, checkpoint_interval_s REAL,"
	" interruptions REAL, effective_time_s REAL,"
	" checksum TEXT,"
	" fault INTEGER NOT NULL DEFAULT 0, fault_name TEXT NOT NULL DEFAULT 'none',"
	" iteration_rel_sd REAL, iteration_lo_s REAL, iteration_hi_s REAL,"
	" UNIQUE(cluster, servers, fault, global_batch, tp, pp, micro_batch, sequence_parallel,"
	"        expert_parallel, context_parallel, schedule, virtual_stages, recompute,"
	"        zero_stage));";
_Static_assert(EST_CATEGORY_COUNT == 11, "the points table has a column per category");

/* The schema's version in meta: 2 added the fault cases and the
 * intervals. */
#define STORE_SCHEMA "2"

#define KEY_COLS "cluster, servers, fault, global_batch, tp, pp, micro_batch, sequence_parallel, " \
                 "expert_parallel, context_parallel, schedule, virtual_stages, recompute, " \
                 "zero_stage"

/* The point's key into ?first .. ?first+13 (KEY_COLS' order). */
#define KEY_N 14
static void bind_key(sqlite3_stmt *q, int first, const struct study_row *r)
{
	const struct search_config *c = &r->config;
	sqlite3_bind_int(q, first, r->cluster);
	sqlite3_bind_int64(q, first + 1, r->servers);
	sqlite3_bind_int(q, first + 2, r->fault);
	sqlite3_bind_int64(q, first + 3, r->global_batch);
	sqlite3_bind_int64(q, first + 4, c->tp);
	sqlite3_bind_int64(q, first + 5, c->pp);
	sqlite3_bind_int64(q, first + 6, c->micro_batch);
	sqlite3_bind_int(q, first + 7, c->sequence_parallel);
	sqlite3_bind_int64(q, first + 8, c->ep > 1 ? c->ep : 1);
	sqlite3_bind_int64(q, first + 9, c->cp > 1 ? c->cp : 1);
	sqlite3_bind_int(q, first + 10, c->schedule);
	sqlite3_bind_int64(q, first + 11, c->virtual_stages);
	sqlite3_bind_int(q, first + 12, c->recompute);
	sqlite3_bind_int(q, first + 13, c->zero_stage);
}

/* "cluster = ?N AND ... zero_stage = ?N+13", KEY_COLS' order. */
static void key_where(char *buf, size_t size, int first)
{
	static const char *const cols[] = {"cluster", "servers", "fault", "global_batch", "tp", "pp",
	                                   "micro_batch", "sequence_parallel", "expert_parallel",
	                                   "context_parallel", "schedule", "virtual_stages",
	                                   "recompute", "zero_stage"};
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i < SL_COUNTOF(cols) && n < size; i++)
		n += (size_t)snprintf(buf + n, size - n, "%s%s = ?%d", i ? " AND " : "", cols[i],
		                      first + (int)i);
}

/* ------------------------------------------------------------ checksum */


static uint64_t fnv_i64(uint64_t h, int64_t v)
{
	return studies_fnv(h, &v, sizeof v);
}

/* A REAL as stored: NULL for NAN, and SQLite may keep an integral value
 * as an integer (so -0.0 comes back as 0). */
static uint64_t fnv_real(uint64_t h, double x)
{
	if (isnan(x))
		return studies_fnv(h, "N", 1);
	if (x == 0)
		x = 0;
	return studies_fnv(h, &x, sizeof x);
}

static uint64_t fnv_text(uint64_t h, const char *t)
{
	return t ? studies_fnv(h, t, strlen(t) + 1) : studies_fnv(h, "\xff", 1);
}

/* The checksum of a row as the database holds it: its inputs' hash, its
 * key and every figure; a failed point has no figures; `sim` is the
 * simulated column (0 not tried, 1 simulated, -1 failed). */
static uint64_t row_checksum(const char *hash, const struct study_row *r, int sim)
{
	const struct search_config *c = &r->config;
	uint64_t h = fnv_text(STUDIES_FNV_OFFSET, hash);
	int64_t key[] = {r->cluster, r->servers, r->devices, r->global_batch, c->tp, c->pp, c->dp,
	                 c->micro_batch, c->micro_batches, c->schedule, c->virtual_stages,
	                 c->recompute, c->zero_stage, c->sequence_parallel, c->ep > 1 ? c->ep : 1,
	                 c->cp > 1 ? c->cp : 1, r->ok, sim, r->fault};
	for (size_t i = 0; i < SL_COUNTOF(key); i++)
		h = fnv_i64(h, key[i]);
	h = fnv_text(h, r->ok ? NULL : r->error ? r->error : "failed");
	if (r->ok) {
		double v[] = {r->iteration_s, r->tokens_per_s, r->mfu, r->memory_bytes, r->hbm_bytes,
		              r->compute_s, r->comm_s, r->bubble_s, r->iterations,
		              r->time_to_train_s, r->device_hours, r->energy_kwh, r->cost,
		              r->model_flops, r->tokens_per_iteration, r->state_bytes,
		              r->state_bytes_per_device, r->goodput, r->checkpoint_interval_s,
		              r->interruptions, r->effective_time_s, r->iteration_rel_sd,
		              r->iteration_lo_s, r->iteration_hi_s};
		for (size_t i = 0; i < SL_COUNTOF(v); i++)
			h = fnv_real(h, v[i]);
		for (int k = 0; k < EST_CATEGORY_COUNT; k++)
			h = fnv_real(h, r->category_s[k]);
		h = fnv_i64(h, study_oom_code(r));
	}
	if (sim) {
		h = fnv_text(h, r->sim_error);
		if (sim > 0) {
			double v[] = {r->sim_iteration_s, r->sim_compute_s, r->sim_comm_s, r->sim_bubble_s,
			              r->sim_time_to_train_s};
			for (size_t i = 0; i < SL_COUNTOF(v); i++)
				h = fnv_real(h, v[i]);
		}
	}
	return h;
}

static void checksum_text(char out[17], const char *hash, const struct study_row *r, int sim)
{
	snprintf(out, 17, "%016llx", (unsigned long long)row_checksum(hash, r, sim));
}

static bool drop_bad_rows(struct study_store *s, char *err, size_t err_size);

static void set_err(char *err, size_t size, const char *what, sqlite3 *db)
{
	snprintf(err, size, "%s: %s", what, db ? sqlite3_errmsg(db) : "out of memory");
}

static bool exec(struct study_store *s, const char *sql, char *err, size_t size)
{
	if (sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK)
		return true;
	set_err(err, size, s->path, s->db);
	return false;
}

void study_store_close(struct study_store *s)
{
	if (!s)
		return;
	sqlite3_finalize(s->insert);
	sqlite3_finalize(s->done);
	sqlite3_finalize(s->sim);
	sqlite3_close(s->db);
	free((char *)s->calibration);
	free((char *)s->calibration_files);
	/* After SQLite let go of the file: closing another descriptor of it
	 * would release SQLite's fcntl locks. */
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	free(s);
}

static struct study_store *open_db(const char *path, int flags, char *err, size_t size)
{
	struct study_store *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, size, "out of memory");
		return NULL;
	}
	s->path = path;
	s->lock_fd = -1;
	if (sqlite3_open_v2(path, &s->db, flags, NULL) != SQLITE_OK) {
		snprintf(err, size, "cannot open %s: %s", path,
		         s->db ? sqlite3_errmsg(s->db) : "out of memory");
		study_store_close(s);
		return NULL;
	}
	sqlite3_busy_timeout(s->db, 10000);
	return s;
}

/* A meta value of any length into out[size], "" when none. */
static bool stored_text(struct study_store *s, const char *key, char *out, size_t size)
{
	sqlite3_stmt *q;
	out[0] = '\0';
	if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = ?1", -1, &q,
	                       NULL) != SQLITE_OK)
		return false;
	sqlite3_bind_text(q, 1, key, -1, SQLITE_STATIC);
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_text(q, 0))
		snprintf(out, size, "%s", (const char *)sqlite3_column_text(q, 0));
	sqlite3_finalize(q);
	return true;
}

/* A hash the database was written for (meta's `key`), "" when none yet. */
static bool stored_meta(struct study_store *s, const char *key, char out[17])
{
	return stored_text(s, key, out, 17);
}

static bool stored_hash(struct study_store *s, char out[17])
{
	return stored_meta(s, "inputs_hash", out);
}

/* The stored rows priced for other goal, prices, power or goodput: priced
 * again (study_store_reprice), none planned again. */
static bool reprice_if_changed(struct study_store *s, char *err, size_t err_size)
{
	char have[17], want[17];
	study_hash_text(want, s->st->prices_hash);
	if (!stored_meta(s, "prices_hash", have)) {
		set_err(err, err_size, "database", s->db);
		return false;
	}
	if (!strcmp(have, want))
		return true;
	struct arena *a = arena_new();
	struct study_row *rows;
	int n = a ? study_store_rows(s, a, &rows, err, err_size) : -1;
	bool ok = n >= 0 && study_store_reprice(s, rows, n, err, err_size);
	arena_free(a);
	if (!a)
		snprintf(err, err_size, "out of memory");
	char sql[128];
	snprintf(sql, sizeof sql, "INSERT OR REPLACE INTO meta VALUES('prices_hash', '%s');", want);
	return ok && exec(s, sql, err, err_size);
}

static const char *const insert_sql =
	"INSERT OR REPLACE INTO points(inputs_hash, cluster, cluster_name, device_kind, topology,"
	" servers, devices, global_batch, tp, pp, dp, micro_batch, micro_batches, schedule,"
	" virtual_stages, recompute, zero_stage, config, ok, error, iteration_s, tokens_per_s, mfu,"
	" memory_bytes, hbm_bytes, oom, compute_s, comm_s, bubble_s, est_compute_forward,"
	" est_compute_backward, est_comm_forward, est_redistribution, est_comm_backward,"
	" est_recompute, est_param_gather, est_pipeline_p2p, est_gradient_sync, est_optimizer,"
	" est_pipeline_bubble, iterations, time_to_train_s, device_hours, energy_kwh, cost,"
	" sequence_parallel, expert_parallel, context_parallel, model_flops, tokens_per_iteration,"
	" state_bytes, state_bytes_per_device, goodput, checkpoint_interval_s, interruptions,"
	" effective_time_s, checksum, fault, fault_name, iteration_rel_sd, iteration_lo_s,"
	" iteration_hi_s)"
	" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18,"
	" ?19, ?20, ?21, ?22, ?23, ?24, ?25, ?26, ?27, ?28, ?29, ?30, ?31, ?32, ?33, ?34, ?35,"
	" ?36, ?37, ?38, ?39, ?40, ?41, ?42, ?43, ?44, ?45, ?46, ?47, ?48, ?49, ?50, ?51, ?52,"
	" ?53, ?54, ?55, ?56, ?57, ?58, ?59, ?60, ?61, ?62)";

/* The figures that follow from the study's goal, prices, power and
 * goodput (study_row_figures), rewritten in place when those change,
 * with the row's checksum. */
static const char *const reprice_sql =
	"UPDATE points SET tokens_per_s = ?1, mfu = ?2, iterations = ?3, time_to_train_s = ?4,"
	" goodput = ?5, checkpoint_interval_s = ?6, interruptions = ?7, effective_time_s = ?8,"
	" device_hours = ?9, energy_kwh = ?10, cost = ?11, checksum = ?26 WHERE " ;

/* Each cluster's calibration file, relative to the database's folder so
 * that `fit` and `report` find it from anywhere: "a100=../c.json;
 * h100=none" (a file that cannot be resolved: its path as given). */
static const char *calibration_files(struct arena *a, const struct study *st, const char *db)
{
	const char *out = "", *dir = util_path_dir(a, db);
	for (int c = 0; out && dir && c < st->n_clusters; c++) {
		const struct calibration *cal = st->clusters[c].topo->calibration;
		const char *rel = cal && cal->file ? util_path_relative(a, dir, cal->file) : NULL;
		const char *f = cal && cal->file ? (rel ? rel : cal->file) : "none";
		out = arena_printf(a, "%s%s%s=%s", out, c ? "; " : "", st->clusters[c].name, f);
	}
	return out;
}

/* A database written before the points had expert_parallel,
 * context_parallel, checksum, the goodput's columns, the fault case and
 * the interval (schema 2): its key differs, or its rows cannot be
 * verified or priced, so it is rebuilt (with --force) or left alone. */
static bool has_new_columns(struct study_store *s, bool *has)
{
	static const char *const cols[] = {"expert_parallel", "context_parallel", "checksum",
	                                   "state_bytes", "effective_time_s", "fault",
	                                   "iteration_rel_sd"};
	sqlite3_stmt *q;
	size_t found = 0;
	if (sqlite3_prepare_v2(s->db, "SELECT name FROM pragma_table_info('points')", -1, &q,
	                       NULL) != SQLITE_OK)
		return false;
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *name = (const char *)sqlite3_column_text(q, 0);
		for (size_t i = 0; name && i < SL_COUNTOF(cols); i++)
			found += !strcmp(name, cols[i]);
	}
	sqlite3_finalize(q);
	*has = found == SL_COUNTOF(cols);
	return true;
}

static const char *sim_sql(char *buf, size_t size)
{
	char where[512];
	key_where(where, sizeof where, 8);
	snprintf(buf, size, "UPDATE points SET simulated = ?1, sim_error = ?2, sim_iteration_s = ?3,"
	         " sim_compute_s = ?4, sim_comm_s = ?5, sim_bubble_s = ?6,"
	         " sim_time_to_train_s = ?7, checksum = ?22 WHERE %s", where);
	return buf;
}

/* What plot shows of the study: meta's study_name, currency, deadline_s
 * and budget. */
static bool put_info(struct study_store *s, char *err, size_t err_size)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(s->db, "INSERT OR REPLACE INTO meta VALUES(?1, ?2)", -1, &q,
	                       NULL) != SQLITE_OK) {
		set_err(err, err_size, "database", s->db);
		return false;
	}
	char days[32], budget[32];
	snprintf(days, sizeof days, "%.17g", s->st->goal.days * 86400);
	snprintf(budget, sizeof budget, "%.17g", s->st->goal.budget);
	const char *kv[][2] = {{"study_name", s->st->name}, {"currency", s->st->currency},
	                       {"deadline_s", days}, {"budget", budget},
	                       {"schema", STORE_SCHEMA}, {"calibration", s->calibration},
	                       {"calibration_files", s->calibration_files}};
	bool ok = true;
	for (size_t i = 0; ok && i < SL_COUNTOF(kv); i++) {
		sqlite3_reset(q);
		sqlite3_bind_text(q, 1, kv[i][0], -1, SQLITE_STATIC);
		sqlite3_bind_text(q, 2, kv[i][1], -1, SQLITE_STATIC);
		ok = sqlite3_step(q) == SQLITE_DONE;
	}
	if (!ok)
		set_err(err, err_size, "database", s->db);
	sqlite3_finalize(q);
	return ok;
}

static const char *col_text(struct arena *a, sqlite3_stmt *q, int i);

bool study_store_info(struct study_store *s, struct arena *a, struct study_plot_info *out)
{
	*out = (struct study_plot_info){0};
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(s->db, "SELECT key, value FROM meta", -1, &q, NULL) != SQLITE_OK)
		return false;
	while (sqlite3_step(q) == SQLITE_ROW) {
		const char *k = (const char *)sqlite3_column_text(q, 0);
		const char *v = (const char *)sqlite3_column_text(q, 1);
		if (!k || !v)
			continue;
		if (!strcmp(k, "study_name"))
			out->title = arena_strdup(a, v);
		else if (!strcmp(k, "currency"))
			out->currency = arena_strdup(a, v);
		else if (!strcmp(k, "deadline_s"))
			out->deadline_s = strtod(v, NULL);
		else if (!strcmp(k, "budget"))
			out->budget = strtod(v, NULL);
		else if (!strcmp(k, "calibration"))
			out->calibration = arena_strdup(a, v);
		else if (!strcmp(k, "calibration_files"))
			out->calibration_files = arena_strdup(a, v);
	}
	sqlite3_finalize(q);
	/* The fault cases, by index: a case no row has keeps its index empty. */
	int n = 0;
	if (sqlite3_prepare_v2(s->db, "SELECT max(fault) FROM points", -1, &q, NULL) != SQLITE_OK)
		return false;
	if (sqlite3_step(q) == SQLITE_ROW && sqlite3_column_type(q, 0) != SQLITE_NULL)
		n = sqlite3_column_int(q, 0) + 1;
	sqlite3_finalize(q);
	if (n < 1 || n > STUDY_MAX_FAULTS)
		return true;
	const char **names = arena_calloc(a, (size_t)n, sizeof *names);
	if (!names ||
	    sqlite3_prepare_v2(s->db, "SELECT fault, min(fault_name) FROM points GROUP BY fault", -1,
	                       &q, NULL) != SQLITE_OK)
		return false;
	while (sqlite3_step(q) == SQLITE_ROW) {
		int f = sqlite3_column_int(q, 0);
		if (f >= 0 && f < n)
			names[f] = col_text(a, q, 1);
	}
	sqlite3_finalize(q);
	out->n_faults = n;
	out->fault_names = names;
	return true;
}

enum study_store_open study_store_open(const char *path, const struct study *st, bool force,
                                       struct study_store **out, char *err, size_t err_size)
{
	*out = NULL;
	/* One writer: an flock on the file, taken before SQLite opens it. */
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
	if (fd < 0) {
		snprintf(err, err_size, "cannot open %s: %s", path, strerror(errno));
		return STORE_ERROR;
	}
	if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
		int e = errno;
		close(fd);
		if (e == EWOULDBLOCK)
			snprintf(err, err_size, "%s is being written by another sweep: wait for it to "
			         "finish (then run this one again to resume), or sweep into another "
			         "database", path);
		else
			snprintf(err, err_size, "cannot lock %s: %s", path, strerror(e));
		return STORE_BUSY;
	}
	struct study_store *s = open_db(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, err,
	                                err_size);
	if (!s) {
		close(fd);
		return STORE_ERROR;
	}
	s->lock_fd = fd;
	study_hash_text(s->hash, st->inputs_hash);
	s->st = st;
	char have[17];
	if (!exec(s, "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;", err, err_size) ||
	    !exec(s, schema, err, err_size) || !stored_hash(s, have)) {
		if (!err[0])
			set_err(err, err_size, s->path, s->db);
		study_store_close(s);
		return STORE_ERROR;
	}
	bool current;
	if (!has_new_columns(s, &current)) {
		set_err(err, err_size, s->path, s->db);
		study_store_close(s);
		return STORE_ERROR;
	}
	if (!current) {
		if (!force) {
			snprintf(err, err_size, "%s was written by an earlier shardlab (schema before %s), "
			         "whose points lack some of the expert_parallel, context_parallel, "
			         "checksum, goodput, fault case and interval columns: sweep into another "
			         "database, or give --force to discard its rows", path, STORE_SCHEMA);
			study_store_close(s);
			return STORE_OTHER_INPUTS;
		}
		if (!exec(s, "DROP TABLE points;", err, err_size) || !exec(s, schema, err, err_size)) {
			study_store_close(s);
			return STORE_ERROR;
		}
	}
	/* The intervals are the calibrations': rows of others are not resumed. */
	struct arena *ka = arena_new();
	const char *key = ka ? study_calibration_key(ka, st) : NULL;
	const char *files = ka ? calibration_files(ka, st, path) : NULL;
	s->calibration = key ? strdup(key) : NULL;
	s->calibration_files = files ? strdup(files) : NULL;
	arena_free(ka);
	char cal[4096];
	if (!s->calibration || !s->calibration_files ||
	    !stored_text(s, "calibration", cal, sizeof cal)) {
		set_err(err, err_size, s->path, s->db);
		study_store_close(s);
		return STORE_ERROR;
	}
	if (have[0] && !force && strcmp(cal, s->calibration)) {
		snprintf(err, err_size, "%s holds a sweep made with other calibrations (%s; this sweep "
		         "has %s): sweep into another database, give the same --calibration, or give "
		         "--force to discard its rows", path, cal[0] ? cal : "none recorded",
		         s->calibration);
		study_store_close(s);
		return STORE_OTHER_INPUTS;
	}
	if (have[0] && (strcmp(have, s->hash) || strcmp(cal, s->calibration))) {
		if (!force) {
			snprintf(err, err_size, "%s holds the sweep of other inputs (hash %s; this study's "
			         "inputs hash to %s): the study, its scenario, model or topologies changed "
			         "since; sweep into another database, or give --force to discard its rows",
			         path, have, s->hash);
			study_store_close(s);
			return STORE_OTHER_INPUTS;
		}
		if (!exec(s, "DELETE FROM points;", err, err_size)) {
			study_store_close(s);
			return STORE_ERROR;
		}
	}
	char sql[1024];
	snprintf(sql, sizeof sql,
	         "INSERT OR REPLACE INTO meta VALUES('inputs_hash', '%s'), ('study', 'shardlab-study');",
	         s->hash);
	if (!exec(s, sql, err, err_size) || !put_info(s, err, err_size) ||
	    sqlite3_prepare_v2(s->db, insert_sql, -1, &s->insert, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db,
	                       "SELECT tp, pp, micro_batch, schedule, virtual_stages, recompute,"
	                       " zero_stage, sequence_parallel, expert_parallel, context_parallel FROM"
	                       " points WHERE"
	                       " cluster = ?1 AND"
	                       " servers = ?2 AND"
	                       " global_batch = ?3 AND tp = ?4 AND pp = ?5 AND micro_batch = ?6"
	                       " AND fault = ?7",
	                       -1, &s->done, NULL) != SQLITE_OK ||
	    sqlite3_prepare_v2(s->db,
	                       sim_sql(sql, sizeof sql), -1, &s->sim, NULL) != SQLITE_OK) {
		if (!err[0])
			set_err(err, err_size, s->path, s->db);
		study_store_close(s);
		return STORE_ERROR;
	}
	if (!drop_bad_rows(s, err, err_size) || !reprice_if_changed(s, err, err_size)) {
		study_store_close(s);
		return STORE_ERROR;
	}
	*out = s;
	return STORE_OK;
}

/* The inputs' hash of a database opened read-only: false with SQLite's
 * own words when it cannot be read, or with ours when it reads but holds
 * no sweep. */
static bool read_meta(struct study_store *s, char have[17], char *err, size_t err_size)
{
	sqlite3_stmt *q;
	have[0] = '\0';
	if (sqlite3_prepare_v2(s->db, "SELECT value FROM meta WHERE key = 'inputs_hash'", -1, &q,
	                       NULL) != SQLITE_OK) {
		int rc = sqlite3_errcode(s->db);
		if (rc == SQLITE_ERROR && strstr(sqlite3_errmsg(s->db), "no such table"))
			snprintf(err, err_size, "%s is not a shardlab sweep database (it has no meta "
			         "table)", s->path);
		else
			snprintf(err, err_size, "cannot read %s: %s", s->path, sqlite3_errmsg(s->db));
		return false;
	}
	int rc = sqlite3_step(q);
	if (rc == SQLITE_ROW && sqlite3_column_text(q, 0))
		snprintf(have, 17, "%s", (const char *)sqlite3_column_text(q, 0));
	if (rc != SQLITE_ROW && rc != SQLITE_DONE)
		snprintf(err, err_size, "cannot read %s: %s", s->path, sqlite3_errmsg(s->db));
	else if (!have[0])
		snprintf(err, err_size, "%s is not a shardlab sweep database (no inputs hash in its "
		         "meta table)", s->path);
	sqlite3_finalize(q);
	return have[0] != '\0';
}

bool study_store_open_ro(const char *path, struct study_store **out, uint64_t *hash, char *err,
                         size_t err_size)
{
	char have[17];
	*out = open_db(path, SQLITE_OPEN_READONLY, err, err_size);
	if (*out && !read_meta(*out, have, err, err_size)) {
		/* A WAL database in a folder this user cannot write: SQLite cannot
		 * make the -shm file a reader needs. With no -wal file beside it no
		 * sweep is writing it, and it can be read as an immutable file. */
		char wal[4096];
		struct stat st;
		int rc = sqlite3_errcode((*out)->db);
		snprintf(wal, sizeof wal, "%s-wal", path);
		study_store_close(*out);
		*out = NULL;
		if ((rc == SQLITE_CANTOPEN || (rc & 0xff) == SQLITE_READONLY) &&
		    stat(wal, &st) != 0 && errno == ENOENT && strlen(path) < 3000) {
			char *uri = sqlite3_mprintf("file:%s?immutable=1", path);
			char err2[512];
			*out = uri ? open_db(uri, SQLITE_OPEN_READONLY | SQLITE_OPEN_URI, err2, sizeof err2)
			           : NULL;
			sqlite3_free(uri);
			if (*out) {
				(*out)->path = path;
				if (!read_meta(*out, have, err, err_size)) {
					study_store_close(*out);
					*out = NULL;
				}
			}
		}
	}
	if (!*out)
		return false;
	if (hash)
		*hash = strtoull(have, NULL, 16);
	return true;
}

static bool same_config(const struct search_config *a, const struct search_config *b)
{
	return a->tp == b->tp && a->pp == b->pp && a->micro_batch == b->micro_batch &&
	       a->schedule == b->schedule && a->virtual_stages == b->virtual_stages &&
	       a->recompute == b->recompute && a->zero_stage == b->zero_stage &&
	       a->sequence_parallel == b->sequence_parallel &&
	       (a->ep > 1 ? a->ep : 1) == (b->ep > 1 ? b->ep : 1) &&
	       (a->cp > 1 ? a->cp : 1) == (b->cp > 1 ? b->cp : 1);
}

int study_store_done(struct study_store *s, const struct study_unit *u, bool *done)
{
	sqlite3_stmt *q = s->done;
	sqlite3_reset(q);
	sqlite3_bind_int(q, 1, u->cluster);
	sqlite3_bind_int64(q, 2, u->servers);
	sqlite3_bind_int64(q, 3, u->global_batch);
	/* A unit is one (TP, PP, micro-batch) of the search, a key prefix;
	 * a listed configuration is a unit of its own. */
	sqlite3_bind_int64(q, 4, u->configs[0].tp);
	sqlite3_bind_int64(q, 5, u->configs[0].pp);
	sqlite3_bind_int64(q, 6, u->configs[0].micro_batch);
	sqlite3_bind_int(q, 7, u->fault);
	int n = 0;
	for (int i = 0; i < u->n_configs; i++)
		done[i] = false;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		struct search_config c = {
			.tp = sqlite3_column_int64(q, 0), .pp = sqlite3_column_int64(q, 1),
			.micro_batch = sqlite3_column_int64(q, 2),
			.schedule = (enum pipeline_schedule)sqlite3_column_int(q, 3),
			.virtual_stages = sqlite3_column_int64(q, 4),
			.recompute = (enum recompute_mode)sqlite3_column_int(q, 5),
			.zero_stage = sqlite3_column_int(q, 6),
			.sequence_parallel = sqlite3_column_int(q, 7) != 0,
			.ep = sqlite3_column_int64(q, 8), .cp = sqlite3_column_int64(q, 9)};
		for (int i = 0; i < u->n_configs; i++)
			if (!done[i] && same_config(&c, &u->configs[i])) {
				done[i] = true;
				n++;
				break;
			}
	}
	sqlite3_reset(q);
	return rc == SQLITE_DONE ? n : -1;
}

/* A REAL column: NULL for NAN. */
static void bind_real(sqlite3_stmt *q, int i, double x)
{
	if (isnan(x))
		sqlite3_bind_null(q, i);
	else
		sqlite3_bind_double(q, i, x);
}

static bool insert_row(struct study_store *s, const struct study_row *r, const struct study *st)
{
	sqlite3_stmt *q = s->insert;
	const struct study_cluster *cl = &st->clusters[r->cluster];
	const struct search_config *c = &r->config;
	char text[128];
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	sqlite3_bind_text(q, 1, s->hash, -1, SQLITE_TRANSIENT);
	sqlite3_bind_int(q, 2, r->cluster);
	sqlite3_bind_text(q, 3, cl->name, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 4, cl->topo->device.kind, -1, SQLITE_STATIC);
	sqlite3_bind_text(q, 5, cl->topo->name, -1, SQLITE_STATIC);
	sqlite3_bind_int64(q, 6, r->servers);
	sqlite3_bind_int64(q, 7, r->devices);
	sqlite3_bind_int64(q, 8, r->global_batch);
	sqlite3_bind_int64(q, 9, c->tp);
	sqlite3_bind_int64(q, 10, c->pp);
	sqlite3_bind_int64(q, 11, c->dp);
	sqlite3_bind_int64(q, 12, c->micro_batch);
	sqlite3_bind_int64(q, 13, c->micro_batches);
	sqlite3_bind_int(q, 14, c->schedule);
	sqlite3_bind_int64(q, 15, c->virtual_stages);
	sqlite3_bind_int(q, 16, c->recompute);
	sqlite3_bind_int(q, 17, c->zero_stage);
	sqlite3_bind_text(q, 18, plan_search_config_text(text, sizeof text, c), -1,
	                  SQLITE_TRANSIENT);
	sqlite3_bind_int(q, 46, c->sequence_parallel);
	sqlite3_bind_int64(q, 47, c->ep > 1 ? c->ep : 1);
	sqlite3_bind_int64(q, 48, c->cp > 1 ? c->cp : 1);
	sqlite3_bind_int(q, 58, r->fault);
	sqlite3_bind_text(q, 59, st->faults[r->fault].name, -1, SQLITE_STATIC);
	sqlite3_bind_int(q, 19, r->ok);
	if (!r->ok) {
		sqlite3_bind_text(q, 20, r->error ? r->error : "failed", -1, SQLITE_STATIC);
	} else {
		double v[] = {r->iteration_s, r->tokens_per_s, r->mfu, r->memory_bytes, r->hbm_bytes};
		for (int i = 0; i < 5; i++)
			bind_real(q, 21 + i, v[i]);
		sqlite3_bind_int(q, 26, study_oom_code(r));
		bind_real(q, 27, r->compute_s);
		bind_real(q, 28, r->comm_s);
		bind_real(q, 29, r->bubble_s);
		for (int k = 0; k < EST_CATEGORY_COUNT; k++)
			bind_real(q, 30 + k, r->category_s[k]);
		double w[] = {r->iterations, r->time_to_train_s, r->device_hours, r->energy_kwh, r->cost};
		for (int i = 0; i < 5; i++)
			bind_real(q, 41 + i, w[i]);
		double g[] = {r->model_flops, r->tokens_per_iteration, r->state_bytes,
		              r->state_bytes_per_device, r->goodput, r->checkpoint_interval_s,
		              r->interruptions, r->effective_time_s};
		for (int i = 0; i < 8; i++)
			bind_real(q, 49 + i, g[i]);
		double iv[] = {r->iteration_rel_sd, r->iteration_lo_s, r->iteration_hi_s};
		for (int i = 0; i < 3; i++)
			bind_real(q, 60 + i, iv[i]);
	}
	char sum[17];
	checksum_text(sum, s->hash, r, 0);
	sqlite3_bind_text(q, 57, sum, -1, SQLITE_TRANSIENT);
	return sqlite3_step(q) == SQLITE_DONE;
}

bool study_store_put(struct study_store *s, const struct study_row *rows, int n,
                     const bool *write, char *err, size_t err_size)
{
	if (!exec(s, "BEGIN IMMEDIATE;", err, err_size))
		return false;
	for (int i = 0; i < n; i++)
		if ((!write || write[i]) && !insert_row(s, &rows[i], s->st)) {
			set_err(err, err_size, s->path, s->db);
			sqlite3_exec(s->db, "ROLLBACK;", NULL, NULL, NULL);
			return false;
		}
	return exec(s, "COMMIT;", err, err_size);
}

bool study_store_reprice(struct study_store *s, struct study_row *rows, int n, char *err,
                         size_t err_size)
{
	char where[512], sql[1024];
	key_where(where, sizeof where, 12);
	snprintf(sql, sizeof sql, "%s%s", reprice_sql, where);
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(s->db, sql, -1, &q, NULL) != SQLITE_OK) {
		set_err(err, err_size, "database", s->db);
		return false;
	}
	bool ok = exec(s, "BEGIN IMMEDIATE;", err, err_size);
	for (int i = 0; ok && i < n; i++) {
		struct study_row *r = &rows[i];
		if (!r->ok)
			continue;
		study_row_figures(s->st, r);
		sqlite3_reset(q);
		sqlite3_clear_bindings(q);
		double v[] = {r->tokens_per_s, r->mfu, r->iterations, r->time_to_train_s, r->goodput,
		              r->checkpoint_interval_s, r->interruptions, r->effective_time_s,
		              r->device_hours, r->energy_kwh, r->cost};
		for (int k = 0; k < 11; k++)
			bind_real(q, 1 + k, v[k]);
		bind_key(q, 12, r);
		char sum[17];
		checksum_text(sum, s->hash, r, r->simulated ? 1 : r->sim_error ? -1 : 0);
		sqlite3_bind_text(q, 12 + KEY_N, sum, -1, SQLITE_TRANSIENT);
		if (sqlite3_step(q) != SQLITE_DONE) {
			set_err(err, err_size, "database", s->db);
			sqlite3_exec(s->db, "ROLLBACK;", NULL, NULL, NULL);
			ok = false;
		}
	}
	sqlite3_finalize(q);
	return ok && exec(s, "COMMIT;", err, err_size);
}

bool study_store_put_sim(struct study_store *s, const struct study_row *r, char *err,
                         size_t err_size)
{
	sqlite3_stmt *q = s->sim;
	sqlite3_reset(q);
	sqlite3_clear_bindings(q);
	sqlite3_bind_int(q, 1, r->simulated ? 1 : -1);
	if (r->sim_error)
		sqlite3_bind_text(q, 2, r->sim_error, -1, SQLITE_STATIC);
	if (r->simulated) {
		double v[] = {r->sim_iteration_s, r->sim_compute_s, r->sim_comm_s, r->sim_bubble_s,
		              r->sim_time_to_train_s};
		for (int i = 0; i < 5; i++)
			bind_real(q, 3 + i, v[i]);
	}
	bind_key(q, 8, r);
	char sum[17];
	checksum_text(sum, s->hash, r, r->simulated ? 1 : -1);
	sqlite3_bind_text(q, 8 + KEY_N, sum, -1, SQLITE_TRANSIENT);
	if (sqlite3_step(q) != SQLITE_DONE) {
		set_err(err, err_size, s->path, s->db);
		return false;
	}
	return true;
}

static double col_real(sqlite3_stmt *q, int i)
{
	return sqlite3_column_type(q, i) == SQLITE_NULL ? NAN : sqlite3_column_double(q, i);
}

static const char *col_text(struct arena *a, sqlite3_stmt *q, int i)
{
	const unsigned char *t = sqlite3_column_text(q, i);
	return t ? arena_strdup(a, (const char *)t) : NULL;
}

/* Every row in key order. keep: into *out (text in the arena), the
 * first row that fails its checksum an error; else the rows are only
 * verified, and the rowids of those that fail go to *bad (malloc'd, *n_bad
 * of them). The count of rows, -1 on error. */
static int read_rows(struct study_store *s, struct arena *a, bool keep, struct study_row **out,
                     int64_t **bad, int64_t *n_bad, char *err, size_t err_size)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT cluster, servers, devices, global_batch, tp, pp, dp,"
	                       " micro_batch, micro_batches, schedule, virtual_stages, recompute,"
	                       " zero_stage, ok, error, iteration_s, tokens_per_s, mfu, memory_bytes,"
	                       " hbm_bytes, oom, compute_s, comm_s, bubble_s, est_compute_forward,"
	                       " est_compute_backward, est_comm_forward, est_redistribution,"
	                       " est_comm_backward, est_recompute, est_param_gather,"
	                       " est_pipeline_p2p, est_gradient_sync, est_optimizer,"
	                       " est_pipeline_bubble, iterations, time_to_train_s, device_hours,"
	                       " energy_kwh, cost, simulated, sim_error, sim_iteration_s,"
	                       " sim_compute_s, sim_comm_s, sim_bubble_s, sim_time_to_train_s,"
	                       " sequence_parallel, expert_parallel, context_parallel, model_flops,"
	                       " tokens_per_iteration, state_bytes, state_bytes_per_device, goodput,"
	                       " checkpoint_interval_s, interruptions, effective_time_s, fault,"
	                       " iteration_rel_sd, iteration_lo_s, iteration_hi_s, inputs_hash,"
	                       " checksum, rowid FROM points ORDER BY " KEY_COLS,
	                       -1, &q, NULL) != SQLITE_OK) {
		set_err(err, err_size, s->path, s->db);
		return -1;
	}
	int n = 0, cap = 0, rc;
	int64_t bad_cap = 0;
	struct study_row *rows = NULL, scratch;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (keep && n == cap) {
			int nc = cap ? cap * 2 : 256;
			rows = arena_grow(a, rows, (size_t)cap, (size_t)nc, sizeof *rows);
			if (!rows) {
				sqlite3_finalize(q);
				snprintf(err, err_size, "out of memory");
				return -1;
			}
			cap = nc;
		}
		struct study_row *r = keep ? &rows[n] : &scratch;
		n++;
		*r = (struct study_row){
			.cluster = sqlite3_column_int(q, 0), .servers = sqlite3_column_int64(q, 1),
			.devices = sqlite3_column_int64(q, 2), .global_batch = sqlite3_column_int64(q, 3),
			.config = {.tp = sqlite3_column_int64(q, 4), .pp = sqlite3_column_int64(q, 5),
			           .dp = sqlite3_column_int64(q, 6),
			           .micro_batch = sqlite3_column_int64(q, 7),
			           .micro_batches = sqlite3_column_int64(q, 8),
			           .schedule = (enum pipeline_schedule)sqlite3_column_int(q, 9),
			           .virtual_stages = sqlite3_column_int64(q, 10),
			           .recompute = (enum recompute_mode)sqlite3_column_int(q, 11),
			           .zero_stage = sqlite3_column_int(q, 12)},
			.ok = sqlite3_column_int(q, 13) != 0,
			.error = keep ? col_text(a, q, 14) : (const char *)sqlite3_column_text(q, 14),
			.iteration_s = col_real(q, 15), .tokens_per_s = col_real(q, 16),
			.mfu = col_real(q, 17), .memory_bytes = col_real(q, 18),
			.hbm_bytes = col_real(q, 19),
			.compute_s = col_real(q, 21), .comm_s = col_real(q, 22),
			.bubble_s = col_real(q, 23)};
		study_oom_decode(r, sqlite3_column_int(q, 20));
		for (int k = 0; k < EST_CATEGORY_COUNT; k++)
			r->category_s[k] = col_real(q, 24 + k);
		r->iterations = col_real(q, 35);
		r->time_to_train_s = col_real(q, 36);
		r->device_hours = col_real(q, 37);
		r->energy_kwh = col_real(q, 38);
		r->cost = col_real(q, 39);
		int sim = sqlite3_column_int(q, 40);
		r->simulated = sim > 0;
		r->sim_error = keep ? col_text(a, q, 41) : (const char *)sqlite3_column_text(q, 41);
		r->sim_iteration_s = col_real(q, 42);
		r->sim_compute_s = col_real(q, 43);
		r->sim_comm_s = col_real(q, 44);
		r->sim_bubble_s = col_real(q, 45);
		r->sim_time_to_train_s = col_real(q, 46);
		r->config.sequence_parallel = sqlite3_column_int(q, 47) != 0;
		r->config.ep = sqlite3_column_int64(q, 48);
		r->config.cp = sqlite3_column_int64(q, 49);
		r->model_flops = col_real(q, 50);
		r->tokens_per_iteration = col_real(q, 51);
		r->state_bytes = col_real(q, 52);
		r->state_bytes_per_device = col_real(q, 53);
		r->goodput = col_real(q, 54);
		r->checkpoint_interval_s = col_real(q, 55);
		r->interruptions = col_real(q, 56);
		r->effective_time_s = col_real(q, 57);
		r->fault = sqlite3_column_int(q, 58);
		r->iteration_rel_sd = col_real(q, 59);
		r->iteration_lo_s = col_real(q, 60);
		r->iteration_hi_s = col_real(q, 61);
		r->effective_lo_s = r->effective_hi_s = NAN;
		const char *hash = (const char *)sqlite3_column_text(q, 62);
		const char *sum = (const char *)sqlite3_column_text(q, 63);
		char want[17];
		checksum_text(want, hash ? hash : "", r, sim);
		if (!sum || strcmp(sum, want)) {
			if (keep) {
				char c[128];
				snprintf(err, err_size, "%s: the row of cluster %d, %lld servers, global batch "
				         "%lld, %s fails its checksum: the database was changed or damaged "
				         "since the sweep wrote it; run the sweep again, which computes such "
				         "rows anew", s->path, r->cluster, (long long)r->servers,
				         (long long)r->global_batch,
				         plan_search_config_text(c, sizeof c, &r->config));
				sqlite3_finalize(q);
				return -1;
			}
			if (*n_bad == bad_cap) {
				bad_cap = bad_cap ? 2 * bad_cap : 64;
				int64_t *nb = realloc(*bad, (size_t)bad_cap * sizeof **bad);
				if (!nb) {
					sqlite3_finalize(q);
					snprintf(err, err_size, "out of memory");
					return -1;
				}
				*bad = nb;
			}
			(*bad)[(*n_bad)++] = sqlite3_column_int64(q, 64);
		}
		if (sim < 0 && !r->sim_error)
			r->sim_error = "failed";
	}
	sqlite3_finalize(q);
	if (rc != SQLITE_DONE) {
		set_err(err, err_size, s->path, s->db);
		return -1;
	}
	if (keep && !rows)
		rows = arena_alloc(a, sizeof *rows);
	if (keep)
		*out = rows;
	return n;
}

int study_store_rows(struct study_store *s, struct arena *a, struct study_row **out, char *err,
                     size_t err_size)
{
	return read_rows(s, a, true, out, NULL, NULL, err, err_size);
}

/* The writer's check of every stored row: those that fail their checksum
 * are deleted, to be computed again. */
static bool drop_bad_rows(struct study_store *s, char *err, size_t err_size)
{
	int64_t *bad = NULL, n_bad = 0;
	bool ok = read_rows(s, NULL, false, NULL, &bad, &n_bad, err, err_size) >= 0;
	sqlite3_stmt *del = NULL;
	if (ok && n_bad) {
		ok = exec(s, "BEGIN IMMEDIATE;", err, err_size) &&
		     sqlite3_prepare_v2(s->db, "DELETE FROM points WHERE rowid = ?1", -1, &del, NULL) ==
		     SQLITE_OK;
		for (int64_t i = 0; ok && i < n_bad; i++) {
			sqlite3_reset(del);
			sqlite3_bind_int64(del, 1, bad[i]);
			ok = sqlite3_step(del) == SQLITE_DONE;
		}
		sqlite3_finalize(del);
		if (!ok) {
			set_err(err, err_size, s->path, s->db);
			sqlite3_exec(s->db, "ROLLBACK;", NULL, NULL, NULL);
		} else {
			ok = exec(s, "COMMIT;", err, err_size);
		}
	}
	s->bad_rows = n_bad;
	free(bad);
	return ok;
}

int64_t study_store_dropped(const struct study_store *s)
{
	return s ? s->bad_rows : 0;
}

bool study_store_counts(struct study_store *s, int64_t *fit, int64_t *tight, int64_t *failed)
{
	sqlite3_stmt *q;
	*fit = *tight = *failed = 0;
	/* row by row, nothing held: the memory verdict is the cost model's,
	 * the host's from the oom column (study_oom_code) */
	if (sqlite3_prepare_v2(s->db, "SELECT ok, memory_bytes, hbm_bytes, oom FROM points", -1,
	                       &q, NULL) != SQLITE_OK)
		return false;
	int rc;
	while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
		if (!sqlite3_column_int(q, 0)) {
			++*failed;
			continue;
		}
		struct cost_verdict v;
		cost_memory_verdict(col_real(q, 1), col_real(q, 2), &v);
		struct study_row host = {0};
		study_oom_decode(&host, sqlite3_column_int(q, 3));
		enum fit_class f = study_fit_worse(v.fit, host.host_fit);
		*fit += f == FIT_YES;
		*tight += f == FIT_TIGHT;
	}
	sqlite3_finalize(q);
	return rc == SQLITE_DONE;
}

bool study_store_cluster_names(struct study_store *s, struct arena *a, int n_clusters,
                               const char **names, const char **kinds)
{
	sqlite3_stmt *q;
	if (sqlite3_prepare_v2(s->db,
	                       "SELECT cluster, min(cluster_name), min(device_kind) FROM points"
	                       " GROUP BY cluster ORDER BY cluster",
	                       -1, &q, NULL) != SQLITE_OK)
		return false;
	for (int i = 0; i < n_clusters; i++)
		names[i] = kinds[i] = NULL;
	while (sqlite3_step(q) == SQLITE_ROW) {
		int c = sqlite3_column_int(q, 0);
		if (c >= 0 && c < n_clusters) {
			names[c] = col_text(a, q, 1);
			kinds[c] = col_text(a, q, 2);
		}
	}
	sqlite3_finalize(q);
	return true;
}
