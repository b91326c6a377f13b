#include "request.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/strutil.h"

json_t *ftd_request_error_json(const char *code, const char *field, const char *fmt, ...)
{
	char raw[FTD_REQUEST_MSG_MAX], msg[FTD_REQUEST_MSG_MAX], fld[128];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(raw, sizeof raw, fmt, ap);
	va_end(ap);
	ftstr_utf8_sanitize(msg, sizeof msg, raw);
	if (field)
		ftstr_utf8_sanitize(fld, sizeof fld, field);
	return json_pack("{s:{s:s,s:s,s:o}}", "error", "code", code, "message", *msg ? msg : code, "field",
			 field && *field ? json_string(fld) : json_null());
}

json_t *ftd_request_start_parse(const char *body, size_t len, long max_timeout, const char **kind, json_t **args,
			long *timeout_s, struct ftd_err *err)
{
	json_error_t jerr;
	json_t *req = json_loadb(body ? body : "", body ? len : 0, JSON_REJECT_DUPLICATES, &jerr);
	if (!req) {
		ftd_kind_err_set(err, 400, "invalid_json", NULL, "malformed JSON at line %d column %d: %s", jerr.line,
			    jerr.column, jerr.text);
		return NULL;
	}
	if (!json_is_object(req)) {
		ftd_kind_err_set(err, 400, "invalid_request", NULL, "the body must be a JSON object");
		goto fail;
	}
	const char *k;
	json_t *v;
	json_object_foreach(req, k, v) {
		if (strcmp(k, "kind") && strcmp(k, "args") && strcmp(k, "timeout_s")) {
			char f[64];
			snprintf(f, sizeof f, "%.*s", ftstr_utf8_cut(k, sizeof f - 1), k);
			ftd_kind_err_set(err, 400, "unknown_field", f, "unknown field '%.*s' (kind, args, timeout_s)",
				    ftstr_utf8_cut(k, 64), k);
			goto fail;
		}
	}
	json_t *jk = json_object_get(req, "kind"), *ja = json_object_get(req, "args"), *to = json_object_get(req, "timeout_s");
	if (!jk) {
		ftd_kind_err_set(err, 400, "missing_field", "kind", "kind is required");
		goto fail;
	}
	if (!json_is_string(jk)) {
		ftd_kind_err_set(err, 400, "invalid_argument", "kind", "kind must be a string");
		goto fail;
	}
	if (ja && !json_is_object(ja)) {
		ftd_kind_err_set(err, 400, "invalid_argument", "args", "args must be an object");
		goto fail;
	}
	*timeout_s = 0;
	if (to) {
		if (!json_is_integer(to) || json_integer_value(to) < 1 || json_integer_value(to) > max_timeout) {
			ftd_kind_err_set(err, 400, "invalid_argument", "timeout_s", "timeout_s: expected an integer in [1, %ld]",
				    max_timeout);
			goto fail;
		}
		*timeout_s = (long)json_integer_value(to);
	}
	*kind = json_string_value(jk);
	*args = ja;
	return req;
fail:
	json_decref(req);
	return NULL;
}
