; AMDGPU keeps vtables in the global address space: the vtable pointer is
; cast to a generic pointer for the lookup and the result cast back, so the
; slot load keeps its operand type (the module must stay valid IR).
; RUN: %opt-indirect -passes='ompsim-indirect<llvm>' -S %s | FileCheck %s
; RUN: %opt-indirect -passes='ompsim-indirect<llvm>,verify' -disable-output %s

; CHECK-LABEL: define i32 @virtual_call(
; CHECK: %vtable = load ptr addrspace(1), ptr %obj
; CHECK-NEXT: [[GEN:%.*]] = addrspacecast ptr addrspace(1) %vtable to ptr
; CHECK-NEXT: [[DEV:%.*]] = call ptr @__llvm_omp_indirect_call_lookup(ptr [[GEN]])
; CHECK-NEXT: [[BACK:%.*]] = addrspacecast ptr [[DEV]] to ptr addrspace(1)
; CHECK: %slot = getelementptr inbounds ptr, ptr addrspace(1) [[BACK]], i64 1
; CHECK: %fn = load ptr, ptr addrspace(1) %slot
; CHECK: [[FN:%.*]] = call ptr @__llvm_omp_indirect_call_lookup(ptr %fn)
; CHECK: call i32 [[FN]](ptr %obj)
target triple = "amdgcn-amd-amdhsa"

define i32 @virtual_call(ptr %obj) {
  %vtable = load ptr addrspace(1), ptr %obj, align 8, !tbaa !1
  %slot = getelementptr inbounds ptr, ptr addrspace(1) %vtable, i64 1
  %fn = load ptr, ptr addrspace(1) %slot, align 8
  %r = call i32 %fn(ptr %obj)
  ret i32 %r
}

!1 = !{!2, !2, i64 0}
!2 = !{!"vtable pointer", !3, i64 0}
!3 = !{!"Simple C++ TBAA"}
