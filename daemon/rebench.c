/* rebench: see rebench.h. */
#include "rebench.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "api.h"
#include "daemon.h"
#include "ftprofile.h"
#include "log.h"
#include "profiles.h"
#include "sched.h"
#include "util/fsutil.h"
#include "util/strutil.h"
#include "util/timeutil.h"
#include "worker.h"

/* A bw job for gpu (NULL: the host) queued or running already? */
static int bw_pending(const char *uuid)
{
	for (struct ftd_job *j = ftd.jobs.head; j; j = j->next)
		if (!ftd_job_final(j->state) && j->kind && !strcmp(j->kind, "bw") &&
		    (uuid ? !strcmp(j->gpu_uuid, uuid) : j->gpu_index < 0))
			return 1;
	return 0;
}

/* Queue a bw job for uuid (NULL: the host) because of why; 0 or -1 (logged). */
static int rebench_queue(const char *uuid, const char *why)
{
	json_t *args = uuid ? json_pack("{s:s}", "gpu", uuid) : json_object();
	json_t *req = json_pack("{s:s,s:O}", "kind", "bw", "args", args);
	char *canon = json_dumps(req, JSON_COMPACT | JSON_SORT_KEYS);
	struct ftd_job *j;
	struct ftd_err err;
	int replayed, r = 0;
	if (ftd_api_submit("bw", args, 0, NULL, canon, &j, &replayed, &err) == 0) {
		ftd_log(FTD_LOG_NOTICE, "rebench: %s %s: queued bw job %s", uuid ? uuid : "host", why, j->id);
	} else {
		ftd_log(FTD_LOG_WARNING, "rebench: %s %s but a bw job could not be queued: %s", uuid ? uuid : "host",
			why, err.message);
		r = -1;
	}
	free(canon);
	json_decref(req);
	json_decref(args);
	return r;
}

/* ---- first boot: a GPU without a valid profile is measured once, when no process holds it */

#define FIRSTBOOT_POLL_S 5 /* how often the GPUs' holders are looked at while one waits */

static char firstboot[FTD_SCHED_MAX_GPUS + 1][64]; /* uuids waiting ("" = the GPU-less host) */
static int nfirstboot;
static uint64_t firstboot_next;

/* <state>/firstboot/<uuid|host>: this GPU's first-boot measurement was queued once already. */
static int firstboot_marker(const char *uuid, char *path, size_t n)
{
	int k = snprintf(path, n, "%s/firstboot/%s", ftd.state_dir, uuid && *uuid ? uuid : "host");
	return k < 0 || (size_t)k >= n ? -ENAMETOOLONG : 0;
}

/* Queue it (ftd.lock held) and leave the marker, so it is done once whatever the job's outcome. */
static void firstboot_queue(const char *uuid, const char *how)
{
	char path[4096], why[256];
	snprintf(why, sizeof why, "has no valid profile (first boot; %s)", how);
	if (bw_pending(uuid && *uuid ? uuid : NULL) || rebench_queue(uuid && *uuid ? uuid : NULL, why) < 0)
		return;
	char dir[4096];
	if (firstboot_marker(uuid, path, sizeof path) == 0) {
		ftfs_dirname(path, dir, sizeof dir);
		int r = ftfs_mkdir_p(dir, 0750);
		if (r == 0)
			r = ftfs_write_atomic(path, "queued\n", 7, 0640);
		if (r < 0)
			ftd_log(FTD_LOG_WARNING, "first boot: %s: %s (the measurement may be queued again at the next start)",
				path, strerror(-r));
	}
}

int ftd_rebench_firstboot_waiting(void)
{
	return nfirstboot;
}

void ftd_rebench_firstboot_poll(void)
{
	uint64_t now = fttime_now_ns();
	if (nfirstboot == 0 || now < firstboot_next)
		return;
	firstboot_next = now + FIRSTBOOT_POLL_S * 1000000000ull;
	/* the worker asks the driver (NVML) who holds each GPU: the daemon itself stays CUDA-free */
	char *argv[] = {ftd.worker, "gpus", "--json", "--processes", NULL};
	char *out = NULL, why[256] = "";
	size_t len;
	int st = 0, timed_out = 0;
	json_t *o = NULL;
	if (ftd_worker_capture(argv, ftd.cfg.gpus_timeout, 1 << 20, &out, &len, &st, &timed_out, why, sizeof why) == 0) {
		o = json_loads(out, 0, NULL);
		free(out);
	}
	pthread_mutex_lock(&ftd.lock);
	for (int i = 0; i < nfirstboot;) {
		json_t *g = NULL, *e;
		size_t k;
		json_array_foreach(json_object_get(o, "gpus"), k, e)
			if (json_is_string(json_object_get(e, "uuid")) &&
			    !strcmp(json_string_value(json_object_get(e, "uuid")), firstboot[i]))
				g = e;
		json_t *np = json_object_get(g, "processes");
		if (json_is_integer(np) && json_integer_value(np) > 0) {
			i++; /* busy: look again later */
			continue;
		}
		const char *how = json_is_integer(np) ? "no process holds the GPU"
			: "who holds the GPU is unknown (no NVML), the daemon's queue alone decides";
		firstboot_queue(firstboot[i], how);
		memmove(firstboot[i], firstboot[i + 1], sizeof firstboot[0] * (size_t)(nfirstboot - i - 1));
		nfirstboot--;
	}
	pthread_mutex_unlock(&ftd.lock);
	json_decref(o);
}

static void rebench_one(const char *uuid, const char *bus, long interval)
{
	char path[4096], why[512] = "";
	if (ftprof_store_file(ftd.profile_dir, uuid, path, sizeof path) < 0)
		return;
	json_t *p = ftd_profiles_load(path);
	if (!json_is_object(p) || json_is_false(json_object_get(p, "valid"))) {
		/* no valid profile: a first boot (or a store that lost it), measured once when idle */
		json_decref(p);
		char marker[4096];
		if (firstboot_marker(uuid, marker, sizeof marker) < 0 || access(marker, F_OK) == 0) {
			ftd_log(FTD_LOG_INFO, "rebench: %s has no valid profile; its first-boot measurement was queued "
				"once already (%s): not again", uuid ? uuid : "host", marker);
			return;
		}
		if (!uuid) {
			firstboot_queue(NULL, "no GPU to wait for");
		} else if (nfirstboot < (int)(sizeof firstboot / sizeof *firstboot)) {
			snprintf(firstboot[nfirstboot++], sizeof firstboot[0], "%s", uuid);
			firstboot_next = 0;
			ftd_log(FTD_LOG_NOTICE, "rebench: %s has no valid profile: a bw job is queued once no process "
				"holds the GPU", uuid);
		}
		return;
	}
	json_t *now = ftprof_fingerprint_at(NULL, bus);
	int stale = now ? ftprof_fingerprint_compare(json_object_get(p, "fingerprint"), now, why, sizeof why) : 0;
	json_decref(now);
	json_t *ep = json_object_get(p, "epoch");
	double age = json_is_number(ep) ? fttime_wall_epoch() - json_number_value(ep) : 0;
	json_decref(p);
	if (stale != 1 && interval > 0 && age > (double)interval) {
		snprintf(why, sizeof why, "measured %.1f days ago, rebench every %.1f days", age / 86400,
			 (double)interval / 86400);
		stale = 1;
	}
	if (stale != 1 || bw_pending(uuid))
		return;
	char said[600];
	snprintf(said, sizeof said, "has a stale profile (%s)", why);
	rebench_queue(uuid, said);
}

void ftd_rebench(void)
{
	long interval = ftd_config_rebench_s(ftd.cfg.rebench);
	if (interval < 0)
		return;
	if (ftd.ngpus == 0)
		rebench_one(NULL, NULL, interval);
	for (int i = 0; i < ftd.ngpus; i++)
		rebench_one(ftd.gpus[i].uuid, ftd.gpus[i].pci_bus_id, interval);
}

