"""An export's files as a Bundle gives them: a directory, a tarball and a zip read alike,
and an open bundle's memory does not grow with the number of files (a long history's
uploads are one file each)."""

from __future__ import annotations

import tarfile
import zipfile
from pathlib import Path

import pytest

from palaver.importers.bundle import Bundle
from tests.importers.traced import traced_peak


def _export(root: Path, uploads: int) -> Path:
    """A Zulip-shaped export folder: two top files and ``uploads`` files, each in a
    directory of its own under one of 256 two-character ones, as Zulip lays them out."""
    (root / "uploads").mkdir(parents=True)
    (root / "realm.json").write_bytes(b"{}")
    (root / "messages-000001.json").write_bytes(b"{}")
    for n in range(uploads):
        folder = root / "uploads" / "2" / f"{n % 256:02x}" / f"{n:024d}"
        folder.mkdir(parents=True)
        (folder / "notes.txt").write_bytes(b"notes")
    return root


def _tarball(folder: Path) -> Path:
    path = folder.with_suffix(".tar.gz")
    with tarfile.open(path, "w:gz") as tf:
        tf.add(folder, arcname=folder.name)
    return path


def _zip(folder: Path) -> Path:
    path = folder.with_suffix(".zip")
    with zipfile.ZipFile(path, "w") as zf:
        for file in sorted(folder.rglob("*")):
            zf.write(file, f"{folder.name}/{file.relative_to(folder).as_posix()}")
    return path


def _peak(path: Path) -> tuple[int, list[str]]:
    """(peak traced bytes, the top files) of opening the export, finding its top files
    by name, as the readers do, and reading one."""
    with traced_peak() as peak, Bundle(path) as bundle:
        top = [n for n in bundle.names() if "/" not in n]
        assert bundle.read("realm.json") == b"{}"
        return peak(), top


@pytest.mark.parametrize("packing", ["directory", "tarball"])
def test_memory_does_not_grow_with_the_number_of_files(packing: str, tmp_path: Path) -> None:
    small, large = 1_000, 4_000
    paths = {}
    for label, size in (("small", small), ("large", large)):
        folder = _export(tmp_path / label, size)
        paths[label] = folder if packing == "directory" else _tarball(folder)
    peak_small, top = _peak(paths["small"])
    assert top == ["messages-000001.json", "realm.json"]
    peak_large, top = _peak(paths["large"])
    assert top == ["messages-000001.json", "realm.json"]
    # A list of every file's name is ~100 bytes a file, a tarball's members ~700; what is
    # left is one two-character directory's listing at a time (an eighth of that at most).
    assert peak_large - peak_small < 20 * (large - small), (peak_small, peak_large)


@pytest.mark.parametrize("packing", ["directory", "tarball", "zip"])
def test_every_packing_names_the_same_files_in_the_same_order(packing: str, tmp_path: Path) -> None:
    folder = _export(tmp_path / "export", 300)
    path = {"directory": folder, "tarball": _tarball(folder), "zip": _zip(folder)}[packing]
    with Bundle(path) as bundle:
        names = list(bundle.names())
        assert bundle.files_in("") == ["messages-000001.json", "realm.json"]
        assert bundle.files_in("uploads/2/0a/000000000000000000000010") == ["notes.txt"]
        assert bundle.files_in("uploads/2") == [] == bundle.files_in("missing")
        assert bundle.has("uploads/2/0a/000000000000000000000010/notes.txt")
        assert not bundle.has("uploads/2/0a")
        assert not bundle.has("missing.json")
    expected = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
    # A directory is wrapped once more by the tarball and the zip: the single top
    # directory is dropped either way.
    assert names == expected and len(names) == 302


def test_a_file_beside_the_top_directory_keeps_every_path_whole(tmp_path: Path) -> None:
    folder = _export(tmp_path / "export", 3)
    (tmp_path / "README.txt").write_bytes(b"read me")
    with Bundle(tmp_path) as bundle:
        names = list(bundle.names())
        assert bundle.has("export/realm.json") and not bundle.has("realm.json")
    assert names[0] == "README.txt" and "export/realm.json" in names
    assert folder.exists()
