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

/// The line of a mapping-table dump (LIBOMPTARGET_INFO's dump-table bit).
std::string infoLine(int DeviceNum, const std::string &Text);

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
