/*
 * qr_lu_solve.c - a ScaLAPACK-style program on ftla's C ABI.
 *
 * Factors a generated N x N matrix with pdgeqrf_ft_ (QR, in its own
 * array) and pdgetrf_ft_ (LU), solves A x = b with ftla_pdgetrs_, and
 * checks on every process - a replacement process included - that its
 * local part of R, of L and U and its pivots equal LAPACK's dgeqrf/dgetrf
 * on the same matrix (which every process computes in full, after the
 * distributed calls), and that the solution is the one b was made from.
 * ftla keeps both factorizations protected until the grid's exit: a
 * replacement that joined after the QR holds its R again once it met the
 * survivors (in the LU here). Exit status 0 when every check
 * passed on this process.
 *
 * Build (see README.md):
 *   .venv/bin/mpicc -O2 -I capi/include examples/c/qr_lu_solve.c \
 *       -L target/release -lftla -lopenblas -lm \
 *       -Wl,-rpath,$PWD/target/release -o qr_lu_solve
 * Run, killing grid rank 1 in step 3 of the QR:
 *   FTLA_KILL=1@qr:3:update target/release/ftla launch --np 4 -- \
 *       ./qr_lu_solve 512 32 2 2
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftla.h"

/* LAPACK, from OpenBLAS. */
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work,
             const int *lwork, int *info);
void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);

/* A(i, j), 0-based: the same generated value on every process. */
static double element(int i, int j) {
    unsigned long long x = (unsigned long long)i * 2654435761ULL + (unsigned long long)j * 40503ULL + 12345ULL;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return (double)(x >> 11) / 9007199254740992.0 - 0.5;
}

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* Global index of local index l (0-based), blocks of nb, first block on process 0. */
static int l2g(int l, int nb, int p, int np) { return (l / nb) * np * nb + p * nb + l % nb; }

static void fill_local(double *a, int lld, int mloc, int nloc, int nb, int myrow, int mycol, int nprow,
                       int npcol) {
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++)
            a[li + (size_t)lj * lld] = element(l2g(li, nb, myrow, nprow), l2g(lj, nb, mycol, npcol));
}

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 512;
    int nb = argc > 2 ? atoi(argv[2]) : 32;
    int nprow = argc > 3 ? atoi(argv[3]) : 2;
    int npcol = argc > 4 ? atoi(argv[4]) : 2;
    int iam, nprocs, ictxt, myrow, mycol, info;
    const int zero = 0, one = 1;

    Cftla_pinfo(&iam, &nprocs);
    if (nprocs < nprow * npcol) {
        fprintf(stderr, "qr_lu_solve: a %dx%d grid needs %d processes, the job has %d\n", nprow, npcol,
                nprow * npcol, nprocs);
        return 2;
    }
    Cftla_gridinit(&ictxt, "Row", nprow, npcol);
    if (ictxt < 0) return 2;
    Cftla_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);

    int mloc = ftla_numroc_(&n, &nb, &myrow, &zero, &nprow);
    int nloc = ftla_numroc_(&n, &nb, &mycol, &zero, &npcol);
    int lld = mloc > 1 ? mloc : 1;
    int desca[9], descb[9];
    ftla_descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
    ftla_descinit_(descb, &n, &one, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
    if (info != 0) return 2;
    double *a = malloc(sizeof(double) * (size_t)lld * (nloc > 0 ? nloc : 1));
    double *tau = malloc(sizeof(double) * (nloc > 0 ? nloc : 1));
    int *ipiv = malloc(sizeof(int) * (mloc + nb));
    double *b = malloc(sizeof(double) * lld);

    /* QR, with ScaLAPACK's workspace query, into its own array (R is
       checked at the end). */
    double *r = malloc(sizeof(double) * (size_t)lld * (nloc > 0 ? nloc : 1));
    fill_local(r, lld, mloc, nloc, nb, myrow, mycol, nprow, npcol);
    double wq;
    int lwork = -1;
    pdgeqrf_ft_(&n, &n, r, &one, &one, desca, tau, &wq, &lwork, &info);
    lwork = (int)wq;
    double *work = malloc(sizeof(double) * (lwork > 0 ? lwork : 1));
    double t0 = now();
    pdgeqrf_ft_(&n, &n, r, &one, &one, desca, tau, work, &lwork, &info);
    double t_qr = now() - t0;
    int qr_info = info;

    /* LU, then the solve of A x = b with x = (1, 2, ..., n) / n. */
    fill_local(a, lld, mloc, nloc, nb, myrow, mycol, nprow, npcol);
    t0 = now();
    pdgetrf_ft_(&n, &n, a, &one, &one, desca, ipiv, &info);
    double t_lu = now() - t0;
    int lu_info = info;
    for (int li = 0; li < mloc; li++) {
        int i = l2g(li, nb, myrow, nprow);
        double s = 0;
        for (int j = 0; j < n; j++) s += element(i, j) * (double)(j + 1) / n;
        b[li] = s;
    }
    ftla_pdgetrs_("N", &n, &one, a, &one, &one, desca, ipiv, b, &one, &one, descb, &info);
    int solve_info = info;
    int replacement = Cftla_is_replacement(ictxt);

    /* LAPACK on the whole matrix, on every process. */
    double *g = malloc(sizeof(double) * (size_t)n * n);
    double *gtau = malloc(sizeof(double) * n);
    int *gpiv = malloc(sizeof(int) * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) g[i + (size_t)j * n] = element(i, j);
    double amax = 0;
    for (size_t k = 0; k < (size_t)n * n; k++) amax = fmax(amax, fabs(g[k]));
    int glwork = -1, ginfo;
    dgeqrf_(&n, &n, g, &n, gtau, &wq, &glwork, &ginfo);
    glwork = (int)wq;
    double *gwork = malloc(sizeof(double) * (glwork > 0 ? glwork : 1));
    dgeqrf_(&n, &n, g, &n, gtau, gwork, &glwork, &ginfo);
    double r_err = 0;
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++) {
            int i = l2g(li, nb, myrow, nprow), j = l2g(lj, nb, mycol, npcol);
            if (i <= j) r_err = fmax(r_err, fabs(r[li + (size_t)lj * lld] - g[i + (size_t)j * n]));
        }
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) g[i + (size_t)j * n] = element(i, j);
    dgetrf_(&n, &n, g, &n, gpiv, &ginfo);
    double lu_err = 0;
    int piv_same = 1;
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++) {
            int i = l2g(li, nb, myrow, nprow), j = l2g(lj, nb, mycol, npcol);
            lu_err = fmax(lu_err, fabs(a[li + (size_t)lj * lld] - g[i + (size_t)j * n]));
        }
    for (int li = 0; li < mloc; li++) piv_same &= ipiv[li] == gpiv[l2g(li, nb, myrow, nprow)];
    double x_err = 0; /* (b, one column, lives on process column 0) */
    for (int li = 0; li < (mycol == 0 ? mloc : 0); li++)
        x_err = fmax(x_err, fabs(b[li] - (double)(l2g(li, nb, myrow, nprow) + 1) / n));

    double tol = 1e-10 * n * amax;
    int r_ok = qr_info == 0 && r_err <= tol;
    int ok = r_ok && lu_info == 0 && solve_info == 0 && lu_err <= tol && piv_same && x_err <= 1e-8;
    printf("qr_lu_solve: grid rank %d (%d,%d)%s: R %s (max diff %.1e), L and U %s (max diff %.1e), pivots %s, "
           "x %s (max err %.1e); INFO %d %d %d\n",
           myrow * npcol + mycol, myrow, mycol, replacement ? " [replacement]" : "",
           r_ok ? "equal to LAPACK's" : "DIFFER", r_err,
           lu_err <= tol ? "equal to LAPACK's" : "DIFFER", lu_err, piv_same ? "identical" : "DIFFER",
           x_err <= 1e-8 ? "correct" : "WRONG", x_err, qr_info, lu_info, solve_info);
    if (myrow == 0 && mycol == 0)
        printf("qr_lu_solve: N %d NB %d on %dx%d: pdgeqrf_ft_ %.3f s (%.2f Gflop/s), pdgetrf_ft_ %.3f s (%.2f Gflop/s)\n",
               n, nb, nprow, npcol, t_qr, 4.0 / 3.0 * n * (double)n * n / t_qr * 1e-9, t_lu,
               2.0 / 3.0 * n * (double)n * n / t_lu * 1e-9);
    fflush(stdout);

    free(a), free(tau), free(ipiv), free(b), free(work), free(r), free(g), free(gtau), free(gpiv), free(gwork);
    Cftla_gridexit(ictxt);
    Cftla_exit(0);
    return ok ? 0 : 1;
}
