#!/usr/bin/env bash
# Configures and builds one configuration:
#   release   g++, optimized with debug info: what runs and what the benchmarks use (build/release)
#   asan      clang, Debug + AddressSanitizer/UndefinedBehaviorSanitizer + libFuzzer (build/asan)
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:-release}
jobs=${DBS_JOBS:-$(nproc)}
# ccache (installed by setup.sh) keeps objects across clones and worktrees of this repository:
# paths are hashed relative to the repository root, so another folder reuses them.
launcher=()
if command -v ccache >/dev/null 2>&1; then
  launcher=("-DCMAKE_CXX_COMPILER_LAUNCHER=env;CCACHE_BASEDIR=$PWD;CCACHE_NOHASHDIR=true;ccache")
fi
case "$kind" in
  release)
    [ -f build/release/build.ninja ] || cmake -S . -B build/release -G Ninja \
        -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=g++ "${launcher[@]}" >/dev/null
    ;;
  asan)
    [ -f build/asan/build.ninja ] || cmake -S . -B build/asan -G Ninja \
        -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_COMPILER=clang++-14 \
        -DDBS_SANITIZE=ON -DDBS_FUZZ=ON -DDBS_BENCH=OFF "${launcher[@]}" >/dev/null
    ;;
  *) echo "usage: scripts/build.sh [release|asan]" >&2; exit 2 ;;
esac
ninja -C "build/$kind" -j "$jobs"

# The web UI (ui/dist, served by the API at /): rebuilt only when its sources changed.
if [ -d ui/node_modules ]; then
  if [ ! -f ui/dist/index.html ] || [ -n "$(find ui/src ui/public ui/scripts ui/index.html \
      ui/vite.config.ts ui/package-lock.json -newer ui/dist/index.html -print -quit)" ]; then
    (cd ui && npm run --silent build >/dev/null) && echo "build: web UI built in ui/dist"
  fi
else
  echo "build: ui/node_modules missing (run scripts/setup.sh): web UI not built" >&2
fi
