#!/usr/bin/env bash
# bcc's uobjnew (Debian's bpfcc-tools), the peer tool, attached to PID for
# SECONDS: it counts Ruby's object__create, string__create, hash__create and
# array__create USDT probes per class.  Prints uobjnew's own
#   Tracing allocations in process PID (language: ruby)... Ctrl-C to quit.
# once the probes are attached (3-4 s after start: bcc compiles its program
# with clang first), then its table after SECONDS, and exits.
#   bench/workloads/uobjnew.sh PID SECONDS
#
# Run through a small wrapper, because plain uobjnew cannot be stopped cleanly
# from a script: its positional number is a print interval, not a duration;
# it only stops on SIGINT, which a background job inherits as ignored, so
# Python never sees it; and SIGTERM kills it without bcc's cleanup, which
# leaves the target's USDT semaphores raised for good (bcc raises them by
# writing /proc/PID/mem), so the target keeps paying for probe arguments
# after uobjnew is gone.  The wrapper stops it after SECONDS and turns SIGINT
# and SIGTERM into the Ctrl-C path: table, detach, semaphores lowered.
set -euo pipefail
if [ $# -ne 2 ]; then
	echo "usage: $0 PID SECONDS" >&2
	exit 2
fi
pid=$1 seconds=$2

# bcc needs the kernel headers (bench-deps.sh links Debian's when the kernel
# has none).  It attaches through the uprobe PMU, so tracefs is not needed;
# mounted, it only spares bcc's cleanup a "No such file" warning.
if [ ! -e /sys/kernel/tracing/uprobe_events ] && [ "$(id -u)" -eq 0 ]; then
	mount -t tracefs nodev /sys/kernel/tracing 2>/dev/null || true
fi

exec /usr/bin/python3 -u -c '
import runpy, signal, sys, time

def stop(*_):
    # Once: a second signal must not cut short the cleanup of the first.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    raise KeyboardInterrupt

signal.signal(signal.SIGINT, stop)
signal.signal(signal.SIGTERM, stop)

# uobjnew sleeps its interval in a loop; one interval, then stop as on Ctrl-C.
real_sleep = time.sleep
def sleep_once(seconds):
    real_sleep(seconds)
    raise KeyboardInterrupt
time.sleep = sleep_once

sys.argv = ["uobjnew"] + sys.argv[1:]
runpy.run_path("/usr/sbin/uobjnew", run_name="__main__")
' -l ruby "$pid" "$seconds"
