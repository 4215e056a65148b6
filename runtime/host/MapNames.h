//===- MapNames.h - reading clang's and flang's map names -----------------===//
//
// A map name (the ArgNames of a construct) is ";field;field;...;;": clang-22
// writes ";variable;file;line;col;;", flang-22 ";file;variable;line;col;;".
// Stock prints the first field; ompsim's own diagnostics name the variable.
//
//===----------------------------------------------------------------------===//
#pragma once

#include <string>
#include <string_view>

namespace ompsim::host {

/// Field `I` (from 0) of a map name ";a;b;...", or "" past its end.
std::string_view mapNameField(std::string_view S, unsigned I);

/// A map name's first field, as stock prints it (`Name=` of its copy lines):
/// the variable for clang-22, the source file for flang-22. "" when unknown.
std::string mapArgName(const void *Name);

/// The variable a map name spells, or "" when unknown: what ompsim's own
/// diagnostics, checks and traces name.
std::string mapArgVariable(const void *Name);

} // namespace ompsim::host
