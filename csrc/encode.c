/* Output that matches JavaScript's JSON.stringify byte for byte (see encode.h). */
#include <string.h>
#include "chunkcodec/encode.h"

static const char hexdig[] = "0123456789abcdef";

/* 0: copy raw; 1: two-byte escape; 2: \u00xx */
static unsigned char esc_class(unsigned char c) {
    if (c == '"' || c == '\\' || c == '\b' || c == '\f' || c == '\n' || c == '\r' || c == '\t') return 1;
    if (c < 0x20) return 2;
    return 0;
}

size_t cc_js_escaped_len(const char *src, size_t len) {
    size_t n = len;
    for (size_t i = 0; i < len; i++) {
        unsigned char k = esc_class((unsigned char)src[i]);
        n += k == 1 ? 1 : k == 2 ? 5 : 0;
    }
    return n;
}

size_t cc_js_escape(const char *src, size_t len, char *dst) {
    size_t w = 0, i = 0;
    while (i < len) {
        size_t run = i;
        while (i < len && !esc_class((unsigned char)src[i])) i++;
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
