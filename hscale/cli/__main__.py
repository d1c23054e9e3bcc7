"""``python -m hscale.cli`` runs the ``hscale`` command."""

from hscale.cli import main

main()
