#!/usr/bin/env python3
"""Writes prometheusrule.yaml: the rules of rules.yaml as the Prometheus
operator's PrometheusRule object, so both hold the same groups. Run it after
changing rules.yaml; tests/deploy/check_manifests.py fails while they differ.

Usage: make-prometheusrule.py [OUTPUT]   (default: prometheusrule.yaml beside it)
"""
import sys
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
HEADER = """\
# Generated from rules.yaml by make-prometheusrule.py: edit rules.yaml, then
# run the script. For clusters with the Prometheus operator: `kubectl apply
# -f` this and servicemonitor.yaml after the kustomization. The operator's
# counterpart of loading rules.yaml with rule_files.
"""


class BlockDumper(yaml.SafeDumper):
    """Indents sequences under their key and writes multi-line text as | blocks, as rules.yaml does."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def represent_text(dumper, text):
    style = "|" if "\n" in text else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", text, style=style)


BlockDumper.add_representer(str, represent_text)


def prometheus_rule(groups):
    return {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "PrometheusRule",
        "metadata": {
            "name": "tcheck-bpf-rules",
            "namespace": "tcheck-bpf",
            "labels": {"app.kubernetes.io/name": "tcheck-bpf"},
        },
        "spec": {"groups": groups},
    }


def main():
    output = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "prometheusrule.yaml"
    groups = yaml.safe_load((HERE / "rules.yaml").read_text())["groups"]
    text = yaml.dump(prometheus_rule(groups), Dumper=BlockDumper, sort_keys=False, width=80)
    output.write_text(HEADER + text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
