#!/usr/bin/env bash
# The run command: installs what is missing, builds, and starts the all-in-one platform
# (`dbstreams serve`) in the foreground. Flags are passed to `dbstreams serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
exec build/release/apps/dbstreams serve "$@"
