// ompsim: one way to make an llvm::Error from a message.
#pragma once

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

namespace ompsim {

/// An llvm::Error carrying `Message` as it is (a '%' in it is no format).
inline llvm::Error makeError(const llvm::Twine &Message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), Message);
}

} // namespace ompsim
