/*
 * scalapack_driver.c — the baseline of `ftla baseline scalapack qr|lu|chol`.
 *
 * Runs the distribution's (Debian) ScaLAPACK PDGEQRF, PDGETRF or PDPOTRF on a
 * PxQ process grid and reports time and residuals, so that our own
 * factorizations can be compared with the reference library on the same grid,
 * N and NB.
 *
 *   usage: scalapack_driver qr|lu|chol M N NB P Q [seed]
 * (lu and chol want M = N.)
 *
 * Build (done on demand by `ftla baseline`, see bench/src/baseline.rs):
 *   /usr/bin/mpicc.openmpi -O2 -o scalapack_driver scalapack_driver.c \
 *       -lscalapack-openmpi -lopenblas -lm
 * Run with /usr/bin/mpirun.openmpi -n P*Q (exactly P*Q ranks are used; extra
 * ranks stay idle).
 *
 * The matrix: a(i,j) uniform in [-0.5, 0.5) from a counter-based hash of
 * (seed, global i, global j) (0-based), the same function as the `Uniform`
 * kind of scalapack-ft/src/generate.rs, so the matrix depends neither on the
 * grid nor on NB, and equals the one our own code factors for the same seed.
 * For chol, the `Spd` kind of the same file: a(i,j) = uniform(seed, min(i,j),
 * max(i,j)) + (i == j ? N : 0), symmetric and strictly diagonally dominant
 * with a positive diagonal, hence positive definite; both triangles are
 * stored explicitly.
 *
 * What is measured:
 *   time_s       PDGEQRF (after an LWORK=-1 query, outside the timing),
 *                PDGETRF or PDPOTRF (UPLO='L'), timed with MPI_Wtime between
 *                two barriers-aligned points; the maximum over the ranks.
 *   residual     QR: ||A - Q R||_1 / (||A||_1 * max(M,N) * eps)
 *                LU: ||P A - L U||_1 / (||A||_1 * N * eps)
 *                chol: ||A - L L^T||_1 / (||A||_1 * N * eps) (as ScaLAPACK's
 *                PDPOTRF tester), L the lower triangle of the factors with its
 *                strictly upper part zeroed, L L^T by PDGEMM, the 1-norm by
 *                PDLANGE of the full (both triangles) difference
 *   orthogonality (QR only) ||I - Q^T Q||_1 / (M * eps), Q = PDORGQR (M x min(M,N))
 *   eps          PDLAMCH('Precision') = eps*base = 2^-52 = 2.22e-16 (DLAMCH('P'),
 *                the same as DBL_EPSILON; NOT DLAMCH('E') = 2^-53 = 1.11e-16).
 *   dgemm_gflops a local 1024^3 DGEMM (Fortran dgemm_ of the BLAS ScaLAPACK
 *                uses), run by every rank at the same time after the
 *                factorization and residuals: one warm-up call, then the best
 *                of 3 timed calls, as rank 0 sees it.
 *   blas_kernel  openblas_get_corename().
 *
 * Output: rank 0 prints ONE line to stdout,
 *   FTLA_BASELINE op=qr|lu|chol m=.. n=.. nb=.. p=.. q=.. seed=.. time_s=.. residual=..
 *       orthogonality=.. anorm=.. eps=.. dgemm_gflops=.. blas_kernel=.. nprocs=..
 * (space-separated key=value pairs, values without spaces; `orthogonality` is
 * only there for qr). On an error it prints
 *   FTLA_BASELINE_ERROR <message>
 * and the job aborts with a non-zero exit code.
 */
#include <float.h>
#include <math.h>
#include <mpi.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Hidden length of Fortran CHARACTER arguments (gfortran >= 8: size_t). */
typedef size_t flen_t;

/* BLACS (C interface, part of libscalapack-openmpi in Debian 12). */
extern void Cblacs_pinfo(int *mypnum, int *nprocs);
extern void Cblacs_get(int ictxt, int what, int *val);
extern void Cblacs_gridinit(int *ictxt, char *order, int nprow, int npcol);
extern void Cblacs_gridinfo(int ictxt, int *nprow, int *npcol, int *myrow, int *mycol);
extern void Cblacs_gridexit(int ictxt);
extern void Cblacs_exit(int notdone);

/* ScaLAPACK tools and LAPACK-level routines (Fortran). */
extern int numroc_(const int *n, const int *nb, const int *iproc, const int *isrcproc, const int *nprocs);
extern void descinit_(int *desc, const int *m, const int *n, const int *mb, const int *nb, const int *irsrc,
                      const int *icsrc, const int *ictxt, const int *lld, int *info);
extern void pdgeqrf_(const int *m, const int *n, double *a, const int *ia, const int *ja, const int *desca,
                     double *tau, double *work, const int *lwork, int *info);
extern void pdgetrf_(const int *m, const int *n, double *a, const int *ia, const int *ja, const int *desca,
                     int *ipiv, int *info);
extern void pdpotrf_(const char *uplo, const int *n, double *a, const int *ia, const int *ja, const int *desca,
                     int *info, flen_t);
extern void pdormqr_(const char *side, const char *trans, const int *m, const int *n, const int *k, double *a,
                     const int *ia, const int *ja, const int *desca, double *tau, double *c, const int *ic,
                     const int *jc, const int *descc, double *work, const int *lwork, int *info, flen_t,
                     flen_t);
extern void pdorgqr_(const int *m, const int *n, const int *k, double *a, const int *ia, const int *ja,
                     const int *desca, double *tau, double *work, const int *lwork, int *info);
extern double pdlange_(const char *norm, const int *m, const int *n, const double *a, const int *ia,
                       const int *ja, const int *desca, double *work, flen_t);
extern void pdlapiv_(const char *direc, const char *rowcol, const char *pivroc, const int *m, const int *n,
                     double *a, const int *ia, const int *ja, const int *desca, int *ipiv, const int *ip,
                     const int *jp, const int *descip, int *iwork, flen_t, flen_t, flen_t);
extern void pdlaset_(const char *uplo, const int *m, const int *n, const double *alpha, const double *beta,
                     double *a, const int *ia, const int *ja, const int *desca, flen_t);
extern void pdlacpy_(const char *uplo, const int *m, const int *n, const double *a, const int *ia,
                     const int *ja, const int *desca, double *b, const int *ib, const int *jb,
                     const int *descb, flen_t);
extern double pdlamch_(const int *ictxt, const char *cmach, flen_t);

/* PBLAS (written in C in ScaLAPACK: no hidden lengths). */
extern void pdgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
                    const double *alpha, const double *a, const int *ia, const int *ja, const int *desca,
                    const double *b, const int *ib, const int *jb, const int *descb, const double *beta,
                    double *c, const int *ic, const int *jc, const int *descc);
extern void pdgeadd_(const char *trans, const int *m, const int *n, const double *alpha, const double *a,
                     const int *ia, const int *ja, const int *desca, const double *beta, double *c,
                     const int *ic, const int *jc, const int *descc);

/* BLAS (OpenBLAS). */
extern void dgemm_(const char *transa, const char *transb, const int *m, const int *n, const int *k,
                   const double *alpha, const double *a, const int *lda, const double *b, const int *ldb,
                   const double *beta, double *c, const int *ldc, flen_t, flen_t);
extern char *openblas_get_corename(void);

static const int I0 = 0, I1 = 1;
static const double D0 = 0.0, D1 = 1.0, DM1 = -1.0;

static int me = 0; /* MPI rank in MPI_COMM_WORLD */

static void fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void fail(const char *fmt, ...) {
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    printf("FTLA_BASELINE_ERROR rank %d: %s\n", me, msg);
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
    exit(1);
}

/* The generator of scalapack-ft/src/generate.rs (MatrixKind::Uniform and MatrixKind::Spd). */
#define GOLDEN 0x9E3779B97F4A7C15ULL
#define STREAM_A 0x41ULL
static uint64_t mix(uint64_t z) {
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}
static double uniform(uint64_t seed, uint64_t i, uint64_t j) {
    uint64_t h = mix(seed + GOLDEN);
    h = mix(h ^ (STREAM_A * GOLDEN));
    h = mix(h + i + GOLDEN);
    h = mix(h + j + GOLDEN);
    return (double)(h >> 11) * (1.0 / 9007199254740992.0) - 0.5;
}
/* MatrixKind::Spd of an n x n matrix: uniform over (min(i,j), max(i,j)), plus n on the diagonal. */
static double spd(uint64_t seed, uint64_t n, uint64_t i, uint64_t j) {
    const double d = i == j ? (double)n : 0.0;
    return uniform(seed, i < j ? i : j, i < j ? j : i) + d;
}

/* A distributed matrix: descriptor and local storage (column-major). */
typedef struct {
    int desc[9];
    int m, n, mloc, nloc, lld;
    double *a;
} Mat;

static int ctxt, nprow, npcol, myrow, mycol;

static void *xmalloc(size_t bytes, const char *what) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) fail("out of memory allocating %zu bytes for %s", bytes, what);
    return p;
}

static Mat mat_new(int m, int n, int nb, const char *what) {
    Mat x;
    int info;
    x.m = m;
    x.n = n;
    x.mloc = numroc_(&m, &nb, &myrow, &I0, &nprow);
    x.nloc = numroc_(&n, &nb, &mycol, &I0, &npcol);
    x.lld = x.mloc > 1 ? x.mloc : 1;
    descinit_(x.desc, &m, &n, &nb, &nb, &I0, &I0, &ctxt, &x.lld, &info);
    if (info != 0) fail("DESCINIT(%s) info=%d", what, info);
    x.a = xmalloc((size_t)x.lld * (size_t)(x.nloc > 0 ? x.nloc : 1) * sizeof(double), what);
    memset(x.a, 0, (size_t)x.lld * (size_t)(x.nloc > 0 ? x.nloc : 1) * sizeof(double));
    return x;
}

/* Fills x with the Uniform kind, or the Spd kind (square x) when is_spd. */
static void mat_fill(Mat *x, int nb, uint64_t seed, int is_spd) {
    for (int lj = 0; lj < x->nloc; lj++) {
        int64_t gj = ((int64_t)(lj / nb) * npcol + mycol) * nb + lj % nb;
        for (int li = 0; li < x->mloc; li++) {
            int64_t gi = ((int64_t)(li / nb) * nprow + myrow) * nb + li % nb;
            x->a[(size_t)li + (size_t)lj * x->lld] = is_spd ? spd(seed, (uint64_t)x->n, (uint64_t)gi, (uint64_t)gj)
                                                            : uniform(seed, (uint64_t)gi, (uint64_t)gj);
        }
    }
}

static double norm1(const Mat *x, double *work) {
    return pdlange_("1", &x->m, &x->n, x->a, &I1, &I1, x->desc, work, 1);
}

/* Local DGEMM rate (Gflop/s): 1024^3, one warm-up, best of 3. */
static double dgemm_rate(void) {
    const int n = 1024;
    double *a = xmalloc((size_t)n * n * sizeof(double), "dgemm A");
    double *b = xmalloc((size_t)n * n * sizeof(double), "dgemm B");
    double *c = xmalloc((size_t)n * n * sizeof(double), "dgemm C");
    for (size_t k = 0; k < (size_t)n * n; k++) {
        a[k] = uniform(7, k, 1);
        b[k] = uniform(7, k, 2);
        c[k] = 0.0;
    }
    double best = 1e300;
    for (int rep = 0; rep < 4; rep++) {
        double t0 = MPI_Wtime();
        dgemm_("N", "N", &n, &n, &n, &D1, a, &n, b, &n, &D0, c, &n, 1, 1);
        double t = MPI_Wtime() - t0;
        if (rep > 0 && t < best) best = t;
    }
    free(a);
    free(b);
    free(c);
    return 2.0 * n * (double)n * n / best / 1e9;
}

int main(int argc, char **argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (argc < 7 || argc > 8 ||
        (strcmp(argv[1], "qr") != 0 && strcmp(argv[1], "lu") != 0 && strcmp(argv[1], "chol") != 0))
        fail("usage: %s qr|lu|chol M N NB P Q [seed]", argv[0]);
    const int is_qr = strcmp(argv[1], "qr") == 0;
    const int is_chol = strcmp(argv[1], "chol") == 0;
    const int m = atoi(argv[2]), n = atoi(argv[3]), nb = atoi(argv[4]);
    const int p = atoi(argv[5]), q = atoi(argv[6]);
    const uint64_t seed = argc > 7 ? strtoull(argv[7], NULL, 10) : 1;
    if (m < 1 || n < 1 || nb < 1 || p < 1 || q < 1) fail("M, N, NB, P, Q must be >= 1");
    if (!is_qr && m != n) fail("%s wants a square matrix (M = N), got M=%d N=%d", argv[1], m, n);

    int pnum, nprocs;
    Cblacs_pinfo(&pnum, &nprocs);
    if (nprocs < p * q) fail("%d processes for a %dx%d grid", nprocs, p, q);
    Cblacs_get(-1, 0, &ctxt);
    Cblacs_gridinit(&ctxt, "Row", p, q);
    Cblacs_gridinfo(ctxt, &nprow, &npcol, &myrow, &mycol);
    const int in_grid = myrow >= 0 && myrow < nprow && mycol >= 0 && mycol < npcol;

    double time_s = 0, resid = 0, orth = -1, anorm = 0, eps = DBL_EPSILON;
    if (in_grid) {
        const int k = m < n ? m : n;
        const int mx = m > n ? m : n;
        eps = pdlamch_(&ctxt, "P", 1);
        Mat a0 = mat_new(m, n, nb, "A copy");
        Mat af = mat_new(m, n, nb, "A");
        mat_fill(&a0, nb, seed, is_chol);
        memcpy(af.a, a0.a, (size_t)af.lld * (size_t)(af.nloc > 0 ? af.nloc : 1) * sizeof(double));
        /* pdlange('1') needs LOCc(N) doubles; be generous. */
        double *nwork = xmalloc((size_t)(mx + 2 * nb) * sizeof(double), "norm work");
        anorm = norm1(&a0, nwork);
        int info = 0;
        double t0, t1;
        if (is_qr) {
            const int ltau = numroc_(&n, &nb, &mycol, &I0, &npcol) + nb;
            double *tau = xmalloc((size_t)ltau * sizeof(double), "TAU");
            double wq;
            int lwork = -1;
            pdgeqrf_(&m, &n, af.a, &I1, &I1, af.desc, tau, &wq, &lwork, &info);
            if (info != 0) fail("PDGEQRF workspace query info=%d", info);
            lwork = (int)wq + 1;
            double *work = xmalloc((size_t)lwork * sizeof(double), "PDGEQRF work");
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            pdgeqrf_(&m, &n, af.a, &I1, &I1, af.desc, tau, work, &lwork, &info);
            t1 = MPI_Wtime();
            if (info != 0) fail("PDGEQRF info=%d", info);
            free(work);

            /* Q R: R = upper trapezoid of the factors, zero below; R := Q R. */
            Mat r = mat_new(m, n, nb, "R");
            pdlacpy_("U", &m, &n, af.a, &I1, &I1, af.desc, r.a, &I1, &I1, r.desc, 1);
            lwork = -1;
            pdormqr_("L", "N", &m, &n, &k, af.a, &I1, &I1, af.desc, tau, r.a, &I1, &I1, r.desc, &wq, &lwork,
                     &info, 1, 1);
            if (info != 0) fail("PDORMQR workspace query info=%d", info);
            lwork = (int)wq + 1;
            work = xmalloc((size_t)lwork * sizeof(double), "PDORMQR work");
            pdormqr_("L", "N", &m, &n, &k, af.a, &I1, &I1, af.desc, tau, r.a, &I1, &I1, r.desc, work, &lwork,
                     &info, 1, 1);
            if (info != 0) fail("PDORMQR info=%d", info);
            free(work);
            pdgeadd_("N", &m, &n, &DM1, a0.a, &I1, &I1, a0.desc, &D1, r.a, &I1, &I1, r.desc);
            resid = norm1(&r, nwork) / (anorm * mx * eps);
            free(r.a);

            /* Orthogonality: Q = PDORGQR (M x K) in place of the factors, W = I - Q^T Q (K x K). */
            lwork = -1;
            pdorgqr_(&m, &k, &k, af.a, &I1, &I1, af.desc, tau, &wq, &lwork, &info);
            if (info != 0) fail("PDORGQR workspace query info=%d", info);
            lwork = (int)wq + 1;
            work = xmalloc((size_t)lwork * sizeof(double), "PDORGQR work");
            pdorgqr_(&m, &k, &k, af.a, &I1, &I1, af.desc, tau, work, &lwork, &info);
            if (info != 0) fail("PDORGQR info=%d", info);
            free(work);
            Mat w = mat_new(k, k, nb, "I - Q^T Q");
            pdlaset_("A", &k, &k, &D0, &D1, w.a, &I1, &I1, w.desc, 1);
            pdgemm_("T", "N", &k, &k, &m, &DM1, af.a, &I1, &I1, af.desc, af.a, &I1, &I1, af.desc, &D1, w.a, &I1,
                    &I1, w.desc);
            orth = norm1(&w, nwork) / ((double)m * eps);
            free(w.a);
            free(tau);
        } else if (is_chol) {
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            pdpotrf_("L", &n, af.a, &I1, &I1, af.desc, &info, 1);
            t1 = MPI_Wtime();
            if (info < 0) fail("PDPOTRF info=%d", info);
            if (info > 0) fail("PDPOTRF: the leading minor of order %d is not positive definite", info);

            /* L: the lower triangle of the factors, strictly upper part zero; C = L L^T - A. */
            Mat l = mat_new(n, n, nb, "L"); /* zeroed by mat_new */
            pdlacpy_("L", &n, &n, af.a, &I1, &I1, af.desc, l.a, &I1, &I1, l.desc, 1);
            Mat c = af; /* the factors are no longer needed: reuse their storage */
            memcpy(c.a, a0.a, (size_t)c.lld * (size_t)(c.nloc > 0 ? c.nloc : 1) * sizeof(double));
            pdgemm_("N", "T", &n, &n, &n, &D1, l.a, &I1, &I1, l.desc, l.a, &I1, &I1, l.desc, &DM1, c.a, &I1, &I1,
                    c.desc);
            free(l.a);
            resid = norm1(&c, nwork) / (anorm * n * eps);
        } else {
            const int lpiv = numroc_(&m, &nb, &myrow, &I0, &nprow) + nb;
            int *ipiv = xmalloc((size_t)lpiv * sizeof(int), "IPIV");
            MPI_Barrier(MPI_COMM_WORLD);
            t0 = MPI_Wtime();
            pdgetrf_(&m, &n, af.a, &I1, &I1, af.desc, ipiv, &info);
            t1 = MPI_Wtime();
            if (info < 0) fail("PDGETRF info=%d", info);
            if (info > 0) fail("PDGETRF: U(%d,%d) is exactly zero (singular matrix)", info, info);

            /* L (unit lower) and U from the factors; C = L U. */
            Mat l = mat_new(n, n, nb, "L");
            pdlacpy_("L", &n, &n, af.a, &I1, &I1, af.desc, l.a, &I1, &I1, l.desc, 1);
            pdlaset_("U", &n, &n, &D0, &D1, l.a, &I1, &I1, l.desc, 1);
            Mat u = mat_new(n, n, nb, "U"); /* zeroed by mat_new */
            pdlacpy_("U", &n, &n, af.a, &I1, &I1, af.desc, u.a, &I1, &I1, u.desc, 1);
            Mat c = af; /* the factors are no longer needed: reuse their storage */
            pdgemm_("N", "N", &n, &n, &n, &D1, l.a, &I1, &I1, l.desc, u.a, &I1, &I1, u.desc, &D0, c.a, &I1, &I1,
                    c.desc);
            free(l.a);
            free(u.a);
            /* P A: the row interchanges of PDGETRF applied to the copy, exactly as PDGETRS applies them
             * to its right-hand sides (PDLAPIV with the pivot vector described as one column of A;
             * PDLASWP only works for pivots within one process row). */
            int descip[9] = {1, ctxt, m + nb * nprow, 1, nb, 1, 0, mycol, nb + numroc_(&m, &nb, &myrow, &I0, &nprow)};
            int *iwork = xmalloc((size_t)(m + 4 * nb * (nprow + npcol)) * sizeof(int), "PDLAPIV work");
            pdlapiv_("F", "R", "C", &n, &n, a0.a, &I1, &I1, a0.desc, ipiv, &I1, &I1, descip, iwork, 1, 1, 1);
            free(iwork);
            pdgeadd_("N", &m, &n, &DM1, a0.a, &I1, &I1, a0.desc, &D1, c.a, &I1, &I1, c.desc);
            resid = norm1(&c, nwork) / (anorm * n * eps);
            free(ipiv);
        }
        time_s = t1 - t0;
        free(nwork);
        free(a0.a);
        free(af.a);
    }
    double tmax;
    MPI_Allreduce(&time_s, &tmax, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);

    MPI_Barrier(MPI_COMM_WORLD);
    double gemm = dgemm_rate();

    if (me == 0) {
        char kernel[64];
        const char *cn = openblas_get_corename();
        snprintf(kernel, sizeof kernel, "%s", cn ? cn : "unknown");
        for (char *s = kernel; *s; s++)
            if (*s == ' ' || *s == '=' || *s == '\t') *s = '_';
        if (!kernel[0]) snprintf(kernel, sizeof kernel, "unknown");
        printf("FTLA_BASELINE op=%s m=%d n=%d nb=%d p=%d q=%d seed=%llu time_s=%.9e residual=%.6e", argv[1], m,
               n, nb, p, q, (unsigned long long)seed, tmax, resid);
        if (is_qr) printf(" orthogonality=%.6e", orth);
        printf(" anorm=%.9e eps=%.6e dgemm_gflops=%.4f blas_kernel=%s nprocs=%d\n", anorm, eps, gemm, kernel,
               nprocs);
        fflush(stdout);
    }
    if (in_grid) Cblacs_gridexit(ctxt);
    Cblacs_exit(1); /* 1: MPI stays up, finalized below */
    MPI_Finalize();
    return 0;
}
