// ElfImageLoader on real clang-22 device images, loaded into this process.
#include "ElfImageLoader.h"
#include "LoaderTestSupport.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <cstring>
#include <fstream>
#include <iterator>

using namespace ompsim::sim;
using namespace ompsim::sim::test;

namespace {

/// The kernel symbol (__omp_offloading_..._l<N>) of an image.
std::string kernelName(const std::vector<char> &bytes) {
  auto obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(bytes.data(), bytes.size()), "img"));
  if (!obj) {
    llvm::consumeError(obj.takeError());
    return "";
  }
  auto *elf = llvm::cast<llvm::object::ELFObjectFileBase>(obj->get());
  for (const auto &s : elf->getDynamicSymbolIterators()) {
    auto name = s.getName();
    if (name && name->starts_with("__omp_offloading_"))
      return name->str();
    if (!name)
      llvm::consumeError(name.takeError());
  }
  return "";
}

template <typename T> T &at(const LoadedElfImage &img, const char *sym) {
  uint64_t a = img.lookup(sym);
  EXPECT_NE(a, 0u) << sym;
  return *reinterpret_cast<T *>(a);
}

} // namespace

TEST_F(LoaderTest, GlobalsReadableAfterLoad) {
  auto bytes = readImage("loader_probe");
  auto img = ElfImageLoader::load(bytes, "loader_probe", env_);
  ASSERT_TRUE(bool(img)) << llvm::toString(img.takeError());
  EXPECT_EQ(at<int>(**img, "probe_global"), 42);
  uint64_t g = (*img)->lookup("probe_global");
  EXPECT_GE(g, (*img)->base());
  EXPECT_LT(g, (*img)->base() + (*img)->size());
  EXPECT_EQ((*img)->lookup("no_such_symbol"), 0u);
}

TEST_F(LoaderTest, InitArrayRunsInPriorityOrder) {
  auto bytes = readImage("loader_probe");
  auto img = ElfImageLoader::load(bytes, "loader_probe", env_);
  ASSERT_TRUE(bool(img)) << llvm::toString(img.takeError());
  EXPECT_EQ(at<int>(**img, "probe_norder"), 2);
  int *order = &at<int>(**img, "probe_order");
  EXPECT_EQ(order[0], 1);
  EXPECT_EQ(order[1], 2);
}

TEST_F(LoaderTest, RelativeRelocationPointsIntoTheImage) {
  auto bytes = readImage("loader_probe");
  auto img = ElfImageLoader::load(bytes, "loader_probe", env_);
  ASSERT_TRUE(bool(img)) << llvm::toString(img.takeError());
  auto fp = at<int (*)(int)>(**img, "probe_fp");
  uint64_t f = reinterpret_cast<uint64_t>(fp);
  EXPECT_GE(f, (*img)->base());
  EXPECT_LT(f, (*img)->base() + (*img)->size());
  EXPECT_EQ(fp(5), 6);
}

TEST_F(LoaderTest, NeededLibrariesLoadedExceptRuntimeAndLoader) {
  auto bytes = readImage("loader_probe");
  auto img = ElfImageLoader::load(bytes, "loader_probe", env_);
  ASSERT_TRUE(bool(img)) << llvm::toString(img.takeError());
  EXPECT_NE(std::find(neededSeen_.begin(), neededSeen_.end(), "libc.so.6"), neededSeen_.end());
  for (const auto &n : neededSeen_) {
    EXPECT_EQ(n.rfind("libomptarget", 0), std::string::npos) << n;
    EXPECT_EQ(n.rfind("ld-linux", 0), std::string::npos) << n;
  }
}

TEST_F(LoaderTest, KernelRunsWithImportsResolved) {
  auto bytes = readImage("loader_probe");
  std::string kernel = kernelName(bytes);
  ASSERT_FALSE(kernel.empty());
  auto img = ElfImageLoader::load(bytes, "loader_probe", env_);
  ASSERT_TRUE(bool(img)) << llvm::toString(img.takeError());
  auto fn = reinterpret_cast<void (*)(void *, int *, char *)>((*img)->lookup(kernel));
  ASSERT_NE(fn, nullptr);
  int out[4] = {};
  char text[16] = {};
  fn(nullptr, out, text);
  EXPECT_EQ(out[0], 42);
  EXPECT_EQ(out[1], 6);
  EXPECT_EQ(out[2], 12);
  EXPECT_STREQ(text, "n=2");
  EXPECT_EQ(out[3], 3);
}

TEST_F(LoaderTest, UndefinedImportIsNamed) {
  auto bytes = readImage("loader_probe");
  auto resolve = env_.resolve;
  env_.resolve = [resolve](llvm::StringRef n) -> void * { return n == "snprintf" ? nullptr : resolve(n); };
  auto img = ElfImageLoader::load(bytes, "loader_probe", env_);
  ASSERT_FALSE(bool(img));
  EXPECT_NE(llvm::toString(img.takeError()).find("undefined symbol 'snprintf'"), std::string::npos);
  EXPECT_EQ(alloc_.bytesInUse(), 0u) << "a failed load must give its memory back";
}

TEST_F(LoaderTest, UnknownRelocationTypeIsNamed) {
  auto bytes = readImage("loader_probe");
  // Rewrite the first .rela.dyn entry's type to a TLS relocation the loader
  // does not implement.
  auto obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(bytes.data(), bytes.size()), "img"));
  ASSERT_TRUE(bool(obj));
  uint64_t relaOffset = 0;
  for (const auto &sec : (*obj)->sections()) {
    auto name = sec.getName();
    if (name && *name == ".rela.dyn")
      relaOffset = llvm::cast<llvm::object::ELFSectionRef>(sec).getOffset();
  }
  ASSERT_NE(relaOffset, 0u);
  Elf64_Rela r;
  std::memcpy(&r, bytes.data() + relaOffset, sizeof r);
  r.r_info = ELF64_R_INFO(ELF64_R_SYM(r.r_info), R_X86_64_TPOFF32);
  std::memcpy(bytes.data() + relaOffset, &r, sizeof r);
  auto img = ElfImageLoader::load(bytes, "patched", env_);
  ASSERT_FALSE(bool(img));
  std::string msg = llvm::toString(img.takeError());
  EXPECT_NE(msg.find("R_X86_64_TPOFF32"), std::string::npos) << msg;
  EXPECT_NE(msg.find("patched"), std::string::npos) << msg;
}

TEST_F(LoaderTest, RejectsNonElf) {
  std::vector<char> junk(256, 'x');
  auto img = ElfImageLoader::load(junk, "junk", env_);
  ASSERT_FALSE(bool(img));
  EXPECT_NE(llvm::toString(img.takeError()).find("image junk"), std::string::npos);
}

TEST_F(LoaderTest, FiniRunsOnce) {
  auto bytes = readImage("loader_probe");
  auto img = ElfImageLoader::load(bytes, "loader_probe", env_);
  ASSERT_TRUE(bool(img)) << llvm::toString(img.takeError());
  (*img)->runFini();
  (*img)->runFini();
  img->reset();
  EXPECT_EQ(alloc_.bytesInUse(), 0u);
}

TEST_F(LoaderTest, IrelativeResolverRunsOnceCodeIsExecutable) {
  auto bytes = readImage("ifunc_probe");
  auto img = ElfImageLoader::load(bytes, "ifunc_probe", env_);
  ASSERT_TRUE(bool(img)) << llvm::toString(img.takeError());
  auto fp = at<int (*)(int)>(**img, "probe_scale_fp");
  uint64_t f = reinterpret_cast<uint64_t>(fp);
  EXPECT_GE(f, (*img)->base());
  EXPECT_LT(f, (*img)->base() + (*img)->size());
  EXPECT_EQ(fp(21), 42);
}
