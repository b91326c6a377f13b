/* rebench: the bw jobs the daemon queues itself, through the API's submit (api.h): at start for
 * each GPU whose stored profile is stale or too old, and once for a GPU with no valid profile
 * (first boot) when no process holds it. */
#ifndef FTD_REBENCH_H
#define FTD_REBENCH_H
/* Config rebench: queue a bw job for each GPU (the host without GPUs) whose stored profile is
 * stale (fingerprint) or, with an interval, older than it. A GPU with no valid profile (first
 * boot) is measured once: it waits until no process holds it (ftd_rebench_firstboot_poll), and
 * <state>/firstboot/<uuid> then records that it was queued, so a failed measurement is not
 * repeated at every start. With ftd.lock held, after the journal. */
void ftd_rebench(void);
/* GPUs whose first-boot measurement waits for them to be idle. */
int ftd_rebench_firstboot_waiting(void);
/* From the main loop, without ftd.lock, at most every few seconds: ask the worker who holds the
 * waiting GPUs (gpus --processes) and queue the bw job of each one nobody holds. */
void ftd_rebench_firstboot_poll(void);
#endif
