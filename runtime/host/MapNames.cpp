//===- MapNames.cpp - reading clang's and flang's map names ---------------===//
#include "MapNames.h"

#include <cctype>

namespace ompsim::host {

std::string_view mapNameField(std::string_view S, unsigned I) {
  size_t Begin = 1;
  for (; I; --I) {
    Begin = S.find(';', Begin);
    if (Begin == std::string_view::npos)
      return {};
    ++Begin;
  }
  size_t End = S.find(';', Begin);
  return S.substr(Begin, End == std::string_view::npos ? std::string_view::npos : End - Begin);
}

namespace {

/// Whether a map name's field is a Fortran source file (flang-22's first field).
bool isFortranSource(std::string_view Field) {
  size_t Dot = Field.rfind('.');
  if (Dot == std::string_view::npos)
    return false;
  std::string Ext(Field.substr(Dot + 1));
  for (char &C : Ext)
    C = char(std::tolower(static_cast<unsigned char>(C)));
  return Ext == "f" || Ext == "for" || Ext == "ftn" || Ext == "f90" || Ext == "f95" || Ext == "f03" ||
         Ext == "f08" || Ext == "f18";
}

} // namespace

std::string mapArgName(const void *Name) {
  std::string_view S = Name ? static_cast<const char *>(Name) : "";
  return std::string(S.empty() || S[0] != ';' ? S : mapNameField(S, 0));
}

std::string mapArgVariable(const void *Name) {
  std::string_view S = Name ? static_cast<const char *>(Name) : "";
  if (S.empty() || S[0] != ';')
    return std::string(S);
  // flang-22 puts the file first; a clang-22 variable is never a path, and a
  // member spelled like a Fortran file ("s.f90") is followed by its file.
  std::string_view First = mapNameField(S, 0), Second = mapNameField(S, 1);
  if (isFortranSource(First) && !Second.empty() && Second.find('.') == std::string_view::npos)
    return std::string(Second);
  return std::string(First);
}

} // namespace ompsim::host
