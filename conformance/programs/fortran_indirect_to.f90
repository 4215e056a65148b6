! CHECKS: Fortran: `declare target to(...) indirect` (the OpenMP 5.1 spelling) on a module function called through a procedure pointer
! REQUIRES: fortran
! XFAIL-COMPILE: fortran -- flang-22 rejects it: "The INDIRECT clause cannot be used without the ENTER clause with the DECLARE TARGET directive"
! CHECK: PASS
module ops
  implicit none
  integer :: dev_calls = 0
  !$omp declare target to(dev_calls)
contains
  integer function twice(x)
    integer, intent(in) :: x
    !$omp declare target to(twice) indirect
    dev_calls = dev_calls + 1
    twice = 2 * x
  end function
end module

program main
  use ops
  implicit none
  procedure(twice), pointer :: fp
  integer :: r
  fp => twice
  r = 0
  !$omp target map(from: r)
  r = fp(21)
  !$omp end target
  !$omp target update from(dev_calls)
  if (r /= 42 .or. dev_calls /= 1) then
    print *, 'FAIL r=', r, ' dev_calls=', dev_calls
    stop 1
  end if
  print '(a)', 'PASS'
end program
