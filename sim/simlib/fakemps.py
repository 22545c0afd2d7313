"""An MPS stand-in for the fake GPU kit: `nvidia-cuda-mps-control` as NVIDIA documents it.

  nvidia-cuda-mps-control -d     start the control daemon (it returns once the daemon runs)
  echo quit | nvidia-cuda-mps-control
                                 the client: each stdin line is a command for the daemon

Both find the daemon through CUDA_MPS_PIPE_DIRECTORY (default /tmp/nvidia-mps), where the
daemon keeps its command pipe, `control`, as the real one does. The daemon runs as a
root-owned copy of the interpreter named nvidia-cuda-mps-control and starts its server, a
copy named nvidia-cuda-mps-server, which holds a per-GPU context on the fake GPUs (as a real
MPS server does on each GPU it serves: 74 MiB on an H200 with driver 580): FAKE_NVML_ROOT
names the kit root, GF_MPS_GPUS the GPUs (default 0), GF_MPS_MIB the MiB per GPU (default 74).
`quit` ends the server, then the daemon, and removes the pipe. A signal is not how MPS is
meant to be stopped; the stand-in does not guard against it, but nothing here relies on it.
"""
import os
import subprocess
import sys

from simlib import gpu_cli

DEFAULT_PIPE_DIR = "/tmp/nvidia-mps"


def pipe_dir():
    return os.environ.get("CUDA_MPS_PIPE_DIRECTORY") or DEFAULT_PIPE_DIR


def start_daemon():
    """-d: run the daemon under its own executable's name; return once its pipe exists."""
    root = os.environ["FAKE_NVML_ROOT"]
    exe, env = gpu_cli.daemon_exe(root, "nvidia-cuda-mps-control")
    env["PYTHONPATH"] = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + ":" + env["PYTHONPATH"]
    rfd, wfd = os.pipe()
    subprocess.Popen([exe, "-m", "simlib.fakemps", "--daemon", str(wfd)], env=env, pass_fds=(wfd,),
                     start_new_session=True, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    os.close(wfd)
    with os.fdopen(rfd) as ready:
        line = ready.read().strip()
    if not line.startswith("ok"):
        sys.stderr.write("nvidia-cuda-mps-control: daemon did not start: %s\n" % line)
        return 1
    return 0


def daemon(ready_fd):
    root = os.environ["FAKE_NVML_ROOT"]
    exe, env = gpu_cli.daemon_exe(root, "nvidia-cuda-mps-server")
    server = subprocess.Popen([exe, gpu_cli.SIMCTL, "gpu", "hold", root, "--gpu", os.environ.get("GF_MPS_GPUS", "0"),
                               "--mib", os.environ.get("GF_MPS_MIB", "74"), "--title", "nvidia-cuda-mps-server"],
                              env=env, stdout=subprocess.PIPE, stdin=subprocess.DEVNULL, text=True)
    server.stdout.readline()  # its PID, once it holds the memory
    directory = pipe_dir()
    os.makedirs(directory, exist_ok=True)
    control = os.path.join(directory, "control")
    if not os.path.exists(control):
        os.mkfifo(control, 0o600)
    with os.fdopen(ready_fd, "w") as ready:
        ready.write("ok %d\n" % os.getpid())
    while True:
        with open(control) as commands:  # blocks until a client opens it
            for line in commands:
                if line.strip() == "quit":
                    server.terminate()
                    server.wait()
                    os.unlink(control)
                    return 0


def client():
    control = os.path.join(pipe_dir(), "control")
    if not os.path.exists(control):
        sys.stderr.write("Cannot find MPS control daemon process\n")
        return 1
    with open(control, "w") as pipe:
        pipe.write(sys.stdin.read())
    return 0


def main(argv):
    if argv[:1] == ["-d"]:
        return start_daemon()
    if argv[:1] == ["--daemon"]:
        return daemon(int(argv[1]))
    return client()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
