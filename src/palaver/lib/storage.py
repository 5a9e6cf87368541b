"""Where uploaded bytes live: one interface, local disk by default or S3-compatible storage.

Everything that stores files (message uploads, custom emoji, avatars) goes through
``FileStorage`` with a relative key such as ``"2/ab/Xy12.../notes.txt"``; only this module
knows whether a key is a path under ``Settings.upload_dir`` or an object in a bucket.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import shutil
import tempfile
from abc import ABC, abstractmethod
from pathlib import Path
from typing import Any

from palaver.config import Settings


class StorageKeyError(ValueError):
    """A key that could escape the storage root (``..``, absolute, empty parts)."""


def check_key(key: str) -> str:
    # Checked as a string: pathlib (3.11) interns every part it parses, and keys are unique
    # names, so a ``Path`` per key churns the interpreter's table of interned strings.
    if not key or "\\" in key or "\x00" in key or any(part in ("", ".", "..") for part in key.split("/")):
        raise StorageKeyError(key)
    return key


class FileStorage(ABC):
    @abstractmethod
    def save(self, key: str, data: bytes, content_type: str | None = None) -> None: ...

    @abstractmethod
    def read(self, key: str) -> bytes | None:
        """The stored bytes, or None when nothing is stored under the key."""

    @abstractmethod
    def delete(self, key: str) -> None:
        """Remove the key; removing a missing key is not an error."""

    def exists(self, key: str) -> bool:
        return self.read(key) is not None

    def save_file(self, key: str, source: Path, content_type: str | None = None) -> None:
        """Store a file's contents; large files (realm exports) need not pass through memory."""
        self.save(key, source.read_bytes(), content_type)

    def local_path(self, key: str) -> Path | None:
        """The file on local disk holding the key, if there is one (to stream it)."""
        return None


class LocalFileStorage(FileStorage):
    """Files under ``root``, one per key, reached by string paths (see ``check_key``)."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def _path(self, key: str) -> str:
        return os.path.join(self.root, *check_key(key).split("/"))

    def save(self, key: str, data: bytes, content_type: str | None = None) -> None:
        path = self._path(key)
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        # Write then rename, so a reader never sees a half-written file.
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".upload-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def read(self, key: str) -> bytes | None:
        try:
            with open(self._path(key), "rb") as f:
                return f.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            return None

    def delete(self, key: str) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self._path(key))

    def exists(self, key: str) -> bool:
        return os.path.isfile(self._path(key))

    def save_file(self, key: str, source: Path, content_type: str | None = None) -> None:
        path = self._path(key)
        folder = os.path.dirname(path)
        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".upload-")
        os.close(fd)
        try:
            shutil.copyfile(source, tmp)
            os.replace(tmp, path)
        except BaseException:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            raise

    def local_path(self, key: str) -> Path | None:
        path = self._path(key)
        return Path(path) if os.path.isfile(path) else None


class S3FileStorage(FileStorage):
    """Objects in one bucket; ``client`` is a boto3 S3 client (tests pass a stub)."""

    def __init__(self, client: Any, bucket: str, prefix: str = "") -> None:
        self.client = client
        self.bucket = bucket
        self.prefix = prefix

    def _key(self, key: str) -> str:
        return self.prefix + check_key(key)

    def save(self, key: str, data: bytes, content_type: str | None = None) -> None:
        extra = {"ContentType": content_type} if content_type else {}
        self.client.put_object(Bucket=self.bucket, Key=self._key(key), Body=data, **extra)

    def read(self, key: str) -> bytes | None:
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=self._key(key))
        except Exception as e:
            if _is_missing(e):
                return None
            raise
        body: bytes = response["Body"].read()
        return body

    def delete(self, key: str) -> None:
        # S3 answers a delete of a missing key with success.
        self.client.delete_object(Bucket=self.bucket, Key=self._key(key))


def _is_missing(error: Exception) -> bool:
    # botocore's ClientError carries the S3 error code; NoSuchKey is also its own class.
    response = getattr(error, "response", None)
    code = response.get("Error", {}).get("Code") if isinstance(response, dict) else None
    return code in ("NoSuchKey", "404", "NotFound") or type(error).__name__ == "NoSuchKey"


def make_storage(settings: Settings, *, s3_client: Any = None) -> FileStorage:
    """The storage the settings choose: a bucket when ``s3_bucket`` is set, else local disk."""
    if settings.s3_bucket:
        if s3_client is None:
            # boto3 is the optional `s3` extra; imported only when a bucket is configured.
            boto3 = importlib.import_module("boto3")
            s3_client = boto3.client("s3", endpoint_url=settings.s3_endpoint_url or None)
        return S3FileStorage(s3_client, settings.s3_bucket)
    assert settings.upload_dir is not None
    return LocalFileStorage(settings.upload_dir)


# Where clients fetch stored uploads: /user_uploads/<path_id>.
UPLOAD_URL_PREFIX = "/user_uploads/"
