"""``palaver deactivate-realm``, ``reactivate-realm`` and ``reload-clients``."""

from __future__ import annotations

from palaver.actions.web_reload import do_reload_web_clients
from palaver.models import Realm
from palaver.services import Services
from tests.helpers import Api, EventRecorder, SeededRealm, assert_json_error, assert_json_success
from tests.test_cli import Cli, cli, cli_env  # noqa: F401  (fixtures)


def test_deactivate_and_reactivate(cli: Cli, api: Api, realm: SeededRealm, services: Services) -> None:  # noqa: F811
    assert (
        cli.ok(f"deactivate-realm --realm {realm.string_id}")
        == f"Organization {realm.string_id!r} deactivated\n"
    )
    assert_json_error(api.get(realm.hamlet, "users/me"), "This organization is deactivated", 401)
    with services.db.session() as session:
        row = session.get(Realm, realm.id)
        assert row is not None and row.deactivated
    cli.ok(f"reactivate-realm --realm {realm.string_id}")
    assert_json_success(api.get(realm.hamlet, "users/me"))
    assert cli.fails("deactivate-realm --realm nowhere") == "no organization with string ID 'nowhere'"


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
