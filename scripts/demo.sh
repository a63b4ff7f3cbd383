#!/usr/bin/env bash
# The main job: build, then `flashband demo` (a Llama-like batch checked against the oracle).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$root/scripts/build.sh"
"$root/build/flashband" demo "$@"
