! flang-22's target teams distribute regions with nowait: each kernel is in
! the GPU device-runtime ABI, so ompsim's device runtime forks its teams; the
! target tasks run on libomp's hidden helper threads. Prints the number of
! wrong elements.
program nowait_teams
  use omp_lib
  implicit none
  integer, parameter :: n = 1024, tasks = 16
  integer :: work(n, tasks), x, i, wrong
  work = 0
  do x = 1, tasks
    !$omp target teams distribute map(tofrom: work(1:n, x)) nowait
    do i = 1, n
      work(i, x) = i + x
    end do
    !$omp end target teams distribute
  end do
  !$omp taskwait
  wrong = 0
  do x = 1, tasks
    do i = 1, n
      if (work(i, x) /= i + x) wrong = wrong + 1
    end do
  end do
  print '(A,I0)', 'wrong=', wrong
end program nowait_teams
