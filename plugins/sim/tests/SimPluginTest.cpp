// The sim plugin through its C ABI, on real clang-22 device images.
#include "ompsim/plugin_api.h"

#include "llvm/Object/ELFObjectFile.h"
#include "llvm/Support/MemoryBuffer.h"

#include <dirent.h>
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
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
    static Plugin p = [] {
      Plugin p;
      p.handle = ::dlopen(OMPSIM_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
      EXPECT_NE(p.handle, nullptr) << ::dlerror();
#define OMPSIM_FN(name) p.name = reinterpret_cast<decltype(&::name)>(::dlsym(p.handle, #name));
      OMPSIM_PLUGIN_FUNCTIONS(OMPSIM_FN)
#undef OMPSIM_FN
      return p;
    }();
    return p;
  }
};

struct Image {
  std::vector<char> bytes;
  __tgt_device_image desc{};
  std::string kernel;
};

Image readImage(const std::string &probe) {
  Image img;
  std::ifstream in(std::string(OMPSIM_PROBE_DIR) + "/" + probe + ".x86_64..img", std::ios::binary);
  img.bytes.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  img.desc.ImageStart = img.bytes.data();
  img.desc.ImageEnd = img.bytes.data() + img.bytes.size();
  auto obj = llvm::object::ObjectFile::createObjectFile(
      llvm::MemoryBufferRef(llvm::StringRef(img.bytes.data(), img.bytes.size()), "img"));
  if (obj) {
    for (const auto &s :
         llvm::cast<llvm::object::ELFObjectFileBase>(obj->get())->getDynamicSymbolIterators()) {
      auto name = s.getName();
      if (name && name->starts_with("__omp_offloading_"))
        img.kernel = name->str();
      else if (!name)
        llvm::consumeError(name.takeError());
    }
  } else {
    llvm::consumeError(obj.takeError());
    // Bitcode: the kernel is the loader probe's, named like the ELF one's.
    if (probe.find("_jit") != std::string::npos)
      img.kernel = readImage(probe.substr(0, probe.find("_jit"))).kernel;
  }
  return img;
}

/// Pids of this process's ompsim-device children.
std::vector<pid_t> executorChildren() {
  std::vector<pid_t> out;
  DIR *d = ::opendir("/proc");
  while (dirent *e = d ? ::readdir(d) : nullptr) {
    pid_t pid = std::atoi(e->d_name);
    if (pid <= 0)
      continue;
    std::ifstream stat("/proc/" + std::string(e->d_name) + "/stat");
    std::string line;
    std::getline(stat, line);
    auto close = line.rfind(')');
    if (close == std::string::npos || line.find("(ompsim-device)") == std::string::npos)
      continue;
    char state;
    int ppid = 0;
    if (std::sscanf(line.c_str() + close + 1, " %c %d", &state, &ppid) == 2 && ppid == ::getpid())
      out.push_back(pid);
  }
  if (d)
    ::closedir(d);
  return out;
}

class SimPluginTest : public ::testing::Test {
protected:
  Plugin &p = Plugin::get();
  void TearDown() override {
    p.__tgt_rtl_deinit_device(0);
    p.__tgt_rtl_deinit_device(1);
    EXPECT_TRUE(executorChildren().empty()) << "an executor outlived deinit_device";
  }
  ompsim_binary_handle load(int dev, Image &img) {
    ompsim_binary_handle b = nullptr;
    EXPECT_EQ(p.__tgt_rtl_init_device(dev), OMPSIM_OFFLOAD_SUCCESS) << p.__tgt_rtl_last_error(dev);
    EXPECT_EQ(p.__tgt_rtl_load_binary(dev, &img.desc, &b), OMPSIM_OFFLOAD_SUCCESS)
        << p.__tgt_rtl_last_error(dev);
    return b;
  }
};

} // namespace

/// A host function that device code must never call untranslated.
extern "C" __attribute__((noinline, used)) int ompsimTestHostPlain(int x) { return x + 100; }

TEST_F(SimPluginTest, AcceptsX86ElfAndDeclinesOthers) {
  EXPECT_EQ(p.__tgt_rtl_plugin_api_version(), OMPSIM_PLUGIN_API_VERSION);
  Image img = readImage("loader_probe");
  EXPECT_EQ(p.__tgt_rtl_is_valid_binary(&img.desc), 1);
  std::vector<char> junk(128, 'z');
  __tgt_device_image j{junk.data(), junk.data() + junk.size(), nullptr, nullptr};
  EXPECT_EQ(p.__tgt_rtl_is_valid_binary(&j), 0);
  img.bytes[18] = 40; // e_machine = EM_ARM
  EXPECT_EQ(p.__tgt_rtl_is_valid_binary(&img.desc), 0);
  EXPECT_EQ(p.__tgt_rtl_number_of_devices(), 2);
}

TEST_F(SimPluginTest, GlobalsDataAndKernelEndToEnd) {
  Image img = readImage("loader_probe");
  ompsim_binary_handle b = load(0, img);
  ASSERT_NE(b, nullptr);
  void *g = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_global(0, b, 4, "probe_global", &g), OMPSIM_OFFLOAD_SUCCESS);
  int value = 0;
  ASSERT_EQ(p.__tgt_rtl_data_retrieve(0, &value, g, 4), OMPSIM_OFFLOAD_SUCCESS) << p.__tgt_rtl_last_error(0);
  EXPECT_EQ(value, 42);
  int seven = 7;
  ASSERT_EQ(p.__tgt_rtl_data_submit(0, g, &seven, 4), OMPSIM_OFFLOAD_SUCCESS);

  void *kernel = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_function(0, b, img.kernel.c_str(), &kernel), OMPSIM_OFFLOAD_SUCCESS)
      << p.__tgt_rtl_last_error(0);
  void *out = p.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_DEFAULT);
  void *text = p.__tgt_rtl_data_alloc(0, 16, nullptr, OMPSIM_ALLOC_DEFAULT);
  ASSERT_NE(out, nullptr);
  ASSERT_NE(text, nullptr);
  void *args[] = {out, text};
  ompsim_launch_config cfg{1, 1, 0, img.kernel.c_str()};
  ASSERT_EQ(p.__tgt_rtl_run_target_region(0, kernel, args, 2, &cfg), OMPSIM_OFFLOAD_SUCCESS)
      << p.__tgt_rtl_last_error(0);
  int host[4] = {};
  char hostText[16] = {};
  ASSERT_EQ(p.__tgt_rtl_data_retrieve(0, host, out, 16), OMPSIM_OFFLOAD_SUCCESS);
  ASSERT_EQ(p.__tgt_rtl_data_retrieve(0, hostText, text, 16), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(host[0], 7) << "the kernel must see the submitted global";
  EXPECT_EQ(host[1], 6);
  EXPECT_EQ(host[2], 12);
  EXPECT_STREQ(hostText, "n=2");
  EXPECT_EQ(p.__tgt_rtl_data_delete(0, out, OMPSIM_ALLOC_DEFAULT), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_NE(p.__tgt_rtl_data_delete(0, out, OMPSIM_ALLOC_DEFAULT), OMPSIM_OFFLOAD_SUCCESS)
      << "a double free must be reported";
  char name[128];
  ASSERT_EQ(p.__tgt_rtl_symbolize(0, reinterpret_cast<uint64_t>(g), name, sizeof name), 1);
  EXPECT_STREQ(name, "dev:probe_global+0x0");
}

TEST_F(SimPluginTest, MissingGlobalIsNamed) {
  Image img = readImage("loader_probe");
  ompsim_binary_handle b = load(0, img);
  void *g = nullptr;
  EXPECT_NE(p.__tgt_rtl_get_global(0, b, 8, "no_such_global", &g), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_NE(std::string(p.__tgt_rtl_last_error(0)).find("no_such_global"), std::string::npos)
      << p.__tgt_rtl_last_error(0);
}

TEST_F(SimPluginTest, DeviceAddressesAreDeterministicAndPerDevice) {
  Image img = readImage("loader_probe");
  std::vector<uintptr_t> seen;
  for (int run = 0; run < 2; ++run) {
    ompsim_binary_handle b = load(0, img);
    void *g = nullptr, *k = nullptr;
    ASSERT_EQ(p.__tgt_rtl_get_global(0, b, 4, "probe_global", &g), OMPSIM_OFFLOAD_SUCCESS);
    seen.push_back(reinterpret_cast<uintptr_t>(g));
    seen.push_back(reinterpret_cast<uintptr_t>(p.__tgt_rtl_data_alloc(0, 100, nullptr, 0)));
    (void)k;
    p.__tgt_rtl_deinit_device(0);
  }
  EXPECT_EQ(seen[0], seen[2]);
  EXPECT_EQ(seen[1], seen[3]);
  ompsim_binary_handle b1 = load(1, img);
  void *g1 = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_global(1, b1, 4, "probe_global", &g1), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(g1) - seen[0], uintptr_t(1) << 40)
      << "device 1's arena sits one stride above device 0's";
}

TEST_F(SimPluginTest, TransfersRoundTripAcrossDevicesAndStayInsideTheArena) {
  Image img = readImage("loader_probe");
  load(0, img);
  load(1, img);
  // Larger than a page and not a multiple of one, so partial pages are covered.
  const size_t size = (3u << 20) + 123;
  std::vector<unsigned char> pattern(size), back(size, 0);
  for (size_t i = 0; i < size; ++i)
    pattern[i] = static_cast<unsigned char>(i * 131 + 7);
  void *d0 = p.__tgt_rtl_data_alloc(0, int64_t(size), nullptr, OMPSIM_ALLOC_DEFAULT);
  void *d1 = p.__tgt_rtl_data_alloc(1, int64_t(size), nullptr, OMPSIM_ALLOC_DEFAULT);
  ASSERT_NE(d0, nullptr);
  ASSERT_NE(d1, nullptr);
  ASSERT_EQ(p.__tgt_rtl_data_submit(0, d0, pattern.data(), int64_t(size)), OMPSIM_OFFLOAD_SUCCESS)
      << p.__tgt_rtl_last_error(0);
  ASSERT_EQ(p.__tgt_rtl_data_exchange(0, d0, 1, d1, int64_t(size)), OMPSIM_OFFLOAD_SUCCESS)
      << p.__tgt_rtl_last_error(1);
  ASSERT_EQ(p.__tgt_rtl_data_retrieve(1, back.data(), d1, int64_t(size)), OMPSIM_OFFLOAD_SUCCESS)
      << p.__tgt_rtl_last_error(1);
  EXPECT_TRUE(back == pattern) << "bytes changed on the way host -> device 0 -> device 1 -> host";

  // Outside the arena, or running off its end: one line naming the range, nothing copied.
  int word = 5;
  void *far = reinterpret_cast<void *>(uintptr_t(0x1000));
  EXPECT_NE(p.__tgt_rtl_data_submit(0, far, &word, 4), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_NE(
      std::string(p.__tgt_rtl_last_error(0)).find("write of 4 bytes at 0x1000 is outside device memory"),
      std::string::npos)
      << p.__tgt_rtl_last_error(0);
  EXPECT_NE(p.__tgt_rtl_data_retrieve(0, back.data(), d0, int64_t(1) << 40), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_NE(std::string(p.__tgt_rtl_last_error(0)).find("is outside device memory"), std::string::npos)
      << p.__tgt_rtl_last_error(0);
  EXPECT_NE(p.__tgt_rtl_data_exchange(0, far, 1, d1, 4), OMPSIM_OFFLOAD_SUCCESS);
  ASSERT_EQ(p.__tgt_rtl_data_retrieve(1, back.data(), d1, 4), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(std::memcmp(back.data(), pattern.data(), 4), 0) << "a refused exchange must not write";
}

TEST_F(SimPluginTest, ExhaustedArenaGivesNull) {
  Image img = readImage("loader_probe");
  load(0, img);
  EXPECT_EQ(p.__tgt_rtl_data_alloc(0, int64_t(1) << 40, nullptr, 0), nullptr);
  EXPECT_NE(p.__tgt_rtl_data_alloc(0, 64, nullptr, 0), nullptr)
      << "a failed allocation leaves the device usable";
}

TEST_F(SimPluginTest, UntranslatedHostFunctionPointerIsNamed) {
  Image img = readImage("fault_probe");
  ompsim_binary_handle b = load(0, img);
  void *kernel = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_function(0, b, img.kernel.c_str(), &kernel), OMPSIM_OFFLOAD_SUCCESS);
  void *r = p.__tgt_rtl_data_alloc(0, 4, nullptr, 0);
  void *args[] = {r, reinterpret_cast<void *>(&ompsimTestHostPlain)};
  ompsim_launch_config cfg{0, 0, 0, img.kernel.c_str()};
  ASSERT_NE(p.__tgt_rtl_run_target_region(0, kernel, args, 2, &cfg), OMPSIM_OFFLOAD_SUCCESS);
  std::string msg = p.__tgt_rtl_last_error(0);
  EXPECT_NE(msg.find("device 0: kernel " + img.kernel + " called untranslated host function pointer 0x"),
            std::string::npos)
      << msg;
  EXPECT_NE(msg.find("host symbol 'ompsimTestHostPlain'"), std::string::npos) << msg;
  // No function-pointer table was published, so the function is not indirect: the note says what to add.
  EXPECT_NE(msg.find("; note: 'ompsimTestHostPlain' (defined at "), std::string::npos) << msg;
  EXPECT_NE(msg.find("add '#pragma omp declare target to(ompsimTestHostPlain) indirect'"), std::string::npos)
      << msg;
  // The device is gone; later calls say why (the same line, note included) instead of hanging.
  int v;
  EXPECT_NE(p.__tgt_rtl_data_retrieve(0, &v, r, 4), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(std::string(p.__tgt_rtl_last_error(0)), msg);
}

TEST_F(SimPluginTest, NullFunctionPointerNamesAddressKindAndKernel) {
  Image img = readImage("fault_probe");
  ompsim_binary_handle b = load(0, img);
  void *kernel = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_function(0, b, img.kernel.c_str(), &kernel), OMPSIM_OFFLOAD_SUCCESS);
  void *r = p.__tgt_rtl_data_alloc(0, 4, nullptr, 0);
  void *args[] = {r, nullptr};
  ompsim_launch_config cfg{0, 0, 0, img.kernel.c_str()};
  ASSERT_NE(p.__tgt_rtl_run_target_region(0, kernel, args, 2, &cfg), OMPSIM_OFFLOAD_SUCCESS);
  std::string msg = p.__tgt_rtl_last_error(0);
  EXPECT_NE(msg.find("kernel " + img.kernel), std::string::npos) << msg;
  EXPECT_NE(msg.find("called a null function pointer (0x0)"), std::string::npos) << msg;
}

TEST_F(SimPluginTest, KernelTimeoutIsReported) {
  Image img = readImage("spin_probe");
  ompsim_binary_handle b = load(0, img);
  void *kernel = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_function(0, b, img.kernel.c_str(), &kernel), OMPSIM_OFFLOAD_SUCCESS);
  void *flag = p.__tgt_rtl_data_alloc(0, 4, nullptr, 0);
  int zero = 0;
  ASSERT_EQ(p.__tgt_rtl_data_submit(0, flag, &zero, 4), OMPSIM_OFFLOAD_SUCCESS);
  void *args[] = {flag};
  ompsim_launch_config cfg{0, 0, 0, img.kernel.c_str()};
  ASSERT_NE(p.__tgt_rtl_run_target_region(0, kernel, args, 1, &cfg), OMPSIM_OFFLOAD_SUCCESS);
  std::string msg = p.__tgt_rtl_last_error(0);
  EXPECT_EQ(msg, "device 0: kernel " + img.kernel + " timed out after 3s (OMPSIM_KERNEL_TIMEOUT)");
  EXPECT_TRUE(executorChildren().empty()) << "the timed-out executor must be reaped";
}

TEST_F(SimPluginTest, ExecutorKilledFromOutsideIsReported) {
  Image img = readImage("spin_probe");
  ompsim_binary_handle b = load(0, img);
  void *kernel = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_function(0, b, img.kernel.c_str(), &kernel), OMPSIM_OFFLOAD_SUCCESS);
  void *flag = p.__tgt_rtl_data_alloc(0, 4, nullptr, 0);
  int zero = 0;
  ASSERT_EQ(p.__tgt_rtl_data_submit(0, flag, &zero, 4), OMPSIM_OFFLOAD_SUCCESS);
  auto children = executorChildren();
  ASSERT_EQ(children.size(), 1u);
  std::thread killer([pid = children[0]] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    ::kill(pid, SIGKILL);
  });
  void *args[] = {flag};
  ompsim_launch_config cfg{0, 0, 0, img.kernel.c_str()};
  int32_t rc = p.__tgt_rtl_run_target_region(0, kernel, args, 1, &cfg);
  killer.join();
  ASSERT_NE(rc, OMPSIM_OFFLOAD_SUCCESS);
  std::string msg = p.__tgt_rtl_last_error(0);
  EXPECT_NE(msg.find("device 0: executor (pid " + std::to_string(children[0]) +
                     ") was killed by signal 9 (SIGKILL) during kernel " + img.kernel),
            std::string::npos)
      << msg;
}

TEST_F(SimPluginTest, BitcodeImageRunsWithCtorsGlobalsAndImports) {
  Image img = readImage("loader_probe_jit");
  ASSERT_GE(img.bytes.size(), 4u);
  ASSERT_EQ(std::string(img.bytes.data(), 2), "BC");
  EXPECT_EQ(p.__tgt_rtl_is_valid_binary(&img.desc), 1);
  ompsim_binary_handle b = load(0, img);
  ASSERT_NE(b, nullptr);
  void *g = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_global(0, b, 4, "probe_global", &g), OMPSIM_OFFLOAD_SUCCESS)
      << p.__tgt_rtl_last_error(0);
  EXPECT_GE(reinterpret_cast<uintptr_t>(g), uintptr_t(0x200000000000)) << "JIT memory comes from the arena";
  int value = 0;
  ASSERT_EQ(p.__tgt_rtl_data_retrieve(0, &value, g, 4), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(value, 42);
  void *kernel = nullptr;
  ASSERT_EQ(p.__tgt_rtl_get_function(0, b, img.kernel.c_str(), &kernel), OMPSIM_OFFLOAD_SUCCESS)
      << p.__tgt_rtl_last_error(0);
  void *out = p.__tgt_rtl_data_alloc(0, 16, nullptr, 0);
  void *text = p.__tgt_rtl_data_alloc(0, 16, nullptr, 0);
  void *args[] = {out, text};
  ompsim_launch_config cfg{1, 1, 0, img.kernel.c_str()};
  ASSERT_EQ(p.__tgt_rtl_run_target_region(0, kernel, args, 2, &cfg), OMPSIM_OFFLOAD_SUCCESS)
      << p.__tgt_rtl_last_error(0);
  int host[4] = {};
  char hostText[16] = {};
  ASSERT_EQ(p.__tgt_rtl_data_retrieve(0, host, out, 16), OMPSIM_OFFLOAD_SUCCESS);
  ASSERT_EQ(p.__tgt_rtl_data_retrieve(0, hostText, text, 16), OMPSIM_OFFLOAD_SUCCESS);
  EXPECT_EQ(host[0], 42);
  EXPECT_EQ(host[1], 6);
  EXPECT_EQ(host[2], 12) << "static constructors run once, in priority order";
  EXPECT_STREQ(hostText, "n=2");
}

/// The batched lookup answers exactly what one lookup per name answers, and
/// an absent name is a null address, not a failure of the whole request.
TEST_F(SimPluginTest, GetGlobalsAgreesWithGetGlobalOnElfAndBitcode) {
  ASSERT_NE(p.__tgt_rtl_get_globals, nullptr);
  for (const char *probe : {"loader_probe", "loader_probe_jit"}) {
    SCOPED_TRACE(probe);
    Image img = readImage(probe);
    ompsim_binary_handle b = load(0, img);
    ASSERT_NE(b, nullptr);
    ASSERT_FALSE(img.kernel.empty());
    std::vector<const char *> names = {"probe_global", "no_such_global", img.kernel.c_str(), "probe_global"};
    std::vector<uint64_t> sizes = {4, 8, 0, 4};
    std::vector<void *> batched(names.size(), reinterpret_cast<void *>(1));
    ASSERT_EQ(p.__tgt_rtl_get_globals(0, b, names.size(), names.data(), sizes.data(), batched.data()),
              OMPSIM_OFFLOAD_SUCCESS)
        << p.__tgt_rtl_last_error(0);
    for (size_t i = 0; i < names.size(); ++i) {
      void *one = nullptr;
      if (p.__tgt_rtl_get_global(0, b, sizes[i], names[i], &one) == OMPSIM_OFFLOAD_SUCCESS) {
        EXPECT_NE(one, nullptr) << names[i];
        EXPECT_EQ(batched[i], one) << names[i];
      } else {
        EXPECT_EQ(batched[i], nullptr) << names[i] << " is absent";
      }
    }
    EXPECT_EQ(batched[1], nullptr);
    EXPECT_NE(batched[0], nullptr);
    EXPECT_EQ(p.__tgt_rtl_get_globals(0, b, 0, nullptr, nullptr, nullptr), OMPSIM_OFFLOAD_SUCCESS)
        << "an empty request is answered";
    p.__tgt_rtl_deinit_device(0);
  }
}
