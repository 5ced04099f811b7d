#!/usr/bin/env bash
# Make sure Slurm's daemons and commands and munge are here (the Slurm adapter's tests
# start a throwaway cluster: one slurmctld, four slurmd, a munged, all on 127.0.0.1).
# Installs the distribution's packages once when missing and we may (root with apt-get,
# bounded in time); otherwise says what is needed. Prints the folder of slurmctld.
set -euo pipefail

have() {
  local name
  for name in slurmctld slurmd munged sbatch scontrol scancel; do
    if ! PATH="$PATH:/usr/sbin:/sbin" command -v "$name" >/dev/null 2>&1; then return 1; fi
  done
}

if ! have; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    timeout 300 apt-get update -qq >/dev/null
    # The packages' own services are not started: the tests start their own daemons.
    timeout 600 apt-get install -y -qq --no-install-recommends \
      -o Dpkg::Options::=--force-confdef slurmctld slurmd slurm-client munge >/dev/null
  else
    echo "Slurm (slurmctld, slurmd, slurm-client) and munge are needed for the Slurm" \
         "adapter's tests: install the distribution's packages (Slurm 22.05 or later)" >&2
    exit 1
  fi
fi
dirname "$(PATH="$PATH:/usr/sbin:/sbin" command -v slurmctld)"
