// SPDX-License-Identifier: MIT
/* Reads the BPF ring buffer in place, handing space back a batch at a time. */
#include "probe/ring_reader.h"

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <unistd.h>

#include <linux/bpf.h>

struct ring_reader {
	ring_record_fn on_record;
	void *context;
	struct ring_positions ring;
	void *consumer_page; /* the page the reader writes */
	void *producer_page; /* the producer position, then the data twice */
	size_t page_size;
	int epoll_fd;
};

static unsigned long load_acquire(const unsigned long *position)
{
	return __atomic_load_n(position, __ATOMIC_ACQUIRE);
}

static uint32_t load_header(const uint8_t *record)
{
	return __atomic_load_n((const uint32_t *)record, __ATOMIC_ACQUIRE);
}

static void store_release(unsigned long *position, unsigned long value)
{
	__atomic_store_n(position, value, __ATOMIC_RELEASE);
}

struct ring_reader *ring_reader_new(int map_fd, size_t bytes, ring_record_fn on_record,
				    void *context)
{
	struct ring_reader *reader = calloc(1, sizeof(*reader));
	struct epoll_event event = { .events = EPOLLIN };
	int saved_errno;

	if (!reader)
		return NULL;
	reader->on_record = on_record;
	reader->context = context;
	reader->ring.bytes = bytes;
	reader->page_size = (size_t)sysconf(_SC_PAGESIZE);
	reader->epoll_fd = -1;
	reader->consumer_page =
		mmap(NULL, reader->page_size, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd, 0);
	if (reader->consumer_page == MAP_FAILED) {
		reader->consumer_page = NULL;
		goto fail;
	}
	reader->ring.consumer = reader->consumer_page;
	/* The data follows the producer's page, mapped twice so that a record that
	   wraps around the end reads as one piece. */
	reader->producer_page = mmap(NULL, reader->page_size + 2 * bytes, PROT_READ, MAP_SHARED,
				     map_fd, (off_t)reader->page_size);
	if (reader->producer_page == MAP_FAILED) {
		reader->producer_page = NULL;
		goto fail;
	}
	reader->ring.producer = reader->producer_page;
	reader->ring.data = (const uint8_t *)reader->producer_page + reader->page_size;
	reader->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
	if (reader->epoll_fd < 0 || epoll_ctl(reader->epoll_fd, EPOLL_CTL_ADD, map_fd, &event))
		goto fail;
	return reader;
fail:
	saved_errno = errno;
	ring_reader_free(reader);
	errno = saved_errno;
	return NULL;
}

void ring_reader_free(struct ring_reader *reader)
{
	if (!reader)
		return;
	if (reader->epoll_fd >= 0)
		close(reader->epoll_fd);
	if (reader->producer_page)
		munmap(reader->producer_page, reader->page_size + 2 * reader->ring.bytes);
	if (reader->consumer_page)
		munmap(reader->consumer_page, reader->page_size);
	free(reader);
}

/* A record's length rounded up to 8 bytes, with its header. */
static unsigned long record_span(uint32_t header)
{
	uint32_t length = header & ~(BPF_RINGBUF_BUSY_BIT | BPF_RINGBUF_DISCARD_BIT);

	return ((unsigned long)length + BPF_RINGBUF_HDR_SZ + 7) & ~7UL;
}

int ring_records_read(const struct ring_positions *ring, ring_record_fn on_record, void *context)
{
	unsigned long consumed = load_acquire(ring->consumer);
	unsigned long released = consumed;
	unsigned long mask = ring->bytes - 1;
	unsigned long release_every = RING_RELEASE_BYTES(ring->bytes);
	int count = 0;
	bool more;

	do {
		unsigned long produced = load_acquire(ring->producer);

		more = false;
		while (consumed < produced) {
			const uint8_t *record = ring->data + (consumed & mask);
			uint32_t header = load_header(record);
			int stop;

			/* Reserved, not yet submitted: the records after it wait for it. */
			if (header & BPF_RINGBUF_BUSY_BIT)
				goto done;
			more = true;
			consumed += record_span(header);
			if (!(header & BPF_RINGBUF_DISCARD_BIT)) {
				stop = on_record(context, record + BPF_RINGBUF_HDR_SZ,
						 header & ~BPF_RINGBUF_DISCARD_BIT);
				if (stop) {
					store_release(ring->consumer, consumed);
					return stop < 0 ? stop : -stop;
				}
				count++;
			}
			if (consumed - released >= release_every) {
				store_release(ring->consumer, consumed);
				released = consumed;
			}
		}
	} while (more);
done:
	if (consumed != released)
		store_release(ring->consumer, consumed);
	return count;
}

int ring_reader_consume(struct ring_reader *reader)
{
	return ring_records_read(&reader->ring, reader->on_record, reader->context);
}

int ring_reader_poll(struct ring_reader *reader, int timeout_ms)
{
	struct epoll_event event;

	if (epoll_wait(reader->epoll_fd, &event, 1, timeout_ms) < 0)
		return -errno;
	return ring_reader_consume(reader);
}
