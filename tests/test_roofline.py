"""The GPU table and the roofline: published numbers, the ridge, and where decode and prefill sit."""
import pytest

from core.calc import configs, roofline
from core.calc.flops import prefill_and_decode


def test_published_numbers():
    a100 = roofline.get("a100-80gb")
    assert (a100.hbm_gb, a100.hbm_gbps, a100.peak_tflops) == (80, 2039, 312)
    h100 = roofline.get("h100-sxm")
    assert (h100.hbm_gb, h100.hbm_gbps, h100.peak_tflops) == (80, 3350, 989)
    assert roofline.get("h200").hbm_gb == 141 and roofline.get("h200").hbm_gbps == 4800
    assert roofline.get("rtx-4090").hbm_gbps == 1008 and roofline.get("l4").hbm_gbps == 300
    assert set(roofline.names()) >= {"a100-40gb", "a100-80gb", "h100-sxm", "h200", "rtx-4090", "l4"}
    with pytest.raises(KeyError):
        roofline.get("tpu")
    # 2,039 GB/s is the SXM card's bandwidth (the PCIe card has 1,935 GB/s): the name says which.
    assert roofline.get("a100-80gb").title == "A100 80GB SXM" and roofline.get("h100-sxm").title == "H100 SXM"


def test_docstring_examples():
    assert roofline.get("a100-80gb").ridge == pytest.approx(153, abs=0.5)
    assert roofline.get("h100-sxm").ridge == pytest.approx(295, abs=0.5)
    assert roofline.get("a100-40gb").sram_gbps == pytest.approx(19_492, abs=1)
    # Capacity and bandwidth of one level: L1/shared of all SMs (not L1 + L2 with L1's bandwidth).
    # The whitepapers' "192 KB" per SM are KiB: 108 x 192 KiB = 20.25 MiB (21.2 MB, not "20.2 MB").
    assert roofline.get("a100-40gb").sram_mib == pytest.approx(20.25)
    assert roofline.hierarchy(roofline.get("a100-80gb"))[0]["bytes"] == 108 * 192 * 1024
    assert roofline.hierarchy(roofline.get("h100-sxm"))[0]["bytes"] == 132 * 256 * 1024
    assert roofline.get("a100-80gb").hbm_gib == pytest.approx(74.506, abs=1e-3)
    assert roofline.attainable_tflops(roofline.get("h100-sxm"), 1.0) == pytest.approx(3.35)
    assert roofline.step_seconds(roofline.get("a100-80gb"), 13.2e9, 13.2e9) == pytest.approx(6.47e-3, abs=1e-5)


@pytest.mark.parametrize("name", roofline.names())
def test_roofline_shape(name):
    gpu = roofline.get(name)
    ridge = gpu.ridge
    assert roofline.attainable_tflops(gpu, ridge) == pytest.approx(gpu.peak_tflops)
    assert roofline.attainable_tflops(gpu, ridge / 10) == pytest.approx(gpu.peak_tflops / 10)
    assert roofline.attainable_tflops(gpu, ridge * 10) == gpu.peak_tflops
    levels = roofline.hierarchy(gpu)
    assert [lv["level"] for lv in levels] == ["sram", "hbm", "host"]
    sizes = [lv["bytes"] for lv in levels]
    speeds = [lv["bytes_per_s"] for lv in levels]
    assert sizes == sorted(sizes) and speeds == sorted(speeds, reverse=True)   # bigger is slower


@pytest.mark.parametrize("gpu", roofline.names())
@pytest.mark.parametrize("model", ["llama-2-7b", "llama-3-70b", "mixtral-8x7b"])
def test_decode_is_memory_bound_prefill_is_not(gpu, model):
    g, c = roofline.get(gpu), configs.get(model)
    pd = prefill_and_decode(c, 4096, batch=1)
    assert roofline.is_memory_bound(g, pd["decode"]["intensity"])
    assert not roofline.is_memory_bound(g, pd["prefill"]["intensity"])
