#!/usr/bin/env python3
"""Writes core/src/tokenizer/unicode_tables.cpp: the general category of every code point as runs, and the
White_Space property as ranges, from the Unicode Character Database.

Run by hand when moving to a new Unicode version (the build never runs it):
    apt-get install -y unicode-data      # Debian 12: Unicode 15.0.0
    python3 scripts/gen_unicode_tables.py [--ucd /usr/share/unicode] [--out core/src/tokenizer/unicode_tables.cpp]
"""

import argparse
import pathlib
import re
import sys

# The order must match enum class GeneralCategory in core/src/tokenizer/unicode.hpp.
CATEGORIES = [
    "Lu", "Ll", "Lt", "Lm", "Lo",
    "Mn", "Mc", "Me",
    "Nd", "Nl", "No",
    "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po",
    "Sm", "Sc", "Sk", "So",
    "Zs", "Zl", "Zp",
    "Cc", "Cf", "Cs", "Co", "Cn",
]
MAX_CODE_POINT = 0x10FFFF

LICENSE = """\
// Unicode Character Database: Copyright (c) 1991-2022 Unicode, Inc. All rights reserved. Distributed under the
// Terms of Use in https://www.unicode.org/copyright.html (UNICODE, INC. LICENSE AGREEMENT - DATA FILES AND
// SOFTWARE):
//   Permission is hereby granted, free of charge, to any person obtaining a copy of the Unicode data files and
//   any associated documentation (the "Data Files") or Unicode software and any associated documentation (the
//   "Software") to deal in the Data Files or Software without restriction, including without limitation the
//   rights to use, copy, modify, merge, publish, distribute, and/or sell copies of the Data Files or Software,
//   and to permit persons to whom the Data Files or Software are furnished to do so, provided that either (a)
//   this copyright and permission notice appear with all copies of the Data Files or Software, or (b) this
//   copyright and permission notice appear in associated Documentation.
//   THE DATA FILES AND SOFTWARE ARE PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR IMPLIED,
//   INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND
//   NONINFRINGEMENT OF THIRD PARTY RIGHTS. IN NO EVENT SHALL THE COPYRIGHT HOLDER OR HOLDERS INCLUDED IN THIS
//   NOTICE BE LIABLE FOR ANY CLAIM, OR ANY SPECIAL INDIRECT OR CONSEQUENTIAL DAMAGES, OR ANY DAMAGES WHATSOEVER
//   RESULTING FROM LOSS OF USE, DATA OR PROFITS, WHETHER IN AN ACTION OF CONTRACT, NEGLIGENCE OR OTHER TORTIOUS
//   ACTION, ARISING OUT OF OR IN CONNECTION WITH THE USE OR PERFORMANCE OF THE DATA FILES OR SOFTWARE.
//   Except as contained in this notice, the name of a copyright holder shall not be used in advertising or
//   otherwise to promote the sale, use or other dealings in these Data Files or Software without prior written
//   authorization of the copyright holder.
"""


def read_categories(path):
    """General category per code point; unlisted code points are Cn (unassigned)."""
    cats = ["Cn"] * (MAX_CODE_POINT + 1)
    range_start = None
    for line in path.read_text(encoding="utf-8").splitlines():
        fields = line.split(";")
        if len(fields) < 3:
            continue
        cp = int(fields[0], 16)
        name, cat = fields[1], fields[2]
        if cat not in CATEGORIES:
            sys.exit(f"{path}: unknown general category {cat!r} at U+{cp:04X}")
        # Large blocks (CJK, Hangul, planes 15/16) are given as a <..., First> / <..., Last> pair.
        if name.endswith(", First>"):
            range_start = cp
            continue
        if name.endswith(", Last>"):
            if range_start is None:
                sys.exit(f"{path}: range end without start at U+{cp:04X}")
            for c in range(range_start, cp + 1):
                cats[c] = cat
            range_start = None
            continue
        cats[cp] = cat
    return cats


def read_property(path, prop):
    ranges = []
    pattern = re.compile(r"^([0-9A-F]+)(?:\.\.([0-9A-F]+))?\s*;\s*(\w+)")
    for line in path.read_text(encoding="utf-8").splitlines():
        m = pattern.match(line)
        if m and m.group(3) == prop:
            lo = int(m.group(1), 16)
            hi = int(m.group(2), 16) if m.group(2) else lo
            ranges.append((lo, hi))
    ranges.sort()
    return ranges


def unicode_version(path):
    m = re.search(r"PropList-(\d+\.\d+\.\d+)\.txt", path.read_text(encoding="utf-8"))
    return m.group(1) if m else "unknown"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ucd", default="/usr/share/unicode", help="folder with UnicodeData.txt and PropList.txt")
    root = pathlib.Path(__file__).resolve().parent.parent
    ap.add_argument("--out", default=str(root / "core/src/tokenizer/unicode_tables.cpp"))
    args = ap.parse_args()

    ucd = pathlib.Path(args.ucd)
    cats = read_categories(ucd / "UnicodeData.txt")
    white_space = read_property(ucd / "PropList.txt", "White_Space")
    version = unicode_version(ucd / "PropList.txt")

    runs = []
    for cp, cat in enumerate(cats):
        if not runs or runs[-1][1] != cat:
            runs.append((cp, cat))

    out = []
    out.append(f"// Generated by scripts/gen_unicode_tables.py from the Unicode Character Database {version}")
    out.append("// (UnicodeData.txt, PropList.txt; Debian package unicode-data). Do not edit: run the script.")
    out.append("//")
    out.append(LICENSE.rstrip("\n"))
    out.append('#include <iterator>')
    out.append("")
    out.append('#include "unicode.hpp"')
    out.append("")
    out.append("namespace strata::tokenizer_detail {")
    out.append("")
    out.append("using enum GeneralCategory;")
    out.append("")
    out.append(f"const char kUnicodeVersion[] = \"{version}\";")
    out.append("")
    out.append("// Each run starts at `first` and lasts until the next run's first code point.")
    out.append("const CategoryRun kCategoryRuns[] = {")
    line = "   "
    for cp, cat in runs:
        item = f" {{0x{cp:05X}, {cat}}},"
        if len(line) + len(item) > 118:
            out.append(line)
            line = "   "
        line += item
    out.append(line)
    out.append("};")
    out.append("const size_t kCategoryRunCount = std::size(kCategoryRuns);")
    out.append("")
    out.append("const CodePointRange kWhiteSpace[] = {")
    line = "   "
    for lo, hi in white_space:
        item = f" {{0x{lo:04X}, 0x{hi:04X}}},"
        if len(line) + len(item) > 118:
            out.append(line)
            line = "   "
        line += item
    out.append(line)
    out.append("};")
    out.append("const size_t kWhiteSpaceCount = std::size(kWhiteSpace);")
    out.append("")
    out.append("}  // namespace strata::tokenizer_detail")
    pathlib.Path(args.out).write_text("\n".join(out) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(runs)} category runs, {len(white_space)} White_Space ranges (Unicode {version})")


if __name__ == "__main__":
    main()
