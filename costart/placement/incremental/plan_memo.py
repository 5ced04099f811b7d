"""`PlanMemo`: `plan_gang` answers reused within a session and across sessions."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import compress

from costart.domain.spec_types import Shape
from costart.placement.capacity import CapacityView, Vec
from costart.placement.cluster import Cluster
from costart.placement.constraints import Scope
from costart.placement.planner import Demand, Plan, Shortfall, plan_gang

MAX_MEMO_ANSWERS = 4096


class PlanMemo:
    """`plan_gang` answers reused within a session and across sessions.

    A plan is a function of the demands, the scopes and, of the capacity, only what the
    search reads: per demanded shape, the tasks that fit on each node, the capacity of
    the nodes where one fits (what a take leaves there), and the preferred view's fit
    counts. Two levels, both exact:

    * within a session, by the views' keys (which change whenever their capacity may
      have, see `CapacityView.key`): in a busy session most groups fail against unchanged
      capacity, and many ask alike;
    * across sessions, by that capacity content itself: a waiting group asks again
      each session, and usually nothing it could use has changed (capacity elsewhere
      in the cluster, of another GPU type, does not enter its key).

    Views without a key are never memoised. Returned plans are shared: read them,
    never change them. `new_session` must be called at the start of every session.
    """

    def __init__(self, cluster: Cluster, max_answers: int = MAX_MEMO_ANSWERS) -> None:
        self.cluster = cluster
        self.max_answers = max_answers
        self._answers: dict[Hashable, Plan | Shortfall] = {}
        self._by_content: dict[Hashable, Plan | Shortfall] = {}
        # What a view offers one shape (see `capacity_read`), as a number: equal numbers,
        # equal content. Numbers are never reused, so answers keyed by them stay exact.
        self._numbers: dict[Hashable, int] = {}
        self._next_number = 0

    def new_session(self) -> None:
        """Forget what is keyed by view versions (those keys restart each session)."""
        self._answers = {}
        if len(self._by_content) > self.max_answers or len(self._numbers) > self.max_answers:
            self._by_content = {}  # only reuse is lost, never an answer's value
            self._numbers = {}

    def plan(
        self,
        demands: Sequence[Demand],
        scopes: Sequence[Scope],
        view: CapacityView,
        prefer: CapacityView | None = None,
    ) -> Plan | Shortfall:
        if view.key is None or (prefer is not None and prefer.key is None):
            return plan_gang(self.cluster, demands, scopes, view, prefer)
        asked = (tuple(demands), tuple(scopes))
        key = (view.key, None if prefer is None else prefer.key, asked)
        answer = self._answers.get(key)
        if answer is None:
            # A view's version changes with every claim or take, so the content is read
            # each time (looking it up by view keys first almost never found it).
            avail = view.avail_list()  # one copy for every shape of the gang
            numbers = self._numbers
            content: list[Hashable] = [asked]
            for shape in dict.fromkeys([d.shape for d in demands]):
                read = capacity_read(shape, view, prefer, avail)
                number = numbers.setdefault(read, self._next_number + 1)  # hashed once
                self._next_number = max(self._next_number, number)
                content.append(number)
            by_content = tuple(content)
            answer = self._by_content.get(by_content)
            if answer is None:
                answer = plan_gang(self.cluster, demands, scopes, view, prefer)
                self._by_content[by_content] = answer
            self._answers[key] = answer
        return answer


def capacity_read(
    shape: Shape,
    view: CapacityView,
    prefer: CapacityView | None,
    avail: Sequence[Vec] | None = None,
) -> Hashable:
    """What of the capacity `plan_gang` can read for tasks of ``shape`` (see
    `PlanMemo`): the fit counts of ``view`` and ``prefer`` and the capacity of the nodes
    where a task fits. The search skips nodes where none fits (takes only shrink
    capacity), so the rest of the cluster cannot change its answer. ``avail``:
    ``view.avail_list()``, when the caller already has it."""
    fits = view.fits(shape)
    return (
        shape,
        tuple(fits),
        tuple(compress(view.avail_list() if avail is None else avail, fits)),
        None if prefer is None else tuple(prefer.fits(shape)),
    )
