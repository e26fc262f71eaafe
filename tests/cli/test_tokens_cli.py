"""Prompts as text on the command line: `tokens`, and --prompt-file / --chat on prefill, trace
and budget, with a GGUF that holds a real vocabulary (gpt-2's, on a qwen2 header)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("tokenizers")
pytest.importorskip("jinja2")

from vocabmake import CHAT, CHATML, DOC, VOCAB_DIR, model_with_vocab  # noqa: E402

from tokenwalk.cli import main  # noqa: E402

FIXTURES = Path(__file__).parents[1] / "fixtures"
LAPTOP = ["--machine", "radeon-860m"]


@pytest.fixture(scope="module")
def model(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("vocab") / "qwen-gpt2vocab.gguf"
    model_with_vocab(
        FIXTURES / "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf",
        VOCAB_DIR / "ggml-vocab-gpt-2.gguf",
        out,
        template=CHATML,
    )
    return str(out)


@pytest.fixture
def doc(tmp_path: Path) -> str:
    p = tmp_path / "doc.txt"
    p.write_text(DOC)
    return str(p)


@pytest.fixture
def chat(tmp_path: Path) -> str:
    p = tmp_path / "chat.json"
    p.write_text(json.dumps(CHAT))
    return str(p)


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_tokens_counts_a_file(capsys, model: str, doc: str) -> None:
    code, out, err = run(capsys, "tokens", model, doc, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert d["prompt_tokens"] == 1400 and d["counted_with"] == "gguf" and d["exact"]
    assert d["n_words"] == 1200 and d["tokens_per_word"] == pytest.approx(1400 / 1200)
    assert "prompt: 1,400 tokens" in err


def test_tokens_reads_stdin(capsys, monkeypatch, model: str) -> None:
    import io
    import sys

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Hello world")))
    code, out, err = run(capsys, "tokens", model, "-", "--json")
    assert code == 0 and json.loads(out)["prompt_tokens"] == 2
    assert "prompt: 2 tokens from stdin" in err
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"Hello")))
    code, out, err = run(capsys, "tokens", model, "-", "--json")
    assert json.loads(out)["prompt_tokens"] == 1 and "prompt: 1 token from stdin" in err


def test_tokens_conversation_table(capsys, model: str, chat: str) -> None:
    code, out, err = run(capsys, "tokens", model, "--chat", chat)
    assert code == 0, err
    assert "of which the template" in out and "calls of the conversation" in out


def test_tokens_conversation_json(capsys, model: str, chat: str) -> None:
    d = json.loads(run(capsys, "tokens", model, "--chat", chat, "--json")[1])
    one, two = d["calls"]
    assert two["cached_tokens"] > one["prompt_tokens"]
    assert d["template_tokens"] > 0 and d["prompt_tokens"] == two["prompt_tokens"]


def test_prefill_prompt_file(capsys, model: str, doc: str) -> None:
    code, out, err = run(capsys, "prefill", model, *LAPTOP, "--prompt-file", doc, "--json")
    assert code == 0, err
    assert json.loads(out)["prompt_tokens"] == 1400


def test_trace_prompt_file_is_the_same_answer_every_time(capsys, model: str, doc: str) -> None:
    """The file is counted with the model's tokenizer; the engine's tokenizing is timed by the
    model (a million tokens a second), not by how long counting took here."""
    from tokenwalk.costs.trace import TOKENIZE_S_PER_TOKEN

    args = ("trace", model, *LAPTOP, "--prompt-file", doc, "--json")
    code, out, err = run(capsys, *args)
    assert code == 0, err
    d = json.loads(out)
    phase = next(p for p in d["phases"] if p["name"] == "template + tokenize")
    assert "1,400 tokens" in phase["detail"] and d["prompt_tokens"] == 1400
    assert phase["duration_s"] == pytest.approx(1400 * TOKENIZE_S_PER_TOKEN)
    assert run(capsys, *args)[1] == out


def test_every_command_counts_a_file_as_llama_cpp_does(capsys, tmp_path: Path, model: str) -> None:
    """A byte order mark is kept, special-token text is that token, a backslash and an n are
    two characters: llama-tokenize -m ggml-vocab-gpt-2.gguf -f FILE --no-escape gives
    [171, 119, 123, 15496, 50256, 6894, 59, 77], 8 tokens; tokens, prefill and trace agree."""
    p = tmp_path / "raw.txt"
    p.write_bytes("\ufeffHello<|endoftext|>world\\n".encode())
    counts = []
    for argv in (
        ["tokens", model, str(p)],
        ["prefill", model, *LAPTOP, "--prompt-file", str(p)],
        ["trace", model, *LAPTOP, "--prompt-file", str(p)],
    ):
        code, out, err = run(capsys, *argv, "--json")
        assert code == 0, err
        counts.append(json.loads(out)["prompt_tokens"])
    assert counts == [8, 8, 8]


def test_trace_chat_traces_every_call(capsys, model: str, chat: str) -> None:
    code, out, err = run(capsys, "trace", model, *LAPTOP, "--chat", chat, "--json")
    assert code == 0, err
    d = json.loads(out)
    one, two = d["calls"]
    assert (
        not one["cold"] and two["computed_tokens"] < 30 and two["prefill_s"] < one["prefill_s"] / 10
    )
    assert d["wall_s"] == pytest.approx(d["busy_s"])


def test_trace_chat_gap_beyond_keep_alive_loads_again(capsys, model: str, chat: str) -> None:
    argv = ["trace", model, *LAPTOP, "--chat", chat, "--gap", "600", "--keep-alive", "300"]
    d = json.loads(run(capsys, *argv, "--json")[1])
    two = d["calls"][1]
    assert (
        two["cold"] and two["cached_tokens"] == 0 and two["load_s"] > 0 and d["n_cold_loads"] == 1
    )
    assert d["wall_s"] == pytest.approx(d["busy_s"] + 600)
    code, out, _ = run(capsys, *argv)
    assert code == 0 and "cold loads" in out


def test_budget_reserves_the_prompt(capsys, model: str, doc: str) -> None:
    code, out, err = run(capsys, "budget", model, *LAPTOP, "--prompt-file", doc, "--json")
    assert code in (0, 1), err
    assert json.loads(out)["ctx"] == 1400


def test_catalogue_model_is_an_estimate(capsys, monkeypatch, doc: str) -> None:
    monkeypatch.setattr("tokenwalk.text.source._hub_counter", lambda repo: None)
    code, out, err = run(capsys, "tokens", "qwen3.6-35b-a3b", doc, "--json")
    assert code == 0, err
    d = json.loads(out)
    assert (
        d["counted_with"] == "estimate"
        and not d["exact"]
        and d["prompt_tokens"] == -(-len(DOC) // 4)
    )
    assert "an estimate, not a count" in err and "4 characters a token" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["tokens", "MODEL"], "give the text"),
        (["tokens", "MODEL", "DOC", "--chat", "DOC"], "give the prompt one way"),
        (["prefill", "MODEL", "--prompt", "100", "--prompt-file", "DOC"], "one way"),
        (["trace", "MODEL"], "give the prompt"),
        (["tokens", "MODEL", "/nonexistent/x.txt"], "no such file"),
        (["tokens", "MODEL", "--chat", "DOC"], "invalid JSON"),
    ],
)
def test_bad_input_is_one_line(capsys, model: str, doc: str, argv: list[str], message: str) -> None:
    argv = [model if a == "MODEL" else doc if a == "DOC" else a for a in argv]
    code, _, err = run(capsys, *argv, *LAPTOP[:0])
    assert code == 2 and message in err and err.count("\n") <= 2
    assert "Traceback" not in err


def test_hostile_template_in_a_gguf(capsys, tmp_path: Path, chat: str) -> None:
    out = tmp_path / "evil.gguf"
    model_with_vocab(
        FIXTURES / "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf",
        VOCAB_DIR / "ggml-vocab-gpt-2.gguf",
        out,
        template="{{ cycler.__init__.__globals__.os.system('echo pwned') }}",
    )
    code, stdout, err = run(capsys, "tokens", str(out), "--chat", chat)
    assert code == 2 and "pwned" not in stdout + err
    assert err.startswith("tokenwalk: error: the chat template tried something unsafe")


@pytest.mark.parametrize("missing", ["tokenizers", "jinja2"])
def test_without_the_text_extra_says_how_to_install(capsys, monkeypatch, model, chat, missing):
    import sys

    monkeypatch.setitem(sys.modules, missing, None)  # import fails as if not installed
    monkeypatch.setitem(sys.modules, f"{missing}.sandbox", None)
    code, _, err = run(capsys, "tokens", model, "--chat", chat)
    assert code == 2 and "pip install tokenizers jinja2 " in err and "Traceback" not in err
    assert "tokenwalk[" not in err  # not a package on PyPI


def test_trace_chat_caches_the_reply_with_a_real_tokenizer(capsys, monkeypatch, tmp_path) -> None:
    """Phi-3's vocabulary and template: the second call reuses the first call's prompt and the
    reply the model wrote, as the estimate does (docs/prompts.md)."""
    monkeypatch.setattr("tokenwalk.text.source._hub_counter", lambda repo: None)
    gguf = model_with_vocab(
        FIXTURES / "deepseek-r1-distill-qwen-7b-q4_k_m.header.gguf",
        VOCAB_DIR / "ggml-vocab-phi-3.gguf",
        tmp_path / "phi3vocab.gguf",
    )
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps(CHAT))
    for ref in (str(gguf), "qwen3.6-35b-a3b"):
        argv = ["trace", ref, *LAPTOP, "--chat", str(chat), "--output", "50", "--json"]
        code, out, err = run(capsys, *argv)
        assert code == 0, err
        one, two = json.loads(out)["calls"]
        assert two["cached_tokens"] == one["prompt_tokens"] + one["output_tokens"] - 1, ref


def test_a_cut_vocabulary_is_refused_in_one_line(capsys, doc: str) -> None:
    # the fixture keeps 64 of Gemma 3's 262,144 tokens: it cannot spell English
    gguf = str(FIXTURES / "gemma-3-270m-q4_k_m.header.gguf")
    for argv in (["tokens", gguf, doc], ["trace", gguf, *LAPTOP, "--prompt-file", doc]):
        code, out, err = run(capsys, *argv)
        assert code == 2 and out == "" and err.count("\n") == 1, err
        assert "vocabulary (64 tokens) cannot encode this text" in err and "Traceback" not in err
