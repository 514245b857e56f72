//! The factorizations and solvers with ScaLAPACK's argument lists: the
//! fault-tolerant `pdgeqrf_ft_`, `pdgetrf_ft_`, `pdpotrf_ft_`, `pdcg_ft_`,
//! and the plain `ftla_pdgeqrf_`, `ftla_pdgetrf_`, `ftla_pdgetrs_`.

use crate::call::{run, run_local, set_info, Protection, Routine, Work};
use crate::in_place::lend;
use crate::kept::{Declared, Factors, KeptFactors, Place};
use crate::lost::{Access, ArrayArg, ArrayKey};
use crate::matrix::{CheckedMatrix, MatrixArg};
use crate::solve_args::{check_nrhs, getrs_matrices, getrs_transpose, letter, null_part};
use crate::tools::get;
use blacs_ft::index::{indxl2g, numroc};
use blacs_ft::Scope;
use scalapack_ft::abft::{FtOptions, FtWorkspace};
use scalapack_ft::args::{arg_error, check_two_process_columns, pdcg, pdgeqrf, pdgetrf, pdgetrs, pdpotrf};
use scalapack_ft::cg::CgOptions;
use scalapack_ft::chol_ft::CholFactors;
use scalapack_ft::lu::Transpose;
use scalapack_ft::lu_ft::LuFactors;
use scalapack_ft::qr_ft::QrFactors;
use scalapack_ft::{cg_ft, drivers, lu, qr, DistMatrix, Error, Grid, Result};
use std::os::raw::{c_char, c_int};

/// The matrix a factorization works on: `(M, N, A, IA, JA, DESCA)` at the
/// head of `PxGEQRF`'s and `PxGETRF`'s argument lists (the same
/// positions in both).
pub(crate) fn factored(
    m: *const c_int,
    n: *const c_int,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
) -> MatrixArg {
    MatrixArg {
        name: "A",
        m: get(m),
        n: get(n),
        ia: get(ia),
        ja: get(ja),
        desc: desca,
        data: a,
        at: pdgeqrf::MATRIX_A,
        square_blocks: true,
    }
}

/// A factorization's checks of its matrix (two process columns for the
/// checksums of a fault-tolerant one).
pub(crate) fn check_factored(r: &Routine, arg: &MatrixArg, grid: &Grid, ictxt: c_int) -> Result<CheckedMatrix> {
    if r.protection == Protection::FaultTolerant {
        check_two_process_columns(r.name, pdgeqrf::DESCA, "A", grid)?;
    }
    arg.check(r.name, grid, ictxt)
}

/// ScaLAPACK's smallest LWORK of PDGEQRF (IA = JA = 1):
/// NB·(Mp0 + Nq0 + NB).
fn qr_lwork_min(grid: &Grid, c: &CheckedMatrix) -> usize {
    let nb = c.desc.nb();
    let mp0 = numroc(c.m, nb, grid.myrow() as usize, 0, grid.nprow() as usize);
    let nq0 = numroc(c.n, nb, grid.mycol() as usize, 0, grid.npcol() as usize);
    nb * (mp0 + nq0 + nb)
}

/// Copies the local TAU: entry `lj` is the scalar of the local column
/// `lj` (ScaLAPACK's TAU is distributed like A's columns).
fn export_tau(a: &DistMatrix, tau: &[f64], out: *mut f64) {
    if out.is_null() {
        return;
    }
    for lj in 0..a.local_cols() {
        if let Some(&t) = tau.get(a.global_col(lj)) {
            // SAFETY: TAU holds LOCc(JA+MIN(M,N)-1) doubles; global columns
            // below min(M, N) have local indices below that.
            unsafe { *out.add(lj) = t };
        }
    }
}

/// Copies the local IPIV: entry `li` is the 1-based global row
/// interchanged with the local row `li` (ScaLAPACK's IPIV is distributed
/// like A's rows).
fn export_ipiv(a: &DistMatrix, ipiv: &[i64], out: *mut c_int) {
    if out.is_null() {
        return;
    }
    for li in 0..a.local_rows() {
        if let Some(&p) = ipiv.get(a.global_row(li)) {
            // SAFETY: IPIV holds LOCr(M_A) + MB_A ints.
            unsafe { *out.add(li) = p as c_int + 1 };
        }
    }
}

/// A factorization's checked A and its local array imported (taken by a
/// fault-tolerant factorization, which keeps it), or the caller's array
/// itself (declared in place: `in_place`).
pub(crate) struct FactoredArgs {
    pub a: CheckedMatrix,
    mat: Option<DistMatrix>,
    pub in_place: Option<Declared>,
}

impl FactoredArgs {
    /// A factorization's matrix: for a fault-tolerant one of an A declared
    /// in place (its declaration, `declared`), the caller's array itself;
    /// otherwise a copy of it. Local checks (agreed by the caller).
    pub(crate) fn new(
        r: &Routine,
        grid: &Grid,
        c: CheckedMatrix,
        data: *mut f64,
        declared: Option<Declared>,
    ) -> Result<FactoredArgs> {
        let in_place = declared.filter(|_| r.protection == Protection::FaultTolerant);
        let mut args = FactoredArgs { a: c, mat: None, in_place };
        args.mat = Some(args.take_matrix(grid, r, data)?);
        Ok(args)
    }

    /// The matrix, or the caller's array taken again (a fault-tolerant
    /// factorization that lost a process before its first commit runs
    /// again: the caller's A is as it was).
    pub(crate) fn take_matrix(&mut self, grid: &Grid, r: &Routine, data: *mut f64) -> Result<DistMatrix> {
        match (self.mat.take(), self.in_place) {
            (Some(m), _) => Ok(m),
            // SAFETY: the program declared A's size, and leaves A to ftla
            // until `ftla_release_` (see `ftla_in_place_`).
            (None, Some(declared)) => unsafe { lend(r.name, grid, &self.a, data, declared) },
            (None, None) => self.a.import(grid, r.name, data, r.protection == Protection::FaultTolerant),
        }
    }

    /// `f` of the matrix taken (for checks against it, before the call).
    pub(crate) fn with_matrix<T>(&self, f: impl FnOnce(&DistMatrix) -> T) -> Option<T> {
        self.mat.as_ref().map(f)
    }

    /// Where the factors are kept.
    pub(crate) fn place(&self) -> Place {
        match self.in_place {
            Some(_) => Place::InPlace { fingerprint: None },
            None => Place::Copy,
        }
    }
}

impl Work for FactoredArgs {
    fn is_empty(&self) -> bool {
        self.a.m == 0 || self.a.n == 0
    }
}

/// The QR routines of the ABI.
const PDGEQRF_FT: Routine = Routine {
    name: drivers::PDGEQRF_FT.c_symbol.expect("a C symbol"),
    log_name: drivers::PDGEQRF_FT.routine,
    protection: Protection::FaultTolerant,
    keeps_result: true,
    agrees_first: false,
    ctxt_desc: pdgeqrf::DESCA,
};
const PDGEQRF: Routine = Routine {
    name: "ftla_pdgeqrf_",
    log_name: "ftla_pdgeqrf",
    protection: Protection::Plain,
    keeps_result: false,
    agrees_first: false,
    ctxt_desc: pdgeqrf::DESCA,
};
/// The LU routines of the ABI.
const PDGETRF_FT: Routine = Routine {
    name: drivers::PDGETRF_FT.c_symbol.expect("a C symbol"),
    log_name: drivers::PDGETRF_FT.routine,
    protection: Protection::FaultTolerant,
    keeps_result: true,
    agrees_first: false,
    ctxt_desc: pdgetrf::DESCA,
};
const PDGETRF: Routine = Routine {
    name: "ftla_pdgetrf_",
    log_name: "ftla_pdgetrf",
    protection: Protection::Plain,
    keeps_result: false,
    agrees_first: false,
    ctxt_desc: pdgetrf::DESCA,
};

fn qr_call(
    r: &Routine,
    m: *const c_int,
    n: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    tau: *mut f64,
    work: *mut f64,
    lwork: *const c_int,
    info: *mut c_int,
) {
    let routine = r.name;
    let arg = factored(m, n, a, ia, ja, desca);
    let lwork = get(lwork);
    let checked = |grid: &Grid, ictxt: c_int| check_factored(r, &arg, grid, ictxt);
    if lwork == -1 {
        // A workspace query: local, as it involves nobody else (a
        // replacement may make it while the survivors are inside a call).
        let lwmin = run_local(r, info, |g, c| checked(g, c).map(|c| qr_lwork_min(g, &c)));
        if let (Some(lwmin), false) = (lwmin, work.is_null()) {
            // SAFETY: WORK holds at least one double.
            unsafe { *work = lwmin as f64 };
        }
        return;
    }
    let key = ArrayKey::of_kept(a, desca);
    let check = |grid: &Grid, ictxt: c_int, kept: &KeptFactors| -> Result<FactoredArgs> {
        let c = checked(grid, ictxt)?;
        let lwmin = qr_lwork_min(grid, &c);
        if lwork < 0 || (lwork as usize) < lwmin {
            return Err(arg_error(
                routine,
                pdgeqrf::LWORK,
                0,
                "LWORK",
                format!("must be at least {lwmin} here, got {lwork}"),
            ));
        }
        let taus = numroc(c.m.min(c.n), c.desc.nb(), grid.mycol() as usize, 0, grid.npcol() as usize);
        if taus > 0 && tau.is_null() {
            return Err(null_part(routine, pdgeqrf::TAU, "TAU"));
        }
        FactoredArgs::new(r, grid, c, a, key.and_then(|k| kept.declared(&k)))
    };
    let arrays = [
        ArrayArg::new("A", pdgeqrf::A, a, desca, Access::Update),
        ArrayArg::new("TAU", pdgeqrf::TAU, tau, desca, Access::WriteReplicated),
    ];
    run(r, info, &arrays, check, |ctx, p, lost| {
        let mat = p.take_matrix(ctx.region.grid(), r, a)?;
        match r.protection {
            Protection::FaultTolerant => {
                let (f, _) = QrFactors::factor(&mut ctx.region, mat, &FtOptions::from_env()?)?;
                let grid = ctx.region.grid();
                f.with_local_storage(|stored| {
                    // (In place, A holds them already.)
                    if !lost && p.in_place.is_none() {
                        p.a.export_leading(grid, stored, a);
                    }
                    export_tau(stored, &f.tau(), tau);
                });
                if let Some(key) = key {
                    ctx.kept.keep(key, p.a, Factors::Qr(f), p.place());
                }
            }
            Protection::Plain => {
                let (mut mat, mut t) = (mat, Vec::new());
                qr::pdgeqrf(ctx.region.grid(), &mut mat, &mut t)?;
                p.a.export(&mat, a);
                export_tau(&mat, &t, tau);
            }
        }
        Ok(())
    });
}

/// Fault-tolerant QR factorization `A = Q·R` with ScaLAPACK `PDGEQRF`'s
/// arguments and results: R on and above the diagonal of A, the
/// Householder vectors below it, TAU.
///
/// * `m`, `n` (global input): the size of the leading submatrix factored.
/// * `a` (local input/output): the local array, LLD_A × LOCc(N_A).
/// * `ia`, `ja` (global input): must be 1.
/// * `desca` (global and local input): A's descriptor; MB_A = NB_A, the
///   first block on process (0, 0), at least two process columns.
/// * `tau` (local output): LOCc(JA+MIN(M,N)-1) Householder scalars of the
///   local columns.
/// * `work`, `lwork` (local): as ScaLAPACK, LWORK ≥ NB_A·(Mp0 + Nq0 +
///   NB_A); `lwork = -1` is a workspace query (WORK(1) receives the
///   minimum). ftla allocates its own storage: the copy of the factors it
///   keeps, with their checksum columns (none for an A declared in place).
/// * `info` (global output): 0; -i or -(i·100+j) for a bad argument i (entry
///   j of a descriptor), the same on every process (but for a workspace
///   query, which is local: a process-dependent check such as LLD gives
///   its INFO on the processes it fails on only), among them, for an A
///   declared with `ftla_in_place_`, -3 when its LSIZE is less than
///   `ftla_kept_lsize_` says, -603 or -604 when M_A ≠ M or N_A ≠ N (the
///   whole of A is factored in place) and -609 when LLD_A ≠ max(1,
///   LOCr(M));
///   `FTLA_INFO_UNRECOVERABLE`, `FTLA_INFO_NO_MEMORY`, `FTLA_INFO_ERROR`.
///
/// The factors stay protected after the call: ftla keeps its copy of
/// them, their checksums and TAU for this A and DESCA, for `pdormqr_ft_`,
/// until `ftla_release_`, a later call that overwrites this A, or the
/// grid's exit (memory: about (1 + 4/Q) × A's local array). For an A
/// declared with `ftla_in_place_`, the factorization works in A and keeps
/// the factors there, with their checksums after them: ftla holds only
/// the left-factor sums (about 2/Q) and TAU. See the header's
/// introduction.
///
/// # Fault tolerance
/// A process lost during the call is repaired inside it: the grid is
/// repaired (a hot spare or a spawned replacement takes the lost place),
/// the lost blocks are rebuilt from the checksums at the last committed
/// step, and the factorization goes on; INFO = 0 and the result is the
/// failure-free one. A replacement process runs the program from `main`;
/// its call of `pdgeqrf_ft_` (with an A of the same shape, whatever its
/// values) joins the survivors' recovery. More losses in one process row
/// than the checksums rebuild (two; F + 1 with `FTLA_LAYOUT=rotating`)
/// give `FTLA_INFO_UNRECOVERABLE` on every survivor. A process lost after
/// the call is rebuilt into the kept factors; on its replacement, the
/// re-run of a `pdgeqrf_ft_` that completed before it joined returns at
/// once with INFO = 0 and TAU filled in, and its A holds its factors again
/// from its next ftla call, the one that meets the survivors (before that
/// call reads its arguments, or at its end when it joins an interrupted
/// call).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdgeqrf_ft_(
    m: *const c_int,
    n: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    tau: *mut f64,
    work: *mut f64,
    lwork: *const c_int,
    info: *mut c_int,
) {
    qr_call(&PDGEQRF_FT, m, n, a, ia, ja, desca, tau, work, lwork, info);
}

/// QR factorization without fault tolerance (ScaLAPACK `PDGEQRF`), ftla's
/// own: arguments and results as `pdgeqrf_ft_`; one process column is
/// allowed. A process lost during the call: the grid is repaired and INFO
/// = `FTLA_INFO_PROCESS_LOST` (A and TAU undefined).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_pdgeqrf_(
    m: *const c_int,
    n: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    tau: *mut f64,
    work: *mut f64,
    lwork: *const c_int,
    info: *mut c_int,
) {
    qr_call(&PDGEQRF, m, n, a, ia, ja, desca, tau, work, lwork, info);
}

fn lu_call(
    r: &Routine,
    m: *const c_int,
    n: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    ipiv: *mut c_int,
    info: *mut c_int,
) {
    let routine = r.name;
    let arg = factored(m, n, a, ia, ja, desca);
    let key = ArrayKey::of_kept(a, desca);
    let check = |grid: &Grid, ictxt: c_int, kept: &KeptFactors| -> Result<FactoredArgs> {
        let c = check_factored(r, &arg, grid, ictxt)?;
        if c.local_shape(grid).0 > 0 && ipiv.is_null() {
            return Err(null_part(routine, pdgetrf::IPIV, "IPIV"));
        }
        FactoredArgs::new(r, grid, c, a, key.and_then(|k| kept.declared(&k)))
    };
    let arrays = [
        ArrayArg::new("A", pdgetrf::A, a, desca, Access::Update),
        ArrayArg::new("IPIV", pdgetrf::IPIV, ipiv, desca, Access::WriteReplicated),
    ];
    run(r, info, &arrays, check, |ctx, p, lost| {
        let mut mat = p.take_matrix(ctx.region.grid(), r, a)?;
        match r.protection {
            Protection::FaultTolerant => {
                // (A singular U, as PDGETRF: the factors are written and
                // kept, and INFO > 0.)
                let (f, _, zero) = LuFactors::factor_even_if_singular(&mut ctx.region, mat, &FtOptions::from_env()?)?;
                let grid = ctx.region.grid();
                f.with_local_storage(|stored| {
                    // (In place, A holds them already.)
                    if !lost && p.in_place.is_none() {
                        p.a.export_leading(grid, stored, a);
                    }
                    export_ipiv(stored, &f.ipiv(), ipiv);
                });
                if let Some(key) = key {
                    ctx.kept.keep(key, p.a, Factors::Lu(f), p.place());
                }
                match zero {
                    Some(index) => Err(Error::Singular { routine: r.name.into(), index }),
                    None => Ok(()),
                }
            }
            Protection::Plain => {
                let mut piv = Vec::new();
                let done = lu::pdgetrf(ctx.region.grid(), &mut mat, &mut piv);
                // A singular U is a result: the factorization is complete.
                if matches!(done, Ok(()) | Err(Error::Singular { .. })) {
                    p.a.export(&mat, a);
                    export_ipiv(&mat, &piv, ipiv);
                }
                done
            }
        }
    });
}

/// Fault-tolerant LU factorization with partial pivoting `P·A = L·U`,
/// ScaLAPACK `PDGETRF`'s arguments and results: L (unit diagonal not
/// stored) and U in A, the pivots in IPIV.
///
/// * `m`, `n`, `a`, `ia`, `ja`, `desca`: as in `pdgeqrf_ft_`.
/// * `ipiv` (local output): LOCr(M_A) + MB_A ints; entry i (of a local row
///   whose global row g < min(M, N)) is the 1-based global row interchanged
///   with row g, as in ScaLAPACK.
/// * `info` (global output): as `pdgeqrf_ft_`, and INFO = i > 0 when
///   U(i,i) is exactly zero (the first such), the same on every process;
///   as PDGETRF, A and IPIV then hold the factors (kept as any others:
///   a solve with them divides by the zero pivot, as PDGETRS does).
///
/// The factors stay protected after the call, as `pdgeqrf_ft_`'s: ftla
/// keeps its copy of them, their checksums and the pivots for this A and
/// DESCA, for `pdgetrs_ft_` (memory: about (1 + 4/Q) × A's local array),
/// or, for an A declared with `ftla_in_place_`, keeps them in A itself
/// (ftla holds the left-factor sums, about 2/Q, and the pivots).
///
/// # Fault tolerance
/// As `pdgeqrf_ft_`: the lost process's L, U, checksums and pivots are
/// rebuilt at the last committed step; the pivots are those of a
/// failure-free run. On a replacement, the re-run of a `pdgetrf_ft_` that
/// completed before it joined returns at once with the survivors' INFO
/// (0, or i > 0 for a singular U) and IPIV filled in; its A holds L and
/// U again from its next ftla call (see `pdgeqrf_ft_`).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdgetrf_ft_(
    m: *const c_int,
    n: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    ipiv: *mut c_int,
    info: *mut c_int,
) {
    lu_call(&PDGETRF_FT, m, n, a, ia, ja, desca, ipiv, info);
}

/// LU factorization without fault tolerance (ScaLAPACK `PDGETRF`),
/// ftla's own: as `pdgetrf_ft_`; one process column is allowed. A process
/// lost during the call: the grid is repaired and INFO =
/// `FTLA_INFO_PROCESS_LOST` (A and IPIV undefined).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_pdgetrf_(
    m: *const c_int,
    n: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    ipiv: *mut c_int,
    info: *mut c_int,
) {
    lu_call(&PDGETRF, m, n, a, ia, ja, desca, ipiv, info);
}

/// Fault-tolerant Cholesky factorization `A = L·Lᵀ` of the N×N symmetric
/// positive definite A, ScaLAPACK `PDPOTRF`'s arguments with UPLO = L:
/// L in A's lower triangle, its strictly upper triangle not referenced
/// (left as given).
///
/// * `uplo` (global input): `"L"` (`"U"` is refused: INFO = -1).
/// * `n` (global input): the order of A (its strictly upper triangle is
///   not referenced by the factorization but kept by checksums of its
///   own, so a replacement gets it back; whatever it holds, NaN included,
///   spoils no rebuild of L).
/// * `a`, `ia`, `ja`, `desca` (local input/output): A; IA = JA = 1,
///   MB_A = NB_A, the first block on process (0, 0), Q ≥ 2.
/// * `info` (global output): 0; -i or -(i·100 + j) for a bad argument
///   (ScaLAPACK's positions), the same on every process; k > 0: the
///   leading minor of order k is not positive definite (no factors kept;
///   A as given, or, declared with `ftla_in_place_`, partly factored as
///   PDPOTRF leaves it); `FTLA_INFO_UNRECOVERABLE`, `FTLA_INFO_NO_MEMORY`,
///   `FTLA_INFO_ERROR`.
///
/// The factor stays protected after the call, as `pdgetrf_ft_`'s: ftla
/// keeps its copy of it with its checksums for this A and DESCA, for
/// `pdpotrs_ft_`, or keeps it in A itself when A was declared with
/// `ftla_in_place_`.
///
/// # Fault tolerance
/// As `pdgetrf_ft_`: checksums of the lower triangle follow the
/// symmetric update, a lost process's blocks (L, the trailing matrix, the
/// checksums, and its part of the upper triangle) are rebuilt at the last
/// committed step (kill points `R@potrf:STEP:PHASE`), and the result is
/// the failure-free one. On a replacement, the re-run of a `pdpotrf_ft_`
/// that completed before it joined returns at once with INFO = 0, and its
/// A holds L again from its next ftla call.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdpotrf_ft_(
    uplo: *const c_char,
    n: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = Routine {
        name: drivers::PDPOTRF_FT.c_symbol.expect("a C symbol"),
        log_name: drivers::PDPOTRF_FT.routine,
        protection: Protection::FaultTolerant,
        keeps_result: true,
        agrees_first: false,
        ctxt_desc: pdpotrf::DESCA,
    };
    let arg = MatrixArg { at: pdpotrf::MATRIX_A, ..factored(n, n, a, ia, ja, desca) };
    let key = ArrayKey::of_kept(a, desca);
    let u = letter(uplo);
    let check = |grid: &Grid, ictxt: c_int, kept: &KeptFactors| -> Result<FactoredArgs> {
        // (ScaLAPACK's order: the descriptor, then UPLO.)
        let c = check_factored(&R, &arg, grid, ictxt)?;
        lower_only(R.name, pdpotrf::UPLO, u)?;
        FactoredArgs::new(&R, grid, c, a, key.and_then(|k| kept.declared(&k)))
    };
    let arrays = [ArrayArg::new("A", pdpotrf::A, a, desca, Access::Update)];
    run(&R, info, &arrays, check, |ctx, p, lost| {
        let mat = p.take_matrix(ctx.region.grid(), &R, a)?;
        let (f, _) = CholFactors::factor(&mut ctx.region, mat, &FtOptions::from_env()?)?;
        let grid = ctx.region.grid();
        // (In place, A holds it already.)
        if !lost && p.in_place.is_none() {
            f.with_local_storage(|stored| p.a.export_leading(grid, stored, a));
        }
        if let Some(key) = key {
            ctx.kept.keep(key, p.a, Factors::Chol(f), p.place());
        }
        Ok(())
    });
}

/// UPLO of a fault-tolerant Cholesky routine (argument `position`): `L`,
/// the one it supports.
pub(crate) fn lower_only(routine: &str, position: u32, u: u8) -> Result<()> {
    match u {
        b'L' => Ok(()),
        b'U' => Err(arg_error(
            routine,
            position,
            0,
            "UPLO",
            "must be 'L': the fault-tolerant Cholesky factors the lower triangle",
        )),
        _ => Err(arg_error(routine, position, 0, "UPLO", "must be 'L'")),
    }
}

/// The global pivots from the local IPIVs of a process column (each
/// process holds those of its rows; every column holds the same).
fn gather_pivots(grid: &Grid, a: &DistMatrix, ipiv: *const c_int, n: usize) -> Result<Vec<i64>> {
    let (nprow, nb) = (grid.nprow() as usize, a.mb());
    let most = numroc(n, nb, 0, 0, nprow);
    let mut mine = vec![-1i64; most];
    for (li, slot) in mine.iter_mut().enumerate().take(numroc(n, nb, grid.myrow() as usize, 0, nprow)) {
        // SAFETY: IPIV holds LOCr(M_A) + MB_A ints.
        *slot = i64::from(unsafe { *ipiv.add(li) }) - 1;
    }
    let all = grid.allgather(Scope::Column, &mine)?;
    let mut piv = vec![0i64; n];
    for (row, part) in all.chunks_exact(most.max(1)).enumerate().take(nprow) {
        for (li, &p) in part.iter().enumerate().take(numroc(n, nb, row, 0, nprow)) {
            piv[indxl2g(li, nb, row, 0, nprow)] = p;
        }
    }
    Ok(piv)
}

struct SolveArgs {
    a: DistMatrix,
    b_arg: CheckedMatrix,
    b: DistMatrix,
    trans: Transpose,
}

impl Work for SolveArgs {
    fn is_empty(&self) -> bool {
        self.a.m() == 0 || self.b.n() == 0
    }
}

/// Solves `A·X = B` or `Aᵀ·X = B` with the factors from `pdgetrf_ft_` or
/// `ftla_pdgetrf_` (ScaLAPACK `PDGETRS`'s arguments), as they are in A and
/// IPIV (`pdgetrs_ft_` solves with the kept factors, and survives a loss).
///
/// * `trans` (global input): `"N"`, or `"T"`/`"C"` for the transposed system.
/// * `n`, `nrhs` (global input): the order of A and the number of
///   right-hand sides.
/// * `a`, `ia`, `ja`, `desca` (input): the factors; IA = JA = 1, MB_A = NB_A.
/// * `ipiv` (local input): the pivots from the factorization.
/// * `b`, `ib`, `jb`, `descb` (local input/output): the right-hand sides on
///   entry, the solution on exit; IB = JB = 1, B's rows in A's row blocks
///   (MB_B = MB_A).
/// * `info` (global output): as the factorizations;
///   `FTLA_INFO_INPUT_LOST` on every process when A or IPIV is an output
///   that a replacement process did not receive — the factors of an
///   `ftla_pdgetrf_` that completed before it joined — and nothing is
///   computed (B, overwritten with the solution, is the program's data).
///
/// No fault tolerance: a process lost during the solve gives
/// `FTLA_INFO_PROCESS_LOST` once the grid is repaired. Factors of
/// `pdgetrf_ft_` are kept protected between calls, and a replacement's A
/// holds them again when this call starts; those of `ftla_pdgetrf_` are
/// not: a process lost after that factorization leaves its replacement
/// without its part of them, which this routine refuses
/// (`FTLA_INFO_INPUT_LOST`): factor again, then solve.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn ftla_pdgetrs_(
    trans: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    ipiv: *const c_int,
    b: *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = Routine {
        name: "ftla_pdgetrs_",
        log_name: "ftla_pdgetrs",
        protection: Protection::Plain,
        keeps_result: false,
        agrees_first: false,
        ctxt_desc: pdgetrs::DESCA,
    };
    const ROUTINE: &str = R.name;
    use pdgetrs::{IPIV, NRHS};
    let (a_arg, b_arg) = getrs_matrices(n, nrhs, a, ia, ja, desca, b, ib, jb, descb);
    let t = letter(trans);
    let check = |grid: &Grid, ictxt: c_int, _: &KeptFactors| -> Result<SolveArgs> {
        let trans = getrs_transpose(ROUTINE, t)?;
        check_nrhs(ROUTINE, NRHS, get(nrhs))?;
        let ca = a_arg.check(ROUTINE, grid, ictxt)?;
        let cb = b_arg.check(ROUTINE, grid, ictxt)?;
        if ca.local_shape(grid).0 > 0 && ipiv.is_null() {
            return Err(null_part(ROUTINE, IPIV, "IPIV"));
        }
        Ok(SolveArgs {
            a: ca.import(grid, ROUTINE, a, false)?,
            b: cb.import(grid, ROUTINE, b, false)?,
            b_arg: cb,
            trans,
        })
    };
    let arrays = [
        ArrayArg::new("A", pdgetrs::A, a, desca, Access::Read),
        ArrayArg::new("IPIV", IPIV, ipiv, desca, Access::Read),
        ArrayArg::new("B", pdgetrs::B, b, descb, Access::Update),
    ];
    run(&R, info, &arrays, check, |ctx, p, _| {
        let grid = ctx.region.grid();
        let piv = gather_pivots(grid, &p.a, ipiv, p.a.m())?;
        lu::pdgetrs(grid, p.trans, &p.a, &piv, &mut p.b)?;
        p.b_arg.export(&p.b, b);
        Ok(())
    });
}

struct CgArgs {
    a: DistMatrix,
    b: DistMatrix,
    x_arg: CheckedMatrix,
    x: DistMatrix,
    opts: CgOptions,
}

impl Work for CgArgs {
    fn is_empty(&self) -> bool {
        self.a.m() == 0
    }
}

/// Fault-tolerant conjugate gradients for `A·x = b`, A dense symmetric
/// positive definite (ftla's own routine; ScaLAPACK has none), with
/// ScaLAPACK-style arguments:
/// `PDCG_FT(N, A, IA, JA, DESCA, B, IB, JB, DESCB, X, IX, JX, DESCX, TOL,
/// MAXIT, ITER, RESID, INFO)`.
///
/// * `n` (global input): the order of A.
/// * `a`, `ia`, `ja`, `desca` (local input): A; IA = JA = 1, MB_A = NB_A,
///   the first block on process (0, 0), at least two process columns.
/// * `b`, `ib`, `jb`, `descb` (local input): the N×1 right-hand side, in
///   A's row blocks (MB_B = MB_A).
/// * `x`, `ix`, `jx`, `descx` (local input/output): the initial guess on
///   entry, the solution on exit; laid out like B.
/// * `tol` (global input): stop when ‖r‖₂ ≤ TOL·‖b‖₂.
/// * `maxit` (global input): at most this many iterations.
/// * `iter` (global output): the iterations run.
/// * `resid` (global output): the true relative residual ‖b − A·x‖₂/‖b‖₂.
/// * `info` (global output): 0 when converged; MAXIT + 1 when not
///   converged within MAXIT iterations; k in 1..MAXIT when A was found not
///   positive definite at iteration k; negative as the factorizations;
///   `FTLA_INFO_INPUT_LOST` on every process when A or B is an output
///   that a replacement process did not receive (nothing computed).
///
/// # Fault tolerance
/// A process lost during the solve is repaired inside it: A's lost blocks
/// are rebuilt from the checksums, the vectors copied from the other
/// processes of its row, and the iteration goes on from the last
/// committed one (the iterates of a failure-free run).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdcg_ft_(
    n: *const c_int,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *const f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    x: *mut f64,
    ix: *const c_int,
    jx: *const c_int,
    descx: *const c_int,
    tol: *const f64,
    maxit: *const c_int,
    iter: *mut c_int,
    resid: *mut f64,
    info: *mut c_int,
) {
    const R: Routine = Routine {
        name: drivers::PDCG_FT.c_symbol.expect("a C symbol"),
        log_name: drivers::PDCG_FT.routine,
        protection: Protection::FaultTolerant,
        keeps_result: false,
        agrees_first: false,
        ctxt_desc: pdcg::DESCA,
    };
    const ROUTINE: &str = R.name;
    let order = get(n);
    let arg = |name, data, ia, ja, desc, at, square_blocks| MatrixArg {
        name,
        m: order,
        n: if name == "A" { order } else { 1 },
        ia,
        ja,
        desc,
        data,
        at,
        square_blocks,
    };
    let a_arg = arg("A", a, get(ia), get(ja), desca, pdcg::MATRIX_A, true);
    let b_arg = arg("B", b, get(ib), get(jb), descb, pdcg::MATRIX_B, false);
    let x_arg = arg("X", x as *const f64, get(ix), get(jx), descx, pdcg::MATRIX_X, false);
    // SAFETY: TOL points to a double.
    let tol = if tol.is_null() { f64::NAN } else { unsafe { *tol } };
    let maxit = get(maxit);
    let check = |grid: &Grid, ictxt: c_int, _: &KeptFactors| -> Result<CgArgs> {
        check_two_process_columns(ROUTINE, pdcg::DESCA, "A", grid)?;
        let ca = a_arg.check(ROUTINE, grid, ictxt)?;
        let cb = b_arg.check(ROUTINE, grid, ictxt)?;
        let cx = x_arg.check(ROUTINE, grid, ictxt)?;
        if maxit < 0 {
            return Err(arg_error(ROUTINE, pdcg::MAXIT, 0, "MAXIT", format!("must be non-negative, got {maxit}")));
        }
        Ok(CgArgs {
            a: ca.import(grid, ROUTINE, a, true)?,
            b: cb.import(grid, ROUTINE, b, false)?,
            x: cx.import(grid, ROUTINE, x, false)?,
            x_arg: cx,
            opts: CgOptions { tol, maxit: maxit as u64, jacobi: false },
        })
    };
    let (mut iterations, mut residual) = (0, if order == 0 { 0.0 } else { f64::NAN });
    let mut converged = true;
    let arrays = [
        ArrayArg::new("A", pdcg::A, a, desca, Access::Read),
        ArrayArg::new("B", pdcg::B, b, descb, Access::Read),
        ArrayArg::new("X", pdcg::X, x, descx, Access::Update),
    ];
    run(&R, info, &arrays, check, |ctx, p, lost| {
        let ft = FtOptions::from_env()?;
        let mut ws = FtWorkspace::in_place(ctx.region.grid(), &mut p.a, ft.layout).unwrap_or_default();
        let r = cg_ft::pdcg_ft_in(&mut ctx.region, &mut p.a, &p.b, &mut p.x, &p.opts, &ft, &mut ws)?;
        if !lost {
            p.x_arg.export(&p.x, x);
        }
        (iterations, residual, converged) = (r.iterations, r.relative_residual, r.converged);
        Ok(())
    });
    if !iter.is_null() {
        // SAFETY: pointer to an int (null checked).
        unsafe { *iter = iterations as c_int };
    }
    if !resid.is_null() {
        // SAFETY: pointer to a double (null checked).
        unsafe { *resid = residual };
    }
    if !converged && !info.is_null() && get(info as *const c_int) == 0 {
        set_info(info, maxit.saturating_add(1));
    }
}
