#!/usr/bin/env python3
"""Fails on any include loop between the tree's files, and on a folder's internal header included from another.

A file's header and source are one node (run/runner.h and run/runner.cc are "run/runner"): a.cc including
b.h while b.cc includes a.h is a loop, though no single file includes itself. Nodes are the project's own
files; an include is "dir/name.h" from the top of the tree. Prints each loop (a strongly connected set of
nodes, and one cycle through it) and exits 1 if there is any; exits 0 and prints the node count otherwise.
A header whose opening comment says "Internal to DIR/" may be included only by files of DIR/ (tests beside it
included) and by tests (tests/ and any *_test.cc). And the application's layers point one way: cli/ -> run/ ->
results/ -> the modules; no file of a layer includes one of a layer above it (tests beside a file included).
"""
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), ".."))
SKIP = {".git", ".ci", "docs"}
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)


# The application's layers, lowest first; a file may include only its own layer's and lower ones' files.
LAYERS = {"results": 1, "run": 2, "cli": 3}
MODULES = ("base", "study", "stopping", "logs", "planner", "sampler", "slurm", "store", "reports")
# Folders above every layer: they may include anything. A folder with code that none of these lists names
# is refused (say where it stands), so a new folder is never left unchecked.
ABOVE = ("bench", "tests", "examples")


def rank(rel):
    top = rel.split("/")[0]
    return 0 if top in MODULES else LAYERS.get(top)


INTERNAL = re.compile(r"(?<!\")Internal to ([a-z_/]+)/")


def nodes_and_edges(misuses):
    files = {}
    for top, dirs, names in os.walk(ROOT):
        rel_top = os.path.relpath(top, ROOT)
        dirs[:] = [d for d in dirs if d not in SKIP and not d.startswith("build")]
        for name in names:
            if name.endswith((".h", ".cc")):
                rel = os.path.normpath(os.path.join(rel_top, name))
                files[rel] = os.path.splitext(rel)[0]
    texts = {}
    internal = {}
    for rel in files:
        with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
            texts[rel] = f.read()
        opening = INTERNAL.search("".join(texts[rel].splitlines(True)[:12]))
        if rel.endswith(".h") and opening:
            internal[rel] = opening.group(1)
    edges = {stem: set() for stem in files.values()}
    for rel, stem in files.items():
        text = texts[rel]
        for inc in INCLUDE.findall(text):
            target = os.path.normpath(inc)
            if target not in files:  # a file beside the includer
                target = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
            if target in files and files[target] != stem:
                edges[stem].add(files[target])
            if os.sep in rel and rel.split(os.sep)[0] not in MODULES + ABOVE + tuple(LAYERS):
                misuses.append(f"{rel}: folder {rel.split(os.sep)[0]}/ is not in scripts/include-loops.py's layers; add it")
            here, there = rank(rel), rank(target)
            if here is not None and there is not None and there > here and not rel.endswith("_test.cc"):
                misuses.append(f"{rel} includes {target}, a layer above it (cli/ -> run/ -> results/ -> modules)")
            owner = internal.get(target)
            if owner and not rel.startswith(owner + "/") and not rel.startswith("tests/") and not rel.endswith("_test.cc"):
                misuses.append(f"{rel} includes {target}, which is internal to {owner}/")
    return edges


def strongly_connected(edges):
    """Tarjan's algorithm, iterative (the tree is deep enough to matter for recursion)."""
    index, low, on_stack, stack, sccs = {}, {}, set(), [], []
    counter = 0
    for root in sorted(edges):
        if root in index:
            continue
        work = [(root, iter(sorted(edges[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            advanced = False
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(edges[child]))))
                    advanced = True
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                scc = []
                while True:
                    top = stack.pop()
                    on_stack.discard(top)
                    scc.append(top)
                    if top == node:
                        break
                if len(scc) > 1:
                    sccs.append(sorted(scc))
    return sccs


def cycle_in(scc, edges):
    """One cycle through the loop's first node, by breadth-first search inside the loop."""
    members, start = set(scc), scc[0]
    parent, queue = {start: None}, [start]
    while queue:
        node = queue.pop(0)
        for child in sorted(edges[node]):
            if child == start:
                path = [node]
                while parent[path[-1]] is not None:
                    path.append(parent[path[-1]])
                return list(reversed(path)) + [start]
            if child in members and child not in parent:
                parent[child] = node
                queue.append(child)
    return scc


def main():
    misuses = []
    edges = nodes_and_edges(misuses)
    loops = strongly_connected(edges)
    for misuse in misuses:
        print(misuse)
    for scc in loops:
        print(f"include loop of {len(scc)}: {' -> '.join(cycle_in(scc, edges))}")
    if loops or misuses:
        print(f"include-loops: {len(loops)} loop(s) among {len(edges)} files (a .h and its .cc are one), "
              f"{len(misuses)} include(s) against the layers or of an internal header")
        return 1
    print(f"include-loops: no loop among {len(edges)} files (a .h and its .cc are one)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
