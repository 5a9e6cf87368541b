"""HTTP layer: one module per resource, each with an ``ApiRouter`` named ``router``.

Modules are discovered rather than listed, so adding a resource touches only its module.
"""

from __future__ import annotations

import importlib
import pkgutil

from palaver.api.routing import ApiRouter


def discover_routers() -> list[ApiRouter]:
    routers = []
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda m: m.name):
        module = importlib.import_module(f"{__name__}.{info.name}")
        router = getattr(module, "router", None)
        if isinstance(router, ApiRouter):
            routers.append(router)
    return routers
