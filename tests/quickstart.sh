#!/usr/bin/env bash
# Runs README.md's first command exactly as written there: the first ```sh block under
# "## Quick start" (install, calibrate this host, `edgeprof demo`). .ci/run calls it after the
# tests so the quick start cannot break unseen.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
command=$(awk '/^## Quick start/ {q = 1; next}
               q && /^```sh$/ {inside = 1; next}
               inside && /^```$/ {exit}
               inside {print}' README.md)
if [[ -z $command ]]; then
  echo "quickstart.sh: no \`\`\`sh block under '## Quick start' in README.md" >&2
  exit 2
fi
printf '=== README quick start:\n%s\n\n' "$command"
bash -euo pipefail -c "$command"
