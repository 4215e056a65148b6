// ompsim: files a process leaves behind when it does not exit normally.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <cstdio>

namespace ompsim {

/// Removes the registration file libomp creates for process `Pid`
/// (`__KMP_REGISTERED_LIB_<pid>_<uid>` in /dev/shm, or in /tmp where shared
/// memory is unavailable).
///
/// libomp removes it in its destructor, which never runs in a process that
/// ends with _exit or a signal, such as a host ending on a fatal error or a
/// kernel the device runtime stops in the host plugin's process. (An
/// executor's libomp never makes the file: ExecutorOpenMPRegistration.cpp.)
/// Call it only for a process that is gone (reaped) or for the calling
/// process just before it exits.
///
/// Inline and free of the C++ library: libompsim-device, which keeps
/// libstdc++ out of its NEEDED list, calls it too.
inline void removeOpenMPRegistration(pid_t Pid) {
  // libomp names the file after the pid and the real uid, which a forked
  // executor shares with its host. Unlinking the exact name costs two system
  // calls; scanning the directories (a /tmp of thousands of entries) took
  // milliseconds at every executor stop.
  static const char *const Dirs[] = {"/dev/shm", "/tmp"};
  for (const char *Dir : Dirs) {
    char Path[96];
    std::snprintf(Path, sizeof Path, "%s/__KMP_REGISTERED_LIB_%d_%u", Dir, static_cast<int>(Pid),
                  static_cast<unsigned>(::getuid()));
    ::unlink(Path);
  }
}

} // namespace ompsim
