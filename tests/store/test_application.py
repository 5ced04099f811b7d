"""The library's application test cases with ``PERSISTENCE_MODULE=costart.store``.

They build applications from ``os.environ`` (as the library's own SQLite and
Postgres variants do), with the library's default mapper and JSON transcoder:
the store keeps ``state`` as opaque bytes, so it does not depend on the codec.
"""

from __future__ import annotations

import os

from eventsourcing.tests import application as lib

from costart.store.settings import PATH

from .support import TempStores

_KEYS = ("PERSISTENCE_MODULE", PATH)


class WithLmdb:
    expected_factory_topic = "costart.store.factory:Factory"

    def setUp(self) -> None:
        super().setUp()  # type: ignore[misc]
        self.stores = TempStores()
        self._saved = {k: os.environ.get(k) for k in _KEYS}
        os.environ["PERSISTENCE_MODULE"] = "costart.store"
        os.environ[PATH] = self.stores.path()

    def tearDown(self) -> None:
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self.stores.cleanup()
        super().tearDown()  # type: ignore[misc]


class TestApplicationWithLmdb(WithLmdb, lib.ApplicationTestCase):
    pass


class TestExampleApplicationWithLmdb(WithLmdb, lib.ExampleApplicationTestCase):
    pass


del WithLmdb
