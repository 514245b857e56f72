//! The fault-tolerant solves with ScaLAPACK's argument lists:
//! `pdgetrs_ft_`, `pdpotrs_ft_` and `pdormqr_ft_` on the factors ftla
//! keeps for A (`crate::kept`), and the least squares `pdgels_ft_`.

use crate::call::{run, run_local, Protection, Routine, Work};
use crate::drivers::FactoredArgs;
use crate::kept::{Factors, Kept, KeptFactors};
use crate::lost::{Access, ArrayArg, ArrayKey};
use crate::matrix::{CheckedMatrix, MatrixArg};
use crate::solve_args::{check_nrhs, getrs_matrices, getrs_transpose, letter, null_part, solve_matrices};
use crate::tools::get;
use blacs_ft::index::numroc;
use scalapack_ft::abft::FtOptions;
use scalapack_ft::args::{arg_error, check_two_process_columns, pdgels, pdgetrs, pdormqr, pdpotrs, MatrixPositions};
use scalapack_ft::blas::Trans;
use scalapack_ft::chol_ft::{check_rhs, pdpotrs_ft, CholFactors};
use scalapack_ft::lu::Transpose;
use scalapack_ft::lu_ft::{pdgetrs_ft, Holding};
use scalapack_ft::qr_ft::{pdgels_ft, pdormqr_ft};
use scalapack_ft::{drivers, DistMatrix, Grid, Result};
use std::os::raw::{c_char, c_int};

/// The kept factors of the array A (`key`) for a solve, found and checked
/// against the caller's arguments (local): `Err` at A's position when
/// nothing is kept for it or the kept factors are of the other kind, and
/// when A no longer holds them (changed since the factorization).
fn kept_for<'k>(
    kept: &'k KeptFactors,
    routine: &str,
    key: Option<ArrayKey>,
    position: u32,
    maker: &str,
    grid: &Grid,
    data: *const f64,
) -> Result<&'k Kept> {
    let found = key.and_then(|k| kept.find(&k)).ok_or_else(|| {
        arg_error(
            routine,
            position,
            0,
            "A",
            format!(
                "holds no factors ftla keeps (this array with this descriptor was not factored by {maker}, or \
                 they were released): factor A with {maker} first"
            ),
        )
    })?;
    if found.factors.maker() != maker {
        return Err(arg_error(
            routine,
            position,
            0,
            "A",
            format!("holds the factors of {}: factor A with {maker} first", found.factors.maker()),
        ));
    }
    if !found.matches(grid, data) {
        return Err(arg_error(
            routine,
            position,
            0,
            "A",
            format!("is not what {maker} returned (changed since): factor A with {maker} again"),
        ));
    }
    Ok(found)
}

/// Local: whether the caller's IPIV still holds the kept pivots (entry li
/// of a local row whose global row g < min(M, N): g's 1-based pivot).
fn ipiv_matches(stored: &DistMatrix, piv: &[i64], given: *const c_int) -> bool {
    (0..stored.local_rows()).all(|li| match piv.get(stored.global_row(li)) {
        // SAFETY: IPIV holds LOCr(M_A) + MB_A ints.
        Some(&p) => (unsafe { *given.add(li) }) == p as c_int + 1,
        None => true,
    })
}

/// Local: whether the caller's TAU still holds the kept scalars (entry lj
/// of a local column whose global column j < min(M, N)).
fn tau_matches(stored: &DistMatrix, tau: &[f64], given: *const f64) -> bool {
    (0..stored.local_cols()).all(|lj| match tau.get(stored.global_col(lj)) {
        // SAFETY: TAU holds LOCc(JA+MIN(M,N)-1) doubles.
        Some(&t) => (unsafe { *given.add(lj) }).to_bits() == t.to_bits(),
        None => true,
    })
}

/// The error of an IPIV or TAU that no longer holds what the
/// factorization returned.
fn changed(routine: &str, position: u32, name: &str, maker: &str) -> scalapack_ft::Error {
    arg_error(routine, position, 0, name, format!("is not what {maker} returned (changed since): factor A again"))
}

/// A solve's right-hand sides, and the kept factors it takes (`T`: how
/// the solve's TRANS is typed).
struct RhsArgs<T> {
    key: ArrayKey,
    b_arg: CheckedMatrix,
    b: DistMatrix,
    nrhs: usize,
    trans: T,
}

impl<T> RhsArgs<T> {
    /// Writes the result into the caller's local array `data` (local),
    /// unless this process's part of it is lost: `lost`, a replacement
    /// making a call that completed before it joined, or B lost in it.
    fn export_unless_lost(&self, lost: bool, data: *mut f64) {
        if !lost && !self.b.is_lost() {
            self.b_arg.export(&self.b, data);
        }
    }
}

/// The error of a solve whose kept factors went between its checks and
/// its work (A at `position`).
fn no_kept_factors(routine: &str, position: u32) -> scalapack_ft::Error {
    arg_error(routine, position, 0, "A", "holds no factors ftla keeps")
}

impl<T> Work for RhsArgs<T> {
    fn is_empty(&self) -> bool {
        self.b.m() == 0 || self.nrhs == 0
    }
}

/// Fault-tolerant solve of `A·X = B` or `Aᵀ·X = B` with the LU factors
/// ftla keeps for A (ScaLAPACK `PDGETRS`'s arguments): those of the last
/// `pdgetrf_ft_` given this A with this DESCA.
///
/// * `trans` (global input): `"N"`, or `"T"`/`"C"` for the transposed system.
/// * `n` (global input): the order of A, the factorization's.
/// * `nrhs` (global input): the number of right-hand sides, ≥ 0.
/// * `a`, `ia`, `ja`, `desca` (local input): A as passed to `pdgetrf_ft_`
///   (the same local array and descriptor), holding what it returned;
///   IA = JA = 1. ftla solves with its own protected copy of the factors
///   and checks that A still holds them (one pass over the local array);
///   for factors kept in place (`ftla_in_place_`), it solves with A itself
///   and checks A's fingerprint (factors and checksums) instead.
/// * `ipiv` (local input): the pivots `pdgetrf_ft_` returned.
/// * `b`, `ib`, `jb`, `descb` (local input/output): the N×NRHS right-hand
///   sides on entry, the solution on exit; IB = JB = 1, B's rows in A's row
///   blocks (MB_B = MB_A) and, beyond PDGETRS, NB_B = MB_B and B's first
///   block on process (0, 0) (B gets checksum columns laid out as A's).
/// * `info` (global output): 0; -i or -(i·100+j) for a bad argument i,
///   the same on every process, among them INFO = -4 (A) when ftla keeps
///   no LU factors for A ("factor A with pdgetrf_ft_ first": never
///   factored, released, or factored again since by another routine) or
///   when A changed since `pdgetrf_ft_` returned, and INFO = -8 when IPIV
///   did; `FTLA_INFO_INPUT_LOST` when the kept factors could not be
///   rebuilt after a failure (more losses in one process row than the
///   checksums tolerate between two ftla calls; nothing computed);
///   `FTLA_INFO_UNRECOVERABLE`, `FTLA_INFO_NO_MEMORY`, `FTLA_INFO_ERROR`;
///   on a replacement, `FTLA_INFO_RESULT_LOST` for a solve that completed
///   before it joined (its part of X is lost: B is recorded as lost).
///
/// # Fault tolerance
/// A process lost at any time after `pdgetrf_ft_` — during the program's
/// own work, in another ftla call, or in this solve — is repaired: its
/// part of the kept factors is rebuilt from their checksums, and B is
/// protected by checksum columns during the solve (kill points
/// `R@getrs:STEP:PHASE`). INFO = 0 and X is the failure-free one, on the
/// replacement too. A process lost between two calls is found at this
/// call's start: the grid is repaired there, the replacement (running the
/// program from the top, its `pdgetrf_ft_` returning at once) meets the
/// survivors in this call, its part of the factors is rebuilt and copied
/// into its A, and the solve goes on. `FTLA_INFO_PROCESS_LOST` is not
/// returned.
///
/// Memory per process during the call: B's copy and its protected copy
/// with checksum columns (about 2 × B's local part plus 2/Q of it), besides
/// the kept factors.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdgetrs_ft_(
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
        name: drivers::PDGETRS_FT.c_symbol.expect("a C symbol"),
        log_name: drivers::PDGETRS_FT.routine,
        protection: Protection::FaultTolerant,
        keeps_result: false,
        agrees_first: false,
        ctxt_desc: pdgetrs::DESCA,
    };
    const ROUTINE: &str = R.name;
    use pdgetrs::{IPIV, N, NRHS};
    let (a_arg, b_arg) = getrs_matrices(n, nrhs, a, ia, ja, desca, b, ib, jb, descb);
    let key = ArrayKey::of_kept(a, desca);
    let t = letter(trans);
    let check = |grid: &Grid, ictxt: c_int, kept: &KeptFactors| -> Result<RhsArgs<Transpose>> {
        let trans = getrs_transpose(ROUTINE, t)?;
        check_nrhs(ROUTINE, NRHS, get(nrhs))?;
        check_two_process_columns(ROUTINE, pdgetrs::DESCA, "A", grid)?;
        let ca = a_arg.check(ROUTINE, grid, ictxt)?;
        let cb = b_arg.check(ROUTINE, grid, ictxt)?;
        if ca.local_shape(grid).0 > 0 && ipiv.is_null() {
            return Err(null_part(ROUTINE, IPIV, "IPIV"));
        }
        let found = kept_for(kept, ROUTINE, key, pdgetrs::A, "pdgetrf_ft_", grid, a)?;
        if (found.a.m, found.a.n) != (ca.n, ca.n) {
            return Err(arg_error(
                ROUTINE,
                N,
                0,
                "N",
                format!(
                    "must be the order of the factorization kept for A ({}x{}), got {}",
                    found.a.m, found.a.n, ca.n
                ),
            ));
        }
        if let Factors::Lu(f) = &found.factors {
            let whole = found.factors.holding() == Holding::Whole;
            if whole && !f.with_local_storage(|s| ipiv_matches(s, &f.ipiv(), ipiv)) {
                return Err(changed(ROUTINE, IPIV, "IPIV", "pdgetrf_ft_"));
            }
        }
        Ok(RhsArgs { key: found.key, b: cb.import(grid, ROUTINE, b, false)?, b_arg: cb, nrhs: cb.n, trans })
    };
    let arrays = [
        ArrayArg::new("A", pdgetrs::A, a, desca, Access::Read),
        ArrayArg::new("IPIV", IPIV, ipiv, desca, Access::Read),
        ArrayArg::new("B", pdgetrs::B, b, descb, Access::Update),
    ];
    run(&R, info, &arrays, check, |ctx, p, lost| {
        let Some(Kept { factors: Factors::Lu(f), .. }) = ctx.kept.find(&p.key) else {
            return Err(no_kept_factors(ROUTINE, pdgetrs::A));
        };
        pdgetrs_ft(&mut ctx.region, p.trans, f, &mut p.b, &FtOptions::default())?;
        p.export_unless_lost(lost, b);
        Ok(())
    });
}

/// Fault-tolerant solve of `A·X = B` with the Cholesky factor ftla keeps
/// for A (ScaLAPACK `PDPOTRS`'s arguments, UPLO = L): that of the last
/// `pdpotrf_ft_` given this A with this DESCA.
///
/// * `uplo` (global input): `"L"` (`"U"` is refused: INFO = -1).
/// * `n`, `nrhs` (global input): the order of A (the factorization's) and
///   the number of right-hand sides, ≥ 0.
/// * `a`, `ia`, `ja`, `desca` (local input): A as passed to `pdpotrf_ft_`,
///   holding what it returned (checked, as `pdgetrs_ft_` checks its A).
/// * `b`, `ib`, `jb`, `descb` (local input/output): as `pdgetrs_ft_`'s.
/// * `info` (global output): as `pdgetrs_ft_`'s, INFO = -4 (A) when ftla
///   keeps no Cholesky factor for A or A changed since.
///
/// # Fault tolerance
/// As `pdgetrs_ft_`: a process lost after `pdpotrf_ft_` or in this solve
/// is repaired, its part of the kept factor rebuilt and B protected by
/// checksum columns (kill points `R@potrs:STEP:PHASE`); X is the
/// failure-free one, on the replacement too.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdpotrs_ft_(
    uplo: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = Routine {
        name: drivers::PDPOTRS_FT.c_symbol.expect("a C symbol"),
        log_name: drivers::PDPOTRS_FT.routine,
        protection: Protection::FaultTolerant,
        keeps_result: false,
        agrees_first: false,
        ctxt_desc: pdpotrs::DESCA,
    };
    const ROUTINE: &str = R.name;
    let (a_arg, b_arg) =
        solve_matrices((pdpotrs::MATRIX_A, pdpotrs::MATRIX_B), n, nrhs, a, ia, ja, desca, b, ib, jb, descb);
    let key = ArrayKey::of_kept(a, desca);
    let u = letter(uplo);
    let check = |grid: &Grid, ictxt: c_int, kept: &KeptFactors| -> Result<RhsArgs<()>> {
        let (ca, cb) = check_chol_solve(ROUTINE, grid, ictxt, (&a_arg, &b_arg), u, nrhs)?;
        let found = kept_for(kept, ROUTINE, key, pdpotrs::A, "pdpotrf_ft_", grid, a)?;
        if (found.a.m, found.a.n) != (ca.n, ca.n) {
            return Err(arg_error(
                ROUTINE,
                pdpotrs::N,
                0,
                "N",
                format!("must be the order of the factorization kept for A ({}), got {}", found.a.n, ca.n),
            ));
        }
        Ok(RhsArgs { key: found.key, b: cb.import(grid, ROUTINE, b, false)?, b_arg: cb, nrhs: cb.n, trans: () })
    };
    let arrays = [
        ArrayArg::new("A", pdpotrs::A, a, desca, Access::Read),
        ArrayArg::new("B", pdpotrs::B, b, descb, Access::Update),
    ];
    run(&R, info, &arrays, check, |ctx, p, lost| {
        let Some(Kept { factors: Factors::Chol(f), .. }) = ctx.kept.find(&p.key) else {
            return Err(no_kept_factors(ROUTINE, pdpotrs::A));
        };
        pdpotrs_ft(&mut ctx.region, f, &mut p.b, &FtOptions::default())?;
        p.export_unless_lost(lost, b);
        Ok(())
    });
}

/// ScaLAPACK's smallest LWORK of PDORMQR with SIDE = 'L' (IA = JA = IC =
/// JC = 1): max(NB_A·(NB_A−1)/2, (MpC0 + NqC0)·NB_A) + NB_A².
fn ormqr_lwork_min(grid: &Grid, nb_a: usize, c: &CheckedMatrix) -> usize {
    let mpc0 = numroc(c.m, c.desc.mb(), grid.myrow() as usize, 0, grid.nprow() as usize);
    let nqc0 = numroc(c.n, c.desc.nb(), grid.mycol() as usize, 0, grid.npcol() as usize);
    (nb_a * nb_a.saturating_sub(1) / 2).max((mpc0 + nqc0) * nb_a) + nb_a * nb_a
}

/// PDORMQR's LWORK (ScaLAPACK's position; the `args` module names the
/// matrix arguments).
const ORMQR_LWORK: u32 = 16;

/// Fault-tolerant `C = Q·C` or `C = Qᵀ·C` with the QR factors ftla keeps
/// for A (ScaLAPACK `PDORMQR`'s arguments, SIDE = 'L'): those of the last
/// `pdgeqrf_ft_` given this A with this DESCA.
///
/// * `side` (global input): `"L"`; any other value gives INFO = -1 (Q
///   from the right is not offered).
/// * `trans` (global input): `"N"` applies Q, `"T"` applies Qᵀ.
/// * `m` (global input): the rows of C, the factorization's M.
/// * `n` (global input): the columns of C, ≥ 0.
/// * `k` (global input): the number of reflectors, min(M, N) of the
///   factorization (all of them).
/// * `a`, `ia`, `ja`, `desca` (local input): A as passed to `pdgeqrf_ft_`
///   (the same local array and descriptor), holding what it returned;
///   IA = JA = 1. ftla applies its own protected copy of the reflectors
///   and checks that A still holds them (in place: applies A itself, and
///   checks its fingerprint, as `pdgetrs_ft_`).
/// * `tau` (local input): the scalars `pdgeqrf_ft_` returned.
/// * `c`, `ic`, `jc`, `descc` (local input/output): the M×N matrix C,
///   overwritten by op(Q)·C; IC = JC = 1, C's rows in A's row blocks and,
///   beyond PDORMQR, NB_C = MB_C = MB_A and the first block on process
///   (0, 0) (C gets checksum columns laid out as A's).
/// * `work`, `lwork` (local): LWORK ≥ max(NB_A·(NB_A−1)/2, (MpC0 +
///   NqC0)·NB_A) + NB_A², PDORMQR's; `lwork = -1` is a workspace query
///   (WORK(1) receives the minimum). ftla allocates its own scratch.
/// * `info` (global output): as `pdgetrs_ft_`, the kept factors at A's
///   position (INFO = -6: none kept, "factor A with pdgeqrf_ft_ first", or
///   A changed since) and TAU's (-10: changed since);
///   `FTLA_INFO_INPUT_LOST` when they could not be rebuilt.
///
/// # Fault tolerance
/// As `pdgetrs_ft_`: the kept factors are rebuilt after a failure, and C
/// is protected by checksum columns during the call (kill points
/// `R@ormqr:STEP:PHASE`); INFO = 0 and the failure-free op(Q)·C.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdormqr_ft_(
    side: *const c_char,
    trans: *const c_char,
    m: *const c_int,
    n: *const c_int,
    k: *const c_int,
    a: *const f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    tau: *const f64,
    c: *mut f64,
    ic: *const c_int,
    jc: *const c_int,
    descc: *const c_int,
    work: *mut f64,
    lwork: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = Routine {
        name: drivers::PDORMQR_FT.c_symbol.expect("a C symbol"),
        log_name: drivers::PDORMQR_FT.routine,
        protection: Protection::FaultTolerant,
        keeps_result: false,
        agrees_first: false,
        ctxt_desc: pdormqr::DESCA,
    };
    const ROUTINE: &str = R.name;
    use pdormqr::{K, M, SIDE, TAU, TRANS};
    let a_arg = MatrixArg {
        name: "A",
        m: get(m),
        n: get(k),
        ia: get(ia),
        ja: get(ja),
        desc: desca,
        data: a,
        at: pdormqr::MATRIX_A,
        square_blocks: true,
    };
    let c_arg = MatrixArg {
        name: "C",
        m: get(m),
        n: get(n),
        ia: get(ic),
        ja: get(jc),
        desc: descc,
        data: c,
        at: pdormqr::MATRIX_C,
        square_blocks: false,
    };
    let (s, t, lwork) = (letter(side), letter(trans), get(lwork));
    let key = ArrayKey::of_kept(a, desca);
    // The checks that need no kept factors (also the workspace query's).
    let checked = |grid: &Grid, ictxt: c_int| -> Result<(Trans, CheckedMatrix, CheckedMatrix, usize)> {
        if s != b'L' {
            return Err(arg_error(ROUTINE, SIDE, 0, "SIDE", "must be 'L' (Q from the right is not offered)"));
        }
        let trans = match t {
            b'N' => Trans::No,
            b'T' => Trans::Yes,
            _ => return Err(arg_error(ROUTINE, TRANS, 0, "TRANS", "must be 'N' or 'T'")),
        };
        check_two_process_columns(ROUTINE, pdormqr::DESCA, "A", grid)?;
        let ca = a_arg.check(ROUTINE, grid, ictxt)?;
        let cc = c_arg.check(ROUTINE, grid, ictxt)?;
        Ok((trans, ca, cc, ormqr_lwork_min(grid, ca.desc.nb(), &cc)))
    };
    if lwork == -1 {
        let lwmin = run_local(&R, info, |g, x| checked(g, x).map(|(.., w)| w));
        if let (Some(lwmin), false) = (lwmin, work.is_null()) {
            // SAFETY: WORK holds at least one double.
            unsafe { *work = lwmin as f64 };
        }
        return;
    }
    let check = |grid: &Grid, ictxt: c_int, kept: &KeptFactors| -> Result<RhsArgs<Trans>> {
        let (trans, ca, cc, lwmin) = checked(grid, ictxt)?;
        let taus = numroc(ca.n, ca.desc.nb(), grid.mycol() as usize, 0, grid.npcol() as usize);
        if taus > 0 && tau.is_null() {
            return Err(null_part(ROUTINE, TAU, "TAU"));
        }
        if lwork < 0 || (lwork as usize) < lwmin {
            return Err(arg_error(
                ROUTINE,
                ORMQR_LWORK,
                0,
                "LWORK",
                format!("must be at least {lwmin} here, got {lwork}"),
            ));
        }
        let found = kept_for(kept, ROUTINE, key, pdormqr::A, "pdgeqrf_ft_", grid, a)?;
        if found.a.m != ca.m {
            return Err(arg_error(
                ROUTINE,
                M,
                0,
                "M",
                format!("must be the rows of the factorization kept for A ({}), got {}", found.a.m, ca.m),
            ));
        }
        let reflectors = found.a.m.min(found.a.n);
        if ca.n != reflectors {
            return Err(arg_error(
                ROUTINE,
                K,
                0,
                "K",
                format!("must be min(M, N) = {reflectors} of the factorization kept for A, got {}", ca.n),
            ));
        }
        if let Factors::Qr(f) = &found.factors {
            let whole = found.factors.holding() == Holding::Whole;
            if whole && !f.with_local_storage(|s| tau_matches(s, &f.tau(), tau)) {
                return Err(changed(ROUTINE, TAU, "TAU", "pdgeqrf_ft_"));
            }
        }
        Ok(RhsArgs { key: found.key, b: cc.import(grid, ROUTINE, c, false)?, b_arg: cc, nrhs: cc.n, trans })
    };
    let arrays = [
        ArrayArg::new("A", pdormqr::A, a, desca, Access::Read),
        ArrayArg::new("TAU", TAU, tau, desca, Access::Read),
        ArrayArg::new("C", pdormqr::C, c, descc, Access::Update),
    ];
    run(&R, info, &arrays, check, |ctx, p, lost| {
        let Some(Kept { factors: Factors::Qr(f), .. }) = ctx.kept.find(&p.key) else {
            return Err(no_kept_factors(ROUTINE, pdormqr::A));
        };
        pdormqr_ft(&mut ctx.region, p.trans, f, &mut p.b, &FtOptions::default())?;
        p.export_unless_lost(lost, c);
        Ok(())
    });
}

/// ScaLAPACK's smallest LWORK of PDGELS with TRANS = 'N' (IA = JA = IB =
/// JB = 1, first blocks on process (0, 0)): LTAU + max(LWF, LWS).
fn gels_lwork_min(grid: &Grid, a: &CheckedMatrix, b: &CheckedMatrix) -> usize {
    let (p, q, myrow, mycol) =
        (grid.nprow() as usize, grid.npcol() as usize, grid.myrow() as usize, grid.mycol() as usize);
    let (m, n, nb) = (a.m, a.n, a.desc.nb());
    let mpa0 = numroc(m, nb, myrow, 0, p);
    let nqa0 = numroc(n, nb, mycol, 0, q);
    let nrhsqb0 = numroc(b.n, b.desc.nb(), mycol, 0, q);
    let lwf = nb * (mpa0 + nqa0 + nb);
    if m >= n {
        let ltau = numroc(m.min(n), nb, mycol, 0, q);
        let mpb0 = numroc(m, b.desc.mb(), myrow, 0, p);
        let lws = (nb * nb.saturating_sub(1) / 2).max((nrhsqb0 + mpb0) * nb) + nb * nb;
        ltau + lwf.max(lws)
    } else {
        let ltau = numroc(m.min(n), nb, myrow, 0, p);
        let npb0 = numroc(n, b.desc.mb(), myrow, 0, p);
        let lcmp = lcm(p, q) / p;
        let spread = nqa0 + numroc(numroc(n, nb, 0, 0, p), nb, 0, 0, lcmp);
        let lws = (nb * nb.saturating_sub(1) / 2).max((npb0 + spread.max(nrhsqb0)) * nb) + nb * nb;
        ltau + lwf.max(lws)
    }
}

fn lcm(a: usize, b: usize) -> usize {
    let (mut x, mut y) = (a, b);
    while y != 0 {
        (x, y) = (y, x % y);
    }
    a.checked_div(x).map_or(0, |q| q * b)
}

/// The argument checks that `pdpotrs_ft_` and `pdposv_ft_` share, at
/// PDPOTRS's positions (PDPOSV's are the same) and in ScaLAPACK's order:
/// the descriptors, then UPLO and NRHS. Local.
fn check_chol_solve(
    routine: &str,
    grid: &Grid,
    ictxt: c_int,
    (a_arg, b_arg): (&MatrixArg, &MatrixArg),
    uplo: u8,
    nrhs: *const c_int,
) -> Result<(CheckedMatrix, CheckedMatrix)> {
    check_two_process_columns(routine, pdpotrs::DESCA, "A", grid)?;
    let ca = a_arg.check(routine, grid, ictxt)?;
    let cb = b_arg.check(routine, grid, ictxt)?;
    crate::drivers::lower_only(routine, pdpotrs::UPLO, uplo)?;
    check_nrhs(routine, pdpotrs::NRHS, get(nrhs))?;
    Ok((ca, cb))
}

/// pdposv_ft_'s matrices: A (as `pdpotrf_ft_` takes it) and B.
struct PosvArgs {
    a: FactoredArgs,
    b_arg: CheckedMatrix,
    b: DistMatrix,
}

impl Work for PosvArgs {
    fn is_empty(&self) -> bool {
        // (PDPOSV factors A even without right-hand sides.)
        self.a.a.n == 0
    }
}

/// Fault-tolerant `PDPOSV` (UPLO = L): factors the N×N symmetric positive
/// definite A as `pdpotrf_ft_` does and solves `A·X = B` with the factor
/// as `pdpotrs_ft_` does, ScaLAPACK `PDPOSV`'s arguments.
///
/// * `uplo` (global input): `"L"` (`"U"` is refused: INFO = -1).
/// * `n`, `nrhs` (global input): the order of A and the number of
///   right-hand sides, ≥ 0.
/// * `a`, `ia`, `ja`, `desca` (local input/output): A as `pdpotrf_ft_`
///   takes it; on exit L in its lower triangle. The factor stays
///   protected after the call, as `pdpotrf_ft_`'s (for `pdpotrs_ft_`
///   with this A; in A itself when it was declared with
///   `ftla_in_place_`).
/// * `b`, `ib`, `jb`, `descb` (local input/output): the N×NRHS right-hand
///   sides on entry, X on exit; as `pdpotrs_ft_`'s B.
/// * `info` (global output): 0; -i or -(i·100+j) for a bad argument i,
///   the same on every process (every argument, B's included, is checked
///   before A is touched, as PDPOSV does); k > 0 when the leading minor
///   of order k is not positive definite (as `pdpotrf_ft_`; B unchanged);
///   `FTLA_INFO_UNRECOVERABLE`, `FTLA_INFO_NO_MEMORY`, `FTLA_INFO_ERROR`;
///   on a replacement, `FTLA_INFO_RESULT_LOST` for a call that completed
///   before it joined (its part of X is lost: B is recorded as lost; its
///   A gets the factor back from its next ftla call, as after
///   `pdpotrf_ft_`).
///
/// # Fault tolerance
/// The factorization runs as `pdpotrf_ft_` (kill points `R@potrf:…`) and
/// the solve as `pdpotrs_ft_` (kill points `R@potrs:…`): a process lost
/// in either, or before the call, is repaired inside the call, INFO = 0
/// and X is the failure-free one.
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdposv_ft_(
    uplo: *const c_char,
    n: *const c_int,
    nrhs: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = Routine {
        name: "pdposv_ft_",
        // (Its first call in the status log is the factorization's, then
        // the solve's.)
        log_name: drivers::PDPOTRF_FT.routine,
        protection: Protection::FaultTolerant,
        // (X is this call's result too: lost on a replacement that joined
        // after the call; the factor is kept and mended all the same.)
        keeps_result: false,
        agrees_first: false,
        ctxt_desc: pdpotrs::DESCA,
    };
    const ROUTINE: &str = R.name;
    // (PDPOSV's arguments are at PDPOTRS's positions.)
    let (a_arg, b_arg) =
        solve_matrices((pdpotrs::MATRIX_A, pdpotrs::MATRIX_B), n, nrhs, a, ia, ja, desca, b, ib, jb, descb);
    let key = ArrayKey::of_kept(a, desca);
    let u = letter(uplo);
    let check = |grid: &Grid, ictxt: c_int, kept: &KeptFactors| -> Result<PosvArgs> {
        let (ca, cb) = check_chol_solve(ROUTINE, grid, ictxt, (&a_arg, &b_arg), u, nrhs)?;
        let fa = FactoredArgs::new(&R, grid, ca, a, key.and_then(|k| kept.declared(&k)))?;
        let bm = cb.import(grid, ROUTINE, b, false)?;
        let kind = FtOptions::from_env()?.layout;
        fa.with_matrix(|am| check_rhs(ROUTINE, pdpotrs::DESCB, grid, am, &bm, kind)).unwrap_or(Ok(()))?;
        Ok(PosvArgs { a: fa, b_arg: cb, b: bm })
    };
    let arrays = [
        ArrayArg::new("A", pdpotrs::A, a, desca, Access::Update),
        ArrayArg::new("B", pdpotrs::B, b, descb, Access::Update),
    ];
    run(&R, info, &arrays, check, |ctx, p, _| {
        let opts = FtOptions::from_env()?;
        let mat = p.a.take_matrix(ctx.region.grid(), &R, a)?;
        let (f, _) = CholFactors::factor(&mut ctx.region, mat, &opts)?;
        let solved = pdpotrs_ft(&mut ctx.region, &f, &mut p.b, &opts);
        // What this process computed or received (not, on a replacement,
        // the results of a call that completed before it joined: a hollow
        // factor, B marked lost); in place, A holds the factor already.
        let grid = ctx.region.grid();
        if f.holding() == Holding::Whole && p.a.in_place.is_none() {
            f.with_local_storage(|stored| p.a.a.export_leading(grid, stored, a));
        }
        if let Some(key) = key {
            ctx.kept.keep(key, p.a.a, Factors::Chol(f), p.a.place());
        }
        solved?;
        if !p.b.is_lost() {
            p.b_arg.export(&p.b, b);
        }
        Ok(())
    });
}

/// pdgels_ft_'s matrices: A (taken by the factorization) and B.
struct GelsArgs {
    a: CheckedMatrix,
    mat: Option<DistMatrix>,
    b_arg: CheckedMatrix,
    b: DistMatrix,
}

impl Work for GelsArgs {
    fn is_empty(&self) -> bool {
        self.a.m == 0 || self.a.n == 0 || self.b_arg.n == 0
    }
}

/// Fault-tolerant least squares with ScaLAPACK `PDGELS`'s arguments, TRANS
/// = 'N': for M ≥ N, X minimising ‖A·X − B‖₂; for M < N, the minimum-norm
/// solution of A·X = B (A of full rank).
///
/// * `trans` (global input): `"N"`; any other value gives INFO = -1.
/// * `m`, `n` (global input): the rows and columns of A.
/// * `nrhs` (global input): the columns of B, ≥ 0.
/// * `a`, `ia`, `ja`, `desca` (local input/output): A; IA = JA = 1, MB_A =
///   NB_A, the first block on process (0, 0), at least two process
///   columns. On exit, for M ≥ N, its QR factors as PDGELS leaves them
///   (as `pdgeqrf_ft_`, without TAU); for M < N, A as on entry (ftla
///   factors Aᵀ in its own storage). These factors are not kept after the
///   call (factor with `pdgeqrf_ft_` to keep them for `pdormqr_ft_`).
/// * `b`, `ib`, `jb`, `descb` (local input/output): max(M, N)×NRHS; on
///   entry B in rows 1..M; on exit X in rows 1..N (for M ≥ N, rows N+1..M
///   hold the residual's components: the residual norm of column j is
///   ‖B(N+1:M, j)‖₂). IB = JB = 1, B's rows in A's row blocks and, beyond
///   PDGELS, NB_B = MB_B = MB_A and the first block on process (0, 0).
/// * `work`, `lwork` (local): LWORK ≥ PDGELS's minimum (LTAU + max(LWF,
///   LWS)); `lwork = -1` is a workspace query (WORK(1) receives that
///   minimum). ftla allocates its own scratch: the protected factors
///   (about (1 + 4/Q) × A's local part; an `ftla_in_place_` declaration
///   of A is not used here), B's protected copy (about
///   (2 + 2/Q) × B's local part) and a step's panel, for the call.
/// * `info` (global output): 0; -i or -(i·100+j) for a bad argument, the
///   same on every process; `FTLA_INFO_UNRECOVERABLE`,
///   `FTLA_INFO_NO_MEMORY`, `FTLA_INFO_ERROR`; on a replacement,
///   `FTLA_INFO_RESULT_LOST` for a call that completed before it joined
///   (its part of A and X is lost: both are recorded as lost).
///
/// # Fault tolerance
/// The factorization runs as `pdgeqrf_ft_` (kill points `R@qr:…`) and the
/// solve on its protected factors with B protected by checksum columns
/// (kill points `R@gels:STEP:PHASE`): a process lost in either is
/// repaired inside the call, INFO = 0 and X is the failure-free one. A
/// process lost before the call is found and repaired at its start, and
/// the call goes on with the replacement (see `pdgetrs_ft_`).
///
/// # Safety
/// Every pointer is null where this says it may be, or points to what
/// the argument list says (arrays of ScaLAPACK's sizes).
#[no_mangle]
pub unsafe extern "C" fn pdgels_ft_(
    trans: *const c_char,
    m: *const c_int,
    n: *const c_int,
    nrhs: *const c_int,
    a: *mut f64,
    ia: *const c_int,
    ja: *const c_int,
    desca: *const c_int,
    b: *mut f64,
    ib: *const c_int,
    jb: *const c_int,
    descb: *const c_int,
    work: *mut f64,
    lwork: *const c_int,
    info: *mut c_int,
) {
    const R: Routine = Routine {
        name: drivers::PDGELS_FT.c_symbol.expect("a C symbol"),
        // (Its first call in the status log is the factorization's, then
        // the solve's.)
        log_name: drivers::PDGEQRF_FT.routine,
        protection: Protection::FaultTolerant,
        keeps_result: false,
        // (Of fewer rows than columns, it transposes A before its driver's
        // verdict.)
        agrees_first: true,
        ctxt_desc: pdgels::DESCA,
    };
    const ROUTINE: &str = R.name;
    use pdgels::{LWORK, NRHS, TRANS};
    let a_arg = MatrixArg {
        name: "A",
        m: get(m),
        n: get(n),
        ia: get(ia),
        ja: get(ja),
        desc: desca,
        data: a,
        at: pdgels::MATRIX_A,
        square_blocks: true,
    };
    // (B is max(M, N)×NRHS; a bad M or N is A's error first.)
    let b_at = MatrixPositions { m: pdgels::M, ..pdgels::MATRIX_B };
    let b_arg = MatrixArg {
        name: "B",
        m: get(m).max(get(n)),
        n: get(nrhs),
        ia: get(ib),
        ja: get(jb),
        desc: descb,
        data: b,
        at: b_at,
        square_blocks: false,
    };
    let (t, lwork) = (letter(trans), get(lwork));
    let checked = |grid: &Grid, ictxt: c_int| -> Result<(CheckedMatrix, CheckedMatrix, usize)> {
        if t != b'N' {
            return Err(arg_error(ROUTINE, TRANS, 0, "TRANS", "must be 'N' (the transposed problem is not offered)"));
        }
        check_nrhs(ROUTINE, NRHS, get(nrhs))?;
        check_two_process_columns(ROUTINE, pdgels::DESCA, "A", grid)?;
        let ca = a_arg.check(ROUTINE, grid, ictxt)?;
        let cb = b_arg.check(ROUTINE, grid, ictxt)?;
        Ok((ca, cb, gels_lwork_min(grid, &ca, &cb)))
    };
    if lwork == -1 {
        let lwmin = run_local(&R, info, |g, x| checked(g, x).map(|(.., w)| w));
        if let (Some(lwmin), false) = (lwmin, work.is_null()) {
            // SAFETY: WORK holds at least one double.
            unsafe { *work = lwmin as f64 };
        }
        return;
    }
    let check = |grid: &Grid, ictxt: c_int, _: &KeptFactors| -> Result<GelsArgs> {
        let (ca, cb, lwmin) = checked(grid, ictxt)?;
        if lwork < 0 || (lwork as usize) < lwmin {
            return Err(arg_error(ROUTINE, LWORK, 0, "LWORK", format!("must be at least {lwmin} here, got {lwork}")));
        }
        Ok(GelsArgs {
            mat: Some(ca.import(grid, ROUTINE, a, ca.m >= ca.n)?),
            a: ca,
            b: cb.import(grid, ROUTINE, b, false)?,
            b_arg: cb,
        })
    };
    let arrays = [
        ArrayArg::new("A", pdgels::A, a, desca, Access::Update),
        ArrayArg::new("B", pdgels::B, b, descb, Access::Update),
    ];
    run(&R, info, &arrays, check, |ctx, p, _| {
        let grid = ctx.region.grid();
        let mat = match p.mat.take() {
            Some(m) => m,
            // (Run again after a process lost before the first commit: the
            // caller's A is as it was.)
            None => p.a.import(grid, ROUTINE, a, p.a.m >= p.a.n)?,
        };
        let (factors, _) = pdgels_ft(&mut ctx.region, mat, &mut p.b, &FtOptions::from_env()?)?;
        // What this process computed or received (not, on a replacement,
        // the results of a call that completed before it joined: hollow
        // factors, B marked lost).
        if p.a.m >= p.a.n && factors.holding() == Holding::Whole {
            let grid = ctx.region.grid();
            factors.with_local_storage(|stored| p.a.export_leading(grid, stored, a));
        }
        if !p.b.is_lost() {
            p.b_arg.export(&p.b, b);
        }
        Ok(())
    });
}
