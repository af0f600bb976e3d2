"""A network of worker "hosts" on one machine: a namespace each, a bridge, a private subnet.

Faults between hosts differ from faults over loopback: a dropped packet is not a reset
connection, and nothing tells the sender. The rig makes them real:

- a bridge in the root namespace holding the server's address (``.1``), and per host a network
  namespace joined to it by a veth pair, with its own address (``.11``, ``.12``, ...);
- ``partition(host)``: an nftables table inside the host's namespace that drops every packet
  but loopback's, in and out, without a reply (a silent partition); ``heal(host)`` removes it;
- ``link(host, delay_ms, loss)``: ``tc netem`` on both ends of the host's veth pair (a slow or
  lossy link; the round trip is twice ``delay_ms``), where the kernel has ``sch_netem``;
- ``lose(host, percent)``: an nftables rule in the host's namespace that drops that share of its
  packets at random, each way (real loss without netem); a delay without netem comes from
  ``tests/support/delayrelay.py``, a relay on the server's address.

It only sends traffic to the addresses it made: the subnet is one of 10.213.0.0/16 that no
interface of the machine uses. Every name it makes carries the pid of the process that made
it (``sq<pid>...``), so a rig left behind by a killed run is found and removed by the next one
(``remove_stale()``), and two runs at once do not touch each other's.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass

#: The first two octets of every subnet the rig uses.
NETWORK = "10.213"
#: Names: ``sq<pid>br`` (bridge), ``sq<pid>h<n>`` (namespace), ``sq<pid>h<n>a`` (veth, root end).
NAME = re.compile(r"^sq(\d+)(br|h\d+a?)$")
#: Seconds any one ``ip``/``tc``/``nft`` command may take.
COMMAND_TIMEOUT = 20


def run(*command: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT, check=check
    )


def unavailable() -> str | None:
    """Say why the rig cannot run here, or None when it can (root, ip, tc, nft, namespaces)."""
    for tool in ("ip", "tc", "nft"):
        if shutil.which(tool) is None:
            return f"{tool} is not installed (scripts/setup.sh installs iproute2 and nftables)"
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"sq{os.getpid()}h0"
    made = run("ip", "netns", "add", probe, check=False)
    if made.returncode != 0:
        return f"the kernel refused a network namespace: {made.stderr.strip()}"
    run("ip", "netns", "del", probe, check=False)
    return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def remove_stale() -> list[str]:
    """Delete the namespaces and links of rigs whose process is gone; return their names."""
    removed = []
    namespaces = run("ip", "netns", "list", check=False).stdout.split("\n")
    for line in namespaces:
        name = line.split(" ")[0]
        found = NAME.match(name)
        if found and not _alive(int(found[1])):
            run("ip", "netns", "del", name, check=False)
            removed.append(name)
    for line in run("ip", "-o", "link", "show", check=False).stdout.splitlines():
        name = line.split(":")[1].strip().split("@")[0]
        found = NAME.match(name)
        if found and not _alive(int(found[1])):
            run("ip", "link", "del", name, check=False)
            removed.append(name)
    return removed


def free_subnet() -> str:
    """Return ``10.213.X`` with X unused by any address or route of this machine."""
    taken = run("ip", "-o", "addr", "show").stdout + run("ip", "route", "show").stdout
    start = os.getpid() % 200 + 20
    for offset in range(200):
        subnet = f"{NETWORK}.{(start + offset) % 230 + 20}"
        if f"{subnet}." not in taken:
            return subnet
    raise RuntimeError(f"no free subnet in {NETWORK}.0.0/16")


@dataclass(frozen=True)
class Host:
    """One worker host: its namespace, the root end of its veth pair, its address."""

    index: int
    namespace: str
    outside: str
    inside: str
    address: str

    def prefix(self) -> tuple[str, ...]:
        """The command prefix that runs a program on this host."""
        return ("ip", "netns", "exec", self.namespace)


class NetRig:
    """The bridge, the server's address and ``hosts`` worker hosts; ``close()`` removes all."""

    def __init__(self, hosts: int) -> None:
        self.tag = f"sq{os.getpid()}"
        self.bridge = f"{self.tag}br"
        self.subnet = free_subnet()
        self.server_address = f"{self.subnet}.1"
        self.hosts: list[Host] = []
        self.partitioned: set[int] = set()
        remove_stale()
        try:
            run("ip", "link", "add", self.bridge, "type", "bridge")
            run("ip", "addr", "add", f"{self.server_address}/24", "dev", self.bridge)
            run("ip", "link", "set", self.bridge, "up")
            for index in range(1, hosts + 1):
                self.hosts.append(self._add_host(index))
        except BaseException:
            self.close()
            raise

    def grow(self, hosts: int) -> list[Host]:
        """Make sure there are at least ``hosts`` hosts; return them."""
        try:
            while len(self.hosts) < hosts:
                self.hosts.append(self._add_host(len(self.hosts) + 1))
        except BaseException:
            self.close()
            raise
        return self.hosts[:hosts]

    def _add_host(self, index: int) -> Host:
        namespace = f"{self.tag}h{index}"
        host = Host(index, namespace, f"{namespace}a", "eth0", f"{self.subnet}.{10 + index}")
        run("ip", "netns", "add", namespace)
        run(
            "ip",
            "link",
            "add",
            host.outside,
            "type",
            "veth",
            "peer",
            "name",
            host.inside,
            "netns",
            namespace,
        )
        run("ip", "link", "set", host.outside, "master", self.bridge, "up")
        inside = ("ip", "-n", namespace)
        run(*inside, "addr", "add", f"{host.address}/24", "dev", host.inside)
        run(*inside, "link", "set", host.inside, "up")
        run(*inside, "link", "set", "lo", "up")  # wake-up listeners on 127.0.0.1
        return host

    # Faults.

    def partition(self, host: Host) -> None:
        """Drop every packet of ``host`` but loopback's, silently, both ways."""
        rules = (
            "table inet skq_partition {\n"
            " chain in { type filter hook input priority 0; policy accept;"
            ' iifname != "lo" drop; }\n'
            " chain out { type filter hook output priority 0; policy accept;"
            ' oifname != "lo" drop; }\n'
            "}\n"
        )
        subprocess.run(
            [*host.prefix(), "nft", "-f", "-"],
            input=rules,
            text=True,
            check=True,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
        )
        self.partitioned.add(host.index)

    def drop_datagrams(self, host: Host) -> None:
        """Drop the UDP datagrams reaching ``host`` (wake-ups), nothing else; ``heal`` ends it."""
        rules = (
            "table inet skq_partition {\n"
            " chain in { type filter hook input priority 0; policy accept;"
            ' iifname != "lo" meta l4proto udp drop; }\n'
            "}\n"
        )
        subprocess.run(
            [*host.prefix(), "nft", "-f", "-"],
            input=rules,
            text=True,
            check=True,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
        )
        self.partitioned.add(host.index)

    def heal(self, host: Host) -> None:
        run(*host.prefix(), "nft", "delete", "table", "inet", "skq_partition")
        self.partitioned.discard(host.index)

    def lose(self, host: Host, percent: int) -> None:
        """Drop ``percent`` % of ``host``'s packets at random, each way (real loss, no netem)."""
        rules = (
            "table inet skq_loss {\n"
            " chain in { type filter hook input priority 0; policy accept;"
            f' iifname != "lo" numgen random mod 100 < {percent} drop; }}\n'
            " chain out { type filter hook output priority 0; policy accept;"
            f' oifname != "lo" numgen random mod 100 < {percent} drop; }}\n'
            "}\n"
        )
        subprocess.run(
            [*host.prefix(), "nft", "-f", "-"],
            input=rules,
            text=True,
            check=True,
            capture_output=True,
            timeout=COMMAND_TIMEOUT,
        )

    def keep_all(self, host: Host) -> None:
        """End ``lose()``."""
        run(*host.prefix(), "nft", "delete", "table", "inet", "skq_loss", check=False)

    def link(self, host: Host, delay_ms: float, loss: float = 0.0) -> None:
        """Delay (each way) and lose (percent, each way) the packets of ``host``'s link."""
        netem = ("netem", "delay", f"{delay_ms}ms", "loss", f"{loss}%", "limit", "100000")
        run("tc", "qdisc", "replace", "dev", host.outside, "root", *netem)
        run(*host.prefix(), "tc", "qdisc", "replace", "dev", host.inside, "root", *netem)

    def unshape(self, host: Host) -> None:
        """Remove the delay and loss of ``host``'s link (nothing to remove is fine)."""
        run("tc", "qdisc", "del", "dev", host.outside, "root", check=False)
        run(*host.prefix(), "tc", "qdisc", "del", "dev", host.inside, "root", check=False)

    # Clean-up.

    def close(self) -> None:
        """Delete every namespace and link this rig made (the veth pairs go with them)."""
        for host in self.hosts:
            run("ip", "netns", "del", host.namespace, check=False)
            run("ip", "link", "del", host.outside, check=False)
        run("ip", "link", "del", self.bridge, check=False)
        self.hosts = []

    def leftovers(self) -> list[str]:
        """Names of this rig still present (empty after ``close()``)."""
        listed = run("ip", "netns", "list").stdout + run("ip", "-o", "link", "show").stdout
        return sorted(set(re.findall(rf"\b{self.tag}(?:br|h\d+a?)\b", listed)))
