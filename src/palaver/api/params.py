"""The one parameter layer: typed view arguments parsed from form, multipart, query and path.

A view declares its parameters once, as keyword arguments with types and defaults:

    def update_user(ctx: Ctx, user_id: int, full_name: str | None = None,
                    role: Annotated[int | None, ApiParam(json=True)] = None) -> JsonDict

Values arrive as strings. A parameter typed ``str`` (or a union of string literals or a
string enum) takes the string as it is; any other type reads it as JSON text, as Zulip clients
send non-string values JSON-encoded. Path segments are plain text, never JSON. Validation
failures become the client-facing messages of ``_MESSAGES``.
"""

from __future__ import annotations

import enum
import inspect
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import TypeAdapter, ValidationError
from pydantic_core import ErrorDetails, PydanticSerializationError, from_json, to_json
from starlette.datastructures import UploadFile

from palaver.lib.exceptions import (
    InvalidArgumentError,
    InvalidJSONError,
    JsonableError,
    MissingArgumentError,
)


@dataclass(frozen=True)
class ApiParam:
    """Extra facts about a parameter, given through ``Annotated``."""

    # The name clients send, when it is not a Python identifier or differs from the argument.
    name: str | None = None
    # Legacy names accepted too (e.g. ``subject`` for ``topic``); the first one present wins.
    aliases: tuple[str, ...] = ()
    # Force JSON decoding even for string-typed parameters (e.g. a JSON-encoded string).
    json: bool = False
    # Parameter is documented but ignored by the server (still accepted silently).
    documentation_only: bool = False


_NOT_GIVEN: Any = inspect.Parameter.empty


@dataclass(frozen=True)
class ParamSpec:
    arg_name: str
    request_name: str
    aliases: tuple[str, ...]
    adapter: TypeAdapter[Any]
    raw_string: bool
    # For a union that also takes text (``str | list[int]``): validates the text itself
    # against the string members, when it is not JSON or its JSON fits no member.
    text_adapter: TypeAdapter[Any] | None
    is_file: bool
    in_path: bool
    default: Any
    # Accepted and ignored (``ApiParam.documentation_only``); the OpenAPI document says so.
    documentation_only: bool = False

    @property
    def required(self) -> bool:
        return self.default is _NOT_GIVEN

    @property
    def names(self) -> tuple[str, ...]:
        return (self.request_name, *self.aliases)

    @property
    def accepts_string(self) -> bool:
        return self.text_adapter is not None


def _strip_annotated(tp: Any) -> tuple[Any, list[Any]]:
    if get_origin(tp) is Annotated:
        base, *extras = get_args(tp)
        return base, extras
    return tp, []


def _union_members(tp: Any) -> tuple[Any, ...]:
    """A union's members, each with its own ``Annotated`` constraints kept."""
    base, _ = _strip_annotated(tp)
    if get_origin(base) in (Union, types.UnionType):
        return tuple(m for arg in get_args(base) for m in _union_members(arg))
    return (tp,)


def _is_stringish(tp: Any) -> bool:
    tp, _ = _strip_annotated(tp)
    if tp is str:
        return True
    if get_origin(tp) is Literal:
        return all(isinstance(v, str) for v in get_args(tp))
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return all(isinstance(member.value, str) for member in tp)
    return False


def build_param_specs(view: Callable[..., Any], path_params: set[str]) -> list[ParamSpec]:
    """Read a view's signature once, at registration time."""
    hints = typing.get_type_hints(view, include_extras=True)
    specs: list[ParamSpec] = []
    for index, param in enumerate(inspect.signature(view).parameters.values()):
        if index == 0 or param.kind in (inspect.Parameter.VAR_KEYWORD, inspect.Parameter.VAR_POSITIONAL):
            continue  # the request context; catch-alls take nothing from the request
        tp = hints[param.name]
        base, extras = _strip_annotated(tp)
        meta = next((e for e in extras if isinstance(e, ApiParam)), ApiParam())
        members = [m for m in _union_members(base) if _strip_annotated(m)[0] is not type(None)]
        is_file = any(_strip_annotated(m)[0] is UploadFile for m in members)
        raw_string = not meta.json and bool(members) and all(_is_stringish(m) for m in members)
        text_members = [m for m in members if _is_stringish(m)]
        text_adapter = None
        # A parameter forced to JSON must not fall back to taking the raw text.
        if text_members and not raw_string and not meta.json:
            text_type: Any = Union[tuple(text_members)]  # noqa: UP007 (built at runtime)
            text_adapter = TypeAdapter(Annotated[text_type, *extras] if extras else text_type)
        specs.append(
            ParamSpec(
                arg_name=param.name,
                request_name=meta.name or param.name,
                aliases=meta.aliases,
                adapter=TypeAdapter(tp) if not is_file else TypeAdapter(Any),
                raw_string=raw_string,
                text_adapter=text_adapter,
                is_file=is_file,
                in_path=param.name in path_params,
                default=param.default,
                documentation_only=meta.documentation_only,
            )
        )
    return specs


@dataclass
class RawParams:
    """What a request carried: string values (or decoded JSON from a JSON body) and files."""

    values: dict[str, Any]
    files: dict[str, UploadFile]
    path: dict[str, str]


_UNION_TAGS = frozenset({"int", "str", "bool", "float", "list", "dict", "none", "json-or-python"})


def _location(error: ErrorDetails, var_name: str) -> str:
    """Name the failing element, as in ``user_ids[1] is not an integer``."""
    name = var_name
    for part in error["loc"]:
        if isinstance(part, int):
            name += f"[{part}]"
        elif part not in _UNION_TAGS and not any(c in part for c in "[(-") and not part[:1].isupper():
            # Capitalised parts are union members named by their model class, not keys.
            name += f'["{part}"]'
    return name


_MESSAGES: Mapping[str, str] = {
    "bool_parsing": "{var} is not a boolean",
    "bool_type": "{var} is not a boolean",
    "int_parsing": "{var} is not an integer",
    "int_type": "{var} is not an integer",
    "int_from_float": "{var} is not an integer",
    "float_parsing": "{var} is not a float",
    "float_type": "{var} is not a float",
    "string_type": "{var} is not a string",
    "list_type": "{var} is not a list",
    "dict_type": "{var} is not a dict",
    "string_too_long": "{var} is too long (limit: {max_length} characters)",
    "string_too_short": "{var} is too short",
    "too_long": "{var} is too long",
    "greater_than_equal": "{var} is too small",
    "greater_than": "{var} is too small",
    "less_than_equal": "{var} is too large",
    "less_than": "{var} is too large",
}


def validation_error_to_jsonable(var_name: str, exc: ValidationError) -> JsonableError:
    # A union reports one error per member; the one that got deepest into the value names
    # the actual problem (``x[1] is not an integer`` rather than ``x is not an integer``).
    error = max(exc.errors(), key=lambda e: len(e["loc"]))
    ctx = error.get("ctx") or {}
    if error["type"] == "value_error" and "error" in ctx:
        # A validator raised ValueError with a client-facing message.
        inner = ctx["error"]
        return InvalidArgumentError(var_name, str(inner.args[0]) if inner.args else None)
    if isinstance(ctx.get("error"), JsonableError):
        return typing.cast(JsonableError, ctx["error"])
    template = _MESSAGES.get(error["type"])
    where = _location(error, var_name)
    if template is None:
        return InvalidArgumentError(var_name, f"Invalid {where}")
    return InvalidArgumentError(var_name, template.format(var=where, **ctx))


# Integer columns hold at most 64 bits; larger values must fail here, not in the database.
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def _check_storable(var_name: str, value: Any) -> None:
    """Reject values no database column can hold: NUL characters and oversized integers.

    PostgreSQL refuses NUL in text (even as a query parameter) and both backends overflow
    past 64-bit integers; either would otherwise surface as a 500 deep inside a view.
    """
    stack: list[tuple[Any, str]] = [(value, var_name)]
    while stack:  # iterative: JSON may nest deeper than Python's recursion limit
        item, where = stack.pop()
        if isinstance(item, str):
            if "\x00" in item:
                raise InvalidArgumentError(var_name, f"{where} contains a NUL character")
        elif isinstance(item, bool):
            continue
        elif isinstance(item, int):
            if item > _INT_MAX:
                raise InvalidArgumentError(var_name, f"{where} is too large")
            if item < _INT_MIN:
                raise InvalidArgumentError(var_name, f"{where} is too small")
        elif isinstance(item, list):
            stack.extend((sub, f"{where}[{i}]") for i, sub in enumerate(item))
        elif isinstance(item, dict):
            for key, sub in item.items():
                if "\x00" in key:
                    raise InvalidArgumentError(var_name, f"{where} contains a NUL character")
                stack.append((sub, f'{where}["{key}"]'))


def _convert(spec: ParamSpec, name: str, value: Any) -> Any:
    """Turn one request value into the parameter's type; raises ValidationError."""
    if spec.raw_string or (spec.in_path and isinstance(value, str)):
        _check_storable(name, value)
        return spec.adapter.validate_python(value, strict=False)
    text: str | bytes
    if isinstance(value, str):
        text = value
        try:
            # Not orjson: it turns integers past 64 bits into floats, hiding "too large".
            decoded = from_json(value, allow_inf_nan=False)
        except ValueError:
            if spec.text_adapter is None:
                raise InvalidJSONError(name) from None
            _check_storable(name, value)  # e.g. `to` given as a channel name, not as JSON
            return spec.text_adapter.validate_python(value, strict=False)
        _check_storable(name, decoded)
    else:
        decoded = value  # already decoded: a JSON request body, or a typed path segment
        _check_storable(name, decoded)
        try:
            text = to_json(decoded)
        except PydanticSerializationError:
            raise InvalidArgumentError(name) from None  # nested past any sensible depth
    try:
        # Strict JSON validation gives JSON's types their meaning: "1" is no integer, 1 no
        # boolean, 1.0 no integer, while an enum still accepts its members' values.
        return spec.adapter.validate_json(text, strict=True)
    except ValidationError:
        if spec.text_adapter is None or not isinstance(value, str) or isinstance(decoded, list | dict):
            raise
        # A name that merely reads as a JSON scalar ("123", "true") may still be a fine string;
        # text that decoded to a list or object was meant as one and is reported as such.
        try:
            return spec.text_adapter.validate_python(value, strict=False)
        except ValidationError:
            pass
        raise


class ViewParams:
    """A view's parameters, indexed by the names a request may send them under.

    ``parse`` walks only the parameters that can differ from their defaults: those the
    request names, those in the path or taking files, and the required ones (which fail when
    absent). Any other parameter takes its default and uses no name, so the walk in the
    declared order over that subset gives the same arguments, ignored names and first error as
    a walk over all of them (GET /events declares thirteen parameters; a poll sends two).
    """

    __slots__ = ("_by_name", "_defaults", "_fixed", "specs")

    def __init__(self, specs: Sequence[ParamSpec]) -> None:
        self.specs = tuple(specs)
        self._fixed = frozenset(i for i, s in enumerate(self.specs) if s.in_path or s.is_file or s.required)
        self._by_name: dict[str, tuple[int, ...]] = {}
        for i, spec in enumerate(self.specs):
            for name in spec.names:
                self._by_name[name] = (*self._by_name.get(name, ()), i)
        # What an unwalked parameter gives the view; parsed values replace them.
        self._defaults = {s.arg_name: s.default for s in self.specs if not s.required}

    def parse(self, raw: RawParams) -> tuple[dict[str, Any], list[str]]:
        """The view's keyword arguments, and the names the request sent that none uses."""
        walk = set(self._fixed)
        by_name = self._by_name
        for sent in raw.values:
            walk.update(by_name.get(sent, ()))
        kwargs = self._defaults.copy()
        used: set[str] = set()
        specs = self.specs
        for index in sorted(walk):
            spec = specs[index]
            name: str
            value: Any
            if spec.in_path:
                name, value = spec.request_name, raw.path[spec.arg_name]
                # The Python bindings repeat the path's ID in the body (add_reaction,
                # update_message): it is this parameter, not an unsupported one.
                used.add(spec.request_name)
            elif spec.is_file:
                name, value = spec.request_name, raw.files.get(spec.request_name, _NOT_GIVEN)
                if value is _NOT_GIVEN and raw.files:
                    # Clients name the file field freely (zulip-js uses the file's name).
                    name, value = next(iter(raw.files.items()))
                used.update(raw.files)
            else:
                name = next((n for n in spec.names if n in raw.values), spec.request_name)
                value = raw.values.get(name, _NOT_GIVEN)
                used.update(n for n in spec.names if n in raw.values)
            if value is _NOT_GIVEN:
                if spec.required:
                    raise MissingArgumentError(spec.request_name)
                kwargs[spec.arg_name] = spec.default
                continue
            if spec.is_file:
                kwargs[spec.arg_name] = value
                continue
            try:
                kwargs[spec.arg_name] = _convert(spec, name, value)
            except ValidationError as e:
                raise validation_error_to_jsonable(spec.request_name, e) from None
        ignored = sorted(k for k in raw.values if k not in used)
        return kwargs, ignored


def parse_params(specs: Sequence[ParamSpec], raw: RawParams) -> tuple[dict[str, Any], list[str]]:
    """Validate the request against the view's parameters (``ViewParams.parse``, indexed anew)."""
    return ViewParams(specs).parse(raw)


V = typing.TypeVar("V", bound=Callable[..., Any])


def set_signature(view: Callable[..., Any], signature: inspect.Signature) -> None:
    """Declare a view's parameters as the parameter layer (``inspect.signature``) reads them."""
    # Functions do not declare __signature__ for type checkers; inspect.signature honours it.
    view.__signature__ = signature  # type: ignore[attr-defined]


def with_setting_params(names: Sequence[str], annotation: Any) -> Callable[[V], V]:
    """Give a view one optional keyword parameter per setting name, collected in its ``**settings``.

    Settings declared once in a model (a channel's or a group's permission groups) reach
    views from that list rather than as a dozen parameters written out in each.
    """

    def extend(view: V) -> V:
        signature = inspect.signature(view)
        kept = [p for p in signature.parameters.values() if p.kind != inspect.Parameter.VAR_KEYWORD]
        extra = [
            inspect.Parameter(
                name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=annotation | None
            )
            for name in names
        ]
        set_signature(view, signature.replace(parameters=kept + extra))
        view.__annotations__ = {**view.__annotations__, **{p.name: p.annotation for p in extra}}
        return view

    return extend
