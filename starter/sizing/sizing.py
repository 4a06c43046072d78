"""Sizing arithmetic. YOURS TO WRITE: this skeleton prints the output's shape with nothing worked out.

Contract (TASK.md, schemas/contract/sizing-output.schema.json): every price, utilisation,
throughput and load is a flag; one JSON object on stdout.
"""

from __future__ import annotations

import json


def main() -> None:
    # TODO: parse the flags TASK.md lists and work out every field.
    print(json.dumps({"contract": 1, "inputs": {}, "note": "TODO: sizing not written yet"}))


if __name__ == "__main__":
    main()
