# `cdef extern from` blocks for the C core, one per header, nothing else.
from libc.stdint cimport int16_t, int32_t, int64_t, uint8_t, uint32_t, uint64_t


cdef extern from "chunkcodec/status.h":
    ctypedef enum cc_status:
        CC_OK
        CC_NOT_HOT


cdef extern from "chunkcodec/alloc.h":
    long long cc_alloc_arm(long long after)


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
    Py_ssize_t cc_last_byte(const char *buf, size_t len, char c) nogil
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
    cc_status cc_scan_str(const char *p, size_t n, size_t *close, cc_str_t *s) nogil
    void cc_str_decode(const cc_str_t *s, int kind, void *dst) nogil
    size_t cc_str_decode_utf8(const cc_str_t *s, char *dst) nogil
    int cc_utf8_measure(const char *p, size_t n, size_t *ncp, uint32_t *maxchar) nogil
    int cc_utf8_measure_known(const char *p, size_t n, size_t *ncp, uint32_t *maxchar) nogil
    void cc_utf8_widen(const char *p, size_t n, int kind, size_t ncp, void *dst) nogil
    int CC_STR_ESCAPED
    int CC_STR_NONCANON
    ctypedef struct cc_span_t:
        const char *p
        size_t len
    enum:
        CC_FIN_ABSENT
        CC_FIN_NULL
        CC_FIN_OBJECT
        CC_FIN_DECODE
        CC_FIN_STEP_FINISH
        CC_FIN_FINISH
    enum:
        CC_FIN_LEVEL_PAYLOAD
        CC_FIN_LEVEL_OUTPUT
        CC_FIN_MEMO_MAX
    ctypedef struct cc_fin_ck_t:
        uint32_t off
        uint8_t lvl
        uint8_t kinds
    ctypedef struct cc_fin_member_t:
        size_t k0
        size_t kl
        size_t v0
        size_t vl
        int level
        uint32_t ck_first
        uint32_t ck_count
    ctypedef struct cc_fin_memo_t:
        const char *p
        const cc_fin_ck_t *ck
        int count
        cc_fin_member_t m[12]
    ctypedef const cc_fin_memo_t *(*cc_fin_memo_fn)(void *ctx, const char *run_id, size_t len) noexcept
    ctypedef struct cc_finish_t:
        int kind
        int payload
        int output
        cc_span_t type
        cc_span_t run_id
        cc_span_t from_
        cc_span_t step_result
        cc_span_t metadata
        cc_span_t provider_metadata
        cc_span_t id
        cc_span_t usage
        int step_result_object
        int metadata_object
        cc_span_t sr_reason
        cc_span_t sr_warnings
        cc_span_t md_id
        cc_span_t md_model_id
        cc_span_t md_model
        cc_span_t md_provider_metadata
        int memo_members
        int memo_resumed
        int rep_strings
        cc_fin_memo_t skipped
        cc_fin_ck_t *ck
        uint32_t ck_cap
        uint32_t ck_count
    cc_status cc_scan_finish(const char *buf, size_t len, cc_finish_t *out) nogil
    cc_status cc_scan_finish_open(const char *buf, size_t avail, cc_finish_t *out, size_t *end) nogil
    cc_status cc_scan_finish_memo(const char *buf, size_t len, int open, cc_finish_t *out, size_t *end,
                                  cc_fin_memo_fn lookup, void *ctx)
    ctypedef struct cc_step_start_t:
        cc_span_t type
        cc_span_t run_id
        cc_span_t from_
        cc_span_t warnings
    cc_status cc_scan_step_start(const char *buf, size_t len, cc_step_start_t *out) nogil
    enum:
        CC_HINT_NONE
        CC_HINT_STEP_START
        CC_HINT_TOOL
    int cc_frame_hint(const char *buf, size_t len) nogil
    enum:
        CC_TOOL_CALL
        CC_TOOL_RESULT
    ctypedef struct cc_tool_t:
        int kind
        cc_span_t run_id
        cc_span_t from_
        cc_span_t call_id
        cc_span_t name
        cc_span_t args
        cc_span_t result
    cc_status cc_scan_tool(const char *buf, size_t len, cc_tool_t *out) nogil
    int cc_utf8_valid(const char *p, size_t n) nogil


cdef extern from "chunkcodec/encode.h":
    size_t cc_js_escaped_len(const char *src, size_t len) nogil
    size_t cc_js_escape(const char *src, size_t len, char *dst) nogil
    size_t cc_js_escaped_len_ucs(int kind, const void *data, size_t n) nogil
    size_t cc_js_escape_ucs(int kind, const void *data, size_t n, char *dst) nogil
    size_t cc_js_numbers(const char *src, size_t len, char *dst) nogil
    int cc_js_numbers_needed(const char *src, size_t len) nogil


cdef extern from "chunkcodec/bulk.h":
    enum:
        CC_T_CORRUPT
        CC_T_UNKNOWN
        CC_T_DATA
        CC_T_MULTI
        CC_T_FIRST_NAMED
    ctypedef struct cc_typetab:
        const char *const *names
        const size_t *lens
        size_t n
        int16_t hot[4]
    ctypedef struct cc_runent:
        const char *p
        uint32_t len
        int32_t idx
        uint64_t hash
    ctypedef struct cc_runtab:
        cc_runent *ents
        size_t cap
        size_t n
    int cc_runtab_init(cc_runtab *t, size_t cap) nogil
    void cc_runtab_free(cc_runtab *t) nogil
    ctypedef struct cc_index:
        int64_t *offset
        int64_t *length
        int16_t *type
        int32_t *run
        int64_t *text_off
        int64_t *text_len
        size_t cap
        size_t n
    Py_ssize_t cc_bulk_scan(int framing, const char *buf, size_t len, int final, int64_t base,
                            const cc_typetab *types, cc_runtab *runs, cc_index *out) nogil
    size_t cc_bulk_boundary(int framing, const char *buf, size_t len, size_t pos) nogil
    ctypedef struct cc_backscan:
        int64_t *first
        size_t first_cap
    void cc_backscan_init(cc_backscan *b) nogil
    void cc_backscan_free(cc_backscan *b) nogil
    Py_ssize_t cc_bulk_scan_back(int framing, const char *buf, size_t lo, size_t hi, size_t piece,
                                 const cc_typetab *types, cc_runtab *runs, cc_backscan *b, cc_index *out,
                                 size_t *bottom) nogil


cdef extern from "chunkcodec/accum.h":
    ctypedef struct cc_dbuf:
        char *p
        Py_ssize_t *len
        size_t cap
        uint64_t gen
    int cc_dbuf_append(cc_dbuf *b, const cc_str_t *s) nogil
    ctypedef struct cc_routes:
        unsigned bits
        uint64_t evicted
    int cc_routes_init(cc_routes *t, unsigned bits) nogil
    void cc_routes_free(cc_routes *t) nogil
    int cc_routes_grow(cc_routes *t, unsigned bits, Py_ssize_t *moved) nogil
    Py_ssize_t cc_route_find(const cc_routes *t, int type, const char *run, size_t run_len, const char *key,
                             size_t key_len, int has_name) nogil
    Py_ssize_t cc_route_put(cc_routes *t, int type, const char *run, size_t run_len, const char *key,
                            size_t key_len, cc_dbuf *buf, int need_name, const char *pm, size_t pm_len) nogil
    enum:
        CC_ACC_TEXT_START
        CC_ACC_TEXT_END
        CC_ACC_START
        CC_ACC_TOOL_INPUT_END
        CC_ACC_TOOL_INPUT_START
        CC_ACC_PM_DELTA
        CC_ACC_NEW_ROUTE
    ctypedef struct cc_accum_stop:
        size_t frames
        Py_ssize_t last
        Py_ssize_t full
        size_t need
        int event
        size_t event_bytes
        const char *run
        const char *from_ "from"
        const char *key
        size_t run_len
        size_t from_len
        size_t key_len
        int type
        const char *text
        const char *pm
        size_t text_len
        size_t pm_len
        const char *name
        size_t name_len
        size_t frame_off
        size_t frame_len
    size_t cc_accum_deltas(int framing, const char *buf, size_t len, size_t max_frame, cc_routes *t,
                           cc_accum_stop *st) nogil
    int cc_fast_avx2() nogil
    enum:
        CC_ROUTE_BITS_MIN
        CC_ROUTE_BITS_MAX
        CC_ROUTE_BITS_BIG
