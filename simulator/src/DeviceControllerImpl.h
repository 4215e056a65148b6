//===- DeviceControllerImpl.h - DeviceController's shared helpers -*- C++ -*-===//
//
// What the DeviceController*.cpp files share: not part of the public header.
//
//===----------------------------------------------------------------------===//

#pragma once

#include "ompsim/Errors.h"
#include "ompsim/simulator/DeviceController.h"

#include "Protocol.h"

#include "llvm/ExecutionEngine/Orc/SimpleRemoteEPC.h"
#include "llvm/Support/Error.h"

#include <sys/types.h>

#include <string>

namespace ompsim::sim {

using namespace llvm;
using namespace llvm::orc;
namespace proto = protocol;

/// Waits up to `Seconds` for `Pid`; returns true and its status once it has exited.
bool waitFor(pid_t Pid, double Seconds, int &Status);
/// Kills executor `Pid` and every process still in its process group (what it started).
void killExecutorGroup(pid_t Pid);

template <typename Sig, typename RetT, typename... ArgTs>
Error DeviceController::call(const char *FnName, const std::string &Context, RetT &Result,
                             const ArgTs &...Args) {
  if (auto Err = checkAlive())
    return Err;
  ExecutorAddr Fn(Fns.at(FnName));
  Error Err = Epc->callSPSWrapper<Sig>(Fn, Result, Args...);
  return diagnose(std::move(Err), Context);
}

} // namespace ompsim::sim
