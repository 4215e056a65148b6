"""`ompsim cc`: the flags it adds, where the pass plugin goes, and the device images it builds."""
import os
import shlex
import subprocess

import pytest

from ompsim_base import gpu, offload_command, paths
from ompsim_cli import cc

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")

PROGRAM = open(os.path.join(paths.ROOT, "scripts", "tests", "programs", "add1_indirect.c")).read()

#: Device code calling the translate API itself, as upstream's tests do.
EXPLICIT_CALL = r"""
#include <stdio.h>
#pragma omp declare target
void *__kmpc_target_translate_fptr(void *);
void *__llvm_omp_indirect_call_lookup(void *);
#pragma omp end declare target
int main(void) {
  int same = 0;
#pragma omp target map(tofrom: same)
  same = __kmpc_target_translate_fptr(0) == 0 && __llvm_omp_indirect_call_lookup(0) == 0;
  printf("%d\n", same);
  return 0;
}
"""


def needs_built():
    for f in (paths.PASS_PLUGIN, paths.DEVICE_RUNTIME):
        if not os.path.exists(f):
            pytest.skip("not built: %s" % f)


def run_cc(args, cwd):
    return subprocess.run([OMPSIM, "cc", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, cwd=cwd, timeout=300)


def cc1_lines(driver_output):
    """The -cc1 / -fc1 command lines of a `-###` listing, split into argument lists."""
    return [shlex.split(line) for line in driver_output.splitlines()
            if '"-cc1"' in line or '"-fc1"' in line]


def device_and_host_compiles(driver_output):
    """The device and the host -cc1 lines of a `-###` listing (each present)."""
    lines = cc1_lines(driver_output)
    device = [l for l in lines if "-fopenmp-is-target-device" in l]
    host = [l for l in lines if "-fopenmp-is-target-device" not in l]
    assert device and host, lines
    return device, host


def has_pair(args, pair):
    """True if `args` holds the two arguments of `pair` next to each other."""
    return any(args[i:i + 2] == pair for i in range(len(args)))


def dynamic_section(path):
    return subprocess.run([paths.tool("llvm-readelf"), "-d", str(path)], stdout=subprocess.PIPE,
                          text=True, check=True).stdout


def test_command_adds_offload_flags_once():
    cmd, _, links = cc.command(["-O1", "a.c", "-o", "a"])
    assert os.path.basename(cmd[0]) == "clang" and links
    assert cmd.count("-fopenmp") == 1
    assert "-fopenmp-targets=x86_64-pc-linux-gnu" in cmd
    user = ["-O1", "a.c", "-o", "a"]
    start = cmd.index("-O1")
    assert cmd[start:start + 4] == user  # the user's arguments, in order
    assert cmd[start + 4:] == offload_command.host_link_flags(True)
    cmd, _, _ = cc.command(["-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu", "a.cpp", "-c"])
    assert os.path.basename(cmd[0]) == "clang++"
    assert cmd.count("-fopenmp") == 1 and cmd.count("-fopenmp-targets=x86_64-pc-linux-gnu") == 1
    assert "-Xoffload-linker" not in cmd  # compile only: nothing for the device link


def test_host_link_is_lld_unless_the_arguments_choose_a_linker(tmp_path):
    cmd, _, _ = cc.command(["a.c", "-o", "a"])
    assert cmd.count("-fuse-ld=lld") == 1
    for choice in (["-fuse-ld=bfd"], ["--ld-path=/usr/bin/ld.gold"]):
        cmd, _, _ = cc.command(["a.c", *choice, "-o", "a"])
        assert not [a for a in cmd if a == "-fuse-ld=lld"] and cmd.count(choice[0]) == 1
    cmd, _, _ = cc.command(["a.c", "-c"])
    assert "-fuse-ld=lld" not in cmd  # no link: no linker flag (clang would warn it is unused)
    # What the program records of its linker: lld's name in .comment, GNU ld's none.
    src = tmp_path / "p.c"
    src.write_text("int main(void) {\n  int x = 0;\n#pragma omp target map(tofrom: x)\n  x = 1;\n  return !x;\n}\n")
    for extra, linker in (([], "Linker: Debian LLD 22"), (["-fuse-ld=bfd"], None)):
        exe = tmp_path / ("p-%s" % (extra[0][9:] if extra else "lld"))
        r = run_cc(["--translate=native", str(src), *extra, "-o", str(exe)], tmp_path)
        assert r.returncode == 0, r.stderr
        comment = subprocess.run([paths.tool("llvm-readelf"), "-p", ".comment", str(exe)], stdout=subprocess.PIPE,
                                 text=True, check=True).stdout
        assert (linker in comment) if linker else ("LLD" not in comment), comment


def test_language_picks_the_driver():
    assert os.path.basename(cc.command(["-x", "c++", "a.c"])[0][0]) == "clang++"
    assert os.path.basename(cc.command(["-xc++", "a.c"])[0][0]) == "clang++"
    assert os.path.basename(cc.command(["a.F90"])[0][0]) == "flang"
    assert os.path.basename(cc.command(["-o", "x.cpp", "a.c"])[0][0]) == "clang"  # -o value is no input


def test_gpu_selects_offload_arch_and_device_only_plugin():
    cmd, _, _ = cc.command(["--gpu=sm_80", "a.c"])
    assert "--offload-arch=sm_80" in cmd
    assert "-fopenmp-targets=x86_64-pc-linux-gnu" not in cmd
    assert "-Xopenmp-target=nvptx64-nvidia-cuda" in cmd
    assert "-Xoffload-linker" not in cmd  # GPU device runtimes define the lookup
    cmd, _, _ = cc.command(["--gpu=gfx90a", "a.c"])
    assert "--offload-arch=gfx90a" in cmd and "-Xopenmp-target=amdgcn-amd-amdhsa" in cmd


def test_a_gpu_list_builds_an_image_for_each_with_each_devices_flags():
    # One binary for both of sim's GPUs: each device compile keeps its heap calls and gets the
    # pass; the nvptx64 one (and its device link) the PTX version.
    for args in (["--gpu=sm_90,gfx90a", "a.c", "-o", "a"], ["--offload-arch=sm_90,gfx90a", "a.c", "-o", "a"]):
        cmd, settings, _ = cc.command(args)
        assert settings.gpus == ["sm_90", "gfx90a"]
        assert cmd.count("--offload-arch=sm_90,gfx90a") == 1, cmd
        for triple in ("nvptx64-nvidia-cuda", "amdgcn-amd-amdhsa"):
            pairs = list(zip(cmd, cmd[1:]))
            assert ("-Xopenmp-target=" + triple, "-fno-builtin-malloc") in pairs, cmd
            assert ("-Xopenmp-target=" + triple, "-fpass-plugin=" + paths.PASS_PLUGIN) in pairs, cmd
        assert "--cuda-feature=+ptx88" in cmd
        assert "-Wl,--device-compiler=nvptx64-nvidia-cuda=--cuda-feature=+ptx88" in cmd
        assert "-fopenmp-targets=x86_64-pc-linux-gnu" not in cmd and "-Xoffload-linker" not in cmd
    # Two NVIDIA architectures get the newer one's PTX version.
    cmd, _, _ = cc.command(["--gpu=sm_90,sm_110a", "a.c", "-o", "a"])
    assert "--cuda-feature=+ptx90" in cmd and "--cuda-feature=+ptx88" not in cmd


def test_a_gpu_list_that_repeats_or_a_fortran_one_is_refused(tmp_path):
    r = run_cc(["--gpu=sm_90,sm_90", "a.c"], tmp_path)
    assert r.returncode == 2 and "a comma list of different ones" in r.stderr
    r = run_cc(["--gpu=sm_90,gfx90a", "a.f90"], tmp_path)
    assert (r.returncode, r.stderr) == (2, "ompsim: cc: --gpu=sm_90,gfx90a: a Fortran build takes one GPU "
                                           "architecture (flang-22's jobs are run for one)\n")


def test_bad_option_is_one_line_and_status_2(tmp_path):
    r = run_cc(["--translate=magic", "a.c"], tmp_path)
    assert r.returncode == 2
    assert r.stderr.strip().splitlines() == ["ompsim: cc: --translate=magic: expected pass or native"]
    r = run_cc(["--gpu=x86", "a.c"], tmp_path)
    assert r.returncode == 2 and "expected sm_XX" in r.stderr


def test_compiler_errors_and_status_pass_through(tmp_path):
    needs_built()
    r = run_cc(["missing.c", "-o", "x"], tmp_path)
    assert r.returncode == 1
    assert "no such file or directory: 'missing.c'" in r.stderr


@pytest.mark.parametrize("gpu", [None, "sm_80"])
def test_plugin_reaches_only_the_device_compile(tmp_path, gpu):
    needs_built()
    (tmp_path / "p.c").write_text(PROGRAM)
    args = ["-O1", "p.c", "-o", "p", "-###"] + (["--gpu=" + gpu] if gpu else [])
    r = run_cc(args, tmp_path)
    # GPU builds list their commands, then fail for want of the GPU device
    # library (libomptarget-nvptx.bc), which this machine lacks.
    assert r.returncode == 0 or gpu, r.stderr
    device, host = device_and_host_compiles(r.stderr)
    plugin = "-fpass-plugin=" + paths.PASS_PLUGIN
    assert all(plugin in l for l in device)
    assert not any(plugin in l for l in host)
    r = run_cc(["--translate=native"] + args, tmp_path)
    assert paths.PASS_PLUGIN not in r.stderr


@pytest.mark.parametrize("translate", ["pass", "native"])
def test_ompsims_ompx_header_reaches_only_the_host_offload_device_compile(tmp_path, translate):
    # ompsim's <ompx.h> (GPU answers from the device runtime) for the x86_64 device compile;
    # the host compile keeps clang's (its host fallback), GPU builds their own device runtime's.
    needs_built()
    (tmp_path / "p.c").write_text(PROGRAM)
    r = run_cc(["--translate=" + translate, "-O1", "p.c", "-o", "p", "-###"], tmp_path)
    assert r.returncode == 0, r.stderr
    device, host = device_and_host_compiles(r.stderr)
    include = ["-I", paths.OMPX_INCLUDE]
    assert all(has_pair(l, include) for l in device), device
    assert not any(paths.OMPX_INCLUDE in " ".join(l) for l in host)
    assert os.path.isfile(os.path.join(paths.OMPX_INCLUDE, "ompx.h"))
    gpu, _, _ = cc.command(["--gpu=sm_80", "p.c"])
    assert paths.OMPX_INCLUDE not in " ".join(gpu)


@pytest.mark.parametrize("source", ["p.c", "p.cpp"])
def test_device_math_header_is_forced_into_the_host_offload_device_compile_only(tmp_path, source):
    # CUDA's device math functions libm lacks (docs/device-math.md): the device compile of a
    # host-offload build includes ompsim's header first; the host compile, GPU builds and
    # Fortran never see it.
    needs_built()
    (tmp_path / source).write_text(PROGRAM)
    r = run_cc(["--translate=native", "-O1", source, "-o", "p", "-###"], tmp_path)
    assert r.returncode == 0, r.stderr
    device, host = device_and_host_compiles(r.stderr)
    forced = ["-include", paths.DEVICE_MATH_HEADER]
    assert all(has_pair(l, forced) for l in device), device
    assert not any(paths.DEVICE_MATH_HEADER in " ".join(l) for l in host)
    assert os.path.isfile(paths.DEVICE_MATH_HEADER)
    for other in (["--gpu=sm_80", "p.c"], ["p.f90"]):
        cmd, _, _ = cc.command(other)
        assert paths.DEVICE_MATH_HEADER not in " ".join(cmd), cmd
    # The preprocessed device source holds the declarations; the host source does not.
    device_src = run_cc(["--translate=native", "--offload-device-only", "-E", source], tmp_path)
    host_src = run_cc(["--translate=native", "--offload-host-only", "-E", source], tmp_path)
    assert device_src.returncode == 0 and host_src.returncode == 0, device_src.stderr + host_src.stderr
    assert "__ompsim_normcdfinv" in device_src.stdout
    assert "normcdfinv" not in host_src.stdout


def test_pass_rewrites_the_device_image_only(tmp_path):
    needs_built()
    (tmp_path / "p.c").write_text(PROGRAM)
    r = run_cc(["-O1", "p.c", "-o", "p", "-save-temps"], tmp_path)
    assert r.returncode == 0, r.stderr
    image = tmp_path / "p.x86_64..img"
    undefined = subprocess.run([paths.tool("llvm-nm"), "-D", "--undefined-only", str(image)],
                               stdout=subprocess.PIPE, text=True, check=True).stdout
    assert "__kmpc_target_translate_fptr" in undefined
    host_obj = next(tmp_path.glob("p-host-*.o"))
    host_syms = subprocess.run([paths.tool("llvm-nm"), str(host_obj)], stdout=subprocess.PIPE,
                               text=True, check=True).stdout
    assert "translate_fptr" not in host_syms
    dyn = dynamic_section(image)
    assert "[libompsim-device.so]" in dyn
    assert paths.LIB in dyn  # RUNPATH, so the NEEDED entry resolves


def test_native_leaves_call_sites(tmp_path):
    needs_built()
    (tmp_path / "p.c").write_text(PROGRAM)
    r = run_cc(["--translate=native", "-O1", "p.c", "-o", "p", "-save-temps"], tmp_path)
    assert r.returncode == 0, r.stderr
    syms = subprocess.run([paths.tool("llvm-nm"), "-D", str(tmp_path / "p.x86_64..img")],
                          stdout=subprocess.PIPE, text=True, check=True).stdout
    assert "__kmpc_target_translate_fptr" not in syms


def test_explicit_translate_calls_link(tmp_path):
    needs_built()
    (tmp_path / "e.c").write_text(EXPLICIT_CALL)
    # The failed link leaves clang-linker-wrapper's temporary files: in the test's folder.
    stock = subprocess.run([paths.tool("clang"), "-fopenmp", "-fopenmp-targets=x86_64-pc-linux-gnu",
                            "e.c", "-o", "stock"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, cwd=tmp_path, env=dict(os.environ, TMPDIR=str(tmp_path)))
    assert stock.returncode != 0 and "undefined reference" in stock.stdout
    for mode in ("native", "pass"):
        r = run_cc(["--translate=" + mode, "e.c", "-o", "e_" + mode], tmp_path)
        assert r.returncode == 0, r.stderr


def test_ir_image_is_bitcode(tmp_path):
    needs_built()
    (tmp_path / "p.c").write_text(PROGRAM)
    r = run_cc(["--image=ir", "-O1", "p.c", "-o", "p", "-save-temps"], tmp_path)
    assert r.returncode == 0, r.stderr
    image = (tmp_path / "p.x86_64..img").read_bytes()
    assert image[:4] == b"BC\xc0\xde"
    ir = subprocess.run([paths.tool("llvm-dis"), "-o", "-", str(tmp_path / "p.x86_64..img")],
                        stdout=subprocess.PIPE, text=True, check=True).stdout
    assert "call ptr @__kmpc_target_translate_fptr" in ir


def test_user_target_jit_gets_the_lld_device_link():
    # clang-22 alone hands a bitcode device link to /usr/bin/ld, which refuses --lto-emit-llvm.
    cmd, settings, _ = cc.command(["-O3", "a.c", "-o", "a", "-fopenmp-target-jit"])
    assert settings.image == "ir"
    assert cmd.count("-fopenmp-target-jit") == 1
    assert "-Wl,--device-compiler=-fuse-ld=lld" in cmd
    cmd, settings, _ = cc.command(["a.c", "-o", "a", "-fopenmp-target-jit", "-fno-openmp-target-jit"])
    assert settings.image == "elf" and "-Wl,--device-compiler=-fuse-ld=lld" not in cmd


def test_gpu_objects_carry_ir_for_sims_link_and_device_only_assembly_stays_the_gpus():
    # A GPU link embeds IR (sim retargets it); an object made apart (-c) must carry the same
    # IR; device code alone (-S) stays PTX. None needs a device library.
    for args in (["--gpu=sm_90", "a.c", "-o", "a"], ["--gpu=sm_90", "-c", "a.c", "-o", "a.o"]):
        cmd, _, _ = cc.command(args)
        assert "-fopenmp-target-jit" in cmd and "-nogpulib" in cmd, cmd
    cmd, _, _ = cc.command(["--gpu=sm_90", "--offload-device-only", "-S", "a.c", "-o", "a.s"])
    assert "-fopenmp-target-jit" not in cmd and "-nogpulib" in cmd, cmd


def test_user_target_jit_builds_a_bitcode_image(tmp_path):
    needs_built()
    (tmp_path / "p.c").write_text(PROGRAM)
    r = run_cc(["-O3", "p.c", "-o", "p", "-fopenmp-target-jit", "-save-temps"], tmp_path)
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "p.x86_64..img").read_bytes()[:4] == b"BC\xc0\xde"


def test_works_as_cc_in_a_makefile(tmp_path):
    needs_built()
    (tmp_path / "a.c").write_text(PROGRAM)
    (tmp_path / "Makefile").write_text(
        "CC = %s cc\nCFLAGS = -O1\nprog: a.o\n\t$(CC) $(CFLAGS) -o $@ $^\n" % OMPSIM)
    r = subprocess.run(["make", "-s"], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert (tmp_path / "a.o").exists() and (tmp_path / "prog").exists()


def test_nvptx_builds_are_given_a_ptx_version_the_arch_accepts(monkeypatch, tmp_path):
    # clang-22 alone would target PTX 4.2 without CUDA, which sm_90 refuses; IR builds
    # get CUDA 13's version (or the architecture's newer minimum) with or without CUDA.
    monkeypatch.setattr(gpu, "CUDA_CANDIDATES", (str(tmp_path / "none"),))
    assert gpu.ptx_feature_flags("sm_90", []) == ["--cuda-feature=+ptx88"]
    assert gpu.ptx_feature_flags("sm_90a", []) == ["--cuda-feature=+ptx88"]
    assert gpu.ptx_feature_flags("sm_110a", []) == ["--cuda-feature=+ptx90"]
    assert gpu.ptx_feature_flags("sm_88", []) == ["--cuda-feature=+ptx90"]
    assert gpu.ptx_feature_flags("gfx90a", []) == []
    assert gpu.ptx_feature_flags("sm_90", ["--cuda-path=/opt/cuda"]) == []
    assert gpu.ptx_feature_flags("sm_90", ["--cuda-feature=+ptx80"]) == []
    # Real PTX without CUDA: the version is given too (LLVM makes the PTX, no ptxas needed).
    assert gpu.ptx_feature_flags("sm_90", [], real_ptx=True) == ["--cuda-feature=+ptx88"]
    # A removed toolkit's wrapper on PATH is no installation; a folder with a ptxas is.
    cuda = tmp_path / "cuda"
    (cuda / "bin").mkdir(parents=True)
    (cuda / "bin" / "ptxas").write_text("#!/bin/sh\n")
    monkeypatch.setattr(gpu, "CUDA_CANDIDATES", (str(cuda),))
    assert gpu.cuda_installation() is None
    (cuda / "bin" / "ptxas").chmod(0o755)
    assert gpu.cuda_installation() == str(cuda)
    # Real PTX with CUDA: clang takes the installation's version, which its ptxas accepts.
    assert gpu.ptx_feature_flags("sm_90", [], real_ptx=True) == []
    assert gpu.ptx_feature_flags("sm_90", []) == ["--cuda-feature=+ptx88"]
    cmd, _, _ = cc.command(["--gpu=sm_90", "--offload-device-only", "-S", "a.c"])
    assert not any(a.startswith("--cuda-feature") for a in cmd)
    cmd, _, _ = cc.command(["--offload-arch=sm_90", "a.c", "-o", "a"])
    assert "--cuda-feature=+ptx88" in cmd


@pytest.mark.e2e
def test_device_only_nvptx_build_without_cuda_compiles(tmp_path):
    (tmp_path / "p.c").write_text(PROGRAM)
    flags = ["--cuda-path=/nonexistent", "--cuda-feature=+ptx78"]
    r = subprocess.run([OMPSIM, "cc", "--gpu=sm_90", *flags, "--offload-device-only", "-nogpulib", "-S",
                        "-emit-llvm", "p.c", "-o", "p.ll"], cwd=tmp_path, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, text=True, timeout=300)
    assert r.returncode == 0, r.stdout
    assert "+ptx78" in (tmp_path / "p.ll").read_text()


@pytest.mark.e2e
def test_an_sm_90_object_is_the_same_with_and_without_cuda(tmp_path):
    # clang-22 takes the PTX version from an installed CUDA; ompsim cc gives it
    # explicitly, so an nvptx64 build needs no CUDA and does not change with one.
    if not gpu.cuda_installation():
        pytest.skip("no CUDA installation here to compare with")
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("no private mount namespace here (scripts/without-cuda needs root)")
    (tmp_path / "p.c").write_text(PROGRAM)
    build = [OMPSIM, "cc", "--gpu=sm_90", "-O2", "-c", "p.c", "-o"]
    for prefix, out in (([], "with.o"), ([os.path.join(paths.ROOT, "scripts", "without-cuda")], "without.o")):
        r = subprocess.run(prefix + build + [out], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           text=True, timeout=300)
        assert r.returncode == 0, r.stdout
    assert (tmp_path / "with.o").read_bytes() == (tmp_path / "without.o").read_bytes()
