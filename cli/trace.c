/* trace.c — a simulation's events as a Chrome trace (the JSON "trace event
 * format" that Perfetto and chrome://tracing open): one process per rank,
 * one thread per stream (0: compute and the ops' collectives, 1: gradient
 * synchronisation), a complete event ("ph": "X") per compute step and per
 * collective, timestamps and durations in microseconds; the busiest links'
 * utilisation over time as counter tracks of one more process ("links").
 * Several jobs simulated together (cosim) put their ranks one job after
 * another, each process named with its job.
 *
 * Streamed with fprintf rather than built as a cJSON tree: a traced run of
 * hundreds of ranks has millions of events. Written through cli_out
 * (output.c): atomically to a regular file, in place to a device or FIFO.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "sim.h"

static const char *const stream_names[] = {"stream 0: compute and collectives",
                                           "stream 1: gradient synchronisation"};

/* A JSON string literal of s (quotes, backslashes and control characters
 * escaped). */
static void trace_put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
		if (*c == '"' || *c == '\\')
			fprintf(f, "\\%c", *c);
		else if (*c < 0x20)
			fprintf(f, "\\u%04x", *c);
		else
			fputc(*c, f);
	}
	fputc('"', f);
}

/* A process's name and place: "rank 3", or "job a rank 3". */
static void trace_put_process(FILE *f, int64_t pid, const char *job, const char *what, int64_t k)
{
	fprintf(f, "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64
	        ",\"tid\":0,\"args\":{\"name\":", pid);
	char name[160];
	if (job)
		snprintf(name, sizeof name, "job %s %s", job, what);
	else
		snprintf(name, sizeof name, "%s", what);
	if (k >= 0)
		snprintf(name + strlen(name), sizeof name - strlen(name), " %" PRId64, k);
	trace_put_string(f, name);
	fprintf(f, "}},\n{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%" PRId64
	        ",\"tid\":0,\"args\":{\"sort_index\":%" PRId64 "}},\n", pid, pid);
}

static void trace_put_metadata(FILE *f, const struct sim_result *r, int64_t pid0,
                               const char *job)
{
	for (int64_t k = 0; k < r->n_ranks; k++) {
		trace_put_process(f, pid0 + k, job, "rank", k);
		for (int s = 0; s < 2; s++)
			fprintf(f,
			        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%d,"
			        "\"args\":{\"name\":\"%s\"}},\n",
			        pid0 + k, s, stream_names[s]);
	}
}

/* The busiest links' utilisation, a counter track each, in process pid:
 * a value at the start of every bin, and 0 at the end. */
static void trace_put_links(FILE *f, const struct sim_result *r, int64_t pid, const char *job)
{
	if (r->n_series == 0)
		return;
	trace_put_process(f, pid, job, "links: the busiest, utilisation over time", -1);
	for (int i = 0; i < r->n_series; i++) {
		const struct sim_link_series *s = &r->series[i];
		const char *name = r->links[s->link].name;
		for (int b = 0; b <= SIM_BINS; b++) {
			fputs("{\"name\":", f);
			trace_put_string(f, name);
			fprintf(f, ",\"ph\":\"C\",\"ts\":%.4f,\"pid\":%" PRId64
			        ",\"args\":{\"utilisation\":%.6g}},\n", b * r->bin_s * 1e6, pid,
			        b < SIM_BINS ? s->utilisation[b] : 0.0);
		}
	}
}

static void trace_put_event(FILE *f, const struct sim_event *e, const struct program *prog,
                            int64_t pid0)
{
	if (e->kind == SIM_EV_MEMORY) { /* a counter track per rank */
		fprintf(f, "{\"name\":\"memory\",\"ph\":\"C\",\"ts\":%.4f,\"pid\":%" PRId64
		        ",\"args\":{\"bytes\":%.0f}}", e->start_s * 1e6, pid0 + e->rank, e->bytes);
		return;
	}
	bool compute = e->kind == SIM_EV_COMPUTE;
	fputs("{\"name\":", f);
	trace_put_string(f, e->name);
	fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.4f,\"dur\":%.4f,\"pid\":%" PRId64
	        ",\"tid\":%d,\"args\":{\"step\":%d",
	        compute ? "compute" : "collective", e->start_s * 1e6,
	        (e->end_s - e->start_s) * 1e6, pid0 + e->rank, e->stream, e->step);
	if (prog && e->step >= 0 && e->step < prog->n_steps)
		fprintf(f, ",\"phase\":\"%s\"", prog_phase_names[prog->steps[e->step].phase]);
	fputs("}}", f);
}

void report_trace_stream(FILE *f, const struct sim_result *r, const struct program *prog,
                        const char *title)
{
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"title\":", f);
	trace_put_string(f, title);
	fprintf(f, ",\"iteration_s\":%.9g},\n\"traceEvents\":[\n", r->iteration_s);
	trace_put_metadata(f, r, 0, NULL);
	for (int64_t i = 0; i < r->n_events; i++) {
		trace_put_event(f, &r->events[i], prog, 0);
		fputs(",\n", f);
	}
	trace_put_links(f, r, r->n_ranks, NULL);
	/* An instant event marks the end of the iteration (and lets every
	 * event above end with a comma). */
	fputs("{\"name\":\"iteration end\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"ts\":", f);
	fprintf(f, "%.4f}\n]}\n", r->iteration_s * 1e6);
}

bool report_trace_write(const char *path, const struct sim_result *r, const struct program *prog,
                 const char *title, char *err, size_t err_size)
{
	struct cli_out o;
	if (!cli_out_open(&o, path, err, err_size))
		return false;
	report_trace_stream(o.f, r, prog, title);
	return cli_out_close(&o, err, err_size);
}

bool report_trace_jobs_write(const char *path, const struct sim_result *r,
                             const struct program *const *progs, const char *const *names,
                             int n_jobs, const char *title, char *err, size_t err_size)
{
	struct cli_out o;
	if (!cli_out_open(&o, path, err, err_size))
		return false;
	FILE *f = o.f;
	double end = 0;
	for (int j = 0; j < n_jobs; j++)
		end = r[j].iteration_s > end ? r[j].iteration_s : end;
	fputs("{\"displayTimeUnit\":\"ns\",\"otherData\":{\"title\":", f);
	trace_put_string(f, title);
	fprintf(f, ",\"iteration_s\":%.9g},\n\"traceEvents\":[\n", end);
	/* each job: its ranks, then its links */
	int64_t pid0 = 0;
	for (int j = 0; j < n_jobs; j++) {
		trace_put_metadata(f, &r[j], pid0, names[j]);
		for (int64_t i = 0; i < r[j].n_events; i++) {
			trace_put_event(f, &r[j].events[i], progs[j], pid0);
			fputs(",\n", f);
		}
		trace_put_links(f, &r[j], pid0 + r[j].n_ranks, names[j]);
		pid0 += r[j].n_ranks + 1;
	}
	fputs("{\"name\":\"iteration end\",\"ph\":\"i\",\"s\":\"g\",\"pid\":0,\"tid\":0,\"ts\":", f);
	fprintf(f, "%.4f}\n]}\n", end * 1e6);
	return cli_out_close(&o, err, err_size);
}
