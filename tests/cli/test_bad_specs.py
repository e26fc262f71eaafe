"""Config and YAML specs given as a model: one clear line naming the file and the key."""

from __future__ import annotations

import json

import pytest

from tokenwalk.cli import main


@pytest.mark.parametrize(
    "name, content, needle",
    [
        ("config.json", "{not json", "invalid JSON"),
        (
            "config.json",
            json.dumps({"model_type": "llama", "num_hidden_layers": "many"}),
            "num_hidden_layers",
        ),
        ("config.json", json.dumps({"model_type": "rwkv9"}), "rwkv9"),
        ("config.json", json.dumps([1, 2]), "expected a mapping"),
        ("spec.yaml", "model_type: [unclosed", "not valid YAML"),
        ("spec.yaml", "model_type: llama\nhidden_size: 64\n", "num_hidden_layers"),
    ],
)
def test_bad_spec_is_one_line(tmp_path, capsys, name, content, needle):
    path = tmp_path / name
    path.write_text(content)
    code = main(["size", str(path)])
    out, err = capsys.readouterr()
    assert code == 2
    assert needle in err and err.count("\n") == 1 and "Traceback" not in err


def test_a_pasted_config_works(tmp_path, capsys):
    cfg = {
        "model_type": "llama",
        "num_hidden_layers": 16,
        "hidden_size": 2048,
        "intermediate_size": 8192,
        "num_attention_heads": 32,
        "num_key_value_heads": 8,
        "head_dim": 64,
        "vocab_size": 128256,
        "max_position_embeddings": 131072,
        "tie_word_embeddings": True,
    }
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    assert main(["size", str(path), "--quant", "Q8_0", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["params"] == pytest.approx(1.236e9, rel=0.01)
