/* Encoding helpers that make output byte-identical to JavaScript's JSON.stringify. */
#ifndef CHUNKCODEC_ENCODE_H
#define CHUNKCODEC_ENCODE_H

#include <stddef.h>

/* Bytes needed to write the UTF-8 text src as a JSON string body (no quotes) the way
 * JSON.stringify escapes it: \" \\ \b \f \n \r \t, other controls as \u00xx, all else raw. */
size_t cc_js_escaped_len(const char *src, size_t len);
/* Write it; dst must hold cc_js_escaped_len bytes.  Returns bytes written. */
size_t cc_js_escape(const char *src, size_t len, char *dst);

/* The same for a string held as code units of `kind` bytes (1, 2 or 4: a CPython str's storage),
 * written as UTF-8; a lone surrogate is written as a \udxxx escape, as JSON.stringify does. */
size_t cc_js_escaped_len_ucs(int kind, const void *data, size_t n);
size_t cc_js_escape_ucs(int kind, const void *data, size_t n, char *dst);

/* Rewrite the numbers of a compact JSON text so that floats read as JavaScript prints them
 * (1.0 -> 1, 1e21 -> 1e+21, 1e16 -> 10000000000000000, -0.0 -> 0).  Strings are copied unchanged.
 * With dst == NULL only measures.  Returns the output length. */
size_t cc_js_numbers(const char *src, size_t len, char *dst);

/* Non-zero when src holds a number token that cc_js_numbers would change. */
int cc_js_numbers_needed(const char *src, size_t len);

#endif
