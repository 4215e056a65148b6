/* Kernels in flight at once, and depend order under many host threads.
 *
 * overlap: two target nowait regions with no dependence between them. Each
 * takes a ticket from a counter in device memory when it starts, waits until
 * the other one has started (a bounded wait: after 30 s it gives up and says
 * so instead of hanging), and takes another ticket when it ends. Both ran at
 * the same time exactly when the two start tickets are 0 and 1 and the two
 * end tickets 2 and 3.
 *
 * transfer: a kernel says in device memory that it started and waits
 * (bounded as above) for a flag; meanwhile another task reads the device's
 * word with `target update from` until it sees the start, and sends the flag
 * with `target update to`: copies go on while a kernel runs.
 *
 * fault: as overlap, but once both run, the second kernel writes to address
 * 16: the executor ends while the first still waits, and the program ends
 * with one line naming the fault (it must not wait for the first kernel).
 *
 * order: 8 host threads, each with a depend(inout) chain of nowait regions,
 * nowait updates and host tasks on a state of its own; every step checks
 * that it runs after the one before it in its chain. order-kernels: the same
 * chains of nowait regions only (for ThreadSanitizer runs: there the nowait
 * copies of one host buffer, made by different hidden helper threads, are
 * ordered by libomp's dependences, which an uninstrumented libomp does not
 * show to TSan).
 *
 * Host memory the runtime copies is set with plain stores, not memset: TSan
 * intercepts memset even in this uninstrumented program, and the task
 * hand-over that orders it before a copy on another thread is libomp's. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { WAIT_SECONDS = 30 };

/* Counter, then per kernel: start ticket, end ticket, gave up waiting. */
int tickets[7];
#pragma omp declare target(tickets)

#pragma omp declare target
static void kernel_body(int me) {
  int start = __atomic_fetch_add(&tickets[0], 1, __ATOMIC_SEQ_CST);
  tickets[1 + 3 * me] = start;
  double deadline = omp_get_wtime() + WAIT_SECONDS;
  while (__atomic_load_n(&tickets[0], __ATOMIC_SEQ_CST) < 2) {
    if (omp_get_wtime() > deadline) {
      tickets[3 + 3 * me] = 1;
      break;
    }
  }
  tickets[2 + 3 * me] = __atomic_fetch_add(&tickets[0], 1, __ATOMIC_SEQ_CST);
}
#pragma omp end declare target

static int overlap(void) {
  for (int i = 0; i < 7; ++i)
    tickets[i] = 0;
#pragma omp target update to(tickets)
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target nowait
    kernel_body(0);
#pragma omp target nowait
    kernel_body(1);
#pragma omp taskwait
  }
#pragma omp target update from(tickets)
  int gave_up = tickets[3] + tickets[6];
  int starts_first = tickets[1] + tickets[4] == 1 && tickets[2] + tickets[5] == 5;
  printf("overlap: starts=%d,%d ends=%d,%d gave_up=%d overlapped=%d\n", tickets[1], tickets[4], tickets[2],
         tickets[5], gave_up, !gave_up && starts_first);
  if (gave_up)
    fprintf(stderr, "overlap: a kernel waited %d s for the other to start: the two never ran at once\n",
            WAIT_SECONDS);
  return !gave_up && starts_first ? 0 : 1;
}

static int fault(void) {
  for (int i = 0; i < 7; ++i)
    tickets[i] = 0;
#pragma omp target update to(tickets)
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target nowait
    kernel_body(0);
#pragma omp target nowait
    {
      __atomic_fetch_add(&tickets[0], 1, __ATOMIC_SEQ_CST);
      double deadline = omp_get_wtime() + WAIT_SECONDS;
      while (__atomic_load_n(&tickets[0], __ATOMIC_SEQ_CST) < 2 && omp_get_wtime() < deadline)
        ;
      *(volatile int *)16 = 1;
    }
#pragma omp taskwait
  }
  printf("fault: not reached\n");
  return 0;
}

/* started, flag, gave up waiting */
int handshake[3];
#pragma omp declare target(handshake)

static int transfer(void) {
  for (int i = 0; i < 3; ++i)
    handshake[i] = 0;
#pragma omp target update to(handshake)
  int seen = 0;
#pragma omp parallel num_threads(2)
#pragma omp single
  {
#pragma omp target nowait
    {
      __atomic_store_n(&handshake[0], 1, __ATOMIC_SEQ_CST);
      double deadline = omp_get_wtime() + WAIT_SECONDS;
      while (!__atomic_load_n(&handshake[1], __ATOMIC_SEQ_CST))
        if (omp_get_wtime() > deadline) {
          handshake[2] = 1;
          break;
        }
    }
#pragma omp task shared(seen)
    {
      double deadline = omp_get_wtime() + WAIT_SECONDS;
      while (!seen && omp_get_wtime() < deadline) {
#pragma omp target update from(handshake[0 : 1])
        seen = handshake[0];
      }
      handshake[1] = 1;
#pragma omp target update to(handshake[1 : 1])
    }
#pragma omp taskwait
  }
#pragma omp target update from(handshake[2 : 1])
  int ok = seen && !handshake[2];
  printf("transfer: seen_start=%d kernel_gave_up=%d copies_while_running=%d\n", seen, handshake[2], ok);
  if (!ok)
    fprintf(stderr, "transfer: the copies and the kernel did not run at the same time\n");
  return !ok;
}

enum { THREADS = 8, STEPS = 64 };

struct chain {
  int next; /* the step that must run next */
  int bad;  /* steps that ran out of order */
  int trail[STEPS];
};

static int order(int with_copies) {
  int bad = 0, wrong = 0;
#pragma omp parallel num_threads(THREADS) reduction(+ : bad, wrong)
  {
    struct chain c;
    c.next = c.bad = 0;
    for (int k = 0; k < STEPS; ++k)
      c.trail[k] = 0;
#pragma omp target enter data map(to : c)
    for (int k = 0; k < STEPS; ++k) {
      if (with_copies && k % 8 == 7) {
        /* A host-side step in the chain: bring the state back, check it,
         * send it again. */
#pragma omp target update from(c) depend(inout : c) nowait
#pragma omp task depend(inout : c) shared(c)
        {
          c.bad += c.next != k;
          c.next = k + 1;
        }
#pragma omp target update to(c) depend(inout : c) nowait
        continue;
      }
#pragma omp target nowait map(present, tofrom : c) depend(inout : c)
      {
        c.bad += c.next != k;
        c.trail[k] = c.next;
        c.next = k + 1;
      }
    }
#pragma omp taskwait
#pragma omp target exit data map(from : c)
    bad += c.bad;
    wrong += c.next != STEPS;
  }
  printf("order: threads=%d steps=%d copies=%d out_of_order=%d wrong_end=%d\n", THREADS, STEPS, with_copies, bad,
         wrong);
  return bad || wrong;
}

int main(int argc, char **argv) {
  const char *what = argc > 1 ? argv[1] : "overlap";
  if (!strcmp(what, "overlap"))
    return overlap();
  if (!strcmp(what, "fault"))
    return fault();
  if (!strcmp(what, "transfer"))
    return transfer();
  if (!strcmp(what, "order"))
    return order(1);
  if (!strcmp(what, "order-kernels"))
    return order(0);
  fprintf(stderr, "usage: %s overlap|fault|transfer|order|order-kernels\n", argv[0]);
  return 2;
}
