# launch.sed: kernels/*.cu as host C++ for the emulated CUDA backend
# (tests/emu/cudart.h): a launch `k<<<g, b, s, st>>>(args)` becomes
# `emu_kernel(g, b, s, st, k, "k")(args)` (the name for EMU_PROFILE); the
# kernel may be a template-id (`k_sumsq<T>`). Every launch in kernels/ has
# its <<<...>>> on one line.
s/\([A-Za-z_][A-Za-z0-9_]*\(<[A-Za-z0-9_, ]*>\)\{0,1\}\)<<<\(.*\)>>>/emu_kernel(\3, \1, "\1")/g
