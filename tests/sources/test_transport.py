"""The user's network settings: proxies from the environment, NO_PROXY, and a CA from SSL_CERT_FILE.

The proxy is a recording forward proxy on 127.0.0.1 (`servers.ForwardProxy`); the https server
uses a certificate from a CA made for the test with trustme, which no trust store knows.
"""

from __future__ import annotations

import base64
import ssl
import subprocess
from pathlib import Path

import pytest
from servers import FAST

from tokenwalk.errors import SourceError
from tokenwalk.sources import load_headers


@pytest.fixture
def tls(tmp_path: Path) -> tuple[ssl.SSLContext, Path]:
    """A server TLS context for 127.0.0.1 / localhost and the file of the CA that signed it."""
    trustme = pytest.importorskip("trustme")
    ca = trustme.CA()
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ca.issue_cert("127.0.0.1", "localhost").configure_cert(server)
    ca_file = tmp_path / "corporate-ca.pem"
    ca.cert_pem.write_to_path(str(ca_file))
    return server, ca_file


@pytest.mark.parametrize("var", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
def test_http_url_goes_through_the_proxy_the_environment_names(
    site, proxy, small_model, monkeypatch, var
):
    path, header_bytes, _ = small_model
    s = site({"/m.gguf": path})
    monkeypatch.setenv(var, proxy.url)
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == header_bytes
    assert [(x.method, x.target) for x in proxy.relayed] == [("GET", s.url("/m.gguf"))]
    assert proxy.relayed[0].range == s.seen[0].range == f"bytes=0-{2 * 2**20 - 1}"


def test_https_url_goes_through_the_proxy_in_a_tunnel_with_the_ca_of_ssl_cert_file(
    site, proxy, small_model, tls, monkeypatch
):
    """The corporate case: HTTPS_PROXY and a CA bundle in SSL_CERT_FILE."""
    server_tls, ca_file = tls
    path, header_bytes, _ = small_model
    s = site({"/m.gguf": path}, tls=server_tls)
    assert s.base.startswith("https://")
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == header_bytes
    assert [(x.method, x.target) for x in proxy.relayed] == [("CONNECT", f"127.0.0.1:{s.port}")]
    assert [x.path for x in s.seen] == ["/m.gguf"]


@pytest.mark.parametrize("no_proxy", ["127.0.0.1", "localhost,127.0.0.1", "*"])
def test_no_proxy_bypasses_the_proxy(site, proxy, small_model, monkeypatch, no_proxy):
    path, header_bytes, _ = small_model
    s = site({"/m.gguf": path})
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    monkeypatch.setenv("NO_PROXY", no_proxy)
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == header_bytes
    assert proxy.relayed == []
    assert len(s.seen) == 1


def test_proxy_for_reads_the_environment(monkeypatch):
    from tokenwalk.sources.transport import proxy_for

    monkeypatch.setenv("HTTPS_PROXY", "proxy.corp:3128")
    monkeypatch.setenv("NO_PROXY", ".internal,10.1.2.3")
    assert proxy_for("https://huggingface.co/x.gguf") == "http://proxy.corp:3128"
    assert proxy_for("https://models.internal/x.gguf") is None
    assert proxy_for("https://10.1.2.3:8443/x.gguf") is None
    assert proxy_for("http://example.org/x.gguf") is None  # HTTP_PROXY is not set


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_credentials_in_the_proxy_url_are_sent_to_the_proxy_only(
    site, proxy, small_model, tls, monkeypatch, scheme
):
    server_tls, ca_file = tls
    s = site({"/m.gguf": small_model[0]}, tls=server_tls if scheme == "https" else None)
    user_proxy = proxy.url.replace("http://", "http://alice:s%40cret@")
    monkeypatch.setenv(f"{scheme.upper()}_PROXY", user_proxy)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    expected = "Basic " + base64.b64encode(b"alice:s@cret").decode()
    assert [x.proxy_auth for x in proxy.relayed] == [expected]
    assert s.seen and all(x.auth is None for x in s.seen)


@pytest.mark.parametrize("scheme", ["http", "https"])
def test_a_proxy_asking_for_credentials_says_where_they_go(
    site, proxy, small_model, tls, monkeypatch, scheme
):
    server_tls, ca_file = tls
    s = site({"/m.gguf": small_model[0]}, tls=server_tls if scheme == "https" else None)
    proxy.require_auth = "Basic " + base64.b64encode(b"alice:right").decode()
    monkeypatch.setenv(f"{scheme.upper()}_PROXY", proxy.url.replace("//", "//alice:wrong@"))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    with pytest.raises(SourceError) as e:
        load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert "asks for credentials (HTTP 407)" in str(e.value)
    assert "wrong" not in str(e.value) and "\n" not in str(e.value)
    assert len(proxy.relayed) == 1 and s.seen == []  # refused once, not retried


def test_a_dead_proxy_is_one_clear_line_without_its_password(site, small_model, monkeypatch):
    s = site({"/m.gguf": small_model[0]})
    monkeypatch.setenv("HTTP_PROXY", "http://bob:hunter2@127.0.0.1:9")
    with pytest.raises(SourceError) as e:
        load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert str(e.value) == "cannot connect to the proxy http://127.0.0.1:9 (connection refused)"
    assert s.seen == []


def test_a_socks_proxy_is_refused_by_name(site, small_model, monkeypatch):
    s = site({"/m.gguf": small_model[0]})
    monkeypatch.setenv("HTTP_PROXY", "socks5://127.0.0.1:9")
    with pytest.raises(SourceError, match=r"^cannot use the proxy socks5://127.0.0.1:9: "):
        load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)


def test_custom_ca_from_ssl_cert_file(site, small_model, tls, monkeypatch):
    server_tls, ca_file = tls
    path, header_bytes, _ = small_model
    s = site({"/m.gguf": path}, tls=server_tls)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == header_bytes


def test_custom_ca_from_ssl_cert_dir(site, small_model, tls, monkeypatch, tmp_path):
    server_tls, ca_file = tls
    certs = tmp_path / "certs"
    certs.mkdir()
    # OpenSSL looks certificates up in a directory by subject hash: <hash>.0
    try:
        out = subprocess.run(
            ["openssl", "x509", "-hash", "-noout", "-in", str(ca_file)],
            capture_output=True,
            text=True,
            check=True,
        )
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs the openssl command to name a hashed CA directory")
    (certs / f"{out.stdout.strip()}.0").write_bytes(ca_file.read_bytes())
    s = site({"/m.gguf": small_model[0]}, tls=server_tls)
    monkeypatch.setenv("SSL_CERT_DIR", str(certs))
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == small_model[1]


def test_unknown_ca_is_refused_at_once_with_a_hint(site, small_model, tls, monkeypatch):
    server_tls, _ = tls
    s = site({"/m.gguf": small_model[0]}, tls=server_tls)
    with pytest.raises(SourceError) as e:
        load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    msg = str(e.value)
    assert msg.startswith(
        f"the certificate of 127.0.0.1:{s.port} is not trusted (unable to get local issuer"
    )
    assert "SSL_CERT_FILE" in msg and "\n" not in msg
    assert s.seen == []  # no request got through, and none was retried


def test_unreadable_ssl_cert_file_is_named(site, small_model, tls, monkeypatch, tmp_path):
    server_tls, _ = tls
    s = site({"/m.gguf": small_model[0]}, tls=server_tls)
    missing = tmp_path / "nowhere.pem"
    monkeypatch.setenv("SSL_CERT_FILE", str(missing))
    with pytest.raises(
        SourceError, match=f"cannot load the certificates of SSL_CERT_FILE={missing}"
    ):
        load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
