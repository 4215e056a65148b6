"""`ompsim bench`: result parsing, goal evaluation, the generated Markdown and failure reporting.

No timing is asserted anywhere: the figures themselves are measurements, only
their bookkeeping is tested.
"""
import json
import os
import subprocess

import pytest

from ompsim_base import paths
from ompsim_cli import bench
from ompsim_cli.benchmarks import (common, concurrency, gpuchecks, gpuimages, imageload, lookup, matrixcolumns,
                                   registration)


from ompsim_cli.benchmarks import common, concurrency, launch, lookup, registration

OMPSIM = os.path.join(paths.ROOT, "scripts", "ompsim")


def gbench_entry(impl, size, pattern, cpu, aggregate=None, **counters):
    name = "lookup/%s/%d/%s" % (impl, size, pattern)
    e = {"name": name + ("_" + aggregate if aggregate else ""), "run_name": name, "cpu_time": cpu,
         "real_time": cpu, "time_unit": "ns", "run_type": "aggregate" if aggregate else "iteration"}
    if aggregate:
        e["aggregate_name"] = aggregate
    e.update(counters)
    return e


def test_parse_gbench_prefers_median_aggregate_and_converts_units():
    doc = {"benchmarks": [
        gbench_entry("ours", 16, "random_hit", 99.0),
        gbench_entry("ours", 16, "random_hit", 5.0, aggregate="mean"),
        gbench_entry("ours", 16, "random_hit", 4.0, aggregate="median", bytes_per_entry=16.0),
        dict(gbench_entry("binary_search", 16, "random_hit", 0.5, aggregate="median"), time_unit="us"),
        {"name": "something_else_median", "run_name": "something_else", "aggregate_name": "median",
         "cpu_time": 1.0, "time_unit": "ns"},
    ]}
    times, counters = lookup.parse_gbench(doc)
    assert times == {("ours", 16, "random_hit"): 4.0, ("binary_search", 16, "random_hit"): 500.0}
    assert counters[("ours", 16, "random_hit")] == {"bytes_per_entry": 16.0}


def test_parse_gbench_single_runs_without_repetitions():
    doc = {"benchmarks": [gbench_entry("unordered_map", 1, "random_miss", 3.0)]}
    times, _ = lookup.parse_gbench(doc)
    assert times == {("unordered_map", 1, "random_miss"): 3.0}


def rows_where_ours_is(factor_small, factor_big):
    """Synthetic lookup rows: ours = baseline / factor (factor > 1: ours faster)."""
    rows = {}
    for n in lookup.LOOKUP_SIZES:
        for p in lookup.LOOKUP_PATTERNS:
            rows[("binary_search_call", n, p)] = 100.0
            rows[("unordered_map_call", n, p)] = 120.0
            # Inlined references never count toward the goals.
            rows[("binary_search", n, p)] = 1.0
            rows[("ompsim", n, p)] = 100.0 / (factor_big if n >= 65536 else factor_small)
    return rows


def test_lookup_goals_met_when_ours_is_fast_everywhere():
    g = lookup.lookup_goals(rows_where_ours_is(1.2, 2.0))
    assert g["never_slower"]["met"] is True
    assert g["faster_than_bsearch_64ki"]["met"] is True
    assert g["faster_than_bsearch_64ki"]["worst"]["ratio"] == pytest.approx(2.0)


def test_lookup_goals_name_the_cell_that_misses():
    rows = rows_where_ours_is(1.2, 1.4)
    rows[("unordered_map_call", 1024, "sequential_miss")] = 10.0  # hash map beats ompsim here
    g = lookup.lookup_goals(rows)
    assert g["never_slower"]["met"] is False
    worst = g["never_slower"]["worst"]
    assert (worst["size"], worst["pattern"], worst["best_baseline"]) == (1024, "sequential_miss", "unordered_map_call")
    assert worst["ratio"] == pytest.approx(10.0 / (100.0 / 1.2))
    assert g["faster_than_bsearch_64ki"]["met"] is False  # 1.4x < 1.5x
    assert len(g["never_slower"]["misses"]) == 1


def test_lookup_goals_unmeasured_when_rows_missing():
    g = lookup.lookup_goals({})
    assert g["never_slower"]["met"] is None and g["faster_than_bsearch_64ki"]["met"] is None


def test_markdown_says_not_available_with_the_reason():
    res = {"machine": {"cpu": "test cpu", "cores": 2}, "quick": True, "parts": {
        "lookup": {"unavailable": "ompsim_lookup_bench not built"},
        "launch": {"launches": 10, "unit": "us", "backends": {
            "sim": {"unavailable": "backend sim: runtime missing"},
            "ours-host": {"median_us": 1.0, "p99_us": 2.0, "min_us": 0.5},
            "host-upstream": {"median_us": 2.0, "p99_us": 3.0, "min_us": 1.0}},
            "goal": {"met": None, "sim_over_upstream_median": None}},
    }}
    md = bench.render_markdown(res)
    assert "not available: ompsim_lookup_bench not built" in md
    assert "| sim | not available: backend sim: runtime missing |" in md
    assert "| ours-host | 1.00 | 2.00 | 0.50 |" in md
    assert "sim's median at most 1.5x and its p99 at most 2x the stock host plugin's*: not measured" in md
    assert "### 4. Transfer bandwidth\n\nnot run in this invocation." in md


def test_markdown_states_goal_with_ratio():
    res = {"machine": {}, "parts": {"bandwidth": {"unit": "GB/s", "sizes": [common.MiB], "backends": {
        "sim": [{"size": common.MiB, "h2d_gbs": 1.0, "d2h_gbs": 3.0, "memcpy_gbs": 4.0}]},
        "goal": {"met": False, "worst_fraction_of_memcpy_from_1MiB": 0.25}}}}
    md = bench.render_markdown(res)
    assert "| sim | 1 Mi | 1.00 | 3.00 | 4.00 | 0.25 |" in md
    assert "**not met**; worst fraction = 0.25" in md


def test_insert_section_replaces_only_the_generated_block():
    doc = "# Perf\n\nintro\n\n%s\nold table\n%s\n\nafter\n" % (bench.BEGIN, bench.END)
    once = bench.insert_section(doc, "new table\n")
    assert "old table" not in once and "new table" in once
    assert once.startswith("# Perf\n\nintro\n") and once.endswith("\nafter\n")
    assert bench.insert_section(once, "new table\n") == once
    appended = bench.insert_section("# Perf\n", "t\n")
    assert appended.endswith(bench.BEGIN + "\nt\n" + bench.END + "\n")


def test_failing_program_is_reported_with_its_last_error_line():
    with pytest.raises(common.Unavailable) as e:
        common.run_program("/bin/sh", ["-c", "echo partial; echo 'no device here' >&2; exit 3"], dict(os.environ))
    assert "exited 3: no device here" in str(e.value)


def test_program_results_are_read_up_to_the_marker():
    text, seconds, note = common.run_program("/bin/sh", ["-c", "echo size=4 done=1"], dict(os.environ))
    assert common.parse_kv(text) == {"size": 4.0, "done": 1.0}
    assert seconds > 0 and note is None


def test_unknown_part_is_a_usage_error():
    r = subprocess.run([OMPSIM, "bench", "--no-build", "--only", "nope"],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    assert r.returncode == 2
    assert "ompsim: bench --only: unknown part nope" in r.stdout


LOOKUP_BENCH = os.path.join(paths.BIN, "ompsim_lookup_bench")


@pytest.mark.skipif(not os.path.exists(LOOKUP_BENCH), reason="ompsim_lookup_bench not built in OMPSIM_BUILD_DIR")
def test_lookup_bench_reports_every_implementation_with_memory_per_entry(tmp_path):
    out = tmp_path / "lookup.json"
    r = subprocess.run([LOOKUP_BENCH, "--benchmark_filter=^lookup/[a-z_]+/1024/random_hit$",
                        "--benchmark_min_time=0.001", "--benchmark_out=%s" % out, "--benchmark_out_format=json"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    times, counters = lookup.parse_gbench(doc)
    assert set(times) == {(i, 1024, "random_hit") for i in lookup.LOOKUP_IMPLS}
    # Every layout stores at least a host and a device address (16 bytes) per entry.
    for key, c in counters.items():
        assert c["bytes_per_entry"] >= 16.0, key
    ctx = doc["context"]["perf_cache_misses"]
    assert ctx == "available" or ctx.startswith("not available: ")


def test_registration_goal_leaves_noise_out():
    part = {"counts": [1024, 10240], "backends": {"ours-host": {"1024": -5.0, "10240": 15.0},
                                                  "host-upstream": {"1024": -4.5, "10240": 24.0}}}
    g = registration.registration_goal(part)
    assert {k: g[k] for k in ("met", "upstream_over_ours", "within_noise")} == {
        "met": True, "upstream_over_ours": [pytest.approx(1.6)], "within_noise": [1024]}


def test_registration_goals_for_sim_and_against_stock_from_10ki():
    part = {"counts": [1024, 10240], "backends": {"ours-host": {"1024": 2.0, "10240": 20.0},
                                                  "host-upstream": {"1024": 3.0, "10240": 40.0},
                                                  "sim": {"1024": 9.0, "10240": 36.0}}}
    g = registration.registration_goal(part)
    assert g["sim_over_ours"] == {"10240": pytest.approx(1.8)} and g["sim_met"] is False
    assert g["ours_over_upstream"] == {"10240": pytest.approx(0.5)} and g["ours_met"] is True


def test_concurrency_goals_are_ratios_to_stock_at_every_thread_count():
    stock = {"1": 100.0, "2": 100.0, "4": 100.0, "8": 100.0}
    fine = {"1": 150.0, "2": 140.0, "4": 150.0, "8": 120.0}
    too_slow_at_8 = {"1": 50.0, "2": 60.0, "4": 50.0, "8": 160.0}
    off = "host-upstream, hidden helper tasks off"
    g = concurrency.concurrency_goal({"host-upstream": stock, "sim": fine, "sim-2dev": too_slow_at_8,
                                      "ours-host": fine, off: stock, "sim, hidden helper tasks off": fine})
    assert g["sim"]["met"] is True and g["sim"]["worst_over_reference"] == pytest.approx(1.5)
    assert g["sim-2dev"]["met"] is False and g["sim-2dev"]["over_reference"]["8"] == pytest.approx(1.6)
    # ours-host must not be slower than stock at all.
    assert g["ours-host"]["met"] is False and g["ours-host"]["reference"] == "host-upstream"
    assert g["sim, hidden helper tasks off"]["met"] is True and g["sim, hidden helper tasks off"]["reference"] == off
    assert g["sim-2dev, hidden helper tasks off"]["met"] is None
    assert concurrency.concurrency_goal({"host-upstream": {"unavailable": "x"}, "sim": fine})["sim"]["met"] is None


def test_imageload_markdown_shows_cold_and_warm_bitcode_side_by_side_with_both_goals():
    part = imageload.imageload_goals({
        "unit": "ms", "sizes": [10, 1000], "elf": {"10": 20.0, "1000": 20.0}, "ir": {"10": 28.0, "1000": 140.0},
        "ir_cached": {"10": 26.0, "1000": 29.0}, "first_call_us": {"elf": {}, "ir": {}}})
    assert part["goal"]["met"] is False and part["goal_warm"]["met"] is True
    md = bench.render_markdown({"machine": {}, "parts": {"imageload": part}})
    assert "| device functions | ELF | bitcode, cold | cold / ELF | bitcode, warm | warm / ELF |" in md
    assert "| 1000 | 20.0 | 140.0 | 7.00 | 29.0 | 1.45 | n/a | n/a |" in md
    assert "**not met**; cold/ELF = 1.40 at 10, 7.00 at 1000." in md
    assert "at most 1.5x ELF at 1000 functions*: **met**; warm/ELF = 1.45 at 1000." in md
    # A warm ratio over 1.5 misses its goal; results from before the warm column say n/a there.
    assert imageload.imageload_goals(dict(part, ir_cached={"1000": 31.0}))["goal_warm"]["met"] is False
    del part["ir_cached"], part["ir_cached_over_elf"], part["goal_warm"]
    md = bench.render_markdown({"machine": {}, "parts": {"imageload": part}})
    assert "| 10 | 20.0 | 28.0 | 1.40 | n/a | n/a | n/a | n/a |" in md
    part["ir_cached"] = {"unavailable": "sim-ir: no"}
    assert "warm bitcode: not available: sim-ir: no" in bench.render_markdown(
        {"machine": {}, "parts": {"imageload": part}})


def test_matrixcolumns_compares_only_programs_that_ran_in_both_columns():
    sim, up = "sim/pass", "host-upstream/native"
    runs = {("a", sim): [0.30, 0.10, 0.20], ("a", up): [0.10, 0.10, 0.10],
            ("b", sim): [0.05, 0.05, 0.05], ("b", up): [0.10, 0.10, 0.10],
            ("hangs", up): [0.1, 0.1, 0.1], ("hangs", sim): [60.0, 60.0, 60.0],
            ("native_only", up): [0.1, 0.1, 0.1]}
    outcomes = {("a", sim): ["PASS"] * 4, ("a", up): ["PASS"] * 4,
                ("b", sim): ["PASS"] * 4, ("b", up): ["XFAIL"] * 4,
                ("hangs", sim): ["TIMEOUT"] * 4, ("hangs", up): ["PASS"] * 4,
                ("native_only", sim): ["COMPILE-ERROR"] * 4, ("native_only", up): ["PASS"] * 4}
    p = matrixcolumns.summarize(["a", "b", "hangs", "native_only"], runs, outcomes, rounds=3)
    assert sorted(p["programs"]) == ["a", "b"]
    assert p["excluded"] == {"hangs": "sim/pass: TIMEOUT", "native_only": "sim/pass: not run (COMPILE-ERROR)"}
    # Medians per program (200 ms, 50 ms against 100 ms, 100 ms), then sums.
    assert p["sum_s"] == {sim: pytest.approx(0.25), up: pytest.approx(0.2)}
    assert p["goal"]["ratio"] == pytest.approx(1.25) and p["goal"]["met"] is True
    assert p["top"] == ["a", "b"] and p["programs"]["a"]["ratio"] == pytest.approx(2.0)
    assert p["programs"]["b"]["outcomes"] == {sim: "PASS", up: "XFAIL"}
    none = matrixcolumns.summarize(["native_only"], runs, outcomes, rounds=3)
    assert none["goal"]["met"] is None and none["programs"] == {}


def test_markdown_states_matrixcolumns_goal_with_ratio():
    sim, up = "sim/pass", "host-upstream/native"
    runs = {("a", sim): [0.4], ("a", up): [0.2]}
    outcomes = {("a", sim): ["PASS", "PASS"], ("a", up): ["PASS", "PASS"], ("u", sim): ["UNSUPPORTED"] * 2,
                ("u", up): ["UNSUPPORTED"] * 2}
    md = bench.render_markdown({"machine": {}, "parts": {
        "matrixcolumns": matrixcolumns.summarize(["a", "u"], runs, outcomes, rounds=1)}})
    assert "| sim/pass | 1 | 0.400 |" in md and "| host-upstream/native | 1 | 0.200 |" in md
    assert "| a | 400.0 | 200.0 | 2.00 | PASS / PASS |" in md
    assert "Not compared (1): u (sim/pass: not run (UNSUPPORTED); host-upstream/native: not run (UNSUPPORTED))." in md
    assert ("- Goal *sim/pass at most 1.3x host-upstream/native, compile time excluded*: **not met**; "
            "ratio = 2.00.") in md


def test_gpuimages_goals_and_markdown_name_each_ratio_and_what_was_not_measured():
    out = {"unit": "ms", "loop": {"sim": 1.0, "sim-nvptx": 2.5, "sim-amdgcn": {"unavailable": "no clang"},
                                  "sim-nvptx-fibers": 5.0, "host-upstream": 0.5},
           "reduction": {"sim": 2.0, "sim-nvptx": 30.0, "sim-nvptx-fibers": 90.0, "host-upstream": 1.5},
           "tile": {"sim-nvptx": 20.0, "sim-nvptx-fibers": 400.0, "host-upstream": {"unavailable": "a wrong result"}},
           "first_kernel": {"sim-ir": 10.0, "sim-nvptx": 25.0},
           "barriers": {"sim": 50.0, "sim-nvptx": 8.0, "sim-nvptx-fibers": 40.0},
           "block_barriers": {"sim": 40.0, "sim-nvptx": 15.0}}
    out["goal"] = g = gpuimages.goals(out)
    assert g["loop_nvptx_over_x86"] == 2.5 and g["loop_amdgcn_over_x86"] is None and g["loop_met"] is True
    assert g["first_kernel_gpu_over_ir"] == 2.5 and g["first_kernel_met"] is False
    assert g["barriers_nvptx_s"] == 0.008 and g["barriers_met"] is True
    assert g["barriers_fibers_over_rounds"] == 5.0 and g["block_barriers_fibers_over_rounds"] is None
    assert g["block_barriers_nvptx_s"] == 0.015 and g["block_barriers_met"] is False
    md = bench.render_markdown({"machine": {}, "parts": {"gpuimages": out}})
    assert g["loop_nvptx_over_stock"] == 5.0 and g["reduction_nvptx_over_x86"] == 15.0
    assert g["reduction_nvptx_over_stock"] == 20.0 and g["reduction_fibers_over_rounds"] == 3.0
    assert ("| 1 Mi-element loop, median of 10 launches | 1.000 |  | 2.500 | not available: no clang | 5.000 "
            "| 0.500 |") in md
    assert "| 1 Mi-element sum (`reduction(+ : s)`), median of 10 launches | 2.000 |  | 30.000 |  | 90.000 | 1.500 |" in md
    assert "sim-nvptx/sim = 15.00, sim-nvptx/stock = 20.00 (the loop: 5.00)" in md
    assert "(its two barriers suspend them; sim-nvptx fibers/rounds = 3.00)" in md
    assert g["tile_fibers_over_rounds"] == 20.0
    assert ("| team-local tile stencil, 4096 teams of 256, median of 10 launches |  |  | 20.000 |  | 400.000 "
            "| not available: a wrong result |") in md
    assert "neighbours read): its region's threads run in rounds (sim-nvptx fibers/rounds = 20.00)" in md
    assert "(sim-nvptx fibers/loops = 2.00)" in md
    assert "*a GPU image's loop at most 3x the x86 image's*: **met**; sim-nvptx/sim = 2.50, sim-amdgcn/sim = n/a" in md
    assert "warm JIT cache at most 2x the x86 bitcode image's*: **not met**; sim-nvptx/sim-ir = 2.50." in md
    assert "at most 0.01 s a launch*: **met**; sim-nvptx took 0.008 s (after a warm-up launch)" in md
    assert "(sim-nvptx fibers/rounds = 5.00)" in md
    assert "| 1000 barriers, one team of 1024 threads | 50.000 |  | 8.000 |  | 40.000 |  |" in md
    assert "| 1000 block barriers, one ompx_bare block of 1024 threads | 40.000 |  | 15.000 |  |  |  |" in md
    assert "`ompx_bare` kernel: **not met**; sim-nvptx took 0.015 s (fibers/rounds = n/a)." in md


def test_gpuchecks_goal_is_the_worst_ratio_and_markdown_names_each_kernel():
    out = {"unit": "ms", "plain": {"loop": 10.0, "tile": 4.0, "scan": {"unavailable": "no ompx.h"}},
           "checked": {"loop": 30.0, "tile": 48.0, "scan": {"unavailable": "no ompx.h"}}}
    out["goal"] = g = gpuchecks.goals(out)
    assert g["ratios"] == {"loop": 3.0, "tile": 12.0, "scan": None}
    assert g["worst"] == 12.0 and g["met"] is False
    md = bench.render_markdown({"machine": {}, "parts": {"gpuchecks": out}})
    assert "| 1 Mi-element loop, median of 10 launches | 10.000 | 30.000 | 3.00 |" in md
    assert "| warp scan in team-shared memory, 64 ompx_bare blocks of 256 threads | not available: no ompx.h | " in md
    assert "*the checker at most 10x plain sim-nvptx* (compute-sanitizer's racecheck costs 10-100x on a GPU): " \
           "**not met**; worst ratio = 12.00." in md


@pytest.mark.e2e
def test_matrixcolumns_part_runs_matrix_cells_and_reports_the_goal(tmp_path):
    """The part's quickest form on two programs, through the CLI: table rows and the goal line carry numbers."""
    from ompsim_base import backends
    for be in ("sim", "host-upstream"):
        why = backends.unavailable_reason(be)
        if why:
            pytest.skip("backend %s unavailable: %s" % (be, why))
    if not os.path.exists(paths.PASS_PLUGIN):
        pytest.skip("ompsim's pass plugin not built (%s)" % paths.PASS_PLUGIN)
    doc = tmp_path / "performance.md"
    r = subprocess.run([OMPSIM, "bench", "--no-build", "--quick", "--only", "matrixcolumns",
                        "--program", "parallel_for_scalar", "--program", "declare_target_to_indirect",
                        "--out", str(tmp_path), "--doc", str(doc)],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800)
    assert r.returncode == 0, r.stdout
    part = json.loads((tmp_path / "results.json").read_text())["parts"]["matrixcolumns"]
    assert sorted(part["programs"]) == ["declare_target_to_indirect", "parallel_for_scalar"], part
    md = doc.read_text()
    number = r"[0-9]+\.[0-9]+"
    import re
    for col in ("sim/pass", "host-upstream/native"):
        assert re.search(r"^\| %s \| 2 \| %s \|$" % (re.escape(col), number), md, re.M), md
    assert re.search(r"^\| parallel_for_scalar \| %s \| %s \| %s \| PASS / PASS \|$" % (number, number, number),
                     md, re.M), md
    assert re.search(r"^- Goal \*sim/pass at most 1\.3x host-upstream/native, compile time excluded\*: "
                     r"\*\*(met|not met)\*\*; ratio = %s\.$" % number, md, re.M), md


def test_a_partial_run_names_the_parts_it_has_no_results_for():
    # Such a run leaves docs/performance.md as it is (each part keeps its last figures there).
    res = {"parts": {p: {} for p in bench.PARTS if p != "gpuimages"}}
    assert bench.parts_without_results(res) == ["gpuimages"]
    assert bench.parts_without_results({"parts": {p: {} for p in bench.PARTS}}) == []


def test_launch_goal_needs_median_and_p99():
    up = {"median_us": 1.0, "p99_us": 2.0}
    g = launch.launch_goal({"median_us": 1.5, "p99_us": 4.0}, up)
    assert g["met"] is True and g["sim_over_upstream_median"] == pytest.approx(1.5)
    assert launch.launch_goal({"median_us": 1.6, "p99_us": 2.0}, up)["met"] is False
    assert launch.launch_goal({"median_us": 1.0, "p99_us": 4.2}, up)["met"] is False
    assert launch.launch_goal({"unavailable": "x"}, up)["met"] is None


def test_concurrency_markdown_lists_stock_and_labelled_diagnostic_rows():
    row = {"1": 10.0, "2": 12.0, "4": 14.0, "8": 16.0}
    diag = concurrency.CONCURRENCY_DIAGNOSTIC_RUNS[0][0]
    assert diag.endswith("(diagnostic)")
    res = {"machine": {}, "parts": {"concurrency": {
        "threads": [1, 2, 4, 8], "total": 16, "unit": "ms", "diagnostic_reps": 2,
        "runs": {"sim": row, "ours-host": row, "host-upstream": row, diag: row},
        "goal": concurrency.concurrency_goal({"sim": row, "ours-host": row, "host-upstream": row})}}}
    md = bench.render_markdown(res)
    assert "| host-upstream | 10.0 | 12.0 | 14.0 | 16.0 |" in md
    assert "| %s | 10.0 | 12.0 | 14.0 | 16.0 |" % diag in md
    assert "no goal is judged on them" in md
    assert "| sim / host-upstream | 1.00 | 1.00 | 1.00 | 1.00 | at most 1.5x: **met** |" in md
    assert "| ours-host / host-upstream | 1.00 | 1.00 | 1.00 | 1.00 | at most 1.0x: **met** |" in md


def test_a_gpu_image_figure_whose_run_computes_something_else_is_no_figure(monkeypatch):
    # Stock's host plugin runs the generic-mode kernel's teams as it runs them (a[N - 1] stays
    # unchanged): its time is no figure beside the runs that computed the loop.
    outputs = {"sim": "median_ns=3000000 check=513.998535 done=1",
               "sim-nvptx": "median_ns=4000000 check=513.998535 done=1",
               "host-upstream": "median_ns=5000 check=1048575.000000 done=1"}
    monkeypatch.setattr(gpuimages, "compile_program", lambda name, source, flags: "/bin/true")
    monkeypatch.setattr(gpuimages, "backend_env", lambda backend: {"BACKEND": backend})
    monkeypatch.setattr(gpuimages, "run_program", lambda exe, args, env: (outputs[env["BACKEND"]], 0.1, ""))
    check = {}
    assert gpuimages.run_built("g", "", [], "sim", "median_ns", check=check) == 3000000
    assert gpuimages.run_built("g", "", [], "sim-nvptx", "median_ns", check=check) == 4000000
    with pytest.raises(common.Unavailable, match=r"a wrong result: check=1048575.0 where sim printed 513.998535"):
        gpuimages.run_built("g", "", [], "host-upstream", "median_ns", check=check)
