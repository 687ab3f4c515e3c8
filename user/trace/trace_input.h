/* SPDX-License-Identifier: MIT */
/*
 * The bytes of a trace file as the reader takes them: read in order, with
 * room to hand bytes back, so that after a damaged chunk the reader can
 * look for the next chunk signature in what it already read, on a pipe as
 * well as on a regular file.
 */
#ifndef TCHECK_TRACE_INPUT_H
#define TCHECK_TRACE_INPUT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct trace_input {
	int fd;
	uint64_t offset; /* in the file, of the next byte handed out */
	/* Bytes handed back, handed out again before the file's next ones. */
	unsigned char *returned;
	size_t returned_start;
	size_t returned_length;
	size_t returned_capacity;
};

/* Reads up to 'length' bytes; fewer only at the end of the file. Returns the count or -errno. */
ssize_t trace_input_read(struct trace_input *input, unsigned char *buffer, size_t length);

/* Hands 'length' bytes back: the next read gives them first. Returns 0 or -ENOMEM. */
int trace_input_unread(struct trace_input *input, const unsigned char *bytes, size_t length);

/* Forgets the bytes handed back and goes to 'offset' of a regular file. Returns 0 or -errno. */
int trace_input_seek(struct trace_input *input, uint64_t offset);

/*
 * Reads on until the next 'header_size' bytes start with 'signature' and
 * pass 'header_whole' (checksum and bounds), and leaves them to be read
 * next. Adds the bytes passed over to *skipped. Returns 1 when a header
 * was found, 0 at the end of the file, or -errno.
 */
int trace_input_skip_to(struct trace_input *input, const char *signature, size_t header_size,
			int (*header_whole)(const unsigned char *header), uint64_t *skipped);

void trace_input_free(struct trace_input *input);

#endif /* TCHECK_TRACE_INPUT_H */
