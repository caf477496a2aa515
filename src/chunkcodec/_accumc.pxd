# The per-run classes of _accum.py (and the per-result _Memo) as cdef classes, for its compiled
# copy chunkcodec._accumc (the native path's accumulator; see CMakeLists.txt).  Cython's
# pure-Python mode: this file types the classes of the .py of the same name, which stays plain
# Python for the reference path.  Every attribute in a class's __slots__ must be declared here (a
# missing one is an AttributeError at run time, on the native path only: the tests run both
# paths).  Containers are typed as what __init__ makes them (list, dict, set), which lets Cython
# call their methods directly.

cimport cython

cdef class _Memo:
    cdef public list memo
    cdef public dict more
    @cython.locals(e=tuple, more=dict, a=Py_ssize_t, b=Py_ssize_t)
    cpdef str get(self, buf, Py_ssize_t start=*, Py_ssize_t end=*)

cdef class _Part:
    cdef public object kind, id, buf, pm, msg, more
    cdef public list segs
    cdef public Py_ssize_t tail
    cdef public bint redacted, listed
    cpdef set_pm(self, pm)
    cpdef seal(self)
    cpdef take(self)
    cpdef str text(self, _Memo dec)
    cpdef str text_upto(self, _Memo dec, Py_ssize_t limit)

cdef class _ToolArgs:
    cdef public object id, name, buf, start, parser
    cdef public Py_ssize_t fed, mark, pidx

cdef class _PendingCall:
    cdef public object ta, name, start, call
    cdef public Py_ssize_t begin, end

cdef class _Step:
    cdef public Py_ssize_t t0, r0, t1, r1
    cdef public list calls, results, sources, files
    cdef public dict usage
    cdef public object reason, pm, resp_id, model_id, warnings, tripwire
    cdef public list rdet
    cdef public bint trip, reasoned

cdef class _Run:
    cdef public object new_buf, all_tool_args, run_id, from_, text, rbuf, cur, warnings, trip
    cdef public object finish_reason, status, error, tripwire, object, suspend_payload, pm, cut, gated
    cdef public dict open_text, open_reasoning, text_pm, rdet, srdet, tool_calls, tool_args, u
    cdef public list seq, steps, call_list, tool_results, tool_errors, sources, files
    cdef public bint saw_reasoning, finished, suspended, pending, u_sorted, cut_next, procs, stepped, seg_data, ended
    cdef public int obj_state
    cdef public Py_ssize_t nmodel
    cdef public Py_ssize_t u_max, obj_step
    @cython.locals(prev=_Step)
    cpdef _Step step(self)
    cpdef step_start(self, warnings)
    @cython.locals(part=_Part)
    cpdef _close_spans(self)
    cpdef part_entry(self, str kind, v)
    cpdef reasoning_buf(self)
    cpdef Py_ssize_t rlen(self)
    cpdef tuple stamp(self)
    @cython.locals(st=_Step)
    cpdef step_finish(self, reason, warnings, usage, resp_id, model_id, pm, trip=*)
    @cython.locals(u=dict, fresh=list, i=Py_ssize_t)
    cpdef _add_usage(self, dict usage)
    @cython.locals(u=dict, i=Py_ssize_t, prev=Py_ssize_t, e=tuple)
    cpdef _fresh_usage(self, list fresh, bint add)
    cpdef finish_frame(self, bint step, tuple f, trip=*)
    @cython.locals(u=dict, fresh=list, i=Py_ssize_t)
    cpdef finish(self, reason, usage, pm, trip=*)
    cpdef fail(self, error)
    cpdef trip_wire(self, dict p)
    @cython.locals(part=_Part)
    cpdef _Part text_part(self, id_, pm)
    @cython.locals(part=_Part)
    cpdef end_text(self, id_, pm)
    cpdef _push_call(self, entry, call_id)
    @cython.locals(ta=_ToolArgs, j=Py_ssize_t)
    cpdef tool_call(self, chunk, call_id)
    @cython.locals(pc=_PendingCall, ta=_ToolArgs)
    cpdef bint _echo(self, e, chunk)
    cpdef _merge_call(self, Py_ssize_t i, chunk)
    cpdef tool_result(self, chunk, call_id)
    @cython.locals(ta=_ToolArgs)
    cpdef _ToolArgs tool_args_for(self, call_id, name, start)
    @cython.locals(part=_Part, e=list)
    cpdef _Part reasoning_part(self, id_, pm, int start)
    @cython.locals(e=list)
    cpdef reasoning_end(self, id_, pm)
    @cython.locals(part=_Part)
    cpdef _Part reasoning_delta(self, id_, pm)
    cpdef release(self)
    @cython.locals(ta=_ToolArgs)
    cpdef input_end(self, call_id)
    @cython.locals(made=list, i=Py_ssize_t)
    cpdef list calls(self)
    @cython.locals(u=dict, out=dict)
    cpdef dict usage(self)
    cpdef dict total_usage(self, usage=*)
    @cython.locals(st=_Step, last=_Step, dec=_Memo)
    cpdef result(self)
    @cython.locals(p=_Part)
    cpdef dict _reasoning_entry(self, list e, _Memo dec, Py_ssize_t limit=*)
    @cython.locals(part=_Part, out=list, results=dict, errors=dict, boundary=Py_ssize_t, ends=list, seg=Py_ssize_t,
                   seg_start=Py_ssize_t, early=Py_ssize_t, late=list)
    cpdef list _parts(self, _Memo dec, list calls)

# The accumulator itself: its attributes are fields, not a dict (the decoder sets _current; a
# subclass made by chunkcodec._api sets _Buf and _impl on the class; the decoder holds it weakly).
cdef class AccumulatorBase:
    cdef public object _framing, _errors, _max, _current, _main, _decoder
    cdef public dict _runs
    cdef public dict _tool_args
    cdef public set _runless_into
    cdef public bint _closed
    cdef public list invalid_frames
    cdef dict __dict__
    cdef object __weakref__
    # what the native decoder calls (it cimports this class): C calls, not method lookups
    cpdef feed(self, data)
    cdef object _decoder_feed(self, dec, data)
    cpdef _make_decoder(self)
    cpdef add(self, chunk)
    cpdef tuple _route(self, int kind, run_id, from_, key, name)
    cpdef tuple _route_pm(self, int kind, run_id, from_, key, pm)
    cpdef _make_current(self, run_id, from_)
    cpdef _text_start(self, run_id, from_, id_)
    cpdef _tool_input_end(self, run_id, from_, call_id)
    cpdef _tool_input_start(self, run_id, from_, call_id, name)
    @cython.locals(run=_Run)
    cpdef _tool_read(self, bint result, run_id, from_, chunk, call_id)
    cpdef _text_end(self, run_id, from_, id_)
    cpdef _finish_read(self, tuple f)
    cpdef _step_start(self, run_id, from_, warnings)

@cython.locals(run=_Run)
cdef _Run _run_of(AccumulatorBase acc, run_id, from_)

cdef bint _truthy(x)
cdef list _push(list lst, x)

# (_Run._parts's, for a background task's end: C calls)
cdef object _background_task(pm, str status)
cdef object _first_invocation(list out, cid)
cdef dict _background_pm(call, model_output, dict bt)

# (the native finish reader's caller, _core._fields_of, calls it directly)
cpdef tuple response_ids(md_id, pid, model_id, model)

@cython.locals(run=_Run)
cdef _other(AccumulatorBase acc, chunk)

# Module globals _other() looks up in: typed, a dict call, not a method lookup (and not module
# attributes any more on the native path; _KINDS stays one, for a test to swap)
cdef dict _TAGS, _HANDLERS

# the usage keys Mastra reads, by their place in its order (_accum._UPDATE_ORDER)
cdef dict _UPDATE_INDEX
cdef Py_ssize_t _RAW
cdef object _ABSENT     # (_add_usage's lookup default)
