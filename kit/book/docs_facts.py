"""Four facts about the book that a reader cannot check by looking at it.

problems(root) -> list[str], one line per problem, nothing when all is well:

  (a) every commit id the book names, in docs/**/*.rst or labs/*/README.rst,
      is listed in docs/sources.rst, where the book says each fact was
      checked;
  (b) no attendee chapter (labs/*/README.rst, and the pages of docs/ outside
      docs/instructor/) includes or literalincludes a file of a lab's
      solution/ folder: the answers are on the instructor pages, where a
      stuck attendee looks for them on purpose;
  (c) every timing an attendee page states (labs/*/README.rst, docs/
      outside docs/instructor/) is a figure that a transcript under
      docs/transcripts/ holds: docs/reference/authoring.rst's rule is that
      timings come from a measured transcript, with literalinclude, never
      typed by hand;
  (d) what README.md, the Makefile's help and make reference's own help
      (kit/cli.py) say make reference compares is what it runs: each lab it
      pairs with a Debian kernel, and each linux-source package it needs.

make docs-check runs it (python3 -m kit docs-check) before the browser,
make selftest on the kit itself; python3 kit/book/docs_facts.py alone prints
the problems (or says there are none) and fails when there are any.

What counts as a commit id. The book is full of hex that is not one: inode
numbers and kernel addresses in transcripts (which are not .rst files, and
are masked anyway), 0x magic numbers, dates and push-notice numbers (only
digits), and the hex tails of mail message ids (``20240308-vfs-pidfd-
b106369f5406@brauner``). A run of 7 to 40 hex digits with at least one
letter and one digit is taken for a commit id when
  * it is a whole inline literal, ``4e32c25b58b9``;
  * it follows "commit", "commits", "Fixes:" or "upstream('s)", with or
    without backticks: commit 4e32c25b58b9;
  * it is a bare token of exactly 12 hex digits (the kernel's abbreviation,
    as in a graphviz label "(4e32c25b58b9, 6.11-rc7)") that is not glued to
    a '-', '@', '.', '/', ':' or an 'x' (message ids, addresses, 0x...);
  * it ends a commit URL: .../commit/ID, .../c/ID, ?id=ID, &h=ID.
An id is in sources.rst when sources.rst has a hex run that it is a prefix
of, or that is a prefix of it (7 digits at least), so a full 40-digit id in
a URL matches the 12-digit form.

What counts as a timing (c). A number, or a range "N to M", followed by s,
ms, us, µs, sec or seconds, in the prose of the page: inline literals
(a message the kit prints, ``stopped after 25s``) and literal blocks are
left out, and so are minutes, the unit of a session's plan ("Time: about
45 minutes"), not of a measurement. A limit is no measurement either: a
number after "after", "within", "at least", "at most", "up to", "under",
"limit", "timeout" or "goal", or before "or less" / "or more", is left
alone. A transcript holds a figure when a line of a file under
docs/transcripts/ that speaks of time (a time unit, "goal" or "median")
has the same number.
"""
import ast
import pathlib
import re
import sys

_HEX = r'[0-9a-f]{7,40}'
# A whole inline literal.
_LITERAL = re.compile(r'``(' + _HEX + r')``')
# After a word that says "this is a commit".
_KEYWORD = re.compile(r'(?i)\b(?:commits?|fixes:|upstream(?:\'s)?)\s+`{0,2}(' + _HEX + r')\b')
# A bare 12-digit abbreviation, not part of a larger token.
_BARE12 = re.compile(r'(?<![0-9A-Za-z\-@./:x_])([0-9a-f]{12})(?![0-9A-Za-z\-@/_]|\.[0-9A-Za-z])')
# The id at the end of a commit URL.
_URL = re.compile(r'(?:/commit/|/commits/|/c/|[?&;]id=|[?&;]h=)(' + _HEX + r')\b')
_ANY_HEX = re.compile(r'(?<![0-9a-f])([0-9a-f]{7,40})(?![0-9a-f])')

# `.. include::` and `.. literalinclude::` with their argument.
_INCLUDE = re.compile(r"^[ \t]*\.\.[ \t]+(literalinclude|include)::[ \t]*(\S+)", re.M)


# (c) A timing in a page's prose, and a limit just before or after it.
_NUM = r'\d[\d,]*(?:\.\d+)?'
_TIMING = re.compile(r'(?<![\w.,])(' + _NUM + r')(?:\s+to\s+(' + _NUM + r'))?[ \u00a0]?'
                     r'(ms|us|\u00b5s|s|sec|seconds?)\b')
_LIMIT_BEFORE = re.compile(r'(?i)\b(?:after|within|at least|at most|up to|under|limit|timeout|goal)'
                           r'(?:\s+of)?(?:\s+about)?\s*$')
_LIMIT_AFTER = re.compile(r'(?i)^\s*(?:or less|or more)\b')
_TIME_WORDS = re.compile(r'(?i)\d\s*(?:ms|us|\u00b5s|s|sec|seconds?|min|minutes)\b|\bgoal\b|\bmedian\b')
_INLINE_LITERAL = re.compile(r'``.*?``')


def _number(token):
    return token.replace(',', '')


def transcript_figures(root):
    """Every number on a line of a transcript that speaks of time."""
    figures = set()
    for path in sorted((pathlib.Path(root) / 'docs' / 'transcripts').rglob('*')):
        if not path.is_file():
            continue
        for line in path.read_text(errors='replace').splitlines():
            if _TIME_WORDS.search(line):
                figures.update(_number(m.group(0)) for m in re.finditer(_NUM, line))
    return figures


def _prose_lines(text):
    """(line number, line) of a page's prose: literal blocks (after a line
    ending in '::', or a code-block, literalinclude or parsed-literal
    directive) left out, inline literals blanked."""
    block_indent = None
    opener = re.compile(r'^(\s*)(?:\.\.\s+(?:code-block|code|literalinclude|parsed-literal|'
                        r'sourcecode)::.*|(?!\.\.\s).*::)\s*$')
    for number, line in enumerate(text.splitlines(), 1):
        indent = len(line) - len(line.lstrip())
        if block_indent is not None:
            if not line.strip() or indent > block_indent:
                continue
            block_indent = None
        m = opener.match(line)
        if m:
            block_indent = len(m.group(1))
            if not line.lstrip().startswith('..'):
                yield number, _INLINE_LITERAL.sub(lambda x: ' ' * len(x.group(0)), line[:-2])
            continue
        yield number, _INLINE_LITERAL.sub(lambda x: ' ' * len(x.group(0)), line)


def timings(text):
    """(line, timing as written, its numbers) of every measured timing a
    page states: limits left out."""
    out = []
    for number, line in _prose_lines(text):
        for m in _TIMING.finditer(line):
            if _LIMIT_BEFORE.search(line[:m.start()]) or _LIMIT_AFTER.search(line[m.end():]):
                continue
            out.append((number, m.group(0), [_number(g) for g in m.groups()[:2] if g]))
    return out


# (d) What make reference runs, and what a text says about it.
_VERSION = re.compile(r'(?<![\w.])(\d\.\d{1,2})(?![\w.]*\d)(?!\s*(?:s|ms|GB|MB|%)\b)')
_PAIR = re.compile(r'(?i)\b(?:lab\s+(\d\d)|(?:the\s+)?(final|last)\s+lab)\b[^.;:()]*?(\d\.\d{1,2})\b')
_PACKAGE = re.compile(r'linux-source-(\d\.\d{1,2})\b')
# Debian's kernel every lab starts from: the tree a lab is a port to, never
# one make reference compares with.
BASE = '6.1'


def reference_runs(root):
    """[(lab number, Debian version)] that make reference compares, as
    kit/compare/reference.py's run() picks them: the last lab within 6.12's history
    with 6.12, the last lab past it with upstream.LATER."""
    from ..compare.upstream import HISTORY_6_12, LATER
    numbers = sorted(p.name[:2] for p in (pathlib.Path(root) / 'labs').glob('[0-9][0-9]-*') if p.is_dir())
    within = [n for n in numbers if n <= HISTORY_6_12]
    later = [n for n in numbers if n > HISTORY_6_12]
    return ([(within[-1], '6.12')] if within else []) + ([(later[-1], LATER.version)] if later else [])


def _reference_texts(root):
    """(where, text) of each sentence of README.md, the Makefile's help and
    kit/cli.py's help for the reference verb that speaks of make reference."""
    root = pathlib.Path(root)
    out = []
    readme = root / 'README.md'
    if readme.is_file():
        text = readme.read_text(errors='replace')
        for para in re.finditer(r'(?s)(?:[^\n]+\n?)+', text):
            for sentence in re.split(r'(?<=[.!?])\s+(?=[`A-Z])', para.group(0)):
                if 'make reference' in sentence:
                    line = text.count('\n', 0, para.start() + para.group(0).find(sentence[:30])) + 1
                    out.append((f'README.md:{line}', ' '.join(sentence.split())))
    makefile = root / 'Makefile'
    if makefile.is_file():
        lines = makefile.read_text(errors='replace').splitlines()
        for i, line in enumerate(lines):
            if re.match(r'\s*@echo "  make reference\b', line):
                said = [line]
                for more in lines[i + 1:]:
                    if not re.match(r'\s*@echo "\s{20,}', more):
                        break
                    said.append(more)
                words = ' '.join(re.sub(r'^\s*@echo "|"\s*$', '', s) for s in said)
                out.append((f'Makefile:{i + 1}', ' '.join(words.split())))
    cli = root / 'kit' / 'cli.py'
    if cli.is_file():
        try:
            tree = ast.parse(cli.read_text(errors='replace'))
        except SyntaxError as e:
            return out + [('kit/cli.py', f'(does not parse: {e})')]
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, 'id', None) == 'verb'
                    and len(node.args) > 1 and all(isinstance(a, ast.Constant) for a in node.args[:2])
                    and node.args[0].value == 'reference'):
                out.append((f'kit/cli.py:{node.lineno}', str(node.args[1].value)))
    return out


def reference_problems(root):
    """Each text about make reference that names a comparison make reference
    does not run, or leaves one out, or names a linux-source package and
    not all it needs."""
    runs = reference_runs(root)
    if not runs:
        return []
    versions = {v for _, v in runs}
    last = sorted(p.name[:2] for p in (pathlib.Path(root) / 'labs').glob('[0-9][0-9]-*') if p.is_dir())[-1]
    runs_said = ', '.join(f'lab {n} with {v}' for n, v in runs)
    out = []
    for where, text in _reference_texts(root):
        said = {v for v in _VERSION.findall(text) if v != BASE}
        if not said:
            continue        # it names make reference, not what it compares
        wrong = []
        for v in sorted(said - versions):
            wrong.append(f'names {v}, which it does not compare with')
        for v in sorted(versions - said):
            wrong.append(f'leaves out {v}')
        for m in _PAIR.finditer(text):
            lab = m.group(1) or last
            if m.group(3) != BASE and (lab, m.group(3)) not in runs:
                who = f'lab {lab}' if m.group(1) else f'the {m.group(2)} lab (lab {lab})'
                wrong.append(f'pairs {who} with {m.group(3)}')
        packages = set(_PACKAGE.findall(text)) - {BASE}
        if packages and packages != versions:
            wrong.append('names ' + ', '.join(f'linux-source-{v}' for v in sorted(packages)) +
                         ' and not every package it needs (' +
                         ', '.join(f'linux-source-{v}' for v in sorted(versions)) + ')')
        if wrong:
            out.append(f'{where}: says what make reference compares, and {"; ".join(wrong)}: '
                       f'it runs {runs_said}')
    return out


def _looks_like_commit(token):
    return bool(re.search(r'[a-f]', token)) and bool(re.search(r'[0-9]', token))


def commit_ids(text):
    """The commit ids a text names, in order of first appearance."""
    found = {}
    for regex in (_LITERAL, _KEYWORD, _BARE12, _URL):
        for m in regex.finditer(text):
            token = m.group(1).lower()
            if _looks_like_commit(token) and token not in found:
                found[token] = text.count('\n', 0, m.start(1)) + 1
    return found


def _pages(root):
    """The book's .rst pages and the lab chapters, without the generated
    stubs (docs/labs/) and Sphinx's output (docs/_build/)."""
    docs = root / 'docs'
    pages = []
    for path in sorted(docs.rglob('*.rst')):
        rel = path.relative_to(docs).parts
        if rel[0] == 'labs' or any(part.startswith(('_', '.')) for part in rel):
            continue
        pages.append(path)
    pages += sorted((root / 'labs').glob('*/README.rst'))
    return pages


def _in_sources(token, known):
    return any(k.startswith(token) or token.startswith(k) for k in known)


def _is_solution_file(target, root):
    """Whether the path is inside labs/<lab>/solution/."""
    try:
        rel = target.resolve().relative_to((root / 'labs').resolve()).parts
    except ValueError:
        return False
    return len(rel) >= 3 and rel[1] == 'solution'


def problems(root: pathlib.Path) -> list[str]:
    root = pathlib.Path(root)
    out = []
    figures = None
    sources = root / 'docs' / 'sources.rst'
    try:
        known = {m.group(1) for m in _ANY_HEX.finditer(sources.read_text(errors='replace').lower())}
    except OSError:
        return [f'{sources}: missing, so no commit id of the book can be checked']
    known = {k for k in known if _looks_like_commit(k)}

    instructor = (root / 'docs' / 'instructor').resolve()
    for page in _pages(root):
        rel = page.relative_to(root)
        text = page.read_text(errors='replace')
        if page.resolve() != sources.resolve():
            for token, line in commit_ids(text).items():
                if not _in_sources(token, known):
                    out.append(f'{rel}:{line}: commit {token} is not in docs/sources.rst')
        if instructor in page.resolve().parents:
            continue
        for line, said, numbers in timings(text):
            if figures is None:
                figures = transcript_figures(root)
            if not all(n in figures for n in numbers):
                out.append(f'{rel}:{line}: "{said}" is a timing that no transcript of docs/transcripts/ '
                           'holds: literalinclude it from the one that measured it, or leave it out')
        for m in _INCLUDE.finditer(text):
            arg = m.group(2)
            if arg.startswith('<'):
                continue
            # As docs/conf.py does: a path is relative to the file that
            # says it; a leading '/' is relative to docs/.
            target = (root / 'docs' / arg.lstrip('/')) if arg.startswith('/') else page.parent / arg
            if _is_solution_file(target, root):
                line = text.count('\n', 0, m.start()) + 1
                out.append(f'{rel}:{line}: {m.group(1)} of {arg}, a solution file, '
                           'in an attendee chapter (put it on an instructor page)')
    return out + reference_problems(root)


def main(argv=None):
    """python3 kit/book/docs_facts.py [ROOT]: the problems, one a line; exit 1
    when there are any."""
    argv = sys.argv[1:] if argv is None else argv
    root = pathlib.Path(argv[0]) if argv else pathlib.Path(__file__).resolve().parents[2]
    if not (root / 'docs').is_dir():
        print(f'docs_facts: {root} has no docs/ folder: give the kit\'s folder', file=sys.stderr)
        return 2
    wrong = problems(root)
    for line in wrong:
        print(line)
    print(f'docs_facts: {len(wrong)} problem(s)' if wrong else
          'docs_facts: commit ids, solution files, timings and make reference\'s texts all agree')
    return 1 if wrong else 0


if __name__ == '__main__':
    # Run as a file, not as part of the kit package: import the package's
    # own copy, whose relative imports work.
    sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[2]))
    from kit.book import docs_facts
    sys.exit(docs_facts.main())
