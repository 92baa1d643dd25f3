"""``avta run``: a whole network on a simulation target, with a per-layer report (:mod:`.cli`)."""
