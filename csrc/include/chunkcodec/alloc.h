/* The C core's allocations.  Every malloc, calloc and realloc of the core goes through these, so
 * that a test can make any one of them fail (cc_alloc_arm) and check what its caller does when out
 * of memory: raise MemoryError, or give the same answer without what it could not allocate (the
 * caches), never crash or lose data.  Unarmed, each costs a load and a predicted branch; none is
 * on a per-byte path.  Plain C11, no Python.h. */
#ifndef CHUNKCODEC_ALLOC_H
#define CHUNKCODEC_ALLOC_H
#include <stdlib.h>

/* Arm the countdown: the allocation after `after` more succeed fails, and the ones after it
 * succeed again; after < 0 disarms.  Returns what was left of the countdown before (so arming with
 * a large number, running something, then disarming tells how many allocations it made).  The
 * core is a static library linked into each extension module: each has its own countdown. */
long long cc_alloc_arm(long long after);

extern long long cc_alloc_countdown;      /* (cc_alloc_arm's; -1 when disarmed) */

static inline int cc_alloc_fails(void) {
#if defined(__GNUC__) || defined(__clang__)
    if (__builtin_expect(__atomic_load_n(&cc_alloc_countdown, __ATOMIC_RELAXED) < 0, 1)) return 0;
    return __atomic_fetch_sub(&cc_alloc_countdown, 1, __ATOMIC_RELAXED) == 0;
#else
    if (cc_alloc_countdown < 0) return 0;
    return cc_alloc_countdown-- == 0;
#endif
}

static inline void *cc_malloc(size_t n) { return cc_alloc_fails() ? NULL : malloc(n); }
static inline void *cc_calloc(size_t k, size_t n) { return cc_alloc_fails() ? NULL : calloc(k, n); }
static inline void *cc_realloc(void *p, size_t n) { return cc_alloc_fails() ? NULL : realloc(p, n); }

#endif
