"""python3 -m kit VERB: the harness's entry points (the Makefile's targets
call them).

  test [LAB...]              make test: every lab's checks (or those named),
                             then one summary; DEBUG=1 on the debug kernel
  mutation LAB NAME [DIR]    one mutation of a lab (variants/NAME.series),
                             built, booted and checked; results in DIR
  container [--base]         make container: the kit's image (podman or
                             docker); --base builds debian:bookworm first
  in-container [CMD]         make in-container: the shell command CMD (or
                             $CMD) in that image, on this checkout
"""
import sys

from .labs import LabError
from . import suite
from . import container


def main(argv):
    try:
        if argv[:1] == ['test']:
            return suite.make_test(argv[1:])
        if argv[:1] == ['mutation'] and len(argv) in (3, 4):
            return suite.one_mutation(*argv[1:])
        # The container path (issue 32).
        if argv[:1] == ['container']:
            return container.build(argv[1:])
        if argv[:1] == ['in-container'] and len(argv) <= 2:
            return container.run_in(argv[1:])
    except LabError as e:
        print(f'kit: {e}', file=sys.stderr)
        return 1
    print(__doc__, file=sys.stderr)
    return 2


sys.exit(main(sys.argv[1:]))
