"""One deserialized copy of a ``.pte`` for the model stage's readers.

The program report (:mod:`armgen.model.inspect_program`) and the method-allocator replay
(:mod:`armgen.model.method_allocator`) both read the program ExecuTorch emitted; they share one run
of ExecuTorch's deserializer (``executorch.exir._serialize._program.deserialize_pte_binary``) per
distinct ``.pte`` (about 60 ms for kws). :mod:`armgen.model.compact_program` deserializes its own
copy, because it rewrites it.
"""

from __future__ import annotations

import functools
from typing import Any


@functools.lru_cache(maxsize=4)
def deserialized_program(pte: bytes) -> Any:
    """The ``Program`` of a serialized ``.pte``, cached by content. Callers must not modify it.

    Args:
        pte: the ``.pte`` bytes.

    Returns:
        ExecuTorch's ``executorch.exir.schema.Program``.

    Raises:
        Exception: whatever ExecuTorch's deserializer raises for bytes that are not a program
        (callers turn it into their own :class:`~armgen.errors.ProgramError`).
    """
    from executorch.exir._serialize._program import deserialize_pte_binary

    return deserialize_pte_binary(pte).program
