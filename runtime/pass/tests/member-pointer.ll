; A call through a pointer to member function, as clang-22 emits it: the
; virtual branch reads the slot through the object's vtable pointer (which is
; translated), the non-virtual branch carries a function address; the phi of
; both is translated before the call.
; RUN: %opt-indirect -passes=ompsim-indirect -S %s | FileCheck %s

define i32 @call_member(ptr %obj, i64 %ptr.field, i64 %adj) {
; CHECK-LABEL: define i32 @call_member(
; CHECK: virtual:
; CHECK-NEXT: %vtable = load ptr, ptr %this, align 8, !tbaa !{{[0-9]+}}, !ompsim.translated
; CHECK-NEXT: %[[DV:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %vtable)
; CHECK-NEXT: %slot = getelementptr i8, ptr %[[DV]], i64 %ptr.field
; CHECK: nonvirtual:
; CHECK-NEXT: %direct = inttoptr i64 %ptr.field to ptr
; CHECK: join:
; CHECK-NEXT: %fn = phi ptr [ %virt.fn, %virtual ], [ %direct, %nonvirtual ]
; CHECK-NEXT: %[[F:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %fn)
; CHECK-NEXT: %r = call i32 %[[F]](ptr %this, i32 1)
entry:
  %this = getelementptr inbounds i8, ptr %obj, i64 %adj
  %bit = and i64 %ptr.field, 1
  %isvirt = icmp ne i64 %bit, 0
  br i1 %isvirt, label %virtual, label %nonvirtual
virtual:
  %vtable = load ptr, ptr %this, align 8, !tbaa !3
  %slot = getelementptr i8, ptr %vtable, i64 %ptr.field
  %slot.adj = getelementptr i8, ptr %slot, i64 -1
  %virt.fn = load ptr, ptr %slot.adj, align 8
  br label %join
nonvirtual:
  %direct = inttoptr i64 %ptr.field to ptr
  br label %join
join:
  %fn = phi ptr [ %virt.fn, %virtual ], [ %direct, %nonvirtual ]
  %r = call i32 %fn(ptr %this, i32 1)
  ret i32 %r
}

; The -O0 shape (no TBAA, the slot offset computed with sub).
define i32 @call_member_o0(ptr %this, i64 %ptr.field) {
; CHECK-LABEL: define i32 @call_member_o0(
; CHECK: %vtable = load ptr, ptr %this, align 8, !ompsim.translated
; CHECK-NEXT: %[[DV:[0-9a-z.]+]] = call ptr @__kmpc_target_translate_fptr(ptr %vtable)
; CHECK-NEXT: %off = sub i64 %ptr.field, 1
; CHECK-NEXT: %slot = getelementptr i8, ptr %[[DV]], i64 %off
entry:
  %bit = and i64 %ptr.field, 1
  %isvirt = icmp ne i64 %bit, 0
  br i1 %isvirt, label %virtual, label %nonvirtual
virtual:
  %vtable = load ptr, ptr %this, align 8
  %off = sub i64 %ptr.field, 1
  %slot = getelementptr i8, ptr %vtable, i64 %off
  %virt.fn = load ptr, ptr %slot, align 8
  br label %join
nonvirtual:
  %direct = inttoptr i64 %ptr.field to ptr
  br label %join
join:
  %fn = phi ptr [ %virt.fn, %virtual ], [ %direct, %nonvirtual ]
  %r = call i32 %fn(ptr %this, i32 1)
  ret i32 %r
}

!llvm.module.flags = !{!0}
!0 = !{i32 7, !"openmp-device", i32 51}
!1 = !{!"Simple C++ TBAA"}
!2 = !{!"vtable pointer", !1, i64 0}
!3 = !{!2, !2, i64 0}
