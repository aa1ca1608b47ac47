/* dist.h: data-parallel training over MPI (Open MPI) on the CPU backend:
 * which process this is, the share of a step's rows it runs, and the sums
 * across processes, in a fixed order.
 *
 * The ranks are started by an MPI launcher (mpirun, or Slurm's srun with
 * its MPI plugin), which tells each its rank and the world size. Every rank
 * holds the whole model and optimizer state (replicated, not sharded) and
 * reads the whole global batch from its own loader; it runs its share of
 * the step's K x B rows (dist_share) through forward and backward; the
 * gradients are summed across the ranks (dist_sum_grads) and every rank
 * then takes the same optimizer step.
 *
 * The order of every sum is fixed: element i of the result is
 * ((x_0[i] + x_1[i]) + x_2[i]) + ... in rank order, whatever MPI's own
 * reduction order would be (MPI_Allreduce leaves it to the implementation):
 * the buffer is cut into one block a rank, each rank receives every rank's
 * copy of its block (MPI_Alltoallv), adds them in rank order, and the summed
 * blocks are gathered back by every rank (MPI_Allgatherv). The same world
 * size thus gives the same bits run after run; another world size sums in
 * another grouping (equal within rounding).
 *
 * Without a launcher (or in a build without MPI) the process is the one
 * rank of a world of one and every function here is a no-op.
 */
#ifndef SUPKIT_DIST_H
#define SUPKIT_DIST_H

#include <stddef.h>
#include <stdint.h>

#include "lib/err.h"

struct model;

struct dist {
	int rank, size;            /* this process's rank in [0, size) */
	int mpi;                   /* 1 when MPI was initialised by dist_init */
};

/* The world of one: rank 0 of 1, no MPI. */
void dist_single(struct dist *d);
/* 1 when this build has MPI. */
int dist_built(void);
/* Initialise MPI when a launcher started this process (Open MPI's mpirun,
 * or srun with PMI or PMIx), else the world of one; -1 with e (EXIT_SYS)
 * when a launcher started several ranks of a build without MPI, or MPI
 * cannot start. Under MPI, SIGTERM and SIGINT (mpirun's way of ending the
 * ranks when one dies) end the process with a line saying so. */
int dist_init(struct dist *d, int *argc, char ***argv, struct err *e);
/* Rank 0 under MPI: the line that SIGTERM or SIGINT prints names run_dir
 * (NULL: "the run folder") as keeping its last whole checkpoint. */
void dist_signal_note(const struct dist *d, const char *run_dir);
/* Finalise MPI (when initialised). */
void dist_finalize(struct dist *d);

/* Rows [*lo, *hi) of a step's n rows (micro-step k's row b is row k*B + b)
 * that rank d->rank runs: contiguous shares, the first n % size ranks one
 * row more. */
void dist_share(const struct dist *d, int64_t n, int64_t *lo, int64_t *hi);

/* Collective: every rank passes its status (r = 0, or -1 with e set). 0
 * when all are 0; else -1 on every rank with e the failing rank of lowest
 * number's error (its code, and its message, prefixed "rank N: " on the
 * other ranks). -1 with EXIT_SYS when MPI itself fails. */
int dist_agree(const struct dist *d, int r, struct err *e);

/* Collective: v (n values, fp32 or fp64 as fp64 says) becomes the sum over
 * the ranks, in rank order (see above). */
int dist_sum(const struct dist *d, void *v, size_t n, int fp64, struct err *e);

/* Collective: the model's gradients become their sums over the ranks:
 * fp32 runs every g (fp32) and OE table gradient gb (bf16: summed in fp32,
 * rounded to bf16 once); fp64 runs every g64 and compact OE gradient (as
 * dense rows; a row visited on any rank gets its slot); the OE visit counts
 * (integers, exact). */
int dist_sum_grads(const struct dist *d, struct model *m, int fp64, struct err *e);

#endif
