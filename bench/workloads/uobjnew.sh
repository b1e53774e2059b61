#!/usr/bin/env bash
# bcc's uobjnew, the peer tool, attached to PID for SECONDS; its "Tracing
# allocations" line says it is attached.  Output unbuffered for that line.
#   bench/workloads/uobjnew.sh PID SECONDS
set -euo pipefail
pid=$1 seconds=$2
exec env PYTHONUNBUFFERED=1 /usr/bin/python3 /usr/sbin/uobjnew -l ruby "$pid" "$seconds"
