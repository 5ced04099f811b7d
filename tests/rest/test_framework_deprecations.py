"""The app is built without the web framework's notes about what stops working in its
next major version: every handler names its dependencies, bodies and renamed query
parameters the way that version reads them."""

from __future__ import annotations

import warnings

from costart.rest import Tokens, create_app
from docs.gen.service_pages import empty_service


def test_building_the_app_and_its_schema_warns_of_nothing_deprecated() -> None:
    with empty_service() as service, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app = create_app(service, Tokens({}), service.watch)
        app.openapi_schema.to_schema()
    deprecated = [str(w.message) for w in caught if issubclass(w.category, DeprecationWarning)]
    assert deprecated == []
