// libFuzzer target: the simulator's ELF image loader (ElfImageLoader::load).
//
// The loader parses headers, maps segments, relocates and then runs the
// image's initializers: running image code is its job, so the harness makes
// that harmless rather than forbidding it. Every page the loader asks to make
// executable stays non-executable (mprotect is interposed), and a fault whose
// address is the instruction pointer (a fetch from such a page, or from
// nowhere) returns to the caller as if the called function had returned 0.
// Every other fault, ASan or UBSan report is a finding: the parser read or
// wrote outside the image it was given.
#include "ElfImageLoader.h"

#include <csignal>
#include <cstdint>
#include <cstring>
#include <map>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

namespace {

constexpr uint64_t kMaxImage = 64ull << 20; // the executor's arena is finite too
std::map<uint8_t *, uint64_t> gMappings;
struct sigaction gPrevious;

void onFault(int sig, siginfo_t *info, void *context) {
  auto *uc = static_cast<ucontext_t *>(context);
  greg_t &rip = uc->uc_mcontext.gregs[REG_RIP];
  greg_t &rsp = uc->uc_mcontext.gregs[REG_RSP];
  if (sig == SIGSEGV && reinterpret_cast<greg_t>(info->si_addr) == rip) {
    // A call into image code: pop the return address and return 0.
    std::memcpy(&rip, reinterpret_cast<void *>(rsp), sizeof(rip));
    rsp += 8;
    uc->uc_mcontext.gregs[REG_RAX] = 0;
    return;
  }
  if (gPrevious.sa_flags & SA_SIGINFO && gPrevious.sa_sigaction)
    return gPrevious.sa_sigaction(sig, info, context);
  signal(sig, SIG_DFL);
  raise(sig);
}

} // namespace

/// Pages never become executable in this process (see the file comment).
extern "C" int mprotect(void *addr, size_t len, int prot) {
  return static_cast<int>(syscall(SYS_mprotect, addr, len, prot & ~PROT_EXEC));
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  struct sigaction sa{};
  sa.sa_sigaction = onFault;
  sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGSEGV, &sa, &gPrevious);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace ompsim::sim;
  ElfLoadEnvironment env;
  env.allocate = [](uint64_t bytes) -> llvm::Expected<uint8_t *> {
    if (bytes == 0 || bytes > kMaxImage)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "out of device memory");
    void *p = ::mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "mmap failed");
    gMappings[static_cast<uint8_t *>(p)] = bytes;
    return static_cast<uint8_t *>(p);
  };
  env.release = [](uint8_t *base) {
    auto it = gMappings.find(base);
    if (it == gMappings.end())
      __builtin_trap(); // released something it was never given
    ::munmap(it->first, it->second);
    gMappings.erase(it);
  };
  env.loadNeeded = [](llvm::StringRef) { return llvm::Error::success(); };
  env.resolve = [](llvm::StringRef) -> void * { return nullptr; };
  auto image =
      ElfImageLoader::load(llvm::ArrayRef<char>(reinterpret_cast<const char *>(data), size), "fuzz.img", env);
  if (!image) {
    std::string message = llvm::toString(image.takeError());
    if (message.find("fuzz.img") == std::string::npos)
      __builtin_trap(); // errors name the image
  } else {
    (*image)->lookup("__omp_offloading_fptr_map_p");
    (*image)->runFini();
    image->reset();
  }
  if (!gMappings.empty())
    __builtin_trap(); // device memory leaked by a failed or finished load
  return 0;
}
