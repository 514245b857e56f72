/*
 * factor_once_solve_many.c - factor once, solve many times, on ftla's C ABI.
 *
 * Factors a generated N x N matrix once with pdgetrf_ft_, then solves
 * A x = b for NSOLVES right-hand sides, one at a time, with pdgetrs_ft_ -
 * as a Newton iteration or a boundary-element code does - and checks every
 * solution against the x its b was made from. Between the solves the
 * program does its own work; with KILL >= 0, grid rank KILL dies there
 * (SIGKILL) after solve AFTER. ftla keeps the factors protected between
 * the calls: the survivors' next solve repairs the grid, the replacement
 * (which runs main from the top) meets them there, its part of the factors
 * is rebuilt from their checksums, and every later solve is right on every
 * process. A solve that completed before the replacement joined returns
 * FTLA_INFO_RESULT_LOST in it (its part of that x was lost with the
 * process it replaces); the survivors hold theirs. Exit status 0 when every
 * solve this process saw was right.
 *
 * With "in-place", A is allocated with the room ftla_kept_lsize_ says and
 * declared with ftla_in_place_: the factorization works in A and ftla
 * keeps the factors there (A's leading part holds L and U, the rest their
 * checksums), holding itself only their left-factor sums and the pivots
 * instead of a copy. Each process prints the bytes ftla keeps.
 *
 * Build (see README.md):
 *   .venv/bin/mpicc -O2 -I capi/include examples/c/factor_once_solve_many.c \
 *       -L target/release -lftla -lopenblas -lm \
 *       -Wl,-rpath,$PWD/target/release -o factor_once_solve_many
 * Run, grid rank 1 dying after the second solve:
 *   target/release/ftla launch --np 4 -- ./factor_once_solve_many 512 64 4 1 1
 * The same with the factors kept in A itself:
 *   target/release/ftla launch --np 4 -- ./factor_once_solve_many 512 64 4 1 1 in-place
 *
 * Usage: factor_once_solve_many N NB NSOLVES KILL AFTER [in-place]
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftla.h"

static int l2g(int l, int nb, int p, int np) { return (l / nb) * np * nb + p * nb + l % nb; }

/* A(i, j), 0-based: well conditioned, the same on every process. */
static double element(int i, int j) { return (i == j ? 4.0 : 0.0) + 1.0 / (2.0 + i + j); }

/* The solution of right-hand side s. */
static double xs(int j, int s) { return 1.0 + (double)(j % 17) / (s + 2); }

int main(int argc, char **argv) {
    if (argc < 6) {
        fprintf(stderr, "usage: %s N NB NSOLVES KILL AFTER [in-place]\n", argv[0]);
        return 2;
    }
    int n = atoi(argv[1]), nb = atoi(argv[2]), nsolves = atoi(argv[3]), kill_rank = atoi(argv[4]);
    int after = atoi(argv[5]), in_place = argc > 6 && strcmp(argv[6], "in-place") == 0;
    int iam, nprocs, ictxt, nprow = 2, npcol = 2, myrow, mycol, info;
    const int zero = 0, one = 1;

    Cftla_pinfo(&iam, &nprocs);
    Cftla_gridinit(&ictxt, "Row", nprow, npcol);
    if (ictxt < 0) return 2;
    Cftla_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);
    int rank = myrow * npcol + mycol;
    int mloc = ftla_numroc_(&n, &nb, &myrow, &zero, &nprow);
    int nloc = ftla_numroc_(&n, &nb, &mycol, &zero, &npcol);
    int lld = mloc > 1 ? mloc : 1;
    int desca[9], descb[9];
    ftla_descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
    ftla_descinit_(descb, &n, &one, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
    /* A's local array; in place, with the room for the checksums after it. */
    int64_t lsize = (int64_t)lld * (nloc > 0 ? nloc : 1);
    if (in_place) {
        ftla_kept_lsize_(&n, &n, desca, &lsize, &info);
        if (info != 0) return 2;
    }
    double *a = malloc(sizeof(double) * (size_t)lsize);
    int *ipiv = malloc(sizeof(int) * (mloc + nb));
    double *b = malloc(sizeof(double) * lld);
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++)
            a[li + (size_t)lj * lld] = element(l2g(li, nb, myrow, nprow), l2g(lj, nb, mycol, npcol));

    /* In place: the factorization works in A, and ftla keeps the factors there. */
    if (in_place) ftla_in_place_(a, desca, &lsize, &info);
    /* Factor once: ftla keeps the factors protected until released. */
    pdgetrf_ft_(&n, &n, a, &one, &one, desca, ipiv, &info);
    int ok = info == 0;
    int64_t kept;
    ftla_kept_bytes_(&kept);
    char infos[256] = "";
    int len = 0;
    double worst = 0;
    for (int s = 0; s < nsolves; s++) {
        /* b = A x_s (B, one column, lives on process column 0). */
        for (int li = 0; li < (mycol == 0 ? mloc : 0); li++) {
            int i = l2g(li, nb, myrow, nprow);
            double sum = 0;
            for (int j = 0; j < n; j++) sum += element(i, j) * xs(j, s);
            b[li] = sum;
        }
        pdgetrs_ft_("N", &n, &one, a, &one, &one, desca, ipiv, b, &one, &one, descb, &info);
        len += snprintf(infos + len, sizeof infos - len, " %d", info);
        if (info == FTLA_INFO_RESULT_LOST && Cftla_is_replacement(ictxt)) {
            /* Solved before this process existed: the survivors hold x. */
        } else if (info != 0) {
            ok = 0;
        } else {
            for (int li = 0; li < (mycol == 0 ? mloc : 0); li++)
                worst = fmax(worst, fabs(b[li] - xs(l2g(li, nb, myrow, nprow), s)));
        }
        /* The program's own work between the solves. */
        if (s == after && rank == kill_rank && !Cftla_is_replacement(ictxt)) {
            fflush(stdout);
            raise(SIGKILL);
        }
    }
    ftla_release_(a, desca, &info);
    ok = ok && info == 0 && worst <= 1e-10;
    printf("factor_once_solve_many: grid rank %d (%d,%d)%s: %d solves, INFO%s; x %s (max err %.1e); ftla kept %lld "
           "bytes (%s, A's local array %lld)\n",
           rank, myrow, mycol, Cftla_is_replacement(ictxt) ? " [replacement]" : "", nsolves, infos,
           worst <= 1e-10 ? "correct" : "WRONG", worst, (long long)kept, in_place ? "in place" : "a copy",
           (long long)lld * nloc * (long long)sizeof(double));
    fflush(stdout);
    free(a), free(ipiv), free(b);
    Cftla_gridexit(ictxt);
    Cftla_exit(0);
    return ok ? 0 : 1;
}
