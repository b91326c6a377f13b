/* Placeholder until the daemon issue lands: says so and exits 2. */
#include "cli/cli.h"

int cmd_submit(int argc, char **argv) { ftcli_error("not built yet in this version"); return FTCLI_EXIT_USAGE; }
int cmd_jobs(int argc, char **argv) { ftcli_error("not built yet in this version"); return FTCLI_EXIT_USAGE; }
int cmd_wait(int argc, char **argv) { ftcli_error("not built yet in this version"); return FTCLI_EXIT_USAGE; }
int cmd_cancel(int argc, char **argv) { ftcli_error("not built yet in this version"); return FTCLI_EXIT_USAGE; }
