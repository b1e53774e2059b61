/* SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause) */
/* What one probe hit costs on this machine, measured on ourselves. */
#ifndef RBM_CALIBRATE_H
#define RBM_CALIBRATE_H

struct rbmemtrace_bpf;

/*
 * Times calls to functions of our own with an empty uretprobe on them and
 * without: the cost of the trap alone, in seconds per hit, where the kernel
 * emulates the first instruction and where it single-steps it.  0 or -errno.
 */
int calibrate_uretprobe_costs(struct rbmemtrace_bpf *skel, double *emulated, double *stepped);
/* Waits for the calibration's probes to be detached (they go in the background). */
void calibrate_release_wait(void);

#endif
