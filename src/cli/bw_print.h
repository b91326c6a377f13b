/* bw_print: what `ftbench bw` prints of its profiles. The kernel rows (one per workload and format)
 * are one column list (cli/table.h): the readable summary's table and the csv/md rows print from
 * it; the summary adds the host, the ceilings, each row's note, concurrent figures and batch sweep,
 * the replay and the warnings around it. */
#ifndef FT_CLI_BW_PRINT_H
#define FT_CLI_BW_PRINT_H
#include <jansson.h>
#include <stdio.h>

#include "cli/cli.h"

/* The readable summary of a profile (any version-4 profile bw wrote) on f. */
void ftcli_bw_summary(FILE *f, const json_t *profile);
/* csv|md on stdout: one header, then one row per profile (GPU) and kernel entry, the summary's
 * figures under their JSON names. Other formats print nothing. */
void ftcli_bw_rows(enum ftcli_format fmt, json_t *const *profs, int n);
#endif
