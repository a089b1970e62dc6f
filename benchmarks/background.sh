#!/usr/bin/env bash
# Run a long measurement in the background, out of the foreground's way (docs/DEVELOPING.md,
# "The machine"): its own session, whose scheduling group gets nice 19 (with the kernel's
# autogroups a plain `nice` ranks a process only within its own session), its output in
# runs/logs/NAME-DATE.log, where NAME is the command's second word or the script's name.
#   benchmarks/background.sh benchmarks/compare.sh pilot-trunk
set -euo pipefail
cd "$(dirname "$0")/.."
[ $# -ge 1 ] || { echo "usage: benchmarks/background.sh COMMAND [ARGS...]" >&2; exit 2; }
mkdir -p runs/logs
name=$(basename "${2:-$1}" .py)
log=runs/logs/$name-$(date +%Y%m%d-%H%M%S).log
setsid bash -c 'echo 19 > /proc/self/autogroup 2>/dev/null || true; exec nice -n 19 "$@"' \
    background "$@" > "$log" 2>&1 < /dev/null &
echo "started $* (pid $!, log $log)"
