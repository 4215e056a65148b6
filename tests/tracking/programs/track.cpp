// The C++ cases of LLVM's offload/test/sanitizer programs (free_wrong_ptr_kind.cpp,
// kernel_trap.cpp): the same program, built as C++.
#include "track.c"
