/* studies-int.h — what the files of studies/ share and nobody else needs.
 *
 * FNV-1a (64-bit; Fowler, Noll and Vo, IETF draft-eastlake-fnv), the hash
 * of a study's inputs (load.c) and of a stored row's figures (store.c). */
#ifndef SHARDLAB_STUDIES_INT_H
#define SHARDLAB_STUDIES_INT_H

#include "studies.h"

#define STUDIES_FNV_OFFSET 0xcbf29ce484222325ULL
#define STUDIES_FNV_PRIME 0x100000001b3ULL

/* h folded with the n bytes at p. */
uint64_t studies_fnv(uint64_t h, const void *p, size_t n);

/* The points table's `oom` column (docs/studies.md, "The database"): bit 1
 * the device's memory does not fit, bit 2 the host's does not (optimizer
 * offload), bit 4 the host's is tight; 0 and 1 as before the host was
 * checked. study_oom_decode sets r->oom and r->host_fit from it. */
int study_oom_code(const struct study_row *r);
void study_oom_decode(struct study_row *r, int code);
/* The worse of two memory classes. */
enum fit_class study_fit_worse(enum fit_class a, enum fit_class b);

#endif
