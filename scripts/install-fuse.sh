#!/usr/bin/env bash
# Make sure FUSE 3 is here (the power-loss test mounts a filesystem that drops unsynced
# writes). Installs the distribution's fuse3 package once when missing and we may (root
# with apt-get); otherwise says what is needed and exits 0: the test then skips, naming
# what is missing.
set -euo pipefail

if command -v fusermount3 >/dev/null && ldconfig -p 2>/dev/null | grep -q 'libfuse3\.so'; then
  exit 0
fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq >/dev/null
  apt-get install -y -qq fuse3 libfuse3-3 >/dev/null
else
  echo "FUSE 3 (fusermount3, libfuse3) is needed for the power-loss test:" \
       "install the distribution's fuse3 package" >&2
fi
