! CHECKS: Fortran: a procedure pointer to a function under `declare target enter(...) indirect` (OpenMP 5.2 spelling) calls the device copy
! REQUIRES: fortran
! BUILD: -fopenmp-version=52
! XFAIL-COMPILE: fortran -- flang-22 does not lower INDIRECT: "not yet implemented: Unhandled clause INDIRECT in DECLARE TARGET construct"
! CHECK: PASS
module ops
  implicit none
  integer :: dev_calls = 0
  !$omp declare target enter(dev_calls)
contains
  integer function add1(x)
    integer, intent(in) :: x
    !$omp declare target enter(add1) indirect
    dev_calls = dev_calls + 1
    add1 = x + 1
  end function
end module

program main
  use ops
  implicit none
  procedure(add1), pointer :: fp
  integer :: r
  fp => add1
  r = 0
  !$omp target map(from: r)
  r = fp(41)
  !$omp end target
  !$omp target update from(dev_calls)
  if (r /= 42 .or. dev_calls /= 1) then
    print *, 'FAIL r=', r, ' dev_calls=', dev_calls
    stop 1
  end if
  print '(a)', 'PASS'
end program
