// The info lines stock libomptarget 22's plugins ("PluginInterface") print,
// in their words: the one place these texts live, for every ompsim plugin.
#pragma once

#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"

#include <cstdint>
#include <fmt/format.h>
#include <string>
#include <string_view>

namespace ompsim::stock_plugin {

/// LIBOMPTARGET_INFO's bit for a plugin's kernel launch line (stock's
/// OMP_INFOTYPE_PLUGIN_KERNEL).
inline constexpr uint32_t kInfoPluginKernel = 0x10;

/// Stock's name of a kernel environment's execution mode.
inline const char *executionModeName(uint8_t ExecMode) {
  using namespace llvm::omp;
  switch (ExecMode) {
  case OMP_TGT_EXEC_MODE_BARE:
    return "BARE";
  case OMP_TGT_EXEC_MODE_SPMD:
    return "SPMD";
  case OMP_TGT_EXEC_MODE_GENERIC:
    return "Generic";
  case OMP_TGT_EXEC_MODE_GENERIC_SPMD:
    return "Generic-SPMD";
  case OMP_TGT_EXEC_MODE_SPMD_NO_LOOP:
    return "SPMD-No-Loop";
  default:
    return "Unknown";
  }
}

/// The launch line, without the newline: `"PluginInterface" device 0 info:
/// Launching kernel K with [B,1,1] blocks and [T,1,1] threads in Generic mode`
/// (stock's INFO prefix quotes the plugin's debug name).
inline std::string launchLine(int32_t DeviceId, std::string_view Kernel, const uint32_t (&Blocks)[3],
                              const uint32_t (&Threads)[3], std::string_view Mode) {
  return fmt::format("\"PluginInterface\" device {} info: Launching kernel {} with [{},{},{}] blocks and "
                     "[{},{},{}] threads in {} mode",
                     DeviceId, Kernel, Blocks[0], Blocks[1], Blocks[2], Threads[0], Threads[1], Threads[2],
                     Mode);
}

/// The same line for a launch in x only.
inline std::string launchLine(int32_t DeviceId, std::string_view Kernel, uint32_t Blocks, uint32_t Threads,
                              std::string_view Mode) {
  return launchLine(DeviceId, Kernel, {Blocks, 1, 1}, {Threads, 1, 1}, Mode);
}

} // namespace ompsim::stock_plugin
