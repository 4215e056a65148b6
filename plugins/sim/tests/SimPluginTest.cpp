// The sim plugin through its C ABI, on real clang-22 device images.
#include "ompsim/plugin_api.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

namespace {

// Set before the plugin first reads its configuration.
const bool kEnvironmentSet = [] {
  ::setenv("OMPSIM_KERNEL_TIMEOUT", "3", 1);
  ::setenv("OMPSIM_NUM_DEVICES", "2", 1);
  // The JIT tests generate code every time and never write to the user's
  // cache (on by default, in ~/.cache).
  ::setenv("OMPSIM_JIT_CACHE", "off", 1);
  return true;
}();

/// The plugin entry points the tests call, declared and looked up from one list.
#define OMPSIM_PLUGIN_FUNCTIONS(X)                                                                           \
  X(__tgt_rtl_plugin_api_version)                                                                            \
  X(__tgt_rtl_is_valid_binary)                                                                               \
  X(__tgt_rtl_number_of_devices)                                                                             \
  X(__tgt_rtl_init_device)                                                                                   \
  X(__tgt_rtl_deinit_device)                                                                                 \
  X(__tgt_rtl_load_binary)                                                                                   \
  X(__tgt_rtl_get_global)                                                                                    \
  X(__tgt_rtl_get_globals)                                                                                   \
  X(__tgt_rtl_get_function)                                                                                  \
  X(__tgt_rtl_data_alloc)                                                                                    \
  X(__tgt_rtl_data_delete)                                                                                   \
  X(__tgt_rtl_data_submit)                                                                                   \
  X(__tgt_rtl_data_retrieve)                                                                                 \
  X(__tgt_rtl_data_exchange)                                                                                 \
  X(__tgt_rtl_run_target_region)                                                                             \
  X(__tgt_rtl_last_error)                                                                                    \
  X(__tgt_rtl_set_function_ptr_map)                                                                          \
  X(__tgt_rtl_symbolize)

/// The plugin's entry points.
struct Plugin {
  void *handle = nullptr;
#define OMPSIM_FN(name) decltype(&::name) name = nullptr;
  OMPSIM_PLUGIN_FUNCTIONS(OMPSIM_FN)
#undef OMPSIM_FN

  static Plugin &get() {
    static Plugin P = [] {
      Plugin p;
      p.handle = ::dlopen(OMPSIM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
      EXPECT_NE(p.handle, nullptr) << ::dlerror();
#define OMPSIM_FN(name) p.name = reinterpret_cast<decltype(&::name)>(::dlsym(p.handle, #name));
      OMPSIM_PLUGIN_FUNCTIONS(OMPSIM_FN)
#undef OMPSIM_FN
      return p;
    }();
    return P;
  }
};

struct Image {
  std::vector<char> Bytes;
  __tgt_device_image Desc{};
  std::string Kernel;
};

Image readImage(const std::string &Probe) {
  Image Img;
  std::ifstream In(std::string(OMPSIM_PROBE_DIR) + "/" + Probe + ".x86_64..img", std::ios::binary);
  Img.Bytes.assign(std::istreambuf_iterator<char>(In), std::istreambuf_iterator<char>());
  Img.Desc.ImageStart = Img.Bytes.data();
  Img.Desc.ImageEnd = Img.Bytes.data() + Img.Bytes.size();
  auto Obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(Img.Bytes.data(), Img.Bytes.size()), "img"));
  if (Obj) {
    for (const auto &S :
         llvm::cast<llvm::object::ELFObjectFileBase>(Obj->get())->getDynamicSymbolIterators()) {
      auto Name = S.getName();
      if (Name && Name->starts_with("__omp_offloading_"))
        Img.Kernel = Name->str();
      else if (!Name)
        llvm::consumeError(Name.takeError());
    }
  } else {
    llvm::consumeError(Obj.takeError());
    // Bitcode: the kernel is the loader probe's, named like the ELF one's.
    if (Probe.find("_jit") != std::string::npos)
      Img.Kernel = readImage(Probe.substr(0, Probe.find("_jit"))).Kernel;
  }
  return Img;
}

/// Pids of this process's ompsim-device children.
std::vector<pid_t> executorChildren() {
  std::vector<pid_t> Out;
  DIR *D = ::opendir("/proc");
  while (dirent *E = D ? ::readdir(D) : nullptr) {
    pid_t Pid = std::atoi(E->d_name);
    if (Pid <= 0)
      continue;
    std::ifstream Stat("/proc/" + std::string(E->d_name) + "/stat");
    std::string Line;
    std::getline(Stat, Line);
    auto Close = Line.rfind(')');
    if (Close == std::string::npos || Line.find("(ompsim-device)") == std::string::npos)
      continue;
    char State;
    int Ppid = 0;
    if (std::sscanf(Line.c_str() + Close + 1, " %c %d", &State, &Ppid) == 2 && Ppid == ::getpid())
      Out.push_back(Pid);
  }
  if (D)
    ::closedir(D);
  return Out;
}

class SimPluginTest : public ::testing::Test {
protected:
  Plugin &P = Plugin::get();
  void TearDown() override {
    P.__tgt_rtl_deinit_device(0);
    P.__tgt_rtl_deinit_device(1);
    EXPECT_TRUE(executorChildren().empty()) << "an executor outlived deinit_device";
  }
  ompsim_binary_handle load(int Dev, Image &Img) {
    ompsim_binary_handle B = nullptr;
    EXPECT_EQ(P.__tgt_rtl_init_device(Dev), OMPSIM_OFFLOAD_SUCCESS) << P.__tgt_rtl_last_error(Dev);
    EXPECT_EQ(P.__tgt_rtl_load_binary(Dev, &Img.Desc, &B), OMPSIM_OFFLOAD_SUCCESS)
        << P.__tgt_rtl_last_error(Dev);
    return B;
  }
};

} // namespace

/// A host function that device code must never call untranslated.
extern "C" __attribute__((noinline, used)) int ompsimTestHostPlain(int X) { return X + 100; }

TEST_F(SimPluginTest, AcceptsX86ElfAndDeclinesOthers) {
  EXPECT_EQ(P.__tgt_rtl_plugin_api_version(), OMPSIM_PLUGIN_API_VERSION);
  Image Img = readImage("loader_probe");
  EXPECT_EQ(P.__tgt_rtl_is_valid_binary(&Img.Desc), 1);
  std::vector<char> Junk(128, 'z');
  __tgt_device_image J{Junk.data(), Junk.data() + Junk.size(), nullptr, nullptr};
  EXPECT_EQ(P.__tgt_rtl_is_valid_binary(&J), 0);
  Img.Bytes[18] = 40; // e_machine = EM_ARM
  EXPECT_EQ(P.__tgt_rtl_is_valid_binary(&Img.Desc), 0);
  EXPECT_EQ(P.__tgt_rtl_number_of_devices(), 2);
}

TEST_F(SimPluginTest, GlobalsDataAndKernelEndToEnd) {
  Image Img = readImage("loader_probe");
  ompsim_binary_handle B = load(0, Img);
  ASSERT_NE(B, nullptr);
  void *G = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_global(0, B, 4, "probe_global", &G), OMPSIM_OFFLOAD_SUCCESS);
  int Value = 0;
  ASSERT_EQ(P.__tgt_rtl_data_retrieve(0, &Value, G, 4), OMPSIM_OFFLOAD_SUCCESS) << P.__tgt_rtl_last_error(0);
  EXPECT_EQ(Value, 42);
  int Seven = 7;
  ASSERT_EQ(P.__tgt_rtl_data_submit(0, G, &Seven, 4), OMPSIM_OFFLOAD_SUCCESS);

  void *Kernel = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_function(0, B, Img.Kernel.c_str(), &Kernel), OMPSIM_OFFLOAD_SUCCESS)
      << P.__tgt_rtl_last_error(0);
  void *Out = P.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_DEFAULT);
  void *Text = P.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_DEFAULT);
  ASSERT_NE(Out, nullptr);
  ASSERT_NE(Text, nullptr);
  void *Args[] = {Out, Text};
  ompsim_launch_config Cfg{1, 1, 0, Img.Kernel.c_str(), {0, 0}, {0, 0}, 0};
  ASSERT_EQ(P.__tgt_rtl_run_target_region(0, Kernel, Args, 2, &Cfg), OMPSIM_OFFLOAD_SUCCESS)
      << P.__tgt_rtl_last_error(0);
  int Host[4] = {};
  char HostText[16] = {};
  ASSERT_EQ(P.__tgt_rtl_data_retrieve(0, Host, Out, 16), OMPSIM_OFFLOAD_SUCCESS);
  ASSERT_EQ(P.__tgt_rtl_data_retrieve(0, HostText, Text, 16), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(Host[0], 7) << "the kernel must see the submitted global";
  EXPECT_EQ(Host[1], 6);
  EXPECT_EQ(Host[2], 12);
  EXPECT_STREQ(HostText, "n=2");
  EXPECT_EQ(P.__tgt_rtl_data_delete(0, Out, OMPSIM_ALLOC_DEFAULT), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_NE(P.__tgt_rtl_data_delete(0, Out, OMPSIM_ALLOC_DEFAULT), OMPSIM_OFFLOAD_SUCCESS)
      << "a double free must be reported";
  char Name[128];
  ASSERT_EQ(P.__tgt_rtl_symbolize(0, reinterpret_cast<uint64_t>(G), Name, sizeof Name), 1);
  EXPECT_STREQ(Name, "dev:probe_global+0x0");
}

TEST_F(SimPluginTest, MissingGlobalIsNamed) {
  Image Img = readImage("loader_probe");
  ompsim_binary_handle B = load(0, Img);
  void *G = nullptr;
  EXPECT_NE(P.__tgt_rtl_get_global(0, B, 8, "no_such_global", &G), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_NE(std::string(P.__tgt_rtl_last_error(0)).find("no_such_global"), std::string::npos)
      << P.__tgt_rtl_last_error(0);
}

TEST_F(SimPluginTest, DeviceAddressesAreDeterministicAndPerDevice) {
  Image Img = readImage("loader_probe");
  std::vector<uintptr_t> Seen;
  for (int Run = 0; Run < 2; ++Run) {
    ompsim_binary_handle B = load(0, Img);
    void *G = nullptr, *K = nullptr;
    ASSERT_EQ(P.__tgt_rtl_get_global(0, B, 4, "probe_global", &G), OMPSIM_OFFLOAD_SUCCESS);
    Seen.push_back(reinterpret_cast<uintptr_t>(G));
    Seen.push_back(reinterpret_cast<uintptr_t>(P.__tgt_rtl_data_alloc(0, 100, nullptr, 0)));
    (void)K;
    P.__tgt_rtl_deinit_device(0);
  }
  EXPECT_EQ(Seen[0], Seen[2]);
  EXPECT_EQ(Seen[1], Seen[3]);
  ompsim_binary_handle B1 = load(1, Img);
  void *G1 = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_global(1, B1, 4, "probe_global", &G1), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(G1) - Seen[0], uintptr_t(1) << 40)
      << "device 1's arena sits one stride above device 0's";
}

TEST_F(SimPluginTest, TransfersRoundTripAcrossDevicesAndStayInsideTheArena) {
  Image Img = readImage("loader_probe");
  load(0, Img);
  load(1, Img);
  // Larger than a page and not a multiple of one, so partial pages are covered.
  const size_t Size = (3u << 20) + 123;
  std::vector<unsigned char> Pattern(Size), Back(Size, 0);
  for (size_t I = 0; I < Size; ++I)
    Pattern[I] = static_cast<unsigned char>(I * 131 + 7);
  void *D0 = P.__tgt_rtl_data_alloc(0, int64_t(Size), nullptr, OMPSIM_ALLOC_DEFAULT);
  void *D1 = P.__tgt_rtl_data_alloc(1, int64_t(Size), nullptr, OMPSIM_ALLOC_DEFAULT);
  ASSERT_NE(D0, nullptr);
  ASSERT_NE(D1, nullptr);
  ASSERT_EQ(P.__tgt_rtl_data_submit(0, D0, Pattern.data(), int64_t(Size)), OMPSIM_OFFLOAD_SUCCESS)
      << P.__tgt_rtl_last_error(0);
  ASSERT_EQ(P.__tgt_rtl_data_exchange(0, D0, 1, D1, int64_t(Size)), OMPSIM_OFFLOAD_SUCCESS)
      << P.__tgt_rtl_last_error(1);
  ASSERT_EQ(P.__tgt_rtl_data_retrieve(1, Back.data(), D1, int64_t(Size)), OMPSIM_OFFLOAD_SUCCESS)
      << P.__tgt_rtl_last_error(1);
  EXPECT_TRUE(Back == Pattern) << "bytes changed on the way host -> device 0 -> device 1 -> host";

  // Outside the arena, or running off its end: one line naming the range, nothing copied.
  int Word = 5;
  void *Far = reinterpret_cast<void *>(uintptr_t(0x1000));
  EXPECT_NE(P.__tgt_rtl_data_submit(0, Far, &Word, 4), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_NE(
      std::string(P.__tgt_rtl_last_error(0)).find("write of 4 bytes at 0x1000 is outside device memory"),
      std::string::npos)
      << P.__tgt_rtl_last_error(0);
  EXPECT_NE(P.__tgt_rtl_data_retrieve(0, Back.data(), D0, int64_t(1) << 40), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_NE(std::string(P.__tgt_rtl_last_error(0)).find("is outside device memory"), std::string::npos)
      << P.__tgt_rtl_last_error(0);
  EXPECT_NE(P.__tgt_rtl_data_exchange(0, Far, 1, D1, 4), OMPSIM_OFFLOAD_SUCCESS);
  ASSERT_EQ(P.__tgt_rtl_data_retrieve(1, Back.data(), D1, 4), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(std::memcmp(Back.data(), Pattern.data(), 4), 0) << "a refused exchange must not write";
}

/// True when this process has a mapping at `Addr`.
bool mappedInHost(const void *Addr) {
  uintptr_t Page = uintptr_t(::sysconf(_SC_PAGESIZE));
  return ::msync(reinterpret_cast<void *>(reinterpret_cast<uintptr_t>(Addr) & ~(Page - 1)), 1, MS_ASYNC) == 0;
}

TEST_F(SimPluginTest, HostAndSharedMemoryIsOneAddressOnBothSides) {
  Image Img = readImage("loader_probe");
  std::vector<uintptr_t> Seen;
  for (int Run = 0; Run < 2; ++Run) {
    ompsim_binary_handle B = load(0, Img);
    ASSERT_NE(B, nullptr);
    int *Shared = static_cast<int *>(P.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_SHARED));
    char *Pinned = static_cast<char *>(P.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_HOST));
    void *Plain = P.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_DEFAULT);
    ASSERT_NE(Shared, nullptr) << P.__tgt_rtl_last_error(0);
    ASSERT_NE(Pinned, nullptr) << P.__tgt_rtl_last_error(0);
    ASSERT_NE(Plain, nullptr) << P.__tgt_rtl_last_error(0);
    Seen.insert(Seen.end(), {reinterpret_cast<uintptr_t>(Shared), reinterpret_cast<uintptr_t>(Pinned),
                             reinterpret_cast<uintptr_t>(Plain)});
    EXPECT_TRUE(mappedInHost(Shared));
    EXPECT_TRUE(mappedInHost(Pinned));
    EXPECT_FALSE(mappedInHost(Plain)) << "other device memory stays out of the host's address space";

    // The device writes through the pointer the host reads, and the other way round.
    void *Kernel = nullptr;
    ASSERT_EQ(P.__tgt_rtl_get_function(0, B, Img.Kernel.c_str(), &Kernel), OMPSIM_OFFLOAD_SUCCESS);
    void *G = nullptr;
    ASSERT_EQ(P.__tgt_rtl_get_global(0, B, 4, "probe_global", &G), OMPSIM_OFFLOAD_SUCCESS);
    int Seven = 7;
    ASSERT_EQ(P.__tgt_rtl_data_submit(0, G, &Seven, 4), OMPSIM_OFFLOAD_SUCCESS);
    void *Args[] = {Shared, Pinned};
    ompsim_launch_config Cfg{1, 1, 0, Img.Kernel.c_str(), {0, 0}, {0, 0}, 0};
    ASSERT_EQ(P.__tgt_rtl_run_target_region(0, Kernel, Args, 2, &Cfg), OMPSIM_OFFLOAD_SUCCESS)
        << P.__tgt_rtl_last_error(0);
    EXPECT_EQ(Shared[0], 7);
    EXPECT_EQ(Shared[1], 6);
    EXPECT_EQ(Shared[2], 12);
    EXPECT_STREQ(Pinned, "n=2");
    Shared[3] = 99;
    int Back = 0;
    ASSERT_EQ(P.__tgt_rtl_data_retrieve(0, &Back, Shared + 3, 4), OMPSIM_OFFLOAD_SUCCESS);
    EXPECT_EQ(Back, 99);

    EXPECT_EQ(P.__tgt_rtl_data_delete(0, Shared, OMPSIM_ALLOC_SHARED), OMPSIM_OFFLOAD_SUCCESS);
    EXPECT_FALSE(mappedInHost(Shared)) << "a freed block leaves the host's address space";
    P.__tgt_rtl_deinit_device(0);
    EXPECT_FALSE(mappedInHost(Pinned)) << "a device's blocks leave the host with the device";
  }
  EXPECT_EQ(Seen[0], Seen[3]) << "host-visible addresses are deterministic";
  EXPECT_EQ(Seen[1], Seen[4]);
  EXPECT_EQ(Seen[2], Seen[5]);
  EXPECT_EQ(Seen[0] % uintptr_t(::sysconf(_SC_PAGESIZE)), 0u);
  EXPECT_GE(Seen[1] - Seen[0], uintptr_t(::sysconf(_SC_PAGESIZE))) << "blocks never share a page";
}

TEST_F(SimPluginTest, HostVisibleMemoryOverAHostMappingIsRefusedWithOneLine) {
  Image Img = readImage("loader_probe");
  load(0, Img);
  // Learn where the next block goes, then occupy that address in the host.
  void *Probe = P.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_SHARED);
  ASSERT_NE(Probe, nullptr) << P.__tgt_rtl_last_error(0);
  ASSERT_EQ(P.__tgt_rtl_data_delete(0, Probe, OMPSIM_ALLOC_SHARED), OMPSIM_OFFLOAD_SUCCESS);
  size_t Page = size_t(::sysconf(_SC_PAGESIZE));
  void *Squatter = ::mmap(Probe, Page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
  ASSERT_EQ(Squatter, Probe);
  EXPECT_EQ(P.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_SHARED), nullptr);
  std::string Why = P.__tgt_rtl_last_error(0);
  EXPECT_NE(Why.find("cannot map 4096 bytes of host-visible memory at device address"), std::string::npos)
      << Why;
  EXPECT_NE(Why.find("OMPSIM_DEVICE_BASE"), std::string::npos) << Why;
  ::munmap(Squatter, Page);
  EXPECT_EQ(P.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_SHARED), Probe)
      << "a refused block goes back to the heap";
}

TEST_F(SimPluginTest, ExhaustedArenaGivesNull) {
  Image Img = readImage("loader_probe");
  load(0, Img);
  EXPECT_EQ(P.__tgt_rtl_data_alloc(0, int64_t(1) << 40, nullptr, 0), nullptr);
  EXPECT_NE(P.__tgt_rtl_data_alloc(0, 64, nullptr, 0), nullptr)
      << "a failed allocation leaves the device usable";
}

TEST_F(SimPluginTest, UntranslatedHostFunctionPointerIsNamed) {
  Image Img = readImage("fault_probe");
  ompsim_binary_handle B = load(0, Img);
  void *Kernel = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_function(0, B, Img.Kernel.c_str(), &Kernel), OMPSIM_OFFLOAD_SUCCESS);
  void *R = P.__tgt_rtl_data_alloc(0, 4, nullptr, 0);
  void *Args[] = {R, reinterpret_cast<void *>(&ompsimTestHostPlain)};
  ompsim_launch_config Cfg{0, 0, 0, Img.Kernel.c_str(), {0, 0}, {0, 0}, 0};
  ASSERT_NE(P.__tgt_rtl_run_target_region(0, Kernel, Args, 2, &Cfg), OMPSIM_OFFLOAD_SUCCESS);
  std::string Msg = P.__tgt_rtl_last_error(0);
  EXPECT_NE(Msg.find("device 0: kernel " + Img.Kernel + " called untranslated host function pointer 0x"),
            std::string::npos)
      << Msg;
  EXPECT_NE(Msg.find("host symbol 'ompsimTestHostPlain'"), std::string::npos) << Msg;
  // No function-pointer table was published, so the function is not indirect: the note says what to add.
  EXPECT_NE(Msg.find("; note: 'ompsimTestHostPlain' (defined at "), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("add '#pragma omp declare target to(ompsimTestHostPlain) indirect'"), std::string::npos)
      << Msg;
  // The device is gone; later calls say why (the same line, note included) instead of hanging.
  int V;
  EXPECT_NE(P.__tgt_rtl_data_retrieve(0, &V, R, 4), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(std::string(P.__tgt_rtl_last_error(0)), Msg);
}

TEST_F(SimPluginTest, NullFunctionPointerNamesAddressKindAndKernel) {
  Image Img = readImage("fault_probe");
  ompsim_binary_handle B = load(0, Img);
  void *Kernel = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_function(0, B, Img.Kernel.c_str(), &Kernel), OMPSIM_OFFLOAD_SUCCESS);
  void *R = P.__tgt_rtl_data_alloc(0, 4, nullptr, 0);
  void *Args[] = {R, nullptr};
  ompsim_launch_config Cfg{0, 0, 0, Img.Kernel.c_str(), {0, 0}, {0, 0}, 0};
  ASSERT_NE(P.__tgt_rtl_run_target_region(0, Kernel, Args, 2, &Cfg), OMPSIM_OFFLOAD_SUCCESS);
  std::string Msg = P.__tgt_rtl_last_error(0);
  EXPECT_NE(Msg.find("kernel " + Img.Kernel), std::string::npos) << Msg;
  EXPECT_NE(Msg.find("called a null function pointer (0x0)"), std::string::npos) << Msg;
}

TEST_F(SimPluginTest, KernelTimeoutIsReported) {
  Image Img = readImage("spin_probe");
  ompsim_binary_handle B = load(0, Img);
  void *Kernel = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_function(0, B, Img.Kernel.c_str(), &Kernel), OMPSIM_OFFLOAD_SUCCESS);
  void *Flag = P.__tgt_rtl_data_alloc(0, 4, nullptr, 0);
  int Zero = 0;
  ASSERT_EQ(P.__tgt_rtl_data_submit(0, Flag, &Zero, 4), OMPSIM_OFFLOAD_SUCCESS);
  void *Args[] = {Flag};
  ompsim_launch_config Cfg{0, 0, 0, Img.Kernel.c_str(), {0, 0}, {0, 0}, 0};
  ASSERT_NE(P.__tgt_rtl_run_target_region(0, Kernel, Args, 1, &Cfg), OMPSIM_OFFLOAD_SUCCESS);
  std::string Msg = P.__tgt_rtl_last_error(0);
  EXPECT_EQ(Msg, "device 0: kernel " + Img.Kernel + " timed out after 3s (OMPSIM_KERNEL_TIMEOUT)");
  EXPECT_TRUE(executorChildren().empty()) << "the timed-out executor must be reaped";
}

TEST_F(SimPluginTest, ExecutorKilledFromOutsideIsReported) {
  Image Img = readImage("spin_probe");
  ompsim_binary_handle B = load(0, Img);
  void *Kernel = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_function(0, B, Img.Kernel.c_str(), &Kernel), OMPSIM_OFFLOAD_SUCCESS);
  void *Flag = P.__tgt_rtl_data_alloc(0, 4, nullptr, 0);
  int Zero = 0;
  ASSERT_EQ(P.__tgt_rtl_data_submit(0, Flag, &Zero, 4), OMPSIM_OFFLOAD_SUCCESS);
  auto Children = executorChildren();
  ASSERT_EQ(Children.size(), 1u);
  std::thread Killer([Pid = Children[0]] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(Pid, SIGKILL);
  });
  void *Args[] = {Flag};
  ompsim_launch_config Cfg{0, 0, 0, Img.Kernel.c_str(), {0, 0}, {0, 0}, 0};
  int32_t Rc = P.__tgt_rtl_run_target_region(0, Kernel, Args, 1, &Cfg);
  Killer.join();
  ASSERT_NE(Rc, OMPSIM_OFFLOAD_SUCCESS);
  std::string Msg = P.__tgt_rtl_last_error(0);
  EXPECT_NE(Msg.find("device 0: executor (pid " + std::to_string(Children[0]) +
                     ") was killed by signal 9 (SIGKILL) during kernel " + Img.Kernel),
            std::string::npos)
      << Msg;
}

TEST_F(SimPluginTest, BitcodeImageRunsWithCtorsGlobalsAndImports) {
  Image Img = readImage("loader_probe_jit");
  ASSERT_GE(Img.Bytes.size(), 4u);
  ASSERT_EQ(std::string(Img.Bytes.data(), 2), "BC");
  EXPECT_EQ(P.__tgt_rtl_is_valid_binary(&Img.Desc), 1);
  ompsim_binary_handle B = load(0, Img);
  ASSERT_NE(B, nullptr);
  void *G = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_global(0, B, 4, "probe_global", &G), OMPSIM_OFFLOAD_SUCCESS)
      << P.__tgt_rtl_last_error(0);
  EXPECT_GE(reinterpret_cast<uintptr_t>(G), uintptr_t(0x200000000000)) << "JIT memory comes from the arena";
  int Value = 0;
  ASSERT_EQ(P.__tgt_rtl_data_retrieve(0, &Value, G, 4), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(Value, 42);
  void *Kernel = nullptr;
  ASSERT_EQ(P.__tgt_rtl_get_function(0, B, Img.Kernel.c_str(), &Kernel), OMPSIM_OFFLOAD_SUCCESS)
      << P.__tgt_rtl_last_error(0);
  void *Out = P.__tgt_rtl_data_alloc(0, 16, nullptr, 0);
  void *Text = P.__tgt_rtl_data_alloc(0, 16, nullptr, 0);
  void *Args[] = {Out, Text};
  ompsim_launch_config Cfg{1, 1, 0, Img.Kernel.c_str(), {0, 0}, {0, 0}, 0};
  ASSERT_EQ(P.__tgt_rtl_run_target_region(0, Kernel, Args, 2, &Cfg), OMPSIM_OFFLOAD_SUCCESS)
      << P.__tgt_rtl_last_error(0);
  int Host[4] = {};
  char HostText[16] = {};
  ASSERT_EQ(P.__tgt_rtl_data_retrieve(0, Host, Out, 16), OMPSIM_OFFLOAD_SUCCESS);
  ASSERT_EQ(P.__tgt_rtl_data_retrieve(0, HostText, Text, 16), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(Host[0], 42);
  EXPECT_EQ(Host[1], 6);
  EXPECT_EQ(Host[2], 12) << "static constructors run once, in priority order";
  EXPECT_STREQ(HostText, "n=2");
}

/// The batched lookup answers exactly what one lookup per name answers, and
/// an absent name is a null address, not a failure of the whole request.
TEST_F(SimPluginTest, GetGlobalsAgreesWithGetGlobalOnElfAndBitcode) {
  ASSERT_NE(P.__tgt_rtl_get_globals, nullptr);
  for (const char *Probe : {"loader_probe", "loader_probe_jit"}) {
    SCOPED_TRACE(Probe);
    Image Img = readImage(Probe);
    ompsim_binary_handle B = load(0, Img);
    ASSERT_NE(B, nullptr);
    ASSERT_FALSE(Img.Kernel.empty());
    std::vector<const char *> Names = {"probe_global", "no_such_global", Img.Kernel.c_str(), "probe_global"};
    std::vector<uint64_t> Sizes = {4, 8, 0, 4};
    std::vector<void *> Batched(Names.size(), reinterpret_cast<void *>(1));
    ASSERT_EQ(P.__tgt_rtl_get_globals(0, B, Names.size(), Names.data(), Sizes.data(), Batched.data()),
              OMPSIM_OFFLOAD_SUCCESS)
        << P.__tgt_rtl_last_error(0);
    for (size_t I = 0; I < Names.size(); ++I) {
      void *One = nullptr;
      if (P.__tgt_rtl_get_global(0, B, Sizes[I], Names[I], &One) == OMPSIM_OFFLOAD_SUCCESS) {
        EXPECT_NE(One, nullptr) << Names[I];
        EXPECT_EQ(Batched[I], One) << Names[I];
      } else {
        EXPECT_EQ(Batched[I], nullptr) << Names[I] << " is absent";
      }
    }
    EXPECT_EQ(Batched[1], nullptr);
    EXPECT_NE(Batched[0], nullptr);
    EXPECT_EQ(P.__tgt_rtl_get_globals(0, B, 0, nullptr, nullptr, nullptr), OMPSIM_OFFLOAD_SUCCESS)
        << "an empty request is answered";
    P.__tgt_rtl_deinit_device(0);
  }
}
