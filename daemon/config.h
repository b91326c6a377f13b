/* config: every daemon option, defined once in a table (name, type, bounds, default, help).
 * The same table parses the config file (`key = value`, `#` comments), parses the flags
 * (`--key value` / `--key=value`, flags win over the file), prints --help and prints a
 * commented etc/ftbenchd.conf (--dump-config). */
#ifndef FTD_CONFIG_H
#define FTD_CONFIG_H
#include <stdio.h>

struct ftd_config {
	char *listen;            /* "127.0.0.1:8377" */
	char *state_dir;         /* "" -> $STATE_DIRECTORY, $XDG_STATE_HOME/ftbenchd, ~/.local/state/ftbenchd */
	char *profile_dir;       /* "" -> $CACHE_DIRECTORY/benchbw, $XDG_CACHE_HOME/freetoken/benchbw, ... */
	char *token_file;        /* "" none */
	char *worker;            /* "" -> ftbench beside ftbenchd */
	char *deployment;        /* "" (the worker's default), "isolated" or "concurrent": bw jobs */
	long max_queue, max_connections, max_body, job_timeout, max_job_timeout, kill_grace;
	long log_max, retain_jobs, retain_age, max_result_line, gpus_timeout, log_level;
	long max_event_streams, header_timeout;
	long bw_legacy_copy;     /* 0: a bw job never writes the legacy single file */
	long history, drift_pct; /* profiles kept per GPU; drift share in percent */
	char *nfd_file;          /* node-feature-discovery feature file, "" = none */
	char *rebench;           /* "on-change", "never" or an interval */
	char **model_roots;      /* realpath'd by ftd_config_check */
	int n_model_roots;
	char **decode_servers;   /* "name=command template" */
	int n_decode_servers;
	char **decode_urls;      /* the URLs decode jobs may use (prefixes ending at a '/') */
	int n_decode_urls;
	long max_running;        /* 0 in the file: online cores (ftd_config_check) */
	/* derived by ftd_config_check */
	char *token;             /* contents of token_file, trimmed; NULL when none */
	int check_only;          /* -n */
};

/* Parse argv (and the config file it names with -c/--config, default /etc/ftbenchd.conf when it
 * exists) into cfg. Returns 0, 1 when --help/--version/--dump-config printed and the caller
 * should exit 0, or -EINVAL after printing the problem on stderr. */
int ftd_config_load(struct ftd_config *cfg, int argc, char **argv);

/* Validate what parsing cannot: read the token file, realpath the model roots, resolve the
 * directories, refuse a non-loopback listen address without a token. 0 or -errno after
 * printing the problem on stderr. */
int ftd_config_check(struct ftd_config *cfg);

/* Config rebench in seconds: -1 never, 0 on-change, > 0 the interval; -2 not valid. */
long ftd_config_rebench_s(const char *v);

#define FTD_CONFIG_SERVER_NAME_MAX 64
#define FTD_CONFIG_URL_MAX 2048

/* 0 when the first len bytes of s are a decode-server name: 1 to FTD_CONFIG_SERVER_NAME_MAX of
 * A-Z a-z 0-9 _ . -; else -EINVAL. */
int ftd_config_server_name_len(const char *s, size_t len);

/* The command template of decode server `name` (exact match on a valid name), or NULL
 * (borrowed). */
const char *ftd_config_decode_server(const struct ftd_config *cfg, const char *name);

/* 0 when url is a well-formed http(s) URL (scheme, host name or [IPv6], optional port 1-65535,
 * path/query of RFC 3986 characters; no user info, fragment, space, control or non-ASCII byte,
 * at most FTD_CONFIG_URL_MAX bytes); else -EINVAL with the reason in why. */
int ftd_config_url_check(const char *url, char *why, size_t n);

/* url (well-formed, see ftd_config_url_check) in its normal form into out (n bytes): host in
 * lower case, the path's unreserved characters percent-decoded and its dot segments removed
 * (RFC 3986 6.2.2); an encoded '/', '\\' or NUL is refused. 0, or -EINVAL / -ENOMEM with why. */
int ftd_config_url_normalize(const char *url, char *out, size_t n, char *why, size_t wn);
/* 1 when url, normalised, equals a normalised decode-urls entry or extends one after a '/' (or
 * with a query), else 0: "http://h/v1/../admin" is not under "http://h/v1". */
int ftd_config_url_allowed(const struct ftd_config *cfg, const char *url);

/* Write the commented config file (every option with its default) to f. */
void ftd_config_dump(FILE *f);

void ftd_config_release(struct ftd_config *cfg);
#endif
