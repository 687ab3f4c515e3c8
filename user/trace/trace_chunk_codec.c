// SPDX-License-Identifier: MIT
/* zstd frames for chunk payloads, one compression and one decompression context reused. */
#include "trace/trace_chunk_codec.h"

#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

struct trace_chunk_codec {
	ZSTD_CCtx *compressor;
	ZSTD_DCtx *decompressor;
	unsigned char *buffer;
	size_t capacity;
};

struct trace_chunk_codec *trace_chunk_codec_new(void)
{
	return calloc(1, sizeof(struct trace_chunk_codec));
}

void trace_chunk_codec_free(struct trace_chunk_codec *codec)
{
	if (!codec)
		return;
	ZSTD_freeCCtx(codec->compressor);
	ZSTD_freeDCtx(codec->decompressor);
	free(codec->buffer);
	free(codec);
}

static int reserve(struct trace_chunk_codec *codec, size_t length)
{
	unsigned char *grown;

	if (length <= codec->capacity)
		return 0;
	grown = realloc(codec->buffer, length);
	if (!grown)
		return -1;
	codec->buffer = grown;
	codec->capacity = length;
	return 0;
}

size_t trace_chunk_compress(struct trace_chunk_codec *codec, const unsigned char *records,
			    size_t length, const unsigned char **stored)
{
	size_t bound = ZSTD_compressBound(length), written;

	if (!codec->compressor) {
		codec->compressor = ZSTD_createCCtx();
		if (!codec->compressor)
			return 0;
		ZSTD_CCtx_setParameter(codec->compressor, ZSTD_c_compressionLevel,
				       TRACE_CHUNK_COMPRESSION_LEVEL);
		ZSTD_CCtx_setParameter(codec->compressor, ZSTD_c_checksumFlag, 1);
		ZSTD_CCtx_setParameter(codec->compressor, ZSTD_c_contentSizeFlag, 1);
	}
	if (reserve(codec, bound))
		return 0;
	written = ZSTD_compress2(codec->compressor, codec->buffer, bound, records, length);
	if (ZSTD_isError(written))
		return 0;
	*stored = codec->buffer;
	return written;
}

size_t trace_chunk_decompress(struct trace_chunk_codec *codec, const unsigned char *stored,
			      size_t length, size_t max_length, const unsigned char **records,
			      char *problem, size_t problem_size)
{
	unsigned long long content = ZSTD_getFrameContentSize(stored, length);
	size_t got;

	if (content == ZSTD_CONTENTSIZE_ERROR || content == ZSTD_CONTENTSIZE_UNKNOWN) {
		snprintf(problem, problem_size,
			 "is marked compressed but does not hold a zstd frame with its size");
		return 0;
	}
	if (content == 0 || content > max_length) {
		snprintf(problem, problem_size,
			 "holds a compressed frame of %llu bytes, outside the 1 to %zu a chunk "
			 "may hold",
			 content, max_length);
		return 0;
	}
	if (!codec->decompressor && !(codec->decompressor = ZSTD_createDCtx())) {
		snprintf(problem, problem_size, "could not be decompressed: out of memory");
		return 0;
	}
	if (reserve(codec, (size_t)content)) {
		snprintf(problem, problem_size, "could not be decompressed: out of memory");
		return 0;
	}
	got = ZSTD_decompressDCtx(codec->decompressor, codec->buffer, (size_t)content, stored,
				  length);
	if (ZSTD_isError(got) || got != content) {
		snprintf(problem, problem_size, "could not be decompressed (%s)",
			 ZSTD_isError(got) ? ZSTD_getErrorName(got) : "its size does not match");
		return 0;
	}
	*records = codec->buffer;
	return got;
}
