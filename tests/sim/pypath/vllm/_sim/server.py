"""`vllm serve`: the flow of a real launch, simulated (filled in by the next steps)."""
from vllm._sim import args as argsmod


def main(argv):
    argsmod.parse(argv)
    return 0
