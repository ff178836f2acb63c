/* scenarios-int.h — private pieces of the scenario loader. */
#ifndef SHARDLAB_SCENARIOS_INT_H
#define SHARDLAB_SCENARIOS_INT_H

#include "scenarios.h"

/* The "faults" member `v` of scenario s (faults.c): on success s->topo is
 * a copy of its topology carrying them. Paths relative to `dir`. False
 * after diagnostics. */
bool scenario_read_faults(struct arena *a, struct scenario *s, const struct jv *v,
                          const char *dir);

#endif
