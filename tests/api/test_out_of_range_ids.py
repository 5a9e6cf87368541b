"""IDs no row can have (past 32 bits) in any path get the endpoint's own error.

PostgreSQL refuses to compare a 32-bit column with a larger number, failing the whole
statement; every lookup must treat such an ID as missing instead (``lib/ids.py``).
"""

from __future__ import annotations

import re

import pytest

from palaver.api import discover_routers
from tests.helpers import Api, SeededRealm

_PATH_PARAM = re.compile(r"\{(\w+)(:\w+)?\}")


def _id_endpoints() -> list[tuple[str, str]]:
    found = []
    for router in discover_routers():
        for endpoint in router.endpoints:
            if any(kind == ":int" for _, kind in _PATH_PARAM.findall(endpoint.path)):
                found.append((endpoint.method, endpoint.path))
    return sorted(found)


@pytest.mark.parametrize(("method", "path"), _id_endpoints())
def test_an_id_past_32_bits_is_the_endpoint_s_own_not_found(
    api: Api, realm: SeededRealm, method: str, path: str
) -> None:
    url = _PATH_PARAM.sub(lambda m: str(2**40) if m.group(2) == ":int" else "x", path)
    response = api.request(method, realm.desdemona, url.lstrip("/"), {})
    assert response.status_code < 500, response.text
    assert response.json().get("msg") != "Invalid request data", (method, path)
