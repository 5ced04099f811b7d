"""The board in a real headless browser (Debian's chromium and chromedriver, installed
by scripts/ensure-chromium.sh), against a real `costart serve` on 127.0.0.1 started once
for the module: log in, rows appearing and changing state live, a group page's markers
counted against the log, hostile text shown as text, a wrong token shown nothing, and
the page reconnecting after `serve` restarts on the same store. Screenshots of the main
pages are kept under test-artifacts/."""

from __future__ import annotations

import itertools

import httpx
import pytest
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from costart.board.session import COOKIE, csrf_token
from tests.board.browser import WAIT_S, Serve, log_in, screenshot
from tests.rest.dispatch_support import (
    ADMIN,
    CLAIMS,
    OTHER,
    OWNER,
    SERVE_AGENT,
    TRAIN_AGENT,
    client,
    group_state,
    life_spec,
    tokens_toml,
    wait_until,
)

HOSTILE = "<img src=x onerror=\"document.title='pwned'\">"
_names = (f"board-{i}" for i in itertools.count())
FAILURE_EVENTS = {"MemberFailed", "ClaimFailed", "GroupFailed"}
RESTART_EVENTS = {"MemberRestarted", "GroupRestarted"}


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    server = Serve(tmp_path_factory.mktemp("board"), tokens_toml(), "--interval", "0.1")
    server.start()
    yield server
    server.stop()


@pytest.fixture
def alice(driver, serve):
    """The browser logged in as alice (the owner), on the groups table."""
    driver.delete_all_cookies()
    log_in(driver, serve.url, OWNER)
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.ID, "groups"))
    return driver


def submitted(url: str, spec: dict | None = None) -> str:
    name = next(_names)
    owner = client(url, OWNER)
    answer = owner.post("/v1/groups", json=spec or life_spec(name))
    assert answer.status_code == 201, answer.text
    return name


def ready_claims(url: str, name: str) -> None:
    claims = client(url, CLAIMS)
    for m in ("trainer", "rollout"):
        answer = claims.post(
            f"/v1/groups/{name}/members/{m}/claims/gpus", json={"attempt": 1, "status": "READY"}
        )
        assert answer.status_code == 200, answer.text


def row_state(driver, name: str) -> str | None:
    # Read in one script: the row is replaced as events arrive (no stale element).
    script = "const r = document.getElementById(arguments[0]); return r && r.dataset.state"
    return driver.execute_script(script, f"group-{name}")


def wait_row(driver, name: str, state: str) -> None:
    WebDriverWait(driver, WAIT_S).until(
        lambda d: row_state(d, name) == state, f"row {name} never {state}"
    )


def text_of(driver, element_id: str) -> str | None:
    """An element's text, read in one script (the page replaces its body live)."""
    script = "const e = document.getElementById(arguments[0]); return e && e.textContent"
    return driver.execute_script(script, element_id)


def live(driver) -> bool:
    return driver.find_element(By.ID, "live").text == "live"


def test_a_wrong_token_shows_nothing(driver, serve):
    driver.delete_all_cookies()
    submitted(serve.url)  # something there to be shown
    log_in(driver, serve.url, "not-a-token-0123456789")
    WebDriverWait(driver, WAIT_S).until(lambda d: d.find_elements(By.ID, "login-error"))
    assert driver.find_element(By.ID, "login-error").text == "unknown token"
    assert not driver.find_elements(By.ID, "groups")
    assert "board-" not in driver.page_source
    screenshot(driver, "board-login.png")
    # Nothing is answered without a session, nor to a forged cookie.
    for cookies in ({}, {COOKIE: "not-a-token-0123456789"}):
        c = httpx.Client(base_url=serve.url, cookies=cookies, timeout=10)
        assert c.get("/board/rows", params={"name": "board-0"}).status_code == 401
        assert c.get("/board/watch").status_code == 401
        assert c.get("/board/groups/board-0/body").status_code == 401
        page = c.get("/groups/board-0")
        # The login form comes back to the page asked for (its own address, ADR 0117):
        # beside that, nothing of the group.
        shown = page.text.replace('name="next" value="/groups/board-0"', "")
        assert page.status_code == 401 and "board-0" not in shown
        home = c.get("/")
        assert home.status_code == 401 and 'id="groups"' not in home.text


def test_login_sets_a_session_cookie_the_page_cannot_read(alice, serve):
    cookie = alice.get_cookie(COOKIE)
    assert cookie is not None
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Strict"
    assert alice.execute_script("return document.cookie") == ""
    answer = httpx.get(serve.url + "/", cookies={COOKIE: OWNER})
    csp = answer.headers["content-security-policy"]
    assert csp.startswith("default-src 'self'"), csp


def test_a_submitted_group_appears_and_changes_state_live(alice, serve):
    WebDriverWait(alice, WAIT_S).until(live)
    alice.execute_script("window.notReloaded = true")
    name = submitted(serve.url)
    wait_row(alice, name, "PLACED")
    ready_claims(serve.url, name)
    wait_row(alice, name, "RUNNING")
    row = alice.find_element(By.ID, f"group-{name}").text
    assert "alice" in row and "reserve" in row  # owner and mode in their cells
    assert alice.execute_script("return window.notReloaded") is True  # live, not reloaded
    screenshot(alice, "board-groups.png")


def test_filters_keep_their_rows_live(alice, serve):
    alice.get(serve.url + "/?state=RUNNING&owner=alice")
    WebDriverWait(alice, WAIT_S).until(live)
    name = submitted(serve.url)
    owner = client(serve.url, OWNER)
    wait_until(lambda: group_state(owner, name), lambda s: s == "PLACED", "placed")
    assert row_state(alice, name) is None  # not RUNNING yet: filtered out
    ready_claims(serve.url, name)
    wait_row(alice, name, "RUNNING")
    bad = httpx.get(serve.url + "/?state=NOPE", cookies={COOKIE: OWNER})
    assert bad.status_code == 400 and "state &#x27;NOPE&#x27;: not one of" in bad.text


def member_row(url: str, name: str, member: str) -> dict:
    rows = client(url, OWNER).get(f"/v1/groups/{name}/members").json()
    return next(m for m in rows if m["name"] == member)


def _restarted_group(url: str) -> str:
    """A running group whose rollout replica exited OOM once (restarted alone)."""
    name = submitted(url)
    owner = client(url, OWNER)
    wait_until(lambda: group_state(owner, name), lambda s: s == "PLACED", "placed")
    ready_claims(url, name)
    wait_until(lambda: group_state(owner, name), lambda s: s == "RUNNING", "running")
    serve = client(url, SERVE_AGENT)
    path = f"/v1/groups/{name}/members/rollout/tasks/0"
    assert serve.post(path, json={"attempt": 1, "event": "started"}).is_success
    oom = {"attempt": 1, "event": "exited", "exit_code": 137, "reason": "oom"}
    answer = serve.post(path, json=oom)
    assert answer.status_code == 200, answer.text
    wait_until(lambda: member_row(url, name, "rollout")["restarts"], lambda n: n == 1, "restart")
    return name


def marker_counts(url: str, name: str) -> tuple[int, int]:
    """(failures, restarts) in the group's events, as the log has them."""
    kinds = [e["event"] for e in client(url, OWNER).get(f"/v1/groups/{name}/events").json()]
    return sum(k in FAILURE_EVENTS for k in kinds), sum(k in RESTART_EVENTS for k in kinds)


def test_a_group_page_marks_every_failure_and_restart_of_the_log(alice, serve):
    name = _restarted_group(serve.url)
    alice.get(f"{serve.url}/groups/{name}")
    WebDriverWait(alice, WAIT_S).until(live)
    count = lambda css: len(alice.find_elements(By.CSS_SELECTOR, css))  # noqa: E731
    failures, restarts = marker_counts(serve.url, name)
    assert (failures, restarts) == (1, 1)
    assert count("svg .marker-failure") == failures
    assert count("svg .marker-restart") == restarts
    # The restart count reads the same in the members table as on the lanes.
    cell = alice.find_element(By.CSS_SELECTOR, 'tr[data-member="rollout"] td.restarts').text
    assert cell == "1"
    # Each event with its actor; each task with its node and state.
    assert "agent:agent-serve" in alice.find_element(By.CSS_SELECTOR, "table.events").text
    tasks = alice.find_elements(By.CSS_SELECTOR, "tr.task")
    assert tasks and all("h100-" in t.text or "l40s-" in t.text for t in tasks)
    # Live: the trainer fails (fail-group), and the open page marks it and shows the end.
    train = client(serve.url, TRAIN_AGENT)
    path = f"/v1/groups/{name}/members/trainer/tasks/0"
    assert train.post(path, json={"attempt": 1, "event": "started"}).is_success
    crash = {"attempt": 1, "event": "exited", "exit_code": 1, "reason": "error"}
    assert train.post(path, json=crash).status_code == 200
    owner = client(serve.url, OWNER)
    wait_until(lambda: group_state(owner, name), lambda s: s == "FAILED", "failed")
    failures, restarts = marker_counts(serve.url, name)
    assert failures >= 2
    WebDriverWait(alice, WAIT_S).until(lambda d: count("svg .marker-failure") == failures)
    assert count("svg .marker-restart") == restarts
    WebDriverWait(alice, WAIT_S).until(lambda d: text_of(d, "group-state") == "FAILED")
    ends = alice.execute_script(
        "return Array.from(document.querySelectorAll(\"svg rect.span[data-end='1']\"))"
        ".map(r => [r.dataset.state, Number(r.getAttribute('width'))])"
    )
    assert ends[0][0] == "FAILED"  # the group's lane first
    assert all(width > 20 for _, width in ends)  # bars, not slivers
    screenshot(alice, "board-group.png")


def test_hostile_text_is_shown_as_text_and_runs_nothing(alice, serve):
    spec = life_spec(next(_names))
    spec["labels"] = {"note": HOSTILE}
    refused = client(serve.url, OWNER).post("/v1/groups", json=spec)
    assert refused.status_code == 422, refused.text  # a label cannot hold it at all
    name = submitted(serve.url)
    owner = client(serve.url, OWNER)
    wait_until(lambda: group_state(owner, name), lambda s: s == "PLACED", "placed")
    failed = client(serve.url, CLAIMS).post(
        f"/v1/groups/{name}/members/trainer/claims/gpus",
        json={"attempt": 1, "status": "FAILED", "reason": HOSTILE},
    )
    assert failed.status_code == 200, failed.text
    title = alice.title
    alice.get(f"{serve.url}/groups/{name}")
    try:
        WebDriverWait(alice, WAIT_S).until(
            lambda d: HOSTILE in d.find_element(By.TAG_NAME, "main").text
        )
    except Exception:
        raise AssertionError(alice.find_element(By.TAG_NAME, "main").text[-3000:]) from None
    assert alice.find_elements(By.TAG_NAME, "img") == []
    assert alice.title != "pwned" and alice.title.startswith("group ")
    alice.get(serve.url + "/")
    WebDriverWait(alice, WAIT_S).until(lambda d: row_state(d, name) is not None)
    assert alice.find_elements(By.TAG_NAME, "img") == [] and alice.title != "pwned"
    assert title != "pwned"


def test_owners_act_on_their_own_groups_only(alice, serve):
    name = submitted(serve.url)
    owner = client(serve.url, OWNER)
    wait_until(lambda: group_state(owner, name), lambda s: s == "PLACED", "placed")
    # Bob sees the group but has no buttons, and the server refuses him as the API does.
    bob = httpx.Client(base_url=serve.url, cookies={COOKIE: OTHER}, timeout=10)
    page = bob.get(f"/groups/{name}")
    assert page.status_code == 200 and 'id="cancel"' not in page.text
    same_site = {"Origin": serve.url, "X-CSRF-Token": csrf_token(OTHER)}
    assert bob.post(f"/board/groups/{name}/cancel", headers=same_site).status_code == 403
    # Alice's cookie without the CSRF token, or from another origin, is refused too.
    mine = httpx.Client(base_url=serve.url, cookies={COOKIE: OWNER}, timeout=10)
    path = f"/board/groups/{name}/cancel"
    assert mine.post(path, headers={"Origin": serve.url}).status_code == 403
    foreign = {"Origin": "http://evil.example", "X-CSRF-Token": csrf_token(OWNER)}
    assert mine.post(path, headers=foreign).status_code == 403
    wrong = {"Origin": serve.url, "X-CSRF-Token": csrf_token(OTHER)}
    assert mine.post(path, headers=wrong).status_code == 403
    assert group_state(owner, name) == "PLACED"
    # Scale through the page, then cancel through its button (armed, then pressed).
    alice.get(f"{serve.url}/groups/{name}")
    WebDriverWait(alice, WAIT_S).until(live)
    field = alice.find_element(By.CSS_SELECTOR, 'form.scale[data-member="rollout"] input')
    field.clear()
    field.send_keys("3")
    field.submit()
    wait_until(lambda: member_row(serve.url, name, "rollout")["desired"], lambda n: n == 3, "3")
    WebDriverWait(alice, WAIT_S).until(
        lambda d: d.find_elements(By.CSS_SELECTOR, "svg .marker-scale")
    )
    alice.find_element(By.ID, "cancel").click()
    alice.find_element(By.ID, "cancel").click()
    WebDriverWait(alice, WAIT_S).until(lambda d: text_of(d, "group-state") == "CANCELLED")
    assert len(alice.find_elements(By.CSS_SELECTOR, "svg .marker-cancel")) == 1
    events = owner.get(f"/v1/groups/{name}/events").json()
    assert any(e["event"] == "GroupCancelled" and e["actor"] == "user:alice" for e in events)
    # An admin may act for anyone (the API's rule): the page offers it.
    other = submitted(serve.url)
    admin = httpx.Client(base_url=serve.url, cookies={COOKIE: ADMIN}, timeout=10)
    assert 'id="cancel"' in admin.get(f"/groups/{other}").text


def test_the_page_reconnects_after_serve_restarts(alice, serve):
    WebDriverWait(alice, WAIT_S).until(live)
    alice.execute_script("window.notReloaded = true")
    serve.restart()
    name = submitted(serve.url)
    wait_row(alice, name, "PLACED")
    WebDriverWait(alice, WAIT_S).until(live)
    ready_claims(serve.url, name)
    wait_row(alice, name, "RUNNING")
    assert alice.execute_script("return window.notReloaded") is True


def test_logging_out_ends_the_session(alice, serve):
    alice.find_element(By.CSS_SELECTOR, "form.logout button").click()
    WebDriverWait(alice, WAIT_S).until(lambda d: d.find_elements(By.ID, "token"))
    assert alice.get_cookie(COOKIE) is None
    assert not alice.find_elements(By.ID, "groups")
    # A logout without the session's CSRF token is refused (the session stays).
    c = httpx.Client(base_url=serve.url, cookies={COOKIE: OWNER}, timeout=10)
    assert c.post("/board/logout", headers={"Origin": serve.url}).status_code == 403
