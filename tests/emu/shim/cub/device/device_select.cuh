/* tests/emu/shim/cub/device/device_select.cuh: CUB's DeviceSelect::Flagged
 * on the CPU, queued on the stream (tests/emu/cudart.h). */
#ifndef SUPKIT_EMU_CUB_SELECT_H
#define SUPKIT_EMU_CUB_SELECT_H

#include "tests/emu/cudart.h"

namespace cub {
struct DeviceSelect {
	/* out = the in[i] with flags[i] != 0, in order; *num_selected their
	 * count; with d_temp NULL only the scratch size is set */
	template <class In, class Flag, class Out, class Num>
	static cudaError_t Flagged(void *d_temp, size_t &temp_bytes, In in, Flag flags, Out out,
				   Num num_selected, int n, cudaStream_t s = 0)
	{
		if (!d_temp) {
			temp_bytes = 16;
			return cudaSuccess;
		}
		emu_enqueue(s, [=]() {
			int k = 0;
			for (int i = 0; i < n; i++)
				if (flags[i])
					out[k++] = in[i];
			*num_selected = k;
		});
		return cudaSuccess;
	}
};
} // namespace cub

#endif
