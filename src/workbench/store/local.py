"""The local-directory backend of the results store: the same layout as S3, as files.

`workbench rate` keeps a rating here (``--results DIR``), so a rating from the command line
resumes from its trial log exactly as a DAG run resumes from S3. Writes go to a temporary file
in the same directory and are renamed into place, so a killed process never leaves half an object;
`create_bytes` hard-links the complete temporary file to the key instead, which fails if the key
exists (an exclusive create: of two writers exactly one wins).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

from workbench.store.base import MISSING, NotFound, Store, StoreError, check_key


def _fsync_dir(d: Path) -> None:
    """The directory's entries on disk (a renamed or linked object survives a crash)."""
    fd = os.open(d, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class LocalStore(Store):
    """Objects as files under `root` (key a/b/c.json → root/a/b/c.json)."""

    def __init__(self, root: str | Path) -> None:
        self.root = Path(root).resolve()

    def _path(self, key: str) -> Path:
        return self.root / check_key(key)

    def ensure_bucket(self) -> None:
        try:
            self.root.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise StoreError(f"cannot create the results directory {self.root}: {e}") from None

    def url(self, key: str) -> str:
        return str(self._path(key)) if key else str(self.root) + "/"

    def _staged(self, key: str, data: bytes) -> tuple[Path, str]:
        """The object's path and a temporary file beside it that holds `data` (the caller moves
        it)."""
        path = self._path(key)
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())  # on disk before its name is: a crash leaves old or new
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return path, tmp

    def put_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> str:
        path, tmp = self._staged(key, data)
        try:
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        _fsync_dir(path.parent)
        return key

    def create_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> bool:
        path, tmp = self._staged(key, data)
        try:
            os.link(tmp, path)  # atomic, and refuses an existing name (O_EXCL semantics)
            _fsync_dir(path.parent)
            return True
        except FileExistsError:
            return False
        finally:
            Path(tmp).unlink(missing_ok=True)

    def get_bytes(self, key: str, default: Any = MISSING) -> bytes:
        try:
            return self._path(key).read_bytes()
        except FileNotFoundError:
            if default is MISSING:
                raise NotFound(f"get {key}: no such object under {self.root}") from None
            return default

    def exists(self, key: str) -> bool:
        return self._path(key).is_file()

    def list_keys(self, prefix: str = "") -> list[str]:
        if not self.root.is_dir():
            return []
        keys = (
            p.relative_to(self.root).as_posix()
            for p in self.root.rglob("*")
            if p.is_file() and not p.name.startswith(".")
        )
        return sorted(k for k in keys if k.startswith(prefix))

    def delete_prefix(self, prefix: str) -> int:
        if not prefix:
            raise ValueError("delete_prefix needs a non-empty prefix")
        keys = self.list_keys(prefix)
        for k in keys:
            self._path(k).unlink(missing_ok=True)
        return len(keys)


def rating_in_dir(path: str | Path) -> tuple[LocalStore, str] | None:
    """(its store, the rating id) of an existing <results>/ratings/<rating id> directory, else
    None."""
    path = Path(path)
    if path.is_dir() and path.parent.name == "ratings":
        return LocalStore(path.parent.parent), path.name
    return None
