// ompsim: every OMPSIM_* environment variable, read in one place.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ompsim {

/// The process-wide configuration read from OMPSIM_* variables.
///
/// Read once on first use; later changes to the environment are not seen.
/// Every variable is documented in the README's table.
struct Config {
  std::string trace;                       ///< OMPSIM_TRACE: "all" or comma list of categories
  std::string traceFile;                   ///< OMPSIM_TRACE_FILE: JSON lines go here
  bool traceNormalize = false;             ///< OMPSIM_TRACE_NORMALIZE=1: drop ASLR-dependent values
  uint64_t traceTranslateCap = 64;         ///< OMPSIM_TRACE_TRANSLATE_CAP: translate events kept per kernel
  std::vector<std::string> plugins{"sim"}; ///< OMPSIM_PLUGINS: comma list of names or paths
  int32_t numDevices = 0; ///< OMPSIM_NUM_DEVICES: devices per plugin (0: the plugin's own default)
  uint64_t deviceBase = 0x200000000000ULL; ///< OMPSIM_DEVICE_BASE: arena base of device 0
  uint64_t deviceMemory = 1ULL << 30;      ///< OMPSIM_DEVICE_MEMORY: arena size per device
  double kernelTimeout = 60.0;             ///< OMPSIM_KERNEL_TIMEOUT: seconds before a kernel is stopped
  bool kernelTimeoutSet = false;           ///< OMPSIM_KERNEL_TIMEOUT was given (and valid)
  /// OMPSIM_EXECUTOR_START_TIMEOUT: seconds an executor may take to start (sim)
  double executorStartTimeout = 30.0;
  int32_t jitOptLevel = 0; ///< OMPSIM_JIT_OPT_LEVEL: code generation level (0-3) of bitcode images
  std::string executor;    ///< OMPSIM_EXECUTOR: path of ompsim-device (default: next to the plugin)
  std::string libDir;      ///< OMPSIM_LIB_DIR: where ompsim's libraries live (default: next to the runtime)
  /// OMP_TARGET_OFFLOAD (standard OpenMP): "MANDATORY", "DISABLED" or "DEFAULT" (upper-cased; "" when unset).
  std::string ompTargetOffload;
  /// LIBOMPTARGET_INFO (upstream's info bit mask; 0 when unset): bit 0 prints data-mapping info lines.
  uint32_t libomptargetInfo = 0;
  /// OMPSIM_JIT_CACHE: folder of compiled bitcode-image code kept between runs ("" when unset: none)
  std::string jitCache;
};

/// Returns the configuration; parses the environment on first call.
///
/// Every value is parsed strictly (the whole string, its range, overflow); a
/// malformed one is reported once on stderr, naming the variable and the
/// value, and the default is kept.
const Config &config();

} // namespace ompsim
