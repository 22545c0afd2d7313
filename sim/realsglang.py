"""Real SGLang's front door, for the simulator and the tests: its own parser and config merger.

`parse(argv)` runs the pinned real sglang's `sglang.srt.server_args.prepare_server_args`
(requirements-sglang.txt; `make setup` installs the wheel with --no-deps into
build/sglang-real) on a command line and returns what a real launch would do with it:
the parsed `ServerArgs`, or the exit code and message real SGLang ends with (argparse's
exit 2 and "usage: ... error: ..." for an unknown, ambiguous or refused flag; exit 1 and
a traceback for an exception, e.g. a `--config` file that is not .yaml/.yml).

Two packages are named `sglang`: the simulator's stand-in (sim/pypath/sglang) and
the real one. Neither shadows the other: the real package's directory is appended to the
stand-in's `__path__`, so `sglang._sim` and `sglang.launch_server` are the simulator's and
`sglang.srt...` is real SGLang's code. Real `sglang/__init__.py` (which imports
transformers patches, torch and FlashInfer) is never run. torch and triton are stand-ins
(sim/standins); nothing else of SGLang is replaced.
"""
import collections
import contextlib
import io
import logging
import os
import sys
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)
from simlib import layout  # noqa: E402  (a checkout's or a built kit's paths)

SIM_PYPATH = os.path.join(HERE, "pypath")
# Where `make setup` (or `simctl kit build`) puts the real wheel; SGLANG_REAL_ROOT
# overrides (a --target directory).
REAL_ROOT = os.environ.get("SGLANG_REAL_ROOT") or layout.SGLANG_REAL
PIN_FILE = layout.PIN_FILE

ENTRIES = ("launch_server", "serve")

Result = collections.namedtuple("Result", "args code message")
Result.__doc__ = """args: the real ServerArgs (None when refused); code: the exit code real
SGLang ends with before it starts anything (0: accepted); message: what it printed."""


class NotInstalled(RuntimeError):
    pass


def pinned_version():
    """The version in requirements-sglang.txt (`sglang==X`)."""
    with open(PIN_FILE, encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line.startswith("sglang=="):
                return line.split("==", 1)[1].strip()
    raise NotInstalled("no sglang==VERSION line in %s" % PIN_FILE)


def installed_version():
    """The version of the real wheel in REAL_ROOT (its dist-info), or None."""
    if not os.path.isdir(REAL_ROOT):
        return None
    for name in os.listdir(REAL_ROOT):
        if name.startswith("sglang-") and name.endswith(".dist-info"):
            return name[len("sglang-"):-len(".dist-info")]
    return None


def _package():
    """The `sglang` package: the simulator's, with the real one's directory after it."""
    real_dir = os.path.join(REAL_ROOT, "sglang")
    have = installed_version()
    if have is None or not os.path.isdir(real_dir):
        raise NotInstalled("real sglang is not installed in %s: run `make setup`" % REAL_ROOT)
    if have != pinned_version():
        raise NotInstalled("build/sglang-real holds sglang %s, requirements-sglang.txt pins %s: "
                           "run `make setup`" % (have, pinned_version()))
    pkg = sys.modules.get("sglang")
    if pkg is None:
        sys.path.insert(0, SIM_PYPATH)
        try:
            # The simulators' neutral core, which sglang._sim imports: once imported, its
            # modules resolve through the package's own __path__.
            import _simcore  # noqa: F401  # pylint: disable=import-outside-toplevel,unused-import
            import sglang as pkg  # pylint: disable=import-outside-toplevel
        finally:
            sys.path.remove(SIM_PYPATH)
    if not os.path.samefile(os.path.dirname(pkg.__file__), os.path.join(SIM_PYPATH, "sglang")):
        raise NotInstalled("`sglang` is already imported from %s, not the simulator" % pkg.__file__)
    if real_dir not in pkg.__path__:
        pkg.__path__.append(real_dir)
    return pkg


def server_args_module():
    """Import and return the real `sglang.srt.server_args` (torch/triton stand-ins first)."""
    if HERE not in sys.path:
        sys.path.insert(0, HERE)
    import standins  # pylint: disable=import-outside-toplevel
    standins.install()
    _package()
    import sglang.srt.server_args as real  # pylint: disable=import-outside-toplevel
    return real


def serve_argv(argv):
    """What `sglang serve ARGV` hands to the LLM backend's prepare_server_args.

    Imitates sglang/cli/serve.py: `_extract_model_type_override` (drops `--model-type X`)
    and `_normalize_positional_model_path` (`sglang serve MODEL` -> `--model-path MODEL`).
    The real functions are not imported: sglang.cli.utils needs huggingface_hub and
    IPython, which the simulator does not install. Raises ValueError as the real one does.
    """
    out, i = [], 0
    while i < len(argv):
        arg = argv[i]
        if arg == "--model-type":
            if i + 1 >= len(argv):
                raise ValueError("Error: --model-type requires a value.")
            i += 2
            continue
        if arg.startswith("--model-type="):
            if not arg.split("=", 1)[1]:
                raise ValueError("Error: --model-type requires a non-empty value.")
            i += 1
            continue
        out.append(arg)
        i += 1
    if out and not out[0].startswith("-"):
        out = ["--model-path", out[0]] + out[1:]
    return out


def parse(argv, entry="launch_server"):
    """Parse ARGV as real SGLang does for ENTRY (`launch_server` or `serve`); a Result.

    Nothing is printed: argparse's output is captured into Result.message.
    """
    if entry not in ENTRIES:
        raise ValueError("entry must be one of %s" % (ENTRIES,))
    real = server_args_module()
    out, err = io.StringIO(), io.StringIO()
    root = logging.getLogger()
    saved = (list(root.handlers), root.level)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = real.prepare_server_args(serve_argv(list(argv)) if entry == "serve" else list(argv))
    except SystemExit as exc:  # argparse: exit 2 with usage and "error: ..."; --help: exit 0
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        return Result(None, code, (out.getvalue() + err.getvalue()) or str(exc.code or ""))
    except Exception:  # noqa: BLE001 - an uncaught exception: Python prints it and exits 1
        return Result(None, 1, out.getvalue() + err.getvalue() + traceback.format_exc())
    finally:
        # prepare_server_args calls logging.basicConfig(force=True): put the caller's back.
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
    return Result(args, 0, out.getvalue() + err.getvalue())


def field_names(args):
    """The ServerArgs record's field names, in the real order."""
    from sglang.srt.arg_groups.arg_utils import record_fields  # pylint: disable=import-outside-toplevel
    return [field.name for field in record_fields(type(args))]


def as_dict(args):
    """{field: value} of every ServerArgs field, as given (real SGLang logs the resolved
    values; resolution needs the model and the GPUs, which the simulator imitates)."""
    real = server_args_module()
    hidden = {"watermark_key", "watermark_key_b", "watermark_config"}  # ServerArgs.__repr__
    return {name: real._plain(getattr(args, name))  # pylint: disable=protected-access
            for name in field_names(args) if name not in hidden}
