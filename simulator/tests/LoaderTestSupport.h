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
inline std::vector<char> readImage(const std::string &Probe) {
  std::string Path = std::string(OMPSIM_PROBE_DIR) + "/" + Probe + ".x86_64..img";
  std::ifstream In(Path, std::ios::binary);
  EXPECT_TRUE(In.good()) << "missing device image " << Path;
  return {std::istreambuf_iterator<char>(In), std::istreambuf_iterator<char>()};
}

/// A private arena and a dlopen-based environment, like the executor's.
class LoaderTest : public ::testing::Test {
protected:
  void SetUp() override {
    Arena = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    ASSERT_NE(Arena, MAP_FAILED);
    Alloc.reset(reinterpret_cast<uint64_t>(Arena), reinterpret_cast<uint64_t>(Arena) + kSize);
    Env.Allocate = [this](uint64_t Size) -> llvm::Expected<uint8_t *> {
      uint64_t A = Alloc.allocate(Size, 4096);
      if (!A)
        return llvm::createStringError(llvm::inconvertibleErrorCode(), "test arena exhausted");
      return reinterpret_cast<uint8_t *>(A);
    };
    Env.Release = [this](uint8_t *P) { Alloc.release(reinterpret_cast<uint64_t>(P)); };
    Env.LoadNeeded = [this](llvm::StringRef So) -> llvm::Error {
      NeededSeen.push_back(So.str());
      void *H = ::dlopen(So.str().c_str(), RTLD_NOW | RTLD_GLOBAL);
      if (!H)
        return llvm::createStringError(llvm::inconvertibleErrorCode(), ::dlerror());
      Libs.push_back(H);
      return llvm::Error::success();
    };
    Env.Resolve = [this](llvm::StringRef N) -> void * {
      for (void *H : Libs)
        if (void *P = ::dlsym(H, N.str().c_str()))
          return P;
      return nullptr;
    };
  }
  void TearDown() override { ::munmap(Arena, kSize); }

  static constexpr uint64_t kSize = 64 << 20;
  void *Arena = nullptr;
  RangeAllocator Alloc;
  ElfLoadEnvironment Env;
  std::vector<void *> Libs;
  std::vector<std::string> NeededSeen;
};

} // namespace ompsim::sim::test
