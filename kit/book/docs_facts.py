"""Two facts about the book that a reader cannot check by looking at it.

problems(root) -> list[str], one line per problem, nothing when all is well:

  (a) every commit id the book names, in docs/**/*.rst or labs/*/README.rst,
      is listed in docs/sources.rst, where the book says each fact was
      checked;
  (b) no attendee chapter (labs/*/README.rst, and the pages of docs/ outside
      docs/instructor/) includes or literalincludes a file of a lab's
      solution/ folder: the answers are on the instructor pages, where a
      stuck attendee looks for them on purpose.

make docs-check runs it (python3 -m kit docs-check) before the browser.

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
"""
import pathlib
import re

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
    return out
