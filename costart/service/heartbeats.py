"""Node heartbeats from agents: a node whose agent stops heartbeating is down.

The embedding contract has the host controller report nodes (`Controller.set_node_status`);
over the wire the agents are the host. Each heartbeat notes the time (the service's
clock, outside the domain); the scheduling loop asks for the nodes whose last heartbeat
is older than the timeout and reports them down. A heartbeat from a node that was marked
down brings it up again. Only nodes that have heartbeat at least once are watched: a
cluster without agents (the embedding case) is never marked down by silence.
"""

from __future__ import annotations

import threading


class Heartbeats:
    def __init__(self, timeout_ns: int) -> None:
        if timeout_ns <= 0:
            raise ValueError("the heartbeat timeout must be positive")
        self.timeout_ns = timeout_ns
        self._lock = threading.Lock()
        self._last_ns: dict[str, int] = {}
        self._down: set[str] = set()

    def beat(self, node: str, now_ns: int) -> bool:
        """Note a heartbeat; True if the node had been marked down (it is up again)."""
        with self._lock:
            self._last_ns[node] = now_ns
            was_down = node in self._down
            self._down.discard(node)
            return was_down

    def overdue(self, now_ns: int) -> list[str]:
        """Nodes silent for longer than the timeout and not yet marked down, sorted;
        they are marked down here (reported once)."""
        with self._lock:
            late = sorted(
                node
                for node, last in self._last_ns.items()
                if node not in self._down and now_ns - last > self.timeout_ns
            )
            self._down.update(late)
            return late
