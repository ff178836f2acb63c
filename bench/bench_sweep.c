/* bench_sweep.c — the estimate-only sweep's speed and the database's
 * share of it (docs/studies.md, "Speed").
 *
 * The study (default: scenarios/studies/teaching-gpt-4layer.json, 11,136
 * points) is swept twice in this process: once with the estimates only
 * (study_eval_unit on every unit, nothing stored), once as shardlab sweep
 * does it (study_store_done, study_eval_unit, study_store_put per unit)
 * into a fresh database in /tmp. CLOCK_MONOTONIC wall time; one JSON line:
 *   {"bench": "sweep", "study", "points", "estimate_s", "points_per_s",
 *    "stored_s", "stored_points_per_s", "estimate_cpu_s", "stored_cpu_s",
 *    "db_cpu_s", "db_overhead_pct"}
 * db_cpu_s is the CPU time spent in the store's calls (study_store_done,
 * study_store_put) during the stored sweep, db_overhead_pct that over the
 * rest of the stored sweep's CPU time (the estimates): CPU time is the
 * process's own, whatever else a shared machine runs.
 * The MPI figure is the command line's: scripts in docs/studies.md time
 * `mpirun -n 2 shardlab sweep` on the same study. Usage:
 *   bench_sweep [STUDY]
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bench.h"
#include "studies.h"

/* CPU time of this process: what the sweep costs whatever else the
 * machine runs (a shared machine's wall time is not its own). */
static double cpu_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double sweep(const struct study *st, const struct study_unit *u, int n,
                    struct study_store *store, bool *ok, double *cpu,
                    double *db_cpu)
{
	int most = 1;
	for (int i = 0; i < n; i++)
		most = u[i].n_configs > most ? u[i].n_configs : most;
	struct study_row *rows = malloc((size_t)most * sizeof *rows);
	bool *done = calloc((size_t)most, sizeof *done);
	char err[256];
	double t0 = bench_now_s(), c0 = cpu_s();
	*ok = rows && done;
	for (int i = 0; *ok && i < n; i++) {
		struct arena *a = arena_new();
		double s0 = cpu_s();
		if (store && study_store_done(store, &u[i], done) < 0)
			*ok = false;
		*db_cpu += cpu_s() - s0;
		*ok = *ok && a && study_eval_unit(a, st, &u[i], store ? done : NULL, rows);
		s0 = cpu_s();
		if (*ok && store && !study_store_put(store, rows, u[i].n_configs, NULL, err, sizeof err)) {
			fprintf(stderr, "bench_sweep: %s\n", err);
			*ok = false;
		}
		*db_cpu += cpu_s() - s0;
		arena_free(a);
	}
	double wall = bench_now_s() - t0;
	*cpu = cpu_s() - c0;
	free(rows);
	free(done);
	return wall;
}

int main(int argc, char **argv)
{
	const char *file = argc > 1 ? argv[1]
	                            : SHARDLAB_SOURCE_ROOT "/scenarios/studies/teaching-gpt-4layer.json";
	struct diag_list d;
	diag_list_init(&d);
	struct arena *a = arena_new();
	struct study *st = a ? study_load(a, file, &d) : NULL;
	bench_print_diags("bench_sweep", &d);
	if (!st)
		return 1;
	int n;
	int64_t points;
	struct study_unit *u = study_units(a, st, &n, &points);
	char db[] = "/tmp/bench-sweep-XXXXXX";
	int fd = mkstemp(db);
	if (!u || fd < 0)
		return 1;
	close(fd);
	unlink(db);
	bool ok1, ok2 = false;
	double est_cpu, stored_cpu = 0, db_cpu = 0, none = 0;
	double est = sweep(st, u, n, NULL, &ok1, &est_cpu, &none);
	struct study_store *store;
	char err[512];
	double stored = 0;
	if (study_store_open(db, st, false, &store, err, sizeof err) == STORE_OK) {
		stored = sweep(st, u, n, store, &ok2, &stored_cpu, &db_cpu);
		study_store_close(store);
	} else {
		fprintf(stderr, "bench_sweep: %s\n", err);
	}
	char p[64];
	unlink(db);
	snprintf(p, sizeof p, "%s-wal", db);
	unlink(p);
	snprintf(p, sizeof p, "%s-shm", db);
	unlink(p);
	if (!ok1 || !ok2)
		return 1;
	printf("{\"bench\": \"sweep\", \"study\": \"%s\", \"points\": %" PRId64 ", \"estimate_s\": %.3f, "
	       "\"points_per_s\": %.0f, \"stored_s\": %.3f, \"stored_points_per_s\": %.0f, "
	       "\"estimate_cpu_s\": %.3f, \"stored_cpu_s\": %.3f, \"db_cpu_s\": %.3f, "
	       "\"db_overhead_pct\": %.1f}\n",
	       st->name, points, est, (double)points / est, stored, (double)points / stored, est_cpu,
	       stored_cpu, db_cpu, 100 * db_cpu / (stored_cpu - db_cpu));
	arena_free(a);
	return 0;
}
