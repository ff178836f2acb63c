/* csv.c — the one CSV writer every command's --csv shares (RFC 4180):
 * fields separated by commas, rows ended by "\n", a field quoted when it
 * holds a comma, a quote or a line break (quotes doubled). Numbers are
 * written in full: the shortest of %.15g and %.17g that reads back to the
 * same double, so that a spreadsheet or pandas sees the value the JSON
 * output has. Column names carry their unit (`_s`, `_bytes`, `_flops`,
 * `_pct`), docs/formats.md "CSV". No hot path.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

static void sep(struct cli_csv *c)
{
	if (c->col++ > 0)
		fputc(',', c->f);
}

void cli_csv_str(struct cli_csv *c, const char *s)
{
	sep(c);
	if (!s)
		return;
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, c->f);
		return;
	}
	fputc('"', c->f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', c->f);
		fputc(*s, c->f);
	}
	fputc('"', c->f);
}

void cli_csv_num(struct cli_csv *c, double v)
{
	char b[40];
	snprintf(b, sizeof b, "%.15g", v);
	if (strtod(b, NULL) != v)
		snprintf(b, sizeof b, "%.17g", v);
	sep(c);
	fputs(b, c->f);
}

void cli_csv_int(struct cli_csv *c, int64_t v)
{
	sep(c);
	fprintf(c->f, "%lld", (long long)v);
}

void cli_csv_end(struct cli_csv *c)
{
	fputc('\n', c->f);
	c->col = 0;
}

void cli_csv_header(struct cli_csv *c, const char *const *names)
{
	for (; *names; names++)
		cli_csv_str(c, *names);
	cli_csv_end(c);
}
