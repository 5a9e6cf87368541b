"""HTTP layer: one module per resource, each with an ``ApiRouter`` named ``router``.

Modules are discovered rather than listed, so adding a resource touches only its module.
"""

from __future__ import annotations

import importlib
import pkgutil
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from palaver.api.routing import ApiRouter


def api_module_names() -> list[str]:
    """Every module of this package, by full name, without importing any of them (the
    workers' supervisor lists them for its fork server, and imports none itself)."""
    modules = sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name)
    return [f"{__name__}.{info.name}" for info in modules]


def discover_routers() -> list[ApiRouter]:
    # Here, not at the top: listing the modules (above) must not import the HTTP layer.
    from palaver.api.routing import ApiRouter  # noqa: PLC0415

    routers = []
    for name in api_module_names():
        module = importlib.import_module(name)
        router = getattr(module, "router", None)
        if isinstance(router, ApiRouter):
            routers.append(router)
    return routers
