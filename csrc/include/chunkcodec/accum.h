/* The accumulator's delta loop: appends the text of consecutive delta frames straight from the
 * input to the buffers their (type, runId, id) route to, without returning to the caller per frame.
 *
 * The caller (the Cython glue) owns the buffers and decides the routes: it resolves a route the
 * first time a (type, runId, id) is seen, and stores it here; a frame whose route is not stored,
 * whose buffer's writer has changed since, or whose buffer is full, stops the loop and goes back to
 * the caller, which handles it and carries on.  No allocation, no Python. */
#ifndef CHUNKCODEC_ACCUM_H
#define CHUNKCODEC_ACCUM_H
#include <stddef.h>
#include <stdint.h>

#include "scan.h"

/* A growing UTF-8 buffer the caller owns.  p has room for cap bytes and a NUL after them; the
 * length lives in the caller's object (*len), so the caller sees every append at once. */
typedef struct cc_dbuf {
    char *p;
    ptrdiff_t *len;
    size_t cap;
    uint64_t gen;       /* the caller bumps it whenever the buffer's writer changes */
} cc_dbuf;

/* Append a scanned string, decoded.  0 (nothing written) when the buffer has no room for s->len. */
int cc_dbuf_append(cc_dbuf *b, const cc_str_t *s);

/* A decoder's route table starts with 1 << CC_ROUTE_BITS_MIN slots (most streams have a part or
 * two open at a time).  The caller grows it to 1 << CC_ROUTE_BITS_BIG when a live route has to
 * make way (a log interleaving many runs), or at once for a big feed; past that, to
 * 1 << CC_ROUTE_BITS_MAX only when routes keep making way (hundreds of runs in flight at once:
 * 400 runs of long texts routed a fifth of their deltas through Python at 512 slots). */
#define CC_ROUTE_BITS_MIN 4
#define CC_ROUTE_BITS_BIG 9
#define CC_ROUTE_BITS_MAX 11
#define CC_ROUTE_KEY 80         /* runId and id bytes together, kept in the route itself ... */
#define CC_ROUTE_KEY_MAX 1024   /* ... or up to this many in ext (a UUID and an OpenAI item id:
                                 * 88); longer pairs are not stored */

typedef struct cc_route {
    uint64_t hash;
    cc_dbuf *buf;       /* NULL: empty */
    uint64_t gen;       /* buf->gen when stored: the route holds while they are equal */
    uint64_t stamp;     /* when it was stored: the older of a set's two routes makes way */
    uint16_t run_len, key_len;
    /* The providerMetadata bytes the route's part took last (pm_len 0: none): a delta carrying
     * these same bytes changes nothing of the part but its text, so the loop takes it; one
     * carrying others goes to the caller (last seen wins).  A delta without providerMetadata
     * leaves the part's as it is: the loop takes it either way. */
    uint16_t pm_len;
    uint8_t type;       /* cc_hot_type */
    uint8_t need_name;  /* a tool call that has no name yet: a delta naming it goes to the caller */
    char *ext;          /* NULL, or (the table owns it) the runId and id when longer than
                         * CC_ROUTE_KEY, then the providerMetadata bytes */
    char key[CC_ROUTE_KEY];   /* the runId and id, when they fit */
} cc_route;

/* The delta loops' memory of frame heads (fast_delta.h).  A text-delta or reasoning-delta frame
 * is a head ({"type":...,"runId":R,"from":F,"payload":{"id":I,"text":") and the text: every
 * delta of a part has the same head.  Once a frame has been read in full and its head holds no
 * escape, the head is kept here, in the set its bytes 30-61 pick (the runId on); a later frame whose
 * first bytes equal a kept head byte for byte reads the same up to its text (JSON is read left to
 * right), so only its text and what follows are read.  Two-way set associative (a log interleaves
 * a few hundred runs, each with one part open at a time): a new head takes its set's empty slot,
 * else the one kept longer ago.  The same slots keep templates, a head and a tail, for frames in
 * another shape whose text is not last (fast_delta.h). */
#define CC_PREFIX_BITS 9    /* sets of the bulk indexer's (a decoder's: as many as its route sets) */
#define CC_PREFIX_INLINE 160   /* head bytes (and a template's tail after them) kept in the slot ... */
#define CC_PREFIX_MAX 288      /* ... all of them in ext when longer; longer heads are not kept
                                * (OpenAI's item ids, of 50 bytes and more, as payload.id and in
                                * providerMetadata make heads of 260 bytes) */
typedef struct cc_prefix {
    uint16_t len;        /* the head's length (the text starts there); 0: an empty slot */
    uint8_t type;        /* cc_hot_type */
    uint8_t extra;       /* fast_delta_t.extra of the frame it was kept from (so of every frame with it) */
    uint16_t run_off, run_len, from_off, from_len, key_off, key_len;
    uint16_t pm_off, pm_len;  /* its providerMetadata object (pm_len 0: none) */
    int32_t run_idx;     /* the bulk indexer's run index for the head's runId, or -1 */
    uint32_t route;      /* the delta loop's route for it: the slot, and its stamp then (0: none) */
    uint16_t tail_len;   /* 0: a head; else a template (fast_delta.h), its tail kept after the head */
    uint64_t stamp;
    char *ext;           /* NULL, or (the cache owns it) the whole head and tail when longer than
                          * CC_PREFIX_INLINE */
    char head[CC_PREFIX_INLINE];   /* its first bytes (the head, then the tail, when they fit) */
} cc_prefix;
typedef struct cc_prefix_cache {
    cc_prefix *slot;    /* 2 << bits: set i is slots 2i and 2i + 1 */
    uint8_t *older;     /* 1 << bits: per set, the slot a new head takes when both are used */
    unsigned bits;      /* 1 to 16 */
} cc_prefix_cache;

/* An empty cache of 1 << bits sets (one allocation, zeroed, and one per head longer than
 * CC_PREFIX_INLINE kept later); 0 when out of memory. */
int cc_prefix_cache_init(cc_prefix_cache *c, unsigned bits);
void cc_prefix_cache_free(cc_prefix_cache *c);

/* A two-way set-associative table: a route goes in one of its set's two slots, replacing a dead
 * route or else the older one.  (With the delta loop's heads: see cc_prefix above.) */
typedef struct cc_routes {
    cc_route *slot;     /* 1 << bits: set i is slots 2i and 2i + 1 */
    unsigned bits;      /* CC_ROUTE_BITS_MIN to CC_ROUTE_BITS_MAX */
    uint64_t clock;
    uint64_t evicted;   /* live routes cc_route_put has made way for since the table was made */
    cc_prefix_cache heads;   /* as many sets (two heads each) as the table has: as many heads as routes,
                              * 208 bytes a head (twice as many sets of 192-byte heads took 196 KB
                              * at 512 routes, allocated afresh on every growth: its page
                              * faults cost a 40-run log's accumulate about 6 %; and 328-byte heads,
                              * the longest inline, made it 5 % slower than 192-byte ones) */
} cc_routes;

/* An empty table of 1 << bits slots, its heads empty too; 0 when out of memory.  (t is overwritten:
 * it must hold no table.) */
int cc_routes_init(cc_routes *t, unsigned bits);
void cc_routes_free(cc_routes *t);
/* Move t's live routes to a new table of 1 << bits slots (bits > t->bits), with empty heads.
 * moved (room for t's old slot count) gets each old slot's new one, or -1: empty or dead.  When
 * a route moved later takes the slot of one moved earlier (a third live route for a set of the
 * new table), moved names that slot for both: read in order, the later wins, as in the table.
 * 0 when out of memory: t is unchanged. */
int cc_routes_grow(cc_routes *t, unsigned bits, ptrdiff_t *moved);

/* The slot holding a live route for (type, run, key), or -1.  has_name: the frame names its tool. */
ptrdiff_t cc_route_find(const cc_routes *t, int type, const char *run, size_t run_len, const char *key,
                        size_t key_len, int has_name);
/* Store a route in its set: in the slot the key already has, else an empty or dead one, else the
 * older one.  pm: the providerMetadata bytes its part took last (copied), or NULL (a copy that
 * cannot be allocated is not kept: deltas carrying providerMetadata then go to the caller).
 * Returns the slot, or -1 if the key is too long to store. */
ptrdiff_t cc_route_put(cc_routes *t, int type, const char *run, size_t run_len, const char *key, size_t key_len,
                       cc_dbuf *buf, int need_name, const char *pm, size_t pm_len);

/* The frames the loop does not take but reads for the caller, so that it needs no decoder for
 * them, in their plain shape and without escapes: text-start and text-end (no providerMetadata),
 * start (payload {id, messageId}), tool-call-input-streaming-end (payload {toolCallId}) and
 * tool-call-input-streaming-start (payload {toolCallId, toolName}: key and name). */
enum { CC_ACC_TEXT_START = 4, CC_ACC_TEXT_END = 5, CC_ACC_START = 6, CC_ACC_TOOL_INPUT_END = 7,
       CC_ACC_TOOL_INPUT_START = 10 };
/* And a text or reasoning delta carrying providerMetadata that its route does not hold (or that
 * has no route): read, its strings possibly escaped, for the caller to route and store. */
enum { CC_ACC_PM_DELTA = 8 };
/* And a delta whose part has no route (its first, or one whose route made way): read, its strings
 * possibly escaped, for the caller to route, which then need not split and scan the frame again.
 * Among them deltas holding keys the general path's scanner does not know (cc_scan_hot refuses
 * them: keys the chunk's schema does not know either, or a tool-call-delta's providerMetadata;
 * they do not change what adding the chunk does), which the general path would decode whole, and
 * store no route for. */
enum { CC_ACC_NEW_ROUTE = 9 };

/* Why cc_accum_deltas stopped, and what it took. */
typedef struct cc_accum_stop {
    size_t frames;      /* frames taken */
    ptrdiff_t last;     /* the slot of the last frame taken, or -1 */
    ptrdiff_t full;     /* the slot whose buffer had no room for the next frame, or -1 */
    size_t need;        /* the bytes that frame needs */
    int event;          /* 0, or CC_ACC_TEXT_*: the next frame is one, read (and valid) */
    size_t event_bytes; /* its bytes, separator included: where the frame after it starts */
    const char *run, *from, *key;   /* its runId, from and payload.id (toolCallId), UTF-8 without
                                     * escapes (but a CC_ACC_PM_DELTA's or CC_ACC_NEW_ROUTE's: as
                                     * written, between their quotes; from NULL when it has none) */
    size_t run_len, from_len, key_len;
    int type;           /* CC_ACC_PM_DELTA, CC_ACC_NEW_ROUTE: cc_hot_type; its text and
                         * providerMetadata as written (pm NULL: none) */
    const char *text, *pm;
    size_t text_len, pm_len;
    const char *name;   /* CC_ACC_NEW_ROUTE: a tool-call-delta's toolName as written, or NULL;
                         * CC_ACC_TOOL_INPUT_START: its toolName */
    size_t name_len;
    size_t frame_off, frame_len;    /* CC_ACC_PM_DELTA, CC_ACC_NEW_ROUTE: the JSON frame, from where
                                     * the event starts */
} cc_accum_stop;

/* Take the delta frames at the start of buf, in order, as long as each one is a delta the loop
 * reads (Mastra's exact shape, or another key order, white space or keys the schema does not know:
 * fully validated, as cc_scan_hot or msgspec would), at most max_frame bytes (the SSE event block,
 * as cc_frame_t.blen counts), complete (its separator is in buf), and has a live route with room in
 * its buffer.  Returns the bytes consumed: the next frame starts there (st->event says when it is
 * one read for the caller: a text-start, text-end, start, tool-call-input-streaming-end, or a
 * delta to route). */
size_t cc_accum_deltas(int framing, const char *buf, size_t len, size_t max_frame, cc_routes *t,
                       cc_accum_stop *st);
/* 1 when the delta loops (this one and the bulk indexer's) read 64-byte blocks with AVX2: the CPU
 * has it and CHUNKCODEC_NO_AVX2 is not set (to a non-empty value other than "0"; the tests run
 * both ways).  0: SSE2 (every x86-64) or plain C.  Decided once per process. */
int cc_fast_avx2(void);
#endif
