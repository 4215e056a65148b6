// ompsim runtime: the map checker (`ompsim run --check`, OMPSIM_CHECK).
//
// It watches the map-clause processor's transfers, allocations and removals
// and reports mapping bugs that stock libomptarget and GPUs run silently, one
// "ompsim: check: ..." line each (docs/checker.md). It never changes what a
// correct program computes.
#pragma once

#include "ompsim/plugin_api.h"

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace ompsim::host {
struct MapEntry;
class DeviceMemory;
class MappingTable;
} // namespace ompsim::host

namespace ompsim::check {

/// True when OMPSIM_CHECK asks for the checker (report or strict).
bool enabled();

/// What the checker keeps for one mapped block: the value both copies held
/// when they were last made equal, byte by byte.
struct BlockShadow {
  /// Synced[i]: the value host and device copies of byte i held after the
  /// last transfer of it; meaningful inside the Known ranges only.
  std::unique_ptr<uint8_t[]> Synced;
  /// The byte ranges [begin, end) (offsets in the block) a transfer made
  /// known, disjoint and not touching, by begin.
  std::map<uint64_t, uint64_t> Known;

  /// Adds [From, To) to the known ranges.
  void markKnown(uint64_t From, uint64_t To);
  /// Removes [From, To) from the known ranges.
  void forget(uint64_t From, uint64_t To);
  /// What the device memory held before the checker poisoned it; a copy-back
  /// of bytes the device never wrote gets these back, so results stay as
  /// they would be without the checker.
  std::vector<uint8_t> Original;
  uint64_t CreatedIn = 0;    ///< serial of the construct that created the block
  std::string CreatedBy;     ///< that construct, for messages
  bool LeftByMapper = false; ///< created by a declare mapper's first component (never released, stock)
  /// A map-exiting construct named the block: a count left at exit is then
  /// stock's counting (members, pointees counted twice), not a missing exit.
  bool SeenAtExit = false;
  /// Created by a target region, whose end ends all its maps: a count left
  /// is stock's counting too.
  bool ByRegion = false;
  /// A `target update from` copied part of it back: the program chose what
  /// to keep of the device's writes, so the rest is not reported as dropped.
  bool UpdatedFrom = false;
  /// Created by an item that moves data (`to` or `from`), as a user's map
  /// clause does; clang's own items for a struct's storage move nothing.
  bool MovesData = false;
  /// Without a map name (no -g): what the host symbolizer told of the block
  /// when it was mapped (its global, "<stack of 'f'>", "<host heap>").
  std::string HostName;
  /// The construct that ended the block's mapping, for a later report of a
  /// use after unmap (set when the mapping ends).
  std::string EndedBy;
};

/// Names the construct whose map clauses the current thread processes, for
/// the checker's messages, while it lives. `Kind` is "target region",
/// "target update"...; `Location` is "file:line:col" or "".
class ConstructScope {
public:
  ConstructScope(std::string Kind, std::string Location);
  ~ConstructScope();
  ConstructScope(const ConstructScope &) = delete;
  ConstructScope &operator=(const ConstructScope &) = delete;

private:
  std::string SavedKind, SavedLocation;
  uint64_t SavedSerial;
};

/// Adds the kernel's name to the current target region ("main_l15").
void setRegionKernel(std::string_view KernelName);

/// How a map item is named in reports: the variable as the map clause spells
/// it (the map names of clang-22 and flang-22), else the block's, else ""
/// (reports then say what the symbolizer told of the block: BlockShadow::HostName).
std::string itemName(const void *MapName, const host::MapEntry &Entry);

/// A block was just allocated for `Entry`: its device memory is filled with
/// the poison pattern (what it held is kept to restore on copy-back).
/// `Poison` is false when the whole block is copied to the device at once;
/// `MovesData`: the item that created it maps `to` or `from`.
void onCreate(host::MapEntry &Entry, host::DeviceMemory &Memory, bool Poison, bool MovesData);

/// `Entry`, new in this construct, was created by a declare mapper's first
/// component, which stock never releases.
void markLeftByMapper(host::MapEntry &Entry);

/// [Begin, Begin+Size) of `Entry` was copied to the device.
void onCopiedTo(host::MapEntry &Entry, uintptr_t Begin, uint64_t Size);

/// [Begin, Begin+Size) of `Entry` was copied back to the host (shadow pointers
/// already restored): bytes the device never wrote are reported and get
/// their pre-checker value back.
void onCopiedFrom(host::MapEntry &Entry, host::DeviceMemory &Memory, uintptr_t Begin, uint64_t Size,
                  const void *MapName);

/// A target region uses [Begin, Begin+Size) of a block that was present
/// before it and that it does not copy to the device: reported when the host
/// copy changed since the last transfer.
void onPresentUse(host::MapEntry &Entry, uintptr_t Begin, uint64_t Size, const void *MapName);

/// `Entry` is about to be removed (its counts reached zero): reported when its
/// device copy differs from what was last copied to or from it.
void onRemove(host::MapEntry &Entry, host::DeviceMemory &Memory);

/// A kernel faulted on a data address (`Fault`, from the plugin's
/// __tgt_rtl_last_fault): when the address lies past the end of a device
/// block (its guard page) or in a freed one (its quarantine), reports the map
/// item that block belongs or belonged to. `Table` is the device's mapping
/// table (its lock held).
void onKernelFault(const ompsim_fault_info &Fault, host::MappingTable &Table, int32_t DeviceNumber);

/// A construct released an item of `Entry` (only map-exiting constructs count).
void onExitItem(host::MapEntry &Entry);

/// `Size` bytes at `Tgt` came from omp_target_alloc on `Memory`'s device: they
/// are poisoned as a mapped block's fresh memory is.
void onTargetAlloc(host::DeviceMemory &Memory, uint64_t Tgt, uint64_t Size);

/// omp_target_free of `Tgt` on device `DeviceNumber`.
void onTargetFree(int32_t DeviceNumber, uint64_t Tgt);

/// omp_target_memcpy or omp_target_memset wrote [Tgt, Tgt+Size) of device
/// `DeviceNumber`, whose mapping table is `Table`. The program set those bytes
/// itself: in an omp_target_alloc block they are known from then on; in a
/// mapped block they are neither device results nor a stale copy (a program
/// links a device list by storing device pointers so), so they are no longer
/// compared until a transfer copies them again.
void onTargetWrite(int32_t DeviceNumber, host::MappingTable &Table, uint64_t Tgt, uint64_t Size);

/// omp_target_memcpy copied [Tgt, Tgt+Size) of device `DeviceNumber` to
/// `Host`: bytes of an omp_target_alloc block the device never wrote are
/// reported and get their pre-checker value back.
void onTargetRead(int32_t DeviceNumber, uint64_t Tgt, uint64_t Size, void *Host);

/// A block still mapped at exit on device `DeviceNumber`: reported when no
/// map-exiting construct ever named it (a missing `target exit data`).
void onLeftAtExit(const host::MapEntry &Entry, int32_t DeviceNumber);

/// True when the mode is strict, something was reported and the program
/// exits with status `Status` 0: the caller then ends the process with
/// status 1. Prints the line that says so.
bool failsStrict(int Status);

/// Number of reports so far.
uint64_t reportCount();

} // namespace ompsim::check
