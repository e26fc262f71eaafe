"""Read a remote GGUF header with HTTP range requests, never its tensor data.

`HttpRangeReader` is a file-like object with ``read(n)`` that the header parser pulls from. Its
first request asks for 2 MiB; from then on each range is sized from the header itself: a
`HeaderScan` walks the bytes received so far and bounds where the header can end (string arrays
say how many items remain, counts say how many entries and tensor infos follow), and the next
range stops at that lower bound plus a 1.5 MiB slack. So the ranges asked for never reach more than
the slack past the header's end, whatever the server or a proxy in between does with them. Each
answer is read lazily, only as far as the parser has asked, and the connection is dropped when
the parser is done. A server that ignores ``Range`` and answers 200 with the whole body is read
the same way, as one stream, and abandoned as soon as the header is complete.

Transient failures (connection reset or dropped, timeouts, 5xx, 429) are retried a bounded number
of times with exponential backoff, resuming at the byte where the parser stopped. Redirects are
followed (bounded); the ``Authorization`` header is only ever sent to the host it was given for,
so a Hub token never reaches a CDN. Every failure is a `SourceError` with one line of message.

The connections are urllib3's (`tokenwalk.sources.transport`, imported at the first request),
which honour ``HTTPS_PROXY`` / ``NO_PROXY`` and ``SSL_CERT_FILE`` / ``SSL_CERT_DIR`` or the
operating system's trust store.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING
from urllib.parse import urljoin, urlsplit

from tokenwalk.errors import SourceError
from tokenwalk.sources.plan import HeaderScan
from tokenwalk.sources.progress import FetchProgress

if TYPE_CHECKING:
    from urllib3 import BaseHTTPResponse

    from tokenwalk.sources.transport import Transport

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
    slack_bytes: int = (
        3 << 19
    )  # 1.5 MiB: how far past the header's least possible end a range may reach
    min_request_bytes: int = 64 << 10
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


def _reason(exc: BaseException) -> str:
    """The innermost useful words of a network error."""
    inner = exc
    for _ in range(4):  # urllib3 wraps the socket's error, sometimes twice
        nxt = getattr(inner, "reason", None) or getattr(inner, "original_error", None)
        if isinstance(nxt, BaseException):
            inner = nxt
            continue
        if inner.args and isinstance(inner.args[0], BaseException):
            inner = inner.args[0]
            continue
        break
    text = getattr(inner, "strerror", None) or str(inner) or type(inner).__name__
    return " ".join(str(text).split())


def _find(exc: BaseException, cls: type[BaseException]) -> BaseException | None:
    """The first exception of type `cls` among `exc` and those it wraps (urllib3 nests them)."""
    todo: list[BaseException] = [exc]
    seen: set[int] = set()
    while todo:
        e = todo.pop(0)
        if id(e) in seen:
            continue
        seen.add(id(e))
        if isinstance(e, cls):
            return e
        inner = [getattr(e, "reason", None), getattr(e, "original_error", None), e.__cause__]
        inner += [e.__context__, *(e.args[:1])]
        todo += [x for x in inner if isinstance(x, BaseException)]
    return None


def _is_refused(exc: BaseException) -> bool:
    return _find(exc, ConnectionRefusedError) is not None or "refused" in str(exc).lower()


def _cert_problem(exc: BaseException) -> str | None:
    """What is wrong with the server's certificate, or None for other TLS failures."""
    import ssl

    found = _find(exc, ssl.SSLCertVerificationError)
    if isinstance(found, ssl.SSLCertVerificationError):
        return found.verify_message or "certificate verify failed"
    return "certificate verify failed" if "CERTIFICATE_VERIFY_FAILED" in str(exc) else None


def _proxy_wants_credentials(url: str) -> str:
    from tokenwalk.sources.transport import proxy_for, shown_proxy

    proxy = shown_proxy(proxy_for(url) or "")
    var = "HTTPS_PROXY" if url.startswith("https:") else "HTTP_PROXY"
    return (
        f"the proxy {proxy} asks for credentials (HTTP 407); give them in the proxy URL: "
        f"{var}=http://user:password@host:port"
    )


class HttpRangeReader:
    """A forward-only ``read(n)`` over a remote file, fetched in ranges sized from the header.

    `auth_headers` (e.g. ``Authorization``) are sent only to the origin of `url`; a redirect to
    another host drops them. `auth_hint` builds the message of a 401/403 answer (the caller knows
    which repository and how to log in). `fetched_bytes` counts body bytes taken off the wire,
    `requests` the HTTP requests sent (redirect hops included), `asked_bytes` the bytes of the
    ranges asked for. ``read(n)`` may return fewer than n bytes when the current range ends (the
    parser asks again), so that no new range is asked for bytes the parser does not need.
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
        self.asked_bytes = 0
        self.pos = 0  # next byte offset handed to the parser
        self.data = bytearray() if keep_bytes else None
        self.scan = HeaderScan()
        self._failures = 0
        self._chunk = self.opt.first_request_bytes
        self._transport: Transport | None = None
        self._resp: BaseHTTPResponse | None = None
        self._resp_pos = 0
        self._resp_end = 0
        self._target = url  # where range requests go: the last redirect target, once known

    # -- public -----------------------------------------------------------------------------
    def open(self) -> RemoteFile:
        """Send the first request, learning the file's size and ETag before parsing starts."""
        self._with_retries(lambda: self._request(0))
        return self.info

    def read(self, n: int) -> bytes:
        """Up to `n` bytes from the current offset; fewer at the end of the file or of a range."""
        out = bytearray()
        while len(out) < n:
            if self.info.size is not None and self.pos >= self.info.size:
                break
            if self.pos >= self.opt.max_header_bytes:
                raise SourceError(
                    f"read {self.pos / 2**20:.0f} MiB of {self.label} without reaching the end "
                    "of the GGUF header; giving up (is it a GGUF file?)"
                )
            if out and not self._range_left():
                break  # the parser asks again if it needs more; then the next range is sized
            want = n - len(out)
            got = self._with_retries(lambda want=want: self._read_some(want))
            if not got:
                break
            out += got
        return bytes(out)

    def close(self) -> None:
        """Drop the connection (and whatever of the current range was not read)."""
        self._drop()
        if self._transport is not None:
            self._transport.close()
            self._transport = None
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
    def _range_left(self) -> bool:
        return self._resp is not None and self._resp_pos < self._resp_end

    def _read_some(self, want: int) -> bytes:
        if not self._range_left():
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
        if self.data is not None:
            self.data += data
        return data

    def _body(self, n: int) -> bytes:
        import urllib3

        assert self._resp is not None
        try:
            data = self._resp.read(n)
        except urllib3.exceptions.ReadTimeoutError:
            raise _Transient(
                f"{self.label}: timed out after {self.opt.timeout_s:g} s waiting for data",
                timeout=True,
            ) from None
        except (urllib3.exceptions.ProtocolError, urllib3.exceptions.IncompleteRead):
            raise _Transient(f"{self.label}: the connection closed at byte {self.pos:,}") from None
        except (OSError, urllib3.exceptions.HTTPError) as exc:
            raise _Transient(
                f"{self.label}: connection lost at byte {self.pos:,} ({_reason(exc)})"
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
    def _range_end(self, start: int) -> int:
        """The last byte (inclusive) of the range to ask for at `start`.

        The first range is `first_request_bytes`. After it the header scan bounds the header's
        end from below (min_end) and, once only tensor infos are left, from above (max_end);
        the range stops at min(min_end + slack, max_end), so it never reaches more than the
        slack past the header. It is at least `min_request_bytes` and at most
        `max_request_bytes` long. Without a scan (bytes that are not a GGUF header) the ranges
        double from the first one.
        """
        opt = self.opt
        low = None
        if start > 0 and self.data is not None and start == len(self.data):
            self.scan.advance(self.data)
            low = self.scan.min_end
        if low is None:
            length = self._chunk
            self._chunk = min(self._chunk * 2, opt.max_request_bytes)
        else:
            end = low + opt.slack_bytes
            high = self.scan.max_end
            if high is not None:
                end = min(end, high)
            length = min(max(end - start, opt.min_request_bytes), opt.max_request_bytes)
        last = start + length - 1
        if self.info.size is not None:
            last = min(last, self.info.size - 1)
        return last

    def _request(self, start: int) -> None:
        """Ask for the next range starting at `start`; leaves `_resp` ready to read."""
        self._close_response()
        last = self._range_end(start)
        resp, url = self._get(self._target, {"Range": f"bytes={start}-{last}"})
        self.asked_bytes += max(0, last + 1 - start)
        self._resp = resp
        self._target = url
        self.info.final_url = url
        etag = resp.headers.get("ETag")
        if etag:
            self.info.etag = etag
        if resp.status == 206:
            content_range = resp.headers.get("Content-Range")
            m = _CONTENT_RANGE.match(content_range or "")
            if not m or int(m.group(1)) != start:
                raise SourceError(
                    f"{self.label}: the server answered range {start}- with '{content_range}'"
                )
            if m.group(3) != "*":
                self.info.size = int(m.group(3))
            self._resp_pos, self._resp_end = start, int(m.group(2)) + 1
        elif resp.status == 200:
            self.info.range_ignored = True
            length_header = resp.headers.get("Content-Length")
            total = int(length_header) if length_header and length_header.isdigit() else None
            self.info.size = total
            self._resp_pos = 0
            self._resp_end = total if total is not None else 1 << 62
        elif resp.status == 416:
            m = _UNSATISFIABLE.match(resp.headers.get("Content-Range") or "")
            self.info.size = int(m.group(1)) if m else start
            self._resp_pos = self._resp_end = start
        else:  # _get only returns 200, 206 and 416
            raise AssertionError(resp.status)

    def _get(self, url: str, extra: dict[str, str]) -> tuple[BaseHTTPResponse, str]:
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
                location = resp.headers.get("Location")
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
            reason = resp.reason or ""
            if status in _RETRY_STATUS:
                raise _Transient(f"{self.label}: the server answered HTTP {status} {reason}")
            if status == 407:
                raise SourceError(_proxy_wants_credentials(url))
            raise SourceError(f"{self.label}: the server answered HTTP {status} {reason}")
        raise SourceError(f"{self.label}: more than {self.opt.max_redirects} redirects")

    def _send(self, url: str, headers: dict[str, str]) -> BaseHTTPResponse:
        import urllib3

        from tokenwalk.sources.transport import Transport, proxy_for, shown_proxy

        if self._transport is None:
            self._transport = Transport(self.opt.timeout_s)
        _, host, port = _origin(url)
        where = f"{host}:{port}"
        self.requests += 1
        exc_types = urllib3.exceptions
        try:
            return self._transport.send(url, headers)
        except exc_types.ProxyError as exc:
            proxy = shown_proxy(proxy_for(url) or "")
            if _is_refused(exc):
                raise SourceError(
                    f"cannot connect to the proxy {proxy} (connection refused)"
                ) from None
            if _find(exc, exc_types.NameResolutionError) is not None:
                raise SourceError(f"cannot resolve the host of the proxy {proxy}") from None
            if "407" in str(exc) or "407" in _reason(exc):
                raise SourceError(_proxy_wants_credentials(url)) from None
            raise _Transient(f"{self.label}: through the proxy {proxy}: {_reason(exc)}") from None
        except exc_types.NameResolutionError:
            raise SourceError(f"cannot resolve host '{host}'") from None
        except exc_types.NewConnectionError as exc:
            if _is_refused(exc):  # nothing listens there: retrying would only make the user wait
                raise SourceError(f"cannot connect to {where} (connection refused)") from None
            raise _Transient(f"{self.label}: cannot connect to {where} ({_reason(exc)})") from None
        except (exc_types.ConnectTimeoutError, exc_types.ReadTimeoutError):
            raise _Transient(
                f"{self.label}: timed out after {self.opt.timeout_s:g} s waiting for {where}",
                timeout=True,
            ) from None
        except exc_types.SSLError as exc:
            problem = _cert_problem(exc)
            if problem is not None:
                raise SourceError(
                    f"the certificate of {where} is not trusted ({problem}); behind a "
                    "TLS-inspecting proxy, point SSL_CERT_FILE at your organisation's CA bundle"
                ) from None
            raise _Transient(f"{self.label}: TLS error with {where} ({_reason(exc)})") from None
        except exc_types.LocationValueError as exc:
            raise SourceError(f"not a usable URL: {url} ({exc})") from None
        except (OSError, exc_types.HTTPError) as exc:
            raise _Transient(f"{self.label}: request to {where} failed ({_reason(exc)})") from None

    def _close_response(self, resp: BaseHTTPResponse | None = None) -> None:
        """Finish with a response: keep its connection only if its body was read to the end."""
        resp = resp or self._resp
        if resp is None:
            return
        if resp is self._resp:
            self._resp = None
        try:
            length = resp.length_remaining
            if length is not None and length <= _PIECE:
                resp.read()  # a small redirect or error body: read it, keep the connection
                resp.release_conn()
                return
        except Exception:  # noqa: BLE001 - any failure here only means the connection goes
            pass
        resp.close()  # an unread body: closing the connection is how we stop it
        resp.release_conn()

    def _drop(self) -> None:
        if self._resp is not None:
            resp, self._resp = self._resp, None
            resp.close()
            resp.release_conn()


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
