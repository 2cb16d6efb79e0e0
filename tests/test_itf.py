"""`icecheck trace export --itf` (traces/itf.py): ITF that other tools read back (issue 42,
item 6).

* Every corpus trace's export, parsed by a real ITF reader from PyPI (itf-py, the
  ``conformance`` extra), gives back the model's states as the model holds them, duplicates
  included: the row the add_files traces read twice is there twice.
* Every value has the form Apalache's ITF reader demands of the type ``#meta.varTypes``
  declares for it (ADR-015 "ITF as input to Apalache"; the type syntax of ADR-002). Apalache is
  a JVM program this machine cannot fetch, so ``_check`` below restates its reader's rules
  (tla-io ItfJsonToTla: ``#bigint`` integers, ``{ f: T }`` records with exactly the declared
  fields and never empty, ``#tup`` of the declared width, ``#set``, ``#map`` pairs, variants
  ``{"tag", "value"}`` with a declared tag, no ``#unserializable``, no string of the form of an
  uninterpreted constant) and parses the declared types with ADR-002's grammar.
* A value with no faithful form fails the export with one message, exit 2.
"""

from __future__ import annotations

import glob
import json
import os
import re
import subprocess
import sys
from collections import Counter

import pytest

from icecheck.engines.config import ExploreConfig
from icecheck.models.files import DataFile, DeleteFile
from icecheck.models.reads import read_rows
from icecheck.traces.execute import model_for, run_actions
from icecheck.traces.format import load_trace
from icecheck.traces.itf import VAR_TYPES, VARS, Unrepresentable, export, keyed, value

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = sorted(glob.glob(os.path.join(ROOT, "traces", "*.json")))
ADD_FILES = [p for p in CORPUS if "add-files-twice" in os.path.basename(p)]
assert len(ADD_FILES) == 2, ADD_FILES       # Spark's and PyIceberg's


# --- ADR-002 types (the subset ITF values can have) ----------------------------------------

_TOKEN = re.compile(r"\s*(->|<<|>>|[(){}|,:]|[A-Za-z_][A-Za-z0-9_]*)")
_KEYWORDS = {"Int", "Str", "Bool", "Set", "Seq", "Real", "Rec", "Variant"}


def parse_type(text: str):
    """An ADR-002 type as a tree: ("Int",), ("Str",), ("Bool",), ("Const", NAME),
    ("Set", T), ("Seq", T), ("Tup", [T...]), ("Rec", {f: T}), ("Var", {tag: T}),
    ("Fun", K, V). Only Apalache's own forms: ``[f: T]`` records, ``<<>>`` and type variables
    are refused, as its ITF reader refuses them."""
    tokens, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        assert m, f"bad character in type {text!r} at {pos}"
        tokens.append(m.group(1))
        pos = m.end()
        if not text[pos:].strip():
            break
    i = 0

    def peek():
        return tokens[i] if i < len(tokens) else None

    def take(expected=None):
        nonlocal i
        tok = peek()
        assert tok is not None and (expected is None or tok == expected), \
            f"{text!r}: expected {expected!r} at token {i}, got {tok!r}"
        i += 1
        return tok

    def ident(tok):
        return re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", tok) and tok not in _KEYWORDS

    def typ():
        left = simple()
        if peek() == "->":
            take("->")
            return ("Fun", left, typ())
        return left

    def simple():
        tok = take()
        if tok in ("Int", "Str", "Bool"):
            return (tok,)
        if tok in ("Set", "Seq"):
            take("(")
            inner = typ()
            take(")")
            return (tok, inner)
        if tok == "<<":
            elems = [typ()]
            while peek() == ",":
                take(",")
                elems.append(typ())
            take(">>")
            return ("Tup", elems)
        if tok == "{":
            fields = {}
            while True:
                name = take()
                assert ident(name) and name not in fields, f"{text!r}: field {name!r}"
                take(":")
                fields[name] = typ()
                if peek() != ",":
                    break
                take(",")
            take("}")
            assert fields, f"{text!r}: an empty record type"
            return ("Rec", fields)
        if tok == "(":
            inner = typ()
            take(")")
            return inner
        assert ident(tok), f"{text!r}: unexpected {tok!r}"
        if peek() == "(":                                   # a variant: Tag(T) | Tag(T) ...
            tags = {}
            while True:
                take("(")
                assert tok not in tags, f"{text!r}: tag {tok} twice"
                tags[tok] = typ()
                take(")")
                if peek() != "|":
                    return ("Var", tags)
                take("|")
                tok = take()
                assert ident(tok), f"{text!r}: variant tag {tok!r}"
        assert re.fullmatch(r"[A-Z_][A-Z0-9_]*", tok), f"{text!r}: {tok!r} is no type"
        return ("Const", tok)

    t = typ()
    assert i == len(tokens), f"{text!r}: trailing {tokens[i:]}"
    return t


_MODEL_VALUE = re.compile(r"([a-zA-Z0-9_]+)_OF_([A-Z_][A-Z0-9_]*)")


def _check(v, t, where: str) -> None:
    """Apalache's ITF reader's rules for a value ``v`` of type ``t`` (see the docstring)."""
    kind = t[0]
    assert not (isinstance(v, dict) and "#unserializable" in v), f"{where}: #unserializable"
    if kind == "Int":
        assert isinstance(v, dict) and set(v) == {"#bigint"} and \
            re.fullmatch(r"-?[0-9]+", v["#bigint"]), f"{where}: {v!r} is no #bigint"
    elif kind == "Str":
        assert isinstance(v, str) and not _MODEL_VALUE.fullmatch(v), f"{where}: {v!r}"
    elif kind == "Bool":
        assert isinstance(v, bool), f"{where}: {v!r}"
    elif kind == "Const":
        m = isinstance(v, str) and _MODEL_VALUE.fullmatch(v)
        assert m and m.group(2) == t[1], f"{where}: {v!r} is no {t[1]} value"
    elif kind == "Seq":
        assert isinstance(v, list), f"{where}: {v!r} is no list"
        for k, x in enumerate(v):
            _check(x, t[1], f"{where}[{k}]")
    elif kind == "Set":
        assert isinstance(v, dict) and set(v) == {"#set"} and isinstance(v["#set"], list), where
        texts = [json.dumps(x, sort_keys=True) for x in v["#set"]]
        assert len(texts) == len(set(texts)), f"{where}: a set lists an element twice"
        for x in v["#set"]:
            _check(x, t[1], f"{where}{{}}")
    elif kind == "Tup":
        assert isinstance(v, dict) and set(v) == {"#tup"} and len(v["#tup"]) == len(t[1]), \
            f"{where}: {v!r} is no {len(t[1])}-tuple"
        for k, (x, tt) in enumerate(zip(v["#tup"], t[1])):
            _check(x, tt, f"{where}<{k}>")
    elif kind == "Rec":
        assert isinstance(v, dict) and set(v) == set(t[1]) and v, \
            f"{where}: fields {sorted(v) if isinstance(v, dict) else v!r} != {sorted(t[1])}"
        for f, tt in t[1].items():
            _check(v[f], tt, f"{where}.{f}")
    elif kind == "Var":
        assert isinstance(v, dict) and set(v) == {"tag", "value"} and v["tag"] in t[1], \
            f"{where}: {v!r} is no variant of {sorted(t[1])}"
        _check(v["value"], t[1][v["tag"]], f"{where}:{v['tag']}")
    elif kind == "Fun":
        assert isinstance(v, dict) and set(v) == {"#map"}, f"{where}: {v!r} is no #map"
        keys = []
        for pair in v["#map"]:
            assert isinstance(pair, list) and len(pair) == 2, f"{where}: entry {pair!r}"
            _check(pair[0], t[1], f"{where} key")
            _check(pair[1], t[2], f"{where}[{pair[0]!r}]")
            keys.append(json.dumps(pair[0], sort_keys=True))
        # a key twice: a reader keeps one of them (what item 6 was about)
        assert len(keys) == len(set(keys)), f"{where}: a #map has a key twice"
    else:                                                    # pragma: no cover
        raise AssertionError(f"{where}: type {t!r}")


def check_document(doc: dict, where: str) -> None:
    """ADR-015's trace object, and Apalache's demands of one it reads."""
    types = doc["#meta"]["varTypes"]
    assert set(types) == set(doc["vars"]) and len(doc["vars"]) == len(set(doc["vars"])), where
    parsed = {name: parse_type(text) for name, text in types.items()}
    for k, state in enumerate(doc["states"]):
        assert set(state) == set(doc["vars"]) | {"#meta"}, (where, k)
        assert state["#meta"]["index"] == k, (where, k)
        for name in doc["vars"]:
            _check(state[name], parsed[name], f"{where} state {k} {name}")


def test_var_types_parse_and_name_every_variable():
    """The declared types are ADR-002 types (curly records, no empty tuple), one for each
    variable; the checker itself refuses what Apalache's reader refuses."""
    assert list(VAR_TYPES) == VARS
    for name, text in VAR_TYPES.items():
        parse_type(text)
    assert parse_type("Seq(<<Int, Str>>)") == ("Seq", ("Tup", [("Int",), ("Str",)]))
    assert parse_type("Str -> Set(Int)") == ("Fun", ("Str",), ("Set", ("Int",)))
    assert parse_type("A(UNIT) | B(Int)") == ("Var", {"A": ("Const", "UNIT"), "B": ("Int",)})
    for bad in ("<<>>", "[a: Int]", "{ }", "Int(Int) | B(Str)", "{ Seq: Int }"):
        with pytest.raises(AssertionError):
            parse_type(bad)
    seq_of_rows = parse_type(VAR_TYPES["rows"])
    _check([{"#tup": ["f", {"#bigint": "0"}, [{"tag": "Null", "value": "u_OF_UNIT"}]]}],
           seq_of_rows, "ok")
    for bad in ([{"#tup": ["f", 0, []]}],                                   # a plain number
                [{"#tup": ["f", {"#bigint": "0"}, [{"#unserializable": "null"}]]}],
                [{"#tup": ["f", {"#bigint": "0"}]}],                        # width 2, not 3
                {"#map": []}):
        with pytest.raises(AssertionError):
            _check(bad, seq_of_rows, "bad")
    with pytest.raises(AssertionError, match="key twice"):
        _check({"#map": [["a", "x"], ["a", "x"]]}, parse_type("Str -> Str"), "dup")


@pytest.mark.parametrize("path", CORPUS, ids=os.path.basename)
def test_every_export_has_the_forms_of_its_declared_types(path):
    doc = export(load_trace(path), path)
    assert doc["vars"] == VARS and doc["#meta"]["varTypes"] == VAR_TYPES
    check_document(json.loads(json.dumps(doc)), os.path.basename(path))


# --- the round trip through itf-py ---------------------------------------------------------

def _model_states(path: str):
    """The trace re-run on the model, independently of the export."""
    doc = load_trace(path)
    model = model_for(ExploreConfig.from_json(doc["config"], path), path)
    run = run_actions(model, doc["actions"])
    assert run.stopped is None
    return model, run


def expected_state(model, state, action: str) -> dict:
    """The model's state as plain Python, read straight from the model's objects: what a
    faithful parse must give back (None for a null; 0 and "" for "none", as documented)."""
    meta = state.metadata
    snap = meta.current
    archive = state.store.archive()
    rows, manifests, files = [], [], {}
    if snap is not None:
        rows = [(r.path, r.position, list(r.values))
                for r in read_rows(archive, snap, model.table.schema.names)]
        for mp in archive[snap.manifest_list].manifests:
            m = archive[mp]
            manifests.append({
                "path": mp, "content": m.content, "added_snapshot": m.added_snapshot_id,
                "seq": m.sequence_number,
                "entries": [(e.status, e.file.path, e.snapshot_id, e.data_sequence_number,
                             e.file_sequence_number) for e in m.entries]})
            for e in m.entries:
                f = e.file
                d = f if isinstance(f, DeleteFile) else None
                files[f.path] = {
                    "content": f.content, "partition": list(f.partition),
                    "rows": [list(r) for r in f.rows] if isinstance(f, DataFile) else [],
                    "positions": [tuple(p) for p in d.positions] if d else [],
                    "equality_columns": list(d.equality_columns) if d else [],
                    "equality_rows": [list(r) for r in d.equality_rows] if d else []}

    def z(v):
        return 0 if v is None else v
    return {
        "action": action,
        "catalog": {"pointer": state.catalog.pointer, "version": meta.version},
        "current_snapshot": z(meta.current_snapshot_id),
        "last_sequence_number": meta.last_sequence_number,
        "rows": rows,
        "snapshots": [{"id": s.snapshot_id, "parent": z(s.parent_id), "seq": s.sequence_number,
                       "operation": s.operation, "writer": s.writer,
                       "manifest_list": s.manifest_list} for s in meta.snapshots],
        "snapshot_log": list(meta.snapshot_log),
        "refs": [tuple(r) for r in meta.refs],
        "manifests": manifests,
        "files": files,
        "deleted": frozenset(state.store.deleted),
        "writers": {w.name: {
            "phase": w.phase, "op_index": w.op_index, "base_snapshot": z(w.base_snapshot_id),
            "pending_snapshot": z(w.pending_snapshot_id), "attempt": w.attempt,
            "history": [{"outcome": r.outcome, "check": r.check or "",
                         "message": r.message or "", "snapshot": z(r.snapshot_id),
                         "seq": z(r.sequence_number), "base_snapshot": z(r.base_snapshot_id),
                         "attempts": r.attempts} for r in w.history]}
            for w in state.writers},
    }


def plain(x):
    """An itf-py value as plain Python: records as dicts, lists, tuples, frozensets, dicts;
    a table value's variant as the value itself (Null as None)."""
    cls = type(x)
    if getattr(cls, "_itf_variant", False):
        tag = cls.__name__
        assert tag in ("Null", "Number", "String"), tag
        if tag == "Null":
            assert x.value == "u_OF_UNIT"
            return None
        assert isinstance(x.value, int if tag == "Number" else str), (tag, x.value)
        return x.value
    if isinstance(x, tuple) and hasattr(x, "_fields"):
        return {f: plain(getattr(x, f)) for f in x._fields}
    if isinstance(x, tuple):
        return tuple(plain(v) for v in x)
    if isinstance(x, list):
        return [plain(v) for v in x]
    if isinstance(x, frozenset):
        return frozenset(plain(v) for v in x)
    if isinstance(x, dict):
        return {plain(k): plain(v) for k, v in x.items()}
    assert isinstance(x, (int, str, bool)), repr(x)
    return x


@pytest.mark.parametrize("path", CORPUS, ids=os.path.basename)
def test_itf_py_reads_back_the_model_states(path):
    """Parse the export's JSON text with itf-py: every state equals the model's own, field by
    field, in order and with every duplicate; and agrees with the summary the corpus trace
    recorded for that state (its rows as a multiset, snapshot, pointer)."""
    itf_py = pytest.importorskip(
        "itf_py", reason="itf-py is not installed (pip install -e '.[conformance]')")
    doc = load_trace(path)
    text = json.dumps(export(doc, path))
    trace = itf_py.trace_from_json(json.loads(text))
    model, run = _model_states(path)
    assert trace.vars == VARS and len(trace.states) == len(run.states) == len(doc["states"])
    for i, (got, state, recorded) in enumerate(zip(trace.states, run.states, doc["states"])):
        action = str(run.actions[i - 1]) if i else "init"
        assert got.meta == {"index": i}
        mine = {k: plain(v) for k, v in got.values.items()}
        want = expected_state(model, state, action)
        assert set(mine) == set(want)
        for k in want:
            assert mine[k] == want[k], (os.path.basename(path), i, k)
        assert Counter(tuple(r[2]) for r in mine["rows"]) == \
            Counter(tuple(r) for r in recorded["rows"]), (os.path.basename(path), i)
        assert (mine["current_snapshot"], mine["catalog"]["pointer"], mine["action"]) == \
            (recorded["snapshot"], recorded["pointer"], recorded["action"])


@pytest.mark.parametrize("path", ADD_FILES, ids=os.path.basename)
def test_the_row_add_files_reads_twice_survives_the_parse(path):
    """The add_files traces are about one row read twice (the file committed twice): after
    itf-py's parse it is still there twice, as the model reads it."""
    itf_py = pytest.importorskip(
        "itf_py", reason="itf-py is not installed (pip install -e '.[conformance]')")
    doc = load_trace(path)
    assert doc["property"] == "duplicate_keys"
    model, run = _model_states(path)
    last = run.states[-1]
    model_rows = [(r.path, r.position, list(r.values)) for r in
                  read_rows(last.store.archive(), last.metadata.current,
                            model.table.schema.names)]
    twice = [r for r, n in Counter(map(repr, model_rows)).items() if n > 1]
    assert twice, "the model reads no row twice: the trace no longer shows its anomaly"
    parsed = itf_py.trace_from_json(json.loads(json.dumps(export(doc, path))))
    got = plain(parsed.states[-1].values["rows"])
    assert got == model_rows
    assert [r for r, n in Counter(map(repr, got)).items() if n > 1] == twice


# --- failing loudly ------------------------------------------------------------------------

def test_a_value_without_a_faithful_form_fails():
    for v in (1.5, True, b"x", ("a",)):
        with pytest.raises(Unrepresentable, match="is not a table value"):
            value(v, "rows")
    with pytest.raises(Unrepresentable, match="uninterpreted constant"):
        value("v_OF_THING", "rows")
    assert value(None, "rows") == {"tag": "Null", "value": "u_OF_UNIT"}
    assert value(2 ** 63 - 1, "rows") == {"tag": "Number",
                                          "value": {"value": {"#bigint": str(2 ** 63 - 1)}}}
    assert keyed([("a", 1), ("a", 1)], "files") == {"#map": [["a", 1]]}
    with pytest.raises(Unrepresentable, match="two different values"):
        keyed([("a", 1), ("a", 2)], "files")


def test_cli_export_and_its_errors(tmp_path):
    out = tmp_path / "t.itf.json"
    p = subprocess.run([sys.executable, "-m", "icecheck", "trace", "export", "--itf",
                        os.path.join(ROOT, "traces", "undelete-v2-mor-snapshot.json"),
                        "-o", str(out)], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 0, p.stderr
    doc = json.loads(out.read_text())
    assert doc["#meta"]["varTypes"] == VAR_TYPES
    last = doc["states"][-1]
    assert last["action"] == "w2.cas" and last["current_snapshot"] == {"#bigint": "2001"}
    # w2's position delete targets the row w2 read (s-d1 @ 1, after the bystander row 0), not
    # the row w1's UPDATE wrote
    files = dict(last["files"]["#map"])
    w2 = [v for k, v in files.items() if k.startswith("w2-")]
    assert w2 and w2[0]["positions"] == [{"#tup": ["s-d1", {"#bigint": "1"}]}]
    # not a trace: one line, exit 2
    p = subprocess.run([sys.executable, "-m", "icecheck", "trace", "export", "--itf",
                        os.path.join(ROOT, "README.md")], capture_output=True, text=True,
                       cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr and "README.md" in p.stderr
    # a row value Apalache would read as an uninterpreted constant: named, exit 2
    trace = json.load(open(ADD_FILES[0]))
    trace["config"]["initial_rows"][0][1] = "v_OF_THING"
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(trace))
    p = subprocess.run([sys.executable, "-m", "icecheck", "trace", "export", "--itf", str(bad)],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "bad.json" in p.stderr and "v_OF_THING" in p.stderr and "state 0" in p.stderr


def test_docs_list_the_types_exported():
    """docs/traces.md's ITF table states each variable's type as VAR_TYPES has it (VAL for
    the table value's variant), and the variant itself."""
    from icecheck.traces.itf import ROW_TYPE, VALUE_TYPE
    text = open(os.path.join(ROOT, "docs", "traces.md")).read()
    section = text[text.index("## ITF export"):text.index("## Replay")]
    assert f"`VAL = {VALUE_TYPE}`" in " ".join(section.split())
    for name, typ in VAR_TYPES.items():
        short = typ.replace(ROW_TYPE, "Seq(VAL)")
        assert f"| `{name}` | `{short}` |" in section, name
