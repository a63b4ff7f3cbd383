#!/usr/bin/env bash
# On the GPU machine after a device_check.sh build: Nsight Compute on one sm90/sm80 launch
# of bench/probe.py per argument set, text sections only. Usage:
#   scripts/ncu_probe.sh "--backend sm90 --page 16" "--backend sm90"
# NCU_KERNEL: the kernel-name regex (default: flashband's kernels; cuDNN's engine kernels
# for "--backend cudnn" match "sdpa|fprop|flash"). NCU_SECTIONS: the sections, e.g.
# "--section SpeedOfLight --section LaunchStats --section Occupancy" to compare a peer's
# grid, block, registers and shared memory with ours. NCU_TIMEOUT: seconds per launch (240),
# lower for a variant that might hang.
set -uo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
mod=$(dirname "$(dirname "$(find build -name '_C*.so' | head -1)")")
for args in "$@"; do
  echo "==== ncu: $args"
  PYTHONPATH="$root/$mod:$root/python" timeout "${NCU_TIMEOUT:-240}" ncu --kernel-name regex:"${NCU_KERNEL:-prefill|attention}" \
    --launch-skip 2 --launch-count 1 ${NCU_SECTIONS:---section SpeedOfLight --section WarpStateStats --section SchedulerStats} \
    python3 bench/probe.py $args 2>&1 | grep -vE "^==PROF==|^\s*$|----" | cut -c1-120 | tail -${NCU_TAIL:-60}
done
