/* The hot-chunk scanner (see scan.h).
 *
 * Accepted shape, with any JSON white space between tokens:
 *   {"type": S, "runId": S, "from": S, "payload": {K: S, ...}}   in any key order
 * where S are strings and the payload keys are exactly those of the chunk type:
 *   text-delta / reasoning-delta: id, text
 *   tool-call-delta:              argsTextDelta, toolCallId, toolName (optional)
 * runId and from are optional (real streams omit them on some chunks).  Every string is checked
 * for valid UTF-8 and valid escapes; a lone surrogate escape, a raw control character, a duplicate
 * key or anything else unexpected makes the frame CC_NOT_HOT so the general decoder (and its error
 * reporting) handles it.  The scanner never rejects what the general decoder would accept
 * differently: it only says "mine" or "not mine".
 */
#include <stddef.h>
#include <string.h>
#include "chunkcodec/scan.h"
#include "chunkcodec/accum.h"   /* cc_fast_avx2 */
#include "fast_delta.h"          /* block_masks */

/* 1 for bytes that end the fast path inside a string: '"', '\\', controls, non-ASCII. */
static const unsigned char special[256] = {
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
    1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1, 1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,
};

/* 1 for the bytes that make a one-character escape after a backslash: " \\ / b f n r t. */
static const unsigned char simple_escape[256] = {
    ['"'] = 1, ['\\'] = 1, ['/'] = 1, ['b'] = 1, ['f'] = 1, ['n'] = 1, ['r'] = 1, ['t'] = 1,
};

/* Skip string bytes up to the next quote, backslash or control byte, and, when stop_high is set,
 * non-ASCII byte: 16 at a time where SSE2 is there (every x86-64), else one by one.  Returns the
 * offset of that byte, or n.  (Always inlined with a constant stop_high, so each caller gets its
 * own loop without the test.) */
#if defined(__GNUC__) || defined(__clang__)
#define SKIP_INLINE static inline __attribute__((always_inline))
#else
#define SKIP_INLINE static inline
#endif
#if defined(__SSE2__)
#include <emmintrin.h>
#endif
SKIP_INLINE size_t skip_string_bytes(const unsigned char *p, size_t i, size_t n, int stop_high) {
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
    while (i + 16 <= n) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash));
        m = _mm_or_si128(m, _mm_cmpeq_epi8(_mm_min_epu8(v, ctl), v));     /* v <= 0x1F */
        unsigned mask = (unsigned)_mm_movemask_epi8(m);
        if (stop_high) mask |= (unsigned)_mm_movemask_epi8(v);            /* v >= 0x80 */
        if (mask) return i + (size_t)__builtin_ctz(mask);
        i += 16;
    }
#endif
    while (i < n && !(special[p[i]] && (stop_high || p[i] < 0x80))) i++;
    return i;
}

/* The hot scanner's strings: it decodes them, so it stops at non-ASCII bytes too. */
static size_t skip_plain(const unsigned char *p, size_t i, size_t n) {
    return skip_string_bytes(p, i, n, 1);
}

static int hexval(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

static int hex4(const unsigned char *p) {
    int a = hexval(p[0]), b = hexval(p[1]), c = hexval(p[2]), d = hexval(p[3]);
    if ((a | b | c | d) < 0) return -1;
    return (a << 12) | (b << 8) | (c << 4) | d;
}

/* Parse one escape at p (just past the backslash; n bytes available).  Returns bytes consumed
 * after the backslash and sets *cp, or 0 when invalid or a lone surrogate. */
static size_t escape_one(const unsigned char *p, size_t n, uint32_t *cp) {
    if (n < 1) return 0;
    switch (p[0]) {
    case '"': *cp = '"'; return 1;
    case '\\': *cp = '\\'; return 1;
    case '/': *cp = '/'; return 1;
    case 'b': *cp = '\b'; return 1;
    case 'f': *cp = '\f'; return 1;
    case 'n': *cp = '\n'; return 1;
    case 'r': *cp = '\r'; return 1;
    case 't': *cp = '\t'; return 1;
    case 'u': {
        if (n < 5) return 0;
        int u = hex4(p + 1);
        if (u < 0) return 0;
        if (u >= 0xDC00 && u <= 0xDFFF) return 0;           /* lone low surrogate */
        if (u >= 0xD800 && u <= 0xDBFF) {
            if (n < 11 || p[5] != '\\' || p[6] != 'u') return 0;
            int lo = hex4(p + 7);
            if (lo < 0xDC00 || lo > 0xDFFF) return 0;
            *cp = 0x10000 + (((uint32_t)u - 0xD800) << 10) + ((uint32_t)lo - 0xDC00);
            return 11;
        }
        *cp = (uint32_t)u;
        return 5;
    }
    default: return 0;
    }
}

/* ---- UTF-8 checked 32 bytes at a time, on CPUs with AVX2 ----------------------------------------
 * Every error of UTF-8 shows in a byte together with the one before it (the first two bytes of a
 * sequence), except a missing or extra continuation byte in third or fourth place.  So for each
 * byte, three 16-entry tables -- indexed by the high and low nibble of the byte before and the high
 * nibble of the byte itself -- give a bit for each kind of error the pair could be; their AND is
 * the kinds it is.  The kinds, and the nibbles that allow each:
 *
 *   U8_SHORT    a lead byte (C-F) then no continuation byte (0-7, C-F)
 *   U8_LONG     an ASCII byte (0-7) then a continuation byte (8-B)
 *   U8_OVER3    E0 then 80-9F (an overlong three-byte form)
 *   U8_LARGE    F4-FF then 90-BF (past U+10FFFF)
 *   U8_SURR     ED then A0-BF (a surrogate)
 *   U8_OVER2    C0 or C1 then anything (an overlong two-byte form)
 *   U8_F_8      F0 (overlong) or F5-FF (past U+10FFFF) then 80-8F
 *   U8_CONTS    a continuation byte then another: right only in third or fourth place
 *
 * A byte must be a continuation byte in third or fourth place when the byte two before it is E0 or
 * above, or the byte three before it F0 or above: exactly where U8_CONTS must be set, so XOR-ing
 * that bit with "must be" leaves zero where all is well.  Past the end, zero bytes: a sequence cut
 * short there is an error like any other. */
enum { U8_SHORT = 0x01, U8_LONG = 0x02, U8_OVER3 = 0x04, U8_LARGE = 0x08, U8_SURR = 0x10, U8_OVER2 = 0x20,
       U8_F_8 = 0x40, U8_CONTS = 0x80 };

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define SCAN_HAVE_AVX2 1
#include <immintrin.h>

#define U8_ROW(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p) \
    _mm256_setr_epi8(a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p, a, b, c, d, e, f, g, h, i, j, k, l, m, n, o, p)

/* The state carried from one block to the next: the block itself (its last three bytes are the
 * next block's "before") and the errors found so far. */
typedef struct u8_state { __m256i prev, err; } u8_state;

__attribute__((target("avx2"))) static inline void u8_block(u8_state *s, __m256i in) {
    const __m256i lo4 = _mm256_set1_epi8(0x0F);
    /* the bytes 1, 2 and 3 places before each byte of `in` */
    __m256i carry = _mm256_permute2x128_si256(s->prev, in, 0x21);
    __m256i prev1 = _mm256_alignr_epi8(in, carry, 15), prev2 = _mm256_alignr_epi8(in, carry, 14);
    __m256i prev3 = _mm256_alignr_epi8(in, carry, 13);
    const __m256i hi1_t = U8_ROW(
        U8_LONG, U8_LONG, U8_LONG, U8_LONG, U8_LONG, U8_LONG, U8_LONG, U8_LONG,      /* 0-7 */
        U8_CONTS, U8_CONTS, U8_CONTS, U8_CONTS,                                      /* 8-B */
        U8_SHORT | U8_OVER2, U8_SHORT, U8_SHORT | U8_OVER3 | U8_SURR,                /* C, D, E */
        U8_SHORT | U8_LARGE | U8_F_8);                                               /* F */
#define ANY (U8_SHORT | U8_LONG | U8_CONTS)
    const __m256i lo1_t = U8_ROW(
        ANY | U8_OVER3 | U8_OVER2 | U8_F_8, ANY | U8_OVER2, ANY, ANY,               /* 0-3 */
        ANY | U8_LARGE, ANY | U8_LARGE | U8_F_8, ANY | U8_LARGE | U8_F_8,            /* 4-6 */
        ANY | U8_LARGE | U8_F_8, ANY | U8_LARGE | U8_F_8, ANY | U8_LARGE | U8_F_8,    /* 7-9 */
        ANY | U8_LARGE | U8_F_8, ANY | U8_LARGE | U8_F_8, ANY | U8_LARGE | U8_F_8,    /* A-C */
        ANY | U8_LARGE | U8_F_8 | U8_SURR, ANY | U8_LARGE | U8_F_8, ANY | U8_LARGE | U8_F_8); /* D-F */
#undef ANY
#define ASC (U8_SHORT | U8_OVER2)
#define CONT (U8_LONG | U8_CONTS | U8_OVER2)
    const __m256i hi2_t = U8_ROW(
        ASC, ASC, ASC, ASC, ASC, ASC, ASC, ASC,                                      /* 0-7 */
        CONT | U8_OVER3 | U8_F_8, CONT | U8_OVER3 | U8_LARGE,                        /* 8, 9 */
        CONT | U8_LARGE | U8_SURR, CONT | U8_LARGE | U8_SURR,                        /* A, B */
        ASC, ASC, ASC, ASC);                                                         /* C-F */
#undef ASC
#undef CONT
    __m256i hi1 = _mm256_shuffle_epi8(hi1_t, _mm256_and_si256(_mm256_srli_epi16(prev1, 4), lo4));
    __m256i lo1 = _mm256_shuffle_epi8(lo1_t, _mm256_and_si256(prev1, lo4));
    __m256i hi2 = _mm256_shuffle_epi8(hi2_t, _mm256_and_si256(_mm256_srli_epi16(in, 4), lo4));
    __m256i kinds = _mm256_and_si256(_mm256_and_si256(hi1, lo1), hi2);
    /* 0x80 where the byte two before is E0 or above, or three before F0 or above */
    __m256i must = _mm256_or_si256(_mm256_subs_epu8(prev2, _mm256_set1_epi8((char)(0xE0 - 0x80))),
                                   _mm256_subs_epu8(prev3, _mm256_set1_epi8((char)(0xF0 - 0x80))));
    must = _mm256_and_si256(must, _mm256_set1_epi8((char)0x80));
    s->err = _mm256_or_si256(s->err, _mm256_xor_si256(kinds, must));
    s->prev = in;
}
#undef U8_ROW

__attribute__((target("avx2"))) static int utf8_valid_avx2(const unsigned char *p, size_t n) {
    u8_state s = {_mm256_setzero_si256(), _mm256_setzero_si256()};
    size_t i = 0;
    for (; i + 32 <= n; i += 32) {
        __m256i in = _mm256_loadu_si256((const __m256i *)(p + i));
        /* an ASCII block: nothing to check in it, but a sequence the block before left open */
        if (!_mm256_movemask_epi8(in) && !_mm256_movemask_epi8(s.prev)) {
            s.prev = in;
            continue;
        }
        u8_block(&s, in);
    }
    unsigned char tail[32] = {0};            /* the rest, then zero bytes past the end */
    memcpy(tail, p + i, n - i);
    u8_block(&s, _mm256_loadu_si256((const __m256i *)tail));
    return _mm256_testz_si256(s.err, s.err);
}
#else
#define SCAN_HAVE_AVX2 0
#endif

static int utf8_valid_scalar(const unsigned char *p, size_t n) {
    size_t i = 0;
    uint32_t cp;
    while (i < n) {
        if (i + 8 <= n) {                       /* eight ASCII bytes at a time */
            uint64_t w;
            memcpy(&w, p + i, 8);
            if (!(w & 0x8080808080808080ull)) { i += 8; continue; }
        }
        if (p[i] < 0x80) { i++; continue; }
        size_t l = utf8_one(p + i, n - i, &cp);
        if (!l) return 0;
        i += l;
    }
    return 1;
}

int cc_utf8_valid(const char *buf, size_t n) {
#if SCAN_HAVE_AVX2
    if (n >= 8 && cc_fast_avx2()) return utf8_valid_avx2((const unsigned char *)buf, n);
#endif
    return utf8_valid_scalar((const unsigned char *)buf, n);
}

/* ---- Text out of the accumulator's buffers (scan.h) ------------------------------------------ */

#if SCAN_HAVE_AVX2
/* cc_utf8_measure's count over the whole 64-byte blocks of p[0..n): their continuation bytes
 * (0x80-0xBF) added to *cont, their largest byte to *top; returns the bytes looked at */
__attribute__((target("avx2,popcnt"))) static size_t measure_avx2(const unsigned char *p, size_t n, size_t *cont,
                                                                  unsigned *top) {
    const __m256i lead = _mm256_set1_epi8((char)0xC0);        /* 0x80-0xBF are below it, signed */
    __m256i mx = _mm256_setzero_si256();
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m256i a = _mm256_loadu_si256((const __m256i *)(p + i)), b = _mm256_loadu_si256((const __m256i *)(p + i + 32));
        if (!_mm256_movemask_epi8(_mm256_or_si256(a, b))) continue;     /* ASCII: nothing to count */
        mx = _mm256_max_epu8(mx, _mm256_max_epu8(a, b));
        uint64_t m = (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(lead, a)) |
                     (uint64_t)(uint32_t)_mm256_movemask_epi8(_mm256_cmpgt_epi8(lead, b)) << 32;
        *cont += (size_t)__builtin_popcountll(m);
    }
    unsigned char lanes[32];
    _mm256_storeu_si256((__m256i *)lanes, mx);
    for (int k = 0; k < 32; k++) *top = lanes[k] > *top ? lanes[k] : *top;
    return i;
}
#endif

static inline int utf8_measure(const char *buf, size_t n, size_t *ncp, uint32_t *maxchar, int check) {
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0, cont = 0;             /* continuation bytes: every other byte starts a code point */
    unsigned top = 0;                   /* the largest byte */
#if SCAN_HAVE_AVX2
    if (n >= 64 && cc_fast_avx2()) i = measure_avx2(p, n, &cont, &top);
#endif
#if defined(__SSE2__)
    __m128i mx = _mm_setzero_si128();
    const __m128i lead = _mm_set1_epi8((char)0xC0);
    for (; i + 16 <= n; i += 16) {
        __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
        mx = _mm_max_epu8(mx, v);
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmplt_epi8(v, lead));
        if (m) cont += (size_t)__builtin_popcount(m);
    }
    unsigned char lanes[16];
    _mm_storeu_si128((__m128i *)lanes, mx);
    for (int k = 0; k < 16; k++) top = lanes[k] > top ? lanes[k] : top;
#endif
    for (; i < n; i++) {
        top = p[i] > top ? p[i] : top;
        cont += (p[i] & 0xC0) == 0x80;
    }
    if (check && top >= 0x80 && !cc_utf8_valid(buf, n)) return 0;
    /* the widest lead byte says the widest code point (well-formed UTF-8 has no overlongs): F0-F4
     * one past U+FFFF, E0-EF and C4-DF one past U+FF, C2-C3 one in U+80-U+FF */
    *maxchar = top < 0x80 ? 0x7F : top < 0xC4 ? 0xFF : top < 0xF0 ? 0xFFFF : 0x10FFFF;
    *ncp = n - cont;
    return 1;
}

int cc_utf8_measure(const char *buf, size_t n, size_t *ncp, uint32_t *maxchar) {
    return utf8_measure(buf, n, ncp, maxchar, 1);
}

int cc_utf8_measure_known(const char *buf, size_t n, size_t *ncp, uint32_t *maxchar) {
    return utf8_measure(buf, n, ncp, maxchar, 0);
}

/* One code point of well-formed UTF-8 at p[*i], *i moved past it.  (A branchless decode, by
 * tables of the sequence's length, was slower on a run's text: 951 ns against 554.) */
SKIP_INLINE uint32_t utf8_next(const unsigned char *p, size_t *i) {
    const unsigned char *s = p + *i;
    unsigned c = s[0];
    if (c < 0x80) { *i += 1; return c; }
    if (c < 0xE0) { *i += 2; return (c & 0x1Fu) << 6 | (s[1] & 0x3Fu); }
    if (c < 0xF0) { *i += 3; return (c & 0x0Fu) << 12 | (s[1] & 0x3Fu) << 6 | (s[2] & 0x3Fu); }
    *i += 4;
    return (c & 0x07u) << 18 | (s[1] & 0x3Fu) << 12 | (s[2] & 0x3Fu) << 6 | (s[3] & 0x3Fu);
}

SKIP_INLINE void put_unit(void *dst, size_t w, int kind, uint32_t cp) {
    if (kind == 1) ((uint8_t *)dst)[w] = (uint8_t)cp;
    else if (kind == 2) ((uint16_t *)dst)[w] = (uint16_t)cp;
    else ((uint32_t *)dst)[w] = cp;
}

#if defined(__SSE2__)
/* 16 ASCII bytes v as code units dst[w..w+16) of kind bytes */
SKIP_INLINE void put_ascii16(void *dst, size_t w, int kind, __m128i v) {
    const __m128i zero = _mm_setzero_si128();
    if (kind == 1) {
        _mm_storeu_si128((__m128i *)((uint8_t *)dst + w), v);
    } else if (kind == 2) {
        uint16_t *o = (uint16_t *)dst + w;
        _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi8(v, zero));
        _mm_storeu_si128((__m128i *)(o + 8), _mm_unpackhi_epi8(v, zero));
    } else {
        uint32_t *o = (uint32_t *)dst + w;
        __m128i lo = _mm_unpacklo_epi8(v, zero), hi = _mm_unpackhi_epi8(v, zero);
        _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(lo, zero));
        _mm_storeu_si128((__m128i *)(o + 4), _mm_unpackhi_epi16(lo, zero));
        _mm_storeu_si128((__m128i *)(o + 8), _mm_unpacklo_epi16(hi, zero));
        _mm_storeu_si128((__m128i *)(o + 12), _mm_unpackhi_epi16(hi, zero));
    }
}
#endif

/* (always inlined with a constant kind: a loop per kind) */
SKIP_INLINE void widen(const unsigned char *p, size_t n, int kind, size_t ncp, void *dst) {
    size_t i = 0, w = 0;
    while (i < n) {
#if defined(__SSE2__)
        if (i + 16 <= n) {
            /* the ASCII bytes before the next other one, 16 at a time; a store of 16 units that
             * runs past them only where the text has 16 more (w + 16 <= ncp): the units past them
             * are written again, in order, after */
            __m128i v = _mm_loadu_si128((const __m128i *)(p + i));
            unsigned m = (unsigned)_mm_movemask_epi8(v);
            if (!m) {
                put_ascii16(dst, w, kind, v);
                i += 16, w += 16;
                continue;
            }
            size_t k = (size_t)__builtin_ctz(m);
            if (k && w + 16 <= ncp) {
                put_ascii16(dst, w, kind, v);
                i += k, w += k;
            }
        }
#endif
        put_unit(dst, w++, kind, utf8_next(p, &i));
    }
    (void)ncp;
}

void cc_utf8_widen(const char *buf, size_t n, int kind, size_t ncp, void *dst) {
    const unsigned char *p = (const unsigned char *)buf;
    if (kind == 1 && ncp == n) memcpy(dst, p, n);     /* ASCII: the bytes are the code units */
    else if (kind == 1) widen(p, n, 1, ncp, dst);
    else if (kind == 2) widen(p, n, 2, ncp, dst);
    else widen(p, n, 4, ncp, dst);
}

size_t cc_escape_len(const char *p, size_t n) {
    uint32_t cp;
    return escape_one((const unsigned char *)p, n, &cp);
}

/* Is the escape at p (after the backslash, l bytes, decoding to cp) the one JSON.stringify writes? */
static int canonical_escape(const unsigned char *p, size_t l, uint32_t cp) {
    if (l == 1) return p[0] != '/';
    if (l != 5 || cp >= 0x20 || cp == '\b' || cp == '\f' || cp == '\n' || cp == '\r' || cp == '\t')
        return 0;
    /* \u00xx with lowercase hex */
    return p[1] == '0' && p[2] == '0' && !(p[3] >= 'A' && p[3] <= 'F') && !(p[4] >= 'A' && p[4] <= 'F');
}

/* Scan a string starting just after its opening quote.  On success returns the offset of the
 * closing quote (relative to p) and fills s. */
static cc_status scan_string(const unsigned char *p, size_t n, size_t *close, cc_str_t *s) {
    size_t i = 0, ncp = 0;
    uint32_t maxc = 0;
    int flags = 0;
    for (;;) {
        size_t run = i;
        i = skip_plain(p, i, n);
        ncp += i - run;
        /* PyUnicode_New only needs an upper bound within the right kind: 0x7F for ASCII. */
        if (i > run && maxc < 0x7F) maxc = 0x7F;
        if (i >= n) return CC_NOT_HOT;
        unsigned char c = p[i];
        if (c == '"') break;
        uint32_t cp;
        size_t l;
        if (c == '\\') {
            l = escape_one(p + i + 1, n - i - 1, &cp);
            if (!l) return CC_NOT_HOT;
            if (!canonical_escape(p + i + 1, l, cp)) flags |= CC_STR_NONCANON;
            i += 1 + l;
            flags |= CC_STR_ESCAPED;
        } else if (c < 0x20) {
            return CC_NOT_HOT;
        } else {
            l = utf8_one(p + i, n - i, &cp);
            if (!l) return CC_NOT_HOT;
            i += l;
        }
        ncp++;
        if (cp > maxc) maxc = cp;
    }
    s->p = (const char *)p;
    s->len = i;
    s->ncp = ncp;
    s->maxchar = maxc;
    s->flags = flags;
    *close = i;
    return CC_OK;
}

cc_status cc_scan_str(const char *p, size_t n, size_t *close, cc_str_t *s) {
    return scan_string((const unsigned char *)p, n, close, s);
}

void cc_str_decode(const cc_str_t *s, int kind, void *dst) {
    const unsigned char *p = (const unsigned char *)s->p;
    size_t n = s->len, i = 0, w = 0;
    if (kind == 1 && !(s->flags & CC_STR_ESCAPED) && s->maxchar < 0x80) {
        memcpy(dst, p, n);
        return;
    }
    while (i < n) {
        unsigned char c = p[i];
        uint32_t cp = 0;
        if (c < 0x80 && c != '\\') {
            cp = c;
            i++;
        } else if (c == '\\') {
            i += 1 + escape_one(p + i + 1, n - i - 1, &cp);
        } else {
            i += utf8_one(p + i, n - i, &cp);
        }
        if (kind == 1) ((uint8_t *)dst)[w++] = (uint8_t)cp;
        else if (kind == 2) ((uint16_t *)dst)[w++] = (uint16_t)cp;
        else ((uint32_t *)dst)[w++] = cp;
    }
}

size_t cc_str_decode_utf8(const cc_str_t *s, char *dst) {
    const unsigned char *p = (const unsigned char *)s->p;
    size_t n = s->len, i = 0, w = 0;
    if (!(s->flags & CC_STR_ESCAPED)) {
        memcpy(dst, p, n);
        return n;
    }
    while (i < n) {
        const unsigned char *bs = memchr(p + i, '\\', n - i);
        size_t run = bs ? (size_t)(bs - (p + i)) : n - i;
        memcpy(dst + w, p + i, run);
        w += run;
        i += run;
        if (i >= n) break;
        uint32_t cp = 0;
        i += 1 + escape_one(p + i + 1, n - i - 1, &cp);   /* the scanner validated it */
        unsigned char *o = (unsigned char *)dst + w;
        if (cp < 0x80) { o[0] = (unsigned char)cp; w += 1; }
        else if (cp < 0x800) { o[0] = 0xC0 | (cp >> 6); o[1] = 0x80 | (cp & 0x3F); w += 2; }
        else if (cp < 0x10000) {
            o[0] = 0xE0 | (cp >> 12); o[1] = 0x80 | ((cp >> 6) & 0x3F); o[2] = 0x80 | (cp & 0x3F); w += 3;
        } else {
            o[0] = 0xF0 | (cp >> 18); o[1] = 0x80 | ((cp >> 12) & 0x3F);
            o[2] = 0x80 | ((cp >> 6) & 0x3F); o[3] = 0x80 | (cp & 0x3F); w += 4;
        }
    }
    return w;
}

static inline size_t skip_ws(const unsigned char *p, size_t i, size_t n, int *canon) {
    /* compact JSON has no white space: one test for the common case */
    if (i < n && p[i] > ' ') return i;
    size_t j = i;
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\n' || p[i] == '\r')) i++;
    if (i != j) *canon = 0;
    return i;
}

/* Position of each key in Mastra's order (type, runId, from, payload; id, text; argsTextDelta,
 * toolCallId, toolName): keys in increasing rank are in canonical order. */
static const int key_rank[CC_F_COUNT + 2] = {
    [CC_F_RUN_ID] = 1, [CC_F_FROM] = 2, [CC_F_ID] = 0, [CC_F_TEXT] = 1, [CC_F_ARGS_TEXT_DELTA] = 0,
    [CC_F_TOOL_CALL_ID] = 1, [CC_F_TOOL_NAME] = 2, [CC_F_COUNT] = 0, [CC_F_COUNT + 1] = 3,
};

#define KEY_IS(k, kl, lit) ((kl) == sizeof(lit) - 1 && memcmp((k), (lit), sizeof(lit) - 1) == 0)

/* Parse `{ "key": "value", ... }` of plain keys and string values at p[i] == '{'.  For each key,
 * map() gives a field slot or -1 (unknown: not hot).  Returns the offset past '}' or 0. */
typedef int (*key_map_fn)(const char *k, size_t kl);

static int top_key(const char *k, size_t kl) {
    if (KEY_IS(k, kl, "type")) return CC_F_COUNT;          /* special slot: the type */
    if (KEY_IS(k, kl, "runId")) return CC_F_RUN_ID;
    if (KEY_IS(k, kl, "from")) return CC_F_FROM;
    if (KEY_IS(k, kl, "payload")) return CC_F_COUNT + 1;   /* special slot: the payload object */
    return -1;
}

static int payload_key(const char *k, size_t kl) {
    if (KEY_IS(k, kl, "id")) return CC_F_ID;
    if (KEY_IS(k, kl, "text")) return CC_F_TEXT;
    if (KEY_IS(k, kl, "argsTextDelta")) return CC_F_ARGS_TEXT_DELTA;
    if (KEY_IS(k, kl, "toolCallId")) return CC_F_TOOL_CALL_ID;
    if (KEY_IS(k, kl, "toolName")) return CC_F_TOOL_NAME;
    return -1;
}

/* Scan a key (plain, unescaped) at p[i] == '"'.  Returns offset past the closing quote or 0. */
static inline size_t scan_key(const unsigned char *p, size_t i, size_t n, const char **k, size_t *kl) {
    size_t j = skip_plain(p, i + 1, n);
    if (j >= n || p[j] != '"') return 0;    /* an escape, a control or non-ASCII: not a key we know */
    *k = (const char *)p + i + 1;
    *kl = j - i - 1;
    return j + 1;
}

static size_t scan_object(const unsigned char *p, size_t i, size_t n, int top, cc_hot_t *out,
                          cc_str_t *type, unsigned *seen) {
    int last_rank = -1;
    i = skip_ws(p, i + 1, n, &out->canonical);
    if (i < n && p[i] == '}') return i + 1;
    for (;;) {
        const char *k;
        size_t kl;
        if (i >= n || p[i] != '"') return 0;
        i = scan_key(p, i, n, &k, &kl);
        if (!i) return 0;
        int slot = top ? top_key(k, kl) : payload_key(k, kl);
        if (slot < 0) return 0;
        unsigned bit = 1u << slot;
        if (*seen & bit) return 0;                 /* duplicate key */
        *seen |= bit;
        if (key_rank[slot] <= last_rank) out->canonical = 0;
        last_rank = key_rank[slot];
        i = skip_ws(p, i, n, &out->canonical);
        if (i >= n || p[i] != ':') return 0;
        i = skip_ws(p, i + 1, n, &out->canonical);
        if (i >= n) return 0;
        if (top && slot == CC_F_COUNT + 1) {
            if (p[i] != '{') return 0;
            i = scan_object(p, i, n, 0, out, type, seen);
            if (!i) return 0;
        } else {
            if (p[i] != '"') return 0;
            size_t close;
            cc_str_t *dst = slot == CC_F_COUNT ? type : &out->f[slot];
            if (scan_string(p + i + 1, n - i - 1, &close, dst) != CC_OK) return 0;
            if (dst->flags & CC_STR_NONCANON) out->canonical = 0;
            i += close + 2;
        }
        i = skip_ws(p, i, n, &out->canonical);
        if (i >= n) return 0;
        if (p[i] == '}') return i + 1;
        if (p[i] != ',') return 0;
        i = skip_ws(p, i + 1, n, &out->canonical);
    }
}

/* ---- The template fast path ------------------------------------------------------------------
 * Mastra writes every delta chunk with the same bytes around its strings.  Matching those bytes
 * literally skips key parsing; anything else falls through to the general scanner above. */

static inline int lit(const unsigned char *p, size_t *i, size_t n, const char *s, size_t sl) {
    if (*i + sl > n || memcmp(p + *i, s, sl) != 0) return 0;
    *i += sl;
    return 1;
}

#define LIT(s) lit(p, &i, n, s, sizeof(s) - 1)

/* A string value whose opening quote was just matched; leaves i after the closing quote. */
static inline int tstr(const unsigned char *p, size_t *i, size_t n, cc_str_t *dst) {
    size_t close;
    if (scan_string(p + *i, n - *i, &close, dst) != CC_OK) return 0;
    *i += close + 1;
    return 1;
}

static int scan_template(const unsigned char *p, size_t n, cc_hot_t *out) {
    size_t i = 0;
    cc_str_t *f = out->f;
    if (LIT("{\"type\":\"text-delta\",\"runId\":\"")) out->type = CC_HOT_TEXT_DELTA;
    else if (LIT("{\"type\":\"reasoning-delta\",\"runId\":\"")) out->type = CC_HOT_REASONING_DELTA;
    else if (LIT("{\"type\":\"tool-call-delta\",\"runId\":\"")) out->type = CC_HOT_TOOL_CALL_DELTA;
    else return 0;
    if (!tstr(p, &i, n, &f[CC_F_RUN_ID]) || !LIT(",\"from\":\"") || !tstr(p, &i, n, &f[CC_F_FROM])) return 0;
    if (out->type == CC_HOT_TOOL_CALL_DELTA) {
        if (!LIT(",\"payload\":{\"argsTextDelta\":\"") || !tstr(p, &i, n, &f[CC_F_ARGS_TEXT_DELTA]) ||
            !LIT(",\"toolCallId\":\"") || !tstr(p, &i, n, &f[CC_F_TOOL_CALL_ID]))
            return 0;
        if (LIT(",\"toolName\":\"") && !tstr(p, &i, n, &f[CC_F_TOOL_NAME])) return 0;
    } else {
        if (!LIT(",\"payload\":{\"id\":\"") || !tstr(p, &i, n, &f[CC_F_ID]) || !LIT(",\"text\":\"") ||
            !tstr(p, &i, n, &f[CC_F_TEXT]))
            return 0;
    }
    if (!LIT("}}") || i != n) return 0;
    int flags = 0;
    for (int k = 0; k < CC_F_COUNT; k++) flags |= f[k].flags;
    out->canonical = !(flags & CC_STR_NONCANON);
    return 1;
}

cc_status cc_scan_hot(const char *buf, size_t len, cc_hot_t *out) {
    const unsigned char *p = (const unsigned char *)buf;
    cc_str_t type = {0};
    unsigned seen = 0;
    for (int k = 0; k < CC_F_COUNT; k++) out->f[k].p = NULL, out->f[k].flags = 0;
    if (len > 40 && p[0] == '{' && p[1] == '"' && scan_template(p, len, out)) return CC_OK;
    memset(out, 0, sizeof(*out));
    out->canonical = 1;
    size_t i = skip_ws(p, 0, len, &out->canonical);
    if (i >= len || p[i] != '{') return CC_NOT_HOT;
    i = scan_object(p, i, len, 1, out, &type, &seen);
    if (!i) return CC_NOT_HOT;
    if (skip_ws(p, i, len, &out->canonical) != len) return CC_NOT_HOT;
    if (!(seen & (1u << (CC_F_COUNT + 1))) || !type.p || (type.flags & CC_STR_ESCAPED)) return CC_NOT_HOT;
    unsigned payload = seen & ((1u << CC_F_ID) | (1u << CC_F_TEXT) | (1u << CC_F_ARGS_TEXT_DELTA) |
                               (1u << CC_F_TOOL_CALL_ID) | (1u << CC_F_TOOL_NAME));
    const unsigned text_keys = (1u << CC_F_ID) | (1u << CC_F_TEXT);
    const unsigned tool_keys = (1u << CC_F_ARGS_TEXT_DELTA) | (1u << CC_F_TOOL_CALL_ID);
    if (KEY_IS(type.p, type.len, "text-delta") && payload == text_keys) {
        out->type = CC_HOT_TEXT_DELTA;
    } else if (KEY_IS(type.p, type.len, "reasoning-delta") && payload == text_keys) {
        out->type = CC_HOT_REASONING_DELTA;
    } else if (KEY_IS(type.p, type.len, "tool-call-delta") &&
               (payload == tool_keys || payload == (tool_keys | (1u << CC_F_TOOL_NAME)))) {
        out->type = CC_HOT_TOOL_CALL_DELTA;
    } else {
        return CC_NOT_HOT;
    }
    return CC_OK;
}

/* ---- The finish reader -------------------------------------------------------------------------
 * step-finish and finish frames carry the run's whole message history (megabytes on long runs), of
 * which accumulation needs a few small fields.  This walks the whole frame, checking it as msgspec
 * checks what it skips (JSON syntax, escapes and surrogate pairs, control bytes; not UTF-8, which
 * msgspec checks only in what it decodes), and returns the spans of those fields, which msgspec
 * then decodes.  The light decoder decodes stepResult and metadata whole (typed Any); this reads
 * the keys accumulation takes from them instead, and says when msgspec must decode them whole to
 * tell whether it takes them (CC_FIN_DECODE: bad UTF-8 or a number that may be out of range in
 * them, or an escaped key).  Whatever else it is unsure of -- an escaped, non-ASCII or duplicate
 * key of the frame, its payload or output, nesting past FIN_MAX_DEPTH, a payload or output that is
 * neither an object nor null, a lone surrogate -- is CC_NOT_HOT, and the caller reads the frame
 * the general way: so it takes a frame only when that way would accept it and read the same
 * values. */

#define FIN_MAX_DEPTH 64


/* A string inside the part of a frame accumulation skips, starting just after its opening quote:
 * the offset past its closing quote, or 0.  Escapes (surrogate pairs included) and control bytes
 * are checked as msgspec checks what it skips; UTF-8 is not, as msgspec does not either: the
 * values read are decoded by msgspec, which checks theirs.  avx2: the block masks with AVX2 (a
 * constant in each of the two copies below). */
SKIP_INLINE size_t skip_string_blocks(const unsigned char *p, size_t i, size_t n, int avx2) {
    uint32_t cp;
#if defined(__SSE2__)
    /* 64 bytes at a time: the masks are made once per block and its escapes walked in order, so
     * a text with an escape every few words (the message history's) costs a few instructions per
     * escape, not a fresh scan from each one. */
    while (i + 64 <= n) {
        fast_block m;
#if FAST_HAVE_AVX2
        if (avx2)
            block_masks_avx2((const char *)p + i, &m);
        else
#endif
            block_masks((const char *)p + i, &m);
        uint64_t ev = m.quote | m.bslash | m.ctl;
        size_t next = 64;                            /* where the next block starts, from i */
        while (ev) {
            size_t k = (size_t)__builtin_ctzll(ev), a = i + k + 1, l;
            if (p[i + k] == '"') return a;
            if (p[i + k] != '\\') return 0;          /* a control byte */
            if (a < n && simple_escape[p[a]]) {
                l = 1;
            } else {
                l = escape_one(p + a, n - a, &cp);
                if (!l) return 0;
            }
            size_t r = k + 1 + l;                    /* past the escape, from i */
            if (r >= 64) {
                next = r;
                break;
            }
            ev &= ~0ull << r;
        }
        i += next;
    }
#endif
    for (;;) {
        i = skip_string_bytes(p, i, n, 0);   /* (non-ASCII bytes are not stopped at) */
        if (i >= n) return 0;
        if (p[i] == '"') return i + 1;
        if (p[i] != '\\') return 0;                  /* a control byte */
        if (i + 1 < n && simple_escape[p[i + 1]]) {   /* \n, \", ...: most escapes, no call */
            i += 2;
            continue;
        }
        size_t l = escape_one(p + i + 1, n - i - 1, &cp);
        if (!l) return 0;
        i += 1 + l;
    }
}

static size_t skip_string_sse2(const unsigned char *p, size_t i, size_t n) { return skip_string_blocks(p, i, n, 0); }
#if FAST_HAVE_AVX2
FAST_AVX2_FN static size_t skip_string_avx2(const unsigned char *p, size_t i, size_t n) {
    return skip_string_blocks(p, i, n, 1);
}
#endif

static size_t skip_string(const unsigned char *p, size_t i, size_t n) {
#if FAST_HAVE_AVX2
    if (cc_fast_avx2()) return skip_string_avx2(p, i, n);
#endif
    return skip_string_sse2(p, i, n);
}

/* skip_string with its usual case inline: a string with no backslash or control byte (keys, ids,
 * most values of a message history) is skipped by skip_string_bytes here, without a call; the
 * call goes on from the first byte that needs more. */
SKIP_INLINE size_t skip_str(const unsigned char *p, size_t i, size_t n) {
    i = skip_string_bytes(p, i, n, 0);
    if (i < n && p[i] == '"') return i + 1;
    return skip_string(p, i, n);
}

static inline size_t skip_digits(const unsigned char *p, size_t i, size_t n) {
    while (i < n && p[i] >= '0' && p[i] <= '9') i++;
    return i;
}

/* A number at p[i] (JSON's grammar exactly): the offset past it, or 0. */
static size_t skip_number(const unsigned char *p, size_t i, size_t n) {
    size_t s;
    if (i < n && p[i] == '-') i++;
    if (i >= n) return 0;
    if (p[i] == '0') i++;
    else if (p[i] >= '1' && p[i] <= '9') i = skip_digits(p, i + 1, n);
    else return 0;
    if (i < n && p[i] == '.') {
        s = i + 1;
        i = skip_digits(p, s, n);
        if (i == s) return 0;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        i++;
        if (i < n && (p[i] == '+' || p[i] == '-')) i++;
        s = i;
        i = skip_digits(p, s, n);
        if (i == s) return 0;
    }
    return i;
}

static inline size_t skip_literal(const unsigned char *p, size_t i, size_t n, const char *lit, size_t l) {
    return i + l <= n && memcmp(p + i, lit, l) == 0 ? i + l : 0;
}

/* White space inside a value, for the finish and step-start readers and cc_skip_*: space, tab and
 * CR, but no line feed, which sends the frame to the general decoder instead (Mastra writes no
 * white space at all).  So a reader given the bytes past the end of a frame's line
 * (cc_scan_finish_open) cannot read across it. */
static inline size_t ws(const unsigned char *p, size_t i, size_t n) {
    if (i < n && p[i] > ' ') return i;              /* compact JSON: one test */
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r')) i++;
    return i;
}

/* Any JSON white space, line feeds too: before and after a frame's value. */
static inline size_t ws_any(const unsigned char *p, size_t i, size_t n) {
    int canon;
    return skip_ws(p, i, n, &canon);
}

/* 1 if msgspec surely decodes the number p[0..l) (valid JSON) without "out of range": its magnitude
 * is below 1e300 (a float, or an int of at most 300 digits); 0 when it might not. */
static int number_in_range(const unsigned char *q, size_t l) {
    size_t j = 0, d0;
    long mag, e = 0;
    int neg = 0;
    if (j < l && q[j] == '-') j++;
    while (j < l && q[j] == '0') j++;
    d0 = j;
    while (j < l && q[j] >= '0' && q[j] <= '9') j++;
    mag = (long)(j - d0);
    if (j < l && q[j] == '.') {
        j++;
        while (j < l && q[j] >= '0' && q[j] <= '9') j++;
    }
    if (j < l && (q[j] == 'e' || q[j] == 'E')) {
        j++;
        if (j < l && (q[j] == '+' || q[j] == '-')) neg = q[j++] == '-';
        size_t e0 = j;
        for (; j < l && q[j] >= '0' && q[j] <= '9'; j++)
            if (j - e0 < 4) e = e * 10 + (q[j] - '0');
        if (j - e0 > 4) return 0;
    }
    return (neg ? mag - e : mag + e) <= 300;
}

/* The long strings with escapes of one frame the finish reader skips, by their first 8 bytes.
 * Mastra's step-finish and finish frames carry each step's text several times over (output.text,
 * output.steps[].content and .response.messages, messages.all, messages.nonUser), so a string that
 * is byte for byte, closing quote included, one already skipped in the frame is skipped by a
 * compare, not escape by escape: the same bytes from the same opening quote read the same way.  A
 * string without escapes is not kept: the 16-byte loop that finds its end costs about what the
 * compare would.  Direct-mapped, the newest string of a slot kept; `used`: the slots filled. */
#define REP_BITS 6
#define REP_MIN 48            /* shorter strings are not kept: their compare would save little */
typedef struct rep_entry { uint64_t head; size_t s, len; } rep_entry;
typedef struct rep_table { uint64_t used; int hits; rep_entry e[1 << REP_BITS]; } rep_table;

/* skip_str_rep from p[j], the first byte of the string at p[i] that is not plain. */
static size_t skip_str_rep_from(const unsigned char *p, size_t i, size_t j, size_t n, rep_table *rep) {
    if (n - i < 8) return skip_string(p, j, n);
    uint64_t head;
    memcpy(&head, p + i, 8);
    unsigned slot = (unsigned)((head * 0x9E3779B97F4A7C15ull) >> (64 - REP_BITS));
    rep_entry *e = &rep->e[slot];
    if (rep->used >> slot & 1 && e->head == head && n - i >= e->len && memcmp(p + e->s, p + i, e->len) == 0) {
        rep->hits++;
        return i + e->len;
    }
    size_t end = skip_string(p, j, n);
    if (end && end - i >= REP_MIN) {
        rep->used |= 1ull << slot;
        e->head = head;
        e->s = i;
        e->len = end - i;
    }
    return end;
}

/* skip_str for the finish reader's skipped values: through rep when it has the string (a string
 * without escapes, the usual one, as skip_str: inline, without a call). */
SKIP_INLINE size_t skip_str_rep(const unsigned char *p, size_t i, size_t n, rep_table *rep) {
    size_t j = skip_string_bytes(p, i, n, 0);
    if (j < n && p[j] == '"') return j + 1;
    return skip_str_rep_from(p, i, j, n, rep);
}

static size_t skip_value(const unsigned char *p, size_t i, size_t n, int depth, int *big, rep_table *rep);

/* A member's key at p[i] (its opening quote) and the colon after it: the offset of its value (white
 * space skipped), or 0. */
static inline size_t skip_key(const unsigned char *p, size_t i, size_t n) {
    if (i >= n || p[i] != '"') return 0;
    i = skip_str(p, i + 1, n);
    if (!i) return 0;
    i = ws(p, i, n);
    if (i >= n || p[i] != ':') return 0;
    return ws(p, i + 1, n);
}

/* An object or array at p[i] (its opening bracket): the offset past its closing one, or 0.  big:
 * NULL, or set to 1 when a number in it may be out of range for msgspec (number_in_range); rep:
 * NULL, or the frame's long strings (the finish reader), for its string values. */
static size_t skip_container(const unsigned char *p, size_t i, size_t n, int depth, int *big, rep_table *rep) {
    unsigned char close = p[i] == '{' ? '}' : ']';
    if (depth >= FIN_MAX_DEPTH) return 0;
    i = ws(p, i + 1, n);
    if (i < n && p[i] == close) return i + 1;
    for (;;) {
        if (close == '}') {
            i = skip_key(p, i, n);
            if (!i) return 0;
        }
        /* (a string, the usual value, without the call) */
        if (i < n && p[i] == '"')
            i = rep ? skip_str_rep(p, i + 1, n, rep) : skip_str(p, i + 1, n);
        else
            i = skip_value(p, i, n, depth + 1, big, rep);
        if (!i) return 0;
        i = ws(p, i, n);
        if (i >= n) return 0;
        if (p[i] == close) return i + 1;
        if (p[i] != ',') return 0;
        i = ws(p, i + 1, n);
    }
}

static size_t skip_value(const unsigned char *p, size_t i, size_t n, int depth, int *big, rep_table *rep) {
    if (i >= n) return 0;
    switch (p[i]) {
    case '"': return rep ? skip_str_rep(p, i + 1, n, rep) : skip_str(p, i + 1, n);
    case '{': case '[': return skip_container(p, i, n, depth, big, rep);
    case 't': return skip_literal(p, i, n, "true", 4);
    case 'f': return skip_literal(p, i, n, "false", 5);
    case 'n': return skip_literal(p, i, n, "null", 4);
    default: {
        size_t e = skip_number(p, i, n);
        if (big && e && !number_in_range(p + i, e - i)) *big = 1;
        return e;
    }
    }
}

size_t cc_skip_object(const char *p, size_t n) {
    return n && p[0] == '{' ? cc_skip_value(p, n) : 0;
}

size_t cc_skip_value(const char *p, size_t n) {
    int big = 0;
    size_t e = skip_value((const unsigned char *)p, 0, n, 0, &big, NULL);
    return big ? 0 : e;
}

/* The keys read at each level: top (type, runId, from, payload), payload (stepResult, metadata, output,
 * providerMetadata, id), output (usage), stepResult (reason, warnings), metadata (id, modelId, model,
 * providerMetadata).  A slot of the first three levels is a bit in `seen`: those are read as a
 * struct is, where a duplicate is left to the decoder; stepResult and metadata are read as a dict
 * is, where the last of duplicate keys wins. */
enum { FL_TOP, FL_PAYLOAD, FL_OUTPUT, FL_STEP_RESULT, FL_METADATA };
enum { FK_TYPE, FK_RUN_ID, FK_FROM, FK_PAYLOAD, FK_STEP_RESULT, FK_METADATA, FK_OUTPUT, FK_PM, FK_ID, FK_USAGE,
       FK_SR_REASON, FK_SR_WARNINGS, FK_MD_ID, FK_MD_MODEL_ID, FK_MD_MODEL, FK_MD_PM };

static int fin_key(int level, const char *k, size_t kl) {
    switch (level) {
    case FL_TOP:
        if (KEY_IS(k, kl, "type")) return FK_TYPE;
        if (KEY_IS(k, kl, "runId")) return FK_RUN_ID;
        if (KEY_IS(k, kl, "from")) return FK_FROM;
        if (KEY_IS(k, kl, "payload")) return FK_PAYLOAD;
        break;
    case FL_PAYLOAD:
        if (KEY_IS(k, kl, "stepResult")) return FK_STEP_RESULT;
        if (KEY_IS(k, kl, "metadata")) return FK_METADATA;
        if (KEY_IS(k, kl, "output")) return FK_OUTPUT;
        if (KEY_IS(k, kl, "providerMetadata")) return FK_PM;
        if (KEY_IS(k, kl, "id")) return FK_ID;
        break;
    case FL_OUTPUT:
        if (KEY_IS(k, kl, "usage")) return FK_USAGE;
        break;
    case FL_STEP_RESULT:
        if (KEY_IS(k, kl, "reason")) return FK_SR_REASON;
        if (KEY_IS(k, kl, "warnings")) return FK_SR_WARNINGS;
        break;
    default:
        if (KEY_IS(k, kl, "id")) return FK_MD_ID;
        if (KEY_IS(k, kl, "modelId")) return FK_MD_MODEL_ID;
        if (KEY_IS(k, kl, "model")) return FK_MD_MODEL;
        if (KEY_IS(k, kl, "providerMetadata")) return FK_MD_PM;
    }
    return -1;
}

static cc_span_t *fin_span(cc_finish_t *out, int slot) {
    switch (slot) {
    case FK_TYPE: return &out->type;
    case FK_RUN_ID: return &out->run_id;
    case FK_FROM: return &out->from_;
    case FK_STEP_RESULT: return &out->step_result;
    case FK_METADATA: return &out->metadata;
    case FK_PM: return &out->provider_metadata;
    case FK_ID: return &out->id;
    case FK_USAGE: return &out->usage;
    case FK_SR_REASON: return &out->sr_reason;
    case FK_SR_WARNINGS: return &out->sr_warnings;
    case FK_MD_ID: return &out->md_id;
    case FK_MD_MODEL_ID: return &out->md_model_id;
    case FK_MD_MODEL: return &out->md_model;
    case FK_MD_PM: return &out->md_provider_metadata;
    default: return NULL;
    }
}

/* The members of the object at p[i] == '{': visit(ctx, p, k0, kl, v, n) is given each member's key
 * (p[k0..k0+kl), as written) and the offset of its value, and returns the offset past the value, or
 * 0 to refuse the frame.  Returns the offset past '}', or 0.  (The finish and step-start readers.) */
typedef size_t (*member_fn)(void *ctx, const unsigned char *p, size_t k0, size_t kl, size_t v, size_t n);

static size_t walk_object(const unsigned char *p, size_t i, size_t n, member_fn visit, void *ctx) {
    i = ws(p, i + 1, n);
    if (i < n && p[i] == '}') return i + 1;
    for (;;) {
        if (i >= n || p[i] != '"') return 0;
        size_t k0 = i + 1;
        i = skip_str(p, k0, n);
        if (!i) return 0;
        size_t kl = i - 1 - k0;
        i = ws(p, i, n);
        if (i >= n || p[i] != ':') return 0;
        i = ws(p, i + 1, n);
        if (i >= n) return 0;
        i = visit(ctx, p, k0, kl, i, n);
        if (!i) return 0;
        i = ws(p, i, n);
        if (i >= n) return 0;
        if (p[i] == '}') return i + 1;
        if (p[i] != ',') return 0;
        i = ws(p, i + 1, n);
    }
}

/* What the finish reader shares across levels: the keys seen (of the first three levels), and the
 * memo (cc_scan_finish_memo): the lookup, and the memo it gave; the frame's long strings. */
typedef struct fin_shared {
    unsigned seen;
    cc_fin_memo_fn lookup;
    void *lctx;
    const cc_fin_memo_t *memo;
    rep_table rep;
} fin_shared;

/* The finish reader's place in the frame: the level (FL_*), the containers around it, and inside
 * stepResult and metadata, `whole`: set when msgspec must decode the object whole (an escaped key,
 * a number that may be out of range); NULL elsewhere. */
typedef struct fin_ctx { cc_finish_t *out; fin_shared *sh; int *whole; int level, depth; } fin_ctx;

/* The length of the longest common prefix of a[0..n) and b[0..n). */
static size_t common_prefix(const unsigned char *a, const unsigned char *b, size_t n) {
    size_t i = 0;
    while (n - i >= 256 && memcmp(a + i, b + i, 256) == 0) i += 256;     /* (libc's compare) */
#if defined(__SSE2__)
    while (i + 16 <= n) {
        __m128i x = _mm_loadu_si128((const __m128i *)(a + i)), y = _mm_loadu_si128((const __m128i *)(b + i));
        unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, y)) ^ 0xFFFFu;
        if (m) return i + (size_t)__builtin_ctz(m);
        i += 16;
    }
#endif
    while (i < n && a[i] == b[i]) i++;
    return i;
}

/* How ck_walk reads a skipped member's value at p[v0]: the value's depth; where its places go (out,
 * when keep); and the memo's value of the same member (ob, ol; NULL: none) with its places (ock,
 * om), to go on from again past a place (ck_sync).  A place is known by its level and ordinals: the
 * places of level 1 before it, and at level 2, those of level 2 since (k1, k2 for the value's, oK,
 * oJ for the memo's place oi, the next ck_sync looks at). */
typedef struct ck_ctx {
    cc_finish_t *out;
    int keep, depth;
    rep_table *rep;
    size_t v0;
    const unsigned char *ob;
    size_t ol;
    const cc_fin_ck_t *ock;
    uint32_t om, oi, oK, oJ;
    uint32_t k1, k2;
} ck_ctx;

/* Count a place of the value (of level lvl) in k1, k2. */
static inline void ck_count(ck_ctx *c, int lvl) {
    if (lvl == 1) {
        c->k1++;
        c->k2 = 0;
    } else {
        c->k2++;
    }
}

/* Record a place (cc_fin_ck_t) of a member kept in out->skipped, when there is room. */
static inline void ck_put(ck_ctx *c, size_t off, int lvl, unsigned kinds) {
    cc_finish_t *out = c->out;
    if (c->keep && out->ck_count < out->ck_cap && off <= UINT32_MAX) {
        cc_fin_ck_t *k = &out->ck[out->ck_count++];
        k->off = (uint32_t)off;
        k->lvl = (uint8_t)lvl;
        k->kinds = (uint8_t)kinds;
    }
}

/* The memo's places ck[from..to) as the value's, moved by `by` bytes (their part of the value is
 * the same bytes at that distance): counted, and recorded as room allows. */
static void ck_copy(ck_ctx *c, const cc_fin_ck_t *ck, uint32_t from, uint32_t to, size_t by) {
    for (uint32_t q = from; q < to; q++) {
        ck_count(c, ck[q].lvl);
        ck_put(c, ck[q].off + by, ck[q].lvl, ck[q].kinds);
    }
}

/* The memo's place known as the value's place just counted (of level lvl), or om. */
static uint32_t old_same(ck_ctx *c, int lvl) {
    uint32_t K = lvl == 1 ? c->k1 - 1 : c->k1, J = lvl == 1 ? UINT32_MAX : c->k2 - 1;
    for (; c->oi < c->om; c->oi++) {
        const cc_fin_ck_t *o = &c->ock[c->oi];
        uint32_t oJ = o->lvl == 1 ? UINT32_MAX : c->oJ;
        if (c->oK > K || (c->oK == K && oJ >= J))
            return c->oK == K && oJ == J ? c->oi : c->om;
        if (o->lvl == 1) {
            c->oK++;
            c->oJ = 0;
        } else {
            c->oJ++;
        }
    }
    return c->om;
}

/* The last of the memo's places ck[lo..hi) at or before offset `at`, or lo - 1. */
static uint32_t ck_last(const cc_fin_ck_t *ck, uint32_t lo, uint32_t hi, size_t at) {
    uint32_t from = lo;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (ck[mid].off <= at) lo = mid + 1;
        else hi = mid;
    }
    return lo > from ? lo - 1 : from - 1;
}

/* At a place of the value, p[*i], just counted: when the memo's value has the same place (known
 * as this one, in containers of the same kinds: the reader was in the same state there) and the
 * same bytes after it, take them, and go on from the memo's last place in them (*i, *lvl,
 * *kinds).  Mastra's messages, {"all": [...], "user": [...], "nonUser": [...]}: each array one
 * step longer than the last frame's, and after the end of `all`, the same bytes again; its
 * output.steps: the last step changed (its tool's result added to its content), and after that
 * member, the same bytes again. */
static void ck_sync(ck_ctx *c, const unsigned char *p, size_t n, size_t *i, int *lvl, unsigned *kinds) {
    uint32_t q0 = old_same(c, *lvl);
    unsigned mask = *lvl == 1 ? 1u : 3u;
    if (q0 >= c->om || (c->ock[q0].kinds & mask) != (*kinds & mask)) return;
    size_t x = c->ock[q0].off, y = *i;
    size_t same = common_prefix(c->ob + x, p + y, c->ol - x < n - y ? c->ol - x : n - y);
    uint32_t q = ck_last(c->ock, q0 + 1, c->om, x + same);
    if (q == q0) return;
    c->out->memo_resumed++;
    ck_copy(c, c->ock, q0 + 1, q + 1, (y - c->v0) - x);
    *i = y + (c->ock[q].off - x);
    *lvl = c->ock[q].lvl;
    *kinds = c->ock[q].kinds;
}

/* A place just past an element or a member's value of the level-lvl container, at p[*i]:
 * counted, recorded, and where the memo may take over (ck_sync). */
static inline void ck_place(ck_ctx *c, const unsigned char *p, size_t n, size_t *i, int *lvl, unsigned *kinds) {
    ck_count(c, *lvl);
    ck_put(c, *i - c->v0, *lvl, *kinds);
    if (c->ob) ck_sync(c, p, n, i, lvl, kinds);
}

/* skip_value(p, v0, n, depth, NULL, rep) for a skipped member's value at p[v0], from p[i]: the
 * value's start (lvl 0), or just past an element or a member's value of its level-lvl container
 * (kinds as in cc_fin_ck_t).  The containers of levels 1 and 2 are walked here, each place past
 * one of their elements or members' values recorded (ck_place); what is in them, by skip_value and
 * skip_str_rep, as skip_container does. */
static size_t ck_walk(ck_ctx *c, const unsigned char *p, size_t i, size_t n, int lvl, unsigned kinds) {
    if (lvl == 0) {
        if (i >= n) return 0;
        if (p[i] != '{' && p[i] != '[') return skip_value(p, i, n, c->depth, NULL, c->rep);
        goto open;
    }
    for (;;) {
        /* just past an element or a member's value of the level-lvl container */
        i = ws(p, i, n);
        if (i >= n) return 0;
        if (p[i] == (kinds >> (lvl - 1) & 1 ? '}' : ']')) {
        close:
            i++;
            if (--lvl == 0) return i;
            ck_place(c, p, n, &i, &lvl, &kinds);
            continue;
        }
        if (p[i] != ',') return 0;
        i = ws(p, i + 1, n);
    member:
        /* an element, or a member, of the level-lvl container at p[i] */
        if (kinds >> (lvl - 1) & 1) {
            i = skip_key(p, i, n);
            if (!i) return 0;
        }
        if (lvl < 2 && i < n && (p[i] == '{' || p[i] == '[')) {
        open:
            /* a container at p[i], of level lvl + 1 */
            if (c->depth + lvl >= FIN_MAX_DEPTH) return 0;
            kinds = (kinds & ~(1u << lvl)) | (unsigned)(p[i] == '{') << lvl;
            lvl++;
            i = ws(p, i + 1, n);
            if (i < n && p[i] == (kinds >> (lvl - 1) & 1 ? '}' : ']')) goto close;
            goto member;
        }
        if (i < n && p[i] == '"')
            i = skip_str_rep(p, i + 1, n, c->rep);
        else
            i = skip_value(p, i, n, c->depth + lvl, NULL, c->rep);
        if (!i) return 0;
        ck_place(c, p, n, &i, &lvl, &kinds);
    }
}

/* A skipped member's value at p[v0] (its key at p[k0..k0 + kl), at `level`, the value at `depth`):
 * the offset past it, or 0.  When the memo has a member of the same key and level: if its value is
 * these bytes, they are not checked again; if only a first part of them, the reader goes on from
 * the memo's last place in that part (and again past later places: ck_sync); else, and
 * without a memo, the value is read.  Its places to go on from are recorded when keep (the memo's,
 * for the parts taken from it). */
static size_t memo_value(const cc_fin_memo_t *memo, int level, const unsigned char *p, size_t k0, size_t kl,
                         size_t v0, size_t n, int depth, cc_finish_t *out, int keep, rep_table *rep) {
    ck_ctx c = {out, keep, depth, rep, v0, NULL, 0, NULL, 0, 0, 0, 0, 0, 0};
    for (int j = 0; memo && j < memo->count; j++) {
        const cc_fin_member_t *e = &memo->m[j];
        if (e->level != level || e->kl != kl || memcmp(memo->p + e->k0, p + k0, kl) != 0) continue;
        const unsigned char *ob = (const unsigned char *)memo->p + e->v0;
        size_t same = common_prefix(ob, p + v0, e->vl < n - v0 ? e->vl : n - v0);
        const cc_fin_ck_t *ck = memo->ck ? memo->ck + e->ck_first : NULL;
        uint32_t m = ck ? e->ck_count : 0;
        if (same == e->vl) {
            out->memo_members++;
            ck_copy(&c, ck, 0, m, 0);
            return v0 + e->vl;
        }
        if (!same || !m) break;
        /* the same first byte: a container of the same kind, whose places the walk may use */
        c.ob = ob, c.ol = e->vl, c.ock = ck, c.om = m;
        uint32_t q = ck_last(ck, 0, m, same);
        if (q == (uint32_t)-1) break;
        out->memo_resumed++;
        ck_copy(&c, ck, 0, q + 1, 0);
        return ck_walk(&c, p, v0 + ck[q].off, n, ck[q].lvl, ck[q].kinds);
    }
    return ck_walk(&c, p, v0, n, 0, 0);
}

/* Whether a key's kl bytes hold a backslash or a non-ASCII byte: 8 at a time (the last word
 * overlapping the one before), a byte at a time when shorter. */
SKIP_INLINE int key_escaped_or_high(const unsigned char *k, size_t kl) {
    if (kl >= 8) {
        uint64_t acc = 0;
        for (size_t j = 0;; j += 8) {
            if (j + 8 > kl) j = kl - 8;
            uint64_t w = load64((const char *)k + j), x = w ^ 0x5C5C5C5C5C5C5C5Cull;
            acc |= w | ((x - 0x0101010101010101ull) & ~x);     /* a high bit: >= 0x80, or a backslash */
            if (j + 8 >= kl) break;
        }
        return (acc & 0x8080808080808080ull) != 0;
    }
    for (size_t j = 0; j < kl; j++)
        if (k[j] == '\\' || k[j] >= 0x80) return 1;
    return 0;
}

static size_t fin_member(void *vctx, const unsigned char *p, size_t k0, size_t kl, size_t v0, size_t n) {
    fin_ctx *c = vctx;
    cc_finish_t *out = c->out;
    fin_shared *sh = c->sh;
    size_t i = v0;
    int slot = -2;
    if (key_escaped_or_high(p + k0, kl)) {          /* it might read as one of ours */
        if (!c->whole) return 0;
        *c->whole = 1;                              /* (stepResult, metadata: decoded whole) */
        slot = -1;
    }
    if (slot == -2) slot = fin_key(c->level, (const char *)p + k0, kl);
    if (slot >= 0 && slot < FK_SR_REASON) {
        if (sh->seen & (1u << slot)) return 0;      /* duplicate: leave it to the decoder */
        sh->seen |= 1u << slot;
    }
    if (slot == FK_PAYLOAD || slot == FK_OUTPUT) {
        int *kind = slot == FK_PAYLOAD ? &out->payload : &out->output;
        if (p[i] == '{') {
            fin_ctx in = {out, sh, NULL, slot == FK_PAYLOAD ? FL_PAYLOAD : FL_OUTPUT, c->depth + 1};
            *kind = CC_FIN_OBJECT;
            i = walk_object(p, i, n, fin_member, &in);
        } else {
            *kind = CC_FIN_NULL;
            i = skip_literal(p, i, n, "null", 4);
        }
    } else if ((slot == FK_STEP_RESULT || slot == FK_METADATA) && p[i] == '{') {
        int whole = 0;
        fin_ctx in = {out, sh, &whole, slot == FK_STEP_RESULT ? FL_STEP_RESULT : FL_METADATA, c->depth + 1};
        i = walk_object(p, i, n, fin_member, &in);
        /* msgspec would decode it whole, checking its UTF-8 and its numbers' range */
        *(slot == FK_STEP_RESULT ? &out->step_result_object : &out->metadata_object) =
            i && !whole && cc_utf8_valid((const char *)p + v0, i - v0) ? CC_FIN_OBJECT : CC_FIN_DECODE;
    } else if (slot == FK_STEP_RESULT || slot == FK_METADATA) {
        /* not an object: nothing is read from it, but msgspec decodes it (typed Any), so its UTF-8
         * and its numbers' range must pass as they would there */
        int big = 0;
        i = skip_value(p, i, n, c->depth + 1, &big, NULL);
        if (i && (big || !cc_utf8_valid((const char *)p + v0, i - v0))) return 0;
    } else if (slot < 0 && (c->level == FL_PAYLOAD || c->level == FL_OUTPUT)) {
        /* skipped, and kept in `skipped`: through the memo when it has these bytes */
        cc_fin_memo_t *rec = &out->skipped;
        int keep = rec->count < CC_FIN_MEMO_MAX;
        uint32_t ck_first = out->ck_count;
        i = memo_value(sh->memo, c->level, p, k0, kl, v0, n, c->depth + 1, out, keep, &sh->rep);
        if (i && keep) {
            cc_fin_member_t *m = &rec->m[rec->count++];
            m->k0 = k0, m->kl = kl, m->v0 = v0, m->vl = i - v0, m->level = c->level;
            m->ck_first = ck_first, m->ck_count = out->ck_count - ck_first;
        }
    } else {
        i = skip_value(p, i, n, c->depth + 1, c->whole, &sh->rep);
        if (i && slot == FK_RUN_ID && sh->lookup && p[v0] == '"' &&
            !memchr(p + v0 + 1, '\\', i - v0 - 2))
            sh->memo = sh->lookup(sh->lctx, (const char *)p + v0 + 1, i - v0 - 2);
    }
    cc_span_t *dst = fin_span(out, slot);
    if (i && dst) {
        dst->p = (const char *)p + v0;
        dst->len = i - v0;
    }
    return i;
}

/* The frame's object from p[i] == '{' on: the offset past it, or 0 (not one of these frames). */
static size_t scan_finish(const unsigned char *p, size_t i, size_t len, cc_finish_t *out,
                          cc_fin_memo_fn lookup, void *lctx) {
    fin_shared sh;
    sh.seen = 0, sh.lookup = lookup, sh.lctx = lctx, sh.memo = NULL;
    sh.rep.used = 0, sh.rep.hits = 0;
    memset(out, 0, offsetof(cc_finish_t, skipped));
    out->skipped.p = NULL;
    out->skipped.ck = NULL;
    out->skipped.count = 0;
    out->ck_count = 0;
    if (i >= len || p[i] != '{') return 0;
    fin_ctx top = {out, &sh, NULL, FL_TOP, 0};
    i = walk_object(p, i, len, fin_member, &top);
    out->rep_strings = sh.rep.hits;
    if (!i || !out->type.p) return 0;
    if (KEY_IS(out->type.p, out->type.len, "\"step-finish\"")) out->kind = CC_FIN_STEP_FINISH;
    else if (KEY_IS(out->type.p, out->type.len, "\"finish\"")) out->kind = CC_FIN_FINISH;
    else return 0;
    return i;
}

cc_status cc_scan_finish_memo(const char *buf, size_t len, int open, cc_finish_t *out, size_t *end,
                              cc_fin_memo_fn lookup, void *ctx) {
    const unsigned char *p = (const unsigned char *)buf;
    size_t i;
    if (open) {
        i = scan_finish(p, 0, len, out, lookup, ctx);
        *end = i;
        return i ? CC_OK : CC_NOT_HOT;
    }
    i = scan_finish(p, ws_any(p, 0, len), len, out, lookup, ctx);
    return i && ws_any(p, i, len) == len ? CC_OK : CC_NOT_HOT;
}

cc_status cc_scan_finish(const char *buf, size_t len, cc_finish_t *out) {
    out->ck = NULL;
    out->ck_cap = 0;
    return cc_scan_finish_memo(buf, len, 0, out, NULL, NULL, NULL);
}

cc_status cc_scan_finish_open(const char *buf, size_t avail, cc_finish_t *out, size_t *end) {
    out->ck = NULL;
    out->ck_cap = 0;
    return cc_scan_finish_memo(buf, avail, 1, out, end, NULL, NULL);
}

/* ---- The envelope readers: step-start, tool-call and tool-result frames ----------------------
 * A frame of a known type whose every key the reader knows (the envelope's, then the payload's),
 * each once and unescaped: walked as the typed decoder would take it (valid JSON, every number in
 * range, checked as it skips; valid UTF-8 throughout, checked at the end), each value's span kept
 * by its key's slot.  A reader says which keys it knows, which must hold strings, and the types it
 * takes; what else it needs of the frame it checks from the spans. */

/* A key's slot in a reader's table of the keys it knows: the first names at the envelope, the
 * others (from `split` on) in the payload; -1 for a key not there (an escaped key: never there). */
typedef struct key_name { const char *s; size_t n; } key_name;
#define KN(lit) {lit, sizeof(lit) - 1}
#define KEYS(t) (int)(sizeof(t) / sizeof((t)[0]))
static int key_slot(const key_name *keys, int split, int count, int payload, const char *k, size_t kl) {
    for (int i = payload ? split : 0, e = payload ? count : split; i < e; i++)
        if (kl == keys[i].n && memcmp(k, keys[i].s, kl) == 0) return i;
    return -1;
}

typedef struct env_spec {
    const key_name *keys;
    int split, count;           /* envelope keys [0, split), payload keys [split, count) */
    int type, payload;          /* the slots of "type" and "payload" */
    unsigned strings;           /* the slots whose values must be strings */
    const key_name *types;      /* the types taken (quoted, as written) ... */
    int ntypes;                 /* ... the frame's kind: 1 + the index of its type */
} env_spec;

#define ENV_MAX_KEYS 16
typedef struct env_read {
    cc_span_t v[ENV_MAX_KEYS];  /* by slot; p NULL: absent */
    unsigned seen;              /* the slots present */
    int kind, big;
} env_read;

typedef struct env_ctx { const env_spec *s; env_read *r; int payload; } env_ctx;

/* A value of a frame at p[v0] (of slot `slot` of reader s), as the typed decoder would take it: a
 * string where s says so, skipped at `depth` (checked as it skips), its span kept, and a type the
 * reader takes: the offset past it, or 0.  (For the walker and the templates alike.) */
static size_t env_value(const env_spec *s, env_read *r, int slot, const unsigned char *p, size_t v0, size_t n,
                        int depth) {
    if (v0 >= n || ((s->strings >> slot & 1) && p[v0] != '"')) return 0;
    size_t i = skip_value(p, v0, n, depth, &r->big, NULL);
    if (!i) return 0;
    r->v[slot].p = (const char *)p + v0;
    r->v[slot].len = i - v0;
    if (slot == s->type) {              /* (refused here, a frame of another type is not walked on) */
        int k = 0;
        while (k < s->ntypes && !(i - v0 == s->types[k].n && memcmp(p + v0, s->types[k].s, i - v0) == 0)) k++;
        if (k == s->ntypes) return 0;
        r->kind = k + 1;
    }
    return i;
}

static size_t env_member(void *vctx, const unsigned char *p, size_t k0, size_t kl, size_t v0, size_t n) {
    env_ctx *c = vctx;
    const env_spec *s = c->s;
    env_read *r = c->r;
    int slot = key_slot(s->keys, s->split, s->count, c->payload, (const char *)p + k0, kl);
    if (slot < 0 || (r->seen & (1u << slot))) return 0;
    r->seen |= 1u << slot;
    if (slot == s->payload) {
        env_ctx in = {s, r, 1};
        return p[v0] == '{' ? walk_object(p, v0, n, env_member, &in) : 0;
    }
    return env_value(s, r, slot, p, v0, n, c->payload + 1);
}

/* The frame buf[0..len) read by spec s into r: 1 when taken (a type of s's, its payload there,
 * nothing but white space around it, valid UTF-8, no number out of range), else 0. */
static int env_read_frame(const env_spec *s, const char *buf, size_t len, env_read *r) {
    const unsigned char *p = (const unsigned char *)buf;
    memset(r, 0, sizeof(*r));
    size_t i = ws_any(p, 0, len);
    if (i >= len || p[i] != '{') return 0;
    env_ctx top = {s, r, 0};
    i = walk_object(p, i, len, env_member, &top);
    return i && ws_any(p, i, len) == len && r->kind && (r->seen & (1u << s->payload)) && !r->big &&
           cc_utf8_valid(buf, len);
}

/* The same frames as Mastra writes them: its keys in its order, no white space.  A template is the
 * frame's literals (keys and punctuation) with a value after each but the last, of the slot given;
 * what that value must be (a string, a type the reader takes) and the depth it is skipped at
 * (the payload's slots, one more) are the reader's, as for the walker.  env_template reads a frame
 * that follows its template to the letter into r, the same spans and checks as env_read_frame
 * (the values by env_value, UTF-8 checked throughout), without walking its keys; any other frame
 * is 0, for the walker, which reads the keys in any order. */
typedef struct tpl_step {
    const char *lit;
    uint8_t ln;
    int8_t slot;                /* -1: the last literal, no value after it */
} tpl_step;
#define TPL(lit, slot) {lit, sizeof(lit) - 1, slot}
#define TPL_END(lit) {lit, sizeof(lit) - 1, -1}

static int env_template(const env_spec *s, const tpl_step *t, const char *buf, size_t len, env_read *r) {
    const unsigned char *p = (const unsigned char *)buf;
    size_t i = 0;
    memset(r, 0, sizeof(*r));
    for (;; t++) {
        if (len - i < t->ln || !same((const char *)p + i, t->lit, t->ln)) return 0;
        i += t->ln;
        if (t->slot < 0) break;
        i = env_value(s, r, t->slot, p, i, len, t->slot >= s->split ? 2 : 1);
        if (!i) return 0;
        r->seen |= 1u << t->slot;
    }
    if (i != len || !r->kind || r->big || !cc_utf8_valid(buf, len)) return 0;
    r->seen |= 1u << s->payload;
    return 1;
}

/* ---- The step-start reader ---------------------------------------------------------------------
 * A step-start frame carries the request the model was sent (its body can be the whole prompt)
 * and may carry the input messages; accumulation reads only its warnings.  The typed decoder
 * decodes all of it (payload fields typed Any), so this takes a frame only where that decoder
 * surely takes it: the envelope and payload keys it knows, each once and unescaped; runId, from
 * and messageId strings, startedAt an integer of at most 18 digits, payload an object; valid
 * JSON, valid UTF-8 throughout and every number in range (number_in_range, checked as it skips).
 * Anything else is CC_NOT_HOT, and the typed decoder reads it. */

enum { SS_TYPE, SS_RUN_ID, SS_FROM, SS_PAYLOAD, SS_METADATA,
       SS_REQUEST, SS_WARNINGS, SS_MESSAGE_ID, SS_STARTED_AT, SS_INPUT_MESSAGES };

static const key_name ss_keys[] = {
    KN("type"), KN("runId"), KN("from"), KN("payload"), KN("metadata"),                  /* SS_TYPE on */
    KN("request"), KN("warnings"), KN("messageId"), KN("startedAt"), KN("inputMessages"),  /* SS_REQUEST on */
};
static const key_name ss_types[] = {KN("\"step-start\"")};
static const env_spec ss_spec = {
    ss_keys, SS_REQUEST, KEYS(ss_keys), SS_TYPE, SS_PAYLOAD,
    1u << SS_TYPE | 1u << SS_RUN_ID | 1u << SS_FROM | 1u << SS_MESSAGE_ID, ss_types, KEYS(ss_types),
};

/* A JSON integer of at most 18 digits: what an int field surely takes (absent: nothing to take). */
static int ss_small_int(cc_span_t v) {
    size_t i = 0;
    if (!v.p) return 1;
    if (i < v.len && v.p[i] == '-') i++;
    if (v.len - i > 18) return 0;
    for (; i < v.len; i++)
        if (v.p[i] < '0' || v.p[i] > '9') return 0;
    return 1;
}

/* Whether the JSON string lit (l bytes, its quotes included) is among the first 160 bytes of a
 * frame: where its type is, whatever the key order (Mastra writes runId and from first).  Asked of
 * every frame that is not a delta, so candidates are found 16 at a time (a quote, then lit's first
 * letter, and a quote l - 1 bytes on) rather than by a call per quote.  A hint only: the string
 * may be another key's value (a text-delta whose text is "step-start"), so each reader still
 * checks the type it reads. */
static int looks_quoted(const char *buf, size_t len, const char *lit, size_t l) {
    size_t n = len < 160 ? len : 160, i = 0;
    if (n < l) return 0;
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), c1 = _mm_set1_epi8(lit[1]);
    for (; i + l + 16 <= n; i += 16) {          /* (the loads reach buf[i + l - 1 + 15]) */
        __m128i a = _mm_loadu_si128((const __m128i *)(buf + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(buf + i + 1));
        __m128i c = _mm_loadu_si128((const __m128i *)(buf + i + l - 1));
        unsigned m = (unsigned)_mm_movemask_epi8(
            _mm_and_si128(_mm_and_si128(_mm_cmpeq_epi8(a, quote), _mm_cmpeq_epi8(b, c1)), _mm_cmpeq_epi8(c, quote)));
        for (; m; m &= m - 1)
            if (memcmp(buf + i + (size_t)__builtin_ctz(m), lit, l) == 0) return 1;
    }
#endif
    for (; i + l <= n; i++)
        if (buf[i] == '"' && buf[i + l - 1] == '"' && memcmp(buf + i, lit, l) == 0) return 1;
    return 0;
}

#define LOOKS(buf, len, lit) looks_quoted(buf, len, lit, sizeof(lit) - 1)

static int looks_step_start(const char *buf, size_t len) { return LOOKS(buf, len, "\"step-start\""); }

int cc_frame_hint(const char *buf, size_t len) {
    if (looks_step_start(buf, len)) return CC_HINT_STEP_START;
    if (LOOKS(buf, len, "\"tool-call\"") || LOOKS(buf, len, "\"tool-result\"")) return CC_HINT_TOOL;
    return CC_HINT_NONE;
}

/* Mastra's step-start (its request and warnings any values) */
static const tpl_step ss_mastra[] = {
    TPL("{\"runId\":", SS_RUN_ID), TPL(",\"from\":", SS_FROM), TPL(",\"type\":", SS_TYPE),
    TPL(",\"payload\":{\"request\":", SS_REQUEST), TPL(",\"warnings\":", SS_WARNINGS),
    TPL(",\"messageId\":", SS_MESSAGE_ID), TPL(",\"startedAt\":", SS_STARTED_AT), TPL_END("}}"),
};

cc_status cc_scan_step_start(const char *buf, size_t len, cc_step_start_t *out) {
    env_read r;
    memset(out, 0, sizeof(*out));
    if (!looks_step_start(buf, len) ||
        !(env_template(&ss_spec, ss_mastra, buf, len, &r) || env_read_frame(&ss_spec, buf, len, &r)) ||
        !ss_small_int(r.v[SS_STARTED_AT]))
        return CC_NOT_HOT;
    out->type = r.v[SS_TYPE];
    out->run_id = r.v[SS_RUN_ID];
    out->from_ = r.v[SS_FROM];
    out->warnings = r.v[SS_WARNINGS];
    return CC_OK;
}

/* ---- The tool-call and tool-result reader --------------------------------------------------------
 * A tool-call frame's chunk keeps its whole payload (Mastra returns the calls as chunks), so this
 * reader gives the spans of every value the chunk holds, and takes a frame only where the typed
 * decoder surely makes a chunk of exactly those: the envelope keys type, runId, from and payload
 * (no metadata), each once and unescaped, type "tool-call" or "tool-result" and runId there;
 * payload keys toolCallId and toolName (both there) and args, and a tool-result's result, each
 * once; type, runId, from, toolCallId and toolName strings; valid JSON, valid UTF-8 throughout and
 * every number in range.  Anything else (the optional keys Mastra adds for provider-executed or
 * dynamic tools, an unknown key) is CC_NOT_HOT, and the typed decoder reads it. */

enum { TL_TYPE, TL_RUN_ID, TL_FROM, TL_PAYLOAD, TL_CALL_ID, TL_NAME, TL_ARGS, TL_RESULT };

static const key_name tl_keys[] = {
    KN("type"), KN("runId"), KN("from"), KN("payload"),                                  /* TL_TYPE on */
    KN("toolCallId"), KN("toolName"), KN("args"), KN("result"),                          /* TL_CALL_ID on */
};
static const key_name tl_types[] = {KN("\"tool-call\""), KN("\"tool-result\"")};   /* CC_TOOL_CALL, _RESULT */
_Static_assert(CC_TOOL_CALL == 1 && CC_TOOL_RESULT == 2, "the kind is 1 + the index in tl_types");
_Static_assert(KEYS(tl_keys) <= ENV_MAX_KEYS && KEYS(ss_keys) <= ENV_MAX_KEYS, "env_read.v by slot");
static const env_spec tl_spec = {
    tl_keys, TL_CALL_ID, KEYS(tl_keys), TL_TYPE, TL_PAYLOAD,
    1u << TL_TYPE | 1u << TL_RUN_ID | 1u << TL_FROM | 1u << TL_CALL_ID | 1u << TL_NAME, tl_types, KEYS(tl_types),
};

/* Mastra's tool-call and tool-result */
static const tpl_step tl_call_mastra[] = {
    TPL("{\"type\":", TL_TYPE), TPL(",\"runId\":", TL_RUN_ID), TPL(",\"from\":", TL_FROM),
    TPL(",\"payload\":{\"toolCallId\":", TL_CALL_ID), TPL(",\"toolName\":", TL_NAME),
    TPL(",\"args\":", TL_ARGS), TPL_END("}}"),
};
static const tpl_step tl_result_mastra[] = {
    TPL("{\"type\":", TL_TYPE), TPL(",\"runId\":", TL_RUN_ID), TPL(",\"from\":", TL_FROM),
    TPL(",\"payload\":{\"args\":", TL_ARGS), TPL(",\"toolCallId\":", TL_CALL_ID),
    TPL(",\"toolName\":", TL_NAME), TPL(",\"result\":", TL_RESULT), TPL_END("}}"),
};

cc_status cc_scan_tool(const char *buf, size_t len, cc_tool_t *out) {
    env_read r;
    const unsigned need = 1u << TL_RUN_ID | 1u << TL_CALL_ID | 1u << TL_NAME;
    memset(out, 0, sizeof(*out));
    /* (Mastra's key order for the frame's type: tool-c / tool-r at byte 14) */
    const tpl_step *t = len > 14 && buf[14] == 'r' ? tl_result_mastra : tl_call_mastra;
    if (!(env_template(&tl_spec, t, buf, len, &r) || env_read_frame(&tl_spec, buf, len, &r)) ||
        (r.seen & need) != need ||
        (r.kind == CC_TOOL_CALL && (r.seen & (1u << TL_RESULT))))
        return CC_NOT_HOT;
    out->kind = r.kind;
    out->run_id = r.v[TL_RUN_ID];
    out->from_ = r.v[TL_FROM];
    out->call_id = r.v[TL_CALL_ID];
    out->name = r.v[TL_NAME];
    out->args = r.v[TL_ARGS];
    out->result = r.v[TL_RESULT];
    return CC_OK;
}
