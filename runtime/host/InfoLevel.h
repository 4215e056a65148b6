// ompsim runtime: the LIBOMPTARGET_INFO bit mask, changeable at run time.
#pragma once

#include <cstdint>

namespace ompsim::host {

/// The info bits in force: LIBOMPTARGET_INFO until __tgt_set_info_flag
/// replaces them.
uint32_t infoLevel();

/// Replaces the info bits (__tgt_set_info_flag).
void setInfoLevel(uint32_t Bits);

} // namespace ompsim::host
