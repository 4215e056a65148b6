"""The Python side imports one way: the CLI (ompsim_cli) may import the conformance
harness (harness) and the shared base (ompsim_base); the harness imports only the
base and itself; the base imports neither."""
import ast
import os

from ompsim_base import paths

HARNESS = os.path.join(paths.ROOT, "conformance", "harness")
BASE = os.path.join(paths.ROOT, "scripts", "lib", "ompsim_base")

#: folder -> the top-level packages its modules must not import.
FORBIDDEN = {HARNESS: ("ompsim_cli",), BASE: ("ompsim_cli", "harness")}


def python_files(folder):
    for d, dirs, files in os.walk(folder):
        dirs[:] = sorted(n for n in dirs if n != "__pycache__")
        for n in sorted(files):
            if n.endswith(".py"):
                yield os.path.join(d, n)


def imported_modules(path):
    """(line, module) of every absolute import in the file, those inside functions included."""
    with open(path) as f:
        tree = ast.parse(f.read(), filename=path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.lineno, node.module
        elif isinstance(node, ast.Call) and isinstance(node.func, (ast.Attribute, ast.Name)) and \
                getattr(node.func, "attr", getattr(node.func, "id", None)) in ("import_module", "__import__") and \
                node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
            yield node.lineno, node.args[0].value


def wrong_imports(folder, forbidden):
    bad = []
    for path in python_files(folder):
        for line, module in imported_modules(path):
            if module.split(".")[0] in forbidden:
                bad.append("%s:%d imports %s" % (os.path.relpath(path, paths.ROOT), line, module))
    return bad


def test_the_folders_exist_and_hold_modules():
    for folder in FORBIDDEN:
        assert list(python_files(folder)), folder


def test_the_harness_never_imports_the_cli():
    bad = wrong_imports(HARNESS, FORBIDDEN[HARNESS])
    assert not bad, "the harness must import only ompsim_base and itself:\n" + "\n".join(bad)


def test_the_base_imports_neither_the_cli_nor_the_harness():
    bad = wrong_imports(BASE, FORBIDDEN[BASE])
    assert not bad, "ompsim_base must import neither ompsim_cli nor harness:\n" + "\n".join(bad)


def test_a_wrong_import_is_found(tmp_path):
    (tmp_path / "m.py").write_text("import os\n\n\ndef f():\n    from ompsim_cli import cc\n    import harness.runner\n")
    assert wrong_imports(str(tmp_path), ("ompsim_cli", "harness")) == [
        "%s:5 imports ompsim_cli" % os.path.relpath(str(tmp_path / "m.py"), paths.ROOT),
        "%s:6 imports harness.runner" % os.path.relpath(str(tmp_path / "m.py"), paths.ROOT)]
