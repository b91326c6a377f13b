/* http: the REST API on libmicrohttpd: the wire, auth (a bearer token compared in constant time),
 * the route table (each path to a handler of api.c, which knows no HTTP library) and the
 * responses (send_reply / respond_error are the only ways out); per-request state is freed in
 * the completion callback; libmicrohttpd's own messages go to the daemon's logger.
 *
 * Connections come in through the front (front.h: the acceptor, the head checks, the admission
 * count). /health and /metrics go to the reserve daemon (its own places, a thread each, answers
 * only those two), anything else to the main daemon (one thread per connection, so an SSE stream may
 * block waiting for the next event) while it has room (max-connections), else to the reserve,
 * which answers 503 with Retry-After; when even that is full the front writes the 503 itself.
 * Every answer closes its connection. A body is cut (408) when it goes silent for header-timeout
 * or falls below BODY_MIN_RATE after it. Event streams are capped (max-event-streams, then 503).
 * The reserve does not use epoll: with 0.9.75's epoll mode, 256 sockets added at once were left
 * unread until their connection timeout (seen under the burst test). */
#ifndef FTD_HTTP_H
#define FTD_HTTP_H

/* Serve the API on listen_fd (borrowed; made non-blocking): the acceptor thread and both
 * libmicrohttpd daemons. NULL after logging why. ftd_http_stop stops and frees it all (NULL ok). */
struct ftd_http;
struct ftd_http *ftd_http_start(int listen_fd);
void ftd_http_stop(struct ftd_http *h);
#endif
