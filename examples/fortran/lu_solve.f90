! lu_solve.f90 - a ScaLAPACK-style Fortran program on ftla (module ftla).
!
! Factors a generated, diagonally dominant N x N matrix A with PDGETRF_FT
! (fault tolerant) and solves A X = B with FTLA_PDGETRS for NPCOL
! right-hand sides, one per process column (column k of X is
! x(i) = i/N + k - 1), so that every process holds a part of the
! solution. Each process checks its part against the exact solution and
! prints one line; its exit status is 0 when its part is correct.
!
! FTLA_PDGETRS has no fault tolerance: when it loses a process it returns
! FTLA_INFO_PROCESS_LOST once the grid is repaired, and the survivors call
! it again, where the replacement (which runs the program from the top)
! meets them. The replacement's part of the LU factors was lost with the
! process it replaces (its PDGETRF_FT returned FTLA_INFO_RESULT_LOST), so
! that call returns FTLA_INFO_INPUT_LOST on every process, and every
! process factors and solves once more.
!
! Build (needs no MPI Fortran bindings; see docs/install.md):
!   gfortran -O2 -J /tmp capi/include/ftla.f90 examples/fortran/lu_solve.f90 \
!       -L target/release -lftla -Wl,-rpath,$PWD/target/release -o lu_solve
! Run on a 2x2 grid, killing grid rank 1 in step 3 of the LU:
!   FTLA_KILL=1@lu:3:update target/release/ftla launch --np 4 -- \
!       ./lu_solve 256 32 2 2
program lu_solve
  use ftla
  implicit none
  integer(c_int), parameter :: zero = 0, one = 1
  integer(c_int) :: n, nb, nprow, npcol, iam, nprocs, ictxt, myrow, mycol
  integer(c_int) :: mloc, nloc, lld, info, info_lu, nrhs, rounds, losses
  integer(c_int) :: desca(9), descb(9)
  real(c_double), allocatable :: a(:, :), b(:, :)
  integer(c_int), allocatable :: ipiv(:)
  real(c_double) :: err
  logical :: factors_lost, ok
  character(len=16) :: tag, verdict

  n = argument(1, 256)
  nb = argument(2, 32)
  nprow = argument(3, 2)
  npcol = argument(4, 2)

  call Cftla_pinfo(iam, nprocs)
  if (nprocs < nprow * npcol) then
    write (0, '(a,i0,a,i0,a,i0)') 'lu_solve: a grid of ', nprow * npcol, &
      ' processes, the job has ', nprocs, '; process ', iam
    stop 2
  end if
  call Cftla_gridinit(ictxt, 'Row'//c_null_char, nprow, npcol)
  if (ictxt < 0) stop 2
  call Cftla_gridinfo(ictxt, nprow, npcol, myrow, mycol)

  mloc = ftla_numroc(n, nb, myrow, zero, nprow)
  nloc = ftla_numroc(n, nb, mycol, zero, npcol)
  lld = max(1, mloc)
  nrhs = npcol
  call ftla_descinit(desca, n, n, nb, nb, zero, zero, ictxt, lld, info)
  if (info /= 0) stop 2
  ! B's rows in A's row blocks, its columns one by one: right-hand side k
  ! on process column k - 1.
  call ftla_descinit(descb, n, nrhs, nb, one, zero, zero, ictxt, lld, info)
  if (info /= 0) stop 2
  allocate (a(lld, max(1, nloc)), b(lld, 1), ipiv(mloc + nb))

  losses = 0
  do rounds = 1, 3
    call fill_matrix()
    call pdgetrf_ft(n, n, a, one, one, desca, ipiv, info_lu)
    ! A replacement that joined after this call completed holds no factors.
    factors_lost = info_lu == FTLA_INFO_RESULT_LOST
    if (info_lu /= 0 .and. .not. factors_lost) exit
    call fill_rhs()
    do
      call ftla_pdgetrs('N', n, nrhs, a, one, one, desca, ipiv, b, one, one, descb, info)
      if (info /= FTLA_INFO_PROCESS_LOST) exit
      ! The replacement is in the grid now, without factors: this retry
      ! meets it.
      losses = losses + 1
      call fill_rhs()
    end do
    ! The factors a replacement did not receive are refused on every
    ! process: the next round factors again.
    if (info /= FTLA_INFO_INPUT_LOST) exit
  end do

  err = solution_error()
  ok = info_lu == 0 .and. info == 0 .and. err <= 1.0d-10
  tag = ''
  if (Cftla_is_replacement(ictxt) == 1) tag = ' [replacement]'
  verdict = 'WRONG'
  if (ok) verdict = 'correct'
  write (*, '(a,i0,a,i0,a,i0,4a,es8.1,a,i0,a,i0,a,i0,a)') 'lu_solve: grid rank ', myrow * npcol + mycol, &
    ' (', myrow, ',', mycol, ')', trim(tag), ': x ', trim(verdict), err, ' max error; INFO ', info_lu, &
    ' ', info, '; ', losses, ' solve(s) lost a process'
  flush (6)

  call Cftla_gridexit(ictxt)
  call Cftla_exit(0)
  if (.not. ok) stop 1

contains

  ! The I-th command-line argument as an integer, DEFAULT when absent.
  integer(c_int) function argument(i, default)
    integer, intent(in) :: i
    integer(c_int), intent(in) :: default
    character(len=32) :: text
    integer :: length, status
    call get_command_argument(i, text, length, status)
    argument = default
    if (status == 0 .and. length > 0) read (text, *) argument
  end function

  ! The global (1-based) index of local index L (1-based): blocks of SB
  ! dealt round-robin over NP processes from process 0.
  integer(c_int) function global(l, sb, p, np)
    integer(c_int), intent(in) :: l, sb, p, np
    global = ((l - 1) / sb) * np * sb + p * sb + mod(l - 1, sb) + 1
  end function

  ! A(i, j): the same value on every process; |A(i, i)| exceeds the sum
  ! of the other entries of its row (N/2 at most) by N.
  real(c_double) function element(i, j)
    integer(c_int), intent(in) :: i, j
    element = sin(real(7 * i + 13 * j, c_double)) / 2
    if (i == j) element = element + 1.5d0 * n
  end function

  ! Column K of the exact solution X.
  real(c_double) function exact(i, k)
    integer(c_int), intent(in) :: i, k
    exact = real(i, c_double) / n + (k - 1)
  end function

  subroutine fill_matrix()
    integer(c_int) :: li, lj
    do lj = 1, nloc
      do li = 1, mloc
        a(li, lj) = element(global(li, nb, myrow, nprow), global(lj, nb, mycol, npcol))
      end do
    end do
  end subroutine

  ! B = A X on this process's rows, for its right-hand side (column
  ! mycol + 1).
  subroutine fill_rhs()
    integer(c_int) :: li, i, j
    do li = 1, mloc
      i = global(li, nb, myrow, nprow)
      b(li, 1) = 0
      do j = 1, n
        b(li, 1) = b(li, 1) + element(i, j) * exact(j, mycol + 1)
      end do
    end do
  end subroutine

  ! The largest |X(i, k) - exact(i, k)| over this process's part of X.
  real(c_double) function solution_error()
    integer(c_int) :: li
    solution_error = 0
    do li = 1, mloc
      solution_error = max(solution_error, abs(b(li, 1) - exact(global(li, nb, myrow, nprow), mycol + 1)))
    end do
  end function
end program lu_solve
