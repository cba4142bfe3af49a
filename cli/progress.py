"""Progress and messages on stderr for the long commands: a bar that appears only once work has lasted about a
second (``LazyProgress``; ``--quiet`` hides it), with timed phases for rendering and writing."""
from __future__ import annotations

import contextlib
import sys
import threading
import time
import typer

from parplan.cli.common import err_console


class _Err:
    """Messages on stderr, one unwrapped line each (no terminal-width wrapping, no markup)."""

    def print(self, text: str, **_ignored) -> None:
        typer.echo(text, err=True)


def _count_column():
    """A rich column ``done/total`` (nothing while a step without counts runs); rich.progress is imported only
    when a bar is shown."""
    from rich.progress import ProgressColumn
    from rich.text import Text

    class _Count(ProgressColumn):
        def render(self, task) -> Text:
            return Text("" if task.total is None else f"{task.completed:,.0f}/{task.total:,.0f}")

    return _Count()


class LazyProgress:
    """A rich progress bar on stderr that appears only once the work has run for ``delay_s`` (never for quick
    searches), and only when stderr is a terminal; ``enabled=False`` (--quiet) hides it.

    Call it as ``f(done, total, nodes=None)`` while counted work runs; ``with bar.phase("writing"):`` around one
    long step that reports nothing (rendering, JSON): a timer shows the bar, with its elapsed time, if the step
    runs past ``delay_s``.  ``close()`` removes it."""

    def __init__(self, enabled: bool, label: str, delay_s: float = 1.0):
        self.enabled = enabled and sys.stderr.isatty()
        self.label, self.delay_s = label, delay_s
        self.t0 = time.perf_counter()
        self.t0_clock = time.monotonic()  # rich's clock
        self.bar = None  # a rich Progress once shown
        self.task = None
        self._lock = threading.Lock()

    def _start(self, total, label: str | None = None) -> None:
        from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

        self.bar = Progress(TextColumn("{task.description}"), BarColumn(), _count_column(), TimeElapsedColumn(),
                            console=err_console(), transient=True)
        self.bar.start()
        self.task = self.bar.add_task(label or self.label, total=total)
        for task in self.bar.tasks:  # the elapsed time counts from the start of the work, not of the bar
            if task.id == self.task:
                task.start_time = self.t0_clock

    def __call__(self, done: int, total: int, nodes=None) -> None:
        if not self.enabled:
            return
        with self._lock:
            if self.bar is None:
                if time.perf_counter() - self.t0 < self.delay_s:
                    return
                self._start(max(total, 1))
            desc = self.label if nodes is None else f"{self.label}: {nodes} nodes"
            self.bar.update(self.task, completed=done, total=max(total, 1), description=desc)

    @contextlib.contextmanager
    def phase(self, label: str):
        """One long step without counts: the bar (elapsed time, no total) if it runs past ``delay_s``."""
        if not self.enabled:
            yield
            return

        def show():
            with self._lock:
                if self.bar is None:
                    self._start(None, label)
                else:
                    self.bar.update(self.task, description=label, total=None, completed=0)

        timer = threading.Timer(self.delay_s, show)
        timer.daemon = True
        timer.start()
        try:
            yield
        finally:
            timer.cancel()

    def close(self) -> None:
        with self._lock:
            if self.bar is not None:
                self.bar.stop()
                self.bar = None
