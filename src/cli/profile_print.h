/* profile_print: what `ftbench profile` prints of profiles besides JSON: show (the readable
 * profile with its checks and validation records, or its formats as csv/md rows) and history (a
 * row per kept profile and format), each table from one column list (cli/table.h). */
#ifndef FT_CLI_PROFILE_PRINT_H
#define FT_CLI_PROFILE_PRINT_H
#include "cli/cli.h"
#include "ftprofile.h"

/* show, on stdout: csv|md rows of the formats, else the readable profile. */
void ftcli_profile_show(const struct ftprof *p, enum ftcli_format fmt);
/* history of the GPU uuid (NULL or "": the host) in fmt (json: the kept profiles as an array), at
 * most the newest limit (0: all kept):
 * 0, or FTCLI_EXIT_FAIL when none is kept (said on stderr) or the history cannot be read. */
int ftcli_profile_history(const char *uuid, int limit, enum ftcli_format fmt);
#endif
