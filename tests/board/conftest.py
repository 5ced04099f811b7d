"""The headless browser the board's page tests drive: one per test module, quit at its
end."""

from __future__ import annotations

import pytest

from tests.board.browser import new_driver


@pytest.fixture(scope="module")
def driver():
    browser = new_driver()
    yield browser
    browser.quit()
