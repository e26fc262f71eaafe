"""The header cache: a second query is one tiny request, or none when the server is gone."""

from __future__ import annotations

import pytest
from servers import FAST

from tokenwalk.sources import load_headers


def test_second_query_uses_the_cache(site, small_model, private_cache):
    path, header_bytes, _ = small_model
    s = site({"/m.gguf": path})
    first = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert not first.cached and first.fetched_bytes >= header_bytes
    assert any(private_cache.iterdir())
    second = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert second.cached and second.fetched_bytes == 0 and second.requests == 1
    assert second.headers[0].tensors == first.headers[0].tensors
    assert second.headers[0].metadata.keys() == first.headers[0].metadata.keys()


def test_cache_works_offline(site, small_model):
    s = site({"/m.gguf": small_model[0]})
    url = s.url("/m.gguf")
    load_headers(url, http_options=FAST, progress=False)
    s.close()
    r = load_headers(url, http_options=FAST, progress=False)
    assert r.cached and r.headers[0].data_offset == small_model[1]


def test_offline_switch_skips_the_check(site, small_model, monkeypatch):
    s = site({"/m.gguf": small_model[0]})
    load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    monkeypatch.setenv("TOKENWALK_OFFLINE", "1")
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert r.cached and r.requests == 0


def test_changed_file_is_fetched_again(site, small_model, big_model):
    s = site({"/m.gguf": small_model[0]})
    load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    s.files["/m.gguf"] = big_model[0]  # new size and ETag
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    assert not r.cached and r.headers[0].data_offset == big_model[1]


def test_no_cache_fetches_again(site, small_model):
    s = site({"/m.gguf": small_model[0]})
    load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    r = load_headers(s.url("/m.gguf"), http_options=FAST, progress=False, no_cache=True)
    assert not r.cached and r.fetched_bytes > 0


def test_a_deleted_file_is_not_served_from_the_cache(site, small_model):
    s = site({"/m.gguf": small_model[0]})
    load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
    del s.files["/m.gguf"]
    with pytest.raises(Exception, match="not found"):
        load_headers(s.url("/m.gguf"), http_options=FAST, progress=False)
