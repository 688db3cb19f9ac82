"""The harness's layering, as kit/__init__.py declares it (LAYERS): a
module imports only from its own layer and the layers below it. Every
import counts, a function's own included (a hidden one is still a
dependency); the kit's modules are parsed, not imported."""
import ast
import shutil
import tempfile
import unittest
from pathlib import Path

import kit

KIT = Path(kit.__file__).resolve().parent


def layer_of(rel):
    """The layer of a module, by its path inside kit/ (a tuple of parts)."""
    if len(rel) > 1:
        return rel[0]
    return kit.TOP_LEVEL.get(rel[0].removesuffix('.py'))


def imported(path, rel):
    """(line, dotted module under kit) of each import in a module."""
    tree = ast.parse(path.read_text(), str(path))
    package = ['kit', *rel[:-1]]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[:len(package) - node.level + 1]
                mod = base + (node.module.split('.') if node.module else [])
                if node.module:
                    yield node.lineno, mod
                else:
                    for a in node.names:
                        yield node.lineno, mod + [a.name]
            elif node.module and node.module.split('.')[0] == 'kit':
                yield node.lineno, node.module.split('.')
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.split('.')[0] == 'kit':
                    yield node.lineno, a.name.split('.')


def violations(root):
    """Each import against the declared order, as 'file:line: A imports B'."""
    rank = {name: i for i, name in enumerate(kit.LAYERS)}
    out = []
    for path in sorted(root.rglob('*.py')):
        rel = path.relative_to(root).parts
        if rel == ('__init__.py',):
            continue
        mine = layer_of(rel)
        if mine is None:
            out.append(f'{"/".join(rel)}: in no layer of kit.LAYERS')
            continue
        for line, mod in imported(path, rel):
            parts = mod[1:]
            if not parts:
                continue
            theirs = parts[0] if root.joinpath(parts[0]).is_dir() else layer_of((parts[0] + '.py',))
            if theirs is None:
                continue        # a name from kit/__init__.py itself
            if rank[theirs] > rank[mine]:
                out.append(f'kit/{"/".join(rel)}:{line}: {mine} imports {theirs} ({".".join(mod)})')
    return out


class Layering(unittest.TestCase):
    def test_every_import_goes_down_the_declared_order(self):
        self.assertEqual(violations(KIT), [])

    def test_every_stage_is_declared(self):
        stages = {p.name for p in KIT.iterdir() if p.is_dir() and (p / '__init__.py').is_file()}
        self.assertEqual(stages - set(kit.LAYERS), set())

    def test_an_upward_import_is_found(self):
        """As the one that was there before the layering was checked: the
        verdicts (report) took a module of a higher layer inside a function."""
        with tempfile.TemporaryDirectory() as d:
            root = Path(d) / 'kit'
            shutil.copytree(KIT, root, ignore=shutil.ignore_patterns('__pycache__'))
            verdicts = root / 'report' / 'verdicts.py'
            verdicts.write_text(verdicts.read_text() + '\n\ndef later():\n    from ..book import docs_facts\n'
                                '    return docs_facts\n')
            found = violations(root)
        self.assertEqual(len(found), 1, found)
        self.assertRegex(found[0], r'^kit/report/verdicts\.py:\d+: report imports book \(kit\.book\)$')

    def test_a_module_at_the_top_needs_a_layer(self):
        with tempfile.TemporaryDirectory() as d:
            root = Path(d) / 'kit'
            shutil.copytree(KIT, root, ignore=shutil.ignore_patterns('__pycache__'))
            (root / 'stray.py').write_text('from . import labs\n')
            self.assertIn('stray.py: in no layer of kit.LAYERS', violations(root))


if __name__ == '__main__':
    unittest.main()
