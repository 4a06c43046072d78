"""Looks at the network from inside: its interfaces and its routing tables (sends nothing)."""

import json
import os
import socket

with open("/proc/net/route") as table:
    routes = table.read().splitlines()[1:]
try:
    with open("/proc/net/ipv6_route") as table:
        routes6 = [line for line in table.read().splitlines() if not line.rstrip().endswith(" lo")]
except OSError:
    routes6 = []
print(
    "FINDINGS "
    + json.dumps(
        {
            "interfaces": sorted(name for _, name in socket.if_nameindex()),
            "sys_class_net": sorted(os.listdir("/sys/class/net")) if os.path.isdir("/sys/class/net") else None,
            "routes": routes,
            "routes6_off_loopback": routes6,
        }
    ),
    flush=True,
)
