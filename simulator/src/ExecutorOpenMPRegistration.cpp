//===- ExecutorOpenMPRegistration.cpp - libomp registers in memory only ---===//
//
// libomp registers every process that loads it under the name
// `__KMP_REGISTERED_LIB_<pid>_<uid>`, so that a second copy of the library
// in the same process can find the first. It keeps that record in the first
// of these places that it finds usable: a file in /dev/shm, a file in /tmp,
// or an environment variable of the process. It removes the file in its
// destructor, which never runs in an executor: the executor ends with _exit,
// and with SIGKILL when its host dies (PR_SET_PDEATHSIG), at any moment.
//
// So the executor never lets libomp create the file: libomp asks whether
// /dev/shm and /tmp exist with opendir(), and the executor's own opendir
// (which the dynamic linker binds ahead of libc's for every library the
// executor loads, libomp included) answers "no such directory" to those two
// probes when libomp makes them. libomp then keeps its record in the
// executor's environment, which vanishes with the process however it ends.
// Nothing to remove afterwards means no window in which a kill leaves a file:
// removing the file right after libomp made it would leave one when SIGKILL
// lands between the two. docs/reliability.md gives the reasoning.
//
// Every other opendir, libomp's own of other paths and device code's of
// these, goes to libc unchanged.
//
//===----------------------------------------------------------------------===//

#include <dirent.h>
#include <dlfcn.h>

#include <cerrno>
#include <cstring>

namespace {

using OpendirFn = DIR *(*)(const char *);

/// Whether `Caller` (a return address) lies in libomp (libomp.so.5, or a
/// copy under another name of the same stem).
bool calledFromLibomp(void *Caller) {
  Dl_info Info{};
  if (!::dladdr(Caller, &Info) || !Info.dli_fname)
    return false;
  const char *Base = std::strrchr(Info.dli_fname, '/');
  Base = Base ? Base + 1 : Info.dli_fname;
  return std::strncmp(Base, "libomp.so", 9) == 0 || std::strncmp(Base, "libomp-", 7) == 0;
}

/// libomp's two probes for a place to keep its registration file.
bool isRegistrationProbe(const char *Path) {
  return Path && (std::strcmp(Path, "/dev/shm") == 0 || std::strcmp(Path, "/tmp") == 0);
}

} // namespace

/// The executor's opendir: libc's, except for libomp's registration probes
/// (see the file comment). Exported from the executable
/// (`--export-dynamic-symbol=opendir`), so libomp's calls bind to it.
extern "C" DIR *opendir(const char *Path) {
  static OpendirFn Next = reinterpret_cast<OpendirFn>(::dlsym(RTLD_NEXT, "opendir"));
  if (isRegistrationProbe(Path) && calledFromLibomp(__builtin_return_address(0))) {
    errno = ENOENT;
    return nullptr;
  }
  if (!Next) {
    errno = ENOSYS;
    return nullptr;
  }
  return Next(Path);
}
