/* Bulk indexing of stream logs: see bulk.h.
 *
 * Delta frames (most of any log) go through fast_delta_read, or failing that the hot scanner, or
 * failing that json_valid: all three validate them completely, as the decoder does, and give the
 * spans of runId and text.  Other frames get a structural scan of their top level only:
 * the "type" and "runId" string values are read, nested values are skipped by bracket and string
 * matching (escapes honoured) to the end of the frame.  A frame that is not an object, whose
 * brackets or strings do not close, or that has anything after its closing brace is CC_T_CORRUPT.
 * This is structure, not full validation: bad UTF-8 or a bad number inside a non-delta frame is
 * left for the decoder (reconstruct) to report. */
#include <stdlib.h>
#include <string.h>

#include "chunkcodec/bulk.h"
#include "chunkcodec/frame.h"
#include "chunkcodec/scan.h"
#include "chunkcodec/accum.h"
#include "chunkcodec/alloc.h"

#include "fast_delta.h"

/* Keys are run ids: every byte hashed (hash_fold), and the length. */
CC_INLINE uint64_t hash_bytes(const char *p, size_t n) {
    uint64_t h = hash_fold((uint64_t)n * 0xff51afd7ed558ccdull, p, n);
    h ^= h >> 32;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 29);
}

int cc_runtab_init(cc_runtab *t, size_t cap) {
    size_t c = 64;
    while (c < cap) c <<= 1;
    t->ents = cc_calloc(c, sizeof(cc_runent));
    t->heads = cc_malloc(sizeof(cc_prefix_cache));
    if (t->heads && !cc_prefix_cache_init(t->heads, CC_PREFIX_BITS)) {
        free(t->heads);
        t->heads = NULL;
    }
    t->n = 0;
    if (!t->ents || !t->heads) {
        cc_runtab_free(t);
        return 0;
    }
    t->cap = c;
    return 1;
}

void cc_runtab_free(cc_runtab *t) {
    free(t->ents);
    if (t->heads) cc_prefix_cache_free(t->heads);
    free(t->heads);
    t->heads = NULL;
    t->ents = NULL;
    t->cap = t->n = 0;
}

static int runtab_grow(cc_runtab *t) {
    size_t nc = t->cap * 2;
    cc_runent *ne = cc_calloc(nc, sizeof(cc_runent));
    if (!ne) return 0;
    for (size_t i = 0; i < t->cap; i++) {
        cc_runent *e = &t->ents[i];
        if (!e->p) continue;
        size_t j = (size_t)e->hash & (nc - 1);
        while (ne[j].p) j = (j + 1) & (nc - 1);
        ne[j] = *e;
    }
    free(t->ents);
    t->ents = ne;
    t->cap = nc;
    return 1;
}

/* Add a runId the table does not hold (hash h): its new run index, or -2 when out of memory.  Out
 * of line: the lookup below, inlined into the scan loops, stays small. */
static int32_t runtab_add(cc_runtab *t, const char *p, size_t n, uint64_t h) {
    if ((t->n + 1) * 2 > t->cap && !runtab_grow(t)) return -2;
    size_t j = (size_t)h & (t->cap - 1);
    while (t->ents[j].p) j = (j + 1) & (t->cap - 1);
    cc_runent *e = &t->ents[j];
    e->p = p;
    e->len = (uint32_t)n;
    if (n <= CC_RUNKEY_INLINE) memcpy(e->key, p, n);
    e->hash = h;
    e->idx = (int32_t)t->n++;
    return e->idx;
}

/* The run index of a runId, added if new; -2 when out of memory. */
CC_INLINE int32_t runtab_get(cc_runtab *t, const char *p, size_t n) {
    uint64_t h = hash_bytes(p, n);
    size_t j = (size_t)h & (t->cap - 1);
    for (;;) {
        cc_runent *e = &t->ents[j];
        if (!e->p) return runtab_add(t, p, n, h);
        /* short keys are compared against the entry's own copy: the first occurrence in the log
         * is far behind and no longer in cache */
        if (e->hash == h && e->len == n &&
            same(n <= CC_RUNKEY_INLINE ? e->key : e->p, p, n))
            return e->idx;
        j = (j + 1) & (t->cap - 1);
    }
}

static int16_t type_code(const cc_typetab *tt, const char *p, size_t n) {
    size_t lo = 0, hi = tt->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = tt->lens[mid] < n ? -1 : tt->lens[mid] > n ? 1 : memcmp(tt->names[mid], p, n);
        if (c == 0) return (int16_t)(CC_T_FIRST_NAMED + mid);
        if (c < 0) lo = mid + 1; else hi = mid;
    }
    if (n > 5 && memcmp(p, "data-", 5) == 0) return CC_T_DATA;
    return CC_T_UNKNOWN;
}

static inline size_t skip_ws(const char *p, size_t i, size_t n) {
    while (i < n && (p[i] == ' ' || p[i] == '\t' || p[i] == '\r' || p[i] == '\n')) i++;
    return i;
}

/* i is just past an opening quote: the index just past the closing one, or 0. */
static size_t skip_str(const char *p, size_t i, size_t n) {
    size_t from = i;
    for (;;) {
        size_t k = n;
#if defined(__SSE2__)
        if (n - i >= 16) {               /* most strings here are keys and ids: the first 16
                                            bytes without a call */
            unsigned mask = (unsigned)_mm_movemask_epi8(
                _mm_cmpeq_epi8(_mm_loadu_si128((const __m128i *)(p + i)), _mm_set1_epi8('"')));
            if (mask) k = i + ctz64(mask);
            else i += 16;
        }
#endif
        if (k == n) {
            const char *q = memchr(p + i, '"', n - i);
            if (!q) return 0;
            k = (size_t)(q - p);
        }
        size_t j = k;
        while (j > from && p[j - 1] == '\\') j--;
        if (((k - j) & 1) == 0) return k + 1;
        i = k + 1;
    }
}

/* p[i] is '{' or '[': the index just past the matching bracket, or 0. */
static size_t skip_container(const char *p, size_t i, size_t n) {
    size_t depth = 0;
    while (i < n) {
        char c = p[i];
        if (c == '"') {
            i = skip_str(p, i + 1, n);
            if (!i) return 0;
            continue;
        }
        if (c == '{' || c == '[') depth++;
        else if (c == '}' || c == ']') {
            if (depth == 0) return 0;
            if (--depth == 0) return i + 1;
        }
        i++;
    }
    return 0;
}

/* Read the top-level "type" and "runId" of an object.  Returns 0 if the frame is corrupt. */
static int top_level(const char *p, size_t n, const char **tp, size_t *tn, const char **rp, size_t *rn) {
    size_t i = skip_ws(p, 0, n);
    if (i >= n || p[i] != '{') return 0;
    size_t e = n;
    while (e > i && (p[e - 1] == ' ' || p[e - 1] == '\t' || p[e - 1] == '\r' || p[e - 1] == '\n')) e--;
    if (p[e - 1] != '}') return 0;
    i++;
    int found = 0;
    for (;;) {
        i = skip_ws(p, i, n);
        if (i >= n) return 0;
        if (p[i] == '}') return skip_ws(p, i + 1, n) == n;
        if (p[i] != '"') return 0;
        size_t ks = i + 1;
        i = skip_str(p, ks, n);
        if (!i) return 0;
        size_t kl = i - 1 - ks;
        i = skip_ws(p, i, n);
        if (i >= n || p[i] != ':') return 0;
        i = skip_ws(p, i + 1, n);
        if (i >= n) return 0;
        char c = p[i];
        if (c == '"') {
            size_t vs = i + 1;
            i = skip_str(p, vs, n);
            if (!i) return 0;
            if (kl == 4 && memcmp(p + ks, "type", 4) == 0) {
                *tp = p + vs; *tn = i - 1 - vs; found |= 1;
            } else if (kl == 5 && memcmp(p + ks, "runId", 5) == 0) {
                *rp = p + vs; *rn = i - 1 - vs; found |= 2;
            }
        } else if (c == '{' || c == '[') {
            i = skip_container(p, i, n);
            if (!i) return 0;
        } else {
            while (i < n && p[i] != ',' && p[i] != '}' && p[i] != ' ' && p[i] != '\n' && p[i] != '\r' &&
                   p[i] != '\t') {
                if (p[i] == '{' || p[i] == '[' || p[i] == '"' || p[i] == ']' || p[i] == ':') return 0;
                i++;
            }
        }
        i = skip_ws(p, i, n);
        if (i >= n) return 0;
        if (p[i] == ',') { i++; continue; }
        if (p[i] == '}') return skip_ws(p, i + 1, n) == n;   /* nothing may follow the object */
        return 0;
    }
}

/* p[i] is '{': the index of the value of member `key` (of a key given twice, the last one: the
 * value a decoder takes), or 0. */
static size_t member(const char *p, size_t i, size_t n, const char *key, size_t kl) {
    size_t last = 0;
    i++;
    for (;;) {
        i = skip_ws(p, i, n);
        if (i >= n || p[i] != '"') return 0;
        size_t ks = i + 1;
        i = skip_str(p, ks, n);
        if (!i) return 0;
        int hit = i - 1 - ks == kl && memcmp(p + ks, key, kl) == 0;
        i = skip_ws(p, i, n);
        if (i >= n || p[i] != ':') return 0;
        i = skip_ws(p, i + 1, n);
        if (i >= n) return 0;
        if (hit) last = i;
        if (p[i] == '"') i = skip_str(p, i + 1, n);
        else if (p[i] == '{' || p[i] == '[') i = skip_container(p, i, n);
        else while (i < n && p[i] != ',' && p[i] != '}') i++;
        if (!i) return 0;
        i = skip_ws(p, i, n);
        if (i < n && p[i] == '}') return last;
        if (i >= n || p[i] != ',') return 0;
        i++;
    }
}

/* ---- Full validation, for the delta frames the hot scanner did not take -------------------------
 * (other key order, extra fields, white space, lone surrogates): such a frame is a delta only if
 * the decoder reads it, which has json.loads's rules, JavaScript's JSON.parse's but for NaN and
 * Infinity: escapes (a lone surrogate \udxxx is accepted), no raw control byte in a string, UTF-8,
 * numbers, literals.  Nesting deeper than JSON_MAX_DEPTH counts as invalid: no delta nests so deep. */

#define JSON_MAX_DEPTH 512

static inline int is_hex(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* p is just past a backslash: the bytes the escape takes after it, or 0. */
static size_t v_escape(const char *p, size_t n) {
    if (!n) return 0;
    switch (p[0]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
        return 1;
    case 'u':
        return n >= 5 && is_hex(p[1]) && is_hex(p[2]) && is_hex(p[3]) && is_hex(p[4]) ? 5 : 0;
    default:
        return 0;
    }
}

static size_t v_string(const char *p, size_t i, size_t n) {
    size_t s = ++i;
    int high = 0;
    for (;;) {
        if (i >= n) return 0;
        unsigned char c = (unsigned char)p[i];
        if (c == '"') break;
        if (c == '\\') {
            size_t l = v_escape(p + i + 1, n - i - 1);
            if (!l) return 0;
            i += 1 + l;
            continue;
        }
        if (c < 0x20) return 0;
        high |= c >= 0x80;
        i++;
    }
    if (high && !cc_utf8_valid(p + s, i - s)) return 0;
    return i + 1;
}

static inline int is_digit(char c) { return c >= '0' && c <= '9'; }

static size_t v_number(const char *p, size_t i, size_t n) {
    if (i < n && p[i] == '-') i++;
    if (n - i >= 8 && memcmp(p + i, "Infinity", 8) == 0) return i + 8;
    if (i >= n || !is_digit(p[i])) return 0;
    if (p[i] == '0') i++;
    else while (i < n && is_digit(p[i])) i++;
    if (i < n && p[i] == '.') {
        if (++i >= n || !is_digit(p[i])) return 0;
        while (i < n && is_digit(p[i])) i++;
    }
    if (i < n && (p[i] == 'e' || p[i] == 'E')) {
        if (++i < n && (p[i] == '+' || p[i] == '-')) i++;
        if (i >= n || !is_digit(p[i])) return 0;
        while (i < n && is_digit(p[i])) i++;
    }
    return i;
}

/* 1 if p[0..n) is one valid JSON value, white space around it allowed. */
static int json_valid(const char *p, size_t n) {
    unsigned char stack[JSON_MAX_DEPTH];   /* '{' or '[' */
    size_t d = 0, i = skip_ws(p, 0, n);
    for (;;) {
        /* a value at i */
        if (i >= n) return 0;
        char c = p[i];
        if (c == '{' || c == '[') {
            i = skip_ws(p, i + 1, n);
            if (i < n && p[i] == (c == '{' ? '}' : ']')) {
                i++;
            } else {
                if (d == JSON_MAX_DEPTH) return 0;
                stack[d++] = (unsigned char)c;
                if (c == '{') goto key;
                continue;
            }
        } else if (c == '"') {
            if (!(i = v_string(p, i, n))) return 0;
        } else if (c == '-' || is_digit(c)) {
            if (!(i = v_number(p, i, n))) return 0;
        } else if (n - i >= 4 && (memcmp(p + i, "true", 4) == 0 || memcmp(p + i, "null", 4) == 0)) {
            i += 4;
        } else if (n - i >= 5 && memcmp(p + i, "false", 5) == 0) {
            i += 5;
        } else if (n - i >= 3 && memcmp(p + i, "NaN", 3) == 0) {
            i += 3;
        } else if (c == 'I') {
            if (!(i = v_number(p, i, n))) return 0;
        } else {
            return 0;
        }
        /* after a value */
        for (;;) {
            i = skip_ws(p, i, n);
            if (d == 0) return i == n;
            if (i >= n) return 0;
            if (p[i] == ',') {
                i = skip_ws(p, i + 1, n);
                if (stack[d - 1] == '{') goto key;
                break;
            }
            if (p[i] != (stack[d - 1] == '{' ? '}' : ']')) return 0;
            d--;
            i++;
        }
        continue;
    key:
        if (i >= n || p[i] != '"' || !(i = v_string(p, i, n))) return 0;
        i = skip_ws(p, i, n);
        if (i >= n || p[i] != ':') return 0;
        i = skip_ws(p, i + 1, n);
    }
}

/* A delta frame the hot scanner did not take (extra fields, other key order): the span of its
 * payload's text (or argsTextDelta) string, found structurally. */
static int delta_span(const char *p, size_t n, int tool, const char **tp, size_t *tn) {
    size_t i = skip_ws(p, 0, n);
    size_t v = member(p, i, n, "payload", 7);
    if (!v || p[v] != '{') return 0;
    size_t t = tool ? member(p, v, n, "argsTextDelta", 13) : member(p, v, n, "text", 4);
    if (!t || p[t] != '"') return 0;
    size_t e = skip_str(p, t + 1, n);
    if (!e) return 0;
    *tp = p + t + 1;
    *tn = e - 1 - (t + 1);
    return 1;
}

typedef struct scan_state {
    const char *last_run;   /* the previous frame's runId, to skip the hash for runs of one run */
    size_t last_run_n;
    int32_t last_run_idx;
    const char *last_type;
    size_t last_type_n;
    int16_t last_type_code;
} scan_state;

static int index_frame(const char *buf, int64_t base, const cc_frame_t *f, const cc_typetab *tt,
                       cc_runtab *runs, cc_index *out, scan_state *st) {
    size_t r = out->n;
    const char *p = buf + f->start;
    size_t n = f->len;
    out->offset[r] = base + (int64_t)f->start;
    out->length[r] = (int64_t)n;
    out->text_off[r] = -1;
    out->text_len[r] = 0;
    out->run[r] = -1;
    const char *rp = NULL, *tp = NULL;
    size_t rn = 0, tn = 0;
    int16_t code;
    if (f->kind == CC_FK_SSE_MULTI) {
        out->type[r] = CC_T_MULTI;
        out->n++;
        return 1;
    }
    cc_hot_t hot;
    if (cc_scan_hot(p, n, &hot) == CC_OK) {
        code = tt->hot[hot.type];
        const cc_str_t *t = hot.type == CC_HOT_TOOL_CALL_DELTA ? &hot.f[CC_F_ARGS_TEXT_DELTA] : &hot.f[CC_F_TEXT];
        if (t->p) {
            out->text_off[r] = base + (int64_t)(t->p - buf);
            out->text_len[r] = (int64_t)t->len;
        }
        rp = hot.f[CC_F_RUN_ID].p;
        rn = hot.f[CC_F_RUN_ID].len;
    } else if (top_level(p, n, &tp, &tn, &rp, &rn)) {
        if (!tp) code = CC_T_UNKNOWN;
        else if (st->last_type && tn == st->last_type_n && memcmp(tp, st->last_type, tn) == 0)
            code = st->last_type_code;
        else {
            code = type_code(tt, tp, tn);
            st->last_type = tp;
            st->last_type_n = tn;
            st->last_type_code = code;
        }
        const char *sp;
        size_t sn;
        if (code == tt->hot[CC_HOT_TEXT_DELTA] || code == tt->hot[CC_HOT_REASONING_DELTA] ||
            code == tt->hot[CC_HOT_TOOL_CALL_DELTA]) {
            if (!json_valid(p, n)) {
                code = CC_T_CORRUPT;
                rp = NULL;
            } else if (delta_span(p, n, code == tt->hot[CC_HOT_TOOL_CALL_DELTA], &sp, &sn)) {
                out->text_off[r] = base + (int64_t)(sp - buf);
                out->text_len[r] = (int64_t)sn;
            }
        }
    } else {
        code = CC_T_CORRUPT;
        rp = NULL;
    }
    out->type[r] = code;
    if (rp) {
        if (st->last_run && rn == st->last_run_n && memcmp(rp, st->last_run, rn) == 0) {
            out->run[r] = st->last_run_idx;
        } else {
            int32_t idx = runtab_get(runs, rp, rn);
            if (idx == -2) return 0;
            out->run[r] = idx;
            st->last_run = rp;
            st->last_run_n = rn;
            st->last_run_idx = idx;
        }
    }
    out->n++;
    return 1;
}

/* Index one frame taken by fast_delta_read. */
CC_INLINE int index_fast(const char *buf, int64_t base, size_t start, size_t len, int16_t code, const char *rp,
                      size_t rn, const char *tp, size_t tn, cc_prefix *head, cc_runtab *runs, cc_index *out,
                      scan_state *st) {
    size_t r = out->n;
    out->offset[r] = base + (int64_t)start;
    out->length[r] = (int64_t)len;
    out->type[r] = code;
    out->text_off[r] = base + (int64_t)(tp - buf);
    out->text_len[r] = (int64_t)tn;
    if (head && head->run_idx >= 0) {               /* a kept head knows its run */
        out->run[r] = head->run_idx;
        out->n++;
        return 1;
    }
    if (!(st->last_run && rn == st->last_run_n && same(rp, st->last_run, rn))) {
        int32_t idx = runtab_get(runs, rp, rn);
        if (idx == -2) return 0;
        st->last_run = rp;
        st->last_run_n = rn;
        st->last_run_idx = idx;
    }
    if (head) head->run_idx = st->last_run_idx;
    out->run[r] = st->last_run_idx;
    out->n++;
    return 1;
}

CC_INLINE ptrdiff_t bulk_scan(int framing, const char *buf, size_t len, int final, int64_t base,
                              const cc_typetab *types, cc_runtab *runs, cc_index *out, int avx2) {
    cc_frame_t frame;
    scan_state st;
    memset(&st, 0, sizeof st);
    size_t done = 0;
    /* SSE: an event of one `data:` line (other fields before it) ended by a blank line; RS,
     * NDJSON: a record or line. */
    const int sse = framing == CC_FRAMING_SSE;
    const char sep = framing == CC_FRAMING_RS ? '\x1e' : '\n';
    while (done < len && out->n < out->cap) {
        /* the fast path, as long as it takes frames */
        while (out->n < out->cap && len - done > (sse ? 46u : 40u)) {
            const char *p = buf + done;
            size_t skip = 0;
            if (sse ? !(skip = sse_json_at(p, len - done)) : p[0] != '{') break;
            fast_delta_t fd;
            if (!fast_delta_kept(runs->heads, p + skip, len - done - skip, sep, &fd, avx2)) {
                if (!fast_delta_read(runs->heads, p + skip, len - done - skip, sep, &fd, avx2) ||
                    fd.type > CC_HOT_TOOL_CALL_DELTA)
                    break;
                head_keep(runs->heads, p + skip, &fd);
            }
            size_t next = frame_next(p, skip, len - done, &fd);
            if (!next) break;
            if (!index_fast(buf, base, done + skip, fd.len, types->hot[fd.type], fd.run, fd.run_len, fd.text,
                            fd.text_len, fd.head, runs, out, &st))
                return -1;
            done += next;
        }
        if (done >= len || out->n >= out->cap) break;
        /* one frame (and the blank lines or keep-alives before it) the general way */
        size_t nf = 0;
        size_t c = cc_frame_split(framing, buf + done, len - done, final, &frame, 1, &nf);
        if (nf && frame.kind != CC_FK_DONE) {
            frame.start += done;
            if (!index_frame(buf, base, &frame, types, runs, out, &st)) return -1;
        }
        done += c;
        if (c == 0) break;
    }
    return (ptrdiff_t)done;
}

static ptrdiff_t bulk_scan_sse2(int framing, const char *buf, size_t len, int final, int64_t base,
                                const cc_typetab *types, cc_runtab *runs, cc_index *out) {
    return bulk_scan(framing, buf, len, final, base, types, runs, out, 0);
}

#if FAST_HAVE_AVX2
FAST_AVX2_FN static ptrdiff_t bulk_scan_avx2(int framing, const char *buf, size_t len, int final, int64_t base,
                                             const cc_typetab *types, cc_runtab *runs, cc_index *out) {
    return bulk_scan(framing, buf, len, final, base, types, runs, out, 1);
}
#endif

ptrdiff_t cc_bulk_scan(int framing, const char *buf, size_t len, int final, int64_t base,
                       const cc_typetab *types, cc_runtab *runs, cc_index *out) {
#if FAST_HAVE_AVX2
    if (cc_fast_avx2()) return bulk_scan_avx2(framing, buf, len, final, base, types, runs, out);
#endif
    return bulk_scan_sse2(framing, buf, len, final, base, types, runs, out);
}

size_t cc_bulk_boundary(int framing, const char *buf, size_t len, size_t pos) {
    if (pos >= len) return len;
    if (pos == 0) return 0;
    /* the boundary is just after a separator that lies at pos-1 or later */
    ptrdiff_t e = cc_frame_find_end(framing, buf + (pos >= 2 ? pos - 2 : 0), pos >= 2 ? 2 : pos,
                                    buf + pos, len - pos);
    if (framing != CC_FRAMING_SSE && buf[pos - 1] == (framing == CC_FRAMING_RS ? '\x1e' : '\n'))
        return pos;
    return e < 0 ? len : pos + (size_t)e;
}

void cc_backscan_init(cc_backscan *b) { memset(b, 0, sizeof *b); }

void cc_backscan_free(cc_backscan *b) {
    cc_index *s = &b->scratch;
    free(s->offset);
    free(s->length);
    free(s->type);
    free(s->run);
    free(s->text_off);
    free(s->text_len);
    free(b->first);
    memset(b, 0, sizeof *b);
}

/* Room in the scratch for `rows` rows, the rows it holds kept. */
static int scratch_reserve(cc_index *s, size_t rows) {
    if (rows <= s->cap) return 1;
    size_t c = s->cap ? s->cap : 1024;
    while (c < rows) c *= 2;
#define GROW(f, T) do { T *q = cc_realloc(s->f, c * sizeof(T)); if (!q) return 0; s->f = q; } while (0)
    GROW(offset, int64_t);
    GROW(length, int64_t);
    GROW(type, int16_t);
    GROW(run, int32_t);
    GROW(text_off, int64_t);
    GROW(text_len, int64_t);
#undef GROW
    s->cap = c;
    return 1;
}

static int first_reserve(cc_backscan *b, size_t n) {
    if (n <= b->first_cap) return 1;
    size_t c = b->first_cap ? b->first_cap : 256;
    while (c < n) c *= 2;
    int64_t *q = cc_realloc(b->first, c * sizeof(int64_t));
    if (!q) return 0;
    for (size_t i = b->first_cap; i < c; i++) q[i] = INT64_MAX;
    b->first = q;
    b->first_cap = c;
    return 1;
}

ptrdiff_t cc_bulk_scan_back(int framing, const char *buf, size_t lo, size_t hi, size_t piece,
                            const cc_typetab *types, cc_runtab *runs, cc_backscan *b, cc_index *out,
                            size_t *bottom) {
    cc_index *s = &b->scratch;
    if (piece == 0) piece = 1;
    while (hi > lo) {
        /* the piece [start, hi): from the first boundary past hi - step, the step doubled while a
         * frame longer than it holds hi - step */
        size_t start = lo, step = piece;
        while (hi - lo > step) {
            size_t a = cc_bulk_boundary(framing, buf, hi, hi - step);
            if (a < hi) {
                start = a;
                break;
            }
            step *= 2;
        }
        if (!scratch_reserve(s, 1024)) return -1;
        s->n = 0;
        for (size_t at = start; at < hi;) {
            cc_index part = *s;                       /* the scratch past the rows it holds */
            part.offset += s->n;
            part.length += s->n;
            part.type += s->n;
            part.run += s->n;
            part.text_off += s->n;
            part.text_len += s->n;
            part.cap = s->cap - s->n;
            part.n = 0;
            ptrdiff_t got = cc_bulk_scan(framing, buf + at, hi - at, 1, (int64_t)at, types, runs, &part);
            if (got < 0) return -1;
            s->n += part.n;
            if (got == 0 && part.n == 0) return -2;
            at += (size_t)got;
            if (at < hi && s->n == s->cap && !scratch_reserve(s, s->cap + 1)) return -1;
        }
        size_t n = s->n;
        if (n > *bottom) break;                       /* no room: the piece is left unindexed (its
                                                         * runs, in the run table, hold no row) */
        size_t r0 = *bottom - n;
        memcpy(out->offset + r0, s->offset, n * sizeof(int64_t));
        memcpy(out->length + r0, s->length, n * sizeof(int64_t));
        memcpy(out->type + r0, s->type, n * sizeof(int16_t));
        memcpy(out->run + r0, s->run, n * sizeof(int32_t));
        memcpy(out->text_off + r0, s->text_off, n * sizeof(int64_t));
        memcpy(out->text_len + r0, s->text_len, n * sizeof(int64_t));
        if (!first_reserve(b, runs->n)) return -1;
        for (size_t i = n; i-- > 0;)                  /* the lowest row of a run written last */
            if (s->run[i] >= 0) b->first[s->run[i]] = (int64_t)(r0 + i);
        *bottom = r0;
        hi = start;
    }
    return (ptrdiff_t)hi;
}
