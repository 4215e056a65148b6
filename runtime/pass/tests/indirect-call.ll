; An indirect call gets its callee translated; call attributes, operand
; bundles, calling convention, tail marker and debug location are kept.
; RUN: %opt-indirect -passes=ompsim-indirect -S %s | FileCheck %s

define i32 @call_through(ptr %fp, i32 %x) !dbg !5 {
; CHECK-LABEL: define i32 @call_through(
; CHECK-NEXT: %[[T:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fp), !dbg [[LOC:![0-9]+]], !ompsim.translated
; CHECK-NEXT: %r = tail call fastcc noundef i32 %[[T]](i32 noundef signext %x) #[[ATTRS:[0-9]+]] [ "deopt"(i32 7) ], !dbg [[LOC]], !ompsim.translated
; CHECK-NEXT: ret i32 %r
  %r = tail call fastcc noundef i32 %fp(i32 noundef signext %x) #0 [ "deopt"(i32 7) ], !dbg !8
  ret i32 %r
}

define void @void_call(ptr %fp) {
; CHECK-LABEL: define void @void_call(
; CHECK: %[[T2:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fp)
; CHECK-NEXT: call void %[[T2]]()
  call void %fp()
  ret void
}

; A pointer loaded from a local array of function pointers (a GEP into an
; array type, no vtable shape): only the callee is translated.
define i32 @from_array(i64 %i) {
; CHECK-LABEL: define i32 @from_array(
; CHECK: %slot = getelementptr inbounds [4 x ptr], ptr %arr, i64 0, i64 %i
; CHECK-NEXT: %fp = load ptr, ptr %slot
; CHECK-NEXT: %[[T3:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fp)
; CHECK-NEXT: %r = call i32 %[[T3]](i32 1)
  %arr = alloca [4 x ptr]
  %slot = getelementptr inbounds [4 x ptr], ptr %arr, i64 0, i64 %i
  %fp = load ptr, ptr %slot
  %r = call i32 %fp(i32 1)
  ret i32 %r
}

; CHECK: declare ptr @__kmpc_target_translate_fptr(ptr) #[[ATTRS]]
; CHECK: attributes #[[ATTRS]] = { nounwind }
; CHECK: [[LOC]] = !DILocation(line: 3, column: 9,

attributes #0 = { nounwind }

!llvm.module.flags = !{!0, !1}
!llvm.dbg.cu = !{!2}
!0 = !{i32 7, !"openmp-device", i32 51}
!1 = !{i32 2, !"Debug Info Version", i32 3}
!2 = distinct !DICompileUnit(language: DW_LANG_C11, file: !3, producer: "test", isOptimized: false, runtimeVersion: 0, emissionKind: FullDebug)
!3 = !DIFile(filename: "t.c", directory: "/tmp")
!4 = !DISubroutineType(types: !{})
!5 = distinct !DISubprogram(name: "call_through", scope: !3, file: !3, line: 1, type: !4, unit: !2, spFlags: DISPFlagDefinition)
!8 = !DILocation(line: 3, column: 9, scope: !5)
