"""The conformance harness: program headers, backend features, builds, runs and outcomes.

Pure logic (header parsing, feature expressions, outcome classification) lives in
modules with no compiler or device dependency, so its unit tests run anywhere.
"""
