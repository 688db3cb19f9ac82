"""The user's settings, read from the environment and checked once.

make passes its command-line variables (LAB=, TIMEOUT=...) to the kit in
the environment. read() turns them into one Settings record, and refuses a
bad value in one line (LabError) before anything is built or booted; the
stages take their values from the record, never from os.environ.
"""
import os
import re
from dataclasses import dataclass, fields
from typing import Optional

from .labs import LabError

BENCH_PARTS = ('harness', 'micro', 'reports', 'room', 'goals')


@dataclass(frozen=True)
class Settings:
    debug: bool = False             # DEBUG=1: the debug kernel
    accel: Optional[str] = None     # ACCEL=kvm|tcg (None: probe)
    mem: str = '512M'               # MEM=512M
    smp: str = '2'                  # SMP=2
    gdb: bool = False               # GDB=1: a gdb stub on 127.0.0.1
    wait: bool = False              # WAIT=1: halted until gdb continues
    gdb_port: int = 1234            # GDB_PORT=1234
    timeout: Optional[float] = None     # TIMEOUT=seconds: a run's limit
    boot_timeout: Optional[float] = None  # BOOT_TIMEOUT=seconds: to userspace
    append: str = ''                # APPEND='...': more kernel arguments
    quiet: Optional[bool] = None    # QUIET=1: no console on the terminal
    debs: bool = True               # DEBS=0: a bundle without packages
    only: str = ''                  # ONLY=part of make bench, or make check's test or file
    full: bool = False              # FULL=1: make check reruns what passed on this kernel
    rounds: int = 3                 # ROUNDS=N boots per kernel (make bench)
    update: bool = False            # UPDATE=1: keep the output for the book


def _flag(name, value):
    if value in ('', '0', '1'):
        return value == '1'
    raise LabError(f"{name}={value}: say {name}=1 or {name}=0")


def _number(name, value, kind, low, high=None, unit=''):
    try:
        n = kind(value)
    except ValueError:
        n = None
    if n is None or n < low or (high is not None and n > high) or n != n:
        span = f'from {low} to {high}' if high is not None else f'{low} or more'
        raise LabError(f"{name}={value}: give a {'whole ' if kind is int else ''}number {span}{unit}, "
                       f"e.g. {name}={max(low, 1) if kind is int else 600}")
    return n


def read(env=None):
    """The settings in env (os.environ by default); LabError names the
    first bad one and what it takes."""
    env = os.environ if env is None else env

    def get(name):
        return (env.get(name) or '').strip()

    values = {}
    for name in ('DEBUG', 'GDB', 'WAIT', 'UPDATE'):
        values[name.lower()] = _flag(name, get(name))
    if get('QUIET'):
        values['quiet'] = _flag('QUIET', get('QUIET'))
    if get('DEBS'):
        values['debs'] = _flag('DEBS', get('DEBS'))
    if get('ACCEL'):
        if get('ACCEL') not in ('kvm', 'tcg'):
            raise LabError(f"ACCEL={get('ACCEL')}: say ACCEL=kvm or ACCEL=tcg (or leave it out: "
                           'the kit probes)')
        values['accel'] = get('ACCEL')
    if get('MEM'):
        if not re.fullmatch(r'[1-9][0-9]*[MG]?', get('MEM')):
            raise LabError(f"MEM={get('MEM')}: give QEMU's size, e.g. MEM=512M or MEM=1G")
        values['mem'] = get('MEM')
    if get('SMP'):
        values['smp'] = str(_number('SMP', get('SMP'), int, 1, 64))
    if get('GDB_PORT'):
        values['gdb_port'] = _number('GDB_PORT', get('GDB_PORT'), int, 1024, 65535)
    for name in ('TIMEOUT', 'BOOT_TIMEOUT'):
        if get(name):
            values[name.lower()] = _number(name, get(name), float, 1, unit=' seconds')
    if get('ROUNDS'):
        values['rounds'] = _number('ROUNDS', get('ROUNDS'), int, 1, 100)
    if get('ONLY'):
        # make bench's part, or make check's test or exercise file: each
        # verb says which it takes (bench.run(), labsuite/check.py).
        if not re.fullmatch(r'[\w./-]+', get('ONLY')):
            raise LabError(f"ONLY={get('ONLY')}: name one part of make bench ({'|'.join(BENCH_PARTS)}), "
                           "or one test or exercise file of make check")
        values['only'] = get('ONLY')
    values['full'] = _flag('FULL', get('FULL'))
    values['append'] = env.get('APPEND') or ''
    known = {f.name for f in fields(Settings)}
    return Settings(**{k: v for k, v in values.items() if k in known})
