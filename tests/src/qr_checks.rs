//! Multi-rank QR checks driven by `tests/tests/qr.rs`: factor generated
//! matrices on a grid and print ScaLAPACK's residuals, one line per case.
//!
//! ```text
//! qr-checks --grid PxQ [--timeout S] [--panel auto|householder|tsqr|cholqr2] CASE...
//!     CASE = MxNxNB[:kind]   (kind: uniform|cond1e6|dd|graded|kahan|rankdef|big|tiny)
//! qr-checks --grid PxQ gels MxNxNB
//! qr-checks --grid PxQ bad-blocks
//! qr-checks --grid PxQ arrays MxNxNB
//! qr-checks --grid PxQ ft-storage MxNxNB
//! qr-checks --grid PxQ ft-bad-source
//! qr-checks --grid Px1 ft-one-column
//! ```

use blacs_ft::launch::{inside_mpi, relaunch, write_status, Relaunch};
use blacs_ft::{Grid, GridOptions, Joined, Runtime};
use recovery::Region;
use scalapack_ft::blas::Trans;
use scalapack_ft::descriptor::Descriptor;
use scalapack_ft::generate::{Generator, MatrixKind};
use scalapack_ft::lu_ft::pdgetrf_ft;
use scalapack_ft::qr::{check, pdgels, pdgeqrf, pdgeqrf_with, pdormqr, PanelMethod, QrOptions};
use scalapack_ft::qr_ft::{pdgeqrf_ft, pdgeqrf_ft_in, FtOptions, FtWorkspace};
use scalapack_ft::DistMatrix;
use std::time::Duration;

/// QR checks (see the module documentation).
#[derive(clap::Parser)]
struct Cli {
    /// Cases: `MxNxNB[:kind]`, or gels MxNxNB, bad-blocks, ft-storage MxNxNB,
    /// ft-bad-source, ft-one-column.
    cases: Vec<String>,
    /// Process grid PxQ.
    #[arg(long, default_value = "2x2", value_parser = ftla_tests::parse_grid)]
    grid: (i32, i32),
    /// Hard timeout of the job, seconds.
    #[arg(long, default_value_t = 120)]
    timeout: u64,
    /// How pdgeqrf factors the panels in the factorization cases.
    #[arg(long, default_value = "auto")]
    panel: PanelMethod,
}

fn main() {
    let cli = <Cli as clap::Parser>::parse();
    let (grid_shape, timeout, cases) = (cli.grid, cli.timeout, cli.cases);
    let qr_opts = QrOptions { panel: cli.panel };
    let (p, q) = grid_shape;
    if !inside_mpi() {
        relaunch(&Relaunch {
            nprocs: (p * q) as u32,
            timeout: Some(Duration::from_secs(timeout)),
            ulfm: true,
            cof: None,
            program: None,
            grid: None,
        });
    }
    scalapack_ft::blas::use_single_thread();
    let mut rt = Runtime::init().expect("MPI");
    let comm = rt.world_dup().expect("comm");
    let grid = match Grid::join(&mut rt, comm, p, q, GridOptions::without_kills()) {
        Ok(Joined::Active(g)) => g,
        _ => rt.finish(1),
    };
    let mut ok = true;
    let mut words = cases.iter();
    while let Some(c) = words.next() {
        let line = match c.as_str() {
            "gels" => gels(&grid, words.next().map(String::as_str).unwrap_or("40x10x4")),
            "bad-blocks" => bad_blocks(&grid),
            "bad-apply" => bad_apply(&grid),
            "arrays" => arrays(&grid, words.next().map(String::as_str).unwrap_or("37x23x4")),
            "ft-bad-source" => ft_bad_source(&mut rt, p, q),
            "ft-one-column" => ft_one_column(&mut rt, p, q),
            "ft-storage" => ft_storage(&mut rt, p, q, words.next().map(String::as_str).unwrap_or("70x50x8")),
            spec => factor_case(&grid, spec, &qr_opts),
        };
        match line {
            Ok(l) => {
                if grid.rank() == 0 {
                    println!("{l}");
                }
            }
            Err(e) => {
                ok = false;
                println!("CASE {c} rank={} error: {e}", grid.rank());
            }
        }
    }
    if grid.rank() == 0 {
        write_status(ok, "qr-checks");
    }
    grid.close();
    rt.finish(if ok { 0 } else { 1 })
}

fn parse_case(spec: &str) -> (usize, usize, usize, MatrixKind) {
    let (m, n, nb, kind) = parse_factor_case(spec);
    match kind {
        CaseKind::Generated(kind) => (m, n, nb, kind),
        _ => (m, n, nb, MatrixKind::Uniform),
    }
}

/// The matrices a factorization case may ask for: the generator's, and the
/// hard cases of a QR panel.
#[derive(Clone, Copy)]
enum CaseKind {
    Generated(MatrixKind),
    /// Uniform with column j scaled by 10^(−12·j/N): a graded matrix.
    Graded,
    /// Kahan's upper-triangular matrix (θ = 1.2, nearly singular although
    /// no diagonal entry is small), its rows in reverse order so that the
    /// panels have reflectors to compute (the M − N extra rows, zero, come
    /// first).
    Kahan,
    /// Rank N/2 (the product of uniform M×N/2 and N/2×N factors).
    RankDeficient,
    /// Uniform times a scale near overflow or underflow.
    Scaled(f64),
}

fn parse_factor_case(spec: &str) -> (usize, usize, usize, CaseKind) {
    let (dims, kind) = spec.split_once(':').unwrap_or((spec, "uniform"));
    let v: Vec<usize> = dims.split('x').map(|x| x.parse().expect("MxNxNB")).collect();
    let kind = match kind {
        "cond1e6" => CaseKind::Generated(MatrixKind::Conditioned { cond: 1e6 }),
        "dd" => CaseKind::Generated(MatrixKind::DiagonallyDominant),
        "graded" => CaseKind::Graded,
        "kahan" => CaseKind::Kahan,
        "rankdef" => CaseKind::RankDeficient,
        "big" => CaseKind::Scaled(1e300),
        "tiny" => CaseKind::Scaled(1e-300),
        _ => CaseKind::Generated(MatrixKind::Uniform),
    };
    (v[0], v[1], v[2], kind)
}

/// Element (i, j) of an m×n case matrix.
fn case_element(kind: CaseKind, gen: &Generator, m: usize, n: usize) -> impl Fn(usize, usize) -> f64 + '_ {
    let half = (n / 2).max(1);
    let right = Generator::new(MatrixKind::Uniform, 8, half, n).expect("generator");
    move |i, j| match kind {
        CaseKind::Generated(_) => gen.element(i, j),
        CaseKind::Graded => gen.element(i, j) * 10f64.powf(-12.0 * j as f64 / n.max(1) as f64),
        CaseKind::Kahan => {
            let (s, c) = 1.2f64.sin_cos();
            let r = m - 1 - i;
            if r >= n {
                return 0.0;
            }
            let i = r;
            match i.cmp(&j) {
                std::cmp::Ordering::Greater => 0.0,
                std::cmp::Ordering::Equal => s.powi(i as i32),
                std::cmp::Ordering::Less => -c * s.powi(i as i32),
            }
        }
        CaseKind::RankDeficient => (0..half).map(|k| gen.element(i, k) * right.element(k, j)).sum(),
        CaseKind::Scaled(scale) => gen.element(i, j) * scale,
    }
}

fn factor_case(grid: &Grid, spec: &str, opts: &QrOptions) -> Result<String, String> {
    let (m, n, nb, kind) = parse_factor_case(spec);
    let base = match kind {
        CaseKind::Generated(k) => k,
        _ => MatrixKind::Uniform,
    };
    let gen = Generator::new(base, 7, m, n).map_err(|e| e.to_string())?;
    let a = DistMatrix::from_fn(grid, m, n, nb, nb, case_element(kind, &gen, m, n)).map_err(|e| e.to_string())?;
    let mut qr = a.clone();
    let mut tau = Vec::new();
    let t = std::time::Instant::now();
    pdgeqrf_with(grid, &mut qr, &mut tau, opts).map_err(|e| e.to_string())?;
    let secs = t.elapsed().as_secs_f64();
    let res = check::qr_residual(grid, &a, &qr, &tau).map_err(|e| e.to_string())?;
    let orth = check::orthogonality(grid, &qr, &tau).map_err(|e| e.to_string())?;
    let good = res < 16.0 && orth < 16.0 && tau.len() == m.min(n);
    Ok(format!(
        "CASE {spec} m={m} n={n} nb={nb} residual={res:.3} orthogonality={orth:.3} time={secs:.4} {}",
        if good { "ok" } else { "FAIL" }
    ))
}

/// Least squares on a consistent system: X must be recovered.
fn gels(grid: &Grid, spec: &str) -> Result<String, String> {
    let (m, n, nb, _) = parse_case(spec);
    let gen = Generator::new(MatrixKind::Uniform, 11, m, n).map_err(|e| e.to_string())?;
    let x_true = |i: usize, j: usize| 1.0 + i as f64 * 0.25 - j as f64;
    let nrhs = 3;
    let mut a = DistMatrix::from_fn(grid, m, n, nb, nb, |i, j| gen.element(i, j)).map_err(|e| e.to_string())?;
    // B = A·X_true, computed element by element (small test sizes).
    let mut b =
        DistMatrix::from_fn(grid, m, nrhs, nb, nb, |i, j| (0..n).map(|k| gen.element(i, k) * x_true(k, j)).sum())
            .map_err(|e| e.to_string())?;
    pdgels(grid, &mut a, &mut b).map_err(|e| e.to_string())?;
    let full = b.gather(grid, 0).map_err(|e| e.to_string())?;
    let mut err = 0.0f64;
    if let Some(full) = full {
        for j in 0..nrhs {
            for i in 0..n {
                err = err.max((full[i + j * m] - x_true(i, j)).abs());
            }
        }
    }
    Ok(format!("GELS {spec} max_error={err:.3e} {}", if err < 1e-8 || grid.rank() != 0 { "ok" } else { "FAIL" }))
}

/// pdgeqrf_ft in its storages: a separate extended matrix (A copied in
/// and out), A's own storage grown by `FtWorkspace::in_place`, that
/// storage again on a second call with the room left from the first, and a
/// copy of A with a leading dimension past its local rows (which cannot
/// grow: `in_place` gives it a separate extended matrix). The
/// factors must be bit-identical and pass the residual checks, A's local
/// array must keep its length, and the room must stay for the next call.
fn ft_storage(rt: &mut Runtime, p: i32, q: i32, spec: &str) -> Result<String, String> {
    let comm = rt.world_dup().map_err(|e| e.to_string())?;
    let grid = match Grid::join(rt, comm, p, q, GridOptions::without_kills()) {
        Ok(Joined::Active(g)) => g,
        _ => return Err("no grid".into()),
    };
    let mut region = Region::new(grid).map_err(|e| e.to_string())?;
    let (m, n, nb, kind) = parse_case(spec);
    let gen = Generator::new(kind, 5, m, n).map_err(|e| e.to_string())?;
    let a = DistMatrix::from_fn(region.grid(), m, n, nb, nb, |i, j| gen.element(i, j)).map_err(|e| e.to_string())?;
    let opts = FtOptions { verify: true, ..FtOptions::default() };
    let mut copied = a.clone();
    let mut tau_copied = Vec::new();
    let report = pdgeqrf_ft(&mut region, &mut copied, &mut tau_copied, &opts).map_err(|e| e.to_string())?;
    let mut checks_ok = report.check.is_some_and(|c| c.ok);
    let mut in_place = a.clone();
    let mut work = FtWorkspace::in_place(region.grid(), &mut in_place, opts.layout).map_err(|e| e.to_string())?;
    let mut identical = true;
    for call in 0..2 {
        if call == 1 {
            in_place.local_mut().copy_from_slice(a.local());
        }
        let mut tau = Vec::new();
        let report =
            pdgeqrf_ft_in(&mut region, &mut in_place, &mut tau, &opts, &mut work).map_err(|e| e.to_string())?;
        checks_ok &= report.check.is_some_and(|c| c.ok);
        identical &= in_place.local() == copied.local() && tau == tau_copied;
    }
    // A leading dimension past the local rows: A cannot hold the extended
    // matrix's columns, so the call works in a separate one.
    let padded_lld = a.lld() + 3;
    let desc =
        Descriptor::new(m, n, nb, nb, 0, 0, padded_lld, 0, p as usize, q as usize, region.grid().myrow() as usize)
            .map_err(|e| e.reason.clone())?;
    let mut padded = DistMatrix::from_local(region.grid(), desc, vec![f64::NAN; padded_lld * a.local_cols().max(1)])
        .map_err(|e| e.to_string())?;
    for j in 0..a.local_cols() {
        for i in 0..a.local_rows() {
            padded.local_mut()[i + j * padded_lld] = a.local()[i + j * a.lld()];
        }
    }
    let mut work = FtWorkspace::in_place(region.grid(), &mut padded, opts.layout).map_err(|e| e.to_string())?;
    let mut tau = Vec::new();
    let report = pdgeqrf_ft_in(&mut region, &mut padded, &mut tau, &opts, &mut work).map_err(|e| e.to_string())?;
    checks_ok &= report.check.is_some_and(|c| c.ok);
    identical &= tau == tau_copied;
    for j in 0..a.local_cols() {
        for i in 0..a.local_rows() {
            identical &= padded.local()[i + j * padded_lld] == copied.local()[i + j * a.lld()];
        }
    }
    let grid = region.grid();
    let kept_length = in_place.local().len() == a.local().len();
    let res = check::qr_residual(grid, &a, &in_place, &tau_copied).map_err(|e| e.to_string())?;
    let orth = check::orthogonality(grid, &in_place, &tau_copied).map_err(|e| e.to_string())?;
    // Every rank's verdict, so that rank 0's line speaks for all.
    let mut bad = [if identical && kept_length && checks_ok { 0i64 } else { 1 }];
    grid.max(blacs_ft::Scope::All, &mut bad).map_err(|e| e.to_string())?;
    let good = bad[0] == 0 && res < 16.0 && orth < 16.0;
    region.into_grid().close();
    Ok(format!(
        "FT-STORAGE {spec} identical={identical} kept_length={kept_length} checksums_ok={checks_ok} residual={res:.3} \
         orthogonality={orth:.3} {}",
        if good { "ok" } else { "FAIL" }
    ))
}

/// A matrix whose first block is not on process (0, 0) is refused by
/// pdgeqrf_ft with the same typed error everywhere.
fn ft_bad_source(rt: &mut Runtime, p: i32, q: i32) -> Result<String, String> {
    let comm = rt.world_dup().map_err(|e| e.to_string())?;
    let grid = match Grid::join(rt, comm, p, q, GridOptions::without_kills()) {
        Ok(Joined::Active(g)) => g,
        _ => return Err("no grid".into()),
    };
    let mut region = Region::new(grid).map_err(|e| e.to_string())?;
    let (m, n, nb) = (40, 30, 4);
    let myrow = region.grid().myrow() as usize;
    let desc =
        Descriptor::with_min_lld(m, n, nb, nb, 0, 1, 0, p as usize, q as usize, myrow).map_err(|e| e.reason.clone())?;
    let len = desc.lld() * desc.local_cols(region.grid().mycol() as usize, q as usize);
    let mut a = DistMatrix::from_local(region.grid(), desc, vec![1.0; len]).map_err(|e| e.to_string())?;
    let mut tau = Vec::new();
    let outcome = pdgeqrf_ft(&mut region, &mut a, &mut tau, &FtOptions::default());
    let rank = region.grid().rank();
    region.into_grid().close();
    match outcome {
        Ok(_) => Err("pdgeqrf_ft accepted CSRC_A = 1".into()),
        Err(e) => {
            println!("BAD-FT rank={rank} info={} error: {e}", e.info());
            Ok(format!("BAD-SOURCE info={}", e.info()))
        }
    }
}

/// On a grid with one process column, pdgeqrf_ft and pdgetrf_ft refuse a
/// valid matrix with the same typed error everywhere (the C ABI's: the
/// CTXT entry of DESCA).
fn ft_one_column(rt: &mut Runtime, p: i32, q: i32) -> Result<String, String> {
    let comm = rt.world_dup().map_err(|e| e.to_string())?;
    let grid = match Grid::join(rt, comm, p, q, GridOptions::without_kills()) {
        Ok(Joined::Active(g)) => g,
        _ => return Err("no grid".into()),
    };
    let mut region = Region::new(grid).map_err(|e| e.to_string())?;
    let a = || DistMatrix::from_fn(region.grid(), 40, 30, 4, 4, |i, j| (1 + i + 2 * j) as f64);
    let (mut qr, mut lu) = (a().map_err(|e| e.to_string())?, a().map_err(|e| e.to_string())?);
    let qr = pdgeqrf_ft(&mut region, &mut qr, &mut Vec::new(), &FtOptions::default());
    let lu = pdgetrf_ft(&mut region, &mut lu, &mut Vec::new(), &FtOptions::default());
    let rank = region.grid().rank();
    region.into_grid().close();
    match (qr, lu) {
        (Err(qr), Err(lu)) => {
            println!("ONE-COLUMN rank={rank} qr={} lu={} error: {qr} / {lu}", qr.info(), lu.info());
            Ok(format!("ONE-COLUMN qr={} lu={}", qr.info(), lu.info()))
        }
        _ => Err(format!("a {p}x{q} grid was accepted by a fault-tolerant factorization")),
    }
}

/// MB ≠ NB is refused with the same typed error everywhere.
fn bad_blocks(grid: &Grid) -> Result<String, String> {
    let mut a = DistMatrix::zeros(grid, 20, 20, 4, 5).map_err(|e| e.to_string())?;
    let mut tau = Vec::new();
    match pdgeqrf(grid, &mut a, &mut tau) {
        Ok(()) => Err("pdgeqrf accepted MB != NB".into()),
        Err(e) => {
            println!("BAD rank={} info={} error: {e}", grid.rank(), e.info());
            Ok(format!("BAD-BLOCKS info={}", e.info()))
        }
    }
}

/// pdormqr's argument errors, with PDORMQR's positions: K past min(M, N)
/// (argument 5), C with other row blocks than A (DESCC, argument 14).
fn bad_apply(grid: &Grid) -> Result<String, String> {
    let a = DistMatrix::zeros(grid, 20, 12, 4, 4).map_err(|e| e.to_string())?;
    let tau = vec![0.0; 12];
    let info = |r: Result<(), scalapack_ft::Error>| r.err().map_or(0, |e| e.info());
    let mut c = DistMatrix::zeros(grid, 20, 3, 4, 4).map_err(|e| e.to_string())?;
    let k = info(pdormqr(grid, Trans::Yes, &a, &tau, 13, &mut c));
    let mut c = DistMatrix::zeros(grid, 20, 3, 5, 4).map_err(|e| e.to_string())?;
    let cb = info(pdormqr(grid, Trans::Yes, &a, &tau, 12, &mut c));
    println!("BADAPPLY rank={} k={k} c={cb}", grid.rank());
    Ok(format!("BAD-APPLY k={k} c={cb}"))
}

/// ndarray at the edge: an Array2 on rank 0 scattered, every local view
/// matching the distribution, gathered back equal; QR of the scattered
/// matrix checked against the array it came from.
fn arrays(grid: &Grid, spec: &str) -> Result<String, String> {
    let (m, n, nb, _) = parse_case(spec);
    let gen = Generator::new(MatrixKind::Uniform, 5, m, n).map_err(|e| e.to_string())?;
    let full = ndarray::Array2::from_shape_fn((m, n), |(i, j)| gen.element(i, j));
    let mine = (grid.rank() == 0).then(|| full.view());
    let a = DistMatrix::from_array(grid, 0, mine, nb, nb).map_err(|e| e.to_string())?;
    let view = a.local_view();
    if view.dim() != (a.local_rows(), a.local_cols()) {
        return Err(format!("local view is {:?}, the local array {}x{}", view.dim(), a.local_rows(), a.local_cols()));
    }
    for ((li, lj), &x) in view.indexed_iter() {
        if x != full[[a.global_row(li), a.global_col(lj)]] {
            return Err(format!("local ({li}, {lj}) holds {x}, not A({}, {})", a.global_row(li), a.global_col(lj)));
        }
    }
    let back = a.to_array(grid, 0).map_err(|e| e.to_string())?;
    if grid.rank() == 0 && back.as_ref() != Some(&full) {
        return Err("the gathered array differs from the scattered one".into());
    }
    let mut qr = DistMatrix::from_array(grid, 0, mine, nb, nb).map_err(|e| e.to_string())?;
    let mut tau = Vec::new();
    pdgeqrf(grid, &mut qr, &mut tau).map_err(|e| e.to_string())?;
    let res = check::qr_residual(grid, &a, &qr, &tau).map_err(|e| e.to_string())?;
    // A view can be written through too: scale the local array by 2.
    let mut b = a.clone();
    b.local_view_mut().mapv_inplace(|x| 2.0 * x);
    let doubled = b.to_array(grid, 0).map_err(|e| e.to_string())?;
    if grid.rank() == 0 && doubled != Some(&full * 2.0) {
        return Err("writing through the local view did not scale the matrix".into());
    }
    let good = res < 16.0;
    Ok(format!("ARRAYS {spec} scatter/view/gather equal, residual={res:.3} {}", if good { "ok" } else { "FAIL" }))
}
