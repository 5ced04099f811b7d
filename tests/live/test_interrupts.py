"""The live demo's interrupts: SIGINT and SIGTERM raise KeyboardInterrupt while it runs,
and are remembered even when the exception is swallowed where it landed."""

from __future__ import annotations

import os
import signal
import time

import pytest

from costart.cli.live.run import Interrupts


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_a_signal_raises_and_is_remembered(sig: signal.Signals) -> None:
    interrupts = Interrupts()
    with pytest.raises(KeyboardInterrupt), interrupts.raising():
        os.kill(os.getpid(), sig)
        time.sleep(5)  # the handler runs here
    assert interrupts.received == sig


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_an_interrupt_swallowed_in_a_finalizer_is_still_remembered() -> None:
    interrupts = Interrupts()

    class Finalized:
        def __del__(self) -> None:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler raises here, and Python ignores it ("Exception ignored")

    with interrupts.raising():
        Finalized()  # collected at once: the interrupt never reaches this block
    assert interrupts.received == signal.SIGTERM


def test_the_previous_handlers_come_back() -> None:
    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    with Interrupts().raising():
        assert signal.getsignal(signal.SIGTERM) is not before[signal.SIGTERM]
    assert {sig: signal.getsignal(sig) for sig in before} == before
