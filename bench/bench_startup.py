"""How long the `costart` command takes before it does anything, against the bare
interpreter of the same virtualenv, measured in the same run (issue 32, ADR 0078).

Each command runs 20 times warm (after 3 unmeasured runs that fill the bytecode cache
and the page cache) as a real process; the figure is its median wall time. The commands:
``--help``, ``--version``, ``get groups`` on a local store (one group submitted) and over
``--server`` (a real `costart serve` on 127.0.0.1), and one TAB completion of a group
name from the server (``completion``, the target) and from the local store
(``completion_local``, recorded). The targets are ratios to ``python -c pass`` (`bench/targets.py`); the absolute
medians are recorded beside them.

    python bench/bench_startup.py [--runs 20] [--out results|ab --label NAME] [--source DIR]

``--label before`` with ``--out ab`` writes ``bench/results/ab/startup-before.json``
(the figures of the code before the change, measured the same way).
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import RESULTS, write_results

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "scenarios" / "rl-post-training.toml"
TOKEN = "a-bench-token-of-thirty-two-chars"
WARMUP = 3


def costart_argv() -> list[str]:
    """The virtualenv's ``costart`` script (so completion sees its own name), run on the
    sources ``environment`` names (``PYTHONPATH`` comes before the installed package)."""
    return [sys.executable, str(Path(sys.executable).parent / "costart")]


def environment(source: Path, **extra: str) -> dict[str, str]:
    """The environment of a run on ``source``'s code (this checkout, or another's)."""
    env = {**os.environ, "PYTHONPATH": str(source), **extra}
    env.pop("PERSISTENCE_MODULE", None)  # the store is LMDB, as a user's is
    return env


def median_s(argv: Sequence[str], env: dict[str, str], runs: int) -> float:
    """The median wall time of ``runs`` runs of ``argv`` (each must exit 0)."""
    times = []
    for i in range(WARMUP + runs):
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise RuntimeError(f"{argv} exited {done.returncode}: {done.stderr.decode()}")
        if i >= WARMUP:
            times.append(elapsed)
    return statistics.median(times)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextmanager
def serving(tmp: Path, source: Path) -> Iterator[str]:
    """A `costart serve` with one submitted group, on a free port of 127.0.0.1."""
    tokens = tmp / "tokens.toml"
    tokens.write_text(f'[tokens.{TOKEN}]\nuser = "root"\nrole = "admin"\n')
    port = free_port()
    argv = [*costart_argv(), "--store", str(tmp / "served")]
    argv += ["serve", "--tokens", str(tokens), "--port", str(port)]
    process = subprocess.Popen(
        argv, env=environment(source), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while subprocess.run(
            [*costart_argv(), "--server", url, "--token", TOKEN, "submit", str(SPEC)],
            env=environment(source),
            capture_output=True,
            check=False,
        ).returncode:
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("costart serve did not start")
            time.sleep(0.2)
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)


def measure(runs: int, source: Path) -> dict[str, float]:
    """Median seconds of each command (and of the bare interpreter), in one run."""
    with tempfile.TemporaryDirectory() as name:
        tmp = Path(name)
        store = tmp / "store"
        made = subprocess.run(
            [*costart_argv(), "--store", str(store), "submit", "--create", str(SPEC)],
            env=environment(source),
            check=False,
            capture_output=True,
        )
        if made.returncode != 0:  # a checkout from before `submit --create` (ADR 0081)
            subprocess.run(
                [*costart_argv(), "--store", str(store), "submit", str(SPEC)],
                env=environment(source),
                check=True,
                capture_output=True,
            )
        with serving(tmp, source) as url:
            remote = ["--server", url, "--token", TOKEN]

            def complete(*words: str) -> dict[str, str]:
                """A TAB after ``words`` (bash's protocol, as the installed script runs it)."""
                line = " ".join(["costart", *words])
                return environment(
                    source,
                    _COSTART_COMPLETE="complete_bash",
                    COMP_WORDS=line,
                    COMP_CWORD=str(len(words)),
                )

            cases = {
                "python_pass": ([sys.executable, "-c", "pass"], environment(source)),
                "help": ([*costart_argv(), "--help"], environment(source)),
                "version": ([*costart_argv(), "--version"], environment(source)),
                "get_groups_local": (
                    [*costart_argv(), "--store", str(store), "get", "groups"],
                    environment(source),
                ),
                "get_groups_remote": (
                    [*costart_argv(), *remote, "get", "groups"],
                    environment(source),
                ),
                # A group's name from the server (the target), and from a local store.
                "completion": (costart_argv(), complete(*remote, "describe", "group", "grpo")),
                "completion_local": (
                    costart_argv(),
                    complete("--store", str(store), "describe", "group", "grpo"),
                ),
            }
            medians = {}
            for case, (argv, env) in cases.items():
                medians[case] = round(median_s(argv, env, runs), 4)
                print(f"  {case:<18} {medians[case] * 1000:7.1f} ms", flush=True)
    return medians


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--label", default="startup")
    parser.add_argument("--out", choices=("results", "ab"), default="results")
    parser.add_argument("--source", type=Path, default=ROOT, help="the checkout to measure")
    args = parser.parse_args(argv)
    source = args.source.resolve()
    medians = measure(args.runs, source)
    bare = medians["python_pass"]
    figures = {
        "runs": args.runs,
        "medians_s": medians,
        "ratio_to_python": {k: round(v / bare, 2) for k, v in medians.items()},
    }
    figures["source"] = "this checkout" if source == ROOT else args.label
    name = "startup" if args.out == "results" else f"startup-{args.label}"
    write_results(name, figures, RESULTS if args.out == "results" else RESULTS / "ab")


if __name__ == "__main__":
    main()
