#!/usr/bin/env bash
# Make sure the install can build the package's compiled part (the store's record check,
# ADR 0155): a C compiler and the headers of the Python that builds the venv. Installs the
# distribution's packages once when missing and we may (root with apt-get); otherwise says
# what is needed. Usage: scripts/ensure-compiler.sh [python]
set -euo pipefail

PYTHON=${1:-python3}
headers() {
  "$PYTHON" -c 'import os, sysconfig; print(os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))'
}

missing=()
command -v cc >/dev/null || command -v gcc >/dev/null || missing+=(gcc)
if [ "$(headers)" != True ]; then
  version=$("$PYTHON" -c 'import sys; print(f"{sys.version_info[0]}.{sys.version_info[1]}")')
  missing+=("python$version-dev")
fi
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq "${missing[@]}" >/dev/null
else
  echo "installing costart builds its compiled record check: a C compiler and the" \
       "Python headers are needed (the distribution's packages: ${missing[*]})" >&2
  exit 1
fi
