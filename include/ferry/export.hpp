// SPDX-License-Identifier: Apache-2.0
/// \file
/// `FERRY_API`: what ferry's libraries export. They are built with hidden symbols
/// (`-fvisibility=hidden -fvisibility-inlines-hidden`); only what is marked `FERRY_API` is part
/// of a shared libferry*.so's interface, the rest stays private to the library.
#pragma once

/// Marks a class (its out-of-line members, vtable and type info) or a function as exported.
///
/// One macro serves every ferry library, static or shared, built or used: on ELF platforms
/// (Linux, which is what ferry builds on) default visibility means the same for the library
/// that defines a symbol and for the program that uses it, so there is no per-library
/// export/import pair as Windows' `__declspec(dllexport)`/`dllimport` would need. In a static
/// build the mark is harmless: a program links the archive's objects whatever their visibility.
/// Exception classes carry it too, so that a `catch` in the user's program and a `dynamic_cast`
/// in the library agree on one type info.
#if defined(__GNUC__) || defined(__clang__)
#define FERRY_API __attribute__((visibility("default")))
#else
#define FERRY_API
#endif
