// ompsim: names host addresses from the symbol tables of the loaded program and libraries.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ompsim {

/// A host address resolved to the symbol that contains it.
struct HostSymbol {
  std::string name;    ///< demangled ("vtable for Der", "add1")
  uint64_t offset = 0; ///< addr - symbol start
  std::string object;  ///< path of the object as loaded ("./prog", "/usr/lib/.../libc.so.6")
  bool isFunction = false;
};

/// A mapped range of the host process (a PT_LOAD segment of a loaded object).
struct HostRange {
  uint64_t begin = 0, end = 0; ///< page-aligned, end exclusive
  std::string object;
};

/// A C++ vtable (an `_ZTV...` data symbol) defined in a loaded object.
struct HostVtable {
  std::string mangledName; ///< "_ZTV2Op": the name the device image gives its copy
  uint64_t address = 0;    ///< start of the vtable in this process
  uint64_t size = 0;       ///< bytes, a multiple of 8
};

/// Reads .symtab (or .dynsym) of every object loaded in this process.
///
/// Objects loaded later (dlopen) are picked up on the next miss. Thread-safe.
class HostSymbolizer {
public:
  /// The process-wide instance.
  static HostSymbolizer &get();

  /// The symbol containing `addr`, or nullopt when no symbol covers it.
  std::optional<HostSymbol> lookup(uint64_t addr);

  /// Every PT_LOAD range of every loaded object (code and data), merged per
  /// object and page-aligned; excludes ld.so's vdso/vvar.
  std::vector<HostRange> loadedRanges();

  /// The object (path) whose PT_LOAD ranges contain `addr`, or "".
  std::string objectOf(uint64_t addr);

  /// The vtables defined in the object whose PT_LOAD ranges contain `addr`
  /// (empty when no object does or its symbol table is stripped).
  std::vector<HostVtable> vtablesOf(uint64_t addr);
};

} // namespace ompsim
