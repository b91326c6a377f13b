/* http: the REST API on libmicrohttpd: the wire, auth (a bearer token compared in constant time),
 * the route table (each path to a handler of api.c, which knows no HTTP library) and the
 * responses (send_reply / respond_error are the only ways out); per-request state is freed in
 * the completion callback; libmicrohttpd's own messages go to the daemon's logger.
 *
 * Connections come in through one acceptor thread (the front) that keeps each new socket until its
 * request head has arrived, peeking at it without reading it (header-timeout, then 408): so idle
 * sockets and slow senders never hold a thread. Then /health and /metrics go to the reserve daemon
 * (one event-driven thread that answers only those two and closes after each), anything else to the
 * main daemon (one thread per connection, so an SSE stream may block waiting for the next event) while
 * it has room (max-connections), else to the reserve, which answers 503 with Retry-After; when even
 * that is full the front writes the 503 itself. Liveness probes are answered under any load and a
 * full daemon never just closes. Event streams are capped (max-event-streams, then 503). */
#ifndef FTD_HTTP_H
#define FTD_HTTP_H

/* Serve the API on listen_fd (borrowed; made non-blocking): the acceptor thread and both
 * libmicrohttpd daemons. NULL after logging why. ftd_http_stop stops and frees it all (NULL ok). */
struct ftd_http;
struct ftd_http *ftd_http_start(int listen_fd);
void ftd_http_stop(struct ftd_http *h);
#endif
