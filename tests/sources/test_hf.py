"""hf:// references against a fake Hub (``HF_ENDPOINT``) that redirects downloads to a fake CDN."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from ggufmake import write_header_only
from servers import FAST

from tokenwalk.errors import SourceError
from tokenwalk.sources import AuthError, load_headers
from tokenwalk.sources.hf import parse_hf_ref, pick_files

pytest.importorskip("huggingface_hub")

REPO = "acme/tiny-GGUF"
FILES = [
    "README.md",
    "tiny-Q4_K_M.gguf",
    "tiny-Q8_0.gguf",
    "mmproj-tiny-Q8_0.gguf",
    "Q6_K/tiny-Q6_K-00001-of-00002.gguf",
    "Q6_K/tiny-Q6_K-00002-of-00002.gguf",
]


@pytest.fixture
def hub(site, tmp_path, monkeypatch):
    """A fake Hub on 127.0.0.1 whose resolve/ URLs redirect to a CDN on 'localhost'."""
    import huggingface_hub.constants

    monkeypatch.setattr(huggingface_hub.constants, "HF_TOKEN_PATH", str(tmp_path / "no-token"))
    served: dict[str, Path] = {}
    for name in FILES:
        if name.endswith(".gguf"):
            p = tmp_path / name.replace("/", "_")
            split = None
            if "-of-" in name:
                split = (int(name.split("-of-")[0][-5:]) - 1, 2)
            write_header_only(p, n_tokens=100, split=split)
            served[f"/{REPO}/resolve/main/{name}"] = p
    cdn = site(served, host="localhost")
    hub = site(served)
    hub.behaviour.redirect_to = cdn.base
    tree = [{"type": "file", "path": f, "size": 1, "oid": "0" * 40} for f in FILES]
    hub.behaviour.json_routes[f"/api/models/{REPO}/tree/main"] = tree
    monkeypatch.setenv("HF_ENDPOINT", hub.base)
    return hub, cdn


def test_file_ref_goes_through_the_cdn_without_the_token(hub, monkeypatch):
    hub_site, cdn = hub
    monkeypatch.setenv("HF_TOKEN", "hf_s3cret")
    r = load_headers(f"hf://{REPO}/tiny-Q8_0.gguf", http_options=FAST, progress=False)
    assert r.headers[0].architecture == "qwen2"
    assert all(x.auth == "Bearer hf_s3cret" for x in hub_site.seen)
    assert cdn.seen and all(x.auth is None for x in cdn.seen)


def test_quant_picks_the_file_from_the_listing(hub):
    r = load_headers(f"hf://{REPO}", quant="q4_k_m", http_options=FAST, progress=False)
    assert r.locations[0].endswith("/resolve/main/tiny-Q4_K_M.gguf")
    assert r.quant_used


def test_quant_in_the_ref(hub):
    r = load_headers(f"hf://{REPO}:Q8_0", http_options=FAST, progress=False)
    assert r.locations[0].endswith("/tiny-Q8_0.gguf")  # not the mmproj file


def test_quant_picks_a_split_set(hub):
    r = load_headers(f"hf://{REPO}", quant="Q6_K", http_options=FAST, progress=False)
    assert len(r.headers) == 2
    assert [h.metadata["split.no"] for h in r.headers] == [0, 1]


def test_unknown_quant_lists_what_is_there(hub):
    with pytest.raises(SourceError, match=r"no IQ2_XS GGUF file in hf://acme/tiny-GGUF \(avail"):
        load_headers(f"hf://{REPO}", quant="IQ2_XS", http_options=FAST, progress=False)


def test_no_quant_with_several_files_asks_for_one(hub):
    with pytest.raises(SourceError, match="several GGUF files; pick one with --quant"):
        load_headers(f"hf://{REPO}", http_options=FAST, progress=False)


def test_listing_works_offline_from_the_cache(hub):
    hub_site, _ = hub
    load_headers(f"hf://{REPO}", quant="Q8_0", http_options=FAST, progress=False)
    hub_site.close()  # the Hub is unreachable now
    r = load_headers(f"hf://{REPO}", quant="Q8_0", http_options=FAST, progress=False)
    assert r.cached


def test_gated_file_says_how_to_authenticate(hub):
    hub_site, _ = hub
    hub_site.behaviour.status = 401
    with pytest.raises(AuthError, match=r"hf://acme/tiny-GGUF refused \(HTTP 401.*HF_TOKEN"):
        load_headers(f"hf://{REPO}/tiny-Q8_0.gguf", http_options=FAST, progress=False)


def test_an_unreachable_hub_is_said_at_once(hub, monkeypatch):
    """A Hub that refuses connections is refused in one line before huggingface_hub is asked
    (its own retries took half a minute), and the last listing seen is used where there is one."""
    import socket

    import huggingface_hub

    hub_site, _ = hub
    load_headers(f"hf://{REPO}", quant="Q8_0", http_options=FAST, progress=False)
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("huggingface_hub was asked")

    monkeypatch.setattr(huggingface_hub, "HfApi", never)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{closed}")
    with pytest.raises(SourceError, match=r"cannot be reached \(.*refused"):
        load_headers("hf://acme/never-listed-GGUF", http_options=FAST, progress=False)
    monkeypatch.setenv("HF_ENDPOINT", hub_site.base)
    hub_site.close()
    r = load_headers(f"hf://{REPO}", quant="Q8_0", http_options=FAST, progress=False)
    assert r.cached


def test_behind_a_proxy_the_hub_is_not_asked_directly(monkeypatch):
    """With a proxy set, a direct connection failing says nothing about the Hub: the check
    leaves it to the requests, which go through the proxy."""
    import socket

    from tokenwalk.sources.hf import unreachable

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    for var in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(var, raising=False)
    assert "refused" in unreachable(closed)
    monkeypatch.setenv("HTTP_PROXY", "http://proxy.invalid:3128")
    assert unreachable(closed) is None
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")  # bypassed: asked directly again
    assert "refused" in unreachable(closed)


@pytest.mark.parametrize("var", ["TOKENWALK_OFFLINE", "HF_HUB_OFFLINE"])
def test_offline_lists_from_the_cache_alone(hub, monkeypatch, var):
    """Either variable keeps every request back, the listing's too (TOKENWALK_OFFLINE let
    huggingface_hub list the repository)."""
    import huggingface_hub

    load_headers(f"hf://{REPO}", quant="Q8_0", http_options=FAST, progress=False)

    def never(*args: object, **kwargs: object) -> None:
        raise AssertionError("huggingface_hub was asked")

    monkeypatch.setattr(huggingface_hub, "HfApi", never)
    monkeypatch.setenv(var, "1")
    assert load_headers(f"hf://{REPO}", quant="Q8_0", http_options=FAST, progress=False).cached
    with pytest.raises(SourceError, match="offline .* never listed"):
        load_headers("hf://acme/never-listed-GGUF", http_options=FAST, progress=False)


def test_unknown_repo(hub):
    with pytest.raises(SourceError, match="hf://acme/nothing"):
        load_headers("hf://acme/nothing", quant="Q4_K_M", http_options=FAST, progress=False)


def test_missing_huggingface_hub(monkeypatch):
    monkeypatch.setitem(sys.modules, "huggingface_hub", None)
    with pytest.raises(SourceError, match=r"pip install huggingface_hub .*pip install '\.\[hf\]'"):
        load_headers(f"hf://{REPO}/tiny-Q8_0.gguf", progress=False)


def test_parse_refs():
    p = parse_hf_ref("hf://org/repo@v2/sub/x.gguf")
    assert (p.repo_id, p.revision, p.filename) == ("org/repo", "v2", "sub/x.gguf")
    assert parse_hf_ref("hf://org/repo:Q4_K_M").quant == "Q4_K_M"
    with pytest.raises(SourceError):
        parse_hf_ref("hf://justorg")
    with pytest.raises(SourceError, match="not a .gguf file"):
        parse_hf_ref("hf://org/repo/config.json")


def test_pick_does_not_confuse_neighbouring_quants():
    files = ["m-Q4_K.gguf", "m-Q4_K_M.gguf", "m-IQ4_XS.gguf", "m-UD-Q4_K_XL.gguf"]
    assert pick_files(files, "o/r", "Q4_K") == ["m-Q4_K.gguf"]
    assert pick_files(files, "o/r", "Q4_K_M") == ["m-Q4_K_M.gguf"]
    assert pick_files(files, "o/r", "Q4_K_XL") == ["m-UD-Q4_K_XL.gguf"]


def test_a_busy_hub_is_retried_without_its_library_s_messages(hub, capsys, caplog):
    """huggingface_hub retries a 503 and logs each retry on stderr; tokenwalk keeps stderr to
    its own lines (`size hf://...` printed the library's retry message above its error)."""
    hub_site, _ = hub
    hub_site.behaviour.json_5xx_times = 1
    try:
        r = load_headers(f"hf://{REPO}:Q8_0", http_options=FAST, progress=False)
    except SourceError as exc:  # huggingface_hub 1.x lists once: the 503 is our one line
        assert "503" in str(exc)
    else:  # 2.x retries: the 503, then the listing
        assert r.headers[0].architecture == "qwen2"
        tree = f"/api/models/{REPO}/tree/main"
        assert sum(x.path == tree for x in hub_site.seen) == 2
    assert capsys.readouterr().err == ""
    # pytest takes log records before they reach stderr: none of the library's was made
    assert not [x for x in caplog.records if x.name.startswith("huggingface_hub")]


def test_the_default_endpoint_in_a_fresh_interpreter():
    """huggingface_hub 1.x and later import their submodules lazily: the package has no
    `constants` until something imported it (`tokenwalk size hf://...` was an internal error)."""
    import os
    import subprocess

    env = {k: v for k, v in os.environ.items() if k != "HF_ENDPOINT"}
    code = "from tokenwalk.sources.hf import endpoint; print(endpoint())"
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "https://huggingface.co"


def test_an_hf_ref_in_a_fresh_process(hub, tmp_path):
    """`tokenwalk size hf://...` as a user runs it: a new interpreter, where huggingface_hub
    has imported nothing yet (the fixture above imports its constants in this one)."""
    import json
    import os
    import subprocess

    hub_site, _ = hub
    env = os.environ | {
        "HF_ENDPOINT": hub_site.base,
        "HF_TOKEN_PATH": str(tmp_path / "no-token"),
        "TOKENWALK_CACHE_DIR": str(tmp_path / "cache"),
    }
    argv = [sys.executable, "-m", "tokenwalk", "size", f"hf://{REPO}:Q8_0", "--json"]
    out = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "tiny-GGUF:Q8_0" in json.loads(out.stdout)["model"]
