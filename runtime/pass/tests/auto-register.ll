; Loaded as a plugin, the pass adds itself to the default pipelines at every
; level, and there it rewrites device modules only.
; RUN: %opt-indirect -passes='default<O0>' -S %s | FileCheck %s --check-prefix=DEV
; RUN: %opt-indirect -passes='default<O2>' -S %s | FileCheck %s --check-prefix=DEV
; RUN: %opt-indirect -passes='lto-pre-link<O2>' -S %s | FileCheck %s --check-prefix=DEV
; RUN: %opt-indirect -passes='default<O0>' -S %S/Inputs/host-module.ll | FileCheck %s --check-prefix=HOST
; RUN: %opt-indirect -passes='default<O2>' -S %S/Inputs/host-module.ll | FileCheck %s --check-prefix=HOST
; RUN: %opt-indirect -passes='default<O0>' -ompsim-indirect-fn=llvm -S %s | FileCheck %s --check-prefix=LLVM

; DEV: call ptr @__kmpc_target_translate_fptr(ptr %fp)
; HOST-NOT: translate
; HOST: call i32 %fp()
; HOST-NOT: translate
; LLVM: call ptr @__llvm_omp_indirect_call_lookup(ptr %fp)

define i32 @device_call(ptr %fp) {
  %r = call i32 %fp()
  ret i32 %r
}

!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp-device", i32 51}
