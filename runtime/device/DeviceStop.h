//===- DeviceStop.h - a device runtime that cannot go on, in one line -*- C++ -*-===//
//
// The device runtime stops a launch it cannot run as a GPU would (its block's
// threads wait at different barriers, a barrier can never complete, a grid
// it cannot hold) or cannot run at all (libomp missing, out of memory) with
// one line. In an executor the line goes to the controller, which names the
// kernel before it (__ompsim_device_set_stop_handler); in the host plugin's
// process it goes to stderr.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_DEVICESTOP_H
#define OMPSIM_DEVICE_DEVICESTOP_H

namespace ompsim::device {

/// Ends the launch and the process with the line `Format`, printf-style,
/// without "ompsim: " (the receiver adds who speaks).
[[noreturn]] void stopDevice(const char *Format, ...) __attribute__((format(printf, 1, 2)));

/// Ends the process with status 1 once its last line is written, as a
/// process that ends with _exit must: its output flushed and libomp's
/// registration file of the process removed (in the host plugin's process
/// libomp made one, and only its destructor, which _exit skips, would).
[[noreturn]] void endDeviceProcess();

} // namespace ompsim::device

#endif // OMPSIM_DEVICE_DEVICESTOP_H
