"""Cut the small trace extracts the tests read (``tests/data/traces/``).

    python scripts/cut_traces.py FULL_TRACES OUT    # PAI 2020 extracts + the DLRM stand-in
    python scripts/cut_traces.py --dlrm-only OUT     # only the generated DLRM stand-in

``FULL_TRACES`` is a folder laid out like the full traces (what ``COSTART_TRACES`` names;
see ``tests/data/traces/README.md``). Only the CC BY 4.0 files of Alibaba's PAI 2020
trace are cut from it, as whole rows, unchanged:

* ``alibaba_v2020_pai_instance_tail_jobs.csv``: the rows of the selected jobs, in file
  order. The selection: the ``PAI_MULTI_ROLE`` earliest complete multi-role jobs (by first
  instance start, then name), the ``PAI_SINGLE_ROLE`` earliest complete single-role jobs
  and every incomplete multi-role job (so the importer's filters have something to drop).
* ``alibaba_v2020_pai_instance_table_tail_recovered.csv.gz``: every instance row of those
  jobs, in file order (gzip level 9, no name or time in the header, so the bytes repeat).
* ``alibaba_v2020_pai_machine_spec.csv``: verbatim (the cluster; 73 KB).

The DLRM 2025 trace has no licence, so none of it is copied: ``dlrm_standin`` generates a
file with its columns and shape from a fixed seed (no input read at all).

Cutting an extract again gives the same extract (the selection is a fixed point), which
is how the tests check this script without the full traces.
"""

from __future__ import annotations

import argparse
import csv
import gzip
import io
import random
import shutil
import sys
from pathlib import Path

PAI_JOBS = "alibaba_v2020_pai_instance_tail_jobs.csv"
PAI_INSTANCES = "alibaba_v2020_pai_instance_table_tail_recovered.csv.gz"
PAI_MACHINES = "alibaba_v2020_pai_machine_spec.csv"
DLRM = "alibaba_v2025_disaggregated_DLRM_trace.csv"
PAI_MULTI_ROLE = 60
PAI_SINGLE_ROLE = 10

DLRM_COLUMNS = [
    "instance_sn",
    "role",
    "app_name",
    "cpu_request",
    "cpu_limit",
    "gpu_request",
    "gpu_limit",
    "rdma_request",
    "rdma_limit",
    "memory_request",
    "memory_limit",
    "disk_request",
    "disk_limit",
    "max_instance_per_node",
    "creation_time",
    "scheduled_time",
    "deletion_time",
]
DLRM_SEED = 2025
DLRM_APPS = 24
DLRM_SPAN_S = 31 * 24 * 3600


def _by_start(job: dict[str, str]) -> tuple[float, str]:
    return float(job["first_inst_start"]), job["job_name"]


def pai_selection(jobs: list[dict[str, str]]) -> set[str]:
    """The job names the extract keeps (see the module docstring)."""
    started = [j for j in jobs if j["first_inst_start"]]
    complete = [j for j in started if j["complete_in_sample"] == "1"]
    multi = sorted((j for j in complete if j["multi_role"] == "1"), key=_by_start)
    single = sorted((j for j in complete if j["multi_role"] == "0"), key=_by_start)
    incomplete = [j for j in jobs if j["complete_in_sample"] == "0" and j["multi_role"] == "1"]
    chosen = multi[:PAI_MULTI_ROLE] + single[:PAI_SINGLE_ROLE] + incomplete
    return {j["job_name"] for j in chosen}


def _lines_of_jobs(lines: list[str], keep: set[str]) -> str:
    header, rows = lines[0], lines[1:]
    return header + "".join(line for line in rows if line.split(",", 1)[0] in keep)


def cut_pai(full: Path, out: Path) -> None:
    """Write the three PAI extract files from the full PAI files in ``full``."""
    jobs_text = (full / PAI_JOBS).read_text()
    keep = pai_selection(list(csv.DictReader(io.StringIO(jobs_text))))
    (out / PAI_JOBS).write_text(_lines_of_jobs(jobs_text.splitlines(keepends=True), keep))
    with gzip.open(full / PAI_INSTANCES, "rt", newline="") as handle:
        instances = _lines_of_jobs(handle.read().splitlines(keepends=True), keep)
    (out / PAI_INSTANCES).write_bytes(gzip.compress(instances.encode(), 9, mtime=0))
    shutil.copyfile(full / PAI_MACHINES, out / PAI_MACHINES)


def _number(value: float) -> str:
    return f"{value:.1f}"


def dlrm_standin() -> str:
    """A stand-in for the DLRM 2025 trace: same columns, CN instances of 24-192 cores and
    no GPU, HN instances of 2-24 cores and one GPU, some alive before the trace starts or
    after it ends, apps created in waves (most with both roles, some with one)."""
    rng = random.Random(DLRM_SEED)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(DLRM_COLUMNS)
    serial = 0
    for app in range(DLRM_APPS):
        cn_cpu = rng.choice((24, 48, 96, 192))
        hn_cpu = rng.choice((2, 4, 8, 12, 24))
        memory = rng.choice((64, 120, 256))
        waves = [None, *sorted(rng.randrange(DLRM_SPAN_S - 3600) for _ in range(rng.randint(1, 3)))]
        for index, created in enumerate(waves):
            roles = ["CN", "HN"] if index % 3 != 2 else [rng.choice(("CN", "HN"))]
            for role in roles:
                for _ in range(rng.randint(1, 5)):
                    at = None if created is None else created + rng.randrange(30)
                    lifetime = rng.randrange(600, 5 * 24 * 3600)
                    gone = (at or 0) + lifetime
                    gpu = role == "HN"
                    cpu = hn_cpu if gpu else cn_cpu
                    rdma = rng.choice((1, 25, 50, 75)) if gpu else 0
                    writer.writerow(
                        [
                            f"instance_{serial}",
                            role,
                            f"app_{app}",
                            cpu,
                            cpu,
                            int(gpu),
                            int(gpu),
                            rdma,
                            rdma,
                            _number(memory),
                            _number(memory),
                            _number(rng.choice((320, 640, 800))),
                            _number(800),
                            rng.choice((-1, 4, 8)),
                            "" if at is None else at,
                            "" if at is None else at + rng.randrange(5),
                            "" if gone > DLRM_SPAN_S or rng.random() < 0.2 else gone,
                        ]
                    )
                    serial += 1
    return out.getvalue()


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("full", nargs="?", type=Path, help="the full traces folder")
    parser.add_argument("out", type=Path, help="the extract folder to write")
    parser.add_argument("--dlrm-only", action="store_true", help="only the DLRM stand-in")
    args = parser.parse_args(argv)
    if args.full is None and not args.dlrm_only:
        parser.error("name the full traces folder, or pass --dlrm-only")
    args.out.mkdir(parents=True, exist_ok=True)
    if not args.dlrm_only:
        cut_pai(args.full, args.out)
    (args.out / DLRM).write_text(dlrm_standin())
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
