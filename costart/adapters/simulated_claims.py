"""A simulated claim driver for `costart serve` on a laptop.

Real claims (GPUs bound, datasets staged, weights loaded) become READY outside the
controller. This driver stands in for them: every claim of a placed member turns READY
``delay_ns`` after the driver first saw the member waiting, and once a group's barrier
is released it starts the members the dispatch barrier allows (as the embedding cluster
controller would). Not for production: it only exists so a person can watch groups start.
"""

from __future__ import annotations

from costart.adapters.stand_in import CLAIM_DRIVER, current_attempt, start_placed_tasks
from costart.controller import Controller
from costart.domain.errors import DomainError
from costart.logging_setup import library_logger

log = library_logger("costart.claims")


class ClaimDriver:
    def __init__(self, delay_ns: int, start_members: bool = True) -> None:
        if delay_ns < 0:
            raise ValueError("claim delay must not be negative")
        self.delay_ns = delay_ns
        self.start_members = start_members
        self._waiting_since: dict[str, int] = {}  # member ref -> first seen with claims due

    def step(self, controller: Controller, now_ns: int) -> int:
        """Make due claims READY and start allowed members. Returns the commands run."""
        done = 0
        waiting: dict[str, int] = {}
        for group in controller.groups():
            if group.is_terminal:
                continue
            for member in controller.members(group.name):
                ref = f"{group.name}/{member.name}"
                pending = sorted(c for c, s in member.claims.items() if s == "PENDING")
                if member.status == "PLACED" and pending:
                    since = self._waiting_since.get(ref, now_ns)
                    waiting[ref] = since
                    if now_ns - since >= self.delay_ns:
                        done += self._run(lambda r=ref, p=pending: self._ready(controller, r, p))
                elif self.start_members and member.status == "READY" and group.barrier_released:
                    done += self._run(lambda r=ref: start_placed_tasks(controller, r))
        self._waiting_since = waiting
        return done

    @staticmethod
    def _ready(controller: Controller, ref: str, claims: list[str]) -> None:
        attempt = current_attempt(controller, ref)
        for claim in claims:
            controller.claim_ready(ref, claim, attempt, actor=CLAIM_DRIVER)

    @staticmethod
    def _run(command: object) -> int:
        try:
            command()  # type: ignore[operator]
        except DomainError as error:
            # The state moved on under us (a cancel, a timeout): nothing to do any more.
            log.info("claim driver skipped", error=str(error))
            return 0
        return 1
