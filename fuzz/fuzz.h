/* fuzz.h — what the libFuzzer harnesses share (fuzz/README.md). Each
 * harness feeds one reader the fuzzer's bytes as a file and lets the
 * sanitizers (address, undefined) judge; a reader must return a status and
 * diagnostics for any input, never crash, overflow or leak. */
#ifndef SHARDLAB_FUZZ_H
#define SHARDLAB_FUZZ_H

#include <stddef.h>
#include <stdint.h>

#include "util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Every diagnostic formatted (as the CLI would print it) and checked to
 * be one line of text, then the list freed. */
void fuzz_diags_done(struct diag_list *d);

#endif
