/* The accumulator's delta loop: see accum.h. */
#include <stdlib.h>
#include <string.h>

#include "chunkcodec/accum.h"
#include "chunkcodec/alloc.h"
#include "chunkcodec/frame.h"
#include "chunkcodec/scan.h"

#include "fast_delta.h"

_Static_assert((int)CC_ACC_TEXT_START == (int)FAST_TEXT_START && (int)CC_ACC_TEXT_END == (int)FAST_TEXT_END &&
                   (int)CC_ACC_START == (int)FAST_START && (int)CC_ACC_TOOL_INPUT_END == (int)FAST_TOOL_INPUT_END &&
                   (int)CC_ACC_TOOL_INPUT_START == (int)FAST_TOOL_INPUT_START,
               "the frame kinds of accum.h and fast_delta.h");

/* Append a scanned string, unescaped, to b (0: no room).  An unescaped text, most deltas, is
 * copied inline: the delta loop calls this directly. */
CC_INLINE int dbuf_append(cc_dbuf *b, const char *p, size_t len, int escaped) {
    size_t n = (size_t)*b->len;
    if (b->p == NULL || b->cap - n < len) return 0;
    if (escaped) {
        cc_str_t s;
        s.p = p;
        s.len = len;
        s.flags = CC_STR_ESCAPED;
        n += cc_str_decode_utf8(&s, b->p + n);
    } else {
        copy_small(b->p + n, p, len);
        n += len;
    }
    b->p[n] = 0;
    *b->len = (ptrdiff_t)n;
    return 1;
}

/* The same for a text the delta loop read with kept_plain: its escapes, if any, are the
 * one-character ones at the backslashes esc marks. */
CC_INLINE int dbuf_append_simple(cc_dbuf *b, const char *p, size_t len, uint64_t esc) {
    size_t n = (size_t)*b->len;
    if (b->p == NULL || b->cap - n < len) return 0;
    n += esc ? unescape_simple(b->p + n, p, len, esc) : (copy_small(b->p + n, p, len), len);
    b->p[n] = 0;
    *b->len = (ptrdiff_t)n;
    return 1;
}

int cc_dbuf_append(cc_dbuf *b, const cc_str_t *s) {
    return dbuf_append(b, s->p, s->len, (s->flags & CC_STR_ESCAPED) != 0);
}

CC_INLINE uint64_t route_hash(int type, const char *run, size_t rn, const char *key, size_t kn) {
    uint64_t h = ((uint64_t)rn << 40) | ((uint64_t)kn << 8) | (uint64_t)type;
    h = hash_fold(hash_fold(h, run, rn), key, kn);
    h = (h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ull;
    return h ^ (h >> 32);
}

/* Two-way set associative: a route lives in one of the two slots of its set.  (Direct mapping
 * thrashes when two routes that alternate collide, and 40 interleaved runs make that likely.) */
CC_INLINE size_t hash_set(const cc_routes *t, uint64_t h) { return (size_t)(h >> (64 - t->bits + 1)) << 1; }

/* Where a route keeps its runId and id, and its providerMetadata bytes. */
CC_INLINE const char *route_key(const cc_route *r) {
    return (size_t)r->run_len + r->key_len > CC_ROUTE_KEY ? r->ext : r->key;
}
CC_INLINE const char *route_pm(const cc_route *r) {
    size_t kl = (size_t)r->run_len + r->key_len;
    return r->ext + (kl > CC_ROUTE_KEY ? kl : 0);
}

CC_INLINE int holds(const cc_route *r, uint64_t h, int type, const char *run, size_t rn, const char *key, size_t kn) {
    if (!(r->buf != NULL && r->hash == h && r->type == type && r->run_len == rn && r->key_len == kn)) return 0;
    const char *k = route_key(r);
    return same(k, run, rn) && same(k + rn, key, kn);
}

CC_INLINE int live(const cc_route *r) { return r->buf != NULL && r->gen == r->buf->gen; }

/* The route a kept head led to is still stored, and its buffer's writer has not changed. */
CC_INLINE int head_route_held(const cc_routes *t, const cc_prefix *h) {
    return h->stamp && t->slot[h->route].stamp == h->stamp && live(&t->slot[h->route]);
}

CC_INLINE ptrdiff_t find(const cc_routes *t, int type, const char *run, size_t rn, const char *key, size_t kn,
                         int has_name) {
    uint64_t h = route_hash(type, run, rn, key, kn);
    size_t i = hash_set(t, h);
    const cc_route *r = &t->slot[i];
    if (!holds(r, h, type, run, rn, key, kn)) {
        r++;
        i++;
        if (!holds(r, h, type, run, rn, key, kn)) return -1;
    }
    if (r->gen != r->buf->gen || (has_name && r->need_name)) return -1;
    return (ptrdiff_t)i;
}

ptrdiff_t cc_route_find(const cc_routes *t, int type, const char *run, size_t run_len, const char *key,
                        size_t key_len, int has_name) {
    if (run_len + key_len > CC_ROUTE_KEY_MAX) return -1;
    return find(t, type, run, run_len, key, key_len, has_name);
}

ptrdiff_t cc_route_put(cc_routes *t, int type, const char *run, size_t run_len, const char *key, size_t key_len,
                       cc_dbuf *buf, int need_name, const char *pm, size_t pm_len) {
    size_t kl = run_len + key_len, xk = kl > CC_ROUTE_KEY ? kl : 0;
    char *ext = NULL;
    if (kl > CC_ROUTE_KEY_MAX) return -1;
    if (!pm || pm_len > CC_ROUTE_KEY_MAX) pm_len = 0;
    if (xk + pm_len && !(ext = cc_malloc(xk + pm_len))) {
        if (xk) return -1;
        pm_len = 0;                                  /* (the route without its providerMetadata) */
    }
    uint64_t h = route_hash(type, run, run_len, key, key_len);
    size_t i = hash_set(t, h);
    const cc_route *a = &t->slot[i], *b = a + 1;
    /* the slot this key already has, else an empty or dead one, else the one stored longer ago */
    if (holds(a, h, type, run, run_len, key, key_len)) {
    } else if (holds(b, h, type, run, run_len, key, key_len)) {
        i++;
    } else if (live(a)) {
        if (!live(b) || b->stamp < a->stamp) i++;
        if (live(&t->slot[i])) t->evicted++;
    }
    cc_route *r = &t->slot[i];
    r->hash = h;
    r->buf = buf;
    r->gen = buf->gen;
    r->stamp = ++t->clock;
    r->run_len = (uint16_t)run_len;
    r->key_len = (uint16_t)key_len;
    r->type = (uint8_t)type;
    r->need_name = (uint8_t)(need_name != 0);
    free(r->ext);
    r->ext = ext;
    char *k = xk ? ext : r->key;
    memcpy(k, run, run_len);
    memcpy(k + run_len, key, key_len);
    if (pm_len) memcpy(ext + xk, pm, pm_len);
    r->pm_len = (uint16_t)pm_len;
    return (ptrdiff_t)i;
}

int cc_prefix_cache_init(cc_prefix_cache *c, unsigned bits) {
    size_t sets = (size_t)1 << bits;
    /* one block: the slots, then the per-set bytes */
    c->slot = cc_calloc(1, 2 * sets * sizeof(cc_prefix) + sets);
    c->older = c->slot ? (uint8_t *)(c->slot + 2 * sets) : NULL;
    c->bits = bits;
    return c->slot != NULL;
}

void cc_prefix_cache_free(cc_prefix_cache *c) {
    if (c->slot)
        for (size_t i = 0, n = (size_t)2 << c->bits; i < n; i++) free(c->slot[i].ext);
    free(c->slot);
    c->slot = NULL;
    c->older = NULL;
}

int cc_routes_init(cc_routes *t, unsigned bits) {
    t->bits = bits;
    t->clock = 0;
    t->evicted = 0;
    t->heads.slot = NULL;
    t->heads.older = NULL;
    t->slot = cc_calloc((size_t)1 << bits, sizeof(cc_route));
    if (!t->slot || !cc_prefix_cache_init(&t->heads, bits - 1)) {
        cc_routes_free(t);
        return 0;
    }
    return 1;
}

void cc_routes_free(cc_routes *t) {
    if (t->slot)
        for (size_t i = 0, n = (size_t)1 << t->bits; i < n; i++) free(t->slot[i].ext);
    free(t->slot);
    t->slot = NULL;
    cc_prefix_cache_free(&t->heads);
}

int cc_routes_grow(cc_routes *t, unsigned bits, ptrdiff_t *moved) {
    cc_routes n;
    if (bits <= t->bits || !cc_routes_init(&n, bits)) return 0;
    n.clock = t->clock;
    for (size_t i = 0, old = (size_t)1 << t->bits; i < old; i++) {
        const cc_route *r = &t->slot[i];
        const char *k = route_key(r);
        moved[i] = live(r) ? cc_route_put(&n, r->type, k, r->run_len, k + r->run_len, r->key_len, r->buf,
                                          r->need_name, r->pm_len ? route_pm(r) : NULL, r->pm_len)
                           : -1;
    }
    n.evicted = 0;
    cc_routes_free(t);
    *t = n;
    return 1;
}

int cc_fast_avx2(void) {
#if FAST_HAVE_AVX2
    static int have = -1;
    int v = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (v < 0) {
        const char *e = getenv("CHUNKCODEC_NO_AVX2");
        v = !(e && *e && strcmp(e, "0") != 0) && __builtin_cpu_supports("avx2");
        __atomic_store_n(&have, v, __ATOMIC_RELAXED);
    }
    return v;
#else
    return 0;
#endif
}

/* A frame read for the caller: the event, where the next frame starts, its runId, from, key and
 * name. */
CC_INLINE void event_stop(cc_accum_stop *st, int event, const fast_delta_t *fd, size_t next) {
    st->event = event;
    st->event_bytes = next;
    st->run = fd->run;
    st->run_len = fd->run_len;
    st->from = fd->from;
    st->from_len = fd->from_len;
    st->key = fd->key;
    st->key_len = fd->key_len;
    st->name = fd->name;
    st->name_len = fd->name_len;
}

/* A delta read for the caller to route: one whose providerMetadata its route does not hold
 * (CC_ACC_PM_DELTA), or one without a route (CC_ACC_NEW_ROUTE). */
CC_INLINE void delta_stop(cc_accum_stop *st, int event, const fast_delta_t *fd, size_t skip, size_t next) {
    event_stop(st, event, fd, next);
    st->type = fd->type;
    st->text = fd->text;
    st->text_len = fd->text_len;
    st->pm = fd->pm;
    st->pm_len = fd->pm_len;
    st->frame_off = skip;
    st->frame_len = fd->len;
}

CC_INLINE size_t accum_deltas(int framing, const char *buf, size_t len, size_t max_frame, cc_routes *t,
                              cc_accum_stop *st, int avx2) {
    /* SSE: an event of one `data:` line (other fields before it) ended by a blank line; RS,
     * NDJSON: a record or line. */
    const int sse = framing == CC_FRAMING_SSE;
    const char sep = framing == CC_FRAMING_RS ? '\x1e' : '\n';
    size_t done = 0;
    st->frames = 0;
    st->last = st->full = -1;
    st->need = 0;
    st->event = 0;
    if (framing != CC_FRAMING_SSE && framing != CC_FRAMING_RS && framing != CC_FRAMING_NDJSON) return 0;
    while (len - done > (sse ? 46u : 40u)) {
        const char *p = buf + done;
        size_t skip = 0;
        if (sse ? !(skip = sse_json_at(p, len - done)) : p[0] != '{') break;
        const char *q = p + skip;
        size_t avail = len - done - skip;
        fast_delta_t fd;
        cc_prefix *h = avail < HEAD_MIN ? NULL : head_find(&t->heads, q, avail, avx2);
        if (h && !h->pm_len && head_route_held(t, h)) {
            /* The usual delta: a kept head whose route still holds, its text in one block with
             * one-character escapes at most (kept_plain), appended as below without filling fd
             * (the same checks, in the same order). */
            uint64_t esc;
            size_t tl = kept_plain(h, q, avail, sep, &fd.len, &esc, avx2);
            if (tl != (size_t)-1) {
                if (skip + fd.len + (q[fd.len] == '\r') > max_frame) break;
                size_t next = frame_next(p, skip, len - done, &fd);
                if (!next) break;
                cc_dbuf *b = t->slot[h->route].buf;
                if (!dbuf_append_simple(b, q + h->len, tl, esc)) {
                    st->full = h->route;
                    st->need = tl;
                    break;
                }
                st->frames++;
                st->last = h->route;
                done += next;
                continue;
            }
        }
        if (!(h && kept_read(h, q, avail, sep, &fd, avx2))) {
            if (!fast_delta_read(&t->heads, q, avail, sep, &fd, avx2)) break;
            head_keep(&t->heads, q, &fd);
        }
        /* (max_frame is on the frame's line, or SSE event, a CR before its LF included: the
         * general path's measure) */
        if (skip + fd.len + (p[skip + fd.len] == '\r') > max_frame) break;
        size_t next = frame_next(p, skip, len - done, &fd);
        if (!next) break;
        if (fd.type >= FAST_TEXT_START) {            /* for the caller, without a decode */
            event_stop(st, fd.type, &fd, next);      /* (the same codes: see the assert above) */
            break;
        }
        ptrdiff_t i = -1;
        h = fd.head;
        if (h && head_route_held(t, h)) {
            i = h->route;                            /* the route this head led to, still held */
        } else if (fd.run_len + fd.key_len <= CC_ROUTE_KEY_MAX) {
            i = find(t, fd.type, fd.run, fd.run_len, fd.key, fd.key_len, fd.name != NULL);
            if (i >= 0 && h) {
                h->route = (uint32_t)i;
                h->stamp = t->slot[i].stamp;
            }
        }
        if (fd.pm && (i < 0 || t->slot[i].pm_len != fd.pm_len || !same(route_pm(&t->slot[i]), fd.pm, fd.pm_len))) {
            delta_stop(st, CC_ACC_PM_DELTA, &fd, skip, next);   /* the part takes this providerMetadata */
            break;
        }
        if (i < 0) {
            /* the caller routes it from what was read here (the first delta of a part, or one
             * with keys the general path would decode it whole for, and store no route) */
            delta_stop(st, CC_ACC_NEW_ROUTE, &fd, skip, next);
            break;
        }
        if (!dbuf_append(t->slot[i].buf, fd.text, fd.text_len, fd.escaped)) {
            st->full = i;
            st->need = fd.text_len;
            break;
        }
        st->frames++;
        st->last = i;
        done += next;
    }
    return done;
}

static size_t accum_deltas_sse2(int framing, const char *buf, size_t len, size_t max_frame, cc_routes *t,
                                cc_accum_stop *st) {
    return accum_deltas(framing, buf, len, max_frame, t, st, 0);
}

#if FAST_HAVE_AVX2
FAST_AVX2_FN static size_t accum_deltas_avx2(int framing, const char *buf, size_t len, size_t max_frame,
                                             cc_routes *t, cc_accum_stop *st) {
    return accum_deltas(framing, buf, len, max_frame, t, st, 1);
}
#endif

size_t cc_accum_deltas(int framing, const char *buf, size_t len, size_t max_frame, cc_routes *t,
                       cc_accum_stop *st) {
#if FAST_HAVE_AVX2
    if (cc_fast_avx2()) return accum_deltas_avx2(framing, buf, len, max_frame, t, st);
#endif
    return accum_deltas_sse2(framing, buf, len, max_frame, t, st);
}
