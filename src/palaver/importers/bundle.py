"""An export as the source tool wrote it: a zip, a tarball or a directory, read alike.

Zip members are read in place. A tarball has no index to seek by, so it is unpacked once
into a temporary directory (on disk, not in memory) and read from there.
"""

from __future__ import annotations

import shutil
import tarfile
import tempfile
import zipfile
import zlib
from pathlib import Path, PurePosixPath
from types import TracebackType
from typing import IO, Any

import orjson

from palaver.importers.model import ImportInputError


class Bundle:
    """Files by their path inside the export ("users.json", "general/2024-01-02.json")."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._zip: zipfile.ZipFile | None = None
        self._root: Path | None = None
        self._temp: str | None = None
        self._scratch: str | None = None
        self._names: list[str] = []
        if path.is_dir():
            self._root = path
        elif not path.exists():
            raise ImportInputError(f"{path} does not exist")
        else:
            magic = _magic(path)
            if magic.startswith(b"PK"):
                self._open_zip(path)
            elif magic.startswith((b"\x1f\x8b", b"BZh", b"\xfd7zXZ")) or _is_tar(path):
                self._unpack_tar(path)
            else:
                raise ImportInputError(f"{path}: neither a directory, a zip archive nor a tarball")
        if self._root is not None:
            self._names = sorted(
                p.relative_to(self._root).as_posix() for p in self._root.rglob("*") if p.is_file()
            )
        self._prefix = _common_prefix(self._names)

    def _open_zip(self, path: Path) -> None:
        try:
            self._zip = zipfile.ZipFile(path)
            bad = self._zip.testzip()
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise ImportInputError(f"{path}: truncated or corrupt zip archive ({e})") from None
        if bad is not None:
            raise ImportInputError(f"{path}: corrupt zip archive (member {bad} fails its checksum)")
        self._names = [n for n in self._zip.namelist() if not n.endswith("/")]

    def _unpack_tar(self, path: Path) -> None:
        self._temp = tempfile.mkdtemp(prefix="palaver-import-")
        try:
            with tarfile.open(path) as tf:
                tf.extractall(self._temp, filter="data")
        except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
            shutil.rmtree(self._temp, ignore_errors=True)
            raise ImportInputError(f"{path}: truncated or corrupt tarball ({e})") from None
        self._root = Path(self._temp)

    def __enter__(self) -> Bundle:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, value: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def close(self) -> None:
        if self._zip is not None:
            self._zip.close()
        for directory in (self._temp, self._scratch):
            if directory is not None:
                shutil.rmtree(directory, ignore_errors=True)

    def scratch(self) -> Path:
        """A private directory removed with the bundle, for what a reader unpacks on disk."""
        if self._scratch is None:
            self._scratch = tempfile.mkdtemp(prefix="palaver-import-scratch-")
        return Path(self._scratch)

    def names(self) -> list[str]:
        """Every file, relative to the export's top directory (a single wrapping one is dropped)."""
        return [n[len(self._prefix) :] for n in self._names]

    def has(self, name: str) -> bool:
        full = self._prefix + name
        if self._zip is not None:
            return full in self._names
        assert self._root is not None
        return (self._root / full).is_file()

    def read(self, name: str) -> bytes:
        full = self._prefix + name
        try:
            if self._zip is not None:
                return self._zip.read(full)
            assert self._root is not None
            return (self._root / full).read_bytes()
        except KeyError:
            raise ImportInputError(f"{self.path}: {name} is missing") from None
        except FileNotFoundError:
            raise ImportInputError(f"{self.path}: {name} is missing") from None
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise ImportInputError(f"{self.path}: {name} cannot be read ({e})") from None

    def read_optional(self, name: str) -> bytes | None:
        return self.read(name) if self.has(name) else None

    def open(self, name: str) -> IO[bytes]:
        """A stream of the file, for reading a large one line by line."""
        full = self._prefix + name
        try:
            if self._zip is not None:
                return self._zip.open(full)
            assert self._root is not None
            return (self._root / full).open("rb")
        except (KeyError, FileNotFoundError):
            raise ImportInputError(f"{self.path}: {name} is missing") from None

    def local_path(self, name: str) -> Path | None:
        return None if self._root is None else self._root / (self._prefix + name)

    def json(self, name: str, *, default: Any = ImportInputError) -> Any:
        """The parsed file; a missing one gives ``default`` if one is given."""
        if not self.has(name):
            if default is not ImportInputError:
                return default
            raise ImportInputError(f"{self.path}: {name} is missing")
        return parse_json(self.read(name), f"{name}")


def parse_json(data: bytes, location: str) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as e:
        try:
            data.decode()
        except UnicodeDecodeError as u:
            raise ImportInputError(f"{location}: invalid UTF-8 at byte {u.start}") from None
        raise ImportInputError(f"{location}: invalid JSON ({e})") from None


def _magic(path: Path) -> bytes:
    with path.open("rb") as f:
        return f.read(8)


def _is_tar(path: Path) -> bool:
    try:
        return tarfile.is_tarfile(path)
    except OSError:
        return False


def _common_prefix(names: list[str]) -> str:
    """ "export/" when every file sits in one top directory (as zips of a folder do)."""
    tops = {PurePosixPath(n).parts[0] for n in names if "/" in n}
    if len(tops) == 1 and all("/" in n for n in names):
        return f"{tops.pop()}/"
    return ""
