#include "util/jschema.h"

#include <errno.h>
#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 128   /* schema nesting + $ref hops: guards against $ref loops */
#define PATH_MAX_LEN 512

struct vctx {
	const json_t *root;
	char path[PATH_MAX_LEN];
	size_t plen;
	int depth;
	/* The failure reported: message and the path length where it happened (deeper wins). */
	char msg[768];
	size_t msg_plen;
	int msg_is_type; /* the failure is a type mismatch (a weaker hint among anyOf branches) */
};

static const char *type_name(const json_t *j)
{
	switch (json_typeof(j)) {
	case JSON_OBJECT: return "object";
	case JSON_ARRAY: return "array";
	case JSON_STRING: return "string";
	case JSON_INTEGER: return "integer";
	case JSON_REAL: return "number";
	case JSON_TRUE:
	case JSON_FALSE: return "boolean";
	case JSON_NULL: return "null";
	}
	return "?";
}

/* Record the first error: "<path>: <what>" (rc -EINVAL: the instance is invalid) or
 * "schema (at <path>): <what>" (rc -ENOTSUP: the schema uses what this validator lacks). */
static int vfail(struct vctx *c, int rc, const char *fmt, va_list ap) __attribute__((format(printf, 3, 0)));
static int vfail(struct vctx *c, int rc, const char *fmt, va_list ap)
{
	char what[512];
	vsnprintf(what, sizeof what, fmt, ap);
	if (snprintf(c->msg, sizeof c->msg, rc == -ENOTSUP ? "schema (at %s): %s" : "%s: %s", c->path, what) < 0)
		c->msg[0] = '\0';
	c->msg_plen = c->plen;
	c->msg_is_type = 0;
	return rc;
}

static int fail(struct vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct vctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vfail(c, -EINVAL, fmt, ap);
	va_end(ap);
	return rc;
}

static int schema_fail(struct vctx *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int schema_fail(struct vctx *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int rc = vfail(c, -ENOTSUP, fmt, ap);
	va_end(ap);
	return rc;
}

/* Append ".key" or "[i]" to the path; returns the old length to restore. */
static size_t path_push_key(struct vctx *c, const char *key)
{
	size_t old = c->plen;
	int w = snprintf(c->path + c->plen, sizeof c->path - c->plen, ".%s", key);
	if (w > 0)
		c->plen = strnlen(c->path, sizeof c->path - 1);
	return old;
}

static size_t path_push_index(struct vctx *c, size_t i)
{
	size_t old = c->plen;
	int w = snprintf(c->path + c->plen, sizeof c->path - c->plen, "[%zu]", i);
	if (w > 0)
		c->plen = strnlen(c->path, sizeof c->path - 1);
	return old;
}

static void path_pop(struct vctx *c, size_t old)
{
	c->plen = old;
	c->path[old] = '\0';
}

static int is_number(const json_t *j)
{
	return json_is_integer(j) || json_is_real(j);
}

static int is_integral(const json_t *j)
{
	if (json_is_integer(j))
		return 1;
	if (json_is_real(j)) {
		double v = json_real_value(j);
		return isfinite(v) && v == floor(v);
	}
	return 0;
}

/* Equality of JSON Schema: numbers by value (1 == 1.0), the rest structurally. */
static int jequal(const json_t *a, const json_t *b)
{
	if (is_number(a) && is_number(b)) {
		if (json_is_integer(a) && json_is_integer(b))
			return json_integer_value(a) == json_integer_value(b);
		return json_number_value(a) == json_number_value(b);
	}
	if (json_typeof(a) != json_typeof(b))
		return 0;
	if (json_is_array(a)) {
		size_t n = json_array_size(a);
		if (n != json_array_size(b))
			return 0;
		for (size_t i = 0; i < n; i++)
			if (!jequal(json_array_get(a, i), json_array_get(b, i)))
				return 0;
		return 1;
	}
	if (json_is_object(a)) {
		const char *k;
		json_t *v;
		if (json_object_size(a) != json_object_size(b))
			return 0;
		json_object_foreach((json_t *)a, k, v) {
			json_t *w = json_object_get(b, k);
			if (!w || !jequal(v, w))
				return 0;
		}
		return 1;
	}
	return json_equal((json_t *)a, (json_t *)b);
}

static int type_matches(const char *t, const json_t *doc, int *known)
{
	*known = 1;
	if (!strcmp(t, "null"))
		return json_is_null(doc);
	if (!strcmp(t, "boolean"))
		return json_is_boolean(doc);
	if (!strcmp(t, "object"))
		return json_is_object(doc);
	if (!strcmp(t, "array"))
		return json_is_array(doc);
	if (!strcmp(t, "string"))
		return json_is_string(doc);
	if (!strcmp(t, "number"))
		return is_number(doc);
	if (!strcmp(t, "integer"))
		return is_integral(doc);
	*known = 0;
	return 0;
}

static size_t utf8_length(const char *s, size_t bytes)
{
	size_t n = 0;
	for (size_t i = 0; i < bytes; i++)
		if (((unsigned char)s[i] & 0xC0) != 0x80)
			n++;
	return n;
}

/* Resolve a local $ref ("#", "#/a/b" with ~0 ~1 escapes) against the root. */
static const json_t *resolve_ref(const json_t *root, const char *ref)
{
	if (ref[0] != '#')
		return NULL;
	if (ref[1] == '\0')
		return root;
	if (ref[1] != '/')
		return NULL;
	const json_t *cur = root;
	const char *p = ref + 2;
	char tok[256];
	for (;;) {
		size_t t = 0;
		while (*p && *p != '/') {
			char ch = *p++;
			if (ch == '~') {
				if (*p == '0')
					ch = '~';
				else if (*p == '1')
					ch = '/';
				else
					return NULL;
				p++;
			} else if (ch == '%') {
				return NULL; /* percent-encoding not supported */
			}
			if (t + 1 >= sizeof tok)
				return NULL;
			tok[t++] = ch;
		}
		tok[t] = '\0';
		if (json_is_object(cur)) {
			cur = json_object_get(cur, tok);
		} else if (json_is_array(cur)) {
			char *end;
			unsigned long i = strtoul(tok, &end, 10);
			if (!*tok || *end)
				return NULL;
			cur = json_array_get(cur, i);
		} else {
			return NULL;
		}
		if (!cur)
			return NULL;
		if (!*p)
			return cur;
		p++;
	}
}

static const char *const unsupported[] = {
	"patternProperties", "dependencies", "dependentRequired", "dependentSchemas", "if", "then",
	"else", "propertyNames", "contains", "minContains", "maxContains", "additionalItems",
	"prefixItems", "unevaluatedProperties", "unevaluatedItems", "$dynamicRef", "$recursiveRef",
};

static int validate(struct vctx *c, const json_t *schema, const json_t *doc);

/* Try each branch of anyOf/oneOf; returns how many match. A hard schema error is returned
 * as negative. The most telling failure among the branches (deepest; at equal depth, not a
 * mere type mismatch) is kept in best/best_plen. */
static int count_branches(struct vctx *c, const json_t *arr, const json_t *doc, int stop_at,
			  char *best, size_t bestlen, size_t *best_plen)
{
	int matches = 0;
	size_t i, best_score = 0;
	json_t *sub;
	*best_plen = 0;
	best[0] = '\0';
	json_array_foreach(arr, i, sub) {
		int r = validate(c, sub, doc);
		if (r == -ENOTSUP)
			return r;
		if (r == 0) {
			if (++matches >= stop_at)
				break;
			continue;
		}
		size_t score = c->msg_plen * 2 + !c->msg_is_type;
		if (!best[0] || score > best_score) {
			snprintf(best, bestlen, "%s", c->msg);
			*best_plen = c->msg_plen;
			best_score = score;
		}
	}
	return matches;
}

static int validate_object(struct vctx *c, const json_t *schema, const json_t *doc)
{
	const json_t *req = json_object_get(schema, "required");
	const json_t *props = json_object_get(schema, "properties");
	const json_t *addl = json_object_get(schema, "additionalProperties");
	const json_t *kw;
	const char *key;
	json_t *val;
	size_t i;
	int r;

	if (props && !json_is_object(props))
		return schema_fail(c, "properties must be an object");
	if (addl && !json_is_object(addl) && !json_is_boolean(addl))
		return schema_fail(c, "additionalProperties must be a schema");
	if (req) {
		json_t *name;
		if (!json_is_array(req))
			return schema_fail(c, "required must be an array");
		json_array_foreach(req, i, name) {
			if (!json_is_string(name))
				return schema_fail(c, "required must list strings");
			if (!json_object_get(doc, json_string_value(name)))
				return fail(c, "missing required property \"%s\"", json_string_value(name));
		}
	}
	if ((kw = json_object_get(schema, "minProperties")) && is_number(kw) &&
	    (double)json_object_size(doc) < json_number_value(kw))
		return fail(c, "%zu properties, fewer than minProperties %g", json_object_size(doc),
			    json_number_value(kw));
	if ((kw = json_object_get(schema, "maxProperties")) && is_number(kw) &&
	    (double)json_object_size(doc) > json_number_value(kw))
		return fail(c, "%zu properties, more than maxProperties %g", json_object_size(doc),
			    json_number_value(kw));
	json_object_foreach((json_t *)doc, key, val) {
		const json_t *sub = props ? json_object_get(props, key) : NULL;
		if (!sub) {
			if (!addl)
				continue;
			if (json_is_false(addl)) {
				return fail(c, "unexpected property \"%s\" (additionalProperties is false)", key);
			}
			sub = addl;
		}
		size_t old = path_push_key(c, key);
		r = validate(c, sub, val);
		path_pop(c, old);
		if (r)
			return r;
	}
	return 0;
}

static int validate_array(struct vctx *c, const json_t *schema, const json_t *doc)
{
	const json_t *items = json_object_get(schema, "items");
	const json_t *kw;
	size_t n = json_array_size(doc), i;
	json_t *val;
	int r;

	if ((kw = json_object_get(schema, "minItems")) && is_number(kw) && (double)n < json_number_value(kw))
		return fail(c, "%zu items, fewer than minItems %g", n, json_number_value(kw));
	if ((kw = json_object_get(schema, "maxItems")) && is_number(kw) && (double)n > json_number_value(kw))
		return fail(c, "%zu items, more than maxItems %g", n, json_number_value(kw));
	if (json_is_true(json_object_get(schema, "uniqueItems"))) {
		for (i = 0; i < n; i++)
			for (size_t j = i + 1; j < n; j++)
				if (jequal(json_array_get(doc, i), json_array_get(doc, j)))
					return fail(c, "items %zu and %zu are equal (uniqueItems)", i, j);
	}
	if (!items)
		return 0;
	if (!json_is_object(items) && !json_is_boolean(items) && !json_is_array(items))
		return schema_fail(c, "items must be a schema or an array of schemas");
	json_array_foreach(doc, i, val) {
		const json_t *sub = items;
		if (json_is_array(items)) {
			sub = json_array_get(items, i);
			if (!sub)
				break; /* beyond the tuple: additionalItems not supported, allowed */
		}
		size_t old = path_push_index(c, i);
		r = validate(c, sub, val);
		path_pop(c, old);
		if (r)
			return r;
	}
	return 0;
}

static int validate_number(struct vctx *c, const json_t *schema, const json_t *doc)
{
	double v = json_number_value(doc);
	const json_t *kw, *ex;

	if ((kw = json_object_get(schema, "minimum")) && is_number(kw)) {
		ex = json_object_get(schema, "exclusiveMinimum");
		if (json_is_true(ex) ? !(v > json_number_value(kw)) : v < json_number_value(kw))
			return fail(c, "%g is below the minimum %g%s", v, json_number_value(kw),
				    json_is_true(ex) ? " (exclusive)" : "");
	}
	if ((kw = json_object_get(schema, "maximum")) && is_number(kw)) {
		ex = json_object_get(schema, "exclusiveMaximum");
		if (json_is_true(ex) ? !(v < json_number_value(kw)) : v > json_number_value(kw))
			return fail(c, "%g is above the maximum %g%s", v, json_number_value(kw),
				    json_is_true(ex) ? " (exclusive)" : "");
	}
	if ((kw = json_object_get(schema, "exclusiveMinimum")) && is_number(kw) && !(v > json_number_value(kw)))
		return fail(c, "%g is not above the exclusive minimum %g", v, json_number_value(kw));
	if ((kw = json_object_get(schema, "exclusiveMaximum")) && is_number(kw) && !(v < json_number_value(kw)))
		return fail(c, "%g is not below the exclusive maximum %g", v, json_number_value(kw));
	if ((kw = json_object_get(schema, "multipleOf")) && is_number(kw)) {
		double m = json_number_value(kw);
		if (!(m > 0))
			return schema_fail(c, "multipleOf must be > 0");
		double q = v / m;
		if (!isfinite(q) || fabs(q - nearbyint(q)) > 1e-9 * fmax(1.0, fabs(q)))
			return fail(c, "%g is not a multiple of %g", v, m);
	}
	return 0;
}

static int validate_string(struct vctx *c, const json_t *schema, const json_t *doc)
{
	const char *s = json_string_value(doc);
	size_t len = utf8_length(s, json_string_length(doc));
	const json_t *kw;

	if ((kw = json_object_get(schema, "minLength")) && is_number(kw) && (double)len < json_number_value(kw))
		return fail(c, "string of length %zu is shorter than minLength %g", len, json_number_value(kw));
	if ((kw = json_object_get(schema, "maxLength")) && is_number(kw) && (double)len > json_number_value(kw))
		return fail(c, "string of length %zu is longer than maxLength %g", len, json_number_value(kw));
	if ((kw = json_object_get(schema, "pattern"))) {
		regex_t re;
		if (!json_is_string(kw))
			return schema_fail(c, "pattern must be a string");
		if (regcomp(&re, json_string_value(kw), REG_EXTENDED | REG_NOSUB))
			return schema_fail(c, "pattern \"%s\" is not a POSIX extended regex", json_string_value(kw));
		int m = regexec(&re, s, 0, NULL, 0);
		regfree(&re);
		if (m)
			return fail(c, "\"%.64s\" does not match pattern \"%s\"", s, json_string_value(kw));
	}
	return 0;
}

static int validate(struct vctx *c, const json_t *schema, const json_t *doc)
{
	const json_t *kw;
	int r = 0;

	if (json_is_true(schema))
		return 0;
	if (json_is_false(schema))
		return fail(c, "no value is allowed here (schema false)");
	if (!json_is_object(schema))
		return schema_fail(c, "a schema must be an object or a boolean");
	if (c->depth >= MAX_DEPTH)
		return schema_fail(c, "nesting deeper than %d ($ref loop?)", MAX_DEPTH);
	c->depth++;

	for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++)
		if (json_object_get(schema, unsupported[i])) {
			r = schema_fail(c, "keyword \"%s\" is not supported", unsupported[i]);
			goto out;
		}

	if (json_is_null(doc) && json_is_true(json_object_get(schema, "nullable")))
		goto out;

	if ((kw = json_object_get(schema, "$ref"))) {
		const json_t *target;
		if (!json_is_string(kw)) {
			r = schema_fail(c, "$ref must be a string");
			goto out;
		}
		target = resolve_ref(c->root, json_string_value(kw));
		if (!target) {
			r = schema_fail(c, "$ref \"%s\" does not resolve (only local refs are supported)",
					json_string_value(kw));
			goto out;
		}
		if ((r = validate(c, target, doc)))
			goto out;
	}

	if ((kw = json_object_get(schema, "type"))) {
		int ok = 0, known;
		if (json_is_string(kw)) {
			ok = type_matches(json_string_value(kw), doc, &known);
			if (!known) {
				r = schema_fail(c, "unknown type \"%s\"", json_string_value(kw));
				goto out;
			}
			if (!ok) {
				r = fail(c, "expected %s, got %s", json_string_value(kw), type_name(doc));
				c->msg_is_type = 1;
				goto out;
			}
		} else if (json_is_array(kw)) {
			size_t i;
			json_t *t;
			char names[160] = "";
			json_array_foreach(kw, i, t) {
				if (!json_is_string(t)) {
					r = schema_fail(c, "type must list strings");
					goto out;
				}
				ok |= type_matches(json_string_value(t), doc, &known);
				if (!known) {
					r = schema_fail(c, "unknown type \"%s\"", json_string_value(t));
					goto out;
				}
				size_t l = strlen(names);
				snprintf(names + l, sizeof names - l, "%s%s", i ? " or " : "", json_string_value(t));
			}
			if (!ok) {
				r = fail(c, "expected %s, got %s", names, type_name(doc));
				c->msg_is_type = 1;
				goto out;
			}
		} else {
			r = schema_fail(c, "type must be a string or an array");
			goto out;
		}
	}

	if ((kw = json_object_get(schema, "const")) && !jequal(kw, doc)) {
		char *want = json_dumps(kw, JSON_ENCODE_ANY | JSON_COMPACT);
		r = fail(c, "expected the constant %.80s", want ? want : "?");
		free(want);
		goto out;
	}
	if ((kw = json_object_get(schema, "enum"))) {
		size_t i;
		json_t *v;
		int found = 0;
		if (!json_is_array(kw)) {
			r = schema_fail(c, "enum must be an array");
			goto out;
		}
		json_array_foreach(kw, i, v)
			if (jequal(v, doc)) {
				found = 1;
				break;
			}
		if (!found) {
			char *want = json_dumps(kw, JSON_COMPACT);
			char *got = json_dumps(doc, JSON_ENCODE_ANY | JSON_COMPACT);
			r = fail(c, "%.60s is not one of %.120s", got ? got : "?", want ? want : "?");
			free(want);
			free(got);
			goto out;
		}
	}

	if (json_is_object(doc))
		r = validate_object(c, schema, doc);
	else if (json_is_array(doc))
		r = validate_array(c, schema, doc);
	else if (is_number(doc))
		r = validate_number(c, schema, doc);
	else if (json_is_string(doc))
		r = validate_string(c, schema, doc);
	if (r)
		goto out;

	if ((kw = json_object_get(schema, "allOf"))) {
		size_t i;
		json_t *sub;
		if (!json_is_array(kw)) {
			r = schema_fail(c, "allOf must be an array");
			goto out;
		}
		json_array_foreach(kw, i, sub)
			if ((r = validate(c, sub, doc)))
				goto out;
	}
	for (int k = 0; k < 2; k++) {
		const char *name = k ? "oneOf" : "anyOf";
		char best[sizeof c->msg];
		size_t best_plen;
		if (!(kw = json_object_get(schema, name)))
			continue;
		if (!json_is_array(kw) || json_array_size(kw) == 0) {
			r = schema_fail(c, "%s must be a non-empty array", name);
			goto out;
		}
		int m = count_branches(c, kw, doc, k ? 2 : 1, best, sizeof best, &best_plen);
		if (m < 0) {
			r = m;
			goto out;
		}
		if (m == 0) {
			if (best[0] && best_plen > c->plen)
				snprintf(c->msg, sizeof c->msg, "%s", best);
			else
				fail(c, "matches none of %s (closest: %s)", name, best);
			c->msg_plen = best_plen > c->plen ? best_plen : c->plen;
			c->msg_is_type = 0;
			r = -EINVAL;
			goto out;
		}
		if (k && m > 1) {
			r = fail(c, "matches more than one branch of oneOf");
			goto out;
		}
	}
	if ((kw = json_object_get(schema, "not"))) {
		struct vctx save = *c;
		int n = validate(c, kw, doc);
		if (n == -ENOTSUP) {
			r = n;
			goto out;
		}
		*c = save;
		if (n == 0) {
			r = fail(c, "must not match the \"not\" schema");
			goto out;
		}
	}
out:
	c->depth--;
	return r;
}

int ftjschema_validate(const json_t *schema, const json_t *doc, char *err, size_t errlen)
{
	static struct vctx zero;
	struct vctx *c;
	int r;

	if (err && errlen)
		err[0] = '\0';
	if (!schema || !doc) {
		if (err && errlen)
			snprintf(err, errlen, "schema: no schema or no document");
		return -EINVAL;
	}
	c = malloc(sizeof *c); /* keeps the stack of deep recursion small */
	if (!c)
		return -ENOMEM;
	*c = zero;
	c->root = schema;
	snprintf(c->path, sizeof c->path, "$");
	c->plen = 1;
	r = validate(c, schema, doc);
	if (r && err && errlen)
		snprintf(err, errlen, "%s", c->msg);
	free(c);
	return r;
}

static json_t *load(const char *path, char *err, size_t errlen, int *r)
{
	json_error_t je;
	json_t *j = json_load_file(path, JSON_DECODE_ANY, &je);
	if (!j) {
		FILE *f = fopen(path, "r");
		*r = f ? -EINVAL : -errno;
		if (f)
			fclose(f);
		if (err && errlen)
			snprintf(err, errlen, "%s: %s", path, f ? je.text : strerror(-*r));
	}
	return j;
}

int ftjschema_validate_files(const char *schema_path, const char *doc_path, char *err, size_t errlen)
{
	int r = 0;
	json_t *schema = NULL, *doc = NULL;
	if (!schema_path || !doc_path)
		return -EINVAL;
	if (!(schema = load(schema_path, err, errlen, &r)))
		goto out;
	if (!(doc = load(doc_path, err, errlen, &r)))
		goto out;
	r = ftjschema_validate(schema, doc, err, errlen);
out:
	json_decref(schema);
	json_decref(doc);
	return r;
}
