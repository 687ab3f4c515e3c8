// SPDX-License-Identifier: MIT
/* What each rank of nccl-api-tour contributes to a collective and what the collective should make
 * of it, checked element by element. */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"
#include "nccl_double.h"
#include "nccl_ground_truth.h"
#include "rank_launcher.h"
#include "nccl_api_tour/tour.h"

/* ---- element values: what each rank contributes, and what a reduction makes of them ---- */

size_t datatype_bytes(int datatype)
{
	static const size_t sizes[DATATYPE_COUNT] = { 1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1 };

	return datatype >= 0 && datatype < DATATYPE_COUNT ? sizes[datatype] : 0;
}

static bool is_float(int datatype)
{
	return datatype == ncclFloat32 || datatype == ncclFloat64;
}

/* Half, bfloat16 and fp8 are not reduced by the double: their result is rank 0's data. */
static bool is_reduced(int datatype)
{
	return datatype <= ncclUint64 || is_float(datatype);
}

/* What a rank puts at 'index' of a buffer: small integers, exact in every type. */
static int64_t contribution(int rank, size_t index, size_t salt)
{
	return rank + 1 + (int64_t)((index + salt) % 3);
}

/* Stores an integer ('whole', wrapped to the type) or, for float types, 'real'. */
static void store_element(void *buffer, int datatype, size_t index, uint64_t whole, double real)
{
	unsigned char *at = (unsigned char *)buffer + index * datatype_bytes(datatype);
	uint8_t byte = (uint8_t)whole;
	uint16_t half = (uint16_t)whole;
	uint32_t word = (uint32_t)whole;
	float single = (float)real;

	switch (datatype_bytes(datatype)) {
	case 1:
		memcpy(at, &byte, sizeof(byte));
		break;
	case 2:
		memcpy(at, &half, sizeof(half));
		break;
	case 4:
		if (datatype == ncclFloat32)
			memcpy(at, &single, sizeof(single));
		else
			memcpy(at, &word, sizeof(word));
		break;
	default:
		if (datatype == ncclFloat64)
			memcpy(at, &real, sizeof(real));
		else
			memcpy(at, &whole, sizeof(whole));
		break;
	}
}

static bool element_matches(const void *buffer, int datatype, size_t index, uint64_t whole,
			    double real)
{
	const unsigned char *at = (const unsigned char *)buffer + index * datatype_bytes(datatype);
	unsigned char expected[8];
	float single;
	double got;

	if (is_float(datatype)) {
		if (datatype == ncclFloat32) {
			memcpy(&single, at, sizeof(single));
			got = single;
		} else {
			memcpy(&got, at, sizeof(got));
		}
		return fabs(got - real) <= 1e-6 * fmax(1.0, fabs(real));
	}
	store_element(expected, datatype, 0, whole, real);
	return memcmp(at, expected, datatype_bytes(datatype)) == 0;
}

void fill(void *buffer, int datatype, size_t count, int rank, size_t salt)
{
	for (size_t i = 0; i < count; i++) {
		int64_t value = contribution(rank, i, salt);

		store_element(buffer, datatype, i, (uint64_t)value, (double)value);
	}
}

/*
 * The reduction of element 'index' over 'members' (their world ranks in communicator order),
 * as the double computes it: integers wrap, averages of integers truncate.
 */
static void reduction_of(const int *members, int member_count, int datatype, int op, size_t index,
			 size_t salt, uint64_t *whole, double *real)
{
	int64_t first = contribution(members[0], index, salt);

	*whole = (uint64_t)first;
	*real = (double)first;
	if (!is_reduced(datatype))
		return;
	for (int i = 1; i < member_count; i++) {
		int64_t value = contribution(members[i], index, salt);

		switch (op) {
		case ncclProd:
			*whole *= (uint64_t)value;
			*real *= (double)value;
			break;
		case ncclMax:
			*whole = (int64_t)*whole > value ? *whole : (uint64_t)value;
			*real = fmax(*real, (double)value);
			break;
		case ncclMin:
			*whole = (int64_t)*whole < value ? *whole : (uint64_t)value;
			*real = fmin(*real, (double)value);
			break;
		default:
			*whole += (uint64_t)value;
			*real += (double)value;
			break;
		}
	}
	if (op == ncclAvg) {
		*whole /= (uint64_t)member_count;
		*real /= member_count;
	}
}

static void check_element(const struct tour *tour, const char *what, const void *buffer,
			  int datatype, size_t index, uint64_t whole, double real)
{
	char message[256];

	if (element_matches(buffer, datatype, index, whole, real))
		return;
	snprintf(message, sizeof(message),
		 "wrong result: %s[%zu] (datatype %d) is not %llu / %.17g as expected", what, index,
		 datatype, (unsigned long long)whole, real);
	die(tour, EXIT_MISBEHAVED, message);
}

void check_reduction(const struct tour *tour, const char *what, const void *buffer,
		     const int *members, int member_count, int datatype, int op, size_t count,
		     size_t first_index, size_t salt)
{
	for (size_t i = 0; i < count; i++) {
		uint64_t whole;
		double real;

		reduction_of(members, member_count, datatype, op, first_index + i, salt, &whole,
			     &real);
		check_element(tour, what, buffer, datatype, i, whole, real);
	}
}

/* 'count' elements contributed by 'rank' from 'first_index' on, found at 'offset' of buffer. */
void check_copy(const struct tour *tour, const char *what, const void *buffer, int datatype,
		size_t offset, size_t count, int rank, size_t first_index, size_t salt)
{
	for (size_t i = 0; i < count; i++) {
		int64_t value = contribution(rank, first_index + i, salt);

		check_element(tour, what, buffer, datatype, offset + i, (uint64_t)value,
			      (double)value);
	}
}

void synchronize(const struct tour *tour, const char *what)
{
	char message[160];
	ncclResult_t ret = doubleStreamSynchronize(tour->stream);

	if (ret == ncclSuccess)
		return;
	snprintf(message, sizeof(message), "operations of %s failed: %s", what,
		 ncclGetErrorString(ret));
	die(tour, EXIT_MISBEHAVED, message);
}
