"""The caller, as a route handler asks for it: the `User` the app's ``user``
dependency (`costart.rest.auth.authenticate`) made from the bearer token, named as a
dependency (inferring it from the parameter's name stops working in Litestar 3)."""

from __future__ import annotations

from typing import TypeAlias

from litestar.di import NamedDependency

from costart.rest.auth import User

CurrentUser: TypeAlias = NamedDependency[User]
