from tests.helpers import Api, SeededRealm, assert_json_success


def test_own_profile(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(realm.hamlet, "users/me"))
    assert body["user_id"] == realm.hamlet.id
    assert body["full_name"] == "King Hamlet"
