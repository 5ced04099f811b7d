#!/usr/bin/env bash
# Make sure PostgreSQL's server binaries are here (the test suite runs the store contract
# against a throwaway server). Installs the distribution's package once when missing and
# we may (root with apt-get); otherwise says what is needed. Prints the binaries' folder.
set -euo pipefail

pg_bin() {
  local found
  found=$(command -v initdb 2>/dev/null || true)
  if [ -n "$found" ]; then dirname "$(readlink -f "$found")"; return; fi
  found=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1 || true)
  if [ -n "$found" ] && [ -x "$found/initdb" ]; then echo "$found"; fi
}

if [ -z "$(pg_bin)" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq postgresql >/dev/null
  else
    echo "PostgreSQL's server binaries (initdb, pg_ctl) are needed: install the" \
         "distribution's postgresql package, or set COSTART_TEST_POSTGRES_URL" >&2
    exit 1
  fi
fi
pg_bin
