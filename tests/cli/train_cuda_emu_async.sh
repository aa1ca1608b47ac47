#!/usr/bin/env bash
# train_cuda_emu_async.sh: tests/cli/train_cuda_emu.sh (`supkit train
# --backend cuda` end to end on the emulated device) with the backend's
# asynchronous ops on (SUPKIT_CUDA_ASYNC=1, off by default until its GPU
# tests have run), as scripts/gpu-check.sh runs it on a GPU: the emulated
# runtime's checks (one stream, no host access to device memory, ...) and
# the queue that runs only when the host waits then see that path as well.
set -u
cd "$(dirname "$0")/../.."
SUPKIT_CUDA_ASYNC=1 exec bash tests/cli/train_cuda_emu.sh
