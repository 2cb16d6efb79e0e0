"""One evaluation's shared analysis: history, oracle and dependency graph, computed once per
(model, state, key) and reused by ``evaluate``, ``reached`` and ``dependency_graph``."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import Any, Callable, Hashable

from icecheck.models.commands_spec import (ADD_FILES, DELETE, MERGE_INSERT, OVERWRITE_FILES,
                                            Command)
from icecheck.models.profiles import DROP_STRICT_COMMANDS
from icecheck.models.system import Model, State, new_token

from .history import History, Op, build_history, describe_intent, where_selects
from .oracle import KeyFn, Oracle, identity_partition_columns, memo_oracle


@dataclass
class Analysis:
    history: History
    oracle: Oracle
    key: str
    _deps: Any = None
    _graph: Any = None
    _cycles: Any = None
    _rw: bool = False
    _shared_key: Any = None

    @property
    def deps(self):
        """The dependency graph as the checks read it (``isolation.DepGraph``)."""
        if self._deps is None:
            from .isolation import build_deps
            self._deps = build_deps(self.history, self.oracle)
        return self._deps

    @property
    def graph(self):
        """The dependency graph as a networkx MultiDiGraph (for users and reports)."""
        if self._graph is None:
            self._graph = self.deps.to_networkx()
        return self._graph

    @property
    def cycles(self):
        """The classified cycles of the dependency graph (``isolation.find_cycles``)."""
        if self._cycles is None:
            self._cycles, self._rw = self._shape()
        return self._cycles

    @property
    def has_rw(self) -> bool:
        """Does the dependency graph have an anti-dependency (rw) edge?"""
        if self._cycles is None:
            self._cycles, self._rw = self._shape()
        return self._rw

    def _shape(self) -> tuple[list, bool]:
        """(the classified cycles, is there an rw edge): shared, never modified by readers."""
        from .isolation import RW, shared_cycles
        h = self.history
        key = h.oracle_key
        shared = key is not None and h.self_contained()
        if shared:
            got = h.memo.shapes.get(key)
            if got is not None:
                return got
        g = self.deps
        got = (shared_cycles(g), RW in g.types)
        if shared:
            h.memo.shapes[key] = got
        return got

    def shared(self, table: str, compute: Callable[["Analysis"], Any]) -> Any:
        """``compute(self)``, shared between evaluations through the memo's ``table`` when the
        history is self-contained (``History.self_contained``): then what a check reads of the
        committed history (the lineage, its operations' records, rows and effects, the
        dependency graph) is a function of the oracle's key and the lineage's sequence
        numbers, the key here. Results are never modified by their readers."""
        h = self.history
        if self._shared_key is None:
            self._shared_key = ((h.oracle_key, tuple(s.sequence_number for s in h.lineage))
                                if h.oracle_key is not None and h.memo is not None
                                and h.self_contained() else False)
        if self._shared_key is False:
            return compute(self)
        memo = getattr(h.memo, table)
        got = memo.get(self._shared_key)
        if got is None:
            got = memo[self._shared_key] = compute(self)
        return got

    def seq(self, position: int) -> int:
        return self.history.lineage[position].sequence_number

    def op(self, label: str | None) -> Op | None:
        if label is None:
            return None
        for op in self.history.ops:
            if op.label == label:
                return op
        return None

    def insert_only_merges(self, labels) -> bool:
        """Every one of these operations is an insert-only MERGE (MERGE_INSERT): engines plan it
        as a plain append, so no isolation level validates it (properties/expectations.yaml)."""
        ops = [self.op(lb) for lb in labels]
        return bool(ops) and all(o is not None and getattr(o.intent, "kind", None) == MERGE_INSERT
                                 for o in ops)

    def delete_where_misses(self, label: str | None, rows) -> bool:
        """``label`` is a DELETE with a WHERE that selects none of ``rows`` (some rows of one
        key). A row-level DELETE removes the row versions it read at its base; when another
        write committed in between replaced such a version with one the WHERE does not select
        (an UPDATE or MERGE that moved the row out of the predicate: another ``day``), the
        table after both is what the serial order "that write, then the DELETE" leaves: the
        version left is not an undelete (scenarios/builtin/commands/spark-mor-delete-vs-merge-
        moving-the-row-out-of-its-where.yaml)."""
        return where_selects(self.history, self.op(label), rows, (DELETE,)) is False

    def file_level_overwrites(self, labels) -> bool:
        """One of these operations is a script's file-level overwrite (OVERWRITE_FILES:
        PyIceberg's ``update_snapshot().overwrite()``), which swaps whole files: the
        expectation table names the PyIceberg finding's dependency-graph view by it."""
        return any(getattr(getattr(self.op(lb), "intent", None), "kind", None) == OVERWRITE_FILES
                   for lb in labels)

    def deletes_dropped_by_rewrite(self, position: int) -> list[str]:
        """The delete files that the commit at lineage ``position`` dropped, when that commit is
        a rewrite (a compaction or a raw RewriteFiles), which changes no row logically: a row
        that reappears there came back because a delete that still applied to it was dropped
        (Java's MergingSnapshotProducer drops deletes older than the existing data files, not
        counting the rewrite's own files with an older data sequence number:
        docs/findings.md)."""
        from icecheck.models import operations as ops
        from icecheck.models.commands_spec import COMPACT
        h = self.history
        op = h.lineage_ops[position] if 0 < position < len(h.lineage_ops) else None
        if op is None or op.kind not in (COMPACT, ops.REWRITE):
            return []
        before = {e.file.path for e in h.live_files(h.lineage[position - 1])[1]}
        after = {e.file.path for e in h.live_files(h.lineage[position])[1]}
        return sorted(before - after)

    def deletes_left_dangling(self, position: int) -> list[str]:
        """The position delete files live before and after the commit at lineage ``position``
        that name a data file this commit removed: it replaced the file (rewriting its rows
        elsewhere) without dropping the deletes, so a row they deleted that reappears there was
        copied over them (PyIceberg's file-level overwrite keeps every delete file, and its
        check for new deletes of the files it replaces misses one that another commit followed:
        docs/findings.md)."""
        h = self.history
        if not 0 < position < len(h.lineage):
            return []
        data_before, deletes_before = h.live_files(h.lineage[position - 1])
        data_after, deletes_after = h.live_files(h.lineage[position])
        removed = ({e.file.path for e in data_before} - {e.file.path for e in data_after})
        kept = {e.file.path for e in deletes_after}
        return sorted(e.file.path for e in deletes_before
                      if e.file.path in kept and set(e.file.referenced_paths) & removed)

    def files_added_twice(self, position: int, rows) -> tuple[str, list[str]] | None:
        """(text, labels) when some of ``rows`` are read twice at lineage ``position`` because
        an external file that add_files registered (ADD_FILES) is listed there more than once:
        which writers added it, and why its duplicate check let the later ones through."""
        h = self.history
        if not 0 <= position < len(h.lineage):
            return None
        adders: dict[str, list] = {}
        for op in h.lineage_ops[:position + 1]:
            intent = getattr(op, "intent", None)
            if getattr(intent, "kind", None) == ADD_FILES and \
                    set(map(tuple, intent.rows)) & set(map(tuple, rows)):
                adders.setdefault(intent.file_path, []).append(op)
        for path, ops in sorted(adders.items()):
            listed = sum(1 for e in h.live_files(h.lineage[position])[0] if e.file.path == path)
            if listed < 2 or len(ops) < 2:
                continue
            checked = [o for o in ops if o.intent.check_duplicate_files]
            how = (" Each checked for the file (check_duplicate_files) only on the table it "
                   "began at, where it was not yet listed; the append that follows validates "
                   "nothing, and a retry after a lost race does not check again."
                   if checked else "")
            times = "twice" if listed == 2 else f"{listed} times"
            text = (f"The table lists the external file {path} {times}: "
                    f"{', '.join(o.writer for o in ops)} each registered it with add_files, so "
                    f"its rows are read {times}.{how}")
            return text, [o.label for o in ops]
        return None

    def committed_by(self, position: int) -> str | None:
        """The label of the operation whose commit is at lineage ``position`` (the one that
        brought a row back or made a key's second row), for the violation's details: the
        expectation table judges a violation by the writers it names
        (``expectations.involved_writers``)."""
        ops = self.history.lineage_ops
        op = ops[position] if 0 < position < len(ops) else None
        return op.label if op is not None else None

    def dangling_text(self, position: int, left: list[str]) -> str:
        """In words: the commit at ``position`` replaced a data file but kept the delete files
        ``left`` (``deletes_left_dangling``) that named it."""
        return (f"{self.who(self.committed_by(position))} replaced a data file that the delete file(s) "
                f"{', '.join(left)} name, copying its rows to a new file without those deletes; "
                f"the delete file(s) still name the removed file.")

    def filter_removed(self, position: int, rows) -> tuple[Any, str, bool] | None:
        """``(filter, how, on_null)`` when the commit at lineage ``position`` removed data files by a
        filter that selects none of ``rows`` under SQL's three-valued logic (false or, with a
        null, UNKNOWN); else None. ``how`` is ``row_filter`` for a delete by row filter
        (``deleteFromRowFilter``, ``overwriteByRowFilter``: a raw operation, or a command
        planned as one, like Spark's metadata-only DELETE), decided from the file's partition
        residual, which compares nulls first (``filters.residual_for``), and ``metrics`` for a
        command (DELETE, OVERWRITE) whose engine dropped whole a file its metrics say matches
        (PyIceberg's delete: profile key ``drop_strict_matches``). docs/findings.md."""
        from icecheck.models.filters import eval_row3
        h = self.history
        op = h.lineage_ops[position] if 0 < position < len(h.lineage_ops) else None
        if op is None or not rows:
            return None
        operation = op.record.operation if op.record is not None else op.intent
        expr, how = getattr(operation, "row_filter", None), "row_filter"
        if expr is None:
            # a command that deleted by its WHERE, planned as a copy-on-write rewrite: its rows
            # go by SQL's logic, so a row it does not select went with a file dropped whole
            if not (isinstance(op.intent, Command) and op.intent.kind in DROP_STRICT_COMMANDS
                    and op.intent.where is not None):
                return None
            expr, how = op.intent.where, "metrics"
        names = h.model.config.table.schema.names
        results = [eval_row3(expr, dict(zip(names, r))) for r in rows]
        if any(r is True for r in results):
            return None
        # on_null: the filter is UNKNOWN, not false, for every row (a null in its columns)
        return expr, how, all(r is None for r in results)

    def who(self, label: str | None) -> str:
        """'w1 (UPDATE SET v = 'w1.1' WHERE id = 1, committed at seq 2)'."""
        op = self.op(label)
        if op is None:
            return "the initial table" if label is None else label
        where = f", seq {op.sequence_number}" if op.sequence_number is not None else ""
        name = op.writer if op.writer != "setup" else "the setup commit"
        return f"{name} ({describe_intent(op.intent)}{where})"

    def key_text(self, k) -> str:
        return self.oracle.keyfn.text(k)


class Bounded(dict):
    """A memo table that forgets everything when it reaches ``limit`` entries: a long search
    keeps its memory bounded (an oracle is about 4 KB), and a forgotten entry is only computed
    again."""

    def __init__(self, limit: int):
        super().__init__()
        self.limit = limit

    def __setitem__(self, key, value) -> None:
        if len(self) >= self.limit:
            self.clear()
        super().__setitem__(key, value)


def _keyfn(table, key: str) -> KeyFn:
    return KeyFn(table.schema.names, key, identity_partition_columns(table))


class EvalMemo:
    """Pure pieces of evaluations shared between the evaluations of one model (issue 13: the
    exhaustive checker evaluates thousands of histories that read the same snapshots and
    repeat the same operations): a snapshot's rows and live files (``History.rows``,
    ``History.live_files``), an operation's logical effect (``oracle.memo_effect``) and the
    oracle of a lineage (``oracle.memo_oracle``) with, when the history is self-contained
    (``History.self_contained``), its dependency cycles, the lineage checks' violations and
    the lineage's reachability events (``Analysis.shared``), keyed by *content*, through
    ``content``: a function of an immutable model object (a frozen dataclass) to a key that
    is equal for equal objects and different for different ones (the checker passes its
    fingerprinter's digest, cached on each object). Entries only ever depend on their key, so
    the memo changes no verdict (tests/test_state_counts.py, tests/test_eval_memo.py). Each
    table holds at most ``limit`` entries (``Bounded``)."""

    LIMIT = 50_000

    def __init__(self, content: Callable[[Any], Hashable], limit: int = LIMIT):
        self.content = content
        #: tags what this memo caches on model objects (``History.rows_key``)
        self.token = new_token()
        self.rows: dict = Bounded(limit)
        self.effects: dict = Bounded(limit)
        self.oracles: dict = Bounded(limit)     # oracle key -> (its number, the oracle)
        self.ids = itertools.count(1)           # the oracle keys' numbers
        self.shapes: dict = Bounded(limit)      # oracle key -> (cycles, has an rw edge)
        # Analysis.shared: (oracle key, lineage sequence numbers) -> a check's result
        self.lineage_checks: dict = Bounded(limit)   # the lineage checks' violations
        self.lineage_events: dict = Bounded(limit)   # reachability's events of the lineage
        # (id of a violation, the run's profiles, catalog, format) -> (the violation, its
        # expectation): the lineage checks' violations are shared objects, judged once
        self.expectations: dict = Bounded(limit)
        self._keyfns: dict = {}     # (id of a table, key column) -> (the table, its KeyFn)

    def keyfn(self, table, key: str) -> KeyFn:
        """The table's ``KeyFn`` for ``key`` (immutable: one per table and key column)."""
        got = self._keyfns.get((id(table), key))
        if got is None or got[0] is not table:
            got = self._keyfns[(id(table), key)] = (table, _keyfn(table, key))
        return got[1]


_CACHE: list = []  # [(model, state, key, analysis)]: the last few, by identity


def analyze(model: Model, state: State, key: str = "id", memo: EvalMemo | None = None) -> Analysis:
    for m, s, k, a in _CACHE:
        if m is model and s is state and k == key:
            return a
    h = build_history(model, state, memo)
    kf = memo.keyfn(model.table, key) if memo is not None else _keyfn(model.table, key)
    a = Analysis(h, memo_oracle(h, kf), key)
    _CACHE.insert(0, (model, state, key, a))
    del _CACHE[4:]
    return a
