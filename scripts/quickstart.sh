#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the default launch.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build="${STRATA_BUILD_DIR:-$root/build}"
# The default launch: the upcycled stories260K MoE on the best backend found, greedy, telling a story.
"$build/strata" run --config "$root/configs/default.yaml" --prompt "Once upon a time"
