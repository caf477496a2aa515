# The per-run classes of _accum.py as cdef classes, for its compiled copy chunkcodec._accumc (the
# native path's accumulator; see CMakeLists.txt).  Cython's pure-Python mode: this file types the
# classes of the .py of the same name, which stays plain Python for the reference path.  Every
# attribute in a class's __slots__ must be declared here (a missing one is an AttributeError at
# run time, on the native path only: the tests run both paths).

cdef class _Part:
    cdef public object kind, id, buf, segs, pm
    cdef public Py_ssize_t tail
    cdef public bint redacted, listed

cdef class _ToolArgs:
    cdef public object id, name, buf, start, parser
    cdef public Py_ssize_t fed

cdef class _Step:
    cdef public Py_ssize_t index, t0, r0, t1, r1
    cdef public object tool_call_ids, tool_result_ids, sources, files, warnings, reason, usage, pm
    cdef public object resp_id, model_id

cdef class _Run:
    cdef public object new_buf, all_tool_args, run_id, from_, text, rbuf, open_text, open_reasoning
    cdef public object text_pm, reasoning, seq, steps, cur, tool_calls, tool_args, tool_results
    cdef public object tool_errors, sources, files, u, u_dead, u_raw, finish_usage, finish_reason
    cdef public object terminal, status, error, tripwire, object, suspend_payload, pm
    cdef public bint saw_reasoning, any_tool, finished
    cdef public Py_ssize_t u_steps
