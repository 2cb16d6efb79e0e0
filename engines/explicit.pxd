# Types for the compiled build only (icecheck/compiled.py): Cython reads this file beside
# explicit.py when it compiles it; Python never does. It declares no rule: the attributes of
# ``Expander`` (C struct fields) and the argument and local types of what it runs per state
# (successors, fingerprints, sleep sets, coverage, the verdict memo), typed by the compiled
# ``Fingerprinter`` and ``Model`` so that those calls are C calls. Keep it in step with
# explicit.py (tests/test_compiled.py runs the checker's tests on the compiled build).
import cython
from icecheck.engines.symmetry cimport Fingerprinter, Perm
from icecheck.models.system cimport Model

cdef class Expander:
    cdef public object cfg
    cdef public bint por
    cdef public bint ample
    cdef public bint release
    cdef public object bounds
    cdef public bint evaluate
    cdef public Model model
    cdef public Fingerprinter fp
    cdef public list classes
    cdef public list outcome_classes
    cdef public dict states
    cdef public dict next
    cdef public dict verdicts
    cdef public object memo
    cdef public dict _labels
    cdef public list _label_sets
    cdef public dict _label_ids
    cdef public dict _position
    cdef public dict _pruned_memo
    cdef public dict _orders
    cdef public dict _next_orders

    @cython.locals(fp=Fingerprinter, best=bytes, h=bytes, p=Perm)
    cpdef tuple fingerprints(self, object state)
    @cython.locals(model=Model, parts=list, out=list, fpr=Fingerprinter, label=str, ids=list,
                   tally=dict, enabled=Py_ssize_t, explored=Py_ssize_t, i=Py_ssize_t, part=tuple,
                   por=bint, doomed=Py_ssize_t)
    cpdef list successors(self, object s, object pruned, object depth, object stats, object order=*, object orders=*)
    @cython.locals(model=Model, key=tuple, wd=dict)
    cpdef frozenset _pruned(self, object a, object s2, dict ranks, frozenset asleep, list ids, Py_ssize_t i)
    @cython.locals(key=tuple, got=tuple)
    cpdef _coverage(self, dict tally, object s, object s2, object a, Py_ssize_t i=*)
    @cython.locals(key=tuple, got=tuple)
    cpdef tuple judge(self, object s)
