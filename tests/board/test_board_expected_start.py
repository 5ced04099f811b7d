"""The board shows each waiting group's expected start (ADR 0137), in a real headless
browser against a real `costart serve` on 127.0.0.1 (one for the module) over a
two-node cluster: the table's EXPECTED START cell with its assumption in the title,
the group page's line, and a row brought up to date by the stream's hint. Screenshots
of both pages are kept under test-artifacts/."""

from __future__ import annotations

import re

import pytest
from selenium.webdriver.support.ui import WebDriverWait

from tests.board.browser import WAIT_S, Serve, log_in, screenshot
from tests.rest.dispatch_support import OWNER, client, tokens_toml, wait_until
from tests.service.two_nodes import CLUSTER, gang_doc

LIMIT_CELL = re.compile(r"in (59m\d\ds|1h00m) \(limit\)")


@pytest.fixture(scope="module")
def serve(tmp_path_factory):
    server = Serve(
        tmp_path_factory.mktemp("board-estimates"), tokens_toml(),
        "--interval", "0.05", "--simulate-claims", "--claim-delay", "0",
    )  # fmt: skip
    server.env["COSTART_CLUSTER"] = str(CLUSTER)
    server.start()
    api = client(server.url, OWNER)
    assert api.post("/v1/groups", json=gang_doc("holder", 2, "1h")).status_code == 201
    wait_until(
        lambda: api.get("/v1/groups/holder").json()["group"]["state"],
        lambda state: state == "RUNNING",
        "holder running",
    )
    yield server
    server.stop()


def _cell(driver, name: str) -> dict[str, str] | None:
    """The row's EXPECTED START cell: its text and title (read in one script: rows are
    replaced live)."""
    script = """
      const head = Array.from(document.querySelectorAll("table.groups th"))
        .map((th) => th.textContent);
      const row = document.getElementById(arguments[0]);
      if (!row) return null;
      const td = row.children[head.indexOf("EXPECTED START")];
      const span = td.querySelector(".expected");
      return {text: td.textContent, title: span ? span.title : ""};
    """
    return driver.execute_script(script, f"group-{name}")


def _wait_cell(driver, name: str, ok) -> dict[str, str]:
    found: list[dict[str, str] | None] = [None]

    def seen(d) -> bool:
        found[0] = _cell(d, name)
        return found[0] is not None and ok(found[0])

    WebDriverWait(driver, WAIT_S).until(seen, f"{name}'s cell never as wanted: {found[0]}")
    assert found[0] is not None
    return found[0]


def test_the_table_shows_a_waiting_groups_expected_start_and_keeps_it_fresh(driver, serve):
    api = client(serve.url, OWNER)
    assert api.post("/v1/groups", json=gang_doc("waiter", 2)).status_code == 201
    driver.delete_all_cookies()
    log_in(driver, serve.url, OWNER)
    cell = _wait_cell(driver, "waiter", lambda c: LIMIT_CELL.fullmatch(c["text"]) is not None)
    assert "rests on the declared limits of the running work it waits for" in cell["title"]
    assert "planned at log position" in cell["title"]
    assert _cell(driver, "holder") == {"text": "-", "title": ""}
    # A group that comes while the page is open: its row arrives with its submit event
    # (before any plan has it), and the stream's hint brings its estimate after.
    assert api.post("/v1/groups", json=gang_doc("later", 1)).status_code == 201
    later = _wait_cell(driver, "later", lambda c: c["text"] not in ("", "not planned yet"))
    assert later["text"].startswith(("in ", "unknown (beyond")), later
    screenshot(driver, "board-expected-start.png")


def test_a_waiting_groups_page_says_when_and_on_what_it_rests(driver, serve):
    api = client(serve.url, OWNER)
    wait_until(
        lambda: api.get("/v1/groups/waiter").json()["group"]["expected_start"],
        lambda estimate: estimate is not None,
        "waiter planned",
    )
    driver.get(serve.url + "/groups/waiter")
    script = "const e = document.getElementById('expected-start'); return e && e.textContent"
    WebDriverWait(driver, WAIT_S).until(
        lambda d: "rests on the declared limits" in (d.execute_script(script) or ""),
        "the group page never showed the expected start",
    )
    line = driver.execute_script(script)
    assert re.search(r"expected start: \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d{3})?Z \(in ", line), line
    assert "planned at log position" in line
    screenshot(driver, "board-expected-start-group.png")
