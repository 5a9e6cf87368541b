"""An export's files as a Bundle gives them: a directory, a tarball and a zip read alike,
and an open bundle's memory does not grow with the number of files (a long history's
uploads are one file each)."""

from __future__ import annotations

import subprocess
import sys
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


# Measured in a process of its own: tracemalloc counts every thread's allocations, and a
# test worker's other threads (a shared server's, a browser connection's) moved a peak of
# ~220 KB by 60 KB, where the history's own growth is 6-10 KB.
_MEASURE = """
import sys
from pathlib import Path
from tests.importers.test_bundle import _peak
small, large = Path(sys.argv[1]), Path(sys.argv[2])
_peak(small)  # what a first bundle loads once (the tarfile and gzip modules' first use)
(peak_small, top_small), (peak_large, top_large) = _peak(small), _peak(large)
assert top_small == top_large == ["messages-000001.json", "realm.json"], (top_small, top_large)
print(peak_small, peak_large)
"""


def _fresh_peaks(small: Path, large: Path) -> tuple[int, int]:
    """``_peak`` of each export in a new interpreter, after one warm-up."""
    done = subprocess.run(
        [sys.executable, "-c", _MEASURE, str(small), str(large)],
        cwd=Path(__file__).parents[2],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.split()
    return int(first), int(second)


@pytest.mark.parametrize("packing", ["directory", "tarball"])
def test_memory_does_not_grow_with_the_number_of_files(packing: str, tmp_path: Path) -> None:
    small, large = 1_000, 4_000
    paths = {}
    for label, size in (("small", small), ("large", large)):
        folder = _export(tmp_path / label, size)
        paths[label] = folder if packing == "directory" else _tarball(folder)
    peak_small, peak_large = _fresh_peaks(paths["small"], paths["large"])
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
