/* front: the one way connections come in. An acceptor thread keeps each new socket until its
 * request head has arrived, peeking at it without reading it (header-timeout, then 408), checks
 * the head (request line, header lines, Host, Content-Length, Transfer-Encoding: 400, 413, 431,
 * 501, 505, each a JSON error it writes itself), then hands the socket to a pool: /health and
 * /metrics to the reserve daemon, anything else to the main one, while it has room; else the
 * reserve answers 503, and when even that is full the front writes the 503 itself. So idle
 * sockets and slow senders never hold a thread, and a full pool never closes without an answer.
 *
 * Admission is counted here, never by asking libmicrohttpd: a pool's `held` counts the sockets
 * handed to it that it has not closed yet (ftd_front_closed, from its connection-closed
 * callback), and a socket is handed only while held < cap. libmicrohttpd's own limit is set above
 * cap and is never reached: 0.9.75 (Debian, Ubuntu) leaves its cleanup mutex locked when a
 * connection added with MHD_add_connection finds the daemon at that limit, after which the
 * daemon never frees a connection, never answers again and never stops (fixed upstream in
 * 67061d5c, v1.0.0; bench/mhd_limit_repro.c reproduces it). Every answer closes its connection
 * (Connection: close), so each request passes these checks and timeouts, not only a
 * connection's first, and pipelined requests after the first are refused cleanly. */
#ifndef FTD_FRONT_H
#define FTD_FRONT_H
#include <stdint.h>

struct MHD_Daemon;

/* A daemon the front hands sockets to. d and cap are set before ftd_front_start; the counters
 * are the front's (atomic). */
struct ftd_front_pool {
	struct MHD_Daemon *d;
	unsigned cap;
	unsigned held;          /* handed and not closed yet */
	uint64_t full_since_ns; /* CLOCK_MONOTONIC since when held has been at cap (0: not at cap) */
};

struct ftd_front;

/* Accept on listen_fd (borrowed; made non-blocking) and hand sockets to main and reserve
 * (borrowed; both must outlive the front). NULL after logging why. */
struct ftd_front *ftd_front_start(int listen_fd, struct ftd_front_pool *main, struct ftd_front_pool *reserve);
/* Stop the acceptor and close the sockets still waiting for their head (NULL ok). The pools'
 * daemons are the caller's to stop, after this. */
void ftd_front_stop(struct ftd_front *f);
/* Write a whole JSON error answer (Connection: close) to the socket fd and shut its sending side
 * (fd stays open): what the client had sent is read and dropped first, as closing with unread
 * data would reset the connection before the answer is read. code, field (NULL: null) and msg
 * are static text (nothing the client sent). For the front, and for a connection libmicrohttpd
 * holds where it cannot queue an answer (in the middle of a body). */
void ftd_front_write_error(int fd, unsigned status, const char *code, const char *field, const char *msg);
/* A socket handed to p was closed: its place comes back (any thread). */
void ftd_front_closed(struct ftd_front_pool *p);
/* Seconds p has been full without a place coming back (0: it has room). */
double ftd_front_full_s(const struct ftd_front_pool *p);
#endif
