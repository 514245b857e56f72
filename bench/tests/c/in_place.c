/*
 * Factors kept in the program's own A (tests/capi.rs runs it under `ftla
 * launch`): A allocated with the room ftla_kept_lsize_ says, declared with
 * ftla_in_place_, factored; grid rank KILL dies by its own SIGKILL between
 * the factorization and the solves (-1: nobody); every process, the
 * replacement included, checks its part of the results against LAPACK on
 * the whole matrix, and reports the bytes ftla keeps (ftla_kept_bytes_)
 * against its local array's.
 *
 *   in_place lu N NB KILL NRHS PxQ [copy|mixed]  pdgetrf_ft_, kill,
 *                                    pdgetrs_ft_ (N, then T): x against the
 *                                    known solution, A against dgetrf's L
 *                                    and U ("copy": the same without the
 *                                    declaration; "mixed": declared on the
 *                                    even grid ranks only)
 *   in_place qr N NB KILL NRHS PxQ   pdgeqrf_ft_, kill, pdormqr_ft_ 'T'
 *                                    (against dormqr's Q^T C), then 'N'
 *                                    (C back), R against dgeqrf's
 *   in_place again N NB KILL         pdgetrf_ft_ in place, solve, release
 *                                    and free A, kill, then the same with a
 *                                    new A: released factors are never
 *                                    mended into the freed array
 *   in_place refusals N NB           too small an LSIZE, a padded LLD_A,
 *                                    an A changed after the factorization
 *                                    (its factors or its checksums): the
 *                                    same INFO on every process
 *
 * Prints one line per process; exit status 0 when every check passed here.
 */
#define PROGRAM "in_place"
#include "grid_matrix.h"

/* Declares x in place (or not); its INFO. */
static int declare(Mat *x, int in_place) {
    int info = 0;
    if (in_place) ftla_in_place_(x->a, x->desc, &x->lsize, &info);
    return info;
}

/* The bytes ftla keeps here, and A's local array's (LLD x LOCc). */
static void kept(Mat *a, long long *held, long long *local) {
    int64_t b;
    ftla_kept_bytes_(&b);
    *held = (long long)b;
    *local = (long long)a->lld * a->nloc * (long long)sizeof(double);
}

static int lu(int n, int nb, int nrhs, int in_place) {
    Mat a = mat_with(n, n, nb, 0, in_place), b = mat(n, nrhs, nb);
    int *ipiv = malloc(sizeof(int) * (a.mloc + nb));
    int dinfo, finfo, info, tinfo;
    fill_a(&a);
    dinfo = declare(&a, in_place);
    pdgetrf_ft_(&n, &n, a.a, &one, &one, a.desc, ipiv, &finfo);
    long long held, local;
    kept(&a, &held, &local);
    own_work();
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += element(gi(&b, li), j) * xknown(j, gj(&b, lj));
            *at(&b, li, lj) = s;
        }
    pdgetrs_ft_("N", &n, &nrhs, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    double x_err = 0;
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) x_err = fmax(x_err, fabs(*at(&b, li, lj) - xknown(gi(&b, li), gj(&b, lj))));
    /* The transposed system with the same factors (A is as the first solve left it). */
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) {
            double s = 0;
            for (int j = 0; j < n; j++) s += element(j, gi(&b, li)) * xknown(j, gj(&b, lj));
            *at(&b, li, lj) = s;
        }
    pdgetrs_ft_("T", &n, &nrhs, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &tinfo);
    for (int lj = 0; lj < b.nloc; lj++)
        for (int li = 0; li < b.mloc; li++) x_err = fmax(x_err, fabs(*at(&b, li, lj) - xknown(gi(&b, li), gj(&b, lj))));
    /* A holds L and U, the replacement's too. */
    double *g = whole_a(n, n);
    int *gpiv = malloc(sizeof(int) * n), ginfo;
    dgetrf_(&n, &n, g, &n, gpiv, &ginfo);
    double a_err = diff(&a, g, n, n);
    int piv_same = 1;
    for (int li = 0; li < a.mloc; li++) piv_same &= ipiv[li] == gpiv[gi(&a, li)];
    int ok = dinfo == 0 && finfo == 0 && info == 0 && tinfo == 0 && x_err <= 1e-9 && a_err <= 1e-10 * n && piv_same;
    printf("in_place: grid rank %d%s: %s, declare INFO %d, factor INFO %d, solve INFO %d %d, x %s (err %.1e), "
           "A %s (max diff %.1e), pivots %s, kept %lld bytes, local A %lld bytes\n",
           rank, who(), in_place ? "in place" : "copy", dinfo, finfo, info, tinfo, x_err <= 1e-9 ? "correct" : "WRONG",
           x_err, a_err <= 1e-10 * n ? "equal to LAPACK's L and U" : "DIFFERS", a_err, piv_same ? "identical" : "DIFFER",
           held, local);
    int rinfo;
    ftla_release_(a.a, a.desc, &rinfo);
    free(a.a), free(b.a), free(ipiv), free(g), free(gpiv);
    return ok && rinfo == 0;
}

static int qr(int n, int nb, int nrhs) {
    Mat a = mat_with(n, n, nb, 0, 1), c = mat(n, nrhs, nb);
    double *tau = malloc(sizeof(double) * imax(1, a.nloc)), wq;
    int dinfo, finfo, info, ninfo, lwork = -1;
    fill_a(&a);
    dinfo = declare(&a, 1);
    pdgeqrf_ft_(&n, &n, a.a, &one, &one, a.desc, tau, &wq, &lwork, &finfo);
    lwork = (int)wq;
    double *work = malloc(sizeof(double) * imax(1, lwork));
    pdgeqrf_ft_(&n, &n, a.a, &one, &one, a.desc, tau, work, &lwork, &finfo);
    long long held, local;
    kept(&a, &held, &local);
    own_work();
    for (int lj = 0; lj < c.nloc; lj++)
        for (int li = 0; li < c.mloc; li++) *at(&c, li, lj) = rhs(gi(&c, li), gj(&c, lj));
    int olwork = -1;
    pdormqr_ft_("L", "T", &n, &nrhs, &n, a.a, &one, &one, a.desc, tau, c.a, &one, &one, c.desc, &wq, &olwork, &info);
    olwork = (int)wq;
    double *owork = malloc(sizeof(double) * imax(1, olwork));
    pdormqr_ft_("L", "T", &n, &nrhs, &n, a.a, &one, &one, a.desc, tau, c.a, &one, &one, c.desc, owork, &olwork,
                &info);
    double *g = whole_a(n, n), *gtau = malloc(sizeof(double) * n), *gc = malloc(sizeof(double) * (size_t)n * nrhs);
    for (int k = 0; k < nrhs; k++)
        for (int i = 0; i < n; i++) gc[i + (size_t)k * n] = rhs(i, k);
    int glwork = n * 64, ginfo;
    double *gwork = malloc(sizeof(double) * glwork);
    dgeqrf_(&n, &n, g, &n, gtau, gwork, &glwork, &ginfo);
    dormqr_("L", "T", &n, &nrhs, &n, g, &n, gtau, gc, &n, gwork, &glwork, &ginfo);
    double c_err = 0;
    for (int lj = 0; lj < c.nloc; lj++)
        for (int li = 0; li < c.mloc; li++)
            c_err = fmax(c_err, fabs(*at(&c, li, lj) - gc[gi(&c, li) + (size_t)gj(&c, lj) * n]));
    /* Q (Q^T C) = C: the kept factors again, A as the first call left it. */
    pdormqr_ft_("L", "N", &n, &nrhs, &n, a.a, &one, &one, a.desc, tau, c.a, &one, &one, c.desc, owork, &olwork,
                &ninfo);
    double back_err = 0;
    for (int lj = 0; lj < c.nloc; lj++)
        for (int li = 0; li < c.mloc; li++) back_err = fmax(back_err, fabs(*at(&c, li, lj) - rhs(gi(&c, li), gj(&c, lj))));
    double r_err = diff_part(&a, g, n, n, 1);
    int ok = dinfo == 0 && finfo == 0 && info == 0 && ninfo == 0 && c_err <= 1e-10 * n && back_err <= 1e-10 * n &&
             r_err <= 1e-10 * n;
    printf("in_place: grid rank %d%s: qr in place, factor INFO %d, ormqr INFO %d %d, Q^T C %s (max diff %.1e), "
           "Q Q^T C %s (max diff %.1e), R %s (max diff %.1e), kept %lld bytes, local A %lld bytes\n",
           rank, who(), finfo, info, ninfo, c_err <= 1e-10 * n ? "equal to LAPACK's" : "DIFFERS", c_err,
           back_err <= 1e-10 * n ? "equal to C" : "DIFFERS", back_err, r_err <= 1e-10 * n ? "equal to LAPACK's" : "DIFFERS",
           r_err, held, local);
    int rinfo;
    ftla_release_(a.a, a.desc, &rinfo);
    free(a.a), free(c.a), free(tau), free(work), free(owork), free(g), free(gtau), free(gc), free(gwork);
    return ok && rinfo == 0;
}

/* One in-place factorization and solve of a fresh A: 1 when right, 2 on
 * a replacement for a solve that completed before it joined (its x was
 * lost with the process it replaces), 0 otherwise. */
static int factor_and_solve(int n, int nb, double *x_err) {
    Mat a = mat_with(n, n, nb, 0, 1), b = mat(n, 1, nb);
    int *ipiv = malloc(sizeof(int) * (a.mloc + nb)), dinfo, finfo, info, rinfo;
    fill_a(&a);
    dinfo = declare(&a, 1);
    pdgetrf_ft_(&n, &n, a.a, &one, &one, a.desc, ipiv, &finfo);
    for (int li = 0; li < b.mloc; li++) {
        double s = 0;
        for (int j = 0; j < n; j++) s += element(gi(&b, li), j) * xknown(j, 0);
        if (b.nloc > 0) *at(&b, li, 0) = s;
    }
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    *x_err = 0;
    for (int li = 0; li < (b.nloc > 0 ? b.mloc : 0); li++)
        *x_err = fmax(*x_err, fabs(*at(&b, li, 0) - xknown(gi(&b, li), 0)));
    ftla_release_(a.a, a.desc, &rinfo);
    /* (Poisoned before it is freed: a write into it after the release would be a bug, and so would a read.) */
    for (int64_t k = 0; k < a.lsize; k++) a.a[k] = NAN;
    free(a.a), free(b.a), free(ipiv);
    if (dinfo == 0 && finfo == 0 && rinfo == 0 && info == FTLA_INFO_RESULT_LOST && Cftla_is_replacement(ictxt))
        return 2;
    return dinfo == 0 && finfo == 0 && info == 0 && rinfo == 0 && *x_err <= 1e-9;
}

static int again(int n, int nb) {
    double first_err, second_err;
    int first = factor_and_solve(n, nb, &first_err);
    own_work();
    int second = factor_and_solve(n, nb, &second_err);
    const char *said[] = {"WRONG", "right", "lost here"};
    printf("in_place: grid rank %d%s: again, first %s (err %.1e), second %s (err %.1e)\n", rank, who(), said[first],
           first_err, said[second], second_err);
    return first != 0 && second == 1;
}


static int refusals(int n, int nb) {
    int ok = 1, info;
    Mat b = mat(n, 1, nb);
    int *ipiv = malloc(sizeof(int) * (n + nb));
    /* Too small a declaration on grid rank 1 only: A's INFO (-3) everywhere. */
    Mat a = mat_with(n, n, nb, 0, 1);
    fill_a(&a);
    int64_t short_size = rank == 1 ? a.lsize - 1 : a.lsize;
    ftla_in_place_(a.a, a.desc, &short_size, &info);
    ok &= expect("declare short", info, 0);
    pdgetrf_ft_(&n, &n, a.a, &one, &one, a.desc, ipiv, &info);
    ok &= expect("LSIZE too small", info, -3);
    ftla_release_(a.a, a.desc, &info);
    ok &= expect("release the declaration", info, 0);
    /* LLD_A padded on grid rank 2 only: DESCA's LLD (-609) everywhere; the query says so there. */
    Mat p = mat_with(n, n, nb, rank == 2 ? 1 : 0, 0);
    int64_t need;
    ftla_kept_lsize_(&n, &n, p.desc, &need, &info);
    ok &= expect("query with a padded LLD", info, rank == 2 ? -609 : 0);
    p.lsize *= 2;
    free(p.a);
    p.a = calloc((size_t)p.lsize, sizeof(double));
    fill_a(&p);
    ftla_in_place_(p.a, p.desc, &p.lsize, &info);
    ok &= expect("declare padded", info, 0);
    pdgetrf_ft_(&n, &n, p.a, &one, &one, p.desc, ipiv, &info);
    ok &= expect("LLD padded", info, -609);
    ftla_release_(p.a, p.desc, &info);
    /* A larger than the factored submatrix (the checksums would take A's own columns past N): DESCA's M (-603)
       or N (-604) everywhere, the query's too. */
    int less = n - nb;
    ftla_kept_lsize_(&less, &n, a.desc, &need, &info);
    ok &= expect("query with M < M_A", info, -603);
    ftla_kept_lsize_(&n, &less, a.desc, &need, &info);
    ok &= expect("query with N < N_A", info, -604);
    ftla_in_place_(a.a, a.desc, &a.lsize, &info);
    pdgetrf_ft_(&n, &less, a.a, &one, &one, a.desc, ipiv, &info);
    ok &= expect("N < N_A", info, -604);
    ftla_release_(a.a, a.desc, &info);
    ok &= expect("release the wider declaration", info, 0);
    /* Declared well: factored in place; then changed. */
    ftla_in_place_(a.a, a.desc, &a.lsize, &info);
    pdgetrf_ft_(&n, &n, a.a, &one, &one, a.desc, ipiv, &info);
    ok &= expect("factor in place", info, 0);
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("A as factored", info, 0);
    /* A factor changed on grid rank 3: A's position (-4) everywhere. */
    double saved = a.mloc > 0 && a.nloc > 0 ? a.a[0] : 0;
    if (rank == 3 && a.mloc > 0 && a.nloc > 0) a.a[0] += 1e-3;
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("a factor changed", info, -4);
    if (rank == 3 && a.mloc > 0 && a.nloc > 0) a.a[0] = saved;
    /* A checksum (past the factors) changed on grid rank 0. */
    size_t last = (size_t)a.lsize - 1, factors = (size_t)a.lld * a.nloc;
    saved = a.a[last];
    if (rank == 0 && last >= factors) a.a[last] += 1.0;
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("a checksum changed", info, -4);
    a.a[last] = saved;
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("restored", info, 0);
    ftla_release_(a.a, a.desc, &info);
    ok &= expect("release", info, 0);
    pdgetrs_ft_("N", &n, &one, a.a, &one, &one, a.desc, ipiv, b.a, &one, &one, b.desc, &info);
    ok &= expect("released", info, -4);
    /* Argument errors of the declaration itself (local). */
    int64_t negative = -1;
    ftla_in_place_(a.a, a.desc, &negative, &info);
    ok &= expect("negative LSIZE", info, -3);
    ftla_in_place_(a.a, NULL, &a.lsize, &info);
    ok &= expect("null DESCA", info, -2);
    printf("in_place: grid rank %d: refusals %s\n", rank, ok ? "as documented" : "WRONG");
    free(a.a), free(b.a), free(p.a), free(ipiv);
    return ok;
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    int iam, nprocs;
    if (argc >= 7 && sscanf(argv[6], "%dx%d", &nprow, &npcol) != 2) nprow = npcol = 2;
    Cftla_pinfo(&iam, &nprocs);
    Cftla_gridinit(&ictxt, "Row", nprow, npcol);
    if (ictxt < 0) return 2;
    Cftla_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);
    rank = myrow * npcol + mycol;
    int ok = 0;
    if (strcmp(argv[1], "lu") == 0 && argc >= 7) {
        parse_kills(argv[4]);
        const char *how = argc >= 8 ? argv[7] : "";
        /* ("mixed": declared on the even grid ranks only.) */
        int in_place = strcmp(how, "copy") == 0 ? 0 : strcmp(how, "mixed") == 0 ? rank % 2 == 0 : 1;
        ok = lu(atoi(argv[2]), atoi(argv[3]), atoi(argv[5]), in_place);
    } else if (strcmp(argv[1], "qr") == 0 && argc >= 7) {
        parse_kills(argv[4]);
        ok = qr(atoi(argv[2]), atoi(argv[3]), atoi(argv[5]));
    } else if (strcmp(argv[1], "again") == 0 && argc >= 5) {
        parse_kills(argv[4]);
        ok = again(atoi(argv[2]), atoi(argv[3]));
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
