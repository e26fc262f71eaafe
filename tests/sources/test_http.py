"""The HTTP range reader against real servers on 127.0.0.1, each misbehaving one way."""

from __future__ import annotations

from dataclasses import replace

import pytest
from servers import FAST

from tokenwalk.errors import GGUFError, SourceError
from tokenwalk.sources import (
    AuthError,
    NotFoundError,
    TimeoutSourceError,
    load_headers,
)
from tokenwalk.sources.base import read_local
from tokenwalk.sources.http import HttpRangeReader

MiB = 1 << 20


def test_sparse_multi_gb_file_fetches_only_its_header(site, big_model):
    path, header_bytes, size = big_model
    assert size > 4_000_000_000
    s = site({"/big.gguf": path})
    r = load_headers(s.url("/big.gguf"), http_options=FAST, progress=False)
    h = r.headers[0]
    assert h.data_offset == header_bytes
    assert h.file_size == size and h.data_present
    assert r.fetched_bytes <= header_bytes + 2 * MiB
    assert r.requests == len(s.seen) <= 3
    assert all(seen.start < header_bytes for seen in s.seen), "tensor data was requested"
    local, _ = read_local(path)
    assert h.tensors == local.tensors and h.metadata.keys() == local.metadata.keys()


def test_server_ignoring_range_is_abandoned_after_the_header(site, big_model):
    path, header_bytes, _ = big_model
    s = site({"/big.gguf": path})
    s.behaviour.ignore_range = True
    r = load_headers(s.url("/big.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == header_bytes
    assert r.requests == 1
    assert r.fetched_bytes <= header_bytes + 2 * MiB


def test_server_ignoring_range_on_an_endless_header_stops_at_the_limit(site, big_model):
    path, _, _ = big_model
    s = site({"/big.gguf": path})
    s.behaviour.ignore_range = True
    opts = replace(FAST, max_header_bytes=2 * MiB)
    with pytest.raises(SourceError, match="without reaching the end of the GGUF header") as e:
        load_headers(s.url("/big.gguf"), http_options=opts, progress=False)
    assert "\n" not in str(e.value)


def test_redirect_to_another_host_drops_the_token(site, small_model):
    path, header_bytes, _ = small_model
    cdn = site({"/m.gguf": path}, host="localhost")
    hub = site({"/m.gguf": path})
    hub.behaviour.redirect_to = cdn.base
    reader = HttpRangeReader(
        hub.url("/m.gguf"), auth_headers={"Authorization": "Bearer s3cret"}, options=FAST
    )
    with reader:
        reader.open()
        assert len(reader.read(header_bytes)) == header_bytes
    assert [x.auth for x in hub.seen] == ["Bearer s3cret"]
    assert cdn.seen and all(x.auth is None for x in cdn.seen)
    assert reader.requests == 2


def test_slow_server_is_reported_as_a_timeout(site, small_model):
    s = site({"/m.gguf": small_model[0]})
    s.behaviour.delay_s = 1.0
    opts = replace(FAST, timeout_s=0.2, retries=1)
    with pytest.raises(TimeoutSourceError, match=r"timed out after 0.2 s.*gave up after 2 tries"):
        load_headers(s.url("/m.gguf"), http_options=opts, progress=False)


def test_connection_dropped_mid_header_every_time_gives_up(site, big_model):
    s = site({"/big.gguf": big_model[0]})
    s.behaviour.drop_after = 100_000
    s.behaviour.drop_times = 10**9
    opts = replace(FAST, retries=2)
    with pytest.raises(SourceError, match=r"connection closed at byte .*gave up after 3 tries"):
        load_headers(s.url("/big.gguf"), http_options=opts, progress=False)


def test_connection_dropped_once_resumes_where_it_stopped(site, big_model):
    path, header_bytes, _ = big_model
    s = site({"/big.gguf": path})
    s.behaviour.drop_after = 1_000_000
    s.behaviour.drop_times = 1
    r = load_headers(s.url("/big.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == header_bytes
    assert s.seen[1].start == 1_000_000  # resumed, not restarted
    assert r.fetched_bytes <= header_bytes + 2 * MiB


def test_server_errors_are_retried(site, small_model):
    s = site({"/m.gguf": small_model[0]})
    s.behaviour.error_5xx_times = 2
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert [x.status for x in s.seen][:2] == [503, 503]
    assert r.requests == 3


def test_not_found(site):
    s = site({})
    url = s.url("/nothing.gguf")
    with pytest.raises(NotFoundError, match=f"^not found: {url}$"):
        load_headers(url, http_options=FAST, progress=False)


@pytest.mark.parametrize("status", [401, 403])
def test_refused(site, small_model, status):
    s = site({"/m.gguf": small_model[0]})
    s.behaviour.status = status
    with pytest.raises(AuthError, match=f"access refused \\(HTTP {status}\\) for http://"):
        load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)


def test_nothing_listening_is_a_clear_error():
    with pytest.raises(SourceError, match=r"^cannot connect to 127.0.0.1:9 \(connection refused"):
        load_headers("http://127.0.0.1:9/m.gguf", http_options=FAST)


def test_not_a_gguf_file(site):
    s = site({"/page.gguf": b"<html>hello</html>" * 100})
    with pytest.raises(GGUFError, match="page.gguf: not a GGUF file"):
        load_headers(s.url("/page.gguf"), http_options=FAST, progress=False)


def test_remote_split_files_are_read_in_order(site, tmp_path):
    from ggufmake import write_header_only

    files = {}
    for i in range(1, 4):
        p = tmp_path / f"m-{i:05d}-of-00003.gguf"
        write_header_only(p, n_tokens=50, split=(i - 1, 3))
        files[f"/m-{i:05d}-of-00003.gguf"] = p
    s = site(files)
    r = load_headers(s.url("/m-00001-of-00003.gguf"), http_options=FAST, progress=False)
    assert [h.metadata["split.no"] for h in r.headers] == [0, 1, 2]
    assert r.locations[2].endswith("m-00003-of-00003.gguf")
    del s.files["/m-00002-of-00003.gguf"]
    with pytest.raises(NotFoundError, match="missing shard .*m-00002-of-00003.gguf of the 3-part"):
        load_headers(s.url("/m-00001-of-00003.gguf"), http_options=FAST, no_cache=True)


def test_progress_bar_is_quiet_when_stderr_is_not_a_terminal(capsys):
    from tokenwalk.sources.progress import FetchProgress

    p = FetchProgress("m.gguf", enabled=True, delay_s=0.0)
    p.update(123)
    p.finish()
    assert not p.enabled and capsys.readouterr().err == ""


def test_ranges_are_sized_from_the_header_itself(site, qwen_sized_model):
    """An 11 MB header (a 248k-token vocabulary) costs at most 2 MiB more than itself.

    Growing ranges (2 + 4 + 8 MiB) asked for 14 MiB; the ranges are now cut at the header's
    least possible end plus a 1.5 MiB slack, so neither the ranges asked for nor the bytes the
    server sent reach 2 MiB past the header.
    """
    path, header_bytes, size = qwen_sized_model
    assert 10_000_000 < header_bytes < 12_000_000
    s = site({"/q.gguf": path})
    r = load_headers(s.url("/q.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == header_bytes
    assert s.asked_bytes() <= header_bytes + 2 * MiB
    assert sum(x.sent for x in s.seen) <= header_bytes + 2 * MiB
    assert r.fetched_bytes <= header_bytes + 2 * MiB
    assert r.requests == len(s.seen) <= 6
    assert all(x.status == 206 and x.start < header_bytes for x in s.seen)
    assert max(_range_ends(s)) <= header_bytes + 2 * MiB


def test_reading_a_local_header_loads_no_http_client(small_model):
    """The header read of a local file does not import urllib3, ssl or http.client."""
    import subprocess
    import sys

    code = (
        "import sys; from tokenwalk.sources import load_headers; "
        f"load_headers({str(small_model[0])!r}); "
        "print(sorted(m for m in ('urllib3', 'ssl', 'http.client', 'truststore') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def _range_ends(site) -> list[int]:
    return [int(x.range.rsplit("-", 1)[1]) + 1 for x in site.seen]


def test_resumed_ranges_are_sized_from_the_header_too(site, qwen_sized_model):
    path, header_bytes, _ = qwen_sized_model
    s = site({"/q.gguf": path})
    s.behaviour.drop_after = 1_000_000
    s.behaviour.drop_times = 2
    r = load_headers(s.url("/q.gguf"), http_options=FAST, progress=False)
    assert r.headers[0].data_offset == header_bytes
    assert [x.start for x in s.seen[:3]] == [0, 1_000_000, 2_000_000]  # resumed, not restarted
    assert max(_range_ends(s)) <= header_bytes + 2 * MiB
