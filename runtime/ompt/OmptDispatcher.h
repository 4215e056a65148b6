// ompsim runtime: the OpenMP tools interface (OMPT) for offloading, as stock
// libomptarget 22 offers it: a listener of the offload event stream that calls
// the target callbacks a tool registered with libomp.
#pragma once

namespace ompsim::ompt {

/// Connects to the process's libomp (`ompt_libomp_connect`), which starts the
/// tool the program or OMP_TOOL_LIBRARIES names. When the tool registered
/// offload callbacks, subscribes the dispatcher to the event stream.
/// `InitialDevice` gives omp_get_initial_device(), the number OMPT reports
/// for the host.
///
/// Call once, at the runtime's start-up (later calls do nothing). Without a
/// libomp that has OMPT, or without a tool, nothing is subscribed.
void connect(int (*InitialDevice)());

/// True once a tool's offload callbacks are bound (for tests).
bool connected();

} // namespace ompsim::ompt
