// ompsim runtime: loading plugins that implement plugin_api.h.
#pragma once

#include "ompsim/plugin_api.h"

#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace ompsim::host {

/// The entry points of one loaded plugin. Required ones are never null;
/// optional ones are null when the plugin lacks them.
// The members are named after the C entry points they hold: OMPSIM_REQUIRED
// stringifies a member's name into __tgt_rtl_<name>.
// NOLINTBEGIN(readability-identifier-naming)
struct PluginFunctions {
  decltype(&__tgt_rtl_plugin_api_version) plugin_api_version = nullptr;
  decltype(&__tgt_rtl_plugin_name) plugin_name = nullptr;
  decltype(&__tgt_rtl_is_valid_binary) is_valid_binary = nullptr;
  decltype(&__tgt_rtl_number_of_devices) number_of_devices = nullptr;
  decltype(&__tgt_rtl_init_device) init_device = nullptr;
  decltype(&__tgt_rtl_load_binary) load_binary = nullptr;
  decltype(&__tgt_rtl_get_global) get_global = nullptr;
  decltype(&__tgt_rtl_get_function) get_function = nullptr;
  decltype(&__tgt_rtl_data_alloc) data_alloc = nullptr;
  decltype(&__tgt_rtl_data_delete) data_delete = nullptr;
  decltype(&__tgt_rtl_data_submit) data_submit = nullptr;
  decltype(&__tgt_rtl_data_retrieve) data_retrieve = nullptr;
  decltype(&__tgt_rtl_run_target_region) run_target_region = nullptr;
  decltype(&__tgt_rtl_last_error) last_error = nullptr;
  // optional
  decltype(&__tgt_rtl_set_function_ptr_map) set_function_ptr_map = nullptr;
  decltype(&__tgt_rtl_data_exchange) data_exchange = nullptr;
  decltype(&__tgt_rtl_unload_binary) unload_binary = nullptr;
  decltype(&__tgt_rtl_deinit_device) deinit_device = nullptr;
  decltype(&__tgt_rtl_symbolize) symbolize = nullptr;
  decltype(&__tgt_rtl_set_thread_limit) set_thread_limit = nullptr;
  decltype(&__tgt_rtl_init_requires) init_requires = nullptr;
  decltype(&__tgt_rtl_get_globals) get_globals = nullptr;
  decltype(&__tgt_rtl_last_fault) last_fault = nullptr;
  decltype(&__tgt_rtl_kernel_exec_mode) kernel_exec_mode = nullptr;
};
// NOLINTEND(readability-identifier-naming)

/// One dlopen'ed plugin.
class Plugin {
public:
  /// Loads the plugin at `path` (shown as `Spec` in messages): checks the API
  /// version first, then resolves the required set (naming the first missing
  /// symbol) and the optional set, and asks for its device count.
  static llvm::Expected<std::unique_ptr<Plugin>> create(const std::string &Spec, const std::string &Path);
  ~Plugin();
  Plugin(const Plugin &) = delete;
  Plugin &operator=(const Plugin &) = delete;

  const PluginFunctions &fn() const { return Fn; }
  /// The plugin's own name (__tgt_rtl_plugin_name) or its spec.
  const std::string &name() const { return Name; }
  const std::string &path() const { return Path; }
  int32_t numberOfDevices() const { return NumDevices; }
  /// Why the plugin reported no devices, in its own words ("" when it has
  /// devices or gave no reason).
  const std::string &noDeviceReason() const { return NoDeviceReason; }
  /// The plugin's last error for `LocalDevice` as one line ("" when none).
  std::string lastError(int32_t LocalDevice) const;

private:
  Plugin() = default;
  void *Handle = nullptr;
  std::string Name, Path;
  int32_t NumDevices = 0;
  std::string NoDeviceReason;
  PluginFunctions Fn;
};

/// Resolves OMPSIM_PLUGINS-style names to library paths: a value containing
/// '/' is a path, else `<libDir>/libompsim-plugin-<name>.so`.
std::string pluginPath(const std::string &Spec, const std::string &LibDir);

/// Directory holding ompsim's libraries: OMPSIM_LIB_DIR if set, else the
/// parent of the directory that holds this runtime (the runtime lives in
/// <build>/lib/runtime, the plugins in <build>/lib).
std::string ompsimLibDir();

} // namespace ompsim::host
