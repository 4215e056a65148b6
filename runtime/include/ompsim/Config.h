// ompsim: every OMPSIM_* environment variable, read in one place.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ompsim {

/// The process-wide configuration read from OMPSIM_* variables.
///
/// Read once on first use; later changes to the environment are not seen.
/// Every variable is documented in the README's table.
struct Config {
  std::string Trace;                       ///< OMPSIM_TRACE: "all" or comma list of categories
  std::string TraceFile;                   ///< OMPSIM_TRACE_FILE: JSON lines go here
  bool TraceNormalize = false;             ///< OMPSIM_TRACE_NORMALIZE=1: drop ASLR-dependent values
  uint64_t TraceTranslateCap = 64;         ///< OMPSIM_TRACE_TRANSLATE_CAP: translate events kept per kernel
  std::vector<std::string> Plugins{"sim"}; ///< OMPSIM_PLUGINS: comma list of names or paths
  int32_t NumDevices = 0; ///< OMPSIM_NUM_DEVICES: devices per plugin (0: the plugin's own default)
  uint64_t DeviceBase = 0x200000000000ULL; ///< OMPSIM_DEVICE_BASE: arena base of device 0
  uint64_t DeviceMemory = 1ULL << 30;      ///< OMPSIM_DEVICE_MEMORY: arena size per device
  /// OMPSIM_DEVICE_THREADS: threads a simulated device runs at once (a launch's teams x threads
  /// per team); a thread_limit is honoured up to it
  uint32_t DeviceThreads = 256;
  /// OMPSIM_GPU_FIBERS: 1 (the default), GPU images run on ompsim's GPU device runtime, linked
  /// into them, with a block's threads as fibers in lockstep warps and stock's grid; 0, on libomp's
  /// teams and threads, the earlier model (docs/gpu-images.md)
  bool GpuFibers = true;
  /// OMPSIM_GPU_BLOCK_LOOPS: 1 (the default), with OMPSIM_GPU_FIBERS, a GPU kernel the executor
  /// finds meets no barrier but at its parallel regions' starts and ends runs each block as loops
  /// over its threads; 0, every block's threads as fibers (docs/gpu-images.md)
  bool GpuBlockLoops = true;
  /// OMPSIM_SIM_GPU: "nvptx64" or "amdgcn", the GPU the simulated device stands for: it declines
  /// the other GPU's images, so a binary built for both runs the named one's; "" (unset) takes
  /// either (docs/gpu-images.md)
  std::string SimGpu;
  /// True when OMPSIM_SIM_GPU names another GPU than `Arch` (a GPU triple's architecture,
  /// "nvptx64" or "amdgcn"): the simulated device declines that GPU's images.
  bool declinesGpu(std::string_view Arch) const { return !SimGpu.empty() && Arch != SimGpu; }
  double KernelTimeout = 60.0;   ///< OMPSIM_KERNEL_TIMEOUT: seconds before a kernel is stopped
  bool KernelTimeoutSet = false; ///< OMPSIM_KERNEL_TIMEOUT was given (and valid)
  /// OMPSIM_HIDDEN_HELPER_SLICE_US: the scheduler time slice, in microseconds, the runtime asks
  /// for libomp's hidden helper threads the first time one runs a target task (0: leave them as
  /// they are); see docs/performance.md, "Concurrent launches"
  uint32_t HiddenHelperSliceUs = 100;
  /// OMPSIM_EXECUTOR_START_TIMEOUT: seconds an executor may take to start (sim)
  double ExecutorStartTimeout = 10.0;
  /// OMPSIM_JIT_OPT_LEVEL: code generation level (0-3) of bitcode images; when unset,
  /// LIBOMPTARGET_JIT_OPT_LEVEL's (as stock's JIT generates code at its IR level), else 0
  int32_t JitOptLevel = 0;
  std::string Executor; ///< OMPSIM_EXECUTOR: path of ompsim-device (default: next to the plugin)
  std::string LibDir;   ///< OMPSIM_LIB_DIR: where ompsim's libraries live (default: next to the runtime)
  /// OMP_TARGET_OFFLOAD (standard OpenMP): "MANDATORY", "DISABLED" or "DEFAULT" (upper-cased; "" when unset).
  std::string OmpTargetOffload;
  /// LIBOMPTARGET_INFO (stock's info bit mask; 0 when unset), read as stock reads it (a decimal
  /// int, so -1 is every bit) and also as 0x hex: bits 0x1 and 0x20 print info lines.
  uint32_t LibomptargetInfo = 0;
  /// LIBOMPTARGET_PROFILE: Chrome-trace (JSON) file of the runtime's work ("" when unset).
  std::string ProfileFile;
  /// LIBOMPTARGET_PROFILE_GRANULARITY: the shortest section the profile keeps, in microseconds
  /// (stock's default, 500).
  uint32_t ProfileGranularity = 500;
  /// OFFLOAD_TRACK_ALLOCATION_TRACES (stock's flag): keep the stack trace of each device allocation
  /// and free; a free stock refuses (double, of memory never allocated, of the wrong kind) and a
  /// device fault then name them (docs/environment.md).
  bool TrackAllocationTraces = false;
  /// OFFLOAD_TRACK_NUM_KERNEL_LAUNCH_TRACES: how many of the last kernel launches a device fault
  /// shows with their launch's stack trace; -1 when unset. Set (0 too), a fault lists the kernels.
  int32_t TrackKernelLaunchTraces = -1;
  /// Variables stock libomptarget 22 reads that are set but that ompsim does not honour, in the
  /// order of docs/environment.md; the runtime names them in one line at start-up.
  std::vector<std::string> IgnoredStockVariables;
  /// OMPSIM_JIT_CACHE: folder of compiled bitcode-image code kept between runs; by default
  /// $XDG_CACHE_HOME/ompsim/jit (or ~/.cache/ompsim/jit); "" when "off" (or no home folder)
  std::string JitCache;
  /// OMPSIM_JIT_CACHE_MAX: bytes the JIT cache may hold; the least recently used entries go first
  uint64_t JitCacheMax = 256ULL << 20;
  /// OMPSIM_CHECK: the map checker (docs/checker.md); 0 off, 1 report, 2 report and make a
  /// run that reported anything exit with status 1 ("strict").
  int32_t Check = 0;
  /// Stock libomptarget's JIT variables, honoured when the sim plugin JIT-compiles a bitcode
  /// image (docs/environment.md). The file names are "" when unset.
  struct StockJit {
    std::string PreOptIrModule;  ///< LIBOMPTARGET_JIT_PRE_OPT_IR_MODULE: the module as loaded, as text IR
    std::string PostOptIrModule; ///< LIBOMPTARGET_JIT_POST_OPT_IR_MODULE: the module compiled, as text IR
    std::string SaveImage;       ///< LIBOMPTARGET_JIT_SAVE_IMAGE_FILENAME: the compiled object
    /// LIBOMPTARGET_JIT_REPLACEMENT_MODULE: IR (text or bitcode) JIT-compiled instead of every image
    std::string ReplacementModule;
    /// LIBOMPTARGET_JIT_OPT_LEVEL (0-3): the level of the IR optimization pipeline, which then runs on
    /// the module before code generation; -1 when unset (no IR pipeline: the device link optimized it)
    int32_t OptLevel = -1;
    bool SkipOpt = false; ///< LIBOMPTARGET_JIT_SKIP_OPT: no IR pipeline whatever the level
  } Jit;
};

/// Returns the configuration; parses the environment on first call.
///
/// Every value is parsed strictly (the whole string, its range, overflow); a
/// malformed one is reported once on stderr, naming the variable and the
/// value, and the default is kept.
const Config &config();

/// Parses a flag as stock's BoolEnvar does (true/yes/on/1, false/no/off/0, any
/// case); nullopt when stock would not take it either.
std::optional<bool> parseStockBool(std::string_view S);

} // namespace ompsim
