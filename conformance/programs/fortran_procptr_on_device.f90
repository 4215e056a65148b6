! CHECKS: Fortran: a procedure pointer associated on the device with a declare-target function and called there
! REQUIRES: fortran
! Note: flang-22 emits GPU-style kernels for the x86_64 offload target that call
! __kmpc_target_init/__kmpc_target_deinit; ompsim's device runtime (linked into device
! images by `ompsim cc`) defines them. Plain flang-22 without it fails the device link.
! XFAIL-COMPILE: image=ir -- flang-22 has no -fopenmp-target-jit: it cannot build a bitcode device image
! CHECK: PASS
module ops
  implicit none
  integer :: dev_calls = 0
  !$omp declare target to(dev_calls)
contains
  integer function add2(x)
    integer, intent(in) :: x
    !$omp declare target
    dev_calls = dev_calls + 1
    add2 = x + 2
  end function
end module

program main
  use ops
  implicit none
  integer :: r
  r = 0
  !$omp target map(from: r)
  block
    procedure(add2), pointer :: fp
    fp => add2
    r = fp(40)
  end block
  !$omp end target
  !$omp target update from(dev_calls)
  if (r /= 42 .or. dev_calls /= 1) then
    print *, 'FAIL r=', r, ' dev_calls=', dev_calls
    stop 1
  end if
  print '(a)', 'PASS'
end program
