#!/usr/bin/env python3
"""The package's targets as issue #38 counts them: Swift lines per target, the project's own targets each depends
on, the C modules it links and the packages it uses, read from `swift package describe --type json`.

    python3 tools/module-graph.py            # a Markdown table on stdout (docs/modules.md keeps one)
    python3 tools/module-graph.py --dot      # the graph for Graphviz
    python3 tools/module-graph.py --check    # the layering rules below hold, or each broken one is named (exit 1)

Run from the repository's root with the Swift toolchain on PATH.
"""
import argparse
import json
import os
import subprocess
import sys


def describe():
    try:
        out = subprocess.run(["swift", "package", "describe", "--type", "json"], check=True,
                             capture_output=True, text=True).stdout
    except FileNotFoundError:
        sys.exit("module-graph: swift is not on PATH (export PATH=/opt/swift/usr/bin:$PATH)")
    except subprocess.CalledProcessError as e:
        sys.exit(f"module-graph: swift package describe failed: {e.stderr.strip()}")
    return json.loads(out[out.index("{"):])


def swift_lines(path, sources):
    total = 0
    for name in sources:
        if name.endswith(".swift"):
            with open(os.path.join(path, name), encoding="utf-8") as f:
                total += sum(1 for _ in f)
    return total


# What a target must not reach, directly or through its dependencies (issue #60): the core is pure (no C, no thread,
# no driver), its tests link nothing more, the commands that need only the devices link no Houndify client, control
# server or speaker loop (the search commands only Houndify), and the control vocabulary no server.
DRIVERS = {"Platform", "Audio", "Board", "Speech", "HotPhrase", "Houndify", "LocalHoundify", "Control", "Systemd", "Digests",
           "HomeAssistant"}
SPEAKER = {"Houndify", "HoundifyAnswers", "LocalHoundify", "Control", "SpeakerRuntime", "Assembly", "SpeakerCommands"}
RULES = {
    "SpeakerCore": DRIVERS,
    "SpeakerCoreTests": DRIVERS | {"SpeakerRuntime", "SpeakerTestKit"},
    "ControlCore": DRIVERS,
    "HomeAssistantCore": DRIVERS,
    "DeviceAssembly": SPEAKER,
    "DeviceCommands": SPEAKER,
    "HoundifyAssembly": SPEAKER - {"Houndify"},
    "SearchCommands": SPEAKER - {"Houndify", "HoundifyAnswers"},
}
# Modules the pure core's sources may not import (threads, the C library, the drivers' platform layer).
CORE_IMPORTS = {"Platform", "Dispatch", "Glibc", "Foundation", "FoundationEssentials", "Synchronization"}


def reach(name, by_name):
    """Every target `name` depends on, directly or not (C modules included)."""
    seen, todo = set(), [name]
    while todo:
        for d in by_name.get(todo.pop(), {}).get("target_dependencies", []):
            if d not in seen:
                seen.add(d)
                todo.append(d)
    return seen


def check(package):
    by_name = {t["name"]: t for t in package["targets"]}
    c_modules = {t["name"] for t in package["targets"] if t.get("module_type") in ("SystemLibraryTarget", "ClangTarget")}
    broken = []
    for name, forbidden in RULES.items():
        if name not in by_name:
            broken.append(f"{name}: no such target")
            continue
        reached = reach(name, by_name)
        bad = sorted(reached & forbidden)
        if name in ("SpeakerCore", "SpeakerCoreTests", "ControlCore", "HomeAssistantCore"):
            bad += sorted(reached & c_modules)
        if bad:
            broken.append(f"{name} reaches {', '.join(bad)}")
    core = by_name.get("SpeakerCore")
    if core:
        for source in core.get("sources", []):
            with open(os.path.join(core["path"], source), encoding="utf-8") as f:
                for number, line in enumerate(f, 1):
                    words = line.split()
                    if "import" in words[:3] and words[-1] in CORE_IMPORTS:
                        broken.append(f"{core['path']}/{source}:{number}: SpeakerCore imports {words[-1]}")
    for line in broken:
        print(f"module-graph: {line}", file=sys.stderr)
    print(f"module-graph: {len(RULES)} layering rules, {len(broken)} broken")
    return not broken


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dot", action="store_true", help="print a Graphviz graph instead of the table")
    parser.add_argument("--check", action="store_true", help="check the layering rules instead")
    args = parser.parse_args()
    package = describe()
    if args.check:
        sys.exit(0 if check(package) else 1)
    targets = [t for t in package["targets"] if t["type"] != "test"]
    own = {t["name"] for t in targets}
    c_modules = {t["name"] for t in targets if t.get("module_type") in ("SystemLibraryTarget", "ClangTarget")}
    rows = []
    for t in sorted(targets, key=lambda t: t["name"]):
        if t["name"] in c_modules:
            continue
        deps = sorted(t.get("target_dependencies", []))
        rows.append((t["name"], swift_lines(t["path"], t.get("sources", [])),
                     [d for d in deps if d in own and d not in c_modules], [d for d in deps if d in c_modules],
                     sorted(t.get("product_dependencies", []))))
    if args.dot:
        print("digraph modules {\n  rankdir=BT;")
        for name, _, swift_deps, c_deps, _ in rows:
            for d in swift_deps:
                print(f'  "{name}" -> "{d}";')
            for d in c_deps:
                print(f'  "{name}" -> "{d}" [style=dashed];')
        print("}")
        return
    print("| target | Swift lines | own targets it depends on | C modules | packages |")
    print("|---|---:|---|---|---|")
    for name, lines, swift_deps, c_deps, products in rows:
        print(f"| {name} | {lines} | {', '.join(swift_deps) or '-'} | {', '.join(c_deps) or '-'} | {', '.join(products) or '-'} |")
    print(f"| **{len(rows)} Swift targets** | **{sum(r[1] for r in rows)}** | | {len(c_modules)} C modules | |")


if __name__ == "__main__":
    main()
