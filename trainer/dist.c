/* dist.c: data-parallel training over MPI (see dist.h): launcher
 * detection, the ranks' shares of a step, agreement on failures, and the
 * rank-ordered sums built on MPI_Alltoallv and MPI_Allgatherv.
 *
 * Left out: a GPU path (the CUDA backend runs one process), sharded
 * optimizer state, overlap of the reduction with the backward. Built with
 * MPI when the Makefile finds Open MPI (SUPKIT_MPI); without it, a world of
 * one only.
 * Reference: the MPI 3.1 standard, sections 5.8 (MPI_Alltoallv) and 5.7
 * (MPI_Allgatherv).
 */
#include "trainer/dist.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/bf16.h"
#include "lib/cli.h"
#include "lib/fileio.h"
#include "trainer/model.h"
#include "trainer/param.h"

#ifdef SUPKIT_MPI
#include <mpi.h>
#endif

void dist_single(struct dist *d)
{
	d->rank = 0;
	d->size = 1;
	d->mpi = 0;
}

int dist_built(void)
{
#ifdef SUPKIT_MPI
	return 1;
#else
	return 0;
#endif
}

/* The world size a launcher announces in the environment: Open MPI's
 * mpirun, Slurm's srun (PMI-2 or PMIx plugin); 0 when none did. */
static long launcher_size(void)
{
	const char *s = getenv("OMPI_COMM_WORLD_SIZE");
	if (!s)
		s = getenv("PMI_SIZE");
	if (!s && getenv("PMIX_RANK"))
		s = getenv("SLURM_NTASKS");
	if (!s && getenv("PMIX_RANK"))
		return 1;
	if (!s)
		return 0;
	char *end;
	long n = strtol(s, &end, 10);
	return *end == '\0' && n >= 1 ? n : 1;
}

void dist_share(const struct dist *d, int64_t n, int64_t *lo, int64_t *hi)
{
	int64_t q = n / d->size, rem = n % d->size, r = d->rank;
	*lo = r * q + (r < rem ? r : rem);
	*hi = *lo + q + (r < rem ? 1 : 0);
}

#ifdef SUPKIT_MPI

static char term_msg[256];
static size_t term_len;

static void on_term(int sig)
{
	(void)sig;
	if (term_len && write(STDERR_FILENO, term_msg, term_len) < 0)
		term_len = 0;
	_exit(EXIT_SYS);
}

void dist_signal_note(const struct dist *d, const char *run_dir)
{
	if (d->rank != 0)
		return;
	char where[160] = "the run folder keeps";
	if (run_dir)
		snprintf(where, sizeof where, "'%s' keeps", run_dir);
	int n = snprintf(term_msg, sizeof term_msg,
			 "%s: rank 0 of %d: ended by a signal (the launcher ends every rank when one dies; its message "
			 "names the rank): %s its last whole checkpoint\n", err_prog, d->size, where);
	term_len = n > 0 && (size_t)n < sizeof term_msg ? (size_t)n : 0;
}

static int mpi_fail(int rc, const char *what, struct err *e)
{
	char s[MPI_MAX_ERROR_STRING];
	int len = 0;
	if (MPI_Error_string(rc, s, &len) != MPI_SUCCESS)
		snprintf(s, sizeof s, "error %d", rc);
	return err_set(e, EXIT_SYS, "%s: %s", what, s);
}

int dist_init(struct dist *d, int *argc, char ***argv, struct err *e)
{
	dist_single(d);
	if (launcher_size() == 0)
		return 0;
	int rc = MPI_Init(argc, argv);
	if (rc != MPI_SUCCESS)
		return err_set(e, EXIT_SYS, "MPI_Init failed (error %d)", rc);
	d->mpi = 1;
	MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
	MPI_Comm_rank(MPI_COMM_WORLD, &d->rank);
	MPI_Comm_size(MPI_COMM_WORLD, &d->size);
	dist_signal_note(d, NULL);
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	return 0;
}

void dist_finalize(struct dist *d)
{
	if (d->mpi)
		MPI_Finalize();
	d->mpi = 0;
}

int dist_agree(const struct dist *d, int r, struct err *e)
{
	if (!d->mpi)
		return r;
	int mine = r < 0 ? d->rank : INT_MAX, first;
	int rc = MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS)
		return mpi_fail(rc, "MPI_Allreduce", e);
	if (first == INT_MAX)
		return 0;
	/* the first failing rank's code and message, to every rank */
	struct {
		int code;
		char msg[ERR_MSG_MAX];
	} m;
	memset(&m, 0, sizeof m);
	if (d->rank == first) {
		m.code = e->code ? e->code : EXIT_SYS;
		snprintf(m.msg, sizeof m.msg, "%s", e->msg);
	}
	rc = MPI_Bcast(&m, (int)sizeof m, MPI_BYTE, first, MPI_COMM_WORLD);
	if (rc != MPI_SUCCESS)
		return mpi_fail(rc, "MPI_Bcast", e);
	if (d->rank != first) {
		m.msg[sizeof m.msg - 1] = '\0';
		err_set(e, m.code, "%s", m.msg);
		err_prefix(e, "rank %d", first);
	}
	return -1;
}

/* Elements a round of dist_sum moves at most (the receive buffer's size) */
#define DIST_CHUNK ((size_t)1 << 24)

int dist_sum(const struct dist *d, void *v, size_t n, int fp64, struct err *e)
{
	if (!d->mpi || d->size == 1 || n == 0)
		return 0;
	const int P = d->size;
	const size_t es = fp64 ? sizeof(double) : sizeof(float);
	MPI_Datatype t = fp64 ? MPI_DOUBLE : MPI_FLOAT;
	int *cnt = xmalloc((size_t)P * sizeof *cnt), *off = xmalloc((size_t)P * sizeof *off);
	int *rcnt = xmalloc((size_t)P * sizeof *rcnt), *roff = xmalloc((size_t)P * sizeof *roff);
	size_t chunk = n < DIST_CHUNK ? n : DIST_CHUNK;
	char *recv = xmalloc((chunk / (size_t)P + 1) * (size_t)P * es);
	int r = 0;
	for (size_t c0 = 0; c0 < n && r == 0; c0 += chunk) {
		size_t len = n - c0 < chunk ? n - c0 : chunk;
		char *base = (char *)v + c0 * es;
		/* rank j owns block j: len / P elements, the first len % P ranks one more */
		size_t q = len / (size_t)P, rem = len % (size_t)P;
		for (int j = 0; j < P; j++) {
			off[j] = (int)((size_t)j * q + ((size_t)j < rem ? (size_t)j : rem));
			cnt[j] = (int)(q + ((size_t)j < rem ? 1 : 0));
		}
		int mine = cnt[d->rank];
		for (int i = 0; i < P; i++) {
			rcnt[i] = mine;
			roff[i] = i * mine;
		}
		int rc = MPI_Alltoallv(base, cnt, off, t, recv, rcnt, roff, t, MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS) {
			r = mpi_fail(rc, "MPI_Alltoallv", e);
			break;
		}
		/* rank order: ((x_0 + x_1) + x_2) + ... */
		if (fp64) {
			double *o = (double *)base + off[d->rank];
			const double *x = (const double *)recv;
			for (int k = 0; k < mine; k++) {
				double s = x[k];
				for (int i = 1; i < P; i++)
					s += x[(size_t)i * mine + k];
				o[k] = s;
			}
		} else {
			float *o = (float *)base + off[d->rank];
			const float *x = (const float *)recv;
			for (int k = 0; k < mine; k++) {
				float s = x[k];
				for (int i = 1; i < P; i++)
					s += x[(size_t)i * mine + k];
				o[k] = s;
			}
		}
		rc = MPI_Allgatherv(MPI_IN_PLACE, 0, t, base, cnt, off, t, MPI_COMM_WORLD);
		if (rc != MPI_SUCCESS)
			r = mpi_fail(rc, "MPI_Allgatherv", e);
	}
	free(recv);
	free(cnt);
	free(off);
	free(rcnt);
	free(roff);
	return r;
}

/* The OE visit counts, summed exactly (integers: any order gives the same) */
static int sum_counts(struct param_table *t, struct err *e)
{
	for (size_t i = 0; i < t->n; i++) {
		struct param *p = &t->p[i];
		for (size_t r0 = 0; p->counts && r0 < p->rows; r0 += INT_MAX / 2) {
			size_t n = p->rows - r0 < INT_MAX / 2 ? p->rows - r0 : INT_MAX / 2;
			int rc = MPI_Allreduce(MPI_IN_PLACE, p->counts + r0, (int)n, MPI_UINT32_T, MPI_SUM, MPI_COMM_WORLD);
			if (rc != MPI_SUCCESS)
				return mpi_fail(rc, "MPI_Allreduce", e);
		}
	}
	return 0;
}

int dist_sum_grads(const struct dist *d, struct model *m, int fp64, struct err *e)
{
	if (!d->mpi || d->size == 1)
		return 0;
	struct param_table *t = model_params(m);
	size_t n = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct param *p = &t->p[i];
		if (fp64 ? (p->g64 || p->slot) : (p->g || p->gb))
			n += p->numel;
	}
	const size_t es = fp64 ? sizeof(double) : sizeof(float);
	char *buf = xmalloc((n ? n : 1) * es);
	size_t k = 0;
	for (size_t i = 0; i < t->n; i++) {
		const struct param *p = &t->p[i];
		if (fp64 && (p->g64 || p->slot)) {
			double *o = (double *)buf + k;
			for (size_t r = 0; r < p->rows; r++) {
				const double *g = param_grad_row64(p, r);
				if (g)
					memcpy(o + r * p->cols, g, p->cols * sizeof *g);
				else
					memset(o + r * p->cols, 0, p->cols * sizeof *g);
			}
			k += p->numel;
		} else if (!fp64 && p->g) {
			memcpy((float *)buf + k, p->g, p->numel * sizeof(float));
			k += p->numel;
		} else if (!fp64 && p->gb) {
			float *o = (float *)buf + k;
			for (size_t j = 0; j < p->numel; j++)
				o[j] = bf16_to_f32(p->gb[j]);
			k += p->numel;
		}
	}
	int r = dist_sum(d, buf, n, fp64, e);
	if (r == 0)
		r = sum_counts(t, e);
	k = 0;
	for (size_t i = 0; i < t->n && r == 0; i++) {
		struct param *p = &t->p[i];
		if (fp64 && (p->g64 || p->slot)) {
			const double *x = (const double *)buf + k;
			for (size_t row = 0; row < p->rows; row++) {
				/* a compact table: the rows visited on some rank */
				if (!p->g64 && !(p->counts && p->counts[row] > 0) && !param_grad_row64(p, row))
					continue;
				double *g = model_grad_row64_take(m, p, row);
				memcpy(g, x + row * p->cols, p->cols * sizeof *g);
			}
			k += p->numel;
		} else if (!fp64 && p->g) {
			memcpy(p->g, (float *)buf + k, p->numel * sizeof(float));
			k += p->numel;
		} else if (!fp64 && p->gb) {
			const float *x = (const float *)buf + k;
			for (size_t j = 0; j < p->numel; j++)
				p->gb[j] = bf16_from_f32(x[j]);
			k += p->numel;
		}
	}
	free(buf);
	return r;
}

#else /* without MPI: the world of one */

int dist_init(struct dist *d, int *argc, char ***argv, struct err *e)
{
	(void)argc;
	(void)argv;
	dist_single(d);
	long n = launcher_size();
	if (n > 1)
		return err_set(e, EXIT_SYS, "started as one of %ld MPI ranks, but this supkit-train was built without "
			       "MPI (install Open MPI, Debian libopenmpi-dev, and rebuild)", n);
	return 0;
}

void dist_finalize(struct dist *d)
{
	(void)d;
}

void dist_signal_note(const struct dist *d, const char *run_dir)
{
	(void)d;
	(void)run_dir;
}

int dist_agree(const struct dist *d, int r, struct err *e)
{
	(void)d;
	(void)e;
	return r;
}

int dist_sum(const struct dist *d, void *v, size_t n, int fp64, struct err *e)
{
	(void)d;
	(void)v;
	(void)n;
	(void)fp64;
	(void)e;
	return 0;
}

int dist_sum_grads(const struct dist *d, struct model *m, int fp64, struct err *e)
{
	(void)d;
	(void)m;
	(void)fp64;
	(void)e;
	return 0;
}

#endif
