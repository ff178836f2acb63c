/* cmd_plot.c — `shardlab plot DB --out FILE`: a sweep's figures (time to
 * train, cost and MFU against cluster size per family, the Pareto front of
 * time against cost, the iteration breakdown of the fastest points) drawn
 * with cairo (studies/plot.c) into SVG, PNG or PDF. */
#include <cairo.h>
#include <fontconfig/fontconfig.h>
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "studies.h"

static void help(FILE *f)
{
	fprintf(f,
	        "usage: shardlab plot DB --out FILE.svg|FILE.png|FILE.pdf [--title TEXT]\n"
	        "\n"
	        "Draw the figures of a sweep's database (shardlab sweep STUDY --db DB) on\n"
	        "one page of five panels, with cairo (docs/studies.md, \"plot\"):\n"
	        "  (a) time to train (hours) against devices, per cluster family: at\n"
	        "      each size the fastest point that fits the device memory;\n"
	        "  (b) the cost of those points against devices;\n"
	        "  (c) their MFU (%%) against devices;\n"
	        "  (d) time to train against cost: every point that fits memory, and\n"
	        "      the Pareto front as a line;\n"
	        "  (e) the iteration of the points of (a) broken down: compute,\n"
	        "      exposed communication, pipeline bubble and the rest (ms).\n"
	        "Devices on a log2 axis, times and costs on log10 axes. The kind of\n"
	        "file follows the name: .svg, .png (1500 x 1000 pixels) or .pdf.\n"
	        "\n"
	        "options:\n"
	        "  --out FILE    the picture to write (required)\n"
	        "  --title TEXT  the page's title (default: the study's name, or\n"
	        "                \"shardlab sweep: DB\" for a database that does not say)\n"
	        "\n"
	        "exit status: 0 written, 1 unreadable database or unwritable file, 2\n"
	        "usage error.\n");
}

int cmd_plot(int argc, char **argv)
{
	if (cli_wants_help(argc, argv)) {
		help(stdout);
		return EXIT_OK;
	}
	const char *db = NULL, *out = NULL, *title = NULL;
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--out") && i + 1 < argc)
			out = argv[++i];
		else if (!strcmp(argv[i], "--title") && i + 1 < argc)
			title = argv[++i];
		else if (argv[i][0] == '-') {
			fprintf(stderr, "shardlab plot: unknown option '%s' (see --help)\n", argv[i]);
			return EXIT_USAGE;
		} else if (db) {
			fprintf(stderr, "shardlab plot: one database at a time ('%s')\n", argv[i]);
			return EXIT_USAGE;
		} else
			db = argv[i];
	}
	if (!db || !out) {
		fprintf(stderr, "shardlab plot: missing %s (see --help)\n", !db ? "DB" : "--out FILE");
		return EXIT_USAGE;
	}
	struct arena *a = arena_new();
	struct study_store *s = NULL;
	char err[512] = "";
	int rc = EXIT_INVALID;
	struct study_row *rows;
	if (a && study_store_open_ro(db, &s, NULL, err, sizeof err)) {
		int n = study_store_rows(s, a, &rows, err, sizeof err);
		int nc = 0;
		for (int i = 0; i < n; i++)
			nc = rows[i].cluster + 1 > nc ? rows[i].cluster + 1 : nc;
		const char **names = arena_calloc(a, (size_t)nc + 1, sizeof *names);
		const char **kinds = arena_calloc(a, (size_t)nc + 1, sizeof *kinds);
		char t[512];
		snprintf(t, sizeof t, "shardlab sweep: %s", db);
		struct study_plot_info info;
		struct cli_out o;
		if (n >= 0 && names && kinds && study_store_cluster_names(s, a, nc, names, kinds) &&
		    study_store_info(s, a, &info) && cli_out_open(&o, out, err, sizeof err)) {
			if (title)
				info.title = title;
			else if (!info.title)
				info.title = t;
			/* through the one output writer: atomic, a failed write an error */
			if (study_plot(o.f, out, rows, n, nc, names, kinds, &info, err, sizeof err)) {
				if (cli_out_close(&o, err, sizeof err))
					rc = EXIT_OK;
			} else {
				cli_out_abort(&o);
			}
		}
	}
	if (rc != EXIT_OK)
		fprintf(stderr, "shardlab plot: %s\n", err[0] ? err : "out of memory");
	study_store_close(s);
	arena_free(a);
	/* The font caches cairo and fontconfig keep for the process, released
	 * so that leak checkers see only our own memory. */
	cairo_debug_reset_static_data();
	FcFini();
	return rc;
}
