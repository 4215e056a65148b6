// The diagnostics stock libomptarget 22 prints, in its own words: the one
// place their texts live. A drop-in prints them where stock does (stderr, in
// stock's order and under stock's conditions); ompsim's own "ompsim: ..."
// line with the explanation and the fix follows them.
#pragma once

#include "ompsim/offload_abi.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ompsim::host::stock {

/// A failure stock reports with its own lines before it gives up on the
/// construct: the lines stock prints (each complete, without the newline)
/// and ompsim's explanation of the same failure.
///
/// Lines are added while the error travels outward, as stock prints one
/// line per layer it unwinds (getTargetPointer, targetDataBegin, ...).
class StockError : public llvm::ErrorInfo<StockError> {
public:
  static char ID;

  StockError(std::vector<std::string> Lines, std::string Explanation)
      : Lines(std::move(Lines)), Explanation(std::move(Explanation)) {}

  /// Logs ompsim's explanation (what llvm::toString gives).
  void log(llvm::raw_ostream &OS) const override;
  std::error_code convertToErrorCode() const override;

  std::vector<std::string> Lines;
  std::string Explanation;
};

/// Makes a StockError.
llvm::Error makeError(std::vector<std::string> Lines, std::string Explanation);

/// Appends stock's line for the layer `Err` unwinds through when `Err` is a
/// StockError; other errors pass unchanged.
llvm::Error addLine(llvm::Error Err, std::string Line);

// ---- the texts ---------------------------------------------------------------

/// Ends the process as stock's plugins end it on an error report (a free
/// OFFLOAD_TRACK_ALLOCATION_TRACES refuses): `Report` on stderr, then abort.
[[noreturn]] void abortWithReport(const std::string &Report);

/// "omptarget message: <Text>" (stock's MESSAGE).
std::string message(const std::string &Text);
/// "omptarget error: <Text>" (stock's REPORT and FAILURE_MESSAGE).
std::string error(const std::string &Text);

/// A map-entering or map-exiting item with the present modifier is not mapped.
std::string presentMissing(uint64_t HostAddr, int64_t Size);
/// A `target update` item with the present motion modifier is not mapped.
std::string presentMotionMissing(uint64_t HostAddr, int64_t Size);
/// An item extends a mapped block (a section may not grow).
std::string explicitExtension(uint64_t HostAddr, int64_t Size, uint64_t MappedAddr, int64_t MappedSize);
/// getTargetPointer gave no device address: for a present item or another.
std::string nullTargetPointer(bool Present);
/// A device's images could not be loaded when it was first used.
std::string imagesNotLoaded(int64_t DeviceNum);
/// Unwinding from a declare mapper of a map-entering/-exiting/update construct.
std::string mapperFailed(const char *Function);

extern const char *const DataBeginFailed;    ///< target construct, map-entering part
extern const char *const DataEndFailed;      ///< target construct, map-exiting part
extern const char *const BeforeKernelFailed; ///< target construct, before the launch
extern const char *const AfterKernelFailed;  ///< target construct, after the launch
extern const char *const KernelFailed;       ///< target construct, the kernel itself
/// omp_target_disassociate_ptr of an item with a hold reference.
extern const char *const DisassociateHeld;
/// omp_target_disassociate_ptr of a mapped item it did not associate.
extern const char *const DisassociateNotAssociated;
/// omp_target_disassociate_ptr of an address with no mapping.
extern const char *const AssociationNotFound;

/// "omptarget device <DeviceNum> info: <Text>": stock's INFO line, as every
/// LIBOMPTARGET_INFO line of libomptarget itself reads.
std::string infoLine(int DeviceNum, const std::string &Text);

// ---- LIBOMPTARGET_INFO -------------------------------------------------------
// The lines stock's libomptarget (not its plugins: ompsim/StockPluginInfo.h)
// prints under each bit of LIBOMPTARGET_INFO. Callers check the bit with
// infoOn() before they format anything, so a run without the variable pays
// one load and a test per site.

/// LLVM 22's OMP_INFOTYPE_* bits that libomptarget itself honours.
namespace info {
inline constexpr uint32_t KernelArgs = 0x1;     ///< a construct's map items on entry
inline constexpr uint32_t MappingExists = 0x2;  ///< an item found in the table
inline constexpr uint32_t DumpTable = 0x4;      ///< every table after each construct
inline constexpr uint32_t MappingChanged = 0x8; ///< a table entry created or removed
inline constexpr uint32_t DataTransfer = 0x20;  ///< each copy between host and device
inline constexpr uint32_t EmptyMapping = 0x40;  ///< an item with no device counterpart
} // namespace info

/// Whether LIBOMPTARGET_INFO (or __tgt_set_info_flag) has `Bit` on.
bool infoOn(uint32_t Bit);

/// Prints infoLine(DeviceNum, Text) to stderr.
void printInfo(int DeviceNum, const std::string &Text);

/// Stock's name of a map item (getNameFromMapping): the first field of
/// clang's ";name;file;line;col;;", the whole string when it has no fields,
/// "unknown" for a null name.
std::string itemName(const void *MapName);

/// A reference count as stock prints it: the number, or "INF".
std::string refCount(uint64_t Count);

/// The map items of a construct (LIBOMPTARGET_INFO's kernel-arguments bit):
/// `Region` (see the region names below) "at file:line:col with N
/// arguments:", then one line per item, "type(name)[size] " with
/// "(implicit)" after the space for an implicit item.
std::vector<std::string> regionArguments(const char *Region, const ompsim_ident *Loc, size_t N,
                                         const int64_t *Sizes, const int64_t *Types, void *const *Names);

extern const char *const RegionKernel;     ///< a target construct
extern const char *const RegionDataBegin;  ///< a map-entering construct
extern const char *const RegionDataEnd;    ///< a map-exiting construct
extern const char *const RegionDataUpdate; ///< a target update
/// The same three, through the `nowait` entry points.
extern const char *const RegionDataBeginNowait;
extern const char *const RegionDataEndNowait;
extern const char *const RegionDataUpdateNowait;

/// What a look-up did to a reference count, as stock's "Mapping exists"
/// line names it after the count.
enum class RefAction {
  Incremented,      ///< a map-entering item counted
  UpdateSuppressed, ///< a look-up that does not count
  Decremented,      ///< a map-exiting item released a reference
  DelayedDeletion,  ///< ... its last one: the entry goes at the construct's end
  ResetDeletion,    ///< a `delete` item: the count reset, the entry goes
};

/// "Mapping exists ..." of a map-entering item (getTargetPointer): with
/// " (implicit)" for an implicit item and the item's `Name=`. `Hold`: the
/// action applies to the hold count rather than the dynamic one.
std::string mappingExistsOnEntry(bool Implicit, uint64_t HstBegin, uint64_t TgtBegin, int64_t Size,
                                 uint64_t DynRef, uint64_t HoldRef, bool Hold, RefAction Action,
                                 const std::string &Name);
/// "Mapping exists ..." of any other look-up (getTgtPtrBegin: map-exiting
/// items, target update, kernel arguments, attachments): no name.
std::string mappingExists(uint64_t HstBegin, uint64_t TgtBegin, int64_t Size, uint64_t DynRef,
                          uint64_t HoldRef, bool Hold, RefAction Action);
/// "Creating new map entry ..." (LIBOMPTARGET_INFO's mapping-changed bit).
std::string creatingEntry(uint64_t HstBase, uint64_t HstBegin, uint64_t TgtAllocBegin, uint64_t TgtBegin,
                          int64_t Size, uint64_t DynRef, uint64_t HoldRef, const std::string &Name);
/// "Removing map entry ..." with the releasing item's `Size`.
std::string removingEntry(uint64_t HstBegin, uint64_t TgtBegin, int64_t Size, const std::string &Name);
/// "variable <Name> does not have a valid device counterpart".
std::string noDeviceCounterpart(const std::string &Name);
/// "Copying data from host to device, HstPtr=..., TgtPtr=..., Size=..., Name=..."
/// or its device-to-host twin; an empty `Name` reads "unknown".
std::string copyLine(bool ToDevice, uint64_t Hst, uint64_t Tgt, uint64_t Size, const std::string &Name);

/// The lines of one device's table in a dump: "table empty", or the header
/// naming the block `Where` ("file:line:col") and one row per entry.
std::string tableEmpty();
std::string tableHeader(const std::string &Where);
std::string tableColumns();
/// A row: `MapName` is the entry's map name (clang's ";name;file;line;col;;"),
/// else `Symbol` names it (a declare target global) with no place, else it
/// is "unknown at unknown:0:0".
std::string tableRow(uint64_t HstBegin, uint64_t TgtBegin, uint64_t Size, uint64_t DynRef, uint64_t HoldRef,
                     const void *MapName, const std::string &Symbol);
/// The block stock names in the dump it prints as a device goes at exit.
extern const char *const ExitBlock;

/// "'#pragma omp requires <clause>' not used consistently!" for the first
/// clause (in stock's order) on which `First` and `Later` differ; empty when
/// they agree.
std::string requiresMismatch(int64_t First, int64_t Later);

// ---- printing ----------------------------------------------------------------

/// Prints one line to stderr as stock does (unbuffered, in program order).
void print(const std::string &Line);

/// Called first on every path that ends the process with a report: the first
/// thread to get here returns (and again, should it come back); another host
/// thread failing at the same time waits for that end, so the process prints
/// one report, not one per thread.
void claimProcessEnd();

/// Stock's FATAL_MESSAGE: "omptarget fatal error <Code>: <Text>", then
/// ompsim's line when `Explanation` is not empty, then abort().
[[noreturn]] void fatal(int Code, const std::string &Text, const std::string &Explanation,
                        const ompsim_ident *Loc = nullptr);

/// A target construct failed while offloading is mandatory (stock's
/// handleTargetOutcome): prints the error's stock lines, the hint (or the
/// mapping tables under LIBOMPTARGET_INFO's dump-table bit), the source
/// location, the fatal line and ompsim's explanation, and aborts.
/// `DumpTables` prints every device's mapping table.
[[noreturn]] void failTargetConstruct(StockError &Err, const ompsim_ident *Loc,
                                      llvm::function_ref<void()> DumpTables);

/// "file:line:col" of a construct as stock names it in table dumps
/// ("unknown:0:0" without debug information).
std::string blockLocation(const ompsim_ident *Loc);

/// "file:line" of a construct's ident_t, or "" when the program was built
/// without debug information.
std::string sourceLine(const ompsim_ident *Loc);

} // namespace ompsim::host::stock
