// Removes libomp's per-process registration files (see OpenMPRegistration.h).
#include "ompsim/OpenMPRegistration.h"

#include <dirent.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace ompsim {

void removeOpenMPRegistration(pid_t Pid) {
  std::string Prefix = "__KMP_REGISTERED_LIB_" + std::to_string(Pid) + "_";
  for (const char *Dir : {"/dev/shm", "/tmp"}) {
    DIR *D = ::opendir(Dir);
    if (!D)
      continue;
    while (struct dirent *E = ::readdir(D))
      if (std::strncmp(E->d_name, Prefix.c_str(), Prefix.size()) == 0)
        ::unlinkat(::dirfd(D), E->d_name, 0);
    ::closedir(D);
  }
}

} // namespace ompsim
