/*
 * What the C test programs of the kept factors (in_place.c,
 * protected_solve.c) share: the grid, the LAPACK routines they check
 * against, the test matrix and its known solution, distributed matrices
 * and their comparison with the whole one, the kills during the
 * program's own work, and the INFO checks. Each program defines PROGRAM
 * (its name, for its lines) before including it.
 */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftla.h"

void dgetrf_(const int *m, const int *n, double *a, const int *lda, int *ipiv, int *info);
void dgeqrf_(const int *m, const int *n, double *a, const int *lda, double *tau, double *work, const int *lwork,
             int *info);
void dormqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, const double *a,
             const int *lda, const double *tau, double *c, const int *ldc, double *work, const int *lwork,
             int *info);

static int nprow = 2, npcol = 2, myrow, mycol, rank, ictxt;
static const int zero = 0, one = 1;

static inline int l2g(int l, int nb, int p, int np) { return (l / nb) * np * nb + p * nb + l % nb; }
static inline int imax(int a, int b) { return a > b ? a : b; }

/* A(i, j), 0-based: full rank, well conditioned, the same everywhere. */
static inline double element(int i, int j) { return (i == j ? 2.0 : 0.0) + 1.0 / (1.0 + i + 3 * j); }
/* The right-hand sides' entries, for the least-squares problems. */
static inline double rhs(int i, int k) { return sin(1.0 + i + 7.0 * k); }
/* The known solution of the square systems. */
static inline double xknown(int j, int k) { return (double)(j + 1) / (j + 5) + k; }

/* A distributed matrix: its global shape, local array (lsize doubles) and descriptor. */
typedef struct {
    int m, n, nb, mloc, nloc, lld, desc[9];
    int64_t lsize;
    double *a;
} Mat;

/* An m x n matrix with leading dimension max(1, LOCr) + pad; with room: its
 * local array as large as ftla_kept_lsize_ says (to be declared in place). */
static inline Mat mat_with(int m, int n, int nb, int pad, int room) {
    Mat x = {m, n, nb, 0, 0, 0, {0}, 0, NULL};
    x.mloc = ftla_numroc_(&m, &nb, &myrow, &zero, &nprow);
    x.nloc = ftla_numroc_(&n, &nb, &mycol, &zero, &npcol);
    x.lld = imax(1, x.mloc) + pad;
    int info;
    ftla_descinit_(x.desc, &m, &n, &nb, &nb, &zero, &zero, &ictxt, &x.lld, &info);
    x.lsize = (int64_t)x.lld * imax(1, x.nloc);
    if (room) {
        int64_t need;
        ftla_kept_lsize_(&m, &n, x.desc, &need, &info);
        if (info == 0 && need > x.lsize) x.lsize = need;
    }
    x.a = calloc((size_t)x.lsize, sizeof(double));
    return x;
}

/* An m x n matrix, its leading dimension max(1, LOCr). */
static inline Mat mat(int m, int n, int nb) { return mat_with(m, n, nb, 0, 0); }

static inline double *at(Mat *x, int li, int lj) { return &x->a[li + (size_t)lj * x->lld]; }
static inline int gi(Mat *x, int li) { return l2g(li, x->nb, myrow, nprow); }
static inline int gj(Mat *x, int lj) { return l2g(lj, x->nb, mycol, npcol); }

static inline void fill_a(Mat *x) {
    for (int lj = 0; lj < x->nloc; lj++)
        for (int li = 0; li < x->mloc; li++) *at(x, li, lj) = element(gi(x, li), gj(x, lj));
}

/* The whole matrix A, column-major, on this process. */
static inline double *whole_a(int m, int n) {
    double *g = malloc(sizeof(double) * (size_t)m * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < m; i++) g[i + (size_t)j * m] = element(i, j);
    return g;
}

/* Largest difference between this process's part of x and the whole g
 * (leading dimension ldg), over its rows below `rows` (with upper_only: on
 * and above the diagonal only). */
static inline double diff_part(Mat *x, const double *g, int ldg, int rows, int upper_only) {
    double e = 0;
    for (int lj = 0; lj < x->nloc; lj++)
        for (int li = 0; li < x->mloc; li++)
            if (gi(x, li) < rows && (!upper_only || gi(x, li) <= gj(x, lj)))
                e = fmax(e, fabs(*at(x, li, lj) - g[gi(x, li) + (size_t)gj(x, lj) * ldg]));
    return e;
}

/* diff_part over every row below `rows`. */
static inline double diff(Mat *x, const double *g, int ldg, int rows) { return diff_part(x, g, ldg, rows, 0); }

/* The grid ranks KILL names (a comma-separated list; -1: nobody). */
static int killed[4], nkilled = 0;
static inline void parse_kills(const char *list) {
    for (char *p = (char *)list; *p && nkilled < 4;) {
        killed[nkilled++] = (int)strtol(p, &p, 10);
        if (*p == ',') p++;
        else break;
    }
}

/* The application's own work, during which the grid ranks KILL die. */
static inline void own_work(void) {
    for (int k = 0; k < nkilled; k++)
        if (rank == killed[k] && !Cftla_is_replacement(ictxt)) {
            fflush(stdout);
            raise(SIGKILL);
        }
}

static inline const char *who(void) { return Cftla_is_replacement(ictxt) ? " [replacement]" : ""; }

/* One check: INFO as expected on this process. */
static inline int expect(const char *what, int got, int want) {
    if (got != want) printf(PROGRAM ": grid rank %d: %s: INFO %d, expected %d\n", rank, what, got, want);
    return got == want;
}
