"""How many times a member was restarted, as every table says it.

A member's ``restarts`` counts the restarts that consumed its budget; one after a node
loss or a preemption is not counted (``uncounted_restarts``) but is a relaunch all the
same, and the timeline marks it. Shown as the number of relaunches, with the uncounted
ones named, so the RESTARTS column, the board and the timeline's markers agree.
"""

from __future__ import annotations


def restarts_text(restarts: int, uncounted: int) -> str:
    """``3``, or ``3 (1 not counted)``: every restart, naming those the budget did not count."""
    total = restarts + uncounted
    return f"{total} ({uncounted} not counted)" if uncounted else str(total)
