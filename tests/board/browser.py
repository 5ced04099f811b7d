"""The board's browser and server for tests (and the board benchmark): `costart serve`
as a real process on a fixed 127.0.0.1 port (so it can be restarted under the page on
the same store), and headless Chromium driven by selenium through the distribution's
chromedriver at an explicit path, offline (no Selenium Manager, no downloads)."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests import child_processes
from tests.rest.serving import free_port, serve_env

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = Path(os.environ.get("COSTART_TEST_ARTIFACTS", ROOT / "test-artifacts"))
DEADLINE_S = 30
WAIT_S = 15


def _found(env: str, names: tuple[str, ...], what: str) -> str:
    path = os.environ.get(env) or next((p for p in map(shutil.which, names) if p), None)
    if path is None:
        raise RuntimeError(f"no {what}: run scripts/ensure-chromium.sh (make test does)")
    return path


def chromium_path() -> str:
    return _found("COSTART_CHROMIUM", ("chromium", "chromium-browser", "google-chrome"), "Chromium")


def chromedriver_path() -> str:
    return _found("COSTART_CHROMEDRIVER", ("chromedriver",), "chromedriver")


def new_driver():  # -> selenium.webdriver.Chrome
    """Headless Chromium, offline: any fetch beyond 127.0.0.1 goes to a dead proxy."""
    os.environ["SE_OFFLINE"] = "true"  # never let Selenium Manager look anything up
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = chromium_path()
    for arg in (
        "--headless=new", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
        "--window-size=1400,1000", "--proxy-server=127.0.0.1:9",
        "--proxy-bypass-list=127.0.0.1", "--disable-dev-shm-usage",
    ):  # fmt: skip
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(options=options, service=Service(executable_path=chromedriver_path()))


class Serve:
    """`costart serve` on one port and one store; `restart` keeps both. ``store``:
    another server's store (a standby of it: `start` with ``ready_status=503``)."""

    def __init__(self, tmp: Path, tokens: str, *options: str, store: Path | None = None) -> None:
        self.tmp = tmp
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.tokens_file = tmp / "tokens.toml"
        self.tokens_file.write_text(tokens)
        self.options = options
        self.store = store or tmp / "store"
        self.env = serve_env(tmp, lmdb=True)
        self.process: subprocess.Popen[bytes] | None = None
        self.starts = 0

    def start(self, ready_status: int = 200) -> None:
        self.starts += 1
        log = (self.tmp / f"serve-{self.starts}.stderr").open("w")
        self.process = child_processes.popen(
            [
                sys.executable, "-m", "costart.cli.main", "--store", str(self.store),
                "serve", "--tokens", str(self.tokens_file), "--port", str(self.port),
                *self.options,
            ],
            env=self.env, cwd=self.tmp, stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
        deadline = time.monotonic() + DEADLINE_S
        while True:
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == ready_status:
                    return
            except httpx.HTTPError:
                pass
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError((self.tmp / f"serve-{self.starts}.stderr").read_text())
            time.sleep(0.05)

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.send_signal(signal.SIGCONT)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def restart(self) -> None:
        self.stop()
        self.start()


def log_in(driver, url: str, token: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(url + "/")
    driver.find_element(By.ID, "token").send_keys(token)
    driver.find_element(By.ID, "login").click()


def screenshot(driver, name: str) -> Path:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / name
    driver.save_screenshot(str(path))
    return path
