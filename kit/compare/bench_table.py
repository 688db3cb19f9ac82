"""The microbenchmark table of `make bench`.: table({LABEL: [LOG, ...], ...}).

One column per kernel, the first being the baseline (lab 01, anonymous
inode). Each LOG is a VM console with pidfd_bench.c's LAB_BENCH lines
(vm/guest/markers.h; then name median_ns=M runs_ns=a,b,...); a kernel
booted several times gives several logs, and its figure is the median of all runs of all boots. Other
columns also show their ratio to the baseline ("x anon"), and every figure
its ratio to eventfd + close on its own kernel ("=N.Ne").
"""
import statistics

from ..report import tap as markers

# Every figure is also given as a multiple of this one on the same kernel
# ("=N.Ne"): 6.1 and 6.12 differ in far more than pidfs, and an
# eventfd is a file made and dropped without pidfs or a stash.
BASELINE = 'eventfd_close'

ORDER = [
    ('eventfd_close', 'eventfd + close (same-kernel baseline)'),
    ('nsfs_open_close', 'open /proc/self/ns/uts + close (nsfs)'),
    ('open_close', 'pidfd_open + close'),
    ('open_close_held', 'pidfd_open + close, 1 pidfd held'),
    ('open_fstat_close', 'pidfd_open + fstat + close'),
    ('threads_open_close', '4 threads, pidfd_open + close'),
    ('fork_reap', 'fork + exit + waitpid (baseline)'),
    ('fork_pidfd_reap', 'fork + pidfd_open + waitid + close'),
]


def runs(paths):
    out = {}
    for path in paths:
        try:
            with open(path, errors='replace') as f:
                for line in f:
                    parts = line.split()
                    if len(parts) < 4 or parts[0] != markers.LAB_BENCH:
                        continue
                    fields = dict(p.split('=', 1) for p in parts[2:] if '=' in p)
                    out.setdefault(parts[1], []).extend(
                        int(x) for x in fields['runs_ns'].split(','))
        except OSError:
            pass
    return out


def human(ns):
    if ns >= 100000:
        return f'{ns / 1000:.0f} us'
    if ns >= 10000:
        return f'{ns / 1000:.1f} us'
    return f'{ns / 1000:.2f} us'


def table(columns):
    """columns: {label: [console log, ...]}, the baseline first; 1 when a
    figure is missing."""
    cols = [(label, runs(logs)) for label, logs in columns.items()]
    base = cols[0][1]
    head = ['benchmark (median per operation)'] + [c[0] for c in cols]
    rows, missing = [], 0
    for key, text in ORDER:
        row = [text]
        for i, (_, data) in enumerate(cols):
            if not data.get(key):
                row.append('(no result)')
                missing += 1
                continue
            med = statistics.median(data[key])
            cell = human(med)
            if i and base.get(key):
                cell += f'  x{med / statistics.median(base[key]):.2f}'
            if key != BASELINE and data.get(BASELINE):
                cell += f'  ={med / statistics.median(data[BASELINE]):.1f}e'
            row.append(cell)
        rows.append(row)
    w = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]
    print('  '.join(f'{h:<{w[i]}}' if i == 0 else f'{h:>{w[i]}}'
                    for i, h in enumerate(head)).rstrip())
    for r in rows:
        print('  '.join(f'{c:<{w[i]}}' if i == 0 else f'{c:>{w[i]}}'
                        for i, c in enumerate(r)).rstrip())
    nruns = {c[0]: len(c[1].get('open_close', [])) for c in cols}
    print('=N.Ne = N.N times eventfd + close on the same kernel')
    print(f'x N = N times the {cols[0][0]} figure; runs per figure: '
          + ', '.join(f'{k} {v}' for k, v in nruns.items()))
    return 1 if missing else 0
