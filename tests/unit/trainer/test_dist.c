/* test_dist.c: trainer/dist.c in a world of one process and its shares of a
 * step: every rank's rows contiguous, in rank order, covering the step once,
 * the first n % size ranks one row more. The sums across ranks run under
 * mpirun in tests/cli/train_mpi.sh.
 */
#include <stdlib.h>
#include <string.h>

#include "t.h"
#include "trainer/dist.h"

TEST(shares_cover_the_step_in_rank_order)
{
	for (int size = 1; size <= 9; size++)
		for (int64_t n = size; n <= 40; n++) {
			int64_t next = 0;
			for (int r = 0; r < size; r++) {
				struct dist d = {.rank = r, .size = size, .mpi = 0};
				int64_t lo, hi;
				dist_share(&d, n, &lo, &hi);
				int64_t want = n / size + (r < n % size ? 1 : 0);
				CHECKF(lo == next && hi - lo == want, "n %lld, %d ranks: rank %d has [%lld, %lld)", (long long)n,
				       size, r, (long long)lo, (long long)hi);
				next = hi;
			}
			CHECK(next == n);
		}
	/* 8 rows on 3 ranks: 3 + 3 + 2 */
	struct dist d = {.rank = 2, .size = 3, .mpi = 0};
	int64_t lo, hi;
	dist_share(&d, 8, &lo, &hi);
	CHECK(lo == 6 && hi == 8);
}

TEST(world_of_one)
{
	unsetenv("OMPI_COMM_WORLD_SIZE");
	unsetenv("PMI_SIZE");
	unsetenv("PMIX_RANK");
	struct dist d;
	struct err e;
	err_clear(&e);
	int argc = 1;
	char *args[] = {"test_dist", NULL}, **argv = args;
	CHECKF(dist_init(&d, &argc, &argv, &e) == 0, "%s", e.msg);
	CHECK(d.rank == 0 && d.size == 1 && d.mpi == 0);
	/* the collectives are no-ops: the sum of one rank is its value */
	float v[3] = {1.5f, -2.0f, 0.25f};
	CHECK(dist_sum(&d, v, 3, 0, &e) == 0 && v[0] == 1.5f && v[1] == -2.0f && v[2] == 0.25f);
	CHECK(dist_agree(&d, 0, &e) == 0);
	err_set(&e, EXIT_USAGE, "bad");
	CHECK(dist_agree(&d, -1, &e) == -1 && e.code == EXIT_USAGE && !strcmp(e.msg, "bad"));
	dist_finalize(&d);
}

int main(void)
{
	RUN(shares_cover_the_step_in_rank_order);
	RUN(world_of_one);
	return t_done();
}
