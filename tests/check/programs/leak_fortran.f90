! Planted bug in Fortran: an enter data that is never ended; the leak is
! reported at the program's end, which flang's runtime reaches through exit().
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
