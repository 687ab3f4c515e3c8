/* SPDX-License-Identifier: MIT */
/*
 * The reader of the kernel-to-daemon BPF ring buffer.
 *
 * It reads records in place, as libbpf's ring_buffer does, but hands the
 * space back to the kernel (stores the consumer position) once a batch of
 * records is read, not after every record. The probes read that position at
 * every reservation: a store per record moved its cache line between the
 * reader's CPU and the traced thread's at every traced call while the reader
 * was busy.
 */
#ifndef TCHECK_RING_READER_H
#define TCHECK_RING_READER_H

#include <stddef.h>
#include <stdint.h>

struct ring_reader;

/* Called for every record, in order. Non-zero stops the read (see ring_records_read). */
typedef int (*ring_record_fn)(void *context, const void *record, size_t size);

/*
 * A ring buffer as the kernel lays it out: the consumer position (the
 * reader's to write), the producer position, and 'bytes' of data (a power of
 * two) mapped twice in a row, so that a record that wraps around reads as one.
 */
struct ring_positions {
	unsigned long *consumer;
	const unsigned long *producer;
	const uint8_t *data;
	size_t bytes;
};

/*
 * Reads every complete record between the two positions, in order, skipping
 * discarded ones and stopping at one still being written. Moves the consumer
 * position on at least every RING_RELEASE_BYTES(bytes) and at the end.
 * Returns how many records were read, or, when the callback returned
 * non-zero, minus its absolute value (after moving past that record).
 */
int ring_records_read(const struct ring_positions *ring, ring_record_fn on_record, void *context);

/* 64 KiB, or an eighth of a ring smaller than half a MiB. */
#define RING_RELEASE_BYTES(bytes) ((bytes) / 8 < 65536 ? (bytes) / 8 : 65536)

/*
 * Maps the ring buffer whose map is 'map_fd' (of 'bytes' bytes, a power of two).
 * NULL with errno set when it cannot.
 */
struct ring_reader *ring_reader_new(int map_fd, size_t bytes, ring_record_fn on_record,
				    void *context);
void ring_reader_free(struct ring_reader *reader);

/*
 * Reads every complete record there is now. Returns how many were read, or the
 * callback's non-zero value (negative) when it stopped the read.
 */
int ring_reader_consume(struct ring_reader *reader);

/*
 * Waits up to timeout_ms (-1: for ever) for the kernel to wake the reader, then
 * reads what is there. Returns as ring_reader_consume, or -errno when the wait
 * fails (-EINTR when a signal ended it).
 */
int ring_reader_poll(struct ring_reader *reader, int timeout_ms);

#endif
