/* cmd_sweep.c — `shardlab sweep STUDY --db FILE`: every point of a study
 * (cluster size x configuration x global batch) planned and estimated,
 * the K fastest per cluster size simulated, each a row in SQLite
 * (studies/store.c).
 *
 * Resumable: units whose points are all stored are skipped, a unit's
 * missing points are computed and written in one transaction; a killed
 * sweep run again finishes the study with the same rows. Under mpirun
 * (a build with MPI), rank 0 deals units out to the other ranks as they
 * ask for work and is the only writer of the database; the rows are
 * those of a serial run.
 */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#ifdef SHARDLAB_MPI
#include <mpi.h>
#endif

#include "cli.h"
#include "studies.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab sweep STUDY --db FILE [--simulate-top K] [--force]\n"
	        "                      [--max-points N] [--calibration FILE|auto|none]\n"
	        "       mpirun -n N shardlab sweep STUDY --db FILE ...\n"
	        "\n"
	        "Plan and estimate every point of a study (docs/formats.md, \"Studies\"):\n"
	        "each cluster family at each server count, each fault case (the\n"
	        "study's \"faults\"), each global batch, each configuration (the\n"
	        "megatron-search space or the study's list). Each\n"
	        "point becomes a row of the SQLite database FILE (docs/formats.md, \"The\n"
	        "sweep database\"): the inputs' hash, the cluster, the configuration,\n"
	        "the estimate (iteration time, tokens/s, MFU, memory per device, OOM:\n"
	        "its band, the peak +- 5%%, over the device's memory,\n"
	        "compute / communication / bubble and every category), and for the\n"
	        "goal: iterations, time to train, device-hours, energy (kWh) and cost.\n"
	        "\n"
	        "A sweep that is stopped (Ctrl-C, kill -9, a lost node) resumes when\n"
	        "run again with the same arguments: what is stored is kept and not\n"
	        "computed again. A database written for other inputs (the study, its\n"
	        "scenario, model or topologies changed) is refused. Every stored row\n"
	        "carries a checksum of its figures: a row that fails it (the file was\n"
	        "changed or damaged) is computed again, with a warning. One sweep\n"
	        "writes a database at a time: a second one is refused while the first\n"
	        "runs.\n"
	        "\n"
	        "options:\n"
	        "  --db FILE         the SQLite database (created if absent)\n"
	        "  --simulate-top K  simulate (SimGrid, coarse fidelity) the K fastest\n"
	        "                    points that fit memory at each cluster size (default\n"
	        "                    0: none); their sim_ columns are filled\n"
	        "  --force           discard the rows of a database written for other\n"
	        "                    inputs and start again\n"
	        "  --calibration FILE  a calibration file (docs/formats.md) applied to\n"
	        "                    every cluster's topology, as estimate takes it;\n"
	        "                    \"auto\" (the default): the one each cluster's\n"
	        "                    topology file names, else the shipped one of its\n"
	        "                    device for the study scenario's training.framework,\n"
	        "                    where there is one; \"none\": the\n"
	        "                    bare model (faster). With a training fit each\n"
	        "                    row stores its 90%% interval (iteration_lo_s,\n"
	        "                    iteration_hi_s; two more estimates per figure and\n"
	        "                    point); without, the row has none (NULL). The\n"
	        "                    calibrations are recorded: a resumed sweep with\n"
	        "                    others is refused\n"
	        "  --max-points N    refuse a study of more than N points (default\n"
	        "                    1000000; counted before anything is computed, the\n"
	        "                    points are then dealt out cell by cell, never all\n"
	        "                    held at once)\n"
	        "\n"
	        "Progress (points done / total, rate, time left) goes to stderr when it\n"
	        "is a terminal; a summary goes to stdout at the end:\n"
	        "  sweep NAME: N points (C computed, S already stored), F fit memory,\n"
	        "  T tight (the band around the peak straddles the device's memory or,\n"
	        "  with training.optimizer_offload, the host's: neither fit nor OOM,\n"
	        "  never chosen by fit), X failed; K simulated; FILE (the rest are OOM:\n"
	        "  shardlab fit counts those over the host's memory apart)\n"
	        "then the points left out as the framework would refuse them, each\n"
	        "cluster's calibration and, where some of its points lie outside the\n"
	        "runs that calibration was fitted on, how many, by setting (their\n"
	        "intervals do not reach beyond those runs; fit names each point's)\n"
	        "\n"
	        "Under mpirun (a build with MPI, docs/studies.md) rank 0 writes the\n"
	        "database and deals units of work out to the other ranks as they ask;\n"
	        "the rows are the same as a serial run's.\n"
	        "\n"
	        "exit status: 0 done, 1 invalid study or database, 2 usage error.\n");
}

struct args {
	const char *file, *db, *calibration;
	int64_t top, max_points;
	bool force;
};

static int parse_args(int argc, char **argv, struct args *a)
{
	*a = (struct args){.max_points = STUDY_MAX_POINTS};
	int rc = EXIT_OK;
	for (int i = 1; i < argc && rc == EXIT_OK; i++) {
		if (!strcmp(argv[i], "--db") && i + 1 < argc)
			a->db = argv[++i];
		else if (!strcmp(argv[i], "--simulate-top") && i + 1 < argc)
			rc = cli_parse_count("sweep", "--simulate-top", argv[++i], 1000000, &a->top);
		else if (!strcmp(argv[i], "--max-points") && i + 1 < argc)
			rc = cli_parse_range("sweep", "--max-points", argv[++i], 1, INT64_MAX,
			                     &a->max_points);
		else if (!strcmp(argv[i], "--calibration") && i + 1 < argc)
			a->calibration = argv[++i];
		else if (!strcmp(argv[i], "--force"))
			a->force = true;
		else if (argv[i][0] == '-') {
			fprintf(stderr, "shardlab sweep: unknown option '%s' (see --help)\n", argv[i]);
			rc = EXIT_USAGE;
		} else if (a->file) {
			fprintf(stderr, "shardlab sweep: one study at a time ('%s')\n", argv[i]);
			rc = EXIT_USAGE;
		} else
			a->file = argv[i];
	}
	if (rc == EXIT_OK && !a->file) {
		fprintf(stderr, "shardlab sweep: missing STUDY (see --help)\n");
		rc = EXIT_USAGE;
	}
	if (rc == EXIT_OK && !a->db) {
		fprintf(stderr, "shardlab sweep: missing --db FILE (see --help)\n");
		rc = EXIT_USAGE;
	}
	return rc;
}

/* ------------------------------------------------------------ progress */

struct progress {
	bool on;
	int64_t total, done, at_start;
	struct timespec t0;
	double last;
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void progress_show(struct progress *p, bool final)
{
	if (!p->on)
		return;
	double t = now_s();
	if (!final && t - p->last < 0.2)
		return;
	p->last = t;
	double el = t - ((double)p->t0.tv_sec + 1e-9 * (double)p->t0.tv_nsec);
	double rate = el > 0 ? (double)(p->done - p->at_start) / el : 0;
	double left = rate > 0 ? (double)(p->total - p->done) / rate : 0;
	fprintf(stderr, "\r\033[Ksweep: %" PRId64 " / %" PRId64 " points (%d%%), %.0f points/s, "
	        "ETA %d:%02d", p->done, p->total,
	        p->total ? (int)(100 * p->done / p->total) : 100, rate, (int)(left / 60),
	        (int)fmod(left, 60));
	if (final)
		fputs("\r\033[K", stderr);
	fflush(stderr);
}

/* --------------------------------------------------------- the sweep */

/* The units of one cell of the study (studies.h), the one being dealt
 * out: a sweep holds one cell at a time, never the whole study. */
struct cell {
	int64_t index;                     /* -1: none yet */
	struct arena *a;
	struct study_unit *units;
	int n;
};

/* The units of cell i into c (kept when it is the one held). */
static bool cell_load(const struct study *st, struct cell *c, int64_t i)
{
	if (c->index == i && c->a)
		return true;
	arena_free(c->a);
	c->a = arena_new();
	int64_t points;
	c->units = c->a ? study_cell_units(c->a, st, i, &c->n, &points) : NULL;
	c->index = c->units ? i : -1;
	return c->units != NULL;
}

struct sweep {
	const struct study *st;
	struct study_store *store;
	struct study_size size;
	int64_t n_points, computed, stored;
	struct progress pr;
	char err[512];
};

/* Computes the missing points of unit u (done[] says which are stored)
 * into rows. */
static bool eval_unit(struct arena *a, const struct sweep *sw, const struct study_unit *u,
                      const bool *done, struct study_row *rows)
{
	return study_eval_unit(a, sw->st, u, done, rows);
}

static bool store_unit(struct sweep *sw, int n, const bool *done, const struct study_row *rows)
{
	bool *write = malloc((size_t)n * sizeof *write);
	if (!write)
		return false;
	int k = 0;
	for (int i = 0; i < n; i++) {
		write[i] = !done[i];
		k += write[i];
	}
	bool ok = study_store_put(sw->store, rows, n, write, sw->err, sizeof sw->err);
	free(write);
	sw->computed += k;
	return ok;
}

static int max_configs(const struct sweep *sw)
{
	return sw->size.max_configs > 1 ? sw->size.max_configs : 1;
}

static bool run_serial(struct sweep *sw)
{
	int m = max_configs(sw);
	bool *done = malloc((size_t)m * sizeof *done);
	struct study_row *rows = malloc((size_t)m * sizeof *rows);
	struct cell cell = {.index = -1};
	bool ok = done && rows;
	for (int64_t c = 0; ok && c < sw->size.cells; c++) {
		if (!cell_load(sw->st, &cell, c)) {
			snprintf(sw->err, sizeof sw->err, "out of memory");
			ok = false;
			break;
		}
		for (int k = 0; ok && k < cell.n; k++) {
			const struct study_unit *u = &cell.units[k];
			int have = study_store_done(sw->store, u, done);
			if (have < 0) {
				snprintf(sw->err, sizeof sw->err, "cannot read the database");
				ok = false;
				break;
			}
			sw->stored += have;
			if (have < u->n_configs) {
				struct arena *a = arena_new();
				ok = a && eval_unit(a, sw, u, done, rows) &&
				     store_unit(sw, u->n_configs, done, rows);
				if (!a || (!ok && !sw->err[0]))
					snprintf(sw->err, sizeof sw->err, "out of memory");
				arena_free(a);
			}
			sw->pr.done += u->n_configs;
			progress_show(&sw->pr, false);
		}
	}
	arena_free(cell.a);
	free(done);
	free(rows);
	return ok;
}

#ifdef SHARDLAB_MPI
/* Rows travel between ranks as fixed records: the row with its error text
 * inline. */
struct wire_row {
	struct study_row row;
	char error[256];
};

enum { TAG_ASK = 1, TAG_UNIT = 2, TAG_ROWS = 3 };

/* A worker: asks for a unit, computes what is missing (the master sends
 * the unit as (cell, index in the cell, points) and done[] with it),
 * sends the rows back; a cell of -1 ends it. The worker makes the cell's
 * units itself, as the master does: the same study gives the same. */
static bool mpi_worker(const struct sweep *sw)
{
	int m = max_configs(sw);
	bool *done = malloc((size_t)m * sizeof *done);
	struct study_row *rows = calloc((size_t)m, sizeof *rows);
	struct wire_row *wire = calloc((size_t)m, sizeof *wire);
	unsigned char *flags = malloc((size_t)m + 1);
	struct cell cell = {.index = -1};
	bool ok = done && rows && wire && flags;
	int u = 0;
	MPI_Send(&u, 0, MPI_INT, 0, TAG_ASK, MPI_COMM_WORLD);
	for (;;) {
		int64_t msg[3];
		MPI_Recv(msg, 3, MPI_INT64_T, 0, TAG_UNIT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		if (msg[0] < 0)
			break;
		int n = (int)msg[2];
		MPI_Recv(flags, n, MPI_UNSIGNED_CHAR, 0, TAG_UNIT, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		for (int i = 0; i < n; i++)
			done[i] = flags[i] != 0;
		const struct study_unit *unit = ok && cell_load(sw->st, &cell, msg[0]) &&
		                                msg[1] < cell.n && cell.units[msg[1]].n_configs == n
		                                ? &cell.units[msg[1]] : NULL;
		struct arena *a = unit ? arena_new() : NULL;
		bool good = a && eval_unit(a, sw, unit, done, rows);
		for (int i = 0; i < n; i++) {
			wire[i].row = rows[i];
			wire[i].error[0] = '\0';
			if (!done[i] && good && rows[i].error)
				snprintf(wire[i].error, sizeof wire[i].error, "%s", rows[i].error);
			if (!done[i] && !good) {
				wire[i].row = (struct study_row){.cluster = -1};
			}
		}
		arena_free(a);
		MPI_Send(wire, (int)(n * sizeof *wire), MPI_BYTE, 0, TAG_ROWS, MPI_COMM_WORLD);
	}
	arena_free(cell.a);
	free(done);
	free(rows);
	free(wire);
	free(flags);
	return ok;
}

/* Where the master is in the study: the cell it deals from and the next
 * unit of it. */
struct dealer {
	struct cell cell;
	int64_t next_cell;
	int next_k;
};

/* The next unit with points not stored (the stored ones counted), its
 * points' done[] filled, its place into at[0..1]; NULL when none is left
 * or after an error (*ok false). Valid until the next call. */
static const struct study_unit *next_unit(struct sweep *sw, struct dealer *d, bool *done,
                                          bool *ok, int64_t at[2])
{
	while (*ok && d->next_cell < sw->size.cells) {
		if (!cell_load(sw->st, &d->cell, d->next_cell)) {
			snprintf(sw->err, sizeof sw->err, "out of memory");
			*ok = false;
			return NULL;
		}
		if (d->next_k >= d->cell.n) {
			d->next_cell++;
			d->next_k = 0;
			continue;
		}
		const struct study_unit *u = &d->cell.units[d->next_k];
		int have = study_store_done(sw->store, u, done);
		if (have < 0) {
			snprintf(sw->err, sizeof sw->err, "cannot read the database");
			*ok = false;
			return NULL;
		}
		sw->stored += have;
		at[0] = d->next_cell;
		at[1] = d->next_k++;
		if (have < u->n_configs)
			return u;
		sw->pr.done += u->n_configs;
	}
	return NULL;
}

/* The master: hands units out in order to whichever worker asks, writes
 * every unit's rows as they come back, and computes units itself while no
 * worker is waiting (so that -n 2 is two ranks at work). */
static bool mpi_master(struct sweep *sw, int size)
{
	int m = max_configs(sw);
	bool *done = malloc((size_t)m * sizeof *done);
	struct wire_row *wire = malloc((size_t)m * sizeof *wire);
	struct study_row *rows = malloc((size_t)m * sizeof *rows);
	unsigned char *flags = malloc((size_t)m + 1);
	int *busy = calloc((size_t)size, sizeof *busy);       /* a worker's unit's points, or -1 */
	bool **busy_done = calloc((size_t)size, sizeof *busy_done);
	struct dealer d = {.cell = {.index = -1}};
	bool ok = done && wire && rows && flags && busy && busy_done;
	for (int r = 0; ok && r < size; r++) {
		busy[r] = -1;
		busy_done[r] = malloc((size_t)m * sizeof **busy_done);
		ok = busy_done[r] != NULL;
	}
	int active = size - 1;
	int64_t at[2];
	while (ok && active > 0) {
		MPI_Status st;
		int flag = 0;
		MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &flag, &st);
		if (!flag) {
			/* No worker waits: rank 0 computes a unit itself. */
			const struct study_unit *u = next_unit(sw, &d, done, &ok, at);
			if (u) {
				struct arena *a = arena_new();
				ok = a && eval_unit(a, sw, u, done, rows) &&
				     store_unit(sw, u->n_configs, done, rows);
				if (!ok && !sw->err[0])
					snprintf(sw->err, sizeof sw->err, "out of memory");
				arena_free(a);
				sw->pr.done += u->n_configs;
				progress_show(&sw->pr, false);
				continue;
			}
			if (!ok)
				break;
			MPI_Probe(MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
		}
		int w = st.MPI_SOURCE;
		if (st.MPI_TAG == TAG_ROWS) {
			int n = busy[w];
			MPI_Recv(wire, (int)(n * sizeof *wire), MPI_BYTE, w, TAG_ROWS, MPI_COMM_WORLD,
			         MPI_STATUS_IGNORE);
			for (int i = 0; i < n; i++) {
				rows[i] = wire[i].row;
				rows[i].error = wire[i].error[0] ? wire[i].error : NULL;
				rows[i].sim_error = NULL;
				if (!busy_done[w][i] && rows[i].cluster < 0) {
					snprintf(sw->err, sizeof sw->err, "rank %d ran out of memory", w);
					ok = false;
				}
			}
			ok = ok && store_unit(sw, n, busy_done[w], rows);
			sw->pr.done += n;
			progress_show(&sw->pr, false);
			busy[w] = -1;
		} else {
			MPI_Recv(NULL, 0, MPI_INT, w, TAG_ASK, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
		}
		/* The worker is free: the next unit with work, or the end. */
		const struct study_unit *u = next_unit(sw, &d, done, &ok, at);
		int64_t msg[3] = {ok && u ? at[0] : -1, ok && u ? at[1] : -1, ok && u ? u->n_configs : 0};
		MPI_Send(msg, 3, MPI_INT64_T, w, TAG_UNIT, MPI_COMM_WORLD);
		if (msg[0] < 0) {
			active--;
			continue;
		}
		int n = u->n_configs;
		for (int i = 0; i < n; i++) {
			busy_done[w][i] = done[i];
			flags[i] = done[i];
		}
		busy[w] = n;
		MPI_Send(flags, n, MPI_UNSIGNED_CHAR, w, TAG_UNIT, MPI_COMM_WORLD);
	}
	for (int r = 0; busy_done && r < size; r++)
		free(busy_done[r]);
	arena_free(d.cell.a);
	free(busy_done);
	free(busy);
	free(done);
	free(wire);
	free(rows);
	free(flags);
	return ok;
}
#endif

/* The K fastest points that fit at each cluster size, simulated where
 * they have not been (or failed) before. */
static bool simulate_top(struct sweep *sw, int64_t k, int64_t *n_sim)
{
	struct arena *a = arena_new();
	struct study_row *rows;
	int n = a ? study_store_rows(sw->store, a, &rows, sw->err, sizeof sw->err) : -1;
	int *idx = n > 0 ? malloc((size_t)n * sizeof *idx) : NULL;
	bool ok = n >= 0 && (n == 0 || idx);
	int m = ok && n > 0 ? study_top_per_size(rows, n, (int)k, idx) : 0;
	for (int i = 0; ok && i < m; i++) {
		struct study_row *r = &rows[idx[i]];
		if (r->simulated || r->sim_error) {
			++*n_sim;
			continue;
		}
		if (sw->pr.on) {
			char c[128];
			fprintf(stderr, "\r\033[Ksweep: simulating %d of %d: %s, %" PRId64 " servers, %s",
			        i + 1, m, sw->st->clusters[r->cluster].name, r->servers,
			        plan_search_config_text(c, sizeof c, &r->config));
			fflush(stderr);
		}
		ok = study_simulate(a, sw->st, r) && study_store_put_sim(sw->store, r, sw->err,
		                                                          sizeof sw->err);
		++*n_sim;
	}
	if (sw->pr.on)
		fputs("\r\033[K", stderr);
	if (!ok && !sw->err[0])
		snprintf(sw->err, sizeof sw->err, "out of memory");
	free(idx);
	arena_free(a);
	return ok;
}

/* Per calibrated cluster, how many of its planned points lie outside the
 * runs its calibration was fitted on, and by which settings (fit names
 * each point's). */
static void outside_summary(struct sweep *sw)
{
	struct arena *a = arena_new();
	struct study_row *rows = NULL;
	char err[256];
	int n = a ? study_store_rows(sw->store, a, &rows, err, sizeof err) : -1;
	for (int c = 0; n > 0 && c < sw->st->n_clusters; c++) {
		const struct calibration *cal = sw->st->clusters[c].topo->calibration;
		int64_t count[CAL_SET_COUNT] = {0}, known = 0, outside = 0;
		for (int i = 0; i < n; i++) {
			struct cal_outside o[CAL_SET_COUNT];
			int k = rows[i].cluster == c ? study_row_outside(cal, sw->st, &rows[i], o) : -1;
			if (k < 0)
				continue;
			known++;
			outside += k > 0;
			for (int j = 0; j < k; j++)
				count[o[j].setting]++;
		}
		if (!outside)
			continue;
		char w[1024];
		printf("cluster %s: %" PRId64 " of %" PRId64 " points outside the runs its calibration "
		       "was fitted on, their intervals the spread over those runs, not beyond them (fit "
		       "names each point's settings); points by setting:\n  %s\n",
		       sw->st->clusters[c].name, outside, known,
		       cost_cal_outside_tally_text(w, sizeof w,
		                                   &cost_calibration_training_fit_for(cal, sw->st->moe)->runs,
		                                   count));
	}
	arena_free(a);
}

static void summary(struct sweep *sw, const char *db, int64_t n_sim)
{
	int64_t fit = 0, tight = 0, failed = 0;
	study_store_counts(sw->store, &fit, &tight, &failed);
	printf("sweep %s: %" PRId64 " points (%" PRId64 " computed, %" PRId64 " already stored), "
	       "%" PRId64 " fit memory, %" PRId64 " tight, %" PRId64 " failed; %" PRId64
	       " simulated; %s\n",
	       sw->st->name, sw->n_points, sw->computed, sw->stored, fit, tight, failed, n_sim, db);
	report_refused_text(stdout, sw->size.refused);
	int calibrated = 0;
	for (int c = 0; c < sw->st->n_clusters; c++) {
		cli_note_uncalibrated(stdout, sw->st->clusters[c].topo);
		calibrated += sw->st->clusters[c].topo->calibration != NULL;
	}
	if (!calibrated)
		printf("calibration: none (the rows carry no interval; sweep --calibration FILE "
		       "gives them one)\n");
	for (int c = 0; calibrated && c < sw->st->n_clusters; c++) {
		char label[96];
		snprintf(label, sizeof label, "cluster %s: ", sw->st->clusters[c].name);
		cli_calibration_line(stdout, label, sw->st->clusters[c].topo, sw->st->moe);
	}
	if (calibrated)
		outside_summary(sw);
}

int cmd_sweep(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	struct args args;
	int rc = parse_args(argc, argv, &args);
	if (rc != EXIT_OK)
		return rc;
	int rank = 0;
#ifdef SHARDLAB_MPI
	int size = 1;
	/* MPI only when a launcher started us (mpirun, srun): a plain run
	 * stays serial, without OpenMPI's singleton daemon. */
	bool launched = getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") ||
	                getenv("PMI_RANK") || getenv("PMI_SIZE");
	int inited = 0;
	if (launched) {
		MPI_Initialized(&inited);
		if (!inited)
			MPI_Init(NULL, NULL);
		MPI_Comm_rank(MPI_COMM_WORLD, &rank);
		MPI_Comm_size(MPI_COMM_WORLD, &size);
	}
#else
	/* Started by mpirun but built without MPI: rank 0 sweeps alone. */
	const char *r = getenv("OMPI_COMM_WORLD_RANK");
	if (r && strcmp(r, "0")) {
		fprintf(stderr, "shardlab sweep: built without MPI (docs/studies.md); rank %s leaves "
		        "the sweep to rank 0\n", r);
		return EXIT_OK;
	}
#endif
	struct arena *a = arena_new();
	struct diag_list d;
	diag_list_init(&d);
	struct sweep sw = {0};
	struct study *st = a ? study_load(a, args.file, &d) : NULL;
	/* Each cluster's topology takes the calibration, as estimate's does. */
	for (int c = 0; st && c < st->n_clusters; c++) {
		struct topology *t = (struct topology *)st->clusters[c].topo;
		enum framework fw = st->scenario->training.framework;
		if (!(args.calibration ? cli_apply_calibration(a, args.calibration, t, fw, &d)
		                       : cli_default_calibration(a, t, fw, &d)))
			st = NULL;
	}
	sw.st = st;
	if (rank == 0)
		cli_print_diags(&d);
	diag_list_free(&d);
	rc = sw.st ? EXIT_OK : EXIT_INVALID;
	/* Counted before anything is computed, cell by cell (every rank
	 * counts: the workers need the largest unit for their buffers). */
	if (rc == EXIT_OK) {
		diag_list_init(&d);
		if (!study_check_size(sw.st, args.max_points, &sw.size, &d))
			rc = EXIT_INVALID;
		if (rank == 0)
			cli_print_diags(&d);
		diag_list_free(&d);
		sw.n_points = sw.size.points;
	}
	/* Only rank 0 opens the database; the others learn whether it did. */
	if (rc == EXIT_OK && rank == 0) {
		enum study_store_open so = study_store_open(args.db, sw.st, args.force, &sw.store, sw.err,
		                                            sizeof sw.err);
		if (so != STORE_OK) {
			fprintf(stderr, "shardlab sweep: %s\n", sw.err);
			rc = EXIT_INVALID;
		} else if (study_store_dropped(sw.store) > 0) {
			fprintf(stderr, "shardlab sweep: warning: %" PRId64 " stored row%s of %s failed "
			        "the checksum of %s figures (changed or damaged since written) and %s "
			        "computed again\n", study_store_dropped(sw.store),
			        study_store_dropped(sw.store) == 1 ? "" : "s", args.db,
			        study_store_dropped(sw.store) == 1 ? "its" : "their",
			        study_store_dropped(sw.store) == 1 ? "is" : "are");
		}
	}
#ifdef SHARDLAB_MPI
	if (launched)
		MPI_Bcast(&rc, 1, MPI_INT, 0, MPI_COMM_WORLD);
#endif
	if (rc == EXIT_OK) {
		sw.pr = (struct progress){.on = rank == 0 && isatty(STDERR_FILENO),
		                          .total = sw.n_points};
		clock_gettime(CLOCK_MONOTONIC, &sw.pr.t0);
		bool ok;
#ifdef SHARDLAB_MPI
		if (size > 1)
			ok = rank == 0 ? mpi_master(&sw, size) : mpi_worker(&sw);
		else
			ok = run_serial(&sw);
#else
		ok = run_serial(&sw);
#endif
		progress_show(&sw.pr, true);
		int64_t n_sim = 0;
		if (ok && rank == 0 && args.top > 0)
			ok = simulate_top(&sw, args.top, &n_sim);
		if (!ok && rank == 0)
			fprintf(stderr, "shardlab sweep: %s\n", sw.err[0] ? sw.err : "failed");
		else if (rank == 0)
			summary(&sw, args.db, n_sim);
		rc = ok ? EXIT_OK : EXIT_INVALID;
	}
	study_store_close(sw.store);
	arena_free(a);
#ifdef SHARDLAB_MPI
	if (launched && !inited)
		MPI_Finalize();
#endif
	return rc;
}
