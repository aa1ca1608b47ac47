/* tests/emu/shim/cuda_runtime.h: the emulator's stand-in (tests/emu/simt.h) */
#include "tests/emu/simt.h"
