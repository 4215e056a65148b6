// ompsim: LIBOMPTARGET_PROFILE, a Chrome-trace (Trace Event Format) JSON file
// of the runtime's work, written as stock libomptarget 22 writes it.
#pragma once

#include <string>
#include <string_view>

namespace ompsim::profile {

/// Starts the profile when LIBOMPTARGET_PROFILE names a file; later calls do
/// nothing. The calling thread's sections are recorded (stock records the
/// thread that initialized the runtime, with LLVM's time-trace profiler), and
/// the file is written when the process exits, or by finish().
void start();

/// Writes the profile now (the runtime's fatal paths end the process with
/// _Exit, past the exit-time writer); sections begun later are not recorded.
void finish();

/// True while this thread records sections.
bool enabled();

/// Opens a section on this thread, which endSection() on the same thread
/// closes (what Section does for a scope). Call only while enabled().
void beginSection(std::string_view Name, std::string Detail);
/// Closes the section beginSection() opened last; nothing once the profile
/// is finished.
void endSection();

/// One timed section ("X" complete event) of the profile, from construction to
/// destruction; sections nest. Costs one thread-local check when off.
class Section {
public:
  explicit Section(std::string_view Name) : Open(enabled()) {
    if (Open)
      beginSection(Name, {});
  }
  /// `Detail` (a callable returning std::string) becomes the event's
  /// args.detail; it is called only while profiling.
  template <typename DetailFn> Section(std::string_view Name, DetailFn &&Detail) : Open(enabled()) {
    if (Open)
      beginSection(Name, Detail());
  }
  ~Section() {
    if (Open)
      endSection();
  }
  Section(const Section &) = delete;
  Section &operator=(const Section &) = delete;

private:
  bool Open;
};

} // namespace ompsim::profile
