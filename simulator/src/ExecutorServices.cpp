//===- ExecutorServices.cpp - The SPS functions the executor serves -------===//
//
// The wrapper functions the controller calls through ORC (set-up, image
// loading, lookup, unloading, code allocation, calls, the function-pointer
// table and the translate log) and the kernel runner.
//
//===----------------------------------------------------------------------===//

#include "ExecutorServices.h"

namespace ompsim::sim::executor {

using RangeVec = std::vector<std::tuple<uint64_t, uint64_t>>;

OMPSIM_WRAPPER(setupWrapper, proto::SetupSignature,
               [](RangeVec hostRanges, uint64_t base, uint64_t size, uint64_t codeBytes,
                  std::string libDir) -> Expected<RangeVec> {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 if (d.arenaSize)
                   return makeError("device already set up");
                 RangeVec collided;
                 for (auto [b, e] : hostRanges) {
                   void *p = ::mmap(reinterpret_cast<void *>(b), e - b, PROT_NONE,
                                    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
                   if (p == MAP_FAILED || p != reinterpret_cast<void *>(b)) {
                     if (p != MAP_FAILED)
                       ::munmap(p, e - b);
                     collided.emplace_back(b, e);
                   }
                 }
                 // The controller maps the same memfd pages, so its copies to and
                 // from device memory need no round trip.
                 void *arena = ::mmap(reinterpret_cast<void *>(base), size, PROT_READ | PROT_WRITE,
                                      MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, gArenaFd,
                                      off_t(ompsim::sim::LaunchMailbox::kBytes));
                 if (arena == MAP_FAILED || arena != reinterpret_cast<void *>(base))
                   return makeError("cannot map the device arena at 0x" + Twine::utohexstr(base) + " (" +
                                    Twine(size) + " bytes): " + std::strerror(errno));
                 d.arenaBase = base;
                 d.arenaSize = size;
                 codeBytes = std::min(codeBytes, size) & ~(kPage - 1);
                 // The heap above the code region is the controller's to hand out.
                 d.code.reset(base, base + codeBytes);
                 d.libDir = libDir;
                 std::string rt = libDir + "/libompsim-device.so";
                 d.deviceRuntime = ::dlopen(rt.c_str(), RTLD_NOW | RTLD_GLOBAL);
                 if (d.deviceRuntime) {
                   gTakeTranslateLog.store(reinterpret_cast<TakeTranslateLogFn>(::dlsym(
                                               d.deviceRuntime, "__ompsim_device_take_translate_log")),
                                           std::memory_order_release);
                   d.librariesByName["libompsim-device.so"] = d.deviceRuntime;
                   d.libraries.push_back(d.deviceRuntime);
                 } else {
                   d.deviceRuntimeError = ::dlerror();
                 }
                 return collided;
               })

OMPSIM_WRAPPER(loadElfWrapper, proto::LoadElfSignature,
               [](std::vector<char> sent, uint64_t sharedAddr, uint64_t sharedSize, std::string name,
                  std::vector<std::string> provides) -> Expected<std::tuple<uint64_t, uint64_t, uint64_t>> {
                 // The controller usually copies the image into device memory
                 // (the shared arena) rather than through the socket.
                 ArrayRef<char> bytes = sent;
                 if (sent.empty() && sharedSize) {
                   DeviceState &d = DeviceState::get();
                   if (sharedAddr < d.arenaBase || sharedSize > d.arenaSize ||
                       sharedAddr - d.arenaBase > d.arenaSize - sharedSize)
                     return makeError("image " + name + ": its bytes at " + Twine::utohexstr(sharedAddr) +
                                      " are outside device memory");
                   bytes = ArrayRef<char>(reinterpret_cast<const char *>(sharedAddr), sharedSize);
                 }
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 // Device images this one links against, in NEEDED order: their
                 // symbols come before any library's, like ld.so's search scope.
                 std::vector<uint64_t> dependencies;
                 ompsim::sim::ElfLoadEnvironment env;
                 env.allocate = [&d](uint64_t size) -> Expected<uint8_t *> {
                   uint64_t a = d.code.allocate(size, kPage);
                   if (!a)
                     return makeError("code region exhausted (OMPSIM_DEVICE_MEMORY)");
                   return reinterpret_cast<uint8_t *>(a);
                 };
                 env.release = [&d](uint8_t *p) { d.code.release(reinterpret_cast<uint64_t>(p)); };
                 env.loadNeeded = [&d, &dependencies](StringRef so) -> Error {
                   auto provider = d.imageByLibraryName.find(so.str());
                   if (provider == d.imageByLibraryName.end())
                     return d.loadLibrary(so);
                   dependencies.push_back(provider->second);
                   return Error::success();
                 };
                 env.resolve = [&d, &dependencies](StringRef n) -> void * {
                   for (uint64_t h : dependencies)
                     if (uint64_t addr = d.images.at(h)->lookup(n))
                       return reinterpret_cast<void *>(addr);
                   return d.resolve(n);
                 };
                 // Parsed in place: the bytes are this call's own (received from the
                 // socket, or the scratch block the controller filled and waits on).
                 auto img = ompsim::sim::ElfImageLoader::load(bytes, name, env, /*exclusive=*/true);
                 if (!img)
                   return img.takeError();
                 uint64_t handle = d.nextImage++;
                 auto t = std::make_tuple(handle, (*img)->base(), (*img)->size());
                 d.images[handle] = std::move(*img);
                 d.imageDependencies[handle] = std::move(dependencies);
                 for (std::string &lib : provides)
                   d.imageByLibraryName.emplace(std::move(lib), handle);
                 std::fflush(nullptr);
                 return t;
               })

OMPSIM_WRAPPER(lookupWrapper, proto::LookupSignature,
               [](uint64_t handle, std::string name) -> Expected<uint64_t> {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 auto it = d.images.find(handle);
                 if (it == d.images.end())
                   return makeError("no loaded image with handle " + Twine(handle));
                 return it->second->lookup(name);
               })

OMPSIM_WRAPPER(lookupManyWrapper, proto::LookupManySignature,
               // StringRefs into the argument buffer: no string per name copied
               // out of it (registration asks for one per indirect function).
               [](uint64_t handle, std::vector<StringRef> names) -> Expected<std::vector<uint64_t>> {
                 DeviceState &d = DeviceState::get();
                 std::lock_guard<std::mutex> lock(d.mu);
                 auto it = d.images.find(handle);
                 if (it == d.images.end())
                   return makeError("no loaded image with handle " + Twine(handle));
                 std::vector<uint64_t> addrs;
                 addrs.reserve(names.size());
                 for (StringRef name : names)
                   addrs.push_back(it->second->lookup(name));
                 return addrs;
               })

OMPSIM_WRAPPER(unloadWrapper, proto::UnloadSignature, [](uint64_t handle) -> Error {
  DeviceState &d = DeviceState::get();
  std::lock_guard<std::mutex> lock(d.mu);
  auto it = d.images.find(handle);
  if (it == d.images.end())
    return makeError("no loaded image with handle " + Twine(handle));
  // Like dlclose, a library's image stays while an image linked against it does.
  for (auto &[user, deps] : d.imageDependencies)
    if (llvm::is_contained(deps, handle))
      return makeError("image " + it->second->name() + " is still needed by image " +
                       d.images.at(user)->name());
  it->second->runFini();
  d.images.erase(it);
  d.imageDependencies.erase(handle);
  std::erase_if(d.imageByLibraryName, [&](const auto &entry) { return entry.second == handle; });
  std::fflush(nullptr);
  return Error::success();
})

OMPSIM_WRAPPER(allocCodeWrapper, proto::AllocCodeSignature, [](uint64_t size, uint64_t align) -> uint64_t {
  DeviceState &d = DeviceState::get();
  std::lock_guard<std::mutex> lock(d.mu);
  return d.code.allocate(size, std::max<uint64_t>(align, kPage));
})

/// Runs `void fn(void *dyn_ptr, void *a0, ..., void *aN)` on the calling
/// thread (the device thread) with the team and thread defaults set.
Error runKernel(uint64_t fn, ArrayRef<uint64_t> args, uint32_t teams, uint32_t threads) {
  DeviceState &d = DeviceState::get();
  // Resolved once libomp is loaded (by the first image that needs it); only
  // the device thread runs kernels, so the cache needs no lock.
  static void (*setNumTeams)(int) = nullptr;
  static void (*setTeamsThreadLimit)(int) = nullptr;
  if (teams) {
    if (!setNumTeams)
      setNumTeams = reinterpret_cast<void (*)(int)>(d.resolve("omp_set_num_teams"));
    if (setNumTeams)
      setNumTeams(int(teams));
  }
  if (threads) {
    if (!setTeamsThreadLimit)
      setTeamsThreadLimit = reinterpret_cast<void (*)(int)>(d.resolve("omp_set_teams_thread_limit"));
    if (setTeamsThreadLimit)
      setTeamsThreadLimit(int(threads));
  }
  // void kernel(void *dyn_ptr, void *a0, ..., void *aN)
  //
  // Every launch comes through here, so the call description is kept for the
  // next kernel with as many arguments, and the buffers only grow: a launch
  // allocates nothing. The device thread is the only caller (see above).
  static std::vector<ffi_type *> types;
  static std::vector<void *> values, slots;
  static ffi_cif cif;
  static size_t preparedFor = SIZE_MAX; // arguments `cif` describes
  size_t n = args.size() + 1;
  if (n != preparedFor) {
    preparedFor = SIZE_MAX;
    types.assign(n, &ffi_type_pointer);
    if (ffi_prep_cif(&cif, FFI_DEFAULT_ABI, unsigned(n), &ffi_type_void, types.data()) != FFI_OK)
      return makeError("libffi cannot describe a kernel with " + Twine(args.size()) + " arguments");
    preparedFor = n;
  }
  values.resize(n);
  slots.resize(n);
  values[0] = nullptr;
  for (size_t i = 0; i < args.size(); ++i)
    values[i + 1] = reinterpret_cast<void *>(args[i]);
  for (size_t i = 0; i < n; ++i)
    slots[i] = &values[i];
  ffi_call(&cif, reinterpret_cast<void (*)()>(fn), nullptr, slots.data());
  std::fflush(nullptr);
  return Error::success();
}

OMPSIM_WRAPPER(callVoidWrapper, proto::CallVoidSignature, [](uint64_t fn) -> Error {
  reinterpret_cast<void (*)()>(fn)();
  std::fflush(nullptr);
  return Error::success();
})

OMPSIM_WRAPPER(setFptrTableWrapper, proto::SetFptrTableSignature, [](uint64_t addr, uint64_t n) -> Error {
  DeviceState &d = DeviceState::get();
  auto set = d.runtimeFn<decltype(&__ompsim_device_set_fptr_table)>("__ompsim_device_set_fptr_table");
  if (!set)
    return makeError("device runtime libompsim-device.so unavailable: " +
                     (d.deviceRuntimeError.empty() ? std::string("symbol missing") : d.deviceRuntimeError));
  if (set(reinterpret_cast<const __omp_offloading_fptr_map_ty *>(addr), n) != 0)
    return makeError("function-pointer table is not sorted by host address");
  return Error::success();
})

OMPSIM_WRAPPER(translateLogWrapper, proto::TranslateLogSignature,
               [](uint64_t cap, uint64_t max) -> Expected<std::vector<uint64_t>> {
                 DeviceState &d = DeviceState::get();
                 auto take = d.runtimeFn<decltype(&__ompsim_device_take_translate_log)>(
                     "__ompsim_device_take_translate_log");
                 auto setCap = d.runtimeFn<decltype(&__ompsim_device_set_translate_cap)>(
                     "__ompsim_device_set_translate_cap");
                 if (!take || !setCap)
                   return makeError("device runtime libompsim-device.so unavailable");
                 std::vector<ompsim_translate_record> recs(max);
                 ompsim_translate_stats st = take(recs.data(), max);
                 setCap(cap);
                 std::vector<uint64_t> out{st.hits, st.misses, st.recorded, st.dropped};
                 for (uint64_t i = 0; i < std::min(st.recorded, max); ++i) {
                   out.push_back(recs[i].host_ptr);
                   out.push_back(recs[i].result);
                   out.push_back(recs[i].hit);
                 }
                 return out;
               })

} // namespace ompsim::sim::executor
