#!/usr/bin/env bash
# Make sure a headless Chromium and its WebDriver are here (the HTML timeline and the
# board are checked in a real browser, the board driven by selenium through Debian's
# chromedriver: nothing is downloaded by the test run itself). Installs Debian's
# chromium and chromium-driver packages once when missing and we may (root with
# apt-get); otherwise says what is needed. Prints the browser's path.
set -euo pipefail

browser() {
  local name
  for name in chromium chromium-browser google-chrome; do
    if command -v "$name" >/dev/null 2>&1; then command -v "$name"; return; fi
  done
}

driver() {
  command -v chromedriver 2>/dev/null || true
}

if [ -z "$(browser)" ] || [ -z "$(driver)" ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null
    apt-get install -y -qq --no-install-recommends chromium chromium-driver \
      fonts-dejavu-core >/dev/null
  else
    echo "a headless Chromium and its driver are needed for the browser tests: install" \
         "the distribution's chromium and chromium-driver packages, or set" \
         "COSTART_CHROMIUM and COSTART_CHROMEDRIVER to their paths" >&2
    exit 1
  fi
fi
browser
