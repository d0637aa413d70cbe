"""The S3/MinIO backend of the results store: credentials from an Airflow connection, the
environment or the local MinIO's env file; transient failures retried with backoff for a bounded
time (WB_STORE_RETRY_S), other client errors turned into StoreError naming where."""

from __future__ import annotations

import io
import logging
import math
import os
import random
import re
import time
from collections.abc import Callable, Mapping
from http.client import HTTPException
from typing import Any

import urllib3
from minio import Minio
from minio.deleteobjects import DeleteObject
from minio.error import InvalidResponseError, MinioException, S3Error, ServerError
from minio.helpers import DictType

from workbench.store.base import MISSING, NotFound, Store, StoreError, check_key
from workbench.store.s3_config import S3Config

_AUTH_CODES = {"InvalidAccessKeyId", "SignatureDoesNotMatch", "AccessDenied", "ExpiredToken"}
_MISSING_CODES = {"NoSuchKey", "NoSuchBucket", "NoSuchObject"}
# answers that mean "not now": throttling, an overloaded or (re)starting server
_TRANSIENT_CODES = {
    "SlowDown",
    "SlowDownRead",
    "SlowDownWrite",
    "ServiceUnavailable",
    "InternalError",
    "RequestTimeout",
    "OperationTimedOut",
    "XMinioServerNotInitialized",
    "XMinioReadQuorum",
    "XMinioWriteQuorum",
}

RETRY_ENV = "WB_STORE_RETRY_S"
DEFAULT_RETRY_S = 300.0
MAX_RETRY_S = 86_400.0  # a day: a longer outage is not one to wait out inside a rating
BACKOFF_BASE_S = 0.5  # first wait ≤ 0.5 s, doubling ...
BACKOFF_CAP_S = 8.0  # ... up to 8 s between attempts

log = logging.getLogger("workbench.store")


def retry_budget_s(env: Mapping[str, str] = os.environ) -> float:
    """Seconds a store operation keeps retrying transient failures: WB_STORE_RETRY_S (default
    300, at most MAX_RETRY_S)."""
    raw = (env.get(RETRY_ENV) or "").strip()
    if not raw:
        return DEFAULT_RETRY_S
    try:
        v = float(raw)
    except ValueError:
        v = math.nan
    if not (math.isfinite(v) and 0 <= v <= MAX_RETRY_S):
        raise StoreError(
            f"{RETRY_ENV}={raw!r}: give the retry time in seconds, from 0 to {MAX_RETRY_S:g}"
        )
    return v


def transient(e: BaseException) -> bool:
    """Worth another attempt: the endpoint unreachable, the connection refused, reset or timed out,
    an HTTP 5xx / 429 or S3's SlowDown-like codes. Never: auth errors, missing objects or buckets,
    a failed precondition, other 4xx, TLS or URL errors."""
    if isinstance(e, S3Error):
        if e.code in _AUTH_CODES or e.code in _MISSING_CODES or e.code == "PreconditionFailed":
            return False
        status = int(getattr(getattr(e, "response", None), "status", 0) or 0)
        return e.code in _TRANSIENT_CODES or status >= 500 or status == 429
    if isinstance(e, ServerError):
        return e.status_code >= 500 or e.status_code == 429
    if isinstance(e, InvalidResponseError):  # a non-XML answer, e.g. a proxy's 502 page
        status = int(getattr(e, "_code", 0) or 0)
        return status >= 500 or status == 429
    if isinstance(
        e,
        (
            urllib3.exceptions.SSLError,
            urllib3.exceptions.LocationValueError,
            urllib3.exceptions.ProxySchemeUnknown,
        ),
    ):
        return False
    return isinstance(
        e, (urllib3.exceptions.HTTPError, ConnectionError, TimeoutError, HTTPException)
    )


def _brief(e: BaseException) -> str:
    """One line about a client error, without object reprs (never credentials: requests are signed
    in headers, and neither the headers nor the config reach the message)."""
    if isinstance(e, S3Error):
        text = f"{e.code}: {e.message}"
    else:
        text = re.sub(r"<[^<>]* object at 0x[0-9a-f]+>:? ?", "", str(e)) or repr(e)
        text = f"{type(e).__name__}: {text}"
    return " ".join(text.split())[:300]


class ResultsStore(Store):
    """Objects of one bucket on S3/MinIO. No network until first use.

    Every operation retries transient failures (see `transient`) with exponential backoff and
    jitter for at most `retry_s` seconds (WB_STORE_RETRY_S, default 300): attempt k that fails waits
    a uniform draw in [d/2, d], d = min(BACKOFF_CAP_S, BACKOFF_BASE_S·2^(k−1)) ("equal jitter",
    AWS Architecture Blog, "Exponential Backoff and Jitter", 2015), never past the deadline, and
    logs one line (operation, key, endpoint and bucket, attempt, error). urllib3 itself never
    retries (``retries=False``): one attempt here is one HTTP request, so the waits do not multiply.
    """

    def __init__(
        self,
        config: S3Config,
        *,
        timeout_s: float = 10,
        retry_s: float | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
    ):
        self.config = config
        self.retry_s = retry_budget_s() if retry_s is None else float(retry_s)
        if not (math.isfinite(self.retry_s) and self.retry_s >= 0):
            raise ValueError(f"retry_s must be a number of seconds >= 0, got {retry_s!r}")
        self._sleep, self._clock, self._rng = sleep, clock, rng or random.Random()
        http = urllib3.PoolManager(
            timeout=urllib3.Timeout(connect=min(3.0, timeout_s), read=timeout_s),
            retries=False,  # no hidden retries: ours are bounded, logged and counted
            maxsize=8,
        )
        self._client = Minio(
            config.endpoint,
            access_key=config.access_key,
            secret_key=config.secret_key,
            secure=config.secure,
            region="us-east-1",
            http_client=http,
        )

    @property
    def bucket(self) -> str:
        return self.config.bucket

    def _where(self) -> str:
        scheme = "https" if self.config.secure else "http"
        return f"S3 endpoint {scheme}://{self.config.endpoint} (bucket {self.bucket!r})"

    def _error(self, what: str, e: BaseException) -> StoreError:
        """A client error as StoreError / NotFound naming endpoint and bucket."""
        if isinstance(e, S3Error):
            if e.code in _MISSING_CODES:
                return NotFound(f"{what}: {e.code} at {self._where()}")
            if e.code in _AUTH_CODES:
                return StoreError(
                    f"{what}: {self._where()} rejected the credentials ({e.code}: {e.message})"
                )
            return StoreError(f"{what}: {self._where()} answered {e.code}: {e.message}")
        return StoreError(f"{what}: cannot reach or use {self._where()}: {_brief(e)}")

    def _backoff_s(self, attempt: int) -> float:
        d = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2.0 ** (attempt - 1))
        return self._rng.uniform(d / 2.0, d)

    def _run(self, what: str, fn: Callable[[], Any]) -> Any:
        """fn() with transient failures retried (see the class docstring); other client errors
        turned into StoreError / NotFound at once."""
        start = self._clock()
        attempt = 0
        while True:
            attempt += 1
            try:
                return fn()
            except (MinioException, urllib3.exceptions.HTTPError, OSError, HTTPException) as e:
                if not transient(e):
                    raise self._error(what, e) from None
                spent = self._clock() - start
                left = self.retry_s - spent
                if left <= 0:
                    raise StoreError(
                        f"{what}: {self._where()} still failing after {attempt} attempt(s) in "
                        f"{spent:.1f} s ({RETRY_ENV}={self.retry_s:g} s): {_brief(e)}"
                    ) from None
                pause = min(left, self._backoff_s(attempt))
                log.warning(
                    "store retry: %s at %s: attempt %d failed (%s); next in %.1f s, %.0f s left",
                    what,
                    self._where(),
                    attempt,
                    _brief(e),
                    pause,
                    left,
                )
                self._sleep(pause)

    def ensure_bucket(self) -> None:
        """Create the bucket if it does not exist."""

        def make() -> None:
            if not self._client.bucket_exists(self.bucket):
                try:
                    self._client.make_bucket(self.bucket)
                except S3Error as e:
                    if e.code not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
                        raise

        self._run("ensure bucket", make)

    def url(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    # -- objects ---------------------------------------------------------------------------
    def _bucket_once(self, what: str, fn: Callable[[], Any]) -> Any:
        """fn() under _run; if the bucket is missing, create it once and run fn() again."""
        try:
            return self._run(what, fn)
        except NotFound:
            self.ensure_bucket()
            return self._run(what, fn)

    def put_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> str:
        """Write (or overwrite) one object; creates the bucket on first need. Returns the key."""
        check_key(key)
        self._bucket_once(
            f"put {key}",
            lambda: self._client.put_object(
                self.bucket, key, io.BytesIO(data), len(data), content_type=content_type
            ),
        )
        return key

    def create_bytes(
        self, key: str, data: bytes, content_type: str = "application/octet-stream"
    ) -> bool:
        """A conditional PUT (``If-None-Match: *``): S3 and MinIO answer 412 PreconditionFailed when
        the key exists. A retry after an attempt whose answer was lost sees 412 too: the caller
        compares contents (Store.put_trial)."""
        check_key(key)
        headers: DictType = {"Content-Type": content_type, "If-None-Match": "*"}

        def put() -> bool:
            try:  # _put_object: put_object would send If-None-Match as user metadata (x-amz-meta-*)
                self._client._put_object(self.bucket, key, data, headers=headers)
                return True
            except S3Error as e:
                if e.code == "PreconditionFailed":
                    return False
                raise

        return self._bucket_once(f"create {key}", put)

    def get_bytes(self, key: str, default: Any = MISSING) -> bytes:
        """The object's content; NotFound (a KeyError) if absent and no default is given."""

        def get() -> bytes:
            resp = self._client.get_object(self.bucket, key)
            try:
                return resp.read()
            finally:
                resp.close()
                resp.release_conn()

        try:
            return self._run(f"get {key}", get)
        except NotFound:
            if default is MISSING:
                raise
            return default

    def exists(self, key: str) -> bool:
        try:
            self._run(f"stat {key}", lambda: self._client.stat_object(self.bucket, key))
            return True
        except NotFound:
            return False

    def list_keys(self, prefix: str = "") -> list[str]:
        """All keys under `prefix`, sorted ([] when the bucket does not exist yet)."""
        try:
            return self._run(
                f"list {prefix}",
                lambda: sorted(
                    o.object_name
                    for o in self._client.list_objects(self.bucket, prefix=prefix, recursive=True)
                ),
            )
        except NotFound:
            return []

    def delete_prefix(self, prefix: str) -> int:
        """Delete every object under `prefix` (which must not be empty); returns how many."""
        if not prefix:
            raise ValueError("delete_prefix needs a non-empty prefix")
        keys = self.list_keys(prefix)
        errors = self._run(
            f"delete {prefix}",
            lambda: list(self._client.remove_objects(self.bucket, (DeleteObject(k) for k in keys))),
        )
        if errors:
            raise StoreError(
                f"delete {prefix}: {len(errors)} objects not deleted at {self._where()}: "
                f"{errors[0]}"
            )
        return len(keys)


def open_store() -> ResultsStore:
    """The results store: Airflow connection `workbench_s3`, else WB_S3_*, else the local MinIO."""
    store = ResultsStore(S3Config.resolve())
    store.ensure_bucket()  # fails fast, naming endpoint and bucket, when MinIO is down
    return store


# a rating named by its S3 location (workbench compare, compare_ratings)
S3_RATING = re.compile(r"s3://([a-z0-9][a-z0-9.-]{1,61}[a-z0-9])/ratings/([A-Za-z0-9_.:+-]+)/?")


def rating_at_url(url: str) -> tuple[str, str] | None:
    """(bucket, rating id) of an s3://<bucket>/ratings/<rating id>/ URL, else None."""
    m = S3_RATING.fullmatch(url)
    return (m.group(1), m.group(2)) if m else None
