//===- HostFaultReporter.cpp - host code that dereferences device memory -===//
//
// A simulated device's memory lives in its executor process, as a GPU's lives
// on the GPU: a device address (a use_device_ptr or use_device_addr variable
// inside its construct, what omp_target_alloc or omp_get_mapped_ptr returned)
// is not host memory, and host code that dereferences one faults. Stock's
// host plugin hides the bug (its device memory is the host's); here the
// host process's SIGSEGV handler, installed with the first device, names the
// address and whose memory it is in one line, then lets the fault take its
// course: the handler that was there before runs, else the default action
// ends the process with the fault's status.
//
//===----------------------------------------------------------------------===//
#include "SimPlugin.h"

#include <fmt/format.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <string>

namespace ompsim::sim {
namespace {

struct sigaction Previous;

void onFault(int Sig, siginfo_t *Info, void *Context) {
  // The process is going down: the lookup's locks and allocations are
  // taken on a thread that faulted in the program's code, not the plugin's.
  auto Addr = reinterpret_cast<uint64_t>(Info->si_addr);
  std::string Owner = describeDeviceMemory(Addr, 1);
  if (!Owner.empty()) {
    std::string Line = fmt::format(
        "ompsim: host code dereferenced 0x{:x}, which is {}: device memory is not the host's (a "
        "use_device_ptr or use_device_addr variable, or what omp_target_alloc or omp_get_mapped_ptr "
        "returned, was read or written on the host); the stock host plugin shares the host's "
        "memory and hides this\n",
        Addr, Owner);
    ssize_t Ignored = ::write(STDERR_FILENO, Line.data(), Line.size());
    (void)Ignored;
  }
  if ((Previous.sa_flags & SA_SIGINFO) && Previous.sa_sigaction) {
    Previous.sa_sigaction(Sig, Info, Context);
    return;
  }
  if (!(Previous.sa_flags & SA_SIGINFO) && Previous.sa_handler != SIG_DFL && Previous.sa_handler != SIG_IGN) {
    Previous.sa_handler(Sig);
    return;
  }
  // The faulting instruction runs again and ends the process as it would have.
  ::signal(Sig, SIG_DFL);
}

} // namespace

void installHostFaultReporter() {
  static std::atomic<bool> Installed{false};
  if (Installed.exchange(true))
    return;
  struct sigaction Action = {};
  Action.sa_sigaction = &onFault;
  Action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigemptyset(&Action.sa_mask);
  ::sigaction(SIGSEGV, &Action, &Previous);
}

} // namespace ompsim::sim
