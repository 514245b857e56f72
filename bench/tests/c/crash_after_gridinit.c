/*
 * A process that dies after the grid is made (tests/capi.rs runs it under
 * `ftla launch --np 2`, 1x2 grid). argv[1] says how grid rank 1 ends:
 * "segv" (SIGSEGV), "abort" (abort(), SIGABRT), "exit7" (exit status 7)
 * or "ok" (as rank 0); rank 0 frees the grid and exits with status 0 in
 * every case, without communicating with rank 1: the job's exit code must
 * come from rank 1's end. With argv[2] = "qr", every process then calls
 * pdgeqrf_ft_ on a 64 x 64 matrix: rank 0 meets the loss there and the
 * job recovers (a spawned replacement runs main again from the top, as a
 * replacement it does not die).
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftla.h"

int main(int argc, char **argv) {
    int iam, nprocs, ictxt, nprow, npcol, myrow, mycol, info;
    const char *how = argc > 1 ? argv[1] : "ok";
    int qr = argc > 2 && strcmp(argv[2], "qr") == 0;
    Cftla_pinfo(&iam, &nprocs);
    Cftla_gridinit(&ictxt, "Row", 1, 2);
    Cftla_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);
    int replacement = Cftla_is_replacement(ictxt);
    if (mycol == 1 && !replacement) {
        fflush(stdout);
        if (strcmp(how, "segv") == 0) raise(SIGSEGV);
        if (strcmp(how, "abort") == 0) abort();
        if (strcmp(how, "exit7") == 0) exit(7);
    }
    if (qr) {
        const int n = 64, nb = 8, zero = 0, one = 1;
        int nloc = ftla_numroc_(&n, &nb, &mycol, &zero, &npcol), lld = n, desca[9], lwork = -1;
        ftla_descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
        double *a = malloc(sizeof(double) * lld * (nloc > 0 ? nloc : 1)), *tau = malloc(sizeof(double) * n), wq;
        for (int k = 0; k < lld * nloc; k++) a[k] = 1.0 / (1.0 + k % 97) + (k % (lld + 1) == 0 ? 2.0 : 0.0);
        pdgeqrf_ft_(&n, &n, a, &one, &one, desca, tau, &wq, &lwork, &info);
        lwork = (int)wq;
        double *work = malloc(sizeof(double) * (lwork > 0 ? lwork : 1));
        pdgeqrf_ft_(&n, &n, a, &one, &one, desca, tau, work, &lwork, &info);
        printf("crash_after_gridinit: grid rank %d%s: pdgeqrf_ft_ INFO %d\n", mycol,
               replacement ? " [replacement]" : "", info);
        free(a);
        free(tau);
        free(work);
    }
    printf("crash_after_gridinit: grid rank %d done\n", mycol);
    Cftla_gridexit(ictxt);
    Cftla_exit(0);
    return 0;
}
