/* The fast path for delta frames, shared by the bulk indexer (bulk.c) and the accumulator's
 * delta loop (accum.c): private to the C core, included by both so the hot loops inline it.
 * (scan.c takes its 64-byte block masks for the finish reader's long strings.) */
#ifndef CHUNKCODEC_FAST_DELTA_H
#define CHUNKCODEC_FAST_DELTA_H
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "chunkcodec/accum.h"
#include "chunkcodec/alloc.h"
#include "chunkcodec/scan.h"

#if defined(__GNUC__) || defined(__clang__)
#define CC_INLINE static inline __attribute__((always_inline))
#define ctz64(x) ((size_t)__builtin_ctzll(x))
#else
#define CC_INLINE static inline
static size_t ctz64(uint64_t x) { size_t n = 0; while (!(x & 1)) { x >>= 1; n++; } return n; }
#endif

/* Bit masks of one 64-byte block, a bit per byte: quotes, backslashes, control bytes (< 0x20),
 * non-ASCII bytes. */
typedef struct fast_block { uint64_t quote, bslash, ctl, high; } fast_block;

#if defined(__SSE2__)
#include <emmintrin.h>
CC_INLINE void block_masks(const char *p, fast_block *m) {
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), top = _mm_set1_epi8(0x1F);
    m->quote = m->bslash = m->ctl = m->high = 0;
    for (int k = 0; k < 4; k++) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + 16 * k));
        m->quote |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, quote)) << (16 * k);
        m->bslash |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v, bslash)) << (16 * k);
        m->ctl |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(_mm_min_epu8(v, top), v)) << (16 * k);
        m->high |= (uint64_t)(unsigned)_mm_movemask_epi8(v) << (16 * k);
    }
}
#else
CC_INLINE void block_masks(const char *p, fast_block *m) {
    m->quote = m->bslash = m->ctl = m->high = 0;
    for (int k = 0; k < 64; k++) {
        unsigned char c = (unsigned char)p[k];
        uint64_t bit = 1ull << k;
        if (c == '"') m->quote |= bit;
        else if (c == '\\') m->bslash |= bit;
        else if (c < 0x20) m->ctl |= bit;
        else if (c >= 0x80) m->high |= bit;
    }
}
#endif

/* The same masks from two 32-byte loads, on CPUs with AVX2 (most x86-64 made since 2013-2015):
 * compiled for AVX2 whatever the build's flags, used only when cc_fast_avx2() says the CPU has it.
 * half_masks_avx2: those of the first 32 bytes alone (the upper 32 bits of each mask: 0). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define FAST_HAVE_AVX2 1
#include <immintrin.h>
__attribute__((target("avx2"))) static inline void half_masks_avx2(const char *p, fast_block *m) {
    const __m256i quote = _mm256_set1_epi8('"'), bslash = _mm256_set1_epi8('\\'), top = _mm256_set1_epi8(0x1F);
    __m256i a = _mm256_loadu_si256((const __m256i *)p);
    m->quote = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, quote));
    m->bslash = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(a, bslash));
    m->ctl = (uint32_t)_mm256_movemask_epi8(_mm256_cmpeq_epi8(_mm256_min_epu8(a, top), a));
    m->high = (uint32_t)_mm256_movemask_epi8(a);
}

__attribute__((target("avx2"))) static inline void block_masks_avx2(const char *p, fast_block *m) {
    fast_block hi;
    half_masks_avx2(p, m);
    half_masks_avx2(p + 32, &hi);
    m->quote |= hi.quote << 32;
    m->bslash |= hi.bslash << 32;
    m->ctl |= hi.ctl << 32;
    m->high |= hi.high << 32;
}
#else
#define FAST_HAVE_AVX2 0
#endif

CC_INLINE uint64_t load64(const char *p) {
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

CC_INLINE uint32_t load32(const char *p) {
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}

/* A string's bytes folded into h, 8 at a time (the last word overlapping the one before when the
 * length is not a multiple of 8), for the hash tables of ids (the accumulator's routes, the bulk
 * index's runs).  Every byte counts: ids that differ only in their first bytes, their last or their
 * middle (numbered runs with a common prefix and suffix) do not all land in one place. */
CC_INLINE uint64_t hash_fold(uint64_t h, const char *p, size_t n) {
    if (n >= 8) {
        size_t i = 0;
        for (; i + 8 < n; i += 8) h = (h ^ load64(p + i)) * 0x9E3779B97F4A7C15ull, h ^= h >> 29;
        return (h ^ load64(p + n - 8)) * 0xC2B2AE3D27D4EB4Full;
    }
    uint64_t v = 0;
    for (size_t i = 0; i < n; i++) v = (v << 8) | (unsigned char)p[i];
    return (h ^ v) * 0xC2B2AE3D27D4EB4Full;
}

CC_INLINE uint16_t load16(const char *p) {
    uint16_t v;
    memcpy(&v, p, 2);
    return v;
}

/* a[0..n) == b[0..n), in overlapping words: up to 16 bytes in two loads a side, longer strings
 * (run ids) 16 bytes at a time where SSE2 is there.  The keys and literals compared here are
 * short, and a call to memcmp costs more than the comparison. */
CC_INLINE int same(const char *a, const char *b, size_t n) {
    if (n < 8) {                       /* two overlapping 4- or 2-byte words, or a byte */
        if (n >= 4) return ((load32(a) ^ load32(b)) | (load32(a + n - 4) ^ load32(b + n - 4))) == 0;
        if (n >= 2) return ((load16(a) ^ load16(b)) | (load16(a + n - 2) ^ load16(b + n - 2))) == 0;
        return n == 0 || a[0] == b[0];
    }
    if (n <= 16)                       /* two overlapping 8-byte words */
        return ((load64(a) ^ load64(b)) | (load64(a + n - 8) ^ load64(b + n - 8))) == 0;
#if defined(__SSE2__)
    /* 16 bytes at a time, the last block overlapping: a 36-byte run id in three */
    __m128i d = _mm_setzero_si128();
    size_t i = 0;
    for (; i + 16 <= n; i += 16)
        d = _mm_or_si128(d, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + i)),
                                          _mm_loadu_si128((const __m128i *)(b + i))));
    if (i < n)
        d = _mm_or_si128(d, _mm_xor_si128(_mm_loadu_si128((const __m128i *)(a + n - 16)),
                                          _mm_loadu_si128((const __m128i *)(b + n - 16))));
    return _mm_movemask_epi8(_mm_cmpeq_epi8(d, _mm_setzero_si128())) == 0xFFFF;
#else
    uint64_t d = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) d |= load64(a + i) ^ load64(b + i);
    if (i < n) d |= load64(a + n - 8) ^ load64(b + n - 8);
    return d == 0;
#endif
}

/* Copy n bytes from src to dst in at most two overlapping loads and stores when n <= 16 (the
 * usual delta: a word or two), memcpy otherwise.  Never reads or writes outside [0, n). */
CC_INLINE void copy_small(char *dst, const char *src, size_t n) {
    if (n > 16) {
        memcpy(dst, src, n);
    } else if (n >= 8) {
        uint64_t a = load64(src), b = load64(src + n - 8);
        memcpy(dst, &a, 8);
        memcpy(dst + n - 8, &b, 8);
    } else if (n >= 4) {
        uint32_t a = load32(src), b = load32(src + n - 4);
        memcpy(dst, &a, 4);
        memcpy(dst + n - 4, &b, 4);
    } else {
        for (size_t i = 0; i < n; i++) dst[i] = src[i];
    }
}

/* ---- The fast path for delta frames ---------------------------------------------------------
 * Most of a log is text-delta frames written by Mastra in one shape.  For a frame at the start of
 * a line (an RS record, an SSE `data: ` line) this reads 64 bytes at a time into bit masks of
 * quotes, backslashes, control bytes and non-ASCII bytes: the first control byte ends the frame
 * (LF and 0x1E are control bytes; a JSON frame holds none), the quotes that no escape takes give
 * the strings, and the bytes between the strings must be the template's exactly.  Escapes and
 * UTF-8 are checked as the hot scanner checks them (cc_escape_len, cc_utf8_valid), so this path
 * takes a delta frame only when cc_scan_hot would, with the same spans; anything else (other key
 * orders, white space, CRLF, long frames) is left to the caller's general path.  A text-start or
 * text-end it takes is as valid (same checks, a template with no other value in it). */

/* Besides the deltas (cc_hot_type), the two frames that bracket every text part, in their plain
 * shape (no providerMetadata), the start frame of a run, payload {id, messageId}, and the start
 * and end of a tool call's streamed input, payloads {toolCallId, toolName} and {toolCallId}: no
 * text, and taken only without escapes.  (8 and 9 are accum.h's.) */
enum { FAST_TEXT_START = 4, FAST_TEXT_END = 5, FAST_START = 6, FAST_TOOL_INPUT_END = 7, FAST_TOOL_INPUT_START = 10 };

typedef struct fast_delta_t {
    size_t len;                        /* frame length: p[len] is the separator */
    int type;                          /* cc_hot_type, or FAST_TEXT_START / FAST_TEXT_END */
    int escaped;                       /* the frame holds an escape (strings need decoding) */
    const char *run, *from, *key, *text; /* runId; from; payload.id or toolCallId; text or argsTextDelta */
    size_t run_len, from_len, key_len, text_len; /* (the strings still escaped, between their quotes) */
    const char *pm;                    /* a text or reasoning delta's providerMetadata object, or NULL */
    size_t pm_len;
    const char *name;                  /* a tool-call-delta's toolName, or NULL: it names none */
    size_t name_len;
    int extra;                         /* cc_scan_hot refuses it, for keys the chunk's schema does not
                                        * know or a tool-call-delta's providerMetadata (other_read) */
    cc_prefix *head;                   /* the frame's kept head (see below), or NULL */
} fast_delta_t;

#define FAST_MAX_BLOCKS 16     /* frames up to 1 KB; longer ones take the general path */
#define FAST_MAX_ESCAPES 32

typedef struct fast_frame {
    const char *p;
    size_t e;                          /* frame length: p[e] is the terminating control byte */
    size_t nblk;
    uint64_t q[FAST_MAX_BLOCKS];       /* string quotes (escaped ones cleared), a bit per byte */
} fast_frame;

/* The literal lit at *x, then a string up to the next quote: *x is left on that quote and the
 * string's span is [s, *x). */
CC_INLINE int lit_str(fast_frame *f, size_t *x, const char *lit, size_t ln, size_t *s) {
    if (*x + ln > f->e || !same(f->p + *x, lit, ln)) return 0;
    *x += ln;
    size_t b = *x >> 6;
    if (b >= f->nblk) return 0;
    uint64_t m = f->q[b] & (~0ull << (*x & 63));
    while (!m) {
        if (++b >= f->nblk) return 0;
        m = f->q[b];
    }
    *s = *x;
    *x = (b << 6) + ctz64(m);
    return 1;
}

/* Read the frame at p from byte `from` on, a 64-byte block at a time, up to its first control
 * byte: f->q[b] the quotes of block b (bytes from + 64b on), f->e the control byte's offset,
 * f->nblk the blocks read, *nb the backslashes.  Then walk the escapes in order (the quote of \"
 * is no string end; "\\" and surrogate pairs take the backslashes inside them), and check the
 * UTF-8 of the non-ASCII bytes.  0 when the frame does not end within FAST_MAX_BLOCKS blocks of
 * p, or not with sep (or, when sep is LF, CRLF: the CR is not the frame's, as on the general path),
 * or holds more than FAST_MAX_ESCAPES backslashes, a bad escape or bad UTF-8.
 * (The bytes before `from` are the caller's: they must hold no backslash or control byte.) */
CC_INLINE int read_frame(const char *p, size_t from, size_t avail, char sep, fast_frame *f, int *nb_out, int avx2) {
    uint32_t bs[FAST_MAX_ESCAPES];
    int nb = 0;
    size_t high = (size_t)-1;          /* the first non-ASCII byte */
    for (size_t b = 0;; b++) {
        fast_block m;
        size_t pos = from + (b << 6);
        if (pos >= FAST_MAX_BLOCKS * 64) return 0;
        const char *blk = p + pos;
        char pad[64];
        if (avail - pos < 64) {
            memset(pad, 0, sizeof pad);         /* NUL is a control byte: "no terminator here" */
            memcpy(pad, p + pos, avail - pos);
            blk = pad;
        }
#if FAST_HAVE_AVX2
        if (avx2)
            block_masks_avx2(blk, &m);
        else
#endif
            block_masks(blk, &m);
        uint64_t keep = m.ctl ? (1ull << ctz64(m.ctl)) - 1 : ~0ull;
        f->q[b] = m.quote & keep;
        if (high == (size_t)-1 && (m.high & keep)) high = pos + ctz64(m.high & keep);
        for (uint64_t k = m.bslash & keep; k; k &= k - 1) {
            if (nb == FAST_MAX_ESCAPES) return 0;
            bs[nb++] = (uint32_t)(pos + ctz64(k));
        }
        if (m.ctl) {
            f->e = pos + ctz64(m.ctl);
            f->nblk = b + 1;
            break;
        }
    }
    if (f->e >= FAST_MAX_BLOCKS * 64 || f->e >= avail) return 0;
    if (p[f->e] != sep && !(sep == '\n' && p[f->e] == '\r' && f->e + 1 < avail && p[f->e + 1] == '\n'))
        return 0;                      /* (a line may end in CRLF, as the general path's split allows) */
    for (int i = 0; i < nb; i++) {
        size_t at = bs[i], l = cc_escape_len(p + at + 1, f->e - at - 1);
        if (!l) return 0;
        if (p[at + 1] == '"') f->q[(at + 1 - from) >> 6] &= ~(1ull << ((at + 1 - from) & 63));
        while (i + 1 < nb && bs[i + 1] <= at + l) i++;
    }
    if (high != (size_t)-1 && !cc_utf8_valid(p + high, f->e - high)) return 0;
    *nb_out = nb;
    return 1;
}

/* The frame at p, read into *fp (nb backslashes), in Mastra's exact shape: a delta, or one of the
 * FAST_* frames: 1 with *out filled, or 0. */
CC_INLINE int isa_template(const char *p, fast_frame *fp, int nb, fast_delta_t *out) {
    /* Escapes can only sit inside strings: the literals between them hold none. */
    size_t x = 0, s, rs, ts;
    int tool = 0;
    if (fp->e < 40) return 0;
    if (p[9] == 't' && p[10] == 'e') {
        if (p[14] == 'd') {
            if (!lit_str(fp, &x, "{\"type\":\"text-delta\",\"runId\":\"", 30, &rs)) return 0;
            out->type = CC_HOT_TEXT_DELTA;
        } else if (p[14] == 's') {
            if (!lit_str(fp, &x, "{\"type\":\"text-start\",\"runId\":\"", 30, &rs)) return 0;
            out->type = FAST_TEXT_START;
        } else {
            if (!lit_str(fp, &x, "{\"type\":\"text-end\",\"runId\":\"", 28, &rs)) return 0;
            out->type = FAST_TEXT_END;
        }
    } else if (p[9] == 'r') {
        if (!lit_str(fp, &x, "{\"type\":\"reasoning-delta\",\"runId\":\"", 35, &rs)) return 0;
        out->type = CC_HOT_REASONING_DELTA;
    } else if (p[9] == 's') {
        if (!lit_str(fp, &x, "{\"type\":\"start\",\"runId\":\"", 25, &rs)) return 0;
        out->type = FAST_START;
    } else if (p[9] == 't' && p[10] == 'o' && p[19] == 'i' && p[35] == 's') {
        if (!lit_str(fp, &x, "{\"type\":\"tool-call-input-streaming-start\",\"runId\":\"", 51, &rs)) return 0;
        out->type = FAST_TOOL_INPUT_START;
    } else if (p[9] == 't' && p[10] == 'o' && p[19] == 'i') {
        if (!lit_str(fp, &x, "{\"type\":\"tool-call-input-streaming-end\",\"runId\":\"", 49, &rs)) return 0;
        out->type = FAST_TOOL_INPUT_END;
    } else if (p[9] == 't' && p[10] == 'o') {
        if (!lit_str(fp, &x, "{\"type\":\"tool-call-delta\",\"runId\":\"", 35, &rs)) return 0;
        out->type = CC_HOT_TOOL_CALL_DELTA;
        tool = 1;
    } else {
        return 0;
    }
    out->run = p + rs;
    out->run_len = x - rs;
    out->pm = NULL;
    out->pm_len = 0;
    out->name = NULL;
    out->name_len = 0;
    out->extra = 0;
    if (!lit_str(fp, &x, "\",\"from\":\"", 10, &s)) return 0;
    out->from = p + s;
    out->from_len = x - s;
    if (out->type >= FAST_TEXT_START) {
        if (nb) return 0;
        if (out->type == FAST_TEXT_END ? !lit_str(fp, &x, "\",\"payload\":{\"type\":\"text-end\",\"id\":\"", 37, &s)
            : out->type >= FAST_TOOL_INPUT_END ? !lit_str(fp, &x, "\",\"payload\":{\"toolCallId\":\"", 27, &s)
                                               : !lit_str(fp, &x, "\",\"payload\":{\"id\":\"", 19, &s))
            return 0;
        out->key = p + s;
        out->key_len = x - s;
        if (out->type == FAST_START && !lit_str(fp, &x, "\",\"messageId\":\"", 15, &s)) return 0;
        if (out->type == FAST_TOOL_INPUT_START) {
            if (!lit_str(fp, &x, "\",\"toolName\":\"", 14, &s)) return 0;
            out->name = p + s;
            out->name_len = x - s;
        }
        out->text = NULL;
        out->text_len = 0;
    } else if (!tool) {
        if (!lit_str(fp, &x, "\",\"payload\":{\"id\":\"", 19, &s)) return 0;
        out->key = p + s;
        out->key_len = x - s;
        if (fp->e - x > 22 && same(p + x, "\",\"providerMetadata\":{", 22)) {
            /* Mastra's converter writes {id, providerMetadata, text}: the object is checked as
             * msgspec would check it (its UTF-8 is checked above, with the frame's) */
            size_t v = x + 21, l = cc_skip_object(p + v, fp->e - v);
            if (!l) return 0;
            out->pm = p + v;
            out->pm_len = l;
            x = v + l;
            if (!lit_str(fp, &x, ",\"text\":\"", 9, &ts)) return 0;
        } else if (!lit_str(fp, &x, "\",\"text\":\"", 10, &ts)) {
            return 0;
        }
        out->text = p + ts;
        out->text_len = x - ts;
    } else {
        if (!lit_str(fp, &x, "\",\"payload\":{\"argsTextDelta\":\"", 30, &ts)) return 0;
        out->text = p + ts;
        out->text_len = x - ts;
        if (!lit_str(fp, &x, "\",\"toolCallId\":\"", 16, &s)) return 0;
        out->key = p + s;
        out->key_len = x - s;
        if (fp->e - x != 3) {                       /* it names its tool */
            if (!lit_str(fp, &x, "\",\"toolName\":\"", 14, &s)) return 0;
            out->name = p + s;
            out->name_len = x - s;
        }
    }
    if (fp->e - x != 3 || !same(p + x, "\"}}", 3)) return 0;
    out->len = fp->e;
    out->escaped = nb > 0;
    out->head = NULL;
    return 1;
}

/* The first string quote at or after x of a frame read by read_frame from its first byte, or 0. */
CC_INLINE size_t quote_from(const fast_frame *f, size_t x) {
    size_t b = x >> 6;
    if (b >= f->nblk) return 0;
    uint64_t m = f->q[b] & (~0ull << (x & 63));
    while (!m) {
        if (++b >= f->nblk) return 0;
        m = f->q[b];
    }
    return (b << 6) + ctz64(m);
}

/* ---- Kept heads (cc_prefix in accum.h) ------------------------------------------------------
 * A delta frame whose head equals a head fast_delta_read read before is read from its text on:
 * the bytes before it are the ones already read, so they hold the same strings, no escape, no
 * control byte and valid UTF-8.  What is left is what fast_delta_read checks after the head: the
 * text string (escapes, UTF-8), then exactly `"}}` and the separator, within the same limits
 * (frame end within FAST_MAX_BLOCKS blocks, at most FAST_MAX_ESCAPES backslashes).  So it takes a
 * frame exactly when fast_delta_read would, with the same spans (tests/util.py kept_head_frames:
 * native against reference, for the index and for accumulate). */

/* The set of a head: bytes 30-61, the runId in a text-delta frame (the key's end and the runId in
 * a reasoning-delta one) and what follows it; every head kept is longer (the shortest
 * text-delta head, its strings empty, has 69 bytes).  32 bytes, not the runId's first 16: runIds
 * that share a prefix ("agent-run-2025-11-23-000123") would otherwise all fall in one set. */
#define HEAD_MIN 64
CC_INLINE size_t head_set(const cc_prefix_cache *c, const char *p) {
    uint64_t h = (load64(p + 30) * 0x9E3779B97F4A7C15ull) ^ (load64(p + 38) * 0xC2B2AE3D27D4EB4Full) ^
                 (load64(p + 46) * 0x165667B19E3779F9ull) ^ (load64(p + 54) * 0xBF58476D1CE4E5B9ull);
    return (size_t)(h >> (64 - c->bits));
}

#if FAST_HAVE_AVX2
/* same() for a head, 32 bytes at a time (n >= 32). */
__attribute__((target("avx2"))) static inline int same_avx2(const char *a, const char *b, size_t n) {
#define X32(o) _mm256_xor_si256(_mm256_loadu_si256((const __m256i *)(a + (o))), \
                                _mm256_loadu_si256((const __m256i *)(b + (o))))
    /* the first and last 32 bytes, then what lies between, 32 at a time (a Mastra delta's head,
     * 100-130 bytes: four blocks, no loop) */
    __m256i d = _mm256_or_si256(X32(0), X32(n - 32));
    if (n > 64) {
        d = _mm256_or_si256(d, X32(32));
        if (n > 96) {
            d = _mm256_or_si256(d, X32(64));
            for (size_t i = 96; i + 32 < n; i += 32) d = _mm256_or_si256(d, X32(i));
        }
    }
#undef X32
    return _mm256_testz_si256(d, d);
}
#endif

/* The kept head the frame at p starts with, or NULL. */
CC_INLINE cc_prefix *head_find(cc_prefix_cache *c, const char *p, size_t avail, int avx2) {
    cc_prefix *e = &c->slot[2 * head_set(c, p)];
    uint64_t w = load64(p + 30);
    for (int i = 0; i < 2; i++, e++) {
        /* (the bytes first: they tell the two slots apart; an empty slot's are zeros or stale) */
        if (load64(e->head + 30) != w || !e->len || e->tail_len || avail <= e->len + 3u) continue;
        const char *hb = e->ext ? e->ext : e->head;
#if FAST_HAVE_AVX2
        if (avx2 ? same_avx2(p, hb, e->len) : same(p, hb, e->len)) return e;
#else
        if (same(p, hb, e->len)) return e;
#endif
    }
    return NULL;
}

/* Kept templates.  A frame other_read reads in another shape, whose text is not the last of
 * it (sorted keys: {"from","payload":{"id","text"},"runId","type"}), is kept as a template: its head
 * (the bytes before the text) and its tail (from the text's closing quote to the end).  A frame
 * that ends with a kept tail and starts with its head, with no quote between them but the text's
 * closing one, is that frame with another text: other_read takes it without walking its
 * keys (it has read and checked the whole frame first: the escapes and UTF-8 of the text).  The
 * set of a template is the hash of the frame's last TAIL_HASH bytes, where the runId and type are
 * in sorted order (so a tail shorter than that is not kept: the text would be in them); it shares
 * the cache with the kept heads (tail_len tells them apart).  A field in the tail is found from
 * the frame's end: its offset is FROM_END | the bytes from it to the end. */
#define TAIL_MIN 64
#define TAIL_HASH 32
#define FROM_END 0x8000u
CC_INLINE size_t tail_set(const cc_prefix_cache *c, const char *end) {
    return (size_t)(hash_fold(0, end - TAIL_HASH, TAIL_HASH) >> (64 - c->bits));
}

CC_INLINE const char *field_at(const char *p, uint16_t off, size_t e) {
    return off & FROM_END ? p + e - (off & ~FROM_END) : p + off;
}

/* A slot of set `set` for a head of n bytes (the older one, or an empty one), its old bytes freed:
 * NULL when out of memory for them. */
CC_INLINE cc_prefix *slot_take(cc_prefix_cache *c, size_t set, size_t n) {
    char *ext = NULL;
    if (n > CC_PREFIX_INLINE && !(ext = cc_malloc(n))) return NULL;
    cc_prefix *e = &c->slot[2 * set];
    if (e->len && (!e[1].len || c->older[set] == 1)) e++;
    c->older[set] = (uint8_t)(e == &c->slot[2 * set]);   /* the other one is older now */
    free(e->ext);
    e->ext = ext;
    return e;
}

/* After fast_delta_read read the frame at p whole (not from a kept head or template): keep it,
 * if it is a text-delta or a reasoning-delta with a `from`, whose head (and tail) hold no
 * backslash and fit.  As a head when its text is followed by `"}}` alone (always so in Mastra's
 * shape; in another, the text is then the last key of the payload and the payload the last of the
 * frame, so that any frame with this head, a valid text and that ending has the keys this one
 * has); else as a template. */
CC_INLINE void head_keep(cc_prefix_cache *c, const char *p, fast_delta_t *fd) {
    size_t k = (size_t)(fd->text - p), t = k + fd->text_len, n = fd->len - t, set;
    if (fd->head || (fd->type != CC_HOT_TEXT_DELTA && fd->type != CC_HOT_REASONING_DELTA) || fd->from == NULL ||
        memchr(p, '\\', k) != NULL)
        return;
    int head = n == 3 && same(p + t, "\"}}", 3);
    if (head ? k > CC_PREFIX_MAX || k < HEAD_MIN
             : k + n > CC_PREFIX_MAX || n < TAIL_HASH || fd->len < TAIL_MIN || memchr(p + t, '\\', n) != NULL)
        return;
    if (head) {
        set = head_set(c, p);
        n = 0;
    } else {
        set = tail_set(c, p + fd->len);
    }
    cc_prefix *e = slot_take(c, set, k + n);
    if (!e) return;
    memcpy(e->head, p, k < CC_PREFIX_INLINE ? k : CC_PREFIX_INLINE);
    if (e->ext) {
        memcpy(e->ext, p, k);
        memcpy(e->ext + k, p + t, n);
    } else {
        memcpy(e->head + k, p + t, n);
    }
    e->len = (uint16_t)k;
    e->tail_len = (uint16_t)n;
    e->type = (uint8_t)fd->type;
    e->extra = (uint8_t)fd->extra;
#define OFF(f) ((uint16_t)((size_t)((f) - p) < k ? (size_t)((f) - p) : (FROM_END | (fd->len - (size_t)((f) - p)))))
    e->run_off = OFF(fd->run);
    e->from_off = OFF(fd->from);
    e->key_off = OFF(fd->key);
    e->pm_off = fd->pm ? OFF(fd->pm) : 0;
#undef OFF
    e->run_len = (uint16_t)fd->run_len;
    e->from_len = (uint16_t)fd->from_len;
    e->key_len = (uint16_t)fd->key_len;
    e->pm_len = (uint16_t)fd->pm_len;
    e->run_idx = -1;
    e->route = 0;
    e->stamp = 0;
    fd->head = e;
}

/* The kept template the frame read into f is, or NULL. */
CC_INLINE cc_prefix *tail_find(cc_prefix_cache *c, const char *p, const fast_frame *f) {
    size_t e = f->e;
    if (e < TAIL_MIN) return NULL;
    cc_prefix *t = &c->slot[2 * tail_set(c, p + e)];
    for (int i = 0; i < 2; i++, t++) {
        size_t k = t->len, n = t->tail_len;
        if (!n || k + n > e) continue;
        const char *b = t->ext ? t->ext : t->head;
        if (same(b + k, p + e - n, n) && same(b, p, k) && quote_from(f, k) == e - n) return t;
    }
    return NULL;
}

/* *out for the frame at p (end: its length) read from the kept head or template e: its text is
 * text_len bytes after the head, nb its backslashes. */
CC_INLINE void kept_fill(fast_delta_t *out, cc_prefix *e, const char *p, size_t end, size_t text_len, int nb) {
    out->len = end;
    out->type = e->type;
    out->escaped = nb > 0;
    out->run = field_at(p, e->run_off, end);
    out->run_len = e->run_len;
    out->from = field_at(p, e->from_off, end);
    out->from_len = e->from_len;
    out->key = field_at(p, e->key_off, end);
    out->key_len = e->key_len;
    out->pm = e->pm_len ? field_at(p, e->pm_off, end) : NULL;
    out->pm_len = e->pm_len;
    out->name = NULL;                  /* (only text and reasoning deltas are kept) */
    out->name_len = 0;
    out->extra = e->extra;
    out->text = p + e->len;
    out->text_len = text_len;
    out->head = e;
}

/* The byte a one-character escape stands for, by the character after the backslash (0: not one;
 * \u takes the longer way). */
static const char fast_unescape[256] = {
    ['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b', ['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t',
};

/* Decode one UTF-8 sequence at p (n bytes available).  Returns its length and sets *cp, or 0 when
 * it is not well-formed (overlong, surrogate, > U+10FFFF, truncated).  (Here for the delta loop's
 * check of a text from its block's mask; scan.c's readers use it too.) */
CC_INLINE size_t utf8_one(const unsigned char *p, size_t n, uint32_t *cp) {
    unsigned char c = p[0];
    if (c < 0xC2) return 0;
    if (c < 0xE0) {
        if (n < 2 || (p[1] & 0xC0) != 0x80) return 0;
        *cp = ((uint32_t)(c & 0x1F) << 6) | (p[1] & 0x3F);
        return 2;
    }
    if (c < 0xF0) {
        if (n < 3 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80) return 0;
        uint32_t v = ((uint32_t)(c & 0x0F) << 12) | ((uint32_t)(p[1] & 0x3F) << 6) | (p[2] & 0x3F);
        if (v < 0x800 || (v >= 0xD800 && v <= 0xDFFF)) return 0;
        *cp = v;
        return 3;
    }
    if (c < 0xF5) {
        if (n < 4 || (p[1] & 0xC0) != 0x80 || (p[2] & 0xC0) != 0x80 || (p[3] & 0xC0) != 0x80) return 0;
        uint32_t v = ((uint32_t)(c & 0x07) << 18) | ((uint32_t)(p[1] & 0x3F) << 12) |
                     ((uint32_t)(p[2] & 0x3F) << 6) | (p[3] & 0x3F);
        if (v < 0x10000 || v > 0x10FFFF) return 0;
        *cp = v;
        return 4;
    }
    return 0;
}

/* q[0..n), n < 64, whose bytes of 0x80 and over are the bits of `high` (bit t: q[t]): 1 when it is
 * well-formed UTF-8, as cc_utf8_valid says.  A delta's text is a few words with a character or two
 * past ASCII: each is decoded where the mask says it starts (utf8_one), with no call and no look at
 * the ASCII bytes (the call to cc_utf8_valid was about 90 instructions a delta). */
CC_INLINE int utf8_valid_masked(const unsigned char *q, size_t n, uint64_t high) {
    uint32_t cp;
    while (high) {
        size_t t = ctz64(high), l = utf8_one(q + t, n - t, &cp);
        if (!l) return 0;
        high &= ~(((1ull << l) - 1) << t);          /* (t + l <= n < 64) */
    }
    return 1;
}

/* kept_plain's walk of the masks m of the bytes after the head (p + k on): the text's closing
 * quote at j <= last, past one-character escapes only (their backslashes into *esc), then `"}}`
 * and the separator (CRLF for LF, its LF at most at last + 4).  j, or (size_t)-1. */
CC_INLINE size_t kept_walk(const fast_block *m, const char *p, size_t k, char sep, size_t last, uint64_t *esc) {
    uint64_t stop = m->quote | m->bslash | m->ctl;
    size_t j;
    *esc = 0;
    for (;;) {
        j = stop ? ctz64(stop) : 64;
        if (j > last) return (size_t)-1;
        if (!(m->bslash >> j & 1)) break;
        if (!fast_unescape[(unsigned char)p[k + j + 1]]) return (size_t)-1;
        *esc |= 1ull << j;
        stop &= ~0ull << (j + 2);          /* (the escaped character is no quote, backslash or end) */
    }
    if (!(m->quote >> j & 1) || !same(p + k + j, "\"}}", 3)) return (size_t)-1;
    char c = p[k + j + 3];
    if (c != sep && !(sep == '\n' && c == '\r' && p[k + j + 4] == '\n')) return (size_t)-1;
    if (!utf8_valid_masked((const unsigned char *)p + k, j, m->high & ((1ull << j) - 1))) return (size_t)-1;
    return j;
}

/* The usual frame after a kept head e (head_find's): its text ends, with `"}}` and the separator
 * (CRLF for LF), within the 64 bytes after the head, and its escapes are one-character ones
 * (\n, \", \\...).  One block's masks say so (with AVX2, the first 32 bytes' first: most texts
 * are a word or two); the text's non-ASCII bytes are checked as read_frame checks them.  The
 * text's length as written, with *len the frame's (p[*len] is its separator) and *esc a bit for
 * each escape's backslash (0: none), or (size_t)-1: read it with kept_read, which takes the same
 * frames, with the same spans, and the others too. */
CC_INLINE size_t kept_plain(const cc_prefix *e, const char *p, size_t avail, char sep, size_t *len, uint64_t *esc,
                            int avx2) {
    size_t k = e->len, j;
    fast_block m;
    if (avail - k < 64) return (size_t)-1;
#if FAST_HAVE_AVX2
    if (avx2) {
        /* (j <= 31: the masks cover the text and its closing quote; what follows is read from
         * the bytes, which the 64 are) */
        half_masks_avx2(p + k, &m);
        if ((j = kept_walk(&m, p, k, sep, 31, esc)) != (size_t)-1) {
            *len = k + j + 3;
            return j;
        }
        block_masks_avx2(p + k, &m);
    } else
#endif
        block_masks(p + k, &m);
    /* (j <= 59: the closing `"}}`, the separator and an LF after a CR are in the 64 bytes) */
    if ((j = kept_walk(&m, p, k, sep, 59, esc)) == (size_t)-1) return (size_t)-1;
    *len = k + j + 3;
    return j;
}

/* p[0..n) with the one-character escapes whose backslashes esc marks, decoded into dst: the bytes
 * written. */
CC_INLINE size_t unescape_simple(char *dst, const char *p, size_t n, uint64_t esc) {
    size_t w = 0, s = 0;
    for (; esc; esc &= esc - 1) {
        size_t x = ctz64(esc);
        copy_small(dst + w, p + s, x - s);
        w += x - s;
        dst[w++] = fast_unescape[(unsigned char)p[x + 1]];
        s = x + 2;
    }
    copy_small(dst + w, p + s, n - s);
    return w + n - s;
}

/* fast_delta_read for a frame that starts with the kept head e (head_find's): 1 with *out
 * filled, 0 for "read it in full". */
CC_INLINE int kept_read(cc_prefix *e, const char *p, size_t avail, char sep, fast_delta_t *out, int avx2) {
    size_t k = e->len;
    fast_frame fr;
    int nb;
    if (!read_frame(p, k, avail, sep, &fr, &nb, avx2)) return 0;
    size_t b = 0;                      /* the text's closing quote */
    while (!fr.q[b])
        if (++b == fr.nblk) return 0;
    size_t t = k + (b << 6) + ctz64(fr.q[b]), end = fr.e;
    if (end - t != 3 || !same(p + t, "\"}}", 3)) return 0;
    kept_fill(out, e, p, end, t - k, nb);
    return 1;
}

/* fast_delta_read for a frame whose head is kept: 1 with *out filled, 0 for "read it in full". */
CC_INLINE int fast_delta_kept(cc_prefix_cache *c, const char *p, size_t avail, char sep, fast_delta_t *out,
                              int avx2) {
    cc_prefix *e = avail < HEAD_MIN ? NULL : head_find(c, p, avail, avx2);
    return e != NULL && kept_read(e, p, avail, sep, out, avx2);
}

/* The delta types, each with its closing quote, as they follow `"type":"`: 1 when p[0..n) starts
 * with one of them. */
CC_INLINE int delta_type_at(const char *p, size_t n) {
    return (n >= 11 && same(p, "text-delta\"", 11)) || (n >= 16 && same(p, "reasoning-delta\"", 16)) ||
           (n >= 16 && same(p, "tool-call-delta\"", 16));
}

/* The keys of a delta frame, as the general path's scanner (cc_scan_hot) knows them, and its
 * payload's providerMetadata (as isa_template reads it): a bit each in `seen`, with the span of
 * each value. */
enum { OK_TYPE, OK_RUN, OK_FROM, OK_PAYLOAD, OK_ID, OK_TEXT, OK_ARGS, OK_CALL, OK_NAME, OK_PM, OK_COUNT };
enum { OK_REFUSE = -2, OK_UNKNOWN = -1 };
typedef struct other_keys {
    unsigned seen;
    int extra;                         /* keys skipped as unknown */
    size_t s[OK_COUNT], n[OK_COUNT];
} other_keys;

/* A key of the frame (top) or of its payload, as written: its slot; OK_REFUSE for one the delta
 * chunks' schema declares that this reader does not read (metadata: the general path decodes and
 * checks it), OK_UNKNOWN for one it does not declare (ignored by the decoder, and by accumulation;
 * unless it holds an escape, which may decode to a key this reader knows). */
CC_INLINE int other_key(const char *k, size_t n, int top) {
    if (top) {
        if (n == 4) return same(k, "type", 4) ? OK_TYPE : same(k, "from", 4) ? OK_FROM : OK_UNKNOWN;
        if (n == 5) return same(k, "runId", 5) ? OK_RUN : OK_UNKNOWN;
        if (n == 7) return same(k, "payload", 7) ? OK_PAYLOAD : OK_UNKNOWN;
        if (n == 8) return same(k, "metadata", 8) ? OK_REFUSE : OK_UNKNOWN;
        return OK_UNKNOWN;
    }
    if (n == 2) return same(k, "id", 2) ? OK_ID : OK_UNKNOWN;
    if (n == 4) return same(k, "text", 4) ? OK_TEXT : OK_UNKNOWN;
    if (n == 8) return same(k, "toolName", 8) ? OK_NAME : OK_UNKNOWN;
    if (n == 10) return same(k, "toolCallId", 10) ? OK_CALL : OK_UNKNOWN;
    if (n == 13) return same(k, "argsTextDelta", 13) ? OK_ARGS : OK_UNKNOWN;
    if (n == 16) return same(k, "providerMetadata", 16) ? OK_PM : OK_UNKNOWN;
    return OK_UNKNOWN;
}

CC_INLINE size_t spaces(const char *p, size_t x, size_t e) {
    while (x < e && p[x] == ' ') x++;
    return x;
}

/* The object at p[x] == '{' of a frame read by read_frame (its strings' quotes known, its escapes
 * and UTF-8 checked), as cc_scan_hot's scan_object reads it -- keys it knows once each, string
 * values, the frame's payload an object of them; white space is spaces (any other is a control
 * byte, which ended the frame) -- but for the payload's providerMetadata, an object, and the keys
 * that other_key calls unknown, any value: both checked as msgspec would check them
 * (cc_skip_value).  The offset past its '}', or 0. */
static size_t other_object(const fast_frame *f, size_t x, int top, other_keys *k) {
    const char *p = f->p;
    size_t e = f->e, q;
    x = spaces(p, x + 1, e);
    if (x < e && p[x] == '}') return x + 1;
    for (;;) {
        if (x >= e || p[x] != '"' || !(q = quote_from(f, x + 1))) return 0;
        int slot = other_key(p + x + 1, q - x - 1, top);
        if (slot == OK_REFUSE || (slot >= 0 && (k->seen >> slot & 1))) return 0;   /* (a duplicate) */
        /* an escaped key may decode to one of those ("te\u0078t"): the decoder's to read */
        if (slot == OK_UNKNOWN && memchr(p + x + 1, '\\', q - x - 1) != NULL) return 0;
        if (slot >= 0) k->seen |= 1u << slot;
        x = spaces(p, q + 1, e);
        if (x >= e || p[x] != ':') return 0;
        x = spaces(p, x + 1, e);
        if (x >= e) return 0;
        if (slot == OK_UNKNOWN || slot == OK_PM) {
            size_t l = slot == OK_PM ? cc_skip_object(p + x, e - x) : cc_skip_value(p + x, e - x);
            if (!l) return 0;
            if (slot == OK_PM) {
                k->s[OK_PM] = x;
                k->n[OK_PM] = l;
            } else {
                k->extra = 1;
            }
            x += l;
        } else if (slot == OK_PAYLOAD) {
            if (p[x] != '{' || !(x = other_object(f, x, 0, k))) return 0;
        } else {
            if (p[x] != '"' || !(q = quote_from(f, x + 1))) return 0;
            if (slot == OK_TYPE && !delta_type_at(p + x + 1, e - x - 1)) return 0;   /* (not a delta: done) */
            k->s[slot] = x + 1;
            k->n[slot] = q - x - 1;
            x = q + 1;
        }
        x = spaces(p, x, e);
        if (x >= e) return 0;
        if (p[x] == '}') return x + 1;
        if (p[x] != ',') return 0;
        x = spaces(p, x + 1, e);
    }
}

/* A delta frame in a shape other than Mastra's -- keys in another order, spaces between the
 * tokens (a log written again by Python's json.dumps, with sort_keys or its default ", " and
 * ": "), keys its schema does not know (a log's timestamp, a proxy's tag) -- read into *f (nb
 * backslashes): a kept template, else walked as the general path's scanner, cc_scan_hot, walks it
 * (the unknown keys' values checked as msgspec would check them).  So it is taken only when that
 * path would take it as a delta, with the same spans (a delta without a runId, white space around
 * the object, a metadata key or a providerMetadata that is no object are left to it). */
CC_INLINE int other_read(cc_prefix_cache *c, const char *p, const fast_frame *f, int nb, fast_delta_t *out) {
    other_keys k;
    cc_prefix *kt;
    if ((kt = tail_find(c, p, f)) != NULL) {  /* a kept template: its keys are known */
        kept_fill(out, kt, p, f->e, f->e - kt->tail_len - kt->len, nb);
        return 1;
    }
    k.seen = 0;
    k.extra = 0;
    if (other_object(f, 0, 1, &k) != f->e) return 0;
    const unsigned need = 1u << OK_TYPE | 1u << OK_RUN | 1u << OK_PAYLOAD;
    const unsigned text_keys = 1u << OK_ID | 1u << OK_TEXT, tool_keys = 1u << OK_ARGS | 1u << OK_CALL;
    unsigned payload = k.seen & ~(need | 1u << OK_FROM), pm = k.seen & 1u << OK_PM;
    const char *t = p + k.s[OK_TYPE];
    size_t tn = k.n[OK_TYPE];
    if ((k.seen & need) != need) return 0;
    if (tn == 10 && same(t, "text-delta", 10) && (payload | pm) == (text_keys | pm)) {
        out->type = CC_HOT_TEXT_DELTA;
    } else if (tn == 15 && same(t, "reasoning-delta", 15) && (payload | pm) == (text_keys | pm)) {
        out->type = CC_HOT_REASONING_DELTA;
    } else if (tn == 15 && same(t, "tool-call-delta", 15) &&
               ((payload | pm) == (tool_keys | pm) || (payload | pm) == (tool_keys | pm | 1u << OK_NAME))) {
        out->type = CC_HOT_TOOL_CALL_DELTA;
    } else {
        return 0;
    }
    int tool = out->type == CC_HOT_TOOL_CALL_DELTA, key = tool ? OK_CALL : OK_ID, text = tool ? OK_ARGS : OK_TEXT;
    out->len = f->e;
    out->escaped = nb > 0;
    out->run = p + k.s[OK_RUN];
    out->run_len = k.n[OK_RUN];
    out->from = (k.seen >> OK_FROM & 1) ? p + k.s[OK_FROM] : NULL;
    out->from_len = (k.seen >> OK_FROM & 1) ? k.n[OK_FROM] : 0;
    out->key = p + k.s[key];
    out->key_len = k.n[key];
    out->text = p + k.s[text];
    out->text_len = k.n[text];
    /* (a tool call's providerMetadata, checked, changes nothing accumulation keeps) */
    out->pm = pm && !tool ? p + k.s[OK_PM] : NULL;
    out->pm_len = pm && !tool ? k.n[OK_PM] : 0;
    out->name = k.seen >> OK_NAME & 1 ? p + k.s[OK_NAME] : NULL;
    out->name_len = k.seen >> OK_NAME & 1 ? k.n[OK_NAME] : 0;
    out->extra = k.extra || (pm && tool);
    out->head = NULL;
    return 1;
}

/* A delta frame at p (avail bytes) ended by the control byte sep, or in Mastra's exact shape one
 * of the FAST_* frames: 1 with *out filled, or 0 for "not taken".  Read once (read_frame), then
 * matched with Mastra's template, else read as another shape (other_read).  A frame whose type
 * comes first and is none of those is refused before anything is read (a finish frame may be
 * megabytes).  avx2: read the blocks with block_masks_avx2 (a constant in each caller; only where
 * cc_fast_avx2() is 1). */
CC_INLINE int fast_delta_read(cc_prefix_cache *c, const char *p, size_t avail, char sep, fast_delta_t *out,
                              int avx2) {
    fast_frame fr;
    int nb, mastra;
    if (avail < 40 || p[0] != '{') return 0;
    if ((mastra = same(p, "{\"type\":\"", 9))) {
        if (p[9] != 't' && p[9] != 'r' && !same(p + 9, "start\",", 7)) return 0;
    } else if (same(p + 1, "\"type\":", 7)) {
        size_t x = spaces(p, 8, 16);
        if (p[x] != '"' || !delta_type_at(p + x + 1, avail - x - 1)) return 0;
    }
    fr.p = p;
    if (!read_frame(p, 0, avail, sep, &fr, &nb, avx2)) return 0;
    if (mastra) {
        if (isa_template(p, &fr, nb, out)) return 1;
        if (!delta_type_at(p + 9, avail - 9)) return 0;     /* (a text-start, a start...: that shape only) */
    }
    return other_read(c, p, &fr, nb, out);
}

/* SSE: where the JSON of the event at p starts, counted from p: the `{` that begins the value of
 * its `data:` line (after one space or none, as the standard reads a field), past up to
 * SSE_MAX_FIELDS lines before it of other fields (`id:`, `event:`, `retry:`, `: comment`), which
 * the general path ignores too.  0 when the event does not start so: the general path reads it
 * (a blank line, a line of SSE_FIELD_MAX bytes or more, one that starts with `data` but is not
 * `data:`, or a `data:` line whose value is no object). */
#define SSE_MAX_FIELDS 4
#define SSE_FIELD_MAX 256
CC_INLINE size_t sse_json_at(const char *p, size_t avail) {
    size_t x = 0;
    for (int fields = 0;; fields++) {
        if (avail - x > 6 && same(p + x, "data:", 5)) {
            x += p[x + 5] == ' ' ? 6 : 5;
            return p[x] == '{' ? x : 0;
        }
        if (fields == SSE_MAX_FIELDS || avail - x < 6 || p[x] == '\n' || p[x] == '\r' || same(p + x, "data", 4))
            return 0;
        const char *nl = memchr(p + x, '\n', avail - x < SSE_FIELD_MAX ? avail - x : SSE_FIELD_MAX);
        if (nl == NULL) return 0;
        x = (size_t)(nl - p) + 1;
    }
}

/* Where the frame after the one read into fd starts, counted from p, the start of its line (its
 * JSON starts at p + skip: for SSE, sse_json_at's, else 0): past its line end (the
 * separator; LF or CRLF, which read_frame checked), and for SSE past the blank line that ends the
 * event (LF or CRLF).  0 when that blank line is not within the avail bytes at p. */
CC_INLINE size_t frame_next(const char *p, size_t skip, size_t avail, const fast_delta_t *fd) {
    size_t next = skip + fd->len;
    next += p[next] == '\r' ? 2 : 1;
    if (skip) {
        if (next + 1 < avail && p[next] == '\r' && p[next + 1] == '\n') return next + 2;
        if (next >= avail || p[next] != '\n') return 0;
        next++;
    }
    return next;
}

/* A loop over frames that calls fast_delta_read(..., avx2) is instantiated twice: NAME_sse2 with
 * avx2 = 0, and NAME_avx2 compiled for AVX2 with avx2 = 1, so that the masks inline into it. */
#if FAST_HAVE_AVX2
#define FAST_AVX2_FN __attribute__((target("avx2")))
#else
#define FAST_AVX2_FN
#endif

#endif
