"""Stand-ins for the GPU-bound modules real SGLang imports (torch, triton), for tests only.

`install()` puts a finder on sys.meta_path that answers `torch`, `triton` and any of their
submodules with a module of permissive stubs: any attribute exists, calling one returns
another (or, used as a decorator, gives the function back), and a stub can be a base class.
Only what SGLang's import-time code and its argument parser decide on is given a value
(no CUDA, no ROCm, no XPU/NPU/MPS: the parser sees a machine without accelerators).
Nothing under plugins/ uses this; it lives in the simulator kit (sim/) only.
"""
import importlib.abc
import importlib.machinery
import sys
import types

STANDIN_ROOTS = ("torch", "triton")


class Stub:
    """Any attribute, any call; falsy; usable as a decorator and as a base class."""

    def __init__(self, name="stub"):
        self._name = name

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return Stub("%s.%s" % (self._name, attr))

    def __call__(self, *args, **kwargs):
        if len(args) == 1 and not kwargs and callable(args[0]):
            return args[0]  # @torch.compile, @triton.jit, @torch.library.custom_op(...)
        return Stub(self._name + "()")

    def __mro_entries__(self, bases):
        return (_StubBase,)

    def __getitem__(self, key):
        return Stub(self._name + "[]")

    def __iter__(self):
        return iter(())

    def __bool__(self):
        return False

    def __len__(self):
        return 0

    def __repr__(self):
        return "<stand-in %s>" % self._name

    def __int__(self):
        return 0

    __index__ = __int__

    def __float__(self):
        return 0.0

    def __hash__(self):
        return hash(self._name)

    def __eq__(self, other):
        return isinstance(other, Stub) and other._name == self._name

    def _op(self, *_other):
        return Stub(self._name + "(op)")

    __or__ = __ror__ = __and__ = __rand__ = __add__ = __radd__ = __sub__ = __rsub__ = _op
    __mul__ = __rmul__ = __truediv__ = __rtruediv__ = __neg__ = __pos__ = _op


class _StubBase:
    """What `class X(torch.nn.Module)` subclasses."""

    def __init__(self, *args, **kwargs):
        pass

    def __init_subclass__(cls, **kwargs):
        pass


def _false(*_args, **_kwargs):
    return False


def _zero(*_args, **_kwargs):
    return 0


class _Finfo:
    """torch.finfo: the bounds SGLang reads at import time (FP8_E4M3_MAX)."""

    LIMITS = {"torch.float8_e4m3fn": 448.0, "torch.float8_e5m2": 57344.0,
              "torch.float16": 65504.0, "torch.half": 65504.0}

    def __init__(self, dtype=None):
        self.max = self.LIMITS.get(getattr(dtype, "_name", None), 3.3895313892515355e38)
        self.min = -self.max
        self.eps = 2 ** -7
        self.bits = 16


def _fill(module):
    """The values import-time code branches on: no accelerator of any kind."""
    name = module.__name__
    if name == "torch":
        module.__version__ = "2.9.1+standin"
        for dtype in ("float16", "bfloat16", "float32", "float64", "int8", "int32", "int64",
                      "uint8", "bool", "float8_e4m3fn", "float8_e5m2", "half", "float"):
            setattr(module, dtype, Stub("torch." + dtype))
        module.finfo = _Finfo
        module.iinfo = _Finfo
    elif name == "torch.version":
        module.__version__ = "2.9.1+standin"
        module.cuda = None
        module.hip = None
        module.musa = None
        module.git_version = "standin"
    elif name in ("torch.cuda", "torch.xpu", "torch.mps", "torch.backends.mps"):
        module.is_available = _false
        module.device_count = _zero
        module.is_built = _false
    elif name == "triton":
        module.__version__ = "3.5.1+standin"


# Attributes whose mere presence means a device backend (hasattr(torch, "npu") -> Ascend).
_ABSENT = {"torch.npu", "torch.hpu", "torch.musa"}


class _Module(types.ModuleType):
    def __getattr__(self, attr):
        if (attr.startswith("__") and attr.endswith("__")) or \
                "%s.%s" % (self.__name__, attr) in _ABSENT:
            raise AttributeError(attr)
        full = "%s.%s" % (self.__name__, attr)
        if full in _SUBMODULES:
            return importlib.import_module(full)
        return Stub(full)


# Submodules reached as attributes (torch.cuda.is_available() without `import torch.cuda`).
_SUBMODULES = {"torch.cuda", "torch.version", "torch.xpu", "torch.mps",
               "torch.backends", "torch.backends.mps", "torch.distributed", "torch.nn",
               "torch.library", "torch.utils"}


class _Loader(importlib.abc.Loader):
    def create_module(self, spec):
        module = _Module(spec.name)
        module.__path__ = []  # every stand-in is a package: any submodule can be imported
        return module

    def exec_module(self, module):
        _fill(module)


class Finder(importlib.abc.MetaPathFinder):
    def find_spec(self, fullname, path=None, target=None):
        if fullname.split(".", 1)[0] not in STANDIN_ROOTS or fullname in _ABSENT:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(), is_package=True)


def install():
    """Idempotent; refuses to run where a real torch is already imported."""
    real = sys.modules.get("torch")
    if real is not None and not isinstance(real, _Module):
        raise RuntimeError("a real torch is already imported; the stand-ins would shadow nothing")
    if not any(isinstance(f, Finder) for f in sys.meta_path):
        sys.meta_path.insert(0, Finder())
