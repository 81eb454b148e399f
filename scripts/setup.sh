#!/usr/bin/env bash
# Installs what dbstreams needs to build, run and test, on Debian 12. Idempotent: when
# everything is present it only checks and returns in about a second.
#   - Debian packages (compilers, libraries, nats-server, MariaDB, PostgreSQL, Node.js)
#   - DuckDB's shared library and C header from pinned npm packages, unpacked into
#     third_party/duckdb/ (ignored by git; never committed)
set -euo pipefail
cd "$(dirname "$0")/.."

DUCKDB_VERSION=1.4.4                 # duckdb npm package: C header (src/duckdb/src/include)
DUCKDB_BINDINGS_VERSION=1.4.4-r.4    # @duckdb/node-bindings-linux-x64: libduckdb.so

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates curl ccache
  clang-14 libclang-rt-14-dev clang-format
  libgtest-dev libgmock-dev libbenchmark-dev nlohmann-json3-dev
  libzstd-dev liblz4-dev libxxhash-dev libssl-dev libcurl4-openssl-dev libsqlite3-dev libcpp-httplib-dev libsodium-dev
  libsecret-1-dev gnome-keyring dbus-daemon
  libnats-dev nats-server
  mariadb-server mariadb-client libmariadb-dev
  postgresql postgresql-client libpq-dev
)

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

missing=()
for p in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
# Node.js and npm: any install that provides the commands will do (the machine image may
# ship a Node.js build that bundles npm and conflicts with Debian's npm package).
if ! command -v npm >/dev/null 2>&1; then missing+=(nodejs npm); fi
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  # Packaged servers must not start system-wide instances: tests start their own.
  policy_added=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee /usr/sbin/policy-rc.d >/dev/null
    $SUDO chmod +x /usr/sbin/policy-rc.d
    policy_added=1
  fi
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  if [ "$policy_added" = 1 ]; then $SUDO rm -f /usr/sbin/policy-rc.d; fi
fi

# DuckDB from npm (pinned). The marker file records the installed versions.
duck=third_party/duckdb
marker="$duck/VERSION"
want="duckdb=$DUCKDB_VERSION bindings=$DUCKDB_BINDINGS_VERSION"
if [ "$(cat "$marker" 2>/dev/null)" != "$want" ]; then
  echo "setup: fetching DuckDB $DUCKDB_VERSION from npm"
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "duckdb@$DUCKDB_VERSION" \
      "@duckdb/node-bindings-linux-x64@$DUCKDB_BINDINGS_VERSION" >/dev/null)
  rm -rf "$duck"
  mkdir -p "$duck/include" "$duck/lib"
  tar -xzf "$tmp/duckdb-$DUCKDB_VERSION.tgz" -C "$tmp" package/src/duckdb/src/include/duckdb.h
  cp "$tmp/package/src/duckdb/src/include/duckdb.h" "$duck/include/"
  rm -rf "$tmp/package"
  tar -xzf "$tmp/duckdb-node-bindings-linux-x64-$DUCKDB_BINDINGS_VERSION.tgz" -C "$tmp" \
      package/libduckdb.so
  cp "$tmp/package/libduckdb.so" "$duck/lib/"
  echo "$want" > "$marker"
fi
echo "setup: dependencies present"

# The OpenAPI linter (Redocly CLI, pinned by tools/openapi-lint/package-lock.json) for the
# openapi_lint test.
if [ ! -x tools/openapi-lint/node_modules/.bin/redocly ]; then
  echo "setup: installing the OpenAPI linter (npm ci in tools/openapi-lint)"
  (cd tools/openapi-lint && npm ci --silent --no-audit --no-fund)
fi

# The MCP server's tests use the official TypeScript SDK client (pinned by
# tests/mcp/package-lock.json).
if [ ! -f tests/mcp/node_modules/.package-lock.json ] || [ tests/mcp/package-lock.json -nt tests/mcp/node_modules/.package-lock.json ]; then
  echo "setup: npm ci in tests/mcp/"
  (cd tests/mcp && npm ci --no-audit --no-fund --loglevel=error)
fi

# Web UI (ui/): Debian's Chromium for the browser tests (never a downloaded browser build), and
# the pinned npm packages from ui/package-lock.json when they are missing or out of date.
if ! dpkg-query -W -f='${Status}' chromium 2>/dev/null | grep -q "install ok installed"; then
  echo "setup: installing chromium (UI tests)"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
fi
if [ ! -f ui/node_modules/.package-lock.json ] || [ ui/package-lock.json -nt ui/node_modules/.package-lock.json ]; then
  echo "setup: npm ci in ui/"
  (cd ui && npm ci --no-audit --no-fund --loglevel=error)
fi
