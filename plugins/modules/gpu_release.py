#!/usr/bin/python
# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_release
short_description: Free NVIDIA GPUs safely and prove they are free
version_added: 0.1.0
description:
  - Kills an inference server by command-line pattern together with its whole process tree
    (SIGTERM, then SIGKILL at a deadline), sweeps the remaining processes that hold the selected
    GPUs' device files (what C(fuser /dev/nvidia*) finds), and verifies through NVML that every
    selected GPU's memory is free.
  - Never signals its own process or any ancestor (the SSH session, shell and Ansible process
    running it, even when their command lines contain the pattern), PID 1, kernel threads, or the
    GPU system daemons (listed under O(protect)).
  - Waits exactly as long as processes take to exit (pidfds, no fixed sleeps) and polls NVML every
    20 ms until memory has drained; every selected GPU is checked.
  - Processes are pinned by PID and start time, so a PID reused between the scan and the signal is
    never signalled.
  - Device files. A process holds GPU N when it has C(/dev/nvidiaN) mapped, as every CUDA context
    does. NVML users (nvidia-smi, monitoring exporters, this module) keep C(/dev/nvidiaN) open but
    never map it and hold no GPU memory; they are reported among a GPU's holders but never swept (a run that had
    nothing to signal on GPUs NVML shows idle before and after does not look for them, as nothing holds those GPUs).
    C(/dev/nvidiactl), C(/dev/nvidia-uvm) and C(/dev/nvidia-caps/*) are held by every CUDA and every
    NVML process, so holding only those never makes a process a sweep target.
author:
  - gpufleet.serving maintainers (@gpufleet)
requirements:
  - psutil
  - nvidia-ml-py (when O(verify=true))
  - Linux (reads C(/proc))
extends_documentation_fragment:
  - gpufleet.serving.attributes
  - gpufleet.serving.attributes.ACTIONGROUP_GPU
  - gpufleet.serving.gpu
attributes:
  check_mode:
    support: full
    details:
      - Signals nothing; RV(killed) lists what would be signalled and RV(changed) is what a real run would say.
  diff_mode:
    support: none
options:
  patterns:
    description:
      - Regular expressions (Python C(re.search)) matched against each process's full command line
        (C(/proc/PID/cmdline) joined with spaces). Every matching process and its descendants at the time
        of the scan are released; descent stops at another session (a tmux/screen session, a separate
        session leader) unless that process matches or holds a selected GPU. Ansible's own processes
        (ansible, ansible-playbook, AnsiballZ modules, async_wrapper, their SSH session) never match.
      - Refused with a clear error, unless O(force_broad=true) - an empty string, a regex that does not
        compile, one that matches the empty command line (such as C(.*)), one that matches ordinary
        host processes (such as C(python), which hits Python daemons and notebooks, or C(bash)).
      - A matched tree is released only if it holds a selected GPU (O(gpus), by device number, whatever
        the device file is called), or holds no GPU memory and its C(CUDA_VISIBLE_DEVICES) names a selected
        GPU or is unreadable; a tree only on other GPUs is left alone and listed in RV(skipped_trees).
        Every GPU a released tree held is verified, not only the selected ones.
      - Each engine's kill set, as the P(gpufleet.serving.engine_patterns#lookup) lookup returns it (see the first example).
      # BEGIN GENERATED engine-patterns (scripts/gen_docs.py)
      - 'V(sglang): C(sglang::), C(sglang\.launch_server), C(sglang\.bench), C(sglang\.data_parallel),
        C(sglang\.srt), C(sgl_diffusion::), C(sglang serve).'
      - 'V(vllm): C(VLLM::), C(vllm\.entrypoints), C(vllm serve).'
      # END GENERATED engine-patterns
      - A list, or one comma-separated string (k=v form, C(patterns=a,b)). A string whose split at a comma would
        cut a regex (C(sglang::scheduler_TP[0-9]{1,2})) is refused; give such a pattern as a YAML or JSON list.
    type: raw
    default: []
  engine:
    description:
      - Add the kill set of these inference engines to O(patterns), from the same definition the
        P(gpufleet.serving.engine_patterns#lookup) lookup reads; V(any) stands for every engine below.
        Unset (the default), only O(patterns) is used.
      - Useful for vLLM, whose C(VLLM::EngineCore) and C(VLLM::Worker_TP<r>) processes can outlive a killed API
        server and keep the GPUs; V(vllm) matches them by title.
      # BEGIN GENERATED engine-patterns (scripts/gen_docs.py)
      - 'V(sglang): C(sglang::), C(sglang\.launch_server), C(sglang\.bench), C(sglang\.data_parallel),
        C(sglang\.srt), C(sgl_diffusion::), C(sglang serve).'
      - 'V(vllm): C(VLLM::), C(vllm\.entrypoints), C(vllm serve).'
      # END GENERATED engine-patterns
      - A list, or one comma-separated string (C(engine=sglang,vllm)).
    type: list
    elements: str
    # BEGIN GENERATED engine-choices (scripts/gen_docs.py)
    choices:
      - sglang
      - vllm
      - any
    # END GENERATED engine-choices
  sweep:
    description:
      - After the pattern kill, release every remaining process that holds a selected GPU's device
        file (a memory map of C(/dev/nvidiaN), i.e. a CUDA context), except protected ones.
      - A process that uses only unselected GPUs is never touched by the sweep (two tenants on one host).
    type: bool
    default: true
  sweep_users:
    description:
      - Limit the device sweep to processes of these user names, so that a shared host's other
        tenants are safe. Empty means every user. Pattern matches are not limited by it.
    type: list
    elements: str
    default: []
  force_broad:
    description:
      - Accept patterns that the breadth checks refuse. Only for hosts where you know every process.
    type: bool
    default: false
  term_timeout:
    description:
      - Seconds between SIGTERM and SIGKILL for processes still alive. V(0) sends SIGKILL at once.
      - When it reaches past O(timeout), SIGKILL is sent shortly before the deadline instead
        (0.5 s, or half the time left), so that the kill can still be verified.
    type: float
    default: 10
  timeout:
    description:
      - Seconds for the whole release, signals included, until the processes are gone and memory has drained.
    type: float
    default: 60
  max_used_mib:
    description:
      - A GPU is free when NVML's v2 C(used) memory, which excludes the driver's reserve, is at most
        this many MiB.
      - On a driver without the v2 call, v1 C(used) (which includes the reserve) minus O(v1_reserve_mib) is used.
    type: float
    default: 0
  verify:
    description:
      - Verify with NVML that every selected GPU's memory is free, and fail if not.
      - With V(false), NVML is optional and the device files name the GPUs.
    type: bool
    default: true
  respawn_settle:
    description:
      - After a release that signalled something, each signalled process is watched for this many seconds
        from its own exit (never past O(timeout)); patterns and device holders are rescanned while the GPU
        memory drains. A process that matches or holds a selected GPU and was not there before fails the task,
        naming it and the parent that restarted it (stop that supervisor first).
      - A process whose parent and every ancestor up to init were released in the same run is not watched
        (nobody is left to restart it; one rescan after the last exit still runs). RV(respawn_watch) says
        what was watched and for how long.
      - A surviving parent that restarts by design (a shell running a C(while) or C(until) loop, supervisord,
        runit, s6, daemontools, systemd with C(Restart=)) fails the task at once, named in RV(restarters),
        even when its pause is longer than this watch.
    type: float
    default: 0.5
  mps:
    description:
      - What to do with the memory a CUDA MPS server (C(nvidia-cuda-mps-server), known by its executable) holds on a
        selected GPU, its own per-GPU context, which stays as long as the MPS control daemon runs (74 MiB per GPU on
        an H200 with driver 580). The MPS daemons are never signalled.
      - V(overhead) counts it as daemon overhead in the verification, reported per GPU in RV(gpus[].mps) with the
        figure, so that a release on an MPS host succeeds without touching the daemon.
      - V(quit) stops MPS the way NVIDIA documents it, C(echo quit | nvidia-cuda-mps-control) with the daemon's own
        C(CUDA_MPS_PIPE_DIRECTORY) (never a signal), for each control daemon whose server holds a selected GPU,
        then verifies zero; RV(mps) says what was run.
    type: str
    choices: [overhead, quit]
    default: overhead
  reset_stuck:
    description:
      - Reset a selected GPU whose memory stays used after the release with no process left on it (NVML lists
        none and no process maps or opens its device file; a context an unclean exit left behind), through
        C(nvidia-smi -r -i N), then read it again and re-run the health checks (P(gpufleet.serving.gpu_health#module)'s),
        reported in RV(reset).
      - Only where it is safe. No process may use any GPU that is reset. The NVLink peer set must allow it - a GPU
        without NVLink, or a Hopper or later GPU on NVSwitch, is reset alone; any other NVLinked GPU only together
        with all its NVLink peers (on an NVSwitch fabric before Hopper, every GPU of the fabric), and only when every
        one of them is selected and unused (the rule of C(nvidia-smi -r) in nvidia-smi(1); docs/gpu_release.md).
        Otherwise the GPU is not reset and the failure says why.
      - Never in check mode (RV(reset) says so). Needs O(verify=true). A GPU whose health fails after the reset fails
        the task (power-cycle the host).
    type: bool
    default: false
notes:
  - O(timeout), O(max_used_mib), O(v1_reserve_mib) and O(respawn_settle) must be finite numbers (V(nan) and
    V(inf) are refused), and every O(sweep_users) entry a user this host knows.
  - For a graceful drain of in-flight requests, stop the server through its supervisor first (the
    P(gpufleet.serving.sglang_server#role) role does), then run this module to clean up and verify.
  - Run as root (or the user owning the processes) to signal other users' processes and read their
    C(/proc) entries.
seealso:
  - module: gpufleet.serving.gpu_info
"""

EXAMPLES = r"""
- name: Tear down SGLang and prove all 8 GPUs are free
  gpufleet.serving.gpu_release:
    patterns: "{{ query('gpufleet.serving.engine_patterns', 'sglang') }}"
  register: released

- name: Free GPUs 0-3 only; a tenant on 4-7 is left alone
  gpufleet.serving.gpu_release:
    patterns: "{{ query('gpufleet.serving.engine_patterns', 'vllm') }}"
    gpus: [0, 1, 2, 3]

- name: Kill vLLM's API server, EngineCore and workers (VLLM::Worker_TP<r>) by their titles, then sweep and verify
  gpufleet.serving.gpu_release:
    engine: vllm

- name: Kill whatever engine ran here, plus a helper of our own
  gpufleet.serving.gpu_release:
    engine: any
    patterns: ['my_prefetcher\.py']

- name: What would be killed?
  gpufleet.serving.gpu_release:
    patterns: ['sglang::']
  check_mode: true

- name: SIGKILL at once, and only sweep device holders of the serving user
  gpufleet.serving.gpu_release:
    patterns: ['sglang::']
    term_timeout: 0
    sweep_users: [serving]
"""

RETURN = r"""
changed:
  description: True exactly when a process was signalled (or would be, in check mode).
  returned: always
  type: bool
killed:
  description: Processes signalled (in check mode, those that would be).
  returned: always
  type: list
  elements: dict
  contains:
    pid: {description: Process ID., type: int, returned: always}
    user: {description: Owner., type: str, returned: always}
    cmdline: {description: Command line at the scan., type: str, returned: always}
    reason: {description: "C(pattern), C(descendant) (of a pattern match) or C(device) (found by the sweep).", type: str, returned: always}
    signals: {description: "Signals sent, e.g. C([SIGTERM, SIGKILL]).", type: list, elements: str, returned: always}
    gone_after: {description: Seconds from the first signal until the process was gone., type: float, returned: always}
    sigkill_at_once:
      description: >-
        Why the process got SIGKILL without a SIGTERM first: C(SIGTERM ignored), C(SIGTERM blocked by every thread),
        C(PID 1 of its own PID namespace without a SIGTERM handler), or C(ptrace-stopped (traced by pid N): ...)
        (a debugger or profiler holds it; it acts on no signal but SIGKILL until its tracer lets it go)
        (read from /proc/PID/status and /proc/PID/task/*/stat). Every such process gets C(SIGSTOP) first, all
        together (not listed in RV(killed[].signals)), so that none acts on another's death (a server that ends its
        workers when one dies) before its own SIGKILL reaches it.
      type: str
      returned: when so
    continued:
      description: >-
        Why C(SIGCONT) followed C(SIGTERM): the process was stopped by job control (state T: Ctrl-Z, SIGSTOP), and
        SIGTERM stays pending on a stopped process until it is continued (as systemd does, systemd.kill(5)).
      type: str
      returned: when so
  sample:
    - {pid: 4242, user: root, cmdline: "python3 -m sglang.launch_server --tp 8", reason: pattern, signals: [SIGTERM], gone_after: 0.21}
respawned:
  description: >-
    Processes that matched or held a selected GPU after the release although they were not there before
    (the task then fails), each with C(age) in seconds and its C(parent).
  returned: on a respawn
  type: list
  elements: dict
mps:
  description: >-
    With O(mps=quit), when an MPS server held a selected GPU: C(action) and, per control daemon, C(control_pid),
    C(pipe_directory), C(command) and its C(rc) (with C(error) when it failed).
  returned: when MPS was stopped
  type: dict
reset:
  description: >-
    With O(reset_stuck=true): C(groups), each reset run (C(gpus), the NVLink C(rule) that made the set, C(command),
    C(rc), C(output)); C(refused), GPUs left alone with the C(reason); C(health), the health checks of the reset
    GPUs afterwards (C(verdict), C(reasons), per GPU C(verdict) and C(reasons)). A GPU reset carries C(reset=true)
    in RV(gpus).
  returned: when O(reset_stuck=true)
  type: dict
  sample:
    groups:
      - {gpus: [3], rule: "no NVLink: reset alone", command: "/usr/bin/nvidia-smi -r -i 3", rc: 0,
         output: "GPU 00000000:48:00.0 was successfully reset. All done."}
    refused: []
    health: {verdict: pass, reasons: [], gpus: [{index: 3, verdict: pass, reasons: []}]}
respawn_watch:
  description: >-
    What the respawn watch looked at: C(settle) (seconds per process), C(rescans), C(watched) (each process watched
    from its own exit, with C(watched_s), the seconds covered, its surviving C(parent_pid) and, when that parent
    restarts by design, C(restarter)), and C(skipped) (processes whose parent and every ancestor up to init were
    released in this run, with C(why)).
  returned: after a release that signalled something
  type: dict
restarters:
  description: >-
    Surviving parents that restart by design what the release ended (the task then fails): C(pid), C(cmdline),
    C(user), C(kind) (for example C(a shell running a loop (while)), C(supervisord), C(systemd unit x.service with
    Restart=always)) and C(started), the released PIDs it started.
  returned: when one is found
  type: list
  elements: dict
predicted_failures:
  description: >-
    Check mode: selected GPUs a real run would leave in use, with the holders it would not signal
    (protected, outside O(sweep_users), or with O(sweep=false)); the check-mode task fails when there are any.
  returned: in check mode
  type: list
  elements: dict
failed_to_kill:
  description: >-
    Processes still alive at the deadline, with their state (for example C(D) or C(zombie)); a process whose
    main thread exited while other threads run on shows e.g. C(sleeping (main thread exited, 2 threads live)).
    A signal refused with EPERM fails the task at once, and the refused processes are listed here.
  returned: always
  type: list
  elements: dict
protected_holders:
  description: Protected processes that hold a selected GPU's device file (never signalled), with the reason.
  returned: always
  type: list
  elements: dict
  sample:
    - {pid: 812, user: nvidia-persistenced, cmdline: "/usr/bin/nvidia-persistenced", state: sleeping, protected: gpu daemon}
spared_ansible:
  description:
    - Processes of the Ansible run itself whose command line a pattern matched (the C(ansible) command that
      passes the patterns, its forked workers, C(ansible-runner), the module's own ancestors), never signalled,
      with the reason (C(ansible), C(ancestor) or C(copy of an ancestor)).
  returned: always
  type: list
  elements: dict
  sample:
    - {pid: 4410, user: root, cmdline: "/usr/bin/python3 /usr/bin/ansible gpu_hosts -m gpufleet.serving.gpu_release -a patterns=sglang::",
       state: sleeping, protected: ancestor}
protected_matches:
  description: >-
    Other processes whose command line matches a pattern but that are never signalled (Ansible's own are in
    RV(spared_ansible)), with the reason: C(terminal multiplexer) (a tmux or screen server keeps the argv of the command
    that started it; the matching session's own processes are released, the multiplexer and its other sessions are
    spared), C(router) (sglang-router's own executable C(smg) or C(sglang-router), root's file: it titles itself
    C(sglang::router), which SGLang's pattern C(sglang::) matches), C(gpu daemon), C(protect pattern), C(kernel thread).
  returned: success
  type: list
  elements: dict
  sample:
    - {pid: 2170, user: root, cmdline: "tmux new -d -s srv python3 -m sglang.launch_server --tp 4", state: sleeping, protected: terminal multiplexer}
gpus:
  description: Every selected GPU.
  returned: always
  type: list
  elements: dict
  contains:
    index: {description: NVML index., type: int, returned: always}
    uuid: {description: GPU UUID., type: str, returned: always}
    name: {description: Product name., type: str, returned: always}
    memory_api: {description: "C(v2), or C(v1) on drivers without the v2 call.", type: str, returned: always}
    total_mib: {description: Total memory in MiB., type: float, returned: always}
    before: {description: "C(used_mib) and C(reserved_mib) before the release.", type: dict, returned: always}
    after: {description: "C(used_mib) and C(reserved_mib) after it; null without verification.", type: dict, returned: always}
    free:
      description: >-
        Whether C(after.used_mib) <= O(max_used_mib); with O(mps=overhead), after taking off the MPS server's own
        context (C(mps.used_mib)).
      type: bool
      returned: when verified
    mps:
      description: >-
        The MPS servers' own context on this GPU: C(server_pids), C(nvml_process_mib) (what NVML charges to the
        server processes), C(used_mib) (the figure counted: where the servers are the only processes NVML lists on
        the GPU, their figure plus what the GPU holds beyond it up to 32 MiB, as MPS also holds memory charged to
        no process (8 MiB on an H200); else their own figure) and
        C(counted) (C(as daemon overhead), or C(as used) with O(mps=quit)).
      type: dict
      returned: when an MPS server holds memory on this GPU
    holders:
      description: "Processes still holding the GPU (pid, user, cmdline, state, protected reason if any)."
      type: list
      elements: dict
      returned: always
gpus_selected:
  description: NVML indices of the selected GPUs.
  returned: always
  type: list
  elements: int
skipped_trees:
  description:
    - With a GPU subset, pattern-matched trees left alone because they sit only on unselected GPUs.
    - "C(placed_by): C(memory) (GPUs its processes map or NVML lists them on), C(CUDA_VISIBLE_DEVICES)
      (a tree not holding memory yet, from C(/proc/PID/environ)); a tree with neither counts as sitting
      on every GPU and is released."
  returned: always
  type: list
  elements: dict
  sample:
    - {pid: 5120, user: root, cmdline: "python3 -m sglang.launch_server --tp-size 4 --port 30001",
       pids: [5120, 5131, 5132, 5133, 5134], gpus: [4, 5, 6, 7], placed_by: memory}
gpus_added:
  description: NVML indices verified and reported besides the selection, because a released tree also sat on them (and nothing else used them).
  returned: always
  type: list
  elements: int
unresolved_holders:
  description:
    - Processes that map a file named like a GPU device (C(.../nvidiaN)) whose device could not be
      identified (not a character device of major 195, not a file of O(devices), and
      C(/proc/PID/map_files) not readable without root). They are not swept. Run as root to resolve them.
  returned: always
  type: list
  elements: dict
  sample:
    - {pid: 7001, user: alice, cmdline: "python3 job.py", state: sleeping, paths: ["/jail/dev/nvidia3"]}
timings:
  description: Seconds spent in each phase (C(pattern), C(sweep), C(verify)).
  returned: when not in check mode
  type: dict
elapsed:
  description: Seconds the module took.
  returned: always
  type: float
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.serving.plugins.module_utils._deps import require as require_libraries
from ansible_collections.gpufleet.serving.plugins.module_utils._errors import run_module
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.args import COMMON_ARGS
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.patterns import engine_choices
from ansible_collections.gpufleet.serving.plugins.module_utils._gpu.release import release_gpus


def main():
    argument_spec = dict(
        COMMON_ARGS,
        patterns=dict(type="raw", default=[]),
        engine=dict(type="list", elements="str", choices=engine_choices()),
        sweep=dict(type="bool", default=True),
        sweep_users=dict(type="list", elements="str", default=[]),
        force_broad=dict(type="bool", default=False),
        term_timeout=dict(type="float", default=10.0),
        timeout=dict(type="float", default=60.0),
        max_used_mib=dict(type="float", default=0.0),
        verify=dict(type="bool", default=True),
        respawn_settle=dict(type="float", default=0.5),
        mps=dict(type="str", default="overhead", choices=["overhead", "quit"]),
        reset_stuck=dict(type="bool", default=False),
    )
    module = AnsibleModule(argument_spec=argument_spec, supports_check_mode=True)
    require_libraries(module, "psutil", *(["nvidia-ml-py"] if module.params["verify"] else []))
    run_module(module, release_gpus, module.params, check_mode=module.check_mode)


if __name__ == "__main__":
    main()
