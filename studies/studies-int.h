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

#endif
