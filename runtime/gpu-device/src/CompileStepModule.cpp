//===- CompileStepModule.cpp - the module clang-22's nvptx compile links --===//
//
// clang-22 compiles OpenMP device code for nvptx64 only if it finds
// libomptarget-nvptx.bc, which it links into every device translation unit.
// The runtime must not come in that way (each unit would get its own copy of
// the block's state); it is linked once, at device LTO, from
// libompdevice.a. So this module defines nothing.
//
//===----------------------------------------------------------------------===//
