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
std::map<uint8_t *, uint64_t> GMappings;
struct sigaction GPrevious;

void onFault(int Sig, siginfo_t *Info, void *Context) {
  auto *Uc = static_cast<ucontext_t *>(Context);
  greg_t &Rip = Uc->uc_mcontext.gregs[REG_RIP];
  greg_t &Rsp = Uc->uc_mcontext.gregs[REG_RSP];
  if (Sig == SIGSEGV && reinterpret_cast<greg_t>(Info->si_addr) == Rip) {
    // A call into image code: pop the return address and return 0.
    std::memcpy(&Rip, reinterpret_cast<void *>(Rsp), sizeof(Rip));
    Rsp += 8;
    Uc->uc_mcontext.gregs[REG_RAX] = 0;
    return;
  }
  if (GPrevious.sa_flags & SA_SIGINFO && GPrevious.sa_sigaction)
    return GPrevious.sa_sigaction(Sig, Info, Context);
  signal(Sig, SIG_DFL);
  raise(Sig);
}

} // namespace

/// Pages never become executable in this process (see the file comment).
extern "C" int mprotect(void *Addr, size_t Len, int Prot) {
  return static_cast<int>(syscall(SYS_mprotect, Addr, Len, Prot & ~PROT_EXEC));
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  struct sigaction Sa{};
  Sa.sa_sigaction = onFault;
  Sa.sa_flags = SA_SIGINFO | SA_NODEFER;
  sigemptyset(&Sa.sa_mask);
  sigaction(SIGSEGV, &Sa, &GPrevious);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *Data, size_t Size) {
  using namespace ompsim::sim;
  ElfLoadEnvironment Env;
  Env.Allocate = [](uint64_t Bytes) -> llvm::Expected<uint8_t *> {
    if (Bytes == 0 || Bytes > kMaxImage)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "out of device memory");
    void *P = ::mmap(nullptr, Bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (P == MAP_FAILED)
      return llvm::createStringError(llvm::inconvertibleErrorCode(), "mmap failed");
    GMappings[static_cast<uint8_t *>(P)] = Bytes;
    return static_cast<uint8_t *>(P);
  };
  Env.Release = [](uint8_t *Base) {
    auto It = GMappings.find(Base);
    if (It == GMappings.end())
      __builtin_trap(); // released something it was never given
    ::munmap(It->first, It->second);
    GMappings.erase(It);
  };
  Env.LoadNeeded = [](llvm::StringRef) { return llvm::Error::success(); };
  Env.Resolve = [](llvm::StringRef) -> void * { return nullptr; };
  auto Image =
      ElfImageLoader::load(llvm::ArrayRef<char>(reinterpret_cast<const char *>(Data), Size), "fuzz.img", Env);
  if (!Image) {
    std::string Message = llvm::toString(Image.takeError());
    if (Message.find("fuzz.img") == std::string::npos)
      __builtin_trap(); // errors name the image
  } else {
    (*Image)->lookup("__omp_offloading_fptr_map_p");
    (*Image)->runFini();
    Image->reset();
  }
  if (!GMappings.empty())
    __builtin_trap(); // device memory leaked by a failed or finished load
  return 0;
}
