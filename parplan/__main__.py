"""``python -m parplan``: the ``parplan`` command."""
from parplan.cli.app import main

if __name__ == "__main__":
    main(prog_name="parplan")
