// SPDX-License-Identifier: MIT
/* Reads a trace's bytes in order, with bytes handed back read again first. */
#include "trace/trace_input.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How much the search for the next chunk reads at a time. */
#define SEARCH_WINDOW (64U * 1024)

static ssize_t read_file(int fd, unsigned char *buffer, size_t length)
{
	size_t done = 0;

	while (done < length) {
		ssize_t got = read(fd, buffer + done, length - done);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return -errno;
		if (got == 0)
			break;
		done += (size_t)got;
	}
	return (ssize_t)done;
}

ssize_t trace_input_read(struct trace_input *input, unsigned char *buffer, size_t length)
{
	size_t from_returned = length < input->returned_length ? length : input->returned_length;
	ssize_t got = 0;

	if (from_returned) {
		memcpy(buffer, input->returned + input->returned_start, from_returned);
		input->returned_start += from_returned;
		input->returned_length -= from_returned;
	}
	if (from_returned < length) {
		got = read_file(input->fd, buffer + from_returned, length - from_returned);
		if (got < 0)
			return got;
	}
	input->offset += from_returned + (size_t)got;
	return (ssize_t)(from_returned + (size_t)got);
}

int trace_input_unread(struct trace_input *input, const unsigned char *bytes, size_t length)
{
	size_t needed = input->returned_length + length;

	if (!length)
		return 0;
	if (length <= input->returned_start) {
		input->returned_start -= length;
	} else {
		if (needed > input->returned_capacity) {
			unsigned char *grown = malloc(needed);

			if (!grown)
				return -ENOMEM;
			if (input->returned_length)
				memcpy(grown + length, input->returned + input->returned_start,
				       input->returned_length);
			free(input->returned);
			input->returned = grown;
			input->returned_capacity = needed;
		} else {
			memmove(input->returned + length, input->returned + input->returned_start,
				input->returned_length);
		}
		input->returned_start = 0;
	}
	memcpy(input->returned + input->returned_start, bytes, length);
	input->returned_length += length;
	input->offset -= length;
	return 0;
}

int trace_input_seek(struct trace_input *input, uint64_t offset)
{
	if (lseek(input->fd, (off_t)offset, SEEK_SET) < 0)
		return -errno;
	input->returned_start = 0;
	input->returned_length = 0;
	input->offset = offset;
	return 0;
}

int trace_input_skip_to(struct trace_input *input, const char *signature, size_t header_size,
			int (*header_whole)(const unsigned char *header), uint64_t *skipped)
{
	size_t signature_size = strlen(signature), have = 0;
	unsigned char *window = malloc(SEARCH_WINDOW);

	if (!window)
		return -ENOMEM;
	for (;;) {
		ssize_t got = trace_input_read(input, window + have, SEARCH_WINDOW - have);
		size_t kept;

		if (got < 0) {
			free(window);
			return (int)got;
		}
		have += (size_t)got;
		for (size_t at = 0; at + header_size <= have; at++) {
			int err;

			if (memcmp(window + at, signature, signature_size) != 0 ||
			    !header_whole(window + at))
				continue;
			err = trace_input_unread(input, window + at, have - at);
			*skipped += at;
			free(window);
			return err ? err : 1;
		}
		if (got == 0) {
			*skipped += have;
			free(window);
			return 0;
		}
		/* A header may begin in the last bytes: they are searched again with the next. */
		kept = have < header_size - 1 ? have : header_size - 1;
		*skipped += have - kept;
		memmove(window, window + have - kept, kept);
		have = kept;
	}
}

void trace_input_free(struct trace_input *input)
{
	free(input->returned);
	input->returned = NULL;
	input->returned_capacity = 0;
	input->returned_length = 0;
}
