"""What typed model classes could give at most (issue 44, item 4): ``bin/benchmark
object-overhead [--configs ID,...] [--max-states N] [--profiles DIR] [--out DIR]``.

Item 4 asks for the canonical configurations at 0.10 of the two-phase-commit baseline per core
"through the typed-classes route ..., if it pays": the model's value classes (writer, state,
metadata, snapshot) as Cython extension types in the compiled build. What such a class can
take out of a search is CPython's machinery for objects of classes written in Python:

* **lookup**: the generic attribute lookup (``PyObject_GenericGetAttr``,
  ``_PyObject_GenericGetAttrWithDict``, ``_PyObject_GetMethod``, ...) with the helpers it calls
  (the type's and the instance's dictionaries, descriptor checks, binding methods, the
  ``AttributeError`` of a miss), but not the code a descriptor runs (a property's body) and not
  lookups on classes and modules;
* **construction**: ``type_call``, ``object_new``, the ``__init__`` dispatch and the attribute
  stores (``object.__setattr__`` of frozen dataclasses) with their helpers, but not the body of
  an ``__init__`` and not the constructors of built-in types;
* **deallocation**: ``subtype_dealloc`` and ``object_dealloc`` with their helpers, but not the
  freeing of the tuples, lists, dicts and strings an object holds (a typed object frees them
  too);
* **interpreted**: the interpreter's own instructions (``_PyEval_EvalFrameDefault``), all of
  them: the compiled build runs interpreted code only where a method was generated at run time
  (a dataclass's ``__init__``, ``__eq__``, ``__hash__``) or a module is not compiled;
* **calls**: the dispatch of every call and the handing over of its arguments (CPython's and
  Cython's, and each compiled function's Python-facing wrapper whole), which a typed class
  turns into a C call only for the methods it declares and the places that know its type,
  and not at all for calls into built-in functions.

This benchmark runs the compiled build's search under valgrind's callgrind and reads the call
graph it writes: each kind is the instructions of its functions' own (self) plus those of the
calls they make to anything that is not code, machinery of another kind, or the freeing of
another type. A share is of the search's own instructions: a process that imports, warms up
and searches, minus one that only imports and warms up (``benchmarks.instructions`` counts the
same way). Every rule errs towards counting more (lookups on instances of built-in types, the
memory of the object, interpreted code of any origin, every call), so if typed classes removed
all five the search would run at most ``1 / (1 - share)`` times faster. That bound times the
compiled build's ratio in ``reports/benchmarks.json`` (section "compiled", the same
configuration) is the most the route could bring that configuration to.

Session 38's version counted instead the inclusive instructions of ``PyObject_GenericGetAttr``,
``type_call`` and ``_Py_Dealloc`` as ``callgrind_annotate`` prints them. That bound was too
loose to decide anything: inclusive counts take in the work those functions call (property
bodies, ``__init__`` bodies, the freeing of every tuple and list an object holds), and
callgrind's inclusive counts are unreliable through recursion and frames it cannot name
(canonical-cow-snapshot, first 53,023 states: one ``PyObject_GenericGetAttr`` node held 15.9%
of the instructions, nearly all of them in the search's own functions below it).

Counts, not times: the same on any machine, loaded or not. By default each configuration is
searched whole, as its ratio was measured; callgrind runs a search about 50 times slower than
it runs natively (canonical-mor-snapshot, 558,796 states: about 40 minutes), so ``--configs``
runs some, ``--keep`` keeps the other configurations' rows of the report in ``--out``, and
``--profiles DIR`` keeps each run's callgrind files in DIR and reads them again, instead of
running the search, for the same configuration, bound and compiled build. ``--max-states N``
searches only up to N states (the BFS stops at the end of the level within it): the first
levels, where the share is smaller, so a bounded row is no bound for the whole search. Needs
valgrind and the compiled build (``bin/icecheck compile``). Writes
``reports/object-overhead.{json,md}`` together (atomic).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: what typed classes could take work from: (key, its CPython functions (None: the calls,
#: found by name with ``_is_call``), whether the helpers they call count too)
KINDS = (
    ("lookup",
     frozenset({"PyObject_GenericGetAttr", "_PyObject_GenericGetAttrWithDict",
                "_PyObject_GetMethod", "PyObject_GetAttr", "_PyObject_LookupAttr"}), True),
    ("construction",
     frozenset({"type_call", "slot_tp_init", "slot_tp_new", "object_new", "object_init",
                "PyType_GenericAlloc", "PyType_GenericNew", "_PyType_AllocNoTrack",
                "object___setattr__", "wrap_setattr", "PyObject_GenericSetAttr",
                "_PyObject_GenericSetAttrWithDict", "PyObject_SetAttr",
                "_PyObject_StoreInstanceAttribute", "_PyObject_InitializeDict",
                "init_inline_values"}), True),
    ("deallocation",
     frozenset({"_Py_Dealloc", "subtype_dealloc", "object_dealloc", "subtype_clear",
                "_PyObject_FreeInstanceAttributes", "PyObject_ClearWeakRefs"}), True),
    ("interpreted", frozenset({"_PyEval_EvalFrameDefault"}), False),
    ("calls", None, False),
)
#: CPython's own functions that dispatch a call and hand its arguments over (the "calls" kind
#: counts their own instructions, with Cython's: ``_is_call``)
CALLS = frozenset({
    "PyObject_VectorcallMethod", "PyObject_Vectorcall", "PyObject_Call", "PyObject_CallOneArg",
    "_PyObject_Call", "_PyObject_MakeTpCall", "_PyObject_FastCallDictTstate",
    "_PyObject_Call_Prepend", "_Py_CheckFunctionResult", "_PyFunction_Vectorcall",
    "method_vectorcall", "method_vectorcall_O", "method_vectorcall_NOARGS",
    "method_vectorcall_FASTCALL", "method_vectorcall_FASTCALL_KEYWORDS",
    "cfunction_vectorcall_O", "cfunction_vectorcall_NOARGS", "cfunction_vectorcall_FASTCALL",
    "cfunction_vectorcall_FASTCALL_KEYWORDS"})
#: functions that run code other than through a call (those are ``CALLS``): a call to one is
#: the work of a body (a property's, the interpreter's), not machinery
CODE = frozenset({"property_descr_get", "slot_tp_descr_get", "slot_tp_getattr_hook",
                  "slot_tp_setattro", "_PyEval_Vector", "_PyEval_EvalFrameDefault"})
#: lookups on classes and modules: no typed class removes them
NOT_INSTANCES = frozenset({"type_getattro", "module_getattro"})
#: the canonical profiles, searched by default
CANONICAL = ("spark-3.5-mor-serializable", "spark-3.5-mor-snapshot",
             "spark-3.5-cow-serializable", "spark-3.5-cow-snapshot")
TARGET = 0.10

_NAME = re.compile(r"\((\d+)\)(?: (.*))?$")


def call_graph(path: str) -> tuple[Counter, Counter, int]:
    """A callgrind output file (one event, Ir; ``--compress-strings`` or not): each function's
    own instructions and each call edge's inclusive instructions, by function name (the files
    and objects a name appears under merged, the ``'N`` of a recursion level dropped), and the
    total."""
    names: dict[str, str] = {}

    def name(value: str) -> str:
        m = _NAME.match(value)
        if not m:
            return re.sub(r"'\d+$", "", value)
        if m.group(2) is not None:
            names[m.group(1)] = re.sub(r"'\d+$", "", m.group(2))
        return names[m.group(1)]

    own: Counter = Counter()
    calls: Counter = Counter()
    fn = cfn = None
    call = False
    total = None
    with open(path) as f:
        for line in f:
            c = line[:1]
            if c.isdigit() or c in "+-*":
                parts = line.split()
                cost = int(parts[1]) if len(parts) > 1 else 0
                if call:
                    calls[(fn, cfn)] += cost
                    call = False
                else:
                    own[fn] += cost
            elif line.startswith("fn="):
                fn = name(line[3:].strip())
            elif line.startswith("cfn="):
                cfn = name(line[4:].strip())
            elif line.startswith("calls="):
                call = True
            elif line.startswith(("totals:", "summary:")):
                total = int(line.split()[1])
    if total is None:
        raise ValueError(f"{path}: no totals: or summary: line (not a callgrind output file?)")
    return own, calls, total


def _is_call(fn: str) -> bool:
    """Is ``fn`` call machinery: CPython's (``CALLS``), or Cython's call helpers, its
    functions' vectorcall entry points and argument parsing, and the Python-facing wrapper
    (``__pyx_pw_``) of each compiled function, whole (the C compiler often inlines the body
    into it: more, never less)?"""
    return fn in CALLS or fn.startswith((
        "__pyx_pw_", "__Pyx_CyFunction_Vectorcall", "__Pyx_CyFunction_Call",
        "__Pyx_PyObject_FastCall", "__Pyx_PyObject_Call", "__Pyx_PyFunction_FastCall",
        "__Pyx_PyObject_Vectorcall", "__Pyx_ParseOptionalKeywords", "__Pyx_ParseKeywords",
        "__Pyx_RaiseArgtupleInvalid", "__Pyx_GetKwValue", "__Pyx_KwargsAsDict"))


def _is_code(fn: str) -> bool:
    # Cython's functions are compiled code (a property's getter, an __init__), or already
    # typed classes' own machinery (their tp_new and tp_dealloc): nothing more to remove
    return fn in CODE or fn.startswith(("__pyx_", "__Pyx_"))


def _frees_other(fn: str) -> bool:
    """Is ``fn`` the freeing of a type's objects (``tupledealloc``, ``list_dealloc``)?"""
    return fn.endswith(("dealloc", "_Dealloc"))


def _builds_builtin(fn: str) -> bool:
    """Is ``fn`` the constructor of a built-in type (``py_blake2b_new``, ``list___init__``)?"""
    return fn.endswith(("_new", "_init", "__init__", "__new__"))


def machinery(own: Counter, calls: Counter, total: int) -> dict:
    """Each kind's instructions: its functions' own, and (for the kinds that count them) the
    calls they make to functions that are not code, not another kind's, not lookups on classes
    and modules, and not the constructor or the freeing of another type."""
    mine = set().union(*(fns for _, fns, _ in KINDS if fns))
    out = {"total": total}
    for key, fns, helpers in KINDS:
        if fns is None:                              # calls: by name
            out[key] = sum(n for f, n in own.items() if _is_call(f))
            continue
        n = sum(own[f] for f in fns)
        if helpers:
            for (a, b), cost in calls.items():
                if (a not in fns or b in mine or _is_code(b) or _is_call(b)
                        or b in NOT_INSTANCES):
                    continue
                # the dict of an instance whose __dict__ was asked for is the object's (and
                # what it frees with it is counted too: more, never less)
                if ((_frees_other(b) and (a, b) != ("subtype_dealloc", "dict_dealloc"))
                        or _builds_builtin(b)):
                    continue
                n += cost
        out[key] = n
    return out


def shares(full: dict, base: dict) -> dict:
    """Each kind's share of the search's own instructions (``full`` minus ``base``), the sum
    and the bound ``1 / (1 - sum)``."""
    own = full["total"] - base["total"]
    if own <= 0:
        raise ValueError("the search executed no instructions of its own")
    out = {"instructions": own}
    total = 0.0
    for key, _, _ in KINDS:
        s = max(0, full[key] - base[key]) / own
        out[key] = round(s, 4)
        total += s
    out["sum"] = round(total, 4)
    out["at_most"] = round(1 / (1 - total), 3) if total < 1 else None
    return out


def _id(profile: str) -> str:
    """A canonical profile's configuration id, as reports/benchmarks.json names it."""
    return "canonical-" + profile.replace("spark-3.5-", "")


def _entry(profile: str, max_states: int) -> dict:
    from benchmarks.instructions import _entry as entry_of
    return entry_of(f"canonical:{profile}", max_states)


def build_id(manifest: dict) -> str:
    """What identifies a compiled build: its interpreter, Cython, directives and the digests
    of the sources of every module (not when it was built)."""
    keep = {k: manifest.get(k) for k in ("python", "cython", "directives")}
    keep["modules"] = {n: (m or {}).get("sources")
                       for n, m in (manifest.get("modules") or {}).items()}
    return hashlib.sha256(json.dumps(keep, sort_keys=True).encode()).hexdigest()[:16]


def _callgrind(entry: dict, run: bool, out: str) -> str:
    """Run the search (``run``) or only the warm-up of ``entry`` on the compiled build under
    callgrind, its call graph to ``out``; the child's output."""
    from benchmarks.instructions import CHILD
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="0", ICECHECK_COMPILED="1")
    p = subprocess.run(["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
                        sys.executable, "-c", CHILD, json.dumps(entry), str(int(run))],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("the measured process failed:\n" + p.stderr[-2000:])
    return p.stdout.strip()


def _stem(profile: str, max_states: int) -> str:
    return _id(profile) + (f"-{max_states}" if max_states else "")


def measure(profile: str, max_states: int, build: str, profiles: str | None = None,
            log=print) -> dict:
    """One row: the shares of the configuration's search, from its callgrind files in
    ``profiles`` when they were made for this bound and build (their ``.json`` says), else
    from a run now (kept there when ``profiles`` is given, the ``.json`` written last)."""
    entry = _entry(profile, max_states)
    stem = _stem(profile, max_states)
    tmp = None
    where = profiles
    if where is None:
        where = tmp = tempfile.mkdtemp(prefix="icecheck-overhead-")
    files = {run: os.path.join(where, f"{stem}.{run}.callgrind") for run in ("search", "base")}
    side = os.path.join(where, stem + ".json")
    try:
        got = None
        if profiles is not None:
            try:
                with open(side) as f:
                    got = json.load(f)
            except (OSError, ValueError):
                got = None
            if got is not None and (got.get("entry") != entry or got.get("build") != build
                                    or not all(map(os.path.isfile, files.values()))):
                got = None
        if got is not None:
            log(f"[object-overhead] {profile}: the callgrind files of {got['date']} in "
                f"{profiles}")
        else:
            if profiles is not None:
                os.makedirs(profiles, exist_ok=True)
                if os.path.exists(side):
                    os.unlink(side)
            log(f"[object-overhead] {profile}: the "
                + (f"search up to {max_states:,} states" if max_states else "whole search")
                + " under callgrind (about 50 times its native time) ...")
            out = _callgrind(entry, True, files["search"])
            log(f"[object-overhead] {profile}: the warm-up alone ...")
            _callgrind(entry, False, files["base"])
            result = json.loads(out.splitlines()[-1])
            got = {"entry": entry, "build": build, "date": time.strftime("%Y-%m-%d %H:%M"),
                   "states": result["states"], "violations": result["violations"]}
            if profiles is not None:
                with open(side + ".tmp", "w") as f:
                    json.dump(got, f, indent=1)
                os.replace(side + ".tmp", side)
        full = machinery(*call_graph(files["search"]))
        base = machinery(*call_graph(files["base"]))
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    return {"id": _id(profile), "profile": profile,
            "max_states": max_states, "states": got["states"], "date": got["date"],
            "violations": got["violations"], **shares(full, base)}


#: what the child of ``reads`` runs: the search of a configuration (JSON on argv) on the Python
#: source, every class of icecheck's modules counting the attribute reads of its objects
READS_CHILD = """
import collections, json, sys
from benchmarks.run import _cfg, warm_up
from icecheck.engines.explicit import Bounds, search
entry = json.loads(sys.argv[1])
cfg = _cfg(entry, entry["profile"])
warm_up(cfg)
reads, own = collections.Counter(), collections.Counter()
frame = sys._getframe
patched = []
for name in [m for m in sys.modules if m.startswith("icecheck.")]:
    for cls in list(vars(sys.modules[name]).values()):
        if (not isinstance(cls, type) or cls.__module__ != name
                or issubclass(cls, BaseException) or "__getattribute__" in vars(cls)):
            continue
        def counting(obj, attr, _get=cls.__getattribute__,
                     _key=name.split(".", 1)[1] + "." + cls.__name__):
            reads[_key] += 1
            if frame(1).f_locals.get("self") is obj:
                own[_key] += 1
            return _get(obj, attr)
        cls.__getattribute__ = counting
        patched.append(cls)
n = entry.get("max_states")
r = search(cfg, engine="bfs", workers=1, traces=False,
           bounds=Bounds(max_states=n) if n else Bounds())
for cls in patched:
    del cls.__getattribute__
print(json.dumps({"states": r.states, "reads": dict(reads), "own": dict(own)}))
"""


def extension_types() -> set[str]:
    """The classes the compiled build already makes extension types (``cdef class`` in the
    ``.pxd`` of a module it compiles), as ``package.module.Class``."""
    from icecheck.compiled import HOT_MODULES, source_files
    out = set()
    for name in HOT_MODULES:
        for path in source_files(name)[1:]:               # the .pxd, when there is one
            for m in re.finditer(r"^cdef class (\w+)", path.read_text(), re.M):
                out.add(f"{name.split('.', 1)[1]}.{m.group(1)}")
    return out


def reads(profile: str, max_states: int, top: int = 12, log=print) -> dict:
    """Which classes' attributes a search reads, and how often: the canonical configuration's
    search up to ``max_states`` on the Python source (the compiled build reads the same
    attributes, of its extension types' objects as C struct fields where the reader knows
    the type), each class's reads, the part of them a method makes of its own object
    (``self``: a read an extension type turns into a struct read without declaring anything
    else), and whether the class is an extension type in the compiled build already."""
    log(f"[object-overhead] {profile}: attribute reads by class, up to {max_states:,} states "
        f"on the Python source ...")
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONHASHSEED="0", ICECHECK_COMPILED="0")
    p = subprocess.run([sys.executable, "-c", READS_CHILD, json.dumps(_entry(profile,
                                                                              max_states))],
                       cwd=ROOT, env=env, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError("the counting process failed:\n" + p.stderr[-2000:])
    got = json.loads(p.stdout.strip().splitlines()[-1])
    total = sum(got["reads"].values())
    typed = extension_types()
    classes = sorted(got["reads"].items(), key=lambda kv: (-kv[1], kv[0]))
    return {"id": _id(profile), "max_states": max_states, "states": got["states"],
            "reads": total,
            "extension_types": round(sum(n for c, n in got["reads"].items() if c in typed)
                                     / total, 4) if total else 0.0,
            "classes": [{"class": c, "reads": n, "share": round(n / total, 4),
                         "on_self": round(got["own"].get(c, 0) / n, 4),
                         "extension_type": c in typed} for c, n in classes[:top]]}


def compiled_ratios(path: str) -> dict:
    """Each configuration's best compiled ratio in reports/benchmarks.json (its "compiled"
    section), by id; {} when the file or the section is missing."""
    try:
        with open(path) as f:
            doc = json.load(f)
    except (OSError, ValueError):
        return {}
    out = {}
    for row in ((doc.get("compiled") or {}).get("configs") or []):
        ratio = (row.get("compiled") or {}).get("ratio")
        if ratio is not None:
            out[row["id"]] = {"ratio": ratio}
    return out


def with_ratios(rows: list[dict], ratios: dict) -> list[dict]:
    """Each row with its compiled ratio, the most the route could bring it to, and whether
    that reaches the target."""
    out = []
    for r in rows:
        got = ratios.get(r["id"])
        r = dict(r)
        if got is not None and r.get("at_most"):
            r["compiled_ratio"] = got["ratio"]
            r["ratio_at_most"] = round(got["ratio"] * r["at_most"], 4)
            r["reaches_target"] = r["ratio_at_most"] >= TARGET
            # 1 / (1 - x * sum) = TARGET / ratio: the part x of the five to remove
            r["must_remove"] = round(max(0.0, 1 - got["ratio"] / TARGET) / r["sum"], 3)
        out.append(r)
    return out


def kept(rows: list[dict], path: str, table: str = "rows") -> list[dict]:
    """``rows`` and the rows of the report at ``path`` (if any; its ``table``) of the
    configurations not in ``rows``, in the canonical profiles' order (``--keep``: a
    configuration at a time)."""
    try:
        with open(path) as f:
            old = json.load(f).get(table, [])
    except (OSError, ValueError):
        old = []
    ids = {r["id"] for r in rows}
    order = [_id(p) for p in CANONICAL]
    return sorted(rows + [r for r in old if r["id"] not in ids],
                  key=lambda r: order.index(r["id"]) if r["id"] in order else len(order))


def markdown(doc: dict) -> str:
    lines = ["# What typed model classes could give at most", "",
             f"Generated by `bin/benchmark object-overhead` on {doc['machine']} "
             f"({doc['python']}, {doc['date']}); see benchmarks/object_overhead.py.", "",
             "Instructions of the compiled build's search (callgrind; the search minus a "
             "process that only imports and warms up), each canonical configuration searched "
             "whole, or up to the bound its row gives (its first BFS levels, where the share "
             "is smaller: no bound for the whole search). Each kind is CPython's machinery for "
             "objects of classes written in Python, read from the call graph: its functions' "
             "own instructions and their calls to helpers, never the code a descriptor or an "
             "`__init__` runs, nor the freeing of what an object holds (the docstring says "
             "what each kind takes in). **Interpreted**: all of the interpreter's own "
             "instructions (generated dataclass methods, modules not compiled). **Calls**: "
             "the dispatch of every call and its arguments. Each rule errs towards counting "
             "more; **at most**: the speedup if typed classes removed all five. Compiled "
             "ratio: the configuration's in reports/benchmarks.json "
             f"(section \"compiled\"); the next column is the most the route could bring it "
             f"to, against the target {TARGET}; **must remove**: the part of the five that "
             f"typed classes would have to remove to reach it (over 100%: out of reach).", "",
             "| configuration | states | instructions | attribute lookup | construction | "
             "deallocation | interpreted | calls | all five | at most | compiled ratio | "
             "at most x ratio | must remove | run |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|"]
    for r in doc["rows"]:
        ratio = r.get("compiled_ratio")
        reach = ("-" if ratio is None else
                 f"{r['ratio_at_most']} ({'reaches' if r['reaches_target'] else 'below'} "
                 f"{TARGET})")
        lines.append(
            f"| {r['id']} | {r['states']:,}"
            f"{f' (bound {b:,})' if (b := r.get('max_states')) else ' (whole search)'} | "
            f"{r['instructions'] / 1e9:.2f} G | {r['lookup']:.1%} | {r['construction']:.1%} | "
            f"{r['deallocation']:.1%} | {r['interpreted']:.1%} | {r['calls']:.1%} | "
            f"{r['sum']:.1%} | "
            f"{r['at_most']}x | {'-' if ratio is None else ratio} | {reach} | "
            f"{'-' if r.get('must_remove') is None else format(r['must_remove'], '.0%')} | "
            f"{r.get('date', '-')} |")
    below = [r["id"] for r in doc["rows"] if r.get("reaches_target") is False]
    if below:
        lines += ["", f"Below the target even at the bound: {', '.join(below)}. On these, "
                  "typed classes cannot bring the compiled build to "
                  f"{TARGET} of the baseline, whatever else they remove (of a row with a "
                  "bound, in the levels it searched: deeper, the share grows)."]
    if doc.get("reads"):
        lines += ["", "## Whose attributes are read", "",
                  "Attribute reads by class (methods looked up on an object included), each "
                  "configuration searched up to the bound its line gives on the Python source "
                  "(every class of icecheck counting the reads of its objects; the compiled "
                  "build makes the same reads). **On self**: "
                  "the part a method makes of its own object, which an extension type turns "
                  "into a struct read with no other declaration; the others become struct "
                  "reads only where the reader's variable is declared of that type. "
                  "**Extension type**: already one in the compiled build (a `cdef class` in a "
                  "`.pxd`)."]
        for r in doc["reads"]:
            lines += ["", f"**{r['id']}**, {r['states']:,} states (bound {r['max_states']:,}): "
                      f"{r['reads']:,} reads, {r['extension_types']:.1%} of them of "
                      f"extension types already.", "",
                      "| class | reads | share | on self | extension type |",
                      "|---|---:|---:|---:|---|"]
            for c in r["classes"]:
                lines.append(f"| {c['class']} | {c['reads']:,} | {c['share']:.1%} | "
                             f"{c['on_self']:.1%} | {'yes' if c['extension_type'] else ''} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    from benchmarks.run import names_of, rendered_only, report_options, write_pair
    ap = argparse.ArgumentParser(prog="bin/benchmark object-overhead",
                                 description=__doc__.split("\n\n")[0])
    ap.add_argument("--configs", default=",".join(CANONICAL), metavar="PROFILE,...",
                    help="canonical profiles to measure")
    ap.add_argument("--max-states", type=int, default=0, metavar="N",
                    help="search each configuration up to this many states (default: whole)")
    ap.add_argument("--reads", type=int, default=60_000, metavar="N",
                    help="count the attribute reads of each class in the search up to N states "
                         "on the Python source (0: not)")
    ap.add_argument("--profiles", metavar="DIR",
                    help="keep each run's callgrind files in DIR, and read those made for the "
                         "same configuration, bound and compiled build instead of running it "
                         "again")
    ap.add_argument("--keep", action="store_true",
                    help="keep the rows of object-overhead.json in --out of the configurations "
                         "not run now")
    report_options(ap, "object-overhead", os.path.join(ROOT, "reports"))
    a = ap.parse_args(argv)
    if rendered_only(a, "object-overhead", markdown):
        return 0
    profiles = names_of(a.configs, CANONICAL, "--configs", "canonical profile")
    if profiles is None:
        return 2
    if a.max_states < 0:
        print("--max-states: at least 0 (0: the whole search)", file=sys.stderr)
        return 2
    if a.reads < 0:
        print("--reads: at least 0 (0: no counting)", file=sys.stderr)
        return 2
    if shutil.which("valgrind") is None:
        print("bin/benchmark object-overhead: valgrind is not installed (Debian package "
              "valgrind)", file=sys.stderr)
        return 2
    from icecheck.compiled import CompiledError, check
    try:
        build = build_id(check())
    except CompiledError as e:
        print(f"bin/benchmark object-overhead: the compiled build: {e}", file=sys.stderr)
        return 2
    import platform
    log = lambda m: print(m, file=sys.stderr, flush=True)   # noqa: E731
    rows = [measure(p, a.max_states, build, a.profiles, log) for p in profiles]
    counted = [reads(p, a.reads, log=log) for p in profiles] if a.reads else []
    if a.keep:
        rows = kept(rows, os.path.join(a.out, "object-overhead.json"))
        counted = kept(counted, os.path.join(a.out, "object-overhead.json"), "reads")
    doc = {"machine": platform.node(), "python": f"Python {platform.python_version()}",
           "date": time.strftime("%Y-%m-%d %H:%M:%S"), "target": TARGET,
           "rows": with_ratios(rows, compiled_ratios(os.path.join(ROOT, "reports",
                                                                  "benchmarks.json"))),
           "reads": counted}
    print(write_pair(a.out, "object-overhead", doc, markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
