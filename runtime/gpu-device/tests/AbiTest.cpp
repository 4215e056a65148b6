//===- AbiTest.cpp - the GPU device runtime's ABI against LLVM's ----------===//
//
// The device runtime is freestanding and cannot include LLVM's headers; its
// constants and layouts are checked here, on the host, against
// llvm/Frontend/OpenMP/OMPConstants.h and the layouts stock's plugins and
// clang-22's codegen use.
//
//===----------------------------------------------------------------------===//

#include "Abi.h"

#include "llvm/Frontend/OpenMP/OMPConstants.h"
#include "llvm/Frontend/OpenMP/OMPDeviceConstants.h"

#include <gtest/gtest.h>

#include <cstddef>

using namespace ompsim::gpu;

namespace {

TEST(GpuDeviceRuntimeAbi, ExecModesAreLlvms) {
  EXPECT_EQ(uint8_t(ExecModeGeneric), uint8_t(llvm::omp::OMP_TGT_EXEC_MODE_GENERIC));
  EXPECT_EQ(uint8_t(ExecModeSpmd), uint8_t(llvm::omp::OMP_TGT_EXEC_MODE_SPMD));
  EXPECT_EQ(uint8_t(ExecModeGenericSpmd), uint8_t(llvm::omp::OMP_TGT_EXEC_MODE_GENERIC_SPMD));
}

TEST(GpuDeviceRuntimeAbi, ScheduleKindsAreLlvms) {
  using llvm::omp::OMPScheduleType;
  EXPECT_EQ(ScheduleStaticChunked, int32_t(OMPScheduleType::UnorderedStaticChunked));
  EXPECT_EQ(ScheduleStatic, int32_t(OMPScheduleType::UnorderedStatic));
  EXPECT_EQ(ScheduleDynamicChunked, int32_t(OMPScheduleType::UnorderedDynamicChunked));
  EXPECT_EQ(ScheduleGuidedChunked, int32_t(OMPScheduleType::UnorderedGuidedChunked));
  EXPECT_EQ(ScheduleRuntime, int32_t(OMPScheduleType::UnorderedRuntime));
  EXPECT_EQ(ScheduleAuto, int32_t(OMPScheduleType::UnorderedAuto));
  EXPECT_EQ(ScheduleStaticBalancedChunked, int32_t(OMPScheduleType::UnorderedStaticBalancedChunked));
  EXPECT_EQ(ScheduleDistributeStaticChunked, int32_t(OMPScheduleType::OrderedDistributeChunked));
  EXPECT_EQ(ScheduleDistributeStatic, int32_t(OMPScheduleType::OrderedDistribute));
  EXPECT_EQ(ScheduleStaticChunked + ScheduleOrderedOffset, int32_t(OMPScheduleType::OrderedStaticChunked));
  EXPECT_EQ(uint32_t(ScheduleModifierMask),
            uint32_t(OMPScheduleType::ModifierMonotonic) | uint32_t(OMPScheduleType::ModifierNonmonotonic));
}

// The kernel environment as clang-22 emits it (`<kernel>_kernel_environment`:
// { { i8, i8, i8, i32 x 6 }, ptr, ptr }) and the launch environment stock's
// plugins pass: offsets a GPU image and the runtime must agree on.
TEST(GpuDeviceRuntimeAbi, EnvironmentLayouts) {
  EXPECT_EQ(offsetof(ConfigurationEnvironmentTy, ExecMode), 2u);
  EXPECT_EQ(offsetof(ConfigurationEnvironmentTy, MaxThreads), 8u);
  EXPECT_EQ(offsetof(ConfigurationEnvironmentTy, ReductionBufferLength), 24u);
  EXPECT_EQ(sizeof(ConfigurationEnvironmentTy), 28u);
  EXPECT_EQ(offsetof(KernelEnvironmentTy, Ident), 32u);
  EXPECT_EQ(sizeof(KernelEnvironmentTy), 48u);
  EXPECT_EQ(offsetof(KernelLaunchEnvironmentTy, ReductionBuffer), 8u);
  EXPECT_EQ(offsetof(DeviceEnvironmentTy, ClockFrequency), 16u);
  EXPECT_EQ(offsetof(DeviceEnvironmentTy, IndirectCallTable), 24u);
  EXPECT_EQ(sizeof(DeviceEnvironmentTy), 48u);
  EXPECT_EQ(sizeof(IndirectCallEntry), 16u);
}

} // namespace
