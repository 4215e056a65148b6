// ompsim runtime: the LIBOMPTARGET_INFO bit mask, changeable at run time.
#include "InfoLevel.h"

#include "ompsim/Config.h"

#include <atomic>

namespace ompsim::host {

namespace {
std::atomic<uint32_t> &bits() {
  static std::atomic<uint32_t> Value{config().LibomptargetInfo};
  return Value;
}
} // namespace

uint32_t infoLevel() { return bits().load(std::memory_order_relaxed); }

void setInfoLevel(uint32_t Value) { bits().store(Value, std::memory_order_relaxed); }

} // namespace ompsim::host
