#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Finds circles between the daemon's source files: files that call each other.

A file uses another when its object calls a function (or reads a variable)
the other's object defines, as `nm` shows them. Where files use each other,
directly or round a longer ring, neither can be read, tested or replaced
without the other, and the ring is one module split by accident. Run by
`make lint` on the objects of user/ and infer/ (given as arguments); prints
each ring with the names each file takes from the next, and exits 1 when
there is any.
"""
import collections
import subprocess
import sys


def symbols(obj, *options):
    """The global symbols `nm` lists for an object with 'options'."""
    listed = subprocess.run(['nm', *options, obj], capture_output=True, text=True, check=True)
    return [line.split() for line in listed.stdout.splitlines() if line.strip()]


def uses(objects):
    """{file: {file it uses: [names it takes from it]}}."""
    defined = {}
    for obj in objects:
        for fields in symbols(obj, '--defined-only', '-g'):
            if len(fields) == 3 and fields[1] in 'TDBR':
                defined[fields[2]] = obj
    graph = collections.defaultdict(lambda: collections.defaultdict(list))
    for obj in objects:
        for fields in symbols(obj, '-u'):
            owner = defined.get(fields[-1])
            if owner and owner != obj:
                graph[obj][owner].append(fields[-1])
    return graph


def rings(graph):
    """The strongly connected groups of more than one file (Tarjan, iterative)."""
    index, low, on_stack, stack, found = {}, {}, set(), [], []
    counter = 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, successors = work[-1]
            advanced = False
            for successor in successors:
                if successor not in index:
                    index[successor] = low[successor] = counter
                    counter += 1
                    stack.append(successor)
                    on_stack.add(successor)
                    work.append((successor, iter(graph.get(successor, ()))))
                    advanced = True
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == node:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


def main(objects):
    graph = uses(objects)
    found = rings(graph)
    for group in found:
        print('check-circles: these files use each other:')
        for user in group:
            for used, names in sorted(graph[user].items()):
                if used in group:
                    print('  {} -> {} ({})'.format(user, used, ', '.join(sorted(names))))
    return 1 if found else 0


if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
