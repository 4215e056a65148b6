; An indirect invoke gets its callee translated before it; the unwind edge
; and the normal edge stay as they were.
; RUN: %opt-indirect -passes=ompsim-indirect -S %s | FileCheck %s

declare i32 @__gxx_personality_v0(...)

define i32 @invoke_through(ptr %fp) personality ptr @__gxx_personality_v0 {
; CHECK-LABEL: define i32 @invoke_through(
; CHECK: %[[T:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fp)
; CHECK-NEXT: %r = invoke i32 %[[T]](i32 5)
; CHECK-NEXT: to label %ok unwind label %lp
entry:
  %r = invoke i32 %fp(i32 5) to label %ok unwind label %lp
ok:
  ret i32 %r
lp:
  %l = landingpad { ptr, i32 } cleanup
  ret i32 -1
}

; The callee is a phi: the translate call goes after the phis, before the invoke.
define i32 @invoke_phi(i1 %c, ptr %a, ptr %b) personality ptr @__gxx_personality_v0 {
; CHECK-LABEL: define i32 @invoke_phi(
; CHECK: join:
; CHECK-NEXT: %fp = phi ptr [ %a, %left ], [ %b, %right ]
; CHECK-NEXT: %[[T:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fp)
; CHECK-NEXT: %r = invoke i32 %[[T]]()
entry:
  br i1 %c, label %left, label %right
left:
  br label %join
right:
  br label %join
join:
  %fp = phi ptr [ %a, %left ], [ %b, %right ]
  %r = invoke i32 %fp() to label %ok unwind label %lp
ok:
  ret i32 %r
lp:
  %l = landingpad { ptr, i32 } cleanup
  ret i32 -1
}

!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp-device", i32 51}
