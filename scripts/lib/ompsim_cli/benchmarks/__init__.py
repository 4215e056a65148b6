"""The parts of `ompsim bench`, one module each; common.py holds what they share."""
