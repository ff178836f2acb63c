/* sim.c — sim_run: one simulation in a child process; sim_plan: a plan
 * estimated, lowered and simulated.
 *
 * SimGrid allows one engine per process, so every simulation runs in a
 * forked child (run.c) that writes its result to a pipe as plain binary:
 * figures, the links' names (strings made in the child), the collectives
 * and the trace events. Step labels are pointers into the caller's program,
 * valid in the parent as they were in the child (fork copies the address
 * space), so events carry step indices only. A child that crashes closes
 * the pipe; the parent reads to the end, reaps it and reports it.
 *
 * Units: seconds, bytes. wall_s is the only wall-clock figure.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "sim-int.h"

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Everything the child wrote, malloc'd; NULL on OOM. */
static char *read_all(int fd, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	while (buf) {
		if (n == cap) {
			char *p = realloc(buf, cap * 2);
			if (!p) {
				free(buf);
				return NULL;
			}
			buf = p;
			cap *= 2;
		}
		ssize_t r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	*len = n;
	return buf;
}

struct in_buf {
	const char *p;
	size_t n, off;
	bool bad;
};

static void get(struct in_buf *b, void *out, size_t n)
{
	if (n == 0) /* an empty array may be NULL */
		return;
	if (b->bad || b->off + n > b->n) {
		b->bad = true;
		memset(out, 0, n);
		return;
	}
	memcpy(out, b->p + b->off, n);
	b->off += n;
}

static double get_f(struct in_buf *b)
{
	double x;
	get(b, &x, sizeof(x));
	return x;
}

static int64_t get_i(struct in_buf *b)
{
	int64_t x;
	get(b, &x, sizeof(x));
	return x;
}

/* A count read back, checked against what the rest of the buffer can hold. */
static int64_t get_count(struct in_buf *b, size_t each)
{
	int64_t n = get_i(b);
	if (n < 0 || (size_t)n > (b->n - b->off) / (each ? each : 1))
		b->bad = true;
	return b->bad ? 0 : n;
}

static bool parse_links(struct arena *a, struct in_buf *b, struct sim_result *out)
{
	out->n_links = (int)get_count(b, 4 * sizeof(double));
	out->links = arena_calloc(a, (size_t)out->n_links + 1, sizeof(*out->links));
	if (!out->links)
		return false;
	for (int i = 0; i < out->n_links && !b->bad; i++) {
		int64_t len = get_count(b, 1);
		char *name = arena_alloc(a, (size_t)len + 1);
		if (!name)
			return false;
		get(b, name, (size_t)len);
		out->links[i].name = name;
		out->links[i].bytes = get_f(b);
		out->links[i].busy_s = get_f(b);
		out->links[i].utilisation = get_f(b);
	}
	out->bin_s = get_f(b);
	out->n_series = (int)get_count(b, (1 + SIM_BINS) * sizeof(double));
	out->series = arena_calloc(a, (size_t)out->n_series + 1, sizeof(*out->series));
	if (!out->series)
		return false;
	for (int i = 0; i < out->n_series && !b->bad; i++) {
		out->series[i].link = (int)get_i(b);
		if (out->series[i].link < 0 || out->series[i].link >= out->n_links)
			b->bad = true;
		for (int k = 0; k < SIM_BINS; k++)
			out->series[i].utilisation[k] = get_f(b);
	}
	return true;
}

static bool parse(struct arena *a, struct in_buf *b, const struct program *prog,
                  struct sim_result *out)
{
	out->iteration_s = get_f(b);
	out->n_ranks = get_count(b, 8 * sizeof(double));
	out->ranks = arena_calloc(a, (size_t)out->n_ranks + 1, sizeof(*out->ranks));
	if (!out->ranks)
		return false;
	for (int64_t r = 0; r < out->n_ranks; r++) {
		out->ranks[r].compute_s = get_f(b);
		out->ranks[r].comm_exposed_s = get_f(b);
		out->ranks[r].pipeline_wait_s = get_f(b);
		out->ranks[r].idle_s = get_f(b);
		out->ranks[r].peak_memory_bytes = get_f(b);
		out->ranks[r].straggler_wait_s = get_f(b);
		out->ranks[r].pipeline_transfer_s = get_f(b);
		out->ranks[r].pipeline_alone_s = get_f(b);
	}
	if (!parse_links(a, b, out))
		return false;
	out->n_collectives = (int)get_count(b, 4 * sizeof(double));
	out->collectives = arena_calloc(a, (size_t)out->n_collectives + 1, sizeof(*out->collectives));
	if (!out->collectives)
		return false;
	for (int i = 0; i < out->n_collectives; i++) {
		out->collectives[i].step = (int)get_i(b);
		out->collectives[i].algo = (enum collective_algo)get_i(b);
		out->collectives[i].simulated_s = get_f(b);
		out->collectives[i].formula_s = get_f(b);
	}
	out->messages = get_i(b);
	out->activities = get_i(b);
	out->by_formula = get_i(b);
	out->n_events = get_count(b, sizeof(struct sim_event));
	out->events = arena_calloc(a, (size_t)out->n_events + 1, sizeof(*out->events));
	if (!out->events)
		return false;
	get(b, out->events, (size_t)out->n_events * sizeof(*out->events));
	for (int64_t i = 0; i < out->n_events && !b->bad; i++) {
		int s = out->events[i].step;
		if (out->events[i].kind == SIM_EV_MEMORY)
			out->events[i].name = "memory";
		else if (s < 0 || s >= prog->n_steps)
			b->bad = true;
		else
			out->events[i].name = prog->steps[s].label;
	}
	return true;
}

static const char *child_failure(int code)
{
	switch (code) {
	case 3: return "a collective's group reaches ranks outside the program, or memory ran out";
	case 4: return "the platform could not be written or loaded";
	case 5: return "memory ran out during the simulation";
	case 7: return "fidelity representative needs the ranks to split into data-parallel "
	               "replicas: a rank in two gradient groups with different first members, a "
	               "collective group holding several representatives and other ranks, or a "
	               "pipeline send between ranks of different replicas (use fidelity coarse)";
	default: return "the result could not be written";
	}
}

static bool check_input(const struct topology *t, const struct program *prog,
                        struct diag_list *diags)
{
	if (prog->n_ranks < 1 || prog->n_ranks > t->n_devices) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "simulation: the program's %lld ranks do not fit the topology's %lld devices",
		         (long long)prog->n_ranks, (long long)t->n_devices);
		return false;
	}
	if (prog->n_ranks > INT32_MAX / 2 || prog->micro_batches < 1 || prog->n_stages < 1 ||
	    prog->stage_ranks * prog->n_stages != prog->n_ranks) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "simulation: a program of %lld ranks in %d stages over %lld micro-batches "
		         "cannot be simulated", (long long)prog->n_ranks, prog->n_stages,
		         (long long)prog->micro_batches);
		return false;
	}
	return true;
}

/* Every job's devices inside the topology, no device two ranks'. */
static bool check_devices(const struct topology *t, const struct sim_job *jobs, int n_jobs,
                          struct diag_list *diags)
{
	uint8_t *seen = calloc((size_t)t->n_devices + 1, 1);
	if (!seen) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "simulation: out of memory");
		return false;
	}
	bool ok = true;
	for (int j = 0; ok && j < n_jobs; j++) {
		for (int64_t r = 0; ok && r < jobs[j].prog->n_ranks; r++) {
			int64_t d = jobs[j].devices ? jobs[j].devices[r] : r;
			if (d < 0 || d >= t->n_devices) {
				diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
				         "simulation: job %d's rank %lld is placed on device %lld, outside "
				         "the topology's %lld", j, (long long)r, (long long)d,
				         (long long)t->n_devices);
				ok = false;
			} else if (seen[d]) {
				diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
				         "simulation: job %d's rank %lld is placed on device %lld, which "
				         "another rank holds", j, (long long)r, (long long)d);
				ok = false;
			}
			if (ok)
				seen[d] = 1;
		}
	}
	free(seen);
	return ok;
}

static bool parse_shared(struct arena *a, struct in_buf *b, int n_jobs, struct sim_shared *out)
{
	struct sim_shared s = {.n_jobs = n_jobs};
	s.bin_s = get_f(b);
	s.n_links = (int)get_count(b, (1 + (size_t)n_jobs + SIM_BINS) * sizeof(double));
	s.links = arena_calloc(a, (size_t)s.n_links + 1, sizeof(*s.links));
	if (!s.links)
		return false;
	for (int i = 0; i < s.n_links && !b->bad; i++) {
		int64_t len = get_count(b, 1);
		char *name = arena_alloc(a, (size_t)len + 1);
		s.links[i].bytes = arena_calloc(a, (size_t)n_jobs + 1, sizeof(double));
		if (!name || !s.links[i].bytes)
			return false;
		get(b, name, (size_t)len);
		s.links[i].name = name;
		s.links[i].bandwidth_bps = get_f(b);
		for (int j = 0; j < n_jobs; j++)
			s.links[i].bytes[j] = get_f(b);
		for (int k = 0; k < SIM_BINS; k++)
			s.links[i].utilisation[k] = get_f(b);
	}
	if (out)
		*out = s;
	return true;
}

static void child(const struct topology *t, const struct sim_job *jobs, int n_jobs,
                  const struct sim_options *o, int fds[2])
{
	close(fds[0]);
	int code = sim_child_run_jobs(t, jobs, n_jobs, o, fds[1]);
	close(fds[1]);
	_exit(code);
}

/* Reaps the child; true when it exited 0. Adds the diagnostic otherwise. */
static bool reap(pid_t pid, struct diag_list *diags)
{
	int status;
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "simulation: lost the child process");
			return false;
		}
	}
	if (WIFSIGNALED(status)) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "simulation: the simulator crashed (signal %d)", WTERMSIG(status));
		return false;
	}
	if (WEXITSTATUS(status) != 0) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "simulation failed: %s",
		         child_failure(WEXITSTATUS(status)));
		return false;
	}
	return true;
}

bool sim_run(struct arena *a, const struct topology *t, const struct program *prog,
             const struct sim_options *o, struct sim_result *out, struct diag_list *diags)
{
	struct sim_job job = {prog, NULL};
	return sim_run_jobs(a, t, &job, 1, o, out, NULL, diags);
}

bool sim_run_jobs(struct arena *a, const struct topology *t, const struct sim_job *jobs,
                  int n_jobs, const struct sim_options *o, struct sim_result *out,
                  struct sim_shared *shared, struct diag_list *diags)
{
	memset(out, 0, (size_t)n_jobs * sizeof(*out));
	if (shared)
		memset(shared, 0, sizeof(*shared));
	for (int j = 0; j < n_jobs; j++)
		if (!check_input(t, jobs[j].prog, diags))
			return false;
	if (n_jobs < 1 || !check_devices(t, jobs, n_jobs, diags))
		return false;
	double t0 = now_s();
	int fds[2];
	if (pipe(fds) != 0) {
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "simulation: no pipe (%s)", strerror(errno));
		return false;
	}
	fflush(NULL);
	pid_t pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL, "simulation: cannot fork (%s)", strerror(errno));
		return false;
	}
	if (pid == 0)
		child(t, jobs, n_jobs, o, fds);
	close(fds[1]);
	size_t len = 0;
	char *buf = read_all(fds[0], &len);
	close(fds[0]);
	bool reaped = reap(pid, diags), ok = reaped && buf;
	struct in_buf b = {buf, len, 0, false};
	for (int j = 0; ok && j < n_jobs; j++)
		ok = parse(a, &b, jobs[j].prog, &out[j]) && !b.bad;
	ok = ok && parse_shared(a, &b, n_jobs, shared) && !b.bad;
	if (reaped && !ok)
		diag_add(diags, DIAG_ERROR, NULL, 0, NULL,
		         "simulation: the result came back incomplete (out of memory?)");
	free(buf);
	for (int j = 0; j < n_jobs; j++)
		out[j].wall_s = now_s() - t0;
	return ok;
}

double sim_peak_memory(const struct sim_result *r)
{
	double peak = 0;
	for (int64_t k = 0; k < r->n_ranks; k++)
		peak = r->ranks[k].peak_memory_bytes > peak ? r->ranks[k].peak_memory_bytes : peak;
	return peak;
}

/* The program steps one rank of stage st runs in an iteration. */
static double stage_steps(const struct program *prog, int st)
{
	const struct prog_stage *ps = &prog->stages[st];
	double steps = ps->n_tail;
	for (int k = 0; k < ps->n_slots; k++) {
		int from[2], n[2];
		for (int j = prog_slot_ranges(prog->chunks, &ps->slots[k], from, n); j-- > 0;)
			steps += n[j];
	}
	return steps;
}

double sim_program_events(const struct program *prog)
{
	double events = 0;
	for (int st = 0; st < prog->n_stages; st++)
		events += stage_steps(prog, st) * (double)prog->stage_ranks;
	return events;
}

double sim_program_events_run(const struct program *prog, enum sim_fidelity f,
                              int64_t *running)
{
	*running = prog->n_ranks;
	double all = sim_program_events(prog);
	if (f != FIDELITY_REPRESENTATIVE || prog->stage_ranks <= 0)
		return all;
	int64_t *rep_of = malloc((size_t)prog->n_ranks * sizeof(*rep_of) + 1);
	struct sim_ops ops = {0};
	bool ok = rep_of && sim_representatives(prog, rep_of, &ops);
	sim_ops_free(&ops);
	if (!ok) { /* counted as every rank: the simulation will say why */
		free(rep_of);
		return all;
	}
	double events = 0;
	*running = 0;
	for (int st = 0; st < prog->n_stages; st++) {
		int64_t reps = 0, off = (int64_t)st * prog->stage_ranks;
		for (int64_t r = off; r < off + prog->stage_ranks && r < prog->n_ranks; r++)
			reps += rep_of[r] == r;
		*running += reps;
		/* the stage's steps per rank, as sim_program_events counts them */
		events += stage_steps(prog, st) * (double)reps;
	}
	free(rep_of);
	return events;
}

bool sim_plan(struct arena *a, const struct plan *p, double bucket_bytes, double max_events,
              const struct sim_options *o, struct sim_plan_outcome *out, struct diag_list *d)
{
	memset(out, 0, sizeof *out);
	/* The algorithm asked for prices the estimate as it runs the
	 * simulation: a plan on a copy of the scenario that says so (the plan
	 * itself does not depend on it). */
	if (o->algo != p->scenario->sim.collective_algo) {
		struct scenario *sc = arena_alloc(a, sizeof *sc);
		struct plan *q = arena_alloc(a, sizeof *q);
		if (!sc || !q) {
			diag_add(d, DIAG_ERROR, p->scenario->file, 0, NULL, "out of memory");
			return false;
		}
		*sc = *p->scenario;
		sc->sim.collective_algo = o->algo;
		*q = *p;
		q->scenario = sc;
		p = q;
	}
	out->estimated = plan_estimate(a, p, &out->est, d);
	out->lowered = out->estimated && plan_lower(a, p, bucket_bytes, &out->prog, d);
	if (!out->lowered)
		return false;
	double budget = max_events > 0 ? max_events : SIM_MAX_EVENTS;
	int64_t running;
	double events = sim_program_events_run(&out->prog, o->fidelity, &running);
	if (events > budget) {
		char ranks[96];
		if (running < out->prog.n_ranks)
			snprintf(ranks, sizeof ranks, "%lld of %lld ranks run at fidelity representative",
			         (long long)running, (long long)out->prog.n_ranks);
		else
			snprintf(ranks, sizeof ranks, "%lld ranks", (long long)out->prog.n_ranks);
		diag_add(d, DIAG_ERROR, p->scenario->file, 0, "training.global_batch",
		         "simulating this iteration would run %.3g program steps on its ranks (%s, "
		         "%lld micro-batch%s), over the budget of %.3g (--max-events): fewer "
		         "micro-batches (a smaller global batch or a larger micro-batch), or a larger "
		         "--max-events", events, ranks, (long long)out->prog.micro_batches,
		         out->prog.micro_batches == 1 ? "" : "es", budget);
		return false;
	}
	if (o->before_run)
		o->before_run(o->before_run_ctx, out->prog.n_ranks, out->prog.micro_batches, events);
	out->simulated = sim_run(a, p->scenario->topo, &out->prog, o, &out->sim, d);
	return out->simulated;
}
