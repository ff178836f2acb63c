/* test_inputs.c — input robustness beyond the bad-input corpus: names in
 * any valid UTF-8 go through to JSON reports intact, a JSON file given to
 * calibrate is named for what it is, and figures beyond the SI prefixes
 * print with an exponent rather than a row of digits. */
#include <cjson/cJSON.h>
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "fixture.h"

/* Two-, three- and four-byte UTF-8, an escaped quote and a \u escape:
 * "modèle — 🚀 \"quoted\" é", byte for byte. */
Test(inputs, utf8_name_reaches_json_intact)
{
	struct cli_run r = fixture_shardlab("graph tests/data/inputs/utf8-name.json --json", false);
	cr_assert_eq(r.status, 0);
	cJSON *j = cJSON_Parse(r.out);
	cr_assert_not_null(j, "graph --json is not JSON:\n%s", r.out);
	const cJSON *name = cJSON_GetObjectItemCaseSensitive(j, "name");
	cr_assert(cJSON_IsString(name));
	cr_expect_str_eq(name->valuestring,
	                 "mod\xc3\xa8le \xe2\x80\x94 \xf0\x9f\x9a\x80 \"quoted\" \xc3\xa9");
	cJSON_Delete(j);
	free(r.out);
}

Test(inputs, calibrate_names_a_json_file)
{
	struct cli_run r = fixture_shardlab("calibrate models/ffn.json", true);
	cr_expect_eq(r.status, 1);
	cr_expect_str_eq(r.out, "models/ffn.json:2: format: this is a \"shardlab-model\" file; "
	                        "calibrate reads a CSV table of kernel times\n");
	free(r.out);
}

Test(inputs, huge_figures_print_with_an_exponent)
{
	char b[32];
	cr_expect_str_eq(cli_si(b, sizeof b, 1e30, "s"), "1e+30 s");
	cr_expect_str_eq(cli_si(b, sizeof b, 1.234e300, "s"), "1.23e+300 s");
	/* Within the prefixes nothing changes: 999 E, then 1e+21. */
	cr_expect_str_eq(cli_si(b, sizeof b, 999e18, "B"), "999 EB");
	cr_expect_str_eq(cli_si(b, sizeof b, 1e21, "B"), "1e+21 B");
}
