/* request: what the API makes of a request body and what it sends back for an error, with no
 * HTTP library in sight (so tests/fuzz/fuzz_request.c can drive it). Every string that echoes
 * input is cut without splitting a character and cleaned to well-formed UTF-8 here. */
#ifndef FTD_REQUEST_H
#define FTD_REQUEST_H
#include <jansson.h>
#include <stddef.h>

#include "kinds.h"

#define FTD_REQUEST_MSG_MAX 600 /* bytes of an error message, the NUL included */

/* The body of an error answer, {"error":{"code","message","field"}} (field null when NULL or
 * empty); message from fmt, cut to FTD_REQUEST_MSG_MAX and cleaned, field cleaned and cut to 127 bytes.
 * Returns a new reference, NULL only when out of memory. */
json_t *ftd_request_error_json(const char *code, const char *field, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* A POST /benchmark/start body: a JSON object of kind (string), args (object) and timeout_s
 * (integer in [1, max_timeout]) and nothing else. On success returns the parsed request (new
 * reference) with *kind and *args (NULL when absent) borrowed from it and *timeout_s (0: the
 * default); on a bad body returns NULL with err filled (400). */
json_t *ftd_request_start_parse(const char *body, size_t len, long max_timeout, const char **kind, json_t **args,
			long *timeout_s, struct ftd_err *err);
#endif
