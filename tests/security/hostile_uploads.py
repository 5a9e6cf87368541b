"""Hostile uploads: files that run script if a browser renders them as a page, with the
names and declared types an attacker would pick. Shared by the header checks and the
browser test (tests/web/browser/test_upload_security.py).

Each payload's script, if it ever runs on the organization's origin, posts a message through
``/json/messages`` (the session's CSRF token from the cookie) and sets a marker the browser
test looks for: a ``pwned`` cookie. (XML payloads keep the script in CDATA: a bare ``&``
would make them ill-formed, and an ill-formed one would prove nothing.)
"""

from __future__ import annotations

from dataclasses import dataclass

from tests.images import image_bytes

# The script every payload carries. ``MARK`` is replaced by the payload's name.
SCRIPT = (
    "try{document.cookie='pwned=MARK;path=/';}catch(e){}"
    "try{var t=(document.cookie.match(/csrftoken=([^;]+)/)||[])[1]||'';"
    "fetch('/json/messages',{method:'POST',credentials:'include',headers:{'X-CSRFToken':t,"
    "'Content-Type':'application/x-www-form-urlencoded'},"
    "body:'type=stream&to=general&topic=pwned&content=pwned+MARK'}).catch(function(){});}catch(e){}"
)


def script(mark: str) -> str:
    return SCRIPT.replace("MARK", mark)


@dataclass(frozen=True)
class Hostile:
    mark: str
    file_name: str
    declared: str
    data: bytes
    # What the server must serve it as, and whether inline.
    served_as: str
    inline: bool


def _html(mark: str) -> bytes:
    return f"<!doctype html><html><body><script>{script(mark)}</script></body></html>".encode()


def _svg(mark: str) -> bytes:
    return (
        '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10" onload="'
        + script(mark).replace("&", "&amp;").replace('"', "&quot;")
        + f'"><script><![CDATA[{script(mark)}]]></script><rect width="10" height="10"/></svg>'
    ).encode()


def _xhtml(mark: str) -> bytes:
    return (
        '<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><body>'
        f"<script>//<![CDATA[\n{script(mark)}\n//]]></script></body></html>"
    ).encode()


def _xml(mark: str) -> bytes:
    return (
        f'<?xml version="1.0"?><x:script xmlns:x="http://www.w3.org/1999/xhtml">{script(mark)}</x:script>'
    ).encode()


OCTET = "application/octet-stream"
TEXT = "text/plain; charset=utf-8"


def hostile_uploads() -> list[Hostile]:
    png = image_bytes(8, 8)
    gif_polyglot = b"GIF89a/*\x00\x00\x00\x00*/=1;" + script("gif-js").encode() + b"//"
    return [
        Hostile("svg", "drawing.svg", "image/svg+xml", _svg("svg"), OCTET, False),
        Hostile("svg-octet", "drawing.svg", OCTET, _svg("svg-octet"), OCTET, False),
        Hostile("html", "page.html", "text/html", _html("html"), OCTET, False),
        Hostile("xhtml", "page.xhtml", "application/xhtml+xml", _xhtml("xhtml"), OCTET, False),
        Hostile("xml", "data.xml", "text/xml", _xml("xml"), OCTET, False),
        Hostile("js", "app.js", "text/javascript", script("js").encode(), TEXT, True),
        Hostile("png-as-svg", "image.svg", "image/svg+xml", png, "image/png", True),
        Hostile("html-as-png", "image.png", "image/png,text/html", _html("html-as-png"), OCTET, False),
        Hostile("text-html", "notes.txt", "text/plain, text/html", _html("text-html"), OCTET, False),
        Hostile(
            "png-html-polyglot", "photo.png", "image/png", png + _html("png-html-polyglot"), "image/png", True
        ),
        Hostile("gif-js-polyglot", "anim.gif", "image/gif", gif_polyglot, "image/gif", True),
        Hostile(
            "html-in-pdf",
            "doc.pdf",
            "application/pdf",
            b"%PDF-1.4\n" + _html("html-in-pdf"),
            "application/pdf",
            True,
        ),
        Hostile("bom-html", "bom.txt", "text/plain", b"\xef\xbb\xbf" + _html("bom-html"), OCTET, False),
        Hostile(
            "hostile-name",
            '"><img src=x onerror=alert(1)>;.html\r\nX-Injected: 1',
            'text/html; charset="x"\r\nX-Injected: 1',
            _html("hostile-name"),
            OCTET,
            False,
        ),
    ]
