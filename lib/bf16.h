/* bf16.h: bfloat16 storage helpers. bf16 is the top 16 bits of an IEEE
 * binary32; conversion from fp32 rounds to nearest, ties to even (as PyTorch
 * and CUDA do), NaN stays a quiet NaN. */
#ifndef SUPKIT_BF16_H
#define SUPKIT_BF16_H

#include <stdint.h>
#include <string.h>

typedef uint16_t bf16;

static inline float bf16_to_f32(bf16 h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

static inline bf16 bf16_from_f32(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (bf16)((u >> 16) | 0x40); /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1u);
	return (bf16)(u >> 16);
}

/* Round an fp32 value to the nearest bf16 and back. */
static inline float bf16_round(float f)
{
	return bf16_to_f32(bf16_from_f32(f));
}

#endif
