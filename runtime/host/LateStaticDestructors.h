//===- LateStaticDestructors.h - statics that outlive the exit handlers -*- C++ -*-===//
//
// The runtime unloads the program's images from an exit handler, and the sim
// plugin's JIT may compile there; the statics of libLLVM and of the plugins
// that code first used while the program ran would otherwise be destroyed
// before that handler (LateStaticDestructors.cpp).
//
//===----------------------------------------------------------------------===//
#ifndef OMPSIM_HOST_LATESTATICDESTRUCTORS_H
#define OMPSIM_HOST_LATESTATICDESTRUCTORS_H

namespace ompsim::host {

/// Keeps the statics the loaded object holding `Symbol` makes from now on
/// (a plugin the runtime has just loaded) until after the program's exit
/// handlers, as libLLVM's are. Defined in libomptarget.so alone, so weak: the
/// unit tests link the runtime's core without it, and keep libc's order.
__attribute__((weak)) void keepStaticsUntilExit(const void *Symbol);

} // namespace ompsim::host

#endif // OMPSIM_HOST_LATESTATICDESTRUCTORS_H
