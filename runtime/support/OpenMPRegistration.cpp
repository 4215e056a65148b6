// Removes libomp's per-process registration files (see OpenMPRegistration.h).
#include "ompsim/OpenMPRegistration.h"

#include <unistd.h>

#include <string>

namespace ompsim {

void removeOpenMPRegistration(pid_t Pid) {
  // libomp names the file after the pid and the real uid, which a forked
  // executor shares with its host. Unlinking the exact name costs two system
  // calls; scanning the directories (a /tmp of thousands of entries) took
  // milliseconds at every executor stop.
  std::string Name = "__KMP_REGISTERED_LIB_" + std::to_string(Pid) + "_" + std::to_string(::getuid());
  for (const char *Dir : {"/dev/shm/", "/tmp/"})
    ::unlink((Dir + Name).c_str());
}

} // namespace ompsim
