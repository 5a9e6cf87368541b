"""File storage: local disk and S3-compatible buckets (with a stubbed client)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from palaver.config import load_settings
from palaver.lib.storage import (
    LocalFileStorage,
    S3FileStorage,
    StorageKeyError,
    check_key,
    make_storage,
)


class NoSuchKeyError(Exception):
    def __init__(self) -> None:
        super().__init__("missing")
        self.response = {"Error": {"Code": "NoSuchKey"}}


class _Body:
    def __init__(self, data: bytes) -> None:
        self.data = data

    def read(self) -> bytes:
        return self.data


class StubS3:
    """The few calls S3FileStorage makes, as boto3's client answers them."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], tuple[bytes, str | None]] = {}

    def put_object(self, *, Bucket: str, Key: str, Body: bytes, ContentType: str | None = None) -> None:
        self.objects[(Bucket, Key)] = (Body, ContentType)

    def get_object(self, *, Bucket: str, Key: str) -> dict[str, Any]:
        if (Bucket, Key) not in self.objects:
            raise NoSuchKeyError()
        return {"Body": _Body(self.objects[(Bucket, Key)][0])}

    def delete_object(self, *, Bucket: str, Key: str) -> None:
        self.objects.pop((Bucket, Key), None)


def test_local_storage_round_trip(tmp_path: Path) -> None:
    storage = LocalFileStorage(tmp_path)
    assert storage.read("2/ab/x/file.txt") is None
    assert not storage.exists("2/ab/x/file.txt")
    storage.save("2/ab/x/file.txt", b"data", "text/plain")
    assert (tmp_path / "2" / "ab" / "x" / "file.txt").read_bytes() == b"data"
    assert storage.read("2/ab/x/file.txt") == b"data"
    assert storage.exists("2/ab/x/file.txt")
    storage.save("2/ab/x/file.txt", b"new")
    assert storage.read("2/ab/x/file.txt") == b"new"
    # No temporary files are left behind.
    assert [p.name for p in (tmp_path / "2" / "ab" / "x").iterdir()] == ["file.txt"]
    storage.delete("2/ab/x/file.txt")
    storage.delete("2/ab/x/file.txt")
    assert storage.read("2/ab/x/file.txt") is None
    assert storage.read("2/ab") is None  # a directory is not a file


def test_s3_storage_with_stub_client() -> None:
    client = StubS3()
    storage = S3FileStorage(client, "bucket")
    assert storage.read("1/a/b.png") is None
    storage.save("1/a/b.png", b"\x89PNG", "image/png")
    assert client.objects[("bucket", "1/a/b.png")] == (b"\x89PNG", "image/png")
    assert storage.read("1/a/b.png") == b"\x89PNG"
    assert storage.exists("1/a/b.png")
    storage.delete("1/a/b.png")
    assert storage.read("1/a/b.png") is None
    storage.save("1/a/c.txt", b"x")
    assert client.objects[("bucket", "1/a/c.txt")] == (b"x", None)


def test_s3_errors_other_than_missing_propagate() -> None:
    class Broken(StubS3):
        def get_object(self, *, Bucket: str, Key: str) -> dict[str, Any]:
            raise RuntimeError("network down")

    with pytest.raises(RuntimeError):
        S3FileStorage(Broken(), "bucket").read("1/a")


@pytest.mark.parametrize(
    "key", ["", "/etc/passwd", "../x", "1/../x", "1//x", "1/./x", "1/x/", "a\\b", "a\x00b", "."]
)
def test_unsafe_keys_are_refused(tmp_path: Path, key: str) -> None:
    with pytest.raises(StorageKeyError):
        check_key(key)
    with pytest.raises(StorageKeyError):
        LocalFileStorage(tmp_path).save(key, b"x")


def test_make_storage_chooses_by_settings(tmp_path: Path) -> None:
    local = make_storage(load_settings(env={}, data_dir=tmp_path))
    assert isinstance(local, LocalFileStorage)
    assert local.root == tmp_path / "uploads"
    settings = load_settings(env={"PALAVER_S3_BUCKET": "uploads"}, data_dir=tmp_path)
    client = StubS3()
    s3 = make_storage(settings, s3_client=client)
    assert isinstance(s3, S3FileStorage)
    assert (s3.bucket, s3.client) == ("uploads", client)
