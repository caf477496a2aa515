# `cdef extern from` blocks for the C core, one per header, nothing else.
from libc.stdint cimport uint32_t


cdef extern from "chunkcodec/status.h":
    ctypedef enum cc_status:
        CC_OK
        CC_NOT_HOT


cdef extern from "chunkcodec/frame.h":
    ctypedef enum cc_framing:
        CC_FRAMING_AUTO
        CC_FRAMING_SSE
        CC_FRAMING_RS
        CC_FRAMING_NDJSON
        CC_FRAMING_JSON
    ctypedef enum cc_frame_kind:
        CC_FK_JSON
        CC_FK_SSE_MULTI
        CC_FK_DONE
    ctypedef struct cc_frame_t:
        size_t start
        size_t len
        int kind
        size_t bstart
        size_t blen
    size_t cc_frame_split(int framing, const char *buf, size_t len, int final,
                          cc_frame_t *out, size_t cap, size_t *n_out) nogil
    Py_ssize_t cc_frame_find_end(int framing, const char *tail, size_t ntail,
                                 const char *buf, size_t len) nogil
    size_t cc_sse_join_data(const char *block, size_t len, char *dst) nogil
    int cc_detect_framing(const char *buf, size_t len, int final, int bom, size_t *skip) nogil


cdef extern from "chunkcodec/scan.h":
    ctypedef enum cc_hot_type:
        CC_HOT_NONE
        CC_HOT_TEXT_DELTA
        CC_HOT_REASONING_DELTA
        CC_HOT_TOOL_CALL_DELTA
    enum:  # cc_hot_field
        CC_F_RUN_ID
        CC_F_FROM
        CC_F_ID
        CC_F_TEXT
        CC_F_ARGS_TEXT_DELTA
        CC_F_TOOL_CALL_ID
        CC_F_TOOL_NAME
        CC_F_COUNT
    ctypedef struct cc_str_t:
        const char *p
        size_t len
        size_t ncp
        uint32_t maxchar
        int flags
    ctypedef struct cc_hot_t:
        int type
        int canonical
        cc_str_t f[7]
    cc_status cc_scan_hot(const char *buf, size_t len, cc_hot_t *out) nogil
    void cc_str_decode(const cc_str_t *s, int kind, void *dst) nogil
    size_t cc_str_decode_utf8(const cc_str_t *s, char *dst) nogil
    int CC_STR_ESCAPED
    int CC_STR_NONCANON


cdef extern from "chunkcodec/encode.h":
    size_t cc_js_escaped_len(const char *src, size_t len) nogil
    size_t cc_js_escape(const char *src, size_t len, char *dst) nogil
    size_t cc_js_escaped_len_ucs(int kind, const void *data, size_t n) nogil
    size_t cc_js_escape_ucs(int kind, const void *data, size_t n, char *dst) nogil
    size_t cc_js_numbers(const char *src, size_t len, char *dst) nogil
    int cc_js_numbers_needed(const char *src, size_t len) nogil
