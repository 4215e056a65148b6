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

  llvm::Expected<uint64_t> allocate(uint64_t size, const void *) override {
    uint64_t addr = next_;
    next_ += (size ? size : 1) + 64; // gaps catch off-by-one translations
    blocks_[addr] = std::vector<unsigned char>(size ? size : 1);
    ++allocations;
    return addr;
  }
  llvm::Error release(uint64_t tgt) override {
    if (!blocks_.erase(tgt))
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "free of unknown block");
    ++frees;
    return llvm::Error::success();
  }
  llvm::Error submit(uint64_t tgt, const void *hst, uint64_t size) override {
    ++submits;
    unsigned char *p = at(tgt, size);
    if (!p)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "submit out of bounds");
    std::memcpy(p, hst, size);
    return llvm::Error::success();
  }
  llvm::Error retrieve(void *hst, uint64_t tgt, uint64_t size) override {
    ++retrieves;
    unsigned char *p = at(tgt, size);
    if (!p)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "retrieve out of bounds");
    std::memcpy(hst, p, size);
    return llvm::Error::success();
  }

  /// Device bytes at `tgt` (inside an allocated block), or null.
  unsigned char *at(uint64_t tgt, uint64_t size) {
    auto it = blocks_.upper_bound(tgt);
    if (it == blocks_.begin())
      return nullptr;
    --it;
    if (tgt + size > it->first + it->second.size())
      return nullptr;
    return it->second.data() + (tgt - it->first);
  }
  template <typename T> T read(uint64_t tgt) {
    T v;
    std::memcpy(&v, at(tgt, sizeof(T)), sizeof(T));
    return v;
  }
  template <typename T> void write(uint64_t tgt, T v) { std::memcpy(at(tgt, sizeof(T)), &v, sizeof(T)); }
  size_t liveBlocks() const { return blocks_.size(); }

  int allocations = 0, frees = 0, submits = 0, retrieves = 0;

private:
  uint64_t next_ = Base;
  std::map<uint64_t, std::vector<unsigned char>> blocks_;
};

} // namespace ompsim::host::testing
