/* Frame splitting for the three framings Mastra uses.
 *
 * SSE (agent routes): events end at a blank line (LF or CRLF line ends).  Within an event, `data:`
 * lines carry the payload (one optional space after the colon is dropped); several are joined with
 * '\n'; `:` comment lines and other fields (event:, id:, retry:) are ignored; an event without data
 * is a keep-alive.  `data: [DONE]` is the end marker.
 * RS (workflow routes): records end at 0x1E; blank records are keep-alives; a stray
 * `data: [DONE]` record (early 1.x hono) is read as the end marker.
 * NDJSON (logs): lines end at LF (a CR before it is dropped); blank lines are skipped.
 */
#if !defined(_GNU_SOURCE) && defined(__linux__)
#define _GNU_SOURCE     /* memrchr */
#endif
#include <string.h>
#include "chunkcodec/frame.h"

static int is_ws(unsigned char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

static int all_ws(const char *p, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!is_ws((unsigned char)p[i])) return 0;
    return 1;
}

/* Trim ASCII white space on both sides; returns the new length and moves *p. */
static size_t trim(const char **p, size_t n) {
    while (n && is_ws((unsigned char)**p)) { (*p)++; n--; }
    while (n && is_ws((unsigned char)(*p)[n - 1])) n--;
    return n;
}

static int is_done_marker(const char *p, size_t n) {
    return n == 6 && memcmp(p, "[DONE]", 6) == 0;
}

/* If the line p[0..ll) (no line end) is a `data` field, set its value and return 1. */
static int data_line(const char *p, size_t ll, const char **v, size_t *vl) {
    if (ll && p[ll - 1] == '\r') ll--;
    if (ll < 4 || memcmp(p, "data", 4) != 0 || (ll > 4 && p[4] != ':')) return 0;
    *v = p + (ll == 4 ? 4 : 5);
    *vl = ll == 4 ? 0 : ll - 5;
    if (*vl && **v == ' ') { (*v)++; (*vl)--; }
    return 1;
}

/* Interpret one SSE event block (no terminating blank line).  Returns 0 when the event carries no
 * data, else 1 with *f set. */
static int sse_event(const char *buf, size_t start, size_t len, cc_frame_t *f) {
    const char *p = buf + start, *end = p + len;
    size_t ndata = 0;
    const char *d = NULL;
    size_t dlen = 0;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *v;
        size_t vl;
        if (data_line(p, (size_t)((nl ? nl : end) - p), &v, &vl)) {
            if (ndata == 0) { d = v; dlen = vl; }
            ndata++;
        }
        p = nl ? nl + 1 : end;
    }
    if (ndata == 0) return 0;
    if (ndata == 1) {
        f->start = (size_t)(d - buf);
        f->len = dlen;
        f->kind = is_done_marker(d, dlen) ? CC_FK_DONE : CC_FK_JSON;
    } else {
        f->start = start;
        f->len = len;
        f->kind = CC_FK_SSE_MULTI;
    }
    return 1;
}

size_t cc_sse_join_data(const char *block, size_t len, char *dst) {
    const char *p = block, *end = block + len;
    size_t w = 0;
    int first = 1;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        const char *v;
        size_t vl;
        if (data_line(p, (size_t)((nl ? nl : end) - p), &v, &vl)) {
            if (!first) dst[w++] = '\n';
            memcpy(dst + w, v, vl);
            w += vl;
            first = 0;
        }
        p = nl ? nl + 1 : end;
    }
    return w;
}

/* End of the SSE event that starts at i: sets *blk_len (event block without its terminator) and
 * returns the offset just past the blank line, or 0 when the event is not complete yet. */
static size_t sse_event_end(const char *buf, size_t i, size_t len, size_t *blk_len) {
    size_t j = i;
    for (;;) {
        const char *nl = memchr(buf + j, '\n', len - j);
        if (!nl) return 0;
        size_t k = (size_t)(nl - buf);
        if (k + 1 < len && buf[k + 1] == '\n') {
            *blk_len = k - i;
            return k + 2;
        }
        if (k + 2 < len && buf[k + 1] == '\r' && buf[k + 2] == '\n') {
            *blk_len = k - i;
            return k + 3;
        }
        if (k + 1 >= len || (buf[k + 1] == '\r' && k + 2 >= len)) return 0;
        j = k + 1;
    }
}

size_t cc_frame_split(int framing, const char *buf, size_t len, int final,
                      cc_frame_t *out, size_t cap, size_t *n_out) {
    size_t i = 0, n = 0;
    while (i < len && n < cap) {
        if (framing == CC_FRAMING_SSE) {
            /* A blank line where an event would start is an empty event: skip it. */
            if (buf[i] == '\n') { i++; continue; }
            if (buf[i] == '\r' && i + 1 < len && buf[i + 1] == '\n') { i += 2; continue; }
            size_t blk = 0, next = sse_event_end(buf, i, len, &blk);
            if (!next) {
                if (!final) break;
                blk = len - i;
                next = len;
                if (all_ws(buf + i, blk)) { i = len; break; }
            }
            if (sse_event(buf, i, blk, &out[n])) {
                out[n].bstart = i;
                out[n].blen = blk;
                n++;
            }
            i = next;
        } else {
            char sep = framing == CC_FRAMING_RS ? '\x1e' : '\n';
            const char *e = memchr(buf + i, sep, len - i);
            size_t rl, next;
            if (e) {
                rl = (size_t)(e - buf) - i;
                next = (size_t)(e - buf) + 1;
            } else {
                if (!final) break;
                rl = len - i;
                next = len;
            }
            const char *r = buf + i;
            size_t tl = trim(&r, rl);
            if (tl) {
                if (framing == CC_FRAMING_RS && tl == 12 && memcmp(r, "data: [DONE]", 12) == 0) {
                    out[n].kind = CC_FK_DONE;
                    out[n].start = (size_t)(r - buf);
                    out[n].len = tl;
                } else {
                    out[n].kind = CC_FK_JSON;
                    out[n].start = i;
                    out[n].len = rl;
                    /* NDJSON: drop a CR before the LF so the frame is the line's JSON. */
                    if (framing == CC_FRAMING_NDJSON && rl && buf[i + rl - 1] == '\r') out[n].len--;
                }
                out[n].bstart = i;
                out[n].blen = rl;
                n++;
            }
            i = next;
        }
    }
    *n_out = n;
    return i;
}

ptrdiff_t cc_frame_find_end(int framing, const char *tail, size_t ntail, const char *buf, size_t len) {
    if (framing != CC_FRAMING_SSE) {
        const char *e = memchr(buf, framing == CC_FRAMING_RS ? '\x1e' : '\n', len);
        return e ? (ptrdiff_t)(e - buf) + 1 : -1;
    }
    /* Look at the boundary first: up to 2 bytes before buf and 2 bytes of buf. */
    char w[4];
    size_t nt = ntail > 2 ? 2 : ntail, nb = len > 2 ? 2 : len;
    memcpy(w, tail + ntail - nt, nt);
    memcpy(w + nt, buf, nb);
    size_t wl = nt + nb;
    for (size_t k = 0; k < nt; k++) {       /* a '\n' that lies before buf */
        if (w[k] != '\n') continue;
        if (k + 1 < wl && w[k + 1] == '\n' && k + 1 >= nt) return (ptrdiff_t)(k + 2 - nt);
        if (k + 2 < wl && w[k + 1] == '\r' && w[k + 2] == '\n' && k + 2 >= nt)
            return (ptrdiff_t)(k + 3 - nt);
    }
    size_t j = 0;
    while (j < len) {
        const char *nl = memchr(buf + j, '\n', len - j);
        if (!nl) return -1;
        size_t k = (size_t)(nl - buf);
        if (k + 1 < len && buf[k + 1] == '\n') return (ptrdiff_t)(k + 2);
        if (k + 2 < len && buf[k + 1] == '\r' && buf[k + 2] == '\n') return (ptrdiff_t)(k + 3);
        j = k + 1;
    }
    return -1;
}

ptrdiff_t cc_last_byte(const char *buf, size_t len, char c) {
#if defined(__GLIBC__)
    const char *e = len ? memrchr(buf, c, len) : NULL;
    return e ? (ptrdiff_t)(e - buf) : -1;
#else
    while (len--)
        if (buf[len] == c) return (ptrdiff_t)len;
    return -1;
#endif
}

int cc_detect_framing(const char *buf, size_t len, int final, int bom, size_t *skip) {
    size_t i = 0;
    *skip = 0;
    if (bom && len >= 3 && (unsigned char)buf[0] == 0xEF && (unsigned char)buf[1] == 0xBB &&
        (unsigned char)buf[2] == 0xBF) {
        i = 3;
    } else if (bom && !final && len < 3 && len && (unsigned char)buf[0] == 0xEF) {
        return CC_FRAMING_AUTO;
    }
    while (i < len && is_ws((unsigned char)buf[i])) i++;
    *skip = i;
    if (i == len) return final ? CC_FRAMING_NDJSON : CC_FRAMING_AUTO;
    unsigned char c = (unsigned char)buf[i];
    if (c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) return CC_FRAMING_SSE;
    if (c == '\x1e') return CC_FRAMING_RS;
    if (c == '[') return CC_FRAMING_JSON;
    if (c != '{') return CC_FRAMING_NDJSON;
    for (size_t j = i; j < len; j++) {
        if (buf[j] == '\x1e') return CC_FRAMING_RS;
        if (buf[j] == '\n') return CC_FRAMING_NDJSON;
    }
    return final ? CC_FRAMING_NDJSON : CC_FRAMING_AUTO;
}
