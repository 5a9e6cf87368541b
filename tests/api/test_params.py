"""The parameter layer: typed view arguments from form, multipart, JSON, query and path.

Unit tests drive ``build_param_specs``/``parse_params`` with small views; HTTP tests mount a
throwaway router so every encoding real clients use goes through the whole pipeline.
"""

from __future__ import annotations

import enum
import json
from collections.abc import Iterator
from typing import Annotated, Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict, Field, field_validator
from starlette.datastructures import UploadFile

from palaver.api.context import Ctx
from palaver.api.params import ApiParam, RawParams, build_param_specs, parse_params
from palaver.api.routing import ApiRouter, JsonDict
from palaver.app import create_app
from palaver.config import Settings
from palaver.lib.exceptions import JsonableError
from palaver.models import UserProfile
from palaver.services import Services
from tests.client import TestClient
from tests.helpers import Api, SeededRealm, assert_json_error, assert_json_success, basic_auth


class Color(enum.IntEnum):
    RED = 1
    GREEN = 2


class Shape(enum.Enum):
    ROUND = "round"
    SQUARE = "square"


class Item(BaseModel):
    model_config = ConfigDict(extra="forbid")
    id: int
    value: str | list[int] | None = None


def parse(view: Any, path: dict[str, Any] | None = None, **values: Any) -> tuple[dict[str, Any], list[str]]:
    specs = build_param_specs(view, set(path or {}))
    return parse_params(specs, RawParams(values=values, files={}, path=path or {}))


def parse_error(view: Any, path: dict[str, Any] | None = None, **values: Any) -> dict[str, Any]:
    with pytest.raises(JsonableError) as info:
        parse(view, path, **values)
    assert info.value.http_status == 400
    return info.value.to_dict()


def assert_invalid(view: Any, msg: str, var_name: str = "x", **values: Any) -> None:
    error = parse_error(view, **values)
    assert error == {"result": "error", "msg": msg, "code": "REQUEST_VARIABLE_INVALID", "var_name": var_name}


# -- Decoding: strings raw, everything else JSON text -------------------------------------------


def test_string_parameters_take_the_text_as_it_is() -> None:
    def view(ctx: Ctx, content: str, topic: str | None = None) -> None: ...

    kwargs, _ = parse(view, content="123", topic='"quoted"')
    assert kwargs == {"content": "123", "topic": '"quoted"'}
    kwargs, _ = parse(view, content="[1, 2]", topic="null")
    assert kwargs == {"content": "[1, 2]", "topic": "null"}
    kwargs, _ = parse(view, content="")
    assert kwargs == {"content": "", "topic": None}


def test_string_literals_and_string_enums_are_raw_text() -> None:
    def view(ctx: Ctx, op: Literal["add", "remove"], shape: Shape = Shape.ROUND) -> None: ...

    kwargs, _ = parse(view, op="add", shape="square")
    assert kwargs == {"op": "add", "shape": Shape.SQUARE}
    assert_invalid(view, "Invalid op", var_name="op", op='"add"')
    assert_invalid(view, "Invalid shape", var_name="shape", op="add", shape="triangle")


def test_non_string_types_are_decoded_from_json_text() -> None:
    def view(
        ctx: Ctx, n: int, flag: bool, ids: list[int], obj: dict[str, int], ratio: float, maybe: int | None
    ) -> None: ...

    kwargs, ignored = parse(
        view, n="42", flag="true", ids="[1, 2, 3]", obj='{"a": 1}', ratio="1.5", maybe="null"
    )
    assert kwargs == {"n": 42, "flag": True, "ids": [1, 2, 3], "obj": {"a": 1}, "ratio": 1.5, "maybe": None}
    assert ignored == []
    kwargs, _ = parse(view, n="-7", flag="false", ids="[]", obj="{}", ratio="2", maybe="5")
    assert kwargs == {"n": -7, "flag": False, "ids": [], "obj": {}, "ratio": 2.0, "maybe": 5}


def test_enums_and_literals_of_other_types_take_their_json_values() -> None:
    def view(ctx: Ctx, color: Color, level: Literal[1, 2, 3] = 1) -> None: ...

    kwargs, _ = parse(view, color="2", level="3")
    assert kwargs == {"color": Color.GREEN, "level": 3}
    assert_invalid(view, "Invalid color", var_name="color", color="7")
    assert_invalid(view, "Invalid level", var_name="level", color="1", level="4")


def test_invalid_json_names_the_argument() -> None:
    def view(ctx: Ctx, x: int = 0, flags: list[str] | None = None) -> None: ...

    for bad in ["abc", "", "True", "[1, 2", "{'a': 1}", "NaN", "Infinity", "007", "1 2"]:
        assert parse_error(view, x=bad) == {
            "result": "error",
            "msg": 'Argument "x" is not valid JSON.',
            "code": "INVALID_JSON",
            "var_name": "x",
        }, bad
    assert parse_error(view, flags="read")["msg"] == 'Argument "flags" is not valid JSON.'


def test_missing_required_argument() -> None:
    def view(ctx: Ctx, content: str, to: int, topic: str = "default") -> None: ...

    assert parse_error(view, to="1") == {
        "result": "error",
        "msg": "Missing 'content' argument",
        "code": "REQUEST_VARIABLE_MISSING",
        "var_name": "content",
    }
    error = parse_error(view, content="hi")
    assert (error["msg"], error["code"], error["var_name"]) == (
        "Missing 'to' argument",
        "REQUEST_VARIABLE_MISSING",
        "to",
    )
    kwargs, _ = parse(view, content="hi", to="1")
    assert kwargs == {"content": "hi", "to": 1, "topic": "default"}


# -- Type errors ------------------------------------------------------------------------------


def test_integer_type_errors() -> None:
    def view(ctx: Ctx, x: int) -> None: ...

    for bad in ['"5"', "1.5", "1.0", "true", "[1]", "{}", "null", "1e3"]:
        assert_invalid(view, "x is not an integer", x=bad)


def test_list_element_errors_name_the_index() -> None:
    def view(ctx: Ctx, x: list[int]) -> None: ...

    assert_invalid(view, "x[1] is not an integer", x='[1, "2"]')
    assert_invalid(view, "x[2] is not an integer", x="[1, 2, true]")
    assert_invalid(view, "x is not a list", x="5")
    assert_invalid(view, "x is not a list", x='{"a": 1}')


def test_boolean_type_errors() -> None:
    def view(ctx: Ctx, x: bool) -> None: ...

    for bad in ["1", "0", '"true"', "null", "[]"]:
        assert_invalid(view, "x is not a boolean", x=bad)


def test_other_type_errors() -> None:
    def view(
        ctx: Ctx,
        s: Annotated[str, ApiParam(json=True)] = "",
        d: dict[str, int] | None = None,
        f: float = 0,
        short: Annotated[str, Field(max_length=3)] = "",
        small: Annotated[int, Field(ge=0, le=10)] = 0,
    ) -> None: ...

    assert_invalid(view, "s is not a string", var_name="s", s="5")
    assert_invalid(view, "d is not a dict", var_name="d", d="[1]")
    assert_invalid(view, 'd["a"] is not an integer', var_name="d", d='{"a": "b"}')
    assert_invalid(view, "f is not a float", var_name="f", f='"1.5"')
    assert_invalid(view, "short is too long (limit: 3 characters)", var_name="short", short="abcd")
    assert_invalid(view, "small is too small", var_name="small", small="-1")
    assert_invalid(view, "small is too large", var_name="small", small="11")


def test_errors_inside_objects_name_the_field() -> None:
    def view(ctx: Ctx, x: list[Item]) -> None: ...

    kwargs, _ = parse(view, x='[{"id": 1}, {"id": 2, "value": [3]}]')
    assert kwargs["x"] == [Item(id=1), Item(id=2, value=[3])]
    assert_invalid(view, 'x[0]["id"] is not an integer', x='[{"id": "1"}]')
    assert_invalid(view, 'Invalid x[1]["id"]', x='[{"id": 1}, {"value": "a"}]')
    assert_invalid(view, 'Invalid x[0]["extra"]', x='[{"id": 1, "extra": 2}]')


def test_unrecognised_failures_say_invalid() -> None:
    def view(ctx: Ctx, x: Literal["a", "b"] | None = None) -> None: ...

    assert_invalid(view, "Invalid x", x="c")


class Named(BaseModel):
    name: str

    @field_validator("name")
    @classmethod
    def _no_spaces(cls, value: str) -> str:
        if " " in value:
            raise ValueError("Names cannot contain spaces")
        return value


def test_validator_messages_reach_the_client() -> None:
    def view(ctx: Ctx, x: Named) -> None: ...

    assert_invalid(view, "Names cannot contain spaces", x='{"name": "a b"}')


def test_json_forced_string_must_be_json() -> None:
    def view(ctx: Ctx, x: Annotated[str, ApiParam(json=True)]) -> None: ...

    assert parse(view, x='"abc"')[0] == {"x": "abc"}
    assert parse_error(view, x="abc")["code"] == "INVALID_JSON"
    assert_invalid(view, "x is not a string", x="[1]")


# -- Unions of text and JSON ------------------------------------------------------------------


def test_union_of_string_and_json_list() -> None:
    def view(ctx: Ctx, to: str | list[int]) -> None: ...

    assert parse(view, to="general")[0] == {"to": "general"}
    assert parse(view, to="[1, 2]")[0] == {"to": [1, 2]}
    # Text that merely reads as a JSON scalar is still the string it was sent as.
    assert parse(view, to="123")[0] == {"to": "123"}
    assert parse(view, to="true")[0] == {"to": "true"}
    assert parse(view, to="null")[0] == {"to": "null"}
    # Text that decodes to a list was meant as one, and its errors are reported.
    assert_invalid(view, "to[1] is not an integer", var_name="to", to='[1, "a"]')


def test_union_errors_name_the_deepest_failure() -> None:
    def view(ctx: Ctx, x: int | list[int]) -> None: ...

    assert parse(view, x="5")[0] == {"x": 5}
    assert parse(view, x="[5]")[0] == {"x": [5]}
    assert_invalid(view, "x[1] is not an integer", x="[1, 1.5]")
    assert_invalid(view, "x is not an integer", x='"a"')


def test_union_of_literal_and_integer() -> None:
    def view(ctx: Ctx, anchor: int | Literal["newest", "oldest"]) -> None: ...

    assert parse(view, anchor="newest")[0] == {"anchor": "newest"}
    assert parse(view, anchor="17")[0] == {"anchor": 17}
    assert_invalid(view, "Invalid anchor", var_name="anchor", anchor="middle")


# -- Names -------------------------------------------------------------------------------------


def test_aliases_and_request_names() -> None:
    def view(
        ctx: Ctx,
        topic: Annotated[str | None, ApiParam(aliases=("subject",))] = None,
        type_: Annotated[str, ApiParam(name="type")] = "stream",
    ) -> None: ...

    assert parse(view, subject="old name")[0] == {"topic": "old name", "type_": "stream"}
    assert parse(view, topic="new", subject="old")[0]["topic"] == "new"
    kwargs, ignored = parse(view, type="direct", type_="ignored")
    assert kwargs == {"topic": None, "type_": "direct"}
    assert ignored == ["type_"]


def test_alias_with_invalid_json_names_what_was_sent() -> None:
    def view(ctx: Ctx, stream_id: Annotated[int, ApiParam(aliases=("channel_id",))]) -> None: ...

    assert parse(view, channel_id="9")[0] == {"stream_id": 9}
    assert parse_error(view, channel_id="nine")["msg"] == 'Argument "channel_id" is not valid JSON.'
    assert parse_error(view)["msg"] == "Missing 'stream_id' argument"


def test_unknown_parameters_are_reported_sorted() -> None:
    def view(ctx: Ctx, content: str = "") -> None: ...

    kwargs, ignored = parse(view, zeta="1", content="x", alpha="2", dont_block="true")
    assert kwargs == {"content": "x"}
    assert ignored == ["alpha", "dont_block", "zeta"]


def test_documentation_only_parameters_are_accepted() -> None:
    def view(ctx: Ctx, comment: Annotated[str | None, ApiParam(documentation_only=True)] = None) -> None: ...

    assert parse(view, comment="hello") == ({"comment": "hello"}, [])


def test_catch_all_parameters_take_nothing_from_the_request() -> None:
    def view(ctx: Ctx, known: int = 0, **rest: Any) -> None: ...

    assert [spec.arg_name for spec in build_param_specs(view, set())] == ["known"]
    assert parse(view, known="1", other="2") == ({"known": 1}, ["other"])


# -- Path parameters ---------------------------------------------------------------------------


def test_path_segments_are_plain_text_not_json() -> None:
    def view(ctx: Ctx, draft_id: int, name: str) -> None: ...

    assert parse(view, {"draft_id": "007", "name": "123"})[0] == {"draft_id": 7, "name": "123"}
    assert parse(view, {"draft_id": 12, "name": "a b"})[0] == {"draft_id": 12, "name": "a b"}
    error = parse_error(view, {"draft_id": "abc", "name": "x"})
    assert (error["msg"], error["code"]) == ("draft_id is not an integer", "REQUEST_VARIABLE_INVALID")


def test_path_parameters_are_not_reported_as_ignored() -> None:
    def view(ctx: Ctx, user_id: int) -> None: ...

    assert parse(view, {"user_id": 5}) == ({"user_id": 5}, [])


# -- Values no database can store --------------------------------------------------------------


def test_integers_beyond_64_bits_are_rejected() -> None:
    def view(ctx: Ctx, x: int = 0, ids: list[int] | None = None) -> None: ...

    assert parse(view, x=str(2**63 - 1))[0]["x"] == 2**63 - 1
    assert parse(view, x=str(-(2**63)))[0]["x"] == -(2**63)
    assert_invalid(view, "x is too large", x=str(2**63))
    assert_invalid(view, "x is too large", x=str(2**64 - 1))
    assert_invalid(view, "ids[1] is too large", var_name="ids", ids=f"[1, {2**63}]")
    assert_invalid(view, "x is too large", x=str(10**30))
    assert_invalid(view, "x is too small", x=str(-(10**30)))
    error = parse_error(view, {"x": 2**70})
    assert error["msg"] == "x is too large"


def test_nul_characters_are_rejected() -> None:
    def view(ctx: Ctx, name: str = "", names: list[str] | None = None, to: str | list[int] = "") -> None: ...

    assert_invalid(view, "name contains a NUL character", var_name="name", name="a\x00b")
    assert_invalid(view, "names[0] contains a NUL character", var_name="names", names='["a\\u0000"]')
    assert_invalid(view, "to contains a NUL character", var_name="to", to="general\x00")
    assert parse(view, name="tab\tand newline\n")[0]["name"] == "tab\tand newline\n"


def test_deeply_nested_json_is_an_error_not_a_crash() -> None:
    def view(ctx: Ctx, x: list[Any]) -> None: ...

    assert parse(view, x="[" * 50 + "]" * 50)[0]["x"] is not None
    assert parse_error(view, x="[" * 5000 + "]" * 5000)["code"] == "INVALID_JSON"
    nested: list[Any] = []
    for _ in range(2000):
        nested = [nested]
    assert parse_error(view, x=nested)["msg"] == "Invalid x"


# -- JSON request bodies arrive decoded --------------------------------------------------------


def test_decoded_json_values() -> None:
    def view(ctx: Ctx, content: str, n: int, ids: list[int], flag: bool = False) -> None: ...

    kwargs, _ = parse(view, content="hi", n=3, ids=[1, 2], flag=True)
    assert kwargs == {"content": "hi", "n": 3, "ids": [1, 2], "flag": True}
    # JSON text inside a JSON body is read as JSON too (clients that double-encode).
    assert parse(view, content="hi", n="3", ids="[1]")[0]["ids"] == [1]
    assert_invalid(view, "content is not a string", var_name="content", content=5, n=1, ids=[])
    assert_invalid(view, "n is not an integer", var_name="n", content="", n=True, ids=[])
    assert_invalid(view, "ids[0] is not an integer", var_name="ids", content="", n=1, ids=["1"])


# =============================================================================================
# Through HTTP, with a throwaway router
# =============================================================================================

router = ApiRouter()


@router.post("/echo")
def echo_post(
    ctx: Ctx,
    content: str,
    n: int = 0,
    flag: bool = False,
    ids: list[int] | None = None,
    to: str | list[int] = "",
) -> JsonDict:
    return {"content": content, "n": n, "flag": flag, "ids": ids, "to": to}


@router.patch("/echo")
def echo_patch(ctx: Ctx, content: str = "", n: int = 0) -> JsonDict:
    return {"content": content, "n": n}


@router.delete("/echo")
def echo_delete(ctx: Ctx, ids: list[int]) -> JsonDict:
    return {"ids": ids}


@router.get("/echo")
def echo_get(ctx: Ctx, ids: list[int] | None = None, flag: bool = False) -> JsonDict:
    return {"ids": ids, "flag": flag}


uploads: list[UploadFile] = []


@router.post("/upload")
def upload(ctx: Ctx, file: UploadFile, title: str = "") -> JsonDict:
    uploads.append(file)
    return {"name": file.filename, "size": len(file.file.read()), "title": title}


@pytest.fixture
def echo(settings: Settings, services: Services, realm: SeededRealm) -> Iterator[Echo]:
    client = TestClient(create_app(settings, services, routers=[router]), base_url="http://palaver.test")
    yield Echo(client, realm)
    client.close()


class Echo:
    """Raw requests (the encoding is what is under test) as King Hamlet."""

    def __init__(self, client: TestClient, realm: SeededRealm) -> None:
        self.client = client
        self.headers = {"host": realm.host, "authorization": basic_auth(realm.hamlet)}

    def request(self, method: str, path: str = "/api/v1/echo", **kw: Any) -> Any:
        headers = {**self.headers, **kw.pop("headers", {})}
        return self.client.request(method, path, headers=headers, **kw)

    def raw(self, method: str, body: bytes, content_type: str, path: str = "/api/v1/echo") -> Any:
        return self.request(method, path, content=body, headers={"content-type": content_type})


FORM = "application/x-www-form-urlencoded"


def multipart(fields: dict[str, str], boundary: str = "palaverboundary") -> tuple[bytes, str]:
    """A multipart/form-data body of plain fields, as zulip-js builds with FormData."""
    parts = []
    for name, value in fields.items():
        parts.append(
            f'--{boundary}\r\nContent-Disposition: form-data; name="{name}"\r\n\r\n{value}\r\n'.encode()
        )
    body = b"".join(parts) + f"--{boundary}--\r\n".encode()
    return body, f"multipart/form-data; boundary={boundary}"


def test_form_encoded_post_like_the_python_client(echo: Echo) -> None:
    body = assert_json_success(
        echo.request("POST", data={"content": "123", "n": "5", "flag": "true", "ids": "[1,2]", "to": "[3]"})
    )
    assert (body["content"], body["n"], body["flag"], body["ids"], body["to"]) == (
        "123",
        5,
        True,
        [1, 2],
        [3],
    )
    assert "ignored_parameters_unsupported" not in body


def test_multipart_post_like_zulip_js(echo: Echo) -> None:
    payload, content_type = multipart({"content": "héllo 123", "n": "7", "ids": "[4]", "to": "general"})
    body = assert_json_success(echo.raw("POST", payload, content_type))
    assert (body["content"], body["n"], body["ids"], body["to"]) == ("héllo 123", 7, [4], "general")


def test_multipart_upload_with_fields(echo: Echo) -> None:
    uploads.clear()
    response = echo.request(
        "POST",
        "/api/v1/upload",
        data={"title": "notes"},
        files={"whatever-name.txt": ("whatever-name.txt", b"hello world", "text/plain")},
    )
    body = assert_json_success(response)
    assert (body["name"], body["size"], body["title"]) == ("whatever-name.txt", 11, "notes")
    # The spooled upload is closed once the response is out.
    assert uploads[0].file.closed


def test_json_object_body(echo: Echo) -> None:
    response = echo.request("POST", json={"content": "hi", "n": 2, "flag": True, "ids": [1], "to": "x"})
    body = assert_json_success(response)
    assert (body["content"], body["n"], body["flag"], body["ids"], body["to"]) == ("hi", 2, True, [1], "x")
    response = echo.raw("POST", b'{"content": "hi", "n": "3"}', "application/json; charset=utf-8")
    assert assert_json_success(response)["n"] == 3


def test_query_string_parameters_on_patch_and_delete_like_zulip_js(echo: Echo) -> None:
    body = assert_json_success(echo.request("PATCH", params={"content": "from query", "n": "4"}))
    assert (body["content"], body["n"]) == ("from query", 4)
    body = assert_json_success(echo.request("DELETE", params={"ids": "[1, 2]"}))
    assert body["ids"] == [1, 2]


def test_body_wins_over_query_string(echo: Echo) -> None:
    body = assert_json_success(echo.request("PATCH", params={"n": "1", "content": "q"}, data={"n": "2"}))
    assert (body["n"], body["content"]) == (2, "q")


def test_get_parameters_from_query_string(echo: Echo) -> None:
    body = assert_json_success(echo.request("GET", params={"ids": "[9]", "flag": "true"}))
    assert (body["ids"], body["flag"]) == ([9], True)


def test_ignored_parameters_on_success_only(echo: Echo) -> None:
    body = assert_json_success(echo.request("POST", data={"content": "x", "zzz": "1", "aaa": "2"}))
    assert body["ignored_parameters_unsupported"] == ["aaa", "zzz"]
    body = assert_json_error(
        echo.request("POST", data={"content": "x", "n": "bad", "zzz": "1"}),
        'Argument "n" is not valid JSON.',
        code="INVALID_JSON",
    )
    assert "ignored_parameters_unsupported" not in body


def test_dont_block_from_client_retries_is_harmless(echo: Echo) -> None:
    body = assert_json_success(echo.request("POST", data={"content": "x", "dont_block": "true"}))
    assert body["ignored_parameters_unsupported"] == ["dont_block"]
    body = assert_json_success(echo.request("GET", params={"dont_block": "true"}))
    assert body["ignored_parameters_unsupported"] == ["dont_block"]


def test_errors_through_http(echo: Echo) -> None:
    assert_json_error(
        echo.request("POST", data={}), "Missing 'content' argument", code="REQUEST_VARIABLE_MISSING"
    )
    body = assert_json_error(
        echo.request("POST", data={"content": "x", "ids": '[1, "a"]'}),
        "ids[1] is not an integer",
        code="REQUEST_VARIABLE_INVALID",
    )
    assert body["var_name"] == "ids"
    assert_json_error(
        echo.request("POST", data={"content": "x", "flag": "yes"}), 'Argument "flag" is not valid JSON.'
    )
    assert_json_error(echo.request("POST", data={"content": "x", "flag": "1"}), "flag is not a boolean")


@pytest.mark.parametrize(
    ("body", "content_type", "msg"),
    [
        (b"content=%ff", FORM, "Malformed request body"),
        (b"content=%c3%28", FORM, "Malformed request body"),
        (b"content=\xff\xfe", FORM, "Malformed request body"),
        (b"\xff=1", FORM, "Malformed request body"),
        (b"garbage", "multipart/form-data", "Malformed request body"),
        (b"garbage", "multipart/form-data; boundary=xyz", "Malformed request body"),
        (
            b"--xyz\r\nContent-Disposition: form-data\r\n\r\nvalue\r\n--xyz--\r\n",
            "multipart/form-data; boundary=xyz",
            "Malformed request body",
        ),
        (b"[1, 2]", "application/json", "Malformed JSON body: expected an object"),
        (b'"content"', "application/json", "Malformed JSON body: expected an object"),
        (b"null", "application/json", "Malformed JSON body: expected an object"),
        (b"{bad", "application/json", "Malformed JSON body"),
        (b"\xff\xfe{}", "application/json", "Malformed JSON body"),
        (b'{"n": NaN}', "application/json", "Malformed JSON body"),
        (b"[" * 5000 + b"]" * 5000, "application/json", "Malformed JSON body"),
    ],
)
def test_malformed_bodies_get_a_400_envelope(echo: Echo, body: bytes, content_type: str, msg: str) -> None:
    response = echo.raw("POST", body, content_type)
    assert response.headers["content-type"] == "application/json"
    assert_json_error(response, msg)


def test_malformed_query_string_gets_a_400_envelope(echo: Echo) -> None:
    assert_json_error(echo.request("GET", "/api/v1/echo?ids=%ff"), "Malformed request body")


def test_stray_percent_signs_are_kept_literally(echo: Echo) -> None:
    # As in Django: an escape that is not one is text, not an error.
    body = assert_json_success(echo.raw("POST", b"content=100%zz", FORM))
    assert body["content"] == "100%zz"


def test_empty_json_body_is_no_parameters(echo: Echo) -> None:
    assert_json_error(echo.raw("POST", b"", "application/json"), "Missing 'content' argument")


def test_oversized_integer_and_nul_through_http_are_400(echo: Echo) -> None:
    assert_json_error(echo.request("POST", data={"content": "x", "n": str(2**64)}), "n is too large")
    response = echo.raw("POST", b'{"content": "x", "n": 123456789012345678901234567890}', "application/json")
    assert_json_error(response, "n is too large")
    assert_json_error(echo.request("POST", data={"content": "a\x00b"}), "content contains a NUL character")


# -- Real endpoints with client encodings ------------------------------------------------------


def test_patch_settings_with_query_string(api: Api, realm: SeededRealm, services: Services) -> None:
    response = api.client.patch(
        "/api/v1/settings?color_scheme=2",
        headers={"host": realm.host, "authorization": basic_auth(realm.hamlet)},
    )
    assert_json_success(response)
    with services.db.session() as session:
        user = session.get(UserProfile, realm.hamlet.id)
        assert user is not None
        assert user.color_scheme == 2


def test_patch_settings_multipart(api: Api, realm: SeededRealm, services: Services) -> None:
    payload, content_type = multipart({"color_scheme": "3", "enter_sends": "true"})
    response = api.client.patch(
        "/api/v1/settings",
        content=payload,
        headers={"host": realm.host, "authorization": basic_auth(realm.hamlet), "content-type": content_type},
    )
    assert_json_success(response)
    with services.db.session() as session:
        user = session.get(UserProfile, realm.hamlet.id)
        assert user is not None
        assert (user.color_scheme, user.enter_sends) == (3, True)


def test_get_users_with_json_list_in_query(api: Api, realm: SeededRealm) -> None:
    body = assert_json_success(api.get(realm.hamlet, "users", {"user_ids": [realm.othello.id]}))
    assert [m["user_id"] for m in body["members"]] == [realm.othello.id]
    assert_json_error(
        api.get(realm.hamlet, "users", {"user_ids": json.dumps([2**63])}), "user_ids[0] is too large"
    )
