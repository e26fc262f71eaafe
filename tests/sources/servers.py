"""Real HTTP servers on 127.0.0.1 for source tests, each misbehaving in one chosen way.

A `Site` serves files from a dict of path -> local file (or bytes), honouring ``Range`` unless
told otherwise, and records every request (path, Range, Authorization, bytes sent) so tests can
check what was asked and what went over the wire; given a TLS context it serves https.
A `ForwardProxy` is a corporate-style HTTP proxy on 127.0.0.1 (absolute-form GET for http URLs,
CONNECT tunnels for https ones) that relays only to 127.0.0.1 / localhost and records what it
relayed.
"""

from __future__ import annotations

import http.client
import json
import re
import select
import socket
import ssl
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tokenwalk.sources import HttpOptions

# Small timings so failure tests take milliseconds; retries still happen.
FAST = HttpOptions(timeout_s=2.0, retries=2, backoff_s=0.01)

_RANGE = re.compile(r"bytes=(\d+)-(\d*)")


@dataclass
class Seen:
    path: str
    range: str | None
    auth: str | None
    host: str | None
    status: int = 0
    sent: int = 0
    start: int = 0


@dataclass
class Behaviour:
    ignore_range: bool = False
    status: int | None = None  # answer every file request with this status
    redirect_to: str | None = None  # base URL to redirect file requests to (302)
    delay_s: float = 0.0  # wait before answering
    drop_after: int | None = None  # close the connection after sending this many body bytes
    drop_times: int = 0  # ... for this many requests, then behave (a huge number: always)
    error_5xx_times: int = 0  # answer 503 this many times first
    json_routes: dict[str, Any] = field(default_factory=dict)  # exact path -> JSON body
    json_5xx_times: int = 0  # answer 503 this many times first on each JSON route


class Site:
    """A ThreadingHTTPServer in a thread; `url(path)` gives the address of a served path."""

    def __init__(
        self,
        files: dict[str, Path | bytes] | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        tls: ssl.SSLContext | None = None,
    ):
        self.files = dict(files or {})
        self.behaviour = Behaviour()
        self.seen: list[Seen] = []
        self.lock = threading.Lock()
        self.host_name = host
        site = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                site._handle(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *a: None  # a client hanging up is what we test
        if tls is not None:  # the handshake happens in the handler's thread, on first read
            self.server.socket = tls.wrap_socket(
                self.server.socket, server_side=True, do_handshake_on_connect=False
            )
        self.scheme = "https" if tls is not None else "http"
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def base(self) -> str:
        return f"{self.scheme}://{self.host_name}:{self.port}"

    def url(self, path: str) -> str:
        return self.base + path

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def file_requests(self) -> list[Seen]:
        return [s for s in self.seen if s.path in self.files]

    def asked_bytes(self) -> int:
        """Bytes of the ranges asked for (a range without an end counts as the whole file)."""
        total = 0
        for s in self.file_requests():
            m = _RANGE.fullmatch(s.range or "")
            src = self.files[s.path]
            size = len(src) if isinstance(src, bytes) else Path(src).stat().st_size
            if m is None:
                total += size
            else:
                end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
                total += max(0, end + 1 - int(m.group(1)))
        return total

    # -- serving ----------------------------------------------------------------------------
    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        b = self.behaviour
        path = h.path.split("?", 1)[0]
        seen = Seen(path, h.headers.get("Range"), h.headers.get("Authorization"), h.headers["Host"])
        with self.lock:
            self.seen.append(seen)
            n_file = len(self.file_requests())
        if b.delay_s:
            time.sleep(b.delay_s)
        if path in b.json_routes:
            with self.lock:
                busy = sum(x.path == path for x in self.seen) <= b.json_5xx_times
            if busy:
                self._reply(h, seen, 503, b"busy")
                return
            body = json.dumps(b.json_routes[path]).encode()
            self._reply(h, seen, 200, body, {"Content-Type": "application/json"})
            return
        if path not in self.files:
            self._reply(h, seen, 404, b"not found")
            return
        if b.status is not None:
            self._reply(h, seen, b.status, b"refused")
            return
        if b.redirect_to is not None:
            self._reply(h, seen, 302, b"", {"Location": b.redirect_to + h.path})
            return
        if n_file <= b.error_5xx_times:
            self._reply(h, seen, 503, b"busy")
            return
        src = self.files[path]
        data = src if isinstance(src, bytes) else None
        size = len(data) if data is not None else Path(src).stat().st_size
        start, end, status = 0, size - 1, 200
        m = _RANGE.fullmatch(seen.range or "")
        if m and not b.ignore_range:
            start = int(m.group(1))
            end = min(int(m.group(2)) if m.group(2) else size - 1, size - 1)
            if start >= size:
                self._reply(h, seen, 416, b"", {"Content-Range": f"bytes */{size}"})
                return
            status = 206
        seen.status, seen.start = status, start
        h.send_response(status)
        h.send_header("Content-Length", str(end - start + 1))
        h.send_header("ETag", f'"etag-{size}"')
        h.send_header("Accept-Ranges", "none" if b.ignore_range else "bytes")
        if status == 206:
            h.send_header("Content-Range", f"bytes {start}-{end}/{size}")
        h.end_headers()
        drop = b.drop_after if n_file <= b.drop_times else None
        try:
            fh = open(src, "rb") if data is None else None
            if fh is not None:
                fh.seek(start)
            pos = start
            while pos <= end:
                n = min(1 << 16, end + 1 - pos)
                if drop is not None:
                    n = min(n, drop - seen.sent)
                    if n <= 0:
                        h.wfile.flush()
                        h.close_connection = True
                        h.connection.shutdown(2)
                        return
                chunk = fh.read(n) if fh is not None else data[pos : pos + n]
                h.wfile.write(chunk)
                seen.sent += len(chunk)
                pos += len(chunk)
        except (BrokenPipeError, ConnectionResetError, OSError):
            h.close_connection = True
        finally:
            if data is None and fh is not None:
                fh.close()

    def _reply(
        self,
        h: BaseHTTPRequestHandler,
        seen: Seen,
        status: int,
        body: bytes,
        headers: dict[str, str] | None = None,
    ) -> None:
        seen.status = status
        h.send_response(status)
        for k, v in (headers or {}).items():
            h.send_header(k, v)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        try:
            h.wfile.write(body)
        except OSError:
            h.close_connection = True


@dataclass
class Relayed:
    method: str
    target: str  # the absolute URL of a GET, host:port of a CONNECT
    range: str | None = None
    proxy_auth: str | None = None


class ForwardProxy:
    """An HTTP forward proxy on 127.0.0.1 that relays to 127.0.0.1 / localhost only."""

    allowed_hosts = ("127.0.0.1", "localhost")

    def __init__(self, port: int = 0) -> None:
        self.relayed: list[Relayed] = []
        self.require_auth: str | None = None  # a Proxy-Authorization value; others get 407
        proxy = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:  # noqa: N802
                proxy._get(self)

            def do_CONNECT(self) -> None:  # noqa: N802
                proxy._connect(self)

        self.server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.server.daemon_threads = True
        self.server.handle_error = lambda *a: None
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _refuse(self, h: BaseHTTPRequestHandler) -> None:
        h.send_response(403)
        h.send_header("Content-Length", "0")
        h.end_headers()

    def _unauthorized(self, h: BaseHTTPRequestHandler) -> bool:
        if self.require_auth is None or h.headers.get("Proxy-Authorization") == self.require_auth:
            return False
        h.send_response(407)
        h.send_header("Proxy-Authenticate", 'Basic realm="corp"')
        h.send_header("Content-Length", "0")
        h.end_headers()
        return True

    def _get(self, h: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(h.path)
        self.relayed.append(
            Relayed("GET", h.path, h.headers.get("Range"), h.headers.get("Proxy-Authorization"))
        )
        if parts.scheme != "http" or parts.hostname not in self.allowed_hosts:
            self._refuse(h)
            return
        if self._unauthorized(h):
            return
        hop = {"connection", "proxy-connection", "proxy-authorization", "keep-alive", "host"}
        headers = {k: v for k, v in h.headers.items() if k.lower() not in hop}
        upstream = http.client.HTTPConnection(parts.hostname, parts.port or 80, timeout=5)
        try:
            path = parts.path + (f"?{parts.query}" if parts.query else "")
            upstream.request("GET", path, headers=headers)
            resp = upstream.getresponse()
            h.send_response(resp.status, resp.reason)
            for k, v in resp.getheaders():
                if k.lower() not in hop:
                    h.send_header(k, v)
            h.end_headers()
            while chunk := resp.read(1 << 16):
                h.wfile.write(chunk)
        except OSError:
            h.close_connection = True
        finally:
            upstream.close()

    def _connect(self, h: BaseHTTPRequestHandler) -> None:
        host, _, port = h.path.rpartition(":")
        self.relayed.append(
            Relayed("CONNECT", h.path, proxy_auth=h.headers.get("Proxy-Authorization"))
        )
        h.close_connection = True
        if host not in self.allowed_hosts:
            self._refuse(h)
            return
        if self._unauthorized(h):
            return
        try:
            upstream = socket.create_connection((host, int(port)), timeout=5)
        except OSError:
            h.send_response(502)
            h.send_header("Content-Length", "0")
            h.end_headers()
            return
        h.send_response(200, "Connection established")
        h.end_headers()
        h.wfile.flush()
        client = h.connection
        try:
            while True:
                ready, _, _ = select.select([client, upstream], [], [], 5)
                if not ready:
                    return
                for sock in ready:
                    data = sock.recv(1 << 16)
                    if not data:
                        return
                    (upstream if sock is client else client).sendall(data)
        except OSError:
            return
        finally:
            upstream.close()
