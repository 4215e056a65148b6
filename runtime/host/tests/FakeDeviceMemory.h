// A DeviceMemory whose addresses are not host addresses (like a real device):
// a host-side dereference of a "device" address would fault in the tests.
#pragma once

#include "DeviceMemory.h"

#include <cstring>
#include <map>
#include <vector>

namespace ompsim::host::testing {

class FakeDeviceMemory : public DeviceMemory {
public:
  static constexpr uint64_t Base = 0x7e0000000000ULL;

  llvm::Expected<uint64_t> allocate(uint64_t Size, const void *) override {
    uint64_t Addr = Next;
    Next += (Size ? Size : 1) + 64; // gaps catch off-by-one translations
    Blocks[Addr] = std::vector<unsigned char>(Size ? Size : 1);
    ++Allocations;
    return Addr;
  }
  llvm::Error release(uint64_t Tgt) override {
    if (!Blocks.erase(Tgt))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "free of unknown block");
    ++Frees;
    return llvm::Error::success();
  }
  llvm::Error submit(uint64_t Tgt, const void *Hst, uint64_t Size, llvm::StringRef = {}) override {
    ++Submits;
    unsigned char *P = at(Tgt, Size);
    if (!P)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "submit out of bounds");
    std::memcpy(P, Hst, Size);
    return llvm::Error::success();
  }
  llvm::Error retrieve(void *Hst, uint64_t Tgt, uint64_t Size, llvm::StringRef = {}) override {
    ++Retrieves;
    unsigned char *P = at(Tgt, Size);
    if (!P)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "retrieve out of bounds");
    std::memcpy(Hst, P, Size);
    return llvm::Error::success();
  }

  /// Device bytes at `Tgt` (inside an allocated block), or null.
  unsigned char *at(uint64_t Tgt, uint64_t Size) {
    auto It = Blocks.upper_bound(Tgt);
    if (It == Blocks.begin())
      return nullptr;
    --It;
    if (Tgt + Size > It->first + It->second.size())
      return nullptr;
    return It->second.data() + (Tgt - It->first);
  }
  template <typename T> T read(uint64_t Tgt) {
    T V;
    std::memcpy(&V, at(Tgt, sizeof(T)), sizeof(T));
    return V;
  }
  template <typename T> void write(uint64_t Tgt, T V) { std::memcpy(at(Tgt, sizeof(T)), &V, sizeof(T)); }
  size_t liveBlocks() const { return Blocks.size(); }

  int Allocations = 0, Frees = 0, Submits = 0, Retrieves = 0;

private:
  uint64_t Next = Base;
  std::map<uint64_t, std::vector<unsigned char>> Blocks;
};

} // namespace ompsim::host::testing
