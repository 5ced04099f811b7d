"""One meaning per word: no two packages define a public class of the same name.

A public class is one defined at the top level of a module under ``costart/`` whose name
does not start with ``_``. Two of them with one name in two packages make a newcomer
guess which is meant (``Report``, ``TaskView`` and ``Verdict`` each named two unrelated
things once); rename them to say what each is.

The only exemptions are log backends implementing one role under the eventsourcing
library's conventions: the library loads each backend's ``Factory`` by that name from
the module named by ``PERSISTENCE_MODULE``, and the role's errors and records are that
backend's version of one contract. Each is listed below with the role it plays and the
modules that play it; a listed name defined anywhere else still fails.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SOURCE = ROOT / "costart"

# Name -> (the role, the modules each implementing it for one backend).
EXEMPT: dict[str, tuple[str, frozenset[str]]] = {
    "Factory": (
        "the persistence factory the eventsourcing library loads by name from the module"
        " named by PERSISTENCE_MODULE (`costart.eventlog.backends`)",
        frozenset({"costart.eventlog.memory", "costart.store.factory", "costart.pgstore.factory"}),
    ),
    "FencedError": (
        "the backend's `LeaseFencedError`: an append refused because a newer leader holds"
        " the lease (`costart.eventlog.errors`)",
        frozenset({"costart.store.errors", "costart.pgstore.errors"}),
    ),
    "LeaseRecord": (
        "the leader lease (holder, epoch) as the backend stores it, read by its lease (a"
        " `costart.eventlog.lease_keeper.LeaseLike`)",
        frozenset({"costart.store.lease", "costart.pgstore.lease"}),
    ),
}


def module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts).removesuffix(".__init__")


def package_of(module: str) -> str:
    """``costart.store.lease`` -> ``costart.store``; a top-level module is its own."""
    parts = module.split(".")
    return ".".join(parts[:2])


def public_classes(source: str) -> list[str]:
    """The public classes ``source`` defines at its top level."""
    return [
        node.name
        for node in ast.parse(source).body
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_")
    ]


def definitions(modules: dict[str, str]) -> dict[str, set[str]]:
    """Class name -> the modules defining it, for ``modules`` (module name -> source)."""
    found: dict[str, set[str]] = defaultdict(set)
    for module, source in modules.items():
        for name in public_classes(source):
            found[name].add(module)
    return found


def shared_names(modules: dict[str, str]) -> dict[str, list[str]]:
    """Class names defined in more than one package, not exempt, with their modules."""
    shared = {}
    for name, where in definitions(modules).items():
        if len({package_of(m) for m in where}) < 2:
            continue
        if name in EXEMPT and where <= EXEMPT[name][1]:
            continue
        shared[name] = sorted(where)
    return shared


def costart_modules() -> dict[str, str]:
    return {module_name(p): p.read_text() for p in sorted(SOURCE.rglob("*.py"))}


def test_no_two_packages_define_a_public_class_of_the_same_name() -> None:
    assert shared_names(costart_modules()) == {}


def test_every_exemption_is_still_a_backend_role_shared_today() -> None:
    """An exemption names modules that define the class and at least two packages."""
    found = definitions(costart_modules())
    for name, (role, modules) in EXEMPT.items():
        assert role
        assert found[name] == set(modules), name
        assert len({package_of(m) for m in modules}) >= 2, name


def test_the_check_sees_a_shared_name_and_honours_only_listed_backends() -> None:
    modules = {
        "costart.controller": "class Report:\n    pass\n",
        "costart.sim.report": "class Report:\n    pass\nclass _Private:\n    pass\n",
        "costart.replay.why": "class _Private:\n    pass\n",
        "costart.store.factory": "class Factory:\n    pass\n",
        "costart.pgstore.factory": "class Factory:\n    pass\n",
        "costart.store.errors": "class FencedError(Exception):\n    pass\n",
        "costart.rest.errors": "class FencedError(Exception):\n    pass\n",
    }
    assert shared_names(modules) == {
        "Report": ["costart.controller", "costart.sim.report"],
        "FencedError": ["costart.rest.errors", "costart.store.errors"],
    }
