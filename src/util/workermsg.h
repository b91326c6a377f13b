/* workermsg: one message of the worker protocol, the JSON lines a worker writes to its result
 * fd (`ftbench ... --result-fd N`), read by the daemon and by load-weights from their children:
 *   {"type":"progress","done":D,"total":T[,"label":"..."]}
 *   {"type":"result","result":{...}}
 *   {"type":"error","message":"..."}
 * ftwmsg_parse checks one line (without its newline) against that: an unknown type, a missing
 * or mistyped field is an error, never a guess. The writer's side is the CLI's
 * (ftcli_progress / ftcli_result / ftcli_error). Returns 0 or -errno; never logs. */
#ifndef FT_UTIL_WORKERMSG_H
#define FT_UTIL_WORKERMSG_H
#include <jansson.h>
#include <stddef.h>

/* A worker's exit status, named once: the CLI's FTCLI_EXIT_* are these, ftbenchd reads them. */
enum ftwmsg_exit {
	FTWMSG_EXIT_OK = 0,      /* done (a result was sent) */
	FTWMSG_EXIT_FAIL = 1,    /* the work failed (a measurement, a checksum, a server) */
	FTWMSG_EXIT_USAGE = 2,   /* bad usage, or a missing prerequisite (no GPU where one is required) */
	FTWMSG_EXIT_INVALID = 3, /* bw: measured, but the profile's own checks failed (valid: false) */
};

enum ftwmsg_type { FTWMSG_PROGRESS, FTWMSG_RESULT, FTWMSG_ERROR };

struct ftwmsg {
	enum ftwmsg_type type;
	long long done, total; /* progress */
	const char *label;     /* progress: "" when absent; borrowed from json */
	json_t *result;        /* result: an object, borrowed from json */
	const char *message;   /* error: borrowed from json */
	json_t *json;          /* the whole message (owned: ftwmsg_release) */
};

/* Parse line (len bytes, no newline needed, no NUL needed). 0 with *m filled (release with
 * ftwmsg_release); -EPROTO with why (size n) saying what was wrong ("a line that is not JSON",
 * "a message without a type", "a malformed progress message", "a result that is not an object",
 * "an error without a message", "unknown message type 'x'") and *m zeroed; -ENOMEM. */
int ftwmsg_parse(const char *line, size_t len, struct ftwmsg *m, char *why, size_t n);

/* Drop the message's reference; accepts a zeroed or released m. */
void ftwmsg_release(struct ftwmsg *m);
#endif
