; For a GPU device module the default-pipeline pass picks upstream's name,
; which GPU device runtimes define.
; RUN: %opt-indirect -passes='default<O0>' -S %s | FileCheck %s

; CHECK: call ptr @__llvm_omp_indirect_call_lookup(ptr %fp)
target triple = "nvptx64-nvidia-cuda"

define i32 @device_call(ptr %fp) {
  %r = call i32 %fp()
  ret i32 %r
}

!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp-device", i32 51}
