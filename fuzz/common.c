/* common.c — shared by the harnesses: diagnostics formatted as the CLI
 * prints them, so that formatting runs under the sanitizers too. */
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

void fuzz_diags_done(struct diag_list *d)
{
	for (size_t i = 0; i < d->count; i++) {
		char *s = diag_format(&d->items[i]);
		/* A diagnostic is one line: a name copied raw into it must not
		 * carry a newline. */
		SL_ASSERT(s == NULL || strchr(s, '\n') == NULL);
		free(s);
	}
	diag_list_free(d);
}
