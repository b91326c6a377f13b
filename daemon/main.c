/* ftbenchd: main loop. Signals arrive on a signalfd, HTTP threads wake the loop through an
 * eventfd; the loop starts jobs, reads their pipes, reaps them, enforces timeouts (runner.c),
 * pings the watchdog and, on SIGTERM, stops the workers and records them before it exits. The
 * only caller of sd_notify (READY, WATCHDOG, STATUS with the queue, STOPPING). */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <microhttpd.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <unistd.h>

#include "api.h"
#include "daemon.h"
#include "http.h"
#include "log.h"
#include "procs.h"
#include "profiles.h"
#include "rebench.h"
#include "runner.h"
#include "util/fsutil.h"
#include "util/timeutil.h"

/* STATUS= with the queue, when it changed since the last one. */
static void notify_status(void)
{
	static int last_q = -1, last_r = -1;
	int q = ftd_jobs_count(&ftd.jobs, FTD_JOB_QUEUED), r = ftd_jobs_count(&ftd.jobs, FTD_JOB_RUNNING);
	__atomic_store_n(&ftd.n_queued, q, __ATOMIC_RELAXED);
	__atomic_store_n(&ftd.n_running, r, __ATOMIC_RELAXED);
	if (q == last_q && r == last_r)
		return;
	last_q = q;
	last_r = r;
	sd_notifyf(0, "STATUS=%d queued, %d running", q, r);
}

static char *env_dir(const char *var, const char *suffix)
{
	const char *v = getenv(var);
	char *s;
	if (!v || !*v)
		return NULL;
	return asprintf(&s, "%s%s", v, suffix) < 0 ? NULL : s;
}

static char *home_dir(const char *suffix)
{
	const char *h = getenv("HOME");
	char *s;
	return asprintf(&s, "%s%s", h && *h ? h : "/tmp", suffix) < 0 ? NULL : s;
}

static int resolve_dirs(void)
{
	struct ftd_config *c = &ftd.cfg;
	if (*c->state_dir)
		ftd.state_dir = strdup(c->state_dir);
	else {
		const char *sd = getenv("STATE_DIRECTORY"); /* may list several, colon-separated */
		if (sd && *sd) {
			ftd.state_dir = strndup(sd, strcspn(sd, ":"));
		} else if (!(ftd.state_dir = env_dir("XDG_STATE_HOME", "/ftbenchd")))
			ftd.state_dir = home_dir("/.local/state/ftbenchd");
	}
	if (*c->profile_dir)
		ftd.profile_dir = strdup(c->profile_dir);
	else {
		const char *cd = getenv("CACHE_DIRECTORY");
		if (cd && *cd) {
			char *first = strndup(cd, strcspn(cd, ":"));
			if (first && asprintf(&ftd.profile_dir, "%s/benchbw", first) < 0)
				ftd.profile_dir = NULL;
			free(first);
		} else if (!(ftd.profile_dir = env_dir("XDG_CACHE_HOME", "/freetoken/benchbw")))
			ftd.profile_dir = home_dir("/.cache/freetoken/benchbw");
	}
	if (*c->worker) {
		ftd.worker = strdup(c->worker);
	} else {
		char self[PATH_MAX];
		ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
		if (n > 0) {
			self[n] = '\0';
			char dir[PATH_MAX];
			ftfs_dirname(self, dir, sizeof dir);
			if (asprintf(&ftd.worker, "%s/ftbench", dir) < 0)
				ftd.worker = NULL;
		}
	}
	if (!ftd.state_dir || !ftd.profile_dir || !ftd.worker)
		return -ENOMEM;
	if (asprintf(&ftd.jobs_dir, "%s/jobs", ftd.state_dir) < 0 || asprintf(&ftd.logs_dir, "%s/logs", ftd.state_dir) < 0 ||
	    asprintf(&ftd.ftw_dir, "%s/ftw", ftd.state_dir) < 0)
		return -ENOMEM;
	return 0;
}

/* Parse "IPV4:PORT" / "[IPV6]:PORT" / "HOST:PORT" into ss (localhost is 127.0.0.1, another host
 * name its first address). 0, -EINVAL (not that shape) or -EADDRNOTAVAIL (a name that does not
 * resolve; *why says why). */
static int parse_listen(const char *s, struct sockaddr_storage *ss, socklen_t *sl, const char **why)
{
	char host[128];
	const char *colon;
	memset(ss, 0, sizeof *ss);
	if (*s == '[') {
		const char *e = strchr(s, ']');
		if (!e || e[1] != ':' || (size_t)(e - s - 1) >= sizeof host)
			return -EINVAL;
		memcpy(host, s + 1, (size_t)(e - s - 1));
		host[e - s - 1] = '\0';
		colon = e + 1;
	} else {
		colon = strrchr(s, ':');
		if (!colon || (size_t)(colon - s) >= sizeof host)
			return -EINVAL;
		memcpy(host, s, (size_t)(colon - s));
		host[colon - s] = '\0';
	}
	char *end;
	long port = strtol(colon + 1, &end, 10);
	if (*end || port < 0 || port > 65535 || colon[1] == '\0')
		return -EINVAL;
	if (!strcmp(host, "localhost"))
		strcpy(host, "127.0.0.1");
	struct sockaddr_in *a4 = (struct sockaddr_in *)ss;
	struct sockaddr_in6 *a6 = (struct sockaddr_in6 *)ss;
	if (inet_pton(AF_INET, host, &a4->sin_addr) == 1) {
		a4->sin_family = AF_INET;
		a4->sin_port = htons((uint16_t)port);
		*sl = sizeof *a4;
	} else if (inet_pton(AF_INET6, host, &a6->sin6_addr) == 1) {
		a6->sin6_family = AF_INET6;
		a6->sin6_port = htons((uint16_t)port);
		*sl = sizeof *a6;
	} else {
		struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM}, *ai;
		int e;
		if (!*host || strchr(host, ':'))
			return -EINVAL;
		if ((e = getaddrinfo(host, NULL, &hints, &ai)) != 0) {
			*why = gai_strerror(e);
			return -EADDRNOTAVAIL;
		}
		memcpy(ss, ai->ai_addr, ai->ai_addrlen);
		*sl = ai->ai_addrlen;
		if (ss->ss_family == AF_INET)
			a4->sin_port = htons((uint16_t)port);
		else
			a6->sin6_port = htons((uint16_t)port);
		freeaddrinfo(ai);
	}
	return 0;
}

static int is_loopback(const struct sockaddr_storage *ss)
{
	if (ss->ss_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)ss)->sin_addr.s_addr) >> 24) == 127;
	if (ss->ss_family == AF_INET6)
		return IN6_IS_ADDR_LOOPBACK(&((const struct sockaddr_in6 *)ss)->sin6_addr);
	return 0;
}

static int open_listen(int *fd_out, int *activated)
{
	int n = sd_listen_fds(1);
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	if (n > 0) {
		int fd = SD_LISTEN_FDS_START;
		if (n > 1)
			ftd_log(FTD_LOG_WARNING, "socket activation passed %d sockets; using the first", n);
		if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0) {
			ftd_log(FTD_LOG_ERR, "socket activation: %s", strerror(errno));
			return -errno;
		}
		if (!is_loopback(&ss) && !ftd.cfg.token) {
			ftd_log(FTD_LOG_ERR, "the activated socket is not loopback: refusing to serve without token-file");
			return -EPERM;
		}
		fcntl(fd, F_SETFD, FD_CLOEXEC);
		*fd_out = fd;
		*activated = 1;
		ftd_log(FTD_LOG_INFO, "listening on the socket systemd passed");
		return 0;
	}
	*activated = 0;
	const char *why = NULL;
	int pr = parse_listen(ftd.cfg.listen, &ss, &sl, &why);
	if (pr < 0) {
		if (pr == -EADDRNOTAVAIL)
			ftd_log(FTD_LOG_ERR, "listen %s: the host name does not resolve: %s", ftd.cfg.listen, why);
		else
			ftd_log(FTD_LOG_ERR, "listen: cannot parse '%s' (IPV4:PORT, [IPV6]:PORT or HOST:PORT)",
				ftd.cfg.listen);
		return pr;
	}
	if (!is_loopback(&ss) && !ftd.cfg.token) {
		ftd_log(FTD_LOG_ERR, "listen %s is not loopback: refusing to start without token-file", ftd.cfg.listen);
		return -EPERM;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0)
		return -errno;
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind(fd, (struct sockaddr *)&ss, sl) < 0 || listen(fd, 512) < 0) {
		int e = errno;
		ftd_log(FTD_LOG_ERR, "listen %s: %s", ftd.cfg.listen, strerror(e));
		close(fd);
		return -e;
	}
	ftd_log(FTD_LOG_INFO, "listening on %s", ftd.cfg.listen);
	*fd_out = fd;
	return 0;
}

/* The temp files an interrupted write left in the profile history (<profile-dir>/history/<name>/). */
static void sweep_history(void)
{
	char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s/history", ftd.profile_dir);
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		struct stat st;
		char sub[PATH_MAX + 256];
		if (e->d_name[0] == '.' || fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0 ||
		    !S_ISDIR(st.st_mode))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", dir, e->d_name);
		int k = ftfs_sweep_temps(sub);
		if (k > 0)
			ftd_log(FTD_LOG_NOTICE, "removed %d stale temp file(s) from %s", k, sub);
	}
	closedir(d);
}

/* -n: would `listen` start? Resolve it and bind a socket to it (closed at once). An address in use
 * is only a warning (the running ftbenchd, or ftbenchd.socket, holds it; with socket activation
 * `listen` is not used); anything else is an error. 0 or -errno after printing the problem. */
static int check_listen(void)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	const char *why = NULL;
	int r = parse_listen(ftd.cfg.listen, &ss, &sl, &why);
	if (r == -EADDRNOTAVAIL) {
		fprintf(stderr, "ftbenchd: listen %s: the host name does not resolve: %s\n", ftd.cfg.listen, why);
		return r;
	}
	if (r < 0) {
		fprintf(stderr, "ftbenchd: listen: cannot parse '%s' (IPV4:PORT, [IPV6]:PORT or HOST:PORT)\n",
			ftd.cfg.listen);
		return r;
	}
	if (!is_loopback(&ss) && !ftd.cfg.token) {
		fprintf(stderr, "ftbenchd: listen %s is not loopback: refusing to start without token-file\n",
			ftd.cfg.listen);
		return -EPERM;
	}
	int fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
	if (fd < 0) {
		r = -errno;
		fprintf(stderr, "ftbenchd: listen %s: cannot make a socket: %s\n", ftd.cfg.listen, strerror(-r));
		return r;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	r = bind(fd, (struct sockaddr *)&ss, sl) < 0 ? -errno : 0;
	close(fd);
	if (r == -EADDRINUSE) {
		fprintf(stderr, "ftbenchd: warning: listen %s: in use now (by a running ftbenchd or ftbenchd.socket?); "
				"it must be free when ftbenchd starts without socket activation\n", ftd.cfg.listen);
		return 0;
	}
	if (r < 0) {
		fprintf(stderr, "ftbenchd: listen %s: cannot bind: %s%s\n", ftd.cfg.listen, strerror(-r),
			r == -EADDRNOTAVAIL ? " (not an address of this host)"
			: r == -EACCES      ? " (a port below 1024 needs CAP_NET_BIND_SERVICE)"
					    : "");
		return r;
	}
	return 0;
}

/* Enough descriptors for max-connections threads, the reserve daemon and the sockets that wait for
 * their request head: the soft limit is raised toward the hard one (never lowered). */
static void raise_nofile(void)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)ftd.cfg.max_connections + 4096;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max > want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		ftd_log(FTD_LOG_WARNING, "cannot raise the file descriptor limit: %s", strerror(errno));
}

static void release_all(void)
{
	ftd_runner_free_all();
	free(ftd.gpus);
	free(ftd.state_dir);
	free(ftd.jobs_dir);
	free(ftd.logs_dir);
	free(ftd.ftw_dir);
	free(ftd.profile_dir);
	free(ftd.worker);
	ftd_config_release(&ftd.cfg);
}

/* ftbenchd --dump-job-args: every kind's argument table as JSON on stdout (tests read it). */
static int dump_job_args(void)
{
	json_t *j = ftd_kinds_args_json();
	int ok = j && json_dumpf(j, stdout, JSON_INDENT(2)) == 0 && puts("") != EOF;
	json_decref(j);
	return ok ? 0 : 1;
}

/* The shared state's clocks, lock and condition, and the state directories: 0, or -1 logged. */
static int init_state(void)
{
	raise_nofile();
	ftd.main_pid = getpid();
	ftd.start_wall = fttime_wall_epoch();
	ftd.start_ns = fttime_now_ns();
	pthread_mutex_init(&ftd.lock, NULL);
	pthread_condattr_t ca;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC); /* the streams' waits (api.c) */
	pthread_cond_init(&ftd.cond, &ca);
	ftd.jobs.cond = &ftd.cond;
	int e;
	if ((e = ftfs_mkdir_p(ftd.jobs_dir, 0750)) < 0 || (e = ftfs_mkdir_p(ftd.logs_dir, 0750)) < 0 ||
	    (e = ftfs_mkdir_p(ftd.ftw_dir, 0750)) < 0) {
		ftd_log(FTD_LOG_ERR, "state directory %s: %s", ftd.state_dir, strerror(-e));
		return -1;
	}
	if (access(ftd.worker, X_OK) < 0)
		ftd_log(FTD_LOG_WARNING, "worker %s: %s (jobs will fail until it exists)", ftd.worker, strerror(errno));
	return 0;
}

/* Signals blocked here (so every thread inherits the mask) and read from a signalfd (*sfd); the
 * wake eventfd: 0, or -1 logged. */
static int init_signals(int *sfd)
{
	sigset_t mask;
	sigemptyset(&mask);
	sigaddset(&mask, SIGTERM);
	sigaddset(&mask, SIGINT);
	sigaddset(&mask, SIGCHLD);
	sigaddset(&mask, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &mask, NULL);
	signal(SIGPIPE, SIG_IGN);
	signal(SIGXFSZ, SIG_IGN); /* a file-size limit is a write error (EFBIG), as a full disk is */
	*sfd = signalfd(-1, &mask, SFD_CLOEXEC | SFD_NONBLOCK);
	ftd.wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (*sfd < 0 || ftd.wake_fd < 0) {
		ftd_log(FTD_LOG_ERR, "signalfd/eventfd: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* What a previous run left: temp files of atomic writes a kill -9 interrupted (journal, profiles,
 * records), the processes of its jobs, the journal (its jobs; rebench after it); the inventory
 * and the NFD file. 0, or -1 logged (the journal cannot be read). */
static int load_state(void)
{
	const char *swept[] = {ftd.jobs_dir, ftd.logs_dir, ftd.profile_dir, NULL};
	for (const char **dir = swept; *dir; dir++) {
		int k = ftfs_sweep_temps(*dir);
		if (k > 0)
			ftd_log(FTD_LOG_NOTICE, "removed %d stale temp file(s) from %s", k, *dir);
	}
	char *rundir;
	if (asprintf(&rundir, "%s/run", ftd.state_dir) >= 0) {
		ftfs_sweep_temps(rundir);
		free(rundir);
	}
	sweep_history();
	pthread_mutex_lock(&ftd.lock);
	ftd_procs_recover();
	pthread_mutex_unlock(&ftd.lock);
	ftd_runner_inventory();
	int r = ftd_profiles_nfd_start();
	if (r < 0)
		ftd_log(FTD_LOG_WARNING, "nfd-features-file %s: %s", ftd.cfg.nfd_file, strerror(-r));
	pthread_mutex_lock(&ftd.lock);
	r = ftd_runner_load();
	if (r == 0)
		ftd_rebench();
	pthread_mutex_unlock(&ftd.lock);
	if (r < 0) {
		ftd_log(FTD_LOG_ERR, "journal %s: %s", ftd.jobs_dir, strerror(-r));
		return -1;
	}
	return 0;
}

/* The main loop's own state: the poll set (grown with the running jobs) and the timers. */
struct loop {
	int sfd;
	struct pollfd *pfd;
	struct ftd_job **owner;
	int pcap, npfd;
	int stop_logged;
	int wd;                          /* the systemd watchdog is on */
	uint64_t wd_usec, wd_next, retention_next;
};

/* One turn's work under ftd.lock: reap, track, time, finish, retain, schedule; then the poll set
 * and its timeout (ms, -1: none) for this turn. 1 when the daemon is done (stopping and idle),
 * -1 out of memory (logged), else 0. */
static int loop_turn(struct loop *l, uint64_t now, int *tmo)
{
	ftd_runner_reap();
	ftd_procs_track();
	ftd_runner_timers();
	ftd_runner_finish_ready();
	int settle_ms = ftd_runner_settle();
	if (now >= l->retention_next || ftd_runner_over_count()) {
		ftd_runner_retention();
		l->retention_next = now + 60ull * 1000000000ull;
	}
	ftd_runner_sched();
	notify_status();
	int done = ftd.stopping && ftd_runner_busy() == 0;
	int need = 2 + ftd_runner_npollfds();
	if (need > l->pcap) {
		/* no fixed limit: the arrays grow with the running jobs (max-running caps them) */
		struct pollfd *np = realloc(l->pfd, sizeof *l->pfd * (size_t)need * 2);
		struct ftd_job **no = np ? realloc(l->owner, sizeof *l->owner * (size_t)need * 2) : NULL;
		if (np)
			l->pfd = np;
		if (no) {
			l->owner = no;
			l->pcap = need * 2;
		}
	}
	if (!l->pfd || !l->owner) {
		ftd_log(FTD_LOG_ERR, "out of memory for the poll set");
		return -1;
	}
	l->pfd[0] = (struct pollfd){.fd = l->sfd, .events = POLLIN};
	l->pfd[1] = (struct pollfd){.fd = ftd.wake_fd, .events = POLLIN};
	l->npfd = 2 + ftd_runner_pollfds(l->pfd + 2, l->owner + 2, l->pcap - 2);
	*tmo = ftd_runner_timers(); /* the scheduler may have started jobs */
	if (settle_ms >= 0 && (*tmo < 0 || settle_ms < *tmo))
		*tmo = settle_ms;
	return done;
}

/* SIGTERM or SIGINT: stop (running jobs are terminated, the loop ends when they are gone). */
static void on_signals(struct loop *l)
{
	struct signalfd_siginfo si;
	while (read(l->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
		if (si.ssi_signo != SIGTERM && si.ssi_signo != SIGINT)
			continue;
		pthread_mutex_lock(&ftd.lock);
		__atomic_store_n(&ftd.stopping, 1, __ATOMIC_RELEASE);
		pthread_cond_broadcast(&ftd.cond);
		pthread_mutex_unlock(&ftd.lock);
		if (!l->stop_logged) {
			sd_notify(0, "STOPPING=1\nSTATUS=stopping: terminating running jobs");
			ftd_log(FTD_LOG_NOTICE, "stopping (signal %u)", si.ssi_signo);
			l->stop_logged = 1;
		}
	}
}

/* Until stopped and idle: the jobs' life, the signals, the wake-ups, the watchdog. */
static void run_loop(struct loop *l)
{
	for (;;) {
		if (!ftd.stopping && ftd_rebench_firstboot_waiting())
			ftd_rebench_firstboot_poll(); /* takes ftd.lock itself: runs a worker first */
		uint64_t now = fttime_now_ns();
		int tmo;
		pthread_mutex_lock(&ftd.lock);
		int done = loop_turn(l, now, &tmo);
		pthread_mutex_unlock(&ftd.lock);
		if (done)
			break;
		if (l->wd) {
			if (now >= l->wd_next) {
				sd_notify(0, "WATCHDOG=1");
				l->wd_next = now + l->wd_usec * 1000 / 2;
			}
			int wms = (int)((l->wd_next - now) / 1000000) + 1;
			if (tmo < 0 || wms < tmo)
				tmo = wms;
		}
		if (tmo < 0 || tmo > 60000)
			tmo = 60000;
		if (ftd_rebench_firstboot_waiting() && tmo > 1000)
			tmo = 1000; /* the first-boot poll runs at its own pace (FIRSTBOOT_POLL_S) */
		int pr = poll(l->pfd, (nfds_t)l->npfd, tmo);
		if (pr < 0 && errno != EINTR) {
			ftd_log(FTD_LOG_ERR, "poll: %s", strerror(errno));
			break;
		}
		if (pr <= 0)
			continue;
		if (l->pfd[0].revents)
			on_signals(l);
		if (l->pfd[1].revents) {
			uint64_t v;
			while (read(ftd.wake_fd, &v, sizeof v) == (ssize_t)sizeof v)
				;
		}
		pthread_mutex_lock(&ftd.lock);
		for (int i = 2; i < l->npfd; i++)
			if (l->pfd[i].revents)
				ftd_runner_io(l->owner[i], l->pfd[i].fd, l->pfd[i].revents);
		pthread_mutex_unlock(&ftd.lock);
	}
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strcmp(argv[1], "--dump-job-args"))
		return dump_job_args();
	int r = ftd_config_load(&ftd.cfg, argc, argv);
	if (r == 1) {
		ftd_config_release(&ftd.cfg);
		return 0;
	}
	if (r < 0 || ftd_config_check(&ftd.cfg) < 0 || resolve_dirs() < 0) {
		release_all();
		return 2;
	}
	ftd_log_set_level((int)ftd.cfg.log_level);
	if (ftd.cfg.check_only) {
		if (check_listen() < 0) {
			release_all();
			return 2;
		}
		printf("ftbenchd: configuration ok (listen %s, state %s, profiles %s, worker %s)\n", ftd.cfg.listen,
		       ftd.state_dir, ftd.profile_dir, ftd.worker);
		release_all();
		return 0;
	}
	ftd.wake_fd = -1;
	struct loop l = {.sfd = -1};
	int e;
	if (init_state() < 0 || init_signals(&l.sfd) < 0) {
		release_all();
		return 1;
	}
	if ((e = ftd_procs_init()) < 0) {
		ftd_log(FTD_LOG_ERR, "cannot become the subreaper of the jobs: %s", strerror(-e));
		release_all();
		return 1;
	}
	/* listening first: until the journal is loaded, /health answers 503 "starting" and the API
	 * 503 (ftd.ready), instead of connections waiting in the backlog */
	int lfd = -1, activated = 0;
	if (open_listen(&lfd, &activated) < 0) {
		release_all();
		return 1;
	}
	struct ftd_http *http = ftd_http_start(lfd);
	if (!http) {
		ftd_log(FTD_LOG_ERR, "cannot start the HTTP server");
		close(lfd);
		release_all();
		return 1;
	}
	if (load_state() < 0) {
		ftd_http_stop(http);
		close(lfd);
		release_all();
		return 1;
	}
	pthread_mutex_lock(&ftd.lock);
	notify_status();
	pthread_mutex_unlock(&ftd.lock);
	__atomic_store_n(&ftd.ready, 1, __ATOMIC_RELEASE);

	l.wd = sd_watchdog_enabled(0, &l.wd_usec) > 0 && l.wd_usec > 0;
	sd_notifyf(0, "READY=1\nMAINPID=%d", (int)getpid());
	notify_status();
	run_loop(&l);

	free(l.pfd);
	free(l.owner);
	if (!l.stop_logged)
		sd_notify(0, "STOPPING=1");
	ftd_http_stop(http);
	close(lfd);
	close(l.sfd);
	close(ftd.wake_fd);
	ftd_log(FTD_LOG_NOTICE, "stopped");
	release_all();
	pthread_cond_destroy(&ftd.cond);
	pthread_mutex_destroy(&ftd.lock);
	return 0;
}
