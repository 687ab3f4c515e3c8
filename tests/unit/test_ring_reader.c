// SPDX-License-Identifier: MIT
/* The ring-buffer reader over memory laid out as the kernel lays out a BPF ring buffer. */
#include <stdlib.h>
#include <string.h>

#include <linux/bpf.h>

#include "probe/ring_reader.h"
#include "unit.h"

#define RING_BYTES 4096UL

struct fake_ring {
	unsigned long consumer;
	unsigned long producer;
	uint8_t data[2 * RING_BYTES]; /* the kernel maps the data twice in a row */
	struct ring_positions positions;
};

struct seen {
	int count;
	uint32_t values[64];
	size_t sizes[64];
	unsigned long consumer_at[64]; /* the consumer position the kernel saw at each record */
	const unsigned long *consumer;
	int stop_at; /* 1-based; 0: never */
};

static void fake_ring_init(struct fake_ring *ring)
{
	memset(ring, 0, sizeof(*ring));
	ring->positions =
		(struct ring_positions){ &ring->consumer, &ring->producer, ring->data, RING_BYTES };
}

/* Writes a record of 'length' bytes (at least 4) holding 'value', with header flags. */
static void put_record(struct fake_ring *ring, uint32_t length, uint32_t value, uint32_t flags)
{
	uint8_t record[BPF_RINGBUF_HDR_SZ + 512] = { 0 };
	uint32_t header = length | flags;
	unsigned long start = ring->producer & (RING_BYTES - 1);
	unsigned long span = (length + BPF_RINGBUF_HDR_SZ + 7) & ~7UL;

	memcpy(record, &header, sizeof(header));
	memcpy(record + BPF_RINGBUF_HDR_SZ, &value, sizeof(value));
	for (unsigned long i = 0; i < span; i++) {
		unsigned long at = (start + i) & (RING_BYTES - 1);

		ring->data[at] = record[i];
		ring->data[at + RING_BYTES] = record[i];
	}
	ring->producer += span;
}

static int remember(void *context, const void *record, size_t size)
{
	struct seen *seen = context;

	memcpy(&seen->values[seen->count], record, sizeof(uint32_t));
	seen->sizes[seen->count] = size;
	seen->consumer_at[seen->count] = *seen->consumer;
	seen->count++;
	return seen->count == seen->stop_at ? 1 : 0;
}

UNIT_TEST(ring_reader, reads_records_in_order_skipping_discarded_ones)
{
	struct fake_ring *ring = malloc(sizeof(*ring));
	struct seen seen = { 0 };

	fake_ring_init(ring);
	seen.consumer = &ring->consumer;
	put_record(ring, 16, 1, 0);
	put_record(ring, 20, 2, BPF_RINGBUF_DISCARD_BIT);
	put_record(ring, 4, 3, 0);
	CU_ASSERT_EQUAL(ring_records_read(&ring->positions, remember, &seen), 2);
	CU_ASSERT_EQUAL(seen.count, 2);
	CU_ASSERT_EQUAL(seen.values[0], 1);
	CU_ASSERT_EQUAL(seen.sizes[0], 16);
	CU_ASSERT_EQUAL(seen.values[1], 3);
	CU_ASSERT_EQUAL(seen.sizes[1], 4);
	/* Everything read is handed back; a second read finds nothing. */
	CU_ASSERT_EQUAL(ring->consumer, ring->producer);
	CU_ASSERT_EQUAL(ring_records_read(&ring->positions, remember, &seen), 0);
	free(ring);
}

UNIT_TEST(ring_reader, stops_at_a_record_still_being_written)
{
	struct fake_ring *ring = malloc(sizeof(*ring));
	struct seen seen = { 0 };
	unsigned long busy_at;

	fake_ring_init(ring);
	seen.consumer = &ring->consumer;
	put_record(ring, 8, 1, 0);
	busy_at = ring->producer;
	put_record(ring, 8, 2, BPF_RINGBUF_BUSY_BIT);
	put_record(ring, 8, 3, 0);
	CU_ASSERT_EQUAL(ring_records_read(&ring->positions, remember, &seen), 1);
	CU_ASSERT_EQUAL(ring->consumer, busy_at);
	/* Submitted: the reader goes on from there. */
	ring->data[busy_at + 3] &= (uint8_t) ~(BPF_RINGBUF_BUSY_BIT >> 24);
	CU_ASSERT_EQUAL(ring_records_read(&ring->positions, remember, &seen), 2);
	CU_ASSERT_EQUAL(seen.values[1], 2);
	CU_ASSERT_EQUAL(seen.values[2], 3);
	free(ring);
}

UNIT_TEST(ring_reader, a_record_wrapping_around_the_end_reads_whole)
{
	struct fake_ring *ring = malloc(sizeof(*ring));
	struct seen seen = { 0 };

	fake_ring_init(ring);
	seen.consumer = &ring->consumer;
	/* Positions grow for ever; the data index wraps. */
	ring->consumer = ring->producer = 3 * RING_BYTES - 16;
	put_record(ring, 40, 7, 0);
	CU_ASSERT_EQUAL(ring_records_read(&ring->positions, remember, &seen), 1);
	CU_ASSERT_EQUAL(seen.values[0], 7);
	CU_ASSERT_EQUAL(seen.sizes[0], 40);
	CU_ASSERT_EQUAL(ring->consumer, 3 * RING_BYTES - 16 + 48);
	free(ring);
}

UNIT_TEST(ring_reader, hands_space_back_in_batches_not_per_record)
{
	struct fake_ring *ring = malloc(sizeof(*ring));
	struct seen seen = { 0 };
	unsigned long every = RING_RELEASE_BYTES(RING_BYTES);
	int moves = 0;

	fake_ring_init(ring);
	seen.consumer = &ring->consumer;
	/* 40 records of 64 bytes: 2560 bytes, released every 512 in a 4 KiB ring. */
	for (uint32_t i = 0; i < 40; i++)
		put_record(ring, 64 - BPF_RINGBUF_HDR_SZ, i, 0);
	CU_ASSERT_EQUAL(every, 512);
	CU_ASSERT_EQUAL(ring_records_read(&ring->positions, remember, &seen), 40);
	for (int i = 1; i < seen.count; i++) {
		moves += seen.consumer_at[i] != seen.consumer_at[i - 1];
		/* The kernel never waits on more than one batch the reader is done with. */
		CU_ASSERT(i * 64UL - seen.consumer_at[i] <= every);
	}
	CU_ASSERT_EQUAL(moves, 40 * 64 / 512 - 1);
	CU_ASSERT_EQUAL(ring->consumer, 40 * 64UL);
	free(ring);
}

UNIT_TEST(ring_reader, a_callback_that_stops_the_read_is_past_its_record)
{
	struct fake_ring *ring = malloc(sizeof(*ring));
	struct seen seen = { .stop_at = 2 };

	fake_ring_init(ring);
	seen.consumer = &ring->consumer;
	for (uint32_t i = 0; i < 4; i++)
		put_record(ring, 8, i, 0);
	CU_ASSERT_EQUAL(ring_records_read(&ring->positions, remember, &seen), -1);
	CU_ASSERT_EQUAL(ring->consumer, 2 * 16UL);
	seen.stop_at = 0;
	CU_ASSERT_EQUAL(ring_records_read(&ring->positions, remember, &seen), 2);
	CU_ASSERT_EQUAL(seen.values[3], 3);
	free(ring);
}
