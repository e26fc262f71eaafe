"""docs/json.md is the contract of `--json`: each command's real keys are the ones it lists.

Each command runs with --json on a catalogue model; the set of keys of its answer (nested keys
and the keys of list items included) must equal what the page documents, with the JSON type the
page gives. A key added, renamed or removed without the page fails here.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
_spec = importlib.util.spec_from_file_location("json_doc", ROOT / "scripts" / "json_doc.py")
json_doc = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(json_doc)

PAGE = json_doc.parse_page((ROOT / "docs" / "json.md").read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def answers() -> dict:
    return {}


def answer(answers: dict, name: str):
    if name not in answers:
        answers[name] = json_doc.run_json(json_doc.COMMANDS[name])
    return answers[name]


@pytest.mark.parametrize("name", list(json_doc.COMMANDS))
def test_keys_are_the_documented_ones(name, answers, monkeypatch):
    monkeypatch.chdir(ROOT)
    doc = json_doc.documented(PAGE, name)
    assert doc, f"docs/json.md has no table for `{name}`"
    actual = list(json_doc.flatten(answer(answers, name), json_doc.PLACEHOLDERS.get(name)))
    problems = json_doc.compare(doc, actual)
    assert not problems, f"`tokenwalk {name} --json` and docs/json.md differ:\n" + "\n".join(
        problems
    )


def test_every_command_is_documented():
    for name in json_doc.COMMANDS:
        assert name in PAGE, f"docs/json.md has no section for `{name}`"


def test_byte_counts_are_documented_as_integers():
    for section, rows in PAGE.items():
        for path, typ in rows:
            if path.endswith("_bytes") or path.endswith("_bytes_per_token"):
                assert typ.split(" | ")[0] == "int", f"{section}: `{path}` is {typ}"


@pytest.mark.parametrize("name", ["size", "kv", "decode", "prefill", "budget", "trace"])
def test_bytes_and_params_are_integers_in_the_output(name, answers, monkeypatch):
    """A MoE model's reads are expected values and a q8_0 cache has 34/32 bytes an element:
    the JSON still has whole bytes."""
    monkeypatch.chdir(ROOT)
    argv = [a if a != "qwen3-0.6b" else "qwen3-30b-a3b" for a in json_doc.COMMANDS[name]]
    if name in ("kv", "decode", "budget", "trace"):
        argv += ["--kv-type", "q8_0"]
    out = json_doc.run_json(argv)
    for path, value in json_doc.flatten(out):
        leaf = path.rsplit(".", 1)[-1]
        if leaf.endswith("_bytes") or leaf.endswith("_bytes_per_token") or "params" in leaf:
            assert value is None or (type(value) is int), f"{path} = {value!r}"


def test_a_key_renamed_without_the_page_fails():
    doc = json_doc.documented(PAGE, "trace")
    actual = [("n_chunks", 2), ("chunks", 2)]
    problems = json_doc.compare(doc, actual)
    assert "`chunks` is in the output but not documented" in problems
    assert any("prompt_tokens" in p and "not in the output" in p for p in problems)


def test_a_float_where_an_int_is_documented_fails():
    doc = {"kv_bytes": "int"}
    assert json_doc.compare(doc, [("kv_bytes", 1.5e9)]) == ["`kv_bytes` is float, documented int"]
    assert json_doc.compare(doc, [("kv_bytes", 1_500_000_000)]) == []
