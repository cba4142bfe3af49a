"""``python -m parplan``: the ``parplan`` command."""
from parplan.cli.app import app

if __name__ == "__main__":
    app(prog_name="parplan")
