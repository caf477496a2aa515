/* Output that matches JavaScript's JSON.stringify byte for byte (see encode.h). */
#include <stdint.h>
#include <string.h>
#include "chunkcodec/encode.h"

static const char hexdig[] = "0123456789abcdef";

/* Extra bytes an escape adds: 1 for the two-byte escapes, 5 for \u00xx, 0 for a raw byte. */
static const unsigned char esc_extra[256] = {
    5,5,5,5,5,5,5,5,1,1,1,5,1,1,5,5, 5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,5,
    0,0,1,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,
    0,0,0,0,0,0,0,0,0,0,0,0,0,0,0,0, 0,0,0,0,0,0,0,0,0,0,0,0,1,0,0,0,
};

/* 0: copy raw; 1: two-byte escape; 2: \u00xx */
static unsigned char esc_class(unsigned char c) {
    unsigned char e = esc_extra[c];
    return e == 1 ? 1 : e == 5 ? 2 : 0;
}

/* Offset of the first byte at or after i that needs escaping ('"', '\\' or a control), or len. */
#if defined(__SSE2__)
#include <emmintrin.h>
static size_t next_escape(const char *src, size_t i, size_t len) {
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\'), ctl = _mm_set1_epi8(0x1F);
    const __m128i bias = _mm_set1_epi8((char)0x80);
    while (i + 16 <= len) {
        __m128i v = _mm_loadu_si128((const __m128i *)(src + i));
        __m128i m = _mm_or_si128(_mm_cmpeq_epi8(v, quote), _mm_cmpeq_epi8(v, bslash));
        /* unsigned v <= 0x1F, done as a signed compare after flipping the top bit */
        m = _mm_or_si128(m, _mm_cmplt_epi8(_mm_xor_si128(v, bias), _mm_xor_si128(_mm_add_epi8(ctl, _mm_set1_epi8(1)), bias)));
        unsigned mask = (unsigned)_mm_movemask_epi8(m);
        if (mask) return i + (size_t)__builtin_ctz(mask);
        i += 16;
    }
    while (i < len && !esc_extra[(unsigned char)src[i]]) i++;
    return i;
}
#else
static size_t next_escape(const char *src, size_t i, size_t len) {
    while (i < len && !esc_extra[(unsigned char)src[i]]) i++;
    return i;
}
#endif

size_t cc_js_escaped_len(const char *src, size_t len) {
    size_t n = len, i = next_escape(src, 0, len);
    while (i < len) {
        n += esc_extra[(unsigned char)src[i]];
        i = next_escape(src, i + 1, len);
    }
    return n;
}

size_t cc_js_escape(const char *src, size_t len, char *dst) {
    size_t w = 0, i = 0;
    while (i < len) {
        size_t run = i;
        i = next_escape(src, i, len);
        memcpy(dst + w, src + run, i - run);
        w += i - run;
        if (i >= len) break;
        unsigned char c = (unsigned char)src[i++];
        dst[w++] = '\\';
        switch (c) {
        case '"': dst[w++] = '"'; break;
        case '\\': dst[w++] = '\\'; break;
        case '\b': dst[w++] = 'b'; break;
        case '\f': dst[w++] = 'f'; break;
        case '\n': dst[w++] = 'n'; break;
        case '\r': dst[w++] = 'r'; break;
        case '\t': dst[w++] = 't'; break;
        default:
            dst[w++] = 'u'; dst[w++] = '0'; dst[w++] = '0';
            dst[w++] = hexdig[c >> 4]; dst[w++] = hexdig[c & 15];
        }
    }
    return w;
}

/* UTF-8 length of code point c as JSON.stringify writes it (escapes, lone surrogates as \udxxx). */
static inline size_t cp_len(uint32_t c) {
    if (c < 0x80) return 1 + esc_extra[c];
    if (c < 0x800) return 2;
    if (c >= 0xD800 && c <= 0xDFFF) return 6;
    return c < 0x10000 ? 3 : 4;
}

static inline size_t cp_write(uint32_t c, char *dst) {
    if (c < 0x80) {
        if (!esc_extra[c]) { dst[0] = (char)c; return 1; }
        char one = (char)c;
        return cc_js_escape(&one, 1, dst);
    }
    if (c < 0x800) {
        dst[0] = (char)(0xC0 | (c >> 6));
        dst[1] = (char)(0x80 | (c & 0x3F));
        return 2;
    }
    if (c >= 0xD800 && c <= 0xDFFF) {
        dst[0] = '\\'; dst[1] = 'u';
        dst[2] = hexdig[(c >> 12) & 15]; dst[3] = hexdig[(c >> 8) & 15];
        dst[4] = hexdig[(c >> 4) & 15]; dst[5] = hexdig[c & 15];
        return 6;
    }
    if (c < 0x10000) {
        dst[0] = (char)(0xE0 | (c >> 12));
        dst[1] = (char)(0x80 | ((c >> 6) & 0x3F));
        dst[2] = (char)(0x80 | (c & 0x3F));
        return 3;
    }
    dst[0] = (char)(0xF0 | (c >> 18));
    dst[1] = (char)(0x80 | ((c >> 12) & 0x3F));
    dst[2] = (char)(0x80 | ((c >> 6) & 0x3F));
    dst[3] = (char)(0x80 | (c & 0x3F));
    return 4;
}

/* One loop per storage kind, so the kind is not tested per code unit. */
#define UCS_LOOP(T, BODY) do { const T *u = (const T *)data; for (size_t i = 0; i < n; i++) { uint32_t c = u[i]; BODY; } } while (0)

size_t cc_js_escaped_len_ucs(int kind, const void *data, size_t n) {
    size_t total = 0;
    if (kind == 1) UCS_LOOP(uint8_t, total += cp_len(c));
    else if (kind == 2) UCS_LOOP(uint16_t, total += cp_len(c));
    else UCS_LOOP(uint32_t, total += cp_len(c));
    return total;
}

size_t cc_js_escape_ucs(int kind, const void *data, size_t n, char *dst) {
    size_t w = 0;
    if (kind == 1) UCS_LOOP(uint8_t, w += cp_write(c, dst + w));
    else if (kind == 2) UCS_LOOP(uint16_t, w += cp_write(c, dst + w));
    else UCS_LOOP(uint32_t, w += cp_write(c, dst + w));
    return w;
}

/* Skip a string starting at src[i] == '"'; returns the offset past its closing quote. */
static size_t skip_string(const char *src, size_t i, size_t len) {
    i++;
    while (i < len) {
        const char *q = memchr(src + i, '"', len - i);
        if (!q) return len;
        size_t j = (size_t)(q - src);
        size_t bs = 0;
        while (j - bs > i && src[j - bs - 1] == '\\') bs++;
        if (bs % 2 == 0) return j + 1;
        i = j + 1;
    }
    return len;
}

static int is_num_char(char c) {
    return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E';
}

/* Write the number token t[0..tl) the JavaScript way into dst (or only measure when dst is NULL). */
static size_t js_number(const char *t, size_t tl, char *dst) {
    char digits[800];
    size_t nd = 0, i = 0;
    int neg = 0;
    long frac = 0, exp = 0;
    int in_frac = 0;
    if (i < tl && t[i] == '-') { neg = 1; i++; }
    for (; i < tl; i++) {
        char c = t[i];
        if (c == '.') { in_frac = 1; continue; }
        if (c == 'e' || c == 'E') break;
        if (nd == 0 && c == '0') { if (in_frac) frac++; continue; }   /* leading zeros */
        if (nd < sizeof(digits)) digits[nd++] = c;
        if (in_frac) frac++;
    }
    if (i < tl) {                     /* exponent */
        int eneg = 0;
        i++;
        if (i < tl && (t[i] == '+' || t[i] == '-')) { eneg = t[i] == '-'; i++; }
        for (; i < tl; i++) {
            if (exp < 100000) exp = exp * 10 + (t[i] - '0');
        }
        if (eneg) exp = -exp;
    }
    while (nd && digits[nd - 1] == '0') { nd--; exp++; }
    char buf[900];
    size_t w = 0;
    if (nd == 0) {                    /* zero, including -0 */
        buf[w++] = '0';
    } else {
        /* value = digits * 10^(exp - frac); n = position of the decimal point after digit 1..nd */
        long k = (long)nd, n = k + exp - frac;
        if (neg) buf[w++] = '-';
        if (k <= n && n <= 21) {
            memcpy(buf + w, digits, nd); w += nd;
            for (long z = 0; z < n - k; z++) buf[w++] = '0';
        } else if (0 < n && n <= 21) {
            memcpy(buf + w, digits, (size_t)n); w += (size_t)n;
            buf[w++] = '.';
            memcpy(buf + w, digits + n, (size_t)(k - n)); w += (size_t)(k - n);
        } else if (-6 < n && n <= 0) {
            buf[w++] = '0'; buf[w++] = '.';
            for (long z = 0; z < -n; z++) buf[w++] = '0';
            memcpy(buf + w, digits, nd); w += nd;
        } else {
            long e = n - 1;
            buf[w++] = digits[0];
            if (k > 1) { buf[w++] = '.'; memcpy(buf + w, digits + 1, nd - 1); w += nd - 1; }
            buf[w++] = 'e';
            buf[w++] = e < 0 ? '-' : '+';
            if (e < 0) e = -e;
            char eb[24];
            int el = 0;
            do { eb[el++] = (char)('0' + e % 10); e /= 10; } while (e);
            while (el) buf[w++] = eb[--el];
        }
    }
    if (dst) memcpy(dst, buf, w);
    return w;
}

static int token_is_float(const char *t, size_t tl) {
    for (size_t i = 0; i < tl; i++)
        if (t[i] == '.' || t[i] == 'e' || t[i] == 'E') return 1;
    return 0;
}

size_t cc_js_numbers(const char *src, size_t len, char *dst) {
    size_t i = 0, w = 0;
    while (i < len) {
        char c = src[i];
        if (c == '"') {
            size_t j = skip_string(src, i, len);
            if (dst) memcpy(dst + w, src + i, j - i);
            w += j - i;
            i = j;
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i;
            while (j < len && is_num_char(src[j])) j++;
            if (token_is_float(src + i, j - i) && j - i < 700) {
                w += js_number(src + i, j - i, dst ? dst + w : NULL);
            } else {
                if (dst) memcpy(dst + w, src + i, j - i);
                w += j - i;
            }
            i = j;
        } else {
            if (dst) dst[w] = c;
            w++;
            i++;
        }
    }
    return w;
}

int cc_js_numbers_needed(const char *src, size_t len) {
    size_t i = 0;
    while (i < len) {
        char c = src[i];
        if (c == '"') {
            i = skip_string(src, i, len);
        } else if (c == '-' || (c >= '0' && c <= '9')) {
            size_t j = i;
            while (j < len && is_num_char(src[j])) j++;
            if (token_is_float(src + i, j - i)) {
                char tmp[900];
                if (j - i >= 700) return 0;
                size_t l = js_number(src + i, j - i, tmp);
                if (l != j - i || memcmp(tmp, src + i, l) != 0) return 1;
            }
            i = j;
        } else {
            i++;
        }
    }
    return 0;
}
