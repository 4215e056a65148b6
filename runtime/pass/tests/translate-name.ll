; The translate function is selectable; an unknown name is an error.
; RUN: %opt-indirect -passes='ompsim-indirect<llvm>' -S %s | FileCheck %s --check-prefix=LLVM
; RUN: %opt-indirect -passes='ompsim-indirect<kmpc>' -S %s | FileCheck %s --check-prefix=KMPC
; RUN: not %opt-indirect -passes='ompsim-indirect<cuda>' -S %s -o /dev/null 2>&1 | FileCheck %s --check-prefix=BAD

; LLVM: %[[T:[0-9a-z.]+]] = call ptr @__llvm_omp_indirect_call_lookup(ptr %fp)
; LLVM-NEXT: call i32 %[[T]]()
; LLVM-NOT: __kmpc_target_translate_fptr
; KMPC: call ptr @__kmpc_target_translate_fptr(ptr %fp)
; KMPC-NOT: __llvm_omp_indirect_call_lookup
; BAD: invalid ompsim-indirect parameter 'cuda' (expected kmpc or llvm)

define i32 @f(ptr %fp) {
  %r = call i32 %fp()
  ret i32 %r
}

!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp-device", i32 51}
