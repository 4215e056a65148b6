//===- DeviceControllerImpl.h - DeviceController's shared helpers -*- C++ -*-===//
//
// What the DeviceController*.cpp files share: not part of the public header.
//
//===----------------------------------------------------------------------===//

#pragma once

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

inline Error makeError(const Twine &msg) { return createStringError(inconvertibleErrorCode(), msg); }

/// Waits up to `seconds` for `pid`; returns true and its status once it has exited.
bool waitFor(pid_t pid, double seconds, int &status);

template <typename Sig, typename RetT, typename... ArgTs>
Error DeviceController::call(const char *fnName, const std::string &context, RetT &result,
                             const ArgTs &...args) {
  if (auto err = checkAlive())
    return err;
  ExecutorAddr fn(fns_.at(fnName));
  Error err = epc_->callSPSWrapper<Sig>(fn, result, args...);
  return diagnose(std::move(err), context);
}

} // namespace ompsim::sim
