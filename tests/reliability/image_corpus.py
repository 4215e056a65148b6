"""A corpus of corrupted device images, made from one real clang-22 device image.

Each case changes one field (header, program header, dynamic entry,
relocation) or cuts the file, by structure rather than by offset, so the
corpus follows the image the compiler produces. Shared by the cross-backend
test (tests/reliability/test_image_corpus.py).

named_cases() makes the cases that once crashed ours-host inside the dynamic
linker or at the first launch, each with the reason both backends give
(tests/reliability/test_image_checks.py). Run as a script, it writes them as
fuzzing seeds: `image_corpus.py IMAGE OUTDIR`.
"""
import os
import re
import struct
import subprocess
import sys

PT_LOAD, PT_DYNAMIC = 1, 2
DT = {"NULL": 0, "NEEDED": 1, "PLTRELSZ": 2, "HASH": 4, "STRTAB": 5, "SYMTAB": 6, "RELA": 7, "RELASZ": 8,
      "RELAENT": 9, "STRSZ": 10, "SYMENT": 11, "INIT": 12, "FINI": 13, "JMPREL": 23, "INIT_ARRAY": 25,
      "FINI_ARRAY": 26, "INIT_ARRAYSZ": 27, "FINI_ARRAYSZ": 28, "GNU_HASH": 0x6ffffef5, "DEBUG": 21,
      "VERSYM": 0x6ffffff0, "VERNEED": 0x6ffffffe}
HUGE = 0x7fffffffff00


class Image:
    """The parts of an ELF64 shared object the corpus edits."""

    def __init__(self, data):
        self.data = bytes(data)
        (self.phoff,) = struct.unpack_from("<Q", data, 0x20)
        self.phentsize, self.phnum = struct.unpack_from("<HH", data, 0x36)
        self.phdrs = []  # (index, file offset of the header, type, offset, vaddr, filesz, memsz)
        for i in range(self.phnum):
            at = self.phoff + i * self.phentsize
            p_type, _, p_offset, p_vaddr, _, p_filesz, p_memsz, _ = struct.unpack_from("<IIQQQQQQ", data, at)
            self.phdrs.append((i, at, p_type, p_offset, p_vaddr, p_filesz, p_memsz))
        dyn = next(p for p in self.phdrs if p[2] == PT_DYNAMIC)
        self.dynamic = []  # (file offset of the entry, tag, value)
        for k in range(dyn[5] // 16):
            tag, val = struct.unpack_from("<qQ", data, dyn[3] + 16 * k)
            self.dynamic.append((dyn[3] + 16 * k, tag, val))
            if tag == 0:
                break

    def file_offset(self, vaddr):
        for _, _, t, off, va, fsz, _ in self.phdrs:
            if t == PT_LOAD and va <= vaddr < va + fsz:
                return off + (vaddr - va)
        return None

    def dyn(self, name):
        return next(((o, v) for o, t, v in self.dynamic if t == DT[name]), None)

    def patched(self, offset, fmt, value):
        d = bytearray(self.data)
        struct.pack_into(fmt, d, offset, value)
        return bytes(d)


def cases(data):
    """{name: corrupted image bytes} for the image `data`."""
    img = Image(data)
    out = {}
    # ELF header.
    out["e_phoff-past-end"] = img.patched(0x20, "<Q", 0x7fffffff00)
    out["e_phoff-odd"] = img.patched(0x20, "<Q", len(data) - 3)
    out["e_phnum-0"] = img.patched(0x38, "<H", 0)
    out["e_phnum-65535"] = img.patched(0x38, "<H", 65535)
    out["e_phentsize-8"] = img.patched(0x36, "<H", 8)
    # Program headers.
    loads = [p for p in img.phdrs if p[2] == PT_LOAD]
    for i, at, _, off, va, fsz, msz in loads:
        out["load%d-offset-huge" % i] = img.patched(at + 8, "<Q", HUGE)
        out["load%d-filesz-huge" % i] = img.patched(at + 32, "<Q", HUGE)
        out["load%d-vaddr-wraps" % i] = img.patched(at + 16, "<Q", 0xfffffffffffff000)
        out["load%d-memsz-1T" % i] = img.patched(at + 40, "<Q", 1 << 40)
        if fsz:
            out["load%d-memsz-below-filesz" % i] = img.patched(at + 40, "<Q", fsz - 1)
    dyn_i, dyn_at = next((p[0], p[1]) for p in img.phdrs if p[2] == PT_DYNAMIC)
    out["dynamic-vaddr-huge"] = img.patched(dyn_at + 16, "<Q", HUGE)
    out["dynamic-memsz-huge"] = img.patched(dyn_at + 40, "<Q", HUGE)
    out["dynamic-removed"] = img.patched(dyn_at, "<I", 0)  # PT_NULL
    # Dynamic entries.
    for name in ("STRTAB", "SYMTAB", "RELA", "INIT_ARRAY", "FINI_ARRAY", "GNU_HASH"):
        if img.dyn(name):
            out["dt-%s-huge" % name.lower()] = img.patched(img.dyn(name)[0] + 8, "<Q", HUGE)
    for name, value in (("STRSZ", HUGE), ("RELASZ", HUGE), ("RELASZ", 25), ("RELAENT", 7), ("SYMENT", 7),
                        ("INIT_ARRAYSZ", HUGE), ("INIT_ARRAYSZ", 7), ("FINI_ARRAYSZ", HUGE)):
        if img.dyn(name):
            out["dt-%s-%s" % (name.lower(), "huge" if value == HUGE else value)] = img.patched(
                img.dyn(name)[0] + 8, "<Q", value)
    for k, (o, t, v) in enumerate(img.dynamic):
        if t == DT["NEEDED"]:
            out["dt-needed-name-huge"] = img.patched(o + 8, "<Q", HUGE)
            break
    null = img.dyn("NULL")
    out["dt-null-missing"] = img.patched(null[0], "<q", DT["DEBUG"])
    out["dt-strtab-missing"] = img.patched(img.dyn("STRTAB")[0], "<q", DT["DEBUG"])
    # Relocations.
    rela = img.dyn("RELA")
    if rela:
        first = img.file_offset(rela[1])
        out["rela0-offset-huge"] = img.patched(first, "<Q", HUGE)
        out["rela0-unknown-type"] = img.patched(first + 8, "<Q", 200)
        out["rela0-symbol-huge"] = img.patched(first + 8, "<Q", (0xfffff << 32) | 6)  # R_X86_64_GLOB_DAT
        # The initializer slot relocated to a data address, not code.
        init = img.dyn("INIT_ARRAY")
        relasz = img.dyn("RELASZ")[1]
        for k in range(relasz // 24):
            r_off, r_info, r_add = struct.unpack_from("<QQq", img.data, first + 24 * k)
            if init and r_off == init[1] and (r_info & 0xffffffff) == 8:  # R_X86_64_RELATIVE
                out["init-array-points-at-data"] = img.patched(first + 24 * k + 16, "<q", init[1])
    # Cuts.
    for n in (0x40, 0x100, len(data) // 3, len(data) // 2, len(data) - 0x200):
        out["cut-to-%d" % n] = data[:n]
    return out


PT_GNU_RELRO, PF_W = 0x6474e552, 2
STT_FUNC, STT_OBJECT, STT_TLS, SHN_ABS = 2, 1, 6, 0xfff1
R_X86_64_JUMP_SLOT, R_X86_64_RELATIVE = 7, 8
ANY = r"0x[0-9a-f]+"


def _dynsym(img):
    """[(index, file offset of the Elf64_Sym, name, st_info, st_shndx, st_value, st_size)] of .dynsym."""
    shoff, = struct.unpack_from("<Q", img.data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", img.data, 0x3a)
    sections = [struct.unpack_from("<IIQQQQIIQQ", img.data, shoff + i * shentsize) for i in range(shnum)]
    dynsym = next(sh for sh in sections if sh[1] == 11)  # SHT_DYNSYM
    strtab = sections[dynsym[6]]  # sh_link: .dynstr
    out = []
    for i in range(dynsym[5] // 24):
        at = dynsym[4] + 24 * i
        st_name, st_info, _, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", img.data, at)
        name = img.data[strtab[4] + st_name:].split(b"\0", 1)[0].decode()
        out.append((i, at, name, st_info, st_shndx, st_value, st_size))
    return out


def _inside_an_instruction(image_path, kernel):
    """Byte offset from `kernel`'s start that lies inside its first instruction longer than one byte."""
    dis = subprocess.run([_objdump(), "-d", "--disassemble-symbols=" + kernel, image_path], check=True,
                         capture_output=True, text=True).stdout
    starts = [int(m.group(1), 16) for m in re.finditer(r"^\s*([0-9a-f]+):\s", dis, re.M)]
    for a, b in zip(starts, starts[1:] + [None]):
        if b is None or b - a > 1:
            return a - starts[0] + 1
    raise AssertionError("no instruction in %s" % kernel)


def _objdump():
    here = os.path.dirname(os.path.abspath(__file__))
    sys.path.insert(0, os.path.join(here, "..", "..", "scripts", "lib"))
    from ompsim_base import paths
    return paths.tool("llvm-objdump")


def named_cases(image_path):
    """{name: (corrupted image bytes, regex of the reason both backends give)}.

    The image must be a clang-22 device image with a kernel that calls an
    import through the PLT (programs/checked_image_source.c): each case breaks
    one thing the dynamic linker or the first launch trusts.
    """
    with open(image_path, "rb") as f:
        data = f.read()
    img = Image(data)
    syms = _dynsym(img)
    kernel = next(s for s in syms if s[2].startswith("__omp_offloading_") and s[3] & 0xf == STT_FUNC)
    # The indirect function's device global (not its .offloading.entry record): the
    # linker's .dynsym order differs between machines, so pick it by name.
    glob = next(s for s in syms if s[2].startswith("__omp_offloading_") and "_add1_l" in s[2]
                and s[3] & 0xf == STT_OBJECT)
    kname = re.escape(kernel[2])
    out = {}
    # The writable segment (it holds PT_DYNAMIC) marked read-only.
    dyn_vaddr = next(p[4] for p in img.phdrs if p[2] == PT_DYNAMIC)
    rw = next(p for p in img.phdrs if p[2] == PT_LOAD and p[4] <= dyn_vaddr < p[4] + p[6])
    flags, = struct.unpack_from("<I", data, rw[1] + 4)
    out["data-segment-read-only"] = (
        img.patched(rw[1] + 4, "<I", flags & ~PF_W),
        r"PT_DYNAMIC segment \(%s bytes at %s\) is marked writable, but the PT_LOAD segment that holds it is "
        r"read-only" % (ANY, ANY))
    # PT_GNU_RELRO over every segment, code included.
    relro = next(p for p in img.phdrs if p[2] == PT_GNU_RELRO)
    end = max(p[4] + p[6] for p in img.phdrs if p[2] == PT_LOAD)
    d = bytearray(data)
    struct.pack_into("<QQQQQ", d, relro[1] + 8, 0, 0, 0, end, end)  # offset, vaddr, paddr, filesz, memsz
    code = next(p[0] for p in img.phdrs if p[2] == PT_LOAD and struct.unpack_from("<I", data, p[1] + 4)[0] & 1)
    out["relro-covers-every-segment"] = (
        bytes(d), r"PT_GNU_RELRO segment \(%s bytes at 0x0\) makes the code of PT_LOAD segment %d read-only"
        % (hex(end), code))
    # Symbol versioning outside the image.
    out["dt-versym-outside"] = (
        img.patched(img.dyn("VERSYM")[0] + 8, "<Q", HUGE),
        r"DT_VERSYM \(%s bytes at %s\) lies outside the image's readable segments \[%s, %s\)"
        % (ANY, hex(HUGE), ANY, ANY))
    out["dt-verneed-outside"] = (
        img.patched(img.dyn("VERNEED")[0] + 8, "<Q", HUGE),
        r"DT_VERNEED record 0 \(at %s\) lies outside the image's readable segments \[%s, %s\)"
        % (hex(HUGE), ANY, ANY))
    # The kernel's symbol: inside its first instruction, thread-local, absolute.
    into = _inside_an_instruction(image_path, kernel[2])
    out["kernel-mid-instruction"] = (
        img.patched(kernel[1] + 8, "<Q", kernel[5] + into),
        r"kernel '%s' at %s is not at the start of a function: it lies %s bytes into the function at %s "
        r"\(\.eh_frame FDE \[%s, %s\)\)" % (kname, hex(kernel[5] + into), hex(into), hex(kernel[5]), hex(kernel[5]),
                                         ANY))
    out["kernel-tls"] = (
        img.patched(kernel[1] + 4, "<B", (kernel[3] & 0xf0) | STT_TLS),
        r"dynamic symbol '%s' is thread-local \(STT_TLS\), but a device image has no thread-local storage" % kname)
    out["kernel-abs"] = (
        img.patched(kernel[1] + 6, "<H", SHN_ABS),
        r"kernel '%s' is absolute \(SHN_ABS, value %s\), not code of the image" % (kname, hex(kernel[5])))
    # A device global moved onto the kernel's code.
    out["global-in-code"] = (
        img.patched(glob[1] + 8, "<Q", kernel[5]),
        r"device global '%s' \(%s bytes at %s\) lies in an executable segment, not in the image's data"
        % (re.escape(glob[2]), hex(glob[6]), hex(kernel[5])))
    # The PLT relocation of the kernel's import: bound to the kernel, or to symbol 0.
    jmprel = img.file_offset(img.dyn("JMPREL")[1])
    r_offset, r_info, _ = struct.unpack_from("<QQq", data, jmprel)
    assert r_info & 0xffffffff == R_X86_64_JUMP_SLOT
    out["import-relocation-names-kernel"] = (
        img.patched(jmprel + 8, "<Q", (kernel[0] << 32) | R_X86_64_JUMP_SLOT),
        r"relocation 0 \(DT_JMPREL\) binds an R_X86_64_JUMP_SLOT slot to kernel '%s': device code never calls a "
        r"kernel, only the host launches one" % kname)
    out["jmprel-symbol-0"] = (
        img.patched(jmprel + 8, "<Q", R_X86_64_JUMP_SLOT),
        r"relocation 0 \(DT_JMPREL\) at %s is an R_X86_64_JUMP_SLOT against symbol 0, which names no symbol"
        % hex(r_offset))
    # The initializer slot relocated to the kernel.
    init = img.dyn("INIT_ARRAY")[1]
    rela = img.file_offset(img.dyn("RELA")[1])
    for k in range(img.dyn("RELASZ")[1] // 24):
        off, info, _ = struct.unpack_from("<QQq", data, rela + 24 * k)
        if off == init and info & 0xffffffff == R_X86_64_RELATIVE:
            out["init-array-entry-is-kernel"] = (
                img.patched(rela + 24 * k + 16, "<q", kernel[5]),
                r"DT_INIT_ARRAY entry 0 at %s is kernel '%s', which only the host may launch" % (hex(kernel[5]),
                                                                                                  kname))
    assert len(out) == 11, sorted(out)
    return out


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: image_corpus.py IMAGE OUTDIR (writes the named cases as <name>.img)")
    os.makedirs(sys.argv[2], exist_ok=True)
    for name, (data, _) in sorted(named_cases(sys.argv[1]).items()):
        with open(os.path.join(sys.argv[2], name + ".img"), "wb") as f:
            f.write(data)
