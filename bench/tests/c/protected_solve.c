/*
 * Protected factors across C calls (tests/capi.rs runs it under `ftla
 * launch --np 4` on a 2x2 grid). Grid rank KILL dies by its own SIGKILL
 * between two calls, during the program's own work (-1: nobody; "0,1":
 * both, at the same time), and the
 * survivors call the next routine again once on FTLA_INFO_PROCESS_LOST,
 * as ftla.h says; every process, the replacement included, checks its part
 * of the result against LAPACK on the whole matrix.
 *
 *   protected_solve lu N NB KILL NRHS [PxQ]  (on a PxQ grid, default 2x2)
 *                                        pdgetrf_ft_, kill, pdgetrs_ft_ (N, then T);
 *                                        x against the known solution, and
 *                                        A against dgetrf's L and U
 *   protected_solve chol N NB KILL NRHS  pdpotrf_ft_ ('U' refused first),
 *                                        kill, pdpotrs_ft_: x against the
 *                                        known solution, A's lower triangle
 *                                        against dpotrf's L, the upper one
 *                                        as given
 *   protected_solve posv N NB KILL NRHS  a B refused by pdposv_ft_ (grid
 *                                        rank 1's RSRC_B is 1: INFO -1107
 *                                        everywhere, A untouched),
 *                                        pdposv_ft_, kill, pdpotrs_ft_ with
 *                                        the factor it kept: x, L and the
 *                                        upper triangle as for chol (a
 *                                        replacement's pdposv_ft_ that
 *                                        completed before it joined gives
 *                                        FTLA_INFO_RESULT_LOST, counted as
 *                                        0: its X is lost, the factor not)
 *   protected_solve qr N NB KILL NRHS    pdgeqrf_ft_, kill, pdormqr_ft_
 *                                        ('T'): Q^T B against dormqr's
 *   protected_solve gels M N NB KILL NRHS [SHORT]  kill, pdgels_ft_ (with
 *                                        its workspace query): X against
 *                                        dgels; with SHORT, grid rank SHORT
 *                                        first passes an LWORK one short
 *                                        (refused everywhere: INFO -14)
 *   protected_solve refusals N NB        A or IPIV changed after
 *                                        pdgetrf_ft_, A released, A never
 *                                        factored, SIDE = 'R': refused
 *
 * Prints one line per process; exit status 0 when every check passed here.
 */
#define PROGRAM "protected_solve"
#include "grid_matrix.h"

void dpotrf_(const char *uplo, const int *n, double *a, const int *lda, int *info);
void dgels_(const char *trans, const int *m, const int *n, const int *nrhs, double *a, const int *lda, double *b,
            const int *ldb, double *work, const int *lwork, int *info);

static int lu(int n, int nb, int nrhs) {
    Mat a = mat(n, n, nb), b = mat(n, nrhs, nb);
    int *ipiv = malloc(sizeof(int) * (a.mloc + nb));
    int finfo, info, first;
    fill_a(&a);
    pdgetrf_ft_(&n, &n, a.a, &one, &one, a.desc, ipiv, &finfo);
    own_work();
    /* B = A X for the known X. */
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += element(gi(&b, li), j) * xknown(j, gj(&b, lj));
            *at(&b, li, lj) = s;
        }
    pdgetrs_ft_("N", &n, &nrhs, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    first = info;
    if (info == FTLA_INFO_PROCESS_LOST)
        pdgetrs_ft_("N", &n, &nrhs, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    double x_err = 0;
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) x_err = fmax(x_err, fabs(*at(&b, li, lj) - xknown(gi(&b, li), gj(&b, lj))));
    /* The transposed system with the same kept factors: B = A^T X. */
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += element(j, gi(&b, li)) * xknown(j, gj(&b, lj));
            *at(&b, li, lj) = s;
        }
    int tinfo;
    pdgetrs_ft_("T", &n, &nrhs, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &tinfo);
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) x_err = fmax(x_err, fabs(*at(&b, li, lj) - xknown(gi(&b, li), gj(&b, lj))));
    if (info == 0) info = tinfo;
    /* A holds L and U again, the replacement's too. */
    double *g = whole_a(n, n);
    int *gpiv = malloc(sizeof(int) * n), ginfo;
    dgetrf_(&n, &n, g, &n, gpiv, &ginfo);
    double a_err = diff(&a, g, n, n);
    int piv_same = 1;
    for (int li = 0; li < a.mloc; li++) piv_same &= ipiv[li] == gpiv[gi(&a, li)];
    int ok = finfo == 0 && info == 0 && x_err <= 1e-9 && a_err <= 1e-10 * n && piv_same;
    printf("protected_solve: grid rank %d%s: factor INFO %d, solve INFO %d (first %d), x %s (err %.1e), "
           "A %s (max diff %.1e), pivots %s\n",
           rank, who(), finfo, info, first, x_err <= 1e-9 ? "correct" : "WRONG", x_err,
           a_err <= 1e-10 * n ? "equal to LAPACK's L and U" : "DIFFERS", a_err, piv_same ? "identical" : "DIFFER");
    free(a.a), free(b.a), free(ipiv), free(g), free(gpiv);
    return ok;
}

/* A symmetric positive definite A(i, j), 0-based. */
static inline double spd(int i, int j) { return (i == j ? 2.0 : 0.0) + 1.0 / (1.0 + i + j); }

/* B = A X for the known X (A = spd). */
static void spd_rhs(Mat *b, int n) {
    for (int lj = 0; lj < b->nloc; lj++)
        for (int li = 0; li < b->mloc; li++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += spd(gi(b, li), j) * xknown(j, gj(b, lj));
            *at(b, li, lj) = s;
        }
}

/* The largest error of B against the known X. */
static double x_error(Mat *b) {
    double e = 0;
    for (int lj = 0; lj < b->nloc; lj++)
        for (int li = 0; li < b->mloc; li++) e = fmax(e, fabs(*at(b, li, lj) - xknown(gi(b, li), gj(b, lj))));
    return e;
}

/* chol: pdpotrf_ft_ then pdpotrs_ft_; posv: pdposv_ft_, then pdpotrs_ft_
 * with the factor it kept. */
static int chol(int n, int nb, int nrhs, int posv) {
    Mat a = mat(n, n, nb), b = mat(n, nrhs, nb);
    int uinfo, finfo, info, first;
    for (int lj = 0; lj < a.nloc; lj++)
        for (int li = 0; li < a.mloc; li++) *at(&a, li, lj) = spd(gi(&a, li), gj(&a, lj));
    double x_err = 0;
    if (posv) {
        /* Grid rank 1's B starts on process row 1: refused everywhere in
         * the factorization's verdict, before A is touched. */
        int bad[9];
        memcpy(bad, b.desc, sizeof bad);
        if (rank == 1) bad[6] = 1;
        spd_rhs(&b, n);
        pdposv_ft_("L", &n, &nrhs, a.a, &one, &one, a.desc, b.a, &one, &one, bad, &uinfo);
        double touched = 0;
        for (int lj = 0; lj < a.nloc; lj++)
            for (int li = 0; li < a.mloc; li++) touched = fmax(touched, fabs(*at(&a, li, lj) - spd(gi(&a, li), gj(&a, lj))));
        if (touched != 0) uinfo = 1;
        pdposv_ft_("L", &n, &nrhs, a.a, &one, &one, a.desc, b.a, &one, &one, b.desc, &finfo);
        /* (On a replacement that joined after it, X is lost and the kept
         * factor comes back in the next call.) */
        if (finfo == 0) x_err = x_error(&b);
        else if (finfo == FTLA_INFO_RESULT_LOST && Cftla_is_replacement(ictxt)) finfo = 0;
        own_work();
    } else {
        /* The upper triangle is refused (argument 1), A untouched. */
        pdpotrf_ft_("U", &n, a.a, &one, &one, a.desc, &uinfo);
        pdpotrf_ft_("L", &n, a.a, &one, &one, a.desc, &finfo);
        own_work();
    }
    spd_rhs(&b, n);
    pdpotrs_ft_("L", &n, &nrhs, a.a, &one, &one, a.desc, b.a, &one, &one, b.desc, &info);
    first = info;
    if (info == FTLA_INFO_PROCESS_LOST)
        pdpotrs_ft_("L", &n, &nrhs, a.a, &one, &one, a.desc, b.a, &one, &one, b.desc, &info);
    x_err = fmax(x_err, x_error(&b));
    /* A: dpotrf's L below and on the diagonal, the input above it (the
     * replacement's too). */
    double *g = malloc(sizeof(double) * (size_t)n * n);
    for (int j = 0; j < n; j++)
        for (int i = 0; i < n; i++) g[i + (size_t)j * n] = spd(i, j);
    int ginfo;
    dpotrf_("L", &n, g, &n, &ginfo);
    double l_err = 0, u_err = 0;
    for (int lj = 0; lj < a.nloc; lj++)
        for (int li = 0; li < a.mloc; li++) {
            int i = gi(&a, li), j = gj(&a, lj);
            if (i >= j) l_err = fmax(l_err, fabs(*at(&a, li, lj) - g[i + (size_t)j * n]));
            else u_err = fmax(u_err, fabs(*at(&a, li, lj) - spd(i, j)));
        }
    int ok = uinfo == (posv ? -1107 : -1) && finfo == 0 && info == 0 && x_err <= 1e-9 && l_err <= 1e-10 * n &&
             u_err <= 1e-12;
    printf("protected_solve: grid rank %d%s: %s INFO %d, factor INFO %d, solve INFO %d (first %d), x %s (err "
           "%.1e), L %s (max diff %.1e), upper triangle %s\n",
           rank, who(), posv ? "bad B" : "UPLO=U", uinfo, finfo, info, first, x_err <= 1e-9 ? "correct" : "WRONG", x_err,
           l_err <= 1e-10 * n ? "equal to LAPACK's" : "DIFFERS", l_err, u_err <= 1e-12 ? "as given" : "CHANGED");
    free(a.a), free(b.a), free(g);
    return ok;
}

static int qr(int n, int nb, int nrhs) {
    Mat a = mat(n, n, nb), c = mat(n, nrhs, nb);
    double *tau = malloc(sizeof(double) * imax(1, a.nloc)), wq;
    int finfo, info, first, lwork = -1;
    fill_a(&a);
    pdgeqrf_ft_(&n, &n, a.a, &one, &one, a.desc, tau, &wq, &lwork, &finfo);
    lwork = (int)wq;
    double *work = malloc(sizeof(double) * imax(1, lwork));
    pdgeqrf_ft_(&n, &n, a.a, &one, &one, a.desc, tau, work, &lwork, &finfo);
    own_work();
    for (int lj = 0; lj < c.nloc; lj++)
        for (int li = 0; li < c.mloc; li++) *at(&c, li, lj) = rhs(gi(&c, li), gj(&c, lj));
    int olwork = -1;
    pdormqr_ft_("L", "T", &n, &nrhs, &n, a.a, &one, &one, a.desc, tau, c.a, &one, &one, c.desc, &wq, &olwork, &info);
    olwork = (int)wq;
    double *owork = malloc(sizeof(double) * imax(1, olwork));
    pdormqr_ft_("L", "T", &n, &nrhs, &n, a.a, &one, &one, a.desc, tau, c.a, &one, &one, c.desc, owork, &olwork,
                &info);
    first = info;
    if (info == FTLA_INFO_PROCESS_LOST)
        pdormqr_ft_("L", "T", &n, &nrhs, &n, a.a, &one, &one, a.desc, tau, c.a, &one, &one, c.desc, owork, &olwork,
                    &info);
    /* LAPACK: Q^T C on the whole matrix. */
    double *g = whole_a(n, n), *gtau = malloc(sizeof(double) * n), *gc = malloc(sizeof(double) * (size_t)n * nrhs);
    for (int k = 0; k < nrhs; k++)
        for (int i = 0; i < n; i++) gc[i + (size_t)k * n] = rhs(i, k);
    int glwork = n * 64, ginfo;
    double *gwork = malloc(sizeof(double) * glwork);
    dgeqrf_(&n, &n, g, &n, gtau, gwork, &glwork, &ginfo);
    dormqr_("L", "T", &n, &nrhs, &n, g, &n, gtau, gc, &n, gwork, &glwork, &ginfo);
    double c_err = diff(&c, gc, n, n), r_err = 0;
    for (int lj = 0; lj < a.nloc; lj++)
        for (int li = 0; li < a.mloc; li++)
            if (gi(&a, li) <= gj(&a, lj))
                r_err = fmax(r_err, fabs(*at(&a, li, lj) - g[gi(&a, li) + (size_t)gj(&a, lj) * n]));
    int ok = finfo == 0 && info == 0 && c_err <= 1e-10 * n && r_err <= 1e-10 * n;
    printf("protected_solve: grid rank %d%s: factor INFO %d, ormqr INFO %d (first %d), Q^T C %s (max diff %.1e), "
           "R %s (max diff %.1e)\n",
           rank, who(), finfo, info, first, c_err <= 1e-10 * n ? "equal to LAPACK's" : "DIFFERS", c_err,
           r_err <= 1e-10 * n ? "equal to LAPACK's" : "DIFFERS", r_err);
    free(a.a), free(c.a), free(tau), free(work), free(owork), free(g), free(gtau), free(gc), free(gwork);
    return ok;
}

static int gels(int m, int n, int nb, int nrhs, int short_on) {
    int mb = imax(m, n);
    Mat a = mat(m, n, nb), b = mat(mb, nrhs, nb);
    fill_a(&a);
    own_work();
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) *at(&b, li, lj) = gi(&b, li) < m ? rhs(gi(&b, li), gj(&b, lj)) : 0.0;
    double wq;
    int lwork = -1, info, first;
    pdgels_ft_("N", &m, &n, &nrhs, a.a, &one, &one, a.desc, b.a, &one, &one, b.desc, &wq, &lwork, &info);
    int query_info = info;
    lwork = (int)wq;
    double *work = malloc(sizeof(double) * imax(1, lwork));
    int refused = 0;
    if (short_on >= 0) {
        /* One process's workspace too small: every process refuses the
         * call (nothing computed), whatever it does first. */
        int short_lwork = rank == short_on ? lwork - 1 : lwork;
        pdgels_ft_("N", &m, &n, &nrhs, a.a, &one, &one, a.desc, b.a, &one, &one, b.desc, work, &short_lwork, &info);
        refused = info;
    }
    pdgels_ft_("N", &m, &n, &nrhs, a.a, &one, &one, a.desc, b.a, &one, &one, b.desc, work, &lwork, &info);
    first = info;
    if (info == FTLA_INFO_PROCESS_LOST) {
        /* (B and A are as they were: ftla computes in its own copies.) */
        pdgels_ft_("N", &m, &n, &nrhs, a.a, &one, &one, a.desc, b.a, &one, &one, b.desc, work, &lwork, &info);
    }
    /* LAPACK's dgels on the whole problem. */
    double *g = whole_a(m, n), *gb = malloc(sizeof(double) * (size_t)mb * nrhs);
    for (int k = 0; k < nrhs; k++)
        for (int i = 0; i < mb; i++) gb[i + (size_t)k * mb] = i < m ? rhs(i, k) : 0.0;
    int glwork = (m + n + nrhs) * 64, ginfo;
    double *gwork = malloc(sizeof(double) * glwork);
    dgels_("N", &m, &n, &nrhs, g, &m, gb, &mb, gwork, &glwork, &ginfo);
    double x_err = diff(&b, gb, mb, n);
    int ok = query_info == 0 && lwork > 0 && info == 0 && x_err <= 1e-9 && (short_on < 0 || refused == -14);
    printf("protected_solve: grid rank %d%s: gels %dx%d query INFO %d LWORK %d, short INFO %d, INFO %d (first %d), "
           "X %s (max diff %.1e)\n",
           rank, who(), m, n, query_info, lwork, refused, info, first,
           x_err <= 1e-9 ? "equal to LAPACK's dgels" : "DIFFERS", x_err);
    free(a.a), free(b.a), free(work), free(g), free(gb), free(gwork);
    return ok;
}

/* One refusal: INFO as expected on this process. */

static int refusals(int n, int nb) {
    Mat a = mat(n, n, nb), b = mat(n, 1, nb), other = mat(n, n, nb);
    int *ipiv = malloc(sizeof(int) * (a.mloc + nb)), info, ok = 1;
    fill_a(&a);
    fill_a(&other);
    pdgetrf_ft_(&n, &n, a.a, &one, &one, a.desc, ipiv, &info);
    ok &= expect("factor", info, 0);
    /* A changed on one process after the factorization: refused at A's position everywhere. */
    double saved = a.mloc > 0 && a.nloc > 0 ? a.a[0] : 0;
    if (rank == 3 && a.mloc > 0 && a.nloc > 0) a.a[0] += 1e-3;
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("A changed", info, -4);
    if (rank == 3 && a.mloc > 0 && a.nloc > 0) a.a[0] = saved;
    /* IPIV changed: refused at its position. */
    int saved_piv = a.mloc > 0 ? ipiv[0] : 0;
    if (rank == 1 && a.mloc > 0) ipiv[0] = ipiv[0] == 1 ? 2 : 1;
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("IPIV changed", info, -8);
    if (rank == 1 && a.mloc > 0) ipiv[0] = saved_piv;
    /* Restored: solved. */
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("A as factored", info, 0);
    /* A matrix ftla never factored, and SIDE = 'R'. */
    pdgetrs_ft_("N", &n, &one, other.a, &one, &one, other.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("never factored", info, -4);
    double w[1];
    int lw = 1;
    pdormqr_ft_("R", "T", &n, &one, &n, a.a, &one, &one, a.desc, w, b.a, &one, &one, b.desc, w, &lw, &info);
    ok &= expect("SIDE = R", info, -1);
    /* LU factors are not QR factors. */
    double *tau = calloc(imax(1, a.nloc), sizeof(double)), *work = malloc(sizeof(double) * 100000);
    lw = 100000;
    pdormqr_ft_("L", "T", &n, &one, &n, a.a, &one, &one, a.desc, tau, b.a, &one, &one, b.desc, work, &lw, &info);
    ok &= expect("LU factors to pdormqr_ft_", info, -6);
    /* Released: refused. */
    ftla_release_(a.a, a.desc, &info);
    ok &= expect("release", info, 0);
    ftla_release_(a.a, a.desc, &info);
    ok &= expect("release again", info, 1);
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("released", info, -4);
    printf("protected_solve: grid rank %d: refusals %s\n", rank, ok ? "as documented" : "WRONG");
    free(a.a), free(b.a), free(other.a), free(ipiv), free(tau), free(work);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    int iam, nprocs;
    /* (Trailing arguments that are not PxQ are ignored.) */
    if (strcmp(argv[1], "lu") == 0 && argc >= 7 && sscanf(argv[6], "%dx%d", &nprow, &npcol) != 2) nprow = npcol = 2;
    Cftla_pinfo(&iam, &nprocs);
    Cftla_gridinit(&ictxt, "Row", nprow, npcol);
    if (ictxt < 0) return 2;
    Cftla_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);
    rank = myrow * npcol + mycol;
    int ok = 0;
    if (strcmp(argv[1], "lu") == 0 && argc >= 6) {
        parse_kills(argv[4]);
        ok = lu(atoi(argv[2]), atoi(argv[3]), atoi(argv[5]));
    } else if ((strcmp(argv[1], "chol") == 0 || strcmp(argv[1], "posv") == 0) && argc >= 6) {
        parse_kills(argv[4]);
        ok = chol(atoi(argv[2]), atoi(argv[3]), atoi(argv[5]), strcmp(argv[1], "posv") == 0);
    } else if (strcmp(argv[1], "qr") == 0 && argc >= 6) {
        parse_kills(argv[4]);
        ok = qr(atoi(argv[2]), atoi(argv[3]), atoi(argv[5]));
    } else if (strcmp(argv[1], "gels") == 0 && argc >= 7) {
        parse_kills(argv[5]);
        ok = gels(atoi(argv[2]), atoi(argv[3]), atoi(argv[4]), atoi(argv[6]), argc >= 8 && strncmp(argv[7], "--", 2) != 0 ? atoi(argv[7]) : -1);
    } else if (strcmp(argv[1], "refusals") == 0) {
        ok = refusals(atoi(argv[2]), atoi(argv[3]));
    } else {
        return 2;
    }
    fflush(stdout);
    Cftla_gridexit(ictxt);
    Cftla_exit(0);
    return ok ? 0 : 1;
}
