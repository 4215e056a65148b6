! CHECKS: Fortran: parallel, distribute, distribute parallel do and reductions in target regions run every team and thread, with exact results
! REQUIRES: fortran
! XFAIL: host-upstream -- stock's host plugin calls a flang kernel once, without ompsim's launch: one team, whatever num_teams says
! ENV: KMP_TEAMS_THREAD_LIMIT=64
! ENV: OMP_NUM_THREADS=4
! XFAIL-COMPILE: image=ir -- flang-22 has no -fopenmp-target-jit: it cannot build a bitcode device image
! CHECK: PASS
program main
  use omp_lib
  implicit none
  integer, parameter :: n = 1000
  integer :: hits(n), team_of(n), thread_of(n), seen(0:7), i, nt, errors
  integer :: isum, imax
  integer(8) :: iprod
  real(8) :: rsum
  errors = 0

  ! target parallel: every thread of num_threads(4) runs the region
  seen = 0
  !$omp target parallel num_threads(4) map(tofrom: seen)
  !$omp atomic
  seen(omp_get_thread_num()) = seen(omp_get_thread_num()) + 1
  !$omp end target parallel
  call expect(all(seen(0:3) == 1) .and. all(seen(4:7) == 0), 'target parallel num_threads(4): each thread once')

  ! distribute: every iteration once, on every team (flang-22 passes no
  ! dist_schedule chunk to the runtime: the default, round-robin, applies)
  hits = 0
  team_of = -1
  !$omp target teams distribute num_teams(3) map(tofrom: hits, team_of)
  do i = 1, n
    hits(i) = hits(i) + 1
    team_of(i) = omp_get_team_num()
  end do
  call expect(all(hits == 1), 'distribute: each iteration once')
  call expect(any(team_of == 0) .and. any(team_of == 1) .and. any(team_of == 2) .and. &
              all(team_of >= 0 .and. team_of <= 2), 'distribute: all three teams')

  ! distribute parallel do: every iteration once, every team and thread works
  hits = 0
  team_of = -1
  thread_of = -1
  !$omp target teams distribute parallel do num_teams(2) num_threads(3) map(tofrom: hits, team_of, thread_of)
  do i = 1, n
    hits(i) = hits(i) + 1
    team_of(i) = omp_get_team_num()
    thread_of(i) = omp_get_thread_num()
  end do
  call expect(all(hits == 1), 'distribute parallel do: each iteration once')
  call expect(any(team_of == 0) .and. any(team_of == 1) .and. all(team_of >= 0 .and. team_of <= 1), &
              'distribute parallel do: both teams')
  call expect(any(thread_of == 0) .and. any(thread_of == 1) .and. any(thread_of == 2) .and. &
              all(thread_of >= 0 .and. thread_of <= 2), 'distribute parallel do: three threads per team')

  ! parallel do: every iteration once, on every thread
  hits = 0
  thread_of = -1
  !$omp target parallel do num_threads(4) map(tofrom: hits, thread_of)
  do i = 1, n
    hits(i) = hits(i) + 1
    thread_of(i) = omp_get_thread_num()
  end do
  call expect(all(hits == 1), 'parallel do: each iteration once')
  call expect(all([(any(thread_of == i), i = 0, 3)]) .and. all(thread_of >= 0 .and. thread_of <= 3), &
              'parallel do: all four threads')

  ! reductions, teams and parallel
  isum = 0
  !$omp target teams distribute parallel do num_teams(4) num_threads(2) reduction(+: isum) map(tofrom: isum)
  do i = 1, n
    isum = isum + i
  end do
  call expect(isum == n * (n + 1) / 2, 'teams reduction(+)')
  imax = -1
  !$omp target teams distribute num_teams(3) reduction(max: imax) map(tofrom: imax)
  do i = 1, n
    imax = max(imax, mod(i * 37, 1001))
  end do
  call expect(imax == maxval([(mod(i * 37, 1001), i = 1, n)]), 'teams reduction(max)')
  iprod = 1
  !$omp target parallel do num_threads(3) reduction(*: iprod) map(tofrom: iprod)
  do i = 1, 20
    iprod = iprod * i
  end do
  call expect(iprod == 2432902008176640000_8, 'parallel reduction(*)')
  rsum = 0
  !$omp target teams distribute parallel do num_teams(2) reduction(+: rsum) map(tofrom: rsum)
  do i = 1, n
    rsum = rsum + 0.5d0 * i
  end do
  call expect(rsum == 0.25d0 * n * (n + 1), 'teams reduction(+) real(8)')

  ! nested: teams region code outside the parallel runs once per team
  seen = 0
  !$omp target teams num_teams(4) thread_limit(2) map(tofrom: seen)
  !$omp atomic
  seen(omp_get_team_num()) = seen(omp_get_team_num()) + 1
  !$omp parallel num_threads(2)
  !$omp atomic
  seen(4 + omp_get_thread_num()) = seen(4 + omp_get_thread_num()) + 1
  !$omp end parallel
  !$omp end target teams
  call expect(all(seen(0:3) == 1) .and. all(seen(4:5) == 4), 'teams: one initial thread per team, each forks 2')

  if (errors /= 0) stop 1
  print '(a)', 'PASS'
contains
  subroutine expect(ok, what)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    if (.not. ok) then
      print '(a,a)', 'FAIL fortran_gpu_abi_workshare: ', what
      errors = errors + 1
    end if
  end subroutine
end program
