// dlopen, version check and symbol resolution of plugins.
#include "PluginLoader.h"
#include "LateStaticDestructors.h"

#include "llvm/Support/Path.h"

#include "ompsim/Config.h"
#include "ompsim/Errors.h"
#include "ompsim/Trace.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <filesystem>

namespace ompsim::host {
std::string pluginPath(const std::string &Spec, const std::string &LibDir) {
  if (Spec.find('/') != std::string::npos)
    return Spec;
  return fmt::format("{}/libompsim-plugin-{}.so", LibDir, Spec);
}

std::string ompsimLibDir() {
  if (!config().LibDir.empty())
    return config().LibDir;
  Dl_info Info{};
  if (dladdr(reinterpret_cast<void *>(&ompsimLibDir), &Info) && Info.dli_fname) {
    std::filesystem::path Self = std::filesystem::absolute(Info.dli_fname);
    return Self.parent_path().parent_path().string();
  }
  return ".";
}

llvm::Expected<std::unique_ptr<Plugin>> Plugin::create(const std::string &spec, const std::string &path) {
  std::unique_ptr<Plugin> p(new Plugin());
  p->Path = path;
  p->Name = spec;
  p->Handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p->Handle)
    return makeError(fmt::format("cannot load plugin '{}' ({}): {}", spec, path, dlerror()));
  auto sym = [&](const char *Name) { return dlsym(p->Handle, Name); };

  // The version comes first: nothing else is meaningful on a mismatch.
  p->Fn.plugin_api_version =
      reinterpret_cast<decltype(p->Fn.plugin_api_version)>(sym("__tgt_rtl_plugin_api_version"));
  if (!p->Fn.plugin_api_version)
    return makeError(
        fmt::format("plugin '{}' ({}) lacks required symbol __tgt_rtl_plugin_api_version", spec, path));
  if (keepStaticsUntilExit)
    keepStaticsUntilExit(reinterpret_cast<const void *>(p->Fn.plugin_api_version));
  int32_t Version = p->Fn.plugin_api_version();
  if (Version != OMPSIM_PLUGIN_API_VERSION)
    return makeError(fmt::format("plugin '{}' ({}) implements plugin API version {}, this runtime "
                                 "needs version {}",
                                 spec, path, Version, OMPSIM_PLUGIN_API_VERSION));

#define OMPSIM_REQUIRED(field)                                                                               \
  p->Fn.field = reinterpret_cast<decltype(p->Fn.field)>(sym("__tgt_rtl_" #field));                           \
  if (!p->Fn.field)                                                                                          \
    return makeError(fmt::format("plugin '{}' ({}) lacks required symbol __tgt_rtl_" #field, spec, path));
  OMPSIM_REQUIRED(plugin_name)
  OMPSIM_REQUIRED(is_valid_binary)
  OMPSIM_REQUIRED(number_of_devices)
  OMPSIM_REQUIRED(init_device)
  OMPSIM_REQUIRED(load_binary)
  OMPSIM_REQUIRED(get_global)
  OMPSIM_REQUIRED(get_function)
  OMPSIM_REQUIRED(data_alloc)
  OMPSIM_REQUIRED(data_delete)
  OMPSIM_REQUIRED(data_submit)
  OMPSIM_REQUIRED(data_retrieve)
  OMPSIM_REQUIRED(run_target_region)
  OMPSIM_REQUIRED(last_error)
#undef OMPSIM_REQUIRED
#define OMPSIM_OPTIONAL(field)                                                                               \
  p->Fn.field = reinterpret_cast<decltype(p->Fn.field)>(sym("__tgt_rtl_" #field));
  OMPSIM_OPTIONAL(set_function_ptr_map)
  OMPSIM_OPTIONAL(data_exchange)
  OMPSIM_OPTIONAL(unload_binary)
  OMPSIM_OPTIONAL(deinit_device)
  OMPSIM_OPTIONAL(symbolize)
  OMPSIM_OPTIONAL(set_thread_limit)
  OMPSIM_OPTIONAL(init_requires)
  OMPSIM_OPTIONAL(get_globals)
  OMPSIM_OPTIONAL(last_fault)
  OMPSIM_OPTIONAL(kernel_exec_mode)
#undef OMPSIM_OPTIONAL

  if (const char *N = p->Fn.plugin_name(); N && *N)
    p->Name = N;
  p->NumDevices = p->Fn.number_of_devices();
  if (p->NumDevices < 0)
    p->NumDevices = 0;
  if (p->NumDevices == 0)
    if (const char *Why = p->Fn.last_error(-1); Why && *Why)
      p->NoDeviceReason = Why;
  OMPSIM_TRACE_EVENT(Cat::Image, "plugin")
      .str("name", p->Name)
      .str("path", trace::normalized() ? llvm::sys::path::filename(path).str() : path)
      .num("devices", p->NumDevices)
      .num("set_function_ptr_map", p->Fn.set_function_ptr_map != nullptr);
  return std::move(p);
}

Plugin::~Plugin() {
  // Plugins stay loaded until exit: device code and threads may still refer
  // to them while the process winds down.
}

std::string Plugin::lastError(int32_t LocalDevice) const {
  const char *Msg = Fn.last_error(LocalDevice);
  if (Msg && *Msg)
    return Msg;
  if (LocalDevice >= 0) {
    Msg = Fn.last_error(-1);
    if (Msg && *Msg)
      return Msg;
  }
  return fmt::format("plugin '{}' reported a failure without a message", Name);
}

} // namespace ompsim::host
