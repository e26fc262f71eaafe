"""scripts/batched_ground_truth.py with a stand-in for llama-batched-bench: every round of every
B is run and kept, and the README shows each row's median and its rounds."""

from __future__ import annotations

import importlib.util
import json
import stat
import sys
from pathlib import Path

import pytest

SCRIPTS = Path(__file__).parents[1] / "scripts"

# Prints the JSON lines llama-batched-bench would, each round a little faster than the last
# (its count kept in a file beside it), for the -npl it is given.
FAKE = """#!{python}
import json, sys
from pathlib import Path
args = sys.argv[1:]
pl = int(args[args.index("-npl") + 1])
count = Path(__file__).with_suffix(".count")
n = int(count.read_text()) if count.exists() else 0
count.write_text(str(n + 1))
for pp in (int(x) for x in args[args.index("-npp") + 1].split(",")):
    s_pp = 100.0 + n
    t_pp = pl * pp / s_pp
    print(json.dumps({{"n_kv_max": 1, "n_batch": 2048, "n_ubatch": 512, "flash_attn": -1,
        "is_pp_shared": False, "n_gpu_layers": -1, "n_threads": 2, "n_threads_batch": 2,
        "pp": pp, "tg": 128, "pl": pl, "n_kv": 1, "t_pp": t_pp, "speed_pp": s_pp,
        "t_tg": pl * 128 / 10.0, "speed_tg": 10.0, "t": 1.0, "speed": 1.0}}))
"""


@pytest.fixture()
def script():
    sys.path.insert(0, str(SCRIPTS))
    spec = importlib.util.spec_from_file_location(
        "batched_ground_truth", SCRIPTS / "batched_ground_truth.py"
    )
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    yield mod
    sys.path.remove(str(SCRIPTS))


def test_rounds_are_all_kept_and_the_readme_shows_their_median(tmp_path, script):
    fake = tmp_path / "llama-batched-bench"
    fake.write_text(FAKE.format(python=sys.executable))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    model = tmp_path / "tiny.gguf"
    model.write_bytes(b"GGUF")
    out = tmp_path / "out"
    argv = [
        *("--batched-bench", str(fake), "--out", str(out), "--npl", "1,2"),
        *("--repeats", "3", "--max-load", "1000", "--poll", "0", str(model)),
    ]
    assert script.main(argv) == 0
    rows = [json.loads(x) for x in (out / "tiny.jsonl").read_text().splitlines()]
    assert len(rows) == 2 * 2 * 3  # (pp 128, 512) x (B 1, 2) x 3 rounds, the warm-up runs out
    runs = json.loads((out / "runs.json").read_text())["runs"]
    assert "-npp 128,128,512" in runs[0]["command"]
    assert [r["pp"] for r in runs[0]["discarded"]] == [128]
    # Rounds run one after another over every B: B = 1, 2 in round one (counts 0, 1), ...
    assert [r["speed_pp"] for r in rows if r["pp"] == 128 and r["pl"] == 2] == [101, 103, 105]
    assert len(runs) == 6
    readme = (out / "README.md").read_text()
    assert "| tiny.gguf | 128 | 128 | 2 | 103.00 | 10.00 | 101.0, 103.0, 105.0 |" in readme
    assert "3 round(s)" in readme
    assert "1 leading run(s) of each invocation thrown away" in readme


def test_a_missing_bench_is_one_line_and_exit_2(tmp_path, script, capsys):
    assert script.main(["--batched-bench", str(tmp_path / "nope"), str(tmp_path / "m.gguf")]) == 2
    assert capsys.readouterr().err.count("\n") == 1
