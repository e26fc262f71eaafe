"""A progress bar on stderr for header fetches that take more than a second.

It stays silent when disabled, when stderr is not a terminal, and for fetches that finish
quickly, so scripts and `--json` output never see it.
"""

from __future__ import annotations

import sys
import time

__all__ = ["FetchProgress"]

_DELAY_S = 1.0


class FetchProgress:
    """Shows bytes fetched so far for `label`, once the fetch has run for a second."""

    def __init__(self, label: str, *, enabled: bool = True, delay_s: float = _DELAY_S) -> None:
        self.label = label
        self.enabled = enabled and sys.stderr.isatty()
        self.delay_s = delay_s
        self.started = time.monotonic()
        self._progress = None
        self._task = None

    def update(self, fetched_bytes: int) -> None:
        if not self.enabled:
            return
        if self._progress is None:
            if time.monotonic() - self.started < self.delay_s:
                return
            from rich.console import Console
            from rich.progress import (
                DownloadColumn,
                Progress,
                SpinnerColumn,
                TextColumn,
                TransferSpeedColumn,
            )

            self._progress = Progress(
                SpinnerColumn(),
                # the label is a file name or URL: data, never markup
                TextColumn("reading header of {task.description}", markup=False),
                DownloadColumn(),
                TransferSpeedColumn(),
                console=Console(stderr=True),
                transient=True,
            )
            self._progress.start()
            from tokenwalk.render.safe import visible

            self._task = self._progress.add_task(visible(self.label), total=None)
        self._progress.update(self._task, completed=fetched_bytes)

    def finish(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None
