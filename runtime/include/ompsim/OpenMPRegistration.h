// ompsim: files a process leaves behind when it does not exit normally.
#pragma once

#include <sys/types.h>

namespace ompsim {

/// Removes the registration file libomp creates for process `Pid`
/// (`__KMP_REGISTERED_LIB_<pid>_<uid>` in /dev/shm, or in /tmp where shared
/// memory is unavailable).
///
/// libomp removes it in its destructor, which never runs in a process that
/// ends with _exit or a signal, such as a host ending on a fatal error. (An
/// executor's libomp never makes the file: ExecutorOpenMPRegistration.cpp.)
/// Call it only for a process that is gone (reaped) or for the calling
/// process just before it exits.
void removeOpenMPRegistration(pid_t Pid);

} // namespace ompsim
