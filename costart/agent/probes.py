"""Claim probes (`costart.domain.run_table.Probe`): check a pre-start resource, and
keep checking every period until it passes (the claim is READY) or, with
``fail_after``, has missed that many times in a row (the claim FAILED).

A probe is the group owner's code and data, so it runs with no more than the owner's
task would have (docs/design.md §11): an ``exec`` probe runs as the task's account with the
task's environment; a ``file`` probe names a path inside the task's directory and is
looked up as that account; ``http`` and ``tcp`` probes reach only what the node's
`TargetPolicy` allows. A probe that is not allowed can never pass: it is reported
FAILED at its first check.
"""

from __future__ import annotations

import contextlib
import http.client
import os
import socket
import ssl
import subprocess
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Final, NamedTuple
from urllib.parse import urlsplit

from costart.agent import confine
from costart.agent.accounts import Account
from costart.agent.probe_targets import Endpoint, ProbeRefused, TargetPolicy
from costart.domain import Probe

NS_PER_S: Final = 1e9
# The file check run as another account. Not the agent's own interpreter: it may sit
# where only the agent's account can read it (a venv under root's home); /bin/sh is on
# every node and runnable by every account, and `test` is built into it.
EXISTS_AS_ACCOUNT: Final = ("/bin/sh", "-c", 'test -e "$1"', "costart-file-probe")


class TaskDir(NamedTuple):
    """The task's directory: ``relative`` (its run table's ``cwd``, ``.`` without one)
    beneath the agent's work root ``root``. Opened anew for each check, without
    following a link (`costart.agent.confine`), and entered by the probe after it has
    become the task's account, as the task itself is started: a link the task planted
    cannot take a probe where its account could not go."""

    root: Path
    relative: str

    @contextlib.contextmanager
    def opened(self) -> Iterator[int]:
        fd = confine.open_dir(self.root, self.relative)
        try:
            yield fd
        finally:
            os.close(fd)


class ProbeResult(NamedTuple):
    ok: bool
    detail: str
    refused: bool = False  # the probe is not allowed: it can never pass


def check(
    probe: Probe,
    task_dir: TaskDir,
    env: Mapping[str, str],
    *,
    account: Account,
    targets: TargetPolicy,
) -> ProbeResult:
    """One check, bounded by the probe's timeout: ``exec`` and ``file`` as ``account``
    (the task's) in ``task_dir``, ``exec`` with ``env`` (the task's); ``http`` and
    ``tcp`` only to what ``targets`` allows."""
    timeout_s = probe.timeout_ns / NS_PER_S
    try:
        if probe.kind == "exec":
            return _exec(probe.argv, task_dir, env, account, timeout_s)
        if probe.kind == "http":
            return _http(probe.target, targets, timeout_s)
        if probe.kind == "tcp":
            return _tcp(probe.target, targets, timeout_s)
        return _file(probe.target, task_dir, account, timeout_s)
    except ProbeRefused as refused:
        return ProbeResult(False, str(refused), refused=True)
    except subprocess.TimeoutExpired:
        return ProbeResult(False, f"timed out after {timeout_s:g}s")
    except subprocess.SubprocessError:  # the child could not enter the directory
        return ProbeResult(False, f"{account.describe()} cannot enter the task's directory")
    except confine.Escape as escape:  # missing, or a link: the task could not start either
        return ProbeResult(False, f"the task's directory: {escape}")
    except (OSError, http.client.HTTPException) as error:  # a certificate error too
        return ProbeResult(False, str(error) or type(error).__name__)
    except ValueError as error:  # a target no check can use (submit refuses it first)
        return ProbeResult(False, f"{probe.kind} probe cannot run: {error}", refused=True)


def _run_as(
    argv: Sequence[str],
    task_dir: TaskDir,
    env: Mapping[str, str],
    account: Account,
    timeout_s: float,
) -> int:
    """Run ``argv`` as ``account`` in the task's directory; its exit code."""
    with task_dir.opened() as fd:
        done = subprocess.run(
            list(argv),
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
            # After the switch (Popen's user, group, extra_groups), before the child
            # closes the agent's descriptors: the account enters the directory itself.
            preexec_fn=lambda: os.fchdir(fd),
            **account.popen_kwargs(),
        )
    return done.returncode


def _exec(
    argv: Sequence[str],
    task_dir: TaskDir,
    env: Mapping[str, str],
    account: Account,
    timeout_s: float,
) -> ProbeResult:
    code = _run_as(argv, task_dir, env, account, timeout_s)
    return ProbeResult(code == 0, f"exit code {code}")


def _file(target: str, task_dir: TaskDir, account: Account, timeout_s: float) -> ProbeResult:
    """Whether ``target`` exists as ``account`` sees it from the task's directory: what
    that account could learn by itself, never what the agent's (often root's) view
    would tell."""
    try:
        confine.parts(target)  # submit refuses these too; the node does not rely on it
    except confine.Escape as escape:
        raise ProbeRefused(
            f"file probe target {target!r} is not allowed on this node: {escape}; a file "
            "probe names a path inside the task's directory"
        ) from None
    if account.switches:
        code = _run_as([*EXISTS_AS_ACCOUNT, target], task_dir, {}, account, timeout_s)
        if code not in (0, 1):
            return ProbeResult(
                False, f"{target}: the check as {account.describe()} failed (exit code {code})"
            )
        there = code == 0
    else:
        with task_dir.opened() as fd:
            try:
                os.stat(target, dir_fd=fd)
                there = True
            except OSError:
                there = False
    if there:
        return ProbeResult(True, "exists")
    return ProbeResult(
        False, f"{target}: no such file in the task's directory (as {account.describe()})"
    )


def _tcp(target: str, targets: TargetPolicy, timeout_s: float) -> ProbeResult:
    host, _, port = target.rpartition(":")
    if not host or not port.isdigit():
        raise ProbeRefused(f"tcp probe target {target!r} is not HOST:PORT")
    endpoints = targets.endpoints(host.strip("[]"), int(port))
    _connect(endpoints, timeout_s).close()
    return ProbeResult(True, "connected")


def _http(url: str, targets: TargetPolicy, timeout_s: float) -> ProbeResult:
    """GET ``url`` at a checked address. The standard library's client, not httpx: it
    takes a socket we connected ourselves (to the address the policy checked, never
    resolving the name again) and never follows a redirect, so there is no pool or
    transport to pin and no second request to police. The request still names the URL's
    host (``Host``, and for https the certificate's name)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    https = parts.scheme == "https"
    port = parts.port or (443 if https else 80)
    sock = _connect(targets.endpoints(host, port), timeout_s)
    connection: http.client.HTTPConnection
    try:
        if https:
            context = ssl.create_default_context()
            sock = context.wrap_socket(sock, server_hostname=host)
            connection = http.client.HTTPSConnection(host, port, timeout=timeout_s, context=context)
        else:
            connection = http.client.HTTPConnection(host, port, timeout=timeout_s)
    except BaseException:
        sock.close()
        raise
    connection.sock = sock  # already connected: the client never resolves host itself
    try:
        path = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        connection.request("GET", path, headers={"Connection": "close"})
        with connection.getresponse() as response:
            status = response.status
    finally:
        connection.close()
    if 300 <= status < 400:
        return ProbeResult(False, f"HTTP {status} (redirects are not followed)")
    return ProbeResult(200 <= status < 300, f"HTTP {status}")


def _connect(endpoints: list[Endpoint], timeout_s: float) -> socket.socket:
    """A socket connected to the first of ``endpoints`` that answers (each checked)."""
    error: OSError = OSError("no address to connect to")
    for endpoint in endpoints:
        sock = socket.socket(endpoint.family, socket.SOCK_STREAM)
        sock.settimeout(timeout_s)
        try:
            sock.connect(endpoint.sockaddr)
        except OSError as failed:
            sock.close()
            error = failed
            continue
        return sock
    raise error


class ProbeLoop:
    """Checks one claim in a thread until it passes, gives up, is refused, or is
    cancelled; ``report(ready, detail)`` is called once, from that thread. ``account``
    is the task's (its owner's, `costart.agent.accounts`); ``targets`` what its group's
    probes may reach on this node."""

    def __init__(
        self,
        probe: Probe,
        task_dir: TaskDir,
        env: Mapping[str, str],
        report: Callable[[bool, str], None],
        *,
        account: Account,
        targets: TargetPolicy,
    ) -> None:
        self.probe = probe
        self._task_dir = task_dir
        self._env = env
        self._report = report
        self._account = account
        self._targets = targets
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
            verdict = check(
                self.probe, self._task_dir, self._env, account=self._account, targets=self._targets
            )
            if self._cancelled.is_set():
                return
            if verdict.ok or verdict.refused:
                self._report(verdict.ok, verdict.detail)
                return
            misses += 1
            if self.probe.fail_after and misses >= self.probe.fail_after:
                self._report(
                    False, f"{self.probe.kind} probe missed {misses} times: {verdict.detail}"
                )
                return
            self._cancelled.wait(period_s)
