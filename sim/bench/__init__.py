"""``avta bench``: every benchmark of the project, each a command that prints its figures; the
table of them and the command's handler are in :mod:`.cli`."""
