"""SWW: streaming wakeword ("Marvin") with a DS-CNN over 30 log-mel frames (MLPerf Tiny v1.3), 1x40x30x1.

The reference is ``str_ww_ref_model.tflite`` (mlcommons/tiny ``benchmark/training/streaming_wakeword/``,
built by ``keras_model.py``'s ``get_model`` and quantized to int8 by ``quantize.py``). Its graph, read from
the file: input int8 ``1x30x1x40`` NHWC (30 frames of 40 log-mel energies; scale 0.0037, zero point -128,
i.e. 0..0.94), then four blocks of

    DEPTHWISE_CONV_2D  kernel (k, 1), stride 1, dilation 1, VALID, no activation (bias all zero:
                       Keras ``use_bias=False``), k = 3, 5, 10, 15;
    CONV_2D            1x1, stride 1, VALID, fused RELU (the block's batch norm folded into its bias),
                       128, 128, 128, 32 filters;

so the time axis shrinks 30 -> 28 -> 24 -> 15 -> 1; then RESHAPE to 1x32, FULLY_CONNECTED to 3 and
SOFTMAX. Dropout (training only) is not in the graph.

Mapping to PyTorch: TFLite's NHWC ``1 x 30 (H = time) x 1 (W) x 40 (C = mel bins)`` is PyTorch's NCHW
``1 x 40 x 30 x 1``: the 40 mel bins are channels, time runs down H, W is 1. A depthwise ``(k, 1)`` kernel
is ``nn.Conv2d(C, C, (k, 1), groups=C, bias=False)``, the 1x1 convolution ``nn.Conv2d(C, F, 1)`` and a
ReLU, the flatten of ``1x32x1x1`` is the same 32 values in the same order as TFLite's reshape of
``1x1x1x32``. A window ``w`` of the upstream data (shape 30x1x40) becomes the input
``w.transpose(2, 0, 1)[None]``; :func:`calibration_windows` does that for ``calibration_samples.npz``.

Weights: there is no float ``.tflite`` of this model, so the loader dequantizes the int8 file
(weight = int8 x per-channel scale; bias = int32 x input scale x weight scale:
:mod:`armgen.model.tflite_weights`). The float model with those weights follows the int8 reference
(``tests/model/test_sww.py``).

Class order is upstream's ``word_labels = ["Marvin", "Silence", "Unknown"]`` (get_dataset.py): 0 the
wakeword, 1 silence, 2 anything else. The features are log-mel filterbank energies (64 ms Hamming window
every 32 ms, 40 mel bins 0..8 kHz, 10*log10 power + 52 dB, divided by 64 and clipped to 0..1:
get_dataset.py ``get_lfbe_func``): :data:`FRONTEND` declares them, ``armgen new sww --frontend lfbe`` generates
them in C (:mod:`armgen.model.frontend_lfbe`).

Quantization: for a Cortex-M program armgen adopts the ``.tflite``'s own scales and zero points
(:mod:`armgen.model.tflite_quant`): the program holds the file's integers, so calibration does not change it
(it still runs, and the report's int8-vs-float figures use it).

Calibration: ``armgen new sww --calibration FILE`` wants NCHW windows; upstream's ``calibration_samples.npz``
holds NHWC ``specs`` and ``labels``, so convert it once::

    python -c "import numpy as n; z=n.load('calibration_samples.npz');
               n.savez('sww_cal.npz', input_0=z['specs'].transpose(0, 3, 1, 2).astype('float32'))"
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import torch
from torch import nn

from ._layers import seeded_init

NAME = "sww"
TITLE = "Streaming wakeword, DS-CNN (MLPerf Tiny v1.3), 30x40 log-mel -> wakeword / silent / other"
INPUT_SHAPE = (1, 40, 30, 1)
#: Upstream's label order (benchmark/training/streaming_wakeword/get_dataset.py, word_labels).
CLASS_LABELS = ("wakeword", "silent", "other")
WEIGHTS_FILE = "str_ww_ref_model.tflite"
#: (depthwise kernel length in time, filters of the 1x1 convolution) of the four blocks (keras_model.py).
BLOCKS = ((3, 128), (5, 128), (10, 128), (15, 32))
#: Log-mel bins per frame and frames per window (the reference input, 30 x 32 ms hops = 0.99 s of audio).
MEL_BINS = 40
FRAMES = 30
#: The log-mel filterbank energies the reference was trained on (mlcommons/tiny
#: benchmark/training/streaming_wakeword/get_dataset.py ``get_lfbe_func`` with str_ww_util.py's flags): 16 kHz
#: int16 / 32768, pre-emphasis 1 - 2**-5, a 64 ms (1,024-sample) symmetric Hamming window every 32 ms (512),
#: 1,024-point FFT, power / 1,024 floored at 1e-30, linear_to_mel_weight_matrix(40 bins, 0-8,000 Hz),
#: (10 log10 + 52) / 64 clipped to [0, 1]; 30 frames are 1,024 + 29 x 512 = 15,872 samples. The int8 input is
#: ``features / scale + zero_point`` truncated (evaluate.py). The 40 bins are the model's channels, time runs
#: down H (``bins_frames``). A clip of another length becomes its last 15,872 samples, zeros in front when
#: shorter (``align`` end: the reference fires once the word has ended; a word at the start of the window
#: is heard as "other"). `armgen new sww --frontend lfbe` generates it in C (armgen.model.frontend_lfbe).
FRONTEND = {
    "kind": "lfbe",
    "sample_rate": 16000,
    "clip_samples": 15872,
    "frame_length": 1024,
    "frame_step": 512,
    "fft_length": 1024,
    "mel_bins": MEL_BINS,
    "lower_hz": 0.0,
    "upper_hz": 8000.0,
    "preemphasis": 0.96875,
    "window_periodic": False,
    "power_floor": 1e-30,
    "db_offset": 52.0,
    "db_range": 64.0,
    "layout": "bins_frames",
    "align": "end",
    "source": "mlcommons/tiny benchmark/training/streaming_wakeword/get_dataset.py (get_lfbe_func) + str_ww_util.py",
}


class StreamingWakeword(nn.Module):
    """The MLPerf Tiny streaming-wakeword DS-CNN as in its TFLite reference (batch norm folded)."""

    def __init__(self, num_classes: int = len(CLASS_LABELS)) -> None:
        super().__init__()
        layers: list[nn.Module] = []
        ch, frames = MEL_BINS, FRAMES
        for kernel, filters in BLOCKS:
            layers += [
                nn.Conv2d(ch, ch, (kernel, 1), groups=ch, bias=False),  # VALID depthwise in time
                nn.Conv2d(ch, filters, 1, bias=True),
                nn.ReLU(),
            ]
            ch, frames = filters, frames - kernel + 1
        assert frames == 1, frames
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(ch, num_classes)
        self.softmax = nn.Softmax(dim=1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.softmax(self.classifier(torch.flatten(self.features(x), 1)))


def build_model() -> nn.Module:
    """Return the streaming-wakeword DS-CNN in eval mode with fixed-seed (untrained) weights."""
    return seeded_init(StreamingWakeword(), seed=0)


def representative_inputs(count: int = 8, seed: int = 0) -> list[tuple[torch.Tensor]]:
    """Deterministic log-mel-like windows, 1x40x30x1 float32 in 0..1 (the reference's input range).

    Upstream's 45 calibration windows average about 0.05 in the lowest mel bin rising to 0.4 in the
    highest, standard deviation 0.07..0.33, 18 % exact zeros (the clip at 0); these follow that profile
    with time-smooth bursts plus noise.
    """
    gen = torch.Generator().manual_seed(seed)
    mean = torch.linspace(0.05, 0.4, MEL_BINS).reshape(1, MEL_BINS, 1, 1)
    std = torch.linspace(0.07, 0.33, MEL_BINS).reshape(1, MEL_BINS, 1, 1)
    out = []
    for _ in range(count):
        burst = torch.cumsum(torch.randn(1, 1, FRAMES, 1, generator=gen), dim=2) / 3.0
        x = mean + std * (0.7 * burst + 0.7 * torch.randn(1, MEL_BINS, FRAMES, 1, generator=gen))
        out.append((x.clamp(0.0, 1.0).contiguous(),))
    return out


def calibration_windows(path: Path | str) -> tuple[list[tuple[torch.Tensor]], np.ndarray]:
    """Read upstream's ``calibration_samples.npz`` as model inputs.

    Args:
        path: the file (mlcommons/tiny ``benchmark/training/streaming_wakeword/calibration_samples.npz``:
            ``specs`` N x 30 x 1 x 40 float in 0..1, NHWC; ``labels`` N class indices).

    Returns:
        (N input tuples, each 1x40x30x1 float32 NCHW; the N labels as int64).

    Raises:
        ValueError: the file has no ``specs``/``labels`` or ``specs`` is not N x 30 x 1 x 40.
    """
    with np.load(path, allow_pickle=False) as z:
        if "specs" not in z.files or "labels" not in z.files:
            raise ValueError(f"{path}: expected arrays 'specs' and 'labels', found {', '.join(z.files)}")
        specs, labels = z["specs"], z["labels"]
    if specs.ndim != 4 or specs.shape[1:] != (FRAMES, 1, MEL_BINS):
        raise ValueError(f"{path}: 'specs' is {specs.shape}, expected N x {FRAMES} x 1 x {MEL_BINS}")
    nchw = torch.from_numpy(np.ascontiguousarray(specs.transpose(0, 3, 1, 2), dtype=np.float32))
    return [(w[None].contiguous(),) for w in nchw], labels.astype(np.int64)
