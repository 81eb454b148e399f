#!/usr/bin/env bash
# The test command: installs what is missing, builds both configurations and runs the whole
# suite — everything under the release build, and the unit, fuzz and integration smoke tests
# again under ASan/UBSan. Extra arguments go to both ctest runs (e.g. -L load).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh release
scripts/build.sh asan

export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
echo "== sanitizer build (ASan/UBSan): unit, fuzz, integration smoke"
ctest --test-dir build/asan --output-on-failure -L 'unit|fuzz|smoke' "$@" || status=1
echo "== release build: the whole suite"
ctest --test-dir build/release --output-on-failure "$@" || status=1
exit $status
