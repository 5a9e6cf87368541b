"""An export as the source tool wrote it: a zip, a tarball or a directory, read alike.

Zip members are read in place. A tarball has no index to seek by, so it is unpacked once
into a temporary directory (on disk, not in memory) and read from there.
"""

from __future__ import annotations

import os
import shutil
import tarfile
import tempfile
import zipfile
import zlib
from collections.abc import Iterable, Iterator
from pathlib import Path
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
        # No list of the files is kept: an export's uploads are one file each, so it would
        # grow with the history. A zip's own index is zipfile's; a directory is walked.
        self._prefix = _common_prefix(self._all_names())

    def _open_zip(self, path: Path) -> None:
        try:
            self._zip = zipfile.ZipFile(path)
            bad = self._zip.testzip()
        except (zipfile.BadZipFile, OSError, EOFError) as e:
            raise ImportInputError(f"{path}: truncated or corrupt zip archive ({e})") from None
        if bad is not None:
            raise ImportInputError(f"{path}: corrupt zip archive (member {bad} fails its checksum)")

    def _unpack_tar(self, path: Path) -> None:
        self._temp = tempfile.mkdtemp(prefix="palaver-import-")
        try:
            with _OneMemberAtATime.open(path) as tf:
                while (member := tf.next()) is not None:
                    # A directory keeps the mode it is made with: one the archive left
                    # unwritable would refuse the files after it (the private temporary
                    # directory is what keeps others out).
                    tf.extract(member, self._temp, set_attrs=not member.isdir(), filter="data")
        except (tarfile.TarError, OSError, EOFError, zlib.error) as e:
            shutil.rmtree(self._temp, ignore_errors=True)
            raise ImportInputError(f"{path}: truncated or corrupt tarball ({e})") from None
        self._root = Path(self._temp)

    def _all_names(self) -> Iterator[str]:
        """Every file's full path inside the export, in a zip's order or sorted."""
        if self._zip is not None:
            yield from (info.filename for info in self._zip.infolist() if not info.is_dir())
        else:
            assert self._root is not None
            yield from _walk(str(self._root), "")

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

    def names(self) -> Iterator[str]:
        """Every file, relative to the export's top directory (a single wrapping one is dropped)."""
        return (n[len(self._prefix) :] for n in self._all_names())

    def files_in(self, directory: str) -> list[str]:
        """The files directly in one directory of the export ("" for its top), sorted: a
        walk of every file holds the largest directory's listing (uploads/ may hold one
        entry per file of the history), this only the one directory's."""
        if self._zip is not None:
            inside = self._prefix + (f"{directory}/" if directory else "")
            found = (n[len(inside) :] for n in self._all_names() if n.startswith(inside))
            return sorted(n for n in found if "/" not in n)
        assert self._root is not None
        folder = self._root / (self._prefix + directory)
        if not folder.is_dir():
            return []
        with os.scandir(folder) as it:
            return sorted(e.name for e in it if e.is_file())

    def has(self, name: str) -> bool:
        full = self._prefix + name
        if self._zip is not None:
            try:
                return not self._zip.getinfo(full).is_dir()
            except KeyError:
                return False
        assert self._root is not None
        # String paths: a Path per file name would intern its parts (pathlib, 3.11).
        return os.path.isfile(os.path.join(self._root, full))

    def read(self, name: str) -> bytes:
        full = self._prefix + name
        try:
            if self._zip is not None:
                return self._zip.read(full)
            assert self._root is not None
            with open(os.path.join(self._root, full), "rb") as f:
                return f.read()
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
            return open(os.path.join(self._root, full), "rb")
        except (KeyError, FileNotFoundError):
            raise ImportInputError(f"{self.path}: {name} is missing") from None

    def json(self, name: str, *, default: Any = ImportInputError) -> Any:
        """The parsed file; a missing one gives ``default`` if one is given."""
        if not self.has(name):
            if default is not ImportInputError:
                return default
            raise ImportInputError(f"{self.path}: {name} is missing")
        return parse_json(self.read(name), f"{name}")


class _OneMemberAtATime(tarfile.TarFile):
    """A tarball read once from start to end. TarFile remembers every member it has read
    (for ``getmember``): one per file of the export, uploads included, some 700 bytes
    each. Here each is forgotten once the next is read, being unpacked by then."""

    members: list[tarfile.TarInfo]

    def next(self) -> tarfile.TarInfo | None:
        self.members.clear()
        return super().next()


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


def _walk(directory: str, prefix: str) -> Iterator[str]:
    """The files under ``directory`` as ``prefix`` + their relative path, in sorted order:
    a subdirectory sorts as its name and a slash, as its files' paths do. One directory's
    listing at a time is held, never the whole tree's. Links to directories are not
    followed (as ``Path.rglob`` does not). Paths stay strings: pathlib interns every part
    of every path it makes, and a walk of many files made the interpreter's table of
    interned strings resize (2 MB at once)."""
    entries = []
    with os.scandir(directory) as it:
        for entry in it:
            is_dir = entry.is_dir(follow_symlinks=False)
            entries.append(
                (entry.name + "/" if is_dir else entry.name, entry.path, not is_dir and entry.is_file())
            )
    entries.sort()
    for name, path, is_file in entries:
        if name.endswith("/"):
            yield from _walk(path, prefix + name)
        elif is_file:
            yield prefix + name


def _common_prefix(names: Iterable[str]) -> str:
    """ "export/" when every file sits in one top directory (as zips of a folder do)."""
    top: str | None = None
    for name in names:
        head, slash, _ = name.partition("/")
        if not slash or (top is not None and head != top):
            return ""
        top = head
    return "" if top is None else f"{top}/"
