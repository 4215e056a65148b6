; Running the pass twice (also once per name) changes nothing the second
; time; a call through a pointer the program translated itself is not
; translated again.
; RUN: %opt-indirect -passes=ompsim-indirect -S %s -o %t.once.ll
; RUN: %opt-indirect -passes=verify -S %t.once.ll -o %t.reprinted.ll
; RUN: %opt-indirect -passes=ompsim-indirect -S %t.once.ll -o %t.twice.ll
; RUN: diff %t.reprinted.ll %t.twice.ll
; RUN: %opt-indirect -passes='ompsim-indirect<llvm>' -S %t.once.ll -o %t.other.ll
; RUN: diff %t.reprinted.ll %t.other.ll
; RUN: %opt-indirect -passes='ompsim-indirect,ompsim-indirect' -S %s | FileCheck %s
; RUN: FileCheck %s --input-file=%t.once.ll

; CHECK-LABEL: define i32 @virtual_and_plain(
; CHECK-COUNT-3: call ptr @__kmpc_target_translate_fptr(
; CHECK-NOT: call ptr @__kmpc_target_translate_fptr(
; CHECK-LABEL: define i32 @already_translated(
; CHECK-NEXT: %t = call ptr @__llvm_omp_indirect_call_lookup(ptr %fp)
; CHECK-NEXT: %r = call i32 %t()
; CHECK-NEXT: ret i32 %r

declare ptr @__llvm_omp_indirect_call_lookup(ptr)

define i32 @virtual_and_plain(ptr %obj, ptr %fp) {
  %vptr = load ptr, ptr %obj, align 8, !tbaa !3
  %f = load ptr, ptr %vptr, align 8
  %r1 = call i32 %f(ptr %obj)
  %r2 = call i32 %fp()
  %s = add i32 %r1, %r2
  ret i32 %s
}

define i32 @already_translated(ptr %fp) {
  %t = call ptr @__llvm_omp_indirect_call_lookup(ptr %fp)
  %r = call i32 %t()
  ret i32 %r
}

!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp-device", i32 51}
!1 = !{!"Simple C++ TBAA"}
!2 = !{!"vtable pointer", !1, i64 0}
!3 = !{!2, !2, i64 0}
