// ompsim simulator: JIT-compiles LLVM bitcode device images into a device's arena (host side).
#pragma once

#include "ImageSymbolTable.h"
#include "StockJitPipeline.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ExecutionEngine/Orc/CompileOnDemandLayer.h"
#include "llvm/ExecutionEngine/Orc/Core.h"
#include "llvm/ExecutionEngine/Orc/EPCIndirectionUtils.h"
#include "llvm/ExecutionEngine/Orc/IRCompileLayer.h"
#include "llvm/ExecutionEngine/Orc/IRPartitionLayer.h"
#include "llvm/ExecutionEngine/Orc/JITTargetMachineBuilder.h"
#include "llvm/ExecutionEngine/Orc/ObjectLinkingLayer.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

namespace ompsim::sim {

class JitObjectCache;
struct ImageFunctionsTable;

/// The named metadata in which add() records the SHA-256 of the image a module
/// came from (partitions extracted from the module copy it).
constexpr const char *kImageDigestMD = "ompsim.jit.image";

/// A JIT-linked image: its dylib, its generated init/fini functions (0 if
/// none) and the addresses of its external symbols.
struct JITImage {
  llvm::orc::JITDylib *Dylib = nullptr;
  uint64_t Init = 0, Fini = 0;
  std::vector<std::tuple<std::string, uint64_t>> Symbols;
};

/// ORC layers (IR compile + JITLink object linking) over one device's
/// ExecutionSession. Memory comes from the executor's arena through the
/// EPC's JITLink memory manager; imports resolve against the executor's
/// loaded libraries (libomp, libc, the device runtime).
class DeviceJIT {
public:
  /// Builds the layers; `DsoHandle` is the address given to __dso_handle.
  /// Functions compile on their first call: the executor's resolver block
  /// calls `LazyReenter` there (which asks the controller, resolveLazyCall),
  /// and a call whose function cannot be compiled lands in `LazyFailed`.
  /// `OptLevel` (0-3) is the code generation level. A non-empty `CacheDir`
  /// keeps each compiled object there (a JitObjectCache of at most
  /// `CacheMax` bytes), keyed by a hash of its module, and a later compile of
  /// the same module (in this or a later run) reads it back instead of
  /// generating code. `Stock` holds stock libomptarget's JIT variables
  /// (StockJitPipeline): every image goes through their stages first, and
  /// the files they ask for are written at every load, from the cache too.
  /// GPU images get ompsim's GPU device runtime from `LibDir`
  /// (gpu/GpuDeviceRuntime.h).
  static llvm::Expected<std::unique_ptr<DeviceJIT>>
  create(llvm::orc::ExecutionSession &Es, uint64_t DsoHandle, uint64_t LazyReenter, uint64_t LazyFailed,
         int OptLevel, llvm::StringRef CacheDir = "", uint64_t CacheMax = 256ULL << 20,
         const Config::StockJit &Stock = {}, llvm::StringRef LibDir = "");
  ~DeviceJIT();

  /// Parses `Bitcode` as image `Name` and links its data now; its functions
  /// get stubs (their addresses, valid at once, in function pointers, vtables
  /// and lookups) and compile on their first call, each with the functions it
  /// calls directly and whose address is never taken. With the cache on, an
  /// image whose summary (JitImageSummary) is cached is loaded lazily: a
  /// function body is parsed only when its code must be generated (unless a
  /// stock variable needs the whole module: then it is parsed whole, and no
  /// summary is read or kept).
  llvm::Expected<JITImage> add(llvm::ArrayRef<char> Bitcode, llvm::StringRef Name);
  /// Compiles the function behind `Trampoline` (a first call reached it) and
  /// returns its address, or the lazyFailed address when it cannot. Blocks;
  /// called on the controller's lazy-call thread, never under its lock.
  uint64_t resolveLazyCall(uint64_t Trampoline);
  /// Address of `Symbol` in `Image`, or 0 when it defines none.
  llvm::Expected<uint64_t> lookup(const JITImage &Image, llvm::StringRef Symbol);
  /// Empties the image's dylibs (their memory returns to the arena).
  llvm::Error remove(JITImage &Image);
  /// "function+0xoff" for an address inside code this JIT has linked (a lazily
  /// compiled body lives apart from its stub), else "".
  std::string symbolize(uint64_t Addr) const;

private:
  DeviceJIT(llvm::orc::ExecutionSession &Es, uint64_t DsoHandle, const Config::StockJit &Stock);
  /// Applies the stock variables' stages to the whole module `M` of image
  /// `Name` (digest `Digest`, "" without a cache) and saves its object.
  llvm::Error runStockStages(llvm::Module &M, llvm::StringRef Name, llvm::StringRef Digest);
  /// A GPU image's module (retargeted, of architecture `Arch`) uses only
  /// what the executor defines; else an error names the first symbol
  /// missing and a function that uses it.
  llvm::Error checkServed(llvm::orc::JITDylib &Jd, const llvm::Module &M, llvm::StringRef Name,
                          llvm::StringRef Arch);
  llvm::orc::ExecutionSession &Es;
  uint64_t DsoHandle;
  /// The GPU device runtime's bitcode, or why it could not be read (said
  /// when a GPU image is loaded).
  std::unique_ptr<llvm::MemoryBuffer> GpuRuntime;
  std::string GpuRuntimeProblem;
  StockJitPipeline Stock;
  /// The target of every compile, for the stock stages' IR pipeline and saved objects.
  std::optional<llvm::orc::JITTargetMachineBuilder> Target;
  std::unique_ptr<llvm::orc::ObjectLinkingLayer> Linker;
  std::unique_ptr<llvm::orc::IRCompileLayer> Compiler;
  std::unique_ptr<llvm::orc::EPCIndirectionUtils> Indirection;
  std::unique_ptr<llvm::orc::IRPartitionLayer> Partitioner;
  std::unique_ptr<llvm::orc::CompileOnDemandLayer> Lazy;
  unsigned NextImage = 1;
  /// Where compiled objects and image summaries are kept between runs
  /// (OMPSIM_JIT_CACHE); null when the cache is off.
  std::shared_ptr<JitObjectCache> Cache;
  /// What every cache key starts with: the format, LLVM's version, the target, the level.
  std::string Salt;
  /// The partitioning facts of every image's module, by module (JitImageFunctions.h).
  std::shared_ptr<ImageFunctionsTable> Images;
  /// Every function body linked so far, filled by a JITLink plugin as each
  /// compile links (ImageSymbolTable is not thread-safe: guarded by linkedMu_).
  std::shared_ptr<std::mutex> LinkedMu = std::make_shared<std::mutex>();
  std::shared_ptr<ImageSymbolTable> Linked = std::make_shared<ImageSymbolTable>();
};

} // namespace ompsim::sim
