; A host module (no "openmp-device" flag) with an indirect call.
define i32 @host_call(ptr %fp) {
  %r = call i32 %fp()
  ret i32 %r
}
