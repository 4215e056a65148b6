// ompsim: names host addresses from the symbol tables of the loaded program and libraries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ompsim {

/// A host address resolved to the symbol that contains it.
struct HostSymbol {
  std::string Name;    ///< demangled ("vtable for Der", "add1")
  uint64_t Offset = 0; ///< addr - symbol start
  std::string Object;  ///< path of the object as loaded ("./prog", "/usr/lib/.../libc.so.6")
  bool IsFunction = false;
};

/// A mapped range of the host process (a PT_LOAD segment of a loaded object).
struct HostRange {
  uint64_t Begin = 0, End = 0; ///< page-aligned, end exclusive
  std::string Object;
};

/// A C++ vtable (an `_ZTV...` data symbol) defined in a loaded object.
struct HostVtable {
  std::string MangledName; ///< "_ZTV2Op": the name the device image gives its copy
  uint64_t Address = 0;    ///< start of the vtable in this process
  uint64_t Size = 0;       ///< bytes, a multiple of 8
};

/// Reads .symtab (or .dynsym) of every object loaded in this process.
///
/// Objects loaded later (dlopen) are picked up on the next miss. Thread-safe.
class HostSymbolizer {
public:
  /// The process-wide instance.
  static HostSymbolizer &get();

  /// The symbol containing `Addr`, or nullopt when no symbol covers it.
  std::optional<HostSymbol> lookup(uint64_t Addr);

  /// Every PT_LOAD range of every loaded object (code and data), merged per
  /// object and page-aligned; excludes ld.so's vdso/vvar.
  std::vector<HostRange> loadedRanges();

  /// The object (path) whose PT_LOAD ranges contain `Addr`, or "".
  std::string objectOf(uint64_t Addr);

  /// The vtables defined in the object whose PT_LOAD ranges contain `Addr`
  /// (empty when no object does or its symbol table is stripped).
  std::vector<HostVtable> vtablesOf(uint64_t Addr);
};

} // namespace ompsim
