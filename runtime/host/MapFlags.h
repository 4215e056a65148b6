// ompsim runtime: the map-type bits clang-22 emits, taken from LLVM's own
// definition so the runtime and the compiler cannot disagree.
#pragma once

#include "llvm/Frontend/OpenMP/OMPConstants.h"

#include <cstdint>
#include <string>

namespace ompsim::host::mapflag {

using Flags = llvm::omp::OpenMPOffloadMappingFlags;

/// The numeric value of one OpenMPOffloadMappingFlags bit (or mask).
constexpr uint64_t value(Flags F) { return static_cast<uint64_t>(F); }

inline constexpr uint64_t To = value(Flags::OMP_MAP_TO);
inline constexpr uint64_t From = value(Flags::OMP_MAP_FROM);
inline constexpr uint64_t Always = value(Flags::OMP_MAP_ALWAYS);
inline constexpr uint64_t Delete = value(Flags::OMP_MAP_DELETE);
inline constexpr uint64_t PtrAndObj = value(Flags::OMP_MAP_PTR_AND_OBJ);
inline constexpr uint64_t TargetParam = value(Flags::OMP_MAP_TARGET_PARAM);
inline constexpr uint64_t ReturnParam = value(Flags::OMP_MAP_RETURN_PARAM);
inline constexpr uint64_t Private = value(Flags::OMP_MAP_PRIVATE);
inline constexpr uint64_t Literal = value(Flags::OMP_MAP_LITERAL);
inline constexpr uint64_t Implicit = value(Flags::OMP_MAP_IMPLICIT);
inline constexpr uint64_t Close = value(Flags::OMP_MAP_CLOSE);
inline constexpr uint64_t Present = value(Flags::OMP_MAP_PRESENT);
inline constexpr uint64_t OmpxHold = value(Flags::OMP_MAP_OMPX_HOLD);
inline constexpr uint64_t Attach = value(Flags::OMP_MAP_ATTACH);
inline constexpr uint64_t NonContig = value(Flags::OMP_MAP_NON_CONTIG);
inline constexpr uint64_t MemberOf = value(Flags::OMP_MAP_MEMBER_OF);

/// Every bit the runtime implements. CLOSE is a placement hint that a CPU
/// device satisfies by allocating as usual; IMPLICIT changes how a section
/// that overlaps a mapped block is treated.
inline constexpr uint64_t Implemented = To | From | Always | Delete | PtrAndObj | TargetParam | ReturnParam |
                                        Private | Literal | Implicit | Close | Present | OmpxHold | Attach |
                                        NonContig | MemberOf;

/// True when `Type` has any bit of `Mask`.
constexpr bool has(int64_t Type, uint64_t Mask) { return (static_cast<uint64_t>(Type) & Mask) != 0; }

/// 1-based index of the parent item of a MEMBER_OF item, 0 when not a member.
constexpr uint64_t memberOf(int64_t Type) { return (static_cast<uint64_t>(Type) & MemberOf) >> 48; }

/// One map-type bit for messages: its OMPConstants.h name and value
/// ("OMP_MAP_ATTACH (0x4000)"), or its value when LLVM names no flag there.
std::string bitName(uint64_t Bit);

} // namespace ompsim::host::mapflag
