// Shared pieces of the ElfImageLoader unit tests: clang-22 probe images and
// an executor-like environment (private arena, dlopen-based imports).
#pragma once

#include "ElfImageLoader.h"
#include "RangeAllocator.h"

#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace ompsim::sim::test {

/// The bytes of a probe's device image, built by clang-22 with -save-temps.
inline std::vector<char> readImage(const std::string &probe) {
  std::string path = std::string(OMPSIM_PROBE_DIR) + "/" + probe + ".x86_64..img";
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "missing device image " << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A private arena and a dlopen-based environment, like the executor's.
class LoaderTest : public ::testing::Test {
protected:
  void SetUp() override {
    arena_ = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(arena_, MAP_FAILED);
    alloc_.reset(reinterpret_cast<uint64_t>(arena_), reinterpret_cast<uint64_t>(arena_) + kSize);
    env_.allocate = [this](uint64_t size) -> llvm::Expected<uint8_t *> {
      uint64_t a = alloc_.allocate(size, 4096);
      if (!a)
        return llvm::createStringError(llvm::inconvertibleErrorCode(), "test arena exhausted");
      return reinterpret_cast<uint8_t *>(a);
    };
    env_.release = [this](uint8_t *p) { alloc_.release(reinterpret_cast<uint64_t>(p)); };
    env_.loadNeeded = [this](llvm::StringRef so) -> llvm::Error {
      neededSeen_.push_back(so.str());
      void *h = ::dlopen(so.str().c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (!h)
        return llvm::createStringError(llvm::inconvertibleErrorCode(), ::dlerror());
      libs_.push_back(h);
      return llvm::Error::success();
    };
    env_.resolve = [this](llvm::StringRef n) -> void * {
      for (void *h : libs_)
        if (void *p = ::dlsym(h, n.str().c_str()))
          return p;
      return nullptr;
    };
  }
  void TearDown() override { ::munmap(arena_, kSize); }

  static constexpr uint64_t kSize = 64 << 20;
  void *arena_ = nullptr;
  RangeAllocator alloc_;
  ElfLoadEnvironment env_;
  std::vector<void *> libs_;
  std::vector<std::string> neededSeen_;
};

} // namespace ompsim::sim::test
