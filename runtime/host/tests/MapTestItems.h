// What the host runtime's map tests share: the map-type bits by the short
// names the tests spell them with, one map item as clang passes it, and an
// error's text.
#pragma once

#include "MapClauseProcessor.h"
#include "MapFlags.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>

namespace ompsim::host::testing {

constexpr int64_t TO = mapflag::To, FROM = mapflag::From, ALWAYS = mapflag::Always, DELETE = mapflag::Delete,
                  PtrAndObj = mapflag::PtrAndObj, PARAM = mapflag::TargetParam,
                  ReturnParam = mapflag::ReturnParam, PRIVATE = mapflag::Private, LITERAL = mapflag::Literal,
                  IMPLICIT = mapflag::Implicit, PRESENT = mapflag::Present, HOLD = mapflag::OmpxHold,
                  ATTACH = mapflag::Attach;

/// MEMBER_OF(ParentIndex1) of a map type: the 1-based index of the parent item.
constexpr int64_t memberOf(int ParentIndex1) { return static_cast<int64_t>(uint64_t(ParentIndex1) << 48); }

/// One map item of `Size` bytes at `P` (base and begin alike), with a name if given.
inline MapArg item(void *P, int64_t Size, int64_t Type, const char *Name = nullptr) {
  return MapArg{P, P, Size, Type, const_cast<char *>(Name), nullptr};
}

inline std::string errorText(llvm::Error Err) { return llvm::toString(std::move(Err)); }

} // namespace ompsim::host::testing
