"""`CommandBatcher`: commands from the event loop run in batches inside one
`Controller.batch`; each gets its own answer or its own error, and only once durable."""

from __future__ import annotations

import asyncio

import pytest

from costart.controller import Controller
from costart.domain.errors import Conflict
from costart.domain.spec_types import GroupSpec
from costart.replay.rebuild import rebuild
from costart.replay.source import RecorderSource
from costart.service.batcher import CommandBatcher
from tests.builders import ManualClock, a_group


def lmdb_controller(tmp_path) -> Controller:
    env = {"PERSISTENCE_MODULE": "costart.store", "COSTART_LMDB_PATH": str(tmp_path)}
    return Controller(env=env, clock=ManualClock())


def test_concurrent_commands_share_batches_and_each_gets_its_own_answer_once_durable(tmp_path):
    controller = lmdb_controller(tmp_path)
    batches_done: list[int] = []
    batcher = CommandBatcher(
        controller, on_batch=lambda: batches_done.append(controller.world.position)
    )
    specs = [a_group(f"g{i}").with_member("m").build() for i in range(64)]

    def submit(spec: GroupSpec) -> str:
        return controller.submit(spec).name

    async def main() -> list[str]:
        return await asyncio.gather(*(batcher.run(lambda s=s: s, submit) for s in specs))

    names = asyncio.run(main())
    batcher.close()
    assert names == [s.name for s in specs]
    assert 1 <= batcher.batches < len(specs)  # commands in flight together shared batches
    logged = rebuild(RecorderSource(controller.recorder))
    assert sorted(logged.live_names) == sorted(names)  # every answered command is durable
    assert batches_done and batches_done[-1] == logged.position
    controller.close()


def test_a_commands_own_error_fails_only_its_request(tmp_path):
    controller = lmdb_controller(tmp_path)
    batcher = CommandBatcher(controller)

    def bad_spec() -> GroupSpec:
        raise ValueError("bad spec")

    def submit(spec: GroupSpec) -> str:
        return controller.submit(spec).name

    async def main() -> list[object]:
        spec = a_group("same").with_member("m").build()
        return await asyncio.gather(
            batcher.run(lambda: spec, submit),
            batcher.run(lambda: spec, submit),  # the same name again: a conflict
            batcher.run(bad_spec, submit),
            batcher.run(lambda: a_group("other").with_member("m").build(), submit),
            return_exceptions=True,
        )

    answers = asyncio.run(main())
    batcher.close()
    assert answers[0] == "same"
    assert isinstance(answers[1], Conflict)
    assert isinstance(answers[2], ValueError)
    assert answers[3] == "other"
    assert sorted(rebuild(RecorderSource(controller.recorder)).live_names) == ["other", "same"]
    controller.close()


def test_a_failed_write_fails_every_command_of_its_batch(tmp_path, monkeypatch):
    controller = lmdb_controller(tmp_path)
    batcher = CommandBatcher(controller, threads=1)

    def failing_settle() -> None:
        raise OSError("fsync failed")

    monkeypatch.setattr(controller._writer, "settle", failing_settle)

    def submit(spec: GroupSpec) -> str:
        return controller.submit(spec).name

    async def main() -> list[object]:
        specs = [a_group(f"f{i}").with_member("m").build() for i in range(3)]
        return await asyncio.gather(
            *(batcher.run(lambda s=s: s, submit) for s in specs), return_exceptions=True
        )

    answers = asyncio.run(main())
    batcher.close()
    assert all(isinstance(a, OSError) for a in answers), answers
    controller.close()


def test_a_closed_batcher_refuses_new_commands(tmp_path):
    controller = lmdb_controller(tmp_path)
    batcher = CommandBatcher(controller)
    batcher.close()
    with pytest.raises(RuntimeError, match="closed"):
        asyncio.run(batcher.run(lambda: None, lambda _: None))
    controller.close()
