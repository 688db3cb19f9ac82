"""python3 -m kit VERB (kit/cli.py; python3 -m kit --help lists the verbs)."""
import sys

from .cli import main

if __name__ == '__main__':
    sys.exit(main(sys.argv[1:]))
