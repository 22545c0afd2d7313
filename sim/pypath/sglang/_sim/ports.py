"""SGLang's own port check before a launch in attention-DP mode, and the ports it then holds.

Imitates PortArgs.init_new (sglang/srt/server_args.py): with attention DP (--attn-dp-size > 1
or --enable-dp-attention) the server talks over TCP on ports derived from --port
(dist_init_port = port + ZMQ_TCP_PORT_DELTA, then port_base and the ports after it) and
first waits for each to be free with real SGLang's own wait_port_available
(sglang/srt/utils/network.py: SGLANG_WAIT_PORT_TIMEOUT seconds, 30 by default). A
relaunch while the old server still holds them logs "Port is already in use. ..." and
"... is not available in 30 seconds" and exits. Without attention DP the ports are IPC
files: a relaunch meets the old server only at uvicorn's bind.
"""
import socket

ZMQ_TCP_PORT_DELTA = 233
NUM_DERIVED_PORTS = 6


def attention_dp(args):
    real = args.server_args
    return (real.attn_dp_size or 1) > 1 or bool(getattr(real, "enable_dp_attention", False))


def plan(args):
    dist_init_port = args.port + ZMQ_TCP_PORT_DELTA
    if dist_init_port > 65535:
        dist_init_port = args.port - ZMQ_TCP_PORT_DELTA
    if dist_init_port + NUM_DERIVED_PORTS > 65535:
        port_base = dist_init_port - NUM_DERIVED_PORTS - 1
    else:
        port_base = dist_init_port + 1
    from sglang.srt.utils.network import get_free_port_below_ephemeral  # real SGLang
    nccl_port = args.server_args.nccl_port or get_free_port_below_ephemeral()
    return {"dist_init_port": dist_init_port, "port_base": port_base, "detokenizer_port": port_base + 1,
            "nccl_port": nccl_port, "rpc_port": port_base + 2, "metrics_port": port_base + 3,
            "scheduler_input_port": port_base + 4}


ORDER = ("dist_init_port", "port_base", "detokenizer_port", "nccl_port", "rpc_port", "metrics_port",
         "scheduler_input_port")
SHOWN = ("dist_init_port", "port_base", "detokenizer_port", "nccl_port", "scheduler_input_port")


def reserve(args, log):
    """Check the ports as real SGLang does; hold them (listening on loopback) while running.

    Returns the sockets to keep open, or [] without attention DP. Raises ValueError."""
    if not attention_dp(args):
        return []
    from sglang.srt.utils.network import wait_port_available  # real SGLang
    ports = plan(args)
    try:
        for name in ORDER:
            wait_port_available(ports[name], name)
    except ValueError:
        log.exception("Port is already in use. %s", " ".join("%s=%d" % (n, ports[n]) for n in SHOWN))
        raise
    held = []
    for name in ORDER:
        if name == "nccl_port":
            continue  # bound by the schedulers' torch.distributed, not simulated
        sock = socket.socket()
        sock.bind(("127.0.0.1", ports[name]))
        sock.listen(8)
        held.append(sock)
    return held
