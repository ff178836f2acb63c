/* main.c — `shardlab COMMAND ...`: dispatch to the subcommands. */
#include <stdio.h>
#include <string.h>

#include "cli.h"

static const struct {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{"import", cmd_import, "a Hugging Face config.json as a shardlab model file"},
	{"check", cmd_check, "validate topology, model, scenario, validation and study files"},
	{"topo", cmd_topo, "describe a topology: devices, tiers, bisection, paths"},
	{"calibrate", cmd_calibrate, "fit a calibration: kernel times, nccl-tests or hccl_test tables, measured runs"},
	{"graph", cmd_graph, "list a model's operators with shapes, FLOPs and parameters"},
	{"explain", cmd_explain, "a plan on every rank: layouts, slices, collectives, redistributions"},
	{"plan", cmd_plan, "plan a scenario with any planner: every op's strategy and where it came from"},
	{"advise", cmd_advise, "check a propagated plan against seed 000's rules for configuring ops"},
	{"moe", cmd_moe, "one mixture-of-experts layer under expert parallelism: params, AllToAll, FLOPs"},
	{"cp", cmd_cp, "one attention layer under context parallelism: ring K/V bytes, balance, overlap"},
	{"estimate", cmd_estimate, "the symbolic estimate of a plan: iteration time, breakdown, memory"},
	{"simulate", cmd_simulate, "simulate a plan's training iteration on SimGrid beside its estimate"},
	{"cosim", cmd_cosim, "several jobs on one cluster: each alone and together, the links they share"},
	{"compare", cmd_compare, "every planner's plan estimated and simulated: one table, the main job"},
	{"validate", cmd_validate, "predicted against measured: published training runs, collectives"},
	{"verify", cmd_verify, "run a plan on real numbers, rank by rank, against the unsharded model"},
	{"sweep", cmd_sweep, "a study's cluster sizes x configurations estimated into SQLite (resumable)"},
	{"fit", cmd_fit, "the smallest, fastest, cheapest cluster that meets a study's goal; Pareto"},
	{"plot", cmd_plot, "a sweep's figures: time, cost, MFU against size, Pareto, breakdown"},
	{"report", cmd_report, "one self-contained HTML page of a plan, a simulation or a study"},
};

static void usage(FILE *f)
{
	fprintf(f,
	        "usage: shardlab COMMAND [ARGS...]\n"
	        "       shardlab COMMAND --help\n"
	        "       shardlab --version\n"
	        "\n"
	        "shardlab plans and simulates distributed deep-learning training on\n"
	        "Ascend and GPU clusters.\n"
	        "\n"
	        "commands:\n");
	for (size_t i = 0; i < SL_COUNTOF(commands); i++)
		fprintf(f, "  %-9s %s\n", commands[i].name, commands[i].summary);
	fprintf(f,
	        "\n"
	        "Files are JSON with a \"format\" of shardlab-topology, shardlab-model\n"
	        "or shardlab-scenario (docs/formats.md). Where a command takes a\n"
	        "topology or a model, a scenario file naming one works too. validate\n"
	        "reads shardlab-validation files (docs/validation.md); sweep and fit\n"
	        "read shardlab-study files (docs/formats.md, docs/studies.md);\n"
	        "calibrate writes, and every command that prices a plan takes with\n"
	        "--calibration, shardlab-calibration files (docs/validation.md): each\n"
	        "device's shipped one in calibration/ applies by default.\n"
	        "\n"
	        "exit status: 0 success, 1 invalid input (diagnostics on stderr as\n"
	        "FILE:LINE: JSON.PATH: MESSAGE), 2 usage error.\n");
}

/* An argument holding a control character (an escape sequence, a newline;
 * C1's too, U+0080-U+009F, which some terminals obey) or bytes that are not
 * UTF-8 is refused before any command echoes it to a terminal or copies it
 * into a JSON output or a file it writes (JSON is UTF-8, RFC 8259); it is
 * shown escaped. Names and paths are data, never terminal commands. */
static const char *refused_byte(const unsigned char *c, size_t n, size_t *step)
{
	*step = util_utf8_len(c, n);
	if (*step == 0)
		return "bytes that are not UTF-8";
	if (*c < 0x20 || *c == 0x7f || (*c == 0xc2 && c[1] >= 0x80 && c[1] <= 0x9f))
		return "a control character";
	return NULL;
}

static bool refuse_control_characters(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const unsigned char *a = (const unsigned char *)argv[i];
		size_t n = strlen(argv[i]), at = 0, step = 1;
		const char *why = NULL;
		while (at < n && !(why = refused_byte(a + at, n - at, &step)))
			at += step;
		if (!why)
			continue;
		fprintf(stderr, "shardlab: argument %d (\"", i);
		for (size_t j = 0; j < n; j += step) {
			if (refused_byte(a + j, n - j, &step)) {
				fprintf(stderr, "\\x%02x", a[j]);
				step = 1;
			} else {
				fwrite(a + j, 1, step, stderr);
			}
		}
		fprintf(stderr, "\") holds %s: refused\n", why);
		return true;
	}
	return false;
}

int main(int argc, char **argv)
{
	if (refuse_control_characters(argc, argv))
		return EXIT_USAGE;
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return cli_finish_stdout(EXIT_OK);
	}
	if (!strcmp(argv[1], "--version")) {
		printf("shardlab %s\n", SHARDLAB_VERSION);
		return cli_finish_stdout(EXIT_OK);
	}
	for (size_t i = 0; i < SL_COUNTOF(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return cli_finish_stdout(commands[i].run(argc - 1, argv + 1));
	fprintf(stderr, "shardlab: unknown command '%s' (see shardlab --help)\n", argv[1]);
	return EXIT_USAGE;
}
