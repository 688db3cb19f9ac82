"""The book as a reader sees it: every page in a real headless browser,
run(HTML_DIR, OUT_DIR) (make docs-check).

Serves HTML_DIR (the output of `make docs`) on a loopback port, opens every
page in Debian's chromium, headless, at a common laptop width, and fails
when
  * a table is wider than the text column (the reader would have to scroll
    it sideways, or never sees its last columns), or a table cell hides
    part of its text;
  * a literal block (a transcript, program output, code) has lines longer
    than its box shows, so that the reader has to scroll it sideways, or
    the box itself reaches past the text column;
  * a graphviz diagram did not render (no SVG, or an SVG without nodes);
  * a page did not finish loading, or lacks the theme's or the book's
    style sheet (docs/_static/book.css).
It also saves screenshots of a few pages in OUT_DIR, to look at.

The server adds a small script to each page it serves; the script measures
the page once it has loaded and writes its findings into the page, which
chromium's --dump-dom then prints. The built book itself is not changed.
"""
import concurrent.futures
import functools
import http.server
import io
import json
import os
import re
import shutil
import subprocess
import tempfile
import threading

from ..labs import LabError

WIDTH, HEIGHT = 1280, 900

# Pages to photograph (path, ?focus=ID to start at a section), and the
# file name of each picture.
SCREENSHOTS = [
    ('index.html', 'index.png'),
    ('course.html', 'course-map.png'),
    ('background/history.html?focus=a-timeline-of-2024', 'history-timeline.png'),
    ('labs/04-lsm-fallback.html?focus=what-selinux-checks-on-a-pidfd', 'lab04-hooks.png'),
    ('labs/04-lsm-fallback.html?focus=what-changes-for-userspace-later', 'lab04-table.png'),
]

PROBE = r"""
<script>
window.addEventListener('load', function () {
  var problems = [], tables = 0, diagrams = 0, blocks = 0;
  function where(el) {
    var h = null, e = el;
    while (e && !h) {
      var s = e.previousElementSibling;
      while (s && !h) {
        if (/^H[1-6]$/.test(s.tagName)) h = s;
        s = s.previousElementSibling;
      }
      e = e.parentElement;
      if (e && e.tagName === 'SECTION') {
        var t = e.querySelector('h1, h2, h3, h4, h5, h6');
        if (t && !h) h = t;
      }
    }
    return h ? h.textContent.replace(/[\u00b6\uf0c1]/g, '').trim() : '(top of page)';
  }
  var sheets = Array.prototype.map.call(document.styleSheets, function (x) { return x.href || ''; });
  ['/theme.css', '/book.css'].forEach(function (name) {
    if (!sheets.some(function (h) { return h.split('?')[0].endsWith(name); }))
      problems.push('the style sheet ' + name.slice(1) + ' is not loaded');
  });
  var column = document.querySelector('.rst-content') || document.body;
  var colRight = column.getBoundingClientRect().right;
  document.querySelectorAll('.rst-content table.docutils').forEach(function (t) {
    tables++;
    var box = t.parentElement;
    var r = t.getBoundingClientRect();
    if (box.scrollWidth > box.clientWidth + 1 || r.right > colRight + 1) {
      problems.push('table under "' + where(t) + '" is ' + Math.round(r.width) +
                    ' px wide, the text column ' + Math.round(box.clientWidth) +
                    ' px: its right part is out of sight');
    }
    t.querySelectorAll('td, th').forEach(function (c) {
      if (c.scrollWidth > c.clientWidth + 1) {
        problems.push('a cell of the table under "' + where(t) + '" hides part of its text: "' +
                      c.textContent.trim().slice(0, 40) + '"');
      }
    });
  });
  // Literal blocks: the theme gives each one a horizontal scroll bar of
  // its own, so a line longer than the box is cut off at the right edge
  // until the reader scrolls. Count in characters of the block's own font.
  var canvas = document.createElement('canvas').getContext('2d');
  document.querySelectorAll('.rst-content pre').forEach(function (p) {
    blocks++;
    var cs = getComputedStyle(p);
    var tab = parseInt(cs.tabSize, 10) || 8;
    var lines = p.textContent.replace(/\n$/, '').split('\n').map(function (l) {
      var out = '';
      for (var i = 0; i < l.length; i++)
        out += l[i] === '\t' ? ' '.repeat(tab - out.length % tab) : l[i];
      return out;
    });
    var longest = lines.reduce(function (a, l) { return l.length > a.length ? l : a; }, '');
    canvas.font = cs.font;
    var cw = canvas.measureText('0000000000').width / 10 || 1;
    var inner = p.clientWidth - parseFloat(cs.paddingLeft) - parseFloat(cs.paddingRight);
    var fits = Math.floor(inner / cw);
    var scrolls = false;
    for (var e = p; e && e !== column; e = e.parentElement) {
      if (e.scrollWidth > e.clientWidth + 1 && getComputedStyle(e).overflowX !== 'visible') {
        scrolls = true;
        break;
      }
    }
    var r = p.getBoundingClientRect();
    if (scrolls) {
      problems.push('literal block under "' + where(p) + '" has lines of ' + longest.length +
                    ' characters, its box shows ' + fits + ': it scrolls sideways ("' +
                    longest.trim().slice(0, 40) + '")');
    } else if (r.right > colRight + 1) {
      problems.push('literal block under "' + where(p) + '" is ' + Math.round(r.width) +
                    ' px wide and reaches past the text column');
    }
  });
  document.querySelectorAll('div.graphviz').forEach(function (g) {
    diagrams++;
    var o = g.querySelector('object, img, svg');
    var svg = null;
    if (o && o.tagName === 'OBJECT') {
      var d = null;
      try { d = o.contentDocument; } catch (e) { d = null; }
      svg = d && d.documentElement && d.documentElement.tagName.toLowerCase() === 'svg' ? d.documentElement : null;
    } else if (o && o.tagName.toLowerCase() === 'svg') {
      svg = o;
    } else if (o && o.tagName === 'IMG' && o.naturalWidth > 0) {
      return;
    }
    var r = o ? o.getBoundingClientRect() : {width: 0, height: 0};
    var nodes = svg ? svg.querySelectorAll('g.node').length : 0;
    if (!svg || nodes === 0 || r.width < 10 || r.height < 10) {
      problems.push('the diagram under "' + where(g) + '" did not render (' +
                    (svg ? nodes + ' nodes, ' + Math.round(r.width) + 'x' + Math.round(r.height) + ' px'
                         : 'no SVG') + ')');
    }
  });
  var out = document.createElement('pre');
  out.id = 'docs-check-result';
  out.style.display = 'none';
  // ?focus=ID (screenshots): start the page at that section, by taking
  // out what comes before it; scrolling to an anchor leaves headless
  // chromium's picture blank.
  var focus = new URLSearchParams(location.search).get('focus');
  var target = focus && document.getElementById(focus);
  if (target) {
    for (var e = target; e && e !== column; e = e.parentElement) {
      while (e.previousElementSibling) e.parentElement.removeChild(e.previousElementSibling);
    }
    window.scrollTo(0, 0);
  }
  out.textContent = JSON.stringify({tables: tables, diagrams: diagrams, blocks: blocks,
                                    problems: problems});
  document.body.appendChild(out);
});
</script>
"""


class Handler(http.server.SimpleHTTPRequestHandler):
    """Serves the book, with the probe added to every HTML page."""

    def send_head(self):
        path = self.translate_path(self.path)
        if not path.endswith('.html') or not os.path.isfile(path):
            return super().send_head()
        with open(path, 'rb') as f:
            body = f.read().replace(b'</body>', PROBE.encode() + b'</body>', 1)
        self.send_response(200)
        self.send_header('Content-Type', 'text/html; charset=utf-8')
        self.send_header('Content-Length', str(len(body)))
        self.end_headers()
        return io.BytesIO(body)

    def log_message(self, *args):
        pass


def chromium():
    for name in ('chromium', 'chromium-browser'):
        path = shutil.which(name)
        if path:
            return path
    raise LabError('chromium is missing: vm/deps.sh install docs-check')


def browser(url, *extra):
    """One headless chromium run, with a profile of its own (two run at once)."""
    profile = tempfile.mkdtemp(dir=os.environ['DOCS_CHECK_PROFILE'])
    cmd = [chromium(), '--headless', '--no-sandbox', '--disable-gpu',
           '--disable-dev-shm-usage', '--hide-scrollbars', '--no-first-run',
           '--user-data-dir=' + profile,
           f'--window-size={WIDTH},{HEIGHT}', '--virtual-time-budget=10000',
           *extra, url]
    try:
        return subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               text=True, timeout=120)
    finally:
        shutil.rmtree(profile, ignore_errors=True)


def check_page(base, page):
    result = browser(f'{base}/{page}', '--dump-dom')
    m = re.search(r'<pre id="docs-check-result"[^>]*>(.*?)</pre>', result.stdout, re.S)
    if not m:
        return page, None
    text = (m.group(1).replace('&quot;', '"').replace('&lt;', '<')
            .replace('&gt;', '>').replace('&amp;', '&'))
    return page, json.loads(text)


def run(html, out):
    html = os.path.abspath(html)
    if not os.path.isfile(os.path.join(html, 'index.html')):
        raise LabError(f'no book in {html}: run make docs first')
    os.makedirs(out, exist_ok=True)
    profile = os.path.join(os.path.abspath(out), '.chromium-profile')
    os.makedirs(profile, exist_ok=True)
    os.environ['DOCS_CHECK_PROFILE'] = profile

    server = http.server.ThreadingHTTPServer(
        ('127.0.0.1', 0), functools.partial(Handler, directory=html))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f'http://127.0.0.1:{server.server_address[1]}'

    pages = sorted(os.path.relpath(os.path.join(d, f), html)
                   for d, _, files in os.walk(html) for f in files
                   if f.endswith('.html') and not d.startswith(os.path.join(html, '_'))
                   and f not in ('search.html', 'genindex.html'))
    failed, tables, diagrams, blocks = 0, 0, 0, 0
    try:
        # One browser per page; two at a time, for the two cores.
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for page, res in pool.map(functools.partial(check_page, base), pages):
                if res is None:
                    failed += 1
                    print(f'not ok {page}: the page did not finish loading')
                    continue
                tables += res['tables']
                diagrams += res['diagrams']
                blocks += res['blocks']
                if res['problems']:
                    failed += 1
                    print(f'not ok {page}')
                    for p in res['problems']:
                        print(f'#   {p}')
                else:
                    print(f'ok {page} ({res["tables"]} tables, {res["diagrams"]} diagrams, '
                          f'{res["blocks"]} literal blocks)')
        for page, name in SCREENSHOTS:
            if not os.path.isfile(os.path.join(html, page.split('?')[0])):
                continue
            shot = os.path.join(out, name)
            browser(f'{base}/{page}', f'--screenshot={shot}')
            print(f'  SHOT     {os.path.relpath(shot)}')
    finally:
        server.shutdown()
        shutil.rmtree(profile, ignore_errors=True)

    print(f'docs-check: {len(pages)} pages, {tables} tables, {diagrams} diagrams, '
          f'{blocks} literal blocks, width {WIDTH} px')
    print(f'{len(pages) - failed} passed, {failed} failed')
    return 1 if failed else 0
