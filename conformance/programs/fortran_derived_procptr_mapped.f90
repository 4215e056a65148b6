! CHECKS: Fortran: a mapped derived type whose procedure-pointer component points at a declare-target function, called on the device through the component
! REQUIRES: fortran
! XFAIL-COMPILE: image=ir -- flang-22 has no -fopenmp-target-jit: it cannot build a bitcode device image
! EXPECT-FAIL-IF: separate-address-space && ompsim-runtime -- flang-22 cannot declare the function indirect (it rejects INDIRECT), so the mapped component holds a host address the device must refuse, naming the function
! CHECK-FAIL-STDERR: called untranslated host function pointer {{.*}}'_QMopsPadd_bias'{{.*}}is not declare target indirect
! XFAIL: shared-address-space -- flang-22 cannot declare the function indirect: the component's host address calls the host copy, which leaves the device counter at 0
! CHECK: PASS
module ops
  implicit none
  integer :: dev_calls = 0
  !$omp declare target to(dev_calls)
  type :: op_t
    integer :: bias = 0
    procedure(add_bias), pointer, nopass :: fn => null()
  end type
contains
  integer function add_bias(x, b)
    integer, intent(in) :: x, b
    !$omp declare target
    dev_calls = dev_calls + 1
    add_bias = x + b
  end function
end module

program main
  use ops
  implicit none
  type(op_t) :: op
  integer :: r
  op%bias = 2
  op%fn => add_bias
  r = 0
  !$omp target map(to: op) map(from: r)
  r = op%fn(40, op%bias)
  !$omp end target
  !$omp target update from(dev_calls)
  if (r /= 42 .or. dev_calls /= 1) then
    print '(a,i0,a,i0)', 'FAIL fortran_derived_procptr_mapped: r=', r, ' dev_calls=', dev_calls
    stop 1
  end if
  print '(a)', 'PASS'
end program
