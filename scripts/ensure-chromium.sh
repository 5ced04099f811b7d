#!/usr/bin/env bash
# Make sure a headless Chromium is here (the HTML timeline is checked in a real browser).
# Installs Debian's chromium package once when missing and we may (root with apt-get);
# otherwise says what is needed. Prints the browser's path.
set -euo pipefail

browser() {
  local name
  for name in chromium chromium-browser google-chrome; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return; fi
  done
}

if [ -z "$(browser)" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  else
    echo "a headless Chromium is needed for the browser tests: install the" \
         "distribution's chromium package, or set COSTART_CHROMIUM to its path" >&2
    exit 1
  fi
fi
browser
