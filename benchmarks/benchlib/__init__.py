"""The library behind the benchmark scripts in ``benchmarks/`` (see benchmarks/README.md).

The scripts put ``benchmarks/`` first on ``sys.path`` by being run from it, so ``import benchlib`` finds this
package; it is not part of the ``armgen`` wheel. One module per part of a run:

- ``paths``: the benchmarks folder, the model folder, the cache, the ``armgen`` executable, and the
  placeholders that stand for this machine's paths in recorded commands;
- ``commands``: running a command (timed), logging, a failed command as an exception;
- ``samples``: the MLPerf Tiny samples and QEMU machines measured;
- ``results``: ``results.json`` read, written and merged, the tool and source versions of a run;
- ``tflite_model``, ``tflm``: TFLite Micro's side (operators of a ``.tflite``, LiteRT on the host, the runner
  built, its arena searched, its stack sized by armgen's rule);
- ``armgen_projects``, ``sizes``: armgen's side (``armgen new/build/size/run``, flash and RAM per component);
- ``compare``, ``pools``, ``profile``, ``portable_lowering``: the side-by-side comparisons;
- ``report``: ``results.md`` and ``results.svg`` rendered from ``results.json``;
- ``cli``: the options the side scripts share.
"""
