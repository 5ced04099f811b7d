"""An open board survives the loss of its server (ADR 0117), in headless chromium with
two real `costart serve` processes on one LMDB store: a leader and a standby, each told
the other's address (``--peer``). The leader is killed with SIGKILL; the standby takes
the lease and the page, finding its own server gone, asks the peers who leads and loads
the same page there, live.

On the same host (another port) the session cookie follows and nothing is asked again;
when the peer is named by another host (``localhost`` for 127.0.0.1: another site) the
cookie cannot follow, so the new leader asks for the token and comes back to the page
the user was on. A standby's answer is never taken for a leader's."""

from __future__ import annotations

import itertools
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from tests.board.browser import Serve, log_in, screenshot
from tests.rest.dispatch_support import OWNER, client, life_spec, tokens_toml

LEASE = ("--lease-duration", "2", "--interval", "0.1")
FAILOVER_S = 40  # the lease (2 s), the standby's promotion, the page's back-off (≤ 5 s)
_names = (f"moved-{i}" for i in itertools.count())


def pair(tmp: Path, peer_host: str) -> tuple[Serve, Serve, str]:
    """A leader and its standby on one store, each with the other as its peer; the
    standby's address as the leader names it (``peer_host`` and its port)."""
    leader = Serve(tmp / "a", tokens_toml(), store=tmp / "store")
    standby = Serve(tmp / "b", tokens_toml(), store=tmp / "store")
    standby_url = f"http://{peer_host}:{standby.port}"
    leader.options = (*LEASE, "--peer", standby_url)
    standby.options = (*LEASE, "--standby", "--peer", leader.url)
    return leader, standby, standby_url


@pytest.fixture
def servers(tmp_path) -> Iterator[list[Serve]]:
    started: list[Serve] = []
    yield started
    for server in started:
        server.stop()


def start(tmp: Path, peer_host: str, started: list[Serve]) -> tuple[Serve, Serve, str]:
    for part in ("a", "b"):
        (tmp / part).mkdir()
    leader, standby, standby_url = pair(tmp, peer_host)
    started += [leader, standby]
    leader.start()
    standby.start(ready_status=503)  # "not leader" until it takes the lease
    return leader, standby, standby_url


def submitted(url: str) -> str:
    name = next(_names)
    answer = client(url, OWNER).post("/v1/groups", json=life_spec(name))
    assert answer.status_code == 201, answer.text
    return name


def fresh_login(driver, url: str) -> None:
    """Log in at ``url`` with no cookie of an earlier test (cookies are kept per host,
    whatever the port, and deleted only for the page's own host)."""
    driver.get(f"{url}/healthz")
    driver.delete_all_cookies()
    log_in(driver, url, OWNER)


def has_row(driver, name: str) -> bool:
    return bool(
        driver.execute_script("return !!document.getElementById(arguments[0])", f"group-{name}")
    )


def live_at(url: str):
    def check(driver) -> bool:
        if not driver.current_url.startswith(url + "/"):
            return False
        found = driver.find_elements(By.ID, "live")
        return bool(found) and found[0].text == "live"

    return check


def kill(server: Serve) -> None:
    assert server.process is not None
    server.process.send_signal(signal.SIGKILL)
    server.process.wait(timeout=10)


def test_the_board_moves_to_the_new_leader_with_its_session(driver, tmp_path, servers):
    leader, standby, standby_url = start(tmp_path, "127.0.0.1", servers)
    driver.get(f"{standby.url}/")  # a standby shows a browser where the board is
    assert driver.find_element(By.ID, "leader").get_attribute("href") == f"{leader.url}/"
    screenshot(driver, "board-standby.png")
    fresh_login(driver, leader.url)
    WebDriverWait(driver, 20).until(live_at(leader.url))
    # The standby is no leader: its "not leader" answer cannot be read from the page.
    assert httpx.get(f"{standby.url}/board/leader", timeout=5).status_code == 503
    # A browser opening a board page on the standby is shown where the leader is.
    page = httpx.get(f"{standby.url}/groups/x", headers={"Accept": "text/html"}, timeout=5)
    assert page.status_code == 503 and page.headers["content-type"].startswith("text/html")
    assert f'id="leader" href="{leader.url}/groups/x"' in page.text
    assert page.headers["content-security-policy"] == "default-src 'none'"
    before = submitted(leader.url)
    WebDriverWait(driver, 20).until(lambda d: has_row(d, before), "the first row never came")
    seen = int(driver.execute_script("return document.body.dataset.position"))

    kill(leader)
    WebDriverWait(driver, FAILOVER_S).until(live_at(standby_url), "the page never moved")
    # Same host, another port: the cookie followed, no login was asked.
    assert not driver.find_elements(By.ID, "token")
    moved = driver.find_element(By.ID, "moved")
    assert "stopped answering" in moved.text and moved.get_attribute("class") == "moved"
    assert "seen" not in driver.current_url  # the note is shown once, not on a reload
    assert int(driver.execute_script("return document.body.dataset.position")) >= seen
    assert has_row(driver, before)
    after = submitted(standby.url)
    WebDriverWait(driver, 20).until(lambda d: has_row(d, after), "no live row after the move")
    screenshot(driver, "board-failover.png")


def test_on_another_host_the_new_leader_asks_for_the_token_and_comes_back(
    driver, tmp_path, servers
):
    leader, standby, standby_url = start(tmp_path, "localhost", servers)
    name = submitted(leader.url)
    driver.get(f"{standby_url}/healthz")  # no session of an earlier test at this host
    driver.delete_all_cookies()
    fresh_login(driver, leader.url)
    WebDriverWait(driver, 20).until(live_at(leader.url))
    driver.get(f"{leader.url}/groups/{name}")
    WebDriverWait(driver, 20).until(live_at(leader.url))

    kill(leader)
    # Another site: the cookie stays with 127.0.0.1, the leader at localhost asks.
    WebDriverWait(driver, FAILOVER_S).until(
        lambda d: d.current_url.startswith(standby_url + "/") and d.find_elements(By.ID, "token"),
        "the page never reached the new leader's login",
    )
    assert "give your token again" in driver.find_element(By.ID, "moved").text
    screenshot(driver, "board-failover-login.png")
    driver.find_element(By.ID, "token").send_keys(OWNER)
    driver.find_element(By.ID, "login").click()
    WebDriverWait(driver, 20).until(live_at(standby_url), "not live after the login")
    assert driver.current_url == f"{standby_url}/groups/{name}"
    assert "stopped answering" in driver.find_element(By.ID, "moved").text
    assert driver.find_element(By.TAG_NAME, "h1").text == f"Group {name}"
    # Live on the new leader: a cancel there reaches the group page.
    answer = client(standby.url, OWNER).post(f"/v1/groups/{name}/cancel")
    assert answer.status_code == 200, answer.text
    WebDriverWait(driver, 20).until(
        lambda d: (
            d.execute_script(
                "const e = document.getElementById('group-state'); return e && e.textContent"
            )
            == "CANCELLED"
        ),
        "the cancel never reached the page",
    )


def test_a_bad_peer_address_is_refused_before_serving(tmp_path):
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(tokens_toml())
    server = Serve(tmp_path, tokens_toml(), "--peer", "http://10.0.0.2:8080/board")
    with pytest.raises(RuntimeError, match="expected a server's origin"):
        server.start()


def ended_streams(driver) -> int:
    """The page's watch streams that ended (a stream is in the resource timings once
    its response is complete: an open one is not)."""
    script = (
        "return performance.getEntriesByType('resource')"
        ".filter(e => e.name.includes('/board/watch')).length"
    )
    return int(driver.execute_script(script))


@pytest.mark.slow
def test_a_board_on_a_leader_that_stops_answering_moves_too(driver, tmp_path, servers):
    # A hung or cut-off leader keeps the connection open and says nothing: EventSource
    # reports no error. The board's stream sends its keepalives as events, so an idle
    # page stays on one stream, and a silent one is given up after 35 s.
    leader, standby, standby_url = start(tmp_path, "127.0.0.1", servers)
    fresh_login(driver, leader.url)
    WebDriverWait(driver, 20).until(live_at(leader.url))
    time.sleep(40)  # longer than the page's patience without the keepalive events
    assert live_at(leader.url)(driver) and ended_streams(driver) == 0

    assert leader.process is not None
    leader.process.send_signal(signal.SIGSTOP)
    WebDriverWait(driver, 120).until(live_at(standby_url), "the page never left the hung leader")
    after = submitted(standby.url)
    WebDriverWait(driver, 20).until(lambda d: has_row(d, after), "no live row after the move")
