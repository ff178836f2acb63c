/* fixture.h — what the test programs share: an arena and a diagnostics
 * list per test (the diagnostics printed on stderr after it, so that a
 * failure shows why), and loading shipped files by name. Tests run from
 * the source root (tests/meson.build). */
#ifndef SHARDLAB_TEST_FIXTURE_H
#define SHARDLAB_TEST_FIXTURE_H

#include "planner.h"

extern struct arena *A;
extern struct diag_list D;

/* TestSuite(name, .init = fixture_setup, .fini = fixture_teardown). */
void fixture_setup(void);
void fixture_teardown(void);

/* A scenario file loaded into A (diagnostics in D); the test fails when it
 * does not load. */
struct scenario *fixture_scenario(const char *path);
/* topologies/NAME.json loaded into a; the test fails when it does not
 * load. */
struct topology *fixture_topology(struct arena *a, const char *name);

#endif
