"""The DTN role's sizing and HyStart decisions, evaluated by Ansible itself from the role's own variables
(ansible/roles/dtn_tuning/vars/main.yml) on the controller, no host needed: the longest path of a paths
export wins over shorter ones, inventory figures win over the export when both are given, and HyStart is
turned off exactly where CUBIC sends paced (a storage host with the plugin)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import yaml

from localnet.state import PROJECT_ROOT

ROLE_VARS = PROJECT_ROOT / "ansible" / "roles" / "dtn_tuning" / "vars" / "main.yml"
DEFAULTS = yaml.safe_load(
    (PROJECT_ROOT / "ansible" / "roles" / "dtn_tuning" / "defaults" / "main.yml").read_text()
)
# A paths export as GET /api/topology/paths/ pages it (the fields the role reads, and some it does not).
EXPORT = {
    "count": 3,
    "results": [
        {"name": "TEL--FAR", "source": "TEL", "destination": "FAR", "capacity_bps": 10_000_000_000,
         "rtt_ms": 300.0},
        {"name": "TEL--NEAR", "source": "TEL", "destination": "NEAR", "capacity_bps": 100_000_000_000,
         "rtt_ms": 56.5, "vrf": None, "is_computed": True},
        {"name": "NEAR--FAR", "source": "NEAR", "destination": "FAR", "capacity_bps": 1_000_000_000,
         "rtt_ms": 259.0},
    ],
}  # fmt: skip
# inventory name -> (its groups, its variables)
HOSTS: dict[str, tuple[list[str], dict[str, object]]] = {
    # 100 Gbit/s x 56.5 ms = 706.25 MB beats 10 Gbit/s x 300 ms = 375 MB; CUBIC paced by the plugin.
    "tel": (["storage"], {"dtn_tuning_topology_site": "TEL", "dtn_tuning_congestion_control": "cubic"}),
    # FAR is the destination of two paths: the larger BDP (375 MB) of the two.
    "far": (["storage"], {"dtn_tuning_topology_site": "FAR", "xrootd_site_plugin_enabled": False,
                          "dtn_tuning_congestion_control": "cubic"}),
    # Inventory figures given: the export is not read for sizing. BBR: HyStart is not its business.
    "inv": (["storage"], {"dtn_tuning_topology_site": "TEL", "dtn_tuning_path_bandwidth_gbps": 1,
                          "dtn_tuning_path_rtt_ms": 20}),
    # Not a storage host (nothing paced): CUBIC keeps the kernel's HyStart, unless asked.
    "plain": ([], {"dtn_tuning_topology_site": "NEAR", "dtn_tuning_congestion_control": "cubic"}),
    "asked": ([], {"dtn_tuning_topology_site": "NEAR", "dtn_tuning_cubic_hystart": "off"}),
}  # fmt: skip


def _decisions(tmp_path: Path) -> dict[str, list[object]]:
    export = tmp_path / "paths.json"
    export.write_text(json.dumps(EXPORT))
    inventory: dict[str, object] = {"all": {"hosts": {}, "children": {"storage": {"hosts": {}}}}}
    for name, (groups, host_vars) in HOSTS.items():
        entry = {
            "ansible_connection": "local",
            **DEFAULTS,
            "dtn_tuning_topology_paths": str(export),
            **host_vars,
        }
        inventory["all"]["hosts"][name] = entry  # type: ignore[index]
        if "storage" in groups:
            inventory["all"]["children"]["storage"]["hosts"][name] = {}  # type: ignore[index]
    (tmp_path / "hosts.yml").write_text(yaml.safe_dump(inventory))
    (tmp_path / "play.yml").write_text(
        yaml.safe_dump(
            [
                {
                    "hosts": "all",
                    "gather_facts": False,
                    "tasks": [
                        {"ansible.builtin.include_vars": str(ROLE_VARS)},
                        {
                            "ansible.builtin.copy": {
                                "dest": str(tmp_path) + "/{{ inventory_hostname }}.json",
                                "content": "{{ [dtn_tuning_sizing_source | trim, "
                                "dtn_tuning_bandwidth | float, dtn_tuning_rtt | float, "
                                "dtn_tuning_buffer_bytes | int, "
                                "dtn_tuning_hystart_value | trim] | to_json }}",
                            },
                            "delegate_to": "localhost",
                        },
                    ],
                }
            ]
        )
    )
    env = {**os.environ, "ANSIBLE_HOME": str(tmp_path / "ansible-home"), "ANSIBLE_NOCOLOR": "1"}
    result = subprocess.run(
        ["ansible-playbook", "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "play.yml")],
        capture_output=True, text=True, timeout=120, env=env, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    return {name: json.loads((tmp_path / f"{name}.json").read_text()) for name in HOSTS}


def test_buffers_from_the_longest_path_and_hystart_where_paced(tmp_path: Path) -> None:
    decisions = _decisions(tmp_path)
    assert decisions["tel"] == ["topology export paths.json, path TEL--NEAR", 100.0, 56.5, 1_412_500_000, "0"]
    assert decisions["far"] == ["topology export paths.json, path TEL--FAR", 10.0, 300.0, 750_000_000, ""]
    assert decisions["inv"] == ["inventory", 1.0, 20.0, 6_291_456, ""]  # 2.5 MB BDP: Debian's 6 MiB floor
    assert decisions["plain"][4] == "" and decisions["asked"][4] == "0"
    # NEAR's longest: 100 Gbit/s x 56.5 ms (as the destination of TEL--NEAR) beats 1 Gbit/s x 259 ms.
    assert decisions["plain"][:4] == [
        "topology export paths.json, path TEL--NEAR",
        100.0,
        56.5,
        1_412_500_000,
    ]
