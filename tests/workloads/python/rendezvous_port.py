"""The port a job's rank 0 serves its rendezvous store on (MASTER_PORT).

Shared by the workloads that launch ranks themselves (train_ddp.py and the
pipelines' exec launcher)."""

import random
import socket

EPHEMERAL_LOW_DEFAULT = 32768


def free_port(address):
    """A TCP port free a moment ago on ADDRESS, below the kernel's ephemeral range.

    Rank 0 binds it seconds later, once torch is imported: a port the kernel
    hands out for outgoing connections or to a bind of port 0 (another job's
    gloo pairs, or another job's own pick, recorded beside this one) could be
    taken by then; one below that range, drawn at random, is not handed out."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range", encoding="ascii") as ports:
            ephemeral_low = int(ports.read().split()[0])
    except (OSError, ValueError, IndexError):
        ephemeral_low = EPHEMERAL_LOW_DEFAULT
    candidates = list(range(max(1024, ephemeral_low - 12000), ephemeral_low))
    random.SystemRandom().shuffle(candidates)
    for port in candidates[:200]:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            try:
                probe.bind((address, port))
            except OSError:
                continue
            return port
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind((address, 0))
        return probe.getsockname()[1]
