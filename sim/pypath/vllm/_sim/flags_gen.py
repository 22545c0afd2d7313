"""Derive `vllm serve`'s flag set from an unpacked vLLM wheel's sources (ast, nothing imported).

    python sim/pypath/vllm/_sim/flags_gen.py /path/holding/vllm > sim/pypath/vllm/_sim/flags.json

Real vLLM builds the serve parser in vllm/entrypoints/common/cli_args.py make_arg_parser:
its own add_argument calls, then FrontendArgs.add_cli_args (one `--field-name` per field of
BaseFrontendArgs/FrontendArgs, kinds from the annotations through
vllm/engine/arg_utils.py get_kwargs), then AsyncEngineArgs.add_cli_args (vllm/engine/
arg_utils.py: explicit add_argument calls, kinds from `action=` or, for `**kw["field"]`, from
EngineArgs' annotation of that field). Importing that code needs torch, so it is read here.

Short aliases (e.g. -tp) are listed under "aliases" with the long flag of the same call.

Kinds: "value" (one argument), "flag" (store_true), "bool" (BooleanOptionalAction: --x and
--no-x), "optional" (bool | str | None: bare flag or a value), "list" (nargs "+").
"""
import ast
import json
import os
import sys

CLI_ARGS = "vllm/entrypoints/common/cli_args.py"
ARG_UTILS = "vllm/engine/arg_utils.py"


def _kind_of_annotation(text):
    parts = {p.strip() for p in text.replace("Optional[", "").rstrip("]").split("|")}
    if "bool" in parts and "str" in parts:
        return "optional"
    if "bool" in parts:
        return "bool"
    if any(p.startswith(("list[", "set[", "tuple[")) for p in parts):
        return "list"
    return "value"


def _fields(tree, class_names):
    out = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef) and node.name in class_names:
            for item in node.body:
                if isinstance(item, ast.AnnAssign) and isinstance(item.target, ast.Name):
                    out[item.target.id] = _kind_of_annotation(ast.unparse(item.annotation))
    return out


def _calls(func):
    for node in ast.walk(func):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr == "add_argument":
            yield node


def _kind_of_call(call, fields):
    for kw in call.keywords:
        if kw.arg == "action":
            text = ast.unparse(kw.value)
            if "BooleanOptionalAction" in text:
                return "bool"
            if text in ("'store_true'", "'store_false'"):
                return "flag"
            return "value"
        if kw.arg == "nargs" and ast.unparse(kw.value) in ("'+'", "'*'"):
            return "list"
        if kw.arg is None and isinstance(kw.value, ast.Subscript):
            key = kw.value.slice
            if isinstance(key, ast.Constant):
                return fields.get(key.value, "value")
    return "value"


def _method(tree, class_name, name):
    for node in ast.walk(tree):
        if isinstance(node, (ast.ClassDef, ast.Module)) and getattr(node, "name", None) == class_name:
            for item in node.body:
                if isinstance(item, ast.FunctionDef) and item.name == name:
                    return item
    if class_name is None:
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                return node
    raise LookupError("%s.%s not found" % (class_name, name))


def derive(root):
    """({flag: kind} of `vllm serve`, aliases included, {alias: long flag})."""
    with open(os.path.join(root, CLI_ARGS), encoding="utf-8") as f:
        cli = ast.parse(f.read())
    with open(os.path.join(root, ARG_UTILS), encoding="utf-8") as f:
        eng = ast.parse(f.read())
    flags, aliases = {}, {}

    def add(call, fields):
        names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        if not names or not names[0].startswith("-"):
            return  # a positional (model_tag)
        kind = _kind_of_call(call, fields)
        long_ = next(n for n in names if n.startswith("--"))
        for name in names:
            flags[name] = kind
            if name != long_:
                aliases[name] = long_
            if kind == "bool" and name.startswith("--"):
                flags["--no-" + name[2:]] = kind

    for call in _calls(_method(cli, None, "make_arg_parser")):
        add(call, {})
    for field, kind in _fields(cli, {"BaseFrontendArgs", "FrontendArgs"}).items():
        flags["--" + field.replace("_", "-")] = kind
        if kind == "bool":
            flags["--no-" + field.replace("_", "-")] = kind
    engine_fields = _fields(eng, {"EngineArgs", "AsyncEngineArgs"})
    for cls in ("EngineArgs", "AsyncEngineArgs"):
        for call in _calls(_method(eng, cls, "add_cli_args")):
            add(call, engine_fields)
    return dict(sorted(flags.items())), dict(sorted(aliases.items()))


if __name__ == "__main__":
    FLAGS, ALIASES = derive(sys.argv[1])
    json.dump({"source": "vllm 0.33.0: %s, %s" % (CLI_ARGS, ARG_UTILS), "flags": FLAGS, "aliases": ALIASES},
              sys.stdout, indent=1, sort_keys=True)
    sys.stdout.write("\n")
