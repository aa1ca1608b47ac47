/* tests/emu/shim/cub/device/device_radix_sort.cuh: CUB's stable radix sort
 * of (key, value) pairs on the CPU, queued on the stream (tests/emu/cudart.h). */
#ifndef SUPKIT_EMU_CUB_SORT_H
#define SUPKIT_EMU_CUB_SORT_H

#include "tests/emu/cudart.h"

#include <vector>

namespace cub {
struct DeviceRadixSort {
	/* keys_out, values_out = the pairs ordered by bits [begin_bit, end_bit)
	 * of the key, stably; with d_temp NULL only the scratch size is set */
	template <class K, class V>
	static cudaError_t SortPairs(void *d_temp, size_t &temp_bytes, const K *keys_in,
				     K *keys_out, const V *values_in, V *values_out, int n,
				     int begin_bit = 0, int end_bit = (int)sizeof(K) * 8,
				     cudaStream_t s = 0)
	{
		if (!d_temp) {
			temp_bytes = 16;
			return cudaSuccess;
		}
		emu_enqueue(s, [=]() {
			typedef typename std::make_unsigned<K>::type U;
			int w = end_bit - begin_bit;
			U mask = w >= (int)sizeof(U) * 8 ? (U)~(U)0 : (U)(((U)1 << w) - 1);
			std::vector<int> o((size_t)n);
			for (int i = 0; i < n; i++)
				o[(size_t)i] = i;
			auto key = [&](int i) { return (U)((U)keys_in[i] >> begin_bit) & mask; };
			std::stable_sort(o.begin(), o.end(), [&](int a, int b) { return key(a) < key(b); });
			std::vector<K> ko((size_t)n);
			std::vector<V> vo((size_t)n);
			for (int i = 0; i < n; i++) {
				ko[(size_t)i] = keys_in[o[(size_t)i]];
				vo[(size_t)i] = values_in[o[(size_t)i]];
			}
			std::copy(ko.begin(), ko.end(), keys_out);
			std::copy(vo.begin(), vo.end(), values_out);
		});
		return cudaSuccess;
	}
};
} // namespace cub

#endif
