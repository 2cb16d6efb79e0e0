# Types for the compiled build only (icecheck/compiled.py): Cython reads this file beside
# system.py when it compiles it; Python never does. It declares no rule: the attributes of
# ``Model`` (C struct fields; ``__dict__`` keeps it open to the attributes tests set) and the
# argument and local types of the step memo's path (step, its key, its replay, the enabled
# actions), which every state of a search takes. Keep it in step with system.py
# (tests/test_compiled.py runs the model's step-memo tests on the compiled build).
import cython

cdef class Model:
    cdef public object config
    cdef public object table
    cdef public dict programs
    cdef public dict _positions
    cdef public dict _plans
    cdef public dict _steps
    cdef public dict _writer_actions
    cdef public object _actions_tag
    cdef public bint memoise
    cdef public object _content_key
    cdef public object _content_token
    cdef public dict _reach_names
    cdef public bint interning
    cdef public dict _interned
    cdef public tuple _schedule
    cdef public bint _table_retries
    cdef public Py_ssize_t _ticks
    cdef public dict _tick_parts
    cdef dict __dict__

    @cython.locals(key=tuple, got=tuple, ws=tuple)
    cpdef object step(self, object state, object action)
    @cython.locals(store=object, metas=tuple, head=tuple, reach=list)
    cpdef tuple _step_key(self, object state, object w, object action)
    cpdef object _replay(self, object state, object w2, object catalog, dict added, frozenset deleted, object paths=*)
    @cython.locals(ws=tuple, i=Py_ssize_t)
    cpdef object _put_writer(self, object state, object w, object store=*, object catalog=*)
    @cython.locals(got=tuple, wd=dict)
    cpdef tuple writer_actions(self, object state, object w)
    @cython.locals(out=list, part=tuple)
    cpdef list actions(self, object state)
    @cython.locals(out=list, got=tuple, wd=dict)
    cpdef list action_parts(self, object state)
