/* jobargs: the `--key value` pairs after `ftbench submit KIND` turned into the typed JSON "args"
 * object of POST /benchmark/start. Prefix ftargs_. Library code: returns 0 or -errno, never logs;
 * on error a one-line message naming the option goes to err.
 *
 * Rules: every argument is `--key value`, `--key=value` or a bare `--key` (then true); dashes in
 * keys become underscores (`--cpu-iters` -> "cpu_iters"); a key given twice is an error. A key
 * with a hint gets the hinted type (the daemon's api/openapi.yaml types); any other value, and
 * a value that does not fit its hint, is typed by its look: true/false -> boolean, a decimal
 * integer -> integer, a decimal number with '.' or an exponent -> number, anything else
 * (including "bf16,nvfp4" and "007") -> string. The daemon validates the result and names the
 * field it rejects; this only shapes it, so a value never fails here for its type. */
#ifndef FT_UTIL_JOBARGS_H
#define FT_UTIL_JOBARGS_H
#include <jansson.h>
#include <stddef.h>

enum ftargs_type {
	FTARGS_AUTO = 0,
	FTARGS_STRING,
	FTARGS_INTEGER,
	FTARGS_NUMBER,
	FTARGS_BOOLEAN,     /* true/false, yes/no, on/off, 1/0 */
	FTARGS_INT_LIST,    /* "1,4,16" -> [1,4,16] */
	FTARGS_NUMBER_LIST, /* "0,0.25,1" -> [0,0.25,1] */
	FTARGS_STRING_LIST, /* "bf16,nvfp4" -> ["bf16","nvfp4"] */
};

/* A type hint: key spelled with underscores; a table ends with {NULL}. kind NULL matches every
 * kind. */
struct ftargs_hint {
	const char *kind;
	const char *key;
	enum ftargs_type type;
};

/* The job kinds' argument tables: one row per argument {name, type, worker flag, required}, one
 * table per kind. `ftbench submit` types its --key value pairs from them; the daemon validates a
 * job's args and builds the worker's argv from them (daemon/kinds.c) with the bounds, choices and
 * most items of each row's flag, read from the worker's option table (src/cli/flags.h) at build
 * time (daemon/jobflags.h): a bound is written once, in the flag's row. api/openapi.yaml is held
 * equal to both by tests/integration/flags_equal.sh (scripts/openapi-args.py). */
enum ftargs_spec_type {
	FTARGS_T_NAMES,   /* a name list: "a,b" or ["a","b"] -> --flag=a,b */
	FTARGS_T_INT,     /* integer in [lo, hi] */
	FTARGS_T_NUM,     /* number in [lo, hi] */
	FTARGS_T_BOOL,    /* true -> --flag */
	FTARGS_T_INTLIST, /* [int...] in [lo, hi] -> --flag=1,2 */
	FTARGS_T_NUMLIST, /* [num...] in [lo, hi] */
	FTARGS_T_ENUM,    /* one of choices */
	FTARGS_T_ENUMLIST,/* [choice...], lo..hi items when hi > 0 */
	FTARGS_T_PATH,    /* a path that must resolve under a model root */
	FTARGS_T_GPU,     /* index or uuid, resolved against the inventory */
	FTARGS_T_SERVER,  /* a decode-server name from the config -> --server-cmd=<template> */
	FTARGS_T_URL,     /* a well-formed http(s) URL allowed by decode-urls */
	FTARGS_T_COMPARE, /* decode comparisons: "KEY=V1,V2" or a list of them (1..max_items) ->
			   * one --flag=KEY=V1,V2 each; the named keys only (src/decode/compare.h) */
};

struct ftargs_spec {
	const char *name;
	enum ftargs_spec_type type;
	const char *flag;
	double lo, hi;       /* numbers and list items: from the flag's row (daemon/jobflags.h) */
	const char *choices; /* "a|b|c": from the flag's row, or here where it has none */
	int required;
	int max_items;       /* lists: most items (0: the flag's, else 64, or hi for FTARGS_T_ENUMLIST) */
};

/* The argument table of kind (ends with {NULL}), or NULL for an unknown kind. */
const struct ftargs_spec *ftargs_kind_spec(const char *kind);
/* The kinds with a table, in order ("bw", "cache-copy", "load-weights", "decode"), NULL-ended. */
extern const char *const ftargs_kind_names[];
/* How `ftbench submit` types a value of an argument of type t. */
enum ftargs_type ftargs_spec_cli_type(enum ftargs_spec_type t);

/* "--cpu-iters" -> "cpu_iters" into out. -EINVAL unless opt is "--" followed by a letter and
 * then letters, digits, '-' or '_'; -ENAMETOOLONG. */
int ftargs_key(const char *opt, char *out, size_t n);

/* The JSON value of s for type t (new reference in *out). -EINVAL when s does not fit t. */
int ftargs_value(const char *s, enum ftargs_type t, json_t **out);

/* The hinted type of key for kind in hints (may be NULL): FTARGS_AUTO when none. */
enum ftargs_type ftargs_hint_type(const struct ftargs_hint *hints, const char *kind, const char *key);

/* Add the pairs of argv[0..argc) to obj (borrowed, must be an object). Returns 0, -EINVAL
 * (not a --key: message in err), -EEXIST (a key given twice, or already in obj), -ENOMEM. */
int ftargs_to_json(int argc, char *const *argv, const char *kind, const struct ftargs_hint *hints,
		   json_t *obj, char *err, size_t n);
/* The same, typed by kind's argument table (ftargs_kind_spec; an unknown key by its look). */
int ftargs_kind_to_json(int argc, char *const *argv, const char *kind, json_t *obj, char *err, size_t n);
#endif
