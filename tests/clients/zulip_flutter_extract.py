"""Derive ``zulip_flutter_models.json`` from a checkout of zulip-flutter (``lib/api``).

Run by hand when the app's API layer moves on; the data file it writes is what the contract
test (``test_zulip_flutter_contract.py``) reads, so CI needs no copy of the app:

    python -m tests.clients.zulip_flutter_extract /path/to/zulip-flutter > \
        tests/clients/zulip_flutter_models.json

It reads the app's generated JSON decoders (``lib/api/**/*.g.dart``, json_serializable's
output) and records, per class, each JSON key the decoder reads and what it requires of the
value: its kind (string, int, double, bool, list, map, object, enum…), whether null or a
missing key is accepted (a nullable cast, ``?? default``, ``== null ? null :``), and for
enums the values the app knows and whether it falls back on an unknown one. Decoders the app
writes by hand (event dispatch, messages, group-setting values) are described in the test
beside the data, from the app's own code. Nothing of the app's source is copied: the output
is facts about it (key names, types, enum values).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

Descriptor = dict[str, Any]

_DECODER = re.compile(
    r"^(\w+) _\$(\w+)FromJson\(\s*Map<String, dynamic> json,?\s*\)"
    r"(?: =>\s*| \{(?P<checks>.*?)return )(\w+)\(",
    re.M | re.S,
)
_ENUM_MAP = re.compile(r"const _\$(\w+)EnumMap = \{(.*?)\};", re.S)
_ENUM_VALUE = re.compile(r"\w+\.\w+: ('(?:[^'\\]|\\.)*'|-?\d+)")
_VAR = r"(?:json\['(?P<key>\w+)'\]|\w+\._read\w+\(json, '(?P<rkey>\w+)'\)|(?P<e>\be\b))"


def _matching(text: str, start: int) -> int:
    """Index just past the bracket that closes the one at ``start``."""
    depth = 0
    quote = ""
    for i in range(start, len(text)):
        c = text[i]
        if quote:
            if c == quote and text[i - 1] != "\\":
                quote = ""
            continue
        if c in "'\"":
            quote = c
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i + 1
    raise ValueError("unbalanced")


def _split_top(text: str, sep: str = ",") -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    depth, quote, previous = 0, "", ""
    for c in text:
        if quote:
            current.append(c)
            if c == quote:
                quote = ""
            continue
        # Angle brackets count only as type arguments (``List<dynamic>``), not in ``=>``.
        opening = c in "([{" or (c == "<" and previous.isalnum())
        closing = c in ")]}" or (c == ">" and previous != "=")
        previous = c
        if c in "'\"":
            quote = c
        elif opening:
            depth += 1
        elif closing:
            depth -= 1
        if c == sep and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(c)
    if "".join(current).strip():
        parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _strip_parens(expr: str) -> str:
    expr = expr.strip()
    while expr.startswith("(") and _matching(expr, 0) == len(expr):
        expr = expr[1:-1].strip()
    return expr


_SCALAR = {
    "String": "string",
    "bool": "bool",
    "num": "num",
    "int": "int",
    "double": "double",
    "Map<String, dynamic>": "map",
    "List<dynamic>": "list",
    "Object": "any",
    "dynamic": "any",
}


def classify(expr: str, known_unparsed: list[str]) -> Descriptor:  # noqa: PLR0911
    """What the decoder expression requires of the value it reads."""
    expr = " ".join(expr.split())
    expr = re.sub(r",\s*\)", ")", expr)
    expr = re.sub(r"\(\s+", "(", expr)
    expr = re.sub(r"\s+\)", ")", expr)
    expr = _strip_parens(re.sub(r"\s+(\??\.)", r"\1", expr))
    # ``X ?? default``: a missing or null value is replaced.
    m = re.fullmatch(r"(.*\S)\s*\?\?\s*(.+)", expr)
    if m and _balanced(m.group(1)):
        inner = classify(m.group(1), known_unparsed)
        return {**inner, "nullable": True, "default": True}
    m = re.fullmatch(_VAR + r" == null \? null : (?P<rest>.+)", expr)
    if m:
        return {**classify(m.group("rest"), known_unparsed), "nullable": True}
    m = re.fullmatch(
        r"\$enumDecode(?P<n>Nullable)?\(_\$(?P<enum>\w+)EnumMap, "
        + _VAR
        + r"(?P<unk>, unknownValue: [\w.]+)?\)",
        expr,
    )
    if m:
        return {
            "kind": "enum",
            "enum": m.group("enum"),
            "nullable": bool(m.group("n")),
            "lenient": bool(m.group("unk")),
        }
    m = re.fullmatch(_VAR + r" as (?P<t>[\w<>, ]+?)(?P<q>\?)?", expr)
    if m and m.group("t") in _SCALAR:
        return {"kind": _SCALAR[m.group("t")], "nullable": bool(m.group("q"))}
    if re.fullmatch(_VAR, expr):
        return {"kind": "any", "nullable": True}
    m = re.fullmatch(r"\(" + _VAR + r" as num(?P<q>\?)?\)\??\.to(?P<t>Int|Double)\(\)", expr)
    if m:
        # ``(x as num).toInt()`` accepts any number (a double is truncated).
        return {"kind": "num", "nullable": bool(m.group("q"))}
    m = re.fullmatch(
        r"(?:Uri\.parse|DateTime\.parse|base64Decode|\w+\.fromJson)\(" + _VAR + r" as String\)", expr
    )
    if m:
        return {"kind": "string", "nullable": False}
    m = re.fullmatch(r"\w+\.fromApiValue\(" + _VAR + r" as (?P<t>\w+)(?P<q>\?)?\)", expr)
    if m:
        return {"kind": _SCALAR[m.group("t")], "nullable": bool(m.group("q"))}
    m = re.fullmatch(r"\w+\.(?:_\w+|tryParseFromJson)\((?P<inner>.+)\)", expr)
    if m and re.search(_VAR, m.group("inner")):
        # A decoder the app wrote by hand; the contract test describes what it needs.
        return {"kind": "any", "nullable": True, "custom": True}
    m = re.fullmatch(r"(?P<cls>\w+)\.fromJson\(\s*" + _VAR + r"(?: as Map<String, dynamic>)?,?\s*\)", expr)
    if m:
        return {"kind": "object", "class": m.group("cls"), "nullable": False}
    m = re.fullmatch(
        r"const (?P<conv>\w+)\(\)\.fromJson\(\s*" + _VAR + r" as (?P<t>[\w<>, ]+?)(?P<q>\?)?,?\s*\)", expr
    )
    if m:
        converted = {"_IntConverter": "int_string"}.get(m.group("conv"), _SCALAR.get(m.group("t"), "any"))
        return {"kind": converted, "nullable": bool(m.group("q"))}
    m = re.fullmatch(
        r"\("
        + _VAR
        + r" as List<dynamic>(?P<q>\?)?\)\??\.map\(\s*\(e\) => (?P<inner>.+)\)\s*\.to(?:List|Set)\(\)",
        expr,
    )
    if m:
        return {
            "kind": "list",
            "of": classify(m.group("inner"), known_unparsed),
            "nullable": bool(m.group("q")),
        }
    m = re.fullmatch(
        r"\("
        + _VAR
        + r" as Map<String, dynamic>(?P<q>\?)?\)\??\.map\(\s*\(k, e\) => MapEntry\((?P<entry>.+)\),?\s*\)",
        expr,
    )
    if m:
        key_expr, value_expr = _split_top(m.group("entry"))[:2]
        key_kind = "int" if key_expr.startswith("int.parse") else "string"
        return {
            "kind": "map",
            "keys": key_kind,
            "of": classify(value_expr, known_unparsed),
            "nullable": bool(m.group("q")),
        }
    known_unparsed.append(expr)
    return {"kind": "any", "nullable": True, "unchecked": True}


def _balanced(text: str) -> bool:
    depth = 0
    for c in text:
        depth += c in "([{"
        depth -= c in ")]}"
        if depth < 0:
            return False
    return depth == 0


def _key_of(expr: str) -> str | None:
    m = re.search(_VAR, expr)
    if m is None:
        return None
    return m.group("key") or m.group("rkey")


def _event_dispatch(text: str) -> dict[str, str]:
    """``type`` or ``type/op`` → the event class the app decodes it with (``Event.fromJson``);
    anything else it keeps as an unexpected event and ignores."""
    body = text[text.index("factory Event.fromJson") :]
    body = body[: body.index("\n  }\n")]
    dispatch: dict[str, str] = {}
    event_type = ""
    for line in body.splitlines():
        m = re.match(r"^      case '(\w+)':(?: return (\w+)\.fromJson)?", line)
        if m:
            event_type = m.group(1)
            if m.group(2) and m.group(2) != "UnexpectedEvent":
                dispatch[event_type] = m.group(2)
            continue
        m = re.match(r"^          case '(\w+)': return (\w+)\.fromJson", line)
        if m and m.group(2) != "UnexpectedEvent":
            dispatch[f"{event_type}/{m.group(1)}"] = m.group(2)
    return dispatch


def _field(expr: str, unparsed: list[str]) -> Descriptor:
    descriptor = classify(expr, unparsed)
    # A ``readValue`` function finds the value somewhere other than under its key.
    reader = re.search(r"(\w+\._read\w+)\(json, '\w+'\)", expr)
    if reader is not None:
        descriptor["read"] = reader.group(1)
    return descriptor


def extract(root: Path, commit: str) -> dict[str, Any]:
    classes: dict[str, Any] = {}
    enums: dict[str, list[Any]] = {}
    unparsed: list[str] = []
    for path in sorted((root / "lib" / "api").rglob("*.g.dart")):
        text = path.read_text()
        for m in _ENUM_MAP.finditer(text):
            enums[m.group(1)] = [
                v[1:-1] if v.startswith("'") else int(v) for v in _ENUM_VALUE.findall(m.group(2))
            ]
        for m in _DECODER.finditer(text):
            name = m.group(2)
            open_at = m.end() - 1
            close = _matching(text, open_at)
            fields: dict[str, Descriptor] = {}
            for arg in _split_top(text[open_at + 1 : close - 1]):
                named = re.match(r"(\w+):\s*(.*)", arg, re.S)
                expr = named.group(2) if named else arg
                key = _key_of(expr)
                if key is not None:
                    fields[key] = _field(expr, unparsed)
            # Fields set after construction: ``..field = expr`` up to the closing ``;``.
            end = text.index(";", close)
            for cascade in re.finditer(r"\.\.\w+ =\s*(.+?)(?=\s*\.\.\w+ =|\Z)", text[close:end], re.S):
                key = _key_of(cascade.group(1))
                if key is not None:
                    fields[key] = _field(cascade.group(1), unparsed)
            # ``$checkKeys``: keys that must be present and not null whatever the cast says.
            for listed in re.findall(
                r"(?:requiredKeys|disallowNullValues): const \[(.*?)\]", m.group("checks") or ""
            ):
                for key in re.findall(r"'(\w+)'", listed):
                    if key in fields:
                        fields[key]["nullable"] = False
            classes[name] = {"source": str(path.relative_to(root)), "fields": fields}
    events = _event_dispatch((root / "lib" / "api" / "model" / "events.dart").read_text())
    for expr in unparsed:
        print("unparsed:", expr[:200], file=sys.stderr)
    return {
        "app": {"repository": "zulip/zulip-flutter", "commit": commit},
        "classes": classes,
        "enums": enums,
        "events": events,
    }


if __name__ == "__main__":
    root = Path(sys.argv[1])
    if len(sys.argv) > 2:  # an exported tree rather than a checkout
        commit = sys.argv[2]
    else:
        commit = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
        ).stdout.strip()
    print(json.dumps(extract(root, commit), indent=1, sort_keys=True))
