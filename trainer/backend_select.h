/* backend_select.h: which backend table a run uses (config key backend =
 * auto | cpu | cuda, supkit-formats(5)) and memory that every backend's ops can
 * read and write in place.
 *
 * The CUDA backend exists only in builds with SUPKIT_CUDA (make GPU=1);
 * elsewhere these functions answer for the CPU backend alone.
 */
#ifndef SUPKIT_BACKEND_SELECT_H
#define SUPKIT_BACKEND_SELECT_H

#include <stddef.h>
#include "lib/err.h"
#include "trainer/backend.h"
#include "trainer/config.h"
#include "trainer/optim.h"

/* 1 when this build has the CUDA backend. */
int backend_cuda_built(void);
/* 1 when the CUDA backend is built and a CUDA device is present. */
int backend_cuda_present(void);

/* The backend for cfg: cpu; cuda (error EXIT_USAGE when the build has no CUDA
 * backend, no device is present or dtype = fp64); auto = cuda when it is
 * present and dtype = fp32, else cpu. Returns NULL with e set on error. */
const struct backend_ops *backend_select(const struct config *cfg, struct err *e);

/* n zeroed bytes that bk's ops use without copies (managed memory for cuda,
 * calloc for cpu; aborts on OOM like xcalloc); free with backend_free. */
void *backend_alloc(const struct backend_ops *bk, size_t n);
void backend_free(const struct backend_ops *bk, void *p);

/* The Polar Express of the optimizer for bk (optim_set_polar): the CUDA
 * twin (kernels/polar.cu) for the CUDA backend, NULL (the host's) for cpu. */
optim_polar_fn backend_polar(const struct backend_ops *bk);

/* The optimizer device for bk (optim_set_device): the CUDA kernels of
 * kernels/optim.cu over managed memory for the CUDA backend, NULL (the
 * host twin) for cpu. */
const struct optim_device *backend_optim_device(const struct backend_ops *bk);

/* Both of the above installed in o: what a training run on bk does. */
void backend_optim_attach(struct optim *o, const struct backend_ops *bk);

/* Bytes the backend holds beyond backend_alloc's callers' view (device
 * memory in use as the device reports it, its peak); 0 for cpu. */
size_t backend_device_bytes(const struct backend_ops *bk, size_t *peak);

/* The name of bk's device into buf (n bytes): the GPU's as CUDA reports it
 * for cuda; returns -1 (buf empty) for cpu or when it cannot be read. */
int backend_device_name(const struct backend_ops *bk, char *buf, size_t n);
/* The dense bf16 tensor-core peak of a GPU by its name, in FLOP/s: H100
 * SXM and H200 989.5e12, H100 PCIe 756e12, A100 312e12; 0 for any other
 * name (unknown). */
double peak_bf16_flops(const char *device_name);
/* *peak = the FLOP/s that a run's MFU on bk is reckoned against:
 * SUPKIT_PEAK_TFLOPS (a positive number, in TFLOP/s) when set; else for
 * cuda the device's (peak_bf16_flops of its name); else 0 (none: no MFU).
 * Returns -1 with e set (EXIT_USAGE) when SUPKIT_PEAK_TFLOPS is not a
 * positive number, else 0. */
int backend_peak_flops(const struct backend_ops *bk, double *peak, struct err *e);

#endif
