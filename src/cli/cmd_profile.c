/* Placeholder until its issue lands: says so and exits 2. */
#include "cli/cli.h"

int cmd_profile(int argc, char **argv)
{
	ftcli_error("not built yet in this version");
	return FTCLI_EXIT_USAGE;
}
