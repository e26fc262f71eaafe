"""Read a remote GGUF header with HTTP range requests, never its tensor data.

`HttpRangeReader` is a file-like object with ``read(n)`` that the header parser pulls from. It asks
the server for growing byte ranges (2 MiB first, doubling up to 16 MiB) and reads each response
body lazily, only as far as the parser has asked; when the parser is done the connection is
dropped, so the bytes taken off the wire are the header plus the parser's read-ahead (at most
1 MiB), whatever the range sizes. A server that ignores ``Range`` and answers 200 with the whole
body is read the same way, as one stream, and abandoned as soon as the header is complete.

Transient failures (connection reset or dropped, timeouts, 5xx, 429) are retried a bounded number
of times with exponential backoff, resuming at the byte where the parser stopped. Redirects are
followed (bounded); the ``Authorization`` header is only ever sent to the host it was given for,
so a Hub token never reaches a CDN. Every failure is a `SourceError` with one line of message.
"""

from __future__ import annotations

import http.client
import re
import socket
import ssl
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from tokenwalk.errors import SourceError
from tokenwalk.sources.progress import FetchProgress

__all__ = [
    "AuthError",
    "HttpOptions",
    "HttpRangeReader",
    "NotFoundError",
    "RemoteFile",
    "TimeoutSourceError",
    "probe",
]

_REDIRECTS = (301, 302, 303, 307, 308)
_RETRY_STATUS = (429, 500, 502, 503, 504)
_CONTENT_RANGE = re.compile(r"bytes\s+(\d+)-(\d+)/(\d+|\*)")
_UNSATISFIABLE = re.compile(r"bytes\s+\*/(\d+)")
_PIECE = 1 << 16


class NotFoundError(SourceError):
    """The server answered 404: the file is not there."""


class AuthError(SourceError):
    """The server answered 401 or 403: credentials are missing, wrong or not enough."""


class TimeoutSourceError(SourceError):
    """The server did not answer within the timeout, on every try."""


class _Transient(Exception):
    """A failure worth retrying; carries the line to report if the retries run out."""

    def __init__(self, message: str, *, timeout: bool = False) -> None:
        super().__init__(message)
        self.timeout = timeout


@dataclass(frozen=True)
class HttpOptions:
    """Knobs of the range reader. Defaults suit real servers; tests shrink the timings."""

    timeout_s: float = 30.0
    retries: int = 4  # tries after the first, across the whole file
    backoff_s: float = 0.5  # wait before the first retry, doubled for each next one
    first_request_bytes: int = 2 << 20
    max_request_bytes: int = 16 << 20
    max_header_bytes: int = 128 << 20  # no real header comes near; past this we give up
    max_redirects: int = 8
    user_agent: str = "tokenwalk"


@dataclass
class RemoteFile:
    """What the server told us about the file: its size, ETag and where the bytes came from."""

    url: str
    size: int | None = None
    etag: str | None = None
    final_url: str | None = None
    range_ignored: bool = False
    extra: dict[str, str] = field(default_factory=dict)


def _origin(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, (parts.hostname or "").lower(), port


def _describe_os_error(exc: BaseException) -> str:
    if isinstance(exc, ssl.SSLError):
        return f"TLS error: {exc.reason or exc}"
    text = getattr(exc, "strerror", None) or str(exc) or type(exc).__name__
    return text


class HttpRangeReader:
    """A forward-only ``read(n)`` over a remote file, fetched in growing byte ranges.

    `auth_headers` (e.g. ``Authorization``) are sent only to the origin of `url`; a redirect to
    another host drops them. `auth_hint` builds the message of a 401/403 answer (the caller knows
    which repository and how to log in). `fetched_bytes` counts body bytes taken off the wire,
    `requests` the HTTP requests sent (redirect hops included).
    """

    def __init__(
        self,
        url: str,
        *,
        auth_headers: dict[str, str] | None = None,
        auth_hint: Callable[[int, str], str] | None = None,
        options: HttpOptions | None = None,
        progress: FetchProgress | None = None,
        label: str | None = None,
        keep_bytes: bool = True,
    ) -> None:
        if urlsplit(url).scheme not in ("http", "https"):
            raise SourceError(f"not an http(s) URL: {url}")
        self.url = url
        self.opt = options or HttpOptions()
        self.auth_headers = dict(auth_headers or {})
        self.auth_origin = _origin(url)
        self.auth_hint = auth_hint
        self.progress = progress
        self.label = label or url
        self.info = RemoteFile(url=url)
        self.fetched_bytes = 0
        self.requests = 0
        self.pos = 0  # next byte offset handed to the parser
        self.data = bytearray() if keep_bytes else None
        self._failures = 0
        self._chunk = self.opt.first_request_bytes
        self._conn: http.client.HTTPConnection | None = None
        self._conn_origin: tuple[str, str, int] | None = None
        self._resp: http.client.HTTPResponse | None = None
        self._resp_pos = 0
        self._resp_end = 0
        self._target = url  # where range requests go: the last redirect target, once known

    # -- public -----------------------------------------------------------------------------
    def open(self) -> RemoteFile:
        """Send the first request, learning the file's size and ETag before parsing starts."""
        self._with_retries(lambda: self._request(0))
        return self.info

    def read(self, n: int) -> bytes:
        """Up to `n` bytes from the current offset; fewer only at the end of the file."""
        out = bytearray()
        while len(out) < n:
            if self.info.size is not None and self.pos >= self.info.size:
                break
            if self.pos >= self.opt.max_header_bytes:
                raise SourceError(
                    f"read {self.pos / 2**20:.0f} MiB of {self.label} without reaching the end "
                    "of the GGUF header; giving up (is it a GGUF file?)"
                )
            want = n - len(out)
            got = self._with_retries(lambda want=want: self._read_some(want))
            if not got:
                break
            out += got
        if self.data is not None:
            self.data += out
        return bytes(out)

    def close(self) -> None:
        """Drop the connection (and whatever of the current range was not read)."""
        self._drop()
        if self.progress is not None:
            self.progress.finish()

    def __enter__(self) -> HttpRangeReader:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- retries ----------------------------------------------------------------------------
    def _with_retries(self, step: Callable[[], bytes | None]) -> bytes:
        while True:
            try:
                return step() or b""
            except _Transient as exc:
                self._drop()
                self._failures += 1
                if self._failures > self.opt.retries:
                    tries = self._failures
                    msg = f"{exc} (gave up after {tries} {'try' if tries == 1 else 'tries'})"
                    if exc.timeout:
                        raise TimeoutSourceError(msg) from None
                    raise SourceError(msg) from None
                time.sleep(self.opt.backoff_s * 2 ** (self._failures - 1))
                self._target = self.url  # a signed redirect target may have expired

    # -- reading ----------------------------------------------------------------------------
    def _read_some(self, want: int) -> bytes:
        if self._resp is None or self._resp_pos >= self._resp_end:
            self._request(self.pos)
        assert self._resp is not None
        if self._resp_pos < self.pos:  # a 200 answer to a range request: skip to our offset
            self._skip(self.pos - self._resp_pos)
        take = min(want, self._resp_end - self._resp_pos, _PIECE)
        if take <= 0:
            return b""
        data = self._body(take)
        if not data:
            if self.info.size is None and self.info.range_ignored:
                self.info.size = self._resp_pos  # chunked 200 body ended: that is the file
                return b""
            raise _Transient(f"{self.label}: the connection closed at byte {self.pos:,}")
        self._resp_pos += len(data)
        self.pos += len(data)
        return data

    def _body(self, n: int) -> bytes:
        assert self._resp is not None
        try:
            data = self._resp.read(n)
        except http.client.IncompleteRead as exc:
            data = exc.partial
            if not data:
                raise _Transient(
                    f"{self.label}: the connection closed at byte {self.pos:,}"
                ) from None
        except TimeoutError:
            raise _Transient(
                f"{self.label}: timed out after {self.opt.timeout_s:g} s waiting for data",
                timeout=True,
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            raise _Transient(
                f"{self.label}: connection lost at byte {self.pos:,} ({_describe_os_error(exc)})"
            ) from None
        self.fetched_bytes += len(data)
        if self.progress is not None:
            self.progress.update(self.fetched_bytes)
        return data

    def _skip(self, n: int) -> None:
        while n > 0:
            if self._resp_pos >= self.opt.max_header_bytes:
                raise SourceError(f"{self.label}: skipped too far in a server's full answer")
            data = self._body(min(n, _PIECE))
            if not data:
                raise _Transient(f"{self.label}: the connection closed at byte {self._resp_pos:,}")
            self._resp_pos += len(data)
            n -= len(data)

    # -- requests ---------------------------------------------------------------------------
    def _request(self, start: int) -> None:
        """Ask for the next range starting at `start`; leaves `_resp` ready to read."""
        self._close_response()
        length = self._chunk
        self._chunk = min(self._chunk * 2, self.opt.max_request_bytes)
        end = start + length - 1
        if self.info.size is not None:
            end = min(end, self.info.size - 1)
        resp, url = self._get(self._target, {"Range": f"bytes={start}-{end}"})
        self._resp = resp
        self._target = url
        self.info.final_url = url
        etag = resp.getheader("ETag")
        if etag:
            self.info.etag = etag
        if resp.status == 206:
            m = _CONTENT_RANGE.match(resp.getheader("Content-Range") or "")
            if not m or int(m.group(1)) != start:
                raise SourceError(
                    f"{self.label}: the server answered range {start}- with "
                    f"'{resp.getheader('Content-Range')}'"
                )
            if m.group(3) != "*":
                self.info.size = int(m.group(3))
            self._resp_pos, self._resp_end = start, int(m.group(2)) + 1
        elif resp.status == 200:
            self.info.range_ignored = True
            length_header = resp.getheader("Content-Length")
            total = int(length_header) if length_header and length_header.isdigit() else None
            self.info.size = total
            self._resp_pos = 0
            self._resp_end = total if total is not None else 1 << 62
        elif resp.status == 416:
            m = _UNSATISFIABLE.match(resp.getheader("Content-Range") or "")
            self.info.size = int(m.group(1)) if m else start
            self._resp_pos = self._resp_end = start
        else:  # _get only returns 200, 206 and 416
            raise AssertionError(resp.status)

    def _get(self, url: str, extra: dict[str, str]) -> tuple[http.client.HTTPResponse, str]:
        """GET `url` following redirects; return the final 200/206/416 answer and its URL."""
        for _ in range(self.opt.max_redirects + 1):
            headers = {
                "User-Agent": self.opt.user_agent,
                "Accept-Encoding": "identity",
                **extra,
            }
            if _origin(url) == self.auth_origin:
                headers.update(self.auth_headers)
            resp = self._send(url, headers)
            status = resp.status
            if status in _REDIRECTS:
                location = resp.getheader("Location")
                self._close_response(resp)
                if not location:
                    raise SourceError(f"{self.label}: redirect {status} without a Location")
                url = urljoin(url, location)
                if urlsplit(url).scheme not in ("http", "https"):
                    raise SourceError(f"{self.label}: redirected to a non-http URL: {url}")
                continue
            if status in (200, 206, 416):
                return resp, url
            self._close_response(resp)
            if status == 404:
                raise NotFoundError(f"not found: {self.url}")
            if status in (401, 403):
                if self.auth_hint is not None:
                    raise AuthError(self.auth_hint(status, self.url))
                raise AuthError(
                    f"access refused (HTTP {status}) for {self.url}; tokenwalk sends no "
                    "credentials to plain URLs (for a gated Hugging Face repo use hf://org/repo)"
                )
            if status in _RETRY_STATUS:
                raise _Transient(f"{self.label}: the server answered HTTP {status} {resp.reason}")
            raise SourceError(f"{self.label}: the server answered HTTP {status} {resp.reason}")
        raise SourceError(f"{self.label}: more than {self.opt.max_redirects} redirects")

    def _send(self, url: str, headers: dict[str, str]) -> http.client.HTTPResponse:
        parts = urlsplit(url)
        origin = _origin(url)
        path = parts.path or "/"
        if parts.query:
            path += "?" + parts.query
        reused = self._conn is not None and self._conn_origin == origin
        if not reused:
            self._drop()
            https = parts.scheme == "https"
            cls = http.client.HTTPSConnection if https else http.client.HTTPConnection
            self._conn = cls(origin[1], origin[2], timeout=self.opt.timeout_s)
            self._conn_origin = origin
        assert self._conn is not None
        self.requests += 1
        try:
            self._conn.request("GET", path, headers=headers)
            return self._conn.getresponse()
        except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as exc:
            self._drop()
            if reused:  # the server closed an idle kept-alive connection: not a failure
                self.requests -= 1
                return self._send(url, headers)
            raise _Transient(
                f"{self.label}: connection to {origin[1]}:{origin[2]} lost "
                f"({_describe_os_error(exc)})"
            ) from None
        except TimeoutError:
            self._drop()
            raise _Transient(
                f"{self.label}: timed out after {self.opt.timeout_s:g} s waiting for "
                f"{origin[1]}:{origin[2]}",
                timeout=True,
            ) from None
        except socket.gaierror as exc:
            self._drop()
            raise SourceError(f"cannot resolve host '{origin[1]}' ({exc.strerror})") from None
        except ConnectionRefusedError:
            self._drop()  # nothing listens there: retrying would only make the user wait
            raise SourceError(
                f"cannot connect to {origin[1]}:{origin[2]} (connection refused)"
            ) from None
        except (OSError, http.client.HTTPException) as exc:
            self._drop()
            raise _Transient(
                f"{self.label}: request to {origin[1]}:{origin[2]} failed "
                f"({_describe_os_error(exc)})"
            ) from None

    def _close_response(self, resp: http.client.HTTPResponse | None = None) -> None:
        """Finish with a response: keep the connection only if its body was read to the end."""
        resp = resp or self._resp
        if resp is None:
            return
        if resp is self._resp:
            self._resp = None
        try:
            if resp.length is not None and resp.length <= _PIECE:
                resp.read()  # a small redirect or error body: read it, keep the connection
            if not resp.isclosed() or resp.will_close:
                self._drop()  # an unread body: dropping the connection is how we stop it
        except (OSError, http.client.HTTPException):
            self._drop()

    def _drop(self) -> None:
        if self._resp is not None:
            self._resp = None
        if self._conn is not None:
            try:
                self._conn.close()
            except OSError:
                pass
            self._conn = None
            self._conn_origin = None


def probe(
    url: str,
    *,
    auth_headers: dict[str, str] | None = None,
    options: HttpOptions | None = None,
) -> tuple[RemoteFile, int]:
    """Ask for byte 0 only, to learn the current size and ETag (to check a cached header).

    Returns the file's description and the number of requests sent. No retries.
    """
    opt = options or HttpOptions()
    opt = HttpOptions(
        timeout_s=min(opt.timeout_s, 5.0),
        retries=0,
        backoff_s=0.0,
        first_request_bytes=1,
        max_request_bytes=1,
        max_redirects=opt.max_redirects,
        user_agent=opt.user_agent,
    )
    reader = HttpRangeReader(url, auth_headers=auth_headers, options=opt, keep_bytes=False)
    try:
        info = reader.open()
    finally:
        reader.close()
    return info, reader.requests
