//===- LaunchStop.h - a launch that cannot go on, in one line ---*- C++ -*-===//
//
// The virtual GPU stops a launch it cannot run as a GPU would (its block's
// threads wait at different barriers, a barrier can never complete, a grid
// it cannot hold) with one line. In an executor the line goes to the
// controller, which names the kernel before it
// (__ompsim_device_set_stop_handler); in the host plugin's process it goes
// to stderr.
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_DEVICE_VGPU_LAUNCHSTOP_H
#define OMPSIM_DEVICE_VGPU_LAUNCHSTOP_H

namespace ompsim::vgpu {

/// Ends the launch and the process with the line `Format`, printf-style,
/// without "ompsim: " (the receiver adds who speaks).
[[noreturn]] void stopLaunch(const char *Format, ...) __attribute__((format(printf, 1, 2)));

} // namespace ompsim::vgpu

#endif // OMPSIM_DEVICE_VGPU_LAUNCHSTOP_H
