"""The `armgen` command group: options common to every command, and the one place that maps errors
to exit codes (:class:`_Group`, see :mod:`armgen.errors`; :data:`EXIT_INTERRUPTED` for Ctrl-C).

The sub-commands (``armgen.cli.*_cmd``) register on :data:`main` by importing it from here;
``armgen/cli/__init__.py`` imports them all, so this module imports none of them (no import cycle).
"""


from __future__ import annotations

import logging
import sys
import traceback
import warnings

import click
from rich.markup import escape

from armgen import __version__
from armgen.cli._console import err_console
from armgen.errors import ArmgenError

#: Exit status of an interrupted command (Ctrl-C, SIGINT; click's Abort): the shell's 128 + SIGINT, apart
#: from 1, which a CI gate reads as "over budget" (`armgen size`, `armgen build`).
EXIT_INTERRUPTED = 130

#: The exit statuses, as `armgen --help` ends (README "Commands" and :mod:`armgen.errors` say the same).
EXIT_STATUS_HELP = (
    "Exit status: 0 success; 1 over budget (size, build), outputs off the reference (run), merge conflicts "
    f"(update) or a check that failed (weights verify); 2 any other error; {EXIT_INTERRUPTED} interrupted (Ctrl-C)."
)


def _say_interrupted() -> None:
    """The one line of an interrupted command (its status is :data:`EXIT_INTERRUPTED`; no traceback)."""
    err_console.print("armgen: interrupted", highlight=False)


def _executorch_version() -> str:
    try:
        from importlib.metadata import version

        return version("executorch")
    except Exception:  # noqa: BLE001 - version lookup must never break --version
        return "not installed"


class _Group(click.Group):
    """Click group that turns ArmgenError, usage errors (and stray exceptions) into one line + exit code."""

    def main(self, *args, **kwargs):
        """Run the CLI; a click error (unknown option, bad value, unreadable file) is one ``armgen: error:`` line."""
        kwargs["standalone_mode"] = False
        try:
            rv = super().main(*args, **kwargs)
        except click.ClickException as exc:  # usage errors, and click's file errors
            err_console.print(f"[bold red]armgen: error:[/] {escape(exc.format_message())}", highlight=False,
                              soft_wrap=True)
            if isinstance(exc, click.UsageError):
                where = exc.ctx.command_path if exc.ctx is not None else "armgen"
                err_console.print(f"hint: see `{escape(where)} --help`", highlight=False, soft_wrap=True)
            sys.exit(exc.exit_code)
        except (click.exceptions.Abort, KeyboardInterrupt):  # click turns a Ctrl-C outside `invoke` into Abort
            _say_interrupted()
            sys.exit(EXIT_INTERRUPTED)
        sys.exit(rv if isinstance(rv, int) else 0)

    def invoke(self, ctx: click.Context):
        verbose = ctx.params.get("verbose", 0) if ctx.params else 0
        try:
            return super().invoke(ctx)
        except ArmgenError as exc:
            if verbose or "-v" in sys.argv[1:2]:
                traceback.print_exc()
            err_console.print(f"[bold red]armgen: error:[/] {escape(exc.message)}", highlight=False, soft_wrap=True)
            if exc.hint:
                err_console.print(f"hint: {escape(exc.hint)}", highlight=False, soft_wrap=True)
            ctx.exit(exc.exit_code)
        except (click.exceptions.Exit, click.exceptions.Abort, click.ClickException):
            raise
        except KeyboardInterrupt:
            _say_interrupted()
            ctx.exit(EXIT_INTERRUPTED)
        except Exception as exc:  # noqa: BLE001 - last line of defence: one line, not a traceback
            if verbose:
                traceback.print_exc()
            err_console.print(
                f"[bold red]armgen: internal error:[/] {type(exc).__name__}: {escape(str(exc))}",
                highlight=False,
                soft_wrap=True,
            )
            err_console.print("hint: run again with `armgen -v ...` for the traceback and report it")
            ctx.exit(2)


@click.group(name="armgen", cls=_Group, context_settings={"help_option_names": ["-h", "--help"]},
             epilog=EXIT_STATUS_HELP)
@click.version_option(
    __version__,
    "--version",
    message=f"armgen %(version)s (executorch {_executorch_version()})",
)
@click.option("-v", "--verbose", count=True, help="Show tracebacks and tool command lines.")
@click.pass_context
def main(ctx: click.Context, verbose: int) -> None:
    """armgen: turn a PyTorch model and a board definition into Cortex-M / Ethos-U firmware."""
    ctx.ensure_object(dict)
    ctx.obj["verbose"] = verbose
    if not verbose:
        quiet_upstream_logs()


#: ``--offline`` of the commands that may download the samples' trained weights (`new`, `compile`); the
#: command runs its body in :func:`armgen.model.pretrained.offline_mode`.
OFFLINE_HELP = ("Download nothing: a built-in sample's trained weights come from --weights, $ARMGEN_MLPERF_DIR or "
                "the cache, else fixed-seed weights, said loudly (as ARMGEN_OFFLINE=1).")


def offline_option(help_text: str = OFFLINE_HELP):  # noqa: ANN201 - a click decorator
    """The ``--offline`` flag (parameter ``offline``)."""
    return click.option("--offline", is_flag=True, help=help_text)


#: Loggers of the ML stack whose import- and export-time chatter buries armgen's own lines
#: (torchao's optional-kernel load failures, torch's pytree Enum notices, ExecuTorch's
#: PassManager deprecation). ``armgen -v`` keeps them.
_NOISY_LOGGERS = (
    "torchao",
    "torch.utils._pytree",
    "torch._export",
    "torch.export",
    "torch._dynamo",
    "executorch",
    "ethosu",
    "root",
    # Sets its own level to WARNING at import, after armgen runs; a filter survives that.
    "executorch.exir.pass_manager",
)


def _errors_only(record: logging.LogRecord) -> bool:
    return record.levelno >= logging.ERROR


def quiet_upstream_logs() -> None:
    """Raise the ML stack's loggers to ERROR and drop its Python warnings (not armgen's own)."""
    for name in _NOISY_LOGGERS:
        logger = logging.getLogger(name)
        logger.setLevel(logging.ERROR)
        if _errors_only not in logger.filters:
            logger.addFilter(_errors_only)
    for module in ("torch", "torchao", "executorch", "ethosu", "tosa"):
        warnings.filterwarnings("ignore", module=rf"{module}(\.|$)")
    # torch.utils._pytree's LeafSpec deprecation is raised while a tree spec is copied, so Python
    # attributes it to the standard library's copyreg, not to torch: every `new` of a user's .py
    # printed it (issue 27, item 4). Matched by its text, so a warning of armgen's own still shows.
    warnings.filterwarnings(
        "ignore", message=r"`isinstance\(treespec, LeafSpec\)` is deprecated", category=FutureWarning
    )
