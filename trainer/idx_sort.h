/* idx_sort.h: a stable order of token positions by table row, shared by the
 * backends' deterministic scatter-adds (trainer/backend_cpu.c for bf16
 * gradient tables, kernels/backend_cuda.cu for every table): sorting the
 * positions by row, stably, lets each row's contributions be summed in
 * token order without atomics. C and C++ (nvcc) alike.
 */
#ifndef SUPKIT_IDX_SORT_H
#define SUPKIT_IDX_SORT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ord (N) = 0..N-1 ordered by idx[n] (non-negative), ties in n order: LSD
 * radix sort, two 16-bit passes. tmp is N entries of scratch. Returns -1
 * when its counters cannot be allocated, 0 otherwise. */
static inline int idx_sort(const int32_t *idx, int64_t N, int32_t *ord, int32_t *tmp)
{
	int64_t *cnt = (int64_t *)malloc(65537 * sizeof(int64_t));
	if (!cnt)
		return -1;
	for (int64_t n = 0; n < N; n++)
		tmp[n] = (int32_t)n;
	int32_t *src = tmp, *dst = ord;
	for (int pass = 0; pass < 2; pass++) {
		int sh = 16 * pass;
		memset(cnt, 0, 65537 * sizeof(int64_t));
		for (int64_t n = 0; n < N; n++)
			cnt[(((uint32_t)idx[src[n]]) >> sh & 0xffffu) + 1]++;
		for (int i = 0; i < 65536; i++)
			cnt[i + 1] += cnt[i];
		for (int64_t n = 0; n < N; n++)
			dst[cnt[((uint32_t)idx[src[n]]) >> sh & 0xffffu]++] = src[n];
		int32_t *t = src;
		src = dst;
		dst = t;
	}
	/* after two passes the result is back in tmp */
	memcpy(ord, src, (size_t)N * sizeof(int32_t));
	free(cnt);
	return 0;
}

#endif
