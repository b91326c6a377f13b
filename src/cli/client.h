/* client: what the daemon's client commands (cmd_client.c: submit, jobs, wait, cancel) share: the
 * connection, a failure as an exit status (said once), job ids, a job fetched, a job followed on
 * its event stream to its end (a progress bar on a terminal) and its final state printed. */
#ifndef FT_CLI_CLIENT_H
#define FT_CLI_CLIENT_H
#include <jansson.h>

#include "cli/cli.h"
#include "util/http_client.h"

#define FTCLIENT_JOB_ID_LEN 16

/* c to the daemon at daemon (NULL: env FTBENCHD_URL, else the default) with the bearer token of
 * token_file (NULL: env FTBENCHD_TOKEN_FILE, else none): 0, or -errno after saying why. */
int ftclient_open(struct fthttpc *c, const char *daemon, const char *token_file);
/* A transport failure r of c said (the daemon is a missing prerequisite): FTCLI_EXIT_USAGE. */
int ftclient_transport_failed(struct fthttpc *c, int r);
/* A non-2xx response said with the daemon's message and field verbatim (json: its body on stdout
 * too): FTCLI_EXIT_FAIL for 429 and 5xx (try later), else FTCLI_EXIT_USAGE. */
int ftclient_api_failed(const struct fthttpc_resp *r, int json, const char *what);
/* o's string at k (borrowed), or NULL. */
const char *ftclient_jstr(const json_t *o, const char *k);
/* Whether a job in state s has ended. */
int ftclient_terminal(const char *s);
/* Whether s is a whole job id (16 hex digits). */
int ftclient_is_job_id(const char *s);
/* A job id or a unique prefix of one (at least 4 hex digits) into the whole id: 0 or an exit status. */
int ftclient_resolve_id(struct fthttpc *c, const char *arg, char id[FTCLIENT_JOB_ID_LEN + 1]);
/* GET /benchmark/jobs/{id} into *job (new reference): 0 or an exit status. */
int ftclient_get_job(struct fthttpc *c, const char *id, json_t **job);
/* Follow job id's event stream until it ends (reconnecting while the daemon answers; bar: a
 * progress bar on stderr), then its final record into *job (new reference): 0 or an exit status. */
int ftclient_follow(struct fthttpc *c, const char *id, int bar, json_t **job);
/* The human summary of a finished job on stdout. */
void ftclient_print_final(const json_t *job);
/* A finished job printed (json: its record) and released: the exit status of its state. */
int ftclient_finish(json_t *job, int json);
#endif
