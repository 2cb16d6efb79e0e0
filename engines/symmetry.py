"""Fingerprints of states, canonical under writer symmetry (see docs/exhaustive.md).

A *writer permutation* ``p`` (a dict old writer index -> new writer index, identity outside its
support) acts on a state by a structure-preserving *lift* that renames every atom that carries a
writer's identity, by its role:

* strings: every token ``w<i>`` (``\\bw(\\d+)\\b``: writer names ``w1``, file names ``w1-1-d1``,
  metadata paths ``v3-w1-2.metadata.json``, UPDATE/MERGE tags ``'w1.1'``, messages) becomes
  ``w<p(i)>``, and every token of 4+ digits ``i*1000+n`` with ``i`` moved by ``p`` (snapshot ids
  inside ``snap-1001.avro`` and messages) becomes ``p(i)*1000+n``;
* ints: a snapshot id ``i*1000+n`` (``n < 1000``) becomes ``p(i)*1000+n``, and a mix_config INSERT
  key ``100*i+n`` (``1 <= n < 100``) becomes ``100*p(i)+n``; every other int (< 100: sequence
  numbers, versions, positions, counts, the keys 1..keys) is fixed;
* ``WriterState.slot`` becomes ``p(slot)``; the writers tuple is re-sorted by the new slot;
* everything else (structure, field names, types, other atoms) is kept.

Each leaf map is a permutation of its domain (tokens go to tokens of the same shape, so
boundaries are preserved; the int maps permute 101..999 and 1000.. by their leading digit(s) and
fix everything else), so the lift of ``p`` is a bijection on states whose inverse is the lift of
``p^-1``, and lift(p) o lift(q) = lift(p o q): a group action. The canonical fingerprint of a
state is ``min over p in G of H(lift(p)(s))`` where ``H`` is blake2b over an injective encoding
and ``G`` is the group of permutations of interchangeable writers (writers whose programs are equal
once their own tags are renamed, see ``symmetry_classes``). Two states get the same canonical
fingerprint iff they are in the same G-orbit (up to a 128-bit hash collision) once what a
fingerprint leaves out of failed operations' records and of the store (below) is blanked.

Precondition (checked by ``check_bounds``): the non-writer ints of the state stay below 100
(bounded runs: sequence numbers, versions, positions, counts), the keys are below 100, and the
programs never mention another writer's tags.

What a fingerprint leaves out: of a writer's finished operation that neither applied nor was
told it committed (validation failed, nothing to do, a failed, crashed or unknown commit that did
not apply, an unreadable file), only its index, outcome, attempts, snapshot id and the kind of its
intent enter the writer's encoding (``Fingerprinter._history_code``), not where it started, what
it planned or its message. No step reads a finished record (a writer's next step is a function of
its other fields; ``Model.step`` only appends to ``history``), and the properties and events
read no more of such a record than that (``explicit._writer_key``: the judge memo already keys
them so, and tests/test_explicit.py judges every state afresh against it). Two states that
differ only there have the same successors (up to the same difference), verdicts, events and
outcomes, at the same depth, so the search keeps the first it reaches and drops the other: the
same verdicts and shortest counterexamples, fewer states (mor-serializable-3w2op-delete: 31,912
-> 22,658; reports/reductions.md). A writer's *content* key
(``content``: the model's step memo and hash-consing) stays exact.

Nor does a fingerprint count what an attempt that lost its race wrote: its metadata file, manifest
list and new manifests (``WriterState.lost``, which ``Model._lost_paths`` fills as the swap is
refused). ``under`` takes their items off the store's digest, and the writer's encoding leaves
the field out (``fingerprint_omit``). Nothing reads those objects again: the pointer never names
the metadata file, no reader reaches the attempt's version of its snapshot (the next attempt
keeps the id, and lookups off the current metadata take the version written last), the next
attempt writes under new names and reuses none of them, and no clean-up of them is modelled;
where one could read them (a clean-up after a phantom failure, remove_orphan_files, a clock) the
model marks nothing. So states that differ only in what their lost attempts read before losing (the
same attempt, made on another table version) are one state (mor-serializable-3w2op-delete:
22,658 -> 18,416; the realistic pipelines, whose commands retry, more).

Nor how many races a finished operation lost beyond the first: its record's ``attempts`` is
encoded capped at 2 (``capped``). The properties read it as one or more (the ``lost_race`` and
``retry_committed`` events), and no step reads a finished record. A commit made after two lost
races then writes what it writes after one (``Model._attempt_names`` names an attempt's files
after the version it writes, not its attempt), and the two states are one (spark-only.yaml's
largest part: 2,964,704 -> 2,595,091 states, with the names; docs/exhaustive.md).

Speed: encodings of immutable objects (all the model's frozen dataclasses) are memoized on the
object itself (``object.__setattr__`` into its ``__dict__``; the model's equality and hashing use
fields only, so this changes nothing the model sees), per permutation. A store's fingerprint is
an order-independent sum of its items' digests, so no per-state sort is needed.
"""

from __future__ import annotations

import hashlib
import itertools
import math
import re
from dataclasses import fields, is_dataclass, replace
from typing import Any, Callable

from icecheck.models import clock as clock_
from icecheck.models.store import ObjectStore
from icecheck.models.system import COMMITTED, OpRecord, State, WriterState, new_token

_WTOKEN = re.compile(r"\bw(\d+)\b")
_NTOKEN = re.compile(r"\b(\d+)(\d{3})\b")
#: a string the lift can change has a writer token or a run of 4 digits (``Perm._str``: one
#: search instead of the two substitutions for a string that has neither)
_ANYTOKEN = re.compile(r"\bw\d|\d{4}")
#: the encodings of the ints below 100 (``_enc``'s ``b"i%d;" % v``, made once: the ints every
#: permutation fixes, most of a state's ints)
_ICODES = [b"i%d;" % i for i in range(100)]
_MOD = 1 << 128
_CACHE_ATTR = "_icecheck_fp"
#: The largest symmetry group the canonicaliser enumerates (6! = 720 permutations per state).
MAX_GROUP = 720
#: Entries of ``Fingerprinter._added_sums`` before it is emptied.
ADDED_SUMS_SIZE = 100_000
_FIELDS: dict[type, tuple[str, ...]] = {}


_blake2b = hashlib.blake2b
#: where ``content`` caches a writer's exact content key
_EXACT_ATTR = "_icecheck_exact"
#: where ``_lost_sum`` caches a lost attempt's items' sums, on its metadata object
_LOST_ATTR = "_icecheck_lost"
#: where ``writers`` caches a state's writers as the fingerprint compares them
_WRITERS_ATTR = "_icecheck_fw"


#: Leave most of a failed operation's record out of fingerprints (the module's docstring). A
#: constant, not a search option: a benchmark's fresh process turns it off to measure what it
#: saves (benchmarks/reductions.py); every search otherwise has it on.
LEAVE_OUT_FAILED = True


#: Leave out of fingerprints what writers' lost attempts wrote (``WriterState.lost``; the
#: module's docstring). A constant like ``LEAVE_OUT_FAILED``, for the same benchmark.
LEAVE_OUT_LOST = True


#: Leave out of fingerprints how many races a finished operation lost beyond the first (its
#: record's ``attempts`` capped at 2: ``capped``; the module's docstring). A constant like the
#: two above, for the same benchmark.
LEAVE_OUT_LOSSES = True


#: Compare states without how many races a writer lost where that can no longer matter
#: (``Model.fingerprint_writers``; the module's docstring). A constant like the two above: the
#: checker (``engines/explicit.py``'s ``Expander``) sets ``writers_of`` only when it is on.
MERGE_LOSSES = True


def read_whole(r: OpRecord) -> bool:
    """Do the verdicts read all of this finished operation's record? Of one that applied or
    was told it committed, yes; of any other, only its index, outcome and attempts (the
    verdict memo's key, ``explicit._writer_key``, and the fingerprints, ``_left_out``)."""
    return r.applied or r.outcome == COMMITTED


def _left_out(r: OpRecord) -> bool:
    """Is most of this finished operation's record left out of fingerprints (the module's
    docstring)? Those the verdicts do not read whole."""
    return LEAVE_OUT_FAILED and not read_whole(r)


def _h(data: bytes) -> bytes:
    return _blake2b(data, digest_size=16).digest()


# -- the symmetry group -----------------------------------------------------------------------
def symmetry_classes(cfg) -> list[list[int]]:
    """Writers (1-based indexes) that are interchangeable: equal programs after renaming each
    writer's own tags to a placeholder, and no program naming another writer."""
    from icecheck.traces.canonical import _rename_value

    n = len(cfg.writers)
    # a job a schedule constraint names is not interchangeable with its twin: the constraint
    # tells them apart (models/schedule.py)
    scheduled = {i for c in getattr(cfg, "schedule", ()) for i in c[1:]}
    # a streaming sink runs a lifecycle its twin may not share (models/lifecycle.py)
    scheduled |= {s[0] for s in getattr(cfg, "sinks", ())}
    norm = []
    for i, prog in enumerate(cfg.writers, 1):
        text = repr(prog)
        others = {int(m.group(1)) for m in _WTOKEN.finditer(text)} - {i}
        if others & set(range(1, n + 1)) or i in scheduled:
            norm.append(("unique", i))
            continue
        # writers on different engine profiles plan the same command differently: never swap them
        profile = cfg.profile_of(i) if hasattr(cfg, "profile_of") else ""
        # nor writers on different catalog clients (models/clients.py)
        client = next((c[1:] for c in getattr(cfg, "clients", ()) if c[0] == i), None)
        norm.append((profile, client, repr(_rename_value(prog, {i: 0}))))
    classes: dict[Any, list[int]] = {}
    for i, key in enumerate(norm, 1):
        classes.setdefault(key, []).append(i)
    return [c for c in classes.values()]


def group(classes: list[list[int]]) -> list[dict[int, int]]:
    """Every permutation that permutes each class within itself (identity first)."""
    per_class = [[dict(zip(c, perm)) for perm in itertools.permutations(c)] for c in classes]
    out = []
    for combo in itertools.product(*per_class):
        p: dict[int, int] = {}
        for d in combo:
            p.update({k: v for k, v in d.items() if k != v})
        out.append(p)
    out.sort(key=lambda p: sorted(p.items()))
    return out


# -- the lift ---------------------------------------------------------------------------------
class Perm:
    """One writer permutation with its leaf maps (and string cache)."""

    def __init__(self, index: int, mapping: dict[int, int]):
        self.index = index
        self.map = {k: v for k, v in mapping.items() if k != v}
        self.identity = not self.map
        self.strings: dict[str, bytes] = {}
        self.orders: dict[int, list[int]] = {}

    def writer(self, i: int) -> int:
        return self.map.get(i, i)

    def order(self, n: int) -> list[int]:
        """The positions of a state's ``n`` writers sorted by the slots this permutation sends
        them to (a state keeps its writers in slot order: ``Model.initial``, ``_put_writer``)."""
        got = self.orders.get(n)
        if got is None:
            got = self.orders[n] = sorted(range(n), key=lambda i: self.writer(i + 1))
        return got

    def name(self, name: str) -> str:
        return self._str(name)

    def _str(self, s: str) -> str:
        if self.identity or _ANYTOKEN.search(s) is None:
            return s
        m = self.map
        s = _WTOKEN.sub(lambda t: f"w{m.get(int(t.group(1)), int(t.group(1)))}", s)
        return _NTOKEN.sub(lambda t: (f"{m[int(t.group(1))]}{t.group(2)}"
                                      if int(t.group(1)) in m else t.group(0)), s)

    def int_(self, v: int) -> int:
        if self.identity or v < 100:
            return v
        if v >= 1000:
            hi, lo = divmod(v, 1000)
            return self.map[hi] * 1000 + lo if hi in self.map else v
        hi, lo = divmod(v, 100)
        return self.map[hi] * 100 + lo if hi in self.map and lo >= 1 else v

    def action(self, action):
        from icecheck.models.system import Action
        return Action(self.name(action.writer), action.kind, action.choice)


class _StoreNode:
    """One store's part of its digest (``Fingerprinter.store_digest``): its base's node, the
    paths it added and deleted, and its digest per permutation once computed."""

    __slots__ = ("parent", "added", "gone", "sums")

    def __init__(self, parent: "_StoreNode | None", added: tuple, gone: frozenset, n: int):
        self.parent, self.added, self.gone = parent, added, gone
        self.sums: list = [None] * n


def capped(r):
    """A finished operation's record with ``attempts`` capped at 2, what the properties tell
    apart (one attempt, or more), cached on the record (the module's docstring)."""
    if r.attempts <= 2:
        return r
    got = r.__dict__.get("_icecheck_capped")
    if got is None:
        got = replace(r, attempts=2)
        object.__setattr__(r, "_icecheck_capped", got)
    return got


class Fingerprinter:
    """Canonical state fingerprints for one configuration."""

    def __init__(self, cfg, symmetry: bool = True):
        singletons = [[i] for i in range(1, len(cfg.writers) + 1)]
        #: the interchangeable writers (``symmetry_classes``), whether or not this
        #: fingerprinter reduces by them (the checker normalizes outcomes by them either way)
        self.writer_classes = symmetry_classes(cfg)
        self.classes = self.writer_classes if symmetry else singletons
        self.note = ""
        size = math.prod(math.factorial(len(c)) for c in self.classes)
        if size > MAX_GROUP:
            # min over every permutation costs |G| hashes per state: with 9 interchangeable
            # writers that is 362,880, and a search would spend minutes on its first state.
            self.note = (f"writer symmetry off: {size:,} permutations per state exceed "
                         f"{MAX_GROUP:,} (at most 6 interchangeable writers)")
            self.classes = singletons
        self.perms = [Perm(k, p) for k, p in enumerate(group(self.classes))]
        self.symmetric = len(self.perms) > 1
        # The blind renaming sends every writer to 0: a writer's state under it is its
        # *signature*, the same for writer i in s and writer p(i) in lift(p)(s) (invariant).
        n = len(cfg.writers)
        self.blind = Perm(len(self.perms), {i: 0 for i in range(1, n + 1)})
        # one cache slot per permutation (and the blind one), kept on each object
        self.nperms = len(self.perms) + 1
        self._identity = self.perms[0]
        self._by_map = {tuple(sorted(p.map.items())): p for p in self.perms}
        #: tags what callers cache on model objects per permutation of this group
        #: (``explicit._canonical_judge_key``)
        self.token = new_token()
        self._twins: dict[bytes, list] = {}   # identity digest -> the shared per-perm cache
        self._added_sums: dict[int, tuple] = {}   # see _added_sum
        self._candidates: dict[tuple, list] = {}   # signatures' ranks per class -> candidates
        self._ranks: dict[tuple, dict] = {}    # the same -> writer_ranks (a config's names)
        #: the order type ``candidates`` computed last (a caller may keep it for the state)
        self.last_order: tuple = ()
        # the classes of more than one writer, as positions in a state's writers
        self._tied_classes = [[i - 1 for i in c] for c in self.classes if len(c) > 1]
        #: the state's writers as states are compared (``Model.fingerprint_writers``: without
        #: how many races a writer lost, where that can no longer matter), or None: the
        #: writers themselves. The checker sets it (``Expander``, with the lever
        #: ``MERGE_LOSSES``); everything here reads a state's writers through ``writers``
        self.writers_of: Callable[[State], tuple] | None = None

    # -- encoding ---------------------------------------------------------------------------
    def _enc(self, v: Any, p: Perm, out: list) -> None:
        t = type(v)
        if t is str:
            b = p.strings.get(v)
            if b is None:
                s = p._str(v).encode()
                b = b"s%d:" % len(s) + s
                p.strings[v] = b
            out.append(b)
        elif t is int:
            out.append(_ICODES[v] if 0 <= v < 100 else b"i%d;" % p.int_(v))
        elif t is tuple or t is list:
            out.append(b"(")
            strings = p.strings
            for x in v:
                # strings met before and small ints, inline (as in ``_encode``)
                xt = type(x)
                if xt is str:
                    b = strings.get(x)
                    if b is not None:
                        out.append(b)
                        continue
                elif xt is int and 0 <= x < 100:
                    out.append(_ICODES[x])
                    continue
                self._enc(x, p, out)
            out.append(b")")
        elif v is None:
            out.append(b"N")
        elif t in _FIELDS:
            # a dataclass met before (``_encode`` registers each type it encodes): the
            # commonest field value after strings, ints and tuples; obj_digest's cache, inline
            vd = v.__dict__
            cache = vd.get(_CACHE_ATTR)
            got = cache[p.index] if cache is not None and len(cache) == self.nperms else None
            out.append(b"D" + (got if got is not None else self.obj_digest(v, p)))
        elif t is bool:
            out.append(b"T" if v else b"F")
        elif t is float:
            out.append(b"f%r;" % v)
        elif t is frozenset or t is set:
            parts = []
            for x in v:
                sub: list = []
                self._enc(x, p, sub)
                parts.append(b"".join(sub))
            out.append(b"{" + b"".join(sorted(parts)) + b"}")
        elif t is dict:
            parts = []
            for k, x in v.items():
                sub = []
                self._enc(k, p, sub)
                self._enc(x, p, sub)
                parts.append(b"".join(sub))
            out.append(b"<" + b"".join(sorted(parts)) + b">")
        elif t is ObjectStore:
            out.append(b"S" + self.store_digest(v, p).to_bytes(16, "little"))
        elif is_dataclass(v):
            out.append(b"D" + self.obj_digest(v, p))
        else:  # anything else: its repr (deterministic for the model's value types)
            r = repr(v).encode()
            out.append(b"r%d:" % len(r) + r)

    def obj_digest(self, obj: Any, p: Perm) -> bytes:
        d = obj.__dict__
        cache = d.get(_CACHE_ATTR)
        if cache is not None and len(cache) == self.nperms:
            got = cache[p.index]
            if got is not None:
                return got
        else:
            # First digest of this object (or another fingerprinter's cache, in a test): its
            # identity digest, then the cache list of an equal object met before, shared, so
            # that equal objects built along different paths are encoded once per permutation
            # (hash-consing by content; 97% of the objects hashed equal earlier ones, issue 13).
            d0 = self._encode(obj, self._identity)
            cache = self._twins.get(d0)
            if cache is None:
                cache = [None] * self.nperms
                cache[0] = d0
                self._twins[d0] = cache
            object.__setattr__(obj, _CACHE_ATTR, cache)
            got = cache[p.index]
            if got is not None:
                return got
        got = cache[p.index] = self._encode(obj, p)
        return got

    def content(self, obj: Any) -> bytes:
        """A content key of a model value (``properties.EvalMemo``; the model's step memo and
        hash-consing, ``Model.content_key``): its identity-permutation encoding's digest,
        cached on dataclass objects (equal content, equal key). A writer's encoding leaves out
        most of its failed operations' records (``_history_code``), so its key adds their
        digests: the model replaces a writer it built by one of equal key, which must be equal
        field for field."""
        d = getattr(obj, "__dict__", None)
        if d is not None:
            if type(obj) is WriterState:
                got = d.get(_EXACT_ATTR)
                if got is None:
                    got = self._writer_content(obj)
                    object.__setattr__(obj, _EXACT_ATTR, got)
                return got
            cache = d.get(_CACHE_ATTR)
            if cache is not None and len(cache) == self.nperms:
                return cache[0]
            if is_dataclass(obj):
                return self.obj_digest(obj, self._identity)
        out: list = []
        self._enc(obj, self._identity, out)
        return _h(b"".join(out))

    def _writer_content(self, w: WriterState) -> bytes:
        """``content`` of a writer: its digest, and the own digests of its records the digest
        encodes in part (left out, or with their attempts capped) and lost attempts' paths."""
        cache = w.__dict__.get(_CACHE_ATTR)
        d0 = cache[0] if cache is not None and len(cache) == self.nperms and cache[0] \
            else self.obj_digest(w, self._identity)
        left = [self.obj_digest(r, self._identity) for r in w.history
                if r.attempts > 2 or _left_out(r)]
        if w.lost:
            self._enc(w.lost, self._identity, left)
        return _h(d0 + b"".join(left)) if left else d0

    def _history_code(self, history: tuple, p: Perm) -> bytes:
        """A writer's finished operations as its fingerprint encodes them under ``p``: each
        one that applied or was told it committed whole (its digest), each other one by its
        index, outcome, attempts, snapshot id and intent's kind only (the module's docstring:
        what a fingerprint leaves out). A history with no such record is encoded as any tuple
        is (``_enc``), so its states keep the fingerprints they had before anything was left
        out, and the search its order."""
        out = [b"("]
        k, nperms = p.index, self.nperms
        for r in history:
            if r.attempts > 2 and LEAVE_OUT_LOSSES:
                r = capped(r)
            if _left_out(r):
                out.append(b"F")
                self._enc((r.index, r.outcome, r.attempts, r.snapshot_id,
                           type(r.intent).__name__), p, out)
            else:
                cache = r.__dict__.get(_CACHE_ATTR)
                got = cache[k] if cache is not None and len(cache) == nperms else None
                out.append(b"D" + (got if got is not None else self.obj_digest(r, p)))
        out.append(b")")
        return b"".join(out)

    def _encode(self, obj: Any, p: Perm) -> bytes:
        d = obj.__dict__
        out = [type(obj).__name__.encode(), b"("]
        t = type(obj)
        names = _FIELDS.get(t)
        if names is None:
            # not ``fingerprint_omit`` (WriterState.lost: bookkeeping no step reads, which
            # tells ``under`` what to take off the store's digest)
            names = _FIELDS[t] = tuple(f.name for f in fields(obj) if f.compare
                                       and not f.metadata.get("fingerprint_omit"))
        is_writer = t is WriterState
        strings, nperms, k = p.strings, self.nperms, p.index
        for name in names:
            v = d[name]
            # the commonest field values, as ``_enc`` encodes them, without a call per field
            # (a writer state has 21 fields, mostly strings, ints, None and empty tuples; the
            # fields were half of all the calls in the small searches: issue 13)
            vt = type(v)
            if vt is str:
                b = strings.get(v)
                if b is None:
                    self._enc(v, p, out)
                else:
                    out.append(b)
            elif v is None:
                out.append(b"N")
            elif vt is int:
                if is_writer and name == "slot":
                    out.append(b"i%d;" % p.writer(v))
                elif 0 <= v < 100:
                    out.append(_ICODES[v])
                else:
                    out.append(b"i%d;" % p.int_(v))
            elif vt is tuple and not v:
                out.append(b"()")
            elif is_writer and name == "history":
                out.append(self._history_code(v, p))
            elif vt is bool:
                out.append(b"T" if v else b"F")
            elif vt in _FIELDS:
                vd = v.__dict__
                cache = vd.get(_CACHE_ATTR)
                got = cache[k] if cache is not None and len(cache) == nperms else None
                out.append(b"D" + (got if got is not None else self.obj_digest(v, p)))
            else:
                self._enc(v, p, out)
        return _blake2b(b"".join(out), digest_size=16).digest()    # _h, inline

    def store_digest(self, store: ObjectStore, p: Perm) -> int:
        """The store's digest under ``p``: the sum (mod 2**128) of its items' digests (path
        and object) and of its deleted paths', so incremental: a store's digest is its base's
        plus what it added and deleted (``ObjectStore._base``, ``_added``).

        Kept in a chain of ``_StoreNode`` (one per store, made the first time the store is
        hashed, while its base, the state being expanded, is alive), which outlives the
        stores: a state's children are often hashed under a permutation its own store never
        was, and the base store is collected by then; the chain still gives the base's part
        without a pass over every object (issue 13: 10,246 such passes over 199,382 objects in
        the first 40,213 states of the canonical configuration)."""
        got = store.digests
        if got is None or got[0] is not self:
            got = store.digests = (self, self._node_of(store))
        node = got[1]
        v = node.sums[p.index]
        if v is None:
            v = self._node_digest(node, store._objects, p)
        return v

    def _node_of(self, store: ObjectStore) -> "_StoreNode":
        base = store._base() if store._base is not None else None
        if base is None:   # a first store, or one whose base is gone: all of it, once
            return _StoreNode(None, tuple(store._objects), store._deleted, self.nperms)
        got = base.digests
        if got is None or got[0] is not self:
            got = base.digests = (self, self._node_of(base))
        return _StoreNode(got[1], store._added, store._deleted - base._deleted, self.nperms)

    def _node_digest(self, node: "_StoreNode", objs: dict, p: Perm) -> int:
        # up the chain to the nearest node hashed under p, then down, caching each sum; the
        # objects of every node's paths are in ``objs`` (a store keeps every object its bases
        # had: paths are never rewritten, deleted objects stay in ``_objects``)
        k = p.index
        chain = []
        n = node
        while n is not None and n.sums[k] is None:
            chain.append(n)
            n = n.parent
        total = n.sums[k] if n is not None else 0
        sums = self._added_sums
        for m in reversed(chain):
            added = m.added
            if added:
                # _added_sum's cache, read inline
                got = sums.get(id(added))
                if got is not None and got[0] is added and got[1][k] is not None:
                    total += got[1][k]
                else:
                    total += self._added_sum(added, objs, p)
            for path in m.gone:
                total += self._gone(path, p)
            total %= _MOD
            m.sums[k] = total
        return total

    def _added_sum(self, added: tuple, objs: dict, p: Perm) -> int:
        """The sum of the digests of the items at ``added`` (paths of ``objs``) under ``p``,
        cached by the tuple itself: a tuple of added paths belongs to the one mapping of
        objects it was made for (``ObjectStore.put_all``; a step memo entry's tuple to that
        entry's objects, which every replay of it adds), so the sum is computed once per
        permutation for all the stores that share it. The cache keeps the tuple alive, so its
        id is not reused while it stands, and is emptied at ``ADDED_SUMS_SIZE`` entries."""
        sums = self._added_sums
        got = sums.get(id(added))
        if got is None or got[0] is not added:
            if len(sums) >= ADDED_SUMS_SIZE:
                sums.clear()
            got = sums[id(added)] = (added, [None] * self.nperms)
        total = 0
        for path in added:
            total += int.from_bytes(self._item(path, objs[path], p), "little")
        got[1][p.index] = total
        return total

    def clock_digest(self, store: ObjectStore, p: Perm) -> bytes:
        """The digest under ``p`` of the store's clock (models/clock.py: the tick, and the
        tick each object was written at, its path renamed by ``p``), cached on the store."""
        got = store.clock_digests
        if got is None or got[0] is not self:
            got = store.clock_digests = (self, [None] * self.nperms)
        d = got[1][p.index]
        if d is None:
            now, items = clock_.tick_digest(store, lambda path: self.str_code(path, p))
            d = got[1][p.index] = _h(b"%d;" % now + b"".join(
                code + b"@%d;" % t for code, t in items))
        return d

    def _lost_sum(self, groups: tuple, objs: dict, p: Perm) -> int:
        """The sum of the store items of a writer's lost attempts (``WriterState.lost``: one
        group of paths per attempt, its metadata file's first) under ``p``: what ``under``
        takes off the store's digest. Not cached on the writer: the same paths hold other
        content in another state (a lost attempt's name says whose attempt it was, not what it
        read). Cached on the attempt's metadata object instead, per permutation: a metadata
        object reaches the same objects in every state that holds it (``Model._step_key``),
        and its group is the objects it reaches that its base did not (a deep search holds
        several lost attempts per writer: summing their items afresh at every fingerprint was
        a tenth of a search's time)."""
        total = 0
        k = p.index
        for group in groups:
            meta = objs[group[0]]
            got = meta.__dict__.get(_LOST_ATTR)
            if got is None or got[0] is not self or got[1] != group:
                got = (self, group, [None] * self.nperms)
                object.__setattr__(meta, _LOST_ATTR, got)
            v = got[2][k]
            if v is None:
                v = 0
                for path in group:
                    v += int.from_bytes(self._item(path, objs[path], p), "little")
                got[2][k] = v
            total += v
        return total

    def str_code(self, s: str, p: Perm) -> bytes:
        """The encoding of the string ``s`` under ``p`` (``_enc``'s, cached on ``p``): a
        name of ``lift(p)(s)``."""
        b = p.strings.get(s)
        if b is None:
            out: list = []
            self._enc(s, p, out)
            b = out[0]
        return b

    def _gone(self, key: str, p: Perm) -> int:
        kb: list = [b"deleted:"]
        self._enc(key, p, kb)
        return int.from_bytes(_h(b"".join(kb)), "little")

    def _item(self, key: str, obj: Any, p: Perm) -> bytes:
        # the item digest depends on the key and the object; cache it on the object per key
        d = obj.__dict__
        items = d.get("_icecheck_item")
        if items is None or items[0] != self.nperms:
            items = (self.nperms, {})
            object.__setattr__(obj, "_icecheck_item", items)
        ck = (p.index, key)
        got = items[1].get(ck)
        if got is None:
            kb: list = []
            self._enc(key, p, kb)
            got = _blake2b(b"".join(kb) + self.obj_digest(obj, p), digest_size=16).digest()
            items[1][ck] = got
        return got

    # -- states -----------------------------------------------------------------------------
    def writers(self, state: State) -> tuple:
        """``state``'s writers as the fingerprint compares them (``writers_of``), computed
        once per state: a state is hashed under each of its candidates, and its order type
        and ranks read the same writers."""
        f = self.writers_of
        if f is None:
            return state.writers
        d = state.__dict__
        got = d.get(_WRITERS_ATTR)
        if got is None or got[0] is not f:
            got = (f, f(state))
            object.__setattr__(state, _WRITERS_ATTR, got)
        return got[1]

    def under(self, state: State, p: Perm) -> bytes:
        """H(lift(p)(state))."""
        # the same bytes as _enc of the catalog entry (a dataclass: b"D" + its digest)
        store = state.store
        out = [b"State(D", self.obj_digest(state.catalog, p), b"", b"("]
        if store._now:       # the clock has moved (models/clock.py): only with ticks
            out[3] = b"T" + self.clock_digest(store, p) + b"("
        ws = state.writers if self.writers_of is None else self.writers(state)
        k, n = p.index, self.nperms
        lost = 0
        for i in p.order(len(ws)):
            w = ws[i]
            # obj_digest's cache, read inline (a writer is usually hashed before: its twin;
            # the instance dict in a local: the compiled build reads it as a dict)
            wd = w.__dict__
            cache = wd.get(_CACHE_ATTR)
            d = cache[k] if cache is not None and len(cache) == n else None
            out.append(b"D" + (d if d is not None else self.obj_digest(w, p)))
            groups = wd.get("lost")
            if groups and LEAVE_OUT_LOST:
                lost += self._lost_sum(groups, store._objects, p)
        # the store's sum, without the items of lost attempts (``_lost_sum``)
        out[2] = b"S" + ((self.store_digest(store, p) - lost) % _MOD).to_bytes(16, "little")
        out.append(b"))")
        return _blake2b(b"".join(out), digest_size=16).digest()   # _h, inline

    def candidates(self, state: State) -> list[Perm]:
        """The permutations the canonical form is the least over: those that put each
        symmetry class's writers in the order of their signatures (``blind``), every order of
        equal signatures included.

        For any q in the group, candidates(lift(q)(s)) = candidates(s) o q^-1 (signatures are
        invariant), so {lift(p)(s) : p candidate} is the same set for every state of an orbit
        and its least hash is a canonical fingerprint, as the least over the whole group is
        (docs/exhaustive.md). Writers that differ in anything but their names (almost always,
        after the first steps) leave one candidate: one hash per state instead of |G|.
        """
        if not self.symmetric:
            return [self._identity]
        # the candidates are a function of the order of the signatures within each class,
        # ties included: memoised on each class's order type
        key = self.last_order = self._order_type(state)
        got = self._candidates.get(key)
        if got is None:
            got = self._candidates[key] = self._candidates_of(state)
        return got

    def _order_type(self, state: State) -> tuple:
        """The order of the writers' signatures (``blind``) within each class of more than
        one writer, ties included: one entry per such class, the comparisons of its pairs
        (its dense ranks beyond three writers). Invariant under the group, like the
        signatures."""
        blind, k, n = self.blind, self.blind.index, self.nperms
        sigs_t = []
        for w in (state.writers if self.writers_of is None else self.writers(state)):
            # obj_digest's cache, read inline
            wd = w.__dict__
            cache = wd.get(_CACHE_ATTR)
            d = cache[k] if cache is not None and len(cache) == n else None
            sigs_t.append(d if d is not None else self.obj_digest(w, blind))
        return self.order_type_of(sigs_t)

    def order_type_of(self, sigs_t: list) -> tuple:
        """The order type of signatures given in slot order (``_order_type``'s, of any
        signatures invariant under the group: the judge key's are writers' judged parts)."""
        # the signatures in slot order (a state keeps its writers so: ``Perm.order``); a
        # class's order type (its dense ranks) is read off the comparisons of its pairs
        pattern = []
        for c in self._tied_classes:
            if len(c) == 3:
                x, y, z = sigs_t[c[0]], sigs_t[c[1]], sigs_t[c[2]]
                pattern.append(((x > y) - (x < y), (x > z) - (x < z), (y > z) - (y < z)))
            elif len(c) == 2:
                x, y = sigs_t[c[0]], sigs_t[c[1]]
                pattern.append((x > y) - (x < y))
            else:
                sigs = [sigs_t[i] for i in c]
                ranks = sorted(set(sigs))
                pattern.append(tuple(map(ranks.index, sigs)))
        return tuple(pattern)

    def writer_ranks(self, state: State, order: tuple | None = None) -> dict[str, tuple]:
        """Each writer's rank, by name: (its symmetry class's index, its signature's dense
        rank in the class). Partial-order reduction orders actions by it (``por.order_key``):
        a writer renamed by the group keeps its rank (``rank(lift(p)(s), p(w)) = rank(s,
        w)``), which the sleep sets need to stay sound under symmetry (docs/exhaustive.md);
        interchangeable writers in equal states tie. Memoised on the order type (``order``:
        the state's, when the caller kept it from ``candidates``: ``last_order``)."""
        if not self._tied_classes:
            key = ()
        else:
            key = order if order is not None else self._order_type(state)
        got = self._ranks.get(key)
        if got is None:
            got = self._ranks[key] = self._ranks_of(state)
        return got

    def _ranks_of(self, state: State) -> dict[str, tuple]:
        slot_of = {w.slot: w for w in self.writers(state)}
        out: dict[str, tuple] = {}
        for ci, c in enumerate(self.classes):
            sigs = {i: self.obj_digest(slot_of[i], self.blind) for i in c}
            dense = sorted(set(sigs.values()))
            for i in c:
                out[slot_of[i].name] = (ci, dense.index(sigs[i]))
        return out

    def candidates_of_signatures(self, sigs_t: list) -> list[Perm]:
        """``candidates`` for writers whose signatures, in slot order, are ``sigs_t`` (any
        signatures invariant under the group, as ``blind``'s are): the permutations that put
        each class's writers in the order of those signatures, ties in every order. A
        function of their order type, so it shares ``candidates``'s memo."""
        if not self.symmetric:
            return [self._identity]
        key = self.order_type_of(sigs_t)
        got = self._candidates.get(key)
        if got is None:
            got = self._candidates[key] = self._candidates_for(
                {i: sig for i, sig in enumerate(sigs_t, 1)})
        return got

    def _candidates_of(self, state: State) -> list[Perm]:
        return self._candidates_for({w.slot: self.obj_digest(w, self.blind)
                                     for w in self.writers(state)})

    def _candidates_for(self, sig_of: dict) -> list[Perm]:
        # sig_of: slot -> signature
        per_class = []
        for c in self.classes:
            if len(c) == 1:
                continue
            keyed = sorted((sig_of[i], i) for i in c)
            if all(keyed[k][0] != keyed[k - 1][0] for k in range(1, len(keyed))):
                # no tie (the common case): one choice, the k-th signature to the k-th slot
                per_class.append([[{i: c[k] for k, (_, i) in enumerate(keyed)}]])
                continue
            groups: list[list[int]] = []       # writers of equal signature, in signature order
            for k, (sig, i) in enumerate(keyed):
                if k and sig == keyed[k - 1][0]:
                    groups[-1].append(i)
                else:
                    groups.append([i])
            # the k-th writer in signature order goes to the class's k-th slot; ties: any order
            options = []
            pos = 0
            for g in groups:
                targets = c[pos:pos + len(g)]
                pos += len(g)
                options.append([dict(zip(g, perm)) for perm in itertools.permutations(targets)])
            per_class.append(options)
        out = []
        for combo in itertools.product(*(itertools.product(*opts) for opts in per_class)):
            m: dict[int, int] = {}
            for class_choice in combo:
                for d in class_choice:
                    m.update({k: v for k, v in d.items() if k != v})
            out.append(self._by_map[tuple(sorted(m.items()))])
        return out

    def fingerprint(self, state: State) -> bytes:
        """The canonical fingerprint: the least H(lift(p)(state)) over ``candidates``."""
        return min(self.under(state, p) for p in self.candidates(state))

    def canonical(self, state: State) -> tuple[bytes, list[Perm]]:
        """(canonical fingerprint, the candidate permutations that reach it)."""
        best, who = None, []
        for p in self.candidates(state):
            h = self.under(state, p)
            if best is None or h < best:
                best, who = h, [p]
            elif h == best:
                who.append(p)
        return best, who


def check_bounds(cfg) -> None:
    """Refuse configurations the int renaming could confuse (see the module docstring)."""
    if len(cfg.writers) > 9:
        raise ValueError("symmetry reduction supports at most 9 writers")
    for r in cfg.initial_rows:
        for v in r:
            if isinstance(v, int) and not isinstance(v, bool) and v >= 100:
                raise ValueError(f"symmetry reduction needs initial row values below 100 "
                                 f"(got {v}); run with --no-symmetry")
