"""Progress on stderr while a slow computation runs (the fits of `tokenwalk calibrate`).

A bar where the number of steps is known, a spinner where it is not. Silent with --json or
--csv and when stderr is not a terminal, so scripts and pipes never see it; transient, so the
answer on stdout is all that stays on the screen.
"""

from __future__ import annotations

import sys
from types import TracebackType
from typing import Any

__all__ = ["StepProgress"]


def _stderr_console() -> Any:
    """Rich's console on stderr where stderr is a terminal, else None (FORCE_COLOR or not: a
    bar never goes into a pipe or a log)."""
    if not sys.stderr.isatty():
        return None
    from rich.console import Console

    return Console(stderr=True)


class StepProgress:
    """A `tokenwalk.timing.calibrate.Progress` callback drawn with Rich on stderr; use it as a
    context manager so that the bar is taken down however the computation ends."""

    def __init__(self, *, enabled: bool = True) -> None:
        self.console = _stderr_console() if enabled else None
        self.enabled = self.console is not None
        self._progress: Any = None
        self._tasks: dict[str, Any] = {}

    def __enter__(self) -> StepProgress:
        if self.enabled:
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                MofNCompleteColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
        return self

    def __call__(self, what: str, done: int, total: int | None) -> None:
        if self._progress is None:
            return
        task = self._tasks.get(what)
        if task is None:
            from tokenwalk.render.safe import visible

            for earlier in self._tasks.values():  # one step at a time: the last one is done
                self._progress.update(earlier, visible=False)
            # a machine's name is data: its control characters are shown, never sent
            task = self._tasks[what] = self._progress.add_task(visible(what), total=total)
        self._progress.update(task, completed=done, total=total)

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
