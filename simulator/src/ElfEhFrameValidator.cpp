//===- ElfEhFrameValidator.cpp - Checks on an image's .eh_frame ----------===//
//
// ImageLoad::checkEhFrame: the CIE and FDE records of an untrusted image's
// .eh_frame, which libgcc trusts on the first unwind anywhere in the
// process, and the code ranges of its FDEs (where functions start).
//
//===----------------------------------------------------------------------===//

#include "ElfImageLoad.h"

#include <elf.h>

#include <cstring>
#include <map>

namespace ompsim::sim {

namespace {

/// libgcc's pointer encodings that need no base beyond the record itself:
/// absolute or pc-relative, in one of the fixed or LEB128 formats.
/// FDE addresses ('R') must be direct and present; a personality routine or
/// LSDA ('P', 'L') may be omitted or reached through a pointer.
bool plainPointerEncoding(uint8_t Enc, bool ForFdeAddresses) {
  if (Enc == 0xff) // DW_EH_PE_omit
    return !ForFdeAddresses;
  if ((Enc & 0x80) && ForFdeAddresses)
    return false;
  uint8_t Format = Enc & 0x0f, Application = Enc & 0x70;
  bool FormatOk = Format <= 0x04 || (Format >= 0x09 && Format <= 0x0c);
  return FormatOk && (Application == 0x00 || Application == 0x10);
}

} // namespace

llvm::Error ImageLoad::checkEhFrame(uint64_t Begin, uint64_t Size) {
  // libgcc walks these records on the first unwind anywhere in the process,
  // trusting their lengths, encodings and CIE pointers: check each one, and
  // that every FDE covers only this image's code.
  const ImageSpan &LoadedSpan = *Span;
  uint64_t End = Begin + Size;
  auto Bad = [&](uint64_t At, const llvm::Twine &Why) {
    return fail(".eh_frame record at " + hex(At) + " " + Why);
  };
  struct Reader {
    const ImageSpan &Span;
    uint64_t At, End;
    bool Ok = true;
    uint64_t u(unsigned Bytes) {
      if (Bytes > End - At) {
        Ok = false;
        return 0;
      }
      uint64_t V = 0;
      std::memcpy(&V, Span.ptr(At), Bytes);
      At += Bytes;
      return V;
    }
    uint64_t leb(bool IsSigned) {
      uint64_t V = 0;
      unsigned Shift = 0;
      for (;;) {
        if (At >= End || Shift > 63) {
          Ok = false;
          return 0;
        }
        uint8_t B = uint8_t(*Span.ptr(At++));
        V |= uint64_t(B & 0x7f) << Shift;
        Shift += 7;
        if (!(B & 0x80)) {
          if (IsSigned && Shift < 64 && (B & 0x40))
            V |= ~uint64_t(0) << Shift;
          return V;
        }
      }
    }
    /// An encoded pointer's raw value (application not applied).
    uint64_t encoded(uint8_t Enc) {
      switch (Enc & 0x0f) {
      case 0x00:
        return u(8);
      case 0x01:
        return leb(false);
      case 0x02:
        return u(2);
      case 0x03:
        return u(4);
      case 0x04:
        return u(8);
      case 0x09:
        return leb(true);
      case 0x0a:
        return uint64_t(int64_t(int16_t(u(2))));
      case 0x0b:
        return uint64_t(int64_t(int32_t(u(4))));
      case 0x0c:
        return u(8);
      }
      Ok = false;
      return 0;
    }
  };
  std::map<uint64_t, uint8_t> CieFdeEncoding; // CIE vaddr -> its 'R' encoding
  for (uint64_t At = Begin;;) {
    if (End - At < 4)
      return Bad(At, "runs past the end of the section (no zero terminator)");
    uint32_t Length = LoadedSpan.read<uint32_t>(At);
    if (Length == 0)
      return llvm::Error::success();
    if (Length == 0xffffffffu)
      return Bad(At, "has a 64-bit length, which is not supported");
    if (Length < 4 || Length > End - At - 4)
      return Bad(At, "has length " + hex(Length) + ", which does not fit the section");
    uint64_t RecordEnd = At + 4 + Length;
    Reader Rd{LoadedSpan, At + 8, RecordEnd};
    uint32_t Id = LoadedSpan.read<uint32_t>(At + 4);
    if (Id == 0) { // CIE
      uint64_t Version = Rd.u(1);
      if (Version != 1 && Version != 3)
        return Bad(At, "is a CIE of version " + llvm::Twine(Version) + " (1 or 3 expected)");
      uint64_t AugBegin = Rd.At;
      while (Rd.At < RecordEnd && *LoadedSpan.ptr(Rd.At))
        ++Rd.At;
      if (Rd.At >= RecordEnd)
        return Bad(At, "has an unterminated augmentation string");
      llvm::StringRef Aug(LoadedSpan.ptr(AugBegin), Rd.At - AugBegin);
      ++Rd.At;
      if (!Aug.empty() && Aug[0] != 'z')
        return Bad(At, "has augmentation '" + Aug + "', which libgcc cannot unwind safely");
      Rd.leb(false);                                  // code alignment
      Rd.leb(true);                                   // data alignment
      (void)(Version == 1 ? Rd.u(1) : Rd.leb(false)); // return address register
      uint8_t FdeEncoding = 0;                        // DW_EH_PE_absptr
      if (!Aug.empty()) {
        Rd.leb(false); // augmentation data length
        for (char C : Aug.drop_front()) {
          if (C == 'R' || C == 'L' || C == 'P') {
            uint8_t Enc = uint8_t(Rd.u(1));
            if (!plainPointerEncoding(Enc, /*forFdeAddresses=*/C == 'R'))
              return Bad(At, "has pointer encoding " + hex(Enc) + " for '" + llvm::Twine(C) + "'");
            if (C == 'R')
              FdeEncoding = Enc;
            if (C == 'P' && Enc != 0xff)
              Rd.encoded(Enc);
          } else if (C != 'S') {
            return Bad(At, "has unknown augmentation '" + Aug + "'");
          }
        }
      }
      if (!Rd.Ok)
        return Bad(At, "is a CIE cut short by its length");
      CieFdeEncoding[At] = FdeEncoding;
    } else { // FDE: id is the distance back to its CIE
      uint64_t Cie = At + 4 - Id;
      auto It = Id <= At + 4 - Begin ? CieFdeEncoding.find(Cie) : CieFdeEncoding.end();
      if (It == CieFdeEncoding.end())
        return Bad(At, "is an FDE whose CIE pointer does not lead to an earlier CIE");
      uint8_t Enc = It->second;
      {
        uint64_t Field = Rd.At;
        uint64_t PcBegin = Rd.encoded(Enc);
        uint64_t PcRange = Rd.encoded(Enc & 0x0f);
        if (!Rd.Ok)
          return Bad(At, "is an FDE cut short by its length");
        // libgcc skips FDEs whose raw start is 0 (discarded code).
        if (PcBegin != 0) {
          uint64_t Start = (Enc & 0x70) == 0x10 ? Field + PcBegin : PcBegin - Img->Base;
          if (!Executable.contains(Start, PcRange))
            return Bad(At, "is an FDE for [" + hex(Start) + ", +" + hex(PcRange) +
                               "), which is not code of this image");
          FdeRanges.emplace_back(Start, Start + PcRange);
        }
      }
    }
    At = RecordEnd;
  }
}

} // namespace ompsim::sim
