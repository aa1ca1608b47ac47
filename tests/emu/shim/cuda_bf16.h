/* tests/emu/shim/cuda_bf16.h: the emulator's stand-in (tests/emu/simt.h) */
#include "tests/emu/simt.h"
