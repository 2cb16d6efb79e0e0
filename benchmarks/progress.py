"""How far a benchmark run has got, on stderr (issue 42, item 4: ``bin/benchmark --quick``
said nothing for minutes at a time, so it could not be told from a hung one).

``Progress`` is the log function the sections write their result lines with, and it also knows
the run's plan: which sections, how many items each (configurations, cells, traces, files,
commands). Each item announces itself as it starts, with its number (k of n) and, once an item
of its section has finished, an estimate of the time the section has left (the mean of its
finished items times those left); a --quick run also gets an estimate for the whole run, up
front and with every item, from the seconds each section took in one measured run
(``QUICK_SECONDS``). On a terminal the same is shown as rich progress bars under the log
lines; elsewhere (CI, a file) as plain lines. Nothing here changes what is measured: the
announcements are printed between measurements, never inside one.
"""

from __future__ import annotations

import atexit
import contextlib
import time

#: Seconds each section took in one ``bin/benchmark --quick`` run, on this project's 2-core
#: machine shared with other developers (1-minute load average about 3 with the run): the basis
#: of the estimates. compiled is most of it: building the compiled extension (249 s of its
#: 434 s; the run builds it when the build is missing or stale) and 50 searches in fresh
#: processes; it was measured on commit 4612ec1, whose build succeeds (at e2958e6 Cython
#: refuses models/system.py), the other sections at e2958e6. tools includes the Java
#: conformance run (50 s).
QUICK_SECONDS = {"configs": 105, "compiled": 434, "growth": 73, "hypothesis": 4, "corpus": 3,
                 "pipelines": 6, "realistic": 69, "costs": 3, "tools": 62}


def duration(seconds: float) -> str:
    """'45 s', '3 min 20 s', '1 h 05 min': a duration as a person reads it."""
    s = max(0, int(round(seconds)))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


QUICK_MEASURED = ("one --quick run of every section took "
                  f"{duration(sum(QUICK_SECONDS.values()))} on a 2-core machine shared with "
                  f"others, {duration(QUICK_SECONDS['compiled'])} of it the compiled section, "
                  "which builds the extension when it is stale")


class Progress:
    """The log function of a run (``progress(msg)`` prints a line) that also shows which
    section and item the run is at. ``plan`` is [(section, items, what an item is)] in the
    order the run takes them; ``quick`` says whether ``QUICK_SECONDS`` apply; ``live`` forces
    rich's bars on (True) or off (False; default: on when stderr is a terminal)."""

    def __init__(self, plan: list[tuple[str, int, str]], quick: bool = False, console=None,
                 live: bool | None = None, clock=time.monotonic):
        from rich.console import Console
        self.plan = plan
        self.quick = quick
        self.console = console or Console(stderr=True, highlight=False, soft_wrap=True)
        self.live = self.console.is_terminal if live is None else live
        self.clock = clock
        self.began = clock()
        self.section_name: str | None = None
        self.section_began = 0.0
        self.done: list[float] = []          # the finished items' seconds, this section
        self.item_began: float | None = None
        self._bars = None
        self._task = None

    # -- the log function ---------------------------------------------------------------
    def __call__(self, msg: str) -> None:
        self.console.print(msg, markup=False)

    # -- the plan --------------------------------------------------------------------------
    def _total(self, name: str) -> int:
        return next((n for s, n, _ in self.plan if s == name), 0)

    def _what(self, name: str) -> str:
        return next((w for s, _, w in self.plan if s == name), "items")

    def estimate(self) -> float | None:
        """The whole run's seconds, from ``QUICK_SECONDS`` (None unless a --quick run of
        sections all measured)."""
        if not self.quick or any(QUICK_SECONDS.get(s) is None for s, _, _ in self.plan):
            return None
        return float(sum(QUICK_SECONDS[s] for s, _, _ in self.plan))

    def begin(self) -> None:
        """The up-front line: the sections and their items, and how long the run may take."""
        parts = ", ".join(f"{s} ({n} {w})" for s, n, w in self.plan)
        est = self.estimate()
        if est is not None:
            how = f"about {duration(est)} ({QUICK_MEASURED})"
        elif self.quick:
            how = "no measured estimate for these sections"
        else:
            whole = duration(sum(QUICK_SECONDS.values()))
            how = ("no measured estimate without --quick (the canonical configurations take "
                   f"minutes each; a --quick run of every section took {whole})")
        self(f"benchmarks: {len(self.plan)} section(s): {parts}; {how}")
        if self.live:
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as Bars,
                                       TextColumn, TimeElapsedColumn)
            self._bars = Bars(TextColumn("{task.description}"), BarColumn(),
                              MofNCompleteColumn(), TimeElapsedColumn(),
                              TextColumn("{task.fields[left]}"), console=self.console,
                              transient=True)
            self._bars.start()
            # a section that raises ends the run: the bars go (and the terminal gets its
            # cursor back) before the traceback is left on the screen
            atexit.register(self.stop)

    def stop(self) -> None:
        """Take the bars off the terminal (nothing without them; again: nothing)."""
        if self._bars is not None:
            self._bars.stop()
            self._bars = None

    def end(self) -> None:
        self.stop()
        self(f"benchmarks: done in {duration(self.clock() - self.began)}")

    # -- sections and items ----------------------------------------------------------------
    def left_in_section(self) -> float | None:
        """Seconds the current section has left: the mean of its finished items times the
        items not finished, less what the running item has taken (None before any finished)."""
        if not self.done:
            return None
        mean = sum(self.done) / len(self.done)
        left = mean * (self._total(self.section_name) - len(self.done))
        if self.item_began is not None:
            left -= self.clock() - self.item_began
        return max(0.0, left)

    def left_in_run(self) -> float | None:
        """Seconds the whole run has left (a --quick run of measured sections only): this
        section's estimate (its measured seconds until an item has finished) and the measured
        seconds of the sections after it."""
        if self.estimate() is None or self.section_name is None:
            return None
        names = [s for s, _, _ in self.plan]
        after = names[names.index(self.section_name) + 1:]
        here = self.left_in_section()
        if here is None:
            here = max(0.0, QUICK_SECONDS[self.section_name]
                       - (self.clock() - self.section_began))
        return here + sum(QUICK_SECONDS[s] for s in after)

    def _left(self) -> str:
        parts = []
        section = self.left_in_section()
        if section is not None:
            parts.append(f"about {duration(section)} left in {self.section_name}")
        run = self.left_in_run()
        if run is not None:
            parts.append(f"about {duration(run)} left in the run")
        return "; ".join(parts)

    @contextlib.contextmanager
    def section(self, name: str):
        names = [s for s, _, _ in self.plan]
        k = names.index(name) + 1 if name in names else 0
        self.section_name, self.section_began, self.done = name, self.clock(), []
        self(f"== section {k}/{len(names)}: {name} ({self._total(name)} {self._what(name)}), "
             f"{duration(self.section_began - self.began)} since the start")
        if self._bars is not None:
            self._task = self._bars.add_task(name, total=self._total(name) or None, left="")
        try:
            yield self
        finally:
            if self._bars is not None and self._task is not None:
                self._bars.remove_task(self._task)
                self._task = None
            self(f"== {name}: done in {duration(self.clock() - self.section_began)}")
            self.section_name = None

    @contextlib.contextmanager
    def item(self, label: str):
        """One item of the current section: announced with its number and the estimates, its
        seconds counted when it finishes (an item that raised is not counted)."""
        k = len(self.done) + 1
        total = self._total(self.section_name) if self.section_name else 0
        left = self._left()
        self(f"[{self.section_name} {k}/{total}] {label}" + (f" ({left})" if left else ""))
        if self._bars is not None and self._task is not None:
            self._bars.update(self._task, description=f"{self.section_name}: {label}",
                              left=left)
        self.item_began = self.clock()
        yield self
        self.done.append(self.clock() - self.item_began)
        self.item_began = None
        if self._bars is not None and self._task is not None:
            self._bars.update(self._task, completed=len(self.done), left=self._left())


def item(log, label: str):
    """``log.item(label)`` when ``log`` is a ``Progress``, else nothing: the section functions
    also run with a plain log function (the tests call them so)."""
    return log.item(label) if isinstance(log, Progress) else contextlib.nullcontext()


def section(log, name: str):
    """``log.section(name)`` when ``log`` is a ``Progress``, else nothing."""
    return log.section(name) if isinstance(log, Progress) else contextlib.nullcontext()
