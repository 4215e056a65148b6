! A Fortran program that never ends its enter data: the leak is reported at
! exit, after the Fortran runtime's own exit handling (a program end that once
! crashed the checker's exit handler).
program leak_fortran
  implicit none
  integer :: a(1024), i
  a = (/ (i, i = 1, 1024) /)
  !$omp target enter data map(to: a)
  !$omp target
  a(1) = 7
  !$omp end target
  print '(a,i0)', 'done ', a(1)
end program leak_fortran
