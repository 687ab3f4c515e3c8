/* SPDX-License-Identifier: MIT */
/*
 * The on-disk layout of a trace file: signatures, versions, the offset of
 * every field, and the limits a reader enforces. docs/trace-format.md
 * explains the rules behind these numbers; writer, reader and tests all
 * take the layout from here so the three cannot drift apart.
 *
 * Every integer is little-endian and unaligned; every checksum is zlib's
 * crc32 (the CRC-32 of IEEE 802.3 and gzip).
 */
#ifndef TCHECK_TRACE_FORMAT_H
#define TCHECK_TRACE_FORMAT_H

#include <stdint.h>

#include "model/trace_records.h"

/*
 * Major versions break compatibility: a reader refuses a newer one.
 * Minor versions only add record kinds or append fields to existing
 * kinds, which older readers skip, so they open newer minors with a note.
 */
#define TRACE_FORMAT_VERSION_MAJOR 1
/*
 * 1.1 added Python call records (kind 6), which 1.0 readers skip.
 * 1.2 appended the Python context to NCCL and Python call bodies, and added
 * work-request samples (kind 7), which 1.0 and 1.1 readers skip.
 * 1.3 appended the Python events lost to the stats body.
 * 1.4 added process activity samples (kind 8), which older readers skip.
 * 1.5 added the processes' state on arrival (kind 9), which older readers skip.
 * 1.6 added the closing chunk (chunk flag 2), written when the recorder closes
 * the trace, and zstd-compressed payloads (chunk flag 1). Readers of 1.5 and
 * older stop at either flag and say a newer tcheck-bpf reads the trace.
 * 1.7 appended to the process body the window in which its Python ran before
 * the probes followed it, which older readers skip.
 */
#define TRACE_FORMAT_VERSION_MINOR 7
/* The first version whose writer closes every trace it finishes with a closing chunk. */
#define TRACE_FORMAT_CLOSING_SINCE_MINOR 6

/* File header: a fixed part, then a body whose length the fixed part gives. */
#define TRACE_FORMAT_FILE_MAGIC "TCHKTRC\n"
#define TRACE_FORMAT_FILE_MAGIC_SIZE 8
enum trace_format_file_header {
	TRACE_FORMAT_FILE_MAGIC_AT = 0,	       /* 8 bytes */
	TRACE_FORMAT_FILE_MAJOR_AT = 8,	       /* u32 */
	TRACE_FORMAT_FILE_MINOR_AT = 12,       /* u32 */
	TRACE_FORMAT_FILE_BODY_LENGTH_AT = 16, /* u32, bytes of body after the fixed part */
	TRACE_FORMAT_FILE_CRC_AT = 20,	       /* u32, crc32 of bytes 0-19 then of the body */
	TRACE_FORMAT_FILE_FIXED_SIZE = 24,
};

/* The header body. Newer minors may append fields; readers ignore them. */
enum trace_format_header_body {
	TRACE_FORMAT_HEADER_MONOTONIC_AT = 0, /* u64, CLOCK_MONOTONIC of the anchor */
	TRACE_FORMAT_HEADER_REALTIME_AT = 8,  /* u64, CLOCK_REALTIME of the anchor */
	/* Then host name, boot id, command line: each a u32 length and its bytes. */
	TRACE_FORMAT_HEADER_STRINGS_AT = 16,
	TRACE_FORMAT_HEADER_MIN_BODY = 16 + 3 * 4,
};
#define TRACE_FORMAT_MAX_HEADER_BODY (64U * 1024)

/* Chunk header, followed by payload_length bytes of records. */
#define TRACE_FORMAT_CHUNK_MAGIC "CHNK"
#define TRACE_FORMAT_CHUNK_MAGIC_SIZE 4
enum trace_format_chunk_header {
	TRACE_FORMAT_CHUNK_MAGIC_AT = 0,	  /* 4 bytes */
	TRACE_FORMAT_CHUNK_PAYLOAD_LENGTH_AT = 4, /* u32, bytes stored (compressed, if so) */
	TRACE_FORMAT_CHUNK_RECORD_COUNT_AT = 8,	  /* u32, string definitions included */
	TRACE_FORMAT_CHUNK_PAYLOAD_CRC_AT = 12,	  /* u32, crc32 of the payload */
	TRACE_FORMAT_CHUNK_FIRST_NS_AT = 16,	  /* u64, earliest record time, 0 if none */
	TRACE_FORMAT_CHUNK_LAST_NS_AT = 24,	  /* u64, latest record time, 0 if none */
	TRACE_FORMAT_CHUNK_FLAGS_AT = 32,	  /* u32, TRACE_FORMAT_CHUNK_* below */
	TRACE_FORMAT_CHUNK_HEADER_CRC_AT = 36,	  /* u32, crc32 of bytes 0-35 */
	TRACE_FORMAT_CHUNK_HEADER_SIZE = 40,
};
/* The payload is one zstd frame holding the records (format 1.6). */
#define TRACE_FORMAT_CHUNK_ZSTD 1U
/*
 * The closing chunk (format 1.6): the last of a trace its recorder closed.
 * Its payload is the closing body below and its record count 0; its
 * first_ns and last_ns span every record of the trace.
 */
#define TRACE_FORMAT_CHUNK_CLOSING 2U
/* Chunk flags this version understands; any other bit makes a reader stop. */
#define TRACE_FORMAT_CHUNK_KNOWN_FLAGS (TRACE_FORMAT_CHUNK_ZSTD | TRACE_FORMAT_CHUNK_CLOSING)
/* The largest payload a reader accepts: a bound on what a file can make it allocate. */
#define TRACE_FORMAT_MAX_CHUNK_PAYLOAD (64U * 1024 * 1024)

/* The closing chunk's payload: what the trace holds, for a reader to check. */
enum trace_format_closing_body {
	TRACE_FORMAT_CLOSING_CHUNKS_AT = 0,	/* u64, chunks of records before this one */
	TRACE_FORMAT_CLOSING_RECORDS_AT = 8,	/* u64, records in them, strings included */
	TRACE_FORMAT_CLOSING_CLOSED_NS_AT = 16, /* u64, CLOCK_MONOTONIC at the close */
	TRACE_FORMAT_CLOSING_SIZE = 24,
};

/* Every record: this header, then body_length bytes. */
enum trace_format_record_header {
	TRACE_FORMAT_RECORD_KIND_AT = 0,     /* u16 */
	TRACE_FORMAT_RECORD_RESERVED_AT = 2, /* u16, written 0, ignored by readers */
	TRACE_FORMAT_RECORD_LENGTH_AT = 4,   /* u32, body bytes */
	TRACE_FORMAT_RECORD_HEADER_SIZE = 8,
};

/*
 * Record kinds 1 to 9 are those of enum trace_record_kind. A string
 * definition gives the bytes of an interned string id.
 */
#define TRACE_FORMAT_KIND_STRING 32U
#define TRACE_FORMAT_LAST_KNOWN_KIND TRACE_RECORD_ARRIVAL

/* String definition body: the id, then the bytes (no terminating NUL). */
enum trace_format_string_body {
	TRACE_FORMAT_STRING_ID_AT = 0, /* u32: 1 for the first, then one more each time */
	TRACE_FORMAT_STRING_BYTES_AT = 4,
};
/* String id 0 is the empty string and is never defined. */
#define TRACE_FORMAT_EMPTY_STRING_ID 0U
/* Writers cut longer strings (a command line of megabytes) to this. */
#define TRACE_FORMAT_MAX_STRING (1U * 1024 * 1024)
/* Readers stop on a trace whose distinct strings would take more memory than this. */
#define TRACE_FORMAT_MAX_STRING_TABLE (1ULL * 1024 * 1024 * 1024)

/* NCCL call body; param_count u64 parameters follow the fixed part. */
enum trace_format_call_body {
	TRACE_FORMAT_CALL_ENTRY_NS_AT = 0,	  /* u64 */
	TRACE_FORMAT_CALL_DURATION_NS_AT = 8,	  /* u64 */
	TRACE_FORMAT_CALL_PID_AT = 16,		  /* u32 */
	TRACE_FORMAT_CALL_TID_AT = 20,		  /* u32 */
	TRACE_FORMAT_CALL_FUNCTION_AT = 24,	  /* u32 string id */
	TRACE_FORMAT_CALL_RESULT_AT = 28,	  /* s32 */
	TRACE_FORMAT_CALL_DEPTH_AT = 32,	  /* u32 */
	TRACE_FORMAT_CALL_GROUP_DEPTH_AT = 36,	  /* u32 */
	TRACE_FORMAT_CALL_FLAGS_AT = 40,	  /* u32 */
	TRACE_FORMAT_CALL_PARAM_COUNT_AT = 44,	  /* u32 */
	TRACE_FORMAT_CALL_OUT_VALUE_AT = 48,	  /* u64 */
	TRACE_FORMAT_CALL_UNIQUE_ID_HASH_AT = 56, /* u64 */
	TRACE_FORMAT_CALL_COMM_AT = 64,		  /* u64 */
	TRACE_FORMAT_CALL_COMM_ID_AT = 72,	  /* u64 */
	TRACE_FORMAT_CALL_RANK_AT = 80,		  /* s32 */
	TRACE_FORMAT_CALL_NRANKS_AT = 84,	  /* s32 */
	TRACE_FORMAT_CALL_SEQ_AT = 88,		  /* s64 */
	TRACE_FORMAT_CALL_PARAMS_AT = 96,	  /* u64 each */
	TRACE_FORMAT_CALL_FIXED_SIZE = 96,
};

/* Appended to an NCCL call body after its parameters (format 1.2). */
enum trace_format_call_context {
	TRACE_FORMAT_CALL_STEP_AT = 0,	/* s32, -1 unknown */
	TRACE_FORMAT_CALL_STAGE_AT = 4, /* u32, enum trace_stage */
	TRACE_FORMAT_CALL_STACK_AT = 8, /* a Python stack, see below */
	TRACE_FORMAT_CALL_CONTEXT_FIXED_SIZE = 8,
};

/* A Python stack: a u32 count n, then n u32 string ids, innermost first. */
#define TRACE_FORMAT_STACK_FRAME_SIZE 4U

enum trace_format_process_body {
	TRACE_FORMAT_PROCESS_PID_AT = 0,		    /* u32 */
	TRACE_FORMAT_PROCESS_PARENT_PID_AT = 4,		    /* u32 */
	TRACE_FORMAT_PROCESS_RANK_AT = 8,		    /* s32 */
	TRACE_FORMAT_PROCESS_LOCAL_RANK_AT = 12,	    /* s32 */
	TRACE_FORMAT_PROCESS_WORLD_SIZE_AT = 16,	    /* s32 */
	TRACE_FORMAT_PROCESS_EXIT_CODE_AT = 20,		    /* s32 */
	TRACE_FORMAT_PROCESS_START_NS_AT = 24,		    /* u64 */
	TRACE_FORMAT_PROCESS_END_NS_AT = 32,		    /* u64 */
	TRACE_FORMAT_PROCESS_COMMAND_AT = 40,		    /* u32 string id */
	TRACE_FORMAT_PROCESS_SIZE = 44,			    /* the body up to format 1.6 */
	TRACE_FORMAT_PROCESS_PYTHON_UNSEEN_FROM_NS_AT = 44, /* u64, since 1.7 */
	TRACE_FORMAT_PROCESS_PYTHON_UNSEEN_TO_NS_AT = 52,   /* u64, since 1.7 */
	TRACE_FORMAT_PROCESS_SIZE_1_7 = 60,
};

enum trace_format_communicator_body {
	TRACE_FORMAT_COMMUNICATOR_PID_AT = 0,		  /* u32 */
	TRACE_FORMAT_COMMUNICATOR_ORIGIN_AT = 4,	  /* u32 */
	TRACE_FORMAT_COMMUNICATOR_HANDLE_AT = 8,	  /* u64 */
	TRACE_FORMAT_COMMUNICATOR_COMM_ID_AT = 16,	  /* u64 */
	TRACE_FORMAT_COMMUNICATOR_PARENT_COMM_ID_AT = 24, /* u64 */
	TRACE_FORMAT_COMMUNICATOR_RANK_AT = 32,		  /* s32 */
	TRACE_FORMAT_COMMUNICATOR_NRANKS_AT = 36,	  /* s32 */
	TRACE_FORMAT_COMMUNICATOR_COLOR_AT = 40,	  /* s32 */
	TRACE_FORMAT_COMMUNICATOR_SPLIT_INDEX_AT = 44,	  /* u32 */
	TRACE_FORMAT_COMMUNICATOR_NCCL_COMM_HASH_AT = 48, /* u64 */
	TRACE_FORMAT_COMMUNICATOR_SEQ_BASE_AT = 56,	  /* s64 */
	TRACE_FORMAT_COMMUNICATOR_SEEN_NS_AT = 64,	  /* u64 */
	TRACE_FORMAT_COMMUNICATOR_NOTE_AT = 72,		  /* u32 string id */
	TRACE_FORMAT_COMMUNICATOR_SIZE = 76,
};

enum trace_format_library_body {
	TRACE_FORMAT_LIBRARY_PID_AT = 0,		/* u32 */
	TRACE_FORMAT_LIBRARY_FUNCTIONS_ATTACHED_AT = 4, /* u32 */
	TRACE_FORMAT_LIBRARY_ATTACHED_NS_AT = 8,	/* u64 */
	TRACE_FORMAT_LIBRARY_PATH_AT = 16,		/* u32 string id */
	TRACE_FORMAT_LIBRARY_BUILD_ID_AT = 20,		/* u32 string id */
	TRACE_FORMAT_LIBRARY_SIZE = 24,
};

enum trace_format_stats_body {
	TRACE_FORMAT_STATS_TIMESTAMP_NS_AT = 0,	       /* u64 */
	TRACE_FORMAT_STATS_CALLS_AT = 8,	       /* u64 */
	TRACE_FORMAT_STATS_RINGBUF_DROPS_AT = 16,      /* u64 */
	TRACE_FORMAT_STATS_UNMATCHED_RETURNS_AT = 24,  /* u64 */
	TRACE_FORMAT_STATS_NESTING_OVERFLOWS_AT = 32,  /* u64 */
	TRACE_FORMAT_STATS_FILTERED_AT = 40,	       /* u64 */
	TRACE_FORMAT_STATS_PROCESS_DROPS_AT = 48,      /* u64 */
	TRACE_FORMAT_STATS_SIZE = 56,		       /* the body up to format 1.2 */
	TRACE_FORMAT_STATS_PYTHON_EVENTS_LOST_AT = 56, /* u64, since 1.3 */
	TRACE_FORMAT_STATS_SIZE_1_3 = 64,
};

/* Work-request sample body (format 1.2): struct trace_network_sample. */
enum trace_format_network_body {
	TRACE_FORMAT_NETWORK_TIMESTAMP_NS_AT = 0,	 /* u64 */
	TRACE_FORMAT_NETWORK_PID_AT = 8,		 /* u32 */
	TRACE_FORMAT_NETWORK_SOURCE_AT = 12,		 /* u32 */
	TRACE_FORMAT_NETWORK_REQUESTS_POSTED_AT = 16,	 /* u64 */
	TRACE_FORMAT_NETWORK_REQUESTS_SIGNALLED_AT = 24, /* u64 */
	TRACE_FORMAT_NETWORK_COMPLETIONS_AT = 32,	 /* u64 */
	TRACE_FORMAT_NETWORK_COMPLETION_ERRORS_AT = 40,	 /* u64 */
	TRACE_FORMAT_NETWORK_BYTES_POSTED_AT = 48,	 /* u64 */
	TRACE_FORMAT_NETWORK_BYTES_COMPLETED_AT = 56,	 /* u64 */
	TRACE_FORMAT_NETWORK_LAST_POST_NS_AT = 64,	 /* u64 */
	TRACE_FORMAT_NETWORK_LAST_COMPLETION_NS_AT = 72, /* u64 */
	TRACE_FORMAT_NETWORK_SIZE = 80,
};

/* Process activity sample body (format 1.4): struct trace_activity_sample. */
enum trace_format_activity_body {
	TRACE_FORMAT_ACTIVITY_TIMESTAMP_NS_AT = 0,     /* u64 */
	TRACE_FORMAT_ACTIVITY_PID_AT = 8,	       /* u32 */
	TRACE_FORMAT_ACTIVITY_THREADS_AT = 12,	       /* u32 */
	TRACE_FORMAT_ACTIVITY_THREADS_RUNNING_AT = 16, /* u32 */
	TRACE_FORMAT_ACTIVITY_THREADS_IO_WAIT_AT = 20, /* u32 */
	TRACE_FORMAT_ACTIVITY_CPU_NS_AT = 24,	       /* u64 */
	TRACE_FORMAT_ACTIVITY_READ_BYTES_AT = 32,      /* u64 */
	TRACE_FORMAT_ACTIVITY_WRITE_BYTES_AT = 40,     /* u64 */
	TRACE_FORMAT_ACTIVITY_READ_CHARS_AT = 48,      /* u64 */
	TRACE_FORMAT_ACTIVITY_WRITE_CHARS_AT = 56,     /* u64 */
	TRACE_FORMAT_ACTIVITY_SIZE = 64,
};

/* Arrival state body (format 1.5): struct trace_arrival_state; a Python stack follows. */
enum trace_format_arrival_body {
	TRACE_FORMAT_ARRIVAL_TIMESTAMP_NS_AT = 0, /* u64 */
	TRACE_FORMAT_ARRIVAL_PID_AT = 8,	  /* u32 */
	TRACE_FORMAT_ARRIVAL_RANK_AT = 12,	  /* s32 */
	TRACE_FORMAT_ARRIVAL_FLAGS_AT = 16,	  /* u32, TRACE_ARRIVAL_* */
	TRACE_FORMAT_ARRIVAL_NRANKS_AT = 20,	  /* s32 */
	TRACE_FORMAT_ARRIVAL_SEQ_AT = 24,	  /* s64 */
	TRACE_FORMAT_ARRIVAL_COMM_HASH_AT = 32,	  /* u64 */
	TRACE_FORMAT_ARRIVAL_COLLECTIVE_AT = 40,  /* u32 string id */
	TRACE_FORMAT_ARRIVAL_BLOCKED_IN_AT = 44,  /* u32 string id */
	TRACE_FORMAT_ARRIVAL_WAITING_AT = 48,	  /* u32 string id */
	TRACE_FORMAT_ARRIVAL_DOING_AT = 52,	  /* u32 string id */
	TRACE_FORMAT_ARRIVAL_MISSED_AT = 56,	  /* u32 string id */
	TRACE_FORMAT_ARRIVAL_STACK_AT = 60,	  /* a Python stack */
	TRACE_FORMAT_ARRIVAL_FIXED_SIZE = 64,	  /* with an empty stack */
};

/* Python call body (format 1.1): a traced Python function or a torch scope. */
enum trace_format_python_call_body {
	TRACE_FORMAT_PYTHON_ENTRY_NS_AT = 0,	    /* u64 */
	TRACE_FORMAT_PYTHON_DURATION_NS_AT = 8,	    /* u64 */
	TRACE_FORMAT_PYTHON_PID_AT = 16,	    /* u32 */
	TRACE_FORMAT_PYTHON_TID_AT = 20,	    /* u32 */
	TRACE_FORMAT_PYTHON_DEPTH_AT = 24,	    /* u32 */
	TRACE_FORMAT_PYTHON_FLAGS_AT = 28,	    /* u32, TRACE_PYTHON_* */
	TRACE_FORMAT_PYTHON_FIRST_LINE_AT = 32,	    /* s32, -1 for a scope */
	TRACE_FORMAT_PYTHON_STEP_AT = 36,	    /* s32, -1 unknown */
	TRACE_FORMAT_PYTHON_QUALIFIED_NAME_AT = 40, /* u32 string id */
	TRACE_FORMAT_PYTHON_FILE_AT = 44,	    /* u32 string id */
	TRACE_FORMAT_PYTHON_SIZE = 48,
	/* Format 1.2 appends: */
	TRACE_FORMAT_PYTHON_STAGE_AT = 48,	/* u32, enum trace_stage */
	TRACE_FORMAT_PYTHON_RANK_AT = 52,	/* s32, -1 unknown */
	TRACE_FORMAT_PYTHON_WORLD_SIZE_AT = 56, /* s32, -1 unknown */
	TRACE_FORMAT_PYTHON_STACK_AT = 60,	/* a Python stack, then the arguments */
	TRACE_FORMAT_PYTHON_CONTEXT_SIZE = 60,
};

/* Arguments: a u32 count n, then n of these. */
enum trace_format_python_argument {
	TRACE_FORMAT_ARGUMENT_NAME_AT = 0,  /* u32 string id */
	TRACE_FORMAT_ARGUMENT_TYPE_AT = 4,  /* u32, enum trace_value_type */
	TRACE_FORMAT_ARGUMENT_VALUE_AT = 8, /* u64: int or bool, float bits, or str id */
	TRACE_FORMAT_ARGUMENT_SIZE = 16,
};

static inline void trace_format_put_u16(unsigned char *at, uint16_t value)
{
	at[0] = (unsigned char)value;
	at[1] = (unsigned char)(value >> 8);
}

static inline void trace_format_put_u32(unsigned char *at, uint32_t value)
{
	for (int i = 0; i < 4; i++)
		at[i] = (unsigned char)(value >> (8 * i));
}

static inline void trace_format_put_u64(unsigned char *at, uint64_t value)
{
	for (int i = 0; i < 8; i++)
		at[i] = (unsigned char)(value >> (8 * i));
}

static inline uint16_t trace_format_get_u16(const unsigned char *at)
{
	return (uint16_t)(at[0] | at[1] << 8);
}

static inline uint32_t trace_format_get_u32(const unsigned char *at)
{
	uint32_t value = 0;

	for (int i = 3; i >= 0; i--)
		value = value << 8 | at[i];
	return value;
}

static inline uint64_t trace_format_get_u64(const unsigned char *at)
{
	uint64_t value = 0;

	for (int i = 7; i >= 0; i--)
		value = value << 8 | at[i];
	return value;
}

#endif /* TCHECK_TRACE_FORMAT_H */
