/* workermsg: see workermsg.h. */
#include "util/workermsg.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

static int bad(struct ftwmsg *m, char *why, size_t n, const char *what, const char *detail)
{
	snprintf(why, n, what, detail);
	json_decref(m->json);
	memset(m, 0, sizeof *m);
	return -EPROTO;
}

int ftwmsg_parse(const char *line, size_t len, struct ftwmsg *m, char *why, size_t n)
{
	memset(m, 0, sizeof *m);
	json_error_t je;
	m->json = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
	if (!m->json)
		return bad(m, why, n, "%s", "a line that is not JSON");
	const char *type = json_string_value(json_object_get(m->json, "type"));
	if (!json_is_object(m->json) || !type)
		return bad(m, why, n, "%s", "a message without a type");
	if (!strcmp(type, "progress")) {
		json_t *d = json_object_get(m->json, "done"), *t = json_object_get(m->json, "total"),
		       *l = json_object_get(m->json, "label");
		if (!json_is_integer(d) || !json_is_integer(t) || (l && !json_is_string(l)))
			return bad(m, why, n, "%s", "a malformed progress message");
		m->type = FTWMSG_PROGRESS;
		m->done = json_integer_value(d);
		m->total = json_integer_value(t);
		m->label = l ? json_string_value(l) : "";
	} else if (!strcmp(type, "result")) {
		m->result = json_object_get(m->json, "result");
		if (!json_is_object(m->result))
			return bad(m, why, n, "%s", "a result that is not an object");
		m->type = FTWMSG_RESULT;
	} else if (!strcmp(type, "error")) {
		m->message = json_string_value(json_object_get(m->json, "message"));
		if (!m->message)
			return bad(m, why, n, "%s", "an error without a message");
		m->type = FTWMSG_ERROR;
	} else {
		char t[72];
		snprintf(t, sizeof t, "%.64s", type);
		return bad(m, why, n, "unknown message type '%s'", t);
	}
	return 0;
}

void ftwmsg_release(struct ftwmsg *m)
{
	if (!m)
		return;
	json_decref(m->json);
	memset(m, 0, sizeof *m);
}
