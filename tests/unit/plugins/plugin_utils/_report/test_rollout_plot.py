# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_report/rollout_plot.py: two panels on one time axis, throughput with the lost requests marked
and healthy workers, the change window shaded; a probe with nothing measured still draws."""

from __future__ import annotations

from ansible_collections.gpufleet.serving.plugins.plugin_utils._report import rollout_plot, rollout_probe
from tests.support.probe_data import DRAINS, probe


def test_the_plot_has_throughput_losses_and_healthy_workers():
    data = rollout_probe.report(probe(), DRAINS, "T $x^2$")
    fig = rollout_plot.build(data["title"], data)
    top, bottom = fig.axes
    labels = [line.get_label() for line in top.get_lines()]
    assert labels[0].startswith("output tok/s") and "failed requests (1)" in labels and "broken requests (1)" in labels
    assert bottom.get_lines()[0].get_label() == "healthy workers in the router"
    assert list(bottom.get_lines()[0].get_ydata()) == [3, 3, 3, 3, 2, 2, 2, 3, 3, 3, 3]
    assert rollout_plot.render_png(data).startswith(b"\x89PNG")


def test_nothing_measured_still_draws():
    data = rollout_probe.report({"requests": [], "samples": []}, None, "T")
    assert rollout_plot.render_png(data).startswith(b"\x89PNG")
