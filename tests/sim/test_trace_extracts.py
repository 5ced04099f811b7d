"""The trace extracts in `tests/data/traces/` are what `scripts/cut_traces.py` makes:
cutting them again changes nothing, the DLRM stand-in is the generator's output, they
stay small, and their licence and source are written beside them."""

from __future__ import annotations

import gzip
import subprocess
import sys
from pathlib import Path

from tests.sim.helpers import ROOT, TRACES

SCRIPT = ROOT / "scripts" / "cut_traces.py"
PAI = (
    "alibaba_v2020_pai_instance_table_tail_recovered.csv.gz",
    "alibaba_v2020_pai_instance_tail_jobs.csv",
    "alibaba_v2020_pai_machine_spec.csv",
)
DLRM = "alibaba_v2025_disaggregated_DLRM_trace.csv"
MOST_BYTES = 300 * 1024


def _cut(*args: str) -> None:
    subprocess.run([sys.executable, str(SCRIPT), *args], check=True, timeout=120)


def _content(path: Path) -> bytes:
    return gzip.decompress(path.read_bytes()) if path.suffix == ".gz" else path.read_bytes()


def test_cutting_the_extract_again_gives_the_same_files(tmp_path: Path):
    _cut(str(TRACES), str(tmp_path))
    for name in (*PAI, DLRM):
        assert _content(tmp_path / name) == _content(TRACES / name), name


def test_the_dlrm_stand_in_is_the_generators_output_and_no_trace_row(tmp_path: Path):
    _cut("--dlrm-only", str(tmp_path))
    assert sorted(p.name for p in tmp_path.iterdir()) == [DLRM]
    assert (tmp_path / DLRM).read_bytes() == (TRACES / DLRM).read_bytes()


def test_the_extracts_are_small_and_say_where_they_come_from():
    files = [p for p in TRACES.iterdir() if p.name != "README.md"]
    assert sorted(p.name for p in files) == sorted((*PAI, DLRM))
    assert sum(p.stat().st_size for p in files) < MOST_BYTES
    readme = (TRACES / "README.md").read_text()
    for needed in ("CC BY 4.0", "MLaaS in the Wild", "alibaba/clusterdata", "cut_traces.py"):
        assert needed in readme, needed
    assert "generated" in readme and "COSTART_TRACES" in readme
