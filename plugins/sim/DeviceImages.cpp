// ompsim sim plugin: device images in the plugin C ABI: which images the
// simulated device accepts, loading and unloading them, looking up their
// globals and kernels, and publishing the function-pointer table.
#include "SimPlugin.h"

#include "ompsim/Config.h"
#include "ompsim/ProfileWriter.h"
#include "ompsim/Trace.h"

#include "llvm/BinaryFormat/Magic.h"
#include "llvm/Bitcode/BitcodeReader.h"
#include "llvm/Frontend/OpenMP/OMPGridValues.h"
#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/TargetParser/Triple.h"

#include <dlfcn.h>
#include <elf.h>

#include <cstdint>
#include <cstring>
#include <fmt/format.h>
#include <string>
#include <vector>

namespace ompsim::sim {
namespace {

/// The library names a NEEDED entry can use for the host object that embeds
/// `ImageBytes`: its file name, the path it was loaded by and its DT_SONAME. A shared library's device
/// image is linked into later images under these names.
std::vector<std::string> hostLibraryNames(const void *ImageBytes) {
  Dl_info Info{};
  if (!::dladdr(ImageBytes, &Info) || !Info.dli_fname || !*Info.dli_fname)
    return {};
  std::vector<std::string> Names{llvm::sys::path::filename(Info.dli_fname).str()};
  // A program linked against the library by path (`cc main.c ./libx.so`)
  // NEEDs that path, which the loader keeps as the library's name.
  if (Names.front() != Info.dli_fname)
    Names.emplace_back(Info.dli_fname);
  auto File = llvm::MemoryBuffer::getFile(Info.dli_fname, /*IsText=*/false,
                                          /*RequiresNullTerminator=*/false);
  if (!File)
    return Names;
  auto Elf = llvm::object::ELF64LEFile::create((*File)->getBuffer());
  if (!Elf)
    return consumeError(Elf.takeError()), Names;
  auto Dynamic = Elf->dynamicEntries();
  if (!Dynamic)
    return consumeError(Dynamic.takeError()), Names;
  uint64_t Strtab = 0, Soname = UINT64_MAX;
  for (const auto &Entry : *Dynamic) {
    if (Entry.d_tag == DT_STRTAB)
      Strtab = Entry.getPtr();
    else if (Entry.d_tag == DT_SONAME)
      Soname = Entry.getVal();
  }
  if (Soname == UINT64_MAX || !Strtab)
    return Names;
  auto Strings = Elf->toMappedAddr(Strtab);
  if (!Strings)
    return consumeError(Strings.takeError()), Names;
  const char *End = (*File)->getBufferEnd();
  const char *S = reinterpret_cast<const char *>(*Strings) + Soname;
  if (S < End) {
    std::string Name(S, strnlen(S, size_t(End - S)));
    if (!Name.empty() && Name != Names.front())
      Names.push_back(std::move(Name));
  }
  return Names;
}

/// Traces why the simulated device declines `Image`.
void declineImage(const __tgt_device_image *Image, const std::string &Why) {
  OMPSIM_TRACE_EVENT(Cat::Image, "decline")
      .str("plugin", "sim")
      .num("bytes", Image ? int64_t((char *)Image->ImageEnd - (char *)Image->ImageStart) : 0)
      .str("reason", Why);
}

} // namespace
} // namespace ompsim::sim

using namespace ompsim;
using namespace ompsim::sim;

namespace {

/// True when the simulated device can load `image`; the reason is traced when not.
/// A GPU's triple: code the executor retargets for its CPU.
bool isGpu(const llvm::Triple &T) { return T.isNVPTX() || T.isAMDGCN(); }

/// The warp size of the GPU `Bytes` is LLVM bitcode for (llvm::omp's grid
/// values: 32 nvptx64, 64 amdgcn, DeviceRTL's defaults); 0 when it is no
/// GPU's bitcode.
uint32_t gpuBitcodeWarpSize(llvm::ArrayRef<char> Bytes) {
  llvm::MemoryBufferRef Ref(llvm::StringRef(Bytes.data(), Bytes.size()), "device-image");
  if (llvm::identify_magic(Ref.getBuffer()) != llvm::file_magic::bitcode)
    return 0;
  auto Triple = llvm::getBitcodeTargetTriple(Ref);
  if (!Triple) {
    llvm::consumeError(Triple.takeError());
    return 0;
  }
  llvm::Triple T(*Triple);
  if (!isGpu(T))
    return 0;
  return T.isAMDGCN() ? llvm::omp::AMDGPUGridValues64.GV_Warp_Size : llvm::omp::NVPTXGridValues.GV_Warp_Size;
}

bool acceptsImage(const __tgt_device_image *Image) {
  if (!Image || !Image->ImageStart || Image->ImageEnd <= Image->ImageStart) {
    declineImage(Image, "empty image");
    return false;
  }
  const auto *P = static_cast<const unsigned char *>(Image->ImageStart);
  size_t N =
      size_t(static_cast<const char *>(Image->ImageEnd) - static_cast<const char *>(Image->ImageStart));
  if (N >= sizeof(Elf64_Ehdr) && std::memcmp(P, ELFMAG, SELFMAG) == 0) {
    Elf64_Ehdr Eh;
    std::memcpy(&Eh, P, sizeof Eh);
    if (Eh.e_ident[EI_CLASS] != ELFCLASS64 || Eh.e_machine != EM_X86_64) {
      declineImage(Image, fmt::format("ELF image for machine {} (class {}), not x86-64", Eh.e_machine,
                                      Eh.e_ident[EI_CLASS]));
      return false;
    }
    if (Eh.e_type != ET_DYN) {
      declineImage(Image, fmt::format("ELF image of type {}, not a shared object (ET_DYN)", Eh.e_type));
      return false;
    }
    OMPSIM_TRACE_EVENT(Cat::Image, "accept").str("plugin", "sim").str("kind", "elf").num("bytes", int64_t(N));
    return true;
  }
  llvm::MemoryBufferRef Ref(llvm::StringRef(reinterpret_cast<const char *>(P), N), "device-image");
  if (llvm::identify_magic(Ref.getBuffer()) == llvm::file_magic::bitcode) {
    auto Triple = llvm::getBitcodeTargetTriple(Ref);
    if (!Triple) {
      declineImage(Image, "unreadable LLVM bitcode: " + llvm::toString(Triple.takeError()));
      return false;
    }
    // x86-64 code, or a GPU's, which the executor retargets for its CPU.
    llvm::Triple T(*Triple);
    if (T.getArch() != llvm::Triple::x86_64 && !isGpu(T)) {
      declineImage(Image, "LLVM bitcode for " + *Triple + ", not x86_64, nvptx64 or amdgcn");
      return false;
    }
    // OMPSIM_SIM_GPU names the GPU this device stands for: the other GPU's
    // image of a binary built for both is declined, and the named one's runs.
    if (isGpu(T) && config().declinesGpu(T.getArchName())) {
      const std::string &SimGpu = config().SimGpu;
      declineImage(Image, fmt::format("LLVM bitcode for {}, and the simulated device is an {} GPU "
                                      "(OMPSIM_SIM_GPU={})",
                                      *Triple, SimGpu, SimGpu));
      return false;
    }
    OMPSIM_TRACE_EVENT(Cat::Image, "accept")
        .str("plugin", "sim")
        .str("kind", "bitcode")
        .str("triple", *Triple);
    return true;
  }
  declineImage(Image, "neither an ELF shared object nor LLVM bitcode");
  return false;
}

} // namespace

OMPSIM_EXPORT int32_t __tgt_rtl_is_valid_binary(const __tgt_device_image *Image) {
  if (!acceptsImage(Image))
    return 0;
  // The runtime initializes a device right after it accepted an image; the
  // executor starts now so that its start overlaps the host's work until then.
  SimPlugin::get().spawnEarly(0);
  return 1;
}

OMPSIM_EXPORT int32_t __tgt_rtl_load_binary(int32_t Id, const __tgt_device_image *Image,
                                            ompsim_binary_handle *Binary) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Image || !Binary)
    return failWith(D, fmt::format("device {}: load_binary without an image", Id));
  llvm::ArrayRef<char> Bytes(static_cast<const char *>(Image->ImageStart),
                             static_cast<const char *>(Image->ImageEnd));
  std::string Name = fmt::format("#{}", ++D->ImagesLoaded);
  // The bytes are the registered binary's own, mapped until it unregisters
  // (which unloads the image first): the controller need not copy them.
  profile::Section Profiled("Executor load image",
                            [&] { return fmt::format("Device={};Image={}", Id, Name); });
  auto Img = C->loadImage(Bytes, Name, hostLibraryNames(Image->ImageStart), /*bytesOutliveImage=*/true);
  if (!Img)
    return failWith(D, Img.takeError());
  D->Binaries.push_back(
      std::make_unique<ompsim_binary>(ompsim_binary{Id, *Img, Name, gpuBitcodeWarpSize(Bytes)}));
  *Binary = D->Binaries.back().get();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_unload_binary(int32_t Id, ompsim_binary_handle Binary) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Binary)
    return failWith(D, fmt::format("device {}: unload_binary without a binary", Id));
  if (auto Err = C->unloadImage(Binary->Image))
    return failWith(D, std::move(Err));
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_global(int32_t Id, ompsim_binary_handle Binary, uint64_t Size,
                                           const char *Name, void **TgtPtr) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Binary || !Name || !TgtPtr)
    return failWith(D, fmt::format("device {}: get_global with a null argument", Id));
  auto Addr = C->lookup(Binary->Image, Name);
  if (!Addr)
    return failWith(D, Addr.takeError());
  *TgtPtr = reinterpret_cast<void *>(*Addr);
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_globals(int32_t Id, ompsim_binary_handle Binary, uint64_t N,
                                            const char *const *Names, const uint64_t *Sizes, void **TgtPtrs) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Binary || (N && (!Names || !TgtPtrs)))
    return failWith(D, fmt::format("device {}: get_globals with a null argument", Id));
  (void)Sizes;                         // the executor knows each symbol's extent
  std::vector<llvm::StringRef> Wanted; // the caller's names, not copies
  Wanted.reserve(N);
  for (uint64_t I = 0; I < N; ++I) {
    if (!Names[I])
      return failWith(D, fmt::format("device {}: get_globals: name {} is null", Id, I));
    Wanted.emplace_back(Names[I]);
  }
  auto Addrs = C->lookupMany(Binary->Image, Wanted);
  if (!Addrs)
    return failWith(D, Addrs.takeError());
  for (uint64_t I = 0; I < N; ++I)
    TgtPtrs[I] = reinterpret_cast<void *>((*Addrs)[I]);
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_get_function(int32_t Id, ompsim_binary_handle Binary, const char *Name,
                                             void **Kernel) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (!Binary || !Name || !Kernel)
    return failWith(D, fmt::format("device {}: get_function with a null argument", Id));
  auto Addr = C->lookup(Binary->Image, Name);
  if (!Addr)
    return failWith(D, Addr.takeError());
  auto Handle = std::make_unique<KernelHandle>();
  Handle->Entry = *Addr;
  Handle->Name = Name;
  Handle->Image = Binary->Image;
  Handle->GpuWarpSize = Binary->GpuWarpSize;
  D->Kernels.push_back(std::move(Handle));
  *Kernel = D->Kernels.back().get();
  return OMPSIM_OFFLOAD_SUCCESS;
}

OMPSIM_EXPORT int32_t __tgt_rtl_set_function_ptr_map(int32_t Id, uint64_t N,
                                                     const __omp_offloading_fptr_map_ty *Table) {
  SimDevice *D;
  DeviceController *C = controllerOf(Id, D);
  if (!C)
    return OMPSIM_OFFLOAD_FAIL;
  if (N && !Table)
    return failWith(D, fmt::format("device {}: set_function_ptr_map with a null table", Id));
  if (auto Err = C->setFunctionPointerTable(llvm::ArrayRef(Table, N)))
    return failWith(D, std::move(Err));
  D->Advisor.setFunctionPointerTable(llvm::ArrayRef(Table, N));
  OMPSIM_TRACE_EVENT(Cat::Table, "publish").num("device", Id).num("n", int64_t(N)).str("plugin", "sim");
  return OMPSIM_OFFLOAD_SUCCESS;
}
