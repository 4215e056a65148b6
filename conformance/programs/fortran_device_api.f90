! CHECKS: Fortran: the OpenMP API in a target region answers as on a GPU: not the initial device, the device's number, the launch's teams, threads and thread limit
! REQUIRES: fortran
! XFAIL-COMPILE: image=ir -- flang-22 has no -fopenmp-target-jit: it cannot build a bitcode device image
! XFAIL: host-upstream -- stock's host plugin calls a flang kernel once, without ompsim's launch: one team, whatever num_teams says
! ENV: OMPSIM_NUM_DEVICES=2
! ENV: KMP_TEAMS_THREAD_LIMIT=64
! ENV: OMP_NUM_THREADS=4
! CHECK: PASS
program main
  use omp_lib
  implicit none
  integer :: initial, devnum, nteams, teamnum(0:3), nthreads(0:3), threadsum(0:3), limit(0:3), dev, errors
  errors = 0
  do dev = 0, min(1, omp_get_num_devices() - 1)
    initial = -1
    devnum = -1
    nteams = -1
    teamnum = -1
    nthreads = -1
    threadsum = 0
    limit = -1
    !$omp target teams num_teams(4) thread_limit(3) device(dev) &
    !$omp&   map(tofrom: initial, devnum, nteams, teamnum, nthreads, threadsum, limit)
    if (omp_get_team_num() == 0) then
      initial = merge(1, 0, omp_is_initial_device())
      devnum = omp_get_device_num()
      nteams = omp_get_num_teams()
    end if
    teamnum(omp_get_team_num()) = omp_get_team_num()
    limit(omp_get_team_num()) = omp_get_thread_limit()
    !$omp parallel num_threads(3)
    if (omp_get_thread_num() == 0) nthreads(omp_get_team_num()) = omp_get_num_threads()
    !$omp atomic
    threadsum(omp_get_team_num()) = threadsum(omp_get_team_num()) + omp_get_thread_num() + 1
    !$omp end parallel
    !$omp end target teams
    call expect(initial == 0, 'omp_is_initial_device() is .false. on the device', initial)
    call expect(devnum == dev, 'omp_get_device_num() is the device', devnum)
    call expect(nteams == 4, 'omp_get_num_teams() is num_teams(4)', nteams)
    call expect(all(teamnum == [0, 1, 2, 3]), 'omp_get_team_num() gives 0..3', teamnum(3))
    call expect(all(nthreads == 3), 'omp_get_num_threads() is num_threads(3) in every team', nthreads(0))
    call expect(all(threadsum == 6), 'omp_get_thread_num() gives 0..2 in every team', threadsum(0))
    call expect(all(limit == 3), 'omp_get_thread_limit() is thread_limit(3)', limit(0))
  end do
  if (errors /= 0) stop 1
  print '(a)', 'PASS'
contains
  subroutine expect(ok, what, got)
    logical, intent(in) :: ok
    character(*), intent(in) :: what
    integer, intent(in) :: got
    if (.not. ok) then
      print '(a,i0,a,a,a,i0)', 'FAIL fortran_device_api: device ', dev, ': ', what, '; got ', got
      errors = errors + 1
    end if
  end subroutine
end program
