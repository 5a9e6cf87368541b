"""Multipart bodies parsed as Starlette does, except that text must be valid UTF-8.

Starlette decodes a field it cannot read in the declared charset as Latin-1, silently
turning a client's broken bytes into different text; form and JSON bodies are refused
with a 400 for the same bytes, so multipart ones are too.
"""

from __future__ import annotations

from python_multipart.multipart import parse_options_header
from starlette.datastructures import FormData, UploadFile
from starlette.formparsers import MultiPartException, MultiPartParser
from starlette.requests import Request

from palaver.lib.exceptions import JsonableError

# Starlette's defaults for request.form(); fields beyond the upload are small.
_MAX_FILES = 1000
_MAX_FIELDS = 1000
_MAX_PART_BYTES = 1024 * 1024


def _utf8(data: bytes | bytearray, what: str) -> None:
    try:
        bytes(data).decode("utf-8")
    except UnicodeDecodeError:
        raise MultiPartException(f"Invalid UTF-8 in {what}") from None


class StrictMultiPartParser(MultiPartParser):
    def on_part_end(self) -> None:
        if self._current_part.file is None:
            _utf8(self._current_part.data, "a form field")
        super().on_part_end()

    def on_headers_finished(self) -> None:
        _, options = parse_options_header(self._current_part.content_disposition)
        for key in (b"name", b"filename"):
            if key in options:
                _utf8(options[key], "a field name or file name")
        super().on_headers_finished()


async def read_multipart(request: Request) -> FormData:
    parser = StrictMultiPartParser(
        request.headers,
        request.stream(),
        max_files=_MAX_FILES,
        max_fields=_MAX_FIELDS,
        max_part_size=_MAX_PART_BYTES,
    )
    form = await parser.parse()
    # Request.close() closes the uploads' temporary files of the form it parsed.
    request._form = form
    return form


_CHUNK = 1024 * 1024


def read_upload(upload: UploadFile, limit_mib: int, too_large: str | None = None) -> bytes:
    """An uploaded file's bytes, read in chunks and refused as soon as it passes ``limit_mib``:
    with ``too_large`` where an endpoint words the error its own way, as the reference does."""
    limit = limit_mib * 1024 * 1024
    upload.file.seek(0)
    chunks: list[bytes] = []
    size = 0
    while chunk := upload.file.read(_CHUNK):
        size += len(chunk)
        if size > limit:
            raise JsonableError(
                too_large or f"Uploaded file is larger than the allowed limit of {limit_mib} MiB"
            )
        chunks.append(chunk)
    return b"".join(chunks)
