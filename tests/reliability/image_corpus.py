"""A corpus of corrupted device images, made from one real clang-22 device image.

Each case changes one field (header, program header, dynamic entry,
relocation) or cuts the file, by structure rather than by offset, so the
corpus follows the image the compiler produces. Shared by the cross-backend
test (tests/reliability/test_image_corpus.py).
"""
import struct

PT_LOAD, PT_DYNAMIC = 1, 2
DT = {"NULL": 0, "NEEDED": 1, "PLTRELSZ": 2, "HASH": 4, "STRTAB": 5, "SYMTAB": 6, "RELA": 7, "RELASZ": 8,
      "RELAENT": 9, "STRSZ": 10, "SYMENT": 11, "INIT": 12, "FINI": 13, "JMPREL": 23, "INIT_ARRAY": 25,
      "FINI_ARRAY": 26, "INIT_ARRAYSZ": 27, "FINI_ARRAYSZ": 28, "GNU_HASH": 0x6ffffef5, "DEBUG": 21}
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
