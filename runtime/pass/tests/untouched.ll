; Direct calls (also through a mismatched function type), inline asm and
; intrinsics are left alone, and no translate declaration is added.
; RUN: %opt-indirect -passes=ompsim-indirect -S %s -o %t.ll
; RUN: %opt-indirect -passes='default<O0>' -S %s -o %t.o0.ll
; RUN: FileCheck %s --input-file=%t.ll
; RUN: FileCheck %s --input-file=%t.o0.ll

; CHECK-NOT: translate
; CHECK-NOT: indirect_call_lookup
; CHECK-NOT: ompsim.translated

declare i32 @callee(i32)
declare void @llvm.memset.p0.i64(ptr, i8, i64, i1)

define i32 @direct(ptr %p) {
  %a = call i32 @callee(i32 1)
  %b = call i64 @callee(i64 2)
  call void asm sideeffect "nop", ""()
  %c = call i32 asm "mov $1, $0", "=r,r"(i32 %a)
  call void @llvm.memset.p0.i64(ptr %p, i8 0, i64 8, i1 false)
  %s = add i32 %a, %c
  ret i32 %s
}

!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp-device", i32 51}
