"""``palaver reload-clients`` (deactivate-realm and reactivate-realm: tests/admin/)."""

from __future__ import annotations

from palaver.actions.web_reload import do_reload_web_clients
from palaver.models import Realm
from palaver.services import Services
from tests.client import TestClient
from tests.helpers import EventRecorder, SeededRealm
from tests.test_cli import Cli, cli, cli_env  # noqa: F401  (fixtures)


def test_reload_clients(
    cli: Cli,  # noqa: F811
    realm: SeededRealm,
    services: Services,
    client: TestClient,
    events: EventRecorder,
) -> None:
    out = cli.ok(f"reload-clients --realm {realm.string_id} --immediate")
    assert out == f"Web clients of {realm.string_id!r} asked to reload\n"
    # The command's event reaches the running app (``client``'s) through the change log, as
    # it reaches a running server; the action itself publishes on this bus directly:
    with services.db.session() as session:
        row = session.get(Realm, realm.id)
        assert row is not None
        do_reload_web_clients(session, row, immediate=False)
    published = events.of_type("web_reload_client")
    assert [event for event, _ in published] == [
        {"type": "web_reload_client", "immediate": True},
        {"type": "web_reload_client", "immediate": False},
    ]
    assert all(realm.hamlet.id in users for _, users in published)
