"""What the ompsim CLI (`ompsim_cli`) and the conformance harness (`harness`) share.

* paths: where the sources, build outputs and LLVM 22 tools live;
* toolchain: the external programs ompsim runs and the environment of a compile;
* backends: the matrix columns and the environment each one runs a program in;
* leftovers: what the processes of a test run leave behind;
* gpu: the device triple and PTX version of a GPU offload architecture.
"""
