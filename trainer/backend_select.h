/* backend_select.h: which backend object a run uses (config key backend =
 * auto | cpu | cuda, supkit-formats(5); the device from --device N) and
 * run-level helpers over it.
 *
 * The CUDA backend exists only in builds that link kernels/ (make GPU=1,
 * and the emulated device of tests/emu), which registers it
 * (trainer/backend.h backend_find); elsewhere these functions answer for
 * the CPU backend alone.
 */
#ifndef SUPKIT_BACKEND_SELECT_H
#define SUPKIT_BACKEND_SELECT_H

#include <stddef.h>
#include "lib/err.h"
#include "trainer/backend.h"
#include "trainer/config.h"
#include "trainer/optim.h"

/* 1 when this build has the CUDA backend (a "cuda" entry in the registry). */
int backend_cuda_built(void);
/* 1 when the CUDA backend is built and a CUDA device is present. */
int backend_cuda_present(void);

/* The backend for cfg, opened with cfg->device and cfg->threads: cpu; cuda
 * (error EXIT_USAGE when the build has no CUDA backend, no device is
 * present, cfg->device is not one, or dtype = fp64); auto = cuda when it
 * is present and dtype = fp32, else cpu. Returns NULL with e set on
 * error. */
const struct backend_ops *backend_select(const struct config *cfg, struct err *e);

/* bk->alloc(n), aborting with the size when out of memory (like xcalloc);
 * free with backend_free. */
void *backend_alloc(const struct backend_ops *bk, size_t n);
void backend_free(const struct backend_ops *bk, void *p);

/* bk's Polar Express and optimizer device installed in o (optim_set_polar,
 * optim_set_device): what a training run on bk does. */
void backend_optim_attach(struct optim *o, const struct backend_ops *bk);

/* The dense bf16 tensor-core peak of a GPU by its name, in FLOP/s: H100
 * SXM and H200 989.5e12, H100 PCIe 756e12, A100 312e12; 0 for any other
 * name (unknown). */
double peak_bf16_flops(const char *device_name);
/* *peak = the FLOP/s that a run's MFU on bk is reckoned against:
 * SUPKIT_PEAK_TFLOPS (a positive number, in TFLOP/s) when set; else the
 * device's (bk->peak_flops: for cuda peak_bf16_flops of its name; 0 for
 * the CPU: no MFU).
 * Returns -1 with e set (EXIT_USAGE) when SUPKIT_PEAK_TFLOPS is not a
 * positive number, else 0. */
int backend_peak_flops(const struct backend_ops *bk, double *peak, struct err *e);

#endif
