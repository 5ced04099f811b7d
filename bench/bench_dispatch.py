"""Benchmark of the dispatch path on the wire (issue 17): `costart serve` over REST
against the embedded Controller, measured in the same run (medians; the machine is
noisy). The load comes from a separate process with an async client
(`dispatch_load.py`), so the server's figures are the server's.

(a) durable submits per second of the issue's small 4-member spec: the embedded
    Controller on an LMDB store with 16 threads (the baseline), and `serve` on an LMDB
    store with 16 and 1 concurrent HTTP clients (auth, JSON; answered once durable in
    the log, the views following -- ADR 0050), in turns with the embedded runs; also
    the REST rate counted until the views hold the last submit, and each side's CPU
    per submit (the server's counts its views process, ADR 0055). Target: REST with 16
    clients >= 0.5x the embedded rate.
(b) barrier latency: from the response to a group's last claim READY to its
    `BarrierReleased` reaching a watching client (p99), against the median time of one
    durable command of the embedded Controller (one thread). Target: p99 <= 5x.
(c) 1,000 watchers each receive every event of a 10,000-event burst in log order; the
    server's resident memory per connected watcher (RSS with the watchers connected minus
    RSS before, over the watchers). Target: <= 50 KB.
(d) the server's resident memory with 10,000 live groups / 100,000 members (written by
    the embedded Controller, then served). Target: <= 400 MB.

--quick runs smaller versions (100 watchers, 1,000 events, 1,000 groups); the targets
are for the full run.

Run: python bench/bench_dispatch.py [--quick]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
from common import RESULTS, write_results
from dispatch_load import small_spec

from costart.bootstrap import Settings, bootstrap
from costart.controller import Controller
from costart.logging_setup import configure_logging

ROOT = Path(__file__).resolve().parents[1]
HERE = Path(__file__).resolve().parent
CLUSTER = ROOT / "scenarios" / "cluster-demo.toml"
TOKEN = "bench-token-0123456789abcdef"
CLIENTS = 16
START_DEADLINE_S = 30.0


def embedded(store: Path) -> Controller:
    """The embedded Controller on an LMDB store, with the placement step over the
    cluster (its feasibility check is on the submit path, as in `serve`)."""
    env = {**os.environ, "PERSISTENCE_MODULE": "costart.store"}
    return bootstrap(Settings(store=str(store), cluster=CLUSTER, env=env))


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The live child processes of ``pid`` (the server's views process, ADR 0055)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found += [int(c) for c in (task / "children").read_text().split()]
    return found


def tree_cpu_s(pid: int) -> dict[int, float]:
    """CPU seconds of ``pid`` and of each of its live children, by process id."""
    return {p: process_cpu_s(p) for p in (pid, *children(pid))}


def used_ms(before: dict[int, float], after: dict[int, float], count: int) -> float:
    """CPU ms per submit between two `tree_cpu_s` readings (a child started between
    them counts from zero)."""
    return sum(cpu - before.get(p, 0.0) for p, cpu in after.items()) / count * 1000


def embedded_run(controller: Controller, bodies: list[bytes]) -> tuple[float, float]:
    """Submit ``bodies`` with ``CLIENTS`` threads; (submits/s, CPU ms per submit)."""
    chunks = [bodies[i::CLIENTS] for i in range(CLIENTS)]

    def submit_all(chunk: list[bytes]) -> None:
        for body in chunk:
            controller.submit_document(body, "json")

    threads = [threading.Thread(target=submit_all, args=(c,)) for c in chunks]
    cpu = time.process_time()
    started = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - started
    return len(bodies) / elapsed, (time.process_time() - cpu) / len(bodies) * 1000


def embedded_single_ms(count: int) -> float:
    """Median time of one durable submit into the embedded Controller, one thread."""
    with tempfile.TemporaryDirectory(prefix="costart-bench-single-") as tmp:
        controller = embedded(Path(tmp))
        times = []
        for i in range(count):
            body = json.dumps(small_spec(f"s{i}")).encode()
            started = time.perf_counter()
            controller.submit_document(body, "json")
            times.append(time.perf_counter() - started)
        controller.close()
        return statistics.median(times) * 1000


def populate(store: Path, groups: int, members: int) -> int:
    """``groups`` live groups of ``members`` one-task members, written by the embedded
    Controller with 16 threads; the log position at the end."""
    controller = embedded(store)

    def spec(name: str) -> bytes:
        rows = [
            {"name": f"m{i}", "kind": "job", "tasks": 1, "shape": {"gpu": 1}}
            for i in range(members)
        ]
        return json.dumps({"name": name, "owner": "alice", "members": rows}).encode()

    def submit_all(names: list[str]) -> None:
        for name in names:
            controller.submit_document(spec(name), "json")

    names = [f"live-{i}" for i in range(groups)]
    threads = [
        threading.Thread(target=submit_all, args=(names[i::CLIENTS],)) for i in range(CLIENTS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    end = controller.world.position
    controller.close()
    return end


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class Server:
    """`costart serve` on an LMDB store in a temporary directory (sessions far apart, so
    the figures are the request path's)."""

    def __init__(self, tmp: Path, *extra: str, start_deadline_s: float = START_DEADLINE_S) -> None:
        tokens = tmp / "tokens.toml"
        tokens.write_text(f'[tokens.{TOKEN}]\nuser = "alice"\nrole = "admin"\n')
        self.url = f"http://127.0.0.1:{free_port()}"
        self.stderr = (tmp / "serve.stderr").open("w")
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("PERSISTENCE_MODULE", None)
        args = [sys.executable, "-m", "costart.cli.main", "--store", str(tmp / "store"), "serve"]
        args += ["--tokens", str(tokens), "--port", self.url.rsplit(":", 1)[1]]
        args += ["--cluster", str(CLUSTER), "--interval", "3600", *extra]
        self.process = subprocess.Popen(
            args, env=env, stdout=subprocess.DEVNULL, stderr=self.stderr
        )
        deadline = time.monotonic() + start_deadline_s
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError(f"serve did not start: {(tmp / 'serve.stderr').read_text()}")
            time.sleep(0.1)

    def rss_kb(self, kind: str = "VmRSS") -> int:
        """Resident memory of the server with its views process (ADR 0055; each
        process's own, summed: file pages both map count twice): ``VmRSS`` (all),
        ``RssAnon`` (the heap: what the processes hold), ``RssFile`` (mapped file
        pages, e.g. LMDB's, which the kernel may drop) or ``VmHWM`` (the peaks)."""
        return sum(self.process_kb(pid, kind) for pid in (self.process.pid, *self.children()))

    def children(self) -> list[int]:
        return children(self.process.pid)

    @staticmethod
    def process_kb(pid: int, kind: str = "VmRSS") -> int:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(f"{kind}:"):
                return int(line.split()[1])
        raise RuntimeError(f"no {kind} for process {pid}")

    def close(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.stderr.close()


def wait_views(url: str, position: int) -> None:
    """Until the server's views (`/healthz`) reached ``position``."""
    deadline = time.monotonic() + 900
    while httpx.get(f"{url}/healthz", timeout=30).json()["position"] < position:
        if time.monotonic() > deadline:
            raise RuntimeError("the server's views never caught up")
        time.sleep(0.5)


def barrier_figures(trials: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="costart-bench-barrier-") as tmp:
        server = Server(Path(tmp), "--interval", "0.05")
        try:
            result = load("barrier", server.url, TOKEN, str(trials))
        finally:
            server.close()
    return {"barrier_median_ms": result["median_ms"], "barrier_p99_ms": result["p99_ms"]}


def watcher_figures(watchers: int, events: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="costart-bench-watch-") as tmp:
        server = Server(Path(tmp))
        ready, go = Path(tmp) / "ready", Path(tmp) / "go"
        try:
            idle_kb = server.rss_kb()
            argv = [sys.executable, str(HERE / "dispatch_load.py"), "watchers", server.url]
            argv += [TOKEN, str(watchers), str(events), str(ready), str(go)]
            process = subprocess.Popen(
                argv,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            deadline = time.monotonic() + 600
            while not ready.exists():
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"watchers never connected: {process.communicate()[1]}")
                time.sleep(0.1)
            time.sleep(1.0)  # let the server settle after the last connection
            connected_kb = server.rss_kb()
            go.write_text("go\n")
            out, err = process.communicate(timeout=1800)
            if process.returncode != 0:
                raise RuntimeError(f"watchers failed: {err}")
            result = json.loads(out)
            after_kb = server.rss_kb()
        finally:
            server.close()
    return {
        "watchers": watchers,
        "burst_events": result["events"],
        "watchers_all_in_order": result["all_in_order"],
        "watchers_complete": result["complete_watchers"],
        "burst_delivery_s": result["seconds"],
        "rss_idle_mb": idle_kb / 1024,
        "rss_with_watchers_mb": connected_kb / 1024,
        "rss_after_burst_mb": after_kb / 1024,
        "kb_per_watcher": (connected_kb - idle_kb) / watchers,
    }


def live_groups_rss(groups: int, members: int) -> dict[str, float]:
    """`serve`'s memory with ``groups`` live groups of ``members`` members: once the views
    are caught up, and again after a client listed every group (what serving them reads
    back in; ADR 0058). Also its peak (the startup scan) and the heap and mapped-file
    parts, both times."""
    with tempfile.TemporaryDirectory(prefix="costart-bench-live-") as tmp:
        end = populate(Path(tmp) / "store", groups, members)
        # The views of the whole log are built before the server answers.
        server = Server(Path(tmp), start_deadline_s=900)
        try:
            wait_views(server.url, end)
            rss_kb, anon_kb = server.rss_kb(), server.rss_kb("RssAnon")
            file_kb, peak_kb = server.rss_kb("RssFile"), server.rss_kb("VmHWM")
            views_kb = sum(server.process_kb(pid) for pid in server.children())
            listed = list_all_groups(server.url)
            listed_kb, listed_anon_kb = server.rss_kb(), server.rss_kb("RssAnon")
            listed_file_kb = server.rss_kb("RssFile")
        finally:
            server.close()
    if listed != groups:
        raise RuntimeError(f"listed {listed} groups, expected {groups}")
    return {
        "live_groups": groups,
        "live_members": groups * members,
        "rss_live_mb": rss_kb / 1024,
        "rss_live_anon_mb": anon_kb / 1024,
        "rss_live_file_mb": file_kb / 1024,
        "rss_live_peak_mb": peak_kb / 1024,
        "rss_live_after_listing_mb": listed_kb / 1024,
        "rss_live_after_listing_anon_mb": listed_anon_kb / 1024,
        "rss_live_after_listing_file_mb": listed_file_kb / 1024,
        "rss_live_views_process_mb": views_kb / 1024,
    }


def list_all_groups(url: str) -> int:
    """GET every page of /v1/groups; how many groups were listed."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    count, next_url = 0, f"{url}/v1/groups?limit=500"
    with httpx.Client(headers=headers, timeout=120) as client:
        while next_url:
            answer = client.get(next_url)
            answer.raise_for_status()
            count += len(answer.json())
            link = answer.links.get("next", {}).get("url")
            next_url = httpx.URL(url).join(link).__str__() if link else ""
    return count


def load(*args: str) -> dict[str, Any]:
    """Run one load process to its end; its JSON result."""
    out = subprocess.run(
        [sys.executable, str(HERE / "dispatch_load.py"), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
    )
    if out.returncode != 0:
        raise RuntimeError(f"load {args[0]} failed: {out.stderr}")
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def submit_figures(count: int, repeats: int) -> dict[str, Any]:
    """Durable submits/s: the embedded Controller with ``CLIENTS`` threads, and `serve`
    with ``CLIENTS`` and with 1 client, run in turns (the machine's load drifts: each
    REST run is compared with the embedded run just before it; the ratio is the median
    of those). Also each side's CPU per submit (for REST: the server's with its views
    process, until the views hold the last submit; and the server process's alone), and
    the REST rate counted until the views hold the last submit."""
    runs: dict[str, list[float]] = {}

    def note(key: str, value: float) -> None:
        runs.setdefault(key, []).append(value)

    with tempfile.TemporaryDirectory(prefix="costart-bench-submits-") as tmp:
        controller = embedded(Path(tmp) / "embedded")
        server = Server(Path(tmp))
        try:
            for repeat in range(repeats):
                bodies = [json.dumps(small_spec(f"e{repeat}-{i}")).encode() for i in range(count)]
                per_s, cpu_ms = embedded_run(controller, bodies)
                note("embedded_16_threads_per_s", per_s)
                note("embedded_cpu_ms_per_submit", cpu_ms)
                for clients in (CLIENTS, 1):
                    pid = server.process.pid
                    cpu = tree_cpu_s(pid)
                    result = load(
                        "submit",
                        server.url,
                        TOKEN,
                        str(clients),
                        str(count),
                        f"c{clients}r{repeat}",
                    )
                    # The views fold in the background: a read waits until they hold
                    # everything answered (read your writes); count that wait too, and
                    # the CPU of the fold (in the server's views process, ADR 0055).
                    started = time.perf_counter()
                    httpx.get(f"{server.url}/healthz", timeout=120).raise_for_status()
                    views_s = result["seconds"] + time.perf_counter() - started
                    after = tree_cpu_s(pid)
                    server_ms = used_ms(cpu, after, count)
                    serve_ms = used_ms({pid: cpu[pid]}, {pid: after[pid]}, count)
                    note(f"rest_{clients}_clients_per_s", result["per_s"])
                    note(f"rest_{clients}_clients_median_ms", result["median_ms"])
                    if clients == CLIENTS:
                        note("rest_16_clients_until_views_per_s", count / views_s)
                        note("rest_16_server_cpu_ms_per_submit", server_ms)
                        note("rest_16_serve_process_cpu_ms_per_submit", serve_ms)
                        note("rest_16_vs_embedded_16_each", result["per_s"] / per_s)
                        note("load_1m_each", os.getloadavg()[0])
                        note("rest_16_until_views_vs_embedded_16_each", count / views_s / per_s)
        finally:
            server.close()
            controller.close()
    figures: dict[str, Any] = {key: statistics.median(values) for key, values in runs.items()}
    figures["rest_16_vs_embedded_16_runs"] = runs["rest_16_vs_embedded_16_each"]
    # Each turn's figures beside the machine's load then (other work shares the cores).
    figures["load_1m_runs"] = runs.pop("load_1m_each")
    figures["load_1m_median"] = figures.pop("load_1m_each")
    for key in ("rest_16_server_cpu_ms_per_submit", "embedded_cpu_ms_per_submit"):
        figures[f"{key}_runs"] = runs[key]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller runs")
    parser.add_argument(
        "--part",
        action="append",
        choices=("submits", "barrier", "watchers", "live"),
        help="run only this part (repeatable); the results file then has only its figures",
    )
    args = parser.parse_args()
    configure_logging(level=logging.WARNING)
    count, repeats = (300, 3) if args.quick else (1000, 5)
    watchers, events = (100, 1_000) if args.quick else (1_000, 10_000)
    groups = 1_000 if args.quick else 10_000
    figures: dict[str, Any] = {"submits_per_run": count, "repeats": repeats}
    steps = {
        "submits": lambda: submit_figures(count, repeats),
        "barrier": lambda: {
            "embedded_single_command_ms": embedded_single_ms(200),
            **barrier_figures(30 if args.quick else 200),
        },
        "watchers": lambda: watcher_figures(watchers, events),
        "live": lambda: live_groups_rss(groups, 10),
    }
    for part in args.part or list(steps):
        measured = steps[part]()
        print(json.dumps(measured), file=sys.stderr, flush=True)  # a crash keeps these
        figures.update(measured)
    ratios = {}
    if "rest_16_clients_per_s" in figures:
        # The median of the per-turn ratios (each REST run against the embedded run
        # just before it, under the same load).
        ratios["rest_16_vs_embedded_16"] = figures.pop("rest_16_vs_embedded_16_each")
        ratios["rest_16_until_views_vs_embedded_16"] = figures.pop(
            "rest_16_until_views_vs_embedded_16_each"
        )
    if "barrier_p99_ms" in figures:
        ratios["barrier_p99_vs_single_command"] = (
            figures["barrier_p99_ms"] / figures["embedded_single_command_ms"]
        )
    for key, value in sorted({**figures, **ratios}.items()):
        print(f"{key:40} {value:12.3f}" if isinstance(value, float) else f"{key:40} {value}")
    # The targets (`targets.TARGETS["dispatch"]`) are for the full run. A run of some
    # parts is a one-off record, kept beside the A/B runs, never the current result.
    if args.part:
        name = "dispatch-" + "-".join(args.part)
        write_results(name, {"figures": figures, "ratios": ratios}, RESULTS / "ab")
    else:
        write_results("dispatch", {"figures": figures, "ratios": ratios})


if __name__ == "__main__":
    main()
