#!/usr/bin/env python3
"""Print the crate's module import graph and fail on any import cycle.

Usage: scripts/modgraph.py [--depth N] [--dot] [--layers]

Reads src/**/*.rs (test modules excluded), collects every `crate::a::b`
path (in `use` items and in code), and folds each module to its first N
path segments (default 1: top-level modules). Prints `a -> b` edges, then
the strongly connected components of more than one module. Exit status 1
when there is a cycle, 0 otherwise. `--layers` also checks the layer order
declared in LAYERS below: a module may import only from a lower layer.
"""
import os
import re
import sys

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")

# Lowest first. A module may import only modules of a lower layer, or of its
# own layer when the edge keeps the graph acyclic.
LAYERS = [
    ["units", "error", "huge_pages", "profile", "input"],
    ["timing", "firmware", "config"],
    ["nand", "image"],
    ["ftl", "datapath", "content"],
    ["device"],
    ["host"],
    ["workload", "trace", "nbd"],
    ["lab"],
    ["cli"],
]


def strip_tests(text):
    """Drop `#[cfg(test)] mod ... { ... }` blocks and comments."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    for m in re.finditer(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{", text):
        if m.start() < i:
            continue
        out.append(text[i:m.start()])
        depth, j = 1, m.end()
        while j < len(text) and depth:
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    out.append(text[i:])
    return "".join(out)


def binary_modules():
    """Top-level modules the binary declares (`mod x;` in src/main.rs): they
    belong to the binary, not the library, so they count as layer `cli`."""
    try:
        text = strip_tests(open(os.path.join(SRC, "main.rs"), encoding="utf-8").read())
    except OSError:
        return set()
    return set(re.findall(r"^\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;", text, re.M))


BINARY_MODULES = binary_modules()


def module_of(path):
    rel = os.path.relpath(path, SRC)[:-3].split(os.sep)
    if rel[-1] == "mod":
        rel = rel[:-1]
    if rel in (["lib"], ["main"]):
        return ["cli"] if rel == ["main"] else []
    if rel[0] in ("bin", "cli"):
        return ["cli"] + rel[1:]
    if rel[0] in BINARY_MODULES:
        # src/serve.rs and the like: the binary's own modules.
        return ["cli"] + rel
    return rel


def uses(text):
    """Yield crate-relative paths (lists of segments) named in the text."""
    for m in re.finditer(r"\buse\s+crate::(\{[^;]*\}|[^;]*);", text, re.S):
        yield from expand(m.group(1))
    for m in re.finditer(r"\bcrate::((?:\w+::)*\w+)", text):
        yield m.group(1).split("::")
    for m in re.finditer(r"\bduraflash::((?:\w+::)*\w+)", text):
        yield m.group(1).split("::")


def expand(tree, prefix=()):
    tree = tree.strip()
    if tree.startswith("{"):
        depth, part, parts = 0, "", []
        for ch in tree[1:-1]:
            if ch == "," and depth == 0:
                parts.append(part)
                part = ""
                continue
            depth += {"{": 1, "}": -1}.get(ch, 0)
            part += ch
        parts.append(part)
        for p in parts:
            if p.strip():
                yield from expand(p, prefix)
        return
    head, sep, rest = tree.partition("::")
    if sep and rest.strip().startswith("{") or sep:
        yield from expand(rest, prefix + (head.strip(),))
    else:
        yield list(prefix) + [head.split(" as ")[0].strip()]


def main():
    depth = 1
    args = sys.argv[1:]
    if "--depth" in args:
        depth = int(args[args.index("--depth") + 1])
    modules, edges = set(), set()
    for root, _, files in os.walk(SRC):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(root, f)
            me = module_of(path)
            if not me:
                continue
            a = "::".join(me[:depth])
            modules.add(a)
            text = strip_tests(open(path, encoding="utf-8").read())
            for p in uses(text):
                if p[0] in ("self", "super"):
                    continue
                b = "::".join(p[:depth])
                if b != a and not a.startswith(b + "::") and not b.startswith(a + "::"):
                    edges.add((a, b))
    known = {m.split("::")[0] for m in modules}
    edges = {(a, b) for a, b in edges if b.split("::")[0] in known}
    graph = {}
    for a, b in sorted(edges):
        graph.setdefault(a, set()).add(b)
    if "--dot" in args:
        print("digraph modules {")
        for a, b in sorted(edges):
            print(f'  "{a}" -> "{b}";')
        print("}")
    else:
        for a, b in sorted(edges):
            print(f"{a} -> {b}")
    cycles = sccs(modules, graph)
    bad = 0
    for c in cycles:
        print("cycle: " + " <-> ".join(sorted(c)), file=sys.stderr)
        bad = 1
    if "--layers" in args:
        rank = {m: i for i, layer in enumerate(LAYERS) for m in layer}
        for a, b in sorted(edges):
            ra, rb = rank.get(a.split("::")[0]), rank.get(b.split("::")[0])
            if ra is None or rb is None:
                print(f"unlayered module in edge {a} -> {b}", file=sys.stderr)
                bad = 1
            elif rb > ra:
                print(f"upward import: {a} (layer {ra}) -> {b} (layer {rb})", file=sys.stderr)
                bad = 1
    if not bad:
        print(f"{len(modules)} modules, {len(edges)} edges, no cycle", file=sys.stderr)
    sys.exit(bad)


def sccs(nodes, graph):
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return out


if __name__ == "__main__":
    main()
