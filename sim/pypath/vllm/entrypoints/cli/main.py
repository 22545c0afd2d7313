"""`python -m vllm.entrypoints.cli.main serve MODEL ...`: the module behind real vLLM's
`vllm` console script (vllm = vllm.entrypoints.cli.main:main, vllm/entrypoints/cli/main.py)."""
import os
import sys


def main(argv=None):
    """Real: a required subcommand (serve, chat, complete, bench, ...); only serve is simulated."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] in (["-v"], ["--version"]):
        import vllm
        print(vllm.__version__)
        return 0
    if argv[:1] != ["serve"]:
        sys.stderr.write("vllm %s is not simulated\n" % (argv[0] if argv else "(no subcommand)"))
        return 2
    from vllm._sim.server import main as serve  # the guard below matters: spawned children re-import

    return serve(argv[1:])


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # as the SGLang simulator: multiprocessing's exit hook would wait for children
