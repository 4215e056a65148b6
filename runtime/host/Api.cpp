// The libomptarget ABI (clang-22) and the omp_* device API: thin wrappers
// over Runtime. This is the only place an llvm::Error becomes a return code
// or a fatal "ompsim: ..." line.
#include "ApiHelpers.h"
#include "HiddenHelperSlice.h"
#include "RectCopy.h"
#include "Runtime.h"
#include "StockMessages.h"

#include "../check/MapChecker.h"

#include "ompsim/Trace.h"
#include "ompsim/offload_abi.h"

#include <fmt/format.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <vector>

using namespace ompsim::host;

namespace {

constexpr int OffloadSuccess = OMPSIM_OFFLOAD_SUCCESS;
constexpr int OffloadFail = OMPSIM_OFFLOAD_FAIL;

[[noreturn]] void fatal(llvm::Error Err) { Runtime::fatal(llvm::toString(std::move(Err))); }

/// A failed construct: one stock reports in its own words gets stock's lines
/// (and abort), any other the "ompsim: ..." line.
[[noreturn]] void failConstruct(llvm::Error Err, const ompsim_ident *Loc) {
  llvm::handleAllErrors(
      std::move(Err),
      [&](stock::StockError &E) {
        stock::failTargetConstruct(E, Loc, [&] { dumpMappingTables(stderr, stock::blockLocation(Loc)); });
      },
      [](const llvm::ErrorInfoBase &E) { Runtime::fatal(E.message()); });
  std::abort(); // not reached: both handlers end the process
}

/// The map checker's name for the construct at `Loc` (while it lives); nothing when it is off.
std::optional<ompsim::check::ConstructScope> checkScope(const char *Kind, const ompsim_ident *Loc) {
  if (!ompsim::check::enabled())
    return std::nullopt;
  std::string Where = stock::blockLocation(Loc);
  if (Where == "unknown:0:0")
    Where.clear();
  return std::optional<ompsim::check::ConstructScope>(std::in_place, Kind, std::move(Where));
}

void dataCall(const ompsim_ident *Loc, DataOp Op, int64_t DeviceNum, int32_t N, void **Bases, void **Begins,
              int64_t *Sizes, int64_t *Types, void **Names, void **Mappers, bool Nowait = false) {
  noteTargetThread();
  auto Scope = checkScope(Op == DataOp::Begin ? "map-entering construct"
                          : Op == DataOp::End ? "map-exiting construct"
                                              : "target update",
                          Loc);
  auto Args = makeMapArgs(N, Bases, Begins, Sizes, reinterpret_cast<const int64_t *>(Types), Names, Mappers);
  // Map errors (a missing present item, an extended section, a device copy
  // failure) are fatal whatever OMP_TARGET_OFFLOAD says, as upstream does.
  if (auto Err = Runtime::get().targetData(Op, DeviceNum, std::move(Args), Bases, Loc, Nowait))
    failConstruct(std::move(Err), Loc);
}

/// Device for an omp_* call: null for the host; `Ok` false for an invalid one.
Device *apiDevice(int DeviceNum, bool &Ok) {
  Ok = true;
  auto D = Runtime::get().device(DeviceNum);
  if (!D) {
    ompsim::trace::error(llvm::toString(D.takeError()));
    Ok = false;
    return nullptr;
  }
  return *D;
}

} // namespace

extern "C" {

// ---- registration ----------------------------------------------------------

void __tgt_register_lib(__tgt_bin_desc *Desc) {
  if (auto Err = Runtime::get().registerLib(Desc))
    fatal(std::move(Err));
}

void __tgt_unregister_lib(__tgt_bin_desc *Desc) {
  if (auto Err = Runtime::get().unregisterLib(Desc))
    fatal(std::move(Err));
}

void __tgt_register_requires(int64_t Flags) { Runtime::get().registerRequires(Flags); }

void __tgt_init_all_rtls() {
  if (auto Err = Runtime::get().ensurePlugins())
    fatal(std::move(Err));
}

// ---- kernels ---------------------------------------------------------------

int __tgt_target_kernel(ompsim_ident *Loc, int64_t DeviceNum, int32_t Teams, int32_t Threads, void *RegionId,
                        __tgt_kernel_arguments *Args) {
  OMPSIM_API_CALL;
  Runtime &Rt = Runtime::get();
  noteTargetThread();
  // The host device (omp_get_initial_device()): clang's code runs the host
  // version of the region, as with stock libomptarget.
  if (Rt.runsOnHost(DeviceNum))
    return OffloadFail;
  bool LaunchFailure = false;
  auto Scope = checkScope("target region", Loc);
  if (auto Err = Rt.targetKernel(DeviceNum, Teams, Threads, RegionId, Args, LaunchFailure, Loc)) {
    if (!LaunchFailure || Rt.policy() == OffloadPolicy::Mandatory)
      failConstruct(std::move(Err), Loc);
    // Not mandatory: clang's code runs the host version of the region.
    OMPSIM_TRACE_EVENT(Cat::Launch, "fallback").str("reason", llvm::toString(std::move(Err)));
    return OffloadFail;
  }
  return OffloadSuccess;
}

int __tgt_target_kernel_nowait(ompsim_ident *Loc, int64_t DeviceNum, int32_t Teams, int32_t Threads,
                               void *RegionId, __tgt_kernel_arguments *Args, int32_t, void *, int32_t,
                               void *) {
  OMPSIM_API_CALL;
  // Kernels run to completion; a nowait region is complete when this returns.
  return __tgt_target_kernel(Loc, DeviceNum, Teams, Threads, RegionId, Args);
}

void __kmpc_push_target_tripcount_mapper(ompsim_ident *, int64_t DeviceNum, uint64_t Count) {
  Runtime::get().pushTripcount(DeviceNum, Count);
}

void __kmpc_push_target_tripcount(int64_t DeviceNum, uint64_t Count) {
  Runtime::get().pushTripcount(DeviceNum, Count);
}

// ---- target data -----------------------------------------------------------

void __tgt_target_data_begin_mapper(ompsim_ident *Loc, int64_t DeviceNum, int32_t N, void **Bases,
                                    void **Begins, int64_t *Sizes, int64_t *Types, void **Names,
                                    void **Mappers) {
  OMPSIM_API_CALL;
  dataCall(Loc, DataOp::Begin, DeviceNum, N, Bases, Begins, Sizes, Types, Names, Mappers);
}
void __tgt_target_data_begin_nowait_mapper(ompsim_ident *Loc, int64_t DeviceNum, int32_t N, void **Bases,
                                           void **Begins, int64_t *Sizes, int64_t *Types, void **Names,
                                           void **Mappers, int32_t, void *, int32_t, void *) {
  OMPSIM_API_CALL;
  dataCall(Loc, DataOp::Begin, DeviceNum, N, Bases, Begins, Sizes, Types, Names, Mappers, /*nowait=*/true);
}
void __tgt_target_data_begin(int64_t DeviceNum, int32_t N, void **Bases, void **Begins, int64_t *Sizes,
                             int64_t *Types) {
  OMPSIM_API_CALL;
  dataCall(nullptr, DataOp::Begin, DeviceNum, N, Bases, Begins, Sizes, Types, nullptr, nullptr);
}
void __tgt_target_data_begin_nowait(int64_t DeviceNum, int32_t N, void **Bases, void **Begins, int64_t *Sizes,
                                    int64_t *Types, int32_t, void *, int32_t, void *) {
  OMPSIM_API_CALL;
  dataCall(nullptr, DataOp::Begin, DeviceNum, N, Bases, Begins, Sizes, Types, nullptr, nullptr);
}

void __tgt_target_data_end_mapper(ompsim_ident *Loc, int64_t DeviceNum, int32_t N, void **Bases,
                                  void **Begins, int64_t *Sizes, int64_t *Types, void **Names,
                                  void **Mappers) {
  OMPSIM_API_CALL;
  dataCall(Loc, DataOp::End, DeviceNum, N, Bases, Begins, Sizes, Types, Names, Mappers);
}
void __tgt_target_data_end_nowait_mapper(ompsim_ident *Loc, int64_t DeviceNum, int32_t N, void **Bases,
                                         void **Begins, int64_t *Sizes, int64_t *Types, void **Names,
                                         void **Mappers, int32_t, void *, int32_t, void *) {
  OMPSIM_API_CALL;
  dataCall(Loc, DataOp::End, DeviceNum, N, Bases, Begins, Sizes, Types, Names, Mappers, /*nowait=*/true);
}
void __tgt_target_data_end(int64_t DeviceNum, int32_t N, void **Bases, void **Begins, int64_t *Sizes,
                           int64_t *Types) {
  OMPSIM_API_CALL;
  dataCall(nullptr, DataOp::End, DeviceNum, N, Bases, Begins, Sizes, Types, nullptr, nullptr);
}
void __tgt_target_data_end_nowait(int64_t DeviceNum, int32_t N, void **Bases, void **Begins, int64_t *Sizes,
                                  int64_t *Types, int32_t, void *, int32_t, void *) {
  OMPSIM_API_CALL;
  dataCall(nullptr, DataOp::End, DeviceNum, N, Bases, Begins, Sizes, Types, nullptr, nullptr);
}

void __tgt_target_data_update_mapper(ompsim_ident *Loc, int64_t DeviceNum, int32_t N, void **Bases,
                                     void **Begins, int64_t *Sizes, int64_t *Types, void **Names,
                                     void **Mappers) {
  OMPSIM_API_CALL;
  dataCall(Loc, DataOp::Update, DeviceNum, N, Bases, Begins, Sizes, Types, Names, Mappers);
}
void __tgt_target_data_update_nowait_mapper(ompsim_ident *Loc, int64_t DeviceNum, int32_t N, void **Bases,
                                            void **Begins, int64_t *Sizes, int64_t *Types, void **Names,
                                            void **Mappers, int32_t, void *, int32_t, void *) {
  OMPSIM_API_CALL;
  dataCall(Loc, DataOp::Update, DeviceNum, N, Bases, Begins, Sizes, Types, Names, Mappers, /*nowait=*/true);
}
void __tgt_target_data_update(int64_t DeviceNum, int32_t N, void **Bases, void **Begins, int64_t *Sizes,
                              int64_t *Types) {
  OMPSIM_API_CALL;
  dataCall(nullptr, DataOp::Update, DeviceNum, N, Bases, Begins, Sizes, Types, nullptr, nullptr);
}
void __tgt_target_data_update_nowait(int64_t DeviceNum, int32_t N, void **Bases, void **Begins,
                                     int64_t *Sizes, int64_t *Types, int32_t, void *, int32_t, void *) {
  OMPSIM_API_CALL;
  dataCall(nullptr, DataOp::Update, DeviceNum, N, Bases, Begins, Sizes, Types, nullptr, nullptr);
}

// ---- declare mapper --------------------------------------------------------

int64_t __tgt_mapper_num_components(void *Handle) {
  return static_cast<int64_t>(static_cast<MapperComponents *>(Handle)->Components.size());
}

void __tgt_push_mapper_component(void *Handle, void *Base, void *Begin, int64_t Size, int64_t Type,
                                 void *Name) {
  static_cast<MapperComponents *>(Handle)->Components.push_back(
      MapArg{Base, Begin, Size, Type, Name, nullptr});
}

// ---- omp_* device API ------------------------------------------------------

int omp_get_num_devices(void) { return Runtime::get().numDevices(); }

// libomp's own omp_get_num_devices (which programs bind to, through its symbol
// version) asks for this first; RTLD_NEXT from libomp cannot see a preloaded runtime.
int __tgt_get_num_devices(void) { return Runtime::get().numDevices(); }

int omp_get_initial_device(void) { return Runtime::get().numDevices(); }

int omp_get_device_num(void) { return Runtime::get().numDevices(); } // called on the host

void *omp_target_alloc(size_t Size, int DeviceNum) {
  OMPSIM_API_CALL;
  bool Ok;
  Device *D = apiDevice(DeviceNum, Ok);
  if (!Ok)
    return nullptr;
  if (!D)
    return std::malloc(Size);
  auto P = D->allocate(Size, nullptr);
  if (!P) {
    ompsim::trace::error(llvm::toString(P.takeError()));
    return nullptr;
  }
  ompsim::check::onTargetAlloc(*D, *P, Size);
  return reinterpret_cast<void *>(*P);
}

void omp_target_free(void *Ptr, int DeviceNum) {
  OMPSIM_API_CALL;
  if (!Ptr)
    return;
  bool Ok;
  Device *D = apiDevice(DeviceNum, Ok);
  if (!Ok)
    return;
  if (!D)
    return std::free(Ptr);
  ompsim::check::onTargetFree(D->deviceNumber(), reinterpret_cast<uint64_t>(Ptr));
  if (auto Err = D->release(reinterpret_cast<uint64_t>(Ptr)))
    ompsim::trace::error(llvm::toString(std::move(Err)));
}

int omp_target_is_present(const void *Ptr, int DeviceNum) {
  OMPSIM_API_CALL;
  bool Ok;
  Device *D = apiDevice(DeviceNum, Ok);
  if (!Ok)
    return 0;
  if (!D)
    return 1;
  std::lock_guard<std::recursive_mutex> Lock(D->mappingTable().mutex());
  // One byte, as stock: a zero-length lookup would also find a block whose
  // base lies before `Ptr` (a section's array, a struct's padding) though
  // the storage at `Ptr` is not mapped.
  return D->mappingTable().lookup(reinterpret_cast<uintptr_t>(Ptr), 1).Entry != nullptr;
}

int omp_target_is_accessible(const void *Ptr, size_t Size, int DeviceNum) {
  OMPSIM_API_CALL;
  bool Ok;
  Device *D = apiDevice(DeviceNum, Ok);
  // Device memory is separate from host memory (no unified shared memory).
  return Ok && !D ? 1 : 0;
}

void *omp_get_mapped_ptr(const void *Ptr, int DeviceNum) {
  if (!Ptr)
    return nullptr;
  bool Ok;
  Device *D = apiDevice(DeviceNum, Ok);
  if (!Ok)
    return nullptr;
  if (!D)
    return const_cast<void *>(Ptr);
  std::lock_guard<std::recursive_mutex> Lock(D->mappingTable().mutex());
  MapLookup Found = D->mappingTable().lookup(reinterpret_cast<uintptr_t>(Ptr), 0);
  if (!Found.Entry)
    return nullptr;
  return reinterpret_cast<void *>(Found.Entry->translate(reinterpret_cast<uintptr_t>(Ptr)));
}

int omp_target_memcpy(void *Dst, const void *Src, size_t Length, size_t DstOffset, size_t SrcOffset,
                      int DstDevice, int SrcDevice) {
  OMPSIM_API_CALL;
  bool OkDst, OkSrc;
  Device *Dd = apiDevice(DstDevice, OkDst);
  Device *Sd = apiDevice(SrcDevice, OkSrc);
  if (!OkDst || !OkSrc || (Length && (!Dst || !Src)))
    return OffloadFail;
  char *To = static_cast<char *>(Dst) + DstOffset;
  const char *From = static_cast<const char *>(Src) + SrcOffset;
  llvm::Error Err = llvm::Error::success();
  if (!Dd && !Sd) {
    std::memmove(To, From, Length);
  } else if (Dd && !Sd) {
    Err = Dd->submit(reinterpret_cast<uint64_t>(To), From, Length);
    if (!Err)
      ompsim::check::onTargetWrite(Dd->deviceNumber(), Dd->mappingTable(), reinterpret_cast<uint64_t>(To),
                                   Length);
  } else if (!Dd && Sd) {
    Err = Sd->retrieve(To, reinterpret_cast<uint64_t>(From), Length);
    if (!Err)
      ompsim::check::onTargetRead(Sd->deviceNumber(), reinterpret_cast<uint64_t>(From), Length, To);
  } else {
    // Device to device through a host buffer: works across plugins too.
    std::vector<char> Buffer(Length);
    Err = Sd->retrieve(Buffer.data(), reinterpret_cast<uint64_t>(From), Length);
    if (!Err)
      Err = Dd->submit(reinterpret_cast<uint64_t>(To), Buffer.data(), Length);
    if (!Err)
      ompsim::check::onTargetWrite(Dd->deviceNumber(), Dd->mappingTable(), reinterpret_cast<uint64_t>(To),
                                   Length);
  }
  if (Err) {
    ompsim::trace::error(llvm::toString(std::move(Err)));
    return OffloadFail;
  }
  return OffloadSuccess;
}

int omp_target_memcpy_rect(void *Dst, const void *Src, size_t ElementSize, int NumDims, const size_t *Volume,
                           const size_t *DstOffsets, const size_t *SrcOffsets, const size_t *DstDimensions,
                           const size_t *SrcDimensions, int DstDevice, int SrcDevice) {
  OMPSIM_API_CALL;
  if (!Dst && !Src)
    return INT_MAX; // the number of dimensions supported
  if (!Dst || !Src || NumDims < 1 || !Volume || !DstOffsets || !SrcOffsets || !DstDimensions ||
      !SrcDimensions)
    return OffloadFail;
  // One transfer per contiguous run: whole rows merge into one.
  for (const CopyRun &Run :
       rectCopyRuns(ElementSize, NumDims, Volume, DstOffsets, SrcOffsets, DstDimensions, SrcDimensions)) {
    int Rc = omp_target_memcpy(Dst, Src, Run.Size, Run.Dst, Run.Src, DstDevice, SrcDevice);
    if (Rc != OffloadSuccess)
      return Rc;
  }
  return OffloadSuccess;
}

void *omp_target_memset(void *Ptr, int Value, size_t Count, int DeviceNum) {
  OMPSIM_API_CALL;
  bool Ok;
  Device *D = apiDevice(DeviceNum, Ok);
  if (!Ok || !Ptr)
    return Ptr;
  if (!D)
    return std::memset(Ptr, Value, Count);
  std::vector<unsigned char> Pattern(Count, static_cast<unsigned char>(Value));
  if (auto Err = D->submit(reinterpret_cast<uint64_t>(Ptr), Pattern.data(), Count))
    ompsim::trace::error(llvm::toString(std::move(Err)));
  else
    ompsim::check::onTargetWrite(D->deviceNumber(), D->mappingTable(), reinterpret_cast<uint64_t>(Ptr),
                                 Count);
  return Ptr;
}

int omp_target_associate_ptr(const void *HostPtr, const void *DevicePtr, size_t Size, size_t DeviceOffset,
                             int DeviceNum) {
  OMPSIM_API_CALL;
  bool Ok;
  Device *D = apiDevice(DeviceNum, Ok);
  if (!Ok || !D || !HostPtr || !DevicePtr)
    return OffloadFail;
  auto Host = reinterpret_cast<uintptr_t>(HostPtr);
  uint64_t Tgt = reinterpret_cast<uint64_t>(DevicePtr) + DeviceOffset;
  ompsim::events::DataOpScope Op(ompsim::events::DataOpKind::Associate, HostPtr, ompsim::events::HostDevice,
                                 reinterpret_cast<void *>(Tgt), D->deviceNumber(), Size);
  std::lock_guard<std::recursive_mutex> Lock(D->mappingTable().mutex());
  MapLookup Found = D->mappingTable().lookup(Host, Size);
  if (Found.Entry) {
    // Associating the same pair again is allowed; anything else is not.
    return Found.Contained && Found.Entry->translate(Host) == Tgt ? OffloadSuccess : OffloadFail;
  }
  MapEntry E;
  E.HstBegin = Host;
  E.HstEnd = Host + Size;
  E.TgtBegin = Tgt;
  E.DynamicRef = MapEntry::Infinite;
  E.Associated = true;
  E.Name = "omp_target_associate_ptr";
  D->mappingTable().insert(std::move(E));
  return OffloadSuccess;
}

int omp_target_disassociate_ptr(const void *HostPtr, int DeviceNum) {
  OMPSIM_API_CALL;
  bool Ok;
  Device *D = apiDevice(DeviceNum, Ok);
  if (!Ok || !D)
    return OffloadFail;
  // As stock reports it: no device address, no size.
  ompsim::events::DataOpScope Op(ompsim::events::DataOpKind::Disassociate, HostPtr,
                                 ompsim::events::HostDevice, nullptr, D->deviceNumber(), 0);
  std::lock_guard<std::recursive_mutex> Lock(D->mappingTable().mutex());
  MapLookup Found = D->mappingTable().lookup(reinterpret_cast<uintptr_t>(HostPtr), 0);
  // Stock's checks and reports, in its order: the hold count first (OpenACC's
  // acc_unmap_data rule), then how the entry was made.
  if (!Found.Entry || Found.Entry->HstBegin != reinterpret_cast<uintptr_t>(HostPtr)) {
    stock::print(stock::error(stock::AssociationNotFound));
    return OffloadFail;
  }
  if (Found.Entry->HoldRef != 0) {
    stock::print(stock::error(stock::DisassociateHeld));
    return OffloadFail;
  }
  if (!Found.Entry->Associated) {
    stock::print(stock::error(stock::DisassociateNotAssociated));
    return OffloadFail;
  }
  D->mappingTable().erase(*Found.Entry);
  return OffloadSuccess;
}

} // extern "C"
