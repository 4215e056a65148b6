// dlopen, version check and symbol resolution of plugins.
#include "PluginLoader.h"

#include "llvm/Support/Path.h"

#include "ompsim/Config.h"
#include "ompsim/Trace.h"

#include <fmt/format.h>

#include <dlfcn.h>

#include <filesystem>

namespace ompsim::host {
namespace {

llvm::Error makeError(const std::string &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), "%s", message.c_str());
}

} // namespace

std::string pluginPath(const std::string &spec, const std::string &libDir) {
  if (spec.find('/') != std::string::npos)
    return spec;
  return fmt::format("{}/libompsim-plugin-{}.so", libDir, spec);
}

std::string ompsimLibDir() {
  if (!config().LibDir.empty())
    return config().LibDir;
  Dl_info info{};
  if (dladdr(reinterpret_cast<void *>(&ompsimLibDir), &info) && info.dli_fname) {
    std::filesystem::path self = std::filesystem::absolute(info.dli_fname);
    return self.parent_path().parent_path().string();
  }
  return ".";
}

llvm::Expected<std::unique_ptr<Plugin>> Plugin::Create(const std::string &spec, const std::string &path) {
  std::unique_ptr<Plugin> p(new Plugin());
  p->path_ = path;
  p->name_ = spec;
  p->handle_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!p->handle_)
    return makeError(fmt::format("cannot load plugin '{}' ({}): {}", spec, path, dlerror()));
  auto sym = [&](const char *name) { return dlsym(p->handle_, name); };

  // The version comes first: nothing else is meaningful on a mismatch.
  p->fn_.plugin_api_version =
      reinterpret_cast<decltype(p->fn_.plugin_api_version)>(sym("__tgt_rtl_plugin_api_version"));
  if (!p->fn_.plugin_api_version)
    return makeError(
        fmt::format("plugin '{}' ({}) lacks required symbol __tgt_rtl_plugin_api_version", spec, path));
  int32_t version = p->fn_.plugin_api_version();
  if (version != OMPSIM_PLUGIN_API_VERSION)
    return makeError(fmt::format("plugin '{}' ({}) implements plugin API version {}, this runtime "
                                 "needs version {}",
                                 spec, path, version, OMPSIM_PLUGIN_API_VERSION));

#define OMPSIM_REQUIRED(field)                                                                               \
  p->fn_.field = reinterpret_cast<decltype(p->fn_.field)>(sym("__tgt_rtl_" #field));                         \
  if (!p->fn_.field)                                                                                         \
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
  p->fn_.field = reinterpret_cast<decltype(p->fn_.field)>(sym("__tgt_rtl_" #field));
  OMPSIM_OPTIONAL(set_function_ptr_map)
  OMPSIM_OPTIONAL(data_exchange)
  OMPSIM_OPTIONAL(unload_binary)
  OMPSIM_OPTIONAL(deinit_device)
  OMPSIM_OPTIONAL(symbolize)
  OMPSIM_OPTIONAL(set_thread_limit)
  OMPSIM_OPTIONAL(init_requires)
  OMPSIM_OPTIONAL(get_globals)
#undef OMPSIM_OPTIONAL

  if (const char *n = p->fn_.plugin_name(); n && *n)
    p->name_ = n;
  p->numDevices_ = p->fn_.number_of_devices();
  if (p->numDevices_ < 0)
    p->numDevices_ = 0;
  if (p->numDevices_ == 0)
    if (const char *why = p->fn_.last_error(-1); why && *why)
      p->noDeviceReason_ = why;
  OMPSIM_TRACE_EVENT(Cat::Image, "plugin")
      .str("name", p->name_)
      .str("path", trace::normalized() ? llvm::sys::path::filename(path).str() : path)
      .num("devices", p->numDevices_)
      .num("set_function_ptr_map", p->fn_.set_function_ptr_map != nullptr);
  return std::move(p);
}

Plugin::~Plugin() {
  // Plugins stay loaded until exit: device code and threads may still refer
  // to them while the process winds down.
}

std::string Plugin::lastError(int32_t localDevice) const {
  const char *msg = fn_.last_error(localDevice);
  if (msg && *msg)
    return msg;
  if (localDevice >= 0) {
    msg = fn_.last_error(-1);
    if (msg && *msg)
      return msg;
  }
  return fmt::format("plugin '{}' reported a failure without a message", name_);
}

} // namespace ompsim::host
