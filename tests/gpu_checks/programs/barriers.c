// Barriers a GPU hangs on or passes wrongly, one kernel a mode (argv[1]), and
// a clean mode whose barriers every thread of each team meets.
#include <omp.h>
#include <stdio.h>
#include <string.h>

// Half of the team meets a barrier; the other half leaves the region.
static int half(void) {
  int out[128] = {0};
#pragma omp target teams num_teams(1) thread_limit(64) map(tofrom : out)
#pragma omp parallel num_threads(64)
  {
    int t = omp_get_thread_num();
    out[t] = t;
    if (t < 32) {
#pragma omp barrier
    }
    out[64 + t] = out[63 - t];
  }
  return out[64];
}

// Odd and even threads meet different barriers.
static int split(void) {
  int out[128] = {0};
#pragma omp target teams num_teams(1) thread_limit(64) map(tofrom : out)
#pragma omp parallel num_threads(64)
  {
    int t = omp_get_thread_num();
    out[t] = t;
    if (t % 2) {
#pragma omp barrier
      out[64 + t] = out[63 - t];
    } else {
#pragma omp barrier
      out[64 + t] = out[62 - t + 1];
    }
  }
  return out[64];
}

// A generic kernel: 16 of a region's 64 threads wait at its barrier.
static int generic(void) {
  int out[64] = {0};
#pragma omp target teams num_teams(1) thread_limit(64) map(tofrom : out)
  {
    int base = omp_get_team_num();
#pragma omp parallel num_threads(64)
    {
      int t = omp_get_thread_num();
      if (t < 16) {
#pragma omp barrier
      }
      out[t] = base + t;
    }
  }
  return out[0];
}

// Each thread meets the loop's barrier as often as its number says.
static int uneven(void) {
  int out[64] = {0};
#pragma omp target teams num_teams(1) thread_limit(64) map(tofrom : out)
#pragma omp parallel num_threads(64)
  {
    int t = omp_get_thread_num();
    for (int i = 0; i <= t / 32; ++i) {
      out[t] += i;
#pragma omp barrier
    }
  }
  return out[0];
}

// Every barrier met by all of its team: a region of fewer threads than the
// block, a barrier in a serialized nested region that only some threads
// reach, and a loop's implicit barrier. Each team checks what it got.
static int clean(void) {
  int bad[2] = {0, 0};
#pragma omp target teams num_teams(2) thread_limit(64) map(tofrom : bad)
  {
    int out[64], nested[64];
    int sum = 0;
#pragma omp parallel num_threads(32) shared(out, nested, sum)
    {
      int t = omp_get_thread_num(), n = omp_get_num_threads();
      out[t] = t;
      nested[t] = 0;
#pragma omp barrier
      out[32 + t] = out[n - 1 - t];
      if (t % 8 == 0) {
#pragma omp parallel num_threads(4)
        {
#pragma omp for
          for (int k = 0; k < 4; ++k)
            nested[t] += k + 1;
#pragma omp barrier
        }
      }
#pragma omp for reduction(+ : sum)
      for (int k = 0; k < 64; ++k)
        sum += k;
      if (out[32 + t] != n - 1 - t || nested[t] != (t % 8 == 0 ? 10 : 0) || sum != 2016)
#pragma omp atomic
        bad[omp_get_team_num()] += 1;
    }
  }
  return bad[0] + bad[1];
}

int main(int argc, char **argv) {
  const char *mode = argc > 1 ? argv[1] : "clean";
  int r = !strcmp(mode, "half")      ? half()
          : !strcmp(mode, "split")   ? split()
          : !strcmp(mode, "generic") ? generic()
          : !strcmp(mode, "uneven")  ? uneven()
                                     : clean();
  printf("%s %d\n", mode, r);
  return 0;
}
