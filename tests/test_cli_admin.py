"""``palaver reload-clients`` (deactivate-realm and reactivate-realm: tests/admin/)."""

from __future__ import annotations

from palaver.actions.web_reload import do_reload_web_clients
from palaver.models import Realm
from palaver.services import Services
from tests.helpers import EventRecorder, SeededRealm
from tests.test_cli import Cli, cli, cli_env  # noqa: F401  (fixtures)


def test_reload_clients(cli: Cli, realm: SeededRealm, services: Services, events: EventRecorder) -> None:  # noqa: F811
    out = cli.ok(f"reload-clients --realm {realm.string_id} --immediate")
    assert out == f"Web clients of {realm.string_id!r} asked to reload\n"
    # The command publishes on its own services' bus; the action itself, on this one:
    with services.db.session() as session:
        row = session.get(Realm, realm.id)
        assert row is not None
        do_reload_web_clients(session, row, immediate=False)
    [(event, users)] = events.of_type("web_reload_client")
    assert event == {"type": "web_reload_client", "immediate": False}
    assert realm.hamlet.id in users
