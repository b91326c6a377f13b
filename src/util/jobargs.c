#include "util/jobargs.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "util/strutil.h"

#define MAX_LIST 4096

int ftargs_key(const char *opt, char *out, size_t n)
{
	if (!opt || strncmp(opt, "--", 2) || !isalpha((unsigned char)opt[2]))
		return -EINVAL;
	size_t o = 0;
	for (const char *p = opt + 2; *p; p++) {
		char ch = *p;
		if (!isalnum((unsigned char)ch) && ch != '-' && ch != '_')
			return -EINVAL;
		if (o + 2 > n)
			return -ENAMETOOLONG;
		out[o++] = ch == '-' ? '_' : ch;
	}
	out[o] = '\0';
	return 0;
}

/* A plain decimal integer: optional '-', digits, no leading zero unless it is "0". */
static int looks_integer(const char *s)
{
	const char *p = s + (*s == '-');
	if (!isdigit((unsigned char)*p))
		return 0;
	if (p[0] == '0' && p[1])
		return 0;
	for (; *p; p++)
		if (!isdigit((unsigned char)*p))
			return 0;
	return 1;
}

/* A plain decimal number with a '.' or an exponent ("0.25", "-1.5e3", "2e9"). */
static int looks_real(const char *s)
{
	int digits = 0, mark = 0;
	for (const char *p = s; *p; p++) {
		if (isdigit((unsigned char)*p))
			digits++;
		else if (*p == '.' || *p == 'e' || *p == 'E')
			mark = 1;
		else if (*p != '-' && *p != '+')
			return 0;
	}
	double d;
	return digits && mark && ftstr_parse_double(s, -DBL_MAX, DBL_MAX, &d) == 0;
}

static int parse_bool(const char *s, int *b)
{
	static const char *yes[] = {"true", "yes", "on", "1"}, *no[] = {"false", "no", "off", "0"};
	for (size_t i = 0; i < 4; i++) {
		if (!strcasecmp(s, yes[i])) {
			*b = 1;
			return 0;
		}
		if (!strcasecmp(s, no[i])) {
			*b = 0;
			return 0;
		}
	}
	return -EINVAL;
}

static int list_value(const char *s, enum ftargs_type item, json_t **out)
{
	char **v = NULL;
	int n = ftstr_split(s, &v, MAX_LIST);
	if (n < 0)
		return n;
	json_t *a = json_array();
	int r = a ? 0 : -ENOMEM;
	for (int i = 0; i < n && r == 0; i++) {
		json_t *e = NULL;
		r = ftargs_value(v[i], item, &e);
		if (r == 0 && json_array_append_new(a, e) < 0)
			r = -ENOMEM;
	}
	ftstr_free_list(v, n);
	if (r < 0) {
		json_decref(a);
		return r;
	}
	*out = a;
	return 0;
}

int ftargs_value(const char *s, enum ftargs_type t, json_t **out)
{
	long l;
	double d;
	int b;
	json_t *j = NULL;
	if (!s)
		return -EINVAL;
	switch (t) {
	case FTARGS_AUTO:
		if (!strcmp(s, "true") || !strcmp(s, "false"))
			j = json_boolean(s[0] == 't');
		else if (looks_integer(s) && ftstr_parse_long(s, LONG_MIN, LONG_MAX, &l) == 0)
			j = json_integer(l);
		else if (looks_real(s))
			j = json_real(strtod(s, NULL));
		else
			j = json_string(s);
		break;
	case FTARGS_STRING:
		j = json_string(s);
		break;
	case FTARGS_INTEGER:
		if (ftstr_parse_long(s, LONG_MIN, LONG_MAX, &l) < 0)
			return -EINVAL;
		j = json_integer(l);
		break;
	case FTARGS_NUMBER:
		if (ftstr_parse_long(s, LONG_MIN, LONG_MAX, &l) == 0)
			j = json_integer(l);
		else if (ftstr_parse_double(s, -DBL_MAX, DBL_MAX, &d) == 0 && looks_real(s))
			j = json_real(d);
		else
			return -EINVAL;
		break;
	case FTARGS_BOOLEAN:
		if (parse_bool(s, &b) < 0)
			return -EINVAL;
		j = json_boolean(b);
		break;
	case FTARGS_INT_LIST:
		return list_value(s, FTARGS_INTEGER, out);
	case FTARGS_NUMBER_LIST:
		return list_value(s, FTARGS_NUMBER, out);
	case FTARGS_STRING_LIST:
		return list_value(s, FTARGS_STRING, out);
	default:
		return -EINVAL;
	}
	if (!j)
		return -ENOMEM;
	*out = j;
	return 0;
}

enum ftargs_type ftargs_hint_type(const struct ftargs_hint *hints, const char *kind, const char *key)
{
	for (const struct ftargs_hint *h = hints; h && h->key; h++)
		if ((!h->kind || (kind && !strcmp(h->kind, kind))) && !strcmp(h->key, key))
			return h->type;
	return FTARGS_AUTO;
}

int ftargs_to_json(int argc, char *const *argv, const char *kind, const struct ftargs_hint *hints,
		   json_t *obj, char *err, size_t n)
{
	char key[128];
	if (!json_is_object(obj))
		return -EINVAL;
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i], *val = NULL;
		char opt[160];
		const char *eq = strchr(arg, '=');
		if (strncmp(arg, "--", 2) != 0) {
			snprintf(err, n, "unexpected '%s': job arguments are --key value pairs", arg);
			return -EINVAL;
		}
		if (eq) {
			size_t kl = (size_t)(eq - arg);
			if (kl >= sizeof opt) {
				snprintf(err, n, "option '%.40s...' is too long", arg);
				return -EINVAL;
			}
			memcpy(opt, arg, kl);
			opt[kl] = '\0';
			val = eq + 1;
		} else if (ftstr_copy(opt, sizeof opt, arg) < 0) {
			snprintf(err, n, "option '%.40s...' is too long", arg);
			return -EINVAL;
		}
		int r = ftargs_key(opt, key, sizeof key);
		if (r < 0) {
			snprintf(err, n, "'%s' is not a job option (--name with letters, digits, '-' or '_')", opt);
			return -EINVAL;
		}
		enum ftargs_type t = ftargs_hint_type(hints, kind, key);
		/* A value follows unless the next word is another option: "-1" is a value, "--x" is not. */
		if (!val && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
			val = argv[++i];
		if (json_object_get(obj, key)) {
			snprintf(err, n, "%s given twice", opt);
			return -EEXIST;
		}
		json_t *j = NULL;
		if (!val) {
			j = json_true(); /* a bare flag; the daemon rejects it where it wants a value */
		} else if ((r = ftargs_value(val, t, &j)) == -EINVAL) {
			r = ftargs_value(val, FTARGS_AUTO, &j); /* let the daemon name the bad field */
		}
		if (r < 0)
			return r;
		if (json_object_set_new(obj, key, j) < 0)
			return -ENOMEM;
	}
	return 0;
}
