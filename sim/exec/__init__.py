"""``avta exec``: a raw DRAM image's instructions on fsim or tsim (:mod:`.cli`)."""
