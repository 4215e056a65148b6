"""C programs that count their runs: a counter file in the cell's work folder, so that a
test can make a chosen run of a cell's program fail."""

#: `n` is this run's number, from 1; `on_run` (C statements) runs after it is counted.
COUNTED = r'''#include <stdio.h>
#include <stdlib.h>
int main(void) {
  int n = 0;
  FILE *f = fopen("%(name)s.count", "r");
  if (f) { if (fscanf(f, "%%d", &n) != 1) n = 0; fclose(f); }
  f = fopen("%(name)s.count", "w");
  fprintf(f, "%%d\n", ++n);
  fclose(f);
  %(on_run)s
  return 0;
}
'''


def counted_program(name, on_run):
    """The source of a program that counts its runs in `name`.count and then runs `on_run`."""
    return COUNTED % {"name": name, "on_run": on_run}
