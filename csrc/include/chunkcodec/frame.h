/* Frame splitting: SSE events, RS records, NDJSON lines.  Works on bytes, never on text. */
#ifndef CHUNKCODEC_FRAME_H
#define CHUNKCODEC_FRAME_H

#include <stddef.h>
#include "status.h"

typedef enum cc_framing {
    CC_FRAMING_AUTO = 0,
    CC_FRAMING_SSE = 1,
    CC_FRAMING_RS = 2,
    CC_FRAMING_NDJSON = 3,
    CC_FRAMING_JSON = 4
} cc_framing;

typedef enum cc_frame_kind {
    CC_FK_JSON = 0,      /* [start, start+len) is the JSON text of one frame */
    CC_FK_SSE_MULTI = 1, /* an SSE event with several data lines: [start, start+len) is the event block */
    CC_FK_DONE = 2       /* the `[DONE]` end-of-stream marker */
} cc_frame_kind;

typedef struct cc_frame {
    size_t start;  /* offset of the JSON text (or SSE event block) in the scanned buffer */
    size_t len;
    int kind;      /* cc_frame_kind */
    size_t bstart; /* the whole frame without its terminator: SSE event block, RS record, line; */
    size_t blen;   /* this is what max_frame_bytes limits */
} cc_frame_t;

/* Split complete frames off the front of buf.  Writes at most cap frames to out and their number to
 * *n_out; returns how many bytes were consumed (frames, separators, comments and keep-alives).  With
 * final != 0 the unterminated rest is taken as the last frame.  Never reads past buf+len. */
size_t cc_frame_split(int framing, const char *buf, size_t len, int final,
                      cc_frame_t *out, size_t cap, size_t *n_out);

/* Offset just past the first frame terminator in buf, or -1.  tail/ntail are the last (at most 2)
 * bytes that came before buf, so an SSE blank line that straddles two pieces is found. */
ptrdiff_t cc_frame_find_end(int framing, const char *tail, size_t ntail, const char *buf, size_t len);

/* Offset of the last byte c in buf[0, len), or -1 (memrchr where the C library has it). */
ptrdiff_t cc_last_byte(const char *buf, size_t len, char c);

/* Join the data lines of an SSE event block with '\n' into dst (capacity >= len).  Returns the
 * length written. */
size_t cc_sse_join_data(const char *block, size_t len, char *dst);

/* Guess the framing from the first bytes of a stream.  Returns a cc_framing, or CC_FRAMING_AUTO
 * when more bytes are needed (final != 0 forces a decision).  *skip is set to the number of leading
 * bytes to drop: a UTF-8 BOM (only looked for when bom != 0, i.e. at the very start of the stream)
 * and, while undecided, white space, which no framing gives a meaning to before the first frame.
 * Undecided after a '{' (waiting to see 0x1E or LF first), *skip stops at the '{'. */
int cc_detect_framing(const char *buf, size_t len, int final, int bom, size_t *skip);

#endif
