#!/usr/bin/env python3
"""Checks that the commands README.md and docs/*.md show still run.

Every fenced shell block (no language, bash, sh or console) is read for commands:
lines starting with "$ " where a block has any, else lines whose first word starts
a program (bash, cmake, ctest, mpirun, pip, a build/ or bench/ path, python). For
each command:
- the script or program it runs must exist (build outputs after the default build);
- a program of this project that is not run in full must answer --help;
- a command with output shown after it, in a "$ " block, is run in full, and each
  output line shown must appear in order in what it prints (a line ending in "..."
  as a prefix; a line that is just "..." skips);
- a block preceded by the line <!-- docs_check: run --> is run in full, a python
  block with the package's interpreter.
Commands with placeholders (DIR, FILE, N, ...) and elided ones ("$ ... ") are only
checked for existence, as are commands quoted inline in the text (`bash ...`,
`build/...`, `mpirun ...`). docs/design.md's module graph must name, for every
library and program target of the CMake files, exactly the seedloader modules its
target_link_libraries lines link. Run from the repository root after scripts/test.sh default:
    build/venv/bin/python scripts/docs_check.py [-v]
(-v lists every command and its verdict.) Exit 0 when everything holds, 1 naming each command that does not.
"""
import glob
import os
import re
import shlex
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHELL_INFO = ("", "bash", "sh", "console", "shell")
LAUNCHERS = ("bash", "cmake", "ctest", "mpirun", "pip", "srun", "python", "python3",
             "/usr/bin/python3", "build/", "bench/", "scripts/", "examples/")
RUN_MARK = "<!-- docs_check: run -->"
PLACEHOLDER = re.compile(r"\b(DIR|FILE|PATTERN|SPEC|REPORT|PRESET|N|W|B|E|K|S)\b|\.\.\.")
# This project's programs, and where the default build puts them.
OUR_PROGRAMS = {"seed-audit": "build/default/tools/seed-audit",
                "ddp-train": "build/default/tools/ddp-train",
                "seedloader-bench": "build/default/tools/seedloader_bench/seedloader-bench",
                "seedloader-pack": "build/default/tools/seedloader_pack/seedloader-pack"}


class Block:
    def __init__(self, path, line, info, lines, run):
        self.path, self.line, self.info, self.lines, self.run = path, line, info, lines, run


def blocks(path):
    """The fenced blocks of a markdown file."""
    out, lines = [], open(path).read().split("\n")
    i = 0
    while i < len(lines):
        fence = re.match(r"^```\s*([\w+-]*)", lines[i])
        if fence:
            start, info, body = i, fence.group(1), []
            i += 1
            while i < len(lines) and not lines[i].startswith("```"):
                body.append(lines[i])
                i += 1
            run = start > 0 and lines[start - 1].strip() == RUN_MARK
            out.append(Block(path, start + 1, info, body, run))
        i += 1
    return out


INLINE = re.compile(r"`((?:bash |mpirun |build/|/usr/bin/python3 |cmake )[^`]+)`")


def inline_commands(path):
    """[(line number, command)] quoted inline outside fenced blocks."""
    out, fenced = [], False
    for number, line in enumerate(open(path).read().split("\n"), 1):
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            # A bare path is a command only as a program of the default build.
            out += [(number, m.group(1)) for m in INLINE.finditer(line)
                    if " " in m.group(1) or m.group(1).startswith("build/default/")]
    return out


def joined(lines):
    """Lines with backslash continuations joined."""
    out = []
    for line in lines:
        if out and out[-1].endswith("\\"):
            out[-1] = out[-1][:-1].rstrip() + " " + line.strip()
        else:
            out.append(line)
    return out


def commands(block):
    """[(command, expected output lines)] of a shell block."""
    lines = joined(block.lines)
    if any(l.startswith("$ ") for l in lines):
        out = []
        for line in lines:
            if line.startswith("$ "):
                out.append((line[2:].strip(), []))
            elif out:
                out[-1][1].append(line)
        return out
    return [(l.strip(), []) for l in lines
            if l.strip() and not l.lstrip().startswith("#") and
            l.strip().startswith(LAUNCHERS)]


def strip_comment(command):
    try:
        tokens = shlex.split(command, comments=True)
    except ValueError:
        return command
    return " ".join(shlex.quote(t) for t in tokens)


def program_of(tokens):
    """The repository file or program a command runs, or None."""
    rest = list(tokens)
    while rest and re.match(r"^[A-Z_][A-Z0-9_]*=", rest[0]):
        rest.pop(0)  # environment assignments
    if not rest:
        return None
    if rest[0] == "mpirun":
        rest.pop(0)
        while rest and rest[0].startswith("-"):
            option = rest.pop(0)
            if option in ("-np", "-n", "--np") and rest:
                rest.pop(0)
    if rest and rest[0] in ("bash", "sh") and len(rest) > 1:
        return rest[1]
    if rest and os.path.basename(rest[0]).startswith("python"):
        scripts = [t for t in rest[1:] if t.endswith(".py")]
        return scripts[0] if scripts else None
    return rest[0] if rest else None


def run(command, timeout=600):
    return subprocess.run(command, shell=True, cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, executable="/bin/bash")


def matches(expected, printed):
    """Whether the shown lines appear, in order, in the printed lines."""
    at = 0
    for want in expected:
        want = want.rstrip()
        if not want.strip() or want.strip() == "...":
            continue
        prefix = want.endswith("...")
        want = want[:-3].rstrip() if prefix else want
        while at < len(printed):
            line = printed[at].rstrip()
            at += 1
            if (line.startswith(want) if prefix else line == want):
                break
        else:
            return "shown line not printed: %r" % want
    return None


def check_command(where, command, expected, full):
    text = strip_comment(command)
    try:
        tokens = shlex.split(text)
    except ValueError as e:
        return "%s: cannot parse %r: %s" % (where, command, e)
    program = program_of(tokens)
    if program is not None and "/" in program and not program.startswith("/"):
        if not os.path.exists(os.path.join(ROOT, program)):
            return "%s: %s does not exist (%s)" % (where, program, command)
    placeholder = PLACEHOLDER.search(command.split("#")[0]) is not None
    if (full or expected) and not placeholder:
        result = run(text)
        printed = (result.stdout + result.stderr).splitlines()
        if result.returncode not in (0, 1) or (result.returncode == 1 and not expected):
            return "%s: %s exited %d:\n%s" % (where, command, result.returncode,
                                              "\n".join(printed[-20:]))
        problem = matches(expected, printed)
        if problem:
            return "%s: %s: %s; it printed:\n%s" % (where, command, problem,
                                                    "\n".join(printed[:30]))
        return None
    if program is not None and os.path.basename(program) in OUR_PROGRAMS:
        binary = OUR_PROGRAMS[os.path.basename(program)]
        result = run(shlex.quote(binary) + " --help")
        if result.returncode != 0:
            return "%s: %s --help exited %d" % (where, program, result.returncode)
    return None


GRAPH_LINE = re.compile(r"^([\w-]+)\s+->\s*([^;]*)")


def graph_in_design():
    """{target: set of seedloader modules} from the first text block after
    design.md's "## Module graph" (lines "NAME -> a, b ; anything else")."""
    text = open(os.path.join(ROOT, "docs", "design.md")).read()
    section = text[text.index("## Module graph"):]
    block = next(b for b in blocks_of_text(section) if b[0] == "text")[1]
    graph = {}
    for line in block:
        match = GRAPH_LINE.match(line)
        if match:
            graph[match.group(1)] = {m.strip() for m in match.group(2).split(",")
                                     if m.strip()}
    return graph


def blocks_of_text(text):
    """[(info, lines)] of the fenced blocks in `text`."""
    return [(m.group(1), m.group(2).split("\n"))
            for m in re.finditer(r"^```(\w*)\n(.*?)^```", text, re.M | re.S)]


def graph_in_cmake():
    """{target: set of seedloader modules it links} over the project's CMake files
    (tests, benches and examples aside): every library a module, seedloader_NAME
    and seedloader::NAME being NAME."""
    graph = {}
    for path in glob.glob(os.path.join(ROOT, "**", "CMakeLists.txt"), recursive=True):
        if os.path.relpath(path, ROOT).split(os.sep)[0] in ("build", "tests", "bench",
                                                             "examples"):
            continue
        text = re.sub(r"#[^\n]*", "", open(path).read())
        for name in re.findall(r"(?:seedloader_add_library\(|add_library\(seedloader_)"
                               r"(\w+)", text):
            graph.setdefault(name, set())
        for target, links in re.findall(r"target_link_libraries\(\s*([\w:-]+)([^)]*)\)",
                                        text):
            name = target[len("seedloader_"):] if target.startswith("seedloader_") \
                else target
            graph.setdefault(name, set()).update(re.findall(r"seedloader::(\w+)", links))
    return graph


def module_graph_problems():
    """Where design.md's module graph and the CMake files disagree."""
    drawn, built = graph_in_design(), graph_in_cmake()
    problems = []
    for target in sorted(set(drawn) | set(built)):
        if target not in built:
            problems.append("docs/design.md's module graph names %s, which no CMake file "
                            "builds" % target)
        elif target not in drawn:
            problems.append("docs/design.md's module graph has no line for %s (it links "
                            "%s)" % (target, ", ".join(sorted(built[target])) or "nothing"))
        elif drawn[target] != built[target]:
            problems.append("docs/design.md's module graph says %s -> %s; its CMake links "
                            "%s" % (target, ", ".join(sorted(drawn[target])) or "nothing",
                                    ", ".join(sorted(built[target])) or "nothing"))
    return problems


def main():
    made = [f for f in ("trace.jsonl",) if not os.path.exists(os.path.join(ROOT, f))]
    try:
        return check_all()
    finally:
        for f in made:  # what the docs' examples write into the working directory
            if os.path.exists(os.path.join(ROOT, f)):
                os.remove(os.path.join(ROOT, f))


def check_all():
    files = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs",
                                                                                "*.md")))
    problems, checked, ran = [], 0, 0
    for path in files:
        for block in blocks(path):
            where = "%s:%d" % (os.path.relpath(path, ROOT), block.line)
            if block.info == "python" and block.run:
                with tempfile.NamedTemporaryFile("w", suffix=".py", delete=False) as f:
                    f.write("\n".join(block.lines) + "\n")
                result = subprocess.run([sys.executable, f.name], cwd=ROOT,
                                        capture_output=True, text=True, timeout=600)
                os.unlink(f.name)
                ran += 1
                if result.returncode != 0:
                    problems.append("%s: the python block failed:\n%s" % (
                        where, (result.stdout + result.stderr)[-2000:]))
                continue
            if block.info not in SHELL_INFO:
                continue
            for command, expected in commands(block):
                if command.startswith("..."):
                    continue
                checked += 1
                full = block.run or bool(expected)
                ran += full
                problem = check_command(where, command, expected, block.run)
                if "-v" in sys.argv:
                    print("%s %s: %s" % ("FAIL" if problem else "ok  ", where, command))
                if problem:
                    problems.append(problem)
        for number, command in inline_commands(path):
            where = "%s:%d" % (os.path.relpath(path, ROOT), number)
            checked += 1
            problem = check_command(where, command, [], False)
            if "-v" in sys.argv:
                print("%s %s: %s" % ("FAIL" if problem else "ok  ", where, command))
            if problem:
                problems.append(problem)
    graph = module_graph_problems()
    problems += graph
    if "-v" in sys.argv:
        print("%s docs/design.md: the module graph" % ("FAIL" if graph else "ok  "))
    for p in problems:
        print("docs_check: " + p)
    print("docs_check: %d commands checked, %d blocks or commands run in full, %d problems"
          % (checked, ran, len(problems)))
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
