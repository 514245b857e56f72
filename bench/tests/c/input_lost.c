/*
 * Factor, lose a process, solve (tests/capi.rs runs it under `ftla launch
 * --np 4` on a 2x2 grid): the plain ftla_pdgetrf_ (FACTOR "plain") or
 * pdgetrf_ft_ ("ft"), then grid rank KILL dies - by its own SIGKILL between
 * the calls ("between"), or at a kill point of FTLA_KILL ("none") - then
 * every process solves with the plain ftla_pdgetrs_, calling it again once
 * on FTLA_INFO_PROCESS_LOST as ftla.h says. After the plain factorization
 * the replacement's part of the factors was lost: the solve must say so
 * with FTLA_INFO_INPUT_LOST on every process, never INFO 0 with a wrong x.
 * pdgetrf_ft_'s factors are kept protected: the replacement's A holds them
 * again when it meets the survivors, and the solve is right everywhere.
 * With REFACTOR = 1 the program, refused, fills A again, factors with
 * pdgetrf_ft_ and solves again.
 *
 * Usage: input_lost N NB between|none KILL REFACTOR plain|ft
 * Prints one line per process; exit status 0 when the last solve gave
 * INFO 0 and x correct on this process.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftla.h"

static int l2g(int l, int nb, int p, int np) { return (l / nb) * np * nb + p * nb + l % nb; }

/* A(i, j), 0-based: well conditioned, the same on every process. */
static double element(int i, int j) { return (i == j ? 2.0 : 0.0) + 1.0 / (1.0 + i + 3 * j); }

static void fill(double *a, int lld, int mloc, int nloc, int nb, int myrow, int mycol, int nprow, int npcol) {
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++)
            a[li + (size_t)lj * lld] = element(l2g(li, nb, myrow, nprow), l2g(lj, nb, mycol, npcol));
}

/* b = A x with x(j) = (j + 1) / n, on process column 0 (B is N x 1). */
static void fill_b(double *b, int n, int mloc, int nb, int myrow, int mycol, int nprow) {
    for (int li = 0; li < (mycol == 0 ? mloc : 0); li++) {
        int i = l2g(li, nb, myrow, nprow);
        double s = 0;
        for (int j = 0; j < n; j++) s += element(i, j) * (double)(j + 1) / n;
        b[li] = s;
    }
}

/* Largest error of this process's part of x. */
static double x_error(const double *b, int n, int mloc, int nb, int myrow, int mycol, int nprow) {
    double e = 0;
    for (int li = 0; li < (mycol == 0 ? mloc : 0); li++)
        e = fmax(e, fabs(b[li] - (double)(l2g(li, nb, myrow, nprow) + 1) / n));
    return e;
}

/* ftla_pdgetrs_, called again once when it lost a process (ftla.h). */
static int solve(int n, double *a, int *desca, int *ipiv, double *b, int *descb) {
    const int one = 1;
    int info;
    ftla_pdgetrs_("N", &n, &one, a, &one, &one, desca, ipiv, b, &one, &one, descb, &info);
    if (info == FTLA_INFO_PROCESS_LOST)
        ftla_pdgetrs_("N", &n, &one, a, &one, &one, desca, ipiv, b, &one, &one, descb, &info);
    return info;
}

int main(int argc, char **argv) {
    if (argc < 7) return 2;
    int plain = strcmp(argv[6], "plain") == 0;
    int n = atoi(argv[1]), nb = atoi(argv[2]), kill_rank = atoi(argv[4]), refactor = atoi(argv[5]);
    int between = strcmp(argv[3], "between") == 0;
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
    double *a = malloc(sizeof(double) * (size_t)lld * (nloc > 0 ? nloc : 1));
    int *ipiv = malloc(sizeof(int) * (mloc + nb));
    double *b = malloc(sizeof(double) * lld);

    fill(a, lld, mloc, nloc, nb, myrow, mycol, nprow, npcol);
    if (plain)
        ftla_pdgetrf_(&n, &n, a, &one, &one, desca, ipiv, &info);
    else
        pdgetrf_ft_(&n, &n, a, &one, &one, desca, ipiv, &info);
    int factor_info = info;
    /* The application's own work, during which a process dies. */
    if (between && rank == kill_rank && !Cftla_is_replacement(ictxt)) {
        fflush(stdout);
        raise(SIGKILL);
    }
    fill_b(b, n, mloc, nb, myrow, mycol, nprow);
    int solve_info = solve(n, a, desca, ipiv, b, descb);
    double first_err = x_error(b, n, mloc, nb, myrow, mycol, nprow);
    int refactor_info = -1, last_info = solve_info;
    double last_err = first_err;
    if (solve_info == FTLA_INFO_INPUT_LOST && refactor) {
        fill(a, lld, mloc, nloc, nb, myrow, mycol, nprow, npcol);
        pdgetrf_ft_(&n, &n, a, &one, &one, desca, ipiv, &info);
        refactor_info = info;
        fill_b(b, n, mloc, nb, myrow, mycol, nprow);
        last_info = solve(n, a, desca, ipiv, b, descb);
        last_err = x_error(b, n, mloc, nb, myrow, mycol, nprow);
    }
    int replacement = Cftla_is_replacement(ictxt);
    int ok = last_info == 0 && last_err <= 1e-10;
    printf("input_lost: grid rank %d%s: factor INFO %d, solve INFO %d, x %s (err %.1e); refactor INFO %d, "
           "solve INFO %d, x %s (err %.1e)\n",
           rank, replacement ? " [replacement]" : "", factor_info, solve_info,
           first_err <= 1e-10 ? "correct" : "WRONG", first_err, refactor_info, last_info,
           last_err <= 1e-10 ? "correct" : "WRONG", last_err);
    fflush(stdout);
    free(a), free(ipiv), free(b);
    Cftla_gridexit(ictxt);
    Cftla_exit(0);
    return ok ? 0 : 1;
}
