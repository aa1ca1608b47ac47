/* backend_complete.h: which entry of a backend object (trainer/backend.h) is
 * missing: every one is required, so a table with a NULL function is a
 * backend the model cannot run on. Used by tests/unit/trainer/test_backend.c
 * (the CPU backend) and tests/gpu/test_cuda_ops.c (the CUDA backend).
 */
#ifndef SUPKIT_TEST_BACKEND_COMPLETE_H
#define SUPKIT_TEST_BACKEND_COMPLETE_H

#include "trainer/backend.h"

/* The name of the first entry of b that is not set (a NULL function or
 * name, a ce_rows below 1), or NULL when b is complete. */
static inline const char *backend_missing(const struct backend_ops *b)
{
#define BC_ENTRY(f) if (!b->f) return #f;
	BC_ENTRY(name) BC_ENTRY(zero) BC_ENTRY(axpby) BC_ENTRY(dot) BC_ENTRY(dot_acc)
	BC_ENTRY(cols_get) BC_ENTRY(cols_add) BC_ENTRY(matmul) BC_ENTRY(rmsnorm_fwd)
	BC_ENTRY(rmsnorm_bwd) BC_ENTRY(rmsnorm_ref_fwd) BC_ENTRY(rmsnorm_ref_bwd)
	BC_ENTRY(rope_fwd) BC_ENTRY(rope_bwd) BC_ENTRY(rope_rmsnorm_fwd) BC_ENTRY(rope_rmsnorm_bwd)
	BC_ENTRY(attn_fwd) BC_ENTRY(attn_bwd) BC_ENTRY(softcap_ce) BC_ENTRY(embed_gather)
	BC_ENTRY(embed_scatter_add) BC_ENTRY(ngram_rows) BC_ENTRY(count_rows)
	BC_ENTRY(relu2_fwd) BC_ENTRY(relu2_bwd) BC_ENTRY(ve_gate_fwd) BC_ENTRY(ve_gate_bwd)
	BC_ENTRY(mul_cols_fwd) BC_ENTRY(mul_cols_bwd) BC_ENTRY(scope) BC_ENTRY(sync)
	BC_ENTRY(relu2_fwd_gemm) BC_ENTRY(mlp_bf16) BC_ENTRY(modes) BC_ENTRY(attn_bf16)
	BC_ENTRY(norm_bf16) BC_ENTRY(mix_rmsnorm_fwd) BC_ENTRY(mix_bwd) BC_ENTRY(matmul_n)
	BC_ENTRY(ve_gate_fwd_rows) BC_ENTRY(ve_gate_bwd_rows) BC_ENTRY(softcap_ce_bf16)
	BC_ENTRY(device_count) BC_ENTRY(open) BC_ENTRY(alloc) BC_ENTRY(free) BC_ENTRY(optim)
	BC_ENTRY(polar_express) BC_ENTRY(device_name) BC_ENTRY(peak_flops) BC_ENTRY(device_bytes)
	BC_ENTRY(precision)
#undef BC_ENTRY
	if (b->ce_rows < 1)
		return "ce_rows";
	return NULL;
}

#endif
