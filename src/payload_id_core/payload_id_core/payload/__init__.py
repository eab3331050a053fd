"""Payload identification: the payload Jacobian, every method of DESIGN.md behind one interface."""
