"""torch_peak_mib reads the peak from torch's profiler: checked against allocations of known size."""

import pytest

from lattn_edu.profiling import MIB, torch_peak_mib

torch = pytest.importorskip("torch")


def test_one_tensor_of_known_size():
    size = 3 * MIB + 5 * 8  # odd, so a coincidence with a round allocator block is unlikely

    def run():
        torch.zeros(size // 8, dtype=torch.float64)

    assert torch_peak_mib(run) == pytest.approx(size / MIB, rel=1e-3)


def test_two_live_tensors_add_and_a_freed_one_does_not():
    def both_live():
        a = torch.ones(262_147, dtype=torch.float64)   # ~2 MiB
        b = torch.ones(393_221, dtype=torch.float64)   # ~3 MiB
        return a, b

    def one_after_another():
        torch.ones(262_147, dtype=torch.float64)
        torch.ones(393_221, dtype=torch.float64)

    assert torch_peak_mib(both_live) == pytest.approx((262_147 + 393_221) * 8 / MIB, rel=1e-3)
    assert torch_peak_mib(one_after_another) == pytest.approx(393_221 * 8 / MIB, rel=1e-3)


def test_memory_held_before_the_run_is_not_counted():
    held = torch.ones(1_000_003, dtype=torch.float64)  # ~7.6 MiB alive throughout

    def run():
        torch.ones(131_101, dtype=torch.float64)

    assert torch_peak_mib(run) == pytest.approx(131_101 * 8 / MIB, rel=1e-3)
    assert held.numel() == 1_000_003


def test_stderr_still_works_after_profiling(capfd):
    import sys
    torch_peak_mib(lambda: torch.ones(3))
    print("after", file=sys.stderr)
    assert "after" in capfd.readouterr().err


def test_run_must_be_callable():
    with pytest.raises(TypeError, match="run must be a callable.*got int"):
        torch_peak_mib(3)
