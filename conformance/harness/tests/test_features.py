"""Unit tests of feature expressions and backend capabilities."""
import pytest

from harness.features import BACKENDS, KNOWN_FEATURES, Expr, ExprError, backend_features


@pytest.mark.parametrize("text, features, value", [
    ("sim", {"sim"}, True),
    ("sim", {"ours-host"}, False),
    ("!sim", {"sim"}, False),
    ("sim && translate=native", {"sim", "translate=native"}, True),
    ("sim && translate=native", {"sim", "translate=pass"}, False),
    ("sim || ours-host", {"ours-host"}, True),
    ("!(sim || sim-ir) && shared-address-space", {"ours-host", "shared-address-space"}, True),
    ("!(sim || sim-ir) && shared-address-space", {"sim", "shared-address-space"}, False),
    ("a-or-b" if False else "c++ || fortran", {"c++"}, True),
    ("sim || ours-host && gpu", {"sim"}, True),          # && binds tighter than ||
    ("(sim || ours-host) && gpu", {"sim"}, False),
    ("!!sim", {"sim"}, True),
    ("true", set(), True),
    ("false || !false", set(), True),
])
def test_evaluation(text, features, value):
    assert Expr(text)(features) is value


@pytest.mark.parametrize("text, message", [
    ("", "empty"),
    ("sim &&", "ends early"),
    ("&& sim", "unexpected '&&'"),
    ("sim sim", "unexpected 'sim'"),
    ("(sim", "ends early"),
    ("sim)", "unexpected '\\)'"),
    ("sim & gpu", "unexpected character"),
    ("simulator", "unknown feature 'simulator'"),
    ("translate=jit", "unknown feature 'translate=jit'"),
])
def test_errors(text, message):
    with pytest.raises(ExprError, match=message):
        Expr(text)


def test_every_backend_feature_is_known_and_consistent():
    for b in BACKENDS:
        for t in ("pass", "native"):
            f = backend_features(b, t)
            assert f <= set(KNOWN_FEATURES)
            assert b in f and "translate=" + t in f
            assert ("separate-address-space" in f) != ("shared-address-space" in f)
            assert sum(i in f for i in ("image=elf", "image=ir", "image=gpu")) == 1


def test_capabilities():
    assert "separate-address-space" in backend_features("sim", "pass")
    assert "image=ir" in backend_features("sim-ir", "pass")
    assert "shared-address-space" in backend_features("host-upstream", "native")
    assert "ompsim-runtime" not in backend_features("host-upstream", "native")
    assert "ompsim-runtime" in backend_features("ours-host", "native")
    assert {"gpu", "separate-address-space"} <= backend_features("cuda-upstream", "native")
    assert "ompsim-device-runtime" in backend_features("sim", "pass", device_runtime=True)
    assert "ompsim-device-runtime" not in backend_features("sim", "pass", device_runtime=False)
    assert "c++" in backend_features("sim", "pass", language="c++")
    with pytest.raises(ValueError):
        backend_features("simulator", "pass")
