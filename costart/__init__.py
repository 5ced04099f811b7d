"""costart: co-start groups for cluster controllers.

The public surface for an embedding controller::

    from costart import Controller, Settings, parse_spec
    from costart.bootstrap import bootstrap

`bootstrap(Settings(...))` builds a `Controller` with its store, placement step and clock
(docs/design.md §2; the module `costart.bootstrap` is the composition root, so the function is
imported from it); `parse_spec` reads a group spec (TOML or JSON) and raises `SpecError`
naming the field. The names resolve on first use, so ``import costart.domain`` stays free of the
application and its store.
"""

from typing import TYPE_CHECKING

from costart._lazy import lazy_exports

if TYPE_CHECKING:
    from costart.bootstrap import Settings
    from costart.controller import Controller
    from costart.domain.actors import Actor
    from costart.domain.errors import Conflict, DomainError, NotFound, SpecError
    from costart.domain.spec import parse_spec
    from costart.domain.spec_types import GroupSpec
    from costart.domain.states import GroupState, MemberState
    from costart.eventlog.rollback import LastKnown

__version__ = "0.1.0"

__all__ = [
    "Actor",
    "Conflict",
    "Controller",
    "DomainError",
    "GroupSpec",
    "GroupState",
    "LastKnown",
    "MemberState",
    "NotFound",
    "Settings",
    "SpecError",
    "__version__",
    "parse_spec",
]

__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "Actor": "costart.domain.actors",
        "Conflict": "costart.domain.errors",
        "Controller": "costart.controller",
        "DomainError": "costart.domain.errors",
        "GroupSpec": "costart.domain.spec_types",
        "GroupState": "costart.domain.states",
        "LastKnown": "costart.eventlog.rollback",
        "MemberState": "costart.domain.states",
        "NotFound": "costart.domain.errors",
        "Settings": "costart.bootstrap",
        "SpecError": "costart.domain.errors",
        "parse_spec": "costart.domain.spec",
    },
)
