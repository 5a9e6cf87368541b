"""TeX to MathML for ``$$…$$`` and ```` ```math ```` (latex2mathml), with the TeX kept.

The MathML sits inside ``<span class="katex">`` (Zulip's class for rendered math) as
``<math><semantics>…<annotation encoding="application/x-tex">TeX</annotation></semantics></math>``,
so browsers draw it natively and clients that prefer the source find it. TeX that does not
convert, or converts into something that is not well formed (an unknown command, a fraction
with one argument), is shown as ``<span class="tex-error">$$TeX$$</span>``; nothing here may
raise, as a message with bad TeX must still be sent.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from html import escape

MATHML_NS = "http://www.w3.org/1998/Math/MathML"
# Longer TeX is shown as an error rather than converted (conversion is not linear in size).
MAX_TEX_LENGTH = 4000

# Elements and attributes the sanitizer lets through inside math; nothing that links,
# loads or styles (no href, src, style or class on MathML elements).
MATHML_TAGS = frozenset({
    "math", "semantics", "annotation", "mrow", "mi", "mn", "mo", "ms", "mtext", "mspace", "mfrac",
    "msqrt", "mroot", "msup", "msub", "msubsup", "munder", "mover", "munderover", "mtable", "mtr",
    "mtd", "mstyle", "mpadded", "mphantom", "menclose", "merror", "none",
})  # fmt: skip
_PRESENTATION = {"mathvariant", "mathsize", "displaystyle", "scriptlevel", "mathcolor", "mathbackground"}
MATHML_ATTRIBUTES: dict[str, set[str]] = {
    "math": {"display"},
    "mo": {"stretchy", "fence", "separator", "lspace", "rspace", "form", "largeop", "movablelimits",
           "accent", "minsize", "maxsize", "symmetric"} | _PRESENTATION,
    "mi": _PRESENTATION, "mn": _PRESENTATION, "mtext": _PRESENTATION, "mrow": _PRESENTATION,
    "mstyle": _PRESENTATION,
    "mspace": {"width", "height", "depth", "linebreak"},
    "mpadded": {"width", "height", "depth", "lspace", "voffset"},
    "mfrac": {"linethickness"},
    "menclose": {"notation"},
    "mover": {"accent"}, "munder": {"accentunder"}, "munderover": {"accent", "accentunder"},
    "mtable": {"columnalign", "rowspacing", "columnspacing", "columnlines", "rowlines", "frame",
               "displaystyle"},
    "mtr": {"columnalign"},
    "mtd": {"columnalign", "columnspan", "rowspan"},
}  # fmt: skip
MATHML_FIXED_VALUES = {
    "math": {"xmlns": {MATHML_NS}},
    "annotation": {"encoding": {"application/x-tex"}},
}

# Elements whose children are their arguments, and how many they take.
_ARITY = {
    "mfrac": 2,
    "msup": 2,
    "msub": 2,
    "mroot": 2,
    "munder": 2,
    "mover": 2,
    "msubsup": 3,
    "munderover": 3,
}


class _InvalidTex(Exception):
    pass


def _check(element: ET.Element) -> None:
    expected = _ARITY.get(element.tag)
    if expected is not None and len(element) != expected:
        raise _InvalidTex(f"{element.tag} needs {expected} arguments")
    text = (element.text or "").strip()
    if element.tag in ("mi", "mo") and len(text) > 1 and text.startswith("\\"):
        # latex2mathml passes unknown commands through as identifiers.
        raise _InvalidTex(f"unknown command {text}")
    for child in element:
        _check(child)


def _to_mathml(tex: str, display: bool) -> str:
    if len(tex) > MAX_TEX_LENGTH or not tex.strip():
        raise _InvalidTex("empty or too long")
    # latex2mathml's symbol tables (~5 MiB) are loaded with the first message that has math,
    # not in every process at start (``bootstrap.worker_modules`` preloads them for workers).
    from latex2mathml.converter import convert  # noqa: PLC0415

    raw = convert(tex, display="block" if display else "inline")
    root = ET.fromstring(raw.replace(f' xmlns="{MATHML_NS}"', "", 1))
    _check(root)
    children = list(root)
    for child in children:
        root.remove(child)
    if len(children) == 1 and children[0].tag == "mrow":
        body = children[0]
    else:
        body = ET.Element("mrow")
        body.extend(children)
    semantics = ET.SubElement(root, "semantics")
    semantics.append(body)
    annotation = ET.SubElement(semantics, "annotation", {"encoding": "application/x-tex"})
    annotation.text = tex
    return ET.tostring(root, encoding="unicode").replace("<math", f'<math xmlns="{MATHML_NS}"', 1)


def tex_to_html(tex: str, display: bool) -> str:
    """``<span class="katex">`` with MathML (in ``katex-display`` for blocks), or the error span."""
    try:
        mathml = _to_mathml(tex, display)
    except Exception:
        return f'<span class="tex-error">$${escape(tex, quote=False)}$$</span>'
    inner = f'<span class="katex">{mathml}</span>'
    return f'<span class="katex-display">{inner}</span>' if display else inner
