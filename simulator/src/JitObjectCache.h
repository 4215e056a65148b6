// ompsim simulator: the folder of compiled JIT objects kept between runs (host side).
#pragma once

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

namespace ompsim::sim {

/// A folder of compiled objects shared by every process that uses it, each
/// entry named by a key the caller derives from what the object is made of.
///
/// Entries are written to a temporary file in the folder and renamed into
/// place, so a reader sees a whole entry or none, and two processes filling
/// the same entry both succeed. Each entry carries a checksum of its object:
/// a truncated or damaged one reads as a miss (the caller compiles again and
/// its put() replaces it). The folder holds at most `MaxBytes` of entries;
/// past that, the least recently used entries (by access time, which a hit
/// sets) are removed first. A folder that cannot be created or written (read
/// only, full, a file in its place) never fails a run: the first problem in
/// the process is reported in one line naming the folder, and the run goes
/// on compiling what it cannot read.
class JitObjectCache {
public:
  /// Uses `Dir`, creating it if missing. Thread-safe.
  JitObjectCache(std::string Dir, uint64_t MaxBytes);

  /// The object stored under `Key` (hex digits), or null when there is none
  /// or it is damaged. A hit marks the entry used now.
  std::unique_ptr<llvm::MemoryBuffer> get(llvm::StringRef Key);
  /// Stores `Object` under `Key` unless the folder cannot be written (then it
  /// warns once per process) or the object alone exceeds the cap.
  void put(llvm::StringRef Key, llvm::StringRef Object);

  /// The folder's name.
  const std::string &dir() const { return Dir; }
  /// True when an entry file name is one this cache writes ("<hex>.o").
  static bool isEntryName(llvm::StringRef FileName);
  /// True when a file name is one of this cache's temporary files.
  static bool isTemporaryName(llvm::StringRef FileName);

private:
  std::string pathOf(llvm::StringRef Key) const;
  /// Removes least recently used entries until the folder holds at most nine
  /// tenths of the cap (so that the next few puts do not each scan it), and
  /// temporary files that a writer which died left behind.
  void evict();
  /// Sums the entries' sizes (the first put of the process).
  uint64_t scanTotal() const;
  /// Reports a problem with the folder, once per process.
  void warnOnce(const std::string &Problem);

  std::string Dir;
  uint64_t MaxBytes;
  bool Usable = true; ///< the folder exists (or could be made)
  std::mutex Mu;      ///< guards Total and Scanned
  uint64_t Total = 0; ///< bytes of entries as of the last scan, plus what this process put since
  bool Scanned = false;
};

} // namespace ompsim::sim
