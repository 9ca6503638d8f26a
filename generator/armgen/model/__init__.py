"""The model stage: a model (built-in sample, Python file, ``.pt2``) -> an int8 ExecuTorch program
(``.pte``) and its :class:`~armgen.model.program_report.ProgramReport`.

    model_source     where a model comes from (samples, user files, weights, calibration data)
    model_spec       the MODEL argument's kind and file, checked without torch (before any compile)
    compile          quantize, lower (CMSIS-NN or Vela), emit; the reference outputs
    compile_outputs  the compile stage's host runs: reference arrays, int8-vs-float quality
    quality          max abs error, SNR, top-1 agreement of int8 outputs against float ones
    program_report   the report of a ``.pte`` (ExecuTorch's own deserializer)
    inspect_program  ``armgen inspect``: a report from a ``.pte`` alone
    method_allocator the method allocator's need, replayed from the program (recorded in the report)
    reference        the expected outputs: the saved reference, or the saved program run on the host
    tensors          dtype names and sizes, dim order, (de)quantization: one home for each
    lowered_program  the lowered program saved for host references
    tflite_weights   MLPerf Tiny trained weights from the reference ``.tflite`` files
    pretrained       the samples' trained weights: download, SHA-256 check, cache
"""
