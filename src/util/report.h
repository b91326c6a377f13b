/* report: how library code (benchmarks) tells its caller about progress and notes without
 * logging. The CLI implements it (terminal bar on stderr, JSON lines on --result-fd). */
#ifndef FT_UTIL_REPORT_H
#define FT_UTIL_REPORT_H

struct ftreport {
	/* done of total steps finished; label names the step ("ceilings", "dtype:bf16", ...). */
	void (*progress)(void *ctx, int done, int total, const char *label);
	/* A one-line note for the user (a fallback taken, a warning); msg is borrowed. */
	void (*note)(void *ctx, const char *msg);
	void *ctx;
};

static inline void ftreport_progress(const struct ftreport *r, int done, int total, const char *label)
{
	if (r && r->progress)
		r->progress(r->ctx, done, total, label);
}

static inline void ftreport_note(const struct ftreport *r, const char *msg)
{
	if (r && r->note)
		r->note(r->ctx, msg);
}
#endif
