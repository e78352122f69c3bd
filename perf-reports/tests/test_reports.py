"""Unit tests of the report scripts in perf-reports/: targets.py, drift.py and agreement.py.

Run: python3 -m unittest discover -s perf-reports/tests (from the repository root); `cargo test`
runs it too (bench-suite/tests/report_scripts.rs). Each test writes a small run file with
hand-computed numbers, runs one script function on it and checks the figures it prints.
"""
import contextlib
import importlib.util
import io
import json
import pathlib
import sys
import tempfile
import unittest

HERE = pathlib.Path(__file__).resolve().parent.parent


def load(name):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


targets, drift, agreement = load("targets"), load("drift"), load("agreement")


def result(tool, graph, op, dim, ms, heads=0, threads=2, **extra):
    """One entry of a run file's `results`, with the fields the scripts read."""
    r = {"tool": tool, "graph": graph, "op": op, "dim": dim, "heads": heads, "threads": threads,
         "median_ms": ms, "checksum": 10.0, "checksum_abs": 20.0}
    r.update(extra)
    return r


class RunFiles(unittest.TestCase):
    """Writes run files into a temporary folder and captures what a script prints."""

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, results, slug="vm-2c", triad=25.0):
        path = pathlib.Path(self.dir.name) / name
        path.write_text(json.dumps({
            "git_rev": "abc1234", "started": "2026-11-30T00:00:00Z", "machine": {"slug": slug},
            "triad_gbps": [{"threads": 2, "gbps": triad}], "results": results}))
        return str(path)

    def printed(self, f, *args):
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            f(*args)
        return out.getvalue()


class Targets(RunFiles):
    def test_groups_report_their_smallest_speed_up(self):
        run = self.write("run.json", [
            result("gnnkern", "rmat_16m", "copy_u_sum", 32, 100.0),
            result("dgl", "rmat_16m", "copy_u_sum", 32, 200.0),
            result("torch_sparse", "rmat_16m", "copy_u_sum", 32, 400.0),
            result("gnnkern", "uniform_16m", "u_dot_v", 32, 10.0),
            result("dgl", "uniform_16m", "u_dot_v", 32, 70.0),
        ])
        text = self.printed(targets.check, run)
        self.assertIn("copy-reduce vs DGL: smallest 2.00x", text)
        self.assertIn("copy_u_sum/mean vs torch.sparse.mm: smallest 4.00x", text)
        self.assertIn("u_mul_e, u_dot_v, u_add_v, softmax vs DGL: smallest 7.00x", text)
        self.assertIn("misses: none", text)

    def test_a_miss_names_its_slice_pairs_and_what_the_target_needs(self):
        run = self.write("run.json", [
            result("gnnkern", "uniform_16m", "copy_u_max", 128, 100.0,
                   slice_medians_ms=[100.0, 110.0], traversal_bytes=2e9),
            result("dgl", "uniform_16m", "copy_u_max", 128, 120.0, slice_medians_ms=[110.0, 132.0]),
        ])
        text = self.printed(targets.check, run)
        # 120 / 100 = 1.2x; slices 110/100 and 132/110; the 1.5x target needs 80 ms,
        # and 2 GB in 80 ms is 25 GB/s, all of the 25 GB/s triad.
        self.assertIn("uniform_16m|copy_u_max|128|0 vs dgl: 1.20x (< 1.5x), slice pairs 1.10-1.20x, "
                      "needs 80 ms = 100 % of triad (traversal)", text)

    def test_only_the_large_graphs_and_the_block_are_checked(self):
        run = self.write("run.json", [
            result("gnnkern", "rmat_1m", "copy_u_sum", 32, 100.0),
            result("dgl", "rmat_1m", "copy_u_sum", 32, 50.0),
            result("gnnkern", "block_1024x25", "copy_u_sum", 128, 1.0),
            result("dgl", "block_1024x25", "copy_u_sum", 128, 0.9),
        ])
        text = self.printed(targets.check, run)
        self.assertNotIn("rmat_1m", text)
        self.assertIn("sampled block vs DGL: smallest 0.90x", text)
        self.assertIn("block_1024x25|copy_u_sum|128|0 vs dgl: 0.90x (< 1.0x)", text)

    def test_bandwidth_counts_forward_cases_at_half_of_triad(self):
        run = self.write("run.json", [
            result("gnnkern", "rmat_16m", "copy_u_sum", 32, 1.0, pct_of_triad=40.0),
            result("gnnkern", "uniform_16m", "copy_u_sum", 32, 1.0, pct_of_triad=60.0,
                   traversal_pct_of_triad=55.0),
            result("gnnkern", "uniform_16m", "copy_u_max_backward", 32, 1.0, pct_of_triad=5.0),
            result("gnnkern", "notredame", "copy_u_sum", 32, 1.0, pct_of_triad=51.0),
        ])
        text = self.printed(targets.check, run)
        self.assertIn("%triad, 2^24-edge graphs, minimum model: 40-60 %, >= 50 % in 1 of 2", text)
        self.assertIn("%triad, 2^24-edge graphs, traversal model: 55-55 %, >= 50 % in 1 of 1", text)
        self.assertIn("%triad, notredame, minimum model: 51-51 %, >= 50 % in 1 of 1", text)

    def test_traversal_bytes_from_another_run_use_this_runs_times(self):
        donor = self.write("donor.json", [
            result("gnnkern", "uniform_16m", "copy_u_sum", 128, 500.0, traversal_bytes=1e9, **{"pass": "plain"}),
        ])
        run = self.write("run.json", [
            result("gnnkern", "uniform_16m", "copy_u_sum", 128, 80.0, **{"pass": "plain"}),
            result("dgl", "uniform_16m", "copy_u_sum", 128, 100.0),
        ])
        text = self.printed(targets.check, run, donor)
        # 1 GB in 80 ms = 12.5 GB/s = 50 % of 25 GB/s; the 1.5x target needs 66.7 ms = 60 %.
        self.assertIn("traversal model: 50-50 %, >= 50 % in 1 of 1", text)
        self.assertIn("needs 67 ms = 60 % of triad (traversal)", text)

    def test_traversal_bytes_from_another_machine_are_refused(self):
        donor = self.write("donor.json", [], slug="other-vm")
        run = self.write("run.json", [])
        with self.assertRaises(SystemExit) as refused:
            self.printed(targets.check, run, donor)
        self.assertIn("other-vm", str(refused.exception))


class Drift(RunFiles):
    def test_factor_is_symmetric(self):
        self.assertAlmostEqual(drift.factor(2.0, 1.0), 2.0)
        self.assertAlmostEqual(drift.factor(1.0, 2.0), 2.0)
        self.assertAlmostEqual(drift.factor(3.0, 3.0), 1.0)

    def test_speed_up_peer_and_own_factors_over_shared_forward_cases(self):
        a = self.write("a.json", [
            result("gnnkern", "rmat_16m", "copy_u_sum", 32, 100.0),
            result("dgl", "rmat_16m", "copy_u_sum", 32, 200.0),
            result("gnnkern", "rmat_16m", "copy_u_max_backward", 32, 100.0),
            result("dgl", "rmat_16m", "copy_u_max_backward", 32, 900.0),
            result("gnnkern", "uniform_16m", "u_dot_v", 32, 10.0),
            result("dgl", "uniform_16m", "u_dot_v", 32, 50.0),
        ])
        b = self.write("b.json", [
            result("gnnkern", "rmat_16m", "copy_u_sum", 32, 100.0),
            result("dgl", "rmat_16m", "copy_u_sum", 32, 300.0),
            result("gnnkern", "rmat_16m", "copy_u_max_backward", 32, 100.0),
            result("dgl", "rmat_16m", "copy_u_max_backward", 32, 100.0),
        ])
        rows = drift.drift(drift.medians(a), drift.medians(b), "dgl")
        # Only the forward case both runs hold: speed-up 2x -> 3x, DGL 200 -> 300 ms, ours unchanged.
        self.assertEqual(len(rows), 1)
        for got, want in zip(rows[0], (1.5, 1.5, 1.0)):
            self.assertAlmostEqual(got, want)
        text = self.printed(drift.main, [a, b])
        self.assertIn("vs dgl (1 cases): speed-up median 1.50x max 1.50x; dgl median 1.50x max 1.50x; "
                      "gnnkern median 1.00x max 1.00x", text)
        self.assertNotIn("torch_sparse", text)


class Agreement(RunFiles):
    def test_relative_difference_is_scaled_by_the_larger_absolute_sum(self):
        a = {"checksum": 10.0, "checksum_abs": 100.0}
        b = {"checksum": 10.5, "checksum_abs": 200.0}
        self.assertAlmostEqual(agreement.relative_difference(a, b), 100.0 / 200.0)
        c = {"checksum": 10.5, "checksum_abs": 100.0}
        self.assertAlmostEqual(agreement.relative_difference(a, c), 0.5 / 100.0)

    def test_pairs_match_graph_op_dim_heads_and_threads(self):
        run = self.write("run.json", [
            result("gnnkern", "rmat_16m", "copy_u_sum", 32, 1.0),
            result("dgl", "rmat_16m", "copy_u_sum", 32, 1.0, checksum=10.001),
            result("torch_sparse", "rmat_16m", "copy_u_sum", 32, 1.0, threads=1),
            result("dgl", "rmat_16m", "copy_u_mean", 32, 1.0),
        ])
        pairs = agreement.pairs(run)
        self.assertEqual(len(pairs), 1)
        peer, key, rel = pairs[0]
        self.assertEqual((peer, key), ("dgl", ("rmat_16m", "copy_u_sum", 32, 0, 2)))
        self.assertAlmostEqual(rel, 0.001 / 20.0)

    def exit_code(self, *argv):
        out = io.StringIO()
        old = sys.argv
        sys.argv = ["agreement.py", *argv]
        try:
            with contextlib.redirect_stdout(out), self.assertRaises(SystemExit) as done:
                agreement.main()
        finally:
            sys.argv = old
        return done.exception.code, out.getvalue()

    def test_exit_status_names_each_pair_that_differs(self):
        run = self.write("run.json", [
            result("gnnkern", "rmat_16m", "copy_u_sum", 32, 1.0),
            result("dgl", "rmat_16m", "copy_u_sum", 32, 1.0, checksum=10.01),
        ])
        # 0.01 / 20 = 5e-4: outside the default 1e-4, inside 1e-3.
        code, text = self.exit_code(run)
        self.assertEqual(code, 1)
        self.assertIn("dgl: 0 of 1 agree", text)
        self.assertIn("differs: " + run + " dgl rmat_16m|copy_u_sum|32|0|2: 5.00e-04", text)
        code, text = self.exit_code("--rtol", "1e-3", run)
        self.assertEqual(code, 0)
        self.assertIn("dgl: 1 of 1 agree", text)


if __name__ == "__main__":
    unittest.main()
