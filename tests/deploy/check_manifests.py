#!/usr/bin/env python3
"""Structural checks of the deployment files in tools/deploy, offline.

Usage: check_manifests.py RENDERED_KUSTOMIZATION_YAML

The rendered kustomization (kubectl kustomize's output, or the plain files
joined when kubectl is missing) must hold the agent's objects with the
least privileges the docs claim; the sidecar example must claim no more;
every added capability needs a comment saying why; the metrics port must
agree everywhere. Prints one line per problem and exits 1 if there is any.
"""
import re
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "tools" / "deploy"
ALLOWED_CAPABILITIES = {"BPF", "PERFMON", "SYS_PTRACE"}
ALLOWED_HOST_PATHS = {"/var/log/containers": True, "/var/log/tcheck-bpf": False}  # path: read-only
problems = []


def problem(text):
    problems.append(text)


def objects_of(text):
    return [o for o in yaml.safe_load_all(text) if o]


def check_container(where, container):
    context = container.get("securityContext", {})
    if context.get("privileged", False):
        problem(f"{where}: runs privileged")
    if context.get("allowPrivilegeEscalation", True):
        problem(f"{where}: allows privilege escalation")
    if not context.get("readOnlyRootFilesystem", False):
        problem(f"{where}: root filesystem is writable")
    if context.get("seccompProfile", {}).get("type") != "RuntimeDefault":
        problem(f"{where}: no RuntimeDefault seccomp profile")
    capabilities = context.get("capabilities", {})
    if capabilities.get("drop") != ["ALL"]:
        problem(f"{where}: does not drop ALL capabilities first")
    added = set(capabilities.get("add", []))
    if added - ALLOWED_CAPABILITIES:
        problem(f"{where}: adds capabilities beyond {sorted(ALLOWED_CAPABILITIES)}: "
                f"{sorted(added - ALLOWED_CAPABILITIES)}")
    if not added:
        problem(f"{where}: adds no capability: it could not load BPF")


def check_commented_capabilities(path):
    """Every '- CAP' line under 'add:' has a comment line right above it."""
    lines = path.read_text().splitlines()
    in_add = False
    for number, line in enumerate(lines):
        stripped = line.strip()
        if stripped == "add:":
            in_add, indent = True, len(line) - len(line.lstrip())
            continue
        if in_add:
            if stripped and not stripped.startswith("#") and not stripped.startswith("- "):
                in_add = False
                continue
            if stripped.startswith("- "):
                above = lines[number - 1].strip()
                if not above.startswith("#"):
                    problem(f"{path.name}:{number + 1}: capability {stripped[2:]} has no "
                            "comment saying why")


def listen_port():
    for line in (DEPLOY / "agent.conf").read_text().splitlines():
        match = re.match(r"\s*listen\s*=\s*\S+:(\d+)\s*$", line)
        if match:
            return int(match.group(1))
    problem("agent.conf: no listen = HOST:PORT line")
    return None


def check_agent(objects):
    kinds = {}
    for o in objects:
        kinds.setdefault(o["kind"], []).append(o)
    for kind in ("Namespace", "ConfigMap", "DaemonSet", "Service"):
        if kind not in kinds:
            problem(f"kustomization renders no {kind}")
    if problems:
        return
    port = listen_port()
    daemonset = kinds["DaemonSet"][0]
    spec = daemonset["spec"]["template"]["spec"]
    metadata = daemonset["spec"]["template"]["metadata"]
    if spec.get("hostPID") is not True:
        problem("DaemonSet: hostPID is not true: it would see no training process")
    if spec.get("hostNetwork"):
        problem("DaemonSet: uses the host network, which it does not need")
    if spec.get("automountServiceAccountToken") is not False:
        problem("DaemonSet: mounts a service account token it does not need")
    if daemonset["spec"]["selector"]["matchLabels"].items() - metadata["labels"].items():
        problem("DaemonSet: its selector does not match its pod labels")
    containers = spec["containers"]
    if len(containers) != 1:
        problem("DaemonSet: expected one container")
    container = containers[0]
    check_container("DaemonSet agent", container)
    ports = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    if ports.get("metrics") != port:
        problem(f"DaemonSet: metrics port {ports.get('metrics')} is not agent.conf's {port}")
    if str(port) != metadata.get("annotations", {}).get("prometheus.io/port"):
        problem("DaemonSet: prometheus.io/port annotation disagrees with the metrics port")
    for probe, path in (("livenessProbe", "/healthz"), ("readinessProbe", "/readyz")):
        get = container.get(probe, {}).get("httpGet", {})
        if get.get("path") != path or get.get("port") not in ("metrics", port):
            problem(f"DaemonSet: no {probe} asking {path} on the metrics port")
    mounts = {m["name"]: m for m in container.get("volumeMounts", [])}
    for volume in spec.get("volumes", []):
        host = volume.get("hostPath")
        if not host:
            continue
        path = host["path"]
        if path not in ALLOWED_HOST_PATHS:
            problem(f"DaemonSet: host path {path} is not one the docs name")
            continue
        mount = mounts.get(volume["name"])
        if not mount:
            problem(f"DaemonSet: host path {path} is never mounted")
        elif ALLOWED_HOST_PATHS[path] and not mount.get("readOnly"):
            problem(f"DaemonSet: host path {path} must be mounted read-only")
    namespace = kinds["Namespace"][0]["metadata"]["name"]
    for o in objects:
        if o["kind"] != "Namespace" and o["metadata"].get("namespace") != namespace:
            problem(f"{o['kind']} {o['metadata']['name']}: not in namespace {namespace}")
    service = kinds["Service"][0]
    if service["spec"]["selector"].items() - metadata["labels"].items():
        problem("Service: its selector does not match the agent pods")
    if service["spec"].get("clusterIP") != "None":
        problem("Service: not headless; Prometheus must scrape every agent")
    target = service["spec"]["ports"][0]["targetPort"]
    if target not in ports:
        problem(f"Service: targetPort {target} is no port of the agent")
    monitor = objects_of((DEPLOY / "prometheus" / "servicemonitor.yaml").read_text())[0]
    wanted = monitor["spec"]["selector"]["matchLabels"]
    if wanted.items() - service["metadata"].get("labels", {}).items():
        problem("ServiceMonitor: selects labels the Service does not have")
    if monitor["spec"]["endpoints"][0]["port"] != service["spec"]["ports"][0]["name"]:
        problem("ServiceMonitor: scrapes a port the Service does not name")


# Labels the agent puts on its series (docs/deployment.md), and the scrape's own.
AGENT_LABELS = {"pid", "rank", "pod", "namespace", "container", "comm", "function", "rule",
                "relation", "kind", "library", "version", "commit", "job", "instance"}


def relabelled_node(relabellings, source_key, target_key):
    return any(r.get(target_key) == "node" and
               r.get(source_key) == ["__meta_kubernetes_pod_node_name"] for r in relabellings)


def check_prometheus_wiring():
    """The plain files and the operator's objects agree, and every label an alert names exists."""
    folder = DEPLOY / "prometheus"
    rules = yaml.safe_load((folder / "rules.yaml").read_text())
    operator_rule = objects_of((folder / "prometheusrule.yaml").read_text())[0]
    if operator_rule.get("kind") != "PrometheusRule":
        problem("prometheusrule.yaml: not a PrometheusRule")
    elif operator_rule["spec"]["groups"] != rules["groups"]:
        problem("prometheusrule.yaml: its groups differ from rules.yaml's; run "
                "tools/deploy/prometheus/make-prometheusrule.py")
    scrape = yaml.safe_load((folder / "scrape-config.yaml").read_text())
    for name in scrape.get("rule_files", []):
        if not (folder / name).is_file():
            problem(f"scrape-config.yaml: rule_files names {name}, which tools/deploy/prometheus "
                    "does not hold")
    job = scrape["scrape_configs"][0]
    monitor = objects_of((folder / "servicemonitor.yaml").read_text())[0]
    added = set()
    if relabelled_node(job.get("relabel_configs", []), "source_labels", "target_label"):
        added.add("node")
    else:
        problem("scrape-config.yaml: no relabelling of the pod's node name to the label node")
    if not all(relabelled_node(e.get("relabelings", []), "sourceLabels", "targetLabel")
               for e in monitor["spec"]["endpoints"]):
        problem("servicemonitor.yaml: no relabeling of the pod's node name to the label node, "
                "which the alerts and the dashboard read")
    for group in rules["groups"]:
        for rule in group["rules"]:
            text = " ".join(rule.get("annotations", {}).values())
            for label in sorted(set(re.findall(r"\$labels\.(\w+)", text))):
                if label not in AGENT_LABELS | added:
                    problem(f"rules: {rule.get('alert')} names $labels.{label}, which no series has")


def check_dashboard_provisioning():
    kustomization = yaml.safe_load((DEPLOY / "kustomization.yaml").read_text())
    files = [f for g in kustomization.get("configMapGenerator", []) for f in g.get("files", [])]
    dashboards = [f for f in files if f.endswith(".json")]
    if not dashboards:
        problem("kustomization.yaml: no ConfigMap carries the Grafana dashboard")
    for name in dashboards:
        if not (DEPLOY / name).is_file():
            problem(f"kustomization.yaml: the dashboard {name} does not exist")


def check_sidecar():
    pod = objects_of((DEPLOY / "sidecar" / "training-pod.yaml").read_text())[0]
    if pod["spec"].get("shareProcessNamespace") is not True:
        problem("sidecar: shareProcessNamespace is not true: it would see no trainer")
    if pod["spec"].get("hostPID"):
        problem("sidecar: uses hostPID, which a sidecar must not need")
    agents = [c for c in pod["spec"]["containers"] if c["name"] == "tcheck-bpf"]
    if len(agents) != 1:
        problem("sidecar: no tcheck-bpf container")
    else:
        check_container("sidecar tcheck-bpf", agents[0])


def check_rule_metrics():
    """Metric names used by the rules follow the conventions: one prefix, base units."""
    rules = yaml.safe_load((DEPLOY / "prometheus" / "rules.yaml").read_text())
    for group in rules["groups"]:
        for rule in group["rules"]:
            for name in re.findall(r"\b(tcheck_[a-z_]+)\b", rule["expr"]):
                if name.endswith(("_ms", "_milliseconds", "_us")):
                    problem(f"rules: {name} is not in base units (seconds)")
                if "increase(" + name in rule["expr"] and not name.endswith("_total"):
                    problem(f"rules: counter {name} lacks the _total suffix")


def main():
    if len(sys.argv) != 2:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    check_agent(objects_of(Path(sys.argv[1]).read_text()))
    check_sidecar()
    check_rule_metrics()
    check_prometheus_wiring()
    check_dashboard_provisioning()
    for path in (DEPLOY / "daemonset.yaml", DEPLOY / "sidecar" / "training-pod.yaml"):
        check_commented_capabilities(path)
    for text in problems:
        print(text)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
