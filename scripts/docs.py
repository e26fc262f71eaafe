"""Keep docs/ true: re-run every command a page shows and put its real output under it.

A page marks a command and its output like this:

    <!-- run: tokenwalk kv qwen3.6-35b-a3b --ctx 16384 -->
    ```text
    (output, rewritten by this script)
    ```
    <!-- end -->

`python scripts/docs.py` rewrites the outputs (docs/*.md and the README); `python scripts/docs.py
--check` exits 1 when a page is out of date (the test suite runs the check). Commands run
in-process at a fixed width.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import re
import shlex
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
WIDTH = "100"
BLOCK = re.compile(
    r"(?P<head><!-- run: (?P<cmd>.+?) -->\n)"
    r"```(?P<lang>\w*)\n(?P<body>.*?)```\n"
    r"(?P<tail><!-- end -->)",
    re.S,
)


def run_command(cmd: str) -> str:
    """Run `tokenwalk ...` in-process and return what a user would see (stdout, then stderr)."""
    from tokenwalk import machine
    from tokenwalk.cli import main

    argv = shlex.split(cmd)
    if not argv or argv[0] != "tokenwalk":
        raise SystemExit(f"docs can only run tokenwalk commands, not: {cmd}")
    os.environ["COLUMNS"] = WIDTH
    os.environ["HF_HUB_OFFLINE"] = "1"  # outputs must not depend on the network
    os.environ.pop("FORCE_COLOR", None)
    # nor on the machine file of whoever runs this: the catalogue alone (a path that is never
    # a file, and that nothing can be written to: a page's commands change nothing)
    os.environ.pop("TOKENWALK_MACHINES", None)
    users = machine.user_machines_path
    machine.user_machines_path = lambda: Path(os.devnull) / "machines.yaml"
    out, err = io.StringIO(), io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv[1:])
    finally:
        machine.user_machines_path = users
    text = out.getvalue() + err.getvalue()
    text = "\n".join(line.rstrip() for line in text.splitlines())
    if code:
        text += f"\n(exit code {code})"
    return text + "\n"


def render_page(text: str) -> str:
    def sub(m: re.Match[str]) -> str:
        body = run_command(m.group("cmd"))
        return f"{m.group('head')}```{m.group('lang')}\n{body}```\n{m.group('tail')}"

    return BLOCK.sub(sub, text)


def pages(paths: list[str]) -> list[Path]:
    if paths:
        return [Path(p) for p in paths]
    return [*sorted(DOCS.glob("*.md")), ROOT / "README.md"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("pages", nargs="*", help="pages to render (default: every docs/*.md)")
    ap.add_argument("--check", action="store_true", help="exit 1 if any page is out of date")
    args = ap.parse_args()
    stale = []
    for page in pages(args.pages):
        text = page.read_text(encoding="utf-8")
        new = render_page(text)
        if new != text:
            stale.append(page)
            if not args.check:
                page.write_text(new, encoding="utf-8")
    verb = "out of date" if args.check else "rewritten"
    for page in stale:
        print(f"{page.relative_to(ROOT) if page.is_absolute() else page}: {verb}")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
