"""Formal verification of the hardware blocks with SymbiYosys (docs/formal.md, ``avta formal``)."""
