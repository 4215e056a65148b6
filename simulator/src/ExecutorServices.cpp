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

RangeVec reserveHostRanges(const RangeVec &HostRanges) {
  RangeVec Collided;
  for (auto [b, e] : HostRanges) {
    void *P = ::mmap(reinterpret_cast<void *>(b), e - b, PROT_NONE,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_FIXED_NOREPLACE, -1, 0);
    if (P == MAP_FAILED || P != reinterpret_cast<void *>(b)) {
      if (P != MAP_FAILED)
        ::munmap(P, e - b);
      Collided.emplace_back(b, e);
    }
  }
  return Collided;
}

Error setUpDevice(uint64_t Base, uint64_t Size, uint64_t CodeBytes, const std::string &LibDir, bool Check) {
  DeviceState &D = DeviceState::get();
  std::lock_guard<std::mutex> Lock(D.Mu);
  if (D.ArenaSize)
    return makeError("device already set up");
  // The controller maps the same memfd pages, so its copies to and from
  // device memory need no round trip.
  void *Arena = ::mmap(reinterpret_cast<void *>(Base), Size, PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_NORESERVE | MAP_FIXED_NOREPLACE, GArenaFd,
                       off_t(ompsim::sim::LaunchMailbox::kBytes));
  if (Arena == MAP_FAILED || Arena != reinterpret_cast<void *>(Base))
    return makeError("cannot map the device arena at 0x" + Twine::utohexstr(Base) + " (" + Twine(Size) +
                     " bytes): " + std::strerror(errno));
  D.ArenaBase = Base;
  D.ArenaSize = Size;
  CodeBytes = std::min(CodeBytes, Size) & ~(kPage - 1);
  // The heap above the code region is the controller's to hand out.
  D.Code.reset(Base, Base + CodeBytes);
  D.LibDir = LibDir;
  std::string Rt = LibDir + "/libompsim-device.so";
  D.DeviceRuntime = ::dlopen(Rt.c_str(), RTLD_NOW | RTLD_GLOBAL);
  if (D.DeviceRuntime) {
    GTakeTranslateLog.store(
        reinterpret_cast<TakeTranslateLogFn>(::dlsym(D.DeviceRuntime, "__ompsim_device_take_translate_log")),
        std::memory_order_release);
    GDescribeAddress.store(
        reinterpret_cast<DescribeAddressFn>(::dlsym(D.DeviceRuntime, "__ompsim_device_describe_address")),
        std::memory_order_release);
    GCheckedAccess.store(
        reinterpret_cast<CheckedAccessFn>(::dlsym(D.DeviceRuntime, "__ompsim_device_checked_access")),
        std::memory_order_release);
    if (Check)
      if (auto SetCheck = reinterpret_cast<decltype(&__ompsim_device_set_check)>(
              ::dlsym(D.DeviceRuntime, "__ompsim_device_set_check")))
        SetCheck(1, Base, Size);
    // The runtime's stops reach the controller, which names the kernel.
    if (auto SetStop = reinterpret_cast<decltype(&__ompsim_device_set_stop_handler)>(
            ::dlsym(D.DeviceRuntime, "__ompsim_device_set_stop_handler")))
      SetStop(&deviceStop);
    D.LibrariesByName["libompsim-device.so"] = D.DeviceRuntime;
    D.Libraries.push_back(D.DeviceRuntime);
  } else {
    D.DeviceRuntimeError = ::dlerror();
  }
  return Error::success();
}

void runStartSetup(ompsim::sim::LaunchMailbox::StartSetup &S, const std::string &LibDir) {
  using Mailbox = ompsim::sim::LaunchMailbox;
  RangeVec Ranges;
  for (uint32_t I = 0; I < std::min(S.NumRanges, Mailbox::kMaxSetupRanges); ++I)
    Ranges.emplace_back(S.Ranges[I][0], S.Ranges[I][1]);
  RangeVec Collided = reserveHostRanges(Ranges);
  if (Error Err = setUpDevice(S.ArenaBase, S.ArenaSize, S.CodeBytes, LibDir, S.Check != 0)) {
    std::string Why = toString(std::move(Err));
    S.MessageLength = uint32_t(std::min<size_t>(Why.size(), sizeof S.Message));
    std::memcpy(S.Message, Why.data(), S.MessageLength);
    S.Result.store(2, std::memory_order_release);
    return;
  }
  S.NumCollided = uint32_t(Collided.size());
  for (size_t I = 0; I < Collided.size(); ++I) {
    S.Ranges[I][0] = std::get<0>(Collided[I]);
    S.Ranges[I][1] = std::get<1>(Collided[I]);
  }
  S.Result.store(1, std::memory_order_release);
}

OMPSIM_WRAPPER(reserveWrapper, proto::ReserveSignature,
               [](RangeVec HostRanges) -> RangeVec { return reserveHostRanges(HostRanges); })

OMPSIM_WRAPPER(loadElfWrapper, proto::LoadElfSignature,
               [](std::vector<char> Sent, uint64_t SharedAddr, uint64_t SharedSize, std::string Name,
                  std::vector<std::string> Provides) -> Expected<std::tuple<uint64_t, uint64_t, uint64_t>> {
                 // The controller usually copies the image into device memory
                 // (the shared arena) rather than through the socket.
                 ArrayRef<char> Bytes = Sent;
                 if (Sent.empty() && SharedSize) {
                   DeviceState &D = DeviceState::get();
                   if (SharedAddr < D.ArenaBase || SharedSize > D.ArenaSize ||
                       SharedAddr - D.ArenaBase > D.ArenaSize - SharedSize)
                     return makeError("image " + Name + ": its bytes at " + Twine::utohexstr(SharedAddr) +
                                      " are outside device memory");
                   Bytes = ArrayRef<char>(reinterpret_cast<const char *>(SharedAddr), SharedSize);
                 }
                 DeviceState &D = DeviceState::get();
                 std::lock_guard<std::mutex> Lock(D.Mu);
                 // Device images this one links against, in NEEDED order: their
                 // symbols come before any library's, like ld.so's search scope.
                 std::vector<uint64_t> Dependencies;
                 ompsim::sim::ElfLoadEnvironment Env;
                 Env.Allocate = [&D](uint64_t Size) -> Expected<uint8_t *> {
                   uint64_t A = D.Code.allocate(Size, kPage);
                   if (!A)
                     return makeError("code region exhausted (OMPSIM_DEVICE_MEMORY)");
                   return reinterpret_cast<uint8_t *>(A);
                 };
                 Env.Release = [&D](uint8_t *P) { D.Code.release(reinterpret_cast<uint64_t>(P)); };
                 Env.LoadNeeded = [&D, &Dependencies](StringRef So) -> Error {
                   auto Provider = D.ImageByLibraryName.find(So.str());
                   if (Provider == D.ImageByLibraryName.end())
                     return D.loadLibrary(So);
                   Dependencies.push_back(Provider->second);
                   return Error::success();
                 };
                 Env.Resolve = [&D, &Dependencies](StringRef N) -> void * {
                   for (uint64_t H : Dependencies)
                     if (uint64_t Addr = D.Images.at(H)->lookup(N))
                       return reinterpret_cast<void *>(Addr);
                   return D.resolve(N);
                 };
                 // Parsed in place: the bytes are this call's own (received from the
                 // socket, or the scratch block the controller filled and waits on).
                 auto Img = ompsim::sim::ElfImageLoader::load(Bytes, Name, Env, /*exclusive=*/true);
                 if (!Img)
                   return Img.takeError();
                 uint64_t Handle = D.NextImage++;
                 auto T = std::make_tuple(Handle, (*Img)->base(), (*Img)->size());
                 D.Images[Handle] = std::move(*Img);
                 D.ImageDependencies[Handle] = std::move(Dependencies);
                 for (std::string &Lib : Provides)
                   D.ImageByLibraryName.emplace(std::move(Lib), Handle);
                 std::fflush(nullptr);
                 return T;
               })

OMPSIM_WRAPPER(lookupWrapper, proto::LookupSignature,
               [](uint64_t Handle, std::string Name) -> Expected<uint64_t> {
                 DeviceState &D = DeviceState::get();
                 std::lock_guard<std::mutex> Lock(D.Mu);
                 auto It = D.Images.find(Handle);
                 if (It == D.Images.end())
                   return makeError("no loaded image with handle " + Twine(Handle));
                 return It->second->lookup(Name);
               })

OMPSIM_WRAPPER(lookupManyWrapper, proto::LookupManySignature,
               // StringRefs into the argument buffer: no string per name copied
               // out of it (registration asks for one per indirect function).
               [](uint64_t Handle, std::vector<StringRef> Names) -> Expected<std::vector<uint64_t>> {
                 DeviceState &D = DeviceState::get();
                 std::lock_guard<std::mutex> Lock(D.Mu);
                 auto It = D.Images.find(Handle);
                 if (It == D.Images.end())
                   return makeError("no loaded image with handle " + Twine(Handle));
                 std::vector<uint64_t> Addrs;
                 Addrs.reserve(Names.size());
                 for (StringRef Name : Names)
                   Addrs.push_back(It->second->lookup(Name));
                 return Addrs;
               })

OMPSIM_WRAPPER(unloadWrapper, proto::UnloadSignature, [](uint64_t Handle) -> Error {
  DeviceState &D = DeviceState::get();
  std::lock_guard<std::mutex> Lock(D.Mu);
  auto It = D.Images.find(Handle);
  if (It == D.Images.end())
    return makeError("no loaded image with handle " + Twine(Handle));
  // Like dlclose, a library's image stays while an image linked against it does.
  for (auto &[user, deps] : D.ImageDependencies)
    if (llvm::is_contained(deps, Handle))
      return makeError("image " + It->second->name() + " is still needed by image " +
                       D.Images.at(user)->name());
  It->second->runFini();
  D.Images.erase(It);
  D.ImageDependencies.erase(Handle);
  std::erase_if(D.ImageByLibraryName, [&](const auto &Entry) { return Entry.second == Handle; });
  std::fflush(nullptr);
  return Error::success();
})

OMPSIM_WRAPPER(allocCodeWrapper, proto::AllocCodeSignature, [](uint64_t Size, uint64_t Align) -> uint64_t {
  DeviceState &D = DeviceState::get();
  std::lock_guard<std::mutex> Lock(D.Mu);
  return D.Code.allocate(Size, std::max<uint64_t>(Align, kPage));
})

TeamDefaults GTeamDefaults;

void captureTeamDefaults(const char *MaxThreads) {
  auto Positive = [](const char *Name) {
    const char *V = std::getenv(Name);
    if (!V || !*V)
      return 0;
    char *End = nullptr;
    long N = std::strtol(V, &End, 10);
    return *End || N <= 0 || N > INT32_MAX ? 0 : int(N);
  };
  TeamDefaults &T = GTeamDefaults;
  T.UserNumThreads = std::getenv("OMP_NUM_THREADS") != nullptr;
  T.NumTeams = Positive("OMP_NUM_TEAMS");
  T.TeamsThreadLimit = Positive("OMP_TEAMS_THREAD_LIMIT");
  cpu_set_t Set;
  if (::sched_getaffinity(0, sizeof Set, &Set) == 0)
    T.Processors = std::max(CPU_COUNT(&Set), 1);
  ::setenv("OMP_NUM_THREADS", MaxThreads, /*overwrite=*/0);
}

/// Runs `void fn(void *dyn_ptr, void *a0, ..., void *aN)` on the calling
/// thread (a device thread) with the team and thread defaults set, through
/// the device runtime, which runs a GPU-ABI kernel once per team. Several
/// device threads call it at once (one per launch slot).
Error runKernel(uint64_t Fn, ArrayRef<uint64_t> Args, uint32_t Teams, uint32_t Threads, int32_t Device,
                const LaunchOptions &Options) {
  DeviceState &D = DeviceState::get();
  // Resolved once libomp is loaded (by the first image that needs it); the
  // device threads of several launch slots may ask at once.
  auto Resolve = [&D](std::atomic<void *> &Cache, const char *Name) {
    void *F = Cache.load(std::memory_order_acquire);
    if (!F) {
      std::lock_guard<std::mutex> Lock(D.Mu);
      F = D.resolve(Name);
      Cache.store(F, std::memory_order_release);
    }
    return F;
  };
  static std::atomic<void *> SetNumTeams{nullptr}, SetTeamsThreadLimit{nullptr}, SetNumThreads{nullptr},
      SetDefaults{nullptr};
  // libomp keeps nteams-var, teams-thread-limit-var and the nthreads cap
  // process-wide: each is written only when it changes, so that launches
  // running at once with the same settings (the common case) never write
  // them together. Launches running at once with different settings may see
  // each other's (README).
  static std::atomic<int> LastTeams{0}, LastTeamThreads{0}, LastCap{0};
  auto SetIfChanged = [&](std::atomic<void *> &Cache, const char *Name, std::atomic<int> &Last, int Value) {
    if (Last.load(std::memory_order_relaxed) == Value)
      return;
    if (auto *F = reinterpret_cast<void (*)(int)>(Resolve(Cache, Name))) {
      F(Value);
      Last.store(Value, std::memory_order_relaxed);
    }
  };
  // Every launch sets libomp's team ICVs, so one launch's clauses never
  // carry over to the next: unspecified, they are libomp's own defaults (the
  // user's OMP_NUM_TEAMS or 1 team, OMP_TEAMS_THREAD_LIMIT or the CPUs
  // shared among the teams).
  const TeamDefaults &TD = GTeamDefaults;
  int NumTeams = Teams ? int(std::min<uint32_t>(Teams, INT32_MAX)) : (TD.NumTeams ? TD.NumTeams : 1);
  int TeamThreads = Threads
                        ? int(std::min<uint32_t>(Threads, INT32_MAX))
                        : (TD.TeamsThreadLimit ? TD.TeamsThreadLimit : std::max(TD.Processors / NumTeams, 1));
  SetIfChanged(SetNumTeams, "omp_set_num_teams", LastTeams, NumTeams);
  SetIfChanged(SetTeamsThreadLimit, "omp_set_teams_thread_limit", LastTeamThreads, TeamThreads);
  // A parallel region directly in the kernel (target parallel) gets the
  // launch's threads, else the CPUs, libomp's default; a user's
  // OMP_NUM_THREADS stays in force.
  if (!TD.UserNumThreads) {
    // The launch's teams share the device's thread budget: libomp caps each
    // team's threads at its global nthreads-var, which kmp_set_defaults
    // changes between launches (only when it has to).
    int Cap = std::max(TD.ThreadBudget / NumTeams, 1);
    if (LastCap.load(std::memory_order_relaxed) != Cap) {
      if (auto *F = reinterpret_cast<void (*)(const char *)>(Resolve(SetDefaults, "kmp_set_defaults"))) {
        std::string Setting = "OMP_NUM_THREADS=" + std::to_string(Cap);
        F(Setting.c_str());
        LastCap.store(Cap, std::memory_order_relaxed);
      }
    }
    // nthreads-var of this device thread (libomp keeps it per thread).
    if (auto *F = reinterpret_cast<void (*)(int)>(Resolve(SetNumThreads, "omp_set_num_threads")))
      F(std::min(Threads ? int(std::min<uint32_t>(Threads, INT32_MAX)) : TD.Processors, Cap));
  }
  // void kernel(void *dyn_ptr, void *a0, ..., void *aN)
  //
  // Every launch comes through here, so each device thread keeps the call
  // description for its next kernel with as many arguments, and the buffers
  // only grow: a launch allocates nothing.
  thread_local std::vector<ffi_type *> Types;
  thread_local std::vector<void *> Values, Slots;
  thread_local ffi_cif Cif;
  thread_local size_t PreparedFor = SIZE_MAX; // arguments `Cif` describes
  size_t N = Args.size() + 1;
  if (N != PreparedFor) {
    PreparedFor = SIZE_MAX;
    Types.assign(N, &ffi_type_pointer);
    if (ffi_prep_cif(&Cif, FFI_DEFAULT_ABI, unsigned(N), &ffi_type_void, Types.data()) != FFI_OK)
      return makeError("libffi cannot describe a kernel with " + Twine(Args.size()) + " arguments");
    PreparedFor = N;
  }
  Values.resize(N);
  Slots.resize(N);
  Values[0] = nullptr;
  for (size_t I = 0; I < Args.size(); ++I)
    Values[I + 1] = reinterpret_cast<void *>(Args[I]);
  for (size_t I = 0; I < N; ++I)
    Slots[I] = &Values[I];
  // Team threads call the kernel at once: ffi_call only reads the description
  // (the launching thread's) and the argument slots. A GPU image's kernel is
  // called by every thread of every block: with few arguments (all of them
  // pointers), by a plain call of that many.
  struct KernelCall {
    ffi_cif *Cif;
    void (*Fn)();
    void **Slots;
    void *const *Values;
    size_t N;
  } Call{&Cif, reinterpret_cast<void (*)()>(Fn), Slots.data(), Values.data(), N};
  auto Invoke = [](void *Ctx) {
    auto *C = static_cast<KernelCall *>(Ctx);
    void *const *V = C->Values;
    using P = void *;
    switch (C->N) {
    case 1:
      return reinterpret_cast<void (*)(P)>(C->Fn)(V[0]);
    case 2:
      return reinterpret_cast<void (*)(P, P)>(C->Fn)(V[0], V[1]);
    case 3:
      return reinterpret_cast<void (*)(P, P, P)>(C->Fn)(V[0], V[1], V[2]);
    case 4:
      return reinterpret_cast<void (*)(P, P, P, P)>(C->Fn)(V[0], V[1], V[2], V[3]);
    case 5:
      return reinterpret_cast<void (*)(P, P, P, P, P)>(C->Fn)(V[0], V[1], V[2], V[3], V[4]);
    case 6:
      return reinterpret_cast<void (*)(P, P, P, P, P, P)>(C->Fn)(V[0], V[1], V[2], V[3], V[4], V[5]);
    default:
      ffi_call(C->Cif, C->Fn, nullptr, C->Slots);
    }
  };
  static auto RunKernel = D.runtimeFn<decltype(&__ompsim_device_run_kernel)>("__ompsim_device_run_kernel");
  if (RunKernel) {
    ompsim_kernel_launch Launch{Device,
                                Teams,
                                Threads,
                                0,
                                Invoke,
                                &Call,
                                {Options.TeamsYZ[0], Options.TeamsYZ[1]},
                                {Options.ThreadsYZ[0], Options.ThreadsYZ[1]},
                                Options.GpuWarpSize,
                                Options.Bare,
                                Options.DynamicSharedBytes};
    RunKernel(&Launch);
  } else {
    Invoke(&Call);
  }
  std::fflush(nullptr);
  return Error::success();
}

OMPSIM_WRAPPER(callVoidWrapper, proto::CallVoidSignature, [](uint64_t Fn) -> Error {
  reinterpret_cast<void (*)()>(Fn)();
  std::fflush(nullptr);
  return Error::success();
})

OMPSIM_WRAPPER(setFptrTableWrapper, proto::SetFptrTableSignature, [](uint64_t Addr, uint64_t N) -> Error {
  DeviceState &D = DeviceState::get();
  auto Set = D.runtimeFn<decltype(&__ompsim_device_set_fptr_table)>("__ompsim_device_set_fptr_table");
  if (!Set)
    return makeError("device runtime libompsim-device.so unavailable: " +
                     (D.DeviceRuntimeError.empty() ? std::string("symbol missing") : D.DeviceRuntimeError));
  if (Set(reinterpret_cast<const __omp_offloading_fptr_map_ty *>(Addr), N) != 0)
    return makeError("function-pointer table is not sorted by host address");
  return Error::success();
})

OMPSIM_WRAPPER(protectWrapper, proto::ProtectSignature,
               [](std::vector<std::tuple<uint64_t, uint64_t, bool>> Changes) -> Error {
                 DeviceState &D = DeviceState::get();
                 for (auto [Begin, End, Accessible] : Changes) {
                   if (Begin < D.ArenaBase || End > D.ArenaBase + D.ArenaSize || End < Begin)
                     return makeError("cannot change the access of pages outside the device arena");
                   // Past vm.max_map_count a change fails: the block then
                   // simply has no guard, which changes no result.
                   ::mprotect(reinterpret_cast<void *>(Begin), End - Begin,
                              Accessible ? PROT_READ | PROT_WRITE : PROT_NONE);
                 }
                 return Error::success();
               })

OMPSIM_WRAPPER(translateLogWrapper, proto::TranslateLogSignature,
               [](uint64_t Cap, uint64_t Max) -> Expected<std::vector<uint64_t>> {
                 DeviceState &D = DeviceState::get();
                 auto Take = D.runtimeFn<decltype(&__ompsim_device_take_translate_log)>(
                     "__ompsim_device_take_translate_log");
                 auto SetCap = D.runtimeFn<decltype(&__ompsim_device_set_translate_cap)>(
                     "__ompsim_device_set_translate_cap");
                 if (!Take || !SetCap)
                   return makeError("device runtime libompsim-device.so unavailable");
                 std::vector<ompsim_translate_record> Recs(Max);
                 ompsim_translate_stats St = Take(Recs.data(), Max);
                 SetCap(Cap);
                 std::vector<uint64_t> Out{St.hits, St.misses, St.recorded, St.dropped};
                 for (uint64_t I = 0; I < std::min(St.recorded, Max); ++I) {
                   Out.push_back(Recs[I].host_ptr);
                   Out.push_back(Recs[I].result);
                   Out.push_back(Recs[I].hit);
                 }
                 return Out;
               })

} // namespace ompsim::sim::executor
