"""The platform's service account reaches a checkout under a private folder (search only, by ACL)."""

from __future__ import annotations

import os
import shutil
import uuid
from pathlib import Path

from localnet.users import can_reach, grant_traversal, service_account


def test_a_private_checkout_is_made_searchable_for_the_service_account_only():
    # The suite runs as root (make test installs Debian packages); root is what starts the platform's
    # processes as the service account.
    account = service_account()
    assert account == "srcnet"
    top = Path("/var/tmp") / f"srcnet-private-{uuid.uuid4().hex[:8]}"
    checkout = top / "clone" / "main"
    checkout.mkdir(parents=True)
    (checkout / "manage.py").write_text("# a file of the checkout\n")
    top.chmod(0o700)  # as mktemp -d makes it
    try:
        assert not can_reach(account, checkout / "manage.py")
        changed = grant_traversal(account, checkout / "manage.py")
        assert changed == [top]
        assert can_reach(account, checkout / "manage.py")
        # Search, not read: the account still cannot list the private folder, nor can anyone else enter.
        assert os.system(f"runuser -u {account} -- ls {top} >/dev/null 2>&1") != 0
        assert os.system(f"runuser -u nobody -- test -r {checkout / 'manage.py'}") != 0
        assert grant_traversal(account, checkout / "manage.py") == []  # idempotent
    finally:
        shutil.rmtree(top)
