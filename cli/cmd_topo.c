/* stub: replaced by the module's implementation */
#include "cli.h"
int cmd_topo(int argc, char **argv) { (void)argc; (void)argv; return EXIT_USAGE; }
