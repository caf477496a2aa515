/* The countdown behind cc_malloc and its kin (alloc.h). */
#include "chunkcodec/alloc.h"

long long cc_alloc_countdown = -1;

long long cc_alloc_arm(long long after) {
#if defined(__GNUC__) || defined(__clang__)
    return __atomic_exchange_n(&cc_alloc_countdown, after < 0 ? -1 : after, __ATOMIC_RELAXED);
#else
    long long left = cc_alloc_countdown;
    cc_alloc_countdown = after < 0 ? -1 : after;
    return left;
#endif
}
