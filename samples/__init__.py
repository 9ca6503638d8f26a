"""armgen's built-in samples: the MLPerf Tiny reference models.

Each sample module (``kws``, ``vww``, ``ic``, ``ad``, ``sww``) defines the same names, which
:mod:`armgen.model_source` reads:

``NAME``, ``TITLE``
    Short name (the ``armgen compile NAME`` argument) and a one-line description.
``INPUT_SHAPE``
    PyTorch input shape, e.g. ``(1, 1, 49, 10)`` (NCHW for images/spectrograms).
``CLASS_LABELS``
    Output class names in output order (empty for the autoencoder, whose output is a
    reconstruction of its input).
``WEIGHTS_FILE``
    File name of the trained TFLite reference model in the MLPerf Tiny models folder
    (``$ARMGEN_MLPERF_DIR``, else armgen's cache or a download: :mod:`armgen.model.pretrained`); float
    for the first four, int8 for ``sww`` (MLPerf Tiny v1.3 ships no float file; its weights are dequantized).
``build_model()``
    The architecture as an ``nn.Module`` in eval mode, with fixed-seed (untrained) weights.
``representative_inputs(count, seed)``
    A deterministic list of input tuples in the value range the trained model expects
    (used for calibration when no ``--calibration`` data is given, and input 0 for the
    reference outputs).

Architectures follow the TFLite reference graphs exactly (asymmetric TF 'SAME' padding of
stride-2 layers, trailing softmax); upstream ExecuTorch's ``examples.models.mlperf_tiny``
definitions are reused where they already match (``ad``).
"""

SAMPLE_NAMES = ("kws", "vww", "ic", "ad", "sww")
