# lit configuration for OmpsimIndirect's IR tests (opt + FileCheck).
#
# Run from a build tree (lit <build>/runtime/pass/tests), or directly on the
# source folder with OMPSIM_PASS_PLUGIN and LLVM_TOOLS_DIR in the environment.
import os

import lit.formats

config.name = "OmpsimIndirect"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll"]
config.excludes = ["Inputs"]

if not hasattr(config, "ompsim_pass_plugin"):
    config.ompsim_pass_plugin = os.environ["OMPSIM_PASS_PLUGIN"]
    config.llvm_tools_dir = os.environ.get("LLVM_TOOLS_DIR", "/usr/lib/llvm-22/bin")
    config.ompsim_pass_test_dir = os.path.dirname(os.path.abspath(__file__))
    config.ompsim_pass_test_exec_dir = os.environ.get("LIT_EXEC_DIR", "/tmp/ompsim-pass-lit")
config.test_source_root = config.ompsim_pass_test_dir
config.test_exec_root = config.ompsim_pass_test_exec_dir

if not os.path.exists(config.ompsim_pass_plugin):
    lit_config.fatal("pass plugin not built: %s" % config.ompsim_pass_plugin)

tools = config.llvm_tools_dir
config.substitutions.append(("%opt-indirect",
                             "%s/opt -load-pass-plugin %s" % (tools, config.ompsim_pass_plugin)))
config.substitutions.append(("%plugin", config.ompsim_pass_plugin))
config.environment["PATH"] = tools + os.pathsep + config.environment.get("PATH", os.environ.get("PATH", ""))
