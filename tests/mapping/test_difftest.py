"""The differential test's fixed seed set: generated mapping programs print the
same on ours-host and sim as on stock libomptarget 22 (scripts/difftest runs
new seeds for longer)."""
import pytest

from ompsim_cli import difftest

pytestmark = pytest.mark.e2e

#: A handful of fixed seeds: each program is compiled once and run on three backends.
SEEDS = [1, 2, 3, 4, 5]


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_program_prints_the_same_on_every_backend(seed, tmp_path):
    outcome = difftest.run_seed(seed, str(tmp_path))
    assert outcome.status == "same", outcome.report()


def test_generator_is_deterministic_and_covers_the_constructs():
    text = "".join(difftest.generate(s) for s in range(40))
    assert difftest.generate(7) == difftest.generate(7)
    for construct in ("#pragma omp target map", "#pragma omp target data", "target enter data",
                      "target exit data", "target update", "nowait", "always", "present",
                      "delete", "ompx_hold", "[0:0]", "s.data[", "s.fn(", "t[i].a", "malloc",
                      "mapper(sm)", "pa[k].q[0:", "teams distribute parallel for"):
        assert construct in text, construct
    # A strided section (stride 2 or 3) appears in some update.
    assert ":2])" in text or ":3])" in text


def test_a_wrong_copy_back_is_reported_with_the_program(tmp_path, monkeypatch):
    # A runtime that drops the copy-back must be caught: simulate it by
    # comparing a program with a variant whose output differs.
    real_run = difftest.subprocess.run
    calls = []

    def fake_run(cmd, *args, **kwargs):
        r = real_run(cmd, *args, **kwargs)
        env = kwargs.get("env") or {}
        if env.get("OMPSIM_PLUGINS") == "sim" and r.stdout:
            calls.append(cmd)
            r.stdout = r.stdout.replace("x=", "x=9", 1)
        return r

    monkeypatch.setattr(difftest.subprocess, "run", fake_run)
    outcome = difftest.run_seed(1, str(tmp_path))
    assert calls, "sim never ran"
    assert outcome.status == "differs"
    report = outcome.report()
    assert "sim differs from host-upstream" in report and "int main(void)" in report
