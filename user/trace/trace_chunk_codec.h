/* SPDX-License-Identifier: MIT */
/*
 * Compression of a chunk's records (trace format 1.6, chunk flag
 * TRACE_FORMAT_CHUNK_ZSTD): each chunk's payload is one zstd frame with its
 * content size and checksum, so every chunk still stands alone and a
 * damaged one costs only itself.
 */
#ifndef TCHECK_TRACE_CHUNK_CODEC_H
#define TCHECK_TRACE_CHUNK_CODEC_H

#include <stddef.h>

/* The zstd level the recorder writes at: fast enough for a live recording. */
#define TRACE_CHUNK_COMPRESSION_LEVEL 3

struct trace_chunk_codec;

struct trace_chunk_codec *trace_chunk_codec_new(void);
void trace_chunk_codec_free(struct trace_chunk_codec *codec);

/*
 * Compresses 'length' bytes of records into the codec's buffer; *stored
 * points at the frame, valid until the next call. Returns its length, or 0
 * when compression failed (out of memory).
 */
size_t trace_chunk_compress(struct trace_chunk_codec *codec, const unsigned char *records,
			    size_t length, const unsigned char **stored);

/*
 * Decompresses a chunk's stored payload into the codec's buffer, refusing a
 * frame that claims more than 'max_length' bytes. Returns the length and
 * points *records at them, or returns 0 with 'problem' saying what is wrong.
 */
size_t trace_chunk_decompress(struct trace_chunk_codec *codec, const unsigned char *stored,
			      size_t length, size_t max_length, const unsigned char **records,
			      char *problem, size_t problem_size);

#endif /* TCHECK_TRACE_CHUNK_CODEC_H */
