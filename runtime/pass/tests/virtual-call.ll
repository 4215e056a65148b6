; Virtual calls: the vtable pointer loaded from the object is translated
; before the slot is read (so a host object's vptr reaches the device
; vtable), and the callee read from the slot is translated too (a miss for a
; device function, returned unchanged).
; RUN: %opt-indirect -passes=ompsim-indirect -S %s | FileCheck %s

; Optimised shape: the vptr load carries the "vtable pointer" TBAA tag and the
; vptr is shared by two calls (it is translated once, all uses rewired).
define i32 @o1_two_slots(ptr %obj) {
; CHECK-LABEL: define i32 @o1_two_slots(
; CHECK-NEXT: %vptr = load ptr, ptr %obj, align 8, !tbaa !{{[0-9]+}}, !ompsim.translated
; CHECK-NEXT: %[[DV:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %vptr)
; CHECK-NEXT: %f = load ptr, ptr %[[DV]], align 8
; CHECK-NEXT: %[[F:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %f)
; CHECK-NEXT: %r1 = call i32 %[[F]](ptr %obj, i32 3)
; CHECK-NEXT: %slot1 = getelementptr inbounds nuw i8, ptr %[[DV]], i64 8
; CHECK-NEXT: %g = load ptr, ptr %slot1
; CHECK-NEXT: %[[G:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %g)
; CHECK-NEXT: %r2 = call i32 %[[G]](ptr %obj, i32 4)
; CHECK-NOT: __kmpc_target_translate_fptr(ptr %vptr)
  %vptr = load ptr, ptr %obj, align 8, !tbaa !3
  %f = load ptr, ptr %vptr, align 8
  %r1 = call i32 %f(ptr %obj, i32 3)
  %slot1 = getelementptr inbounds nuw i8, ptr %vptr, i64 8
  %g = load ptr, ptr %slot1, align 8
  %r2 = call i32 %g(ptr %obj, i32 4)
  %s = add i32 %r1, %r2
  ret i32 %s
}

; -O0 shape: no TBAA; the object pointer comes from an alloca and the slot is
; indexed as an array of pointers.
define i32 @o0_shape(ptr %this.in) {
; CHECK-LABEL: define i32 @o0_shape(
; CHECK: %vtable = load ptr, ptr %this, align 8, !ompsim.translated
; CHECK-NEXT: %[[DV:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %vtable)
; CHECK-NEXT: %vfn = getelementptr inbounds ptr, ptr %[[DV]], i64 1
; CHECK-NEXT: %fn = load ptr, ptr %vfn
; CHECK-NEXT: %[[F:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fn)
; CHECK-NEXT: %r = call i32 %[[F]](ptr %this, i32 3)
  %this.addr = alloca ptr
  store ptr %this.in, ptr %this.addr
  %this = load ptr, ptr %this.addr
  %vtable = load ptr, ptr %this, align 8
  %vfn = getelementptr inbounds ptr, ptr %vtable, i64 1
  %fn = load ptr, ptr %vfn, align 8
  %r = call i32 %fn(ptr %this, i32 3)
  ret i32 %r
}

; A pointer loaded through a struct field at -O0 is not a vtable read: only
; the callee is translated.
%struct.Ops = type { i32, ptr }
define i32 @struct_member(ptr %ops.addr) {
; CHECK-LABEL: define i32 @struct_member(
; CHECK: %ops = load ptr, ptr %ops.addr, align 8
; CHECK-NEXT: %field = getelementptr inbounds %struct.Ops, ptr %ops, i32 0, i32 1
; CHECK-NEXT: %fp = load ptr, ptr %field
; CHECK-NEXT: %[[F:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fp)
; CHECK-NEXT: %r = call i32 %[[F]](i32 1)
  %ops = load ptr, ptr %ops.addr, align 8
  %field = getelementptr inbounds %struct.Ops, ptr %ops, i32 0, i32 1
  %fp = load ptr, ptr %field, align 8
  %r = call i32 %fp(i32 1)
  ret i32 %r
}

; A pointer load with a non-vtable TBAA tag is not a vtable pointer.
define i32 @tagged_pointer_table(ptr %tbl.addr) {
; CHECK-LABEL: define i32 @tagged_pointer_table(
; CHECK-NEXT: %tbl = load ptr, ptr %tbl.addr, align 8, !tbaa !{{[0-9]+}}{{$}}
; CHECK-NEXT: %fp = load ptr, ptr %tbl
; CHECK-NEXT: %[[F:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fp)
  %tbl = load ptr, ptr %tbl.addr, align 8, !tbaa !6
  %fp = load ptr, ptr %tbl, align 8
  %r = call i32 %fp(i32 1)
  ret i32 %r
}

!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp-device", i32 51}
!1 = !{!"Simple C++ TBAA"}
!2 = !{!"vtable pointer", !1, i64 0}
!3 = !{!2, !2, i64 0}
!4 = !{!"omnipotent char", !1, i64 0}
!5 = !{!"any pointer", !4, i64 0}
!6 = !{!5, !5, i64 0}
