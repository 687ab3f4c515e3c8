// SPDX-License-Identifier: MIT
/* Element sizes of NCCL datatypes and the reductions the double computes on the host. */
#include <string.h>

#include "double_internal.h"

size_t double_datatype_size(ncclDataType_t datatype)
{
	switch (datatype) {
	case ncclInt8:
	case ncclUint8:
	case ncclFloat8e4m3:
	case ncclFloat8e5m2:
		return 1;
	case ncclFloat16:
	case ncclBfloat16:
		return 2;
	case ncclInt32:
	case ncclUint32:
	case ncclFloat32:
		return 4;
	case ncclInt64:
	case ncclUint64:
	case ncclFloat64:
		return 8;
	default:
		return 0;
	}
}

bool double_datatype_valid(int datatype)
{
	return datatype >= 0 && datatype < ncclNumTypes;
}

bool double_redop_valid(int redop)
{
	return redop >= 0 && redop < ncclNumOps;
}

/*
 * One function per element type: out[i] = inputs[0][i] op inputs[1][i] op ... Inputs are read
 * through memcpy because shared slots carry no alignment promise for the element type. Signed
 * integers add and multiply in their unsigned twin ('math') so overflow wraps instead of being
 * undefined.
 */
#define DEFINE_REDUCE(suffix, type, math)                                                       \
	static void reduce_##suffix(void *out, const unsigned char *const *inputs,              \
				    int input_count, size_t count, ncclRedOp_t redop)           \
	{                                                                                       \
		for (size_t i = 0; i < count; i++) {                                            \
			type result;                                                            \
			memcpy(&result, inputs[0] + i * sizeof(type), sizeof(type));            \
			for (int input = 1; input < input_count; input++) {                     \
				type value;                                                     \
				memcpy(&value, inputs[input] + i * sizeof(type), sizeof(type)); \
				switch (redop) {                                                \
				case ncclProd:                                                  \
					result = (type)((math)result * (math)value);            \
					break;                                                  \
				case ncclMax:                                                   \
					result = value > result ? value : result;               \
					break;                                                  \
				case ncclMin:                                                   \
					result = value < result ? value : result;               \
					break;                                                  \
				default:                                                        \
					result = (type)((math)result + (math)value);            \
					break;                                                  \
				}                                                               \
			}                                                                       \
			if (redop == ncclAvg)                                                   \
				result = (type)(result / (type)input_count);                    \
			memcpy((unsigned char *)out + i * sizeof(type), &result, sizeof(type)); \
		}                                                                               \
	}

DEFINE_REDUCE(int8, int8_t, uint8_t)
DEFINE_REDUCE(uint8, uint8_t, uint8_t)
DEFINE_REDUCE(int32, int32_t, uint32_t)
DEFINE_REDUCE(uint32, uint32_t, uint32_t)
DEFINE_REDUCE(int64, int64_t, uint64_t)
DEFINE_REDUCE(uint64, uint64_t, uint64_t)
DEFINE_REDUCE(float32, float, float)
DEFINE_REDUCE(float64, double, double)

void double_reduce(void *out, const unsigned char *const *inputs, int input_count, size_t count,
		   ncclDataType_t datatype, ncclRedOp_t redop)
{
	switch (datatype) {
	case ncclInt8:
		reduce_int8(out, inputs, input_count, count, redop);
		break;
	case ncclUint8:
		reduce_uint8(out, inputs, input_count, count, redop);
		break;
	case ncclInt32:
		reduce_int32(out, inputs, input_count, count, redop);
		break;
	case ncclUint32:
		reduce_uint32(out, inputs, input_count, count, redop);
		break;
	case ncclInt64:
		reduce_int64(out, inputs, input_count, count, redop);
		break;
	case ncclUint64:
		reduce_uint64(out, inputs, input_count, count, redop);
		break;
	case ncclFloat32:
		reduce_float32(out, inputs, input_count, count, redop);
		break;
	case ncclFloat64:
		reduce_float64(out, inputs, input_count, count, redop);
		break;
	default:
		/* Half, bfloat16 and fp8 are not computed: the result is rank 0's data. */
		memcpy(out, inputs[0], count * double_datatype_size(datatype));
		break;
	}
}
