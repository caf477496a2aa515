/* Bulk indexing of stream logs: one row per frame (offset, length, type code, run index, delta text
 * span), no allocation per frame, no Python.  Meant to run over an mmap with the GIL released, one
 * call per byte range (ranges split on frame boundaries run in parallel, each with its own run
 * table). */
#ifndef CHUNKCODEC_BULK_H
#define CHUNKCODEC_BULK_H
#include <stddef.h>
#include <stdint.h>

/* Type codes below CC_T_FIRST_NAMED; named types get CC_T_FIRST_NAMED + their index in the table. */
enum {
    CC_T_CORRUPT = 0,   /* not a JSON object: a cut line, binary garbage, unbalanced brackets */
    CC_T_UNKNOWN = 1,   /* an object whose top-level "type" is missing or not in the table */
    CC_T_DATA = 2,      /* "data-*" */
    CC_T_MULTI = 3,     /* an SSE event with several data lines: not looked into */
    CC_T_FIRST_NAMED = 4
};

/* The known type names, sorted by (length, bytes). */
typedef struct cc_typetab {
    const char *const *names;
    const size_t *lens;
    size_t n;
    int16_t hot[4];     /* the codes of text-delta, reasoning-delta, tool-call-delta (by cc_hot_type) */
} cc_typetab;

/* runId bytes -> dense index, open addressing.  Keys point into the scanned buffer; keys up to
 * CC_RUNKEY_INLINE bytes (UUIDs) are also copied into the entry, which is one cache line. */
#define CC_RUNKEY_INLINE 40
typedef struct cc_runent {
    const char *p;
    uint32_t len;
    int32_t idx;
    uint64_t hash;
    char key[CC_RUNKEY_INLINE];
} cc_runent;

struct cc_prefix_cache;
typedef struct cc_runtab {
    cc_runent *ents;
    size_t cap;         /* a power of two */
    size_t n;
    struct cc_prefix_cache *heads;  /* the delta loop's frame heads (accum.h), for this table's scans */
} cc_runtab;

int cc_runtab_init(cc_runtab *t, size_t cap);
void cc_runtab_free(cc_runtab *t);

/* Output columns, preallocated by the caller with room for cap rows. */
typedef struct cc_index {
    int64_t *offset;    /* absolute byte offset of the frame's JSON text */
    int64_t *length;
    int16_t *type;
    int32_t *run;       /* -1: no runId */
    int64_t *text_off;  /* delta frames: absolute offset of the text (still JSON-escaped), else -1 */
    int64_t *text_len;
    size_t cap;
    size_t n;
} cc_index;

/* Index the complete frames of buf (final != 0: the rest is a last frame).  Stops when the index is
 * full.  Returns the bytes consumed; base is buf's absolute offset.  -1 means out of memory. */
ptrdiff_t cc_bulk_scan(int framing, const char *buf, size_t len, int final, int64_t base,
                       const cc_typetab *types, cc_runtab *runs, cc_index *out);

/* Indexing a range from its end down (so that its rows can end at a row known from the start, where
 * the next range's rows begin): each piece is indexed into `scratch`, which stays in the cache, then
 * copied into place; `first` keeps, by run index, the lowest row holding that run. */
typedef struct cc_backscan {
    cc_index scratch;   /* arrays owned; cap grows to the largest piece's rows */
    int64_t *first;     /* INT64_MAX: no row yet */
    size_t first_cap;
} cc_backscan;

void cc_backscan_init(cc_backscan *b);
void cc_backscan_free(cc_backscan *b);

/* Index the frames of buf[lo:hi) (lo and hi frame boundaries; offsets in buf are absolute) from
 * hi down, in pieces of about `piece` bytes, each piece's rows in file order just below row
 * *bottom of out, which is lowered.  Stops at a piece whose rows do not fit (its runs may then be
 * in the run table with no row in b->first).  Returns the lowest byte indexed (lo once all of it
 * is), -1 when out of memory, -2 when the scanner does not advance. */
ptrdiff_t cc_bulk_scan_back(int framing, const char *buf, size_t lo, size_t hi, size_t piece,
                            const cc_typetab *types, cc_runtab *runs, cc_backscan *b, cc_index *out,
                            size_t *bottom);

/* The offset of the first frame boundary at or after pos (just past a separator), or len. */
size_t cc_bulk_boundary(int framing, const char *buf, size_t len, size_t pos);
#endif
