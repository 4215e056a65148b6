//===- AllocationTraces.cpp - stock's OFFLOAD_TRACK_ALLOCATION_TRACES -----===//
//
// The texts are stock libomptarget 22's (its plugins' ErrorReporter), so
// that what LLVM's offload/test/sanitizer programs look for is there.
//
//===----------------------------------------------------------------------===//
#include "AllocationTraces.h"
#include "StackTraces.h"

#include "ompsim/plugin_api.h"

#include <fmt/format.h>

namespace ompsim::tracking {

namespace {

std::string pointer(uint64_t P) { return P ? fmt::format("{:#x}", P) : "(nil)"; }
std::string pointer(const void *P) { return pointer(reinterpret_cast<uint64_t>(P)); }

/// Device memory allocated by default and as device memory is one kind to a
/// free; pinned host and managed memory are others.
bool sameKind(int32_t A, int32_t B) {
  return std::string_view(allocationKindName(A)) == allocationKindName(B);
}

/// " for host pointer 0x... -> device pointer 0x..." (or without the host
/// pointer): where stock's lines on an allocation say it went.
std::string pointers(const AllocationTrace &A) {
  std::string Device = "-> device pointer " + pointer(A.DevicePtr);
  return A.HostPtr ? " for host pointer " + pointer(A.HostPtr) + " " + Device : " " + Device;
}

/// Stock's account of an allocation: its free, itself, and the allocations
/// before it at the same address.
void printAllocation(llvm::raw_ostream &OS, const AllocationTrace &A) {
  if (!A.Deallocated.empty()) {
    OS << "Last deallocation:\n";
    printStackTrace(OS, A.Deallocated);
  }
  OS << fmt::format("Last allocation of size {}{}:\n", A.Size, pointers(A));
  printStackTrace(OS, A.Allocated);
  if (!A.Prior)
    return;
  OS << "Prior allocations with the same base pointer:";
  unsigned I = 0;
  for (const AllocationTrace *P = A.Prior.get(); P; P = P->Prior.get(), ++I) {
    OS << fmt::format("\n #{} Prior deallocation of size {}:\n", I, P->Size);
    printStackTrace(OS, P->Deallocated);
    OS << fmt::format(" #{} Prior allocation{}:\n", I, pointers(*P));
    printStackTrace(OS, P->Allocated);
  }
}

} // namespace

const char *allocationKindName(int32_t Kind) {
  switch (Kind) {
  case OMPSIM_ALLOC_HOST:
    return "pinned host memory";
  case OMPSIM_ALLOC_SHARED:
    return "managed memory";
  default:
    return "device memory";
  }
}

void printTrackingHint(llvm::raw_ostream &OS) {
  OS << "Use 'OFFLOAD_TRACK_ALLOCATION_TRACES=true' to track device allocations\n\n";
}

void AllocationTraces::allocated(uint64_t DevicePtr, uint64_t Size, const void *HostPtr, int32_t Kind) {
  auto A = std::make_unique<AllocationTrace>();
  A->DevicePtr = DevicePtr;
  A->Size = Size;
  A->HostPtr = HostPtr;
  A->Kind = Kind;
  A->Allocated = captureStackTrace();
  std::lock_guard<std::mutex> Lock(Mu);
  std::unique_ptr<AllocationTrace> &Slot = Latest[DevicePtr];
  A->Prior = std::move(Slot);
  Slot = std::move(A);
}

std::optional<std::string> AllocationTraces::deallocating(uint64_t DevicePtr, int32_t Kind) {
  std::string Trace = captureStackTrace();
  std::lock_guard<std::mutex> Lock(Mu);
  auto It = Latest.find(DevicePtr);
  AllocationTrace *A = It == Latest.end() ? nullptr : It->second.get();
  std::string Problem;
  if (!A)
    Problem =
        fmt::format("deallocation of non-allocated {}: {}", allocationKindName(Kind), pointer(DevicePtr));
  else if (!A->Deallocated.empty())
    Problem = fmt::format("double-free of {}: {}", allocationKindName(Kind), pointer(DevicePtr));
  else if (!sameKind(A->Kind, Kind))
    Problem = fmt::format("deallocation requires {} but allocation was {}: {}", allocationKindName(Kind),
                          allocationKindName(A->Kind), pointer(DevicePtr));
  if (Problem.empty()) {
    A->Deallocated = std::move(Trace);
    return std::nullopt;
  }
  std::string Report;
  llvm::raw_string_ostream OS(Report);
  OS << "OFFLOAD ERROR: " << Problem << '\n';
  printStackTrace(OS, Trace);
  if (A)
    printAllocation(OS, *A);
  return Report;
}

void AllocationTraces::describeAddress(llvm::raw_ostream &OS, uint64_t Addr) {
  std::lock_guard<std::mutex> Lock(Mu);
  const AllocationTrace *Closest = nullptr;
  uint64_t Distance = UINT64_MAX;
  for (const auto &[Base, A] : Latest) {
    uint64_t D = Addr < Base ? Base - Addr : Addr - Base < A->Size ? 0 : Addr - (Base + A->Size) + 1;
    if (D < Distance) {
      Distance = D;
      Closest = A.get();
    }
  }
  if (!Closest) {
    OS << fmt::format(
        "No host-issued allocations; device pointer {} might be a global, stack, or shared location\n",
        pointer(Addr));
    return;
  }
  if (Distance == 0) {
    OS << fmt::format("Device pointer {} points into{} host-issued allocation:\n", pointer(Addr),
                      Closest->Deallocated.empty() ? "" : " prior");
    printAllocation(OS, *Closest);
    return;
  }
  bool Close = Distance < (uint64_t(1) << 29);
  OS << fmt::format(
      "Device pointer {} does not point into any (current or prior) host-issued allocation{}.\n",
      pointer(Addr), Close ? "" : " (might be a global, stack, or shared location)");
  OS << fmt::format("Closest host-issued allocation (distance {} byte{}; might be by page):\n", Distance,
                    Distance > 1 ? "s" : "");
  printAllocation(OS, *Closest);
}

} // namespace ompsim::tracking
