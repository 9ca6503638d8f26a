"""What the benchmarks measure: the MLPerf Tiny samples and the QEMU machines (issue 8)."""

from __future__ import annotations

#: sample name -> the int8 MLPerf Tiny reference model TFLM runs (issue 8).
TFLM_MODELS = {
    "kws": "kws_ref_model.tflite",
    "vww": "vww_96_int8.tflite",
    "ic": "pretrainedResnet_quant.tflite",
    "ad": "ad01_int8.tflite",
}
#: short machine name -> armgen board
MACHINES = {"an547": "qemu_mps3_an547", "an386": "qemu_mps2_an386"}
CPU_OF = {"an547": "Cortex-M55", "an386": "Cortex-M4"}
