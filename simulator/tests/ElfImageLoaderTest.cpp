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
std::string kernelName(const std::vector<char> &Bytes) {
  auto Obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(Bytes.data(), Bytes.size()), "img"));
  if (!Obj) {
    llvm::consumeError(Obj.takeError());
    return "";
  }
  auto *Elf = llvm::cast<llvm::object::ELFObjectFileBase>(Obj->get());
  for (const auto &S : Elf->getDynamicSymbolIterators()) {
    auto Name = S.getName();
    if (Name && Name->starts_with("__omp_offloading_"))
      return Name->str();
    if (!Name)
      llvm::consumeError(Name.takeError());
  }
  return "";
}

template <typename T> T &at(const LoadedElfImage &Img, const char *Sym) {
  uint64_t A = Img.lookup(Sym);
  EXPECT_NE(A, 0u) << Sym;
  return *reinterpret_cast<T *>(A);
}

} // namespace

TEST_F(LoaderTest, GlobalsReadableAfterLoad) {
  auto Bytes = readImage("loader_probe");
  auto Img = ElfImageLoader::load(Bytes, "loader_probe", Env);
  ASSERT_TRUE(bool(Img)) << llvm::toString(Img.takeError());
  EXPECT_EQ(at<int>(**Img, "probe_global"), 42);
  uint64_t G = (*Img)->lookup("probe_global");
  EXPECT_GE(G, (*Img)->base());
  EXPECT_LT(G, (*Img)->base() + (*Img)->size());
  EXPECT_EQ((*Img)->lookup("no_such_symbol"), 0u);
}

TEST_F(LoaderTest, InitArrayRunsInPriorityOrder) {
  auto Bytes = readImage("loader_probe");
  auto Img = ElfImageLoader::load(Bytes, "loader_probe", Env);
  ASSERT_TRUE(bool(Img)) << llvm::toString(Img.takeError());
  EXPECT_EQ(at<int>(**Img, "probe_norder"), 2);
  int *Order = &at<int>(**Img, "probe_order");
  EXPECT_EQ(Order[0], 1);
  EXPECT_EQ(Order[1], 2);
}

TEST_F(LoaderTest, RelativeRelocationPointsIntoTheImage) {
  auto Bytes = readImage("loader_probe");
  auto Img = ElfImageLoader::load(Bytes, "loader_probe", Env);
  ASSERT_TRUE(bool(Img)) << llvm::toString(Img.takeError());
  auto Fp = at<int (*)(int)>(**Img, "probe_fp");
  uint64_t F = reinterpret_cast<uint64_t>(Fp);
  EXPECT_GE(F, (*Img)->base());
  EXPECT_LT(F, (*Img)->base() + (*Img)->size());
  EXPECT_EQ(Fp(5), 6);
}

TEST_F(LoaderTest, NeededLibrariesLoadedExceptRuntimeAndLoader) {
  auto Bytes = readImage("loader_probe");
  auto Img = ElfImageLoader::load(Bytes, "loader_probe", Env);
  ASSERT_TRUE(bool(Img)) << llvm::toString(Img.takeError());
  EXPECT_NE(std::find(NeededSeen.begin(), NeededSeen.end(), "libc.so.6"), NeededSeen.end());
  for (const auto &N : NeededSeen) {
    EXPECT_EQ(N.rfind("libomptarget", 0), std::string::npos) << N;
    EXPECT_EQ(N.rfind("ld-linux", 0), std::string::npos) << N;
  }
}

TEST_F(LoaderTest, KernelRunsWithImportsResolved) {
  auto Bytes = readImage("loader_probe");
  std::string Kernel = kernelName(Bytes);
  ASSERT_FALSE(Kernel.empty());
  auto Img = ElfImageLoader::load(Bytes, "loader_probe", Env);
  ASSERT_TRUE(bool(Img)) << llvm::toString(Img.takeError());
  auto Fn = reinterpret_cast<void (*)(void *, int *, char *)>((*Img)->lookup(Kernel));
  ASSERT_NE(Fn, nullptr);
  int Out[4] = {};
  char Text[16] = {};
  Fn(nullptr, Out, Text);
  EXPECT_EQ(Out[0], 42);
  EXPECT_EQ(Out[1], 6);
  EXPECT_EQ(Out[2], 12);
  EXPECT_STREQ(Text, "n=2");
  EXPECT_EQ(Out[3], 3);
}

TEST_F(LoaderTest, UndefinedImportIsNamed) {
  auto Bytes = readImage("loader_probe");
  auto Resolve = Env.Resolve;
  Env.Resolve = [Resolve](llvm::StringRef N) -> void * { return N == "snprintf" ? nullptr : Resolve(N); };
  auto Img = ElfImageLoader::load(Bytes, "loader_probe", Env);
  ASSERT_FALSE(bool(Img));
  EXPECT_NE(llvm::toString(Img.takeError()).find("undefined symbol 'snprintf'"), std::string::npos);
  EXPECT_EQ(Alloc.bytesInUse(), 0u) << "a failed load must give its memory back";
}

TEST_F(LoaderTest, UnknownRelocationTypeIsNamed) {
  auto Bytes = readImage("loader_probe");
  // Rewrite the first .rela.dyn entry's type to a TLS relocation the loader
  // does not implement.
  auto Obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(Bytes.data(), Bytes.size()), "img"));
  ASSERT_TRUE(bool(Obj));
  uint64_t RelaOffset = 0;
  for (const auto &Sec : (*Obj)->sections()) {
    auto Name = Sec.getName();
    if (Name && *Name == ".rela.dyn")
      RelaOffset = llvm::cast<llvm::object::ELFSectionRef>(Sec).getOffset();
  }
  ASSERT_NE(RelaOffset, 0u);
  Elf64_Rela R;
  std::memcpy(&R, Bytes.data() + RelaOffset, sizeof R);
  R.r_info = ELF64_R_INFO(ELF64_R_SYM(R.r_info), R_X86_64_TPOFF32);
  std::memcpy(Bytes.data() + RelaOffset, &R, sizeof R);
  auto Img = ElfImageLoader::load(Bytes, "patched", Env);
  ASSERT_FALSE(bool(Img));
  std::string Msg = llvm::toString(Img.takeError());
  EXPECT_NE(Msg.find("R_X86_64_TPOFF32"), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("patched"), std::string::npos) << Msg;
}

TEST_F(LoaderTest, RejectsNonElf) {
  std::vector<char> Junk(256, 'x');
  auto Img = ElfImageLoader::load(Junk, "junk", Env);
  ASSERT_FALSE(bool(Img));
  EXPECT_NE(llvm::toString(Img.takeError()).find("image junk"), std::string::npos);
}

TEST_F(LoaderTest, FiniRunsOnce) {
  auto Bytes = readImage("loader_probe");
  auto Img = ElfImageLoader::load(Bytes, "loader_probe", Env);
  ASSERT_TRUE(bool(Img)) << llvm::toString(Img.takeError());
  (*Img)->runFini();
  (*Img)->runFini();
  Img->reset();
  EXPECT_EQ(Alloc.bytesInUse(), 0u);
}

TEST_F(LoaderTest, IrelativeResolverRunsOnceCodeIsExecutable) {
  auto Bytes = readImage("ifunc_probe");
  auto Img = ElfImageLoader::load(Bytes, "ifunc_probe", Env);
  ASSERT_TRUE(bool(Img)) << llvm::toString(Img.takeError());
  auto Fp = at<int (*)(int)>(**Img, "probe_scale_fp");
  uint64_t F = reinterpret_cast<uint64_t>(Fp);
  EXPECT_GE(F, (*Img)->base());
  EXPECT_LT(F, (*Img)->base() + (*Img)->size());
  EXPECT_EQ(Fp(21), 42);
}
