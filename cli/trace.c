/* trace.c — a simulation's events as a Chrome trace (the JSON "trace event
 * format" that Perfetto and chrome://tracing open): one process per rank,
 * one thread per stream (0: compute and the ops' collectives, 1: gradient
 * synchronisation), a complete event ("ph": "X") per compute step and per
 * collective, timestamps and durations in microseconds.
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

static void trace_put_metadata(FILE *f, const struct sim_result *r)
{
	for (int64_t k = 0; k < r->n_ranks; k++) {
		fprintf(f,
		        "{\"name\":\"process_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":0,"
		        "\"args\":{\"name\":\"rank %" PRId64 "\"}},\n",
		        k, k);
		fprintf(f,
		        "{\"name\":\"process_sort_index\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":0,"
		        "\"args\":{\"sort_index\":%" PRId64 "}},\n",
		        k, k);
		for (int s = 0; s < 2; s++)
			fprintf(f,
			        "{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":%" PRId64 ",\"tid\":%d,"
			        "\"args\":{\"name\":\"%s\"}},\n",
			        k, s, stream_names[s]);
	}
}

static void trace_put_event(FILE *f, const struct sim_event *e, const struct program *prog)
{
	if (e->kind == SIM_EV_MEMORY) { /* a counter track per rank */
		fprintf(f, "{\"name\":\"memory\",\"ph\":\"C\",\"ts\":%.4f,\"pid\":%" PRId64
		        ",\"args\":{\"bytes\":%.0f}}", e->start_s * 1e6, e->rank, e->bytes);
		return;
	}
	bool compute = e->kind == SIM_EV_COMPUTE;
	fputs("{\"name\":", f);
	trace_put_string(f, e->name);
	fprintf(f, ",\"cat\":\"%s\",\"ph\":\"X\",\"ts\":%.4f,\"dur\":%.4f,\"pid\":%" PRId64
	        ",\"tid\":%d,\"args\":{\"step\":%d",
	        compute ? "compute" : "collective", e->start_s * 1e6,
	        (e->end_s - e->start_s) * 1e6, e->rank, e->stream, e->step);
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
	trace_put_metadata(f, r);
	for (int64_t i = 0; i < r->n_events; i++) {
		trace_put_event(f, &r->events[i], prog);
		fputs(",\n", f);
	}
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
