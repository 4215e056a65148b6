// Removes libomp's per-process registration files (see OpenMPRegistration.h).
#include "ompsim/OpenMPRegistration.h"

#include <dirent.h>
#include <unistd.h>

#include <cstring>
#include <string>

namespace ompsim {

void removeOpenMPRegistration(pid_t pid) {
  std::string prefix = "__KMP_REGISTERED_LIB_" + std::to_string(pid) + "_";
  for (const char *dir : {"/dev/shm", "/tmp"}) {
    DIR *d = ::opendir(dir);
    if (!d)
      continue;
    while (struct dirent *e = ::readdir(d))
      if (std::strncmp(e->d_name, prefix.c_str(), prefix.size()) == 0)
        ::unlinkat(::dirfd(d), e->d_name, 0);
    ::closedir(d);
  }
}

} // namespace ompsim
