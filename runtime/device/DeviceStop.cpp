//===- DeviceStop.cpp - a device runtime that cannot go on, in one line ---===//
#include "DeviceStop.h"

#include "ompsim/OpenMPRegistration.h"
#include "ompsim/device_runtime.h"

#include <unistd.h>

#include <atomic>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>

namespace ompsim::device {
namespace {

std::atomic<ompsim_stop_handler> StopHandler{nullptr};

} // namespace

void stopDevice(const char *Format, ...) {
  char Line[2048];
  va_list Args;
  va_start(Args, Format);
  std::vsnprintf(Line, sizeof Line, Format, Args);
  va_end(Args);
  if (ompsim_stop_handler Handler = StopHandler.load(std::memory_order_acquire))
    Handler(Line);
  std::fprintf(stderr, "ompsim: device runtime: %s\n", Line);
  endDeviceProcess();
}

void endDeviceProcess() {
  std::fflush(stdout);
  std::fflush(stderr);
  removeOpenMPRegistration(::getpid());
  std::_Exit(1);
}

} // namespace ompsim::device

extern "C" __attribute__((visibility("default"))) void
__ompsim_device_set_stop_handler(ompsim_stop_handler Handler) {
  ompsim::device::StopHandler.store(Handler, std::memory_order_release);
}
