#!/usr/bin/env bash
# The README's first command: install what is missing, build, run the default launch.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
"$root/scripts/install-deps.sh"
"$root/scripts/build.sh"
build="${STRATA_BUILD_DIR:-$root/build}"
# Until the engine exists, the default launch shows the plugins and the effective launch.
"$build/strata" plugins --config "$root/configs/default.yaml"
echo
"$build/strata" config show "$root/configs/default.yaml"
