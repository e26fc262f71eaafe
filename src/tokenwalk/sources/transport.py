"""The HTTP connections under the range reader: urllib3, with the user's proxy and CA settings.

Imported only when a URL is read, so reading a local file never loads urllib3 or ``ssl``.

What the environment says is honoured, as by most command-line tools:

- proxies: ``HTTPS_PROXY`` / ``https_proxy`` for https URLs, ``HTTP_PROXY`` / ``http_proxy`` for
  http URLs, ``ALL_PROXY`` for both, ``NO_PROXY`` / ``no_proxy`` (host names, domain suffixes,
  ``*``) to bypass them; on macOS and Windows the system proxy settings when no variable is set
  (Python's `urllib.request.getproxies`). ``http://user:password@host:port`` sends Basic proxy
  credentials, and messages show the proxy without them. An https URL goes through the proxy in
  a CONNECT tunnel, so the proxy never sees the path or the ``Authorization`` header.
- certificates: ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` replace the default trust anchors when set
  (a corporate CA bundle); otherwise the operating system's trust store is used, through
  ``truststore`` (the macOS keychain, the Windows store, the Linux CA bundle), falling back to
  OpenSSL's default paths when truststore is not installed.
"""

from __future__ import annotations

import os
import ssl
import urllib.request
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

import urllib3

from tokenwalk.errors import SourceError

__all__ = ["Transport", "proxy_for", "shown_proxy", "ssl_context"]


def proxy_for(url: str) -> str | None:
    """The proxy URL the environment names for `url`, or None for a direct connection."""
    parts = urlsplit(url)
    proxies = urllib.request.getproxies()
    proxy = proxies.get(parts.scheme) or proxies.get("all")
    if not proxy:
        return None
    host = parts.hostname or ""
    if parts.port is not None:
        host_port = f"{host}:{parts.port}"
        if urllib.request.proxy_bypass(host_port):
            return None
    if urllib.request.proxy_bypass(host):
        return None
    if "://" not in proxy:
        proxy = "http://" + proxy  # curl's reading of HTTPS_PROXY=host:port
    return proxy


def shown_proxy(proxy: str) -> str:
    """The proxy URL without its credentials, for messages."""
    parts = urlsplit(proxy)
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def _proxy_headers(proxy: str) -> dict[str, str]:
    """``Proxy-Authorization`` for credentials written in the proxy URL."""
    parts = urlsplit(proxy)
    if parts.username is None:
        return {}
    creds = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return dict(urllib3.make_headers(proxy_basic_auth=creds))


def ssl_context() -> ssl.SSLContext:
    """A verifying TLS context: SSL_CERT_FILE / SSL_CERT_DIR if set, else the OS trust store."""
    cafile = os.environ.get("SSL_CERT_FILE") or None
    capath = os.environ.get("SSL_CERT_DIR") or None
    if cafile or capath:
        try:
            return ssl.create_default_context(cafile=cafile, capath=capath)
        except (OSError, ssl.SSLError) as exc:
            names = " and ".join(
                f"{var}={val}"
                for var, val in (("SSL_CERT_FILE", cafile), ("SSL_CERT_DIR", capath))
                if val
            )
            reason = getattr(exc, "strerror", None) or str(exc)
            raise SourceError(f"cannot load the certificates of {names} ({reason})") from None
    try:
        import truststore
    except ImportError:
        return ssl.create_default_context()
    return truststore.SSLContext(ssl.PROTOCOL_TLS_CLIENT)


class Transport:
    """urllib3 connection pools, one per origin and proxy; no retries or redirects of its own.

    The range reader does its own retrying (resuming where the parser stopped) and its own
    redirects (so that credentials stay on their host), so urllib3 is asked for neither.
    """

    def __init__(self, timeout_s: float) -> None:
        self.timeout = urllib3.Timeout(connect=timeout_s, read=timeout_s)
        self._ssl: ssl.SSLContext | None = None
        self._managers: dict[tuple[str | None, bool], urllib3.PoolManager] = {}

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl_context()
        return self._ssl

    def _manager(self, url: str) -> urllib3.PoolManager:
        https = urlsplit(url).scheme == "https"
        proxy = proxy_for(url)
        manager = self._managers.get((proxy, https))
        if manager is not None:
            return manager
        kwargs: dict[str, Any] = {"num_pools": 4, "maxsize": 1, "retries": False}
        if https:
            kwargs["ssl_context"] = self._context()
        if proxy is None:
            manager = urllib3.PoolManager(**kwargs)
        else:
            try:
                manager = urllib3.ProxyManager(
                    shown_proxy(proxy),
                    proxy_headers=_proxy_headers(proxy),
                    proxy_ssl_context=(
                        self._context() if urlsplit(proxy).scheme == "https" else None
                    ),
                    **kwargs,
                )
            except (ValueError, AssertionError, urllib3.exceptions.HTTPError):
                raise SourceError(
                    f"cannot use the proxy {shown_proxy(proxy)}: tokenwalk speaks to http:// "
                    "and https:// proxies"
                ) from None
        self._managers[(proxy, https)] = manager
        return manager

    def send(self, url: str, headers: dict[str, str]) -> urllib3.BaseHTTPResponse:
        """GET `url`; the answer's body is left unread (urllib3 errors propagate)."""
        return self._manager(url).request(
            "GET",
            url,
            headers=headers,
            preload_content=False,
            decode_content=False,
            redirect=False,
            retries=False,
            timeout=self.timeout,
        )

    def close(self) -> None:
        """Close every pooled connection."""
        for manager in self._managers.values():
            manager.clear()
        self._managers.clear()
