// A declare mapper as clang-22 lowers one, for the map-rule tests: what
// `declare mapper(struct S s) map(s, s.p[0:s.n])` pushes for an item of
// struct { int n; int *p; }.
#pragma once

#include "MapClauseProcessor.h"
#include "MapFlags.h"

#include <cstdint>

namespace ompsim::host::testing {

/// The struct the mapper maps.
struct CountedArray {
  int N;
  int *P;
};

/// The mapper function: the struct, then its array as a member pointee
/// (MEMBER_OF is 1-based within the component list: the struct goes next).
inline void pushTwoComponents(void *Handle, void *Base, void *Begin, int64_t Size, int64_t Type, void *Name) {
  namespace flag = mapflag;
  auto *Obj = static_cast<CountedArray *>(Begin);
  auto &List = static_cast<MapperComponents *>(Handle)->Components;
  int64_t MemberBits = static_cast<int64_t>((List.size() + 1) << 48);
  List.push_back(MapArg{Base, Begin, Size, Type & ~static_cast<int64_t>(flag::TargetParam), Name, nullptr});
  List.push_back(MapArg{&Obj->P, Obj->P, Obj->N * int64_t(sizeof(int)),
                        MemberBits | static_cast<int64_t>(flag::PtrAndObj) |
                            (Type & static_cast<int64_t>(flag::To | flag::From)),
                        Name, nullptr});
}

} // namespace ompsim::host::testing
