"""The private role gpufleet.serving._fleet through real ansible-playbook, without a fleet.

Two inventory hosts on the local connection: h-ok completes, h-bad fails in a task. The
rescue enters record_failure.yml, the controller play report.yml: the summary file, the
per-host lines and the exit code are the ones the fleet playbooks rely on. A third host is
in the report play only, as a host that left the play. Seconds, no root.
"""
import json
import subprocess

from tests.support.ansible import ansible_env
from tests.support.paths import PYTHON, REPO, ansible_tool

PLAYBOOK = """\
- name: Work on each host
  hosts: h-ok:h-bad
  gather_facts: false
  tasks:
    - name: Work
      block:
        - name: Note the stage
          ansible.builtin.set_fact:
            _t_stage: work

        - name: Fail on h-bad
          ansible.builtin.fail:
            msg: "  the disk is full  "
          when: inventory_hostname == 'h-bad'

        - name: Record the result
          ansible.builtin.set_fact:
            t_result: {{host: "{{{{ inventory_hostname }}}}", outcome: ok, line: "{{{{ inventory_hostname }}}}: ok"}}
      rescue:
        - name: Find out why
          ansible.builtin.include_role: {{name: gpufleet.serving._fleet, tasks_from: record_failure.yml}}
          vars:
            fleet_stage: "{{{{ _t_stage }}}}"

        - name: Record the failure
          ansible.builtin.set_fact:
            t_result: "{{{{ fleet_failure | combine({{'line': fleet_failure | gpufleet.serving.swap_line}}) }}}}"

- name: Report
  hosts: all
  gather_facts: false
  tasks:
    - name: Report
      ansible.builtin.include_role: {{name: gpufleet.serving._fleet, tasks_from: report.yml}}
      vars:
        fleet_report_fact: t_result
        fleet_report_benchmark: false
        fleet_report_dir: {report_dir}
        fleet_report_summary_file: summary.json
        fleet_report_fail_msg: the test did not complete on
"""


def test_record_failure_and_report(tmp_path):
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("".join("%s ansible_connection=local ansible_python_interpreter=%s\n" % (h, PYTHON)
                                 for h in ("h-ok", "h-bad", "h-gone")))
    playbook = tmp_path / "play.yml"
    report_dir = tmp_path / "report"
    playbook.write_text(PLAYBOOK.format(report_dir=report_dir))
    run = subprocess.run([ansible_tool("ansible-playbook"), "-i", str(inventory), str(playbook)],
                         cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=300, check=False)
    output = run.stdout + run.stderr
    assert run.returncode == 2, output[-4000:]

    summary = json.loads((report_dir / "summary.json").read_text())
    hosts = {h["host"]: h for h in summary["hosts"]}
    assert summary["missing"] == ["h-gone"]
    assert summary["report"] == {"json": None, "markdown": None, "plot": None, "html": None}
    assert hosts["h-ok"] == {"host": "h-ok", "outcome": "ok", "line": "h-ok: ok"}
    bad = hosts["h-bad"]
    assert (bad["outcome"], bad["stage"], bad["unreachable"]) == ("failed", "work", False)
    assert bad["reason"] == "Fail on h-bad: the disk is full"

    assert '"report: none (no host completed)"' in output
    assert '"summary: %s/summary.json"' % report_dir in output
    assert '"h-bad: FAILED at stage work: Fail on h-bad: the disk is full"' in output
    assert '"h-gone: NO RESULT, the host left the play before recording an outcome (see above)"' in output
    assert "the test did not complete on ['h-bad', 'h-gone']" in output
