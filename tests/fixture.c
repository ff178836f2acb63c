/* fixture.c — the test programs' shared set-up (fixture.h). */
#include "fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>

struct arena *A;
struct diag_list D;

void fixture_setup(void)
{
	A = arena_new();
	diag_list_init(&D);
}

void fixture_teardown(void)
{
	for (size_t i = 0; i < D.count; i++) {
		char *s = diag_format(&D.items[i]);
		fprintf(stderr, "%s\n", s ? s : "out of memory");
		free(s);
	}
	diag_list_free(&D);
	arena_free(A);
	A = NULL;
}

struct scenario *fixture_scenario(const char *path)
{
	struct scenario *s = scenario_load(A, path, &D);
	cr_assert_not_null(s, "%s does not load", path);
	return s;
}

struct topology *fixture_topology(struct arena *a, const char *name)
{
	struct diag_list d;
	diag_list_init(&d);
	char path[256];
	snprintf(path, sizeof path, "topologies/%s.json", name);
	struct topology *t = topo_load(a, path, &d);
	for (size_t i = 0; !t && i < d.count; i++) {
		char *s = diag_format(&d.items[i]);
		fprintf(stderr, "%s\n", s ? s : "out of memory");
		free(s);
	}
	diag_list_free(&d);
	cr_assert_not_null(t, "%s does not load", path);
	return t;
}
