"""What the ompsim CLI (`ompsim_cli`) and the conformance harness (`harness`) share.

The layers, bottom up: this package, then the harness, then the CLI (which runs
the matrix through the harness). This package imports neither of the others and
the harness never imports the CLI (`scripts/tests/test_import_direction.py`).

* paths: where the sources, build outputs and LLVM 22 tools live;
* toolchain: the external programs ompsim runs and the environment of a compile;
* backends: the matrix columns and the environment each one runs a program in;
* leftovers: what the processes of a test run leave behind;
* gpu: the device triple and PTX version of a GPU offload architecture.
"""
