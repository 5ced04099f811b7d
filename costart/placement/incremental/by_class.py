"""Per-node lists made from each node's class: ``[objects[k] for k in classes]`` in C.

A cold session over a large cluster makes several lists of one shared object per node,
chosen by the node's class (its free vector, say): most nodes are alike, so a class
number per node (a byte, while there are at most 256 classes) and one object per class
say it all. Made by a comprehension that costs about 260 instructions a node; here by
an object array's take (`numpy`), a few dozen (ADR 0159). The plain comprehension is
the reference the tests compare it with, and what a list of classes (more than 256 of
them) is read by.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeVar

import numpy as np

T = TypeVar("T")


def by_class(objects: Sequence[T], classes: bytearray | bytes | list[int]) -> list[T]:
    """``objects[k]`` for each class ``k`` of ``classes``, in order (the entries are the
    very objects of ``objects``). A class outside ``objects`` raises `IndexError`."""
    if isinstance(classes, list):
        return [objects[k] for k in classes]
    table = np.empty(len(objects), dtype=object)
    for k, obj in enumerate(objects):  # (one by one: numpy would read a tuple as a row)
        table[k] = obj
    out: list[T] = table[np.frombuffer(classes, dtype=np.uint8)].tolist()
    return out


def by_class_plain(objects: Sequence[T], classes: bytearray | bytes | list[int]) -> list[T]:
    """`by_class`, as a comprehension: the reference."""
    return [objects[k] for k in classes]
