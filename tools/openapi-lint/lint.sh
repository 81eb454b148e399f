#!/bin/sh
# Lints an OpenAPI document (default: docs/openapi.json) with the pinned Redocly CLI and
# redocly.yaml next to this script. scripts/setup.sh installs the CLI (npm ci here).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin="$here/node_modules/.bin/redocly"
if [ ! -x "$bin" ]; then
  echo "openapi-lint: $bin is missing: run scripts/setup.sh (or npm ci in $here)" >&2
  exit 1
fi
# No usage telemetry, no update check against the registry.
export REDOCLY_TELEMETRY=off REDOCLY_SUPPRESS_UPDATE_NOTICE=true
exec "$bin" lint --config "$here/redocly.yaml" "${1:-$here/../../docs/openapi.json}"
