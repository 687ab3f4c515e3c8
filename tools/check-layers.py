#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Holds the folder table of docs/architecture.md to the includes of the code.

Each row of the table names a folder (or file) and the folders it may use.
Every `#include "FOLDER/..."` of a source must name its own folder or one its
row allows, and every folder a row allows must be included by at least one of
its sources, so the table says exactly what the code does. Run by `make lint`;
prints one line per disagreement and exits 1 when there is any.
"""
import pathlib
import re
import sys

# How an include names a folder: its first path component.
INCLUDE = re.compile(r'^\s*#\s*include\s+"([a-z_]+)/', re.MULTILINE)
# A folder of the table as the includes name it: user/base/ -> base,
# include/tcheck/ -> tcheck, infer/ -> infer.
FOLDER = re.compile(r'`(?:user/)?(?:include/)?([a-z_]+)/`')


def include_name(cell_path):
    """The name includes use for a folder of the table ('include/' is tcheck)."""
    if cell_path == 'include/':
        return 'tcheck'
    match = FOLDER.fullmatch('`' + cell_path + '`')
    return match.group(1) if match else None


def table_rows(architecture):
    """(what, allowed names) for each row of the folder table."""
    rows = []
    in_table = False
    for line in architecture.splitlines():
        if line.startswith('| folder |'):
            in_table = True
            continue
        if not in_table:
            continue
        if not line.startswith('|'):
            break
        cells = [cell.strip() for cell in line.strip('|').split('|')]
        if len(cells) < 3 or cells[0].startswith('---'):
            continue
        what = cells[0].strip('`')
        allowed = set()
        for token in re.findall(r'`([^`]+)`', cells[2]):
            name = include_name(token)
            if name is None:
                raise SystemExit('check-layers: cannot read the folder %r of the row %s'
                                 % (token, what))
            allowed.add(name)
        rows.append((what, allowed))
    if not rows:
        raise SystemExit('check-layers: no folder table ("| folder |") in the architecture')
    return rows


def sources_of(root, what):
    """The C sources a row covers, and the folder name its own includes use."""
    path = root / what
    if path.is_file():
        return [path], None
    if not path.is_dir():
        return [], None
    own = include_name(what)
    # user/ itself holds main.c only; its folders are rows of their own.
    return sorted(p for p in path.iterdir() if p.suffix in ('.c', '.h')), own


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else '.')
    rows = table_rows((root / 'docs' / 'architecture.md').read_text())
    problems = []
    for what, allowed in rows:
        sources, own = sources_of(root, what)
        if not sources:
            continue
        used = {}
        for source in sources:
            for name in INCLUDE.findall(source.read_text(errors='replace')):
                if name != own:
                    used.setdefault(name, source)
        for name, source in sorted(used.items()):
            if name not in allowed:
                problems.append('%s includes %s/, which the row of %s in docs/architecture.md '
                                'does not allow' % (source.relative_to(root), name, what))
        for name in sorted(allowed - set(used)):
            problems.append('the row of %s in docs/architecture.md allows %s/, which none of '
                            'its sources includes' % (what, name))
    for problem in problems:
        print('check-layers: ' + problem)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
