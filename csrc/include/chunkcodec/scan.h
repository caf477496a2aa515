/* The hot-chunk scanner: recognises text-delta, reasoning-delta and tool-call-delta frames of the
 * simple shape Mastra writes, validating them completely (JSON syntax, UTF-8, escapes), and returns
 * the spans of their fields.  Anything else is CC_NOT_HOT and goes to the general decoder. */
#ifndef CHUNKCODEC_SCAN_H
#define CHUNKCODEC_SCAN_H

#include <stddef.h>
#include <stdint.h>
#include "status.h"

typedef enum cc_hot_type {
    CC_HOT_NONE = 0,
    CC_HOT_TEXT_DELTA = 1,
    CC_HOT_REASONING_DELTA = 2,
    CC_HOT_TOOL_CALL_DELTA = 3
} cc_hot_type;

enum {
    CC_STR_ESCAPED = 1,   /* holds at least one escape */
    CC_STR_NONCANON = 2   /* holds an escape JSON.stringify would not write (\/, \u0041, \u001F...) */
};

/* A JSON string value: the bytes between the quotes, still escaped. */
typedef struct cc_str {
    const char *p;
    size_t len;        /* bytes between the quotes; 0 with p == NULL means absent */
    size_t ncp;        /* number of code points once decoded */
    uint32_t maxchar;  /* largest code point once decoded */
    int flags;         /* CC_STR_ESCAPED */
} cc_str_t;

typedef enum cc_hot_field {
    CC_F_RUN_ID = 0, CC_F_FROM, CC_F_ID, CC_F_TEXT, CC_F_ARGS_TEXT_DELTA, CC_F_TOOL_CALL_ID,
    CC_F_TOOL_NAME, CC_F_COUNT
} cc_hot_field;

typedef struct cc_hot {
    int type;                   /* cc_hot_type */
    int canonical;              /* the frame is byte for byte what JSON.stringify writes for these
                                   fields in Mastra's key order: re-encoding reproduces it exactly */
    cc_str_t f[CC_F_COUNT];
} cc_hot_t;

/* CC_OK with *out filled, or CC_NOT_HOT. */
cc_status cc_scan_hot(const char *buf, size_t len, cc_hot_t *out);

/* The JSON string whose bytes start at p (just past its opening quote; n bytes available), checked
 * as cc_scan_hot checks its strings (UTF-8, escapes, no lone surrogate or control byte): CC_OK
 * with *close the offset of its closing quote and *s filled, or CC_NOT_HOT. */
cc_status cc_scan_str(const char *p, size_t n, size_t *close, cc_str_t *s);

/* Decode a scanned string into a buffer of code units of `kind` bytes (1, 2 or 4) holding s->ncp
 * units: the layout of a CPython str created with PyUnicode_New(s->ncp, s->maxchar). */
void cc_str_decode(const cc_str_t *s, int kind, void *dst);

/* Decode a scanned string into UTF-8 at dst, which has room for s->len bytes (decoding never
 * lengthens: every escape is at least as long as the UTF-8 it stands for).  Returns the length. */
size_t cc_str_decode_utf8(const cc_str_t *s, char *dst);

/* The checks the scanner makes, for other scanners (bulk.c) to make the same ones: */
/* 1 if p[0..n) is well-formed UTF-8 (no overlongs, surrogates or code points past U+10FFFF): 32
 * bytes at a time where cc_fast_avx2() says the CPU has AVX2 and n >= 8, else a sequence at a
 * time. */
int cc_utf8_valid(const char *p, size_t n);
/* Text out of the accumulator's UTF-8 buffers, for a CPython str made at its final size and kind
 * (PyUnicode_New(*ncp, *maxchar), then cc_utf8_widen): CPython's own decoder widens the str as it
 * meets wider characters and then decodes a code point at a time, about 1.9 ns a byte on a run's
 * text with an emoji in it.  cc_utf8_measure gives the code points of p[0..n) and the class of the
 * largest (0x7F, 0xFF, 0xFFFF or 0x10FFFF: exact, as a str's kind must be) when p[0..n) is
 * well-formed UTF-8 (as cc_utf8_valid), else 0. */
int cc_utf8_measure(const char *p, size_t n, size_t *ncp, uint32_t *maxchar);
/* The same for p[0..n) known to be well-formed UTF-8 (the accumulator's buffers that only the C
 * readers wrote, which checked each string they wrote, sliced at character boundaries): not
 * checked again. */
int cc_utf8_measure_known(const char *p, size_t n, size_t *ncp, uint32_t *maxchar);
/* Decode p[0..n), which cc_utf8_measure accepted, into its ncp code units of kind bytes (1, 2 or
 * 4: the kind of its maxchar) at dst. */
void cc_utf8_widen(const char *p, size_t n, int kind, size_t ncp, void *dst);
/* p is just past a backslash inside a string (n bytes available): how many bytes the escape takes
 * after the backslash, or 0 when it is not a valid JSON escape or is a lone surrogate. */
size_t cc_escape_len(const char *p, size_t n);
/* The length of the JSON object at p[0] == '{' (n bytes available), checked as msgspec checks it
 * (syntax, escapes, control bytes, nesting to 64 levels, numbers msgspec decodes without "out of
 * range"; UTF-8 is the caller's to check), or 0 when it is not one or msgspec might refuse it (or
 * it holds a line feed as white space, which these readers leave to the general decoder). */
size_t cc_skip_object(const char *p, size_t n);
/* The same for any JSON value at p[0] (no white space before it). */
size_t cc_skip_value(const char *p, size_t n);

/* ---- step-finish and finish frames -------------------------------------------------------------
 * The few fields accumulation reads from these frames, whose message history may run to megabytes:
 * cc_scan_finish checks the whole frame as msgspec checks what it skips (syntax, escapes, control
 * bytes; UTF-8 is left to msgspec, which checks it in the values it decodes) and gives the spans of
 * the values as written.
 * Of stepResult and metadata, when they are objects, it gives the few keys read (the last of
 * duplicates, as a dict keeps), so that these need not be decoded whole.
 * CC_NOT_HOT when the frame is not one of these, not valid, or not plain enough to be sure (escaped
 * keys at the levels it reads, duplicate keys of the frame, its payload or output, nesting past 64,
 * a lone surrogate, a payload or output that is neither an object nor null): the general decoder
 * takes it then. */
typedef struct cc_span { const char *p; size_t len; } cc_span_t;   /* p == NULL: absent */

/* payload, output: absent, null or an object; stepResult, metadata: an object whose keys were read,
 * or one to decode whole (its UTF-8 or a number's range left to msgspec, or an escaped key), or
 * anything else (0) */
enum { CC_FIN_ABSENT = 0, CC_FIN_NULL = 1, CC_FIN_OBJECT = 2, CC_FIN_DECODE = 3 };
enum { CC_FIN_STEP_FINISH = 1, CC_FIN_FINISH = 2 };                 /* kind */

/* A place in a skipped member's value where the reader can go on from: just past an element or a
 * member's value of a container at level 1 (the member's value) or 2 (a container in it), off bytes
 * from the value's start; lvl, that level; kinds, bit l - 1 set when the level-l container is an
 * object.  The same bytes up to there in a later frame leave the reader in the same state there. */
typedef struct cc_fin_ck { uint32_t off; uint8_t lvl, kinds; } cc_fin_ck_t;

/* A member of payload or output the finish reader skipped: its key at buf[k0, k0 + kl), its value at
 * buf[v0, v0 + vl), its level (CC_FIN_LEVEL_*), and its places to go on from (ck_count of them from
 * ck_first, in order; fewer when the caller's room ran out).  At most CC_FIN_MEMO_MAX are kept (the
 * first). */
enum { CC_FIN_LEVEL_PAYLOAD = 1, CC_FIN_LEVEL_OUTPUT = 2, CC_FIN_MEMO_MAX = 12 };
typedef struct cc_fin_member { size_t k0, kl, v0, vl; int level; uint32_t ck_first, ck_count; } cc_fin_member_t;
typedef struct cc_fin_memo {
    const char *p;                /* the bytes the offsets are in (the reader leaves it NULL) */
    const cc_fin_ck_t *ck;        /* the places the members' ck_first count from (the reader: NULL) */
    int count;
    cc_fin_member_t m[CC_FIN_MEMO_MAX];
} cc_fin_memo_t;
typedef const cc_fin_memo_t *(*cc_fin_memo_fn)(void *ctx, const char *run_id, size_t len);

typedef struct cc_finish {
    int kind;
    int payload, output;
    int step_result_object, metadata_object;                  /* 0, CC_FIN_OBJECT or _DECODE */
    cc_span_t type, run_id, from_;                            /* top level */
    cc_span_t step_result, metadata, provider_metadata, id;   /* payload.* */
    cc_span_t usage;                                          /* payload.output.usage */
    cc_span_t sr_reason, sr_warnings;                         /* payload.stepResult.* (last wins) */
    cc_span_t md_id, md_model_id, md_model;                   /* payload.metadata.* (last wins) */
    cc_span_t md_provider_metadata;
    int memo_members;             /* the members of payload and output taken through the memo */
    int memo_resumed;             /* the times the reader went on from a place in a memo's value */
    int rep_strings;              /* strings skipped as the same bytes as one before in the frame */
    cc_fin_memo_t skipped;        /* the members of payload and output skipped (offsets in buf) */
    /* set by the caller (ck NULL: none kept): room for the skipped members' places to go on from,
     * which the reader fills (ck_count) */
    cc_fin_ck_t *ck;
    uint32_t ck_cap, ck_count;
} cc_finish_t;

cc_status cc_scan_finish(const char *buf, size_t len, cc_finish_t *out);
/* The same for the frame at the start of buf, whose end is not known yet (avail bytes, the frames
 * after it among them): CC_OK with *end the offset past its closing brace, for the caller to check
 * that its framing's terminator follows.  Its white space is what cc_scan_finish allows but line
 * feeds (no reader here takes one inside a value), so it cannot read across the end of a line. */
cc_status cc_scan_finish_open(const char *buf, size_t avail, cc_finish_t *out, size_t *end);
/* Either of the two (open: cc_scan_finish_open's way, *end set), with a memo: when the reader has
 * read the frame's runId (a string without escapes, before its payload), lookup(ctx, its bytes
 * without the quotes) may give the `skipped` of a frame read before (its p: those bytes, kept by
 * the caller), or NULL.  A member of payload or output that would be skipped and whose value is,
 * byte for byte, the value of the memo's member of the same key and level, is not checked again:
 * those bytes were checked, at the same depth, by the same reader.  (Mastra's finish frame
 * repeats its run's last step-finish but for output.usage: its message history is read once.)
 * When only a first part of it is the same, the reader goes on from the memo's last place
 * (cc_fin_ck_t) in that part: Mastra's next step-finish repeats the history before it, then adds
 * the new step's messages (messages.all, .nonUser) and steps (output.steps, the last one's tool
 * results added). */
cc_status cc_scan_finish_memo(const char *buf, size_t len, int open, cc_finish_t *out, size_t *end,
                              cc_fin_memo_fn lookup, void *ctx);

/* ---- step-start frames --------------------------------------------------------------------------
 * The spans of a step-start frame's type, runId, from and payload.warnings (p NULL: absent), read
 * while checking the frame as the typed decoder would (scan.c says how); CC_NOT_HOT when it is not
 * such a frame or the typed decoder might read it differently. */
typedef struct cc_step_start { cc_span_t type, run_id, from_, warnings; } cc_step_start_t;

cc_status cc_scan_step_start(const char *buf, size_t len, cc_step_start_t *out);

/* What a frame that is neither a delta nor a finish frame most likely is, from its first 160 bytes
 * (the quoted type among them): which reader to try first.  A hint only (the same bytes may be
 * another key's value): every reader checks the type it reads, so trying them in another order
 * changes nothing but the time. */
enum { CC_HINT_NONE = 0, CC_HINT_STEP_START = 1, CC_HINT_TOOL = 2 };
int cc_frame_hint(const char *buf, size_t len);

/* ---- tool-call and tool-result frames ------------------------------------------------------------
 * The spans of a tool-call or tool-result frame (kind CC_TOOL_CALL or CC_TOOL_RESULT): its runId,
 * from and payload toolCallId, toolName, args and (a result's) result, p NULL where absent; read
 * while checking the frame as the typed decoder would, and taken only where that decoder surely
 * makes a chunk of exactly these fields (scan.c says how); CC_NOT_HOT otherwise. */
enum { CC_TOOL_CALL = 1, CC_TOOL_RESULT = 2 };
typedef struct cc_tool { int kind; cc_span_t run_id, from_, call_id, name, args, result; } cc_tool_t;

cc_status cc_scan_tool(const char *buf, size_t len, cc_tool_t *out);

#endif
