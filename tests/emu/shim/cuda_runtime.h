/* tests/emu/shim/cuda_runtime.h: the emulator's stand-in (tests/emu/simt.h,
 * tests/emu/cudart.h) */
#include "tests/emu/cudart.h"
