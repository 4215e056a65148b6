// ompsim runtime: the observers of the offload event stream that come with
// the runtime, one file each. Each subscribes once; later calls do nothing.
#pragma once

namespace ompsim::listeners {

/// LIBOMPTARGET_INFO's map lines (InfoPrinter.cpp): subscribed at start-up
/// when the variable sets bits, or when __tgt_set_info_flag sets them later.
void subscribeInfoPrinter();

/// OMPSIM_TRACE's events of the stream (TraceWriter.cpp).
void subscribeTraceWriter();

/// LIBOMPTARGET_PROFILE's sections of the stream (ProfileSections.cpp).
void subscribeProfileSections();

/// The map checker, OMPSIM_CHECK (MapCheckListener.cpp).
void subscribeMapChecker();

} // namespace ompsim::listeners
