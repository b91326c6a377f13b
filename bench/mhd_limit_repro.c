/* mhd_limit_repro: the libmicrohttpd bug behind the wedged-daemon finding, reduced.
 *
 * A daemon with its own polling thread and no listening socket (the shape ftbenchd's front
 * feeds) and a connection limit of 2 is given a burst of 64 sockets with MHD_add_connection.
 * Its own test lets through more than the limit; the extra ones find the daemon at its limit when
 * the daemon thread processes them: 0.9.75's
 * new_connection_process_() logs "Server reached connection limit" and returns without unlocking
 * cleanup_connection_mutex (fixed upstream by 67061d5c, "process new connection: fixed missing
 * mutex unlock in error handling path", in v1.0.0). From then on the first connection's thread
 * blocks when it ends, nothing is freed, and MHD_stop_daemon never returns.
 *
 * Prints the library's version and "wedged" (exit 1) when MHD_stop_daemon has not returned
 * 3 s after the first client left, "ok" (exit 0) when it did. ftbenchd never lets
 * libmicrohttpd's own limit be reached (daemon/front.h), so it does not depend on the fix. */
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *upload, size_t *upload_size, void **con_cls)
{
	(void)cls, (void)c, (void)url, (void)method, (void)version, (void)upload, (void)upload_size, (void)con_cls;
	return MHD_NO;
}

#define BURST 64
#define LIMIT 2u

static int refused; /* "Failed to start serving new connection": the daemon thread's refusals */

static void logger(void *cls, const char *fmt, va_list ap)
{
	(void)cls;
	(void)ap;
	if (strstr(fmt, "Failed to start serving"))
		__atomic_add_fetch(&refused, 1, __ATOMIC_RELAXED);
}

static volatile int stopped;

static void *stopper(void *d)
{
	MHD_stop_daemon(d);
	stopped = 1;
	return NULL;
}

/* One socket pair: the daemon gets [1], the "client" keeps [0]. */
static int add(struct MHD_Daemon *d, int *client)
{
	int sv[2];
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return -1;
	*client = sv[0];
	return MHD_add_connection(d, sv[1], (struct sockaddr *)&a, sizeof a) == MHD_YES ? 0 : -1;
}

int main(void)
{
	printf("libmicrohttpd %s\n", MHD_get_version());
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ITC |
			MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG,
		0, NULL, NULL, on_request, NULL, MHD_OPTION_EXTERNAL_LOGGER, logger, NULL, MHD_OPTION_CONNECTION_LIMIT, LIMIT,
		MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "mhd_limit_repro: cannot start a daemon\n");
		return 2;
	}
	/* a burst: MHD_add_connection's own test (unlocked, before the daemon thread has taken the
	 * earlier ones) lets several through; the daemon thread's firm test refuses the extra ones */
	int c[BURST], yes = 0;
	for (int i = 0; i < BURST; i++)
		yes += add(d, &c[i]) == 0;
	usleep(300 * 1000);
	printf("%d connections, limit %u: MHD_add_connection said yes to %d, the daemon thread refused %d\n", BURST,
	       LIMIT, yes, refused);
	for (int i = 0; i < BURST; i++)
		close(c[i]); /* the clients leave: the threads end and must give their places back */
	pthread_t t;
	pthread_create(&t, NULL, stopper, d);
	for (int i = 0; i < 30 && !stopped; i++)
		usleep(100 * 1000);
	puts(stopped ? "ok: MHD_stop_daemon returned" : "wedged: MHD_stop_daemon has not returned after 3 s");
	fflush(stdout);
	_exit(stopped ? 0 : 1); /* the daemon's threads may be stuck: no clean-up */
}
