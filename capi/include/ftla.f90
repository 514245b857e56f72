! ftla.f90 - the Fortran interface of ftla, fault-tolerant distributed
! dense linear algebra (libftla.so / libftla.a): module ftla.
!
! The same routines as the C header ftla.h (read it for what each
! argument means and for the fault-tolerance semantics; the comments here
! only say how Fortran calls them), declared with iso_c_binding so that
! the compiler checks every call:
!
!   - the grid functions Cftla_pinfo, Cftla_gridinit, Cftla_gridinfo,
!     Cftla_is_replacement, Cftla_comm_f, Cftla_gridexit, Cftla_exit
!     (BLACS's C names and argument lists: the scalars that ftla.h passes
!     by value are VALUE dummies here);
!   - the drivers with ScaLAPACK's argument lists, every argument by
!     reference: PDGEQRF_FT, PDGETRF_FT (whose factors ftla keeps
!     protected for the solves PDGETRS_FT and PDORMQR_FT until
!     FTLA_RELEASE), PDGELS_FT, PDCG_FT, FTLA_PDGEQRF, FTLA_PDGETRF,
!     FTLA_PDGETRS, FTLA_NUMROC, FTLA_DESCINIT (link names pdgeqrf_ft_,
!     ..., ftla_descinit_: the names gfortran gives them, so a program
!     that declares them EXTERNAL instead links to the same routines);
!   - the INFO codes FTLA_INFO_* and the exit code FTLA_EXIT_CHECKPOINTED.
!
! Strings. ORDER of Cftla_gridinit is a C string: pass 'Row'//C_NULL_CHAR.
! TRANS of FTLA_PDGETRS, PDGETRS_FT, PDORMQR_FT and PDGELS_FT and SIDE of
! PDORMQR_FT are one character read through a pointer; a BIND(C)
! interface passes no hidden length (a program calling them without this
! module passes them after INFO, which the routines never read).
!
! The module needs no MPI Fortran bindings: compile this file with the
! program (a .mod file is private to the compiler that wrote it) and link
! libftla, which brings its MPI and OpenBLAS:
!
!   gfortran -c PREFIX/include/ftla.f90
!   gfortran ftla.o program.f90 -L PREFIX/lib -lftla -Wl,-rpath,PREFIX/lib
!
! or use pkg-config (ftla.pc) or CMake (find_package(ftla), target
! ftla::ftla) as docs/install.md shows. Run the program with
! `ftla launch --np NP -- ./program`.
module ftla
  use, intrinsic :: iso_c_binding, only: c_int, c_int64_t, c_double, c_char, c_null_char
  implicit none
  private
  public :: c_int, c_double, c_char, c_null_char

  ! The exit code of a process whose job ends for a restart after a
  ! checkpoint-on-failure save.
  integer(c_int), parameter, public :: FTLA_EXIT_CHECKPOINTED = 76
  ! A process failure ftla could not recover from.
  integer(c_int), parameter, public :: FTLA_INFO_UNRECOVERABLE = -10001
  ! A plain routine lost a process: the grid was repaired; call the same
  ! routine again, with its input (see ftla.h).
  integer(c_int), parameter, public :: FTLA_INFO_PROCESS_LOST = -10002
  ! A process could not get the memory the routine needs.
  integer(c_int), parameter, public :: FTLA_INFO_NO_MEMORY = -10003
  ! Any other error; the reason is printed on stderr.
  integer(c_int), parameter, public :: FTLA_INFO_ERROR = -10004
  ! On a replacement process only: the call had completed before it
  ! joined; its local part of the matrix results is lost.
  integer(c_int), parameter, public :: FTLA_INFO_RESULT_LOST = -10005
  ! An input array's part on some process was lost with a failed process
  ! (an output of a call that returned FTLA_INFO_RESULT_LOST there): the
  ! same on every process, nothing computed; fill it again (see ftla.h).
  integer(c_int), parameter, public :: FTLA_INFO_INPUT_LOST = -10006

  public :: Cftla_pinfo, Cftla_gridinit, Cftla_gridinfo, Cftla_is_replacement, &
            Cftla_comm_f, Cftla_gridexit, Cftla_exit
  public :: ftla_numroc, ftla_descinit
  public :: pdgeqrf_ft, ftla_pdgeqrf, pdgetrf_ft, ftla_pdgetrf, ftla_pdgetrs, pdcg_ft
  public :: pdgetrs_ft, pdormqr_ft, pdgels_ft, ftla_release
  public :: pdpotrf_ft, pdpotrs_ft
  public :: ftla_kept_lsize, ftla_in_place, ftla_kept_bytes

  interface
    ! This process's number and the number of processes (starts MPI and
    ! ftla on first use; a spawned replacement joins the grid here).
    subroutine Cftla_pinfo(mypnum, nprocs) bind(C, name="Cftla_pinfo")
      import :: c_int
      integer(c_int), intent(out) :: mypnum, nprocs
    end subroutine

    ! Builds the NPROW x NPCOL grid; ORDER = 'Row'//C_NULL_CHAR.
    subroutine Cftla_gridinit(ictxt, order, nprow, npcol) bind(C, name="Cftla_gridinit")
      import :: c_int, c_char
      integer(c_int), intent(out) :: ictxt
      character(kind=c_char), dimension(*), intent(in) :: order
      integer(c_int), value :: nprow, npcol
    end subroutine

    ! The grid's shape and this process's row and column.
    subroutine Cftla_gridinfo(ictxt, nprow, npcol, myrow, mycol) bind(C, name="Cftla_gridinfo")
      import :: c_int
      integer(c_int), value :: ictxt
      integer(c_int), intent(out) :: nprow, npcol, myrow, mycol
    end subroutine

    ! 1 when this process took over a lost process's place, else 0.
    integer(c_int) function Cftla_is_replacement(ictxt) bind(C, name="Cftla_is_replacement")
      import :: c_int
      integer(c_int), value :: ictxt
    end function

    ! The Fortran handle (MPI_Fint) of the grid's communicator.
    integer(c_int) function Cftla_comm_f(ictxt) bind(C, name="Cftla_comm_f")
      import :: c_int
      integer(c_int), value :: ictxt
    end function

    ! Frees the grid (collective over the grid).
    subroutine Cftla_gridexit(ictxt) bind(C, name="Cftla_gridexit")
      import :: c_int
      integer(c_int), value :: ictxt
    end subroutine

    ! Ends ftla; NOTDONE = 0 also finishes MPI.
    subroutine Cftla_exit(notdone) bind(C, name="Cftla_exit")
      import :: c_int
      integer(c_int), value :: notdone
    end subroutine

    ! ScaLAPACK NUMROC.
    integer(c_int) function ftla_numroc(n, nb, iproc, isrcproc, nprocs) bind(C, name="ftla_numroc_")
      import :: c_int
      integer(c_int), intent(in) :: n, nb, iproc, isrcproc, nprocs
    end function

    ! ScaLAPACK DESCINIT.
    subroutine ftla_descinit(desc, m, n, mb, nb, irsrc, icsrc, ictxt, lld, info) &
        bind(C, name="ftla_descinit_")
      import :: c_int
      integer(c_int), intent(out) :: desc(9)
      integer(c_int), intent(in) :: m, n, mb, nb, irsrc, icsrc, ictxt, lld
      integer(c_int), intent(out) :: info
    end subroutine

    ! Fault-tolerant QR (ScaLAPACK PDGEQRF's arguments).
    subroutine pdgeqrf_ft(m, n, a, ia, ja, desca, tau, work, lwork, info) bind(C, name="pdgeqrf_ft_")
      import :: c_int, c_double
      integer(c_int), intent(in) :: m, n, ia, ja, desca(9), lwork
      real(c_double), intent(inout) :: a(*)
      real(c_double), intent(out) :: tau(*), work(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! QR without fault tolerance (ScaLAPACK PDGEQRF's arguments).
    subroutine ftla_pdgeqrf(m, n, a, ia, ja, desca, tau, work, lwork, info) bind(C, name="ftla_pdgeqrf_")
      import :: c_int, c_double
      integer(c_int), intent(in) :: m, n, ia, ja, desca(9), lwork
      real(c_double), intent(inout) :: a(*)
      real(c_double), intent(out) :: tau(*), work(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Fault-tolerant LU with partial pivoting (ScaLAPACK PDGETRF's arguments).
    subroutine pdgetrf_ft(m, n, a, ia, ja, desca, ipiv, info) bind(C, name="pdgetrf_ft_")
      import :: c_int, c_double
      integer(c_int), intent(in) :: m, n, ia, ja, desca(9)
      real(c_double), intent(inout) :: a(*)
      integer(c_int), intent(out) :: ipiv(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! LU without fault tolerance (ScaLAPACK PDGETRF's arguments).
    subroutine ftla_pdgetrf(m, n, a, ia, ja, desca, ipiv, info) bind(C, name="ftla_pdgetrf_")
      import :: c_int, c_double
      integer(c_int), intent(in) :: m, n, ia, ja, desca(9)
      real(c_double), intent(inout) :: a(*)
      integer(c_int), intent(out) :: ipiv(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Solves A X = B (TRANS = 'N') or A**T X = B ('T', 'C') with the LU
    ! factors (ScaLAPACK PDGETRS's arguments). No fault tolerance: on
    ! FTLA_INFO_PROCESS_LOST call it again.
    subroutine ftla_pdgetrs(trans, n, nrhs, a, ia, ja, desca, ipiv, b, ib, jb, descb, info) &
        bind(C, name="ftla_pdgetrs_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: trans
      integer(c_int), intent(in) :: n, nrhs, ia, ja, desca(9), ib, jb, descb(9)
      real(c_double), intent(in) :: a(*)
      integer(c_int), intent(in) :: ipiv(*)
      real(c_double), intent(inout) :: b(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Cholesky factorization without fault tolerance (ScaLAPACK PDPOTRF's
    ! arguments; UPLO = 'L' or 'U').
    subroutine ftla_pdpotrf(uplo, n, a, ia, ja, desca, info) bind(C, name="ftla_pdpotrf_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: uplo
      integer(c_int), intent(in) :: n, ia, ja, desca(9)
      real(c_double), intent(inout) :: a(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Solves A X = B with the Cholesky factor (ScaLAPACK PDPOTRS's
    ! arguments). No fault tolerance: on FTLA_INFO_PROCESS_LOST call it
    ! again.
    subroutine ftla_pdpotrs(uplo, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, info) &
        bind(C, name="ftla_pdpotrs_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: uplo
      integer(c_int), intent(in) :: n, nrhs, ia, ja, desca(9), ib, jb, descb(9)
      real(c_double), intent(in) :: a(*)
      real(c_double), intent(inout) :: b(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Factors A and solves A X = B (ScaLAPACK PDPOSV's arguments).
    subroutine ftla_pdposv(uplo, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, info) &
        bind(C, name="ftla_pdposv_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: uplo
      integer(c_int), intent(in) :: n, nrhs, ia, ja, desca(9), ib, jb, descb(9)
      real(c_double), intent(inout) :: a(*), b(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Fault-tolerant conjugate gradients for A x = b, A symmetric positive
    ! definite: PDCG_FT(N, A, IA, JA, DESCA, B, IB, JB, DESCB, X, IX, JX,
    ! DESCX, TOL, MAXIT, ITER, RESID, INFO).
    subroutine pdcg_ft(n, a, ia, ja, desca, b, ib, jb, descb, x, ix, jx, descx, tol, maxit, iter, resid, info) &
        bind(C, name="pdcg_ft_")
      import :: c_int, c_double
      integer(c_int), intent(in) :: n, ia, ja, desca(9), ib, jb, descb(9), ix, jx, descx(9), maxit
      real(c_double), intent(in) :: a(*), b(*), tol
      real(c_double), intent(inout) :: x(*)
      integer(c_int), intent(out) :: iter, info
      real(c_double), intent(out) :: resid
    end subroutine

    ! Fault-tolerant solve with the LU factors ftla keeps for A (those of
    ! the last PDGETRF_FT given this A and DESCA; ScaLAPACK PDGETRS's
    ! arguments). A and IPIV must still hold what PDGETRF_FT returned.
    subroutine pdgetrs_ft(trans, n, nrhs, a, ia, ja, desca, ipiv, b, ib, jb, descb, info) &
        bind(C, name="pdgetrs_ft_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: trans
      integer(c_int), intent(in) :: n, nrhs, ia, ja, desca(9), ib, jb, descb(9)
      real(c_double), intent(in) :: a(*)
      integer(c_int), intent(in) :: ipiv(*)
      real(c_double), intent(inout) :: b(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Fault-tolerant Cholesky factorization A = L L**T (ScaLAPACK
    ! PDPOTRF's arguments, UPLO = 'L'); ftla keeps the factor protected
    ! for PDPOTRS_FT.
    subroutine pdpotrf_ft(uplo, n, a, ia, ja, desca, info) bind(C, name="pdpotrf_ft_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: uplo
      integer(c_int), intent(in) :: n, ia, ja, desca(9)
      real(c_double), intent(inout) :: a(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Fault-tolerant solve A X = B with the Cholesky factor ftla keeps for
    ! A (that of the last PDPOTRF_FT given this A and DESCA; ScaLAPACK
    ! PDPOTRS's arguments, UPLO = 'L'). A must still hold what PDPOTRF_FT
    ! returned.
    subroutine pdpotrs_ft(uplo, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, info) &
        bind(C, name="pdpotrs_ft_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: uplo
      integer(c_int), intent(in) :: n, nrhs, ia, ja, desca(9), ib, jb, descb(9)
      real(c_double), intent(in) :: a(*)
      real(c_double), intent(inout) :: b(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Fault-tolerant PDPOSV (UPLO = 'L'): factors A as PDPOTRF_FT (the
    ! factor kept for PDPOTRS_FT) and solves A X = B as PDPOTRS_FT.
    subroutine pdposv_ft(uplo, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, info) &
        bind(C, name="pdposv_ft_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: uplo
      integer(c_int), intent(in) :: n, nrhs, ia, ja, desca(9), ib, jb, descb(9)
      real(c_double), intent(inout) :: a(*), b(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Fault-tolerant C = Q C or Q**T C with the QR factors ftla keeps for
    ! A (those of the last PDGEQRF_FT given this A and DESCA; ScaLAPACK
    ! PDORMQR's arguments, SIDE = 'L', K = MIN(M, N) of the factorization).
    subroutine pdormqr_ft(side, trans, m, n, k, a, ia, ja, desca, tau, c, ic, jc, descc, work, lwork, info) &
        bind(C, name="pdormqr_ft_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: side, trans
      integer(c_int), intent(in) :: m, n, k, ia, ja, desca(9), ic, jc, descc(9), lwork
      real(c_double), intent(in) :: a(*), tau(*)
      real(c_double), intent(inout) :: c(*)
      real(c_double), intent(out) :: work(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! Fault-tolerant least squares (ScaLAPACK PDGELS's arguments, TRANS =
    ! 'N'; LWORK = -1 is a workspace query).
    subroutine pdgels_ft(trans, m, n, nrhs, a, ia, ja, desca, b, ib, jb, descb, work, lwork, info) &
        bind(C, name="pdgels_ft_")
      import :: c_int, c_double, c_char
      character(kind=c_char), intent(in) :: trans
      integer(c_int), intent(in) :: m, n, nrhs, ia, ja, desca(9), ib, jb, descb(9), lwork
      real(c_double), intent(inout) :: a(*), b(*)
      real(c_double), intent(out) :: work(*)
      integer(c_int), intent(out) :: info
    end subroutine

    ! The doubles this process's A must hold for pdgetrf_ft/pdgeqrf_ft to
    ! keep their factors in A itself (local; LLD_A = max(1, LOCr(M))).
    subroutine ftla_kept_lsize(m, n, desca, lsize, info) bind(C, name="ftla_kept_lsize_")
      import :: c_int, c_int64_t
      integer(c_int), intent(in) :: m, n, desca(9)
      integer(c_int64_t), intent(out) :: lsize
      integer(c_int), intent(out) :: info
    end subroutine

    ! Declares that A holds LSIZE doubles (local): the next fault-tolerant
    ! factorization of A works in it and keeps its factors there, until
    ! ftla_release. A belongs to ftla meanwhile (read the factors only).
    ! ftla keeps A's address after the call: pass the whole array (never
    ! an array section or expression, which may be a temporary copy; A
    ! must be contiguous), declared TARGET (or ALLOCATABLE with TARGET)
    ! in the program, and pass the same array to the factorization.
    subroutine ftla_in_place(a, desca, lsize, info) bind(C, name="ftla_in_place_")
      import :: c_int, c_int64_t, c_double
      real(c_double), intent(inout), target :: a(*)
      integer(c_int), intent(in) :: desca(9)
      integer(c_int64_t), intent(in) :: lsize
      integer(c_int), intent(out) :: info
    end subroutine

    ! The bytes ftla itself holds on this process for the factors it keeps
    ! (local).
    subroutine ftla_kept_bytes(bytes) bind(C, name="ftla_kept_bytes_")
      import :: c_int64_t
      integer(c_int64_t), intent(out) :: bytes
    end subroutine

    ! Releases the factors ftla keeps for A, and A's declaration in place
    ! (local; INFO = 0 when there was either, 1 otherwise). Call it on
    ! every process at the same point.
    subroutine ftla_release(a, desca, info) bind(C, name="ftla_release_")
      import :: c_int, c_double
      real(c_double), intent(in) :: a(*)
      integer(c_int), intent(in) :: desca(9)
      integer(c_int), intent(out) :: info
    end subroutine
  end interface
end module ftla
