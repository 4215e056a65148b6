#include "JitObjectCache.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Support/xxhash.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <sys/stat.h>
#include <vector>

namespace ompsim::sim {

using namespace llvm;

namespace {

/// Every entry starts with this tag and the xxh3 checksum of the object after
/// it (little-endian): a file of another format, a truncated file or flipped
/// bits read as a miss.
constexpr StringLiteral kMagic = "OMPSIMJ1";
constexpr size_t kHeaderSize = kMagic.size() + sizeof(uint64_t);

/// A temporary file older than this was left by a writer that died.
constexpr auto kStaleTemporary = std::chrono::hours(1);

/// One warning per process, whichever device's JIT meets the problem first.
std::atomic<bool> Warned{false};

bool isHexKey(StringRef S) {
  return !S.empty() &&
         llvm::all_of(S, [](char C) { return (C >= '0' && C <= '9') || (C >= 'a' && C <= 'f'); });
}

} // namespace

JitObjectCache::JitObjectCache(std::string Folder, uint64_t Max) : Dir(std::move(Folder)), MaxBytes(Max) {
  if (std::error_code Ec = sys::fs::create_directories(Dir)) {
    Usable = false;
    warnOnce("cannot create it: " + Ec.message());
  }
}

bool JitObjectCache::isEntryName(StringRef FileName) {
  return FileName.consume_back(".o") && isHexKey(FileName);
}

bool JitObjectCache::isTemporaryName(StringRef FileName) {
  // "<key>.o.XXXXXX.tmp" (createUniqueFile's pattern in put()).
  return FileName.consume_back(".tmp") && isHexKey(FileName.split('.').first) &&
         FileName.split('.').second.starts_with("o.");
}

std::string JitObjectCache::pathOf(StringRef Key) const {
  SmallString<128> Path(Dir);
  sys::path::append(Path, Key + ".o");
  return Path.str().str();
}

std::unique_ptr<MemoryBuffer> JitObjectCache::get(StringRef Key) {
  if (!Usable)
    return nullptr;
  std::string Path = pathOf(Key);
  auto File = MemoryBuffer::getFile(Path, /*IsText=*/false, /*RequiresNullTerminator=*/false);
  if (!File)
    return nullptr;
  StringRef Bytes = (*File)->getBuffer();
  if (Bytes.size() <= kHeaderSize || !Bytes.starts_with(kMagic))
    return nullptr;
  StringRef Object = Bytes.drop_front(kHeaderSize);
  if (support::endian::read64le(Bytes.data() + kMagic.size()) != xxh3_64bits(Object))
    return nullptr;
  // The access time orders eviction; mounts with relatime or noatime do not
  // keep it on a read, so set it. A folder we may not write keeps the old one.
  struct timespec Times[2] = {{0, UTIME_NOW}, {0, UTIME_OMIT}};
  (void)::utimensat(AT_FDCWD, Path.c_str(), Times, 0);
  return MemoryBuffer::getMemBufferCopy(Object, (*File)->getBufferIdentifier());
}

void JitObjectCache::put(StringRef Key, StringRef Object) {
  if (!Usable || kHeaderSize + Object.size() > MaxBytes)
    return;
  std::string Path = pathOf(Key);
  int Fd = -1;
  SmallString<128> Temp;
  if (std::error_code Ec = sys::fs::createUniqueFile(Path + ".%%%%%%.tmp", Fd, Temp))
    return warnOnce("cannot create a file in it: " + Ec.message());
  char Sum[sizeof(uint64_t)];
  support::endian::write64le(Sum, xxh3_64bits(Object));
  {
    raw_fd_ostream Out(Fd, /*shouldClose=*/true);
    Out << kMagic << StringRef(Sum, sizeof(Sum)) << Object;
    Out.close();
    if (Out.has_error()) {
      std::string Why = Out.error().message();
      Out.clear_error();
      sys::fs::remove(Temp);
      return warnOnce("cannot write to it: " + Why);
    }
  }
  if (std::error_code Ec = sys::fs::rename(Temp, Path)) {
    sys::fs::remove(Temp);
    return warnOnce("cannot rename a file in it: " + Ec.message());
  }
  std::lock_guard<std::mutex> Lock(Mu);
  if (!Scanned) {
    Total = scanTotal();
    Scanned = true;
  } else {
    Total += kHeaderSize + Object.size();
  }
  if (Total > MaxBytes)
    evict();
}

uint64_t JitObjectCache::scanTotal() const {
  uint64_t Sum = 0;
  std::error_code Ec;
  for (sys::fs::directory_iterator It(Dir, Ec), End; It != End && !Ec; It.increment(Ec))
    if (isEntryName(sys::path::filename(It->path())))
      if (auto St = It->status(); St && St->type() == sys::fs::file_type::regular_file)
        Sum += St->getSize();
  return Sum;
}

void JitObjectCache::evict() {
  struct Entry {
    std::string Path;
    sys::TimePoint<> Used;
    uint64_t Size;
  };
  std::vector<Entry> Entries;
  uint64_t Sum = 0;
  auto Now = std::chrono::system_clock::now();
  std::error_code Ec;
  for (sys::fs::directory_iterator It(Dir, Ec), End; It != End && !Ec; It.increment(Ec)) {
    StringRef Name = sys::path::filename(It->path());
    auto St = It->status();
    if (!St || St->type() != sys::fs::file_type::regular_file)
      continue;
    if (isEntryName(Name)) {
      Entries.push_back({It->path(), St->getLastAccessedTime(), St->getSize()});
      Sum += St->getSize();
    } else if (isTemporaryName(Name) && Now - St->getLastModificationTime() > kStaleTemporary) {
      sys::fs::remove(It->path());
    }
  }
  std::sort(Entries.begin(), Entries.end(), [](const Entry &A, const Entry &B) {
    return A.Used != B.Used ? A.Used < B.Used : A.Path < B.Path;
  });
  uint64_t Goal = MaxBytes / 10 * 9;
  for (const Entry &E : Entries) {
    if (Sum <= Goal)
      break;
    // Another process may have removed it first: either way it is gone.
    sys::fs::remove(E.Path);
    Sum -= E.Size;
  }
  Total = Sum;
}

void JitObjectCache::warnOnce(const std::string &Problem) {
  if (Warned.exchange(true))
    return;
  std::fprintf(stderr,
               "ompsim: JIT cache folder '%s': %s; compiled code is not kept (OMPSIM_JIT_CACHE names another "
               "folder, =off turns the cache off)\n",
               Dir.c_str(), Problem.c_str());
}

} // namespace ompsim::sim
