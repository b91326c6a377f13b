/* replay_run: one format replayed the way `ftbench replay` and `bw`'s replay both run it. */
#ifndef FT_CLI_REPLAY_RUN_H
#define FT_CLI_REPLAY_RUN_H
#include <jansson.h>

#include "replay/replay.h"

/* Replay cfg's format. With probe_argv (--cpu-kernel CMD, split), the engine's layer steps come
 * first (ftprobe_engine_path, batch 1, 8 + 32 steps) and the hybrid modes are paced to them (a
 * note when the engine has no CPU path for the format: ours then runs at its own speed). The
 * GPU runner gets go (its cpu_pad_* and fetch_pad_* set here), or the test build's cost model
 * under fake GPUs. *blk: the format's replay block with its "cpu_path". Returns 0, or -errno
 * with err; *probe_failed says whether the probe (not the replay) failed. */
int ftcli_replay_format(const struct ftrp_config *cfg, struct ftrp_gpu_opts go, char *const *probe_argv,
			double probe_timeout, const struct ftreport *rep, json_t **blk, int *probe_failed, char *err,
			size_t errlen);
#endif
