#!/usr/bin/env python3
"""Checks the README and docs/ (run by scripts/test; Python 3 standard library only).

1. Every relative link in README.md and docs/*.md points to a file that exists, and a `#anchor`
   (in the same file or another markdown file) to one of its headings, slugged as GitHub does.
2. README.md is under 200 lines.
3. README's "## Map" section names every workspace member of the root Cargo.toml (by directory,
   in backticks: `common/core`, `functions/users`, `tests`) and every AWS::Serverless::Function of
   infra/template.yaml (by logical id: UsersFunction) exactly once, and no crate directory that is
   not a member.
"""

import glob
import os
import re
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
README = os.path.join(ROOT, "README.md")
MAX_README_LINES = 200

LINK = re.compile(r"(?<!\!)\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
FENCE = re.compile(r"^\s*(```|~~~)")


def prose_lines(text):
    """The lines outside fenced code blocks, with inline code spans blanked."""
    inside = False
    for number, line in enumerate(text.split("\n"), 1):
        if FENCE.match(line):
            inside = not inside
            continue
        if not inside:
            yield number, re.sub(r"`[^`]*`", "``", line)


def slug(heading):
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # links keep their text
    text = text.replace("`", "").lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors(path, cache={}):
    if path not in cache:
        seen = {}
        found = set()
        with open(path, encoding="utf-8") as file:
            inside = False
            for line in file.read().split("\n"):
                if FENCE.match(line):
                    inside = not inside
                    continue
                match = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", line)
                if inside or not match:
                    continue
                base = slug(match.group(1))
                count = seen.get(base, 0)
                seen[base] = count + 1
                found.add(base if count == 0 else f"{base}-{count}")
        cache[path] = found
    return cache[path]


def check_links(files):
    errors = []
    for path in files:
        with open(path, encoding="utf-8") as file:
            text = file.read()
        for number, line in prose_lines(text):
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):  # http:, https:, mailto:
                    continue
                where = f"{os.path.relpath(path, ROOT)}:{number}"
                file_part, _, anchor = target.partition("#")
                linked = path if not file_part else os.path.normpath(
                    os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(linked):
                    errors.append(f"{where}: link to {target}: no such file")
                    continue
                if anchor and linked.endswith(".md") and anchor not in anchors(linked):
                    errors.append(f"{where}: link to {target}: no such heading")
    return errors


def workspace_members():
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as file:
        text = file.read()
    section = re.search(r"^\[workspace\]\s*$(.*?)(?=^\[)", text, re.M | re.S)
    match = re.search(r"^members\s*=\s*\[(.*?)\]", section.group(1), re.M | re.S)
    members = []
    for pattern in re.findall(r'"([^"]+)"', match.group(1)):
        for directory in sorted(glob.glob(os.path.join(ROOT, pattern))):
            if os.path.isfile(os.path.join(directory, "Cargo.toml")):
                members.append(os.path.relpath(directory, ROOT).replace(os.sep, "/"))
    return members


def sam_functions():
    """Logical ids under Resources: (2-space indent) whose Type is AWS::Serverless::Function."""
    functions = []
    in_resources = False
    current = None
    with open(os.path.join(ROOT, "infra", "template.yaml"), encoding="utf-8") as file:
        for line in file:
            line = line.rstrip("\n")
            if re.match(r"^\S", line):
                in_resources = line.startswith("Resources:")
                current = None
                continue
            if not in_resources:
                continue
            resource = re.match(r"^  ([A-Za-z0-9]+):\s*(#.*)?$", line)
            if resource:
                current = resource.group(1)
                continue
            kind = re.match(r"^    Type:\s*(\S+)", line)
            if kind and current and kind.group(1) == "AWS::Serverless::Function":
                functions.append(current)
    return functions


def check_map():
    with open(README, encoding="utf-8") as file:
        text = file.read()
    match = re.search(r"^## Map\s*$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if not match:
        return ["README.md: no '## Map' section"]
    section = match.group(1)
    errors = []
    members = workspace_members()
    functions = sam_functions()
    if not members or not functions:
        errors.append(f"found {len(members)} workspace members and {len(functions)} SAM functions")
    for member in members:
        count = section.count(f"`{member}`")
        if count != 1:
            errors.append(f"README.md map: workspace member `{member}` named {count} times, not once")
    for function in functions:
        count = len(re.findall(rf"\b{re.escape(function)}\b", section))
        if count != 1:
            errors.append(f"README.md map: SAM function {function} named {count} times, not once")
    for named in sorted(set(re.findall(r"`((?:common|functions)/[^`]+)`", section))):
        if named not in members and not named.endswith("/*"):
            errors.append(f"README.md map: `{named}` is not a workspace member")
    for named in sorted(set(re.findall(r"\b[A-Z][A-Za-z0-9]*Function\b", section))):
        if named not in functions:
            errors.append(f"README.md map: {named} is not a function of infra/template.yaml")
    return errors


def main():
    files = [README] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    errors = check_links(files)
    with open(README, encoding="utf-8") as file:
        lines = file.read().count("\n")
    if lines >= MAX_README_LINES:
        errors.append(f"README.md: {lines} lines, the limit is under {MAX_README_LINES}")
    errors += check_map()
    for error in errors:
        print(error, file=sys.stderr)
    if errors:
        return 1
    print(f"docs: {len(files)} files' links, README {lines} lines, map of "
          f"{len(workspace_members())} crates and {len(sam_functions())} functions: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
