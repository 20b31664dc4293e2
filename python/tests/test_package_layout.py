"""The package as a house you can walk: every module of python/seedloader holds
one job in at most 800 lines, and no module imports, directly or through
others, one that imports it (an import circle works only in the order the
modules happen to be imported, and hides which part owns what)."""
import ast
import os

import seedloader

PACKAGE = os.path.dirname(os.path.abspath(seedloader.__file__))
MAX_LINES = 800


def _modules(root):
    """{module name: path} of the package's own .py files ("seedloader" for
    __init__.py)."""
    out = {}
    for name in sorted(os.listdir(root)):
        if name.endswith(".py"):
            module = "seedloader" if name == "__init__.py" else "seedloader." + name[:-3]
            out[module] = os.path.join(root, name)
    return out


def _extensions(root):
    """The package's compiled modules (seedloader._core): imported, never importing."""
    return {"seedloader." + name.split(".")[0] for name in os.listdir(root)
            if name.endswith(".so")} | {"seedloader._core"}


def import_graph(root):
    """{module: the package's modules it imports}: every import statement, at
    module level or inside a function, counts."""
    modules = _modules(root)
    known = set(modules) | _extensions(root)
    graph = {}
    for module, path in modules.items():
        with open(path) as f:
            tree = ast.parse(f.read(), path)
        targets = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name in known:
                        targets.add(alias.name)
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                if node.module == "seedloader":
                    for alias in node.names:
                        sub = "seedloader." + alias.name
                        targets.add(sub if sub in known else "seedloader")
                elif node.module in known:
                    targets.add(node.module)
        targets.discard(module)
        graph[module] = targets
    return graph


def find_circle(graph):
    """One import circle as [a, b, ..., a], or None."""
    state = {}  # module -> 1 while on the path, 2 when done

    def visit(module, path):
        state[module] = 1
        for target in sorted(graph.get(module, ())):
            if state.get(target) == 1:
                return path[path.index(target):] + [target]
            if target not in state:
                found = visit(target, path + [target])
                if found:
                    return found
        state[module] = 2
        return None

    for module in sorted(graph):
        if module not in state:
            found = visit(module, [module])
            if found:
                return found
    return None


def test_no_module_of_the_package_imports_itself_through_others():
    graph = import_graph(PACKAGE)
    assert "seedloader._loader" in graph["seedloader"], graph["seedloader"]
    circle = find_circle(graph)
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_walk_finds_a_circle_through_function_level_imports(tmp_path):
    # The check itself: a circle closed by an import inside a function is found.
    (tmp_path / "__init__.py").write_text("from seedloader._a import A\n")
    (tmp_path / "_a.py").write_text("from seedloader import _b\nA = 1\n")
    (tmp_path / "_b.py").write_text("def f():\n    from seedloader import _a\n")
    assert find_circle(import_graph(str(tmp_path))) == [
        "seedloader._a", "seedloader._b", "seedloader._a"]


def test_no_module_of_the_package_is_over_800_lines():
    long = {}
    for module, path in _modules(PACKAGE).items():
        with open(path) as f:
            count = sum(1 for _ in f)
        if count > MAX_LINES:
            long[module] = count
    assert not long, "modules over %d lines: %s" % (MAX_LINES, long)
