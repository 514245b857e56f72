/*
 * ftla.h - the C ABI of ftla, fault-tolerant distributed dense linear
 * algebra (libftla.so / libftla.a). Generated from capi/src by cbindgen:
 * do not edit; run `FTLA_BLESS=1 cargo test -p ftla-capi --test header`.
 *
 * Calling convention: ScaLAPACK's. Every argument of the drivers is a
 * pointer (Fortran style); IA/JA are 1-based; descriptors are 9 ints
 * (DTYPE=1, CTXT, M, N, MB, NB, RSRC, CSRC, LLD); LWORK = -1 is a
 * workspace query; INFO = -i (or -(i*100+j) for entry j of descriptor
 * argument i) for a bad argument, the same on every process; INFO > 0 as in
 * ScaLAPACK; the FTLA_INFO_* codes below for failures. Names are prefixed
 * (Cftla_, ftla_, *_ft_) so that a BLACS or ScaLAPACK linked into the same
 * program never clashes. Call ftla from the thread that started it.
 *
 * A typical program:
 *
 *   Cftla_pinfo(&iam, &nprocs);
 *   Cftla_gridinit(&ictxt, "Row", nprow, npcol);
 *   Cftla_gridinfo(ictxt, &nprow, &npcol, &myrow, &mycol);
 *   ftla_descinit_(desca, &n, &n, &nb, &nb, &zero, &zero, &ictxt, &lld, &info);
 *   ... fill the local array of A ...
 *   pdgeqrf_ft_(&n, &n, a, &one, &one, desca, tau, work, &lwork, &info);
 *   Cftla_gridexit(ictxt);
 *   Cftla_exit(0);
 *
 * Run it with `ftla launch --np NP [--spares S] -- ./program ARGS`, which
 * starts it under the MPI's mpiexec with ULFM on (and injects the kills of
 * FTLA_KILL, e.g. FTLA_KILL=1@qr:3:update).
 *
 * Replacement processes. When a process dies inside a fault-tolerant call,
 * the survivors repair the grid inside that call: a parked hot spare (a
 * process past nprow*npcol) or a newly spawned process takes the lost
 * process's grid rank, row and column. A spawned replacement runs the
 * program from the top of main: Cftla_pinfo joins it to the survivors'
 * grid (and returns the grid rank it took over), Cftla_gridinit hands it
 * that grid, and its call of the interrupted routine - with arrays of the
 * same shapes, whatever their values - joins the survivors' recovery,
 * which rebuilds its blocks; the call then returns the failure-free result
 * on every process, the replacement included, with INFO = 0. Until that
 * call, a replacement must make no collective call the survivors do not
 * make at that point (they are inside the interrupted call).
 * Cftla_is_replacement tells a process it is one. Every call is recorded
 * in a status log the survivors hand to the replacement: calls that
 * completed before it joined return at once in it, without communicating,
 * with INFO = FTLA_INFO_RESULT_LOST (the fault-tolerant ones fill in their
 * replicated outputs; its local part of their results was lost with the
 * dead process) - but for pdgetrf_ft_, pdgeqrf_ft_ and pdpotrf_ft_, whose
 * factors ftla keeps protected (see below: INFO = 0) - and calls every
 * process refused (INFO < 0: an argument, no memory) return the same INFO
 * again. A plain
 * routine that loses a process returns FTLA_INFO_PROCESS_LOST on the
 * survivors, whose next call must be that one again: the replacement meets
 * them there. A process lost between two calls is found, and the grid
 * repaired, at the start of the next call, which then goes on (a
 * fault-tolerant call never returns FTLA_INFO_PROCESS_LOST).
 *
 * Protected factors across calls. pdgetrf_ft_, pdgeqrf_ft_ and pdpotrf_ft_
 * keep their result protected after they return: ftla keeps its own copy
 * of the factors with their checksums and the replicated IPIV or TAU,
 * keyed by the local array A and its descriptor as the program passed them
 * (A receives a copy of the factors, as from ScaLAPACK). The copy lives
 * until ftla_release_(a, desca, &info), a later call that overwrites the
 * same array (a factorization of it, plain or fault tolerant, or
 * pdgels_ft_), or Cftla_gridexit/Cftla_exit. A process lost while it
 * lives - in an ftla call, between calls during the program's own work, or
 * in a solve - is repaired at the latest in the next ftla call, and its part of
 * every kept factorization is rebuilt from the checksums. pdgetrs_ft_,
 * pdpotrs_ft_ and pdormqr_ft_ find the kept factors by A and DESCA and
 * compute with ftla's copy; they refuse an A (or IPIV, TAU) that no longer
 * holds what the factorization returned - compared bit for bit, one pass
 * over the local array - with INFO at its position (-4 for pdgetrs_ft_'s
 * A), the same on every process, and so an A factored by none of them
 * ("factor A with pdgetrf_ft_ first"). More losses in one process row
 * between two ftla calls than the checksums rebuild make the kept factors
 * lost: every routine given them returns FTLA_INFO_INPUT_LOST, never a
 * wrong result.
 *
 * Factors kept in place. Instead of a copy, ftla can keep the factors in
 * the program's own A, allocated with room for their checksum columns:
 *
 *   ftla_kept_lsize_(&n, &n, desca, &lsize, &info);  (LLD_A = max(1, LOCr(N)))
 *   a = malloc(lsize * sizeof(double));  ... fill A's LLD_A x LOCc(N) part ...
 *   ftla_in_place_(a, desca, &lsize, &info);
 *   pdgetrf_ft_(&n, &n, a, &one, &one, desca, ipiv, &info);
 *   pdgetrs_ft_("N", &n, &nrhs, a, ..., ipiv, b, ..., &info);  (as often as needed)
 *   ftla_release_(a, desca, &info);  free(a);
 *
 * The factorization then works in A (nothing copied in or out): its
 * leading LLD_A x LOCc(N) part holds the factors exactly as ScaLAPACK
 * leaves them, the rest their checksums, and the solves compute on A
 * itself. From the factorization until ftla_release_, A is ftla's: the
 * program reads the factors freely but writes neither them nor the
 * checksums, and does not free A. An A changed anyway is refused as above
 * (INFO at A's position, the same on every process), found by a 64-bit
 * fingerprint of the local array (factors and checksums) that ftla takes
 * when the factorization - or, on a replacement, the mend - leaves it: one
 * pass over it per solve. The declaration stays with the array (address
 * and descriptor) until ftla_release_ or the grid's exit.
 *
 * Memory per process, A's local array being LLD_A x LOCc(N) doubles and Q
 * the number of process columns. The checksums are two block columns per
 * group of Q block columns (G = ceil(ceil(N/NB)/Q) groups): LSIZE = LLD_A
 * x LOCc(NB*ceil(N/NB) + 2*G*NB), about (1 + 2/Q) times A's local array
 * (a block column more where the cyclic distribution rounds up). The
 * left-factor sums are one LOCr x NB block per group, held by both
 * process columns of its checksum pair: about 2/Q of A's local array.
 * - Copy (A not declared): kept until released, ftla's copy of the factors
 *   with their checksum columns and the left-factor sums, about (1 + 4/Q)
 *   times A's local array, besides the program's A: a peak of about
 *   (2 + 4/Q) times A's local array, plus a panel's scratch during a
 *   call. (N = 512, NB = 32 on 2x2: 1,576,960 bytes kept for a local array
 *   of 524,288 bytes.)
 * - In place: the program's A with its room, about (1 + 2/Q) times its
 *   local array, and ftla's left-factor sums, about 2/Q: a peak of about
 *   (1 + 4/Q) times A's local array, plus a panel's scratch during a call:
 *   one local array less than the copy. (N = 512, NB = 32 on 2x2: 528,384
 *   bytes kept - the sums and the pivots - and LSIZE = 131,072 doubles.)
 * Both: IPIV or TAU (N numbers); a solve adds B's copy and its protected
 * copy with checksum columns (about (2 + 2/Q) times B's local array) for
 * the call. ftla_kept_bytes_ says what ftla itself holds. These figures
 * are for the default checksum layout; with FTLA_LAYOUT=rotating and
 * FTLA_CHECKSUMS=F (F weighted checksums per group of Q - F block
 * columns, any F losses per process row) read F/(Q - F) for 2/Q, and
 * query LSIZE with the same environment as the factorization.
 *
 * A replacement and kept factors. A replacement's re-run of a
 * pdgetrf_ft_ or pdgeqrf_ft_ that completed before it joined returns at
 * once with INFO = 0, IPIV or TAU filled in and a hollow kept copy; its A
 * is left as the program passed it. The region's mend fills that copy in
 * the replacement's first later ftla call, the first where it meets the
 * survivors (plain or fault tolerant), and ftla then copies the factors
 * into the replacement's A: before that call reads its arguments when it
 * starts afresh (its verdict; so the call reads the factors), at its end
 * when it joins the survivors' recovery of an interrupted call. From then
 * on, at the latest at the end of that call, the replacement's A holds its
 * factors, as the survivors' do. In place, the replacement's program
 * allocates A with room and declares it again before its factorization
 * call (as it runs from the top, it does); the hollow copy is then A's
 * own storage, the mend writes the factors and checksums straight into
 * it (nothing is copied), and A holds its factors from the same moment.
 *
 * Keep A allocated while ftla keeps its factors: call ftla_release_ before
 * freeing A or reusing its storage for other data (on a replacement, ftla
 * writes the factors into A at the meeting above).
 *
 * Lost inputs. The outputs a replacement did not receive (the arrays of
 * a call that returned FTLA_INFO_RESULT_LOST in it) are recorded there,
 * each as the program passed it: its local array's address and its
 * descriptor's nine entries (IPIV and TAU with A's). Every routine checks
 * the arrays it reads without overwriting them against that record before
 * computing, and the processes agree on the verdict: a call given such an
 * array - the LU factors of a plain ftla_pdgetrf_ that completed before
 * the replacement joined, passed to ftla_pdgetrs_ - returns
 * FTLA_INFO_INPUT_LOST on every process and computes nothing, never a
 * wrong result with INFO = 0. The program then computes the input again
 * (fills A from its own data and factors it again). See
 * FTLA_INFO_INPUT_LOST for what is checked and when an array stops being
 * lost. ftla knows only the arrays its own routines returned: data the
 * program derived from a lost output by itself is not tracked.
 *
 * Under checkpoint-on-failure (FTLA_RECOVERY=cof, or auto when no
 * replacement can be had) the survivors instead save their state and exit
 * with FTLA_EXIT_CHECKPOINTED inside the call; ftla launch starts the job
 * again and the call resumes from the files.
 *
 * Periodic checkpoints (FTLA_CHECKPOINT_EVERY=SECONDS, or auto with
 * FTLA_MTBF=HOURS for Young and Daly's interval; FTLA_KEEP_CHECKPOINTS=1
 * keeps them after a successful finish) outlive the loss of the whole
 * job, which no process survives (a lost node): the fault-tolerant call in
 * progress saves its committed state incrementally at a commit point,
 * and ftla launch, finding the job lost, resumes it from the newest
 * complete checkpoint (FTLA_RECOVERY=auto or cof) or exits with 78 and
 * names the command that resumes it (ftla launch --resume DIR).
 */


#ifndef FTLA_H
#define FTLA_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

// The exit code of a process whose job ends for a restart after a
// checkpoint-on-failure save (the survivors exit with it inside the
// interrupted call; `ftla launch` then starts the job again).
#define FTLA_EXIT_CHECKPOINTED 76

// INFO of a process failure ftla could not recover from (two processes
// lost in one process row, no replacement to be had, more repairs than
// allowed), the same on every surviving process. The reason is printed
// on stderr. The outputs are undefined.
#define FTLA_INFO_UNRECOVERABLE -10001

// INFO of a routine without fault tolerance (the plain `ftla_pd*_`
// routines) that lost a process: the grid was repaired (a replacement
// holds the lost process's place), but the routine's outputs are
// undefined everywhere. The survivors' next ftla call must be this one
// again, with its input: the replacement, which runs the program from
// the top, skips the calls completed before (they are in the status log)
// and meets the survivors there. Its inputs that were outputs of earlier
// calls are lost (those calls returned `FTLA_INFO_RESULT_LOST` in it):
// feed a plain routine from the program's own data, or use the
// fault-tolerant routines (a routine that reads such an input refuses
// it, `FTLA_INFO_INPUT_LOST`).
#define FTLA_INFO_PROCESS_LOST -10002

// INFO when a process cannot get the memory the routine needs (nothing
// was computed; the need is printed on stderr).
#define FTLA_INFO_NO_MEMORY -10003

// INFO, on a replacement process only, of a call that had completed
// before this process joined the grid (the program runs from the top in
// a replacement and makes its earlier calls again): the call returns at
// once without communicating; a fault-tolerant routine fills in its
// replicated outputs (TAU, IPIV, the CG's iteration count), but this
// process's part of the matrix results (A, X) was lost with the process
// it replaces and is left as the program passed it. The other processes
// hold their parts. Local: the survivors never see it. The matrix
// results are recorded as lost here, and a routine given one to read
// refuses it on every process (`FTLA_INFO_INPUT_LOST`). Not of
// `pdgetrf_ft_`, `pdgeqrf_ft_` and `pdpotrf_ft_`, whose factors ftla keeps
// protected: their re-run returns INFO = 0 and the replacement's A gets
// its factors when it meets the survivors (see the header's
// introduction); `pdposv_ft_`'s re-run returns this INFO for its X, but
// its A, whose factor is kept, is not lost and gets the factor the same
// way.
#define FTLA_INFO_RESULT_LOST -10005

// INFO of any other error (an MPI error, a checkpoint that cannot be
// used, a local error on another process); the reason is printed on
// stderr.
#define FTLA_INFO_ERROR -10004

// INFO of a call given an input whose part on some process was lost with
// a failed process: an output of an earlier call that completed before
// that process — a replacement — joined the grid (the call returned
// `FTLA_INFO_RESULT_LOST` there), or factors ftla keeps (from
// `pdgetrf_ft_`, `pdgeqrf_ft_`) that could not be rebuilt (more losses in
// one process row between two ftla calls than their checksums
// tolerate). The same on every process; nothing was computed; the
// argument and the process are printed on stderr.
//
// ftla knows such an array as the program passed it to that earlier call:
// its local array's address and its descriptor's nine entries (for IPIV
// and TAU, A's descriptor). Lost are the arrays the call overwrites with
// its results on that process — a plain factorization's A, a solve's B,
// `pdcg_ft_`'s X, `pdgels_ft_`'s A and B — and, of a plain factorization,
// IPIV or TAU too (the fault-tolerant ones fill those in on a
// replacement). Every routine, plain or fault tolerant, checks the arrays
// it reads without overwriting them — the solves' A and IPIV or TAU,
// `pdcg_ft_`'s A and B — before it computes, and the processes agree on
// the verdict. An array a routine overwrites with its results (a
// factorization's A, a solve's B, CG's X) is the program's data for that
// call and is not checked (a
// program that reuses its storage fills it again first, which ftla cannot
// tell from a lost output): do not pass a lost output there. An array is
// no longer lost once a routine wrote its results into it on that
// process: after this INFO, fill A again from the program's data and
// factor it again. The refusal is recorded in the status log like an
// argument error, so a later replacement running the program from the
// top gets it too.
#define FTLA_INFO_INPUT_LOST -10006

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// Starts MPI and ftla on first use, then returns this process's number
// and the number of processes (as `Cblacs_pinfo`).
//
// * `mypnum` (local output): this process's rank in `MPI_COMM_WORLD`;
//   once there is a grid — in a spawned replacement from the start — its
//   grid rank (a replacement: the one it took over; grid ranks are the
//   first world ranks, so nothing changes for the others).
// * `nprocs` (output): the number of processes of the job (grid and hot
//   spares); once there is a grid, its size plus the spares left (after
//   a repair the world holds dead processes). After `Cftla_gridexit` both
//   stay as the grid left them.
//
// A replacement process (spawned by a repair) joins the survivors' grid
// inside this call. Both are -1 when MPI or ftla could not start (the
// reason is printed on stderr): bad `FTLA_RECOVERY`/`FTLA_KILL` settings
// or an MPI that does not start.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void Cftla_pinfo(int *mypnum,
                 int *nprocs);

// Builds the fault-tolerant `nprow`×`npcol` grid (as `Cblacs_gridinit`;
// collective over every process of the job).
//
// * `ictxt` (global output): the grid's context, for descriptors
//   (`DESC[1]`) and the other functions; -1 on an error, whose reason is
//   printed on stderr (a bad shape, more processes asked for than the job
//   has, an order other than row-major, a second grid).
// * `order` (global input): `"Row"` (or `"R"`, or NULL): grid rank
//   `r` sits at process row `r / npcol`, column `r % npcol`. Column-major
//   order is not offered.
// * `nprow`, `npcol` (global input): the shape.
//
// Processes past `nprow*npcol` are hot spares: they park inside this call
// (sleeping between polls) and either take over a lost process's place —
// the call then returns in them as in a replacement — or, when the job
// ends (`Cftla_gridexit`/`Cftla_exit` on the grid), exit with status 0
// without returning. A job restarted after a checkpoint-on-failure save
// reads its checkpoints here (an unusable checkpoint ends the job with
// the reason, the same on every process).
//
// ftla makes one grid per run (a second call returns -1): after
// `Cftla_gridexit` the spares have left, and after a repair the world
// holds dead processes, so no other grid can be built from it.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void Cftla_gridinit(int *ictxt,
                    const char *order,
                    int nprow,
                    int npcol);

// The grid's shape and this process's place in it (as
// `Cblacs_gridinfo`). The same after a repair: a replacement holds the
// lost process's row and column. All -1 when `ictxt` is not a live grid.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void Cftla_gridinfo(int ictxt,
                    int *nprow,
                    int *npcol,
                    int *myrow,
                    int *mycol);

// 1 when this process took over a lost process's place in the grid (a
// spawned replacement or a promoted hot spare), else 0 (also for a
// context that is not live).
//
// A replacement ran `main` from the top: its local parts of the results
// of calls that completed before it joined are lost (see the header's
// introduction).
int Cftla_is_replacement(int ictxt);

// The Fortran handle (`MPI_Fint`) of the grid's communicator, all of its
// processes in grid-rank order, for the program's own MPI calls (C:
// `MPI_Comm c = MPI_Comm_f2c(Cftla_comm_f(ictxt));`). -1 when `ictxt` is
// not a live grid.
//
// A repair replaces the communicator: get it again after a call that
// recovered from a failure. A process failure inside the program's own
// MPI calls is the program's to handle; ftla repairs inside its calls.
int Cftla_comm_f(int ictxt);

// Frees the grid (collective over the grid, as `Cblacs_gridexit`): a
// barrier, then the parked hot spares are released (they exit).
void Cftla_gridexit(int ictxt);

// Ends ftla (as `Cblacs_exit`). `notdone = 0`: frees a grid still in use
// and finishes MPI; the program must not call MPI afterwards. Any other
// value: frees the grid only, MPI stays usable (finish it yourself).
//
// After a failure was repaired, MPI cannot be finalized (Open MPI hangs
// on the dead peers): the process then ends without MPI's exit-time
// clean-up when the program exits. Under `ftla launch`, every process's
// exit status is reported to the launcher: the job's exit code is 0 when
// every process returned 0 from `main`, 1 otherwise.
void Cftla_exit(int notdone);

// The number of rows or columns of a distributed matrix that process
// `*iproc` owns (ScaLAPACK `NUMROC`): `*n` rows or columns in blocks of
// `*nb`, the first block on process `*isrcproc`, over `*nprocs`
// processes. All arguments (global) except `iproc` (local). 0 when `*n`,
// `*nb` or `*nprocs` is out of range.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
int ftla_numroc_(const int *n,
                 const int *nb,
                 const int *iproc,
                 const int *isrcproc,
                 const int *nprocs);

// Fills a descriptor for an `*m`×`*n` matrix in `*mb`×`*nb` blocks, the
// first block on process (`*irsrc`, `*icsrc`), over the grid `*ictxt`,
// with local leading dimension `*lld` (ScaLAPACK `DESCINIT`).
//
// * `desc` (output): the 9 integers `DTYPE=1, CTXT, M, N, MB, NB, RSRC,
//   CSRC, LLD`.
// * `info` (output): 0, or `-i` when argument `i` is wrong (2 `M` … 9
//   `LLD`; 8 when `*ictxt` is not a live grid). As in ScaLAPACK the
//   descriptor is filled even then, `LLD` raised to its smallest valid
//   value.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_descinit_(int *desc,
                    const int *m,
                    const int *n,
                    const int *mb,
                    const int *nb,
                    const int *irsrc,
                    const int *icsrc,
                    const int *ictxt,
                    const int *lld,
                    int *info);

// Fault-tolerant QR factorization `A = Q·R` with ScaLAPACK `PDGEQRF`'s
// arguments and results: R on and above the diagonal of A, the
// Householder vectors below it, TAU.
//
// * `m`, `n` (global input): the size of the leading submatrix factored.
// * `a` (local input/output): the local array, LLD_A × LOCc(N_A).
// * `ia`, `ja` (global input): must be 1.
// * `desca` (global and local input): A's descriptor; MB_A = NB_A, the
//   first block on process (0, 0), at least two process columns.
// * `tau` (local output): LOCc(JA+MIN(M,N)-1) Householder scalars of the
//   local columns.
// * `work`, `lwork` (local): as ScaLAPACK, LWORK ≥ NB_A·(Mp0 + Nq0 +
//   NB_A); `lwork = -1` is a workspace query (WORK(1) receives the
//   minimum). ftla allocates its own storage: the copy of the factors it
//   keeps, with their checksum columns (none for an A declared in place).
// * `info` (global output): 0; -i or -(i·100+j) for a bad argument i (entry
//   j of a descriptor), the same on every process (but for a workspace
//   query, which is local: a process-dependent check such as LLD gives
//   its INFO on the processes it fails on only), among them, for an A
//   declared with `ftla_in_place_`, -3 when its LSIZE is less than
//   `ftla_kept_lsize_` says, -603 or -604 when M_A ≠ M or N_A ≠ N (the
//   whole of A is factored in place) and -609 when LLD_A ≠ max(1,
//   LOCr(M));
//   `FTLA_INFO_UNRECOVERABLE`, `FTLA_INFO_NO_MEMORY`, `FTLA_INFO_ERROR`.
//
// The factors stay protected after the call: ftla keeps its copy of
// them, their checksums and TAU for this A and DESCA, for `pdormqr_ft_`,
// until `ftla_release_`, a later call that overwrites this A, or the
// grid's exit (memory: about (1 + 4/Q) × A's local array). For an A
// declared with `ftla_in_place_`, the factorization works in A and keeps
// the factors there, with their checksums after them: ftla holds only
// the left-factor sums (about 2/Q) and TAU. See the header's
// introduction.
//
// # Fault tolerance
// A process lost during the call is repaired inside it: the grid is
// repaired (a hot spare or a spawned replacement takes the lost place),
// the lost blocks are rebuilt from the checksums at the last committed
// step, and the factorization goes on; INFO = 0 and the result is the
// failure-free one. A replacement process runs the program from `main`;
// its call of `pdgeqrf_ft_` (with an A of the same shape, whatever its
// values) joins the survivors' recovery. More losses in one process row
// than the checksums rebuild (two; F + 1 with `FTLA_LAYOUT=rotating`)
// give `FTLA_INFO_UNRECOVERABLE` on every survivor. A process lost after
// the call is rebuilt into the kept factors; on its replacement, the
// re-run of a `pdgeqrf_ft_` that completed before it joined returns at
// once with INFO = 0 and TAU filled in, and its A holds its factors again
// from its next ftla call, the one that meets the survivors (before that
// call reads its arguments, or at its end when it joins an interrupted
// call).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdgeqrf_ft_(const int *m,
                 const int *n,
                 double *a,
                 const int *ia,
                 const int *ja,
                 const int *desca,
                 double *tau,
                 double *work,
                 const int *lwork,
                 int *info);

// QR factorization without fault tolerance (ScaLAPACK `PDGEQRF`), ftla's
// own: arguments and results as `pdgeqrf_ft_`; one process column is
// allowed. A process lost during the call: the grid is repaired and INFO
// = `FTLA_INFO_PROCESS_LOST` (A and TAU undefined).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_pdgeqrf_(const int *m,
                   const int *n,
                   double *a,
                   const int *ia,
                   const int *ja,
                   const int *desca,
                   double *tau,
                   double *work,
                   const int *lwork,
                   int *info);

// Fault-tolerant LU factorization with partial pivoting `P·A = L·U`,
// ScaLAPACK `PDGETRF`'s arguments and results: L (unit diagonal not
// stored) and U in A, the pivots in IPIV.
//
// * `m`, `n`, `a`, `ia`, `ja`, `desca`: as in `pdgeqrf_ft_`.
// * `ipiv` (local output): LOCr(M_A) + MB_A ints; entry i (of a local row
//   whose global row g < min(M, N)) is the 1-based global row interchanged
//   with row g, as in ScaLAPACK.
// * `info` (global output): as `pdgeqrf_ft_`, and INFO = i > 0 when
//   U(i,i) is exactly zero (the first such), the same on every process;
//   as PDGETRF, A and IPIV then hold the factors (kept as any others:
//   a solve with them divides by the zero pivot, as PDGETRS does).
//
// The factors stay protected after the call, as `pdgeqrf_ft_`'s: ftla
// keeps its copy of them, their checksums and the pivots for this A and
// DESCA, for `pdgetrs_ft_` (memory: about (1 + 4/Q) × A's local array),
// or, for an A declared with `ftla_in_place_`, keeps them in A itself
// (ftla holds the left-factor sums, about 2/Q, and the pivots).
//
// # Fault tolerance
// As `pdgeqrf_ft_`: the lost process's L, U, checksums and pivots are
// rebuilt at the last committed step; the pivots are those of a
// failure-free run. On a replacement, the re-run of a `pdgetrf_ft_` that
// completed before it joined returns at once with the survivors' INFO
// (0, or i > 0 for a singular U) and IPIV filled in; its A holds L and
// U again from its next ftla call (see `pdgeqrf_ft_`).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdgetrf_ft_(const int *m,
                 const int *n,
                 double *a,
                 const int *ia,
                 const int *ja,
                 const int *desca,
                 int *ipiv,
                 int *info);

// LU factorization without fault tolerance (ScaLAPACK `PDGETRF`),
// ftla's own: as `pdgetrf_ft_`; one process column is allowed. A process
// lost during the call: the grid is repaired and INFO =
// `FTLA_INFO_PROCESS_LOST` (A and IPIV undefined).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_pdgetrf_(const int *m,
                   const int *n,
                   double *a,
                   const int *ia,
                   const int *ja,
                   const int *desca,
                   int *ipiv,
                   int *info);

// Fault-tolerant Cholesky factorization `A = L·Lᵀ` of the N×N symmetric
// positive definite A, ScaLAPACK `PDPOTRF`'s arguments with UPLO = L:
// L in A's lower triangle, its strictly upper triangle not referenced
// (left as given).
//
// * `uplo` (global input): `"L"` (`"U"` is refused: INFO = -1).
// * `n` (global input): the order of A (its strictly upper triangle is
//   not referenced by the factorization but kept by checksums of its
//   own, so a replacement gets it back; whatever it holds, NaN included,
//   spoils no rebuild of L).
// * `a`, `ia`, `ja`, `desca` (local input/output): A; IA = JA = 1,
//   MB_A = NB_A, the first block on process (0, 0), Q ≥ 2.
// * `info` (global output): 0; -i or -(i·100 + j) for a bad argument
//   (ScaLAPACK's positions), the same on every process; k > 0: the
//   leading minor of order k is not positive definite (no factors kept;
//   A as given, or, declared with `ftla_in_place_`, partly factored as
//   PDPOTRF leaves it); `FTLA_INFO_UNRECOVERABLE`, `FTLA_INFO_NO_MEMORY`,
//   `FTLA_INFO_ERROR`.
//
// The factor stays protected after the call, as `pdgetrf_ft_`'s: ftla
// keeps its copy of it with its checksums for this A and DESCA, for
// `pdpotrs_ft_`, or keeps it in A itself when A was declared with
// `ftla_in_place_`.
//
// # Fault tolerance
// As `pdgetrf_ft_`: checksums of the lower triangle follow the
// symmetric update, a lost process's blocks (L, the trailing matrix, the
// checksums, and its part of the upper triangle) are rebuilt at the last
// committed step (kill points `R@potrf:STEP:PHASE`), and the result is
// the failure-free one. On a replacement, the re-run of a `pdpotrf_ft_`
// that completed before it joined returns at once with INFO = 0, and its
// A holds L again from its next ftla call.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdpotrf_ft_(const char *uplo,
                 const int *n,
                 double *a,
                 const int *ia,
                 const int *ja,
                 const int *desca,
                 int *info);

// Solves `A·X = B` or `Aᵀ·X = B` with the factors from `pdgetrf_ft_` or
// `ftla_pdgetrf_` (ScaLAPACK `PDGETRS`'s arguments), as they are in A and
// IPIV (`pdgetrs_ft_` solves with the kept factors, and survives a loss).
//
// * `trans` (global input): `"N"`, or `"T"`/`"C"` for the transposed system.
// * `n`, `nrhs` (global input): the order of A and the number of
//   right-hand sides.
// * `a`, `ia`, `ja`, `desca` (input): the factors; IA = JA = 1, MB_A = NB_A.
// * `ipiv` (local input): the pivots from the factorization.
// * `b`, `ib`, `jb`, `descb` (local input/output): the right-hand sides on
//   entry, the solution on exit; IB = JB = 1, B's rows in A's row blocks
//   (MB_B = MB_A).
// * `info` (global output): as the factorizations;
//   `FTLA_INFO_INPUT_LOST` on every process when A or IPIV is an output
//   that a replacement process did not receive — the factors of an
//   `ftla_pdgetrf_` that completed before it joined — and nothing is
//   computed (B, overwritten with the solution, is the program's data).
//
// No fault tolerance: a process lost during the solve gives
// `FTLA_INFO_PROCESS_LOST` once the grid is repaired. Factors of
// `pdgetrf_ft_` are kept protected between calls, and a replacement's A
// holds them again when this call starts; those of `ftla_pdgetrf_` are
// not: a process lost after that factorization leaves its replacement
// without its part of them, which this routine refuses
// (`FTLA_INFO_INPUT_LOST`): factor again, then solve.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_pdgetrs_(const char *trans,
                   const int *n,
                   const int *nrhs,
                   const double *a,
                   const int *ia,
                   const int *ja,
                   const int *desca,
                   const int *ipiv,
                   double *b,
                   const int *ib,
                   const int *jb,
                   const int *descb,
                   int *info);

// Fault-tolerant conjugate gradients for `A·x = b`, A dense symmetric
// positive definite (ftla's own routine; ScaLAPACK has none), with
// ScaLAPACK-style arguments:
// `PDCG_FT(N, A, IA, JA, DESCA, B, IB, JB, DESCB, X, IX, JX, DESCX, TOL,
// MAXIT, ITER, RESID, INFO)`.
//
// * `n` (global input): the order of A.
// * `a`, `ia`, `ja`, `desca` (local input): A; IA = JA = 1, MB_A = NB_A,
//   the first block on process (0, 0), at least two process columns.
// * `b`, `ib`, `jb`, `descb` (local input): the N×1 right-hand side, in
//   A's row blocks (MB_B = MB_A).
// * `x`, `ix`, `jx`, `descx` (local input/output): the initial guess on
//   entry, the solution on exit; laid out like B.
// * `tol` (global input): stop when ‖r‖₂ ≤ TOL·‖b‖₂.
// * `maxit` (global input): at most this many iterations.
// * `iter` (global output): the iterations run.
// * `resid` (global output): the true relative residual ‖b − A·x‖₂/‖b‖₂.
// * `info` (global output): 0 when converged; MAXIT + 1 when not
//   converged within MAXIT iterations; k in 1..MAXIT when A was found not
//   positive definite at iteration k; negative as the factorizations;
//   `FTLA_INFO_INPUT_LOST` on every process when A or B is an output
//   that a replacement process did not receive (nothing computed).
//
// # Fault tolerance
// A process lost during the solve is repaired inside it: A's lost blocks
// are rebuilt from the checksums, the vectors copied from the other
// processes of its row, and the iteration goes on from the last
// committed one (the iterates of a failure-free run).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdcg_ft_(const int *n,
              const double *a,
              const int *ia,
              const int *ja,
              const int *desca,
              const double *b,
              const int *ib,
              const int *jb,
              const int *descb,
              double *x,
              const int *ix,
              const int *jx,
              const int *descx,
              const double *tol,
              const int *maxit,
              int *iter,
              double *resid,
              int *info);

// Cholesky factorization of the N×N symmetric positive definite A
// (ScaLAPACK `PDPOTRF`), ftla's own, not fault tolerant.
//
// * `uplo` (global input): `"L"`: A's lower triangle is read and L
//   (A = L·Lᵀ) written there; `"U"`: the upper one, and U (A = Uᵀ·U).
//   The other triangle is not referenced.
// * `n` (global input): the order of A.
// * `a`, `ia`, `ja`, `desca` (local input/output): A; IA = JA = 1,
//   MB_A = NB_A, the first block on process (0, 0).
// * `info` (global output): 0; `-i` or `-(i·100 + j)` for a bad argument
//   (ScaLAPACK's positions); `k > 0`: the leading minor of order k is not
//   positive definite, and the factorization stopped there (as
//   ScaLAPACK's); `FTLA_INFO_PROCESS_LOST` when a process was lost during
//   the call (the grid repaired, A undefined).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_pdpotrf_(const char *uplo,
                   const int *n,
                   double *a,
                   const int *ia,
                   const int *ja,
                   const int *desca,
                   int *info);

// Solves `A·X = B` with the Cholesky factor from `ftla_pdpotrf_`
// (ScaLAPACK `PDPOTRS`), ftla's own, not fault tolerant.
//
// * `uplo` (global input): the triangle of A holding the factor, `"L"` or
//   `"U"` (as given to the factorization).
// * `n`, `nrhs` (global input): the order of A and the number of
//   right-hand sides.
// * `a`, `ia`, `ja`, `desca` (local input): the factor; IA = JA = 1,
//   MB_A = NB_A.
// * `b`, `ib`, `jb`, `descb` (local input/output): the right-hand sides
//   on entry, the solution on exit; IB = JB = 1, B's rows in A's row
//   blocks (MB_B = MB_A).
// * `info` (global output): as `ftla_pdpotrf_`; `FTLA_INFO_INPUT_LOST`
//   on every process when A is a factor that a replacement process did
//   not receive (nothing computed: factor again).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_pdpotrs_(const char *uplo,
                   const int *n,
                   const int *nrhs,
                   const double *a,
                   const int *ia,
                   const int *ja,
                   const int *desca,
                   double *b,
                   const int *ib,
                   const int *jb,
                   const int *descb,
                   int *info);

// Factors the N×N symmetric positive definite A and solves `A·X = B`
// (ScaLAPACK `PDPOSV`), ftla's own, not fault tolerant: the arguments of
// `ftla_pdpotrs_`, A overwritten with the factor as `ftla_pdpotrf_`
// does; INFO = k > 0 when the leading minor of order k is not positive
// definite (B then unchanged).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_pdposv_(const char *uplo,
                  const int *n,
                  const int *nrhs,
                  double *a,
                  const int *ia,
                  const int *ja,
                  const int *desca,
                  double *b,
                  const int *ib,
                  const int *jb,
                  const int *descb,
                  int *info);

// Fault-tolerant solve of `A·X = B` or `Aᵀ·X = B` with the LU factors
// ftla keeps for A (ScaLAPACK `PDGETRS`'s arguments): those of the last
// `pdgetrf_ft_` given this A with this DESCA.
//
// * `trans` (global input): `"N"`, or `"T"`/`"C"` for the transposed system.
// * `n` (global input): the order of A, the factorization's.
// * `nrhs` (global input): the number of right-hand sides, ≥ 0.
// * `a`, `ia`, `ja`, `desca` (local input): A as passed to `pdgetrf_ft_`
//   (the same local array and descriptor), holding what it returned;
//   IA = JA = 1. ftla solves with its own protected copy of the factors
//   and checks that A still holds them (one pass over the local array);
//   for factors kept in place (`ftla_in_place_`), it solves with A itself
//   and checks A's fingerprint (factors and checksums) instead.
// * `ipiv` (local input): the pivots `pdgetrf_ft_` returned.
// * `b`, `ib`, `jb`, `descb` (local input/output): the N×NRHS right-hand
//   sides on entry, the solution on exit; IB = JB = 1, B's rows in A's row
//   blocks (MB_B = MB_A) and, beyond PDGETRS, NB_B = MB_B and B's first
//   block on process (0, 0) (B gets checksum columns laid out as A's).
// * `info` (global output): 0; -i or -(i·100+j) for a bad argument i,
//   the same on every process, among them INFO = -4 (A) when ftla keeps
//   no LU factors for A ("factor A with pdgetrf_ft_ first": never
//   factored, released, or factored again since by another routine) or
//   when A changed since `pdgetrf_ft_` returned, and INFO = -8 when IPIV
//   did; `FTLA_INFO_INPUT_LOST` when the kept factors could not be
//   rebuilt after a failure (more losses in one process row than the
//   checksums tolerate between two ftla calls; nothing computed);
//   `FTLA_INFO_UNRECOVERABLE`, `FTLA_INFO_NO_MEMORY`, `FTLA_INFO_ERROR`;
//   on a replacement, `FTLA_INFO_RESULT_LOST` for a solve that completed
//   before it joined (its part of X is lost: B is recorded as lost).
//
// # Fault tolerance
// A process lost at any time after `pdgetrf_ft_` — during the program's
// own work, in another ftla call, or in this solve — is repaired: its
// part of the kept factors is rebuilt from their checksums, and B is
// protected by checksum columns during the solve (kill points
// `R@getrs:STEP:PHASE`). INFO = 0 and X is the failure-free one, on the
// replacement too. A process lost between two calls is found at this
// call's start: the grid is repaired there, the replacement (running the
// program from the top, its `pdgetrf_ft_` returning at once) meets the
// survivors in this call, its part of the factors is rebuilt and copied
// into its A, and the solve goes on. `FTLA_INFO_PROCESS_LOST` is not
// returned.
//
// Memory per process during the call: B's copy and its protected copy
// with checksum columns (about 2 × B's local part plus 2/Q of it), besides
// the kept factors.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdgetrs_ft_(const char *trans,
                 const int *n,
                 const int *nrhs,
                 const double *a,
                 const int *ia,
                 const int *ja,
                 const int *desca,
                 const int *ipiv,
                 double *b,
                 const int *ib,
                 const int *jb,
                 const int *descb,
                 int *info);

// Fault-tolerant solve of `A·X = B` with the Cholesky factor ftla keeps
// for A (ScaLAPACK `PDPOTRS`'s arguments, UPLO = L): that of the last
// `pdpotrf_ft_` given this A with this DESCA.
//
// * `uplo` (global input): `"L"` (`"U"` is refused: INFO = -1).
// * `n`, `nrhs` (global input): the order of A (the factorization's) and
//   the number of right-hand sides, ≥ 0.
// * `a`, `ia`, `ja`, `desca` (local input): A as passed to `pdpotrf_ft_`,
//   holding what it returned (checked, as `pdgetrs_ft_` checks its A).
// * `b`, `ib`, `jb`, `descb` (local input/output): as `pdgetrs_ft_`'s.
// * `info` (global output): as `pdgetrs_ft_`'s, INFO = -4 (A) when ftla
//   keeps no Cholesky factor for A or A changed since.
//
// # Fault tolerance
// As `pdgetrs_ft_`: a process lost after `pdpotrf_ft_` or in this solve
// is repaired, its part of the kept factor rebuilt and B protected by
// checksum columns (kill points `R@potrs:STEP:PHASE`); X is the
// failure-free one, on the replacement too.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdpotrs_ft_(const char *uplo,
                 const int *n,
                 const int *nrhs,
                 const double *a,
                 const int *ia,
                 const int *ja,
                 const int *desca,
                 double *b,
                 const int *ib,
                 const int *jb,
                 const int *descb,
                 int *info);

// Fault-tolerant `C = Q·C` or `C = Qᵀ·C` with the QR factors ftla keeps
// for A (ScaLAPACK `PDORMQR`'s arguments, SIDE = 'L'): those of the last
// `pdgeqrf_ft_` given this A with this DESCA.
//
// * `side` (global input): `"L"`; any other value gives INFO = -1 (Q
//   from the right is not offered).
// * `trans` (global input): `"N"` applies Q, `"T"` applies Qᵀ.
// * `m` (global input): the rows of C, the factorization's M.
// * `n` (global input): the columns of C, ≥ 0.
// * `k` (global input): the number of reflectors, min(M, N) of the
//   factorization (all of them).
// * `a`, `ia`, `ja`, `desca` (local input): A as passed to `pdgeqrf_ft_`
//   (the same local array and descriptor), holding what it returned;
//   IA = JA = 1. ftla applies its own protected copy of the reflectors
//   and checks that A still holds them (in place: applies A itself, and
//   checks its fingerprint, as `pdgetrs_ft_`).
// * `tau` (local input): the scalars `pdgeqrf_ft_` returned.
// * `c`, `ic`, `jc`, `descc` (local input/output): the M×N matrix C,
//   overwritten by op(Q)·C; IC = JC = 1, C's rows in A's row blocks and,
//   beyond PDORMQR, NB_C = MB_C = MB_A and the first block on process
//   (0, 0) (C gets checksum columns laid out as A's).
// * `work`, `lwork` (local): LWORK ≥ max(NB_A·(NB_A−1)/2, (MpC0 +
//   NqC0)·NB_A) + NB_A², PDORMQR's; `lwork = -1` is a workspace query
//   (WORK(1) receives the minimum). ftla allocates its own scratch.
// * `info` (global output): as `pdgetrs_ft_`, the kept factors at A's
//   position (INFO = -6: none kept, "factor A with pdgeqrf_ft_ first", or
//   A changed since) and TAU's (-10: changed since);
//   `FTLA_INFO_INPUT_LOST` when they could not be rebuilt.
//
// # Fault tolerance
// As `pdgetrs_ft_`: the kept factors are rebuilt after a failure, and C
// is protected by checksum columns during the call (kill points
// `R@ormqr:STEP:PHASE`); INFO = 0 and the failure-free op(Q)·C.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdormqr_ft_(const char *side,
                 const char *trans,
                 const int *m,
                 const int *n,
                 const int *k,
                 const double *a,
                 const int *ia,
                 const int *ja,
                 const int *desca,
                 const double *tau,
                 double *c,
                 const int *ic,
                 const int *jc,
                 const int *descc,
                 double *work,
                 const int *lwork,
                 int *info);

// Fault-tolerant `PDPOSV` (UPLO = L): factors the N×N symmetric positive
// definite A as `pdpotrf_ft_` does and solves `A·X = B` with the factor
// as `pdpotrs_ft_` does, ScaLAPACK `PDPOSV`'s arguments.
//
// * `uplo` (global input): `"L"` (`"U"` is refused: INFO = -1).
// * `n`, `nrhs` (global input): the order of A and the number of
//   right-hand sides, ≥ 0.
// * `a`, `ia`, `ja`, `desca` (local input/output): A as `pdpotrf_ft_`
//   takes it; on exit L in its lower triangle. The factor stays
//   protected after the call, as `pdpotrf_ft_`'s (for `pdpotrs_ft_`
//   with this A; in A itself when it was declared with
//   `ftla_in_place_`).
// * `b`, `ib`, `jb`, `descb` (local input/output): the N×NRHS right-hand
//   sides on entry, X on exit; as `pdpotrs_ft_`'s B.
// * `info` (global output): 0; -i or -(i·100+j) for a bad argument i,
//   the same on every process (every argument, B's included, is checked
//   before A is touched, as PDPOSV does); k > 0 when the leading minor
//   of order k is not positive definite (as `pdpotrf_ft_`; B unchanged);
//   `FTLA_INFO_UNRECOVERABLE`, `FTLA_INFO_NO_MEMORY`, `FTLA_INFO_ERROR`;
//   on a replacement, `FTLA_INFO_RESULT_LOST` for a call that completed
//   before it joined (its part of X is lost: B is recorded as lost; its
//   A gets the factor back from its next ftla call, as after
//   `pdpotrf_ft_`).
//
// # Fault tolerance
// The factorization runs as `pdpotrf_ft_` (kill points `R@potrf:…`) and
// the solve as `pdpotrs_ft_` (kill points `R@potrs:…`): a process lost
// in either, or before the call, is repaired inside the call, INFO = 0
// and X is the failure-free one.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdposv_ft_(const char *uplo,
                const int *n,
                const int *nrhs,
                double *a,
                const int *ia,
                const int *ja,
                const int *desca,
                double *b,
                const int *ib,
                const int *jb,
                const int *descb,
                int *info);

// Fault-tolerant least squares with ScaLAPACK `PDGELS`'s arguments, TRANS
// = 'N': for M ≥ N, X minimising ‖A·X − B‖₂; for M < N, the minimum-norm
// solution of A·X = B (A of full rank).
//
// * `trans` (global input): `"N"`; any other value gives INFO = -1.
// * `m`, `n` (global input): the rows and columns of A.
// * `nrhs` (global input): the columns of B, ≥ 0.
// * `a`, `ia`, `ja`, `desca` (local input/output): A; IA = JA = 1, MB_A =
//   NB_A, the first block on process (0, 0), at least two process
//   columns. On exit, for M ≥ N, its QR factors as PDGELS leaves them
//   (as `pdgeqrf_ft_`, without TAU); for M < N, A as on entry (ftla
//   factors Aᵀ in its own storage). These factors are not kept after the
//   call (factor with `pdgeqrf_ft_` to keep them for `pdormqr_ft_`).
// * `b`, `ib`, `jb`, `descb` (local input/output): max(M, N)×NRHS; on
//   entry B in rows 1..M; on exit X in rows 1..N (for M ≥ N, rows N+1..M
//   hold the residual's components: the residual norm of column j is
//   ‖B(N+1:M, j)‖₂). IB = JB = 1, B's rows in A's row blocks and, beyond
//   PDGELS, NB_B = MB_B = MB_A and the first block on process (0, 0).
// * `work`, `lwork` (local): LWORK ≥ PDGELS's minimum (LTAU + max(LWF,
//   LWS)); `lwork = -1` is a workspace query (WORK(1) receives that
//   minimum). ftla allocates its own scratch: the protected factors
//   (about (1 + 4/Q) × A's local part; an `ftla_in_place_` declaration
//   of A is not used here), B's protected copy (about
//   (2 + 2/Q) × B's local part) and a step's panel, for the call.
// * `info` (global output): 0; -i or -(i·100+j) for a bad argument, the
//   same on every process; `FTLA_INFO_UNRECOVERABLE`,
//   `FTLA_INFO_NO_MEMORY`, `FTLA_INFO_ERROR`; on a replacement,
//   `FTLA_INFO_RESULT_LOST` for a call that completed before it joined
//   (its part of A and X is lost: both are recorded as lost).
//
// # Fault tolerance
// The factorization runs as `pdgeqrf_ft_` (kill points `R@qr:…`) and the
// solve on its protected factors with B protected by checksum columns
// (kill points `R@gels:STEP:PHASE`): a process lost in either is
// repaired inside the call, INFO = 0 and X is the failure-free one. A
// process lost before the call is found and repaired at its start, and
// the call goes on with the replacement (see `pdgetrs_ft_`).
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void pdgels_ft_(const char *trans,
                const int *m,
                const int *n,
                const int *nrhs,
                double *a,
                const int *ia,
                const int *ja,
                const int *desca,
                double *b,
                const int *ib,
                const int *jb,
                const int *descb,
                double *work,
                const int *lwork,
                int *info);

// The number of doubles this process's local array A must hold for
// `pdgetrf_ft_` or `pdgeqrf_ft_` to keep their factors in place, in A
// itself (local; no communication, not recorded in the status log).
//
// * `m`, `n` (global input): the size of the submatrix the factorization
//   will factor (its M and N).
// * `desca` (global and local input): A's descriptor, as the
//   factorization will get it; beyond the factorization's checks, M_A =
//   M and N_A = N (the whole of A is factored: the checksum columns
//   follow column N, where a wider A would hold the program's columns),
//   and LLD_A must be max(1, LOCr(M)) (A's local rows, no padding: the
//   checksum columns follow A's columns with the same leading
//   dimension).
// * `lsize` (local output): LLD_A × LOCc(N + padding + checksum
//   columns): A's local array LLD_A × LOCc(N), then room for the
//   checksums; 0 on an error.
// * `info` (local output): 0; -i or -(i·100+j) for a bad argument,
//   numbered as in `pdgetrf_ft_`'s argument list (-1 for M, -2 for N,
//   -(600+j) for entry j of DESCA: -603 or -604 for M_A ≠ M or N_A ≠
//   N, -609 for an LLD_A with padding);
//   local: a process-dependent check gives its INFO on the processes it
//   fails on only.
//
// The room holds the checksum columns of the layout the factorization
// will use (`FTLA_LAYOUT`, `FTLA_CHECKSUMS`: query with the same
// environment): with the default reverse-neighboring layout the checksum
// pairs, two block columns per group of Q block columns (Q process
// columns), about 2/Q of A's local array; with the rotating layout and F
// checksums, F block columns per group of Q − F, about F/(Q − F); a block
// column more where the cyclic distribution rounds up; and the zero
// padding of a last partial block column. See the header's introduction
// for the memory of both paths.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_kept_lsize_(const int *m,
                      const int *n,
                      const int *desca,
                      int64_t *lsize,
                      int *info);

// Declares that the local array A holds LSIZE doubles, room for the
// factors' checksums after A's local array (local; no communication,
// not recorded in the status log): the next `pdgetrf_ft_` or
// `pdgeqrf_ft_` given this A with this DESCA (IA = JA = 1) works in A
// itself and keeps the factors there, protected, instead of in a copy.
//
// * `a` (local input): the local array; NULL only where LSIZE = 0.
// * `desca` (global and local input): its descriptor, as the
//   factorizations will get it.
// * `lsize` (local input): the doubles at A, at least what
//   `ftla_kept_lsize_` says for the factorization's M, N and DESCA.
// * `info` (local output): 0; -1, -2 or -3 for a null A (with LSIZE >
//   0), a null DESCA, or a null or negative LSIZE (nothing declared);
//   `FTLA_INFO_ERROR` when ftla could not start, -202 (DESCA's CTXT) when
//   there is no grid. May be NULL.
//
// The factorization checks the declaration with its arguments, and
// refuses it with INFO the same on every process: -3 (A) when LSIZE is
// less than `ftla_kept_lsize_`'s, -603 (M_A) or -604 (N_A) when A's
// descriptor is larger than the factored M × N (the whole of A must be
// factored: the checksums take the columns after N), -609 (LLD_A) when
// LLD_A ≠ max(1, LOCr(M)). Declare A on every process of the grid (a process that did
// not works on a copy, as without a declaration).
//
// Lifetime: the declaration stays with the array (this address and
// descriptor) until `ftla_release_(a, desca, &info)` or the grid's exit:
// every fault-tolerant factorization of A until then works in it. From
// that factorization until `ftla_release_`, A belongs to ftla: its
// leading LLD_A × LOCc(N) part holds the factors exactly as ScaLAPACK
// leaves them (read them freely), the rest the checksums; the program
// must not write to either, nor free A. A replacement process (running
// the program from the top) declares its A again before its
// factorization call.
//
// # Safety
// A points to LSIZE writable doubles that stay allocated until
// `ftla_release_` (or the grid's exit); every other pointer is null
// where this says it may be, or points to what the argument list says.
void ftla_in_place_(double *a,
                    const int *desca,
                    const int64_t *lsize,
                    int *info);

// The bytes ftla itself holds on this process for every factorization
// it keeps (local; no communication): for each, its copy of the factors
// and their checksum columns (none in place: they are in the program's
// A), the left-factor sums and the pivots or tau. 0 without a grid.
//
// * `bytes` (local output).
//
// # Safety
// `bytes` is null or points to an int64_t.
void ftla_kept_bytes_(int64_t *bytes);

// Releases the factors ftla keeps for the array A (local; no
// communication): those of the last `pdgetrf_ft_` or `pdgeqrf_ft_` given
// this `a` with this descriptor, and A's declaration in place
// (`ftla_in_place_`). ftla's copy of the factors and their checksums is
// freed (in place: A is the program's again, its leading part holding
// the factors, the rest the checksums); the caller's A keeps its
// content, but the fault-tolerant solves no longer take it
// (`pdgetrs_ft_`, `pdormqr_ft_` refuse it: factor A again first).
//
// * `a` (local input): the local array passed to the factorization.
// * `desca` (global input): the descriptor passed with it.
// * `info` (local output): 0 when factors were kept for A, or A was
//   declared in place, and are released now; 1 when neither (nothing
//   done); may be NULL.
//
// Call it before freeing A or reusing its storage for other data (on a
// replacement, ftla writes the factors into A when it meets the
// survivors), on every process of the grid at the same point of the
// program (between the same two ftla calls), as the factorization was: the
// processes compare their kept results when a replacement joins, and
// results kept on some processes only are refused everywhere. Kept
// factors are also released by a new factorization into the same array
// (any routine that overwrites A, plain or fault tolerant; a declaration
// in place stays until this call) and by `Cftla_gridexit`/`Cftla_exit`.
//
// # Safety
// Every pointer is null where this says it may be, or points to what
// the argument list says (arrays of ScaLAPACK's sizes).
void ftla_release_(const double *a,
                   const int *desca,
                   int *info);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* FTLA_H */
