# Types for the compiled build only (icecheck/compiled.py): Cython reads this file beside
# symmetry.py when it compiles it; Python never does. It declares no rule: the attributes of
# the fingerprinter's classes (C struct fields instead of instance dicts) and the argument and
# local types of the methods each state's fingerprint runs, so that they call each other in C.
# Keep it in step with symmetry.py: an attribute the .py sets and this file does not declare
# fails the compiled tests (tests/test_compiled.py), not the Python ones.
import cython

cdef class Perm:
    cdef public Py_ssize_t index
    cdef public dict map
    cdef public bint identity
    cdef public dict strings
    cdef public dict orders
    cpdef object writer(self, object i)
    cpdef object int_(self, object v)

cdef class _StoreNode:
    cdef public object parent
    cdef public tuple added
    cdef public frozenset gone
    cdef public list sums

cdef class Fingerprinter:
    cdef public list writer_classes
    cdef public list classes
    cdef public str note
    cdef public list perms
    cdef public bint symmetric
    cdef public Perm blind
    cdef public Py_ssize_t nperms
    cdef public Perm _identity
    cdef public dict _by_map
    cdef public dict _twins
    cdef public dict _added_sums
    cdef public dict _candidates
    cdef public dict _ranks
    cdef public tuple last_order
    cdef public list _tied_classes
    cdef public tuple token
    cdef public object writers_of

    @cython.locals(t=type, b=bytes, cache=list, got=object, parts=list, sub=list, vd=dict)
    cpdef _enc(self, object v, Perm p, list out)
    @cython.locals(d=dict, cache=list)
    cpdef bytes obj_digest(self, object obj, Perm p)
    @cython.locals(d=dict, cache=list, out=list)
    cpdef bytes content(self, object obj)
    @cython.locals(got=tuple, node=_StoreNode)
    cpdef object store_digest(self, object store, Perm p)
    cpdef _StoreNode _node_of(self, object store)
    @cython.locals(k=Py_ssize_t, chain=list, n=_StoreNode, m=_StoreNode, sums=dict, added=tuple, got=tuple)
    cpdef object _node_digest(self, _StoreNode node, dict objs, Perm p)
    @cython.locals(sums=dict, got=tuple)
    cpdef object _added_sum(self, tuple added, dict objs, Perm p)
    @cython.locals(d=dict, items=tuple, got=bytes, kb=list)
    cpdef bytes _item(self, str key, object obj, Perm p)
    @cython.locals(d=dict, got=tuple)
    cpdef tuple writers(self, object state)
    @cython.locals(out=list, ws=tuple, k=Py_ssize_t, n=Py_ssize_t, i=Py_ssize_t, cache=list, d=object, wd=dict)
    cpdef bytes under(self, object state, Perm p)
    cpdef list candidates(self, object state)
    @cython.locals(k=Py_ssize_t, n=Py_ssize_t, sigs_t=list, pattern=list, cache=list, c=list, wd=dict)
    cpdef tuple _order_type(self, object state)
