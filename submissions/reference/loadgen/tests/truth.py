"""Reading the fake server's ledger, the truth the load generator's figures are compared with."""

from __future__ import annotations

from typing import Any


def by_id(server: Any) -> dict[str, dict[str, Any]]:
    """The server's ledger records by response id."""
    return {record["id"]: record for record in server.ledger()}
