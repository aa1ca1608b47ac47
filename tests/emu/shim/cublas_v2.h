/* tests/emu/shim/cublas_v2.h: the cuBLAS calls of the .cu files of kernels/ on the CPU
 * (tests/emu/cudart.h says how; tests/emu/cudart.cc runs them). */
#ifndef SUPKIT_EMU_CUBLAS_H
#define SUPKIT_EMU_CUBLAS_H

#include "tests/emu/cudart.h"

typedef void *cublasHandle_t;
typedef enum {
	CUBLAS_STATUS_SUCCESS = 0,
	CUBLAS_STATUS_NOT_INITIALIZED = 1,
	CUBLAS_STATUS_INVALID_VALUE = 7,
	CUBLAS_STATUS_NOT_SUPPORTED = 15,
} cublasStatus_t;
typedef enum { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 } cublasOperation_t;
typedef enum { CUBLAS_POINTER_MODE_HOST = 0, CUBLAS_POINTER_MODE_DEVICE = 1 } cublasPointerMode_t;
typedef enum { CUDA_R_32F = 0, CUDA_R_64F = 1, CUDA_R_16BF = 14 } cudaDataType_t;
typedef enum {
	CUBLAS_COMPUTE_32F = 68,
	CUBLAS_COMPUTE_32F_FAST_16BF = 75,
} cublasComputeType_t;
typedef enum { CUBLAS_GEMM_DEFAULT = -1 } cublasGemmAlgo_t;

cublasStatus_t cublasCreate(cublasHandle_t *h);
cublasStatus_t cublasSetStream(cublasHandle_t h, cudaStream_t s);
cublasStatus_t cublasSetPointerMode(cublasHandle_t h, cublasPointerMode_t m);
cublasStatus_t cublasGemmEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
			    int n, int k, const void *alpha, const void *A, cudaDataType_t at,
			    int lda, const void *B, cudaDataType_t bt, int ldb, const void *beta,
			    void *C, cudaDataType_t ct, int ldc, cublasComputeType_t comp,
			    cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t h, cublasOperation_t ta,
					  cublasOperation_t tb, int m, int n, int k,
					  const void *alpha, const void *A, cudaDataType_t at,
					  int lda, long long sA, const void *B, cudaDataType_t bt,
					  int ldb, long long sB, const void *beta, void *C,
					  cudaDataType_t ct, int ldc, long long sC, int batch,
					  cublasComputeType_t comp, cublasGemmAlgo_t algo);
cublasStatus_t cublasGemmBatchedEx(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb,
				   int m, int n, int k, const void *alpha,
				   const void *const Aarray[], cudaDataType_t at, int lda,
				   const void *const Barray[], cudaDataType_t bt, int ldb,
				   const void *beta, void *const Carray[], cudaDataType_t ct, int ldc,
				   int batch, cublasComputeType_t comp, cublasGemmAlgo_t algo);
cublasStatus_t cublasDgemm(cublasHandle_t h, cublasOperation_t ta, cublasOperation_t tb, int m,
			   int n, int k, const double *alpha, const double *A, int lda,
			   const double *B, int ldb, const double *beta, double *C, int ldc);

#endif
