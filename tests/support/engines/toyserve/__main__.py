"""`toyserve serve MODEL [--port N] [--host H] [--tp N] ...` and `toyserve --version`."""
import argparse
import os
import sys

import toyserve


def parse(argv):
    top = argparse.ArgumentParser(prog="toyserve", description="a fake LLM engine for the tests")
    top.add_argument("--version", action="version", version="toyserve %s" % toyserve.__version__)
    sub = top.add_subparsers(dest="command", required=True)
    serve = sub.add_parser("serve", help="serve MODEL over HTTP")
    serve.add_argument("model", help="a model directory with config.json")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8100)
    serve.add_argument("--tp", type=int, default=1, help="workers, one a GPU")
    serve.add_argument("--served-model-name", default=None)
    serve.add_argument("--api-key", default=None, help="required as a bearer token on /v1 routes")
    serve.add_argument("--gpu-memory-fraction", type=float, default=0.8,
                       help="share of each fake GPU's total memory a worker holds")
    serve.add_argument("--max-running", type=int, default=64)
    serve.add_argument("--load-seconds", type=float, default=0.2, help="how long loading takes")
    serve.add_argument("--single-stream-tps", type=float, default=200.0)
    serve.add_argument("--peak-tps", type=float, default=2000.0)
    serve.add_argument("--peak-concurrency", type=int, default=32)
    serve.add_argument("--eos-prob", type=float, default=0.0, help="chance of an EOS a token")
    return top.parse_args(argv)


if __name__ == "__main__":
    args = parse(sys.argv[1:])
    from toyserve.server import main  # the guard matters: spawned workers re-import this module

    code = main(args)
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)  # multiprocessing's exit hook would otherwise wait for the workers
