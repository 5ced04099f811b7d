"""Claim probes (`costart.domain.run_table.Probe`): check a pre-start resource, and
keep checking every period until it passes (the claim is READY) or, with
``fail_after``, has missed that many times in a row (the claim FAILED)."""

from __future__ import annotations

import socket
import subprocess
import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

import httpx

from costart.domain import Probe

NS_PER_S = 1e9


class Verdict(NamedTuple):
    ok: bool
    detail: str


def check(probe: Probe, cwd: Path, env: Mapping[str, str]) -> Verdict:
    """One check, bounded by the probe's timeout."""
    timeout_s = probe.timeout_ns / NS_PER_S
    try:
        if probe.kind == "exec":
            done = subprocess.run(
                list(probe.argv),
                cwd=cwd,
                env=dict(env),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
                timeout=timeout_s,
                check=False,
            )
            return Verdict(done.returncode == 0, f"exit code {done.returncode}")
        if probe.kind == "http":
            response = httpx.get(probe.target, timeout=timeout_s)
            return Verdict(response.is_success, f"HTTP {response.status_code}")
        if probe.kind == "tcp":
            host, _, port = probe.target.rpartition(":")
            with socket.create_connection((host.strip("[]"), int(port)), timeout=timeout_s):
                return Verdict(True, "connected")
        path = cwd / probe.target
        return Verdict(path.exists(), "exists" if path.exists() else f"{path}: no such file")
    except subprocess.TimeoutExpired:
        return Verdict(False, f"timed out after {timeout_s:g}s")
    except (OSError, httpx.HTTPError) as error:
        return Verdict(False, str(error) or type(error).__name__)


class ProbeLoop:
    """Checks one claim in a thread until it passes, gives up, or is cancelled;
    ``report(ready, detail)`` is called once, from that thread."""

    def __init__(
        self,
        probe: Probe,
        cwd: Path,
        env: Mapping[str, str],
        report: Callable[[bool, str], None],
    ) -> None:
        self.probe = probe
        self._cwd = cwd
        self._env = env
        self._report = report
        self._cancelled = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"probe-{probe.claim}", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def cancel(self) -> None:
        self._cancelled.set()

    def _run(self) -> None:
        misses = 0
        period_s = self.probe.period_ns / NS_PER_S
        while not self._cancelled.is_set():
            verdict = check(self.probe, self._cwd, self._env)
            if self._cancelled.is_set():
                return
            if verdict.ok:
                self._report(True, verdict.detail)
                return
            misses += 1
            if self.probe.fail_after and misses >= self.probe.fail_after:
                self._report(
                    False, f"{self.probe.kind} probe missed {misses} times: {verdict.detail}"
                )
                return
            self._cancelled.wait(period_s)
