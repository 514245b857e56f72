/*
 * The C ABI's contract, checked from C on a 2x2 grid (tests/capi.rs runs it
 * under `ftla launch --np 4`): ScaLAPACK's INFO codes for bad arguments,
 * the workspace query, a singular matrix, the tools, the grid functions,
 * the communicator getter, the plain routines (Cholesky's too) and the CG. Prints
 * "ok NAME" or "FAIL NAME ..." per check; exit status 0 when all passed.
 */
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftla.h"

static int failures = 0, iam = -1;

static void expect(const char *name, int got, int want) {
    if (got == want) {
        if (iam == 0) printf("ok %s\n", name);
    } else {
        printf("FAIL %s: got %d, want %d (process %d)\n", name, got, want, iam);
        failures++;
    }
}

static int l2g(int l, int nb, int p, int np) { return (l / nb) * np * nb + p * nb + l % nb; }

/* This process's part of a well-conditioned N x N matrix (blocks of nb). */
static void fill(double *a, int lld, int mloc, int nloc, int nb, int myrow, int mycol, int nprow, int npcol) {
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++) {
            int i = l2g(li, nb, myrow, nprow), j = l2g(lj, nb, mycol, npcol);
            a[li + lj * lld] = (i == j ? 2.0 : 0.0) + 1.0 / (1.0 + i + 3 * j);
        }
}

/* Largest difference between the upper triangles (R) of two local arrays. */
static double r_diff(const double *a, const double *b, int lld, int mloc, int nloc, int nb, int myrow, int mycol,
                     int nprow, int npcol) {
    double d = 0;
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++)
            if (l2g(li, nb, myrow, nprow) <= l2g(lj, nb, mycol, npcol))
                d = fmax(d, fabs(a[li + lj * lld] - b[li + lj * lld]));
    return d;
}

/* A 4x1 grid: the fault-tolerant routines need two process columns, the
   plain ones do not. */
static int one_column(void) {
    int ictxt, nprow, npcol, myrow, mycol, info, lwork;
    const int zero = 0, one = 1, n = 64, nb = 8;
    Cftla_gridinit(&ictxt, "Row", 4, 1);
    expect("gridinit 4x1", ictxt >= 0, 1);
    Cftla_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);
    int mloc = ftla_numroc_(&n, &nb, &myrow, &zero, &nprow), lld = mloc;
    int desca[9];
    ftla_descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
    double *a = malloc(sizeof(double) * lld * n), *tau = malloc(sizeof(double) * n), w;
    for (int k = 0; k < lld * n; k++) a[k] = 0.5 - (double)((k * 7919 + iam * 104729) % 1000) / 1000.0;
    lwork = -1;
    ftla_pdgeqrf_(&n, &n, a, &one, &one, desca, tau, &w, &lwork, &info);
    lwork = (int)w;
    double *work = malloc(sizeof(double) * lwork);
    pdgeqrf_ft_(&n, &n, a, &one, &one, desca, tau, work, &lwork, &info);
    expect("pdgeqrf_ft_ on one process column is INFO -602", info, -602);
    ftla_pdgeqrf_(&n, &n, a, &one, &one, desca, tau, work, &lwork, &info);
    expect("ftla_pdgeqrf_ on one process column", info, 0);
    free(a), free(tau), free(work);
    Cftla_gridexit(ictxt);
    Cftla_exit(0);
    return failures == 0 ? 0 : 1;
}

/* A 64 x 64 QR in 8-blocks on a 2x2 grid with its workspace (a, and r
   for a copy of a result), for the scenarios with kills below. */
struct qr64 {
    int ictxt, nprow, npcol, myrow, mycol, mloc, nloc, lld, lwork, desca[9];
    double *a, *r, *tau, *work;
};

static const int n64 = 64, nb8 = 8, one = 1;

static struct qr64 qr64_new(void) {
    struct qr64 p;
    int zero = 0, info, query = -1;
    double w;
    Cftla_gridinit(&p.ictxt, "Row", 2, 2);
    Cftla_gridinfo(p.ictxt, &p.nprow, &p.npcol, &p.myrow, &p.mycol);
    p.mloc = ftla_numroc_(&n64, &nb8, &p.myrow, &zero, &p.nprow);
    p.nloc = ftla_numroc_(&n64, &nb8, &p.mycol, &zero, &p.npcol);
    p.lld = p.mloc;
    ftla_descinit_(p.desca, &n64, &n64, &nb8, &nb8, &zero, &zero, &p.ictxt, &p.lld, &info);
    p.a = malloc(sizeof(double) * p.lld * p.nloc), p.r = malloc(sizeof(double) * p.lld * p.nloc);
    p.tau = malloc(sizeof(double) * p.nloc);
    pdgeqrf_ft_(&n64, &n64, p.a, &one, &one, p.desca, p.tau, &w, &query, &info);
    p.lwork = (int)w;
    p.work = malloc(sizeof(double) * p.lwork);
    return p;
}

/* A refilled with the matrix, then pdgeqrf_ft_ (or the plain routine). */
static int qr64_factor(struct qr64 *p, int plain) {
    int info;
    fill(p->a, p->lld, p->mloc, p->nloc, nb8, p->myrow, p->mycol, p->nprow, p->npcol);
    if (plain)
        ftla_pdgeqrf_(&n64, &n64, p->a, &one, &one, p->desca, p->tau, p->work, &p->lwork, &info);
    else
        pdgeqrf_ft_(&n64, &n64, p->a, &one, &one, p->desca, p->tau, p->work, &p->lwork, &info);
    return info;
}

/* R in p->r (kept) against a failure-free pdgeqrf_ft_'s; then the end. */
static int qr64_finish(struct qr64 *p, const char *what, const char *line, int count) {
    memcpy(p->r, p->a, sizeof(double) * p->lld * p->nloc);
    int info = qr64_factor(p, 0);
    double diff = r_diff(p->a, p->r, p->lld, p->mloc, p->nloc, nb8, p->myrow, p->mycol, p->nprow, p->npcol);
    expect(what, info == 0 && diff < 1e-12, 1);
    printf("%s: grid rank %d%s", line, p->myrow * p->npcol + p->mycol, Cftla_is_replacement(p->ictxt) ? " [replacement]" : "");
    if (count >= 0) printf(", %d call(s) lost a process", count);
    printf("\n");
    free(p->a), free(p->r), free(p->tau), free(p->work);
    Cftla_gridexit(p->ictxt);
    Cftla_exit(0);
    return failures == 0 ? 0 : 1;
}

/* A plain routine that loses a process (FTLA_KILL=...@ftla_pdgeqrf:0:call):
   INFO = FTLA_INFO_PROCESS_LOST on the survivors, who call it again with
   its input; the replacement, from the top, meets them in that call. R then
   equals pdgeqrf_ft_'s on the same matrix, on every process. */
static int plain_retry(void) {
    struct qr64 p = qr64_new();
    int info, lost = 0;
    while ((info = qr64_factor(&p, 1)) == FTLA_INFO_PROCESS_LOST) lost++;
    expect("plain pdgeqrf after a retry", info, 0);
    return qr64_finish(&p, "R of the retried plain QR equals pdgeqrf_ft_'s", "plain retry", lost);
}

/* Calls every process refused, then one that loses a process
   (FTLA_KILL=1@qr:3:update): the replacement, running main from the top,
   gets the refused calls' INFO again from ftla's log without meeting
   anybody (the survivors are inside the third call by then), and joins
   their recovery of that call. Its R then equals a failure-free
   pdgeqrf_ft_'s, on every process. */
static int refused_then_kill(void) {
    struct qr64 p = qr64_new();
    int info, small = 1;
    /* Refused by the C ABI's checks. */
    pdgeqrf_ft_(&n64, &n64, p.a, &one, &one, p.desca, p.tau, p.work, &small, &info);
    expect("a refused LWORK, again on a replacement", info, -9);
    /* Refused by pdgeqrf_ft's own checks (A(1,1), on process (0,0)). */
    fill(p.a, p.lld, p.mloc, p.nloc, nb8, p.myrow, p.mycol, p.nprow, p.npcol);
    if (p.myrow == 0 && p.mycol == 0) p.a[0] = NAN;
    pdgeqrf_ft_(&n64, &n64, p.a, &one, &one, p.desca, p.tau, p.work, &p.lwork, &info);
    expect("a refused NaN, again on a replacement", info, -3);
    expect("the QR that lost a process", qr64_factor(&p, 0), 0);
    return qr64_finish(&p, "its R equals a failure-free pdgeqrf_ft_'s", "refused then kill", -1);
}

int main(int argc, char **argv) {
    int nprocs, ictxt, nprow, npcol, myrow, mycol, info;
    const int zero = 0, one = 1, n = 64, nb = 8;
    Cftla_pinfo(&iam, &nprocs);
    if (argc > 1 && strcmp(argv[1], "column") == 0) return one_column();
    if (argc > 1 && strcmp(argv[1], "plain-retry") == 0) return plain_retry();
    if (argc > 1 && strcmp(argv[1], "refused") == 0) return refused_then_kill();
    expect("pinfo nprocs", nprocs, 4);
    Cftla_gridinit(&ictxt, "Row", 2, 2);
    expect("gridinit ictxt valid", ictxt >= 0, 1);
    int again;
    Cftla_gridinit(&again, "Row", 2, 2);
    expect("a second grid is refused", again, -1);
    Cftla_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);
    expect("gridinfo row-major", myrow * npcol + mycol, iam);
    int bad[4];
    Cftla_gridinfo(ictxt + 7, &bad[0], &bad[1], &bad[2], &bad[3]);
    expect("gridinfo of no grid", bad[0] + bad[1] + bad[2] + bad[3], -4);
    expect("not a replacement", Cftla_is_replacement(ictxt), 0);

    MPI_Comm comm = MPI_Comm_f2c(Cftla_comm_f(ictxt));
    int size = 0, rank = -1, sum = 0;
    MPI_Comm_size(comm, &size);
    MPI_Comm_rank(comm, &rank);
    MPI_Allreduce(&rank, &sum, 1, MPI_INT, MPI_SUM, comm);
    expect("grid communicator size", size, 4);
    expect("grid communicator ranks", sum, 0 + 1 + 2 + 3);

    int nn = 10, nb3 = 3, p0 = 0, p1 = 1, np2 = 2;
    expect("numroc p0", ftla_numroc_(&nn, &nb3, &p0, &zero, &np2), 6);
    expect("numroc p1", ftla_numroc_(&nn, &nb3, &p1, &zero, &np2), 4);

    int mloc = ftla_numroc_(&n, &nb, &myrow, &zero, &nprow);
    int nloc = ftla_numroc_(&n, &nb, &mycol, &zero, &npcol);
    int lld = mloc, desca[9], descb[9], desc_bad[9];
    ftla_descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
    expect("descinit", info, 0);
    int neg = -1;
    ftla_descinit_(desc_bad, &neg, &n, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
    expect("descinit M < 0 is INFO -2", info, -2);
    int small = 0;
    ftla_descinit_(desc_bad, &n, &n, &nb, &nb, &zero, &zero, &ictxt, &small, &info);
    expect("descinit LLD too small is INFO -9", info, -9);
    expect("descinit raises LLD", desc_bad[8], mloc);
    int nogrid = ictxt + 7;
    ftla_descinit_(desc_bad, &n, &n, &nb, &nb, &zero, &zero, &nogrid, &lld, &info);
    expect("descinit of no grid is INFO -8", info, -8);

    double *a = malloc(sizeof(double) * lld * nloc), *tau = malloc(sizeof(double) * nloc);
    int *ipiv = malloc(sizeof(int) * (mloc + nb));
    double w;
    int lwork = -1;
    for (int k = 0; k < lld * nloc; k++) a[k] = 0.5 - (double)((k * 7919 + iam * 104729) % 1000) / 1000.0;

    /* Workspace query: ScaLAPACK's NB*(Mp0 + Nq0 + NB). */
    pdgeqrf_ft_(&n, &n, a, &one, &one, desca, tau, &w, &lwork, &info);
    expect("workspace query", info == 0 && (int)w == nb * (mloc + nloc + nb), 1);
    lwork = (int)w;
    double *work = malloc(sizeof(double) * lwork);

    /* Bad arguments: the same INFO on every process. */
    int m_neg = -1, ia2 = 2, lw_small = 1;
    pdgeqrf_ft_(&m_neg, &n, a, &one, &one, desca, tau, work, &lwork, &info);
    expect("M < 0 is INFO -1", info, -1);
    pdgeqrf_ft_(&n, &n, a, &ia2, &one, desca, tau, work, &lwork, &info);
    expect("IA = 2 is INFO -4", info, -4);
    pdgeqrf_ft_(&n, &n, a, &one, &one, desca, tau, work, &lw_small, &info);
    expect("LWORK too small is INFO -9", info, -9);
    memcpy(desc_bad, desca, sizeof desca);
    desc_bad[4] = nb / 2;
    pdgeqrf_ft_(&n, &n, a, &one, &one, desc_bad, tau, work, &lwork, &info);
    expect("MB != NB is INFO -606", info, -606);
    memcpy(desc_bad, desca, sizeof desca);
    desc_bad[1] = ictxt + 7;
    pdgetrf_ft_(&n, &n, a, &one, &one, desc_bad, ipiv, &info);
    expect("no such grid is INFO -602", info, -602);
    memcpy(desc_bad, desca, sizeof desca);
    desc_bad[6] = 1;
    pdgetrf_ft_(&n, &n, a, &one, &one, desc_bad, ipiv, &info);
    expect("RSRC != 0 is INFO -607", info, -607);
    memcpy(desc_bad, desca, sizeof desca);
    desc_bad[8] = 1; /* too small on every process row: local checks, agreed */
    pdgetrf_ft_(&n, &n, a, &one, &one, desc_bad, ipiv, &info);
    expect("LLD too small is INFO -609", info, -609);
    int mbig = n + 1;
    pdgetrf_ft_(&mbig, &n, a, &one, &one, desca, ipiv, &info);
    expect("M > M_A is INFO -603", info, -603);

    /* A singular matrix: column 5 zero; the factorization completes, and
       INFO = the first zero pivot (1-based), the same everywhere. */
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++) {
            int i = l2g(li, nb, myrow, nprow), j = l2g(lj, nb, mycol, npcol);
            a[li + lj * lld] = j == 4 ? 0.0 : (i == j ? 4.0 : 0.0) + 1.0 / (1.0 + i + 2 * j);
        }
    ipiv[0] = 0;
    pdgetrf_ft_(&n, &n, a, &one, &one, desca, ipiv, &info);
    /* As PDGETRF: the factors and pivots are written all the same. */
    expect("singular: IPIV written", myrow != 0 || ipiv[0] >= 1, 1);
    int infos[4], all_same = 1;
    MPI_Allgather(&info, 1, MPI_INT, infos, 1, MPI_INT, comm);
    for (int k = 1; k < 4; k++) all_same &= infos[k] == infos[0];
    expect("singular: INFO > 0, the same everywhere", info > 0 && all_same, 1);

    /* The plain routines, and the solve: A = diag(4) + Hilbert-like, b = A*1. */
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++) {
            int i = l2g(li, nb, myrow, nprow), j = l2g(lj, nb, mycol, npcol);
            a[li + lj * lld] = (i == j ? 4.0 : 0.0) + 1.0 / (1.0 + i + j);
        }
    double *a0 = malloc(sizeof(double) * lld * nloc);
    memcpy(a0, a, sizeof(double) * lld * nloc);
    ftla_pdgeqrf_(&n, &n, a, &one, &one, desca, tau, work, &lwork, &info);
    expect("plain pdgeqrf", info, 0);
    memcpy(a, a0, sizeof(double) * lld * nloc);
    ftla_pdgetrf_(&n, &n, a, &one, &one, desca, ipiv, &info);
    expect("plain pdgetrf", info, 0);
    ftla_descinit_(descb, &n, &one, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
    double *b = malloc(sizeof(double) * lld), *x = malloc(sizeof(double) * lld);
    for (int li = 0; li < mloc; li++) {
        int i = l2g(li, nb, myrow, nprow);
        double s = 0;
        for (int j = 0; j < n; j++) s += (i == j ? 4.0 : 0.0) + 1.0 / (1.0 + i + j);
        b[li] = s;
        x[li] = 0.0;
    }
    double *b0 = malloc(sizeof(double) * lld);
    memcpy(b0, b, sizeof(double) * lld);
    ftla_pdgetrs_("N", &n, &one, a, &one, &one, desca, ipiv, b, &one, &one, descb, &info);
    double err = 0;
    for (int li = 0; li < (mycol == 0 ? mloc : 0); li++) err = fmax(err, fabs(b[li] - 1.0));
    expect("pdgetrs solves A x = A 1", info == 0 && err < 1e-10, 1);
    ftla_pdgetrs_("Q", &n, &one, a, &one, &one, desca, ipiv, b, &one, &one, descb, &info);
    expect("TRANS = Q is INFO -1", info, -1);

    /* CG on the same symmetric positive definite matrix. */
    double tol = 1e-10, resid = -1;
    int maxit = 200, iter = -1;
    pdcg_ft_(&n, a0, &one, &one, desca, b0, &one, &one, descb, x, &one, &one, descb, &tol, &maxit, &iter, &resid,
             &info);
    err = 0;
    for (int li = 0; li < (mycol == 0 ? mloc : 0); li++) err = fmax(err, fabs(x[li] - 1.0));
    expect("pdcg_ft converges to 1", info == 0 && iter > 0 && resid < 1e-9 && err < 1e-8, 1);
    int maxit2 = 2;
    memset(x, 0, sizeof(double) * lld);
    pdcg_ft_(&n, a0, &one, &one, desca, b0, &one, &one, descb, x, &one, &one, descb, &tol, &maxit2, &iter, &resid,
             &info);
    expect("pdcg_ft not converged is INFO MAXIT+1", info, maxit2 + 1);

    /* Cholesky on the same symmetric positive definite matrix: L, then U
       through PDPOSV, a bad UPLO, and a minor that is not positive definite. */
    double *c = malloc(sizeof(double) * lld * nloc);
    memcpy(c, a0, sizeof(double) * lld * nloc);
    ftla_pdpotrf_("L", &n, c, &one, &one, desca, &info);
    expect("plain pdpotrf", info, 0);
    memcpy(x, b0, sizeof(double) * lld);
    ftla_pdpotrs_("L", &n, &one, c, &one, &one, desca, x, &one, &one, descb, &info);
    err = 0;
    for (int li = 0; li < (mycol == 0 ? mloc : 0); li++) err = fmax(err, fabs(x[li] - 1.0));
    expect("pdpotrs solves A x = A 1", info == 0 && err < 1e-10, 1);
    memcpy(c, a0, sizeof(double) * lld * nloc);
    memcpy(x, b0, sizeof(double) * lld);
    ftla_pdposv_("U", &n, &one, c, &one, &one, desca, x, &one, &one, descb, &info);
    err = 0;
    for (int li = 0; li < (mycol == 0 ? mloc : 0); li++) err = fmax(err, fabs(x[li] - 1.0));
    expect("pdposv (UPLO = U) solves A x = A 1", info == 0 && err < 1e-10, 1);
    ftla_pdpotrf_("X", &n, c, &one, &one, desca, &info);
    expect("UPLO = X is INFO -1", info, -1);
    /* A(10,10) (1-based) made negative: the minor of order 10 is not
       positive definite. */
    memcpy(c, a0, sizeof(double) * lld * nloc);
    for (int lj = 0; lj < nloc; lj++)
        for (int li = 0; li < mloc; li++)
            if (l2g(li, nb, myrow, nprow) == 9 && l2g(lj, nb, mycol, npcol) == 9) c[li + lj * lld] = -1.0;
    ftla_pdpotrf_("L", &n, c, &one, &one, desca, &info);
    expect("a minor that is not positive definite is its order", info, 10);
    free(c);

    /* One grid per run. */
    Cftla_gridexit(ictxt);
    int ictxt1;
    Cftla_gridinit(&ictxt1, "Row", 4, 1);
    expect("a grid after Cftla_gridexit is refused", ictxt1, -1);
    Cftla_exit(0);
    return failures == 0 ? 0 : 1;
}
